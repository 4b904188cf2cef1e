//! Develop: one request becomes a planned, checked, multi-file proposal.
//!
//! Phases (each reported as progress with a percentage, each cancellable):
//! 0. **preflight** — the workspace root, `git status` (a dirty tree is a warning), the rules
//!    files as the run's constitution, the project kind and its check commands, and a baseline
//!    run of the checks on the untouched overlay (which also warms the build cache);
//! 1. **explore** — the `planner` sees a .gitignore-aware tree and the likely files, and may call
//!    the read-only tools for a bounded number of rounds;
//! 2. **plan** — numbered atomic steps naming their files, the last one verification; an
//!    answer that is not a plan is retried once with the parse error (`explore.rs`);
//! 3. **approve** — the plan as a Markdown document, approved through an [`Approver`] (skipped
//!    with `[develop] approve = "auto"`);
//! 4. **execute** — each step on the run's working copy with the `coder` (see `step.rs` for the
//!    retry rules), the check command after each edit, a snapshot restored when a step fails;
//! 5. **verify** — the test command; failures go back to execution `fix_rounds` times;
//! 6. **judge** — the `judge` reviews the diff when the rules say so and the tests pass or there
//!    are none (`judge.rs`; not when they pass and the judge is the coder's own model, unless a
//!    path is risky); objections go back to execution once;
//! 7. **result** — one proposal over every changed and created file, with a report of what each
//!    phase did and which files really changed.
//!
//! Nothing here writes to the workspace: edits live in the working copy, commands run in the
//! overlay. A run that fails reports what it learned and proposes nothing. No protocol types.
//!
//! A run ends (`docs/develop.md`): `[develop] max_minutes` and `max_model_calls` bound it, two
//! plan steps that fail one after the other end the execute phase, a failed fix round ends
//! the fix rounds. A run stopped early undoes the step in progress, tests what was done once
//! and proposes it, and its report says what was not done and which setting raises the limit.

mod asked;
pub mod checks;
mod explore;
pub mod failures;
pub mod judge;
pub mod plan;
pub mod project;
mod rename;
mod rewrite;
mod setup;
mod step;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ModelRole};
use crate::model::{
    ChatModel, ChatResponse, Enough, Message, ModelError, ModelRouter, StreamEvent, ToolCall,
    ToolChoice, ToolSpec,
};
use crate::syntax::{Language, RegionOptions, SyntaxTree, Target, extract_region};
use crate::tools::overlay::Overlay;
use crate::tools::process::{CommandSpec, Exit, ProcessRunner, RealRunner};
use crate::tools::{FileSystem, RealFs, Session, Snapshot, ToolOptions, ToolOutcome};

pub use super::edit::{Progress, RunPhase};
use super::edit::{RULE_FILES, display_path};
use super::model_loop::answer::{self, Reading};
use super::model_loop::driver::{self, NoAnswer};
use super::model_loop::resample::Resample;
use super::model_loop::{self, Interrupted, empty_session};
use super::proposal::{Proposal, ProposalFile};
use super::write_session::WriteSessions;
use checks::{CheckRun, Checker};
use judge::{ChangeStat, Decision, Verdict};
use plan::{Plan, PlanError};
use project::{CheckKind, ProjectKind};
pub use setup::{Setup, SetupCommand, setup};

/// Whether the plan waits for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApproveMode {
    Ask,
    Auto,
}

/// Output tokens of a plan answer: a dozen one-line steps fit in a few hundred. A small model
/// that starts repeating its steps is cut here instead of writing until the context is full.
const PLAN_MAX_TOKENS: u32 = 1024;

/// Output tokens of the judge's verdict (APPROVE, or OBJECT and one problem per line).
const JUDGE_MAX_TOKENS: u32 = 768;

/// How a run behaves; `[develop]` in the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct DevelopOptions {
    /// `[develop] approve`: ask the user to approve the plan, or go on at once.
    pub approve: ApproveMode,
    /// `[develop] fix_rounds`: how often a failing verify goes back to execution.
    pub fix_rounds: usize,
    /// `[develop] judge_min_lines`: below this many changed lines (and no new code file) the
    /// judge is skipped.
    pub judge_min_lines: usize,
    /// `[develop] risky`: path patterns that always get the judge, unless the tests fail.
    pub risky: Vec<String>,
    /// Attempts per step; the last goes to the `escalation` role. `[develop] max_attempts`.
    pub max_attempts: usize,
    /// Model answers per attempt. `[develop] max_rounds`.
    pub max_rounds: usize,
    /// Rounds of read-only tool calls the planner may make before it must plan.
    pub explore_rounds: usize,
    /// Tokens of file context shown to the planner and to each step.
    pub context_budget: usize,
    /// Run the checks once before any change (failures that were already there do not count).
    pub baseline: bool,
    /// `[develop] max_minutes`: how long a run may take (approval waits do not count).
    pub max_duration: Duration,
    /// `[develop] max_model_calls`: how many model calls a run may make.
    pub max_model_calls: usize,
    pub escalate: bool,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// `[develop] rename_by_server`: a step that is one rename is done by the server when the
    /// check passes after it (`rename.rs`).
    pub rename_by_server: bool,
    /// How steps ask for a change; `None` takes `[models."NAME"] edit_format` of the model
    /// asked (default `auto`: whole files rewritten when they fit, `docs/develop.md`).
    pub edit_format: Option<crate::config::EditFormat>,
}

impl DevelopOptions {
    /// The options of `[develop]` in `config`; attempts, rounds, escalation and sampling come
    /// from `[edit]`, whose retry loop a step shares. Their defaults are the configuration's.
    pub fn from_config(config: &Config) -> DevelopOptions {
        let d = &config.develop;
        let e = &config.edit;
        DevelopOptions {
            approve: match d.approve {
                crate::config::Approve::Ask => ApproveMode::Ask,
                crate::config::Approve::Auto => ApproveMode::Auto,
            },
            fix_rounds: d.fix_rounds as usize,
            judge_min_lines: d.judge_min_lines as usize,
            rename_by_server: d.rename_by_server,
            risky: d.risky.clone(),
            max_attempts: (e.max_attempts as usize).clamp(1, 10),
            max_rounds: (e.max_rounds as usize).clamp(1, 100),
            escalate: e.escalate,
            temperature: Some(e.temperature as f32),
            max_tokens: e.max_tokens,
            explore_rounds: 2,
            context_budget: 2500,
            baseline: true,
            max_duration: Duration::from_secs(u64::from(d.max_minutes.max(1)) * 60),
            max_model_calls: (d.max_model_calls as usize).max(1),
            edit_format: None,
        }
    }
}

/// Where the models come from.
#[derive(Clone)]
pub enum DevelopModels {
    /// The configured roles; `planner`, `judge` and `escalation` fall back to `coder`.
    Router(Arc<ModelRouter>),
    /// Given models (tests, or a caller that resolved them).
    Fixed {
        planner: Arc<dyn ChatModel>,
        coder: Arc<dyn ChatModel>,
        judge: Arc<dyn ChatModel>,
        escalation: Option<Arc<dyn ChatModel>>,
    },
}

/// The plan as the user reviews it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanReview {
    pub plan: Plan,
    /// The Markdown document.
    pub markdown: String,
    /// Where the document was written (under the data directory), when it could be.
    pub path: Option<PathBuf>,
}

/// Asks the user to approve a plan (a terminal prompt, an editor's message request).
pub trait Approver: Send + Sync {
    /// `true`: go on; `false`: the user cancelled.
    fn approve(&self, review: PlanReview) -> BoxFuture<'static, bool>;
}

/// Everything a run needs besides the request.
#[derive(Clone)]
pub struct DevelopContext {
    pub config: Config,
    pub models: DevelopModels,
    /// Workspace roots (absolute); the first is the one developed in.
    pub roots: Vec<PathBuf>,
    /// Open buffers as the editor has them.
    pub snapshot: Snapshot,
    pub fs: Arc<dyn FileSystem>,
    pub runner: Arc<dyn ProcessRunner>,
    pub options: DevelopOptions,
    /// Overlays, build caches and plan documents (`<data>/develop`).
    pub cache_dir: PathBuf,
    /// `None`: plans are approved without asking.
    pub approver: Option<Arc<dyn Approver>>,
    /// Told the size in bytes of each piece of a model's answer as it arrives (text or tool-call
    /// arguments), so a terminal can show the model is answering (`patchwise develop`'s
    /// spinner ticks on it).
    pub on_stream: Option<Arc<dyn Fn(usize) + Send + Sync>>,
    /// Told each step as it ends, with what it changed, so an edge shows each step's change
    /// when the step is done rather than at the end of the run.
    pub on_step: Option<Arc<dyn Fn(StepEnded) + Send + Sync>>,
    /// Told each check, lint and test command as it starts and ends, so an edge shows each
    /// one as it runs rather than at the end of the run.
    pub on_command: Option<checks::CommandObserver>,
}

