//! The edit engine: turn "replace OLD with NEW in this text" (and its line, anchor and batch
//! cousins) into a precise [`TextEdit`], or into a [`Refusal`] that tells the model exactly how
//! to fix its request. `docs/editing.md` is the contract.
//!
//! The one rule: never change text the model did not mean. Every lenient pass of the cascade
//! maps what it found back to the real bytes of the file and counts matches there; more than one
//! is a refusal naming every line (unless `replace_all`). Lines the model left unchanged are
//! copied from the file, not from the model's copy of them.
//!
//! Pure: text in, change or refusal out. No I/O, no protocol types, and no input may panic.

mod build;
pub mod diff;
pub mod formats;
pub mod ledger;
mod locate;
mod normalize;
pub mod ops;
mod refusal;
mod rewrite;
pub mod streamed;
pub mod text;
pub mod whole;

use std::fmt;
use std::ops::Range;

use crate::document::change::{Replacement, TextEdit};

use self::build::{MatchedSpan, NewText};
use self::locate::{CascadeOutcome, FileIndex, Occurrence, Variant};

pub use self::diff::unified_diff;
pub use self::ledger::Ledger;
pub use self::locate::Pass;
pub use self::ops::{Operation, apply, apply_batch};
pub use self::refusal::{Refusal, RefusalKind};
pub use self::rewrite::{rewrite_lines, rewrite_whole};

/// Options of a replace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplaceOptions {
    /// Replace every place OLD matches instead of refusing when there is more than one.
    pub replace_all: bool,
}

/// The passes that found OLD, in order (a reading such as `line-numbers`, then the pass).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchedBy(pub Vec<Pass>);

impl fmt::Display for MatchedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// One located edit, not yet applied: the replacements against the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub replacements: Vec<Replacement>,
    pub matched_by: MatchedBy,
    /// How many places were changed (more than one only with `replace_all`).
    pub occurrences: usize,
    /// 1-based first line of each place, in the original text.
    pub lines: Vec<usize>,
    /// The byte range of each place in the original text; every replacement lies inside one.
    pub spans: Vec<Range<usize>>,
}

/// An applied edit: the new text and what it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    pub edit: TextEdit,
    /// One entry per operation (one for a single replace).
    pub located: Vec<Located>,
}

impl Applied {
    /// The matching pass of the first operation.
    pub fn matched_by(&self) -> MatchedBy {
        self.located
            .first()
            .map(|l| l.matched_by.clone())
            .unwrap_or_default()
    }

    /// Places changed across all operations.
    pub fn replacements(&self) -> usize {
        self.located.iter().map(|l| l.occurrences).sum()
    }
}

/// Replaces OLD with NEW in `text` through the matching cascade, or refuses.
pub fn replace(
    text: &str,
    old: &str,
    new: &str,
    options: ReplaceOptions,
) -> Result<Applied, Refusal> {
    let located = locate_replace(text, old, new, options)?;
    finish(text, vec![located])
}

/// Locates a replace without applying it (batches combine several of these).
pub fn locate_replace(
    text: &str,
    old: &str,
    new: &str,
    options: ReplaceOptions,
) -> Result<Located, Refusal> {
    let file = FileIndex::new(text);
    let (_, occurrences) = find(&file, old, new, options)?;
    realize(&file, occurrences)
}

pub(crate) fn finish(text: &str, located: Vec<Located>) -> Result<Applied, Refusal> {
    let all: Vec<Replacement> = located
        .iter()
        .flat_map(|l| l.replacements.iter().cloned())
        .collect();
    let edit = TextEdit::new(all).map_err(|e| {
        Refusal::new(
            RefusalKind::Overlap,
            format!("the edits overlap ({e}); combine them into one edit or make them touch different lines"),
        )
    })?;
    let new_text = edit.apply(text).map_err(|e| {
        Refusal::new(
            RefusalKind::Overlap,
            format!("the located edit does not fit the text ({e})"),
        )
    })?;
    Ok(Applied {
        text: new_text,
        edit,
        located,
    })
}

