//! Roles to models: which provider and model answers for `coder`, `planner`, `judge` and
//! `escalation`, falling back to `coder`, and probing servers (`GET …/models`) when the
//! configuration leaves the choice open (the built-in Ollama → LM Studio → embedded default);
//! an embedded provider is not probed over HTTP but by its model file (`model::embedded`).
//!
//! Probing never sends a request body and never reports a key; a probe failure is data for
//! `patchwise doctor`, not an error.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ModelRole, ProviderConfig, ProviderKind};
use crate::model::http::{connect_reason, error_message, secret_header, shared_client};
use crate::model::{
    ChatModel, ChatRequest, ChatStream, HttpModel, ModelError, StreamEvent, Usage, anthropic,
    embedded,
};

/// What a provider's model list said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeResult {
    pub url: String,
    pub answers: bool,
    pub models: Vec<String>,
    /// Why the server did not answer (or answered with an error).
    pub error: Option<String>,
}

/// Lists the models `provider` serves, within `timeout`. An embedded provider is probed
/// without starting anything: its model file is there and whole ([`embedded::probe`]).
pub async fn probe_provider(
    config: &Config,
    provider: &ProviderConfig,
    timeout: Duration,
) -> ProbeResult {
    match provider.kind {
        ProviderKind::Embedded => embedded::probe(&provider.embedded, &config.data_dir()),
        _ => probe(provider, timeout).await,
    }
}

