//! A run's working copy: the files as the editor has them (open buffers, with their versions)
//! and everything else from disk, plus the changes the run made. Tools read and edit only this;
//! nothing reaches the disk or the editor until the user accepts the run's proposal.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::workspace::ReadError;

use super::fs::FileSystem;

/// One open buffer as the editor had it when the run started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenBuffer {
    pub text: String,
    pub version: i32,
}

/// The open buffers, by absolute path.
pub type Snapshot = HashMap<PathBuf, OpenBuffer>;

/// A file the run changed (or created).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: PathBuf,
    /// The text before the run (`None`: the run created the file).
    pub original: Option<String>,
    /// The buffer version the original was read at (`None`: read from disk or created).
    pub base_version: Option<i32>,
    pub text: String,
}

#[derive(Debug, Clone)]
struct State {
    original: Option<String>,
    base_version: Option<i32>,
    text: String,
}

/// Open buffers, disk, and the run's edits on top.
#[derive(Debug, Clone, Default)]
pub struct WorkingCopy {
    open: Snapshot,
    edited: BTreeMap<PathBuf, State>,
}

impl WorkingCopy {
    pub fn new(open: Snapshot) -> WorkingCopy {
        WorkingCopy {
            open,
            edited: BTreeMap::new(),
        }
    }

    /// The current text of `path` and, when it is an unchanged open buffer, its version.
    pub fn read(
        &self,
        path: &Path,
        fs: &dyn FileSystem,
    ) -> Result<(String, Option<i32>), ReadError> {
        if let Some(s) = self.edited.get(path) {
            return Ok((s.text.clone(), None));
        }
        if let Some(b) = self.open.get(path) {
            return Ok((b.text.clone(), Some(b.version)));
        }
        fs.read_text(path).map(|t| (t, None))
    }

    /// The current text of `path` for a scan over many files ([`FileSystem::scan_text`]).
    pub fn scan(&self, path: &Path, fs: &dyn FileSystem) -> Result<String, ReadError> {
        if let Some(s) = self.edited.get(path) {
            return Ok(s.text.clone());
        }
        if let Some(b) = self.open.get(path) {
            return Ok(b.text.clone());
        }
        fs.scan_text(path)
    }

    /// Whether the file exists in the working copy (open, edited, created or on disk).
    pub fn exists(&self, path: &Path, fs: &dyn FileSystem) -> bool {
        self.edited.contains_key(path) || self.open.contains_key(path) || fs.kind(path).is_some()
    }

    /// Files the run created (not on disk), for listings.
    pub fn created(&self) -> impl Iterator<Item = &Path> {
        self.edited
            .iter()
            .filter(|(_, s)| s.original.is_none())
            .map(|(p, _)| p.as_path())
    }

    /// Replaces the text of an existing file; `before` is what the edit was made against.
    pub fn write(&mut self, path: &Path, before: &str, version: Option<i32>, text: String) {
        match self.edited.get_mut(path) {
            Some(s) => s.text = text,
            None => {
                self.edited.insert(
                    path.to_path_buf(),
                    State {
                        original: Some(before.to_owned()),
                        base_version: version,
                        text,
                    },
                );
            }
        }
    }

    /// Creates a new file.
    pub fn create(&mut self, path: &Path, text: String) {
        self.edited.insert(
            path.to_path_buf(),
            State {
                original: None,
                base_version: None,
                text,
            },
        );
    }

    /// The files whose text differs from before the run, sorted by path.
    pub fn changes(&self) -> Vec<ChangedFile> {
        self.edited
            .iter()
            .filter(|(_, s)| s.original.as_deref() != Some(s.text.as_str()))
            .map(|(p, s)| ChangedFile {
                path: p.clone(),
                original: s.original.clone(),
                base_version: s.base_version,
                text: s.text.clone(),
            })
            .collect()
    }

    /// Forgets every edit (the open buffers stay).
    pub fn reset(&mut self) {
        self.edited.clear();
    }
}
