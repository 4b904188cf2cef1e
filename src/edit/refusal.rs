//! Refusals: why an edit was not applied, written for the model that will read it.
//!
//! Every message says what was expected, what was found, and what to send next — with line
//! numbers, the real text of the closest region, and whitespace made visible where whitespace is
//! the difference. A refusal never leaves the model guessing which of two places it hit.

use std::fmt;

use super::locate::{self, FileIndex};
use super::text::{self, clip, is_blank, visible};

/// Why the engine refused; callers branch on this, models read the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusalKind {
    /// OLD is empty (nothing to locate).
    EmptyOld,
    /// OLD and NEW are the same, or the edit would leave the file as it is.
    NoOp,
    /// OLD is not in the file.
    NotFound,
    /// OLD is not in the file but NEW is: the edit looks applied already.
    AlreadyApplied,
    /// OLD matches more than one place; `lines` are the 1-based first lines of each.
    Ambiguous { lines: Vec<usize> },
    /// Elision markers in OLD and NEW do not line up, or an elided part is ambiguous.
    Elision,
    /// Two edits of a batch touch the same text.
    Overlap,
    /// A line number outside the file.
    LineOutOfRange,
    /// A regular expression that does not compile.
    InvalidPattern,
    /// The file was never read in this session.
    NotRead,
    /// The file changed since the model read it.
    Stale,
    /// A rewritten region that is not the target rewritten (a fragment of it, or much more).
    Misaligned,
}

impl RefusalKind {
    /// A short stable name (fixtures, JSON output, benchmarks).
    pub fn as_str(&self) -> &'static str {
        match self {
            RefusalKind::EmptyOld => "empty-old",
            RefusalKind::NoOp => "no-op",
            RefusalKind::NotFound => "not-found",
            RefusalKind::AlreadyApplied => "already-applied",
            RefusalKind::Ambiguous { .. } => "ambiguous",
            RefusalKind::Elision => "elision",
            RefusalKind::Overlap => "overlap",
            RefusalKind::LineOutOfRange => "line-out-of-range",
            RefusalKind::InvalidPattern => "invalid-pattern",
            RefusalKind::NotRead => "not-read",
            RefusalKind::Stale => "stale",
            RefusalKind::Misaligned => "misaligned",
        }
    }
}

/// An edit the engine would not apply, with the message a model needs to fix its request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Refusal {
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// Prefixes the message (which edit of a batch it was, for example).
    pub fn context(mut self, prefix: &str) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        self
    }
}

pub(crate) fn empty_old() -> Refusal {
    Refusal::new(
        RefusalKind::EmptyOld,
        "OLD is empty, so there is nothing to locate; copy the lines to change from the file into \
         OLD (to add text, use an insert, prepend or append operation)",
    )
}

pub(crate) fn too_repetitive() -> Refusal {
    Refusal::new(
        RefusalKind::Ambiguous { lines: Vec::new() },
        "OLD is made of lines that repeat all over the file, too many places to compare reliably; \
         put distinctive lines (a signature, a unique statement) into OLD, or use a line-range \
         edit",
    )
}

pub(crate) fn no_op() -> Refusal {
    Refusal::new(
        RefusalKind::NoOp,
        "OLD and NEW are identical, so the edit would change nothing; put the text you want in NEW",
    )
}

pub(crate) fn no_change(line: usize) -> Refusal {
    Refusal::new(
        RefusalKind::NoOp,
        format!(
            "OLD matches at line {line}, but once written in the file's own whitespace and line \
             endings NEW is the same text, so the edit would change nothing; put the text you want \
             in NEW"
        ),
    )
}

/// OLD matched, but the lines NEW adds around it are already there.
pub(crate) fn applied_around(
    file: &FileIndex<'_>,
    line: usize,
    new_lines: std::ops::Range<usize>,
) -> Refusal {
    let start = new_lines.start.saturating_sub(1);
    let n = new_lines.end.saturating_sub(new_lines.start).max(1);
    let mut msg = format!(
        "OLD matches at line {line}, but NEW is already there (lines {}-{}): the edit looks \
         applied already, and applying it again would duplicate what it adds. Read the file again \
         before editing further.\n",
        new_lines.start,
        new_lines.end.saturating_sub(1).max(new_lines.start)
    );
    msg.push_str(&region_text(file, start, n));
    Refusal::new(RefusalKind::AlreadyApplied, msg.trim_end().to_string())
}

