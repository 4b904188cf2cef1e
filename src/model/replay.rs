//! A tiny HTTP/1.1 server on 127.0.0.1 that replays recorded provider answers, so that tests
//! (here and in workflows, research and the LSP end-to-end suite) run against the providers'
//! real wire formats without the internet.
//!
//! A reply file (`fixtures/model/**.http`) is a raw HTTP response: comment lines starting with
//! `#` first (say where the format comes from), then the status line, headers, a blank line and
//! the body. Every connection takes the next reply (the last one repeats). Lines in the body
//! that read exactly `!hang` stop the answer there and hold the connection open, as a stuck
//! server would; a body that simply ends closes the connection — for an SSE stream, that is a
//! stream cut off early. [`Reply::Hang`] never answers at all. Each request is recorded for
//! assertions. This is test support: it never listens beyond loopback, and it is compiled only
//! with the `test-support` feature, which the crate's own dev-dependency on itself turns on for
//! the tests (`Cargo.toml`).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// One scripted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Status line and headers (LF-separated) and the body.
    Http { head: String, body: String },
    /// Read the request, then never answer.
    Hang,
    /// Read the request, then close the connection without a byte.
    Close,
}

impl Reply {
    /// Parses the raw-response text of a reply file.
    pub fn parse(text: &str) -> Reply {
        let text: String = text
            .lines()
            .skip_while(|l| l.starts_with('#') || l.trim().is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
        let (head, body) = match text.split_once("\n\n") {
            Some((head, body)) => (head.to_owned(), body.to_owned()),
            None => (text.trim_end().to_owned(), String::new()),
        };
        Reply::Http { head, body }
    }

    /// Reads a reply file.
    pub fn from_file(path: impl AsRef<Path>) -> std::io::Result<Reply> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(Reply::parse(&text))
    }

    /// A JSON answer with this status.
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply::Http {
            head: format!(
                "HTTP/1.1 {status} {}\ncontent-type: application/json",
                reason(status)
            ),
            body: body.to_string(),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Value::Null` if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// The running server; stops when dropped.
pub struct ReplayServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    disconnects: Arc<AtomicUsize>,
    stop: CancellationToken,
}

impl ReplayServer {
    /// Starts serving `replies` in order on a free port of 127.0.0.1.
    pub async fn start(replies: Vec<Reply>) -> std::io::Result<ReplayServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let disconnects = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let replies = Arc::new(replies);
        let served = Arc::new(Mutex::new(0usize));
        {
            let requests = requests.clone();
            let disconnects = disconnects.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                loop {
                    let accepted = tokio::select! {
                        _ = stop.cancelled() => return,
                        a = listener.accept() => a,
                    };
                    let Ok((socket, _)) = accepted else { continue };
                    let reply = {
                        let mut n = served.lock().unwrap_or_else(|e| e.into_inner());
                        let i = (*n).min(replies.len().saturating_sub(1));
                        *n += 1;
                        replies.get(i).cloned()
                    };
                    let requests = requests.clone();
                    let disconnects = disconnects.clone();
                    let stop = stop.clone();
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = stop.cancelled() => {}
                            _ = serve(socket, reply, requests, disconnects) => {}
                        }
                    });
                }
            });
        }
        Ok(ReplayServer {
            addr,
            requests,
            disconnects,
            stop,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many stalled answers ([`Reply::Hang`], `!hang`) the client walked away from.
    pub fn disconnects(&self) -> usize {
        self.disconnects.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve(
    mut socket: TcpStream,
    reply: Option<Reply>,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    disconnects: Arc<AtomicUsize>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(request);
    let reply = reply.unwrap_or(Reply::Http {
        head: "HTTP/1.1 500 Internal Server Error".to_owned(),
        body: "no reply scripted".to_owned(),
    });
    match reply {
        Reply::Hang => stall(&mut socket, &disconnects).await,
        Reply::Close => {}
        Reply::Http { head, body } => {
            let sse = head.to_ascii_lowercase().contains("text/event-stream");
            let mut out = head.lines().collect::<Vec<_>>().join("\r\n");
            out.push_str("\r\nconnection: close\r\n");
            let hang = body.lines().any(|l| l == "!hang");
            if !sse && !hang && !head.to_ascii_lowercase().contains("content-length") {
                out.push_str(&format!("content-length: {}\r\n", body.len()));
            }
            out.push_str("\r\n");
            if socket.write_all(out.as_bytes()).await.is_err() {
                return;
            }
            // Send the body in pieces (one SSE event at a time) so the client really reads a
            // stream, not one buffer.
            for piece in body.split_inclusive("\n\n") {
                if let Some(pos) = piece.lines().position(|l| l == "!hang") {
                    let before: String =
                        piece.lines().take(pos).map(|l| format!("{l}\n")).collect();
                    let _ = socket.write_all(before.as_bytes()).await;
                    let _ = socket.flush().await;
                    stall(&mut socket, &disconnects).await;
                    return;
                }
                if socket.write_all(piece.as_bytes()).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
                tokio::task::yield_now().await;
            }
            let _ = socket.shutdown().await;
        }
    }
}

/// Says nothing more; returns when the client closes the connection (and counts it).
async fn stall(socket: &mut TcpStream, disconnects: &AtomicUsize) {
    let mut sink = [0u8; 1024];
    loop {
        match socket.read(&mut sink).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    disconnects.fetch_add(1, Ordering::SeqCst);
}

async fn read_request(socket: &mut TcpStream) -> Option<RecordedRequest> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 || buffer.len() > 1 << 20 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

/// One answer in the OpenAI chat-completions streaming wire format (SSE): the text split in two
/// deltas, then each tool call as a start and an arguments delta, then `finish_reason` and
/// `[DONE]` — what llama.cpp, vLLM and OpenAI send.
pub fn openai_sse(text: &str, calls: &[(String, Value)], finish: &str) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(
        serde_json::json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if !text.is_empty() {
        let mid = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        for part in [&text[..mid], &text[mid..]] {
            chunks.push(chunk(serde_json::json!({ "content": part }), Value::Null));
        }
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        chunks.push(chunk(
            serde_json::json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        chunks.push(chunk(
            serde_json::json!({"tool_calls": [{"index": i, "function": {"arguments": args.to_string()}}]}),
            Value::Null,
        ));
    }
    chunks.push(chunk(serde_json::json!({}), serde_json::json!(finish)));
    let mut body = String::new();
    for c in chunks {
        body.push_str(&format!("data: {c}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    Reply::Http {
        head: "HTTP/1.1 200 OK\ncontent-type: text/event-stream".to_owned(),
        body,
    }
}
