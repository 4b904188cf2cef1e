//! Measures long writes with a real model: the same five new files (150–400 lines: a Rust module
//! with tests, a Python module with tests, a JSON schema, a YAML CI file, a README section) made
//! through a write session (`begin_write`, content as plain text, driven by the real
//! `WriteSessions` with its continuations and checks) or through a single `write_file` call
//! (content inside one JSON string), same system prompt and instruction, temperature 0, the tool
//! forced in the first answer. For each file it reports whether the file came out complete and
//! valid, its lines, the output tokens and the wall time, and records every answer under
//! `--record DIR` in the scenario format of `tests/write_session.rs`.
//!
//! ```text
//! flock /tmp/patchwise-model.lock cargo run --example write_sessions -- \
//!     --base-url http://127.0.0.1:8088/v1 --model qwen2.5-coder-1.5b --variant session \
//!     --tasks 0,1 --record fixtures/model/write-sessions
//! ```
//!
//! `--deadline SECS` (default 600) cancels a run that takes longer (recorded as a failure).
//! `--variant session` offers only `begin_write`, `--variant write_file` only `write_file`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use patchwise::config::{Config, ModelRole, ValueSource};
use patchwise::edit::streamed::{Kind, incomplete_signs, unclosed_fence};
use patchwise::model::{
    ChatOptions, ChatRequest, FinishReason, Message, ModelRouter, ToolCall, ToolChoice, complete,
};
use patchwise::syntax::validate::{Format, unfinished_end, validate};
use patchwise::tokens::{Encoding, count_tokens};
use patchwise::tools::{self, RealFs, Session, Snapshot, Status, ToolOptions};
use patchwise::workflow::write_session::WriteSessions;
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

