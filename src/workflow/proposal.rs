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

/// The minimal line-level edit from `before` to `after`: one replacement per changed run of
/// lines (whole lines, so hunks read well in diffs and code lenses).
pub fn edit_between(before: &str, after: &str) -> TextEdit {
    if before == after {
        return TextEdit::default();
    }
    let old_starts = line_starts(before);
    let new_starts = line_starts(after);
    let diff = TextDiff::from_lines(before, after);
    let mut out: Vec<Replacement> = Vec::new();
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
        let range = old_starts[old.start]..old_starts[old.end];
        let text = &after[new_starts[new.start]..new_starts[new.end]];
        match out.last_mut() {
            Some(last) if last.range.end == range.start => {
                last.range.end = range.end;
                last.text.push_str(text);
            }
            _ => out.push(Replacement::new(range, text)),
        }
    }
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
    /// Range in `TrackedFile::text`; `text[range] == old` while the proposal is not stale.
    range: Range<usize>,
    old: String,
    new: String,
    /// Whole lines before and after the hunk in the original, to re-locate it.
    before: String,
    after: String,
    moved: bool,
}

#[derive(Debug, Clone)]
struct TrackedFile {
    path: PathBuf,
    /// The document's text as the store believes it is now.
    text: String,
    hunks: Vec<TrackedHunk>,
}

#[derive(Debug, Clone)]
struct Tracked {
    proposal: Proposal,
    files: Vec<TrackedFile>,
    stale: Option<String>,
}

/// Pending proposals, following document changes.
#[derive(Debug, Clone, Default)]
pub struct Proposals {
    pending: BTreeMap<ProposalId, Tracked>,
}

impl Proposals {
    pub fn new() -> Proposals {
        Proposals::default()
    }

    /// Adds a pending proposal and returns its id.
    pub fn add(&mut self, proposal: Proposal) -> ProposalId {
        let id = proposal.id;
        let files = proposal.files.iter().map(track_file).collect();
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
            .flat_map(|f| f.hunks.iter().map(move |h| hunk_view(id, f, h)))
            .collect()
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
            for f in t.files.iter_mut().filter(|f| f.path == path) {
                if let Err(reason) = map_file(f, changes) {
                    t.stale = Some(reason);
                    newly_stale.push(*id);
                    break;
                }
            }
        }
        newly_stale
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
            for f in t
                .files
                .iter_mut()
                .filter(|f| f.path == path && f.text != current)
            {
                if let Err(reason) = resync(f, current) {
                    t.stale = Some(reason);
                    newly_stale.push(*id);
                    break;
                }
            }
        }
        newly_stale
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
        let t = self
            .pending
            .get_mut(&id)
            .ok_or(ApplyError::Unknown { id })?;
        if let Some(reason) = &t.stale {
            return Err(ApplyError::Stale {
                id,
                reason: reason.clone(),
            });
        }
        let mut out = Vec::new();
        for (f, pf) in t.files.iter_mut().zip(&t.proposal.files) {
            let now = current(&f.path);
            let result = match (&now, pf.created) {
                (None, true) => Ok(FileApply {
                    path: f.path.clone(),
                    version: None,
                    create: true,
                    replacements: vec![Replacement::insert(0, pf.new_text.clone())],
                }),
                (Some(_), true) => Err(format!(
                    "{} was to be created but exists now",
                    pf.display_path
                )),
                (None, false) => Err(format!("{} no longer exists", pf.display_path)),
                (Some((text, version)), false) => if *text != f.text {
                    resync(f, text)
                } else {
                    Ok(())
                }
                .map(|()| FileApply {
                    path: f.path.clone(),
                    version: *version,
                    create: false,
                    replacements: f
                        .hunks
                        .iter()
                        .map(|h| Replacement::new(h.range.clone(), h.new.clone()))
                        .collect(),
                }),
            };
            match result {
                Ok(apply) => out.push(apply),
                Err(reason) => {
                    t.stale = Some(reason.clone());
                    return Err(ApplyError::Stale { id, reason });
                }
            }
        }
        Ok(out)
    }
}

