//! The edit workflow end to end below the editor: scenarios under `fixtures/workflow/scenarios`
//! script a model's answers and say what the run must produce. Every scenario runs twice: with
//! an in-process scripted model, and with the real HTTP client (`HttpModel`, through the
//! `ModelRouter`) against a local server replaying the answers in the OpenAI wire format
//! (SSE streams, native tool calls, or the text protocol for `tools = "text"` providers).
//! Nothing may be written to disk: the run's result is a proposal.
//!
//! Each scenario and model kind is one named test (`cargo test --test workflow_edit --
//! misindented::replay`); the other tests are listed in `main`.

mod support;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchwise::config::{Config, ValueSource};
use patchwise::model::replay::{ReplayServer, Reply, openai_sse};
use patchwise::model::{
    ChatModel, ChatRequest, ChatStream, FinishReason, Message, ModelRouter, StreamEvent, ToolCall,
    ToolChoice, Usage,
};
use patchwise::tools::{OpenBuffer, Snapshot};
use patchwise::workflow::edit::{
    self, EditContext, EditFailure, EditFormat, EditOptions, EditRequest, Models, Progress,
    lines_to_bytes,
};
use patchwise::workflow::{Proposal, Proposals};
use serde_json::{Value, json};
use support::{cases, copy_dir, tree};
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let mut trials = scenario_trials();
    // The tests beside the scenarios; a test function left out of this list is dead code, which
    // the lints refuse.
    trials.extend([
        cases::test("a_hung_model_is_cancelled", || {
            cases::block_on(a_hung_model_is_cancelled())
        }),
        cases::test("cancelled_before_start_asks_nobody", || {
            cases::block_on(cancelled_before_start_asks_nobody())
        }),
        cases::test("an_unreachable_model_is_a_clear_failure", || {
            cases::block_on(an_unreachable_model_is_a_clear_failure())
        }),
        cases::test("progress_reports_every_phase", || {
            cases::block_on(progress_reports_every_phase())
        }),
        cases::test("open_buffers_are_edited_as_the_editor_has_them", || {
            cases::block_on(open_buffers_are_edited_as_the_editor_has_them())
        }),
        cases::test("targets_outside_the_workspace_are_refused", || {
            cases::block_on(targets_outside_the_workspace_are_refused())
        }),
        cases::test("max_attempts_and_parse_check_come_from_config", || {
            cases::block_on(max_attempts_and_parse_check_come_from_config())
        }),
        cases::test("use_codestral_resolves_to_the_coding_agent", || {
            cases::block_on(use_codestral_resolves_to_the_coding_agent())
        }),
        cases::test("the_run_future_is_send", the_run_future_is_send),
        cases::test(
            "force_edit_names_the_tool_first_and_after_a_silent_answer",
            || cases::block_on(force_edit_names_the_tool_first_and_after_a_silent_answer()),
        ),
        cases::test(
            "an_answer_that_broke_off_costs_an_attempt_not_the_run",
            || cases::block_on(an_answer_that_broke_off_costs_an_attempt_not_the_run()),
        ),
        cases::test("a_5000_line_file_fits_an_8k_model_and_is_rewritten", || {
            cases::block_on(a_5000_line_file_fits_an_8k_model_and_is_rewritten())
        }),
        cases::test(
            "a_300_line_function_in_a_2000_line_file_fits_an_8k_model",
            || cases::block_on(a_300_line_function_in_a_2000_line_file_fits_an_8k_model()),
        ),
        cases::test(
            "a_conversation_growing_over_five_rounds_keeps_fitting_an_8k_model",
            || cases::block_on(a_conversation_growing_over_five_rounds_keeps_fitting_an_8k_model()),
        ),
    ]);
    cases::main(trials)
}

// ---------------------------------------------------------------------------------------------
// Test doubles and helpers

/// One scripted answer.
#[derive(Clone, Debug)]
enum Answer {
    Calls(Vec<(String, Value)>),
    Text(String),
    /// Never answers (a hung server).
    Hang,
    /// The stream ends early (a shared server interrupting the answer).
    BrokenOff,
}

fn answers(v: &Value) -> Vec<Answer> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|r| match r.get("calls") {
                    Some(calls) => Answer::Calls(
                        calls
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|c| {
                                (
                                    c["name"].as_str().unwrap().to_owned(),
                                    c["arguments"].clone(),
                                )
                            })
                            .collect(),
                    ),
                    None => Answer::Text(r["text"].as_str().unwrap().to_owned()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A model answering from a script (the last answer repeats), recording every request.
struct Scripted {
    name: String,
    script: Mutex<VecDeque<Answer>>,
    last: Mutex<Option<Answer>>,
    requests: Mutex<Vec<ChatRequest>>,
    window: usize,
}

impl Scripted {
    fn new(name: &str, script: Vec<Answer>) -> Arc<Scripted> {
        Scripted::with_window(name, script, 32_000)
    }

    fn with_window(name: &str, script: Vec<Answer>, window: usize) -> Arc<Scripted> {
        Arc::new(Scripted {
            name: name.to_owned(),
            script: Mutex::new(script.into()),
            last: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
            window,
        })
    }

    fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| request_text(&r.messages))
            .collect()
    }
}

