//! The workspace as a research source, over the fixture corpus (`fixtures/research/corpus`:
//! 24 files of docs and code about a small gateway): multi-part questions find a passage for
//! each part, the index follows changed and deleted files, patchwise's own data is never
//! indexed even inside the workspace, and through the real binary, model answers in every
//! citation style small models write (recorded from Qwen2.5-Coder-1.5B where we have them) end
//! as normalised `[n]` citations — or, when the model cites nothing, as the extractive synthesis
//! with status `partial` and the reason shown.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use patchwise::model::replay::{RecordedRequest, ReplayServer, Reply};
use patchwise::research::index;
use patchwise::store::Library;
use support::copy_dir;

fn corpus() -> PathBuf {
    support::fixture("research/corpus")
}

/// A copy of the corpus and an empty library.
fn workspace() -> (tempfile::TempDir, PathBuf, Library) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_dir(&corpus(), &root);
    let library = Library::open(&dir.path().join("lib/lib.sqlite3")).unwrap();
    (dir, root, library)
}

fn refresh(library: &Library, root: &Path) -> index::Refresh {
    index::refresh(
        library,
        root,
        &[],
        &CancellationToken::new(),
        Instant::now() + Duration::from_secs(60),
    )
    .unwrap()
}

/// The paths found for each part of `question` (part `None` = the whole question).
fn found_per_part(library: &Library, root: &Path, question: &str) -> Vec<(Option<usize>, String)> {
    index::search(library, root, question, 24)
        .unwrap()
        .into_iter()
        .map(|f| (f.part, f.hit.path))
        .collect()
}

#[test]
fn the_corpus_has_at_least_twenty_files_of_docs_and_code() {
    let mut files = Vec::new();
    let mut stack = vec![corpus()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    assert!(files.len() >= 20, "{}", files.len());
    let code = files
        .iter()
        .filter(|f| {
            matches!(
                f.extension().and_then(|e| e.to_str()),
                Some("rs" | "py" | "go" | "ts")
            )
        })
        .count();
    assert!(code >= 6 && files.len() - code >= 10);
}

#[test]
fn multi_part_questions_find_a_passage_for_each_part() {
    let (_dir, root, library) = workspace();
    let first = refresh(&library, &root);
    assert!(first.complete && first.files >= 20 && first.read == first.files);
    let cases: [(&str, &[&[&str]]); 5] = [
        (
            "how does the cache evict entries, how does the store use its write-ahead log, and how are requests retried",
            &[
                &["docs/cache.md", "src/cache.rs"],
                &["docs/store.md", "src/wal.rs"],
                &["docs/retry.md", "src/retry.py"],
            ],
        ),
        (
            "what does the cache do when it is full and what does the store keep for crash recovery",
            &[
                &["docs/cache.md", "src/cache.rs"],
                &["docs/store.md", "src/wal.rs"],
            ],
        ),
        (
            "how long is a job leased and what happens to a job that keeps failing",
            &[
                &["docs/queue.md", "src/queue.ts"],
                &["docs/queue.md", "src/queue.ts", "ops/runbook.md"],
            ],
        ),
        (
            "which TLS versions are accepted? how are API keys rotated?",
            &[&["docs/tls.md"], &["docs/auth.md", "src/auth.rs"]],
        ),
        (
            "how does a rolling deployment drain an instance, and what is redacted from the logs",
            &[&["docs/deploy.md"], &["docs/logging.md", "src/redact.rs"]],
        ),
    ];
    for (question, parts) in cases {
        let found = found_per_part(&library, &root, question);
        for (i, expected) in parts.iter().enumerate() {
            // The part's own best passage comes from a file about it, in the first round.
            let first_of_part = found.iter().find(|(p, _)| *p == Some(i));
            assert!(
                first_of_part.is_some_and(|(_, path)| expected.contains(&path.as_str())),
                "{question}: part {i} expected one of {expected:?}, found {found:?}"
            );
            let position = found.iter().position(|(p, _)| *p == Some(i)).unwrap();
            assert!(
                position < parts.len() + 1,
                "{question}: part {i} comes in the first round: {found:?}"
            );
        }
    }
}

#[test]
fn the_index_follows_changed_added_and_deleted_files() {
    let (_dir, root, library) = workspace();
    refresh(&library, &root);
    let again = refresh(&library, &root);
    assert_eq!(again.read, 0, "nothing changed, nothing is read again");

    // A change of content (and size) is seen.
    std::fs::write(
        root.join("docs/compression.md"),
        "# Compression\n\nResponses are compressed with zstandard since version two.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("docs/new.md"),
        "# Sharding\n\nKeys are spread over shards by consistent hashing.\n",
    )
    .unwrap();
    std::fs::remove_file(root.join("docs/tls.md")).unwrap();
    let changed = refresh(&library, &root);
    assert_eq!((changed.read, changed.removed), (2, 1), "{changed:?}");
    let paths = |q: &str| -> Vec<String> {
        found_per_part(&library, &root, q)
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    };
    assert_eq!(paths("zstandard"), ["docs/compression.md"]);
    assert!(paths("brotli").is_empty(), "the old text is gone");
    assert_eq!(paths("consistent hashing shards")[0], "docs/new.md");
    let tls = paths("certificates handshake");
    assert!(!tls.iter().any(|p| p == "docs/tls.md"), "{tls:?}");

    // Same size, new modification time: read again.
    let file = root.join("docs/new.md");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("Keys", "Rows");
    std::fs::write(&file, text).unwrap();
    let later = std::time::SystemTime::now() + Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let touched = refresh(&library, &root);
    assert_eq!(touched.read, 1);
    assert_eq!(paths("rows spread")[0], "docs/new.md");
}

// --- through the binary ---------------------------------------------------------------------

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    workspace: PathBuf,
}

/// The `[research]` lines of the runs whose targeted passes script answers in the model's own
/// words, over the whole question first.
const WRITTEN: &str = "per_part = false\nquote_parts = false\n";

impl Env {
    /// The corpus as the workspace; the library (and so the reports) and patchwise's data
    /// directory both inside it.
    /// `per_part = false`: these runs script the model's answer to the whole question (a
    /// question of several parts is otherwise asked part by part,
    /// `a_question_of_several_parts_is_answered_part_by_part`); `quote_parts = false`: their
    /// targeted passes are answered in the model's own words (quoted answers:
    /// `a_part_is_answered_with_the_sentences_the_model_copied_as_the_passages_write_them`).
    fn new(model_url: Option<&str>) -> Env {
        Env::with_research(model_url, WRITTEN)
    }

    /// [`Env::new`] with `research` (`key = value` lines) added to its `[research]` table.
    fn with_research(model_url: Option<&str>, research: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let workspace = root.join("ws");
        copy_dir(&corpus(), &workspace);
        let model = match model_url {
            Some(url) => format!(
                "[providers.test]\nbase_url = \"{url}/v1\"\n[roles]\ncoder = \"test/scripted\"\n"
            ),
            None => {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let down = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
                format!(
                    "[providers.down]\nbase_url = \"{down}/v1\"\n[roles]\ncoder = \"down/m\"\n[retry]\nmax_attempts = 1\n"
                )
            }
        };
        std::fs::create_dir_all(workspace.join(".patchwise")).unwrap();
        std::fs::write(
            workspace.join(".patchwise/config.toml"),
            format!(
                "{model}[research]\nlibrary = \"{}\"\n{research}",
                workspace.join("notes/research/lib.sqlite3").display()
            ),
        )
        .unwrap();
        Env {
            _dir: dir,
            root,
            workspace,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_patchwise"))
            .arg("research")
            .args(args)
            .arg("--workspace")
            .arg(&self.workspace)
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            // patchwise's data directory is inside the workspace too.
            .env("XDG_DATA_HOME", self.workspace.join("data"))
            .env("HOME", &self.root)
            .env_remove(patchwise::store::PAUSE_IN_SAVE_ENV)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// A run's JSON (exit 0, or 1 when nothing was found) and its stderr.
    fn json(&self, args: &[&str]) -> (Value, String) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{args:?}: {stderr}"
        );
        (serde_json::from_slice(&out.stdout).unwrap(), stderr)
    }
}

fn paths(run: &Value) -> Vec<String> {
    run["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn patchwise_data_is_never_indexed_even_inside_the_workspace() {
    let env = Env::new(None);
    let question = "zebra quagga okapi migration";
    // Words only patchwise's own files will hold: the data directory, and a report copied
    // into the docs.
    let data = env.workspace.join("data/patchwise");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("notes.md"), "zebra quagga okapi migration\n").unwrap();
    let (first, _) = env.json(&[question, "--sources", "workspace"]);
    assert!(paths(&first).is_empty(), "{:?}", paths(&first));
    let report = PathBuf::from(first["report"].as_str().unwrap());
    assert!(
        report.starts_with(env.workspace.join("notes/research")),
        "{report:?}"
    );
    std::fs::copy(&report, env.workspace.join("docs/copied-report.md")).unwrap();
    // A user's own note with the words is found; the reports (in the library's folder and the
    // copy) and the data directory are not.
    std::fs::write(
        env.workspace.join("docs/zoo.md"),
        "# Zoo\n\nThe zebra, quagga and okapi migration is tracked weekly.\n",
    )
    .unwrap();
    let (second, _) = env.json(&[question, "--sources", "workspace"]);
    let found = paths(&second);
    assert_eq!(found, ["docs/zoo.md:1-3 — Zoo"], "{found:?}");
}

#[test]
fn an_include_marker_shows_its_file_from_inside_the_workspace_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    for (path, text) in [
        (
            "ws/docs_src/password.py",
            "import typer\n\ndef main(password: str = typer.Option(prompt=True, hide_input=True)):\n    print(password)\n",
        ),
        ("outside.py", "SECRET_OUTSIDE = 1\n"),
        ("ws/data/private.py", "SECRET_EXCLUDED = 1\n"),
        ("ws/.env", "SECRET_DOTENV=1\n"),
    ] {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(root.join("docs")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path().join("outside.py"), root.join("docs_src/link.py"))
        .unwrap();
    std::fs::write(
        root.join("docs/password.md"),
        "# Password prompt\n\nA password prompt hides what is typed with `hide_input`:\n\n{* docs_src/password.py hl[3] *}\n\nThe password prompt marker climbing out:\n\n{* ../outside.py *}\n\nThe password prompt marker through a link:\n\n{* docs_src/link.py *}\n\nThe password prompt marker into data:\n\n{* data/private.py *}\n\nThe password prompt marker to a hidden file:\n\n--8<-- \".env\"\n",
    )
    .unwrap();
    let library = Library::open(&dir.path().join("lib/lib.sqlite3")).unwrap();
    let found = patchwise::research::sources::local::search_workspace(
        &library,
        &root,
        &[root.join("data")],
        "how is the password prompt hidden",
        10,
        &CancellationToken::new(),
        Instant::now() + Duration::from_secs(60),
    )
    .unwrap();
    let page: Vec<&patchwise::store::SourceRecord> = found
        .records
        .iter()
        .filter(|r| r.key.starts_with("file:docs/password.md"))
        .collect();
    let included: Vec<&(String, String)> = page.iter().flat_map(|r| &r.included).collect();
    assert_eq!(
        included,
        [&(
            "{* docs_src/password.py hl[3] *}".to_owned(),
            "```python\nimport typer\n\ndef main(password: str = typer.Option(prompt=True, hide_input=True)):\n    print(password)\n```".to_owned()
        )],
        "{page:?}"
    );
    // The passage keeps its markers: the file's words are not ranked as the page's.
    let text: String = page.iter().map(|r| r.snippet.as_str()).collect();
    assert!(text.contains("{* docs_src/password.py hl[3] *}"), "{text}");
    assert!(!format!("{page:?}").contains("SECRET"), "{page:?}");
    assert!(text.contains("--8<-- \".env\""), "{text}");
}

fn scripted(answer: &str) -> Reply {
    scripted_chunks(&[answer])
}

/// An answer streamed in `chunks`, one event each, as a server streams it.
fn scripted_chunks(chunks: &[&str]) -> Reply {
    scripted_ending(chunks, "stop")
}

