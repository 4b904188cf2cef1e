//! Parse checks on edited text: which syntax errors did an edit introduce?
//!
//! tree-sitter marks broken code with ERROR nodes (text it could not fit) and MISSING nodes
//! (tokens it had to invent, such as a `}`). An edit is blamed only for problems that do not
//! overlap a problem the text already had, so a model fixing one thing in a broken file is not
//! told about errors it did not cause. Positions are 1-based lines and 1-based character
//! columns. Pure: never does I/O, never panics; text without a grammar has no problems.

use std::fmt;
use std::ops::Range;

use tree_sitter::Node;

use crate::document::change::{ChangeError, Replacement, TextEdit};
use crate::syntax::language::Language;
use crate::syntax::lines::{LineIndex, line_text};
use crate::syntax::tree::SyntaxTree;

/// At most this many problems are reported for one text; the rest follow from the first ones.
pub const MAX_PROBLEMS: usize = 20;

/// One syntax error in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseProblem {
    /// 1-based line.
    pub line: usize,
    /// 1-based column in characters.
    pub column: usize,
    /// Byte range of the ERROR node (empty for a MISSING node).
    pub range: Range<usize>,
    /// For a MISSING node, the token tree-sitter expected (`}`, `;`, `identifier`).
    pub missing: Option<String>,
    /// A short excerpt of the offending text (or of its line for a MISSING node).
    pub excerpt: String,
}

impl fmt::Display for ParseProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.missing {
            Some(kind) => write!(
                f,
                "line {}, column {}: missing `{}` (in `{}`)",
                self.line, self.column, kind, self.excerpt
            ),
            None => write!(
                f,
                "line {}, column {}: syntax error at `{}`",
                self.line, self.column, self.excerpt
            ),
        }
    }
}

/// Every ERROR and MISSING node of `tree` (parsed from `text`), in document order.
pub fn parse_problems(text: &str, tree: &SyntaxTree) -> Vec<ParseProblem> {
    let Some(root) = tree.root() else {
        return Vec::new();
    };
    if !root.has_error() {
        return Vec::new();
    }
    let index = LineIndex::new(text);
    let mut out = Vec::new();
    collect(root, text, &index, &mut out);
    out
}

