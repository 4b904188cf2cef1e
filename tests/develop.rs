//! The develop workflow end to end below the editor: scenarios under `fixtures/develop/scenarios`
//! script the planner, coder, judge and escalation models; each role is a local server replaying
//! the answers in the OpenAI wire format (SSE streams with native tool calls; one scenario speaks
//! Anthropic's Messages format), reached through the real HTTP client and the `ModelRouter`.
//! The check and test commands really run (cargo, python, tsc) in the overlay.
//!
//! Every scenario asserts that the workspace on disk is byte-identical after the run: a develop
//! run proposes, it never writes.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchwise::config::{Config, ValueSource};
use patchwise::model::ModelRouter;
use patchwise::model::replay::{ReplayServer, Reply};
use patchwise::tools::Snapshot;
use patchwise::workflow::develop::{
    self, DevelopContext, DevelopModels, DevelopRequest, Outcome, Progress, StepStatus,
    VerifyStatus,
};
use serde_json::{Value, json};
use support::{copy_dir, openai_sse, tree};
use tokio_util::sync::CancellationToken;

const ROLES: [&str; 4] = ["planner", "coder", "judge", "escalation"];

fn fixtures() -> PathBuf {
    support::fixture("develop")
}

fn git_commit_all(ws: &Path) {
    for args in [
        vec!["init", "-q"],
        vec!["add", "-A"],
        vec![
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "start",
        ],
    ] {
        let out = std::process::Command::new("git")
            .args(&args)
            .current_dir(ws)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Whether process `pid` still runs (a zombie waiting for its parent counts as gone).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            != Some("Z")
    })
}

