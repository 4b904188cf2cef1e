//! A target region rewritten whole: the answer of the "rewrite" edit protocol (one fenced block
//! holding the new text of known lines), turned into the smallest change that does it.
//!
//! Small models rewrite a function far more reliably than they copy an OLD string
//! (`docs/editing.md`, "edit protocols"), but a rewrite is also the easiest answer to get wrong
//! silently: a block holding only the changed line, the whole file, or the function with the
//! body elided would each destroy code if written over the target. So the block must line up
//! with the target before anything is written: it may drop or add lines, but it must be the
//! target rewritten, not a fragment or a superset of it. Lines the block keeps are the file's own
//! bytes (trailing whitespace, line endings), a block shifted left or right as a whole is
//! re-indented, and the change is one replacement per run of changed lines.

use std::ops::RangeInclusive;

use similar::{Algorithm, DiffTag, capture_diff_slices};

use crate::document::change::Replacement;

use super::locate::{FileIndex, Pass};
use super::refusal::{Refusal, RefusalKind};
use super::text::{self, IndentUnit, indent_cols, indent_of, is_blank, similarity};
use super::{Applied, Located, MatchedBy, finish, normalize};

/// Replaces the 1-based inclusive `lines` of `text` with `block` (the model's rewrite of them),
/// or refuses when the block does not line up with those lines.
pub fn rewrite_lines(
    text: &str,
    lines: RangeInclusive<usize>,
    block: &str,
) -> Result<Applied, Refusal> {
    rewrite(text, lines, block, None)
}

/// Replaces all of `text` with `block`, the model's complete new version of the file (`path`
/// names it in refusals), as the smallest change that does it: the answer of a develop step
/// that rewrites whole files (`docs/develop.md`, "Steps that rewrite"). Unlike
/// [`rewrite_lines`] the block may be much longer than the file (a stub implemented), but a
/// block that keeps less than half of a file's lines without starting and ending like it is
/// still a fragment and refused.
pub fn rewrite_whole(text: &str, path: &str, block: &str) -> Result<Applied, Refusal> {
    let n = FileIndex::new(text).lines().len().max(1);
    rewrite(text, 1..=n, block, Some(path))
}

/// `whole`: the file's path when `lines` are all of it.
fn rewrite(
    text: &str,
    lines: RangeInclusive<usize>,
    block: &str,
    whole: Option<&str>,
) -> Result<Applied, Refusal> {
    let file = FileIndex::new(text);
    let n = file.lines().len();
    let (start, end) = (*lines.start(), *lines.end());
    if start == 0 || start > end || end > n {
        return Err(Refusal::new(
            RefusalKind::LineOutOfRange,
            format!("cannot rewrite lines {start}-{end}: the file has {n} lines"),
        ));
    }
    let target: Vec<&str> = (start - 1..end).map(|i| file.content(i)).collect();
    let stripped = normalize::strip_line_numbers(block).map(|(s, _, _)| s);
    let block = stripped.as_deref().unwrap_or(block);
    let (raw, _) = text::snippet_lines(block);
    let raw: Vec<&str> = trim_blank_edges(&raw);
    let raw = match whole {
        Some(_) => raw,
        None => trim_echoed_context(&file, start, end, &target, raw),
    };
    let what = match whole {
        Some(path) => format!("file {path}"),
        None => format!("text of lines {start}-{end}"),
    };
    if raw.iter().all(|l| is_blank(l)) {
        return Err(Refusal::new(
            RefusalKind::Misaligned,
            format!(
                "the code block is empty; answer with the complete new {what} in one code block \
                 (to delete lines, say so in words)"
            ),
        ));
    }
    check_elision(&target, &raw, &what)?;
    let (new_lines, delta) = reindent(&file, &target, &raw);
    check_lines_up(&target, &new_lines, start, end, whole)?;

    // One replacement per run of changed lines; equal lines keep the file's bytes.
    let key = |l: &str| -> String {
        if is_blank(l) {
            String::new()
        } else {
            l.trim_end().to_owned()
        }
    };
    let old_keys: Vec<String> = target.iter().map(|l| key(l)).collect();
    let new_keys: Vec<String> = new_lines.iter().map(|l| key(l)).collect();
    let line = |i: usize| file.lines()[start - 1 + i];
    let eol = file.local_eol(&(line(0).start..line(target.len() - 1).end));
    let last_terminated = !line(target.len() - 1).terminator(text).is_empty();
    let mut replacements = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, &old_keys, &new_keys) {
        if op.tag() == DiffTag::Equal {
            continue;
        }
        let (old_range, new_range) = (op.old_range(), op.new_range());
        // Whole lines: from the start of the first replaced line to the start of the next kept
        // one (an insertion sits at the start of the line it precedes).
        let at = |i: usize| {
            if i < target.len() {
                line(i).start
            } else {
                line(target.len() - 1).end
            }
        };
        let span = at(old_range.start)..at(old_range.end);
        let mut written = String::new();
        for j in new_range {
            written.push_str(&new_lines[j]);
            written.push_str(eol);
        }
        // Appending after a last line without a newline: the break goes first, none after.
        if old_range.start == target.len() && !last_terminated && !written.is_empty() {
            written = format!("{eol}{}", written.strip_suffix(eol).unwrap_or(&written));
        } else if old_range.end == target.len()
            && !last_terminated
            && !written.is_empty()
            && end == n
        {
            written.truncate(written.len() - eol.len());
        }
        let original = &text[span.clone()];
        let (range, t) = super::build::minimize(original, &written);
        if range.is_empty() && t.is_empty() {
            continue;
        }
        replacements.push(Replacement::new(
            span.start + range.start..span.start + range.end,
            t,
        ));
    }
    if replacements.is_empty() {
        return Err(Refusal::new(
            RefusalKind::NoOp,
            format!(
                "the code block is the same as {} now, so nothing would change; make the \
                 change the instruction asks for",
                match whole {
                    Some(path) => format!("{path} is"),
                    None => format!("lines {start}-{end} as they are"),
                }
            ),
        ));
    }
    let mut passes = vec![Pass::Rewrite];
    if delta != 0 {
        passes.push(Pass::Indentation(delta));
    }
    let span = line(0).start..line(target.len() - 1).end;
    finish(
        text,
        vec![Located {
            replacements,
            matched_by: MatchedBy(passes),
            occurrences: 1,
            lines: vec![start],
            spans: vec![span],
        }],
    )
}

