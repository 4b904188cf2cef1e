//! A research run as the edges ask for it: the research pipeline's phases folded into one
//! overall percentage, so the progress bar moves through the run evenly whatever the edge, and
//! the model's usage reported after each answer ([`RunEvent::Usage`](super::RunEvent)), as
//! develop and edit runs report it.

use crate::config::Config;
use crate::model::ModelRouter;
use crate::research::{Phase, Research};
pub use crate::research::{ResearchError, ResearchRun, RunOptions};

use super::runs::{RunHandle, RunOutcome, RunPhase, RunReport};

/// Percent at the start of each phase.
fn phase_base(phase: Phase) -> u32 {
    match phase {
        Phase::Sources => 0,
        Phase::Dedupe => 40,
        Phase::Credibility => 45,
        Phase::Synthesis => 50,
        Phase::Corroboration => 90,
        Phase::Saved => 98,
    }
}

/// The overall percentage of `percent` of the way through `phase`.
pub fn overall_percent(phase: Phase, percent: u8) -> u32 {
    let base = phase_base(phase);
    let next = Phase::ALL
        .iter()
        .skip_while(|p| **p != phase)
        .nth(1)
        .map_or(100, |p| phase_base(*p));
    base + (next - base) * u32::from(percent.min(100)) / 100
}

/// Runs `query`, reporting progress and model usage on `run`, stopping when it is cancelled;
/// ends `run` with the saved report ([`RunEvent::Report`](super::RunEvent)) and returns the
/// outcome.
pub async fn run(config: &Config, query: &str, options: RunOptions, run: &RunHandle) -> RunOutcome {
    let progress = |phase: Phase, percent: u8, message: &str| {
        run.report(
            overall_percent(phase, percent),
            RunPhase::Research(phase),
            &format!("{}: {message}", phase.name()),
        );
    };
    let result = match Research::new(config) {
        Ok(mut research) => {
            research.set_router(run.metered(&ModelRouter::new(config.clone())));
            research
                .run(query, options, &progress, run.cancel_token())
                .await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(done) => {
            let outcome = RunOutcome::Report {
                id: done.record.id.clone(),
            };
            run.end(Some(RunReport::Research(done)), None, outcome)
        }
        Err(ResearchError::Cancelled) => run.end(None, None, RunOutcome::Cancelled),
        Err(e) => run.end(None, None, RunOutcome::Failed(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_fill_the_bar_in_order() {
        assert_eq!(overall_percent(Phase::Sources, 0), 0);
        assert_eq!(overall_percent(Phase::Sources, 50), 20);
        assert_eq!(overall_percent(Phase::Synthesis, 100), 90);
        assert_eq!(overall_percent(Phase::Saved, 200), 100);
    }
}
