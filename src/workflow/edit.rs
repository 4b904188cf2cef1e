//! The edit workflow: one instruction and a target range → a [`Proposal`].
//!
//! Two edit protocols (`docs/editing.md`, "edit protocols"). **Rewrite**, the default for a
//! target of up to a few hundred lines: the target (the selection's lines, or the function or
//! method enclosing the selection or cursor) is shown once with the signatures around it, and
//! the answer is one code block with its new text, applied through the engine as the smallest
//! change that does it, or refused when the block does not line up with the target. Small
//! models do this far better than copying an OLD string. **Tools**, for larger targets and as
//! the fallback: the region (the whole file when small, the target item with an outline
//! otherwise) with line numbers, and the edit tools on the run's working copy. With
//! `[models.X] edit_format = "auto"` (the default) a failed attempt falls back to the other
//! protocol; `rewrite` or `tools` keeps to one (rewrite still needs a target that fits). A refused edit is not the end: the model gets the refusal and tries again — at most
//! `max_attempts` times; the last attempt may go to the `escalation` model with a clean prompt
//! that says why the earlier ones failed. The attempts are driven by `model_loop::driver`, the
//! one driver develop steps use too; this file is the edit's policy over it.
//!
//! Every request is planned against the resolved model's context window, with an answer
//! reservation sized to the task: the region shrinks to fit, older turns are cut, and a request
//! is never refused for size while a smaller one would do. Prompts keep their stable part first
//! (system, tools, file) so that local servers reuse their prefix cache between rounds.
//!
//! It never writes: the result is a proposal, and nothing reaches the disk or the editor until
//! the user accepts it. It never sees protocol types. Cancelling the token ends the run promptly.

pub(crate) mod prompt;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use crate::config::EditFormat;
use crate::config::{Config, ModelRole};
use crate::edit::RefusalKind;
use crate::edit::text::fenced_blocks;
use crate::model::budget::{Budget, UNKNOWN_WINDOW, count_request};
use crate::model::{
    ChatModel, ChatRequest, ChatResponse, Message, ModelError, ModelRouter, ToolCall, ToolChoice,
    ToolSpec,
};
use crate::syntax::{Language, RegionOptions, SyntaxTree, Target, extract_region};
use crate::tokens::{count_tokens, truncate_to_tokens};
use crate::tools::{
    self, CODING_AGENT, FileSystem, RealFs, Session, Snapshot, Status, ToolError, ToolOptions,
    WholeMode,
};

use super::model_loop::answer::{self, Reading};
use super::model_loop::driver::{self, Answer, Asking, At, Driven, Ended, Next, NoAnswer, Policy};
use super::model_loop::resample::Resample;
use super::model_loop::target::{self, EditTarget};
use super::model_loop::{self, Interrupted, Protocol, REWRITE_MAX_LINES, Schedule};
use super::proposal::{Proposal, ProposalFile};
use super::write_session::WriteSessions;

/// Rule files read from each workspace root, in this order.
pub const RULE_FILES: [&str; 3] = ["AGENTS.md", "CLAUDE.md", ".patchwise/RULES.md"];

/// Characters of one rule file included in the prompt.
const MAX_RULES_CHARS: usize = 8000;

/// Where the models come from.
#[derive(Clone)]
pub enum Models {
    /// The configured roles (`coder`, `escalation`), resolved by the router.
    Router(Arc<ModelRouter>),
    /// Given models (tests, or a caller that resolved them already).
    Fixed {
        coder: Arc<dyn ChatModel>,
        escalation: Option<Arc<dyn ChatModel>>,
    },
}

/// How a run behaves; `[edit]` in the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct EditOptions {
    /// Attempts before giving up (a refused edit ends an attempt). `[edit] max_attempts`.
    pub max_attempts: usize,
    /// Hand the last attempt to the `escalation` role when it is a different model.
    pub escalate: bool,
    /// Refuse edits that add syntax errors. `[edit] parse_check`.
    pub parse_check: bool,
    /// Model answers allowed in one attempt (tool rounds).
    pub max_rounds: usize,
    /// Upper bound on the tokens of file shown in a tools prompt: the prompt is planned against
    /// the model's window and gets at most half of what the window leaves.
    pub region_budget: usize,
    /// The protocol a run starts with; `None` takes `[models.X] edit_format` of the model
    /// asked (default `auto`).
    pub edit_format: Option<EditFormat>,
    /// Sampling temperature (0 makes edits markedly more reliable).
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// End the run as soon as an answer's edits all succeed, without asking the model whether
    /// it is done (saves one model call per run; multi-step edits must then come in one answer).
    pub stop_after_edit: bool,
    /// Force an `edit_file` call (a named `tool_choice`) in the first answer, and in the first
    /// answer after one without any tool call. Off by default: on the local
    /// Qwen2.5-Coder-1.5B (llama-cpp-python) `auto` answered in prose in 2 of 3 tasks, but
    /// forcing a call with multi-line arguments under the JSON grammar gave empty answers on a
    /// task `auto` solved. `[edit] force_edit = true` turns it on.
    pub force_edit: bool,
}

impl Default for EditOptions {
    fn default() -> Self {
        EditOptions {
            max_attempts: 3,
            escalate: true,
            parse_check: true,
            max_rounds: 12,
            region_budget: 6000,
            edit_format: None,
            temperature: Some(0.0),
            max_tokens: None,
            stop_after_edit: false,
            force_edit: false,
        }
    }
}

impl EditOptions {
    /// The options of `[edit]` in `config` (validated when the configuration loaded).
    pub fn from_config(config: &Config) -> EditOptions {
        let edit = &config.edit;
        EditOptions {
            max_attempts: edit.max_attempts as usize,
            escalate: edit.escalate,
            parse_check: edit.parse_check,
            max_rounds: edit.max_rounds as usize,
            region_budget: edit.region_budget as usize,
            temperature: Some(edit.temperature as f32),
            max_tokens: edit.max_tokens,
            stop_after_edit: edit.stop_after_edit,
            force_edit: edit.force_edit,
            edit_format: None,
        }
    }
}

/// Everything a run needs besides the request.
#[derive(Clone)]
pub struct EditContext {
    pub config: Config,
    pub models: Models,
    /// Workspace roots (absolute).
    pub roots: Vec<PathBuf>,
    /// Open buffers as the editor has them, by absolute path.
    pub snapshot: Snapshot,
    pub fs: Arc<dyn FileSystem>,
    /// The workspace rules; `None` reads them from the rule files of the roots.
    pub rules: Option<String>,
    pub options: EditOptions,
}

impl EditContext {
    /// A context on the real disk with the options of `config`.
    pub fn new(config: Config, models: Models, roots: Vec<PathBuf>, snapshot: Snapshot) -> Self {
        let options = EditOptions::from_config(&config);
        EditContext {
            config,
            models,
            roots,
            snapshot,
            fs: Arc::new(RealFs),
            rules: None,
            options,
        }
    }
}

/// What to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditRequest {
    /// The file (absolute, or relative to the first workspace root).
    pub path: PathBuf,
    /// Byte range of the target in the file's working-copy text (empty: a cursor position).
    pub range: Range<usize>,
    pub instruction: String,
}