fn trim_blank_edges<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let first = lines
        .iter()
        .position(|l| !is_blank(l))
        .unwrap_or(lines.len());
    let last = lines
        .iter()
        .rposition(|l| !is_blank(l))
        .map_or(first, |i| i + 1);
    lines[first..last].to_vec()
}

/// Drops lines the model repeated from just outside the target (the class line above a method,
/// the next function's first line), when the target's own first or last line follows them.
fn trim_echoed_context<'a>(
    file: &FileIndex<'_>,
    start: usize,
    end: usize,
    target: &[&str],
    mut block: Vec<&'a str>,
) -> Vec<&'a str> {
    let same = |a: &str, b: &str| !is_blank(a) && a.trim() == b.trim();
    let first = target.iter().find(|l| !is_blank(l)).copied().unwrap_or("");
    let last = target
        .iter()
        .rev()
        .find(|l| !is_blank(l))
        .copied()
        .unwrap_or("");
    // Leading: block[..k] equals the k non-blank file lines before the target, block[k] is the
    // target's first line.
    if let Some(k) = block.iter().position(|l| same(l, first))
        && k > 0
        && repeats(
            block[..k].iter().rev().copied(),
            (0..start - 1).rev().map(|i| file.content(i)),
        )
    {
        block.drain(..k);
    }
    // Trailing: the mirror image.
    if let Some(k) = block.iter().rposition(|l| same(l, last))
        && k + 1 < block.len()
        && repeats(
            block[k + 1..].iter().copied(),
            (end..file.lines().len()).map(|i| file.content(i)),
        )
    {
        block.truncate(k + 1);
    }
    block
}

/// Whether the non-blank lines of `echo` are the non-blank file lines `outside`, both counted
/// from the target outwards (and there is at least one).
fn repeats<'a, 'b>(
    echo: impl Iterator<Item = &'a str>,
    outside: impl Iterator<Item = &'b str>,
) -> bool {
    let echo: Vec<&str> = echo.filter(|l| !is_blank(l)).collect();
    let outside: Vec<&str> = outside.filter(|l| !is_blank(l)).take(echo.len()).collect();
    !echo.is_empty()
        && echo.len() == outside.len()
        && echo.iter().zip(&outside).all(|(a, b)| a.trim() == b.trim())
}

