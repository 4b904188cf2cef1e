//! The matching cascade: find where in the file the model's OLD text is, from the strictest
//! reading to the most lenient, and report every place a pass matches.
//!
//! Each pass maps what it found back to real byte ranges of the file. The first pass that
//! matches anywhere decides; its matches are counted on those real ranges, so a lenient pass that
//! finds two places is an ambiguity, never a guess. Nothing here picks between two candidates
//! except the fuzzy pass, and only when one candidate is clearly better than every other.

use std::cell::{Cell, OnceCell};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Range;

use super::build::{MatchedSpan, Piece, Reindent, Transform};
use super::text::{
    self, IndentUnit, Line, indent_cols, indent_of, is_blank, is_elision_marker, typographic_fold,
};

/// One step of the cascade, as reported to the model and in benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pass {
    Exact,
    LineEndings,
    TrailingWhitespace,
    /// Whole snippet shifted by this many columns (file minus OLD).
    Indentation(isize),
    TabsToSpaces,
    SpacesToTabs,
    BlankLines,
    Typographic,
    /// Whitespace runs inside lines differ (alignment lost or added).
    Whitespace,
    LineNumbers,
    JsonEscaped,
    /// `&lt;`, `&gt;`, `&amp;`, `&quot;` where the file has the characters.
    HtmlEscaped,
    /// OLD (and NEW) wrapped in a Markdown code fence.
    Fences,
    Elision,
    Fuzzy,
    /// A line operation (insert or replace by line number).
    Lines,
    /// A regular-expression replacement.
    Pattern,
    /// Known lines rewritten whole (the rewrite edit protocol).
    Rewrite,
}

impl fmt::Display for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pass::Exact => f.write_str("exact"),
            Pass::LineEndings => f.write_str("line-endings"),
            Pass::TrailingWhitespace => f.write_str("trailing-whitespace"),
            Pass::Indentation(d) => write!(f, "indentation({d:+})"),
            Pass::TabsToSpaces => f.write_str("tabs-to-spaces"),
            Pass::SpacesToTabs => f.write_str("spaces-to-tabs"),
            Pass::BlankLines => f.write_str("blank-lines"),
            Pass::Typographic => f.write_str("typographic"),
            Pass::Whitespace => f.write_str("whitespace"),
            Pass::HtmlEscaped => f.write_str("html-escaped"),
            Pass::Fences => f.write_str("fences"),
            Pass::LineNumbers => f.write_str("line-numbers"),
            Pass::JsonEscaped => f.write_str("json-escaped"),
            Pass::Elision => f.write_str("elision"),
            Pass::Fuzzy => f.write_str("fuzzy"),
            Pass::Lines => f.write_str("lines"),
            Pass::Pattern => f.write_str("pattern"),
            Pass::Rewrite => f.write_str("rewrite"),
        }
    }
}

/// One place OLD matched: usually one part; an elided OLD has one part per located segment.
#[derive(Debug, Clone)]
pub(crate) struct Occurrence {
    pub parts: Vec<Part>,
    pub passes: Vec<Pass>,
}

#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub region: MatchedSpan,
    pub transform: Transform,
    /// The OLD lines this part covers and the NEW lines that replace them.
    pub old_lines: Vec<String>,
    pub new_lines: Vec<String>,
    /// Whether OLD's part ended with a newline; a non-empty NEW is written the same way (models
    /// are careless about a final newline, and honouring the slip would join or split lines).
    pub old_terminated: bool,
}

impl Occurrence {
    pub fn span(&self) -> Range<usize> {
        let start = self.parts.iter().map(|p| p.region.span.start).min();
        let end = self.parts.iter().map(|p| p.region.span.end).max();
        start.unwrap_or(0)..end.unwrap_or(0)
    }
}

/// Facts about the file computed once per request.
pub(crate) struct FileIndex<'a> {
    pub text: &'a str,
    lines: OnceCell<Vec<Line>>,
    unit: OnceCell<IndentUnit>,
    has_typo: OnceCell<bool>,
    pure: OnceCell<Option<bool>>,
    has_cr: bool,
    /// Line comparisons spent so far; past [`WORK_BUDGET`] every pass stops and the request is
    /// refused, because a pass cut short could miss the second match that makes OLD ambiguous.
    work: Cell<usize>,
}

/// Line comparisons one request may spend (a 10 MB file costs well under a million per pass;
/// only OLD and file both made of the same few repeated lines come near this).
const WORK_BUDGET: usize = 5_000_000;

impl<'a> FileIndex<'a> {
    /// Cheap: the line index, indent unit and the like are computed on first use, so an exact
    /// match pays only for the search.
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            lines: OnceCell::new(),
            unit: OnceCell::new(),
            has_typo: OnceCell::new(),
            pure: OnceCell::new(),
            work: Cell::new(0),
            has_cr: text.as_bytes().contains(&b'\r'),
        }
    }

    /// Records `n` units of work; false once the budget is spent.
    pub fn spend(&self, n: usize) -> bool {
        let w = self.work.get().saturating_add(n);
        self.work.set(w);
        w <= WORK_BUDGET
    }

    pub fn exhausted(&self) -> bool {
        self.work.get() > WORK_BUDGET
    }

    pub fn lines(&self) -> &[Line] {
        self.lines.get_or_init(|| text::lines(self.text))
    }

    pub fn unit(&self) -> IndentUnit {
        *self.unit.get_or_init(|| text::detect_indent(self.text))
    }

    pub fn eol(&self) -> &'static str {
        if self.has_cr {
            text::dominant_eol(self.text)
        } else {
            "\n"
        }
    }

    /// The unit to convert NEW's added lines to, when the file indents with one kind only and
    /// some added line uses the other (a substring search each, so the common case is cheap).
    pub fn unit_for(&self, new_lines: &[String]) -> Option<IndentUnit> {
        let new_tabs = new_lines.iter().any(|l| indent_of(l).contains('\t'));
        let new_spaces = new_lines.iter().any(|l| indent_of(l).starts_with(' '));
        if !new_tabs && !new_spaces {
            return None;
        }
        // Some(true): tabs only; Some(false): spaces only.
        let pure = *self.pure.get_or_init(|| {
            let t = self.text;
            let tabs = t.starts_with('\t') || t.contains("\n\t");
            let spaces = t.starts_with(' ') || t.contains("\n ");
            (tabs != spaces).then_some(tabs)
        });
        match pure {
            Some(true) if new_spaces => Some(IndentUnit::Tabs),
            Some(false) if new_tabs => Some(self.unit()),
            _ => None,
        }
    }

    fn has_typo(&self) -> bool {
        *self
            .has_typo
            .get_or_init(|| !self.text.is_ascii() && text::has_typographic(self.text))
    }

    pub fn content(&self, i: usize) -> &'a str {
        self.lines()[i].content(self.text)
    }

    /// The line ending to give new lines written inside `span`: the first one inside or right
    /// after it, else the one before it, else the file's.
    pub fn local_eol(&self, span: &Range<usize>) -> &'a str {
        let bytes = self.text.as_bytes();
        let from = span.start.min(bytes.len());
        if let Some(nl) = self.text[from..].find('\n') {
            let nl = from + nl;
            return if nl > 0 && bytes[nl - 1] == b'\r' {
                &self.text[nl - 1..=nl]
            } else {
                &self.text[nl..=nl]
            };
        }
        if let Some(nl) = self.text[..from].rfind('\n') {
            return if nl > 0 && bytes[nl - 1] == b'\r' {
                &self.text[nl - 1..=nl]
            } else {
                &self.text[nl..=nl]
            };
        }
        self.eol()
    }

    /// 1-based line of byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        if let Some(lines) = self.lines.get() {
            return text::line_number_at(lines, offset);
        }
        let offset = offset.min(self.text.len());
        let n = self.text.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        // An offset at the very end of a text ending with a newline belongs to its last line.
        if offset == self.text.len() && offset > 0 && self.text.ends_with('\n') {
            n
        } else {
            n + 1
        }
    }
}

