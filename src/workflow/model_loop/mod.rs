//! How a model answer becomes a change: the one model loop that an edit and a develop step
//! both run (`docs/architecture.md`). An edit is one step with one target; a develop step is the
//! same run with its own target(s). What is the same for every run kind lives here; what differs
//! is a small policy in `edit.rs` and `develop/step.rs` (prompts, what counts as done, the check
//! a develop step runs after an edit).
//!
//! - **Attempts and protocols** ([`Schedule`]): an attempt asks in the **rewrite** protocol
//!   (the target shown once, the answer its complete new text in code blocks) or the **tools**
//!   protocol (the region with line numbers, the answer edit tool calls); `[models."NAME"]
//!   edit_format` picks one, and in `auto` a failed attempt falls back to the other when the
//!   target allows both. The last attempt goes to the `escalation` model ([`escalates`]). A clean
//!   start tells the model why the earlier attempts failed ([`failure_notes`]).
//! - **Reading an answer** (`answer.rs`): a write session's content, tool calls (native, written
//!   as text, a bare arguments object, SEARCH/REPLACE blocks and diffs standing for edit calls),
//!   code blocks (`rewrite.rs`: a target's new text, or a whole file under its path); what an
//!   answer without anything to act on said; "I cannot…" prose; what the calls' outcomes add up
//!   to ([`answer::tally`]: edits made, the first refusal, a repeat that means "done").
//! - **Rewrites** (`rewrite.rs`): a code block applied to a target's lines through the engine
//!   (`edit::rewrite_lines`) and the parse check; several targets of one file rewritten in one
//!   answer; the targets a develop step names in a file too large to show whole.
//! - **Feedback** (`feedback.rs`): a refused answer's message, the stuck rule (one coaching
//!   message, then the attempt ends), the same check error again said in a firmer tone.
//! - **Calls and cancellation**: one request sent and its answer collected under the run's
//!   token and deadline ([`send`]); a model failure that costs one answer rather than the run
//!   ([`broke_off`]); tool calls run on a blocking thread with the write sessions
//!   ([`execute`]), a cancelled token ending the wait at once.
//!
//! It never writes and never sees protocol types: tools run on the caller's `Session`.

pub(crate) mod answer;
pub(crate) mod driver;
pub(crate) mod feedback;
pub(crate) mod resample;
pub(crate) mod rewrite;
pub(crate) mod target;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::EditFormat;
use crate::model::{
    ChatModel, ChatRequest, ChatResponse, Enough, ModelError, StreamEvent, ToolCall, collect_until,
};
use crate::tools::{RealFs, Session, Snapshot, ToolOptions, ToolOutcome};

use super::write_session::WriteSessions;

/// Lines of an item the rewrite protocol takes on whole; a larger one goes through the tools.
pub(crate) const REWRITE_MAX_LINES: usize = 300;

/// How an attempt asks for the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// The target(s) shown once, the answer their new text in code blocks.
    Rewrite,
    /// The region shown with line numbers, the answer edit tool calls.
    Tools,
}

/// Which protocol each attempt of a run asks in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    /// The protocol the run was configured with (`[models."NAME"] edit_format`).
    pub format: EditFormat,
    /// The rewrite protocol can take the target: it has one, and prompt and answer fit.
    pub fits: bool,
    /// The run creates a file: `auto` takes the tools protocol (a write session streams it).
    pub creating: bool,
    /// The model is served by its vendor (`Config::vendor_hosted`): `auto` starts in the tools
    /// protocol, which hosted models use well, and falls back to rewrite.
    pub hosted: bool,
    /// Attempts asked in the primary protocol before `auto` falls back to the other: 1 for an
    /// edit; 2 for a develop step, whose second rewrite (told why the first failed, sampled
    /// when it repeats) solved tasks the tools fallback never did with a 1.5B model (the
    /// develop bench).
    pub primary_attempts: usize,
}

impl Schedule {
    /// The protocol of the first attempt.
    pub fn primary(&self) -> Protocol {
        match self.format {
            EditFormat::Tools => Protocol::Tools,
            EditFormat::Auto if self.creating || self.hosted => Protocol::Tools,
            _ if self.fits => Protocol::Rewrite,
            _ => Protocol::Tools,
        }
    }