/// An answer streamed in `chunks` that ends for `finish` (`"length"`: the token limit).
fn scripted_ending(chunks: &[&str], finish: &str) -> Reply {
    let mut events = String::new();
    for chunk in chunks {
        let chunk = serde_json::json!({
            "id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": chunk}, "finish_reason": null}]
        });
        events.push_str(&format!("data: {chunk}\n\n"));
    }
    let done = serde_json::json!({
        "id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960}
    });
    Reply::parse(&format!(
        "HTTP/1.1 200 OK\ncontent-type: text/event-stream\n\n{events}data: {done}\n\ndata: [DONE]\n\n"
    ))
}

const QUESTION: &str = "how does the cache evict entries, how does the store use its write-ahead log, and how are requests retried";

/// Runs QUESTION over the corpus with a model answering `reply`: once with `--json` (the
/// record, the prompt the model saw and the report), once without (the progress on stderr).
/// `--no-verify`: these runs are about the overlap check (the model's check has its tests).
fn run_with(reply: Reply) -> (Value, String, String, String) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![reply.clone(), reply]))
        .unwrap();
    let env = Env::new(Some(&model.url()));
    let (run, _) = env.json(&[QUESTION, "--sources", "workspace", "--no-verify"]);
    let plain = env.run(&[QUESTION, "--sources", "workspace", "--no-verify"]);
    let prompt = user_message(&model.requests()[0]);
    let report = std::fs::read_to_string(run["report"].as_str().unwrap()).unwrap();
    (
        run,
        String::from_utf8_lossy(&plain.stderr).into_owned(),
        prompt,
        report,
    )
}

/// The passage number the prompt gave `path`'s passage whose heading contains `heading`.
fn number_of(prompt: &str, path: &str, heading: &str) -> u32 {
    prompt
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix('[')?;
            let (n, title) = rest.split_once("] ")?;
            (title.starts_with(path) && title.contains(heading)).then(|| n.parse().ok())?
        })
        .unwrap_or_else(|| panic!("{path} {heading} not in the prompt:\n{prompt}"))
}

#[test]
fn every_citation_style_ends_as_numbered_citations_checked_for_support() {
    // First learn the numbers the prompt gives the passages (the index is deterministic).
    let (_, _, prompt, _) = run_with(scripted("The cache evicts entries [1]."));
    let cache = number_of(&prompt, "docs/cache.md", "Eviction");
    let wal = number_of(&prompt, "docs/store.md", "Write-ahead log");
    let retry = number_of(&prompt, "docs/retry.md", "Backoff");
    let styles = [
        format!(
            "When the cache is full it evicts the least recently used entry ({cache}). Every write is first appended to the write-ahead log and flushed before it is acknowledged ({wal}). Retries use exponential backoff with full jitter ({retry})."
        ),
        format!(
            "When the cache is full it evicts the least recently used entry [source {cache}]. Every write is first appended to the write-ahead log and flushed before it is acknowledged [Source {wal}]. Retries use exponential backoff with full jitter [source {retry}]."
        ),
        format!(
            "When the cache is full it evicts the least recently used entry [ {cache} ]. Every write is first appended to the write-ahead log and flushed before it is acknowledged [{wal}, {cache}]. Retries use exponential backoff with full jitter [{retry}][{wal}]."
        ),
        format!(
            "When the cache is full it evicts the least recently used entry 【{cache}】. Every write is first appended to the write-ahead log and flushed before it is acknowledged 【{wal}†source】. Retries use exponential backoff with full jitter^{retry}."
        ),
    ];
    for (i, answer) in styles.iter().enumerate() {
        let (run, _, _, _) = run_with(scripted(answer));
        let synthesis = run["synthesis"].as_str().unwrap();
        assert_eq!(run["synthesis_kind"], "model", "{answer}\n{synthesis}");
        assert_eq!(run["status"], "complete", "{answer}");
        assert!(
            synthesis
                .starts_with("When the cache is full it evicts the least recently used entry [1]."),
            "{synthesis}"
        );
        for junk in ["(", "source", "【", "^", "[ "] {
            assert!(!synthesis.contains(junk), "{junk:?} left in {synthesis}");
        }
        let claims = run["claims"].as_array().unwrap();
        assert_eq!(claims.len(), 3, "{claims:?}");
        let support = &run["support"];
        assert_eq!(support["share"].as_f64(), Some(1.0), "{answer}: {support}");
        let model_support = &run["model_support"];
        if i == 2 {
            // `[wal, cache]` and `[retry][wal]`: the second passage of each pair is about
            // something else; the check measures it, then removes those citations.
            assert_eq!(
                (
                    &model_support["citations"],
                    &model_support["supported"],
                    &model_support["unsupported"]
                ),
                (&Value::from(5), &Value::from(3), &Value::from(2)),
                "{model_support}"
            );
            assert_eq!(support["citations"], 3, "{support}");
            assert!(
                run["notes"]
                    .to_string()
                    .contains("removed 2 citations of a passage that does not support"),
                "{}",
                run["notes"]
            );
        } else {
            assert_eq!(
                model_support["share"].as_f64(),
                Some(1.0),
                "{model_support}"
            );
        }
        // The cited sources are the passages the numbers named.
        let first = &run["sources"][0];
        assert_eq!(first["n"], 1);
        assert!(
            first["title"]
                .as_str()
                .unwrap()
                .starts_with("docs/cache.md")
        );
    }
}

#[test]
fn citations_that_do_not_hold_are_repaired_before_the_report() {
    // The forms of recorded Qwen2.5-Coder-1.5B answers: a sentence cited to a neighbouring
    // passage, and a paragraph whose citations come in a sentence of their own.
    let (_, _, prompt, _) = run_with(scripted("The cache evicts entries [1]."));
    let cache = number_of(&prompt, "docs/cache.md", "Eviction");
    let wal = number_of(&prompt, "docs/store.md", "Write-ahead log");
    let wrong = if cache == 1 { 2 } else { cache - 1 };
    let answer = format!(
        "When the cache is full it evicts the least recently used entry first [{wrong}]. Every write is first appended to the write-ahead log and flushed with `fsync` before the write is acknowledged. Only then is the in-memory table updated.\n\nThis process is described in [{wal}]."
    );
    let (run, _, _, report) = run_with(scripted(&answer));
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(run["synthesis_kind"], "model", "{synthesis}");
    assert_eq!(run["status"], "complete");
    assert!(
        synthesis.starts_with(
        "When the cache is full it evicts the least recently used entry first [1] (re-cited). Every write is first appended to the write-ahead log and flushed with `fsync` before the write is acknowledged [2]. Only then is the in-memory table updated [2].\n\n*The model's answer has no supported sentence about \u{201c}how are requests retried\u{201d}; quoted from the sources:*"
        ),
        "{synthesis}"
    );
    assert_eq!(
        run["support"]["share"].as_f64(),
        Some(1.0),
        "{}",
        run["support"]
    );
    assert_eq!(
        run["model_support"]["citations"], 1,
        "{}",
        run["model_support"]
    );
    assert_eq!(run["model_support"]["supported"], 0);
    let notes = run["notes"].to_string();
    assert!(notes.contains("re-cited 1 sentence"), "{notes}");
    assert!(
        notes.contains("cited 2 sentences with the supporting passage the model cited at the end of the paragraph"),
        "{notes}"
    );
    assert!(
        report.contains("The model's own citations, before the check: 0% supported (0 of 1)."),
        "{report}"
    );
}

#[test]
fn an_answer_no_passage_supports_falls_back_to_an_extractive_answer_per_part() {
    let (run, stderr, _, report) = run_with(scripted(
        "The gateway is a well designed system. It handles many concerns. Caching, storage and retries all work together to make it robust and fast for users.",
    ));
    assert_eq!(run["synthesis_kind"], "extractive");
    assert_eq!(run["status"], "partial");
    let synthesis = run["synthesis"].as_str().unwrap();
    assert!(
        synthesis.starts_with("*Extractive synthesis — no passage supports any of the"),
        "{synthesis}"
    );
    // One part after the other, each under its own line, each with a quoted sentence.
    let cache = synthesis
        .find("**1. how does the cache evict entries**")
        .expect(synthesis);
    let wal = synthesis
        .find("**2. how does the store use its write-ahead log**")
        .expect(synthesis);
    let retry = synthesis
        .find("**3. how are requests retried**")
        .expect(synthesis);
    assert!(cache < wal && wal < retry, "{synthesis}");
    assert!(
        synthesis[cache..wal].contains("least recently used"),
        "{synthesis}"
    );
    assert!(
        synthesis[wal..retry].contains("write-ahead log"),
        "{synthesis}"
    );
    assert!(synthesis[retry..].contains("retried"), "{synthesis}");
    for line in synthesis.lines().filter(|l| l.starts_with("- ")) {
        assert!(!line.contains("? ["), "a question quoted: {line}");
        assert!(!line.contains(": ["), "a fragment quoted: {line}");
    }
    let parts = run["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 3);
    assert!(
        parts
            .iter()
            .all(|p| p["answered"] == true && p["quoted"] == true),
        "{parts:?}"
    );
    assert!(
        run["notes"]
            .to_string()
            .contains("fell back to the extractive synthesis: no passage supports any"),
        "{}",
        run["notes"]
    );
    assert!(
        stderr.contains("fell back to the extractive synthesis"),
        "the progress says why: {stderr}"
    );
    assert!(
        report.contains("extractive synthesis (test/scripted (not kept))"),
        "{report}"
    );
    assert!(report.contains("## Parts of the question"), "{report}");
}

#[test]
fn an_answer_without_any_citation_is_kept_when_the_passages_support_it() {
    // The shape in which Qwen2.5-Coder-1.5B answers on a corpus it was never tuned on: plain
    // sentences, no `[n]` at all. Each is attributed to the passage that holds it.
    let (run, _, _, report) = run_with(scripted(
        "When the cache is full it evicts the least recently used entry first. Every write is first appended to the write-ahead log and flushed before the write is acknowledged. Outgoing requests are retried when they fail with a connection error or a timeout.",
    ));
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(run["synthesis_kind"], "model", "{synthesis}");
    assert_eq!(run["status"], "complete", "{}", run["notes"]);
    assert_eq!(synthesis.matches("(attributed)").count(), 3, "{synthesis}");
    let sentences = &run["sentences"];
    assert_eq!(
        (
            &sentences["cited"],
            &sentences["attributed"],
            &sentences["dropped"]
        ),
        (&Value::from(0), &Value::from(3), &Value::from(0)),
        "{sentences}"
    );
    let parts = run["parts"].as_array().unwrap();
    assert!(
        parts
            .iter()
            .all(|p| p["answered"] == true && p["quoted"] == false),
        "{parts:?}"
    );
    assert!(
        report.contains(
            "The model's sentences: 0 cited by the model, 3 attributed to a passage by the server, 0 dropped."
        ),
        "{report}"
    );
}

#[test]
fn a_part_the_model_left_out_gets_quoted_sentences() {
    let (run, _, _, _) = run_with(scripted(
        "When the cache is full it evicts the least recently used entry first. Every write is first appended to the write-ahead log and flushed before the write is acknowledged. Only then is the in-memory table updated.",
    ));
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(run["synthesis_kind"], "model", "{synthesis}");
    let quoted = synthesis
        .find("*The model's answer has no supported sentence about \u{201c}how are requests retried\u{201d}; quoted from the sources:*")
        .expect(synthesis);
    assert!(synthesis[quoted..].contains("retried"), "{synthesis}");
    let parts = run["parts"].as_array().unwrap();
    assert_eq!(parts[2]["answered"], true, "{parts:?}");
    assert_eq!(parts[2]["quoted"], true);
    assert_eq!(parts[0]["quoted"], false);
}

/// The user message of a recorded request to the model: the prompt with its passages.
fn user_message(request: &RecordedRequest) -> String {
    request.json()["messages"][1]["content"]
        .as_str()
        .expect("a user message")
        .to_owned()
}

/// QUESTION run (`--no-verify`) with a model whose synthesis answers the cache and the log but
/// not "how are requests retried", and `again` as its answer to the targeted pass for that
/// part. Returns the record and the model's requests.
fn asked_again_about_retries(again: Reply) -> (Value, Vec<RecordedRequest>) {
    let first = scripted(
        "When the cache is full it evicts the least recently used entry first. Every write is first appended to the write-ahead log and flushed before the write is acknowledged.",
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![first, again]))
        .unwrap();
    let env = Env::new(Some(&model.url()));
    let (run, _) = env.json(&[QUESTION, "--sources", "workspace", "--no-verify"]);
    (run, model.requests())
}

