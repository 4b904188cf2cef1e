//! Edit in the editor, end to end: the real binary over stdio, a local server speaking the
//! OpenAI chat-completions SSE format scripted from `fixtures/lsp/edit/scenarios.json`, and
//! the client side played by the typed test client (progress tokens, `workspace/applyEdit`).
//!
//! Every test also checks that nothing was written to the workspace on disk: proposals reach
//! the editor only through `workspace/applyEdit`.

mod support;

use std::path::{Path, PathBuf};

use patchwise::model::replay::{ReplayServer, Reply};
use serde_json::{Value, json};
use support::client::{
    CodeActions, ProposalContent, ProposalContentParams, ResponseError, RunFinished,
    TaggedCodeAction, TestServer, path_uri, progress_message, ranged, text_edits, whole,
};
use support::{edit_scenario, openai_sse as sse, snapshot};
use tower_lsp_server::ls_types::notification::{
    Progress, PublishDiagnostics, ShowMessage, WorkDoneProgressCancel,
};
use tower_lsp_server::ls_types::request::{
    ApplyWorkspaceEdit, CodeLensRefresh, CodeLensRequest, ExecuteCommand, HoverRequest,
    ShowDocument, WorkDoneProgressCreate,
};
use tower_lsp_server::ls_types::{
    ApplyWorkspaceEditParams, CodeActionContext, CodeActionParams, CodeLens, CodeLensParams,
    Diagnostic, DiagnosticSeverity, DocumentChangeOperation, DocumentChanges, ExecuteCommandParams,
    Hover, HoverContents, HoverParams, MarkupContent, MarkupKind, PartialResultParams, Position,
    Range, TextDocumentEdit, TextDocumentIdentifier, TextDocumentPositionParams, TextEdit, Uri,
    WorkDoneProgress, WorkDoneProgressCancelParams, WorkDoneProgressParams,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/lsp/edit")
}

fn scenario(name: &str) -> Value {
    edit_scenario(name).0
}

struct Setup {
    server: TestServer,
    _runtime: tokio::runtime::Runtime,
    model: ReplayServer,
    _dir: tempfile::TempDir,
    root: PathBuf,
    file: PathBuf,
    uri: Uri,
    disk_before: String,
}

/// The capabilities of VS Code with the patchwise extension, as JSON: they include the LSP 3.18
/// code action tags `ls_types` has no field for.
fn capabilities(annotations: bool) -> Value {
    let mut edit = json!({ "documentChanges": true, "resourceOperations": ["create"] });
    if annotations {
        edit["changeAnnotationSupport"] = json!({ "groupsOnLabel": true });
    }
    json!({
        "general": { "positionEncodings": ["utf-16"] },
        "window": { "workDoneProgress": true, "showDocument": { "support": true } },
        "workspace": { "workspaceEdit": edit, "codeLens": { "refreshSupport": true }, "configuration": false },
        "textDocument": {
            "codeAction": {
                "codeActionLiteralSupport": { "codeActionKind": { "valueSet": ["quickfix", "refactor.rewrite"] } },
                "tagSupport": { "valueSet": [1] }
            },
            "codeLens": {},
            "hover": { "contentFormat": ["markdown", "plaintext"] }
        },
        "experimental": { "patchwise": { "instructionInput": true } }
    })
}

/// A workspace copy, a scripted model, and an initialized server with `src/lib.rs` open.
fn setup(answers: Vec<Reply>, tools: &str, annotations: bool, open_text: Option<&str>) -> Setup {
    setup_for(answers, tools, capabilities(annotations), open_text)
}

/// As [`setup`], for a client with these capabilities.
fn setup_for(answers: Vec<Reply>, tools: &str, caps: Value, open_text: Option<&str>) -> Setup {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = runtime.block_on(ReplayServer::start(answers)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    for file in ["src/lib.rs", "AGENTS.md"] {
        std::fs::copy(fixtures().join("workspace").join(file), root.join(file)).unwrap();
    }
    let file = root.join("src/lib.rs");
    let disk_before = std::fs::read_to_string(&file).unwrap();
    let server = start_server(dir.path(), &root, &model, tools, caps);
    let uri = path_uri(&file);
    let mut setup = Setup {
        server,
        _runtime: runtime,
        model,
        _dir: dir,
        root,
        file,
        uri,
        disk_before,
    };
    let text = open_text.map_or_else(|| setup.disk_before.clone(), str::to_owned);
    open_doc(&mut setup, &text);
    setup
}

/// A server on the workspace `root`, its data (configuration, database) under `dir`,
/// initialized.
///
/// Every run reports progress and every change of the proposals asks the client to refresh its
/// code lenses; the tests about them read them, the others let them be.
fn start_server(
    dir: &Path,
    root: &Path,
    model: &ReplayServer,
    tools: &str,
    caps: Value,
) -> TestServer {
    let init = json!({
        "providers": { "fake": { "kind": "openai", "base_url": format!("{}/v1", model.url()), "api_key_env": "", "tools": tools } },
        "roles": { "coder": "fake/test-model" },
        "timeouts": { "connect": 5, "first_token": 60, "total": 120 },
        "retry": { "max_attempts": 1 },
        "data_dir": dir.join("data"),
    });
    let (mut server, _) = TestServer::builder()
        .config_home(&dir.join("config"))
        .capabilities_json(caps)
        .root(root)
        .initialization_options(init)
        .start();
    server.ignore_request::<WorkDoneProgressCreate>();
    server.ignore::<Progress>();
    server.ignore_request::<CodeLensRefresh>();
    server
}

fn open_doc(setup: &mut Setup, text: &str) {
    setup.server.open(&setup.uri, "rust", text, 1);
}

/// Stops the server, then starts another on the same workspace and store, as an editor's
/// restart does.
fn restart(setup: &mut Setup, caps: Value) {
    setup.server.shutdown_in_place();
    setup.server = start_server(setup._dir.path(), &setup.root, &setup.model, "native", caps);
}

fn lines_range(s: &Value) -> Value {
    let lines = s["lines"].as_array().unwrap();
    let (first, last) = (
        lines[0].as_u64().unwrap() - 1,
        lines[1].as_u64().unwrap() - 1,
    );
    json!({ "start": { "line": first, "character": 0 }, "end": { "line": last, "character": 200 } })
}

/// `patchwise.edit` with `wait: true`: the answer is the proposal, and the run's
/// `patchwise/runFinished` (sent before it) says the same.
fn edit(setup: &mut Setup, s: &Value) -> Result<Value, ResponseError> {
    let args = json!({ "uri": setup.uri, "range": lines_range(s), "instruction": s["instruction"], "wait": true });
    let answer = setup.server.command("patchwise.edit", args);
    let finished = setup.server.notification::<RunFinished>();
    assert_eq!(finished.kind, "edit", "{finished:?}");
    match &answer {
        Ok(proposal) => {
            assert!(finished.ok, "{finished:?}");
            assert_eq!(finished.proposal.as_ref(), Some(proposal));
        }
        Err(e) => {
            assert!(!finished.ok, "{finished:?}");
            assert_eq!(finished.error.as_deref(), Some(e.message.as_str()));
        }
    }
    answer
}

/// Applies the edits of a `workspace/applyEdit` the way a client would, returning the new text.
fn apply_text_edits(text: &str, edits: &[TextEdit]) -> String {
    // UTF-16 positions; the fixtures are ASCII, so columns are bytes.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let offset = |p: Position| {
        let start = line_starts
            .get(p.line as usize)
            .copied()
            .unwrap_or(text.len());
        (start + p.character as usize).min(text.len())
    };
    let mut ranges: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                offset(e.range.start),
                offset(e.range.end),
                e.new_text.clone(),
            )
        })
        .collect();
    ranges.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut out = text.to_owned();
    for (start, end, new) in ranges {
        out.replace_range(start..end, &new);
    }
    out
}

