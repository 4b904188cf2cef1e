//! `patchwise model serve | pull | list | rm`: the model inside patchwise.
//!
//! `serve` is the model host every patchwise process shares (started for them on first use,
//! `model::embedded::host`; a user may also run it by hand to point another OpenAI client at
//! it). `pull` downloads a catalogue model into the data dir, `list` shows the catalogue and
//! what is downloaded, `rm` deletes a downloaded model. Exit codes: 0 done, 1 refused or failed
//! (with the reason on stderr), 2 usage or I/O errors.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Config;
use crate::model::embedded::{self, catalog, gguf, pull};

/// Arguments of `patchwise model`.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub command: ModelCommand,

    /// The workspace whose configuration names the data dir (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum ModelCommand {
    /// Serve a GGUF model over an OpenAI-compatible API on 127.0.0.1 (the shared model host).
    Serve(ServeArgs),
    /// Start the shared model host for a model unless it runs, and print its address (what
    /// every patchwise process does on its first request to an embedded provider).
    Host {
        /// A catalogue name or a GGUF path (default: the first catalogue model downloaded).
        model: Option<String>,
        /// CPU threads.
        #[arg(long)]
        threads: Option<u32>,
        /// The context window in tokens.
        #[arg(long)]
        context: Option<u32>,
        /// Seconds the host stays loaded with nothing to do (default: 600).
        #[arg(long, value_name = "SECS")]
        idle_secs: Option<u64>,
    },
    /// Download a model of the catalogue into the data dir (default: qwen2.5-coder-1.5b, and
    /// all-minilm-l6-v2 for research's ranking by meaning).
    Pull {
        /// A catalogue name (`patchwise model list`).
        name: Option<String>,
    },
    /// The catalogue, what is downloaded, and other GGUF files in the data dir.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a downloaded model.
    Rm {
        /// A catalogue name or a file name from `patchwise model list`.
        name: String,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// A catalogue name or the path to a GGUF file.
    pub model: String,
    /// The port on 127.0.0.1 (default: any free port, printed on stderr).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// CPU threads (default: llama.cpp's choice).
    #[arg(long)]
    pub threads: Option<u32>,
    /// The context window in tokens (default: the model's, at most 8192).
    #[arg(long)]
    pub context: Option<u32>,
    /// Layers offloaded to the GPU (GPU builds).
    #[arg(long, default_value_t = 0)]
    pub gpu_layers: u32,
    /// Exit after this many seconds without a request (default: never).
    #[arg(long, value_name = "SECS")]
    pub idle_secs: Option<u64>,
    /// Write the address into this file once the model is loaded (how patchwise processes
    /// find a shared host).
    #[arg(long, value_name = "PATH")]
    pub announce: Option<PathBuf>,
}

