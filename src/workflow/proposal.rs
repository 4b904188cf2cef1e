//! Proposals: the unit a user sees and accepts — a model's change to one or more files, as byte
//! ranges against a known version of each file, with its unified diff and how it was made.
//!
//! Pending proposals follow the document: every change the editor reports is mapped through
//! them, so the ranges of a proposal keep pointing at the text it replaces. A change that
//! touches the text a proposal replaces makes the store re-locate the proposal's original text
//! (with its context lines) through the edit engine; only a unique exact match re-anchors it,
//! anything else marks the proposal stale. [`Proposals::to_apply`] hands out replacements only
//! for the text the proposal was made for — a stale proposal is refused, never applied blindly.
//!
//! Pure logic: no I/O, no protocol types; callers pass texts and replacements in.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use similar::{DiffOp, TextDiff};

use crate::document::change::{Replacement, TextEdit};
use crate::edit::{self, Pass, ReplaceOptions};
use crate::store;
use crate::store::proposals::{HunkRecord, ProposalFileRecord, ProposalRecord};

/// Identifies a proposal for the lifetime of the process.
pub type ProposalId = u64;

/// Context lines kept around each hunk to re-locate it (and shown in its diff).
const CONTEXT_LINES: usize = 3;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh proposal id (unique in this process).
pub fn next_id() -> ProposalId {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A model's change, not yet applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proposal {
    pub id: ProposalId,
    pub instruction: String,
    pub files: Vec<ProposalFile>,
    /// The unified diff of every file, in `files` order.
    pub diff: String,
    /// `provider/model` of the model whose edit this is.
    pub model: String,
    /// Attempts the workflow made (1 when the first one succeeded).
    pub attempts: usize,
    /// The matching passes of the edits (`exact`, `indentation(+4)`, …), comma-separated.
    pub matched_by: String,
}

/// One file of a proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProposalFile {
    /// Absolute path (the key callers use for documents).
    pub path: PathBuf,
    /// The path shown in diffs (relative to its workspace root).
    pub display_path: String,
    /// The editor's document version the proposal was made against (`None`: read from disk).
    pub base_version: Option<i32>,
    /// The file did not exist: accepting creates it with `new_text`.
    pub created: bool,
    /// The text the proposal was made against.
    pub original: String,
    /// Byte ranges against `original`, one replacement per hunk.
    #[serde(skip)]
    pub edit: TextEdit,
    pub new_text: String,
}

impl ProposalFile {
    /// A file change from its two texts; the edit is the minimal line-level difference.
    pub fn new(
        path: PathBuf,
        display_path: String,
        base_version: Option<i32>,
        created: bool,
        original: String,
        new_text: String,
    ) -> ProposalFile {
        let edit = edit_between(&original, &new_text);
        ProposalFile {
            path,
            display_path,
            base_version,
            created,
            original,
            edit,
            new_text,
        }
    }

    /// The unified diff of this file.
    pub fn diff(&self) -> String {
        let shown = if self.created {
            format!("{} (new file)", self.display_path)
        } else {
            self.display_path.clone()
        };
        edit::unified_diff(&self.original, &self.new_text, &shown)
    }
}

impl Proposal {
    /// Builds a proposal (and its diff) from its files.
    pub fn new(
        instruction: impl Into<String>,
        files: Vec<ProposalFile>,
        model: impl Into<String>,
        attempts: usize,
        matched_by: impl Into<String>,
    ) -> Proposal {
        let diff = files.iter().map(ProposalFile::diff).collect::<String>();
        Proposal {
            id: next_id(),
            instruction: instruction.into(),
            files,
            diff,
            model: model.into(),
            attempts,
            matched_by: matched_by.into(),
        }
    }

    pub fn file(&self, path: &Path) -> Option<&ProposalFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// The line-level edit from `before` to `after`, one replacement per hunk, built as a unified
/// diff builds its hunks: changes with at most 2 × [`CONTEXT_LINES`] unchanged lines between
/// them are one hunk (the unchanged lines inside it are replaced by themselves), so a hunk's
/// context never shows another hunk's lines as they were, and a hunk is a change that reads
/// on its own (whole lines, for diffs and code lenses).
pub fn edit_between(before: &str, after: &str) -> TextEdit {
    if before == after {
        return TextEdit::default();
    }
    let old_starts = line_starts(before);
    let new_starts = line_starts(after);
    let diff = TextDiff::from_lines(before, after);
    // Line ranges (old, new) of each hunk.
    let mut hunks: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for op in diff.ops() {
        let (old, new) = match *op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => (old_index..old_index + old_len, new_index..new_index),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (
                old_index..old_index + old_len,
                new_index..new_index + new_len,
            ),
        };
        match hunks.last_mut() {
            Some((last_old, last_new)) if old.start - last_old.end <= 2 * CONTEXT_LINES => {
                last_old.end = old.end;
                last_new.end = new.end;
            }
            _ => hunks.push((old, new)),
        }
    }
    let out = hunks
        .into_iter()
        .map(|(old, new)| {
            Replacement::new(
                old_starts[old.start]..old_starts[old.end],
                &after[new_starts[new.start]..new_starts[new.end]],
            )
        })
        .collect();
    // Sorted and disjoint by construction; an empty edit is the fallback that cannot happen.
    TextEdit::new(out).unwrap_or_default()
}

