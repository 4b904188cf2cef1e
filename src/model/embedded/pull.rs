//! `patchwise model pull`, `list` and `rm`: catalogue models downloaded from the Hugging Face
//! hub (through the `hf-hub` crate: resumable, a progress bar on a terminal) into
//! `<data dir>/models`, checked against the sha256 the hub reports for the file before it
//! takes its final name, so a half-written or corrupt download is never a model patchwise
//! would load.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::catalog::{self, CatalogEntry, models_dir};
use super::gguf;

/// The hub used unless `HF_ENDPOINT` names another (a mirror, or a test's local server).
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// What a pull did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    pub path: PathBuf,
    pub bytes: u64,
    /// `None` when the file was already there (nothing downloaded, nothing checked again).
    pub sha256: Option<String>,
}

/// Why a pull failed. Each names what to do next.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(
        "unknown model {0:?}; the catalogue has: {list} (or configure `model` as a path to any GGUF file)",
        list = catalog::CATALOG.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
    )]
    Unknown(String),
    #[error(
        "cannot download {file} from {endpoint}: {reason}. Download it by hand from {url} and put it at {dest}"
    )]
    Hub {
        file: String,
        endpoint: String,
        reason: String,
        url: String,
        dest: String,
    },
    #[error(
        "the download of {file} is corrupt: its sha256 is {found}, the hub says {expected}; it was deleted, run the pull again"
    )]
    Checksum {
        file: String,
        expected: String,
        found: String,
    },
    #[error("cannot write into {dir}: {reason}")]
    Write { dir: String, reason: String },
}

/// The endpoint in effect.
pub fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .map(|e| e.trim().trim_end_matches('/').to_owned())
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned())
}

/// Downloads `name` (a catalogue name; `None`: the default model) into the data dir, unless
/// it is there and whole already.
pub async fn pull(
    name: Option<&str>,
    data_dir: &Path,
    progress: bool,
) -> Result<Pulled, PullError> {
    let wanted = name.unwrap_or(catalog::DEFAULT_MODEL);
    let entry = catalog::find(wanted).ok_or_else(|| PullError::Unknown(wanted.to_owned()))?;
    let dir = models_dir(data_dir);
    let dest = dir.join(entry.file);
    if let Ok(info) = gguf::read_info(&dest) {
        return Ok(Pulled {
            path: dest,
            bytes: info.size,
            sha256: None,
        });
    }
    let write_error = |err: std::io::Error| PullError::Write {
        dir: dir.display().to_string(),
        reason: err.to_string(),
    };
    std::fs::create_dir_all(&dir).map_err(write_error)?;
    let endpoint = endpoint();
    let hub_error = |reason: String| PullError::Hub {
        file: entry.file.to_owned(),
        endpoint: endpoint.clone(),
        reason,
        url: format!(
            "{DEFAULT_ENDPOINT}/{}/resolve/main/{}",
            entry.repo, entry.file
        ),
        dest: dest.display().to_string(),
    };
    let cache = dir.join(".hub");
    let api = hf_hub::api::tokio::ApiBuilder::new()
        .with_endpoint(endpoint.clone())
        .with_cache_dir(cache.clone())
        .with_progress(progress)
        .with_token(std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty()))
        .build()
        .map_err(|err| hub_error(err.to_string()))?;
    let repo = api.model(entry.repo.to_owned());
    let metadata = api
        .metadata(&repo.url(entry.file))
        .await
        .map_err(|err| hub_error(describe(&err)))?;
    let downloaded = repo
        .download(entry.file)
        .await
        .map_err(|err| hub_error(describe(&err)))?;
    let blob = std::fs::canonicalize(&downloaded).map_err(write_error)?;
    let expected = metadata.etag().trim_matches('"').to_ascii_lowercase();
    let found = sha256_of(&blob).map_err(write_error)?;
    // Files kept in Git LFS (every GGUF on the hub) have their sha256 as the ETag.
    if is_sha256(&expected) && found != expected {
        // The whole cache goes: its pointer to the blob would dangle, and nothing in it can be
        // resumed.
        let _ = std::fs::remove_dir_all(&cache);
        return Err(PullError::Checksum {
            file: entry.file.to_owned(),
            expected,
            found,
        });
    }
    if let Err(err) = gguf::read_info(&blob) {
        let _ = std::fs::remove_dir_all(&cache);
        return Err(hub_error(format!(
            "the file downloaded is not a usable model: {err}"
        )));
    }
    std::fs::rename(&blob, &dest).map_err(write_error)?;
    // The hub's cache layout (a pointer to the blob just moved) is of no use any more.
    let _ = std::fs::remove_dir_all(&cache);
    let bytes = std::fs::metadata(&dest).map(|m| m.len()).unwrap_or(0);
    Ok(Pulled {
        path: dest,
        bytes,
        sha256: Some(found),
    })
}

