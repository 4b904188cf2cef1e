//! When the `judge` role reviews a develop run's diff, and how its answer is read.
//!
//! The judge costs a model call on the whole diff, so it is skipped where it adds little —
//! nothing changed, only docs or tests changed, a small change without a new code file, a
//! change the tests pass on that the judge would review as the model that wrote it — and runs
//! when a changed path looks risky (`[develop] risky`). It reviews a change the tests accept:
//! when they still fail after the fix rounds the run's result already says the change is not
//! done, and the failures say what is wrong, so there is no review and no round for its
//! objections (on the develop bench those rounds never fixed a failing test: 0 of 13, at 3–9
//! calls each). When they pass and no `judge` role of its own is set, the review is the coder
//! reading its own change: on the develop bench it approved every one of the 17 changes the
//! tests passed on, two of them wrong, at a call each (`docs/develop.md`, "No review by the
//! coder of a change the tests pass on"). "The judge is the coder" is told by the models'
//! names (`provider/model`), so a judge role set to the coder's own model is the coder too.
//! Its verdict is `APPROVE` or `OBJECT` with reasons; anything else counts as
//! approval with a note (a judge that rambles must not block a change the checks and tests
//! accepted).
//!
//! Pure: paths and texts in, decisions out.

use serde::Serialize;

/// One changed file, as the judge rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeStat {
    /// Workspace-relative path.
    pub path: String,
    pub created: bool,
    /// Lines added plus lines removed.
    pub lines: usize,
}

/// Whether the judge runs, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", content = "reason", rename_all = "snake_case")]
pub enum Decision {
    Run(String),
    Skip(String),
}

/// What the tests said of the change as the fix rounds left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tests {
    Pass,
    Fail,
    /// No test command, or the run stopped before verify.
    NotRun,
}

/// Decides whether to judge `changes`. `min_lines` is `[develop] judge_min_lines`; `risky`
/// patterns match case-insensitively anywhere in a path; `self_review`: the judge is the model
/// that wrote the change (no `judge` role of its own, or the coder's model).
pub fn decide(
    changes: &[ChangeStat],
    min_lines: usize,
    risky: &[String],
    tests: Tests,
    self_review: bool,
) -> Decision {
    if tests == Tests::Fail {
        return Decision::Skip(
            "the tests fail; a review is for a change the tests accept".to_owned(),
        );
    }
    if let Some((c, pattern)) = changes.iter().find_map(|c| {
        let lower = c.path.to_lowercase();
        risky
            .iter()
            .find(|p| !p.is_empty() && lower.contains(&p.to_lowercase()))
            .map(|p| (c, p))
    }) {
        return Decision::Run(format!(
            "{} matches the risky pattern \"{pattern}\"",
            c.path
        ));
    }
    if changes.is_empty() {
        return Decision::Skip("nothing changed".to_owned());
    }
    if changes.iter().all(|c| is_doc(&c.path) || is_test(&c.path)) {
        return Decision::Skip("only docs and tests changed".to_owned());
    }
    if tests == Tests::Pass && self_review {
        return Decision::Skip(
            "the tests pass, and the review would be the model that wrote the change reading it \
             again (set a `judge` role of its own for a second opinion)"
                .to_owned(),
        );
    }
    let lines: usize = changes.iter().map(|c| c.lines).sum();
    let new_code = changes
        .iter()
        .any(|c| c.created && is_code(&c.path) && !is_test(&c.path));
    if lines < min_lines && !new_code {
        return Decision::Skip(format!(
            "{lines} changed line{} (fewer than {min_lines}) and no new code file",
            if lines == 1 { "" } else { "s" }
        ));
    }
    Decision::Run(if new_code {
        "the change adds a code file".to_owned()
    } else {
        format!("{lines} changed lines")
    })
}

/// Documentation: Markdown and friends, `docs/`, README/CHANGELOG/LICENSE.
pub fn is_doc(path: &str) -> bool {
    let lower = path.to_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    lower.starts_with("docs/")
        || lower.contains("/docs/")
        || [".md", ".markdown", ".rst", ".txt", ".adoc"]
            .iter()
            .any(|e| name.ends_with(e))
        || ["readme", "changelog", "license", "authors", "contributing"]
            .iter()
            .any(|p| name.starts_with(p))
}

/// Tests: under a `tests`/`test`/`__tests__` directory, or named as a test in the usual ways.
pub fn is_test(path: &str) -> bool {
    let lower = path.to_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let in_dir = lower
        .split('/')
        .rev()
        .skip(1)
        .any(|d| matches!(d, "tests" | "test" | "__tests__" | "spec"));
    in_dir
        || name.starts_with("test_")
        || name.contains("_test.")
        || name.contains(".test.")
        || name.contains(".spec.")
        || name.contains("_spec.")
}

/// Source code (as opposed to docs, data and configuration).
pub fn is_code(path: &str) -> bool {
    const CODE: &[&str] = &[
        "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "c", "h", "cc",
        "cpp", "hpp", "cs", "rb", "php", "swift", "scala", "sh", "lua", "ex", "exs", "zig", "sql",
    ];
    path.rsplit_once('.')
        .is_some_and(|(_, ext)| CODE.contains(&ext.to_lowercase().as_str()))
}

/// What the judge said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "detail", rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    /// Objections, one per entry.
    Object(Vec<String>),
    /// Neither; taken as approval, the text is kept for the report.
    Unclear(String),
}

