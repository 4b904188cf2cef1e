//! Turns a located region plus the model's NEW into the replacement text for that region.
//!
//! The rule that keeps edits honest: a line the model did not change (equal in OLD and NEW) is
//! copied from the *file*, never from the model's copy — so the file keeps its own trailing
//! whitespace, typographic characters, indentation characters and line endings wherever the model
//! meant "leave this". Only lines the model added or changed are taken from NEW, converted to the
//! file's frame (indentation shift, indent unit, line ending, ASCII for typographic slips).

use std::ops::Range;

use similar::{Algorithm, DiffOp, DiffTag, capture_diff_slices};

use super::text::{IndentUnit, indent_cols, indent_of, is_blank};

/// One file line inside a located span. `content` excludes the terminator; `eol` is the part of
/// the terminator inside the span (empty when the span ends before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    pub content: Range<usize>,
    pub eol: Range<usize>,
}

/// Where OLD (or one elision segment of it) is in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MatchedSpan {
    pub span: Range<usize>,
    pub pieces: Vec<Piece>,
    /// For each OLD line, the piece it corresponds to (`None` for an OLD blank line the file
    /// does not have).
    pub map: Vec<Option<usize>>,
}

/// How NEW's added or changed lines are brought into the file's frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Transform {
    pub reindent: Option<Reindent>,
    /// The span starts at a line start but OLD's first line was copied without the whitespace
    /// before it: NEW's first line gets this prefix back when it is written.
    pub first_prefix: Option<String>,
    /// Typographic characters the model used where the file has ASCII.
    pub typo_fold: Vec<char>,
    /// The model added trailing whitespace the file does not have.
    pub trim_trailing: bool,
    /// The file indents with this unit only: leading tabs (or spaces) of the other kind in an
    /// added line are converted, when no reindent is in force.
    pub file_unit: Option<IndentUnit>,
    /// OLD's lines equal the file's up to typographic characters, one for one: a changed line
    /// is rewritten by applying the model's OLD→NEW character edits to the real line, so the
    /// characters the model did not touch keep the file's form.
    pub merge_chars: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reindent {
    /// Columns to add to every changed line (negative: remove).
    pub delta: isize,
    pub tab_width: usize,
    pub unit: IndentUnit,
}

/// NEW split into lines, with whether its last line ends with a newline.
pub(crate) struct NewText<'a> {
    pub lines: Vec<&'a str>,
    pub terminated: bool,
}

/// One line of OLD as the file has it: a line the model sent (`old`), mapped to the file line
/// it matched (`piece`), or a file line the model's OLD skipped (`old: None`: a blank line it
/// never saw).
struct Entry {
    old: Option<usize>,
    piece: Option<usize>,
}

