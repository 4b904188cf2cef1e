//! `patchwise research "question" [--sources a,b] [--depth N] [--json]` and
//! `patchwise research list | show ID | search TEXT`: deep research from a terminal, with a live
//! progress bar per phase on stderr (when stderr is a terminal and `--json` is not given).
//!
//! Output: a run prints the synthesis, the sources, the record's id and the Markdown report's
//! path; with `--json` a run and `show` print one object (`id`, `query`, `created_at`, `status`,
//! `synthesis`, `report`, `sources[]` with `key`, `provider`, `title`, `url`, `score`,
//! `breakdown`, `retracted`, …), and `list`/`search` print arrays of `{id, query, created_at}`.
//! Exit codes: 0 done, 1 nothing found / no such record, 2 usage, configuration or library
//! errors, 130 interrupted.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::reference::help_with_default;
use crate::config::{Config, ConfigPaths, Severity};
use crate::research::{self, Phase, Research, ResearchError, ResearchRecord, RunOptions};
use crate::store::StoreError;

/// Arguments of `patchwise research`.
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ResearchArgs {
    #[command(subcommand)]
    pub command: Option<ResearchCommand>,

    /// The question to research.
    #[arg(required = true)]
    pub question: Option<String>,

    /// Only these sources, comma-separated (openalex, arxiv, crossref, semantic_scholar,
    /// searxng, brave, feeds, workspace, library, or a configured name).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub sources: Vec<String>,

    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u8).range(1..=5),
        help = help_with_default(
            "How deep to look, 1 to 5: results per source = 5 × N",
            "research.depth",
        ),
    )]
    pub depth: Option<u8>,

    /// Whether recency counts in credibility (default: guessed from the question).
    #[arg(long, value_name = "BOOL")]
    pub time_sensitive: Option<bool>,

    #[arg(
        long,
        value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=86_400),
        help = help_with_default(
            "Time budget for the whole run, in seconds",
            "research.time_budget_secs",
        ),
    )]
    pub budget_secs: Option<u64>,

    #[arg(
        long,
        conflicts_with = "no_verify",
        help = help_with_default(
            "The model also checks every citation of its synthesis, one short YES/NO call per \
             sentence and passage (stored per claim)",
            "research.verify",
        ),
    )]
    pub verify: bool,

    /// No model check of the citations for this run: the overlap measure alone (overrides
    /// `[research] verify`).
    #[arg(long)]
    pub no_verify: bool,

    /// Print JSON on stdout (no progress bar).
    #[arg(long, global = true)]
    pub json: bool,

    /// The workspace folder: its `.patchwise/config.toml` is read and its files are a source
    /// (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum ResearchCommand {
    /// The saved research, newest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// A saved research record (an id or a unique prefix of one).
    Show { id: String },
    /// Saved research whose question, synthesis or sources mention every word of TEXT.
    Search {
        text: String,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

/// Runs the command.
pub fn run(args: &ResearchArgs) -> ExitCode {
    super::exit_code("research", args.json, execute(args))
}

fn execute(args: &ResearchArgs) -> Result<ExitCode> {
    let workspace = match &args.workspace {
        Some(dir) => Some(
            std::fs::canonicalize(dir)
                .with_context(|| format!("cannot open the workspace {}", dir.display()))?,
        ),
        None => std::env::current_dir().ok(),
    };
    let (config, problems) = Config::load_from(&ConfigPaths::standard(workspace.as_deref()));
    for p in problems.iter().filter(|p| p.severity == Severity::Error) {
        eprintln!("patchwise research: {p}");
    }
    let (_, research_problems) = research::config::ResearchConfig::from_config(&config);
    for p in &research_problems {
        eprintln!("patchwise research: {p}");
    }
    match &args.command {
        Some(ResearchCommand::List { limit }) => {
            let library = research::open_library(&config)?;
            print_summaries(args, &library.list(*limit)?, "no research saved yet")
        }
        Some(ResearchCommand::Search { text, limit }) => {
            let library = research::open_library(&config)?;
            print_summaries(
                args,
                &library.search(text, *limit)?,
                "no saved research matches",
            )
        }
        Some(ResearchCommand::Show { id }) => {
            let library = research::open_library(&config)?;
            let record = match library.get(id) {
                Ok(r) => r,
                Err(err @ (StoreError::NotFound(_) | StoreError::Ambiguous { .. })) => {
                    if args.json {
                        println!(
                            "{}",
                            json!({ "status": "error", "message": err.to_string() })
                        );
                    }
                    eprintln!("patchwise research: {err}");
                    return Ok(ExitCode::FAILURE);
                }
                Err(err) => return Err(err.into()),
            };
            let report = research::ensure_report(&library, &record)
                .with_context(|| format!("cannot write the report of {}", record.id))?;
            print_record(args, &record, &report)?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let question = args.question.clone().unwrap_or_default();
            run_research(args, &config, &question, workspace)
        }
    }
}

fn run_research(
    args: &ResearchArgs,
    config: &Config,
    question: &str,
    workspace: Option<PathBuf>,
) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let options = RunOptions {
        sources: (!args.sources.is_empty()).then(|| args.sources.clone()),
        depth: args.depth,
        workspace,
        time_sensitive: args.time_sensitive,
        time_budget: args.budget_secs.map(Duration::from_secs),
        token_budget: None,
        verify: if args.verify {
            Some(true)
        } else if args.no_verify {
            Some(false)
        } else {
            None
        },
    };
    let research = Research::new(config)?;
    // Configuration problems were printed already; the rest concern credibility files.
    let (_, printed) = research::config::ResearchConfig::from_config(config);
    let printed: Vec<String> = printed.iter().map(ToString::to_string).collect();
    for p in research.problems().iter().filter(|p| !printed.contains(p)) {
        eprintln!("patchwise research: {p}");
    }
    let bars = Bars::new(!args.json && std::io::stderr().is_terminal(), !args.json);
    let cancel = CancellationToken::new();
    let result = runtime.block_on(async {
        let interrupt = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupt.cancel();
            }
        });
        research
            .run(
                question,
                options,
                &|phase, percent, message| bars.update(phase, percent, message),
                cancel.clone(),
            )
            .await
    });
    bars.finish();
    runtime.shutdown_timeout(Duration::from_millis(200));
    match result {
        Ok(run) => {
            print_record(args, &run.record, &run.report)?;
            if run.record.sources.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ResearchError::Cancelled) => {
            eprintln!("patchwise research: interrupted; nothing was saved");
            Ok(ExitCode::from(130))
        }
        Err(err) => Err(anyhow::Error::new(err)),
    }
}

