//! Atomic multi-file writes: the one place where patchwise itself changes files on disk (CLI
//! `edit`, `develop --apply`, MCP edits). A [`Transaction`] collects every file's new text and
//! commits them together — all of them land, or none does.
//!
//! How: each new text goes to a temporary file in its target's directory (so the final rename
//! never crosses a file system) and is fsynced; each original is kept as a hard link (or a copy)
//! beside it; then the temporaries are renamed into place one by one. If any step fails, the
//! files already renamed are restored from their originals, created files and directories are
//! removed, and the error names the file and the reason. Permissions (and, where allowed, the
//! owner) of a replaced file are kept; a symlink stays a symlink (the file it points to is
//! written). Every file is checked against the text the caller expects right before its rename:
//! a file changed or deleted on disk since it was read is never overwritten.
//!
//! A process killed mid-commit (`kill -9`) cannot roll itself back, so a small journal in the
//! data directory (`<data dir>/patchwise/transactions/`) records each commit while it runs; the
//! next start calls [`recover_interrupted`], which restores the originals of an unfinished
//! commit, finishes the clean-up of a finished one, and reports what it did.
//!
//! All disk access goes through the [`Disk`] trait, so tests inject failures (a read-only
//! directory midway, a full disk, a file deleted between check and write).
//!
//! ```no_run
//! use patchwise::tools::transaction::Transaction;
//!
//! # fn main() -> Result<(), patchwise::tools::transaction::TransactionError> {
//! let original = std::fs::read_to_string("src/lib.rs").unwrap();
//! let mut tx = Transaction::new();
//! // Replace a file, but only if it still reads `original`.
//! tx.replace("src/lib.rs", &original, original.replace("old_name", "new_name"));
//! // Create a file (refused if it exists); missing parent directories are created.
//! tx.create("src/util/mod.rs", "pub fn helper() {}\n");
//! let done = tx.commit()?; // or `commit_on(&disk)` with another `Disk`
//! assert_eq!(done.files.len(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! It must never leave a half-applied change behind when it reports an error, and never write a
//! file whose current text differs from what the caller saw.

use std::fmt;
use std::fs::{self, Metadata};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::edit::ledger::content_hash;

// ---------------------------------------------------------------------------------------------
// The disk

/// The file operations a commit needs. [`RealDisk`] is the disk; tests wrap it to fail on cue.
pub trait Disk: Send + Sync {
    /// Metadata without following a final symlink.
    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata>;
    /// The path with every symlink resolved.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Creates `path` (failing if it exists), writes `bytes`, gives it the permissions (and, when
    /// allowed, the owner) of `like`, and syncs it to the device.
    fn write_new(&self, path: &Path, bytes: &[u8], like: Option<&Metadata>) -> io::Result<()>;
    /// A second name for a file (fails if `to` exists).
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    /// Makes renames in `dir` durable (a no-op where directories cannot be synced).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealDisk;

impl Disk for RealDisk {
    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        fs::symlink_metadata(path)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        fs::canonicalize(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }

    fn write_new(&self, path: &Path, bytes: &[u8], like: Option<&Metadata>) -> io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        file.write_all(bytes)?;
        if let Some(meta) = like {
            file.set_permissions(meta.permissions())?;
            keep_owner(&file, meta);
        }
        file.sync_all()
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::hard_link(from, to)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        #[cfg(unix)]
        {
            fs::File::open(dir)?.sync_all()
        }
        #[cfg(not(unix))]
        {
            let _ = dir;
            Ok(())
        }
    }
}

/// Gives `file` the owner of `meta` (best effort: only a privileged process may).
#[cfg(unix)]
fn keep_owner(file: &fs::File, meta: &Metadata) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(now) = file.metadata()
        && (now.uid() != meta.uid() || now.gid() != meta.gid())
    {
        let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
    }
}

#[cfg(not(unix))]
fn keep_owner(_file: &fs::File, _meta: &Metadata) {}

