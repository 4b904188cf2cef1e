//! `workspace/executeCommand`: running an edit, and accepting, rejecting, showing and
//! cancelling what it produces.
//!
//! A run takes a snapshot of the open buffers under the state lock, then works without it; its
//! cancellation token is registered under the run's progress token, so `patchwise.cancel`,
//! `window/workDoneProgress/cancel` and `$/cancelRequest` (which drops this handler's future)
//! all stop it. The proposal that comes back is re-based onto the document as it is *now*
//! before it is shown, so edits the user made during the run are never overwritten.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::request::ApplyWorkspaceEdit;
use tower_lsp_server::ls_types::*;

use super::from_proto;
use super::progress::Reporter;
use super::proposals::{self, EditShape};
use super::server::{Backend, request_failed};
use crate::document::Document;
use crate::tools::{OpenBuffer, Snapshot};
use crate::workflow::{self, EditContext, EditRequest, Models, Proposal, ProposalFile, ProposalId};

static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditArgs {
    pub uri: Uri,
    pub range: Range,
    pub instruction: Option<String>,
    /// Set by the "Apply instruction" code action: the proposal drops the comment line.
    #[serde(default)]
    pub remove_instruction_comment: bool,
}

#[derive(Debug, Deserialize)]
pub struct IdArgs {
    pub id: ProposalId,
    /// `patchwise.proposal.diff` only: also open the diff in the editor.
    #[serde(default)]
    pub show: bool,
}

#[derive(Debug, Default, Deserialize)]
pub struct CancelArgs {
    /// The run's progress token; none cancels every run.
    pub id: Option<Value>,
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::invalid_params(message.into())
}

/// The first argument of a command, parsed.
fn argument<T: for<'de> Deserialize<'de>>(command: &str, arguments: &[Value]) -> Result<T> {
    let value = arguments.first().cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|err| {
        invalid_params(format!(
            "{command}: expected one argument object ({err}); see the README for the command's arguments"
        ))
    })
}

/// Cancels and forgets a run when its handler ends, however it ends.
pub(super) struct RunGuard<'a> {
    backend: &'a Backend,
    run_id: String,
    cancel: CancellationToken,
}

impl<'a> RunGuard<'a> {
    pub(super) fn new(backend: &'a Backend, run_id: String, cancel: CancellationToken) -> Self {
        Self {
            backend,
            run_id,
            cancel,
        }
    }
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.backend.state().runs.remove(&self.run_id);
    }
}

impl Backend {
    pub(super) async fn execute(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let args = &params.arguments;
        let command = params.command.as_str();
        match command {
            "patchwise.edit" | "patchwise.editSelection" => {
                let args: EditArgs = argument(command, args)?;
                self.command_edit(args).await.map(Some)
            }
            "patchwise.proposal.accept" => {
                let args: IdArgs = argument(command, args)?;
                self.accept(args.id).await.map(Some)
            }
            "patchwise.proposal.reject" => {
                let args: IdArgs = argument(command, args)?;
                self.reject(args.id).await.map(|()| Some(Value::Null))
            }
            "patchwise.proposal.diff" => {
                let args: IdArgs = argument(command, args)?;
                self.diff(args).await.map(|d| Some(Value::String(d)))
            }
            "patchwise.research" => {
                let args = argument(command, args)?;
                self.research(args).await.map(Some)
            }
            "patchwise.research.list" => {
                let args = if args.is_empty() {
                    Default::default()
                } else {
                    argument(command, args)?
                };
                self.research_list(args).await.map(Some)
            }
            "patchwise.research.open" => {
                let args = argument(command, args)?;
                self.research_open(args).await.map(Some)
            }
            "patchwise.cancel" => {
                let args: CancelArgs = if args.is_empty() {
                    CancelArgs::default()
                } else {
                    argument(command, args)?
                };
                Ok(Some(json!({ "cancelled": self.cancel_runs(args.id) })))
            }
            other => Err(invalid_params(format!(
                "unknown command {other:?}; patchwise executes {}",
                proposals::COMMANDS.join(", ")
            ))),
        }
    }

