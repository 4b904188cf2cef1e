//! reStructuredText read as the Markdown the rest of research understands, line for line.
//!
//! Sphinx projects (Requests, Flask, pytest, tox, Borg…) write their documentation in
//! reStructuredText, and research read it as Markdown: a section title under `~~~~` or between
//! two `====` lines headed nothing, so every passage of a page had the page's title; the code of
//! `Begin by importing the Requests module::` was an indented paragraph, quoted as a sentence
//! (">>> import requests") and never as the example of the line leading to it; and quotes
//! printed `:class:`Response <requests.Response>``, ``` ``r`` ``` and `` `text <url>`_ `` as
//! written. [`as_markdown`] rewrites a page into the Markdown those readers already handle:
//! titles into `#` headings (levels in the order the page first uses each adornment, as
//! Docutils assigns them), literal blocks (`::`, `.. code-block::`, doctest blocks) into fenced
//! code, admonitions and object descriptions (`.. note::`, `.. option:: --verbose`) into
//! paragraphs, `.. literalinclude::` into an include marker ([`crate::research::includes`]),
//! roles, hyperlink references and footnote references into what the built page shows, and the
//! directives a reader never sees as text (`.. toctree::`, `.. _target:`, comments, images,
//! autodoc) into blank lines.
//!
//! **Line for line**: the result has the page's lines, in the same places (a fence opens and
//! closes on a blank line the page already has; only a block that runs to the end of the page
//! gets its closing fence after its last line), so a passage's line range and a citation's
//! `file:12-18` point at the page as written, and every check that compares a quote with its
//! passage's lines reads the same text the model was shown.
//!
//! Pure: no I/O. Hostile input (unbalanced marks, adornments alone, a directive with no name)
//! is read as text; nothing panics and no line is lost.

use std::sync::OnceLock;

use regex::{Captures, Regex};

use crate::edit::text::{indent_cols, indent_of, is_blank as blank};
use crate::research::citations::regex;

/// Whether the page at `path` is reStructuredText: by its extension, or a `.txt` page whose
/// text shows it (Django's and Docutils' documentation is reStructuredText in `.txt` files): two
/// of a directive (`.. note::`), a target (`.. _name:`), a role (`:ref:`…``), an inline literal
/// (``` ``x`` ```) and a literal block (a paragraph ending `::`, a blank line, an indented line),
/// which plain text does not write. Over 278 `.txt` files of other formats (AsciiDoc, Vim help,
/// requirements, licences, test data) none shows two; over the 216 reStructuredText pages of
/// Docutils' sandbox 82 do (57 without the literal block), and the others are short pages of
/// titles and paragraphs, which read the same as Markdown.
pub fn is_rst(path: &str, text: &str) -> bool {
    match crate::research::passages::extension(path).as_deref() {
        Some("rst" | "rest") => true,
        Some("txt") => looks_like_rst(text),
        _ => false,
    }
}

fn looks_like_rst(text: &str) -> bool {
    static SIGNS: [OnceLock<Regex>; 5] = [const { OnceLock::new() }; 5];
    const PATTERNS: [&str; 5] = [
        r"(?m)^\s*\.\. [A-Za-z][\w:.+-]*::",
        r"(?m)^\.\. _[^:\n]+:\s*$",
        r":[A-Za-z][\w:.+-]*:`[^`\n]+`",
        r"``[^`\n]+``",
        r"\S::[ \t]*\n[ \t]*\n[ \t]+\S",
    ];
    SIGNS
        .iter()
        .zip(PATTERNS)
        .filter(|(cell, pattern)| regex(cell, pattern).is_match(text))
        .count()
        >= 2
}

/// `text` (a reStructuredText page) as Markdown with the same lines (module docs).
pub fn as_markdown(text: &str) -> String {
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut styles = Vec::new();
    let out = convert(&lines, &mut styles, true, 0);
    crate::edit::text::joined_like(&out, text)
}

/// Directives inside directives read as such, at most.
const MOST_NESTED: usize = 16;

/// Directives whose content is code, shown fenced with the directive's language.
const CODE_DIRECTIVES: &[&str] = &[
    "code-block",
    "code",
    "sourcecode",
    "code-tab",
    "doctest",
    "testcode",
    "testoutput",
    "parsed-literal",
    "ipython",
];

/// Directives a reader of the built page never sees as text of their own: their lines, content
/// included, become blank.
const HIDDEN_DIRECTIVES: &[&str] = &[
    "toctree",
    "image",
    "figure",
    "index",
    "include",
    "raw",
    "math",
    "contents",
    "meta",
    "module",
    "currentmodule",
    "highlight",
    "default-role",
    "sectnum",
    "header",
    "footer",
    "target-notes",
    "title",
    "role",
    "program",
    "tabularcolumns",
    "graphviz",
    "digraph",
    "plot",
    "mermaid",
    "csv-table",
    "list-table",
    "testsetup",
    "testcleanup",
];