/// A targeted answer the token limit cut short keeps the sentences the model finished: over
/// uv's docs (2026-12-01) the report printed "…for flat indexes (i.e., `--find-links`
/// locations), [1]", a sentence cut after its comma, cited.
#[test]
fn a_targeted_answer_cut_by_the_token_limit_keeps_its_finished_sentences() {
    let again = scripted_ending(
        &[
            "Outgoing requests to upstream services are retried when they fail with a connection error, a timeout, or an HTTP 502, 503 or 504 status [1]. ",
            "`call_with_retries` sends the request again after connection errors and timeouts, up to five tries [2], and for a `Retry-After` header it sleeps for the",
        ],
        "length",
    );
    let (run, requests) = asked_again_about_retries(again);
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(requests.len(), 2, "one synthesis, one targeted call");
    assert!(
        synthesis.contains("are retried when they fail with a connection error"),
        "{synthesis}"
    );
    assert!(!synthesis.contains("call_with_retries"), "{synthesis}");
}

/// A sentence of the targeted pass that leads in to code keeps the code: the pass prints its
/// supported sentences, and over uv's docs (2026-12-01) one ended "you would run [3]." with
/// the command it led to left out.
#[test]
fn a_targeted_lead_in_keeps_the_code_it_leads_to() {
    let again = scripted(
        "Requests are retried by `call_with_retries`, which sends the request again [1]:\n\n```python\ndef call_with_retries(send, request):\n\n    response = send(request)\n```\n",
    );
    let (run, requests) = asked_again_about_retries(again);
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(requests.len(), 2, "one synthesis, one targeted call");
    assert!(
        synthesis.contains("which sends the request again [3]:\n\n```python\ndef call_with_retries(send, request):\n\n    response = send(request)\n```"),
        "{synthesis}"
    );
}

/// The targeted pass keeps the supported sentences around the one that answers its part, in
/// whatever words they say the rest: over attrs' docs (run D, 2026-12-01) it printed the
/// sentence on `cached_property` in slotted classes and dropped the next, "For most users, this
/// should mean that it works transparently.", which holds none of the part's words. An answer
/// none of whose sentences is about the part keeps nothing, and the part stays unanswered.
#[test]
fn a_targeted_answer_keeps_its_supported_sentences_around_the_one_on_its_part() {
    // Said by the FAQ passage the pass shows beside the retry document, with none of the part's
    // words.
    let other = "An `Authorization` header is the usual reason a response is not cached [2].";
    let (run, requests) = asked_again_about_retries(scripted(&format!(
        "Outgoing requests to upstream services are retried when they fail with a connection error, a timeout, or an HTTP 502, 503 or 504 status [3]. {other}"
    )));
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(requests.len(), 2, "one synthesis, one targeted call");
    assert!(
        synthesis.contains("are retried when they fail with a connection error"),
        "{synthesis}"
    );
    assert!(
        synthesis.contains("An `Authorization` header is the usual reason"),
        "{synthesis}"
    );
    assert_eq!(run["parts"][2]["answered"], true, "{}", run["parts"]);

    let (run, _) = asked_again_about_retries(scripted(other));
    let synthesis = run["synthesis"].as_str().unwrap();
    assert!(!synthesis.contains("the usual reason"), "{synthesis}");
    assert_ne!(
        (&run["parts"][2]["answered"], &run["parts"][2]["quoted"]),
        (&Value::from(true), &Value::from(false)),
        "{}",
        run["parts"]
    );
}

/// `[research] per_part`, on by default: a question of several parts is answered part by part.
/// No answer to the whole question is asked for; each part gets one short call over its own
/// best passages, in the order of the parts, and the report says how it was asked.
#[test]
fn a_question_of_several_parts_is_answered_part_by_part() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![
            scripted("When the cache is full it evicts the least recently used entry first [1]."),
            scripted("Every write is first appended to the write-ahead log and flushed before the write is acknowledged [1]."),
            scripted("Outgoing requests to upstream services are retried when they fail with a connection error, a timeout, or an HTTP 502, 503 or 504 status [1]."),
        ]))
        .unwrap();
    let env = Env::with_research(Some(&model.url()), "quote_parts = false\n");
    let (run, _) = env.json(&[QUESTION, "--sources", "workspace"]);
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        3,
        "one call a part, none for the whole question"
    );
    let parts = run["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 3, "{parts:?}");
    for (request, part) in requests.iter().zip(parts) {
        let asked = user_message(request);
        let question = format!("Question: {}\n", part["part"].as_str().unwrap());
        assert!(asked.starts_with(&question), "{asked}");
        assert!((1..=3).contains(&asked.lines().filter(|l| l.starts_with('[')).count()));
        assert_eq!(part["answered"], true, "{parts:?}");
        assert_eq!(part["quoted"], false, "{parts:?}");
    }
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(run["synthesis_kind"], "model", "{synthesis}");
    assert!(
        synthesis.starts_with(
            "*Each part of the question was asked on its own, with the passages ranked for it:*"
        ),
        "{synthesis}"
    );
    for said in [
        "evicts the least recently used entry",
        "write-ahead log and flushed",
        "are retried when they fail",
    ] {
        assert!(synthesis.contains(said), "{said}: {synthesis}");
    }
    assert!(!synthesis.contains("again"), "{synthesis}");
    let notes = run["notes"].to_string();
    assert!(
        notes.contains("a question of 3 parts, each asked on its own"),
        "{notes}"
    );
}

/// A part that points back ("how do I change that") is asked with the part before it, and
/// the model may name the same sentences for both: they are printed once, listed once among the
/// claims, and the second part says where its answer is. Both parts count as answered by those
/// sentences' passages.
#[test]
fn a_part_answered_with_the_same_sentences_as_the_part_before_is_not_printed_twice() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let retried = "Outgoing requests to upstream services are retried when they fail with a connection error, a timeout, or an HTTP 502, 503 or 504 status [1].";
    let model = runtime
        .block_on(ReplayServer::start(vec![
            scripted(retried),
            scripted(retried),
        ]))
        .unwrap();
    let env = Env::with_research(Some(&model.url()), "quote_parts = false\n");
    let (run, _) = env.json(&[
        "how are outgoing requests retried, and how do I change that",
        "--sources",
        "workspace",
    ]);
    assert_eq!(model.requests().len(), 2, "one call a part");
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(
        synthesis.matches("are retried when they fail").count(),
        1,
        "{synthesis}"
    );
    assert!(
        synthesis.contains("*The sentences printed under “how are outgoing requests retried” above answer this part too.*"),
        "{synthesis}"
    );
    let parts = run["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(
        parts
            .iter()
            .all(|p| p["answered"] == true && p["quoted"] == false),
        "{parts:?}"
    );
    assert_eq!(parts[0]["sources"], parts[1]["sources"], "{parts:?}");
    let claims = run["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 1, "the sentence is one claim: {claims:?}");
}

/// `[research] quote_parts`, on by default: each part's targeted pass shows the sentences of
/// its passages likeliest to answer it, numbered, and asks the model for the numbers of those
/// that answer; the report prints the sentences named as the passages write them, cited. A
/// reply in words is read as copies, and what is not a copy — the model's own words, a
/// passage's heading — is left out, so a part answered by neither keeps nothing of the
/// model's and gets what any such part gets (here a quote, marked as one). The replies are in
/// the forms Qwen2.5-Coder-1.5B wrote (2026-12-02): numbers in parentheses; copies with the
/// passage number in front, a sentence copied with words left out.
#[test]
fn a_part_is_answered_with_the_sentences_the_model_named_as_the_passages_write_them() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![
            scripted("(1), (2)"),
            scripted("[1] Store › Write-ahead log\nThe store always keeps its writes safe in a journal before it answers [1]."),
            scripted("[1] Outgoing requests are retried when they fail with a connection error, a timeout, or an HTTP 502, 503 or 504 status"),
        ]))
        .unwrap();
    let env = Env::with_research(Some(&model.url()), "");
    let (run, _) = env.json(&[QUESTION, "--sources", "workspace"]);
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "one call a part");
    let first = requests[0].json();
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You pick the sentences of documentation that answer a question"),
        "{system}"
    );
    assert_eq!(first["temperature"], 0.0, "{first}");
    // The sentences a line, numbered, each with its section; no headings of their own, and
    // the sentence that holds the part's words first.
    let asked = user_message(&requests[0]);
    let named: Vec<&str> = asked
        .lines()
        .filter_map(|l| l.strip_prefix("(1) ").or_else(|| l.strip_prefix("(2) ")))
        .map(|l| l.split("  \u{2014} ").next().unwrap())
        .collect();
    assert_eq!(named.len(), 2, "{asked}");
    assert_eq!(
        named[0], "When the cache is full it evicts the least recently used entry first.",
        "{asked}"
    );
    assert!(!asked.lines().any(|l| l.starts_with("## ")), "{asked}");
    assert!(
        asked.ends_with("The numbers of the sentences that answer it:"),
        "{asked}"
    );

    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(run["synthesis_kind"], "model", "{synthesis}");
    assert!(
        synthesis.starts_with("*Each part of the question was asked on its own, with the passages ranked for it; the model picked the sentences of the passages that answer it, quoted as they are written:*"),
        "{synthesis}"
    );
    // Named, the passage's own sentence; the copy with words left out prints it too.
    let said = format!("{} [", named[0].trim_end_matches('.'));
    assert!(synthesis.contains(&said), "{said}: {synthesis}");
    let copied = "Outgoing requests to upstream services are retried when they fail with a connection error, a timeout, or an HTTP 502, 503 or 504 status [";
    assert!(synthesis.contains(copied), "{copied}: {synthesis}");
    // Neither the heading nor the model's own sentence is printed: that part keeps nothing of
    // the model's and gets the quote the extractive ranking finds, marked as such.
    assert!(!synthesis.contains("journal"), "{synthesis}");
    assert!(
        !synthesis.contains("Store › Write-ahead log"),
        "{synthesis}"
    );
    let parts = run["parts"].as_array().unwrap();
    let quoted: Vec<(bool, bool)> = parts
        .iter()
        .map(|p| (p["answered"] == true, p["quoted"] == true))
        .collect();
    assert_eq!(
        quoted,
        [(true, false), (true, true), (true, false)],
        "{parts:?}"
    );
    assert!(
        synthesis.contains("has no supported sentence about “how does the store use its write-ahead log”; quoted from the sources:"),
        "{synthesis}"
    );
    assert!(
        run["notes"]
            .to_string()
            .contains("its 3 best passages: 0 supported sentences kept"),
        "{}",
        run["notes"]
    );
    // Each printed sentence cites the passage that holds it: the check supports every one.
    assert_eq!(
        run["support"]["share"].as_f64(),
        Some(1.0),
        "{}",
        run["support"]
    );
}

/// A part is asked over the passages that hold enough of its words and those its own search
/// found, in turn: a section that holds one of its four words, many times and in its heading,
/// is what the search ranks second for it, and is shown beside the one that holds them all.
#[test]
fn a_part_is_asked_over_what_its_own_search_found_too() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![
            scripted("When the cache is full it evicts the least recently used entry first [1]."),
            scripted("The frobnicator quenches the zorblax with a wibble [1]."),
        ]))
        .unwrap();
    let env = Env::with_research(Some(&model.url()), "quote_parts = false\n");
    let docs = env.workspace.join("docs/zorblax");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("frobnicator.md"),
        "# Frobnicator\n\nThe frobnicator quenches the zorblax with a wibble.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("keeping.md"),
        "# Zorblax\n\nA zorblax is kept cold. Every zorblax ships in a crate; a zorblax left warm melts.\n",
    )
    .unwrap();
    let (run, _) = env.json(&[
        "how does the cache evict entries, and how is the zorblax quenched by the frobnicator and a wibble",
        "--sources",
        "workspace",
    ]);
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "one call a part");
    let asked = user_message(&requests[1]);
    assert!(
        asked.contains("The frobnicator quenches the zorblax"),
        "{asked}"
    );
    // One word of four in it: too little of the part's words, first but one in its search.
    assert!(asked.contains("A zorblax is kept cold."), "{asked}");
    assert_eq!(run["parts"][1]["answered"], true, "{run}");
}

