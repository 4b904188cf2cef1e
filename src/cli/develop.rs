//! `patchwise develop "REQUEST" [--workspace DIR] [--yes] [--apply] [--json]`: the develop
//! workflow from a terminal. Progress (phase bar, step n/m, a spinner that turns as the model's
//! answer streams in, with how much has arrived) goes to stderr; the plan and the final diff go to stdout (or one JSON object with `--json`).
//!
//! The plan is printed and confirmed with a prompt unless `--yes` is given or the configuration
//! says `[develop] approve = "auto"`; without a terminal to ask on, the run refuses to start
//! rather than guess. Without `--apply` nothing is written. With `--apply` every file of the
//! proposal is written as one atomic transaction: if any write fails (or a file changed on disk
//! during the run), the files already written are restored and nothing is left half-applied.
//! A proposal whose tests failed in the verify phase is not written at all: `--apply` is asked
//! without anyone looking at the diff, so a change the run could not verify is named and left
//! for the user (`docs/develop.md`, "Results").
//!
//! Exit codes: 0 a proposal (applied with `--apply`), 1 no proposal or the apply was refused,
//! 2 a usage or setup error.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures::future::BoxFuture;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigPaths, Severity};
use crate::model::ModelRouter;
use crate::tools::Snapshot;
use crate::workflow::Proposal;
use crate::workflow::develop::{
    self, ApproveMode, Approver, DevelopContext, DevelopModels, DevelopRequest, PlanReview,
    Progress,
};

/// Arguments of `patchwise develop`.
#[derive(Debug, Clone, clap::Args)]
pub struct DevelopArgs {
    /// What to build or change, in words.
    pub request: String,

    /// The workspace root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Approve the plan without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Write the proposal to the files (one atomic transaction).
    #[arg(long)]
    pub apply: bool,

    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command and returns its exit code.
pub fn run(args: &DevelopArgs) -> ExitCode {
    super::exit_code("develop", args.json, execute(args))
}

fn execute(args: &DevelopArgs) -> Result<ExitCode> {
    let root = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = std::fs::canonicalize(&root)
        .with_context(|| format!("cannot open the workspace {}", root.display()))?;
    if !root.is_dir() {
        bail!("the workspace {} is not a directory", root.display());
    }
    if args.request.trim().is_empty() {
        bail!("the request is empty; say what to build or change");
    }
    let (config, problems) = Config::load_from(&ConfigPaths::standard(Some(&root)));
    for p in problems.iter().filter(|p| p.severity == Severity::Error) {
        eprintln!("patchwise develop: {p}");
    }
    let mut ctx = DevelopContext::new(
        config.clone(),
        DevelopModels::Router(Arc::new(ModelRouter::new(config))),
        vec![root.clone()],
        Snapshot::new(),
    );
    let auto = args.yes || ctx.options.approve == ApproveMode::Auto;
    if !auto && !std::io::stdin().is_terminal() {
        bail!(
            "the plan needs approval and there is no terminal to ask on; pass --yes, or set \
             [develop] approve = \"auto\""
        );
    }
    let terminal = !args.json && std::io::stderr().is_terminal();
    let bar = Arc::new(Bar::new(
        terminal.then(ProgressDrawTarget::stderr),
        !args.json,
    ));
    ctx.on_stream = Some({
        let bar = bar.clone();
        Arc::new(move |bytes| bar.streamed(bytes))
    });
    // The approver always sees the plan (it prints it); it only asks when not automatic.
    ctx.options.approve = ApproveMode::Ask;
    ctx.approver = Some(Arc::new(TerminalApprover {
        auto,
        print: !args.json,
        bar: bar.clone(),
    }));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let cancel = CancellationToken::new();
    let request = DevelopRequest {
        request: args.request.clone(),
        focus: None,
    };
    let outcome = runtime.block_on(async {
        let interrupt = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupt.cancel();
            }
        });
        let progress = |p: Progress| bar.update(&p);
        develop::run(&ctx, request, &progress, cancel.clone()).await
    });
    bar.finish();
    runtime.shutdown_timeout(Duration::from_millis(200));

    let report = &outcome.report;
    let mut applied = None;
    let mut refused = None;
    if args.apply
        && let Some(proposal) = &outcome.proposal
    {
        match unverified(report, proposal) {
            Some(why) => refused = Some(why),
            None => applied = Some(apply(proposal)),
        }
    }
    let status = match (&outcome.proposal, &applied, &refused) {
        (None, _, _) => "no_proposal",
        (Some(_), _, Some(_)) => "apply_refused",
        (Some(_), None, None) => "proposal",
        (Some(_), Some(Ok(())), None) => "applied",
        (Some(_), Some(Err(_)), None) => "apply_failed",
    };
    if args.json {
        let files: Vec<_> = outcome
            .proposal
            .iter()
            .flat_map(|p| &p.files)
            .map(|f| json!({"path": f.display_path, "created": f.created}))
            .collect();
        let out = json!({
            "status": status,
            "message": match (&applied, &refused) {
                (_, Some(why)) => Some(why.clone()),
                (Some(Err(e)), _) => Some(e.clone()),
                _ => report.failure.clone(),
            },
            "diff": outcome.proposal.as_ref().map(|p| p.diff.clone()),
            "files": files,
            "report": report,
        });
        println!("{out}");
    } else {
        let mut stdout = std::io::stdout().lock();
        if let Some(p) = &outcome.proposal {
            writeln!(stdout, "{}", p.diff.trim_end())?;
        }
        eprint!("{}", report.summary());
        match &applied {
            Some(Ok(())) => eprintln!(
                "patchwise develop: applied to {} file(s)",
                report.changed.len()
            ),
            Some(Err(e)) => eprintln!("patchwise develop: {e}"),
            None if refused.is_some() => {
                eprintln!(
                    "patchwise develop: {}",
                    refused.as_deref().unwrap_or_default()
                )
            }
            None if outcome.proposal.is_some() => {
                eprintln!(
                    "patchwise develop: nothing was written; run again with --apply to write the change"
                )
            }
            None => {}
        }
    }
    Ok(match status {
        "proposal" | "applied" => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

/// Why `proposal` must not be written without a person looking at it: its tests failed in the
/// verify phase. `None` when it may be written (tests passed, or the project has none).
fn unverified(report: &develop::Report, proposal: &Proposal) -> Option<String> {
    let develop::VerifyStatus::Failed(failures) = &report.verify else {
        return None;
    };
    let files: Vec<&str> = proposal
        .files
        .iter()
        .map(|f| f.display_path.as_str())
        .collect();
    Some(format!(
        "nothing was written: the tests fail with this change, so --apply does not write it \
         ({}: {}). Review the diff and apply it by hand if you want it anyway. The \
         tests: {}",
        if files.len() == 1 {
            "the file it would change is"
        } else {
            "the files it would change are"
        },
        files.join(", "),
        crate::edit::text::clip(failures.trim(), 300)
    ))
}

/// Writes every file of `proposal` as one transaction (all land, or none).
fn apply(proposal: &Proposal) -> Result<(), String> {
    crate::workflow::session::write_proposal(proposal)
        .map_err(|e| format!("nothing was written: {e}"))
}

/// Prints the plan and, unless automatic, asks on the terminal.
struct TerminalApprover {
    auto: bool,
    print: bool,
    bar: Arc<Bar>,
}

impl Approver for TerminalApprover {
    fn approve(&self, review: PlanReview) -> BoxFuture<'static, bool> {
        let (auto, print, bar) = (self.auto, self.print, self.bar.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                bar.suspend(|| {
                    if print {
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(out, "{}", review.markdown.trim_end());
                        let _ = out.flush();
                    }
                    if auto {
                        return true;
                    }
                    eprint!("Approve this plan? [y/N] ");
                    let _ = std::io::stderr().flush();
                    let mut line = String::new();
                    if std::io::stdin().lock().read_line(&mut line).is_err() {
                        return false;
                    }
                    matches!(line.trim().to_lowercase().as_str(), "y" | "yes")
                })
            })
            .await
            .unwrap_or(false)
        })
    }
}

