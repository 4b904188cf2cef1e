//! The HTTP half every provider shares: one pooled reqwest client, request sending with three
//! timeouts, retries with exponential backoff that honour `Retry-After`, SSE reading, and
//! cancellation.
//!
//! Provider modules only translate (`Wire`); this module decides when a failure may be retried:
//! only while nothing has reached the caller, so a caller never sees text twice. It never logs a
//! body or a header, and marks the key header sensitive so reqwest never prints it either.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::config::{
    Config, ProviderConfig, ProviderKind, RetryPolicy, Timeouts, ToolMode, is_loopback_url,
};
use crate::model::budget::{self, Budget};
use crate::model::text_tools::{self, ToolTextWatcher};
use crate::model::{
    ChatModel, ChatRequest, ChatStream, ModelError, StreamEvent, TimeoutPhase, anthropic, gemini,
    openai,
};

/// One request as a provider wants it sent.
pub struct WireRequest {
    pub url: String,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Value,
}

/// Why decoding an answer failed.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// Not the JSON shape the provider documents.
    Malformed { expected: String, found: String },
    /// The provider reported an error inside the answer (e.g. Anthropic's `overloaded_error`).
    Provider(String),
    /// The stream ended before its final event.
    EndedEarly(String),
}

/// Turns the SSE events of one answer into [`StreamEvent`]s.
pub trait StreamDecoder: Send {
    /// One SSE event (`event:` name, possibly empty, and `data:`).
    fn event(&mut self, name: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError>;
    /// Whether the provider's final event was seen (reading can stop).
    fn is_done(&self) -> bool;
    /// The transport ended: the remaining events, ending with `Done`, or why the answer is cut.
    fn end(&mut self) -> Result<Vec<StreamEvent>, DecodeError>;
}

/// A provider's wire format.
pub trait Wire: Send + Sync {
    fn build(
        &self,
        provider: &ProviderConfig,
        model: &str,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<WireRequest, ModelError>;
    /// A whole (non-streamed) answer body.
    fn parse_whole(&self, body: &Value) -> Result<Vec<StreamEvent>, DecodeError>;
    fn decoder(&self) -> Box<dyn StreamDecoder>;
}

/// The process-wide client for a connect timeout. In practice there is one (the timeout rarely
/// changes), so connections to a server are pooled across all roles and requests.
pub fn shared_client(connect_timeout: Duration) -> Result<reqwest::Client, ModelError> {
    static CLIENTS: OnceLock<Mutex<Vec<(Duration, reqwest::Client)>>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(|| {
        // reqwest is built without a crypto provider (its `rustls` feature would pull aws-lc-sys,
        // minutes of C build; `docs/architecture.md`): install ring's once.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Mutex::new(Vec::new())
    });
    let mut clients = clients.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, client)) = clients.iter().find(|(t, _)| *t == connect_timeout) {
        return Ok(client.clone());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        .user_agent(concat!("patchwise/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ModelError::Request(format!("cannot build the HTTP client: {e}")))?;
    clients.push((connect_timeout, client.clone()));
    Ok(client)
}

/// A model behind an HTTP API.
pub struct HttpModel {
    name: String,
    model: String,
    provider: ProviderConfig,
    wire: Arc<dyn Wire>,
    timeouts: Timeouts,
    retry: RetryPolicy,
    budget: Budget,
}

impl HttpModel {
    /// `model` as the provider names it, served by `provider` (named `provider_name` in config).
    pub fn new(
        config: &Config,
        provider_name: &str,
        provider: &ProviderConfig,
        model: &str,
    ) -> HttpModel {
        let settings = config.model_settings(provider_name, model);
        HttpModel {
            name: format!("{provider_name}/{model}"),
            model: model.to_owned(),
            provider: provider.clone(),
            wire: wire_for(provider.kind),
            timeouts: config.timeouts,
            retry: config.retry,
            budget: Budget::new(model, settings, is_loopback_url(provider.base_url())),
        }
    }

    pub fn provider(&self) -> &ProviderConfig {
        &self.provider
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn budget(&self) -> &Budget {
        &self.budget
    }
}

pub(crate) fn wire_for(kind: ProviderKind) -> Arc<dyn Wire> {
    match kind {
        // The embedded provider's host speaks the OpenAI wire.
        ProviderKind::OpenAi | ProviderKind::Embedded => Arc::new(openai::OpenAiWire),
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicWire),
        ProviderKind::Gemini => Arc::new(gemini::GeminiWire),
    }
}

impl ChatModel for HttpModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn context_window(&self) -> usize {
        self.budget.window
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let text_mode = self.provider.tools == ToolMode::Text && !request.tools.is_empty();
        let watcher = ToolTextWatcher::new(&request.tools, &request.options.tool_choice);
        let mut request = if text_mode {
            text_tools::to_text_protocol(request)
        } else {
            request
        };
        // Every answer is bounded by the output room the budget keeps for it. Without a limit an
        // OpenAI-compatible server writes until the context is full, and a small local model
        // that falls into a loop (a plan numbering step 400) holds the run for the whole
        // `[timeouts] total`.
        request
            .options
            .max_tokens
            .get_or_insert(self.budget.default_reserve as u32);
        let (tx, rx) = mpsc::channel(64);
        let prepared = budget::fit(&mut request, &self.budget).and_then(|report| {
            if report.changed() {
                tracing::info!(model = %self.name, "{report}");
            }
            let stream = !request.options.no_stream;
            let wire_request = self
                .wire
                .build(&self.provider, &self.model, &request, stream)?;
            let client = shared_client(self.timeouts.connect)?;
            Ok((wire_request, client, stream))
        });
        match prepared {
            Err(err) => {
                let _ = tx.try_send(Err(err));
            }
            Ok((wire_request, client, stream)) => {
                let job = Job {
                    name: self.name.clone(),
                    key_env: self.provider.key_env().map(str::to_owned),
                    wire: self.wire.clone(),
                    timeouts: self.timeouts,
                    retry: self.retry,
                    client,
                    request: wire_request,
                    stream,
                    cancel,
                    out: Output {
                        tx,
                        watcher,
                        emitted: false,
                    },
                };
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) => {
                        let span = tracing::info_span!("model_request", model = %self.name);
                        runtime.spawn(job.run().instrument(span));
                    }
                    Err(_) => {
                        let _ = job.out.tx.try_send(Err(ModelError::Request(
                            "chat() must be called inside a tokio runtime".to_owned(),
                        )));
                    }
                }
            }
        }
        let mut rx = rx;
        Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }
}