fn track_file(f: &ProposalFile) -> TrackedFile {
    let starts = line_starts(&f.original);
    let line_of = |offset: usize| starts.partition_point(|&s| s <= offset).saturating_sub(1);
    let hunks = f
        .edit
        .replacements()
        .iter()
        .map(|r| {
            let first = line_of(r.range.start);
            let ctx_start = starts[first.saturating_sub(CONTEXT_LINES)];
            // The line after the hunk's last byte (the hunk covers whole lines).
            let end_line = line_of(r.range.end);
            let ctx_end = starts[(end_line + CONTEXT_LINES).min(starts.len() - 1)];
            TrackedHunk {
                range: r.range.clone(),
                old: f.original[r.range.clone()].to_owned(),
                new: r.text.clone(),
                before: f.original[ctx_start.min(r.range.start)..r.range.start].to_owned(),
                after: f.original[r.range.end..ctx_end.max(r.range.end)].to_owned(),
                moved: false,
            }
        })
        .collect();
    TrackedFile {
        path: f.path.clone(),
        text: f.original.clone(),
        hunks,
    }
}

/// Applies `changes` to the tracked text and moves the hunks; a change that touches a hunk makes
/// it re-located afterwards.
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
    }
    if f.hunks.iter().any(|h| h.moved) {
        relocate(f)?;
    }
    Ok(())
}

fn shift(r: &Range<usize>, delta: isize) -> Range<usize> {
    let s = (r.start as isize + delta).max(0) as usize;
    let e = (r.end as isize + delta).max(0) as usize;
    s..e
}

/// Re-locates the moved hunks in the tracked text: the hunk's original text with its context
/// lines must match exactly one place.
fn relocate(f: &mut TrackedFile) -> Result<(), String> {
    for h in f.hunks.iter_mut().filter(|h| h.moved) {
        h.range = locate_hunk(&f.text, h).ok_or_else(|| {
            let first = f.text[..h.range.start.min(f.text.len())]
                .matches('\n')
                .count()
                + 1;
            format!(
                "the text it replaces was edited (near line {first}) and its original text no \
                 longer occurs exactly once"
            )
        })?;
        h.moved = false;
    }
    let ranges: Vec<Replacement> = f
        .hunks
        .iter()
        .map(|h| Replacement::new(h.range.clone(), h.new.clone()))
        .collect();
    TextEdit::new(ranges).map_err(|e| format!("its re-located parts now overlap ({e})"))?;
    f.hunks.sort_by_key(|h| h.range.start);
    Ok(())
}

/// Where hunk `h` is in `text`: `before + old + after` located by the edit engine, accepted only
/// as a unique exact match; then with fewer context lines, down to one on each side that has
/// any. Never with none: when the user edited the very lines a hunk replaces, the same lines
/// elsewhere (a twin function, say) would match without their context, and accepting would
/// then change a place the model never meant.
fn locate_hunk(text: &str, h: &TrackedHunk) -> Option<Range<usize>> {
    let before: Vec<&str> = h.before.split_inclusive('\n').collect();
    let after: Vec<&str> = h.after.split_inclusive('\n').collect();
    let most = before.len().max(after.len()).max(1);
    (1..=most).rev().find_map(|k| {
        let b = before[before.len().saturating_sub(k)..].concat();
        let a = after[..k.min(after.len())].concat();
        locate_with(text, h, &b, &a)
    })
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
    let old: Vec<&str> = h.old.split_inclusive('\n').collect();
    let new: Vec<&str> = h.new.split_inclusive('\n').collect();
    let start = first_line.saturating_sub(before.len()).max(1);
    let old_count = before.len() + old.len() + after.len();
    let new_count = before.len() + new.len() + after.len();
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
    for l in &old {
        push('-', l);
    }
    for l in &new {
        push('+', l);
    }
    for l in &after {
        push(' ', l);
    }
    Hunk {
        id,
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