/// OLD (and NEW) as one reading of what the model sent.
#[derive(Debug, Clone)]
pub(crate) struct Variant {
    pub old: String,
    pub new: String,
    pub passes: Vec<Pass>,
    /// 1-based line the model's copied line numbers say OLD starts at.
    pub hint_line: Option<usize>,
}

/// The result of running the cascade for one variant.
pub(crate) enum CascadeOutcome {
    /// The pass ran out of its work budget: nothing can be concluded about uniqueness.
    TooCostly,
    Matches(Vec<Occurrence>),
    /// Elision markers that cannot be honoured; the message says why.
    ElisionProblem(String),
    None,
}

/// Runs the passes for one reading of OLD; the first pass that matches anywhere decides.
pub(crate) fn run_passes(file: &FileIndex<'_>, v: &Variant) -> CascadeOutcome {
    let found = run_passes_inner(file, v);
    // A pass cut short by the budget proves nothing, and neither does anything after it.
    if file.exhausted() {
        CascadeOutcome::TooCostly
    } else {
        found
    }
}

fn run_passes_inner(file: &FileIndex<'_>, v: &Variant) -> CascadeOutcome {
    let old = v.old.as_str();
    if old.is_empty() {
        return CascadeOutcome::None;
    }
    let mk = |pass: Pass, mut occ: Vec<Occurrence>| {
        for o in &mut occ {
            let own = o.passes.first().copied();
            let mut passes = v.passes.clone();
            match pass {
                Pass::Indentation(_) => passes.push(own.unwrap_or(pass)),
                Pass::Exact if !passes.is_empty() => {}
                _ => {
                    passes.push(pass);
                    if let Some(own) = own
                        && own != pass
                        && own != Pass::Indentation(0)
                    {
                        passes.push(own);
                    }
                }
            }
            o.passes = passes;
        }
        CascadeOutcome::Matches(occ)
    };

    let occ = substring_matches(file, old, &v.new, ViewKind::Raw);
    if !occ.is_empty() {
        return mk(Pass::Exact, occ);
    }
    if file.has_cr || old.contains('\r') {
        let occ = substring_matches(file, old, &v.new, ViewKind::Lf);
        if !occ.is_empty() {
            return mk(Pass::LineEndings, occ);
        }
    }
    let old_lines: Vec<&str> = text::snippet_lines(old).0;
    let new_parts = text::snippet_lines(&v.new);
    let old_terminated = old.ends_with('\n');

    let plain = LineMode {
        lenient_indent: false,
        skip_blank: false,
        typo: false,
        collapse: false,
    };
    let occ = line_matches(file, &old_lines, old_terminated, &new_parts, plain);
    if !occ.is_empty() {
        return mk(Pass::TrailingWhitespace, occ);
    }
    let occ = line_matches(
        file,
        &old_lines,
        old_terminated,
        &new_parts,
        LineMode {
            lenient_indent: true,
            ..plain
        },
    );
    if !occ.is_empty() {
        return mk(Pass::Indentation(0), occ);
    }
    for lenient_indent in [false, true] {
        let occ = line_matches(
            file,
            &old_lines,
            old_terminated,
            &new_parts,
            LineMode {
                lenient_indent,
                skip_blank: true,
                typo: false,
                collapse: false,
            },
        );
        if !occ.is_empty() {
            return mk(Pass::BlankLines, occ);
        }
    }
    if file.has_typo() || text::has_typographic(old) {
        let occ = substring_matches(file, old, &v.new, ViewKind::Typographic);
        if !occ.is_empty() {
            return mk(Pass::Typographic, occ);
        }
        for (lenient_indent, skip_blank) in [(false, false), (true, false), (true, true)] {
            let occ = line_matches(
                file,
                &old_lines,
                old_terminated,
                &new_parts,
                LineMode {
                    lenient_indent,
                    skip_blank,
                    typo: true,
                    collapse: false,
                },
            );
            if !occ.is_empty() {
                return mk(Pass::Typographic, occ);
            }
        }
    }
    // Alignment runs inside lines collapsed (`values:  make(` copied as `values: make(`).
    if old_lines
        .iter()
        .any(|l| l.trim().contains("  ") || l.trim().contains('\t'))
        || file.text.contains("  ")
    {
        for skip_blank in [false, true] {
            let occ = line_matches(
                file,
                &old_lines,
                old_terminated,
                &new_parts,
                LineMode {
                    lenient_indent: true,
                    skip_blank,
                    typo: file.has_typo() || text::has_typographic(old),
                    collapse: true,
                },
            );
            if !occ.is_empty() {
                return mk(Pass::Whitespace, occ);
            }
        }
    }
    match elision(file, &old_lines, old_terminated, &new_parts) {
        Ok(occ) if !occ.is_empty() => mk(Pass::Elision, occ),
        Ok(_) => CascadeOutcome::None,
        Err(msg) => CascadeOutcome::ElisionProblem(msg),
    }
}

// ---------------------------------------------------------------------------------------------
// Substring passes: exact, line endings, typographic characters.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ViewKind {
    Raw,
    Lf,
    Typographic,
}

