//! Edit in the editor, end to end: the real binary over stdio, a local server speaking the
//! OpenAI chat-completions SSE format scripted from `fixtures/lsp/edit/scenarios.json`, and
//! the client side played by the harness (progress tokens, `workspace/applyEdit`).
//!
//! Every test also checks that nothing was written to the workspace on disk: proposals reach
//! the editor only through `workspace/applyEdit`.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use patchwise::model::replay::{ReplayServer, Reply};
use serde_json::{Value, json};
use support::{Options, Server, file_uri, openai_sse as sse, snapshot};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/lsp/edit")
}

fn scenario(name: &str) -> Value {
    let all: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("scenarios.json")).unwrap())
            .unwrap();
    all[name].clone()
}

struct Setup {
    _runtime: tokio::runtime::Runtime,
    model: ReplayServer,
    _dir: tempfile::TempDir,
    root: PathBuf,
    file: PathBuf,
    uri: String,
    server: Server,
    disk_before: String,
}

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
    let uri = file_uri(&file);
    let mut setup = Setup {
        _runtime: runtime,
        model,
        _dir: dir,
        root,
        file,
        uri,
        server,
        disk_before,
    };
    let text = open_text.map_or_else(|| setup.disk_before.clone(), str::to_owned);
    open_doc(&mut setup, &text);
    setup
}

/// A server on the workspace `root`, its data (configuration, database) under `dir`,
/// initialized.
fn start_server(dir: &Path, root: &Path, model: &ReplayServer, tools: &str, caps: Value) -> Server {
    let init = json!({
        "providers": { "fake": { "kind": "openai", "base_url": format!("{}/v1", model.url()), "api_key_env": "", "tools": tools } },
        "roles": { "coder": "fake/test-model" },
        "timeouts": { "connect": 5, "first_token": 60, "total": 120 },
        "retry": { "max_attempts": 1 },
        "data_dir": dir.join("data"),
    });
    let mut server = Server::spawn(Options {
        env: vec![("XDG_CONFIG_HOME", dir.join("config").display().to_string())],
        ..Options::default()
    });
    server
        .request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": file_uri(root),
                "capabilities": caps,
                "initializationOptions": init,
            }),
        )
        .unwrap();
    server.notify("initialized", json!({}));
    server
}

fn open_doc(setup: &mut Setup, text: &str) {
    setup.server.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": setup.uri, "languageId": "rust", "version": 1, "text": text } }),
    );
}

/// Stops the server and starts another on the same workspace and data (nothing open).
fn restart(setup: &mut Setup, caps: Value) {
    let next = start_server(setup._dir.path(), &setup.root, &setup.model, "native", caps);
    let old = std::mem::replace(&mut setup.server, next);
    old.shutdown();
}

fn script(name: &str) -> (Value, Vec<Reply>) {
    let s = scenario(name);
    let replies = s["coder"].as_array().unwrap().iter().map(sse).collect();
    (s, replies)
}

fn lines_range(s: &Value) -> Value {
    let lines = s["lines"].as_array().unwrap();
    let (first, last) = (
        lines[0].as_u64().unwrap() - 1,
        lines[1].as_u64().unwrap() - 1,
    );
    json!({ "start": { "line": first, "character": 0 }, "end": { "line": last, "character": 200 } })
}

/// `patchwise.edit` with `wait: true`: the answer is the proposal.
fn edit(setup: &mut Setup, s: &Value) -> Result<Value, Value> {
    let args = json!({ "uri": setup.uri, "range": lines_range(s), "instruction": s["instruction"], "wait": true });
    setup.server.request(
        "workspace/executeCommand",
        json!({ "command": "patchwise.edit", "arguments": [args] }),
    )
}

