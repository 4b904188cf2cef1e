//! The model host: `patchwise model serve`, the embedded runtime behind an OpenAI-compatible
//! HTTP server on loopback (`/v1/chat/completions` streamed as SSE or whole, `/v1/completions`
//! with fill-in-the-middle through the model's own tokens, `/v1/embeddings` when the model is an
//! embedding model, `/v1/models`, `/health`, `/status`), so every patchwise process reaches it
//! with the OpenAI wire it already speaks.
//!
//! One host per model on a machine: it announces its address in a file the starter named
//! (`model::embedded::host` reads it), answers requests one decode at a time in arrival order,
//! stops decoding when a client disconnects (the response body is dropped and sets the
//! request's cancel flag, which llama.cpp's abort callback reads), and exits after
//! `idle` with nothing to do, removing its address file. It never listens beyond 127.0.0.1.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::template::ChatTemplate;
use super::{
    AnswerStats, EmbedJob, Emit, Finish, Generation, Job, LoadedModel, Runtime, RuntimeError,
    RuntimeSpec,
};
use crate::model::embedded::host::Announcement;

/// How the host runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// 0: any free port.
    pub port: u16,
    /// Where to announce the address once the model is loaded (written atomically, removed at
    /// exit if it still names this process).
    pub announce: Option<PathBuf>,
    /// Exit after this long with no request; `None`: never.
    pub idle: Option<Duration>,
}

/// The largest request body read (a prompt of a whole context window is far smaller).
const MAX_BODY: usize = 32 * 1024 * 1024;

/// How often a streamed answer that has no token yet sends an SSE comment: a client that went
/// away is noticed at the next write, so this bounds how long a prompt keeps being read for
/// nobody.
const HEARTBEAT: Duration = Duration::from_millis(20);

struct State {
    runtime: Runtime,
    template: ChatTemplate,
    model: LoadedModel,
    started: Instant,
    last_activity: Mutex<Instant>,
    in_flight: AtomicUsize,
    served: AtomicU64,
}

/// Loads the model and serves until idle (or forever). Returns an error, before listening,
/// when the model cannot be loaded or its chat template does not compile.
pub fn serve(spec: RuntimeSpec, options: ServeOptions) -> anyhow::Result<()> {
    let runtime = Runtime::start(spec)?;
    let model = runtime.model.clone();
    let template = ChatTemplate::new(
        model.chat_template.as_deref(),
        &model.bos_token,
        &model.eos_token,
    )
    .map_err(|err| anyhow::anyhow!("{}: {err}", model.path.display()))?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let state = Arc::new(State {
        runtime,
        template,
        model,
        started: Instant::now(),
        last_activity: Mutex::new(Instant::now()),
        in_flight: AtomicUsize::new(0),
        served: AtomicU64::new(0),
    });
    let result = tokio.block_on(run(state, options));
    tokio.shutdown_timeout(Duration::from_millis(200));
    result
}

