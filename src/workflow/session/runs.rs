//! Runs in flight: ids, cancellation tokens and progress events (see the `session` module doc).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::develop::{CommandEvent, PlanItem, PlanReview, Report, StepEnded};
use crate::model::{ModelRouter, Usage};
use crate::research::ResearchRun;
use crate::workflow::Proposal;
pub use crate::workflow::RunPhase;

/// What kind of long work a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunKind {
    Edit,
    Research,
    Develop,
}

impl RunKind {
    /// Short name, also the middle of the run id (`patchwise-edit-3`).
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Edit => "edit",
            RunKind::Research => "research",
            RunKind::Develop => "develop",
        }
    }

    /// The title progress is shown under.
    pub fn title(self) -> &'static str {
        match self {
            RunKind::Edit => "patchwise: edit",
            RunKind::Research => "patchwise: research",
            RunKind::Develop => "patchwise: develop",
        }
    }
}

/// What a run reports, in order.
#[derive(Debug)]
pub enum RunEvent {
    /// Where the run is, a message for people and an overall percentage (0..=100).
    Progress {
        percent: u32,
        phase: RunPhase,
        message: String,
    },
    /// A develop run's plan with where each entry stands (`develop::run`), whole each time.
    Plan { items: Vec<PlanItem> },
    /// A develop step ended, with what it changed (`develop::run`): the proposal growing step
    /// by step.
    Step(Box<StepEnded>),
    /// A develop run's check, lint or test command started or ended (with its output).
    Command(Box<CommandEvent>),
    /// A model answer ended: its usage, and the run's so far.
    Usage(RunUsage),
    /// A question for the user that the run waits on: [`Question::answer`] it.
    Question(Question),
    /// The run's report, just before it ends: a develop run's account of its plan, steps and
    /// checks (with a proposal or without one), a research run's report saved in the library.
    Report(Box<RunReport>),
    /// The proposal an edit or develop run made, ready for review (accept or reject it through
    /// `session::review`), just before the run ends.
    Proposal(Box<Proposal>),
    /// The run ended, with its outcome; always the last event.
    Finished(RunOutcome),
}

/// A run's report ([`RunEvent::Report`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RunReport {
    Develop(Report),
    Research(ResearchRun),
}

/// What a run's last events carried, gathered by an edge that forwards the others as they
/// come ([`RunEnded::next`]) and acts on the result when the run has ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnded {
    pub outcome: RunOutcome,
    pub report: Option<RunReport>,
    pub proposal: Option<Proposal>,
}

impl Default for RunEnded {
    /// A run whose events stopped without an end was given up: cancelled.
    fn default() -> RunEnded {
        RunEnded {
            outcome: RunOutcome::Cancelled,
            report: None,
            proposal: None,
        }
    }
}

impl RunEnded {
    /// The next event of `events` for the edge to forward, keeping the report, the proposal and
    /// the end on the way; `None` once the run ended (then `self` holds what it produced).
    pub async fn next(
        &mut self,
        events: &mut mpsc::UnboundedReceiver<RunEvent>,
    ) -> Option<RunEvent> {
        loop {
            match self.gather(events.recv().await?) {
                Ok(true) => return None,
                Ok(false) => {}
                Err(event) => return Some(event),
            }
        }
    }

    /// Keeps `event` when it is the report, the proposal or the end (`Ok(true)` for the end);
    /// hands any other event back.
    fn gather(&mut self, event: RunEvent) -> Result<bool, RunEvent> {
        match event {
            RunEvent::Report(report) => self.report = Some(*report),
            RunEvent::Proposal(proposal) => self.proposal = Some(*proposal),
            RunEvent::Finished(outcome) => {
                self.outcome = outcome;
                return Ok(true);
            }
            other => return Err(other),
        }
        Ok(false)
    }

    /// The develop report, when the run sent one.
    pub fn develop_report(&self) -> Option<&Report> {
        match &self.report {
            Some(RunReport::Develop(report)) => Some(report),
            _ => None,
        }
    }

