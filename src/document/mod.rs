//! Open documents as the editor has them: a rope, its version, language and line endings.
//!
//! This is the one place where the editor's coordinates (line + column in UTF-8, UTF-16 or
//! UTF-32 code units, as negotiated) meet the core's byte offsets. Everything past this module
//! speaks byte offsets. Conversions never panic on a client's position: a column past the end of
//! a line clamps to the line end, a line past the end clamps to the end of the file, a position
//! inside a UTF-16 surrogate pair or a UTF-8 sequence snaps back to the start of that character
//! — and each of these is reported as a [`PositionProblem`] for the caller to log, as helix's
//! `lsp_pos_to_pos` does. Line endings are never normalised: CRLF and mixed files round-trip
//! byte for byte.
//!
//! No I/O and no protocol types here: `lsp/` converts its types into [`Position`] and
//! [`ContentChange`] first.

pub mod change;

use std::fmt;
use std::ops::Range;

use ropey::Rope;

use self::change::Replacement;

/// How the editor counts columns. Negotiated once per session in `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PositionEncoding {
    /// Bytes of UTF-8.
    Utf8,
    /// UTF-16 code units: the LSP default, what VS Code uses.
    #[default]
    Utf16,
    /// Unicode scalar values (chars).
    Utf32,
}

impl PositionEncoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Utf8 => "utf-8",
            Self::Utf16 => "utf-16",
            Self::Utf32 => "utf-32",
        }
    }
}