/// A progress report: where the run is, a message for people and a percentage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub phase: RunPhase,
    pub message: String,
    pub percent: u32,
}

/// Where a run stands, as a type: an edge shows it (a running plan entry, a tool call) without
/// reading [`Progress::message`], which is written for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPhase {
    /// Develop: the workspace, git status, the rules, the project and its baseline checks.
    Preflight,
    /// An edit reads its target and the context around it.
    Read,
    /// Develop's planner reads the workspace.
    Explore,
    /// Develop's planner writes the plan.
    Plan,
    /// The plan waits for the user's approval.
    Approve,
    /// Develop's plan step `number` (numbered as in the plan) runs.
    Step { number: usize },
    /// An edit's attempt `attempt` asks a model.
    Attempt { attempt: usize },
    /// The tests run: `round` 0 after the steps, then once per fix round.
    Verify { round: usize },
    /// The judge reviews the diff.
    Judge,
    /// The budget ran out; the run keeps what is done.
    Stopping,
    /// A research run's phase.
    Research(crate::research::Phase),
    /// The result is ready.
    Ready,
}

impl RunPhase {
    /// A short name for people (`step 2`, `verify`).
    pub fn name(self) -> String {
        match self {
            RunPhase::Preflight => "preflight".to_owned(),
            RunPhase::Read => "reading".to_owned(),
            RunPhase::Explore => "explore".to_owned(),
            RunPhase::Plan => "plan".to_owned(),
            RunPhase::Approve => "approve".to_owned(),
            RunPhase::Step { number } => format!("step {number}"),
            RunPhase::Attempt { attempt } => format!("attempt {attempt}"),
            RunPhase::Verify { round: 0 } => "verify".to_owned(),
            RunPhase::Verify { round } => format!("verify (fix round {round})"),
            RunPhase::Judge => "judge".to_owned(),
            RunPhase::Stopping => "stopping".to_owned(),
            RunPhase::Research(p) => p.name().to_owned(),
            RunPhase::Ready => "ready".to_owned(),
        }
    }
}

/// Why a run ended without a proposal; the Display is the message the user sees.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditFailure {
    #[error("no proposal: the target is not usable: {0}")]
    Target(String),
    #[error(
        "no proposal: every attempt was refused ({attempts} attempt{}); nothing was changed. Last refusal: {last}",
        if *attempts == 1 { "" } else { "s" }
    )]
    Refused { attempts: usize, last: String },
    #[error(
        "no proposal: the model did not produce an edit in {attempts} attempt{}; nothing was changed. {reason}",
        if *attempts == 1 { "" } else { "s" }
    )]
    NoEdit { attempts: usize, reason: String },
    #[error("no proposal: no answer from the model: {0}")]
    Model(ModelError),
    #[error("no proposal: cancelled")]
    Cancelled,
}

/// Tools that could not finish: the run was cancelled, or their thread failed.
impl From<Interrupted> for EditFailure {
    fn from(why: Interrupted) -> EditFailure {
        match why {
            Interrupted::Cancelled => EditFailure::Cancelled,
            Interrupted::Failed(why) => EditFailure::Target(why),
        }
    }
}

/// Runs the edit workflow for `request`. See the module docs.
pub async fn run(
    ctx: &EditContext,
    request: EditRequest,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: CancellationToken,
) -> Result<Proposal, EditFailure> {
    Run::start(ctx, request, progress, cancel)?.go().await
}

/// The spec of the coding-agent entry point: a model (or a client) that wants a change made
/// calls this with a file and an instruction, and gets back a proposal.
pub fn coding_agent_spec() -> ToolSpec {
    ToolSpec {
        name: CODING_AGENT.to_owned(),
        description: "Ask the coding agent to change a file: give the file, the instruction and \
                      optionally the lines to work on. Answers with the proposed diff, which the \
                      user accepts or rejects."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File relative to the workspace root"},
                "instruction": {"type": "string", "description": "What to change"},
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1}
            },
            "required": ["path", "instruction"]
        }),
    }
}

/// Runs a `use_coding_agent` call (or an alias of it, such as `use_codestral`).
pub async fn run_tool_call(
    ctx: &EditContext,
    call: &ToolCall,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: CancellationToken,
) -> Result<Proposal, EditFailure> {
    if tools::canonical_name(&call.name) != Some(CODING_AGENT) {
        return Err(EditFailure::Target(format!(
            "expected a {CODING_AGENT} call, found `{}`",
            call.name
        )));
    }
    let get = |k: &str| call.arguments.get(k);
    let path = get("path")
        .or_else(|| get("file_path"))
        .and_then(Value::as_str)
        .ok_or_else(|| EditFailure::Target("the call names no `path`".to_owned()))?;
    let instruction = get("instruction")
        .or_else(|| get("task"))
        .and_then(Value::as_str)
        .ok_or_else(|| EditFailure::Target("the call gives no `instruction`".to_owned()))?;
    let line = |k: &str| get(k).and_then(Value::as_u64).map(|n| n as usize);
    let session = Session::new(
        &ctx.roots,
        ctx.fs.clone(),
        ctx.snapshot.clone(),
        ToolOptions::default(),
    );
    let resolved = session
        .sandbox
        .resolve(path, ctx.fs.as_ref())
        .map_err(|e| EditFailure::Target(e.to_string()))?;
    // A file that does not exist yet is one the run creates (`docs/editing.md`).
    let (text, _) = if session.copy.exists(&resolved.abs, ctx.fs.as_ref()) {
        session
            .copy
            .read(&resolved.abs, ctx.fs.as_ref())
            .map_err(|e| EditFailure::Target(e.to_string()))?
    } else {
        (String::new(), None)
    };
    let range = match (line("start_line"), line("end_line")) {
        (Some(s), e) => lines_to_bytes(&text, s, e.unwrap_or(s)),
        (None, _) => 0..0,
    };
    run(
        ctx,
        EditRequest {
            path: resolved.abs,
            range,
            instruction: instruction.to_owned(),
        },
        progress,
        cancel,
    )
    .await
}

/// Byte range of 1-based inclusive lines `start..=end` (clamped to the text).
pub fn lines_to_bytes(text: &str, start: usize, end: usize) -> Range<usize> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    let at = |line: usize| -> usize {
        starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(text.len())
    };
    let (s, e) = (start.max(1), end.max(start.max(1)));
    at(s)..at(e + 1).min(text.len())
}

// ---------------------------------------------------------------------------------------------

struct Run<'a> {
    ctx: &'a EditContext,
    request: EditRequest,
    progress: &'a (dyn Fn(Progress) + Send + Sync),
    cancel: CancellationToken,
    session: Option<Session>,
    rel: String,
    abs: PathBuf,
    language: Language,
    /// What the rewrite protocol rewrites (and what refusals point at).
    target: Option<EditTarget>,
    /// The context budget of the model asked now.
    budget: Budget,
    /// Tokens of file shown in the tools protocol's first prompt (shrinks when a request would
    /// not fit the window).
    region_budget: usize,
    /// Why earlier attempts failed, for a clean start.
    notes: String,
    /// The next answer must call `edit_file`.
    force_edit: bool,
    /// Long content streamed as plain text (`begin_write`).
    writes: WriteSessions,
    /// Workspace-relative files the run is asked to create (`docs/editing.md`, "Write
    /// sessions"): the target when it does not exist or is empty, and new files the instruction
    /// names. Such a run uses the tools protocol and offers `begin_write`.
    creates: Vec<String>,
    /// The protocols of the run's attempts (the coder's; kept when the last one escalates).
    schedule: Schedule,
    /// How the edits were placed (the matching passes), for the proposal.
    matched: Vec<String>,
    /// Files changed by the answers of the attempt asked now.
    edits: usize,
    /// A request asked again is sampled (`model_loop::resample`).
    resample: Resample,
}

