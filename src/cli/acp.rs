//! `patchwise acp [--workspace DIR]...`: the Agent Client Protocol agent on stdio (see `acp/`).
//! A session's folder (`cwd` of `session/new`) must lie inside one of the workspace folders,
//! which default to the current directory.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `patchwise acp`.
#[derive(Debug, Clone, clap::Args)]
pub struct AcpArgs {
    /// A folder sessions may work in, with everything below it (repeat for several; default:
    /// the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Vec<PathBuf>,
}

/// Runs the agent until the client disconnects.
pub fn run(args: &AcpArgs) -> ExitCode {
    let given = if args.workspace.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.workspace.clone()
    };
    let mut roots = Vec::new();
    for dir in given {
        match std::fs::canonicalize(&dir) {
            Ok(root) if root.is_dir() => roots.push(root),
            Ok(_) => {
                eprintln!("patchwise acp: {} is not a directory", dir.display());
                return ExitCode::from(2);
            }
            Err(err) => {
                eprintln!(
                    "patchwise acp: cannot open the workspace {}: {err}",
                    dir.display()
                );
                return ExitCode::from(2);
            }
        }
    }
    match crate::acp::run_stdio(roots) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("ACP agent failed: {err:#}");
            eprintln!("patchwise acp: {err:#}");
            ExitCode::FAILURE
        }
    }
}
