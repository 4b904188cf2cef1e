//! The extractive synthesis: what a report says when no model answered or its answer was not
//! kept, and the quoted sentences a kept model synthesis gets for a part of the question it left
//! without a supported sentence. It reads as an answer: complete declarative sentences only (no
//! questions, no fragment ending in `:` unless the short code example it introduces is kept, no
//! link lists or navigation), at least one per part of the question when a source has one,
//! ordered by part, each cited; a part that found nothing says so (docs/research.md).
//!
//! The same sentences are what a model asked for quotes picks from (`[research] quote_parts`):
//! [`numbered`] lists those likeliest to answer a part, numbered, and [`chosen`] turns the
//! numbers the model names (or its copies, [`copied`]) back into the passages' own sentences,
//! so what the report prints is what the passage says.
//!
//! Pure functions: no I/O, no model calls.

use std::sync::OnceLock;

use regex::Regex;

use crate::edit::text::{FenceLine, Fences};
use crate::research::includes;
use crate::research::parts::{self, QuestionPart};
use crate::research::passages::{self, content_stems};
use crate::research::synthesis::{as_rendered, sentences, tokens_of};
use crate::store::SourceRecord;
use crate::tokens::{Encoding, count_tokens};

/// A code block longer than this (lines, characters inside its fences) is quoted as an example
/// by its first lines ([`shortened`]).
const CODE_LINES: usize = 15;
const CODE_CHARS: usize = 700;

/// A paragraph (or list item) of a passage and the short code block right after it, if any,
/// or the short list or table its lead-in leads to ([`leads_in`]).
#[derive(Debug, Clone, PartialEq)]
struct Unit {
    text: String,
    code: Option<String>,
    /// A list item (its first line has a list marker).
    item: bool,
    /// A code block or an include marker follows it, with only blank lines between.
    block: bool,
    /// The line of the passage after the unit's last.
    next: usize,
}

/// Comment markers whose text a reader would quote from a code file.
const COMMENT_MARKERS: [&str; 11] = [
    "//!",
    "///",
    "//",
    "/**",
    "/*",
    "*/",
    "* ",
    "#",
    "--",
    "\"\"\"",
    "\x27\x27\x27",
];

fn list_prefix(t: &str) -> Option<usize> {
    for bullet in ["- ", "* ", "+ ", "• "] {
        if t.starts_with(bullet) {
            return Some(bullet.len());
        }
    }
    let digits = t.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && digits < 4 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
    {
        return Some(digits + 2);
    }
    None
}

/// The text a reader would quote from a source: prose paragraphs (list markers and headings
/// removed) with the fenced code block that follows a paragraph; in a code file, its comments.
fn units(s: &SourceRecord) -> Vec<Unit> {
    let code_file = s
        .key
        .strip_prefix("file:")
        .and_then(|k| k.split('#').next())
        .is_some_and(|path| !passages::is_prose(path));
    let mut out: Vec<Unit> = Vec::new();
    let mut current = String::new();
    // The unit a code block may attach to: the last one, when only blank lines came between.
    let mut attachable = false;
    let mut block: Option<String> = None;
    let mut fences = Fences::default();
    // Whether the unit being read opened with a list marker.
    let mut item = false;
    let flush = |current: &mut String,
                 out: &mut Vec<Unit>,
                 attachable: &mut bool,
                 item: &mut bool,
                 next: usize| {
        if !code_file && bold_heading(current.trim()) {
            *attachable = false;
        } else if !current.trim().is_empty() {
            out.push(Unit {
                text: current.trim().to_owned(),
                code: None,
                item: *item,
                block: false,
                next,
            });
            *attachable = true;
        }
        current.clear();
        *item = false;
    };
    // The line before, for a setext heading's underline.
    let mut above = "";
    let lines: Vec<&str> = s.snippet.lines().collect();
    for (at, &line) in lines.iter().enumerate() {
        let t = line.trim();
        match fences.line(line) {
            FenceLine::Open => {
                flush(&mut current, &mut out, &mut attachable, &mut item, at);
                block = Some(format!("{t}\n"));
                continue;
            }
            FenceLine::Inside => {
                if let Some(b) = &mut block {
                    b.push_str(line);
                    b.push('\n');
                }
                continue;
            }
            FenceLine::Close => {
                if attachable && let Some(last) = out.last_mut() {
                    last.block = true;
                }
                if let Some(mut b) = block.take() {
                    b.push_str(t);
                    if attachable
                        && !code_file
                        && let Some(last) = out.last_mut()
                        && last.code.is_none()
                    {
                        last.code = shortened(&b);
                    }
                    if !code_file {
                        out.extend(commented(&b, at));
                    }
                }
                attachable = false;
                continue;
            }
            FenceLine::Outside => {}
        }
        if t.is_empty() {
            flush(&mut current, &mut out, &mut attachable, &mut item, at);
            continue;
        }
        // An HTML comment is for the documentation's build, not its reader: chezmoi's docs put
        // `<!-- example-formats -->` between a lead-in and its code.
        if !code_file && t.starts_with("<!--") && t.ends_with("-->") {
            flush(&mut current, &mut out, &mut attachable, &mut item, at);
            continue;
        }
        // An include marker stands for the code the published page shows there: it is the
        // example of the paragraph it follows, as a fenced block would be.
        if !code_file && includes::is_marker(t) {
            flush(&mut current, &mut out, &mut attachable, &mut item, at);
            if attachable && let Some(last) = out.last_mut() {
                last.block = true;
            }
            if attachable
                && let Some(last) = out.last_mut()
                && last.code.is_none()
            {
                // The file's lines when the workspace source read them, else the marker.
                last.code = Some(
                    s.included
                        .iter()
                        .find(|(marker, _)| marker == t)
                        .and_then(|(_, block)| shortened(block))
                        .unwrap_or_else(|| format!("```text\n{t}\n```")),
                );
            }
            attachable = false;
            continue;
        }
        // An underline: under a paragraph of one line, a setext heading, which is not a
        // sentence (direnv's man page title "DIRENV.TOML 1 "2019" direnv "User Manuals"" over
        // "=====" was quoted as one); otherwise a rule, which ends the sentence above.
        if !code_file && passages::underline(t).is_some() {
            if current.trim() == above.trim() && passages::setext_heading(above, t).is_some() {
                current.clear();
            }
            flush(&mut current, &mut out, &mut attachable, &mut item, at);
            attachable = false;
            above = line;
            continue;
        }
        above = line;
        let text = if code_file {
            COMMENT_MARKERS
                .iter()
                .find_map(|p| t.strip_prefix(p))
                .map(|rest| {
                    rest.trim()
                        .trim_end_matches("*/")
                        .trim_end_matches("\"\"\"")
                        .trim_end_matches("\x27\x27\x27")
                        .trim()
                })
                .filter(|rest| !rest.starts_with('[') && !rest.starts_with('!'))
        } else if t.starts_with('#')
            || t.starts_with('|')
            || (t.starts_with('<') && !opens_inline(t))
        {
            None
        } else {
            let at = list_prefix(t).unwrap_or(0);
            Some(t[at..].trim_start_matches('>').trim()).filter(|text| !is_alert_marker(text))
        };
        match text {
            // A line all in bold opening a paragraph heads what follows it (an admonition's
            // title, `passages::as_rendered`, is written over its text with no blank line
            // between): it is no sentence, and not the text's first words.
            Some(text)
                if !code_file
                    && current.trim().is_empty()
                    && list_prefix(t).is_none()
                    && bold_heading(text) =>
            {
                attachable = false;
            }
            Some(text) if !text.is_empty() => {
                if list_prefix(t).is_some() && !code_file {
                    flush(&mut current, &mut out, &mut attachable, &mut item, at);
                    item = true;
                }
                current.push(' ');
                current.push_str(text);
            }
            _ => {
                flush(&mut current, &mut out, &mut attachable, &mut item, at);
                attachable = false;
            }
        }
    }
    flush(
        &mut current,
        &mut out,
        &mut attachable,
        &mut item,
        lines.len(),
    );
    if !code_file {
        for unit in &mut out {
            if unit.code.is_none()
                && sentences(&unit.text)
                    .last()
                    .is_some_and(|last| leads_in(last))
            {
                // Fenced, as a code example is: the answer's checks and the targeted pass's
                // rebuilding read a fenced block as the lead-in's, and a table's rows as prose
                // would be read as sentences without a citation.
                unit.code = block_after(&lines, unit.next).map(|b| format!("```text\n{b}\n```"));
            }
        }
    }
    out
}

/// A fenced block `block` (its fences included) as quoted after its lead-in: whole when it is
/// at most [`CODE_LINES`] lines and [`CODE_CHARS`] characters inside its fences, otherwise its
/// first lines within both and a line `…` before the closing fence. Quoted whole or not at
/// all, chezmoi's 20-line `.chezmoiexternal.toml` example, the answer to "keep them updated
/// about once a week" (`refreshPeriod = "168h"` on its sixth line), was never shown, and its
/// lead-in, leading to nothing, was never listed for a pick (2026-12-04). `None` when not even
/// its first line fits.
fn shortened(block: &str) -> Option<String> {
    let lines: Vec<&str> = block.lines().collect();
    if lines.len() < 2 {
        return Some(block.to_owned());
    }
    let (open, body, close) = (lines[0], &lines[1..lines.len() - 1], lines[lines.len() - 1]);
    let chars: usize = body.iter().map(|l| l.len() + 1).sum();
    if body.len() <= CODE_LINES && chars <= CODE_CHARS {
        return Some(block.to_owned());
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0;
    for line in body.iter().take(CODE_LINES - 1) {
        if used + line.len() + 1 > CODE_CHARS {
            break;
        }
        used += line.len() + 1;
        kept.push(line);
    }
    if kept.is_empty() {
        return None;
    }
    let mut out = String::from(open);
    out.push('\n');
    for line in kept {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("\u{2026}\n");
    out.push_str(close);
    Some(out)
}

/// Languages of a fenced block whose comments are not the writer's words: a console session
/// shows what a program printed (Typer's "# Are you sure you want to delete it? [y/N]:"), and a
/// block without a language may be anything.
const NOT_COMMENTED: [&str; 7] = [
    "",
    "console",
    "shell-session",
    "text",
    "output",
    "log",
    "diff",
];

/// The fewest words a comment needs to be a sentence of its own ("# Page title" names a line).
const COMMENT_WORDS: usize = 4;

/// The comments of a documentation page's code example that say what the lines under them do,
/// each a unit whose code is those lines: "# Get editor completions based on the config
/// schema" over `"$schema" = '…'` in Starship's first configuration example is the only place
/// its docs say how an editor completes the file's keys, and fzf's "# Use ~~ as the trigger
/// sequence instead of the default **" says how that is changed. A comment line (`# `, `// `,
/// `-- `; lines in a row are one comment) of [`COMMENT_WORDS`] words or more, opening with a
/// letter, followed by at least one line of code before a blank line or the next comment.
/// `block` is the fenced block with its fences; `close` the line of its closing fence.
fn commented(block: &str, close: usize) -> Vec<Unit> {
    let lines: Vec<&str> = block.lines().collect();
    let Some(open) = lines.first() else {
        return Vec::new();
    };
    let lang = crate::edit::text::fence_line(open)
        .map(|(_, _, info)| info)
        .unwrap_or("")
        .split(|c: char| c.is_whitespace() || c == '{' || c == ',')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if NOT_COMMENTED.contains(&lang.as_str()) {
        return Vec::new();
    }
    let comment = |line: &str| -> Option<String> {
        let t = line.trim();
        ["# ", "// ", "-- "]
            .iter()
            .find_map(|m| t.strip_prefix(m))
            .map(|rest| rest.trim().to_owned())
    };
    let body = &lines[1..lines.len().saturating_sub(1)];
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let mut said: Vec<String> = Vec::new();
        while let Some(text) = body.get(i).and_then(|l| comment(l)) {
            said.push(text);
            i += 1;
        }
        let text = said.join(" ");
        let mut code: Vec<&str> = Vec::new();
        while let Some(line) = body.get(i) {
            if line.trim().is_empty() || comment(line).is_some() {
                break;
            }
            code.push(line);
            i += 1;
        }
        let reads = text.split_whitespace().count() >= COMMENT_WORDS
            && text.chars().next().is_some_and(char::is_alphabetic);
        if reads && !code.is_empty() {
            // A lead-in to its lines, as the page shows them under it, opening as a sentence
            // does ("# unignore in file picker and global search").
            let text = crate::research::synthesis::capitalized(&text);
            let text = match text.strip_suffix('.') {
                Some(said) => format!("{said}:"),
                None if text.ends_with([':', '!', '?']) => text,
                None => format!("{text}:"),
            };
            let fenced = format!("{open}\n{}\n{}", code.join("\n"), lines[lines.len() - 1]);
            if let Some(code) = shortened(&fenced) {
                out.push(Unit {
                    text,
                    code: Some(code),
                    item: false,
                    block: true,
                    next: close,
                });
            }
        }
        if said.is_empty() && code.is_empty() {
            i += 1;
        }
    }
    out
}

/// Whether `sentence` leads to what follows it: it ends with `:`, or says "the following" or
/// "as follows" ("Configuration for Hatch itself is stored in a `config.toml` file located by
/// default in one of the following platform-specific directories.", over the table of them).
/// Printed without it, a reader of Hatch's reports (2026-12-03) found the sentence "followed by
/// nothing; the table was dropped".
pub(crate) fn leads_in(sentence: &str) -> bool {
    let t = sentence.trim_end();
    let lower = t.to_lowercase();
    t.ends_with(':')
        || says_at_word_start(&lower, "the following")
        || says_at_word_start(&lower, "as follows")
}

/// The list or table that starts at line `from` of `lines` (after blank lines), when it is
/// short enough to quote as an example ([`CODE_LINES`], [`CODE_CHARS`]): a table's rows, or a
/// list's items with their continuation lines (a blank line between items is part of it),
/// when none of them is a fence.
fn block_after(lines: &[&str], from: usize) -> Option<String> {
    let start = (from..lines.len()).find(|&i| !lines[i].trim().is_empty())?;
    let first = lines[start].trim();
    let table = first.starts_with('|');
    if !table && list_prefix(first).is_none() {
        return None;
    }
    let mut block: Vec<&str> = Vec::new();
    let mut i = start;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim();
        let goes_on = if table {
            t.starts_with('|')
        } else if t.is_empty() {
            // A blank line goes on when a list item follows it.
            lines[i + 1..]
                .iter()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| list_prefix(l.trim()).is_some() || l.starts_with([' ', '\t']))
        } else {
            list_prefix(t).is_some() || line.starts_with([' ', '\t'])
        };
        if !goes_on {
            break;
        }
        // A fence inside the list would close the one the list is quoted in.
        if Fences::default().line(line) == FenceLine::Open {
            return None;
        }
        block.push(line);
        i += 1;
        if block.len() > CODE_LINES {
            return None;
        }
    }
    let text = block.join("\n").trim_end().to_owned();
    (text.len() <= CODE_CHARS).then_some(text)
}

