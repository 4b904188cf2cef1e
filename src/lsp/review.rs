//! Reviewing proposals: accept and reject (whole, or one hunk), the diff, the list, the
//! proposed text of a file, and keeping pending proposals in the store so they survive a
//! restart.
//!
//! The decisions are `workflow::session::review`'s (which replacements apply, how the other
//! hunks re-base, what went stale, which stored records change); this module fetches the texts
//! they need, converts the replacements into a `WorkspaceEdit`, sends it, writes the records,
//! and tells the client what changed — diagnostics and code lenses first, then the response
//! (`Backend::flush`), because some clients stop reading after a response.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::request::ApplyWorkspaceEdit;
use tower_lsp_server::ls_types::*;

use super::from_proto;
use super::proposals::{self, EditShape, View};
use super::server::{Backend, State, blocking, request_failed, show_file};
use crate::document::Document;
use crate::store::Library;
use crate::workflow::session::Proposal;
use crate::workflow::session::edit;
use crate::workflow::session::review::{
    self, AcceptBy, ApplyError, ProposalId, RecordChange, Reviewed,
};

/// How long a proposal command waits for the stored proposals to come back at start-up
/// before it answers from what is there (a store another process holds locked).
const RESTORE_WAIT: Duration = Duration::from_secs(10);

/// Where the restore of stored proposals is: a proposal command that arrives while it runs
/// waits for it, so the first `patchwise.proposal.list` after a restart lists them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Restore {
    /// `initialize` has not been answered: no command can arrive yet.
    NotStarted,
    /// Between `initialize` and the end of the restore `initialized` starts.
    Running,
    Done,
}

/// The order of the proposal store's reads and writes across a server's life. Writes run
/// one after another in the order they were asked (a delete asked after an update is never
/// overtaken by it) while the handler that asked goes on; shutdown waits for them, so a
/// restarted server reads what the last one wrote. Proposal commands wait for the restore.
pub(super) struct Keeping {
    /// The last write asked for; each write waits for the one before it.
    last_write: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    restore: tokio::sync::watch::Sender<Restore>,
}

impl Default for Keeping {
    fn default() -> Self {
        Keeping {
            last_write: std::sync::Mutex::new(None),
            restore: tokio::sync::watch::Sender::new(Restore::NotStarted),
        }
    }
}

impl Keeping {
    /// Runs `write` on the blocking pool after every write asked before it.
    fn write(&self, write: impl FnOnce() + Send + 'static) {
        let mut last = self
            .last_write
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let previous = last.take();
        *last = Some(tokio::spawn(async move {
            if let Some(previous) = previous {
                let _ = previous.await;
            }
            if let Err(err) = tokio::task::spawn_blocking(write).await {
                tracing::warn!("a write of the stored proposals failed: {err}");
            }
        }));
    }

    /// Waits until every write asked so far is done: a marker goes through the chain, so a
    /// write asked while this waits still runs after them.
    pub(super) async fn flush(&self) {
        let (done, finished) = tokio::sync::oneshot::channel();
        self.write(move || {
            let _ = done.send(());
        });
        let _ = finished.await;
    }

    /// `initialize` answered: a restore follows in `initialized`.
    pub(super) fn restore_coming(&self) {
        self.restore.send_if_modified(|r| {
            let coming = *r == Restore::NotStarted;
            if coming {
                *r = Restore::Running;
            }
            coming
        });
    }

    /// The restore `initialized` starts: it is over when the value returned is dropped, also
    /// when the restore panics (a panicking handler leaves the server running), so commands
    /// never wait for a restore that will not end.
    pub(super) fn restoring(&self) -> RestoreOver<'_> {
        RestoreOver(self)
    }

    /// Waits for the restore, if one is running, at most `RESTORE_WAIT`.
    pub(super) async fn restored(&self) {
        let mut watch = self.restore.subscribe();
        let done = watch.wait_for(|r| *r != Restore::Running);
        if tokio::time::timeout(RESTORE_WAIT, done).await.is_err() {
            tracing::warn!(
                "the stored proposals did not come back within {} s; answering without them",
                RESTORE_WAIT.as_secs()
            );
        }
    }
}

/// Marks the restore over when dropped ([`Keeping::restoring`]).
pub(super) struct RestoreOver<'a>(&'a Keeping);

