//! The Gemini API wire format: `POST {base}/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse` for streaming (each SSE event is a whole
//! `GenerateContentResponse` chunk; the stream ends when the server closes it).
//!
//! Tools are `functionDeclarations`; calls come back as whole `functionCall` parts (never split
//! across chunks) and results go back as `functionResponse` parts matched by *name*. Gemini
//! gives calls no ids in most versions, so ids are generated (`gemini_call_N`) and not sent back.
//! Function parameters accept an OpenAPI subset of JSON Schema: keywords it refuses are removed
//! (see [`sanitize_schema`]). The key travels in the `x-goog-api-key` header, never in the URL.

use std::sync::atomic::{AtomicU64, Ordering};

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use crate::config::ProviderConfig;
use crate::model::http::{DecodeError, StreamDecoder, Wire, WireRequest, secret_header, snippet};
use crate::model::{
    ChatRequest, FinishReason, Message, ModelError, StreamEvent, ToolCall, ToolChoice, ToolSpec,
    Usage,
};

const GENERATED_ID_PREFIX: &str = "gemini_call_";

pub struct GeminiWire;

impl Wire for GeminiWire {
    fn build(
        &self,
        provider: &ProviderConfig,
        model: &str,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<WireRequest, ModelError> {
        let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
        if let Some(key) = provider.api_key() {
            headers.push((
                HeaderName::from_static("x-goog-api-key"),
                secret_header(key.expose())?,
            ));
        }
        let model = model.strip_prefix("models/").unwrap_or(model);
        let url = if stream {
            format!(
                "{}/models/{model}:streamGenerateContent?alt=sse",
                provider.base_url()
            )
        } else {
            format!("{}/models/{model}:generateContent", provider.base_url())
        };
        Ok(WireRequest {
            url,
            headers,
            body: request_body(request),
        })
    }

    fn parse_whole(&self, body: &Value) -> Result<Vec<StreamEvent>, DecodeError> {
        let mut decoder = GeminiDecoder::default();
        let mut events = decoder.chunk(body)?;
        decoder.finish.get_or_insert(FinishReason::Stop);
        events.extend(decoder.end()?);
        Ok(events)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(GeminiDecoder::default())
    }
}

/// A tool spec as a Gemini function declaration.
pub fn tool_to_wire(tool: &ToolSpec) -> Value {
    json!({
        "name": tool.name,
        "description": tool.description,
        "parameters": sanitize_schema(&tool.parameters),
    })
}

/// Removes the JSON Schema keywords Gemini's `parameters` refuses (`$schema`, `$id`, `$defs`,
/// `additionalProperties`, `default`, `examples`, …) and turns `"type": ["string", "null"]`
/// into `"type": "string", "nullable": true`.
pub fn sanitize_schema(schema: &Value) -> Value {
    const DROP: [&str; 11] = [
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "additionalProperties",
        "unevaluatedProperties",
        "patternProperties",
        "default",
        "examples",
        "const",
    ];
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                if DROP.contains(&key.as_str()) {
                    continue;
                }
                if key == "type"
                    && let Value::Array(types) = value
                {
                    let non_null: Vec<&Value> = types
                        .iter()
                        .filter(|t| t.as_str() != Some("null"))
                        .collect();
                    if let Some(first) = non_null.first() {
                        out.insert("type".into(), (*first).clone());
                    }
                    if non_null.len() < types.len() {
                        out.insert("nullable".into(), json!(true));
                    }
                    continue;
                }
                let value = if key == "properties" {
                    match value {
                        Value::Object(props) => Value::Object(
                            props
                                .iter()
                                .map(|(k, v)| (k.clone(), sanitize_schema(v)))
                                .collect(),
                        ),
                        other => other.clone(),
                    }
                } else {
                    sanitize_schema(value)
                };
                out.insert(key.clone(), value);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sanitize_schema).collect()),
        other => other.clone(),
    }
}

/// The JSON body of a generateContent request.
pub fn request_body(request: &ChatRequest) -> Value {
    let mut body = Map::new();
    let (system, contents) = messages_to_wire(&request.messages);
    if !system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    body.insert("contents".into(), Value::Array(contents));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": request.tools.iter().map(tool_to_wire).collect::<Vec<_>>()}]),
        );
        let config = match &request.options.tool_choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        body.insert(
            "toolConfig".into(),
            json!({"functionCallingConfig": config}),
        );
    }
    let options = &request.options;
    let mut generation = Map::new();
    if let Some(t) = options.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(n) = options.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(n));
    }
    if !options.stop.is_empty() {
        generation.insert("stopSequences".into(), json!(options.stop));
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

/// The system instruction and the `contents` (roles `user` and `model`, merged when adjacent).
pub fn messages_to_wire(messages: &[Message]) -> (String, Vec<Value>) {
    let mut system = Vec::new();
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, parts) = match message {
            Message::System { content } => {
                system.push(content.as_str());
                continue;
            }
            Message::User { content } => ("user", text_part(content)),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut parts = text_part(content);
                for call in tool_calls {
                    let args = if call.arguments.is_object() {
                        call.arguments.clone()
                    } else {
                        json!({})
                    };
                    let mut function_call = json!({"name": call.name, "args": args});
                    if !call.id.starts_with(GENERATED_ID_PREFIX) {
                        function_call["id"] = json!(call.id);
                    }
                    let mut part = json!({"functionCall": function_call});
                    if let Some(signature) = call
                        .provider_data
                        .as_ref()
                        .and_then(|d| d.get("thoughtSignature"))
                    {
                        part["thoughtSignature"] = signature.clone();
                    }
                    parts.push(part);
                }
                ("model", parts)
            }
            Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => {
                let response = if *is_error {
                    json!({"error": content})
                } else {
                    json!({"content": content})
                };
                let mut function_response = json!({"name": name, "response": response});
                if !call_id.starts_with(GENERATED_ID_PREFIX) {
                    function_response["id"] = json!(call_id);
                }
                ("user", vec![json!({"functionResponse": function_response})])
            }
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => out.push((role, parts)),
        }
    }
    let contents = out
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    (system.join("\n\n"), contents)
}

