//! One step of a develop run: the `coder` changes the working copy until the step is done. The
//! loop is the one an edit runs (`workflow::model_loop`: the attempts and the protocol of each,
//! escalation and fitting each request, driven by `model_loop::driver`; how an answer is read,
//! feedback, the stuck and same-error rules); this is the step's policy over it ([`Step`]). A step asks in one of edit's two protocols (`[models."NAME"] edit_format`,
//! `docs/develop.md`, "Steps that rewrite"): **rewrite** — the step's files shown whole (or, for
//! a file too large, the items the step names in it), the answer their new text, each in a code
//! block under its path (`rewrite.rs`) — when they fit the window, else **tools**; in `auto` a
//! failed attempt falls back to the other. Whatever the protocol, an answer is read the same
//! way: a write session's content, tool calls (native, or written as text), code blocks.
//!
//! - an answer without a change, or "I cannot…" prose, is **stuck**: one coaching message in
//!   the same attempt (what to answer, with the file's current text), then the attempt ends;
//! - the check runs after every answer that changed a file; its errors go back to the model,
//!   and the **same error again** (same fingerprint) is said to be the second or third time, in
//!   a firmer tone — after the third the attempt ends;
//! - the tests decide (`docs/develop.md`, "The tests decide"): when tests exercise the step's
//!   files they run after every answer whose check passes, and passing, the step is done —
//!   unless what it asks for can be shown missing (a test it asks for that no file gained, a
//!   function it names that is not in the code, a flag it adds that no line reads): then the
//!   model is asked once more. Without such tests the check decides, with the same question
//!   and a file the step names left unchanged;
//! - no call is spent twice ("No call spent twice"): a code block that gives the failing code
//!   back ends the attempt, a fix round's answer that leaves code already tested or fails the
//!   tests as the code it was shown ends it too, so does one whose code passes no more tests
//!   than the best code before it, and a fix round whose two last attempts failed the same way,
//!   or passed no more tests, stops (unless the next goes to the escalation model);
//! - a failed attempt restores the step's snapshot of the working copy; the next attempt starts
//!   from a clean prompt that summarises why the earlier ones failed, and the last attempt goes
//!   to the `escalation` role when one is configured.
//!
//! A step that fails for good leaves the working copy as it was before the step, and so does
//! one the run's budget stops (`StepStatus::Stopped`, `docs/develop.md`); a fix round that
//! fails for good leaves the code of its answer that passed the most tests, when that is more
//! than the code it was given passed.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde_json::json;

use tokio_util::sync::CancellationToken;

use crate::model::{ChatModel, ChatResponse, Enough, Message, ModelError, ToolCall, ToolChoice};
use crate::tools;
use crate::workflow::edit::configured_format;
use crate::workflow::model_loop::answer::{self, Reading, refuses, what_it_said};
use crate::workflow::model_loop::driver::{self, Answer, At, Driven, Ended, Next, Policy};
use crate::workflow::model_loop::feedback::{self, CheckFeedback, Repeats, Stuck};
use crate::workflow::model_loop::{Protocol, Schedule, broke_off, failure_notes};
use crate::workflow::write_session::WriteSessions;

use super::checks::{CheckRun, describe_failures};
use super::plan::Plan;
use super::project::CheckKind;
use super::rewrite::StepFiles;
use super::{DevelopFailure, Run, StepReport, StepStatus, rel_of};

/// How an attempt whose prompt the model's window could not hold failed (no call was made).
const DOES_NOT_FIT: &str = "its prompt does not fit the model";

/// Lines above which a new file should be written through a write session (`begin_write`, the
/// content streamed as plain text) rather than inside `write_file`'s JSON string, which small
/// models cut or escape wrongly (`docs/editing.md`, "Write sessions").
pub(super) const LONG_FILE_LINES: usize = 40;

/// What a step is asked to do.
#[derive(Debug, Clone)]
pub(super) struct StepSpec {
    /// `step 2`, `fix round 1`, …
    pub name: String,
    pub text: String,
    /// The plan step it carries out (`None`: a fix or judge round).
    pub number: Option<usize>,
    /// Workspace-relative files it names.
    pub files: Vec<String>,
    /// Failing test output or objections to fix.
    pub extra: Option<String>,
    /// What the step must have done besides passing the check (a plan step's text, and the
    /// request when the plan has one step); `None` for fix and judge rounds.
    pub goal: Option<String>,
    /// A fix round of a one-step plan: the attempt from which its attempts start from the files
    /// as they were before the run, not from the code that fails (see [`Step::clean_start`]):
    /// the second, or the first when the failing tests are not in a file the run changed.
    pub afresh: Option<usize>,
    /// How the tests failed when a fix round was asked ([`test_print`] of that run).
    pub failing: Option<u64>,
    /// How many tests passed on the code a fix round was given, when the runner says
    /// ([`tests_passed`]): the mark its answers must beat (`docs/develop.md`, "No call spent
    /// twice").
    pub passing: Option<usize>,
}

/// What the answers of the attempt asked now have done so far.
#[derive(Default)]
struct Answers {
    /// An answer changed a file.
    edited: bool,
    /// The check failed after the last change.
    check_failed: bool,
    /// The model was asked once for what the step still lacked.
    asked_missing: bool,
    /// Asked for what the step lacked, the model gave the files back unchanged, and was told
    /// once more.
    told_missing_again: bool,
    /// Answers in a row whose blocks were all refused.
    refused_in_a_row: usize,
    /// An answer of this attempt passed more tests than any code of the step before it.
    progressed: bool,
    /// Answers of this attempt that changed nothing and were answered with why (refused blocks
    /// or calls), by [`answer_print`]: the same answer again ends the attempt, as the same
    /// words would get it again.
    refused_answers: HashSet<u64>,
    /// How the tests failed on the code the last answer left ([`test_print`]); `None` when
    /// they passed or did not run.
    tests_failed: Option<u64>,
    /// The output-token limit of a rewrite answer, from the files as the attempt began.
    limit: Option<u32>,
    stuck: Stuck,
}

/// Why an attempt ended on an answer it had already answered.
const REFUSED_AGAIN: &str =
    "its answer was, word for word, one already refused in this attempt; the attempt ended";