impl Drop for RestoreOver<'_> {
    fn drop(&mut self) {
        self.0.restore.send_replace(Restore::Done);
    }
}

#[derive(Debug, Deserialize)]
pub struct IdArgs {
    pub id: ProposalId,
    /// One hunk (its number) instead of the whole proposal.
    pub hunk: Option<usize>,
    /// `patchwise.proposal.diff` only: also show the diff in the editor (default true).
    pub show: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct ContentParams {
    pub id: ProposalId,
    pub uri: Uri,
}

/// The text and version of `path` among the open documents.
fn open_text(documents: &HashMap<Uri, Document>, path: &Path) -> Option<(String, i32)> {
    documents
        .iter()
        .find(|(uri, _)| from_proto::file_path(uri).is_some_and(|p| p == path))
        .map(|(_, d)| (d.text(), d.version))
}

fn apply_error(err: ApplyError) -> tower_lsp_server::jsonrpc::Error {
    request_failed(err.to_string())
}

impl State {
    /// The workspace edit that accepts proposal `id` (or only hunk `hunk`) and its label;
    /// `on_disk` holds the texts of the proposal's files that are not open. With `mark` the
    /// hunks are hidden as being accepted until the editor's change arrives (the command path,
    /// `Proposals::begin_accept`); without, the edit is only computed — a code action carries
    /// it and the client applies it itself.
    pub(super) fn accept_edit(
        &mut self,
        id: ProposalId,
        hunk: Option<usize>,
        on_disk: &HashMap<PathBuf, Option<String>>,
        mark: bool,
    ) -> Result<(WorkspaceEdit, String)> {
        let mut docs: HashMap<PathBuf, (Uri, Document)> = HashMap::new();
        let proposal = self
            .proposals
            .get(id)
            .cloned()
            .ok_or_else(|| apply_error(ApplyError::Unknown { id }))?;
        for file in &proposal.files {
            if let Some((uri, doc)) = self.document_for_path(&file.path) {
                docs.insert(file.path.clone(), (uri.clone(), doc.clone()));
            } else if let Some(Some(text)) = on_disk.get(&file.path) {
                let uri = Uri::from_file_path(&file.path).ok_or_else(|| {
                    request_failed(format!("{} is not a valid file path", file.path.display()))
                })?;
                docs.insert(file.path.clone(), (uri, Document::new(text, 0, "")));
            }
        }
        let current = |path: &Path| {
            docs.get(path).map(|(_, doc)| {
                let open = !on_disk.contains_key(path);
                (doc.text(), open.then_some(doc.version))
            })
        };
        let by = if mark {
            AcceptBy::Request
        } else {
            AcceptBy::ClientEdit
        };
        let files =
            review::accept(&mut self.proposals, id, hunk, current, by).map_err(apply_error)?;
        // A created file needs `documentChanges`; a client that can create files takes them.
        let creates = self.client.create_files && files.iter().any(|f| f.create);
        let shape = EditShape {
            document_changes: self.client.document_changes || creates,
            change_annotations: self.client.change_annotations,
            encoding: self.encoding,
        };
        let edit = match proposals::workspace_edit(&proposal, &files, &docs, shape) {
            Ok(edit) => edit,
            Err(err) => {
                if mark {
                    review::accept_abandoned(&mut self.proposals, id);
                }
                return Err(request_failed(err));
            }
        };
        let what = match hunk {
            Some(n) => format!(" (hunk {n})"),
            None => String::new(),
        };
        let label = format!(
            "patchwise: {}{what}",
            proposal.instruction.lines().next().unwrap_or("")
        );
        Ok((edit, label))
    }

