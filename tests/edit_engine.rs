//! The edit engine against its fixture corpus (`fixtures/edit/`), plus property tests.
//!
//! A fixture is one `.case` file: `key: value` header lines, then sections opened by a line
//! `§§ NAME` whose content runs to the next `§§` line, byte for byte (trailing whitespace and
//! `\r` included). `§§ old noeol` drops the section's final newline. Sections: `file`, `old`,
//! `new`, `read` (the text the model read, for stale cases), and the expectation — `expect` (the
//! file after the edit) or `refuse KIND` (the refusal kind, then the message a model gets).
//! Headers: `path`, `replace_all: true`, `pass` (the expected matching pass).
//!
//! `UPDATE_EXPECT=1 cargo test --test edit_engine` rewrites expectations (the `expect` or
//! `refuse` section and `pass`) from what the engine does; review the diff.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use patchwise::edit::{self, Ledger, ReplaceOptions};

#[derive(Debug, Default)]
struct Case {
    headers: Vec<(String, String)>,
    sections: Vec<(String, String)>,
}

impl Case {
    fn parse(text: &str) -> Case {
        let mut case = Case::default();
        let mut current: Option<(String, String)> = None;
        for line in text.split_inclusive('\n') {
            if let Some(name) = line.strip_prefix("§§ ") {
                if let Some(s) = current.take() {
                    case.sections.push(s);
                }
                current = Some((name.trim_end().to_string(), String::new()));
                continue;
            }
            match &mut current {
                Some((_, body)) => body.push_str(line),
                None => {
                    let l = line.trim_end();
                    if l.is_empty() || l.starts_with('#') {
                        continue;
                    }
                    if let Some((k, v)) = l.split_once(':') {
                        case.headers
                            .push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
            }
        }
        if let Some(s) = current.take() {
            case.sections.push(s);
        }
        case
    }

    fn header(&self, key: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn section(&self, name: &str) -> Option<String> {
        self.sections.iter().find_map(|(n, body)| {
            let mut words = n.split_whitespace();
            (words.next() == Some(name)).then(|| {
                if words.any(|w| w == "noeol") {
                    body.strip_suffix('\n').unwrap_or(body).to_string()
                } else {
                    body.clone()
                }
            })
        })
    }

    fn expectation(&self) -> Option<(String, String)> {
        self.sections
            .iter()
            .find(|(n, _)| n == "expect" || n.starts_with("expect ") || n.starts_with("refuse"))
            .cloned()
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (k, v) in &self.headers {
            let _ = writeln!(out, "{k}: {v}");
        }
        for (n, body) in &self.sections {
            let _ = writeln!(out, "§§ {n}");
            out.push_str(body);
        }
        out
    }
}

/// What the engine did with one case, in the fixture's terms.
enum Outcome {
    Applied { text: String, pass: String },
    Refused { kind: String, message: String },
}

fn run(case: &Case) -> Outcome {
    let file = case.section("file").unwrap_or_default();
    let old = case.section("old").unwrap_or_default();
    let new = case.section("new").unwrap_or_default();
    let path = PathBuf::from(case.header("path").unwrap_or("file.txt"));
    if let Some(read) = case.section("read") {
        let mut ledger = Ledger::new();
        ledger.record_read(&path, &read);
        if let Err(r) = ledger.check(&path, &file, Some(&old)) {
            return Outcome::Refused {
                kind: r.kind.as_str().to_string(),
                message: r.message,
            };
        }
    }
    let options = ReplaceOptions {
        replace_all: case.header("replace_all") == Some("true"),
    };
    match edit::replace(&file, &old, &new, options) {
        Ok(a) => Outcome::Applied {
            pass: a.matched_by().to_string(),
            text: a.text,
        },
        Err(r) => Outcome::Refused {
            kind: r.kind.as_str().to_string(),
            message: r.message,
        },
    }
}

fn fixture_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            fixture_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "case") {
            out.push(p);
        }
    }
}