/// Runs the cascade over every reading of OLD and returns the places it matches, after the
/// uniqueness rule.
pub(crate) fn find(
    file: &FileIndex<'_>,
    old: &str,
    new: &str,
    options: ReplaceOptions,
) -> Result<(Variant, Vec<Occurrence>), Refusal> {
    find_scoped(file, old, new, options, None)
}

/// Like [`replace`], for formats that name a context line to find the hunk under (a patch's
/// `@@ def name():`). When OLD matches several places, the one inside the block that context
/// line opens is taken — if there is exactly one there. A context line that is not in the file,
/// or is in it more than once, is ignored (OLD must then be unique on its own).
pub fn replace_in_context(
    text: &str,
    context: &str,
    old: &str,
    new: &str,
    options: ReplaceOptions,
) -> Result<Applied, Refusal> {
    let file = FileIndex::new(text);
    let scope = context_scope(&file, context);
    let (_, occurrences) = find_scoped(&file, old, new, options, scope)?;
    let located = realize(&file, occurrences)?;
    finish(text, vec![located])
}

/// The 1-based line range of the block opened by the one line matching `context`.
fn context_scope(file: &FileIndex<'_>, context: &str) -> Option<Range<usize>> {
    let c = context.trim();
    if c.is_empty() {
        return None;
    }
    let find = |exact: bool| -> Vec<usize> {
        (0..file.lines().len())
            .filter(|&i| {
                let t = file.content(i).trim();
                if exact {
                    t == c
                } else {
                    c.len() >= 4 && t.contains(c)
                }
            })
            .collect()
    };
    let mut hits = find(true);
    if hits.is_empty() {
        hits = find(false);
    }
    let [line] = hits.as_slice() else {
        return None;
    };
    let end = locate::block_end_after(file, *line, text::indent_of(file.content(*line)));
    Some(line + 1..end + 2)
}

fn find_scoped(
    file: &FileIndex<'_>,
    old: &str,
    new: &str,
    options: ReplaceOptions,
    scope: Option<Range<usize>>,
) -> Result<(Variant, Vec<Occurrence>), Refusal> {
    if old.is_empty() {
        return Err(refusal::empty_old());
    }
    if old == new || old.replace("\r\n", "\n") == new.replace("\r\n", "\n") {
        return Err(refusal::no_op());
    }
    check_new_elision(file, old, new)?;
    let variants = variants(old, new);
    for v in &variants {
        match locate::run_passes(file, v) {
            CascadeOutcome::Matches(occ) => {
                let (v, occ) = choose(file, v.clone(), occ, options, scope.clone())?;
                if let [one] = occ.as_slice()
                    && let Some(lines) = already_applied(file, &v, one)
                {
                    return Err(refusal::applied_around(file, first_line(file, one), lines));
                }
                return Ok((v, occ));
            }
            CascadeOutcome::ElisionProblem(msg) => {
                return Err(Refusal::new(RefusalKind::Elision, msg));
            }
            CascadeOutcome::TooCostly => return Err(refusal::too_repetitive()),
            CascadeOutcome::None => {}
        }
    }
    for v in &variants {
        let found = locate::fuzzy(file, v);
        if file.exhausted() {
            return Err(refusal::too_repetitive());
        }
        if let Some(o) = found {
            return choose(file, v.clone(), vec![o], options, scope.clone());
        }
    }
    let closest_old = variants.last().map_or(old, |v| v.old.as_str());
    Err(refusal::not_found(
        file,
        closest_old,
        new_present(file, new),
    ))
}

