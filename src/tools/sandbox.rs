//! The workspace sandbox: every path a model names is resolved against the workspace roots and
//! refused when it could lead outside them — `..` components, absolute paths elsewhere, and
//! symlinks whose target is outside (the nearest existing ancestor is canonicalized, so a path
//! through a symlinked directory is caught before anything is created under it).
//!
//! It never touches a file's content; it only answers "which file is this, and may a tool use it".

use std::path::{Component, Path, PathBuf};

use super::ToolError;
use super::fs::{EntryKind, FileSystem};

/// A path the sandbox accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute path under a root (lexical: symlinks inside the workspace are kept as named).
    pub abs: PathBuf,
    /// The path relative to its root, with `/` separators (`.` for the root itself).
    pub rel: String,
}

/// The workspace roots.
#[derive(Debug, Clone)]
pub struct Sandbox {
    roots: Vec<Root>,
}

#[derive(Debug, Clone)]
struct Root {
    path: PathBuf,
    canonical: PathBuf,
}

impl Sandbox {
    /// Roots must be absolute; relative ones are taken against the current directory.
    pub fn new(roots: &[PathBuf], fs: &dyn FileSystem) -> Sandbox {
        let roots = roots
            .iter()
            .map(|r| {
                let path = if r.is_absolute() {
                    normalize(r)
                } else {
                    normalize(
                        &std::env::current_dir()
                            .unwrap_or_else(|_| PathBuf::from("/"))
                            .join(r),
                    )
                };
                let canonical = fs.canonicalize(&path).unwrap_or_else(|_| path.clone());
                Root { path, canonical }
            })
            .collect();
        Sandbox { roots }
    }

    pub fn roots(&self) -> Vec<&Path> {
        self.roots.iter().map(|r| r.path.as_path()).collect()
    }

    /// The first root (where relative paths of new files go).
    pub fn primary(&self) -> Option<&Path> {
        self.roots.first().map(|r| r.path.as_path())
    }

    /// Resolves a path a model named, or refuses it.
    pub fn resolve(&self, input: &str, fs: &dyn FileSystem) -> Result<Resolved, ToolError> {
        let refuse = |reason: String| ToolError::Permission {
            path: input.to_owned(),
            reason,
        };
        if self.roots.is_empty() {
            return Err(refuse("no workspace folder is open".to_owned()));
        }
        let trimmed = input.trim();
        let trimmed = trimmed.strip_prefix("file://").unwrap_or(trimmed);
        if trimmed.contains('\0') {
            return Err(refuse("the path contains a NUL byte".to_owned()));
        }
        let given = Path::new(if trimmed.is_empty() { "." } else { trimmed });
        if given.components().any(|c| c == Component::ParentDir) {
            return Err(refuse(
                "`..` is not allowed: paths are relative to the workspace root and stay inside it"
                    .to_owned(),
            ));
        }
        let candidates: Vec<(usize, PathBuf)> = if given.is_absolute() {
            let abs = normalize(given);
            match self
                .roots
                .iter()
                .position(|r| abs.starts_with(&r.path) || abs.starts_with(&r.canonical))
            {
                Some(i) => vec![(i, abs)],
                None => {
                    return Err(refuse(format!(
                        "absolute paths outside the workspace are not allowed; the workspace is {}",
                        self.describe_roots()
                    )));
                }
            }
        } else {
            self.roots
                .iter()
                .enumerate()
                .map(|(i, r)| (i, normalize(&r.path.join(given))))
                .collect()
        };
        // Relative paths: the first root where the path exists, else the first root.
        let (i, abs) = candidates
            .iter()
            .find(|(_, p)| fs.kind(p).is_some())
            .or(candidates.first())
            .cloned()
            .ok_or_else(|| refuse("no workspace folder is open".to_owned()))?;
        let root = &self.roots[i];
        self.check_links(&abs, root, fs).map_err(refuse)?;
        let rel = abs
            .strip_prefix(&root.path)
            .or_else(|_| abs.strip_prefix(&root.canonical))
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| abs.to_string_lossy().into_owned());
        let rel = if rel.is_empty() { ".".to_owned() } else { rel };
        Ok(Resolved { abs, rel })
    }

    fn describe_roots(&self) -> String {
        self.roots
            .iter()
            .map(|r| r.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The nearest existing ancestor (or the path itself) must canonicalize inside the root; a
    /// symlink whose target does not exist is refused (writing through it would land anywhere).
    fn check_links(&self, abs: &Path, root: &Root, fs: &dyn FileSystem) -> Result<(), String> {
        let mut probe = abs.to_path_buf();
        loop {
            match fs.kind(&probe) {
                Some(kind) => {
                    let canonical = match fs.canonicalize(&probe) {
                        Ok(c) => c,
                        Err(_) if kind == EntryKind::Symlink => {
                            return Err(format!(
                                "{} is a symlink whose target does not exist; it is not followed",
                                probe.display()
                            ));
                        }
                        Err(e) => return Err(format!("cannot resolve {}: {e}", probe.display())),
                    };
                    if canonical.starts_with(&root.canonical) {
                        return Ok(());
                    }
                    return Err(format!(
                        "it leads outside the workspace through a symlink ({} -> {})",
                        probe.display(),
                        canonical.display()
                    ));
                }
                None => {
                    if !probe.pop() || !probe.starts_with(&root.path) {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// Removes `.` components (and nothing else: `..` is refused before).
fn normalize(p: &Path) -> PathBuf {
    p.components().filter(|c| *c != Component::CurDir).collect()
}