fn family_of(path: &Path) -> String {
    path.parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/edit");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    files.sort();
    assert!(
        files.len() >= 200,
        "expected the fixture corpus, found {} cases",
        files.len()
    );
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    let mut per_family: std::collections::BTreeMap<String, usize> = Default::default();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("fixture is UTF-8");
        let mut case = Case::parse(&text);
        *per_family.entry(family_of(path)).or_default() += 1;
        let outcome = run(&case);
        let name = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        let Some((exp_name, exp_body)) = case.expectation() else {
            failures.push(format!("{name}: no `§§ expect` or `§§ refuse` section"));
            continue;
        };
        let mismatch = match &outcome {
            Outcome::Applied { text, pass } => {
                if exp_name != "expect" {
                    Some(format!(
                        "expected a refusal ({exp_name}), but it applied with {pass}:\n{text}"
                    ))
                } else if *text != exp_body {
                    Some(format!(
                        "applied with {pass}, but the result differs:\n--- expected\n{exp_body}\n--- actual\n{text}"
                    ))
                } else if let Some(want) = case.header("pass")
                    && want != pass
                {
                    Some(format!("applied right, but by `{pass}`, not `{want}`"))
                } else {
                    None
                }
            }
            Outcome::Refused { kind, message } => {
                let want = exp_name.strip_prefix("refuse").map(str::trim);
                match want {
                    None => Some(format!(
                        "expected the edit to apply, but it was refused ({kind}):\n{message}"
                    )),
                    Some(k) if k != kind => Some(format!("refused as {kind}, not {k}:\n{message}")),
                    Some(_)
                        if !exp_body.is_empty() && exp_body.trim_end() != message.trim_end() =>
                    {
                        Some(format!(
                            "refusal message differs:\n--- expected\n{exp_body}\n--- actual\n{message}"
                        ))
                    }
                    Some(_) => None,
                }
            }
        };
        let needs_message =
            matches!(&outcome, Outcome::Refused { .. }) && exp_body.trim().is_empty();
        if update && (mismatch.is_some() || needs_message) {
            let (new_name, new_body) = match &outcome {
                Outcome::Applied { text, pass } => {
                    set_header(&mut case, "pass", pass);
                    ("expect".to_string(), text.clone())
                }
                Outcome::Refused { kind, message } => {
                    case.headers.retain(|(k, _)| k != "pass");
                    (
                        format!("refuse {kind}"),
                        format!("{}\n", message.trim_end()),
                    )
                }
            };
            for s in &mut case.sections {
                if s.0 == exp_name {
                    *s = (new_name.clone(), new_body.clone());
                }
            }
            std::fs::write(path, case.render()).expect("fixture is writable");
            continue;
        }
        if let Some(m) = mismatch {
            failures.push(format!("{name}: {m}"));
        }
    }
    for (family, n) in &per_family {
        assert!(
            *n >= 15,
            "family `{family}` has only {n} cases; the corpus wants at least 15"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

fn set_header(case: &mut Case, key: &str, value: &str) {
    match case.headers.iter_mut().find(|(k, _)| k == key) {
        Some(h) => h.1 = value.to_string(),
        None => case.headers.push((key.to_string(), value.to_string())),
    }
}

// ---------------------------------------------------------------------------------------------
// Properties.

use patchwise::edit::{Operation, apply_batch, formats};
use proptest::prelude::*;

/// A file of `n` distinct lines (each carries its index), indented like code.
fn unique_file(n: usize, crlf: bool) -> (String, Vec<String>) {
    let eol = if crlf { "\r\n" } else { "\n" };
    let lines: Vec<String> = (0..n)
        .map(|i| {
            let depth = (i * 7 % 5) % 3;
            format!(
                "{}let value_{i} = compute({i}, \"s{i}\");",
                "    ".repeat(depth)
            )
        })
        .collect();
    let mut text = String::new();
    for l in &lines {
        text.push_str(l);
        text.push_str(eol);
    }
    (text, lines)
}

/// Bytes before the first and after the last reported span are exactly the original's.
fn assert_outside_untouched(before: &str, after: &str, spans: &[std::ops::Range<usize>]) {
    let lo = spans.iter().map(|s| s.start).min().unwrap_or(0);
    let hi = spans.iter().map(|s| s.end).max().unwrap_or(before.len());
    assert!(
        after.starts_with(&before[..lo]),
        "bytes before the span changed"
    );
    assert!(
        after.ends_with(&before[hi..]),
        "bytes after the span changed"
    );
    if let [one] = spans {
        assert_eq!(
            after.len() - (before.len() - one.len()),
            after.len() - before[..one.start].len() - before[one.end..].len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// An exact edit applied and then reversed gives back the original bytes.
    #[test]
    fn exact_edit_then_reverse_restores(
        n in 3usize..40,
        a in 0usize..40,
        len in 1usize..6,
        crlf in any::<bool>(),
        extra in "[a-z ]{0,12}",
    ) {
        let (text, lines) = unique_file(n, crlf);
        let a = a % n;
        let b = (a + len).min(n);
        let old = lines[a..b].join("\n");
        let new = format!("{}\n    // inserted {extra}", lines[a..b].join("\n").replace("compute", "evaluate"));
        let fwd = edit::replace(&text, &old, &new, ReplaceOptions::default())
            .unwrap_or_else(|r| panic!("forward refused: {r}"));
        let back = edit::replace(&fwd.text, &new, &old, ReplaceOptions::default())
            .unwrap_or_else(|r| panic!("reverse refused: {r}"));
        prop_assert_eq!(back.text, text);
    }

    /// A perturbed copy of a block of a file whose lines are all distinct is applied to that
    /// block or refused — never anywhere else — and nothing outside the span changes.
    #[test]
    fn perturbed_blocks_land_on_their_block_or_nowhere(
        n in 4usize..60,
        a in 0usize..60,
        len in 2usize..8,
        crlf in any::<bool>(),
        trailing in any::<bool>(),
        shift in 0usize..3,
        numbers in any::<bool>(),
        slip in proptest::option::of(0usize..8),
    ) {
        let (text, lines) = unique_file(n, crlf);
        let a = a % n;
        let b = (a + len).min(n);
        let mut old_lines: Vec<String> = lines[a..b].to_vec();
        let mut new_lines = old_lines.clone();
        let last = new_lines.len() - 1;
        new_lines[last].push_str(" // changed");
        if let Some(k) = slip
            && k < last
        {
            let l = old_lines[k].replace("compute", "calculate");
            old_lines[k] = l.clone();
            new_lines[k] = l;
        }
        let perturb = |ls: &[String], numbered: bool| -> String {
            ls.iter()
                .enumerate()
                .map(|(i, l)| {
                    let mut l = format!("{}{l}", "  ".repeat(shift));
                    if trailing {
                        l.push_str("  ");
                    }
                    if numbered {
                        l = format!("{:>6}\t{l}", a + i + 1);
                    }
                    l
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let old = perturb(&old_lines, numbers);
        let new = perturb(&new_lines, numbers);
        if let Ok(applied) = edit::replace(&text, &old, &new, ReplaceOptions::default()) {
            let spans = &applied.located[0].spans;
            assert_outside_untouched(&text, &applied.text, spans);
            let block = {
                let starts: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
                let s = if a == 0 { 0 } else { starts[a - 1] };
                let e = starts[b - 1];
                s..e
            };
            for sp in spans {
                prop_assert!(sp.start >= block.start && sp.end <= block.end,
                    "edit at {sp:?} outside the block {block:?} (pass {})", applied.matched_by());
            }
            prop_assert!(applied.text.contains("// changed"));
        }
    }

    /// Arbitrary OLD/NEW/file triples never panic, and whatever applies changes only the span.
    #[test]
    fn random_triples_never_panic(
        file in "(?s)[a-c \t\r\n{}()\"“”…·.]{0,300}",
        old in "(?s)[a-c \t\r\n{}()\"“”….#/]{0,40}",
        new in "(?s)[a-d \t\r\n{}()\"“”….#/]{0,40}",
        all in any::<bool>(),
    ) {
        if let Ok(applied) = edit::replace(&file, &old, &new, ReplaceOptions { replace_all: all }) {
            assert_outside_untouched(&file, &applied.text, &applied.located[0].spans);
        }
        let _ = formats::parse(&old);
    }

    /// Operations with arbitrary arguments (line numbers, regexes, anchors) never panic.
    #[test]
    fn random_operations_never_panic(
        file in "(?s)[a-c \t\r\n]{0,200}",
        line in 0usize..50,
        end in 0usize..50,
        pattern in "[a-c()\\[\\]*+?|\\\\^$.{}0-9]{0,12}",
        text in "(?s)[a-c \n\r]{0,20}",
        all in any::<bool>(),
    ) {
        let ops = vec![
            Operation::InsertAfterLine { line, text: text.clone() },
            Operation::InsertBeforeLine { line, text: text.clone() },
            Operation::ReplaceLines { start: line, end, text: text.clone() },
            Operation::ReplacePattern { pattern: pattern.clone(), replacement: text.clone(), all },
            Operation::Prepend { text: text.clone() },
            Operation::Append { text: text.clone() },
            Operation::InsertAfter { anchor: text.clone(), text: "x".into() },
            Operation::InsertBefore { anchor: pattern.clone(), text: text.clone() },
        ];
        for op in &ops {
            let _ = edit::apply(&file, op);
        }
        let _ = apply_batch(&file, &ops);
        let _ = formats::parse(&format!("<<<<<<< SEARCH\n{file}\n=======\n{text}\n>>>>>>> REPLACE\n"));
        let _ = formats::parse(&format!("*** Begin Patch\n*** Update File: a\n{file}\n*** End Patch\n"));
        let _ = formats::parse(&format!("--- a/x\n+++ b/x\n@@ -1 +1 @@\n{file}"));
    }
}

/// Large inputs: a 2 MB file, a 5 000-line OLD and pathological repetition stay well-behaved.
#[test]
fn huge_inputs_are_handled() {
    let (text, lines) = unique_file(40_000, false);
    let old = lines[20_000..25_000].join("\n");
    let new = old.replace("compute", "eval");
    let a = edit::replace(&text, &old, &new, ReplaceOptions::default()).unwrap();
    assert_eq!(a.matched_by().to_string(), "exact");
    let shifted: String = old.lines().map(|l| format!("  {l}\n")).collect();
    let a = edit::replace(&text, &shifted, &new, ReplaceOptions::default()).unwrap();
    assert_eq!(a.matched_by().to_string(), "indentation(-2)");
    let same = "a\n".repeat(100_000);
    let r = edit::replace(&same, "a\na", "b", ReplaceOptions::default()).unwrap_err();
    assert!(matches!(r.kind, edit::RefusalKind::Ambiguous { .. }));
    let a = edit::replace(&same, "a", "b", ReplaceOptions { replace_all: true }).unwrap();
    assert_eq!(a.replacements(), 100_000);
    let braces = "}\n".repeat(50_000);
    let r = edit::replace(&braces, "}\nnot here\n}\n}", "x", ReplaceOptions::default());
    assert!(r.is_err());
}

/// Every combination of the perturbations above on one file: nothing lands outside its block,
/// and the engine applies at least 97 % of them (the exceptions are refusals, never guesses).
#[test]
fn perturbation_grid_applies_nearly_everything_and_never_elsewhere() {
    let n = 30;
    let mut applied = 0;
    let mut total = 0;
    let mut refused = Vec::new();
    for crlf in [false, true] {
        let (text, lines) = unique_file(n, crlf);
        let starts: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
        for a in (0..n - 6).step_by(3) {
            for len in [2, 3, 5] {
                for trailing in [false, true] {
                    for shift in [0, 1, 2] {
                        for numbers in [false, true] {
                            // One wrong token needs at least two exact lines around it.
                            let slips: &[Option<usize>] =
                                if len >= 3 { &[None, Some(0)] } else { &[None] };
                            for &slip in slips {
                                total += 1;
                                let b = a + len;
                                let mut ol: Vec<String> = lines[a..b].to_vec();
                                let mut nl = ol.clone();
                                nl[len - 1].push_str(" // changed");
                                if let Some(k) = slip {
                                    ol[k] = ol[k].replace("compute", "calculate");
                                    nl[k] = ol[k].clone();
                                }
                                let p = |ls: &[String]| {
                                    ls.iter()
                                        .enumerate()
                                        .map(|(i, l)| {
                                            let mut l = format!("{}{l}", "  ".repeat(shift));
                                            if trailing {
                                                l.push(' ');
                                            }
                                            if numbers {
                                                l = format!("{} | {l}", a + i + 1);
                                            }
                                            l
                                        })
                                        .collect::<Vec<_>>()
                                        .join("\n")
                                };
                                let (old, new) = (p(&ol), p(&nl));
                                match edit::replace(&text, &old, &new, ReplaceOptions::default()) {
                                    Ok(x) => {
                                        applied += 1;
                                        let s = if a == 0 { 0 } else { starts[a - 1] };
                                        let e = starts[b - 1];
                                        for sp in &x.located[0].spans {
                                            assert!(
                                                sp.start >= s && sp.end <= e,
                                                "wrong place: {sp:?} outside {s}..{e} by {}",
                                                x.matched_by()
                                            );
                                        }
                                    }
                                    Err(r) => refused.push(format!(
                                        "crlf={crlf} a={a} len={len} trailing={trailing} shift={shift} numbers={numbers} slip={slip:?}: {}",
                                        r.kind.as_str()
                                    )),
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("perturbation grid: {applied}/{total} applied");
    assert!(
        applied * 100 >= total * 97,
        "only {applied}/{total} applied; refused:\n{}",
        refused.join("\n")
    );
}