/// A loopback stand-in for a server's `POST /v1/embeddings` (the OpenAI wire format): each
/// text's vector counts, weighed, the words of three topics — redrawing ("flicker…",
/// "redraw…", "refresh_rate", weighing three), widgets, stopping — and has a constant fourth
/// entry. (Vectors that depend on the texts: the replay server answers recorded replies in
/// order.) Returns its base URL and the texts it was asked about.
fn embeddings_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body).unwrap();
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let texts: Vec<String> = request["input"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|t| t.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            seen.lock().unwrap().extend(texts.iter().cloned());
            let vector = |text: &str| {
                let mut v = [0.0f64, 0.0, 0.0, 1.0];
                for word in text
                    .to_lowercase()
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                {
                    if word.starts_with("flicker")
                        || word.starts_with("redraw")
                        || word == "refresh_rate"
                    {
                        v[0] += 3.0;
                    } else if word.starts_with("widget") {
                        v[1] += 1.0;
                    } else if word == "stop" {
                        v[2] += 1.0;
                    }
                }
                v
            };
            let data: Vec<Value> = texts
                .iter()
                .enumerate()
                .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": vector(t)}))
                .collect();
            let answer =
                serde_json::json!({"object": "list", "data": data, "model": request["model"]})
                    .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (url, asked)
}

/// The widget docs of the meaning tests: the part "how do I stop the widget from flickering" is
/// answered by the display settings, which say "redraws", not "flickering", and hold one of its
/// words; the gallery, themes, sizes and colours hold more of them.
fn widget_docs(env: &Env) {
    let docs = env.workspace.join("docs/widgets");
    std::fs::create_dir_all(&docs).unwrap();
    for (file, text) in [
        (
            "gallery.md",
            "# Widget gallery\n\nEvery widget in the gallery can stop. Stop a widget with `stop()`; a stopped widget keeps its place.\n",
        ),
        (
            "themes.md",
            "# Widget themes\n\nA widget theme sets colours. Stop a widget theme from changing with `theme.lock()`.\n",
        ),
        (
            "sizes.md",
            "# Widget sizes\n\nA widget is as wide as its text. Stop a widget from growing with `max_width`.\n",
        ),
        (
            "colours.md",
            "# Widget colours\n\nEach widget takes the theme's colours. To stop a widget from fading, set `fade = false`.\n",
        ),
        (
            "display.md",
            "# Display\n\nThe screen redraws at `refresh_rate` times a second; set `refresh_rate = 0` in `display.toml` and a widget redraws only when it changes.\n",
        ),
    ] {
        std::fs::write(docs.join(file), text).unwrap();
    }
}

const WIDGET_QUESTION: &str =
    "how does the cache evict entries, and how do I stop the widget from flickering";
const DISPLAY_SENTENCE: &str = "The screen redraws at `refresh_rate` times a second";

/// `[research] embeddings`: each part's passages are ranked by meaning too. The display
/// settings, ranked low by the part's words, are among the passages its pick is asked over
/// once the embeddings say they are about the flickering; each passage was embedded once, not
/// once a part. Without embeddings they are not.
#[test]
fn a_part_is_ranked_by_meaning_with_an_embedding_model() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let pick = |env_research: &str, embeddings: Option<&str>| {
        let model = runtime
            .block_on(ReplayServer::start(vec![scripted("(1)"), scripted("(1)")]))
            .unwrap();
        let research = match embeddings {
            Some(url) => format!(
                "{env_research}embeddings = \"emb/test-embed\"\n[providers.emb]\nbase_url = \"{url}/v1\"\n"
            ),
            None => env_research.to_owned(),
        };
        let env = Env::with_research(Some(&model.url()), &research);
        widget_docs(&env);
        let (run, _) = env.json(&[WIDGET_QUESTION, "--sources", "workspace", "--no-verify"]);
        let requests = model.requests();
        assert_eq!(requests.len(), 2, "a pick a part: {run}");
        (user_message(&requests[1]), run)
    };
    let (words_alone, _) = pick("", None);
    assert!(!words_alone.contains(DISPLAY_SENTENCE), "{words_alone}");

    let (url, asked) = embeddings_server();
    let (with_meaning, run) = pick("", Some(&url));
    assert!(with_meaning.contains(DISPLAY_SENTENCE), "{with_meaning}");
    let asked = asked.lock().unwrap().clone();
    let display = asked
        .iter()
        .filter(|t| t.starts_with("Display\n") && t.contains("refresh_rate = 0"))
        .count();
    assert_eq!(display, 1, "the passage embedded once: {asked:?}");
    assert!(
        asked
            .iter()
            .any(|t| t == "how do I stop the widget from flickering"),
        "{asked:?}"
    );
    assert!(!run["notes"].to_string().contains("words alone"), "{run}");
}

/// With an embedding model, the sentences a part's pick lists are in the order of the part's
/// words fused with their nearness to the part: the display setting, which says "redraws",
/// not "flickering", is listed second, above sentences that hold more of the part's words; and
/// the sentences the model picked are taken nearest the part first: it names two, the
/// display setting second, and the display setting is the one printed for the part (the first
/// taken decides the passage the others must be of). In the model's order the third listed
/// would be printed, with the first, of the same passage.
#[test]
fn the_pick_nearest_the_part_is_taken_first() {
    let pick = WidgetPick::ask("(3) (2)");
    assert!(
        pick.sentence(2).starts_with(DISPLAY_SENTENCE),
        "the display setting listed second, above sentences that hold more of the part's words: {}",
        pick.listed
    );
    let third = pick.sentence(3);
    assert!(pick.part().contains(DISPLAY_SENTENCE), "{}", pick.run);
    assert!(
        !pick.part().contains(third.trim_end_matches('.')),
        "{}",
        pick.run
    );
    // The listed sentences were embedded as sentences, each once for the listing (a passage is
    // embedded with its heading first), and the picks again for their order.
    assert!(
        pick.asked.iter().any(|t| t.starts_with(DISPLAY_SENTENCE)),
        "{:?}",
        pick.asked
    );
    assert!(pick.asked.iter().any(|t| t == &third), "{:?}", pick.asked);
}

/// A model that names most of the list says little about which sentence answers: its picks are
/// taken in its own order (the list's), not nearest the part. Named "(3) (1) (2) …", the third
/// listed is printed with the first, of the same passage, and the display setting is not.
#[test]
fn a_pick_naming_most_of_the_list_keeps_its_order() {
    let pick = WidgetPick::ask("(3) (1) (2) (4) (5) (6) (7) (8)");
    let third = pick.sentence(3);
    assert!(
        pick.part().contains(third.trim_end_matches('.')),
        "{}",
        pick.run
    );
    assert!(!pick.part().contains(DISPLAY_SENTENCE), "{}", pick.run);
}

/// The widget question asked with an embedding model, its part's pick answered `reply`.
struct WidgetPick {
    /// The research record.
    run: serde_json::Value,
    /// The pick's prompt: the sentences listed.
    listed: String,
    /// The texts the embedding model was asked for.
    asked: Vec<String>,
}

impl WidgetPick {
    fn ask(reply: &str) -> WidgetPick {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let (url, asked) = embeddings_server();
        let model = runtime
            .block_on(ReplayServer::start(vec![scripted("(1)"), scripted(reply)]))
            .unwrap();
        let env = Env::with_research(
            Some(&model.url()),
            &format!("embeddings = \"emb/test-embed\"\n[providers.emb]\nbase_url = \"{url}/v1\"\n"),
        );
        widget_docs(&env);
        let (run, _) = env.json(&[WIDGET_QUESTION, "--sources", "workspace", "--no-verify"]);
        let requests = model.requests();
        assert_eq!(requests.len(), 2, "a pick a part: {run}");
        let listed = user_message(&requests[1]);
        let asked = asked.lock().unwrap().clone();
        WidgetPick { run, listed, asked }
    }

    /// The `k`th sentence listed, without its section.
    fn sentence(&self, k: usize) -> String {
        self.listed
            .lines()
            .find_map(|l| l.strip_prefix(&format!("({k}) ")))
            .expect("a numbered list")
            .split("  \u{2014} ")
            .next()
            .unwrap()
            .to_owned()
    }

    /// What the report printed under the part about flickering.
    fn part(&self) -> &str {
        self.run["synthesis"]
            .as_str()
            .unwrap()
            .split("flickering")
            .nth(1)
            .expect("the part's heading")
    }
}

/// With nothing configured, the embedding model inside patchwise ranks the parts' passages as
/// soon as `patchwise model pull` has put it in the data dir: its own host is started, embeds
/// the run's passages and the parts, and the notes say nothing of words alone. A tiny encoder
/// with random weights stands in for all-MiniLM-L6-v2 under the catalogue's file name: this
/// checks the way there, not the order it gives.
#[test]
fn the_built_in_encoder_ranks_by_meaning_once_it_is_downloaded() {
    if !patchwise::model::embedded::AVAILABLE {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![scripted("(1)"), scripted("(1)")]))
        .unwrap();
    let env = Env::with_research(Some(&model.url()), "");
    widget_docs(&env);
    let data = env.workspace.join("data/patchwise");
    let encoder = patchwise::model::embedded::catalog::find("all-minilm-l6-v2").unwrap();
    std::fs::create_dir_all(data.join("models")).unwrap();
    support::gguf::write_tiny_encoder(&data.join("models").join(encoder.file));
    let (run, _) = env.json(&[WIDGET_QUESTION, "--sources", "workspace", "--no-verify"]);
    assert_eq!(model.requests().len(), 2, "a pick a part: {run}");
    assert!(!run["notes"].to_string().contains("words alone"), "{run}");
    let announced: Vec<Value> = std::fs::read_dir(data.join("hosts"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    assert_eq!(announced.len(), 1, "one host, the encoder's: {announced:?}");
    let host = &announced[0];
    assert!(
        host["model"].as_str().unwrap().ends_with(encoder.file),
        "{host}"
    );
    let status = http_get(&support::host_authority(host), "/status");
    let _ = Command::new("kill").arg(host["pid"].to_string()).status();
    // The passages found (at least one) and each of the two parts.
    assert!(status["texts_embedded"].as_u64().unwrap() >= 3, "{status}");
}

/// A GET over a fresh connection, its body as JSON.
fn http_get(authority: &str, path: &str) -> Value {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (_, body) = raw.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {raw}"))
}

/// An embedding model that fails leaves the words' order, and the notes say why, in the
/// server's words (Ollama's answer for a model it does not have).
#[test]
fn a_failing_embedding_model_leaves_the_words_order() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![scripted("(1)"), scripted("(1)")]))
        .unwrap();
    let embedder = runtime
        .block_on(ReplayServer::start(vec![Reply::json(
            404,
            &serde_json::json!({"error": {"message": "model \"test-embed\" not found, try pulling it first", "type": "api_error"}}),
        )]))
        .unwrap();
    let env = Env::with_research(
        Some(&model.url()),
        &format!(
            "embeddings = \"emb/test-embed\"\n[providers.emb]\nbase_url = \"{}/v1\"\n",
            embedder.url()
        ),
    );
    widget_docs(&env);
    let (run, _) = env.json(&[WIDGET_QUESTION, "--sources", "workspace", "--no-verify"]);
    assert_eq!(model.requests().len(), 2, "{run}");
    let notes = run["notes"].to_string();
    assert!(
        notes.contains("the parts were ranked by their words alone (emb/test-embed failed:")
            && notes.contains("404 Not Found")
            && notes.contains("not found, try pulling it first"),
        "{notes}"
    );
    assert!(!user_message(&model.requests()[1]).contains(DISPLAY_SENTENCE));
    let asked = &embedder.requests()[0];
    assert!(asked.path.ends_with("/v1/embeddings"), "{asked:?}");
    assert_eq!(asked.json()["model"], "test-embed", "{asked:?}");
}

