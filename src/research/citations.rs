//! The citation forms small models actually write, normalised to `[n]`: `(1)`, `[source 1]`,
//! `[ 1 ]`, `[1, 2]`, `[1][2]`, `【1】`, `【1†source】`, `^1`, `[^1]`, `<sup>1</sup>`,
//! `(Sources 1 and 2)`, `Passage 3`. Only prose is touched: inline code and fenced code blocks
//! keep their brackets (`v[1]` is an index, not a citation).
//!
//! A bare `(1)` is a citation only where an enumerator cannot be: after a word and before
//! punctuation or the end of the line ("evicts the oldest entry (1)."), never at the start of a
//! line ("(1) first, (2) second") or right after an identifier (`retry(3)`).
//!
//! Pure functions: no I/O.

use std::sync::OnceLock;

use regex::{Captures, Regex};

use crate::edit::text::{FenceLine, Fences};

/// Applies `f` to each line of Markdown `text` outside fenced code blocks (each with its line
/// end) and returns the text with the fenced lines as written.
pub fn map_unfenced(text: &str, mut f: impl FnMut(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fences = Fences::default();
    for line in text.split_inclusive('\n') {
        if fences.line(line) == FenceLine::Outside {
            out.push_str(&f(line));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Applies `f` to the prose of Markdown `text` — everything outside fenced code blocks and
/// inline code spans — and returns the text with everything else as written.
pub fn map_prose(text: &str, mut f: impl FnMut(&str) -> String) -> String {
    map_unfenced(text, |line| {
        let mut out = String::with_capacity(line.len());
        // Inline code: a run of backticks up to the same run.
        let mut rest = line;
        while let Some(open) = rest.find('`') {
            let ticks = rest[open..].chars().take_while(|c| *c == '`').count();
            let marker = &rest[open..open + ticks];
            match rest[open + ticks..].find(marker) {
                Some(close) => {
                    out.push_str(&f(&rest[..open]));
                    let end = open + ticks + close + ticks;
                    out.push_str(&rest[open..end]);
                    rest = &rest[end..];
                }
                None => break,
            }
        }
        out.push_str(&f(rest));
        out
    })
}

/// The regex in `cell`, compiled once from `pattern` (a constant the tests compile; a pattern
/// that did not compile would match nothing rather than panic).
pub(crate) fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).unwrap_or_else(|_| Regex::new("$^").expect("trivial")))
}

/// A list of numbers as models write them: `1`, `1, 2`, `1 and 2`, `1-3`, `#1; #2`.
const LIST: &str = r"#?\d{1,3}(?:\s*(?:,|;|&|and|-|–)\s*(?:(?i:sources?|passages?)\s*)?#?\d{1,3})*";

/// The numbers of a list (ranges expanded, at most 50 wide).
pub fn numbers(list: &str) -> Vec<u32> {
    let cleaned = list
        .to_lowercase()
        .replace("sources", " ")
        .replace("source", " ")
        .replace("passages", " ")
        .replace("passage", " ")
        .replace('#', " ")
        .replace(" and ", ",")
        .replace(['&', ';'], ",");
    let mut out = Vec::new();
    for part in cleaned.split(',') {
        let part = part.trim();
        let range = part.split_once('-').or_else(|| part.split_once('–'));
        match range {
            Some((a, b)) => {
                let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) else {
                    continue;
                };
                if a <= b && b - a < 50 {
                    out.extend(a..=b);
                } else {
                    out.extend([a, b]);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    let mut unique = Vec::new();
    for n in out {
        if !unique.contains(&n) {
            unique.push(n);
        }
    }
    unique
}

fn markers(list: &str) -> String {
    numbers(list).iter().map(|n| format!("[{n}]")).collect()
}

/// Rewrites every citation form of the module documentation to `[n]` markers.
pub fn normalize(text: &str) -> String {
    map_prose(text, normalize_prose)
}

fn normalize_prose(text: &str) -> String {
    static LENTICULAR: OnceLock<Regex> = OnceLock::new();
    static FOOTNOTE: OnceLock<Regex> = OnceLock::new();
    static SUP: OnceLock<Regex> = OnceLock::new();
    static PAREN_NAMED: OnceLock<Regex> = OnceLock::new();
    static BRACKET: OnceLock<Regex> = OnceLock::new();
    static PAREN_PAIR: OnceLock<Regex> = OnceLock::new();
    static PAREN_BARE: OnceLock<Regex> = OnceLock::new();
    static CARET: OnceLock<Regex> = OnceLock::new();
    static NAMED: OnceLock<Regex> = OnceLock::new();

    let text =
        regex(&LENTICULAR, r"【\s*(\d{1,3})(?:\s*[†:][^】]*)?\s*】").replace_all(text, "[$1]");
    let text = regex(&FOOTNOTE, r"\[\^(\d{1,3})\]").replace_all(&text, "[$1]");
    let text = regex(&SUP, r"(?i)<sup>\s*\[?(\d{1,3})\]?\s*</sup>").replace_all(&text, "[$1]");
    let text = regex(
        &PAREN_NAMED,
        &format!(r"\(\s*(?i:(?:see\s+)?(?:sources?|passages?|refs?))\s*\[?\s*({LIST})\s*\]?\s*\)"),
    )
    .replace_all(&text, |c: &Captures<'_>| markers(&c[1]));
    let text = regex(
        &BRACKET,
        &format!(
            r"\[\s*(?i:(?:sources?|passages?|refs?|references?|citations?|docs?|documents?)\s*)?({LIST})\s*\](\()?"
        ),
    )
    .replace_all(&text, |c: &Captures<'_>| {
        if c.get(2).is_some() {
            // A Markdown link `[1](…)`: not a citation.
            c[0].to_owned()
        } else {
            markers(&c[1])
        }
    });
    // `(1)(2)` → `(1, 2)`, so the pair reads as one citation.
    let mut text = text.into_owned();
    let pair = regex(
        &PAREN_PAIR,
        r"\((\d{1,2}(?:,\s*\d{1,2})*)\)\s*\((\d{1,2})\)",
    );
    while pair.is_match(&text) {
        text = pair.replace_all(&text, "($1, $2)").into_owned();
    }
    let text = regex(
        &PAREN_BARE,
        r"(?m)(\S)([ \t]*)\(\s*(\d{1,2}(?:\s*(?:,|;|&|and|-|–)\s*\d{1,2})*)\s*\)([ \t]*(?:[.,;:!?]|$|\[))",
    )
    .replace_all(&text, |c: &Captures<'_>| {
        let before = &c[1];
        let call = c[2].is_empty()
            && before
                .chars()
                .next()
                .is_some_and(|ch| ch.is_alphanumeric() || ch == '_');
        if call {
            c[0].to_owned()
        } else {
            format!("{before} {}{}", markers(&c[3]), c[4].trim_start())
        }
    });
    let text = regex(&CARET, r"(?m)(^|[^\d^])\^\[?(\d{1,2})\]?").replace_all(&text, "$1[$2]");
    let text = regex(
        &NAMED,
        r"\b(?i:sources?|passages?)\s+#?(\d{1,3}(?:\s*(?:,|&|and)\s*#?\d{1,3})*)\b",
    )
    .replace_all(&text, |c: &Captures<'_>| markers(&c[1]));
    text.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_small_model_form_becomes_a_marker() {
        let cases = [
            (
                "The cache evicts old entries (1).",
                "The cache evicts old entries [1].",
            ),
            ("It is full [source 1].", "It is full [1]."),
            ("It is full [Source 2, 3].", "It is full [2][3]."),
            ("It is full [ 1 ].", "It is full [1]."),
            ("It is full [1, 2].", "It is full [1][2]."),
            ("It is full [1][2].", "It is full [1][2]."),
            ("It is full 【1】.", "It is full [1]."),
            ("It is full 【3†source】.", "It is full [3]."),
            ("It is full^1.", "It is full[1]."),
            ("It is full [^2].", "It is full [2]."),
            ("It is full<sup>4</sup>.", "It is full[4]."),
            ("It is full (Sources 1 and 2).", "It is full [1][2]."),
            ("It is full (1)(2).", "It is full [1][2]."),
            ("It is full (1, 3).", "It is full [1][3]."),
            ("As Passage 3 says, it is full.", "As [3] says, it is full."),
            ("It retries [2-4].", "It retries [2][3][4]."),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize(input), expected, "{input}");
        }
    }

    #[test]
    fn code_enumerators_calls_and_links_are_left_alone() {
        let cases = [
            "Call `retry(3)` or `v[1]`.",
            "(1) first, (2) second",
            "It calls retry(3).",
            "See [1](https://example.org).",
            "It does two things: (1) evicts and (2) writes",
            "2^10 bytes",
        ];
        for input in cases {
            assert_eq!(normalize(input), input, "{input}");
        }
        let fenced = "```rust\nlet x = v[1];\n```\nDone (1).\n";
        assert_eq!(
            normalize(fenced),
            "```rust\nlet x = v[1];\n```\nDone [1].\n"
        );
    }

    #[test]
    fn number_lists() {
        assert_eq!(numbers("1, 2 and 4"), vec![1, 2, 4]);
        assert_eq!(numbers("#1; #1"), vec![1]);
        assert_eq!(numbers("3–5"), vec![3, 4, 5]);
    }
}