/// Applies a `workspace/applyEdit` the way a client would, returning the new text.
fn apply_text_edits(text: &str, edits: &[Value]) -> String {
    // UTF-16 positions; the fixtures are ASCII, so columns are bytes.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let offset = |p: &Value| {
        let line = p["line"].as_u64().unwrap() as usize;
        let start = line_starts.get(line).copied().unwrap_or(text.len());
        (start + p["character"].as_u64().unwrap() as usize).min(text.len())
    };
    let mut ranges: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                offset(&e["range"]["start"]),
                offset(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_owned(),
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

fn command(setup: &mut Setup, name: &str, argument: Value) -> Result<Value, Value> {
    setup.server.request(
        "workspace/executeCommand",
        json!({ "command": name, "arguments": [argument] }),
    )
}

fn code_lenses(setup: &mut Setup) -> Value {
    setup
        .server
        .request(
            "textDocument/codeLens",
            json!({ "textDocument": { "uri": setup.uri } }),
        )
        .unwrap()
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
    setup
        .server
        .request("patchwise/viewFileText", json!({ "uri": setup.uri }))
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

/// Accepts proposal `id`, checks the `workspace/applyEdit`, plays the client applying it, and
/// returns the document text afterwards.
fn accept(setup: &mut Setup, id: &Value, version: i64) -> String {
    let result = command(setup, "patchwise.proposal.accept", json!({ "id": id })).unwrap();
    assert_eq!(result, json!({ "applied": true }));
    let request = setup
        .server
        .take_unsolicited()
        .into_iter()
        .rev()
        .find(|m| m["method"] == "workspace/applyEdit")
        .expect("the server sent workspace/applyEdit");
    let params = &request["params"];
    assert!(
        params["label"].as_str().unwrap().starts_with("patchwise: "),
        "{params}"
    );
    let change = &params["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["uri"], setup.uri.as_str());
    assert_eq!(change["textDocument"]["version"], version - 1);
    let edits = change["edits"].as_array().unwrap();
    let before = view(setup);
    let after = apply_text_edits(&before, edits);
    setup.server.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": setup.uri, "version": version }, "contentChanges": [{ "text": after }] }),
    );
    assert_eq!(view(setup), after);
    after
}

#[test]
fn misindented_edit_becomes_a_proposal_with_hover_lens_and_diagnostic_then_applies() {
    let (s, replies) = script("misindented");
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
    let messages = setup.server.take_unsolicited();
    assert!(
        messages
            .iter()
            .any(|m| m["method"] == "window/workDoneProgress/create")
    );
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "$/progress")
        .collect();
    assert_eq!(
        progress.first().unwrap()["params"]["value"]["kind"],
        "begin"
    );
    assert_eq!(progress.last().unwrap()["params"]["value"]["kind"], "end");
    assert!(progress.iter().any(|p| {
        p["params"]["value"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("asking"))
    }));
    let diagnostics = messages
        .iter()
        .rev()
        .find(|m| m["method"] == "textDocument/publishDiagnostics")
        .expect("diagnostics for the proposal");
    let diagnostic = &diagnostics["params"]["diagnostics"][0];
    assert_eq!(diagnostic["source"], "patchwise");
    assert_eq!(diagnostic["severity"], 3);
    assert_eq!(diagnostic["range"]["start"]["line"], 13);

    // Hover on the changed line shows the diff, the model, attempts and the matching pass.
    let hover = setup
        .server
        .request(
            "textDocument/hover",
            json!({ "textDocument": { "uri": setup.uri }, "position": { "line": 13, "character": 10 } }),
        )
        .unwrap();
    let markdown = hover["contents"]["value"].as_str().unwrap();
    assert!(markdown.contains("```diff\n"), "{markdown}");
    assert!(markdown.contains("fake/test-model"), "{markdown}");
    assert!(markdown.contains("1 attempt"), "{markdown}");
    assert!(markdown.contains("indentation(+4)"), "{markdown}");
    // No hover away from the proposal.
    let none = setup
        .server
        .request(
            "textDocument/hover",
            json!({ "textDocument": { "uri": setup.uri }, "position": { "line": 2, "character": 0 } }),
        )
        .unwrap();
    assert_eq!(none, Value::Null);

    let lenses = code_lenses(&mut setup);
    let titles: Vec<&str> = lenses
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["command"]["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Accept", "Reject", "Diff"]);
    assert_eq!(lenses[0]["command"]["arguments"][0]["id"], id);

    let shown = command(&mut setup, "patchwise.proposal.diff", json!({ "id": id })).unwrap();
    assert_eq!(shown.as_str().unwrap(), diff);

    // What the user sees, as snapshots (temporary paths replaced by $WS).
    let ws = file_uri(&setup.root);
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap().replace(&ws, "$WS") + "\n";
    snapshot("lsp/edit/snapshots/hover.md", &format!("{markdown}\n"));
    snapshot("lsp/edit/snapshots/code_lens.json", &pretty(&lenses));
    snapshot(
        "lsp/edit/snapshots/diagnostics.json",
        &pretty(&diagnostics["params"]),
    );

    assert_disk_untouched(&setup);
    let after = accept(&mut setup, &id, 2);
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    // Accepted: the lens, hover and diagnostic are gone, and it cannot be accepted twice.
    let lenses = code_lenses(&mut setup);
    assert_eq!(lenses, json!([]));
    let again = command(&mut setup, "patchwise.proposal.accept", json!({ "id": id })).unwrap_err();
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .contains("no pending proposal"),
        "{again}"
    );
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