/// A normalised copy of the file with a map back to real byte offsets.
struct View {
    text: String,
    /// Runs sorted by `norm`: from `norm` on, real = `real + (n - norm)`; a run with `subst > 0`
    /// is one ASCII byte standing for a real character of `subst` bytes.
    runs: Vec<(usize, usize, usize)>,
}

impl View {
    fn build(real: &str, kind: ViewKind) -> View {
        let mut text = String::with_capacity(real.len());
        let mut runs = vec![(0usize, 0usize, 0usize)];
        let bytes = real.as_bytes();
        for (r, c) in real.char_indices() {
            if c == '\r' && bytes.get(r + 1) == Some(&b'\n') {
                runs.push((text.len(), r + 1, 0));
                continue;
            }
            if kind == ViewKind::Typographic
                && let Some(a) = text::typographic_ascii(c)
            {
                runs.push((text.len(), r, c.len_utf8()));
                text.push(a);
                runs.push((text.len(), r + c.len_utf8(), 0));
                continue;
            }
            text.push(c);
        }
        View { text, runs }
    }

    fn run_at(&self, n: usize) -> (usize, usize, usize) {
        let i = self.runs.partition_point(|r| r.0 <= n);
        self.runs[i.saturating_sub(1)]
    }

    fn real_start(&self, n: usize) -> usize {
        let (norm, real, _) = self.run_at(n);
        real + (n - norm)
    }

    fn real_end(&self, n: usize) -> usize {
        if n == 0 {
            return self.real_start(0);
        }
        let (norm, real, subst) = self.run_at(n - 1);
        if subst > 0 {
            real + subst
        } else {
            real + (n - 1 - norm) + 1
        }
    }
}

fn normalise_old(old: &str, kind: ViewKind) -> String {
    match kind {
        ViewKind::Raw => old.to_string(),
        ViewKind::Lf => old.replace("\r\n", "\n"),
        ViewKind::Typographic => typographic_fold(&old.replace("\r\n", "\n")),
    }
}

/// Every start offset of `needle` in `hay`, overlapping occurrences included (an OLD that
/// matches at two overlapping places is still ambiguous).
pub(crate) fn find_all(hay: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    if needle.is_empty() {
        return out;
    }
    let mut from = 0;
    while from <= hay.len() {
        let Some(pos) = hay[from..].find(needle) else {
            break;
        };
        let at = from + pos;
        out.push(at);
        let step = hay[at..].chars().next().map_or(1, char::len_utf8);
        from = at + step;
    }
    out
}

fn substring_matches(
    file: &FileIndex<'_>,
    old: &str,
    new: &str,
    kind: ViewKind,
) -> Vec<Occurrence> {
    let needle = normalise_old(old, kind);
    if needle.is_empty() {
        return Vec::new();
    }
    let view;
    let (hay, spans): (&str, Vec<Range<usize>>) = if kind == ViewKind::Raw {
        let starts = find_all(file.text, &needle);
        (
            file.text,
            starts.into_iter().map(|s| s..s + needle.len()).collect(),
        )
    } else {
        view = View::build(file.text, kind);
        let starts = find_all(&view.text, &needle);
        let spans = starts
            .into_iter()
            .map(|s| view.real_start(s)..view.real_end(s + needle.len()))
            .collect();
        (&view.text, spans)
    };
    let _ = hay;
    let (old_lines, old_term) = text::snippet_lines(&needle);
    let new_parts = text::snippet_lines(new);
    let mut out = Vec::new();
    for span in spans {
        let Some(mut region) = region_from_span(file, span) else {
            continue;
        };
        if region.pieces.len() != old_lines.len() {
            continue;
        }
        let mut transform = Transform::default();
        // OLD began after the indentation of its first line: put the span at the line start so a
        // line NEW inserts before it is indented like the file, not glued after the indentation.
        let line = file.line_of(region.span.start) - 1;
        let line_start = file
            .lines()
            .get(line)
            .map_or(region.span.start, |l| l.start);
        let before = &file.text[line_start..region.span.start];
        if !before.is_empty()
            && before.chars().all(|c| c == ' ' || c == '\t')
            && old_lines.first().is_some_and(|l| !is_blank(l))
        {
            transform.first_prefix = Some(before.to_string());
            region.span.start = line_start;
            region.pieces[0].content.start = line_start;
        }
        if kind == ViewKind::Typographic {
            transform.merge_chars = true;
            let real = &file.text[region.span.clone()];
            transform.typo_fold = old
                .chars()
                .filter(|c| text::typographic_ascii(*c).is_some() && !real.contains(*c))
                .collect();
        }
        let old_strings: Vec<String> = old_lines.iter().map(|s| s.to_string()).collect();
        out.push(Occurrence {
            parts: vec![Part {
                region,
                transform,
                old_lines: old_strings,
                new_lines: new_parts.0.iter().map(|s| s.to_string()).collect(),
                old_terminated: old_term,
            }],
            passes: Vec::new(),
        });
    }
    out
}

/// Splits a real span into the file lines it touches, mapping OLD line i to piece i.
fn region_from_span(file: &FileIndex<'_>, span: Range<usize>) -> Option<MatchedSpan> {
    let text = file.text;
    if span.start > span.end || span.end > text.len() {
        return None;
    }
    let bytes = text.as_bytes();
    let mut pieces = Vec::new();
    // Walk the lines the span touches without indexing the whole file.
    let mut line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    loop {
        let nl = text[line_start..].find('\n').map(|i| line_start + i);
        let end = nl.map_or(text.len(), |i| i + 1);
        let content_end = match nl {
            Some(i) if i > line_start && bytes[i - 1] == b'\r' => i - 1,
            Some(i) => i,
            None => text.len(),
        };
        let cs = line_start.max(span.start);
        let ce = content_end.min(span.end).max(cs);
        let es = content_end.max(cs);
        let ee = end.min(span.end).max(es);
        pieces.push(Piece {
            content: cs..ce,
            eol: es..ee,
        });
        if end >= span.end || nl.is_none() {
            break;
        }
        line_start = end;
    }
    let map = (0..pieces.len()).map(Some).collect();
    Some(MatchedSpan { span, pieces, map })
}

// ---------------------------------------------------------------------------------------------
// Line passes: trailing whitespace, indentation, tabs vs spaces, blank lines, typographic.

#[derive(Debug, Clone, Copy)]
struct LineMode {
    lenient_indent: bool,
    skip_blank: bool,
    typo: bool,
    /// Runs of spaces and tabs inside a line compare as one space (alignment the model lost).
    collapse: bool,
}

