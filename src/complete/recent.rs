//! The places the user edited lately, kept as chunks of text for the prompt: a suggestion made
//! after a jump still sees the function the user just changed elsewhere, in this file or
//! another (llama.vim keeps such a ring of chunks; Continue fills a share of its budget with
//! recently edited ranges).
//!
//! The place being edited now is the *active* chunk; an edit farther away (or in another file)
//! moves it into the ring. A chunk is a snapshot of the lines around its last edit, taken then:
//! the ring is read on every keystroke and must not copy whole documents. Editing a place again
//! takes it out of the ring (the ring never holds two copies of one place). Line numbers of a
//! chunk are those of its snapshot; edits above it later may move its text, so "does the prompt
//! already show this chunk" is a judgement by lines, good enough to leave out the place the user
//! types in. A change that replaces a document's whole text (no range: some clients send the
//! finished text so) takes that document's chunks again at their lines.

use std::collections::VecDeque;

/// Lines of a chunk: this many around the edited line (half above, half below).
pub const CHUNK_LINES: usize = 32;
/// Chunks kept besides the active one; the oldest goes first.
pub const RING_CHUNKS: usize = 8;

/// The text around one edited place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditedChunk {
    /// The file's path as the prompt names it.
    pub path: String,
    /// The chunk's first line (0-based) in the file when it was taken.
    pub first_line: usize,
    pub text: String,
}

impl EditedChunk {
    /// The lines `first_line..` the chunk covers.
    pub fn lines(&self) -> std::ops::Range<usize> {
        let count = self.text.lines().count().max(1);
        self.first_line..self.first_line + count
    }

    fn same_place(&self, other: &EditedChunk) -> bool {
        self.path == other.path && overlaps(&self.lines(), &other.lines())
    }
}

/// The lines of the chunk around `line` in a file of `line_count` lines.
pub fn chunk_lines(line: usize, line_count: usize) -> std::ops::Range<usize> {
    let first = line.saturating_sub(CHUNK_LINES / 2);
    let end = (first + CHUNK_LINES).min(line_count.max(line + 1));
    first..end
}

/// The active chunk and the ring.
#[derive(Debug, Default)]
pub struct RecentEdits {
    active: Option<EditedChunk>,
    ring: VecDeque<EditedChunk>,
}

impl RecentEdits {
    /// The user edited inside `chunk` (taken around the edited line, now).
    pub fn edited(&mut self, chunk: EditedChunk) {
        self.ring.retain(|kept| !kept.same_place(&chunk));
        if let Some(active) = self.active.take()
            && !active.same_place(&chunk)
        {
            self.ring.push_back(active);
            while self.ring.len() > RING_CHUNKS {
                self.ring.pop_front();
            }
        }
        self.active = Some(chunk);
    }

    /// The whole text of `path` was replaced (a change without a range names no place): each
    /// chunk of `path` is taken again at its lines by `retake`, which gives `None` for lines the
    /// new text no longer has (that chunk is forgotten). Without this a chunk would keep the
    /// text of its last keystroke, a line half typed, after the client sent the finished text.
    pub fn replaced(
        &mut self,
        path: &str,
        mut retake: impl FnMut(std::ops::Range<usize>) -> Option<String>,
    ) {
        let mut again = |chunk: EditedChunk| -> Option<EditedChunk> {
            if chunk.path != path {
                return Some(chunk);
            }
            let text = retake(chunk.lines())?;
            Some(EditedChunk { text, ..chunk })
        };
        self.active = self.active.take().and_then(&mut again);
        self.ring = std::mem::take(&mut self.ring)
            .into_iter()
            .filter_map(again)
            .collect();
    }

    /// The chunks a prompt at `path` showing its lines `window` may add, newest first: every
    /// chunk but those of `path` the window already shows (the place the user types in).
    pub fn for_prompt(&self, path: &str, window: std::ops::Range<usize>) -> Vec<&EditedChunk> {
        self.active
            .iter()
            .chain(self.ring.iter().rev())
            .filter(|chunk| chunk.path != path || !overlaps(&chunk.lines(), &window))
            .collect()
    }
}

fn overlaps(a: &std::ops::Range<usize>, b: &std::ops::Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(path: &str, first_line: usize, text: &str) -> EditedChunk {
        EditedChunk {
            path: path.into(),
            first_line,
            text: text.into(),
        }
    }

    fn texts(chunks: Vec<&EditedChunk>) -> Vec<&str> {
        chunks.into_iter().map(|c| c.text.as_str()).collect()
    }

    #[test]
    fn an_edit_elsewhere_moves_the_active_chunk_into_the_ring() {
        let mut recent = RecentEdits::default();
        recent.edited(chunk("a.py", 0, "def f():\n    return 1\n"));
        recent.edited(chunk("a.py", 0, "def f():\n    return 2\n"));
        recent.edited(chunk("b.py", 100, "x = 1\n"));
        // Typing in b.py at line 100: its own place is left out, a.py's fresher text is shown.
        assert_eq!(
            texts(recent.for_prompt("b.py", 90..110)),
            ["def f():\n    return 2\n"]
        );
        // A prompt elsewhere in b.py shows both, newest first.
        assert_eq!(
            texts(recent.for_prompt("b.py", 0..40)),
            ["x = 1\n", "def f():\n    return 2\n"]
        );
    }

    #[test]
    fn a_place_edited_again_leaves_the_ring() {
        let mut recent = RecentEdits::default();
        recent.edited(chunk("a.py", 0, "one\n"));
        recent.edited(chunk("a.py", 50, "two\n"));
        recent.edited(chunk("a.py", 0, "one again\n"));
        assert_eq!(
            texts(recent.for_prompt("z.py", 0..10)),
            ["one again\n", "two\n"]
        );
    }

    #[test]
    fn the_ring_keeps_the_newest_chunks() {
        let mut recent = RecentEdits::default();
        for i in 0..RING_CHUNKS + 3 {
            recent.edited(chunk("a.py", i * 100, &format!("{i}\n")));
        }
        let shown = texts(recent.for_prompt("z.py", 0..1));
        assert_eq!(shown.len(), RING_CHUNKS + 1);
        assert_eq!(shown.first(), Some(&"10\n"));
        assert_eq!(shown.last(), Some(&"2\n"));
    }

    #[test]
    fn a_whole_text_change_takes_the_chunks_of_its_file_again() {
        let mut recent = RecentEdits::default();
        recent.edited(chunk("a.py", 0, "def f():\n    ret\n"));
        recent.edited(chunk("b.py", 0, "x = 1\n"));
        recent.edited(chunk("a.py", 40, "def g():\n    pa\n"));
        let text: Vec<String> = (0..50).map(|i| format!("line {i}\n")).collect();
        recent.replaced("a.py", |lines| {
            (lines.end <= text.len()).then(|| text[lines].concat())
        });
        assert_eq!(
            texts(recent.for_prompt("z.py", 0..1)),
            ["line 40\nline 41\n", "x = 1\n", "line 0\nline 1\n"]
        );
        // A chunk whose lines the new text no longer has is forgotten.
        recent.replaced("a.py", |lines| (lines.end <= 10).then(String::new));
        assert_eq!(texts(recent.for_prompt("z.py", 0..1)), ["x = 1\n", ""]);
    }

    #[test]
    fn a_chunk_is_the_lines_around_the_edit_within_the_file() {
        assert_eq!(chunk_lines(3, 10), 0..10);
        assert_eq!(chunk_lines(100, 1000), 84..116);
        assert_eq!(chunk_lines(999, 1000), 983..1000);
        assert_eq!(chunk_lines(0, 0), 0..1);
    }
}