/// The edit's policy over the shared driver (`model_loop::driver`): a failed attempt in the
/// same protocol goes on in the same conversation (the refusal, and the current text in the
/// tools protocol); escalating or switching protocol starts clean from the file as it was.
impl Policy for Run<'_> {
    type Error = EditFailure;
    const CONTINUES: bool = true;

    fn attempts(&self) -> (usize, bool) {
        (self.ctx.options.max_attempts, self.ctx.options.escalate)
    }

    fn schedule(&mut self, _model: &dyn ChatModel) -> Schedule {
        self.schedule
    }

    fn starting(&mut self, at: &At) {
        self.edits = 0;
        // A rewrite attempt's answer is the target's new text: a write session an earlier
        // attempt left open (a `begin_write` written as text, then a refusal) is dropped, so
        // the answer is never taken as a file's streamed content.
        if at.protocol == Protocol::Rewrite {
            self.writes = WriteSessions::new(self.ctx.config.tools.clone());
        }
        if at.attempt > 1 {
            self.report(
                RunPhase::Attempt {
                    attempt: at.attempt,
                },
                format!("attempt {}/{}", at.attempt, at.max),
                (10 + (at.attempt - 1) * 80 / at.max) as u32,
            );
        }
    }

    fn clean_start(&mut self, at: &At, failures: &[String]) -> Result<Vec<Message>, EditFailure> {
        if at.attempt > 1 {
            // The working copy and the ledger forget the failed attempts.
            if at.escalated {
                self.budget = Budget::for_window(at.model.name(), at.model.context_window());
            }
            self.force_edit = self.ctx.options.force_edit;
            let s = self.session();
            s.copy.reset();
            s.ledger = Default::default();
            self.read_and_record()?;
            self.matched.clear();
            let who = if at.escalated {
                "Earlier attempts by another model"
            } else {
                "Earlier attempts"
            };
            self.notes = model_loop::failure_notes(failures, who, 600);
        }
        self.first_prompt(at.protocol)
    }

    fn retry(&mut self, at: &At, reason: &str, messages: &[Message]) -> String {
        self.feedback(at.protocol, at.attempt, at.max, reason, messages)
    }

    fn rounds(&self, at: &At) -> usize {
        match at.protocol {
            // One answer: the target's new text (or, from a model that still calls a tool, its
            // calls).
            Protocol::Rewrite => 1,
            Protocol::Tools => self.ctx.options.max_rounds,
        }
    }

    async fn ask(
        &mut self,
        at: &At,
        round: usize,
        messages: &mut Vec<Message>,
    ) -> Result<Result<ChatResponse, String>, EditFailure> {
        let percent = 10 + ((at.attempt - 1) * 80 + (round - 1).min(8) * 8) / at.max;
        self.report(
            RunPhase::Attempt {
                attempt: at.attempt,
            },
            format!("asking {}", at.model.name()),
            percent as u32,
        );
        self.ask_model(
            at.model.as_ref(),
            messages,
            at.protocol,
            at.attempt < at.max,
        )
        .await
    }

    fn hands(&mut self) -> (&mut Option<Session>, &mut WriteSessions) {
        (&mut self.session, &mut self.writes)
    }

    fn cancel(&self) -> CancellationToken {
        self.cancel.clone()
    }

    fn calls_in(&self, _at: &At, response: &ChatResponse) -> Vec<ToolCall> {
        if !response.tool_calls.is_empty() {
            return response.tool_calls.clone();
        }
        self.calls_in_text(&response.text)
    }

    fn as_meant(&mut self, calls: Vec<ToolCall>) -> (Vec<ToolCall>, HashMap<String, String>) {
        (self.prepare_calls(calls), HashMap::new())
    }

    async fn judge(
        &mut self,
        at: &At,
        answer: Answer,
        response: &ChatResponse,
        messages: &mut Vec<Message>,
    ) -> Result<Next, EditFailure> {
        if at.protocol == Protocol::Tools {
            return self.handle(answer, response, messages).await;
        }
        // The rewrite protocol's one answer: its code block is the target's new text; a model
        // may still answer with an edit call (native, or JSON in the text).
        if let Answer::Text = answer {
            return Ok(match self.apply_block(&response.text, true) {
                Ok(by) => {
                    self.matched_once(by);
                    Next::Done
                }
                Err(why) => {
                    let (reason, refused) = self.no_block_reason(why, response);
                    Next::Failed { reason, refused }
                }
            });
        }
        Ok(match self.handle(answer, response, messages).await? {
            failed @ Next::Failed { .. } => failed,
            _ if self.edits > 0 => Next::Done,
            _ => Next::Failed {
                reason: format!(
                    "the answer made no edit; reply with the complete rewritten {} in one code \
                     block",
                    self.target_label()
                ),
                refused: false,
            },
        })
    }

    fn out_of_rounds(&mut self, _at: &At) -> Ended {
        if self.edits > 0 {
            Ended::Done
        } else {
            Ended::Failed {
                reason: format!(
                    "the model used {} answers without making an edit",
                    self.ctx.options.max_rounds
                ),
                refused: false,
            }
        }
    }
}

