//! The language server backend: lifecycle, document sync and custom requests.
//!
//! Ordering (ARCHITECTURE.md invariant 4): tower-lsp-server polls handlers concurrently, so a
//! later `didChange` could overtake an earlier one if a handler awaited before mutating
//! (tower-lsp issue 284). Every mutation of the document map therefore happens synchronously,
//! under a `std::sync::Mutex`, before the handler's first `.await` (as typos-lsp does): the serve
//! loop starts handler futures in the order messages arrive, so mutations land in that order,
//! and requests read state that includes every change sent before them. The lock is never held
//! across an `.await`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Deserialize;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService};

use super::{from_proto, to_proto};
use crate::document::{Document, PositionEncoding};
use crate::workspace;

/// LSP 3.17 `RequestFailed`: the request was valid but could not be carried out.
const REQUEST_FAILED: i64 = -32803;

/// Environment variable that registers debugging-only methods (`patchwise/debug/panic`), used
/// by the end-to-end tests to prove a panicking handler leaves the server running.
pub const DEBUG_METHODS_ENV: &str = "PATCHWISE_DEBUG_METHODS";

#[derive(Debug, Default)]
struct State {
    encoding: PositionEncoding,
    documents: HashMap<Uri, Document>,
    workspace_roots: Vec<Uri>,
}

pub struct Backend {
    #[allow(dead_code)] // used by the features built on the foundation (progress, applyEdit)
    client: Client,
    state: Mutex<State>,
    shut_down: Arc<AtomicBool>,
}

pub fn build(shut_down: Arc<AtomicBool>) -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    let mut builder = LspService::build(|client| Backend {
        client,
        state: Mutex::new(State::default()),
        shut_down,
    })
    .custom_method("patchwise/viewFileText", Backend::view_file_text);
    if std::env::var_os(DEBUG_METHODS_ENV).is_some_and(|v| v == "1") {
        builder = builder.custom_method("patchwise/debug/panic", Backend::debug_panic);
    }
    builder.finish()
}

#[derive(Debug, Deserialize)]
pub struct ViewFileTextParams {
    pub uri: Uri,
}

impl Backend {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock must not turn every later request into a
        // panic too: the map itself is always consistent between statements.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `patchwise/viewFileText`: the server's current text of a document — the open buffer as
    /// synced, or the file on disk when it is not open.
    async fn view_file_text(&self, params: ViewFileTextParams) -> Result<String> {
        if let Some(doc) = self.state().documents.get(&params.uri) {
            return Ok(doc.text());
        }
        let Some(path) = params.uri.to_file_path() else {
            return Err(request_failed(format!(
                "{} is not open and is not a file: URI, so there is no text to show",
                params.uri.as_str()
            )));
        };
        let path = path.into_owned();
        tokio::task::spawn_blocking(move || workspace::read_text(&path))
            .await
            .map_err(|err| request_failed(format!("reading the file failed: {err}")))?
            .map_err(|err| request_failed(format!("document is not open and {err}")))
    }

    async fn debug_panic(&self, _params: serde_json::Value) -> Result<()> {
        panic!("deliberate panic from patchwise/debug/panic");
    }
}

fn request_failed(message: String) -> Error {
    Error {
        code: ErrorCode::ServerError(REQUEST_FAILED),
        message: message.into(),
        data: None,
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let offered = params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_deref());
        let encoding = from_proto::negotiate_encoding(offered);
        // Older clients send only `rootUri`; it is deprecated, not gone.
        #[allow(deprecated)]
        let root_uri = params.root_uri.clone();
        let roots = match (&params.workspace_folders, root_uri) {
            (Some(folders), _) if !folders.is_empty() => {
                folders.iter().map(|f| f.uri.clone()).collect()
            }
            (_, Some(root)) => vec![root],
            _ => Vec::new(),
        };
        tracing::info!(%encoding, roots = roots.len(), "initialize");
        {
            let mut state = self.state();
            state.encoding = encoding;
            state.workspace_roots = roots;
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(to_proto::position_encoding(encoding)),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        ..TextDocumentSyncOptions::default()
                    },
                )),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "patchwise".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
            offset_encoding: None,
        })
    }

    async fn shutdown(&self) -> Result<()> {
        self.shut_down.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let item = params.text_document;
        tracing::debug!(
            uri = item.uri.as_str(),
            version = item.version,
            bytes = item.text.len(),
            "open"
        );
        let doc = Document::new(&item.text, item.version, item.language_id);
        if self.state().documents.insert(item.uri, doc).is_some() {
            tracing::warn!("document opened twice; the new text replaces the old");
        }
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let version = params.text_document.version;
        let changes: Vec<_> = params
            .content_changes
            .into_iter()
            .map(from_proto::content_change)
            .collect();
        let mut state = self.state();
        let encoding = state.encoding;
        let Some(doc) = state.documents.get_mut(&uri) else {
            tracing::warn!(
                uri = uri.as_str(),
                "change for a document that is not open; ignored"
            );
            return;
        };
        match doc.apply_changes(version, &changes, encoding) {
            Ok(applied) => {
                for problem in &applied.problems {
                    tracing::warn!(uri = uri.as_str(), version, "{problem}");
                }
            }
            Err(stale) => tracing::warn!(uri = uri.as_str(), "{stale}"),
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        if self.state().documents.remove(&uri).is_none() {
            tracing::warn!(uri = uri.as_str(), "close for a document that is not open");
        }
    }
}
