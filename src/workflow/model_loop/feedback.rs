//! What the model reads after an answer that did not finish the job, the same for every run
//! kind: an answer that was not applied, the stuck rule (an answer without a change gets one
//! coaching message in the same attempt, then the attempt ends), and a check error that comes
//! back, said to be the second or third time in a firmer tone (after the third the attempt
//! ends). The words of each message follow the protocol the attempt asks in.

use std::collections::HashMap;

use super::Protocol;

/// An answer that was not applied, and how to answer instead.
pub(crate) fn not_applied(reason: &str, again: &str) -> String {
    format!("Your answer was not applied: {reason}\n\n{again}")
}

/// The stuck rule of one attempt: coach once, and only while nothing was changed yet.
#[derive(Debug, Default)]
pub(crate) struct Stuck {
    coached: bool,
}

impl Stuck {
    /// Whether to coach now (at most once per attempt, never after an edit went through); a
    /// stuck answer that is not coached ends the attempt.
    pub fn coach_now(&mut self, edited: bool) -> bool {
        if edited || self.coached {
            return false;
        }
        self.coached = true;
        true
    }
}

/// How often each check failure (by fingerprint) came back in a step.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    seen: HashMap<u64, usize>,
}

/// What to tell the model about a failing check.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CheckFeedback {
    /// The message for the next answer; `repeat` is 2 or 3 when the same error came back.
    Again { message: String, repeat: usize },
    /// The same error a fourth time: the attempt ends with this reason.
    GiveUp(String),
}