    /// How this client wants proposals rendered.
    pub(super) fn view(&self) -> View {
        View {
            encoding: self.encoding,
            code_lens: self.client.code_lens,
            plaintext: self.client.plaintext_hover,
        }
    }
}

impl Backend {
    /// Stores a finished proposal (in memory and, when it can, in the database, which assigns
    /// its id) and re-bases it onto the documents as they are now.
    pub(super) async fn add_proposal(&self, mut proposal: Proposal) -> ProposalId {
        let store = self.store(true).await;
        if let Some(store) = store {
            let record = review::new_record(&proposal);
            match blocking(move || store.insert_proposal(&record)).await {
                Ok(id) => proposal.id = id,
                Err(err) => tracing::warn!("the proposal is not kept across restarts: {err}"),
            }
        }
        let mut guard = self.state();
        let state = &mut *guard;
        let documents = &state.documents;
        let current = |path: &Path| open_text(documents, path).map(|(text, _)| text);
        let (id, _) = edit::adopt(&mut state.proposals, proposal, current);
        state
            .proposals
            .set_created_at(id, crate::store::now_rfc3339());
        id
    }

    /// The proposal database: the open one, else opened now — created only when `create`
    /// (a server that never makes a proposal leaves no file behind).
    pub(super) async fn store(&self, create: bool) -> Option<Arc<Library>> {
        let config = {
            let state = self.state();
            if let Some(store) = &state.store {
                return Some(store.clone());
            }
            (*state.config).clone()
        };
        let opened = tokio::task::spawn_blocking(move || {
            // The same database as the research library (one SQLite file per user).
            let path = crate::research::config::ResearchConfig::from_config(&config)
                .0
                .library;
            if !create && !path.exists() {
                return Ok(None);
            }
            Library::open(&path).map(Some)
        })
        .await
        .ok()?;
        match opened {
            Ok(Some(library)) => {
                let library = Arc::new(library);
                self.state().store = Some(library.clone());
                Some(library)
            }
            Ok(None) => None,
            Err(err) => {
                tracing::warn!("proposals are not kept across restarts: {err}");
                None
            }
        }
    }

    /// Writes the review state of proposals to the database, after the writes asked before
    /// (`Keeping::write`): the handler goes on at once, and shutdown waits for the writes.
    pub(super) fn persist(&self, changes: Vec<RecordChange>) {
        let Some(store) = self.state().store.clone() else {
            return;
        };
        if changes.is_empty() {
            return;
        }
        self.keeping.write(move || {
            for change in changes {
                let (id, done) = match change {
                    RecordChange::Update(record) => (record.id, store.update_proposal(&record)),
                    RecordChange::Delete(id) => (id, store.delete_proposal(id)),
                };
                if let Err(err) = done {
                    tracing::warn!(id, "cannot update the stored proposal: {err}");
                }
            }
        });
    }

    /// Brings back the stored proposals of files under the workspace roots (or of `only`),
    /// re-located in the files as they are now. Returns the paths that got proposals.
    pub(super) async fn restore_proposals(&self, only: Option<PathBuf>) -> Vec<PathBuf> {
        // A write asked before (a reject, a document's changes) lands before the store is read,
        // or a proposal just rejected would come back.
        self.keeping.flush().await;
        let Some(store) = self.store(false).await else {
            return Vec::new();
        };
        let (roots, known): (Vec<PathBuf>, Vec<ProposalId>) = {
            let state = self.state();
            (
                state
                    .workspace_roots
                    .iter()
                    .filter_map(from_proto::file_path)
                    .collect(),
                state.proposals.list().iter().map(|p| p.id).collect(),
            )
        };
        let wanted = move |record: &crate::store::proposals::ProposalRecord| {
            review::wanted(record, &roots, only.as_deref(), &known)
        };
        let loaded = blocking(move || {
            let records = store.pending_proposals()?;
            let records: Vec<_> = records.into_iter().filter(|r| wanted(r)).collect();
            // The files' texts on disk; open documents replace them below.
            let texts: HashMap<PathBuf, Option<String>> = records
                .iter()
                .flat_map(|r| &r.files)
                .map(|f| {
                    let path = PathBuf::from(&f.path);
                    let text = crate::workspace::read_text(&path).ok();
                    (path, text)
                })
                .collect();
            Ok::<_, crate::store::StoreError>((records, texts))
        })
        .await;
        let (records, texts) = match loaded {
            Ok(loaded) => loaded,
            Err(err) => {
                tracing::warn!("cannot read the stored proposals: {err}");
                return Vec::new();
            }
        };
        let reviewed = {
            let mut guard = self.state();
            let state = &mut *guard;
            let documents = &state.documents;
            let current = |path: &Path| match open_text(documents, path) {
                Some((text, version)) => Some((text, Some(version))),
                None => texts.get(path).cloned().flatten().map(|t| (t, None)),
            };
            review::restore(&mut state.proposals, &records, current)
        };
        self.persist(reviewed.records);
        reviewed.paths
    }