/// The problems in `after` that `before` did not have (see the module docs).
pub fn introduced_problems(language: Language, before: &str, after: &str) -> Vec<ParseProblem> {
    // One hunk: the common prefix and suffix are unchanged.
    let prefix = before
        .bytes()
        .zip(after.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let max_suffix = before.len().min(after.len()) - prefix;
    let suffix = before
        .bytes()
        .rev()
        .zip(after.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let mut start = prefix;
    while start > 0 && !(before.is_char_boundary(start) && after.is_char_boundary(start)) {
        start -= 1;
    }
    let (mut old_end, mut new_end) = (before.len() - suffix, after.len() - suffix);
    while old_end < before.len()
        && !(before.is_char_boundary(old_end) && after.is_char_boundary(new_end))
    {
        old_end += 1;
        new_end += 1;
    }
    let edit = TextEdit::single(Replacement::new(start..old_end, &after[start..new_end]));
    introduced(language, before, after, &edit)
}

/// The problems `edit` introduces into `before`, or why the edit does not fit it.
pub fn introduced_problems_for_edit(
    language: Language,
    before: &str,
    edit: &TextEdit,
) -> Result<Vec<ParseProblem>, ChangeError> {
    let after = edit.apply(before)?;
    Ok(introduced(language, before, &after, edit))
}

fn introduced(language: Language, before: &str, after: &str, edit: &TextEdit) -> Vec<ParseProblem> {
    let new_tree = SyntaxTree::parse(after, language);
    if !new_tree.has_errors() {
        return Vec::new();
    }
    let old_problems = parse_problems(before, &SyntaxTree::parse(before, language));
    let back = inverse(before, edit);
    parse_problems(after, &new_tree)
        .into_iter()
        .filter(|problem| {
            let start = back.map_offset(problem.range.start, false);
            let end = back.map_offset(problem.range.end, true);
            !old_problems
                .iter()
                .any(|old| old.range.start <= end && start <= old.range.end)
        })
        .collect()
}

/// The edit that takes `edit`'s result back to `before`; maps new offsets to old ones.
fn inverse(before: &str, edit: &TextEdit) -> TextEdit {
    let mut delta: isize = 0;
    let mut out = Vec::with_capacity(edit.replacements().len());
    for r in edit.replacements() {
        let start = (r.range.start as isize + delta) as usize;
        let old = before.get(r.range.clone()).unwrap_or("");
        out.push(Replacement::new(start..start + r.text.len(), old));
        delta += r.text.len() as isize - r.range.len() as isize;
    }
    TextEdit::new(out).unwrap_or_default()
}

fn collect(node: Node<'_>, text: &str, index: &LineIndex, out: &mut Vec<ParseProblem>) {
    if out.len() >= MAX_PROBLEMS {
        return;
    }
    if node.is_missing() {
        out.push(problem(node, text, index, Some(node.kind().to_string())));
        return;
    }
    if node.is_error() {
        out.push(problem(node, text, index, None));
        return;
    }
    if !node.has_error() {
        return;
    }
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    for child in children {
        collect(child, text, index, out);
    }
}

fn problem(node: Node<'_>, text: &str, index: &LineIndex, missing: Option<String>) -> ParseProblem {
    let start = node.start_byte().min(text.len());
    let line = index.line_of(start);
    let line_start = index.line_range(line).start;
    let column = text
        .get(line_start..start)
        .map_or(1, |s| s.chars().count() + 1);
    let source = if missing.is_some() || node.byte_range().is_empty() {
        line_text(text, index, line)
    } else {
        text.get(node.byte_range()).unwrap_or("")
    };
    ParseProblem {
        line: line + 1,
        column,
        range: node.byte_range(),
        missing,
        excerpt: excerpt(source),
    }
}

/// The first non-blank line of `source`, trimmed, at most 40 characters.
fn excerpt(source: &str) -> String {
    let line = source
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() > 40 {
        let cut: String = line.chars().take(39).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "fn a() {\n    let x = 1;\n}\n\nfn b() {}\n";

    #[test]
    fn clean_edits_introduce_nothing() {
        let after = GOOD.replace("let x = 1;", "let x = 2;");
        assert!(introduced_problems(Language::Rust, GOOD, &after).is_empty());
    }

    #[test]
    fn reports_missing_and_error_nodes_with_positions() {
        let after = GOOD.replace("let x = 1;", "let x = (1;");
        let problems = introduced_problems(Language::Rust, GOOD, &after);
        assert!(!problems.is_empty());
        assert_eq!(problems[0].line, 2, "{problems:?}");
        let text = problems[0].to_string();
        assert!(text.starts_with("line 2, column "), "{text}");
    }

    #[test]
    fn columns_count_characters_after_multibyte_text() {
        let before = "fn a() {\n    let s = \"héé✓\"; let y = 2;\n}\n";
        let after = before.replace("let y = 2;", "let y = ;");
        let problems = introduced_problems(Language::Rust, before, &after);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let line = after.lines().nth(1).unwrap();
        let byte = line.find("= ;").unwrap();
        let col = line[..byte].chars().count() + 1;
        assert_eq!(
            (problems[0].line, problems[0].column),
            (2, col),
            "{problems:?}"
        );
    }

    #[test]
    fn pre_existing_errors_are_not_blamed() {
        let before = "fn a() {\n    let x = ;\n}\n\nfn b() {\n    let y = 1;\n}\n";
        let after = before.replace("let y = 1;", "let y = 2;");
        assert!(!parse_problems(&after, &SyntaxTree::parse(&after, Language::Rust)).is_empty());
        assert!(introduced_problems(Language::Rust, before, &after).is_empty());
        // A new error elsewhere is still reported, and only it.
        let worse = after.replace("let y = 2;", "let y = 2 +;");
        let problems = introduced_problems(Language::Rust, before, &worse);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].line, 6);
    }

    #[test]
    fn edit_variant_maps_through_several_replacements() {
        let edit = TextEdit::new(vec![
            Replacement::new(0..0, "// header\n"),
            Replacement::new(GOOD.find("fn b() {}").unwrap()..GOOD.len(), "fn b( {}\n"),
        ])
        .unwrap();
        let problems = introduced_problems_for_edit(Language::Rust, GOOD, &edit).unwrap();
        assert!(!problems.is_empty());
        assert!(problems.iter().all(|p| p.line >= 6), "{problems:?}");
        let bad = TextEdit::single(Replacement::new(0..999, ""));
        assert!(introduced_problems_for_edit(Language::Rust, GOOD, &bad).is_err());
    }

    #[test]
    fn text_without_grammar_has_no_problems() {
        assert!(introduced_problems(Language::Text, "a", "((((").is_empty());
    }
}
