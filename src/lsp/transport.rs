//! Stdio framing that survives malformed input.
//!
//! tower-lsp-server 0.23 decodes stdin with a `tokio_util` `FramedRead`, and a `FramedRead`
//! ends its stream at the first decoding error: one frame with a body that is not JSON (or not
//! UTF-8, or not JSON-RPC) silently ends the session as if the client had closed stdin. So the
//! server never sees raw stdin. A reader task parses frames itself, forwards the well-formed
//! ones, and answers the rest with the JSON-RPC error the spec asks for (`-32700` parse error,
//! `-32600` invalid request, id `null` when none can be read). Those answers are injected into
//! stdout between whole frames of the server's own output, which a writer task re-frames.
//!
//! The writer also keeps a promise tower-lsp-server cannot: that the notifications a request
//! caused (`publishDiagnostics` after an accept) reach the client *before* the request's
//! response. Its output loop picks between queued notifications and finished responses in
//! turn, so a response can overtake a notification sent just before it — and some JSON-RPC
//! clients (Emacs 28's jsonrpc) stop reading after the response. A handler therefore ends with
//! `Backend::flush`: it sends a marker notification after its last one and waits until the writer
//! has seen the marker, i.e. has written everything queued before it. The marker never
//! reaches the client.
//!
//! And it fills one gap of the protocol types: `ls_types` has no LSP 3.18 code action tags. The
//! reader notes whether `initialize` declares `codeAction.tagSupport` with `LLMGenerated` (1);
//! the server marks model-made code actions with `data.patchwiseLlm`, and the writer turns the
//! mark into `tags: [1]` for a client that supports it (and drops it for any other).

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt,
};
use tokio::sync::mpsc;

/// The method of the marker notification (`$/`: a client that saw one could ignore it).
pub const FLUSH_METHOD: &str = "$/patchwise/flushed";

/// The mark on a model-made code action's `data`, replaced by the `LLMGenerated` tag.
pub const LLM_MARK: &str = "patchwiseLlm";

/// LSP 3.18 `CodeActionTag.LLMGenerated`.
const LLM_GENERATED: u64 = 1;

/// What the reader and the writer share with the server: flush markers in flight (the writer
/// releases a waiting handler when its marker comes through) and what the client declared that
/// the typed capabilities drop.
#[derive(Debug, Default)]
pub struct TransportState {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, tokio::sync::oneshot::Sender<()>>>,
    llm_tag: AtomicBool,
}

impl TransportState {
    /// A fresh marker id and the receiver that fires when the writer has passed it.
    pub fn register(&self) -> (u64, tokio::sync::oneshot::Receiver<()>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.lock().insert(id, tx);
        (id, rx)
    }

