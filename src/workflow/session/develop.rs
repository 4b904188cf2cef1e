//! A develop run as the edges ask for it: the run's plan as a typed event ([`RunEvent::Plan`])
//! once the planner made it and again each time a step starts or the run ends, with every
//! entry's status, so an edge shows a live plan (ACP's `plan` update) without knowing how
//! develop reports its phases.
//!
//! The plan is seen through the run's [`Approver`]: the session always asks, and answers for
//! the user when `[develop] approve = "auto"` or the edge has no one to ask (as `patchwise
//! develop` does). Which step runs is read from develop's progress (`step i/n: …`,
//! `verify: …`); the statuses at the end come from the report, which is the truth.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use super::edit::Workspace;
use super::runs::{RunEvent, RunHandle};
use crate::workflow::develop::plan::Plan;
use crate::workflow::develop::{self, ApproveMode, Outcome, Progress};
// What an edge needs to ask for a run and read its report, without reaching into develop.
pub use crate::workflow::develop::{
    Approver, DevelopContext, DevelopModels, DevelopRequest, PlanReview, Report, StepEnded,
    StepFile, StepReport, StepStatus, VerifyStatus,
};

/// One entry of the plan as the user follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanItem {
    /// The plan step's number (1-based).
    pub number: usize,
    pub text: String,
    /// Workspace-relative paths the step names.
    pub files: Vec<String>,
    /// The verification step (the tests), not a change.
    pub verify: bool,
    pub status: ItemStatus,
}

/// Where a plan entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemStatus {
    Pending,
    Running,
    Done,
    /// Failed for good, or stopped by the budget (its changes were undone).
    Failed,
}

/// The context of a develop run from an editor's view of the workspace: its folders — or, with
/// none open, the folder of the file the user is in (`focus`) —, its open buffers and models.
pub fn context(workspace: Workspace, focus: Option<&Path>) -> DevelopContext {
    let mut roots = workspace.roots;
    if roots.is_empty()
        && let Some(dir) = focus.and_then(Path::parent)
    {
        roots.push(dir.to_path_buf());
    }
    DevelopContext::new(
        (*workspace.config).clone(),
        DevelopModels::Router(workspace.router),
        roots,
        workspace.snapshot,
    )
}

/// Runs `request`, reporting progress and the plan on `run`, stopping when it is cancelled.
pub async fn run(mut ctx: DevelopContext, request: DevelopRequest, run: &RunHandle) -> Outcome {
    let tracker = Arc::new(Tracker {
        items: Mutex::new(Vec::new()),
        events: run.sender(),
    });
    let automatic = ctx.options.approve == ApproveMode::Auto || ctx.approver.is_none();
    ctx.approver = Some(Arc::new(Watcher {
        inner: (!automatic).then(|| ctx.approver.clone()).flatten(),
        tracker: tracker.clone(),
    }));
    ctx.options.approve = ApproveMode::Ask;
    if let DevelopModels::Router(router) = &ctx.models {
        ctx.models = DevelopModels::Router(run.metered(router));
    }
    let steps = run.sender();
    ctx.on_step = Some(Arc::new(move |ended| {
        let _ = steps.send(RunEvent::Step(Box::new(ended)));
    }));
    let outcome = {
        let tracker = tracker.clone();
        let progress = move |p: Progress| {
            tracker.progress(&p.message);
            run.report(p.percent, &p.message);
        };
        develop::run(&ctx, request, &progress, run.cancel_token()).await
    };
    tracker.settle(&outcome);
    outcome
}

/// The plan's entries as the run goes; each change goes out as a [`RunEvent::Plan`].
struct Tracker {
    items: Mutex<Vec<PlanItem>>,
    events: tokio::sync::mpsc::UnboundedSender<RunEvent>,
}

impl Tracker {
    fn set_plan(&self, plan: &Plan) {
        let items = plan
            .steps
            .iter()
            .map(|s| PlanItem {
                number: s.number,
                text: s.text.clone(),
                files: s.files.clone(),
                verify: s.verify,
                status: ItemStatus::Pending,
            })
            .collect();
        self.update(|all| *all = items);
    }

