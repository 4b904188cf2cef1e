//! The OpenAI Chat Completions wire format (`POST {base_url}/chat/completions`), spoken by
//! OpenAI, Ollama, LM Studio, llama.cpp's server, vLLM and OpenRouter.
//!
//! Streaming answers are SSE `data:` lines ending with `data: [DONE]`; a tool call arrives as
//! deltas keyed by `index` (id and name first, then argument fragments) and is assembled here.
//! Assistant messages that carry tool calls are sent with `content: ""`, never `null`:
//! llama.cpp-based servers answer HTTP 500 to `null`.

use std::collections::BTreeMap;

use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use crate::config::ProviderConfig;
use crate::model::http::{DecodeError, StreamDecoder, Wire, WireRequest, secret_header};
use crate::model::text_tools::parse_arguments;
use crate::model::{
    ChatRequest, FinishReason, Message, ModelError, StreamEvent, ToolCall, ToolChoice, ToolSpec,
    Usage,
};

pub struct OpenAiWire;

impl Wire for OpenAiWire {
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
                AUTHORIZATION,
                secret_header(&format!("Bearer {}", key.expose()))?,
            ));
        }
        // OpenAI's own API wants `max_completion_tokens` (reasoning models refuse `max_tokens`);
        // every compatible server knows `max_tokens`.
        let official = provider.base_url().contains("api.openai.com");
        Ok(WireRequest {
            url: format!("{}/chat/completions", provider.base_url()),
            headers,
            body: request_body(model, request, stream, official),
        })
    }

    fn parse_whole(&self, body: &Value) -> Result<Vec<StreamEvent>, DecodeError> {
        parse_response(body)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(OpenAiDecoder::default())
    }
}

/// A tool spec in OpenAI's format.
pub fn tool_to_wire(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
    })
}

/// The JSON body of a chat completion request.
pub fn request_body(model: &str, request: &ChatRequest, stream: bool, official: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "messages".into(),
        Value::Array(request.messages.iter().map(message_to_wire).collect()),
    );
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool_to_wire).collect()),
        );
        let choice = match &request.options.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice".into(), choice);
    }
    let options = &request.options;
    // OpenAI's reasoning models refuse any temperature but the default.
    let reasoning = official
        && ["o1", "o3", "o4", "gpt-5"]
            .iter()
            .any(|p| model.starts_with(p));
    if let Some(t) = options.temperature
        && !reasoning
    {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = options.max_tokens {
        let key = if official {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(key.into(), json!(n));
    }
    if !options.stop.is_empty() {
        body.insert("stop".into(), json!(options.stop));
    }
    body.insert("stream".into(), json!(stream));
    if stream {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// One neutral message in OpenAI's format.
pub fn message_to_wire(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut m = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                m["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = if c.arguments.is_null() {
                            "{}".to_owned()
                        } else {
                            c.arguments.to_string()
                        };
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": arguments},
                        })
                    })
                    .collect();
            }
            m
        }
        Message::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => {
            let content = if *is_error && !content.to_ascii_lowercase().starts_with("error") {
                format!("error: {content}")
            } else {
                content.clone()
            };
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

/// Parses a wire message back into the neutral form (used by round-trip tests and by tools
/// that import transcripts).
pub fn message_from_wire(value: &Value) -> Option<Message> {
    let content = value
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match value.get("role")?.as_str()? {
        "system" | "developer" => Some(Message::System { content }),
        "user" => Some(Message::User { content }),
        "assistant" => {
            let tool_calls = value
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| {
                    calls
                        .iter()
                        .enumerate()
                        .filter_map(|(i, c)| wire_tool_call(c, i))
                        .collect()
                })
                .unwrap_or_default();
            Some(Message::Assistant {
                content,
                tool_calls,
            })
        }
        "tool" => {
            let (content, is_error) = match content.strip_prefix("error: ") {
                Some(rest) => (rest.to_owned(), true),
                None => (content, false),
            };
            Some(Message::ToolResult {
                call_id: value.get("tool_call_id")?.as_str()?.to_owned(),
                name: value
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                content,
                is_error,
            })
        }
        _ => None,
    }
}