/// More than one place matches.
pub(crate) fn ambiguous(file: &FileIndex<'_>, lines: &[usize], pass: &str) -> Refusal {
    let shown: Vec<String> = lines.iter().map(|n| n.to_string()).collect();
    let mut msg = format!(
        "OLD matches {} places ({pass} match), at lines {}:\n",
        lines.len(),
        join_limited(&shown, 50)
    );
    for &n in lines.iter().take(20) {
        let content = file
            .lines()
            .get(n.saturating_sub(1))
            .map(|l| l.content(file.text))
            .unwrap_or("");
        msg.push_str(&format!("{n:>6}\t{}\n", clip(content, 120)));
    }
    if lines.len() > 20 {
        msg.push_str(&format!("  … and {} more\n", lines.len() - 20));
    }
    msg.push_str(
        "Add surrounding lines to OLD until it matches exactly one place, or set replace_all to \
         change every occurrence",
    );
    Refusal::new(
        RefusalKind::Ambiguous {
            lines: lines.to_vec(),
        },
        msg,
    )
}

fn join_limited(items: &[String], max: usize) -> String {
    if items.len() <= max {
        items.join(", ")
    } else {
        format!("{}, … ({} in all)", items[..max].join(", "), items.len())
    }
}

/// OLD was not found: show the closest real region, the first differing line with whitespace
/// made visible, and whether NEW is already there.
pub(crate) fn not_found(file: &FileIndex<'_>, old: &str, new_present: Option<usize>) -> Refusal {
    let (old_lines, _) = text::snippet_lines(old);
    let mut msg = String::new();
    if let Some(line) = new_present {
        msg.push_str(&format!(
            "OLD was not found, but NEW is already present at line {line}: the edit looks \
             applied already. Read the file again before editing further.\n"
        ));
        msg.push_str(&region_text(
            file,
            line.saturating_sub(1),
            old_lines.len().max(1),
        ));
        return Refusal::new(RefusalKind::AlreadyApplied, msg.trim_end().to_string());
    }
    msg.push_str("OLD was not found in the file, not even with whitespace, indentation, line-ending or quote differences ignored.\n");
    match locate::closest_window(file, &old_lines) {
        Some(start) => {
            let n = old_lines.len().max(1);
            let end = (start + n).min(file.lines().len());
            msg.push_str(&format!(
                "The closest region is lines {}-{}:\n",
                start + 1,
                end.max(start + 1)
            ));
            msg.push_str(&region_text(file, start, n));
            if let Some(diff) = first_difference(file, start, &old_lines) {
                msg.push_str(&diff);
            }
        }
        None => {
            msg.push_str("No line of the file resembles OLD.\n");
        }
    }
    msg.push_str(
        "NEW is not in the file either. Copy OLD exactly from the current file (read it again if \
         unsure) and retry",
    );
    Refusal::new(RefusalKind::NotFound, msg)
}

/// The lines `start..start+n` (0-based) with one line of context on each side, numbered like
/// `cat -n`, at most 40 lines.
pub(crate) fn region_text(file: &FileIndex<'_>, start: usize, n: usize) -> String {
    let from = start.saturating_sub(1);
    let to = (start + n + 1).min(file.lines().len()).min(from + 40);
    let mut out = String::new();
    for i in from..to {
        out.push_str(&format!("{:>6}\t{}\n", i + 1, clip(file.content(i), 200)));
    }
    if start + n + 1 > to && to < file.lines().len() {
        out.push_str("      \t…\n");
    }
    out
}

fn first_difference(file: &FileIndex<'_>, start: usize, old: &[&str]) -> Option<String> {
    for (i, o) in old.iter().enumerate() {
        let Some(f) = file.lines().get(start + i).map(|l| l.content(file.text)) else {
            return Some(format!(
                "OLD line {} is past the end of the file:\n  OLD:  {}\n",
                i + 1,
                clip(&visible(o), 200)
            ));
        };
        if *o != f {
            let note = if o.trim() == f.trim() {
                " (only whitespace differs)"
            } else if is_blank(o) != is_blank(f) {
                " (a blank line differs)"
            } else {
                ""
            };
            return Some(format!(
                "First difference at line {} (OLD line {}){note}:\n  file: {}\n  OLD:  {}\n",
                start + i + 1,
                i + 1,
                clip(&visible(f), 200),
                clip(&visible(o), 200)
            ));
        }
    }
    None
}
