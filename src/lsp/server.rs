//! The language server backend: lifecycle, document sync and custom requests.
//!
//! Ordering (`docs/architecture.md` invariant 4): tower-lsp-server polls handlers concurrently, so a
//! later `didChange` could overtake an earlier one if a handler awaited before mutating
//! (tower-lsp issue 284). Every mutation of the document map therefore happens synchronously,
//! under a `std::sync::Mutex`, before the handler's first `.await` (as typos-lsp does): the serve
//! loop starts handler futures in the order messages arrive, so mutations land in that order,
//! and requests read state that includes every change sent before them. The lock is never held
//! across an `.await`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Deserialize;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService};

use super::transport::{FLUSH_METHOD, TransportState};
use super::{from_proto, proposals, to_proto};
use crate::complete::{Completer, CompletionRequest, EditedChunk, OtherDocument};
use crate::config::{Config, ConfigProblem};
use crate::document::{Document, PositionEncoding};
use crate::model::ModelRouter;
use crate::store::Library;
use crate::workflow::session::review::{self, Proposals};
use crate::workflow::session::{ClientAbilities, Command, Runs};
use crate::workspace;

/// The marker notification of [`TransportState`]'s flush (sent to ourselves through the output writer).
enum Flushed {}

impl tower_lsp_server::ls_types::notification::Notification for Flushed {
    type Params = serde_json::Value;
    const METHOD: &'static str = FLUSH_METHOD;
}

/// LSP 3.17 `RequestFailed`: the request was valid but could not be carried out.
const REQUEST_FAILED: i64 = -32803;

/// Environment variable that registers debugging-only methods (`patchwise/debug/panic`), used
/// by the end-to-end tests to prove a panicking handler leaves the server running.
pub const DEBUG_METHODS_ENV: &str = "PATCHWISE_DEBUG_METHODS";

pub(super) struct State {
    pub(super) encoding: PositionEncoding,
    pub(super) documents: HashMap<Uri, Document>,
    pub(super) workspace_roots: Vec<Uri>,
    pub(super) client: ClientFeatures,
    pub(super) config: Arc<Config>,
    pub(super) router: Arc<ModelRouter>,
    /// The client's own settings (initializationOptions, then didChangeConfiguration), merged
    /// over the files again whenever the configuration is reloaded.
    client_settings: serde_json::Value,
    /// Configuration problems found during `initialize`, shown once the client is ready.
    pending_problems: Vec<ConfigProblem>,
    /// Problems already shown: a reload shows only new ones, so each is shown once.
    shown_problems: std::collections::HashSet<String>,
    /// Pending proposals, following document changes.
    pub(super) proposals: Proposals,
    /// Where proposals are kept across restarts (`None`: the database could not be opened).
    pub(super) store: Option<Arc<Library>>,
}

impl State {
    /// The open document of a file path, if any.
    pub(super) fn document_for_path(&self, path: &Path) -> Option<(&Uri, &Document)> {
        self.documents
            .iter()
            .find(|(uri, _)| from_proto::file_path(uri).is_some_and(|p| p == path))
    }
}

impl Default for State {
    fn default() -> Self {
        let config = Arc::new(Config::default());
        Self {
            encoding: PositionEncoding::default(),
            documents: HashMap::new(),
            workspace_roots: Vec::new(),
            client: ClientFeatures::default(),
            router: Arc::new(ModelRouter::new((*config).clone())),
            config,
            client_settings: serde_json::Value::Null,
            pending_problems: Vec::new(),
            shown_problems: Default::default(),
            proposals: Proposals::default(),
            store: None,
        }
    }
}

/// What the client said it supports, reduced to the switches the server needs.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClientFeatures {
    pub work_done_progress: bool,
    pub show_document: bool,
    pub document_changes: bool,
    /// `workspaceEdit.resourceOperations` holds `create`. Resource operations exist only in
    /// `documentChanges`, so such a client takes them even when it does not declare
    /// `documentChanges` (Neovim 0.11 declares only the operations).
    pub create_files: bool,
    pub change_annotations: bool,
    pub code_lens_refresh: bool,
    pub pull_configuration: bool,
    /// The client shows code lenses (else Accept/Reject are named as code actions).
    pub code_lens: bool,
    /// The client wants hovers as plain text (`hover.contentFormat` prefers `plaintext`).
    pub plaintext_hover: bool,
    /// `experimental.patchwise.instructionInput`: the client asks the user for the instruction
    /// of `patchwise.editSelection` (else "Edit selection…" is not offered).
    pub instruction_input: bool,
    /// `codeAction.codeActionLiteralSupport`: code actions may carry an `edit`.
    pub code_action_literals: bool,
    /// `codeAction.resolveSupport.properties` holds `edit`: a code action's edit may be left to
    /// `codeAction/resolve`.
    pub resolve_edit: bool,
}

