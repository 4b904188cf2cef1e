//! A develop run as the edges ask for it: the run's plan as a typed event ([`RunEvent::Plan`])
//! once the planner made it and again each time a step starts or the run ends, with every
//! entry's status, so an edge shows a live plan (ACP's `plan` update) without knowing how
//! develop reports its phases.
//!
//! The plan is seen through the run's approver: with `[develop] approve = "ask"` the session
//! asks the edge a [`Question`](super::runs::Question) and waits for its answer (an edge with no
//! one to ask drops it, and the run goes on). Which entry runs is read from develop's typed
//! progress ([`RunPhase::Step`], [`RunPhase::Verify`]); the statuses at the end come from the
//! report, which is the truth. The run ends with its [`RunOutcome`].

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use super::edit::Workspace;
use super::runs::{Question, RunEvent, RunHandle, RunOutcome, RunPhase, RunReport};
use crate::workflow::develop::plan::Plan;
use crate::workflow::develop::{self, ApproveMode, Approver, Outcome, Progress};
// What an edge needs to ask for a run and read its report, without reaching into develop.
pub use crate::workflow::develop::checks::{CheckRun, CommandEvent};
pub use crate::workflow::develop::{
    DevelopContext, DevelopModels, DevelopRequest, PlanReview, Report, StepEnded, StepFile,
    StepReport, StepStatus, VerifyStatus,
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

/// Runs `request`, reporting progress and the plan on `run`, asking the edge to approve the
/// plan unless `[develop] approve = "auto"`, stopping when it is cancelled; ends `run` with its
/// report ([`RunEvent::Report`]) and proposal ([`RunEvent::Proposal`]) and returns the outcome.
pub async fn run(mut ctx: DevelopContext, request: DevelopRequest, run: &RunHandle) -> RunOutcome {
    let tracker = Arc::new(Tracker {
        items: Mutex::new(Vec::new()),
        events: run.sender(),
    });
    let ask = ctx.options.approve == ApproveMode::Ask;
    ctx.approver = Some(Arc::new(Watcher {
        ask: ask.then(|| run.sender()),
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
    let commands = run.sender();
    ctx.on_command = Some(Arc::new(move |event| {
        let _ = commands.send(RunEvent::Command(Box::new(event)));
    }));
    let outcome = {
        let tracker = tracker.clone();
        let progress = move |p: Progress| {
            tracker.progress(p.phase);
            run.report(p.percent, p.phase, &p.message);
        };
        develop::run(&ctx, request, &progress, run.cancel_token()).await
    };
    tracker.settle(&outcome);
    let ended = match &outcome.proposal {
        Some(p) => RunOutcome::Proposal {
            files: p.files.iter().map(|f| f.display_path.clone()).collect(),
            stopped: outcome.report.stopped.clone(),
        },
        None if run.cancel_token().is_cancelled() => RunOutcome::Cancelled,
        None => RunOutcome::Failed(
            (outcome.report.failure.clone()).unwrap_or_else(|| "no proposal".to_owned()),
        ),
    };
    run.end(
        Some(RunReport::Develop(outcome.report)),
        outcome.proposal,
        ended,
    )
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

    /// Marks the entry develop's progress says runs.
    fn progress(&self, phase: RunPhase) {
        if let RunPhase::Step { number } = phase {
            self.update(|items| {
                for item in items.iter_mut().filter(|i| !i.verify) {
                    if item.number < number && item.status == ItemStatus::Running {
                        item.status = ItemStatus::Done;
                    } else if item.number == number {
                        item.status = ItemStatus::Running;
                    }
                }
            });
        } else if let RunPhase::Verify { .. } = phase {
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

/// Sees the plan, then asks the edge to approve it ([`RunEvent::Question`]) or goes on.
struct Watcher {
    /// Where the question goes; `None`: approved without asking.
    ask: Option<tokio::sync::mpsc::UnboundedSender<RunEvent>>,
    tracker: Arc<Tracker>,
}

impl Approver for Watcher {
    fn approve(&self, review: PlanReview) -> BoxFuture<'static, bool> {
        self.tracker.set_plan(&review.plan);
        let Some(events) = &self.ask else {
            return Box::pin(async { true });
        };
        let (question, asked) = Question::new(review);
        let sent = events.send(RunEvent::Question(question)).is_ok();
        // A question nobody reads, or one dropped unanswered: nobody is there to ask.
        Box::pin(async move { !sent || asked.await.unwrap_or(true) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        tracker.progress(RunPhase::Step { number: 1 });
        tracker.progress(RunPhase::Step { number: 1 });
        tracker.progress(RunPhase::Step { number: 2 });
        tracker.progress(RunPhase::Verify { round: 0 });
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

    #[tokio::test]
    async fn the_plan_is_a_question_the_edge_answers_or_drops() {
        let runs = super::super::Runs::new();
        let mut handle = runs.start_run(super::super::RunKind::Develop, "x");
        let mut events = handle.take_events().unwrap();
        let tracker = Arc::new(Tracker {
            items: Mutex::new(Vec::new()),
            events: handle.sender(),
        });
        let watcher = Watcher {
            ask: Some(handle.sender()),
            tracker,
        };
        let review = || PlanReview {
            plan: Plan {
                steps: vec![develop::plan::Step {
                    number: 1,
                    text: "one".into(),
                    files: Vec::new(),
                    verify: false,
                }],
            },
            markdown: String::new(),
            path: None,
        };
        let mut question = |answer: Option<bool>| {
            let approved = watcher.approve(review());
            // The plan goes out first (when it changed), then the question.
            let q = loop {
                match events.try_recv() {
                    Ok(RunEvent::Plan { .. }) => continue,
                    Ok(RunEvent::Question(q)) => break q,
                    other => panic!("expected the question, found {other:?}"),
                }
            };
            assert_eq!(q.review.plan.steps.len(), 1);
            match answer {
                Some(yes) => q.answer(yes),
                None => drop(q),
            }
            approved
        };
        assert!(!question(Some(false)).await);
        assert!(question(Some(true)).await);
        assert!(question(None).await, "dropped unanswered: nobody to ask");
    }
}