async fn run(state: Arc<State>, options: ServeOptions) -> anyhow::Result<()> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], options.port))).await?;
    let address = listener.local_addr()?;
    let announcement = Announcement {
        pid: std::process::id(),
        url: format!("http://{address}/v1"),
        model: state.model.path.clone(),
        context: state.model.context,
        started: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    };
    if let Some(path) = &options.announce {
        announcement.write(path)?;
    }
    tracing::info!(url = %announcement.url, model = %state.model.name, "model host listening");
    eprintln!(
        "patchwise model host: {} serving {}",
        announcement.url, state.model.name
    );
    let idle = async {
        match options.idle {
            Some(idle) => loop {
                tokio::time::sleep(Duration::from_millis(500).min(idle)).await;
                let quiet = state
                    .last_activity
                    .lock()
                    .map(|t| t.elapsed())
                    .unwrap_or_default();
                if state.in_flight.load(Ordering::SeqCst) == 0 && quiet >= idle {
                    break;
                }
            },
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(idle);
    loop {
        tokio::select! {
            _ = &mut idle => {
                tracing::info!("idle: the model host exits");
                break;
            }
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(route(state, req).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        }
    }
    if let Some(path) = &options.announce {
        Announcement::remove_if_own(path, std::process::id());
    }
    Ok(())
}

type Body = BoxBody<Bytes, Infallible>;

async fn route(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    touch(&state);
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/health") | (&Method::GET, "/v1/health") => {
            json_response(StatusCode::OK, json!({"status": "ok"}))
        }
        (&Method::GET, "/v1/models") | (&Method::GET, "/models") => json_response(
            StatusCode::OK,
            json!({"object": "list", "data": [{
                "id": state.model.name,
                "object": "model",
                "owned_by": "patchwise",
                "meta": {"n_ctx": state.model.context, "n_ctx_train": state.model.train_context},
            }]}),
        ),
        (&Method::GET, "/status") => {
            let record = state.runtime.record();
            let last = match &record.last {
                None => Value::Null,
                Some(Ok((finish, stats))) => json!({
                    "finish": finish_reason(*finish),
                    "usage": usage(stats),
                    "timings": timings(stats),
                }),
                Some(Err(err)) => json!({"finish": "error", "error": err.to_string()}),
            };
            json_response(
                StatusCode::OK,
                json!({
                    "pid": std::process::id(),
                    "model": state.model.name,
                    "path": state.model.path,
                    "context": state.model.context,
                    "in_flight": state.in_flight.load(Ordering::SeqCst),
                    "received": state.served.load(Ordering::SeqCst),
                    "answered": record.answered,
                    "prompt_tokens_evaluated": record.evaluated_tokens,
                    "texts_embedded": record.embedded_texts,
                    "uptime_secs": state.started.elapsed().as_secs(),
                    "last": last,
                }),
            )
        }
        (&Method::POST, "/v1/chat/completions")
        | (&Method::POST, "/chat/completions")
        | (&Method::POST, "/v1/completions")
        | (&Method::POST, "/completions")
            if state.model.embedding.is_some() =>
        {
            error_response(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &RuntimeError::NotAGenerator(state.model.name.clone()).to_string(),
            )
        }
        (&Method::POST, "/v1/embeddings") | (&Method::POST, "/embeddings") => {
            match read_json(req).await {
                Ok(body) => embeddings(state, body).await,
                Err(response) => response,
            }
        }
        (&Method::POST, "/v1/chat/completions") | (&Method::POST, "/chat/completions") => {
            match read_json(req).await {
                Ok(body) => chat(state, body),
                Err(response) => response,
            }
        }
        (&Method::POST, "/v1/completions") | (&Method::POST, "/completions") => {
            match read_json(req).await {
                Ok(body) => completion(state, body),
                Err(response) => response,
            }
        }
        (_, path) => error_response(
            StatusCode::NOT_FOUND,
            "not_found_error",
            &format!(
                "no endpoint {path}: this host serves /v1/chat/completions, /v1/completions, /v1/embeddings and /v1/models"
            ),
        ),
    }
}

fn touch(state: &State) {
    if let Ok(mut t) = state.last_activity.lock() {
        *t = Instant::now();
    }
}

async fn read_json(req: Request<Incoming>) -> Result<Value, Response<Body>> {
    let limited = http_body_util::Limited::new(req.into_body(), MAX_BODY);
    let bytes = match limited.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            return Err(error_response(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &format!("cannot read the request body (at most {MAX_BODY} bytes): {err}"),
            ));
        }
    };
    serde_json::from_slice(&bytes).map_err(|err| {
        error_response(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            &format!("expected a JSON object, found invalid JSON: {err}"),
        )
    })
}

/// The most texts one embeddings request may hold (OpenAI's own limit).
const MAX_INPUTS: usize = 2048;

