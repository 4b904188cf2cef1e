//! How an answer is read, the same for every run kind: the tool calls it carries (native, written
//! as text, a bare arguments object, or SEARCH/REPLACE blocks, diffs and patches standing for
//! edit calls), what an answer with nothing to act on said, prose that refuses the task, the
//! results of the calls as the model reads them, and what the outcomes of one answer's calls
//! add up to.

use serde_json::json;

use crate::edit::RefusalKind;
use crate::edit::formats::{self, Action};
use crate::edit::ops::Operation;
use crate::model::text_tools::{bare_argument_calls, parse_tool_text, result_block};
use crate::model::{ChatResponse, FinishReason, Message, ToolCall, ToolSpec};
use crate::tools::{self, Status, ToolOutcome};

/// How a run kind reads the calls written in an answer's text.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reading<'r> {
    /// Every known tool name counts, not only the offered ones (a rewrite prompt offers none,
    /// and a model may still write a call).
    pub all_tools: bool,
    /// A bare arguments object (`{"path": …, "old_string": …}`) is read as the offered tool it
    /// fits.
    pub bare_arguments: bool,
    /// The file a SEARCH/REPLACE block or diff without a path is about; `None`: such an edit is
    /// not read (a develop step spans several files).
    pub default_path: Option<&'r str>,
}

/// The calls of `response`: its native calls, else the calls written in its text (see
/// [`Reading`]).
pub(crate) fn calls_in(
    response: &ChatResponse,
    offered: &[ToolSpec],
    reading: &Reading<'_>,
) -> Vec<ToolCall> {
    if !response.tool_calls.is_empty() {
        return response.tool_calls.clone();
    }
    calls_in_text(&response.text, offered, reading)
}

/// The calls written in `text` (see [`calls_in`]).
pub(crate) fn calls_in_text(
    text: &str,
    offered: &[ToolSpec],
    reading: &Reading<'_>,
) -> Vec<ToolCall> {
    let mut names: Vec<&str> = if reading.all_tools {
        tools::TOOL_NAMES.to_vec()
    } else {
        Vec::new()
    };
    names.extend(offered.iter().map(|t| t.name.as_str()));
    let found = parse_tool_text(text, &names);
    if !found.calls.is_empty() {
        return found.calls;
    }
    if reading.bare_arguments {
        let bare = bare_argument_calls(text, offered);
        if !bare.is_empty() {
            return bare;
        }
    }
    if !names.contains(&"edit_file") {
        return Vec::new();
    }
    let Ok(edits) = formats::parse(text) else {
        return Vec::new();
    };
    edits
        .into_iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let path = e.path.or_else(|| reading.default_path.map(str::to_owned))?;
            // Deletes and moves are beyond a run's tools; the model is told so.
            Some(
                file_edit_call(i, path.clone(), e.action).unwrap_or_else(|| {
                    ToolCall::new(
                        format!("text_edit_{i}"),
                        "unsupported_file_operation",
                        json!({ "path": path }),
                    )
                }),
            )
        })
        .collect()
}

/// The tool call that does what a SEARCH/REPLACE block, diff or patch parsed from an answer
/// (`edit::formats`) asks of `path`: `edit_file` for a replacement, `write_file` for a new file;
/// `None` for a delete or a move, which no edit tool does. `i` numbers the call's id.
fn file_edit_call(i: usize, path: String, action: Action) -> Option<ToolCall> {
    let (name, arguments) = match action {
        Action::Edit(Operation::Replace {
            old,
            new,
            replace_all,
        }) => (
            "edit_file",
            json!({"path": path, "old_string": old, "new_string": new, "replace_all": replace_all}),
        ),
        Action::Create(content) => ("write_file", json!({"path": path, "content": content})),
        _ => return None,
    };
    Some(ToolCall::new(format!("text_edit_{i}"), name, arguments))
}

/// The results of one answer's calls as the model reads them: a `ToolResult` each when the
/// calls were native, else one user message in the text protocol's shape
/// ([`result_block`]).
pub(crate) fn push_results(messages: &mut Vec<Message>, outcomes: &[ToolOutcome], native: bool) {
    if native {
        messages.extend(outcomes.iter().map(|o| Message::ToolResult {
            call_id: o.call_id.clone(),
            name: o.name.clone(),
            content: o.content.clone(),
            is_error: o.is_error(),
        }));
    } else {
        let blocks: Vec<String> = outcomes
            .iter()
            .map(|o| result_block(&o.name, &o.content, o.is_error()))
            .collect();
        messages.push(Message::user(blocks.join("\n\n")));
    }
}

