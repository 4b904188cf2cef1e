//! Line-level facts about a text that every pass of the engine needs: where lines start and end,
//! which line ending and indentation unit a file uses, how wide an indentation is, what a
//! typographic character means in ASCII, and how to make whitespace visible to a model.
//!
//! Everything here works on byte offsets into the original text and never panics: offsets are
//! always produced by scanning the text itself, so they fall on character boundaries.

use std::ops::Range;

/// One line of a text: `content` excludes the terminator (`\n`, `\r\n` or a lone final `\r`
/// is treated as content), `end` includes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    pub start: usize,
    pub content_end: usize,
    pub end: usize,
}

impl Line {
    pub fn content<'a>(&self, text: &'a str) -> &'a str {
        &text[self.start..self.content_end]
    }

    pub fn terminator<'a>(&self, text: &'a str) -> &'a str {
        &text[self.content_end..self.end]
    }

    pub fn range(&self) -> Range<usize> {
        self.start..self.end
    }
}

/// Splits `text` into lines. A text ending with a newline has no empty last line; an empty text
/// has no lines.
pub fn lines(text: &str) -> Vec<Line> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 32 + 1);
    let mut start = 0;
    let mut i = 0;
    while let Some(pos) = memchr_newline(&bytes[i..]) {
        let nl = i + pos;
        let content_end = if nl > start && bytes[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        out.push(Line {
            start,
            content_end,
            end: nl + 1,
        });
        start = nl + 1;
        i = nl + 1;
    }
    if start < bytes.len() {
        out.push(Line {
            start,
            content_end: bytes.len(),
            end: bytes.len(),
        });
    }
    out
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// Splits a snippet (OLD or NEW as a model sent it) into line contents, dropping `\r` before
/// `\n`. Returns the contents and whether the snippet ended with a newline.
pub fn snippet_lines(text: &str) -> (Vec<&str>, bool) {
    if text.is_empty() {
        return (Vec::new(), false);
    }
    let terminated = text.ends_with('\n');
    let body = if terminated {
        &text[..text.len() - 1]
    } else {
        text
    };
    let out = body
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    (out, terminated)
}

/// 1-based line number of byte `offset` (clamped to the text).
pub fn line_number_at(lines: &[Line], offset: usize) -> usize {
    match lines.binary_search_by(|l| {
        if offset < l.start {
            std::cmp::Ordering::Greater
        } else if offset >= l.end {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Equal
        }
    }) {
        Ok(i) => i + 1,
        Err(i) => i.max(1).min(lines.len().max(1)),
    }
}

/// The line ending most lines of `text` use; `\n` when there are none.
pub fn dominant_eol(text: &str) -> &'static str {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count() - crlf;
    if crlf > lf { "\r\n" } else { "\n" }
}

pub fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The leading whitespace of a line (spaces and tabs only).
pub fn indent_of(line: &str) -> &str {
    let n = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..n]
}

/// Width in columns of an indentation string, tabs advancing to the next multiple of
/// `tab_width`.
pub fn indent_cols(indent: &str, tab_width: usize) -> usize {
    let tab_width = tab_width.max(1);
    let mut col = 0;
    for c in indent.chars() {
        if c == '\t' {
            col = (col / tab_width + 1) * tab_width;
        } else {
            col += 1;
        }
    }
    col
}

/// The indentation unit a file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndentUnit {
    Tabs,
    Spaces(usize),
}

impl IndentUnit {
    /// Columns per level, used as the tab width when converting.
    pub fn width(self) -> usize {
        match self {
            IndentUnit::Tabs => 4,
            IndentUnit::Spaces(n) => n.max(1),
        }
    }

    /// Renders `cols` columns of indentation in this unit.
    pub fn render(self, cols: usize, tab_width: usize) -> String {
        match self {
            IndentUnit::Spaces(_) => " ".repeat(cols),
            IndentUnit::Tabs => {
                let tw = tab_width.max(1);
                let mut s = "\t".repeat(cols / tw);
                s.push_str(&" ".repeat(cols % tw));
                s
            }
        }
    }
}