fn key<'s>(line: &'s str, mode: LineMode) -> std::borrow::Cow<'s, str> {
    let t = if mode.lenient_indent {
        line.trim_matches([' ', '\t', '\r'])
    } else {
        line.trim_end()
    };
    if !mode.typo && !mode.collapse {
        return std::borrow::Cow::Borrowed(t);
    }
    let folded = if mode.typo {
        typographic_fold(t).trim_end().to_string()
    } else {
        t.to_string()
    };
    if !mode.collapse {
        return std::borrow::Cow::Owned(folded);
    }
    let indent_len = folded.len() - folded.trim_start().len();
    let mut out = String::with_capacity(folded.len());
    out.push_str(&folded[..indent_len]);
    let mut space = false;
    for c in folded[indent_len..].chars() {
        if c == ' ' || c == '\t' {
            space = true;
        } else {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn line_matches(
    file: &FileIndex<'_>,
    old_lines: &[&str],
    old_terminated: bool,
    new: &(Vec<&str>, bool),
    mode: LineMode,
) -> Vec<Occurrence> {
    let Some(found) = find_windows(file, old_lines, mode) else {
        return Vec::new();
    };
    found
        .into_iter()
        .filter_map(|w| occurrence_from_window(file, old_lines, old_terminated, new, w, mode))
        .collect()
}

/// A window of file lines that OLD's lines correspond to.
#[derive(Debug, Clone)]
struct Window {
    /// File line index of each OLD line (`None`: an OLD blank line the file lacks).
    map: Vec<Option<usize>>,
    first: usize,
    last: usize,
    /// OLD's first line was copied without the indentation the file has before it.
    suffix_first: bool,
    reindent: Option<(isize, usize)>,
}

fn find_windows(file: &FileIndex<'_>, old: &[&str], mode: LineMode) -> Option<Vec<Window>> {
    let nonblank: Vec<usize> = (0..old.len()).filter(|&i| !is_blank(old[i])).collect();
    let &k0 = nonblank.first()?;
    let first_key = key(
        old[k0],
        LineMode {
            lenient_indent: true,
            ..mode
        },
    );
    let n_lines = file.lines().len();
    let mut out = Vec::new();
    if mode.skip_blank {
        // Blank lines on either side are ignored: compare the non-blank sequences.
        let file_nb: Vec<usize> = (0..n_lines)
            .filter(|&i| !is_blank(file.content(i)))
            .collect();
        let m = nonblank.len();
        for (q, &f0) in file_nb.iter().enumerate() {
            if q + m > file_nb.len() {
                break;
            }
            if key(
                file.content(f0),
                LineMode {
                    lenient_indent: true,
                    ..mode
                },
            ) != first_key
            {
                continue;
            }
            if !file.spend(m) {
                return Some(Vec::new());
            }
            let mut map = vec![None; old.len()];
            let mut ok = true;
            for (t, &oi) in nonblank.iter().enumerate() {
                let fi = file_nb[q + t];
                map[oi] = Some(fi);
                if !line_eq(old[oi], file.content(fi), mode, t == 0) {
                    ok = false;
                    break;
                }
            }
            if !ok {
                continue;
            }
            if let Some(w) = finish_window(file, old, map, mode) {
                out.push(w);
            }
        }
        return Some(out);
    }
    let n = old.len();
    for f in k0..n_lines {
        if f - k0 + n > n_lines {
            break;
        }
        if key(
            file.content(f),
            LineMode {
                lenient_indent: true,
                ..mode
            },
        ) != first_key
        {
            continue;
        }
        let s = f - k0;
        if !file.spend(n) {
            return Some(Vec::new());
        }
        let mut ok = true;
        for (i, o) in old.iter().enumerate() {
            let fl = file.content(s + i);
            if is_blank(o) {
                if !is_blank(fl) {
                    ok = false;
                    break;
                }
            } else if !line_eq(o, fl, mode, i == k0) {
                ok = false;
                break;
            }
        }
        if !ok {
            continue;
        }
        let map = (0..n).map(|i| Some(s + i)).collect();
        if let Some(w) = finish_window(file, old, map, mode) {
            out.push(w);
        }
    }
    Some(out)
}

/// Compares one OLD line with one file line. The first non-blank OLD line may have lost the
/// indentation before it (models often copy from the first visible character).
fn line_eq(old: &str, file: &str, mode: LineMode, first: bool) -> bool {
    if mode.lenient_indent {
        return key(old, mode) == key(file, mode);
    }
    if key(old, mode) == key(file, mode) {
        return true;
    }
    first
        && indent_of(old).is_empty()
        && key(old, mode)
            == key(
                file,
                LineMode {
                    lenient_indent: true,
                    ..mode
                },
            )
}

fn finish_window(
    file: &FileIndex<'_>,
    old: &[&str],
    map: Vec<Option<usize>>,
    mode: LineMode,
) -> Option<Window> {
    let mapped: Vec<(usize, usize)> = map
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.map(|f| (i, f)))
        .collect();
    let first = mapped.first()?.1;
    let last = mapped.last()?.1;
    let k0 = mapped
        .iter()
        .find(|(i, _)| !is_blank(old[*i]))
        .map(|x| x.0)?;
    let first_file = file.content(map[k0]?);
    let suffix_first = indent_of(old[k0]).is_empty() && !indent_of(first_file).is_empty();
    let pairs: Vec<(&str, &str)> = mapped
        .iter()
        .filter(|(i, _)| !(is_blank(old[*i]) || (suffix_first && *i == k0)))
        .map(|(i, f)| (indent_of(old[*i]), indent_of(file.content(*f))))
        .collect();
    let reindent = if mode.lenient_indent {
        Some(consistent_shift(&pairs, file.unit())?)
    } else {
        // Strict passes: indentation must be identical apart from the first line's.
        if pairs.iter().any(|(a, b)| a != b) {
            return None;
        }
        None
    };
    Some(Window {
        map,
        first,
        last,
        suffix_first,
        reindent,
    })
}

/// The column shift that turns every OLD indentation into the file's, trying the tab widths a
/// file could plausibly use. `None` when no single shift explains all lines (the snippet's
/// internal structure differs from the file's: not the same code).
fn consistent_shift(pairs: &[(&str, &str)], unit: IndentUnit) -> Option<(isize, usize)> {
    let mut widths = vec![unit.width()];
    for w in [4, 8, 2] {
        if !widths.contains(&w) {
            widths.push(w);
        }
    }
    if pairs.is_empty() {
        return Some((0, unit.width()));
    }
    // Same indent characters on both sides: the file's unit is the tab width. Tabs on one side
    // and spaces on the other: every tab width that explains the lines is a candidate and the
    // smallest shift wins (a conversion that does not move the block is the likelier story).
    let uses = |c: char, old_side: bool| {
        pairs.iter().any(|(o, f)| {
            if old_side {
                o.contains(c)
            } else {
                f.contains(c)
            }
        })
    };
    let mixed_kinds = (uses('\t', true) && !uses('\t', false))
        || (uses(' ', true) && !uses(' ', false) && uses('\t', false));
    let mut best: Option<(isize, usize)> = None;
    for tw in widths {
        let mut delta = None;
        let mut ok = true;
        for (o, f) in pairs {
            let d = indent_cols(f, tw) as isize - indent_cols(o, tw) as isize;
            match delta {
                None => delta = Some(d),
                Some(x) if x == d => {}
                Some(_) => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            let d = delta.unwrap_or(0);
            if !mixed_kinds {
                return Some((d, tw));
            }
            if best.is_none_or(|(bd, _)| d.abs() < bd.abs()) {
                best = Some((d, tw));
            }
        }
    }
    best
}

fn occurrence_from_window(
    file: &FileIndex<'_>,
    old: &[&str],
    old_terminated: bool,
    new: &(Vec<&str>, bool),
    w: Window,
    mode: LineMode,
) -> Option<Occurrence> {
    let (region, transform, pass) = region_for_window(file, old, old_terminated, &w, mode)?;
    Some(Occurrence {
        parts: vec![Part {
            region,
            transform,
            old_lines: old.iter().map(|s| s.to_string()).collect(),
            new_lines: new.0.iter().map(|s| s.to_string()).collect(),
            old_terminated,
        }],
        passes: pass.into_iter().collect(),
    })
}

fn region_for_window(
    file: &FileIndex<'_>,
    old: &[&str],
    old_terminated: bool,
    w: &Window,
    mode: LineMode,
) -> Option<(MatchedSpan, Transform, Option<Pass>)> {
    let lines = &file.lines();
    let first = lines.get(w.first)?;
    let last = lines.get(w.last)?;
    let last_old_mapped = w.map.iter().rposition(|m| m.is_some())?;
    // The span takes the last line's terminator when OLD continued past that line.
    let take_eol = old_terminated || last_old_mapped + 1 < old.len();
    let end = if take_eol { last.end } else { last.content_end };
    let span = first.start..end;
    let mut pieces = Vec::with_capacity(w.last - w.first + 1);
    for (i, l) in lines[w.first..=w.last].iter().enumerate() {
        let is_last = w.first + i == w.last;
        let eol_end = if is_last && !take_eol {
            l.content_end
        } else {
            l.end
        };
        pieces.push(Piece {
            content: l.start..l.content_end,
            eol: l.content_end..eol_end,
        });
    }
    let map = w.map.iter().map(|m| m.map(|f| f - w.first)).collect();
    let region = MatchedSpan { span, pieces, map };

    let mut transform = Transform::default();
    let region_text = &file.text[region.span.clone()];
    let region_has_tabs = lines[w.first..=w.last]
        .iter()
        .any(|l| indent_of(l.content(file.text)).contains('\t'));
    let region_has_spaces = lines[w.first..=w.last]
        .iter()
        .any(|l| indent_of(l.content(file.text)).starts_with(' '));
    let render_unit = if region_has_tabs {
        IndentUnit::Tabs
    } else if region_has_spaces {
        IndentUnit::Spaces(file.unit().width())
    } else {
        file.unit()
    };
    let mut pass = None;
    if let Some((delta, tw)) = w.reindent {
        let old_tabs = old.iter().any(|l| indent_of(l).contains('\t'));
        let old_spaces = old.iter().any(|l| indent_of(l).starts_with(' '));
        pass = Some(if old_tabs && !region_has_tabs && region_has_spaces {
            Pass::TabsToSpaces
        } else if old_spaces && !old_tabs && region_has_tabs {
            Pass::SpacesToTabs
        } else {
            Pass::Indentation(delta)
        });
        transform.reindent = Some(Reindent {
            delta,
            tab_width: tw,
            unit: render_unit,
        });
    }
    if w.suffix_first {
        let k0 = old.iter().position(|l| !is_blank(l))?;
        let f0 = w.map[k0]?;
        transform.first_prefix = Some(indent_of(file.content(f0)).to_string());
    }
    if mode.typo {
        transform.merge_chars = true;
        transform.typo_fold = old
            .iter()
            .flat_map(|l| l.chars())
            .filter(|c| text::typographic_ascii(*c).is_some() && !region_text.contains(*c))
            .collect();
    }
    // The model added trailing whitespace the file does not have: do not write it either.
    transform.trim_trailing = w.map.iter().enumerate().any(|(i, m)| {
        m.is_some_and(|f| {
            let o = old[i];
            let fl = file.content(f);
            o.len() - o.trim_end().len() > fl.len() - fl.trim_end().len()
        })
    });
    Some((region, transform, pass))
}

// ---------------------------------------------------------------------------------------------
// Elision: OLD with `...` / `// ... existing code ...` lines standing for code kept as is.

fn split_segments<'s>(lines: &[&'s str], bare_dots: bool) -> Vec<Vec<&'s str>> {
    let mut segs = vec![Vec::new()];
    for l in lines {
        if is_elision_marker(l, bare_dots) {
            segs.push(Vec::new());
        } else if let Some(last) = segs.last_mut() {
            last.push(*l);
        }
    }
    segs
}

