//! `patchwise init`: writes a commented starter `.patchwise/config.toml`, with the first local
//! model server that answers (Ollama, LM Studio, llama.cpp, vLLM) as the coder and its first
//! model filled in — or the servers the user names with `--server`, which are written whatever
//! the probe says (a busy local server answers late; the outcome is a comment in the file and
//! a line on stderr, and `patchwise doctor` checks again).
//!
//! It never overwrites an existing file without `--force`, and never writes a key: the file it
//! writes loads without a problem (`patchwise doctor` checks it).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::config::reference::{Detected, starter_toml};
use crate::config::{Config, ProviderConfig, ProviderKind, WORKSPACE_CONFIG};
use crate::model::embedded;
use crate::model::roles::probe;

/// The local servers looked for, in order: name, label, base URL (each one's default port).
pub const LOCAL_SERVERS: [(&str, &str, &str); 4] = [
    ("ollama", "Ollama", "http://127.0.0.1:11434/v1"),
    ("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1"),
    ("llamacpp", "llama.cpp", "http://127.0.0.1:8080/v1"),
    ("vllm", "vLLM", "http://127.0.0.1:8000/v1"),
];

/// How long the probe waits for a server's model list: a local server busy generating answers
/// only between two tokens, or after its answer (llama.cpp took 12 s while generating).
pub const PROBE_PATIENCE: Duration = Duration::from_secs(30);

/// When the probe says that it is waiting (a server that is up and idle answers well before).
const SAY_WAITING_AFTER: Duration = Duration::from_secs(2);

/// Arguments of `patchwise init`.
#[derive(Debug, Clone, clap::Args)]
pub struct InitArgs {
    /// The workspace to write `.patchwise/config.toml` in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Replace an existing `.patchwise/config.toml`.
    #[arg(long)]
    pub force: bool,

    /// Use the model server at this OpenAI-compatible base URL instead of looking on the usual
    /// local ports (repeatable; the first that lists a model wins). It is written into the
    /// file even when it does not answer now.
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
        let named = !args.server.is_empty();
        let candidates: Vec<(String, String, String)> = if !named {
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
        match detect(candidates, named) {
            Ok(found) => found,
            Err(err) => {
                eprintln!("patchwise init: {err}");
                return ExitCode::from(2);
            }
        }
    };
    // No server: the model inside patchwise, when one is downloaded.
    let detected = detected.or_else(|| {
        if !embedded::AVAILABLE {
            return None;
        }
        let (config, _) = Config::load(Some(&workspace));
        let present = embedded::catalog::first_present(&config.data_dir())?;
        let model = embedded::model_name(&present);
        Some(Detected {
            name: "embedded".into(),
            label: "The model inside patchwise".into(),
            base_url: present.path.display().to_string(),
            model: Some(model.clone()),
            unanswered: None,
            embedded: Some(match present.entry {
                Some(_) => model,
                None => present.path.display().to_string(),
            }),
        })
    });
    if let Some(found) = &detected
        && let Some(why) = &found.unanswered
    {
        eprintln!(
            "patchwise init: {} did not answer ({why}); it is written into the configuration as \
             given — run `patchwise doctor` once the server is up",
            found.base_url
        );
    }
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
            "wrote {}: coder = {} ({} at {}{})\n",
            path.display(),
            match &found.model {
                Some(model) => format!("{}/{model}", found.name),
                None => found.name.clone(),
            },
            found.label,
            found.base_url,
            if found.unanswered.is_some() {
                ", not answering yet; next: `patchwise doctor`"
            } else {
                ""
            }
        ),
        None if embedded::AVAILABLE => format!(
            "wrote {}: no local model server answered and no model is downloaded; run `patchwise model pull` to use the model inside patchwise, or edit [providers] and [roles] in it\n",
            path.display()
        ),
        None => format!(
            "wrote {}: no local model server answered; edit [providers] and [roles] in it\n",
            path.display()
        ),
    };
    let _ = std::io::stdout().lock().write_all(summary.as_bytes());
    ExitCode::SUCCESS
}

/// The first candidate that answers and lists a model, probed all at once. When the
/// candidates are servers the user `named`, the first of them is the answer even when none
/// answers (with why not). Says on stderr when the servers take a while.
fn detect(
    candidates: Vec<(String, String, String)>,
    named: bool,
) -> anyhow::Result<Option<Detected>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(async {
        let urls: Vec<String> = candidates.iter().map(|(_, _, u)| u.clone()).collect();
        let probes = urls.iter().map(|url| async move {
            let provider = ProviderConfig::new(ProviderKind::OpenAi, Some(url));
            probe(&provider, PROBE_PATIENCE).await
        });
        let all = futures::future::join_all(probes);
        tokio::pin!(all);
        let results = tokio::select! {
            results = &mut all => results,
            () = tokio::time::sleep(SAY_WAITING_AFTER) => {
                eprintln!(
                    "patchwise init: waiting for {} to answer (a local server busy with a \
                     request answers late; up to {} s)",
                    urls.join(", "),
                    PROBE_PATIENCE.as_secs()
                );
                all.await
            }
        };
        let first_named = candidates
            .first()
            .zip(results.first())
            .filter(|_| named)
            .map(|((name, label, base_url), result)| Detected {
                name: name.clone(),
                label: label.clone(),
                base_url: base_url.clone(),
                model: None,
                embedded: None,
                unanswered: Some(
                    result
                        .error
                        .clone()
                        .unwrap_or_else(|| "it listed no model".to_owned()),
                ),
            });
        candidates
            .into_iter()
            .zip(results)
            .find_map(|((name, label, base_url), result)| {
                let model = result.models.into_iter().next()?;
                (result.error.is_none()).then_some(Detected {
                    name,
                    label,
                    base_url,
                    model: Some(model),
                    unanswered: None,
                    embedded: None,
                })
            })
            .or(first_named)
    }))
}
