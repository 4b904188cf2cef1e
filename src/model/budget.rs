//! Context budgets: how many tokens a model accepts, and fitting a request into them before it
//! is sent.
//!
//! Fitting keeps the system prompt and the latest turn whole. It first truncates older tool
//! results (with a note saying what was cut and how to get it back), then drops the oldest
//! turns, then truncates the latest turn's tool results; a request that still does not fit is
//! [`ModelError::ContextOverflow`] saying by how much. It never cuts a system or user message
//! and never separates a tool call from its result. Counts are tiktoken estimates; local models
//! tokenize differently, so the window keeps a small margin.

use std::fmt;

use crate::config::ModelSettings;
use crate::model::{ChatRequest, Message, ModelError};
use crate::tokens::{Encoding, count_tokens, truncate_to_tokens};

/// Tokens counted for each message's framing (role markers, separators).
const MESSAGE_OVERHEAD: usize = 4;
/// Tokens a truncated tool result keeps at least, so the model still sees what it was.
const MIN_KEPT: usize = 64;
/// The share of the window kept free because counts are estimates: small for OpenAI models
/// (tiktoken is their tokenizer), larger for everyone else's.
const MARGIN_PERCENT_EXACT: usize = 3;
const MARGIN_PERCENT_ESTIMATED: usize = 10;

/// Known context windows, by model-name prefix (lowercase, provider prefix removed).
/// Longer prefixes are listed before shorter ones that they extend.
const WINDOWS: &[(&str, usize)] = &[
    ("claude", 200_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini", 1_048_576),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("qwen3-coder", 262_144),
    ("qwen3", 40_960),
    ("qwen2.5-coder", 32_768),
    ("qwen2.5", 32_768),
    ("qwen", 32_768),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3", 8_192),
    ("codellama", 16_384),
    ("deepseek-coder-v2", 163_840),
    ("deepseek", 65_536),
    ("codestral", 262_144),
    ("devstral", 131_072),
    ("mistral", 32_768),
    ("mixtral", 32_768),
    ("gemma3", 131_072),
    ("gemma2", 8_192),
    ("starcoder2", 16_384),
    ("phi4", 16_384),
    ("phi3", 131_072),
];

/// The window assumed for a model nobody has described.
pub const UNKNOWN_WINDOW: usize = 8_192;
/// Local servers (Ollama, LM Studio, llama.cpp) run with a context smaller than the model's
/// maximum unless told otherwise; without a configured window, a local model gets at most this.
pub const LOCAL_WINDOW_CAP: usize = 8_192;

/// The context window of `model` from the built-in table.
pub fn known_window(model: &str) -> Option<usize> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    WINDOWS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, window)| *window)
}

/// The budget one model's requests are fitted to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    pub model: String,
    /// Context window in tokens.
    pub window: usize,
    /// Output tokens reserved when the request sets no `max_tokens`.
    pub default_reserve: usize,
    pub encoding: Encoding,
    /// Share of the window kept free for counting errors.
    pub margin_percent: usize,
}

impl Budget {
    /// The budget for `model`: configured settings first, then the table, then
    /// [`UNKNOWN_WINDOW`]; `local` caps an unconfigured window at [`LOCAL_WINDOW_CAP`].
    pub fn new(model: &str, settings: ModelSettings, local: bool) -> Budget {
        let window = settings.context_window.unwrap_or_else(|| {
            let known = known_window(model).unwrap_or(UNKNOWN_WINDOW);
            if local {
                known.min(LOCAL_WINDOW_CAP)
            } else {
                known
            }
        });
        let mut budget = Budget::for_window(model, window);
        if let Some(n) = settings.max_output_tokens {
            budget.default_reserve = n as usize;
        }
        budget
    }

    /// The budget of `model` with a known `window` (what a resolved model reports), reserving a
    /// quarter of the window (at most 4,096 tokens) for answers that set no `max_tokens`.
    pub fn for_window(model: &str, window: usize) -> Budget {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let exact = ["gpt-", "o1", "o3", "o4", "chatgpt-", "codex"]
            .iter()
            .any(|p| name.starts_with(p));
        Budget {
            model: model.to_owned(),
            window,
            default_reserve: (window / 4).min(4_096),
            encoding: Encoding::for_model(model),
            margin_percent: if exact {
                MARGIN_PERCENT_EXACT
            } else {
                MARGIN_PERCENT_ESTIMATED
            },
        }
    }

