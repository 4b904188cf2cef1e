//! `patchwise research` through the real binary: a run with recorded providers and a scripted
//! OpenAI-compatible model that saves, lists, searches and reopens the record; a run with every
//! network source and the model down that still answers from the workspace and the library; and
//! a process killed with SIGKILL in the middle of a save.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use patchwise::model::replay::{ReplayServer, Reply};
use patchwise::store::Library;

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    workspace: PathBuf,
}

impl Env {
    /// A workspace with a file about attention and `config` as its `.patchwise/config.toml`.
    fn new(config: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let workspace = root.join("ws");
        std::fs::create_dir_all(workspace.join(".patchwise")).unwrap();
        std::fs::create_dir_all(workspace.join("docs")).unwrap();
        std::fs::write(
            workspace.join("docs/attention.md"),
            "# Notes\n\nOur transformer uses scaled dot-product attention in every layer.\nUnrelated line.\n",
        )
        .unwrap();
        std::fs::write(
            workspace.join("ignored.md"),
            "transformer attention secret\n",
        )
        .unwrap();
        std::fs::write(workspace.join(".gitignore"), "ignored.md\n").unwrap();
        let config = config.replace(
            "{lib}",
            &root.join("library/lib.sqlite3").display().to_string(),
        );
        std::fs::write(workspace.join(".patchwise/config.toml"), config).unwrap();
        Env {
            _dir: dir,
            root,
            workspace,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_patchwise"));
        command
            .arg("research")
            .args(args)
            .arg("--workspace")
            .arg(&self.workspace)
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("HOME", &self.root)
            .env("RUST_LOG", "patchwise=debug")
            .env_remove(patchwise::store::PAUSE_IN_SAVE_ENV)
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "{args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    fn library(&self) -> PathBuf {
        self.root.join("library/lib.sqlite3")
    }
}

fn fixture(name: &str) -> Reply {
    Reply::from_file(format!(
        "{}/fixtures/research/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A port nobody listens on.
fn closed_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
}

/// Configuration where the model and every network source are unreachable.
fn offline_config() -> String {
    let down = closed_url();
    format!(
        r#"
[providers.down]
base_url = "{down}/v1"
[roles]
coder = "down/some-model"
[retry]
max_attempts = 1
[research]
library = "{{lib}}"
[research.sources.openalex]
base_url = "{down}"
[research.sources.arxiv]
base_url = "{down}"
[research.sources.crossref]
base_url = "{down}"
[research.sources.semantic_scholar]
base_url = "{down}"
[research.sources.brave]
base_url = "{down}"
[research.sources.searxng]
enabled = true
base_url = "{down}"
[research.sources.news]
kind = "feeds"
urls = ["{down}/feed.xml"]
"#
    )
}

#[test]
fn a_run_with_a_scripted_model_saves_lists_searches_and_reopens() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (model, openalex, arxiv, crossref) = runtime.block_on(async {
        (
            ReplayServer::start(vec![fixture("model_synthesis.http")])
                .await
                .unwrap(),
            ReplayServer::start(vec![fixture("openalex_works.http")])
                .await
                .unwrap(),
            ReplayServer::start(vec![fixture("arxiv_query.http")])
                .await
                .unwrap(),
            ReplayServer::start(vec![fixture("crossref_works.http")])
                .await
                .unwrap(),
        )
    });
    let env = Env::new(&format!(
        r#"
[providers.test]
base_url = "{model}/v1"
[roles]
coder = "test/scripted"
[research]
library = "{{lib}}"
model = "coder"
[research.sources.openalex]
base_url = "{openalex}"
[research.sources.arxiv]
base_url = "{arxiv}"
min_interval_ms = 0
[research.sources.crossref]
base_url = "{crossref}"
mailto = "you@example.org"
"#,
        model = model.url(),
        openalex = openalex.url(),
        arxiv = arxiv.url(),
        crossref = crossref.url(),
    ));
    let run = env.json(&[
        "transformer attention",
        "--sources",
        "openalex,arxiv,crossref,workspace,library",
        "--depth",
        "1",
    ]);
    let id = run["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 12);
    assert_eq!(run["query"], "transformer attention");
    assert_eq!(run["model"], "test/scripted", "{run:#}");
    assert_eq!(run["synthesis_kind"], "model");
    let synthesis = run["synthesis"].as_str().unwrap();
    assert!(
        synthesis.contains("[1]") && synthesis.contains("[2]"),
        "{synthesis}"
    );
    assert!(!synthesis.contains("[99]"), "{synthesis}");
    assert!(
        !synthesis.contains("Claims:"),
        "the claims section is split off"
    );
    let notes = run["notes"].to_string();
    assert!(notes.contains("removed citation marker [99]"), "{notes}");
    // Every cited number names a source that was retrieved.
    let sources = run["sources"].as_array().unwrap();
    let cited: Vec<u64> = sources.iter().filter_map(|s| s["n"].as_u64()).collect();
    assert_eq!(cited, [1, 2]);
    for s in sources {
        for field in [
            "key",
            "provider",
            "title",
            "score",
            "breakdown",
            "retracted",
        ] {
            assert!(!s[field].is_null(), "{field} missing in {s}");
        }
        assert!(s.get("url").is_some());
    }
    assert!(
        sources.iter().any(|s| s["provider"] == "workspace"
            && s["title"] == "docs/attention.md:1-4 — Notes"
            && s["key"] == "file:docs/attention.md#L1-4"),
        "a workspace passage is titled with its lines and heading: {sources:?}"
    );
    assert!(
        !sources
            .iter()
            .any(|s| s["title"].as_str().unwrap().starts_with("ignored.md")),
        ".gitignore is respected"
    );
    // The claims are the cited sentences; the claims section is not needed when the text cites.
    let claims = run["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 2, "{claims:?}");
    assert_eq!(
        claims[0]["text"],
        "The Transformer is a network architecture based solely on attention mechanisms."
    );
    for claim in claims {
        assert!(!claim["checks"].as_array().unwrap().is_empty(), "{claim}");
    }
    let support = &run["support"];
    assert_eq!(support["method"], "overlap");
    assert_eq!(support["share"].as_f64(), Some(1.0), "{support}");
    // The model's own citations as it wrote them: [2], then [1] and [2] (the range); the
    // check removed the [2] that does not support its sentence.
    let model_support = &run["model_support"];
    assert_eq!(model_support["citations"], 3, "{model_support}");
    assert_eq!(model_support["supported"], 2, "{model_support}");
    assert!(
        notes.contains("removed 1 citation of a passage that does not support"),
        "{notes}"
    );
    // One call of 812 input tokens: the synthesis (the model's check of the citations is off
    // by default, `[research] verify`).
    let calls = model.requests().len() as u64;
    assert_eq!(calls, 1);
    assert_eq!(run["input_tokens"], 812 * calls);
    // The model saw numbered passages and the question.
    let request = model.requests()[0].json();
    let prompt = request["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.starts_with("Question: transformer attention\n\nPassages:\n\n[1] "),
        "{prompt}"
    );
    // The report.
    let report = PathBuf::from(run["report"].as_str().unwrap());
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("## Synthesis")
            && text.contains("## Claims")
            && text.contains("| # | Source |")
    );
    assert!(report.starts_with(env.root.join("library/reports")));
    let file_link = format!(
        "[docs/attention.md:1-4 — Notes](file://{}/docs/attention.md)",
        env.workspace.display()
    );
    assert!(text.contains("*Citations: "), "{text}");
    assert!(
        text.contains(&file_link),
        "workspace files link to themselves:\n{text}"
    );

    let list = env.json(&["list"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["query"], "transformer attention");
    assert!(list[0]["created_at"].as_str().unwrap().ends_with('Z'));

    let found = env.json(&["search", "Vaswani attention"]);
    assert_eq!(
        found.as_array().unwrap().len(),
        0,
        "authors are not indexed, every word must match"
    );
    let found = env.json(&["search", "transduction"]);
    assert_eq!(found[0]["id"], id.as_str(), "source abstracts are indexed");
    assert!(
        env.json(&["search", "gardening"])
            .as_array()
            .unwrap()
            .is_empty()
    );

    std::fs::remove_file(&report).unwrap();
    let shown = env.json(&["show", &id[..8]]);
    assert_eq!(shown["id"], id.as_str());
    assert_eq!(shown["synthesis"], run["synthesis"]);
    assert_eq!(shown["sources"], run["sources"]);
    assert!(report.exists(), "show writes a missing report again");

    let missing = env.run(&["show", "zzzzzzzz"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no research has the id"));

    let text_run = env.run(&["list"]);
    assert!(String::from_utf8_lossy(&text_run.stdout).contains(&id));

    let bad = env.run(&["x", "--sources", "nonsense"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown source \"nonsense\""));
}

#[test]
fn with_every_network_source_down_it_answers_from_the_workspace_and_the_library() {
    let env = Env::new(&offline_config());
    let first = env.json(&["transformer attention layers", "--sources", "workspace"]);
    assert_eq!(first["synthesis_kind"], "extractive");
    let second = env.json(&["how do transformer attention layers work"]);
    assert_eq!(second["synthesis_kind"], "extractive");
    let synthesis = second["synthesis"].as_str().unwrap();
    assert!(
        synthesis.starts_with("*Extractive synthesis — "),
        "{synthesis}"
    );
    assert!(synthesis.contains("[1]"), "{synthesis}");
    let providers: Vec<&str> = second["sources"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["providers"].as_array().unwrap())
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(providers.contains(&"workspace"), "{providers:?}");
    assert!(providers.contains(&"library"), "{providers:?}");
    let outcomes = second["outcomes"].as_array().unwrap();
    for name in [
        "openalex",
        "arxiv",
        "crossref",
        "semantic_scholar",
        "brave",
        "searxng",
        "news",
    ] {
        let o = outcomes
            .iter()
            .find(|o| o["provider"] == name)
            .unwrap_or_else(|| panic!("{name} missing in {outcomes:?}"));
        assert_eq!(o["status"], "failed", "{o}");
        assert!(
            o["message"]
                .as_str()
                .unwrap()
                .contains("connection refused"),
            "{o}"
        );
    }
    assert_eq!(second["status"], "partial");
    let notes = second["notes"].to_string();
    assert!(notes.contains("the model failed"), "{notes}");
}

#[test]
fn a_process_killed_mid_save_loses_nothing_saved_before() {
    let env = Env::new(&offline_config());
    let first = env.json(&["transformer attention", "--sources", "workspace"]);
    let first_id = first["id"].as_str().unwrap().to_owned();

    let mut child = env
        .command(&[
            "scaled dot-product attention",
            "--sources",
            "workspace",
            "--json",
        ])
        .env(patchwise::store::PAUSE_IN_SAVE_ENV, "60000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("pausing in save") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the run reached the save");
    // Child::kill sends SIGKILL on Unix: no destructor, no rollback, no cleanup runs.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());

    assert_integrity(&env.library());
    let library = Library::open(&env.library()).unwrap();
    assert_eq!(library.count().unwrap(), 1);
    let kept = library.get(&first_id).unwrap();
    assert_eq!(kept.synthesis, first["synthesis"].as_str().unwrap());
    assert_eq!(
        kept.sources.len(),
        first["sources"].as_array().unwrap().len()
    );
    drop(library);

    // And the library takes new research afterwards.
    let third = env.json(&["attention", "--sources", "workspace,library"]);
    let library = Library::open(&env.library()).unwrap();
    assert_eq!(library.count().unwrap(), 2);
    assert!(library.get(third["id"].as_str().unwrap()).is_ok());
}

fn assert_integrity(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}
