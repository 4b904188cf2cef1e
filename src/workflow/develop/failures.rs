//! Failing tests as the next attempt reads them (`docs/develop.md`, "The tests as the guide"):
//! for each failing test its name, the assertion and what was expected and got, and the test's
//! own source lines with the failing line marked — the first failures first, trimmed to fit —
//! instead of the raw tail of a test run's output, which on a small window is mostly noise
//! (progress dots, tracebacks through the test framework, the summary line).
//!
//! Reads the output of `unittest`, `pytest`, `cargo test` and `node --test` (and runners that
//! print like them). Output it does not recognise gives `None`, and the caller shows it as it is.
//!
//! A long run's output reaches here cut in the middle (`tools::process::truncate_output`): a
//! failure's lines end at the cut's note, never running on into another test's lines after it,
//! and pytest's short summary at the end names every failing test, those whose detail was cut
//! too. Without that, a fix round of camicia (2026-11-30) was told of 1 failing test, with no
//! assertion, where all 28 failed with the same `IndexError`.
//!
//! Pure apart from `read`, which the caller gives to look up a test file's text.

use crate::tools::process::is_cut_note;

/// One failing test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestFailure {
    pub name: String,
    /// The assertion or error lines (expected vs got as the runner printed them).
    pub message: Vec<String>,
    /// The test file and 1-based line of the failure, when the output names them.
    pub at: Option<(String, usize)>,
    /// Source lines the runner itself printed (pytest does).
    pub source: Vec<String>,
    /// The runner's own id of the test, which says the file it is in: pytest's
    /// `tests/test_a.py::Class::test`, unittest's `tests.test_a.Class.test`.
    pub id: Option<String>,
}

/// Failures shown in detail; the rest are named only.
const DETAILED: usize = 3;
/// Source lines of a test shown around its failing line.
const SOURCE_LINES: usize = 12;

/// The failing tests of a test run's `output`, or `None` when no runner's format is recognised.
pub fn parse(output: &str) -> Option<Vec<TestFailure>> {
    let found = unittest(output)
        .or_else(|| pytest(output))
        .or_else(|| cargo(output))
        .or_else(|| node(output))?;
    (!found.is_empty()).then_some(found)
}

