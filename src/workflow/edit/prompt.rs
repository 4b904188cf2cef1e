//! The words an edit run sends: the system prompts of the two edit protocols, the first user
//! message of each, the feedback after a refused attempt, and the tools an edit attempt offers.
//!
//! Everything here is written for the smallest model the workflow must serve (a 1.5B model on a
//! CPU, where every 1,000 prompt tokens cost 20–25 s) and for prefix caches (llama.cpp, vLLM
//! reuse the longest prefix of the previous request): stable text first — system prompt, tools,
//! file — and what changes between requests last. A selection is shown once.

use serde_json::Value;

use crate::model::ToolSpec;
use crate::syntax::Language;
use crate::syntax::lines::{LineIndex, push_numbered};
use crate::tools;

use crate::workflow::model_loop::target::EditTarget;

/// The tools of an edit attempt: reading and the edit tools. Listing, searching and creating
/// files belong to exploration (develop), not to changing a target the run already shows.
pub const EDIT_TOOLS: [&str; 5] = [
    "read_file",
    "edit_file",
    "insert_lines",
    "replace_lines",
    "replace_symbol",
];

/// The write tools (`docs/editing.md`, "Write sessions"): a run that creates a file offers
/// `begin_write` besides [`EDIT_TOOLS`], and `end_write` only while a session's content waits
/// for a confirmation. On an 8k window every tool is paid for in every request.
pub const WRITE_TOOLS: [&str; 2] = ["begin_write", "end_write"];

/// The specs of [`EDIT_TOOLS`] and of the write tools named in `write` (a part of
/// [`WRITE_TOOLS`]) with one-line descriptions and bare parameter schemas (the full registry
/// descriptions cost ~1,000 tokens per request).
pub fn edit_tools(write: &[&str]) -> Vec<ToolSpec> {
    EDIT_TOOLS
        .iter()
        .chain(write.iter().filter(|n| WRITE_TOOLS.contains(n)))
        .filter_map(|name| {
            let mut spec = tools::spec(name)?;
            spec.description = short_description(name).to_owned();
            strip_descriptions(&mut spec.parameters);
            Some(spec)
        })
        .collect()
}

fn short_description(name: &str) -> &'static str {
    match name {
        "read_file" => "Read a file with numbered lines (offset, limit: a line range).",
        "edit_file" => {
            "Replace old_string (copied exactly from the file, enough lines to be unique) with \
             new_string."
        }
        "insert_lines" => "Insert text as whole lines after line `line` (0: at the top).",
        "replace_lines" => "Replace lines start..end (inclusive) with text.",
        "replace_symbol" => "Replace a whole function, method or class, found by name, with text.",
        "begin_write" => {
            "Write a whole file as plain text: your next answer is its content, ended by the \
             marker this call returns. mode: create (default), overwrite or append."
        }
        "end_write" => "Confirm that a write session's content is complete (complete=true).",
        _ => "",
    }
}

fn strip_descriptions(schema: &mut Value) {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for p in props.values_mut() {
            if let Some(o) = p.as_object_mut() {
                o.remove("description");
                o.remove("minimum");
            }
        }
    }
}

/// System prompt of the rewrite protocol.
pub fn rewrite_system(rules: &str) -> String {
    with_rules(
        "You are a careful coding assistant. You change code exactly as the instruction says and \
         nothing else, keeping its style and indentation. You answer with the complete rewritten \
         code in one fenced code block and nothing else."
            .to_owned(),
        rules,
    )
}

/// System prompt of the tools protocol; `write`: the run creates a file, and says how.
pub fn tools_system(rules: &str, write: bool) -> String {
    let mut s = "You are a careful coding agent. You change files only through the tools.\n\
         - Make exactly the change the instruction asks for; keep the file's style and \
         indentation.\n\
         - Files are shown with line numbers (number, tab, text); the numbers are not part of \
         the file: never copy them into old_string or new_string.\n\
         - edit_file: copy old_string exactly from the file, with enough lines to match one \
         place only. To add lines, use insert_lines.\n\
         - If an edit is refused, read why, fix the call and try again."
        .to_owned();
    if write {
        s.push_str(
            "\n- To create a file, call begin_write with its path, then send the whole file as \
             your next answer in plain text, ending with the marker begin_write gives you.",
        );
    }
    with_rules(s, rules)
}

fn with_rules(mut s: String, rules: &str) -> String {
    if !rules.trim().is_empty() {
        s.push_str("\n\n# Workspace rules\n\n");
        s.push_str(rules.trim());
    }
    s.push('\n');
    s
}

/// The fence's info string for a language (```` ```python ````).
pub fn fence_tag(language: Language) -> &'static str {
    match language {
        Language::Text => "",
        other => other.name(),
    }
}

/// A target as a rewrite prompt shows it: `{rel}, {label} (lines a-b), inside `…`:`, then its
/// text in a fence. An edit shows its one target this way, a develop step each item it names
/// in a file too large to show whole.
pub fn shown_target(
    rel: &str,
    language: Language,
    target: &EditTarget,
    target_text: &str,
) -> String {
    let tag = fence_tag(language);
    let mut s = format!(
        "{rel}, {} (lines {}-{})",
        target.label, target.first, target.last
    );
    if !target.context.is_empty() {
        s.push_str(", inside ");
        let ctx: Vec<String> = target.context.iter().map(|c| format!("`{c}`")).collect();
        s.push_str(&ctx.join(" > "));
    }
    s.push_str(&format!(":\n\n```{tag}\n{}", target_text));
    if !target_text.ends_with('\n') {
        s.push('\n');
    }
    s.push_str("```\n\n");
    s
}