/// Byte offset of the start of every line, plus the text's length at the end.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    if *starts.last().unwrap_or(&0) != text.len() {
        starts.push(text.len());
    }
    starts
}

/// One hunk of a pending proposal, where it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    pub id: ProposalId,
    /// The hunk's number in its proposal (1-based, stable while the proposal is pending).
    pub n: usize,
    pub path: PathBuf,
    /// Byte range in the CURRENT document text (empty for a pure insertion).
    pub range: Range<usize>,
    /// This hunk as a unified-diff hunk (`@@ … @@` with context), line numbers of the current text.
    pub diff: String,
}

/// Why a proposal cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("no pending proposal with id {id}; it was accepted, rejected or never existed")]
    Unknown { id: ProposalId },
    #[error(
        "proposal {id} is stale: {reason}; nothing was applied — ask for the edit again on the current text"
    )]
    Stale { id: ProposalId, reason: String },
    #[error("proposal {id} changes {count} files; expected the texts of all of them")]
    MultiFile { id: ProposalId, count: usize },
    #[error("proposal {id} does not change {}", path.display())]
    NotInProposal { id: ProposalId, path: PathBuf },
    #[error(
        "proposal {id} has no pending hunk {hunk}; it was accepted or rejected already (patchwise.proposal.list shows the hunks)"
    )]
    UnknownHunk { id: ProposalId, hunk: usize },
}

/// What to send to the editor for one file of an accepted proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileApply {
    pub path: PathBuf,
    /// The version of the text the replacements are against (the caller's current version).
    pub version: Option<i32>,
    /// The file must be created (its content is the one insertion).
    pub create: bool,
    /// Sorted, disjoint byte ranges in the caller's current text.
    pub replacements: Vec<Replacement>,
}

/// The current text of a file as the caller knows it: `(text, version)`, `None` when the file
/// does not exist.
pub type Current = Option<(String, Option<i32>)>;

#[derive(Debug, Clone)]
struct TrackedHunk {
    /// The hunk's number in its proposal (1-based).
    n: usize,
    /// Range in `TrackedFile::text`; `text[range] == old` while the proposal is not stale.
    range: Range<usize>,
    old: String,
    new: String,
    /// Whole lines before and after the hunk in the original, to re-locate it.
    before: String,
    after: String,
    moved: bool,
    /// Sent to the editor to be applied; hidden, and dropped once the change arrives.
    accepting: bool,
}

/// The text a file will have once the hunks being accepted are applied, and where the other
/// hunks will be in it.
#[derive(Debug, Clone)]
struct Expected {
    text: String,
    ranges: Vec<(usize, Range<usize>)>,
}

#[derive(Debug, Clone)]
struct TrackedFile {
    path: PathBuf,
    /// The document's text as the store believes it is now.
    text: String,
    hunks: Vec<TrackedHunk>,
    expect: Option<Expected>,
}

#[derive(Debug, Clone)]
struct Tracked {
    proposal: Proposal,
    files: Vec<TrackedFile>,
    stale: Option<String>,
}

impl Tracked {
    fn live(&self) -> impl Iterator<Item = (&TrackedFile, &TrackedHunk)> {
        self.files
            .iter()
            .flat_map(|f| f.hunks.iter().filter(|h| !h.accepting).map(move |h| (f, h)))
    }

    /// How many hunks are left (being accepted or not).
    fn hunk_count(&self) -> usize {
        self.files.iter().map(|f| f.hunks.len()).sum()
    }

    /// Whether nothing is left to review: every hunk was accepted or rejected.
    fn done(&self) -> bool {
        self.files.iter().all(|f| f.hunks.is_empty())
    }
}

/// Pending proposals, following document changes.
#[derive(Debug, Clone, Default)]
pub struct Proposals {
    pending: BTreeMap<ProposalId, Tracked>,
    /// Proposals whose every hunk was applied through document changes, not yet reported.
    finished: Vec<ProposalId>,
    /// Proposals that lost a hunk to a document change that applied it (a code action's edit
    /// the client applied itself) and are still pending, not yet reported.
    shrunk: Vec<ProposalId>,
    /// When each stored proposal was first stored.
    created: BTreeMap<ProposalId, String>,
}

impl Proposals {
    pub fn new() -> Proposals {
        Proposals::default()
    }

    /// Adds a pending proposal and returns its id.
    pub fn add(&mut self, proposal: Proposal) -> ProposalId {
        let id = proposal.id;
        let mut files: Vec<TrackedFile> = proposal.files.iter().map(track_file).collect();
        for (n, h) in files
            .iter_mut()
            .flat_map(|f| f.hunks.iter_mut())
            .enumerate()
        {
            h.n = n + 1;
        }
        NEXT_ID.fetch_max(id + 1, Ordering::Relaxed);
        self.pending.insert(
            id,
            Tracked {
                proposal,
                files,
                stale: None,
            },
        );
        id
    }

    pub fn get(&self, id: ProposalId) -> Option<&Proposal> {
        self.pending.get(&id).map(|t| &t.proposal)
    }

    /// Drops a proposal (rejected or accepted).
    pub fn remove(&mut self, id: ProposalId) -> Option<Proposal> {
        self.pending.remove(&id).map(|t| t.proposal)
    }