/// The failures written for the model; `read` gives the text of a file the output names
/// (workspace-relative or absolute, as printed). At most about `max_chars` characters.
pub fn describe(
    failures: &[TestFailure],
    read: &dyn Fn(&str) -> Option<String>,
    max_chars: usize,
) -> String {
    let mut out = format!(
        "{} failing test{}:\n",
        failures.len(),
        if failures.len() == 1 { "" } else { "s" }
    );
    for (i, f) in failures.iter().enumerate() {
        if i >= DETAILED || out.len() > max_chars {
            let rest: Vec<&str> = failures[i..].iter().map(|f| f.name.as_str()).collect();
            out.push_str(&format!("Also failing: {}\n", rest.join(", ")));
            break;
        }
        out.push_str(&format!("\n{}. {}\n", i + 1, f.name));
        for m in f.message.iter().take(8) {
            out.push_str(&format!(
                "   {}\n",
                crate::edit::text::clip(m.trim_end(), 300)
            ));
        }
        let source = match &f.at {
            Some((path, line)) => read(path)
                .map(|text| source_around(&text, *line))
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let source = if source.is_empty() {
            f.source.clone()
        } else {
            source
        };
        if !source.is_empty() {
            let at =
                f.at.as_ref()
                    .map(|(p, l)| format!(" ({p}, line {l})"))
                    .unwrap_or_default();
            out.push_str(&format!("   The test{at}:\n"));
            for l in source {
                out.push_str(&format!("   {l}\n"));
            }
        }
    }
    out
}

/// The test function around 1-based `line`: from the function's first line (a `def`, `fn`,
/// `test(`/`it(` line above it) to the failing line and one more, at most [`SOURCE_LINES`],
/// the failing line marked with `>`.
fn source_around(text: &str, line: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    if line == 0 || line > lines.len() {
        return Vec::new();
    }
    let at = line - 1;
    let starts = |l: &str| {
        let t = l.trim_start();
        t.starts_with("def ")
            || t.starts_with("async def ")
            || t.starts_with("fn ")
            || t.starts_with("async fn ")
            || t.starts_with("test(")
            || t.starts_with("it(")
            || t.starts_with("func ")
    };
    let first = (0..=at)
        .rev()
        .take(SOURCE_LINES)
        .find(|&i| starts(lines[i]))
        .unwrap_or(at.saturating_sub(4));
    let last = (at + 1).min(lines.len() - 1);
    (first..=last)
        .map(|i| format!("{} {}", if i == at { ">" } else { " " }, lines[i]))
        .collect()
}

fn unittest(output: &str) -> Option<Vec<TestFailure>> {
    let lines: Vec<&str> = output.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let name = l
            .strip_prefix("FAIL: ")
            .or_else(|| l.strip_prefix("ERROR: "));
        let Some(name) = name.filter(|_| i > 0 && lines[i - 1].starts_with("=====")) else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        let mut at = None;
        let mut tail: Vec<String> = Vec::new();
        // The deepest frame outside the tests: where an error (not an assertion) was raised.
        let mut raised: Option<String> = None;
        if lines.get(j).is_some_and(|l| l.starts_with("-----")) {
            j += 1;
        }
        // The traceback: the last frame in a test file, then the exception lines.
        while j < lines.len()
            && !lines[j].starts_with("=====")
            && !lines[j].starts_with("-----")
            && !is_cut_note(lines[j])
        {
            let t = lines[j].trim_start();
            if let Some(frame) = t.strip_prefix("File \"")
                && let Some((path, rest)) = frame.split_once("\", line ")
            {
                let n: usize = rest
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(0);
                if is_test_path(path) {
                    at = Some((path.to_owned(), n));
                    raised = None;
                } else if !path.contains("/unittest/") && !path.contains("site-packages") {
                    let function = rest.split_once(", in ").map_or("", |(_, f)| f.trim());
                    let source = lines.get(j + 1).map_or("", |l| l.trim());
                    raised = Some(format!(
                        "raised in {path}, line {n}, in {function}: {source}"
                    ));
                }
                tail.clear();
            } else if !t.is_empty()
                && !t.starts_with("Traceback")
                && !t.starts_with('~')
                && !t.starts_with('^')
            {
                tail.push(lines[j].to_owned());
            }
            j += 1;
        }
        // The frame's source line is printed right after it; the exception lines follow.
        let message: Vec<String> = tail
            .iter()
            .skip_while(|l| l.starts_with("    "))
            .cloned()
            .collect();
        let mut message = if message.is_empty() { tail } else { message };
        message.extend(raised);
        // `test_x (tests.test_a.Class.test_x)`, or `(tests.test_a.Class)` before Python 3.11.
        let id = name
            .trim()
            .rsplit_once(" (")
            .and_then(|(_, r)| r.strip_suffix(')'))
            .map(str::to_owned);
        out.push(TestFailure {
            name: name.trim().to_owned(),
            message,
            at,
            source: Vec::new(),
            id,
        });
        i = j;
    }
    (!out.is_empty()).then_some(out)
}