/// The error with its causes (reqwest's own message is often just "error sending request").
fn describe(err: &hf_hub::api::tokio::ApiError) -> String {
    use std::error::Error;
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The sha256 of a file, as lowercase hex.
pub fn sha256_of(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// One line of `model list`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Listed {
    /// The catalogue name, or the file name for other files in the models dir.
    pub name: String,
    pub file: String,
    /// `None`: not downloaded.
    pub bytes: Option<u64>,
    /// What the file's header says (architecture), or why it is unusable.
    pub detail: String,
    pub use_for: String,
}

/// The catalogue with what is downloaded, then any other GGUF files in the models dir.
pub fn list(data_dir: &Path) -> Vec<Listed> {
    let dir = models_dir(data_dir);
    let describe = |path: &Path| match gguf::read_info(path) {
        Ok(info) => (
            Some(info.size),
            info.architecture.unwrap_or_else(|| "gguf".into()),
        ),
        Err(err) => (
            std::fs::metadata(path).ok().map(|m| m.len()),
            format!("unusable: {err}"),
        ),
    };
    let mut rows: Vec<Listed> = catalog::CATALOG
        .iter()
        .map(|entry: &CatalogEntry| {
            let path = dir.join(entry.file);
            let (bytes, detail) = if path.is_file() {
                describe(&path)
            } else {
                (None, format!("not downloaded (~{} MB)", entry.size_mb))
            };
            Listed {
                name: entry.name.to_owned(),
                file: entry.file.to_owned(),
                bytes,
                detail,
                use_for: entry.use_for.to_owned(),
            }
        })
        .collect();
    let mut others: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "gguf"))
                .filter(|p| {
                    let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                    !catalog::CATALOG
                        .iter()
                        .any(|e| Some(e.file) == name.as_deref())
                })
                .collect()
        })
        .unwrap_or_default();
    others.sort();
    for path in others {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (bytes, detail) = describe(&path);
        rows.push(Listed {
            name: file.clone(),
            file,
            bytes,
            detail,
            use_for: String::new(),
        });
    }
    rows
}

/// Deletes a downloaded model (a catalogue name or a file name in the models dir). Never
/// deletes a file outside the models dir.
pub fn remove(name: &str, data_dir: &Path) -> Result<PathBuf, String> {
    let dir = models_dir(data_dir);
    let file = match catalog::find(name) {
        Some(entry) => entry.file.to_owned(),
        None => {
            let path = Path::new(name);
            if path.components().count() != 1 {
                return Err(format!(
                    "{name:?} is not a model in {}: name a catalogue model or a file listed by `patchwise model list` (files elsewhere are yours to delete)",
                    dir.display()
                ));
            }
            name.to_owned()
        }
    };
    let path = dir.join(&file);
    if !path.is_file() {
        return Err(format!("{name} is not downloaded (no {})", path.display()));
    }
    std::fs::remove_file(&path)
        .map_err(|err| format!("cannot delete {}: {err}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_refuses_paths_outside_the_models_dir_and_names_what_is_missing() {
        let data = tempfile::tempdir().unwrap();
        let outside = data.path().join("keep.gguf");
        std::fs::write(&outside, b"x").unwrap();
        let err = remove(outside.to_str().unwrap(), data.path()).unwrap_err();
        assert!(err.contains("files elsewhere are yours"), "{err}");
        assert!(outside.exists());
        let err = remove("../keep.gguf", data.path()).unwrap_err();
        assert!(err.contains("not a model in"), "{err}");
        let err = remove("qwen2.5-coder-0.5b", data.path()).unwrap_err();
        assert!(err.contains("is not downloaded"), "{err}");
    }

    #[test]
    fn the_listing_shows_the_catalogue_and_other_files() {
        let data = tempfile::tempdir().unwrap();
        let dir = models_dir(data.path());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mine.gguf"), b"not really").unwrap();
        let rows = list(data.path());
        assert_eq!(rows.len(), catalog::CATALOG.len() + 1);
        assert!(rows[0].detail.starts_with("not downloaded"));
        let mine = rows.last().unwrap();
        assert_eq!(mine.name, "mine.gguf");
        assert!(
            mine.detail.contains("unusable") && mine.detail.contains("not a GGUF"),
            "{}",
            mine.detail
        );
    }

    #[test]
    fn sha256_is_hex_of_the_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_of(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_sha256(&sha256_of(&p).unwrap()));
        assert!(!is_sha256("\"abc\""));
    }
}