    /// The research run, when the run sent one.
    pub fn research(&self) -> Option<&ResearchRun> {
        match &self.report {
            Some(RunReport::Research(run)) => Some(run),
            _ => None,
        }
    }
}

/// A question a run waits on: approve develop's plan. The edge asks its user and answers; an
/// edge that drops the question unanswered lets the run go on, as when nobody is there to ask.
#[derive(Debug)]
pub struct Question {
    pub review: PlanReview,
    answer: tokio::sync::oneshot::Sender<bool>,
}

impl Question {
    pub(super) fn new(review: PlanReview) -> (Question, tokio::sync::oneshot::Receiver<bool>) {
        let (answer, asked) = tokio::sync::oneshot::channel();
        (Question { review, answer }, asked)
    }

    /// `true`: go on; `false`: the user declined, and the run ends without a result.
    pub fn answer(self, yes: bool) {
        let _ = self.answer.send(yes);
    }
}

/// How a run ended. The result itself went out just before ([`RunEvent::Proposal`],
/// [`RunEvent::Report`]); the outcome says what it is, for progress and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// A proposal over these files is ready; `stopped`: why a develop run stopped before doing
    /// all it planned.
    Proposal {
        files: Vec<String>,
        stopped: Option<String>,
    },
    /// A research report is saved in the library under `id`.
    Report {
        id: String,
    },
    /// No result; why, for the user.
    Failed(String),
    Cancelled,
}

impl std::fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunOutcome::Proposal {
                stopped: Some(why), ..
            } => write!(f, "proposal ready; stopped early: {why}"),
            RunOutcome::Proposal { .. } => f.write_str("proposal ready"),
            RunOutcome::Report { .. } => f.write_str("report ready"),
            RunOutcome::Failed(why) => f.write_str(why),
            RunOutcome::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// Token usage as a run goes, sent after each model answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunUsage {
    /// `provider/model` that answered.
    pub model: String,
    /// Its context window (tokens).
    pub context_window: usize,
    /// The answer that just ended: its prompt and answer tokens (what is in the context now).
    pub last: Usage,
    /// Every answer of the run so far.
    pub total: Usage,
    /// How many answers that is.
    pub answers: usize,
}

#[derive(Debug)]
struct Entry {
    kind: RunKind,
    target: String,
    cancel: CancellationToken,
}

/// The runs in flight, by id. Shared by an edge (one per server); its lock is held only for a
/// map operation, never across an `.await`.
#[derive(Debug, Default)]
pub struct Runs {
    next: AtomicU64,
    running: Mutex<HashMap<String, Entry>>,
}

/// One run in flight; dropping it cancels the run and forgets it.
#[derive(Debug)]
pub struct RunHandle {
    id: String,
    kind: RunKind,
    cancel: CancellationToken,
    events: Option<mpsc::UnboundedReceiver<RunEvent>>,
    tx: mpsc::UnboundedSender<RunEvent>,
    /// The last event ([`RunEvent::Finished`]) was sent.
    ended: std::sync::atomic::AtomicBool,
    runs: Arc<Runs>,
}

impl Runs {
    pub fn new() -> Arc<Runs> {
        Arc::new(Runs::default())
    }

    /// Starts a run of `kind` on `target` (a label for logs: a path, a query): a fresh id and
    /// cancellation token, registered until the handle is dropped.
    pub fn start_run(self: &Arc<Self>, kind: RunKind, target: &str) -> RunHandle {
        self.start(kind, target, CancellationToken::new())
    }

    /// [`Runs::start_run`] inside work the edge cancels as a whole (an MCP request, an ACP
    /// prompt): cancelling `outer` cancels the run; the run's end leaves `outer` alone.
    pub fn start_run_within(
        self: &Arc<Self>,
        kind: RunKind,
        target: &str,
        outer: &CancellationToken,
    ) -> RunHandle {
        self.start(kind, target, outer.child_token())
    }