/// Whether a line is a GitHub alert's marker (`> [!NOTE]`, `> [!TIP]`, …): markup, not the
/// first words of the sentence under it. Read as words, it made the first sentence of every
/// alert start with "[!NOTE]", which reads as no sentence, and fzf's README answers "how do I
/// set up key bindings on an older fzf" in such a note.
fn is_alert_marker(text: &str) -> bool {
    text.strip_prefix("[!")
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|kind| !kind.is_empty() && kind.chars().all(|c| c.is_ascii_alphabetic()))
}

/// Whether a paragraph is all in bold (`**…**` or `__…__`, a stop after it or not): a heading
/// in all but markup, as mypy's "Common issues" heads each reason ("**The function
/// containing the error is not annotated.**", then the paragraph that says what to do) and
/// Poetry's docs their steps ("**Install Poetry**"). Quoted as the answer, it names a case and
/// answers nothing: "**A function annotated as returning a non-optional type returns 'None' and
/// mypy doesn't complain**" was all a report printed for "is mypy even looking inside those
/// functions" (2026-12-05). Not a bold lead-in ("**When to use `install` vs `update`:**"),
/// which leads to what follows it.
fn bold_heading(paragraph: &str) -> bool {
    let paragraph = paragraph.strip_suffix('.').unwrap_or(paragraph);
    ["**", "__"].iter().any(|mark| {
        paragraph
            .strip_prefix(mark)
            .and_then(|rest| rest.strip_suffix(mark))
            .is_some_and(|inner| {
                let inner = inner.trim();
                !inner.is_empty() && !inner.contains(mark) && !inner.ends_with(':')
            })
    })
}

/// HTML elements that mark words inside a sentence rather than a block of their own.
const INLINE_TAGS: [&str; 14] = [
    "kbd", "code", "b", "i", "em", "strong", "sup", "sub", "a", "span", "abbr", "mark", "samp",
    "var",
];

/// Whether a line opens with an element of [`INLINE_TAGS`]: a sentence that goes on from the
/// line before, not markup to leave out. fzf's README breaks "Vim will not open an empty file
/// when you terminate fzf with" before "<kbd>CTRL-C</kbd>"; left out, the sentence ended at
/// "with" (2026-12-02).
fn opens_inline(line: &str) -> bool {
    let Some(rest) = line.strip_prefix('<') else {
        return false;
    };
    let name: String = rest
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    INLINE_TAGS.contains(&name.as_str()) && rest[name.len()..].starts_with(['>', ' '])
}

/// Phrases of navigation and lead-ins rather than statements about the topic.
const NAVIGATION: [&str; 22] = [
    "good place to start",
    "good places to start",
    "see the ",
    "see also",
    "refer to",
    "read more",
    "learn more",
    "click ",
    "next section",
    "previous section",
    "next chapter",
    "previous chapter",
    "table of contents",
    "in this tutorial",
    "in this guide",
    "in this section",
    "in this chapter",
    "this page",
    "let's",
    "let us",
    "you'll learn",
    "we'll ",
];

/// Whether `phrase` is in `text` where a word begins: "refer to" is not in "prefer to".
/// Matched anywhere, it was in 10 of the 245 sentences of nine documentation corpora that hold
/// a phrase of [`NAVIGATION`] ("If you'd prefer to opt in to each preview rule individually,
/// you can toggle the `explicit-preview-rules` setting", Ruff's docs; fzf's
/// `FZF_DEFAULT_OPTS_FILE` answer), each a sentence that answers, left out (2026-12-02).
fn says_at_word_start(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(i, _)| {
        !text[..i]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
    })
}

/// The words of `text` outside Markdown links (`[text](url)`), and the words inside them.
fn words_outside_links(text: &str) -> (usize, usize) {
    let mut outside = String::new();
    let mut inside = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        match after.find("](").and_then(|mid| {
            after[mid + 2..]
                .find(')')
                .map(|close| (mid, mid + 2 + close))
        }) {
            Some((mid, close)) => {
                outside.push_str(&rest[..open]);
                inside.push(' ');
                inside.push_str(&after[..mid]);
                outside.push(' ');
                rest = &after[close + 1..];
            }
            None => {
                outside.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    outside.push_str(rest);
    let count = |t: &str| {
        t.split_whitespace()
            .filter(|w| w.chars().any(char::is_alphanumeric))
            .count()
    };
    (count(&outside), count(&inside))
}

/// Whether `sentence` (quoted from a passage) reads as part of an answer: a complete
/// declarative sentence of five words or more that starts like a sentence and ends with `.` or
/// `!` — or with `:` when `code_follows` (the short code example it introduces is quoted with
/// it) — and is not a question, a link list or navigation ("… are good places to start.").
pub fn is_answer_sentence(sentence: &str, code_follows: bool) -> bool {
    let t = sentence.trim();
    let core = t.trim_end_matches(['*', '_', '"', '\'', ')', ' ']);
    let words = t.split_whitespace().count();
    if !(5..=80).contains(&words) || t.len() < 25 {
        return false;
    }
    if t.contains('?') {
        return false;
    }
    let ends = if core.ends_with(':') {
        code_follows
    } else {
        core.ends_with('.') || core.ends_with('!') || t.ends_with(".)")
    };
    if !ends {
        return false;
    }
    // A sentence may open with a link, whose text is its first word: "[`chezmoi update`](…)
    // pulls the latest changes from your remote repo and runs `chezmoi apply`." (chezmoi's
    // command overview, a list of such items).
    let opening = t.trim_start_matches(['*', '_', '"', '\'', '(']);
    let opening = match opening.strip_prefix('[') {
        Some(rest)
            if rest
                .split_once(']')
                .is_some_and(|(_, after)| after.starts_with(['(', '['])) =>
        {
            rest
        }
        _ => opening,
    };
    let first = opening.chars().next().unwrap_or(' ');
    if !(first.is_uppercase() || first.is_ascii_digit() || first == '`') {
        return false;
    }
    // A sentence whose last word is cut ("…, such as.") or that continues a list ("…, and so
    // on.") is fine; one that is mostly links is not.
    let (outside, inside) = words_outside_links(t);
    if inside > 0 && inside * 2 >= outside {
        return false;
    }
    let lower = t.to_lowercase();
    if lower.starts_with("see ") || NAVIGATION.iter().any(|n| says_at_word_start(&lower, n)) {
        return false;
    }
    // "For example:" / "Like this." — no content of its own.
    content_stems(t).len() >= 3
}

/// A quoted sentence with where it comes from.
#[derive(Debug, Clone)]
struct Candidate {
    /// 1-based, against the candidates.
    n: u32,
    sentence: String,
    code: Option<String>,
}

/// A sentence of the passages and how it reads.
struct Sentence {
    candidate: Candidate,
    /// It reads as an answer ([`is_answer_sentence`]): a quote the ranking may pick.
    answer: bool,
    /// A copy of it may be quoted: it reads as an answer, or would once ended
    /// ([`reads_as_answer_when_ended`]).
    copyable: bool,
    /// The paragraph (or list item) it is in, counted over all the passages.
    unit: usize,
    /// Its paragraph is a list item.
    item: bool,
    /// It ends its paragraph, and a code block follows ([`Unit::block`]).
    block: bool,
}

/// For a bench that locates answers (`RUST_LOG=patchwise::research::extractive=debug`): every
/// passage a part was ranked over, in its order, with its sentences, whether each may be
/// quoted, and the share of the part's weighed words each holds.
pub fn log_ranked(part: &QuestionPart, asked: &str, ranked: &[usize], sources: &[SourceRecord]) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let pool: Vec<serde_json::Value> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let sentences: Vec<serde_json::Value> = all_sentences(std::slice::from_ref(s))
                .into_iter()
                .map(|x| {
                    let text = x.candidate.sentence.trim().to_owned();
                    serde_json::json!([parts::share(&text, part), x.copyable, text])
                })
                .collect();
            serde_json::json!({
                "title": s.title,
                "place": ranked.iter().position(|r| *r == i),
                "found_for": s.found_for,
                "sentences": sentences,
            })
        })
        .collect();
    let record = serde_json::json!({ "part": asked, "pool": pool });
    tracing::debug!(pool = %record, "a part's passages");
}

/// Every sentence of `sources`, in source order, with how it reads.
fn all_sentences(sources: &[SourceRecord]) -> Vec<Sentence> {
    let mut out = Vec::new();
    let mut at = 0;
    for (i, s) in sources.iter().enumerate() {
        if s.retracted || s.credibility.score <= 0.0 {
            continue;
        }
        for unit in units(s) {
            at += 1;
            let list = sentences(&unit.text);
            let last = list.len().saturating_sub(1);
            for (k, sentence) in list.into_iter().enumerate() {
                let code = if k == last { unit.code.clone() } else { None };
                let sentence = crate::research::synthesis::strip_markers(&sentence);
                // A lead-in to its code: "…:", or a list item's last sentence without a stop
                // ("Ripgrep prints the matching lines in the following format", fzf's guide).
                let ended = reads_as_answer_when_ended(&sentence);
                let keep_code = code.is_some() && (leads_in(&sentence) || ended);
                let answer = is_answer_sentence(&sentence, keep_code);
                out.push(Sentence {
                    candidate: Candidate {
                        n: i as u32 + 1,
                        sentence,
                        code: if keep_code { code } else { None },
                    },
                    answer,
                    copyable: answer || ended,
                    unit: at,
                    item: unit.item,
                    block: k == last && unit.block,
                });
            }
        }
    }
    out
}

/// Every sentence of `sources` that reads as an answer, in source order.
fn candidates(sources: &[SourceRecord]) -> Vec<Candidate> {
    all_sentences(sources)
        .into_iter()
        .filter_map(|s| s.answer.then_some(s.candidate))
        .collect()
}

/// The quoted sentences for `parts` (indices into `all`), each part's best first.
pub struct Quoted {
    /// (part index, lines of Markdown) in the order of the parts.
    pub sections: Vec<(usize, Vec<String>)>,
    /// The sentences quoted, numbered against the sources (1-based).
    pub claims: Vec<(String, Vec<u32>)>,
    /// Parts no sentence was found for.
    pub unanswered: Vec<usize>,
}

/// The best sentences for each of `wanted` (indices of `all`): for a question of several parts
/// the one or two sentences holding the largest share of the part's weighted words (at least
/// half, [`parts::enough_for`]), for a question of one part the best sentence of up to four
/// sources.
pub fn quote(
    question: &str,
    all: &[QuestionPart],
    wanted: &[usize],
    sources: &[SourceRecord],
) -> Quoted {
    let pool = candidates(sources);
    let question_stems = content_stems(question);
    let mut used: Vec<String> = Vec::new();
    let mut out = Quoted {
        sections: Vec::new(),
        claims: Vec::new(),
        unanswered: Vec::new(),
    };
    let per_part = if all.len() <= 1 { 4 } else { 2 };
    for &p in wanted {
        let part = &all[p];
        let mut scored: Vec<(f64, usize, &Candidate)> = pool
            .iter()
            .filter(|c| parts::enough_for(&c.sentence, part))
            // A part of several words that count is not answered by one of them, however rare:
            // for "how are the variable names formed" mdBook's passages gave "Create a new file
            // with the name of the file you want to override …" (docs/research.md).
            .filter(|c| {
                let (held, counted) = parts::weighed_hits(&c.sentence, part);
                counted < 2 || held >= 2
            })
            .map(|c| {
                let words = content_stems(&c.sentence);
                let q = question_stems.iter().filter(|w| words.contains(w)).count();
                (parts::share(&c.sentence, part), q, c)
            })
            .collect();
        // The largest share of the part's weight, then most of the question's words, then the
        // better-ranked source, then the shorter sentence.
        scored.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then(b.1.cmp(&a.1))
                .then(a.2.n.cmp(&b.2.n))
                .then(a.2.sentence.len().cmp(&b.2.sentence.len()))
        });
        let mut lines = Vec::new();
        let mut sources_used: Vec<u32> = Vec::new();
        let best = scored.first().map(|s| (s.0, s.1));
        for (h, q, c) in scored {
            if lines.len() >= per_part {
                break;
            }
            if used.contains(&c.sentence) || sources_used.contains(&c.n) {
                continue;
            }
            // A second sentence only when it is as good as the first.
            if !lines.is_empty() && all.len() > 1 && best.is_some_and(|b| (h, q) < b) {
                break;
            }
            let sentence = as_rendered(&c.sentence);
            let mut line = format!("- {} [{}]", sentence, c.n);
            if let Some(code) = &c.code {
                line.push_str("\n\n");
                for l in code.lines() {
                    line.push_str("  ");
                    line.push_str(l);
                    line.push('\n');
                }
                line = line.trim_end().to_owned();
            }
            lines.push(line);
            used.push(c.sentence.clone());
            sources_used.push(c.n);
            out.claims.push((sentence, vec![c.n]));
        }
        if lines.is_empty() {
            out.unanswered.push(p);
        }
        out.sections.push((p, lines));
    }
    out
}

/// The share of a piece of the model's reply whose words one sentence of the passages must hold
/// for the piece to count as a copy of it ([`copied`]).
const COPIED: f64 = 0.7;
/// The sentences a reply may quote, at most: the targeted pass asks for one to three.
const COPIED_MOST: usize = 3;
/// The lines of a reply read for copies, at most.
const COPIED_LINES: usize = 200;

/// Whether a sentence that does not end like one ([`is_answer_sentence`] asks for a full stop)
/// reads as an answer once ended: documentation writes many list items without one, and a
/// copy of such an item is the model's pick, not a fragment the ranking found. Over fzf's
/// README (2026-12-02), "Vim will not open an empty file when you terminate fzf with
/// <kbd>CTRL-C</kbd>", the located answer to "`vim $(fzf)` opens an empty buffer after CTRL-C:
/// what's the better way", was copied word for word and left out. A list item that does not
/// start like a sentence ("restart the server when files change") still reads as none.
fn reads_as_answer_when_ended(sentence: &str) -> bool {
    let t = sentence.trim_end();
    !t.ends_with(['.', '!', ':', '?', ';', ',']) && is_answer_sentence(&format!("{t}."), false)
}

