//! Tool calls written as text, for models and servers without native tool calling, and for
//! small local models that answer a tool-enabled request with the call as JSON in `content`
//! (llama.cpp's server with Qwen2.5-Coder writes ```` ```json {"name": …, "arguments": …} ``` ````).
//!
//! # The documented format (taught by [`to_text_protocol`])
//!
//! ````text
//! ```tool
//! {"name": "read_file", "arguments": {"path": "src/main.rs"}}
//! ```
//! ````
//!
//! The parser also accepts `~~~` fences, any fence length, the tags `tool`, `tool_call`, `json`
//! (or none), `<tool_call>…</tool_call>` tags, a bare JSON object as the whole answer, prose
//! around the blocks, `parameters`/`args`/`input` for `arguments`, arguments given as a JSON
//! string, trailing commas, single quotes, comments and Python's `True`/`False`/`None`.
//! A block the answer never closed is reported as incomplete — its call is not guessed.
//! Blocks tagged `json` (or untagged) only count when they name a tool the request offered, so
//! JSON examples in an answer are not mistaken for calls. This module never does I/O.

use std::sync::atomic::{AtomicU64, Ordering};

mod repair;

use serde_json::{Value, json};

use crate::model::{
    ChatOptions, ChatRequest, FinishReason, Message, ModelError, StreamEvent, ToolCall, ToolChoice,
    ToolSpec,
};

/// A tool call block that was opened but not finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incomplete {
    /// 1-based line where the block opened.
    pub line: usize,
    pub detail: String,
}

/// What [`parse_tool_text`] found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolText {
    pub calls: Vec<ToolCall>,
    /// The text with the tool blocks removed.
    pub prose: String,
    pub incomplete: Option<Incomplete>,
}

/// Finds tool calls in `text`. `known` lists the tool names the request offered; blocks that are
/// not explicitly tagged as tool calls only count when they name one of them.
pub fn parse_tool_text(text: &str, known: &[&str]) -> ToolText {
    let mut result = ToolText::default();
    let mut prose = String::new();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let Some(open) = Opening::parse(line) else {
            prose.push_str(line);
            i += 1;
            continue;
        };
        // Collect the body up to the closing fence (or tag), which may end a content line.
        let mut body = open.rest.clone();
        let mut closed = open.closed_inline;
        let mut j = i + 1;
        if !closed {
            while j < lines.len() {
                let l = lines[j];
                j += 1;
                if let Some(before) = open.closes(l) {
                    body.push_str(before);
                    closed = true;
                    break;
                }
                body.push_str(l);
            }
        }
        let candidate = !open.skip && (open.explicit || looks_like_call(&body));
        if !candidate {
            prose.extend(lines[i..j].iter().copied());
            i = j;
            continue;
        }
        match lenient_json(&body) {
            Ok(value) => {
                let calls = calls_from_value(&value, known, open.explicit);
                if calls.is_empty() {
                    prose.extend(lines[i..j].iter().copied());
                } else {
                    result.calls.extend(calls);
                }
            }
            Err(err) if !closed || err.eof => {
                result.incomplete.get_or_insert(Incomplete {
                    line: i + 1,
                    detail: if closed {
                        format!("the JSON in the block is cut off ({})", err.message)
                    } else {
                        format!("the block was never closed with {}", open.closer())
                    },
                });
                prose.extend(lines[i..j].iter().copied());
            }
            Err(err) => match unreadable_call(&body, known, open.explicit, &err.detail) {
                Some(call) => result.calls.push(call),
                None => prose.extend(lines[i..j].iter().copied()),
            },
        }
        i = j;
    }
    // A whole answer that is one bare JSON call (no fence at all).
    if result.calls.is_empty() && result.incomplete.is_none() {
        let trimmed = text.trim();
        if trimmed.starts_with('{') || trimmed.starts_with('[') {
            match lenient_json(trimmed) {
                Ok(value) => {
                    let calls = calls_from_value(&value, known, false);
                    if !calls.is_empty() {
                        result.calls = calls;
                        prose.clear();
                    }
                }
                Err(err) if err.eof && looks_like_call(trimmed) => {
                    result.incomplete = Some(Incomplete {
                        line: 1,
                        detail: format!("the JSON call is cut off ({})", err.message),
                    });
                }
                Err(err) => {
                    // Calls followed by something else (a stray fence, imagined results).
                    let calls_at_start = |text: &str| {
                        let (values, rest) = leading_objects(text)?;
                        let calls = calls_from_value(&Value::Array(values), known, false);
                        (!calls.is_empty()).then_some((calls, rest))
                    };
                    let leading = calls_at_start(trimmed)
                        .or_else(|| calls_at_start(&repair::repair_json(trimmed)));
                    if let Some((calls, rest)) = leading {
                        result.calls = calls;
                        prose = rest;
                    } else if looks_like_call(trimmed)
                        && let Some(call) = unreadable_call(trimmed, known, false, &err.detail)
                    {
                        result.calls.push(call);
                        prose.clear();
                    }
                }
            }
        }
    }
    result.prose = prose.trim().to_owned();
    result
}

