//! 100,000 small incremental edits (UTF-16 positions) on a 1 MB document through `Document`,
//! against the same edits on a bare `ropey::Rope` with precomputed char indices (the floor:
//! no position conversion, no validation). The goal: `Document` within 3× of the floor.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ropey::Rope;

use patchwise::document::{ContentChange, Document, Position, PositionEncoding, Span};

const EDITS: usize = 100_000;

fn corpus() -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 1 << 20 {
        text.push_str(&format!(
            "    let greeting_{n} = \"héllo wörld 😀\"; // 日本語 comment number {n:>8}\n"
        ));
        n += 1;
    }
    text
}

struct Edit {
    line: u32,
    utf16_col: u32,
    char_idx: usize,
    text: &'static str,
}

/// Same-length replacements of one ASCII character after the multi-byte prefix, so every
/// precomputed position stays valid while the text changes.
fn edits(text: &str) -> Vec<Edit> {
    let rope = Rope::from_str(text);
    let lines = rope.len_lines() - 1;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..EDITS)
        .map(|_| {
            let line = (next() % lines as u64) as usize;
            let line_text = rope.line(line).to_string();
            let after = line_text.find("comment").unwrap();
            let char_col = line_text[..after].chars().count() + (next() % 7) as usize;
            let utf16_col: usize = line_text.chars().take(char_col).map(char::len_utf16).sum();
            Edit {
                line: line as u32,
                utf16_col: utf16_col as u32,
                char_idx: rope.line_to_char(line) + char_col,
                text: ["x", "y", "z"][(next() % 3) as usize],
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let text = corpus();
    let edits = edits(&text);
    let doc = Document::new(&text, 0, "rust");
    let rope = Rope::from_str(&text);

    let mut group = c.benchmark_group("100k incremental edits on 1 MB");
    group.sample_size(10);
    group.throughput(Throughput::Elements(EDITS as u64));
    group.bench_function("ropey::Rope, precomputed char indices", |b| {
        b.iter_batched(
            || rope.clone(),
            |mut rope| {
                for e in &edits {
                    rope.remove(e.char_idx..e.char_idx + 1);
                    rope.insert(e.char_idx, e.text);
                }
                rope
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("Document, UTF-16 positions", |b| {
        b.iter_batched(
            || doc.clone(),
            |mut doc| {
                for (version, e) in edits.iter().enumerate() {
                    let start = Position::new(e.line, e.utf16_col);
                    let end = Position::new(e.line, e.utf16_col + 1);
                    let change = ContentChange {
                        range: Some(Span { start, end }),
                        text: e.text.to_owned(),
                    };
                    doc.apply_changes(version as i32 + 1, &[change], PositionEncoding::Utf16)
                        .unwrap();
                }
                doc
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
