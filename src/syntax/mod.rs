//! The syntax layer: tree-sitter parses kept in sync with documents, regions of a file a model
//! can work with inside a token budget, symbol lookup and replacement, and parse checks on edits.
//!
//! It exists because large files are where models lose context: a prompt must carry the right
//! part of a file, whole, with line numbers, instead of a truncated prefix. Pure: text and byte
//! offsets in, plain values out. It never does I/O, never knows protocol types and never panics
//! on bad input — unknown languages and broken code get line-based or best-effort answers.
//!
//! Map: [`tree`] (parse + incremental re-parse from [`TextEdit`](crate::document::change::TextEdit)s),
//! [`symbols`] (lookup, `replace_symbol`), [`regions`] (what a model is shown), [`checks`]
//! (errors an edit introduced), [`size`] (`[LARGE]` / `[MASSIVE]` tags), [`lines`] (1-based
//! `cat -n` numbering), [`language`] (grammar by languageId or extension), [`validate`] (whole
//! content checked as JSON, TOML, YAML or code before a write session applies it). Token counts come
//! from [`crate::tokens`].

pub mod checks;
pub mod language;
pub mod lines;
pub mod regions;
pub mod size;
pub mod symbols;
pub mod tree;
pub mod validate;

pub use checks::{ParseProblem, introduced_problems, introduced_problems_for_edit, parse_problems};
pub use language::Language;
pub use regions::{Outline, Region, RegionOptions, Target, extract_region, extract_region_in};
pub use size::{SizeThresholds, count_lines, size_tag};
pub use symbols::{Scope, Symbol, SymbolError, SymbolKind, find_symbol, replace_symbol, symbols};
pub use tree::{SyntaxTree, input_edits, point_at};

#[cfg(test)]
mod hostile_input_tests {
    //! Arbitrary text in every language through every entry point: nothing may panic, edits
    //! must fit the text, regions must respect the budget or say why not.

    use proptest::prelude::*;

    use super::*;
    use crate::syntax::regions::{RegionOptions, Target};
    use crate::syntax::symbols::{Scope, replacement_for};

    const PIECES: &[&str] = &[
        "fn a() {}\n",
        "impl X {\n",
        "}\n",
        "    fn m(&self) {}\n",
        "class C:\n",
        "    def f(self):\n",
        "        pass\n",
        "def g():\n",
        "function f(a) {",
        "export class K { m() {} }\n",
        "{\"k\": [1, {\"j\": 2}]}",
        "[t]\nk = 1\n",
        "package p\nfunc F() {}\n",
        "é",
        "✓\r\n",
        "\t",
        "\"",
        "'",
        "/*",
        "*/",
        "//",
        "#",
        "@dec\n",
        "#[attr]\n",
        "/// doc\n",
        "\r",
        "\n\n\n",
        "((((",
        "))",
        "<T>",
        "::",
        ".",
        "\u{feff}",
        "\u{2028}",
        "\0",
    ];

    fn text_from(picks: &[usize]) -> String {
        picks.iter().map(|&p| PIECES[p % PIECES.len()]).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn nothing_panics_and_budgets_hold(
            language in 0usize..9,
            picks in prop::collection::vec(0usize..1000, 0..80),
            line in 0usize..40,
            column in 0usize..30,
            budget in 0usize..700,
            threshold in 0usize..300,
            name in "[a-zA-Z:.<> ]{0,12}",
        ) {
            let language = Language::PARSED.get(language).copied().unwrap_or(Language::Text);
            let text = text_from(&picks);
            let tree = SyntaxTree::parse(&text, language);
            let all = symbols(&text, &tree, Scope::All);
            for symbol in &all {
                prop_assert!(symbol.full_range.start <= symbol.range.start);
                prop_assert!(symbol.range.end <= text.len());
                for new_text in ["", "x", "// c\nfn z() {\n  1\n}\n"] {
                    let r = replacement_for(&text, language, symbol, new_text);
                    let edit = crate::document::change::TextEdit::single(r);
                    prop_assert!(edit.apply(&text).is_ok());
                }
            }
            let _ = find_symbol(&all, &name);
            let _ = replace_symbol(&text, &tree, &name, "y");
            let _ = parse_problems(&text, &tree);
            let after = format!("{}{{", text);
            let _ = introduced_problems(language, &text, &after);
            let targets = [
                Target::None,
                Target::Position { line, column: Some(column) },
                Target::Lines { start: line, end: line + column },
                Target::Bytes(column..line * 7),
                Target::Symbol(name.clone()),
                Target::Query(format!("{name} fix it")),
            ];
            for target in &targets {
                let options = RegionOptions { budget, whole_file_bytes: threshold, ..RegionOptions::default() };
                let region = extract_region(&text, &tree, "f", target, &options);
                prop_assert!(
                    region.tokens <= budget || region.notes.iter().any(|n| n.contains("over the budget")),
                    "{} tokens over {}: {:?}", region.tokens, budget, region.text
                );
            }
        }
    }
}