/// What a model asked to copy the sentences that answer a part (the targeted pass with
/// `[research] quote_parts`) copied, as the answer's text: for each piece of `reply` that is a
/// copy, the passage's own sentence it copies (its markers, roles and reference links tidied as for any quote),
/// once, in the order copied, with the number of its passage (1-based against `sources`) and
/// the short code example it leads to. A piece is a copy of the sentence of `sources` that
/// holds it word for word, or else of one that holds at least [`COPIED`] of its words (at least
/// three); among several, the one holding the larger share, then the one in the passage the
/// piece cites, then the one the piece covers most. A piece that copies nothing (the model's
/// own words, "none"), that copies a sentence which does not read as an answer (a fragment, a
/// question, a link list: [`is_answer_sentence`]), or that is a passage's heading is left
/// out, as is a second copy of a sentence: the report prints what the passages say, and a
/// small model's own sentences gave real features the wrong purpose (docs/research.md,
/// "Quoted answers"). Copies are of one passage, that of the first copy: the sentences a small
/// model copies after the first from another passage are mostly about something else. Over
/// Uvicorn's and just's docs (Qwen2.5-Coder-1.5B, 41 calls, 2026-12-02) the first three copies
/// of other passages than the first copy's held 1 sentence of a located answer and 7 from
/// sections that answer nothing asked; printed under the part's heading, such a sentence made
/// three answers that held the located sentence wrong.
pub fn copied(reply: &str, sources: &[SourceRecord]) -> String {
    let pool = all_sentences(sources);
    let stems: Vec<Vec<String>> = pool
        .iter()
        .map(|s| content_stems(&s.candidate.sentence))
        .collect();
    let titles: Vec<Vec<String>> = sources.iter().map(|s| content_stems(&s.title)).collect();
    // The prose of the reply, within bounds (a server may ignore the token limit): a code
    // block the model copied is no sentence to match.
    let mut prose = String::new();
    let mut fences = Fences::default();
    for line in reply.lines().take(COPIED_LINES) {
        if fences.line(line) == FenceLine::Outside {
            prose.push_str(line);
        }
        prose.push('\n');
    }
    let mut picked: Vec<usize> = Vec::new();
    'lines: for line in prose.lines() {
        for piece in sentences(line) {
            if picked.len() >= COPIED_MOST {
                break 'lines;
            }
            let cited = crate::research::synthesis::markers_in(&piece);
            let bare = crate::research::synthesis::strip_markers(&piece);
            let words = content_stems(&bare);
            if words.len() < 3 {
                continue;
            }
            let best = pool
                .iter()
                .enumerate()
                .filter_map(|(i, s)| {
                    let c = &s.candidate;
                    let held = words.iter().filter(|w| stems[i].contains(w)).count();
                    let share = held as f64 / words.len() as f64;
                    let covered = held as f64 / stems[i].len().max(1) as f64;
                    let exact = crate::research::judge::verbatim(&bare, &c.sentence);
                    (exact || share >= COPIED).then_some((
                        exact,
                        share,
                        cited.contains(&c.n),
                        covered,
                        i,
                    ))
                })
                .max_by(|a, b| {
                    a.0.cmp(&b.0)
                        .then(a.1.total_cmp(&b.1))
                        .then(a.2.cmp(&b.2))
                        .then(a.3.total_cmp(&b.3))
                        .then(b.4.cmp(&a.4))
                });
            let Some((exact, .., i)) = best else {
                continue;
            };
            // A passage's heading copied ("[2] Dependencies › Running Recipes at the End of a
            // Recipe") is no sentence, though its words are in the sentences under it.
            let heading = !exact && titles.iter().any(|t| words.iter().all(|w| t.contains(w)));
            // A sentence copied twice is quoted once; a copy of another passage than the
            // first copy's is not quoted.
            let other = picked
                .first()
                .is_some_and(|f| pool[*f].candidate.n != pool[i].candidate.n);
            if pool[i].copyable && !heading && !other && !picked.contains(&i) {
                picked.push(i);
            }
        }
    }
    quoted_text(&pool, &picked, sources)
}

/// The answer's text for the sentences `picked` (indices into `pool`): each as the passage
/// writes it (roles and reference links tidied), with the number of its passage and the short code example it
/// leads to.
fn quoted_text(pool: &[Sentence], picked: &[usize], sources: &[SourceRecord]) -> String {
    let mut text = String::new();
    for (i, with_code) in in_context(pool, picked, sources) {
        let c = &pool[i].candidate;
        let code = c.code.as_ref().filter(|_| with_code);
        let sentence = as_rendered(&c.sentence);
        // A lead-in keeps its colon after its marker, with its code or without it (a block
        // too long to quote); a list item that leads to code without one gets one, and a
        // sentence ("… one of the following directories.") keeps its stop.
        let t = sentence.trim_end();
        let (body, colon) = match t.strip_suffix(':') {
            Some(lead) => (lead.trim_end(), ":"),
            None if code.is_none() || t.ends_with(['.', '!']) => (t, ""),
            None => (t, ":"),
        };
        text.push_str(&format!("{body} [{}]{colon}\n\n", c.n));
        if let Some(code) = code {
            text.push_str(&format!("{}\n\n", code.trim()));
        }
    }
    text.trim_end().to_owned()
}

/// Words that open a sentence which reads on from the one before it: a pronoun or determiner
/// whose referent is there ("You should use this in direnv configurations where you execute
/// code from the lockfile", whose "this" is `require_allowed`), or a connective ("Also like
/// scripts, context formatting is supported …", "Additionally, …", "But if the length is not
/// available … you can pass an explicit `length` to `typer.progressbar()`", after "The progress
/// bar is generated from the length of the iterable"). A blind reader of Typer's reports
/// (2026-12-04) flagged a dangling "But" and "And"; of 20 sentences opening with "But", "And"
/// or "Or" drawn at random from four corpora, all 20 went on from the one before.
const READS_ON: [&str; 31] = [
    "but",
    "and",
    "or",
    "yet",
    "this",
    "that",
    "these",
    "those",
    "it",
    "its",
    "it's",
    "they",
    "their",
    "them",
    "such",
    "both",
    "also",
    "additionally",
    "furthermore",
    "moreover",
    "however",
    "otherwise",
    "instead",
    "similarly",
    "likewise",
    "alternatively",
    "then",
    "thus",
    "therefore",
    "hence",
    "so",
];

/// Words after which "this" or "these" stands for something said before rather than a noun
/// that follows ("use this in …", "run these when …").
const AFTER_PRONOUN: [&str; 20] = [
    "in", "to", "for", "with", "when", "if", "on", "at", "by", "as", "is", "are", "was", "will",
    "can", "means", "allows", "does", "from", "instead",
];

/// Pronouns which, among a sentence's first words ([`EARLY_WORDS`]), stand for something the
/// sentence has not named yet: "Make sure it appears even after rvm, git-prompt and other shell
/// extensions" (direnv's hook guide, after "Add the following line at the end of the
/// `~/.bashrc` file:" and the line), "To enable it, …".
const EARLY_PRONOUNS: [&str; 6] = ["it", "its", "it's", "they", "them", "their"];

/// How many of a sentence's first words an [`EARLY_PRONOUNS`] pronoun reads on from among:
/// "When the hook runs, it …" names what "it" is first.
const EARLY_WORDS: usize = 4;

/// Nouns after which "this", "that", "these" or "those" point to what the passage showed
/// before: "In this example, `rich` prints the table" (after the example).
const BACK_NOUNS: [&str; 6] = ["example", "examples", "case", "cases", "snippet", "output"];

/// Whether `sentence` reads on from the sentence before it: it opens with a word of
/// [`READS_ON`], has a pronoun of [`EARLY_PRONOUNS`] among its first [`EARLY_WORDS`] words,
/// points back ("this example", [`BACK_NOUNS`]; "above", but not "3.8 and above"), or says
/// "this" or "these" as a pronoun ([`AFTER_PRONOUN`], or before punctuation).
fn reads_on(sentence: &str) -> bool {
    let words: Vec<String> = sentence
        .split_whitespace()
        .map(|w| w.to_lowercase())
        .collect();
    let bare = |w: &str| -> String {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_owned()
    };
    if words
        .first()
        .is_some_and(|w| READS_ON.contains(&bare(w).as_str()))
    {
        return true;
    }
    if words
        .iter()
        .take(EARLY_WORDS)
        .any(|w| !w.starts_with(['`', '-', '$']) && EARLY_PRONOUNS.contains(&bare(w).as_str()))
    {
        return true;
    }
    // "In this example, …", "In that case …", "the command above": what came before.
    let refers_back = words.iter().enumerate().any(|(i, w)| {
        let next = words.get(i + 1).map(|n| bare(n)).unwrap_or_default();
        let before = i
            .checked_sub(1)
            .map(|b| bare(&words[b]))
            .unwrap_or_default();
        (matches!(bare(w).as_str(), "this" | "that" | "these" | "those")
            && BACK_NOUNS.contains(&next.as_str()))
            || (bare(w) == "above" && !matches!(before.as_str(), "and" | "or"))
    });
    if refers_back {
        return true;
    }
    words.iter().enumerate().any(|(i, w)| {
        let pronoun = matches!(bare(w).as_str(), "this" | "these");
        let punctuated = w.ends_with([',', '.', ';', ':', '!', '?']);
        pronoun
            && !w.starts_with('`')
            && (punctuated
                || words
                    .get(i + 1)
                    .is_some_and(|next| AFTER_PRONOUN.contains(&bare(next).as_str())))
    })
}

/// The sentences before an opening that reads on ([`reads_on`]) which are printed with it: up
/// to this many of its paragraph, back to the paragraph's start; a longer paragraph gives the
/// sentences back to the first that does not read on. A sentence that opens its paragraph is
/// printed after the last sentence of the paragraph (or list item) before it in its passage,
/// with the code or list that one leads to.
const CONTEXT_MOST: usize = 3;

/// The sentences after a printed one that are printed with it, at most: the rest of its
/// paragraph (or list item), while they read as answers. Blind readers of chezmoi's, Textual's
/// and Helix's reports (2026-12-04) found the command a part asks for in the sentence right
/// after the one printed ("You can resolve differences with a merge tool by running `chezmoi
/// merge ~/.zshrc`" after "… prompt you what to do"; "This screen sub-class will prevent key
/// bindings on the app from being processed" after the one naming `ModalScreen`).
const AFTER_MOST: usize = 2;

/// `picked` (indices into `pool`) as printed: each passage's sentences in the order the
/// passage writes them (the passages in the order first picked), with what a sentence that
/// reads on needs before it. Two readers of direnv's and Hatch's reports (2026-12-03) found
/// "You should use this …", "Also like scripts, …" and "Additionally, …" printed without
/// what they refer to, and a sentence printed before the one it follows ("If the file exists"
/// before "Before each prompt …"). A list item's first sentence is printed after the list's
/// lead-in ([`list_lead_in`]); when that list is short enough to quote (the lead-in's code)
/// and the lead-in's code holds the item, the lead-in is printed with the whole list in place
/// of the items, otherwise without it (the `bool`: whether a sentence's code is printed with
/// it).
fn in_context(pool: &[Sentence], picked: &[usize], sources: &[SourceRecord]) -> Vec<(usize, bool)> {
    let mut all: Vec<usize> = Vec::new();
    // The lead-ins printed for an item of their list: (lead-in, item).
    let mut leads: Vec<(usize, usize)> = Vec::new();
    for &i in picked {
        let mut before: Vec<usize> = Vec::new();
        if pool.get(i).is_some_and(|x| reads_on(&x.candidate.sentence)) {
            let unit = pool[i].unit;
            match Some(unit_start(pool, i)).filter(|&start| start < i) {
                Some(start) if i - start <= CONTEXT_MOST => before.extend(start..i),
                Some(_) => {
                    let mut j = i;
                    while j > 0 && pool[j - 1].unit == unit && i - (j - 1) <= CONTEXT_MOST {
                        j -= 1;
                        if !reads_on(&pool[j].candidate.sentence) {
                            break;
                        }
                    }
                    before.extend(j..i);
                }
                // The paragraph's first: the last sentence before it in the passage, past
                // lines that read as none (an include marker, `{* docs_src/….py hl[9] *}`,
                // which Typer's docs put between a lead-in and the sentence about its code).
                // A lead-in counts though what it leads to is not in the passage.
                None => {
                    let n = pool[i].candidate.n;
                    let prose = |j: usize| {
                        pool[j].copyable || is_answer_sentence(&pool[j].candidate.sentence, true)
                    };
                    let k = (0..i)
                        .rev()
                        .take_while(|&j| pool[j].candidate.n == n)
                        .find(|&j| prose(j));
                    // Units are counted a paragraph each, with or without a sentence: a gap
                    // wider than the lines passed over is a paragraph with none (a table),
                    // and the sentence past it is not the one this reads on from.
                    if let Some(k) = k.filter(|&k| unit - pool[k].unit <= i - k) {
                        before.push(k);
                    }
                }
            }
        }
        // "This flag" in an option's description: the sentence that names the option.
        if let Some(d) = definition_of(pool, i).filter(|d| !before.contains(d)) {
            before.insert(0, d);
        }
        // An item printed (the one picked, or one before it that it reads on from) comes
        // after its list's lead-in.
        let items: Vec<usize> = before.iter().copied().chain([i]).collect();
        if let Some((j, k)) = items
            .iter()
            .find_map(|&k| list_lead_in(pool, k).map(|j| (j, k)))
        {
            if !before.contains(&j) {
                before.insert(0, j);
            }
            leads.push((j, k));
        }
        // The rest of its paragraph, up to [`AFTER_MOST`] sentences: documentation answers in
        // paragraphs, and the sentence that names the command or the setting most often
        // follows the one that says what it is for.
        let after = pool.get(i).map_or(0..0, |x| {
            let ends = (i + 1..pool.len())
                .take(AFTER_MOST)
                .take_while(|&j| {
                    pool[j].unit == x.unit
                        && pool[j].candidate.n == x.candidate.n
                        && (pool[j].copyable || pool[j].candidate.code.is_some())
                })
                .last()
                .map_or(i + 1, |j| j + 1);
            i + 1..ends
        });
        for k in before.into_iter().chain([i]).chain(after) {
            if k < pool.len() && !all.contains(&k) {
                all.push(k);
            }
        }
    }
    let passage_order: Vec<u32> = all.iter().fold(Vec::new(), |mut seen, &i| {
        if !seen.contains(&pool[i].candidate.n) {
            seen.push(pool[i].candidate.n);
        }
        seen
    });
    all.sort_by_key(|&i| {
        (
            passage_order.iter().position(|n| *n == pool[i].candidate.n),
            i,
        )
    });
    // A lead-in is printed with its list when the list is short enough to quote (its code),
    // whether it was picked or printed for an item picked, and then the list's items are not
    // printed again under it. An item alone answers with one entry of what was asked: mypy's
    // reports (2026-12-05) printed "In each directory, it will look for the following
    // configuration files (in this order)" over `setup.cfg` alone, the fourth of four, for
    // "which of these config files does it read"; chezmoi's FAQ, the third and fourth of
    // four steps to re-encrypt files.
    //
    // A lead-in printed for an item is printed over it, without its list, when its code stops
    // before the item (a list cut by a code block, as mypy's notes on `pyproject.toml` are),
    // or when the answer's check keeps it as no claim ([`stands`]: "This is computed from the
    // following items:", mypy) — its list would be dropped with it, and the item with the list.
    let with_code = |i: usize| {
        picked.contains(&i)
            || leads
                .iter()
                .filter(|(j, _)| *j == i)
                .all(|&(j, k)| lists(pool, j, k) && stands(pool, j, sources))
    };
    let list_of = |k: usize| list_lead_in(pool, unit_start(pool, k));
    let quoted_whole = |k: usize| {
        pool[k].item
            && list_of(k)
                .is_some_and(|j| j != k && all.contains(&j) && with_code(j) && lists(pool, j, k))
    };
    all.iter()
        .filter(|&&k| !quoted_whole(k))
        .map(|&i| (i, with_code(i)))
        .collect()
}