    fn release(&self, id: u64) {
        if let Some(tx) = self.lock().remove(&id) {
            let _ = tx.send(());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, tokio::sync::oneshot::Sender<()>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes what `initialize` declares (a no-op for any other message).
    fn read_client(&self, body: &[u8]) {
        if memchr::memmem::find(body, b"tagSupport").is_none() {
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        if value.get("method").and_then(Value::as_str) != Some("initialize") {
            return;
        }
        let tags = &value["params"]["capabilities"]["textDocument"]["codeAction"]["tagSupport"]["valueSet"];
        let llm = tags
            .as_array()
            .is_some_and(|set| set.iter().any(|t| t.as_u64() == Some(LLM_GENERATED)));
        self.llm_tag.store(llm, Ordering::Relaxed);
    }

    /// A code action response with marked actions, tagged (or unmarked) for this client.
    fn tag_actions(&self, body: Vec<u8>) -> Vec<u8> {
        if memchr::memmem::find(&body, LLM_MARK.as_bytes()).is_none() {
            return body;
        }
        let Ok(mut value) = serde_json::from_slice::<Value>(&body) else {
            return body;
        };
        let Some(actions) = value.get_mut("result").and_then(Value::as_array_mut) else {
            return body;
        };
        let tag = self.llm_tag.load(Ordering::Relaxed);
        for action in actions.iter_mut() {
            let Some(data) = action.get_mut("data").and_then(Value::as_object_mut) else {
                continue;
            };
            if data.remove(LLM_MARK).is_none() {
                continue;
            }
            let empty = data.is_empty();
            if let Some(action) = action.as_object_mut() {
                if empty {
                    action.remove("data");
                }
                if tag {
                    action.insert("tags".to_owned(), serde_json::json!([LLM_GENERATED]));
                }
            }
        }
        serde_json::to_vec(&value).unwrap_or(body)
    }

    /// When `body` is a marker: releases its waiter and returns true (the frame is dropped).
    fn take_marker(&self, body: &[u8]) -> bool {
        if memchr::memmem::find(body, FLUSH_METHOD.as_bytes()).is_none() {
            return false;
        }
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            return false;
        };
        if value.get("method").and_then(Value::as_str) != Some(FLUSH_METHOD) {
            return false;
        }
        if let Some(id) = value["params"]["id"].as_u64() {
            self.release(id);
        }
        true
    }
}

/// A header line longer than this is garbage, not a header.
const MAX_HEADER_LINE: u64 = 64 * 1024;
/// Frames larger than this are refused (their bytes are skipped). A 50 MB document, JSON-escaped,
/// fits many times over.
const MAX_FRAME: usize = 1 << 30;

/// One unit read from the client.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A body that is valid UTF-8 JSON and a JSON-RPC message tower-lsp-server can decode.
    Message(Vec<u8>),
    /// Something that is not a valid message, already turned into the error response to send
    /// (or `None` when nothing should be answered, e.g. a broken notification).
    Malformed {
        reason: String,
        response: Option<Value>,
    },
}

/// Reads frames until end of input. `Ok(None)` at a clean end.
pub async fn read_frame<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<Frame>> {
    let mut length: Option<usize> = None;
    let mut bad_header: Option<String> = None;
    let mut line = Vec::new();
    let mut seen_any = false;
    loop {
        line.clear();
        let n = (&mut *reader)
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return Ok(if seen_any {
                Some(malformed("input ended inside a message header", None))
            } else {
                None
            });
        }
        let text = String::from_utf8_lossy(&line);
        let trimmed = text.trim_end_matches(['\r', '\n']);
        if trimmed.is_empty() {
            if !seen_any {
                continue; // stray blank line between frames
            }
            break;
        }
        seen_any = true;
        if !line.ends_with(b"\n") {
            bad_header.get_or_insert_with(|| "header line too long".to_owned());
            continue;
        }
        match trimmed.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => {
                        bad_header.get_or_insert_with(|| {
                            format!("Content-Length {:?} is not a number", value.trim())
                        });
                    }
                }
            }
            Some(_) => {} // Content-Type and unknown headers carry nothing we need
            None => {
                bad_header
                    .get_or_insert_with(|| format!("expected a header line, found {trimmed:?}"));
            }
        }
    }
    let Some(length) = length else {
        let reason = bad_header.unwrap_or_else(|| "message header without Content-Length".into());
        return Ok(Some(malformed(&reason, None)));
    };
    if length > MAX_FRAME {
        let skipped = tokio::io::copy(
            &mut (&mut *reader).take(length as u64),
            &mut tokio::io::sink(),
        )
        .await?;
        return Ok(Some(malformed(
            &format!(
                "message of {length} bytes is larger than the {MAX_FRAME}-byte limit ({skipped} bytes skipped)"
            ),
            None,
        )));
    }
    let mut body = Vec::new();
    (&mut *reader)
        .take(length as u64)
        .read_to_end(&mut body)
        .await?;
    if body.len() < length {
        return Ok(Some(malformed(
            &format!("input ended after {} of {length} body bytes", body.len()),
            None,
        )));
    }
    if let Some(reason) = bad_header {
        return Ok(Some(malformed(&reason, None)));
    }
    Ok(Some(check_body(body)))
}

/// Validates a body against what tower-lsp-server's decoder accepts.
fn check_body(body: Vec<u8>) -> Frame {
    let value: Value = match std::str::from_utf8(&body) {
        Err(err) => return malformed(&format!("message body is not UTF-8: {err}"), None),
        Ok(text) => match serde_json::from_str(text) {
            Ok(value) => value,
            Err(err) => return malformed(&format!("message body is not JSON: {err}"), None),
        },
    };
    let Some(object) = value.as_object() else {
        return invalid("a JSON-RPC message must be an object", &value);
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid("\"jsonrpc\" must be \"2.0\"", &value);
    }
    if let Some(id) = object.get("id") {
        let valid = id.is_null() || id.is_string() || id.as_i64().is_some();
        if !valid {
            return invalid("\"id\" must be an integer, a string or null", &Value::Null);
        }
    }
    match object.get("method") {
        Some(Value::String(_)) => Frame::Message(body),
        Some(_) => invalid("\"method\" must be a string", &value),
        None if object.contains_key("id")
            && (object.contains_key("result") || object.contains_key("error")) =>
        {
            Frame::Message(body)
        }
        None => invalid(
            "a message needs a \"method\" (request) or a \"result\"/\"error\" (response)",
            &value,
        ),
    }
}

fn malformed(reason: &str, id: Option<Value>) -> Frame {
    Frame::Malformed {
        reason: reason.to_owned(),
        response: Some(error_response(-32700, reason, id)),
    }
}

fn invalid(reason: &str, message: &Value) -> Frame {
    let id = message.get("id").cloned();
    let is_notification = message.get("method").is_some() && id.is_none();
    Frame::Malformed {
        reason: reason.to_owned(),
        // Notifications are never answered, not even with an error.
        response: (!is_notification).then(|| error_response(-32600, reason, id)),
    }
}

fn error_response(code: i64, reason: &str, id: Option<Value>) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": { "code": code, "message": reason },
    })
}

pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body);
    frame
}

