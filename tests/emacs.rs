//! A client that is not ours: Emacs 28 + eglot 1.9 in batch mode (`tests/emacs/eglot.el`), used
//! as docs/editors.md tells its users — an instruction comment, "Apply instruction" from
//! `eglot-code-actions`, the proposal shown as a message, hover and "Show diff", then the
//! "Accept" code action, applied without a question; the Emacs buffer must hold the edit and
//! the server's copy must agree.
//!
//! It also keeps `fixtures/lsp/clients/eglot.json` honest: the capabilities there (which the
//! protocol tests in `tests/lsp_edit.rs` use) must be what this eglot really sends
//! (`UPDATE_EXPECT=1` rewrites them).
//!
//! `scripts/test` installs Debian's `emacs-nox` and `elpa-eglot` (see `scripts/editor-test-deps`).
//! Without them this test fails and says what is missing; `PATCHWISE_SKIP_EMACS=1` skips it on
//! purpose, `PATCHWISE_EMACS` names another `emacs` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn skip() -> bool {
    std::env::var_os("PATCHWISE_SKIP_EMACS").is_some_and(|v| v == "1")
}

/// The `emacs` binary, checked to run: a missing Emacs is a failure that says how to get one.
fn emacs() -> PathBuf {
    let emacs = std::env::var_os("PATCHWISE_EMACS").map_or_else(|| "emacs".into(), PathBuf::from);
    let version = Command::new(&emacs).arg("--version").output();
    match version {
        Ok(out) if out.status.success() => emacs,
        Ok(out) => panic!(
            "{} --version failed ({}): {}",
            emacs.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "cannot run {} ({e}): run scripts/test or scripts/editor-test-deps (they install \
             Debian's emacs-nox and elpa-eglot), set PATCHWISE_EMACS to an emacs binary, or \
             PATCHWISE_SKIP_EMACS=1 to skip",
            emacs.display()
        ),
    }
}