    /// Reads which entry runs from develop's progress message.
    fn progress(&self, message: &str) {
        if let Some(index) = work_step(message) {
            self.update(|items| {
                let mut work = items.iter_mut().filter(|i| !i.verify);
                for (n, item) in work.by_ref().enumerate() {
                    if n + 1 < index && item.status == ItemStatus::Running {
                        item.status = ItemStatus::Done;
                    } else if n + 1 == index {
                        item.status = ItemStatus::Running;
                    }
                }
            });
        } else if message.starts_with("verify:") {
            self.update(|items| {
                for item in items.iter_mut() {
                    if item.verify {
                        item.status = ItemStatus::Running;
                    } else if item.status == ItemStatus::Running {
                        item.status = ItemStatus::Done;
                    }
                }
            });
        }
    }

    /// The statuses the report says, sent once more.
    fn settle(&self, outcome: &Outcome) {
        let report = &outcome.report;
        self.update(|items| {
            for item in items.iter_mut() {
                item.status = if item.verify {
                    match &report.verify {
                        VerifyStatus::Passed => ItemStatus::Done,
                        VerifyStatus::Failed(_) => ItemStatus::Failed,
                        VerifyStatus::NotRun(_) if outcome.proposal.is_some() => ItemStatus::Done,
                        VerifyStatus::NotRun(_) => ItemStatus::Pending,
                    }
                } else {
                    let name = format!("step {}", item.number);
                    match report.steps.iter().rev().find(|s| s.name == name) {
                        Some(s) if s.status == StepStatus::Done => ItemStatus::Done,
                        Some(_) => ItemStatus::Failed,
                        None => ItemStatus::Pending,
                    }
                };
            }
        });
    }

    fn update(&self, change: impl FnOnce(&mut Vec<PlanItem>)) {
        let mut items = self.items.lock().unwrap_or_else(PoisonError::into_inner);
        let before = items.clone();
        change(&mut items);
        if *items != before || before.is_empty() && !items.is_empty() {
            let _ = self.events.send(RunEvent::Plan {
                items: items.clone(),
            });
        }
    }
}

/// `step i/n: …` → `i` (develop's progress while step `i` of the work runs).
fn work_step(message: &str) -> Option<usize> {
    let rest = message.strip_prefix("step ")?;
    let (fraction, _) = rest.split_once(':')?;
    let (i, _) = fraction.split_once('/')?;
    i.trim().parse().ok()
}

/// Sees the plan, then approves it as the edge would (or for the user).
struct Watcher {
    inner: Option<Arc<dyn Approver>>,
    tracker: Arc<Tracker>,
}

impl Approver for Watcher {
    fn approve(&self, review: PlanReview) -> BoxFuture<'static, bool> {
        self.tracker.set_plan(&review.plan);
        match &self.inner {
            Some(inner) => inner.approve(review),
            None => Box::pin(async { true }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_step_is_read_from_the_progress() {
        assert_eq!(work_step("step 2/3: Print the count"), Some(2));
        assert_eq!(work_step("step 10/12: a: b"), Some(10));
        assert_eq!(work_step("verify: running the tests"), None);
        assert_eq!(work_step("steps: x"), None);
    }

    #[test]
    fn entries_run_in_turn_and_the_tests_last() {
        let runs = super::super::Runs::new();
        let mut handle = runs.start_run(super::super::RunKind::Develop, "x");
        let mut events = handle.take_events().unwrap();
        let tracker = Tracker {
            items: Mutex::new(Vec::new()),
            events: handle.sender(),
        };
        let step = |number, verify| develop::plan::Step {
            number,
            text: format!("step {number}"),
            files: Vec::new(),
            verify,
        };
        tracker.set_plan(&Plan {
            steps: vec![step(1, false), step(2, false), step(3, true)],
        });
        tracker.progress("step 1/2: a");
        tracker.progress("step 1/2: a");
        tracker.progress("step 2/2: b");
        tracker.progress("verify: running the tests");
        let mut seen = Vec::new();
        while let Ok(RunEvent::Plan { items }) = events.try_recv() {
            seen.push(items.iter().map(|i| i.status).collect::<Vec<_>>());
        }
        use ItemStatus::*;
        assert_eq!(
            seen,
            [
                vec![Pending, Pending, Pending],
                vec![Running, Pending, Pending],
                vec![Done, Running, Pending],
                vec![Done, Done, Running],
            ]
        );
    }
}