/// Parses wire messages back into neutral ones, naming each tool result after the call it
/// answers (OpenAI's tool messages carry only the call id).
pub fn messages_from_wire(values: &[Value]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for value in values {
        let Some(mut message) = message_from_wire(value) else {
            continue;
        };
        if let Message::ToolResult { call_id, name, .. } = &mut message
            && name.is_empty()
        {
            let found = out.iter().rev().find_map(|m| match m {
                Message::Assistant { tool_calls, .. } => tool_calls
                    .iter()
                    .find(|c| c.id == *call_id)
                    .map(|c| c.name.clone()),
                _ => None,
            });
            *name = found.unwrap_or_default();
        }
        out.push(message);
    }
    out
}

fn wire_tool_call(call: &Value, index: usize) -> Option<ToolCall> {
    let function = call.get("function")?;
    let name = function.get("name")?.as_str()?.to_owned();
    let (arguments, arguments_error) = match function.get("arguments") {
        Some(Value::String(raw)) => parse_arguments(raw),
        Some(Value::Object(map)) => (Value::Object(map.clone()), None),
        _ => (json!({}), None),
    };
    Some(ToolCall {
        id: call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| format!("call_{index}")),
        name,
        arguments,
        arguments_error,
        provider_data: None,
    })
}

fn finish_reason(text: &str) -> FinishReason {
    match text {
        "stop" | "eos" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

fn usage(value: &Value) -> Option<Usage> {
    let u = value.get("usage").filter(|u| u.is_object())?;
    Some(Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

fn provider_error(value: &Value) -> Option<String> {
    let error = value.get("error")?;
    Some(
        error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| error.to_string()),
    )
}

fn malformed(expected: &str, found: &Value) -> DecodeError {
    DecodeError::Malformed {
        expected: expected.to_owned(),
        found: crate::model::http::snippet(&found.to_string()),
    }
}

/// A whole (non-streamed) chat completion.
pub fn parse_response(body: &Value) -> Result<Vec<StreamEvent>, DecodeError> {
    if let Some(message) = provider_error(body) {
        return Err(DecodeError::Provider(message));
    }
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| malformed("a chat completion with a \"choices\" array", body))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed("a choice with a \"message\"", choice))?;
    let mut events = Vec::new();
    if let Some(text) = message.get("content").and_then(Value::as_str)
        && !text.is_empty()
    {
        events.push(StreamEvent::TextDelta {
            text: text.to_owned(),
        });
    }
    let calls: Vec<ToolCall> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .filter_map(|(i, c)| wire_tool_call(c, i))
                .collect()
        })
        .unwrap_or_default();
    for (index, call) in calls.iter().enumerate() {
        events.push(StreamEvent::ToolCallStarted {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        events.push(StreamEvent::ToolCall {
            index,
            call: call.clone(),
        });
    }
    let mut finish = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(finish_reason)
        .unwrap_or(FinishReason::Stop);
    if !calls.is_empty() && finish == FinishReason::Stop {
        finish = FinishReason::ToolCalls;
    }
    events.push(StreamEvent::Done {
        finish,
        usage: usage(body).unwrap_or_default(),
    });
    Ok(events)
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    started: bool,
    finished: bool,
}

/// Assembles a streamed chat completion.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    calls: BTreeMap<usize, PartialCall>,
    finish: Option<FinishReason>,
    usage: Usage,
    text_chars: usize,
    done: bool,
}

impl OpenAiDecoder {
    /// Completed tool calls not yet emitted, in index order.
    fn finish_calls(&mut self) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        for (index, partial) in &mut self.calls {
            if partial.finished {
                continue;
            }
            partial.finished = true;
            if !partial.started {
                events.push(StreamEvent::ToolCallStarted {
                    index: *index,
                    id: partial.id.clone(),
                    name: partial.name.clone(),
                });
            }
            let (arguments, mut arguments_error) = parse_arguments(&partial.arguments);
            if arguments_error.is_some() && self.finish == Some(FinishReason::Length) {
                arguments_error = Some(format!(
                    "the answer reached its output-token limit inside these arguments ({} bytes written); write the call again with less text, or split the change",
                    partial.arguments.len()
                ));
            }
            events.push(StreamEvent::ToolCall {
                index: *index,
                call: ToolCall {
                    id: partial.id.clone(),
                    name: partial.name.clone(),
                    arguments,
                    arguments_error,
                    provider_data: None,
                },
            });
        }
        events
    }
}

