//! Turning a model's raw fill-in-the-middle answer into a suggestion worth showing: cut at the
//! end of the current block, one line when the cursor is mid-line or multi-line suggestions
//! are off, and never the text that already follows the cursor. Also whether the cursor is in
//! prose (a comment, a docstring, a one-line string), where suggestions are offered only when
//! invoked; the code a comment shows and a string over several lines are code.
//!
//! The end of the block is found two ways, and the earlier cut wins. By indentation, in every
//! language: a line indented less than the cursor's line ends it. By syntax, where the language
//! has a grammar: a closing bracket (`}` `)` `]`) of the suggestion that closes a bracket
//! opened before the cursor, when the text after the cursor already closes it, ends the
//! suggestion just before it (so before its line when nothing precedes it there), unless the
//! suggestion's first line opens as many again (`} catch (error) {`, `) -> Result<T> {`: the
//! text after the cursor closes those instead); in Python, so
//! does a line indented less than the suite the cursor is in when the text after the cursor
//! goes on with that suite. Brackets are tree-sitter tokens, so those inside strings and
//! comments do not count. The suggestion's own brackets pair up first; the text after the
//! cursor closes the outermost of the brackets open at the cursor, the suggestion may close the
//! rest (the user typed `if (a) {` and the `}` after the cursor is the function's).
//!
//! Cost per suggestion: the caller's one parse of the document (shared with the
//! prose check), a walk of the tokens around the cursor that skips every subtree
//! without errors, and one incremental re-parse of the document with the suggestion inserted.
//! Never panics on any text or offset; a document without a parse gets the indentation rule.

use std::ops::Range;

use tree_sitter::Node;

use crate::document::change::{Replacement, TextEdit};
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
    /// The parsed document, for the syntax side of the block's end; `None` (or a tree-less
    /// parse) keeps the indentation rule only.
    pub syntax: Option<Syntax<'a>>,
}

impl<'a> Cursor<'a> {
    /// The cursor at byte `offset` of `text` (a char boundary), with the syntax side when
    /// `tree` (the parse of `text`) is given.
    pub fn in_document(
        text: &'a str,
        offset: usize,
        multi_line: bool,
        tree: Option<&'a SyntaxTree>,
    ) -> Cursor<'a> {
        let (before, after) = text.split_at(offset);
        Cursor {
            line_before: before.rsplit('\n').next().unwrap_or(before),
            after,
            multi_line,
            syntax: tree.map(|tree| Syntax { tree, text, offset }),
        }
    }
}

/// The whole document and its parse, for [`Cursor::syntax`].
#[derive(Debug, Clone, Copy)]
pub struct Syntax<'a> {
    /// The parse of `text`.
    pub tree: &'a SyntaxTree,
    pub text: &'a str,
    /// The cursor, a byte offset into `text`.
    pub offset: usize,
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
    // A mid-line suggestion is cut to the line and by the rest of it; the syntax side is for
    // a suggestion that may go on to the next lines.
    if !mid_line
        && let Some(syntax) = cursor.syntax
        && let Some(cut) = syntax_cut(&text, syntax)
    {
        text.truncate(cut);
    }
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

/// Whether byte `offset` of `text` is in prose, where a suggestion is offered only when
/// invoked: a comment, a docstring, or a string that began on the cursor's line (a message or
/// a name being typed). Not prose, so completed as code: the code a comment or a docstring
/// shows in a fenced block (```` ``` ````, `~~~`) or a doctest line (`>>>`), a string that
/// began on an earlier line (an embedded script, a query, a template, a message continued over
/// lines: ripgrep's bash completion script, walkdir's `/*! … */` examples), and a template's or
/// an f-string's `${…}`/`{…}`. `tree` is the parse of `text` (never for unparsed languages).
pub fn in_prose(tree: &SyntaxTree, text: &str, offset: usize) -> bool {
    let Some(root) = tree.root() else {
        return false;
    };
    // The node just before the cursor: at the end of a line comment the cursor is past it.
    let offset = offset.min(text.len());
    let at = offset.saturating_sub(1);
    let Some(mut node) = root.descendant_for_byte_range(at, at) else {
        return false;
    };
    loop {
        let kind = node.kind();
        let inside = offset > node.start_byte() && offset < node.end_byte();
        // Code inside a string: a template literal's `${…}`, an f-string's `{…}`.
        if inside && (kind.contains("substitution") || kind.contains("interpolation")) {
            return false;
        }
        // A grammar whose line comment holds its line end (Rust's `///` and `//`) ends it at
        // the next line's start: a cursor there is on the line after the comment.
        let line_comment_end = kind.contains("comment")
            && offset == node.end_byte()
            && !text.as_bytes()[..offset].ends_with(b"\n");
        if kind.contains("comment") && (inside || line_comment_end) {
            // A block comment's end (`*/`) closes it: past it is code.
            if text.as_bytes()[..offset].ends_with(b"*/") {
                return false;
            }
            // The whole comment, not a doc comment's marker or text piece.
            while let Some(parent) = node.parent().filter(|p| p.kind().contains("comment")) {
                node = parent;
            }
            return !in_code_block(text, comment_run_start(node, text), offset);
        }
        if kind.contains("string") && inside {
            // The whole literal, not its content piece.
            while let Some(parent) = node.parent().filter(|p| p.kind().contains("string")) {
                node = parent;
            }
            let docstring = node
                .parent()
                .is_some_and(|p| p.kind() == "expression_statement");
            let began_earlier = text[node.start_byte()..offset].contains('\n');
            if began_earlier && !docstring {
                return false;
            }
            return !in_code_block(text, node.start_byte(), offset);
        }
        match node.parent() {
            Some(parent) => node = parent,
            None => return false,
        }
    }
}

