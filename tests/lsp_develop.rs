//! Develop in the editor, end to end: the real binary over stdio, the planner and the coder as
//! local servers speaking the OpenAI SSE format (the answers of the `rust_happy_path` develop
//! scenario), and the client side played by the harness: progress, the plan opened with
//! `window/showDocument`, approval through `window/showMessageRequest`, and accepting the
//! multi-file proposal as one `workspace/applyEdit` with a `CreateFile`.

mod support;

use std::path::PathBuf;

use patchwise::model::replay::ReplayServer;
use serde_json::{Value, json};
use support::client::{ResponseError, TestServer, path_uri, showing_client};
use support::{Options, copy_dir, openai_sse, tree};
use tower_lsp_server::ls_types::notification::Progress;
use tower_lsp_server::ls_types::request::{
    ApplyWorkspaceEdit, ShowDocument, ShowMessageRequest, WorkDoneProgressCreate,
};
use tower_lsp_server::ls_types::{
    ClientCapabilities, DocumentChangeOperation, DocumentChanges, ProgressParamsValue, ResourceOp,
    ResourceOperationKind, WorkDoneProgress, WorkspaceClientCapabilities,
    WorkspaceEditClientCapabilities,
};

fn fixtures() -> PathBuf {
    support::fixture("develop")
}

/// Dropped in this order: the server shuts down (and checks nothing was left unread) before the
/// models and the directories go.
struct Setup {
    server: TestServer,
    _planner: ReplayServer,
    coder: ReplayServer,
    _runtime: tokio::runtime::Runtime,
    root: PathBuf,
    _dir: tempfile::TempDir,
}

fn setup(approve: &str) -> Setup {
    let scenario: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("scenarios/rust_happy_path.json")).unwrap(),
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let replies = |role: &str| {
        scenario[role]
            .as_array()
            .unwrap()
            .iter()
            .map(openai_sse)
            .collect()
    };
    let planner = runtime
        .block_on(ReplayServer::start(replies("planner")))
        .unwrap();
    let coder = runtime
        .block_on(ReplayServer::start(replies("coder")))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_dir(&fixtures().join("rust"), &root);
    let init = json!({
        "providers": {
            "plan": { "kind": "openai", "base_url": format!("{}/v1", planner.url()), "api_key_env": "" },
            "code": { "kind": "openai", "base_url": format!("{}/v1", coder.url()), "api_key_env": "" },
        },
        "roles": { "planner": "plan/planner-model", "coder": "code/coder-model" },
        "timeouts": { "connect": 5, "first_token": 60, "total": 120 },
        "retry": { "max_attempts": 1 },
        "data_dir": dir.path().join("data"),
    });
    let (mut server, _) = TestServer::builder()
        .options(Options {
            env: vec![(
                "XDG_CONFIG_HOME",
                dir.path().join("config").display().to_string(),
            )],
            ..Options::default()
        })
        .capabilities(ClientCapabilities {
            workspace: Some(WorkspaceClientCapabilities {
                workspace_edit: Some(WorkspaceEditClientCapabilities {
                    document_changes: Some(true),
                    resource_operations: Some(vec![ResourceOperationKind::Create]),
                    ..WorkspaceEditClientCapabilities::default()
                }),
                ..WorkspaceClientCapabilities::default()
            }),
            ..showing_client()
        })
        .root(&root)
        .initialization_options(init)
        .start();
    server.raw().replies.insert(
        "window/showMessageRequest".to_owned(),
        json!({ "title": approve }),
    );
    server.ignore_request::<WorkDoneProgressCreate>();
    Setup {
        server,
        _planner: planner,
        coder,
        _runtime: runtime,
        root,
        _dir: dir,
    }
}

fn develop(setup: &mut Setup) -> Result<Value, ResponseError> {
    let request = "add a line_count function, print it in main, and add an integration test for it";
    setup
        .server
        .command("patchwise.develop", json!({ "request": request }))
}

/// The progress messages received so far, and whether an `end` was among them.
fn progress(server: &mut TestServer) -> (Vec<String>, bool) {
    let mut messages = Vec::new();
    let mut ended = false;
    for p in server.received::<Progress>() {
        match p.value {
            ProgressParamsValue::WorkDone(WorkDoneProgress::Begin(b)) => messages.extend(b.message),
            ProgressParamsValue::WorkDone(WorkDoneProgress::Report(r)) => {
                messages.extend(r.message)
            }
            ProgressParamsValue::WorkDone(WorkDoneProgress::End(e)) => {
                ended = true;
                messages.extend(e.message);
            }
        }
    }
    (messages, ended)
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
    let (reports, ended) = progress(&mut setup.server);
    assert!(
        reports.iter().any(|m| m.contains("step 2/3")),
        "{reports:?}"
    );
    assert!(ended, "{reports:?}");
    // The plan document, then the question.
    let shown = setup.server.server_request::<ShowDocument>();
    let plan_path = shown.uri.to_file_path().expect("the plan is a file");
    let plan = std::fs::read_to_string(plan_path).unwrap();
    assert!(
        plan.contains("# Develop plan") && plan.contains("`tests/counts.rs`"),
        "{plan}"
    );
    let asked = setup.server.server_request::<ShowMessageRequest>();
    assert!(asked.message.contains("approve this plan"), "{asked:?}");
    let titles: Vec<String> = asked
        .actions
        .unwrap_or_default()
        .into_iter()
        .map(|a| a.title)
        .collect();
    assert_eq!(titles, ["Approve", "Cancel"]);

    // Accept: one workspace/applyEdit over every file, the new one created.
    let accepted = setup
        .server
        .command("patchwise.proposal.accept", json!({ "id": id }))
        .unwrap();
    assert_eq!(accepted, json!({ "applied": true }));
    let edit = setup.server.server_request::<ApplyWorkspaceEdit>().edit;
    let Some(DocumentChanges::Operations(changes)) = edit.document_changes else {
        panic!("expected document changes with operations: {edit:?}");
    };
    let created = path_uri(&setup.root.join("tests/counts.rs"));
    assert!(
        changes.iter().any(|c| matches!(
            c,
            DocumentChangeOperation::Op(ResourceOp::Create(create)) if create.uri == created
        )),
        "{changes:?}"
    );
    for file in ["src/lib.rs", "src/main.rs", "tests/counts.rs"] {
        let uri = path_uri(&setup.root.join(file));
        assert!(
            changes.iter().any(|c| matches!(
                c,
                DocumentChangeOperation::Edit(e) if e.text_document.uri == uri
            )),
            "{file}: {changes:?}"
        );
    }
    assert_eq!(setup.coder.requests().len(), 3);
}

#[test]
fn cancelling_the_plan_changes_nothing_and_says_so() {
    let mut setup = setup("Cancel");
    let before = tree(&setup.root);
    let error = develop(&mut setup).unwrap_err();
    assert!(error.message.contains("not approved"), "{error:?}");
    // The plan was shown and the question asked, as when it is approved.
    setup.server.server_request::<ShowDocument>();
    let asked = setup.server.server_request::<ShowMessageRequest>();
    assert!(asked.message.contains("approve this plan"), "{asked:?}");
    setup.server.ignore::<Progress>();
    assert_eq!(tree(&setup.root), before);
    assert!(
        setup.coder.requests().is_empty(),
        "the coder ran without approval"
    );
}