    /// Tokens a prompt may use when `reserve` tokens are kept for the answer (capped at half
    /// the window, as for a request's `max_tokens`).
    pub fn room(&self, reserve: usize) -> usize {
        let margin = self.window * self.margin_percent / 100;
        self.window
            .saturating_sub(reserve.min(self.window / 2))
            .saturating_sub(margin)
    }

    /// [`Budget::new`] for a remote model.
    pub fn for_model(model: &str, settings: ModelSettings) -> Budget {
        Budget::new(model, settings, false)
    }

    fn reserve(&self, request: &ChatRequest) -> usize {
        request
            .options
            .max_tokens
            .map(|n| n as usize)
            .unwrap_or(self.default_reserve)
            .min(self.window / 2)
    }

    /// Tokens the prompt may use.
    pub fn available(&self, request: &ChatRequest) -> usize {
        self.room(self.reserve(request))
    }
}

/// What fitting did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FitReport {
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub available: usize,
    /// Tool results shortened.
    pub truncated: usize,
    /// Messages removed.
    pub dropped: usize,
}

impl FitReport {
    pub fn changed(&self) -> bool {
        self.truncated > 0 || self.dropped > 0
    }
}

impl fmt::Display for FitReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fitted the request from {} to {} tokens (budget {}): {} tool results truncated, {} messages dropped",
            self.tokens_before, self.tokens_after, self.available, self.truncated, self.dropped
        )
    }
}

/// Tokens of the request as sent (messages, tool calls and tool specs).
pub fn count_request(request: &ChatRequest, encoding: Encoding) -> usize {
    let messages: usize = request
        .messages
        .iter()
        .map(|m| count_message(m, encoding))
        .sum();
    messages + count_tools(request, encoding) + 3
}

fn count_tools(request: &ChatRequest, encoding: Encoding) -> usize {
    request
        .tools
        .iter()
        .map(|t| {
            count_tokens(&t.name, encoding)
                + count_tokens(&t.description, encoding)
                + count_tokens(&t.parameters.to_string(), encoding)
                + 8
        })
        .sum()
}

fn count_message(message: &Message, encoding: Encoding) -> usize {
    let calls: usize = match message {
        Message::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .map(|c| {
                count_tokens(&c.name, encoding)
                    + count_tokens(&c.arguments.to_string(), encoding)
                    + 6
            })
            .sum(),
        _ => 0,
    };
    MESSAGE_OVERHEAD + count_tokens(message.text(), encoding) + calls
}

/// Fits `request` into `budget` in place (see the module documentation for the order).
pub fn fit(request: &mut ChatRequest, budget: &Budget) -> Result<FitReport, ModelError> {
    let available = budget.available(request);
    let encoding = budget.encoding;
    let mut counts: Vec<usize> = request
        .messages
        .iter()
        .map(|m| count_message(m, encoding))
        .collect();
    let fixed = count_tools(request, encoding) + 3;
    let total = |counts: &[usize]| fixed + counts.iter().sum::<usize>();
    let mut report = FitReport {
        tokens_before: total(&counts),
        available,
        ..FitReport::default()
    };
    if report.tokens_before <= available {
        report.tokens_after = report.tokens_before;
        return Ok(report);
    }

    let latest = latest_turn_start(&request.messages);

    // 1. Older tool results, oldest first, each cut only as far as needed.
    for i in 0..latest {
        let over = total(&counts).saturating_sub(available);
        if over == 0 {
            break;
        }
        if truncate_result(request, i, over, encoding, &mut counts) {
            report.truncated += 1;
        }
    }

    // 2. Older turns, oldest first (system messages and the first user message stay).
    if total(&counts) > available {
        let first_user = request
            .messages
            .iter()
            .position(|m| matches!(m, Message::User { .. }));
        let mut keep = vec![true; request.messages.len()];
        let mut i = 0;
        while i < latest && total_kept(&counts, &keep, fixed) > available {
            let end = group_end(&request.messages, i).min(latest);
            let protected =
                matches!(request.messages[i], Message::System { .. }) || Some(i) == first_user;
            if !protected {
                for k in keep.iter_mut().take(end).skip(i) {
                    *k = false;
                }
            }
            i = end.max(i + 1);
        }
        let dropped = keep.iter().filter(|k| !**k).count();
        if dropped > 0 {
            let mut index = 0;
            request.messages.retain(|_| {
                index += 1;
                keep[index - 1]
            });
            let mut index = 0;
            counts.retain(|_| {
                index += 1;
                keep[index - 1]
            });
            report.dropped = dropped;
            let note = format!(
                "\n\n(Note from patchwise: {dropped} earlier messages of this conversation were removed to fit the context window; repeat any tool call whose result you still need.)"
            );
            if let Some(pos) = request
                .messages
                .iter()
                .position(|m| matches!(m, Message::System { .. }))
            {
                if let Message::System { content } = &mut request.messages[pos] {
                    content.push_str(&note);
                }
                counts[pos] = count_message(&request.messages[pos], encoding);
            }
        }
    }

    // 3. The latest turn's tool results, as a last resort.
    if total(&counts) > available {
        let latest = latest_turn_start(&request.messages);
        for i in latest..request.messages.len() {
            let over = total(&counts).saturating_sub(available);
            if over == 0 {
                break;
            }
            if truncate_result(request, i, over, encoding, &mut counts) {
                report.truncated += 1;
            }
        }
    }

    report.tokens_after = total(&counts);
    if report.tokens_after > available {
        return Err(ModelError::ContextOverflow {
            model: budget.model.clone(),
            needed: report.tokens_after,
            available,
            window: budget.window,
            reserved: budget.window - available,
            over_by: report.tokens_after - available,
        });
    }
    Ok(report)
}