/// The JSON shape of a record (`--json` for a run and for `show`).
pub fn record_json(record: &ResearchRecord, report: &std::path::Path) -> Value {
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("report".to_owned(), json!(report));
        if let Some(Value::Array(sources)) = map.get_mut("sources") {
            for (s, original) in sources.iter_mut().zip(&record.sources) {
                if let Value::Object(m) = s {
                    m.insert("score".to_owned(), json!(original.credibility.score));
                    m.insert(
                        "breakdown".to_owned(),
                        json!(original.credibility.breakdown),
                    );
                }
            }
        }
    }
    value
}

fn print_record(
    args: &ResearchArgs,
    record: &ResearchRecord,
    report: &std::path::Path,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", record_json(record, report))?;
        return Ok(());
    }
    writeln!(out, "{}\n", record.synthesis.trim())?;
    if !record.claims.is_empty() && record.synthesis_kind != "extractive" {
        writeln!(out, "Claims:")?;
        for c in &record.claims {
            let refs: Vec<String> = c
                .sources
                .iter()
                .filter_map(|k| record.sources.iter().find(|s| &s.key == k)?.n)
                .map(|n| format!("[{n}]"))
                .collect();
            writeln!(
                out,
                "  {}. {} {} ({} independent)",
                c.n,
                c.text,
                refs.join(""),
                c.independent_domains
            )?;
        }
        writeln!(out)?;
    }
    writeln!(out, "Sources:")?;
    for s in &record.sources {
        let n =
            s.n.map(|n| format!("[{n}]"))
                .unwrap_or_else(|| "   ".to_owned());
        writeln!(
            out,
            "  {n} {:.2}  {}{}",
            s.credibility.score,
            s.title,
            s.url
                .as_deref()
                .map(|u| format!(" <{u}>"))
                .unwrap_or_default()
        )?;
        writeln!(out, "        {}", s.credibility.breakdown)?;
    }
    for o in record.outcomes.iter().filter(|o| o.status != "ok") {
        writeln!(
            out,
            "  ! {}: {}{}",
            o.provider,
            o.status,
            o.message
                .as_deref()
                .map(|m| format!(" — {m}"))
                .unwrap_or_default()
        )?;
    }
    for n in &record.notes {
        writeln!(out, "  note: {n}")?;
    }
    writeln!(out, "\nid: {}\nreport: {}", record.id, report.display())?;
    Ok(())
}

