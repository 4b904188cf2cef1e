//! The overlay: a scratch copy of a workspace where check, lint and test commands see a run's
//! proposed text before the user has accepted anything.
//!
//! It lives under the cache directory (`<data>/develop/<name>-<hash>/tree`), one per workspace,
//! and is reused between the steps of a run and between runs: a sync copies only the files whose
//! content differs (so build tools keep their incremental state — file times of unchanged files
//! never move), writes the working copy's changed and created files on top, and removes the files
//! an earlier sync placed that are gone now (a created file of a rejected run must not linger).
//! The walk honours `.gitignore`; large dependency directories (`node_modules`, `.venv`, …) are
//! linked, not copied. Beside the tree sits a persistent build directory (`CARGO_TARGET_DIR` for
//! Rust), so the second run of a day compiles only what changed.
//!
//! It never writes into the workspace: every destination is checked to stay inside the overlay
//! and not to pass through a link (a created `node_modules/x.js` would otherwise land in the
//! user's directory). When another run holds the workspace's overlay, this one works in a
//! private tree that is removed afterwards.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::SystemTime;

/// Ignored dependency directories at the workspace root that are linked into the overlay
/// instead of being copied (or skipped): commands need them, copying them would take minutes.
pub const LINKED_DIRS: &[&str] = &["node_modules", ".venv", "venv", ".tox"];

/// Files a sync copies at most: a bigger tree is not a workspace a develop run can check.
pub const MAX_FILES: usize = 50_000;

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Files written (copied or changed).
    pub written: usize,
    /// Files that were already up to date.
    pub unchanged: usize,
    /// Files removed (placed by an earlier sync, gone now).
    pub removed: usize,
    /// Directories linked.
    pub linked: Vec<String>,
    /// Files that could not be placed, with why (skipped, not fatal).
    pub skipped: Vec<String>,
}

/// One workspace's overlay.
#[derive(Debug)]
pub struct Overlay {
    workspace: PathBuf,
    base: PathBuf,
    tree: PathBuf,
    /// Held while this overlay uses the shared tree (`None`: a private tree).
    _lock: Option<File>,
    private: bool,
    /// Relative paths this overlay placed, persisted in `base/manifest`.
    placed: BTreeSet<String>,
    /// Size and modification time of each source file when it was last copied.
    stamps: BTreeMap<String, (u64, Option<SystemTime>)>,
}

static PRIVATE: AtomicU32 = AtomicU32::new(0);

