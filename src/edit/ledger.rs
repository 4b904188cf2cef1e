//! The read-before-edit ledger: which files a session has seen, and in which state.
//!
//! A model may only edit what it has read, and only as it read it: an edit to a file never read
//! in the session is refused ("read the file first"), an edit to a file that changed since is
//! refused as stale, with the current text of the region it aimed at. The ledger stores content
//! hashes, never contents, and does no I/O: callers hand it the text they read or wrote.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::locate::{self, FileIndex};
use super::refusal::{self, Refusal, RefusalKind};
use super::text;

/// What a session has seen of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub hash: u64,
    /// The editor's document version, when the text came from an open buffer.
    pub version: Option<i32>,
}

/// Per-session record of files read (and written: a file the model just edited is known to it).
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    seen: HashMap<PathBuf, Seen>,
}

/// A stable 64-bit hash of a text (FNV-1a): the same on every run and machine.
pub fn content_hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Ledger {
    pub fn new() -> Self {
        Self::default()
    }

    /// The model read `path` and saw `text`.
    pub fn record_read(&mut self, path: impl Into<PathBuf>, text: &str) {
        self.record(path, text, None);
    }

    /// The model read an open document at `version`.
    pub fn record_version(&mut self, path: impl Into<PathBuf>, text: &str, version: i32) {
        self.record(path, text, Some(version));
    }

    /// An edit the model made was written: the model knows the result.
    pub fn record_write(&mut self, path: impl Into<PathBuf>, text: &str) {
        self.record(path, text, None);
    }

    fn record(&mut self, path: impl Into<PathBuf>, text: &str, version: Option<i32>) {
        self.seen.insert(
            path.into(),
            Seen {
                hash: content_hash(text),
                version,
            },
        );
    }

    pub fn forget(&mut self, path: &Path) {
        self.seen.remove(path);
    }

    pub fn seen(&self, path: &Path) -> Option<Seen> {
        self.seen.get(path).copied()
    }

    /// Whether an edit to `path`, whose current text is `current`, may go ahead. `old` (the text
    /// the model wants to replace, if any) picks the region a stale refusal shows.
    pub fn check(&self, path: &Path, current: &str, old: Option<&str>) -> Result<(), Refusal> {
        let Some(seen) = self.seen.get(path) else {
            return Err(Refusal::new(
                RefusalKind::NotRead,
                format!(
                    "{} has not been read in this session; read the file first, then edit it with \
                     text copied from what you read",
                    path.display()
                ),
            ));
        };
        if seen.hash == content_hash(current) {
            return Ok(());
        }
        Err(stale(path, current, old))
    }
}

/// The refusal for a file that changed since it was read, with the current text of the region.
pub fn stale(path: &Path, current: &str, old: Option<&str>) -> Refusal {
    let file = FileIndex::new(current);
    let mut msg = format!(
        "{} changed since you read it; your copy is stale. Read it again and base the edit on the \
         current text",
        path.display()
    );
    if let Some(old) = old {
        let (old_lines, _) = text::snippet_lines(old);
        if let Some(start) = locate::closest_window(&file, &old_lines) {
            msg.push_str(&format!(
                ". The current text of the region you aimed at (lines {}-{}):\n",
                start + 1,
                (start + old_lines.len().max(1)).min(file.lines().len())
            ));
            msg.push_str(refusal::region_text(&file, start, old_lines.len().max(1)).trim_end());
        }
    }
    Refusal::new(RefusalKind::Stale, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_unread_and_changed_files() {
        let mut l = Ledger::new();
        let p = Path::new("src/a.rs");
        let err = l.check(p, "x", None).unwrap_err();
        assert_eq!(err.kind, RefusalKind::NotRead);
        l.record_read(p, "fn a() {}\nfn b() {}\n");
        assert!(l.check(p, "fn a() {}\nfn b() {}\n", None).is_ok());
        let err = l
            .check(p, "fn a() {}\nfn c() {}\n", Some("fn b() {}"))
            .unwrap_err();
        assert_eq!(err.kind, RefusalKind::Stale);
        assert!(err.message.contains("changed since you read it"), "{err}");
        assert!(err.message.contains("fn c() {}"), "{err}");
        l.record_write(p, "fn a() {}\nfn c() {}\n");
        assert!(l.check(p, "fn a() {}\nfn c() {}\n", None).is_ok());
    }
}