#[test]
fn ambiguous_edit_is_refused_then_retried_with_more_context() {
    let (s, replies) = script("ambiguous_then_context");
    let mut setup = setup(replies, "native", false, None);
    let result = edit(&mut setup, &s).unwrap();
    // The refusal went back to the model, naming both places.
    let requests = setup.model.requests();
    assert_eq!(requests.len(), 3);
    let second = requests[1].json().to_string();
    assert!(second.contains("14") && second.contains("19"), "{second}");
    let id = result["id"].clone();
    let after = accept(&mut setup, &id, 2);
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

#[test]
fn when_every_attempt_fails_the_user_is_told_and_nothing_changes() {
    let (s, replies) = script("every_attempt_fails");
    let mut setup = setup(replies, "native", false, None);
    let before = view(&mut setup);
    let err = edit(&mut setup, &s).unwrap_err();
    let message = err["message"].as_str().unwrap();
    assert!(message.contains("no proposal"), "{message}");
    assert!(message.contains("3 attempts"), "{message}");
    assert_eq!(view(&mut setup), before);
    let messages = setup.server.take_unsolicited();
    assert!(
        !messages
            .iter()
            .any(|m| m["method"] == "workspace/applyEdit")
    );
    let lenses = code_lenses(&mut setup);
    assert_eq!(lenses, json!([]));
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

#[test]
fn a_model_without_tool_support_uses_the_text_format() {
    let (s, replies) = script("text_tools");
    let mut setup = setup(replies, "text", false, None);
    let result = edit(&mut setup, &s).unwrap();
    // No native tools were offered to this model.
    let first = setup.model.requests()[0].json();
    assert!(first.get("tools").is_none(), "{first}");
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
        let id = setup.server.request_async(
            "workspace/executeCommand",
            json!({ "command": "patchwise.edit", "arguments": [args] }),
        );
        // Wait until the run has asked the model, then cancel it.
        let created = setup
            .server
            .wait_for(|m| m["method"] == "window/workDoneProgress/create");
        let token = created["params"]["token"].clone();
        while setup.model.requests().is_empty() {
            setup.server.drain(Duration::from_millis(50));
        }
        match how {
            "command" => {
                let cancelled =
                    command(&mut setup, "patchwise.cancel", json!({ "id": token })).unwrap();
                assert_eq!(cancelled, json!({ "cancelled": 1 }));
            }
            _ => setup
                .server
                .notify("window/workDoneProgress/cancel", json!({ "token": token })),
        }
        let err = setup.server.response(json!(id)).unwrap_err();
        assert!(
            err["message"].as_str().unwrap().contains("cancelled"),
            "{how}: {err}"
        );
        assert_disk_untouched(&setup);
        setup.server.shutdown();
    }
}

#[test]
fn a_user_edit_elsewhere_moves_the_proposal_and_one_on_the_target_makes_it_stale() {
    let (s, replies) = script("misindented");
    let mut setup = setup(replies, "native", false, None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
    // Two lines inserted at the top: the proposal follows.
    setup.server.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": setup.uri, "version": 2 }, "contentChanges": [
            { "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } }, "text": "// one\n// two\n" }
        ] }),
    );
    let lenses = code_lenses(&mut setup);
    assert_eq!(lenses[0]["range"]["start"]["line"], 15, "{lenses}");
    let after = accept(&mut setup, &id, 3);
    assert!(after.starts_with("// one\n// two\n//! Geometry"), "{after}");
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    setup.server.shutdown();

    // Now a change on the very lines the proposal replaces.
    let (s, replies) = script("misindented");
    let mut setup = self::setup(replies, "native", false, None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
    setup.server.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": setup.uri, "version": 2 }, "contentChanges": [
            { "range": { "start": { "line": 13, "character": 12 }, "end": { "line": 13, "character": 17 } }, "text": "sum" }
        ] }),
    );
    let err = command(&mut setup, "patchwise.proposal.accept", json!({ "id": id })).unwrap_err();
    assert!(err["message"].as_str().unwrap().contains("stale"), "{err}");
    let text = view(&mut setup);
    assert!(text.contains("let sum = self.x.abs()"), "{text}");
    assert!(
        !setup
            .server
            .take_unsolicited()
            .iter()
            .any(|m| m["method"] == "workspace/applyEdit")
    );
    setup.server.shutdown();
}