impl ClientFeatures {
    fn from_capabilities(caps: &ClientCapabilities) -> Self {
        let window = caps.window.as_ref();
        let workspace = caps.workspace.as_ref();
        let edit = workspace.and_then(|w| w.workspace_edit.as_ref());
        let text = caps.text_document.as_ref();
        let hover_formats = text
            .and_then(|t| t.hover.as_ref())
            .and_then(|h| h.content_format.as_deref())
            .unwrap_or_default();
        let ours = caps.experimental.as_ref().and_then(|e| e.get("patchwise"));
        let code_action = text.and_then(|t| t.code_action.as_ref());
        Self {
            code_action_literals: code_action
                .is_some_and(|c| c.code_action_literal_support.is_some()),
            resolve_edit: code_action
                .and_then(|c| c.resolve_support.as_ref())
                .is_some_and(|r| r.properties.iter().any(|p| p == "edit")),
            code_lens: text.is_some_and(|t| t.code_lens.is_some()),
            plaintext_hover: hover_formats
                .iter()
                .find(|k| matches!(k, MarkupKind::PlainText | MarkupKind::Markdown))
                .is_some_and(|k| *k == MarkupKind::PlainText),
            instruction_input: ours
                .and_then(|p| p.get("instructionInput"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            work_done_progress: window.and_then(|w| w.work_done_progress).unwrap_or(false),
            show_document: window
                .and_then(|w| w.show_document.as_ref())
                .is_some_and(|s| s.support),
            document_changes: edit.and_then(|e| e.document_changes).unwrap_or(false),
            create_files: edit
                .and_then(|e| e.resource_operations.as_deref())
                .is_some_and(|ops| ops.contains(&ResourceOperationKind::Create)),
            change_annotations: edit
                .and_then(|e| e.change_annotation_support.as_ref())
                .is_some(),
            code_lens_refresh: workspace
                .and_then(|w| w.code_lens.as_ref())
                .and_then(|c| c.refresh_support)
                .unwrap_or(false),
            pull_configuration: workspace.and_then(|w| w.configuration).unwrap_or(false),
        }
    }
}

/// The server. Cheap to clone (shared state behind `Arc`s), so a run can finish in a task of
/// its own after its command has answered.
#[derive(Clone)]
pub struct Backend {
    pub(super) client: Client,
    /// Runs in flight (edit, research), for progress and cancellation.
    pub(super) runs: Arc<Runs>,
    state: Arc<Mutex<State>>,
    shut_down: Arc<AtomicBool>,
    /// The stdio transport's shared state (`None` without it, e.g. in-process).
    wire: Option<Arc<TransportState>>,
    /// Inline completion: recent suggestions, the request in flight.
    completer: Arc<Completer>,
    /// The order of the proposal store's restore and writes.
    pub(super) keeping: Arc<super::review::Keeping>,
}

pub fn build(
    shut_down: Arc<AtomicBool>,
    wire: Option<Arc<TransportState>>,
) -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    let mut builder = LspService::build(|client| Backend {
        client,
        runs: Runs::new(),
        state: Arc::new(Mutex::new(State::default())),
        shut_down,
        wire,
        completer: Arc::new(Completer::default()),
        keeping: Arc::default(),
    })
    .custom_method("patchwise/viewFileText", Backend::view_file_text)
    .custom_method("patchwise/proposalContent", Backend::proposal_content)
    // tower-lsp-server 0.23 has no trait method for this notification yet.
    .custom_method("window/workDoneProgress/cancel", Backend::progress_cancel)
    // tower-lsp-server 0.23 has no trait method for LSP 3.18's inline completion.
    .custom_method("textDocument/inlineCompletion", Backend::inline_completion);
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
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
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
        let Some(path) = from_proto::file_path(&params.uri) else {
            return Err(request_failed(format!(
                "{} is not open and is not a file: URI, so there is no text to show",
                params.uri.as_str()
            )));
        };
        tokio::task::spawn_blocking(move || workspace::read_text(&path))
            .await
            .map_err(|err| request_failed(format!("reading the file failed: {err}")))?
            .map_err(|err| request_failed(format!("document is not open and {err}")))
    }

