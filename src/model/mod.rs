//! One way for every workflow to talk to a model, whatever serves it: OpenAI-compatible servers
//! (OpenAI, Ollama, LM Studio, llama.cpp, vLLM, OpenRouter), Anthropic and Gemini.
//!
//! A workflow builds a neutral [`ChatRequest`], asks the [`ModelRouter`] for the model of a role
//! and reads a stream of [`StreamEvent`]s: text deltas, tool calls (native, or recognised in the
//! text for models without native tools), then one `Done` with usage and finish reason. Requests
//! are fitted to the model's context window before sending; transport faults, 429s and 5xx
//! answers are retried with backoff while nothing has reached the caller, and become typed
//! [`ModelError`]s otherwise. Cancelling the token stops an in-flight request.
//!
//! This module never sees LSP types, never logs a request body or header, and never lets an API
//! key reach a log line, an error or `Debug` output.

pub mod anthropic;
pub mod budget;
pub mod embedded;
pub mod embeddings;
mod error;
pub mod gemini;
pub mod http;
pub mod openai;
// Only the tests serve recorded answers; the shipped binary never listens on a port.
#[cfg(feature = "test-support")]
pub mod replay;
pub mod roles;
pub mod text_tools;
mod types;

use std::pin::Pin;

use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

pub use crate::config::ModelRole;
pub use error::{ModelError, TimeoutPhase};
pub use http::HttpModel;
pub use roles::{ModelRouter, ProbeResult, UsageObserver};
pub use types::{
    ChatOptions, ChatRequest, ChatResponse, FinishReason, Message, StreamEvent, ToolCall,
    ToolChoice, ToolSpec, Usage,
};

/// The events of one answer. Ends after `Done` or after the first error.
pub type ChatStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ModelError>> + Send>>;

/// A model that answers chat requests. Implemented by [`HttpModel`] for every provider, and by
/// test doubles in workflow tests.
pub trait ChatModel: Send + Sync {
    /// `provider/model`, for logs, hovers and the audit log.
    fn name(&self) -> &str;

    /// The context window the request is fitted to, in tokens.
    fn context_window(&self) -> usize;

    /// Starts answering `request` at once (on the current tokio runtime). Cancelling `cancel`
    /// stops the request promptly and the stream then yields [`ModelError::Cancelled`];
    /// dropping the stream abandons the request the same way.
    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream;
}

/// Reads a whole answer. Fails with the stream's first error, or with
/// [`ModelError::StreamEndedEarly`] if it ends without `Done`.
pub async fn collect(stream: ChatStream) -> Result<ChatResponse, ModelError> {
    collect_observed(stream, &|_| {}).await
}

/// [`collect`], telling `observe` about each event as it arrives (a terminal spinner ticks on
/// them while the model answers).
pub async fn collect_observed(
    stream: ChatStream,
    observe: &(dyn Fn(&StreamEvent) + Send + Sync),
) -> Result<ChatResponse, ModelError> {
    collect_until(stream, observe, &|_| None).await
}

/// Where to stop reading an answer that already holds all the caller needs: given the text so
/// far, the length to keep, or `None` to read on.
pub type Enough = dyn Fn(&str) -> Option<usize> + Send + Sync;

/// [`collect_observed`], stopping as soon as `enough` says the text so far is the whole answer
/// (asked after each text delta that ends a line): the stream is dropped, which abandons the
/// request so the server stops generating, the text is cut where `enough` said, and the answer
/// ends as a natural stop with no usage reported.
pub async fn collect_until(
    mut stream: ChatStream,
    observe: &(dyn Fn(&StreamEvent) + Send + Sync),
    enough: &Enough,
) -> Result<ChatResponse, ModelError> {
    let mut response = ChatResponse::default();
    while let Some(event) = stream.next().await {
        let event = event?;
        observe(&event);
        match event {
            StreamEvent::TextDelta { text } => {
                response.text.push_str(&text);
                if text.contains('\n')
                    && let Some(keep) = enough(&response.text)
                {
                    drop(stream);
                    response.text.truncate(keep.min(response.text.len()));
                    response.finish = Some(FinishReason::Stop);
                    return Ok(response);
                }
            }
            StreamEvent::ToolCall { call, .. } => response.tool_calls.push(call),
            StreamEvent::TextToolCalls { prose } => response.text = prose,
            StreamEvent::ToolCallStarted { .. } | StreamEvent::ToolCallDelta { .. } => {}
            StreamEvent::Done { finish, usage } => {
                response.finish = Some(finish);
                response.usage = usage;
                return Ok(response);
            }
        }
    }
    Err(ModelError::StreamEndedEarly {
        url: "the model".to_owned(),
        detail: "no final event".to_owned(),
    })
}

/// `model.chat` then [`collect`].
pub async fn complete(
    model: &dyn ChatModel,
    request: ChatRequest,
    cancel: CancellationToken,
) -> Result<ChatResponse, ModelError> {
    collect(model.chat(request, cancel)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Result<StreamEvent, ModelError> {
        Ok(StreamEvent::TextDelta { text: t.to_owned() })
    }

    #[tokio::test]
    async fn an_answer_is_read_only_until_it_is_whole() {
        // After the cut the stream would fail: reading on would turn a whole answer into an
        // error, so the test fails if `collect_until` reads past the line it stops at.
        let events = vec![
            text("a\n```\nx\n"),
            text("```\n"),
            text("tests.py\n"),
            Err(ModelError::StreamEndedEarly {
                url: "the model".into(),
                detail: "read past the cut".into(),
            }),
        ];
        let stream: ChatStream = Box::pin(futures::stream::iter(events));
        let enough = |t: &str| {
            t.ends_with("tests.py\n")
                .then(|| t.len() - "tests.py\n".len())
        };
        let got = collect_until(stream, &|_| {}, &enough).await.unwrap();
        assert_eq!(got.text, "a\n```\nx\n```\n");
        assert_eq!(got.finish, Some(FinishReason::Stop));

        // Never enough: the answer is read to its end.
        let events = vec![
            text("a\n"),
            Ok(StreamEvent::Done {
                finish: FinishReason::Length,
                usage: Usage::default(),
            }),
        ];
        let stream: ChatStream = Box::pin(futures::stream::iter(events));
        let got = collect_until(stream, &|_| {}, &|_| None).await.unwrap();
        assert_eq!(
            (got.text.as_str(), got.finish),
            ("a\n", Some(FinishReason::Length))
        );
    }
}
