//! The document model's edge cases and a property test against a plain `String`. The
//! data-driven position and change cases of `fixtures/document/` run one named test each in
//! `tests/document_fixtures.rs`.

use proptest::prelude::*;

use super::*;

#[test]
fn older_versions_are_refused_and_change_nothing() {
    let mut doc = Document::new("abc", 5, "rust");
    let change = ContentChange {
        range: None,
        text: "zzz".into(),
    };
    let err = doc
        .apply_changes(4, &[change], PositionEncoding::Utf16)
        .unwrap_err();
    assert_eq!(
        err,
        StaleVersion {
            current: 5,
            received: 4
        }
    );
    assert_eq!(doc.text(), "abc");
    assert_eq!(doc.version, 5);
}

#[test]
fn line_endings_are_detected_and_mixing_is_noticed() {
    assert_eq!(LineEndings::detect("a\r\nb\r\n").dominant, LineEnding::CrLf);
    assert!(!LineEndings::detect("a\r\nb\r\n").mixed);
    assert!(LineEndings::detect("a\r\nb\n").mixed);
    assert_eq!(LineEndings::detect("no breaks").dominant, LineEnding::Lf);
    let mut doc = Document::new("a\r\nb\r\n", 1, "rust");
    let change = ContentChange {
        range: Some(Span {
            start: Position::new(2, 0),
            end: Position::new(2, 0),
        }),
        text: "c\n".into(),
    };
    doc.apply_changes(2, &[change], PositionEncoding::Utf16)
        .unwrap();
    assert_eq!(doc.text(), "a\r\nb\r\nc\n");
    assert!(doc.line_endings.mixed);
}

// ---- property test: the Document agrees with a plain String ----

/// Positions computed independently of ropey: LSP lines end at LF, CRLF or a lone CR.
fn model_position(text: &str, offset: usize, encoding: PositionEncoding) -> Position {
    let mut line = 0;
    let mut line_start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < offset {
        match bytes[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                if i + 1 < offset {
                    line += 1;
                    line_start = i + 2;
                }
                i += 1;
            }
            b'\r' => {
                line += 1;
                line_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let prefix = &text[line_start..offset];
    let character = match encoding {
        PositionEncoding::Utf8 => prefix.len(),
        PositionEncoding::Utf16 => prefix.chars().map(char::len_utf16).sum(),
        PositionEncoding::Utf32 => prefix.chars().count(),
    };
    Position::new(line as u32, character as u32)
}

/// Offsets a client can name: char boundaries that are not between the CR and LF of a CRLF.
fn nameable_offsets(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .filter(|&i| !(i > 0 && bytes[i - 1] == b'\r' && bytes.get(i) == Some(&b'\n')))
        .collect()
}

fn piece() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "Z",
            " ",
            "\t",
            "\n",
            "\r\n",
            "\r",
            "é",
            "e\u{301}",
            "日本",
            "😀",
            "👨‍👩‍👧",
            "\u{2028}",
            "{",
        ]),
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

#[derive(Debug, Clone)]
struct Edit {
    start: prop::sample::Index,
    len: prop::sample::Index,
    text: String,
    encoding: PositionEncoding,
}

fn edit() -> impl Strategy<Value = Edit> {
    (
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        piece(),
        prop::sample::select(vec![
            PositionEncoding::Utf8,
            PositionEncoding::Utf16,
            PositionEncoding::Utf32,
        ]),
    )
        .prop_map(|(start, len, text, encoding)| Edit {
            start,
            len,
            text,
            encoding,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn incremental_edits_match_a_string_model(
        initial in piece(),
        edits in prop::collection::vec(edit(), 1..40),
    ) {
        let mut model = initial.clone();
        let mut doc = Document::new(&initial, 0, "plaintext");
        for (version, e) in edits.iter().enumerate() {
            let offsets = nameable_offsets(&model);
            let start_i = e.start.index(offsets.len());
            let end_i = start_i + e.len.index((offsets.len() - start_i).min(8));
            let (start, end) = (offsets[start_i], offsets[end_i]);
            let span = Span {
                start: model_position(&model, start, e.encoding),
                end: model_position(&model, end, e.encoding),
            };
            model.replace_range(start..end, &e.text);
            let change = ContentChange { range: Some(span), text: e.text.clone() };
            let applied = doc.apply_changes(version as i32 + 1, &[change], e.encoding).unwrap();
            prop_assert!(applied.problems.is_empty(), "{:?}", applied.problems);
            prop_assert_eq!(&applied.replacements[0].range, &(start..end));
            prop_assert_eq!(doc.text(), model.clone());
        }
        // Every nameable offset converts to a position and back in every encoding.
        for offset in nameable_offsets(&model) {
            for enc in [PositionEncoding::Utf8, PositionEncoding::Utf16, PositionEncoding::Utf32] {
                let pos = doc.position(offset, enc);
                prop_assert_eq!(pos, model_position(&model, offset, enc));
                prop_assert_eq!(doc.offset(pos, enc), (offset, None));
            }
        }
    }

    #[test]
    fn arbitrary_positions_never_panic(
        text in piece(),
        line in any::<u32>(), character in any::<u32>(),
        small_line in 0u32..4, small_char in 0u32..12,
    ) {
        let doc = Document::new(&text, 0, "plaintext");
        for enc in [PositionEncoding::Utf8, PositionEncoding::Utf16, PositionEncoding::Utf32] {
            for pos in [Position::new(line, character), Position::new(small_line, small_char)] {
                let (offset, _) = doc.offset(pos, enc);
                prop_assert!(offset <= text.len() && text.is_char_boundary(offset));
            }
        }
    }
}

/// Large documents span many rope chunks, so line lookups take both the one-chunk fast path
/// and the slow path; both must agree with a plain scan of the text.
#[test]
fn positions_agree_with_a_plain_scan_across_rope_chunks() {
    let pieces = [
        "fn a() {}",
        "é😀日本",
        "\t",
        "x",
        "e\u{301}",
        "",
        "long line of ascii text ",
    ];
    let endings = ["\n", "\r\n", "\r"];
    let mut text = String::new();
    let mut state = 17u64;
    while text.len() < 60_000 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let repeat = (state >> 33) as usize % 90;
        for i in 0..repeat {
            text.push_str(pieces[(i + (state as usize >> 7)) % pieces.len()]);
        }
        text.push_str(endings[(state >> 40) as usize % endings.len()]);
    }
    let mut doc = Document::new(&text, 0, "plaintext");
    // Edits first, so the rope's chunks are no longer the ones a fresh load makes.
    for i in 0..200u32 {
        let line = i * 37 % 1000;
        let change = ContentChange {
            range: Some(Span {
                start: Position::new(line, 0),
                end: Position::new(line, 0),
            }),
            text: "😀\r\n".into(),
        };
        doc.apply_changes(i as i32 + 1, &[change], PositionEncoding::Utf16)
            .unwrap();
    }
    let text = doc.text();
    let mut checked = 0;
    for offset in nameable_offsets(&text).into_iter().step_by(5) {
        for enc in [
            PositionEncoding::Utf8,
            PositionEncoding::Utf16,
            PositionEncoding::Utf32,
        ] {
            let pos = model_position(&text, offset, enc);
            assert_eq!(doc.offset(pos, enc), (offset, None), "{pos:?} {enc}");
            checked += 1;
        }
    }
    assert!(checked > 10_000);
}
