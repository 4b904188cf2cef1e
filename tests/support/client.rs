//! A typed LSP client for the end-to-end tests, in the manner of ruff's `ty_server` e2e
//! `TestServer`: a request sends `R::Params` and returns `R::Result`, notifications the server
//! sends are read as `N::Params`, and the test fails when the client drops (or shuts the server
//! down) while messages it never read remain — unless their method was ignored with
//! [`TestServer::ignore`]. A test that does not expect a notification thus finds out when the
//! server starts sending one.
//!
//! It sits on the untyped [`Server`](super::Server), which owns framing, stderr and the answers
//! to server-to-client requests (set them with [`TestServer::reply`]); [`TestServer::raw`]
//! reaches it for what a typed client cannot send (malformed frames, params of the wrong shape).
//! Where `ls_types` lacks a part of the protocol the server speaks (LSP 3.18 code action tags,
//! patchwise's own methods), the type is declared here, next to the client that reads it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitStatus;
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tower_lsp_server::ls_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Initialized, Notification,
    Progress,
};
use tower_lsp_server::ls_types::request::{ExecuteCommand, Initialize, Request, Shutdown};
use tower_lsp_server::ls_types::{
    ClientCapabilities, CodeAction, CodeActionParams, Command, CreateFile,
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    DocumentChangeOperation, DocumentChanges, ExecuteCommandParams, InitializeParams,
    InitializeResult, OneOf, Position, ProgressParamsValue, Range, ResourceOp,
    ShowDocumentClientCapabilities, TextDocumentContentChangeEvent, TextDocumentEdit,
    TextDocumentIdentifier, TextDocumentItem, TextEdit, Uri, VersionedTextDocumentIdentifier,
    WindowClientCapabilities, WorkDoneProgress, WorkDoneProgressParams, WorkspaceEdit,
};

use super::{Options, PATIENCE, Server};

/// An error response, as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ResponseError {
    pub code: i64,
    pub message: String,
    #[serde(default)]
    pub data: Option<Value>,
}

/// `patchwise/viewFileText`: the text the server holds for a document (the open buffer, else
/// the file on disk).
pub enum ViewFileText {}

#[derive(Debug, Serialize, Deserialize)]
pub struct ViewFileTextParams {
    pub uri: Uri,
}

impl Request for ViewFileText {
    type Params = ViewFileTextParams;
    type Result = String;
    const METHOD: &'static str = "patchwise/viewFileText";
}

/// `patchwise/proposalContent`: the full text of one file as a pending proposal would leave it.
pub enum ProposalContent {}

#[derive(Debug, Serialize, Deserialize)]
pub struct ProposalContentParams {
    pub id: Value,
    pub uri: Uri,
}

impl Request for ProposalContent {
    type Params = ProposalContentParams;
    type Result = String;
    const METHOD: &'static str = "patchwise/proposalContent";
}

/// `patchwise/runFinished` (server → client): how a run that answered at once ended.
pub enum RunFinished {}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFinishedParams {
    pub run_id: String,
    pub kind: String,
    pub ok: bool,
    /// The proposal, as `patchwise.edit` or `patchwise.develop` with `wait` answers it.
    #[serde(default)]
    pub proposal: Option<Value>,
    /// The research record, as `patchwise.research` with `wait` answers it.
    #[serde(default)]
    pub research: Option<Value>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub cancelled: Option<bool>,
}

impl Notification for RunFinished {
    type Params = RunFinishedParams;
    const METHOD: &'static str = "patchwise/runFinished";
}

/// `textDocument/codeAction` read with the LSP 3.18 `tags` that `ls_types` lacks (the server
/// adds them on the wire, see `src/lsp/transport.rs`).
pub enum CodeActions {}

/// A code action and its tags (`1` is `LLMGenerated`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaggedCodeAction {
    #[serde(flatten)]
    pub action: CodeAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<u32>>,
}

impl Request for CodeActions {
    type Params = CodeActionParams;
    type Result = Option<Vec<TaggedCodeAction>>;
    const METHOD: &'static str = "textDocument/codeAction";
}

/// A change of the whole text.
pub fn whole(text: &str) -> TextDocumentContentChangeEvent {
    TextDocumentContentChangeEvent {
        range: None,
        range_length: None,
        text: text.to_owned(),
    }
}