fn variants(old: &str, new: &str) -> Vec<Variant> {
    let mut out = vec![Variant {
        old: old.to_string(),
        new: new.to_string(),
        passes: Vec::new(),
        hint_line: None,
    }];
    if let Some((stripped, first, style)) = normalize::strip_line_numbers(old) {
        out.push(Variant {
            old: stripped,
            new: normalize::strip_new_line_numbers(new, style),
            passes: vec![Pass::LineNumbers],
            hint_line: Some(first),
        });
    }
    if let Some(inner) = normalize::strip_fence(old) {
        out.push(Variant {
            old: inner,
            new: normalize::strip_fence(new).unwrap_or_else(|| new.to_string()),
            passes: vec![Pass::Fences],
            hint_line: None,
        });
    }
    if let Some(unescaped) = normalize::html_unescape(old) {
        out.push(Variant {
            old: unescaped,
            new: normalize::html_unescape(new).unwrap_or_else(|| new.to_string()),
            passes: vec![Pass::HtmlEscaped],
            hint_line: None,
        });
    }
    if let Some(unescaped) = normalize::json_unescape(old) {
        let new = if new.contains('\n') {
            new.to_string()
        } else {
            normalize::json_unescape(new).unwrap_or_else(|| new.to_string())
        };
        out.push(Variant {
            old: unescaped,
            new,
            passes: vec![Pass::JsonEscaped],
            hint_line: None,
        });
    }
    out
}