impl fmt::Display for PositionEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A zero-based line and a column counted in some [`PositionEncoding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

impl Position {
    pub const fn new(line: u32, character: u32) -> Self {
        Self { line, character }
    }
}

/// A half-open range of [`Position`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: Position,
    pub end: Position,
}

/// One content change as a client sends it: a range to replace, or the whole text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentChange {
    pub range: Option<Span>,
    pub text: String,
}

/// A client position that did not name a valid place and was adjusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PositionProblem {
    /// The line is past the last line; the position moved to the end of the file.
    LinePastEnd { position: Position, line_count: u32 },
    /// The column is past the end of the line; the position moved to the line end.
    ColumnPastLineEnd {
        position: Position,
        line_length: u32,
        encoding: PositionEncoding,
    },
    /// The column points inside a character (a UTF-16 surrogate pair or a UTF-8 sequence); the
    /// position moved back to the start of that character.
    InsideCharacter {
        position: Position,
        encoding: PositionEncoding,
    },
    /// A range whose end comes before its start; it was treated as empty at its start.
    InvertedRange { span: Span },
}

impl fmt::Display for PositionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LinePastEnd {
                position,
                line_count,
            } => write!(
                f,
                "line {} is past the end of the document ({line_count} lines); clamped to the end of the file",
                position.line
            ),
            Self::ColumnPastLineEnd {
                position,
                line_length,
                encoding,
            } => write!(
                f,
                "column {} on line {} is past the line end ({line_length} {encoding} units); clamped to the line end",
                position.character, position.line
            ),
            Self::InsideCharacter { position, encoding } => write!(
                f,
                "column {} on line {} falls inside a character in {encoding}; snapped to the character start",
                position.character, position.line
            ),
            Self::InvertedRange { span } => write!(
                f,
                "range end {}:{} comes before its start {}:{}; treated as empty at the start",
                span.end.line, span.end.character, span.start.line, span.start.character
            ),
        }
    }
}

/// The kind of line break a document uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LineEnding {
    #[default]
    Lf,
    CrLf,
    Cr,
}

impl LineEnding {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lf => "\n",
            Self::CrLf => "\r\n",
            Self::Cr => "\r",
        }
    }
}

/// The line endings seen in a document: the most common one, and whether others occur too.
/// A hint for code that inserts new lines; the text itself is never normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineEndings {
    pub dominant: LineEnding,
    pub mixed: bool,
}

impl LineEndings {
    pub fn detect(text: &str) -> Self {
        let counts = count_line_endings(text);
        Self::from_counts(counts)
    }

    fn from_counts([lf, crlf, cr]: [usize; 3]) -> Self {
        let dominant = if crlf > lf && crlf >= cr {
            LineEnding::CrLf
        } else if cr > lf && cr > crlf {
            LineEnding::Cr
        } else {
            LineEnding::Lf
        };
        let kinds = [lf, crlf, cr].iter().filter(|&&n| n > 0).count();
        Self {
            dominant,
            mixed: kinds > 1,
        }
    }

    /// Updates the hint with text inserted into the document.
    fn absorb(&mut self, inserted: &str) {
        let counts = count_line_endings(inserted);
        let kinds = counts.iter().filter(|&&n| n > 0).count();
        if kinds == 0 {
            return;
        }
        let inserted = Self::from_counts(counts);
        if inserted.mixed || inserted.dominant != self.dominant {
            self.mixed = true;
        }
    }
}

/// Counts `[LF, CRLF, lone CR]` line breaks.
fn count_line_endings(text: &str) -> [usize; 3] {
    let bytes = text.as_bytes();
    let mut counts = [0; 3];
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => counts[0] += 1,
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                counts[1] += 1;
                i += 1;
            }
            b'\r' => counts[2] += 1,
            _ => {}
        }
        i += 1;
    }
    counts
}

/// A change whose version is not newer than the document's; it was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("change for version {received} is older than the document's version {current}; ignored")]
pub struct StaleVersion {
    pub current: i32,
    pub received: i32,
}

/// What applying content changes did: each change as a byte replacement against the text as it
/// was just before that change (so they apply in sequence), and any positions that had to be
/// adjusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangesApplied {
    pub replacements: Vec<Replacement>,
    pub problems: Vec<PositionProblem>,
}

/// An open document.
#[derive(Debug, Clone)]
pub struct Document {
    pub rope: Rope,
    pub version: i32,
    pub language_id: String,
    pub line_endings: LineEndings,
}

impl Document {
    pub fn new(text: &str, version: i32, language_id: impl Into<String>) -> Self {
        Self {
            rope: Rope::from_str(text),
            version,
            language_id: language_id.into(),
            line_endings: LineEndings::detect(text),
        }
    }

    pub fn text(&self) -> String {
        self.rope.to_string()
    }

    pub fn len_bytes(&self) -> usize {
        self.rope.len_bytes()
    }

    /// Applies the changes of one `didChange`, in order, and moves to `version`.
    ///
    /// A version older than the document's is refused (the change is stale or reordered);
    /// an equal version is accepted, because some clients do not bump it for every change.
    pub fn apply_changes(
        &mut self,
        version: i32,
        changes: &[ContentChange],
        encoding: PositionEncoding,
    ) -> Result<ChangesApplied, StaleVersion> {
        if version < self.version {
            return Err(StaleVersion {
                current: self.version,
                received: version,
            });
        }
        let mut applied = ChangesApplied::default();
        for change in changes {
            let replacement = self.apply_change(change, encoding, &mut applied.problems);
            applied.replacements.push(replacement);
        }
        self.version = version;
        Ok(applied)
    }

    fn apply_change(
        &mut self,
        change: &ContentChange,
        encoding: PositionEncoding,
        problems: &mut Vec<PositionProblem>,
    ) -> Replacement {
        let Some(span) = change.range else {
            let old_len = self.rope.len_bytes();
            self.rope = Rope::from_str(&change.text);
            self.line_endings = LineEndings::detect(&change.text);
            return Replacement::new(0..old_len, change.text.clone());
        };
        let (start, mut end) = self.resolve_span(span, encoding);
        problems.extend(start.problem.clone().into_iter().chain(end.problem.clone()));
        if end.char_idx < start.char_idx {
            problems.push(PositionProblem::InvertedRange { span });
            end = start.clone();
        }
        if end.char_idx > start.char_idx {
            self.rope.remove(start.char_idx..end.char_idx);
        }
        if !change.text.is_empty() {
            self.rope.insert(start.char_idx, &change.text);
            self.line_endings.absorb(&change.text);
        }
        Replacement::new(start.byte..end.byte, change.text.clone())
    }

    /// The byte offset of a client position, clamped and snapped as the module docs describe.
    pub fn offset(
        &self,
        position: Position,
        encoding: PositionEncoding,
    ) -> (usize, Option<PositionProblem>) {
        let resolved = self.resolve(position, encoding);
        (resolved.byte, resolved.problem)
    }

    /// The byte range of a client range. An inverted range becomes empty at its start.
    pub fn byte_range(
        &self,
        span: Span,
        encoding: PositionEncoding,
    ) -> (Range<usize>, Vec<PositionProblem>) {
        let (start, p1) = self.offset(span.start, encoding);
        let (end, p2) = self.offset(span.end, encoding);
        let mut problems: Vec<_> = p1.into_iter().chain(p2).collect();
        if end < start {
            problems.push(PositionProblem::InvertedRange { span });
            return (start..start, problems);
        }
        (start..end, problems)
    }

    /// The client position of a byte offset. Offsets past the end clamp to the end; an offset
    /// inside a UTF-8 sequence moves back to the start of its character.
    pub fn position(&self, offset: usize, encoding: PositionEncoding) -> Position {
        let offset = offset.min(self.rope.len_bytes());
        let char_idx = self.rope.byte_to_char(offset);
        let line = self.rope.char_to_line(char_idx);
        let line_start = self.rope.line_to_char(line);
        let character = match encoding {
            PositionEncoding::Utf8 => {
                self.rope.char_to_byte(char_idx) - self.rope.line_to_byte(line)
            }
            PositionEncoding::Utf16 => {
                self.rope.char_to_utf16_cu(char_idx) - self.rope.char_to_utf16_cu(line_start)
            }
            PositionEncoding::Utf32 => char_idx - line_start,
        };
        Position::new(saturating_u32(line), saturating_u32(character))
    }

    /// Where a client position lands, with the adjustment made if any.
    fn resolve(&self, position: Position, encoding: PositionEncoding) -> Resolved {
        match self.line(position.line) {
            Some(line) => line.resolve(position, encoding),
            None => self.past_end(position),
        }
    }

    /// Both ends of a range; the line is looked up once when both ends are on it (the common
    /// case of a keystroke), which keeps incremental sync close to bare rope speed.
    fn resolve_span(&self, span: Span, encoding: PositionEncoding) -> (Resolved, Resolved) {
        let Some(line) = self.line(span.start.line) else {
            return (self.past_end(span.start), self.resolve(span.end, encoding));
        };
        let start = line.resolve(span.start, encoding);
        let end = if span.end.line == span.start.line {
            line.resolve(span.end, encoding)
        } else {
            self.resolve(span.end, encoding)
        };
        (start, end)
    }

    fn past_end(&self, position: Position) -> Resolved {
        Resolved {
            char_idx: self.rope.len_chars(),
            byte: self.rope.len_bytes(),
            problem: Some(PositionProblem::LinePastEnd {
                position,
                line_count: saturating_u32(self.rope.len_lines()),
            }),
        }
    }

    fn line(&self, line: u32) -> Option<Line<'_>> {
        let index = line as usize;
        let rope = &self.rope;
        if index >= rope.len_lines() {
            return None;
        }
        Some(self.line_in_one_chunk(index).unwrap_or_else(|| {
            let slice = rope.line(index);
            let len = slice.len_chars();
            // `cr_lines`: a line slice ends with its break: LF, CRLF or a lone CR.
            let content_chars = match (len.checked_sub(1).map(|i| slice.char(i)), len) {
                (Some('\n'), 2..) if slice.char(len - 2) == '\r' => len - 2,
                (Some('\n' | '\r'), _) => len - 1,
                _ => len,
            };
            Line {
                start_char: rope.line_to_char(index),
                start_byte: rope.line_to_byte(index),
                text: LineText::Slice(slice.slice(..content_chars)),
            }
        }))
    }

    /// The fast path: one descent into the rope finds the chunk holding the line's start; when
    /// the whole line sits in that chunk (lines are short, chunks ~1 KB) its text is a plain
    /// `&str` and columns are counted without walking the tree again.
    fn line_in_one_chunk(&self, index: usize) -> Option<Line<'_>> {
        let rope = &self.rope;
        let (chunk, chunk_byte, chunk_char, chunk_line) = rope.chunk_at_line_break(index);
        let bytes = chunk.as_bytes();
        let mut start = 0;
        // Skip the line breaks between the chunk's start and the line. Ropey never splits a
        // CRLF across chunks, so a CR followed by LF here is one break.
        for _ in chunk_line..index {
            let at = start + memchr::memchr2(b'\n', b'\r', &bytes[start..])?;
            start = if bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n') {
                at + 2
            } else {
                at + 1
            };
        }
        let rest = &chunk[start..];
        let text = match memchr::memchr2(b'\n', b'\r', rest.as_bytes()) {
            Some(end) => &rest[..end],
            None if chunk_byte + chunk.len() == rope.len_bytes() => rest,
            None => return None,
        };
        Some(Line {
            start_char: chunk_char + chunk[..start].chars().count(),
            start_byte: chunk_byte + start,
            text: LineText::Str(text),
        })
    }
}

/// A client position resolved to the rope's char index and the core's byte offset.
#[derive(Debug, Clone)]
struct Resolved {
    char_idx: usize,
    byte: usize,
    problem: Option<PositionProblem>,
}

/// One line of the rope (without its line break), looked up once per position conversion.
struct Line<'a> {
    start_char: usize,
    start_byte: usize,
    text: LineText<'a>,
}

enum LineText<'a> {
    Str(&'a str),
    Slice(ropey::RopeSlice<'a>),
}

impl Line<'_> {
    fn resolve(&self, position: Position, encoding: PositionEncoding) -> Resolved {
        let column = position.character as usize;
        let (chars, bytes, outcome) = match &self.text {
            LineText::Str(text) => locate_in_str(text, column, encoding),
            LineText::Slice(slice) => locate_in_slice(slice, column, encoding),
        };
        let problem = match outcome {
            Located::Exact => None,
            Located::PastEnd(line_length) => Some(PositionProblem::ColumnPastLineEnd {
                position,
                line_length: saturating_u32(line_length),
                encoding,
            }),
            Located::Inside => Some(PositionProblem::InsideCharacter { position, encoding }),
        };
        Resolved {
            char_idx: self.start_char + chars,
            byte: self.start_byte + bytes,
            problem,
        }
    }
}

enum Located {
    Exact,
    /// Clamped to the line end; carries the line's length in the encoding's units.
    PastEnd(usize),
    /// Snapped back to the start of the character the column pointed into.
    Inside,
}

/// Walks a short line's chars to the column: cheaper than another descent into the rope.
/// Returns the char and byte offsets within the line.
fn locate_in_str(text: &str, column: usize, encoding: PositionEncoding) -> (usize, usize, Located) {
    let mut units = 0;
    let mut chars = 0;
    for (byte, c) in text.char_indices() {
        if units == column {
            return (chars, byte, Located::Exact);
        }
        let width = match encoding {
            PositionEncoding::Utf8 => c.len_utf8(),
            PositionEncoding::Utf16 => c.len_utf16(),
            PositionEncoding::Utf32 => 1,
        };
        if units + width > column {
            return (chars, byte, Located::Inside);
        }
        units += width;
        chars += 1;
    }
    let outcome = if units == column {
        Located::Exact
    } else {
        Located::PastEnd(units)
    };
    (chars, text.len(), outcome)
}

fn locate_in_slice(
    slice: &ropey::RopeSlice<'_>,
    column: usize,
    encoding: PositionEncoding,
) -> (usize, usize, Located) {
    let content_end = slice.len_chars();
    let length = match encoding {
        PositionEncoding::Utf32 => content_end,
        PositionEncoding::Utf16 => slice.len_utf16_cu(),
        PositionEncoding::Utf8 => slice.len_bytes(),
    };
    if column > length {
        return (content_end, slice.len_bytes(), Located::PastEnd(length));
    }
    let c = match encoding {
        PositionEncoding::Utf32 => column,
        PositionEncoding::Utf16 => slice.utf16_cu_to_char(column),
        PositionEncoding::Utf8 => slice.byte_to_char(column),
    };
    let bytes = slice.char_to_byte(c);
    let landed = match encoding {
        PositionEncoding::Utf32 => c,
        PositionEncoding::Utf16 => slice.char_to_utf16_cu(c),
        PositionEncoding::Utf8 => bytes,
    };
    let outcome = if landed == column {
        Located::Exact
    } else {
        Located::Inside
    };
    (c, bytes, outcome)
}

fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