/// A block with `// ... existing code ...` where the target has none would write the marker
/// over the code it stands for.
fn check_elision(target: &[&str], block: &[&str], what: &str) -> Result<(), Refusal> {
    let had = target.iter().any(|l| text::is_elision_marker(l, false));
    match block.iter().find(|l| text::is_elision_marker(l, false)) {
        Some(marker) if !had => Err(Refusal::new(
            RefusalKind::Elision,
            format!(
                "the code block leaves code out (`{}`), and writing it would delete that code; \
                 answer with the complete new {what}, every line written out",
                text::clip(marker.trim(), 60)
            ),
        )),
        _ => Ok(()),
    }
}

/// The block shifted so its first non-blank line has the target's indentation (models often
/// drop a method's indentation), in the file's indent unit. Returns the lines and the shift.
fn reindent(file: &FileIndex<'_>, target: &[&str], block: &[&str]) -> (Vec<String>, isize) {
    let unit = file.unit();
    let tw = unit.width();
    let first_target = target.iter().find(|l| !is_blank(l)).copied().unwrap_or("");
    let first_block = block.iter().find(|l| !is_blank(l)).copied().unwrap_or("");
    let delta = indent_cols(indent_of(first_target), tw) as isize
        - indent_cols(indent_of(first_block), tw) as isize;
    let uses_tabs = |l: &str| indent_of(l).contains('\t');
    let file_tabs = target.iter().any(|l| uses_tabs(l)) || matches!(unit, IndentUnit::Tabs);
    let block_mixed = block.iter().any(|l| uses_tabs(l)) != file_tabs;
    let lines = block
        .iter()
        .map(|l| {
            if is_blank(l) {
                return String::new();
            }
            if delta == 0 && !block_mixed {
                return l.trim_end_matches('\r').to_owned();
            }
            let ind = indent_of(l);
            let cols = (indent_cols(ind, tw) as isize + delta).max(0) as usize;
            let render = if file_tabs {
                IndentUnit::Tabs
            } else {
                IndentUnit::Spaces(tw)
            };
            render.render(cols, tw) + l[ind.len()..].trim_end_matches('\r')
        })
        .collect();
    (lines, delta)
}