// ---------------------------------------------------------------------------------------------
// The transaction

/// What happens to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// An existing file gets a new text.
    Replace,
    /// A new file (refused if the path exists).
    Create,
    /// An existing file is removed.
    Delete,
}

#[derive(Debug, Clone)]
struct Change {
    /// As the caller named it (for messages).
    shown: PathBuf,
    kind: ChangeKind,
    /// The text the file must still have (`Replace`, `Delete`).
    expected: Option<String>,
    /// The new text (`Replace`, `Create`).
    text: Option<String>,
}

/// One file of a committed transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// As the caller named it.
    pub path: PathBuf,
    /// The file actually written (symlinks resolved).
    pub target: PathBuf,
    pub kind: ChangeKind,
}

/// The result of a successful commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub files: Vec<Written>,
}

/// Why a commit failed, and what the rollback did. The Display says which file, why, and that
/// nothing was changed (or exactly what could not be undone and where its original is kept).
#[derive(Debug, thiserror::Error)]
pub struct TransactionError {
    /// The file the failing step was about (as the caller named it).
    pub path: PathBuf,
    pub reason: String,
    /// Files restored to their original text (or removed, when created) by the rollback.
    pub undone: Vec<PathBuf>,
    /// What the rollback could not undo; empty when the disk is as it was before the commit.
    pub not_undone: Vec<String>,
}

impl fmt::Display for TransactionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.reason)?;
        if self.not_undone.is_empty() {
            write!(f, "; nothing was changed")?;
            if !self.undone.is_empty() {
                let undone: Vec<String> = self
                    .undone
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                write!(f, " ({} put back as it was)", undone.join(", "))?;
            }
            Ok(())
        } else {
            write!(
                f,
                "; the rollback was incomplete: {}",
                self.not_undone.join("; ")
            )
        }
    }
}

impl TransactionError {
    fn new(change: &Change, reason: impl Into<String>) -> Self {
        TransactionError {
            path: change.shown.clone(),
            reason: reason.into(),
            undone: Vec::new(),
            not_undone: Vec::new(),
        }
    }

    fn io(change: &Change, what: &str, e: &io::Error) -> Self {
        Self::new(change, format!("{what}: {}", describe(e)))
    }
}

/// A lower-case reading of an I/O error, with what to do for the common ones.
fn describe(e: &io::Error) -> String {
    let text = e.to_string();
    let mut chars = text.chars();
    let mut s: String = chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default();
    match e.kind() {
        io::ErrorKind::PermissionDenied => {
            s.push_str(" (check the permissions of the file and its directory)")
        }
        io::ErrorKind::StorageFull => s.push_str(" (free some space and try again)"),
        io::ErrorKind::ReadOnlyFilesystem => s.push_str(" (the file system is read-only)"),
        _ => {}
    }
    s
}

/// A set of file changes committed together. See the module docs for an example.
#[derive(Debug, Clone)]
pub struct Transaction {
    changes: Vec<Change>,
    journal: Option<Journal>,
}

impl Default for Transaction {
    fn default() -> Self {
        Self::new()
    }
}

impl Transaction {
    /// An empty transaction journaled in the default location ([`Journal::default_dir`]).
    pub fn new() -> Self {
        Transaction {
            changes: Vec::new(),
            journal: Journal::default_dir().map(Journal::at),
        }
    }

    /// Journal in `journal` instead (`None`: no journal, so a killed process leaves its
    /// temporary files for nobody to clean up — tests and callers without a data directory).
    pub fn with_journal(mut self, journal: Option<Journal>) -> Self {
        self.journal = journal;
        self
    }

    /// Replace `path`, which must still read `expected`, with `text`.
    pub fn replace(
        &mut self,
        path: impl Into<PathBuf>,
        expected: &str,
        text: impl Into<String>,
    ) -> &mut Self {
        self.push(
            path,
            ChangeKind::Replace,
            Some(expected.to_owned()),
            Some(text.into()),
        )
    }