impl StreamDecoder for OpenAiDecoder {
    fn event(&mut self, _name: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|err| DecodeError::Malformed {
            expected: "a JSON chunk after \"data:\"".to_owned(),
            found: format!("{} ({err})", crate::model::http::snippet(data)),
        })?;
        if let Some(message) = provider_error(&chunk) {
            return Err(DecodeError::Provider(message));
        }
        if let Some(u) = usage(&chunk) {
            self.usage = u;
        }
        let mut events = Vec::new();
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            if chunk.get("usage").is_some() {
                return Ok(events);
            }
            return Err(malformed("a chunk with a \"choices\" array", &chunk));
        };
        let Some(choice) = choices.first() else {
            return Ok(events);
        };
        let delta = choice.get("delta").cloned().unwrap_or(Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.text_chars += text.chars().count();
            events.push(StreamEvent::TextDelta {
                text: text.to_owned(),
            });
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, call) in calls.iter().enumerate() {
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                let index = match call.get("index").and_then(Value::as_u64) {
                    Some(i) => i as usize,
                    // Servers that omit `index` send one whole call per entry: key by id.
                    None => id
                        .and_then(|id| self.calls.iter().find(|(_, p)| p.id == id).map(|(i, _)| *i))
                        .unwrap_or(self.calls.len() + position),
                };
                let partial = self.calls.entry(index).or_default();
                if let Some(id) = id {
                    partial.id = id.to_owned();
                }
                let function = call.get("function").cloned().unwrap_or(Value::Null);
                // OpenAI sends the name once; llama-cpp-python repeats it in every delta.
                if let Some(name) = function.get("name").and_then(Value::as_str)
                    && !name.is_empty()
                    && partial.name.is_empty()
                {
                    partial.name = name.to_owned();
                }
                let fragment = match function.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Object(map)) => Value::Object(map.clone()).to_string(),
                    _ => String::new(),
                };
                if !partial.started && !partial.name.is_empty() {
                    partial.started = true;
                    if partial.id.is_empty() {
                        partial.id = format!("call_{index}");
                    }
                    events.push(StreamEvent::ToolCallStarted {
                        index,
                        id: partial.id.clone(),
                        name: partial.name.clone(),
                    });
                }
                if !fragment.is_empty() {
                    partial.arguments.push_str(&fragment);
                    if partial.started {
                        events.push(StreamEvent::ToolCallDelta { index, fragment });
                    }
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(reason));
            events.extend(self.finish_calls());
        }
        Ok(events)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        // Every server sends a finish_reason before [DONE]; llama-cpp-python sends [DONE] alone
        // when another request interrupted this one. That answer is cut, not finished.
        if self.done && self.finish.is_none() {
            return Err(DecodeError::EndedEarly(format!(
                "[DONE] arrived without a finish_reason after {} characters of text and {} tool calls (the server stopped generating, e.g. llama-cpp-python interrupting it for another request)",
                self.text_chars,
                self.calls.len()
            )));
        }
        if !self.done && self.finish.is_none() {
            let open = self.calls.values().find(|p| !p.finished);
            let detail = match open {
                Some(p) => format!(
                    "inside tool call `{}` after {} bytes of arguments, before \"finish_reason\" or [DONE]",
                    p.name,
                    p.arguments.len()
                ),
                None => format!(
                    "after {} characters of text, before \"finish_reason\" or [DONE]",
                    self.text_chars
                ),
            };
            return Err(DecodeError::EndedEarly(detail));
        }
        let mut events = self.finish_calls();
        let mut finish = self.finish.clone().unwrap_or(FinishReason::Stop);
        if !self.calls.is_empty() && finish == FinishReason::Stop {
            finish = FinishReason::ToolCalls;
        }
        events.push(StreamEvent::Done {
            finish,
            usage: self.usage,
        });
        Ok(events)
    }
}
