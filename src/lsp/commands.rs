//! `workspace/executeCommand`: running an edit, and accepting, rejecting, showing and
//! cancelling what it produces.
//!
//! Convert in, call the session layer (`workflow::session`), convert out: a run takes a
//! snapshot of the open buffers under the state lock, then works without it; the session
//! registers its cancellation token under the run id (the progress token), so
//! `patchwise.cancel`, `window/workDoneProgress/cancel` and `$/cancelRequest` (which drops this
//! handler's future, and with it the run handle) all stop it. The proposal that comes back is
//! re-based onto the document as it is *now* before it is shown, so edits the user made during
//! the run are never overwritten.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::request::ApplyWorkspaceEdit;
use tower_lsp_server::ls_types::*;

use super::from_proto;
use super::progress::Reporter;
use super::proposals::{self, EditShape};
use super::server::{Backend, State, request_failed};
use crate::document::Document;
use crate::tools::{OpenBuffer, Snapshot};
use crate::workflow::session::{Command, RunKind, edit};
use crate::workflow::{self, Proposal, ProposalId};

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
    /// The run's id (its progress token); none cancels every run.
    pub id: Option<Value>,
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::invalid_params(message.into())
}

/// The first argument of a command, parsed.
fn argument<T: for<'de> Deserialize<'de>>(command: Command, arguments: &[Value]) -> Result<T> {
    let value = arguments.first().cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|err| {
        invalid_params(format!(
            "{}: expected one argument object ({err}); see the README for the command's arguments",
            command.name()
        ))
    })
}

/// The first argument, or its default when the command was sent without arguments.
fn optional_argument<T: Default + for<'de> Deserialize<'de>>(
    command: Command,
    arguments: &[Value],
) -> Result<T> {
    if arguments.is_empty() {
        Ok(T::default())
    } else {
        argument(command, arguments)
    }
}

/// A run id as clients send it (a string, or a number they made of one).
pub(super) fn run_id(value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

impl Backend {
    pub(super) async fn execute(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let args = &params.arguments;
        let command = Command::from_name(&params.command)
            .filter(|c| c.available())
            .ok_or_else(|| {
                invalid_params(format!(
                    "unknown command {:?}; patchwise executes {}",
                    params.command,
                    Command::available_names().join(", ")
                ))
            })?;
        match command {
            Command::Edit | Command::EditSelection => {
                let args: EditArgs = argument(command, args)?;
                self.command_edit(args).await.map(Some)
            }
            Command::ProposalAccept => {
                let args: IdArgs = argument(command, args)?;
                self.accept(args.id).await.map(Some)
            }
            Command::ProposalReject => {
                let args: IdArgs = argument(command, args)?;
                self.reject(args.id).await.map(|()| Some(Value::Null))
            }
            Command::ProposalDiff => {
                let args: IdArgs = argument(command, args)?;
                self.diff(args).await.map(|d| Some(Value::String(d)))
            }
            Command::Research => {
                let args = argument(command, args)?;
                self.research(args).await.map(Some)
            }
            Command::ResearchList => {
                let args = optional_argument(command, args)?;
                self.research_list(args).await.map(Some)
            }
            Command::ResearchOpen => {
                let args = argument(command, args)?;
                self.research_open(args).await.map(Some)
            }
            Command::Cancel => {
                let args: CancelArgs = optional_argument(command, args)?;
                let id = args.id.map(run_id);
                Ok(Some(
                    json!({ "cancelled": self.runs.cancel(id.as_deref()) }),
                ))
            }
            Command::Develop => {
                let args = argument(command, args)?;
                self.develop(args).await.map(Some)
            }
        }
    }

    async fn command_edit(&self, args: EditArgs) -> Result<Value> {
        let Some(path) = from_proto::file_path(&args.uri) else {
            if args
                .instruction
                .as_deref()
                .is_none_or(|i| i.trim().is_empty())
            {
                return Err(invalid_params(edit::EditRefused::NoInstruction.to_string()));
            }
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
        let (target, workspace, features) = {
            let state = self.state();
            let doc = match (&disk, state.documents.get(&args.uri)) {
                (_, Some(doc)) => doc,
                (Some(doc), None) => doc,
                (None, None) => {
                    return Err(request_failed("the document was closed during the request"));
                }
            };
            let (range, problems) = doc.byte_range(from_proto::span(args.range), state.encoding);
            for problem in problems {
                tracing::warn!("edit target: {problem}");
            }
            let target = edit::EditTarget {
                path: path.clone(),
                range,
                instruction: args.instruction.clone(),
                remove_instruction_comment: args.remove_instruction_comment,
            };
            (target, self.workspace_view(&state), state.client)
        };
        let prepared =
            edit::prepare(target, workspace).map_err(|e| invalid_params(e.to_string()))?;
        let auto_apply = prepared.auto_apply;
        let mut run = self
            .runs
            .start_run(RunKind::Edit, &prepared.path().display().to_string());
        let reporter = Reporter::start(&self.client, features.work_done_progress, &mut run).await;
        let outcome = prepared.run(&run).await;
        let proposal = match outcome {
            Ok(proposal) => proposal,
            Err(failure) => {
                run.finish(&failure.to_string());
                reporter.done().await;
                return Err(request_failed(failure.to_string()));
            }
        };
        run.finish("proposal ready");
        reporter.done().await;
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

    /// The workspace as a run sees it: roots, open buffers, configuration.
    pub(super) fn workspace_view(&self, state: &State) -> edit::Workspace {
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
        edit::Workspace {
            roots: state
                .workspace_roots
                .iter()
                .filter_map(from_proto::file_path)
                .collect(),
            snapshot,
            config: state.config.clone(),
            router: state.router.clone(),
        }
    }

    /// Stores a proposal and re-bases it onto the documents as they are now (the user may have
    /// typed during the run).
    pub(super) fn add_proposal(&self, proposal: Proposal) -> ProposalId {
        let mut guard = self.state();
        let state = &mut *guard;
        let documents = &state.documents;
        let current = |path: &Path| {
            documents
                .iter()
                .find(|(uri, _)| from_proto::file_path(uri).is_some_and(|p| p == path))
                .map(|(_, d)| d.text())
        };
        edit::adopt(&mut state.proposals, proposal, current).0
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
        if refresh && let Err(err) = self.client.code_lens_refresh().await {
            tracing::debug!("code lens refresh failed: {err}");
        }
    }
}