fn trim_blank_edges<'s>(seg: &[&'s str]) -> Vec<&'s str> {
    let start = seg.iter().position(|l| !is_blank(l)).unwrap_or(seg.len());
    let end = seg
        .iter()
        .rposition(|l| !is_blank(l))
        .map_or(start, |e| e + 1);
    seg[start..end].to_vec()
}

/// One segment of an elided OLD placed in the file (`None`: an empty segment at an edge).
type Placed = (usize, Option<Window>, LineMode);

const STRICT: LineMode = LineMode {
    lenient_indent: false,
    skip_blank: false,
    typo: false,
    collapse: false,
};

fn elision(
    file: &FileIndex<'_>,
    old: &[&str],
    old_terminated: bool,
    new: &(Vec<&str>, bool),
) -> Result<Vec<Occurrence>, String> {
    let Some((old_segs, new_segs_raw)) = elided_segments(old, &new.0)? else {
        return Ok(Vec::new());
    };
    let Some(parts) = place_segments(file, &old_segs)? else {
        return Ok(Vec::new());
    };
    elision_occurrence(file, &parts, &old_segs, &new_segs_raw, old_terminated)
}

/// OLD and NEW split at their elision markers (OLD's segments without blank edges); `None`
/// when OLD elides nothing, a refusal when NEW's markers are not in step with OLD's.
#[allow(clippy::type_complexity)]
fn elided_segments<'s>(
    old: &[&'s str],
    new: &[&'s str],
) -> Result<Option<(Vec<Vec<&'s str>>, Vec<Vec<&'s str>>)>, String> {
    let comment_markers = old.iter().filter(|l| is_elision_marker(l, false)).count();
    let dot_markers = old.iter().filter(|l| is_elision_marker(l, true)).count();
    if dot_markers == 0 {
        return Ok(None);
    }
    // A bare `...` is real Python; treat it as a marker only when NEW keeps it in step.
    let bare = comment_markers < dot_markers;
    let old_segs: Vec<Vec<&str>> = split_segments(old, bare)
        .iter()
        .map(|s| trim_blank_edges(s))
        .collect();
    let new_segs = split_segments(new, bare);
    if new_segs.len() != old_segs.len() {
        return Err(format!(
            "OLD elides code with {} marker line(s) (like `// ... existing code ...`) but NEW has {}; \
             writing NEW would delete or duplicate the elided code. Repeat the same marker lines in \
             NEW at the same places, or send OLD and NEW in full",
            old_segs.len() - 1,
            new_segs.len() - 1
        ));
    }
    if old_segs.iter().all(|s| s.is_empty()) {
        return Ok(None);
    }
    Ok(Some((old_segs, new_segs)))
}

/// Where each segment is: the head (first non-empty segment) anywhere, every later segment after
/// the one before it — inside the head's block when it is there. A head that matches several
/// places is taken only when exactly one of them has every later segment inside its own block
/// (sibling functions with the same first lines); two places that fit stay a refusal.
fn place_segments(
    file: &FileIndex<'_>,
    old_segs: &[Vec<&str>],
) -> Result<Option<Vec<Placed>>, String> {
    let Some(head) = old_segs.iter().position(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let mut heads = Vec::new();
    for mode in [
        STRICT,
        LineMode {
            lenient_indent: true,
            ..STRICT
        },
    ] {
        let wins = find_windows(file, &old_segs[head], mode).unwrap_or_default();
        if !wins.is_empty() {
            heads = wins.into_iter().map(|w| (w, mode)).collect();
            break;
        }
    }
    match heads.len() {
        0 => Ok(None),
        1 => {
            let (w, mode) = heads.remove(0);
            place_after_head(file, old_segs, head, w, mode, false)
        }
        n => {
            let mut fits = Vec::new();
            for (w, mode) in heads.iter().cloned() {
                // A later segment matching twice inside one candidate's block: refused as is.
                if let Some(p) = place_after_head(file, old_segs, head, w, mode, true)? {
                    fits.push(p);
                }
            }
            if fits.len() == 1 {
                return Ok(fits.pop());
            }
            let lines: Vec<String> = heads
                .iter()
                .map(|(w, _)| (w.first + 1).to_string())
                .collect();
            Err(format!(
                "the part of OLD before the elision marker matches {n} places (lines {}){}; add \
                 lines before the marker so its start matches one place",
                lines.join(", "),
                if fits.len() > 1 {
                    format!(", and the rest of OLD fits {} of them", fits.len())
                } else {
                    String::new()
                }
            ))
        }
    }
}

/// The later segments placed after a head found at `w`. `inside_only`: each must lie inside the
/// head's block (when the head itself is not unique).
fn place_after_head(
    file: &FileIndex<'_>,
    old_segs: &[Vec<&str>],
    head: usize,
    w: Window,
    mode: LineMode,
    inside_only: bool,
) -> Result<Option<Vec<Placed>>, String> {
    let mut parts: Vec<Placed> = (0..head).map(|si| (si, None, STRICT)).collect();
    let block_end = if inside_only {
        enclosing_block_end(file, &w)
    } else {
        block_end_after(file, w.last, indent_of(file.content(w.first)))
    };
    let mut after_line = w.last + 1;
    parts.push((head, Some(w), mode));
    for (si, seg) in old_segs.iter().enumerate().skip(head + 1) {
        if seg.is_empty() {
            parts.push((si, None, STRICT));
            continue;
        }
        let mut chosen = None;
        for mode in [
            STRICT,
            LineMode {
                lenient_indent: true,
                ..STRICT
            },
        ] {
            let wins: Vec<Window> = find_windows(file, seg, mode)
                .unwrap_or_default()
                .into_iter()
                .filter(|w| w.first >= after_line)
                .collect();
            if wins.is_empty() {
                continue;
            }
            // Unique inside the head's block, else unique in the rest.
            let inside: Vec<&Window> = wins.iter().filter(|w| w.last <= block_end).collect();
            let picked = if inside.len() == 1 {
                inside[0].clone()
            } else if inside.is_empty() && inside_only {
                return Ok(None);
            } else if inside.len() > 1 || wins.len() > 1 {
                let lines: Vec<String> = wins.iter().map(|w| (w.first + 1).to_string()).collect();
                return Err(format!(
                    "the part of OLD after elision marker {si} matches {} places after the part \
                     before it (lines {}); add lines after the marker so it matches one place",
                    wins.len(),
                    lines.join(", ")
                ));
            } else {
                wins[0].clone()
            };
            chosen = Some((picked, mode));
            break;
        }
        let Some((w, mode)) = chosen else {
            return Ok(None);
        };
        after_line = w.last + 1;
        parts.push((si, Some(w), mode));
    }
    Ok(Some(parts))
}

/// The occurrence that writes NEW's segments over the placed OLD segments, keeping what the
/// markers stand for.
fn elision_occurrence(
    file: &FileIndex<'_>,
    parts: &[Placed],
    old_segs: &[Vec<&str>],
    new_segs_raw: &[Vec<&str>],
    old_terminated: bool,
) -> Result<Vec<Occurrence>, String> {
    // One indentation shift for the whole snippet.
    let shifts: HashSet<isize> = parts
        .iter()
        .filter_map(|(_, w, _)| w.as_ref().and_then(|w| w.reindent.map(|r| r.0)))
        .collect();
    if shifts.len() > 1 {
        return Ok(Vec::new());
    }
    let mut out_parts = Vec::new();
    let n_segs = old_segs.len();
    for (idx, (si, w, mode)) in parts.iter().enumerate() {
        let new_seg = trim_blank_edges(&new_segs_raw[*si]);
        let seg_terminated = si + 1 < n_segs || old_terminated;
        match w {
            Some(w) => {
                let seg = &old_segs[*si];
                let Some((region, transform, _)) =
                    region_for_window(file, seg, seg_terminated, w, *mode)
                else {
                    return Ok(Vec::new());
                };
                let mut transform = transform;
                if transform.reindent.is_none() {
                    // Strict segment next to a shifted one: shift NEW with the same delta.
                    if let Some(other) = parts
                        .iter()
                        .find_map(|(_, w, _)| w.as_ref().and_then(|w| w.reindent))
                        && other.0 != 0
                    {
                        transform.reindent = Some(Reindent {
                            delta: other.0,
                            tab_width: other.1,
                            unit: file.unit(),
                        });
                    }
                }
                out_parts.push(Part {
                    region,
                    transform,
                    old_lines: seg.iter().map(|s| s.to_string()).collect(),
                    new_lines: new_seg.iter().map(|s| s.to_string()).collect(),
                    old_terminated: seg_terminated,
                });
            }
            None => {
                if new_seg.is_empty() {
                    continue;
                }
                // An empty OLD segment at an edge: NEW's text goes in before the next segment or
                // after the previous one, as whole lines.
                let neighbour = if idx == 0 {
                    parts.get(1).and_then(|p| p.1.as_ref()).map(|w| (w, true))
                } else {
                    parts[idx - 1].1.as_ref().map(|w| (w, false))
                };
                let Some((nw, before)) = neighbour else {
                    return Err(
                        "OLD has two elision markers in a row with new text between them in NEW; \
                                nothing in OLD anchors where that text goes"
                            .to_string(),
                    );
                };
                let at = if before {
                    file.lines()[nw.first].start
                } else {
                    file.lines()[nw.last].end
                };
                let mut transform = Transform::default();
                if let Some((d, tw)) = nw.reindent {
                    transform.reindent = Some(Reindent {
                        delta: d,
                        tab_width: tw,
                        unit: file.unit(),
                    });
                }
                let mut new_lines: Vec<String> = new_seg.iter().map(|s| s.to_string()).collect();
                if !before && file.lines()[nw.last].terminator(file.text).is_empty() {
                    // Appending after a last line with no newline: start a new line first.
                    new_lines.insert(0, String::new());
                    transform.reindent = None;
                }
                out_parts.push(Part {
                    region: MatchedSpan {
                        span: at..at,
                        pieces: Vec::new(),
                        map: Vec::new(),
                    },
                    transform,
                    old_lines: Vec::new(),
                    new_lines,
                    old_terminated: before
                        || !file.lines()[nw.last].terminator(file.text).is_empty(),
                });
            }
        }
    }
    if out_parts.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![Occurrence {
        parts: out_parts,
        passes: Vec::new(),
    }])
}

/// Last line of the block a head found at `w` belongs to: the block its first line opens (a
/// `def`, a `{` line), or else the block around it — up to the first later line indented less
/// than the head (a head that starts inside a function body ends with that body).
fn enclosing_block_end(file: &FileIndex<'_>, w: &Window) -> usize {
    let ind = indent_of(file.content(w.first));
    let cols = indent_cols(ind, 4);
    let next = (w.first + 1..file.lines().len()).find(|&i| !is_blank(file.content(i)));
    let opens = next.is_some_and(|i| indent_cols(indent_of(file.content(i)), 4) > cols);
    if opens {
        return block_end_after(file, w.last, ind);
    }
    for i in w.last + 1..file.lines().len() {
        let c = file.content(i);
        if !is_blank(c) && indent_cols(indent_of(c), 4) < cols {
            return i.saturating_sub(1);
        }
    }
    file.lines().len().saturating_sub(1)
}

/// Last line of the block opened at `head_last`: the line before the first later non-blank line
/// indented no deeper than the head — or that line itself when it closes the block (`}`, `end`).
pub(crate) fn block_end_after(file: &FileIndex<'_>, head_last: usize, head_indent: &str) -> usize {
    let hw = indent_cols(head_indent, 4);
    for i in head_last + 1..file.lines().len() {
        let c = file.content(i);
        if is_blank(c) {
            continue;
        }
        if indent_cols(indent_of(c), 4) <= hw {
            let t = c.trim();
            let closes = t.starts_with('}')
                || t.starts_with(')')
                || t.starts_with(']')
                || t == "end"
                || t.starts_with("</");
            return if closes { i } else { i.saturating_sub(1) };
        }
    }
    file.lines().len().saturating_sub(1)
}

// ---------------------------------------------------------------------------------------------
// Fuzzy: one wrong token in one context line.

/// Finds the single window where OLD matches every non-blank line but one, that one line
/// differing by a token or two, and no other window coming close. The model's slip must never
/// be written: the differing line is one NEW keeps as it is (a context line), or one NEW
/// changes into exactly the file's real line (OLD typed from memory, NEW copied right).
pub(crate) fn fuzzy(file: &FileIndex<'_>, v: &Variant) -> Option<Occurrence> {
    let (old, old_terminated) = text::snippet_lines(&v.old);
    let new = text::snippet_lines(&v.new);
    let nonblank: Vec<usize> = (0..old.len()).filter(|&i| !is_blank(old[i])).collect();
    if nonblank.len() < 3 || file.lines().is_empty() || old.len() > file.lines().len() {
        return None;
    }
    let mode = LineMode {
        lenient_indent: true,
        skip_blank: false,
        typo: true,
        collapse: true,
    };
    let votes = window_votes(file, &old, mode);
    let need = nonblank.len() - 1;
    let mut tied: Vec<usize> = Vec::new();
    let mut second = 0usize;
    for (&s, &count) in &votes {
        if count >= need {
            tied.push(s);
        } else {
            second = second.max(count);
        }
    }
    let margin = (nonblank.len() / 4).max(1);
    if tied.is_empty() || second + margin > need {
        return None;
    }
    // Among windows equal on all lines but one, the differing line decides: one window's line
    // must be a token away from OLD's, every other window's clearly further.
    let mut scored: Vec<(usize, usize, f64, bool)> = Vec::new(); // start, differing line, sim, small
    for &s in &tied {
        if s + old.len() > file.lines().len() {
            continue;
        }
        // A window equal on every line (its indentation did not add up) or with blank lines
        // out of step is a competitor this pass cannot rank: refuse rather than pass it over.
        let d = single_difference(file, &old, &nonblank, s, mode)?;
        let (a, b) = (key(old[d], mode), key(file.content(s + d), mode));
        let tokens = text::token_difference(&a, &b);
        let sim = text::similarity(&a, &b);
        let small = a.len() >= 4 && b.len() >= 4 && (tokens <= 1 || (tokens <= 2 && sim >= 0.75));
        scored.push((s, d, sim, small));
    }
    let winners: Vec<&(usize, usize, f64, bool)> = scored.iter().filter(|x| x.3).collect();
    if winners.len() != 1 {
        return None;
    }
    let &(s, d, sim, _) = winners[0];
    if scored.iter().any(|x| x.0 != s && x.2 + 0.15 > sim) {
        return None;
    }
    // The slip must never be written: either NEW keeps the line as OLD has it (a context line,
    // copied from the file), or NEW changes it into exactly the file's real line.
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new.0);
    let kept = new.0.contains(&old[d])
        && ops.iter().any(|op| {
            matches!(op, similar::DiffOp::Equal { old_index, len, .. }
                if (*old_index..old_index + len).contains(&d))
        });
    let corrected = if kept {
        None
    } else {
        let real = key(file.content(s + d), mode);
        let candidates: Vec<usize> = ops
            .iter()
            .filter_map(|op| match *op {
                similar::DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } if (old_index..old_index + old_len).contains(&d) => {
                    Some(new_index..new_index + new_len)
                }
                _ => None,
            })
            .flatten()
            .filter(|&j| key(new.0[j], mode) == real)
            .collect();
        match candidates.as_slice() {
            // With nothing else changed, NEW is what the file already has: not a slip to
            // repair but an edit applied already, which the not-found refusal says.
            [j] if ops.iter().any(|op| match *op {
                similar::DiffOp::Equal { .. } => false,
                similar::DiffOp::Replace {
                    old_index, old_len, ..
                } => old_len > 1 || old_index != d,
                _ => true,
            }) || new.0.len() != old.len() =>
            {
                Some(*j)
            }
            _ => return None,
        }
    };
    // Indentation of the matched lines must tell one consistent story.
    let pairs: Vec<(&str, &str)> = nonblank
        .iter()
        .map(|&i| (indent_of(old[i]), indent_of(file.content(s + i))))
        .collect();
    let shift = consistent_shift(&pairs, file.unit())?;
    let w = Window {
        map: (0..old.len()).map(|i| Some(s + i)).collect(),
        first: s,
        last: s + old.len() - 1,
        suffix_first: false,
        reindent: if shift.0 == 0 { None } else { Some(shift) },
    };
    let (region, transform, _) = region_for_window(file, &old, old_terminated, &w, mode)?;
    let mut passes = v.passes.clone();
    passes.push(Pass::Fuzzy);
    Some(Occurrence {
        parts: vec![Part {
            region,
            transform,
            old_lines: old
                .iter()
                .enumerate()
                .map(|(i, l)| match corrected {
                    // NEW's version of the slipped line equals the file's: the line is kept.
                    Some(j) if i == d => new.0[j].to_string(),
                    _ => l.to_string(),
                })
                .collect(),
            new_lines: new.0.iter().map(|s| s.to_string()).collect(),
            old_terminated,
        }],
        passes,
    })
}

