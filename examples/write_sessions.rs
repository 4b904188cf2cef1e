//! Measures long writes with a real model: the same five new files (150–400 lines: a Rust module
//! with tests, a Python module with tests, a JSON schema, a YAML CI file, a README section) made
//! through a write session (`begin_write`, content as plain text) or through a single
//! `write_file` call (content inside one JSON string), same instructions, temperature 0. For each
//! file it reports whether the proposal holds the file complete and valid, its lines, the model's
//! output tokens and the wall time, and records every answer under `--record DIR` in the
//! scenario format of `tests/write_session.rs` (so real answers can be replayed as tests).
//!
//! ```text
//! flock /tmp/patchwise-model.lock cargo run --example write_sessions -- \
//!     --base-url http://127.0.0.1:8088/v1 --model qwen2.5-coder-1.5b --variant session \
//!     --tasks 0,1 --record fixtures/model/write-sessions
//! ```
//!
//! `--variant session` hides `write_file` from the model, `--variant write_file` hides
//! `begin_write` and `end_write`: each file has one way to be made.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use patchwise::config::{Config, ModelRole, ValueSource};
use patchwise::edit::streamed::{Kind, incomplete_signs, unclosed_fence};
use patchwise::model::{
    ChatModel, ChatRequest, ChatStream, FinishReason, ModelRouter, StreamEvent, ToolCall,
};
use patchwise::syntax::validate::{Format, unfinished_end, validate};
use patchwise::tools::Snapshot;
use patchwise::workflow::edit::{self, EditContext, EditRequest, Models};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// (file to create, instruction). The instruction names the file and its size.
const TASKS: [(&str, &str); 5] = [
    (
        "src/stats.rs",
        "Create the new file src/stats.rs: a Rust module of descriptive statistics over &[f64] \
         with doc comments: mean, median, mode, variance, std_dev, min, max, range, percentile, \
         z_scores and histogram (Option results for empty input), followed by a #[cfg(test)] \
         module with one test per function. About 250 lines.",
    ),
    (
        "tools/inventory.py",
        "Create the new file tools/inventory.py: a Python module with a dataclass Item (name, \
         sku, quantity, price), a class Inventory with add, remove, restock, find, total_value, \
         low_stock and to_csv/from_csv methods with docstrings, and unittest tests for each \
         method at the end. About 200 lines.",
    ),
    (
        "schema/config.schema.json",
        "Create the new file schema/config.schema.json: a JSON Schema (draft 2020-12) for a web \
         service configuration with server (host, port, tls with cert and key), database (url, \
         pool size, timeouts), logging (level enum, format, outputs), auth (providers array with \
         name, client id, scopes) and features flags, every property with a description and \
         type, required lists and defaults. About 150 lines.",
    ),
    (
        ".github/workflows/ci.yml",
        "Create the new file .github/workflows/ci.yml: a GitHub Actions workflow for a Rust \
         project that runs on push and pull requests, with jobs fmt, clippy, test (a matrix of \
         ubuntu, macos and windows with stable and beta toolchains, caching cargo), coverage, \
         docs and a release job on tags that builds and uploads binaries for three targets. \
         Comment every job. About 150 lines.",
    ),
    (
        "docs/configuration.md",
        "Create the new file docs/configuration.md: a README section documenting the \
         configuration of this crate: an overview, then one subsection per setting group \
         (server, database, logging, auth, features) with a table of keys, types, defaults and \
         descriptions and a TOML example each, then troubleshooting tips. About 150 lines.",
    ),
];

#[derive(Default, Clone)]
struct Answer {
    text: String,
    calls: Vec<ToolCall>,
    finish: Option<FinishReason>,
    output_tokens: u64,
}

/// The model under test, with some tools hidden and every answer recorded.
struct Recording {
    inner: Arc<dyn ChatModel>,
    hide: Vec<&'static str>,
    answers: Arc<Mutex<Vec<Answer>>>,
}

