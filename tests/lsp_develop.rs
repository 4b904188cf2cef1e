//! Develop in the editor, end to end: the real binary over stdio, the planner and the coder as
//! local servers speaking the OpenAI SSE format (the answers of the `rust_happy_path` develop
//! scenario), and the client side played by the harness: progress, the plan opened with
//! `window/showDocument`, approval through `window/showMessageRequest`, and accepting the
//! multi-file proposal as one `workspace/applyEdit` with a `CreateFile`. The code actions that
//! start develop — "Develop…" (the client supplies the request) and "Develop: …" on a
//! `patchwise develop:` comment — are run as a client runs them: their command as offered.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use patchwise::model::replay::ReplayServer;
use serde_json::{Value, json};
use support::client::{
    CodeActions, TaggedCodeAction, TestServer, created_files, document_edits, path_uri,
    progress_message, text_edits,
};
use support::{copy_dir, develop_models, tree};
use tower_lsp_server::ls_types::notification::{Progress, PublishDiagnostics, ShowMessage};
use tower_lsp_server::ls_types::request::{
    ApplyWorkspaceEdit, ShowDocument, ShowMessageRequest, WorkDoneProgressCreate,
};
use tower_lsp_server::ls_types::{
    ClientCapabilities, CodeActionContext, CodeActionParams, Command, MessageActionItem,
    NumberOrString, PartialResultParams, Position, Range, ResourceOperationKind,
    ShowDocumentClientCapabilities, TextDocumentIdentifier, Uri, WindowClientCapabilities,
    WorkDoneProgress, WorkDoneProgressParams, WorkspaceClientCapabilities, WorkspaceEdit,
    WorkspaceEditClientCapabilities,
};

fn fixtures() -> PathBuf {
    support::fixture("develop")
}