/// The one non-blank OLD line that differs from the window at `s` (blank lines must line up).
fn single_difference(
    file: &FileIndex<'_>,
    old: &[&str],
    nonblank: &[usize],
    s: usize,
    mode: LineMode,
) -> Option<usize> {
    let mut differing = None;
    for &i in nonblank {
        if key(old[i], mode) != key(file.content(s + i), mode) {
            if differing.is_some() {
                return None;
            }
            differing = Some(i);
        }
    }
    for (i, o) in old.iter().enumerate() {
        if is_blank(o) != is_blank(file.content(s + i)) {
            return None;
        }
    }
    differing
}

/// For every window start, how many non-blank OLD lines equal the file line at that offset.
fn window_votes(file: &FileIndex<'_>, old: &[&str], mode: LineMode) -> HashMap<usize, usize> {
    let mut wanted: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, o) in old.iter().enumerate() {
        if !is_blank(o) {
            wanted.entry(key(o, mode).into_owned()).or_default().push(i);
        }
    }
    let mut votes: HashMap<usize, usize> = HashMap::new();
    for f in 0..file.lines().len() {
        let c = file.content(f);
        if is_blank(c) {
            continue;
        }
        let k = key(c, mode);
        if let Some(idxs) = wanted.get(k.as_ref()) {
            if !file.spend(idxs.len()) {
                return HashMap::new();
            }
            for &i in idxs {
                if f >= i {
                    *votes.entry(f - i).or_default() += 1;
                }
            }
        }
    }
    votes
}

