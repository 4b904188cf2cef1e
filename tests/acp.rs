//! `patchwise acp` end to end, driven by a real ACP client nobody here wrote: the official
//! TypeScript SDK (`@agentclientprotocol/sdk` 2.4, its `client()` app over `ndJsonStream`) in
//! `tests/acp/client.mjs`, which spawns the real binary and reports what it saw. The models are
//! local servers replaying scripted answers in the OpenAI SSE format (the develop scenario
//! `rust_happy_path`, the edit scenario `misindented`); the check and test commands really run.
//!
//! Covered: initialize (the client's real `initialize` is kept in `fixtures/acp/`), a develop
//! prompt with plan updates, step tool calls with diffs, execute tool calls, the permission
//! asked, and the files written through the client with the exact new text; the change
//! rejected (nothing written) and allowed without client fs (written on disk); "always allow"
//! asked once per session and kept by a loaded session; cancel mid-run and while the permission
//! is asked, each answered within a second; a model error and a spent budget ending the turn
//! with a message; a second prompt while one runs; research with its sources as resource links and the session
//! loaded again by a new agent process; edit mode on a named range of a file the editor has open
//! with unsaved text; and malformed input answered with JSON-RPC errors while the agent keeps
//! serving; develop reading the files the client has open through it, unsaved text included.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use patchwise::model::replay::{ReplayServer, Reply};
use serde_json::{Value, json};
use support::{copy_dir, openai_sse, tree};

const BIN: &str = env!("CARGO_BIN_EXE_patchwise");

/// The Node client; its packages come from `npm ci` in `tests/acp` (scripts/test runs it).
fn client_script() -> PathBuf {
    let dir = support::expect::repo_path("tests/acp");
    assert!(
        dir.join("node_modules/@agentclientprotocol/sdk").exists(),
        "run `npm ci` in tests/acp first (scripts/test does)"
    );
    dir.join("client.mjs")
}

struct Setup {
    /// Drives the replay servers.
    _runtime: tokio::runtime::Runtime,
    servers: Vec<ReplayServer>,
    dir: tempfile::TempDir,
    ws: PathBuf,
}

impl Setup {
    /// A copy of `fixtures/<workspace>` and a user configuration naming `planner` and `coder`
    /// servers that answer `planner` and `coder` in turn (`extra` is appended to the config).
    fn new(workspace: &str, planner: Vec<Reply>, coder: Vec<Reply>, extra: &str) -> Setup {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let planner = runtime.block_on(ReplayServer::start(planner)).unwrap();
        let coder = runtime.block_on(ReplayServer::start(coder)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        copy_dir(&support::fixture(workspace), &ws);
        let config = dir.path().join("config/patchwise");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!(
                "data_dir = \"{}\"\n\n[providers.plan]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\n\n\
                 [providers.code]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\n\n\
                 [roles]\nplanner = \"plan/planner-model\"\ncoder = \"code/coder-model\"\n\n\
                 [retry]\nmax_attempts = 1\n\n[timeouts]\nconnect = 5\nfirst_token = 60\ntotal = 120\n{extra}",
                dir.path().join("data").display(),
                planner.url(),
                coder.url(),
            ),
        )
        .unwrap();
        Setup {
            _runtime: runtime,
            servers: vec![planner, coder],
            dir,
            ws: std::fs::canonicalize(&ws).unwrap(),
        }
    }

    /// The develop scenario `name`'s planner and coder answers, `runs` times over.
    fn develop(name: &str, runs: usize, extra: &str) -> Setup {
        let path = support::fixture("develop/scenarios").join(format!("{name}.json"));
        let scenario: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let replies = |role: &str| -> Vec<Reply> {
            let answers = scenario[role].as_array().unwrap();
            std::iter::repeat_n(answers, runs)
                .flatten()
                .enumerate()
                .map(|(i, a)| with_usage(openai_sse(a), 1000 + i as u64, 100))
                .collect()
        };
        let workspace = format!("develop/{}", scenario["workspace"].as_str().unwrap());
        Setup::new(&workspace, replies("planner"), replies("coder"), extra)
    }

    fn coder(&self) -> &ReplayServer {
        &self.servers[1]
    }

    /// Runs the Node client with `scenario` (the agent command and the workspace filled in)
    /// and returns what it saw.
    fn client(&self, mut scenario: Value) -> Value {
        scenario["agent"] = json!([BIN, "acp", "--workspace", self.ws]);
        let out = Command::new("node")
            .arg(client_script())
            .arg(scenario.to_string())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("RUST_LOG", "patchwise=debug")
            .current_dir(&self.ws)
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let seen: Value = serde_json::from_str(text.trim())
            .unwrap_or_else(|e| panic!("the client printed no JSON ({e}): {text}"));
        assert!(seen.get("error").is_none(), "client failed: {seen:#}");
        assert_eq!(
            seen["exit"], 0,
            "the agent did not exit cleanly: {}",
            seen["stderr"]
        );
        seen
    }
}

/// `reply` with the usage chunk an OpenAI-compatible server sends last when asked
/// (`stream_options.include_usage`).
fn with_usage(reply: Reply, prompt: u64, completion: u64) -> Reply {
    let Reply::Http { head, body } = reply else {
        return reply;
    };
    let usage = json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
        "usage": { "prompt_tokens": prompt, "completion_tokens": completion } });
    let body = body.replace("data: [DONE]", &format!("data: {usage}\n\ndata: [DONE]"));
    Reply::Http { head, body }
}

fn text(block: &str) -> Value {
    json!({ "type": "text", "text": block })
}

/// The results of the client's requests, by method, in order.
fn results<'a>(seen: &'a Value, method: &str) -> Vec<&'a Value> {
    seen["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == method)
        .collect()
}