impl<'a> Run<'a> {
    fn start(
        ctx: &'a EditContext,
        request: EditRequest,
        progress: &'a (dyn Fn(Progress) + Send + Sync),
        cancel: CancellationToken,
    ) -> Result<Run<'a>, EditFailure> {
        let options = ToolOptions {
            parse_check: ctx.options.parse_check,
            ..ToolOptions::default()
        };
        let session = Session::new(&ctx.roots, ctx.fs.clone(), ctx.snapshot.clone(), options);
        let path = request.path.to_string_lossy().into_owned();
        let resolved = session
            .sandbox
            .resolve(&path, ctx.fs.as_ref())
            .map_err(|e| EditFailure::Target(e.to_string()))?;
        if request.instruction.trim().is_empty() {
            return Err(EditFailure::Target(
                "the instruction is empty; say what to change".to_owned(),
            ));
        }
        let language = Language::from_path(&resolved.rel).unwrap_or(Language::Text);
        Ok(Run {
            ctx,
            request,
            progress,
            cancel,
            session: Some(session),
            rel: resolved.rel,
            abs: resolved.abs,
            language,
            target: None,
            budget: Budget::for_window("unknown", UNKNOWN_WINDOW),
            region_budget: ctx.options.region_budget,
            notes: String::new(),
            force_edit: ctx.options.force_edit,
            writes: WriteSessions::new(ctx.config.tools.clone()),
            creates: Vec::new(),
            schedule: Schedule {
                format: EditFormat::Auto,
                fits: false,
                creating: false,
                hosted: false,
                primary_attempts: 1,
            },
            matched: Vec::new(),
            edits: 0,
            resample: Resample::default(),
        })
    }

    fn report(&self, phase: RunPhase, message: impl Into<String>, percent: u32) {
        (self.progress)(Progress {
            phase,
            message: message.into(),
            percent: percent.min(100),
        });
    }

    fn session(&mut self) -> &mut Session {
        // Taken only while tools run on a blocking thread, and put back before any other use.
        self.session.get_or_insert_with(model_loop::empty_session)
    }

    async fn go(mut self) -> Result<Proposal, EditFailure> {
        self.report(RunPhase::Read, "reading", 5);
        let (coder, escalation) = self.models().await?;
        let (text, _) = self.read_and_record()?;
        let range = clamp_range(&text, &self.request.range);
        self.target = target::resolve(&text, &range, self.language, REWRITE_MAX_LINES);
        self.creates = self.files_to_create(&text);
        self.budget = Budget::for_window(coder.name(), coder.context_window());
        let rewrite_fits = self.rewrite_fits(&text);
        // A run that creates a file takes the tools protocol in `auto`: a rewrite has no target
        // to rewrite, and the new file's content streams in a write session. The schedule is
        // the coder's, kept when the last attempt escalates.
        self.schedule = Schedule {
            format: self.edit_format(coder.name()),
            fits: rewrite_fits,
            creating: !self.creates.is_empty(),
            hosted: self.ctx.config.vendor_hosted(coder.name()),
            primary_attempts: 1,
        };
        match driver::drive(&mut self, coder, escalation).await? {
            Driven::Done { attempts, model } => {
                let matched = std::mem::take(&mut self.matched);
                self.finish(model.name(), attempts, &matched)
            }
            Driven::Failed {
                attempts,
                mut failures,
                refused,
                ..
            } => {
                let last = failures.pop().unwrap_or_default();
                Err(if refused {
                    EditFailure::Refused { attempts, last }
                } else {
                    EditFailure::NoEdit {
                        attempts,
                        reason: last,
                    }
                })
            }
        }
    }

    /// The protocol to start with: the run's option, else `[models.X] edit_format` of the
    /// model (`provider/model`, or the model alone), else `auto`.
    fn edit_format(&self, model: &str) -> EditFormat {
        match self.ctx.options.edit_format {
            Some(f) => f,
            None => configured_format(&self.ctx.config, model),
        }
    }

    async fn models(
        &self,
    ) -> Result<(Arc<dyn ChatModel>, Option<Arc<dyn ChatModel>>), EditFailure> {
        match &self.ctx.models {
            Models::Fixed { coder, escalation } => Ok((coder.clone(), escalation.clone())),
            Models::Router(router) => {
                let coder = tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => return Err(EditFailure::Cancelled),
                    m = router.model(ModelRole::Coder, self.cancel.clone()) => m.map_err(model_failure)?,
                };
                let config = router.config();
                let distinct = config.role_candidates(ModelRole::Escalation).0
                    == ModelRole::Escalation
                    && config.roles.get(&ModelRole::Escalation)
                        != config.roles.get(&ModelRole::Coder);
                let escalation = if distinct && self.ctx.options.escalate {
                    tokio::select! {
                        biased;
                        _ = self.cancel.cancelled() => return Err(EditFailure::Cancelled),
                        m = router.model(ModelRole::Escalation, self.cancel.clone()) => m.ok(),
                    }
                } else {
                    None
                };
                Ok((coder, escalation))
            }
        }
    }

    /// Sends one request (fitted to the model's window by the driver: older turns first, then
    /// the region a tools prompt shows shrinks); `Ok(Err(reason))` when the answer broke off
    /// and another attempt may still come (a shared server interrupting it, a cut stream).
    async fn ask_model(
        &mut self,
        model: &dyn ChatModel,
        messages: &mut [Message],
        protocol: Protocol,
        may_retry: bool,
    ) -> Result<Result<ChatResponse, String>, EditFailure> {
        if self.cancel.is_cancelled() {
            return Err(EditFailure::Cancelled);
        }
        let choice = if self.writes.expects_content() {
            // A write session's content comes as plain text.
            ToolChoice::None
        } else if protocol == Protocol::Tools && std::mem::take(&mut self.force_edit) {
            ToolChoice::Tool("edit_file".to_owned())
        } else {
            ToolChoice::Auto
        };
        let reserve = if self.writes.expects_content() {
            // The content of a whole file: as much as the window allows, continued when cut.
            self.budget.window / 2
        } else {
            self.answer_reserve(protocol)
        };
        let asking = Asking {
            tools: if protocol == Protocol::Tools {
                self.tools()
            } else {
                Vec::new()
            },
            choice,
            max_tokens: Some(self.ctx.options.max_tokens.unwrap_or(reserve as u32)),
            temperature: self.ctx.options.temperature,
            deadline: None,
            observe: &|_| {},
            enough: &|_| None,
        };
        // A request is never refused for size: when cutting older turns is not enough, the
        // region a tools prompt shows shrinks (and stays smaller for the rounds after).
        let cancel = self.cancel.clone();
        let mut resample = std::mem::take(&mut self.resample);
        let shown = messages.to_vec();
        let shrink = |over_by: usize| {
            if protocol != Protocol::Tools || self.region_budget <= 300 {
                return None;
            }
            self.region_budget = self.region_budget.saturating_sub(over_by + 200).max(300);
            let first = self.first_prompt(Protocol::Tools).ok()?;
            if let (Some(new), Some(old)) = (first.get(1), messages.get_mut(1)) {
                *old = new.clone();
            }
            Some(messages.to_vec())
        };
        let asked =
            driver::ask_sampled(model, &shown, asking, &mut resample, shrink, &cancel).await;
        self.resample = resample;
        match asked {
            Ok(r) => Ok(Ok(r)),
            Err(NoAnswer::BrokeOff(e)) if may_retry => {
                Ok(Err(format!("the answer broke off ({e})")))
            }
            Err(NoAnswer::BrokeOff(e) | NoAnswer::Failed(e)) => Err(model_failure(e)),
            Err(NoAnswer::Cancelled | NoAnswer::TimedOut) => Err(EditFailure::Cancelled),
        }
    }

    /// Output tokens kept for the answer: a rewrite repeats the target with its change; tool
    /// calls carry an old and a new string.
    fn answer_reserve(&mut self, protocol: Protocol) -> usize {
        let target_tokens = self.target_tokens();
        match protocol {
            Protocol::Rewrite => target_tokens * 5 / 4 + 200,
            Protocol::Tools => (target_tokens * 2 + 300).clamp(600, 2_048),
        }
        .min(self.budget.window / 2)
    }

    fn target_tokens(&mut self) -> usize {
        let Some(target) = self.target.clone() else {
            return 200;
        };
        match self.read_target() {
            Ok((text, _)) => count_tokens(target.text(&text), self.budget.encoding),
            Err(_) => 200,
        }
    }

    /// Whether the rewrite protocol can take the target: there is one, and its prompt and its
    /// answer fit the window.
    fn rewrite_fits(&mut self, text: &str) -> bool {
        let Some(target) = self.target.clone() else {
            return false;
        };
        let Ok(messages) = self.rewrite_prompt(text, &target) else {
            return false;
        };
        let request = ChatRequest {
            messages,
            ..ChatRequest::default()
        };
        let reserve = self.answer_reserve(Protocol::Rewrite);
        count_request(&request, self.budget.encoding) + reserve
            <= self.budget.room(0).saturating_sub(self.budget.window / 50)
            && reserve < self.budget.window / 2
    }

    // -- prompts --------------------------------------------------------------------------------

    /// System and user messages of a fresh attempt of `protocol`.
    fn first_prompt(&mut self, protocol: Protocol) -> Result<Vec<Message>, EditFailure> {
        let (text, _) = self.read_target()?;
        match (protocol, self.target.clone()) {
            (Protocol::Rewrite, Some(target)) => self.rewrite_prompt(&text, &target),
            _ => self.tools_prompt(&text),
        }
    }

    fn rewrite_prompt(
        &mut self,
        text: &str,
        target: &EditTarget,
    ) -> Result<Vec<Message>, EditFailure> {
        let rules = self.rules();
        let user = prompt::rewrite_user(
            &self.rel,
            self.language,
            target,
            target.text(text),
            &self.request.instruction,
            &self.notes,
        );
        Ok(vec![
            Message::system(prompt::rewrite_system(&rules)),
            Message::user(user),
        ])
    }

    fn tools_prompt(&mut self, text: &str) -> Result<Vec<Message>, EditFailure> {
        let rules = self.rules();
        let system = prompt::tools_system(&rules, !self.creates.is_empty());
        let range = clamp_range(text, &self.request.range);
        let cursor_line = (!range.is_empty() || range.start > 0)
            .then(|| text[..range.start].matches('\n').count() + 1);
        // The region gets what the window leaves after the fixed parts, the answer and room for
        // a few rounds — at most `region_budget`.
        let reserve = self.answer_reserve(Protocol::Tools);
        let room = self.budget.room(reserve);
        let skeleton = ChatRequest {
            messages: vec![
                Message::system(system.clone()),
                Message::user(prompt::tools_user(
                    &self.rel,
                    self.target.as_ref(),
                    cursor_line,
                    "",
                    &self.request.instruction,
                    &self.notes,
                    &self.creates,
                )),
            ],
            tools: self.tools(),
            ..ChatRequest::default()
        };
        // Half of what the window leaves: the other half is for the rounds that follow (tool
        // results, refusals, the current text after a failed edit).
        let fixed = count_request(&skeleton, self.budget.encoding);
        let budget = (room.saturating_sub(fixed) / 2)
            .min(self.region_budget)
            .max(300);
        // A new or empty target has nothing to show.
        let region = if text.trim().is_empty() {
            String::new()
        } else {
            self.region(text, &range, budget)
        };
        let user = prompt::tools_user(
            &self.rel,
            self.target.as_ref(),
            cursor_line,
            &region,
            &self.request.instruction,
            &self.notes,
            &self.creates,
        );
        Ok(vec![Message::system(system), Message::user(user)])
    }

    /// The tools an attempt of the tools protocol offers: the edit tools, `begin_write` when
    /// the run creates a file, `end_write` while a session waits for a confirmation.
    fn tools(&self) -> Vec<ToolSpec> {
        let mut write = Vec::new();
        if !self.creates.is_empty() {
            write.push("begin_write");
        }
        if self.writes.awaits_confirmation() {
            write.push("end_write");
        }
        prompt::edit_tools(&write)
    }

    fn target_exists(&mut self) -> bool {
        let abs = self.abs.clone();
        let s = self.session();
        s.copy.exists(&abs, s.fs.as_ref())
    }

    /// The files the run is asked to create (see [`Run::creates`]): the target when it does not
    /// exist or is blank; paths the instruction names that do not exist, when it asks to
    /// create, write or add something.
    fn files_to_create(&mut self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        if text.trim().is_empty() {
            out.push(self.rel.clone());
        }
        if !asks_to_create(&self.request.instruction) {
            return out;
        }
        let instruction = self.request.instruction.clone();
        for named in named_paths(&instruction) {
            let s = self.session();
            let Ok(resolved) = s.sandbox.resolve(named, s.fs.as_ref()) else {
                continue;
            };
            if !s.copy.exists(&resolved.abs, s.fs.as_ref()) && !out.contains(&resolved.rel) {
                out.push(resolved.rel);
            }
        }
        out
    }

    /// The first file the run was asked to create that is still missing or blank.
    fn still_to_create(&mut self) -> Option<String> {
        let creates = self.creates.clone();
        creates.into_iter().find(|rel| {
            let s = self.session();
            match s.sandbox.resolve(rel, s.fs.as_ref()) {
                Ok(r) => s
                    .copy
                    .read(&r.abs, s.fs.as_ref())
                    .map_or(true, |(t, _)| t.trim().is_empty()),
                Err(_) => false,
            }
        })
    }

    /// What the model reads after a refused attempt of the same protocol.
    fn feedback(
        &mut self,
        protocol: Protocol,
        attempt: usize,
        max: usize,
        reason: &str,
        messages: &[Message],
    ) -> String {
        let label = self.target_label();
        if protocol == Protocol::Rewrite {
            return format!(
                "Attempt {attempt} of {max}. Your answer was not applied: {reason}\n\nReply with \
                 the complete rewritten {label} in one code block and nothing else."
            );
        }
        if let Some(new) = self.still_to_create() {
            return format!(
                "Attempt {attempt} of {max}. Nothing was written: {reason}\n\n\
                 Call begin_write with path \"{new}\", then send the whole file as your next \
                 answer in plain text, ending with the marker begin_write gives you."
            );
        }
        // The current text of the target, as much as the window allows.
        let used = count_request(
            &ChatRequest {
                messages: messages.to_vec(),
                tools: self.tools(),
                ..ChatRequest::default()
            },
            self.budget.encoding,
        );
        let reserve = self.answer_reserve(Protocol::Tools);
        let room = self
            .budget
            .room(reserve)
            .saturating_sub(used + 300)
            .clamp(200, 1_500);
        let current = match self.read_target() {
            Ok((text, _)) => {
                let (first, last) = self.focus_lines(&text);
                let shown = prompt::numbered(&text, first, last);
                truncate_to_tokens(&shown, room, self.budget.encoding).to_owned()
            }
            Err(e) => e.to_string(),
        };
        format!(
            "Attempt {attempt} of {max}. Your edit was not applied: {reason}\n\n\
             The current text of {label}:\n{current}\n\
             Copy the text to replace exactly from these lines (without the line-number prefix) \
             and call edit_file again."
        )
    }

    /// The lines a refusal shows: the target, else the selection with a few lines around it.
    fn focus_lines(&self, text: &str) -> (usize, usize) {
        let total = text.lines().count().max(1);
        match &self.target {
            Some(t) => (t.first, t.last.min(total)),
            None => {
                let range = clamp_range(text, &self.request.range);
                let a = text[..range.start].matches('\n').count() + 1;
                let b = text[..range.end].matches('\n').count() + 1;
                (a.saturating_sub(3).max(1), (b + 3).min(total))
            }
        }
    }

    fn target_label(&self) -> String {
        self.target
            .as_ref()
            .map_or_else(|| "code".to_owned(), |t| t.label.clone())
    }

    fn rules(&mut self) -> String {
        match &self.ctx.rules {
            Some(r) => r.clone(),
            None => self.workspace_rules(),
        }
    }

    /// AGENTS.md, CLAUDE.md and .patchwise/RULES.md of every root, as the working copy has them.
    fn workspace_rules(&mut self) -> String {
        let roots = self.ctx.roots.clone();
        let s = self.session();
        let mut out = String::new();
        let mut seen = HashSet::new();
        for root in &roots {
            for name in RULE_FILES {
                let path = root.join(name);
                let Ok((text, _)) = s.copy.read(&path, s.fs.as_ref()) else {
                    continue;
                };
                if text.trim().is_empty() || !seen.insert(text.clone()) {
                    continue;
                }
                out.push_str(&format!("## {name}\n\n"));
                if text.len() > MAX_RULES_CHARS {
                    out.push_str(&crate::edit::text::clip(&text, MAX_RULES_CHARS));
                    out.push_str(&format!(
                        "\n[cut: {name} has {} characters; read_file shows the rest]\n",
                        text.len()
                    ));
                } else {
                    out.push_str(text.trim_end());
                    out.push('\n');
                }
                out.push('\n');
            }
        }
        out
    }

    fn region(&self, text: &str, range: &Range<usize>, budget: usize) -> String {
        let tree = SyntaxTree::parse(text, self.language);
        let target = if range.is_empty() && range.start == 0 {
            Target::None
        } else {
            Target::Bytes(range.clone())
        };
        let options = RegionOptions {
            budget,
            encoding: self.budget.encoding,
            ..RegionOptions::default()
        };
        extract_region(text, &tree, &self.rel, &target, &options).text
    }

    // -- answers --------------------------------------------------------------------------------

    /// Notes how an edit was placed (each way once, in order), for the proposal.
    fn matched_once(&mut self, by: impl Into<String>) {
        let by = by.into();
        if !self.matched.contains(&by) {
            self.matched.push(by);
        }
    }

    /// What an answer of the tools protocol (or a rewrite answer that called a tool) amounts
    /// to: a write session's content, the outcomes of its calls, or its text.
    async fn handle(
        &mut self,
        answer: Answer,
        response: &ChatResponse,
        messages: &mut Vec<Message>,
    ) -> Result<Next, EditFailure> {
        let (calls, outcomes) = match answer {
            Answer::Write { reply, wrote } => {
                messages.push(Message::user(reply));
                if wrote {
                    self.edits += 1;
                    self.matched_once("write-session");
                    if self.ctx.options.stop_after_edit {
                        return Ok(Next::Done);
                    }
                }
                return Ok(Next::Ask);
            }
            Answer::Text => return Ok(self.no_calls(response, messages)),
            Answer::Calls { calls, outcomes } => (calls, outcomes),
        };
        let tally = answer::tally(&outcomes, self.edits > 0);
        for by in tally.matched_by {
            self.matched_once(by);
        }
        if let Some(i) = tally.refused {
            let e = match &outcomes[i].status {
                Status::Failed(e) => e.clone(),
                _ => unreachable!("a refusal is a failed call"),
            };
            let reason = self.explain_refusal(&calls[i], &e, &outcomes[i].content);
            return Ok(Next::Failed {
                reason,
                refused: true,
            });
        }
        let made = tally.made;
        self.edits += made;
        let only_repeats = made == 0 && self.edits > 0 && tally.all_failed;
        if only_repeats || (made > 0 && self.ctx.options.stop_after_edit) {
            return Ok(Next::Done);
        }
        Ok(Next::Ask)
    }

    /// An answer without a call: done after an edit; else its code block (a new file's content
    /// through a write session, or the selection or target rewritten); else why it failed.
    fn no_calls(&mut self, response: &ChatResponse, messages: &mut Vec<Message>) -> Next {
        if self.edits > 0 {
            return Next::Done;
        }
        // A code block instead of a begin_write call for a new (or empty) target: its
        // content, through a write session (validated, continued when cut).
        if self.creates.contains(&self.rel) && !fenced_blocks(&response.text).is_empty() {
            let rel = self.rel.clone();
            let mode = if self.target_exists() {
                WholeMode::Overwrite
            } else {
                WholeMode::Create
            };
            let session = self.session.get_or_insert_with(model_loop::empty_session);
            if let Ok(collected) = self.writes.adopt_block(session, &rel, mode, response) {
                messages.push(Message::user(collected.reply));
                if collected.wrote.is_none() {
                    return Next::Ask;
                }
                self.edits += 1;
                self.matched_once("write-session");
                return Next::Done;
            }
        }
        // A code block instead of a call: the selection (or the target) rewritten.
        if !fenced_blocks(&response.text).is_empty() {
            match self.apply_block(&response.text, false) {
                Ok(by) => {
                    self.edits += 1;
                    self.matched_once(by);
                    return Next::Done;
                }
                Err(BlockError::Refused(reason)) => {
                    return Next::Failed {
                        reason,
                        refused: true,
                    };
                }
                Err(BlockError::NoBlock) => {}
            }
        }
        self.force_edit = self.ctx.options.force_edit;
        let way = match self.still_to_create() {
            Some(new) => format!(
                "call begin_write with path \"{new}\", then send the file's content as plain \
                 text"
            ),
            None => "call edit_file with old_string copied from the file and the new_string \
                     that carries out the instruction"
                .to_owned(),
        };
        Next::Failed {
            reason: format!(
                "the answer contained no tool call and no edit ({}); {way}",
                answer::what_it_said(response, 200)
            ),
            refused: false,
        }
    }

    /// Tool calls written in the text (models without native tools that the model layer did
    /// not catch, or a bare arguments object), or SEARCH/REPLACE blocks, diffs and patches,
    /// turned into tool calls.
    fn calls_in_text(&self, text: &str) -> Vec<ToolCall> {
        let reading = Reading {
            all_tools: true,
            bare_arguments: true,
            default_path: Some(&self.rel),
        };
        answer::calls_in_text(text, &self.tools(), &reading)
    }

    /// Reads what small models mean by the calls they send (`docs/editing.md`):
    /// - `edit_file` with an empty `old_string` and a line hint is an insertion at that line;
    /// - `edit_file` with `replace_all` and a one-line `old_string` renames inside the target
    ///   only, whole words only (a rename inside the function asked about, not the file).
    fn prepare_calls(&mut self, calls: Vec<ToolCall>) -> Vec<ToolCall> {
        let text = self.read_target().ok().map(|(t, _)| t);
        let target_exists = self.target_exists();
        calls
            .into_iter()
            .map(|call| {
                if tools::canonical_name(&call.name) == Some("begin_write") {
                    return self.blank_target_overwritten(call, target_exists);
                }
                if tools::canonical_name(&call.name) != Some("edit_file") {
                    return call;
                }
                let str_arg = |k: &str| {
                    ["old_string", "old_str", "old", "search"]
                        .iter()
                        .chain(["new_string", "new_str", "new", "replace"].iter())
                        .filter(|a| a.starts_with(k))
                        .find_map(|a| call.arguments.get(*a).and_then(Value::as_str))
                        .map(str::to_owned)
                };
                let (Some(old), Some(new)) = (str_arg("old"), str_arg("new")) else {
                    return call;
                };
                let path = call.arguments.get("path").cloned().unwrap_or(json!(self.rel));
                if old.trim().is_empty() && !new.trim().is_empty() {
                    if let Some(line) = line_hint(&call.arguments) {
                        return ToolCall {
                            name: "insert_lines".to_owned(),
                            arguments: json!({"path": path, "line": line, "text": new, "before": true}),
                            ..call
                        };
                    }
                    return call;
                }
                let all = call.arguments.get("replace_all").and_then(Value::as_bool) == Some(true);
                if all
                    && !old.contains('\n')
                    && let (Some(text), Some(t)) = (&text, &self.target)
                    && let Some(rewritten) = rename_in_lines(text, t.first, t.last, old.trim(), new.trim())
                {
                    return ToolCall {
                        name: "replace_lines".to_owned(),
                        arguments: json!({"path": path, "start": t.first, "end": t.last, "text": rewritten}),
                        ..call
                    };
                }
                call
            })
            .collect()
    }

    /// `begin_write` in mode create (the default) on the run's own blank target, which exists
    /// (an empty buffer or file the user asked to fill): there is nothing to lose, so it
    /// overwrites it instead of being refused.
    fn blank_target_overwritten(&self, mut call: ToolCall, target_exists: bool) -> ToolCall {
        let names_target = call
            .arguments
            .get("path")
            .or_else(|| call.arguments.get("file_path"))
            .and_then(Value::as_str)
            .is_some_and(|p| {
                let p = p.trim().trim_start_matches("./");
                p == self.rel || Path::new(p) == self.abs
            });
        let create = call
            .arguments
            .get("mode")
            .and_then(Value::as_str)
            .is_none_or(|m| WholeMode::parse(m) == Some(WholeMode::Create));
        if target_exists
            && names_target
            && create
            && self.creates.contains(&self.rel)
            && let Some(args) = call.arguments.as_object_mut()
        {
            args.insert("mode".to_owned(), json!("overwrite"));
        }
        call
    }

    /// A refusal as the model reads it, pointing at the way that works for it when the call
    /// was of a kind small models get wrong again and again.
    fn explain_refusal(&mut self, call: &ToolCall, e: &ToolError, content: &str) -> String {
        let old = ["old_string", "old_str", "old"]
            .iter()
            .find_map(|k| call.arguments.get(*k).and_then(Value::as_str))
            .unwrap_or("");
        let edit = tools::canonical_name(&call.name) == Some("edit_file");
        let Some(t) = self.target.clone() else {
            return content.to_owned();
        };
        if edit && e.refusal_kind() == Some(&RefusalKind::EmptyOld) {
            let line = self
                .read_target()
                .map(|(text, _)| target::insertion_line(&text, &t))
                .unwrap_or(t.first);
            return format!(
                "{content}\nTo add lines, call insert_lines with the lines in `text` and `line` \
                 set to the line they go after (to add at the top of {}: line={line}).",
                t.label
            );
        }
        if edit
            && matches!(e.refusal_kind(), Some(RefusalKind::Ambiguous { .. }))
            && !old.trim().contains('\n')
        {
            return format!(
                "{content}\n`{}` is too short to find one place. To change it everywhere in {} \
                 (lines {}-{}), call edit_file with replace_all=true (in this run it changes \
                 whole words inside those lines only), or answer with the complete rewritten {} \
                 in one code block.",
                crate::edit::text::clip(old.trim(), 60),
                t.label,
                t.first,
                t.last,
                t.label
            );
        }
        content.to_owned()
    }

    /// Applies a code block of `answer` as the new text of the target (or, for a block that
    /// answers a tools prompt, of the selection's lines), through the engine and the parse
    /// check. Returns the matching passes.
    fn apply_block(&mut self, answer: &str, whole_answer_ok: bool) -> Result<String, BlockError> {
        let (current, _) = self
            .read_target()
            .map_err(|e| BlockError::Refused(e.to_string()))?;
        let mut blocks: Vec<String> = fenced_blocks(answer).into_iter().map(|b| b.body).collect();
        // An answer that is only code, without a fence: taken when it starts like the target.
        if blocks.is_empty()
            && whole_answer_ok
            && let Some(t) = &self.target
        {
            let first = |s: &str| {
                s.lines()
                    .find(|l| !l.trim().is_empty())
                    .map(str::trim)
                    .map(str::to_owned)
            };
            if first(answer).is_some() && first(answer) == first(t.text(&current)) {
                blocks.push(answer.to_owned());
            }
        }
        if blocks.is_empty() {
            return Err(BlockError::NoBlock);
        }
        let mut spans: Vec<(usize, usize)> = Vec::new();
        if let Some((a, b)) = self.target.as_ref().and_then(|t| t.selection) {
            spans.push((a, b));
        }
        if let Some(t) = &self.target {
            spans.retain(|s| *s != (t.first, t.last));
            spans.insert(
                usize::from(!whole_answer_ok).min(spans.len()),
                (t.first, t.last),
            );
        }
        if spans.is_empty() {
            let range = clamp_range(&current, &self.request.range);
            if range.is_empty() {
                return Err(BlockError::NoBlock);
            }
            let a = current[..range.start].matches('\n').count() + 1;
            let end = if current[..range.end].ends_with('\n') {
                range.end - 1
            } else {
                range.end
            };
            let b = current[..end.max(range.start)].matches('\n').count() + 1;
            spans.push((a, b));
        }
        let mut first_refusal: Option<String> = None;
        for block in &blocks {
            for &(a, b) in &spans {
                let parse_check = self.ctx.options.parse_check;
                match model_loop::rewrite::rewrite_target(
                    &current,
                    &self.rel,
                    (a, b),
                    block,
                    parse_check,
                ) {
                    Ok(applied) => {
                        let abs = self.abs.clone();
                        let version = self.read_target().ok().and_then(|(_, v)| v);
                        let s = self.session();
                        s.copy.write(&abs, &current, version, applied.text.clone());
                        s.ledger.record_write(&abs, &applied.text);
                        return Ok(applied.matched_by().to_string());
                    }
                    Err(refusal) => {
                        first_refusal.get_or_insert(refusal);
                    }
                }
            }
        }
        Err(BlockError::Refused(first_refusal.unwrap_or_default()))
    }

    fn no_block_reason(&self, why: BlockError, response: &ChatResponse) -> (String, bool) {
        match why {
            BlockError::Refused(reason) => (reason, true),
            BlockError::NoBlock => (
                format!(
                    "the answer had no code block ({}); reply with the complete rewritten {} in \
                     one code block",
                    answer::what_it_said(response, 200),
                    self.target_label()
                ),
                false,
            ),
        }
    }

    /// The target's text in the working copy; empty while a target the run creates does not
    /// exist yet.
    fn read_target(&mut self) -> Result<(String, Option<i32>), EditFailure> {
        let abs = self.abs.clone();
        let rel = self.rel.clone();
        let s = self.session();
        if !s.copy.exists(&abs, s.fs.as_ref()) {
            return Ok((String::new(), None));
        }
        s.copy.read(&abs, s.fs.as_ref()).map_err(|e| {
            EditFailure::Target(format!(
                "{rel}: {}",
                e.to_string().replace(&abs.display().to_string(), "")
            ))
        })
    }

    /// Reads the file and records the read: the model is shown it, so it may edit it.
    fn read_and_record(&mut self) -> Result<(String, Option<i32>), EditFailure> {
        let (text, version) = self.read_target()?;
        if !self.target_exists() {
            return Ok((text, version));
        }
        let abs = self.abs.clone();
        let s = self.session();
        match version {
            Some(v) => s.ledger.record_version(abs, &text, v),
            None => s.ledger.record_read(abs, &text),
        }
        Ok((text, version))
    }

    fn finish(
        &mut self,
        model: &str,
        attempts: usize,
        matched: &[String],
    ) -> Result<Proposal, EditFailure> {
        let roots = self.ctx.roots.clone();
        let changes = self.session().copy.changes();
        if changes.is_empty() {
            return Err(EditFailure::NoEdit {
                attempts,
                reason: "the model's edits left every file as it was".to_owned(),
            });
        }
        let files = changes
            .into_iter()
            .map(|c| {
                let display = display_path(&roots, &c.path);
                ProposalFile::new(
                    c.path,
                    display,
                    c.base_version,
                    c.original.is_none(),
                    c.original.unwrap_or_default(),
                    c.text,
                )
            })
            .collect();
        let matched_by = if matched.is_empty() {
            "none".to_owned()
        } else {
            matched.join(", ")
        };
        let proposal = Proposal::new(
            self.request.instruction.clone(),
            files,
            model,
            attempts,
            matched_by,
        );
        self.report(RunPhase::Ready, "proposal ready", 100);
        Ok(proposal)
    }
}