/// Where the comment holding `node` begins: a line comment's run of line comments on the
/// lines just above it (each `///` line is a node of its own), else the node itself.
fn comment_run_start(node: Node<'_>, text: &str) -> usize {
    let mut first = node;
    while let Some(previous) = first.prev_sibling() {
        let Some(between) = text.get(previous.end_byte()..first.start_byte()) else {
            break;
        };
        let adjacent = between.trim().is_empty() && between.matches('\n').count() <= 1;
        if !previous.kind().contains("comment") || !adjacent {
            break;
        }
        first = previous;
    }
    first.start_byte()
}

/// Whether the cursor's line, in a comment or a string that begins at byte `start`, is code
/// the text shows: inside a fenced block opened on an earlier line of it and not closed, or a
/// doctest line (`>>> `).
fn in_code_block(text: &str, start: usize, offset: usize) -> bool {
    let line_start = text[..offset].rfind('\n').map_or(0, |n| n + 1);
    // A line without its comment leader (`///`, `//!`, ` * `, `#`, `--`).
    fn unlead(line: &str) -> &str {
        line.trim_start()
            .trim_start_matches(['/', '!', '*', '#', '-'])
            .trim_start()
    }
    if unlead(&text[line_start..offset]).starts_with(">>>") {
        return true;
    }
    let fences = text
        .get(start.min(line_start)..line_start)
        .unwrap_or("")
        .lines()
        .filter(|line| {
            let line = unlead(line);
            line.starts_with("```") || line.starts_with("~~~")
        })
        .count();
    fences % 2 == 1
}

/// Where the syntax ends `suggestion` (a byte offset into it), inserted at the cursor of
/// `syntax`: at a closing bracket the text after the cursor already has, or (Python) at a line
/// that leaves the suite the cursor is in.
fn syntax_cut(suggestion: &str, syntax: Syntax<'_>) -> Option<usize> {
    let Syntax { tree, text, offset } = syntax;
    let root = tree.root()?;
    if offset > text.len() || !text.is_char_boundary(offset) || suggestion.is_empty() {
        return None;
    }
    let around = Around::at(root, offset);
    let suite = if tree.language() == Language::Python && around.open == 0 {
        suite_indent(root, text, offset)
    } else {
        None
    };
    // The document with the suggestion in place, re-parsed from the document's parse (only
    // what the insertion changed is parsed again): its tokens are lexed in their real context.
    let mut combined = tree.clone();
    let edit = TextEdit::single(Replacement::insert(offset, suggestion));
    combined.apply(text, &edit).ok()?;
    let root = combined.root()?;
    let tokens = tokens_in(root, offset..offset + suggestion.len());

    // The suggestion's brackets pair up among themselves; a closing one left over closes a
    // bracket open at the cursor, innermost first. The text after the cursor closes
    // `around.closed` of them, the outermost: the suggestion may close the others. Its first
    // line may close more when it opens as many again before it ends (`} else {`,
    // `} catch (error) {`, `) -> Result<DirEntry> {` after a signature's parameters): the
    // text after the cursor then closes those, so the suggestion's later lines may not.
    let may_close = around.open.saturating_sub(around.closed);
    let first_line_end = suggestion.find('\n').unwrap_or(suggestion.len());
    let mut depth = 0usize;
    let mut closed = 0usize;
    let mut depth_at = Vec::with_capacity(tokens.len());
    let mut cut = None;
    // The first line's first closing bracket beyond `may_close`, until the line ends: then it
    // is cut there unless the line opened as many again (`None` stands for the end).
    let mut unpaid = None;
    for token in tokens.iter().map(Some).chain([None]) {
        if let Some(at) = unpaid
            && token.is_none_or(|t| t.start >= first_line_end)
        {
            let excess = closed - may_close;
            if depth < excess {
                cut = Some(at);
                break;
            }
            unpaid = None;
            depth -= excess;
            closed = may_close;
        }
        let Some(token) = token else { break };
        depth_at.push(depth);
        match token.kind {
            TokenKind::Open => depth += 1,
            TokenKind::Close if depth > 0 => depth -= 1,
            TokenKind::Close => {
                closed += 1;
                if closed > may_close {
                    if token.start < first_line_end {
                        unpaid.get_or_insert(token.start);
                    } else {
                        cut = Some(token.start);
                        break;
                    }
                }
            }
            TokenKind::Comment | TokenKind::Other => {}
        }
    }
    if let Some(suite) = suite
        && let Some(leaves) = suite_end(suggestion, root, offset, &tokens, &depth_at, suite)
    {
        cut = Some(cut.map_or(leaves, |cut: usize| cut.min(leaves)));
    }
    cut
}

