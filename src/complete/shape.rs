//! Turning a model's raw fill-in-the-middle answer into a suggestion worth showing: cut at the
//! end of the current block, one line when the cursor is mid-line or multi-line suggestions
//! are off, and never the text that already follows the cursor. Also whether the cursor is in
//! a comment or a string, where suggestions are offered only when invoked.

use crate::syntax::{Language, SyntaxTree};

/// The lines of a multi-line suggestion, at most.
pub const MAX_LINES: usize = 16;

/// What shaping needs to know about the cursor.
#[derive(Debug, Clone, Copy)]
pub struct Cursor<'a> {
    /// The text before the cursor on its line.
    pub line_before: &'a str,
    /// The text after the cursor (the rest of the file, or as much as the prompt showed).
    pub after: &'a str,
    pub multi_line: bool,
}

/// The suggestion made of `raw`, or `None` when nothing is left.
pub fn shape(raw: &str, cursor: Cursor<'_>) -> Option<String> {
    let rest_of_line = cursor.after.split('\n').next().unwrap_or("");
    let rest_of_line = rest_of_line.strip_suffix('\r').unwrap_or(rest_of_line);
    let mid_line = !rest_of_line.trim().is_empty();
    let raw = raw.replace("\r\n", "\n");
    let mut lines: Vec<&str> = raw.split('\n').collect();
    if mid_line || !cursor.multi_line {
        lines.truncate(1);
    }
    let base = indent_of(cursor.line_before);
    let opens_block = opens_block(cursor.line_before);
    // The block ends at the first line (after the first) indented less than the cursor's line,
    // or as much as it when the cursor's line did not open a block and a blank line came first.
    let following: Vec<&str> = cursor
        .after
        .split('\n')
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .collect();
    let mut kept = 1;
    let mut saw_blank = false;
    for line in lines.iter().skip(1) {
        if kept >= MAX_LINES {
            break;
        }
        if line.trim().is_empty() {
            saw_blank = true;
            kept += 1;
            continue;
        }
        let indent = indent_of(line);
        if indent < base || (indent == base && saw_blank && !opens_block) {
            break;
        }
        // The text after the cursor, written again: stop before it.
        if following
            .first()
            .is_some_and(|next| next.trim() == line.trim() && line.trim().len() > 1)
        {
            break;
        }
        kept += 1;
    }
    lines.truncate(kept);
    let mut text = lines.join("\n");
    // The rest of the cursor's line, written again at the end of the suggestion.
    if mid_line {
        let rest = rest_of_line.trim_end();
        if let Some(cut) = text.trim_end().strip_suffix(rest) {
            text = cut.to_owned();
        }
    }
    let text = text.trim_end().to_owned();
    (!text.trim().is_empty()).then_some(text)
}

/// Whether byte `offset` of `text` is inside a comment or a string (never for unparsed
/// languages).
pub fn in_comment_or_string(text: &str, offset: usize, language: Language) -> bool {
    if !language.is_parsed() {
        return false;
    }
    let tree = SyntaxTree::parse(text, language);
    let Some(root) = tree.root() else {
        return false;
    };
    // The node just before the cursor: at the end of a line comment the cursor is past it.
    let at = offset.saturating_sub(1).min(text.len());
    let Some(mut node) = root.descendant_for_byte_range(at, at) else {
        return false;
    };
    loop {
        let kind = node.kind();
        let inside = offset > node.start_byte() && offset < node.end_byte();
        let line_comment_end = kind.contains("comment") && offset == node.end_byte();
        if (kind.contains("comment") || kind.contains("string")) && (inside || line_comment_end) {
            // A block comment's end (`*/`) closes it: past it is code.
            return !(kind.contains("comment") && text[..offset].ends_with("*/"));
        }
        match node.parent() {
            Some(parent) => node = parent,
            None => return false,
        }
    }
}

fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

fn opens_block(line: &str) -> bool {
    let line = line.trim_end();
    line.ends_with(':') || line.ends_with('{') || line.ends_with('(') || line.ends_with('[')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line_before: &str, after: &str, raw: &str, expected: Option<&str>) {
        let cursor = Cursor {
            line_before,
            after,
            multi_line: true,
        };
        assert_eq!(shape(raw, cursor).as_deref(), expected, "raw {raw:?}");
    }

    #[test]
    fn a_block_ends_where_its_indentation_does() {
        // A function body, then the next definition.
        check(
            "    ",
            "\n\ndef dedent(text):\n",
            "lines = text.splitlines()\n    return '\\n'.join(lines)\n\ndef dedent(text):\n    pass",
            Some("lines = text.splitlines()\n    return '\\n'.join(lines)"),
        );
        // The body of a block, then its closing brace.
        check(
            "        ",
            "\n    }\n}\n",
            "let args = flags::parse()?;\n        run(args)\n    }\n}",
            Some("let args = flags::parse()?;\n        run(args)"),
        );
    }

    #[test]
    fn mid_line_gives_one_line_without_the_rest_of_it() {
        check(
            "    return array.map(",
            ");\n}\n",
            "x => f(x));\n}\nfoo",
            Some("x => f(x)"),
        );
    }

    #[test]
    fn the_text_after_the_cursor_is_not_written_again() {
        check(
            "def area(r):\n    ",
            "\n    return total\n",
            "total = 3.14159 * r * r\n    return total",
            Some("total = 3.14159 * r * r"),
        );
        check("x = ", "\n", "   \n\n", None);
    }

    #[test]
    fn one_line_when_multi_line_is_off() {
        let cursor = Cursor {
            line_before: "",
            after: "",
            multi_line: false,
        };
        assert_eq!(shape("a = 1\nb = 2", cursor).as_deref(), Some("a = 1"));
    }

    #[test]
    fn comments_and_strings_are_found() {
        let py = "x = 1  # note\ns = \"text here\"\ny = \n";
        assert!(in_comment_or_string(py, 13, Language::Python));
        assert!(in_comment_or_string(py, 20, Language::Python));
        assert!(!in_comment_or_string(py, 34, Language::Python));
        let rs = "/* a */ fn f() { let s = \"ab\"; }\n";
        assert!(in_comment_or_string(rs, 4, Language::Rust));
        assert!(!in_comment_or_string(rs, 7, Language::Rust));
        assert!(in_comment_or_string(rs, 27, Language::Rust));
        assert!(!in_comment_or_string(rs, 16, Language::Rust));
        assert!(!in_comment_or_string("anything", 3, Language::Text));
    }
}
