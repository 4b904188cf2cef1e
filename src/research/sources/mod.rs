//! Where research looks: academic indexes (OpenAlex, arXiv, Crossref, Semantic Scholar), web
//! search (SearXNG, Brave), news feeds, the workspace and the research library — each behind
//! the one [`Source`] trait, with its own base URL, timeout and rate limiter.
//!
//! The HTTP sources share [`Endpoint`]: a GET with the source's timeout, honouring `Retry-After`
//! on 429 when it fits in the time left, one retry on a 5xx, conditional requests (ETag /
//! Last-Modified) and a cache of raw answers in the library, used when the provider is down —
//! offline mode. Parsing is a pure function per provider (tested on recorded answers). Nothing
//! here logs a key or puts one in an error or a cache key.

pub mod academic;
pub mod local;
pub mod web;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::research::config::SourceSettings;
use crate::store::{CachedResponse, Library, SourceRecord, now_rfc3339};

/// What a source is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceQuery {
    pub text: String,
    pub max_results: usize,
}

/// Shared by every source of a run.
#[derive(Clone)]
pub struct SourceContext {
    pub client: reqwest::Client,
    /// For the cache and the library source.
    pub library: Option<Arc<Library>>,
    pub cancel: CancellationToken,
}

/// What a source found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SourceResults {
    pub records: Vec<SourceRecord>,
    /// Set when the answer came from the cache because the provider failed: why, and when the
    /// cached answer was fetched.
    pub cached: Option<String>,
}

/// Why a source returned nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SourceError {
    /// Not usable as configured (no key, no feed URLs, no workspace).
    #[error("{0}")]
    Unavailable(String),
    #[error("HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("{0}")]
    Transport(String),
    #[error("no answer within {0:.1}s")]
    Timeout(f64),
    #[error("expected {expected}, found {found}")]
    Malformed { expected: String, found: String },
    #[error("cancelled")]
    Cancelled,
}

/// One place to look.
pub trait Source: Send + Sync {
    /// The configured name (`openalex`, `arxiv`, …, or a user's name for a second feed list).
    fn name(&self) -> &str;
    /// The whole search, requests and parsing, must finish within this.
    fn timeout(&self) -> Duration;
    fn search<'a>(
        &'a self,
        query: &'a SourceQuery,
        context: &'a SourceContext,
    ) -> BoxFuture<'a, Result<SourceResults, SourceError>>;
}

/// A minimum interval between requests to one provider, shared by every run in the process (the
/// editor runs many): arXiv asks for one request every 3 s.
pub struct RateLimiter {
    /// The configured interval; a provider's rate-limit headers may only lengthen it.
    configured: Duration,
    /// The interval in force, in microseconds.
    interval_us: std::sync::atomic::AtomicU64,
    next: tokio::sync::Mutex<Option<Instant>>,
}

impl RateLimiter {
    /// The process-wide limiter for `key` (a provider and base URL).
    pub fn shared(key: &str, interval: Duration) -> Arc<RateLimiter> {
        static ALL: OnceLock<Mutex<HashMap<String, Arc<RateLimiter>>>> = OnceLock::new();
        let mut all = ALL
            .get_or_init(|| Mutex::new(HashMap::new()))
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        all.entry(format!("{key} {}", interval.as_millis()))
            .or_insert_with(|| {
                Arc::new(RateLimiter {
                    configured: interval,
                    interval_us: std::sync::atomic::AtomicU64::new(interval.as_micros() as u64),
                    next: tokio::sync::Mutex::new(None),
                })
            })
            .clone()
    }