/// Lists the models a server serves (`GET …/models`), within `timeout`.
pub async fn probe(provider: &ProviderConfig, timeout: Duration) -> ProbeResult {
    let base = provider.base_url();
    let url = match provider.kind {
        ProviderKind::OpenAi | ProviderKind::Gemini | ProviderKind::Embedded => {
            format!("{base}/models")
        }
        ProviderKind::Anthropic => anthropic::messages_url(base).replace("/messages", "/models"),
    };
    let mut result = ProbeResult {
        url: url.clone(),
        answers: false,
        models: Vec::new(),
        error: None,
    };
    let client = match shared_client(timeout) {
        Ok(c) => c,
        Err(err) => {
            result.error = Some(err.to_string());
            return result;
        }
    };
    let mut headers = HeaderMap::new();
    if let Some(key) = provider.api_key() {
        let header = match provider.kind {
            ProviderKind::OpenAi => {
                secret_header(&format!("Bearer {}", key.expose())).map(|v| (AUTHORIZATION, v))
            }
            ProviderKind::Anthropic => {
                secret_header(key.expose()).map(|v| (HeaderName::from_static("x-api-key"), v))
            }
            ProviderKind::Gemini => {
                secret_header(key.expose()).map(|v| (HeaderName::from_static("x-goog-api-key"), v))
            }
            ProviderKind::Embedded => return result,
        };
        match header {
            Ok((name, value)) => {
                headers.insert(name, value);
            }
            Err(err) => {
                result.error = Some(err.to_string());
                return result;
            }
        }
    }
    if provider.kind == ProviderKind::Anthropic {
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(anthropic::API_VERSION),
        );
    }
    let request = client.get(&url).headers(headers).send();
    let response = match tokio::time::timeout(timeout, request).await {
        Err(_) => {
            result.error = Some(format!(
                "no answer within {}s (a local server may be busy with another request)",
                timeout.as_secs_f32()
            ));
            return result;
        }
        Ok(Err(err)) => {
            result.error = Some(if err.is_connect() {
                connect_reason(&err)
            } else {
                err.without_url().to_string()
            });
            return result;
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    let body = tokio::time::timeout(timeout, response.bytes())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    if !status.is_success() {
        result.answers = true;
        result.error = Some(format!(
            "HTTP {}: {}",
            status.as_u16(),
            error_message(&body)
        ));
        return result;
    }
    result.answers = true;
    let value: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(err) => {
            result.error = Some(format!(
                "expected a JSON model list, found invalid JSON ({err})"
            ));
            return result;
        }
    };
    let list = value
        .get("data")
        .or_else(|| value.get("models"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    result.models = list
        .iter()
        .filter_map(|m| {
            m.get("id")
                .or_else(|| m.get("name"))
                .or_else(|| m.get("model"))
                .and_then(Value::as_str)
        })
        .map(|name| name.strip_prefix("models/").unwrap_or(name).to_owned())
        .collect();
    result
}

/// Whether `wanted` is in a server's list (Ollama lists `name:latest` for `name`).
pub fn lists_model(models: &[String], wanted: &str) -> bool {
    models.iter().any(|m| {
        m == wanted
            || m.strip_suffix(":latest") == Some(wanted)
            || wanted.strip_suffix(":latest") == Some(m)
    })
}

/// Told the usage of each answer as it ends: the model's name, its context window (tokens) and
/// what the provider reported.
pub type UsageObserver = Arc<dyn Fn(&str, usize, Usage) + Send + Sync>;

/// Hands out the model for each role, resolving (and caching) open choices by probing.
pub struct ModelRouter {
    config: Config,
    resolved: Arc<Mutex<HashMap<ModelRole, Arc<dyn ChatModel>>>>,
    observer: Option<UsageObserver>,
}

impl ModelRouter {
    pub fn new(config: Config) -> ModelRouter {
        ModelRouter {
            config,
            resolved: Arc::new(Mutex::new(HashMap::new())),
            observer: None,
        }
    }

    /// This router (sharing its resolved models) with every answer's usage told to `observer`:
    /// one per run, so a run's edge learns its token usage as each answer ends.
    pub fn observed(&self, observer: UsageObserver) -> ModelRouter {
        ModelRouter {
            config: self.config.clone(),
            resolved: self.resolved.clone(),
            observer: Some(observer),
        }
    }

    fn handed_out(&self, model: Arc<dyn ChatModel>) -> Arc<dyn ChatModel> {
        match &self.observer {
            Some(observer) => Arc::new(Metered {
                inner: model,
                observer: observer.clone(),
            }),
            None => model,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The model for `role` (falling back to `coder`'s when the role is not configured).
    pub async fn model(
        &self,
        role: ModelRole,
        cancel: CancellationToken,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        let (source_role, candidates) = self.config.role_candidates(role);
        if let Some(model) = self.resolved.lock().await.get(&source_role) {
            return Ok(self.handed_out(model.clone()));
        }
        let providers = self.config.effective_providers();
        let probe_timeout = self.config.timeouts.connect.min(Duration::from_secs(5));
        let mut reasons = Vec::new();
        for target in &candidates {
            let Some(provider) = providers.get(&target.provider) else {
                reasons.push(format!("provider {:?} is not configured", target.provider));
                continue;
            };
            if provider.kind == ProviderKind::Embedded {
                let mut provider = provider.clone();
                if !target.model.is_empty() {
                    provider.embedded.model = Some(target.model.clone());
                }
                match embedded::EmbeddedModel::new(&self.config, &target.provider, &provider) {
                    Ok(model) => {
                        let model: Arc<dyn ChatModel> = Arc::new(model);
                        tracing::info!(role = %role, model = %model.name(), "model chosen");
                        self.resolved
                            .lock()
                            .await
                            .insert(source_role, model.clone());
                        return Ok(self.handed_out(model));
                    }
                    Err(ModelError::NoModel { reason, .. }) => {
                        reasons.push(reason);
                        continue;
                    }
                    Err(err) => return Err(err),
                }
            }
            let model = if !target.model.is_empty() {
                target.model.clone()
            } else {
                let probed = tokio::select! {
                    _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                    p = probe(provider, probe_timeout) => p,
                };
                match (probed.error, probed.models.first()) {
                    (None, Some(first)) => first.clone(),
                    (Some(error), _) => {
                        reasons.push(format!("{} ({}): {error}", target.provider, probed.url));
                        continue;
                    }
                    (None, None) => {
                        reasons.push(format!(
                            "{} ({}): lists no models",
                            target.provider, probed.url
                        ));
                        continue;
                    }
                }
            };
            let resolved: Arc<dyn ChatModel> = Arc::new(HttpModel::new(
                &self.config,
                &target.provider,
                provider,
                &model,
            ));
            tracing::info!(role = %role, model = %resolved.name(), "model chosen");
            self.resolved
                .lock()
                .await
                .insert(source_role, resolved.clone());
            return Ok(self.handed_out(resolved));
        }
        // With nothing configured, the one step that always works is downloading a model.
        let nothing_configured = self.config.providers.is_empty() && self.config.roles.is_empty();
        let reason = if nothing_configured && embedded::AVAILABLE {
            format!(
                "no model server answers and no model is downloaded: run `patchwise model pull` (Qwen2.5-Coder 1.5B, ~1.1 GB, runs inside patchwise) or start a model server ({})",
                reasons.join("; ")
            )
        } else {
            format!(
                "{}; set [roles] {source_role} = \"provider/model\" in .patchwise/config.toml",
                reasons.join("; ")
            )
        };
        Err(ModelError::NoModel {
            role: role.to_string(),
            reason,
        })
    }
}

/// A model whose answers' usage is told to an observer as each answer ends.
struct Metered {
    inner: Arc<dyn ChatModel>,
    observer: UsageObserver,
}

impl ChatModel for Metered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn context_window(&self) -> usize {
        self.inner.context_window()
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let observer = self.observer.clone();
        let name = self.inner.name().to_owned();
        let window = self.inner.context_window();
        Box::pin(self.inner.chat(request, cancel).inspect(move |event| {
            if let Ok(StreamEvent::Done { usage, .. }) = event {
                observer(&name, window, *usage);
            }
        }))
    }
}
