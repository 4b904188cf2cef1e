//! Line arithmetic shared by outlines, regions and checks: where each line starts, which line a
//! byte is on, and the `cat -n` numbering every listing a model sees uses.
//!
//! Lines end at `\n` (a preceding `\r` belongs to the line ending), the same rows tree-sitter
//! counts. Line numbers shown to models are 1-based; the index itself is 0-based. Never panics:
//! offsets past the end clamp to the last line.

use std::ops::Range;

/// Byte offsets of the start of every line of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0);
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        // A final newline ends the last line rather than starting an empty one.
        if starts.len() > 1 && starts.last() == Some(&text.len()) {
            starts.pop();
        }
        LineIndex {
            starts,
            len: text.len(),
        }
    }

    /// Number of lines; an empty text has one (empty) line.
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// The 0-based line holding byte `offset` (clamped to the text).
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.len);
        match self.starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    /// The bytes of 0-based `line` including its line ending (clamped to the last line).
    pub fn line_range(&self, line: usize) -> Range<usize> {
        let line = line.min(self.starts.len() - 1);
        let end = self.starts.get(line + 1).copied().unwrap_or(self.len);
        self.starts[line]..end
    }

    /// The bytes of 0-based lines `first..=last`, line endings included.
    pub fn lines_range(&self, first: usize, last: usize) -> Range<usize> {
        self.line_range(first).start..self.line_range(last.max(first)).end
    }

    /// The 0-based lines `first..=last` that `bytes` touches; an empty range or one ending right
    /// after a newline does not reach into the next line.
    pub fn lines_of(&self, bytes: &Range<usize>) -> (usize, usize) {
        let first = self.line_of(bytes.start);
        let last = if bytes.end > bytes.start {
            self.line_of(bytes.end - 1)
        } else {
            first
        };
        (first, last.max(first))
    }
}

/// The text of a line without its line ending.
pub fn line_text<'a>(text: &'a str, index: &LineIndex, line: usize) -> &'a str {
    let range = index.line_range(line);
    let raw = text.get(range).unwrap_or("");
    let raw = raw.strip_suffix('\n').unwrap_or(raw);
    raw.strip_suffix('\r').unwrap_or(raw)
}

/// One line in `cat -n` style: the 1-based number right-aligned in six columns, a tab, the text.
pub fn numbered(line_number: usize, text: &str) -> String {
    format!("{line_number:>6}\t{text}")
}

/// Appends the numbered 0-based lines `first..=last` of `text` to `out`, one per line.
pub fn push_numbered(out: &mut String, text: &str, index: &LineIndex, first: usize, last: usize) {
    for line in first..=last.min(index.line_count() - 1) {
        out.push_str(&numbered(line + 1, line_text(text, index, line)));
        out.push('\n');
    }
}

/// The whole of `text` numbered from line 1.
pub fn number_all(text: &str) -> String {
    let index = LineIndex::new(text);
    let mut out = String::with_capacity(text.len() + 8 * index.line_count());
    push_numbered(&mut out, text, &index, 0, index.line_count() - 1);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_lines_by_newline() {
        let text = "a\r\nbé\n\nc";
        let index = LineIndex::new(text);
        assert_eq!(index.line_count(), 4);
        assert_eq!(index.line_of(0), 0);
        assert_eq!(index.line_of(2), 0);
        assert_eq!(index.line_of(3), 1);
        assert_eq!(index.line_of(999), 3);
        assert_eq!(line_text(text, &index, 0), "a");
        assert_eq!(line_text(text, &index, 1), "bé");
        assert_eq!(line_text(text, &index, 2), "");
        assert_eq!(line_text(text, &index, 3), "c");
        assert_eq!(index.lines_of(&(3..7)), (1, 1));
        assert_eq!(index.lines_of(&(3..8)), (1, 2));
        assert_eq!(LineIndex::new("x\n").line_count(), 1);
        assert_eq!(LineIndex::new("").line_count(), 1);
    }

    #[test]
    fn numbers_like_cat_n() {
        assert_eq!(
            number_all("fn a() {}\n\nb"),
            "     1\tfn a() {}\n     2\t\n     3\tb\n"
        );
        assert_eq!(numbered(1234567, "x"), "1234567\tx");
    }
}
