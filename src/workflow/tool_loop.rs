//! The pieces of a model's tool loop that every workflow runs the same way (`edit.rs`, and
//! `develop/`): which model failures cost one answer rather than the run, the calls a
//! SEARCH/REPLACE block or diff in an answer stands for, and tool calls run on a blocking thread
//! (tools read the disk) while cancellation is honoured.
//!
//! It never writes and never sees protocol types: tools run on the caller's `Session`.

use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::edit::formats::Action;
use crate::edit::ops::Operation;
use crate::model::text_tools::result_block;
use crate::model::{ChatResponse, FinishReason, Message, ModelError, ToolCall};
use crate::tools::{RealFs, Session, Snapshot, ToolOptions, ToolOutcome};

/// Failures of one answer that another request may not have (a shared server interrupting it,
/// a cut stream): they cost an attempt, not the run.
pub(crate) fn broke_off(e: &ModelError) -> bool {
    matches!(
        e,
        ModelError::StreamEndedEarly { .. } | ModelError::IncompleteToolCall { .. }
    )
}

/// The session that stands in while the run's own is on a blocking thread: no roots, so every
/// path is refused (the harmless fallback; a run only looks at its session after the thread
/// gave it back).
pub(crate) fn empty_session() -> Session {
    Session::new(
        &[],
        Arc::new(RealFs),
        Snapshot::new(),
        ToolOptions::default(),
    )
}

/// The tool call that does what a SEARCH/REPLACE block, diff or patch parsed from an answer
/// (`edit::formats`) asks of `path`: `edit_file` for a replacement, `write_file` for a new file;
/// `None` for a delete or a move, which no edit tool does. `i` numbers the call's id.
pub(crate) fn file_edit_call(i: usize, path: String, action: Action) -> Option<ToolCall> {
    let (name, arguments) = match action {
        Action::Edit(Operation::Replace {
            old,
            new,
            replace_all,
        }) => (
            "edit_file",
            json!({"path": path, "old_string": old, "new_string": new, "replace_all": replace_all}),
        ),
        Action::Create(content) => ("write_file", json!({"path": path, "content": content})),
        _ => return None,
    };
    Some(ToolCall::new(format!("text_edit_{i}"), name, arguments))
}

/// The results of one answer's calls as the model reads them: a `ToolResult` each when the
/// calls were native, else one user message in the text protocol's shape
/// ([`result_block`]).
pub(crate) fn push_results(messages: &mut Vec<Message>, outcomes: &[ToolOutcome], native: bool) {
    if native {
        messages.extend(outcomes.iter().map(|o| Message::ToolResult {
            call_id: o.call_id.clone(),
            name: o.name.clone(),
            content: o.content.clone(),
            is_error: o.is_error(),
        }));
    } else {
        let blocks: Vec<String> = outcomes
            .iter()
            .map(|o| result_block(&o.name, &o.content, o.is_error()))
            .collect();
        messages.push(Message::user(blocks.join("\n\n")));
    }
}

/// Why [`on_blocking_thread`] returned without the work's result.
#[derive(Debug)]
pub(crate) enum Interrupted {
    /// The token was cancelled first.
    Cancelled,
    /// The work panicked: the message for the failure the caller reports.
    Failed(String),
}

/// Runs `work` on `state` on a blocking thread (tool calls read the disk) and gives both back;
/// a cancelled token ends the wait at once (the state is then dropped with the thread's result).
pub(crate) async fn on_blocking_thread<S, T>(
    cancel: &CancellationToken,
    mut state: S,
    work: impl FnOnce(&mut S) -> T + Send + 'static,
) -> Result<(S, T), Interrupted>
where
    S: Send + 'static,
    T: Send + 'static,
{
    let job = tokio::task::spawn_blocking(move || {
        let out = work(&mut state);
        (state, out)
    });
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Interrupted::Cancelled),
        r = job => r.map_err(|e| Interrupted::Failed(format!("a tool failed unexpectedly: {e}"))),
    }
}

/// What an answer with nothing to act on was, for the message that asks again: cut at the
/// output-token limit, empty, or what it said (on one line, clipped to `max` characters).
/// Edit's and develop's tool loops and edit's rewrite protocol all tell the model this.
pub(crate) fn what_it_said(response: &ChatResponse, max: usize) -> String {
    let said = response.text.trim();
    if response.finish == Some(FinishReason::Length) {
        "it was cut at the output-token limit".to_owned()
    } else if said.is_empty() {
        "it was empty".to_owned()
    } else {
        format!(
            "it said: \"{}\"",
            crate::edit::text::clip(&said.replace('\n', " "), max)
        )
    }
}
