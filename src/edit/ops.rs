//! Line, pattern and anchor operations, and batches of operations on one file.
//!
//! Line operations are for a version of the file the model has seen with line numbers; anchor
//! operations locate their anchor with the same cascade and uniqueness rule as a replace. A batch
//! locates every operation against the original text, refuses overlaps, and applies all or none.

use regex::RegexBuilder;

use crate::document::change::Replacement;

use super::build::{self, MatchedSpan, NewText};
use super::locate::{FileIndex, Pass};
use super::refusal::{self, Refusal, RefusalKind};
use super::text::{self, snippet_lines};
use super::{Applied, Located, MatchedBy, ReplaceOptions, find, finish, realize};

/// One edit a model (or a user) asks for. Line numbers are 1-based, as the model saw them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    Replace {
        old: String,
        new: String,
        replace_all: bool,
    },
    /// Insert whole lines after line `line` (0: at the top).
    InsertAfterLine {
        line: usize,
        text: String,
    },
    /// Insert whole lines before line `line` (line count + 1: at the end).
    InsertBeforeLine {
        line: usize,
        text: String,
    },
    /// Replace lines `start..=end` with `text` (empty text deletes them).
    ReplaceLines {
        start: usize,
        end: usize,
        text: String,
    },
    /// Replace what a regular expression matches; `$1`, `${name}` expand in `replacement`.
    ReplacePattern {
        pattern: String,
        replacement: String,
        all: bool,
    },
    Prepend {
        text: String,
    },
    Append {
        text: String,
    },
    /// Insert after the text `anchor` (located like OLD): as new lines when the anchor is whole
    /// lines, right after it otherwise.
    InsertAfter {
        anchor: String,
        text: String,
    },
    InsertBefore {
        anchor: String,
        text: String,
    },
}

impl Operation {
    /// Insert `text` after `anchor`, or before it.
    pub fn at_anchor(anchor: String, text: String, before: bool) -> Operation {
        if before {
            Operation::InsertBefore { anchor, text }
        } else {
            Operation::InsertAfter { anchor, text }
        }
    }
}

/// Applies one operation.
pub fn apply(text: &str, op: &Operation) -> Result<Applied, Refusal> {
    apply_batch(text, std::slice::from_ref(op))
}

/// Locates every operation against `text` as it is, then applies them together, or none.
pub fn apply_batch(text: &str, ops: &[Operation]) -> Result<Applied, Refusal> {
    let file = FileIndex::new(text);
    let mut located = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let l = locate_op(&file, op).map_err(|r| {
            if ops.len() > 1 {
                r.context(&format!("edit {} of {}", i + 1, ops.len()))
            } else {
                r
            }
        })?;
        located.push(l);
    }
    if ops.len() > 1 {
        check_overlaps(&file, &located)?;
    }
    finish(text, located)
}

fn check_overlaps(file: &FileIndex<'_>, located: &[Located]) -> Result<(), Refusal> {
    let mut all: Vec<(usize, &Replacement)> = located
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.replacements.iter().map(move |r| (i, r)))
        .collect();
    all.sort_by_key(|(_, r)| (r.range.start, r.range.end));
    for w in all.windows(2) {
        let ((ia, a), (ib, b)) = (w[0], w[1]);
        let touching_inserts = a.range.is_empty() || b.range.is_empty();
        if b.range.start < a.range.end
            || (ia != ib && b.range.start == a.range.start && !touching_inserts)
        {
            let la = file.line_of(a.range.start);
            let lb = file.line_of(b.range.start);
            return Err(Refusal::new(
                RefusalKind::Overlap,
                format!(
                    "edits {} and {} change the same text (lines {la} and {lb}); every edit of a \
                     batch is located in the file as it was before the batch, so merge them into \
                     one edit",
                    ia.min(ib) + 1,
                    ia.max(ib) + 1
                ),
            ));
        }
    }
    Ok(())
}

fn locate_op(file: &FileIndex<'_>, op: &Operation) -> Result<Located, Refusal> {
    match op {
        Operation::Replace {
            old,
            new,
            replace_all,
        } => {
            let (_, occ) = find(
                file,
                old,
                new,
                ReplaceOptions {
                    replace_all: *replace_all,
                },
            )?;
            realize(file, occ)
        }
        Operation::InsertAfterLine { line, text } => {
            let n = file.lines().len();
            if *line > n {
                return Err(out_of_range(*line, n, "insert after"));
            }
            insert_lines(file, *line, text)
        }
        Operation::InsertBeforeLine { line, text } => {
            let n = file.lines().len();
            if *line == 0 || *line > n + 1 {
                return Err(out_of_range(*line, n, "insert before"));
            }
            insert_lines(file, line - 1, text)
        }
        Operation::ReplaceLines { start, end, text } => replace_lines(file, *start, *end, text),
        Operation::ReplacePattern {
            pattern,
            replacement,
            all,
        } => replace_pattern(file, pattern, replacement, *all),
        Operation::Prepend { text } => insert_lines(file, 0, text),
        Operation::Append { text } => insert_lines(file, file.lines().len(), text),
        Operation::InsertAfter { anchor, text } => insert_at_anchor(file, anchor, text, true),
        Operation::InsertBefore { anchor, text } => insert_at_anchor(file, anchor, text, false),
    }
}

