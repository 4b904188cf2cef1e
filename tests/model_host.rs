//! The model inside patchwise, end to end through the real binary and the real llama.cpp, on a
//! tiny GGUF model the tests build (`support/gguf.rs`): `patchwise model serve` answering the
//! OpenAI wire (whole, streamed, completions), prefix reuse, a disconnecting client stopping the
//! decoding, bad requests and bad files; the shared host started once by two processes,
//! restarted after `kill -9`, gone after its idle time; an embedded provider answering through
//! the router, and completion's fill-in-the-middle requests; `doctor` and `init` with and
//! without a model; `model pull` from a local hub.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use support::gguf;

const PATIENCE: Duration = Duration::from_secs(120);

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_patchwise")
}

/// A temp dir with the tiny model in it.
fn tiny() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.gguf");
    gguf::write_tiny_model(&path);
    (dir, path)
}

/// A command isolated from the user's files: its own config and data dirs, no model server
/// environment.
fn patchwise(home: &Path) -> Command {
    let mut command = Command::new(bin());
    command
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env("PATCHWISE_HOST_PROGRAM", bin())
        .env_remove("RUST_LOG")
        .current_dir(home);
    command
}

/// `patchwise model serve` on the tiny model, announced in a file.
struct Served {
    child: Child,
    authority: String,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start(model: &Path, extra: &[&str]) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let announce = dir.path().join("host.json");
        let child = patchwise(dir.path())
            .args(["model", "serve"])
            .arg(model)
            .arg("--announce")
            .arg(&announce)
            .args(["--threads", "1"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let began = Instant::now();
        let host: Value = loop {
            if let Ok(text) = std::fs::read_to_string(&announce)
                && let Ok(value) = serde_json::from_str(&text)
            {
                break value;
            }
            assert!(
                began.elapsed() < PATIENCE,
                "the host never announced itself"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let authority = support::host_authority(&host);
        Served {
            child,
            authority,
            _dir: dir,
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 exchange over a fresh connection: the status and the body.
fn http(authority: &str, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(authority).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status: u16 = text[9..12].parse().unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    (status, body)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    out
}

fn post(authority: &str, path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = http(authority, "POST", path, Some(&body.to_string()));
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

fn chat_body(messages: Value, max_tokens: u32) -> Value {
    json!({"model": "tiny", "messages": messages, "max_tokens": max_tokens, "temperature": 0})
}

#[test]
fn the_host_answers_whole_and_streamed_reuses_the_prefix_and_refuses_bad_requests() {
    let (_dir, model) = tiny();
    let host = Served::start(&model, &["--context", "512"]);

    let (status, models) = http(&host.authority, "GET", "/v1/models", None);
    assert_eq!(status, 200);
    let models: Value = serde_json::from_str(&models).unwrap();
    assert_eq!(models["data"][0]["id"], "tiny");
    assert_eq!(models["data"][0]["meta"]["n_ctx"], 512);

    let messages = json!([
        {"role": "system", "content": "You edit code."},
        {"role": "user", "content": "Rename x to y in: x = 1"}
    ]);
    let (status, first) = post(
        &host.authority,
        "/v1/chat/completions",
        &chat_body(messages.clone(), 12),
    );
    assert_eq!(status, 200, "{first}");
    let text = first["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!text.is_empty());
    assert_eq!(first["choices"][0]["finish_reason"], "length");
    assert_eq!(first["usage"]["completion_tokens"], 12);
    let prompt_tokens = first["usage"]["prompt_tokens"].as_u64().unwrap();
    assert_eq!(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

    // The same prompt again: everything but its last token comes from the cache, and greedy
    // decoding gives the same answer.
    let (_, again) = post(
        &host.authority,
        "/v1/chat/completions",
        &chat_body(messages.clone(), 12),
    );
    assert_eq!(again["choices"][0]["message"]["content"], text.as_str());
    assert_eq!(
        again["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64(),
        Some(prompt_tokens - 1)
    );
    assert_eq!(again["timings"]["prompt_n"], 1);
    // `/status` counts what every answer evaluated: the first prompt whole, then one token.
    let (_, status) = http(&host.authority, "GET", "/status", None);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        status["prompt_tokens_evaluated"].as_u64(),
        Some(prompt_tokens + 1)
    );

    // A conversation that goes on: the previous prompt is a prefix of the new one.
    let mut longer = messages.as_array().unwrap().clone();
    longer.push(json!({"role": "assistant", "content": text}));
    longer.push(json!({"role": "user", "content": "Now rename y to z."}));
    let (_, next) = post(
        &host.authority,
        "/v1/chat/completions",
        &chat_body(json!(longer), 4),
    );
    let cached = next["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        cached >= prompt_tokens,
        "cached {cached} of a prompt that begins with the {prompt_tokens} of the last"
    );

    // Streamed: the same text as the whole answer, in SSE chunks, then usage and [DONE].
    let mut body = chat_body(messages.clone(), 12);
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let (status, sse) = http(
        &host.authority,
        "POST",
        "/v1/chat/completions",
        Some(&body.to_string()),
    );
    assert_eq!(status, 200);
    let events: Vec<Value> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let streamed: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(streamed, text);
    assert!(sse.trim_end().ends_with("data: [DONE]"));
    assert_eq!(events.last().unwrap()["usage"]["completion_tokens"], 12);
    assert!(
        events
            .iter()
            .any(|e| e["choices"][0]["finish_reason"] == "length")
    );

    // Completions: plain text goes through; a suffix needs fill-in-the-middle tokens, which
    // the tiny model has none of.
    let (status, done) = post(
        &host.authority,
        "/v1/completions",
        &json!({"prompt": "def f(", "max_tokens": 3, "temperature": 0}),
    );
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["usage"]["completion_tokens"], 3);
    let (status, refused) = post(
        &host.authority,
        "/v1/completions",
        &json!({"prompt": "def f(", "suffix": ")", "max_tokens": 3}),
    );
    assert_eq!(status, 400);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no fill-in-the-middle tokens")
    );

    // Bad requests: clear errors, and the host goes on answering.
    let (status, text) = http(
        &host.authority,
        "POST",
        "/v1/chat/completions",
        Some("{not json"),
    );
    assert_eq!(status, 400);
    assert!(text.contains("invalid JSON"), "{text}");
    let (status, missing) = post(
        &host.authority,
        "/v1/chat/completions",
        &json!({"model": "tiny"}),
    );
    assert_eq!(status, 400);
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messages")
    );
    let huge = "word ".repeat(2000);
    let (status, long) = post(
        &host.authority,
        "/v1/chat/completions",
        &chat_body(json!([{"role": "user", "content": huge}]), 4),
    );
    assert_eq!(status, 400);
    assert_eq!(long["error"]["type"], "exceed_context_size_error");
    assert!(
        long["error"]["message"]
            .as_str()
            .unwrap()
            .contains("context window is 512")
    );
    let (status, bad) = post(
        &host.authority,
        "/v1/chat/completions",
        &json!({"messages": [], "max_tokens": "many"}),
    );
    assert_eq!(status, 400, "{bad}");
    let (status, _) = http(&host.authority, "GET", "/nowhere", None);
    assert_eq!(status, 404);

    // A forced tool: a real tool call whose arguments follow the tool's schema (a grammar).
    let tools = json!([{"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"line": {"type": "integer"}}, "required": ["line"]}}}]);
    let mut forced = chat_body(json!([{"role": "user", "content": "read line 3"}]), 24);
    forced["tools"] = tools.clone();
    forced["tool_choice"] = json!({"type": "function", "function": {"name": "read_file"}});
    let (status, call) = post(&host.authority, "/v1/chat/completions", &forced);
    assert_eq!(status, 200, "{call}");
    let tool_call = &call["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(tool_call["function"]["name"], "read_file", "{call}");
    let arguments = tool_call["function"]["arguments"].as_str().unwrap();
    let arguments: String = arguments.split_whitespace().collect();
    assert!(arguments.starts_with("{\"line\""), "{arguments}");
    forced["tool_choice"] = json!({"type": "function", "function": {"name": "write_file"}});
    let (status, refused) = post(&host.authority, "/v1/chat/completions", &forced);
    assert_eq!(status, 400);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not among the tools")
    );
    let (status, _) = post(
        &host.authority,
        "/v1/chat/completions",
        &chat_body(messages, 2),
    );
    assert_eq!(status, 200);
}

/// An embedding model (the tiny model, mean-pooled) answers `/v1/embeddings` as OpenAI does:
/// one vector of unit length per text, in order, as numbers or as base64 (what OpenAI's own
/// client asks for); a text longer than the window is cut, not a crash; it refuses prompts, and
/// a chat model refuses embeddings, each saying why.
#[test]
fn an_embedding_model_serves_vectors_and_a_chat_model_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let encoder = dir.path().join("tiny-encoder.gguf");
    gguf::write_tiny_encoder(&encoder);
    let served = Served::start(&encoder, &[]);
    let texts = json!([
        "the widget redraws",
        "the cache evicts",
        "the widget redraws"
    ]);
    let (status, body) = post(
        &served.authority,
        "/v1/embeddings",
        &json!({"model": "tiny-encoder", "input": texts}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "list");
    let vectors: Vec<Vec<f64>> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, item)| {
            assert_eq!(
                (item["index"].as_u64(), &item["object"]),
                (Some(i as u64), &json!("embedding"))
            );
            item["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(vectors.len(), 3);
    for v in &vectors {
        assert_eq!(v.len(), 64, "the model's embedding length");
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "unit length: {norm}");
    }
    assert_eq!(vectors[0], vectors[2], "the same text, the same vector");
    assert_ne!(vectors[0], vectors[1]);
    assert!(
        body["usage"]["prompt_tokens"].as_u64().unwrap() > 0,
        "{body}"
    );

    let (status, one) = post(
        &served.authority,
        "/v1/embeddings",
        &json!({"input": "the widget redraws", "encoding_format": "base64"}),
    );
    assert_eq!(status, 200, "{one}");
    let bytes = base64_decode(one["data"][0]["embedding"].as_str().unwrap());
    let decoded: Vec<f32> = bytes
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    // JSON writes each f32 in its shortest form, which reads back as the same f32.
    let as_f32: Vec<f32> = vectors[0].iter().map(|x| *x as f32).collect();
    assert_eq!(decoded, as_f32);

    // Longer than the 2,048-token window: cut to it (llama.cpp aborts on a batch past it).
    let long = "redraw ".repeat(600);
    let (status, cut) = post(
        &served.authority,
        "/v1/embeddings",
        &json!({"input": [long]}),
    );
    assert_eq!(status, 200, "{cut}");
    assert_eq!(cut["usage"]["prompt_tokens"], 2048, "{cut}");

    let (_, status_body) = http(&served.authority, "GET", "/status", None);
    let record: Value = serde_json::from_str(&status_body).unwrap();
    assert_eq!(record["texts_embedded"], 5, "{record}");

    let (_chat_dir, chat_model) = tiny();
    let chat = Served::start(&chat_model, &[]);
    let embeddings = "/v1/embeddings";
    for (host, path, request, says) in [
        (
            &served,
            embeddings,
            json!({"input": ["fine", " "]}),
            "input 1 is empty",
        ),
        (
            &served,
            embeddings,
            json!({"input": [[1, 2, 3]]}),
            "token arrays are not served",
        ),
        (
            &served,
            embeddings,
            json!({"input": []}),
            "expected 1 to 2048 texts",
        ),
        (
            &served,
            embeddings,
            json!({"input": "x", "encoding_format": "int8"}),
            "unknown encoding_format",
        ),
        (
            &served,
            "/v1/chat/completions",
            chat_body(json!([{"role": "user", "content": "hi"}]), 4),
            "is an embedding model",
        ),
        (
            &chat,
            embeddings,
            json!({"input": "the widget redraws"}),
            "has no pooling to turn a text into one vector",
        ),
    ] {
        let (status, refused) = post(&host.authority, path, &request);
        assert_eq!(status, 400, "{path} {request}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{path} {request}: {message}");
    }
}

/// Standard base64 (with padding), as OpenAI's client decodes an embedding.
fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|c| *c != b'=') {
        let value = ALPHABET
            .iter()
            .position(|a| *a == c)
            .expect("a base64 character") as u32;
        acc = (acc << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[test]
fn a_client_that_disconnects_stops_the_decoding_and_a_queued_one_is_skipped() {
    let (_dir, model) = tiny();
    let host = Served::start(&model, &[]);
    let mut body = chat_body(
        json!([{"role": "user", "content": "Write a long story."}]),
        100_000,
    );
    body["stream"] = json!(true);
    let request = body.to_string();
    let send = |request: &str| {
        let mut stream = TcpStream::connect(&host.authority).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        write!(
            stream,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{request}",
            request.len()
        )
        .unwrap();
        stream
    };
    // The first client reads until the model has written some text, then hangs up.
    let first = send(&request);
    // A second client queues behind it and hangs up before its turn.
    let second = send(&request);
    let mut reader = BufReader::new(first.try_clone().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the stream ended early"
        );
        if line.contains("\"content\":\"") && !line.contains("\"content\":\"\"") {
            break;
        }
    }
    // The host has the second request in its queue before its client hangs up.
    let began = Instant::now();
    loop {
        let (_, status) = http(&host.authority, "GET", "/status", None);
        let status: Value = serde_json::from_str(&status).unwrap();
        if status["received"] == 2 {
            break;
        }
        assert!(
            began.elapsed() < PATIENCE,
            "the second request never arrived: {status}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(second);
    // The host notices the second client gone at its next heartbeat, before its turn: it is
    // no longer in flight (the first may be done already too, when the tiny model wrote its
    // whole window before the hang-up).
    let began = Instant::now();
    loop {
        let (_, status) = http(&host.authority, "GET", "/status", None);
        let status: Value = serde_json::from_str(&status).unwrap();
        if status["in_flight"].as_u64().is_some_and(|n| n <= 1) {
            break;
        }
        assert!(
            began.elapsed() < PATIENCE,
            "the second client is still served: {status}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(reader);
    drop(first);
    let began = Instant::now();
    let status = loop {
        let (_, status) = http(&host.authority, "GET", "/status", None);
        let status: Value = serde_json::from_str(&status).unwrap();
        if status["answered"] == 2 {
            break status;
        }
        assert!(began.elapsed() < PATIENCE, "still decoding: {status}");
        std::thread::sleep(Duration::from_millis(20));
    };
    // The last answer is the second one: skipped when its turn came (0 tokens), or, when the
    // tiny model had already written its whole window for the first client before the
    // second's hang-up was noticed, stopped as soon as it was — never run to the end.
    assert_eq!(status["last"]["finish"], "cancelled", "{status}");
    let generated = status["last"]["usage"]["completion_tokens"]
        .as_u64()
        .unwrap();
    assert!(generated < u64::from(gguf::CONTEXT) - 40, "{status}");
    // The host still answers.
    let (status, answer) = post(
        &host.authority,
        "/v1/chat/completions",
        &chat_body(json!([{"role": "user", "content": "hi"}]), 3),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["usage"]["completion_tokens"], 3);
}

#[test]
fn the_first_answer_of_a_cancelled_pair_stops_before_the_window_is_full() {
    let (_dir, model) = tiny();
    let host = Served::start(&model, &[]);
    let mut body = chat_body(
        json!([{"role": "user", "content": "Go on forever."}]),
        100_000,
    );
    body["stream"] = json!(true);
    let request = body.to_string();
    let mut stream = TcpStream::connect(&host.authority).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{request}",
        request.len()
    )
    .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0);
        if line.contains("\"content\":\"") && !line.contains("\"content\":\"\"") {
            break;
        }
    }
    drop(reader);
    drop(stream);
    let began = Instant::now();
    let status = loop {
        let (_, status) = http(&host.authority, "GET", "/status", None);
        let status: Value = serde_json::from_str(&status).unwrap();
        if status["answered"] == 1 {
            break status;
        }
        assert!(began.elapsed() < PATIENCE);
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status["last"]["finish"], "cancelled", "{status}");
    let generated = status["last"]["usage"]["completion_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        generated < u64::from(gguf::CONTEXT) - 40,
        "generated {generated} tokens for a client that left"
    );
}

/// Runs `patchwise model host` for the tiny model with a short idle time; its JSON line.
fn model_host(home: &Path, model: &Path, idle_secs: u32) -> Value {
    let output = patchwise(home)
        .args(["model", "host"])
        .arg(model)
        .args(["--context", "512", "--threads", "1", "--idle-secs"])
        .arg(idle_secs.to_string())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn alive(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn two_processes_share_one_host_which_restarts_after_a_kill_and_exits_when_idle() {
    let (dir, model) = tiny();
    let home = dir.path();
    // Two processes ask at once: one starts the host, the other waits on the lock and finds it.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| model_host(home, &model, 600));
        let b = s.spawn(|| model_host(home, &model, 600));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(a["pid"], b["pid"], "{a} {b}");
    assert_eq!(a["url"], b["url"]);
    let pid = a["pid"].as_u64().unwrap();
    assert!(alive(pid));

    // Killed mid-life (as a crash or the OOM killer would): the next request starts a new one.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    let began = Instant::now();
    while alive(pid) {
        assert!(began.elapsed() < PATIENCE);
        std::thread::sleep(Duration::from_millis(20));
    }
    let c = model_host(home, &model, 1);
    let restarted = c["pid"].as_u64().unwrap();
    assert_ne!(restarted, pid);
    let authority = support::host_authority(&c);
    let (status, answer) = post(
        &authority,
        "/v1/chat/completions",
        &chat_body(json!([{"role": "user", "content": "hi"}]), 2),
    );
    assert_eq!(status, 200, "{answer}");

    // With nothing to do for its idle second it exits and takes its address with it.
    let hosts = home.join("data/patchwise/hosts");
    let began = Instant::now();
    while alive(restarted) {
        assert!(began.elapsed() < PATIENCE, "the idle host did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
    let announced: Vec<_> = std::fs::read_dir(&hosts)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert!(announced.is_empty(), "{announced:?}");
}

#[test]
fn bad_model_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let not_gguf = dir.path().join("page.gguf");
    std::fs::write(&not_gguf, "<html>404</html>").unwrap();
    let truncated = dir.path().join("cut.gguf");
    let bytes = gguf::tiny_model_bytes();
    std::fs::write(&truncated, &bytes[..300]).unwrap();
    let alien = dir.path().join("alien.gguf");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert!(text.contains("llama"));
    // Same length, an architecture llama.cpp does not know.
    let mut alien_bytes = bytes.clone();
    let at = alien_bytes.windows(5).position(|w| w == b"llama").unwrap();
    alien_bytes[at..at + 5].copy_from_slice(b"zzzzz");
    std::fs::write(&alien, alien_bytes).unwrap();
    for (file, says) in [
        (&not_gguf, "is not a GGUF model file"),
        (&truncated, "broken GGUF header"),
        (&alien, "could not load"),
        (&dir.path().join("missing.gguf"), "no GGUF file at"),
    ] {
        let output = patchwise(dir.path())
            .args(["model", "serve"])
            .arg(file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(says), "{file:?}: {stderr}");
    }
    // Cut inside the tensors rather than the header: the header says how long it must be.
    std::fs::write(&truncated, &bytes[..bytes.len() - 100]).unwrap();
    let output = patchwise(dir.path())
        .args(["model", "serve"])
        .arg(&truncated)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("is truncated"));
}

/// A workspace whose configuration puts the data dir in `home` and nothing else.
/// The configuration of a workspace with `[providers.mine]`, the tiny model inside patchwise
/// (one thread, a 1,024-token window), and `more` (`{path:?}` in it is the model's path); the
/// host is this test binary's patchwise.
fn embedded_config(home: &Path, model: &Path, more: &str) -> patchwise::config::Config {
    let path = format!("{:?}", model.display().to_string());
    let ws = workspace_config(
        home,
        &format!(
            "[providers.mine]\nkind = \"embedded\"\nmodel = {path}\nthreads = 1\ncontext = 1024\nidle_minutes = 1\n{}",
            more.replace("{path:?}", &path)
        ),
    );
    // SAFETY (test): set before any thread of this test reads the environment.
    unsafe {
        std::env::set_var("PATCHWISE_HOST_PROGRAM", bin());
    }
    let (config, problems) =
        patchwise::config::Config::load_from(&patchwise::config::ConfigPaths {
            user: None,
            workspace: Some(ws.join(".patchwise/config.toml")),
        });
    assert!(problems.is_empty(), "{problems:?}");
    config
}

fn workspace_config(home: &Path, extra: &str) -> PathBuf {
    let ws = home.join("ws");
    std::fs::create_dir_all(ws.join(".patchwise")).unwrap();
    std::fs::write(
        ws.join(".patchwise/config.toml"),
        format!(
            "data_dir = {:?}\n[timeouts]\nconnect = 1\n{extra}",
            home.join("data/patchwise").display().to_string()
        ),
    )
    .unwrap();
    ws
}

#[test]
fn doctor_and_init_name_the_pull_command_without_a_model_and_use_one_that_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let ws = workspace_config(home, "");
    let doctor = |ws: &Path| {
        let output = patchwise(home)
            .args(["doctor", "--json", "--workspace"])
            .arg(ws)
            .output()
            .unwrap();
        (
            output.status.code(),
            serde_json::from_slice::<Value>(&output.stdout).unwrap(),
        )
    };
    let (code, report) = doctor(&ws);
    assert_eq!(code, Some(1));
    let coder = &report["roles"][0];
    assert!(
        coder["detail"]
            .as_str()
            .unwrap()
            .contains("patchwise model pull qwen2.5-coder-1.5b"),
        "{coder}"
    );
    let init = patchwise(home)
        .args(["init", "--offline", "--workspace"])
        .arg(home.join("other"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&init.stdout).contains("run `patchwise model pull`"));

    // A model downloaded into the data dir: it serves every role.
    let models = home.join("data/patchwise/models");
    std::fs::create_dir_all(&models).unwrap();
    gguf::write_tiny_model(&models.join("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"));
    let (code, report) = doctor(&ws);
    assert_eq!(code, Some(0), "{report}");
    let coder = &report["roles"][0];
    assert_eq!(coder["provider"], "embedded");
    assert_eq!(coder["model"], "qwen2.5-coder-1.5b");
    assert!(
        coder["detail"]
            .as_str()
            .unwrap()
            .contains("the model inside patchwise"),
        "{coder}"
    );
    assert!(
        coder["detail"]
            .as_str()
            .unwrap()
            .contains("because no model server answers"),
        "{coder}"
    );

    let other = home.join("third");
    std::fs::create_dir_all(other.join(".patchwise")).unwrap();
    std::fs::write(
        other.join(".patchwise/config.toml"),
        format!(
            "data_dir = {:?}\n",
            home.join("data/patchwise").display().to_string()
        ),
    )
    .unwrap();
    let init = patchwise(home)
        .args(["init", "--offline", "--force", "--workspace"])
        .arg(&other)
        .output()
        .unwrap();
    assert!(init.status.success());
    let written = std::fs::read_to_string(other.join(".patchwise/config.toml")).unwrap();
    assert!(written.contains("kind = \"embedded\""), "{written}");
    assert!(
        written.contains("model = \"qwen2.5-coder-1.5b\""),
        "{written}"
    );
    assert!(written.contains("coder = \"embedded\""), "{written}");
    let (code, report) = doctor(&other);
    assert_eq!(code, Some(0), "{report}");
}

#[test]
fn an_embedded_provider_answers_through_the_router_and_restarts_a_dead_host() {
    let (dir, model) = tiny();
    let home = dir.path();
    let config = embedded_config(
        home,
        &model,
        "[providers.wide]\nkind = \"embedded\"\nmodel = {path:?}\ncontext = 99999\n\
         [roles]\ncoder = \"mine\"\njudge = \"wide\"\n",
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let router = patchwise::model::ModelRouter::new(config);
        let model = router
            .model(patchwise::model::ModelRole::Coder, Default::default())
            .await
            .unwrap();
        assert_eq!(model.name(), "mine/tiny");
        assert_eq!(model.context_window(), 1024);
        // A window larger than the model was trained with is cut to the trained one.
        let wide = router
            .model(patchwise::model::ModelRole::Judge, Default::default())
            .await
            .unwrap();
        assert_eq!(wide.context_window(), gguf::CONTEXT as usize);
        let ask = || {
            let mut request = patchwise::model::ChatRequest {
                messages: vec![patchwise::model::Message::user("say something")],
                ..Default::default()
            };
            request.options.max_tokens = Some(5);
            request.options.temperature = Some(0.0);
            request
        };
        let answer = patchwise::model::collect(model.chat(ask(), Default::default()))
            .await
            .unwrap();
        assert!(!answer.text.is_empty());
        assert_eq!(answer.usage.output_tokens, 5);

        // The host dies; the next request starts another.
        let hosts = home.join("data/patchwise/hosts");
        let announced = std::fs::read_dir(&hosts)
            .unwrap()
            .filter_map(Result::ok)
            .find(|e| e.path().extension().is_some_and(|x| x == "json"))
            .unwrap()
            .path();
        let host: Value =
            serde_json::from_str(&std::fs::read_to_string(&announced).unwrap()).unwrap();
        let pid = host["pid"].as_u64().unwrap();
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let again = patchwise::model::collect(model.chat(ask(), Default::default()))
            .await
            .unwrap();
        assert_eq!(
            again.text, answer.text,
            "greedy answers are the same from a new host"
        );
        let host: Value =
            serde_json::from_str(&std::fs::read_to_string(&announced).unwrap()).unwrap();
        assert_ne!(host["pid"].as_u64().unwrap(), pid);
        unsafe {
            libc::kill(host["pid"].as_u64().unwrap() as i32, libc::SIGKILL);
        }
    });
}

#[test]
fn a_completion_role_on_the_embedded_model_fills_in_the_middle_and_reuses_the_prompt() {
    let (dir, model) = tiny();
    let home = dir.path();
    let config = embedded_config(home, &model, "[roles]\ncompletion = \"mine\"\n");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        use patchwise::complete::fim::FimInput;
        use patchwise::complete::{FimRequest, provider};
        let fim = provider::choose(&config).await.unwrap();
        assert_eq!(fim.name(), "mine/tiny");
        let request = |prefix: &str| FimRequest {
            input: FimInput {
                path: "app.py".into(),
                prefix: prefix.into(),
                suffix: "\n\nprint(add(1, 2))\n".into(),
                extra: Vec::new(),
            },
            max_tokens: 6,
            one_line: false,
            write_until: Some(std::time::Instant::now() + Duration::from_secs(30)),
        };
        let first = fim
            .complete(&request("def add(a, b):\n    "))
            .await
            .unwrap();
        let read_first = first.evaluated_tokens.expect("the host says what it read");
        assert!(read_first > 5, "{first:?}");
        // A keystroke later the host reads only what changed: the typed text and the suffix
        // after it (the text before them is its cached prefix).
        let typed = fim
            .complete(&request("def add(a, b):\n    r"))
            .await
            .unwrap();
        let read_typed = typed.evaluated_tokens.expect("the host says what it read");
        assert!(read_typed < read_first, "{read_typed} of {read_first}");
        // The same prompt again: greedy, the same answer.
        let again = fim
            .complete(&request("def add(a, b):\n    "))
            .await
            .unwrap();
        assert_eq!(again.text, first.text);

        let hosts = home.join("data/patchwise/hosts");
        for entry in std::fs::read_dir(&hosts).unwrap().filter_map(Result::ok) {
            if entry.path().extension().is_some_and(|x| x == "json") {
                let host: Value =
                    serde_json::from_str(&std::fs::read_to_string(entry.path()).unwrap()).unwrap();
                unsafe {
                    libc::kill(host["pid"].as_u64().unwrap() as i32, libc::SIGKILL);
                }
            }
        }
    });
}

/// A stand-in for the Hugging Face hub on loopback: `GET /{repo}/resolve/main/{file}` with
/// range requests, and the headers the hub sends (`x-repo-commit`, `x-linked-etag` with the
/// file's sha256, `content-range`).
fn fake_hub(content: Vec<u8>, etag: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let content = content.clone();
            let etag = etag.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut range = None;
                let mut line = String::new();
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(value) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                        let (a, b) = value.trim().split_once('-').unwrap();
                        let a: usize = a.parse().unwrap();
                        let b: usize = b
                            .parse::<usize>()
                            .unwrap_or(content.len() - 1)
                            .min(content.len() - 1);
                        range = Some((a, b));
                    }
                }
                let (a, b) = range.unwrap_or((0, content.len() - 1));
                let body = &content[a..=b];
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nx-repo-commit: 0123456789abcdef0123456789abcdef01234567\r\nx-linked-etag: \"{etag}\"\r\ncontent-range: bytes {a}-{b}/{}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    content.len(),
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body);
            });
        }
    });
    format!("http://{address}")
}