#[test]
fn code_actions_offer_commands_and_never_call_the_model() {
    let (s, replies) = script("instruction_comment");
    let disk = std::fs::read_to_string(fixtures().join("workspace/src/lib.rs")).unwrap();
    let with_comment = disk.replacen(
        "    pub fn norm1",
        &format!("{}    pub fn norm1", s["comment"].as_str().unwrap()),
        1,
    );
    let mut setup = setup(replies, "native", false, Some(&with_comment));
    let diagnostic = json!({
        "range": { "start": { "line": 14, "character": 8 }, "end": { "line": 14, "character": 13 } },
        "severity": 2, "source": "rust-analyzer", "message": "unused variable: `total`"
    });
    let actions = setup
        .server
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": { "uri": setup.uri },
                "range": { "start": { "line": 12, "character": 0 }, "end": { "line": 12, "character": 0 } },
                "context": { "diagnostics": [diagnostic] }
            }),
        )
        .unwrap();
    let titles: Vec<&str> = actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
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
    for action in actions.as_array().unwrap() {
        assert_eq!(action["tags"], json!([1]), "{action}");
        assert!(action.get("data").is_none(), "{action}");
    }
    // "Edit selection…" leaves the instruction to the client.
    assert_eq!(actions[2]["command"]["command"], "patchwise.editSelection");
    assert!(
        actions[2]["command"]["arguments"][0]
            .get("instruction")
            .is_none()
    );
    assert_eq!(
        actions[1]["command"]["arguments"][0]["instruction"],
        "Fix this problem reported by rust-analyzer: unused variable: `total`"
    );

    // Apply the instruction: the proposal documents norm1 and removes the comment.
    let command = actions[0]["command"].clone();
    let mut arguments = command["arguments"].clone();
    arguments[0]["wait"] = json!(true);
    let result = setup
        .server
        .request(
            "workspace/executeCommand",
            json!({ "command": command["command"], "arguments": arguments }),
        )
        .unwrap();
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
    assert!(
        err["message"].as_str().unwrap().contains("no instruction"),
        "{err}"
    );
    let err = command(&mut setup, "patchwise.edit", json!({ "uri": "untitled:Untitled-1", "range": lines_range(&scenario("misindented")), "instruction": "x" }))
        .unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("save it first"),
        "{err}"
    );
    let err = setup
        .server
        .request(
            "workspace/executeCommand",
            json!({ "command": "patchwise.proposal.accept", "arguments": [] }),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    let err = setup
        .server
        .request(
            "workspace/executeCommand",
            json!({ "command": "patchwise.nope" }),
        )
        .unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("unknown command"),
        "{err}"
    );
    assert!(setup.model.requests().is_empty());
    setup.server.shutdown();
}

/// The capabilities of a client that is not ours (`fixtures/lsp/clients/eglot.json`).
fn eglot() -> Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/lsp/clients/eglot.json"),
    )
    .unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["capabilities"].clone()
}

fn code_actions_at(setup: &mut Setup, line: u64) -> Value {
    setup
        .server
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": { "uri": setup.uri },
                "range": { "start": { "line": line, "character": 0 }, "end": { "line": line, "character": 0 } },
                "context": { "diagnostics": [] }
            }),
        )
        .unwrap()
}

fn titles(actions: &Value) -> Vec<String> {
    actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap().to_owned())
        .collect()
}

fn run_action(setup: &mut Setup, actions: &Value, title_starts: &str) -> Result<Value, Value> {
    let action = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"].as_str().unwrap().starts_with(title_starts))
        .unwrap_or_else(|| panic!("no action {title_starts:?} in {actions}"))
        .clone();
    setup.server.request(
        "workspace/executeCommand",
        json!({ "command": action["command"]["command"], "arguments": action["command"]["arguments"] }),
    )
}