/// Why a code block was not applied.
enum BlockError {
    /// The answer has no code block.
    NoBlock,
    /// The block does not line up, or breaks the syntax: the message for the model.
    Refused(String),
}

/// `[models."NAME"] edit_format` of `model` (`provider/model`, or the model alone), else
/// `auto`: how an edit, and a develop step, asks this model for a change.
pub(crate) fn configured_format(config: &Config, model: &str) -> EditFormat {
    let (provider, name) = model.split_once('/').unwrap_or(("", model));
    config
        .model_settings(provider, name)
        .edit_format
        .unwrap_or_default()
}

/// Whether an instruction asks for something new to be made (a file it names that does not
/// exist is then one to create).
fn asks_to_create(instruction: &str) -> bool {
    let lower = instruction.to_lowercase();
    lower.split(|c: char| !c.is_alphanumeric()).any(|w| {
        matches!(
            w,
            "create" | "new" | "write" | "add" | "generate" | "scaffold" | "make"
        )
    })
}

/// Words of an instruction that look like file paths: a known extension (`src/big.rs`,
/// `ci.yml`, `README.md`), quotes and trailing punctuation removed, no URLs.
pub(crate) fn named_paths(instruction: &str) -> Vec<&str> {
    const TEXT_EXTENSIONS: [&str; 10] = [
        "md", "markdown", "txt", "yaml", "yml", "html", "css", "sh", "csv", "xml",
    ];
    instruction
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| {
                matches!(
                    c,
                    '`' | '"' | '\'' | '(' | ')' | '[' | ']' | ',' | ';' | ':' | '!' | '?'
                )
            })
            .trim_end_matches('.')
        })
        .filter(|w| !w.contains("://") && !w.is_empty())
        .filter(|w| {
            let name = w.rsplit('/').next().unwrap_or(w);
            let Some((stem, ext)) = name.rsplit_once('.') else {
                return false;
            };
            !stem.is_empty()
                && (Language::from_path(name).is_some()
                    || crate::syntax::validate::Format::of(name).is_some()
                    || TEXT_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()))
        })
        .collect()
}