/// `POST /v1/embeddings` as OpenAI answers it: `input` a text or a list of texts, each turned
/// into one vector of unit length, `encoding_format` `float` (the default) or `base64` (the
/// vector's little-endian f32 bytes, which OpenAI's own client asks for).
async fn embeddings(state: Arc<State>, body: Value) -> Response<Body> {
    let bad =
        |message: &str| error_response(StatusCode::BAD_REQUEST, "invalid_request_error", message);
    if state.model.embedding.is_none() {
        return bad(&RuntimeError::NotAnEncoder(state.model.name.clone()).to_string());
    }
    let texts: Vec<String> = match body.get("input") {
        Some(Value::String(text)) => vec![text.clone()],
        Some(Value::Array(items)) => {
            match items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
            {
                Some(texts) => texts,
                None => {
                    return bad(
                        "expected \"input\" to be a text or a list of texts (token arrays are not served)",
                    );
                }
            }
        }
        _ => return bad("expected \"input\": a text or a list of texts"),
    };
    if texts.is_empty() || texts.len() > MAX_INPUTS {
        return bad(&format!(
            "expected 1 to {MAX_INPUTS} texts in \"input\", found {}",
            texts.len()
        ));
    }
    let base64 = match body.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return bad(&format!(
                "unknown encoding_format {other:?}: ask for \"float\" or \"base64\""
            ));
        }
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let cancel = Arc::new(AtomicBool::new(false));
    state.in_flight.fetch_add(1, Ordering::SeqCst);
    // Dropped when the answer is sent or when the client goes away (hyper drops this future),
    // which sets the cancel flag the runtime reads between texts.
    let _guard = CancelOnDrop {
        cancel: cancel.clone(),
        state: state.clone(),
    };
    let job = EmbedJob {
        texts,
        reply,
        cancel,
    };
    if state.runtime.embed(job).is_err() {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "the model runtime has stopped; the next request starts a new host",
        );
    }
    let done = match answer.await {
        Ok(Ok(done)) => done,
        Ok(Err(err @ RuntimeError::EmptyInput { .. })) => return bad(&err.to_string()),
        Ok(Err(err)) => {
            return error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                &err.to_string(),
            );
        }
        Err(_) => {
            return error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "the model runtime stopped before it answered; the next request starts a new host",
            );
        }
    };
    state.served.fetch_add(1, Ordering::SeqCst);
    let data: Vec<Value> = done
        .vectors
        .iter()
        .enumerate()
        .map(|(index, vector)| {
            let embedding = if base64 {
                use base64::Engine as _;
                let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(vector)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    json_response(
        StatusCode::OK,
        json!({
            "object": "list",
            "data": data,
            "model": state.model.name,
            "usage": {"prompt_tokens": done.tokens, "total_tokens": done.tokens},
        }),
    )
}

/// The sampling settings every endpoint shares.
fn generation(body: &Value, prompt: String) -> Result<Generation, String> {
    let number = |key: &str| body.get(key).filter(|v| !v.is_null());
    let max_tokens = match number("max_completion_tokens").or_else(|| number("max_tokens")) {
        None => None,
        Some(v) => match v.as_i64() {
            Some(n) if n > 0 => Some(n.min(u32::MAX as i64) as u32),
            Some(_) => None,
            None => return Err(format!("expected max_tokens to be an integer, found {v}")),
        },
    };
    let float = |key: &str, default: f64| -> Result<f64, String> {
        match number(key) {
            None => Ok(default),
            Some(v) => v
                .as_f64()
                .filter(|f| f.is_finite())
                .ok_or_else(|| format!("expected {key} to be a number, found {v}")),
        }
    };
    let stop = match body.get("stop") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("expected stop strings, found {v}"))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!(
                "expected stop to be a string or a list, found {other}"
            ));
        }
    };
    Ok(Generation {
        prompt,
        max_tokens,
        temperature: float("temperature", 0.8)? as f32,
        top_p: float("top_p", 0.95)? as f32,
        repeat_penalty: float("repeat_penalty", 1.0)? as f32,
        frequency_penalty: float("frequency_penalty", 0.0)? as f32,
        presence_penalty: float("presence_penalty", 0.0)? as f32,
        seed: number("seed")
            .and_then(Value::as_u64)
            .map(|s| s as u32)
            .unwrap_or(0xFFFF_FFFF),
        stop,
        grammar: None,
    })
}

fn chat(state: Arc<State>, body: Value) -> Response<Body> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "expected \"messages\": a list of {role, content}",
        );
    };
    let prompt = match state.template.render(messages, body.get("tools")) {
        Ok(prompt) => prompt,
        Err(err) => return error_response(StatusCode::BAD_REQUEST, "invalid_request_error", &err),
    };
    let mut generation = match generation(&body, prompt) {
        Ok(g) => g,
        Err(err) => return error_response(StatusCode::BAD_REQUEST, "invalid_request_error", &err),
    };
    // A named `tool_choice`: the answer is that tool's arguments, held to its JSON schema by a
    // grammar, and comes back as a real tool call (as llama-cpp-python's server does).
    let forced = match forced_tool(&body) {
        Ok(forced) => forced,
        Err(err) => return error_response(StatusCode::BAD_REQUEST, "invalid_request_error", &err),
    };
    if let Some((_, schema)) = &forced {
        match super::grammar_for_schema(schema) {
            Ok(grammar) => generation.grammar = Some(grammar),
            Err(err) => {
                return error_response(StatusCode::BAD_REQUEST, "invalid_request_error", &err);
            }
        }
    }
    let endpoint = match forced {
        Some((name, _)) => Endpoint::ForcedTool(name),
        None => Endpoint::Chat,
    };
    answer(state, generation, &body, endpoint)
}

