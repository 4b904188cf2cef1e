//! MCP's stdio framing — one JSON-RPC message per line — with answers for input a client should
//! never send. rmcp's own stdio transport drops unparsable lines and over-long messages without
//! a word, which leaves a client waiting forever; here every such line gets a JSON-RPC error
//! (`-32700` for bytes that are not JSON, `-32600` for JSON that is not an MCP message, a batch,
//! or a message past [`MAX_LINE_BYTES`]), with the request's id whenever it can be read, and
//! the connection stays up.
//!
//! Only complete lines are ever written to stdout, one writer at a time; nothing else in the
//! process may print there.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ErrorCode, JsonRpcMessage, JsonRpcRequest,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest message accepted: larger ones are answered with an error and skipped.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// MCP requests a client may send (rmcp treats any other method as a custom request).
const STANDARD_REQUESTS: [&str; 13] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
];

/// Newline-delimited JSON-RPC over a reader and a writer (stdin and stdout in production).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line read so far (kept across cancelled `receive` calls).
    line: Vec<u8>,
    /// Dropping the rest of an over-long line; the head kept to find its id.
    oversized: Option<Vec<u8>>,
    write: Arc<Mutex<W>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            oversized: None,
            write: Arc::new(Mutex::new(write)),
        }
    }

    /// Reads up to the next newline. `Ok(None)` at the end of input; an over-long line comes
    /// back as `Err(head)`.
    async fn next_line(&mut self) -> std::io::Result<Option<Result<Vec<u8>, Vec<u8>>>> {
        loop {
            // Cancellation-safe: nothing is consumed across an await, and the partial line
            // lives on `self`.
            let (used, done) = {
                let available = self.read.fill_buf().await?;
                if available.is_empty() {
                    return Ok(None);
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                let chunk = &available[..take];
                match &mut self.oversized {
                    Some(_) => {}
                    None if self.line.len() + take > MAX_LINE_BYTES => {
                        let mut head = std::mem::take(&mut self.line);
                        head.extend_from_slice(&chunk[..chunk.len().min(64 * 1024)]);
                        head.truncate(64 * 1024);
                        self.oversized = Some(head);
                    }
                    None => self.line.extend_from_slice(chunk),
                }
                (take, newline.is_some())
            };
            self.read.consume(used);
            if done {
                return Ok(Some(match self.oversized.take() {
                    Some(head) => Err(head),
                    None => Ok(std::mem::take(&mut self.line)),
                }));
            }
        }
    }

    /// Sends a JSON-RPC error from a spawned task, so a cancelled `receive` cannot cut it.
    fn answer_error(&self, id: Option<Value>, code: ErrorCode, message: String) {
        let line = json!({
            "jsonrpc": "2.0",
            "id": id.unwrap_or(Value::Null),
            "error": { "code": code.0, "message": message },
        });
        let write = self.write.clone();
        tokio::spawn(async move {
            if let Err(e) = write_line(&write, &line).await {
                tracing::warn!("cannot answer a malformed message: {e}");
            }
        });
    }

    /// What one line means: a message for the service, or nothing (answered or ignored here).
    fn decode(&self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!("unparsable message ({} bytes): {e}", line.len());
                self.answer_error(
                    None,
                    ErrorCode::PARSE_ERROR,
                    format!(
                        "parse error: the line is not JSON ({e}); send one JSON-RPC message per \
                         line"
                    ),
                );
                return None;
            }
        };
        if value.is_array() {
            self.answer_error(
                None,
                ErrorCode::INVALID_REQUEST,
                "invalid request: JSON-RPC batches are not part of MCP; send one message per line"
                    .to_owned(),
            );
            return None;
        }
        let id = value.get("id").filter(|id| is_id(id)).cloned();
        let method = value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let version_ok = value.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
        let is_response = value.get("result").is_some() || value.get("error").is_some();
        match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
            // rmcp reads a standard request whose params do not fit as a custom request and
            // would answer "method not found"; the method exists, the params are wrong.
            Ok(JsonRpcMessage::Request(JsonRpcRequest {
                request: ClientRequest::CustomRequest(custom),
                ..
            })) if STANDARD_REQUESTS.contains(&custom.method.as_str()) => {
                let detail = match custom.method.as_str() {
                    "tools/call" => serde_json::from_value::<CallToolRequestParams>(
                        custom.params.unwrap_or(Value::Null),
                    )
                    .err()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default(),
                    _ => String::new(),
                };
                self.answer_error(
                    id,
                    ErrorCode::INVALID_PARAMS,
                    format!("invalid params for `{}`{detail}", custom.method),
                );
                None
            }
            Ok(message) => Some(message),
            Err(e) => {
                match (&id, method) {
                    (Some(_), _) if !version_ok => self.answer_error(
                        id,
                        ErrorCode::INVALID_REQUEST,
                        "invalid request: expected \"jsonrpc\": \"2.0\"".to_owned(),
                    ),
                    (Some(_), Some(method)) => self.answer_error(
                        id,
                        ErrorCode::INVALID_PARAMS,
                        format!("invalid params for `{method}`: {e}"),
                    ),
                    (Some(_), None) if !is_response => self.answer_error(
                        id,
                        ErrorCode::INVALID_REQUEST,
                        format!("invalid request: no method ({e})"),
                    ),
                    // A notification (nobody waits) or an unreadable response: logged only.
                    _ => tracing::debug!("ignoring a message that is not MCP: {e}"),
                }
                None
            }
        }
    }
}

fn is_id(v: &Value) -> bool {
    v.is_string() || v.is_i64() || v.is_u64()
}

async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<W>,
    value: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value)?;
    bytes.push(b'\n');
    let mut w = write.lock().await;
    w.write_all(&bytes).await?;
    w.flush().await
}

/// The id of an over-long request, read from the head of the line before its `params` (clients
/// write `jsonrpc`, `id` and `method` first).
fn id_in_head(head: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(head);
    let before_params = text.split("\"params\"").next().unwrap_or(&text);
    let at = before_params.find("\"id\"")?;
    let rest = before_params[at + 4..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    stream.next()?.ok().filter(is_id)
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move { write_line(&write, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.next_line().await {
                Ok(None) => return None,
                Err(e) => {
                    tracing::error!("cannot read the client's messages: {e}");
                    return None;
                }
                Ok(Some(Err(head))) => {
                    tracing::warn!("refused a message of more than {MAX_LINE_BYTES} bytes");
                    self.answer_error(
                        id_in_head(&head),
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "message too large: more than {} MiB in one message; send smaller \
                             arguments (split a large edit into several)",
                            MAX_LINE_BYTES / (1024 * 1024)
                        ),
                    );
                }
                Ok(Some(Ok(line))) => {
                    if let Some(message) = self.decode(&line) {
                        return Some(message);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_id_of_a_cut_request() {
        assert_eq!(
            id_in_head(br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"x":"#),
            Some(json!(42))
        );
        assert_eq!(
            id_in_head(br#"{"jsonrpc":"2.0","id": "a-7","method":"x""#),
            Some(json!("a-7"))
        );
        // An `id` inside the params is not the request's.
        assert_eq!(
            id_in_head(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"id":3"#),
            None
        );
    }
}
