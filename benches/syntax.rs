//! Syntax benchmarks: a full tree-sitter parse of a 20k-line Rust file (goal ≤ 100 ms), an
//! incremental re-parse after a one-line edit (≤ 2 ms), region extraction on that file
//! (≤ 1 ms), against a baseline measured in the same run (indexing the file's lines, the least
//! any consumer does). Also prints the prompt size of a function-level edit in a 3,000-line file
//! as a share of the whole file.
//!
//! The corpus is the committed 5,187-line fixture `fixtures/syntax/rust/large.rs`, four copies
//! wrapped in modules (20.7k lines, realistic Rust rather than repeated lines).
//!
//! Completion shaping on a 10k-line file (two copies), per suggestion: the syntax side of the
//! block's end (a walk of the tokens around the cursor and an incremental re-parse with the
//! suggestion inserted) beside the one full parse a request already pays and the indentation
//! rule alone.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

use patchwise::complete::shape::{Cursor, shape};
use patchwise::document::change::{Replacement, TextEdit};
use patchwise::syntax::lines::LineIndex;
use patchwise::syntax::regions::{
    Outline, RegionOptions, Target, extract_region, extract_region_in,
};
use patchwise::syntax::symbols::{Scope, symbols};
use patchwise::syntax::{Language, SyntaxTree};
use patchwise::tokens::{Encoding, count_tokens};

const LARGE: &str = include_str!("../fixtures/syntax/rust/large.rs");

fn corpus_20k() -> String {
    corpus_copies(4)
}

fn corpus_copies(copies: usize) -> String {
    let mut text = String::new();
    for copy in 0..copies {
        text.push_str(&format!("pub mod copy_{copy} {{\n"));
        text.push_str(LARGE);
        text.push_str("}\n\n");
    }
    text
}

/// The fixture's first top-level items up to line 3,000: a realistic 3,000-line file.
fn corpus_3k() -> String {
    let tree = SyntaxTree::parse(LARGE, Language::Rust);
    let items = symbols(LARGE, &tree, Scope::Outline);
    let end = items
        .iter()
        .filter(|s| s.depth == 0 && s.lines.1 <= 3000)
        .map(|s| s.full_range.end)
        .max()
        .unwrap_or(LARGE.len());
    format!("{}\n", &LARGE[..end])
}

fn report_prompt_share() {
    let text = corpus_3k();
    let lines = LineIndex::new(&text).line_count();
    let tree = SyntaxTree::parse(&text, Language::Rust);
    let whole = count_tokens(&text, Encoding::Cl100k);
    let options = RegionOptions::default();
    let region = extract_region(
        &text,
        &tree,
        "ledger.rs",
        &Target::Symbol("Order::adjust".to_string()),
        &options,
    );
    println!(
        "prompt share: function-level edit (Order::adjust) in a {lines}-line file: {} of {whole} tokens = {:.1}% of the whole file ({} of {} bytes = {:.1}%), budget {}",
        region.tokens,
        100.0 * region.tokens as f64 / whole as f64,
        region.text.len(),
        text.len(),
        100.0 * region.text.len() as f64 / text.len() as f64,
        options.budget,
    );
}

fn benches(c: &mut Criterion) {
    report_prompt_share();
    let text = corpus_20k();
    println!(
        "corpus: {} lines, {} bytes",
        LineIndex::new(&text).line_count(),
        text.len()
    );

    c.bench_function("baseline: line index of the 20k-line file", |b| {
        b.iter(|| LineIndex::new(std::hint::black_box(&text)).line_count())
    });

    c.bench_function("full parse, 20k-line Rust", |b| {
        b.iter(|| SyntaxTree::parse(std::hint::black_box(&text), Language::Rust))
    });

    // One line in the middle of the file changes (`+=` becomes `-=`), then back.
    let tree = SyntaxTree::parse(&text, Language::Rust);
    let at = text.len() / 2
        + text[text.len() / 2..]
            .find("+= rounded")
            .expect("corpus has it");
    let edit = TextEdit::single(Replacement::new(at..at + 2, "-="));
    let edited = edit.apply(&text).expect("edit fits");
    c.bench_function(
        "incremental re-parse after a one-line edit, 20k-line Rust",
        |b| {
            b.iter_batched(
                || tree.clone(),
                |mut tree| {
                    tree.update(&text, &edit, &edited).expect("edit fits");
                    tree
                },
                BatchSize::SmallInput,
            )
        },
    );

    let prompt: String = text.chars().take(16_000).collect();
    c.bench_function(
        "tokens: count 16 KB of Rust (about a 4,000-token prompt)",
        |b| b.iter(|| count_tokens(std::hint::black_box(&prompt), Encoding::Cl100k)),
    );
    c.bench_function("outline (once per document version), 20k-line Rust", |b| {
        b.iter(|| Outline::new(&text, &tree))
    });

    let line = LineIndex::new(&text).line_of(at) + 1;
    let options = RegionOptions::default();
    let outline = Outline::new(&text, &tree);
    let cursor = Target::Position { line, column: None };
    let symbol = Target::Symbol("copy_2::Escrow::parse_escrow".to_string());
    c.bench_function(
        "region extraction at a cursor, outline reused, 20k-line Rust",
        |b| b.iter(|| extract_region_in(&outline, &text, &tree, "large.rs", &cursor, &options)),
    );
    c.bench_function(
        "region extraction for a symbol, outline reused, 20k-line Rust",
        |b| b.iter(|| extract_region_in(&outline, &text, &tree, "large.rs", &symbol, &options)),
    );
    c.bench_function(
        "region extraction at a cursor, from scratch, 20k-line Rust",
        |b| b.iter(|| extract_region(&text, &tree, "large.rs", &cursor, &options)),
    );
}

fn shaping(c: &mut Criterion) {
    let text = corpus_copies(2);
    println!(
        "shaping corpus: {} lines",
        LineIndex::new(&text).line_count()
    );
    // The cursor at the end of a method's first line in the second copy; the model writes a
    // body, closes the method again and writes the next one.
    let header = "pub fn adjust(&mut self, percent: i64) {";
    let offset = text.rfind(header).expect("corpus has it") + header.len();
    let raw = "\n        let delta = self.amount_cents * percent / 100;\n        self.amount_cents += delta;\n    }\n\n    /// Marks the entry as posted.\n    pub fn post(&mut self) -> Result<(), LedgerError> {\n        self.posted = true;\n        Ok(())\n    }\n";
    let tree = SyntaxTree::parse(&text, Language::Rust);
    let cursor = |syntax: bool| Cursor::in_document(&text, offset, true, syntax.then_some(&tree));
    assert_eq!(
        shape(raw, cursor(true)).as_deref(),
        Some(
            "\n        let delta = self.amount_cents * percent / 100;\n        self.amount_cents += delta;"
        )
    );
    c.bench_function("full parse, 10k-line Rust (once per request)", |b| {
        b.iter(|| SyntaxTree::parse(std::hint::black_box(&text), Language::Rust))
    });
    c.bench_function("shaping, indentation only, 10k-line Rust", |b| {
        b.iter(|| shape(std::hint::black_box(raw), cursor(false)))
    });
    c.bench_function("shaping with the syntax side, 10k-line Rust", |b| {
        b.iter(|| shape(std::hint::black_box(raw), cursor(true)))
    });
}

criterion_group! {
    name = syntax;
    config = Criterion::default().sample_size(20);
    targets = benches, shaping
}
criterion_main!(syntax);