    /// Accepts proposal `id`, or one hunk of it: one `workspace/applyEdit`; the other hunks
    /// re-base on the change it makes.
    pub(super) async fn accept(&self, id: ProposalId, hunk: Option<usize>) -> Result<Value> {
        let on_disk = self.unopened_texts(id).await?;
        let (edit, label) = self.state().accept_edit(id, hunk, &on_disk, true)?;
        let response = self
            .client
            .send_request::<ApplyWorkspaceEdit>(ApplyWorkspaceEditParams {
                label: Some(label),
                edit,
            })
            .await;
        let refused = match response {
            Ok(r) if r.applied => None,
            Ok(r) => Some(
                r.failure_reason
                    .unwrap_or_else(|| "no reason given".to_owned()),
            ),
            Err(err) => Some(err.message.to_string()),
        };
        let answered = review::accept_answered(&mut self.state().proposals, id, refused);
        self.reviewed(answered.map_err(request_failed)?).await;
        Ok(json!({ "applied": true }))
    }

    /// The edit of an "Accept" code action, filled in by `codeAction/resolve`: the client
    /// applies it itself, so it asks nothing (a `workspace/applyEdit` after a command makes
    /// eglot ask "Server wants to edit … Proceed?"). The hunks stay pending until the change
    /// that applies them arrives.
    pub(super) async fn resolve_accept(
        &self,
        id: ProposalId,
        hunk: Option<usize>,
    ) -> Result<WorkspaceEdit> {
        let on_disk = self.unopened_texts(id).await?;
        let (edit, _) = self.state().accept_edit(id, hunk, &on_disk, false)?;
        Ok(edit)
    }

    /// The texts on disk of the files of proposal `id` that are not open (`None`: the file does
    /// not exist), read outside the lock.
    async fn unopened_texts(&self, id: ProposalId) -> Result<HashMap<PathBuf, Option<String>>> {
        let paths: Vec<PathBuf> = {
            let state = self.state();
            let proposal = state
                .proposals
                .get(id)
                .ok_or_else(|| apply_error(ApplyError::Unknown { id }))?;
            proposal
                .files
                .iter()
                .filter(|f| state.document_for_path(&f.path).is_none())
                .map(|f| f.path.clone())
                .collect()
        };
        let mut on_disk: HashMap<PathBuf, Option<String>> = HashMap::new();
        for path in paths {
            let p = path.clone();
            let text = tokio::task::spawn_blocking(move || crate::workspace::read_text(&p))
                .await
                .ok()
                .and_then(|r| r.ok());
            on_disk.insert(path, text);
        }
        Ok(on_disk)
    }

    pub(super) async fn reject(&self, id: ProposalId, hunk: Option<usize>) -> Result<()> {
        let reviewed =
            review::reject(&mut self.state().proposals, id, hunk).map_err(apply_error)?;
        self.reviewed(reviewed).await;
        Ok(())
    }

    /// Writes what a review step changed and shows it.
    async fn reviewed(&self, reviewed: Reviewed) {
        self.persist(reviewed.records);
        self.proposals_changed(reviewed.paths).await;
        self.flush().await;
    }

    /// The current diff of a proposal; shown in the editor unless `show: false` — as a
    /// `.diff` document when the client can open one, else as a message.
    pub(super) async fn diff(&self, args: IdArgs) -> Result<String> {
        let (diff, show_document, data_dir) = {
            let state = self.state();
            let diff = state
                .proposals
                .current_diff(args.id)
                .ok_or_else(|| apply_error(ApplyError::Unknown { id: args.id }))?;
            (diff, state.client.show_document, state.config.data_dir())
        };
        if !args.show.unwrap_or(true) {
            return Ok(diff);
        }
        let shown = show_document && self.show_diff_file(args.id, &diff, &data_dir).await;
        if !shown {
            self.client
                .show_message(
                    MessageType::INFO,
                    format!("patchwise proposal {}:\n{diff}", args.id),
                )
                .await;
            self.flush().await;
        }
        Ok(diff)
    }

