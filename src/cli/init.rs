//! `patchwise init`: writes a commented starter `.patchwise/config.toml`, with the first local
//! model server that answers (Ollama, LM Studio, llama.cpp) as the coder and its first listed
//! model filled in.
//!
//! It never overwrites an existing file without `--force`, and never writes a key: the file it
//! writes loads without a problem (`patchwise doctor` checks it).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::config::reference::{Detected, starter_toml};
use crate::config::{ProviderConfig, ProviderKind, WORKSPACE_CONFIG};
use crate::model::roles::probe;

/// The local servers looked for, in order: name, label, base URL.
pub const LOCAL_SERVERS: [(&str, &str, &str); 3] = [
    ("ollama", "Ollama", "http://127.0.0.1:11434/v1"),
    ("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1"),
    ("llamacpp", "llama.cpp", "http://127.0.0.1:8080/v1"),
];

/// Arguments of `patchwise init`.
#[derive(Debug, Clone, clap::Args)]
pub struct InitArgs {
    /// The workspace to write `.patchwise/config.toml` in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Replace an existing `.patchwise/config.toml`.
    #[arg(long)]
    pub force: bool,

    /// Look for a model server at this OpenAI-compatible base URL instead of the usual local
    /// ports (repeatable; the first that lists a model wins).
    #[arg(long, value_name = "URL")]
    pub server: Vec<String>,

    /// Do not look for model servers.
    #[arg(long)]
    pub offline: bool,
}

/// Runs the command: exit 0 written, 1 refused (the file exists), 2 I/O error.
pub fn run(args: &InitArgs) -> ExitCode {
    let workspace = match args
        .workspace
        .clone()
        .or_else(|| std::env::current_dir().ok())
    {
        Some(dir) => dir,
        None => {
            eprintln!("patchwise init: cannot tell the current directory; pass --workspace DIR");
            return ExitCode::from(2);
        }
    };
    let path = workspace.join(WORKSPACE_CONFIG);
    if path.exists() && !args.force {
        eprintln!(
            "patchwise init: {} exists; it is left as it is (--force replaces it, `patchwise doctor` checks it)",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    let detected = if args.offline {
        None
    } else {
        let candidates: Vec<(String, String, String)> = if args.server.is_empty() {
            LOCAL_SERVERS
                .iter()
                .map(|(n, l, u)| ((*n).to_owned(), (*l).to_owned(), (*u).to_owned()))
                .collect()
        } else {
            args.server
                .iter()
                .enumerate()
                .map(|(i, url)| {
                    let name = if i == 0 {
                        "local".to_owned()
                    } else {
                        format!("local{}", i + 1)
                    };
                    (
                        name,
                        "A model server".to_owned(),
                        url.trim_end_matches('/').to_owned(),
                    )
                })
                .collect()
        };
        match detect(candidates) {
            Ok(found) => found,
            Err(err) => {
                eprintln!("patchwise init: {err}");
                return ExitCode::from(2);
            }
        }
    };
    let text = starter_toml(detected.as_ref());
    let written = path
        .parent()
        .map(std::fs::create_dir_all)
        .unwrap_or(Ok(()))
        .and_then(|()| std::fs::write(&path, &text));
    if let Err(err) = written {
        eprintln!("patchwise init: cannot write {}: {err}", path.display());
        return ExitCode::from(2);
    }
    let summary = match &detected {
        Some(found) => format!(
            "wrote {}: coder = {}/{} ({} at {})\n",
            path.display(),
            found.name,
            found.model,
            found.label,
            found.base_url
        ),
        None => format!(
            "wrote {}: no local model server answered; edit [providers] and [roles] in it\n",
            path.display()
        ),
    };
    let _ = std::io::stdout().lock().write_all(summary.as_bytes());
    ExitCode::SUCCESS
}

/// The first candidate that answers and lists a model, probed all at once.
fn detect(candidates: Vec<(String, String, String)>) -> anyhow::Result<Option<Detected>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(async {
        let probes = candidates.iter().map(|(_, _, url)| async move {
            let provider = ProviderConfig::new(ProviderKind::OpenAi, Some(url));
            probe(&provider, Duration::from_secs(3)).await
        });
        let results = futures::future::join_all(probes).await;
        candidates
            .into_iter()
            .zip(results)
            .find_map(|((name, label, base_url), result)| {
                let model = result.models.into_iter().next()?;
                (result.error.is_none()).then_some(Detected {
                    name,
                    label,
                    base_url,
                    model,
                })
            })
    }))
}
