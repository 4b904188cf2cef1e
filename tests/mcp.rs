//! `patchwise mcp` through the real binary.
//!
//! - A client the project did not write — the official MCP Python SDK (`mcp` from PyPI,
//!   installed into `.venv-test/` by `scripts/test`) — runs `tests/mcp/client.py`: listing
//!   tools, reading, a lenient edit, an ambiguous one, a stale one, sandbox escapes, context,
//!   and research against fake sources on 127.0.0.1 with progress and cancellation.
//! - Raw bytes on stdin: the tool list as a contract (names, parameters, hints), and malformed
//!   input (bad JSON, batches, unknown tools and methods, wrong types, huge arguments and
//!   messages), each answered with an error while the server keeps serving.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use patchwise::model::replay::{ReplayServer, Reply};
use patchwise::tokens::{Encoding, count_tokens};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(120);

/// A workspace `ws/` in a temp dir, with `outside.txt` next to it and `ws/escape` linking out.
struct Workspace {
    dir: tempfile::TempDir,
    ws: PathBuf,
}

impl Workspace {
    fn new(config: &str) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let write = |rel: &str, text: &str| {
            let path = ws.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "src/main.rs",
            "fn main() {\n\tlet x = 1;\n\tif x > 0 {\n\t\tprintln!(\"positive\");\n\t}\n}\n\nfn helper() -> u8 {\n\t1\n}\n",
        );
        write("src/dup.txt", "a\nx = 1\nb\nx = 1\nc\nx = 1\n");
        write("src/stale.txt", "alpha\nbeta = 1\ngamma\n");
        write(
            "docs/attention.md",
            "# Notes\n\nOur transformer uses scaled dot-product attention in every layer.\n",
        );
        write(".patchwise/config.toml", config);
        std::fs::write(
            dir.path().join("outside.txt"),
            "secret outside the workspace\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(dir.path(), ws.join("escape")).unwrap();
        Workspace { dir, ws }
    }

    fn home(&self) -> PathBuf {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        home
    }
}