    fn start(
        self: &Arc<Self>,
        kind: RunKind,
        target: &str,
        cancel: CancellationToken,
    ) -> RunHandle {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("patchwise-{}-{n}", kind.name());
        self.lock().insert(
            id.clone(),
            Entry {
                kind,
                target: target.to_owned(),
                cancel: cancel.clone(),
            },
        );
        tracing::info!(run = %id, target, "run started");
        let (tx, rx) = mpsc::unbounded_channel();
        RunHandle {
            id,
            kind,
            cancel,
            events: Some(rx),
            tx,
            ended: std::sync::atomic::AtomicBool::new(false),
            runs: self.clone(),
        }
    }

    /// Cancels the run with this id, or every run when `id` is `None`. Returns how many runs
    /// were cancelled.
    pub fn cancel(&self, id: Option<&str>) -> usize {
        let running = self.lock();
        let mut count = 0;
        for (run, entry) in running.iter() {
            if id.is_none_or(|wanted| wanted == run) {
                entry.cancel.cancel();
                count += 1;
            }
        }
        count
    }

    /// The runs in flight as `(id, kind, target)`, oldest id first.
    pub fn running(&self) -> Vec<(String, RunKind, String)> {
        let mut out: Vec<_> = self
            .lock()
            .iter()
            .map(|(id, e)| (id.clone(), e.kind, e.target.clone()))
            .collect();
        let number = |id: &str| {
            id.rsplit('-')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        };
        out.sort_by_key(|(id, _, _)| number(id));
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RunHandle {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn kind(&self) -> RunKind {
        self.kind
    }

    /// The token the workflow watches.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// The run's events, for the edge to forward; `None` after the first call.
    pub fn take_events(&mut self) -> Option<mpsc::UnboundedReceiver<RunEvent>> {
        self.events.take()
    }

    /// Where the run's typed events go (for the session's own adapters, `develop::run`).
    pub(super) fn sender(&self) -> mpsc::UnboundedSender<RunEvent> {
        self.tx.clone()
    }

    /// `router`, with each answer's usage sent as a [`RunEvent::Usage`] of this run.
    pub fn metered(&self, router: &ModelRouter) -> Arc<ModelRouter> {
        let tx = self.tx.clone();
        let total = Mutex::new((Usage::default(), 0usize));
        Arc::new(
            router.observed(Arc::new(move |model: &str, window, usage: Usage| {
                let (sum, answers) = {
                    let mut t = total.lock().unwrap_or_else(PoisonError::into_inner);
                    t.0.input_tokens += usage.input_tokens;
                    t.0.output_tokens += usage.output_tokens;
                    t.1 += 1;
                    *t
                };
                let _ = tx.send(RunEvent::Usage(RunUsage {
                    model: model.to_owned(),
                    context_window: window,
                    last: usage,
                    total: sum,
                    answers,
                }));
            })),
        )
    }

    /// Reports progress (callable from any thread, never blocks).
    pub fn report(&self, percent: u32, phase: RunPhase, message: &str) {
        let _ = self.tx.send(RunEvent::Progress {
            percent: percent.min(100),
            phase,
            message: message.to_owned(),
        });
    }

    /// Ends the run: its report and proposal (when it has them), then its outcome, the last
    /// event. The session's run calls end their runs themselves; a second end is dropped.
    pub(super) fn end(
        &self,
        report: Option<RunReport>,
        proposal: Option<Proposal>,
        outcome: RunOutcome,
    ) -> RunOutcome {
        if !self.ended.swap(true, Ordering::Relaxed) {
            if let Some(report) = report {
                let _ = self.tx.send(RunEvent::Report(Box::new(report)));
            }
            if let Some(proposal) = proposal {
                let _ = self.tx.send(RunEvent::Proposal(Box::new(proposal)));
            }
            let _ = self.tx.send(RunEvent::Finished(outcome.clone()));
        }
        outcome
    }
}

impl Drop for RunHandle {
    /// A run dropped before it ended (the edge gave it up) ends as cancelled.
    fn drop(&mut self) {
        self.end(None, None, RunOutcome::Cancelled);
        self.cancel.cancel();
        self.runs.lock().remove(&self.id);
        tracing::debug!(run = %self.id, "run ended");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_registered_until_its_handle_drops_and_dropping_cancels_it() {
        let runs = Runs::new();
        let first = runs.start_run(RunKind::Edit, "a.rs");
        let second = runs.start_run(RunKind::Research, "why");
        assert_eq!(first.id(), "patchwise-edit-1");
        assert_eq!(second.id(), "patchwise-research-2");
        assert_eq!(runs.running().len(), 2);
        let token = first.cancel_token();
        drop(first);
        assert!(token.is_cancelled());
        assert_eq!(runs.running().len(), 1);
        assert_eq!(runs.cancel(Some("patchwise-edit-1")), 0);
        assert_eq!(runs.cancel(Some("patchwise-research-2")), 1);
        assert!(second.cancel_token().is_cancelled());
        assert_eq!(runs.cancel(None), 1);
    }

    #[test]
    fn events_arrive_in_order_and_end_with_finished() {
        let runs = Runs::new();
        let mut run = runs.start_run(RunKind::Edit, "a.rs");
        let mut events = run.take_events().unwrap();
        assert!(run.take_events().is_none());
        run.report(10, RunPhase::Read, "asking");
        run.report(250, RunPhase::Attempt { attempt: 1 }, "checking");
        run.end(None, None, RunOutcome::Failed("no".into()));
        run.end(None, None, RunOutcome::Cancelled);
        drop(run);
        let mut seen = Vec::new();
        while let Ok(e) = events.try_recv() {
            seen.push(match e {
                RunEvent::Progress {
                    percent,
                    phase,
                    message,
                } => format!("{percent} {} {message}", phase.name()),
                RunEvent::Finished(outcome) => format!("end: {outcome}"),
                other => panic!("{other:?}"),
            });
        }
        assert_eq!(
            seen,
            ["10 reading asking", "100 attempt 1 checking", "end: no"]
        );
        assert!(runs.running().is_empty());
        // A run given up before it ended ends as cancelled.
        let mut run = runs.start_run(RunKind::Edit, "a.rs");
        let mut events = run.take_events().unwrap();
        drop(run);
        assert!(matches!(
            events.try_recv(),
            Ok(RunEvent::Finished(RunOutcome::Cancelled))
        ));
    }

    #[test]
    fn a_run_within_outer_work_is_cancelled_with_it_and_its_end_leaves_the_work_alone() {
        let runs = Runs::new();
        let outer = CancellationToken::new();
        let first = runs.start_run_within(RunKind::Research, "why", &outer);
        drop(first);
        assert!(!outer.is_cancelled());
        let second = runs.start_run_within(RunKind::Research, "how", &outer);
        outer.cancel();
        assert!(second.cancel_token().is_cancelled());
    }

    #[tokio::test]
    async fn the_result_comes_as_events_before_the_end_and_an_edge_gathers_it() {
        let runs = Runs::new();
        let mut run = runs.start_run(RunKind::Edit, "a.rs");
        let mut events = run.take_events().unwrap();
        let proposal = Proposal::new("add one", Vec::new(), "m", 1, "exact");
        run.report(50, RunPhase::Read, "asking");
        let outcome = RunOutcome::Proposal {
            files: Vec::new(),
            stopped: None,
        };
        assert_eq!(
            run.end(None, Some(proposal.clone()), outcome.clone()),
            outcome
        );
        drop(run);
        let mut ended = RunEnded::default();
        let mut forwarded = Vec::new();
        while let Some(event) = ended.next(&mut events).await {
            forwarded.push(event);
        }
        assert!(matches!(
            forwarded[..],
            [RunEvent::Progress { percent: 50, .. }]
        ));
        assert_eq!(ended.proposal, Some(proposal));
        assert_eq!(ended.outcome, outcome);
        assert!(ended.report.is_none());
        // Nothing after the end; a stream that stops without one was given up.
        assert!(events.try_recv().is_err());
        assert_eq!(RunEnded::default().outcome, RunOutcome::Cancelled);
    }
}
