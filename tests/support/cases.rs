//! Fixture corpora as named tests: each case file under `fixtures/` becomes one `libtest-mimic`
//! trial named after its path (`elision::go-1-new-drops-marker`), so a failure names its case and
//! `cargo test --test edit_fixtures -- elision::go-1` runs only the cases it matches. A corpus
//! kept as one JSON list of small cases gives a trial per entry, named after the entry's `name`
//! (`positions::emoji_utf-16_after`).
//!
//! A target built on this sets `harness = false` in Cargo.toml and calls [`main`] from its own
//! `main`; a `#[test]` in such a file would never run, which `tests/architecture.rs`
//! (`harness_free_targets_hold_no_test_attributes`) checks. Included on its own like `expect.rs`
//! by targets that do not drive the server, and re-exported by `support`.

#![allow(dead_code)] // each test binary uses a different part

use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use libtest_mimic::Trial;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Every file under `root` (recursively) whose name ends in `.{extension}`, sorted by path.
pub fn files(root: &Path, extension: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list the fixture directory {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("readable fixture directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == extension) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The trial name of a case file: its path below `root` without the extension, with `::`
/// between directories (`elision/go-1.case` → `elision::go-1`).
pub fn name(root: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(root).unwrap_or(file).with_extension("");
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("::")
}

/// One trial per file, each running `check` on its file; `check` fails by panicking, as a
/// `#[test]` does.
pub fn per_file(
    root: &Path,
    files: Vec<PathBuf>,
    check: impl Fn(&Path) + Send + Sync + Clone + 'static,
) -> Vec<Trial> {
    files
        .into_iter()
        .map(|file| {
            let check = check.clone();
            Trial::test(name(root, &file), move || {
                check(&file);
                Ok(())
            })
        })
        .collect()
}

/// One trial per entry of the JSON list in `file`, each entry an object with a `name`: the trial
/// `{group}::{name}` (the name lowercased, each run of characters other than letters, digits and
/// `-` made one `_`) runs `check` on the entry read as `T`. Two entries whose names give the
/// same trial name are refused, so every case stays reachable by name.
pub fn per_entry<T: DeserializeOwned + Send + 'static>(
    group: &str,
    file: &Path,
    check: impl Fn(T) + Send + Sync + Clone + 'static,
) -> Vec<Trial> {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read the case list {}: {e}", file.display()));
    let entries: Vec<Value> = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not a JSON list of cases: {e}", file.display()));
    let mut seen = std::collections::BTreeMap::new();
    entries
        .into_iter()
        .enumerate()
        .map(|(i, entry)| {
            let name = entry["name"]
                .as_str()
                .unwrap_or_else(|| panic!("case {i} of {} has no `name` string", file.display()))
                .to_owned();
            let trial = format!("{group}::{}", trial_name(&name));
            if let Some(other) = seen.insert(trial.clone(), name.clone()) {
                panic!(
                    "{}: the cases {other:?} and {name:?} are both named {trial}; rename one",
                    file.display()
                );
            }
            let case: T = serde_json::from_value(entry).unwrap_or_else(|e| {
                panic!("case {name:?} of {} does not parse: {e}", file.display())
            });
            let check = check.clone();
            Trial::test(trial, move || {
                check(case);
                Ok(())
            })
        })
        .collect()
}

/// A case's name as a trial name: lowercase, with `_` for each run of characters other than
/// letters, digits and `-` (`"Emoji UTF-16 after"` → `emoji_utf-16_after`).
fn trial_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '-' {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_owned()
}

/// A plain test in a case-driven target (the corpus checks beside the cases).
pub fn test(name: &str, f: impl FnOnce() + Send + 'static) -> Trial {
    Trial::test(name, move || {
        f();
        Ok(())
    })
}

/// Runs the trials with the command line `cargo test` passed (filters, `--list`, `--exact`, …).
pub fn main(trials: Vec<Trial>) -> ExitCode {
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), trials).exit_code()
}

/// Runs an async case on a runtime of its own, as `#[tokio::test(flavor = "multi_thread")]`.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}
