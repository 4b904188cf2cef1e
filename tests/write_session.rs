//! Write sessions and the engine-operation tools end to end below the editor: each scenario
//! under `fixtures/write/scenarios` scripts a model's answers, served by a local replay server
//! in the OpenAI streaming wire format (SSE text deltas, native tool calls, `finish_reason:
//! "length"` for an answer cut at the token limit; `provider_tools = "text"` for the text
//! protocol), through the real HTTP client and the edit workflow, and says what the proposal must
//! hold and what the model must have been told. The workspace on disk never changes.
//!
//! The runs use the shipped default edit protocol (`edit_format = "auto"`): a run that creates a
//! file — its target does not exist or is empty (`"target"`), or the instruction names a new
//! file — must offer and run write sessions with it. Only scenarios about the tools protocol
//! itself set `"edit_format": "tools"`. `"offered"` / `"not_offered"` name tools that request
//! `i` must (not) offer.
//!
//! An answer is `{"calls": [...]}`, `{"text": "..."}`, or a slice of a content file:
//! `{"content": "big.rs", "lines": [1, 150], "repeat": 1, "fence": "rust", "close_fence": true,
//! "cut": "fn ad", "marker": "w1", "finish": "length"}` — an opening fence, the `repeat` lines
//! before the slice (a model repeating itself), lines 1..=150 of `fixtures/write/content/big.rs`,
//! a closing fence, a fragment of the next line, then the marker of session `w1` on its own line.
//! A file expected in the proposal is a content file name (equal to it), `{"text": …}` (equal),
//! or a list of texts it contains.
//!
//! Each scenario is one named test: `cargo test --test write_session -- never_finishes`.

mod support;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use patchwise::config::{Config, ValueSource};
use patchwise::model::ModelRouter;
use patchwise::model::replay::{ReplayServer, Reply, openai_sse};
use patchwise::tools::Snapshot;
use patchwise::workflow::edit::{self, EditContext, EditRequest, Models, lines_to_bytes};
use serde_json::Value;
use support::{cases, copy_dir, tree};
use tokio_util::sync::CancellationToken;

fn fixtures() -> PathBuf {
    support::fixture("write")
}

fn content_lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(fixtures().join("content").join(name))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The text of one scripted answer (see the module docs).
fn answer_text(a: &Value) -> String {
    if let Some(t) = a["text"].as_str() {
        return t.to_owned();
    }
    let Some(name) = a["content"].as_str() else {
        return String::new();
    };
    let lines = content_lines(name);
    let range = a["lines"].as_array().unwrap();
    let (first, last) = (
        range[0].as_u64().unwrap() as usize,
        range[1].as_u64().unwrap() as usize,
    );
    let repeat = a["repeat"].as_u64().unwrap_or(0) as usize;
    let mut out = String::new();
    if let Some(lang) = a["fence"].as_str() {
        out.push_str(&format!("```{lang}\n"));
    }
    for l in &lines[first - 1 - repeat..last] {
        out.push_str(l);
        out.push('\n');
    }
    if a["close_fence"].as_bool() == Some(true) {
        out.push_str("```\n");
    }
    if let Some(cut) = a["cut"].as_str() {
        out.push_str(cut);
    }
    if let Some(id) = a["marker"].as_str() {
        out.push_str(&format!("__END_WRITE_{id}__\n"));
    }
    out
}