/// Detects the indentation unit from the lines of a text: tabs when most indented lines start
/// with a tab, otherwise the most common positive step between consecutive indentations.
pub fn detect_indent(text: &str) -> IndentUnit {
    let mut tabs = 0usize;
    let mut spaces = 0usize;
    let mut steps = [0usize; 9];
    let mut prev = 0usize;
    for line in text.lines().take(20_000) {
        if is_blank(line) {
            continue;
        }
        let ind = indent_of(line);
        if ind.starts_with('\t') {
            tabs += 1;
            continue;
        }
        let n = ind.len();
        if n > 0 {
            spaces += 1;
        }
        if n > prev && n - prev <= 8 {
            steps[n - prev] += 1;
        }
        prev = n;
    }
    if tabs > spaces {
        return IndentUnit::Tabs;
    }
    let best = (1..=8)
        .filter(|&s| steps[s] > 0)
        .max_by_key(|&s| (steps[s], s))
        .unwrap_or(4);
    IndentUnit::Spaces(best)
}

/// Maps a typographic character to the ASCII one a model (or a word processor) swapped it for.
pub fn typographic_ascii(c: char) -> Option<char> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2007}' | '\u{2009}' | '\u{200A}' | '\u{202F}' | '\u{3000}' => ' ',
        _ => return None,
    })
}

/// `s` with every typographic character replaced by its ASCII counterpart.
pub fn typographic_fold(s: &str) -> String {
    s.chars()
        .map(|c| typographic_ascii(c).unwrap_or(c))
        .collect()
}

pub fn has_typographic(s: &str) -> bool {
    s.chars().any(|c| typographic_ascii(c).is_some())
}

/// Makes whitespace visible for a model: `·` space, `→` tab, `␍` carriage return.
pub fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            ' ' => out.push('·'),
            '\t' => out.push('→'),
            '\r' => out.push('␍'),
            '\u{00A0}' => out.push('⍽'),
            c => out.push(c),
        }
    }
    out
}

/// Truncates `s` to at most `max` characters, marking the cut.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Is this line an elision marker a model wrote instead of code it did not want to repeat
/// (`...`, `…`, `// ... existing code ...`, `# ...`, `/* ... */`, `<!-- ... -->`)?
///
/// `bare_dots` says whether a line of only `...` counts (it is a real statement in Python).
pub fn is_elision_marker(line: &str, bare_dots: bool) -> bool {
    let t = line.trim();
    if t.len() > 100 {
        return false;
    }
    if t == "..." || t == "…" || t == "...." {
        return bare_dots;
    }
    let mut rest = t;
    let mut had_comment = false;
    for lead in ["<!--", "/*", "//", "--", "#", ";", "*"] {
        if let Some(r) = rest.strip_prefix(lead) {
            rest = r.trim_start_matches(['/', '#', '*', '-', ';']);
            had_comment = true;
            break;
        }
    }
    if !had_comment {
        return false;
    }
    for tail in ["-->", "*/"] {
        if let Some(r) = rest.trim_end().strip_suffix(tail) {
            rest = r;
        }
    }
    let rest = rest.trim();
    let dots = rest.starts_with("...")
        || rest.starts_with('…')
        || rest.ends_with("...")
        || rest.ends_with('…');
    if dots {
        return true;
    }
    // Worded markers without dots: "// existing code", "# rest of the function unchanged".
    let lower = rest.to_ascii_lowercase();
    let worded = [
        "existing code",
        "rest of",
        "unchanged",
        "remaining code",
        "omitted",
        "same as before",
        "keep existing",
        "other code",
    ];
    rest.len() <= 60 && worded.iter().any(|w| lower.contains(w))
}

/// A similarity ratio in [0, 1] of two short strings (2 × matching chars / total chars), from a
/// character-level LCS bounded in cost.
pub fn similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let a: Vec<char> = a.chars().take(400).collect();
    let b: Vec<char> = b.chars().take(400).collect();
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let mut prev = vec![0u16; b.len() + 1];
    let mut cur = vec![0u16; b.len() + 1];
    for &ca in &a {
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = if ca == cb {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    let lcs = prev[b.len()] as f64;
    2.0 * lcs / (a.len() + b.len()) as f64
}

/// Number of word tokens (identifier runs, or single punctuation characters) that differ between
/// two lines, counted as the larger side of the token diff.
pub fn token_difference(a: &str, b: &str) -> usize {
    let ta = tokens(a);
    let tb = tokens(b);
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &ta, &tb);
    let mut removed = 0;
    let mut added = 0;
    for op in ops {
        match op {
            similar::DiffOp::Equal { .. } => {}
            similar::DiffOp::Delete { old_len, .. } => removed += old_len,
            similar::DiffOp::Insert { new_len, .. } => added += new_len,
            similar::DiffOp::Replace {
                old_len, new_len, ..
            } => {
                removed += old_len;
                added += new_len;
            }
        }
    }
    removed.max(added)
}