    /// Every pending proposal, oldest first.
    pub fn list(&self) -> Vec<&Proposal> {
        self.pending.values().map(|t| &t.proposal).collect()
    }

    /// The pending proposals that change `path`, oldest first.
    pub fn for_path(&self, path: &Path) -> Vec<&Proposal> {
        self.pending
            .values()
            .filter(|t| t.files.iter().any(|f| f.path == path))
            .map(|t| &t.proposal)
            .collect()
    }

    /// Why the proposal is stale, if it is.
    pub fn stale(&self, id: ProposalId) -> Option<&str> {
        self.pending.get(&id).and_then(|t| t.stale.as_deref())
    }

    /// The hunks of proposal `id` in `path`, with ranges in the current text. Empty for a stale
    /// or unknown proposal.
    pub fn hunks(&self, id: ProposalId, path: &Path) -> Vec<Hunk> {
        let Some(t) = self.pending.get(&id) else {
            return Vec::new();
        };
        if t.stale.is_some() {
            return Vec::new();
        }
        t.files
            .iter()
            .filter(|f| f.path == path)
            .flat_map(|f| {
                f.hunks
                    .iter()
                    .filter(|h| !h.accepting)
                    .map(move |h| hunk_view(id, f, h))
            })
            .collect()
    }

    /// How many hunks of proposal `id` are still to be reviewed (0 when stale or unknown).
    pub fn live_hunks(&self, id: ProposalId) -> usize {
        self.pending
            .get(&id)
            .filter(|t| t.stale.is_none())
            .map_or(0, |t| t.live().count())
    }

    /// The paths proposal `id` changes.
    pub fn paths(&self, id: ProposalId) -> Vec<PathBuf> {
        self.pending
            .get(&id)
            .map(|t| t.files.iter().map(|f| f.path.clone()).collect())
            .unwrap_or_default()
    }

    /// The ids of proposals whose last hunk was applied by a document change since the last
    /// call (they are no longer pending).
    pub fn take_finished(&mut self) -> Vec<ProposalId> {
        std::mem::take(&mut self.finished)
    }