/// Sphinx's object descriptions: the signature is what the content describes, printed before it
/// as a definition ("`--verbose`: Print more output.").
const OBJECT_DIRECTIVES: &[&str] = &[
    "function",
    "method",
    "class",
    "attribute",
    "property",
    "data",
    "exception",
    "decorator",
    "decoratormethod",
    "classmethod",
    "staticmethod",
    "option",
    "cmdoption",
    "envvar",
    "confval",
    "describe",
];

/// Roles the built page shows as code.
const CODE_ROLES: &[&str] = &[
    "func", "meth", "class", "attr", "mod", "obj", "data", "exc", "const", "type", "option",
    "envvar", "file", "command", "program", "samp", "kbd", "code", "literal", "confval", "setting",
    "makevar", "member", "var", "any",
];

/// The columns `line` is indented by (a tab to the next multiple of eight, as Docutils reads it).
fn indent(line: &str) -> usize {
    indent_cols(indent_of(line), 8)
}

/// Where the text of `line` starts: after a list item's marker (`1.  First, …` → 4), the
/// indentation a literal block inside the item is measured from.
fn text_indent(line: &str) -> usize {
    static MARKER: OnceLock<Regex> = OnceLock::new();
    let marker = regex(
        &MARKER,
        r"^[ \t]*(?:[-*+•]|#\.|\d{1,3}[.)]|\(\d{1,3}\)|[A-Za-z][.)])[ \t]+",
    );
    match marker.find(line) {
        Some(m) => indent(line) + line[..m.end()].trim_start().chars().count(),
        None => indent(line),
    }
}

/// The characters a title's adornment is written with in practice (Docutils allows any
/// punctuation, but a line of `...` or `>>>` is text far more often than a title's rule).
const ADORNMENTS: &str = "=-~^\"':_*+#";

/// A title's adornment: one character of [`ADORNMENTS`] repeated, at least three times
/// (Docutils takes shorter ones under a short title; a line of two is more often text).
fn adornment(line: &str) -> Option<char> {
    let t = line.trim_end();
    let c = t.chars().next()?;
    (ADORNMENTS.contains(c) && t.chars().count() >= 3 && t.chars().all(|x| x == c)).then_some(c)
}

/// The heading level of an adornment style, assigned in the order the page first uses each.
fn level(styles: &mut Vec<(char, bool)>, style: (char, bool)) -> usize {
    match styles.iter().position(|s| *s == style) {
        Some(i) => i + 1,
        None => {
            styles.push(style);
            styles.len()
        }
    }
}

fn heading(level: usize, title: &str) -> String {
    format!("{} {}", "#".repeat(level.min(6)), inline(title.trim()))
}

/// The end (exclusive) of the block indented deeper than `base` that starts after line `from`,
/// and its last non-blank line (`None` when it has none).
fn indented_after(lines: &[String], from: usize, base: usize) -> (usize, Option<usize>) {
    let mut j = from + 1;
    let mut last = None;
    while j < lines.len() && (blank(&lines[j]) || indent(&lines[j]) > base) {
        if !blank(&lines[j]) {
            last = Some(j);
        }
        j += 1;
    }
    (j, last)
}

/// Lines `from..=to` less their common indentation.
fn dedented(lines: &[String], from: usize, to: usize) -> Vec<String> {
    let common = lines[from..=to]
        .iter()
        .filter(|l| !blank(l))
        .map(|l| indent(l))
        .min()
        .unwrap_or(0);
    lines[from..=to]
        .iter()
        .map(|l| {
            if blank(l) {
                String::new()
            } else {
                let expanded = l.replace('\t', "        ");
                let cut = expanded
                    .char_indices()
                    .nth(common)
                    .map_or(expanded.len(), |(i, _)| i);
                expanded[cut..].trim_end().to_owned()
            }
        })
        .collect()
}

/// Where a code block is written: its lines `first..=last`, the line its opening fence takes
/// (`first - 1`, blank or the directive's own), the first line before the block that holds
/// nothing to show (the directive's line, else the opener), and whether `lines` end where the
/// page ends.
struct Block<'a> {
    opener: usize,
    free: usize,
    first: usize,
    last: usize,
    lang: &'a str,
    page_end: bool,
}

