//! How a command that starts a run answers: at once with `{runId}` while the run goes on in a
//! task of its own, ending with one `patchwise/runFinished` (and, for clients that follow no
//! runs, a `window/showMessage` saying the outcome) — or, with `wait: true`, when the run ends,
//! with what the notification carries (the notification still comes, first). Edit, develop and
//! research alike, so no client's request timeout is hit by a slow model (Emacs's jsonrpc gives
//! up after 10 s).

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{MessageType, notification};

use super::progress::Reporter;
use super::server::{Backend, request_failed};
use crate::workflow::session::develop::Report;
use crate::workflow::session::{RunHandle, RunKind};

/// `patchwise/runFinished` (server → client): a run ended; see the module docs of `lsp`.
pub enum RunFinished {}

// Sent as the JSON of [`RunFinishedParams`] (the develop report in it only serializes).
impl notification::Notification for RunFinished {
    type Params = Value;
    const METHOD: &'static str = "patchwise/runFinished";
}

/// How a run ended.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFinishedParams {
    pub run_id: String,
    /// `edit`, `develop` or `research`.
    pub kind: &'static str,
    pub ok: bool,
    pub cancelled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// An edit's or a develop run's proposal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal: Option<RunProposal>,
    /// A research run's saved record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub research: Option<ResearchAnswer>,
}

/// The answer to a command that started a run without `wait`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStarted {
    pub run_id: String,
}

/// A run's proposal as clients read it.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum RunProposal {
    Edit(EditAnswer),
    Develop(Box<DevelopAnswer>),
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditAnswer {
    pub run_id: String,
    pub id: u64,
    pub uri: String,
    pub diff: String,
    pub model: String,
    pub attempts: usize,
    pub matched_by: String,
    pub applied: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DevelopAnswer {
    pub run_id: String,
    pub id: u64,
    pub diff: String,
    pub files: Vec<DevelopFile>,
    pub summary: String,
    pub report: Report,
}

#[derive(Debug, Clone, Serialize)]
pub struct DevelopFile {
    /// Workspace-relative.
    pub path: String,
    pub created: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchAnswer {
    pub run_id: String,
    pub id: String,
    pub query: String,
    pub status: String,
    pub synthesis: String,
    pub synthesis_kind: String,
    /// How many sources the report has.
    pub sources: usize,
    pub notes: Vec<String>,
    /// The Markdown report.
    pub report: PathBuf,
}

/// How a run ended: the notification, and what to tell a user whose client follows no runs.
pub struct RunEnd {
    pub finished: RunFinishedParams,
    pub message: (MessageType, String),
}

impl RunEnd {
    /// A run that failed (or was cancelled) with `error`.
    pub fn failed(run_id: &str, kind: RunKind, error: String, cancelled: bool) -> RunEnd {
        let level = if cancelled {
            MessageType::INFO
        } else {
            MessageType::WARNING
        };
        RunEnd {
            message: (level, format!("patchwise: {error}")),
            finished: RunFinishedParams {
                run_id: run_id.to_owned(),
                kind: kind.name(),
                ok: false,
                cancelled,
                error: Some(error),
                proposal: None,
                research: None,
            },
        }
    }
}

/// The rest of a run once it started: given the server, its handle and its progress reporter.
pub type RunWork =
    Box<dyn FnOnce(Backend, RunHandle, Reporter) -> BoxFuture<'static, RunEnd> + Send>;

impl Backend {
    /// Runs `work` as the run `run`: answers `{runId}` at once and lets it go on in a task, or
    /// with `wait` answers when it ends. `what` says what the run works on, for clients without
    /// progress.
    pub(super) async fn launch(
        &self,
        mut run: RunHandle,
        wait: bool,
        what: &str,
        work: RunWork,
    ) -> Result<Value> {
        let (progress, show) = {
            let state = self.state();
            (state.client.work_done_progress, state.client.show_document)
        };
        if wait {
            let reporter = Reporter::start(&self.client, progress, show, &mut run).await;
            let end = work(self.clone(), run, reporter).await;
            self.run_finished(&end.finished).await;
            self.flush().await;
            let finished = end.finished;
            return match (finished.ok, finished.proposal, finished.research) {
                (true, Some(proposal), _) => Ok(to_value(proposal)),
                (true, None, Some(research)) => Ok(to_value(research)),
                (_, _, _) => Err(request_failed(finished.error.unwrap_or_default())),
            };
        }
        let run_id = run.id().to_owned();
        // A client without progress support would show nothing until the run ends, minutes
        // later with a real model: say that it started, before the answer and before anything
        // the run sends (docs/editors.md, Emacs).
        if !progress {
            self.client
                .show_message(
                    MessageType::INFO,
                    format!(
                        "patchwise: working on: {what} (a message says when the {} is ready)",
                        match run.kind() {
                            RunKind::Research => "report",
                            _ => "proposal",
                        }
                    ),
                )
                .await;
            self.flush().await;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let reporter = Reporter::start(&this.client, progress, show, &mut run).await;
            let end = work(this.clone(), run, reporter).await;
            let (kind, message) = end.message;
            this.client.show_message(kind, message).await;
            this.run_finished(&end.finished).await;
        });
        Ok(to_value(RunStarted { run_id }))
    }

    async fn run_finished(&self, params: &RunFinishedParams) {
        self.client
            .send_notification::<RunFinished>(to_value(params))
            .await;
    }
}

fn to_value(value: impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