fn pytest(output: &str) -> Option<Vec<TestFailure>> {
    let lines: Vec<&str> = output.lines().collect();
    let header = |l: &str| {
        let t = l.trim();
        t.starts_with("___") && t.ends_with("___") && !t.trim_matches('_').trim().is_empty()
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !header(lines[i]) {
            i += 1;
            continue;
        }
        let name = lines[i].trim().trim_matches('_').trim().to_owned();
        let mut j = i + 1;
        let mut source: Vec<String> = Vec::new();
        let mut message = Vec::new();
        let mut at = None;
        while j < lines.len()
            && !header(lines[j])
            && !lines[j].starts_with("=====")
            && !is_cut_note(lines[j])
        {
            let l = lines[j];
            if l.starts_with("E ") {
                message.push(l[1..].trim().to_owned());
            } else if let Some((path, rest)) = l.split_once(':')
                && is_test_path(path)
                && rest
                    .split(':')
                    .next()
                    .is_some_and(|n| n.parse::<usize>().is_ok())
            {
                let n = rest
                    .split(':')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                at = Some((path.to_owned(), n));
            } else if message.is_empty() && !l.trim().is_empty() {
                source.push(l.to_owned());
            }
            j += 1;
        }
        if source.len() > SOURCE_LINES {
            source.drain(..source.len() - SOURCE_LINES);
        }
        out.push(TestFailure {
            name,
            message,
            at,
            source,
            id: None,
        });
        i = j;
    }
    let summary = lines.iter().filter_map(|l| summary_line(l));
    if out.is_empty() {
        // `-q` with `--tb=line` or `-rf` only: `FAILED path::name - message`.
        for (id, message) in summary {
            out.push(TestFailure {
                name: id.to_owned(),
                message: vec![message.to_owned()],
                at: None,
                source: Vec::new(),
                id: Some(id.to_owned()),
            });
        }
        return (!out.is_empty()).then_some(out);
    }
    // The short summary (`FAILED path::Class::test - message`) names the tests whose detail a
    // cut took, gives a message to those cut before their `E` lines, and says which file each
    // test is in. A header is matched once: by its whole name, else as the end of the name.
    let blocks = out.len();
    let mut matched = vec![false; blocks];
    for (id, message) in summary {
        // `camicia_test.py::CamiciaTest::test_x` is `CamiciaTest.test_x` in a header.
        let name = id
            .split_once("::")
            .map_or(id, |(_, n)| n)
            .replace("::", ".");
        let found = (0..blocks)
            .find(|&k| !matched[k] && out[k].name == name)
            .or_else(|| {
                (0..blocks).find(|&k| {
                    !matched[k]
                        && name
                            .strip_suffix(out[k].name.as_str())
                            .is_some_and(|rest| rest.ends_with('.'))
                })
            });
        match found {
            Some(k) => {
                matched[k] = true;
                let f = &mut out[k];
                f.id = Some(id.to_owned());
                if f.message.is_empty() && !message.is_empty() {
                    f.message.push(message.to_owned());
                }
            }
            None => out.push(TestFailure {
                name,
                message: (!message.is_empty())
                    .then(|| message.to_owned())
                    .into_iter()
                    .collect(),
                at: None,
                source: Vec::new(),
                id: Some(id.to_owned()),
            }),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A line of pytest's short summary: the test's id and the message (`FAILED id - message`; an
/// id with parameters may hold ` - ` itself, inside its brackets).
fn summary_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("FAILED ")?.trim();
    let dash = rest.find(" - ");
    // Only a bracket before the first ` - ` opens parameters: a message may hold brackets too
    // (`- assert [1, 2] - [3] == [1]`).
    let cut = match rest.find('[').filter(|&open| dash.is_none_or(|d| open < d)) {
        Some(open) => rest[open..]
            .find("] - ")
            .map(|k| (open + k + 1, open + k + 4)),
        None => dash.map(|k| (k, k + 3)),
    };
    Some(match cut {
        Some((end, start)) => (rest[..end].trim(), rest[start..].trim()),
        None => (rest, ""),
    })
}

/// How many tests the run's own summary says failed (pytest's `3 failed, 1 error`, unittest's
/// `FAILED (failures=3, errors=1)`), when it says.
pub fn counted(output: &str) -> Option<usize> {
    let line = output.lines().rev().find(|l| {
        let l = l.trim();
        l.starts_with("FAILED (") || (l.contains(" failed") && l.contains(" in "))
    })?;
    let words: Vec<&str> = line
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '=')
        .filter(|w| !w.is_empty())
        .collect();
    let mut n = 0;
    for (k, w) in words.iter().enumerate() {
        if let Some((key, value)) = w.split_once('=') {
            if matches!(key, "failures" | "errors") {
                n += value.parse::<usize>().ok()?;
            }
        } else if matches!(*w, "failed" | "error" | "errors")
            && k > 0
            && let Ok(v) = words[k - 1].parse::<usize>()
        {
            n += v;
        }
    }
    (n > 0).then_some(n)
}

/// How many tests a run passed, as the runner's own summary says (pytest's last line `3 failed,
/// 1 passed in 0.5s`, unittest's `Ran 4 tests in …` with `FAILED (failures=2)`, cargo's `test
/// result: … 3 passed; 2 failed`, summed over its test binaries, Jest's `Tests: 2 failed, 3
/// passed`, Vitest's `Tests  2 failed | 3 passed`, node's `# pass 3` or `ℹ pass 3`, Mocha's `3
/// passing`); `None` when no summary is read, or when cargo's output was cut (a binary's line
/// may be in the part left out). A run that stopped before its tests (pytest's `1 error` in
/// collection) passed 0. What a fix round's progress is measured by (`step.rs`): a failing
/// count falls when a collection error hides every test.
pub fn passed(output: &str) -> Option<usize> {
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    let words_of = |line: &str| -> Vec<String> {
        line.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let number_before = |line: &str, word: &str| -> Option<usize> {
        let w = words_of(line);
        w.windows(2)
            .find(|w| w[1] == word)
            .and_then(|w| w[0].parse().ok())
    };
    let starts_with_number =
        |rest: &str| rest.trim_start().starts_with(|c: char| c.is_ascii_digit());
    // cargo: one `test result:` line per test binary (doc-tests included).
    let cargo: Vec<usize> = lines
        .iter()
        .filter(|l| l.starts_with("test result: "))
        .filter_map(|l| number_before(l, "passed"))
        .collect();
    if !cargo.is_empty() {
        return (!lines.iter().any(|l| is_cut_note(l))).then(|| cargo.iter().sum());
    }
    // unittest: `Ran N tests in 0.01s`, then `OK` or `FAILED (failures=a, errors=b, skipped=c)`.
    if let Some((k, ran)) = lines.iter().enumerate().rev().find_map(|(k, l)| {
        let rest = l.strip_prefix("Ran ")?;
        let (n, rest) = rest.split_once(' ')?;
        (rest.starts_with("test") && rest.contains(" in "))
            .then(|| n.parse::<usize>().ok())
            .flatten()
            .map(|n| (k, n))
    }) {
        let not_passed = lines[k..]
            .iter()
            .find(|l| l.starts_with("FAILED (") || l.starts_with("OK ("))
            .map_or(0, |l| {
                l.split(['(', ')', ','])
                    .filter_map(|kv| kv.trim().split_once('='))
                    .filter(|(k, _)| {
                        matches!(*k, "failures" | "errors" | "skipped" | "expected failures")
                    })
                    .filter_map(|(_, v)| v.parse::<usize>().ok())
                    .sum()
            });
        return Some(ran.saturating_sub(not_passed));
    }
    // Jest (`Tests:       2 failed, 3 passed, 5 total`), Vitest (`Tests  2 failed | 3 passed (5)`).
    if let Some(l) = lines.iter().rev().find(|l| {
        l.strip_prefix("Tests:").is_some_and(starts_with_number)
            || l.strip_prefix("Tests  ").is_some_and(starts_with_number)
    }) {
        return Some(number_before(l, "passed").unwrap_or(0));
    }
    // node --test: TAP's `# pass 3`, the spec reporter's `ℹ pass 3` (Node 23 on).
    if let Some(n) = lines.iter().rev().find_map(|l| {
        l.strip_prefix("# pass ")
            .or_else(|| l.strip_prefix("ℹ pass "))
            .and_then(|n| n.trim().parse::<usize>().ok())
    }) {
        return Some(n);
    }
    // pytest: its last line, `=== 3 failed, 1 passed, 2 errors in 0.50s ===`, `1 error in 0.17s`,
    // `no tests ran in 0.01s`.
    if let Some(l) = lines.iter().rev().find(|l| !l.is_empty()) {
        let l = l.trim_matches(|c: char| c == '=' || c == ' ');
        let timed = l.rsplit_once(" in ").is_some_and(|(_, t)| {
            t.starts_with(|c: char| c.is_ascii_digit())
                && t.split_whitespace()
                    .next()
                    .is_some_and(|t| t.ends_with('s'))
        });
        let counted = [
            "passed", "failed", "error", "errors", "skipped", "xfailed", "xpassed",
        ]
        .iter()
        .any(|w| number_before(l, w).is_some());
        if timed && (counted || l.starts_with("no tests ran")) {
            return Some(number_before(l, "passed").unwrap_or(0));
        }
    }
    // Mocha: `3 passing`, `2 failing` (no `passing` line when none passed).
    let mocha = |word: &str| {
        lines.iter().rev().find_map(|l| {
            let mut w = l.split_whitespace();
            let n = w.next()?.parse::<usize>().ok()?;
            (w.next() == Some(word)).then_some(n)
        })
    };
    mocha("passing").or_else(|| mocha("failing").map(|_| 0))
}

fn cargo(output: &str) -> Option<Vec<TestFailure>> {
    let lines: Vec<&str> = output.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = lines[i]
            .strip_prefix("---- ")
            .and_then(|r| r.strip_suffix(" stdout ----"))
        else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        let mut message = Vec::new();
        let mut at = None;
        // Up to the next test, the summary, or the backtrace (with RUST_BACKTRACE set).
        while j < lines.len()
            && !lines[j].starts_with("---- ")
            && !lines[j].starts_with("failures:")
            && !lines[j].starts_with("note: run with")
            && !lines[j].starts_with("stack backtrace:")
            && !is_cut_note(lines[j])
        {
            let l = lines[j];
            if let Some(rest) = l.split_once("panicked at ").map(|(_, r)| r) {
                let place = rest.trim_end_matches(':');
                let mut parts = place.split(':');
                if let (Some(path), Some(n)) = (parts.next(), parts.next())
                    && let Ok(n) = n.parse()
                {
                    at = Some((path.to_owned(), n));
                }
            } else if !l.trim().is_empty() {
                message.push(l.to_owned());
            }
            j += 1;
        }
        out.push(TestFailure {
            name: name.to_owned(),
            message,
            at,
            source: Vec::new(),
            id: None,
        });
        i = j;
    }
    (!out.is_empty()).then_some(out)
}

fn node(output: &str) -> Option<Vec<TestFailure>> {
    let lines: Vec<&str> = output.lines().collect();
    let mut out: Vec<TestFailure> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        let name = t
            .strip_prefix("✖ ")
            .or_else(|| t.strip_prefix("not ok "))
            .map(|n| {
                let n = n.trim_start_matches(|c: char| c.is_ascii_digit() || c == ' ');
                let n = n.strip_prefix("- ").unwrap_or(n);
                n.rsplit_once(" (").map_or(n, |(a, _)| a).trim().to_owned()
            });
        let Some(name) = name else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        let mut message = Vec::new();
        let mut at = None;
        while j < lines.len() {
            let l = lines[j].trim();
            if l.starts_with("✖ ")
                || l.starts_with("not ok ")
                || l.starts_with("ℹ ")
                || is_cut_note(l)
            {
                break;
            }
            if l.starts_with("at ") {
                if at.is_none()
                    && let Some(place) = l
                        .rsplit_once('(')
                        .map(|(_, p)| p.trim_end_matches(')'))
                        .or_else(|| l.strip_prefix("at "))
                {
                    let place = place.trim_start_matches("file://");
                    let mut parts = place.rsplitn(3, ':');
                    let (_col, n, path) = (parts.next(), parts.next(), parts.next());
                    if let (Some(n), Some(path)) = (n.and_then(|n| n.parse().ok()), path)
                        && is_test_path(path)
                    {
                        at = Some((path.to_owned(), n));
                    }
                }
            } else if !l.is_empty()
                && !l.starts_with("---")
                && !l.starts_with("...")
                && !l.starts_with("duration_ms")
                && !l.starts_with("failureType")
                && !l.starts_with("code:")
                && !l.starts_with("stack:")
                && message.len() < 8
            {
                message.push(l.to_owned());
            }
            j += 1;
        }
        // A parent suite repeats its failing children: keep the innermost.
        if !message.is_empty() || at.is_some() {
            out.push(TestFailure {
                name,
                message,
                at,
                source: Vec::new(),
                id: None,
            });
        }
        i = j;
    }
    (!out.is_empty()).then_some(out)
}

fn is_test_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    (path.contains("test") || path.contains("spec"))
        && name.contains('.')
        && !path.contains("/unittest/")
        && !path.contains("site-packages")
        && !path.contains("node:")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_files(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn unittest_failures_name_the_test_the_assertion_and_its_lines() {
        let output = "F.\n======================================================================\nFAIL: test_doubles (tests.test_core.CoreTest.test_doubles)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"tests/test_core.py\", line 6, in test_doubles\n    self.assertEqual(double(2), 4)\nAssertionError: 3 != 4\n\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n";
        let found = parse(output).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].name,
            "test_doubles (tests.test_core.CoreTest.test_doubles)"
        );
        assert_eq!(found[0].message, ["AssertionError: 3 != 4"]);
        assert_eq!(found[0].at, Some(("tests/test_core.py".to_owned(), 6)));
        let test = "import unittest\n\n\nclass CoreTest(unittest.TestCase):\n    def test_doubles(self):\n        self.assertEqual(double(2), 4)\n";
        let read = |p: &str| (p == "tests/test_core.py").then(|| test.to_owned());
        let text = describe(&found, &read, 2000);
        assert!(text.contains("1 failing test:\n"), "{text}");
        assert!(text.contains("AssertionError: 3 != 4"), "{text}");
        assert!(
            text.contains(
                "      def test_doubles(self):\n   >         self.assertEqual(double(2), 4)"
            ),
            "{text}"
        );
    }

    #[test]
    fn cargo_and_pytest_and_node_failures_are_read() {
        let cargo_out = "running 2 tests\ntest tests::doubles ... FAILED\n\nfailures:\n\n---- tests::doubles stdout ----\n\nthread 'tests::doubles' panicked at src/lib.rs:9:9:\nassertion `left == right` failed\n  left: 3\n right: 4\nstack backtrace:\n   0: __rustc::rust_begin_unwind\n\nfailures:\n    tests::doubles\n";
        let f = parse(cargo_out).unwrap();
        assert_eq!(f[0].name, "tests::doubles");
        assert_eq!(f[0].at, Some(("src/lib.rs".to_owned(), 9)));
        assert_eq!(
            f[0].message,
            ["assertion `left == right` failed", "  left: 3", " right: 4"]
        );
        let py = "F\n=================================== FAILURES ===================================\n_________________________________ test_doubles _________________________________\n\n    def test_doubles():\n>       assert double(2) == 4\nE       assert 3 == 4\nE        +  where 3 = double(2)\n\ntest_double.py:5: AssertionError\n=========================== short test summary info ============================\nFAILED test_double.py::test_doubles - assert 3 == 4\n1 failed in 0.02s\n";
        let f = parse(py).unwrap();
        assert_eq!(f[0].name, "test_doubles");
        assert_eq!(f[0].message[0], "assert 3 == 4");
        assert_eq!(f[0].at, Some(("test_double.py".to_owned(), 5)));
        assert!(
            f[0].source.iter().any(|l| l.starts_with('>')),
            "{:?}",
            f[0].source
        );
        let node_out = "✖ wordCount counts words (1.1ms)\n  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n  2 !== 3\n\n      at TestContext.<anonymous> (file:///tmp/ws/dist/slug.test.js:8:10)\n      at Test.runInAsyncScope (node:async_hooks:206:9)\nℹ tests 3\n";
        let f = parse(node_out).unwrap();
        assert_eq!(f[0].name, "wordCount counts words");
        assert_eq!(f[0].at, Some(("/tmp/ws/dist/slug.test.js".to_owned(), 8)));
        assert!(
            f[0].message.iter().any(|m| m == "2 !== 3"),
            "{:?}",
            f[0].message
        );
        assert!(parse("error: could not compile").is_none());
        let many: Vec<TestFailure> = (0..5)
            .map(|i| TestFailure {
                name: format!("t{i}"),
                message: vec!["boom".to_owned()],
                at: None,
                source: Vec::new(),
                id: None,
            })
            .collect();
        let text = describe(&many, &no_files, 2000);
        let error = "E\n======================================================================\nERROR: test_items_below (tests.test_core.CoreTest.test_items_below)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/ws/tests/test_core.py\", line 15, in test_items_below\n    self.assertEqual(items_below(self.items), [\"nut\"])\n                     ^^^^^^^^^^^^^^^^^^^^^^\n  File \"/ws/inventory/core.py\", line 20, in items_below\n    return sorted(item.name for item in items if item.quantity < threshold)\n                                        ^^^^^\nNameError: name 'items' is not defined\n\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n";
        let f = parse(error).unwrap();
        assert_eq!(
            f[0].message,
            [
                "NameError: name 'items' is not defined",
                "raised in /ws/inventory/core.py, line 20, in items_below: return sorted(item.name for item in items if item.quantity < threshold)"
            ]
        );
        assert_eq!(f[0].at, Some(("/ws/tests/test_core.py".to_owned(), 15)));
        assert!(text.contains("Also failing: t3, t4"), "{text}");
    }

    /// Real output of 28 failing tests (90 KB), cut at 16 KiB as a test run kept it before it
    /// kept 256 KiB (a longer run is still cut this way): the head holds
    /// four failures' detail, the cut goes through the fourth, and the tail holds the last ones
    /// and the short summary.
    #[test]
    fn a_cut_pytest_output_still_names_every_failing_test() {
        let full = include_str!("../../../fixtures/develop/failures/pytest-camicia-28-failed.txt");
        let (output, cut) = crate::tools::process::truncate_output(full.as_bytes(), 16 * 1024);
        assert!(cut > 0);
        let found = parse(&output).unwrap();
        assert_eq!(found.len(), 28, "{found:#?}");
        let names: std::collections::HashSet<&str> =
            found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names.len(), 28);
        assert!(names.contains("CamiciaTest.test_anderson_2013"));
        assert!(names.contains("CamiciaTest.test_kleber_1999"));
        // Each failure's message is its own: the fourth failure's detail is cut before its
        // `E` line, and it does not take the line after the cut (another test's).
        let easy = found
            .iter()
            .find(|f| f.name == "CamiciaTest.test_easy_card_combination")
            .unwrap();
        assert_eq!(easy.message.len(), 1, "{easy:#?}");
        assert!(easy.message[0].starts_with("IndexError"), "{easy:#?}");
        assert!(!easy.source.iter().any(|l| is_cut_note(l)), "{easy:#?}");
        let two = found
            .iter()
            .find(|f| f.name == "CamiciaTest.test_two_tricks")
            .unwrap();
        assert_eq!(
            two.message,
            ["AssertionError: None != {'status': 'finished', 'cards': 5, 'tricks': 2}"]
        );
        assert_eq!(counted(&output), Some(28));
        assert!(found.iter().all(|f| {
            f.id.as_deref()
                .is_some_and(|id| id.starts_with("camicia_test.py::CamiciaTest::test_"))
        }));
        let text = describe(&found, &no_files, 2500);
        assert!(text.starts_with("28 failing tests:\n"), "{text}");
        assert!(text.contains("IndexError: pop from empty list"), "{text}");
    }

    #[test]
    fn passed_tests_are_read_from_each_runner_s_summary() {
        // pytest, a collection error, unittest, cargo (two binaries), Jest, Vitest, node, Mocha.
        assert_eq!(
            passed("..F\n=== 3 failed, 1 passed, 2 errors in 0.50s ===\n"),
            Some(1)
        );
        assert_eq!(passed("16 failed in 0.07s\n"), Some(0));
        assert_eq!(
            passed(
                "ERROR affine_cipher_test.py\n!!!! Interrupted: 1 error during collection !!!!\n1 error in 0.17s\n"
            ),
            Some(0)
        );
        assert_eq!(passed("=== 4 passed in 0.10s ===\n"), Some(4));
        assert_eq!(
            passed("FAIL: test_x (t.T)\n----\nRan 19 tests in 0.003s\n\nFAILED (failures=1)\n"),
            Some(18)
        );
        assert_eq!(passed("Ran 5 tests in 0.001s\n\nOK\n"), Some(5));
        assert_eq!(
            passed(
                "test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out\n\
                 test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
            ),
            Some(7)
        );
        assert_eq!(
            passed("Tests:       2 failed, 3 passed, 5 total\nTime: 1 s\n"),
            Some(3)
        );
        assert_eq!(passed(" Tests  2 failed | 3 passed (5)\n"), Some(3));
        assert_eq!(passed("# tests 5\n# pass 3\n# fail 2\n"), Some(3));
        assert_eq!(passed("  3 passing (12ms)\n  2 failing\n"), Some(3));
        assert_eq!(
            passed("ℹ tests 3\nℹ suites 0\nℹ pass 2\nℹ fail 1\n"),
            Some(2)
        );
        // Lines that look like summaries and are not: a docstring in a traceback, bun's `Ran`.
        assert_eq!(
            passed(
                "    \"\"\"Tests the total of a failed order.\"\"\"\nE   AssertionError: 2 passed in total\n=== 1 failed, 9 passed, 1 warning in 0.12s ===\n"
            ),
            Some(9)
        );
        assert_eq!(passed("=== 1 xfailed in 0.05s ===\n"), Some(0));
        assert_eq!(passed("no tests ran in 0.01s\n"), Some(0));
        assert_eq!(
            passed("Ran 5 tests in 0.002s\n\nFAILED (failures=1, skipped=2)\n"),
            Some(2)
        );
        assert_eq!(passed("Ran 3 tests in 0.001s\n\nOK (skipped=1)\n"), Some(2));
        // cargo's output cut in its middle: a binary's line may be gone.
        assert_eq!(
            passed(
                "test result: ok. 300 passed; 0 failed\n[… 4000 bytes (40 lines) of output cut here; the beginning and the end are shown …]\ntest result: FAILED. 1 passed; 1 failed\n"
            ),
            None
        );
        // A compile error, or a runner this does not know: unread.
        assert_eq!(passed("error[E0425]: cannot find value `x`\n"), None);
        assert_eq!(passed("--- FAIL: TestX (0.00s)\nFAIL\n"), None);
    }

    #[test]
    fn summary_lines_and_counts() {
        assert_eq!(
            summary_line("FAILED t.py::test_x[a - b] - assert 1 == 2"),
            Some(("t.py::test_x[a - b]", "assert 1 == 2"))
        );
        assert_eq!(
            summary_line("FAILED t.py::Case::test_y - ValueError: x - y"),
            Some(("t.py::Case::test_y", "ValueError: x - y"))
        );
        assert_eq!(
            summary_line("FAILED t.py::test_w - ValueError: bad [x] - y"),
            Some(("t.py::test_w", "ValueError: bad [x] - y"))
        );
        assert_eq!(
            summary_line("FAILED t.py::test_z"),
            Some(("t.py::test_z", ""))
        );
        assert_eq!(
            counted("..F\n3 failed, 1 passed, 2 errors in 0.5s\n"),
            Some(5)
        );
        assert_eq!(
            counted("Ran 4 tests in 0.001s\n\nFAILED (failures=2, errors=1)\n"),
            Some(3)
        );
        assert_eq!(counted("4 passed in 0.1s\n"), None);
        // Two tests of one name in two files: each summary line finds its own block.
        let out = "=================================== FAILURES ===================================\n_________________________________ test_basic _________________________________\n\n>   assert f() == 1\nE   assert 0 == 1\n\na/test_one.py:2: AssertionError\n_________________________________ test_basic _________________________________\n\n>   assert g() == 1\nE   assert 2 == 1\n\nb/test_two.py:2: AssertionError\n=========================== short test summary info ============================\nFAILED a/test_one.py::test_basic - assert 0 == 1\nFAILED b/test_two.py::test_basic - assert 2 == 1\n2 failed in 0.02s\n";
        let found = parse(out).unwrap();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(found[0].id.as_deref(), Some("a/test_one.py::test_basic"));
        assert_eq!(found[1].id.as_deref(), Some("b/test_two.py::test_basic"));
    }
}
