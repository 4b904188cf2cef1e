//! The edit workflow: one instruction and a target range → a [`Proposal`].
//!
//! The model is shown the target through syntax regions (the whole file with line numbers when
//! it is small, the target item with an outline otherwise) and the workspace's rules
//! (`AGENTS.md`, `CLAUDE.md`, `.patchwise/RULES.md`), and works through the tools on the run's
//! working copy. A refused edit is not the end: the model gets the refusal and the current text
//! of the region, and tries again — at most `max_attempts` times; the last attempt may go to the
//! `escalation` model with a clean prompt that says why the earlier ones failed. Models without
//! native tools use the text protocol (the model layer teaches it); a plain SEARCH/REPLACE block
//! or diff in the answer is applied through the same engine.
//!
//! It never writes: the result is a proposal, and nothing reaches the disk or the editor until
//! the user accepts it. It never sees protocol types. Cancelling the token ends the run promptly.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ModelRole};
use crate::edit::RefusalKind;
use crate::edit::formats::{self, Action};
use crate::edit::ops::Operation;
use crate::model::text_tools::parse_tool_text;
use crate::model::{
    ChatModel, ChatOptions, ChatRequest, ChatResponse, FinishReason, Message, ModelError,
    ModelRouter, ToolCall, ToolChoice, ToolSpec, complete,
};
use crate::syntax::{Language, RegionOptions, SyntaxTree, Target, extract_region};
use crate::tools::{
    self, CODING_AGENT, FileSystem, RealFs, Session, Snapshot, Status, ToolError, ToolOptions,
    ToolOutcome,
};

use super::proposal::{Proposal, ProposalFile};

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
    /// Token budget of the region shown in the first prompt.
    pub region_budget: usize,
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

/// A progress report: a phase message and a percentage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub message: String,
    pub percent: u32,
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
    #[error("no proposal: the model could not be reached: {0}")]
    Model(ModelError),
    #[error("no proposal: cancelled")]
    Cancelled,
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
    let (text, _) = session
        .copy
        .read(&resolved.abs, ctx.fs.as_ref())
        .map_err(|e| EditFailure::Target(e.to_string()))?;
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
    tools: Vec<ToolSpec>,
    /// The next answer must call `edit_file`.
    force_edit: bool,
}