/// The window most like OLD, for refusals: most equal lines, then the earliest. Falls back to
/// the line most like OLD's first non-blank line.
pub(crate) fn closest_window(file: &FileIndex<'_>, old: &[&str]) -> Option<usize> {
    if file.lines().is_empty() {
        return None;
    }
    let mode = LineMode {
        lenient_indent: true,
        skip_blank: false,
        typo: true,
        collapse: true,
    };
    let votes = window_votes(file, old, mode);
    let best = votes
        .iter()
        .filter(|(s, _)| **s < file.lines().len())
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)));
    if let Some((&s, _)) = best {
        return Some(s);
    }
    let (k0, first) = old.iter().enumerate().find(|(_, l)| !is_blank(l))?;
    let target = first.trim();
    let grams = trigrams(target);
    if grams.is_empty() {
        return None;
    }
    let mut best: Option<(usize, usize)> = None;
    for f in 0..file.lines().len() {
        let c = file.content(f).trim();
        if c.is_empty() {
            continue;
        }
        let score = trigram_hits(c, &grams);
        if score > 0 && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, f));
        }
    }
    best.map(|(_, f)| f.saturating_sub(k0))
}

fn trigrams(s: &str) -> HashSet<[char; 3]> {
    let cs: Vec<char> = s.chars().collect();
    cs.windows(3).map(|w| [w[0], w[1], w[2]]).collect()
}

fn trigram_hits(s: &str, grams: &HashSet<[char; 3]>) -> usize {
    let cs: Vec<char> = s.chars().take(500).collect();
    let mut seen = HashSet::new();
    for w in cs.windows(3) {
        let g = [w[0], w[1], w[2]];
        if grams.contains(&g) {
            seen.insert(g);
        }
    }
    seen.len()
}