fn out_of_range(line: usize, n: usize, what: &str) -> Refusal {
    Refusal::new(
        RefusalKind::LineOutOfRange,
        format!(
            "cannot {what} line {line}: the file has {n} line{}; line numbers start at 1 (read the \
             file again for current numbers)",
            if n == 1 { "" } else { "s" }
        ),
    )
}

/// `text` as whole lines in the file's line ending, ending with one.
fn as_lines(text: &str, eol: &str) -> String {
    let (lines, _) = snippet_lines(text);
    let mut out = String::with_capacity(text.len() + lines.len());
    for l in lines {
        out.push_str(l);
        out.push_str(eol);
    }
    out
}

/// Inserts `text` as whole lines after the first `after` lines.
fn insert_lines(file: &FileIndex<'_>, after: usize, text: &str) -> Result<Located, Refusal> {
    if text.is_empty() {
        return Err(Refusal::new(
            RefusalKind::NoOp,
            "the text to insert is empty, so the edit would change nothing",
        ));
    }
    let eol = file.eol();
    let mut body = as_lines(text, eol);
    let offset = if after == 0 {
        // Keep a byte-order mark first.
        if file.text.starts_with('\u{feff}') {
            3
        } else {
            0
        }
    } else {
        let l = file.lines()[after - 1];
        if l.end == l.content_end {
            // The last line has no line break: add one before, and none after, as the file had.
            body = format!("{eol}{}", body.strip_suffix(eol).unwrap_or(&body));
        }
        l.end
    };
    Ok(Located {
        replacements: vec![Replacement::insert(offset, body)],
        matched_by: MatchedBy(vec![Pass::Lines]),
        occurrences: 1,
        lines: vec![after + 1],
        spans: std::iter::once(offset..offset).collect(),
    })
}

fn replace_lines(
    file: &FileIndex<'_>,
    start: usize,
    end: usize,
    text: &str,
) -> Result<Located, Refusal> {
    let n = file.lines().len();
    if start == 0 || start > end || end > n {
        return Err(Refusal::new(
            RefusalKind::LineOutOfRange,
            format!(
                "cannot replace lines {start}-{end}: the file has {n} line{}; give 1 <= start <= \
                 end <= {n}",
                if n == 1 { "" } else { "s" }
            ),
        ));
    }
    let first = file.lines()[start - 1];
    let last = file.lines()[end - 1];
    let span = first.start..last.end;
    let pieces: Vec<build::Piece> = file.lines()[start - 1..end]
        .iter()
        .map(|l| build::Piece {
            content: l.start..l.content_end,
            eol: l.content_end..l.end,
        })
        .collect();
    let old_lines: Vec<&str> = file.lines()[start - 1..end]
        .iter()
        .map(|l| l.content(file.text))
        .collect();
    let region = MatchedSpan {
        span: span.clone(),
        map: (0..pieces.len()).map(Some).collect(),
        pieces,
    };
    let (new_lines, _) = snippet_lines(text);
    let new = NewText {
        terminated: !new_lines.is_empty() && last.end > last.content_end,
        lines: new_lines,
    };
    let eol = file.local_eol(&span);
    let written = build::build(
        file.text,
        &region,
        &old_lines,
        &new,
        &build::Transform::default(),
        eol,
    );
    let (range, t) = build::minimize(&file.text[span.clone()], &written);
    if range.is_empty() && t.is_empty() {
        return Err(refusal::no_change(start));
    }
    Ok(Located {
        replacements: vec![Replacement::new(
            span.start + range.start..span.start + range.end,
            t,
        )],
        matched_by: MatchedBy(vec![Pass::Lines]),
        occurrences: 1,
        lines: vec![start],
        spans: vec![span],
    })
}

