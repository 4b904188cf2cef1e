//! The replace cascade on arbitrary (file, OLD, NEW): never panics, and whatever it applies
//! changes only bytes inside the spans it reports.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchwise::edit::{self, ReplaceOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Fields separated by U+0001: file, OLD, NEW; a leading `A` asks for replace_all.
    let (all, text) = match text.strip_prefix('A') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let mut parts = text.splitn(3, '\u{1}');
    let (Some(file), Some(old), Some(new)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    if let Ok(applied) = edit::replace(file, old, new, ReplaceOptions { replace_all: all }) {
        let spans = &applied.located[0].spans;
        let lo = spans.iter().map(|s| s.start).min().unwrap_or(0);
        let hi = spans.iter().map(|s| s.end).max().unwrap_or(file.len());
        assert!(applied.text.starts_with(&file[..lo]));
        assert!(applied.text.ends_with(&file[hi..]));
        assert_ne!(applied.text, file, "an applied edit changed nothing");
        let _ = edit::unified_diff(file, &applied.text, "f");
    }
});