    /// Create `path` with `text`; refused if anything exists there. Missing parent directories
    /// are created (and removed again on rollback).
    pub fn create(&mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> &mut Self {
        self.push(path, ChangeKind::Create, None, Some(text.into()))
    }

    /// Delete `path`, which must still read `expected`.
    pub fn delete(&mut self, path: impl Into<PathBuf>, expected: &str) -> &mut Self {
        self.push(path, ChangeKind::Delete, Some(expected.to_owned()), None)
    }

    fn push(
        &mut self,
        path: impl Into<PathBuf>,
        kind: ChangeKind,
        expected: Option<String>,
        text: Option<String>,
    ) -> &mut Self {
        self.changes.push(Change {
            shown: path.into(),
            kind,
            expected,
            text,
        });
        self
    }

    /// Commits on the real disk.
    pub fn commit(self) -> Result<Committed, TransactionError> {
        self.commit_on(&RealDisk)
    }

    /// Commits through `disk`: every change lands, or none does.
    pub fn commit_on(self, disk: &dyn Disk) -> Result<Committed, TransactionError> {
        let id = transaction_id();
        let mut plan = Vec::with_capacity(self.changes.len());
        for change in &self.changes {
            let step = prepare_step(disk, change, &id)?;
            if let Some(other) = plan.iter().find(|s: &&Step| s.target == step.target) {
                return Err(TransactionError::new(
                    change,
                    format!(
                        "it is the same file as {} in this transaction; merge the two changes",
                        other.change.shown.display()
                    ),
                ));
            }
            plan.push(step);
        }
        let mut run = Run {
            disk,
            plan,
            id,
            journal: self.journal,
            journal_file: None,
            created_dirs: Vec::new(),
        };
        match run.apply() {
            Ok(()) => Ok(Committed {
                files: run
                    .plan
                    .iter()
                    .map(|s| Written {
                        path: s.change.shown.clone(),
                        target: s.target.clone(),
                        kind: s.change.kind,
                    })
                    .collect(),
            }),
            Err(mut e) => {
                run.rollback(&mut e);
                Err(e)
            }
        }
    }
}

/// One change with its resolved target and side files.
#[derive(Debug)]
struct Step {
    change: Change,
    target: PathBuf,
    temp: PathBuf,
    backup: PathBuf,
    /// The target's metadata before the commit (`Replace`, `Delete`).
    meta: Option<Metadata>,
    /// How far this step got.
    temp_written: bool,
    backed_up: bool,
    applied: bool,
}

struct Run<'a> {
    disk: &'a dyn Disk,
    plan: Vec<Step>,
    id: String,
    journal: Option<Journal>,
    journal_file: Option<PathBuf>,
    created_dirs: Vec<PathBuf>,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn transaction_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}-{:x}-{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The marker in the names of a transaction's side files: `.NAME.pw-ID.tmp`, `.NAME.pw-ID.orig`.
const SIDE_MARK: &str = ".pw-";

fn side_file(target: &Path, id: &str, suffix: &str) -> PathBuf {
    // Short enough that the side file's name stays within a file system's limit.
    let name: String = target
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(80).collect())
        .unwrap_or_else(|| "file".to_owned());
    target.with_file_name(format!(".{name}{SIDE_MARK}{id}.{suffix}"))
}