/// The line a call names for an insertion (`line`, `start_line`, …), when it names one.
fn line_hint(args: &Value) -> Option<u64> {
    [
        "line",
        "line_number",
        "start_line",
        "start",
        "insert_line",
        "at_line",
    ]
    .iter()
    .find_map(|k| {
        let v = args.get(*k)?;
        v.as_u64().or_else(|| v.as_str()?.trim().parse().ok())
    })
    .filter(|n| *n >= 1)
}

/// Lines `first..=last` of `text` with every whole-word `old` replaced by `new` (plain
/// occurrences when `old` is not a word); `None` when nothing would change.
fn rename_in_lines(text: &str, first: usize, last: usize, old: &str, new: &str) -> Option<String> {
    if old.is_empty() || old == new {
        return None;
    }
    let range = lines_to_bytes(text, first, last);
    let region = text.get(range)?;
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let is_word = old.chars().all(word);
    let mut out = String::with_capacity(region.len());
    let mut rest = region;
    let mut changed = false;
    while let Some(i) = rest.find(old) {
        let before = rest[..i].chars().next_back();
        let after = rest[i + old.len()..].chars().next();
        let whole = !is_word || (!before.is_some_and(word) && !after.is_some_and(word));
        out.push_str(&rest[..i]);
        out.push_str(if whole { new } else { old });
        changed |= whole;
        rest = &rest[i + old.len()..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

fn model_failure(e: ModelError) -> EditFailure {
    match e {
        ModelError::Cancelled => EditFailure::Cancelled,
        other => EditFailure::Model(other),
    }
}

fn clamp_range(text: &str, range: &Range<usize>) -> Range<usize> {
    let floor = |mut i: usize| {
        i = i.min(text.len());
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let (a, b) = (floor(range.start), floor(range.end));
    a.min(b)..a.max(b)
}

pub(crate) fn display_path(roots: &[PathBuf], path: &Path) -> String {
    roots
        .iter()
        .find_map(|r| path.strip_prefix(r).ok())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_else(|| path.display().to_string())
}

impl fmt::Debug for Models {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Models::Router(_) => f.write_str("Models::Router"),
            Models::Fixed { coder, escalation } => f
                .debug_struct("Models::Fixed")
                .field("coder", &coder.name())
                .field(
                    "escalation",
                    &escalation.as_ref().map(|m| m.name().to_owned()),
                )
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_whole_words_inside_the_lines_only() {
        let text = "mid = 1\ndef f():\n    mid = 2\n    amid = mid + 1\n    return mid\nmid = 3\n";
        assert_eq!(
            rename_in_lines(text, 3, 5, "mid", "middle").as_deref(),
            Some("    middle = 2\n    amid = middle + 1\n    return middle\n")
        );
        assert_eq!(rename_in_lines(text, 3, 5, "xyz", "q"), None);
    }

    #[test]
    fn paths_an_instruction_names() {
        assert_eq!(
            named_paths("Create `src/big.rs` and tools/inventory.py, then README.md."),
            ["src/big.rs", "tools/inventory.py", "README.md"]
        );
        assert_eq!(
            named_paths("use e.g. the v1.2 API from https://x.org/a.rs here"),
            Vec::<&str>::new()
        );
        assert!(asks_to_create("Add a CI workflow"));
        assert!(asks_to_create("write the guide"));
        assert!(!asks_to_create("rename mid to middle in src/lib.rs"));
    }

    #[test]
    fn line_hints() {
        assert_eq!(line_hint(&json!({"line": 4})), Some(4));
        assert_eq!(line_hint(&json!({"start_line": "7"})), Some(7));
        assert_eq!(line_hint(&json!({"line": 0})), None);
        assert_eq!(line_hint(&json!({"path": "x"})), None);
    }
}