/// Calls written as a bare arguments object, without the tool's name (a 1.5B model answered a
/// rename with ```` ```json {"new_string": …, "old_string": …, "path": …} ``` ````): an object
/// whose keys are all parameters of exactly one of `tools`, and include every parameter it
/// requires, is a call of that tool. An object that fits two tools, or none, is not a call.
pub fn bare_argument_calls(text: &str, tools: &[ToolSpec]) -> Vec<ToolCall> {
    let mut bodies: Vec<String> = crate::edit::text::fenced_blocks(text)
        .into_iter()
        .filter(|b| {
            matches!(
                b.info.to_ascii_lowercase().as_str(),
                "" | "json" | "json5" | "jsonc"
            )
        })
        .map(|b| b.body)
        .collect();
    if bodies.is_empty() {
        bodies.push(text.to_owned());
    }
    let mut calls = Vec::new();
    for body in bodies {
        let t = body.trim();
        if !t.starts_with('{') {
            continue;
        }
        let Ok(Value::Object(args)) = lenient_json(t) else {
            continue;
        };
        let fits = |spec: &ToolSpec| -> bool {
            let props = spec.parameters.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = spec
                .parameters
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            !args.is_empty()
                && props.is_some_and(|p| args.keys().all(|k| p.contains_key(k)))
                && required.iter().all(|r| args.contains_key(*r))
        };
        let matching: Vec<&ToolSpec> = tools.iter().filter(|t| fits(t)).collect();
        if let [spec] = matching.as_slice() {
            calls.push(ToolCall {
                id: next_call_id(),
                name: spec.name.clone(),
                arguments: Value::Object(args),
                arguments_error: None,
                provider_data: None,
            });
        }
    }
    calls
}

/// The arguments of a native tool call: `{}` for an empty string, tolerant JSON otherwise; a
/// JSON string holding JSON (double-encoded arguments) is decoded once more.
pub fn parse_arguments(raw: &str) -> (Value, Option<String>) {
    if raw.trim().is_empty() {
        return (json!({}), None);
    }
    match lenient_json(raw) {
        Ok(Value::String(inner)) if inner.trim_start().starts_with('{') => {
            match lenient_json(&inner) {
                Ok(value) => (value, None),
                Err(_) => (Value::String(inner), None),
            }
        }
        Ok(value) => (value, None),
        Err(err) => (Value::Null, Some(err.detail)),
    }
}

/// Why [`lenient_json`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    pub message: String,
    /// The text ended inside a value (it was cut off, rather than wrong).
    pub eof: bool,
    /// What a model is told: the argument the error is in, what is wrong there and how to
    /// write it (`repair::explain`).
    pub detail: String,
}

/// Parses JSON written by a model: strict JSON first, then again after the repairs of
/// `repair.rs` (single-quoted strings, trailing commas, comments, Python literals, raw line
/// breaks and unescaped quotes inside strings, …). Objects written one after the other are
/// one array.
pub fn lenient_json(text: &str) -> Result<Value, JsonError> {
    let text = text.trim();
    let strict = match serde_json::from_str::<Value>(text) {
        Ok(value) => return Ok(value),
        Err(err) => err,
    };
    let repaired = repair::repair_json(text);
    let err = match serde_json::from_str::<Value>(&repaired) {
        Ok(value) => return Ok(value),
        Err(err) => err,
    };
    if let Some((values, rest)) = leading_objects(&repaired)
        && values.len() > 1
        && rest.trim().is_empty()
    {
        return Ok(Value::Array(values));
    }
    // A text that ended inside a value is cut off, whatever the repair made of it.
    let (message, eof) = if strict.is_eof() {
        (strict.to_string(), true)
    } else {
        (err.to_string(), err.is_eof())
    };
    Err(JsonError {
        message,
        eof,
        detail: repair::explain(&repaired, &err),
    })
}