/// Resolves the target of a change and checks it is in the state the caller expects.
fn prepare_step(disk: &dyn Disk, change: &Change, id: &str) -> Result<Step, TransactionError> {
    let shown = &change.shown;
    if shown.file_name().is_none() {
        return Err(TransactionError::new(change, "the path names no file"));
    }
    let existing = disk.symlink_metadata(shown);
    let target = match &existing {
        // A symlink stays a link: the file it points to is written.
        Ok(m) if m.file_type().is_symlink() => disk
            .canonicalize(shown)
            .map_err(|e| TransactionError::io(change, "cannot follow the symlink", &e))?,
        Ok(_) => absolute(disk, shown),
        Err(e) if e.kind() == io::ErrorKind::NotFound => absolute(disk, shown),
        Err(e) => return Err(TransactionError::io(change, "cannot inspect it", e)),
    };
    let meta = match change.kind {
        ChangeKind::Create => {
            if existing.is_ok() {
                return Err(TransactionError::new(
                    change,
                    "it already exists and this change creates it; read the file and change it \
                     instead of creating it",
                ));
            }
            None
        }
        ChangeKind::Replace | ChangeKind::Delete => {
            let meta = disk
                .symlink_metadata(&target)
                .map_err(|e| gone_or(change, "cannot inspect it", &e))?;
            if meta.is_dir() {
                return Err(TransactionError::new(change, "it is a directory"));
            }
            Some(meta)
        }
    };
    let step = Step {
        change: change.clone(),
        temp: side_file(&target, id, "tmp"),
        backup: side_file(&target, id, "orig"),
        target,
        meta,
        temp_written: false,
        backed_up: false,
        applied: false,
    };
    if step.change.kind != ChangeKind::Create {
        check_unchanged(disk, &step, &step.target)?;
    }
    Ok(step)
}

/// `path` made absolute against the current directory, with its parent's symlinks resolved
/// when the parent exists (so two names of one file are seen as one).
fn absolute(disk: &dyn Disk, path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) => disk
            .canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or(abs),
        _ => abs,
    }
}

/// "deleted since it was read" for a missing file, else `what` and the I/O error.
fn gone_or(change: &Change, what: &str, e: &io::Error) -> TransactionError {
    if e.kind() == io::ErrorKind::NotFound {
        TransactionError::new(
            change,
            "it was deleted since it was read; nothing was written over it",
        )
    } else {
        TransactionError::io(change, what, e)
    }
}

/// Fails unless `path` holds exactly the text the change expects.
fn check_unchanged(disk: &dyn Disk, step: &Step, path: &Path) -> Result<(), TransactionError> {
    let change = &step.change;
    let bytes = disk
        .read(path)
        .map_err(|e| gone_or(change, "cannot read it to check it is unchanged", &e))?;
    if Some(bytes.as_slice()) != change.expected.as_deref().map(str::as_bytes) {
        return Err(TransactionError::new(
            change,
            "it changed on disk since it was read; read it again and redo the change",
        ));
    }
    Ok(())
}

