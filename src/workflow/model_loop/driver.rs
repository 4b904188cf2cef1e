//! The attempts of a run, and how each request is fitted and sent: the one driver an edit and a
//! develop step both run. What differs per run kind is a [`Policy`]:
//!
//! | | edit (`workflow/edit.rs`) | develop step (`workflow/develop/step.rs`) |
//! |---|---|---|
//! | target | the selection's item, or the file | the files the step names (whole, or their items) |
//! | a failed attempt, same protocol and model | goes on in the same conversation, with the refusal and the current text | starts clean from the step's snapshot |
//! | done | the answer's edit applied | the edit applied, the check passes, and what the step asked for is there |
//! | the answer | one block (rewrite) or tool rounds | rounds of blocks or tool calls, the check after each change |
//!
//! The driver owns what is the same: which model an attempt goes to (the last one to the
//! `escalation` model, [`escalates`]), which protocol it asks in ([`Schedule`]), when an attempt
//! starts clean (always after escalating or switching protocol) and with which notes on the
//! earlier failures ([`failure_notes`]), and — in [`ask`] — fitting each request to the model's
//! window (older turns cut first, then the policy's shown text shrunk) and sending it under the
//! run's cancellation token and deadline.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::model::budget::{self, Budget};
use crate::model::{
    ChatModel, ChatRequest, ChatResponse, Enough, Message, ModelError, StreamEvent,
};

use super::{Protocol, Schedule, Unanswered, escalates, send};

/// One attempt as the driver plans it.
#[derive(Clone)]
pub(crate) struct At {
    /// 1-based.
    pub attempt: usize,
    pub max: usize,
    pub protocol: Protocol,
    /// The attempt goes to the escalation model.
    pub escalated: bool,
    pub model: Arc<dyn ChatModel>,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    Done,
    /// Why it failed (for the model's next attempt and the user), and whether an edit was
    /// refused (rather than none made).
    Failed {
        reason: String,
        refused: bool,
    },
}

/// How the attempts of a run ended.
pub(crate) enum Driven {
    Done {
        attempts: usize,
        model: Arc<dyn ChatModel>,
    },
    Failed {
        attempts: usize,
        model: Arc<dyn ChatModel>,
        /// Why each attempt failed, in order.
        failures: Vec<String>,
        /// The last failure was a refused edit.
        refused: bool,
    },
}

/// What a run kind decides: its prompts, how an attempt reads answers and when it is done.
pub(crate) trait Policy {
    type Error;
    /// A failed attempt in the same protocol, to the same model, goes on in the same
    /// conversation with [`Policy::retry`]'s message; otherwise every attempt starts clean.
    const CONTINUES: bool;

    /// Attempts before the run gives up, and whether the last may escalate.
    fn attempts(&self) -> (usize, bool);
    /// The protocols of the attempts `model` answers.
    fn schedule(&mut self, model: &dyn ChatModel) -> Schedule;
    /// Before an attempt is asked (progress, notes).
    fn starting(&mut self, _at: &At) {}
    /// The working copy as the run (or step) began, and the first prompt of `at`; `failures`
    /// says why the earlier attempts failed.
    fn clean_start(&mut self, at: &At, failures: &[String]) -> Result<Vec<Message>, Self::Error>;
    /// The message that continues the conversation after `reason` (when [`Policy::CONTINUES`]).
    fn retry(&mut self, _at: &At, reason: &str, _messages: &[Message]) -> String {
        reason.to_owned()
    }
    /// One attempt: asks until it is done or failed.
    async fn attempt(&mut self, at: &At, messages: &mut Vec<Message>)
    -> Result<Ended, Self::Error>;
    /// After a failed attempt.
    fn failed(&mut self, _at: &At, _reason: &str) {}
}

/// Runs the attempts of `policy` until one is done or the last has failed.
pub(crate) async fn drive<P: Policy>(
    policy: &mut P,
    coder: Arc<dyn ChatModel>,
    escalation: Option<Arc<dyn ChatModel>>,
) -> Result<Driven, P::Error> {
    let (max, escalate_on) = policy.attempts();
    let max = max.max(1);
    let mut failures: Vec<String> = Vec::new();
    let mut refused = false;
    let mut model = coder;
    let mut messages: Vec<Message> = Vec::new();
    let mut previous: Option<Protocol> = None;
    for attempt in 1..=max {
        let escalated = escalates(attempt, max, escalate_on) && escalation.is_some();
        if let (true, Some(strong)) = (escalated, &escalation) {
            model = strong.clone();
        }
        let protocol = policy.schedule(model.as_ref()).protocol(attempt);
        let at = At {
            attempt,
            max,
            protocol,
            escalated,
            model: model.clone(),
        };
        policy.starting(&at);
        match (previous, failures.last()) {
            (Some(p), Some(reason)) if P::CONTINUES && !escalated && p == protocol => {
                let message = policy.retry(&at, reason, &messages);
                messages.push(Message::user(message));
            }
            _ => messages = policy.clean_start(&at, &failures)?,
        }
        previous = Some(protocol);
        match policy.attempt(&at, &mut messages).await? {
            Ended::Done => {
                return Ok(Driven::Done {
                    attempts: attempt,
                    model,
                });
            }
            Ended::Failed { reason, refused: r } => {
                policy.failed(&at, &reason);
                failures.push(reason);
                refused = r;
            }
        }
    }
    Ok(Driven::Failed {
        attempts: max,
        model,
        failures,
        refused,
    })
}

