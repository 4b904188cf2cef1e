//! The document model's position and change cases, one named test per case: each entry of
//! `fixtures/document/positions.json` and `fixtures/document/changes.json` is its own trial
//! (`cargo test --test document_fixtures -- positions::emoji_utf-16_after` runs one). Position
//! cases convert an LSP position to a byte offset in one encoding, with the problem reported
//! when the position had to be clamped, and back; change cases apply `didChange` content
//! changes and check the text, and that the reported replacements replay to the same text.

mod support;

use std::process::ExitCode;

use patchwise::document::change::TextEdit;
use patchwise::document::{
    ContentChange, Document, Position, PositionEncoding, PositionProblem, Span,
};
use serde::Deserialize;
use support::cases;

fn main() -> ExitCode {
    let root = support::fixture("document");
    let mut trials = cases::per_entry("positions", &root.join("positions.json"), check_position);
    trials.extend(cases::per_entry(
        "changes",
        &root.join("changes.json"),
        check_change,
    ));
    cases::main(trials)
}

fn encoding(name: &str) -> PositionEncoding {
    match name {
        "utf-8" => PositionEncoding::Utf8,
        "utf-16" => PositionEncoding::Utf16,
        "utf-32" => PositionEncoding::Utf32,
        other => panic!("unknown encoding {other:?} in fixture"),
    }
}

fn problem_kind(problem: &PositionProblem) -> &'static str {
    match problem {
        PositionProblem::LinePastEnd { .. } => "line-past-end",
        PositionProblem::ColumnPastLineEnd { .. } => "column-past-line-end",
        PositionProblem::InsideCharacter { .. } => "inside-character",
        PositionProblem::InvertedRange { .. } => "inverted-range",
    }
}

#[derive(Deserialize)]
struct PositionCase {
    text: String,
    encoding: String,
    position: (u32, u32),
    offset: usize,
    problem: Option<String>,
    /// The position the offset converts back to, when it differs from `position`.
    back: Option<(u32, u32)>,
}

fn check_position(case: PositionCase) {
    let doc = Document::new(&case.text, 0, "plaintext");
    let enc = encoding(&case.encoding);
    let pos = Position::new(case.position.0, case.position.1);
    let (offset, problem) = doc.offset(pos, enc);
    let problem = problem.as_ref().map(problem_kind);
    assert_eq!(
        (offset, problem),
        (case.offset, case.problem.as_deref()),
        "offset and problem"
    );
    let back = doc.position(offset, enc);
    let expected_back = case.back.unwrap_or(case.position);
    assert_eq!(
        (back.line, back.character),
        expected_back,
        "offset {offset} converts back to {back:?}"
    );
}

#[derive(Deserialize)]
struct ChangeCase {
    text: String,
    encoding: String,
    changes: Vec<ChangeJson>,
    expected: String,
}

#[derive(Deserialize)]
struct ChangeJson {
    range: Option<((u32, u32), (u32, u32))>,
    text: String,
}

fn check_change(case: ChangeCase) {
    let mut doc = Document::new(&case.text, 1, "plaintext");
    let changes: Vec<ContentChange> = case
        .changes
        .iter()
        .map(|c| ContentChange {
            range: c.range.map(|((sl, sc), (el, ec))| Span {
                start: Position::new(sl, sc),
                end: Position::new(el, ec),
            }),
            text: c.text.clone(),
        })
        .collect();
    let before = case.text.clone();
    let applied = doc
        .apply_changes(2, &changes, encoding(&case.encoding))
        .unwrap();
    assert_eq!(doc.text(), case.expected);
    // The reported replacements, applied in sequence, reproduce the same text.
    let replayed = applied.replacements.iter().fold(before, |text, r| {
        TextEdit::single(r.clone()).apply(&text).unwrap()
    });
    assert_eq!(
        replayed, case.expected,
        "the replacements replay to another text"
    );
    assert_eq!(doc.version, 2);
}
