//! `patchwise mcp [--workspace DIR]...`: the Model Context Protocol server on stdio (see
//! `mcp/`). Workspace folders default to the current directory; every path a tool names must
//! stay inside one of them.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `patchwise mcp`.
#[derive(Debug, Clone, clap::Args)]
pub struct McpArgs {
    /// A workspace folder the tools may read and edit (repeat for several; default: the
    /// current directory). Its `.patchwise/config.toml` is read (the first one's).
    #[arg(long, value_name = "DIR")]
    pub workspace: Vec<PathBuf>,
}

/// Runs the server until the client disconnects.
pub fn run(args: &McpArgs) -> ExitCode {
    let mut roots = Vec::new();
    let given = if args.workspace.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.workspace.clone()
    };
    for dir in given {
        match std::fs::canonicalize(&dir) {
            Ok(root) if root.is_dir() => roots.push(root),
            Ok(_) => {
                eprintln!("patchwise mcp: {} is not a directory", dir.display());
                return ExitCode::from(2);
            }
            Err(err) => {
                eprintln!(
                    "patchwise mcp: cannot open the workspace {}: {err}",
                    dir.display()
                );
                return ExitCode::from(2);
            }
        }
    }
    match crate::mcp::run_stdio(roots) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("MCP server failed: {err:#}");
            eprintln!("patchwise mcp: {err:#}");
            ExitCode::FAILURE
        }
    }
}