impl Overlay {
    /// Opens (creating it when needed) the overlay of `workspace` under `cache`
    /// (`<data>/develop`).
    pub fn open(workspace: &Path, cache: &Path) -> io::Result<Overlay> {
        let workspace = fs::canonicalize(workspace).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot open the workspace {}: {e}", workspace.display()),
            )
        })?;
        let name = workspace
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".to_owned());
        let name: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        let key = format!(
            "{name}-{:016x}",
            fnv1a(workspace.to_string_lossy().as_bytes())
        );
        let cache = if cache.is_absolute() {
            cache.to_path_buf()
        } else {
            std::env::current_dir()?.join(cache)
        };
        let inside = |dir: &Path| {
            io::Error::other(format!(
                "the overlay directory {} is inside the workspace {}; set data_dir to a \
                 directory outside it",
                dir.display(),
                workspace.display()
            ))
        };
        if cache.starts_with(&workspace) {
            return Err(inside(&cache));
        }
        let base = cache.join(key);
        fs::create_dir_all(&base).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create the overlay directory {}: {e}",
                    base.display()
                ),
            )
        })?;
        let base = fs::canonicalize(&base)?;
        if base.starts_with(&workspace) {
            return Err(inside(&base));
        }
        let lock = File::create(base.join("lock"))?;
        // SAFETY: flock on an open descriptor we own; non-blocking.
        let locked = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        let (tree, lock, private) = if locked {
            (base.join("tree"), Some(lock), false)
        } else {
            let n = PRIVATE.fetch_add(1, Ordering::Relaxed);
            (
                base.join(format!("tree-{}-{n}", std::process::id())),
                None,
                true,
            )
        };
        fs::create_dir_all(&tree)?;
        let placed = if private {
            BTreeSet::new()
        } else {
            fs::read_to_string(base.join("manifest"))
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect()
        };
        Ok(Overlay {
            workspace,
            base,
            tree,
            _lock: lock,
            private,
            placed,
            stamps: BTreeMap::new(),
        })
    }

    /// The overlay's copy of the workspace root: commands run here.
    pub fn dir(&self) -> &Path {
        &self.tree
    }

    /// A persistent directory for build output beside the tree (`CARGO_TARGET_DIR`).
    pub fn build_dir(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// Brings the tree up to date: the workspace's non-ignored files, with `changes`
    /// (absolute workspace paths and their proposed text, created files included) on top.
    pub fn sync(&mut self, changes: &[(PathBuf, String)]) -> io::Result<SyncStats> {
        let mut stats = SyncStats::default();
        let mut changed: BTreeMap<String, &str> = BTreeMap::new();
        for (path, text) in changes {
            match relative(&self.workspace, path) {
                Some(rel) => {
                    changed.insert(rel, text.as_str());
                }
                None => stats
                    .skipped
                    .push(format!("{}: not inside the workspace", path.display())),
            }
        }
        // Links first: no file below may be written where a link will be.
        for name in LINKED_DIRS {
            let source = self.workspace.join(name);
            let dest = self.tree.join(name);
            if !source.is_dir() {
                if fs::symlink_metadata(&dest).is_ok_and(|m| m.file_type().is_symlink()) {
                    let _ = fs::remove_file(&dest);
                }
                continue;
            }
            if fs::read_link(&dest).is_ok_and(|t| t == source) {
                continue;
            }
            if fs::symlink_metadata(&dest).is_ok() {
                remove_any(&dest);
            }
            std::os::unix::fs::symlink(&source, &dest)?;
            stats.linked.push((*name).to_owned());
        }
        let sources = self.walk()?;
        let mut wanted: BTreeSet<String> = BTreeSet::new();
        for (rel, source) in &sources {
            if changed.contains_key(rel) {
                continue;
            }
            let Some(dest) = self.dest(rel, &mut stats) else {
                continue;
            };
            wanted.insert(rel.clone());
            match source {
                Source::Link(target) => {
                    let same = fs::read_link(&dest).is_ok_and(|t| &t == target);
                    if same {
                        stats.unchanged += 1;
                    } else {
                        remove_any(&dest);
                        make_parent(&dest)?;
                        std::os::unix::fs::symlink(target, &dest)?;
                        stats.written += 1;
                    }
                }
                Source::File { len, modified } => {
                    let stamp = (*len, *modified);
                    let fresh = self.stamps.get(rel) == Some(&stamp)
                        && self.placed.contains(rel)
                        && fs::symlink_metadata(&dest).is_ok_and(|m| m.is_file());
                    if fresh {
                        stats.unchanged += 1;
                        continue;
                    }
                    let bytes = fs::read(self.workspace.join(rel))?;
                    if write_if_different(&dest, &bytes)? {
                        stats.written += 1;
                    } else {
                        stats.unchanged += 1;
                    }
                    self.stamps.insert(rel.clone(), stamp);
                }
            }
        }
        for (rel, text) in &changed {
            let Some(dest) = self.dest(rel, &mut stats) else {
                continue;
            };
            wanted.insert(rel.clone());
            // The stamp no longer describes the overlay's copy.
            self.stamps.remove(rel);
            if write_if_different(&dest, text.as_bytes())? {
                stats.written += 1;
            } else {
                stats.unchanged += 1;
            }
        }
        for rel in self.placed.difference(&wanted) {
            let dest = self.tree.join(rel);
            if fs::symlink_metadata(&dest).is_ok() && !passes_link(&self.tree, rel) {
                remove_any(&dest);
                stats.removed += 1;
                remove_empty_parents(&self.tree, &dest);
            }
        }
        self.placed = wanted;
        if !self.private {
            let manifest: String = self.placed.iter().map(|p| format!("{p}\n")).collect();
            fs::write(self.base.join("manifest"), manifest)?;
        }
        Ok(stats)
    }

    /// The destination of `rel`, or `None` (noted in `stats`) when it would pass through a link.
    fn dest(&self, rel: &str, stats: &mut SyncStats) -> Option<PathBuf> {
        let first = rel.split('/').next().unwrap_or("");
        if (rel.contains('/') && LINKED_DIRS.contains(&first)) || passes_link(&self.tree, rel) {
            stats.skipped.push(format!(
                "{rel}: inside a linked directory; the overlay does not write through links"
            ));
            return None;
        }
        Some(self.tree.join(rel))
    }

    /// The workspace's non-ignored files (and symlinks), by relative path.
    fn walk(&self) -> io::Result<BTreeMap<String, Source>> {
        let walker = ignore::WalkBuilder::new(&self.workspace)
            .hidden(false)
            .follow_links(false)
            .require_git(false)
            .filter_entry(|e| {
                let name = e.file_name();
                name != ".git" && !(e.depth() >= 1 && LINKED_DIRS.iter().any(|d| name == *d))
            })
            .build();
        let mut out = BTreeMap::new();
        for entry in walker.flatten() {
            let Some(kind) = entry.file_type() else {
                continue;
            };
            let Some(rel) = relative(&self.workspace, entry.path()) else {
                continue;
            };
            if rel.is_empty() {
                continue;
            }
            let source = if kind.is_symlink() {
                match fs::read_link(entry.path()) {
                    Ok(target) => Source::Link(target),
                    Err(_) => continue,
                }
            } else if kind.is_file() {
                let meta = entry.metadata().ok();
                Source::File {
                    len: meta.as_ref().map_or(0, |m| m.len()),
                    modified: meta.and_then(|m| m.modified().ok()),
                }
            } else {
                continue;
            };
            out.insert(rel, source);
            if out.len() > MAX_FILES {
                return Err(io::Error::other(format!(
                    "the workspace has more than {MAX_FILES} files that are not ignored; \
                     an overlay would copy all of them — add the build output and dependency \
                     directories to .gitignore"
                )));
            }
        }
        Ok(out)
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        if self.private {
            let _ = fs::remove_dir_all(&self.tree);
        }
    }
}

