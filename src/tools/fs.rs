//! The file-system edge of the tools: reading text, walking directories (.gitignore-aware) and
//! resolving symlinks, behind a small trait so workflows can run on a temp dir or a double.
//!
//! Read-only by design: tools never write to the disk. A run's changes live in its working copy
//! until the user accepts them.

use std::io;
use std::path::{Path, PathBuf};

use crate::workspace::{self, ReadError};

/// What a path is, without following a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

/// One file found by a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    pub path: PathBuf,
    /// Size in bytes (0 when unknown).
    pub len: u64,
}

/// Read access to files. Implemented by [`RealFs`]; tests may wrap it.
pub trait FileSystem: Send + Sync {
    /// The file as UTF-8 text.
    fn read_text(&self, path: &Path) -> Result<String, ReadError>;

    /// The file as UTF-8 text for a scan over many files (a search, line counts, the files a
    /// rename would touch): what [`read_text`](Self::read_text) gives, except where reading it
    /// that way costs a round trip per file (an editor's buffers read through its client), which
    /// a scan reads from disk instead; a scan's hits the run goes on with are read again with
    /// `read_text`.
    fn scan_text(&self, path: &Path) -> Result<String, ReadError> {
        self.read_text(path)
    }

    /// Says that the run is about to `read_text` these files, so a file system that reads
    /// them from far away can read them all at once (at most a few at a time) instead of one
    /// by one as they are asked for.
    fn prefetch(&self, paths: &[PathBuf]) {
        let _ = paths;
    }

    /// What `path` is (`None`: nothing there). A symlink is reported as such, not followed.
    fn kind(&self, path: &Path) -> Option<EntryKind>;

    /// The path with every symlink resolved (fails when it does not exist).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;

    /// Files under `dir`, sorted, honouring `.gitignore`/`.ignore` files and skipping `.git`;
    /// symlinks are not followed. At most `max` entries; the bool says whether more exist.
    fn walk(&self, dir: &Path, max: usize) -> (Vec<WalkEntry>, bool);

    /// The direct entries of `dir` (names, directories with a trailing `/`), sorted.
    fn list_dir(&self, dir: &Path) -> Vec<String>;
}

/// The real disk.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl FileSystem for RealFs {
    fn read_text(&self, path: &Path) -> Result<String, ReadError> {
        workspace::read_text(path)
    }

    fn kind(&self, path: &Path) -> Option<EntryKind> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        Some(if meta.file_type().is_symlink() {
            EntryKind::Symlink
        } else if meta.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::File
        })
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn walk(&self, dir: &Path, max: usize) -> (Vec<WalkEntry>, bool) {
        let walker = ignore::WalkBuilder::new(dir)
            .hidden(false)
            .follow_links(false)
            .require_git(false)
            .filter_entry(|e| e.file_name() != ".git")
            .sort_by_file_path(|a, b| a.cmp(b))
            .build();
        let mut out = Vec::new();
        let mut more = false;
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if out.len() >= max {
                more = true;
                break;
            }
            let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
            out.push(WalkEntry {
                path: entry.into_path(),
                len,
            });
        }
        (out, more)
    }

    fn list_dir(&self, dir: &Path) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_name() != ".git")
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    format!("{name}/")
                } else {
                    name
                }
            })
            .collect();
        names.sort();
        names
    }
}
