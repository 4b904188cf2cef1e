//! The protocol edge: the only module that knows LSP.
//!
//! Handlers here do three things — convert the request into core types (`from_proto`), call the
//! core (`workflow::session` for runs, commands and code-action choices), convert the answer
//! back (`to_proto`) — and nothing else; business logic belongs in the core modules. Three
//! guarantees are kept here because the protocol is where they can break: document mutations
//! apply in the order the client sent them (see `server.rs`), a panic in a handler becomes an
//! error response instead of a dead server (`guard.rs`), and the notifications a request causes
//! reach the client before its response (`transport.rs`).
//!
//! # Protocol (stable; editor clients build on it)
//!
//! A client that asks the user for an instruction itself declares it in `initialize`:
//! `capabilities.experimental.patchwise = { "instructionInput": true }`. Only then is the
//! "Edit selection…" code action offered (it runs the client-side command
//! `patchwise.editSelection {uri, range}`), and "Develop…" (`patchwise.develop {uri}` without a
//! request: the client asks for it, then sends `patchwise.develop {request, uri}`); every client
//! gets "Apply instruction" for an instruction comment (`// patchwise: <instruction>`),
//! "Develop: <request>" for a develop comment (`// patchwise develop: <request>`, running
//! `patchwise.develop {request, uri}`) and "Fix with model" per diagnostic.
//!
//! Commands (`workspace/executeCommand`, one argument object):
//! - `patchwise.edit {uri, range, instruction, removeInstructionComment?, wait?}`,
//!   `patchwise.develop {request, uri?, removeInstructionComment?, wait?}` and
//!   `patchwise.research {query, sources?, depth?, wait?}` start a run and answer at once
//!   `{runId}` (`lsp/runs.rs`). Progress follows as `$/progress` with the run id as token (a
//!   client without `window.workDoneProgress` gets a `window/showMessage` "working on: …"
//!   before the answer instead); when the run ends the server publishes diagnostics and
//!   refreshes code lenses (a proposal), says the outcome with `window/showMessage`, and sends
//!   `patchwise/runFinished` (below). With `wait: true` the command answers when the run ends
//!   instead — the `proposal` or `research` object below, or an error whose message is the
//!   failure — and sends no message (the notification still comes, first). A develop run shows
//!   its plan with `window/showDocument` and asks to approve it with
//!   `window/showMessageRequest` (Approve / Cancel; not asked with `[develop] approve =
//!   "auto"`; a client that cannot answer it gets "not approved").
//! - `patchwise.proposal.accept {id, hunk?}` → `{applied: true}` after one `workspace/applyEdit`
//!   (the whole proposal, or hunk `hunk`; the other hunks re-base on the change);
//!   `patchwise.proposal.reject {id, hunk?}` → `null`.
//! - `patchwise.proposal.diff {id, show?}` → the current diff as a string; unless `show: false`
//!   it is also shown: `window/showDocument` of a `.diff` file, else `window/showMessage`.
//! - `patchwise.proposal.list {}` → `[{id, instruction, model, attempts, matchedBy, createdAt,
//!   stale: null | reason, files: [{uri, path, created, hunks: [{hunk, range}]}]}]`.
//! - `patchwise.cancel {id?}` → `{cancelled: n}` (`id`: a run id; none cancels every run).
//! - `patchwise.research.list {limit?, search?}`, `patchwise.research.open {id}`.
//!
//! Requests: `patchwise/proposalContent {id, uri}` → the proposed full text of that file
//! (for a native diff view); `patchwise/viewFileText {uri}` → the server's text of a document.
//!
//! Notification `patchwise/runFinished` (server → client), once per run (`lsp::runs::
//! RunFinishedParams`): `{runId, kind: "edit" | "develop" | "research", ok, cancelled, error?,
//! proposal?, research?}` — an edit's `proposal` is `{runId, id, uri, diff, model, attempts,
//! matchedBy, applied}`, a develop run's `{runId, id, diff, files: [{path, created}], summary,
//! report}`, research's `research` `{runId, id, query, status, synthesis, synthesisKind,
//! sources, notes, report}`. It can arrive before the answer to the command that started the
//! run.
//!
//! Hunk numbers (`hunk`) are 1-based and stable while the proposal is pending; code lenses and
//! code actions carry them. Hover follows the client's `hover.contentFormat`; diagnostics and
//! messages name code lenses only to clients that show them.

mod commands;
mod develop;
mod from_proto;
mod guard;
mod progress;
mod proposals;
mod research;
mod review;
mod runs;
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
pub enum ServerExit {
    /// `shutdown` then `exit`, as the protocol asks.
    Clean,
    /// `exit` without `shutdown`, or the client closed stdin: the protocol asks for exit code 1.
    WithoutShutdown,
}

/// Serves LSP over stdin/stdout until the client sends `exit` or closes stdin.
pub fn run_stdio() -> anyhow::Result<ServerExit> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("patchwise")
        .build()
        .context("cannot start the async runtime")?;
    let shut_down = Arc::new(AtomicBool::new(false));
    let flag = shut_down.clone();
    runtime.block_on(async move {
        let wire = Arc::new(transport::TransportState::default());
        let (service, socket) = server::build(flag, Some(wire.clone()));
        let keeping = service.inner().keeping.clone();
        let service = guard::Guard::new(service);
        // The server talks to pipes; `transport` sits between them and the real stdio.
        let (server_in, filtered) = tokio::io::duplex(1 << 16);
        let (server_out, produced) = tokio::io::duplex(1 << 16);
        let (errors_tx, errors_rx) = tokio::sync::mpsc::channel(64);
        let input = tokio::spawn(transport::filter_input(
            tokio::io::stdin(),
            filtered,
            errors_tx,
            wire.clone(),
        ));
        let output = tokio::spawn(transport::merge_output(
            produced,
            errors_rx,
            tokio::io::stdout(),
            wire,
        ));
        Server::new(server_in, server_out, socket)
            .serve(service)
            .await;
        // `serve` returned (exit, or end of input): let the last responses reach the client,
        // and the last writes of the proposal store finish (shutdown waited for those it saw).
        let _ = output.await;
        let _ = tokio::time::timeout(Duration::from_secs(5), keeping.flush()).await;
        input.abort();
    });
    // Dropping the runtime would wait for tokio's blocking stdin reader, which only returns
    // when the client closes stdin (`docs/architecture.md`, "Dependencies worth knowing").
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(if shut_down.load(Ordering::SeqCst) {
        ServerExit::Clean
    } else {
        ServerExit::WithoutShutdown
    })
}

/// Builds the service without a transport, for embedding and in-process tests.
pub fn service() -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    server::build(Arc::new(AtomicBool::new(false)), None)
}
