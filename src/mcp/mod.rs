//! `patchwise mcp`: the edit engine, the context tools and deep research as a Model Context
//! Protocol server over stdio, for agents that bring their own model (Claude Code, Codex,
//! Cursor, Goose, CodeCompanion, …). It is the sibling of `lsp/`: a thin adapter over the same
//! core (`tools::Session`, `edit`, `syntax`, `research`), and the only module that knows rmcp.
//!
//! Layout: `catalog` (the tools as plain data), `agent` (what a call does, protocol-free),
//! `server` (the rmcp handler), `transport` (line framing that answers malformed input).
//! stdout carries the protocol and nothing else; logs go to stderr or `--log-file`.

pub mod agent;
pub mod catalog;
mod server;
pub mod transport;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use rmcp::ServiceExt;

use crate::config::{Config, ConfigPaths, Severity};

pub use agent::{Agent, CallReply};

/// Serves one MCP session on stdin/stdout until the client closes stdin.
pub fn run_stdio(roots: Vec<PathBuf>) -> anyhow::Result<()> {
    let (config, problems) =
        Config::load_from(&ConfigPaths::standard(roots.first().map(PathBuf::as_path)));
    for p in &problems {
        match p.severity {
            Severity::Error => tracing::error!("configuration: {p}"),
            _ => tracing::warn!("configuration: {p}"),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    tracing::info!(roots = ?roots, "serving MCP on stdio");
    let server = server::Server::new(Agent::new(roots, config));
    let result = runtime.block_on(async move {
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        let transport = transport::LineTransport::new(stdin, stdout);
        let running = server
            .serve(transport)
            .await
            .map_err(|e| anyhow::anyhow!("the MCP handshake failed: {e}"))?;
        let reason = running.waiting().await.context("the MCP service stopped")?;
        tracing::info!("MCP session ended: {reason:?}");
        anyhow::Ok(())
    });
    // A blocking stdin read may still be pending; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}