/// How one model answer went.
enum Round {
    /// Tool calls ran, no edit was refused; ask again.
    Continue,
    /// The model is done (no more calls, at least one edit made).
    Done,
    /// The attempt failed with this message for the model (and the user).
    Failed { reason: String, refused: bool },
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
        Ok(Run {
            ctx,
            request,
            progress,
            cancel,
            session: Some(session),
            rel: resolved.rel,
            abs: resolved.abs,
            tools: tools::specs(),
            force_edit: ctx.options.force_edit,
        })
    }

    fn report(&self, message: impl Into<String>, percent: u32) {
        (self.progress)(Progress {
            message: message.into(),
            percent: percent.min(100),
        });
    }

    fn session(&mut self) -> &mut Session {
        // Taken only while tools run on a blocking thread, and put back before any other use.
        self.session.get_or_insert_with(unreachable_session)
    }

    async fn go(mut self) -> Result<Proposal, EditFailure> {
        self.report("reading", 5);
        let (coder, escalation) = self.models().await?;
        let max = self.ctx.options.max_attempts.max(1);
        let first_prompt = self.first_prompt()?;
        let mut model = coder.clone();
        let mut messages = first_prompt.clone();
        let mut failures: Vec<String> = Vec::new();
        let mut matched: Vec<String> = Vec::new();
        let mut attempt = 1;
        loop {
            let mut rounds = 0;
            let mut edits = 0usize;
            // `None`: the model is done; `Some((reason, refused))`: the attempt failed.
            let failed: Option<(String, bool)> = loop {
                rounds += 1;
                if rounds > self.ctx.options.max_rounds {
                    break if edits > 0 {
                        None
                    } else {
                        Some((
                            format!(
                                "the model used {} answers without making an edit",
                                self.ctx.options.max_rounds
                            ),
                            false,
                        ))
                    };
                }
                let percent = 10 + ((attempt - 1) * 80 + (rounds - 1).min(8) * 8) / max;
                self.report(format!("asking {}", model.name()), percent as u32);
                let response = match self.ask(model.as_ref(), &messages).await {
                    Ok(r) => r,
                    // An answer that broke off (a shared server interrupting it, a cut stream)
                    // costs an attempt, not the run.
                    Err(EditFailure::Model(e)) if broke_off(&e) && attempt < max => {
                        break Some((format!("the answer broke off ({e})"), false));
                    }
                    Err(e) => return Err(e),
                };
                match self
                    .handle(&response, &mut messages, &mut edits, &mut matched)
                    .await?
                {
                    Round::Continue => continue,
                    Round::Done => break None,
                    Round::Failed { reason, refused } => break Some((reason, refused)),
                }
            };
            let Some((reason, refused)) = failed else {
                break;
            };
            failures.push(reason.clone());
            if attempt >= max {
                return Err(if refused {
                    EditFailure::Refused {
                        attempts: attempt,
                        last: reason,
                    }
                } else {
                    EditFailure::NoEdit {
                        attempts: attempt,
                        reason,
                    }
                });
            }
            attempt += 1;
            self.report(
                format!("attempt {attempt}/{max}"),
                (10 + (attempt - 1) * 80 / max) as u32,
            );
            let escalate = attempt == max && self.ctx.options.escalate;
            match (&escalation, escalate) {
                (Some(stronger), true) => {
                    // A clean start: the working copy and the ledger forget the failed attempts.
                    model = stronger.clone();
                    self.force_edit = self.ctx.options.force_edit;
                    let s = self.session();
                    s.copy.reset();
                    s.ledger = Default::default();
                    matched.clear();
                    messages = self.escalation_prompt(&failures)?;
                }
                _ => {
                    let region = self.current_region();
                    messages.push(Message::user(format!(
                        "Attempt {attempt} of {max}. Your edit was not applied: {reason}\n\n\
                         The current text of the target region:\n{region}\n\
                         Copy the text to replace exactly from these lines (without the \
                         line-number prefix) and call edit_file again."
                    )));
                }
            }
        }
        self.finish(model.name(), attempt, &matched)
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

    async fn ask(
        &mut self,
        model: &dyn ChatModel,
        messages: &[Message],
    ) -> Result<ChatResponse, EditFailure> {
        if self.cancel.is_cancelled() {
            return Err(EditFailure::Cancelled);
        }
        let tool_choice = if std::mem::take(&mut self.force_edit) {
            ToolChoice::Tool("edit_file".to_owned())
        } else {
            ToolChoice::Auto
        };
        let request = ChatRequest {
            messages: messages.to_vec(),
            tools: self.tools.clone(),
            options: ChatOptions {
                temperature: self.ctx.options.temperature,
                max_tokens: self.ctx.options.max_tokens,
                tool_choice,
                ..ChatOptions::default()
            },
        };
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(EditFailure::Cancelled),
            r = complete(model, request, self.cancel.clone()) => r.map_err(model_failure),
        }
    }

    /// Runs the calls of one answer (native, written as text, or an edit format in the text).
    async fn handle(
        &mut self,
        response: &ChatResponse,
        messages: &mut Vec<Message>,
        edits: &mut usize,
        matched: &mut Vec<String>,
    ) -> Result<Round, EditFailure> {
        let mut calls = response.tool_calls.clone();
        let mut native = !calls.is_empty();
        if calls.is_empty() {
            calls = self.calls_in_text(&response.text);
            native = false;
        }
        messages.push(if native {
            response.to_message()
        } else {
            Message::assistant(response.text.clone())
        });
        if calls.is_empty() {
            if *edits > 0 {
                return Ok(Round::Done);
            }
            self.force_edit = self.ctx.options.force_edit;
            let said = response.text.trim();
            let reason = format!(
                "the answer contained no tool call and no edit{}; call edit_file with \
                 old_string copied from the file and the new_string that carries out the \
                 instruction",
                if response.finish == Some(FinishReason::Length) {
                    " (the answer was cut at the output-token limit)".to_owned()
                } else if said.is_empty() {
                    " (it was empty)".to_owned()
                } else {
                    format!(
                        " (it said: \"{}\")",
                        crate::edit::text::clip(&said.replace('\n', " "), 200)
                    )
                }
            );
            return Ok(Round::Failed {
                reason,
                refused: false,
            });
        }
        let outcomes = self.execute(calls.clone()).await?;
        let mut refusal: Option<String> = None;
        let mut made = 0;
        let mut results_text = String::new();
        for o in &outcomes {
            match &o.status {
                Status::Edited { matched_by, .. } => {
                    made += 1;
                    if !matched.contains(matched_by) {
                        matched.push(matched_by.clone());
                    }
                }
                Status::Failed(e) if e.is_edit_refusal() || is_edit_error(o, e) => {
                    // Repeating an edit that already went through is the model saying it is done.
                    let repeat = *edits + made > 0
                        && matches!(
                            e.refusal_kind(),
                            Some(RefusalKind::AlreadyApplied | RefusalKind::NoOp)
                        );
                    if !repeat && refusal.is_none() {
                        refusal = Some(o.content.clone());
                    }
                }
                _ => {}
            }
            if native {
                messages.push(Message::ToolResult {
                    call_id: o.call_id.clone(),
                    name: o.name.clone(),
                    content: o.content.clone(),
                    is_error: o.is_error(),
                });
            } else {
                // The shape the model layer's text protocol uses for results.
                let head = if o.is_error() {
                    "Error from"
                } else {
                    "Result of"
                };
                results_text.push_str(&format!(
                    "{head} `{}`:\n~~~\n{}\n~~~\n\n",
                    o.name,
                    o.content.trim_end()
                ));
            }
        }
        if !native {
            messages.push(Message::user(results_text.trim_end().to_owned()));
        }
        *edits += made;
        if let Some(reason) = refusal {
            return Ok(Round::Failed {
                reason,
                refused: true,
            });
        }
        let only_repeats = made == 0
            && *edits > 0
            && outcomes
                .iter()
                .all(|o| matches!(o.status, Status::Failed(_)));
        if only_repeats || (made > 0 && self.ctx.options.stop_after_edit) {
            return Ok(Round::Done);
        }
        Ok(Round::Continue)
    }

    /// Tool calls written in the text (models without native tools that the model layer did
    /// not catch), or SEARCH/REPLACE blocks, diffs and patches, turned into tool calls.
    fn calls_in_text(&mut self, text: &str) -> Vec<ToolCall> {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        let found = parse_tool_text(text, &names);
        if !found.calls.is_empty() {
            return found.calls;
        }
        let Ok(edits) = formats::parse(text) else {
            return self.selection_rewrite(text).into_iter().collect();
        };
        let mut calls = Vec::new();
        for (i, e) in edits.into_iter().enumerate() {
            let path = e.path.unwrap_or_else(|| self.rel.clone());
            let (name, arguments) = match e.action {
                Action::Edit(Operation::Replace {
                    old,
                    new,
                    replace_all,
                }) => (
                    "edit_file",
                    json!({"path": path, "old_string": old, "new_string": new, "replace_all": replace_all}),
                ),
                Action::Create(content) => {
                    ("write_file", json!({"path": path, "content": content}))
                }
                // Deletes and moves are beyond an edit run; the model is told so.
                _ => ("unsupported_file_operation", json!({"path": path})),
            };
            calls.push(ToolCall {
                id: format!("text_edit_{i}"),
                name: name.to_owned(),
                arguments,
                arguments_error: None,
                provider_data: None,
            });
        }
        calls
    }

    /// A model that answers with the selection rewritten in one fenced code block (the classic
    /// "edit selection" answer): the block replaces the selected lines, as an `edit_file` call
    /// whose OLD is the selection at the block's indentation — so the engine's uniqueness rule
    /// and indentation pass decide. Only when the block starts and ends with the selection's
    /// first and last non-blank lines: a fragment is never taken for the whole selection.
    fn selection_rewrite(&mut self, text: &str) -> Option<ToolCall> {
        let blocks = fenced_blocks(text);
        let [block] = blocks.as_slice() else {
            return None;
        };
        let block = block.clone();
        let (current, _) = self.read_target().ok()?;
        let range = clamp_range(&current, &self.request.range);
        if range.is_empty() {
            return None;
        }
        let start = current[..range.start].rfind('\n').map_or(0, |i| i + 1);
        let end = if range.end > start && current[..range.end].ends_with('\n') {
            range.end - 1
        } else {
            current[range.end..]
                .find('\n')
                .map_or(current.len(), |i| range.end + i)
        };
        let selected = current.get(start..end)?.trim_end_matches('\r');
        let nonblank = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.trim_end().to_owned())
                .collect()
        };
        let (sel, blk) = (nonblank(selected), nonblank(&block));
        if sel.len() < 2 || blk.len() < 2 {
            return None;
        }
        let same = |a: &str, b: &str| a.trim() == b.trim();
        if !same(&sel[0], &blk[0]) || !same(&sel[sel.len() - 1], &blk[blk.len() - 1]) {
            return None;
        }
        let indent = |lines: &[String]| -> String {
            lines
                .iter()
                .map(|l| &l[..l.len() - l.trim_start().len()])
                .min_by_key(|i| i.len())
                .unwrap_or("")
                .to_owned()
        };
        let (sel_indent, blk_indent) = (indent(&sel), indent(&blk));
        let old: Vec<String> = selected
            .lines()
            .map(|l| {
                let l = l.trim_end_matches('\r');
                match l.strip_prefix(sel_indent.as_str()) {
                    Some(rest) if !rest.is_empty() => format!("{blk_indent}{rest}"),
                    _ => l.trim_start().to_owned(),
                }
            })
            .collect();
        Some(ToolCall {
            id: "text_selection_rewrite".to_owned(),
            name: "edit_file".to_owned(),
            arguments: json!({
                "path": self.rel,
                "old_string": old.join("\n"),
                "new_string": block.trim_end_matches('\n'),
            }),
            arguments_error: None,
            provider_data: None,
        })
    }

    /// Runs tool calls on a blocking thread (they read the disk), honouring cancellation.
    async fn execute(&mut self, calls: Vec<ToolCall>) -> Result<Vec<ToolOutcome>, EditFailure> {
        let mut session = self.session.take().unwrap_or_else(unreachable_session);
        let job = tokio::task::spawn_blocking(move || {
            let outcomes = session.execute_all(&calls);
            (session, outcomes)
        });
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(EditFailure::Cancelled),
            r = job => match r {
                Ok((session, outcomes)) => {
                    self.session = Some(session);
                    Ok(outcomes)
                }
                Err(e) => Err(EditFailure::Target(format!("a tool failed unexpectedly: {e}"))),
            },
        }
    }

    /// System and user messages of a first attempt.
    fn first_prompt(&mut self) -> Result<Vec<Message>, EditFailure> {
        let (text, version) = self.read_target()?;
        let range = clamp_range(&text, &self.request.range);
        let region = self.region(&text, &range);
        // The model has seen the file as it is now: it may edit it.
        let abs = self.abs.clone();
        let s = self.session();
        match version {
            Some(v) => s.ledger.record_version(abs, &text, v),
            None => s.ledger.record_read(abs, &text),
        }
        let mut user = format!("Instruction: {}\n\n", self.request.instruction.trim());
        user.push_str(&target_description(&self.rel, &text, &range));
        user.push('\n');
        user.push_str(&region);
        // No "when done, answer in a sentence" here: small local models (Qwen2.5-Coder 1.5B)
        // read it as permission to answer "Done." at once, without any edit. The follow-up turn
        // after a tool result is where a model says it is finished.
        user.push_str(
            "\nRespond with an edit_file call (or another edit tool) that makes this change.",
        );
        Ok(vec![
            Message::system(self.system_prompt()),
            Message::user(user),
        ])
    }

    /// The clean prompt of an escalated attempt: the task, the current file, and why the
    /// earlier attempts failed.
    fn escalation_prompt(&mut self, failures: &[String]) -> Result<Vec<Message>, EditFailure> {
        let mut messages = self.first_prompt()?;
        let mut summary = String::from(
            "Earlier attempts by another model failed; avoid their mistakes. Why each failed:\n",
        );
        for (i, f) in failures.iter().enumerate() {
            summary.push_str(&format!(
                "{}. {}\n",
                i + 1,
                crate::edit::text::clip(f.trim(), 1200)
            ));
        }
        if let Some(Message::User { content }) = messages.last_mut() {
            content.push_str("\n\n");
            content.push_str(&summary);
        }
        Ok(messages)
    }

    fn system_prompt(&mut self) -> String {
        let mut s = String::from(
            "You are a careful coding agent. You change files of a workspace only through the \
             tools. Rules:\n\
             - Make exactly the change the instruction asks for, nothing more; keep the file's \
             style and indentation.\n\
             - Files are shown with line numbers (number, tab, text); the numbers are not part \
             of the file. Never copy them into old_string or new_string.\n\
             - edit_file replaces old_string with new_string: copy old_string exactly from the \
             current file, with enough lines to match one place only.\n\
             - Read a file with read_file before editing anything other than the file shown.\n\
             - If an edit is refused, read the refusal: it shows the current text; fix the call \
             and try again.\n\
             - Paths are relative to the workspace root.\n",
        );
        let rules = match &self.ctx.rules {
            Some(r) => r.clone(),
            None => self.workspace_rules(),
        };
        if !rules.trim().is_empty() {
            s.push_str("\n# Workspace rules\n\n");
            s.push_str(rules.trim());
            s.push('\n');
        }
        s
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

    fn read_target(&mut self) -> Result<(String, Option<i32>), EditFailure> {
        let abs = self.abs.clone();
        let rel = self.rel.clone();
        let s = self.session();
        s.copy.read(&abs, s.fs.as_ref()).map_err(|e| {
            EditFailure::Target(format!(
                "{rel}: {}",
                e.to_string().replace(&abs.display().to_string(), "")
            ))
        })
    }

    fn region(&self, text: &str, range: &Range<usize>) -> String {
        let language = Language::from_path(&self.rel).unwrap_or(Language::Text);
        let tree = SyntaxTree::parse(text, language);
        let target = if range.is_empty() && range.start == 0 {
            Target::None
        } else {
            Target::Bytes(range.clone())
        };
        let options = RegionOptions {
            budget: self.ctx.options.region_budget,
            ..RegionOptions::default()
        };
        extract_region(text, &tree, &self.rel, &target, &options).text
    }

    /// The target region as it is now in the working copy, numbered (for a retry).
    fn current_region(&mut self) -> String {
        match self.read_target() {
            Ok((text, _)) => {
                let range = clamp_range(&text, &self.request.range);
                self.region(&text, &range)
            }
            Err(e) => e.to_string(),
        }
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
        self.report("proposal ready", 100);
        Ok(proposal)
    }
}