/// Whether lead-in `j` printed with its list is a claim of its own for the answer's check
/// ([`synthesis::validate_answer`](crate::research::synthesis::validate_answer)), which keeps a
/// lead-in that says too little ("For example:") or points back at a sentence not printed
/// ("This can be achieved with the following process:") as no claim, and its list goes with
/// it. The check's verdict rather than a guess at it by the words: "This flag accepts one of
/// four string values:" stands, "This is computed from the following items:" does not.
fn stands(pool: &[Sentence], j: usize, sources: &[SourceRecord]) -> bool {
    let text = quoted_text(pool, &[j], sources);
    let lead = tokens_of(&pool[j].candidate.sentence);
    let lead = &lead[..lead.len().min(4)];
    crate::research::synthesis::validate_answer("", &text, sources)
        .claims
        .iter()
        .any(|c| tokens_of(&c.text).starts_with(lead))
}

/// Whether the code of lead-in `j` (the list it leads to, [`block_after`]) holds item `k`:
/// the item's first words, in order.
fn lists(pool: &[Sentence], j: usize, k: usize) -> bool {
    let Some(code) = &pool[j].candidate.code else {
        return false;
    };
    let item = tokens_of(&pool[k].candidate.sentence);
    let first = &item[..item.len().min(8)];
    !first.is_empty() && tokens_of(code).windows(first.len()).any(|w| w == first)
}

/// The paragraphs back from a sentence saying "this flag" that the sentence naming the flag
/// is looked for in ([`definition_of`]).
const DEFINITION_MOST: usize = 4;

/// The sentence that names what sentence `i` calls "this flag", "this option", "these two
/// flags" (or setting, variable, command): the nearest sentence before it, in its passage and
/// within [`DEFINITION_MOST`] paragraphs, that opens with a name in code and a colon, as a
/// reStructuredText option or setting reads (`--warn-unused-ignores`: This flag will make mypy
/// report an error …", `research/rst.rs`) and as many Markdown references write theirs
/// ("- `--hidden`: Search hidden files"). Blind readers of mypy's reports (2026-12-04) found
/// "These two flags let you discover cases where either workarounds are no longer necessary"
/// printed as the answer to "can mypy list the ignore comments that no longer suppress
/// anything" without the flag it is about, two paragraphs further up. `None` when `i` opens
/// with a name itself, says no such thing, or no sentence before it names one.
fn definition_of(pool: &[Sentence], i: usize) -> Option<usize> {
    static THIS: OnceLock<Regex> = OnceLock::new();
    let this = crate::research::citations::regex(
        &THIS,
        r"(?i)\b(?:this|these(?:\s+two)?|both(?:\s+of\s+these)?)\s+(?:flags?|options?|settings?|switch(?:es)?|variables?|commands?)\b",
    );
    let x = pool.get(i)?;
    if opens_with_name(&x.candidate.sentence) || !this.is_match(&x.candidate.sentence) {
        return None;
    }
    (0..i)
        .rev()
        .take_while(|&j| {
            pool[j].candidate.n == x.candidate.n && x.unit - pool[j].unit <= DEFINITION_MOST
        })
        .find(|&j| opens_with_name(&pool[j].candidate.sentence))
}

/// Whether `sentence` opens with a name in code and a colon: "`--cache-dir DIR`: By default, …",
/// "**`logo`**: To set a logo …" (MkDocs' theme options).
fn opens_with_name(sentence: &str) -> bool {
    static NAME: OnceLock<Regex> = OnceLock::new();
    crate::research::citations::regex(&NAME, r"^(?:\*\*)?`[^`\n]+`(?:\*\*)?:\s")
        .is_match(sentence.trim_start())
}

/// The first sentence of the paragraph (or list item) sentence `i` is in.
fn unit_start(pool: &[Sentence], i: usize) -> usize {
    (0..i)
        .rev()
        .take_while(|&j| pool[j].unit == pool[i].unit)
        .last()
        .unwrap_or(i)
}

/// The lead-in of the list whose item sentence `i` opens: the sentence before the list, in the
/// same passage, when it leads in ([`leads_in`]: "There are three possible locations for a
/// `languages.toml` file:"), however long the list (a passage is a few hundred tokens). An item alone
/// often says which one it is and not of what: Helix's reports (2026-12-04) printed "In the
/// Helix source code, which lives in the Helix repository" and "In a `.helix` folder in your
/// project", two of the three places a `languages.toml` file is read from, without the
/// sentence that says so.
fn list_lead_in(pool: &[Sentence], i: usize) -> Option<usize> {
    let x = pool.get(i)?;
    if !x.item || unit_start(pool, i) != i {
        return None;
    }
    for j in (0..i).rev() {
        let y = &pool[j];
        if y.candidate.n != x.candidate.n {
            return None;
        }
        // A lead-in to a code block leads to the code: the list after it is another's
        // (Textual's annotations of an example, "1. Setting this reactive attribute invokes
        // a watcher.", after "The following app is intended to cycle through …").
        if !y.item {
            return (leads_in(&y.candidate.sentence) && !y.block).then_some(j);
        }
    }
    None
}

/// The sentences a model picks from, at most: the part's likeliest answers, best first.
pub const PICK_CHOICES: usize = 8;

/// The sentences ranked by the part's words that meaning may bring among the
/// [`PICK_CHOICES`] listed, at most (`generate::listing_order`).
pub const PICK_POOL: usize = 16;

/// The sentences of a part's passages as the targeted pass asking for sentences by number
/// shows them (`[research] quote_parts`): those a copy of which may be quoted
/// ([`Sentence::copyable`]), the [`PICK_CHOICES`] holding the largest share of the part's
/// weighed words first ([`parts::share`]; ties in the passages' order), a line each, numbered
/// `(1)`, `(2)`, …, with the section they are from.
///
/// Why a short, ranked list rather than the passages: asked over whole passages numbered a
/// sentence a line, Qwen2.5-Coder-1.5B named the example of its instructions or `(1)` more
/// than what it read; over the eight likeliest sentences, best first, it named a located
/// answer more often than the word ranking's first alone, in a prompt read in a third of the
/// time (docs/research.md, "Sentences picked by number").
pub struct Numbered {
    /// The sentences as shown.
    pub text: String,
    /// How many passages the sentences shown come from, counted from the first: the prompt
    /// read the first `shown` of `sources`.
    pub shown: usize,
    /// The sentence each number shown stands for: `(k)` is `numbers[k - 1]`, an index into
    /// the sentences of `sources` ([`chosen`] reads it back).
    pub numbers: Vec<usize>,
}

/// The section a passage's title names (`README.md:195-229 — Setting up` → `Setting up`), or
/// its file when it names none (`README.md:195-229` → `README.md`): the titles
/// `sources::local::passage_record` writes. Lines are left out: the model reads numbers in a
/// line as picks.
fn section_of(title: &str) -> &str {
    let title = title.trim();
    match title.split_once(" \u{2014} ") {
        Some((_, section)) if !section.trim().is_empty() => section.trim(),
        _ => title
            .rsplit_once(':')
            .filter(|(_, lines)| lines.chars().all(|c| c.is_ascii_digit() || c == '-'))
            .map_or(title, |(path, _)| path),
    }
}

/// `sources`' sentences numbered for the model to pick the answer to `part` from
/// ([`Numbered`]), within `total_tokens` (the first sentence is always shown), in the order of
/// the words ([`choices`]).
pub fn numbered(
    sources: &[SourceRecord],
    part: &QuestionPart,
    encoding: Encoding,
    total_tokens: usize,
) -> Numbered {
    let order: Vec<usize> = choices(sources, part, PICK_CHOICES)
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    numbered_in(sources, &order, encoding, total_tokens)
}

/// The sentences a part may be answered by, at most `most`: those of `sources` a copy of
/// which may be quoted ([`Sentence::copyable`]), the largest share of the part's weighed
/// words first ([`parts::share`]; ties in the passages' order), each as its index among the
/// passages' sentences and its text. [`numbered_in`] lists them in this order or another.
pub fn choices(sources: &[SourceRecord], part: &QuestionPart, most: usize) -> Vec<(usize, String)> {
    let pool = all_sentences(sources);
    let mut ranked: Vec<(f64, usize)> = pool
        .iter()
        .enumerate()
        .filter(|(_, x)| x.copyable)
        .map(|(i, x)| (parts::share(&x.candidate.sentence, part), i))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    // A sentence the passages say twice is listed once: pnpm's catalogs page comments two
    // examples alike ("# Can be referenced through "catalog:react18""), and the two copies of
    // two comments took half of a list of eight.
    let mut listed = std::collections::HashSet::new();
    ranked
        .into_iter()
        .filter(|(_, i)| listed.insert(pool[*i].candidate.sentence.as_str()))
        .take(most)
        .map(|(_, i)| (i, pool[i].candidate.sentence.clone()))
        .collect()
}

/// The sentences `order` names (indices among the sentences of `sources`, as [`choices`]
/// gives them), the first [`PICK_CHOICES`] of it, numbered in that order ([`Numbered`]) within
/// `total_tokens` (the first sentence is always shown); an index that names no sentence is
/// passed over.
pub fn numbered_in(
    sources: &[SourceRecord],
    order: &[usize],
    encoding: Encoding,
    total_tokens: usize,
) -> Numbered {
    let pool = all_sentences(sources);
    let mut out = Numbered {
        text: String::new(),
        shown: 0,
        numbers: Vec::new(),
    };
    let mut used = 0;
    for &i in order.iter().filter(|&&i| i < pool.len()).take(PICK_CHOICES) {
        let c = &pool[i].candidate;
        let section = sources
            .get(c.n as usize - 1)
            .map_or("", |s| section_of(&s.title));
        let line = format!(
            "({}) {}  \u{2014} {section}\n",
            out.numbers.len() + 1,
            c.sentence.trim()
        );
        let cost = count_tokens(&line, encoding);
        if used + cost > total_tokens && !out.numbers.is_empty() {
            break;
        }
        used += cost;
        out.text.push_str(&line);
        out.numbers.push(i);
        out.shown = out.shown.max(c.n as usize);
    }
    out.text = out.text.trim_end().to_owned();
    // With no sentence to list, the first passage still counts as read.
    if out.shown == 0 && !sources.is_empty() {
        out.shown = 1;
    }
    out
}

/// The numbers a reply names: every `(k)` in it that does not follow a word, or, for a reply
/// of nothing but numbers and separators ("4, 7"), those. `None` for a reply in words without
/// such a number: the model copied sentences instead, or wrote its own. All 106 replies of
/// Qwen2.5-Coder-1.5B to the pick prompt recorded on 2026-12-02 were `(k)` or `(k), (m)`; of
/// 153 replies it copied sentences in, one held a `(k)`, a man page's section in
/// "the direnv-stdlib(1) man page", which is no pick.
fn numbers_named(reply: &str) -> Option<Vec<usize>> {
    static PAREN: OnceLock<Regex> = OnceLock::new();
    let paren =
        PAREN.get_or_init(|| Regex::new(r"(?:^|[^\w\-])\((\d{1,4})\)").expect("valid pattern"));
    let named: Vec<usize> = paren
        .captures_iter(reply)
        .filter_map(|c| c[1].parse().ok())
        .collect();
    if !named.is_empty() {
        return Some(named);
    }
    let bare = reply
        .trim()
        .trim_end_matches('.')
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '&')
        .filter(|w| !w.is_empty() && !w.eq_ignore_ascii_case("and"))
        .map(|w| w.trim_matches(['(', ')', '#']).parse::<usize>().ok())
        .collect::<Option<Vec<usize>>>()?;
    (!bare.is_empty()).then_some(bare)
}

/// What a model asked to name the sentences that answer a part ([`numbered`]) picked, as the
/// answer's text: the sentences whose numbers its reply names ([`numbers_named`]), in the
/// order named, at most [`COPIED_MOST`], each once and of the first one's passage, as
/// [`copied`] prints a copy. `(0)`, and a number that was not shown, name nothing. (Over the
/// trial's 55 parts, of the sentences named after the first, 2 of 12 from another passage were
/// of a located answer, both beside a first that was; 5 of 12 from the same passage.) A reply in words is read as copies ([`copied`]):
/// asked for numbers, a model may still copy.
///
/// Why numbers: asked to copy the sentences that answer a part over the same passages,
/// Qwen2.5-Coder-1.5B copied the question back, a heading or a neighbouring sentence; asked to
/// name them by number it named the located answer more often and in about half the time
/// (docs/research.md, "Sentences picked by number").
pub fn chosen(reply: &str, sources: &[SourceRecord], numbers: &[usize]) -> String {
    match named(reply, sources, numbers) {
        Some(named) => chosen_named(&named, sources),
        None => copied(reply, sources),
    }
}

/// A sentence a model named by number ([`numbered`]): its place among the passages' sentences
/// and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    at: usize,
    pub text: String,
}