#[derive(Debug)]
enum Source {
    File {
        len: u64,
        modified: Option<SystemTime>,
    },
    Link(PathBuf),
}

/// `path` relative to `root` with `/` separators, when it is inside and has no `..`.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?.to_owned()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// Whether an ancestor of `tree/rel` (below `tree`) is a symlink.
fn passes_link(tree: &Path, rel: &str) -> bool {
    let mut at = tree.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(part);
        if fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return true;
        }
    }
    false
}

fn make_parent(dest: &Path) -> io::Result<()> {
    match dest.parent() {
        Some(p) => fs::create_dir_all(p),
        None => Ok(()),
    }
}

/// Writes `bytes` unless the file already holds them (so its modification time stays).
fn write_if_different(dest: &Path, bytes: &[u8]) -> io::Result<bool> {
    match fs::symlink_metadata(dest) {
        Ok(m) if m.is_file() => {
            if m.len() == bytes.len() as u64 && fs::read(dest).is_ok_and(|b| b == bytes) {
                return Ok(false);
            }
        }
        Ok(_) => remove_any(dest),
        Err(_) => {}
    }
    make_parent(dest)?;
    fs::write(dest, bytes)?;
    Ok(true)
}

fn remove_any(path: &Path) {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = fs::remove_file(path);
        }
        Err(_) => {}
    }
}