    /// Cancels the run with this progress token, or every run. Returns how many were running.
    pub(super) fn cancel_runs(&self, id: Option<Value>) -> usize {
        let state = self.state();
        let wanted = id.map(|v| match v {
            Value::String(s) => s,
            other => other.to_string(),
        });
        let mut count = 0;
        for (run, token) in &state.runs {
            if wanted.as_deref().is_none_or(|w| w == run) {
                token.cancel();
                count += 1;
            }
        }
        count
    }

    async fn command_edit(&self, args: EditArgs) -> Result<Value> {
        let Some(instruction) = args.instruction.clone().filter(|i| !i.trim().is_empty()) else {
            return Err(invalid_params(
                "no instruction: the client supplies it (VS Code and the Neovim plugin ask for it); \
                 call patchwise.edit with {uri, range, instruction}",
            ));
        };
        let Some(path) = from_proto::file_path(&args.uri) else {
            return Err(request_failed(format!(
                "{} is not a file on disk; save it first, then ask again",
                args.uri.as_str()
            )));
        };
        let disk = if self.state().documents.contains_key(&args.uri) {
            None
        } else {
            let p = path.clone();
            let text = tokio::task::spawn_blocking(move || crate::workspace::read_text(&p))
                .await
                .map_err(|e| request_failed(e.to_string()))?
                .map_err(|e| request_failed(e.to_string()))?;
            Some(Document::new(&text, 0, ""))
        };
        let run_id = format!(
            "patchwise-edit-{}",
            NEXT_RUN.fetch_add(1, Ordering::Relaxed)
        );
        let cancel = CancellationToken::new();
        let (ctx, request, features, auto_apply) = {
            let mut state = self.state();
            let encoding = state.encoding;
            let doc = match (&disk, state.documents.get(&args.uri)) {
                (_, Some(doc)) => doc,
                (Some(doc), None) => doc,
                (None, None) => {
                    return Err(request_failed("the document was closed during the request"));
                }
            };
            let (range, problems) = doc.byte_range(from_proto::span(args.range), encoding);
            for problem in problems {
                tracing::warn!("edit target: {problem}");
            }
            let snapshot: Snapshot = state
                .documents
                .iter()
                .filter_map(|(uri, doc)| {
                    let path = from_proto::file_path(uri)?;
                    Some((
                        path,
                        OpenBuffer {
                            text: doc.text(),
                            version: doc.version,
                        },
                    ))
                })
                .collect();
            let mut roots: Vec<PathBuf> = state
                .workspace_roots
                .iter()
                .filter_map(from_proto::file_path)
                .collect();
            if !roots.iter().any(|r| path.starts_with(r)) {
                // A file outside every workspace folder (or no folder at all): its directory is
                // the sandbox, never anything above it.
                if let Some(parent) = path.parent() {
                    roots.push(parent.to_path_buf());
                }
            }
            let config = (*state.config).clone();
            let auto_apply = auto_apply(&config);
            let ctx = EditContext::new(
                config,
                Models::Router(state.router.clone()),
                roots,
                snapshot,
            );
            state.runs.insert(run_id.clone(), cancel.clone());
            let request = EditRequest {
                path: path.clone(),
                range,
                instruction: instruction.clone(),
            };
            (ctx, request, state.client, auto_apply)
        };
        let _guard = RunGuard::new(self, run_id.clone(), cancel.clone());
        let reporter = Reporter::begin(
            &self.client,
            features.work_done_progress,
            run_id.clone(),
            "patchwise: edit",
        )
        .await;
        let report = |p: workflow::Progress| reporter.report(p.percent, &p.message);
        let outcome = workflow::run(&ctx, request, &report, cancel.clone()).await;
        let mut proposal = match outcome {
            Ok(proposal) => proposal,
            Err(failure) => {
                reporter.end(&failure.to_string()).await;
                return Err(request_failed(failure.to_string()));
            }
        };
        if args.remove_instruction_comment {
            proposal = without_instruction_comment(proposal, &path, &instruction);
        }
        reporter.end("proposal ready").await;
        let id = self.add_proposal(proposal.clone());
        tracing::info!(id, model = %proposal.model, attempts = proposal.attempts, "proposal ready");
        let mut answer = json!({
            "id": id,
            "diff": proposal.diff,
            "model": proposal.model,
            "attempts": proposal.attempts,
            "matchedBy": proposal.matched_by,
        });
        if auto_apply {
            self.accept(id).await?;
            answer["applied"] = Value::Bool(true);
            return Ok(answer);
        }
        self.proposals_changed(proposal.files.iter().map(|f| f.path.clone()).collect())
            .await;
        Ok(answer)
    }