impl DevelopContext {
    /// A context on the real disk and real processes, with the options of `config`.
    pub fn new(
        config: Config,
        models: DevelopModels,
        roots: Vec<PathBuf>,
        snapshot: Snapshot,
    ) -> Self {
        let options = DevelopOptions::from_config(&config);
        let cache_dir = config.data_dir().join("develop");
        DevelopContext {
            config,
            models,
            roots,
            snapshot,
            fs: Arc::new(RealFs),
            runner: RealRunner::shared(),
            options,
            cache_dir,
            approver: None,
            on_stream: None,
            on_step: None,
            on_command: None,
        }
    }
}

/// What to develop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevelopRequest {
    pub request: String,
    /// A file the user pointed at (the editor's current document), shown to the planner first.
    pub focus: Option<PathBuf>,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Done,
    Failed,
    /// The run's budget ran out during the step; what it had changed was undone.
    Stopped,
}

/// A step that ended, and the files as it left them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepEnded {
    pub step: StepReport,
    /// What the step changed, each file from the text the previous step left (or the original)
    /// to the text now; empty when the step failed (its changes were undone), except for a fix
    /// round that failed and left the code of its best answer (`docs/develop.md`).
    pub files: Vec<StepFile>,
}

/// One file a step changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFile {
    pub path: PathBuf,
    /// The text before the step; `None`: the step created the file.
    pub old_text: Option<String>,
    pub new_text: String,
}

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepReport {
    /// `step 2`, `fix round 1`, `judge objections`.
    pub name: String,
    pub text: String,
    pub status: StepStatus,
    pub attempts: usize,
    /// `provider/model` of the last attempt; `server` for a step the server did alone (a rename).
    pub model: String,
    /// Files this step changed (workspace-relative).
    pub changed: Vec<String>,
    /// What happened along the way (coaching, repeated errors, escalation).
    pub notes: Vec<String>,
    /// Why it failed (the last attempt's reason).
    pub error: Option<String>,
}

/// The verify phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "detail", rename_all = "snake_case")]
pub enum VerifyStatus {
    NotRun(String),
    Passed,
    Failed(String),
}

/// Everything a run learned; kept whether or not it ends with a proposal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub request: String,
    pub project: ProjectKind,
    /// The commands the run executes in the overlay (`check: cargo check …`).
    pub commands: Vec<String>,
    pub warnings: Vec<String>,
    pub plan: Option<Plan>,
    /// Why the plan was made without asking the planner (a request that names its files).
    pub planned: Option<String>,
    pub plan_document: Option<PathBuf>,
    pub steps: Vec<StepReport>,
    /// The last run of each check and lint command.
    pub checks: Vec<CheckRun>,
    pub verify: VerifyStatus,
    pub judge: Option<Decision>,
    pub verdict: Option<Verdict>,
    /// Files the proposal changes and creates (workspace-relative).
    pub changed: Vec<String>,
    pub created: Vec<String>,
    /// Files the plan said it would change that are unchanged.
    pub claimed_unchanged: Vec<String>,
    pub model_calls: usize,
    /// The model calls of each phase (`plan`, `steps`, `fix`, `judge`), in the order the
    /// phases ran.
    pub calls_by_phase: Vec<(String, usize)>,
    /// Why the run ended without a proposal.
    pub failure: Option<String>,
    /// Why the run stopped before doing all it planned: its budget (naming the setting that
    /// raises it), or steps that failed for good.
    pub stopped: Option<String>,
    /// What the run did not do because it stopped (steps, fix rounds, the judge's review).
    pub not_done: Vec<String>,
}

impl Report {
    fn new(request: &str) -> Report {
        Report {
            request: request.to_owned(),
            project: ProjectKind::Unknown,
            commands: Vec::new(),
            warnings: Vec::new(),
            plan: None,
            planned: None,
            plan_document: None,
            steps: Vec::new(),
            checks: Vec::new(),
            verify: VerifyStatus::NotRun("the run did not get that far".to_owned()),
            judge: None,
            verdict: None,
            changed: Vec::new(),
            created: Vec::new(),
            claimed_unchanged: Vec::new(),
            model_calls: 0,
            calls_by_phase: Vec::new(),
            failure: None,
            stopped: None,
            not_done: Vec::new(),
        }
    }

    /// The report as Markdown (for the terminal, the plan document and proposals).
    pub fn summary(&self) -> String {
        let mut out = String::new();
        if let Some(f) = &self.failure {
            out.push_str(&format!("No proposal: {f}\n"));
        }
        if let Some(why) = &self.stopped {
            out.push_str(&format!("Stopped early: {why}\n"));
            for n in &self.not_done {
                out.push_str(&format!("  not done: {n}\n"));
            }
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        if let Some(why) = &self.planned {
            out.push_str(&format!("plan: {why}\n"));
        }
        for s in &self.steps {
            let status = match s.status {
                StepStatus::Done => "done",
                StepStatus::Failed => "FAILED",
                StepStatus::Stopped => "STOPPED",
            };
            out.push_str(&format!(
                "{} [{status}, {} attempt{}, {}]: {}\n",
                s.name,
                s.attempts,
                if s.attempts == 1 { "" } else { "s" },
                s.model,
                s.text
            ));
            if !s.changed.is_empty() {
                out.push_str(&format!("  changed: {}\n", s.changed.join(", ")));
            }
            for n in &s.notes {
                out.push_str(&format!("  - {n}\n"));
            }
            if let Some(e) = &s.error {
                out.push_str(&format!(
                    "  error: {}\n",
                    crate::edit::text::clip(e.trim(), 600)
                ));
            }
        }
        for c in &self.checks {
            out.push_str(&format!(
                "{} `{}`: {}\n",
                c.kind.name(),
                c.line,
                if c.passed { "passed" } else { "FAILED" }
            ));
        }
        out.push_str(&match &self.verify {
            VerifyStatus::Passed => "verify: tests passed\n".to_owned(),
            VerifyStatus::Failed(why) => format!(
                "verify: tests FAILED: {}\n",
                crate::edit::text::clip(why.trim(), 400)
            ),
            VerifyStatus::NotRun(why) => format!("verify: not run ({why})\n"),
        });
        match (&self.judge, &self.verdict) {
            (Some(Decision::Skip(why)), _) => out.push_str(&format!("judge: skipped ({why})\n")),
            (Some(Decision::Run(why)), Some(v)) => out.push_str(&format!(
                "judge ({why}): {}\n",
                match v {
                    Verdict::Approve => "approved".to_owned(),
                    Verdict::Object(o) => format!("objected: {}", o.join("; ")),
                    Verdict::Unclear(t) => format!("unclear answer, taken as approval: {t}"),
                }
            )),
            _ => {}
        }
        if !self.changed.is_empty() {
            out.push_str(&format!("files changed: {}\n", self.changed.join(", ")));
        }
        if !self.claimed_unchanged.is_empty() {
            out.push_str(&format!(
                "planned but unchanged: {}\n",
                self.claimed_unchanged.join(", ")
            ));
        }
        let phases: Vec<String> = self
            .calls_by_phase
            .iter()
            .map(|(phase, n)| format!("{phase} {n}"))
            .collect();
        if phases.is_empty() {
            out.push_str(&format!("model calls: {}\n", self.model_calls));
        } else {
            out.push_str(&format!(
                "model calls: {} ({})\n",
                self.model_calls,
                phases.join(", ")
            ));
        }
        out
    }
}

/// A run's result: the report, and the proposal when there is one.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub proposal: Option<Proposal>,
}

