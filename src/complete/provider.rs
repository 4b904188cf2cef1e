//! Fill-in-the-middle providers behind one small trait, and choosing one for the `completion`
//! role.
//!
//! Four wires: `POST {base}/completions` with the family's tokens in the prompt (llama.cpp,
//! vLLM, LM Studio and the model inside patchwise, whose host serves the same route), llama.cpp's
//! `POST /infill`, Ollama's `POST /api/generate` with `suffix`, and Mistral's
//! `POST {base}/fim/completions`. The first two are streamed: a request dropped (a newer
//! keystroke, `$/cancelRequest`) closes the connection, and both llama.cpp's server and
//! patchwise's host stop decoding when their client leaves. Never logs a body or a key.

use std::sync::Arc;
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::header::AUTHORIZATION;
use serde_json::{Value, json};

use super::fim::{FimFamily, FimFormat, FimInput, layout};
use crate::config::{Config, FimApi, ModelRole, ProviderConfig, ProviderKind, is_loopback_url};
use crate::model::ModelError;
use crate::model::http::{connect_reason, error_message, secret_header, shared_client};

/// One fill-in-the-middle request.
#[derive(Debug, Clone)]
pub struct FimRequest {
    pub input: FimInput,
    pub max_tokens: u32,
    /// Stop at the first line end (the cursor is mid-line, or multi-line suggestions are off).
    pub one_line: bool,
    /// When a suggestion that spans lines must be shown by (the keystroke's time plus
    /// `predict_ms`): after it, the suggestion ends at its last whole line (the decoding is
    /// stopped). Its first line is always written whole. Streamed wires only.
    pub write_until: Option<Instant>,
}

/// A provider's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FimAnswer {
    pub text: String,
    /// Prompt tokens the provider evaluated for it (not taken from its cache), when it says.
    pub evaluated_tokens: Option<u64>,
}

/// A model that fills in the middle.
pub trait FimProvider: Send + Sync {
    /// `provider/model`, for logs and messages.
    fn name(&self) -> &str;
    fn complete<'a>(
        &'a self,
        request: &'a FimRequest,
    ) -> BoxFuture<'a, Result<FimAnswer, ModelError>>;
}

/// A provider over HTTP in one of the four wires.
pub struct HttpFim {
    name: String,
    model: String,
    api: FimApi,
    base_url: String,
    provider: ProviderConfig,
    format: &'static FimFormat,
    connect: Duration,
    total: Duration,
}

impl HttpFim {
    /// `api` must not be `Auto` (see [`resolve_api`]).
    pub fn new(
        config: &Config,
        provider_name: &str,
        provider: &ProviderConfig,
        base_url: &str,
        model: &str,
    ) -> HttpFim {
        let section = &config.completion;
        let api = resolve_api(section.api, base_url);
        HttpFim {
            name: format!("{provider_name}/{model}"),
            model: model.to_owned(),
            api,
            base_url: base_url.trim_end_matches('/').to_owned(),
            provider: provider.clone(),
            format: FimFamily::choose(section.fim, model).format(),
            connect: config.timeouts.connect,
            // A suggestion later than this is of no use to a typing user.
            total: config.timeouts.first_token.min(Duration::from_secs(30)),
        }
    }

    pub fn api(&self) -> FimApi {
        self.api
    }

    /// The request this provider sends for `request`: its URL and JSON body.
    pub fn body(&self, request: &FimRequest) -> (String, Value) {
        let format = self.format;
        let mut stops: Vec<&str> = format.stops.to_vec();
        if request.one_line {
            stops.push("\n");
        }
        let input = &request.input;
        let root = self.base_url.trim_end_matches("/v1");
        match self.api {
            FimApi::Infill => (
                format!("{root}/infill"),
                json!({
                    "input_prefix": input.prefix,
                    "input_suffix": input.suffix,
                    "input_extra": input.extra.iter()
                        .map(|f| json!({"filename": f.path, "text": f.text}))
                        .collect::<Vec<_>>(),
                    "n_predict": request.max_tokens,
                    "temperature": 0,
                    "stop": stops,
                    "cache_prompt": true,
                    "stream": true,
                }),
            ),
            FimApi::Ollama => (
                format!("{root}/api/generate"),
                json!({
                    "model": self.model,
                    "prompt": input.prefix,
                    "suffix": input.suffix,
                    "stream": false,
                    "options": {"num_predict": request.max_tokens, "temperature": 0, "stop": stops},
                }),
            ),
            FimApi::Mistral => (
                format!("{}/fim/completions", self.base_url),
                json!({
                    "model": self.model,
                    "prompt": input.prefix,
                    "suffix": input.suffix,
                    "max_tokens": request.max_tokens,
                    "temperature": 0,
                    "stop": if request.one_line { vec!["\n"] } else { Vec::new() },
                }),
            ),
            FimApi::Completions | FimApi::Auto => {
                let mut body = json!({
                    "model": self.model,
                    "prompt": layout(format, input),
                    "max_tokens": request.max_tokens,
                    "temperature": 0,
                    "stop": stops.iter().take(4).collect::<Vec<_>>(),
                    "stream": true,
                });
                // OpenAI's API takes at most four stops; servers on this machine take more, and
                // llama.cpp's keeps the prompt's KV cache for the next request with this.
                if is_loopback_url(&self.base_url) {
                    body["stop"] = json!(stops);
                    body["cache_prompt"] = json!(true);
                }
                (format!("{}/completions", self.base_url), body)
            }
        }
    }