/// A change of the range from `start` to `end`, each `(line, character)`.
pub fn ranged(start: (u32, u32), end: (u32, u32), text: &str) -> TextDocumentContentChangeEvent {
    TextDocumentContentChangeEvent {
        range: Some(Range::new(
            Position::new(start.0, start.1),
            Position::new(end.0, end.1),
        )),
        range_length: None,
        text: text.to_owned(),
    }
}

/// The message of a work-done progress notification (begin, report or end), if it has one.
pub fn progress_message(progress: &WorkDoneProgress) -> Option<&str> {
    match progress {
        WorkDoneProgress::Begin(b) => b.message.as_deref(),
        WorkDoneProgress::Report(r) => r.message.as_deref(),
        WorkDoneProgress::End(e) => e.message.as_deref(),
    }
}

/// The text document edits of a workspace edit, in order, whichever form it takes.
pub fn document_edits(edit: &WorkspaceEdit) -> Vec<&TextDocumentEdit> {
    match &edit.document_changes {
        Some(DocumentChanges::Edits(edits)) => edits.iter().collect(),
        Some(DocumentChanges::Operations(operations)) => operations
            .iter()
            .filter_map(|o| match o {
                DocumentChangeOperation::Edit(edit) => Some(edit),
                DocumentChangeOperation::Op(_) => None,
            })
            .collect(),
        None => Vec::new(),
    }
}

