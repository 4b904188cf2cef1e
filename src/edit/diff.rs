//! Unified diffs of an edit, for previews (hover, proposals, the CLI). Rendering only: the diff
//! is never parsed back into an edit here (model-written diffs go through `formats`).

use similar::{Algorithm, TextDiff};

/// A unified diff from `before` to `after` with three lines of context, headed `a/PATH` and
/// `b/PATH` (an absolute path is shown as it is). Empty when the texts are equal.
pub fn unified_diff(before: &str, after: &str, path: &str) -> String {
    if before == after {
        return String::new();
    }
    let (a, b) = if path.starts_with('/') {
        (path.to_string(), path.to_string())
    } else {
        (format!("a/{path}"), format!("b/{path}"))
    };
    TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&a, &b)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_hunk_with_headers() {
        let d = unified_diff("a\nb\nc\n", "a\nB\nc\n", "f.txt");
        assert!(
            d.starts_with("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n"),
            "{d}"
        );
        assert!(d.contains("-b\n+B\n"), "{d}");
        assert_eq!(unified_diff("x", "x", "f"), "");
    }
}