/// Writes the code block `b` (its lines less their indentation) fenced into `out`: the opening
/// fence on line `b.opener`, the closing one on the blank line after `b.last`, or after
/// `b.last` at the end of the page. A block that the next line follows with no blank line
/// between (Docutils warns, and renders it: mypy's `reveal_locals()` example runs into a
/// `.. note::`) is written a line up, when a line above it holds nothing to show, so that its
/// last line takes the closing fence; its comments (`#     b: builtins.str`) were read as
/// headings. Otherwise its lines are left as they are, and it returns `false`.
fn fence(lines: &[String], out: &mut [String], b: Block<'_>) -> bool {
    let Block {
        opener,
        free,
        first,
        last,
        lang,
        page_end,
    } = b;
    let closer = last + 1;
    let closes_here = if closer >= lines.len() {
        page_end
    } else {
        blank(&lines[closer])
    };
    let code = dedented(lines, first, last);
    if closes_here {
        out[opener] = format!("```{lang}");
        for (k, line) in (first..=last).zip(code) {
            out[k] = line;
        }
        if closer < lines.len() {
            out[closer] = "```".to_owned();
        } else {
            out[last].push_str("\n```");
        }
        true
    } else if opener > free {
        out[opener - 1] = format!("```{lang}");
        for (k, line) in (first - 1..last).zip(code) {
            out[k] = line;
        }
        out[last] = "```".to_owned();
        true
    } else {
        out[first..=last].clone_from_slice(&lines[first..=last]);
        false
    }
}

/// `page_end`: whether `lines` end where the page does (a directive's content does not).
/// `depth`: how many directives' contents `lines` are inside.
fn convert(
    lines: &[String],
    styles: &mut Vec<(char, bool)>,
    page_end: bool,
    depth: usize,
) -> Vec<String> {
    let n = lines.len();
    let mut out = vec![String::new(); n];
    let mut i = 0;
    while i < n {
        let line = &lines[i];
        let t = line.trim();
        let after_blank = i == 0 || blank(&lines[i - 1]);
        if t.is_empty() {
            i += 1;
            continue;
        }
        // A title between an overline and an underline of the same character.
        if after_blank
            && let Some(c) = adornment(line)
            && i + 2 < n
            && !blank(&lines[i + 1])
            && adornment(&lines[i + 1]).is_none()
            && adornment(&lines[i + 2]) == Some(c)
        {
            let l = level(styles, (c, true));
            out[i + 1] = heading(l, &lines[i + 1]);
            i += 3;
            continue;
        }
        // A title over its underline.
        if after_blank
            && indent(line) == 0
            && adornment(line).is_none()
            && i + 1 < n
            && let Some(c) = adornment(&lines[i + 1])
            && !t.starts_with("..")
        {
            let l = level(styles, (c, false));
            out[i] = heading(l, t);
            i += 2;
            continue;
        }
        // A transition, or an adornment with nothing to adorn.
        if adornment(line).is_some() {
            i += 1;
            continue;
        }
        if t == ".." || t.starts_with(".. ") {
            i = explicit(lines, &mut out, i, styles, page_end, depth);
            continue;
        }
        // A paragraph: its lines up to a blank one.
        let mut end = i;
        while end + 1 < n && !blank(&lines[end + 1]) {
            end += 1;
        }
        let base = text_indent(line);
        if after_blank && t.starts_with(">>>") {
            // A doctest block: a paragraph of an interactive session, with the sessions that
            // follow it after one blank line (Requests' `json=` example is two: the fence
            // that closed the first took the line the second would open on).
            let mut last = end;
            while last + 2 < n
                && blank(&lines[last + 1])
                && lines[last + 2].trim_start().starts_with(">>>")
                && indent(&lines[last + 2]) == indent(line)
            {
                last += 2;
                while last + 1 < n && !blank(&lines[last + 1]) {
                    last += 1;
                }
            }
            if i > 0 && out[i - 1].is_empty() {
                let b = Block {
                    opener: i - 1,
                    free: i - 1,
                    first: i,
                    last,
                    lang: "pycon",
                    page_end,
                };
                if fence(lines, &mut out, b) {
                    i = last + 1;
                    continue;
                }
            }
        }
        let marked: Vec<String> = lines[i..=end].iter().map(|l| paragraph_line(l)).collect();
        // Inline markup over the whole paragraph: a role or a link may go on to the next line.
        let read = inline(&marked.join("\n"));
        let read: Vec<&str> = read.split('\n').collect();
        for (k, line) in (i..=end).zip(&read) {
            out[k] = (*line).to_owned();
        }
        let last = lines[end].trim_end();
        if last.ends_with("::") {
            out[end] = literal_marker(&out[end]);
            // The literal block: the lines indented deeper than the paragraph after a blank one.
            let (next, body_last) = indented_after(lines, end, base);
            let body_first = (end + 1..next).find(|k| !blank(&lines[*k]));
            if let (Some(first), Some(body_last)) = (body_first, body_last)
                && first > end + 1
            {
                let lang = if lines[first].trim_start().starts_with(">>>") {
                    "pycon"
                } else {
                    ""
                };
                let b = Block {
                    opener: first - 1,
                    free: end + 1,
                    first,
                    last: body_last,
                    lang,
                    page_end,
                };
                // Fenced, or left as written when no line is free for its fences.
                fence(lines, &mut out, b);
                i = body_last + 1;
                continue;
            }
        }
        i = end + 1;
    }
    out
}