    /// Stores a proposal and re-bases it onto the documents as they are now (the user may have
    /// typed during the run).
    fn add_proposal(&self, proposal: Proposal) -> ProposalId {
        let mut state = self.state();
        let paths: Vec<PathBuf> = proposal.files.iter().map(|f| f.path.clone()).collect();
        let id = state.proposals.add(proposal);
        for path in paths {
            let Some(current) = state.document_for_path(&path).map(|(_, d)| d.text()) else {
                continue;
            };
            if !state.proposals.sync(&path, &current).is_empty() {
                tracing::warn!(
                    id,
                    "the target changed during the run; the proposal is stale"
                );
            }
        }
        id
    }

    async fn accept(&self, id: ProposalId) -> Result<Value> {
        let paths: Vec<PathBuf> = {
            let state = self.state();
            let proposal = state
                .proposals
                .get(id)
                .ok_or_else(|| request_failed(workflow::ApplyError::Unknown { id }.to_string()))?;
            proposal
                .files
                .iter()
                .filter(|f| state.document_for_path(&f.path).is_none())
                .map(|f| f.path.clone())
                .collect()
        };
        // Files that are not open are read from disk, outside the lock.
        let mut on_disk: HashMap<PathBuf, Option<String>> = HashMap::new();
        for path in paths {
            let p = path.clone();
            let text = tokio::task::spawn_blocking(move || crate::workspace::read_text(&p))
                .await
                .ok()
                .and_then(|r| r.ok());
            on_disk.insert(path, text);
        }
        let (edit, label) = {
            let mut state = self.state();
            let shape = EditShape {
                document_changes: state.client.document_changes,
                change_annotations: state.client.change_annotations,
                encoding: state.encoding,
            };
            let mut docs: HashMap<PathBuf, (Uri, Document)> = HashMap::new();
            let proposal =
                state.proposals.get(id).cloned().ok_or_else(|| {
                    request_failed(workflow::ApplyError::Unknown { id }.to_string())
                })?;
            for file in &proposal.files {
                if let Some((uri, doc)) = state.document_for_path(&file.path) {
                    docs.insert(file.path.clone(), (uri.clone(), doc.clone()));
                } else if let Some(Some(text)) = on_disk.get(&file.path) {
                    let uri = Uri::from_file_path(&file.path).ok_or_else(|| {
                        request_failed(format!("{} is not a valid file path", file.path.display()))
                    })?;
                    docs.insert(file.path.clone(), (uri, Document::new(text, 0, "")));
                }
            }
            let files = state
                .proposals
                .to_apply_files(id, |path| {
                    docs.get(path).map(|(_, doc)| {
                        let open = !on_disk.contains_key(path);
                        (doc.text(), open.then_some(doc.version))
                    })
                })
                .map_err(|e| request_failed(e.to_string()))?;
            let edit = proposals::workspace_edit(&proposal, &files, &docs, shape)
                .map_err(request_failed)?;
            (
                edit,
                format!(
                    "patchwise: {}",
                    proposal.instruction.lines().next().unwrap_or("")
                ),
            )
        };
        let response = self
            .client
            .send_request::<ApplyWorkspaceEdit>(ApplyWorkspaceEditParams {
                label: Some(label),
                edit,
            })
            .await?;
        if !response.applied {
            let reason = response
                .failure_reason
                .unwrap_or_else(|| "no reason given".to_owned());
            return Err(request_failed(format!(
                "the editor did not apply proposal {id}: {reason}; the proposal is still pending"
            )));
        }
        let removed = self.state().proposals.remove(id);
        if let Some(proposal) = removed {
            self.proposals_changed(proposal.files.iter().map(|f| f.path.clone()).collect())
                .await;
        }
        Ok(json!({ "applied": true }))
    }