/// Where events go: through the text-tool watcher to the caller.
struct Output {
    tx: mpsc::Sender<Result<StreamEvent, ModelError>>,
    watcher: ToolTextWatcher,
    /// Whether anything reached the caller (then no retry).
    emitted: bool,
}

impl Output {
    /// Sends events; `false` when the caller has gone away.
    async fn send(&mut self, events: Vec<StreamEvent>) -> Result<bool, ModelError> {
        for event in events {
            for event in self.watcher.on_event(event)? {
                self.emitted = true;
                if self.tx.send(Ok(event)).await.is_err() {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    async fn fail(&self, err: ModelError) {
        let _ = self.tx.send(Err(err)).await;
    }
}

/// One failed attempt.
struct Failure {
    error: ModelError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ModelError) -> Failure {
        Failure {
            error,
            retryable: false,
            retry_after: None,
        }
    }

    fn transient(error: ModelError) -> Failure {
        Failure {
            error,
            retryable: true,
            retry_after: None,
        }
    }
}

struct Job {
    name: String,
    key_env: Option<String>,
    wire: Arc<dyn Wire>,
    timeouts: Timeouts,
    retry: RetryPolicy,
    client: reqwest::Client,
    request: WireRequest,
    stream: bool,
    cancel: CancellationToken,
    out: Output,
}

impl Job {
    async fn run(mut self) {
        let start = Instant::now();
        let deadline = start + self.timeouts.total;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            tracing::debug!(model = %self.name, url = %self.request.url, attempt, "model request");
            let failure = match self.attempt(start, deadline).await {
                Ok(()) => return,
                Err(failure) => failure,
            };
            let mut error = failure.error;
            let retry = failure.retryable && !self.out.emitted && attempt < self.retry.max_attempts;
            if !retry {
                if failure.retryable && attempt > 1 {
                    error = exhausted(error, attempt);
                }
                tracing::debug!(model = %self.name, attempt, "model request failed: {error}");
                self.out.fail(error).await;
                return;
            }
            // A server's Retry-After is honoured in full (retrying sooner only earns another
            // 429); our own backoff is capped by `max_backoff`.
            let delay = match failure.retry_after {
                Some(asked) => asked,
                None => backoff(&self.retry, attempt),
            };
            if Instant::now() + delay >= deadline {
                if let (Some(asked), ModelError::Http { message, .. }) =
                    (failure.retry_after, &mut error)
                {
                    message.push_str(&format!(
                        " (the server asked to wait {}s, past the total timeout)",
                        asked.as_secs_f32()
                    ));
                }
                self.out.fail(exhausted(error, attempt)).await;
                return;
            }
            tracing::info!(
                model = %self.name,
                attempt,
                delay_ms = delay.as_millis() as u64,
                "retrying after: {error}"
            );
            tokio::select! {
                _ = stopped(&self.cancel, &self.out.tx) => {
                    self.out.fail(ModelError::Cancelled).await;
                    return;
                }
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    async fn attempt(&mut self, start: Instant, deadline: Instant) -> Result<(), Failure> {
        let url = self.request.url.clone();
        let mut headers = HeaderMap::new();
        for (name, value) in &self.request.headers {
            headers.insert(name.clone(), value.clone());
        }
        let send = self
            .client
            .post(&url)
            .headers(headers)
            .json(&self.request.body)
            .send();
        let wait = self.wait_limit(Instant::now(), deadline);
        let response = tokio::select! {
            _ = stopped(&self.cancel, &self.out.tx) => return Err(Failure::fatal(ModelError::Cancelled)),
            r = tokio::time::timeout(wait.0, send) => match r {
                Err(_) => return Err(Failure::transient(timeout(wait.1, &url, start))),
                Ok(Err(err)) => return Err(transport_failure(&err, &url, start)),
                Ok(Ok(response)) => response,
            }
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers(), SystemTime::now());
            let body = tokio::select! {
                _ = stopped(&self.cancel, &self.out.tx) => return Err(Failure::fatal(ModelError::Cancelled)),
                r = tokio::time::timeout(Duration::from_secs(10), response.bytes()) => {
                    r.ok().and_then(Result::ok).unwrap_or_default()
                }
            };
            let message = error_message(&body);
            let code = status.as_u16();
            return Err(match code {
                401 | 403 => Failure::fatal(ModelError::Auth {
                    url,
                    status: code,
                    key_env: self
                        .key_env
                        .clone()
                        .unwrap_or_else(|| "named by api_key_env".to_owned()),
                    message,
                }),
                408 | 409 | 425 | 429 | 500..=599 => Failure {
                    error: ModelError::Http {
                        url,
                        status: code,
                        message,
                    },
                    retryable: true,
                    retry_after,
                },
                _ => Failure::fatal(ModelError::Http {
                    url,
                    status: code,
                    message,
                }),
            });
        }
        if self.stream {
            self.read_stream(response, &url, start, deadline).await
        } else {
            self.read_whole(response, &url, start, deadline).await
        }
    }

    /// How long the next wait may take, and which timeout that is.
    fn wait_limit(&self, now: Instant, deadline: Instant) -> (Duration, TimeoutPhase) {
        let total_left = deadline.saturating_duration_since(now);
        if self.timeouts.first_token < total_left {
            (self.timeouts.first_token, TimeoutPhase::FirstToken)
        } else {
            (total_left, TimeoutPhase::Total)
        }
    }

    async fn read_whole(
        &mut self,
        response: reqwest::Response,
        url: &str,
        start: Instant,
        deadline: Instant,
    ) -> Result<(), Failure> {
        let wait = self.wait_limit(Instant::now(), deadline);
        let bytes = tokio::select! {
            _ = stopped(&self.cancel, &self.out.tx) => return Err(Failure::fatal(ModelError::Cancelled)),
            r = tokio::time::timeout(wait.0, response.bytes()) => match r {
                Err(_) => return Err(Failure::transient(timeout(wait.1, url, start))),
                Ok(Err(err)) => return Err(Failure::transient(ModelError::StreamEndedEarly {
                    url: url.to_owned(),
                    detail: format!("the body was cut: {}", error_chain(&err)),
                })),
                Ok(Ok(bytes)) => bytes,
            }
        };
        let body: Value = serde_json::from_slice(&bytes).map_err(|err| {
            Failure::transient(ModelError::Malformed {
                url: url.to_owned(),
                expected: "a JSON body".to_owned(),
                found: format!("{} ({err})", snippet(&String::from_utf8_lossy(&bytes))),
            })
        })?;
        let events = self
            .wire
            .parse_whole(&body)
            .map_err(|e| decode_failure(e, url))?;
        self.send(events).await.map(|_| ())
    }

    async fn read_stream(
        &mut self,
        response: reqwest::Response,
        url: &str,
        start: Instant,
        deadline: Instant,
    ) -> Result<(), Failure> {
        let mut decoder = self.wire.decoder();
        let mut events = response.bytes_stream().eventsource();
        loop {
            let wait = self.wait_limit(Instant::now(), deadline);
            let next = tokio::select! {
                _ = stopped(&self.cancel, &self.out.tx) => return Err(Failure::fatal(ModelError::Cancelled)),
                r = tokio::time::timeout(wait.0, events.next()) => match r {
                    Err(_) => return Err(Failure::transient(timeout(wait.1, url, start))),
                    Ok(next) => next,
                }
            };
            match next {
                None => break,
                Some(Err(EventStreamError::Transport(err))) => {
                    // The connection broke: whatever the decoder holds is incomplete.
                    return Err(Failure::transient(ModelError::StreamEndedEarly {
                        url: url.to_owned(),
                        detail: format!("the connection broke: {}", error_chain(&err)),
                    }));
                }
                Some(Err(err)) => {
                    return Err(Failure::transient(ModelError::Malformed {
                        url: url.to_owned(),
                        expected: "a server-sent event stream".to_owned(),
                        found: err.to_string(),
                    }));
                }
                Some(Ok(event)) => {
                    let produced = decoder
                        .event(&event.event, &event.data)
                        .map_err(|e| decode_failure(e, url))?;
                    if !self.send(produced).await? {
                        return Ok(());
                    }
                    if decoder.is_done() {
                        break;
                    }
                }
            }
        }
        let rest = decoder.end().map_err(|e| decode_failure(e, url))?;
        self.send(rest).await.map(|_| ())
    }

    /// Sends events to the caller; `Ok(false)` when the caller is gone.
    async fn send(&mut self, events: Vec<StreamEvent>) -> Result<bool, Failure> {
        self.out.send(events).await.map_err(Failure::fatal)
    }
}

/// Resolves when the caller cancelled or dropped the stream.
async fn stopped(cancel: &CancellationToken, tx: &mpsc::Sender<Result<StreamEvent, ModelError>>) {
    tokio::select! {
        _ = cancel.cancelled() => {}
        _ = tx.closed() => {}
    }
}

fn exhausted(error: ModelError, attempts: u32) -> ModelError {
    match error {
        ModelError::Http {
            url,
            status,
            message,
        } => ModelError::RetriesExhausted {
            url,
            status,
            attempts,
            message,
        },
        other => other,
    }
}

fn timeout(phase: TimeoutPhase, url: &str, start: Instant) -> ModelError {
    ModelError::Timeout {
        phase,
        url: url.to_owned(),
        elapsed: start.elapsed(),
    }
}

fn transport_failure(err: &reqwest::Error, url: &str, start: Instant) -> Failure {
    let error = if err.is_connect() && err.is_timeout() {
        timeout(TimeoutPhase::Connect, url, start)
    } else if err.is_connect() {
        ModelError::Connect {
            url: url.to_owned(),
            reason: connect_reason(err),
        }
    } else if err.is_timeout() {
        timeout(TimeoutPhase::FirstToken, url, start)
    } else if err.is_builder() {
        return Failure::fatal(ModelError::Request(error_chain(err)));
    } else {
        ModelError::StreamEndedEarly {
            url: url.to_owned(),
            detail: format!(
                "the server closed the connection before answering: {}",
                error_chain(err)
            ),
        }
    };
    Failure::transient(error)
}

fn decode_failure(err: DecodeError, url: &str) -> Failure {
    let url = url.to_owned();
    Failure::transient(match err {
        DecodeError::Malformed { expected, found } => ModelError::Malformed {
            url,
            expected,
            found,
        },
        DecodeError::Provider(message) => ModelError::Provider { url, message },
        DecodeError::EndedEarly(detail) => ModelError::StreamEndedEarly { url, detail },
    })
}

/// The innermost cause, which for connection errors is the useful part ("Connection refused").
pub(crate) fn connect_reason(err: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = Some(err);
    let mut last = String::new();
    while let Some(e) = source {
        last = e.to_string();
        source = e.source();
    }
    let lower = last.to_ascii_lowercase();
    if lower.contains("refused") {
        "connection refused".to_owned()
    } else {
        last
    }
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(e) = source {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = e.source();
    }
    parts.join(": ")
}

/// The provider's error text from an error body (`{"error": {"message": …}}` in all three
/// formats, or a plain string), shortened.
pub fn error_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        let candidates = [
            value.pointer("/error/message"),
            value.pointer("/error"),
            value.pointer("/message"),
            value.pointer("/detail"),
        ];
        for candidate in candidates.into_iter().flatten() {
            if let Some(s) = candidate.as_str() {
                return snippet(s);
            }
        }
    }
    if text.trim().is_empty() {
        "(empty body)".to_owned()
    } else {
        snippet(&text)
    }
}

/// At most 300 characters of `text`, on one line.
pub(crate) fn snippet(text: &str) -> String {
    let one_line: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() > 300 {
        let cut: String = one_line.chars().take(300).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// The exponential backoff before attempt `attempt + 1`, with ±20% jitter so that parallel
/// requests do not retry in lockstep.
pub fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    let base = policy
        .initial_backoff
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let factor = 0.8 + f64::from(nanos % 1000) / 2500.0;
    base.mul_f64(factor).min(policy.max_backoff)
}

/// The wait a server asked for: `retry-after-ms` (OpenAI), `Retry-After` in seconds or as an
/// HTTP date.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms.min(86_400_000.0) / 1000.0));
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(86_400.0)));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` (the IMF-fixdate form every current server sends).
fn parse_http_date(text: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u64 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as u64
        + 1;
    let year: u64 = year.parse().ok()?;
    let hms: Vec<u64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    if !(1970..=9999).contains(&year) || !(1..=31).contains(&day) || *h > 23 || *m > 59 || *s > 60 {
        return None;
    }
    // Days from civil date (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + m * 60 + s;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// A header value for a secret, marked sensitive so that it never appears in `Debug` output.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, ModelError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        ModelError::Request(
            "the API key contains characters that cannot be sent in a header (the key is not shown)"
                .to_owned(),
        )
    })?;
    header.set_sensitive(true);
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(3)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:47 GMT"),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(10)));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let policy = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
        };
        let first = backoff(&policy, 1);
        assert!(first >= Duration::from_millis(80) && first <= Duration::from_millis(120));
        let third = backoff(&policy, 3);
        assert!(third >= Duration::from_millis(320) && third <= Duration::from_millis(480));
        assert_eq!(backoff(&policy, 30), Duration::from_millis(1000));
    }

    #[test]
    fn error_messages_are_extracted_and_short() {
        assert_eq!(
            error_message(br#"{"error":{"message":"model not found","type":"x"}}"#),
            "model not found"
        );
        assert_eq!(error_message(br#"{"error":"bad"}"#), "bad");
        assert_eq!(error_message(b""), "(empty body)");
        assert!(error_message("x".repeat(1000).as_bytes()).chars().count() <= 301);
    }
}