    /// The protocol of `attempt` (1-based): in `auto`, after the first
    /// [`primary_attempts`](Self::primary_attempts), every other attempt falls back to the other
    /// protocol when the target allows both; a configured format is kept.
    pub fn protocol(&self, attempt: usize) -> Protocol {
        let alternate = self.format == EditFormat::Auto && self.fits && !self.creating;
        let first = self.primary_attempts.max(1);
        match self.primary() {
            p if !alternate || attempt <= first || (attempt - first).is_multiple_of(2) => p,
            Protocol::Rewrite => Protocol::Tools,
            Protocol::Tools => Protocol::Rewrite,
        }
    }
}

/// Whether `attempt` of `max` goes to the escalation model: the last one, never the first,
/// when escalation is on and a distinct model is configured.
pub(crate) fn escalates(attempt: usize, max: usize, enabled: bool) -> bool {
    enabled && attempt == max && attempt > 1
}

/// Why earlier attempts failed, for a clean start (another protocol, or the escalation model):
/// `who` names them (`Earlier attempts at this step`), each reason clipped to `clip` characters.
pub(crate) fn failure_notes(failures: &[String], who: &str, clip: usize) -> String {
    if failures.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "{who} failed and were undone (what you are shown is as it is now). Avoid their \
         mistakes. Why each failed:\n"
    );
    for (i, f) in failures.iter().enumerate() {
        s.push_str(&format!(
            "{}. {}\n",
            i + 1,
            crate::edit::text::clip(f.trim(), clip)
        ));
    }
    s
}

/// Why [`send`] came back without an answer.
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// The token was cancelled (before the request, or while it streamed).
    Cancelled,
    /// The deadline passed first; the answer in flight was dropped.
    TimedOut,
    /// The model failed.
    Failed(ModelError),
}

/// Sends one request and collects the answer (until `enough` says it is whole), `observe` seeing
/// each streamed event; cancelling
/// the token or passing `deadline` ends the wait at once (the model is not held past either).
pub(crate) async fn send(
    model: &dyn ChatModel,
    request: ChatRequest,
    cancel: &CancellationToken,
    deadline: Option<Duration>,
    observe: &(dyn Fn(&StreamEvent) + Send + Sync),
    enough: &Enough,
) -> Result<ChatResponse, Unanswered> {
    if cancel.is_cancelled() {
        return Err(Unanswered::Cancelled);
    }
    let answer = collect_until(model.chat(request, cancel.clone()), observe, enough);
    let waited = async {
        match deadline {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Unanswered::Cancelled),
        _ = waited => Err(Unanswered::TimedOut),
        r = answer => r.map_err(|e| match e {
            ModelError::Cancelled => Unanswered::Cancelled,
            other => Unanswered::Failed(other),
        }),
    }
}

/// Runs tool calls on a blocking thread (tools read the disk), the write sessions answering
/// `begin_write` and `end_write`; the session and the write sessions are given back after.
pub(crate) async fn execute(
    cancel: &CancellationToken,
    session: &mut Option<Session>,
    writes: &mut WriteSessions,
    calls: Vec<ToolCall>,
) -> Result<Vec<ToolOutcome>, Interrupted> {
    if calls.is_empty() {
        return Ok(Vec::new());
    }
    let state = (
        session.take().unwrap_or_else(empty_session),
        std::mem::take(writes),
    );
    let work =
        move |(session, writes): &mut (Session, WriteSessions)| writes.execute_all(session, &calls);
    let ((s, w), outcomes) = on_blocking_thread(cancel, state, work).await?;
    *session = Some(s);
    *writes = w;
    Ok(outcomes)
}

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
async fn on_blocking_thread<S, T>(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn protocols(s: Schedule) -> Vec<Protocol> {
        (1..=5).map(|a| s.protocol(a)).collect()
    }

    #[test]
    fn auto_falls_back_after_the_primary_attempts() {
        use Protocol::{Rewrite as R, Tools as T};
        let edit = Schedule {
            format: EditFormat::Auto,
            fits: true,
            creating: false,
            hosted: false,
            primary_attempts: 1,
        };
        assert_eq!(protocols(edit), [R, T, R, T, R]);
        // A hosted model starts with tools and falls back to rewrite.
        let hosted = Schedule {
            hosted: true,
            ..edit
        };
        assert_eq!(protocols(hosted), [T, R, T, R, T]);
        let step = Schedule {
            primary_attempts: 2,
            ..edit
        };
        assert_eq!(protocols(step), [R, R, T, R, T]);
        // A configured format, or a target the rewrite protocol cannot take, is kept.
        let tools = Schedule {
            format: EditFormat::Tools,
            ..step
        };
        assert_eq!(protocols(tools), [T; 5]);
        let large = Schedule {
            fits: false,
            ..step
        };
        assert_eq!(protocols(large), [T; 5]);
    }
}