fn tokens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        let word = c.is_alphanumeric() || c == '_';
        match (word, start) {
            (true, None) => start = Some(i),
            (true, Some(_)) => {}
            (false, Some(st)) => {
                out.push(&s[st..i]);
                start = None;
                if !c.is_whitespace() {
                    out.push(&s[i..i + c.len_utf8()]);
                }
            }
            (false, None) => {
                if !c.is_whitespace() {
                    out.push(&s[i..i + c.len_utf8()]);
                }
            }
        }
    }
    if let Some(st) = start {
        out.push(&s[st..]);
    }
    out
}

/// A Markdown code block in a model's answer (```` ``` ```` or `~~~`, three or more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced {
    /// The info string after the opening fence (`python`, `tool`, or empty).
    pub info: String,
    /// The lines between the fences, each with its line break.
    pub body: String,
    /// Index (0-based) of the opening fence line, and of the line after the block.
    pub open: usize,
    pub end: usize,
    /// Whether a closing fence was found (an unclosed block runs to the end of the text).
    pub closed: bool,
}

/// A fence line (```` ``` ```` or `~~~`, three or more, spaces around allowed): its character,
/// its length and its info string. A line of backticks whose info string holds a backtick is an
/// inline code span, not a fence. This is the one fence reader of the crate: answers, edit
/// formats, snippets, streamed content, research text and plans all use it (directly or through
/// [`fence_at`] and [`Fences`]).
pub fn fence_line(line: &str) -> Option<(char, usize, &str)> {
    let t = line.trim();
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = t.chars().take_while(|&c| c == ch).count();
    if len < 3 {
        return None;
    }
    let info = t[len..].trim();
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((ch, len, info))
}

/// A backtick fence that `lines` cannot close early: one backtick more than the longest run of
/// them that opens one of the lines, and at least three.
pub fn fence_for<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let longest = lines
        .into_iter()
        .map(|l| l.trim_start().chars().take_while(|c| *c == '`').count())
        .max()
        .unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// `lines` joined as `text`'s lines are: a line feed between them, and one after the last when
/// `text` ends with one (the readers that rewrite a page line for line give back its shape).
pub fn joined_like(lines: &[String], text: &str) -> String {
    let mut joined = lines.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    joined
}

/// Whether `line` closes a block opened by a fence of `len` characters `ch`: the same character,
/// at least as many, and no info string.
pub fn closes_fence(line: &str, ch: char, len: usize) -> bool {
    fence_line(line).is_some_and(|(c, n, info)| c == ch && n >= len && info.is_empty())
}

/// What a line is to a reader going through a text line by line (see [`Fences`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceLine {
    /// Not in a code block.
    Outside,
    /// The fence that opens a block.
    Open,
    /// A line inside a block.
    Inside,
    /// The fence that closes the block.
    Close,
}

/// Whether a line-by-line reader is inside a code block, with the rules of [`fence_line`] and
/// [`closes_fence`], for readers that look at the lines around code blocks (prose, plans,
/// passages) rather than at the blocks themselves (those use [`fenced_blocks`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Fences {
    /// The character and length of the fence that opened the current block.
    open: Option<(char, usize)>,
}

impl Fences {
    /// Reads the next line.
    pub fn line(&mut self, line: &str) -> FenceLine {
        match self.open {
            Some((ch, len)) if closes_fence(line, ch, len) => {
                self.open = None;
                FenceLine::Close
            }
            Some(_) => FenceLine::Inside,
            None => match fence_line(line) {
                Some((ch, len, _)) => {
                    self.open = Some((ch, len));
                    FenceLine::Open
                }
                None => FenceLine::Outside,
            },
        }
    }

    /// Whether the lines read so far leave a block open.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }
}

