//! Logging set-up: `tracing` to stderr or a log file, never stdout (stdout carries the protocol).
//!
//! The level comes from `-v` flags unless `RUST_LOG` is set. A panic anywhere is logged through
//! the same subscriber, so a client's log shows it next to the request that caused it.

use std::fs::OpenOptions;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Default, Clone)]
pub struct LogOptions {
    /// Number of `-v` flags: 0 warn, 1 info, 2 debug, 3+ trace.
    pub verbosity: u8,
    pub file: Option<PathBuf>,
}

pub fn init(options: &LogOptions) -> anyhow::Result<()> {
    let level = match options.verbosity {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::try_new(&spec)
            .with_context(|| format!("invalid RUST_LOG filter {spec:?}"))?,
        _ => EnvFilter::new(format!("patchwise={level},tower_lsp_server={level}")),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true);
    match &options.file {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(Mutex::new(file))
                .try_init()
        }
        None => builder.with_writer(std::io::stderr).try_init(),
    }
    .map_err(|err| anyhow::anyhow!("{err}"))?;

    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let payload = panic_message(info.payload());
        tracing::error!(%location, "panic: {payload}");
    }));
    Ok(())
}

/// The text of a panic payload (`&str` or `String`), for logs and error responses.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}
