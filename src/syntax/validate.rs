//! Whole-content checks before streamed content joins a run's working copy (a write session,
//! `docs/editing.md`): is it valid JSON, TOML or YAML, does code parse with tree-sitter, and does
//! code stop inside an unclosed block. Every problem carries a 1-based line and column, so the
//! model can fix exactly that place.
//!
//! Pure: text in, problems out; never panics, never does I/O. Formats it does not know have no
//! problems.

use std::fmt;

use serde::Deserialize;

use super::checks::parse_problems;
use super::language::Language;
use super::tree::SyntaxTree;

/// One problem found in content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// 1-based line.
    pub line: usize,
    /// 1-based column in characters.
    pub column: usize,
    pub message: String,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// The format content is checked as, chosen by the file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    /// JSON with comments (`.jsonc`, `tsconfig.json`, VS Code settings): checked by tree-sitter.
    JsonWithComments,
    Toml,
    Yaml,
    /// Code in a language tree-sitter parses.
    Code(Language),
}

impl Format {
    /// The format of `path` (`None`: not checked).
    pub fn of(path: &str) -> Option<Format> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let lower = name.to_ascii_lowercase();
        let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let jsonc = ext == "jsonc"
            || ext == "json5"
            || lower.starts_with("tsconfig")
            || lower.starts_with("jsconfig")
            || path.contains(".vscode/")
            || lower == "devcontainer.json";
        match ext {
            "json" | "jsonc" | "json5" if jsonc => Some(Format::JsonWithComments),
            "json" => Some(Format::Json),
            "yaml" | "yml" => Some(Format::Yaml),
            "toml" => Some(Format::Toml),
            _ => match Language::from_path(name) {
                Some(Language::Toml) => Some(Format::Toml),
                Some(Language::Text) | None => None,
                Some(l) => Some(Format::Code(l)),
            },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::JsonWithComments => "JSON (with comments)",
            Format::Toml => "TOML",
            Format::Yaml => "YAML",
            Format::Code(l) => l.name(),
        }
    }
}

/// Parses `text` as `format`; the problems found (empty: valid). At most five.
pub fn validate(format: Format, text: &str) -> Vec<Invalid> {
    match format {
        Format::Json => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(_) => Vec::new(),
            Err(e) => vec![Invalid {
                line: e.line().max(1),
                column: e.column().max(1),
                message: strip_position(&e.to_string()),
            }],
        },
        Format::Toml => match text.parse::<toml::Table>() {
            Ok(_) => Vec::new(),
            Err(e) => {
                let (line, column) = e
                    .span()
                    .map(|s| line_column(text, s.start))
                    .unwrap_or((1, 1));
                vec![Invalid {
                    line,
                    column,
                    message: e.message().trim().to_owned(),
                }]
            }
        },
        Format::Yaml => yaml(text),
        Format::JsonWithComments => tree_problems(Language::Json, text),
        Format::Code(language) => tree_problems(language, text),
    }
}

fn yaml(text: &str) -> Vec<Invalid> {
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        if let Err(e) = serde_yaml_ng::Value::deserialize(doc) {
            let (line, column) = e
                .location()
                .map(|l| (l.line().max(1), l.column().max(1)))
                .unwrap_or((1, 1));
            return vec![Invalid {
                line,
                column,
                message: strip_position(&e.to_string()),
            }];
        }
    }
    Vec::new()
}

fn tree_problems(language: Language, text: &str) -> Vec<Invalid> {
    let tree = SyntaxTree::parse(text, language);
    parse_problems(text, &tree)
        .into_iter()
        .take(5)
        .map(|p| Invalid {
            line: p.line,
            column: p.column,
            message: match &p.missing {
                Some(kind) => format!("missing `{kind}` (in `{}`)", p.excerpt),
                None => format!("syntax error at `{}`", p.excerpt),
            },
        })
        .collect()
}

