//! `$/progress` for long work: one reporter per run, messages delivered in order.
//!
//! The core reports progress through plain callbacks (sync, from any task); the reporter turns
//! them into `WorkDoneProgress` notifications through one channel and one sending task, so a
//! burst of updates can never arrive out of order. Without client support for
//! `window/workDoneProgress/create` nothing is sent and the run simply goes on.

use tokio::sync::mpsc;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::Progress as ProgressNotification;
use tower_lsp_server::ls_types::{
    NumberOrString, ProgressParams, ProgressParamsValue, WorkDoneProgress, WorkDoneProgressBegin,
    WorkDoneProgressEnd, WorkDoneProgressReport,
};

pub struct Reporter {
    tx: Option<mpsc::UnboundedSender<WorkDoneProgress>>,
    sender: Option<tokio::task::JoinHandle<()>>,
}

impl Reporter {
    /// Creates the progress token on the client and sends `begin`. `token` names the run, so
    /// `window/workDoneProgress/cancel` can find it.
    pub async fn begin(client: &Client, supported: bool, token: String, title: &str) -> Self {
        if !supported {
            return Self {
                tx: None,
                sender: None,
            };
        }
        let token = NumberOrString::String(token);
        if let Err(err) = client.create_work_done_progress(token.clone()).await {
            tracing::warn!("client refused a progress token: {err}");
            return Self {
                tx: None,
                sender: None,
            };
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<WorkDoneProgress>();
        let client = client.clone();
        let send_token = token;
        let sender = tokio::spawn(async move {
            while let Some(value) = rx.recv().await {
                client
                    .send_notification::<ProgressNotification>(ProgressParams {
                        token: send_token.clone(),
                        value: ProgressParamsValue::WorkDone(value),
                    })
                    .await;
            }
        });
        let reporter = Self {
            tx: Some(tx),
            sender: Some(sender),
        };
        reporter.send(WorkDoneProgress::Begin(WorkDoneProgressBegin {
            title: title.to_owned(),
            cancellable: Some(true),
            message: None,
            percentage: Some(0),
        }));
        reporter
    }

    fn send(&self, value: WorkDoneProgress) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(value);
        }
    }

    /// A phase message and a percentage (clamped to 0..=100).
    pub fn report(&self, percentage: u32, message: &str) {
        self.send(WorkDoneProgress::Report(WorkDoneProgressReport {
            cancellable: Some(true),
            message: Some(message.to_owned()),
            percentage: Some(percentage.min(100)),
        }));
    }

    /// Sends `end` and waits until every notification has been handed to the client.
    pub async fn end(mut self, message: &str) {
        self.send(WorkDoneProgress::End(WorkDoneProgressEnd {
            message: Some(message.to_owned()),
        }));
        self.tx = None;
        if let Some(sender) = self.sender.take() {
            let _ = sender.await;
        }
    }
}