/// A client that is not ours: the instruction-comment flow as Emacs + eglot runs it.
#[test]
fn a_client_without_lenses_or_markdown_gets_an_immediate_answer_and_plain_words() {
    let (s, replies) = script("instruction_comment");
    let disk = std::fs::read_to_string(fixtures().join("workspace/src/lib.rs")).unwrap();
    let with_comment = disk.replacen(
        "    pub fn norm1",
        &format!("{}    pub fn norm1", s["comment"].as_str().unwrap()),
        1,
    );
    let mut setup = setup_for(replies, "native", eglot(), Some(&with_comment));
    let actions = code_actions_at(&mut setup, 12);
    // No dead "Edit selection…" or "Develop…": this client cannot ask for an instruction.
    assert_eq!(titles(&actions), ["Apply instruction: document norm1"]);
    // No tags for a client that did not declare them, and no trace of the mark.
    assert!(actions[0].get("tags").is_none(), "{actions}");
    assert!(actions[0].get("data").is_none(), "{actions}");

    // The command answers at once with the run id; the rest comes as notifications.
    let answer = run_action(&mut setup, &actions, "Apply instruction").unwrap();
    let run_id = answer["runId"].as_str().unwrap().to_owned();
    assert_eq!(answer.as_object().unwrap().len(), 1, "{answer}");
    let finished = setup
        .server
        .wait_for(|m| m["method"] == "patchwise/runFinished");
    let params = &finished["params"];
    assert_eq!(params["runId"], run_id.as_str());
    assert_eq!(params["ok"], true, "{params}");
    let id = params["proposal"]["id"].clone();
    let messages = setup.server.take_unsolicited();
    let shown: Vec<&str> = messages
        .iter()
        .filter(|m| m["method"] == "window/showMessage")
        .map(|m| m["params"]["message"].as_str().unwrap())
        .collect();
    assert!(
        shown
            .iter()
            .any(|m| m.contains(&format!("proposal {id} ready")) && m.contains("code actions")),
        "{shown:?}"
    );
    // Without progress support, a message says the run started (it came before the answer).
    assert!(shown[0].contains("working on: document norm1"), "{shown:?}");
    let diagnostics = messages
        .iter()
        .rev()
        .find(|m| m["method"] == "textDocument/publishDiagnostics")
        .expect("diagnostics for the proposal");
    let message = diagnostics["params"]["diagnostics"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains(&format!("\"Accept proposal {id}\"")) && !message.contains("code lens"),
        "{message}"
    );

    // Plain-text hover, as declared.
    let hover = setup
        .server
        .request(
            "textDocument/hover",
            json!({ "textDocument": { "uri": setup.uri }, "position": { "line": 12, "character": 4 } }),
        )
        .unwrap();
    assert_eq!(hover["contents"]["kind"], "plaintext", "{hover}");
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(!text.contains("```") && !text.contains("**"), "{text}");
    assert!(text.contains("+    /// "), "{text}");

    // "Show diff" shows it: this client cannot open documents, so as a message, before the
    // command's answer.
    let actions = code_actions_at(&mut setup, 12);
    let diff = run_action(&mut setup, &actions, "Show diff of proposal").unwrap();
    let shown = setup.server.take_unsolicited();
    assert!(
        shown.iter().any(|m| m["method"] == "window/showMessage"
            && m["params"]["message"]
                .as_str()
                .unwrap()
                .contains(diff.as_str().unwrap())),
        "{shown:?}"
    );

    // Accept: the cleared diagnostics arrive before the answer.
    let answer = run_action(&mut setup, &actions, "Accept proposal").unwrap();
    assert_eq!(answer, json!({ "applied": true }));
    let before_answer = setup.server.take_unsolicited();
    let edit = before_answer
        .iter()
        .find(|m| m["method"] == "workspace/applyEdit")
        .expect("the edit");
    let cleared = before_answer.iter().position(|m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["diagnostics"] == json!([])
    });
    assert!(cleared.is_some(), "{before_answer:?}");
    let edits = edit["params"]["edit"]["documentChanges"][0]["edits"]
        .as_array()
        .unwrap()
        .clone();
    let after = apply_text_edits(&with_comment, &edits);
    assert!(after.contains(s["expected"].as_str().unwrap()), "{after}");
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

