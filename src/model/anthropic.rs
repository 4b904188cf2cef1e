//! The Anthropic Messages wire format (`POST {base_url}/v1/messages`).
//!
//! Differences from OpenAI that matter here: the system prompt is a top-level field; tool calls
//! are `tool_use` content blocks and their results `tool_result` blocks inside a *user*
//! message; roles must alternate, so consecutive messages of one role are merged; `max_tokens`
//! is required. Streaming uses named SSE events (`message_start`, `content_block_start`,
//! `content_block_delta` with `text_delta` / `input_json_delta`, `content_block_stop`,
//! `message_delta`, `message_stop`, `ping`, `error`).

use std::collections::BTreeMap;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use crate::config::ProviderConfig;
use crate::model::http::{DecodeError, StreamDecoder, Wire, WireRequest, secret_header, snippet};
use crate::model::text_tools::parse_arguments;
use crate::model::{
    ChatRequest, FinishReason, Message, ModelError, StreamEvent, ToolCall, ToolChoice, ToolSpec,
    Usage,
};

/// The API version header sent with every request.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by this API; used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

pub struct AnthropicWire;

impl Wire for AnthropicWire {
    fn build(
        &self,
        provider: &ProviderConfig,
        model: &str,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<WireRequest, ModelError> {
        let mut headers = vec![(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        )];
        if let Some(key) = provider.api_key() {
            headers.push((
                HeaderName::from_static("x-api-key"),
                secret_header(key.expose())?,
            ));
        }
        Ok(WireRequest {
            url: messages_url(provider.base_url()),
            headers,
            body: request_body(model, request, stream),
        })
    }

    fn parse_whole(&self, body: &Value) -> Result<Vec<StreamEvent>, DecodeError> {
        parse_response(body)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(AnthropicDecoder::default())
    }
}

/// `{base}/v1/messages`, accepting a base that already ends in `/v1`.
pub fn messages_url(base: &str) -> String {
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// A tool spec in Anthropic's format.
pub fn tool_to_wire(tool: &ToolSpec) -> Value {
    json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.parameters,
    })
}

/// The JSON body of a Messages request.
pub fn request_body(model: &str, request: &ChatRequest, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let options = &request.options;
    body.insert(
        "max_tokens".into(),
        json!(options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    let (system, messages) = messages_to_wire(&request.messages);
    if !system.is_empty() {
        body.insert("system".into(), json!(system));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool_to_wire).collect()),
        );
        let choice = match &options.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if !options.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(options.stop));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

/// The system prompt and the alternating messages.
pub fn messages_to_wire(messages: &[Message]) -> (String, Vec<Value>) {
    let mut system = Vec::new();
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::System { content } => {
                system.push(content.as_str());
                continue;
            }
            Message::User { content } => ("user", text_block(content)),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = text_block(content);
                for call in tool_calls {
                    let input = if call.arguments.is_object() {
                        call.arguments.clone()
                    } else {
                        json!({})
                    };
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": input,
                    }));
                }
                ("assistant", blocks)
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                });
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    let messages = out
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    (system.join("\n\n"), messages)
}

fn text_block(text: &str) -> Vec<Value> {
    // Anthropic refuses empty text blocks.
    if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

/// Parses wire messages back into neutral ones (round-trip tests, transcript import).
pub fn messages_from_wire(system: &str, messages: &[Value]) -> Vec<Message> {
    let mut out = Vec::new();
    if !system.is_empty() {
        out.push(Message::system(system));
    }
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let mut text = String::new();
        let mut calls = Vec::new();
        for block in &blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    text.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""))
                }
                Some("tool_use") => {
                    let id = block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let name = block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    names.insert(id.clone(), name.clone());
                    calls.push(ToolCall {
                        id,
                        name,
                        arguments: block.get("input").cloned().unwrap_or(json!({})),
                        arguments_error: None,
                        provider_data: None,
                    });
                }
                Some("tool_result") => {
                    let call_id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let content = match block.get("content") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Array(parts)) => parts
                            .iter()
                            .filter_map(|p| p.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join(""),
                        _ => String::new(),
                    };
                    out.push(Message::ToolResult {
                        name: names.get(&call_id).cloned().unwrap_or_default(),
                        call_id,
                        content,
                        is_error: block
                            .get("is_error")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    });
                }
                _ => {}
            }
        }
        match role {
            "assistant" => out.push(Message::Assistant {
                content: text,
                tool_calls: calls,
            }),
            "user" if !text.is_empty() => out.push(Message::user(text)),
            _ => {}
        }
    }
    out
}