/// One model answer, as recorded.
#[derive(Default, Clone)]
struct Answer {
    text: String,
    calls: Vec<ToolCall>,
    finish: Option<FinishReason>,
    output_tokens: u64,
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

const SYSTEM: &str = "You are a coding assistant. You create files in the workspace with the tools \
                      you are given. Write the whole file, complete, exactly as it should be saved.";

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let base_url = arg(&args, "--base-url").unwrap_or("http://127.0.0.1:8088/v1".to_owned());
    let model = arg(&args, "--model").unwrap_or("qwen2.5-coder-1.5b".to_owned());
    let variant = arg(&args, "--variant").unwrap_or("session".to_owned());
    let record = arg(&args, "--record").map(PathBuf::from);
    let deadline: u64 = arg(&args, "--deadline")
        .and_then(|d| d.parse().ok())
        .unwrap_or(600);
    let tasks: Vec<usize> = arg(&args, "--tasks")
        .map(|t| t.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| (0..TASKS.len()).collect());
    let tool = match variant.as_str() {
        "session" => "begin_write",
        "write_file" => "write_file",
        other => panic!("unknown --variant {other}; use session or write_file"),
    };
    let config_text = format!(
        "[providers.local]\nkind = \"openai\"\nbase_url = \"{base_url}\"\napi_key_env = \"\"\n\n\
         [roles]\ncoder = \"local/{model}\"\n\n\
         [timeouts]\nconnect = 10\nfirst_token = 900\ntotal = 1800\n"
    );
    let (config, problems) = Config::from_toml_str(&config_text, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    let router = Arc::new(ModelRouter::new(config.clone()));
    let llm = router
        .model(ModelRole::Coder, CancellationToken::new())
        .await
        .expect("the model answers");
    let encoding = Encoding::for_model(&model);
    println!(
        "variant     task  file                          ok    lines  out_tokens  seconds  why"
    );
    for i in tasks {
        let (path, instruction) = TASKS[i];
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().to_path_buf();
        let mut session = Session::new(
            std::slice::from_ref(&ws),
            Arc::new(RealFs),
            Snapshot::new(),
            ToolOptions {
                // One write_file call is judged as it is, like a write session's content.
                parse_check: false,
                ..ToolOptions::default()
            },
        );
        let mut writes = WriteSessions::new(config.tools.clone());
        let mut messages = vec![Message::system(SYSTEM), Message::user(instruction)];
        let spec = tools::spec(tool).unwrap();
        let mut answers: Vec<Answer> = Vec::new();
        let started = Instant::now();
        let mut why = String::new();
        // A write session may take several answers; write_file gets exactly one call.
        let rounds = if tool == "write_file" { 1 } else { 8 };
        for round in 0..rounds {
            let tool_choice = if writes.expects_content() {
                ToolChoice::None
            } else if round == 0 {
                ToolChoice::Tool(tool.to_owned())
            } else {
                ToolChoice::Auto
            };
            let request = ChatRequest {
                messages: messages.clone(),
                tools: vec![spec.clone()],
                options: ChatOptions {
                    temperature: Some(0.0),
                    tool_choice,
                    ..ChatOptions::default()
                },
            };
            let left = deadline.saturating_sub(started.elapsed().as_secs());
            let response = tokio::select! {
                r = complete(llm.as_ref(), request, CancellationToken::new()) => r,
                _ = tokio::time::sleep(std::time::Duration::from_secs(left)) => {
                    why = format!("timed out after {deadline} s");
                    break;
                }
            };
            let response = match response {
                Ok(r) => r,
                Err(e) => {
                    why = format!("model error: {e}");
                    break;
                }
            };
            let mut answer = Answer {
                text: response.text.clone(),
                calls: response.tool_calls.clone(),
                finish: response.finish.clone(),
                output_tokens: response.usage.output_tokens,
            };
            if answer.output_tokens == 0 {
                let args: String = answer
                    .calls
                    .iter()
                    .map(|c| c.arguments.to_string())
                    .collect();
                answer.output_tokens =
                    count_tokens(&format!("{}{args}", answer.text), encoding) as u64;
            }
            eprintln!(
                "  {variant} {i} answer {round}: {:?}, {} tokens, {:.0}s",
                answer.finish,
                answer.output_tokens,
                started.elapsed().as_secs_f64()
            );
            answers.push(answer);
            if let Some(c) = writes.take_answer(&mut session, &response) {
                messages.push(Message::assistant(response.text.clone()));
                messages.push(Message::user(c.reply));
                if c.wrote.is_some() {
                    break;
                }
                continue;
            }
            if response.tool_calls.is_empty() {
                messages.push(Message::assistant(response.text.clone()));
                messages.push(Message::user(format!("Call {tool} to create {path}.")));
                continue;
            }
            let outcomes = writes.execute_all(&mut session, &response.tool_calls);
            messages.push(response.to_message());
            for o in &outcomes {
                messages.push(Message::ToolResult {
                    call_id: o.call_id.clone(),
                    name: o.name.clone(),
                    content: o.content.clone(),
                    is_error: o.is_error(),
                });
            }
            if outcomes
                .iter()
                .any(|o| matches!(o.status, Status::Edited { .. }))
            {
                break;
            }
            if let Some(failed) = outcomes.iter().find(|o| o.is_error()) {
                why = failed.content.chars().take(200).collect();
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        let tokens: u64 = answers.iter().map(|a| a.output_tokens).sum();
        let written = session
            .copy
            .changes()
            .into_iter()
            .find(|c| c.path.ends_with(path));
        let (ok, lines) = match &written {
            Some(c) => match problem(path, &c.text) {
                None => (true, c.text.lines().count()),
                Some(p) => {
                    why = p;
                    (false, c.text.lines().count())
                }
            },
            None => {
                if why.is_empty() {
                    why = format!("{path} was not written");
                }
                (false, 0)
            }
        };
        println!(
            "{variant:<11} {i:>4}  {path:<28} {:<5} {lines:>6} {tokens:>11} {seconds:>8.1}  {}",
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
        "file": path,
        "instruction": instruction,
        "variant": variant,
        "coder": coder,
        "measured": {"ok": ok, "lines": lines, "output_tokens": tokens, "seconds": seconds, "why": why},
    });
    let file = dir.join(format!("{variant}-{task}.json"));
    std::fs::write(&file, serde_json::to_string_pretty(&out).unwrap() + "\n").unwrap();
}
