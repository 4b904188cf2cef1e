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
    let file = repo_path(relative);
    if updating() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        if std::fs::read_to_string(&file).ok().as_deref() != Some(actual) {
            std::fs::write(&file, actual).unwrap();
        }
        return;
    }
    let expected = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_EXPECT=1 to create it",
            file.display()
        )
    });
    if actual != expected {
        let diff = similar::TextDiff::from_lines(expected.as_str(), actual)
            .unified_diff()
            .header("expected", "actual")
            .to_string();
        panic!("{relative} differs; run with UPDATE_EXPECT=1 to accept the new output\n{diff}");
    }
}