/// One scripted answer in Anthropic's Messages SSE format.
fn anthropic_sse(answer: &Value) -> Reply {
    let mut events: Vec<(String, Value)> = vec![(
        "message_start".into(),
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
               "model": "claude", "content": [], "stop_reason": null,
               "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )];
    let stop = if let Some(calls) = answer["calls"].as_array() {
        for (i, c) in calls.iter().enumerate() {
            events.push(("content_block_start".into(), json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": c["name"], "input": {}}})));
            events.push((
                "content_block_delta".into(),
                json!({"type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta", "partial_json": c["arguments"].to_string()}}),
            ));
            events.push((
                "content_block_stop".into(),
                json!({"type": "content_block_stop", "index": i}),
            ));
        }
        "tool_use"
    } else {
        let text = answer["text"].as_str().unwrap_or_default();
        events.push((
            "content_block_start".into(),
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ));
        events.push((
            "content_block_delta".into(),
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": text}}),
        ));
        events.push((
            "content_block_stop".into(),
            json!({"type": "content_block_stop", "index": 0}),
        ));
        "end_turn"
    };
    events.push((
        "message_delta".into(),
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    ));
    events.push(("message_stop".into(), json!({"type": "message_stop"})));
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    Reply::Http {
        head: "HTTP/1.1 200 OK\ncontent-type: text/event-stream".to_owned(),
        body,
    }
}

/// The text of every message of every chat request a server received.
fn request_texts(server: &ReplayServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| {
            let body = r.json();
            let mut out = String::new();
            if let Some(s) = body["system"].as_str() {
                out.push_str(s);
                out.push('\n');
            }
            for m in body["messages"].as_array().into_iter().flatten() {
                match &m["content"] {
                    Value::String(s) => out.push_str(s),
                    Value::Array(parts) => {
                        for p in parts {
                            out.push_str(
                                p["text"]
                                    .as_str()
                                    .or(p["content"].as_str())
                                    .unwrap_or_default(),
                            );
                        }
                    }
                    _ => {}
                }
                out.push('\n');
            }
            out
        })
        .collect()
}

struct Run {
    outcome: Outcome,
    /// Each role's replay server, kept for what it saw after the run.
    servers: std::collections::HashMap<String, Arc<ReplayServer>>,
    requests: std::collections::HashMap<String, Vec<String>>,
    progress: Vec<Progress>,
    /// Bytes of the models' answers reported as they streamed in (`on_stream`).
    streamed: usize,
    workspace: PathBuf,
    _dir: tempfile::TempDir,
}

/// Runs a scenario file and checks the invariants every scenario shares.
/// The Python of the test venv, which has pytest (`scripts/test` installs it; `PATCHWISE_PYTHON`
/// overrides).
fn python() -> PathBuf {
    std::env::var_os("PATCHWISE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-test/bin/python"))
}

async fn scenario(name: &str) -> (Run, Value) {
    let path = fixtures().join("scenarios").join(format!("{name}.json"));
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    copy_dir(&fixtures().join(spec["workspace"].as_str().unwrap()), &ws);
    if spec["node_modules"].as_bool() == Some(true) {
        let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/vscode/node_modules");
        assert!(
            modules.join(".bin/tsc").exists(),
            "run `npm ci` in editors/vscode first (scripts/test does)"
        );
        std::os::unix::fs::symlink(&modules, ws.join("node_modules")).unwrap();
    }
    for (file, text) in spec["files"].as_object().into_iter().flatten() {
        let p = ws.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text.as_str().unwrap()).unwrap();
    }
    if spec["git"].as_str() == Some("dirty") {
        git_commit_all(&ws);
        std::fs::write(ws.join("NOTES.txt"), "uncommitted\n").unwrap();
    }
    let before = tree(&ws);
    let anthropic = spec["provider"].as_str() == Some("anthropic");
    let mut servers = std::collections::HashMap::new();
    let mut toml = String::new();
    let mut roles = String::from("[roles]\n");
    for role in ROLES {
        // Planner and coder always have a server (a run resolves them up front).
        let none = Vec::new();
        let answers = match spec[role].as_array() {
            Some(a) => a,
            None if matches!(role, "planner" | "coder") => &none,
            None => continue,
        };
        let replies = answers
            .iter()
            .map(|a| {
                if let Some(file) = a["http"].as_str() {
                    // A real model's answer, recorded (fixtures/model/).
                    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
                    return Reply::from_file(&path).unwrap();
                }
                if anthropic {
                    anthropic_sse(a)
                } else {
                    openai_sse(a)
                }
            })
            .collect();
        let server = ReplayServer::start(replies).await.unwrap();
        let (kind, base) = if anthropic {
            ("anthropic", server.url())
        } else {
            ("openai", format!("{}/v1", server.url()))
        };
        toml.push_str(&format!(
            "[providers.{role}]\nkind = \"{kind}\"\nbase_url = \"{base}\"\napi_key_env = \"\"\n\n"
        ));
        roles.push_str(&format!("{role} = \"{role}/{role}-model\"\n"));
        servers.insert(role.to_owned(), Arc::new(server));
    }
    toml.push_str(&roles);
    // data_dir is a top-level key: it goes before the first table.
    let toml = format!(
        "data_dir = \"{}\"\n\n{toml}\n[timeouts]\nconnect = 2\nfirst_token = 30\ntotal = 120\n\n\
         [retry]\nmax_attempts = 1\n\n[develop]\napprove = \"auto\"\n{}",
        dir.path().join("data").display(),
        spec["config"]
            .as_str()
            .unwrap_or_default()
            .replace("{dir}", &dir.path().display().to_string())
            .replace("{python}", &python().display().to_string())
    );
    let (config, problems) = Config::from_toml_str(&toml, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}\n{toml}");
    let router = Arc::new(ModelRouter::new(config.clone()));
    let mut ctx = DevelopContext::new(
        config,
        DevelopModels::Router(router),
        vec![ws.clone()],
        Snapshot::new(),
    );
    if let Some(ms) = spec["max_duration_ms"].as_u64() {
        // `[develop] max_minutes` counts whole minutes; a test's budget is shorter.
        ctx.options.max_duration = Duration::from_millis(ms);
    }
    let streamed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    ctx.on_stream = Some({
        let streamed = streamed.clone();
        Arc::new(move |bytes| {
            streamed.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        })
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let progress = {
        let seen = seen.clone();
        move |p: Progress| seen.lock().unwrap().push(p)
    };
    let cancel = CancellationToken::new();
    if let Some(after) = spec["cancel_after_coder_requests"].as_u64() {
        // Cancel once the coder has been asked `after` times (mid-step).
        let coder = servers.get("coder").unwrap().clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            while (coder.requests().len() as u64) < after {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cancel.cancel();
        });
    }
    if let Some(file) = spec["cancel_when_file"].as_str() {
        // Cancel once the step's check command is running (it writes its pid first).
        let file = dir.path().join(file);
        let cancel = cancel.clone();
        tokio::spawn(async move {
            while std::fs::read_to_string(&file).map_or(true, |t| t.trim().is_empty()) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cancel.cancel();
        });
    }
    let request = DevelopRequest {
        request: spec["request"].as_str().unwrap().to_owned(),
        focus: None,
    };
    let outcome = develop::run(&ctx, request, &progress, cancel).await;
    assert_eq!(
        tree(&ws),
        before,
        "{name}: the workspace on disk changed before accept"
    );
    let requests = servers
        .iter()
        .map(|(role, s)| (role.clone(), request_texts(s)))
        .collect();
    let run = Run {
        outcome,
        servers,
        requests,
        progress: seen.lock().unwrap().clone(),
        streamed: streamed.load(std::sync::atomic::Ordering::Relaxed),
        workspace: ws,
        _dir: dir,
    };
    check_expectations(name, &run, &spec["expect"]);
    (run, spec)
}

fn check_expectations(name: &str, run: &Run, expect: &Value) {
    let report = &run.outcome.report;
    let summary = report.summary();
    let ctx = format!("{name}:\n{summary}");
    if let Some(want) = expect["proposal"].as_bool() {
        assert_eq!(run.outcome.proposal.is_some(), want, "{ctx}");
    }
    if let Some(proposal) = &run.outcome.proposal {
        for (file, needles) in expect["files"].as_object().into_iter().flatten() {
            let f = proposal
                .files
                .iter()
                .find(|f| f.display_path == *file)
                .unwrap_or_else(|| panic!("{ctx}\nno {file} in the proposal"));
            for n in needles.as_array().unwrap() {
                assert!(
                    f.new_text.contains(n.as_str().unwrap()),
                    "{ctx}\n{file}:\n{}",
                    f.new_text
                );
            }
        }
        let mut changed: Vec<&str> = proposal
            .files
            .iter()
            .map(|f| f.display_path.as_str())
            .collect();
        changed.sort();
        if let Some(want) = expect["changed"].as_array() {
            let want: Vec<&str> = want.iter().map(|v| v.as_str().unwrap()).collect();
            assert_eq!(changed, want, "{ctx}");
        }
        if let Some(want) = expect["created"].as_array() {
            let created: Vec<&str> = proposal
                .files
                .iter()
                .filter(|f| f.created)
                .map(|f| f.display_path.as_str())
                .collect();
            let want: Vec<&str> = want.iter().map(|v| v.as_str().unwrap()).collect();
            assert_eq!(created, want, "{ctx}");
        }
    }
    if let Some(want) = expect["steps"].as_array() {
        let got: Vec<&str> = report
            .steps
            .iter()
            .map(|s| match s.status {
                StepStatus::Done => "done",
                StepStatus::Failed => "failed",
                StepStatus::Stopped => "stopped",
            })
            .collect();
        let want: Vec<&str> = want.iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(got, want, "{ctx}");
    }
    if let Some(want) = expect["verify"].as_str() {
        let got = match &report.verify {
            VerifyStatus::Passed => "passed",
            VerifyStatus::Failed(_) => "failed",
            VerifyStatus::NotRun(_) => "not_run",
        };
        assert_eq!(got, want, "{ctx}");
    }
    if let Some(want) = expect["judge"].as_str() {
        let got = match &report.judge {
            Some(develop::judge::Decision::Run(_)) => "run",
            Some(develop::judge::Decision::Skip(_)) => "skip",
            None => "none",
        };
        assert_eq!(got, want, "{ctx}");
    }
    for needle in expect["summary_contains"].as_array().into_iter().flatten() {
        assert!(
            summary.contains(needle.as_str().unwrap()),
            "{ctx}\nmissing: {needle}"
        );
    }
    // Progress messages the user was shown, each needle in one of them.
    let messages: Vec<&str> = run.progress.iter().map(|p| p.message.as_str()).collect();
    for needle in expect["progress_contains"].as_array().into_iter().flatten() {
        let needle = needle.as_str().unwrap();
        assert!(
            messages.iter().any(|m| m.contains(needle)),
            "{name}: no progress message holds {needle:?}: {messages:?}"
        );
    }
    for needle in expect["summary_lacks"].as_array().into_iter().flatten() {
        assert!(
            !summary.contains(needle.as_str().unwrap()),
            "{ctx}\nhas: {needle}"
        );
    }
    for needle in expect["stopped_contains"].as_array().into_iter().flatten() {
        let stopped = report.stopped.clone().unwrap_or_default();
        assert!(
            stopped.contains(needle.as_str().unwrap()),
            "{ctx}\nstopped: {stopped}"
        );
    }
    if let Some(want) = expect["not_done"].as_array() {
        assert_eq!(report.not_done.len(), want.len(), "{ctx}");
        for (got, needle) in report.not_done.iter().zip(want) {
            assert!(got.starts_with(needle.as_str().unwrap()), "{ctx}\n{got}");
        }
    }
    for needle in expect["failure_contains"].as_array().into_iter().flatten() {
        let failure = report.failure.clone().unwrap_or_default();
        assert!(
            failure.contains(needle.as_str().unwrap()),
            "{ctx}\nfailure: {failure}"
        );
    }
    for (role, checks) in expect["requests"].as_object().into_iter().flatten() {
        let texts = run.requests.get(role).cloned().unwrap_or_default();
        if let Some(n) = checks["count"].as_u64() {
            assert_eq!(
                texts.len() as u64,
                n,
                "{ctx}\n{role} requests: {}",
                texts.len()
            );
        }
        for (index, needles) in checks["contains"].as_object().into_iter().flatten() {
            let i: usize = index.parse().unwrap();
            let text = texts
                .get(i)
                .unwrap_or_else(|| panic!("{ctx}\nno {role} request {i}"));
            for n in needles.as_array().unwrap() {
                assert!(
                    text.contains(n.as_str().unwrap()),
                    "{ctx}\n{role} request {i} lacks {n}:\n{text}"
                );
            }
        }
    }
    if let Some(n) = expect["model_calls"].as_u64() {
        assert_eq!(report.model_calls as u64, n, "{ctx}");
    }
    // Progress: phases in order, percentages never going back.
    let percents: Vec<u32> = run.progress.iter().map(|p| p.percent).collect();
    assert!(
        percents.windows(2).all(|w| w[0] <= w[1]),
        "{ctx}\n{percents:?}"
    );
    if run.outcome.proposal.is_some() {
        assert_eq!(percents.last(), Some(&100), "{ctx}");
        // The answers were reported as they streamed in (what the terminal's spinner shows);
        // a run the server did alone (a rename) has none.
        if report.model_calls > 0 {
            assert!(run.streamed > 0, "{ctx}: no streamed bytes reported");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_over_two_files_and_a_new_one() {
    let (run, _) = scenario("rust_happy_path").await;
    let proposal = run.outcome.proposal.as_ref().unwrap();
    assert!(
        proposal.diff.contains("tests/counts.rs (new file)"),
        "{}",
        proposal.diff
    );
    // The proposal, applied, is a crate whose tests pass (what the user gets on accept).
    for f in &proposal.files {
        std::fs::create_dir_all(f.path.parent().unwrap()).unwrap();
        std::fs::write(&f.path, &f.new_text).unwrap();
    }
    let target = run._dir.path().join("accepted-target");
    let status = std::process::Command::new("cargo")
        .args(["test", "--quiet"])
        .current_dir(&run.workspace)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let messages: Vec<&str> = run.progress.iter().map(|p| p.message.as_str()).collect();
    for phase in [
        "preflight",
        "explore",
        "plan",
        "step 1/3",
        "step 3/3",
        "verify",
        "proposal ready",
    ] {
        assert!(
            messages.iter().any(|m| m.contains(phase)),
            "{phase}: {messages:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_answers_a_looping_plan_and_an_empty_old_string() {
    scenario("qwen_plan_loops_and_empty_old_string").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_text_calls_are_repaired_or_explained() {
    scenario("qwen_text_calls_repaired_or_explained").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_error_is_fed_back_and_fixed() {
    scenario("rust_check_error_fed_back").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_check_error_twice_escalates_the_tone() {
    scenario("rust_same_error_twice").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stuck_answer_is_coached_and_dirty_git_is_a_warning() {
    scenario("python_stuck_coached").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_module_is_written_in_a_write_session() {
    scenario("python_new_module_write_session").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_attempt_goes_to_the_escalation_model() {
    scenario("escalation_last_attempt").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_verify_goes_back_to_execution() {
    scenario("verify_fails_then_passes").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_is_skipped_for_docs_only() {
    scenario("judge_skipped_docs_only").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_runs_for_a_risky_path_and_its_objection_is_addressed() {
    scenario("judge_forced_for_risky_path").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_too_large_for_the_judge_s_window_is_skipped_and_the_change_kept() {
    scenario("judge_prompt_too_large").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_review_when_the_tests_still_fail_even_for_a_risky_path() {
    scenario("judge_skipped_when_the_tests_fail").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_review_by_the_coder_of_a_change_the_tests_pass_on() {
    scenario("judge_skipped_when_the_tests_pass_on_the_coder_s_change").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_step_kills_the_check_and_writes_nothing() {
    let (run, _) = scenario("cancel_mid_step").await;
    let pid: i32 = std::fs::read_to_string(run._dir.path().join("check.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..100 {
        if !running(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the check command (pid {pid}) still runs after the cancel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_check_is_killed_at_its_timeout() {
    scenario("hung_check_killed_at_timeout").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_that_does_not_parse_is_retried_once_then_explained() {
    scenario("plan_does_not_parse").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_failing_changes_nothing() {
    scenario("every_step_fails").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_failed_steps_in_a_row_stop_the_run() {
    scenario("failed_steps_in_a_row_stop_the_run").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_fix_round_ends_the_fix_rounds() {
    scenario("failed_fix_round_ends_the_fix_rounds").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_call_budget_keeps_the_done_steps_and_says_what_was_not_done() {
    let (run, _) = scenario("budget_model_calls_keeps_done_steps").await;
    let messages: Vec<&str> = run.progress.iter().map(|p| p.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("stopping: the run used all of its 4 model calls")),
        "{messages:?}"
    );
    assert!(
        messages.last().unwrap().contains("stopped early"),
        "{messages:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_budget_walks_away_from_a_hanging_answer() {
    let (run, _) = scenario("budget_time_drops_a_hanging_answer").await;
    // The hung answer was abandoned by the run, not by a timeout of the HTTP client.
    let coder = run.servers.get("coder").unwrap();
    for _ in 0..100 {
        if coder.disconnects() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(coder.disconnects(), 1);
    let step = &run.outcome.report.steps[1];
    assert!(
        step.error
            .as_deref()
            .is_some_and(|e| e.contains("`[develop] max_minutes`")),
        "{step:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_on_the_anthropic_wire_format() {
    scenario("anthropic_happy_path").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_checks_with_tsc_and_verifies_with_npm_test() {
    scenario("typescript_tsc_and_npm_test").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_tool_is_a_warning() {
    scenario("typescript_missing_tsc_is_a_warning").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_answered_with_the_whole_file_takes_no_planner_call() {
    let (run, _) = scenario("rewrite_whole_file_answer").await;
    let proposal = run.outcome.proposal.as_ref().unwrap();
    // The stub's first line is kept: the change starts after it.
    assert!(
        proposal
            .diff
            .contains(" def primes(limit):\n-    pass\n+    found = []"),
        "{}",
        proposal.diff
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_files_named_above_their_fences_are_two_minimal_changes() {
    let (run, _) = scenario("rewrite_two_files_named_above_fences").await;
    let proposal = run.outcome.proposal.as_ref().unwrap();
    let core = proposal
        .files
        .iter()
        .find(|f| f.display_path == "inventory/core.py")
        .unwrap();
    // Only the renamed line differs from the file.
    let original = std::fs::read_to_string(fixtures().join("python/inventory/core.py")).unwrap();
    assert_eq!(core.new_text, original.replace("low_stock", "items_below"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_path_missing_from_the_tree_is_mapped_or_sent_back() {
    scenario("plan_paths_grounded_in_the_tree").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_check_passes_is_not_done_until_its_test_is_there() {
    scenario("step_not_done_when_only_the_check_passes").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_file_the_request_names_as_where_the_tests_are_stays_read_only() {
    scenario("rewrite_named_tests_stay_read_only").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_says_a_test_fails_shows_how_it_fails_before_the_first_answer() {
    scenario("failing_test_run_before_the_first_step").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_round_whose_answers_repeat_the_wrong_code_starts_afresh_from_the_stub() {
    let (run, _) = scenario("fix_round_starts_afresh_from_the_stub").await;
    let proposal = run.outcome.proposal.as_ref().unwrap();
    assert!(
        proposal.files[0].new_text.contains("for char in alphabet:"),
        "{}",
        proposal.files[0].new_text
    );
    // The tests are in a file the run did not change: both attempts of the fix round show the
    // stub, not the wrong code.
    for afresh in &run.requests["coder"][1..] {
        assert!(!afresh.contains("if char not in alphabet:"), "{afresh}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_first_answer_that_passes_the_tests_is_one_call() {
    let (run, _) = scenario("exercise_first_answer_passes_the_tests").await;
    // The request mentions unit tests in passing; the step asked for none.
    let notes = &run.outcome.report.steps[0].notes;
    assert!(
        !notes.iter().any(|n| n.contains("not finished")),
        "{notes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_asked_for_the_test_the_request_wants_writes_it() {
    scenario("qwen_asked_for_a_test_writes_it").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_round_answer_that_fails_the_same_way_is_not_told_the_same_again() {
    scenario("fix_round_same_failure_ends_the_attempt").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_round_whose_two_attempts_fail_the_same_way_ends_the_run_with_what_was_done() {
    let (run, _) = scenario("fix_round_same_failure_twice_ends_the_run").await;
    // The step's work is proposed as it is (its tests fail), and the fix rounds after the
    // failed one are not asked.
    let proposal = run.outcome.proposal.as_ref().unwrap();
    assert!(
        proposal.files[0]
            .new_text
            .contains("if char not in alphabet:"),
        "{}",
        proposal.files[0].new_text
    );
    assert!(
        run.outcome
            .report
            .not_done
            .iter()
            .any(|n| n.contains("fix round 1 failed for good")),
        "{:?}",
        run.outcome.report.not_done
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_round_whose_two_attempts_pass_no_more_tests_ends_and_never_offers_tools() {
    let (run, _) = scenario("fix_round_keeps_rewriting").await;
    // Every request of the fix round (all but the step's first) offered no tools, and after two
    // attempts that passed no more tests than the code the round was given, none followed.
    let coder = run.servers.get("coder").unwrap();
    let bodies: Vec<Value> = coder
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.json())
        .collect();
    assert_eq!(bodies.len(), 3);
    for (i, body) in bodies.iter().enumerate() {
        assert!(
            body["tools"].as_array().is_none_or(|t| t.is_empty()),
            "request {i} offered tools: {:?}",
            body["tools"]
        );
    }
    let fix = &run.outcome.report.steps[1];
    assert_eq!(fix.attempts, 2, "{fix:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_written_again_word_for_word_ends_the_attempt() {
    let (run, _) = scenario("refused_call_repeated_ends_the_attempt").await;
    // The refusal went back once; the same call again was not answered with it again.
    let coder = &run.requests["coder"];
    let refusals = coder
        .iter()
        .filter(|r| r.contains("error: edit refused for sum_of_multiples.py"))
        .count();
    assert_eq!(refusals, 1, "{coder:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_is_one_rename_is_done_by_the_server_without_a_model_call() {
    scenario("rename_by_the_server").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_asks_for_a_flag_is_not_done_until_a_line_reads_it() {
    scenario("step_not_done_until_the_flag_is_read").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_tests_are_fed_back_as_assertions_and_test_lines() {
    scenario("test_failures_fed_back_as_assertions").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_as_text_then_a_block_is_applied() {
    scenario("rewrite_text_tool_call_then_block").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untouched_stub_and_a_duplicate_definition_are_refused() {
    scenario("rewrite_stub_left_and_duplicate_refused").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_rewrites_two_files_in_one_answer() {
    scenario("qwen_whole_files_in_one_answer").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_too_large_to_show_whole_gets_the_functions_the_step_names_rewritten() {
    let (run, _) = scenario("rewrite_items_of_a_large_file").await;
    // The file was not shown whole: a helper far from both functions is not in the prompt.
    let asked = &run.requests["coder"][0];
    assert!(!asked.contains("def add_3(x):"), "{asked}");
    // Only the two stubs changed: every other line keeps the file's bytes.
    let proposal = run.outcome.proposal.as_ref().unwrap();
    let original = std::fs::read_to_string(fixtures().join("large/sieve.py")).unwrap();
    let expected = original
        .replace(
            "def is_prime(n):\n    pass\n",
            "def is_prime(n):\n    if n < 2:\n        return False\n    return all(n % d for d in range(2, int(n ** 0.5) + 1))\n",
        )
        .replace(
            "def primes(limit):\n    pass\n",
            "def primes(limit):\n    return [n for n in range(2, limit + 1) if is_prime(n)]\n",
        );
    assert_eq!(proposal.files[0].new_text, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_fix_with_its_path_inside_a_bare_fence() {
    scenario("qwen_fix_test_path_in_bare_fence").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_source_file_beside_its_tests_needs_no_plan() {
    scenario("one_source_file_beside_its_tests").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_stub_rewritten_without_its_skeleton_comments() {
    scenario("rewrite_skeleton_replaced_whole").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_copy_of_the_tests_under_the_source_name_is_refused() {
    scenario("rewrite_tests_copied_under_the_source_name").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_repeat_after_being_asked_for_the_flag_is_not_done() {
    scenario("flag_still_missing_after_a_repeat").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_fix_that_dropped_an_annotation_gets_it_put_back() {
    scenario("rust_rewritten_line_put_back").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_small_model_rename_that_dropped_a_path_is_shown_what_it_dropped() {
    scenario("qwen_rename_dropped_path_shown").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_round_answer_that_passes_more_tests_is_told_how_they_still_fail() {
    scenario("fix_round_progress_is_told_again").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_round_whose_prompt_does_not_fit_fails_the_round_not_the_run() {
    scenario("fix_round_prompt_too_large").await;
}
