//! How a command that starts a run answers: at once with `{runId}` while the run goes on in a
//! task of its own, ending with one `patchwise/runFinished` (and, for clients that follow no
//! runs, a `window/showMessage` saying the outcome) — or, with `wait: true`, when the run ends,
//! with what the notification carries (the notification still comes, first). Edit, develop and
//! research alike, so no client's request timeout is hit by a slow model (Emacs's jsonrpc gives
//! up after 10 s).
//!
//! A command hands [`Backend::launch`] its session call and what it makes of the result once
//! the run ended (a [`Shown`] answer, or a [`Failure`]); the progress, the waiting and the
//! conversion of the end into the notification and the message are here, once for every kind.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{MessageType, notification};

use super::progress::Reporter;
use super::server::{Backend, request_failed};
use crate::workflow::session::develop::Report;
use crate::workflow::session::{RunEnded, RunHandle, RunKind, RunOutcome};

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
    /// `proposal` or `research`: what the run produced.
    #[serde(flatten)]
    pub answer: Option<RunAnswer>,
}

/// What a run produced, as `patchwise/runFinished` carries it and a command with `wait`
/// answers.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunAnswer {
    /// An edit's or a develop run's proposal.
    Proposal(RunProposal),
    /// A research run's saved record.
    Research(ResearchAnswer),
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

/// What a command made of its run's result: what clients read and what to tell a user whose
/// client follows no runs.
pub struct Shown {
    pub answer: RunAnswer,
    pub message: String,
}

/// Why a run has no usable result: the run ended without one (failed, cancelled), or the result
/// could not be used (an auto-applied edit that could not be written: it still shows the
/// proposal).
pub struct Failure {
    pub error: String,
    pub proposal: Option<RunProposal>,
}

/// What a command made of its run's result.
pub type RunResult = std::result::Result<Shown, Failure>;

impl From<String> for Failure {
    fn from(error: String) -> Failure {
        Failure {
            error,
            proposal: None,
        }
    }
}

/// How a run ended: the notification, and what to tell a user whose client follows no runs.
struct RunEnd {
    finished: RunFinishedParams,
    message: (MessageType, String),
}

impl RunEnd {
    /// The one conversion of a run's end (edit, develop and research alike): `cancelled` says
    /// whether the run ended cancelled, `result` what the command made of what it produced.
    fn new(run_id: String, kind: RunKind, cancelled: bool, result: RunResult) -> RunEnd {
        let (answer, message, error) = match result {
            Ok(Shown { answer, message }) => (Some(answer), (MessageType::INFO, message), None),
            Err(Failure { error, proposal }) => {
                let level = if cancelled {
                    MessageType::INFO
                } else {
                    MessageType::WARNING
                };
                let message = (level, format!("patchwise: {error}"));
                (proposal.map(RunAnswer::Proposal), message, Some(error))
            }
        };
        let finished = RunFinishedParams {
            run_id,
            kind: kind.name(),
            ok: error.is_none(),
            cancelled: cancelled && error.is_some(),
            error,
            answer,
        };
        RunEnd { finished, message }
    }
}

impl Backend {
    /// Runs `run`: `call` is the session call that does the work (it ends the run), `finish`
    /// what the command makes of the result once the run ended (given the run id and the
    /// gathered end). Answers `{runId}` at once and lets the run go on in a task, or with `wait`
    /// answers when it ends. `what` says what the run works on, for clients without progress.
    pub(super) async fn launch<C, CF, F, FF>(
        &self,
        mut run: RunHandle,
        wait: bool,
        what: &str,
        call: C,
        finish: F,
    ) -> Result<Value>
    where
        C: FnOnce(RunHandle) -> CF + Send + 'static,
        CF: Future<Output = RunHandle> + Send,
        F: FnOnce(Backend, String, RunEnded) -> FF + Send + 'static,
        FF: Future<Output = RunResult> + Send,
    {
        let (progress, show) = {
            let state = self.state();
            (state.client.work_done_progress, state.client.show_document)
        };
        let started = to_value(RunStarted {
            run_id: run.id().to_owned(),
        });
        let kind = run.kind();
        let this = self.clone();
        // Progress while `call` runs; then the end, converted. The handle lives until the
        // result is shown: the run can be cancelled until then.
        let ending = async move {
            let reporter = Reporter::start(&this.client, progress, show, &mut run).await;
            let run_id = run.id().to_owned();
            let run = call(run).await;
            let ended = reporter.done().await;
            let cancelled = ended.outcome == RunOutcome::Cancelled;
            let result = finish(this.clone(), run_id.clone(), ended).await;
            drop(run);
            (this, RunEnd::new(run_id, kind, cancelled, result))
        };
        if wait {
            let (_, end) = ending.await;
            self.run_finished(&end.finished).await;
            self.flush().await;
            return match (end.finished.ok, end.finished.answer) {
                (true, Some(RunAnswer::Proposal(proposal))) => Ok(to_value(proposal)),
                (true, Some(RunAnswer::Research(research))) => Ok(to_value(research)),
                _ => Err(request_failed(end.finished.error.unwrap_or_default())),
            };
        }
        // A client without progress support would show nothing until the run ends, minutes
        // later with a real model: say that it started, before the answer and before anything
        // the run sends (docs/editors.md, Emacs).
        if !progress {
            self.client
                .show_message(
                    MessageType::INFO,
                    format!(
                        "patchwise: working on: {what} (a message says when the {} is ready)",
                        match kind {
                            RunKind::Research => "report",
                            _ => "proposal",
                        }
                    ),
                )
                .await;
            self.flush().await;
        }
        tokio::spawn(async move {
            let (this, end) = ending.await;
            let (kind, message) = end.message;
            this.client.show_message(kind, message).await;
            this.run_finished(&end.finished).await;
        });
        Ok(started)
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
