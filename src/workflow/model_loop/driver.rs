//! The attempts of a run, the answers of each attempt, and how each request is fitted and sent:
//! the one model loop an edit and a develop step both run. What differs per run kind is a
//! [`Policy`]:
//!
//! | | edit (`workflow/edit.rs`) | develop step (`workflow/develop/step.rs`) |
//! |---|---|---|
//! | target | the selection's item, or the file | the files the step names (whole, or their items) |
//! | a failed attempt, same protocol and model | goes on in the same conversation, with the refusal and the current text | starts clean from the step's snapshot |
//! | done | the answer's edit applied | the edit applied, the check passes, the tests that exercise the files pass, and nothing it asked for is shown missing |
//! | answers per attempt | one (rewrite) or tool rounds | rounds of blocks or tool calls, the check after each change |
//!
//! The driver owns what is the same: which model an attempt goes to (the last one to the
//! `escalation` model, [`escalates`]), which protocol it asks in ([`Schedule`]), when an attempt
//! starts clean (always after escalating or switching protocol) and with which notes on the
//! earlier failures ([`failure_notes`]); within an attempt, the rounds ([`rounds`]): one request
//! ([`Policy::ask`], built by [`ask_sampled`]: sampled when asked again, fitted to the model's
//! window — older turns cut first, then the policy's shown text shrunk — and sent under the
//! run's cancellation token and deadline), the answer read the same way for every run kind
//! ([`read`]: a write session's content, else its tool calls — native or written as text — run
//! on the run's session and their results given to the model, else its text), and the policy's
//! verdict on it ([`Policy::judge`]: ask again, done, or failed). How a model answer becomes a
//! change is this loop; what counts as done and what the model is told is the policy.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::model::budget::{self, Budget};
use crate::model::{
    ChatModel, ChatOptions, ChatRequest, ChatResponse, Enough, Message, ModelError, StreamEvent,
    ToolCall, ToolChoice, ToolSpec,
};
use crate::tools::{Session, ToolOutcome};

use super::super::write_session::WriteSessions;
use super::answer::push_results;
use super::resample::{Resample, answer_key};
use super::{Interrupted, Protocol, Schedule, Unanswered, escalates, send};

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
    /// The run's failure; tools that could not finish (cancelled, or a panic on the tools'
    /// thread) become one through `From`.
    type Error: From<Interrupted>;
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
    /// After a failed attempt.
    fn failed(&mut self, _at: &At, _reason: &str) {}
    /// Whether the attempts end after the one that just failed, though some are left: another
    /// would be asked what the earlier ones already answered (a develop fix round whose two
    /// attempts failed the same tests the same way, `docs/develop.md`).
    fn stop(&self) -> bool {
        false
    }

    // -- the answers of one attempt ([`rounds`]) --

    /// Answers `at` may take before it ends ([`Policy::out_of_rounds`]).
    fn rounds(&self, at: &At) -> usize;
    /// Asks `at.model` for the next answer (through [`ask_sampled`]); `Ok(Err(reason))`: the
    /// answer broke off and the attempt ends with `reason`.
    async fn ask(
        &mut self,
        at: &At,
        round: usize,
        messages: &mut Vec<Message>,
    ) -> Result<Result<ChatResponse, String>, Self::Error>;
    /// The run's tool session (`None` only while tools run) and its write sessions.
    fn hands(&mut self) -> (&mut Option<Session>, &mut WriteSessions);
    /// The run's cancellation token.
    fn cancel(&self) -> CancellationToken;
    /// The tool calls of `response`: native, or written in its text as this run kind reads
    /// them (`answer::calls_in`).
    fn calls_in(&self, at: &At, response: &ChatResponse) -> Vec<ToolCall>;
    /// What small models mean by the calls they send, before they run (an empty
    /// `old_string` that means "add this"): the calls to run, and a note for the model keyed
    /// by call id, put before that call's result.
    fn as_meant(&mut self, calls: Vec<ToolCall>) -> (Vec<ToolCall>, HashMap<String, String>) {
        (calls, HashMap::new())
    }
    /// What comes after `answer` (read by [`read`]; its assistant turn and any tool results are
    /// in `messages` already): ask again, done, or failed — with what the model is told pushed
    /// onto `messages`.
    async fn judge(
        &mut self,
        at: &At,
        answer: Answer,
        response: &ChatResponse,
        messages: &mut Vec<Message>,
    ) -> Result<Next, Self::Error>;
    /// How an attempt ends that used all its rounds without being done or failed.
    fn out_of_rounds(&mut self, at: &At) -> Ended;
}