/// An answer's identity, as the resampling compares answers
/// ([`crate::workflow::model_loop::resample::answer_key`]), hashed.
fn answer_print(response: &ChatResponse) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    crate::workflow::model_loop::resample::answer_key(response).hash(&mut hasher);
    hasher.finish()
}

/// An attempt that ends with `reason` (not a refused edit: the step's check decides).
fn failed(reason: String) -> Next {
    Next::Failed {
        reason,
        refused: false,
    }
}

/// Per-step memory across attempts.
#[derive(Default)]
struct Memory {
    /// How often each check failure came back.
    errors: Repeats,
    notes: Vec<String>,
    /// The check's failure the model was last told about (this attempt).
    failing: Option<String>,
    /// The code each tested answer of the step left (the changed files, hashed) and how the
    /// tests failed on it: an answer that gives that code again is not tested again.
    judged: HashMap<u64, u64>,
    /// How the tests failed that the model was last shown in this attempt (the failures a fix
    /// round was given, then those of its answers).
    told_tests: Option<u64>,
    /// How the tests failed at the end of each failed attempt.
    attempt_failures: Vec<Option<u64>>,
    /// The most tests any tested code of a fix round passed, the code it was given included.
    best_passed: Option<usize>,
    /// Failed attempts in a row that passed no more tests than the best before them.
    without_progress: usize,
    /// The working copy and ledger when an answer of a fix round passed the most tests so far
    /// (`best_passed`): what a round that fails leaves, not the code it was given.
    best_code: Option<(tools::WorkingCopy, crate::edit::Ledger)>,
    /// The step ends without another attempt.
    stopped: bool,
}

/// A step's policy over the shared driver (`model_loop::driver`): every attempt starts clean
/// from the step's snapshot, with the files the step names as they fit the model's window.
struct Step<'s, 'r> {
    run: &'s mut Run<'r>,
    plan: &'s Plan,
    spec: &'s StepSpec,
    /// The working copy and the ledger when the step began.
    before: (tools::WorkingCopy, crate::edit::Ledger),
    /// The run's changed files and their text when the step began.
    before_changes: Vec<(PathBuf, String)>,
    memory: Memory,
    /// The answers of the attempt asked now.
    answers: Answers,
    /// Why the earlier attempts failed.
    failures: Vec<String>,
    /// The files of the attempt being planned (from [`Policy::schedule`]).
    files: StepFiles,
    /// The attempt asked now, and its model.
    attempt: usize,
    model: String,
    /// The files this attempt shows as they were before the run (an afresh fix round).
    afresh: Vec<String>,
}

impl Step<'_, '_> {
    /// Back to the step's snapshot: a failed or stopped attempt leaves no trace.
    fn restore(&mut self) {
        let s = self.run.session();
        s.copy = self.before.0.clone();
        s.ledger = self.before.1.clone();
    }
}

impl Policy for Step<'_, '_> {
    type Error = DevelopFailure;
    const CONTINUES: bool = false;

    fn attempts(&self) -> (usize, bool) {
        (
            self.run.ctx.options.max_attempts,
            self.run.ctx.options.escalate,
        )
    }

    fn schedule(&mut self, model: &dyn ChatModel) -> Schedule {
        let format = match self.run.ctx.options.edit_format {
            Some(f) => f,
            None => configured_format(&self.run.ctx.config, model.name()),
        };
        let mut files = self.run.step_files(self.spec);
        let fits = self.run.fit_rewrite(self.spec, &mut files, model);
        self.files = files;
        let mut schedule = Schedule {
            format,
            fits,
            creating: false,
            hosted: self.run.ctx.config.vendor_hosted(model.name()),
            primary_attempts: 2,
        };
        // A fix round (or the judge's objections) that rewrites keeps rewriting: its tool-call
        // fallback never got there when the rewrites had not (none of 11 with the 1.5B model on
        // the develop bench, up to 5 calls each), while rewrites started afresh did
        // (`docs/develop.md`, "No call spent twice"). A plan step keeps the fallback, which
        // finished 4 of 7 steps the rewrites had not.
        if self.spec.number.is_none() && schedule.primary() == Protocol::Rewrite {
            schedule.primary_attempts = self.run.ctx.options.max_attempts;
        }
        schedule
    }

    fn starting(&mut self, at: &At) {
        self.answers = Answers::default();
        self.memory.told_tests = self.spec.failing;
        self.memory.failing = None;
        self.attempt = at.attempt;
        self.model = at.model.name().to_owned();
        if at.escalated {
            self.memory.notes.push(format!(
                "attempt {} went to the escalation model {}",
                at.attempt, self.model
            ));
        }
    }

    /// A fix round's attempts in a one-step plan start afresh (from the second, or from the
    /// first when the failing tests are not in a changed file): the files as they were before
    /// the run, with how the earlier version failed. Shown the failing code, the 1.5B model
    /// gives it back as it is, at temperature 0 and at 0.7 alike (py-pangram: the same wrong
    /// `is_pangram` in all seven answers of the fix round); from the stub, with the failures,
    /// it writes the code anew.
    fn clean_start(
        &mut self,
        at: &At,
        failures: &[String],
    ) -> Result<Vec<Message>, DevelopFailure> {
        // The tools protocol's prompt does not say the files were set back: from the second.
        let from = |from: usize| match at.protocol {
            Protocol::Rewrite => from,
            Protocol::Tools => from.max(2),
        };
        if self.spec.afresh.is_some_and(|f| at.attempt >= from(f)) {
            // Every such attempt: a failed one restored the step's snapshot (the failing code).
            let reset = self.run.back_to_the_originals();
            if self.afresh.is_empty() && !reset.is_empty() {
                self.memory.notes.push(format!(
                    "attempt {} started afresh from {} as before the run",
                    at.attempt,
                    reset.join(", ")
                ));
            }
            self.afresh = reset;
        }
        // An attempt whose prompt did not fit made no mistake to avoid, and saying so would
        // make the next prompt larger still.
        let failures: Vec<String> = failures
            .iter()
            .filter(|f| !f.starts_with(DOES_NOT_FIT))
            .cloned()
            .collect();
        Ok(match at.protocol {
            Protocol::Rewrite => {
                let files = self.files.clone();
                let afresh = self.afresh.clone();
                self.run
                    .rewrite_prompt(self.plan, self.spec, &files, &failures, &afresh, None)
            }
            Protocol::Tools => self.run.step_prompt(self.plan, self.spec, &failures),
        })
    }

