//! The `patchwise` command line: `serve` (the default) speaks LSP over stdio; the other
//! subcommands run the same core from a terminal, for users, scripts and benchmarks.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use patchwise::logging::{self, LogOptions};
use patchwise::lsp::ServerExit;

#[derive(Debug, Parser)]
#[command(name = "patchwise", version, about, long_about = None)]
struct Cli {
    /// More log output on stderr (or the log file): -v info, -vv debug, -vvv trace.
    /// `RUST_LOG` takes precedence when set.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    /// Write logs to this file instead of stderr.
    #[arg(long, global = true, value_name = "PATH")]
    log_file: Option<PathBuf>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Speak the Language Server Protocol over stdin/stdout (the default).
    Serve,
    /// Speak the Agent Client Protocol over stdin/stdout: develop, edit and research in the
    /// agent panels of Zed, JetBrains IDEs, Neovim (CodeCompanion) and Emacs (agent-shell).
    Acp(patchwise::cli::acp::AcpArgs),
    /// Print what a model would be shown of a file for a target, then a one-line summary.
    Context(patchwise::cli::context::ContextArgs),
    /// Carry a request through the workspace: plan, steps with checks, tests, review; prints
    /// the plan and the diff (writes nothing without --apply).
    Develop(patchwise::cli::develop::DevelopArgs),
    /// Show the configuration in effect and whether each role's model server answers.
    Doctor(patchwise::cli::doctor::DoctorArgs),
    /// Replace OLD with NEW in a file through the edit engine, or print why not.
    Edit(patchwise::cli::edit::EditArgs),
    /// Write a commented starter .patchwise/config.toml, with the local model server found.
    Init(patchwise::cli::init::InitArgs),
    /// Speak the Model Context Protocol over stdin/stdout: the edit engine, context and
    /// research as tools for agents (Claude Code, Codex, Cursor, Goose, …).
    Mcp(patchwise::cli::mcp::McpArgs),
    /// The model inside patchwise: serve a GGUF file, pull one from the catalogue, list or
    /// delete downloaded models.
    Model(patchwise::cli::model::ModelArgs),
    /// Research a question across sources, or list, show and search saved research.
    Research(patchwise::cli::research::ResearchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let log = LogOptions {
        verbosity: cli.verbose,
        file: cli.log_file.clone(),
    };
    if let Err(err) = logging::init(&log) {
        eprintln!("patchwise: cannot set up logging: {err:#}");
        return ExitCode::from(2);
    }
    // A write killed midway (kill -9, power loss) is rolled back before anything else runs.
    for line in patchwise::tools::transaction::recover_interrupted() {
        tracing::warn!("{line}");
        eprintln!("patchwise: {line}");
    }
    match cli.command.unwrap_or(Command::Serve) {
        Command::Acp(args) => patchwise::cli::acp::run(&args),
        Command::Context(args) => patchwise::cli::context::run(&args),
        Command::Develop(args) => patchwise::cli::develop::run(&args),
        Command::Doctor(args) => patchwise::cli::doctor::run(&args),
        Command::Edit(args) => patchwise::cli::edit::run(&args),
        Command::Init(args) => patchwise::cli::init::run(&args),
        Command::Mcp(args) => patchwise::cli::mcp::run(&args),
        Command::Model(args) => patchwise::cli::model::run(&args),
        Command::Research(args) => patchwise::cli::research::run(&args),
        Command::Serve => match patchwise::lsp::run_stdio() {
            Ok(ServerExit::Clean) => ExitCode::SUCCESS,
            Ok(ServerExit::WithoutShutdown) => {
                tracing::info!("stopped without a shutdown request");
                ExitCode::FAILURE
            }
            Err(err) => {
                tracing::error!("server failed: {err:#}");
                eprintln!("patchwise: {err:#}");
                ExitCode::FAILURE
            }
        },
    }
}