impl Scripted {
    fn tool_choices(&self) -> Vec<ToolChoice> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.options.tool_choice.clone())
            .collect()
    }
}

fn request_text(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| match m {
            Message::Assistant {
                content,
                tool_calls,
            } => format!(
                "{content}{}",
                tool_calls
                    .iter()
                    .map(|c| c.arguments.to_string())
                    .collect::<String>()
            ),
            other => other.text().to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl ChatModel for Scripted {
    fn name(&self) -> &str {
        &self.name
    }

    fn context_window(&self) -> usize {
        self.window
    }

    fn chat(&self, request: ChatRequest, _cancel: CancellationToken) -> ChatStream {
        self.requests.lock().unwrap().push(request);
        let next = self.script.lock().unwrap().pop_front();
        let answer = match next {
            Some(a) => {
                *self.last.lock().unwrap() = Some(a.clone());
                a
            }
            None => self
                .last
                .lock()
                .unwrap()
                .clone()
                .unwrap_or(Answer::Text(String::new())),
        };
        let events: Vec<StreamEvent> = match answer {
            Answer::Hang => return Box::pin(futures::stream::pending()),
            Answer::BrokenOff => {
                return Box::pin(futures::stream::iter([Err(
                    patchwise::model::ModelError::StreamEndedEarly {
                        url: "http://127.0.0.1/v1".into(),
                        detail: "[DONE] arrived without a finish_reason".into(),
                    },
                )]));
            }
            Answer::Text(text) => vec![StreamEvent::TextDelta { text }],
            Answer::Calls(calls) => calls
                .into_iter()
                .enumerate()
                .map(|(index, (name, arguments))| StreamEvent::ToolCall {
                    index,
                    call: ToolCall {
                        id: format!("call_{index}"),
                        name,
                        arguments,
                        arguments_error: None,
                        provider_data: None,
                    },
                })
                .collect(),
        };
        let done = StreamEvent::Done {
            finish: FinishReason::Stop,
            usage: Usage::default(),
        };
        Box::pin(futures::stream::iter(
            events.into_iter().chain([done]).map(Ok),
        ))
    }
}

/// An SSE answer in the OpenAI chat-completions wire format.
fn sse(answer: &Answer) -> Reply {
    match answer {
        Answer::Hang => Reply::Hang,
        Answer::BrokenOff => Reply::Close,
        Answer::Text(t) => openai_sse(t, &[], "stop"),
        Answer::Calls(calls) => openai_sse("", calls, "tool_calls"),
    }
}

fn replay_requests(server: &ReplayServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| {
            let body = r.json();
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    let mut s = m["content"].as_str().unwrap_or_default().to_owned();
                    if let Some(calls) = m["tool_calls"].as_array() {
                        for c in calls {
                            s.push_str(c["function"]["arguments"].as_str().unwrap_or_default());
                        }
                    }
                    s
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

fn fixtures() -> PathBuf {
    support::fixture("workflow")
}

/// A temp dir with the workflow workspace in `ws/`.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    workspace_from("workspace")
}

/// A temp dir with `fixtures/workflow/<name>` in `ws/`.
fn workspace_from(name: &str) -> (tempfile::TempDir, PathBuf) {
    support::workspace_copy(&format!("workflow/{name}"))
}

/// The workspace of a scenario: `workspace` names the fixture directory, `workspace_at` where in
/// the workspace it goes (the path it had when its answers were recorded).
fn scenario_workspace(spec: &Value) -> (tempfile::TempDir, PathBuf) {
    let name = spec["workspace"].as_str().unwrap_or("workspace");
    match spec["workspace_at"].as_str() {
        None => workspace_from(name),
        Some(at) => {
            let dir = tempfile::tempdir().unwrap();
            let ws = dir.path().join("ws");
            copy_dir(&fixtures().join(name), &ws.join(at));
            (dir, ws)
        }
    }
}

/// The text of a recorded answer (an SSE stream or a JSON completion): what the scripted model
/// says in its place.
fn recorded_answer(path: &Path) -> Answer {
    let raw = std::fs::read_to_string(path).unwrap();
    let body = raw.split_once("\n\n").map(|(_, b)| b).unwrap_or_default();
    let mut text = String::new();
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        if let Some(t) = chunk["choices"][0]["delta"]["content"].as_str() {
            text.push_str(t);
        }
    }
    if text.is_empty()
        && let Ok(v) = serde_json::from_str::<Value>(body)
    {
        text = v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    }
    Answer::Text(text)
}

fn request_for(ws: &Path, path: &str, lines: (usize, usize), instruction: &str) -> EditRequest {
    let text = std::fs::read_to_string(ws.join(path)).unwrap();
    EditRequest {
        path: ws.join(path),
        range: lines_to_bytes(&text, lines.0, lines.1),
        instruction: instruction.to_owned(),
    }
}

fn context(ws: &Path, models: Models) -> EditContext {
    EditContext::new(
        Config::default(),
        models,
        vec![ws.to_path_buf()],
        Snapshot::new(),
    )
}

fn replay_config(coder_url: &str, strong_url: Option<&str>, tools: &str, extra: &str) -> Config {
    let mut text = format!(
        r#"
[providers.coder]
kind = "openai"
base_url = "{coder_url}/v1"
api_key_env = ""
tools = "{tools}"

[roles]
coder = "coder/coder-model"
"#
    );
    if let Some(url) = strong_url {
        text.push_str("escalation = \"strong/strong-model\"\n");
        text.push_str(&format!(
            "\n[providers.strong]\nkind = \"openai\"\nbase_url = \"{url}/v1\"\napi_key_env = \"\"\n"
        ));
    }
    text.push_str(
        "\n[timeouts]\nconnect = 2\nfirst_token = 20\ntotal = 60\n\n[retry]\nmax_attempts = 1\n",
    );
    text.push_str(extra);
    let (config, problems) = Config::from_toml_str(&text, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    config
}

struct Outcome {
    result: Result<Proposal, EditFailure>,
    coder_requests: Vec<String>,
    strong_requests: Vec<String>,
    progress: Vec<String>,
}

fn no_progress() -> impl Fn(Progress) + Send + Sync {
    |_| {}
}

async fn run_scenario(spec: &Value, ws: &Path, replay: bool) -> Outcome {
    let target = &spec["target"];
    let lines = target["lines"].as_array().unwrap();
    let request = request_for(
        ws,
        target["path"].as_str().unwrap(),
        (
            lines[0].as_u64().unwrap() as usize,
            lines[1].as_u64().unwrap() as usize,
        ),
        spec["instruction"].as_str().unwrap(),
    );
    // An answer `{"recorded": PATH}` (an `.http` file under fixtures/model, recorded from a real
    // model) is replayed byte for byte; the scripted run gets its text.
    let recorded_path = |r: &Value| {
        r["recorded"]
            .as_str()
            .map(|p| Path::new(env!("CARGO_MANIFEST_DIR")).join(p))
    };
    let coder_entries: Vec<Value> = spec["coder"].as_array().cloned().unwrap_or_default();
    let coder_script: Vec<Answer> = coder_entries
        .iter()
        .map(|r| match recorded_path(r) {
            Some(p) => recorded_answer(&p),
            None => answers(&json!([r])).remove(0),
        })
        .collect();
    let strong_script = answers(&spec["escalation"]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let progress = {
        let seen = seen.clone();
        move |p: Progress| seen.lock().unwrap().push(p.message)
    };
    if replay {
        let replies = coder_entries
            .iter()
            .zip(&coder_script)
            .map(|(r, a)| match recorded_path(r) {
                Some(p) => Reply::from_file(p).unwrap(),
                None => sse(a),
            })
            .collect();
        let coder = ReplayServer::start(replies).await.unwrap();
        let strong = if strong_script.is_empty() {
            None
        } else {
            Some(
                ReplayServer::start(strong_script.iter().map(sse).collect())
                    .await
                    .unwrap(),
            )
        };
        let tools = spec["provider_tools"].as_str().unwrap_or("native");
        let config = replay_config(
            &coder.url(),
            strong.as_ref().map(|s| s.url()).as_deref(),
            tools,
            spec["config"].as_str().unwrap_or(""),
        );
        let router = Arc::new(ModelRouter::new(config.clone()));
        let mut ctx = EditContext::new(
            config,
            Models::Router(router),
            vec![ws.to_path_buf()],
            Snapshot::new(),
        );
        ctx.options.edit_format = edit_format(spec);
        let result = edit::run(&ctx, request, &progress, CancellationToken::new()).await;
        Outcome {
            result,
            coder_requests: replay_requests(&coder),
            strong_requests: strong.as_ref().map(replay_requests).unwrap_or_default(),
            progress: seen.lock().unwrap().clone(),
        }
    } else {
        let coder = Scripted::new("test/coder", coder_script);
        let strong =
            (!strong_script.is_empty()).then(|| Scripted::new("test/strong", strong_script));
        let models = Models::Fixed {
            coder: coder.clone(),
            escalation: strong.clone().map(|s| s as Arc<dyn ChatModel>),
        };
        let (config, problems) =
            Config::from_toml_str(spec["config"].as_str().unwrap_or(""), ValueSource::Default);
        assert!(problems.is_empty(), "{problems:?}");
        let mut ctx = EditContext::new(config, models, vec![ws.to_path_buf()], Snapshot::new());
        ctx.options.edit_format = edit_format(spec);
        let result = edit::run(&ctx, request, &progress, CancellationToken::new()).await;
        Outcome {
            result,
            coder_requests: coder.requests(),
            strong_requests: strong.map(|s| s.requests()).unwrap_or_default(),
            progress: seen.lock().unwrap().clone(),
        }
    }
}

/// A scenario's `edit_format` (`"tools"` for the scenarios that script the tools protocol).
fn edit_format(spec: &Value) -> Option<EditFormat> {
    spec.get("edit_format")
        .map(|f| serde_json::from_value(f.clone()).expect("auto, rewrite or tools"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

fn check_scenario(name: &str, spec: &Value, ws: &Path, out: &Outcome) -> Vec<String> {
    let mut errs = Vec::new();
    let expect = &spec["expect"];
    let mut fail = |m: String| errs.push(format!("{name}: {m}"));
    let contains_all = |hay: &str, needles: &[String]| -> Vec<String> {
        needles
            .iter()
            .filter(|n| !hay.contains(n.as_str()))
            .map(|n| format!("missing {n:?}"))
            .collect()
    };
    match (&out.result, expect["ok"].as_bool().unwrap()) {
        (Ok(p), true) => {
            if let Some(n) = expect["attempts"].as_u64()
                && p.attempts != n as usize
            {
                fail(format!("attempts {} != {n}", p.attempts));
            }
            if let Some(m) = expect["model_contains"].as_str()
                && !p.model.contains(m)
            {
                fail(format!("model {} lacks {m}", p.model));
            }
            if let Some(m) = expect["matched_by_contains"].as_str()
                && !p.matched_by.contains(m)
            {
                fail(format!("matched_by {} lacks {m}", p.matched_by));
            }
            for e in contains_all(&p.diff, &strings(&expect["diff_contains"])) {
                fail(format!("diff {e}:\n{}", p.diff));
            }
            let files = expect["files"].as_object().cloned().unwrap_or_default();
            if files.len() != p.files.len() {
                fail(format!(
                    "{} files changed, expected {}",
                    p.files.len(),
                    files.len()
                ));
            }
            for f in &p.files {
                let disk = std::fs::read_to_string(ws.join(&f.display_path)).unwrap_or_default();
                if f.original != disk {
                    fail(format!("{}: original is not the disk text", f.display_path));
                }
                if f.edit.apply(&f.original).as_deref() != Ok(f.new_text.as_str()) {
                    fail(format!(
                        "{}: edit does not produce new_text",
                        f.display_path
                    ));
                }
                match files.get(&f.display_path) {
                    None => fail(format!("unexpected change to {}", f.display_path)),
                    Some(want) => {
                        for e in contains_all(&f.new_text, &strings(want)) {
                            fail(format!("{} {e}:\n{}", f.display_path, f.new_text));
                        }
                    }
                }
            }
            if !out.progress.iter().any(|p| p == "proposal ready") {
                fail(format!("no `proposal ready` progress: {:?}", out.progress));
            }
        }
        (Err(e), false) => {
            for m in contains_all(&e.to_string(), &strings(&expect["error_contains"])) {
                fail(format!("error {m}: {e}"));
            }
        }
        (Ok(p), false) => fail(format!("expected a failure, got a proposal:\n{}", p.diff)),
        (Err(e), true) => fail(format!("expected a proposal, got: {e}")),
    }
    if let Some(n) = expect["requests"].as_u64()
        && out.coder_requests.len() != n as usize
    {
        fail(format!(
            "{} coder requests, expected {n}",
            out.coder_requests.len()
        ));
    }
    let first = out.coder_requests.first().cloned().unwrap_or_default();
    for m in contains_all(&first, &strings(&expect["first_request_contains"])) {
        fail(format!("first request {m}:\n{first}"));
    }
    let last = out.coder_requests.last().cloned().unwrap_or_default();
    for m in contains_all(&last, &strings(&expect["last_request_contains"])) {
        fail(format!("last request {m}:\n{last}"));
    }
    let strong = out.strong_requests.first().cloned().unwrap_or_default();
    for m in contains_all(
        &strong,
        &strings(&expect["escalation_first_request_contains"]),
    ) {
        fail(format!("escalation request {m}:\n{strong}"));
    }
    for m in strings(&expect["escalation_first_request_lacks"]) {
        if strong.contains(&m) {
            fail(format!("escalation request should not contain {m:?}"));
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/// One trial per scenario file and model kind: `misindented::scripted`, `misindented::replay`.
fn scenario_trials() -> Vec<cases::Trial> {
    let root = fixtures().join("scenarios");
    let paths = support::json_files(&root);
    let total = paths.len();
    let mut trials = vec![cases::test("there_are_ten_scenarios", move || {
        assert!(
            total >= 10,
            "expected the workflow scenarios, found {total}"
        );
    })];
    for path in paths {
        for replay in [false, true] {
            let kind = if replay { "replay" } else { "scripted" };
            let name = format!("{}::{kind}", cases::name(&root, &path));
            let path = path.clone();
            trials.push(cases::test(&name, move || {
                cases::block_on(scenario(&path, replay));
            }));
        }
    }
    trials
}

async fn scenario(path: &Path, replay: bool) {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (dir, ws) = scenario_workspace(&spec);
    let before = tree(dir.path());
    let out = tokio::time::timeout(Duration::from_secs(120), run_scenario(&spec, &ws, replay))
        .await
        .unwrap_or_else(|_| panic!("{name}: the run did not end"));
    let label = format!("{name} ({})", if replay { "replay" } else { "scripted" });
    let mut errors = check_scenario(&label, &spec, &ws, &out);
    if tree(dir.path()) != before {
        errors.push(format!("{label}: the run wrote to disk"));
    }
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

// ---------------------------------------------------------------------------------------------
// Cancellation, unreachable models, progress, buffers, options

async fn a_hung_model_is_cancelled() {
    let (_dir, ws) = workspace();
    for replay in [false, true] {
        let cancel = CancellationToken::new();
        let asked = {
            let cancel = cancel.clone();
            move |p: Progress| {
                if p.message.starts_with("asking") {
                    cancel.cancel();
                }
            }
        };
        let request = request_for(&ws, "src/lib.rs", (13, 16), "anything");
        let (result, server) = if replay {
            let server = ReplayServer::start(vec![Reply::Hang]).await.unwrap();
            let config = replay_config(&server.url(), None, "native", "");
            let ctx = EditContext::new(
                config.clone(),
                Models::Router(Arc::new(ModelRouter::new(config))),
                vec![ws.clone()],
                Snapshot::new(),
            );
            let r = tokio::time::timeout(
                Duration::from_secs(60),
                edit::run(&ctx, request, &asked, cancel.clone()),
            )
            .await
            .expect("cancel ends the run");
            (r, Some(server))
        } else {
            let coder = Scripted::new("test/hung", vec![Answer::Hang]);
            let ctx = context(
                &ws,
                Models::Fixed {
                    coder,
                    escalation: None,
                },
            );
            let r = tokio::time::timeout(
                Duration::from_secs(60),
                edit::run(&ctx, request, &asked, cancel.clone()),
            )
            .await
            .expect("cancel ends the run");
            (r, None)
        };
        let err = result.unwrap_err();
        assert_eq!(err, EditFailure::Cancelled, "{err}");
        assert_eq!(err.to_string(), "no proposal: cancelled");
        drop(server);
    }
}

async fn cancelled_before_start_asks_nobody() {
    let (_dir, ws) = workspace();
    let coder = Scripted::new("test/coder", vec![Answer::Text("x".into())]);
    let ctx = context(
        &ws,
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    let cancel = CancellationToken::new();
    cancel.cancel();
    let r = edit::run(
        &ctx,
        request_for(&ws, "src/lib.rs", (1, 2), "x"),
        &no_progress(),
        cancel,
    )
    .await;
    assert_eq!(r.unwrap_err(), EditFailure::Cancelled);
    assert!(coder.requests().is_empty());
}

async fn an_unreachable_model_is_a_clear_failure() {
    let (_dir, ws) = workspace();
    // A port nothing listens on: bind, learn the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = replay_config(&format!("http://127.0.0.1:{port}"), None, "native", "");
    let ctx = EditContext::new(
        config.clone(),
        Models::Router(Arc::new(ModelRouter::new(config))),
        vec![ws.clone()],
        Snapshot::new(),
    );
    let err = edit::run(
        &ctx,
        request_for(&ws, "src/lib.rs", (13, 16), "x"),
        &no_progress(),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, EditFailure::Model(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("no proposal: no answer from the model: cannot connect"),
        "{text}"
    );
}

async fn progress_reports_every_phase() {
    let (_dir, ws) = workspace();
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("scenarios/ambiguous_then_more_context.json"))
            .unwrap(),
    )
    .unwrap();
    let out = run_scenario(&spec, &ws, false).await;
    assert!(out.result.is_ok());
    let p = &out.progress;
    assert_eq!(p.first().map(String::as_str), Some("reading"));
    assert!(p.contains(&"asking test/coder".to_owned()), "{p:?}");
    assert!(p.contains(&"attempt 2/3".to_owned()), "{p:?}");
    assert_eq!(p.last().map(String::as_str), Some("proposal ready"));
}

async fn open_buffers_are_edited_as_the_editor_has_them() {
    let (dir, ws) = workspace();
    let before = tree(dir.path());
    let lib = ws.join("src/lib.rs");
    let disk = std::fs::read_to_string(&lib).unwrap();
    // The editor has unsaved changes: a new method the disk does not have.
    let buffer = disk.replace(
        "    pub fn largest",
        "    pub fn twice(&self) -> i32 {\n        self.x * 2\n    }\n\n    pub fn largest",
    );
    let mut snapshot = Snapshot::new();
    snapshot.insert(
        lib.clone(),
        OpenBuffer {
            text: buffer.clone(),
            version: 42,
        },
    );
    let coder = Scripted::new(
        "test/coder",
        vec![
            Answer::Calls(vec![(
                "edit_file".into(),
                json!({"path": "src/lib.rs", "old_string": "self.x * 2", "new_string": "self.x * 2 + self.y * 2"}),
            )]),
            Answer::Text("Done.".into()),
        ],
    );
    let mut ctx = context(
        &ws,
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    ctx.snapshot = snapshot;
    let start = buffer.find("pub fn twice").unwrap();
    let request = EditRequest {
        path: lib.clone(),
        range: start..start + 10,
        instruction: "double both".into(),
    };
    let p = edit::run(&ctx, request, &no_progress(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(p.files.len(), 1);
    let f = &p.files[0];
    assert_eq!(f.base_version, Some(42));
    assert_eq!(f.original, buffer);
    assert!(f.new_text.contains("self.x * 2 + self.y * 2"));
    assert!(coder.requests()[0].contains("pub fn twice"));
    assert_eq!(tree(dir.path()), before, "nothing reaches the disk");

    // The proposal goes into the store and applies to the buffer at its version.
    let mut store = Proposals::new();
    let id = store.add(p.clone());
    let apply = store.to_apply(id, &buffer, Some(42)).unwrap();
    let applied = patchwise::document::change::TextEdit::new(apply.replacements)
        .unwrap()
        .apply(&buffer)
        .unwrap();
    assert_eq!(applied, f.new_text);
}

async fn targets_outside_the_workspace_are_refused() {
    let (dir, ws) = workspace();
    std::fs::write(dir.path().join("outside.rs"), "fn x() {}\n").unwrap();
    let coder = Scripted::new("test/coder", vec![Answer::Text("x".into())]);
    let ctx = context(
        &ws,
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    // A missing file inside the workspace is not refused: it is a file the run creates
    // (`docs/editing.md`, "Write sessions").
    for path in [
        dir.path().join("outside.rs"),
        PathBuf::from("../outside.rs"),
    ] {
        let err = edit::run(
            &ctx,
            EditRequest {
                path: path.clone(),
                range: 0..0,
                instruction: "x".into(),
            },
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, EditFailure::Target(_)), "{path:?}: {err}");
    }
    assert!(coder.requests().is_empty());
}

async fn max_attempts_and_parse_check_come_from_config() {
    let (_dir, ws) = workspace();
    let (config, problems) = Config::from_toml_str(
        "[edit]\nmax_attempts = 1\nparse_check = false\nstop_after_edit = true\n",
        ValueSource::Default,
    );
    assert!(problems.is_empty(), "{problems:?}");
    let options = EditOptions::from_config(&config);
    assert_eq!(options.max_attempts, 1);
    assert!(!options.parse_check);
    assert!(options.stop_after_edit);
    assert_eq!(EditOptions::default().max_attempts, 3);

    // One attempt only.
    let coder = Scripted::new(
        "test/coder",
        vec![Answer::Calls(vec![(
            "edit_file".into(),
            json!({"path": "src/lib.rs", "old_string": "nope", "new_string": "x"}),
        )])],
    );
    let mut ctx = context(
        &ws,
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    ctx.options = options.clone();
    let err = edit::run(
        &ctx,
        request_for(&ws, "src/lib.rs", (13, 16), "x"),
        &no_progress(),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("every attempt was refused (1 attempt)"),
        "{err}"
    );
    assert_eq!(coder.requests().len(), 1);

    // Without the parse check a breaking edit goes through, and stop_after_edit ends the run
    // without asking the model again.
    let coder = Scripted::new(
        "test/coder",
        vec![Answer::Calls(vec![(
            "edit_file".into(),
            json!({"path": "src/lib.rs", "old_string": "        total\n    }\n\n    pub fn largest", "new_string": "        total\n\n    pub fn largest"}),
        )])],
    );
    ctx.models = Models::Fixed {
        coder: coder.clone(),
        escalation: None,
    };
    let p = edit::run(
        &ctx,
        request_for(&ws, "src/lib.rs", (13, 16), "x"),
        &no_progress(),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(coder.requests().len(), 1);
    assert!(p.diff.contains("-    }"), "{}", p.diff);
}

async fn use_codestral_resolves_to_the_coding_agent() {
    let (_dir, ws) = workspace();
    let coder = Scripted::new(
        "test/coder",
        vec![
            Answer::Calls(vec![(
                "edit_file".into(),
                json!({"path": "src/lib.rs", "old_string": "let total = self.x.max(self.y);\n        total", "new_string": "self.x.max(self.y)"}),
            )]),
            Answer::Text("Done.".into()),
        ],
    );
    let mut ctx = context(
        &ws,
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    ctx.options.edit_format = Some(EditFormat::Tools);
    assert_eq!(edit::coding_agent_spec().name, "use_coding_agent");
    let call = ToolCall {
        id: "c1".into(),
        name: "use_codestral".into(),
        arguments: json!({"path": "src/lib.rs", "instruction": "simplify largest", "start_line": 18, "end_line": 21}),
        arguments_error: None,
        provider_data: None,
    };
    let p = edit::run_tool_call(&ctx, &call, &no_progress(), CancellationToken::new())
        .await
        .unwrap();
    assert!(
        p.files[0]
            .new_text
            .contains("        self.x.max(self.y)\n    }")
    );
    assert!(coder.requests()[0].contains("Target: method `largest` of src/lib.rs, lines 18-21"));
    let bad = ToolCall {
        name: "read_file".into(),
        ..call
    };
    assert!(matches!(
        edit::run_tool_call(&ctx, &bad, &no_progress(), CancellationToken::new()).await,
        Err(EditFailure::Target(_))
    ));
}

fn the_run_future_is_send() {
    fn is_send<T: Send>(_: &T) {}
    let ws = std::env::temp_dir();
    let coder = Scripted::new("test/coder", vec![]);
    let ctx = context(
        &ws,
        Models::Fixed {
            coder,
            escalation: None,
        },
    );
    let progress = no_progress();
    let fut = edit::run(
        &ctx,
        EditRequest {
            path: ws.join("x"),
            range: 0..0,
            instruction: "x".into(),
        },
        &progress,
        CancellationToken::new(),
    );
    is_send(&fut);
}

async fn force_edit_names_the_tool_first_and_after_a_silent_answer() {
    let (_dir, ws) = workspace();
    let coder = Scripted::new(
        "test/coder",
        vec![
            Answer::Text("I would return the sum.".into()),
            Answer::Calls(vec![(
                "edit_file".into(),
                json!({"path": "src/lib.rs", "old_string": "self.y.abs();\n        total", "new_string": "self.y.abs();\n        total.max(0)"}),
            )]),
            Answer::Text("Done.".into()),
        ],
    );
    let mut ctx = context(
        &ws,
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    assert!(!ctx.options.force_edit, "off by default");
    ctx.options.force_edit = true;
    ctx.options.edit_format = Some(EditFormat::Tools);
    let p = edit::run(
        &ctx,
        request_for(&ws, "src/lib.rs", (13, 16), "clamp"),
        &no_progress(),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(p.attempts, 2);
    let forced = ToolChoice::Tool("edit_file".into());
    assert_eq!(
        coder.tool_choices(),
        [forced.clone(), forced, ToolChoice::Auto],
        "forced first, forced again after the answer without calls, then auto"
    );
    assert!(coder.requests()[1].contains("it said: \"I would return the sum.\""));
}

async fn an_answer_that_broke_off_costs_an_attempt_not_the_run() {
    let (_dir, ws) = workspace();
    let edit = Answer::Calls(vec![(
        "edit_file".into(),
        json!({"path": "src/lib.rs", "old_string": "self.y.abs();\n        total", "new_string": "self.y.abs();\n        total.max(0)"}),
    )]);
    let coder = Scripted::new(
        "test/coder",
        vec![Answer::BrokenOff, edit, Answer::Text("Done.".into())],
    );
    let ctx = context(
        &ws,
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    let p = edit::run(
        &ctx,
        request_for(&ws, "src/lib.rs", (13, 16), "clamp"),
        &no_progress(),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(p.attempts, 2);
    assert!(coder.requests()[1].contains("the answer broke off"));
    // Broken every time: the last one is reported as the model's failure.
    let coder = Scripted::new("test/coder", vec![Answer::BrokenOff]);
    let ctx = context(
        &ws,
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    let err = edit::run(
        &ctx,
        request_for(&ws, "src/lib.rs", (13, 16), "clamp"),
        &no_progress(),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, EditFailure::Model(_)), "{err}");
    assert_eq!(coder.requests().len(), 3);
}

// ---------------------------------------------------------------------------------------------
// Budgets: every request planned against an 8,192-token model

/// Every request `model` received fits its window with the answer's reservation, counted as
/// the model layer counts it; returns the prompt sizes.
fn assert_all_fit(model: &Scripted) -> Vec<usize> {
    use patchwise::model::budget::{Budget, count_request};
    let budget = Budget::for_window(&model.name, model.window);
    let requests = model.requests.lock().unwrap().clone();
    assert!(!requests.is_empty());
    requests
        .iter()
        .map(|r| {
            let tokens = count_request(r, budget.encoding);
            let room = budget.available(r);
            assert!(
                tokens <= room,
                "a request of {tokens} tokens does not fit {room} (window {}, max_tokens {:?})",
                model.window,
                r.options.max_tokens
            );
            assert!(
                r.options.max_tokens.is_some_and(|m| m >= 200),
                "{:?}",
                r.options.max_tokens
            );
            tokens
        })
        .collect()
}

/// A Python module of `functions` functions of `body` lines each.
fn big_python(functions: usize, body: usize) -> String {
    let mut s = String::from("\"\"\"A large module.\"\"\"\n\nimport os\n\n");
    for f in 0..functions {
        s.push_str(&format!(
            "\ndef step_{f}(value, limit=10):\n    \"\"\"Step {f}.\"\"\"\n"
        ));
        for l in 0..body {
            s.push_str(&format!(
                "    value = value + {l} * limit  # adjust step {f}, part {l}\n"
            ));
        }
        s.push_str("    return value\n\n");
    }
    s
}

async fn a_5000_line_file_fits_an_8k_model_and_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let text = big_python(400, 8); // ~5,200 lines
    assert!(text.lines().count() > 5_000);
    std::fs::write(dir.path().join("big.py"), &text).unwrap();
    let first = text
        .lines()
        .position(|l| l == "def step_200(value, limit=10):")
        .unwrap()
        + 1;
    let new_fn = {
        let mut f = String::from(
            "def step_200(value, limit=10):\n    \"\"\"Step 200.\"\"\"\n    if limit < 0:\n        raise ValueError('limit must not be negative')\n",
        );
        for l in 0..8 {
            f.push_str(&format!(
                "    value = value + {l} * limit  # adjust step 200, part {l}\n"
            ));
        }
        f.push_str("    return value\n");
        f
    };
    let coder = Scripted::with_window(
        "test/qwen2.5-coder-1.5b",
        vec![Answer::Text(format!("```python\n{new_fn}```\n"))],
        8_192,
    );
    let ctx = context(
        dir.path(),
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    let text_now = std::fs::read_to_string(dir.path().join("big.py")).unwrap();
    let request = EditRequest {
        path: dir.path().join("big.py"),
        range: lines_to_bytes(&text_now, first + 3, first + 3),
        instruction: "add a guard clause for a negative limit".into(),
    };
    let p = edit::run(&ctx, request, &no_progress(), CancellationToken::new())
        .await
        .unwrap();
    let sizes = assert_all_fit(&coder);
    assert_eq!(sizes.len(), 1, "one request");
    assert!(
        sizes[0] < 1_000,
        "the first prompt shows the function, not the file: {sizes:?}"
    );
    assert!(p.matched_by.contains("rewrite"), "{}", p.matched_by);
    assert_eq!(p.files[0].edit.replacements().len(), 1, "{}", p.diff);
    assert!(p.diff.contains("+    if limit < 0:"), "{}", p.diff);
    assert_eq!(
        p.files[0].new_text.lines().count(),
        text.lines().count() + 2
    );
}

async fn a_300_line_function_in_a_2000_line_file_fits_an_8k_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = big_python(60, 25);
    let huge = big_python(1, 300).replace("step_0", "huge");
    text.push_str(&huge);
    assert!(text.lines().count() > 2_000);
    std::fs::write(dir.path().join("m.py"), &text).unwrap();
    let first = text
        .lines()
        .position(|l| l.starts_with("def huge("))
        .unwrap()
        + 1;
    // The model answers badly (prose), then with a fragment, then gives up: every request of
    // every attempt and protocol must still fit.
    let coder = Scripted::with_window(
        "test/qwen2.5-coder-1.5b",
        vec![
            Answer::Text("I would add a guard clause.".into()),
            Answer::Text("```python\n    value = value + 1\n```".into()),
            Answer::Text("Sorry.".into()),
        ],
        8_192,
    );
    let ctx = context(
        dir.path(),
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    let request = EditRequest {
        path: dir.path().join("m.py"),
        range: lines_to_bytes(&text, first + 100, first + 102),
        instruction: "add a guard clause for a negative limit".into(),
    };
    let err = edit::run(&ctx, request, &no_progress(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            EditFailure::NoEdit { .. } | EditFailure::Refused { .. }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains("context window"), "{err}");
    assert_eq!(assert_all_fit(&coder).len(), 3);
}

async fn a_conversation_growing_over_five_rounds_keeps_fitting_an_8k_model() {
    let dir = tempfile::tempdir().unwrap();
    let text = big_python(300, 10);
    std::fs::write(dir.path().join("grow.py"), &text).unwrap();
    let read = |offset: usize| {
        Answer::Calls(vec![(
            "read_file".into(),
            json!({"path": "grow.py", "offset": offset, "limit": 400}),
        )])
    };
    let coder = Scripted::with_window(
        "test/qwen2.5-coder-1.5b",
        vec![
            read(1),
            read(401),
            read(801),
            read(1201),
            read(1601),
            Answer::Calls(vec![(
                "edit_file".into(),
                json!({"path": "grow.py", "old_string": "def step_250(value, limit=10):\n    \"\"\"Step 250.\"\"\"", "new_string": "def step_250(value, limit=10):\n    \"\"\"Step two hundred and fifty.\"\"\""}),
            )]),
            Answer::Text("Done.".into()),
        ],
        8_192,
    );
    let mut ctx = context(
        dir.path(),
        Models::Fixed {
            coder: coder.clone(),
            escalation: None,
        },
    );
    ctx.options.edit_format = Some(EditFormat::Tools);
    let first = text
        .lines()
        .position(|l| l.starts_with("def step_250("))
        .unwrap()
        + 1;
    let request = EditRequest {
        path: dir.path().join("grow.py"),
        range: lines_to_bytes(&text, first, first + 12),
        instruction: "spell the step number out in the docstring".into(),
    };
    let p = edit::run(&ctx, request, &no_progress(), CancellationToken::new())
        .await
        .unwrap();
    assert!(
        p.diff
            .contains("+    \"\"\"Step two hundred and fifty.\"\"\""),
        "{}",
        p.diff
    );
    let sizes = assert_all_fit(&coder);
    assert_eq!(sizes.len(), 7);
    // The tools requests offer the edit tools only.
    let tools: Vec<String> = coder.requests.lock().unwrap()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        tools,
        [
            "read_file",
            "edit_file",
            "insert_lines",
            "replace_lines",
            "replace_symbol"
        ]
    );
}