/// A part its own pass left unanswered, with no sentence to quote, ends with a pointer that
/// names the passages it was asked over first (a small model may have missed the answer
/// there), then the passages about it the model was not shown.
#[test]
fn an_unanswered_part_points_to_the_passages_it_was_asked_over_then_to_unread_ones() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![
            scripted("When the cache is full it evicts the least recently used entry first [1]."),
            scripted("I do not know."),
        ]))
        .unwrap();
    let env = Env::with_research(Some(&model.url()), "quote_parts = false\n");
    // Five passages hold the part's words, in headings and settings only: no sentence to quote.
    let docs = env.workspace.join("docs/flux");
    std::fs::create_dir_all(&docs).unwrap();
    for i in 0..5 {
        std::fs::write(
            docs.join(format!("flux-{i}.md")),
            format!(
                "# Flux capacitor tuning, profile {i}

```toml
[flux_capacitor]
tuning = {i}
```
"
            ),
        )
        .unwrap();
    }
    let (run, _) = env.json(&[
        "how does the cache evict entries, and how do I tune the flux capacitor",
        "--sources",
        "workspace",
    ]);
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "one call a part");
    let asked = user_message(&requests[1]);
    let synthesis = run["synthesis"].as_str().unwrap();
    let line = synthesis
        .lines()
        .find(|l| l.starts_with("Not answered: \u{201c}how do I tune the flux capacitor\u{201d}"))
        .unwrap_or_else(|| panic!("{synthesis}"));
    let (again, unread) = line
        .split_once("it was asked over, to read again: ")
        .and_then(|(_, rest)| rest.split_once("; the passage"))
        .unwrap_or_else(|| panic!("{line}"));
    let unread = unread.split_once(": ").map_or("", |(_, n)| n);
    let numbers = |s: &str| -> Vec<usize> {
        s.split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect()
    };
    let sources = run["sources"].as_array().unwrap();
    let title = |n: usize| {
        sources
            .iter()
            .find(|s| s["n"] == n)
            .and_then(|s| s["title"].as_str())
            .unwrap_or_else(|| panic!("[{n}] in {sources:?}"))
            .to_owned()
    };
    let (again, unread) = (numbers(again), numbers(unread));
    assert!(!again.is_empty() && !unread.is_empty(), "{line}");
    // The first are the passages of the part's prompt; the others are not among them.
    for n in &again {
        let path = title(*n);
        let path = path.split(':').next().unwrap();
        assert!(asked.contains(path), "[{n}] {path} not in {asked}");
    }
    for n in &unread {
        assert!(!again.contains(n), "{line}");
        assert!(title(*n).starts_with("docs/flux/"), "{line}");
    }
}

/// A part that points back at the part before it ("how many times does it try them") is
/// asked with that part: asked alone over Ruff's docs, "where should those comments go" got
/// the Neovim setup section, and the model said the comments go "in the section titled
/// 'Neovim 0.11+'" (2026-12-01).
#[test]
fn a_part_that_points_back_is_asked_again_with_the_part_before_it() {
    let first = scripted(
        "When the cache is full it evicts the least recently used entry first. Every write is first appended to the write-ahead log and flushed before the write is acknowledged.",
    );
    let again = || scripted("I do not know.");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![first, again(), again()]))
        .unwrap();
    let env = Env::new(Some(&model.url()));
    let (run, _) = env.json(&[
        "how are requests retried, and how many times does it try them",
        "--sources",
        "workspace",
        "--no-verify",
    ]);
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "one synthesis, a targeted call a part");
    let asked = |i: usize| user_message(&requests[i]);
    assert!(
        asked(1).starts_with("Question: how are requests retried\n"),
        "{}",
        asked(1)
    );
    assert!(
        asked(2).starts_with(
            "Question: how are requests retried \u{2014} how many times does it try them\n"
        ),
        "{}",
        asked(2)
    );
    assert!(asked(2).contains("docs/retry.md"), "{}", asked(2));
    let notes = run["notes"].to_string();
    assert!(
        notes.contains("(with the part before it, which it points back at)"),
        "{notes}"
    );
}

/// The targeted pass: the synthesis left "how are requests retried" without a supported
/// sentence, so the part is asked again, alone, over its own best passages, in one short call;
/// its supported sentence answers the part in the model's words, not in quotes.
#[test]
fn a_part_the_synthesis_left_unanswered_is_asked_again_with_its_own_passages() {
    let again = scripted(
        "Outgoing requests to upstream services are retried when they fail with a connection error, a timeout, or an HTTP 502, 503 or 504 status [1].",
    );
    let (run, requests) = asked_again_about_retries(again);
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(run["synthesis_kind"], "model", "{synthesis}");
    assert_eq!(requests.len(), 2, "one synthesis, one targeted call");
    let asked = user_message(&requests[1]);
    assert!(
        asked.starts_with("Question: how are requests retried\n"),
        "{asked}"
    );
    let shown = asked.lines().filter(|l| l.starts_with('[')).count();
    assert!((1..=3).contains(&shown), "{asked}");
    assert!(asked.contains("docs/retry.md"), "{asked}");
    assert!(
        synthesis.contains("*Asked again with the passages ranked for the part the first answer left without a supported sentence:*"),
        "{synthesis}"
    );
    assert!(
        synthesis.contains("are retried when they fail with a connection error"),
        "{synthesis}"
    );
    assert!(
        !synthesis.contains("quoted from the sources"),
        "{synthesis}"
    );
    let parts = run["parts"].as_array().unwrap();
    assert_eq!(parts[2]["answered"], true, "{parts:?}");
    assert_eq!(parts[2]["quoted"], false, "{parts:?}");
    let notes: Vec<&str> = run["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n
                .contains("asked the model again about \u{201c}how are requests retried\u{201d}")),
        "{notes:?}"
    );
}