#[test]
fn emacs_eglot_instruction_comment_then_accept() {
    if skip() {
        return;
    }
    use patchwise::model::replay::ReplayServer;
    let emacs = emacs();
    let (s, replies) = support::edit_scenario("instruction_comment");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime.block_on(ReplayServer::start(replies)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    // eglot's workspace is the project (project.el): a git repository here.
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .expect("run git");
    assert!(git.success());
    // A generic client has no settings UI: the workspace file configures the model.
    std::fs::create_dir_all(ws.join(".patchwise")).unwrap();
    std::fs::write(
        ws.join(".patchwise/config.toml"),
        format!(
            "[providers.fake]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\n\n\
             [roles]\ncoder = \"fake/test-model\"\n\n[retry]\nmax_attempts = 1\n",
            model.url()
        ),
    )
    .unwrap();
    let original =
        std::fs::read_to_string(root().join("fixtures/lsp/edit/workspace/src/lib.rs")).unwrap();
    let comment = s["comment"].as_str().unwrap();
    let with_comment =
        original.replacen("    pub fn norm1", &format!("{comment}    pub fn norm1"), 1);
    let file = ws.join("src/lib.rs");
    std::fs::write(&file, &with_comment).unwrap();
    let out = dir.path().join("report.json");
    let traffic = dir.path().join("traffic.jsonl");

    let mut child = Command::new(&emacs)
        // `-q`, not `-Q`: `-Q` also skips activating the installed packages, and Debian's
        // elpa-eglot is one.
        .args(["--batch", "-q", "-l"])
        .arg(root().join("tests/emacs/eglot.el"))
        .current_dir(&ws)
        .env("PATCHWISE_BIN", env!("CARGO_BIN_EXE_patchwise"))
        .env("PATCHWISE_FILE", &file)
        .env("PATCHWISE_OUT", &out)
        .env("PATCHWISE_TRAFFIC", &traffic)
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {} ({e})", emacs.display()));
    // The script waits on conditions with deadlines of its own; this one only stops a hang.
    let deadline = Instant::now() + Duration::from_secs(900);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report = std::fs::read_to_string(&out).unwrap_or_else(|e| {
        panic!(
            "no report from Emacs ({e}; exit {}); stderr:\n{stderr}",
            output.status
        )
    });
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(
        report["ok"], true,
        "the Emacs session failed: {report:#}\nstderr:\n{stderr}"
    );
    assert_eq!(report["server"], "patchwise");
    let text = |key: &str| report[key].as_str().unwrap_or_default().to_owned();

    // Only the instruction's action: eglot cannot ask for an instruction.
    assert_eq!(
        report["actions"],
        serde_json::json!(["Apply instruction: document norm1"]),
        "{report:#}"
    );
    // eglot 1.9 shows no progress: the echo area says at once that the run started ...
    assert!(
        text("started").contains("working on: document norm1"),
        "{report:#}"
    );
    // ... and the proposal shows in words eglot's user can act on: no code lens is mentioned.
    let ready = text("ready");
    assert!(
        ready.contains("code actions") && !ready.contains("code lens"),
        "{ready}"
    );
    // ... and so does its diagnostic, as flymake has it on the changed line.
    let diagnostics = report["diagnostics"].to_string();
    assert!(
        diagnostics.contains("Accept proposal") && !diagnostics.contains("code lens"),
        "{diagnostics}"
    );
    // Hover (eldoc) is plain text, as eglot declared, and holds the diff.
    let hover = text("hover");
    assert!(hover.contains("+    /// The taxicab norm"), "{hover}");
    assert!(!hover.contains("```") && !hover.contains("**"), "{hover}");
    // "Show diff" shows the diff as a message (eglot 1.9 has no window/showDocument).
    assert!(
        text("diff_message").contains("+    /// The taxicab norm"),
        "{report:#}"
    );
    let offered: Vec<&str> = report["proposal_actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for prefix in ["Accept", "Reject", "Show diff"] {
        assert!(offered.iter().any(|t| t.starts_with(prefix)), "{offered:?}");
    }
    // While the comment's proposal is pending, the comment offers no second run.
    assert!(
        !offered.iter().any(|t| t.starts_with("Apply instruction")),
        "{offered:?}"
    );
    // "Accept" carries its edit, which eglot applies without asking (it asks "Server wants to
    // edit … Proceed?" before a workspace/applyEdit the server sends).
    assert_eq!(
        report["prompts"].as_array().map(Vec::len),
        Some(0),
        "{report:#}"
    );

    // The buffer holds the edit and the instruction comment is gone; the server's copy agrees.
    let buffer = text("buffer");
    assert!(buffer.contains(s["expected"].as_str().unwrap()), "{buffer}");
    assert!(!buffer.contains("patchwise:"), "{buffer}");
    assert_eq!(report["server_text"], report["buffer"]);
    assert_eq!(report["modified"], true);
    // The file on disk is the user's to save.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), with_comment);

    check_capabilities_fixture(&traffic);
}

/// The capabilities eglot sent in `initialize` are those of `fixtures/lsp/clients/eglot.json`;
/// `UPDATE_EXPECT=1` writes them there.
fn check_capabilities_fixture(traffic: &Path) {
    let sent = std::fs::read_to_string(traffic).unwrap();
    let initialize: Value = sent
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|m| m["method"] == "initialize")
        .unwrap_or_else(|| panic!("no initialize among what eglot sent:\n{sent}"));
    let sent_caps = &initialize["params"]["capabilities"];
    let fixture = "fixtures/lsp/clients/eglot.json";
    let mut recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(fixture)).unwrap()).unwrap();
    if support::expect::updating() {
        recorded["capabilities"] = sent_caps.clone();
        let text = serde_json::to_string_pretty(&recorded).unwrap() + "\n";
        std::fs::write(root().join(fixture), text).unwrap();
        return;
    }
    assert_eq!(
        &recorded["capabilities"], sent_caps,
        "eglot's capabilities differ from {fixture}; run with UPDATE_EXPECT=1 to record them"
    );
}