fn total_kept(counts: &[usize], keep: &[bool], fixed: usize) -> usize {
    fixed
        + counts
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(c, _)| c)
            .sum::<usize>()
}

/// Index of the first message of the latest turn: the last user or assistant message that
/// starts a group (an assistant message owns the tool results after it).
fn latest_turn_start(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. } | Message::Assistant { .. }))
        .unwrap_or(0)
}

/// End (exclusive) of the group starting at `start`: an assistant message and the tool results
/// that follow it, or a single message.
fn group_end(messages: &[Message], start: usize) -> usize {
    let mut end = start + 1;
    if matches!(messages[start], Message::Assistant { .. }) {
        while end < messages.len() && matches!(messages[end], Message::ToolResult { .. }) {
            end += 1;
        }
    }
    end
}

/// Cuts the tool result at `index` by about `over` tokens (keeping at least [`MIN_KEPT`]) and
/// appends a note; `false` if it is not a tool result or is already short.
fn truncate_result(
    request: &mut ChatRequest,
    index: usize,
    over: usize,
    encoding: Encoding,
    counts: &mut [usize],
) -> bool {
    let arguments = match &request.messages[index] {
        Message::ToolResult { call_id, .. } => {
            find_call_arguments(&request.messages[..index], call_id)
        }
        _ => return false,
    };
    let Message::ToolResult { name, content, .. } = &mut request.messages[index] else {
        return false;
    };
    // The message's count is its content plus the framing overhead.
    let tokens = counts[index].saturating_sub(MESSAGE_OVERHEAD);
    let note_budget = 90;
    if tokens <= MIN_KEPT + note_budget {
        return false;
    }
    let keep = tokens.saturating_sub(over + note_budget).max(MIN_KEPT);
    let kept = truncate_to_tokens(content, keep, encoding);
    let total_lines = content.lines().count();
    let kept_lines = kept.lines().count();
    let kept_tokens = count_tokens(kept, encoding);
    let cut_tokens = tokens.saturating_sub(kept_tokens);
    let again = match arguments {
        Some(args) => format!(
            "call `{name}` again with {} — narrower (a line range or a more specific query) if possible",
            crate::model::http::snippet(&args)
        ),
        None => format!("call `{name}` again, narrower if possible"),
    };
    let note = format!(
        "\n[patchwise: cut lines {}-{} of {} ({} tokens) from this `{name}` result to fit the context window; to see them, {again}]",
        kept_lines + 1,
        total_lines.max(kept_lines + 1),
        total_lines,
        cut_tokens,
    );
    let mut new = kept.to_owned();
    new.push_str(&note);
    *content = new;
    // Counted in two parts (a token may merge across the seam: the margin covers it).
    counts[index] = MESSAGE_OVERHEAD + kept_tokens + count_tokens(&note, encoding);
    true
}