/// Builds the text that replaces `region.span`.
///
/// NEW is compared with OLD *as the file has it*: the blank lines OLD skipped are put back
/// first, so a blank line NEW keeps (copied from the file while OLD was written from memory)
/// maps onto the file's own line instead of being written a second time. A skipped line NEW
/// drops stays, unless the lines on both sides of it are deleted (the model never saw it).
pub(crate) fn build(
    file: &str,
    region: &MatchedSpan,
    old_lines: &[&str],
    new: &NewText<'_>,
    transform: &Transform,
    local_eol: &str,
) -> String {
    let mut entries: Vec<Entry> = Vec::with_capacity(old_lines.len() + 2);
    let mut cursor = 0usize;
    let skipped = |entries: &mut Vec<Entry>, from: usize, to: usize| {
        for q in from..to {
            entries.push(Entry {
                old: None,
                piece: Some(q),
            });
        }
    };
    for i in 0..old_lines.len() {
        let piece = region.map.get(i).copied().flatten();
        if let Some(p) = piece.filter(|p| *p < region.pieces.len()) {
            skipped(&mut entries, cursor, p);
            cursor = cursor.max(p + 1);
        }
        entries.push(Entry {
            old: Some(i),
            piece: piece.filter(|p| *p < region.pieces.len()),
        });
    }
    skipped(&mut entries, cursor, region.pieces.len());

    let key = |l: &str| -> String {
        if is_blank(l) {
            String::new()
        } else {
            l.to_string()
        }
    };
    let old_keys: Vec<String> = entries
        .iter()
        .map(|e| match (e.old, e.piece) {
            (Some(i), _) => key(old_lines[i]),
            (None, Some(p)) => key(&file[region.pieces[p].content.clone()]),
            (None, None) => String::new(),
        })
        .collect();
    let new_keys: Vec<String> = new.lines.iter().map(|l| key(l)).collect();
    let ops = capture_diff_slices(Algorithm::Myers, &old_keys, &new_keys);

    // Which new line each entry is kept as (`None`: deleted or replaced).
    let mut kept: Vec<Option<usize>> = vec![None; entries.len()];
    for op in &ops {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = *op
        {
            for k in 0..len {
                kept[old_index + k] = Some(new_index + k);
            }
        }
    }
    // A skipped line nobody kept stays when a neighbouring line the model sent stays.
    let real_kept = |mut range: Box<dyn Iterator<Item = usize>>| -> Option<bool> {
        range
            .find(|&k| entries[k].old.is_some())
            .map(|k| kept[k].is_some())
    };
    let stays: Vec<bool> = (0..entries.len())
        .map(|i| {
            if entries[i].old.is_some() || kept[i].is_some() {
                return false;
            }
            let before = real_kept(Box::new((0..i).rev())).unwrap_or(true);
            let after = real_kept(Box::new(i + 1..entries.len())).unwrap_or(false);
            before || after
        })
        .collect();

    let n_new = new.lines.len();
    let first_nb = new.lines.iter().position(|l| !is_blank(l));
    let new_term = |j: usize| j + 1 < n_new || new.terminated;
    let mut out = String::with_capacity(region.span.len() + 64);
    let emit_entry = |out: &mut String, i: usize| {
        let Some(p) = entries[i].piece else {
            return; // an OLD blank line the file does not have: nothing to keep
        };
        match kept[i] {
            Some(j) => write_piece(out, file, &region.pieces[p], new_term(j), local_eol),
            None if stays[i] => write_piece(out, file, &region.pieces[p], true, local_eol),
            None => {}
        }
    };
    for op in ops {
        // Lines of OLD first (kept ones written, the rest dropped), then the new lines of an
        // insertion or replacement.
        let (old_range, new_range) = (op.old_range(), op.new_range());
        for k in old_range.clone() {
            emit_entry(&mut out, k);
        }
        if op.tag() == DiffTag::Equal {
            continue;
        }
        let merged: Option<Vec<String>> = (op.tag() == DiffTag::Replace
            && transform.merge_chars
            && transform.reindent.is_none()
            && old_range.len() == new_range.len())
        .then(|| {
            old_range
                .clone()
                .zip(new_range.clone())
                .map(|(k, j)| {
                    let e = &entries[k];
                    let (i, p) = (e.old?, e.piece?);
                    let real = &file[region.pieces.get(p)?.content.clone()];
                    merge_line(real, old_lines[i], new.lines[j])
                })
                .collect()
        })
        .flatten();
        match merged {
            Some(lines) => {
                for (line, j) in lines.iter().zip(new_range) {
                    out.push_str(&fold_chars(line, &transform.typo_fold));
                    if new_term(j) {
                        out.push_str(local_eol);
                    }
                }
            }
            None => {
                for j in new_range {
                    write_new(
                        &mut out,
                        new,
                        j,
                        first_nb,
                        transform,
                        local_eol,
                        new_term(j),
                    );
                }
            }
        }
    }
    out
}

fn write_piece(out: &mut String, file: &str, piece: &Piece, terminated: bool, local_eol: &str) {
    out.push_str(&file[piece.content.clone()]);
    if terminated {
        if piece.eol.is_empty() {
            out.push_str(local_eol);
        } else {
            out.push_str(&file[piece.eol.clone()]);
        }
    }
}