/// The brackets open at the cursor.
#[derive(Debug, Default, PartialEq)]
struct Around {
    /// Opened before the cursor and not closed before it.
    open: usize,
    /// Closed by the text after the cursor (its closing brackets left over once its own
    /// brackets pair up).
    closed: usize,
}

impl Around {
    /// Counted over the document's tokens; a subtree wholly on one side of the cursor without
    /// a parse error holds pairs only and is skipped, so the walk stays near the cursor's
    /// ancestors in a file that parses.
    fn at(root: Node<'_>, offset: usize) -> Around {
        let mut around = Around::default();
        let mut depth_after = 0usize;
        walk(
            root,
            |node| {
                let before = node.end_byte() <= offset;
                let after = node.start_byte() >= offset;
                (before || after) && node.child_count() > 0 && !node.has_error()
            },
            |leaf| {
                let before = leaf.end_byte() <= offset;
                let after = leaf.start_byte() >= offset;
                match (bracket(leaf), before, after) {
                    (Some(TokenKind::Open), true, _) => around.open += 1,
                    (Some(TokenKind::Close), true, _) => {
                        around.open = around.open.saturating_sub(1)
                    }
                    (Some(TokenKind::Open), false, true) => depth_after += 1,
                    (Some(TokenKind::Close), false, true) if depth_after > 0 => depth_after -= 1,
                    (Some(TokenKind::Close), false, true) => around.closed += 1,
                    _ => {}
                }
            },
        );
        around
    }
}

/// The indentation of the Python suite the cursor is in, when the text after the cursor goes
/// on with it: the innermost `block` that holds the cursor or begins after it with nothing
/// but blank text between, on a line below its header (a one-line suite `if x: pass` has no
/// lines to leave).
fn suite_indent(root: Node<'_>, text: &str, offset: usize) -> Option<usize> {
    let mut node = root.descendant_for_byte_range(offset, offset)?;
    loop {
        let mut walker = node.walk();
        let block = node.children(&mut walker).find(|child| {
            let holds = child.start_byte() <= offset && child.end_byte() > offset;
            let next = child.start_byte() > offset
                && text
                    .get(offset..child.start_byte())
                    .is_some_and(|between| between.trim().is_empty());
            child.kind() == "block"
                && (holds || next)
                && child.start_position().row > node.start_position().row
        });
        if let Some(block) = block {
            let line_start = text[..block.start_byte()].rfind('\n').map_or(0, |i| i + 1);
            return Some(indent_of(&text[line_start..block.start_byte()]));
        }
        node = node.parent()?;
    }
}

/// The start of the first line after the first that leaves a Python suite indented `suite`:
/// a line that begins a statement indented less. A line that goes on inside the suggestion's
/// brackets, a string or a comment begins none. `root` is the parse of the document with the
/// suggestion at `offset`.
fn suite_end(
    suggestion: &str,
    root: Node<'_>,
    offset: usize,
    tokens: &[Token],
    depth_at: &[usize],
    suite: usize,
) -> Option<usize> {
    let mut start = suggestion.find('\n')? + 1;
    while start < suggestion.len() {
        let line = suggestion[start..].split('\n').next().unwrap_or("");
        let first = start + (line.len() - line.trim_start().len());
        if !line.trim().is_empty() && indent_of(line) < suite {
            let token = tokens.iter().position(|t| t.end > first);
            let in_brackets = token
                .and_then(|i| depth_at.get(i))
                .is_some_and(|depth| *depth > 0);
            let comment = token.is_some_and(|i| tokens[i].kind == TokenKind::Comment);
            if !in_brackets && !comment && !in_string(root, offset + first) {
                return Some(start);
            }
        }
        start += line.len() + 1;
    }
    None
}

