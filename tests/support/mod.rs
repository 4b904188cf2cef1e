//! A small JSON-RPC harness that drives the real `patchwise` binary over stdio.
//!
//! Every byte the server writes to stdout must be part of a well-formed LSP frame: the reader
//! thread fails loudly on anything else, so a stray `println!` breaks the tests. Messages the
//! test did not ask for (notifications, server requests) are kept in order for inspection.
//!
//! Beside it, what every test binary needs around a run: scripted model answers
//! ([`openai_sse`]; fill-in-the-middle completions from [`fim`]), workspaces copied from
//! `fixtures/` ([`workspace_copy`], [`copy_dir`]), the state of a directory to compare before
//! and after ([`tree`]), and snapshots ([`snapshot`]).

#![allow(dead_code)] // each test binary uses a different part of the harness

pub mod cases;
pub mod client;
pub mod expect;
pub mod fim;
pub mod gguf;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Long enough for a debug build under load; a test that waits this long has failed anyway.
const PATIENCE: Duration = Duration::from_secs(120);

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Result<Value, String>>,
    unsolicited: VecDeque<Value>,
    responses: Vec<Value>,
    next_id: i64,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Results sent back for server-to-client requests, by method (default `null`).
    pub replies: std::collections::HashMap<String, Value>,
}

pub struct Options<'a> {
    pub args: Vec<&'a str>,
    pub env: Vec<(&'a str, String)>,
    pub cwd: Option<&'a Path>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Self {
            args: vec!["serve"],
            env: Vec::new(),
            cwd: None,
        }
    }
}

impl Server {
    pub fn spawn(options: Options<'_>) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_patchwise"));
        command
            .args(&options.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "patchwise=debug")
            .env("RUST_BACKTRACE", "0");
        for (key, value) in &options.env {
            command.env(key, value);
        }
        if let Some(cwd) = options.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().expect("spawn patchwise");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let (tx, incoming) = channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                match read_frame(&mut reader) {
                    Ok(Some(value)) => {
                        if tx.send(Ok(value)).is_err() {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(err) => {
                        let _ = tx.send(Err(err));
                        break;
                    }
                }
            }
        });
        Self {
            child,
            stdin,
            incoming,
            unsolicited: VecDeque::new(),
            responses: Vec::new(),
            next_id: 1,
            stderr,
            replies: std::collections::HashMap::from([
                ("workspace/applyEdit".to_owned(), json!({ "applied": true })),
                ("window/showDocument".to_owned(), json!({ "success": true })),
            ]),
        }
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).unwrap();
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        self.send_raw(&frame);
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends a request without waiting; collect the answer with [`Server::response`].
    pub fn request_async(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// Sends a request and waits for its response: `Ok(result)` or `Err(error object)`.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.request_async(method, params);
        self.response(json!(id))
    }

    pub fn response(&mut self, id: Value) -> Result<Value, Value> {
        let message = self.wait_for(|m| m.get("method").is_none() && m["id"] == id);
        match message.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(message["result"].clone()),
        }
    }

    /// Waits for a message matching `pred`; others are kept for later.
    pub fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.responses.iter().position(&pred) {
            return self.responses.remove(i);
        }
        if let Some(i) = self.unsolicited.iter().position(&pred) {
            return self.unsolicited.remove(i).unwrap();
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.incoming.recv_timeout(left) {
                Ok(Ok(message)) => message,
                Ok(Err(err)) => panic!(
                    "bad output from the server: {err}\nstderr:\n{}",
                    self.stderr()
                ),
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no matching message from the server\nstderr:\n{}",
                        self.stderr()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("server closed stdout\nstderr:\n{}", self.stderr())
                }
            };
            self.answer_if_request(&message);
            if pred(&message) {
                return message;
            }
            self.keep(message);
        }
    }

    /// Reads whatever the server has sent within `wait`, answering its requests.
    pub fn drain(&mut self, wait: Duration) {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if let Ok(Ok(message)) = self.incoming.recv_timeout(Duration::from_millis(20)) {
                self.answer_if_request(&message);
                self.keep(message);
            }
        }
    }

    /// Answers a server-to-client request as a client would (see `replies`).
    fn answer_if_request(&mut self, message: &Value) {
        if let (Some(method), Some(id)) = (message.get("method"), message.get("id")) {
            let result = self
                .replies
                .get(method.as_str().unwrap_or_default())
                .cloned()
                .unwrap_or(Value::Null);
            let id = id.clone();
            self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
        }
    }

    fn keep(&mut self, message: Value) {
        if message.get("method").is_some() {
            self.unsolicited.push_back(message);
        } else {
            self.responses.push(message);
        }
    }

    /// The notifications and server-to-client requests with `method` received so far and not
    /// yet consumed, oldest first.
    pub fn take_method(&mut self, method: &str) -> Vec<Value> {
        let (taken, kept): (VecDeque<Value>, VecDeque<Value>) = self
            .unsolicited
            .drain(..)
            .partition(|m| m["method"].as_str() == Some(method));
        self.unsolicited = kept;
        taken.into()
    }

    /// Every message not consumed yet, once the process has ended: those kept while waiting for
    /// others, then the rest of stdout up to its end.
    pub fn remaining(&mut self) -> Vec<Value> {
        let mut out: Vec<Value> = self.unsolicited.drain(..).collect();
        out.append(&mut self.responses);
        loop {
            match self.incoming.recv_timeout(PATIENCE) {
                Ok(Ok(message)) => out.push(message),
                Ok(Err(err)) => panic!(
                    "bad output from the server: {err}\nstderr:\n{}",
                    self.stderr()
                ),
                Err(RecvTimeoutError::Disconnected) => return out,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "stdout stayed open after the server exited\nstderr:\n{}",
                    self.stderr()
                ),
            }
        }
    }

    /// Waits for the process to end on its own.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("server did not exit\nstderr:\n{}", self.stderr());
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads one LSP frame. `Ok(None)` at a clean end of stream.
fn read_frame(reader: &mut impl BufRead) -> Result<Option<Value>, String> {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| format!("reading a header: {e}"))?;
        if n == 0 {
            return if length.is_none() {
                Ok(None)
            } else {
                Err("stdout ended inside a header".into())
            };
        }
        if line == "\r\n" {
            break;
        }
        let Some((name, value)) = line.trim_end_matches("\r\n").split_once(": ") else {
            return Err(format!("not an LSP header line on stdout: {line:?}"));
        };
        match name.to_ascii_lowercase().as_str() {
            "content-length" => {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|e| format!("bad Content-Length {value:?}: {e}"))?,
                )
            }
            "content-type" => {}
            _ => return Err(format!("unexpected header on stdout: {line:?}")),
        }
    }
    let length = length.ok_or("frame without Content-Length")?;
    let mut body = vec![0; length];
    reader
        .read_exact(&mut body)
        .map_err(|e| format!("reading a body of {length} bytes: {e}"))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| format!("frame body is not JSON: {e}"))
}