/// The JSON objects `text` starts with (one or several, one after the other) and the text
/// after them: `{"name": …}` followed by a stray fence or a second call.
fn leading_objects(text: &str) -> Option<(Vec<Value>, String)> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut values = Vec::new();
    let mut end = 0;
    while let Some(Ok(value)) = stream.next() {
        if !value.is_object() {
            break;
        }
        values.push(value);
        end = stream.byte_offset();
    }
    (!values.is_empty()).then(|| (values, text[end..].to_owned()))
}

/// The tool a block that is not JSON names (`"name": "edit_file"`), when it is one the request
/// offered (any name in an explicit tool block): the call is answered with why its arguments
/// could not be read, instead of being lost.
fn unreadable_call(body: &str, known: &[&str], explicit: bool, detail: &str) -> Option<ToolCall> {
    let name = ["\"name\"", "'name'", "\"tool\"", "'tool'"]
        .iter()
        .filter_map(|key| {
            let after = &body[body.find(key)? + key.len()..];
            let after = after.trim_start().strip_prefix(':')?.trim_start();
            let quote = after.chars().next().filter(|q| matches!(q, '"' | '\''))?;
            let rest = &after[1..];
            let name = &rest[..rest.find(quote)?];
            let word = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            word.then_some(name)
        })
        .next()?;
    if !explicit && !known.contains(&name) {
        return None;
    }
    Some(ToolCall {
        id: next_call_id(),
        name: name.to_owned(),
        arguments: Value::Null,
        arguments_error: Some(detail.to_owned()),
        provider_data: None,
    })
}

/// How a block opened.
struct Opening {
    /// `Some((char, len))` for a fence, `None` for a `<tool_call>` tag.
    fence: Option<(char, usize)>,
    /// Tagged `tool`/`tool_call` (or the tag form): its name need not be known.
    explicit: bool,
    /// A code block in another language, passed through as prose.
    skip: bool,
    /// Text after the opener on the same line.
    rest: String,
    /// The block also closed on its opening line.
    closed_inline: bool,
}

impl Opening {
    fn parse(line: &str) -> Option<Opening> {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let trimmed = line.trim();
        if indent <= 3 {
            for fence_char in ['`', '~'] {
                let len = trimmed.chars().take_while(|c| *c == fence_char).count();
                if len < 3 {
                    continue;
                }
                let after = &trimmed[len..];
                let tag_len = after
                    .find(|c: char| c.is_whitespace() || c == '{' || c == '[')
                    .unwrap_or(after.len());
                let tag = after[..tag_len].to_ascii_lowercase();
                if fence_char == '`' && tag.contains('`') {
                    return None;
                }
                let explicit = matches!(
                    tag.as_str(),
                    "tool" | "tool_call" | "tool_code" | "tool-call"
                );
                let allowed = explicit
                    || matches!(
                        tag.as_str(),
                        "" | "json" | "jsonc" | "json5" | "javascript" | "js"
                    );
                if !allowed {
                    // A code block in another language: skipped whole, so that JSON or
                    // fences inside it are not misread.
                    return Some(Opening {
                        fence: Some((fence_char, len)),
                        explicit: false,
                        skip: true,
                        rest: String::new(),
                        closed_inline: false,
                    });
                }
                let mut rest = after[tag_len..].trim_start().to_owned();
                let mut closed_inline = false;
                let fence: String = std::iter::repeat_n(fence_char, len).collect();
                if !rest.is_empty()
                    && let Some(pos) = rest.rfind(&fence)
                {
                    rest.truncate(pos);
                    closed_inline = true;
                }
                if !rest.is_empty() && !closed_inline {
                    rest.push('\n');
                }
                return Some(Opening {
                    fence: Some((fence_char, len)),
                    explicit,
                    skip: false,
                    rest,
                    closed_inline,
                });
            }
        }
        let lower = trimmed.to_ascii_lowercase();
        if let Some(after) = lower.strip_prefix("<tool_call>") {
            let start = trimmed.len() - after.len();
            let mut rest = trimmed[start..].to_owned();
            let mut closed_inline = false;
            if let Some(pos) = rest.to_ascii_lowercase().find("</tool_call>") {
                rest.truncate(pos);
                closed_inline = true;
            } else if !rest.is_empty() {
                rest.push('\n');
            }
            return Some(Opening {
                fence: None,
                explicit: true,
                skip: false,
                rest,
                closed_inline,
            });
        }
        None
    }