    fn rounds(&self, _at: &At) -> usize {
        self.run.ctx.options.max_rounds.max(1)
    }

    async fn ask(
        &mut self,
        at: &At,
        _round: usize,
        messages: &mut Vec<Message>,
    ) -> Result<Result<ChatResponse, String>, DevelopFailure> {
        let rewrite = at.protocol == Protocol::Rewrite;
        let content = self.run.writes.expects_content();
        // A write session's content comes as plain text.
        let choice = if content {
            ToolChoice::None
        } else {
            ToolChoice::Auto
        };
        // The rewrite protocol offers no tools: a model that still writes a call is read.
        let offered = if rewrite { Vec::new() } else { tools::specs() };
        // The answer's limit, from the files as the attempt began.
        let limit = if rewrite && !content {
            let (run, files) = (&mut *self.run, &self.files);
            Some(
                *self
                    .answers
                    .limit
                    .get_or_insert_with(|| run.rewrite_answer_tokens(files, at.model.as_ref())),
            )
        } else {
            None
        };
        // A whole-file answer is read until it is whole: not through a copy of the tests.
        // Owned: `Enough` is a `'static` trait object, so the closure cannot borrow the files.
        let files = self.files.clone();
        let whole = move |text: &str| files.answer_complete(text);
        let enough: &Enough = if rewrite && !content {
            &whole
        } else {
            &|_| None
        };
        match self
            .run
            .ask_until(at.model.as_ref(), messages, offered, choice, limit, enough)
            .await
        {
            Ok(r) => Ok(Ok(r)),
            Err(DevelopFailure::Model(e)) if broke_off(&e) => {
                Ok(Err(format!("the answer broke off ({e})")))
            }
            // A prompt the model's window cannot hold fails this attempt, not the run: the
            // next may be smaller (a fix round's afresh attempt shows the stub, not the code)
            // or go to another model, and a run whose fix round cannot be asked still proposes
            // what its steps did. meetup's fix round (the 66 tests' file, the code and the
            // failures: 7,822 tokens where the 8k window leaves 6,349) ended the run without a
            // proposal and lost the step's change (develop bench, 2026-11-30).
            Err(DevelopFailure::Model(e @ ModelError::ContextOverflow { .. })) => {
                Ok(Err(format!("{DOES_NOT_FIT}: {e}")))
            }
            Err(e) => Err(e),
        }
    }

    fn hands(&mut self) -> (&mut Option<tools::Session>, &mut WriteSessions) {
        (&mut self.run.session, &mut self.run.writes)
    }

    fn cancel(&self) -> CancellationToken {
        self.run.cancel.clone()
    }

    /// Native calls, or calls written as text (tool blocks, SEARCH/REPLACE blocks and diffs
    /// naming their file: a step spans several files, so a pathless one is not read).
    fn calls_in(&self, _at: &At, response: &ChatResponse) -> Vec<ToolCall> {
        answer::calls_in(response, &tools::specs(), &Reading::default())
    }

    fn as_meant(&mut self, calls: Vec<ToolCall>) -> (Vec<ToolCall>, HashMap<String, String>) {
        self.run.as_meant(calls)
    }

    async fn judge(
        &mut self,
        at: &At,
        answer: Answer,
        response: &ChatResponse,
        messages: &mut Vec<Message>,
    ) -> Result<Next, DevelopFailure> {
        let turn = Turn {
            spec: self.spec,
            plan: self.plan,
            files: &self.files,
            failures: &self.failures,
            protocol: at.protocol,
            before: &self.before_changes,
            afresh: &self.afresh,
        };
        self.run
            .judge_answer(
                &turn,
                answer,
                response,
                messages,
                &mut self.memory,
                &mut self.answers,
            )
            .await
    }

    fn out_of_rounds(&mut self, _at: &At) -> Ended {
        Ended::Failed {
            reason: format!(
                "the step was not finished in {} answers{}",
                self.run.ctx.options.max_rounds,
                if self.answers.check_failed {
                    " (the check still failed)"
                } else {
                    ""
                }
            ),
            refused: false,
        }
    }

    fn failed(&mut self, at: &At, reason: &str) {
        self.memory.notes.push(format!(
            "attempt {} failed: {}",
            at.attempt,
            crate::edit::text::clip(reason, 160)
        ));
        self.failures.push(reason.to_owned());
        self.memory.attempt_failures.push(self.answers.tests_failed);
        // The next attempt goes to the escalation model: another model, not the same question
        // again, so neither rule below keeps it from being asked.
        let escalates_next = crate::workflow::model_loop::escalates(
            at.attempt + 1,
            at.max,
            self.run.ctx.options.escalate,
        ) && self.run.roles().escalation.is_some();
        // A fix round whose last two attempts failed the same tests the same way ends: the
        // next would be asked what both already answered (`docs/develop.md`, "No call spent
        // twice").
        if self.spec.number.is_none()
            && !escalates_next
            && matches!(
                self.memory.attempt_failures.as_slice(),
                [.., Some(a), Some(b)] if a == b
            )
        {
            self.memory.stopped = true;
            self.memory.notes.push(format!(
                "attempts {} and {} failed the same tests the same way; no further attempt",
                at.attempt - 1,
                at.attempt
            ));
        }
        // A fix round whose last two attempts passed no more tests than the best code before
        // them ends: on the develop bench's exercises the 1.5B model's next attempt after two
        // such was no better in any recorded round (`docs/develop.md`, "No call spent twice").
        // Only attempts whose code was tested count: one that ended on the check's errors or
        // a broken answer says nothing about the tests.
        if let Some(best) = self.memory.best_passed {
            if self.answers.progressed {
                self.memory.without_progress = 0;
            } else if self.answers.tests_failed.is_some() {
                self.memory.without_progress += 1;
            }
            if self.memory.without_progress >= 2 && !self.memory.stopped && !escalates_next {
                self.memory.stopped = true;
                self.memory.notes.push(format!(
                    "attempts {} and {} passed no more tests than the best code before them \
                     ({best}); no further attempt",
                    at.attempt - 1,
                    at.attempt
                ));
            }
        }
        self.restore();
    }

    fn stop(&self) -> bool {
        self.memory.stopped
    }
}

