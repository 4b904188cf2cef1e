//! Data-driven tests of the syntax layer: every `fixtures/syntax/<language>/<name>.cases` lists
//! requests against its sibling source file; the outputs are compared with `<name>.expected`.
//! Each source file is one named test (`rust::nested`; `cargo test --test context_fixtures --
//! rust::` runs the Rust ones). `UPDATE_EXPECT=1 cargo test --test context_fixtures` rewrites
//! the expected files.
//!
//! Case lines: `symbols` (every symbol, nested ones too), `find NAME`, `replace NAME` followed
//! by the new text between `<<<` and `>>>` lines (prints the diff and the parse problems it
//! introduces), `region KEY=VALUE...` (`symbol=`, `query="..."`, `line=N[:COL]`, `lines=A-B`,
//! `budget=`, `threshold=` whole-file bytes).

#[path = "support/cases.rs"]
mod cases;
#[path = "support/expect.rs"]
mod expect;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use patchwise::syntax::checks::introduced_problems_for_edit;
use patchwise::syntax::regions::{RegionOptions, Target, extract_region};
use patchwise::syntax::symbols::{Scope, find_symbol, replace_symbol, symbols};
use patchwise::syntax::{Language, SyntaxTree};

fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/syntax")
}

fn sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in fs::read_dir(fixture_root()).expect("fixtures/syntax exists") {
        let dir = dir.expect("readable fixture dir").path();
        if !dir.is_dir() {
            continue;
        }
        for file in fs::read_dir(&dir).expect("readable fixture dir") {
            let path = file.expect("readable fixture").path();
            let is_source = path
                .extension()
                .is_some_and(|e| e != "cases" && e != "expected");
            if is_source && path.with_extension("cases").exists() {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn run_cases(source: &Path) -> String {
    let text = fs::read_to_string(source).expect("fixture is UTF-8");
    let name = source.strip_prefix(fixture_root()).unwrap_or(source);
    let display = name.to_string_lossy().replace('\\', "/");
    let language = Language::detect(None, Some(&display));
    let tree = SyntaxTree::parse(&text, language);
    let cases = fs::read_to_string(source.with_extension("cases")).expect("cases file");
    let mut out = String::new();
    let mut lines = cases.lines();
    while let Some(line) = lines.next() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push_str(&format!("=== {line}\n"));
        let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
        match command {
            "symbols" => {
                for s in symbols(&text, &tree, Scope::All) {
                    out.push_str(&format!(
                        "{}{}-{} {} {}{}{} — {}\n",
                        "  ".repeat(s.depth),
                        s.lines.0,
                        s.lines.1,
                        s.kind.label(),
                        s.qualified,
                        s.alias
                            .as_ref()
                            .map(|a| format!(" = {a}"))
                            .unwrap_or_default(),
                        if s.nested { " (nested)" } else { "" },
                        s.signature
                    ));
                }
            }
            "find" => {
                let all = symbols(&text, &tree, Scope::All);
                match find_symbol(&all, rest) {
                    Ok(s) => {
                        let first_line = text[s.range.clone()].lines().next().unwrap_or("");
                        out.push_str(&format!(
                            "→ {} ({}, lines {}-{}, bytes {:?}, with attachments {:?}): {}\n",
                            s.display_name(),
                            s.kind.label(),
                            s.lines.0,
                            s.lines.1,
                            s.range,
                            s.full_range,
                            first_line
                        ));
                    }
                    Err(err) => out.push_str(&format!("error: {err}\n")),
                }
            }
            "replace" => {
                let mut new_text = String::new();
                let open = lines.next().unwrap_or("");
                assert_eq!(open, "<<<", "replace needs a <<< block in {display}");
                for block in lines.by_ref() {
                    if block == ">>>" {
                        break;
                    }
                    new_text.push_str(block);
                    new_text.push('\n');
                }
                match replace_symbol(&text, &tree, rest, &new_text) {
                    Ok(edit) => {
                        let after = edit.apply(&text).expect("symbol edits fit the text");
                        let diff = similar::TextDiff::from_lines(&text, &after);
                        out.push_str(
                            &diff
                                .unified_diff()
                                .context_radius(1)
                                .header("before", "after")
                                .to_string(),
                        );
                        let problems = introduced_problems_for_edit(language, &text, &edit)
                            .expect("edit fits");
                        if problems.is_empty() {
                            out.push_str("introduced problems: none\n");
                        }
                        for p in problems {
                            out.push_str(&format!("introduced problem: {p}\n"));
                        }
                    }
                    Err(err) => out.push_str(&format!("error: {err}\n")),
                }
            }
            "region" => {
                let (target, options) = parse_region(rest);
                let region = extract_region(&text, &tree, &display, &target, &options);
                out.push_str(&region.text);
                out.push_str(&format!("-- {}\n", region.summary()));
                assert!(
                    region.tokens <= options.budget || region.whole_file,
                    "{display}: {line}: {} tokens over budget {}",
                    region.tokens,
                    options.budget
                );
            }
            other => panic!("unknown case {other:?} in {display}"),
        }
    }
    out
}

fn parse_region(spec: &str) -> (Target, RegionOptions) {
    let mut options = RegionOptions::default();
    let mut target = Target::None;
    let mut rest = spec.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=').expect("key=value");
        let (value, after) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"').expect("closing quote");
            (&quoted[..end], &quoted[end + 1..])
        } else {
            after.split_once(' ').unwrap_or((after, ""))
        };
        match key.trim() {
            "symbol" => target = Target::Symbol(value.to_string()),
            "query" => target = Target::Query(value.to_string()),
            "line" => {
                let (line, column) = match value.split_once(':') {
                    Some((l, c)) => (l.parse().unwrap(), Some(c.parse().unwrap())),
                    None => (value.parse().unwrap(), None),
                };
                target = Target::Position { line, column };
            }
            "lines" => {
                let (a, b) = value.split_once('-').expect("lines=A-B");
                target = Target::Lines {
                    start: a.parse().unwrap(),
                    end: b.parse().unwrap(),
                };
            }
            "budget" => options.budget = value.parse().unwrap(),
            "threshold" => options.whole_file_bytes = value.parse().unwrap(),
            other => panic!("unknown region option {other:?}"),
        }
        rest = after.trim();
    }
    (target, options)
}

fn main() -> ExitCode {
    let sources = sources();
    let total = sources.len();
    let mut trials = vec![cases::test("corpus_has_ten_sources", move || {
        assert!(total >= 10, "found only {total} syntax fixtures");
    })];
    trials.extend(cases::per_file(&fixture_root(), sources, |source| {
        expect::expect_path(&source.with_extension("expected"), &run_cases(source));
    }));
    cases::main(trials)
}