/// The shown sentences `reply` names ([`numbers_named`]), each once, in the order named; `None`
/// for a reply in words (read as copies, [`copied`]).
pub fn named(reply: &str, sources: &[SourceRecord], numbers: &[usize]) -> Option<Vec<Named>> {
    let pool = all_sentences(sources);
    let mut out: Vec<Named> = Vec::new();
    for k in numbers_named(reply)? {
        if let Some(&at) = k.checked_sub(1).and_then(|k| numbers.get(k))
            && let Some(x) = pool.get(at)
            && !out.iter().any(|n| n.at == at)
        {
            out.push(Named {
                at,
                text: x.candidate.sentence.clone(),
            });
        }
    }
    Some(out)
}

/// The answer's text for the sentences `named`: at most [`COPIED_MOST`], of the first one's
/// passage, printed in the passage's order with what they need ([`in_context`]). The first
/// decides the passage, so the order changes what is printed: with an
/// embedding model the picks are taken nearest the part first
/// ([`crate::research::meaning::Meaning::nearest_first`]; over the 178 located parts,
/// docs/research.md "The encoder in the pick", a located sentence was printed for 95 parts
/// against 91 in the model's order, in as many sentences).
pub fn chosen_named(named: &[Named], sources: &[SourceRecord]) -> String {
    let pool = all_sentences(sources);
    let mut picked: Vec<usize> = Vec::new();
    for n in named {
        let Some(x) = pool.get(n.at) else {
            continue;
        };
        // As for copies, the sentences of the first one's passage.
        let other = picked
            .first()
            .is_some_and(|f| pool[*f].candidate.n != x.candidate.n);
        if !other && picked.len() < COPIED_MOST {
            picked.push(n.at);
        }
    }
    quoted_text(&pool, &picked, sources)
}

/// The text of `quoted`: under a bold line per part when the question has several, and a
/// sentence saying so for a part that found nothing.
pub fn render(all: &[QuestionPart], quoted: &Quoted) -> String {
    let mut text = String::new();
    for (p, lines) in &quoted.sections {
        if all.len() > 1 {
            text.push_str(&format!("**{}. {}**\n\n", p + 1, all[*p].text));
        }
        if lines.is_empty() {
            // Not "no source has one": sentences are what was looked for (a reader found the
            // answer in a passage's code); the end of the synthesis says where to look.
            text.push_str("No sentence was quoted for this part; the passages may still answer it in other words, and those most about it are named below.\n\n");
        } else {
            text.push_str(&lines.join("\n"));
            text.push_str("\n\n");
        }
    }
    text.trim_end().to_owned()
}

/// What an extractive synthesis that could quote no sentence says before its pointers: the
/// rule that quotes, and that the passages may still answer. Two readers of just's reports
/// (2026-12-02) called the earlier "No sentence of the passages found holds enough of a part's
/// words to be quoted for it" misleading where a sentence held most of the part's wording, if
/// under half of its weight.
pub const QUOTED_NOTHING: &str = "No sentence was quoted: a quote needs one sentence holding at least half of a part's words (each weighed by its rarity), and no sentence of the passages found does. The passages may still answer in other words; those most about each part are listed below, to read.";

