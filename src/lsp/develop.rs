//! Develop from the editor: `patchwise.develop {request, uri?}` (also what the "Develop…" code
//! action and `patchwise develop:` instruction comments run). Convert in, call
//! `workflow::develop` through a session run (progress, cancel), convert out.
//!
//! The plan is opened with `window/showDocument` (a Markdown file under the data directory) and
//! approved with `window/showMessageRequest` (Approve / Cancel), unless
//! `[develop] approve = "auto"`. The result is one pending multi-file proposal; accepting it is
//! one `workspace/applyEdit` (created files as `CreateFile`). A run without a proposal answers
//! with an error that carries everything the run learned.

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{MessageActionItem, MessageType, Uri};

use super::from_proto;
use super::progress::Reporter;
use super::server::{Backend, request_failed, show_file};
use crate::workflow::develop::{
    self, Approver, DevelopContext, DevelopModels, DevelopRequest, PlanReview, Progress,
};
use crate::workflow::session::{RunKind, edit};

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
        let (workspace, features) = {
            let state = self.state();
            (self.workspace_view(&state), state.client)
        };
        let mut roots = workspace.roots.clone();
        if roots.is_empty()
            && let Some(dir) = focus.as_ref().and_then(|f| f.parent())
        {
            roots.push(dir.to_path_buf());
        }
        let mut ctx = DevelopContext::new(
            (*workspace.config).clone(),
            DevelopModels::Router(workspace.router.clone()),
            roots.clone(),
            workspace.snapshot,
        );
        ctx.approver = Some(std::sync::Arc::new(EditorApprover {
            client: self.client.clone(),
            show_document: features.show_document,
        }));
        let asked = request.clone();
        let mut run = self.runs.start_run(RunKind::Develop, &request);
        let reporter = Reporter::start(&self.client, features.work_done_progress, &mut run).await;
        let outcome = {
            let progress = |p: Progress| run.report(p.percent, &p.message);
            develop::run(
                &ctx,
                DevelopRequest {
                    request,
                    focus: focus.clone(),
                },
                &progress,
                run.cancel_token(),
            )
            .await
        };
        let report = outcome.report;
        let Some(mut proposal) = outcome.proposal else {
            let failure = report.failure.clone().unwrap_or_default();
            run.finish(&failure);
            reporter.done().await;
            return Err(request_failed(format!("develop: {}", report.summary())));
        };
        match &report.stopped {
            Some(why) => run.finish(&format!("proposal ready; stopped early: {why}")),
            None => run.finish("proposal ready"),
        }
        reporter.done().await;
        if args.remove_instruction_comment
            && let Some(path) = &focus
        {
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
            proposal = edit::without_develop_comment(proposal, path, &asked, now);
        }
        let id = self.add_proposal(proposal.clone()).await;
        tracing::info!(id, files = proposal.files.len(), "develop proposal ready");
        self.proposals_changed(proposal.files.iter().map(|f| f.path.clone()).collect())
            .await;
        Ok(json!({
            "id": id,
            "diff": proposal.diff,
            "files": proposal.files.iter().map(|f| json!({"path": f.display_path, "created": f.created})).collect::<Vec<_>>(),
            "summary": report.summary(),
            "report": report,
        }))
    }
}

/// Shows the plan document and asks Approve / Cancel.
struct EditorApprover {
    client: Client,
    show_document: bool,
}

impl Approver for EditorApprover {
    fn approve(&self, review: PlanReview) -> BoxFuture<'static, bool> {
        let client = self.client.clone();
        let show = self.show_document;
        Box::pin(async move {
            if show
                && let Some(path) = &review.path
                && let Err(err) = show_file(&client, path).await
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
        })
    }
}