fn text_part(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"text": text})]
    }
}

/// Parses `contents` back into neutral messages (round-trip tests, transcript import).
pub fn messages_from_wire(system: &str, contents: &[Value]) -> Vec<Message> {
    let mut out = Vec::new();
    if !system.is_empty() {
        out.push(Message::system(system));
    }
    // Results are matched to calls by name, in order.
    let mut pending: Vec<(String, String)> = Vec::new();
    for content in contents {
        let role = content
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user");
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut text = String::new();
        let mut calls = Vec::new();
        for part in &parts {
            if let Some(t) = part.get("text").and_then(Value::as_str) {
                text.push_str(t);
            } else if let Some(call) = part.get("functionCall") {
                let signature = part.get("thoughtSignature").cloned();
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(next_id);
                pending.push((name.clone(), id.clone()));
                calls.push(ToolCall {
                    id,
                    name,
                    arguments: call.get("args").cloned().unwrap_or(json!({})),
                    arguments_error: None,
                    provider_data: signature.map(|sig| json!({"thoughtSignature": sig})),
                });
            } else if let Some(response) = part.get("functionResponse") {
                let name = response
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let call_id = match response.get("id").and_then(Value::as_str) {
                    Some(id) => {
                        pending.retain(|(_, p)| p != id);
                        id.to_owned()
                    }
                    None => match pending.iter().position(|(n, _)| *n == name) {
                        Some(pos) => pending.remove(pos).1,
                        None => String::new(),
                    },
                };
                let payload = response.get("response").cloned().unwrap_or(Value::Null);
                let (content, is_error) = match (payload.get("content"), payload.get("error")) {
                    (Some(Value::String(s)), _) => (s.clone(), false),
                    (_, Some(Value::String(s))) => (s.clone(), true),
                    _ => (payload.to_string(), false),
                };
                out.push(Message::ToolResult {
                    call_id,
                    name,
                    content,
                    is_error,
                });
            }
        }
        match role {
            "model" => out.push(Message::Assistant {
                content: text,
                tool_calls: calls,
            }),
            _ if !text.is_empty() => out.push(Message::user(text)),
            _ => {}
        }
    }
    out
}

fn next_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{GENERATED_ID_PREFIX}{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn finish_reason(text: &str) -> FinishReason {
    match text {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Decodes streamed `GenerateContentResponse` chunks.
#[derive(Debug, Default)]
pub struct GeminiDecoder {
    finish: Option<FinishReason>,
    usage: Usage,
    calls: usize,
    text_chars: usize,
}

impl GeminiDecoder {
    fn chunk(&mut self, value: &Value) -> Result<Vec<StreamEvent>, DecodeError> {
        if let Some(error) = value.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            return Err(DecodeError::Provider(message));
        }
        if let Some(usage) = value.get("usageMetadata") {
            self.usage = Usage {
                input_tokens: usage
                    .get("promptTokenCount")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                output_tokens: usage
                    .get("candidatesTokenCount")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            };
        }
        let mut events = Vec::new();
        let candidate = value
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        let Some(candidate) = candidate else {
            if let Some(reason) = value
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str)
            {
                self.finish = Some(FinishReason::ContentFilter);
                tracing::debug!("gemini blocked the prompt: {reason}");
                return Ok(events);
            }
            if value.get("usageMetadata").is_some() {
                return Ok(events);
            }
            return Err(DecodeError::Malformed {
                expected: "a response with a \"candidates\" array".to_owned(),
                found: snippet(&value.to_string()),
            });
        };
        let parts = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for part in parts {
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                if !text.is_empty() {
                    self.text_chars += text.chars().count();
                    events.push(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
            } else if let Some(call) = part.get("functionCall") {
                let signature = part.get("thoughtSignature").cloned();
                let index = self.calls;
                self.calls += 1;
                let call = ToolCall {
                    id: call
                        .get("id")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(next_id),
                    name: call
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    arguments: call.get("args").cloned().unwrap_or(json!({})),
                    arguments_error: None,
                    provider_data: signature.map(|sig| json!({"thoughtSignature": sig})),
                };
                events.push(StreamEvent::ToolCallStarted {
                    index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                events.push(StreamEvent::ToolCall { index, call });
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(reason));
        }
        Ok(events)
    }
}

impl StreamDecoder for GeminiDecoder {
    fn event(&mut self, _name: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        if data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let value: Value = serde_json::from_str(data).map_err(|err| DecodeError::Malformed {
            expected: "a JSON GenerateContentResponse after \"data:\"".to_owned(),
            found: format!("{} ({err})", snippet(data)),
        })?;
        self.chunk(&value)
    }

    fn is_done(&self) -> bool {
        false
    }

    fn end(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        let Some(mut finish) = self.finish.clone() else {
            return Err(DecodeError::EndedEarly(format!(
                "after {} characters of text and {} function calls, before a \"finishReason\"",
                self.text_chars, self.calls
            )));
        };
        if self.calls > 0 && finish == FinishReason::Stop {
            finish = FinishReason::ToolCalls;
        }
        Ok(vec![StreamEvent::Done {
            finish,
            usage: self.usage,
        }])
    }
}
