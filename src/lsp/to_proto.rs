//! Core types → protocol types.

use tower_lsp_server::ls_types::PositionEncodingKind;

use crate::document::PositionEncoding;

pub fn position_encoding(encoding: PositionEncoding) -> PositionEncodingKind {
    match encoding {
        PositionEncoding::Utf8 => PositionEncodingKind::UTF8,
        PositionEncoding::Utf16 => PositionEncodingKind::UTF16,
        PositionEncoding::Utf32 => PositionEncodingKind::UTF32,
    }
}