/// What one answer amounted to, read by [`read`] the same way for every run kind.
pub(crate) enum Answer {
    /// An open write session took the answer as the file's content: `reply` is for the model;
    /// `wrote` when the file was written (else the session goes on, `reply` saying how).
    Write { reply: String, wrote: bool },
    /// Tool calls ran (as [`Policy::as_meant`] read them); their results are in the messages.
    Calls {
        calls: Vec<ToolCall>,
        outcomes: Vec<ToolOutcome>,
    },
    /// Neither: its text is the answer (code blocks, or prose).
    Text,
}

/// What the policy makes of an answer ([`Policy::judge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// Ask again in the same attempt.
    Ask,
    Done,
    Failed {
        reason: String,
        refused: bool,
    },
}

/// One attempt: answers asked, read and judged until the policy says done or failed, or the
/// rounds run out.
pub(crate) async fn rounds<P: Policy>(
    policy: &mut P,
    at: &At,
    messages: &mut Vec<Message>,
) -> Result<Ended, P::Error> {
    for round in 1..=policy.rounds(at).max(1) {
        let response = match policy.ask(at, round, messages).await? {
            Ok(r) => r,
            Err(reason) => {
                return Ok(Ended::Failed {
                    reason,
                    refused: false,
                });
            }
        };
        let answer = read(policy, at, &response, messages).await?;
        match policy.judge(at, answer, &response, messages).await? {
            Next::Ask => continue,
            Next::Done => return Ok(Ended::Done),
            Next::Failed { reason, refused } => return Ok(Ended::Failed { reason, refused }),
        }
    }
    Ok(policy.out_of_rounds(at))
}

