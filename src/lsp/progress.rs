//! `$/progress` for a run: the run's events (`workflow::session::RunEvent`) become
//! `WorkDoneProgress` notifications, in order, through one task per run, which also asks the
//! run's questions (approve the plan) with `window/showMessageRequest` and keeps what the run
//! produced (its report and proposal) for the command to show when the run ended.
//!
//! Without client support for `window/workDoneProgress/create` no progress is sent and the run
//! simply goes on. The progress token is the run id, so `window/workDoneProgress/cancel` and
//! `patchwise.cancel` find the run.

use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::Progress as ProgressNotification;
use tower_lsp_server::ls_types::{
    NumberOrString, ProgressParams, ProgressParamsValue, WorkDoneProgress, WorkDoneProgressBegin,
    WorkDoneProgressEnd, WorkDoneProgressReport,
};

use crate::workflow::session::{RunEnded, RunEvent, RunHandle};

pub struct Reporter {
    sender: Option<tokio::task::JoinHandle<RunEnded>>,
}

impl Reporter {
    /// Creates the progress token on the client (when it supports progress), sends `begin`,
    /// and forwards the run's events until it finishes (or its handle is dropped): progress
    /// as `$/progress`, the plan's question as the editor asks it (`lsp/develop.rs`).
    pub async fn start(
        client: &Client,
        progress: bool,
        show_document: bool,
        run: &mut RunHandle,
    ) -> Self {
        let Some(mut events) = run.take_events() else {
            return Self { sender: None };
        };
        let token = NumberOrString::String(run.id().to_owned());
        let supported = progress
            && match client.create_work_done_progress(token.clone()).await {
                Ok(()) => true,
                Err(err) => {
                    tracing::warn!("client refused a progress token: {err}");
                    false
                }
            };
        let client = client.clone();
        let title = run.kind().title().to_owned();
        let sender = tokio::spawn(async move {
            let send = |value: WorkDoneProgress| {
                let client = client.clone();
                let token = token.clone();
                async move {
                    if supported {
                        client
                            .send_notification::<ProgressNotification>(ProgressParams {
                                token,
                                value: ProgressParamsValue::WorkDone(value),
                            })
                            .await;
                    }
                }
            };
            send(WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title,
                cancellable: Some(true),
                message: None,
                percentage: Some(0),
            }))
            .await;
            let mut ended = RunEnded::default();
            while let Some(event) = ended.next(&mut events).await {
                match event {
                    RunEvent::Progress {
                        percent, message, ..
                    } => {
                        send(WorkDoneProgress::Report(WorkDoneProgressReport {
                            cancellable: Some(true),
                            message: Some(message),
                            percentage: Some(percent),
                        }))
                        .await;
                    }
                    RunEvent::Question(question) => {
                        let yes =
                            super::develop::ask_plan(&client, show_document, &question.review)
                                .await;
                        question.answer(yes);
                    }
                    // The plan is its own document in an editor; steps, commands and usage have
                    // no place in LSP progress.
                    _ => {}
                }
            }
            send(WorkDoneProgress::End(WorkDoneProgressEnd {
                message: Some(ended.outcome.to_string()),
            }))
            .await;
            ended
        });
        Self {
            sender: Some(sender),
        }
    }

    /// Waits until every notification of the run has been handed to the client (call after
    /// the run finished) and returns what the run produced.
    pub async fn done(self) -> RunEnded {
        match self.sender {
            Some(sender) => sender.await.unwrap_or_default(),
            None => RunEnded::default(),
        }
    }
}