    /// If `line` closes this block, the content before the closer.
    fn closes<'l>(&self, line: &'l str) -> Option<&'l str> {
        match self.fence {
            Some((c, len)) => {
                let trimmed = line.trim_end();
                let run = trimmed.chars().rev().take_while(|x| *x == c).count();
                if run < len {
                    return None;
                }
                let before = &trimmed[..trimmed.len() - run * c.len_utf8()];
                // A closing fence stands alone, or ends a line of JSON (`…}```).
                if before.trim().is_empty() || before.trim_end().ends_with(['}', ']']) {
                    Some(if before.trim().is_empty() { "" } else { before })
                } else {
                    None
                }
            }
            None => {
                let lower = line.to_ascii_lowercase();
                lower.find("</tool_call>").map(|pos| &line[..pos])
            }
        }
    }

    fn closer(&self) -> String {
        match self.fence {
            Some((c, len)) => std::iter::repeat_n(c, len).collect(),
            None => "</tool_call>".to_owned(),
        }
    }
}

/// Whether a block's text starts like a tool call object.
fn looks_like_call(body: &str) -> bool {
    let t = body.trim_start();
    (t.starts_with('{') || t.starts_with('['))
        && ["\"name\"", "'name'", "\"tool\"", "'tool'", "\"function\""]
            .iter()
            .any(|k| t.contains(k))
}

fn calls_from_value(value: &Value, known: &[&str], explicit: bool) -> Vec<ToolCall> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut calls = Vec::new();
    for item in items {
        let Some(object) = item.as_object() else {
            return Vec::new();
        };
        // OpenAI-shaped `{"function": {"name", "arguments"}}` or the flat form.
        let object = match object.get("function").and_then(Value::as_object) {
            Some(inner) if inner.contains_key("name") => inner,
            _ => object,
        };
        let Some(name) = object
            .get("name")
            .or_else(|| object.get("tool"))
            .and_then(Value::as_str)
        else {
            return Vec::new();
        };
        if !explicit && !known.contains(&name) {
            return Vec::new();
        }
        let raw = ["arguments", "parameters", "args", "input"]
            .iter()
            .find_map(|k| object.get(*k));
        let (arguments, arguments_error) = match raw {
            None => (json!({}), None),
            Some(Value::String(s)) => parse_arguments(s),
            Some(other) => (other.clone(), None),
        };
        calls.push(ToolCall {
            id: next_call_id(),
            name: name.to_owned(),
            arguments,
            arguments_error,
            provider_data: None,
        });
    }
    calls
}

fn next_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("call_text_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Stop sequence for text-protocol requests: a model that starts writing a result itself has
/// finished its call.
pub const RESULT_STOP: &str = "\nResult of";

/// Rewrites a request for a model without native tools: the tools are described in the system
/// prompt, earlier calls become fenced blocks in the assistant's text, and results become user
/// messages.
pub fn to_text_protocol(request: ChatRequest) -> ChatRequest {
    let ChatRequest {
        messages,
        tools,
        options,
    } = request;
    let mut guide = String::from(
        "# Tools\n\nYou can call tools to read and change the workspace. Never guess what a file contains: call a tool. To call one, answer with a fenced block tagged `tool` holding one JSON object with the tool's name and its arguments, and stop there; the result comes back in the next message, starting with \"Result of\".\n\n```tool\n{\"name\": \"TOOL_NAME\", \"arguments\": {\"ARGUMENT\": \"VALUE\"}}\n```\n\nOne block per call; several blocks make several calls. Available tools:\n",
    );
    for tool in &tools {
        guide.push_str(&format!(
            "\n- `{}`: {}\n  arguments (JSON Schema): {}\n",
            tool.name,
            tool.description.trim(),
            tool.parameters
        ));
    }
    match &options.tool_choice {
        ToolChoice::Auto => {}
        ToolChoice::None => guide.push_str("\nDo not call a tool in this answer.\n"),
        ToolChoice::Required => guide.push_str("\nCall a tool in this answer.\n"),
        ToolChoice::Tool(name) => {
            guide.push_str(&format!("\nCall the tool `{name}` in this answer.\n"))
        }
    }
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 1);
    let mut guided = false;
    for message in messages {
        match message {
            Message::System { content } if !guided => {
                guided = true;
                out.push(Message::System {
                    content: format!("{}\n\n{guide}", content.trim_end()),
                });
            }
            Message::Assistant {
                content,
                tool_calls,
            } if !tool_calls.is_empty() => {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                let already = parse_tool_text(&content, &names).calls.len() >= tool_calls.len();
                let mut text = content.trim_end().to_owned();
                if !already {
                    for call in &tool_calls {
                        if !text.is_empty() {
                            text.push_str("\n\n");
                        }
                        text.push_str(&format!(
                            "```tool\n{}\n```",
                            json!({"name": call.name, "arguments": call.arguments})
                        ));
                    }
                }
                out.push(Message::Assistant {
                    content: text,
                    tool_calls: Vec::new(),
                });
            }
            Message::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let block = result_block(&name, &content, is_error);
                match out.last_mut() {
                    Some(Message::User { content })
                        if content.starts_with("Result of")
                            || content.starts_with("Error from") =>
                    {
                        content.push_str("\n\n");
                        content.push_str(&block);
                    }
                    _ => out.push(Message::User { content: block }),
                }
            }
            other => out.push(other),
        }
    }
    if !guided {
        out.insert(0, Message::System { content: guide });
    }
    // Small models go on to imagine the result after their call; stop them there.
    let mut options = ChatOptions {
        tool_choice: ToolChoice::Auto,
        ..options
    };
    if !options.stop.iter().any(|s| s == RESULT_STOP) {
        options.stop.push(RESULT_STOP.to_owned());
    }
    ChatRequest {
        messages: out,
        tools: Vec::new(),
        options,
    }
}