/// Copies well-formed frames from `input` to `to_server`; answers malformed ones on `errors`.
/// Returns at the end of input, closing `to_server` so the server sees the end too.
pub async fn filter_input<R, W>(
    input: R,
    mut to_server: W,
    errors: mpsc::Sender<Vec<u8>>,
    wire: std::sync::Arc<TransportState>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = tokio::io::BufReader::with_capacity(1 << 16, input);
    loop {
        match read_frame(&mut reader).await {
            Ok(Some(Frame::Message(body))) => {
                wire.read_client(&body);
                if to_server.write_all(&encode(&body)).await.is_err() {
                    break; // the server stopped reading: it is exiting
                }
            }
            Ok(Some(Frame::Malformed { reason, response })) => {
                tracing::warn!("malformed message from the client: {reason}");
                if let Some(response) = response {
                    let _ = errors.send(encode(response.to_string().as_bytes())).await;
                }
            }
            Ok(None) => break,
            Err(err) => {
                tracing::error!("reading stdin failed: {err}");
                break;
            }
        }
    }
    let _ = to_server.shutdown().await;
}

/// Writes the server's frames and injected error frames to `output`, never interleaving inside
/// a frame, and releases flush markers once everything before them is written. Returns when
/// the server's output ends.
pub async fn merge_output<R, W>(
    from_server: R,
    mut errors: mpsc::Receiver<Vec<u8>>,
    mut output: W,
    wire: std::sync::Arc<TransportState>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = tokio::io::BufReader::with_capacity(1 << 16, from_server);
    let mut errors_open = true;
    loop {
        let frame = tokio::select! {
            biased;
            frame = read_frame(&mut reader) => match frame {
                Ok(Some(Frame::Message(body))) => {
                    if wire.take_marker(&body) {
                        continue;
                    }
                    encode(&wire.tag_actions(body))
                }
                Ok(Some(Frame::Malformed { reason, .. })) => {
                    tracing::error!("the server produced a malformed frame: {reason}");
                    continue;
                }
                Ok(None) | Err(_) => break,
            },
            injected = errors.recv(), if errors_open => match injected {
                Some(frame) => frame,
                None => {
                    errors_open = false;
                    continue;
                }
            },
        };
        if output.write_all(&frame).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
    // Errors for input that arrived just before the end still deserve an answer.
    while let Ok(frame) = errors.try_recv() {
        let _ = output.write_all(&frame).await;
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = tokio::io::BufReader::new(input);
        let mut out = Vec::new();
        while let Some(frame) = read_frame(&mut reader).await.unwrap() {
            out.push(frame);
        }
        out
    }

    fn code(frame: &Frame) -> Option<i64> {
        match frame {
            Frame::Malformed {
                response: Some(r), ..
            } => r["error"]["code"].as_i64(),
            _ => None,
        }
    }

    #[tokio::test]
    async fn good_and_bad_frames_are_told_apart_and_reading_goes_on() {
        let good = br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;
        let mut input = encode(good);
        input.extend(encode(b"{not json"));
        input.extend(encode(b"\xff\xfe"));
        input.extend(encode(br#"{"jsonrpc":"2.0","id":2.5,"method":"x"}"#));
        input.extend(encode(br#"{"jsonrpc":"1.0","id":7,"method":"x"}"#));
        input.extend(encode(br#"{"jsonrpc":"2.0","method":3}"#));
        input.extend(b"Content-Length: nope\r\n\r\n");
        input.extend(b"garbage line\r\nContent-Length: 2\r\n\r\n{}");
        input.extend(encode(good));
        let frames = frames(&input).await;
        assert_eq!(frames.len(), 9, "{frames:?}");
        assert_eq!(frames[0], Frame::Message(good.to_vec()));
        assert_eq!(code(&frames[1]), Some(-32700));
        assert_eq!(code(&frames[2]), Some(-32700));
        assert_eq!(code(&frames[3]), Some(-32600));
        assert_eq!(code(&frames[4]), Some(-32600));
        match &frames[4] {
            Frame::Malformed {
                response: Some(r), ..
            } => assert_eq!(r["id"], 7),
            other => panic!("{other:?}"),
        }
        assert!(matches!(frames[5], Frame::Malformed { .. }));
        assert_eq!(code(&frames[6]), Some(-32700));
        assert_eq!(code(&frames[7]), Some(-32700));
        assert_eq!(frames[8], Frame::Message(good.to_vec()));
    }

    #[tokio::test]
    async fn truncated_input_is_reported_not_hung() {
        let cut_body = frames(b"Content-Length: 100\r\n\r\n{\"jsonrpc\"").await;
        assert_eq!(cut_body.len(), 1);
        assert_eq!(code(&cut_body[0]), Some(-32700));
        let cut_header = frames(b"Content-Length: 5\r\n").await;
        assert_eq!(code(&cut_header[0]), Some(-32700));
    }

    #[tokio::test]
    async fn broken_notifications_are_not_answered() {
        let frames = frames(&encode(br#"{"jsonrpc":"1.0","method":"x"}"#)).await;
        assert!(matches!(frames[0], Frame::Malformed { response: None, .. }));
    }
}