    /// The first workspace root as a path, where `.patchwise/config.toml` is looked for.
    fn workspace_root(&self) -> Option<std::path::PathBuf> {
        let state = self.state();
        state.workspace_roots.iter().find_map(from_proto::file_path)
    }

    /// Reloads the configuration files, merges the client's settings over them, and installs
    /// the result (a new model router, so changed providers take effect for the next run).
    async fn reload_config(&self) -> Vec<ConfigProblem> {
        let root = self.workspace_root();
        let settings = self.state().client_settings.clone();
        let (mut config, mut problems) =
            tokio::task::spawn_blocking(move || Config::load(root.as_deref()))
                .await
                .unwrap_or_default();
        problems.extend(config.merge_json_from(&settings, "the editor's settings"));
        for problem in &problems {
            tracing::warn!("configuration: {problem}");
        }
        let mut state = self.state();
        state.router = Arc::new(ModelRouter::new(config.clone()));
        state.config = Arc::new(config);
        self.completer.clear();
        problems
    }

    /// Shows the problems not shown before in one `window/showMessage`.
    async fn report_config_problems(&self, problems: &[ConfigProblem]) {
        let fresh: Vec<&ConfigProblem> = {
            let mut state = self.state();
            problems
                .iter()
                .filter(|p| state.shown_problems.insert(p.to_string()))
                .collect()
        };
        if fresh.is_empty() {
            return;
        }
        let shown: Vec<String> = fresh.iter().take(5).map(ToString::to_string).collect();
        let more = fresh.len().saturating_sub(shown.len());
        let mut message = format!("patchwise configuration: {}", shown.join("; "));
        if more > 0 {
            message.push_str(&format!(" (and {more} more in the log)"));
        }
        self.client
            .show_message(MessageType::WARNING, message)
            .await;
    }

    /// Applies one `didChange` and maps pending proposals through it. Returns the file's path
    /// and what following it did to them (stale ones, records to write), when it has proposals.
    fn apply_change(
        &self,
        uri: &Uri,
        version: i32,
        changes: &[crate::document::ContentChange],
    ) -> Option<(PathBuf, review::Followed)> {
        let mut state = self.state();
        let encoding = state.encoding;
        let shown = shown_path(&state.workspace_roots, uri);
        let Some(doc) = state.documents.get_mut(uri) else {
            tracing::warn!(
                uri = uri.as_str(),
                "change for a document that is not open; ignored"
            );
            return None;
        };
        let applied = match doc.apply_changes(version, changes, encoding) {
            Ok(applied) => applied,
            Err(stale) => {
                tracing::warn!(uri = uri.as_str(), "{stale}");
                return None;
            }
        };
        for problem in &applied.problems {
            tracing::warn!(uri = uri.as_str(), version, "{problem}");
        }
        // The place edited, for completion's prompt (a whole-text change names no place, and
        // takes the chunks of this document again from its new text).
        if changes.iter().any(|change| change.range.is_none()) {
            let rope = &doc.rope;
            let lines = rope.len_lines();
            self.completer.replaced(&shown, |range| {
                (range.end <= lines).then(|| {
                    let (start, end) =
                        (rope.line_to_byte(range.start), rope.line_to_byte(range.end));
                    rope.byte_slice(start..end).to_string()
                })
            });
        }
        if let (Some(change), Some(replacement)) = (changes.last(), applied.replacements.last())
            && change.range.is_some()
        {
            let rope = &doc.rope;
            let at = (replacement.range.start + replacement.text.len()).min(rope.len_bytes());
            let lines =
                crate::complete::recent::chunk_lines(rope.byte_to_line(at), rope.len_lines());
            let (start, end) = (rope.line_to_byte(lines.start), rope.line_to_byte(lines.end));
            let text = rope.byte_slice(start..end).to_string();
            self.completer.edited(EditedChunk {
                path: shown,
                first_line: lines.start,
                text,
            });
        }
        let path = from_proto::file_path(uri)?;
        if state.proposals.for_path(&path).is_empty() {
            return None;
        }
        let followed = review::document_changed(&mut state.proposals, &path, &applied.replacements);
        Some((path, followed))
    }