/// The answer when no model answers (or its answer was not kept): the quoted sentences of
/// [`quote`] for every part, labelled as extractive with `reason`. Returns the text and its
/// claims (numbered against `sources`, 1-based).
pub fn extractive(
    question: &str,
    sources: &[SourceRecord],
    reason: &str,
) -> (String, Vec<(String, Vec<u32>)>) {
    let all = parts::parts_for(question, sources);
    let wanted: Vec<usize> = (0..all.len()).collect();
    let quoted = quote(question, &all, &wanted, sources);
    let mut text = format!(
        "*Extractive synthesis — {reason}. These are sentences quoted from the sources, the best for each part of the question; no model wrote them.*\n\n"
    );
    // With no sentence quoted at all, the passages are still there to read: over MkDocs' docs
    // "None of the retrieved sources has a sentence about the question" was printed for a
    // question whose three answers (`edit_uri`, `repo_name`) were among them, and over attrs'
    // docs "No sentence of the sources found answers the question as asked" above a pointer to
    // the passage that says "Converters are run *before* validators". What was looked for is
    // said, not what the sources lack: the report knows which sentences it could quote.
    if quoted.claims.is_empty() {
        text.push_str(QUOTED_NOTHING);
    } else {
        text.push_str(&render(&all, &quoted));
    }
    let missing: Vec<String> = quoted
        .unanswered
        .iter()
        .map(|p| {
            let pointed: Vec<u32> = parts::most_about(question, *p, sources, |_| false)
                .into_iter()
                .map(|i| i as u32 + 1)
                .collect();
            parts::unanswered_line(&all[*p].text, "", &pointed, false, &[])
        })
        .collect();
    if !missing.is_empty() {
        text.push_str("\n\n");
        text.push_str(&missing.join(" "));
    }
    (text, quoted.claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(title: &str, snippet: &str) -> SourceRecord {
        SourceRecord {
            key: format!("file:{title}"),
            title: title.into(),
            snippet: snippet.into(),
            venue_type: "workspace".into(),
            credibility: crate::store::Credibility {
                score: 0.5,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_comment_over_example_lines_is_a_sentence_with_its_lines() {
        // Starship's first configuration example, shortened: the lead-in keeps the block,
        // and the comments that say what the lines under them do are sentences of their own.
        let page = "# Configuration\n\nAll configuration is done in this file:\n\n```toml\n# Get editor completions based on the config schema\n\"$schema\" = 'https://starship.rs/config-schema.json'\n\n# Blank lines\nadd_newline = true\n\n# disable the package module, hiding it\n# from the prompt completely.\n[package]\ndisabled = true\n\n# A comment with nothing under it\n```\n\n```console\n$ starship init\n# Are you sure you want to do that now? [y/N]:\nn\n```\n";
        let units = units(&source("docs/config/README.md", page));
        let said: Vec<(&str, Option<&str>)> = units
            .iter()
            .map(|u| (u.text.as_str(), u.code.as_deref()))
            .collect();
        assert_eq!(said.len(), 3, "{said:#?}");
        assert_eq!(said[0].0, "All configuration is done in this file:");
        assert!(said[0].1.is_some_and(|c| c.contains("add_newline = true")));
        assert_eq!(
            said[1],
            (
                "Get editor completions based on the config schema:",
                Some("```toml\n\"$schema\" = 'https://starship.rs/config-schema.json'\n```")
            )
        );
        // Lines in a row are one comment; it opens as a sentence; a short one is no sentence.
        assert_eq!(
            said[2],
            (
                "Disable the package module, hiding it from the prompt completely:",
                Some("```toml\n[package]\ndisabled = true\n```")
            )
        );
        // Listed for a pick as any sentence is, with its lines.
        let all = all_sentences(&[source("docs/config/README.md", page)]);
        let schema = all
            .iter()
            .find(|s| s.candidate.sentence.starts_with("Get editor"))
            .expect("listed");
        assert!(schema.answer && schema.candidate.code.is_some());
        // Said alike in two examples, it is listed once.
        let twice = format!(
            "{page}\n```yaml\n# Get editor completions based on the config schema\nschema: x\n```\n"
        );
        let part = parts::parts_of("how do I get editor completions for the config").remove(0);
        let listed = choices(&[source("docs/config/README.md", &twice)], &part, 8);
        assert_eq!(
            listed
                .iter()
                .filter(|(_, t)| t.starts_with("Get editor"))
                .count(),
            1,
            "{listed:?}"
        );
    }

    #[test]
    fn the_filter_keeps_statements_and_leaves_out_fragments_questions_and_links() {
        // Sentences a fallback report picked from a Python tutorial: none reads as an answer.
        for bad in [
            "Like other collection types (_dictionaries, lists, tuples_), `sets` support:",
            "You can create a generator expression like this:",
            "With so many options, how do you decide what to reach for when formatting Python strings?",
            "The [official documentation](https://docs.python.org/3/) and [PEP 498](https://peps.python.org/pep-0498/) are good places to start.",
            "See [Sets](sets.md) for more.",
            "In this tutorial, you'll learn about sets.",
            "sets support membership tests and are unordered.",
            "Sets are unordered",
            "For example:",
        ] {
            assert!(!is_answer_sentence(bad, false), "{bad}");
        }
        for good in [
            "A set is an unordered collection with no duplicate elements.",
            "Membership testing with `in` is much faster on a set than on a list.",
            "Generator expressions produce items one at a time, so they use far less memory than a list comprehension.",
            "`str.format()` replaces the fields in braces with its arguments.",
            // A link's text is the first word (chezmoi's command overview).
            "[`chezmoi data`](/reference/commands/data.md) prints the available template data.",
        ] {
            assert!(is_answer_sentence(good, false), "{good}");
        }
        assert!(!is_answer_sentence(
            "[Sets](sets.md) and [lists](lists.md) and [tuples](tuples.md).",
            false
        ));
        // A lead-in is kept only with the code it introduces.
        let lead = "To send a GET request, call `httpx.get()` with the URL:";
        assert!(!is_answer_sentence(lead, false));
        assert!(is_answer_sentence(lead, true));
    }

    #[test]
    fn one_sentence_per_part_in_the_order_of_the_parts_with_its_code() {
        let sources = vec![
            source(
                "docs/sets.md",
                "# Sets\n\nLike other collection types (_dictionaries, lists, tuples_), `sets` support:\n\n- membership\n\nA set is an unordered collection, so it keeps no insertion order.\n\nMembership tests on a set take constant time, faster than on a list.",
            ),
            source(
                "docs/generators.md",
                "# Generators\n\nYou can create a generator expression like this:\n\n```python\nsquares = (x * x for x in range(10))\n```\n\nA generator yields items one at a time and uses little memory.",
            ),
            source(
                "docs/quickstart.md",
                "## Requests\n\nTo make a request with a timeout, pass `timeout` to the call:\n\n```python\nhttpx.get(url, timeout=5.0)\n```\n",
            ),
        ];
        let (text, claims) = extractive(
            "how fast are membership tests on a set, which collection keeps insertion order, and how do I set a request timeout",
            &sources,
            "no model was reachable",
        );
        assert!(text.starts_with("*Extractive synthesis — no model was reachable."));
        let membership = text.find("Membership tests on a set").expect(&text);
        let order = text.find("A set is an unordered collection").expect(&text);
        let timeout = text.find("To make a request with a timeout").expect(&text);
        assert!(membership < order && order < timeout, "{text}");
        assert!(
            text.contains("pass `timeout` to the call: [3]\n\n  ```python\n  httpx.get(url, timeout=5.0)\n  ```"),
            "{text}"
        );
        assert!(!text.contains("support:"), "{text}");
        assert!(!text.contains("like this"), "{text}");
        assert_eq!(claims.len(), 3);
        assert_eq!(claims[0].1, vec![1]);
    }

    /// just's "Private Recipes" section and a neighbour, as the targeted pass showed them.
    fn just_passages() -> Vec<SourceRecord> {
        let mut dependencies = source(
            "docs/dependencies.md",
            "Recipes can have subsequent dependencies, which run immediately after the recipe and are introduced with an `&&`.\n\nDependencies run before recipes that depend on them.",
        );
        dependencies.title =
            "README.md:1406-1441 — Dependencies › Running Recipes at the End of a Recipe".into();
        vec![
            source(
                "README.md",
                "Recipes and aliases whose name starts with a `_` are omitted from `just --list`:\n\n```just\ntest: _test-helper\n  ./bin/test\n\n_test-helper:\n  ./bin/super-secret-test-helper-stuff\n```\n\nThe `[private]` attribute<sup>1.10.0</sup> may also be used to hide recipes or aliases without needing to change the name:\n\n```just\n[private]\nfoo:\n\n[private]\nalias b := bar\n```\n\nThis is useful for helper recipes which are only meant to be used as dependencies of other recipes.",
            ),
            dependencies,
        ]
    }

    #[test]
    fn a_copy_is_printed_as_the_passage_writes_it_with_its_code_and_the_model_s_own_words_are_left_out()
     {
        let sources = just_passages();
        // Qwen2.5-Coder-1.5B's reply to "how do I hide the helpers — they're only used as
        // dependencies of other recipes — ideally without renaming all of them" (2026-12-02):
        // the passage numbers in front, a sentence copied without its <sup>, then one of the
        // other passage, about something else and cut short: not quoted.
        let reply = "[1] Recipes and aliases whose name starts with a `_` are omitted from `just --list`.\n[1] The `[private]` attribute may also be used to hide recipes or aliases without needing to change the name.\n[2] Recipes can have subsequent dependencies, which run immediately after";
        let text = copied(reply, &sources);
        assert_eq!(
            text,
            "Recipes and aliases whose name starts with a `_` are omitted from `just --list` [1]:\n\n```just\ntest: _test-helper\n  ./bin/test\n\n_test-helper:\n  ./bin/super-secret-test-helper-stuff\n```\n\nThe `[private]` attribute<sup>1.10.0</sup> may also be used to hide recipes or aliases without needing to change the name [1]:\n\n```just\n[private]\nfoo:\n\n[private]\nalias b := bar\n```"
        );
        // What the run checks next reads it as two sentences, each citing its passage.
        let v = crate::research::synthesis::validate_answer(
            "how do I hide the helpers",
            &text,
            &sources,
        );
        let cited: Vec<Vec<u32>> = v.claims.iter().map(|c| c.sources.clone()).collect();
        assert_eq!(cited, vec![vec![1], vec![1]], "{v:?}");
        // The first copy names the passage: the other's sentence alone is quoted.
        assert_eq!(
            copied(
                "[2] Dependencies run before recipes that depend on them.\n[1] The `[private]` attribute may also be used to hide recipes or aliases without needing to change the name.",
                &sources
            ),
            "Dependencies run before recipes that depend on them. [2]"
        );
        // The model's own words, however close to the passages' topic, are not a copy; nor is
        // "none", a passage's heading or a piece of fewer than three words that count.
        for own in [
            "To hide helper recipes, you can rename them to start with an underscore [1].",
            // Qwen2.5-Coder-1.5B listed the passages' headings once (2026-12-02).
            "[2] Dependencies › Running Recipes at the End of a Recipe",
            "none",
            "The `[private]` attribute may be used [1].",
        ] {
            assert_eq!(copied(own, &sources), "", "{own}");
        }
        let twice = "Dependencies run before recipes that depend on them [2].\nDependencies run before recipes that depend on them [2].";
        assert_eq!(
            copied(twice, &sources),
            "Dependencies run before recipes that depend on them. [2]"
        );
    }

    #[test]
    fn a_copy_that_cites_a_passage_is_matched_there_first() {
        let sources = vec![
            source("a.md", "The cache is cleared when the server restarts."),
            source(
                "b.md",
                "The cache is cleared when the server restarts, unless it is pinned.",
            ),
        ];
        assert_eq!(
            copied(
                "The cache is cleared when the server restarts [2]",
                &sources
            ),
            "The cache is cleared when the server restarts, unless it is pinned. [2]"
        );
        assert_eq!(
            copied("The cache is cleared when the server restarts.", &sources),
            "The cache is cleared when the server restarts. [1]"
        );
    }

    #[test]
    fn a_copy_word_for_word_is_of_the_sentence_that_holds_it_whatever_it_cites() {
        // The same words in another order, in the passage the copy cites ("like [2]" is the
        // instruction's example).
        let sources = vec![
            source("a.md", "The cache is cleared when the server restarts."),
            source("b.md", "The server restarts when the cache is cleared."),
        ];
        assert_eq!(
            copied(
                "The cache is cleared when the server restarts [2]",
                &sources
            ),
            "The cache is cleared when the server restarts. [1]"
        );
    }

    #[test]
    fn a_copy_of_a_fragment_is_left_out_not_swapped_for_a_sentence_of_its_words() {
        // A list item that does not read as an answer, and a sentence holding its words that
        // says the opposite.
        let sources = vec![source(
            "docs/reload.md",
            "- restart the server when files change\n\nThe server does not restart when files change in production.",
        )];
        assert_eq!(
            copied("restart the server when files change [1]", &sources),
            ""
        );
        assert_eq!(
            copied(
                "The server does not restart when files change in production [1]",
                &sources
            ),
            "The server does not restart when files change in production. [1]"
        );
    }

    #[test]
    fn a_navigation_phrase_inside_a_word_is_no_navigation() {
        assert!(is_answer_sentence(
            "If you'd prefer to opt in to each preview rule individually, you can toggle the `explicit-preview-rules` setting.",
            false
        ));
        assert!(!is_answer_sentence(
            "For the details of each option, refer to the settings page.",
            false
        ));
    }

    /// fzf's README (2026-12-02): the list items that answer end without a full stop.
    #[test]
    fn a_copied_list_item_without_a_full_stop_is_quoted() {
        let sources = vec![source(
            "README.md",
            "Compared to the seemingly equivalent command substitution `vim \"$(fzf)\"`, this\napproach has several advantages:\n\n* Vim will not open an empty file when you terminate fzf with\n  <kbd>CTRL-C</kbd>\n* Vim will not open an empty file when you press <kbd>ENTER</kbd> on an empty\n  result\n* restart the server when files change\n",
        )];
        let text = copied(
            "[1] Vim will not open an empty file when you terminate fzf with <kbd>CTRL-C</kbd>\n[1] restart the server when files change",
            &sources,
        );
        // Quoted: the list it is in, short, whole after the list's lead-in.
        assert_eq!(
            text,
            "Compared to the seemingly equivalent command substitution `vim \"$(fzf)\"`, this approach has several advantages [1]:\n\n```text\n* Vim will not open an empty file when you terminate fzf with\n  <kbd>CTRL-C</kbd>\n* Vim will not open an empty file when you press <kbd>ENTER</kbd> on an empty\n  result\n* restart the server when files change\n```"
        );
        // A list item that leads to its code without a colon is quoted with it.
        let sources = vec![source(
            "ADVANCED.md",
            "- Ripgrep prints the matching lines in the following format\n  ```\n  man/man1/fzf.1:54:.BI \"--algo=\" TYPE\n  ```\n- The first token delimited by `:` is the file path.\n",
        )];
        assert_eq!(
            copied(
                "[1] Ripgrep prints the matching lines in the following format",
                &sources
            ),
            "Ripgrep prints the matching lines in the following format [1]:\n\n```\n  man/man1/fzf.1:54:.BI \"--algo=\" TYPE\n```"
        );
    }

    #[test]
    fn at_most_three_sentences_are_quoted_and_a_copied_code_block_is_no_sentence() {
        let sources = vec![source(
            "docs/notes.md",
            "The first note is about caching entries.\n\nThe second note is about retrying requests.\n\nThe third note is about logging errors.\n\nThe fourth note is about metrics exports.",
        )];
        let reply = "The first note is about caching entries [1].\n```\nThe fourth note is about metrics exports.\n```\nThe second note is about retrying requests [1].\nThe third note is about logging errors [1].\nThe fourth note is about metrics exports [1].";
        assert_eq!(
            copied(reply, &sources),
            "The first note is about caching entries. [1]\n\nThe second note is about retrying requests. [1]\n\nThe third note is about logging errors. [1]"
        );
    }

    #[test]
    fn a_lead_in_is_quoted_with_the_table_or_list_it_leads_to() {
        let hatch = [source(
            "docs/config/hatch.md",
            "Configuration for Hatch itself is stored in a `config.toml` file located by default in one of the following platform-specific directories.\n\n| Platform | Path |\n| --- | --- |\n| macOS | `~/Library/Application Support/hatch` |\n| Unix | `$XDG_CONFIG_HOME/hatch` |\n\nYou can select a custom path to the file using the `--config` root option.\n",
        )];
        assert_eq!(
            copied(
                "Configuration for Hatch itself is stored in a `config.toml` file located by default in one of the following platform-specific directories.",
                &hatch
            ),
            "Configuration for Hatch itself is stored in a `config.toml` file located by default in one of the following platform-specific directories. [1]\n\n```text\n| Platform | Path |\n| --- | --- |\n| macOS | `~/Library/Application Support/hatch` |\n| Unix | `$XDG_CONFIG_HOME/hatch` |\n```"
        );
        // A lead-in's list, its items' lines and the blank lines between them; not what
        // comes after the list.
        let list = "The flags that also search hidden and ignored files are these:\n\n1. `--hidden` searches hidden files\n   and directories.\n\n2. `--no-ignore` searches ignored files.\n\nThe configuration file is read first.\n";
        let guide = [source("GUIDE.md", list)];
        assert_eq!(
            copied(
                "The flags that also search hidden and ignored files are these:",
                &guide
            ),
            "The flags that also search hidden and ignored files are these [1]:\n\n```text\n1. `--hidden` searches hidden files\n   and directories.\n\n2. `--no-ignore` searches ignored files.\n```"
        );
        // Too long a list to quote: the lead-in is no sentence, as before.
        let long = format!(
            "The flags that also search hidden and ignored files are these:\n\n{}",
            (1..=30)
                .map(|i| format!("- `--flag-{i}` does thing number {i}.\n"))
                .collect::<String>()
        );
        assert_eq!(
            copied(
                "The flags that also search hidden and ignored files are these:",
                &[source("GUIDE.md", &long)]
            ),
            ""
        );
        // A sentence that leads to nothing quotable stays as it was.
        assert_eq!(
            copied(
                "The following sections explain how the cache is kept.",
                &[source(
                    "a.md",
                    "The following sections explain how the cache is kept.\n\n## Cache\n\nIt is kept.\n"
                )]
            ),
            "The following sections explain how the cache is kept. [1]"
        );
    }

    #[test]
    fn a_sentence_that_reads_on_is_printed_with_what_it_refers_to_in_the_passage_s_order() {
        let stdlib = [source(
            "man/direnv-stdlib.1.md",
            "Adds a list of files to the allow-list for `.envrc` using the `require_allowed` command. If any of the specified files are modified, direnv will require you to run `direnv allow` again. This increases security by ensuring that only changes you allowed take effect. You should use this in direnv configurations where you execute code from the lockfile.\n\nAll commands are able to use any defined scripts. Also like scripts, context formatting is supported by the commands.\n",
        )];
        // Its paragraph back to the start (three sentences or fewer before it).
        assert_eq!(
            copied(
                "You should use this in direnv configurations where you execute code from the lockfile.",
                &stdlib
            ),
            "Adds a list of files to the allow-list for `.envrc` using the `require_allowed` command. [1]\n\nIf any of the specified files are modified, direnv will require you to run `direnv allow` again. [1]\n\nThis increases security by ensuring that only changes you allowed take effect. [1]\n\nYou should use this in direnv configurations where you execute code from the lockfile. [1]"
        );
        // A connective: the sentence before. And two picks of a passage in its order, the
        // first with the rest of its paragraph.
        assert_eq!(
            copied(
                "Also like scripts, context formatting is supported by the commands. If any of the specified files are modified, direnv will require you to run `direnv allow` again.",
                &stdlib
            ),
            "If any of the specified files are modified, direnv will require you to run `direnv allow` again. [1]\n\nThis increases security by ensuring that only changes you allowed take effect. [1]\n\nYou should use this in direnv configurations where you execute code from the lockfile. [1]\n\nAll commands are able to use any defined scripts. [1]\n\nAlso like scripts, context formatting is supported by the commands. [1]"
        );
        // Words that only look like it: "Thistle", "this" before its noun, `this` as code.
        assert!(!reads_on("Thistle is a plant that grows here."));
        assert!(!reads_on("Set this option to choose the shell."));
        assert!(!reads_on(
            "The keyword `this` is reserved in the templates."
        ));
        assert!(reads_on("It's creating the file."));
        assert!(reads_on("Make sure it appears after rvm."));
        assert!(reads_on("To enable them, run the command."));
        assert!(!reads_on("When the hook runs, it exports the variables."));
        assert!(!reads_on("Run `it` as the first command."));
        assert!(!reads_on(
            "$ docker run -it --platform linux/amd64 nixos/nix"
        ));
        assert!(reads_on("In this example, the option is required."));
        assert!(reads_on("But you can access the context with a parameter."));
        assert!(reads_on("And inside of the function, use the `runner`."));
        assert!(!reads_on("Android builds are not covered."));
        assert!(!reads_on("Order matters for the hooks."));
        let progress = [source(
            "docs/tutorial/progressbar.md",
            "### Setting a Progress Bar `length`\n\nThe progress bar is generated from the length of the iterable (e.g. the list of users).\n\nBut if the length is not available (for example, with something that fetches a new user from a web API each time) you can pass an explicit `length` to `typer.progressbar()`.\n\n{* docs_src/progressbar/tutorial004_py310.py hl[18] *}\n",
        )];
        assert_eq!(
            copied(
                "But if the length is not available (for example, with something that fetches a new user from a web API each time) you can pass an explicit `length` to `typer.progressbar()`.",
                &progress
            ),
            "The progress bar is generated from the length of the iterable (e.g. the list of users). [1]\n\nBut if the length is not available (for example, with something that fetches a new user from a web API each time) you can pass an explicit `length` to `typer.progressbar()`. [1]"
        );
        assert!(reads_on("The command above prints the table."));
        assert!(!reads_on("Python 3.8 and above is supported by the tool."));
        assert!(reads_on("\"Additionally\", it says."));
        assert!(reads_on("You can find all of these, in order."));
    }

    /// mypy's "Configuring warnings" passage as research reads it (`research/rst.rs` puts the
    /// option's name before its first paragraph); blind readers found "These two flags …"
    /// printed without the flag (2026-12-04).
    #[test]
    fn a_sentence_saying_this_flag_is_printed_with_the_sentence_naming_the_flag() {
        let warnings = [source(
            "docs/source/command_line.rst",
            "## Configuring warnings\n\n\nThe following flags enable warnings for code that is sound but is\npotentially problematic or redundant in some way.\n\n\n\n`--warn-redundant-casts`: This flag will make mypy report an error whenever your code uses\nan unnecessary cast that can safely be removed.\n\n\n\n`--warn-unused-ignores`: This flag will make mypy report an error whenever your code uses\na `# type: ignore` comment on a line that is not actually\ngenerating an error message.\n\nThis flag, along with the `--warn-redundant-casts` flag, are both\nparticularly useful when you are upgrading mypy. Previously,\nyou may have needed to add casts or `# type: ignore` annotations\nto work around bugs in mypy or missing stubs for 3rd party libraries.\n\nThese two flags let you discover cases where either workarounds are\nno longer necessary.\n",
        )];
        assert_eq!(
            copied(
                "These two flags let you discover cases where either workarounds are no longer necessary.",
                &warnings
            ),
            "`--warn-unused-ignores`: This flag will make mypy report an error whenever your code uses a `# type: ignore` comment on a line that is not actually generating an error message. [1]\n\nPreviously, you may have needed to add casts or `# type: ignore` annotations to work around bugs in mypy or missing stubs for 3rd party libraries. [1]\n\nThese two flags let you discover cases where either workarounds are no longer necessary. [1]"
        );
        // The sentence naming the flag is printed as it is; one that says no "this flag" reads
        // alone.
        assert_eq!(
            copied(
                "Previously, you may have needed to add casts or `# type: ignore` annotations to work around bugs in mypy or missing stubs for 3rd party libraries.",
                &warnings
            ),
            "Previously, you may have needed to add casts or `# type: ignore` annotations to work around bugs in mypy or missing stubs for 3rd party libraries. [1]"
        );
        // MkDocs' theme options name theirs in bold code; a sentence that names one needs no
        // other.
        assert!(opens_with_name(
            "**`logo`**: To set a logo on your project, set this variable to the image's location."
        ));
        assert!(!opens_with_name("`en` is English."));
        // With no name in code before it, nothing is added.
        let plain = [source(
            "docs/usage.md",
            "The build cache keeps the compiled modules between two runs of the tool.\n\nThis option makes the build faster on the second run.\n",
        )];
        assert_eq!(
            copied(
                "This option makes the build faster on the second run.",
                &plain
            ),
            "The build cache keeps the compiled modules between two runs of the tool. [1]\n\nThis option makes the build faster on the second run. [1]"
        );
    }

    /// mypy's "Common issues" heads each reason with a paragraph in bold; quoted, it answered
    /// nothing (2026-12-05). A bold lead-in and a bold word inside a sentence stay.
    #[test]
    fn a_paragraph_all_in_bold_is_a_heading_not_a_sentence() {
        let issues = [source(
            "docs/source/common_issues.rst",
            "## No errors reported for obviously wrong code\n\nThere are several common reasons why obviously wrong code is not\nflagged as an error.\n\n**The function containing the error is not annotated.**\n\n**A function annotated as returning a non-optional type returns 'None'\nand mypy doesn't complain**.\n\nFunctions that\ndo not have any annotations are not type-checked, and even the most blatant type\nerrors pass silently.  The solution is to add\nannotations.\n\n**When to use `install` vs `update`:**\n\n- Use `install` to set up the locked versions on a new machine.\n\nThe **default** behaviour is to check only annotated functions.\n",
        )];
        let said_of = |sources: &[SourceRecord]| -> Vec<String> {
            all_sentences(sources)
                .into_iter()
                .map(|x| x.candidate.sentence)
                .collect()
        };
        let said = said_of(&issues);
        assert!(
            !said
                .iter()
                .any(|x| x.contains("The function containing the error")
                    || x.contains("returns 'None'")),
            "{said:#?}"
        );
        assert!(
            said.iter()
                .any(|x| x.starts_with("Functions that do not have any annotations")),
            "{said:#?}"
        );
        assert!(said.iter().any(|x| x.contains("When to use")), "{said:#?}");
        assert!(
            said.iter().any(|x| x.contains("The **default** behaviour")),
            "{said:#?}"
        );
        // A line in bold over its paragraph (an admonition's title, as MkDocs' pages are read)
        // heads it.
        let tip = [source(
            "docs/customization.md",
            "**Tip: How to integrate with third-party JavaScript libraries**\nIt is likely that you \
             will want to run your code only once the page has been fully loaded.\n",
        )];
        assert_eq!(
            said_of(&tip),
            [
                "It is likely that you will want to run your code only once the page has been fully loaded."
            ],
        );
        assert!(bold_heading("__Install Poetry__"));
        assert!(!bold_heading("**Note**: read this first."));
        assert!(!bold_heading("**a** and **b**"));
    }

    #[test]
    fn a_sentence_is_printed_with_the_rest_of_its_paragraph() {
        // chezmoi's FAQ: the command is in the sentence after the one picked.
        let faq = [source(
            "docs/user-guide/frequently-asked-questions/usage.md",
            "## What are the consequences of bare modifications?\n\nUntil you run `chezmoi apply` your modified `~/.zshrc` will remain in place.\nWhen you run `chezmoi apply` chezmoi will detect that `~/.zshrc` has changed\nsince chezmoi last wrote it and prompt you what to do. You can resolve\ndifferences with a merge tool by running `chezmoi merge ~/.zshrc`.\n\n## How can I tell what is not managed?\n\n`chezmoi unmanaged` will list everything not managed by chezmoi.\n",
        )];
        assert_eq!(
            copied(
                "When you run `chezmoi apply` chezmoi will detect that `~/.zshrc` has changed since chezmoi last wrote it and prompt you what to do.",
                &faq
            ),
            "When you run `chezmoi apply` chezmoi will detect that `~/.zshrc` has changed since chezmoi last wrote it and prompt you what to do. [1]\n\nYou can resolve differences with a merge tool by running `chezmoi merge ~/.zshrc`. [1]"
        );
        // At most two after it, and not into the next paragraph.
        let long = [source(
            "docs/guide.md",
            "The cache is kept per user. The cache is read at start. The cache is written at exit. The cache is never shared.\n\nThe index is rebuilt on every start.\n",
        )];
        assert_eq!(
            copied("The cache is kept per user.", &long),
            "The cache is kept per user. [1]\n\nThe cache is read at start. [1]\n\nThe cache is written at exit. [1]"
        );
        assert_eq!(
            copied("The cache is never shared.", &long),
            "The cache is never shared. [1]"
        );
    }

    #[test]
    fn a_list_item_is_printed_after_the_list_s_lead_in() {
        // Helix's book (2026-12-04): two items printed without the sentence that says what
        // they list.
        let languages = [source(
            "book/src/languages.md",
            "## `languages.toml` files\n\nThere are three possible locations for a `languages.toml` file:\n\n1. In the Helix source code, which lives in the\n   [Helix repository](https://github.com/helix-editor/helix/blob/master/languages.toml).\n   It provides the default configurations for languages and language servers.\n\n2. In your [configuration directory](./configuration.md). This overrides values\n   from the built-in language configuration. For example, to disable\n   auto-formatting for Rust:\n\n   ```toml\n   # in <config_dir>/helix/languages.toml\n\n   [[language]]\n   name = \"rust\"\n   auto-format = false\n   ```\n\n3. In a `.helix` folder in your project. Language configuration may also be\n   overridden local to a project by creating a `languages.toml` file in a\n   `.helix` folder.\n",
        )];
        assert_eq!(
            copied("In a `.helix` folder in your project.", &languages),
            "There are three possible locations for a `languages.toml` file [1]:\n\nIn a `.helix` folder in your project. [1]\n\nLanguage configuration may also be overridden local to a project by creating a `languages.toml` file in a `.helix` folder. [1]"
        );
        // An item's later sentence that reads on: the item's first, and the lead-in.
        assert_eq!(
            copied(
                "It provides the default configurations for languages and language servers.",
                &languages
            ),
            "There are three possible locations for a `languages.toml` file [1]:\n\nIn the Helix source code, which lives in the [Helix repository](https://github.com/helix-editor/helix/blob/master/languages.toml). [1]\n\nIt provides the default configurations for languages and language servers. [1]"
        );
        // chezmoi's FAQ: a list short enough to quote is printed whole after its lead-in,
        // whether an item of it was picked (the fourth step, which reads on from the third)
        // or the lead-in with it, and its items not again.
        let faq = [source(
            "docs/user-guide/frequently-asked-questions/encryption.md",
            "## How to re-encrypt encrypted files\n\nTo rotate from an expired GPG key to its replacement, or change from GPG to age\nencryption, the following steps can be used:\n\n1. Make sure you have applied all encrypted files.\n2. Update chezmoi configuration to use the new encryption method.\n3. Remove all encrypted files from the state via `chezmoi forget` or `chezmoi unmanage`.\n4. Add them back with `chezmoi add --encrypt`.\n\n### Example: Migrate from GPG to age\n",
        )];
        let steps = "To rotate from an expired GPG key to its replacement, or change from GPG to age encryption, the following steps can be used [1]:\n\n```text\n1. Make sure you have applied all encrypted files.\n2. Update chezmoi configuration to use the new encryption method.\n3. Remove all encrypted files from the state via `chezmoi forget` or `chezmoi unmanage`.\n4. Add them back with `chezmoi add --encrypt`.\n```";
        assert_eq!(
            copied("Add them back with `chezmoi add --encrypt`.", &faq),
            steps
        );
        assert_eq!(
            copied(
                "[1] To rotate from an expired GPG key to its replacement, or change from GPG to age encryption, the following steps can be used:\n[1] Add them back with `chezmoi add --encrypt`.",
                &faq
            ),
            steps
        );
        // A short list holding a fenced block is not quoted as one (the inner fence would
        // close the outer): its items are printed after the lead-in, as a long list's are.
        let fenced = [source(
            "docs/install.md",
            "## Install\n\nThere are two ways to install it:\n\n1. With pip:\n\n   ```sh\n   pip install tool\n   ```\n\n2. From a release archive, unpacked anywhere on your `PATH`.\n",
        )];
        assert_eq!(
            copied(
                "From a release archive, unpacked anywhere on your `PATH`.",
                &fenced
            ),
            "There are two ways to install it [1]:\n\nFrom a release archive, unpacked anywhere on your `PATH`. [1]"
        );
        // A list cut by a code block (mypy's notes on `pyproject.toml`, reStructuredText): the
        // lead-in's code is the list up to the block, which does not hold the item picked
        // after it; the lead-in is printed without it, over the item.
        let notes = [source(
            "docs/config_file.md",
            "Instead of a `mypy.ini` file, a `pyproject.toml` file may be used. A few notes on doing so:\n\n* The `[mypy]` section should have `tool.` prepended to its name:\n\n  * I.e., `[mypy]` would become `[tool.mypy]`\n\n```toml\n[tool.mypy]\n```\n* The following care should be given to values in the `pyproject.toml` files:\n\n  * Strings must be wrapped in double quotes\n\n  * Boolean values should be all lower case\n",
        )];
        assert_eq!(
            copied(
                "The following care should be given to values in the `pyproject.toml` files:",
                &notes
            ),
            "A few notes on doing so [1]:\n\nThe following care should be given to values in the `pyproject.toml` files [1]:\n\n```text\n  * Strings must be wrapped in double quotes\n\n  * Boolean values should be all lower case\n```"
        );
        // "it" early in a lead-in is no pointing back the answer's check drops: mypy's config
        // files, the whole list after its lead-in.
        let files = [source(
            "docs/source/config_file.rst",
            "Mypy discovers configuration files by walking up the file system. In each directory, it will look for the following configuration files (in this order):\n\n1. `mypy.ini`\n2. `.mypy.ini`\n3. `setup.cfg` (containing a `[mypy]` section)\n",
        )];
        assert_eq!(
            copied("`setup.cfg` (containing a `[mypy]` section)", &files),
            "In each directory, it will look for the following configuration files (in this order) [1]:\n\n```text\n1. `mypy.ini`\n2. `.mypy.ini`\n3. `setup.cfg` (containing a `[mypy]` section)\n```"
        );
        // A lead-in that points back at a sentence not printed is no claim, and its list would
        // go with it: the item picked is printed after it (chezmoi's FAQ).
        let process = [source(
            "docs/user-guide/frequently-asked-questions/encryption.md",
            "## How do I only request a passphrase once?\n\nThis can be achieved with the following process:\n\n1. Generate an age private key.\n2. Encrypt the private key with a passphrase.\n3. Configure chezmoi to decrypt the private key if needed.\n",
        )];
        assert_eq!(
            copied(
                "Configure chezmoi to decrypt the private key if needed.",
                &process
            ),
            "This can be achieved with the following process [1]:\n\nConfigure chezmoi to decrypt the private key if needed. [1]"
        );
        // A list after a code block is not the list a lead-in to the code leads to: Textual's
        // annotations of an example.
        let reactivity = [source(
            "docs/guide/reactivity.md",
            "Let's look at an example.\nThe following app is intended to cycle through various greeting when you press ++space++, however it contains a bug.\n\n```python title=\"set_reactive01.py\"\n--8<-- \"docs/examples/guide/reactivity/set_reactive01.py\"\n```\n\n1. Setting this reactive attribute invokes a watcher.\n2. The watcher attempts to update a label before it is mounted.\n",
        )];
        assert_eq!(
            copied(
                "The watcher attempts to update a label before it is mounted.",
                &reactivity
            ),
            "The watcher attempts to update a label before it is mounted. [1]"
        );
        // A list with no lead-in: the item alone.
        let plain = [source(
            "docs/cache.md",
            "# Cache\n\nThe cache is kept per user.\n\n- Entries expire after a day.\n- The cache is never shared.\n",
        )];
        assert_eq!(
            copied("The cache is never shared.", &plain),
            "The cache is never shared. [1]"
        );
    }

    #[test]
    fn a_paragraph_that_opens_reading_on_is_printed_after_the_one_before_it() {
        // direnv's hook guide: "it" is the line, in the paragraph and code block before.
        let hook = [source(
            "docs/hook.md",
            "## BASH\n\nAdd the following line at the end of the `~/.bashrc` file:\n\n```sh\neval \"$(direnv hook bash)\"\n```\n\nMake sure it appears even after rvm, git-prompt and other shell extensions\nthat manipulate the prompt.\n",
        )];
        assert_eq!(
            copied(
                "Make sure it appears even after rvm, git-prompt and other shell extensions that manipulate the prompt.",
                &hook
            ),
            "Add the following line at the end of the `~/.bashrc` file [1]:\n\n```sh\neval \"$(direnv hook bash)\"\n```\n\nMake sure it appears even after rvm, git-prompt and other shell extensions that manipulate the prompt. [1]"
        );
        // Past a line that is no sentence: Typer's counter section, where an include marker
        // stands for the code between the lead-in and "It means …" (it was printed as a
        // sentence, "{* docs_src/….py hl *} [1].").
        let counter = [source(
            "docs/tutorial/parameter-types/number.md",
            "## Counter *CLI options*\n\nYou can make a *CLI option* work as a counter with the `count` parameter:\n\n{* docs_src/parameter_types/number/tutorial003_an_py310.py hl[9] *}\n\nIt means that the *CLI option* will be like a boolean flag, e.g. `--verbose`.\n",
        )];
        assert_eq!(
            copied(
                "It means that the *CLI option* will be like a boolean flag, e.g. `--verbose`.",
                &counter
            ),
            "You can make a *CLI option* work as a counter with the `count` parameter [1]:\n\n```text\n{* docs_src/parameter_types/number/tutorial003_an_py310.py hl[9] *}\n```\n\nIt means that the *CLI option* will be like a boolean flag, e.g. `--verbose`. [1]"
        );
        // Not across passages: the first sentence of a passage is printed alone.
        let two = [
            source("a.md", "The hook is installed by the package.\n"),
            source(
                "b.md",
                "It is kept in the shell's rc file for every session.\n",
            ),
        ];
        assert_eq!(
            copied("It is kept in the shell's rc file for every session.", &two),
            "It is kept in the shell's rc file for every session. [2]"
        );
    }

    #[test]
    fn a_lead_in_to_an_include_marker_is_listed_with_it() {
        // Typer's docs, enum.md: the code of every example is an include marker, and the
        // lead-in that answers "can the matching ignore case" led to nothing, so it was never
        // listed for the pick.
        let enum_md = [source(
            "docs/tutorial/parameter-types/enum.md",
            "## Case insensitive Enum choices\n\nYou can make an `Enum` (choice) *CLI parameter* be case-insensitive with the `case_sensitive` parameter:\n\n{* docs_src/parameter_types/enum/tutorial002_an_py310.py hl *}\n\nAnd then the values of the `Enum` will be checked no matter if lower case, upper case, or a mix:\n\n<div class=\"termy\">\n\n```console\n$ python main.py --network CONV\n```\n\n</div>\n",
        )];
        let part = parts::parts_of("can the matching of an Enum ignore case").remove(0);
        let listed = numbered(&enum_md, &part, Encoding::Cl100k, 900);
        assert!(
            listed.text.starts_with(
                "(1) You can make an `Enum` (choice) *CLI parameter* be case-insensitive"
            ),
            "{}",
            listed.text
        );
        assert_eq!(
            chosen("(1)", &enum_md, &listed.numbers),
            "You can make an `Enum` (choice) *CLI parameter* be case-insensitive with the `case_sensitive` parameter [1]:\n\n```text\n{* docs_src/parameter_types/enum/tutorial002_an_py310.py hl *}\n```"
        );
        // With the file read by the workspace source, its lines in the marker's place.
        let mut with_file = enum_md.clone();
        with_file[0].included = vec![(
            "{* docs_src/parameter_types/enum/tutorial002_an_py310.py hl *}".to_owned(),
            "```python\nnetwork: NeuralNetwork = typer.Option(case_sensitive=False)\n```"
                .to_owned(),
        )];
        assert_eq!(
            chosen("(1)", &with_file, &listed.numbers),
            "You can make an `Enum` (choice) *CLI parameter* be case-insensitive with the `case_sensitive` parameter [1]:\n\n```python\nnetwork: NeuralNetwork = typer.Option(case_sensitive=False)\n```"
        );
        for marker in [
            "{* docs_src/a.py hl[9] *}",
            "--8<-- \"docs/snippet.md\"",
            "{!docs/snippet.md!}",
            "{% include \"snippet.md\" %}",
            "{{#include listing.rs}}",
        ] {
            assert!(includes::is_marker(marker), "{marker}");
        }
        assert!(!includes::is_marker("{ \"json\": true }"));
        assert!(!includes::is_marker("{{#title The Book}}"));
    }

    #[test]
    fn a_lead_in_to_a_long_block_past_a_comment_is_quoted_with_its_first_lines() {
        // chezmoi's include-files-from-elsewhere.md: a build comment between the lead-in and
        // its 20-line TOML example, whose sixth line answers "about once a week".
        let entries: String = (0..4)
            .map(|i| format!("[\".plugin{i}\"]\n    type = \"archive\"\n    url = \"https://example.com/{i}.tar.gz\"\n    exact = true\n    refreshPeriod = \"168h\"\n"))
            .collect();
        let guide = [source(
            "docs/user-guide/include-files-from-elsewhere.md",
            &format!(
                "## Include a subdirectory from a URL\n\nFor example, to import Oh My Zsh, put the following in `~/.local/share/chezmoi/.chezmoiexternal.$FORMAT`:\n\n<!-- example-formats -->\n```toml title=\"~/.local/share/chezmoi/.chezmoiexternal.toml\"\n{entries}```\n<!-- /example-formats -->\n\nTo apply the changes, run `chezmoi apply`.\n"
            ),
        )];
        let part =
            parts::parts_of("how do I import Oh My Zsh from a URL with chezmoiexternal").remove(0);
        let listed = numbered(&guide, &part, Encoding::Cl100k, 900);
        let k = listed
            .text
            .lines()
            .position(|l| l.contains("put the following in"))
            .expect("the lead-in is listed")
            + 1;
        let quoted = chosen(&format!("({k})"), &guide, &listed.numbers);
        let body: Vec<&str> = quoted
            .lines()
            .skip_while(|l| !l.starts_with("```toml"))
            .collect();
        assert_eq!(body.len(), CODE_LINES + 2, "{quoted}");
        assert!(quoted.contains("refreshPeriod = \"168h\""), "{quoted}");
        assert_eq!(body[body.len() - 2], "\u{2026}", "{quoted}");
        assert_eq!(body[body.len() - 1], "```", "{quoted}");
        // A short block is quoted whole, a block whose first line alone is too long not at all.
        assert_eq!(
            shortened("```sh\nchezmoi -R apply\n```").as_deref(),
            Some("```sh\nchezmoi -R apply\n```")
        );
        assert_eq!(
            shortened(&format!("```\n{}\n```", "x".repeat(CODE_CHARS + 1))),
            None
        );
    }

    #[test]
    fn a_restructured_text_lead_in_is_quoted_with_its_literal_block() {
        // Requests' quickstart: the passage as `passages::split` cuts an `.rst` page.
        let page = "Passing Parameters In URLs\n--------------------------\n\nRequests allows you to provide these arguments as a dictionary of strings,\nusing the ``params`` keyword argument. As an example, you would use the\nfollowing code::\n\n    >>> payload = {'key1': 'value1', 'key2': 'value2'}\n    >>> r = requests.get('https://httpbin.org/get', params=payload)\n\nNote that any dictionary key whose value is ``None`` will not be added.\n";
        let passage = &passages::split("docs/user/quickstart.rst", page)[0];
        let sources = [source("docs/user/quickstart.rst", &passage.text)];
        assert_eq!(
            copied("As an example, you would use the following code:", &sources),
            "As an example, you would use the following code [1]:\n\n```pycon\n>>> payload = {'key1': 'value1', 'key2': 'value2'}\n>>> r = requests.get('https://httpbin.org/get', params=payload)\n```"
        );
        let said: Vec<String> = all_sentences(&sources)
            .into_iter()
            .map(|s| s.candidate.sentence)
            .collect();
        assert!(
            said.iter().all(|s| !s.contains(">>>") && !s.contains("``")),
            "{said:?}"
        );
    }

    #[test]
    fn a_setext_heading_is_no_sentence() {
        // direnv's man page: its title over "=" was listed and quoted as a sentence.
        let sources = vec![source(
            "man/direnv.toml.1.md",
            "DIRENV.TOML 1 \"2019\" direnv \"User Manuals\" is the page.\n==========================================\n\nCONFIG\n------\n\nThe file is read from `$XDG_CONFIG_HOME/direnv/direnv.toml` in every shell.\n\nA closing paragraph of the page is here.\n\n---\n\nAfter a rule, a sentence stays a sentence.\n\n- A list item over a rule is still a sentence.\n---\n",
        )];
        let said: Vec<String> = all_sentences(&sources)
            .into_iter()
            .map(|s| s.candidate.sentence)
            .collect();
        assert_eq!(
            said,
            [
                "The file is read from `$XDG_CONFIG_HOME/direnv/direnv.toml` in every shell.",
                "A closing paragraph of the page is here.",
                "After a rule, a sentence stays a sentence.",
                "A list item over a rule is still a sentence.",
            ],
            "{said:?}"
        );
    }

    /// Two passages as the pick prompt shows them, for a part about disabling ALT-C.
    fn numbered_pair() -> (Vec<SourceRecord>, Numbered) {
        // Titled as the workspace source titles a passage, keyed by its file.
        let passage = |lines: &str, section: &str, text: &str| SourceRecord {
            key: format!("file:README.md#{lines}"),
            ..source(&format!("README.md:{lines} \u{2014} {section}"), text)
        };
        let sources = vec![
            passage(
                "195-229",
                "Setting up shell integration",
                "# Setup\n\nAdd the following line to your shell configuration file:\n\n```sh\neval \"$(fzf --bash)\"\n```\n\nSee [the wiki](https://example.org/wiki).\n\n> [!NOTE]\n> Older versions of fzf have no `--bash` option. Source the script files in the /shell directory instead.\n",
            ),
            passage(
                "231-242",
                "Key bindings",
                "You can disable CTRL-T, CTRL-R, or ALT-C bindings by setting the\ncorresponding `*_COMMAND` variable to an empty string when sourcing the\nscript.\n\n| key | action |\n|---|---|\n| ALT-C | cd |\n",
            ),
        ];
        let part = parts::parts_for("How do I disable the ALT-C bindings?", &sources).remove(0);
        let shown = numbered(&sources, &part, Encoding::Cl100k, 900);
        (sources, shown)
    }

    #[test]
    fn the_sentences_likeliest_to_answer_are_numbered_best_first() {
        let (sources, shown) = numbered_pair();
        // The sentence that holds the part's words first, with its section; then the others
        // in the passages' order. A fragment, a link, a table or code is never a choice.
        assert_eq!(
            shown.text,
            "(1) You can disable CTRL-T, CTRL-R, or ALT-C bindings by setting the corresponding `*_COMMAND` variable to an empty string when sourcing the script.  \u{2014} Key bindings\n(2) Add the following line to your shell configuration file:  \u{2014} Setting up shell integration\n(3) Older versions of fzf have no `--bash` option.  \u{2014} Setting up shell integration\n(4) Source the script files in the /shell directory instead.  \u{2014} Setting up shell integration"
        );
        assert_eq!(shown.shown, 2);
        assert_eq!(shown.numbers.len(), 4);
        // Within a budget of tokens, the best first (and always one).
        let part = parts::parts_for("How do I disable the ALT-C bindings?", &sources).remove(0);
        let one = numbered(&sources, &part, Encoding::Cl100k, 10);
        assert_eq!(one.numbers.len(), 1);
        assert_eq!(one.shown, 2);
        assert_eq!(
            chosen("(1)", &sources, &one.numbers),
            "You can disable CTRL-T, CTRL-R, or ALT-C bindings by setting the corresponding `*_COMMAND` variable to an empty string when sourcing the script. [2]"
        );
        // A passage without a heading is named by its file, without lines; a title that is no
        // passage's as it is.
        assert_eq!(section_of("README.md:195-229"), "README.md");
        assert_eq!(section_of("docs/a.md:7 \u{2014} Setup "), "Setup");
        assert_eq!(section_of("Rust: the book"), "Rust: the book");
        // At most PICK_CHOICES sentences.
        let many = vec![source(
            "docs/notes.md",
            &(1..=20)
                .map(|i| format!("Note number {i} is about something else entirely."))
                .collect::<Vec<_>>()
                .join("\n\n"),
        )];
        let part = parts::parts_for("what is note 5 about?", &many).remove(0);
        assert_eq!(
            numbered(&many, &part, Encoding::Cl100k, 900).numbers.len(),
            PICK_CHOICES
        );
    }

    #[test]
    fn the_choices_are_listed_in_the_order_given() {
        let (sources, shown) = numbered_pair();
        let part = parts::parts_for("How do I disable the ALT-C bindings?", &sources).remove(0);
        // The choices are the words' order, the same sentences `numbered` lists.
        let words = choices(&sources, &part, PICK_POOL);
        let order: Vec<usize> = words.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, shown.numbers);
        assert!(
            words[0].1.starts_with("You can disable CTRL-T"),
            "{words:?}"
        );
        // Listed in another order (meaning's, fused), with an index that names nothing passed
        // over: the numbers stand for the sentences as listed, and the reply is read by them.
        let mut other: Vec<usize> = order.iter().rev().copied().collect();
        other.insert(1, 10_000);
        let listed = numbered_in(&sources, &other, Encoding::Cl100k, 900);
        assert_eq!(
            listed.numbers,
            order.iter().rev().copied().collect::<Vec<_>>()
        );
        assert!(
            listed
                .text
                .starts_with("(1) Source the script files in the /shell directory instead."),
            "{}",
            listed.text
        );
        assert_eq!(listed.shown, shown.shown);
        assert!(
            chosen("(4)", &sources, &listed.numbers).starts_with("You can disable CTRL-T"),
            "{}",
            listed.text
        );
        // Nothing to list: the first passage counts as read.
        assert_eq!(numbered_in(&sources, &[], Encoding::Cl100k, 900).shown, 1);
    }

    #[test]
    fn the_sentences_a_reply_names_are_quoted_as_written() {
        let (sources, shown) = numbered_pair();
        let n = &shown.numbers;
        // Numbers in parentheses, each once, printed in the passage's order; the code a
        // lead-in leads to goes with it.
        assert_eq!(
            chosen("(4) (2) (4)", &sources, n),
            "Add the following line to your shell configuration file [1]:\n\n```sh\neval \"$(fzf --bash)\"\n```\n\nSource the script files in the /shell directory instead. [1]"
        );
        // Bare numbers, and a number with the sentence copied after it; a sentence of another
        // passage than the first one's is left out.
        assert_eq!(
            chosen("3, 1, 4", &sources, n),
            "Older versions of fzf have no `--bash` option. [1]\n\nSource the script files in the /shell directory instead. [1]"
        );
        assert_eq!(
            chosen(
                "(3) Older versions of fzf have no `--bash` option.",
                &sources,
                n
            ),
            "Older versions of fzf have no `--bash` option. [1]\n\nSource the script files in the /shell directory instead. [1]"
        );
        // None, numbers not shown, and at most three.
        for nothing in ["(0)", "(9)", "(0) (17)", "0"] {
            assert_eq!(chosen(nothing, &sources, n), "", "{nothing}");
        }
        assert_eq!(
            chosen("(2) (3) (4) (1)", &sources, n).matches(" [").count(),
            3
        );
        // A reply in words is read as copies; a passage number in brackets is no pick.
        assert_eq!(
            chosen(
                "Older versions of fzf have no `--bash` option [1].",
                &sources,
                n
            ),
            "Older versions of fzf have no `--bash` option. [1]\n\nSource the script files in the /shell directory instead. [1]"
        );
        assert_eq!(chosen("[1]", &sources, n), "");
        // A number in parentheses after a word is a man page's section, not a pick: the reply
        // is read as a copy (recorded over direnv's docs, 2026-12-02).
        assert_eq!(
            numbers_named("Check the direnv-stdlib(1) man page for more details."),
            None
        );
        assert_eq!(numbers_named("(3), (1)"), Some(vec![3, 1]));
        assert_eq!(chosen("", &sources, n), "");
    }

    #[test]
    fn a_part_with_nothing_is_said_so() {
        let sources = vec![source(
            "docs/sets.md",
            "A set is an unordered collection with no duplicate elements.",
        )];
        let (text, claims) = extractive(
            "what is a set, and how are generators written",
            &sources,
            "the model's answer was not kept",
        );
        assert_eq!(claims.len(), 1);
        assert!(
            text.contains(
                "**2. how are generators written**\n\nNo sentence was quoted for this part; the passages may still answer it in other words, and those most about it are named below."
            ),
            "{text}"
        );
        assert!(text.ends_with(
            "Nothing in the passages found answers \u{201c}how are generators written\u{201d}."
        ));
    }

    /// No sentence quoted for any part: the passages about each part are still named.
    #[test]
    fn with_no_quote_at_all_each_part_points_to_its_passages() {
        let sources = vec![
            source(
                "docs/config.md:10-14 \u{2014} edit_uri",
                "```yaml\nedit_uri: blob/main/docs/\n```",
            ),
            source(
                "docs/config.md:20-24 \u{2014} repo_name",
                "```yaml\nrepo_name: GitLab\n```",
            ),
        ];
        let (text, claims) = extractive(
            "which edit_uri points at main, and what repo_name does GitLab get",
            &sources,
            "the model's answer was not kept",
        );
        assert!(claims.is_empty());
        assert!(text.contains(QUOTED_NOTHING), "{text}");
        assert!(text.contains("to read: [1]"), "{text}");
        assert!(text.contains("to read: [2]"), "{text}");
    }

    /// A part no sentence answers, while a passage holds its words (in code, or too few of
    /// them for a quote): the report names that passage for the reader instead of saying that
    /// nothing answers the part.
    #[test]
    fn a_part_without_a_quote_points_to_the_passages_about_it() {
        let sources = vec![
            source(
                "docs/sets.md",
                "A set is an unordered collection with no duplicate elements.",
            ),
            source(
                "docs/generators.md",
                "Generators yield their values lazily, one at a time.",
            ),
        ];
        let (text, _) = extractive(
            "what is a set, and how are generators written",
            &sources,
            "the model's answer was not kept",
        );
        assert!(
            text.ends_with(
                "Not answered: \u{201c}how are generators written\u{201d}. The passage most about it, to read: [2]."
            ),
            "{text}"
        );
        assert!(!text.contains("Nothing in"), "{text}");
    }
}