/// The block must be the target rewritten: it keeps at least half of the target's lines, or it
/// starts and ends like the target (a rename touches most lines but not its edges).
fn check_lines_up(
    target: &[&str],
    block: &[String],
    start: usize,
    end: usize,
    whole: Option<&str>,
) -> Result<(), Refusal> {
    let t: Vec<&str> = target
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    let b: Vec<&str> = block
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    let (Some(tf), Some(tl)) = (t.first(), t.last()) else {
        return Ok(()); // a blank target: anything lines up
    };
    let (bf, bl) = (b[0], b[b.len() - 1]);
    let kept: usize = capture_diff_slices(Algorithm::Myers, &t, &b)
        .iter()
        .filter(|op| op.tag() == DiffTag::Equal)
        .map(|op| op.old_range().len())
        .sum();
    let alike = |x: &str, y: &str| x == y || similarity(x, y) >= 0.6;
    let edges = alike(tf, bf) && alike(tl, bl);
    // A whole file may grow without limit (a stub implemented); a region may not.
    let superset = whole.is_none() && b.len() > 3 * t.len() + 10;
    let fragment = t.len() >= 3 && b.len() * 2 < t.len() && kept * 2 < t.len();
    // A whole file answered with at least as many lines is not a part of it: a stub whose
    // skeleton comments the implementation drops (the 1.5B model's answers to js-roman, refused
    // three times as "a part of the file" before this) is rewritten, not cut.
    let replaced = whole.is_some() && b.len() >= t.len();
    let lines_up =
        (kept * 2 >= t.len() || edges || t.len() <= 2 || replaced) && !fragment && !superset;
    if lines_up {
        return Ok(());
    }
    let what = if superset {
        format!(
            "the code block has {} lines, many more than lines {start}-{end} ({}): it is not a \
             rewrite of those lines alone",
            b.len(),
            t.len()
        )
    } else if let Some(path) = whole {
        format!(
            "the code block ({} non-blank lines) keeps too little of {path} ({} non-blank \
             lines): it looks like a part of the file, and writing it would delete the rest",
            b.len(),
            t.len()
        )
    } else {
        format!(
            "the code block ({} non-blank lines) does not line up with lines {start}-{end} ({} \
             non-blank lines): it looks like a part of them, and writing it would delete the rest",
            b.len(),
            t.len()
        )
    };
    let whole_text = match whole {
        Some(path) => format!(
            "{what}; answer with the complete new file {path}, every line of it, in one code block"
        ),
        None => format!(
            "{what}; answer with the complete new text of lines {start}-{end}, from `{}` to `{}`, \
             in one code block",
            text::clip(tf, 60),
            text::clip(tl, 60)
        ),
    };
    Err(Refusal::new(RefusalKind::Misaligned, whole_text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "class A:\n    def f(self, x):\n        mid = x // 2\n\n        return mid\n\n    def g(self):\n        return 1\n";

    #[test]
    fn a_dedented_rewrite_is_reindented_and_minimal() {
        let block = "def f(self, x):\n    mid_value = x // 2\n\n    return mid_value\n";
        let a = rewrite_lines(FILE, 2..=5, block).unwrap();
        assert_eq!(
            a.text,
            "class A:\n    def f(self, x):\n        mid_value = x // 2\n\n        return mid_value\n\n    def g(self):\n        return 1\n"
        );
        assert_eq!(a.located[0].replacements.len(), 2, "{:?}", a.located);
        assert_eq!(a.matched_by().to_string(), "rewrite, indentation(+4)");
    }

    #[test]
    fn a_fragment_is_refused() {
        let file = "def f(x):\n    a = 1\n    b = 2\n    c = 3\n    return a + b + c\n";
        let r = rewrite_lines(file, 1..=5, "    b = 20\n").unwrap_err();
        assert_eq!(r.kind, RefusalKind::Misaligned, "{}", r.message);
        assert!(
            r.message.contains("from `def f(x):` to `return a + b + c`"),
            "{}",
            r.message
        );
    }

    #[test]
    fn echoed_context_lines_are_dropped() {
        let block = "class A:\n    def f(self, x):\n        mid = x // 3\n\n        return mid\n";
        let a = rewrite_lines(FILE, 2..=5, block).unwrap();
        assert!(
            a.text
                .starts_with("class A:\n    def f(self, x):\n        mid = x // 3\n"),
            "{}",
            a.text
        );
        assert_eq!(a.text.matches("class A:").count(), 1);
    }

    #[test]
    fn a_whole_file_may_grow_and_keeps_its_bytes() {
        let stub = "import math\r\n\r\ndef primes(limit):\r\n    pass\r\n";
        let block = "import math\n\ndef primes(limit):\n    out = []\n    for n in range(2, limit + 1):\n        if all(n % p for p in out):\n            out.append(n)\n    return out\n";
        let a = rewrite_whole(stub, "sieve.py", block).unwrap();
        assert!(
            a.text
                .starts_with("import math\r\n\r\ndef primes(limit):\r\n    out = []\r\n"),
            "{:?}",
            a.text
        );
        assert!(a.text.ends_with("    return out\r\n"), "{:?}", a.text);
        // The first lines are the file's own bytes: one replacement, after them.
        assert_eq!(a.located[0].replacements.len(), 1, "{:?}", a.located);
        let skeleton = "//\n// This is only a SKELETON file for the 'Roman Numerals' exercise.\n//\n\n\
                        export const toRoman = () => {\n  throw new Error('Remove this');\n};\n";
        let implemented = "const NUMERALS = [[1000, 'M'], [900, 'CM'], [5, 'V'], [4, 'IV'], [1, 'I']];\n\n\
                           export function toRoman(n) {\n  let out = '';\n  for (const [v, s] of NUMERALS) {\n\
                           \x20   while (n >= v) {\n      out += s;\n      n -= v;\n    }\n  }\n  return out;\n}\n";
        let a = rewrite_whole(skeleton, "roman-numerals.js", implemented).unwrap();
        assert_eq!(a.text, implemented);
        let long: String = (0..40).map(|i| format!("x{i} = {i}\n")).collect();
        let r = rewrite_whole(&long, "big.py", "def only_new():\n    return 1\n").unwrap_err();
        assert_eq!(r.kind, RefusalKind::Misaligned, "{}", r.message);
        assert!(
            r.message.contains("complete new file big.py"),
            "{}",
            r.message
        );
        let same = rewrite_whole(
            stub,
            "sieve.py",
            "import math\n\ndef primes(limit):\n    pass\n",
        );
        assert_eq!(same.unwrap_err().kind, RefusalKind::NoOp);
    }

    #[test]
    fn an_elided_body_is_refused() {
        let r = rewrite_lines(
            FILE,
            2..=5,
            "    def f(self, x):\n        # ... existing code ...\n        return mid + 1\n",
        )
        .unwrap_err();
        assert_eq!(r.kind, RefusalKind::Elision, "{}", r.message);
    }
}
