//! Vectors for texts, from a server's `POST {base_url}/embeddings` (the OpenAI wire format,
//! which Ollama, LM Studio, llama.cpp's server, vLLM and OpenAI speak). Research ranks a part's
//! passages by meaning with them (`research::meaning`); the trait keeps that ranking free of
//! HTTP, and a test or another runtime can stand behind it.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::config::ProviderConfig;
use crate::model::http::{connect_reason, error_message, secret_header};
use reqwest::header::AUTHORIZATION;

/// Turns texts into vectors, one per text, in order.
pub trait Embedder: Send + Sync {
    /// `provider/model`, for logs and notes.
    fn name(&self) -> &str;
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, String>>;
}

/// An OpenAI-compatible embeddings endpoint.
pub struct HttpEmbedder {
    name: String,
    model: String,
    provider: ProviderConfig,
    client: reqwest::Client,
    timeout: Duration,
}

impl HttpEmbedder {
    pub fn new(
        name: &str,
        model: &str,
        provider: ProviderConfig,
        timeout: Duration,
    ) -> Result<HttpEmbedder, String> {
        let client = crate::model::http::shared_client(Duration::from_secs(10))
            .map_err(|e| format!("no HTTP client: {e}"))?;
        Ok(HttpEmbedder {
            name: format!("{name}/{model}"),
            model: model.to_owned(),
            provider,
            client,
            timeout,
        })
    }
}

impl Embedder for HttpEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, String>> {
        Box::pin(async move {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            let url = format!("{}/embeddings", self.provider.base_url());
            let mut request = self
                .client
                .post(&url)
                .timeout(self.timeout)
                .json(&json!({ "model": self.model, "input": texts }));
            if let Some(key) = self.provider.api_key() {
                let header = secret_header(&format!("Bearer {}", key.expose()))
                    .map_err(|e| e.to_string())?;
                request = request.header(AUTHORIZATION, header);
            }
            let response = request.send().await.map_err(|e| {
                if e.is_timeout() {
                    format!("{url} did not answer within {} s", self.timeout.as_secs())
                } else {
                    format!("{url} did not answer ({})", connect_reason(&e))
                }
            })?;
            let status = response.status();
            let bytes = response.bytes().await.map_err(|e| {
                format!(
                    "{url} answered {status}, then the answer broke off ({})",
                    connect_reason(&e)
                )
            })?;
            if !status.is_success() {
                return Err(format!(
                    "{url} answered {status}: {}",
                    error_message(&bytes)
                ));
            }
            let body: Value = serde_json::from_slice(&bytes).map_err(|_| {
                format!(
                    "{url} answered {status} with no JSON: {}",
                    error_message(&bytes)
                )
            })?;
            vectors(&body, texts.len()).map_err(|why| format!("{url}: {why}"))
        })
    }
}

/// The vectors of an embeddings answer, in the order of the input (`data[].index`), checked:
/// one for each of the `expected` texts, all of one length, every number finite.
pub fn vectors(body: &Value, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = body
        .get("data")
        .and_then(Value::as_array)
        .ok_or("the answer has no `data` list")?;
    let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (k, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map_or(k, |i| i as usize);
        let vector: Vec<f32> = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or("an item of `data` has no `embedding` list")?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32).filter(|x| x.is_finite()))
            .collect::<Option<_>>()
            .ok_or("an embedding holds something that is not a finite number")?;
        let slot = out.get_mut(index).ok_or(format!(
            "an embedding for input {index}, of {expected} sent"
        ))?;
        *slot = Some(vector);
    }
    let out: Vec<Vec<f32>> = out
        .into_iter()
        .collect::<Option<_>>()
        .ok_or(format!("{} embeddings for {expected} inputs", data.len()))?;
    if out.iter().any(|v| v.is_empty() || v.len() != out[0].len()) {
        return Err("the embeddings are not all of one length".to_owned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_in_the_order_of_the_input() {
        let body = json!({"object": "list", "data": [
            {"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
            {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]}
        ], "model": "m"});
        assert_eq!(
            vectors(&body, 2).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
    }

    #[test]
    fn answers_that_do_not_fit_the_input_are_errors() {
        let one = json!({"data": [{"index": 0, "embedding": [1.0]}]});
        assert!(
            vectors(&one, 2)
                .unwrap_err()
                .contains("1 embeddings for 2 inputs")
        );
        let uneven = json!({"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]});
        assert!(vectors(&uneven, 2).unwrap_err().contains("one length"));
        let beyond = json!({"data": [{"index": 5, "embedding": [1.0]}]});
        assert!(vectors(&beyond, 1).unwrap_err().contains("input 5"));
        let text = json!({"data": [{"embedding": ["x"]}]});
        assert!(vectors(&text, 1).unwrap_err().contains("finite number"));
        assert!(
            vectors(&json!({"error": "no"}), 1)
                .unwrap_err()
                .contains("no `data`")
        );
    }
}
