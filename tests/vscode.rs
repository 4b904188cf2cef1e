//! The VS Code extension inside a real VS Code: code-server 4.99 (VS Code 1.99) with the packaged
//! `.vsix`, driven by headless Chromium through playwright-core (`editors/vscode/test/e2e.mjs`),
//! against this crate's `patchwise` binary and a scripted model server. The editor's own text
//! after Accept is what is checked, then the file saved from the editor.
//!
//! `scripts/test` installs code-server into `.venv-test/code-server` (see
//! `scripts/editor-test-deps`), Debian's `chromium`, and packages the `.vsix`. Without them this
//! test fails and says what is missing; `PATCHWISE_SKIP_VSCODE=1` skips it on purpose.
//! Screenshots of the proposal hover, the diff view, the research report and the ghost text of
//! completion as you type are written to `target/test-artifacts/vscode/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

mod support;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn skip() -> bool {
    std::env::var_os("PATCHWISE_SKIP_VSCODE").is_some_and(|v| v == "1")
}

fn require(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} not found at {}: run scripts/test (it installs the editor test tools), \
         or set PATCHWISE_SKIP_VSCODE=1 to skip",
        path.display()
    );
    path
}

/// One code-server session (starting one takes most of the test's time): an edit through
/// "Edit Selection…" seen as lenses, a hover and a diff view, accepted and saved; a research
/// report opened; then completion as you type in another file — the extension's inline
/// completion provider (vscode-languageclient's, for the server's `inlineCompletionProvider`)
/// shows the scripted fill-in-the-middle model's suggestion as ghost text, and Tab accepts it.
#[test]
fn vscode_edit_selection_hover_diff_accept_and_research() {
    if skip() {
        return;
    }
    use patchwise::model::replay::ReplayServer;
    let code_server = require(
        root().join(".venv-test/code-server/node_modules/.bin/code-server"),
        "code-server",
    );
    let chromium = require(
        PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())),
        "chromium (Debian package chromium)",
    );
    let vsix = require(
        root().join("editors/vscode/dist/patchwise.vsix"),
        "the packaged extension (npm run package in editors/vscode)",
    );
    require(
        root().join("editors/vscode/node_modules/playwright-core"),
        "playwright-core (npm ci in editors/vscode)",
    );

    let scenarios: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("fixtures/lsp/edit/scenarios.json")).unwrap(),
    )
    .unwrap();
    let s = &scenarios["misindented"];
    // The edit's two answers, then the research synthesis (the last answer repeats).
    let mut replies: Vec<_> = s["coder"]
        .as_array()
        .unwrap()
        .iter()
        .map(support::openai_sse)
        .collect();
    replies.push(support::openai_sse(&json!({
        "text": "Points measure distance with norm1, the sum of absolute coordinates [1].\n\nClaims:\n- norm1 is the sum of absolute coordinates [1]\n"
    })));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime.block_on(ReplayServer::start(replies)).unwrap();
    // Completion as you type has a model of its own, on the `/v1/completions` wire.
    use support::fim::norm1;
    let (fim_url, fim) = support::fim::start_model(norm1::ANSWER);

    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join(".patchwise")).unwrap();
    let original =
        std::fs::read_to_string(root().join("fixtures/lsp/edit/workspace/src/lib.rs")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), &original).unwrap();
    std::fs::write(
        ws.join("NOTES.md"),
        "# Geometry\n\nnorm1 is the sum of the absolute coordinates of a point.\n",
    )
    .unwrap();
    std::fs::write(ws.join("norm.py"), norm1::ORIGINAL).unwrap();
    let dead = "http://127.0.0.1:9"; // discard port: connection refused
    let settings = json!({
        "patchwise.serverPath": env!("CARGO_BIN_EXE_patchwise"),
        "patchwise.settings": {
            "providers": {
                "fake": { "kind": "openai", "base_url": format!("{}/v1", model.url()), "api_key_env": "" },
                "fim": { "kind": "openai", "base_url": fim_url, "api_key_env": "" },
            },
            "roles": { "coder": "fake/test-model", "completion": "fim/qwen2.5-coder-1.5b" },
            "retry": { "max_attempts": 1 },
            "data_dir": dir.path().join("data"),
            "research": { "sources": {
                "openalex": { "base_url": dead },
                "arxiv": { "base_url": dead },
                "crossref": { "base_url": dead },
                "semantic_scholar": { "base_url": dead },
            } },
        },
    });
    let artifacts = root().join("target/test-artifacts/vscode");
    let lines = s["lines"].as_array().unwrap();
    let output = Command::new("node")
        .arg("test/e2e.mjs")
        .current_dir(root().join("editors/vscode"))
        .env("CODE_SERVER", &code_server)
        .env("CHROMIUM", &chromium)
        .env("VSIX", &vsix)
        .env("WORKSPACE", &ws)
        .env("FILE", "src/lib.rs")
        .env("LINES", format!("{}-{}", lines[0], lines[1]))
        .env("INSTRUCTION", s["instruction"].as_str().unwrap())
        .env("EXPECTED", s["expected"].as_str().unwrap())
        .env("QUESTION", "what does norm1 compute")
        .env("ARTIFACTS", &artifacts)
        .env("SETTINGS", settings.to_string())
        .env("COMPLETION_FILE", "norm.py")
        .env("COMPLETION_LINE", "2")
        .env("COMPLETION_TYPED", "a")
        .output()
        .expect("run node (Node.js 20 must be on PATH)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no report from e2e.mjs\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    assert_eq!(
        report["ok"],
        true,
        "the VS Code session failed (screenshot: {}/vscode-failure.png)\n{report:#}\nstderr:\n{stderr}",
        artifacts.display()
    );
    let expected = s["expected"].as_str().unwrap();
    // The editor's text, read from VS Code's own view lines, holds the edit.
    let buffer = report["buffer"].as_str().unwrap_or_default();
    assert!(
        buffer.contains(expected),
        "editor text:\n{buffer}\n{report:#}"
    );
    // ... and the editor saved it to disk (the server never writes files itself).
    let saved = std::fs::read_to_string(ws.join("src/lib.rs")).unwrap();
    assert!(saved.contains(expected), "saved file:\n{saved}");
    assert_ne!(saved, original);
    // The proposal was visible as lenses, a hover diff and a diff view before it was accepted.
    let lenses: Vec<&str> = report["lenses"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(lenses.iter().any(|l| l.starts_with("Accept")), "{lenses:?}");
    assert!(lenses.contains(&"Diff"), "{lenses:?}");
    let hover = report["hover"].as_str().unwrap_or_default();
    assert!(hover.contains("patchwise proposal"), "hover: {hover}");
    let modified = report["diffModified"].as_str().unwrap_or_default();
    assert!(
        modified.contains(expected),
        "diff view, proposal side:\n{modified}"
    );
    // Research opened its Markdown report in the editor.
    let tab = report["researchTab"].as_str().unwrap_or_default();
    assert!(tab.contains(".md"), "active tab after research: {tab}");

    // Completion as you type: after `a` at the end of line 2 the suggestion was ghost text (the
    // first line at the cursor, the rest below it), not text, and no completion item offered it.
    assert_eq!(
        report["ghost"],
        json!({ "inline": "x = abs(x)", "lines": ["    ay = abs(y)", "    return ax + ay"] }),
        "{report:#}"
    );
    let typed = norm1::ORIGINAL.replacen("\n    \n", "\n    a\n", 1);
    assert_eq!(report["textWithGhost"], typed, "{report:#}");
    assert_eq!(report["suggestWidget"], json!([]), "{report:#}");
    // The model was asked at the typed `a` with the text around the cursor alone: the other
    // open files (the Rust file edited above, the Markdown notes and report) are of other
    // languages, and stay out of a Python file's prompt.
    let asked = norm1::PROMPT;
    let prompts: Vec<String> = fim
        .lock()
        .unwrap()
        .bodies
        .iter()
        .filter_map(|b| b["prompt"].as_str().map(str::to_owned))
        .collect();
    assert!(prompts.iter().any(|p| p == asked), "{prompts:#?}");
    // Tab inserted it: the editor's text, and the file the editor saved.
    assert_eq!(report["completed"], norm1::ACCEPTED, "{report:#}");
    let saved = std::fs::read_to_string(ws.join("norm.py")).unwrap();
    assert_eq!(saved, norm1::ACCEPTED);
    for shot in [
        "vscode-hover.png",
        "vscode-diff.png",
        "vscode-research.png",
        "vscode-completion.png",
    ] {
        assert!(artifacts.join(shot).exists(), "missing artifact {shot}");
    }
}
