//! Subcommands of the `patchwise` binary that are more than a call into the core: argument
//! types and the code around them, kept out of `main.rs`.

pub mod acp;
pub mod context;
pub mod develop;
pub mod doctor;
pub mod edit;
pub mod init;
pub mod mcp;
pub mod model;
pub mod research;

use std::process::ExitCode;

/// The exit code of a subcommand whose work returned `result`: its own code, or for an error
/// the message on stderr (`patchwise COMMAND: …`), with `--json` also as
/// `{"status": "error", "message": …}` on stdout, and exit code 2.
pub(crate) fn exit_code(command: &str, json: bool, result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(err) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "status": "error", "message": format!("{err:#}") })
                );
            }
            eprintln!("patchwise {command}: {err:#}");
            ExitCode::from(2)
        }
    }
}