impl Run<'_> {
    /// Runs a step to success or to its last failed attempt (then restores its snapshot).
    /// Errors only for cancellation and unreachable models.
    pub(super) async fn run_step(
        &mut self,
        plan: &Plan,
        spec: &StepSpec,
    ) -> Result<StepReport, DevelopFailure> {
        // A plan step that is one rename and nothing else: the server's exact work, no model
        // (`rename.rs`).
        if spec.number.is_some()
            && self.ctx.options.rename_by_server
            && let Some(report) = self.rename_by_server(spec).await?
        {
            return Ok(report);
        }
        let before = {
            let s = self.session();
            (s.copy.clone(), s.ledger.clone())
        };
        let before_changes = self.changes();
        self.tests_after_files = false;
        let mut memory = Memory::default();
        // The code a fix round is given fails its tests: an answer that writes it again is not
        // tested again.
        if let Some(failing) = spec.failing {
            memory.judged.insert(self.code_print(), failing);
        }
        memory.best_passed = spec.passing;
        let coder = self.roles().coder.clone();
        let escalation = self.roles().escalation.clone();
        let mut step = Step {
            run: self,
            plan,
            spec,
            before,
            before_changes,
            memory,
            answers: Answers::default(),
            failures: Vec::new(),
            files: StepFiles::default(),
            attempt: 0,
            model: String::new(),
            afresh: Vec::new(),
        };
        let driven = driver::drive(&mut step, coder, escalation).await;
        let report = |status, attempts, model, changed, notes, error| StepReport {
            name: spec.name.clone(),
            text: spec.text.clone(),
            status,
            attempts,
            model,
            changed,
            notes,
            error,
        };
        match driven {
            Err(DevelopFailure::Budget(spent)) => {
                // The budget ran out mid-step: the step's snapshot, as for a failed attempt,
                // and no further attempt.
                step.restore();
                let attempt = step.attempt;
                step.memory
                    .notes
                    .push(format!("attempt {attempt} was stopped: {spent}"));
                let (model, notes) = (step.model, step.memory.notes);
                self.writes = WriteSessions::new(self.ctx.config.tools.clone());
                Ok(report(
                    StepStatus::Stopped,
                    attempt,
                    model,
                    Vec::new(),
                    notes,
                    Some(spent.to_string()),
                ))
            }
            Err(e) => Err(e),
            Ok(Driven::Done { attempts, model }) => {
                let (before_changes, notes) = (step.before_changes, step.memory.notes);
                let changed = self.changed_since(&before_changes);
                Ok(report(
                    StepStatus::Done,
                    attempts,
                    model.name().to_owned(),
                    changed,
                    notes,
                    None,
                ))
            }
            Ok(Driven::Failed {
                attempts,
                model,
                failures,
                ..
            }) => {
                let (before_changes, mut notes) = (step.before_changes, step.memory.notes);
                // A fix round that wrote code passing more tests than the code it was given
                // leaves that code: the closest the run came (`docs/develop.md`, "No call
                // spent twice"); its files are the step's changes.
                let mut changed = Vec::new();
                if let (Some((copy, ledger)), Some(passed), Some(given)) =
                    (step.memory.best_code, step.memory.best_passed, spec.passing)
                {
                    let s = self.session();
                    s.copy = copy;
                    s.ledger = ledger;
                    changed = self.changed_since(&before_changes);
                    notes.push(format!(
                        "kept the code of its answer that passed the most tests ({passed}, \
                         against {given} before the round)"
                    ));
                }
                Ok(report(
                    StepStatus::Failed,
                    attempts,
                    model.name().to_owned(),
                    changed,
                    notes,
                    failures.last().cloned(),
                ))
            }
        }
    }

    /// The files whose text differs from `before` (the run's changed files and their text when
    /// a step began): changed by the step, or set back to before the run by an afresh attempt.
    fn changed_since(&mut self, before: &[(PathBuf, String)]) -> Vec<String> {
        let after = self.changes();
        let root = self.root();
        let changed = after
            .iter()
            .filter(|(p, t)| !before.iter().any(|(bp, bt)| bp == p && bt == t))
            .map(|(p, _)| p);
        let set_back = before
            .iter()
            .filter(|(bp, _)| !after.iter().any(|(p, _)| p == bp))
            .map(|(p, _)| p);
        changed.chain(set_back).map(|p| rel_of(&root, p)).collect()
    }

    /// An `edit_file` call with an empty `old_string` names no place, and small models send it
    /// again and again after the refusal: it means "add this to the file". Such a call becomes
    /// `append` (the new text at the end of an existing file) or `write_file` (a file that does
    /// not exist yet), and the result tells the model what was done, keyed by call id.
    fn as_meant(&mut self, calls: Vec<ToolCall>) -> (Vec<ToolCall>, HashMap<String, String>) {
        let mut notes = HashMap::new();
        let calls = calls
            .into_iter()
            .map(|call| {
                let arg = |keys: &[&str]| {
                    keys.iter()
                        .find_map(|k| call.arguments.get(*k).and_then(serde_json::Value::as_str))
                        .map(str::to_owned)
                };
                if tools::canonical_name(&call.name) != Some("edit_file") {
                    return call;
                }
                let (Some(path), Some(old), Some(new)) = (
                    arg(&["path", "file_path", "file"]),
                    arg(&["old_string", "old_str", "old"]),
                    arg(&["new_string", "new_str", "new"]),
                ) else {
                    return call;
                };
                if !old.trim().is_empty() || new.trim().is_empty() {
                    return call;
                }
                let exists = {
                    let s = self.session();
                    s.sandbox
                        .resolve(&path, s.fs.as_ref())
                        .is_ok_and(|r| s.copy.read(&r.abs, s.fs.as_ref()).is_ok())
                };
                let (name, arguments, note) = if exists {
                    (
                        "append",
                        json!({"path": path, "text": new}),
                        format!(
                            "old_string was empty, so new_string was added at the end of {path}. \
                             If it belongs elsewhere, move it with edit_file (old_string copied \
                             from the file)."
                        ),
                    )
                } else {
                    (
                        "write_file",
                        json!({"path": path, "content": new}),
                        format!(
                            "{path} did not exist: it was created with new_string as its text."
                        ),
                    )
                };
                notes.insert(call.id.clone(), note);
                ToolCall::new(call.id, name, arguments)
            })
            .collect();
        (calls, notes)
    }

    /// What one answer of a step amounts to (read by the driver: a write session's content,
    /// tool calls that ran, or its text): a change is checked, and a passing check ends the step
    /// only when what it asked for is there; an answer without a change is stuck (coached
    /// once); a failing check goes back to the model, the same error again in a firmer tone.
    async fn judge_answer(
        &mut self,
        turn: &Turn<'_>,
        answer: Answer,
        response: &ChatResponse,
        messages: &mut Vec<Message>,
        memory: &mut Memory,
        state: &mut Answers,
    ) -> Result<Next, DevelopFailure> {
        let spec = turn.spec;
        let rewrite = turn.protocol == Protocol::Rewrite;
        let mut written = String::new();
        match answer {
            // The content of an open write session (or its continuation); once applied, the
            // check runs as after any edit, its message after the session's.
            Answer::Write { reply, wrote } => {
                if !wrote {
                    messages.push(Message::user(reply));
                    return Ok(Next::Ask);
                }
                written = format!("{reply}\n");
            }
            Answer::Text => {
                // Whole files in code blocks, under their paths.
                let blocks = crate::edit::whole::file_blocks(&response.text);
                let applied = if blocks.is_empty() {
                    None
                } else {
                    Some(self.apply_blocks(turn, blocks).await?)
                };
                // Blocks that only repeat the files as they are: the model has no change.
                let repeated = applied
                    .as_ref()
                    .is_some_and(|a| a.changed.is_empty() && a.unchanged && a.problems.is_empty());
                if let Some(applied) = applied.filter(|_| !repeated) {
                    if applied.copied_tests && !self.tests_after_files {
                        self.tests_after_files = true;
                        memory.notes.push(
                            "its answer was a copy of the tests under a file's name; from then on \
                             the step showed the files before the tests"
                                .to_owned(),
                        );
                    }
                    if applied.changed.is_empty() {
                        if !state.refused_answers.insert(answer_print(response)) {
                            return Ok(failed(REFUSED_AGAIN.to_owned()));
                        }
                        state.refused_in_a_row += 1;
                        let reasons = applied.problems.join("\n");
                        if state.refused_in_a_row >= 3 {
                            return Ok(failed(format!(
                                "the answer was not applied, three times: {reasons}"
                            )));
                        }
                        let again = self.answer_again(turn);
                        self.say(turn, messages, feedback::not_applied(&reasons, &again));
                        return Ok(Next::Ask);
                    }
                    state.refused_in_a_row = 0;
                    if !applied.problems.is_empty() {
                        written = format!(
                            "Applied to {}. Not applied:\n{}\n",
                            applied.changed.join(", "),
                            applied.problems.join("\n")
                        );
                    }
                } else {
                    // No block, or only blocks that repeat the files as they are.
                    // Asked for what the step still lacks, the model gave its files back as
                    // they are: not an answer that it is done (that is `done`, or no block). Said
                    // once more, with what is missing; the repeat makes the next request sampled.
                    // At temperature 0 the 1.5B model's js-todo-flag answer filtered every
                    // listing and read no `--pending`; asked, it gave the same file back, and
                    // the step ended "done" with the flag never read.
                    if repeated
                        && state.asked_missing
                        && !state.check_failed
                        && !state.told_missing_again
                    {
                        let missing = self.not_done_yet(turn);
                        if !missing.is_empty() {
                            state.told_missing_again = true;
                            memory.notes.push(format!(
                                "asked for what was missing, it gave the files back unchanged \
                                 ({}); asked once more",
                                missing.join("; ")
                            ));
                            let again = self.answer_again(turn);
                            self.say(
                                turn,
                                messages,
                                format!(
                                    "Your code block is the same as the current file, and this \
                                     step is still not finished: {}. {again}",
                                    missing.join("; ")
                                ),
                            );
                            return Ok(Next::Ask);
                        }
                    }
                    // Done: an edit went through and nothing fails that this step must fix (a
                    // plan step leaves failing tests to the fix rounds).
                    if state.edited
                        && !state.check_failed
                        && (state.tests_failed.is_none() || spec.number.is_some())
                    {
                        return Ok(Next::Done);
                    }
                    // A block that repeats the file while something still fails (the check, or
                    // the tests a fix round is given): the code was judged already, and told
                    // again what fails the 1.5B model gives it back again (py-pangram: the same
                    // wrong `is_pangram` in every answer of a fix round). The attempt ends; the
                    // next starts clean (afresh from the files before the run, in a fix round
                    // of a one-step plan) and is sampled.
                    if repeated && self.still_failing(turn, memory).is_some() {
                        state.tests_failed = state.tests_failed.or(memory.told_tests);
                        memory.notes.push(
                            "its code block gave the failing code back unchanged; the attempt \
                             ended"
                                .to_owned(),
                        );
                        return Ok(failed(
                            "its code block repeated the code that fails, unchanged".to_owned(),
                        ));
                    }
                    let said = response.text.trim();
                    let why = if repeated {
                        "its code block left the file as it was".to_owned()
                    } else if rewrite {
                        format!("no code block: {}", what_it_said(response, 160))
                    } else {
                        format!("no tool call: {}", what_it_said(response, 160))
                    };
                    if state.stuck.coach_now(state.edited) {
                        memory.notes.push(format!("stuck ({why}); coached once"));
                        let coaching = if rewrite {
                            self.rewrite_coaching(turn, refuses(said))
                        } else {
                            self.coaching(spec, refuses(said))
                        };
                        self.say(turn, messages, coaching);
                        return Ok(Next::Ask);
                    }
                    if state.edited && state.check_failed {
                        return Ok(failed(format!(
                            "the model stopped while the check still failed ({why})"
                        )));
                    }
                    return Ok(failed(format!("no change was made: {why}")));
                }
            }
            Answer::Calls { outcomes, .. } => {
                let tally = answer::tally(&outcomes, state.edited);
                if tally.made == 0 {
                    let no_op = tally.all_repeats;
                    if no_op && state.edited && !state.check_failed {
                        // Repeating an edit that went through is the model saying it is done.
                        return Ok(Next::Done);
                    }
                    // Reads and refused calls are answered with their results; the same calls
                    // again would get the same results (sum-of-multiples' fix round: the same
                    // refused `edit_file`, "OLD was not found", three times in a row).
                    if !state.refused_answers.insert(answer_print(response)) {
                        return Ok(failed(REFUSED_AGAIN.to_owned()));
                    }
                    if no_op && state.stuck.coach_now(state.edited) {
                        memory
                            .notes
                            .push("stuck (its edit changed nothing); coached once".to_owned());
                        let coaching = if rewrite {
                            self.rewrite_coaching(turn, false)
                        } else {
                            self.coaching(spec, false)
                        };
                        self.say(turn, messages, coaching);
                    } else if rewrite {
                        // The rewrite protocol's way, after a call that did not go through.
                        let results: Vec<String> = outcomes
                            .iter()
                            .map(|o| crate::edit::text::clip(o.content.trim(), 400))
                            .collect();
                        let again = self.answer_again(turn);
                        self.say(
                            turn,
                            messages,
                            format!(
                                "Your tool call made no change: {}\n\n{again}",
                                results.join("\n")
                            ),
                        );
                    }
                    // Reads, or refusals the model can read and correct: next round.
                    return Ok(Next::Ask);
                }
            }
        }
        self.checked(turn, written, messages, memory, state).await
    }

    /// After an answer that changed a file: the check (and the lint when it passes), lines the
    /// model rewrote by accident put back, what the step still lacks asked for once, or the
    /// check's errors told.
    async fn checked(
        &mut self,
        turn: &Turn<'_>,
        mut written: String,
        messages: &mut Vec<Message>,
        memory: &mut Memory,
        state: &mut Answers,
    ) -> Result<Next, DevelopFailure> {
        let rewrite = turn.protocol == Protocol::Rewrite;
        state.edited = true;
        // The code of an earlier answer of this fix round, whose tests failed: not tested
        // again, and not told the same failure again.
        if turn.spec.number.is_none() {
            let code = self.code_print();
            if let Some(&print) = memory.judged.get(&code) {
                state.tests_failed = Some(print);
                return Ok(failed(
                    "its answer was the code of an earlier answer, which failed the tests"
                        .to_owned(),
                ));
            }
        }
        let runs = self.check_and_lint().await?;
        let mut check_ok = runs.iter().all(|r| r.passed);
        if !check_ok && let Some(put_back) = self.put_back_touched(turn, &runs).await? {
            check_ok = true;
            memory.notes.push(format!(
                "the check failed on {} line(s) the model rewrote that the step did not ask to \
                 change; put back as they were, the check passes",
                put_back.len()
            ));
            written.push_str(&format!(
                "The check failed on lines your change rewrote; they were put back as they were, \
                 and the check passes now:\n{}\n",
                put_back.join("\n")
            ));
        }
        state.check_failed = !check_ok;
        if check_ok && self.tests_exercise(turn) {
            return self.tested(turn, written, messages, memory, state).await;
        }
        if check_ok {
            let missing = self.not_done_yet(turn);
            if missing.is_empty() || state.asked_missing {
                return Ok(Next::Done);
            }
            state.asked_missing = true;
            memory.notes.push(format!(
                "the check passed, but the step was not finished ({}); asked once more",
                missing.join("; ")
            ));
            let way = self.missing_way(turn);
            self.say(
                turn,
                messages,
                format!(
                    "{written}The check passes, but this step is not finished: {}. {way}; if \
                     nothing is missing, answer `done`.",
                    missing.join("; ")
                ),
            );
            return Ok(Next::Ask);
        }
        let failing: Vec<_> = runs.iter().filter(|r| !r.passed).cloned().collect();
        let fingerprint = failing.first().map_or(0, |r| r.fingerprint());
        let mut text = describe_failures(&failing);
        memory.failing = Some(text.clone());
        // The lines the check points at that this step changed, as they were: a rewrite that
        // dropped something (a `wordstat::` path) sees what it dropped.
        let touched = self.touched_at_errors(turn, &text);
        if !touched.is_empty() {
            text.push_str(&format!(
                "\nLines the errors point at that your change rewrote (before → now); keep what \
                 the step does not ask to change:\n{touched}"
            ));
        }
        let fix = if rewrite {
            self.correction(turn)
        } else {
            "Fix these errors with edit_file (old_string copied from the current file).".to_owned()
        };
        let message = match memory
            .errors
            .check_failed(fingerprint, &text, turn.protocol, &fix)
        {
            CheckFeedback::GiveUp(reason) => return Ok(failed(reason)),
            CheckFeedback::Again { message, repeat } => {
                if repeat > 1 {
                    memory.notes.push(format!(
                        "the same check error came back a {} time",
                        if repeat == 2 { "second" } else { "third" }
                    ));
                }
                message
            }
        };
        self.say(turn, messages, format!("{written}{message}"));
        Ok(Next::Ask)
    }

    /// How to answer with what a step still lacks.
    fn missing_way(&mut self, turn: &Turn<'_>) -> String {
        match (
            turn.protocol == Protocol::Rewrite,
            turn.files.items.is_empty(),
        ) {
            (true, true) => "Reply with the complete new file(s) that add it, each in one code \
                             block with its path on the line above"
                .to_owned(),
            (true, false) => self.answer_again(turn).trim_end_matches('.').to_owned(),
            (false, _) => "Change the files now".to_owned(),
        }
    }

    /// Whether the workspace has tests that exercise the files of this step: a test command,
    /// and tests shown beside the files, or a test file among them, or tests inside them (a
    /// Rust module's `#[test]`s).
    fn tests_exercise(&mut self, turn: &Turn<'_>) -> bool {
        if !self.has_checks(CheckKind::Test) {
            return false;
        }
        if !turn.files.read_only.is_empty() {
            return true;
        }
        let files: Vec<String> = turn
            .files
            .edit
            .iter()
            .chain(&turn.files.create)
            .cloned()
            .collect();
        files.iter().any(|f| {
            super::explore::is_test_file(f)
                || self
                    .read_text(f)
                    .is_some_and(|t| t.lines().any(super::rewrite::is_test_line))
        })
    }

    /// The code the run's changes make now, hashed: two answers that leave the same files
    /// have the same print.
    pub(super) fn code_print(&mut self) -> u64 {
        let mut changes = self.changes();
        changes.sort();
        let mut text = String::new();
        for (path, t) in changes {
            text.push_str(&path.to_string_lossy());
            text.push('\0');
            text.push_str(&t);
            text.push('\0');
        }
        crate::tools::overlay::fnv1a(text.as_bytes())
    }

    /// After an answer whose check passes, in a step the tests exercise: the tests decide
    /// (`docs/develop.md`, "The tests decide"). Passing, the step is done — unless what it
    /// asks for is shown missing ([`Run::shown_missing`]), asked once. Failing, a plan step is done too (the verify
    /// phase's fix rounds take the failures; a step of a longer plan may leave them to a later
    /// step); a fix round tells the model how they fail, and an answer that fails them the same
    /// way as the code it was shown ends the attempt instead of being told the same again.
    async fn tested(
        &mut self,
        turn: &Turn<'_>,
        written: String,
        messages: &mut Vec<Message>,
        memory: &mut Memory,
        state: &mut Answers,
    ) -> Result<Next, DevelopFailure> {
        let code = self.code_print();
        let runs = self.run_checks(CheckKind::Test).await?;
        let passed = runs.iter().all(|r| r.passed);
        state.tests_failed = (!passed).then(|| test_print(&runs));
        if let Some(print) = state.tests_failed {
            memory.judged.insert(code, print);
        }
        let missing = self.shown_missing(turn).join("; ");
        if !missing.is_empty() && !state.asked_missing {
            state.asked_missing = true;
            memory.notes.push(format!(
                "the tests {}, but the step was not finished ({missing}); asked once more",
                if passed { "pass" } else { "fail" }
            ));
            let way = self.missing_way(turn);
            self.say(
                turn,
                messages,
                format!(
                    "{written}The check passes, but this step is not finished: {missing}. {way}; \
                     if nothing is missing, answer `done`."
                ),
            );
            return Ok(Next::Ask);
        }
        let Some(print) = state.tests_failed else {
            memory.notes.push("the tests pass".to_owned());
            return Ok(Next::Done);
        };
        if turn.spec.number.is_some() {
            memory
                .notes
                .push("the tests fail after this step; the fix rounds take them".to_owned());
            return Ok(Next::Done);
        }
        if memory.told_tests == Some(print) {
            return Ok(failed(
                "its answer fails the tests the same way as the code it was shown".to_owned(),
            ));
        }
        // Told how its own new code fails, the 1.5B model gave it back or made it no better in
        // 33 of 34 recorded follow-ups: an answer that passes no more tests than the best code
        // before it ends the attempt, and the next starts afresh (`docs/develop.md`, "No call
        // spent twice").
        if let (Some(best), Some(now)) = (memory.best_passed, tests_passed(&runs)) {
            if now <= best {
                return Ok(failed(format!(
                    "its answer passes {now} test(s), no more than the best code before it \
                     ({best})"
                )));
            }
            memory.notes.push(format!(
                "its answer passes {now} test(s), more than the best code before it ({best}); \
                 told how the others fail"
            ));
            memory.best_passed = Some(now);
            state.progressed = true;
            let s = self.session();
            memory.best_code = Some((s.copy.clone(), s.ledger.clone()));
        }
        memory.told_tests = Some(print);
        let failures = self.test_failures(&runs);
        memory.failing = Some(failures.clone());
        let fix = if turn.protocol == Protocol::Rewrite {
            self.correction(turn)
        } else {
            "Fix the code with edit_file (old_string copied from the current file).".to_owned()
        };
        self.say(
            turn,
            messages,
            format!(
                "{written}Your change was applied and the check passes, but the tests fail:\n\
                 {failures}\n{fix}"
            ),
        );
        Ok(Next::Ask)
    }

    /// What still fails in this step: the check's last failure in this attempt, else the
    /// failing tests a fix round was given.
    fn still_failing(&self, turn: &Turn<'_>, memory: &Memory) -> Option<String> {
        memory
            .failing
            .clone()
            .or_else(|| turn.spec.extra.clone())
            .filter(|f| !f.trim().is_empty())
    }

    /// For each `path:line` the check output names in a file this step changed: the changed
    /// lines there as they were when the step began and as they are now.
    fn touched_at_errors(&mut self, turn: &Turn<'_>, output: &str) -> String {
        let root = self.root();
        let changes = self.session().copy.changes();
        let mut out = String::new();
        for c in changes {
            let rel = rel_of(&root, &c.path);
            let before = turn.text_before(&c.path, c.original.as_deref());
            let lines = feedback::lines_named(output, &rel);
            for (old, new) in feedback::touched_lines(&before, &c.text, &lines) {
                out.push_str(&format!("{rel}: was `{old}`, now `{new}`\n"));
            }
        }
        crate::edit::text::clip(&out, 1200)
    }

    /// When the check fails on lines this step rewrote (`feedback::restore_touched`: small
    /// rewrites of existing lines, such as a dropped type annotation), those lines as they were
    /// when the step began, kept only when the check (and the lint) then passes and the step
    /// still changes something; else the model's text stays, for the check's feedback. Returns
    /// each line put back, as the model is told.
    async fn put_back_touched(
        &mut self,
        turn: &Turn<'_>,
        runs: &[CheckRun],
    ) -> Result<Option<Vec<String>>, DevelopFailure> {
        let failing: Vec<CheckRun> = runs.iter().filter(|r| !r.passed).cloned().collect();
        let output = describe_failures(&failing);
        let root = self.root();
        let mut restored = Vec::new();
        let mut said = Vec::new();
        let mut still_changes = false;
        for c in self.session().copy.changes() {
            let rel = rel_of(&root, &c.path);
            let before = turn.text_before(&c.path, c.original.as_deref());
            let lines = feedback::lines_named(&output, &rel);
            match feedback::restore_touched(&before, &c.text, &lines) {
                Some((text, back)) => {
                    still_changes |= text != before;
                    said.extend(
                        back.into_iter()
                            .map(|(was, now)| format!("{rel}: `{was}` (your answer had `{now}`)")),
                    );
                    restored.push((c.path, c.text, text));
                }
                None => still_changes |= c.text != before,
            }
        }
        if restored.is_empty() || !still_changes {
            return Ok(None);
        }
        // Each file set to its put-back text (`back`) or, undone, to the model's again.
        let set = |run: &mut Run, back: bool| {
            let s = run.session();
            for (path, model, put_back) in &restored {
                let (from, to) = if back {
                    (model, put_back)
                } else {
                    (put_back, model)
                };
                s.copy.write(path, from, None, to.clone());
                s.ledger.record_write(path, to);
            }
        };
        set(self, true);
        let reported = self.report.checks.clone();
        let again = self.check_and_lint().await?;
        if again.iter().all(|r| r.passed) {
            return Ok(Some(said));
        }
        set(self, false);
        self.report.checks = reported;
        Ok(None)
    }

    /// Tells the model `text` for its next answer: in the tools protocol a message after the
    /// conversation so far; in the rewrite protocol the step's prompt again, with the files as
    /// they are now and `text` at its end (the files are shown once, never a second copy).
    fn say(&mut self, turn: &Turn<'_>, messages: &mut Vec<Message>, text: String) {
        if turn.protocol == Protocol::Rewrite && !self.writes.expects_content() {
            *messages = self.rewrite_prompt(
                turn.plan,
                turn.spec,
                turn.files,
                turn.failures,
                turn.afresh,
                Some(&text),
            );
        } else {
            messages.push(Message::user(text));
        }
    }

    /// The files a step names that it has not changed yet.
    pub(super) fn untouched(&mut self, spec: &StepSpec) -> Vec<String> {
        let changed = self.changed_rel();
        spec.files
            .iter()
            .filter(|f| !changed.contains(f) && !f.ends_with('/'))
            .cloned()
            .collect()
    }

    /// The clean first prompt of an attempt.
    fn step_prompt(&mut self, plan: &Plan, spec: &StepSpec, failures: &[String]) -> Vec<Message> {
        let system = self.system_prompt(
            &format!(
                "You are a careful coding agent carrying out one step of a plan. You change files \
             only through the tools. Rules:\n\
             - Make exactly this step's change, nothing more; keep each file's style and \
             indentation.\n\
             - Files are shown with line numbers (number, tab, text); the numbers are not part \
             of the file. Never copy them into old_string or new_string.\n\
             - edit_file replaces old_string with new_string: copy old_string exactly from the \
             current file, with enough lines to match one place only.\n\
             - write_file creates a new short file; never use it on a file that exists. For a \
             new file longer than about {LONG_FILE_LINES} lines call begin_write instead, then \
             send the whole file as your next answer in plain text, ending with the marker \
             begin_write gives you.\n\
             - Read a file with read_file before editing a file you were not shown.\n\
             - If an edit is refused or a check fails, read the message: it says what to do.\n\
             - Paths are relative to the workspace root.\n"
            ),
            "Workspace rules (follow them)",
        );
        let mut user = format!("Request: {}\n\n", self.request.request.trim());
        user.push_str(&format!("Plan:\n{}\n", plan.numbered(spec.number)));
        user.push_str(&format!("Do this now ({}): {}\n", spec.name, spec.text));
        if let Some(extra) = &spec.extra {
            user.push('\n');
            user.push_str(extra.trim_end());
            user.push('\n');
        }
        let files: Vec<String> = spec.files.iter().take(4).cloned().collect();
        let budget = self.ctx.options.context_budget / files.len().max(1);
        for f in &files {
            user.push('\n');
            user.push_str(&self.file_view(f, budget));
        }
        if !failures.is_empty() {
            user.push('\n');
            user.push_str(&failure_notes(failures, STEP_ATTEMPTS, 900));
        }
        user.push_str(
            "\nRespond with edit_file calls (write_file or begin_write for a new file) that make \
             this change.",
        );
        vec![Message::system(system), Message::user(user)]
    }

    /// The coaching message for a stuck answer: what to call, with the current text.
    fn coaching(&mut self, spec: &StepSpec, refused: bool) -> String {
        let mut out = String::from(if refused {
            "You can make this change: you have the tools and the files. Do not explain; call \
             a tool.\n"
        } else {
            "You made no change. This step needs a change to the files.\n"
        });
        let files: Vec<String> = spec.files.iter().take(2).cloned().collect();
        let budget = (self.ctx.options.context_budget / 2) / files.len().max(1);
        for f in &files {
            out.push('\n');
            out.push_str(&self.file_view(f, budget));
        }
        let example = files.first().cloned().unwrap_or_else(|| "PATH".to_owned());
        out.push_str(&format!(
            "\nCall edit_file with path \"{example}\", old_string copied exactly from the lines \
             above (without the line numbers) and new_string with the change; or write_file \
             with path and content to create a file that does not exist yet."
        ));
        out
    }
}