fn remove_empty_parents(tree: &Path, dest: &Path) {
    let mut dir = dest.parent();
    while let Some(d) = dir {
        if d == tree || !d.starts_with(tree) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// FNV-1a: a stable hash for directory names and fingerprints (std's hasher may change
/// between releases).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for e in walkdir(dir) {
            out.push((relative(dir, &e).unwrap(), fs::read(&e).unwrap_or_default()));
        }
        out.sort();
        out
    }

    fn walkdir(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap().flatten() {
                let t = e.file_type().unwrap();
                if t.is_dir() {
                    stack.push(e.path());
                } else {
                    out.push(e.path());
                }
            }
        }
        out
    }

    #[test]
    fn mirrors_the_workspace_with_changes_on_top_and_never_writes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        write(&ws.join("src/lib.rs"), "pub fn a() {}\n");
        write(&ws.join("src/main.rs"), "fn main() {}\n");
        write(&ws.join(".gitignore"), "target/\n*.log\n");
        write(&ws.join("target/debug/big"), "build output");
        write(&ws.join("run.log"), "log");
        write(
            &ws.join("node_modules/pkg/index.js"),
            "module.exports = 1;\n",
        );
        let before = snapshot(&ws);
        let cache = tmp.path().join("cache");

        let mut o = Overlay::open(&ws, &cache).unwrap();
        let ws = fs::canonicalize(&ws).unwrap();
        let changes = vec![
            (ws.join("src/lib.rs"), "pub fn a() -> u8 { 1 }\n".to_owned()),
            (ws.join("src/new.rs"), "pub fn b() {}\n".to_owned()),
            (ws.join("node_modules/evil.js"), "nope".to_owned()),
        ];
        let stats = o.sync(&changes).unwrap();
        let tree = o.dir().to_path_buf();
        assert_eq!(
            fs::read_to_string(tree.join("src/lib.rs")).unwrap(),
            "pub fn a() -> u8 { 1 }\n"
        );
        assert_eq!(
            fs::read_to_string(tree.join("src/new.rs")).unwrap(),
            "pub fn b() {}\n"
        );
        assert_eq!(
            fs::read_to_string(tree.join("src/main.rs")).unwrap(),
            "fn main() {}\n"
        );
        assert!(!tree.join("target").exists() && !tree.join("run.log").exists());
        assert!(fs::read_link(tree.join("node_modules")).is_ok());
        assert_eq!(stats.linked, ["node_modules"]);
        assert_eq!(stats.skipped.len(), 1, "{stats:?}");
        assert_eq!(snapshot(&ws), before, "the workspace was written");

        // Unchanged files keep their modification time; a dropped change is restored; a
        // created file that is no longer proposed disappears.
        let main_time = fs::metadata(tree.join("src/main.rs"))
            .unwrap()
            .modified()
            .unwrap();
        let stats = o.sync(&[]).unwrap();
        assert_eq!(stats.removed, 1, "{stats:?}");
        assert_eq!(stats.written, 1, "{stats:?}");
        assert!(!tree.join("src/new.rs").exists());
        assert_eq!(
            fs::read_to_string(tree.join("src/lib.rs")).unwrap(),
            "pub fn a() {}\n"
        );
        assert_eq!(
            fs::metadata(tree.join("src/main.rs"))
                .unwrap()
                .modified()
                .unwrap(),
            main_time
        );
        assert_eq!(snapshot(&ws), before);
    }

    #[test]
    fn a_later_run_forgets_the_files_of_an_earlier_one_and_a_busy_overlay_is_private() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        write(&ws.join("a.py"), "x = 1\n");
        let cache = tmp.path().join("cache");
        let ws = fs::canonicalize(&ws).unwrap();
        let tree = {
            let mut o = Overlay::open(&ws, &cache).unwrap();
            o.sync(&[(ws.join("b.py"), "y = 2\n".to_owned())]).unwrap();
            assert!(o.dir().join("b.py").exists());
            // A second run while the first holds the overlay gets a private tree.
            let mut other = Overlay::open(&ws, &cache).unwrap();
            assert_ne!(other.dir(), o.dir());
            other.sync(&[]).unwrap();
            assert!(other.dir().join("a.py").exists() && !other.dir().join("b.py").exists());
            let private = other.dir().to_path_buf();
            drop(other);
            assert!(!private.exists());
            o.dir().to_path_buf()
        };
        let mut o = Overlay::open(&ws, &cache).unwrap();
        assert_eq!(o.dir(), tree);
        o.sync(&[]).unwrap();
        assert!(!tree.join("b.py").exists());
        assert!(tree.join("a.py").exists());
    }

    #[test]
    fn overlay_inside_the_workspace_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Overlay::open(tmp.path(), &tmp.path().join("cache")).unwrap_err();
        assert!(err.to_string().contains("inside the workspace"), "{err}");
    }
}