fn replace_pattern(
    file: &FileIndex<'_>,
    pattern: &str,
    replacement: &str,
    all: bool,
) -> Result<Located, Refusal> {
    let re = RegexBuilder::new(pattern)
        .multi_line(true)
        .size_limit(1 << 22)
        .dfa_size_limit(1 << 22)
        .build()
        .map_err(|e| {
            Refusal::new(
                RefusalKind::InvalidPattern,
                format!(
                    "the pattern is not a valid regular expression (Rust `regex` syntax): {}",
                    text::clip(&e.to_string(), 400)
                ),
            )
        })?;
    let mut replacements = Vec::new();
    let mut lines = Vec::new();
    for caps in re.captures_iter(file.text) {
        let Some(m) = caps.get(0) else { continue };
        let mut expanded = String::new();
        caps.expand(replacement, &mut expanded);
        lines.push(file.line_of(m.start()));
        if m.as_str() != expanded {
            replacements.push(Replacement::new(m.range(), expanded));
        }
    }
    if lines.is_empty() {
        return Err(Refusal::new(
            RefusalKind::NotFound,
            format!(
                "the pattern `{}` matches nothing in the file; check it against the current text",
                text::clip(pattern, 120)
            ),
        ));
    }
    if lines.len() > 1 && !all {
        return Err(reword(
            refusal::ambiguous(file, &lines, "pattern"),
            "the pattern",
            "Make the pattern match exactly one place (include more of the line), or set all to \
             replace every match",
        ));
    }
    if replacements.is_empty() {
        return Err(refusal::no_change(lines[0]));
    }
    Ok(Located {
        occurrences: replacements.len(),
        spans: replacements.iter().map(|r| r.range.clone()).collect(),
        replacements,
        matched_by: MatchedBy(vec![Pass::Pattern]),
        lines,
    })
}

fn insert_at_anchor(
    file: &FileIndex<'_>,
    anchor: &str,
    text: &str,
    after: bool,
) -> Result<Located, Refusal> {
    if text.is_empty() {
        return Err(Refusal::new(
            RefusalKind::NoOp,
            "the text to insert is empty, so the edit would change nothing",
        ));
    }
    // NEW for locating purposes: the anchor kept, the text beside it.
    let probe = if after {
        format!("{anchor}\n{text}")
    } else {
        format!("{text}\n{anchor}")
    };
    let (_, mut occ) = find(file, anchor, &probe, ReplaceOptions::default()).map_err(|r| {
        reword(
            r,
            "the anchor",
            "Give a longer anchor (whole lines copied from the file, with the lines around them) \
             that occurs exactly once",
        )
    })?;
    for o in &mut occ {
        let idx = if after { o.parts.len() - 1 } else { 0 };
        let Some(part) = o.parts.get_mut(idx) else {
            continue;
        };
        let span = &part.region.span;
        let l0 = file.line_of(span.start) - 1;
        let starts_line = file.lines().get(l0).is_some_and(|l| l.start == span.start);
        let last = file.line_of(span.end.saturating_sub(1).max(span.start)) - 1;
        let ends_line = file
            .lines()
            .get(last)
            .is_some_and(|l| span.end == l.content_end || span.end == l.end);
        let (text_lines, _) = snippet_lines(text);
        let mut new_lines = part.old_lines.clone();
        if starts_line && ends_line {
            let ins = text_lines.iter().map(|s| s.to_string());
            if after {
                new_lines.extend(ins);
            } else {
                let mut v: Vec<String> = ins.collect();
                v.extend(new_lines);
                new_lines = v;
            }
        } else if after {
            let joined = format!("{}{text}", part.old_lines.join("\n"));
            new_lines = joined.split('\n').map(str::to_string).collect();
        } else {
            let joined = format!("{text}{}", part.old_lines.join("\n"));
            new_lines = joined.split('\n').map(str::to_string).collect();
        }
        part.new_lines = new_lines;
        if after {
            o.parts.truncate(idx + 1);
            o.parts.drain(..idx);
        } else {
            o.parts.truncate(1);
        }
    }
    realize(file, occ)
}

/// A refusal of the replace cascade, reworded for what the operation calls OLD (`the anchor`,
/// `the pattern`), with that operation's way out of an ambiguity.
fn reword(refusal: Refusal, subject: &str, way_out: &str) -> Refusal {
    let Refusal { kind, message } = refusal;
    let mut message = message
        .replacen("OLD matches", &format!("{subject} matches"), 1)
        .replacen("NEW is not in the file either. ", "", 1)
        .replacen("OLD was not found", &format!("{subject} was not found"), 1)
        .replacen(
            "(OLD line",
            &format!("({} line", subject.trim_start_matches("the ")),
            1,
        )
        .replace("Copy OLD exactly", &format!("Copy {subject} exactly"));
    if matches!(kind, RefusalKind::Ambiguous { .. })
        && let Some(i) = message.rfind("\nAdd surrounding lines to OLD")
    {
        message.truncate(i + 1);
        message.push_str(way_out);
    }
    if subject == "the pattern" {
        message = message.replacen(" (pattern match)", "", 1);
    }
    Refusal::new(kind, message)
}