impl ChatModel for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn context_window(&self) -> usize {
        self.inner.context_window()
    }

    fn chat(&self, mut request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        request
            .tools
            .retain(|t| !self.hide.contains(&t.name.as_str()));
        let answers = self.answers.clone();
        answers.lock().unwrap().push(Answer::default());
        let stream = self.inner.chat(request, cancel);
        Box::pin(stream.inspect(move |event| {
            let mut all = answers.lock().unwrap();
            let a = all.last_mut().unwrap();
            match event {
                Ok(StreamEvent::TextDelta { text }) => a.text.push_str(text),
                Ok(StreamEvent::ToolCall { call, .. }) => a.calls.push(call.clone()),
                Ok(StreamEvent::Done { finish, usage }) => {
                    a.finish = Some(finish.clone());
                    a.output_tokens = usage.output_tokens;
                }
                _ => {}
            }
        }))
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Why `text` (the new file) is not complete and valid; `None` when it is.
fn problem(path: &str, text: &str) -> Option<String> {
    if text.trim().is_empty() {
        return Some("empty".to_owned());
    }
    if let Some(format) = Format::of(path) {
        if let Some(p) = validate(format, text).first() {
            return Some(format!("invalid {}: {p}", format.name()));
        }
        if let Some(u) = unfinished_end(format, text) {
            return Some(u);
        }
    } else {
        let signs = incomplete_signs(text, Kind::Markdown);
        if let Some(s) = signs.first() {
            return Some(s.clone());
        }
        if let Some(line) = unclosed_fence(text) {
            return Some(format!("fence at line {line} left open"));
        }
    }
    None
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let base_url = arg(&args, "--base-url").unwrap_or("http://127.0.0.1:8088/v1".to_owned());
    let model = arg(&args, "--model").unwrap_or("qwen2.5-coder-1.5b".to_owned());
    let variant = arg(&args, "--variant").unwrap_or("session".to_owned());
    let record = arg(&args, "--record").map(PathBuf::from);
    let tasks: Vec<usize> = arg(&args, "--tasks")
        .map(|t| t.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| (0..TASKS.len()).collect());
    let hide: Vec<&'static str> = match variant.as_str() {
        "session" => vec!["write_file"],
        "write_file" => vec!["begin_write", "end_write"],
        other => panic!("unknown --variant {other}; use session or write_file"),
    };
    let config_text = format!(
        "[providers.local]\nkind = \"openai\"\nbase_url = \"{base_url}\"\napi_key_env = \"\"\n\n\
         [roles]\ncoder = \"local/{model}\"\n\n[edit]\ntemperature = 0.0\nescalate = false\nstop_after_edit = true\n\n\
         [timeouts]\nconnect = 10\nfirst_token = 900\ntotal = 1800\n"
    );
    let (config, problems) = Config::from_toml_str(&config_text, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    let router = Arc::new(ModelRouter::new(config.clone()));
    let inner = router
        .model(ModelRole::Coder, CancellationToken::new())
        .await
        .expect("the model answers");
    println!("variant  task  file                          ok    lines  out_tokens  seconds  why");
    for i in tasks {
        let (path, instruction) = TASKS[i];
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().to_path_buf();
        std::fs::create_dir_all(ws.join("src")).unwrap();
        let lib = "//! A small web service crate.\n\npub mod config;\n";
        std::fs::write(ws.join("src/lib.rs"), lib).unwrap();
        let answers = Arc::new(Mutex::new(Vec::new()));
        let recording = Arc::new(Recording {
            inner: inner.clone(),
            hide: hide.clone(),
            answers: answers.clone(),
        });
        let ctx = EditContext::new(
            config.clone(),
            Models::Fixed {
                coder: recording,
                escalation: None,
            },
            vec![ws.clone()],
            Snapshot::new(),
        );
        let request = EditRequest {
            path: ws.join("src/lib.rs"),
            range: 0..0,
            instruction: instruction.to_owned(),
        };
        let started = Instant::now();
        let result = edit::run(&ctx, request, &|_| {}, CancellationToken::new()).await;
        let seconds = started.elapsed().as_secs_f64();
        let answers = answers.lock().unwrap().clone();
        let tokens: u64 = answers.iter().map(|a| a.output_tokens).sum();
        let (ok, lines, why) = match &result {
            Ok(p) => match p.files.iter().find(|f| f.display_path == path) {
                Some(f) => {
                    let why = problem(path, &f.new_text);
                    (
                        why.is_none(),
                        f.new_text.lines().count(),
                        why.unwrap_or_default(),
                    )
                }
                None => (false, 0, format!("no {path} in the proposal")),
            },
            Err(e) => (false, 0, e.to_string()),
        };
        println!(
            "{variant:<8} {i:>4}  {path:<28} {:<5} {lines:>6} {tokens:>11} {seconds:>8.1}  {}",
            if ok { "yes" } else { "no" },
            why.chars().take(120).collect::<String>()
        );
        if let Some(dir) = &record {
            save(
                dir,
                &variant,
                i,
                path,
                instruction,
                &answers,
                ok,
                lines,
                tokens,
                seconds,
                &why,
            );
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn save(
    dir: &Path,
    variant: &str,
    task: usize,
    path: &str,
    instruction: &str,
    answers: &[Answer],
    ok: bool,
    lines: usize,
    tokens: u64,
    seconds: f64,
    why: &str,
) {
    std::fs::create_dir_all(dir).unwrap();
    let coder: Vec<Value> = answers
        .iter()
        .map(|a| {
            let finish = match &a.finish {
                Some(FinishReason::Length) => "length",
                Some(FinishReason::ToolCalls) => "tool_calls",
                _ => "stop",
            };
            if a.calls.is_empty() {
                json!({"text": a.text, "finish": finish})
            } else {
                json!({"text": a.text, "finish": finish, "calls": a.calls.iter().map(|c| json!({"name": c.name, "arguments": c.arguments})).collect::<Vec<_>>()})
            }
        })
        .collect();
    let out = json!({
        "about": format!("recorded from the real model: task {task} ({path}), variant {variant}"),
        "instruction": instruction,
        "variant": variant,
        "coder": coder,
        "measured": {"ok": ok, "lines": lines, "output_tokens": tokens, "seconds": seconds, "why": why},
    });
    let file = dir.join(format!("{variant}-{task}.json"));
    std::fs::write(&file, serde_json::to_string_pretty(&out).unwrap() + "\n").unwrap();
}