    async fn reject(&self, id: ProposalId) -> Result<()> {
        let removed = self.state().proposals.remove(id);
        let Some(proposal) = removed else {
            return Err(request_failed(
                workflow::ApplyError::Unknown { id }.to_string(),
            ));
        };
        self.proposals_changed(proposal.files.iter().map(|f| f.path.clone()).collect())
            .await;
        Ok(())
    }

    async fn diff(&self, args: IdArgs) -> Result<String> {
        let (diff, show, data_dir) = {
            let state = self.state();
            let proposal = state.proposals.get(args.id).ok_or_else(|| {
                request_failed(workflow::ApplyError::Unknown { id: args.id }.to_string())
            })?;
            (
                proposal.diff.clone(),
                args.show && state.client.show_document,
                state.config.data_dir(),
            )
        };
        if show {
            let file = data_dir
                .join("proposals")
                .join(format!("proposal-{}.diff", args.id));
            let text = diff.clone();
            let written = tokio::task::spawn_blocking(move || {
                std::fs::create_dir_all(file.parent().unwrap_or(Path::new(".")))?;
                std::fs::write(&file, text)?;
                Ok::<_, std::io::Error>(file)
            })
            .await
            .map_err(|e| request_failed(e.to_string()))?;
            match written {
                Ok(file) => {
                    if let Some(uri) = Uri::from_file_path(&file) {
                        let _ = self
                            .client
                            .show_document(ShowDocumentParams {
                                uri,
                                external: Some(false),
                                take_focus: Some(true),
                                selection: None,
                            })
                            .await;
                    }
                }
                Err(err) => tracing::warn!("cannot write the diff to show it: {err}"),
            }
        }
        Ok(diff)
    }

    /// Re-publishes diagnostics for these files and asks the client to refresh code lenses.
    pub(super) async fn proposals_changed(&self, paths: Vec<PathBuf>) {
        let (batches, refresh) = {
            let state = self.state();
            let batches: Vec<(Uri, Vec<Diagnostic>, i32)> = paths
                .iter()
                .filter_map(|path| {
                    let (uri, doc) = state.document_for_path(path)?;
                    let diagnostics =
                        proposals::diagnostics(&state.proposals, path, doc, state.encoding);
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
        if refresh {
            if let Err(err) = self.client.code_lens_refresh().await {
                tracing::debug!("code lens refresh failed: {err}");
            }
        }
    }
}

/// Whether accepted-without-asking is on: `[edit] auto_apply` (or `autoApply` from a client).
fn auto_apply(config: &crate::config::Config) -> bool {
    let Some(Value::Object(edit)) = config.sections.get("edit") else {
        return false;
    };
    edit.get("auto_apply")
        .or_else(|| edit.get("autoApply"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Drops the instruction comment line from the proposal's new text of `path`, when it is there
/// exactly once (the "Apply instruction" action promises the comment goes away).
fn without_instruction_comment(proposal: Proposal, path: &Path, instruction: &str) -> Proposal {
    let mut files = Vec::new();
    let mut changed = false;
    for file in &proposal.files {
        if file.path != path {
            files.push(file.clone());
            continue;
        }
        let lines: Vec<&str> = file.new_text.split_inclusive('\n').collect();
        let hits: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| proposals::instruction_comment(l).as_deref() == Some(instruction))
            .map(|(i, _)| i)
            .collect();
        if let [only] = hits[..] {
            let line = lines[only];
            let code = proposals::strip_instruction_comment(line);
            let mut text = String::with_capacity(file.new_text.len());
            for (i, l) in lines.iter().enumerate() {
                if i == only {
                    text.push_str(&code);
                } else {
                    text.push_str(l);
                }
            }
            files.push(ProposalFile::new(
                file.path.clone(),
                file.display_path.clone(),
                file.base_version,
                file.created,
                file.original.clone(),
                text,
            ));
            changed = true;
        } else {
            files.push(file.clone());
        }
    }
    if !changed {
        return proposal;
    }
    let mut rebuilt = Proposal::new(
        proposal.instruction.clone(),
        files,
        proposal.model.clone(),
        proposal.attempts,
        proposal.matched_by.clone(),
    );
    rebuilt.id = proposal.id;
    rebuilt
}