/// A tool's result as the text protocol shows it to the model: `Result of `name`:` (or `Error
/// from`) and the content in a `~~~` block. Results of one answer go in one user message,
/// separated by a blank line.
pub fn result_block(name: &str, content: &str, is_error: bool) -> String {
    let head = if is_error { "Error from" } else { "Result of" };
    format!("{head} `{name}`:\n~~~\n{}\n~~~", content.trim_end())
}

/// Watches a stream's text and, when the answer carried no native tool call, turns tool blocks
/// written in the text into tool-call events before `Done`.
pub(crate) struct ToolTextWatcher {
    names: Vec<String>,
    enabled: bool,
    text: String,
    native_calls: usize,
}

impl ToolTextWatcher {
    pub(crate) fn new(tools: &[ToolSpec], tool_choice: &ToolChoice) -> ToolTextWatcher {
        ToolTextWatcher {
            names: tools.iter().map(|t| t.name.clone()).collect(),
            enabled: !tools.is_empty() && tool_choice != &ToolChoice::None,
            text: String::new(),
            native_calls: 0,
        }
    }

    pub(crate) fn on_event(&mut self, event: StreamEvent) -> Result<Vec<StreamEvent>, ModelError> {
        match event {
            StreamEvent::TextDelta { ref text } => {
                if self.enabled {
                    self.text.push_str(text);
                }
                Ok(vec![event])
            }
            StreamEvent::ToolCallStarted { .. } | StreamEvent::ToolCall { .. } => {
                if matches!(event, StreamEvent::ToolCall { .. }) {
                    self.native_calls += 1;
                }
                Ok(vec![event])
            }
            StreamEvent::ToolCallDelta { .. } | StreamEvent::TextToolCalls { .. } => {
                Ok(vec![event])
            }
            StreamEvent::Done { finish, usage } => {
                if !self.enabled || self.native_calls > 0 {
                    return Ok(vec![StreamEvent::Done { finish, usage }]);
                }
                let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
                let parsed = parse_tool_text(&self.text, &names);
                if let Some(incomplete) = parsed.incomplete {
                    return Err(ModelError::IncompleteToolCall {
                        line: incomplete.line,
                        detail: incomplete.detail,
                    });
                }
                let mut events = Vec::new();
                let found = !parsed.calls.is_empty();
                if found {
                    events.push(StreamEvent::TextToolCalls {
                        prose: parsed.prose,
                    });
                }
                for (index, call) in parsed.calls.into_iter().enumerate() {
                    events.push(StreamEvent::ToolCallStarted {
                        index,
                        id: call.id.clone(),
                        name: call.name.clone(),
                    });
                    events.push(StreamEvent::ToolCall { index, call });
                }
                let finish = if found && matches!(finish, FinishReason::Stop) {
                    FinishReason::ToolCalls
                } else {
                    finish
                };
                events.push(StreamEvent::Done { finish, usage });
                Ok(events)
            }
        }
    }
}

#[cfg(test)]
mod tests;