fn find_call_arguments(messages: &[Message], call_id: &str) -> Option<String> {
    messages.iter().rev().find_map(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .find(|c| c.id == call_id)
            .map(|c| c.arguments.to_string()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{ChatOptions, ToolCall};

    fn budget(window: usize) -> Budget {
        Budget {
            model: "test-model".into(),
            window,
            default_reserve: 100,
            encoding: Encoding::Cl100k,
            margin_percent: 3,
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({"path": format!("src/{id}.rs")}),
            arguments_error: None,
            provider_data: None,
        }
    }

    fn big(n: usize) -> String {
        (0..n)
            .map(|i| format!("line {i}: let value_{i} = compute({i});\n"))
            .collect()
    }

    fn conversation() -> ChatRequest {
        let mut messages = vec![
            Message::system("You are a careful coder."),
            Message::user("Fix the bug in src/a.rs"),
        ];
        for id in ["a", "b", "c"] {
            let c = call(id);
            messages.push(Message::Assistant {
                content: String::new(),
                tool_calls: vec![c.clone()],
            });
            messages.push(Message::tool_result(&c, big(300), false));
        }
        ChatRequest {
            messages,
            tools: vec![],
            options: ChatOptions::default(),
        }
    }

    #[test]
    fn small_requests_are_untouched() {
        let mut request = conversation();
        let before = request.clone();
        let report = fit(&mut request, &budget(1_000_000)).unwrap();
        assert!(!report.changed());
        assert_eq!(request, before);
    }

    #[test]
    fn older_tool_results_are_truncated_with_a_note_first() {
        let mut request = conversation();
        let full = count_request(&request, Encoding::Cl100k);
        let window = full - 2_000;
        let b = budget(window);
        let report = fit(&mut request, &b).unwrap();
        assert!(report.truncated >= 1, "{report}");
        assert_eq!(report.dropped, 0);
        assert!(count_request(&request, Encoding::Cl100k) <= b.available(&request));
        let Message::ToolResult { content, .. } = &request.messages[3] else {
            panic!()
        };
        assert!(content.contains("[patchwise: cut lines"), "{content}");
        assert!(
            content.contains(r#"call `read_file` again with {"path":"src/a.rs"}"#),
            "{content}"
        );
        // The latest result is whole.
        let Message::ToolResult { content, .. } = request.messages.last().unwrap() else {
            panic!()
        };
        assert_eq!(content, &big(300));
    }

    #[test]
    fn old_turns_are_dropped_when_truncation_is_not_enough() {
        let mut request = conversation();
        let last_result = count_message(request.messages.last().unwrap(), Encoding::Cl100k);
        let b = budget(last_result + 400);
        let report = fit(&mut request, &b).unwrap();
        assert!(report.dropped > 0, "{report}");
        assert!(matches!(request.messages[0], Message::System { .. }));
        assert!(
            request.messages[0]
                .text()
                .contains("removed to fit the context window")
        );
        assert!(matches!(request.messages[1], Message::User { .. }));
        // Every tool result still follows the call it answers.
        for (i, m) in request.messages.iter().enumerate() {
            if let Message::ToolResult { call_id, .. } = m {
                assert!(find_call_arguments(&request.messages[..i], call_id).is_some());
            }
        }
    }

    #[test]
    fn unfittable_requests_say_by_how_much() {
        let mut request = ChatRequest {
            messages: vec![Message::system("s"), Message::user(big(400))],
            ..ChatRequest::default()
        };
        let err = fit(&mut request, &budget(1_000)).unwrap_err();
        let ModelError::ContextOverflow {
            over_by,
            needed,
            available,
            ..
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!(*over_by, needed - available);
        assert!(err.to_string().contains("tokens over"), "{err}");
    }

    #[test]
    fn table_and_overrides() {
        assert_eq!(known_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_window("openrouter/qwen2.5-coder:7b"), Some(32_768));
        assert_eq!(known_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_window("mystery"), None);
        let local = Budget::new("qwen2.5-coder:7b", ModelSettings::default(), true);
        assert_eq!(local.window, LOCAL_WINDOW_CAP);
        let configured = Budget::new(
            "qwen2.5-coder:7b",
            ModelSettings {
                context_window: Some(65_536),
                max_output_tokens: Some(1000),
                ..ModelSettings::default()
            },
            true,
        );
        assert_eq!(
            (configured.window, configured.default_reserve),
            (65_536, 1000)
        );
    }
}