impl Run<'_> {
    fn apply(&mut self) -> Result<(), TransactionError> {
        self.write_journal(JournalState::Writing);
        // 1. New texts into temporary files beside their targets, synced.
        for i in 0..self.plan.len() {
            if self.plan[i].change.text.is_some() {
                self.make_parents(i)?;
                let step = &self.plan[i];
                let text = step.change.text.as_deref().unwrap_or_default();
                self.disk
                    .write_new(&step.temp, text.as_bytes(), step.meta.as_ref())
                    .map_err(|e| {
                        TransactionError::io(&step.change, "cannot write a temporary file", &e)
                    })?;
                self.plan[i].temp_written = true;
            }
        }
        // 2. Originals kept beside their targets, each checked once more, then the renames.
        for i in 0..self.plan.len() {
            self.swap(i)?;
        }
        // 3. Durable, then committed: the side files go.
        self.sync_parents();
        self.write_journal(JournalState::Committed);
        let mut clean = true;
        for step in &self.plan {
            if step.backed_up && self.disk.remove_file(&step.backup).is_err() {
                clean = false;
            }
        }
        if clean {
            self.remove_journal();
        } else {
            // The next start removes what is left (the journal says the commit is complete).
            self.journal_file = None;
        }
        Ok(())
    }

    /// Creates the missing parent directories of step `i`'s target.
    fn make_parents(&mut self, i: usize) -> Result<(), TransactionError> {
        let step = &self.plan[i];
        let mut missing = Vec::new();
        let mut dir = step.target.parent();
        while let Some(d) = dir {
            match self.disk.symlink_metadata(d) {
                Ok(m) if m.is_dir() => break,
                Ok(_) => {
                    return Err(TransactionError::new(
                        &step.change,
                        format!("{} is a file, not a directory", d.display()),
                    ));
                }
                Err(_) => missing.push(d.to_path_buf()),
            }
            dir = d.parent();
        }
        let made = !missing.is_empty();
        for d in missing.into_iter().rev() {
            self.disk.create_dir(&d).map_err(|e| {
                TransactionError::io(
                    &self.plan[i].change,
                    &format!("cannot create the directory {}", d.display()),
                    &e,
                )
            })?;
            self.created_dirs.push(d);
        }
        if made {
            // The journal must know about them before anything is written inside.
            self.write_journal(JournalState::Writing);
        }
        Ok(())
    }

    fn swap(&mut self, i: usize) -> Result<(), TransactionError> {
        let disk = self.disk;
        let step = &mut self.plan[i];
        match step.change.kind {
            ChangeKind::Create => {
                // A link refuses to replace a file that appeared meanwhile; a rename would not,
                // so where links fail for another reason the rename is preceded by a look.
                let linked = disk.hard_link(&step.temp, &step.target);
                let taken = match &linked {
                    Ok(()) => false,
                    Err(e) => {
                        e.kind() == io::ErrorKind::AlreadyExists
                            || disk.symlink_metadata(&step.target).is_ok()
                    }
                };
                if taken {
                    return Err(TransactionError::new(
                        &step.change,
                        "it was created by someone else during the write; nothing was written \
                         over it",
                    ));
                }
                match linked {
                    Ok(()) => {
                        let _ = disk.remove_file(&step.temp);
                    }
                    Err(_) => disk.rename(&step.temp, &step.target).map_err(|e| {
                        TransactionError::io(&step.change, "cannot move it into place", &e)
                    })?,
                }
                step.applied = true;
            }
            ChangeKind::Replace | ChangeKind::Delete => {
                if disk.hard_link(&step.target, &step.backup).is_err() {
                    // No hard links here (or the file vanished): keep a copy of the original.
                    let original = step.change.expected.as_deref().unwrap_or_default();
                    disk.write_new(&step.backup, original.as_bytes(), step.meta.as_ref())
                        .map_err(|e| {
                            TransactionError::io(
                                &step.change,
                                "cannot keep a copy of the original",
                                &e,
                            )
                        })?;
                }
                step.backed_up = true;
                // The backup is the file that will be replaced: it must still be the original.
                check_unchanged(disk, step, &step.target.clone())?;
                let result = if step.change.kind == ChangeKind::Delete {
                    disk.remove_file(&step.target)
                } else {
                    disk.rename(&step.temp, &step.target)
                };
                result.map_err(|e| {
                    let what = if step.change.kind == ChangeKind::Delete {
                        "cannot delete it"
                    } else {
                        "cannot move the new text into place"
                    };
                    TransactionError::io(&step.change, what, &e)
                })?;
                step.applied = true;
            }
        }
        Ok(())
    }

    /// Undoes everything done so far, recording what it restored and what it could not.
    fn rollback(&mut self, error: &mut TransactionError) {
        let disk = self.disk;
        for step in self.plan.iter().rev() {
            let shown = step.change.shown.clone();
            if step.applied {
                let undo = match step.change.kind {
                    ChangeKind::Create => disk.remove_file(&step.target),
                    ChangeKind::Replace | ChangeKind::Delete => {
                        disk.rename(&step.backup, &step.target)
                    }
                };
                match undo {
                    Ok(()) => error.undone.push(shown),
                    Err(e) => error.not_undone.push(match step.change.kind {
                        ChangeKind::Create => format!(
                            "{} was created and could not be removed ({})",
                            shown.display(),
                            describe(&e)
                        ),
                        _ => format!(
                            "{} could not be restored ({}); its original is kept in {}",
                            shown.display(),
                            describe(&e),
                            step.backup.display()
                        ),
                    }),
                }
            } else if step.backed_up {
                let _ = disk.remove_file(&step.backup);
            }
            if step.temp_written {
                // Gone already when it was renamed into place.
                let _ = disk.remove_file(&step.temp);
            }
        }
        for d in self.created_dirs.iter().rev() {
            let _ = disk.remove_dir(d);
        }
        self.sync_parents();
        if error.not_undone.is_empty() {
            self.remove_journal();
        }
    }

    /// Makes the renames in every target's directory durable.
    fn sync_parents(&self) {
        let mut dirs: Vec<&Path> = self.plan.iter().filter_map(|s| s.target.parent()).collect();
        dirs.sort();
        dirs.dedup();
        for d in dirs {
            let _ = self.disk.sync_dir(d);
        }
    }

    fn write_journal(&mut self, state: JournalState) {
        let Some(journal) = &self.journal else {
            return;
        };
        let record = JournalRecord {
            id: self.id.clone(),
            pid: std::process::id(),
            state,
            files: self
                .plan
                .iter()
                .map(|s| JournalFile {
                    target: s.target.clone(),
                    kind: s.change.kind,
                    temp: s.temp.clone(),
                    backup: s.backup.clone(),
                    new_hash: s.change.text.as_deref().map(content_hash),
                })
                .collect(),
            created_dirs: self.created_dirs.clone(),
        };
        match journal.write(&record) {
            Ok(path) => self.journal_file = Some(path),
            Err(e) => tracing::warn!(
                "cannot journal the write in {}: {e}; a crash now would leave temporary files",
                journal.dir.display()
            ),
        }
    }

    fn remove_journal(&mut self) {
        if let Some(path) = self.journal_file.take() {
            let _ = fs::remove_file(path);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The journal and recovery after a crash

/// Where commits in progress are recorded, one JSON file per commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Journal {
    dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum JournalState {
    /// Renames may be under way: an interrupted commit is rolled back.
    Writing,
    /// Every file is in place: only side files are left to remove.
    Committed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct JournalFile {
    target: PathBuf,
    kind: ChangeKind,
    temp: PathBuf,
    backup: PathBuf,
    new_hash: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct JournalRecord {
    id: String,
    pid: u32,
    state: JournalState,
    files: Vec<JournalFile>,
    created_dirs: Vec<PathBuf>,
}

impl Journal {
    /// A journal in `dir` (created when first needed).
    pub fn at(dir: impl Into<PathBuf>) -> Journal {
        Journal { dir: dir.into() }
    }

    /// `<platform data dir>/patchwise/transactions` (`$XDG_DATA_HOME` on Linux): the same for
    /// every patchwise process of the user, whatever its workspace or configuration, so any
    /// start can finish what a killed one left.
    pub fn default_dir() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("patchwise").join("transactions"))
    }

    fn write(&self, record: &JournalRecord) -> io::Result<PathBuf> {
        fs::create_dir_all(&self.dir)?;
        let path = self.dir.join(format!("{}.json", record.id));
        let tmp = self.dir.join(format!(".{}.json.tmp", record.id));
        let body = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
        let _ = fs::remove_file(&tmp);
        RealDisk.write_new(&tmp, &body, None)?;
        fs::rename(&tmp, &path)?;
        let _ = RealDisk.sync_dir(&self.dir);
        Ok(path)
    }

    /// Finishes every commit whose process is gone: an unfinished one is rolled back (originals
    /// restored, created files removed), a finished one loses its side files. Answers one line
    /// per file touched, for the user.
    pub fn recover(&self) -> Vec<String> {
        self.recover_on(&RealDisk)
    }

    /// [`Journal::recover`] through `disk`.
    pub fn recover_on(&self, disk: &dyn Disk) -> Vec<String> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        paths.sort();
        let mut report = Vec::new();
        for path in paths {
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            let Ok(record) = serde_json::from_str::<JournalRecord>(&text) else {
                report.push(format!(
                    "removed an unreadable transaction journal {}",
                    path.display()
                ));
                let _ = fs::remove_file(&path);
                continue;
            };
            if record.pid != std::process::id() && process_alive(record.pid, &path) {
                continue;
            }
            // Claim it, so two starting processes do not both recover it.
            let claimed = path.with_extension(format!("recovering-{}", std::process::id()));
            if fs::rename(&path, &claimed).is_err() {
                continue;
            }
            report.extend(recover_record(disk, &record));
            let _ = fs::remove_file(&claimed);
        }
        report
    }
}

/// Recovers every interrupted commit in the default journal; the lines say what was done (see
/// [`Journal::recover`]). Call it when a patchwise process starts.
pub fn recover_interrupted() -> Vec<String> {
    Journal::default_dir()
        .map(|d| Journal::at(d).recover())
        .unwrap_or_default()
}

fn recover_record(disk: &dyn Disk, record: &JournalRecord) -> Vec<String> {
    let mut report = Vec::new();
    let hash_of = |p: &Path| {
        disk.read(p)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(|t| content_hash(&t))
    };
    let exists = |p: &Path| disk.symlink_metadata(p).is_ok();
    let mut removed_temps = 0usize;
    for f in &record.files {
        if exists(&f.temp) && disk.remove_file(&f.temp).is_ok() {
            removed_temps += 1;
        }
        let target = f.target.display();
        match (record.state, f.kind) {
            (JournalState::Committed, _) => {
                if exists(&f.backup) && disk.remove_file(&f.backup).is_ok() {
                    removed_temps += 1;
                }
            }
            (JournalState::Writing, ChangeKind::Create) => {
                if exists(&f.target) && hash_of(&f.target) == f.new_hash && f.new_hash.is_some() {
                    match disk.remove_file(&f.target) {
                        Ok(()) => report
                            .push(format!("removed {target}, created by an interrupted write")),
                        Err(e) => report.push(format!(
                            "cannot remove {target}, created by an interrupted write: {}",
                            describe(&e)
                        )),
                    }
                }
            }
            (JournalState::Writing, ChangeKind::Replace | ChangeKind::Delete) => {
                if !exists(&f.backup) {
                    continue;
                }
                let ours = !exists(&f.target)
                    || (f.new_hash.is_some() && hash_of(&f.target) == f.new_hash);
                let same = hash_of(&f.target) == hash_of(&f.backup);
                if ours && !same {
                    match disk.rename(&f.backup, &f.target) {
                        Ok(()) => report.push(format!(
                            "restored {target} to its text before an interrupted write"
                        )),
                        Err(e) => report.push(format!(
                            "cannot restore {target} after an interrupted write ({}); its \
                             original is kept in {}",
                            describe(&e),
                            f.backup.display()
                        )),
                    }
                } else if same {
                    let _ = disk.remove_file(&f.backup);
                } else {
                    report.push(format!(
                        "{target} changed after an interrupted write; it was left as it is and \
                         its earlier text is kept in {}",
                        f.backup.display()
                    ));
                }
            }
        }
    }
    for d in record.created_dirs.iter().rev() {
        let _ = disk.remove_dir(d);
    }
    if removed_temps > 0 {
        report.push(format!(
            "removed {removed_temps} temporary file{} left by an interrupted write",
            if removed_temps == 1 { "" } else { "s" }
        ));
    }
    report
}

/// Whether the process that wrote a journal may still be running: on Linux from `/proc`;
/// elsewhere a journal younger than an hour is taken as alive (a commit takes seconds).
fn process_alive(pid: u32, journal: &Path) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        fs::metadata(journal)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() < 3600)
    }
}
