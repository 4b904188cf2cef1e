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

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;

use super::from_proto;
use super::review::IdArgs;
use super::runs::{EditAnswer, Failure, RunAnswer, RunProposal, RunResult, Shown};
use super::server::{Backend, State, request_failed};
use crate::document::Document;
use crate::tools::{OpenBuffer, Snapshot};
use crate::workflow::session::choices::one_line;
use crate::workflow::session::{Command, RunEnded, RunHandle, RunKind, edit};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditCommandArgs {
    pub uri: Uri,
    pub range: Range,
    pub instruction: Option<String>,
    /// Set by the "Apply instruction" code action: the proposal drops the comment line.
    #[serde(default)]
    pub remove_instruction_comment: bool,
    /// Answer when the run ends (with the proposal) instead of at once with the run id.
    #[serde(default)]
    pub wait: bool,
}

#[derive(Debug, Default, Deserialize)]
pub struct CancelArgs {
    /// The run's id (its progress token); none cancels every run.
    pub id: Option<Value>,
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::invalid_params(message.into())
}

/// Why an edit could not start, with how an LSP client gives what was missing.
fn refused(err: edit::EditRefused) -> Error {
    match err {
        edit::EditRefused::NoInstruction => invalid_params(format!(
            "{err}: the client supplies it (VS Code and the Neovim plugin ask for it; other \
             editors write an instruction comment `patchwise: <instruction>` and use the \
             \"Apply instruction\" code action); call patchwise.edit with {{uri, range, \
             instruction}}"
        )),
    }
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
        let command = Command::from_name(&params.command).ok_or_else(|| {
            invalid_params(format!(
                "unknown command {:?}; patchwise executes {}",
                params.command,
                Command::names().join(", ")
            ))
        })?;
        if matches!(
            command,
            Command::ProposalAccept
                | Command::ProposalReject
                | Command::ProposalDiff
                | Command::ProposalList
        ) {
            // The first command after a restart sees the proposals the restore brings back.
            self.keeping.restored().await;
        }
        match command {
            Command::Edit | Command::EditSelection => {
                let args: EditCommandArgs = argument(command, args)?;
                self.command_edit(args).await.map(Some)
            }
            Command::ProposalAccept => {
                let args: IdArgs = argument(command, args)?;
                self.accept(args.id, args.hunk).await.map(Some)
            }
            Command::ProposalReject => {
                let args: IdArgs = argument(command, args)?;
                self.reject(args.id, args.hunk)
                    .await
                    .map(|()| Some(Value::Null))
            }
            Command::ProposalDiff => {
                let args: IdArgs = argument(command, args)?;
                self.diff(args).await.map(|d| Some(Value::String(d)))
            }
            Command::ProposalList => Ok(Some(self.list())),
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

    async fn command_edit(&self, args: EditCommandArgs) -> Result<Value> {
        let Some(path) = from_proto::file_path(&args.uri) else {
            if args
                .instruction
                .as_deref()
                .is_none_or(|i| i.trim().is_empty())
            {
                return Err(refused(edit::EditRefused::NoInstruction));
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
        let (target, workspace) = {
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
            let target = edit::RequestedEdit {
                path: path.clone(),
                range,
                instruction: args.instruction.clone(),
                remove_instruction_comment: args.remove_instruction_comment,
            };
            (target, self.workspace_view(&state))
        };
        let prepared = edit::prepare(target, workspace).map_err(refused)?;
        let run = self
            .runs
            .start_run(RunKind::Edit, &prepared.path().display().to_string());
        let what = args
            .instruction
            .as_deref()
            .map(one_line)
            .unwrap_or_default();
        let (uri, auto_apply) = (args.uri.clone(), prepared.auto_apply);
        let call = move |run: RunHandle| async move {
            prepared.run(&run).await;
            run
        };
        let finish = move |this: Backend, run_id, ended| async move {
            this.edit_ended(run_id, ended, uri, auto_apply).await
        };
        self.launch(run, args.wait, &what, call, finish).await
    }

    /// What an edit run produced: the proposal stored and shown (or applied, with
    /// `auto_apply`).
    async fn edit_ended(
        &self,
        run_id: String,
        ended: RunEnded,
        uri: Uri,
        auto_apply: bool,
    ) -> RunResult {
        let Some(proposal) = ended.proposal else {
            return Err(ended.outcome.to_string().into());
        };
        let id = self.add_proposal(proposal.clone()).await;
        tracing::info!(id, model = %proposal.model, attempts = proposal.attempts, "proposal ready");
        let mut answer = EditAnswer {
            run_id,
            id,
            uri: uri.as_str().to_owned(),
            diff: proposal.diff.clone(),
            model: proposal.model.clone(),
            attempts: proposal.attempts,
            matched_by: proposal.matched_by.clone(),
            applied: false,
        };
        if auto_apply {
            if let Err(err) = self.accept(id, None).await {
                return Err(Failure {
                    error: err.message.to_string(),
                    proposal: Some(RunProposal::Edit(answer)),
                });
            }
            answer.applied = true;
        } else {
            self.proposals_changed(proposal.files.iter().map(|f| f.path.clone()).collect())
                .await;
        }
        let message = if answer.applied {
            format!(
                "patchwise: proposal {id} applied: {}",
                one_line(&proposal.instruction)
            )
        } else {
            format!(
                "patchwise: proposal {id} ready: {} (hover the change for the diff; {})",
                one_line(&proposal.instruction),
                self.how_to_review()
            )
        };
        Ok(Shown {
            answer: RunAnswer::Proposal(RunProposal::Edit(answer)),
            message,
        })
    }

    /// How this client's user accepts or rejects a proposal.
    pub(super) fn how_to_review(&self) -> &'static str {
        if self.state().client.code_lens {
            "Accept or Reject in the code lens or with a code action"
        } else {
            "Accept or Reject with the code actions on the changed lines"
        }
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
}
