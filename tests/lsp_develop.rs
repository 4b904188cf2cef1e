//! Develop in the editor, end to end: the real binary over stdio, the planner and the coder as
//! local servers speaking the OpenAI SSE format (the answers of the `rust_happy_path` develop
//! scenario), and the client side played by the harness: progress, the plan opened with
//! `window/showDocument`, approval through `window/showMessageRequest`, and accepting the
//! multi-file proposal as one `workspace/applyEdit` with a `CreateFile`. The code actions that
//! start develop — "Develop…" (the client supplies the request) and "Develop: …" on a
//! `patchwise develop:` comment — are run as a client runs them: their command as offered.

mod support;

use std::path::PathBuf;

use patchwise::model::replay::ReplayServer;
use serde_json::{Value, json};
use support::{Options, Server, copy_dir, develop_models, file_uri, tree};

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
    let edits = json!({ "documentChanges": true, "resourceOperations": ["create"] });
    setup_runs(approve, 1, edits)
}

/// A server whose planner and coder answer the happy-path scenario `runs` times over, for a
/// client whose `workspace.workspaceEdit` capabilities are `edits`.
fn setup_runs(approve: &str, runs: usize, edits: Value) -> Setup {
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
                    // Like VS Code and the Neovim plugin: this client asks for the request of
                    // "Develop…".
                    "experimental": { "patchwise": { "instructionInput": true } },
                    "window": { "workDoneProgress": true, "showDocument": { "support": true } },
                    "workspace": { "workspaceEdit": edits },
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

/// Accepts proposal `id`: one `workspace/applyEdit`, whose `documentChanges` are returned.
fn accept(setup: &mut Setup, id: &Value) -> Vec<Value> {
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
    edits[0]["params"]["edit"]["documentChanges"]
        .as_array()
        .unwrap()
        .clone()
}

/// Asserts `changes` create the file at `path`; returns its uri.
fn assert_creates(changes: &[Value], path: &std::path::Path) -> String {
    let uri = file_uri(path);
    assert!(
        changes
            .iter()
            .any(|c| c["kind"] == "create" && c["uri"] == uri.as_str()),
        "{changes:?}"
    );
    uri
}

/// The titles of code actions or message actions.
fn titles(actions: &Value) -> Vec<&str> {
    actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect()
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
    assert_eq!(titles(&asked["params"]["actions"]), ["Approve", "Cancel"]);

    // Accept: one workspace/applyEdit over every file, the new one created.
    let changes = accept(&mut setup, &id);
    let created = assert_creates(&changes, &setup.root.join("tests/counts.rs"));
    // The new file's text spans its one (empty) line, so no client keeps an extra line.
    let fill = changes
        .iter()
        .find(|c| c["textDocument"]["uri"] == created.as_str())
        .unwrap();
    assert_eq!(
        fill["edits"][0]["range"],
        json!({ "start": { "line": 0, "character": 0 }, "end": { "line": 1, "character": 0 } }),
        "{fill}"
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

/// The two develop code actions on a `patchwise develop:` comment, run as offered: "Develop: …"
/// carries its request and the file; "Develop…" leaves the request to the client (sent without
/// it, the server says how to give it), which adds it and runs the same command. The client
/// declares file creation but not `documentChanges`, as Neovim 0.11 does.
#[test]
fn develop_code_actions_run_the_comment_request_and_the_client_supplied_one() {
    let mut setup = setup_runs("Approve", 2, json!({ "resourceOperations": ["create"] }));
    let request = "add a line_count function, print it in main, and add an integration test for it";
    let main = setup.root.join("src/main.rs");
    let uri = file_uri(&main);
    let text = format!(
        "// patchwise develop: {request}\n{}",
        std::fs::read_to_string(&main).unwrap()
    );
    setup.server.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "rust", "version": 1, "text": text } }),
    );
    let before = tree(&setup.root);
    let actions = setup
        .server
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": { "uri": uri },
                "range": { "start": { "line": 0, "character": 3 }, "end": { "line": 0, "character": 3 } },
                "context": { "diagnostics": [] }
            }),
        )
        .unwrap();
    let comment_title = format!("Develop: {request}");
    assert_eq!(
        titles(&actions),
        [comment_title.as_str(), "Edit selection…", "Develop…"],
        "{actions}"
    );
    let command = |title: &str| {
        actions
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["title"] == title)
            .unwrap()["command"]
            .clone()
    };
    let from_comment = command(&comment_title);
    assert_eq!(from_comment["command"], "patchwise.develop");
    assert_eq!(
        from_comment["arguments"],
        json!([{ "uri": uri, "request": request }])
    );
    let supplied = command("Develop…");
    assert_eq!(supplied["command"], "patchwise.develop");
    assert_eq!(supplied["arguments"], json!([{ "uri": uri }]));
    assert!(
        setup.coder.requests().is_empty(),
        "a code action called the model"
    );

    // "Develop: …" as offered: a run with the comment's request, focused on the file.
    let execute = |setup: &mut Setup, command: &Value| {
        setup.server.request(
            "workspace/executeCommand",
            json!({ "command": command["command"], "arguments": command["arguments"] }),
        )
    };
    let first = execute(&mut setup, &from_comment).unwrap();
    assert!(
        first["diff"]
            .as_str()
            .unwrap()
            .contains("tests/counts.rs (new file)"),
        "{first}"
    );
    assert_eq!(setup.coder.requests().len(), 3);
    assert!(
        setup
            .server
            .take_unsolicited()
            .iter()
            .any(|m| m["method"] == "window/showMessageRequest"),
        "the plan was not put up for approval"
    );

    // "Develop…" as offered has no request: the error says how a client gives it.
    let error = execute(&mut setup, &supplied).unwrap_err();
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("no request given") && message.contains("patchwise develop:"),
        "{error}"
    );
    assert_eq!(setup.coder.requests().len(), 3, "a run without a request");
    // The client asks the user, adds the request and runs it.
    let mut asked = supplied.clone();
    asked["arguments"][0]["request"] = json!(request);
    let second = execute(&mut setup, &asked).unwrap();
    assert_ne!(second["id"], first["id"]);
    assert_eq!(setup.coder.requests().len(), 6);
    assert_eq!(tree(&setup.root), before, "develop wrote to the workspace");

    let changes = accept(&mut setup, &second["id"]);
    // The open buffer is edited at the version the run saw.
    assert!(
        changes
            .iter()
            .any(|c| c["textDocument"]["uri"] == uri.as_str() && c["textDocument"]["version"] == 1),
        "{changes:?}"
    );
    assert_creates(&changes, &setup.root.join("tests/counts.rs"));
}