    async fn send(&self, request: &FimRequest) -> Result<FimAnswer, ModelError> {
        let (url, body) = self.body(request);
        let client = shared_client(self.connect)?;
        let mut builder = client.post(&url).json(&body);
        if let Some(key) = self.provider.api_key() {
            let value = secret_header(&format!("Bearer {}", key.expose()))?;
            builder = builder.header(AUTHORIZATION, value);
        }
        let response = builder.send().await.map_err(|err| ModelError::Connect {
            url: url.clone(),
            reason: if err.is_connect() {
                connect_reason(&err)
            } else {
                err.without_url().to_string()
            },
        })?;
        let status = response.status();
        if !status.is_success() {
            let bytes = response.bytes().await.unwrap_or_default();
            return Err(ModelError::Http {
                url,
                status: status.as_u16(),
                message: error_message(&bytes),
            });
        }
        let streamed = matches!(
            self.api,
            FimApi::Completions | FimApi::Auto | FimApi::Infill
        );
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if streamed && is_sse {
            return self.read_stream(&url, request, response).await;
        }
        let value: Value = response.json().await.map_err(|err| ModelError::Malformed {
            url: url.clone(),
            expected: "a JSON answer".into(),
            found: err.without_url().to_string(),
        })?;
        answer_of(&value).ok_or_else(|| ModelError::Malformed {
            url,
            expected: "a completion's text".into(),
            found: crate::model::http::snippet(&value.to_string()),
        })
    }

    async fn read_stream(
        &self,
        url: &str,
        request: &FimRequest,
        response: reqwest::Response,
    ) -> Result<FimAnswer, ModelError> {
        let mut events = response.bytes_stream().eventsource();
        let mut answer = FimAnswer::default();
        while let Some(event) = events.next().await {
            let event = event.map_err(|err| ModelError::StreamEndedEarly {
                url: url.to_owned(),
                detail: err.to_string(),
            })?;
            if event.data.trim() == "[DONE]" {
                break;
            }
            let Ok(value) = serde_json::from_str::<Value>(&event.data) else {
                continue;
            };
            if let Some(part) = answer_of(&value) {
                answer.text.push_str(&part.text);
                answer.evaluated_tokens = part.evaluated_tokens.or(answer.evaluated_tokens);
            }
            if let Some(until) = request.write_until
                && Instant::now() >= until
                && let Some(end) = answer.text.rfind('\n')
                && !answer.text[..end].trim().is_empty()
            {
                tracing::debug!("completion: its time is up; ended at its last whole line");
                answer.text.truncate(end + 1);
                break;
            }
            // A one-line suggestion is whole at its line end: stop the decoding here.
            if request.one_line && answer.text.contains('\n') {
                break;
            }
            if value.get("stop").and_then(Value::as_bool) == Some(true) {
                break;
            }
        }
        Ok(answer)
    }
}