    /// `textDocument/inlineCompletion` (LSP 3.18): a suggestion at the cursor, or an empty
    /// list. The request in flight before it is superseded at once (before this handler's first
    /// `.await`, so in arrival order); `$/cancelRequest` drops this handler's future and with it
    /// the model request.
    async fn inline_completion(
        &self,
        params: InlineCompletionParams,
    ) -> Result<InlineCompletionResponse> {
        let cancel = self.completer.begin();
        let position = params.text_document_position.position;
        let uri = params.text_document_position.text_document.uri;
        let invoked = params.context.trigger_kind == InlineCompletionTriggerKind::INVOKED;
        let (request, config) = {
            let state = self.state();
            let Some(doc) = state.documents.get(&uri) else {
                return Ok(InlineCompletionResponse::Array(Vec::new()));
            };
            let (offset, _) = doc.offset(from_proto::position(position), state.encoding);
            let shown = |uri: &Uri| shown_path(&state.workspace_roots, uri);
            let others = state
                .documents
                .iter()
                .filter(|(other, _)| **other != uri)
                .map(|(other, doc)| {
                    // Only the lines the prompt may show: a huge open file is not copied on
                    // every keystroke.
                    let lines =
                        crate::complete::context::EXTRA_CHUNK_LINES.min(doc.rope.len_lines());
                    OtherDocument {
                        path: shown(other),
                        text: doc.rope.slice(..doc.rope.line_to_char(lines)).to_string(),
                    }
                })
                .collect();
            let request = CompletionRequest {
                path: shown(&uri),
                text: doc.text(),
                offset,
                language_id: doc.language_id.clone(),
                invoked,
                others,
            };
            (request, state.config.clone())
        };
        match self.completer.suggest(&config, request, cancel).await {
            Ok(Some(suggestion)) => Ok(InlineCompletionResponse::Array(vec![
                InlineCompletionItem {
                    insert_text: suggestion.text,
                    filter_text: None,
                    // An empty range at the cursor: without one, a client replaces the word
                    // before the cursor.
                    range: Some(Range::new(position, position)),
                    command: None,
                    insert_text_format: None,
                },
            ])),
            Ok(None) => Ok(InlineCompletionResponse::Array(Vec::new())),
            Err(err) if invoked => Err(request_failed(format!("no completion: {err}"))),
            Err(err) => {
                // Typing must not bring up error messages: the log says why.
                tracing::warn!("completion failed: {err}");
                Ok(InlineCompletionResponse::Array(Vec::new()))
            }
        }
    }

    async fn progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        let token = match params.token {
            NumberOrString::String(s) => s,
            NumberOrString::Number(n) => n.to_string(),
        };
        let cancelled = self.runs.cancel(Some(&token));
        tracing::info!(cancelled, "progress cancelled by the user");
    }

    /// The document at `uri` and its path, for requests about an open file.
    fn open_document(&self, uri: &Uri) -> Option<(PathBuf, Document, PositionEncoding)> {
        let state = self.state();
        let doc = state.documents.get(uri)?;
        let path = from_proto::file_path(uri)?;
        Some((path, doc.clone(), state.encoding))
    }

    /// Waits until every notification sent so far has been written to the client, so the
    /// response that follows comes after them (see `transport`).
    pub(super) async fn flush(&self) {
        let Some(wire) = &self.wire else {
            return;
        };
        let (id, written) = wire.register();
        self.client
            .send_notification::<Flushed>(serde_json::json!({ "id": id }))
            .await;
        if tokio::time::timeout(std::time::Duration::from_secs(5), written)
            .await
            .is_err()
        {
            tracing::warn!("the output writer did not pass the flush marker in 5 s");
        }
    }

    async fn debug_panic(&self, _params: serde_json::Value) -> Result<()> {
        panic!("deliberate panic from patchwise/debug/panic");
    }
}

/// Fills in the edit of an "Accept" code action when every file of its proposal is open (the
/// others need the disk, which `codeAction/resolve` reads); else, or when the proposal cannot
/// apply, the action runs its command.
fn fill_accept_edit(state: &mut State, action: &mut CodeAction) {
    let Some((id, hunk)) = proposals::accept_data(action) else {
        return;
    };
    let all_open = state.proposals.get(id).is_some_and(|p| {
        p.files
            .iter()
            .all(|f| state.document_for_path(&f.path).is_some())
    });
    let edit = all_open
        .then(|| state.accept_edit(id, hunk, &HashMap::new(), false).ok())
        .flatten();
    match edit {
        Some((edit, _)) => {
            action.edit = Some(edit);
            if let Some(data) = action
                .data
                .as_mut()
                .and_then(serde_json::Value::as_object_mut)
            {
                data.remove(proposals::ACCEPT_DATA);
            }
            if action
                .data
                .as_ref()
                .is_some_and(|d| d.as_object().is_some_and(|o| o.is_empty()))
            {
                action.data = None;
            }
        }
        None => proposals::accept_by_command(action),
    }
}