/// Whether a failed call was an edit the model attempted (not found, bad arguments of an edit
/// tool): such a failure ends the attempt like a refusal does.
fn is_edit_error(o: &ToolOutcome, e: &ToolError) -> bool {
    let edit_tool = !tools::is_read_only(&o.name);
    edit_tool
        && !matches!(
            e,
            ToolError::UnknownTool { .. } | ToolError::NotAvailable { .. }
        )
}

/// Failures of one answer that another request may not have.
fn broke_off(e: &ModelError) -> bool {
    matches!(
        e,
        ModelError::StreamEndedEarly { .. } | ModelError::IncompleteToolCall { .. }
    )
}

fn model_failure(e: ModelError) -> EditFailure {
    match e {
        ModelError::Cancelled => EditFailure::Cancelled,
        other => EditFailure::Model(other),
    }
}

fn unreachable_session() -> Session {
    // The session is only absent while tools run, and `execute` awaits them before returning;
    // an empty session (no roots: every path refused) is the harmless fallback.
    Session::new(
        &[],
        Arc::new(RealFs),
        Snapshot::new(),
        ToolOptions::default(),
    )
}

/// The contents of the fenced code blocks (``` or ~~~) of a text; an unclosed block counts to
/// the end.
fn fenced_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let fence = if t.starts_with("```") {
            Some("```")
        } else if t.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (&mut current, fence) {
            (None, Some(f)) => current = Some((f.to_owned(), String::new())),
            (Some((open, body)), Some(f)) if f == open && t.trim() == f => {
                out.push(std::mem::take(body));
                current = None;
            }
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    if let Some((_, body)) = current {
        out.push(body);
    }
    out
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

/// "Target: lines 12-30 of src/lib.rs (selected text below)" with the selection numbered.
fn target_description(rel: &str, text: &str, range: &Range<usize>) -> String {
    let line_of = |o: usize| text[..o].matches('\n').count() + 1;
    if range.is_empty() {
        if range.start == 0 {
            return format!("Target: the file {rel}.\n");
        }
        return format!(
            "Target: {rel}, at line {} (the cursor).\n",
            line_of(range.start)
        );
    }
    let first = line_of(range.start);
    let last = line_of(range.end.saturating_sub(1).max(range.start));
    let mut out = format!("Target: lines {first}-{last} of {rel}, selected:\n");
    let start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let end = text[range.end..]
        .find('\n')
        .map_or(text.len(), |i| range.end + i);
    for (i, l) in text[start..end].lines().enumerate().take(400) {
        out.push_str(&format!("{:>6}\t{l}\n", first + i));
    }
    out
}

fn display_path(roots: &[PathBuf], path: &Path) -> String {
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