impl Repeats {
    /// The feedback on a failing check with `fingerprint`, described as `text`, in the words of
    /// `protocol`; `fix` says how to answer with the correction.
    pub fn check_failed(
        &mut self,
        fingerprint: u64,
        text: &str,
        protocol: Protocol,
        fix: &str,
    ) -> CheckFeedback {
        let seen = self.seen.entry(fingerprint).or_insert(0);
        *seen += 1;
        let count = *seen;
        if count > 3 {
            return CheckFeedback::GiveUp(format!(
                "the same check error came back a fourth time:\n{text}"
            ));
        }
        let rewrite = protocol == Protocol::Rewrite;
        let message = match count {
            1 => format!("Your edit was applied, but the check fails now:\n{text}\n{fix}"),
            2 => format!(
                "This is the SECOND time the check reports the same error: your last change did \
                 not fix it. Read the error message again, line by line, and read the file where \
                 it points before you change anything. Do something different this time.\n\
                 {text}{}",
                if rewrite { fix } else { "" }
            ),
            _ => format!(
                "This is the THIRD time the check reports exactly the same error. Stop repeating \
                 the same fix. {}, then make the smallest change that removes this error. If \
                 your earlier edit caused it, undo that edit.\n{text}{}",
                if rewrite {
                    "Read the lines the error names in the file above"
                } else {
                    "Read the lines the error names with read_file"
                },
                if rewrite { fix } else { "" }
            ),
        };
        CheckFeedback::Again {
            message,
            repeat: count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_error_gets_firmer_then_ends_the_attempt() {
        let mut r = Repeats::default();
        let tone = |f: CheckFeedback| match f {
            CheckFeedback::Again { message, repeat } => (repeat, message),
            CheckFeedback::GiveUp(reason) => (4, reason),
        };
        assert!(
            tone(r.check_failed(7, "E1", Protocol::Tools, "FIX"))
                .1
                .contains("fails now")
        );
        assert_eq!(tone(r.check_failed(8, "E2", Protocol::Tools, "FIX")).0, 1);
        assert!(
            tone(r.check_failed(7, "E1", Protocol::Tools, "FIX"))
                .1
                .contains("SECOND")
        );
        let (n, third) = tone(r.check_failed(7, "E1", Protocol::Rewrite, "FIX"));
        assert_eq!(n, 3);
        assert!(third.contains("THIRD") && third.ends_with("FIX"));
        assert!(
            tone(r.check_failed(7, "E1", Protocol::Tools, "FIX"))
                .1
                .contains("fourth time")
        );
    }

    #[test]
    fn coaching_comes_once_and_never_after_an_edit() {
        let mut s = Stuck::default();
        assert!(!s.coach_now(true));
        assert!(s.coach_now(false));
        assert!(!s.coach_now(false));
    }
}

/// The 1-based lines of `rel` that check output names: `rel:12:5`, `rel:12`, `rel(12,5)`
/// (TypeScript), `File "rel", line 12` (Python tracebacks).
pub(crate) fn lines_named(output: &str, rel: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let number = |s: &str| -> Option<usize> {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    for (i, _) in output.match_indices(rel) {
        // The whole path, not the tail of a longer one.
        let before = output[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '/' || c == '_' || c == '.') {
            continue;
        }
        let rest = &output[i + rel.len()..];
        let n = if let Some(r) = rest.strip_prefix(':').or_else(|| rest.strip_prefix('(')) {
            number(r)
        } else if let Some(r) = rest.strip_prefix("\", line ") {
            number(r)
        } else {
            None
        };
        if let Some(n) = n.filter(|n| *n > 0 && !lines.contains(n)) {
            lines.push(n);
        }
    }
    lines
}

/// For each of `lines` (1-based, in `after`) that a change from `before` rewrote: the old
/// lines there and the new ones, each joined into one line (at most a few).
pub(crate) fn touched_lines(before: &str, after: &str, lines: &[usize]) -> Vec<(String, String)> {
    use similar::{DiffOp, TextDiff};
    let diff = TextDiff::from_lines(before, after);
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let join = |ls: &[&str]| ls.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
    let mut out: Vec<(String, String)> = Vec::new();
    for op in diff.ops() {
        let DiffOp::Replace {
            old_index,
            old_len,
            new_index,
            new_len,
        } = *op
        else {
            continue;
        };
        let hit = lines
            .iter()
            .any(|l| *l > new_index && *l <= new_index + new_len);
        if !hit || old_len > 3 || new_len > 3 {
            continue;
        }
        let was = join(old.get(old_index..old_index + old_len).unwrap_or(&[]));
        let now = join(new.get(new_index..new_index + new_len).unwrap_or(&[]));
        if !out.iter().any(|(w, n)| *w == was && *n == now) {
            out.push((was, now));
        }
        if out.len() >= 4 {
            break;
        }
    }
    out
}

/// `after` with the small rewrites of existing lines (at most three lines each way) that the
/// check points at (`lines`, 1-based in `after`) put back as they were in `before`, and each
/// line put back (as it was, as the change had it). `None` when no such rewrite is named.
///
/// Small models tidy lines a step did not ask to touch (a type annotation dropped, a crate path
/// shortened); when the check then fails on exactly those lines, the lines as they were are the
/// likelier meaning. The caller keeps the result only when the check passes with it.
pub(crate) fn restore_touched(
    before: &str,
    after: &str,
    lines: &[usize],
) -> Option<(String, Vec<(String, String)>)> {
    use similar::{DiffOp, TextDiff};
    let diff = TextDiff::from_lines(before, after);
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let join = |ls: &[&str]| ls.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
    let mut text = String::with_capacity(after.len());
    let mut put_back = Vec::new();
    for op in diff.ops() {
        let (new_index, new_len) = (op.new_range().start, op.new_range().len());
        let hit = lines
            .iter()
            .any(|l| *l > new_index && *l <= new_index + new_len);
        if let DiffOp::Replace {
            old_index, old_len, ..
        } = *op
            && hit
            && old_len <= 3
            && new_len <= 3
        {
            let was = old.get(old_index..old_index + old_len).unwrap_or(&[]);
            let now = new.get(new_index..new_index + new_len).unwrap_or(&[]);
            text.extend(was.iter().copied());
            put_back.push((join(was), join(now)));
            continue;
        }
        text.extend(
            new.get(new_index..new_index + new_len)
                .unwrap_or(&[])
                .iter()
                .copied(),
        );
    }
    (!put_back.is_empty()).then_some((text, put_back))
}

#[cfg(test)]
mod located_tests {
    use super::*;

    #[test]
    fn error_lines_show_what_the_change_dropped() {
        let output = "src/main.rs:8:27: error[E0425]: cannot find function `count_words`\n\
                      tests/src/main.rs:3: other\n  File \"x.py\", line 2, in f\nsrc/a.ts(4,1): e";
        assert_eq!(lines_named(output, "src/main.rs"), [8]);
        assert_eq!(lines_named(output, "x.py"), [2]);
        assert_eq!(lines_named(output, "src/a.ts"), [4]);
        let before = "a\nb\n    println!(\"{}\", wordstat::word_count(&t));\nc\n";
        let after = "a\nb\n    println!(\"{}\", count_words(&t));\nc\n";
        assert_eq!(
            touched_lines(before, after, &[3]),
            [(
                "println!(\"{}\", wordstat::word_count(&t));".to_owned(),
                "println!(\"{}\", count_words(&t));".to_owned()
            )]
        );
        assert!(touched_lines(before, after, &[1]).is_empty());
    }

    #[test]
    fn lines_the_check_points_at_are_put_back() {
        // Qwen2.5-Coder-1.5B on the bench task rust-fix-test: the fix (`>`) came with the type
        // annotation dropped two lines above it, and the check failed on that line.
        let before = "fn f() {\n    let mut best: Option<&str> = None;\n    for w in x {\n        \
                      if best.map_or(true, |b| w.len() < b.len()) {\n    }\n}";
        let after = "fn f() {\n    let mut best = None;\n    for w in x {\n        \
                     if best.is_none() || w.len() > best.unwrap().len() {\n    }\n}";
        let (text, put_back) = restore_touched(before, after, &[2]).unwrap();
        assert_eq!(
            text,
            "fn f() {\n    let mut best: Option<&str> = None;\n    for w in x {\n        \
             if best.is_none() || w.len() > best.unwrap().len() {\n    }\n}"
        );
        assert_eq!(
            put_back,
            [(
                "let mut best: Option<&str> = None;".to_owned(),
                "let mut best = None;".to_owned()
            )]
        );
        // A line the change added, an unchanged line, or a large rewrite is not put back.
        assert!(restore_touched("a\nb\n", "a\nnew\nb\n", &[2]).is_none());
        assert!(restore_touched(before, after, &[3]).is_none());
        assert!(restore_touched("a\nb\nc\nd\ne\n", "1\n2\n3\n4\ne\n", &[1]).is_none());
    }
}