fn finish_reason(text: &str) -> FinishReason {
    match text {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

fn provider_error(value: &Value) -> Option<String> {
    if value.get("type").and_then(Value::as_str) != Some("error") {
        return None;
    }
    let error = value.get("error")?;
    let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    Some(format!("{kind}: {message}"))
}

fn malformed(expected: &str, found: &Value) -> DecodeError {
    DecodeError::Malformed {
        expected: expected.to_owned(),
        found: snippet(&found.to_string()),
    }
}

/// A whole (non-streamed) Messages response.
pub fn parse_response(body: &Value) -> Result<Vec<StreamEvent>, DecodeError> {
    if let Some(message) = provider_error(body) {
        return Err(DecodeError::Provider(message));
    }
    let blocks = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("a message with a \"content\" array", body))?;
    let mut events = Vec::new();
    let mut index = 0;
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                if !text.is_empty() {
                    events.push(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
            }
            Some("tool_use") => {
                let call = ToolCall {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    name: block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    arguments: block.get("input").cloned().unwrap_or(json!({})),
                    arguments_error: None,
                    provider_data: None,
                };
                events.push(StreamEvent::ToolCallStarted {
                    index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                events.push(StreamEvent::ToolCall { index, call });
                index += 1;
            }
            _ => {}
        }
    }
    let usage = body.get("usage").cloned().unwrap_or(Value::Null);
    events.push(StreamEvent::Done {
        finish: body
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(finish_reason)
            .unwrap_or(FinishReason::Stop),
        usage: Usage {
            input_tokens: usage
                .get("input_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            output_tokens: usage
                .get("output_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        },
    });
    Ok(events)
}

#[derive(Debug)]
struct OpenTool {
    ordinal: usize,
    id: String,
    name: String,
    json: String,
}

/// Decodes Anthropic's named SSE events.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    tools: BTreeMap<u64, OpenTool>,
    tool_count: usize,
    usage: Usage,
    finish: Option<FinishReason>,
    text_chars: usize,
    done: bool,
}

impl StreamDecoder for AnthropicDecoder {
    fn event(&mut self, name: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        if data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let value: Value = serde_json::from_str(data).map_err(|err| DecodeError::Malformed {
            expected: format!("JSON data for the {name:?} event"),
            found: format!("{} ({err})", snippet(data)),
        })?;
        if let Some(message) = provider_error(&value) {
            return Err(DecodeError::Provider(message));
        }
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(name)
            .to_owned();
        let mut events = Vec::new();
        match kind.as_str() {
            "message_start" => {
                let usage = value
                    .pointer("/message/usage")
                    .cloned()
                    .unwrap_or(Value::Null);
                self.usage.input_tokens = usage
                    .get("input_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                self.usage.output_tokens = usage
                    .get("output_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
            }
            "content_block_start" => {
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                let block = value.get("content_block").ok_or_else(|| {
                    malformed("a \"content_block\" in content_block_start", &value)
                })?;
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let tool = OpenTool {
                            ordinal: self.tool_count,
                            id: block
                                .get("id")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                            name: block
                                .get("name")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                            json: String::new(),
                        };
                        self.tool_count += 1;
                        events.push(StreamEvent::ToolCallStarted {
                            index: tool.ordinal,
                            id: tool.id.clone(),
                            name: tool.name.clone(),
                        });
                        self.tools.insert(index, tool);
                    }
                    Some("text") => {
                        if let Some(text) = block.get("text").and_then(Value::as_str)
                            && !text.is_empty()
                        {
                            self.text_chars += text.chars().count();
                            events.push(StreamEvent::TextDelta {
                                text: text.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                let delta = value
                    .get("delta")
                    .ok_or_else(|| malformed("a \"delta\" in content_block_delta", &value))?;
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        if !text.is_empty() {
                            self.text_chars += text.chars().count();
                            events.push(StreamEvent::TextDelta {
                                text: text.to_owned(),
                            });
                        }
                    }
                    Some("input_json_delta") => {
                        let fragment = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        let tool = self.tools.get_mut(&index).ok_or_else(|| {
                            malformed("input_json_delta for a started tool_use block", &value)
                        })?;
                        if !fragment.is_empty() {
                            tool.json.push_str(fragment);
                            events.push(StreamEvent::ToolCallDelta {
                                index: tool.ordinal,
                                fragment: fragment.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(tool) = self.tools.remove(&index) {
                    let (arguments, arguments_error) = parse_arguments(&tool.json);
                    events.push(StreamEvent::ToolCall {
                        index: tool.ordinal,
                        call: ToolCall {
                            id: tool.id,
                            name: tool.name,
                            arguments,
                            arguments_error,
                            provider_data: None,
                        },
                    });
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.finish = Some(finish_reason(reason));
                }
                if let Some(n) = value
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    self.usage.output_tokens = n;
                }
                if let Some(n) = value.pointer("/usage/input_tokens").and_then(Value::as_u64)
                    && n > 0
                {
                    self.usage.input_tokens = n;
                }
            }
            "message_stop" => self.done = true,
            _ => {}
        }
        Ok(events)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        if !self.done {
            let detail = match self.tools.values().next() {
                Some(tool) => format!(
                    "inside tool_use block `{}` after {} bytes of input, before message_stop",
                    tool.name,
                    tool.json.len()
                ),
                None => format!(
                    "after {} characters of text, before message_stop",
                    self.text_chars
                ),
            };
            return Err(DecodeError::EndedEarly(detail));
        }
        Ok(vec![StreamEvent::Done {
            finish: self.finish.clone().unwrap_or(FinishReason::Stop),
            usage: self.usage,
        }])
    }
}
