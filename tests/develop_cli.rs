//! `patchwise develop` from a terminal, through the real binary: the planner and the coder are
//! local servers replaying the `rust_happy_path` scenario in the OpenAI SSE format.
//! `--yes --json` prints one JSON object and writes nothing; `--apply` writes every file in one
//! transaction, and when a write fails midway (here: a file changed on disk during the run)
//! every file is left as it was; a proposal whose tests fail is not written at all.

mod support;

use std::path::PathBuf;
use std::process::Output;

use patchwise::model::replay::ReplayServer;
use serde_json::Value;
use support::{copy_dir, openai_sse, tree};

fn fixtures() -> PathBuf {
    support::fixture("develop")
}

struct Setup {
    runtime: tokio::runtime::Runtime,
    _servers: Vec<ReplayServer>,
    dir: tempfile::TempDir,
    ws: PathBuf,
}

/// A workspace copy, the scripted planner and coder, and a user configuration naming them.
fn setup(extra_config: &str) -> Setup {
    let scenario: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("scenarios/rust_happy_path.json")).unwrap(),
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let start = |role: &str| {
        let replies = scenario[role]
            .as_array()
            .unwrap()
            .iter()
            .map(openai_sse)
            .collect();
        runtime.block_on(ReplayServer::start(replies)).unwrap()
    };
    let (planner, coder) = (start("planner"), start("coder"));
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    copy_dir(&fixtures().join("rust"), &ws);
    let config = dir.path().join("config/patchwise");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "data_dir = \"{}\"\n\n[providers.plan]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\n\n\
             [providers.code]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\n\n\
             [roles]\nplanner = \"plan/planner-model\"\ncoder = \"code/coder-model\"\n\n\
             [retry]\nmax_attempts = 1\n{extra_config}",
            dir.path().join("data").display(),
            planner.url(),
            coder.url()
        ),
    )
    .unwrap();
    Setup {
        runtime,
        _servers: vec![planner, coder],
        dir,
        ws,
    }
}

fn develop(setup: &Setup, args: &[&str]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_patchwise"));
    command
        .arg("develop")
        .arg("add a line_count function, print it in main, and add an integration test for it")
        .arg("--workspace")
        .arg(&setup.ws)
        .args(args)
        .env("XDG_CONFIG_HOME", setup.dir.path().join("config"))
        .env("HOME", setup.dir.path().join("home"))
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null());
    let _guard = setup.runtime.enter();
    command.output().unwrap()
}

fn json_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{e}\nstdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn yes_json_prints_the_proposal_and_writes_nothing() {
    let setup = setup("");
    let before = tree(&setup.ws);
    let out = develop(&setup, &["--yes", "--json"]);
    let json = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{json}");
    assert_eq!(json["status"], "proposal");
    let paths: Vec<&str> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src/lib.rs", "src/main.rs", "tests/counts.rs"]);
    assert!(
        json["diff"]
            .as_str()
            .unwrap()
            .contains("+pub fn line_count"),
        "{json}"
    );
    assert_eq!(json["report"]["verify"]["status"], "passed", "{json}");
    assert_eq!(json["report"]["model_calls"], 4);
    assert_eq!(
        tree(&setup.ws),
        before,
        "develop without --apply wrote to the workspace"
    );
}

#[test]
fn without_yes_and_without_a_terminal_it_refuses_to_guess() {
    let setup = setup("");
    let out = develop(&setup, &["--json"]);
    assert_eq!(out.status.code(), Some(2));
    let json = json_of(&out);
    assert!(
        json["message"].as_str().unwrap().contains("pass --yes"),
        "{json}"
    );
}

#[test]
fn apply_writes_every_file() {
    let setup = setup("");
    let out = develop(&setup, &["--yes", "--apply"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("# Develop plan"),
        "the plan is printed"
    );
    let lib = std::fs::read_to_string(setup.ws.join("src/lib.rs")).unwrap();
    assert!(lib.contains("pub fn line_count"), "{lib}");
    assert!(setup.ws.join("tests/counts.rs").exists());
}

/// A test command that always fails, and no fix round to change that.
const FAILING_TESTS: &str = "\n[develop]\nfix_rounds = 0\n\n[develop.checks]\ntest = \"sh -c 'echo counts_lines failed; exit 1'\"\n";

#[test]
fn apply_refuses_a_proposal_whose_tests_fail_and_names_its_files() {
    // `--apply` is given before anyone has seen the diff: a change whose tests fail is not
    // written (docs/develop.md, "Results").
    let (first, second) = (setup(FAILING_TESTS), setup(FAILING_TESTS));
    let before = tree(&first.ws);
    let out = develop(&first, &["--yes", "--apply", "--json"]);
    let json = json_of(&out);
    assert_eq!(out.status.code(), Some(1), "{json}");
    assert_eq!(json["status"], "apply_refused", "{json}");
    assert_eq!(json["report"]["verify"]["status"], "failed", "{json}");
    let message = json["message"].as_str().unwrap();
    for needle in [
        "nothing was written: the tests fail with this change",
        "src/lib.rs, src/main.rs, tests/counts.rs",
        "counts_lines failed",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    assert!(
        json["diff"]
            .as_str()
            .unwrap()
            .contains("+pub fn line_count")
    );
    assert_eq!(
        tree(&first.ws),
        before,
        "an unverified proposal was written"
    );
    // Without --json the reason goes to stderr with the same exit code.
    let before = tree(&second.ws);
    let out = develop(&second, &["--yes", "--apply"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--apply does not write it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tree(&second.ws), before);
}

#[test]
fn apply_that_fails_midway_leaves_every_file_as_it_was() {
    // The check command changes src/main.rs on disk once the run has edited src/lib.rs: when
    // the transaction reaches src/main.rs, its text is no longer the one the run read, so the
    // commit fails after src/lib.rs — and must put src/lib.rs back.
    let probe = "sh -c 'grep -q line_count src/lib.rs && echo // changed by someone else >> {main}; exit 0'";
    let setup = setup("");
    let main = setup.ws.join("src/main.rs");
    let config = setup.dir.path().join("config/patchwise/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[develop.checks]\ncheck = \"{}\"\n",
        probe.replace("{main}", &main.display().to_string())
    ));
    std::fs::write(&config, text).unwrap();
    let before = tree(&setup.ws);
    let out = develop(&setup, &["--yes", "--apply", "--json"]);
    let json = json_of(&out);
    assert_eq!(out.status.code(), Some(1), "{json}");
    assert_eq!(json["status"], "apply_failed", "{json}");
    assert!(
        json["message"]
            .as_str()
            .unwrap()
            .contains("nothing was written"),
        "{json}"
    );
    let after = tree(&setup.ws);
    // Only the outside change to src/main.rs is there; the proposal left no trace.
    for ((path, old), (path2, new)) in before.iter().zip(&after) {
        assert_eq!(path, path2);
        if path.ends_with("src/main.rs") {
            let new = String::from_utf8_lossy(new);
            assert!(
                new.starts_with(&*String::from_utf8_lossy(old))
                    && new.contains("changed by someone else"),
                "{new}"
            );
            assert!(!new.contains("line_count"), "{new}");
        } else {
            assert_eq!(old, new, "{} changed", path.display());
        }
    }
    assert_eq!(before.len(), after.len(), "a file was created: {after:?}");
}
