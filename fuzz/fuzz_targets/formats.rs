//! The model edit-format parsers on arbitrary text: never panic; every parsed replace is then
//! run through the engine against the same text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchwise::edit::formats::{self, Action};
use patchwise::edit::{self, Operation};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for parse in [
        formats::parse,
        formats::parse_search_replace,
        formats::parse_old_new,
        formats::parse_unified_diff,
        formats::parse_patch,
    ] {
        if let Ok(edits) = parse(text) {
            for e in edits {
                if let Action::Edit(op @ Operation::Replace { .. }) = e.action {
                    let _ = edit::apply(text, &op);
                }
            }
        }
    }
});