/// The tool a request forces (`tool_choice: {"type": "function", "function": {"name": …}}`)
/// and its parameters' schema.
fn forced_tool(body: &Value) -> Result<Option<(String, Value)>, String> {
    let Some(name) = body
        .pointer("/tool_choice/function/name")
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    let tool = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|t| t.pointer("/function/name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| format!("tool_choice names {name:?}, which is not among the tools"))?;
    let schema = tool
        .pointer("/function/parameters")
        .cloned()
        .filter(|s| s.is_object())
        .unwrap_or_else(|| json!({"type": "object"}));
    Ok(Some((name.to_owned(), schema)))
}

fn completion(state: Arc<State>, body: Value) -> Response<Body> {
    let prompt = match body.get("prompt") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) if parts.len() == 1 && parts[0].is_string() => {
            parts[0].as_str().unwrap_or_default().to_owned()
        }
        _ => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "expected \"prompt\": a string",
            );
        }
    };
    // A `suffix` asks for the text between prompt and suffix, in the model's own
    // fill-in-the-middle format.
    let prompt = match body.get("suffix").and_then(Value::as_str) {
        None => prompt,
        Some(suffix) => match &state.model.fim {
            Some(fim) => format!("{}{prompt}{}{suffix}{}", fim.prefix, fim.suffix, fim.middle),
            None => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_request_error",
                    &format!(
                        "{} has no fill-in-the-middle tokens: send the prompt without a suffix",
                        state.model.name
                    ),
                );
            }
        },
    };
    let generation = match generation(&body, prompt) {
        Ok(g) => g,
        Err(err) => return error_response(StatusCode::BAD_REQUEST, "invalid_request_error", &err),
    };
    answer(state, generation, &body, Endpoint::Completion)
}

#[derive(Clone, PartialEq, Eq)]
enum Endpoint {
    Chat,
    /// A chat answer that is the arguments of this tool.
    ForcedTool(String),
    Completion,
}

impl Endpoint {
    fn is_chat(&self) -> bool {
        !matches!(self, Endpoint::Completion)
    }
}

/// Sets the request's cancel flag when dropped before the answer ended: hyper drops the
/// response body when the client disconnects.
struct CancelOnDrop {
    cancel: Arc<AtomicBool>,
    state: Arc<State>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::SeqCst);
        self.state.in_flight.fetch_sub(1, Ordering::SeqCst);
        touch(&self.state);
    }
}

fn answer(
    state: Arc<State>,
    generation: Generation,
    body: &Value,
    endpoint: Endpoint,
) -> Response<Body> {
    let prompt_tokens = state.runtime.count_tokens(&generation.prompt);
    if prompt_tokens >= state.model.context as usize {
        return error_response(
            StatusCode::BAD_REQUEST,
            "exceed_context_size_error",
            &super::RuntimeError::ContextExceeded {
                prompt: prompt_tokens,
                window: state.model.context,
            }
            .to_string(),
        );
    }
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let (tx, rx) = mpsc::unbounded_channel();
    let cancel = Arc::new(AtomicBool::new(false));
    state.in_flight.fetch_add(1, Ordering::SeqCst);
    let guard = CancelOnDrop {
        cancel: cancel.clone(),
        state: state.clone(),
    };
    if state
        .runtime
        .submit(Job {
            generation,
            events: tx,
            cancel: cancel.clone(),
        })
        .is_err()
    {
        drop(guard);
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "the model runtime has stopped; the next request starts a new host",
        );
    }
    let id = format!(
        "{}-{}",
        if endpoint.is_chat() {
            "chatcmpl"
        } else {
            "cmpl"
        },
        state.served.fetch_add(1, Ordering::SeqCst)
    );
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let meta = Meta {
        id,
        created,
        model: state.model.name.clone(),
        endpoint,
    };
    if stream {
        streamed(rx, guard, meta, include_usage)
    } else {
        whole(rx, guard, meta)
    }
}

