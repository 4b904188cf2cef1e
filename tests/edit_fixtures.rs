//! The edit engine against its fixture corpus (`fixtures/edit/<family>/<name>.case`), one named
//! test per case: `cargo test --test edit_fixtures -- elision::go-1` runs the cases it matches.
//!
//! A fixture is one `.case` file: `key: value` header lines, then sections opened by a line
//! `§§ NAME` whose content runs to the next `§§` line, byte for byte (trailing whitespace and
//! `\r` included). `§§ old noeol` drops the section's final newline. Sections: `file`, `old`,
//! `new`, `read` (the text the model read, for stale cases), and the expectation — `expect` (the
//! file after the edit) or `refuse KIND` (the refusal kind, then the message a model gets).
//! Headers: `path`, `replace_all: true`, `pass` (the expected matching pass).
//!
//! `UPDATE_EXPECT=1 cargo test --test edit_fixtures` rewrites expectations (the `expect` or
//! `refuse` section and `pass`) from what the engine does; review the diff.

#[path = "support/cases.rs"]
mod cases;
#[path = "support/expect.rs"]
mod expect;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use patchwise::edit::{self, Ledger, ReplaceOptions};

/// The corpus is only worth its name with this many cases, and this many in each family.
const MIN_CASES: usize = 200;
const MIN_PER_FAMILY: usize = 15;

fn main() -> ExitCode {
    let root = expect::repo_path("fixtures/edit");
    let files = cases::files(&root, "case");
    let mut trials = vec![corpus_size(&root, &files)];
    let checked = root.clone();
    trials.extend(cases::per_file(&root, files, move |file| {
        check(&checked, file)
    }));
    cases::main(trials)
}

/// A trial that fails when the corpus or one of its families shrank below its minimum.
fn corpus_size(root: &Path, files: &[PathBuf]) -> cases::Trial {
    let total = files.len();
    let mut per_family: BTreeMap<String, usize> = BTreeMap::new();
    for file in files {
        let family = file
            .strip_prefix(root)
            .ok()
            .and_then(|p| p.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        *per_family.entry(family).or_default() += 1;
    }
    cases::test("corpus_has_every_family", move || {
        assert!(
            total >= MIN_CASES,
            "expected the fixture corpus of at least {MIN_CASES} cases, found {total}"
        );
        for (family, n) in &per_family {
            assert!(
                *n >= MIN_PER_FAMILY,
                "family `{family}` has only {n} cases; the corpus wants at least {MIN_PER_FAMILY}"
            );
        }
    })
}

/// Runs one case and compares what the engine did with its expectation; with `UPDATE_EXPECT`
/// set, rewrites the expectation instead of failing.
fn check(root: &Path, path: &Path) {
    let text = std::fs::read_to_string(path).expect("fixture is UTF-8");
    let mut case = Case::parse(&text);
    let outcome = run(&case);
    let name = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let Some((exp_name, exp_body)) = case.expectation() else {
        panic!("{name}: no `§§ expect` or `§§ refuse` section");
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
                Some(_) if !exp_body.is_empty() && exp_body.trim_end() != message.trim_end() => {
                    Some(format!(
                        "refusal message differs:\n--- expected\n{exp_body}\n--- actual\n{message}"
                    ))
                }
                Some(_) => None,
            }
        }
    };
    let needs_message = matches!(&outcome, Outcome::Refused { .. }) && exp_body.trim().is_empty();
    if expect::updating() && (mismatch.is_some() || needs_message) {
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
        return;
    }
    if let Some(m) = mismatch {
        panic!("{name}: {m}\n(UPDATE_EXPECT=1 rewrites the expectation from what the engine does)");
    }
}

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

fn set_header(case: &mut Case, key: &str, value: &str) {
    match case.headers.iter_mut().find(|(k, _)| k == key) {
        Some(h) => h.1 = value.to_string(),
        None => case.headers.push((key.to_string(), value.to_string())),
    }
}