/// A paragraph's line with the list markers Markdown reads and grid-table borders as a table's
/// rule.
fn paragraph_line(line: &str) -> String {
    let t = line.trim();
    let lead = &line[..line.len() - line.trim_start().len()];
    if t.starts_with('+') && t.ends_with('+') && t.chars().all(|c| matches!(c, '+' | '-' | '=')) {
        return format!("{lead}{}", t.replace('+', "|").replace('=', "-"));
    }
    if let Some(rest) = t.strip_prefix("#. ") {
        return format!("{lead}1. {rest}");
    }
    // A field (`:type: boolean`) as the page shows it, its name before a colon.
    if let Some((name, value)) = t.strip_prefix(':').and_then(|r| r.split_once(": "))
        && !name.is_empty()
        && !name.contains(['`', ':'])
    {
        return format!("{lead}{name}: {value}");
    }
    format!("{lead}{t}")
}

/// `replacement` for `matched`, with as many line breaks after it as `matched` had more: a
/// paragraph's lines stay where they are.
fn keep_lines(matched: &str, replacement: String) -> String {
    let missing = matched
        .matches('\n')
        .count()
        .saturating_sub(replacement.matches('\n').count());
    replacement + &"\n".repeat(missing)
}

/// A paragraph's last line ending in `::` as the page shows it: "module::" → "module:",
/// "example ::" → "example", "::" alone → nothing.
fn literal_marker(line: &str) -> String {
    let t = line.trim_end();
    if t.trim() == "::" {
        String::new()
    } else if let Some(rest) = t.strip_suffix(" ::") {
        rest.trim_end().to_owned()
    } else {
        t.strip_suffix(':').unwrap_or(t).to_owned()
    }
}

/// An explicit markup block at line `i` (a directive, a comment, a target, a footnote): writes
/// what the page shows of it into `out` and returns the line after it.
fn explicit(
    lines: &[String],
    out: &mut [String],
    i: usize,
    styles: &mut Vec<(char, bool)>,
    page_end: bool,
    depth: usize,
) -> usize {
    static DIRECTIVE: OnceLock<Regex> = OnceLock::new();
    let directive = regex(
        &DIRECTIVE,
        r"^\.\.\s+(?:\|[^|]+\|\s+)?([A-Za-z][\w:.+-]*)::(?:\s+(.*))?$",
    );
    let base = indent(&lines[i]);
    let (next, last) = indented_after(lines, i, base);
    let end = last.unwrap_or(i);
    let t = lines[i].trim();
    let Some(caps) = directive.captures(t) else {
        // A comment, a target (`.. _name:`), a footnote or citation: not shown as text.
        return end + 1;
    };
    if t.starts_with(".. |") {
        // A substitution's definition.
        return end + 1;
    }
    let full = caps[1].to_ascii_lowercase();
    let name = full.rsplit(':').next().unwrap_or(&full).to_owned();
    let argument = caps.get(2).map_or("", |m| m.as_str()).trim().to_owned();
    // Options: the field lines right under the directive.
    let mut body_start = i + 1;
    let mut options: Vec<(String, String)> = Vec::new();
    while body_start < next && !blank(&lines[body_start]) {
        let o = lines[body_start].trim();
        match o.strip_prefix(':').and_then(|r| r.split_once(':')) {
            Some((key, value)) if !key.contains(' ') => {
                options.push((key.to_owned(), value.trim().to_owned()));
                body_start += 1;
            }
            _ => break,
        }
    }
    let body_first = (body_start..next).find(|k| !blank(&lines[*k]));
    if name == "literalinclude" {
        out[i] = include_marker(&argument, &options);
        return end + 1;
    }
    if CODE_DIRECTIVES.contains(&name.as_str()) {
        if let Some(first) = body_first {
            let b = Block {
                opener: first - 1,
                free: i,
                first,
                last: end,
                lang: argument.split_whitespace().next().unwrap_or(""),
                page_end,
            };
            fence(lines, out, b);
        }
        return end + 1;
    }
    if HIDDEN_DIRECTIVES.contains(&full.as_str())
        || HIDDEN_DIRECTIVES.contains(&name.as_str())
        || name.starts_with("auto")
    {
        return end + 1;
    }
    let object = OBJECT_DIRECTIVES.contains(&name.as_str());
    // The directive's line as the page shows it: a version's note, or the argument (an
    // admonition's first words, a title), read with the content lines that go on from it.
    let opening = match name.as_str() {
        "versionadded" | "versionchanged" | "deprecated" | "versionremoved" => {
            let (version, said) = argument
                .split_once(char::is_whitespace)
                .map_or((argument.as_str(), ""), |(v, s)| (v, s.trim()));
            let what = match name.as_str() {
                "versionadded" => "Added in version",
                "versionchanged" => "Changed in version",
                "deprecated" => "Deprecated since version",
                _ => "Removed in version",
            };
            if said.is_empty() {
                format!("{what} {version}.")
            } else {
                format!("{what} {version}: {said}")
            }
        }
        _ if object => String::new(),
        _ => argument.clone(),
    };
    // The directive's line, its options, and its content with the blank line after it, for a
    // fence that closes there.
    let mut body = vec![opening];
    let stop = match body_first {
        Some(first) => {
            let stop = if end + 1 < lines.len() && blank(&lines[end + 1]) {
                end + 1
            } else {
                end
            };
            body.extend((i + 1..first).map(|_| String::new()));
            body.extend(dedented(lines, first, stop));
            stop
        }
        None => i,
    };
    // Contents inside contents are read as they are past a depth no page needs: a page of
    // directives nested thousands deep would otherwise take as many frames of the stack.
    let converted = if depth < MOST_NESTED {
        convert(
            &body,
            styles,
            page_end && stop + 1 == lines.len(),
            depth + 1,
        )
    } else {
        body
    };
    for (k, line) in (i..=stop).zip(converted) {
        out[k] = line;
    }
    if object && !argument.is_empty() {
        let signature = format!("`{}`", argument.replace('`', ""));
        // Before the first paragraph of the description, past a field list of its type and
        // default (`:type: boolean` in mypy's `.. confval::`).
        let at = body_first
            .and_then(|first| {
                (first..=end).find(|k| {
                    let t = lines[*k].trim();
                    !t.is_empty() && !t.starts_with(':') && blank(&lines[*k - 1])
                })
            })
            .or(body_first)
            .unwrap_or(i);
        out[at] = if out[at].trim().is_empty() {
            signature
        } else {
            format!("{signature}: {}", out[at].trim_start())
        };
    }
    end + 1
}