/// The first of the `documentChanges` of an applied edit, which must edit a text document.
fn first_document_edit(params: &ApplyWorkspaceEditParams) -> &TextDocumentEdit {
    match &params.edit.document_changes {
        Some(DocumentChanges::Edits(edits)) => &edits[0],
        Some(DocumentChanges::Operations(operations)) => match &operations[0] {
            DocumentChangeOperation::Edit(edit) => edit,
            other => panic!("the first change is not a text edit: {other:?}"),
        },
        None => panic!("an edit without documentChanges: {params:?}"),
    }
}

fn command(setup: &mut Setup, name: &str, argument: Value) -> Result<Value, ResponseError> {
    setup.server.command(name, argument)
}

fn code_lenses(setup: &mut Setup) -> Vec<CodeLens> {
    setup
        .server
        .request::<CodeLensRequest>(CodeLensParams {
            text_document: TextDocumentIdentifier::new(setup.uri.clone()),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .expect("a list of code lenses")
}

fn lens_titles(lenses: &[CodeLens]) -> Vec<&str> {
    lenses
        .iter()
        .map(|l| l.command.as_ref().unwrap().title.as_str())
        .collect()
}

/// The first argument of a lens's command.
fn lens_argument(lens: &CodeLens) -> &Value {
    &lens.command.as_ref().unwrap().arguments.as_ref().unwrap()[0]
}

fn hover(setup: &mut Setup, line: u32, character: u32) -> Option<Hover> {
    setup.server.request::<HoverRequest>(HoverParams {
        text_document_position_params: TextDocumentPositionParams::new(
            TextDocumentIdentifier::new(setup.uri.clone()),
            Position::new(line, character),
        ),
        work_done_progress_params: WorkDoneProgressParams::default(),
    })
}

fn markup(hover: &Hover) -> &MarkupContent {
    match &hover.contents {
        HoverContents::Markup(markup) => markup,
        other => panic!("a hover that is not markup content: {other:?}"),
    }
}

/// The last diagnostics published for a document, read as they came before the last answer.
fn last_diagnostics(setup: &mut Setup) -> Vec<Diagnostic> {
    setup
        .server
        .received::<PublishDiagnostics>()
        .pop()
        .expect("diagnostics were published")
        .diagnostics
}

fn assert_disk_untouched(setup: &Setup) {
    assert_eq!(
        std::fs::read_to_string(&setup.file).unwrap(),
        setup.disk_before,
        "the server wrote to the workspace on disk"
    );
    let entries: Vec<_> = std::fs::read_dir(&setup.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut entries = entries;
    entries.sort();
    assert_eq!(
        entries,
        ["AGENTS.md", "src"],
        "new files appeared in the workspace"
    );
}

fn view(setup: &mut Setup) -> String {
    let uri = setup.uri.clone();
    setup.server.view(&uri).unwrap()
}

/// Accepts proposal `id`, checks the `workspace/applyEdit` and that the proposal's diagnostics
/// were cleared, plays the client applying it, and returns the document text afterwards.
fn accept(setup: &mut Setup, id: &Value, version: i32) -> String {
    let result = command(setup, "patchwise.proposal.accept", json!({ "id": id })).unwrap();
    assert_eq!(result, json!({ "applied": true }));
    let params = setup
        .server
        .received_requests::<ApplyWorkspaceEdit>()
        .pop()
        .expect("the server sent workspace/applyEdit");
    assert!(
        params
            .label
            .as_deref()
            .is_some_and(|l| l.starts_with("patchwise: ")),
        "{params:?}"
    );
    let change = first_document_edit(&params);
    assert_eq!(change.text_document.uri, setup.uri);
    assert_eq!(change.text_document.version, Some(version - 1));
    let edits = text_edits(change);
    assert_eq!(
        last_diagnostics(setup),
        [],
        "the accepted proposal still shows"
    );
    let before = view(setup);
    let after = apply_text_edits(&before, &edits);
    let uri = setup.uri.clone();
    setup.server.change(&uri, version, vec![whole(&after)]);
    assert_eq!(view(setup), after);
    after
}

#[test]
fn misindented_edit_becomes_a_proposal_with_hover_lens_and_diagnostic_then_applies() {
    let (s, replies) = edit_scenario("misindented");
    let mut setup = setup(replies, "native", true, None);
    let result = edit(&mut setup, &s).unwrap();
    let id = result["id"].clone();
    let diff = result["diff"].as_str().unwrap();
    assert!(
        diff.contains("-        let total = self.x.abs() + self.y.abs();"),
        "{diff}"
    );
    assert!(
        diff.contains("+        self.x.abs() + self.y.abs()"),
        "{diff}"
    );
    // The model saw the workspace rules and the target (rewrite protocol: once, with its lines).
    let first = setup.model.requests()[0].json().to_string();
    assert!(first.contains("Keep functions short"), "{first}");
    assert!(first.contains("method `norm1` (lines 13-16)"), "{first}");
    assert!(
        first.contains("    pub fn norm1(&self) -> i32 {"),
        "{first}"
    );

    // Progress: created, begun, reported, ended.
    assert!(
        !setup
            .server
            .received_requests::<WorkDoneProgressCreate>()
            .is_empty()
    );
    let progress = setup.server.received_progress();
    assert!(
        matches!(progress.first(), Some(WorkDoneProgress::Begin(_))),
        "{progress:?}"
    );
    assert!(
        matches!(progress.last(), Some(WorkDoneProgress::End(_))),
        "{progress:?}"
    );
    assert!(
        progress
            .iter()
            .any(|p| progress_message(p).is_some_and(|m| m.contains("asking")))
    );
    let diagnostics = setup
        .server
        .received::<PublishDiagnostics>()
        .pop()
        .expect("diagnostics for the proposal");
    let diagnostic = &diagnostics.diagnostics[0];
    assert_eq!(diagnostic.source.as_deref(), Some("patchwise"));
    assert_eq!(diagnostic.severity, Some(DiagnosticSeverity::INFORMATION));
    assert_eq!(diagnostic.range.start.line, 13);

    // Hover on the changed line shows the diff, the model, attempts and the matching pass.
    let shown = hover(&mut setup, 13, 10).expect("a hover on the changed line");
    let markdown = markup(&shown).value.as_str();
    assert!(markdown.contains("```diff\n"), "{markdown}");
    assert!(markdown.contains("fake/test-model"), "{markdown}");
    assert!(markdown.contains("1 attempt"), "{markdown}");
    assert!(markdown.contains("indentation(+4)"), "{markdown}");
    // No hover away from the proposal.
    assert_eq!(hover(&mut setup, 2, 0), None);

    let lenses = code_lenses(&mut setup);
    assert_eq!(lens_titles(&lenses), ["Accept", "Reject", "Diff"]);
    assert_eq!(lens_argument(&lenses[0])["id"], id);

    let shown_diff = command(&mut setup, "patchwise.proposal.diff", json!({ "id": id })).unwrap();
    assert_eq!(shown_diff.as_str().unwrap(), diff);
    // This client opens documents: the diff is shown as one.
    let opened = setup.server.server_request::<ShowDocument>();
    assert!(opened.uri.as_str().ends_with(".diff"), "{:?}", opened.uri);

    // What the user sees, as snapshots (temporary paths replaced by $WS).
    let ws = path_uri(&setup.root).as_str().to_owned();
    let pretty = |v: Value| {
        serde_json::to_string_pretty(&v)
            .unwrap()
            .replace(&ws, "$WS")
            + "\n"
    };
    snapshot("lsp/edit/snapshots/hover.md", &format!("{markdown}\n"));
    snapshot(
        "lsp/edit/snapshots/code_lens.json",
        &pretty(serde_json::to_value(&lenses).unwrap()),
    );
    snapshot(
        "lsp/edit/snapshots/diagnostics.json",
        &pretty(serde_json::to_value(&diagnostics).unwrap()),
    );

    assert_disk_untouched(&setup);
    let after = accept(&mut setup, &id, 2);
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    // Accepted: the lens, hover and diagnostic are gone, and it cannot be accepted twice.
    assert_eq!(code_lenses(&mut setup), []);
    let again = command(&mut setup, "patchwise.proposal.accept", json!({ "id": id })).unwrap_err();
    assert!(again.message.contains("no pending proposal"), "{again:?}");
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

#[test]
fn ambiguous_edit_is_refused_then_retried_with_more_context() {
    let (s, replies) = edit_scenario("ambiguous_then_context");
    let mut setup = setup(replies, "native", false, None);
    let result = edit(&mut setup, &s).unwrap();
    // The refusal went back to the model, naming both places.
    let requests = setup.model.requests();
    assert_eq!(requests.len(), 3);
    let second = requests[1].json().to_string();
    assert!(second.contains("14") && second.contains("19"), "{second}");
    let id = result["id"].clone();
    let _ = last_diagnostics(&mut setup);
    let after = accept(&mut setup, &id, 2);
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

#[test]
fn when_every_attempt_fails_the_user_is_told_and_nothing_changes() {
    let (s, replies) = edit_scenario("every_attempt_fails");
    let mut setup = setup(replies, "native", false, None);
    let before = view(&mut setup);
    let err = edit(&mut setup, &s).unwrap_err();
    assert!(err.message.contains("no proposal"), "{}", err.message);
    assert!(err.message.contains("3 attempts"), "{}", err.message);
    assert_eq!(view(&mut setup), before);
    assert!(
        setup
            .server
            .received_requests::<ApplyWorkspaceEdit>()
            .is_empty()
    );
    assert_eq!(code_lenses(&mut setup), []);
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

#[test]
fn a_model_without_tool_support_uses_the_text_format() {
    let (s, replies) = edit_scenario("text_tools");
    let mut setup = setup(replies, "text", false, None);
    let result = edit(&mut setup, &s).unwrap();
    // No native tools were offered to this model.
    let first = setup.model.requests()[0].json();
    assert!(first.get("tools").is_none(), "{first}");
    let _ = last_diagnostics(&mut setup);
    let after = accept(&mut setup, &result["id"], 2);
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    setup.server.shutdown();
}

#[test]
fn a_hung_model_is_cancelled_by_the_user() {
    for how in ["command", "progress"] {
        let mut setup = setup(vec![Reply::Hang], "native", false, None);
        let s = scenario("misindented");
        let args = json!({ "uri": setup.uri, "range": lines_range(&s), "instruction": "anything", "wait": true });
        let id = setup
            .server
            .send_request::<ExecuteCommand>(ExecuteCommandParams {
                command: "patchwise.edit".to_owned(),
                arguments: vec![args],
                work_done_progress_params: WorkDoneProgressParams::default(),
            });
        // Wait until the run has asked the model, then cancel it.
        let token = setup
            .server
            .server_request::<WorkDoneProgressCreate>()
            .token;
        let model = &setup.model;
        setup
            .server
            .wait_until("the model to be asked", || !model.requests().is_empty());
        match how {
            "command" => {
                let cancelled =
                    command(&mut setup, "patchwise.cancel", json!({ "id": token })).unwrap();
                assert_eq!(cancelled, json!({ "cancelled": 1 }));
            }
            _ => setup
                .server
                .notify::<WorkDoneProgressCancel>(WorkDoneProgressCancelParams { token }),
        }
        let err = setup.server.response::<ExecuteCommand>(id).unwrap_err();
        assert!(err.message.contains("cancelled"), "{how}: {err:?}");
        let finished = setup.server.notification::<RunFinished>();
        assert_eq!(finished.cancelled, Some(true), "{how}: {finished:?}");
        assert_disk_untouched(&setup);
        setup.server.shutdown();
    }
}

#[test]
fn a_user_edit_elsewhere_moves_the_proposal_and_one_on_the_target_makes_it_stale() {
    let (s, replies) = edit_scenario("misindented");
    let mut setup = setup(replies, "native", false, None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
    let _ = last_diagnostics(&mut setup);
    // Two lines inserted at the top: the proposal follows.
    let uri = setup.uri.clone();
    setup
        .server
        .change(&uri, 2, vec![ranged((0, 0), (0, 0), "// one\n// two\n")]);
    let lenses = code_lenses(&mut setup);
    assert_eq!(lenses[0].range.start.line, 15, "{lenses:?}");
    let after = accept(&mut setup, &id, 3);
    assert!(after.starts_with("// one\n// two\n//! Geometry"), "{after}");
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    setup.server.shutdown();

    // Now a change on the very lines the proposal replaces.
    let (s, replies) = edit_scenario("misindented");
    let mut setup = self::setup(replies, "native", false, None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
    let _ = last_diagnostics(&mut setup);
    let uri = setup.uri.clone();
    setup
        .server
        .change(&uri, 2, vec![ranged((13, 12), (13, 17), "sum")]);
    let err = command(&mut setup, "patchwise.proposal.accept", json!({ "id": id })).unwrap_err();
    assert!(err.message.contains("stale"), "{err:?}");
    // The user is told, once the edit made it stale.
    let told = setup.server.notification::<ShowMessage>();
    assert!(told.message.contains("is stale"), "{}", told.message);
    let cleared = setup.server.notification::<PublishDiagnostics>();
    assert_eq!(cleared.diagnostics, [], "a stale proposal still shows");
    let text = view(&mut setup);
    assert!(text.contains("let sum = self.x.abs()"), "{text}");
    assert!(
        setup
            .server
            .received_requests::<ApplyWorkspaceEdit>()
            .is_empty()
    );
    setup.server.shutdown();
}

fn code_actions(
    setup: &mut Setup,
    line: u32,
    diagnostics: Vec<Diagnostic>,
) -> Vec<TaggedCodeAction> {
    setup
        .server
        .request::<CodeActions>(CodeActionParams {
            text_document: TextDocumentIdentifier::new(setup.uri.clone()),
            range: Range::new(Position::new(line, 0), Position::new(line, 0)),
            context: CodeActionContext {
                diagnostics,
                ..CodeActionContext::default()
            },
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .expect("a list of code actions")
}

#[test]
fn code_actions_offer_commands_and_never_call_the_model() {
    let (s, replies) = edit_scenario("instruction_comment");
    let disk = std::fs::read_to_string(fixtures().join("workspace/src/lib.rs")).unwrap();
    let with_comment = disk.replacen(
        "    pub fn norm1",
        &format!("{}    pub fn norm1", s["comment"].as_str().unwrap()),
        1,
    );
    let mut setup = setup(replies, "native", false, Some(&with_comment));
    let diagnostic = Diagnostic {
        range: Range::new(Position::new(14, 8), Position::new(14, 13)),
        severity: Some(DiagnosticSeverity::WARNING),
        source: Some("rust-analyzer".to_owned()),
        message: "unused variable: `total`".to_owned(),
        ..Diagnostic::default()
    };
    let actions = code_actions(&mut setup, 12, vec![diagnostic]);
    assert_eq!(
        titles(&actions),
        [
            "Apply instruction: document norm1",
            "Fix with model: unused variable: `total`",
            "Edit selection…",
            "Develop…"
        ]
    );
    assert!(
        setup.model.requests().is_empty(),
        "a code action called the model"
    );
    // Each of them starts a model run: tagged LLMGenerated for this client (LSP 3.18).
    for action in &actions {
        assert_eq!(action.tags, Some(vec![1]), "{action:?}");
        assert!(action.action.data.is_none(), "{action:?}");
    }
    // "Edit selection…" leaves the instruction to the client.
    let edit_selection = actions[2].action.command.as_ref().unwrap();
    assert_eq!(edit_selection.command, "patchwise.editSelection");
    assert!(
        edit_selection.arguments.as_ref().unwrap()[0]
            .get("instruction")
            .is_none()
    );
    assert_eq!(
        actions[1]
            .action
            .command
            .as_ref()
            .unwrap()
            .arguments
            .as_ref()
            .unwrap()[0]["instruction"],
        "Fix this problem reported by rust-analyzer: unused variable: `total`"
    );

    // Apply the instruction: the proposal documents norm1 and removes the comment.
    let mut command = actions[0].action.command.clone().unwrap();
    command.arguments.as_mut().unwrap()[0]["wait"] = json!(true);
    let result = setup.server.execute(&command).unwrap();
    assert!(setup.server.notification::<RunFinished>().ok);
    let _ = last_diagnostics(&mut setup);
    // While its proposal is pending, the comment offers the proposal, not a second run.
    let pending = code_actions(&mut setup, 12, vec![]);
    assert!(
        !titles(&pending)
            .iter()
            .any(|t| t.starts_with("Apply instruction"))
            && titles(&pending)
                .iter()
                .any(|t| t.starts_with("Accept proposal")),
        "{:?}",
        titles(&pending)
    );
    let after = accept(&mut setup, &result["id"], 2);
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    assert!(!after.contains("patchwise:"), "{after}");
    // With the proposal gone there are no Accept/Reject actions; a pending one offers them.
    setup.server.shutdown();
}

#[test]
fn an_edit_without_instruction_or_on_an_unsaved_buffer_is_a_clear_error() {
    let mut setup = setup(vec![], "native", false, None);
    let uri = setup.uri.clone();
    let err = command(
        &mut setup,
        "patchwise.editSelection",
        json!({ "uri": uri, "range": lines_range(&scenario("misindented")) }),
    )
    .unwrap_err();
    assert!(err.message.contains("no instruction"), "{err:?}");
    let err = command(&mut setup, "patchwise.edit", json!({ "uri": "untitled:Untitled-1", "range": lines_range(&scenario("misindented")), "instruction": "x" }))
        .unwrap_err();
    assert!(err.message.contains("save it first"), "{err:?}");
    let err = setup
        .server
        .request_err::<ExecuteCommand>(ExecuteCommandParams {
            command: "patchwise.proposal.accept".to_owned(),
            arguments: vec![],
            work_done_progress_params: WorkDoneProgressParams::default(),
        });
    assert_eq!(err.code, -32602);
    let err = setup
        .server
        .request_err::<ExecuteCommand>(ExecuteCommandParams {
            command: "patchwise.nope".to_owned(),
            ..ExecuteCommandParams::default()
        });
    assert!(err.message.contains("unknown command"), "{err:?}");
    assert!(setup.model.requests().is_empty());
    setup.server.shutdown();
}

/// The capabilities of a client that is not ours (`fixtures/lsp/clients/eglot.json`), as it
/// sends them.
fn eglot() -> Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/lsp/clients/eglot.json"),
    )
    .unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["capabilities"].clone()
}

fn titles(actions: &[TaggedCodeAction]) -> Vec<&str> {
    actions.iter().map(|a| a.action.title.as_str()).collect()
}

fn run_action(
    setup: &mut Setup,
    actions: &[TaggedCodeAction],
    title_starts: &str,
) -> Result<Value, ResponseError> {
    let action = actions
        .iter()
        .find(|a| a.action.title.starts_with(title_starts))
        .unwrap_or_else(|| panic!("no action {title_starts:?} in {:?}", titles(actions)));
    let command = action.action.command.clone().expect("the action's command");
    setup.server.execute(&command)
}

/// A client that is not ours: the instruction-comment flow as Emacs + eglot runs it.
#[test]
fn a_client_without_lenses_or_markdown_gets_an_immediate_answer_and_plain_words() {
    let (s, replies) = edit_scenario("instruction_comment");
    let disk = std::fs::read_to_string(fixtures().join("workspace/src/lib.rs")).unwrap();
    let with_comment = disk.replacen(
        "    pub fn norm1",
        &format!("{}    pub fn norm1", s["comment"].as_str().unwrap()),
        1,
    );
    let mut setup = setup_for(replies, "native", eglot(), Some(&with_comment));
    let actions = code_actions(&mut setup, 12, vec![]);
    // No dead "Edit selection…" or "Develop…": this client cannot ask for an instruction.
    assert_eq!(titles(&actions), ["Apply instruction: document norm1"]);
    // No tags for a client that did not declare them, and no trace of the mark.
    assert!(actions[0].tags.is_none(), "{actions:?}");
    assert!(actions[0].action.data.is_none(), "{actions:?}");

    // The command answers at once with the run id; the rest comes as notifications.
    let answer = run_action(&mut setup, &actions, "Apply instruction").unwrap();
    let run_id = answer["runId"].as_str().unwrap().to_owned();
    assert_eq!(answer.as_object().unwrap().len(), 1, "{answer}");
    let finished = setup.server.notification::<RunFinished>();
    assert_eq!(finished.run_id, run_id);
    assert!(finished.ok, "{finished:?}");
    let id = finished.proposal.as_ref().expect("the proposal")["id"].clone();
    let shown: Vec<String> = setup
        .server
        .received::<ShowMessage>()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert!(
        shown
            .iter()
            .any(|m| m.contains(&format!("proposal {id} ready")) && m.contains("code actions")),
        "{shown:?}"
    );
    // Without progress support, a message says the run started (it came before the answer).
    assert!(shown[0].contains("working on: document norm1"), "{shown:?}");
    let diagnostics = last_diagnostics(&mut setup);
    let message = &diagnostics[0].message;
    assert!(
        message.contains(&format!("\"Accept proposal {id}\"")) && !message.contains("code lens"),
        "{message}"
    );

    // Plain-text hover, as declared.
    let shown_hover = hover(&mut setup, 12, 4).expect("a hover on the proposal");
    let content = markup(&shown_hover);
    assert_eq!(content.kind, MarkupKind::PlainText, "{shown_hover:?}");
    let text = &content.value;
    assert!(!text.contains("```") && !text.contains("**"), "{text}");
    assert!(text.contains("+    /// "), "{text}");

    // "Show diff" shows it: this client cannot open documents, so as a message, before the
    // command's answer.
    let actions = code_actions(&mut setup, 12, vec![]);
    // The comment's proposal is pending: no second run for the same comment.
    assert!(
        !titles(&actions)
            .iter()
            .any(|t| t.starts_with("Apply instruction")),
        "{:?}",
        titles(&actions)
    );
    let diff = run_action(&mut setup, &actions, "Show diff of proposal").unwrap();
    let shown = setup.server.received::<ShowMessage>();
    assert!(
        shown
            .iter()
            .any(|m| m.message.contains(diff.as_str().unwrap())),
        "{shown:?}"
    );

    // Accept carries its edit: eglot applies a code action's edit without asking (it asks
    // "Server wants to edit … Proceed?" before a workspace/applyEdit the server sends).
    let accept = actions
        .iter()
        .find(|a| a.action.title.starts_with("Accept proposal"))
        .expect("Accept");
    assert!(accept.action.command.is_none(), "{accept:?}");
    let edit = accept.action.edit.clone().expect("the action's edit");
    let edits = text_edits(first_document_edit(&ApplyWorkspaceEditParams {
        label: None,
        edit,
    }));
    let after = apply_text_edits(&with_comment, &edits);
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    // The client applies it and reports the change: the proposal is done, nothing more shows.
    let uri = setup.uri.clone();
    setup.server.change(&uri, 2, vec![whole(&after)]);
    assert_eq!(view(&mut setup), after);
    let published = setup.server.notification::<PublishDiagnostics>();
    assert_eq!(published.diagnostics, []);
    assert_eq!(command_list(&mut setup), json!([]));
    assert!(
        setup
            .server
            .received_requests::<ApplyWorkspaceEdit>()
            .is_empty()
    );
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

/// A proposal with two hunks is reviewed hunk by hunk.
#[test]
fn hunks_are_accepted_and_rejected_one_by_one() {
    let (s, replies) = edit_scenario("two_hunks");
    let mut setup = setup(replies, "native", false, None);
    let result = edit(&mut setup, &s).unwrap();
    let id = result["id"].clone();
    let _ = last_diagnostics(&mut setup);
    let lenses = code_lenses(&mut setup);
    let shown: Vec<(u32, &str, Value)> = lenses
        .iter()
        .map(|l| {
            (
                l.range.start.line,
                l.command.as_ref().unwrap().title.as_str(),
                lens_argument(l)["hunk"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (7, "Accept all", Value::Null),
            (7, "Reject all", Value::Null),
            (7, "Diff", Value::Null),
            (7, "Accept hunk", json!(1)),
            (7, "Reject hunk", json!(1)),
            (19, "Accept hunk", json!(2)),
            (19, "Reject hunk", json!(2)),
        ],
        "{lenses:?}"
    );
    let list = command(&mut setup, "patchwise.proposal.list", json!({})).unwrap();
    assert_eq!(list[0]["id"], id);
    assert_eq!(list[0]["stale"], Value::Null);
    let hunks = &list[0]["files"][0]["hunks"];
    assert_eq!(hunks.as_array().unwrap().len(), 2, "{list}");
    assert_eq!(list[0]["files"][0]["uri"], setup.uri.as_str());

    // Accept the second hunk only: one edit, and the first hunk stays, re-based.
    let answer = command(
        &mut setup,
        "patchwise.proposal.accept",
        json!({ "id": id, "hunk": 2 }),
    )
    .unwrap();
    assert_eq!(answer, json!({ "applied": true }));
    let request = setup
        .server
        .received_requests::<ApplyWorkspaceEdit>()
        .into_iter()
        .next()
        .unwrap();
    let edits = text_edits(first_document_edit(&request));
    assert_eq!(edits.len(), 1);
    assert_eq!(
        last_diagnostics(&mut setup).len(),
        1,
        "the first hunk still shows"
    );
    let before = view(&mut setup);
    let after = apply_text_edits(&before, &edits);
    assert!(after.contains("        total.max(0)\n"), "{after}");
    assert!(!after.contains("/// A point at (x, y)."), "{after}");
    let uri = setup.uri.clone();
    setup.server.change(&uri, 2, vec![whole(&after)]);
    let lenses = code_lenses(&mut setup);
    assert_eq!(
        lens_titles(&lenses),
        ["Accept", "Reject", "Diff"],
        "{lenses:?}"
    );
    // The proposed text of the file is the document with the remaining hunk.
    let proposed = setup
        .server
        .request::<ProposalContent>(ProposalContentParams {
            id: id.clone(),
            uri: uri.clone(),
        });
    assert_eq!(
        proposed,
        after.replace(
            "    pub fn new",
            "    /// A point at (x, y).\n    pub fn new"
        )
    );
    let diff = command(
        &mut setup,
        "patchwise.proposal.diff",
        json!({ "id": id, "show": false }),
    )
    .unwrap();
    let diff = diff.as_str().unwrap();
    assert!(
        diff.contains("+    /// A point at (x, y).") && !diff.contains("+        total.max"),
        "{diff}"
    );

    // Reject the last hunk: the proposal is gone.
    command(
        &mut setup,
        "patchwise.proposal.reject",
        json!({ "id": id, "hunk": 1 }),
    )
    .unwrap();
    assert_eq!(
        last_diagnostics(&mut setup),
        [],
        "the rejected proposal still shows"
    );
    assert_eq!(code_lenses(&mut setup), []);
    assert_eq!(
        command(&mut setup, "patchwise.proposal.list", json!({})).unwrap(),
        json!([])
    );
    let err = command(
        &mut setup,
        "patchwise.proposal.accept",
        json!({ "id": id, "hunk": 1 }),
    )
    .unwrap_err();
    assert!(err.message.contains("no pending proposal"), "{err:?}");
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

/// Changes a line apart are one hunk, as in a unified diff: an instruction comment removed
/// above `norm1` and a line of its body changed make one hunk whose hover shows the function as
/// it will be (the comment gone, `pub fn norm1` kept as context, the new body line after it),
/// with one set of lenses, and which accepts as one.
#[test]
fn changes_a_line_apart_are_one_hunk_whose_hover_shows_the_result() {
    let disk = std::fs::read_to_string(fixtures().join("workspace/src/lib.rs")).unwrap();
    let comment = "    // patchwise: add the absolute values without overflow\n";
    let with_comment = disk.replacen("    pub fn norm1", &format!("{comment}    pub fn norm1"), 1);
    let replies = vec![
        sse(&json!({ "calls": [{ "name": "edit_file", "arguments": {
            "path": "src/lib.rs",
            "old_string": "    pub fn norm1(&self) -> i32 {\n        let total = self.x.abs() + self.y.abs();",
            "new_string": "    pub fn norm1(&self) -> i32 {\n        let total = self.x.abs().saturating_add(self.y.abs());" } }] })),
        sse(&json!({ "text": "Done." })),
    ];
    let mut setup = setup(replies, "native", false, Some(&with_comment));
    let actions = code_actions(&mut setup, 12, vec![]);
    let mut apply = actions
        .iter()
        .find(|a| a.action.title.starts_with("Apply instruction"))
        .and_then(|a| a.action.command.clone())
        .expect("Apply instruction");
    apply.arguments.as_mut().unwrap()[0]["wait"] = json!(true);
    let result = setup.server.execute(&apply).unwrap();
    assert!(setup.server.notification::<RunFinished>().ok);
    let id = result["id"].clone();
    let _ = last_diagnostics(&mut setup);

    let list = command_list(&mut setup);
    assert_eq!(
        list[0]["files"][0]["hunks"].as_array().unwrap().len(),
        1,
        "{list}"
    );
    let lenses = code_lenses(&mut setup);
    assert_eq!(
        lens_titles(&lenses),
        ["Accept", "Reject", "Diff"],
        "{lenses:?}"
    );
    // The hover on the instruction line, where the cursor and the diagnostic are, shows the
    // function as it will be.
    let shown = hover(&mut setup, 12, 4).expect("a hover on the instruction line");
    let text = &markup(&shown).value;
    let expected = "-    // patchwise: add the absolute values without overflow\n     pub fn norm1(&self) -> i32 {\n-        let total = self.x.abs() + self.y.abs();\n+        let total = self.x.abs().saturating_add(self.y.abs());\n";
    assert!(text.contains(expected), "{text}");

    // The one hunk accepts as one.
    let answer = command(
        &mut setup,
        "patchwise.proposal.accept",
        json!({ "id": id, "hunk": 1 }),
    )
    .unwrap();
    assert_eq!(answer, json!({ "applied": true }));
    let request = setup
        .server
        .received_requests::<ApplyWorkspaceEdit>()
        .pop()
        .unwrap();
    let edits = text_edits(first_document_edit(&request));
    let after = apply_text_edits(&with_comment, &edits);
    assert_eq!(
        after,
        disk.replacen(
            "self.x.abs() + self.y.abs();",
            "self.x.abs().saturating_add(self.y.abs());",
            1
        )
    );
    assert_eq!(last_diagnostics(&mut setup), []);
    setup.server.shutdown();
}

fn command_list(setup: &mut Setup) -> Value {
    command(setup, "patchwise.proposal.list", json!({})).unwrap()
}

/// Pending proposals survive a restart, and come back stale when their target changed.
#[test]
fn proposals_survive_a_restart_and_go_stale_when_the_file_changed() {
    let (s, replies) = edit_scenario("misindented");
    let mut setup = setup(replies, "native", false, None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
    let _ = last_diagnostics(&mut setup);
    let diff = command(
        &mut setup,
        "patchwise.proposal.diff",
        json!({ "id": id, "show": false }),
    )
    .unwrap();

    restart(&mut setup, capabilities(false));
    let list = command(&mut setup, "patchwise.proposal.list", json!({})).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["id"], id);
    assert_eq!(list[0]["instruction"], s["instruction"]);
    assert_eq!(list[0]["model"], "fake/test-model");
    assert!(list[0]["createdAt"].as_str().is_some(), "{list}");
    assert_eq!(list[0]["stale"], Value::Null);
    // Opening the document shows it again, with its diagnostic, and it applies.
    let text = setup.disk_before.clone();
    open_doc(&mut setup, &text);
    let published = setup.server.notification::<PublishDiagnostics>();
    assert_eq!(
        published.diagnostics[0].source.as_deref(),
        Some("patchwise")
    );
    let again = command(
        &mut setup,
        "patchwise.proposal.diff",
        json!({ "id": id, "show": false }),
    )
    .unwrap();
    assert_eq!(again, diff);
    let after = accept(&mut setup, &id, 2);
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");

    // Accepted: gone after the next restart too.
    restart(&mut setup, capabilities(false));
    let list = command(&mut setup, "patchwise.proposal.list", json!({})).unwrap();
    assert_eq!(list, json!([]));
    setup.server.shutdown();

    // A proposal whose target was edited on disk while the server was away is stale.
    let (s, replies) = edit_scenario("misindented");
    let mut setup = self::setup(replies, "native", false, None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
    let _ = last_diagnostics(&mut setup);
    let edited = setup.disk_before.replace(
        "        let total = self.x.abs() + self.y.abs();\n        total\n    }\n\n    pub fn manhattan",
        "        (self.x + self.y).abs()\n    }\n\n    pub fn manhattan",
    );
    std::fs::write(&setup.file, &edited).unwrap();
    restart(&mut setup, capabilities(false));
    let list = command(&mut setup, "patchwise.proposal.list", json!({})).unwrap();
    let stale = list[0]["stale"].as_str().unwrap_or_default();
    assert!(stale.contains("changed since"), "{list}");
    let err = command(&mut setup, "patchwise.proposal.accept", json!({ "id": id })).unwrap_err();
    assert!(err.message.contains("stale"), "{err:?}");
    // Rejected, it is forgotten.
    command(&mut setup, "patchwise.proposal.reject", json!({ "id": id })).unwrap();
    restart(&mut setup, capabilities(false));
    assert_eq!(
        command(&mut setup, "patchwise.proposal.list", json!({})).unwrap(),
        json!([])
    );
    setup.server.shutdown();
}

/// Where a proposal shows — insertions, deletions and replacements at the
/// first and at the last line of a file. Hover answers on every line a hunk touches (for an
/// insertion: the line before and the line after), diagnostics span whole lines, the lens
/// sits at the first of them. One snapshot holds every case.
#[test]
fn proposals_show_on_the_lines_they_touch_at_both_ends_of_a_file() {
    const TEXT: &str = "// first\nfn a() {}\n\nfn b() {}\n// last\n";
    // (case, target lines, old, new, lines a hover must answer on)
    type Case<'a> = (&'a str, [u64; 2], &'a str, &'a str, &'a [u32]);
    let cases: [Case; 7] = [
        (
            "insert_first",
            [1, 1],
            "// first",
            "// zeroth\n// first",
            &[0],
        ),
        ("replace_first", [1, 1], "// first", "// 1st", &[0]),
        (
            "delete_first",
            [1, 2],
            "// first\nfn a() {}",
            "fn a() {}",
            &[0],
        ),
        (
            "insert_middle",
            [4, 4],
            "fn b() {}",
            "fn b0() {}\nfn b() {}",
            &[2, 3],
        ),
        ("insert_last", [5, 5], "// last", "// last\n// after", &[4]),
        ("replace_last", [5, 5], "// last", "// final", &[4]),
        (
            "delete_last",
            [4, 5],
            "fn b() {}\n// last",
            "fn b() {}",
            &[4],
        ),
    ];
    let mut shown = serde_json::Map::new();
    for (case, lines, old, new, hover_lines) in cases {
        let replies = vec![
            sse(&json!({ "calls": [{ "name": "edit_file", "arguments": {
                "path": "src/lib.rs", "old_string": old, "new_string": new } }] })),
            sse(&json!({ "text": "Done." })),
        ];
        let mut setup = setup(replies, "native", false, Some(TEXT));
        let s = json!({ "lines": lines, "instruction": case });
        let result = edit(&mut setup, &s).unwrap_or_else(|e| panic!("{case}: {e:?}"));
        let diagnostics = last_diagnostics(&mut setup);
        let answered: Vec<u32> = (0..6)
            .filter(|&line| hover(&mut setup, line, 0).is_some())
            .collect();
        assert_eq!(answered, hover_lines, "{case}: hover lines");
        let range = diagnostics[0].range;
        assert_eq!(range.start.character, 0, "{case}: {range:?}");
        assert_ne!(
            range.start, range.end,
            "{case}: an empty range is drawn by no one"
        );
        let lenses = code_lenses(&mut setup);
        shown.insert(
            case.to_owned(),
            json!({
                "diff": result["diff"],
                "hover_lines": answered,
                "diagnostic_range": range,
                "lens_lines": lenses.iter().map(|l| l.range.start.line).collect::<Vec<_>>(),
            }),
        );
        setup.server.shutdown();
    }
    snapshot(
        "lsp/edit/snapshots/edges.json",
        &(serde_json::to_string_pretty(&Value::Object(shown)).unwrap() + "\n"),
    );
}

/// A client that resolves a code action's `edit` (VS Code, Neovim, …) gets "Accept" actions
/// without an edit or a command, and the edit from `codeAction/resolve`; applied, it finishes
/// the hunk it accepts and the other hunk stays pending.
#[test]
fn accept_actions_resolve_their_edit_and_the_change_finishes_the_hunk() {
    let (s, replies) = edit_scenario("two_hunks");
    let mut caps = capabilities(false);
    caps["textDocument"]["codeAction"]["resolveSupport"] = json!({ "properties": ["edit"] });
    let mut setup = setup_for(replies, "native", caps, None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
    let _ = last_diagnostics(&mut setup);
    let actions = code_actions(&mut setup, 19, vec![]);
    let accept = actions
        .iter()
        .find(|a| a.action.title.starts_with("Accept hunk 2"))
        .unwrap_or_else(|| panic!("{:?}", titles(&actions)));
    assert!(
        accept.action.command.is_none() && accept.action.edit.is_none(),
        "{accept:?}"
    );
    let resolved = setup
        .server
        .request::<tower_lsp_server::ls_types::request::CodeActionResolveRequest>(
            accept.action.clone(),
        );
    let edit = resolved.edit.clone().expect("the resolved edit");
    assert!(resolved.command.is_none(), "{resolved:?}");
    let edits = text_edits(first_document_edit(&ApplyWorkspaceEditParams {
        label: None,
        edit,
    }));
    let before = view(&mut setup);
    let after = apply_text_edits(&before, &edits);
    assert!(after.contains("        total.max(0)\n"), "{after}");
    let uri = setup.uri.clone();
    setup.server.change(&uri, 2, vec![whole(&after)]);
    let published = setup.server.notification::<PublishDiagnostics>();
    assert_eq!(published.diagnostics.len(), 1, "hunk 1 still shows");
    let list = command_list(&mut setup);
    assert_eq!(list[0]["id"], id);
    assert_eq!(list[0]["files"][0]["hunks"][0]["hunk"], 1, "{list}");
    assert_eq!(
        list[0]["files"][0]["hunks"].as_array().unwrap().len(),
        1,
        "{list}"
    );
    // Resolving an action of a proposal that is gone falls back to its command, which says so.
    command(&mut setup, "patchwise.proposal.reject", json!({ "id": id })).unwrap();
    assert_eq!(last_diagnostics(&mut setup), []);
    let resolved = setup
        .server
        .request::<tower_lsp_server::ls_types::request::CodeActionResolveRequest>(
            accept.action.clone(),
        );
    assert!(resolved.edit.is_none(), "{resolved:?}");
    assert_eq!(
        resolved.command.as_ref().map(|c| c.command.as_str()),
        Some("patchwise.proposal.accept")
    );
    assert!(
        setup
            .server
            .received_requests::<ApplyWorkspaceEdit>()
            .is_empty()
    );
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

/// A hunk the client accepts by applying an "Accept" action's own `edit` (eglot, VS Code,
/// Neovim) leaves the stored proposal at once, as an accept through the command does: a server
/// started after it (the editor restarted before the buffer was saved) offers only the other
/// hunk, not the accepted one again.
#[test]
fn a_hunk_accepted_through_a_code_action_edit_leaves_the_stored_proposal_at_once() {
    let (s, replies) = edit_scenario("two_hunks");
    let mut caps = capabilities(false);
    caps["textDocument"]["codeAction"]["resolveSupport"] = json!({ "properties": ["edit"] });
    let mut setup = setup_for(replies, "native", caps.clone(), None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
    let _ = last_diagnostics(&mut setup);
    let actions = code_actions(&mut setup, 19, vec![]);
    let accept = actions
        .iter()
        .find(|a| a.action.title.starts_with("Accept hunk 2"))
        .unwrap_or_else(|| panic!("{:?}", titles(&actions)));
    let resolved = setup
        .server
        .request::<tower_lsp_server::ls_types::request::CodeActionResolveRequest>(
            accept.action.clone(),
        );
    let edits = text_edits(first_document_edit(&ApplyWorkspaceEditParams {
        label: None,
        edit: resolved.edit.clone().expect("the resolved edit"),
    }));
    let before = view(&mut setup);
    let after = apply_text_edits(&before, &edits);
    let uri = setup.uri.clone();
    setup.server.change(&uri, 2, vec![whole(&after)]);
    let _ = setup.server.notification::<PublishDiagnostics>();
    let hunks = |list: &Value| -> Vec<Value> {
        list[0]["files"][0]["hunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["hunk"].clone())
            .collect()
    };
    let list = command_list(&mut setup);
    assert_eq!(hunks(&list), [json!(1)], "{list}");

    // The buffer was never saved; the next server reads the store and the file on disk.
    restart(&mut setup, caps);
    let list = command_list(&mut setup);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["id"], id);
    assert_eq!(
        hunks(&list),
        [json!(1)],
        "the accepted hunk is offered again: {list}"
    );
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}