/// Reads the judge's answer: `APPROVE` or `OBJECT` (first word of a line, any case, markup
/// ignored), objections as the lines after `OBJECT`.
pub fn verdict(answer: &str) -> Verdict {
    let lines: Vec<&str> = answer.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line
            .trim()
            .trim_start_matches(['*', '#', '>', ' '])
            .to_ascii_uppercase();
        if t.starts_with("APPROVE") {
            return Verdict::Approve;
        }
        if t.starts_with("OBJECT") {
            let rest = line
                .trim()
                .trim_start_matches(['*', '#', '>', ' '])
                .get(6..)
                .unwrap_or("");
            let rest = ["IONS", "ions", "ION", "ion", "S", "s"]
                .iter()
                .find_map(|w| rest.strip_prefix(w))
                .unwrap_or(rest);
            let first = rest.trim_start_matches([':', '*', ' ']);
            let mut out: Vec<String> = Vec::new();
            if !first.trim().is_empty() {
                out.push(first.trim().to_owned());
            }
            for l in &lines[i + 1..] {
                let l = l
                    .trim()
                    .trim_start_matches(|c: char| c.is_ascii_digit() || "-*.) ".contains(c))
                    .trim();
                if !l.is_empty() {
                    out.push(l.to_owned());
                }
            }
            if out.is_empty() {
                out.push("the judge objected without saying why".to_owned());
            }
            return Verdict::Object(out);
        }
    }
    Verdict::Unclear(crate::edit::text::clip(answer.trim(), 300))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(path: &str, created: bool, lines: usize) -> ChangeStat {
        ChangeStat {
            path: path.to_owned(),
            created,
            lines,
        }
    }

    fn risky() -> Vec<String> {
        crate::config::DevelopSection::default().risky
    }

    #[test]
    fn skip_rules() {
        let d = |c: &[ChangeStat]| decide(c, 20, &risky(), Tests::NotRun, true);
        assert_eq!(d(&[]), Decision::Skip("nothing changed".into()));
        assert_eq!(
            d(&[
                stat("README.md", false, 200),
                stat("tests/cli.rs", true, 90)
            ]),
            Decision::Skip("only docs and tests changed".into())
        );
        assert!(
            matches!(d(&[stat("src/lib.rs", false, 5)]), Decision::Skip(r) if r.contains("5 changed lines"))
        );
        assert!(
            matches!(d(&[stat("src/new.rs", true, 5)]), Decision::Run(r) if r.contains("adds a code file"))
        );
        assert!(matches!(
            d(&[stat("src/lib.rs", false, 25)]),
            Decision::Run(_)
        ));
        // Risky paths are judged even when tiny, and even when they are docs.
        assert!(
            matches!(d(&[stat("src/auth/session.rs", false, 1)]), Decision::Run(r) if r.contains("\"auth\""))
        );
        assert!(matches!(
            d(&[stat("docs/Password-reset.md", false, 1)]),
            Decision::Run(_)
        ));
        // Failing tests: no review, whatever the change (the bench's 13 objections rounds after
        // failing tests fixed none).
        for changes in [
            vec![stat("src/lib.rs", false, 200)],
            vec![stat("src/auth/session.rs", false, 1)],
            vec![stat("src/new.rs", true, 40)],
        ] {
            assert!(
                matches!(decide(&changes, 20, &risky(), Tests::Fail, false), Decision::Skip(r) if r.contains("the tests fail")),
                "{changes:?}"
            );
        }
    }

    #[test]
    fn a_change_the_tests_pass_on_is_not_reviewed_by_the_model_that_wrote_it() {
        let big = [stat("src/lib.rs", false, 200)];
        let new = [stat("src/new.rs", true, 40)];
        for changes in [&big[..], &new[..]] {
            assert!(
                matches!(decide(changes, 20, &risky(), Tests::Pass, true), Decision::Skip(r) if r.contains("the tests pass")),
                "{changes:?}"
            );
            // A judge of its own is a second opinion; no tests, nothing to stand on.
            assert!(matches!(
                decide(changes, 20, &risky(), Tests::Pass, false),
                Decision::Run(_)
            ));
            assert!(matches!(
                decide(changes, 20, &risky(), Tests::NotRun, true),
                Decision::Run(_)
            ));
        }
        // A risky path is reviewed all the same.
        assert!(matches!(
            decide(
                &[stat("src/auth/session.rs", false, 1)],
                20,
                &risky(),
                Tests::Pass,
                true
            ),
            Decision::Run(_)
        ));
    }

    #[test]
    fn classifies_paths() {
        assert!(is_test("tests/cli.rs") && is_test("src/foo_test.go") && is_test("web/a.spec.ts"));
        assert!(is_test("pkg/test_util.py") && !is_test("src/testing.rs"));
        assert!(is_doc("docs/guide.html") && is_doc("README") && is_doc("notes.md"));
        assert!(is_code("src/a.rs") && !is_code("Cargo.toml"));
    }

    #[test]
    fn reads_verdicts() {
        assert_eq!(verdict("APPROVE\nLooks good."), Verdict::Approve);
        assert_eq!(verdict("**Approve** — fine"), Verdict::Approve);
        assert_eq!(
            verdict("OBJECT\n1. the flag is never parsed\n2. no test"),
            Verdict::Object(vec!["the flag is never parsed".into(), "no test".into()])
        );
        assert_eq!(
            verdict("Objection: the test is missing"),
            Verdict::Object(vec!["the test is missing".into()])
        );
        assert_eq!(
            verdict("OBJECT: no test"),
            Verdict::Object(vec!["no test".into()])
        );
        assert!(matches!(verdict("It is fine I guess"), Verdict::Unclear(_)));
    }
}