    /// The interval in force.
    pub fn interval(&self) -> Duration {
        Duration::from_micros(self.interval_us.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Follows a provider's announced pace (Crossref's `x-rate-limit-limit` per
    /// `x-rate-limit-interval`), never going faster than configured. At most one request per 60 s.
    pub fn follow(&self, announced: Duration) {
        let interval = announced.min(Duration::from_secs(60)).max(self.configured);
        self.interval_us.store(
            interval.as_micros() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Waits for this request's turn.
    pub async fn acquire(&self, cancel: &CancellationToken) -> Result<(), SourceError> {
        let interval = self.interval();
        if interval.is_zero() {
            return Ok(());
        }
        let wait = {
            let mut next = self.next.lock().await;
            let now = Instant::now();
            let at = next.map_or(now, |n| n.max(now));
            *next = Some(at + interval);
            at.saturating_duration_since(now)
        };
        if !wait.is_zero() {
            tokio::select! {
                _ = cancel.cancelled() => return Err(SourceError::Cancelled),
                _ = tokio::time::sleep(wait) => {}
            }
        }
        Ok(())
    }
}

/// An answer body and whether it came from the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub body: String,
    pub cached: Option<String>,
}

/// The HTTP side of one provider.
pub struct Endpoint {
    pub name: String,
    pub base_url: String,
    pub timeout: Duration,
    limiter: Arc<RateLimiter>,
}

impl Endpoint {
    pub fn new(settings: &SourceSettings) -> Endpoint {
        Endpoint {
            name: settings.name.clone(),
            base_url: settings.base_url.trim_end_matches('/').to_owned(),
            timeout: settings.timeout,
            limiter: RateLimiter::shared(
                &format!("{} {}", settings.name, settings.base_url),
                settings.min_interval,
            ),
        }
    }

    /// `base_url` + `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> Result<Url, SourceError> {
        Url::parse(&format!("{}{path}", self.base_url)).map_err(|e| {
            SourceError::Unavailable(format!(
                "expected an http(s) base URL for {}, found {:?} ({e})",
                self.name, self.base_url
            ))
        })
    }

    /// GETs `url` (the cache key is the URL as given: add keys through `secret_query` or
    /// `headers`, never into `url`). With `conditional`, sends the cached ETag/Last-Modified
    /// and takes a 304 as the cached body.
    pub async fn get(
        &self,
        context: &SourceContext,
        url: Url,
        secret_query: Option<(&str, &str)>,
        headers: HeaderMap,
        conditional: bool,
    ) -> Result<Fetched, SourceError> {
        // By provider and normalised request: the same question in other letter case hits it.
        let cache_key = format!("{} {}", self.name, url.as_str().to_lowercase());
        // The library is also written by the workspace index on the blocking pool: waiting for
        // its lock here would stall a runtime thread, so the cache is read and written there too.
        let cached = match context.library.clone() {
            Some(lib) => {
                let key = cache_key.clone();
                tokio::task::spawn_blocking(move || lib.cache_get(&key).ok().flatten())
                    .await
                    .ok()
                    .flatten()
            }
            None => None,
        };
        let result = self
            .fetch(
                context,
                url,
                secret_query,
                headers,
                conditional.then_some(cached.as_ref()).flatten(),
            )
            .await;
        match result {
            Ok(Response::Fresh {
                body,
                etag,
                last_modified,
            }) => {
                if let Some(lib) = context.library.clone() {
                    let entry = CachedResponse {
                        body: body.clone(),
                        etag,
                        last_modified,
                        fetched_at: now_rfc3339(),
                    };
                    let put = tokio::task::spawn_blocking(move || {
                        lib.cache_put(&cache_key, &entry).map_err(|e| e.to_string())
                    });
                    if let Err(err) = put.await.unwrap_or_else(|e| Err(e.to_string())) {
                        tracing::debug!(source = %self.name, "cannot cache an answer: {err}");
                    }
                }
                Ok(Fetched { body, cached: None })
            }
            Ok(Response::NotModified) => match cached {
                Some(c) => Ok(Fetched {
                    body: c.body,
                    cached: None,
                }),
                None => Err(SourceError::Http {
                    status: 304,
                    message: "not modified, but nothing is cached".to_owned(),
                }),
            },
            Err(SourceError::Cancelled) => Err(SourceError::Cancelled),
            Err(err) => match cached {
                Some(c) => Ok(Fetched {
                    body: c.body,
                    cached: Some(format!("{err}; used the answer cached at {}", c.fetched_at)),
                }),
                None => Err(err),
            },
        }
    }

    async fn fetch(
        &self,
        context: &SourceContext,
        url: Url,
        secret_query: Option<(&str, &str)>,
        mut headers: HeaderMap,
        cached: Option<&CachedResponse>,
    ) -> Result<Response, SourceError> {
        let deadline = Instant::now() + self.timeout;
        if let Some(c) = cached {
            if let Some(etag) = c
                .etag
                .as_deref()
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                headers.insert(reqwest::header::IF_NONE_MATCH, etag);
            }
            if let Some(lm) = c
                .last_modified
                .as_deref()
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                headers.insert(reqwest::header::IF_MODIFIED_SINCE, lm);
            }
        }
        let mut request_url = url.clone();
        if let Some((name, value)) = secret_query {
            request_url.query_pairs_mut().append_pair(name, value);
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.limiter.acquire(&context.cancel).await?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(SourceError::Timeout(self.timeout.as_secs_f64()));
            }
            let send = context
                .client
                .get(request_url.clone())
                .headers(headers.clone())
                .timeout(left)
                .send();
            let response = tokio::select! {
                _ = context.cancel.cancelled() => return Err(SourceError::Cancelled),
                r = send => r,
            };
            let response = match response {
                Ok(r) => r,
                Err(err) if err.is_timeout() => {
                    return Err(SourceError::Timeout(self.timeout.as_secs_f64()));
                }
                Err(err) => return Err(SourceError::Transport(transport_message(err))),
            };
            let status = response.status().as_u16();
            let response_headers = response.headers().clone();
            if let Some(pace) = announced_pace(&response_headers) {
                self.limiter.follow(pace);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let body = tokio::select! {
                _ = context.cancel.cancelled() => return Err(SourceError::Cancelled),
                b = tokio::time::timeout(left, read_capped(response)) => match b {
                    Err(_) => return Err(SourceError::Timeout(self.timeout.as_secs_f64())),
                    Ok(Err(err)) => return Err(err),
                    Ok(Ok(b)) => b,
                },
            };
            let text = String::from_utf8_lossy(&body).into_owned();
            match status {
                200..=299 => {
                    let header = |name: HeaderName| {
                        response_headers
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned)
                    };
                    return Ok(Response::Fresh {
                        body: text,
                        etag: header(reqwest::header::ETAG),
                        last_modified: header(reqwest::header::LAST_MODIFIED),
                    });
                }
                304 => return Ok(Response::NotModified),
                429 | 500..=599 => {
                    let wait =
                        crate::model::http::retry_after(
                            &response_headers,
                            std::time::SystemTime::now(),
                        )
                        .unwrap_or(Duration::from_millis(
                            if status == 429 { 1000 } else { 250 },
                        ));
                    let left = deadline.saturating_duration_since(Instant::now());
                    if attempt < 3 && wait + Duration::from_millis(50) < left {
                        tracing::debug!(source = %self.name, status, ?wait, "retrying");
                        tokio::select! {
                            _ = context.cancel.cancelled() => return Err(SourceError::Cancelled),
                            _ = tokio::time::sleep(wait) => {}
                        }
                        continue;
                    }
                    let mut message = short_error(&text);
                    if status == 429 {
                        message = format!(
                            "rate limited{}{}",
                            crate::model::http::retry_after(
                                &response_headers,
                                std::time::SystemTime::now()
                            )
                            .map(|d| format!(" (retry after {}s)", d.as_secs()))
                            .unwrap_or_default(),
                            if message.is_empty() {
                                String::new()
                            } else {
                                format!(": {message}")
                            }
                        );
                    }
                    return Err(SourceError::Http { status, message });
                }
                _ => {
                    return Err(SourceError::Http {
                        status,
                        message: short_error(&text),
                    });
                }
            }
        }
    }
}