/// The code block whose opening fence is `lines[i]` (lines as `split_inclusive('\n')` gives
/// them). It closes at the first line that [`closes_fence`].
pub fn fence_at(lines: &[&str], i: usize) -> Option<Fenced> {
    let (ch, len, info) = fence_line(lines.get(i)?)?;
    let close = (i + 1..lines.len()).find(|&j| closes_fence(lines[j], ch, len));
    let end = close.unwrap_or(lines.len());
    Some(Fenced {
        info: info.to_owned(),
        body: lines[i + 1..end].concat(),
        open: i,
        end: close.map_or(end, |j| j + 1),
        closed: close.is_some(),
    })
}

/// Every code block of `text`, in order.
pub fn fenced_blocks(text: &str) -> Vec<Fenced> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        match fence_at(&lines, i) {
            Some(block) => {
                i = block.end;
                out.push(block);
            }
            None => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_track_blocks_line_by_line() {
        let text = "prose\n````md\n```rust\n```\n````\n~~~\nx\n~~~\nafter";
        let mut fences = Fences::default();
        let seen: Vec<FenceLine> = text.lines().map(|l| fences.line(l)).collect();
        use FenceLine::*;
        assert_eq!(
            seen,
            [
                Outside, Open, Inside, Inside, Close, Open, Inside, Close, Outside
            ]
        );
        assert!(!fences.is_open());
        // An inline code span is no fence; an unclosed block stays open.
        let mut fences = Fences::default();
        assert_eq!(fences.line("```a` b```"), Outside);
        assert_eq!(fences.line("  ~~~ "), Open);
        assert!(fences.is_open());
    }

    #[test]
    fn splits_lines_with_mixed_endings() {
        let t = "a\r\nb\nc";
        let ls = lines(t);
        assert_eq!(ls.len(), 3);
        assert_eq!(ls[0].content(t), "a");
        assert_eq!(ls[0].terminator(t), "\r\n");
        assert_eq!(ls[1].content(t), "b");
        assert_eq!(ls[2].content(t), "c");
        assert_eq!(ls[2].terminator(t), "");
        assert!(lines("").is_empty());
        assert_eq!(lines("x\n").len(), 1);
    }

    #[test]
    fn detects_indent_units() {
        assert_eq!(detect_indent("a\n  b\n    c\n  d\n"), IndentUnit::Spaces(2));
        assert_eq!(detect_indent("a\n\tb\n\t\tc\n"), IndentUnit::Tabs);
        assert_eq!(detect_indent("fn a() {\n    x\n}\n"), IndentUnit::Spaces(4));
    }

    #[test]
    fn recognises_elision_markers() {
        assert!(is_elision_marker("    // ... existing code ...", false));
        assert!(is_elision_marker("# ...", false));
        assert!(is_elision_marker("/* ... */", false));
        assert!(is_elision_marker("<!-- ... -->", false));
        assert!(is_elision_marker(
            "// rest of the function unchanged",
            false
        ));
        assert!(!is_elision_marker("    ...", false));
        assert!(is_elision_marker("    ...", true));
        assert!(!is_elision_marker("// compute the sum", false));
        assert!(!is_elision_marker("let x = a...b;", true));
    }

    #[test]
    fn counts_token_differences() {
        assert_eq!(
            token_difference("let x = foo(a, b);", "let x = foo(a, c);"),
            1
        );
        assert_eq!(token_difference("a b c", "a b c"), 0);
        assert!(similarity("let x = foo(a, b);", "let x = foo(a, c);") > 0.9);
    }

    #[test]
    fn fences_open_close_and_run_to_the_end() {
        let blocks = fenced_blocks("text\n```py\na\n````\nb\n~~~\nc\n");
        assert_eq!(blocks.len(), 2, "{blocks:?}");
        assert_eq!(
            (blocks[0].info.as_str(), blocks[0].body.as_str()),
            ("py", "a\n")
        );
        assert!(blocks[0].closed);
        assert_eq!(blocks[1].body, "c\n");
        assert!(!blocks[1].closed);
        // A longer opening fence is closed only by one as long.
        let b = fenced_blocks("````\n```\ninner\n```\n````\n");
        assert_eq!(b[0].body, "```\ninner\n```\n");
        assert!(fenced_blocks("use ```x``` here\n").is_empty());
    }
}
