//! Reviewing proposals, as every edge does it: accepting and rejecting one (whole, or one
//! hunk), following the documents it is in, bringing stored ones back, and the records the
//! library keeps of them. The decisions are here; an edge fetches the texts they need (open
//! buffers, files on disk), converts the replacements into its protocol's edit, and writes the
//! [`RecordChange`]s it is handed to the library.
//!
//! Accepting takes one of two roads ([`AcceptBy`]): the server asks the editor to apply the
//! edit and reports its answer ([`accept_answered`]), or the editor applies an edit it was
//! handed by itself (a code action's `edit`), and the document change that arrives does the
//! rest ([`document_changed`]). Either way the stored record follows at once.
//!
//! Pure logic: no I/O, no protocol types; byte offsets and texts in and out.

use std::path::{Path, PathBuf};

use crate::document::change::{Replacement, TextEdit};
use crate::store::proposals::ProposalRecord;
use crate::workflow::Proposal;
pub use crate::workflow::proposal::{
    ApplyError, Current, FileApply, Hunk, ProposalId, Proposals, new_record,
};

/// A change to a proposal's stored record.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordChange {
    /// Hunks are left: store this record instead.
    Update(ProposalRecord),
    /// Nothing is left to review: forget it.
    Delete(ProposalId),
}

/// What a review step changed: the files whose proposals look different now (diagnostics, code
/// lenses) and the stored records to write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reviewed {
    pub paths: Vec<PathBuf>,
    pub records: Vec<RecordChange>,
}

/// What following a document change did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Followed {
    /// Proposals that went stale with the change, and why.
    pub stale: Vec<(ProposalId, String)>,
    /// Records behind the change: hunks it applied, proposals it finished.
    pub records: Vec<RecordChange>,
}

/// How an accepted edit reaches the editor's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceptBy {
    /// The server asks the editor to apply it (`workspace/applyEdit`) and reports the answer
    /// with [`accept_answered`]; the hunks are hidden meanwhile.
    Request,
    /// The editor applies it by itself when the user picks it (a code action's `edit`); the
    /// hunks stay pending until the document change that applies them
    /// ([`document_changed`]).
    ClientEdit,
}

/// Accepts proposal `id`, or only hunk `hunk`: the replacements to make, file by file, against
/// each file's text now (`current`; `None`: the file does not exist). A proposal that went
/// stale, or a hunk that is gone, is refused.
pub fn accept(
    proposals: &mut Proposals,
    id: ProposalId,
    hunk: Option<usize>,
    current: impl Fn(&Path) -> Current,
    by: AcceptBy,
) -> Result<Vec<FileApply>, ApplyError> {
    match by {
        AcceptBy::Request => proposals.begin_accept(id, hunk, current),
        AcceptBy::ClientEdit => proposals.accept_replacements(id, hunk, current),
    }
}

/// The editor answered an [`AcceptBy::Request`] accept: `refused` with its reason, or applied.
/// A refused accept leaves the hunks pending as they were.
pub fn accept_answered(
    proposals: &mut Proposals,
    id: ProposalId,
    refused: Option<String>,
) -> Result<Reviewed, String> {
    if let Some(reason) = refused {
        proposals.abort_accept(id);
        return Err(format!(
            "the editor did not apply proposal {id}: {reason}; the proposal is still pending"
        ));
    }
    let paths = proposals.paths(id);
    let done = proposals.accepted(id);
    let mut records = vec![record_change(proposals, id, done)];
    records.extend(pending_changes(proposals));
    Ok(Reviewed { paths, records })
}

/// The edit for an accept could not be built (a path the edge cannot name): the hunks an
/// [`AcceptBy::Request`] accept hid are pending again.
pub fn accept_abandoned(proposals: &mut Proposals, id: ProposalId) {
    proposals.abort_accept(id);
}

/// Rejects proposal `id` — all of it, or only hunk `hunk`.
pub fn reject(
    proposals: &mut Proposals,
    id: ProposalId,
    hunk: Option<usize>,
) -> Result<Reviewed, ApplyError> {
    let (paths, done) = proposals.reject(id, hunk)?;
    Ok(Reviewed {
        paths,
        records: vec![record_change(proposals, id, done)],
    })
}

/// Follows the document at `path` through `changes` (each against the text just before it):
/// the proposals there re-base, re-locate or go stale; hunks the change applied are done.
pub fn document_changed(
    proposals: &mut Proposals,
    path: &Path,
    changes: &[Replacement],
) -> Followed {
    let stale = proposals.on_change(path, changes);
    followed(proposals, stale)
}