fn print_summaries(
    args: &ResearchArgs,
    list: &[crate::store::ResearchSummary],
    empty: &str,
) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        eprintln!("patchwise research: {empty}");
        return Ok(ExitCode::SUCCESS);
    }
    for s in list {
        writeln!(out, "{}  {}  {}", s.id, s.created_at, s.query)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One progress bar per phase on a terminal; plain phase lines otherwise (unless quiet).
struct Bars {
    multi: Option<MultiProgress>,
    bars: Mutex<Vec<(Phase, ProgressBar)>>,
    plain: bool,
    last: Mutex<Option<Phase>>,
}

impl Bars {
    fn new(terminal: bool, plain: bool) -> Bars {
        Bars {
            multi: terminal.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
            bars: Mutex::new(Vec::new()),
            plain: plain && !terminal,
            last: Mutex::new(None),
        }
    }

    /// Phase ranges of the overall percentage, to show each bar from 0 to 100.
    fn range(phase: Phase) -> (u8, u8) {
        match phase {
            Phase::Sources => (0, 40),
            Phase::Dedupe => (40, 45),
            Phase::Credibility => (45, 50),
            Phase::Synthesis => (50, 90),
            Phase::Corroboration => (90, 92),
            Phase::Saved => (92, 100),
        }
    }

    fn update(&self, phase: Phase, percent: u8, message: &str) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(multi) = &self.multi {
            let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
            // Earlier phases are done once a later one reports.
            for (p, bar) in bars.iter() {
                if *p != phase && !bar.is_finished() {
                    bar.finish();
                }
            }
            let bar = match bars.iter().find(|(p, _)| *p == phase) {
                Some((_, bar)) => bar.clone(),
                None => {
                    let bar = multi.add(ProgressBar::new(100));
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{prefix:>13} [{bar:30}] {pos:>3}% {wide_msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                    );
                    bar.set_prefix(phase.name());
                    bar.enable_steady_tick(Duration::from_millis(200));
                    bars.push((phase, bar.clone()));
                    bar
                }
            };
            let (low, high) = Bars::range(phase);
            let within = if high > low {
                (u64::from(percent.clamp(low, high) - low) * 100) / u64::from(high - low)
            } else {
                100
            };
            bar.set_position(if phase == Phase::Saved { 100 } else { within });
            bar.set_message(message.to_owned());
        } else if self.plain
            && phase != Phase::Sources
            && (*last != Some(phase) || message.starts_with("fell back"))
        {
            eprintln!("patchwise research: {}: {message}", phase.name());
        } else if self.plain && phase == Phase::Sources && percent > 2 {
            eprintln!("patchwise research: sources: {message}");
        }
        *last = Some(phase);
    }

    fn finish(&self) {
        let bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        for (_, bar) in bars.iter() {
            if !bar.is_finished() {
                bar.finish();
            }
        }
    }
}