fn reply(a: &Value) -> Reply {
    let calls: Vec<(String, Value)> = a["calls"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap().to_owned(),
                        c["arguments"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let finish = a["finish"].as_str().unwrap_or(if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    });
    openai_sse(&answer_text(a), &calls, finish)
}

/// The configuration of a scenario: the edit protocol is the shipped default unless the
/// scenario names one (`edit_format`).
fn config(url: &str, tools: &str, edit_format: Option<&str>, extra: &str) -> Config {
    let model = match edit_format {
        Some(f) => format!("[models.\"coder/coder-model\"]\nedit_format = \"{f}\"\n\n"),
        None => String::new(),
    };
    let text = format!(
        "[providers.coder]\nkind = \"openai\"\nbase_url = \"{url}/v1\"\napi_key_env = \"\"\n\
         tools = \"{tools}\"\n\n[roles]\ncoder = \"coder/coder-model\"\n\n[timeouts]\nconnect = 2\n\
         first_token = 20\ntotal = 60\n\n[retry]\nmax_attempts = 1\n\n{model}{extra}"
    );
    let (config, problems) = Config::from_toml_str(&text, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    config
}

/// The body of every chat request the server got.
fn chat_bodies(server: &ReplayServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.json())
        .collect()
}

/// The text of every chat request the server got (all message contents and call arguments).
fn requests(server: &ReplayServer) -> Vec<String> {
    chat_bodies(server)
        .iter()
        .map(|body| {
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    let mut s = m["content"].as_str().unwrap_or_default().to_owned();
                    for c in m["tool_calls"].as_array().into_iter().flatten() {
                        s.push_str(c["function"]["arguments"].as_str().unwrap_or_default());
                    }
                    s
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// The names of the tools every chat request offered.
fn offered(server: &ReplayServer) -> Vec<Vec<String>> {
    chat_bodies(server)
        .iter()
        .map(|body| {
            body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .collect()
}

/// The tool choice of every chat request.
fn tool_choices(server: &ReplayServer) -> Vec<Value> {
    chat_bodies(server)
        .iter()
        .map(|body| body["tool_choice"].clone())
        .collect()
}

async fn run(name: &str, spec: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    copy_dir(&fixtures().join("workspace"), &ws);
    let before = tree(&ws);
    let server = ReplayServer::start(
        spec["coder"]
            .as_array()
            .unwrap()
            .iter()
            .map(reply)
            .collect(),
    )
    .await
    .unwrap();
    let config = config(
        &server.url(),
        spec["provider_tools"].as_str().unwrap_or("native"),
        spec["edit_format"].as_str(),
        spec["config"].as_str().unwrap_or(""),
    );
    let router = Arc::new(ModelRouter::new(config.clone()));
    let ctx = EditContext::new(
        config,
        Models::Router(router),
        vec![ws.clone()],
        Snapshot::new(),
    );
    // A target that does not exist is a file the run creates (a cursor at its start).
    let target = ws.join(spec["target"].as_str().unwrap_or("src/lib.rs"));
    let text = std::fs::read_to_string(&target).unwrap_or_default();
    let request = EditRequest {
        path: target,
        range: if text.is_empty() {
            0..0
        } else {
            lines_to_bytes(&text, 1, 1)
        },
        instruction: spec["instruction"].as_str().unwrap().to_owned(),
    };
    let result = edit::run(&ctx, request, &|_| {}, CancellationToken::new()).await;
    let mut fail = |m: String| errs.push(format!("{name}: {m}"));
    if tree(&ws) != before {
        fail("the workspace on disk changed".to_owned());
    }
    let expect = &spec["expect"];
    match (&result, expect["ok"].as_bool().unwrap()) {
        (Ok(p), true) => {
            let files = expect["files"].as_object().cloned().unwrap_or_default();
            let changed: Vec<&str> = p.files.iter().map(|f| f.display_path.as_str()).collect();
            let mut wanted: Vec<&str> = files.keys().map(String::as_str).collect();
            wanted.sort();
            let mut got = changed.clone();
            got.sort();
            if got != wanted {
                fail(format!("changed {got:?}, expected {wanted:?}"));
            }
            for f in &p.files {
                match files.get(&f.display_path) {
                    Some(Value::String(equals)) => {
                        let want = std::fs::read_to_string(fixtures().join("content").join(equals))
                            .unwrap();
                        if f.new_text != want {
                            fail(format!(
                                "{} differs from content/{equals}:\n{}",
                                f.display_path,
                                patchwise::edit::unified_diff(&want, &f.new_text, equals)
                            ));
                        }
                    }
                    Some(Value::Object(o)) => {
                        let want = o["text"].as_str().unwrap();
                        if f.new_text != want {
                            fail(format!(
                                "{} differs:\n{}",
                                f.display_path,
                                patchwise::edit::unified_diff(want, &f.new_text, &f.display_path)
                            ));
                        }
                    }
                    Some(needles) => {
                        for n in strings(needles) {
                            if !f.new_text.contains(&n) {
                                fail(format!("{} lacks {n:?}:\n{}", f.display_path, f.new_text));
                            }
                        }
                    }
                    None => {}
                }
            }
        }
        (Err(e), false) => {
            for n in strings(&expect["error_contains"]) {
                if !e.to_string().contains(&n) {
                    fail(format!("error lacks {n:?}: {e}"));
                }
            }
        }
        (Ok(p), false) => fail(format!("expected no proposal, got:\n{}", p.diff)),
        (Err(e), true) => fail(format!("expected a proposal, got: {e}")),
    }
    let sent = requests(&server);
    if let Some(n) = expect["requests"].as_u64()
        && sent.len() != n as usize
    {
        fail(format!("{} requests, expected {n}", sent.len()));
    }
    if let Some(told) = expect["told"].as_object() {
        for (index, needles) in told {
            let i: usize = index.parse().unwrap();
            let Some(req) = sent.get(i) else {
                fail(format!("no request {i}"));
                continue;
            };
            for n in strings(needles) {
                if !req.contains(&n) {
                    fail(format!("request {i} lacks {n:?}:\n{req}"));
                }
            }
        }
    }
    let tools = offered(&server);
    for (key, must) in [("offered", true), ("not_offered", false)] {
        for (index, names) in expect[key].as_object().into_iter().flatten() {
            let i: usize = index.parse().unwrap();
            let got = tools.get(i).cloned().unwrap_or_default();
            for n in strings(names) {
                if got.contains(&n) != must {
                    fail(format!("request {i} offers {got:?}; {key} {n}"));
                }
            }
        }
    }
    if let Some(choices) = expect["tool_choice"].as_object() {
        let got = tool_choices(&server);
        for (index, want) in choices {
            let i: usize = index.parse().unwrap();
            if got.get(i) != Some(want) {
                fail(format!(
                    "request {i} tool_choice {:?}, expected {want}",
                    got.get(i)
                ));
            }
        }
    }
    errs
}

fn main() -> ExitCode {
    let root = fixtures().join("scenarios");
    let files = support::json_files(&root);
    let total = files.len();
    let mut trials = vec![cases::test("there_are_twelve_scenarios", move || {
        assert!(total >= 12, "expected the write scenarios, found {total}");
    })];
    trials.extend(cases::per_file(&root, files, |path| {
        let spec: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let errs = cases::block_on(run(&name, &spec));
        assert!(errs.is_empty(), "{}", errs.join("\n\n"));
    }));
    cases::main(trials)
}