struct Setup {
    server: TestServer,
    _runtime: tokio::runtime::Runtime,
    _planner: ReplayServer,
    coder: ReplayServer,
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn setup(approve: &str) -> Setup {
    let edits = WorkspaceEditClientCapabilities {
        document_changes: Some(true),
        resource_operations: Some(vec![ResourceOperationKind::Create]),
        ..WorkspaceEditClientCapabilities::default()
    };
    setup_runs(approve, 1, edits)
}

/// A server whose planner and coder answer the happy-path scenario `runs` times over, for a
/// client whose `workspace.workspaceEdit` capabilities are `edits` and who answers the
/// approval question with `approve`.
///
/// Runs report progress; the test about it reads it, the others let it be.
fn setup_runs(approve: &str, runs: usize, edits: WorkspaceEditClientCapabilities) -> Setup {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_dir(&fixtures().join("rust"), &root);
    let (_, planner, coder, init) =
        develop_models(&runtime, "rust_happy_path", runs, &dir.path().join("data"));
    let capabilities = ClientCapabilities {
        // Like VS Code and the Neovim plugin: this client asks for the request of "Develop…".
        experimental: Some(json!({ "patchwise": { "instructionInput": true } })),
        window: Some(WindowClientCapabilities {
            work_done_progress: Some(true),
            show_document: Some(ShowDocumentClientCapabilities { support: true }),
            ..WindowClientCapabilities::default()
        }),
        workspace: Some(WorkspaceClientCapabilities {
            workspace_edit: Some(edits),
            ..WorkspaceClientCapabilities::default()
        }),
        ..ClientCapabilities::default()
    };
    let (mut server, _) = TestServer::builder()
        .config_home(&dir.path().join("config"))
        .capabilities(capabilities)
        .root(&root)
        .initialization_options(init)
        .reply::<ShowMessageRequest>(Some(MessageActionItem {
            title: approve.to_owned(),
            properties: HashMap::new(),
        }))
        .start();
    server.ignore_request::<WorkDoneProgressCreate>();
    server.ignore::<Progress>();
    // How each run ended, said to users whose client follows no runs.
    server.ignore::<ShowMessage>();
    Setup {
        server,
        _runtime: runtime,
        _planner: planner,
        coder,
        _dir: dir,
        root,
    }
}

/// Accepts proposal `id`: one `workspace/applyEdit`, whose edit is returned.
fn accept(setup: &mut Setup, id: &Value) -> WorkspaceEdit {
    let accepted = setup
        .server
        .command("patchwise.proposal.accept", json!({ "id": id }))
        .unwrap();
    assert_eq!(accepted, json!({ "applied": true }));
    let mut edits = setup.server.received_requests::<ApplyWorkspaceEdit>();
    assert_eq!(edits.len(), 1, "{edits:?}");
    edits.remove(0).edit
}

/// Asserts `edit` creates the file at `path`; returns its uri.
fn assert_creates(edit: &WorkspaceEdit, path: &Path) -> Uri {
    let uri = path_uri(path);
    assert!(created_files(edit).iter().any(|c| c.uri == uri), "{edit:?}");
    uri
}

/// The titles of code actions.
fn titles(actions: &[TaggedCodeAction]) -> Vec<&str> {
    actions.iter().map(|a| a.action.title.as_str()).collect()
}

/// The titles of the actions a message offers.
fn action_titles(actions: &Option<Vec<MessageActionItem>>) -> Vec<&str> {
    actions.iter().flatten().map(|a| a.title.as_str()).collect()
}

/// The proposals (`proposal-N`) the next diagnostics published for an open document show
/// (develop publishes them after its answer, so this waits).
fn pending_shown(setup: &mut Setup) -> Vec<String> {
    let published = setup.server.notification::<PublishDiagnostics>();
    let mut codes: Vec<String> = published
        .diagnostics
        .into_iter()
        .filter_map(|d| match d.code? {
            NumberOrString::String(code) => Some(code),
            NumberOrString::Number(n) => Some(n.to_string()),
        })
        .collect();
    codes.dedup();
    codes
}

/// Runs develop as a client follows it: the answer `{runId}` at once, the end in
/// `patchwise/runFinished` (its proposal, or the error), and the message that says it.
fn develop(setup: &mut Setup) -> Result<Value, String> {
    let request = "add a line_count function, print it in main, and add an integration test for it";
    setup
        .server
        .run_command("patchwise.develop", json!({ "request": request }))
}

#[test]
fn develop_shows_the_plan_asks_approval_and_accepts_as_one_workspace_edit() {
    let mut setup = setup("Approve");
    let before = tree(&setup.root);
    let result = develop(&mut setup).unwrap();
    assert_eq!(tree(&setup.root), before, "develop wrote to the workspace");
    let id = result["id"].clone();
    let diff = result["diff"].as_str().unwrap();
    assert!(diff.contains("tests/counts.rs (new file)"), "{diff}");
    // Progress with phases and percentages.
    let reports = setup.server.received_progress();
    assert!(
        reports
            .iter()
            .any(|v| progress_message(v).is_some_and(|m| m.contains("step 2/3"))),
        "{reports:?}"
    );
    assert!(
        reports
            .iter()
            .any(|v| matches!(v, WorkDoneProgress::End(_))),
        "{reports:?}"
    );
    // The plan document, then the question.
    let shown = setup
        .server
        .received_requests::<ShowDocument>()
        .into_iter()
        .next()
        .expect("the plan was shown");
    let plan_path = shown.uri.to_file_path().expect("the plan is a file");
    let plan = std::fs::read_to_string(&plan_path).unwrap();
    assert!(
        plan.contains("# Develop plan") && plan.contains("`tests/counts.rs`"),
        "{plan}"
    );
    let asked = setup
        .server
        .received_requests::<ShowMessageRequest>()
        .into_iter()
        .next()
        .expect("approval was asked");
    assert!(asked.message.contains("approve this plan"), "{asked:?}");
    assert_eq!(action_titles(&asked.actions), ["Approve", "Cancel"]);

    // Accept: one workspace/applyEdit over every file, the new one created.
    let edit = accept(&mut setup, &id);
    let created = assert_creates(&edit, &setup.root.join("tests/counts.rs"));
    // The new file's text spans its one (empty) line, so no client keeps an extra line.
    let fill = document_edits(&edit)
        .into_iter()
        .find(|e| e.text_document.uri == created)
        .unwrap();
    assert_eq!(
        text_edits(fill)[0].range,
        Range::new(Position::new(0, 0), Position::new(1, 0)),
        "{fill:?}"
    );
    for file in ["src/lib.rs", "src/main.rs", "tests/counts.rs"] {
        let uri = path_uri(&setup.root.join(file));
        assert!(
            document_edits(&edit)
                .iter()
                .any(|e| e.text_document.uri == uri),
            "{file}: {edit:?}"
        );
    }
    assert_eq!(setup.coder.requests().len(), 3);
    setup.server.shutdown();
}

#[test]
fn cancelling_the_plan_changes_nothing_and_says_so() {
    let mut setup = setup("Cancel");
    let before = tree(&setup.root);
    let error = develop(&mut setup).unwrap_err();
    assert!(error.contains("not approved"), "{error:?}");
    assert_eq!(tree(&setup.root), before);
    assert!(
        setup.coder.requests().is_empty(),
        "the coder ran without approval"
    );
    // What the user turned down: the plan, shown, and the question.
    assert_eq!(setup.server.received_requests::<ShowDocument>().len(), 1);
    assert_eq!(
        setup.server.received_requests::<ShowMessageRequest>().len(),
        1
    );
    setup.server.shutdown();
}

/// The two develop code actions on a `patchwise develop:` comment, run as offered: "Develop: …"
/// carries its request and the file; "Develop…" leaves the request to the client (sent without
/// it, the server says how to give it), which adds it and runs the same command. The client
/// declares file creation but not `documentChanges`, as Neovim 0.11 does.
#[test]
fn develop_code_actions_run_the_comment_request_and_the_client_supplied_one() {
    let mut setup = setup_runs(
        "Approve",
        2,
        WorkspaceEditClientCapabilities {
            resource_operations: Some(vec![ResourceOperationKind::Create]),
            ..WorkspaceEditClientCapabilities::default()
        },
    );
    let request = "add a line_count function, print it in main, and add an integration test for it";
    let main = setup.root.join("src/main.rs");
    let uri = path_uri(&main);
    let text = format!(
        "// patchwise develop: {request}\n{}",
        std::fs::read_to_string(&main).unwrap()
    );
    setup.server.open(&uri, "rust", &text, 1);
    let before = tree(&setup.root);
    let actions = setup
        .server
        .request::<CodeActions>(CodeActionParams {
            text_document: TextDocumentIdentifier::new(uri.clone()),
            range: Range::new(Position::new(0, 3), Position::new(0, 3)),
            context: CodeActionContext::default(),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .expect("a list of code actions");
    let comment_title = format!("Develop: {request}");
    assert_eq!(
        titles(&actions),
        [comment_title.as_str(), "Edit selection…", "Develop…"],
        "{actions:?}"
    );
    let command = |title: &str| -> Command {
        actions
            .iter()
            .find(|a| a.action.title == title)
            .unwrap()
            .action
            .command
            .clone()
            .expect("the action's command")
    };
    let from_comment = command(&comment_title);
    assert_eq!(from_comment.command, "patchwise.develop");
    assert_eq!(
        from_comment.arguments,
        Some(vec![
            json!({ "uri": uri, "request": request, "removeInstructionComment": true })
        ])
    );
    let supplied = command("Develop…");
    assert_eq!(supplied.command, "patchwise.develop");
    assert_eq!(supplied.arguments, Some(vec![json!({ "uri": uri })]));
    assert!(
        setup.coder.requests().is_empty(),
        "a code action called the model"
    );

    // "Develop: …" as offered: a run with the comment's request, focused on the file.
    let first = setup.server.run(&from_comment).unwrap();
    assert!(
        first["diff"]
            .as_str()
            .unwrap()
            .contains("tests/counts.rs (new file)"),
        "{first}"
    );
    assert_eq!(setup.coder.requests().len(), 3);
    assert!(
        !setup
            .server
            .received_requests::<ShowMessageRequest>()
            .is_empty(),
        "the plan was not put up for approval"
    );
    assert_eq!(setup.server.received_requests::<ShowDocument>().len(), 1);
    // The open file shows the proposal.
    assert_eq!(pending_shown(&mut setup), ["proposal-1"]);
    // The proposal removes the comment it came from, as "Apply instruction" does ...
    let comment_line = format!("-// patchwise develop: {request}\n");
    assert!(
        first["diff"].as_str().unwrap().contains(&comment_line),
        "{first}"
    );
    // ... and while it is pending, the comment does not offer a second run.
    let pending = setup
        .server
        .request::<CodeActions>(CodeActionParams {
            text_document: TextDocumentIdentifier::new(uri.clone()),
            range: Range::new(Position::new(0, 3), Position::new(0, 3)),
            context: CodeActionContext::default(),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .expect("a list of code actions");
    assert!(
        !titles(&pending).contains(&comment_title.as_str())
            && titles(&pending)
                .iter()
                .any(|t| t.starts_with("Accept proposal")),
        "{:?}",
        titles(&pending)
    );

    // "Develop…" as offered has no request: the error says how a client gives it.
    let error = setup.server.run(&supplied).unwrap_err();
    assert!(
        error.contains("no request given") && error.contains("patchwise develop:"),
        "{error:?}"
    );
    assert_eq!(setup.coder.requests().len(), 3, "a run without a request");
    // The client asks the user, adds the request and runs it.
    let mut asked = supplied.clone();
    asked.arguments.as_mut().unwrap()[0]["request"] = json!(request);
    let second = setup.server.run(&asked).unwrap();
    assert_ne!(second["id"], first["id"]);
    // A request the client supplied has no comment to remove.
    assert!(
        !second["diff"].as_str().unwrap().contains(&comment_line),
        "{second}"
    );
    assert_eq!(setup.coder.requests().len(), 6);
    assert_eq!(tree(&setup.root), before, "develop wrote to the workspace");
    assert_eq!(
        setup.server.received_requests::<ShowMessageRequest>().len(),
        1
    );
    assert_eq!(setup.server.received_requests::<ShowDocument>().len(), 1);
    assert_eq!(pending_shown(&mut setup), ["proposal-1", "proposal-2"]);

    let edit = accept(&mut setup, &second["id"]);
    // Accepted, the second proposal leaves the file; the first one still shows.
    assert_eq!(pending_shown(&mut setup), ["proposal-1"]);
    // The open buffer is edited at the version the run saw.
    assert!(
        document_edits(&edit)
            .iter()
            .any(|e| e.text_document.uri == uri && e.text_document.version == Some(1)),
        "{edit:?}"
    );
    assert_creates(&edit, &setup.root.join("tests/counts.rs"));
    setup.server.shutdown();
}