/// A question of several parts whose model answer stands for none of them — no passage
/// supports it, or it is the prompt's example copied back — has each part asked again over
/// its own passages before the extractive synthesis may stand in: the parts the targeted pass
/// answers are the model's answers, the part it does not answer gets quotes.
#[test]
fn an_answer_that_answers_no_part_has_each_part_asked_again() {
    let unsupported = scripted(
        "The gateway is a well designed system. It handles many concerns. Caching, storage and retries all work together to make it robust and fast for users.",
    );
    let example = scripted(
        "The oven is preheated to 220 degrees before the first batch [1]. Each loaf rests for ten minutes after baking [2][3]. The passages do not say how long the dough rises.",
    );
    let cache =
        scripted("When the cache is full it evicts the least recently used entry first [1].");
    let wal = scripted("I cannot tell from these passages.");
    let retry = scripted(
        "Outgoing requests to upstream services are retried when they fail with a connection error, a timeout, or an HTTP 502, 503 or 504 status [1].",
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (first, why) in [
        (
            unsupported,
            "the model's answer answers no part of the question (no passage supports any of the",
        ),
        (
            example,
            "repeated the prompt's example instead of answering the question",
        ),
    ] {
        let model = runtime
            .block_on(ReplayServer::start(vec![
                first,
                cache.clone(),
                wal.clone(),
                retry.clone(),
            ]))
            .unwrap();
        let env = Env::new(Some(&model.url()));
        let (run, _) = env.json(&[QUESTION, "--sources", "workspace", "--no-verify"]);
        let synthesis = run["synthesis"].as_str().unwrap();
        assert_eq!(run["synthesis_kind"], "model", "{synthesis}");
        let asked: Vec<String> = model.requests()[1..]
            .iter()
            .map(|r| {
                r.json()["messages"][1]["content"]
                    .as_str()
                    .unwrap()
                    .lines()
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            asked,
            [
                "Question: how does the cache evict entries",
                "Question: how does the store use its write-ahead log",
                "Question: how are requests retried"
            ],
            "one targeted call a part, in order"
        );
        assert!(!synthesis.contains("Extractive synthesis"), "{synthesis}");
        assert!(
            synthesis.starts_with("*The model's first answer had no supported sentence about any part of the question; each part was asked again with the passages ranked for it:*\n\n**how does the cache evict entries**"),
            "{synthesis}"
        );
        for said in [
            "evicts the least recently used entry first",
            "are retried when they fail with a connection error",
        ] {
            assert!(synthesis.contains(said), "{said}: {synthesis}");
        }
        assert!(!synthesis.contains("well designed"), "{synthesis}");
        assert!(!synthesis.contains("oven"), "{synthesis}");
        let parts = run["parts"].as_array().unwrap();
        let how: Vec<(bool, bool)> = parts
            .iter()
            .map(|p| (p["answered"] == true, p["quoted"] == true))
            .collect();
        assert_eq!(
            how,
            [(true, false), (true, true), (true, false)],
            "the write-ahead log part, which the targeted pass left, is quoted: {parts:?}"
        );
        let notes = run["notes"].to_string();
        assert!(notes.contains(why), "{notes}");
        assert!(
            notes.contains(", 2 of 3 with a supported sentence kept"),
            "{notes}"
        );
        assert_eq!(run["status"], "complete", "{notes}");
        let report = std::fs::read_to_string(run["report"].as_str().unwrap()).unwrap();
        assert!(report.contains("test/scripted"), "{report}");
        assert!(!report.contains("(not kept)"), "{report}");
    }
}

/// The targeted pass's sentences get the model's check too: a sentence its passage holds the
/// words of without saying it is as likely there as in the synthesis. Rejected, it is not
/// kept and the report says the pass found nothing the passages support; accepted, it is kept
/// with the check's verdict.
#[test]
fn the_targeted_pass_is_checked_by_the_model_too() {
    // The synthesis: two sentences their passages hold word for word (supported without
    // asking; the check asks once, about the cache sentence's next-best passage), nothing
    // about retries.
    let first = scripted(
        "When the cache is full it evicts the least recently used entry first. Every write is first appended to the write-ahead log (`wal/000001.log`) and flushed with `fsync` before the write is acknowledged.",
    );
    let again = scripted(
        "A request that fails with a connection error or a timeout is retried by the gateway [2].",
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for verdict in ["NO", "YES"] {
        let model = runtime
            .block_on(ReplayServer::start(vec![
                first.clone(),
                scripted("YES"),
                again.clone(),
                scripted(verdict),
            ]))
            .unwrap();
        let env = Env::new(Some(&model.url()));
        let (run, stderr) = env.json(&[QUESTION, "--sources", "workspace", "--verify"]);
        let synthesis = run["synthesis"].as_str().unwrap();
        assert_eq!(run["synthesis_kind"], "model", "{stderr}");
        let requests = model.requests();
        let asked: Vec<String> = requests
            .iter()
            .map(|r| {
                r.json()["messages"].as_array().unwrap().last().unwrap()["content"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert!(
            asked[2].starts_with("Question: how are requests retried\n"),
            "the third call is the targeted pass: {asked:?}"
        );
        let checked: Vec<(String, String)> = requests[3..]
            .iter()
            .map(|r| judge_pair(&r.json()))
            .collect();
        assert!(
            checked.iter().any(
                |(statement, quote)| statement.starts_with("A request that fails")
                    && quote.starts_with("docs/retry.md")
            ),
            "{checked:?}"
        );
        let kept = synthesis.contains("is retried by the gateway");
        let notes = run["notes"].to_string();
        if verdict == "NO" {
            assert!(!kept, "{synthesis}");
            assert!(
                notes.contains("asked again about \u{201c}how are requests retried\u{201d}: the model's check found 1 citation unrelated"),
                "{notes}"
            );
        } else {
            assert!(kept, "{synthesis}");
            let claim = run["claims"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| {
                    c["text"]
                        .as_str()
                        .unwrap()
                        .contains("is retried by the gateway")
                })
                .expect("the targeted sentence is a claim");
            assert_eq!(claim["checks"][0]["model_verdict"], "supports", "{claim}");
            assert_eq!(run["parts"][2]["answered"], true, "{}", run["parts"]);
            assert_eq!(run["parts"][2]["quoted"], false, "{}", run["parts"]);
        }
    }
}

/// When the targeted pass finds nothing either, the report says what was searched before it
/// says nothing answers the part.
#[test]
fn a_part_nothing_answers_says_what_was_searched() {
    let answer = scripted(
        "When the cache is full it evicts the least recently used entry first. Every write is first appended to the write-ahead log and flushed before the write is acknowledged. Only then is the in-memory table updated.",
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ReplayServer::start(vec![answer.clone(), answer]))
        .unwrap();
    let env = Env::new(Some(&model.url()));
    let question = "how does the cache evict entries, how does the store use its write-ahead log, and how do zebras migrate across the savanna";
    let (run, _) = env.json(&[question, "--sources", "workspace", "--no-verify"]);
    let synthesis = run["synthesis"].as_str().unwrap();
    assert!(
        synthesis.contains("Nothing in the passages found answers \u{201c}how do zebras migrate across the savanna\u{201d} (0 of the"),
        "{synthesis}"
    );
    assert!(
        synthesis.contains("hold enough of its words"),
        "{synthesis}"
    );
}

/// Each part of the question is searched on its own and the prompt's passages are shared
/// between the parts: the passage that answers the second part ranks, for the question as a
/// whole, below the first part's eleventh (a dozen pages hold the first part's words and the
/// words the parts share), and is still in front of the model, near the top.
#[test]
fn every_part_has_its_passages_in_the_prompt() {
    let reply = scripted("The `--type` flag restricts a search to files of one type [1].");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime.block_on(ReplayServer::start(vec![reply])).unwrap();
    let env = Env::new(Some(&model.url()));
    let docs = env.workspace.join("docs/search");
    std::fs::create_dir_all(&docs).unwrap();
    for i in 0..14 {
        std::fs::write(
            docs.join(format!("types-{i:02}.md")),
            format!(
                "# Searching files of type {i}\n\nTo search only files of one type, pass `--type lang{i}`: the search then reads files of type lang{i} only, and the search skips every other file type. A search of files by type is the quickest search of files.\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        docs.join("hidden.md"),
        "# Dotfiles\n\nThe `--hidden` flag includes dotfiles; `-uu` also includes what ignore rules exclude.\n",
    )
    .unwrap();
    let question = "how do I search only files of one type, and which flags include hidden dotfiles in a search of files";
    let (run, _) = env.json(&[question, "--sources", "workspace", "--no-verify"]);
    assert_eq!(run["synthesis_kind"], "model", "{run}");
    let prompt = user_message(&model.requests()[0]);
    let n = number_of(&prompt, "docs/search/hidden.md", "Dotfiles");
    assert!(n <= 2, "the second part's passage is [{n}]:\n{prompt}");
}

/// Passage `n` of a synthesis prompt: its header line (`[n] title`) and its lines.
fn passage_in(prompt: &str, n: u32) -> (String, Vec<String>) {
    let header = format!("[{n}] ");
    let next = format!("[{}] ", n + 1);
    let mut lines = prompt.lines().skip_while(|l| !l.starts_with(&header));
    let head = lines
        .next()
        .expect("the passage is in the prompt")
        .to_owned();
    let body = lines
        .take_while(|l| !l.starts_with(&next) && !l.starts_with("Question: "))
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    (head, body)
}

#[test]
fn a_copy_of_the_passages_after_the_answer_is_left_out() {
    // Qwen2.5-Coder-1.5B, on mdBook's guide, answered, then copied passage [1] under its
    // header and went on copying for 4,700 characters; every copied line became a sentence.
    let (_, _, prompt, _) = run_with(scripted("The cache evicts entries [1]."));
    let cache = number_of(&prompt, "docs/cache.md", "Eviction");
    let (header, body) = passage_in(&prompt, cache);
    let answer = format!(
        "When the cache is full it evicts the least recently used entry first [{cache}].\n\n"
    );
    let copy = format!("{header}\n{}\n", body[0]);
    let rest = format!("{}\n", body[1..].join("\n"));
    let (run, _, _, report) = run_with(scripted_chunks(&[&answer, &copy, &rest]));
    let synthesis = run["synthesis"].as_str().unwrap();
    assert_eq!(run["synthesis_kind"], "model", "{synthesis}");
    let title = header.split_once("] ").unwrap().1;
    assert!(!synthesis.contains(title), "{synthesis}");
    // None of the passage's other sentences is in the answer, where the old reading kept them
    // as sentences of the model's, attributed to the passage they were copied from.
    let copied = body.join(" ");
    let others: Vec<&str> = copied
        .split(". ")
        .map(|s| s.trim().trim_end_matches('.'))
        .filter(|s| s.split_whitespace().count() >= 5 && !s.contains("evicts the least"))
        .collect();
    assert!(!others.is_empty(), "{copied}");
    for sentence in others {
        assert!(!synthesis.contains(sentence), "{sentence} in {synthesis}");
    }
    assert!(
        synthesis.contains("evicts the least recently used entry"),
        "{synthesis}"
    );
    assert!(
        run["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("began copying the passages")),
        "{}",
        run["notes"]
    );
    assert!(report.contains("began copying the passages"), "{report}");
}

/// A judge call's messages as the OpenAI wire writes them (role and content).
fn judge_messages(messages: &[patchwise::model::Message]) -> Value {
    use patchwise::model::Message;
    messages
        .iter()
        .map(|m| {
            let (role, content) = match m {
                Message::System { content } => ("system", content),
                Message::User { content } => ("user", content),
                Message::Assistant { content, .. } => ("assistant", content),
                other => panic!("{other:?}"),
            };
            serde_json::json!({"role": role, "content": content})
        })
        .collect()
}

/// The pair a judge request asks about: (statement, quote), from its last message.
fn judge_pair(request: &Value) -> (String, String) {
    let messages = request["messages"].as_array().unwrap();
    let last = messages.last().unwrap()["content"].as_str().unwrap();
    let rest = last.strip_prefix("QUOTE: ").expect(last);
    let (quote, rest) = rest.split_once("\nSTATEMENT: ").expect(last);
    let (statement, _) = rest.split_once('\n').expect(last);
    (statement.to_owned(), quote.to_owned())
}

#[test]
fn the_model_judges_each_citation_when_asked() {
    // First learn the numbers the prompt gives the passages (the index is deterministic).
    let (cache, wal, retry) = {
        let (_, _, prompt, _) = run_with(scripted("The cache evicts entries [1]."));
        (
            number_of(&prompt, "docs/cache.md", "Eviction"),
            number_of(&prompt, "docs/store.md", "Write-ahead log"),
            number_of(&prompt, "docs/retry.md", "Backoff"),
        )
    };
    // The cache sentence is its passage's word for word: supported without asking. The two
    // others say their passages in other words.
    let answer = format!(
        "When the cache is full it evicts the least recently used entry [{cache}]. Each write is appended to the write-ahead log and flushed before the write is acknowledged [{wal}]. Retries wait with exponential backoff and full jitter [{retry}]."
    );
    // A check whose first call fails (a 400: not retried) ends there, and the overlap stands.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let refused = Reply::parse(
        "HTTP/1.1 400 Bad Request\ncontent-type: application/json\n\n{\"error\": {\"message\": \"refused\"}}",
    );
    let failing = runtime
        .block_on(ReplayServer::start(vec![scripted(&answer), refused]))
        .unwrap();
    let env = Env::new(Some(&failing.url()));
    let (first, _) = env.json(&[QUESTION, "--sources", "workspace", "--verify"]);
    assert_eq!(
        failing.requests().len(),
        2,
        "one call, then the check stops"
    );
    assert!(
        first["notes"]
            .to_string()
            .contains("the model's check of the citations gave no verdict (the model failed"),
        "{}",
        first["notes"]
    );
    assert_eq!(first["support"]["method"], "overlap");
    // The pairs the check asks about, one call each (the replay server repeats its last
    // reply: an answer that is neither YES nor NO, no verdict).
    let learn = runtime
        .block_on(ReplayServer::start(vec![
            scripted(&answer),
            scripted("The quote says so."),
        ]))
        .unwrap();
    let env = Env::new(Some(&learn.url()));
    let (first, _) = env.json(&[QUESTION, "--sources", "workspace", "--verify"]);
    let pairs: Vec<(String, String)> = learn.requests()[1..]
        .iter()
        .map(|r| judge_pair(&r.json()))
        .collect();
    assert!(pairs.len() >= 2, "{pairs:?}");
    assert!(
        !pairs
            .iter()
            .any(|(s, q)| s.starts_with("When the cache") && q.starts_with("docs/cache.md")),
        "a verbatim pair is not asked about: {pairs:?}"
    );
    // Each call: the instructions, the two examples, the pair; one word of answer.
    let request = learn.requests()[1].json();
    assert_eq!(
        request["messages"].as_array().unwrap().len(),
        6,
        "{request}"
    );
    assert_eq!(
        request["messages"][0]["content"],
        patchwise::research::judge::SYSTEM
    );
    assert!(
        request["max_tokens"].as_u64().unwrap_or(0) <= 3,
        "{request}"
    );
    assert!(
        first["notes"].to_string().contains(&format!(
            "the model's check gave no verdict for {} of {} citations; the overlap measure stands",
            pairs.len(),
            pairs.len() + 1
        )),
        "{}",
        first["notes"]
    );
    // Now NO for the retry sentence wherever it is asked about, YES for the rest.
    let mut replies = vec![scripted(&answer)];
    for (statement, _) in &pairs {
        replies.push(scripted(if statement.starts_with("Retries") {
            "NO"
        } else {
            "YES"
        }));
    }
    let model = runtime.block_on(ReplayServer::start(replies)).unwrap();
    let env = Env::new(Some(&model.url()));
    let (run, stderr) = env.json(&[QUESTION, "--sources", "workspace", "--verify"]);
    assert_eq!(run["synthesis_kind"], "model", "{stderr}");
    // The synthesis, a call per pair, and the targeted pass for the part whose sentence the
    // check rejected (answered "YES", nothing a passage supports).
    assert_eq!(model.requests().len(), 1 + pairs.len() + 1);
    let synthesis = run["synthesis"].as_str().unwrap();
    assert!(
        !synthesis.starts_with("Retries") && !synthesis.contains(". Retries use"),
        "the rejected sentence is dropped: {synthesis}"
    );
    let verdicts: Vec<(Value, Value)> = run["claims"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["checks"][0]["model_verdict"] != Value::Null)
        .map(|c| {
            let check = &c["checks"][0];
            (check["model_verdict"].clone(), check["verdict"].clone())
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("supports".into(), "supported".into()),
            ("supports".into(), "supported".into()),
        ]
    );
    assert_eq!(
        run["sentences"]["dropped_by_judge"], 1,
        "{}",
        run["sentences"]
    );
    let notes = run["notes"].to_string();
    assert!(notes.contains("unrelated to or contradicting"), "{notes}");
    // The part the rejected sentence answered gets quoted sentences instead.
    assert_eq!(run["parts"][2]["quoted"], true, "{}", run["parts"]);
    // By default (`[research] verify = false`, or `--no-verify`): no second call.
    let once = runtime
        .block_on(ReplayServer::start(vec![scripted(&answer)]))
        .unwrap();
    let env = Env::new(Some(&once.url()));
    let (run, _) = env.json(&[QUESTION, "--sources", "workspace"]);
    assert_eq!(once.requests().len(), 1);
    assert_eq!(run["support"]["method"], "overlap");
}

/// The recorded answers of Qwen2.5-Coder-1.5B to the questions of
/// `scripts/bench/research-questions` (recorded with `--record`; questions 7 and 14, 370 kB
/// each of one paragraph repeated without a citation, are left out), each beside the request it
/// answered.
fn recorded() -> Vec<(String, String, Vec<patchwise::store::SourceRecord>)> {
    let dir = support::fixture("model/qwen2.5-coder-1.5b/research");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".http").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let answer =
                streamed_text(&std::fs::read_to_string(dir.join(format!("{name}.http"))).unwrap());
            let request: Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join(format!("{name}.request.json"))).unwrap(),
            )
            .unwrap();
            let prompt = request["messages"][1]["content"].as_str().unwrap();
            (name, answer, passages_of(prompt))
        })
        .collect()
}

/// The text of a recorded OpenAI-style event stream.
fn streamed_text(http: &str) -> String {
    http.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// A workspace passage as the prompt shows it: `title` (`path:lines — headings`) and its text.
fn workspace_source(title: &str, snippet: &str) -> patchwise::store::SourceRecord {
    patchwise::store::SourceRecord {
        key: format!("file:{}", title.split(':').next().unwrap()),
        snippet: snippet.to_owned(),
        title: title.to_owned(),
        venue_type: "workspace".into(),
        ..Default::default()
    }
}

/// The numbered passages of a synthesis prompt (`[n] title` then the passage, up to the next
/// number or the closing question), as the sources the model was shown.
fn passages_of(prompt: &str) -> Vec<patchwise::store::SourceRecord> {
    let body = prompt.split_once("Passages:\n\n").unwrap().1;
    let mut out: Vec<patchwise::store::SourceRecord> = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for line in body.lines() {
        let next = format!("[{}] ", out.len() + 1 + usize::from(current.is_some()));
        let end = line.starts_with("Question: ");
        if line.starts_with(&next) || end {
            if let Some((title, lines)) = current.take() {
                out.push(workspace_source(&title, lines.join("\n").trim()));
            }
            if end {
                break;
            }
            current = Some((line[next.len()..].to_owned(), Vec::new()));
        } else if let Some((_, lines)) = &mut current {
            lines.push(line);
        }
    }
    out
}

#[test]
fn recorded_answers_keep_only_citations_their_passages_support() {
    use patchwise::research::support as check;
    use patchwise::research::synthesis;
    let mut snapshot = String::new();
    let (mut kept, mut citations, mut supported, mut raw_citations, mut raw_supported) =
        (0, 0, 0, 0, 0);
    for (name, answer, shown) in recorded() {
        assert!(shown.len() >= 8, "{name}: {} passages", shown.len());
        let v = synthesis::validate_citations(&answer, &shown);
        if let Some(raw) = &v.raw {
            raw_citations += raw.citations;
            raw_supported += raw.supported;
        }
        let fallback = v.fallback_reason();
        snapshot.push_str(&format!(
            "## {name}\n\n{}: cited {} (re-cited {}, from the paragraph {}), attributed {}, dropped {} uncited and {} unsupported, {} repeated; the model's own citations {}\n\n",
            match &fallback {
                Some(reason) => format!("falls back ({reason})"),
                None => "kept".to_owned(),
            },
            v.cited,
            v.recited,
            v.from_paragraph,
            v.attributed,
            v.dropped,
            v.unsupported,
            v.repeated,
            v.raw
                .as_ref()
                .map_or("none".to_owned(), |r| format!("{}/{} supported", r.supported, r.citations)),
        ));
        if fallback.is_some() {
            continue;
        }
        kept += 1;
        snapshot.push_str(&format!("{}\n\n", v.text));
        for claim in &v.claims {
            assert!(!claim.sources.is_empty(), "{name}: {claim:?}");
            for n in &claim.sources {
                let source = &shown[v.order[*n as usize - 1] as usize - 1];
                let stems = check::passage_stems(&source.title, &source.snippet);
                let (overlap, verdict) = check::verdict(&claim.text, &stems);
                citations += 1;
                if verdict == "supported" {
                    supported += 1;
                }
                // The report presents only what its passages support.
                assert_eq!(
                    verdict, "supported",
                    "{name}: {claim:?} against {}",
                    source.title
                );
                snapshot.push_str(&format!("- [{n}] {verdict} ({overlap}) {}\n", source.title));
            }
        }
        snapshot.push('\n');
    }
    snapshot.push_str(&format!(
        "kept {kept} of 18; citations supported in kept syntheses {supported}/{citations}; the model's own citations supported {raw_supported}/{raw_citations}\n"
    ));
    support::expect::expect_path(
        &support::fixture("model/qwen2.5-coder-1.5b/research/repaired.expected"),
        &snapshot,
    );
    // What the repair is for: the model's own citations seldom hold, the report's all do, and
    // most syntheses are kept rather than replaced by the extractive one.
    assert!(
        raw_supported * 4 < raw_citations,
        "{raw_supported}/{raw_citations}"
    );
    assert!(kept >= 10, "{kept}");
}

/// The text of a recorded answer: an OpenAI-style event stream, or one JSON completion.
fn answer_text(http: &str) -> String {
    let streamed = streamed_text(http);
    if !streamed.is_empty() {
        return streamed;
    }
    let body = http.split_once("\n\n").map_or("", |(_, b)| b);
    serde_json::from_str::<Value>(body.trim())
        .ok()
        .and_then(|v| {
            v["choices"][0]["message"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// Recorded answers of Qwen2.5-Coder-1.5B on two corpora patchwise did not write
/// (HTTPX's docs and mdBook's guide, `scripts/bench/research-corpora`), each with the check of
/// its citations it answered, replayed through the check: the overlap check, the model's
/// verdicts, the keep-or-fall-back decision and the parts of the question. Many of these
/// answers hold no `[n]` at all. The snapshot ends with what each run kept.
#[test]
fn recorded_answers_on_corpora_patchwise_did_not_write_are_kept_when_they_hold_up() {
    use patchwise::research::{judge, parts, support as check, synthesis};
    use patchwise::store::SentenceCounts;
    let mut snapshot = String::new();
    let (mut total, mut kept, mut without_markers, mut answered, mut all_parts) = (0, 0, 0, 0, 0);
    // (answers, kept) per live run: `qNN`, `run2-qNN`, `run3-PROMPT-qNN` (the shipped prompt
    // `base` beside the alternatives `fewshot` and `fewfirst`, on the same questions),
    // `run5-qNN` (the closing measurement) and `run6-qNN` (the same-session measurement against
    // the binary of the issue's day, at 01e4286).
    let mut runs: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    // The model's check as it is now, one call per pair, recorded on the 11 reports whose
    // pairs were read by hand (`scripts/bench/research-judge --export pairshot:FILE`).
    let judged_calls: Vec<Value> = std::fs::read_to_string(support::fixture(
        "model/qwen2.5-coder-1.5b/research/judge-pairs.jsonl",
    ))
    .unwrap()
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    let mut replayed = 0;
    let mut copies = 0;
    let mut loops = 0;
    for corpus in ["httpx", "mdbook", "bat", "click"] {
        let dir = support::fixture(&format!("model/qwen2.5-coder-1.5b/research/{corpus}"));
        // A corpus whose answers were not recorded yet has no folder.
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                let stem = name.strip_suffix(".http")?;
                (!stem.ends_with(".judge")).then(|| stem.to_owned())
            })
            .collect();
        names.sort();
        for name in names {
            let read = |file: String| std::fs::read_to_string(dir.join(file)).unwrap();
            let answer = answer_text(&read(format!("{name}.http")));
            let request: Value =
                serde_json::from_str(&read(format!("{name}.request.json"))).unwrap();
            // The question and its passages are the last message: the prompt alternatives of
            // `run3-fewshot-*` and `run3-fewfirst-*` put an example turn before it.
            let prompt = request["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap();
            let question = question_of(prompt);
            let shown = passages_of(prompt);
            // Where the model began copying its passages or went round in a loop, the server
            // stopped reading.
            let answer = match synthesis::stop_reading(&answer, &shown, true) {
                Some((at, why)) => {
                    match why {
                        synthesis::Stop::Copy => copies += 1,
                        synthesis::Stop::Loop => loops += 1,
                    }
                    answer[..at].to_owned()
                }
                None => answer,
            };
            total += 1;
            let run = match name.rsplit_once("-q") {
                Some((run, _)) => run.to_owned(),
                None => "run1".to_owned(),
            };
            runs.entry(run.clone()).or_default().0 += 1;
            if !answer.contains('[') {
                without_markers += 1;
            }
            let first = synthesis::validate_answer(question, &answer, &shown);
            let asked = judge::pairs_for(&first, &shown);
            let mut counts = SentenceCounts::default();
            // The model's check, one call per pair not held word for word: the recorded
            // answer of the call that asked about the same pair with the same words (the
            // request as the server builds it now, compared whole), none where no call was
            // recorded (the overlap verdict stands, as if the check had stopped).
            let pairs_now = judge::pairs_of(&asked, &shown);
            let answers: Vec<String> = judge::to_ask(&pairs_now)
                .into_iter()
                .map(|i| {
                    let now = judge_messages(&judge::messages(&pairs_now[i]));
                    match judged_calls.iter().find(|c| {
                        c["run"] == format!("{corpus}/{name}") && c["request"]["messages"] == now
                    }) {
                        Some(call) => {
                            replayed += 1;
                            call["answer"].as_str().unwrap().to_owned()
                        }
                        None => String::new(),
                    }
                })
                .collect();
            let judged = judge::decide(&pairs_now, &answers, None);
            assert_eq!(judged.verdicts.len(), asked.len(), "{corpus}/{name}");
            let (v, notes) = judge::apply(
                question,
                &answer,
                &shown,
                first,
                &asked,
                &judged,
                &mut counts,
            );
            let question_parts = parts::parts_for(question, &shown);
            let mut covered = vec![false; question_parts.len()];
            for claim in &v.claims {
                for p in claim.parts(&question_parts) {
                    covered[p] = true;
                }
            }
            let fallback = v.fallback_reason_for(&question_parts);
            snapshot.push_str(&format!(
                "## {corpus}/{name}: {question}\n\n{}: cited {} (re-cited {}), attributed {}, dropped {} uncited and {} unsupported ({} after the model's check, {} citations it removed); parts answered by the model {}/{}\n",
                match &fallback {
                    Some(reason) => format!("falls back ({reason})"),
                    None => "kept".to_owned(),
                },
                v.cited,
                v.recited,
                v.attributed,
                v.dropped,
                v.unsupported,
                counts.dropped_by_judge,
                counts.judge_removed,
                covered.iter().filter(|c| **c).count(),
                covered.len(),
            ));
            for note in notes {
                snapshot.push_str(&format!("- {note}\n"));
            }
            snapshot.push('\n');
            if fallback.is_some() {
                continue;
            }
            kept += 1;
            runs.entry(run).or_default().1 += 1;
            answered += covered.iter().filter(|c| **c).count();
            all_parts += covered.len();
            snapshot.push_str(&format!("{}\n\n", v.text));
            for claim in &v.claims {
                assert!(!claim.sources.is_empty(), "{name}: {claim:?}");
                for (i, n) in claim.sources.iter().enumerate() {
                    let source = &shown[v.order[*n as usize - 1] as usize - 1];
                    let stems = check::passage_stems(&source.title, &source.snippet);
                    let (overlap, verdict) = check::verdict(&claim.text, &stems);
                    let judged = claim.verdicts.get(i).copied().flatten();
                    // What the report keeps, the overlap check supports and the model's check
                    // (where it gave a verdict) did not reject.
                    assert_eq!(
                        verdict, "supported",
                        "{name}: {claim:?} against {}",
                        source.title
                    );
                    assert!(
                        judged.is_none_or(|j| j == "supports" || j == "partly"),
                        "{name}: {claim:?} {judged:?}"
                    );
                    snapshot.push_str(&format!(
                        "- [{n}] {verdict} ({overlap}; judged {}) {}\n",
                        judged.unwrap_or("–"),
                        source.title
                    ));
                }
            }
            snapshot.push('\n');
        }
    }
    snapshot.push_str(&format!(
        "kept {kept} of {total} ({without_markers} answers without any [n], {copies} ending in a copy of the passages, {loops} in a loop); parts the kept syntheses answer {answered}/{all_parts}\n"
    ));
    for (run, (n, k)) in &runs {
        snapshot.push_str(&format!("{run}: kept {k} of {n}\n"));
    }
    snapshot.push_str(&format!(
        "the model's check: {replayed} of {} recorded calls replayed (asked about the same pair in the same words now)\n",
        judged_calls.len()
    ));
    support::expect::expect_path(
        &support::fixture("model/qwen2.5-coder-1.5b/research/corpora.expected"),
        &snapshot,
    );
    // The snapshot above is the guard of every verdict; this floor says what it must not fall
    // under. Four live runs are recorded: `qNN` (the rules of 3296701), `run2-qNN` (5b2cafc)
    // and `run3-PROMPT-qNN`, five questions asked with the shipped prompt (`base`; one synthesis
    // was cut by the time budget and not recorded) and two alternatives (docs/research.md,
    // "Prompt alternatives"), and `run5-qNN`, the closing measurement (docs/research.md,
    // "Measured: two corpora patchwise did not write"; b3efe29, the shipped defaults; its per-pair judge calls are in judge-pairs.jsonl): 14 of 15 kept live,
    // 13 now that a sentence pointing back at a dropped one is dropped with it (httpx q03, as in
    // `qNN` and `run2-qNN`, which makes 47 of 49 for the earlier runs). Those runs' checks
    // answered a verdict word per pair (by position, not by the pair), which the server no
    // longer takes, so only their verbatim pairs get a verdict; under the verdict words 40 of 49
    // held, the rest lost to citations rejected by position.
    assert!(kept * 10 >= total * 8, "kept {kept} of {total}");
}

/// A sentence that points back at the sentence before it ("This property contains a list of
/// …") stands or falls with that sentence: Qwen2.5-Coder-1.5B's answer to "how can I see the
/// redirect history of a response" over HTTPX's docs (closing measurement, b3efe29) named the
/// `history` property in a sentence no passage holds closely enough by itself, and the server
/// kept the next one, "This property contains a list of any redirect responses …", after a
/// sentence about `follow_redirects` — so the report said `follow_redirects` holds the
/// history. Read together, the two are what the Redirection and History section says, so both
/// are kept, in their order.
#[test]
fn a_sentence_pointing_back_stands_or_falls_with_the_one_before_it() {
    use patchwise::research::{parts, synthesis};
    let dir = support::fixture("model/qwen2.5-coder-1.5b/research/httpx");
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
    let answer = answer_text(&read("run5-q03.http"));
    assert!(answer.contains(
        "you can access the `history` property of the response object. This property contains"
    ));
    let request: Value = serde_json::from_str(&read("run5-q03.request.json")).unwrap();
    let prompt = request["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    let shown = passages_of(prompt);
    let v = synthesis::validate_citations(&answer, &shown);
    let claims: Vec<&str> = v.claims.iter().map(|c| c.text.as_str()).collect();
    let at = |start: &str| {
        claims
            .iter()
            .position(|c| c.starts_with(start))
            .unwrap_or_else(|| panic!("{start}: {claims:?}"))
    };
    let history =
        at("To see the redirect history of a response, you can access the `history` property");
    assert_eq!(at("This property contains"), history + 1, "{claims:?}");
    assert!(
        v.text
            .contains("property of the response object [1] (attributed). This property contains"),
        "{}",
        v.text
    );
    // Both parts have the model's supported sentences.
    let question = question_of(prompt);
    let question_parts = parts::parts_for(question, &shown);
    assert_eq!(question_parts.len(), 2);
    assert!(
        v.claims[history].parts(&question_parts).contains(&1),
        "{:?}",
        v.claims
    );
}

/// …unless the two sentences together are what a passage says: Qwen2.5-Coder-1.5B's targeted
/// answer over Ruff's FAQ (run D, 2026-12-01, where do personal default settings live on a
/// Mac) wrote the location in the question's words ("personal", "loose scripts", "Mac", under
/// half of them in the passage) and went on "This file respects the `XDG_CONFIG_HOME`
/// specification …", the passage's own words. Both are right by reading; the report dropped
/// both.
#[test]
fn a_sentence_pointing_back_keeps_the_one_before_when_together_a_passage_says_them() {
    use patchwise::research::synthesis;
    let dir = support::fixture("model/qwen2.5-coder-1.5b/research/ruff");
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
    let answer = answer_text(&read("D-q02-call9.http"));
    let request: Value = serde_json::from_str(&read("D-q02-call9.request.json")).unwrap();
    let prompt = request["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    let shown = passages_of(prompt);
    let v = synthesis::validate_answer(question_of(prompt), &answer, &shown);
    let kept: Vec<&str> = v.claims.iter().map(|c| c.text.as_str()).collect();
    assert!(
        kept.iter()
            .any(|c| c.starts_with("The personal default configuration")
                && c.contains("`~/.config/ruff/ruff.toml`")),
        "{kept:?}"
    );
    assert!(
        kept.iter()
            .any(|c| c.starts_with("This file respects the `XDG_CONFIG_HOME` specification")),
        "{kept:?}"
    );
    assert!(v.claims.iter().all(|c| c.sources == [1]), "{:?}", v.claims);
}

/// The question of a recorded synthesis request: its prompt's first line, `Question: …`.
fn question_of(prompt: &str) -> &str {
    prompt
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("Question: "))
        .expect("a synthesis prompt starts with `Question: `")
}

/// A recorded run of the closing measurement (`run5-qNN`): its question, the passages its
/// synthesis prompt showed (credible, so they may be quoted) and the model's answer.
fn closing_run(corpus: &str, n: u32) -> (String, Vec<patchwise::store::SourceRecord>, String) {
    recorded_run(corpus, "run5", n)
}

/// Question `n` of the recorded live run `run` (`run5`, `run6`) over `corpus`: as
/// [`closing_run`].
fn recorded_run(
    corpus: &str,
    run: &str,
    n: u32,
) -> (String, Vec<patchwise::store::SourceRecord>, String) {
    let dir = support::fixture(&format!("model/qwen2.5-coder-1.5b/research/{corpus}"));
    let read = |file: String| std::fs::read_to_string(dir.join(file)).unwrap();
    let request: Value =
        serde_json::from_str(&read(format!("{run}-q{n:02}.request.json"))).unwrap();
    let prompt = request["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    let mut shown = passages_of(prompt);
    for s in &mut shown {
        s.credibility.score = 0.5;
    }
    (
        question_of(prompt).to_owned(),
        shown,
        answer_text(&read(format!("{run}-q{n:02}.http"))),
    )
}

/// A quote for a part of several words must hold two of them: on mdBook's "how can environment
/// variables override the book configuration, and how are the variable names formed"
/// (same-session run at 01e4286), the model's "The key is created by removing the `MDBOOK_`
/// prefix …" holds none of the second part's words, and the report quoted for it "Create a new
/// file with the name of the file you want to override …" and a sentence about `--chapter`,
/// each holding "name" alone.
#[test]
fn a_quote_for_a_part_holds_more_than_one_of_its_words() {
    use patchwise::research::{extractive, parts};
    let (question, mut shown, _) = recorded_run("mdbook", "run6", 7);
    // The two passages the report quoted from were candidates beyond the prompt's twelve.
    for (title, snippet) in [
        (
            "guide/src/format/theme/README.md:1-12 — Theme",
            "# Theme\n\nThe default renderer uses a [handlebars](https://handlebarsjs.com) template to\nrender your markdown files and comes with a default theme included in the mdBook\nbinary.\n\nThe theme is totally customizable, you can selectively replace every file from\nthe theme by your own by adding a `theme` directory next to `src` folder in your\nproject root. Create a new file with the name of the file you want to override\nand now that file will be used instead of the default file.\n\nHere are the files you can override:",
        ),
        (
            "guide/src/cli/test.md:57-60 — The test command › `--chapter`",
            "#### `--chapter`\n\nThe `--chapter` (`-c`) option allows you to test a specific chapter of the\nbook using the chapter name or the relative path to the chapter.",
        ),
    ] {
        let mut source = workspace_source(title, snippet);
        source.credibility.score = 0.5;
        shown.push(source);
    }
    let qp = parts::parts_for(&question, &shown);
    assert_eq!(qp.len(), 2);
    let quoted = extractive::quote(&question, &qp, &[1], &shown);
    let said: Vec<&str> = quoted.claims.iter().map(|(t, _)| t.as_str()).collect();
    assert!(
        said.iter()
            .all(|t| !t.contains("override") && !t.contains("--chapter")),
        "{said:?}"
    );
    for t in &said {
        assert!(parts::weighed_hits(t, &qp[1]).0 >= 2, "{t}");
    }
    // A quote that holds two of them stays: httpx 3's history part.
    let (question, shown, _) = closing_run("httpx", 3);
    let qp = parts::parts_for(&question, &shown);
    let quoted = extractive::quote(&question, &qp, &[1], &shown);
    assert_eq!(
        quoted.claims.first().map(|(t, _)| t.as_str()),
        Some(
            "The `history` property of the response can be used to inspect any followed redirects."
        )
    );
}

/// The parts of the question by reading, on the closing measurement's recorded runs over
/// HTTPX's docs (docs/research.md, "Measured: two corpora patchwise did not write"): the
/// report counted 30 of 30 parts answered where reading found 26, because one shared word made
/// a sentence an answer. A part is now answered by a sentence holding at least a third of its
/// words weighed by their rarity among the report's passages, or by the model's sentences under
/// its copy of that part; a part nothing answers is quoted for, or said to have found nothing.
#[test]
fn a_part_is_answered_by_a_sentence_about_it_not_by_one_shared_word() {
    use patchwise::research::{extractive, parts, synthesis};

    // httpx 7: "HTTPX" is in every passage and weighs nothing; the sentence that held only it
    // answered "which environment variables does HTTPX read for proxies".
    let (question, shown, answer) = closing_run("httpx", 7);
    let qp = parts::parts_for(&question, &shown);
    assert_eq!(qp.len(), 2);
    let httpx = qp[1].stems.iter().position(|s| s == "httpx").unwrap();
    assert!(qp[1].weights[httpx] < 0.01, "{:?}", qp[1]);
    assert!(
        parts::answered_by(
            "HTTPX supports setting up HTTP proxies via the `proxy` parameter to be passed on client initialization or top-level API functions like `httpx.get(..., proxy=...)`.",
            &qp
        )
        .is_empty()
    );
    assert_eq!(
        parts::answered_by(
            "To send requests through a proxy, you can use the `proxy` parameter in the client initialization or top-level API functions like `httpx.get(..., proxy=...)`.",
            &qp
        ),
        vec![0]
    );
    let v = synthesis::validate_citations(&answer, &shown);
    assert!(
        v.claims.iter().all(|c| !c.parts(&qp).contains(&1)),
        "{:?}",
        v.claims
    );
    // So the report quotes the passages for the second part: sentences that name environment
    // variables. (Which ones, the docs say under headings — "`HTTP_PROXY`, `HTTPS_PROXY`,
    // `ALL_PROXY` set the proxy to be used …" names none of the part's words — so the quotes
    // are the general "The HTTPX library can be configured via environment variables." and one
    // about `SSL_CERT_FILE`.)
    let quoted = extractive::quote(&question, &qp, &[1], &shown);
    let said: Vec<&str> = quoted.claims.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        said.first(),
        Some(&"The HTTPX library can be configured via environment variables."),
        "{said:?}"
    );
    assert!(
        said.iter().all(|t| t.contains("environment variable")),
        "{said:?}"
    );

    // httpx 4: the fallback quoted, for "how do I send JSON data in a request", a sentence
    // about `.request` and one about Requests' tuples, each holding "send", "request" or "data"
    // — words most of the passages hold — and no "JSON".
    let (question, shown, _) = closing_run("httpx", 4);
    let (text, _) = extractive::extractive(&question, &shown, "the model's answer was not kept");
    assert!(!text.contains("generic `.request` function"), "{text}");
    assert!(!text.contains("list of tuples"), "{text}");

    // httpx 3: the history part, which the dangling "This property contains …" answered. The
    // model's sentence on redirects holds up, so its answer is kept; the history part is
    // answered by the model's sentence on the `history` property, kept with the "This property
    // contains …" after it (`a_sentence_pointing_back_stands_or_falls_with_the_one_before_it`),
    // and the quotes for it, were it left unanswered, would be about the history.
    let (question, shown, answer) = closing_run("httpx", 3);
    let qp = parts::parts_for(&question, &shown);
    let v = synthesis::validate_citations(&answer, &shown);
    assert!(v.fallback_reason_for(&qp).is_none());
    assert!(v.claims.iter().any(|c| c.parts(&qp).contains(&1)));
    assert!(
        v.claims
            .iter()
            .filter(|c| c.parts(&qp).contains(&1))
            .all(|c| c.text.contains("`history` property")),
        "{:?}",
        v.claims
    );
    let quoted = extractive::quote(&question, &qp, &[1], &shown);
    assert!(
        quoted
            .claims
            .first()
            .is_some_and(|(t, _)| t.contains("history")),
        "{:?}",
        quoted.claims
    );

    // httpx 5: the model answered "why should I use a Client instead of the top-level
    // functions" under its copy of that part, in words of its own; the report quoted a sentence
    // about proxies for it.
    let (question, shown, answer) = closing_run("httpx", 5);
    let qp = parts::parts_for(&question, &shown);
    let v = synthesis::validate_citations(&answer, &shown);
    let efficient = v
        .claims
        .iter()
        .find(|c| c.text.starts_with("It provides more efficient usage"))
        .expect("the model's first reason is kept");
    assert_eq!(efficient.parts(&qp), vec![0], "{efficient:?}");
    assert!(parts::answers(&efficient.text, &qp).is_empty());
    for p in 0..qp.len() {
        assert!(v.claims.iter().any(|c| c.parts(&qp).contains(&p)), "{p}");
    }

    // httpx 9: the sentence is about the default limits, so it answers that part; that 20 is
    // the keep-alive limit, not the pool's, is for the check of its citation to find — the
    // parts say what a sentence is about, not whether it is true.
    let (question, shown, _) = closing_run("httpx", 9);
    let qp = parts::parts_for(&question, &shown);
    assert!(
        parts::answers(
            "The default limit for the number of connections in the pool is 20.",
            &qp
        )
        .contains(&1)
    );
}
