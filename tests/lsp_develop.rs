//! Develop in the editor, end to end: the real binary over stdio, the planner and the coder as
//! local servers speaking the OpenAI SSE format (the answers of the `rust_happy_path` develop
//! scenario), and the client side played by the harness: progress, the plan opened with
//! `window/showDocument`, approval through `window/showMessageRequest`, and accepting the
//! multi-file proposal as one `workspace/applyEdit` with a `CreateFile`.

mod support;

use std::path::PathBuf;

use patchwise::model::replay::ReplayServer;
use serde_json::{Value, json};
use support::{Options, Server, copy_dir, file_uri, openai_sse, tree};

fn fixtures() -> PathBuf {
    support::fixture("develop")
}

struct Setup {
    _runtime: tokio::runtime::Runtime,
    _planner: ReplayServer,
    coder: ReplayServer,
    dir: tempfile::TempDir,
    root: PathBuf,
    server: Server,
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
    let mut server = Server::spawn(Options {
        env: vec![(
            "XDG_CONFIG_HOME",
            dir.path().join("config").display().to_string(),
        )],
        ..Options::default()
    });
    server.replies.insert(
        "window/showMessageRequest".to_owned(),
        json!({ "title": approve }),
    );
    server
        .request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": file_uri(&root),
                "capabilities": {
                    "window": { "workDoneProgress": true, "showDocument": { "support": true } },
                    "workspace": { "workspaceEdit": { "documentChanges": true, "resourceOperations": ["create"] } },
                },
                "initializationOptions": init,
            }),
        )
        .unwrap();
    server.notify("initialized", json!({}));
    Setup {
        _runtime: runtime,
        _planner: planner,
        coder,
        dir,
        root,
        server,
    }
}

fn develop(setup: &mut Setup) -> Result<Value, Value> {
    let request = "add a line_count function, print it in main, and add an integration test for it";
    setup.server.request(
        "workspace/executeCommand",
        json!({ "command": "patchwise.develop", "arguments": [{ "request": request }] }),
    )
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
    let messages = setup.server.take_unsolicited();
    // Progress with phases and percentages.
    let reports: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "$/progress")
        .map(|m| &m["params"]["value"])
        .collect();
    assert!(
        reports.iter().any(|v| v["message"]
            .as_str()
            .is_some_and(|m| m.contains("step 2/3"))),
        "{reports:?}"
    );
    assert!(reports.iter().any(|v| v["kind"] == "end"), "{reports:?}");
    // The plan document, then the question.
    let shown = messages
        .iter()
        .find(|m| m["method"] == "window/showDocument")
        .expect("the plan was shown");
    let plan_uri = shown["params"]["uri"].as_str().unwrap();
    let plan = std::fs::read_to_string(plan_uri.strip_prefix("file://").unwrap()).unwrap();
    assert!(
        plan.contains("# Develop plan") && plan.contains("`tests/counts.rs`"),
        "{plan}"
    );
    let asked = messages
        .iter()
        .find(|m| m["method"] == "window/showMessageRequest")
        .expect("approval was asked");
    assert!(
        asked["params"]["message"]
            .as_str()
            .unwrap()
            .contains("approve this plan"),
        "{asked}"
    );
    let titles: Vec<&str> = asked["params"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Approve", "Cancel"]);

    // Accept: one workspace/applyEdit over every file, the new one created.
    let accepted = setup
        .server
        .request(
            "workspace/executeCommand",
            json!({ "command": "patchwise.proposal.accept", "arguments": [{ "id": id }] }),
        )
        .unwrap();
    assert_eq!(accepted, json!({ "applied": true }));
    let edits: Vec<Value> = setup
        .server
        .take_unsolicited()
        .into_iter()
        .filter(|m| m["method"] == "workspace/applyEdit")
        .collect();
    assert_eq!(edits.len(), 1, "{edits:?}");
    let changes = edits[0]["params"]["edit"]["documentChanges"]
        .as_array()
        .unwrap();
    let created = file_uri(&setup.root.join("tests/counts.rs"));
    assert!(
        changes
            .iter()
            .any(|c| c["kind"] == "create" && c["uri"] == created.as_str()),
        "{changes:?}"
    );
    for file in ["src/lib.rs", "src/main.rs", "tests/counts.rs"] {
        let uri = file_uri(&setup.root.join(file));
        assert!(
            changes
                .iter()
                .any(|c| c["textDocument"]["uri"] == uri.as_str()),
            "{file}: {changes:?}"
        );
    }
    assert_eq!(setup.coder.requests().len(), 3);
    let _ = &setup.dir;
}

#[test]
fn cancelling_the_plan_changes_nothing_and_says_so() {
    let mut setup = setup("Cancel");
    let before = tree(&setup.root);
    let error = develop(&mut setup).unwrap_err();
    assert!(
        error["message"].as_str().unwrap().contains("not approved"),
        "{error}"
    );
    assert_eq!(tree(&setup.root), before);
    assert!(
        setup.coder.requests().is_empty(),
        "the coder ran without approval"
    );
}