fn write_new(
    out: &mut String,
    new: &NewText<'_>,
    j: usize,
    first_nb: Option<usize>,
    t: &Transform,
    local_eol: &str,
    terminated: bool,
) {
    let raw = new.lines[j];
    let mut line: String = if t.typo_fold.is_empty() {
        raw.to_string()
    } else {
        raw.chars()
            .map(|c| {
                if t.typo_fold.contains(&c) {
                    super::text::typographic_ascii(c).unwrap_or(c)
                } else {
                    c
                }
            })
            .collect()
    };
    if t.trim_trailing {
        line.truncate(line.trim_end().len());
    }
    if Some(j) == first_nb
        && let Some(prefix) = &t.first_prefix
    {
        if let Some(r) = t.reindent {
            // The prefix is the file's indentation of the first line; NEW's own indentation of
            // its first line is relative to it.
            let cols =
                indent_cols(prefix, r.tab_width) + indent_cols(indent_of(&line), r.tab_width);
            let body = line.trim_start_matches([' ', '\t']).to_string();
            line = r.unit.render(cols, r.tab_width) + &body;
        } else {
            line = format!("{prefix}{line}");
        }
    } else if let Some(r) = t.reindent
        && !is_blank(&line)
    {
        let ind = indent_of(&line);
        let cols = indent_cols(ind, r.tab_width) as isize + r.delta;
        let body = line[ind.len()..].to_string();
        line = r.unit.render(cols.max(0) as usize, r.tab_width) + &body;
    }
    if t.reindent.is_none()
        && let Some(unit) = t.file_unit
    {
        line = convert_unit(&line, unit);
    }
    if is_blank(&line) && t.reindent.is_some() {
        line.clear();
    }
    out.push_str(&line);
    if terminated {
        out.push_str(local_eol);
    }
}

/// `new` is `old` edited; `real` is the file's line that `old` copies one character for one
/// (typographic characters aside). Applies the character edits to `real`.
fn merge_line(real: &str, old: &str, new: &str) -> Option<String> {
    let r: Vec<char> = real.chars().collect();
    let o: Vec<char> = old.chars().collect();
    if r.len() != o.len() || r.len() > 2_000 {
        return None;
    }
    let fold = |c: char| super::text::typographic_ascii(c).unwrap_or(c);
    if !r.iter().zip(&o).all(|(a, b)| fold(*a) == fold(*b)) {
        return None;
    }
    let n: Vec<char> = new.chars().collect();
    let mut out = String::with_capacity(new.len());
    for op in capture_diff_slices(Algorithm::Myers, &o, &n) {
        match op {
            DiffOp::Equal { old_index, len, .. } => out.extend(&r[old_index..old_index + len]),
            DiffOp::Insert {
                new_index, new_len, ..
            }
            | DiffOp::Replace {
                new_index, new_len, ..
            } => out.extend(&n[new_index..new_index + new_len]),
            DiffOp::Delete { .. } => {}
        }
    }
    Some(out)
}

fn fold_chars(line: &str, fold: &[char]) -> String {
    if fold.is_empty() {
        return line.to_string();
    }
    line.chars()
        .map(|c| {
            if fold.contains(&c) {
                super::text::typographic_ascii(c).unwrap_or(c)
            } else {
                c
            }
        })
        .collect()
}

/// Leading tabs in a spaces-only file become spaces; leading spaces (whole levels of 4) in a
/// tabs-only file become tabs. Anything else is left as the model wrote it.
fn convert_unit(line: &str, unit: IndentUnit) -> String {
    let ind = indent_of(line);
    match unit {
        IndentUnit::Spaces(n) if ind.contains('\t') => {
            let cols = indent_cols(ind, n);
            format!("{}{}", " ".repeat(cols), &line[ind.len()..])
        }
        IndentUnit::Tabs
            if !ind.is_empty() && !ind.contains('\t') && ind.len().is_multiple_of(4) =>
        {
            format!("{}{}", "\t".repeat(ind.len() / 4), &line[ind.len()..])
        }
        _ => line.to_string(),
    }
}

/// The smallest replacement that turns `original` into `replacement`: common prefix and suffix
/// are left alone (on character boundaries). Returns the sub-range of `original` and the text.
pub(crate) fn minimize(original: &str, replacement: &str) -> (Range<usize>, String) {
    let a = original.as_bytes();
    let b = replacement.as_bytes();
    let mut pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    while pre > 0 && !(original.is_char_boundary(pre) && replacement.is_char_boundary(pre)) {
        pre -= 1;
    }
    let max_suf = a.len().min(b.len()) - pre;
    let mut suf = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suf)
        .take_while(|(x, y)| x == y)
        .count();
    while suf > 0
        && !(original.is_char_boundary(a.len() - suf)
            && replacement.is_char_boundary(b.len() - suf))
    {
        suf -= 1;
    }
    (
        pre..a.len() - suf,
        replacement[pre..b.len() - suf].to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimizes_to_the_changed_bytes() {
        assert_eq!(minimize("abcdef", "abXdef"), (2..3, "X".into()));
        assert_eq!(minimize("aaa", "aaaa"), (3..3, "a".into()));
        assert_eq!(minimize("héllo", "hállo"), (1..3, "á".into()));
        assert_eq!(minimize("same", "same"), (4..4, String::new()));
    }
}