/// The text (and evaluated prompt tokens) of one answer or stream event in any of the wires.
fn answer_of(value: &Value) -> Option<FimAnswer> {
    let text = value
        .pointer("/choices/0/text")
        .or_else(|| value.pointer("/choices/0/message/content"))
        .or_else(|| value.pointer("/choices/0/delta/content"))
        .or_else(|| value.get("content"))
        .or_else(|| value.get("response"))
        .and_then(Value::as_str);
    let evaluated = value
        .pointer("/timings/prompt_n")
        .and_then(Value::as_u64)
        .or_else(|| value.get("prompt_eval_count").and_then(Value::as_u64))
        .or_else(|| {
            let prompt = value.pointer("/usage/prompt_tokens")?.as_u64()?;
            let cached = value
                .pointer("/usage/prompt_tokens_details/cached_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            Some(prompt.saturating_sub(cached))
        });
    if text.is_none() && evaluated.is_none() {
        return None;
    }
    Some(FimAnswer {
        text: text.unwrap_or_default().to_owned(),
        evaluated_tokens: evaluated,
    })
}

impl FimProvider for HttpFim {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete<'a>(
        &'a self,
        request: &'a FimRequest,
    ) -> BoxFuture<'a, Result<FimAnswer, ModelError>> {
        Box::pin(async move {
            match tokio::time::timeout(self.total, self.send(request)).await {
                Ok(result) => result,
                Err(_) => Err(ModelError::Timeout {
                    phase: crate::model::TimeoutPhase::Total,
                    url: self.base_url.clone(),
                    elapsed: self.total,
                }),
            }
        })
    }
}

/// The wire `api` means for a provider at `base_url`.
pub fn resolve_api(api: FimApi, base_url: &str) -> FimApi {
    match api {
        FimApi::Auto
            if base_url.contains("api.mistral.ai") || base_url.contains("codestral.mistral.ai") =>
        {
            FimApi::Mistral
        }
        FimApi::Auto if base_url.contains(":11434") => FimApi::Ollama,
        FimApi::Auto => FimApi::Completions,
        other => other,
    }
}

/// The provider of the `completion` role (falling back to `coder`'s target): the first
/// candidate that can fill in the middle. An embedded provider's host is found or started.
pub async fn choose(config: &Config) -> Result<Arc<dyn FimProvider>, ModelError> {
    let (_, candidates) = config.role_candidates(ModelRole::Completion);
    let providers = config.effective_providers();
    let probe_timeout = config.timeouts.connect.min(Duration::from_secs(5));
    let mut reasons = Vec::new();
    for target in candidates {
        let Some(provider) = providers.get(&target.provider) else {
            reasons.push(format!("provider {:?} is not configured", target.provider));
            continue;
        };
        match provider.kind {
            ProviderKind::Anthropic | ProviderKind::Gemini => {
                reasons.push(format!(
                    "{} ({}) has no fill-in-the-middle API; set [roles] completion",
                    target.provider,
                    provider.kind.name()
                ));
                continue;
            }
            ProviderKind::Embedded => {
                match embedded_host(config, &target.provider, provider, &target.model).await {
                    Ok(fim) => return Ok(Arc::new(fim)),
                    Err(reason) => {
                        reasons.push(reason);
                        continue;
                    }
                }
            }
            ProviderKind::OpenAi => {}
        }
        let model = if target.model.is_empty() {
            let probed = crate::model::roles::probe(provider, probe_timeout).await;
            match (probed.error, probed.models.into_iter().next()) {
                (None, Some(first)) => first,
                (error, _) => {
                    reasons.push(format!(
                        "{} ({}): {}",
                        target.provider,
                        probed.url,
                        error.unwrap_or_else(|| "lists no models".into())
                    ));
                    continue;
                }
            }
        } else {
            target.model.clone()
        };
        let fim = HttpFim::new(
            config,
            &target.provider,
            provider,
            provider.base_url(),
            &model,
        );
        tracing::info!(model = %fim.name(), api = ?fim.api(), "completion model chosen");
        return Ok(Arc::new(fim));
    }
    Err(ModelError::NoModel {
        role: ModelRole::Completion.to_string(),
        reason: format!(
            "{}; set [roles] completion = \"provider/model\"",
            reasons.join("; ")
        ),
    })
}