/// The first user message of a rewrite attempt: the target once, then the instruction.
pub fn rewrite_user(
    rel: &str,
    language: Language,
    target: &EditTarget,
    target_text: &str,
    instruction: &str,
    notes: &str,
) -> String {
    let tag = fence_tag(language);
    let mut s = format!("File: {}", shown_target(rel, language, target, target_text));
    if let Some((a, b)) = target.selection
        && (a, b) != (target.first, target.last)
    {
        s.push_str(&format!(
            "The user selected line{} {} of the file (inside the code above).\n",
            if a == b { "" } else { "s" },
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        ));
    }
    s.push_str(&format!("Instruction: {}\n", instruction.trim()));
    if !notes.is_empty() {
        s.push('\n');
        s.push_str(notes.trim_end());
        s.push('\n');
    }
    s.push_str(&format!(
        "\nReply with the complete rewritten {} in one ```{tag} code block and nothing else.",
        target.label
    ));
    s
}

/// The first user message of a tools attempt: the region (which shows the target), then what
/// to do. `creates`: the files the run is asked to create (the target among them when it does
/// not exist yet or is empty; then there is no region).
pub fn tools_user(
    rel: &str,
    target: Option<&EditTarget>,
    cursor_line: Option<usize>,
    region: &str,
    instruction: &str,
    notes: &str,
    creates: &[String],
) -> String {
    let mut s = String::new();
    if !region.trim().is_empty() {
        s.push_str(region.trim_end());
        s.push_str("\n\n");
    }
    let new_target = creates.iter().any(|c| c == rel);
    match (target, cursor_line) {
        _ if new_target => s.push_str(&format!("Target: the new file {rel}.\n")),
        (Some(t), _) => {
            s.push_str(&format!(
                "Target: {} of {rel}, lines {}-{} (shown above)",
                t.label, t.first, t.last
            ));
            if let Some((a, b)) = t.selection
                && (a, b) != (t.first, t.last)
            {
                s.push_str(&format!("; the user selected lines {a}-{b}"));
            }
            s.push_str(".\n");
        }
        (None, Some(line)) => s.push_str(&format!("Target: {rel}, at line {line} (the cursor).\n")),
        (None, None) => s.push_str(&format!("Target: the file {rel}.\n")),
    }
    let others: Vec<&str> = creates
        .iter()
        .filter(|c| *c != rel)
        .map(String::as_str)
        .collect();
    if !others.is_empty() {
        s.push_str(&format!(
            "New file{} to create: {}.\n",
            if others.len() == 1 { "" } else { "s" },
            others.join(", ")
        ));
    }
    s.push_str(&format!("Instruction: {}\n", instruction.trim()));
    if !notes.is_empty() {
        s.push('\n');
        s.push_str(notes.trim_end());
        s.push('\n');
    }
    if let Some(first) = creates.first() {
        s.push_str(&format!(
            "\nRespond with a begin_write call with path \"{first}\"{}.",
            if new_target {
                ""
            } else {
                " (or another edit tool)"
            }
        ));
        return s;
    }
    // No "when done, answer in a sentence" here: small local models (Qwen2.5-Coder 1.5B) read
    // it as permission to answer "Done." at once. The turn after a tool result is where a model
    // says it is finished.
    s.push_str("\nRespond with an edit_file call (or another edit tool) that makes this change.");
    s
}

/// `text`'s 1-based lines `first..=last`, numbered like `read_file`
/// (`syntax::lines::push_numbered`); lines past the end are not shown.
pub fn numbered(text: &str, first: usize, last: usize) -> String {
    let index = LineIndex::new(text);
    let mut out = String::new();
    if !text.is_empty() && first.max(1) <= last {
        push_numbered(&mut out, text, &index, first.max(1) - 1, last - 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::budget::count_request;
    use crate::model::{ChatRequest, Message};
    use crate::tokens::Encoding;

    #[test]
    fn edit_tools_are_few_and_short() {
        let tools = edit_tools(&[]);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, EDIT_TOOLS);
        let full = ChatRequest {
            messages: vec![Message::user("x")],
            tools: tools::specs(),
            ..ChatRequest::default()
        };
        let short = ChatRequest {
            tools,
            ..full.clone()
        };
        let (a, b) = (
            count_request(&full, Encoding::Cl100k),
            count_request(&short, Encoding::Cl100k),
        );
        assert!(b * 2 < a, "{b} tokens of tools, all of them {a}");
    }

    /// What offering the write tools costs per request (`docs/editing.md`, "Write sessions").
    #[test]
    fn write_tools_cost_little() {
        let count = |tools: Vec<ToolSpec>| {
            let request = ChatRequest {
                messages: vec![Message::user("x")],
                tools,
                ..ChatRequest::default()
            };
            count_request(&request, Encoding::Cl100k)
        };
        let none = count(Vec::new());
        let edit = count(edit_tools(&[])) - none;
        let begin = count(edit_tools(&["begin_write"])) - none;
        let both = count(edit_tools(&WRITE_TOOLS)) - none;
        let full: Vec<ToolSpec> = WRITE_TOOLS.iter().filter_map(|n| tools::spec(n)).collect();
        let full = count([edit_tools(&[]), full].concat()) - none;
        eprintln!(
            "tool list tokens (cl100k): edit {edit}, +begin_write {begin}, +end_write {both}, \
             both with registry descriptions {full}"
        );
        assert!(
            begin - edit <= 80,
            "begin_write costs {} tokens",
            begin - edit
        );
        assert!(both < full);
    }

    #[test]
    fn numbering_matches_read_file() {
        assert_eq!(numbered("a\nb\nc\n", 2, 3), "     2\tb\n     3\tc\n");
        assert_eq!(numbered("a\n", 3, 4), "");
    }
}
