//! The protocol edge: the only module that knows LSP.
//!
//! Handlers here do three things — convert the request into core types (`from_proto`), call the
//! core, convert the answer back (`to_proto`) — and nothing else; business logic belongs in the
//! core modules. Two guarantees are kept here because the protocol is where they can break:
//! document mutations apply in the order the client sent them (see `server.rs`), and a panic in
//! a handler becomes an error response instead of a dead server (`guard.rs`).

mod commands;
mod develop;
mod from_proto;
mod guard;
mod progress;
mod proposals;
mod research;
mod server;
mod to_proto;
pub mod transport;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use tower_lsp_server::{LspService, Server};

pub use self::server::Backend;

/// How the server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// `shutdown` then `exit`, as the protocol asks.
    Clean,
    /// `exit` without `shutdown`, or the client closed stdin: the protocol asks for exit code 1.
    WithoutShutdown,
}

/// Serves LSP over stdin/stdout until the client sends `exit` or closes stdin.
pub fn run_stdio() -> anyhow::Result<Exit> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("patchwise")
        .build()
        .context("cannot start the async runtime")?;
    let shut_down = Arc::new(AtomicBool::new(false));
    let flag = shut_down.clone();
    runtime.block_on(async move {
        let (service, socket) = server::build(flag);
        let service = guard::Guard::new(service);
        // The server talks to pipes; `transport` sits between them and the real stdio.
        let (server_in, filtered) = tokio::io::duplex(1 << 16);
        let (server_out, produced) = tokio::io::duplex(1 << 16);
        let (errors_tx, errors_rx) = tokio::sync::mpsc::channel(64);
        let input = tokio::spawn(transport::filter_input(
            tokio::io::stdin(),
            filtered,
            errors_tx,
        ));
        let output = tokio::spawn(transport::merge_output(
            produced,
            errors_rx,
            tokio::io::stdout(),
        ));
        Server::new(server_in, server_out, socket)
            .serve(service)
            .await;
        // `serve` returned (exit, or end of input): let the last responses reach the client.
        let _ = output.await;
        input.abort();
    });
    // Dropping the runtime would wait for tokio's blocking stdin reader, which only returns
    // when the client closes stdin (`docs/architecture.md`, "Dependencies worth knowing").
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(if shut_down.load(Ordering::SeqCst) {
        Exit::Clean
    } else {
        Exit::WithoutShutdown
    })
}

/// Builds the service without a transport, for embedding and in-process tests.
pub fn service() -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    server::build(Arc::new(AtomicBool::new(false)))
}
