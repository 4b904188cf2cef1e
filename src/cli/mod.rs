//! Subcommands of the `patchwise` binary that are more than a call into the core: argument
//! types and the code around them, kept out of `main.rs`.

pub mod context;
pub mod develop;
pub mod doctor;
pub mod edit;
pub mod init;
pub mod mcp;
pub mod research;

/// The exit code of a subcommand's `execute`: its own code, or for an error that stopped it (a
/// usage or setup problem) the error on stderr — and with `--json` as `{"status": "error"}` on
/// stdout, so a script always gets an object — and exit code 2.
pub(crate) fn exit_code(
    command: &str,
    json: bool,
    result: anyhow::Result<std::process::ExitCode>,
) -> std::process::ExitCode {
    result.unwrap_or_else(|err| {
        if json {
            let out = serde_json::json!({ "status": "error", "message": format!("{err:#}") });
            println!("{out}");
        }
        eprintln!("patchwise {command}: {err:#}");
        std::process::ExitCode::from(2)
    })
}
