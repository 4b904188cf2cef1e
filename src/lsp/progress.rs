//! `$/progress` for a run: the run's events (`workflow::session::RunEvent`) become
//! `WorkDoneProgress` notifications, in order, through one sending task per run.
//!
//! Without client support for `window/workDoneProgress/create` nothing is sent and the run
//! simply goes on. The progress token is the run id, so `window/workDoneProgress/cancel` and
//! `patchwise.cancel` find the run.

use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::Progress as ProgressNotification;
use tower_lsp_server::ls_types::{
    NumberOrString, ProgressParams, ProgressParamsValue, WorkDoneProgress, WorkDoneProgressBegin,
    WorkDoneProgressEnd, WorkDoneProgressReport,
};

use crate::workflow::session::{RunEvent, RunHandle};

pub struct Reporter {
    sender: Option<tokio::task::JoinHandle<()>>,
}

impl Reporter {
    /// Creates the progress token on the client, sends `begin`, and forwards the run's events
    /// until it finishes (or its handle is dropped).
    pub async fn start(client: &Client, supported: bool, run: &mut RunHandle) -> Self {
        let events = run.take_events();
        let (true, Some(mut events)) = (supported, events) else {
            return Self { sender: None };
        };
        let token = NumberOrString::String(run.id().to_owned());
        if let Err(err) = client.create_work_done_progress(token.clone()).await {
            tracing::warn!("client refused a progress token: {err}");
            return Self { sender: None };
        }
        let client = client.clone();
        let title = run.kind().title().to_owned();
        let sender = tokio::spawn(async move {
            let send = |value: WorkDoneProgress| {
                client.send_notification::<ProgressNotification>(ProgressParams {
                    token: token.clone(),
                    value: ProgressParamsValue::WorkDone(value),
                })
            };
            send(WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title,
                cancellable: Some(true),
                message: None,
                percentage: Some(0),
            }))
            .await;
            let end = loop {
                match events.recv().await {
                    Some(RunEvent::Progress { percent, message }) => {
                        send(WorkDoneProgress::Report(WorkDoneProgressReport {
                            cancellable: Some(true),
                            message: Some(message),
                            percentage: Some(percent),
                        }))
                        .await;
                    }
                    // The plan is its own document in an editor (`lsp/develop.rs`); steps and
                    // usage have no place in LSP progress.
                    Some(RunEvent::Plan { .. } | RunEvent::Step(_) | RunEvent::Usage(_)) => {}
                    Some(RunEvent::Finished { message }) => break message,
                    None => break "stopped".to_owned(),
                }
            };
            send(WorkDoneProgress::End(WorkDoneProgressEnd {
                message: Some(end),
            }))
            .await;
        });
        Self {
            sender: Some(sender),
        }
    }

    /// Waits until every notification of the run has been handed to the client (call after
    /// the run finished).
    pub async fn done(self) {
        if let Some(sender) = self.sender {
            let _ = sender.await;
        }
    }
}