/// `.. literalinclude:: path` with its `:lines:` as the include marker mdBook writes, which
/// [`crate::research::includes`] reads from the page's folder first, as Sphinx does (a path
/// that starts with `/` is from the documentation's root: tried from the workspace's).
fn include_marker(argument: &str, options: &[(String, String)]) -> String {
    let path = argument.split_whitespace().next().unwrap_or("");
    let path = path.trim_start_matches('/');
    let range = options
        .iter()
        .find(|(k, _)| k == "lines")
        .and_then(|(_, v)| {
            let (from, to) = v.split_once('-').unwrap_or((v.as_str(), v.as_str()));
            let ok = |s: &str| s.is_empty() || s.chars().all(|c| c.is_ascii_digit());
            (!v.contains(',') && ok(from.trim()) && ok(to.trim()))
                .then(|| format!(":{}:{}", from.trim(), to.trim()))
        })
        .unwrap_or_default();
    if path.is_empty() {
        String::new()
    } else {
        format!("{{{{#include {path}{range}}}}}")
    }
}

/// A role's text as the page shows it: code roles as code, `~a.b.c` as `c`, an explicit title
/// (`text <target>`) as its text, PEPs and RFCs by number. Also MyST's `{name}` roles in
/// Markdown ([`crate::research::synthesis::unrole`]).
pub(crate) fn role(name: &str, content: &str) -> String {
    let name = name.rsplit(':').next().unwrap_or(name).to_ascii_lowercase();
    static TITLED: OnceLock<Regex> = OnceLock::new();
    let titled = regex(&TITLED, r"(?s)^(.*?)\s*<([^<>]+)>$");
    let (text, explicit) = match titled.captures(content) {
        Some(c) if !c[1].trim().is_empty() => (c[1].trim().to_owned(), true),
        Some(c) => (c[2].trim().to_owned(), false),
        None => (content.trim().to_owned(), false),
    };
    let mut text = text.trim_start_matches('!').to_owned();
    if !explicit && let Some(rest) = text.strip_prefix('~') {
        text = rest.rsplit('.').next().unwrap_or(rest).to_owned();
    }
    if !explicit && matches!(name.as_str(), "func" | "meth") && !text.ends_with(')') {
        text.push_str("()");
    }
    match name.as_str() {
        "pep" => format!("PEP {text}"),
        "rfc" => format!("RFC {text}"),
        "strong" => format!("**{text}**"),
        "emphasis" | "dfn" | "title-reference" => format!("*{text}*"),
        "menuselection" => text.replace("-->", "›"),
        n if CODE_ROLES.contains(&n) && !text.contains('`') => format!("`{text}`"),
        _ => text,
    }
}