/// The updates of one kind (`plan`, `tool_call`, …), in order.
fn updates<'a>(seen: &'a Value, kind: &str) -> Vec<&'a Value> {
    seen["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| &u["update"])
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// When `update` (one of [`updates`]) arrived: its place among everything the client saw.
fn seq(seen: &Value, update: &Value) -> u64 {
    seen["updates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| std::ptr::eq(&u["update"], update))
        .and_then(|u| u["seq"].as_u64())
        .expect("an update the client saw")
}

/// The agent's message chunks' text, joined.
fn agent_text(seen: &Value) -> String {
    updates(seen, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn stop_reason(seen: &Value, index: usize) -> Value {
    let prompts = results(seen, "session/prompt");
    let r = prompts[index];
    assert!(r.get("error").is_none(), "{r:#}");
    r["result"]["stopReason"].clone()
}

fn develop_prompt() -> Value {
    text("add a line_count function, print it in main, and add an integration test for it")
}

#[test]
fn develop_shows_plan_steps_diffs_and_checks_and_writes_through_the_client_when_allowed() {
    let setup = Setup::develop("rust_happy_path", 1, "");
    let before = tree(&setup.ws);
    let seen = setup.client(json!({
        "fs": { "readTextFile": true, "writeTextFile": true },
        "permission": "allow_once",
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "prompt", "prompt": [develop_prompt()] },
        ],
    }));
    // The client's real initialize, as it went over the wire.
    let mut initialize = seen["sent"][0].clone();
    assert_eq!(initialize["method"], "initialize");
    initialize["id"] = json!(0);
    support::expect::expect_file(
        "fixtures/acp/initialize.json",
        &format!("{}\n", serde_json::to_string_pretty(&initialize).unwrap()),
    );
    let init = &results(&seen, "initialize")[0]["result"];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    assert_eq!(init["agentInfo"]["name"], "patchwise", "{init}");
    let session = &results(&seen, "session/new")[0]["result"];
    assert_eq!(session["modes"]["currentModeId"], "develop", "{session}");
    let modes: Vec<&str> = session["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["develop", "edit", "research"]);
    assert_eq!(stop_reason(&seen, 0), "end_turn", "{}", agent_text(&seen));

    // The plan: four entries, first all pending, updated as steps run, all done at the end.
    let plans = updates(&seen, "plan");
    assert!(plans.len() >= 4, "{plans:#?}");
    let statuses = |p: &Value| -> Vec<String> {
        p["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["status"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(statuses(plans[0]), ["pending"; 4]);
    assert!(
        plans
            .iter()
            .any(|p| statuses(p)[..2] == ["completed", "in_progress"]),
        "{plans:#?}"
    );
    assert_eq!(statuses(plans.last().unwrap()), ["completed"; 4]);
    assert!(
        plans[0]["entries"][0]["content"]
            .as_str()
            .unwrap()
            .contains("line_count")
    );

    // Each step is an edit tool call, started as it runs and completed with its diff.
    let calls = updates(&seen, "tool_call");
    let steps: Vec<&&Value> = calls
        .iter()
        .filter(|c| c["title"].as_str().unwrap().starts_with("Step "))
        .collect();
    assert_eq!(steps.len(), 3, "{calls:#?}");
    assert!(
        steps
            .iter()
            .all(|c| c["kind"] == "edit" && c["status"] == "in_progress")
    );
    let done = updates(&seen, "tool_call_update");
    let step1 = done
        .iter()
        .find(|u| u["toolCallId"] == steps[0]["toolCallId"])
        .unwrap();
    assert_eq!(step1["status"], "completed", "{step1:#}");
    let lib = setup.ws.join("src/lib.rs");
    let lib_diff = &step1["content"][0];
    assert_eq!(lib_diff["type"], "diff", "{step1:#}");
    assert_eq!(lib_diff["path"], lib.display().to_string());
    assert_eq!(
        lib_diff["oldText"].as_str().unwrap(),
        std::fs::read_to_string(&lib).unwrap()
    );
    let new_lib = lib_diff["newText"].as_str().unwrap().to_owned();
    assert!(new_lib.contains("pub fn line_count"), "{new_lib}");
    // ... each as its step ends: step 1's diff before step 2 starts, every step's before the
    // permission is asked.
    assert!(
        seq(&seen, step1) < seq(&seen, steps[1]),
        "step 1's change came after step 2 started: {step1:#} {:#}",
        steps[1]
    );
    let asked_at = seen["permissions"][0]["seq"].as_u64().unwrap();
    for step in &steps {
        let ended = done
            .iter()
            .find(|u| u["toolCallId"] == step["toolCallId"] && u["status"] == "completed")
            .unwrap_or_else(|| panic!("{step:#} never completed"));
        assert!(seq(&seen, ended) < asked_at, "{ended:#}");
        assert_eq!(ended["content"][0]["type"], "diff", "{ended:#}");
    }
    // Model usage, as each answer ends: the tokens in context of the model's window, and the
    // run's totals under `_meta.patchwise`.
    let usage = updates(&seen, "usage_update");
    let answers = setup.coder().requests().len() + 1;
    assert_eq!(usage.len(), answers, "{usage:#?}");
    assert_eq!(usage[0]["used"], 1100, "{:#}", usage[0]);
    assert!(usage[0]["size"].as_u64().unwrap() > 0, "{:#}", usage[0]);
    let totals = &usage.last().unwrap()["_meta"]["patchwise"];
    assert_eq!(totals["answers"], answers, "{totals:#}");
    assert_eq!(totals["outputTokens"], 100 * answers as u64, "{totals:#}");
    assert!(
        seq(&seen, usage.last().unwrap()) < asked_at,
        "usage came late"
    );
    // Each check and test command: an execute call started when it runs and ended with its
    // output as it ends — the check after step 1's edit before step 1's change is shown, the
    // tests before the permission is asked.
    let commands: Vec<&&Value> = calls.iter().filter(|c| c["kind"] == "execute").collect();
    assert!(
        commands.iter().all(|c| c["status"] == "in_progress"),
        "{commands:#?}"
    );
    let ended = |call: &Value| -> &Value {
        done.iter()
            .find(|u| u["toolCallId"] == call["toolCallId"] && u.get("status").is_some())
            .unwrap_or_else(|| panic!("{call:#} never ended"))
    };
    let check = commands
        .iter()
        .find(|c| {
            c["title"].as_str().unwrap().starts_with("check: ")
                && seq(&seen, c) > seq(&seen, steps[0])
        })
        .unwrap_or_else(|| panic!("no check ran in step 1: {commands:#?}"));
    let checked = ended(check);
    assert_eq!(checked["status"], "completed", "{checked:#}");
    assert!(
        seq(&seen, checked) < seq(&seen, step1),
        "the check went out after step 1 ended: {checked:#}"
    );
    let tests = commands
        .iter()
        .find(|c| c["title"].as_str().unwrap().starts_with("test: "))
        .unwrap_or_else(|| panic!("{commands:#?}"));
    let tested = ended(tests);
    assert_eq!(tested["status"], "completed", "{tested:#}");
    assert!(
        tested["title"].as_str().unwrap().contains("cargo test"),
        "{tested:#}"
    );
    assert!(
        tested["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("test result: ok"),
        "{tested:#}"
    );
    assert!(seq(&seen, tested) < asked_at, "{tested:#}");
    assert!(
        agent_text(&seen).contains("verify: tests passed"),
        "{}",
        agent_text(&seen)
    );

    // Asked before writing, with the three choices, about the whole change.
    let asked = seen["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let kinds: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    assert_eq!(asked[0]["toolCall"]["content"].as_array().unwrap().len(), 3);
    // Where each file changes, as absolute paths with the first changed line (1-based), so a
    // panel shows the real file: the asked tool call's locations, and the call shown before.
    let diffs: Vec<&str> = asked[0]["toolCall"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    let located = |call: &Value| -> Vec<(String, u64)> {
        call["locations"]
            .as_array()
            .unwrap_or_else(|| panic!("no locations: {call:#}"))
            .iter()
            .map(|l| {
                let path = l["path"].as_str().unwrap();
                assert!(Path::new(path).is_absolute(), "{l}");
                (path.to_owned(), l["line"].as_u64().unwrap_or(0))
            })
            .collect()
    };
    let asked_locations = located(&asked[0]["toolCall"]);
    assert_eq!(
        asked_locations
            .iter()
            .map(|(p, _)| p.as_str())
            .collect::<Vec<_>>(),
        diffs
    );
    let old_lib = std::fs::read_to_string(&lib).unwrap();
    let first_changed = old_lib
        .lines()
        .zip(new_lib.lines())
        .take_while(|(a, b)| a == b)
        .count()
        + 1;
    assert!(
        asked_locations.contains(&(lib.display().to_string(), first_changed as u64)),
        "{asked_locations:?}"
    );
    // A new file is located at its line 1.
    assert!(
        asked_locations.contains(&(setup.ws.join("tests/counts.rs").display().to_string(), 1)),
        "{asked_locations:?}"
    );
    let shown = calls
        .iter()
        .find(|c| c["toolCallId"] == asked[0]["toolCall"]["toolCallId"])
        .unwrap();
    assert_eq!(located(shown), asked_locations);
    // Each step names its files when it starts and where it changed them when it ends.
    assert!(
        located(steps[0])
            .iter()
            .any(|(p, _)| *p == lib.display().to_string()),
        "{:#}",
        steps[0]
    );
    assert_eq!(
        located(step1),
        [(lib.display().to_string(), first_changed as u64)]
    );

    // Written through the client, with exactly the new texts; the disk is the client's job.
    let writes = seen["writes"].as_array().unwrap();
    let written: Vec<(&str, &str)> = writes
        .iter()
        .map(|w| (w["path"].as_str().unwrap(), w["content"].as_str().unwrap()))
        .collect();
    assert_eq!(written.len(), 3, "{writes:#?}");
    assert!(written.contains(&(lib.to_str().unwrap(), new_lib.as_str())));
    let test_file = setup.ws.join("tests/counts.rs");
    assert!(
        written
            .iter()
            .any(|(p, c)| *p == test_file.to_str().unwrap()
                && c.contains("fn counts_lines_and_words"))
    );
    assert!(
        !seen["reads"].as_array().unwrap().is_empty(),
        "the files were read through the client before writing"
    );
    assert_eq!(tree(&setup.ws), before, "the agent wrote to disk itself");
    assert!(agent_text(&seen).contains("Wrote 3 files (through the editor)"));
}

#[test]
fn develop_reads_the_files_the_client_has_open_with_their_unsaved_text() {
    let setup = Setup::develop("rust_happy_path", 1, "");
    let main = setup.ws.join("src/main.rs");
    let on_disk = std::fs::read_to_string(&main).unwrap();
    // The editor has main.rs open with an unsaved line; nothing is attached to the prompt.
    let open = format!("// unsaved note\n{on_disk}");
    let seen = develop_with_open_file(&setup, &main, &open);
    assert_eq!(stop_reason(&seen, 0), "end_turn", "{}", agent_text(&seen));
    // The change to main.rs is made against the editor's text, before and after.
    let asked = &seen["permissions"][0]["toolCall"]["content"];
    let diff = asked
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"] == main.display().to_string())
        .unwrap_or_else(|| panic!("{asked:#}"));
    assert_eq!(diff["oldText"].as_str().unwrap(), open);
    let new_main = diff["newText"].as_str().unwrap();
    assert!(new_main.starts_with("// unsaved note\n"), "{new_main}");
    assert!(new_main.contains("wordstat::line_count"), "{new_main}");
    let written = seen["writes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["path"] == main.display().to_string())
        .unwrap_or_else(|| panic!("{:#}", seen["writes"]));
    assert_eq!(written["content"].as_str().unwrap(), new_main);
    // Read through the client while the run went, not only before writing.
    let asked_at = seen["permissions"][0]["seq"].as_u64().unwrap();
    assert!(
        seen["reads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["path"] == main.display().to_string()
                && r["seq"].as_u64().unwrap() < asked_at),
        "{:#}",
        seen["reads"]
    );
    assert_eq!(std::fs::read_to_string(&main).unwrap(), on_disk);
}

/// A develop prompt from a client with fs capabilities that has `path` open with `text`
/// (unsaved), allowing the write once.
fn develop_with_open_file(setup: &Setup, path: &Path, text: &str) -> Value {
    setup.client(json!({
        "fs": { "readTextFile": true, "writeTextFile": true },
        "permission": "allow_once",
        "open": { path.to_str().unwrap(): text },
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "prompt", "prompt": [develop_prompt()] },
        ],
    }))
}

/// How many `fs/read_text_file` round trips a develop run makes in a workspace of a few hundred
/// files (`cargo test --test acp round_trips -- --nocapture` prints them).
#[test]
fn develop_in_a_large_workspace_asks_the_client_only_for_the_files_it_reads() {
    let setup = Setup::develop("rust_happy_path", 1, "");
    // 300 more source files the request has nothing to do with (not in the crate's module
    // tree, so the checks do not build them).
    let extra = setup.ws.join("src/extra");
    std::fs::create_dir_all(&extra).unwrap();
    for n in 0..300 {
        std::fs::write(
            extra.join(format!("part{n}.rs")),
            format!(
                "/// Part {n}.\npub fn part{n}(text: &str) -> usize {{\n    text.len() + {n}\n}}\n"
            ),
        )
        .unwrap();
    }
    let main = setup.ws.join("src/main.rs");
    let open = format!(
        "// unsaved note\n{}",
        std::fs::read_to_string(&main).unwrap()
    );
    let seen = develop_with_open_file(&setup, &main, &open);
    assert_eq!(stop_reason(&seen, 0), "end_turn", "{}", agent_text(&seen));
    let asked_at = seen["permissions"][0]["seq"].as_u64().unwrap();
    let reads = seen["reads"].as_array().unwrap();
    let during: Vec<&str> = reads
        .iter()
        .filter(|r| r["seq"].as_u64().unwrap() < asked_at)
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    let mut distinct = during.clone();
    distinct.sort();
    distinct.dedup();
    eprintln!(
        "round trips: {} fs/read_text_file during the run ({} files), {} in all",
        during.len(),
        distinct.len(),
        reads.len()
    );
    // Each file at most once, and none of the 300 files the run only listed.
    assert_eq!(during.len(), distinct.len(), "{distinct:#?}");
    assert!(
        !during.iter().any(|p| p.contains("/src/extra/")),
        "{distinct:#?}"
    );
    assert!(distinct.contains(&main.to_str().unwrap()), "{distinct:#?}");
    // The open file's unsaved text made it into the change.
    let diff = seen["permissions"][0]["toolCall"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"] == main.display().to_string())
        .cloned()
        .unwrap_or_default();
    assert_eq!(diff["oldText"].as_str(), Some(open.as_str()));
}

#[test]
fn a_rejected_change_writes_nothing_and_an_allowed_one_without_client_fs_lands_on_disk() {
    let setup = Setup::develop("rust_happy_path", 2, "");
    let before = tree(&setup.ws);
    let seen = setup.client(json!({
        "permission": ["reject_once", "allow_once"],
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "prompt", "prompt": [develop_prompt()] },
            { "op": "prompt", "prompt": [develop_prompt()] },
        ],
    }));
    assert_eq!(stop_reason(&seen, 0), "end_turn");
    assert_eq!(stop_reason(&seen, 1), "end_turn");
    assert_eq!(seen["permissions"].as_array().unwrap().len(), 2);
    assert!(seen["writes"].as_array().unwrap().is_empty());
    let said = agent_text(&seen);
    assert!(
        said.contains("Not written: the change was rejected"),
        "{said}"
    );
    assert!(said.contains("Wrote 3 files (on disk)"), "{said}");
    assert_ne!(tree(&setup.ws), before);
    let lib = std::fs::read_to_string(setup.ws.join("src/lib.rs")).unwrap();
    assert!(lib.contains("pub fn line_count"), "{lib}");
    assert!(setup.ws.join("tests/counts.rs").exists());
}

#[test]
fn cancel_ends_the_run_with_cancelled_and_writes_nothing_and_a_second_prompt_is_refused() {
    let path = support::fixture("develop/scenarios/rust_happy_path.json");
    let scenario: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let plan: Vec<Reply> = std::iter::repeat_n(openai_sse(&scenario["planner"][0]), 2).collect();
    // The coder never answers: only the cancel can end the run.
    let setup = Setup::new("develop/rust", plan, vec![Reply::Hang, Reply::Hang], "");
    let before = tree(&setup.ws);
    // Cancelled when step 1 starts, so the cancel comes while the coder is asked; files are
    // read from disk (a read through the client would see the cancel before the coder is).
    let seen = setup.client(json!({
        "fs": { "readTextFile": false, "writeTextFile": true },
        "permission": "allow_once",
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            // A second after step 1's edit call starts, the coder has been asked (and never
            // answers).
            { "op": "prompt", "prompt": [develop_prompt()], "cancelOn": "tool_call:edit", "cancelDelayMs": 1000 },
            { "op": "prompt_twice", "prompt": [develop_prompt()] },
            { "op": "mode", "mode": "research" },
        ],
    }));
    let prompts = results(&seen, "session/prompt");
    assert_eq!(
        prompts[0]["result"]["stopReason"], "cancelled",
        "{:#}",
        prompts[0]
    );
    // The run ends within a second of session/cancel (the issue's promise), though the model
    // never answers.
    assert_cancelled_within_a_second(prompts[0]);
    // The second prompt of `prompt_twice` came while the first ran: refused, then the first
    // was cancelled.
    assert_eq!(prompts.len(), 3, "{prompts:#?}");
    let refused = prompts.iter().find(|p| p.get("error").is_some()).unwrap();
    assert!(
        refused["error"]["data"]
            .as_str()
            .unwrap_or_default()
            .contains("already running a prompt"),
        "{refused:#}"
    );
    assert!(
        prompts
            .iter()
            .filter(|p| p["result"]["stopReason"] == "cancelled")
            .count()
            == 2
    );
    assert_cancelled_within_a_second(prompts[2]);
    // The agent still serves.
    assert!(results(&seen, "session/set_mode")[0].get("error").is_none());
    assert!(seen["permissions"].as_array().unwrap().is_empty());
    assert!(seen["writes"].as_array().unwrap().is_empty());
    assert_eq!(tree(&setup.ws), before);
    assert!(!setup.coder().requests().is_empty());
}

/// A prompt the client cancelled answered `cancelled` within a second of its session/cancel.
fn assert_cancelled_within_a_second(prompt: &Value) {
    assert_eq!(prompt["result"]["stopReason"], "cancelled", "{prompt:#}");
    let after = prompt["cancelledAfterMs"]
        .as_u64()
        .unwrap_or_else(|| panic!("the client did not cancel this prompt: {prompt:#}"));
    assert!(
        after < 1000,
        "the prompt ended {after} ms after session/cancel: {prompt:#}"
    );
}

/// The user cancels while the permission to write is asked: the turn ends `cancelled` at once,
/// without waiting for the client to answer the request, and nothing is written.
#[test]
fn cancel_while_the_permission_is_asked_ends_the_turn_at_once_and_writes_nothing() {
    let setup = Setup::develop("rust_happy_path", 1, "");
    let before = tree(&setup.ws);
    let seen = setup.client(json!({
        "fs": { "readTextFile": true, "writeTextFile": true },
        "permission": "cancel",
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "prompt", "prompt": [develop_prompt()] },
            { "op": "mode", "mode": "edit" },
        ],
    }));
    let prompts = results(&seen, "session/prompt");
    assert_cancelled_within_a_second(prompts[0]);
    assert_eq!(seen["permissions"].as_array().unwrap().len(), 1);
    assert!(seen["writes"].as_array().unwrap().is_empty(), "{seen:#}");
    assert_eq!(tree(&setup.ws), before);
    // The write's tool call ends failed, saying nothing was written.
    let write = updates(&seen, "tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"].as_str().unwrap().ends_with("-write"))
        .unwrap_or_else(|| panic!("{seen:#}"));
    assert_eq!(write["status"], "failed", "{write:#}");
    assert!(
        write["rawOutput"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing was written"),
        "{write:#}"
    );
    // The agent still serves.
    assert!(results(&seen, "session/set_mode")[0].get("error").is_none());
}

/// "Always write changes in this session": asked once, then later changes of the session are
/// written without asking — also after a new agent process loads the session from the library.
#[test]
fn allow_always_asks_once_per_session_and_a_loaded_session_keeps_it() {
    let setup = Setup::develop("rust_happy_path", 3, "");
    let before = tree(&setup.ws);
    let seen = setup.client(json!({
        "fs": { "readTextFile": true, "writeTextFile": true },
        "permission": "allow_always",
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "prompt", "prompt": [develop_prompt()] },
            { "op": "prompt", "prompt": [develop_prompt()] },
        ],
    }));
    assert_eq!(stop_reason(&seen, 0), "end_turn", "{}", agent_text(&seen));
    assert_eq!(stop_reason(&seen, 1), "end_turn", "{}", agent_text(&seen));
    let asked = seen["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["step"], 2, "asked during the first prompt");
    // Both changes written through the client, three files each, the same texts.
    let writes = seen["writes"].as_array().unwrap();
    let by_step = |step: u64| -> Vec<(&str, &str)> {
        writes
            .iter()
            .filter(|w| w["step"] == step)
            .map(|w| (w["path"].as_str().unwrap(), w["content"].as_str().unwrap()))
            .collect()
    };
    assert_eq!(by_step(2).len(), 3, "{writes:#?}");
    assert_eq!(by_step(2), by_step(3));
    assert_eq!(
        agent_text(&seen)
            .matches("Wrote 3 files (through the editor)")
            .count(),
        2,
        "{}",
        agent_text(&seen)
    );
    // The second change is still shown as an edit call with its diffs before it is written.
    let shown = updates(&seen, "tool_call")
        .into_iter()
        .filter(|c| c["toolCallId"].as_str().unwrap().ends_with("-write"))
        .count();
    assert_eq!(shown, 2);

    // A new agent loads the session: the choice is kept (the client would reject if asked).
    let id = results(&seen, "session/new")[0]["result"]["sessionId"].clone();
    let again = setup.client(json!({
        "fs": { "readTextFile": true, "writeTextFile": true },
        "permission": "reject_once",
        "steps": [
            { "op": "initialize" },
            { "op": "load", "sessionId": id, "cwd": setup.ws },
            { "op": "prompt", "prompt": [develop_prompt()] },
        ],
    }));
    assert!(results(&again, "session/load")[0].get("error").is_none());
    assert_eq!(stop_reason(&again, 0), "end_turn", "{}", agent_text(&again));
    assert!(again["permissions"].as_array().unwrap().is_empty());
    assert_eq!(again["writes"].as_array().unwrap().len(), 3, "{again:#}");
    assert_eq!(tree(&setup.ws), before, "the agent wrote to disk itself");
}

/// A model that fails mid-run (HTTP 500) or a budget that runs out ends the develop turn with a
/// message that says why — never a hung prompt — and nothing is written.
#[test]
fn a_model_error_or_a_spent_budget_ends_the_develop_turn_with_a_clear_message() {
    let path = support::fixture("develop/scenarios/rust_happy_path.json");
    let scenario: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let overloaded = || {
        Reply::json(
            500,
            &json!({ "error": { "message": "the model server is overloaded", "type": "server_error" } }),
        )
    };
    let setup = Setup::new(
        "develop/rust",
        vec![openai_sse(&scenario["planner"][0])],
        std::iter::repeat_with(overloaded).take(8).collect(),
        "",
    );
    let before = tree(&setup.ws);
    let run = |setup: &Setup| {
        setup.client(json!({
            "fs": { "readTextFile": true, "writeTextFile": true },
            "permission": "reject_once",
            "steps": [
                { "op": "initialize" },
                { "op": "new", "cwd": setup.ws },
                { "op": "prompt", "prompt": [develop_prompt()] },
                { "op": "mode", "mode": "research" },
            ],
        }))
    };
    let seen = run(&setup);
    assert_eq!(stop_reason(&seen, 0), "end_turn", "{seen:#}");
    let said = agent_text(&seen);
    assert!(said.contains("HTTP 500"), "{said}");
    assert!(said.contains("the model server is overloaded"), "{said}");
    assert!(!setup.coder().requests().is_empty());
    assert!(seen["writes"].as_array().unwrap().is_empty());
    assert_eq!(tree(&setup.ws), before);
    assert!(results(&seen, "session/set_mode")[0].get("error").is_none());

    // One model call allowed: the plan takes it, and the run stops before any step.
    let setup = Setup::develop("rust_happy_path", 1, "\n[develop]\nmax_model_calls = 1\n");
    let seen = run(&setup);
    assert_eq!(stop_reason(&seen, 0), "end_turn", "{seen:#}");
    let said = agent_text(&seen);
    assert!(said.contains("max_model_calls"), "{said}");
    assert!(setup.coder().requests().is_empty());
    assert!(seen["permissions"].as_array().unwrap().is_empty());
    assert!(seen["writes"].as_array().unwrap().is_empty());
}

#[test]
fn research_cites_sources_as_links_saves_the_session_and_a_new_agent_loads_it() {
    let answer = json!({ "text": "Ropes keep edits cheap on large buffers [1]. Positions past the end of a line clamp [2].\n\nClaims:\n- Ropes make edits on large buffers cheap [1]\n" });
    let setup = Setup::new(
        "lsp/edit/workspace",
        Vec::new(),
        vec![with_usage(openai_sse(&answer), 700, 50)],
        // The model's check on, so the turn has several model answers to report usage for.
        &format!("\n[research]\nverify = true\n{}", offline_research()),
    );
    research_notes(&setup.ws);
    let query = "why do editors keep buffers in ropes";
    let seen = setup.client(json!({
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "mode", "mode": "research" },
            { "op": "prompt", "prompt": [text(query)] },
        ],
    }));
    assert_eq!(stop_reason(&seen, 0), "end_turn");
    let said = agent_text(&seen);
    assert!(
        said.contains("Ropes keep edits cheap on large buffers [1]"),
        "{said}"
    );
    assert!(said.contains("Saved in the library as"), "{said}");
    let links: Vec<&Value> = updates(&seen, "agent_message_chunk")
        .into_iter()
        .filter(|u| u["content"]["type"] == "resource_link")
        .collect();
    assert!(
        links.iter().any(|l| l["content"]["uri"]
            .as_str()
            .unwrap()
            .ends_with("docs/ropes.md")),
        "{links:#?}"
    );
    assert!(links.iter().any(|l| {
        l["content"]["uri"].as_str().unwrap().ends_with(".md")
            && l["content"]["name"]
                .as_str()
                .unwrap()
                .starts_with("research ")
    }));
    assert!(
        !updates(&seen, "agent_thought_chunk").is_empty(),
        "progress streams as thoughts"
    );
    // One usage update per model answer, as develop and edit report theirs: the synthesis and
    // the check of its two citations (`verify = true` above), one judge call per citation (each scripted answer
    // reports 700 in, 50 out); the totals run.
    let usage = updates(&seen, "usage_update");
    assert_eq!(usage.len(), 3, "{usage:#?}");
    for (i, update) in usage.iter().enumerate() {
        assert_eq!(update["used"], 750, "{update:#}");
        assert!(update["size"].as_u64().unwrap() > 0, "{update:#}");
        let totals = &update["_meta"]["patchwise"];
        assert_eq!(totals["answers"], i + 1, "{totals:#}");
        assert_eq!(totals["inputTokens"], 700 * (i + 1), "{totals:#}");
        assert_eq!(totals["outputTokens"], 50 * (i + 1), "{totals:#}");
    }

    // A new agent process loads the session from the library and shows the conversation again.
    let id = results(&seen, "session/new")[0]["result"]["sessionId"].clone();
    let again = setup.client(json!({
        "steps": [
            { "op": "initialize" },
            { "op": "load", "sessionId": id, "cwd": setup.ws },
            { "op": "load", "sessionId": "nope", "cwd": setup.ws },
        ],
    }));
    let loads = results(&again, "session/load");
    assert_eq!(
        loads[0]["result"]["modes"]["currentModeId"], "research",
        "{:#}",
        loads[0]
    );
    assert!(loads[1].get("error").is_some(), "{:#}", loads[1]);
    let user: Vec<&str> = updates(&again, "user_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(user, [query]);
    assert!(agent_text(&again).contains("Ropes keep edits cheap"));
}

#[test]
fn edit_mode_edits_the_named_lines_of_the_open_text_and_writes_it_through_the_client() {
    let (s, replies) = support::edit_scenario("misindented");
    let setup = Setup::new("lsp/edit/workspace", Vec::new(), replies, "");
    let lib = setup.ws.join("src/lib.rs");
    let on_disk = std::fs::read_to_string(&lib).unwrap();
    // The editor has the file open with an unsaved line at the top.
    let open = format!("// unsaved note\n{on_disk}");
    let (first, last) = (
        s["lines"][0].as_u64().unwrap() + 1,
        s["lines"][1].as_u64().unwrap() + 1,
    );
    let seen = setup.client(json!({
        "fs": { "readTextFile": true, "writeTextFile": true },
        "permission": "allow_once",
        "open": { lib.to_str().unwrap(): open },
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "mode", "mode": "edit" },
            { "op": "prompt", "prompt": [text(&format!("@src/lib.rs:{first}-{last} {}", s["instruction"].as_str().unwrap()))] },
        ],
    }));
    assert_eq!(stop_reason(&seen, 0), "end_turn", "{}", agent_text(&seen));
    let writes = seen["writes"].as_array().unwrap();
    assert_eq!(writes.len(), 1, "{:#}", seen);
    let written = writes[0]["content"].as_str().unwrap();
    assert!(written.starts_with("// unsaved note\n"), "{written}");
    assert!(
        written.contains(s["expected"].as_str().unwrap()),
        "{written}"
    );
    let call = updates(&seen, "tool_call")
        .into_iter()
        .find(|c| c["kind"] == "edit")
        .unwrap();
    assert_eq!(call["content"][0]["oldText"].as_str().unwrap(), open);
    assert_eq!(call["content"][0]["newText"].as_str().unwrap(), written);
    assert_eq!(std::fs::read_to_string(&lib).unwrap(), on_disk);
}