/// Fits `request` to `budget` (older tool results and turns first); when it still overflows,
/// `shrink` is told by how much and gives smaller messages to try (at most four times), or
/// `None` when it cannot shrink further.
pub(crate) fn fit(
    request: &mut ChatRequest,
    budget: &Budget,
    mut shrink: impl FnMut(usize) -> Option<Vec<Message>>,
) -> Result<(), ModelError> {
    let mut tries = 0;
    loop {
        match budget::fit(request, budget) {
            Ok(_) => return Ok(()),
            Err(ModelError::ContextOverflow { over_by, .. }) if tries < 4 => {
                tries += 1;
                match shrink(over_by) {
                    Some(messages) => request.messages = messages,
                    None => return budget::fit(request, budget).map(|_| ()),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Why [`ask`] came back without an answer.
#[derive(Debug)]
pub(crate) enum NoAnswer {
    Cancelled,
    TimedOut,
    /// The answer broke off (a shared server interrupting it, a cut stream): it costs the
    /// attempt, not the run.
    BrokeOff(ModelError),
    Failed(ModelError),
}

/// Fits `request` to `model`'s window ([`fit`]) and sends it ([`send`]).
pub(crate) async fn ask(
    model: &dyn ChatModel,
    mut request: ChatRequest,
    shrink: impl FnMut(usize) -> Option<Vec<Message>>,
    cancel: &CancellationToken,
    deadline: Option<Duration>,
    observe: &(dyn Fn(&StreamEvent) + Send + Sync),
    enough: &Enough,
) -> Result<ChatResponse, NoAnswer> {
    if cancel.is_cancelled() {
        return Err(NoAnswer::Cancelled);
    }
    let budget = Budget::for_window(model.name(), model.context_window());
    fit(&mut request, &budget, shrink).map_err(NoAnswer::Failed)?;
    match send(model, request, cancel, deadline, observe, enough).await {
        Ok(r) => Ok(r),
        Err(Unanswered::Cancelled) => Err(NoAnswer::Cancelled),
        Err(Unanswered::TimedOut) => Err(NoAnswer::TimedOut),
        Err(Unanswered::Failed(e)) if super::broke_off(&e) => Err(NoAnswer::BrokeOff(e)),
        Err(Unanswered::Failed(e)) => Err(NoAnswer::Failed(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EditFormat;
    use crate::model::ChatStream;

    /// A model the driver only names (the policy never asks it).
    struct Named(&'static str);

    impl ChatModel for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn context_window(&self) -> usize {
            8192
        }
        fn chat(&self, _request: ChatRequest, _cancel: CancellationToken) -> ChatStream {
            unreachable!("the script's attempts ask no model")
        }
    }

    /// A policy that fails `fail` attempts, then is done; records what the driver did.
    struct Script {
        fail: usize,
        continues_log: Vec<String>,
        schedule: Schedule,
    }

    impl Policy for Script {
        type Error = ();
        const CONTINUES: bool = true;
        fn attempts(&self) -> (usize, bool) {
            (3, true)
        }
        fn schedule(&mut self, _model: &dyn ChatModel) -> Schedule {
            self.schedule
        }
        fn clean_start(&mut self, at: &At, failures: &[String]) -> Result<Vec<Message>, ()> {
            self.continues_log.push(format!(
                "clean {} {:?} {} after {}",
                at.attempt,
                at.protocol,
                at.model.name(),
                failures.len()
            ));
            Ok(vec![Message::user("start")])
        }
        fn retry(&mut self, at: &At, reason: &str, _messages: &[Message]) -> String {
            self.continues_log
                .push(format!("retry {} {reason}", at.attempt));
            reason.to_owned()
        }
        async fn attempt(&mut self, at: &At, _m: &mut Vec<Message>) -> Result<Ended, ()> {
            Ok(if at.attempt <= self.fail {
                Ended::Failed {
                    reason: format!("no {}", at.attempt),
                    refused: true,
                }
            } else {
                Ended::Done
            })
        }
    }

    fn model(name: &'static str) -> Arc<dyn ChatModel> {
        Arc::new(Named(name))
    }

    #[tokio::test]
    async fn a_failed_attempt_continues_or_starts_clean() {
        // One protocol: the second attempt continues; the third escalates and starts clean.
        let mut p = Script {
            fail: 3,
            continues_log: Vec::new(),
            schedule: Schedule {
                format: EditFormat::Rewrite,
                fits: true,
                creating: false,
                hosted: false,
                primary_attempts: 1,
            },
        };
        let driven = drive(&mut p, model("small"), Some(model("big")))
            .await
            .unwrap();
        assert_eq!(
            p.continues_log,
            [
                "clean 1 Rewrite small after 0",
                "retry 2 no 1",
                "clean 3 Rewrite big after 2"
            ]
        );
        let Driven::Failed {
            attempts,
            failures,
            refused,
            model: last,
        } = driven
        else {
            panic!("the attempts failed")
        };
        assert_eq!((attempts, failures.len(), refused), (3, 3, true));
        assert_eq!(last.name(), "big");

        // `auto` alternates: every attempt starts clean; the second is done.
        let mut p = Script {
            fail: 1,
            continues_log: Vec::new(),
            schedule: Schedule {
                format: EditFormat::Auto,
                fits: true,
                creating: false,
                hosted: false,
                primary_attempts: 1,
            },
        };
        let driven = drive(&mut p, model("small"), None).await.unwrap();
        assert_eq!(
            p.continues_log,
            [
                "clean 1 Rewrite small after 0",
                "clean 2 Tools small after 1"
            ]
        );
        assert!(matches!(driven, Driven::Done { attempts: 2, .. }));
    }
}