/// A proposal with two hunks is reviewed hunk by hunk.
#[test]
fn hunks_are_accepted_and_rejected_one_by_one() {
    let (s, replies) = script("two_hunks");
    let mut setup = setup(replies, "native", false, None);
    let result = edit(&mut setup, &s).unwrap();
    let id = result["id"].clone();
    let lenses = code_lenses(&mut setup);
    let shown: Vec<(u64, &str, Value)> = lenses
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["range"]["start"]["line"].as_u64().unwrap(),
                l["command"]["title"].as_str().unwrap(),
                l["command"]["arguments"][0]["hunk"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (11, "Accept all", Value::Null),
            (11, "Reject all", Value::Null),
            (11, "Diff", Value::Null),
            (11, "Accept hunk", json!(1)),
            (11, "Reject hunk", json!(1)),
            (14, "Accept hunk", json!(2)),
            (14, "Reject hunk", json!(2)),
        ],
        "{lenses}"
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
        .take_unsolicited()
        .into_iter()
        .find(|m| m["method"] == "workspace/applyEdit")
        .unwrap();
    let edits = request["params"]["edit"]["documentChanges"][0]["edits"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(edits.len(), 1);
    let before = view(&mut setup);
    let after = apply_text_edits(&before, &edits);
    assert!(after.contains("        total.max(0)\n"), "{after}");
    assert!(!after.contains("/// The L1 norm."), "{after}");
    setup.server.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": setup.uri, "version": 2 }, "contentChanges": [{ "text": after }] }),
    );
    let lenses = code_lenses(&mut setup);
    let titles: Vec<&str> = lenses
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["command"]["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Accept", "Reject", "Diff"], "{lenses}");
    // The proposed text of the file is the document with the remaining hunk.
    let proposed = setup
        .server
        .request(
            "patchwise/proposalContent",
            json!({ "id": id, "uri": setup.uri }),
        )
        .unwrap();
    assert_eq!(
        proposed.as_str().unwrap(),
        after.replace("    pub fn norm1", "    /// The L1 norm.\n    pub fn norm1")
    );
    let diff = command(
        &mut setup,
        "patchwise.proposal.diff",
        json!({ "id": id, "show": false }),
    )
    .unwrap();
    let diff = diff.as_str().unwrap();
    assert!(
        diff.contains("+    /// The L1 norm.") && !diff.contains("+        total.max"),
        "{diff}"
    );

    // Reject the last hunk: the proposal is gone.
    command(
        &mut setup,
        "patchwise.proposal.reject",
        json!({ "id": id, "hunk": 1 }),
    )
    .unwrap();
    assert_eq!(code_lenses(&mut setup), json!([]));
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
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("no pending proposal"),
        "{err}"
    );
    assert_disk_untouched(&setup);
    setup.server.shutdown();
}

/// Pending proposals survive a restart, and come back stale when their target changed.
#[test]
fn proposals_survive_a_restart_and_go_stale_when_the_file_changed() {
    let (s, replies) = script("misindented");
    let mut setup = setup(replies, "native", false, None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
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
    let published = setup
        .server
        .wait_for(|m| m["method"] == "textDocument/publishDiagnostics");
    assert_eq!(published["params"]["diagnostics"][0]["source"], "patchwise");
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
    let (s, replies) = script("misindented");
    let mut setup = self::setup(replies, "native", false, None);
    let id = edit(&mut setup, &s).unwrap()["id"].clone();
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
    assert!(err["message"].as_str().unwrap().contains("stale"), "{err}");
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
    type Case<'a> = (&'a str, [u64; 2], &'a str, &'a str, &'a [u64]);
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
        let result = edit(&mut setup, &s).unwrap_or_else(|e| panic!("{case}: {e}"));
        let diagnostics = setup
            .server
            .take_unsolicited()
            .into_iter()
            .rev()
            .find(|m| m["method"] == "textDocument/publishDiagnostics")
            .expect("diagnostics");
        let answered: Vec<u64> = (0..6)
            .filter(|line| {
                let hover = setup
                    .server
                    .request(
                        "textDocument/hover",
                        json!({ "textDocument": { "uri": setup.uri }, "position": { "line": line, "character": 0 } }),
                    )
                    .unwrap();
                !hover.is_null()
            })
            .collect();
        assert_eq!(answered, hover_lines, "{case}: hover lines");
        let range = &diagnostics["params"]["diagnostics"][0]["range"];
        assert_eq!(range["start"]["character"], 0, "{case}: {range}");
        assert_ne!(
            range["start"], range["end"],
            "{case}: an empty range is drawn by no one"
        );
        let lenses = code_lenses(&mut setup);
        shown.insert(
            case.to_owned(),
            json!({
                "diff": result["diff"],
                "hover_lines": answered,
                "diagnostic_range": range,
                "lens_lines": lenses.as_array().unwrap().iter().map(|l| l["range"]["start"]["line"].clone()).collect::<Vec<_>>(),
            }),
        );
        setup.server.shutdown();
    }
    snapshot(
        "lsp/edit/snapshots/edges.json",
        &(serde_json::to_string_pretty(&Value::Object(shown)).unwrap() + "\n"),
    );
}