/// The most of one answer read: search pages are kilobytes; anything this large is not one.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, SourceError> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(SourceError::Malformed {
                        expected: format!("an answer of at most {} MiB", MAX_BODY_BYTES >> 20),
                        found: "a larger one (the rest was not read)".to_owned(),
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(err) => return Err(SourceError::Transport(transport_message(err))),
        }
    }
}

/// The pace a provider announces: `x-rate-limit-limit` requests per `x-rate-limit-interval`
/// (`1s`, `500ms`, `2m`), as the interval between two requests.
pub fn announced_pace(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let limit: u32 = get("x-rate-limit-limit")?.parse().ok().filter(|n| *n > 0)?;
    let interval = get("x-rate-limit-interval")?;
    let (number, unit) = interval.split_at(interval.find(|c: char| !c.is_ascii_digit())?);
    let number: u64 = number.parse().ok()?;
    let window = match unit {
        "ms" => Duration::from_millis(number),
        "s" => Duration::from_secs(number),
        "m" => Duration::from_secs(number * 60),
        _ => return None,
    };
    Some(window / limit)
}

enum Response {
    Fresh {
        body: String,
        etag: Option<String>,
        last_modified: Option<String>,
    },
    NotModified,
}

fn transport_message(err: reqwest::Error) -> String {
    if err.is_connect() {
        let text = format!("{err:?}").to_ascii_lowercase();
        if text.contains("refused") {
            return "connection refused".to_owned();
        }
        return "cannot connect".to_owned();
    }
    // Never the URL: it may carry a key in its query.
    let mut message = err.without_url().to_string();
    if message.contains("decoding") || message.contains("body") {
        message = format!("the answer was cut off ({message})");
    }
    message
}

/// A provider answer that is not what its documentation promises: what was `expected`, and
/// (the start of) what was `found`.
pub fn malformed(expected: &str, found: impl std::fmt::Display) -> SourceError {
    SourceError::Malformed {
        expected: expected.to_owned(),
        found: found.to_string().chars().take(160).collect(),
    }
}

/// A provider's JSON answer; invalid JSON is [`malformed`] against `expected`.
pub fn json(body: &str, expected: &str) -> Result<serde_json::Value, SourceError> {
    serde_json::from_str(body).map_err(|e| malformed(expected, format!("invalid JSON ({e})")))
}