    /// The ids of proposals that are still pending but lost a hunk to a document change that
    /// applied it since the last call (their stored record is behind).
    pub fn take_shrunk(&mut self) -> Vec<ProposalId> {
        let mut ids = std::mem::take(&mut self.shrunk);
        ids.retain(|id| self.pending.get(id).is_some_and(|t| t.stale.is_none()));
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Every hunk of every live proposal in `path` (for code lenses and diagnostics).
    pub fn hunks_for_path(&self, path: &Path) -> Vec<Hunk> {
        self.pending
            .keys()
            .flat_map(|&id| self.hunks(id, path))
            .collect()
    }

    /// The live proposals whose hunks intersect (or touch) `range` of `path`.
    pub fn at(&self, path: &Path, range: Range<usize>) -> Vec<&Proposal> {
        self.pending
            .iter()
            .filter(|(id, _)| {
                self.hunks(**id, path)
                    .iter()
                    .any(|h| h.range.start <= range.end && range.start <= h.range.end)
            })
            .map(|(_, t)| &t.proposal)
            .collect()
    }

    /// Maps every pending proposal of `path` through the document changes `changes`, each
    /// against the text just before it (what `Document::apply_changes` returns). Returns the
    /// ids of proposals that became stale with this change.
    pub fn on_change(&mut self, path: &Path, changes: &[Replacement]) -> Vec<ProposalId> {
        let mut newly_stale = Vec::new();
        for (id, t) in self.pending.iter_mut() {
            if t.stale.is_some() {
                continue;
            }
            let before = t.hunk_count();
            for f in t.files.iter_mut().filter(|f| f.path == path) {
                let outcome = match expected_after(f, changes) {
                    Some(text) => {
                        finish_accept(f, text);
                        Ok(())
                    }
                    None => map_file(f, changes),
                };
                if let Err(reason) = outcome {
                    t.stale = Some(reason);
                    newly_stale.push(*id);
                    break;
                }
            }
            if t.hunk_count() < before {
                self.shrunk.push(*id);
            }
        }
        self.collect_finished();
        newly_stale
    }

    /// Moves proposals with nothing left to review out of the pending set.
    fn collect_finished(&mut self) {
        let done: Vec<ProposalId> = self
            .pending
            .iter()
            .filter(|(_, t)| t.stale.is_none() && t.done())
            .map(|(id, _)| *id)
            .collect();
        for id in done {
            self.pending.remove(&id);
            self.finished.push(id);
        }
    }

    /// Re-bases the proposals of `path` onto `current` (the document's whole text), for when
    /// the caller knows the text but not the changes that led to it (a proposal made while the
    /// user kept typing). Proposals whose hunks cannot be re-located become stale; their ids
    /// are returned.
    pub fn sync(&mut self, path: &Path, current: &str) -> Vec<ProposalId> {
        let mut newly_stale = Vec::new();
        for (id, t) in self.pending.iter_mut() {
            if t.stale.is_some() {
                continue;
            }
            let before = t.hunk_count();
            for f in t
                .files
                .iter_mut()
                .filter(|f| f.path == path && f.text != current)
            {
                if f.expect.as_ref().is_some_and(|e| e.text == current) {
                    finish_accept(f, current.to_owned());
                    continue;
                }
                if let Err(reason) = resync(f, current) {
                    t.stale = Some(reason);
                    newly_stale.push(*id);
                    break;
                }
            }
            if t.hunk_count() < before {
                self.shrunk.push(*id);
            }
        }
        self.collect_finished();
        newly_stale
    }

    /// Pending proposal `id`, unless it is stale.
    fn applicable(&mut self, id: ProposalId) -> Result<&mut Tracked, ApplyError> {
        let t = self
            .pending
            .get_mut(&id)
            .ok_or(ApplyError::Unknown { id })?;
        match &t.stale {
            Some(reason) => Err(ApplyError::Stale {
                id,
                reason: reason.clone(),
            }),
            None => Ok(t),
        }
    }

    /// The replacements that apply single-file proposal `id` to `current_text` (at
    /// `current_version`), or why it cannot be applied. When the text is not the one the store
    /// followed (changes it was not told about), the proposal is re-located in it first.
    pub fn to_apply(
        &mut self,
        id: ProposalId,
        current_text: &str,
        current_version: Option<i32>,
    ) -> Result<FileApply, ApplyError> {
        let t = self.pending.get(&id).ok_or(ApplyError::Unknown { id })?;
        if t.files.len() != 1 {
            return Err(ApplyError::MultiFile {
                id,
                count: t.files.len(),
            });
        }
        let path = t.files[0].path.clone();
        let mut out = self.to_apply_files(id, |p| {
            (p == path).then(|| (current_text.to_owned(), current_version))
        })?;
        Ok(out.remove(0))
    }

    /// The changes that apply proposal `id`, file by file; `current` gives each file's current
    /// text and version (`None`: the file does not exist).
    pub fn to_apply_files(
        &mut self,
        id: ProposalId,
        current: impl Fn(&Path) -> Current,
    ) -> Result<Vec<FileApply>, ApplyError> {
        let t = self.applicable(id)?;
        let mut out = Vec::new();
        for (f, pf) in t.files.iter_mut().zip(&t.proposal.files) {
            let version = match catch_up(f, pf, current(&f.path)) {
                Ok(version) => version,
                Err(reason) => {
                    t.stale = Some(reason.clone());
                    return Err(ApplyError::Stale { id, reason });
                }
            };
            let replacements = match version {
                None => vec![Replacement::insert(0, pf.new_text.clone())],
                Some(_) => f
                    .hunks
                    .iter()
                    .filter(|h| !h.accepting)
                    .map(|h| Replacement::new(h.range.clone(), h.new.clone()))
                    .collect(),
            };
            out.push(FileApply {
                path: f.path.clone(),
                version: version.flatten(),
                create: version.is_none(),
                replacements,
            });
        }
        Ok(out)
    }

    /// Starts accepting proposal `id` — every hunk, or only hunk `hunk`: the replacements to
    /// send to the editor, file by file (`current` as for [`Proposals::to_apply_files`]). The
    /// hunks are hidden from then on; the document change that applies them drops them and
    /// re-bases the others. Call [`Proposals::accepted`] or [`Proposals::abort_accept`] with the
    /// editor's answer.
    pub fn begin_accept(
        &mut self,
        id: ProposalId,
        hunk: Option<usize>,
        current: impl Fn(&Path) -> Current,
    ) -> Result<Vec<FileApply>, ApplyError> {
        self.accepting(id, hunk, current, true)
    }

    /// The replacements that accept proposal `id` (or only hunk `hunk`), as
    /// [`Proposals::begin_accept`] hands them out, without starting to accept: for an edit the
    /// client applies by itself when the user picks it (a code action's `edit`). The document
    /// change that applies it finishes the hunks (see [`Proposals::on_change`]); until then
    /// they stay pending.
    pub fn accept_replacements(
        &mut self,
        id: ProposalId,
        hunk: Option<usize>,
        current: impl Fn(&Path) -> Current,
    ) -> Result<Vec<FileApply>, ApplyError> {
        self.accepting(id, hunk, current, false)
    }

    fn accepting(
        &mut self,
        id: ProposalId,
        hunk: Option<usize>,
        current: impl Fn(&Path) -> Current,
        mark: bool,
    ) -> Result<Vec<FileApply>, ApplyError> {
        let t = self.applicable(id)?;
        let chosen = |h: &TrackedHunk| !h.accepting && hunk.is_none_or(|n| n == h.n);
        if !t.files.iter().flat_map(|f| &f.hunks).any(chosen) {
            return Err(match hunk {
                Some(hunk) => ApplyError::UnknownHunk { id, hunk },
                None => ApplyError::Unknown { id },
            });
        }
        let mut out = Vec::new();
        for (f, pf) in t.files.iter_mut().zip(&t.proposal.files) {
            if !f.hunks.iter().any(chosen) {
                continue;
            }
            let version = match catch_up(f, pf, current(&f.path)) {
                Ok(version) => version,
                Err(reason) => {
                    t.stale = Some(reason.clone());
                    return Err(ApplyError::Stale { id, reason });
                }
            };
            let replacements: Vec<Replacement> = f
                .hunks
                .iter()
                .filter(|h| chosen(h))
                .map(|h| Replacement::new(h.range.clone(), h.new.clone()))
                .collect();
            if mark {
                f.expect = Some(expected(f, &replacements));
                for h in f.hunks.iter_mut().filter(|h| chosen(h)) {
                    h.accepting = true;
                }
            }
            out.push(FileApply {
                path: f.path.clone(),
                version: version.flatten(),
                create: version.is_none(),
                replacements,
            });
        }
        Ok(out)
    }

    /// The editor applied what [`Proposals::begin_accept`] handed out. Returns whether the
    /// proposal is done (nothing left to review; it is no longer pending).
    pub fn accepted(&mut self, id: ProposalId) -> bool {
        let Some(t) = self.pending.get(&id) else {
            return true;
        };
        if t.live().next().is_none() {
            self.pending.remove(&id);
            return true;
        }
        false
    }

    /// The editor refused the edit: the hunks being accepted are pending again.
    pub fn abort_accept(&mut self, id: ProposalId) {
        if let Some(t) = self.pending.get_mut(&id) {
            for f in &mut t.files {
                f.expect = None;
                for h in &mut f.hunks {
                    h.accepting = false;
                }
            }
        }
    }

    /// Rejects proposal `id` — all of it, or only hunk `hunk`. Returns the proposal's paths and
    /// whether the proposal is done.
    pub fn reject(
        &mut self,
        id: ProposalId,
        hunk: Option<usize>,
    ) -> Result<(Vec<PathBuf>, bool), ApplyError> {
        let t = self
            .pending
            .get_mut(&id)
            .ok_or(ApplyError::Unknown { id })?;
        let paths = t.files.iter().map(|f| f.path.clone()).collect();
        let Some(n) = hunk else {
            self.pending.remove(&id);
            return Ok((paths, true));
        };
        let before = t.files.iter().map(|f| f.hunks.len()).sum::<usize>();
        for f in &mut t.files {
            f.hunks.retain(|h| h.accepting || h.n != n);
        }
        if t.files.iter().map(|f| f.hunks.len()).sum::<usize>() == before {
            return Err(ApplyError::UnknownHunk { id, hunk: n });
        }
        let done = t.done();
        if done {
            self.pending.remove(&id);
        }
        Ok((paths, done))
    }

    /// The proposed text of `path`: its current text with the pending hunks of `id` applied.
    pub fn proposed_text(&self, id: ProposalId, path: &Path) -> Option<String> {
        let t = self.pending.get(&id)?;
        let f = t.files.iter().find(|f| f.path == path)?;
        let replacements = f
            .hunks
            .iter()
            .filter(|h| !h.accepting)
            .map(|h| Replacement::new(h.range.clone(), h.new.clone()))
            .collect();
        TextEdit::new(replacements).ok()?.apply(&f.text).ok()
    }

    /// The diff of what is still pending in proposal `id` (its diff as made when it is stale).
    pub fn current_diff(&self, id: ProposalId) -> Option<String> {
        let t = self.pending.get(&id)?;
        if t.stale.is_some() {
            return Some(t.proposal.diff.clone());
        }
        let mut diff = String::new();
        for (f, pf) in t.files.iter().zip(&t.proposal.files) {
            if !f.hunks.iter().any(|h| !h.accepting) {
                continue;
            }
            let proposed = self.proposed_text(id, &f.path)?;
            let shown = if pf.created {
                format!("{} (new file)", pf.display_path)
            } else {
                pf.display_path.clone()
            };
            diff.push_str(&edit::unified_diff(&f.text, &proposed, &shown));
        }
        Some(diff)
    }

    /// The text the store believes `path` has, for a path one of the proposals changes.
    pub fn tracked_text(&self, path: &Path) -> Option<&str> {
        self.pending
            .values()
            .flat_map(|t| &t.files)
            .find(|f| f.path == path)
            .map(|f| f.text.as_str())
    }

    /// Proposal `id` as the store keeps it: each file's current text hash and its pending
    /// hunks. `None` for an unknown or stale proposal (a stale one keeps its last record).
    pub fn record(&self, id: ProposalId) -> Option<ProposalRecord> {
        let t = self.pending.get(&id).filter(|t| t.stale.is_none())?;
        Some(record_of(
            t,
            self.created.get(&id).cloned().unwrap_or_default(),
        ))
    }

    /// Brings back a stored proposal. `current` gives each file's text now (`None`: the file
    /// does not exist). Hunks whose file changed since are re-located through the engine by
    /// their context; a proposal that cannot be is restored as stale. Returns its id.
    pub fn restore(
        &mut self,
        record: &ProposalRecord,
        current: impl Fn(&Path) -> Current,
    ) -> ProposalId {
        let id = record.id;
        let mut files = Vec::new();
        let mut proposal_files = Vec::new();
        let mut stale = None;
        for fr in &record.files {
            let path = PathBuf::from(&fr.path);
            let text = match (current(&path), fr.created) {
                (None, true) => String::new(),
                (Some((text, _)), false) => text,
                (Some((text, _)), true) => {
                    stale.get_or_insert(format!(
                        "{} was to be created but exists now",
                        fr.display_path
                    ));
                    text
                }
                (None, false) => {
                    stale.get_or_insert(format!("{} no longer exists", fr.display_path));
                    String::new()
                }
            };
            let unchanged = store::proposals::text_hash(&text) == fr.base_hash;
            let hunks = fr
                .hunks
                .iter()
                .map(|h| {
                    let range = h.start..h.end;
                    let fits = unchanged && text.get(range.clone()) == Some(h.old.as_str());
                    TrackedHunk {
                        n: h.n,
                        range: if fits { range } else { 0..0 },
                        old: h.old.clone(),
                        new: h.new.clone(),
                        before: h.before.clone(),
                        after: h.after.clone(),
                        moved: !fits,
                        accepting: false,
                    }
                })
                .collect();
            let mut f = TrackedFile {
                path: path.clone(),
                text: text.clone(),
                hunks,
                expect: None,
            };
            if stale.is_none()
                && f.hunks.iter().any(|h| h.moved)
                && let Err(reason) = relocate(&mut f)
            {
                stale = Some(format!("{} changed since: {reason}", fr.display_path));
            }
            let new_text = if stale.is_none() {
                let replacements = f
                    .hunks
                    .iter()
                    .map(|h| Replacement::new(h.range.clone(), h.new.clone()))
                    .collect();
                TextEdit::new(replacements)
                    .and_then(|e| e.apply(&text))
                    .unwrap_or_else(|_| text.clone())
            } else {
                text.clone()
            };
            proposal_files.push(ProposalFile::new(
                path,
                fr.display_path.clone(),
                None,
                fr.created,
                text,
                new_text,
            ));
            files.push(f);
        }
        if stale.is_none() && files.iter().all(|f| f.hunks.is_empty()) {
            // Every hunk is in the files already (applied while the server was away).
            NEXT_ID.fetch_max(id + 1, Ordering::Relaxed);
            self.finished.push(id);
            return id;
        }
        let mut proposal = Proposal::new(
            record.instruction.clone(),
            proposal_files,
            record.model.clone(),
            record.attempts,
            record.matched_by.clone(),
        );
        proposal.id = id;
        if stale.is_some() {
            // What it wanted, for the user deciding to reject it.
            proposal.diff = files
                .iter()
                .flat_map(|f| f.hunks.iter().map(move |h| hunk_view(id, f, h).diff))
                .collect();
        }
        NEXT_ID.fetch_max(id + 1, Ordering::Relaxed);
        self.created.insert(id, record.created_at.clone());
        self.pending.insert(
            id,
            Tracked {
                proposal,
                files,
                stale,
            },
        );
        id
    }

    /// When proposal `id` was first stored (RFC 3339), if it was.
    pub fn created_at(&self, id: ProposalId) -> Option<&str> {
        self.created.get(&id).map(String::as_str)
    }

    /// Notes when proposal `id` was stored.
    pub fn set_created_at(&mut self, id: ProposalId, at: String) {
        self.created.insert(id, at);
    }
}

fn track_file(f: &ProposalFile) -> TrackedFile {
    let hunks = f
        .edit
        .replacements()
        .iter()
        .map(|r| {
            let (before, after) = context(&f.original, &r.range);
            TrackedHunk {
                n: 0,
                range: r.range.clone(),
                old: f.original[r.range.clone()].to_owned(),
                new: r.text.clone(),
                before,
                after,
                moved: false,
                accepting: false,
            }
        })
        .collect();
    TrackedFile {
        path: f.path.clone(),
        text: f.original.clone(),
        hunks,
        expect: None,
    }
}

/// The whole lines (at most [`CONTEXT_LINES`]) before and after `range` of `text`, to
/// re-locate a hunk by.
fn context(text: &str, range: &Range<usize>) -> (String, String) {
    let starts = line_starts(text);
    let line_of = |offset: usize| starts.partition_point(|&s| s <= offset).saturating_sub(1);
    let first = line_of(range.start);
    let ctx_start = starts[first.saturating_sub(CONTEXT_LINES)];
    // The line after the hunk's last byte (the hunk covers whole lines).
    let end_line = line_of(range.end);
    let ctx_end = starts[(end_line + CONTEXT_LINES).min(starts.len() - 1)];
    (
        text[ctx_start.min(range.start)..range.start].to_owned(),
        text[range.end..ctx_end.max(range.end)].to_owned(),
    )
}

/// Brings file `f` of a proposal up to the file's text `now`: `Ok(None)` for a file still to be
/// created, `Ok(Some(version))` for an existing one (re-located first when its text is not the
/// one followed), or why the proposal cannot apply there.
fn catch_up(
    f: &mut TrackedFile,
    pf: &ProposalFile,
    now: Current,
) -> Result<Option<Option<i32>>, String> {
    match (now, pf.created) {
        (None, true) => Ok(None),
        (Some(_), true) => Err(format!(
            "{} was to be created but exists now",
            pf.display_path
        )),
        (None, false) => Err(format!("{} no longer exists", pf.display_path)),
        (Some((text, version)), false) => {
            if text != f.text {
                resync(f, &text)?;
            }
            Ok(Some(version))
        }
    }
}

/// Applies `changes` to the tracked text and moves the hunks; a change that touches a hunk makes
/// it re-located afterwards — except a hunk being accepted, which the change applied.
fn map_file(f: &mut TrackedFile, changes: &[Replacement]) -> Result<(), String> {
    for c in changes {
        let edit = TextEdit::single(c.clone());
        f.text = edit.apply(&f.text).map_err(|e| {
            format!("lost track of the document (a change did not fit the text it followed: {e})")
        })?;
        let delta = c.text.len() as isize - c.range.len() as isize;
        for h in &mut f.hunks {
            let touches = if h.range.is_empty() {
                c.range.start < h.range.start && h.range.start < c.range.end
            } else {
                c.range.start < h.range.end && h.range.start < c.range.end
                    || (c.range.is_empty()
                        && h.range.start < c.range.start
                        && c.range.start < h.range.end)
            };
            if touches {
                h.moved = true;
                // Keep a plausible range until re-location replaces it.
                h.range = c.range.start..c.range.start;
            } else if c.range.end <= h.range.start {
                h.range = shift(&h.range, delta);
            }
        }
        // An accepted hunk the change touched is what the change did.
        f.hunks.retain(|h| !(h.accepting && h.moved));
    }
    if f.hunks.iter().any(|h| h.moved) {
        relocate(f)?;
    }
    Ok(())
}

/// The file's text after `changes` when it is exactly the text an acceptance in flight
/// expects.
fn expected_after(f: &TrackedFile, changes: &[Replacement]) -> Option<String> {
    let expected = f.expect.as_ref()?;
    let mut text = f.text.clone();
    for c in changes {
        text = TextEdit::single(c.clone()).apply(&text).ok()?;
    }
    (text == expected.text).then_some(text)
}

/// The editor applied the hunks being accepted: drop them, put the others where they are in
/// `text`, and take their context from it.
fn finish_accept(f: &mut TrackedFile, text: String) {
    let Some(expected) = f.expect.take() else {
        return;
    };
    f.text = text;
    f.hunks.retain(|h| !h.accepting);
    for h in &mut f.hunks {
        if let Some((_, r)) = expected.ranges.iter().find(|(n, _)| *n == h.n) {
            h.range = r.clone();
        }
        let (before, after) = context(&f.text, &h.range);
        h.before = before;
        h.after = after;
    }
}

/// The record of a new proposal (id 0: the store assigns one).
pub fn new_record(proposal: &Proposal) -> ProposalRecord {
    let mut files: Vec<TrackedFile> = proposal.files.iter().map(track_file).collect();
    for (n, h) in files
        .iter_mut()
        .flat_map(|f| f.hunks.iter_mut())
        .enumerate()
    {
        h.n = n + 1;
    }
    let tracked = Tracked {
        proposal: proposal.clone(),
        files,
        stale: None,
    };
    let mut record = record_of(&tracked, String::new());
    record.id = 0;
    record
}

fn record_of(t: &Tracked, created_at: String) -> ProposalRecord {
    ProposalRecord {
        id: t.proposal.id,
        instruction: t.proposal.instruction.clone(),
        model: t.proposal.model.clone(),
        attempts: t.proposal.attempts,
        matched_by: t.proposal.matched_by.clone(),
        created_at,
        files: t
            .files
            .iter()
            .zip(&t.proposal.files)
            .map(|(f, pf)| ProposalFileRecord {
                path: f.path.display().to_string(),
                display_path: pf.display_path.clone(),
                created: pf.created,
                base_hash: store::proposals::text_hash(&f.text),
                hunks: f
                    .hunks
                    .iter()
                    .filter(|h| !h.accepting)
                    .map(|h| HunkRecord {
                        n: h.n,
                        start: h.range.start,
                        end: h.range.end,
                        old: h.old.clone(),
                        new: h.new.clone(),
                        before: h.before.clone(),
                        after: h.after.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// What accepting `chosen` (some of `f`'s hunks) will make of the file.
fn expected(f: &TrackedFile, chosen: &[Replacement]) -> Expected {
    let text = TextEdit::new(chosen.to_vec())
        .and_then(|e| e.apply(&f.text))
        .unwrap_or_else(|_| f.text.clone());
    let ranges = f
        .hunks
        .iter()
        .filter(|h| !h.accepting && !chosen.iter().any(|c| c.range == h.range && c.text == h.new))
        .map(|h| {
            let delta: isize = chosen
                .iter()
                .filter(|c| c.range.end <= h.range.start)
                .map(|c| c.text.len() as isize - c.range.len() as isize)
                .sum();
            (h.n, shift(&h.range, delta))
        })
        .collect();
    Expected { text, ranges }
}

fn shift(r: &Range<usize>, delta: isize) -> Range<usize> {
    let s = (r.start as isize + delta).max(0) as usize;
    let e = (r.end as isize + delta).max(0) as usize;
    s..e
}

/// Re-locates the moved hunks in the tracked text: the hunk's original text with its context
/// lines must match exactly one place. A hunk whose proposed text stands there instead (with
/// the same context) was applied — by a code action's edit the client applied itself, or by
/// the user typing it — and is done: it is dropped.
fn relocate(f: &mut TrackedFile) -> Result<(), String> {
    let mut applied = Vec::new();
    for h in f.hunks.iter_mut().filter(|h| h.moved) {
        let done = TrackedHunk {
            old: h.new.clone(),
            new: h.old.clone(),
            ..h.clone()
        };
        // With the most context first, either way: with less, the original text could match a
        // twin elsewhere while the hunk's own place holds its proposed text.
        let found = (1..=context_depth(h)).rev().find_map(|k| {
            locate_at(&f.text, h, k)
                .map(Some)
                .or_else(|| locate_at(&f.text, &done, k).map(|_| None))
        });
        match found {
            Some(Some(range)) => {
                h.range = range;
                h.moved = false;
                continue;
            }
            Some(None) => {
                applied.push(h.n);
                continue;
            }
            None => {}
        }
        let first = f.text[..h.range.start.min(f.text.len())]
            .matches('\n')
            .count()
            + 1;
        return Err(format!(
            "the text it replaces was edited (near line {first}) and its original text no \
             longer occurs exactly once"
        ));
    }
    f.hunks.retain(|h| !applied.contains(&h.n));
    let ranges: Vec<Replacement> = f
        .hunks
        .iter()
        .map(|h| Replacement::new(h.range.clone(), h.new.clone()))
        .collect();
    TextEdit::new(ranges).map_err(|e| format!("its re-located parts now overlap ({e})"))?;
    f.hunks.sort_by_key(|h| h.range.start);
    Ok(())
}

/// The most context lines hunk `h` has on one side (at least 1).
fn context_depth(h: &TrackedHunk) -> usize {
    let before = h.before.split_inclusive('\n').count();
    let after = h.after.split_inclusive('\n').count();
    before.max(after).max(1)
}

/// Where hunk `h` is in `text` with (at most) `k` of its context lines on each side:
/// `before + old + after` located by the edit engine, accepted only as a unique exact match.
/// Callers try fewer context lines after more, down to one on each side that has any. Never
/// with none: when the user edited the very lines a hunk replaces, the same lines elsewhere (a
/// twin function, say) would match without their context, and accepting would then change a
/// place the model never meant.
fn locate_at(text: &str, h: &TrackedHunk, k: usize) -> Option<Range<usize>> {
    let before: Vec<&str> = h.before.split_inclusive('\n').collect();
    let after: Vec<&str> = h.after.split_inclusive('\n').collect();
    let b = before[before.len().saturating_sub(k)..].concat();
    let a = after[..k.min(after.len())].concat();
    locate_with(text, h, &b, &a)
}

fn locate_with(text: &str, h: &TrackedHunk, before: &str, after: &str) -> Option<Range<usize>> {
    let old = format!("{before}{}{after}", h.old);
    if old.trim().is_empty() {
        return None;
    }
    let new = format!("{before}{}{after}", h.new);
    let located = edit::locate_replace(text, &old, &new, ReplaceOptions::default()).ok()?;
    if located.matched_by.0 != [Pass::Exact] || located.occurrences != 1 {
        return None;
    }
    let span = located.spans.first()?;
    let start = span.start + before.len();
    let end = start + h.old.len();
    (text.get(start..end) == Some(h.old.as_str()) && text.get(span.start..start) == Some(before))
        .then_some(start..end)
}

/// The caller's text differs from the tracked one: re-locate every hunk in it.
fn resync(f: &mut TrackedFile, text: &str) -> Result<(), String> {
    f.text = text.to_owned();
    for h in &mut f.hunks {
        h.moved = true;
    }
    relocate(f)
}

fn hunk_view(id: ProposalId, f: &TrackedFile, h: &TrackedHunk) -> Hunk {
    let first_line = f.text[..h.range.start.min(f.text.len())]
        .matches('\n')
        .count()
        + 1;
    let before: Vec<&str> = h.before.split_inclusive('\n').collect();
    let after: Vec<&str> = h.after.split_inclusive('\n').collect();
    let old_count = before.len() + h.old.split_inclusive('\n').count() + after.len();
    let new_count = before.len() + h.new.split_inclusive('\n').count() + after.len();
    let start = first_line.saturating_sub(before.len()).max(1);
    let mut diff = format!("@@ -{},{} +{},{} @@\n", start, old_count, start, new_count);
    let mut push = |prefix: char, line: &str| {
        diff.push(prefix);
        diff.push_str(line.trim_end_matches(['\n', '\r']));
        diff.push('\n');
        if !line.ends_with('\n') {
            diff.push_str("\\ No newline at end of file\n");
        }
    };
    for l in &before {
        push(' ', l);
    }
    // Inside the hunk, the lines it keeps are context too: the hunk reads as the text it
    // makes, each removed line before the line that takes its place.
    let inner = TextDiff::from_lines(h.old.as_str(), h.new.as_str());
    for change in inner.iter_all_changes() {
        let prefix = match change.tag() {
            similar::ChangeTag::Equal => ' ',
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
        };
        push(prefix, change.value());
    }
    for l in &after {
        push(' ', l);
    }
    Hunk {
        id,
        n: h.n,
        path: f.path.clone(),
        range: h.range.clone(),
        diff,
    }
}

impl fmt::Display for Proposal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "proposal {} by {} ({} attempt{}, matched by {})",
            self.id,
            self.model,
            self.attempts,
            if self.attempts == 1 { "" } else { "s" },
            self.matched_by
        )?;
        f.write_str(&self.diff)
    }
}

#[cfg(test)]
mod tests;