struct Meta {
    id: String,
    created: u64,
    model: String,
    endpoint: Endpoint,
}

impl Meta {
    fn chunk(&self, delta: Option<&str>, finish: Option<&str>, usage: Option<Value>) -> Value {
        let choice = match self.endpoint {
            Endpoint::Chat | Endpoint::ForcedTool(_) => json!({
                "index": 0,
                "delta": match delta { Some(text) => json!({"content": text}), None => json!({}) },
                "finish_reason": finish,
            }),
            Endpoint::Completion => json!({
                "index": 0,
                "text": delta.unwrap_or(""),
                "finish_reason": finish,
            }),
        };
        let mut chunk = json!({
            "id": self.id,
            "object": if self.endpoint.is_chat() { "chat.completion.chunk" } else { "text_completion" },
            "created": self.created,
            "model": self.model,
            "choices": if usage.is_some() && finish.is_none() && delta.is_none() { json!([]) } else { json!([choice]) },
        });
        if let Some(usage) = usage {
            chunk["usage"] = usage;
        }
        chunk
    }
}

/// One tool call as OpenAI writes it (`index` only in a stream's delta).
fn tool_call(id: &str, name: &str, arguments: &str, delta: bool) -> Value {
    let mut call = json!({
        "id": format!("call_{id}"),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    });
    if delta {
        call["index"] = json!(0);
    }
    call
}

fn usage(stats: &AnswerStats) -> Value {
    json!({
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "total_tokens": stats.prompt_tokens + stats.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": stats.cached_tokens},
    })
}

/// llama.cpp server's `timings` object, so a bench reads the same figures from either server.
fn timings(stats: &AnswerStats) -> Value {
    let evaluated = stats.prompt_tokens.saturating_sub(stats.cached_tokens);
    let per_second = |n: u32, ms: f64| {
        if ms > 0.0 {
            n as f64 * 1000.0 / ms
        } else {
            0.0
        }
    };
    json!({
        "cache_n": stats.cached_tokens,
        "prompt_n": evaluated,
        "prompt_ms": stats.prompt_ms,
        "prompt_per_second": per_second(evaluated, stats.prompt_ms),
        "predicted_n": stats.completion_tokens,
        "predicted_ms": stats.generation_ms,
        "predicted_per_second": per_second(stats.completion_tokens.saturating_sub(1), stats.generation_ms),
    })
}

fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "stop",
        Finish::Length => "length",
        Finish::Cancelled => "cancelled",
    }
}

fn streamed(
    mut rx: mpsc::UnboundedReceiver<Emit>,
    guard: CancelOnDrop,
    meta: Meta,
    include_usage: bool,
) -> Response<Body> {
    let events = async_stream(move |out: mpsc::Sender<Bytes>| async move {
        let _guard = guard;
        let sse = |value: &Value| Bytes::from(format!("data: {value}\n\n"));
        if meta.endpoint.is_chat() {
            let first = json!({
                "id": meta.id, "object": "chat.completion.chunk", "created": meta.created,
                "model": meta.model,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}],
            });
            if out.send(sse(&first)).await.is_err() {
                return;
            }
        }
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        // A forced tool call's arguments are sent whole, as one tool-call delta, at the end.
        let mut arguments = String::new();
        loop {
            let event = tokio::select! {
                event = rx.recv() => event,
                _ = heartbeat.tick() => {
                    if out.send(Bytes::from_static(b": waiting\n\n")).await.is_err() {
                        return;
                    }
                    continue;
                }
            };
            match event {
                Some(Emit::Text(text)) => {
                    heartbeat.reset();
                    if matches!(meta.endpoint, Endpoint::ForcedTool(_)) {
                        arguments.push_str(&text);
                        continue;
                    }
                    if out
                        .send(sse(&meta.chunk(Some(&text), None, None)))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Some(Emit::Done { finish, stats }) => {
                    let mut reason = finish_reason(finish);
                    if let Endpoint::ForcedTool(name) = &meta.endpoint
                        && finish != Finish::Cancelled
                    {
                        let call = json!({
                            "id": meta.id, "object": "chat.completion.chunk", "created": meta.created,
                            "model": meta.model,
                            "choices": [{"index": 0, "delta": {"tool_calls": [tool_call(&meta.id, name, &arguments, true)]}, "finish_reason": null}],
                        });
                        let _ = out.send(sse(&call)).await;
                        if finish == Finish::Stop {
                            reason = "tool_calls";
                        }
                    }
                    let mut last = meta.chunk(None, Some(reason), None);
                    last["timings"] = timings(&stats);
                    let _ = out.send(sse(&last)).await;
                    if include_usage {
                        let _ = out
                            .send(sse(&meta.chunk(None, None, Some(usage(&stats)))))
                            .await;
                    }
                    let _ = out.send(Bytes::from_static(b"data: [DONE]\n\n")).await;
                    return;
                }
                Some(Emit::Failed(err)) => {
                    let error =
                        json!({"error": {"message": err.to_string(), "type": "server_error"}});
                    let _ = out.send(sse(&error)).await;
                    return;
                }
                None => return,
            }
        }
    });
    let body = StreamBody::new(events.map(|bytes| Ok::<_, Infallible>(Frame::data(bytes))));
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(BodyExt::boxed(body))
        .unwrap_or_else(|_| Response::new(empty()))
}