/// An empty record credited to `provider`, to fill from its answer.
pub fn record(provider: &str, venue_type: &str, retrieved_at: &str) -> SourceRecord {
    SourceRecord {
        provider: provider.to_owned(),
        providers: vec![provider.to_owned()],
        venue_type: venue_type.to_owned(),
        retrieved_at: retrieved_at.to_owned(),
        ..SourceRecord::default()
    }
}

/// The first line of an error body, short.
pub fn short_error(body: &str) -> String {
    let message = crate::model::http::error_message(body.as_bytes());
    message.chars().take(200).collect()
}

/// The text of a provider value, trimmed; `None` when empty.
pub fn text(value: &serde_json::Value) -> Option<String> {
    value
        .as_str()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
}

/// Removes tags from a snippet (`<jats:p>`, `<b>`) and decodes the common entities.
pub fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A run's sources.
pub type Sources = Vec<Arc<dyn Source>>;

/// Builds every enabled source of `settings` (in a stable order). Returns the sources and, for
/// each source that cannot run, its name and why. `exclude`: folders the workspace source never
/// indexes (patchwise's data directory).
pub fn build(
    settings: &[SourceSettings],
    workspace: Option<&std::path::Path>,
    exclude: &[std::path::PathBuf],
) -> (Sources, Vec<(String, String)>) {
    use crate::research::config::SourceKind;
    let mut sources: Vec<Arc<dyn Source>> = Vec::new();
    let mut skipped = Vec::new();
    for s in settings {
        if !s.enabled {
            skipped.push((s.name.clone(), "disabled in the configuration".to_owned()));
            continue;
        }
        let loopback = crate::config::is_loopback_url(&s.base_url);
        let source: Result<Arc<dyn Source>, String> = match s.kind {
            SourceKind::OpenAlex => match (s.api_key(), loopback) {
                (None, false) => Err(format!(
                    "OpenAlex needs an API key since 2026: set {} (free at openalex.org) or disable the source",
                    s.api_key_env.as_deref().unwrap_or("OPENALEX_API_KEY")
                )),
                _ => Ok(Arc::new(academic::OpenAlex::new(s))),
            },
            SourceKind::Arxiv => Ok(Arc::new(academic::Arxiv::new(s))),
            SourceKind::Crossref => Ok(Arc::new(academic::Crossref::new(s))),
            SourceKind::SemanticScholar => Ok(Arc::new(academic::SemanticScholar::new(s))),
            SourceKind::Searxng => Ok(Arc::new(web::Searxng::new(s))),
            SourceKind::Brave => match (s.api_key(), loopback) {
                (None, false) => Err(format!(
                    "Brave Search needs a subscription token: set {} or disable the source",
                    s.api_key_env.as_deref().unwrap_or("BRAVE_API_KEY")
                )),
                _ => Ok(Arc::new(web::Brave::new(s))),
            },
            SourceKind::Feeds if s.urls.is_empty() => {
                Err("no feed URLs configured (urls = [\"https://…/feed.xml\"])".to_owned())
            }
            SourceKind::Feeds => Ok(Arc::new(web::Feeds::new(s))),
            SourceKind::Workspace => match workspace {
                Some(root) => Ok(Arc::new(local::WorkspaceSource::new(s, root, exclude))),
                None => Err("no workspace folder".to_owned()),
            },
            SourceKind::Library => Ok(Arc::new(local::LibrarySource::new(s))),
        };
        match source {
            Ok(source) => sources.push(source),
            Err(why) => skipped.push((s.name.clone(), why)),
        }
    }
    (sources, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announced_pace_slows_the_limiter_but_never_speeds_it_up() {
        let mut headers = HeaderMap::new();
        headers.insert("x-rate-limit-limit", HeaderValue::from_static("5"));
        headers.insert("x-rate-limit-interval", HeaderValue::from_static("1s"));
        assert_eq!(announced_pace(&headers), Some(Duration::from_millis(200)));
        headers.insert("x-rate-limit-interval", HeaderValue::from_static("weird"));
        assert_eq!(announced_pace(&headers), None);
        headers.insert("x-rate-limit-limit", HeaderValue::from_static("0"));
        assert_eq!(announced_pace(&headers), None);

        let limiter = RateLimiter::shared("test-pace http://x", Duration::from_millis(100));
        limiter.follow(Duration::from_millis(200));
        assert_eq!(limiter.interval(), Duration::from_millis(200));
        limiter.follow(Duration::from_millis(20));
        assert_eq!(limiter.interval(), Duration::from_millis(100));
        limiter.follow(Duration::from_secs(3600));
        assert_eq!(limiter.interval(), Duration::from_secs(60));
    }
}