pub fn run(args: &ModelArgs) -> ExitCode {
    let workspace = args
        .workspace
        .clone()
        .or_else(|| std::env::current_dir().ok());
    let (config, _) = Config::load(workspace.as_deref());
    let data_dir = config.data_dir();
    match &args.command {
        ModelCommand::Serve(serve) => run_serve(serve, &data_dir),
        ModelCommand::Host {
            model,
            threads,
            context,
            idle_secs,
        } => {
            let settings = embedded::EmbeddedSettings {
                model: model.clone(),
                threads: *threads,
                context: *context,
                ..embedded::EmbeddedSettings::default()
            };
            let probed = embedded::probe(&settings, &data_dir);
            if let Some(error) = probed.error {
                eprintln!("patchwise model host: {error}");
                return ExitCode::FAILURE;
            }
            let resolved = embedded::model_file(&settings, &data_dir);
            let mut spec = embedded::host_spec(&settings, &resolved.path);
            if let Some(secs) = idle_secs {
                spec.idle = std::time::Duration::from_secs((*secs).max(1));
            }
            match embedded::host::ensure(&spec, &data_dir, &embedded::host_program()) {
                Ok(host) => {
                    println!(
                        "{}",
                        serde_json::json!({"url": host.url, "pid": host.pid, "model": host.model, "context": host.context})
                    );
                    ExitCode::SUCCESS
                }
                Err(err) => {
                    eprintln!("patchwise model host: {err}");
                    ExitCode::FAILURE
                }
            }
        }
        ModelCommand::Pull { name } => {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(err) => {
                    eprintln!("patchwise model pull: cannot start the async runtime: {err}");
                    return ExitCode::from(2);
                }
            };
            let progress = std::io::stderr().is_terminal();
            // With no name: the chat model, and the small encoder research ranks by meaning
            // with, so one command sets up every feature.
            let names = match name.as_deref() {
                Some(name) => vec![name],
                None => vec![catalog::DEFAULT_MODEL, catalog::DEFAULT_ENCODER],
            };
            let mut code = ExitCode::SUCCESS;
            for name in names {
                match runtime.block_on(pull::pull(Some(name), &data_dir, progress)) {
                    Ok(pulled) => {
                        match &pulled.sha256 {
                            Some(sha) => eprintln!(
                                "downloaded {} ({} MB, sha256 {sha})",
                                pulled.path.display(),
                                pulled.bytes / 1_000_000
                            ),
                            None => eprintln!("already downloaded: {}", pulled.path.display()),
                        }
                        println!("{}", pulled.path.display());
                    }
                    Err(err) => {
                        eprintln!("patchwise model pull: {err}");
                        code = ExitCode::FAILURE;
                    }
                }
            }
            code
        }
        ModelCommand::List { json } => {
            let rows = pull::list(&data_dir);
            if *json {
                match serde_json::to_string_pretty(&rows) {
                    Ok(text) => println!("{text}"),
                    Err(err) => {
                        eprintln!("patchwise model list: {err}");
                        return ExitCode::from(2);
                    }
                }
            } else {
                println!("models in {}", catalog::models_dir(&data_dir).display());
                for row in rows {
                    let size = row
                        .bytes
                        .map(|b| format!("{:>6} MB", b / 1_000_000))
                        .unwrap_or_else(|| "       -".into());
                    println!(
                        "{:<26} {size}  {:<10} {}",
                        row.name, row.use_for, row.detail
                    );
                }
            }
            ExitCode::SUCCESS
        }
        ModelCommand::Rm { name } => match pull::remove(name, &data_dir) {
            Ok(path) => {
                eprintln!("deleted {}", path.display());
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("patchwise model rm: {err}");
                ExitCode::FAILURE
            }
        },
    }
}

#[cfg(feature = "embedded")]
fn run_serve(args: &ServeArgs, data_dir: &std::path::Path) -> ExitCode {
    use crate::runtime::RuntimeSpec;
    use crate::runtime::server::{ServeOptions, serve};
    let resolved = catalog::resolve(&args.model, data_dir);
    if !resolved.path.is_file() {
        eprintln!("patchwise model serve: {}", resolved.missing_hint());
        return ExitCode::FAILURE;
    }
    if let Err(err) = gguf::read_info(&resolved.path) {
        eprintln!("patchwise model serve: {err}");
        return ExitCode::FAILURE;
    }
    let spec = RuntimeSpec {
        model: resolved.path,
        threads: args.threads,
        context: args.context,
        gpu_layers: args.gpu_layers,
    };
    let options = ServeOptions {
        port: args.port,
        announce: args.announce.clone(),
        idle: args.idle_secs.map(std::time::Duration::from_secs),
    };
    match serve(spec, options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            eprintln!("patchwise model serve: {err:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(not(feature = "embedded"))]
fn run_serve(_args: &ServeArgs, _data_dir: &std::path::Path) -> ExitCode {
    eprintln!(
        "patchwise model serve: this patchwise was built without the embedded runtime (--no-default-features); rebuild with the default features"
    );
    ExitCode::FAILURE
}