/// Inline markup of prose (a line or a paragraph's lines) as the page shows it (module docs),
/// with its line breaks where they were. Inline literals (``` ``x`` ```) are left as they are
/// but for their marks, and nothing inside them is read.
pub fn inline(line: &str) -> String {
    static LITERAL: OnceLock<Regex> = OnceLock::new();
    let literal = regex(&LITERAL, r"(?s)``(.+?)``");
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for m in literal.captures_iter(line) {
        let whole = m.get(0).expect("the match");
        out.push_str(&markup(&line[at..whole.start()]));
        let code = &m[1];
        if code.contains('`') {
            // Markdown's double marks hold a backtick.
            out.push_str(&keep_lines(code, format!("`` {} ``", code.trim())));
        } else {
            out.push('`');
            out.push_str(code);
            out.push('`');
        }
        at = whole.end();
    }
    out.push_str(&markup(&line[at..]));
    out
}

/// Roles, hyperlink references, footnote references and escapes in text outside inline
/// literals.
fn markup(text: &str) -> String {
    static ROLE: OnceLock<Regex> = OnceLock::new();
    static LINK: OnceLock<Regex> = OnceLock::new();
    static NAMED: OnceLock<Regex> = OnceLock::new();
    static FOOTNOTE: OnceLock<Regex> = OnceLock::new();
    static SIMPLE: OnceLock<Regex> = OnceLock::new();
    let role_re = regex(
        &ROLE,
        r"(^|[^\w`:]):((?:[A-Za-z][\w.+-]*:)?[A-Za-z][\w.+-]*):`([^`]+)`",
    );
    let link = regex(&LINK, r"`([^`<]*?)\s*<([^`<>]+)>`__?");
    let named = regex(&NAMED, r"`([^`]+)`__?");
    let footnote = regex(&FOOTNOTE, r"[ \t]?\[(?:#[\w-]*|\*|\d+|[A-Za-z][\w.-]*)\]_");
    let simple = regex(
        &SIMPLE,
        r"\b([A-Za-z][A-Za-z0-9-]*[A-Za-z0-9])_([\s.,;:!?)]|$)",
    );
    let text = role_re.replace_all(text, |c: &Captures| {
        keep_lines(&c[0], format!("{}{}", &c[1], role(&c[2], &c[3])))
    });
    let text = simple.replace_all(&text, "$1$2");
    let text = footnote.replace_all(&text, "");
    let text = link.replace_all(&text, |c: &Captures| {
        let label = c[1].trim();
        let shown = if label.is_empty() {
            c[2].trim().to_owned()
        } else {
            format!("[{label}]({})", c[2].trim())
        };
        keep_lines(&c[0], shown)
    });
    let text = named.replace_all(&text, "$1");
    text.replace("\\ ", "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(text: &str) -> Vec<String> {
        as_markdown(text).lines().map(str::to_owned).collect()
    }

    #[test]
    fn titles_become_headings_in_the_order_the_page_uses_their_adornments() {
        let page = "=======\nRequests\n=======\n\nIntro.\n\nQuickstart\n==========\n\nText.\n\nMake a Request\n--------------\n\nMore.\n\nDeep\n~~~~\n\nNext\n----\n";
        let out = lines_of(page);
        assert_eq!(out.len(), page.lines().count());
        assert_eq!(out[1], "# Requests");
        assert_eq!(out[0], "");
        assert_eq!(out[2], "");
        assert_eq!(out[6], "## Quickstart");
        assert_eq!(out[7], "");
        assert_eq!(out[11], "### Make a Request");
        assert_eq!(out[16], "#### Deep");
        assert_eq!(out[19], "### Next");
    }

    #[test]
    fn a_literal_block_is_fenced_on_the_blank_lines_around_it_and_its_lead_in_loses_a_colon() {
        // Recorded from Requests' quickstart.
        let page = "Begin by importing the Requests module::\n\n    >>> import requests\n\nNow, let's try to get a webpage::\n\n    r = get(url)\n\n    r.status\n\nNext paragraph ::\n\n  x\n";
        let out = lines_of(page);
        assert_eq!(out[0], "Begin by importing the Requests module:");
        assert_eq!(out[1], "```pycon");
        assert_eq!(out[2], ">>> import requests");
        assert_eq!(out[3], "```");
        assert_eq!(out[4], "Now, let's try to get a webpage:");
        assert_eq!(out[5], "```");
        assert_eq!(&out[6..9], ["r = get(url)", "", "r.status"]);
        assert_eq!(out[9], "```");
        assert_eq!(out[10], "Next paragraph");
        // At the end of the page the closing fence follows the last line.
        assert_eq!(&out[12..], ["x", "```"]);
    }

    #[test]
    fn a_code_block_directive_is_fenced_with_its_language_and_its_options_are_dropped() {
        let page = "Example:\n\n.. code-block:: python\n   :caption: demo\n\n   import requests\n   requests.get(url)\n\nAfter.\n";
        let out = lines_of(page);
        assert_eq!(out.len(), page.lines().count());
        assert_eq!(out[2], "");
        assert_eq!(out[3], "");
        assert_eq!(out[4], "```python");
        assert_eq!(&out[5..7], ["import requests", "requests.get(url)"]);
        assert_eq!(out[7], "```");
        assert_eq!(out[8], "After.");
    }

    #[test]
    fn an_admonition_s_content_is_prose_and_may_hold_code() {
        let page = ".. note:: Sessions keep cookies.\n\n.. warning::\n\n   Do not do this::\n\n       bad()\n\n   Really.\n\n.. versionadded:: 2.1\n   The ``json`` parameter.\n";
        let out = lines_of(page);
        assert_eq!(out[0], "Sessions keep cookies.");
        assert_eq!(out[2], "");
        assert_eq!(out[4], "Do not do this:");
        assert_eq!(out[5], "```");
        assert_eq!(out[6], "bad()");
        assert_eq!(out[7], "```");
        assert_eq!(out[8], "Really.");
        assert_eq!(out[10], "Added in version 2.1.");
        assert_eq!(out[11], "The `json` parameter.");
    }

    #[test]
    fn an_object_description_prints_its_signature_before_its_text() {
        let page =
            ".. option:: -v, --verbose\n\n   Print more output.\n\n.. envvar:: TOX_PARALLEL\n";
        let out = lines_of(page);
        assert_eq!(out[0], "");
        assert_eq!(out[2], "`-v, --verbose`: Print more output.");
        assert_eq!(out[4], "`TOX_PARALLEL`");
    }

    #[test]
    fn hidden_directives_comments_and_targets_leave_blank_lines() {
        let page = ".. _quickstart:\n\n.. toctree::\n   :maxdepth: 2\n\n   user/install\n\n.. a comment\n   still the comment\n\n.. |sub| image:: x.png\n\n.. automodule:: requests\n   :members:\n\nText.\n";
        let out = lines_of(page);
        assert_eq!(out.len(), page.lines().count());
        assert!(out[..15].iter().all(|l| l.is_empty()), "{out:?}");
        assert_eq!(out[15], "Text.");
    }

    #[test]
    fn a_literalinclude_is_an_include_marker_with_its_lines() {
        let page = ".. literalinclude:: ../examples/app.py\n   :lines: 3-10\n   :language: python\n\n.. literalinclude:: /src/x.toml\n";
        let out = lines_of(page);
        assert_eq!(out[0], "{{#include ../examples/app.py:3:10}}");
        assert_eq!(out[1], "");
        assert_eq!(out[4], "{{#include src/x.toml}}");
        let m = crate::research::includes::marker(&out[0]).expect("a marker");
        assert_eq!(m.path, "../examples/app.py");
        assert_eq!(m.lines, Some((3, Some(10))));
    }

    #[test]
    fn inline_markup_reads_as_the_page_shows_it() {
        // Recorded from Requests' quickstart and advanced pages.
        assert_eq!(
            inline("Now, we have a :class:`Response <requests.Response>` object called ``r``."),
            "Now, we have a `Response` object called `r`."
        );
        assert_eq!(
            inline("Requests is :ref:`installed <install>`"),
            "Requests is installed"
        );
        assert_eq!(
            inline("Use :meth:`~requests.Session.get` or :func:`requests.get`."),
            "Use `get()` or `requests.get()`."
        );
        assert_eq!(
            inline("See `the urllib3 docs <https://urllib3.rtfd.io>`_ and `Certifi`_."),
            "See [the urllib3 docs](https://urllib3.rtfd.io) and Certifi."
        );
        assert_eq!(
            inline("Per :rfc:`7230`, see the note [#]_ and urllib3_."),
            "Per RFC 7230, see the note and urllib3."
        );
        // Nothing inside an inline literal is read as markup.
        assert_eq!(
            inline("Write ``:class:`X` `` to link, and keep ``__init__`` and ``a_``."),
            "Write `` :class:`X` `` to link, and keep `__init__` and `a_`."
        );
        assert_eq!(
            inline("__init__ and snake_case stay"),
            "__init__ and snake_case stay"
        );
    }

    #[test]
    fn a_role_or_link_that_goes_on_to_the_next_line_is_read_and_the_lines_stay() {
        // Recorded from Requests' advanced page.
        let page = "Replace the call to :meth:`Request.prepare()\n<requests.Request.prepare>` with a call to\nthe `Streaming\nAPI <https://dev.twitter.com/streaming>`_. Simply\n";
        let out = lines_of(page);
        assert_eq!(
            out,
            [
                "Replace the call to `Request.prepare()`",
                " with a call to",
                "the [Streaming",
                "API](https://dev.twitter.com/streaming). Simply"
            ]
        );
    }

    #[test]
    fn a_literal_block_inside_a_list_item_is_measured_from_the_item_s_text() {
        // Recorded from mypy's "Running mypy": the item's next paragraph is not code.
        let page = "1.  First, you can pass in paths. For example::\n\n        $ mypy file_1.py\n\n    The above command tells mypy to check them.\n\n- Use::\n\n    x\n";
        let out = lines_of(page);
        assert_eq!(out[0], "1.  First, you can pass in paths. For example:");
        assert_eq!(&out[1..4], ["```", "$ mypy file_1.py", "```"]);
        assert_eq!(out[4], "    The above command tells mypy to check them.");
        assert_eq!(&out[6..], ["- Use:", "```", "x", "```"]);
    }

    #[test]
    fn a_doctest_block_is_fenced() {
        let page = "Try it:\n\n>>> r = requests.get(url)\n>>> r.status_code\n200\n\nDone.\n";
        let out = lines_of(page);
        assert_eq!(out[1], "```pycon");
        assert_eq!(out[4], "200");
        assert_eq!(out[5], "```");
        assert_eq!(out[6], "Done.");
        // Recorded from Requests' quickstart: two sessions in a block quote after a colon.
        let page = "and it will be encoded automatically:\n\n    >>> payload = {'some': 'data'}\n\n    >>> r = requests.post(url, json=payload)\n\nNote, the ``json`` parameter is ignored.\n";
        assert_eq!(
            lines_of(page),
            [
                "and it will be encoded automatically:",
                "```pycon",
                ">>> payload = {'some': 'data'}",
                "",
                ">>> r = requests.post(url, json=payload)",
                "```",
                "Note, the `json` parameter is ignored."
            ]
        );
    }

    #[test]
    fn a_block_with_no_blank_line_after_it_is_fenced_a_line_up_when_it_can_be() {
        // With one blank line above it and no line free, its lines are left as they are.
        let page = "Code::\n\n    x = 1\nNot indented.\n";
        let out = lines_of(page);
        assert_eq!(out.len(), 4);
        assert_eq!(out[2], "    x = 1");
        assert_eq!(out[3], "Not indented.");
        // Recorded from mypy's common issues: a code block runs into the next directive.
        let page = "Example:\n\n.. code-block:: python\n\n   a = 1\n   reveal_locals()\n   #     b: builtins.str\n.. note::\n\n    It is special.\n";
        let out = lines_of(page);
        assert_eq!(
            out,
            [
                "Example:",
                "",
                "```python",
                "a = 1",
                "reveal_locals()",
                "#     b: builtins.str",
                "```",
                "",
                "",
                "It is special."
            ]
        );
        let passages = crate::research::passages::split("common_issues.rst", page);
        assert!(
            passages.iter().all(|p| p.heading.is_empty()),
            "{passages:?}"
        );
    }

    #[test]
    fn a_txt_page_is_read_as_restructured_text_only_when_its_text_shows_it() {
        // Recorded from Django's docs (topics/http/sessions.txt), shortened.
        let django = ".. _topics-http-sessions:\n\n===================\nHow to use sessions\n===================\n\nUse :class:`~django.contrib.sessions.middleware.SessionMiddleware` and set\n``SESSION_ENGINE``.\n";
        assert!(is_rst("docs/topics/http/sessions.txt", django));
        // Recorded from Docutils' sandbox (cben/make/README.txt), shortened: no directive, target
        // or role, only inline literals and a literal block.
        let docutils = "typically you would include it in your makefiles, e.g.::\n\n    DOCS = foo.txt bar.txt\n\nFor quick jobs ``make DOCS=foo.txt`` will also work.\n";
        assert!(is_rst("sandbox/cben/make/README.txt", docutils));
        assert!(is_rst("docs/a.rst", "plain"));
        assert!(!is_rst("docs/a.md", django));
        for plain in [
            "Notes\n=====\n\nRun ``make`` first.\n",
            "requirements: flask==3.0\n.. not a directive\n",
            // AsciiDoc's labelled list: a term ending `::` and its indented text.
            "Options::\n\n  --verbose  Say more. Set `name` in the file.\n",
            "",
        ] {
            assert!(!is_rst("notes.txt", plain), "{plain:?}");
        }
    }

    #[test]
    fn hostile_pages_keep_their_lines_and_never_panic() {
        let pages = [
            "",
            "::",
            "..",
            ".. ::",
            "====\n====\n====",
            "Title\n===\n===",
            "``unclosed and :role:`x\n.. code-block::\n",
            "a::\n\n\t\tcode\té\n",
            "* item::\n\n      code\n\n  more\n",
            ".. note::\n   .. warning::\n      deep\n         deeper::\n\n            code\n",
            "é::\n\n  ü\n",
            "x\u{2028}y\n~~~\n",
        ];
        // Directives nested far deeper than any page nests them.
        let deep: String = (0..3000)
            .map(|d| format!("{}.. note::\n\n", " ".repeat(d)))
            .collect();
        let pages: Vec<String> = pages.iter().map(|p| p.to_string()).chain([deep]).collect();
        for page in &pages {
            let out = as_markdown(page);
            assert!(
                crate::research::passages::keeps_lines(page, &out),
                "{page:?} → {out:?}"
            );
        }
    }
}
