//! Configuration through the real binary: layering of the user and workspace files, problems
//! reported without stopping, `patchwise doctor` (text and `--json`) against a local server that
//! answers `GET /v1/models`, and that an API key never reaches stdout, stderr or the log file.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use patchwise::model::replay::{ReplayServer, Reply};

const SECRET: &str = "sk-test-DOCTOR-5ecr3t-value-91c2";

fn fixture(path: &str) -> Reply {
    Reply::from_file(format!(
        "{}/fixtures/model/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(user: Option<&str>, workspace: Option<&str>) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("xdg/patchwise")).unwrap();
        std::fs::create_dir_all(dir.path().join("ws/.patchwise")).unwrap();
        if let Some(text) = user {
            std::fs::write(dir.path().join("xdg/patchwise/config.toml"), text).unwrap();
        }
        if let Some(text) = workspace {
            std::fs::write(dir.path().join("ws/.patchwise/config.toml"), text).unwrap();
        }
        Setup { dir }
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }

    /// Runs `patchwise doctor ARGS` off the async runtime (the replay server keeps serving).
    async fn doctor(&self, args: &[&str]) -> Output {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_patchwise"));
        command
            .arg("doctor")
            .arg("--workspace")
            .arg(self.path("ws"))
            .args(args)
            .env("XDG_CONFIG_HOME", self.path("xdg"))
            .env("HOME", self.path("home"))
            .env("PATCHWISE_DOCTOR_TEST_KEY", SECRET)
            .env_remove("RUST_LOG")
            .env_remove("OPENAI_API_KEY");
        tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap()
    }
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn role<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["role"] == name)
        .unwrap()
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_overrides_user_and_doctor_reports_sources() {
    let server = ReplayServer::start(vec![fixture("openai/models.http")])
        .await
        .unwrap();
    let user = format!(
        "[providers.local]\nbase_url = \"{}/v1\"\n\n[roles]\ncoder = \"local/qwen2.5-coder:1.5b\"\njudge = \"local/qwen2.5-coder:32b\"\n\n[timeouts]\nconnect = 3\n",
        server.url()
    );
    let workspace = "[roles]\ncoder = \"local/qwen2.5-coder:7b\"\n";
    let setup = Setup::new(Some(&user), Some(workspace));
    let output = setup.doctor(&["--json"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = json(&output);
    let user_file = display(&setup.path("xdg/patchwise/config.toml"));
    let ws_file = display(&setup.path("ws/.patchwise/config.toml"));

    let coder = role(&report, "coder");
    assert_eq!(coder["model"], "qwen2.5-coder:7b");
    assert_eq!(coder["source"], ws_file.as_str());
    assert_eq!(coder["answers"], true);
    assert_eq!(coder["model_listed"], true);
    let judge = role(&report, "judge");
    assert_eq!(
        (judge["model"].as_str(), judge["source"].as_str()),
        (Some("qwen2.5-coder:32b"), Some(user_file.as_str()))
    );
    let planner = role(&report, "planner");
    assert_eq!(planner["uses"], "coder");
    assert_eq!(planner["model"], "qwen2.5-coder:7b");
    assert_eq!(report["timeouts"]["connect"]["value"], 3.0);
    assert_eq!(report["timeouts"]["connect"]["source"], user_file.as_str());
    assert_eq!(report["timeouts"]["total"]["source"], "default");
    assert_eq!(
        report["providers"][0]["base_url"]["source"],
        user_file.as_str()
    );
    assert_eq!(report["providers"][0]["api_key"], "not needed");
    assert_eq!(report["problems"], Value::Array(vec![]));
    assert_eq!(report["ok"], true);
    // One probe per provider, whatever the number of roles.
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.requests()[0].path, "/v1/models");

    let output = setup.doctor(&[]).await;
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "ok   coder      local/qwen2.5-coder:7b [{ws_file}]"
        )),
        "{text}"
    );
    assert!(text.contains("the coder role is ready"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_files_are_reported_and_the_rest_still_works() {
    let server = ReplayServer::start(vec![fixture("openai/models.http")])
        .await
        .unwrap();
    let user = format!(
        "[providers.local]\nkind = \"openai\"\nbase_url = \"{}/v1\"\ntemprature = 0.2\n\n[roles]\ncoder = \"local/qwen2.5-coder:99b\"\n\n[research]\nmax_sources = 10\n",
        server.url()
    );
    let workspace = "[roles\ncoder = \"oops\n";
    let setup = Setup::new(Some(&user), Some(workspace));
    let output = setup.doctor(&["--json"]).await;
    // The configured model is not listed: exit 1, report still printed.
    assert_eq!(output.status.code(), Some(1));
    let report = json(&output);
    let problems: Vec<String> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} | {} | {} | {}",
                p["severity"].as_str().unwrap(),
                p["source"]["name"].as_str().unwrap_or(""),
                p["key"].as_str().unwrap(),
                p["message"].as_str().unwrap()
            )
        })
        .collect();
    let ws_file = display(&setup.path("ws/.patchwise/config.toml"));
    let user_file = display(&setup.path("xdg/patchwise/config.toml"));
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].starts_with(&format!("warning | {user_file} | providers.local.temprature | unknown key, ignored; allowed here: api_key_env, base_url, context, gpu_layers, idle_minutes, kind, model, threads, tools")), "{problems:#?}");
    // Every section is checked when the file loads.
    assert!(
        problems[1].starts_with(&format!(
            "warning | {user_file} | research.max_sources | unknown key, ignored"
        )),
        "{problems:#?}"
    );
    assert!(
        problems[2].starts_with(&format!(
            "error | {ws_file} |  | invalid TOML, the file is ignored"
        )),
        "{problems:#?}"
    );
    let coder = role(&report, "coder");
    assert_eq!(coder["model_listed"], false);
    assert!(coder["detail"].as_str().unwrap().contains(
        "does not list \"qwen2.5-coder:99b\"; it lists: qwen2.5-coder:7b, qwen2.5-coder:32b"
    ));

    // Without --json the same problems are printed, with file and key.
    let output = setup.doctor(&["--offline"]).await;
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "warning: {user_file}: providers.local.temprature: unknown key"
        )),
        "{text}"
    );
    // Offline the coder role is configured, but the unreadable workspace file is an error.
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("the coder role is ready"), "{text}");
    assert!(
        text.contains("the configuration has 1 error: see the problems above"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_never_reach_output_or_logs() {
    let server = ReplayServer::start(vec![fixture("openai/models.http")])
        .await
        .unwrap();
    let workspace = format!(
        "[providers.remote]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"PATCHWISE_DOCTOR_TEST_KEY\"\n\n[roles]\ncoder = \"remote/qwen2.5-coder:7b\"\n",
        server.url()
    );
    let setup = Setup::new(None, Some(&workspace));
    let log = setup.path("doctor.log");
    let log_arg = display(&log);
    for args in [
        vec!["--json", "-vvv", "--log-file", log_arg.as_str()],
        vec!["-vvv"],
    ] {
        let output = setup.doctor(&args).await;
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stdout.contains(SECRET), "stdout leaks the key: {stdout}");
        assert!(!stderr.contains(SECRET), "stderr leaks the key: {stderr}");
        assert!(stdout.contains("PATCHWISE_DOCTOR_TEST_KEY"));
        assert!(stdout.contains("set (redacted)"), "{stdout}");
    }
    // The verbose run logged the probe (so the log is not trivially empty), without the key.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("doctor: probed"), "{logged}");
    assert!(logged.contains("resolved configuration"), "{logged}");
    assert!(!logged.contains(SECRET), "the log leaks the key: {logged}");
    // The key was really used: the server saw it.
    let seen = server.requests()[0]
        .header("authorization")
        .unwrap()
        .to_owned();
    assert_eq!(seen, format!("Bearer {SECRET}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn no_configuration_tries_ollama_then_lm_studio() {
    let setup = Setup::new(None, None);
    let output = setup.doctor(&["--json", "--offline"]).await;
    let report = json(&output);
    assert_eq!(report["builtin_providers"], true);
    let coder = role(&report, "coder");
    // Then the model inside patchwise, in builds that have it.
    let expected = if patchwise::model::embedded::AVAILABLE {
        serde_json::json!(["ollama", "lmstudio", "embedded"])
    } else {
        serde_json::json!(["ollama", "lmstudio"])
    };
    assert_eq!(coder["candidates"], expected);
    let urls: Vec<&str> = report["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["base_url"]["value"].as_str().unwrap())
        .collect();
    assert!(
        urls.contains(&"http://127.0.0.1:11434/v1") && urls.contains(&"http://127.0.0.1:1234/v1")
    );
    assert_eq!(report["data_dir"]["source"], "default");
}

/// A Python folder with tests and no manifest (`calc.py`, `calc_test.py`, `tests/test_more.py`)
/// is a Python project: `doctor` names a check and a test command, and the test commands it
/// names find both of pytest's file names — run here with the real Python, without pytest.
/// With pytest installed, the test command is pytest's.
#[tokio::test(flavor = "multi_thread")]
async fn a_python_folder_without_a_manifest_gets_a_check_and_its_tests() {
    // The interpreter itself (`python3` on PATH may be a script that needs more of PATH).
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_else(|| {
            panic!("python3 is not on PATH; this test runs the test commands doctor names")
        });
    let setup = Setup::new(None, None);
    let ws = setup.path("ws");
    std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let case = |name: &str| {
        format!(
            "import unittest\n\nimport calc\n\n\nclass {name}(unittest.TestCase):\n    \
             def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n"
        )
    };
    std::fs::write(ws.join("calc_test.py"), case("CalcTest")).unwrap();
    std::fs::create_dir_all(ws.join("tests")).unwrap();
    std::fs::write(ws.join("tests/test_more.py"), case("MoreTest")).unwrap();
    // A machine with Python and nothing else: no pytest.
    let bin = setup.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&python, bin.join("python3")).unwrap();
    let doctor = |bin: std::path::PathBuf| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_patchwise"));
        command
            .args(["doctor", "--offline", "--json", "--workspace"])
            .arg(&ws)
            .env("PATH", &bin)
            .env("XDG_CONFIG_HOME", setup.path("xdg"))
            .env("HOME", setup.path("home"))
            .env_remove("RUST_LOG");
        json(&command.output().unwrap())
    };
    let report = doctor(bin.clone());
    let develop = &report["develop"];
    assert_eq!(develop["project"], "python", "{develop:#}");
    let lines = |kind: &str| -> Vec<String> {
        develop["commands"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == kind)
            .map(|c| c["line"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        lines("check"),
        ["python3 -m compileall -q ."],
        "{develop:#}"
    );
    let tests = lines("test");
    assert!(!tests.is_empty(), "{develop:#}");
    let mut ran = 0;
    for line in &tests {
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", line])
            .current_dir(&ws)
            .env("PATH", &bin)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{line}: {stderr}");
        ran += stderr
            .lines()
            .filter_map(|l| {
                l.strip_prefix("Ran ")?
                    .split_whitespace()
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
            .sum::<usize>();
    }
    assert_eq!(
        ran, 2,
        "{tests:?} should run calc_test.py and tests/test_more.py"
    );

    std::fs::write(bin.join("pytest"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(
        bin.join("pytest"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let report = doctor(bin);
    let tests: Vec<&str> = report["develop"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "test")
        .filter_map(|c| c["line"].as_str())
        .collect();
    assert_eq!(tests, ["pytest -q"], "{report:#}");
}
