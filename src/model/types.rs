//! The neutral vocabulary every provider translates to and from: messages, tool specs, tool
//! calls, options and the events of a streamed answer.
//!
//! Nothing here knows a wire format. Workflows build a [`ChatRequest`] once and any provider can
//! send it; a later `tools/` module produces [`ToolSpec`]s for its registry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool the model may call: the single description every provider format is derived from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// `^[a-zA-Z0-9_-]{1,64}$` satisfies every provider.
    pub name: String,
    pub description: String,
    /// A JSON Schema object describing the arguments (`{"type": "object", "properties": …}`).
    pub parameters: Value,
}

/// A call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call (generated when the provider has none, as Gemini and the
    /// text fallback do); a [`Message::ToolResult`] answers it by this id.
    pub id: String,
    pub name: String,
    /// The arguments as a JSON object. When the model wrote arguments that are not JSON even
    /// after tolerant repair, this is `Value::Null` and `arguments_error` says why.
    pub arguments: Value,
    /// Set when the arguments could not be parsed: the raw text and what was wrong with it,
    /// written so that the tool layer can hand it back to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
    /// Opaque data the provider wants back with this call in later requests (Gemini's
    /// `thoughtSignature`, which thinking models require when the conversation continues).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<Value>,
}

impl ToolCall {
    /// A call with parsed arguments and no provider data.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            arguments_error: None,
            provider_data: None,
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    /// What the model said: text, tool calls, or both.
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The answer to one tool call.
    ToolResult {
        call_id: String,
        /// The tool's name (Gemini matches responses by name, not id).
        name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message::System {
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Message {
        Message::User {
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Message {
        Message::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    pub fn tool_result(call: &ToolCall, content: impl Into<String>, is_error: bool) -> Message {
        Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.into(),
            is_error,
        }
    }

    /// The text of the message (tool calls are not included).
    pub fn text(&self) -> &str {
        match self {
            Message::System { content }
            | Message::User { content }
            | Message::Assistant { content, .. }
            | Message::ToolResult { content, .. } => content,
        }
    }
}

/// How the model may use the tools of a request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// Some tool must be called.
    Required,
    /// This tool must be called. Small local models produce real `tool_calls` far more reliably
    /// when forced this way than with `auto`.
    Tool(String),
}

/// Sampling and length options. `None` leaves the provider's default.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatOptions {
    pub temperature: Option<f32>,
    /// Upper bound on output tokens; also reserved from the context window when fitting.
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub tool_choice: ToolChoice,
    #[serde(default)]
    pub stop: Vec<String>,
    /// Ask for a non-streamed answer (one HTTP response). The events are the same.
    #[serde(default)]
    pub no_stream: bool,
}

/// Everything a provider needs for one answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    #[serde(default)]
    pub options: ChatOptions,
}

/// Token usage as the provider reported it (zero when it did not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The usage of several calls, added up.
impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end (or a stop sequence).
    Stop,
    /// The output-token limit was reached: the answer is cut.
    Length,
    /// The model asked for tool calls.
    ToolCalls,
    /// The provider filtered the answer.
    ContentFilter,
    /// Anything else, as the provider spelled it.
    Other(String),
}

/// One event of a streamed answer. A well-formed stream is any number of text and tool-call
/// events followed by exactly one [`StreamEvent::Done`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// More answer text.
    TextDelta { text: String },
    /// A tool call began (its arguments follow as deltas).
    ToolCallStarted {
        index: usize,
        id: String,
        name: String,
    },
    /// A fragment of a tool call's JSON arguments, for progress display.
    ToolCallDelta { index: usize, fragment: String },
    /// A tool call is complete and its arguments parsed.
    ToolCall { index: usize, call: ToolCall },
    /// The text streamed so far held tool calls written as text (the model had no native tool
    /// call, or wrote JSON in its answer); `prose` is that text without the call blocks, and the
    /// calls follow as [`StreamEvent::ToolCall`]s.
    TextToolCalls { prose: String },
    /// The answer is complete.
    Done { finish: FinishReason, usage: Usage },
}

/// A whole answer, collected from a stream by [`crate::model::collect`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish: Option<FinishReason>,
    pub usage: Usage,
}

impl ChatResponse {
    /// The assistant message to append to the conversation.
    pub fn to_message(&self) -> Message {
        Message::Assistant {
            content: self.text.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}
