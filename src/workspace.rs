//! Reading files that are not open in the editor.
//!
//! Open documents live in ropes (the editor's truth); everything else comes from disk on
//! demand. Files must be UTF-8: anything else is a clear error naming the file and the first bad
//! byte, never a panic and never a lossy read (a lossy read would let a later edit write
//! replacement characters over the user's bytes).

use std::io;
use std::path::{Path, PathBuf};

/// Why a file could not be read as text.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: no such file", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: is a directory, not a file", path.display())]
    IsDirectory { path: PathBuf },
    #[error(
        "{}: not valid UTF-8 (first invalid byte at offset {offset}); patchwise only edits UTF-8 text",
        path.display()
    )]
    InvalidUtf8 { path: PathBuf, offset: usize },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Reads `path` as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let owned = || path.to_path_buf();
    if path.is_dir() {
        return Err(ReadError::IsDirectory { path: owned() });
    }
    let bytes = std::fs::read(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => ReadError::NotFound { path: owned() },
        _ => ReadError::Io {
            path: owned(),
            source,
        },
    })?;
    String::from_utf8(bytes).map_err(|err| ReadError::InvalidUtf8 {
        path: owned(),
        offset: err.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_utf8_and_explains_everything_else() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.rs");
        std::fs::write(&good, "fn main() {}\r\n").unwrap();
        assert_eq!(read_text(&good).unwrap(), "fn main() {}\r\n");

        let bad = dir.path().join("bad.txt");
        std::fs::write(&bad, b"ok \xff\xfe").unwrap();
        let err = read_text(&bad).unwrap_err();
        assert!(
            matches!(err, ReadError::InvalidUtf8 { offset: 3, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("not valid UTF-8"), "{err}");

        let missing = dir.path().join("missing.rs");
        assert!(matches!(
            read_text(&missing),
            Err(ReadError::NotFound { .. })
        ));
        assert!(matches!(
            read_text(dir.path()),
            Err(ReadError::IsDirectory { .. })
        ));
    }
}