/// Follows the document at `path` to `text`, when its changes are not known (the editor opened
/// it with text that is not the one on disk).
pub fn document_synced(proposals: &mut Proposals, path: &Path, text: &str) -> Followed {
    let stale = proposals.sync(path, text);
    followed(proposals, stale)
}

/// Whether stored `record` belongs to this edge: it touches `only`, or else a file under one of
/// `roots`, and is not among the proposals already `known`.
pub fn wanted(
    record: &ProposalRecord,
    roots: &[PathBuf],
    only: Option<&Path>,
    known: &[ProposalId],
) -> bool {
    !known.contains(&record.id)
        && record.files.iter().any(|f| {
            let path = Path::new(&f.path);
            match only {
                Some(only) => path == only,
                None => roots.iter().any(|r| path.starts_with(r)),
            }
        })
}

/// Brings back stored `records`, re-located in the files as they are now (`current`). Returns
/// the paths that got proposals and the records to write (those found fully applied go).
pub fn restore(
    proposals: &mut Proposals,
    records: &[ProposalRecord],
    current: impl Fn(&Path) -> Current,
) -> Reviewed {
    let mut paths = Vec::new();
    for record in records {
        let id = proposals.restore(record, &current);
        match proposals.stale(id) {
            Some(reason) => tracing::info!(id, "restored a stale proposal: {reason}"),
            None => tracing::info!(id, "restored a pending proposal"),
        }
        paths.extend(record.files.iter().map(|f| PathBuf::from(&f.path)));
    }
    paths.sort();
    paths.dedup();
    Reviewed {
        paths,
        records: pending_changes(proposals),
    }
}

/// A whole proposal accepted where no store follows the files (an ACP turn): each file as it
/// is to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedFile {
    pub path: PathBuf,
    pub display_path: String,
    /// Its text now (`None`: it does not exist and the accept creates it).
    pub before: Option<String>,
    pub after: String,
}

/// Accepts all of `proposal` against its files as they are now (`current`), the way an
/// editor's accept does: a file changed elsewhere since the run read it re-locates the hunks,
/// and one whose changed text no longer holds them exactly once is refused (nothing to write).
pub fn accept_whole(
    proposal: &Proposal,
    current: impl Fn(&Path) -> Option<String>,
) -> Result<Vec<AcceptedFile>, ApplyError> {
    let mut store = Proposals::new();
    let id = store.add(proposal.clone());
    let now = |path: &Path| current(path).map(|text| (text, Some(0)));
    let files = accept(&mut store, id, None, now, AcceptBy::ClientEdit)?;
    let mut out = Vec::new();
    for (apply, pf) in files.into_iter().zip(&proposal.files) {
        let before = current(&apply.path);
        let after = match (&before, apply.create) {
            (Some(text), false) => TextEdit::new(apply.replacements)
                .and_then(|e| e.apply(text))
                .map_err(|e| ApplyError::Stale {
                    id,
                    reason: format!("{}: {e}", pf.display_path),
                })?,
            _ => pf.new_text.clone(),
        };
        out.push(AcceptedFile {
            path: apply.path,
            display_path: pf.display_path.clone(),
            before,
            after,
        });
    }
    Ok(out)
}

/// Writes accepted files where nobody else holds them (an ACP client without
/// `fs/write_text_file`), through the one writer ([`super::write_files`]).
pub fn write_accepted(
    files: &[AcceptedFile],
) -> Result<(), crate::tools::transaction::TransactionError> {
    super::write_files(files.iter().map(|f| super::FileWrite {
        path: &f.path,
        before: f.before.as_deref(),
        after: f.after.clone(),
    }))
}

fn record_change(proposals: &Proposals, id: ProposalId, done: bool) -> RecordChange {
    match (done, proposals.record(id)) {
        (false, Some(record)) => RecordChange::Update(record),
        _ => RecordChange::Delete(id),
    }
}

/// The records document changes left behind: finished proposals go, shrunk ones are updated.
fn pending_changes(proposals: &mut Proposals) -> Vec<RecordChange> {
    let mut out: Vec<RecordChange> = proposals
        .take_finished()
        .into_iter()
        .map(RecordChange::Delete)
        .collect();
    for id in proposals.take_shrunk() {
        if let Some(record) = proposals.record(id) {
            out.push(RecordChange::Update(record));
        }
    }
    out
}

fn followed(proposals: &mut Proposals, stale: Vec<ProposalId>) -> Followed {
    let stale = stale
        .into_iter()
        .map(|id| (id, proposals.stale(id).unwrap_or_default().to_owned()))
        .collect();
    Followed {
        stale,
        records: pending_changes(proposals),
    }
}