/// Where content stops inside something unfinished: a problem on its last lines, or (for code)
/// a tree-sitter error that runs to the end of the text — a block never closed, a statement cut
/// short. A sentence for the model, or `None`.
pub fn unfinished_end(format: Format, text: &str) -> Option<String> {
    let end = text.trim_end().len();
    let last = text[..end].lines().count();
    if last == 0 {
        return None;
    }
    let language = match format {
        Format::Code(l) => Some(l),
        Format::JsonWithComments => Some(Language::Json),
        _ => None,
    };
    if let Some(language) = language {
        let tree = SyntaxTree::parse(text, language);
        let problem = parse_problems(text, &tree)
            .into_iter()
            .find(|p| p.range.end >= end || p.line + 2 >= last)?;
        return Some(if problem.range.end >= end && problem.line + 2 < last {
            format!(
                "the code ends inside an unclosed block: what starts at line {} (`{}`) is never \
                 finished",
                problem.line, problem.excerpt
            )
        } else {
            format!("the code ends inside an unfinished block or statement ({problem})")
        });
    }
    // Data formats: only an error at the very end (the parser ran out of text) means cut short;
    // anything earlier is invalid content, reported by `validate`.
    let problem = match format {
        Format::Json => match serde_json::from_str::<serde_json::Value>(text) {
            Err(e) if e.is_eof() => Some(format!(
                "line {}: {}",
                e.line(),
                strip_position(&e.to_string())
            )),
            _ => None,
        },
        Format::Yaml => serde_yaml_ng::Deserializer::from_str(text)
            .find_map(|doc| serde_yaml_ng::Value::deserialize(doc).err())
            .filter(|e| e.location().is_some_and(|l| l.index() >= end))
            .map(|e| strip_position(&e.to_string())),
        _ => None,
    }?;
    Some(format!(
        "it ends inside unfinished {} ({problem})",
        format.name()
    ))
}

/// Messages of serde parsers end with "at line L column C"; the position is given separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// 1-based line and character column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(1, |l| l.chars().count() + 1);
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_name() {
        assert_eq!(Format::of("a/b.json"), Some(Format::Json));
        assert_eq!(Format::of("tsconfig.json"), Some(Format::JsonWithComments));
        assert_eq!(
            Format::of(".vscode/settings.json"),
            Some(Format::JsonWithComments)
        );
        assert_eq!(Format::of(".github/workflows/ci.yml"), Some(Format::Yaml));
        assert_eq!(Format::of("Cargo.toml"), Some(Format::Toml));
        assert_eq!(Format::of("Cargo.lock"), Some(Format::Toml));
        assert_eq!(Format::of("src/x.rs"), Some(Format::Code(Language::Rust)));
        assert_eq!(Format::of("README.md"), None);
        assert_eq!(Format::of("notes.txt"), None);
    }

    #[test]
    fn problems_have_a_line_and_column() {
        let p = validate(Format::Json, "{\n  \"a\": 1,\n  \"b\" 2\n}\n");
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].line, p[0].column), (3, 7));
        assert!(p[0].message.contains("expected `:`"), "{}", p[0]);
        assert!(validate(Format::Json, "{\"a\": [1, 2]}").is_empty());

        let p = validate(Format::Toml, "[a]\nx = 1\ny = \n");
        assert_eq!(p[0].line, 3, "{p:?}");
        assert!(validate(Format::Toml, "[a]\nx = 1\n").is_empty());

        let p = validate(
            Format::Yaml,
            "on:\n  push:\njobs:\n  build:\n    steps: [a, b\n",
        );
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].line >= 5, "{p:?}");
        assert!(validate(Format::Yaml, "a: 1\n---\nb: [1, 2]\n").is_empty());
        let p = validate(Format::Yaml, "a: 1\n  b: 2\n");
        assert_eq!(p[0].line, 2, "{p:?}");

        let p = validate(Format::Code(Language::Rust), "fn a() {\n    let x = ;\n}\n");
        assert_eq!(p[0].line, 2, "{p:?}");
        assert!(validate(Format::JsonWithComments, "{\n  // c\n  \"a\": 1\n}\n").is_empty());
    }

    #[test]
    fn code_cut_inside_a_block_is_unfinished() {
        let rust = "fn a() {\n    let x = 1;\n    if x > 0 {\n        x\n";
        let msg = unfinished_end(Format::Code(Language::Rust), rust).unwrap();
        assert!(msg.contains("unclosed block"), "{msg}");
        assert!(unfinished_end(Format::Code(Language::Rust), "fn a() {}\n").is_none());
        // An error far from the end is invalid, not unfinished.
        let early = "fn a( {}\n\nfn b() {}\n\nfn c() {}\n\nfn d() {}\n";
        assert!(unfinished_end(Format::Code(Language::Rust), early).is_none());
        assert!(unfinished_end(Format::Json, "{\"a\": [1,\n").is_some());
        assert!(unfinished_end(Format::Yaml, "").is_none());
    }
}