/// Runs blocking work (disk, database) off the async threads. A panic in it comes back as an
/// error, as the work's own errors do.
pub(super) async fn blocking<T, E>(
    work: impl FnOnce() -> std::result::Result<T, E> + Send + 'static,
) -> std::result::Result<T, String>
where
    T: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(err.to_string()),
        Err(err) => Err(err.to_string()),
    }
}

/// Opens `path` in the editor (`window/showDocument`, inside the editor, focused). `Ok(false)`
/// when the path has no `file:` URI or the client declined to show it.
pub(super) async fn show_file(client: &Client, path: &Path) -> Result<bool> {
    let Some(uri) = Uri::from_file_path(path) else {
        return Ok(false);
    };
    client
        .show_document(ShowDocumentParams {
            uri,
            external: Some(false),
            take_focus: Some(true),
            selection: None,
        })
        .await
}

/// A document's path as completion's prompt names it: relative to the first workspace root
/// when it is inside it, else whole (or the URI, for a document that is not a file).
fn shown_path(roots: &[Uri], uri: &Uri) -> String {
    let root = roots.iter().find_map(from_proto::file_path);
    match (from_proto::file_path(uri), root) {
        (Some(path), Some(root)) if path.starts_with(&root) => path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned(),
        (Some(path), _) => path.to_string_lossy().into_owned(),
        (None, _) => uri.as_str().to_owned(),
    }
}