// ---- client-side text model, independent of the server's code ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enc {
    Utf8,
    Utf16,
    Utf32,
}

impl Enc {
    pub fn name(self) -> &'static str {
        match self {
            Enc::Utf8 => "utf-8",
            Enc::Utf16 => "utf-16",
            Enc::Utf32 => "utf-32",
        }
    }
}

/// The LSP position of a byte offset in `text` (lines end at LF, CRLF or lone CR).
pub fn position_of(text: &str, offset: usize, enc: Enc) -> Value {
    let before = &text[..offset];
    let mut line = 0;
    let mut line_start = 0;
    let bytes = before.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                line += 1;
                line_start = i + 2;
                i += 1;
            }
            b'\r' => {
                line += 1;
                line_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let prefix = &before[line_start..];
    let character: usize = match enc {
        Enc::Utf8 => prefix.len(),
        Enc::Utf16 => prefix.chars().map(char::len_utf16).sum(),
        Enc::Utf32 => prefix.chars().count(),
    };
    json!({ "line": line, "character": character })
}

/// A tiny deterministic generator, so failures reproduce.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

// ---- scripted model answers ----

/// An answer in the OpenAI chat-completions SSE format: `{"text"}` (with `"finish": "length"`
/// for one cut at the token limit), `{"calls": [{"name", "arguments"}]}`, or `"hang"` / `{"hang": …}` (never answers); built by
/// [`patchwise::model::replay::openai_sse`].
pub fn openai_sse(answer: &Value) -> patchwise::model::replay::Reply {
    use patchwise::model::replay::{Reply, openai_sse};
    if answer == "hang" || answer.get("hang").is_some() {
        return Reply::Hang;
    }
    match answer["calls"].as_array() {
        Some(calls) => {
            let calls: Vec<(String, Value)> = calls
                .iter()
                .map(|c| {
                    let name = c["name"].as_str().unwrap().to_owned();
                    (name, c["arguments"].clone())
                })
                .collect();
            openai_sse("", &calls, "tool_calls")
        }
        None => openai_sse(
            answer["text"].as_str().unwrap_or_default(),
            &[],
            answer["finish"].as_str().unwrap_or("stop"),
        ),
    }
}