/// Whether byte `at` is inside a string that began before it (a string's pieces are tokens of
/// their own, so the token at `at` does not say).
fn in_string(root: Node<'_>, at: usize) -> bool {
    let mut node = root.descendant_for_byte_range(at, at);
    while let Some(n) = node {
        if n.kind().contains("string") && n.start_byte() < at {
            return true;
        }
        node = n.parent();
    }
    false
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum TokenKind {
    Open,
    Close,
    Comment,
    Other,
}

/// A token of the suggestion, its byte range relative to the suggestion's start (a token that
/// began before it starts at 0).
#[derive(Debug)]
struct Token {
    start: usize,
    end: usize,
    kind: TokenKind,
}

/// The tokens (leaves; MISSING ones left out, they are not in the text) that overlap `range`.
fn tokens_in(root: Node<'_>, range: Range<usize>) -> Vec<Token> {
    let mut tokens = Vec::new();
    walk(
        root,
        |node| node.end_byte() <= range.start || node.start_byte() >= range.end,
        |leaf| {
            if leaf.is_missing() {
                return;
            }
            let kind = bracket(leaf).unwrap_or(if leaf.kind().contains("comment") {
                TokenKind::Comment
            } else {
                TokenKind::Other
            });
            tokens.push(Token {
                start: leaf.start_byte().saturating_sub(range.start),
                end: leaf.end_byte() - range.start,
                kind,
            });
        },
    );
    tokens
}

/// Whether a token is an opening or a closing bracket. Grammars make a string's or a
/// comment's text tokens of their own, so only code brackets have these kinds; `${` opens a
/// template substitution, `[[` `]]` are TOML's array-of-tables header.
fn bracket(leaf: Node<'_>) -> Option<TokenKind> {
    if leaf.is_missing() {
        return None;
    }
    match leaf.kind() {
        "{" | "(" | "[" | "${" | "[[" => Some(TokenKind::Open),
        "}" | ")" | "]" | "]]" => Some(TokenKind::Close),
        _ => None,
    }
}

/// Visits the leaves under `root` in text order, passing over each subtree `skip` says.
fn walk<'t>(
    root: Node<'t>,
    mut skip: impl FnMut(Node<'t>) -> bool,
    mut leaf: impl FnMut(Node<'t>),
) {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let descend = if skip(node) {
            false
        } else if node.child_count() == 0 {
            leaf(node);
            false
        } else {
            true
        };
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
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
            syntax: None,
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
            syntax: None,
        };
        assert_eq!(shape("a = 1\nb = 2", cursor).as_deref(), Some("a = 1"));
    }

    fn in_comment(text: &str, offset: usize, language: Language) -> bool {
        in_prose(&SyntaxTree::parse(text, language), text, offset)
    }

    /// The cursor in a test file.
    const CURSOR: &str = "‸";

    /// The suggestion made of `raw` at the `‸` of `file`, with the syntax side (`syntax`) or
    /// the indentation rule only.
    fn shaped(language: Language, file: &str, raw: &str, syntax: bool) -> Option<String> {
        let offset = file.find(CURSOR).expect("the file marks the cursor");
        let text = file.replacen(CURSOR, "", 1);
        let tree = SyntaxTree::parse(&text, language);
        let cursor = Cursor::in_document(&text, offset, true, syntax.then_some(&tree));
        shape(raw, cursor)
    }

    /// The syntax cuts `raw` to `expected`, where the indentation rule alone keeps more.
    fn cut_by_syntax(language: Language, file: &str, raw: &str, expected: &str) {
        assert_eq!(
            shaped(language, file, raw, true).as_deref(),
            Some(expected),
            "raw {raw:?}"
        );
        let indentation = shaped(language, file, raw, false);
        assert!(
            indentation
                .as_deref()
                .is_some_and(|kept| kept.len() > expected.len()),
            "the indentation rule alone gives {indentation:?}"
        );
    }

    /// Neither rule cuts `raw`.
    fn not_cut(language: Language, file: &str, raw: &str) {
        let whole = raw.trim_end();
        assert_eq!(shaped(language, file, raw, true).as_deref(), Some(whole));
        assert_eq!(shaped(language, file, raw, false).as_deref(), Some(whole));
    }

    fn lines(lines: &[&str]) -> String {
        lines.join("\n") + "\n"
    }

    /// ky 3419113, `source/utils/delay.ts` (`before`, the cursor, `after`).
    /// The body of ky's `delay` (source/utils/delay.ts) inside its promise, a line a row.
    const DELAY_BODY: [&str; 16] = [
        "\t\tif (signal) {",
        "\t\t\tsignal.throwIfAborted();",
        "\t\t\tsignal.addEventListener('abort', abortHandler, {once: true});",
        "\t\t}",
        "",
        "\t\tfunction abortHandler() {",
        "\t\t\tclearTimeout(timeoutId);",
        "\t\t\treject(signal!.reason as Error);",
        "\t\t}",
        "",
        "\t\tconst timeoutId = setTimeout(() => {",
        "\t\t\tsignal?.removeEventListener('abort', abortHandler);",
        "\t\t\tresolve();",
        "\t\t}, ms);",
        "\t});",
        "}",
    ];

    fn ky_delay(before: &[&str], after: &[&str]) -> String {
        let mut file = lines(&[
            "import {type InternalOptions} from '../types/options.js';",
            "",
            "export type DelayOptions = {",
            "\tsignal?: InternalOptions['signal'];",
            "};",
            "",
            "export default async function delay(",
            "\tms: number,",
            "\t{signal}: DelayOptions,",
            "): Promise<void> {",
            "\treturn new Promise((resolve, reject) => {",
        ]);
        file.push_str(&before.join("\n"));
        file.push_str(CURSOR);
        file.push('\n');
        file.push_str(&lines(after));
        file
    }

    #[test]
    fn typescript_a_callback_closed_again_is_cut() {
        // The first line of the timer's callback taken out; the model writes another and closes
        // the callback, `}, ms);` at the cursor's indentation.
        let file = ky_delay(&DELAY_BODY[..=10], &DELAY_BODY[11..]);
        cut_by_syntax(
            Language::TypeScript,
            &file,
            "\n\t\t\tresolve();\n\t\t}, ms);\n\t});\n}\n",
            "\n\t\t\tresolve();",
        );
    }

    #[test]
    fn typescript_a_block_the_user_just_opened_may_be_closed() {
        // The user typed `if (signal) {`: the `}` after the cursor is the function's, so the
        // suggestion's `}` is the one the text lacks.
        let file = ky_delay(&DELAY_BODY[..1], &DELAY_BODY[4..]);
        let raw = "\n\t\t\tsignal.throwIfAborted();\n\t\t}\n\n\t\tfunction abortHandler() {";
        assert_eq!(
            shaped(Language::TypeScript, &file, raw, true).as_deref(),
            Some("\n\t\t\tsignal.throwIfAborted();\n\t\t}")
        );
    }

    /// ky 3419113, `source/core/constants.ts` 10–27: the `catch` line taken out.
    fn ky_catch() -> String {
        lines(&[
            "export const supportsRequestStreams = (() => {",
            "\tlet duplexAccessed = false;",
            "\tlet hasContentType = false;",
            "\tif (supportsReadableStream && supportsRequest) {",
            "\t\ttry {",
            "\t\t\thasContentType = new globalThis.Request('https://empty.invalid', {",
            "\t\t\t\tbody: new globalThis.ReadableStream(),",
            "\t\t\t\tmethod: 'POST',",
            "\t\t\t}).headers.has('Content-Type');",
            "\t\t‸",
            "\t\t\t// QQBrowser on iOS throws \"unsupported BodyInit type\" error (see issue #581)",
            "\t\t\tif (error instanceof Error && error.message === 'unsupported BodyInit type') {",
            "\t\t\t\treturn false;",
            "\t\t\t}",
            "",
            "\t\t\tthrow error;",
            "\t\t}",
            "\t}",
            "",
            "\treturn duplexAccessed && !hasContentType;",
            "})();",
        ])
    }

    #[test]
    fn a_first_line_that_closes_a_block_and_opens_another_is_kept() {
        // The bench's hole at ky's `catch` got nothing on arrival: its `}` closes the `try`
        // the text after the cursor closes too. It opens the `catch` block, which that text's
        // `}` then closes.
        not_cut(Language::TypeScript, &ky_catch(), "} catch (error) {");
        // Its body written on, and the `catch` closed again below: cut before that `}`.
        assert_eq!(
            shaped(
                Language::TypeScript,
                &ky_catch(),
                "} catch (error) {\n\t\t\tthrow error;\n\t\t}\n\t}",
                true
            )
            .as_deref(),
            Some("} catch (error) {\n\t\t\tthrow error;")
        );
        // A first line that closes the `try` and opens nothing still gets nothing.
        assert_eq!(
            shaped(Language::TypeScript, &ky_catch(), "}\n\t}", true),
            None
        );
        // walkdir 6fd031c, `src/dent.rs` 184–196: the line that closes the parameters and
        // opens the body.
        let file = lines(&[
            "impl DirEntry {",
            "    #[cfg(windows)]",
            "    pub(crate) fn from_entry(",
            "        depth: usize,",
            "        ent: &fs::DirEntry,",
            "    ‸",
            "        let path = ent.path();",
            "        let ty = ent",
            "            .file_type()",
            "            .map_err(|err| Error::from_path(depth, path.clone(), err))?;",
            "        Ok(DirEntry { path, ty, follow_link: false, depth })",
            "    }",
            "}",
        ]);
        not_cut(Language::Rust, &file, ") -> Result<DirEntry> {");
        assert_eq!(
            shaped(
                Language::Rust,
                &file,
                ") -> Result<DirEntry> {\n    }\n}",
                true
            )
            .as_deref(),
            Some(") -> Result<DirEntry> {")
        );
    }

    #[test]
    fn typescript_an_if_closed_again_is_cut() {
        // ky 3419113, `source/utils/timeout.ts`: the body of `if (abortController) {` taken
        // out; the model's `}` is at the cursor's indentation.
        let file = lines(&[
            "export default async function timeout(",
            "\trequest: Request,",
            "\tinit: RequestInit,",
            "\tabortController: AbortController | undefined,",
            "\toptions: TimeoutOptions,",
            "): Promise<Response> {",
            "\treturn new Promise((resolve, reject) => {",
            "\t\tconst timeoutId = setTimeout(() => {",
            "\t\t\tif (abortController) {‸",
            "\t\t\t}",
            "",
            "\t\t\treject(new TimeoutError(request));",
            "\t\t}, options.timeout);",
            "",
            "\t\tvoid options",
            "\t\t\t.fetch(request, init)",
            "\t\t\t.then(resolve)",
            "\t\t\t.catch(reject)",
            "\t\t\t.then(() => {",
            "\t\t\t\tclearTimeout(timeoutId);",
            "\t\t\t});",
            "\t});",
            "}",
        ]);
        cut_by_syntax(
            Language::TypeScript,
            &file,
            "\n\t\t\t\tabortController.abort();\n\t\t\t} else {\n\t\t\t\treject(new TimeoutError(request));\n\t\t\t}\n\t\t}, options.timeout);\n",
            "\n\t\t\t\tabortController.abort();",
        );
    }

    /// ky 3419113, `test/base-url.ts`, its first test with the cursor at `‸`.
    fn ky_base_url(test: &[&str]) -> String {
        let mut file = lines(&[
            "import test from 'ava';",
            "import ky from '../source/index.js';",
            "import {createHttpTestServer} from './helpers/create-http-test-server.js';",
            "",
        ]);
        file.push_str(&lines(test));
        file.push_str(&lines(&[
            "",
            "test('baseUrl is exposed on normalized hook options', async t => {",
            "\tconst server = await createHttpTestServer();",
            "\tlet receivedBaseUrl: URL | string | undefined;",
            "});",
        ]));
        file
    }

    #[test]
    fn typescript_a_test_closed_with_its_call_is_cut() {
        // The test's first line taken out: the model writes a shorter test, closes it with
        // `});` at the cursor's indentation and starts another.
        let file = ky_base_url(&[
            "test('baseUrl option', async t => {‸",
            "\tconst serverHost = new URL(server.url).host;",
            "\tserver.get('/', (_request, response) => {",
            "\t\tresponse.end('/');",
            "\t});",
            "\tt.is(await ky('', {baseUrl: `${server.url}/`}).text(), '/');",
            "",
            "\tawait server.close();",
            "});",
        ]);
        cut_by_syntax(
            Language::TypeScript,
            &file,
            "\n\tconst server = await createHttpTestServer();\n\tt.is(await ky(server.url).text(), '/');\n\tawait server.close();\n});\n\ntest('baseUrl with a path', async t => {\n",
            "\n\tconst server = await createHttpTestServer();\n\tt.is(await ky(server.url).text(), '/');\n\tawait server.close();",
        );
    }

    #[test]
    fn typescript_brackets_in_strings_comments_and_own_blocks_stay() {
        let file = ky_base_url(&[
            "test('baseUrl option', async t => {",
            "\tconst server = await createHttpTestServer();",
            "\tserver.get('/', (_request, response) => {",
            "\t\tresponse.end('/');",
            "\t});",
            "\tt.is(await ky('', {baseUrl: `${server.url}/`}).text(), '/');‸",
            "",
            "\tawait server.close();",
            "});",
        ]);
        // Brackets in a comment, a string and a template literal's text.
        not_cut(
            Language::TypeScript,
            &file,
            "\n\t// A path with brackets: ) ] }\n\tt.is(await ky(`${server.url}/}`, {baseUrl: ''}).text(), '/})');\n",
        );
        // A block the suggestion opens and closes itself.
        not_cut(
            Language::TypeScript,
            &file,
            "\n\tserver.get('/baz', (_request, response) => {\n\t\tresponse.end('/baz');\n\t});\n",
        );
    }

    /// walkdir 6fd031c, `src/lib.rs` from `impl WalkDir {`, with `body` in it.
    fn walkdir_impl(body: &str) -> String {
        format!(
            "impl WalkDir {{\n{body}\n    /// Set the maximum depth of entries yield by the iterator.\n    pub fn max_depth(mut self, depth: usize) -> Self {{\n        self.opts.max_depth = depth;\n        if self.opts.max_depth < self.opts.min_depth {{\n            self.opts.max_depth = self.opts.min_depth;\n        }}\n        self\n    }}\n}}\n"
        )
    }

    #[test]
    fn rust_a_method_closed_again_is_cut() {
        // The cursor at the end of the method's first line; the model writes another body,
        // the method's `}` at the cursor's indentation, and the next method.
        let file = walkdir_impl(
            "    /// Set the minimum depth of entries yielded by the iterator.
    pub fn min_depth(mut self, depth: usize) -> Self {‸
        self.opts.min_depth = depth;
        if self.opts.min_depth > self.opts.max_depth {
            self.opts.min_depth = self.opts.max_depth;
        }
        self
    }
",
        );
        cut_by_syntax(
            Language::Rust,
            &file,
            "\n        self.opts.min_depth = cmp::min(depth, self.opts.max_depth);\n        self\n    }\n\n    /// Set the maximum depth of entries yielded by the iterator.\n    pub fn max_depth(mut self, depth: usize) -> Self {\n",
            "\n        self.opts.min_depth = cmp::min(depth, self.opts.max_depth);\n        self",
        );
    }

    #[test]
    fn rust_an_if_closed_again_is_cut() {
        // walkdir 6fd031c, `src/lib.rs`, `IntoIter::check_loop`: the body of `if is_same {`
        // taken out.
        let file = "impl IntoIter {
    fn check_loop<P: AsRef<Path>>(&self, child: P) -> Result<()> {
        let hchild = Handle::from_path(&child)
            .map_err(|err| Error::from_io(self.depth, err))?;
        for ancestor in self.stack_path.iter().rev() {
            let is_same = ancestor
                .is_same(&hchild)
                .map_err(|err| Error::from_io(self.depth, err))?;
            if is_same {‸
            }
        }
        Ok(())
    }
}
";
        cut_by_syntax(
            Language::Rust,
            file,
            "\n                return Err(Error::from_loop(self.depth, &ancestor.path, child.as_ref()));\n            }\n        }\n",
            "\n                return Err(Error::from_loop(self.depth, &ancestor.path, child.as_ref()));",
        );
    }

    #[test]
    fn rust_brackets_in_strings_chars_and_comments_stay() {
        // walkdir 6fd031c, `src/error.rs`: the end of `impl fmt::Display for Error`'s match.
        let file = "impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner {
            ErrorInner::Io { path: None, ref err } => err.fmt(f),‸
        }
    }
}
";
        not_cut(
            Language::Rust,
            file,
            "\n            // A loop: `}` and `)` here close nothing.\n            ErrorInner::Loop { ref child, .. } => write!(f, \"loop }} at {}) ]\", child.display()),\n            ErrorInner::Io { .. } if '}' == ')' => Ok(()),\n            _ => f.write_str(r#\"}\"#),\n",
        );
    }

    #[test]
    fn python_a_list_closed_again_is_cut() {
        // requests 1f6589e, `src/requests/utils.py`, `select_proxy`.
        let file = r#"def select_proxy(url: str, proxies: dict[str, str] | None) -> str | None:
    proxies = proxies or {}
    urlparts = urlparse(url)
    if urlparts.hostname is None:
        return proxies.get(urlparts.scheme, proxies.get("all"))

    proxy_keys = [‸
        urlparts.scheme + "://" + urlparts.hostname,
        urlparts.scheme,
        "all://" + urlparts.hostname,
        "all",
    ]
    proxy = None
    for proxy_key in proxy_keys:
        if proxy_key in proxies:
            proxy = proxies[proxy_key]
            break

    return proxy
"#;
        cut_by_syntax(
            Language::Python,
            file,
            "\n        \"all://\" + urlparts.hostname,\n        \"all\",\n    ]\n    proxy = proxies.get(\"all\")\n",
            "\n        \"all://\" + urlparts.hostname,\n        \"all\",",
        );
    }

    /// requests 1f6589e, `src/requests/hooks.py`, `dispatch_hook`, a line of its body replaced
    /// by `line`.
    fn requests_dispatch_hook(line: &str) -> String {
        format!(
            r#"def dispatch_hook(
    key: str,
    hooks: _t.HooksInputType | None,
    hook_data: Response,
    **kwargs: Any,
) -> Response:
    """Dispatches a hook dictionary on a given piece of data."""
{line}
    hook_list: Iterable[_t.HookType] | _t.HookType | None = hooks_dict.get(key)
    if hook_list:
        if isinstance(hook_list, Callable):
            hook_list = [hook_list]
        for hook in hook_list:
            _hook_data = hook(hook_data, **kwargs)
            if _hook_data is not None:
                hook_data = _hook_data
    return hook_data
"#
        )
    }

    #[test]
    fn python_a_line_leaving_the_suite_is_cut() {
        // The cursor at the start of an empty line in the body: the indentation rule has no
        // indentation to go by; the suite, which goes on after the cursor, does.
        let file = requests_dispatch_hook(CURSOR);
        cut_by_syntax(
            Language::Python,
            &file,
            "    hooks_dict = hooks or {}\nif not hooks_dict:\n    return hook_data\n",
            "    hooks_dict = hooks or {}",
        );
        // Lines of a string, a comment and brackets leave nothing.
        not_cut(
            Language::Python,
            &file,
            "    doc = \"\"\"\nNot a statement: ) ]\n\"\"\"\n# a comment\n    hooks_dict = dict(\nhooks or {},\n)\n",
        );
    }

    #[test]
    fn languages_without_a_grammar_keep_the_indentation_rule() {
        // The cursor at the start of an empty line: the indentation rule keeps the `}`.
        let file = "fn f() {\n    a();\n‸\n}\nfn g() {}\n";
        let raw = "    b();\n}\nfn h() {}";
        assert_eq!(
            shaped(Language::Text, file, raw, true).as_deref(),
            Some(raw)
        );
        assert_eq!(
            shaped(Language::Rust, file, raw, true).as_deref(),
            Some("    b();")
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Any text, cursor and answer in every language: shaping never panics and keeps a
        /// prefix of what the indentation rule keeps.
        #[test]
        fn shaping_any_text_never_panics(
            language in 0usize..9,
            picks in proptest::collection::vec(0usize..1000, 0..40),
            answer in proptest::collection::vec(0usize..1000, 0..12),
            at in 0usize..400,
        ) {
            const PIECES: &[&str] = &[
                "fn a() {\n", "}\n", "    ", "(", ")", "[", "]", "{", "}", "\"", "'", "/*", "*/",
                "//", "#", "\n", "def f():\n", "    x = 1\n", "`${", "é", "\r\n", "\t", "if x:\n",
                "\"\"\"", "[[", "]]", "\u{2028}",
            ];
            let language = Language::PARSED.get(language).copied().unwrap_or(Language::Text);
            let text: String = picks.iter().map(|&p| PIECES[p % PIECES.len()]).collect();
            let raw: String = answer.iter().map(|&p| PIECES[p % PIECES.len()]).collect();
            let offset = crate::complete::context::floor_boundary(&text, at.min(text.len()));
            let file = format!("{}{CURSOR}{}", &text[..offset], &text[offset..]);
            let with = shaped(language, &file, &raw, true);
            let without = shaped(language, &file, &raw, false);
            let prefix = match (&with, &without) {
                (Some(with), Some(without)) => without.starts_with(with.as_str()),
                (None, _) => true,
                (Some(_), None) => false,
            };
            proptest::prop_assert!(prefix, "{:?} is not a prefix of {:?}", with, without);
        }
    }

    #[test]
    fn comments_and_strings_are_found() {
        let py = "x = 1  # note\ns = \"text here\"\ny = \n";
        assert!(in_comment(py, 13, Language::Python));
        assert!(in_comment(py, 20, Language::Python));
        assert!(!in_comment(py, 34, Language::Python));
        let rs = "/* a */ fn f() { let s = \"ab\"; }\n";
        assert!(in_comment(rs, 4, Language::Rust));
        assert!(!in_comment(rs, 7, Language::Rust));
        assert!(in_comment(rs, 27, Language::Rust));
        assert!(!in_comment(rs, 16, Language::Rust));
        assert!(!in_comment("anything", 3, Language::Text));
        // The line after a line comment is code, at its very start too (ripgrep's messages.rs:
        // `pub(crate) fn` after its doc comment got nothing on the cursor's arrival).
        let rs = "/// Set it.\n///\n\nfn f() {}\n// note\n";
        let after_doc = rs.find("\nfn").unwrap();
        assert!(!in_comment(rs, after_doc, Language::Rust));
        assert!(!in_comment(rs, after_doc + 1, Language::Rust));
        assert!(in_comment(rs, 5, Language::Rust));
        assert!(in_comment(rs, rs.len() - 1, Language::Rust));
        assert!(!in_comment(rs, rs.len(), Language::Rust));
        let py = "# note\n\nx = 1\n";
        assert!(in_comment(py, 6, Language::Python));
        assert!(!in_comment(py, 7, Language::Python));
        assert!(!in_comment(py, 8, Language::Python));
    }

    /// Whether the cursor `‸` of `file` is in prose.
    fn prose_at(language: Language, file: &str) -> bool {
        let offset = file.find(CURSOR).expect("a cursor");
        let text = file.replace(CURSOR, "");
        in_comment(&text, offset, language)
    }

    #[test]
    fn code_in_strings_and_doc_comments_is_not_prose() {
        // ripgrep's crates/core/flags/complete/bash.rs: a bash script in a raw string.
        let bash = "const TEMPLATE: &'static str = r#\"\n_rg() {\n  local i cur prev opts cmd\n  COM‸\n}\n\"#;\n";
        assert!(!prose_at(Language::Rust, bash));
        // ripgrep's crates/cli/src/pattern.rs: a message continued over lines.
        let message = "fn f() -> String {\n    format!(\n        \"pattern contains invalid UTF-8 \\\n         (dis‸\\\n        \")\n}\n";
        assert!(!prose_at(Language::Rust, message));
        // walkdir's src/lib.rs: the example of a `/*! … */` crate doc.
        let crate_doc = "/*!\nThe following code:\n\n```no_run\nuse‸\n```\n*/\nfn f() {}\n";
        assert!(!prose_at(Language::Rust, crate_doc));
        let crate_doc_prose = "/*!\n```no_run\nuse walkdir::WalkDir;\n```\nThe ‸\n*/\nfn f() {}\n";
        assert!(prose_at(Language::Rust, crate_doc_prose));
        // A doc test in `///` lines, each line a comment of its own.
        let doc_test = "/// Adds.\n///\n/// ```\n/// let x = ad‸\n/// ```\nfn add() {}\n";
        assert!(!prose_at(Language::Rust, doc_test));
        let doc_prose = "/// ```\n/// add();\n/// ```\n/// Adds ‸\nfn add() {}\n";
        assert!(prose_at(Language::Rust, doc_prose));
        // Python: a query over lines is code, a docstring is prose but its doctest is not.
        let query = "def f(db):\n    rows = db.execute(\"\"\"\n        SELECT id\n        FR‸\n    \"\"\")\n";
        assert!(!prose_at(Language::Python, query));
        let docstring = "def f():\n    \"\"\"Return the\n    sum of ‸\n    \"\"\"\n";
        assert!(prose_at(Language::Python, docstring));
        let doctest = "def f():\n    \"\"\"Return one.\n\n    >>> f(‸\n    \"\"\"\n";
        assert!(!prose_at(Language::Python, doctest));
        // A string begun on the cursor's line is a message or a name being typed.
        assert!(prose_at(Language::Python, "print(\"Searching for ‸\")\n"));
        assert!(prose_at(
            Language::Rust,
            "fn f() { println!(\"Searching ‸\"); }\n"
        ));
        // The code in a template literal or an f-string.
        assert!(!prose_at(Language::TypeScript, "const s = `a ${na‸} b`;\n"));
        assert!(prose_at(Language::TypeScript, "const s = `a ‸ b`;\n"));
        assert!(!prose_at(Language::Python, "s = f\"a {na‸} b\"\n"));
        // A comment stays prose, and a fence in an earlier comment does not reach it.
        assert!(prose_at(Language::Python, "# ```\nx = 1\n# a ‸\n"));
    }
}