#[test]
fn pull_downloads_checks_the_sha256_and_never_leaves_a_bad_file_under_its_name() {
    let content = gguf::tiny_model_bytes();
    let sha = {
        use sha2::Digest;
        sha2::Sha256::digest(&content)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let dest = home.join("data/patchwise/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");

    // The hub says another sha256 than the bytes have: refused, nothing under the final name.
    let lying = fake_hub(content.clone(), "0".repeat(64));
    let output = patchwise(home)
        .env("HF_ENDPOINT", &lying)
        .args(["model", "pull", "qwen2.5-coder-0.5b"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is corrupt"), "{stderr}");
    assert!(!dest.exists());

    let hub = fake_hub(content.clone(), sha.clone());
    let output = patchwise(home)
        .env("HF_ENDPOINT", &hub)
        .args(["model", "pull", "qwen2.5-coder-0.5b"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains(&sha), "{stderr}");
    assert_eq!(std::fs::read(&dest).unwrap(), content);
    let list = patchwise(home)
        .args(["model", "list", "--json"])
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&list.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "qwen2.5-coder-0.5b")
        .unwrap();
    assert_eq!(row["bytes"], content.len());
    assert_eq!(row["detail"], "llama");

    // The hub out of reach: the error names the file to download by hand and where to put it.
    let output = patchwise(home)
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .args(["model", "pull", "qwen2.5-coder-3b"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("Download it by hand from https://huggingface.co/Qwen/Qwen2.5-Coder-3B-Instruct-GGUF/resolve/main/qwen2.5-coder-3b-instruct-q4_k_m.gguf"), "{stderr}");
    assert!(
        stderr.contains("models/qwen2.5-coder-3b-instruct-q4_k_m.gguf"),
        "{stderr}"
    );
    let output = patchwise(home)
        .args(["model", "pull", "gpt-17"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown model \"gpt-17\""));

    let output = patchwise(home)
        .args(["model", "rm", "qwen2.5-coder-0.5b"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(!dest.exists());
}

/// In an editor, with nothing configured, no server and no model: the edit's error, which the
/// editor shows, leads with the one command to run.
#[test]
fn an_editor_with_nothing_to_answer_is_told_to_run_model_pull() {
    use support::client::{RunFinished, TestServer};
    use tower_lsp_server::ls_types::Uri;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.py"), "def f():\n    return 1\n").unwrap();
    let (mut server, _) = TestServer::builder()
        .root(&ws)
        .config_home(&dir.path().join("config"))
        .initialization_options(json!({"data_dir": dir.path().join("data").display().to_string()}))
        .start();
    server.ignore::<tower_lsp_server::ls_types::notification::ShowMessage>();
    server.ignore::<tower_lsp_server::ls_types::notification::Progress>();
    server.ignore::<tower_lsp_server::ls_types::notification::LogMessage>();
    server.ignore_request::<tower_lsp_server::ls_types::request::WorkDoneProgressCreate>();
    let uri: Uri = format!("file://{}", ws.join("a.py").display())
        .parse()
        .unwrap();
    server.open(&uri, "python", "def f():\n    return 1\n", 1);
    let answer = server.command(
        "patchwise.edit",
        json!({"uri": uri, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 12}},
               "instruction": "return 2", "wait": true}),
    );
    let finished = server.notification::<RunFinished>();
    let message = answer.err().map(|e| e.message).or(finished.error).unwrap();
    assert!(
        message.contains(
            "no model server answers and no model is downloaded: run `patchwise model pull`"
        ),
        "{message}"
    );
}