/// The case `name` of `fixtures/lsp/edit/scenarios.json` (instruction, lines, expected text,
/// …) and its scripted model answers (`coder`), in order.
pub fn edit_scenario(name: &str) -> (Value, Vec<patchwise::model::replay::Reply>) {
    let path = fixture("lsp/edit/scenarios.json");
    let scenarios: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let s = scenarios[name].clone();
    assert!(s.is_object(), "no scenario {name:?} in {}", path.display());
    let replies = s["coder"]
        .as_array()
        .unwrap()
        .iter()
        .map(openai_sse)
        .collect();
    (s, replies)
}

/// A develop scenario (`fixtures/develop/scenarios/<name>.json`) and its planner and coder as
/// replay servers started on `runtime`, answering the scenario `runs` times over; with the
/// client settings (`initializationOptions`) that name them, keeping data under `data_dir`.
pub fn develop_models(
    runtime: &tokio::runtime::Runtime,
    name: &str,
    runs: usize,
    data_dir: &Path,
) -> (
    Value,
    patchwise::model::replay::ReplayServer,
    patchwise::model::replay::ReplayServer,
    Value,
) {
    use patchwise::model::replay::ReplayServer;
    let path = fixture("develop/scenarios").join(format!("{name}.json"));
    let scenario: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let replies = |role: &str| {
        let answers = scenario[role].as_array().unwrap();
        std::iter::repeat_n(answers, runs)
            .flatten()
            .map(openai_sse)
            .collect()
    };
    let planner = runtime
        .block_on(ReplayServer::start(replies("planner")))
        .unwrap();
    let coder = runtime
        .block_on(ReplayServer::start(replies("coder")))
        .unwrap();
    let init = json!({
        "providers": {
            "plan": { "kind": "openai", "base_url": format!("{}/v1", planner.url()), "api_key_env": "" },
            "code": { "kind": "openai", "base_url": format!("{}/v1", coder.url()), "api_key_env": "" },
        },
        "roles": { "planner": "plan/planner-model", "coder": "code/coder-model" },
        "timeouts": { "connect": 5, "first_token": 60, "total": 120 },
        "retry": { "max_attempts": 1 },
        "data_dir": data_dir,
    });
    (scenario, planner, coder, init)
}

// ---- workspaces on disk ----

/// `fixtures/<relative>` in the repository.
pub fn fixture(relative: &str) -> PathBuf {
    expect::repo_path("fixtures").join(relative)
}

/// Copies the directory `from` to `to`, recursively (a link is copied as the file it names).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A temporary directory with a copy of `fixtures/<relative>` in its `ws/`; the directory is
/// removed when the returned guard drops.
pub fn workspace_copy(relative: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    copy_dir(&fixture(relative), &ws);
    (dir, ws)
}

/// The `*.json` files directly in `dir` (scenarios, cases), sorted by name.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
}

/// Every file under `dir` with its bytes, sorted by path; a symlink is listed with the path it
/// points to and not followed. Two calls compare equal when nothing on disk changed.
pub fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                let target = std::fs::read_link(e.path()).unwrap();
                out.push((e.path(), target.into_os_string().into_encoded_bytes()));
            } else if t.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), std::fs::read(e.path()).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

// ---- snapshots ----

/// Compares `actual` with `fixtures/<path>`; `UPDATE_EXPECT=1` writes it instead.
pub fn snapshot(path: &str, actual: &str) {
    expect::expect_file(&format!("fixtures/{path}"), actual);
}

/// The `host:port` a model host announced (`{"url": "http://127.0.0.1:PORT/v1", …}`).
pub fn host_authority(announcement: &Value) -> String {
    announcement["url"]
        .as_str()
        .expect("an announcement names its url")
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned()
}
