//! Line, pattern and anchor operations and batches with arbitrary arguments: never panic, and
//! a batch is all or nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchwise::edit::{self, Operation};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.splitn(4, '\u{1}');
    let (Some(file), Some(a), Some(b)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let n = a.len() % 64;
    let m = b.len() % 64;
    let ops = vec![
        Operation::InsertAfterLine { line: n, text: b.into() },
        Operation::InsertBeforeLine { line: m, text: a.into() },
        Operation::ReplaceLines { start: n, end: m, text: b.into() },
        Operation::ReplacePattern { pattern: a.into(), replacement: b.into(), all: n % 2 == 0 },
        Operation::Prepend { text: a.into() },
        Operation::Append { text: b.into() },
        Operation::InsertAfter { anchor: a.into(), text: b.into() },
        Operation::InsertBefore { anchor: b.into(), text: a.into() },
        Operation::Replace { old: a.into(), new: b.into(), replace_all: m % 2 == 0 },
    ];
    for op in &ops {
        let _ = edit::apply(file, op);
    }
    if let Ok(applied) = edit::apply_batch(file, &ops[..3]) {
        assert_eq!(applied.located.len(), 3);
    }
});