/// One JSON-RPC exchange with the agent over raw lines.
struct Raw {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Raw {
    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn answer(&mut self) -> Value {
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

#[test]
fn malformed_input_gets_errors_and_the_agent_keeps_serving() {
    let setup = Setup::new("lsp/edit/workspace", Vec::new(), Vec::new(), "");
    let outside = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["acp", "--workspace"])
        .arg(&setup.ws)
        .env("XDG_CONFIG_HOME", setup.dir.path().join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut raw = Raw { child, out };
    raw.send("this is not json");
    let parse = raw.answer();
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#);
    assert_eq!(raw.answer()["result"]["protocolVersion"], 1);
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}"#);
    let unknown = raw.answer();
    assert_eq!(
        (unknown["id"].clone(), unknown["error"]["code"].clone()),
        (json!(2), json!(-32601)),
        "{unknown}"
    );
    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}"#);
    let early = raw.answer();
    assert_eq!(early["id"], 3);
    assert!(
        early["error"]["data"]
            .as_str()
            .unwrap()
            .contains("session/new"),
        "{early}"
    );
    raw.send(r#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":42}}"#);
    let bad = raw.answer();
    assert_eq!(
        (bad["id"].clone(), bad["error"]["code"].clone()),
        (json!(4), json!(-32602)),
        "{bad}"
    );
    raw.send(&json!({"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd": outside.path(), "mcpServers": []}}).to_string());
    let outside_answer = raw.answer();
    assert!(
        outside_answer["error"]["data"]
            .as_str()
            .unwrap()
            .contains("outside the folders"),
        "{outside_answer}"
    );
    raw.send(&json!({"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd": setup.ws.join("src"), "mcpServers": []}}).to_string());
    let ok = raw.answer();
    assert!(ok["result"]["sessionId"].is_string(), "{ok}");
    raw.send(&json!({"jsonrpc":"2.0","id":7,"method":"session/set_mode","params":{"sessionId": ok["result"]["sessionId"], "modeId": "yolo"}}).to_string());
    let mode = raw.answer();
    assert!(
        mode["error"]["data"]
            .as_str()
            .unwrap()
            .contains("develop, edit, research"),
        "{mode}"
    );
    drop(raw.child.stdin.take());
    let status = raw.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// The agent `patchwise acp` on `setup`'s workspace, over raw lines.
fn raw_agent(setup: &Setup) -> Raw {
    let mut child = Command::new(BIN)
        .args(["acp", "--workspace"])
        .arg(&setup.ws)
        .env("XDG_CONFIG_HOME", setup.dir.path().join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    Raw { child, out }
}

/// Waits (generously) for the agent to exit once its stdin is closed; its exit status.
fn exit_after_stdin_closes(mut raw: Raw) -> std::process::ExitStatus {
    drop(raw.child.stdin.take());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(status) = raw.child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = raw.child.kill();
            panic!("the agent kept running after its stdin closed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A client that goes away (its editor closed) ends the agent, idle or in the middle of a
/// run: the run is cancelled and nothing is written.
#[test]
fn the_agent_exits_when_stdin_closes_idle_or_mid_run_and_writes_nothing() {
    let setup = Setup::new("lsp/edit/workspace", Vec::new(), Vec::new(), "");
    let mut raw = raw_agent(&setup);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#);
    assert_eq!(raw.answer()["result"]["protocolVersion"], 1);
    assert!(exit_after_stdin_closes(raw).success());

    let path = support::fixture("develop/scenarios/rust_happy_path.json");
    let scenario: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // The coder never answers: the run is mid-step when the client goes.
    let setup = Setup::new(
        "develop/rust",
        vec![openai_sse(&scenario["planner"][0])],
        vec![Reply::Hang],
        "",
    );
    let before = tree(&setup.ws);
    let mut raw = raw_agent(&setup);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#);
    assert_eq!(raw.answer()["result"]["protocolVersion"], 1);
    raw.send(&json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd": setup.ws, "mcpServers": []}}).to_string());
    let session = raw.answer()["result"]["sessionId"].clone();
    assert!(session.is_string(), "{session}");
    raw.send(&json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId": session, "prompt": [develop_prompt()]}}).to_string());
    // Until the step's edit call starts, the coder has been asked.
    loop {
        let update = raw.answer();
        assert!(
            update.get("id").is_none(),
            "the prompt ended early: {update}"
        );
        if update["params"]["update"]["sessionUpdate"] == "tool_call" {
            break;
        }
    }
    assert!(exit_after_stdin_closes(raw).success());
    assert_eq!(tree(&setup.ws), before);
}

/// The `[research.sources.*]` of a configuration whose web sources are all unreachable, so a
/// research run reads only the workspace.
fn offline_research() -> String {
    let dead = "http://127.0.0.1:9";
    format!(
        "\n[research.sources.openalex]\nbase_url = \"{dead}\"\n[research.sources.arxiv]\nbase_url = \"{dead}\"\n[research.sources.crossref]\nbase_url = \"{dead}\"\n"
    )
}

/// Writes the two notes the research scenario cites into `ws/docs`.
fn research_notes(ws: &Path) {
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    std::fs::write(
        ws.join("docs/ropes.md"),
        "# Ropes\n\nA rope keeps edits cheap on large buffers: inserting in the middle of a 50 MB file costs a few tree nodes.\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("docs/positions.md"),
        "# Positions\n\nA position past the end of a line clamps to the line end; ropes make that cheap to compute.\n",
    )
    .unwrap();
}

/// An option of a `configOptions` list, by id.
fn option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options
        .as_array()
        .unwrap_or_else(|| panic!("no configOptions: {options}"))
        .iter()
        .find(|o| o["id"] == id)
        .unwrap_or_else(|| panic!("no option {id}: {options:#}"))
}

/// The values of a select option, in order.
fn values(option: &Value) -> Vec<&str> {
    option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect()
}

#[test]
fn config_options_choose_the_mode_and_the_model_and_stay_in_step_with_modes() {
    let answer = json!({ "text": "Ropes keep edits cheap on large buffers [1]. Positions past the end of a line clamp [2].\n\nClaims:\n- Ropes make edits on large buffers cheap [1]\n" });
    // Only the planner's server answers: the research runs on it once it is the chosen model.
    let setup = Setup::new(
        "lsp/edit/workspace",
        vec![openai_sse(&answer)],
        Vec::new(),
        &offline_research(),
    );
    research_notes(&setup.ws);
    let query = "why do editors keep buffers in ropes";
    let seen = setup.client(json!({
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "option", "configId": "mode", "value": "research" },
            { "op": "option", "configId": "model", "value": "plan/planner-model" },
            { "op": "prompt", "prompt": [text(query)] },
            // Hostile: an unknown option, an unknown value of each, a value of the wrong type.
            { "op": "option", "configId": "temperature", "value": "hot" },
            { "op": "option", "configId": "mode", "value": "yolo" },
            { "op": "option", "configId": "model", "value": "elsewhere/some-model" },
            { "op": "option", "configId": "mode", "type": "boolean", "value": true },
            // An older client's set_mode: the config options follow.
            { "op": "mode", "mode": "edit" },
            { "op": "request", "method": "session/set_config_option",
              "params": { "sessionId": "nope", "configId": "mode", "value": "edit" } },
            // No authentication is offered; a client that asks anyway is answered.
            { "op": "request", "method": "authenticate", "params": { "methodId": "none" } },
        ],
    }));
    let authenticated = &results(&seen, "authenticate")[0];
    assert!(authenticated.get("error").is_none(), "{authenticated:#}");
    let session = &results(&seen, "session/new")[0]["result"];
    let options = &session["configOptions"];
    let ids: Vec<&str> = options
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mode", "model"], "{options:#}");
    let mode = option(options, "mode");
    assert_eq!(
        (&mode["type"], &mode["category"], &mode["currentValue"]),
        (&json!("select"), &json!("mode"), &json!("develop")),
        "{mode:#}"
    );
    assert_eq!(values(mode), ["develop", "edit", "research"]);
    assert!(
        mode["options"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| !o["description"].as_str().unwrap_or_default().is_empty()),
        "{mode:#}"
    );
    let model = option(options, "model");
    assert_eq!(
        (&model["type"], &model["category"], &model["currentValue"]),
        (&json!("select"), &json!("model"), &json!("roles")),
        "{model:#}"
    );
    // The configured roles, then each model a role names (coder first).
    assert_eq!(
        values(model),
        ["roles", "code/coder-model", "plan/planner-model"]
    );
    assert_eq!(session["modes"]["currentModeId"], "develop");

    // set_config_option answers with every option; older clients get the mode as an update.
    let set = results(&seen, "session/set_config_option");
    assert_eq!(
        option(&set[0]["result"]["configOptions"], "mode")["currentValue"],
        "research",
        "{:#}",
        set[0]
    );
    let mode_updates = updates(&seen, "current_mode_update");
    assert_eq!(mode_updates.len(), 1, "{mode_updates:#?}");
    assert_eq!(mode_updates[0]["currentModeId"], "research");
    let after_model = &set[1]["result"]["configOptions"];
    assert_eq!(
        option(after_model, "model")["currentValue"],
        "plan/planner-model"
    );
    assert_eq!(option(after_model, "mode")["currentValue"], "research");

    // The prompt ran as research, on the chosen model.
    assert_eq!(stop_reason(&seen, 0), "end_turn");
    let said = agent_text(&seen);
    assert!(
        said.contains("Ropes keep edits cheap on large buffers [1]"),
        "{said}"
    );
    assert!(said.contains("Saved in the library as"), "{said}");
    assert!(!setup.servers[0].requests().is_empty());
    assert!(setup.coder().requests().is_empty());

    // Each refusal is a JSON-RPC error that says what would do, and changes nothing.
    let refusals: Vec<&Value> = set[2..].to_vec();
    assert_eq!(refusals.len(), 5, "{refusals:#?}");
    for (refusal, says) in refusals.iter().zip([
        "unknown config option \"temperature\"; the options are mode, model",
        "unknown mode \"yolo\"; the modes are develop, edit, research",
        "the values are roles, code/coder-model, plan/planner-model",
        "takes one of its listed values",
        "create one with session/new",
    ]) {
        let error = &refusal["error"];
        assert!(
            error["code"] == -32602 || error["code"] == -32002,
            "{refusal:#}"
        );
        assert!(
            error["data"].as_str().unwrap_or_default().contains(says),
            "{says:?} in {refusal:#}"
        );
    }
    // set_mode: the config options follow, the refused requests left the model as chosen.
    assert!(results(&seen, "session/set_mode")[0].get("error").is_none());
    let option_updates = updates(&seen, "config_option_update");
    let last = &option_updates.last().expect("a config_option_update")["configOptions"];
    assert_eq!(option(last, "mode")["currentValue"], "edit", "{last:#}");
    assert_eq!(
        option(last, "model")["currentValue"],
        "plan/planner-model",
        "{last:#}"
    );

    // The session, loaded by a new agent, keeps the mode and model it was left with.
    let id = session["sessionId"].clone();
    let again = setup.client(json!({
        "steps": [
            { "op": "initialize" },
            { "op": "load", "sessionId": id, "cwd": setup.ws },
        ],
    }));
    let loaded = &results(&again, "session/load")[0]["result"];
    assert_eq!(loaded["modes"]["currentModeId"], "edit", "{loaded:#}");
    assert_eq!(
        option(&loaded["configOptions"], "mode")["currentValue"],
        "edit"
    );
    assert_eq!(
        option(&loaded["configOptions"], "model")["currentValue"],
        "plan/planner-model"
    );
}

#[test]
fn the_model_option_lists_what_a_server_serves_and_the_embedded_model_when_the_configuration_leaves_them_open()
 {
    let listed = Reply::json(
        200,
        &json!({ "object": "list", "data": [
            { "id": "qwen2.5-coder-1.5b", "object": "model" },
            { "id": "qwen2.5-coder-7b", "object": "model" },
        ] }),
    );
    let setup = Setup::new("lsp/edit/workspace", Vec::new(), vec![listed], "");
    // A server and the model inside patchwise, no model named for either: the router takes the
    // first each lists, the panel may choose.
    let gguf = setup.dir.path().join("models/tiny.gguf");
    std::fs::create_dir_all(gguf.parent().unwrap()).unwrap();
    support::gguf::write_tiny_model(&gguf);
    std::fs::write(
        setup.dir.path().join("config/patchwise/config.toml"),
        format!(
            "data_dir = \"{}\"\n\n[providers.local]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\n\n\
             [providers.inside]\nkind = \"embedded\"\nmodel = {:?}\n\n[roles]\ncoder = \"local\"\nplanner = \"inside\"\n",
            setup.dir.path().join("data").display(),
            setup.coder().url(),
            gguf.display().to_string(),
        ),
    )
    .unwrap();
    let seen = setup.client(json!({
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "waitFor", "update": "config_option_update" },
            { "op": "option", "configId": "model", "value": "local/qwen2.5-coder-7b" },
        ],
    }));
    let at_start = &results(&seen, "session/new")[0]["result"]["configOptions"];
    assert_eq!(values(option(at_start, "model")), ["roles"]);
    let update = updates(&seen, "config_option_update");
    assert_eq!(update.len(), 1, "{update:#?}");
    assert_eq!(
        values(option(&update[0]["configOptions"], "model")),
        [
            "roles",
            "local/qwen2.5-coder-1.5b",
            "local/qwen2.5-coder-7b",
            "inside/tiny"
        ]
    );
    let inside = &option(&update[0]["configOptions"], "model")["options"][3];
    assert!(
        inside["description"]
            .as_str()
            .unwrap()
            .starts_with("The model inside patchwise"),
        "{inside:#}"
    );
    let asked = setup.coder().requests();
    assert_eq!(asked[0].method, "GET", "{asked:#?}");
    assert!(asked[0].path.ends_with("/v1/models"), "{asked:#?}");
    let set = &results(&seen, "session/set_config_option")[0];
    assert_eq!(
        option(&set["result"]["configOptions"], "model")["currentValue"],
        "local/qwen2.5-coder-7b",
        "{set:#}"
    );
}

/// The turns `tests/codecompanion.rs` drives in CodeCompanion's chat, through the official SDK
/// client: an edit rejected, one cancelled while the permission is asked, one allowed, one
/// cancelled while the model answers, then research on another model chosen with the config
/// options (`-- --nocapture` prints each turn's timings, to compare with the panel's).
#[test]
fn the_panel_turns_through_the_sdk_client_reject_cancel_allow_cancel_and_research() {
    let (s, edit) = support::edit_scenario("misindented");
    let mut coder: Vec<Reply> = std::iter::repeat_n(edit, 3).flatten().collect();
    // The fourth edit's answer never comes: only the cancel ends it.
    coder.push(Reply::Hang);
    let research = json!({ "text": "Ropes keep edits cheap on large buffers [1]. Positions past the end of a line clamp [2].\n\nClaims:\n- Ropes make edits on large buffers cheap [1]\n" });
    let setup = Setup::new(
        "lsp/edit/workspace",
        vec![openai_sse(&research)],
        coder,
        &offline_research(),
    );
    research_notes(&setup.ws);
    let lib = setup.ws.join("src/lib.rs");
    let original = std::fs::read_to_string(&lib).unwrap();
    let edit = text(&format!(
        "@src/lib.rs:{}-{} {}",
        s["lines"][0].as_u64().unwrap() + 1,
        s["lines"][1].as_u64().unwrap() + 1,
        s["instruction"].as_str().unwrap()
    ));
    let seen = setup.client(json!({
        "fs": { "readTextFile": true, "writeTextFile": true },
        "permission": ["reject_once", "cancel", "allow_once"],
        "steps": [
            { "op": "initialize" },
            { "op": "new", "cwd": setup.ws },
            { "op": "option", "configId": "mode", "value": "edit" },
            { "op": "prompt", "prompt": [edit] },
            { "op": "prompt", "prompt": [edit] },
            { "op": "prompt", "prompt": [edit] },
            { "op": "prompt", "prompt": [edit], "cancelOn": "agent_thought_chunk", "cancelDelayMs": 300 },
            { "op": "option", "configId": "mode", "value": "research" },
            { "op": "option", "configId": "model", "value": "plan/planner-model" },
            { "op": "prompt", "prompt": [text("why do editors keep buffers in ropes")] },
        ],
    }));
    let names = [
        "reject",
        "cancel during the permission",
        "allow",
        "cancel during the answer",
        "research",
    ];
    let prompts = results(&seen, "session/prompt");
    for (i, name) in names.iter().enumerate() {
        let step = prompts[i]["step"].clone();
        let first = seen["updates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["step"] == step)
            .and_then(|u| u["ms"].as_u64());
        eprintln!(
            "{name:<30} {:<10} first update {:>5} ms  cancel → cancelled {}",
            prompts[i]["result"]["stopReason"].as_str().unwrap_or("-"),
            first.map_or("-".to_owned(), |ms| ms.to_string()),
            prompts[i]["cancelledAfterMs"]
                .as_u64()
                .map_or("-".to_owned(), |ms| format!("{ms} ms")),
        );
    }
    let stops: Vec<Value> = (0..5).map(|i| stop_reason(&seen, i)).collect();
    assert_eq!(
        stops,
        ["end_turn", "cancelled", "end_turn", "cancelled", "end_turn"],
        "{}",
        agent_text(&seen)
    );
    // Asked three times, each locating the file; written once, through the client.
    let asked = seen["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 3, "{asked:#?}");
    for request in asked {
        assert_eq!(
            request["toolCall"]["locations"][0]["path"],
            lib.display().to_string(),
            "{request:#}"
        );
    }
    let writes = seen["writes"].as_array().unwrap();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0]["step"], prompts[2]["step"], "{writes:#?}");
    assert!(
        writes[0]["content"]
            .as_str()
            .unwrap()
            .contains(s["expected"].as_str().unwrap())
    );
    assert_eq!(std::fs::read_to_string(&lib).unwrap(), original);
    // The research ran on the chosen model.
    assert!(
        agent_text(&seen).contains("Ropes keep edits cheap on large buffers [1]"),
        "{}",
        agent_text(&seen)
    );
    assert!(!setup.servers[0].requests().is_empty());
}