/// Reads one answer the same way for every run kind: an open write session's content; else
/// its tool calls, run on the run's session (on a blocking thread, cancellable) with their
/// results pushed for the model; else its text. The answer's assistant turn is pushed first.
pub(crate) async fn read<P: Policy>(
    policy: &mut P,
    at: &At,
    response: &ChatResponse,
    messages: &mut Vec<Message>,
) -> Result<Answer, P::Error> {
    let (session, writes) = policy.hands();
    let s = session.get_or_insert_with(super::empty_session);
    if let Some(collected) = writes.take_answer(s, response) {
        messages.push(Message::assistant(response.text.clone()));
        return Ok(Answer::Write {
            reply: collected.reply,
            wrote: collected.wrote.is_some(),
        });
    }
    let calls = policy.calls_in(at, response);
    let native = !response.tool_calls.is_empty();
    messages.push(response.to_message());
    if calls.is_empty() {
        return Ok(Answer::Text);
    }
    let (calls, notes) = policy.as_meant(calls);
    let cancel = policy.cancel();
    let (session, writes) = policy.hands();
    let mut outcomes = super::execute(&cancel, session, writes, calls.clone())
        .await
        .map_err(P::Error::from)?;
    for o in &mut outcomes {
        if let Some(note) = notes.get(&o.call_id) {
            o.content = format!("{note}\n{}", o.content);
        }
    }
    push_results(messages, &outcomes, native);
    Ok(Answer::Calls { calls, outcomes })
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
        match rounds(policy, &at, &mut messages).await? {
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
                if policy.stop() {
                    return Ok(Driven::Failed {
                        attempts: attempt,
                        model,
                        failures,
                        refused,
                    });
                }
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

/// One request as a run asks it: besides the messages, what [`ask_sampled`] sends.
pub(crate) struct Asking<'a> {
    pub tools: Vec<ToolSpec>,
    pub choice: ToolChoice,
    pub max_tokens: Option<u32>,
    /// The configured temperature (a request asked again is sampled above it).
    pub temperature: Option<f32>,
    pub deadline: Option<Duration>,
    pub observe: &'a (dyn Fn(&StreamEvent) + Send + Sync),
    pub enough: &'a Enough,
}

/// Asks `model` once, the same way for every run kind: the request built from `messages` and
/// `asking` — a request asked before (or after an answer that repeated one) sampled at a higher
/// temperature ([`Resample`]) — fitted and sent by [`ask`]; the answer noted for the next
/// request's sampling.
pub(crate) async fn ask_sampled(
    model: &dyn ChatModel,
    messages: &[Message],
    asking: Asking<'_>,
    resample: &mut Resample,
    shrink: impl FnMut(usize) -> Option<Vec<Message>>,
    cancel: &CancellationToken,
) -> Result<ChatResponse, NoAnswer> {
    if cancel.is_cancelled() {
        return Err(NoAnswer::Cancelled);
    }
    let request = ChatRequest {
        messages: messages.to_vec(),
        tools: asking.tools,
        options: ChatOptions {
            temperature: resample.temperature(model.name(), messages, asking.temperature),
            max_tokens: asking.max_tokens,
            tool_choice: asking.choice,
            ..ChatOptions::default()
        },
    };
    let r = ask(
        model,
        request,
        shrink,
        cancel,
        asking.deadline,
        asking.observe,
        asking.enough,
    )
    .await?;
    resample.answered(model.name(), &answer_key(&r));
    Ok(r)
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

    /// A policy that fails `fail` attempts, then is done; records what the driver did. Its
    /// answers are canned: each attempt reads one, whose text names the attempt.
    struct Script {
        fail: usize,
        continues_log: Vec<String>,
        schedule: Schedule,
        session: Option<Session>,
        writes: WriteSessions,
    }

    impl Script {
        fn new(fail: usize, schedule: Schedule) -> Script {
            Script {
                fail,
                continues_log: Vec::new(),
                schedule,
                session: None,
                writes: WriteSessions::new(Default::default()),
            }
        }
    }

    impl Policy for Script {
        type Error = Interrupted;
        const CONTINUES: bool = true;
        fn attempts(&self) -> (usize, bool) {
            (3, true)
        }
        fn schedule(&mut self, _model: &dyn ChatModel) -> Schedule {
            self.schedule
        }
        fn clean_start(
            &mut self,
            at: &At,
            failures: &[String],
        ) -> Result<Vec<Message>, Interrupted> {
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
        fn rounds(&self, _at: &At) -> usize {
            1
        }
        async fn ask(
            &mut self,
            at: &At,
            _round: usize,
            _messages: &mut Vec<Message>,
        ) -> Result<Result<ChatResponse, String>, Interrupted> {
            Ok(Ok(ChatResponse {
                text: format!("answer {}", at.attempt),
                ..ChatResponse::default()
            }))
        }
        fn hands(&mut self) -> (&mut Option<Session>, &mut WriteSessions) {
            (&mut self.session, &mut self.writes)
        }
        fn cancel(&self) -> CancellationToken {
            CancellationToken::new()
        }
        fn calls_in(&self, _at: &At, _response: &ChatResponse) -> Vec<ToolCall> {
            Vec::new()
        }
        async fn judge(
            &mut self,
            at: &At,
            answer: Answer,
            response: &ChatResponse,
            messages: &mut Vec<Message>,
        ) -> Result<Next, Interrupted> {
            // The answer was read as text, and its turn is in the conversation.
            assert!(matches!(answer, Answer::Text));
            assert_eq!(messages.last(), Some(&response.to_message()));
            Ok(if at.attempt <= self.fail {
                Next::Failed {
                    reason: format!("no {}", at.attempt),
                    refused: true,
                }
            } else {
                Next::Done
            })
        }
        fn out_of_rounds(&mut self, _at: &At) -> Ended {
            unreachable!("every answer is judged done or failed")
        }
    }

    fn model(name: &'static str) -> Arc<dyn ChatModel> {
        Arc::new(Named(name))
    }

    #[tokio::test]
    async fn a_failed_attempt_continues_or_starts_clean() {
        // One protocol: the second attempt continues; the third escalates and starts clean.
        let mut p = Script::new(
            3,
            Schedule {
                format: EditFormat::Rewrite,
                fits: true,
                creating: false,
                hosted: false,
                primary_attempts: 1,
            },
        );
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
        let mut p = Script::new(
            1,
            Schedule {
                format: EditFormat::Auto,
                fits: true,
                creating: false,
                hosted: false,
                primary_attempts: 1,
            },
        );
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