fn whole(mut rx: mpsc::UnboundedReceiver<Emit>, guard: CancelOnDrop, meta: Meta) -> Response<Body> {
    // The answer is collected by a task that owns the guard: hyper cannot notice a client
    // leaving while it waits for a whole body, so the wait happens in the body's stream.
    let events = async_stream(move |out: mpsc::Sender<Bytes>| async move {
        let _guard = guard;
        let mut text = String::new();
        let outcome = loop {
            match rx.recv().await {
                Some(Emit::Text(piece)) => text.push_str(&piece),
                Some(Emit::Done { finish, stats }) => break Ok((finish, stats)),
                Some(Emit::Failed(err)) => break Err(err),
                None => return,
            }
        };
        let body = match outcome {
            Ok((finish, stats)) => {
                let reason = finish_reason(finish);
                let choice = match &meta.endpoint {
                    Endpoint::Chat => {
                        json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": reason})
                    }
                    Endpoint::ForcedTool(name) => json!({
                        "index": 0,
                        "message": {"role": "assistant", "content": "", "tool_calls": [tool_call(&meta.id, name, &text, false)]},
                        "finish_reason": if finish == Finish::Stop { "tool_calls" } else { reason },
                    }),
                    Endpoint::Completion => {
                        json!({"index": 0, "text": text, "finish_reason": reason})
                    }
                };
                json!({
                    "id": meta.id,
                    "object": if meta.endpoint.is_chat() { "chat.completion" } else { "text_completion" },
                    "created": meta.created,
                    "model": meta.model,
                    "choices": [choice],
                    "usage": usage(&stats),
                    "timings": timings(&stats),
                })
            }
            Err(err) => {
                json!({"error": {"message": err.to_string(), "type": "invalid_request_error"}})
            }
        };
        let _ = out.send(Bytes::from(body.to_string())).await;
    });
    let body = StreamBody::new(events.map(|bytes| Ok::<_, Infallible>(Frame::data(bytes))));
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(BodyExt::boxed(body))
        .unwrap_or_else(|_| Response::new(empty()))
}

/// A stream of the values `producer` sends; the producer runs as a task and is aborted when
/// the stream is dropped (so its guard drops with it).
fn async_stream<F, Fut>(producer: F) -> impl futures::Stream<Item = Bytes> + Send + 'static
where
    F: FnOnce(mpsc::Sender<Bytes>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(producer(tx));
    let abort = AbortOnDrop(task);
    futures::stream::unfold((rx, abort), |(mut rx, abort)| async move {
        rx.recv().await.map(|bytes| (bytes, (rx, abort)))
    })
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn empty() -> Body {
    BodyExt::boxed(Full::new(Bytes::new()))
}

fn json_response(status: StatusCode, value: Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(BodyExt::boxed(Full::new(Bytes::from(value.to_string()))))
        .unwrap_or_else(|_| Response::new(empty()))
}

fn error_response(status: StatusCode, kind: &str, message: &str) -> Response<Body> {
    json_response(
        status,
        json!({"error": {"message": message, "type": kind, "code": status.as_u16()}}),
    )
}
