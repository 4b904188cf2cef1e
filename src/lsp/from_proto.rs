//! Protocol types → core types.

use tower_lsp_server::ls_types::{self as lsp, PositionEncodingKind};

use crate::document::{ContentChange, Position, PositionEncoding, Span};

pub fn position(p: lsp::Position) -> Position {
    Position::new(p.line, p.character)
}

pub fn span(r: lsp::Range) -> Span {
    Span {
        start: position(r.start),
        end: position(r.end),
    }
}

pub fn content_change(c: lsp::TextDocumentContentChangeEvent) -> ContentChange {
    ContentChange {
        range: c.range.map(span),
        text: c.text,
    }
}

/// Picks the position encoding from what the client offers: UTF-8 when offered (no conversion
/// at all), else UTF-16 (every client must support it), except that a client offering UTF-32
/// but not UTF-16 gets UTF-32.
pub fn negotiate_encoding(offered: Option<&[PositionEncodingKind]>) -> PositionEncoding {
    let offered = offered.unwrap_or_default();
    let has = |kind: &PositionEncodingKind| offered.iter().any(|k| k == kind);
    if has(&PositionEncodingKind::UTF8) {
        PositionEncoding::Utf8
    } else if has(&PositionEncodingKind::UTF32) && !has(&PositionEncodingKind::UTF16) {
        PositionEncoding::Utf32
    } else {
        PositionEncoding::Utf16
    }
}

/// The file path of a `file:` URI. Other schemes (`untitled:`, `git:`, …) have no path, even
/// where `Uri::to_file_path` would make one up from the URI's path part.
pub fn file_path(uri: &lsp::Uri) -> Option<std::path::PathBuf> {
    if !uri.scheme().as_str().eq_ignore_ascii_case("file") {
        return None;
    }
    uri.to_file_path().map(|p| p.into_owned())
}