fn fixture(name: &str) -> Reply {
    Reply::from_file(format!(
        "{}/fixtures/research/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The Python of the test venv (`PATCHWISE_PYTHON` overrides).
fn python() -> PathBuf {
    std::env::var_os("PATCHWISE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-test/bin/python"))
}

#[test]
fn the_python_sdk_client_reads_edits_and_researches() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (model, openalex, hanging) = runtime.block_on(async {
        (
            ReplayServer::start(vec![fixture("model_synthesis.http")])
                .await
                .unwrap(),
            ReplayServer::start(vec![fixture("openalex_works.http")])
                .await
                .unwrap(),
            ReplayServer::start(vec![Reply::Hang]).await.unwrap(),
        )
    });
    let library = tempfile::tempdir().unwrap();
    let config = format!(
        r#"
[providers.test]
base_url = "{model}/v1"
[roles]
coder = "test/scripted"
[research]
library = "{lib}"
model = "coder"
[research.sources.openalex]
base_url = "{openalex}"
[research.sources.crossref]
base_url = "{hanging}"
"#,
        model = model.url(),
        openalex = openalex.url(),
        hanging = hanging.url(),
        lib = library.path().join("lib.sqlite3").display(),
    );
    let ws = Workspace::new(&config);
    let home = ws.home();
    let outside = ws.dir.path().join("outside.txt");
    let output = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py"))
        .env("PATCHWISE_BIN", env!("CARGO_BIN_EXE_patchwise"))
        .env("MCP_WS", &ws.ws)
        .env("MCP_OUTSIDE", &outside)
        .env("MCP_HOME", &home)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}); scripts/test installs the MCP SDK into .venv-test/",
                python().display()
            )
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let log = std::fs::read_to_string(home.join("server.log")).unwrap_or_default();
    assert!(
        output.status.success(),
        "the Python client failed:\n{stdout}\n{}\n--- server log:\n{log}",
        String::from_utf8_lossy(&output.stderr)
    );
    for step in [
        "initialize",
        "list_tools",
        "lenient_edit",
        "dry_run",
        "line_and_symbol_ops",
        "ambiguous",
        "stale",
        "sandbox",
        "context",
        "tool_errors",
        "research",
        "research_cancelled",
    ] {
        assert!(
            stdout.lines().any(|l| l == format!("ok {step}")),
            "step {step} did not run:\n{stdout}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "secret outside the workspace\n"
    );
    // Cancelling stopped the request the hanging source was holding.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while hanging.disconnects() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        hanging.disconnects() >= 1,
        "the hanging source was not dropped"
    );
    // No temporary files were left next to the edited files.
    let leftovers: Vec<_> = std::fs::read_dir(ws.ws.join("src"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.ends_with(".orig"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(!log.contains("panic"), "{log}");
}

/// The server over raw stdio: lines in, JSON lines out.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: i64,
}

impl Raw {
    fn spawn(ws: &Workspace) -> Raw {
        let home = ws.home();
        let mut child = Command::new(env!("CARGO_BIN_EXE_patchwise"))
            .args(["mcp", "--workspace"])
            .arg(&ws.ws)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("RUST_LOG", "patchwise=debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut raw = Raw {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = raw.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"}
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "patchwise", "{init}");
        raw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        raw
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line from the server, as JSON (every line must be JSON).
    fn receive(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the server answers");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"))
    }

    /// The answer with `id` (other messages before it are skipped).
    fn answer(&mut self, id: &Value) -> Value {
        loop {
            let message = self.receive();
            if &message["id"] == id {
                return message;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(message.to_string().as_bytes());
        self.answer(&id)
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    fn close(mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "the server exited with {status}");
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn is_error(result: &Value) -> bool {
    result["result"]["isError"] == true
}

#[test]
fn tool_names_parameters_and_hints_are_a_contract() {
    let ws = Workspace::new("");
    let mut raw = Raw::spawn(&ws);
    let listed = raw.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let summary: Vec<String> = tools
        .iter()
        .map(|t| {
            let schema = &t["inputSchema"];
            let mut params: Vec<String> = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(|k| {
                    let required = schema["required"]
                        .as_array()
                        .is_some_and(|r| r.iter().any(|x| x == k.as_str()));
                    if required { k.clone() } else { format!("{k}?") }
                })
                .collect();
            params.sort();
            let a = &t["annotations"];
            let hint = |k: &str| if a[k] == true { "y" } else { "n" };
            format!(
                "{} {{{}}} ro={} destructive={} idempotent={} open={}",
                t["name"].as_str().unwrap(),
                params.join(", "),
                hint("readOnlyHint"),
                hint("destructiveHint"),
                hint("idempotentHint"),
                hint("openWorldHint"),
            )
        })
        .collect();
    let expected = [
        "read_file {limit?, offset?, path} ro=y destructive=n idempotent=y open=n",
        "list_files {path?, pattern?} ro=y destructive=n idempotent=y open=n",
        "search {path?, pattern, regex?} ro=y destructive=n idempotent=y open=n",
        "edit_file {dry_run?, new_string, old_string, path, replace_all?} ro=n destructive=y idempotent=n open=n",
        "insert_lines {before?, dry_run?, line, path, text} ro=n destructive=y idempotent=n open=n",
        "replace_lines {dry_run?, end, path, start, text} ro=n destructive=y idempotent=n open=n",
        "replace_symbol {dry_run?, path, symbol, text} ro=n destructive=y idempotent=y open=n",
        "context {budget?, line?, path, query?, symbol?} ro=y destructive=n idempotent=y open=n",
        "research {depth?, question, sources?} ro=n destructive=n idempotent=n open=y",
        "research_search {text} ro=y destructive=n idempotent=y open=n",
    ];
    assert_eq!(summary, expected, "{listed}");
    for t in tools {
        assert!(
            t["description"].as_str().unwrap().len() > 40,
            "{} needs a description a model can act on",
            t["name"]
        );
    }
    // What every agent session pays for the tool list (the wire JSON, counted with the
    // project's tokenizers): kept well under what one file read costs.
    let wire = listed["result"].to_string();
    let cl100k = count_tokens(&wire, Encoding::Cl100k);
    let o200k = count_tokens(&wire, Encoding::O200k);
    println!(
        "tools/list: {} bytes, {cl100k} tokens (cl100k_base), {o200k} tokens (o200k_base)",
        wire.len()
    );
    assert!(cl100k < 3000, "the tool list grew to {cl100k} tokens");
    raw.close();
}

#[test]
fn malformed_input_is_answered_and_the_server_keeps_serving() {
    let ws = Workspace::new("");
    let mut raw = Raw::spawn(&ws);

    // Not JSON: a parse error without an id.
    raw.send(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
    let m = raw.receive();
    assert_eq!(m["error"]["code"], -32700, "{m}");
    assert!(m["id"].is_null(), "{m}");
    raw.send(b"\xff\xfe not even UTF-8");
    assert_eq!(raw.receive()["error"]["code"], -32700);

    // A batch, and a message without a method.
    raw.send(br#"[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#);
    assert_eq!(raw.receive()["error"]["code"], -32600);
    raw.send(br#"{"jsonrpc":"2.0","id":"x-3"}"#);
    let m = raw.answer(&json!("x-3"));
    assert_eq!(m["error"]["code"], -32600, "{m}");
    raw.send(br#"{"jsonrpc":"1.0","id":77,"method":"tools/list"}"#);
    assert_eq!(raw.answer(&json!(77))["error"]["code"], -32600);

    // Wrong shapes of a known request: invalid params, with the request's id.
    raw.send(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":5}}"#);
    let m = raw.answer(&json!(4));
    assert_eq!(m["error"]["code"], -32602, "{m}");
    raw.send(
        br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":"src/main.rs"}}"#,
    );
    assert!(raw.answer(&json!(5))["error"]["code"].is_i64());

    // An unknown method and an unknown tool are protocol errors.
    let m = raw.request("no/such/method", json!({}));
    assert_eq!(m["error"]["code"], -32601, "{m}");
    let m = raw.call("delete_everything", json!({}));
    assert_eq!(m["error"]["code"], -32602, "{m}");
    assert!(
        m["error"]["message"]
            .as_str()
            .unwrap()
            .contains("edit_file"),
        "{m}"
    );

    // Wrong argument types and missing arguments: tool errors the model can act on.
    let m = raw.call("read_file", json!({"path": "src/main.rs"}));
    assert!(!is_error(&m), "{m}");
    for (tool, args, says) in [
        ("read_file", json!({"path": {"nested": true}}), "path"),
        (
            "read_file",
            json!({"path": "src/main.rs", "limit": -3}),
            "limit",
        ),
        ("edit_file", json!({"path": "src/main.rs"}), "old_string"),
        (
            "edit_file",
            json!({"path": "src/main.rs", "old_string": "x", "new_string": "y", "dry_run": "perhaps"}),
            "dry_run",
        ),
        (
            "replace_lines",
            json!({"path": "src/main.rs", "start": "one", "end": 2, "text": ""}),
            "start",
        ),
        ("context", json!({"path": 7}), "path"),
        (
            "context",
            json!({"path": "src/main.rs", "symbol": "a", "query": "b"}),
            "symbol",
        ),
        ("research", json!({"question": ""}), "question"),
        ("research", json!({"question": "q", "depth": 9}), "depth"),
        (
            "research",
            json!({"question": "q", "sources": [1, 2]}),
            "sources",
        ),
        ("research_search", json!({}), "text"),
    ] {
        let m = raw.call(tool, args.clone());
        assert!(is_error(&m), "{tool} {args}: {m}");
        assert!(text(&m).contains(says), "{tool} {args}: {m}");
    }

    // Huge arguments: refused as a tool error, nothing written.
    let before = std::fs::read_to_string(ws.ws.join("src/main.rs")).unwrap();
    let huge = "x".repeat(5 * 1024 * 1024);
    let m = raw.call(
        "edit_file",
        json!({"path": "src/main.rs", "old_string": "fn main", "new_string": huge}),
    );
    assert!(is_error(&m) && text(&m).contains("MiB"), "{}", &text(&m));
    // A message past the 16 MiB line limit: an error with the request's id, then on.
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"{}"}}}}}}"#,
        "y".repeat(17 * 1024 * 1024)
    );
    raw.send(line.as_bytes());
    let m = raw.answer(&json!(99));
    assert_eq!(m["error"]["code"], -32600, "{m}");
    assert_eq!(
        std::fs::read_to_string(ws.ws.join("src/main.rs")).unwrap(),
        before
    );

    // Still serving.
    let m = raw.call("read_file", json!({"path": "src/main.rs"}));
    assert!(!is_error(&m) && text(&m).contains("fn main"), "{m}");
    raw.close();
}

#[test]
fn an_edit_keeps_permissions_and_symlinks() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new("");
    let script = ws.ws.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho one\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink(ws.ws.join("src/main.rs"), ws.ws.join("alias.rs")).unwrap();
    let mut raw = Raw::spawn(&ws);

    raw.call("read_file", json!({"path": "run.sh"}));
    let m = raw.call(
        "edit_file",
        json!({"path": "run.sh", "old_string": "echo one", "new_string": "echo two"}),
    );
    assert!(!is_error(&m) && text(&m).contains("+echo two"), "{m}");
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho two\n"
    );
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o750);

    raw.call("read_file", json!({"path": "alias.rs"}));
    let m = raw.call(
        "edit_file",
        json!({"path": "alias.rs", "old_string": "let x = 1;", "new_string": "let x = 7;"}),
    );
    assert!(!is_error(&m), "{m}");
    let link = std::fs::symlink_metadata(ws.ws.join("alias.rs")).unwrap();
    assert!(link.file_type().is_symlink(), "the link stays a link");
    let target = std::fs::read_to_string(ws.ws.join("src/main.rs")).unwrap();
    assert!(target.contains("\tlet x = 7;\n"), "{target}");

    // A dry run leaves the ledger as it was: the real edit goes through after it.
    let m = raw.call(
        "edit_file",
        json!({"path": "run.sh", "old_string": "echo two", "new_string": "echo three", "dry_run": true}),
    );
    assert!(!is_error(&m) && text(&m).starts_with("dry run"), "{m}");
    assert!(
        std::fs::read_to_string(&script)
            .unwrap()
            .contains("echo two")
    );
    let m = raw.call(
        "edit_file",
        json!({"path": "run.sh", "old_string": "echo two", "new_string": "echo three"}),
    );
    assert!(!is_error(&m), "{m}");
    raw.close();
}