/// NEW with an elision marker OLD does not have would write the marker over real code.
fn check_new_elision(file: &FileIndex<'_>, old: &str, new: &str) -> Result<(), Refusal> {
    let (old_lines, _) = text::snippet_lines(old);
    let (new_lines, _) = text::snippet_lines(new);
    let old_markers: Vec<&str> = old_lines
        .iter()
        .filter(|l| text::is_elision_marker(l, false))
        .map(|l| l.trim())
        .collect();
    for l in new_lines {
        if text::is_elision_marker(l, false) {
            let t = l.trim();
            if old_markers.is_empty() && !file.text.contains(t) {
                return Err(Refusal::new(
                    RefusalKind::Elision,
                    format!(
                        "NEW contains the elision marker `{}` but OLD has none, so writing NEW \
                         would replace real code with the marker; send NEW in full, or elide the \
                         same part of OLD with the same marker",
                        text::clip(t, 80)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Applies the uniqueness rule to the places a pass found.
fn choose(
    file: &FileIndex<'_>,
    v: Variant,
    mut occ: Vec<Occurrence>,
    options: ReplaceOptions,
    scope: Option<Range<usize>>,
) -> Result<(Variant, Vec<Occurrence>), Refusal> {
    occ.sort_by_key(|o| (o.span().start, o.span().end));
    occ.dedup_by_key(|o| o.span());
    if occ.len() > 1 {
        if options.replace_all {
            // Non-overlapping, first come first served (as `str::replace`).
            let mut kept: Vec<Occurrence> = Vec::new();
            for o in occ {
                if kept.last().is_none_or(|k| k.span().end <= o.span().start) {
                    kept.push(o);
                }
            }
            occ = kept;
        } else {
            let mut at_hint: Vec<&Occurrence> = match v.hint_line {
                Some(h) => occ.iter().filter(|o| first_line(file, o) == h).collect(),
                None => Vec::new(),
            };
            if at_hint.len() != 1
                && let Some(scope) = &scope
            {
                at_hint = occ
                    .iter()
                    .filter(|o| scope.contains(&first_line(file, o)))
                    .collect();
            }
            if at_hint.len() == 1 {
                let one = at_hint[0].clone();
                occ = vec![one];
            } else {
                let lines: Vec<usize> = occ.iter().map(|o| first_line(file, o)).collect();
                let pass = occ[0]
                    .passes
                    .last()
                    .map_or_else(|| "exact".to_string(), |p| p.to_string());
                return Err(refusal::ambiguous(file, &lines, &pass));
            }
        }
    }
    Ok((v, occ))
}

fn first_line(file: &FileIndex<'_>, o: &Occurrence) -> usize {
    let span = o.span();
    // A span starting at the very end of a line (after its text) belongs to the next line.
    let mut line = file.line_of(span.start);
    if let Some(l) = file.lines().get(line - 1)
        && span.start == l.end
        && line < file.lines().len()
    {
        line += 1;
    }
    line
}

/// Builds the replacements for located occurrences.
pub(crate) fn realize(
    file: &FileIndex<'_>,
    occurrences: Vec<Occurrence>,
) -> Result<Located, Refusal> {
    let mut replacements = Vec::new();
    let mut lines = Vec::new();
    let mut spans = Vec::new();
    let mut matched_by = MatchedBy::default();
    let count = occurrences.len();
    for o in &occurrences {
        lines.push(first_line(file, o));
        let mut hull = o.span();
        if matched_by.0.is_empty() {
            matched_by = MatchedBy(o.passes.clone());
        }
        let last_part = o.parts.len().saturating_sub(1);
        for (n, part) in o.parts.iter().enumerate() {
            let mut region = part.region.clone();
            if part.new_lines.is_empty() {
                extend_to_whole_lines(file, &mut region);
            }
            let new_lines = without_the_files_edge_blanks(
                file,
                &region.span,
                &part.old_lines,
                &part.new_lines,
                (n == 0, n == last_part),
            );
            // At the end of a file without a final newline, NEW does not add one.
            let at_unterminated_end =
                region.span.end == file.text.len() && !file.text.ends_with('\n');
            let new = NewText {
                lines: new_lines.iter().map(String::as_str).collect(),
                terminated: !new_lines.is_empty() && part.old_terminated && !at_unterminated_end,
            };
            let old_refs: Vec<&str> = part.old_lines.iter().map(String::as_str).collect();
            let eol = file.local_eol(&region.span);
            let mut transform = part.transform.clone();
            transform.file_unit = file.unit_for(&part.new_lines);
            let written = build::build(file.text, &region, &old_refs, &new, &transform, eol);
            hull.start = hull.start.min(region.span.start);
            hull.end = hull.end.max(region.span.end);
            let original = &file.text[region.span.clone()];
            let (range, text) = build::minimize(original, &written);
            if range.is_empty() && text.is_empty() {
                continue;
            }
            replacements.push(Replacement::new(
                region.span.start + range.start..region.span.start + range.end,
                text,
            ));
        }
        spans.push(hull);
    }
    if replacements.is_empty() {
        return Err(refusal::no_change(lines.first().copied().unwrap_or(1)));
    }
    Ok(Located {
        replacements,
        matched_by,
        occurrences: count,
        lines,
        spans,
    })
}

/// NEW without the blank lines it adds at either end of the match (more than OLD has there)
/// that the file already has right there: a model that copied a function together with the
/// blank lines after it (or before it), while its OLD stopped at the function, means the
/// file's own blank lines, which are written once. `ends` says which ends of the whole match
/// this part has (the inner ends of an elided match are the model's to space).
fn without_the_files_edge_blanks<'n>(
    file: &FileIndex<'_>,
    span: &Range<usize>,
    old: &[String],
    new: &'n [String],
    ends: (bool, bool),
) -> &'n [String] {
    if new.iter().all(|l| text::is_blank(l)) {
        return new;
    }
    let leading = |lines: &[String]| lines.iter().take_while(|l| text::is_blank(l)).count();
    let trailing = |lines: &[String]| lines.iter().rev().take_while(|l| text::is_blank(l)).count();
    let lines = file.lines();
    let blank = |l: &text::Line| text::is_blank(l.content(file.text));
    // Blank file lines just before the match, when it starts at a line start.
    let first = lines.partition_point(|l| l.end <= span.start);
    let before = match lines.get(first) {
        Some(l) if l.start == span.start => {
            lines[..first].iter().rev().take_while(|l| blank(l)).count()
        }
        None if first > 0 && lines[first - 1].end == span.start => {
            lines[..first].iter().rev().take_while(|l| blank(l)).count()
        }
        _ => 0,
    };
    // Blank file lines just after the match, when it ends at a line's end (before or after
    // its line break).
    let mut next = lines.partition_point(|l| l.end <= span.end);
    let after = match lines.get(next) {
        Some(l) if l.start == span.end => lines[next..].iter().take_while(|l| blank(l)).count(),
        Some(l) if l.content_end == span.end && l.start < span.end => {
            next += 1;
            lines[next..].iter().take_while(|l| blank(l)).count()
        }
        _ => 0,
    };
    let front = if ends.0 {
        leading(new).saturating_sub(leading(old)).min(before)
    } else {
        0
    };
    let back = if ends.1 {
        trailing(new).saturating_sub(trailing(old)).min(after)
    } else {
        0
    };
    &new[front..new.len() - back]
}

/// Deleting whole lines (NEW empty) takes their line break too, so no blank line is left behind.
fn extend_to_whole_lines(file: &FileIndex<'_>, region: &mut MatchedSpan) {
    let span = region.span.clone();
    let first = file.line_of(span.start) - 1;
    let Some(l0) = file.lines().get(first) else {
        return;
    };
    if span.start != l0.start || span.is_empty() {
        return;
    }
    let last = file.line_of(span.end.saturating_sub(1)) - 1;
    let Some(ll) = file.lines().get(last) else {
        return;
    };
    if span.end == ll.content_end && ll.end > ll.content_end {
        region.span.end = ll.end;
        if let Some(p) = region.pieces.last_mut() {
            p.eol = ll.content_end..ll.end;
        }
    }
}

/// NEW is OLD with lines (or text) added around it, and the file already has those additions
/// around the place OLD matched: applying again would duplicate them. Returns NEW's 1-based
/// line range in the file.
fn already_applied(file: &FileIndex<'_>, v: &Variant, o: &Occurrence) -> Option<Range<usize>> {
    let [part] = o.parts.as_slice() else {
        return None;
    };
    let span = &part.region.span;
    // Byte level: NEW = P + OLD + Q, and P, Q are already on either side of the match.
    if let Some(k) = v.new.find(v.old.as_str()) {
        let (p, q) = (&v.new[..k], &v.new[k + v.old.len()..]);
        let before = span
            .start
            .checked_sub(p.len())
            .and_then(|s| file.text.get(s..span.start));
        let after = file.text.get(span.end..span.end + q.len());
        if before == Some(p) && after == Some(q) && !(p.trim().is_empty() && q.trim().is_empty()) {
            let start = span.start - p.len();
            return Some(file.line_of(start)..file.line_of(span.end + q.len()) + 1);
        }
    }
    // Line level, for the lenient passes: NEW's lines = P + OLD's lines + Q.
    let (old_lines, _) = text::snippet_lines(&v.old);
    let (new_lines, _) = text::snippet_lines(&v.new);
    let n = old_lines.len();
    if n == 0 || new_lines.len() <= n {
        return None;
    }
    let k = (0..=new_lines.len() - n).find(|&k| new_lines[k..k + n] == old_lines[..])?;
    let (p, q) = (&new_lines[..k], &new_lines[k + n..]);
    if p.iter().chain(q).all(|l| text::is_blank(l)) {
        return None;
    }
    let first = file.line_of(span.start) - 1;
    let last = file.line_of(span.end.saturating_sub(1).max(span.start)) - 1;
    if p.len() > first || last + 1 + q.len() > file.lines().len() {
        return None;
    }
    let same = |a: &str, b: &str| a.trim() == b.trim();
    let p_ok = p
        .iter()
        .enumerate()
        .all(|(i, l)| same(l, file.content(first - p.len() + i)));
    let q_ok = q
        .iter()
        .enumerate()
        .all(|(i, l)| same(l, file.content(last + 1 + i)));
    (p_ok && q_ok).then(|| first - p.len() + 1..last + q.len() + 2)
}

/// The line where NEW already is, when it is distinctive enough to say so.
fn new_present(file: &FileIndex<'_>, new: &str) -> Option<usize> {
    let nonblank = new.lines().filter(|l| !text::is_blank(l)).count();
    if nonblank == 0 || (nonblank < 2 && new.trim().len() < 12) {
        return None;
    }
    let v = Variant {
        old: new.to_string(),
        new: String::new(),
        passes: Vec::new(),
        hint_line: None,
    };
    match locate::run_passes(file, &v) {
        CascadeOutcome::Matches(occ) => occ.first().map(|o| first_line(file, o)),
        _ => None,
    }
}

/// The 1-based line range a byte range covers (for messages and previews).
pub fn line_range(text: &str, range: &Range<usize>) -> Range<usize> {
    let lines = text::lines(text);
    let a = text::line_number_at(&lines, range.start);
    let b = text::line_number_at(&lines, range.end.saturating_sub(1).max(range.start));
    a..b + 1
}

#[cfg(test)]
mod tests;