/// The progress display: a bar with a spinner on a terminal, phase lines otherwise. The
/// spinner turns only as the model's answer arrives, so a still spinner means patchwise is
/// waiting (for the model's first token, or a check command) rather than receiving.
struct Bar {
    bar: Option<ProgressBar>,
    plain: bool,
    /// The phase message, and the bytes the model sent since it was set.
    phase: Mutex<(String, usize)>,
}

impl Bar {
    /// A bar drawn to `target` (`None`: no bar; phase lines on stderr when `plain`).
    fn new(target: Option<ProgressDrawTarget>, plain: bool) -> Bar {
        let terminal = target.is_some();
        let bar = target.map(|target| {
            let bar = ProgressBar::with_draw_target(Some(100), target);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{bar:30}] {pos:>3}% {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar
        });
        Bar {
            bar,
            plain: plain && !terminal,
            phase: Mutex::new((String::new(), 0)),
        }
    }

    fn update(&self, p: &Progress) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        if phase.0 == p.message {
            if let Some(bar) = &self.bar {
                bar.set_position(u64::from(p.percent));
            }
            return;
        }
        *phase = (p.message.clone(), 0);
        if let Some(bar) = &self.bar {
            bar.set_position(u64::from(p.percent));
            bar.set_message(p.message.clone());
        } else if self.plain {
            eprintln!("patchwise develop: [{:>3}%] {}", p.percent, p.message);
        }
    }

    /// `bytes` more of the model's answer arrived: the spinner turns and the message says how
    /// much came during this phase.
    fn streamed(&self, bytes: usize) {
        let Some(bar) = &self.bar else { return };
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        phase.1 += bytes;
        bar.set_message(format!("{} · model answering ({})", phase.0, size(phase.1)));
        bar.tick();
    }

    fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    #[cfg(test)]
    fn message(&self) -> String {
        self.bar.as_ref().map(|b| b.message()).unwrap_or_default()
    }
}

/// `bytes` as a person reads it: `512 B`, `1.3 kB`.
fn size(bytes: usize) -> String {
    if bytes < 1000 {
        format!("{bytes} B")
    } else {
        format!("{:.1} kB", bytes as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_counts_what_the_model_sent_during_the_phase() {
        let bar = Bar::new(Some(ProgressDrawTarget::hidden()), true);
        let step = |message: &str, percent| Progress {
            phase: crate::workflow::develop::RunPhase::Step { number: 1 },
            message: message.to_owned(),
            percent,
        };
        bar.update(&step("step 1/3: coder", 30));
        assert_eq!(bar.message(), "step 1/3: coder");
        bar.streamed(700);
        bar.streamed(600);
        assert_eq!(bar.message(), "step 1/3: coder · model answering (1.3 kB)");
        // The same phase again (a new percentage) keeps the count; a new phase starts over.
        bar.update(&step("step 1/3: coder", 32));
        assert_eq!(bar.message(), "step 1/3: coder · model answering (1.3 kB)");
        bar.update(&step("step 2/3: coder", 50));
        bar.streamed(12);
        assert_eq!(bar.message(), "step 2/3: coder · model answering (12 B)");
        bar.finish();
    }
}