/// Why a run ended early; the Display is the message the user sees.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DevelopFailure {
    #[error("the request is not usable: {0}")]
    Request(String),
    #[error(
        "the planner's answer is not a plan, twice: {error}; its last answer began: \"{answer}\""
    )]
    Plan { error: PlanError, answer: String },
    #[error("the plan was not approved; nothing was changed")]
    NotApproved,
    #[error("every step failed; nothing was changed. Last error: {0}")]
    AllStepsFailed(String),
    #[error("the steps left every file as it was; nothing to propose")]
    NoChange,
    #[error("no answer from the model: {0}")]
    Model(ModelError),
    #[error("cancelled; nothing was changed")]
    Cancelled,
    /// Also how a phase learns that the budget ran out, and stops (`Run::ask`).
    #[error("{0} before any step was done; nothing was changed")]
    Budget(BudgetSpent),
}

/// Which of the run's limits ran out; the Display names the setting that raises it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetSpent {
    #[error(
        "the run used all of its {limit} model calls (raise `[develop] max_model_calls` to \
         allow more)"
    )]
    ModelCalls { limit: usize },
    #[error(
        "the run reached its time limit of {limit} (raise `[develop] max_minutes` to allow \
         more)"
    )]
    Time { limit: String },
}

/// Plan steps that fail for good one after the other before the run stops: the steps after
/// them build on changes that are not there. Measured (docs/develop.md, "Budget"): no step
/// succeeded after two failed ones in a row, and the runs that went on spent up to 43 more
/// model calls on steps that failed the same way.
const FAILED_STEPS_IN_A_ROW: usize = 2;

