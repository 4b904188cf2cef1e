//! The one change type: sorted, non-overlapping byte-range replacements.
//!
//! Everything that changes text — a client's `didChange`, an edit the engine located, an
//! accepted proposal — is expressed as a [`TextEdit`]. Its constructor checks the invariant
//! (ranges sorted, not overlapping, on character boundaries of the text they apply to is
//! checked at apply time), so code downstream never has to re-validate (rust-analyzer's
//! `TextEdit`, helix's `ChangeSet`).

use std::fmt;
use std::ops::Range;

/// Replace the bytes in `range` of the original text with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pub range: Range<usize>,
    pub text: String,
}

impl Replacement {
    pub fn new(range: Range<usize>, text: impl Into<String>) -> Self {
        Self {
            range,
            text: text.into(),
        }
    }

    pub fn insert(offset: usize, text: impl Into<String>) -> Self {
        Self::new(offset..offset, text)
    }

    pub fn delete(range: Range<usize>) -> Self {
        Self::new(range, String::new())
    }
}

/// Replacements against one original text.
///
/// Invariant: every range has `start <= end`, ranges are sorted by start and no two overlap
/// (two insertions at the same offset are allowed and keep their order; an insertion may sit at
/// the start or end of a replaced range).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextEdit {
    replacements: Vec<Replacement>,
}

/// Why a set of replacements is not a valid [`TextEdit`], or does not fit a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    #[error("replacement {index} has an inverted range {start}..{end}")]
    Inverted {
        index: usize,
        start: usize,
        end: usize,
    },
    #[error(
        "replacements overlap: bytes {first_start}..{first_end} and {second_start}..{second_end}"
    )]
    Overlap {
        first_start: usize,
        first_end: usize,
        second_start: usize,
        second_end: usize,
    },
    #[error("replacement range {start}..{end} is outside the text ({len} bytes)")]
    OutOfBounds {
        start: usize,
        end: usize,
        len: usize,
    },
    #[error("replacement range {start}..{end} splits a UTF-8 character")]
    NotCharBoundary { start: usize, end: usize },
}

impl TextEdit {
    /// Sorts `replacements` by range (stable, so same-offset insertions keep their order) and
    /// refuses overlaps.
    pub fn new(mut replacements: Vec<Replacement>) -> Result<Self, ChangeError> {
        for (index, r) in replacements.iter().enumerate() {
            if r.range.start > r.range.end {
                return Err(ChangeError::Inverted {
                    index,
                    start: r.range.start,
                    end: r.range.end,
                });
            }
        }
        replacements.sort_by_key(|r| (r.range.start, r.range.end));
        for pair in replacements.windows(2) {
            let (a, b) = (&pair[0].range, &pair[1].range);
            // Touching is fine; sharing bytes is not. Two empty ranges at one offset are
            // insertions in sequence.
            if b.start < a.end {
                return Err(ChangeError::Overlap {
                    first_start: a.start,
                    first_end: a.end,
                    second_start: b.start,
                    second_end: b.end,
                });
            }
        }
        Ok(Self { replacements })
    }

    pub fn single(replacement: Replacement) -> Self {
        Self {
            replacements: vec![replacement],
        }
    }

    pub fn replacements(&self) -> &[Replacement] {
        &self.replacements
    }

    pub fn is_empty(&self) -> bool {
        self.replacements.is_empty()
    }

    /// Checks that every range lies inside `text` on character boundaries.
    pub fn check(&self, text: &str) -> Result<(), ChangeError> {
        for r in &self.replacements {
            let Range { start, end } = r.range;
            if end > text.len() {
                return Err(ChangeError::OutOfBounds {
                    start,
                    end,
                    len: text.len(),
                });
            }
            if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
                return Err(ChangeError::NotCharBoundary { start, end });
            }
        }
        Ok(())
    }

    /// Applies all replacements to `text`, or none of them.
    pub fn apply(&self, text: &str) -> Result<String, ChangeError> {
        self.check(text)?;
        let grown: usize = self.replacements.iter().map(|r| r.text.len()).sum();
        let mut out = String::with_capacity(text.len() + grown);
        let mut cursor = 0;
        for r in &self.replacements {
            out.push_str(&text[cursor..r.range.start]);
            out.push_str(&r.text);
            cursor = r.range.end;
        }
        out.push_str(&text[cursor..]);
        Ok(out)
    }

    /// Maps an offset of the original text to the edited text. Offsets inside a replaced range
    /// move to its end when `assoc_after`, else to its start.
    pub fn map_offset(&self, offset: usize, assoc_after: bool) -> usize {
        let mut delta: isize = 0;
        for r in &self.replacements {
            if offset < r.range.start || (offset == r.range.start && !assoc_after) {
                break;
            }
            if offset < r.range.end || (offset == r.range.end && r.range.is_empty()) {
                let start = (r.range.start as isize + delta) as usize;
                return if assoc_after {
                    start + r.text.len()
                } else {
                    start
                };
            }
            delta += r.text.len() as isize - r.range.len() as isize;
        }
        (offset as isize + delta) as usize
    }
}

impl fmt::Display for Replacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}..{} -> {:?}",
            self.range.start, self.range.end, self.text
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_sorted_replacements_all_at_once() {
        let edit = TextEdit::new(vec![
            Replacement::new(6..11, "there"),
            Replacement::insert(0, ">> "),
        ])
        .unwrap();
        assert_eq!(edit.apply("hello world").unwrap(), ">> hello there");
    }

    #[test]
    fn refuses_overlaps_and_inverted_ranges() {
        let err = TextEdit::new(vec![
            Replacement::new(0..5, "a"),
            Replacement::new(4..6, "b"),
        ])
        .unwrap_err();
        assert!(matches!(err, ChangeError::Overlap { .. }), "{err}");
        #[allow(clippy::reversed_empty_ranges)]
        let inverted = Replacement::new(5..2, "");
        assert!(matches!(
            TextEdit::new(vec![inverted]),
            Err(ChangeError::Inverted { .. })
        ));
    }

    #[test]
    fn refuses_ranges_outside_or_inside_characters() {
        let edit = TextEdit::single(Replacement::new(1..2, "x"));
        assert!(matches!(
            edit.apply("é"),
            Err(ChangeError::NotCharBoundary { .. })
        ));
        let edit = TextEdit::single(Replacement::new(3..9, "x"));
        assert!(matches!(
            edit.apply("abc"),
            Err(ChangeError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn maps_offsets_through_edits() {
        let edit = TextEdit::new(vec![Replacement::new(2..4, "XYZ")]).unwrap();
        assert_eq!(edit.map_offset(0, false), 0);
        assert_eq!(edit.map_offset(3, false), 2);
        assert_eq!(edit.map_offset(3, true), 5);
        assert_eq!(edit.map_offset(6, false), 7);
    }
}