/// What one attempt works with.
pub(super) struct Turn<'t> {
    pub spec: &'t StepSpec,
    pub plan: &'t Plan,
    pub files: &'t StepFiles,
    pub failures: &'t [String],
    pub protocol: Protocol,
    /// The run's changed files and their text when the step began.
    pub before: &'t [(PathBuf, String)],
    /// The files shown as they were before the run (an afresh fix round).
    pub afresh: &'t [String],
}

impl Turn<'_> {
    /// A file's text when the step began: as the run had changed it, else as on disk before the
    /// run (`original`), else empty (a file the step creates).
    pub fn text_before(&self, path: &std::path::Path, original: Option<&str>) -> String {
        self.before
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, t)| t.as_str())
            .or(original)
            .unwrap_or_default()
            .to_owned()
    }
}

/// How a test run failed, as a print to compare: the failing tests' names and assertions when
/// the runner's output is read (`failures.rs`), else the output; numbers and spacing dropped
/// (`checks::fingerprint`), so timings do not count. Two answers that fail the same tests on
/// the same assertions have the same print.
pub(super) fn test_print(runs: &[CheckRun]) -> u64 {
    let mut text = String::new();
    for r in runs.iter().filter(|r| !r.passed) {
        text.push_str(&r.line);
        text.push('\n');
        match super::failures::parse(&r.full_output) {
            Some(found) => {
                for f in found {
                    text.push_str(&f.name);
                    text.push('\n');
                    for m in &f.message {
                        text.push_str(m);
                        text.push('\n');
                    }
                }
            }
            None => text.push_str(&r.output),
        }
    }
    super::checks::fingerprint(&text)
}

/// How many tests passed in a test run, as its runners' summaries say
/// ([`super::failures::passed`], summed over the commands); `None` when one of them is not read.
pub(super) fn tests_passed(runs: &[CheckRun]) -> Option<usize> {
    runs.iter()
        .map(|r| super::failures::passed(&r.full_output))
        .sum()
}

/// How a step's clean start names the attempts that failed before it.
pub(super) const STEP_ATTEMPTS: &str = "Earlier attempts at this step";
