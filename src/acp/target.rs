//! What an edit-mode prompt points at: a file and a range of lines, named by a resource link
//! (`file:///abs/path#L10-L20`, `#L10:20`, `#L10`) or by `@path:line` / `@path:start-end` in the
//! text, and the instruction that is left. Pure: text in, a target or nothing out.

use std::ops::Range;
use std::path::{Path, PathBuf};

/// A file and 1-based inclusive lines (`None`: the whole file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineTarget {
    pub path: PathBuf,
    pub lines: Option<(usize, usize)>,
}

/// Reads a `file://` URI with an optional line fragment.
pub fn from_uri(uri: &str) -> Option<LineTarget> {
    let rest = uri.strip_prefix("file://")?;
    let (path, fragment) = match rest.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (rest, None),
    };
    let path = PathBuf::from(percent_decode(path));
    if !path.is_absolute() {
        return None;
    }
    Some(LineTarget {
        path,
        lines: fragment.and_then(line_fragment),
    })
}

/// Finds the first `@path:line` or `@path:start-end` mention in `text` (a relative path is
/// relative to `cwd`); returns it and the text without it.
pub fn from_text(text: &str, cwd: &Path) -> Option<(LineTarget, String)> {
    for (at, _) in text.match_indices('@') {
        if at > 0 && !text[..at].ends_with(char::is_whitespace) {
            continue;
        }
        let word_end = text[at..]
            .find(char::is_whitespace)
            .map_or(text.len(), |n| at + n);
        let word = text[at + 1..word_end].trim_end_matches([',', '.', ';', ')']);
        let Some((path, lines)) = word.rsplit_once(':') else {
            continue;
        };
        let Some(lines) = line_span(lines) else {
            continue;
        };
        if path.is_empty() {
            continue;
        }
        let path = Path::new(path);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            cwd.join(path)
        };
        let rest = format!("{}{}", &text[..at], &text[word_end..]);
        return Some((
            LineTarget {
                path,
                lines: Some(lines),
            },
            rest.split_whitespace().collect::<Vec<_>>().join(" "),
        ));
    }
    None
}

/// The byte range of 1-based inclusive `lines` in `text` (whole lines with their line ends;
/// lines past the end clamp to it). `None` lines: the whole text.
pub fn byte_range(text: &str, lines: Option<(usize, usize)>) -> Range<usize> {
    let Some((first, last)) = lines else {
        return 0..text.len();
    };
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let at = |line: usize| starts.get(line).copied().unwrap_or(text.len());
    let start = at(first.max(1) - 1).min(text.len());
    let end = at(last.max(first).max(1)).max(start);
    start..end
}

/// `L10-L20`, `L10:20`, `L10-20`, `L10` → (10, 20) / (10, 10).
fn line_fragment(fragment: &str) -> Option<(usize, usize)> {
    let fragment = fragment.strip_prefix('L')?;
    line_span(&fragment.replace("-L", "-").replace(':', "-"))
}

/// `10-20` or `10` → (10, 20) / (10, 10); lines are 1-based.
fn line_span(text: &str) -> Option<(usize, usize)> {
    let (a, b) = text.split_once('-').unwrap_or((text, text));
    let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
    (a >= 1 && b >= a).then_some((a, b))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_a_file_and_maybe_lines() {
        let t = |uri| from_uri(uri).map(|t| (t.path.display().to_string(), t.lines));
        assert_eq!(t("file:///w/a.rs"), Some(("/w/a.rs".into(), None)));
        assert_eq!(
            t("file:///w/my%20dir/a.rs#L3-L5"),
            Some(("/w/my dir/a.rs".into(), Some((3, 5))))
        );
        assert_eq!(
            t("file:///w/a.rs#L3:5"),
            Some(("/w/a.rs".into(), Some((3, 5))))
        );
        assert_eq!(
            t("file:///w/a.rs#L7"),
            Some(("/w/a.rs".into(), Some((7, 7))))
        );
        assert_eq!(t("file:///w/a.rs#L5-L3"), Some(("/w/a.rs".into(), None)));
        assert_eq!(t("https://example.com/a.rs"), None);
        assert_eq!(t("file://relative/a.rs"), None);
    }

    #[test]
    fn an_at_mention_names_the_target_and_the_rest_is_the_instruction() {
        let cwd = Path::new("/w");
        let (target, rest) = from_text("make @src/lib.rs:3-5 iterative", cwd).unwrap();
        assert_eq!(target.path, Path::new("/w/src/lib.rs"));
        assert_eq!(target.lines, Some((3, 5)));
        assert_eq!(rest, "make iterative");
        let (target, rest) = from_text("@/abs/a.py:2, add a docstring", cwd).unwrap();
        assert_eq!(target.path, Path::new("/abs/a.py"));
        assert_eq!(target.lines, Some((2, 2)));
        assert_eq!(rest, "add a docstring");
        assert_eq!(from_text("mail me@example.com:3", cwd), None);
        assert_eq!(from_text("see @notes without lines", cwd), None);
    }

    #[test]
    fn lines_become_whole_line_byte_ranges() {
        let text = "a\nbb\nccc\n";
        assert_eq!(byte_range(text, Some((2, 2))), 2..5);
        assert_eq!(byte_range(text, Some((2, 3))), 2..9);
        assert_eq!(byte_range(text, Some((3, 99))), 5..9);
        assert_eq!(byte_range(text, Some((50, 60))), 9..9);
        assert_eq!(byte_range(text, None), 0..9);
        assert_eq!(byte_range("x", Some((1, 1))), 0..1);
    }
}
