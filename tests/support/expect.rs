//! The one snapshot helper: text compared with a file checked into the repository, rewritten
//! instead when `UPDATE_EXPECT` is set (to anything but `0` or nothing), as expect-test does.
//!
//! Included on its own (`#[path = "support/expect.rs"] mod expect;`) by tests that do not drive
//! the server, and re-exported by `support`.

#![allow(dead_code)] // each test binary uses a different part

use std::path::{Path, PathBuf};

/// Whether expectations are being rewritten (`UPDATE_EXPECT=1`).
pub fn updating() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| !v.is_empty() && v != "0")
}

/// A path inside the repository.
pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Compares `actual` with the repository file `relative`; `UPDATE_EXPECT=1` writes it instead.
pub fn expect_file(relative: &str, actual: &str) {
    expect_path(&repo_path(relative), actual);
}

/// Compares `actual` with `file` (a path inside the repository, such as a fixture's sibling
/// `.expected` file); `UPDATE_EXPECT=1` writes it instead.
pub fn expect_path(file: &Path, actual: &str) {
    let canonical = canonical_json(file, actual);
    let actual = canonical.as_deref().unwrap_or(actual);
    let shown = file
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(file)
        .display();
    if updating() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        if std::fs::read_to_string(file).ok().as_deref() != Some(actual) {
            std::fs::write(file, actual).unwrap();
        }
        return;
    }
    let expected = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{shown}: {e}; run with UPDATE_EXPECT=1 to create it"));
    if actual != expected {
        let diff = similar::TextDiff::from_lines(expected.as_str(), actual)
            .unified_diff()
            .header("expected", "actual")
            .to_string();
        panic!("{shown} differs; run with UPDATE_EXPECT=1 to accept the new output\n{diff}");
    }
}

/// A JSON expectation with its object keys sorted, whatever order the value was built in:
/// serde_json keeps insertion order when any crate in the build turns on its `preserve_order`
/// feature (the ACP crate does), and the expectations were written sorted.
fn canonical_json(file: &Path, actual: &str) -> Option<String> {
    if file.extension().is_none_or(|e| e != "json") {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(actual).ok()?;
    let mut text = serde_json::to_string_pretty(&sorted(value)).ok()?;
    if actual.ends_with('\n') {
        text.push('\n');
    }
    Some(text)
}

fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}
