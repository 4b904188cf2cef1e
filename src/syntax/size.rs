//! Size tags for exploration listings: a model deciding what to read should know that a file is
//! too big to read whole. Pure arithmetic, no I/O.

/// Line counts above which a file is tagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeThresholds {
    /// More lines than this: `[LARGE]`.
    pub large: usize,
    /// More lines than this: `[MASSIVE]`.
    pub massive: usize,
}

impl Default for SizeThresholds {
    fn default() -> Self {
        SizeThresholds {
            large: 200,
            massive: 1000,
        }
    }
}

/// The tag for a file of `lines` lines, `None` when it is small.
pub fn size_tag(lines: usize, thresholds: &SizeThresholds) -> Option<&'static str> {
    if lines > thresholds.massive {
        Some("[MASSIVE]")
    } else if lines > thresholds.large {
        Some("[LARGE]")
    } else {
        None
    }
}

/// Lines in `text` as an editor counts them (a final newline does not start a new line).
pub fn count_lines(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    if text.is_empty() || text.ends_with('\n') {
        newlines.max(usize::from(!text.is_empty()))
    } else {
        newlines + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_by_thresholds() {
        let t = SizeThresholds::default();
        assert_eq!(size_tag(200, &t), None);
        assert_eq!(size_tag(201, &t), Some("[LARGE]"));
        assert_eq!(size_tag(1000, &t), Some("[LARGE]"));
        assert_eq!(size_tag(1001, &t), Some("[MASSIVE]"));
        let custom = SizeThresholds {
            large: 10,
            massive: 20,
        };
        assert_eq!(size_tag(11, &custom), Some("[LARGE]"));
    }

    #[test]
    fn counts_lines_like_an_editor() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("a\n\n"), 2);
    }
}