/// The files a workspace edit creates.
pub fn created_files(edit: &WorkspaceEdit) -> Vec<&CreateFile> {
    match &edit.document_changes {
        Some(DocumentChanges::Operations(operations)) => operations
            .iter()
            .filter_map(|o| match o {
                DocumentChangeOperation::Op(ResourceOp::Create(create)) => Some(create),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The edits of one document, annotated or not.
pub fn text_edits(edit: &TextDocumentEdit) -> Vec<TextEdit> {
    edit.edits
        .iter()
        .map(|e| match e {
            OneOf::Left(plain) => plain.clone(),
            OneOf::Right(annotated) => annotated.text_edit.clone(),
        })
        .collect()
}

/// A URI the test names as text (`file:///…`, `untitled:…`).
pub fn uri(text: &str) -> Uri {
    Uri::from_str(text).unwrap_or_else(|e| panic!("{text:?} is not a URI: {e}"))
}

/// The `file://` URI of a path.
pub fn path_uri(path: &Path) -> Uri {
    Uri::from_file_path(path).unwrap_or_else(|| panic!("{} has no file URI", path.display()))
}

/// The capabilities of a client that shows work-done progress and opens documents the server
/// asks it to (`window/showDocument`), as VS Code and Neovim do.
pub fn showing_client() -> ClientCapabilities {
    ClientCapabilities {
        window: Some(WindowClientCapabilities {
            work_done_progress: Some(true),
            show_document: Some(ShowDocumentClientCapabilities { support: true }),
            ..WindowClientCapabilities::default()
        }),
        ..ClientCapabilities::default()
    }
}

/// How to start the server; [`TestServer::start`] takes the defaults.
#[derive(Default)]
pub struct Builder<'a> {
    options: Options<'a>,
    /// JSON, so that a client's capabilities can hold what `ls_types` lacks.
    capabilities: Value,
    root: Option<Uri>,
    initialization_options: Option<Value>,
    replies: Vec<(&'static str, Value)>,
}

impl<'a> Builder<'a> {
    /// Arguments, environment and working directory of the process.
    pub fn options(mut self, options: Options<'a>) -> Self {
        self.options = options;
        self
    }

    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = serde_json::to_value(capabilities).unwrap();
        self
    }

    /// Capabilities as a client sends them, for those `ls_types` cannot express (LSP 3.18
    /// `codeAction.tagSupport`, a recorded client's `fixtures/lsp/clients/*.json`).
    pub fn capabilities_json(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// What the client answers to the server's requests `R` (instead of the default).
    pub fn reply<R: Request>(mut self, result: R::Result) -> Self {
        self.replies
            .push((R::METHOD, serde_json::to_value(result).unwrap()));
        self
    }

    /// The workspace root (`rootUri`).
    pub fn root(mut self, root: &Path) -> Self {
        self.root = Some(path_uri(root));
        self
    }

    /// The user configuration directory (`XDG_CONFIG_HOME`), so that the configuration of
    /// whoever runs the tests never reaches the server.
    pub fn config_home(mut self, dir: &Path) -> Self {
        self.options
            .env
            .push(("XDG_CONFIG_HOME", dir.display().to_string()));
        self
    }

    /// The client's settings sent with `initialize` (`initializationOptions`).
    pub fn initialization_options(mut self, options: Value) -> Self {
        self.initialization_options = Some(options);
        self
    }

    /// Spawns the server and completes `initialize` / `initialized`.
    pub fn start(self) -> (TestServer, InitializeResult) {
        let mut server = Server::spawn(self.options);
        for (method, result) in self.replies {
            server.replies.insert(method.to_owned(), result);
        }
        // `rootUri` is deprecated in favour of workspace folders, but it is what most clients
        // still send, and the server reads both.
        #[allow(deprecated)]
        let params = InitializeParams {
            root_uri: self.root,
            initialization_options: self.initialization_options,
            ..InitializeParams::default()
        };
        let mut params = serde_json::to_value(params).unwrap();
        params["capabilities"] = if self.capabilities.is_null() {
            json!({})
        } else {
            self.capabilities
        };
        let result = server
            .request(Initialize::METHOD, params)
            .unwrap_or_else(|e| panic!("initialize failed: {e}\nstderr:\n{}", server.stderr()));
        server.notify(Initialized::METHOD, json!({}));
        let typed = serde_json::from_value(result.clone())
            .unwrap_or_else(|e| panic!("the initialize result does not parse ({e}): {result}"));
        let client = TestServer {
            server: Some(server),
            ignored: BTreeSet::new(),
            initialize_json: result,
        };
        (client, typed)
    }
}

pub struct TestServer {
    /// `None` once shut down.
    server: Option<Server>,
    ignored: BTreeSet<String>,
    initialize_json: Value,
}

impl TestServer {
    pub fn builder<'a>() -> Builder<'a> {
        Builder::default()
    }

    /// A server started with default options and no client capabilities.
    pub fn start() -> (TestServer, InitializeResult) {
        Self::builder().start()
    }

    /// The initialize result as the server sent it, for assertions on keys a typed
    /// [`InitializeResult`] would drop.
    pub fn initialize_json(&self) -> &Value {
        &self.initialize_json
    }

    /// The untyped client underneath, for malformed input.
    pub fn raw(&mut self) -> &mut Server {
        self.server.as_mut().expect("the server is running")
    }

    pub fn stderr(&self) -> String {
        self.server.as_ref().map(Server::stderr).unwrap_or_default()
    }

    /// Sends `R` and waits for its answer; fails the test on an error response.
    pub fn request<R: Request>(&mut self, params: R::Params) -> R::Result {
        match self.try_request::<R>(params) {
            Ok(result) => result,
            Err(e) => panic!(
                "{} failed: {} ({})\nstderr:\n{}",
                R::METHOD,
                e.message,
                e.code,
                self.stderr()
            ),
        }
    }

    /// Sends `R` and waits for its error response; fails the test when it succeeds.
    pub fn request_err<R: Request>(&mut self, params: R::Params) -> ResponseError {
        match self.try_request::<R>(params) {
            Ok(result) => panic!(
                "{} succeeded with {}, expected an error",
                R::METHOD,
                serde_json::to_string(&result).unwrap()
            ),
            Err(e) => e,
        }
    }

    pub fn try_request<R: Request>(
        &mut self,
        params: R::Params,
    ) -> Result<R::Result, ResponseError> {
        let id = self.send_request::<R>(params);
        self.response::<R>(id)
    }

    /// Sends `R` without waiting (to pipeline requests); [`TestServer::response`] reads the answer.
    pub fn send_request<R: Request>(&mut self, params: R::Params) -> i64 {
        let params = serde_json::to_value(params).unwrap();
        self.raw().request_async(R::METHOD, params)
    }

    pub fn response<R: Request>(&mut self, id: i64) -> Result<R::Result, ResponseError> {
        match self.raw().response(json!(id)) {
            Ok(result) => Ok(serde_json::from_value(result.clone()).unwrap_or_else(|e| {
                panic!(
                    "{} answered what its type does not hold ({e}): {result}",
                    R::METHOD
                )
            })),
            Err(error) => Err(serde_json::from_value(error.clone())
                .unwrap_or_else(|e| panic!("not an LSP error object ({e}): {error}"))),
        }
    }

    pub fn notify<N: Notification>(&mut self, params: N::Params) {
        let params = serde_json::to_value(params).unwrap();
        self.raw().notify(N::METHOD, params);
    }

    /// Waits for the next `N` from the server (earlier ones first) and reads it.
    pub fn notification<N: Notification>(&mut self) -> N::Params {
        let message = self.raw().wait_for(|m| m["method"] == N::METHOD);
        serde_json::from_value(message["params"].clone())
            .unwrap_or_else(|e| panic!("{} does not parse ({e}): {message}", N::METHOD))
    }

    /// The notifications `N` read so far (while waiting for other messages), oldest first.
    pub fn received<N: Notification>(&mut self) -> Vec<N::Params> {
        self.raw()
            .take_method(N::METHOD)
            .into_iter()
            .map(|m| {
                serde_json::from_value(m["params"].clone())
                    .unwrap_or_else(|e| panic!("{} does not parse ({e}): {m}", N::METHOD))
            })
            .collect()
    }

    /// The server-to-client requests `R` read so far (and answered from
    /// [`Server::replies`](super::Server)), oldest first.
    pub fn received_requests<R: Request>(&mut self) -> Vec<R::Params> {
        self.raw()
            .take_method(R::METHOD)
            .into_iter()
            .map(|m| {
                serde_json::from_value(m["params"].clone())
                    .unwrap_or_else(|e| panic!("{} does not parse ({e}): {m}", R::METHOD))
            })
            .collect()
    }

    /// Reads what the server sends (answering its requests) until `done` holds, for a state
    /// the test observes elsewhere (a model server that got its request); fails after
    /// [`PATIENCE`] naming `what` it waited for.
    pub fn wait_until(&mut self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !done() {
            assert!(
                Instant::now() < deadline,
                "waited in vain for {what}\nstderr:\n{}",
                self.stderr()
            );
            self.raw().drain(Duration::from_millis(50));
        }
    }

    /// Waits for the next server-to-client request `R` (already answered from
    /// [`Server::replies`](super::Server)) and reads its params.
    pub fn server_request<R: Request>(&mut self) -> R::Params {
        let message = self
            .raw()
            .wait_for(|m| m["method"] == R::METHOD && m.get("id").is_some());
        serde_json::from_value(message["params"].clone())
            .unwrap_or_else(|e| panic!("{} does not parse ({e}): {message}", R::METHOD))
    }

    /// The work-done progress (`$/progress`) read so far, oldest first.
    pub fn received_progress(&mut self) -> Vec<WorkDoneProgress> {
        self.received::<Progress>()
            .into_iter()
            .map(|p| match p.value {
                ProgressParamsValue::WorkDone(progress) => progress,
            })
            .collect()
    }

    /// Notifications `N` are not reported as unread.
    pub fn ignore<N: Notification>(&mut self) {
        self.ignored.insert(N::METHOD.to_owned());
    }

    /// Server-to-client requests `R` are not reported as unread.
    pub fn ignore_request<R: Request>(&mut self) {
        self.ignored.insert(R::METHOD.to_owned());
    }

    /// `shutdown`, `exit`, and the process's exit status. Fails when a message the test never
    /// read (and did not ignore) remains, or a response was left unread.
    pub fn shutdown(mut self) -> ExitStatus {
        self.finish()
    }

    /// [`TestServer::shutdown`] where the server is a field: it is stopped and may be
    /// replaced afterwards (dropped as it is, it does nothing more).
    pub fn shutdown_in_place(&mut self) -> ExitStatus {
        self.finish()
    }

    /// Waits for the process to end on its own (after `exit` without `shutdown`, or a closed
    /// stdin); fails like [`TestServer::shutdown`] on unread messages.
    pub fn wait_exit(mut self) -> ExitStatus {
        let mut server = self.server.take().expect("the server is running");
        let status = server.wait_exit();
        self.check_unread(&mut server);
        status
    }

    fn finish(&mut self) -> ExitStatus {
        let mut server = self.server.take().expect("the server is running");
        let result = server.request(Shutdown::METHOD, Value::Null);
        assert_eq!(result, Ok(Value::Null), "shutdown failed");
        server.notify("exit", Value::Null);
        let status = server.wait_exit();
        self.check_unread(&mut server);
        status
    }

    fn check_unread(&self, server: &mut Server) {
        let unread: Vec<String> = server
            .remaining()
            .into_iter()
            .filter(|m| {
                let method = m["method"].as_str().unwrap_or_default();
                !self.ignored.contains(method)
            })
            .map(|m| m.to_string())
            .collect();
        assert!(
            unread.is_empty(),
            "the server sent messages the test never read (read them, or `ignore` their \
             method):\n{}",
            unread.join("\n")
        );
    }

    // ---- the text document notifications every test sends ----

    pub fn open(&mut self, uri: &Uri, language: &str, text: &str, version: i32) {
        self.notify::<DidOpenTextDocument>(DidOpenTextDocumentParams {
            text_document: TextDocumentItem {
                uri: uri.clone(),
                language_id: language.to_owned(),
                version,
                text: text.to_owned(),
            },
        });
    }

    pub fn change(
        &mut self,
        uri: &Uri,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) {
        self.notify::<DidChangeTextDocument>(DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier {
                uri: uri.clone(),
                version,
            },
            content_changes: changes,
        });
    }

    pub fn close(&mut self, uri: &Uri) {
        self.notify::<DidCloseTextDocument>(DidCloseTextDocumentParams {
            text_document: TextDocumentIdentifier { uri: uri.clone() },
        });
    }

    /// `workspace/executeCommand` with one argument object, as patchwise's commands take.
    pub fn command(&mut self, name: &str, argument: Value) -> Result<Value, ResponseError> {
        self.execute(&Command::new(
            String::new(),
            name.to_owned(),
            Some(vec![argument]),
        ))
    }

    /// Runs a command that starts a run as a client follows it: the answer `{runId}`, then
    /// that run's `patchwise/runFinished`. Returns its proposal or research record, or the
    /// error message (of the command, or of the run).
    pub fn run(&mut self, command: &Command) -> Result<Value, String> {
        let answer = self.execute(command).map_err(|e| e.message)?;
        let run_id = answer["runId"]
            .as_str()
            .unwrap_or_else(|| panic!("{} answered without a runId: {answer}", command.command))
            .to_owned();
        assert_eq!(answer.as_object().map(|o| o.len()), Some(1), "{answer}");
        let message = self.raw().wait_for(|m| {
            m["method"] == RunFinished::METHOD && m["params"]["runId"] == run_id.as_str()
        });
        let finished: RunFinishedParams = serde_json::from_value(message["params"].clone())
            .unwrap_or_else(|e| panic!("runFinished does not parse ({e}): {message}"));
        match (finished.ok, finished.proposal, finished.research) {
            (true, Some(v), _) | (true, None, Some(v)) => Ok(v),
            _ => Err(finished.error.unwrap_or_default()),
        }
    }

    /// [`TestServer::run`] of a command by name with one argument object.
    pub fn run_command(&mut self, name: &str, argument: Value) -> Result<Value, String> {
        self.run(&Command::new(
            String::new(),
            name.to_owned(),
            Some(vec![argument]),
        ))
    }

    /// Runs a command as a client runs one it was offered (by a code action or a code lens):
    /// its name and arguments exactly as given.
    pub fn execute(&mut self, command: &Command) -> Result<Value, ResponseError> {
        let result = self.try_request::<ExecuteCommand>(ExecuteCommandParams {
            command: command.command.clone(),
            arguments: command.arguments.clone().unwrap_or_default(),
            work_done_progress_params: WorkDoneProgressParams::default(),
        })?;
        Ok(result.unwrap_or(Value::Null))
    }

    /// The server's text of `uri` (`patchwise/viewFileText`).
    pub fn view(&mut self, uri: &Uri) -> Result<String, ResponseError> {
        self.try_request::<ViewFileText>(ViewFileTextParams { uri: uri.clone() })
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        // A test that already failed keeps its own message; the process is killed by `Server`.
        if self.server.is_some() && !std::thread::panicking() {
            self.finish();
        }
    }
}
