//! Develop from the editor: `patchwise.develop {request, uri?, wait?}` (also what the
//! "Develop…" code action and `patchwise develop:` instruction comments run). Convert in, call
//! `workflow::session::develop` through a session run (progress, the plan, cancel), convert
//! out; the command answers at once with the run id and the run ends with
//! `patchwise/runFinished` (`lsp/runs.rs`).
//!
//! The plan is opened with `window/showDocument` (a Markdown file under the data directory) and
//! approved with `window/showMessageRequest` (Approve / Cancel), unless
//! `[develop] approve = "auto"`. The result is one pending multi-file proposal; accepting it is
//! one `workspace/applyEdit` (created files as `CreateFile`). A run without a proposal ends with
//! an error that carries everything the run learned.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{MessageActionItem, MessageType, Uri};

use super::from_proto;
use super::runs::{DevelopAnswer, DevelopFile, RunAnswer, RunProposal, RunResult, Shown};
use super::server::{Backend, show_file};
use crate::workflow::session::choices::one_line;
use crate::workflow::session::develop::{self, DevelopRequest, PlanReview};
use crate::workflow::session::{RunEnded, RunHandle, RunKind, RunReport, edit};

#[derive(Debug, Deserialize)]
pub struct DevelopCommandArgs {
    pub request: Option<String>,
    /// The document the user was in (shown to the planner first; its folder is the workspace
    /// when no folder is open).
    pub uri: Option<Uri>,
    /// Set by the "Develop: …" code action of a `patchwise develop:` comment in `uri`: the
    /// proposal also drops that comment.
    #[serde(default, rename = "removeInstructionComment")]
    pub remove_instruction_comment: bool,
    /// Answer when the run ends (with the proposal) instead of at once with the run id.
    #[serde(default)]
    pub wait: bool,
}

const APPROVE: &str = "Approve";
const CANCEL: &str = "Cancel";

impl Backend {
    pub(super) async fn develop(&self, args: DevelopCommandArgs) -> Result<Value> {
        let request = args.request.unwrap_or_default();
        if request.trim().is_empty() {
            // "Develop…" names this command without a request: the client asks for it.
            return Err(Error::invalid_params(
                "patchwise.develop: no request given; the client supplies it (VS Code and the \
                 Neovim plugin ask for it on \"Develop…\"; in other editors write a comment \
                 `patchwise develop: <request>` and use its \"Develop: …\" code action), or call \
                 patchwise.develop with {\"request\": \"<what to build or change>\", \"uri\"?}",
            ));
        }
        let focus: Option<PathBuf> = args.uri.as_ref().and_then(from_proto::file_path);
        let workspace = {
            let state = self.state();
            self.workspace_view(&state)
        };
        let ctx = develop::context(workspace, focus.as_deref());
        let run = self.runs.start_run(RunKind::Develop, &request);
        let what = one_line(&request);
        // The `patchwise develop:` comment the proposal drops: in `focus`, naming the request.
        let comment = focus
            .clone()
            .filter(|_| args.remove_instruction_comment)
            .map(|path| (path, request.clone(), ctx.roots.clone()));
        let call = move |run: RunHandle| async move {
            develop::run(ctx, DevelopRequest { request, focus }, &run).await;
            run
        };
        let finish = move |this: Backend, run_id, ended| async move {
            this.develop_ended(run_id, ended, comment).await
        };
        self.launch(run, args.wait, &what, call, finish).await
    }

    /// What a develop run produced: the proposal stored and shown, without the develop comment
    /// `(path, request, roots)` when one is given.
    async fn develop_ended(
        &self,
        run_id: String,
        ended: RunEnded,
        comment: Option<(PathBuf, String, Vec<PathBuf>)>,
    ) -> RunResult {
        let (report, mut proposal) = match (ended.report, ended.proposal) {
            (Some(RunReport::Develop(report)), Some(proposal)) => (report, proposal),
            (Some(RunReport::Develop(report)), None) => {
                return Err(format!("develop: {}", report.summary()).into());
            }
            _ => return Err(format!("develop: {}", ended.outcome).into()),
        };
        if let Some((path, asked, roots)) = &comment {
            let now = {
                let state = self.state();
                state.document_for_path(path).map(|(_, doc)| {
                    let shown = roots
                        .iter()
                        .find_map(|r| path.strip_prefix(r).ok())
                        .unwrap_or(path)
                        .display()
                        .to_string();
                    (doc.text(), Some(doc.version), shown)
                })
            };
            proposal = edit::without_develop_comment(proposal, path, asked, now);
        }
        let id = self.add_proposal(proposal.clone()).await;
        tracing::info!(id, files = proposal.files.len(), "develop proposal ready");
        self.proposals_changed(proposal.files.iter().map(|f| f.path.clone()).collect())
            .await;
        let files: Vec<DevelopFile> = proposal
            .files
            .iter()
            .map(|f| DevelopFile {
                path: f.display_path.clone(),
                created: f.created,
            })
            .collect();
        let message = format!(
            "patchwise: develop proposal {id} ready: {} ({})",
            files
                .iter()
                .map(|f| if f.created {
                    format!("{} (new)", f.path)
                } else {
                    f.path.clone()
                })
                .collect::<Vec<_>>()
                .join(", "),
            self.how_to_review()
        );
        let answer = DevelopAnswer {
            run_id,
            id,
            diff: proposal.diff,
            files,
            summary: report.summary(),
            report,
        };
        Ok(Shown {
            answer: RunAnswer::Proposal(RunProposal::Develop(Box::new(answer))),
            message,
        })
    }
}

/// Shows the plan document and asks Approve / Cancel (a run's question, `lsp/progress.rs`).
pub(super) async fn ask_plan(client: &Client, show_document: bool, review: &PlanReview) -> bool {
    if show_document
        && let Some(path) = &review.path
        && let Err(err) = show_file(client, path).await
    {
        tracing::warn!("the client did not open the plan: {err}");
    }
    let steps = review.plan.numbered(None);
    let message = format!("patchwise develop: approve this plan?\n{steps}");
    let actions = vec![
        MessageActionItem {
            title: APPROVE.to_owned(),
            properties: Default::default(),
        },
        MessageActionItem {
            title: CANCEL.to_owned(),
            properties: Default::default(),
        },
    ];
    match client
        .show_message_request(MessageType::INFO, message, Some(actions))
        .await
    {
        Ok(Some(item)) => item.title == APPROVE,
        Ok(None) => false,
        Err(err) => {
            tracing::warn!("the client could not ask to approve the plan: {err}");
            false
        }
    }
}