pub(super) fn request_failed(message: impl Into<String>) -> Error {
    Error {
        code: ErrorCode::ServerError(REQUEST_FAILED),
        message: message.into().into(),
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
            state.client = ClientFeatures::from_capabilities(&params.capabilities);
            state.client_settings = params.initialization_options.clone().unwrap_or_default();
        }
        let problems = self.reload_config().await;
        self.state().pending_problems = problems;
        let result = InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(to_proto::position_encoding(encoding)),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        ..TextDocumentSyncOptions::default()
                    },
                )),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                code_lens_provider: Some(CodeLensOptions {
                    resolve_provider: Some(false),
                }),
                code_action_provider: Some(CodeActionProviderCapability::Options(
                    CodeActionOptions {
                        code_action_kinds: Some(vec![
                            CodeActionKind::QUICKFIX,
                            CodeActionKind::REFACTOR_REWRITE,
                        ]),
                        // "Accept" actions fill in their edit there (see `code_action_resolve`).
                        resolve_provider: Some(true),
                        work_done_progress_options: WorkDoneProgressOptions::default(),
                    },
                )),
                inline_completion_provider: Some(OneOf::Left(true)),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: Command::names().into_iter().map(str::to_owned).collect(),
                    work_done_progress_options: WorkDoneProgressOptions::default(),
                }),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "patchwise".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
            offset_encoding: None,
        };
        // `initialized` follows and brings back the stored proposals; commands wait for it.
        self.keeping.restore_coming();
        Ok(result)
    }

    async fn initialized(&self, _: InitializedParams) {
        let problems = std::mem::take(&mut self.state().pending_problems);
        self.report_config_problems(&problems).await;
        // Proposals pending when the server last stopped come back.
        let restoring = self.keeping.restoring();
        let paths = self.restore_proposals(None).await;
        drop(restoring);
        self.proposals_changed(paths).await;
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let pull = self.state().client.pull_configuration;
        let settings = if params.settings.is_null() && pull {
            // Pull-model clients send an empty notification: ask for our section.
            let item = ConfigurationItem {
                scope_uri: None,
                section: Some("patchwise".to_owned()),
            };
            match self.client.configuration(vec![item]).await {
                Ok(mut values) => values.pop().unwrap_or_default(),
                Err(err) => {
                    tracing::warn!("workspace/configuration failed: {err}");
                    return;
                }
            }
        } else {
            params.settings
        };
        self.state().client_settings = settings;
        let problems = self.reload_config().await;
        self.report_config_problems(&problems).await;
    }

    async fn shutdown(&self) -> Result<()> {
        self.shut_down.store(true, Ordering::SeqCst);
        // A server started after this one reads the proposals as this one left them.
        self.keeping.flush().await;
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
        let path = from_proto::file_path(&item.uri);
        let (has_proposals, records) = {
            let mut state = self.state();
            if state.documents.insert(item.uri, doc).is_some() {
                tracing::warn!("document opened twice; the new text replaces the old");
            }
            // Proposals follow the text the editor has, which may not be the one on disk.
            match &path {
                Some(path) if !state.proposals.for_path(path).is_empty() => {
                    let followed = review::document_synced(&mut state.proposals, path, &item.text);
                    (true, followed.records)
                }
                _ => (false, Vec::new()),
            }
        };
        let Some(path) = path else {
            return;
        };
        self.persist(records);
        let mut paths = self.restore_proposals(Some(path.clone())).await;
        if has_proposals || !paths.is_empty() {
            paths.push(path);
            self.proposals_changed(paths).await;
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
        // Everything up to the proposals' mapping happens under the lock, before any `.await`.
        let Some((path, followed)) = self.apply_change(&uri, version, &changes) else {
            return;
        };
        // The stored records follow at once: a hunk a code action's edit applied is gone from
        // them too, not only from this session's view.
        self.persist(followed.records);
        for (id, reason) in followed.stale {
            self.client
                .show_message(
                    MessageType::WARNING,
                    format!("patchwise: proposal {id} is stale ({reason}); it will not be applied"),
                )
                .await;
        }
        self.proposals_changed(vec![path]).await;
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let p = params.text_document_position_params;
        let Some((path, doc, encoding)) = self.open_document(&p.text_document.uri) else {
            return Ok(None);
        };
        let (offset, _) = doc.offset(from_proto::position(p.position), encoding);
        let state = self.state();
        Ok(proposals::hover(
            &state.proposals,
            &path,
            &doc,
            offset,
            state.view(),
        ))
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        let Some((path, doc, encoding)) = self.open_document(&params.text_document.uri) else {
            return Ok(None);
        };
        let state = self.state();
        Ok(Some(proposals::code_lenses(
            &state.proposals,
            &path,
            &doc,
            encoding,
        )))
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let uri = params.text_document.uri;
        let Some((path, doc, encoding)) = self.open_document(&uri) else {
            return Ok(None);
        };
        let mut state = self.state();
        let at = proposals::OpenFile {
            path: &path,
            uri: &uri,
            doc: &doc,
            encoding,
        };
        let abilities = ClientAbilities {
            supplies_instruction: state.client.instruction_input,
        };
        // An "Accept" action carries its edit, which the client applies without asking (eglot
        // asks before a `workspace/applyEdit`): left to `codeAction/resolve` for clients that
        // resolve edits, filled in now for the others.
        let accept_by = if state.client.code_action_literals {
            proposals::AcceptAction::Edit
        } else {
            proposals::AcceptAction::Command
        };
        let mut actions = proposals::code_actions(
            &state.proposals,
            &at,
            params.range,
            &params.context.diagnostics,
            abilities,
            accept_by,
        );
        if !state.client.resolve_edit {
            for action in &mut actions {
                if let CodeActionOrCommand::CodeAction(action) = action {
                    fill_accept_edit(&mut state, action);
                }
            }
        }
        Ok(Some(actions))
    }

    async fn code_action_resolve(&self, mut action: CodeAction) -> Result<CodeAction> {
        let Some((id, hunk)) = proposals::accept_data(&action) else {
            return Ok(action);
        };
        match self.resolve_accept(id, hunk).await {
            Ok(edit) => {
                action.edit = Some(edit);
                if let Some(data) = action
                    .data
                    .as_mut()
                    .and_then(serde_json::Value::as_object_mut)
                {
                    data.remove(proposals::ACCEPT_DATA);
                }
            }
            Err(err) => {
                tracing::info!(id, "the Accept action runs its command: {}", err.message);
                proposals::accept_by_command(&mut action);
            }
        }
        Ok(action)
    }

    async fn execute_command(
        &self,
        params: ExecuteCommandParams,
    ) -> Result<Option<serde_json::Value>> {
        self.execute(params).await
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        if self.state().documents.remove(&uri).is_none() {
            tracing::warn!(uri = uri.as_str(), "close for a document that is not open");
        }
    }
}