/// The model inside patchwise: its host's `/v1/completions` with the family's tokens.
async fn embedded_host(
    config: &Config,
    name: &str,
    provider: &ProviderConfig,
    model: &str,
) -> Result<HttpFim, String> {
    use crate::model::embedded;
    let mut settings = provider.embedded.clone();
    if !model.is_empty() {
        settings.model = Some(model.to_owned());
    }
    let data_dir = config.data_dir();
    let probed = embedded::probe(&settings, &data_dir);
    if let Some(reason) = probed.error {
        return Err(format!("{name} (the model inside patchwise): {reason}"));
    }
    let resolved = embedded::model_file(&settings, &data_dir);
    let model_name = embedded::model_name(&resolved);
    let spec = embedded::host_spec(&settings, &resolved.path);
    let program = embedded::host_program();
    let announced =
        tokio::task::spawn_blocking(move || embedded::host::ensure(&spec, &data_dir, &program))
            .await
            .map_err(|err| format!("{name}: starting the model host failed: {err}"))?
            .map_err(|err| format!("{name}: {err}"))?;
    let mut wire = ProviderConfig::new(ProviderKind::OpenAi, Some(&announced.url));
    wire.api_key_env = Some(String::new());
    let mut config = config.clone();
    config.completion.api = FimApi::Completions;
    Ok(HttpFim::new(
        &config,
        name,
        &wire,
        &announced.url,
        &model_name,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::complete::fim::FimInput;

    fn fim(api: FimApi, base: &str, model: &str) -> HttpFim {
        let mut config = Config::default();
        config.completion.api = api;
        let provider = ProviderConfig::new(ProviderKind::OpenAi, Some(base));
        HttpFim::new(&config, "p", &provider, base, model)
    }

    fn request(one_line: bool) -> FimRequest {
        FimRequest {
            input: FimInput {
                path: "a.py".into(),
                prefix: "def f(".into(),
                suffix: ")\n".into(),
                extra: Vec::new(),
            },
            max_tokens: 32,
            one_line,
            write_until: None,
        }
    }

    #[test]
    fn each_wire_sends_its_documented_request() {
        let (url, body) = fim(
            FimApi::Auto,
            "http://127.0.0.1:8088/v1",
            "qwen2.5-coder-1.5b",
        )
        .body(&request(true));
        assert_eq!(url, "http://127.0.0.1:8088/v1/completions");
        assert_eq!(
            body["prompt"],
            "<|fim_prefix|>def f(<|fim_suffix|>)\n<|fim_middle|>"
        );
        assert_eq!(body["cache_prompt"], true);
        assert!(body["stop"].as_array().unwrap().contains(&json!("\n")));

        let (url, body) = fim(
            FimApi::Auto,
            "http://127.0.0.1:11434/v1",
            "qwen2.5-coder:1.5b-base",
        )
        .body(&request(false));
        assert_eq!(url, "http://127.0.0.1:11434/api/generate");
        assert_eq!(
            (body["prompt"].as_str(), body["suffix"].as_str()),
            (Some("def f("), Some(")\n"))
        );

        let (url, body) = fim(FimApi::Infill, "http://127.0.0.1:8080", "any").body(&request(false));
        assert_eq!(url, "http://127.0.0.1:8080/infill");
        assert_eq!(body["input_prefix"], "def f(");

        let (url, body) = fim(
            FimApi::Auto,
            "https://api.mistral.ai/v1",
            "codestral-latest",
        )
        .body(&request(false));
        assert_eq!(url, "https://api.mistral.ai/v1/fim/completions");
        assert_eq!(body["suffix"], ")\n");

        // A hosted OpenAI-compatible API gets at most four stops and no llama.cpp field.
        let (_, body) = fim(
            FimApi::Completions,
            "https://example.com/v1",
            "deepseek-coder",
        )
        .body(&request(true));
        assert_eq!(body["stop"].as_array().unwrap().len(), 4);
        assert!(body.get("cache_prompt").is_none());
        assert_eq!(
            body["prompt"],
            "<｜fim▁begin｜>def f(<｜fim▁hole｜>)\n<｜fim▁end｜>"
        );
    }

    #[test]
    fn answers_of_every_wire_are_read() {
        let cases = [
            (
                json!({"choices": [{"text": "x"}], "timings": {"prompt_n": 7}}),
                "x",
                Some(7),
            ),
            (json!({"content": "y", "stop": false}), "y", None),
            (
                json!({"response": "z", "prompt_eval_count": 3}),
                "z",
                Some(3),
            ),
            (
                json!({"choices": [{"message": {"content": "w"}}]}),
                "w",
                None,
            ),
            (
                json!({"choices": [{"text": "v"}], "usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 8}}}),
                "v",
                Some(2),
            ),
        ];
        for (value, text, evaluated) in cases {
            let answer = answer_of(&value).unwrap();
            assert_eq!(
                (answer.text.as_str(), answer.evaluated_tokens),
                (text, evaluated)
            );
        }
        assert_eq!(answer_of(&json!({"other": 1})), None);
    }
}