    /// Writes the diff under the data directory and asks the client to open it.
    async fn show_diff_file(&self, id: ProposalId, diff: &str, data_dir: &Path) -> bool {
        let file = data_dir
            .join("proposals")
            .join(format!("proposal-{id}.diff"));
        let text = diff.to_owned();
        let written = blocking(move || {
            std::fs::create_dir_all(file.parent().unwrap_or(Path::new(".")))?;
            std::fs::write(&file, text)?;
            Ok::<_, std::io::Error>(file)
        })
        .await;
        let file = match written {
            Ok(file) => file,
            Err(err) => {
                tracing::warn!("cannot write the diff to show it: {err}");
                return false;
            }
        };
        matches!(show_file(&self.client, &file).await, Ok(true))
    }

    /// `patchwise.proposal.list`: every pending proposal, its files and hunks.
    pub(super) fn list(&self) -> Value {
        let state = self.state();
        let encoding = state.encoding;
        let items: Vec<Value> = state
            .proposals
            .list()
            .into_iter()
            .map(|p| {
                let files: Vec<Value> = p
                    .files
                    .iter()
                    .map(|f| {
                        let doc = state
                            .document_for_path(&f.path)
                            .map(|(_, d)| d.clone())
                            .or_else(|| {
                                state
                                    .proposals
                                    .tracked_text(&f.path)
                                    .map(|t| Document::new(t, 0, ""))
                            })
                            .unwrap_or_else(|| Document::new("", 0, ""));
                        let hunks: Vec<Value> = state
                            .proposals
                            .hunks(p.id, &f.path)
                            .iter()
                            .map(|h| {
                                json!({
                                    "hunk": h.n,
                                    "range": proposals::range(&doc, &h.range, encoding),
                                })
                            })
                            .collect();
                        json!({
                            "uri": Uri::from_file_path(&f.path).map(|u| u.as_str().to_owned()),
                            "path": f.display_path,
                            "created": f.created,
                            "hunks": hunks,
                        })
                    })
                    .collect();
                json!({
                    "id": p.id,
                    "instruction": p.instruction,
                    "model": p.model,
                    "attempts": p.attempts,
                    "matchedBy": p.matched_by,
                    "createdAt": state.proposals.created_at(p.id),
                    "stale": state.proposals.stale(p.id),
                    "files": files,
                })
            })
            .collect();
        Value::Array(items)
    }

    /// `patchwise/proposalContent {id, uri}`: the proposed full text of one file.
    pub(super) async fn proposal_content(&self, params: ContentParams) -> Result<String> {
        let path = from_proto::file_path(&params.uri)
            .ok_or_else(|| request_failed(format!("{} is not a file: URI", params.uri.as_str())))?;
        self.keeping.restored().await;
        let state = self.state();
        if state.proposals.get(params.id).is_none() {
            return Err(apply_error(ApplyError::Unknown { id: params.id }));
        }
        if let Some(reason) = state.proposals.stale(params.id) {
            return Err(apply_error(ApplyError::Stale {
                id: params.id,
                reason: reason.to_owned(),
            }));
        }
        state
            .proposals
            .proposed_text(params.id, &path)
            .ok_or_else(|| {
                apply_error(ApplyError::NotInProposal {
                    id: params.id,
                    path,
                })
            })
    }

    /// Re-publishes diagnostics for these files and asks the client to refresh code lenses.
    pub(super) async fn proposals_changed(&self, paths: Vec<PathBuf>) {
        let (batches, refresh) = {
            let state = self.state();
            let view = state.view();
            let batches: Vec<(Uri, Vec<Diagnostic>, i32)> = paths
                .iter()
                .filter_map(|path| {
                    let (uri, doc) = state.document_for_path(path)?;
                    let diagnostics = proposals::diagnostics(&state.proposals, path, doc, view);
                    Some((uri.clone(), diagnostics, doc.version))
                })
                .collect();
            (batches, state.client.code_lens_refresh)
        };
        for (uri, diagnostics, version) in batches {
            self.client
                .publish_diagnostics(uri, diagnostics, Some(version))
                .await;
        }
        if refresh && let Err(err) = self.client.code_lens_refresh().await {
            tracing::debug!("code lens refresh failed: {err}");
        }
    }
}