/// Runs a develop request. Always returns the report; the proposal only when the run produced
/// one. See the module docs.
pub async fn run(
    ctx: &DevelopContext,
    request: DevelopRequest,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: CancellationToken,
) -> Outcome {
    let mut run = Run {
        ctx,
        report: Report::new(&request.request),
        request,
        progress,
        cancel,
        session: None,
        checker: None,
        rules: String::new(),
        models: None,
        calls: Arc::new(AtomicUsize::new(0)),
        percent: 0,
        writes: WriteSessions::new(ctx.config.tools.clone()),
        started: Instant::now(),
        waited: Duration::ZERO,
        spent: None,
        phase: "plan",
        step_texts: HashMap::new(),
        resample: Resample::default(),
        last_test_print: None,
        last_tests_passed: None,
        failing_outside: false,
        tests_green: false,
        tests_after_files: false,
    };
    let result = run.go().await;
    run.report.model_calls = run.calls.load(Ordering::Relaxed);
    match result {
        Ok(proposal) => Outcome {
            report: run.report,
            proposal: Some(proposal),
        },
        Err(failure) => {
            run.report.failure = Some(failure.to_string());
            run.report.changed.clear();
            run.report.created.clear();
            Outcome {
                report: run.report,
                proposal: None,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------

struct Roles {
    planner: Arc<dyn ChatModel>,
    coder: Arc<dyn ChatModel>,
    judge: Arc<dyn ChatModel>,
    escalation: Option<Arc<dyn ChatModel>>,
}

struct Run<'a> {
    ctx: &'a DevelopContext,
    request: DevelopRequest,
    progress: &'a (dyn Fn(Progress) + Send + Sync),
    cancel: CancellationToken,
    report: Report,
    session: Option<Session>,
    checker: Option<Checker>,
    rules: String,
    models: Option<Roles>,
    calls: Arc<AtomicUsize>,
    percent: u32,
    /// Long new files streamed as plain text (`begin_write`, `docs/editing.md`).
    writes: WriteSessions,
    /// The budget's clock (`[develop] max_minutes`), less the time spent waiting for the user.
    started: Instant,
    waited: Duration,
    /// Set once the budget ran out: no model is asked again.
    spent: Option<BudgetSpent>,
    /// The phase model calls are counted under (`Report::calls_by_phase`).
    phase: &'static str,
    /// Each changed file's text as the last step told to `on_step` left it.
    step_texts: HashMap<PathBuf, String>,
    /// A request asked again is sampled (`model_loop::resample`).
    resample: Resample,
    /// The step being run shows the files it changes before the tests (`rewrite.rs`): the
    /// model answered with a copy of the tests under a file's name.
    tests_after_files: bool,
    /// How the tests failed in their last run (`step::test_print`), for the fix round that
    /// follows.
    last_test_print: Option<u64>,
    /// How many tests passed in that run, when its runners say ([`step::tests_passed`]).
    last_tests_passed: Option<usize>,
    /// The tests of that run fail only in files the run did not change: the changed code is
    /// the mistake, not a test it wrote (`failing_outside_changes`).
    failing_outside: bool,
    /// Every test command of that run ran and exited 0 (not merely "failing as before", not
    /// skipped for a missing runner).
    tests_green: bool,
}

/// Percent of the bar where each phase starts.
const EXPLORE: u32 = 5;
const PLAN: u32 = 15;
const EXECUTE: u32 = 25;
const VERIFY: u32 = 80;
const JUDGE: u32 = 90;

impl Run<'_> {
    fn report_progress(&mut self, phase: RunPhase, message: impl Into<String>, percent: u32) {
        self.percent = percent.clamp(self.percent, 100);
        (self.progress)(Progress {
            phase,
            message: message.into(),
            percent: self.percent,
        });
    }

    /// `intro`, then the workspace rules under the heading `rules` when there are any.
    fn system_prompt(&self, intro: &str, rules: &str) -> String {
        let mut system = intro.to_owned();
        if !self.rules.trim().is_empty() {
            system.push_str(&format!("\n# {rules}\n\n{}\n", self.rules.trim()));
        }
        system
    }

    /// Adds warnings to the report, each once.
    fn warn(&mut self, warnings: Vec<String>) {
        for w in warnings {
            if !self.report.warnings.contains(&w) {
                self.report.warnings.push(w);
            }
        }
    }

    fn session(&mut self) -> &mut Session {
        self.session.get_or_insert_with(empty_session)
    }

    fn root(&self) -> PathBuf {
        self.ctx.roots.first().cloned().unwrap_or_default()
    }

    async fn go(&mut self) -> Result<Proposal, DevelopFailure> {
        if self.request.request.trim().is_empty() {
            return Err(DevelopFailure::Request(
                "the request is empty; say what to build or change".to_owned(),
            ));
        }
        if self.ctx.roots.is_empty() {
            return Err(DevelopFailure::Request(
                "no workspace folder is open; open a folder or pass --workspace".to_owned(),
            ));
        }
        self.preflight().await?;
        self.models = Some(self.resolve_models().await?);
        self.phase = "plan";
        let plan = self.plan().await?;
        self.phase = "steps";
        self.report.plan = Some(plan.clone());
        self.approve(&plan).await?;
        let failing_now = self.failing_before().await?;
        let work: Vec<plan::Step> = plan.work().cloned().collect();
        let total = work.len().max(1);
        let mut last_error = String::new();
        let mut failed_in_a_row: Vec<String> = Vec::new();
        for (i, s) in work.iter().enumerate() {
            let name = format!("step {}", s.number);
            if self.report.stopped.is_some() {
                self.report
                    .not_done
                    .push(format!("{name}: {}", crate::edit::text::clip(&s.text, 120)));
                continue;
            }
            let percent = EXECUTE + (VERIFY - EXECUTE) * i as u32 / total as u32;
            self.report_progress(
                RunPhase::Step { number: s.number },
                format!(
                    "step {}/{}: {}",
                    i + 1,
                    total,
                    crate::edit::text::clip(&s.text, 60)
                ),
                percent,
            );
            // What the step must have done besides passing the check: its text, and the
            // request itself when the plan has one step.
            let goal = if total == 1 && s.text.trim() != self.request.request.trim() {
                format!("{}\n{}", s.text, self.request.request.trim())
            } else {
                s.text.clone()
            };
            let spec = step::StepSpec {
                name: name.clone(),
                text: s.text.clone(),
                number: Some(s.number),
                files: s.files.clone(),
                extra: failing_now.clone().filter(|_| i == 0),
                goal: Some(goal),
                afresh: None,
                failing: None,
                passing: None,
            };
            let report = self.run_step(&plan, &spec).await?;
            if let Some(e) = &report.error {
                last_error = e.clone();
            }
            match report.status {
                StepStatus::Failed => failed_in_a_row.push(name.clone()),
                StepStatus::Done => failed_in_a_row.clear(),
                StepStatus::Stopped => {
                    self.report.not_done.push(format!(
                        "{name} (started, undone): {}",
                        crate::edit::text::clip(&s.text, 120)
                    ));
                }
            }
            self.step_ended(report);
            if failed_in_a_row.len() >= FAILED_STEPS_IN_A_ROW && i + 1 < work.len() {
                self.report.stopped = Some(format!(
                    "{} failed for good, one after the other; the steps after them build on \
                     their changes, so they were not started",
                    failed_in_a_row.join(" and ")
                ));
            }
        }
        if !self
            .report
            .steps
            .iter()
            .any(|s| s.status == StepStatus::Done)
        {
            if let Some(spent) = self.spent.clone() {
                return Err(DevelopFailure::Budget(spent));
            }
            return Err(DevelopFailure::AllStepsFailed(crate::edit::text::clip(
                last_error.trim(),
                600,
            )));
        }
        self.phase = "fix";
        self.verify(&plan).await?;
        self.phase = "judge";
        self.judge(&plan).await?;
        self.finish(&plan)
    }

    // -- preflight ------------------------------------------------------------------------------

    async fn preflight(&mut self) -> Result<(), DevelopFailure> {
        self.report_progress(
            RunPhase::Preflight,
            "preflight: workspace, git status, rules, project",
            1,
        );
        let root = self.root();
        let options = ToolOptions::default();
        self.session = Some(Session::new(
            &self.ctx.roots,
            self.ctx.fs.clone(),
            self.ctx.snapshot.clone(),
            options,
        ));
        // git status through the git binary: a dirty tree is worth knowing, never a refusal.
        let git = CommandSpec {
            timeout: Duration::from_secs(20),
            ..CommandSpec::new("git status --porcelain", root.clone())
        };
        let status = self.ctx.runner.run(git, self.cancel.clone()).await;
        match status.exit {
            Exit::Cancelled => return Err(DevelopFailure::Cancelled),
            Exit::Code(0) => {
                let dirty = status
                    .output
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .count();
                if dirty > 0 {
                    self.report.warnings.push(format!(
                        "the git working tree has {dirty} uncommitted change{}; the proposal is \
                         made against the files as they are now",
                        if dirty == 1 { "" } else { "s" }
                    ));
                }
            }
            // Not a repository, or no git: develop works the same.
            _ => {}
        }
        self.rules = self.read_rules();
        let checks = project::checks(&root, &self.ctx.config, self.ctx.runner.as_ref());
        self.report.project = checks.kind;
        self.report.commands = checks
            .commands
            .iter()
            .map(|c| format!("{}: {}", c.kind.name(), c.line))
            .collect();
        self.report.warnings.extend(checks.notes.iter().cloned());
        let cache = self.ctx.cache_dir.join("overlays");
        let opened = {
            let root = root.clone();
            tokio::task::spawn_blocking(move || Overlay::open(&root, &cache)).await
        };
        match opened {
            Ok(Ok(overlay)) => {
                let mut checker = Checker::new(overlay, checks, self.ctx.runner.clone());
                checker.observe(self.ctx.on_command.clone());
                self.checker = Some(checker);
            }
            Ok(Err(e)) => self.report.warnings.push(format!("no checks can run: {e}")),
            Err(e) => self.report.warnings.push(format!(
                "no checks can run: the overlay could not be prepared: {e}"
            )),
        }
        let wants_baseline = self.ctx.options.baseline
            && (self.has_checks(CheckKind::Check) || self.has_checks(CheckKind::Lint));
        if wants_baseline && let Some(mut checker) = self.checker.take() {
            self.report_progress(
                RunPhase::Preflight,
                "preflight: checking the workspace as it is",
                3,
            );
            let result = checker.baseline(&self.cancel).await;
            let warnings = checker.take_warnings();
            self.checker = Some(checker);
            self.warn(warnings);
            let failing = match result {
                Ok(f) => f,
                Err(checks::CheckError::Cancelled) => return Err(DevelopFailure::Cancelled),
                Err(e) => {
                    // The overlay cannot be prepared: no command can run in this run.
                    self.report.warnings.push(format!("no checks can run: {e}"));
                    self.checker = None;
                    Vec::new()
                }
            };
            for f in failing {
                self.report.warnings.push(format!(
                    "`{}` already fails before any change; only new failures count",
                    f.line
                ));
            }
        }
        Ok(())
    }

    /// AGENTS.md, CLAUDE.md and .patchwise/RULES.md of every root (the run's constitution).
    fn read_rules(&mut self) -> String {
        let roots = self.ctx.roots.clone();
        let s = self.session();
        let mut out = String::new();
        let mut seen = HashSet::new();
        for root in &roots {
            for name in RULE_FILES {
                let Ok((text, _)) = s.copy.read(&root.join(name), s.fs.as_ref()) else {
                    continue;
                };
                if text.trim().is_empty() || !seen.insert(text.clone()) {
                    continue;
                }
                out.push_str(&format!(
                    "## {name}\n\n{}\n\n",
                    crate::edit::text::clip(text.trim_end(), 6000)
                ));
            }
        }
        out
    }

    async fn resolve_models(&self) -> Result<Roles, DevelopFailure> {
        match &self.ctx.models {
            DevelopModels::Fixed {
                planner,
                coder,
                judge,
                escalation,
            } => Ok(Roles {
                planner: planner.clone(),
                coder: coder.clone(),
                judge: judge.clone(),
                escalation: escalation.clone(),
            }),
            DevelopModels::Router(router) => {
                let get = |role| {
                    let router = router.clone();
                    let cancel = self.cancel.clone();
                    async move {
                        tokio::select! {
                            biased;
                            _ = cancel.cancelled() => Err(DevelopFailure::Cancelled),
                            m = router.model(role, cancel.clone()) => m.map_err(model_failure),
                        }
                    }
                };
                let coder = get(ModelRole::Coder).await?;
                let planner = get(ModelRole::Planner).await?;
                let judge = get(ModelRole::Judge).await?;
                let config = router.config();
                let distinct = config.roles.contains_key(&ModelRole::Escalation)
                    && config.roles.get(&ModelRole::Escalation)
                        != config.roles.get(&ModelRole::Coder);
                let escalation = if distinct && self.ctx.options.escalate {
                    get(ModelRole::Escalation).await.ok()
                } else {
                    None
                };
                Ok(Roles {
                    planner,
                    coder,
                    judge,
                    escalation,
                })
            }
        }
    }

    fn roles(&self) -> &Roles {
        // Resolved right after preflight, before any phase that asks a model.
        self.models
            .as_ref()
            .unwrap_or_else(|| unreachable!("models are resolved first"))
    }

    /// A file as a model is shown it: whole and numbered when it fits `budget` tokens, its
    /// outline otherwise. Marks it read in the ledger.
    fn file_view(&mut self, rel: &str, budget: usize) -> String {
        let s = self.session();
        let Ok(resolved) = s.sandbox.resolve(rel, s.fs.as_ref()) else {
            return format!("{rel}: outside the workspace\n");
        };
        match s.copy.read(&resolved.abs, s.fs.as_ref()) {
            Ok((text, version)) => {
                match version {
                    Some(v) => s.ledger.record_version(resolved.abs.clone(), &text, v),
                    None => s.ledger.record_read(resolved.abs.clone(), &text),
                }
                let language = Language::from_path(rel).unwrap_or(Language::Text);
                let tree = SyntaxTree::parse(&text, language);
                let options = RegionOptions {
                    budget: budget.max(300),
                    ..RegionOptions::default()
                };
                extract_region(&text, &tree, rel, &Target::None, &options).text
            }
            Err(_) => {
                format!(
                    "{rel} does not exist yet: create it with write_file (path \"{rel}\"), or \
                     with begin_write when it is longer than about {} lines.\n",
                    step::LONG_FILE_LINES
                )
            }
        }
    }

    /// Runs one read-only tool for a prompt and returns its text (errors as text).
    fn tool_text(&mut self, name: &str, arguments: Value) -> String {
        let call = ToolCall::new("preflight", name, arguments);
        self.session().execute(&call).content
    }

    /// Runs tool calls on a blocking thread, honouring cancellation.
    async fn execute(&mut self, calls: Vec<ToolCall>) -> Result<Vec<ToolOutcome>, DevelopFailure> {
        model_loop::execute(&self.cancel, &mut self.session, &mut self.writes, calls)
            .await
            .map_err(DevelopFailure::from)
    }

    /// The calls of an answer: native, or written as text (tool blocks, SEARCH/REPLACE blocks
    /// and diffs naming their file).
    fn calls_in(&self, response: &ChatResponse, offered: &[ToolSpec]) -> Vec<ToolCall> {
        answer::calls_in(response, offered, &Reading::default())
    }

    async fn ask(
        &mut self,
        model: &dyn ChatModel,
        messages: &[Message],
        tools: Vec<ToolSpec>,
        tool_choice: ToolChoice,
        limit: Option<u32>,
    ) -> Result<ChatResponse, DevelopFailure> {
        self.ask_until(model, messages, tools, tool_choice, limit, &|_| None)
            .await
    }

    /// [`Self::ask`], reading the answer only until `enough` says it is whole.
    async fn ask_until(
        &mut self,
        model: &dyn ChatModel,
        messages: &[Message],
        tools: Vec<ToolSpec>,
        tool_choice: ToolChoice,
        limit: Option<u32>,
        enough: &Enough,
    ) -> Result<ChatResponse, DevelopFailure> {
        if self.cancel.is_cancelled() {
            return Err(DevelopFailure::Cancelled);
        }
        let remaining = self.remaining()?;
        let on_stream = self.ctx.on_stream.clone();
        let observe = move |event: &StreamEvent| {
            let bytes = match event {
                StreamEvent::TextDelta { text } => text.len(),
                StreamEvent::ToolCallDelta { fragment, .. } => fragment.len(),
                StreamEvent::ToolCallStarted { name, .. } => name.len(),
                _ => 0,
            };
            if let Some(on_stream) = &on_stream
                && bytes > 0
            {
                on_stream(bytes);
            }
        };
        let asking = driver::Asking {
            tools,
            choice: tool_choice,
            // The tighter of `[edit] max_tokens` and the phase's own limit.
            max_tokens: match (self.ctx.options.max_tokens, limit) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            temperature: self.ctx.options.temperature,
            deadline: Some(remaining),
            observe: &observe,
            enough,
        };
        // Fitted to the model's window as an edit's requests are (older turns cut first).
        let cancel = self.cancel.clone();
        let answer = driver::ask_sampled(
            model,
            messages,
            asking,
            &mut self.resample,
            |_| None,
            &cancel,
        )
        .await;
        // A request refused before it was sent, because it does not fit the window
        // (`model/budget.rs`), is not a call.
        if !matches!(
            answer,
            Err(NoAnswer::Failed(ModelError::ContextOverflow { .. }))
        ) {
            self.count_call();
        }
        match answer {
            Ok(r) => Ok(r),
            Err(NoAnswer::Cancelled) => Err(DevelopFailure::Cancelled),
            Err(NoAnswer::TimedOut) => Err(self.spend(self.time_spent())),
            Err(NoAnswer::BrokeOff(e) | NoAnswer::Failed(e)) => Err(model_failure(e)),
        }
    }

    /// Counts one model call, in the run and in its phase.
    fn count_call(&mut self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        match self
            .report
            .calls_by_phase
            .iter_mut()
            .find(|(p, _)| p == self.phase)
        {
            Some((_, n)) => *n += 1,
            None => self.report.calls_by_phase.push((self.phase.to_owned(), 1)),
        }
    }

    /// The time left for the next model call, or the budget that ran out.
    fn remaining(&mut self) -> Result<Duration, DevelopFailure> {
        if let Some(spent) = &self.spent {
            return Err(DevelopFailure::Budget(spent.clone()));
        }
        let limit = self.ctx.options.max_model_calls;
        if self.calls.load(Ordering::Relaxed) >= limit {
            return Err(self.spend(BudgetSpent::ModelCalls { limit }));
        }
        let used = self.started.elapsed().saturating_sub(self.waited);
        match self.ctx.options.max_duration.checked_sub(used) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(self.spend(self.time_spent())),
        }
    }

    fn time_spent(&self) -> BudgetSpent {
        let limit = self.ctx.options.max_duration;
        let limit = if limit.as_secs().is_multiple_of(60) && limit.as_secs() > 0 {
            let m = limit.as_secs() / 60;
            format!("{m} minute{}", if m == 1 { "" } else { "s" })
        } else {
            format!("{:.1} s", limit.as_secs_f64())
        };
        BudgetSpent::Time { limit }
    }

    /// Records that the budget ran out (once) and says so; the error stops the phase.
    fn spend(&mut self, spent: BudgetSpent) -> DevelopFailure {
        if self.spent.is_none() {
            self.report.stopped = Some(match self.report.stopped.take() {
                Some(earlier) => format!("{earlier}; then {spent}"),
                None => spent.to_string(),
            });
            self.report_progress(
                RunPhase::Stopping,
                format!("stopping: {spent}; keeping the steps that are done"),
                self.percent,
            );
            self.spent = Some(spent.clone());
        }
        DevelopFailure::Budget(spent)
    }

    // -- approve --------------------------------------------------------------------------------

    async fn approve(&mut self, plan: &Plan) -> Result<(), DevelopFailure> {
        let markdown = plan::document(
            &self.request.request,
            plan,
            &self.report.commands,
            &self.report.warnings,
        );
        let dir = self.ctx.cache_dir.join("plans");
        let name = format!(
            "plan-{}-{}.md",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis()),
            std::process::id()
        );
        let path = dir.join(name);
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&path, &markdown))
            .is_ok();
        let path = written.then_some(path);
        self.report.plan_document = path.clone();
        if self.ctx.options.approve == ApproveMode::Auto {
            return Ok(());
        }
        let Some(approver) = self.ctx.approver.clone() else {
            return Ok(());
        };
        self.report_progress(
            RunPhase::Approve,
            "waiting for the plan to be approved",
            PLAN + 5,
        );
        let review = PlanReview {
            plan: plan.clone(),
            markdown,
            path,
        };
        // The user's time is not the run's: the budget's clock stops while they read.
        let asked = Instant::now();
        let approved = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(DevelopFailure::Cancelled),
            a = approver.approve(review) => a,
        };
        self.waited += asked.elapsed();
        if approved {
            Ok(())
        } else {
            Err(DevelopFailure::NotApproved)
        }
    }

    // -- verify, judge, result ------------------------------------------------------------------

    fn changes(&mut self) -> Vec<(PathBuf, String)> {
        self.session()
            .copy
            .changes()
            .into_iter()
            .map(|c| (c.path, c.text))
            .collect()
    }

    /// Runs the commands of `kind` on the current working copy.
    async fn run_checks(&mut self, kind: CheckKind) -> Result<Vec<CheckRun>, DevelopFailure> {
        let changes = self.changes();
        let Some(checker) = self.checker.as_mut() else {
            return Ok(Vec::new());
        };
        let result = checker.run(kind, &changes, &self.cancel).await;
        let warnings = checker.take_warnings();
        self.warn(warnings);
        match result {
            Ok(runs) => {
                // A check run is of new code: it replaces the check and lint runs before it; a
                // lint run follows the check that passed on the same code and replaces only the
                // lint runs (it used to drop that check from the report).
                match kind {
                    CheckKind::Check => self.report.checks.retain(|c| c.kind == CheckKind::Test),
                    CheckKind::Lint => self.report.checks.retain(|c| c.kind != CheckKind::Lint),
                    CheckKind::Test => {}
                }
                if kind != CheckKind::Test {
                    self.report.checks.extend(runs.iter().cloned());
                }
                Ok(runs)
            }
            Err(checks::CheckError::Cancelled) => Err(DevelopFailure::Cancelled),
            Err(e) => {
                self.warn(vec![e.to_string()]);
                Ok(Vec::new())
            }
        }
    }

    /// Runs the check, then the lint when the check passes (a lint of code that does not
    /// compile says nothing new): the runs of both.
    async fn check_and_lint(&mut self) -> Result<Vec<CheckRun>, DevelopFailure> {
        let mut runs = self.run_checks(CheckKind::Check).await?;
        if runs.iter().all(|r| r.passed) {
            runs.extend(self.run_checks(CheckKind::Lint).await?);
        }
        Ok(runs)
    }

    /// Whether any command of `kind` can run in this run.
    fn has_checks(&self, kind: CheckKind) -> bool {
        self.checker.as_ref().is_some_and(|c| c.has(kind))
    }

    /// Runs the tests and records the verify status: `None` when they pass, else what failed.
    /// Tests that could not run (the overlay could not be prepared, the runner is not
    /// installed) are no verdict: `NotRun`, and the warnings say why.
    async fn run_tests(&mut self) -> Result<Option<String>, DevelopFailure> {
        let runs = self.run_checks(CheckKind::Test).await?;
        self.tests_green = !runs.is_empty() && runs.iter().all(|r| r.exit == Exit::Code(0));
        if runs.is_empty() {
            self.report.verify = VerifyStatus::NotRun(
                "the test command could not run (see the warnings)".to_owned(),
            );
            return Ok(None);
        }
        if runs.iter().all(|r| r.passed) {
            self.report.verify = VerifyStatus::Passed;
            self.last_test_print = None;
            self.last_tests_passed = None;
            self.failing_outside = false;
            return Ok(None);
        }
        self.last_test_print = Some(step::test_print(&runs));
        self.last_tests_passed = step::tests_passed(&runs);
        let changed = self.changed_rel();
        // A file the run created stays when the others are set back (`back_to_the_originals`):
        // its code would face the files it was written with undone.
        let created = self
            .session()
            .copy
            .changes()
            .iter()
            .any(|c| c.original.is_none());
        self.failing_outside = !created && failing_outside_changes(&runs, &changed);
        let failures = self.test_failures(&runs);
        self.report.verify = VerifyStatus::Failed(failures.clone());
        Ok(Some(failures))
    }

    /// Failing test runs as the next attempt reads them: each failing test's name, assertion
    /// and source lines when the runner's output is recognised (`failures.rs`), else the
    /// output as it is.
    fn test_failures(&mut self, runs: &[CheckRun]) -> String {
        let mut out = String::new();
        for r in runs.iter().filter(|r| !r.passed) {
            let Some(found) = failures::parse(&r.full_output) else {
                out.push_str(&checks::describe_failures(std::slice::from_ref(r)));
                continue;
            };
            let mut texts = std::collections::HashMap::new();
            for (path, _) in found.iter().filter_map(|f| f.at.as_ref()) {
                if let Some(text) = self.read_text(path) {
                    texts.insert(path.clone(), text);
                }
            }
            let read = |p: &str| texts.get(p).cloned();
            // The tests that failed before the runner killed it, and why it was killed.
            let killed =
                checks::killed_because(&r.exit).map_or(String::new(), |why| format!(" ({why})"));
            out.push_str(&format!(
                "`{}` failed{killed}: {}",
                r.line,
                failures::describe(&found, &read, 2500)
            ));
        }
        out
    }

    /// For a request about failing tests ("the test X fails: fix Y"), the tests run on the
    /// workspace as it is before the first step, and the first step reads how they fail (the
    /// names, the assertion, expected against got, the test's lines): the source alone does
    /// not say what a 1.5B model needs to see, and a peer that runs the tests only after its
    /// first answer spends that answer guessing (the develop bench's fix-test tasks).
    async fn failing_before(&mut self) -> Result<Option<String>, DevelopFailure> {
        if !asked::says_tests_fail(&self.request.request) || !self.has_checks(CheckKind::Test) {
            return Ok(None);
        }
        self.report_progress(
            RunPhase::Preflight,
            "preflight: running the tests the request says fail",
            24,
        );
        let runs = self.run_checks(CheckKind::Test).await?;
        if runs.iter().all(|r| r.passed) {
            return Ok(None);
        }
        let failures = self.test_failures(&runs);
        Ok(Some(format!(
            "The tests fail now, before any change:\n{failures}"
        )))
    }

    async fn verify(&mut self, plan: &Plan) -> Result<(), DevelopFailure> {
        if !self.has_checks(CheckKind::Test) {
            self.report.verify = VerifyStatus::NotRun("no test command".to_owned());
            return Ok(());
        }
        let rounds = self.ctx.options.fix_rounds;
        for round in 0..=rounds {
            self.report_progress(
                RunPhase::Verify { round },
                if round == 0 {
                    "verify: running the tests".to_owned()
                } else {
                    format!("verify: running the tests again (fix round {round}/{rounds})")
                },
                VERIFY + round as u32 * 3,
            );
            let Some(failures) = self.run_tests().await? else {
                return Ok(());
            };
            if round == rounds {
                break;
            }
            if self.spent.is_some() {
                self.report
                    .not_done
                    .push("fix rounds for the failing tests".to_owned());
                break;
            }
            // A failing verify is work for the coder, not the end of the run.
            let files = self.changed_rel();
            let spec = step::StepSpec {
                name: format!("fix round {}", round + 1),
                text: "Make the failing tests pass (fix the code, or the new test if the test \
                       itself is wrong)"
                    .to_owned(),
                number: None,
                files,
                extra: Some(format!("The tests fail on the changed code:\n{failures}")),
                goal: None,
                // A one-step plan's fix round starts afresh from its second attempt, and from
                // its first when the failing tests are not in a changed file (docs/develop.md).
                afresh: (plan.work().count() == 1).then_some(if self.failing_outside {
                    1
                } else {
                    2
                }),
                failing: self.last_test_print,
                passing: self.last_tests_passed,
            };
            let report = self.run_step(plan, &spec).await?;
            let status = report.status;
            self.step_ended(report);
            match status {
                StepStatus::Done => {}
                StepStatus::Stopped => {
                    self.report.not_done.push(format!(
                        "fix round {} (started, undone) and the rounds after it",
                        round + 1
                    ));
                    break;
                }
                // Undone, it leaves the code and the failing tests as they were, or the code
                // of its best answer, shown to the model already: the next round would be asked
                // the same thing (docs/develop.md, "Budget").
                StepStatus::Failed => {
                    // It left better code than it was given: the tests say how that fails.
                    let kept = !self
                        .report
                        .steps
                        .last()
                        .is_none_or(|s| s.changed.is_empty());
                    // The check and the tests run on the kept code, so that the report's
                    // checks and its verify status are the kept code's, not those of the
                    // round's last answer.
                    if kept {
                        self.report_progress(
                            RunPhase::Verify { round: round + 1 },
                            format!(
                                "verify: {} the code fix round {} kept",
                                match (
                                    self.has_checks(CheckKind::Check),
                                    self.has_checks(CheckKind::Lint)
                                ) {
                                    (true, true) => "checking, linting and testing",
                                    (true, false) => "checking and testing",
                                    (false, true) => "linting and testing",
                                    (false, false) => "testing",
                                },
                                round + 1
                            ),
                            VERIFY + (round as u32 + 1) * 3,
                        );
                        self.check_and_lint().await?;
                        self.run_tests().await?;
                    }
                    if round + 1 < rounds {
                        let skipped = if round + 2 == rounds {
                            format!("fix round {rounds}")
                        } else {
                            format!("fix rounds {}–{rounds}", round + 2)
                        };
                        self.report.not_done.push(if kept {
                            format!(
                                "{skipped}: fix round {} failed for good; it left the code of \
                                 its answer that passed the most tests, which the model was \
                                 already shown with how it fails",
                                round + 1
                            )
                        } else {
                            format!(
                                "{skipped}: fix round {} failed for good, and the next would \
                                 start from the same code and the same failing tests",
                                round + 1
                            )
                        });
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    async fn judge(&mut self, plan: &Plan) -> Result<(), DevelopFailure> {
        let stats = self.change_stats();
        let roles = self.roles();
        let self_review = roles.judge.name() == roles.coder.name();
        let decision = judge::decide(
            &stats,
            self.ctx.options.judge_min_lines,
            &self.ctx.options.risky,
            // Passing means each test command ran and exited 0: a runner that is not
            // installed, or tests that fail as they did before the change, say nothing of it.
            match self.report.verify {
                VerifyStatus::Passed if self.tests_green => judge::Tests::Pass,
                VerifyStatus::Failed(_) => judge::Tests::Fail,
                _ => judge::Tests::NotRun,
            },
            self_review,
        );
        self.report.judge = Some(decision.clone());
        if matches!(decision, Decision::Skip(_)) {
            return Ok(());
        }
        if let Some(spent) = self.spent.clone() {
            self.judge_not_run(&spent);
            return Ok(());
        }
        self.report_progress(RunPhase::Judge, "judge: reviewing the diff", JUDGE);
        let judge_model = self.roles().judge.clone();
        let diff = self.diff();
        let system = self.system_prompt(
            "You review a change to a software project before the user sees it. Check that the \
             diff does what the request asks, completely, and follows the workspace rules. Do \
             not ask for unrelated improvements.\n",
            "Workspace rules",
        );
        let checks: String = self
            .report
            .checks
            .iter()
            .map(|c| {
                format!(
                    "- {} `{}`: {}\n",
                    c.kind.name(),
                    c.line,
                    if c.passed { "passed" } else { "failed" }
                )
            })
            .collect();
        let user = format!(
            "Request: {}\n\nPlan:\n{}\nChecks:\n{}{}\n\nDiff:\n```diff\n{}\n```\n\nAnswer APPROVE \
             on the first line if the change is right. Otherwise answer OBJECT on the first \
             line, then one concrete problem per line (file and what is wrong).",
            self.request.request.trim(),
            plan.numbered(None),
            if checks.is_empty() {
                "- none\n".to_owned()
            } else {
                checks
            },
            match &self.report.verify {
                VerifyStatus::Passed => "Tests: passed",
                VerifyStatus::Failed(_) => "Tests: failing",
                VerifyStatus::NotRun(_) => "Tests: none",
            },
            crate::edit::text::clip(&diff, 12_000),
        );
        let asked = self
            .ask(
                judge_model.as_ref(),
                &[Message::system(system), Message::user(user)],
                Vec::new(),
                ToolChoice::None,
                Some(JUDGE_MAX_TOKENS),
            )
            .await;
        let response = match asked {
            Err(DevelopFailure::Budget(spent)) => {
                self.judge_not_run(&spent);
                return Ok(());
            }
            // A diff too large for the judge's window is not reviewed; the steps' work stays.
            Err(DevelopFailure::Model(e @ ModelError::ContextOverflow { .. })) => {
                self.report.judge = Some(Decision::Skip(format!(
                    "the review's prompt does not fit the judge model: {e}"
                )));
                self.report
                    .not_done
                    .push("the judge's review of the diff".to_owned());
                return Ok(());
            }
            other => other?,
        };
        let verdict = judge::verdict(&response.text);
        self.report.verdict = Some(verdict.clone());
        if let Verdict::Object(objections) = verdict {
            let list: String = objections
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}. {o}\n", i + 1))
                .collect();
            let spec = step::StepSpec {
                name: "judge objections".to_owned(),
                text: "Address the reviewer's objections".to_owned(),
                number: None,
                files: self.changed_rel(),
                extra: Some(format!("A reviewer objected to the change:\n{list}")),
                goal: None,
                afresh: None,
                failing: None,
                passing: None,
            };
            let report = self.run_step(plan, &spec).await?;
            let fixed = report.status == StepStatus::Done;
            if report.status == StepStatus::Stopped {
                self.report
                    .not_done
                    .push("the change for the judge's objections (started, undone)".to_owned());
            }
            self.step_ended(report);
            if fixed && self.has_checks(CheckKind::Test) {
                self.run_tests().await?;
            }
        }
        Ok(())
    }

    /// The judge was due but the budget had run out.
    fn judge_not_run(&mut self, spent: &BudgetSpent) {
        self.report.judge = Some(Decision::Skip(format!("the budget ran out: {spent}")));
        self.report
            .not_done
            .push("the judge's review of the diff".to_owned());
    }

    fn change_stats(&mut self) -> Vec<ChangeStat> {
        let root = self.root();
        self.session()
            .copy
            .changes()
            .iter()
            .map(|c| {
                let original = c.original.as_deref().unwrap_or("");
                let lines = TextDiff::from_lines(original, &c.text)
                    .iter_all_changes()
                    .filter(|ch| ch.tag() != ChangeTag::Equal)
                    .count();
                ChangeStat {
                    path: rel_of(&root, &c.path),
                    created: c.original.is_none(),
                    lines,
                }
            })
            .collect()
    }

    /// Records a finished step and tells `on_step` what it changed.
    fn step_ended(&mut self, report: StepReport) {
        if let Some(on_step) = self.ctx.on_step.clone() {
            let mut files = Vec::new();
            // A failed fix round that kept its best code changed files too.
            if report.status == StepStatus::Done || !report.changed.is_empty() {
                let root = self.root();
                for c in self.session().copy.changes() {
                    if !report.changed.contains(&rel_of(&root, &c.path)) {
                        continue;
                    }
                    let old_text = self
                        .step_texts
                        .get(&c.path)
                        .cloned()
                        .or_else(|| c.original.clone());
                    if old_text.as_deref() == Some(c.text.as_str()) {
                        continue;
                    }
                    self.step_texts.insert(c.path.clone(), c.text.clone());
                    files.push(StepFile {
                        path: c.path,
                        old_text,
                        new_text: c.text,
                    });
                }
            }
            on_step(StepEnded {
                step: report.clone(),
                files,
            });
        }
        self.report.steps.push(report);
    }

    fn changed_rel(&mut self) -> Vec<String> {
        let root = self.root();
        self.session()
            .copy
            .changes()
            .iter()
            .map(|c| rel_of(&root, &c.path))
            .collect()
    }

    fn diff(&mut self) -> String {
        let root = self.root();
        self.session()
            .copy
            .changes()
            .into_iter()
            .map(|c| {
                let rel = rel_of(&root, &c.path);
                crate::edit::unified_diff(c.original.as_deref().unwrap_or(""), &c.text, &rel)
            })
            .collect()
    }

    fn finish(&mut self, plan: &Plan) -> Result<Proposal, DevelopFailure> {
        let roots = self.ctx.roots.clone();
        let root = self.root();
        let changes = self.session().copy.changes();
        if changes.is_empty() {
            return Err(DevelopFailure::NoChange);
        }
        self.report.changed = changes.iter().map(|c| rel_of(&root, &c.path)).collect();
        self.report.created = changes
            .iter()
            .filter(|c| c.original.is_none())
            .map(|c| rel_of(&root, &c.path))
            .collect();
        // Tests the request names only to say where they are were shown to read, not planned
        // to change.
        let tests_change = asked::changes_tests(&self.request.request);
        self.report.claimed_unchanged = plan
            .files()
            .into_iter()
            .filter(|f| !self.report.changed.contains(f))
            .filter(|f| tests_change || !explore::is_test_file(f))
            .collect();
        let files = changes
            .into_iter()
            .map(|c| {
                ProposalFile::new(
                    c.path.clone(),
                    display_path(&roots, &c.path),
                    c.base_version,
                    c.original.is_none(),
                    c.original.unwrap_or_default(),
                    c.text,
                )
            })
            .collect();
        let models: Vec<String> = {
            let mut m: Vec<String> = self.report.steps.iter().map(|s| s.model.clone()).collect();
            m.dedup();
            m
        };
        let attempts = self.report.steps.iter().map(|s| s.attempts).sum();
        self.report.model_calls = self.calls.load(Ordering::Relaxed);
        let proposal = Proposal::new(
            self.request.request.trim().to_owned(),
            files,
            models.join(", "),
            attempts,
            "develop",
        );
        let ready = match &self.report.stopped {
            Some(why) => {
                format!("proposal ready with the steps that were done; stopped early: {why}")
            }
            None => "proposal ready".to_owned(),
        };
        self.report_progress(RunPhase::Ready, ready, 100);
        Ok(proposal)
    }
}

/// Tools that could not finish: the run was cancelled, or their thread failed.
impl From<Interrupted> for DevelopFailure {
    fn from(why: Interrupted) -> DevelopFailure {
        match why {
            Interrupted::Cancelled => DevelopFailure::Cancelled,
            Interrupted::Failed(why) => DevelopFailure::Request(why),
        }
    }
}

fn rel_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_else(|_| path.display().to_string())
}

fn model_failure(e: ModelError) -> DevelopFailure {
    match e {
        ModelError::Cancelled => DevelopFailure::Cancelled,
        other => DevelopFailure::Model(other),
    }
}

/// Whether every failing test of `runs` is in a file that is not among `changed` (paths
/// relative to the workspace). Known only from the test's own id as the runner printed it
/// (pytest's `tests/test_a.py::test_x`, unittest's `tests.test_a.Case.test_x`), never from a
/// traceback's frames (a test the run wrote can fail inside a helper it did not change), and
/// only when every failing test is named (a cut output can hide some). Then the changed code is
/// what fails, and a fix round shown it gives it back unchanged: in 10 of 13 recorded fix
/// rounds of Python exercises the first attempt returned the failing code as it was shown, and
/// no first attempt passed (2026-11-30). A test the run wrote or changed keeps the code it
/// tests (rust-add-fn's fix round corrects its new `#[test]`'s expected value in one call; cargo
/// prints no file for a test, so a Rust run is never taken as outside).
fn failing_outside_changes(runs: &[checks::CheckRun], changed: &[String]) -> bool {
    let failing: Vec<&checks::CheckRun> = runs.iter().filter(|r| !r.passed).collect();
    if failing.is_empty() {
        return false;
    }
    for r in failing {
        let Some(found) = failures::parse(&r.full_output) else {
            return false;
        };
        let cut = r
            .full_output
            .lines()
            .any(crate::tools::process::is_cut_note);
        if cut && failures::counted(&r.full_output).is_none_or(|n| n > found.len()) {
            return false;
        }
        for f in &found {
            let Some(id) = &f.id else {
                return false;
            };
            if changed.iter().any(|c| test_is_in(id, c)) {
                return false;
            }
        }
    }
    true
}

/// Whether the test `id` (pytest's `path::name`, or unittest's dotted `module.Class.test`) is
/// in the workspace file `file`; a test command run in a subdirectory prints its ids relative
/// to it, so either may be the end of the other.
fn test_is_in(id: &str, file: &str) -> bool {
    let file = file.trim_start_matches("./");
    if let Some((path, _)) = id.split_once("::") {
        let path = path.trim_start_matches("./");
        return path == file
            || file.ends_with(&format!("/{path}"))
            || path.ends_with(&format!("/{file}"));
    }
    let Some(module) = file.strip_suffix(".py") else {
        return false;
    };
    let parts: Vec<&str> = module.split('/').collect();
    (0..parts.len()).any(|k| {
        let tail = parts[k..].join(".");
        id == tail || id.starts_with(&format!("{tail}."))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed_run(output: &str) -> checks::CheckRun {
        checks::CheckRun {
            kind: CheckKind::Test,
            line: "pytest -q".to_owned(),
            exit: crate::tools::process::Exit::Code(1),
            passed: false,
            output: output.to_owned(),
            full_output: output.to_owned(),
            warning: None,
        }
    }

    #[test]
    fn failing_tests_outside_the_changed_files_are_told_apart() {
        // pytest: the test file is not among the changed files.
        let py = "F\n=================================== FAILURES ===================================\n_________________________________ test_doubles _________________________________\n\n    def test_doubles():\n>       assert double(2) == 4\nE       assert 3 == 4\n\ntests/test_double.py:5: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_double.py::test_doubles - assert 3 == 4\n1 failed in 0.02s\n";
        let changed = vec!["double.py".to_owned()];
        assert!(failing_outside_changes(&[failed_run(py)], &changed));
        // The run wrote the test file too.
        let both = vec!["double.py".to_owned(), "tests/test_double.py".to_owned()];
        assert!(!failing_outside_changes(&[failed_run(py)], &both));
        // cargo: a `#[test]` in the changed lib.rs.
        let cargo = "running 1 test\ntest tests::counts ... FAILED\n\nfailures:\n\n---- tests::counts stdout ----\n\nthread 'tests::counts' panicked at src/lib.rs:9:9:\nassertion `left == right` failed\n  left: 5\n right: 7\n\nfailures:\n    tests::counts\n";
        assert!(!failing_outside_changes(
            &[failed_run(cargo)],
            &["src/lib.rs".to_owned()]
        ));
        // Output no runner's format is read, or failures that say not where: not known.
        assert!(!failing_outside_changes(
            &[failed_run("Segmentation fault\n")],
            &changed
        ));
        // `--tb=line`: the summary alone names every test and its file.
        let summary_only = "FAILED tests/test_double.py::test_doubles - assert 3 == 4\n";
        assert!(failing_outside_changes(
            &[failed_run(summary_only)],
            &changed
        ));
        // Without the summary (`-rN`), a block's frames do not say the test's file.
        let blocks_only = py
            .split("=========================== short")
            .next()
            .unwrap();
        assert!(!failing_outside_changes(
            &[failed_run(blocks_only)],
            &changed
        ));
        // Run in a subdirectory: the ids are relative to it.
        assert!(!failing_outside_changes(
            &[failed_run(py)],
            &["pkg/tests/test_double.py".to_owned()]
        ));
        // unittest: the test's module, from its dotted id.
        let unit = "F\n======================================================================\nFAIL: test_doubles (tests.test_core.CoreTest.test_doubles)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/tmp/o/tests/test_core.py\", line 6, in test_doubles\n    self.assertEqual(double(2), 4)\nAssertionError: 3 != 4\n\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n";
        assert!(failing_outside_changes(
            &[failed_run(unit)],
            &["core.py".to_owned()]
        ));
        assert!(!failing_outside_changes(
            &[failed_run(unit)],
            &["core.py".to_owned(), "tests/test_core.py".to_owned()]
        ));
        // A cut output whose summary names fewer tests than it counts: the others may be in a
        // changed file (the same output whole, its count matching, is outside: above).
        let (head, tail) = py.split_at(py.find("FAILED tests/").unwrap());
        let cut = format!(
            "{head}[… 9000 bytes (80 lines) of output cut here; the beginning and the end are shown …]\n{}",
            tail.replace("1 failed", "5 failed")
        );
        assert!(!failing_outside_changes(&[failed_run(&cut)], &changed));
    }

    #[test]
    fn a_test_id_names_its_file() {
        assert!(test_is_in(
            "tests/test_a.py::Case::test_x",
            "tests/test_a.py"
        ));
        assert!(test_is_in("./test_a.py::test_x", "test_a.py"));
        assert!(test_is_in("test_a.py::test_x", "pkg/test_a.py"));
        assert!(!test_is_in("tests/test_a.py::test_x", "a.py"));
        assert!(test_is_in("tests.test_a.Case.test_x", "tests/test_a.py"));
        assert!(test_is_in("test_a.Case", "pkg/test_a.py"));
        assert!(!test_is_in("tests.test_a.Case.test_x", "a.py"));
        assert!(!test_is_in("tests.test_ab.Case.test_x", "tests/test_a.py"));
    }

    #[test]
    fn options_from_config() {
        let (config, problems) = Config::from_toml_str(
            "[develop]\napprove = \"auto\"\nfix_rounds = 1\njudge_min_lines = 5\nrisky = [\"billing\"]\n\n[edit]\nmax_attempts = 2\n",
            crate::config::ValueSource::Default,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let o = DevelopOptions::from_config(&config);
        assert_eq!(o.approve, ApproveMode::Auto);
        assert_eq!((o.fix_rounds, o.judge_min_lines, o.max_attempts), (1, 5, 2));
        assert_eq!(o.risky, ["billing"]);
        // The budget: the shipped defaults, and what a file sets.
        assert_eq!(o.max_duration, Duration::from_secs(600));
        assert_eq!(o.max_model_calls, 40);
        let (config, problems) = Config::from_toml_str(
            "[develop]\nmax_minutes = 3\nmax_model_calls = 7\n",
            crate::config::ValueSource::Default,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let o = DevelopOptions::from_config(&config);
        assert_eq!(
            (o.max_duration, o.max_model_calls),
            (Duration::from_secs(180), 7)
        );
        // Out of range: reported, and the default kept.
        let (config, problems) = Config::from_toml_str(
            "[develop]\nmax_model_calls = 0\n",
            crate::config::ValueSource::Default,
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(DevelopOptions::from_config(&config).max_model_calls, 40);
    }

    #[test]
    fn a_stopped_run_says_why_and_what_was_not_done() {
        let mut report = Report::new("add a flag");
        report.stopped = Some(BudgetSpent::ModelCalls { limit: 40 }.to_string());
        report.not_done = vec!["step 3: print it".to_owned()];
        let summary = report.summary();
        assert!(
            summary.contains(
                "Stopped early: the run used all of its 40 model calls (raise \
                 `[develop] max_model_calls` to allow more)\n  not done: step 3: print it\n"
            ),
            "{summary}"
        );
        let failure = DevelopFailure::Budget(BudgetSpent::Time {
            limit: "10 minutes".to_owned(),
        });
        assert_eq!(
            failure.to_string(),
            "the run reached its time limit of 10 minutes (raise `[develop] max_minutes` to \
             allow more) before any step was done; nothing was changed"
        );
    }
}
