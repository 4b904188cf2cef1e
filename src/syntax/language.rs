//! Which grammar a document gets: chosen by the client's LSP `languageId`, else by the file
//! extension; anything else is [`Language::Text`] and handled line by line, never an error.

use std::fmt;

/// A language the syntax layer knows, or plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
    Json,
    Toml,
    /// No grammar: regions, outlines and checks fall back to line-based behaviour.
    Text,
}

impl Language {
    /// Every language with a grammar, in a stable order (for tests and listings).
    pub const PARSED: [Language; 8] = [
        Language::Rust,
        Language::Python,
        Language::TypeScript,
        Language::Tsx,
        Language::JavaScript,
        Language::Go,
        Language::Json,
        Language::Toml,
    ];

    /// The language for an LSP `languageId` (as VS Code and Neovim send them); `None` when the
    /// id is unknown, so the caller can try the extension next.
    pub fn from_language_id(id: &str) -> Option<Language> {
        let lang = match id.trim().to_ascii_lowercase().as_str() {
            "rust" => Language::Rust,
            "python" | "python3" => Language::Python,
            "typescript" | "ts" => Language::TypeScript,
            "typescriptreact" | "tsx" => Language::Tsx,
            "javascript" | "javascriptreact" | "js" | "jsx" => Language::JavaScript,
            "go" => Language::Go,
            "json" | "jsonc" | "jsonl" => Language::Json,
            "toml" => Language::Toml,
            "plaintext" | "text" => Language::Text,
            _ => return None,
        };
        Some(lang)
    }

    /// The language for a path or file name, by extension (and a few well-known names).
    pub fn from_path(path: &str) -> Option<Language> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        if name == "Cargo.lock" || name == "Pipfile" || name == "poetry.lock" {
            return Some(Language::Toml);
        }
        let (_, ext) = name.rsplit_once('.')?;
        let lang = match ext.to_ascii_lowercase().as_str() {
            "rs" => Language::Rust,
            "py" | "pyi" | "pyw" => Language::Python,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "go" => Language::Go,
            "json" | "jsonc" | "json5" => Language::Json,
            "toml" => Language::Toml,
            "txt" | "text" => Language::Text,
            _ => return None,
        };
        Some(lang)
    }

    /// The language id wins; the extension decides when the id is missing or unknown; text
    /// otherwise.
    pub fn detect(language_id: Option<&str>, path: Option<&str>) -> Language {
        language_id
            .and_then(Language::from_language_id)
            .or_else(|| path.and_then(Language::from_path))
            .unwrap_or(Language::Text)
    }

    /// The LSP `languageId` spelling, also used in listings.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::TypeScript => "typescript",
            Language::Tsx => "typescriptreact",
            Language::JavaScript => "javascript",
            Language::Go => "go",
            Language::Json => "json",
            Language::Toml => "toml",
            Language::Text => "plaintext",
        }
    }

    /// Whether this language has a grammar.
    pub fn is_parsed(self) -> bool {
        self != Language::Text
    }

    /// The tree-sitter grammar, `None` for text.
    pub fn grammar(self) -> Option<tree_sitter::Language> {
        let lang = match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::Json => tree_sitter_json::LANGUAGE.into(),
            Language::Toml => tree_sitter_toml_ng::LANGUAGE.into(),
            Language::Text => return None,
        };
        Some(lang)
    }

    /// The separator of qualified names (`Type::method`, `Class.method`).
    pub fn path_separator(self) -> &'static str {
        match self {
            Language::Rust => "::",
            _ => ".",
        }
    }

    /// Prefixes of a line comment, used to recognise instruction and doc comments.
    pub fn line_comment(self) -> Option<&'static str> {
        match self {
            Language::Rust
            | Language::TypeScript
            | Language::Tsx
            | Language::JavaScript
            | Language::Go => Some("//"),
            Language::Python | Language::Toml => Some("#"),
            Language::Json | Language::Text => None,
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_id_wins_over_extension() {
        assert_eq!(
            Language::detect(Some("python"), Some("x.rs")),
            Language::Python
        );
        assert_eq!(
            Language::detect(Some("cobol"), Some("src/x.rs")),
            Language::Rust
        );
        assert_eq!(
            Language::detect(None, Some("C:\\a\\App.TSX")),
            Language::Tsx
        );
        assert_eq!(Language::detect(None, Some("README")), Language::Text);
        assert_eq!(Language::detect(None, Some("notes.md")), Language::Text);
        assert_eq!(Language::detect(None, None), Language::Text);
        assert_eq!(
            Language::detect(Some("typescriptreact"), None),
            Language::Tsx
        );
    }

    #[test]
    fn every_grammar_loads_into_a_parser() {
        for lang in Language::PARSED {
            let grammar = lang.grammar().expect("parsed languages have grammars");
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&grammar)
                .unwrap_or_else(|e| panic!("{lang}: {e}"));
            assert!(parser.parse("", None).is_some(), "{lang}");
        }
        assert!(Language::Text.grammar().is_none());
    }
}