/// What an answer with nothing to act on was, for the message that asks again: cut at the
/// output-token limit, empty, or what it said (on one line, clipped to `max` characters).
pub(crate) fn what_it_said(response: &ChatResponse, max: usize) -> String {
    let said = response.text.trim();
    if response.finish == Some(FinishReason::Length) {
        "it was cut at the output-token limit".to_owned()
    } else if said.is_empty() {
        "it was empty".to_owned()
    } else {
        format!(
            "it said: \"{}\"",
            crate::edit::text::clip(&said.replace('\n', " "), max)
        )
    }
}

/// "I cannot…"-style prose: a model that says it cannot change files.
pub(crate) fn refuses(text: &str) -> bool {
    let t = text.to_lowercase();
    [
        "i cannot",
        "i can't",
        "i can not",
        "i'm unable",
        "i am unable",
        "i'm not able",
        "as an ai",
        "i don't have access",
        "i do not have access",
    ]
    .iter()
    .any(|p| t.contains(p))
}

/// What the outcomes of one answer's calls add up to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Calls that changed a file.
    pub made: usize,
    /// How each edit was matched (`exact`, `whitespace`, …), each once, in order.
    pub matched_by: Vec<String>,
    /// The first edit the model attempted that did not go through (refused, or an edit tool's
    /// call that failed), by index into the outcomes. Repeating an edit that already went
    /// through (in this answer or an earlier one) is not one: it is the model saying it is done.
    pub refused: Option<usize>,
    /// Every call failed.
    pub all_failed: bool,
    /// Every call failed by repeating an edit already made or by changing nothing.
    pub all_repeats: bool,
}

/// Counts the outcomes of one answer's calls; `edited`: an earlier answer of the attempt
/// already changed a file.
pub(crate) fn tally(outcomes: &[ToolOutcome], edited: bool) -> Tally {
    let mut t = Tally::default();
    for (i, o) in outcomes.iter().enumerate() {
        match &o.status {
            Status::Edited { matched_by, .. } => {
                t.made += 1;
                if !t.matched_by.contains(matched_by) {
                    t.matched_by.push(matched_by.clone());
                }
            }
            Status::Failed(e) if attempted_edit(o, e) => {
                let done_before = edited || t.made > 0;
                if !(done_before && is_repeat(o)) && t.refused.is_none() {
                    t.refused = Some(i);
                }
            }
            _ => {}
        }
    }
    t.all_failed = outcomes
        .iter()
        .all(|o| matches!(o.status, Status::Failed(_)));
    t.all_repeats = outcomes.iter().all(is_repeat);
    t
}

/// A failed call that was an edit the model attempted (refused, not found, bad arguments of an
/// edit tool) rather than a read or a tool that does not exist.
fn attempted_edit(o: &ToolOutcome, e: &tools::ToolError) -> bool {
    e.is_edit_refusal()
        || (!tools::is_read_only(&o.name)
            && !matches!(
                e,
                tools::ToolError::UnknownTool { .. } | tools::ToolError::NotAvailable { .. }
            ))
}

/// A call refused because its edit is already there or changes nothing.
fn is_repeat(o: &ToolOutcome) -> bool {
    matches!(&o.status, Status::Failed(e)
        if matches!(e.refusal_kind(), Some(RefusalKind::AlreadyApplied | RefusalKind::NoOp)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_recognised() {
        assert!(refuses("I'm sorry, but I cannot modify files."));
        assert!(refuses("As an AI, I don't have access to your files"));
        assert!(!refuses("Done: the function is added."));
    }

    #[test]
    fn edits_in_text_need_a_path_or_a_default() {
        let text = "src/a.rs\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n";
        let offered = crate::tools::specs();
        let calls = calls_in_text(text, &offered, &Reading::default());
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "edit_file");
        let pathless = "<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n";
        assert!(calls_in_text(pathless, &offered, &Reading::default()).is_empty());
        let reading = Reading {
            default_path: Some("src/b.rs"),
            ..Reading::default()
        };
        let calls = calls_in_text(pathless, &offered, &reading);
        assert_eq!(calls[0].arguments["path"], "src/b.rs");
    }
}
