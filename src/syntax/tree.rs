//! A parse of one document kept in sync with its edits.
//!
//! Every change arrives as the crate's one change type ([`TextEdit`], byte ranges against the
//! old text). Each replacement becomes a tree-sitter [`InputEdit`] with byte offsets *and*
//! row/column points, where a row is counted at each `\n` (tree-sitter's own definition, so CR-only
//! line ends do not start a row) and the column is a count of BYTES, not characters or UTF-16
//! units — getting either wrong silently corrupts every reused subtree. The tree is then re-parsed
//! incrementally. Never does I/O, never panics on bad input: an edit that does not fit the text is
//! refused with a [`ChangeError`] and the tree is left as it was.

use tree_sitter::{InputEdit, Node, Parser, Point, Tree};

use crate::document::change::{ChangeError, TextEdit};
use crate::syntax::language::Language;

/// Texts longer than this are not parsed (tree-sitter counts in `u32`, and a parse of a file this
/// size is no help in a prompt anyway); they get line-based behaviour like unknown languages.
pub const MAX_PARSE_BYTES: usize = 32 * 1024 * 1024;

/// A language and, when it has a grammar, the current parse of the document's text.
#[derive(Debug, Clone)]
pub struct SyntaxTree {
    language: Language,
    tree: Option<Tree>,
}

impl SyntaxTree {
    /// A fresh parse of `text`. Text languages, texts over [`MAX_PARSE_BYTES`] and grammars that
    /// fail to load give a tree-less value, which every consumer treats as plain lines.
    pub fn parse(text: &str, language: Language) -> SyntaxTree {
        let tree = parse_text(text, language, None);
        SyntaxTree { language, tree }
    }

    /// A value with no parse (line-based behaviour).
    pub fn text(language: Language) -> SyntaxTree {
        SyntaxTree {
            language,
            tree: None,
        }
    }

    pub fn language(&self) -> Language {
        self.language
    }

    pub fn tree(&self) -> Option<&Tree> {
        self.tree.as_ref()
    }

    pub fn root(&self) -> Option<Node<'_>> {
        self.tree.as_ref().map(Tree::root_node)
    }

    /// Whether the current parse contains ERROR or MISSING nodes.
    pub fn has_errors(&self) -> bool {
        self.root().is_some_and(|root| root.has_error())
    }

    /// Applies `edit` to `old_text` (the text this tree was parsed from), re-parses incrementally
    /// and returns the new text. On error neither the tree nor anything else changes.
    pub fn apply(&mut self, old_text: &str, edit: &TextEdit) -> Result<String, ChangeError> {
        let new_text = edit.apply(old_text)?;
        self.update(old_text, edit, &new_text)?;
        Ok(new_text)
    }

    /// Brings the tree from `old_text` to `new_text`, which must be `edit` applied to `old_text`
    /// (for callers that already applied the edit, e.g. to a rope). A `new_text` that does not
    /// match the edit is detected by length and answered with a fresh parse.
    pub fn update(
        &mut self,
        old_text: &str,
        edit: &TextEdit,
        new_text: &str,
    ) -> Result<(), ChangeError> {
        let edits = input_edits(old_text, edit)?;
        let grown: isize = edit
            .replacements()
            .iter()
            .map(|r| r.text.len() as isize - r.range.len() as isize)
            .sum();
        let consistent = old_text.len() as isize + grown == new_text.len() as isize;
        let old = match self.tree.take() {
            Some(mut tree) if consistent => {
                for input in &edits {
                    tree.edit(input);
                }
                Some(tree)
            }
            _ => None,
        };
        self.tree = parse_text(new_text, self.language, old.as_ref());
        Ok(())
    }
}

/// The tree-sitter edits for `edit` against `old_text`, in the order they must be given to
/// [`Tree::edit`]: last replacement first, so that every edit's coordinates are those of the
/// original text (nothing before it has moved yet).
pub fn input_edits(old_text: &str, edit: &TextEdit) -> Result<Vec<InputEdit>, ChangeError> {
    edit.check(old_text)?;
    let bytes = old_text.as_bytes();
    // One forward pass computes every point; rows and columns only ever grow.
    let mut cursor = 0;
    let mut point = Point::new(0, 0);
    let mut advance = |to: usize| -> Point {
        advance_point(&mut point, &bytes[cursor..to]);
        cursor = to;
        point
    };
    let mut edits = Vec::with_capacity(edit.replacements().len());
    for r in edit.replacements() {
        let start_position = advance(r.range.start);
        let old_end_position = advance(r.range.end);
        let mut new_end_position = start_position;
        advance_point(&mut new_end_position, r.text.as_bytes());
        edits.push(InputEdit {
            start_byte: r.range.start,
            old_end_byte: r.range.end,
            new_end_byte: r.range.start + r.text.len(),
            start_position,
            old_end_position,
            new_end_position,
        });
    }
    edits.reverse();
    Ok(edits)
}

/// The tree-sitter point of byte `offset` in `text` (row at each `\n`, column in bytes). Offsets
/// past the end are clamped to the end.
pub fn point_at(text: &str, offset: usize) -> Point {
    let bytes = &text.as_bytes()[..offset.min(text.len())];
    let mut point = Point::new(0, 0);
    advance_point(&mut point, bytes);
    point
}

fn advance_point(point: &mut Point, bytes: &[u8]) {
    match memchr::memrchr(b'\n', bytes) {
        Some(last) => {
            point.row += memchr::memchr_iter(b'\n', bytes).count();
            point.column = bytes.len() - last - 1;
        }
        None => point.column += bytes.len(),
    }
}

fn parse_text(text: &str, language: Language, old: Option<&Tree>) -> Option<Tree> {
    if text.len() > MAX_PARSE_BYTES {
        return None;
    }
    let grammar = language.grammar()?;
    let mut parser = Parser::new();
    parser.set_language(&grammar).ok()?;
    parser.parse(text, old)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::document::change::Replacement;

    /// Every node as (kind, byte range, start point, end point, missing), depth first: two trees
    /// with equal listings are the same parse.
    fn listing(tree: &SyntaxTree) -> Vec<String> {
        let mut out = Vec::new();
        let Some(root) = tree.root() else {
            return out;
        };
        let mut cursor = root.walk();
        loop {
            let node = cursor.node();
            out.push(format!(
                "{} {:?} {:?}-{:?}{}",
                node.kind(),
                node.byte_range(),
                node.start_position(),
                node.end_position(),
                if node.is_missing() { " missing" } else { "" }
            ));
            if cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return out;
                }
            }
        }
    }

    /// Every node's points agree with its byte offsets in `text`: wrong InputEdit points show up
    /// here as reused subtrees with stale rows or columns.
    fn assert_points_consistent(tree: &SyntaxTree, text: &str) {
        let Some(root) = tree.root() else { return };
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            assert_eq!(
                node.start_position(),
                point_at(text, node.start_byte()),
                "{} at {:?}",
                node.kind(),
                node.byte_range()
            );
            assert_eq!(node.end_position(), point_at(text, node.end_byte()));
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }

    #[test]
    fn points_count_rows_at_newlines_and_columns_in_bytes() {
        let text = "aé\r\nß✓x\rz";
        assert_eq!(point_at(text, 0), Point::new(0, 0));
        assert_eq!(point_at(text, 3), Point::new(0, 3));
        assert_eq!(point_at(text, 5), Point::new(1, 0));
        // ß is 2 bytes, ✓ is 3: column 5 at `x`.
        assert_eq!(point_at(text, 10), Point::new(1, 5));
        // A lone CR is not a row break for tree-sitter.
        assert_eq!(point_at(text, 12), Point::new(1, 7));
        assert_eq!(point_at(text, 999), point_at(text, text.len()));
    }

    #[test]
    fn builds_input_edits_with_byte_columns_last_first() {
        let old = "fn é() {}\nfn b() {}\n";
        let edit = TextEdit::new(vec![
            Replacement::new(3..5, "ab\ncd"),
            Replacement::new(13..14, "bbb"),
        ])
        .unwrap();
        let edits = input_edits(old, &edit).unwrap();
        assert_eq!(
            edits,
            vec![
                InputEdit {
                    start_byte: 13,
                    old_end_byte: 14,
                    new_end_byte: 16,
                    // `fn é() {}\n` is 11 bytes, so byte 13 is column 2 of row 1.
                    start_position: Point::new(1, 2),
                    old_end_position: Point::new(1, 3),
                    new_end_position: Point::new(1, 5),
                },
                InputEdit {
                    start_byte: 3,
                    old_end_byte: 5,
                    new_end_byte: 8,
                    start_position: Point::new(0, 3),
                    old_end_position: Point::new(0, 5),
                    new_end_position: Point::new(1, 2),
                },
            ]
        );
    }

    #[test]
    fn refuses_edits_that_do_not_fit_and_keeps_the_tree() {
        let text = "fn é() {}\n";
        let mut tree = SyntaxTree::parse(text, Language::Rust);
        let before = listing(&tree);
        let bad = TextEdit::single(Replacement::new(4..5, "x"));
        assert!(matches!(
            tree.apply(text, &bad),
            Err(ChangeError::NotCharBoundary { .. })
        ));
        let outside = TextEdit::single(Replacement::new(4..50, "x"));
        assert!(tree.apply(text, &outside).is_err());
        assert_eq!(listing(&tree), before);
    }

    #[test]
    fn mismatched_new_text_falls_back_to_a_fresh_parse() {
        let old = "fn a() {}\n";
        let mut tree = SyntaxTree::parse(old, Language::Rust);
        let edit = TextEdit::single(Replacement::insert(0, "// x\n"));
        let wrong = "struct S;\n";
        tree.update(old, &edit, wrong).unwrap();
        assert_eq!(
            listing(&tree),
            listing(&SyntaxTree::parse(wrong, Language::Rust))
        );
    }

    #[test]
    fn text_language_has_no_tree_and_still_applies_edits() {
        let mut tree = SyntaxTree::parse("hello", Language::Text);
        assert!(tree.root().is_none());
        let edit = TextEdit::single(Replacement::insert(5, " world"));
        assert_eq!(tree.apply("hello", &edit).unwrap(), "hello world");
        assert!(!tree.has_errors());
    }

    const SEED_RUST: &str = "//! Demo\nuse std::fmt;\n\n/// A point.\npub struct P { x: i32, y: i32 }\n\nimpl P {\n    pub fn new(x: i32) -> Self {\n        let s = \"héllo ✓\";\n        Self { x, y: s.len() as i32 }\n    }\n}\n\nfn main() {\n    let f = |a: i32| a + 1;\n    println!(\"{}\", f(2));\n}\n";
    const SEED_PY: &str = "import os\n\n@dataclass\nclass A:\n    \"\"\"Doc é.\"\"\"\n    def m(self, x):\n        return [x for x in range(3)]\n\ndef f():\n    pass\n";
    const SEED_TS: &str = "export function f(a: string): void;\nexport function f(a: number): void;\nexport function f(a: any) {\n  return a;\n}\nclass C { m(): number { return 1 } }\n";
    const SEED_GO: &str = "package p\n\n// S is a thing — ✓.\ntype S struct{ x int }\n\nfunc (s *S) M() int {\n\treturn s.x\n}\n";
    const SEED_JSON: &str = "{\"a\": [1, 2, {\"b\": \"é\"}], \"c\": null}\n";
    const SNIPPETS: &[&str] = &[
        "",
        "x",
        "\n",
        "é",
        "✓\n",
        "fn g() {}\n",
        "{",
        "}",
        "(",
        ")",
        ";",
        "    ",
        "\r\n",
        "\"",
        "let v = 1;",
        "def h():\n    return 1\n",
        "class Z:\n",
        "impl P {",
        "/* c */",
        "//",
        "# c\n",
        "ß",
    ];

    /// A random edit: a few non-overlapping replacements at char boundaries of `text`.
    fn random_edit(text: &str, picks: &[(usize, usize, usize)]) -> TextEdit {
        let boundaries: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(text.len()))
            .collect();
        let mut spans: Vec<(usize, usize)> = picks
            .iter()
            .map(|&(a, len, _)| {
                let start = boundaries[a % boundaries.len()];
                let end_index = (a % boundaries.len() + len % 6).min(boundaries.len() - 1);
                (start, boundaries[end_index])
            })
            .collect();
        spans.sort();
        let mut replacements = Vec::new();
        let mut last_end = 0;
        for ((start, end), &(_, _, s)) in spans.into_iter().zip(picks) {
            if start < last_end || (start == last_end && !replacements.is_empty()) {
                continue;
            }
            last_end = end;
            replacements.push(Replacement::new(start..end, SNIPPETS[s % SNIPPETS.len()]));
        }
        TextEdit::new(replacements).expect("spans were made disjoint")
    }

    /// The edit that takes `edit`'s result back to `old_text`.
    fn inverse(old_text: &str, edit: &TextEdit) -> TextEdit {
        let mut delta: isize = 0;
        let mut out = Vec::new();
        for r in edit.replacements() {
            let start = (r.range.start as isize + delta) as usize;
            out.push(Replacement::new(
                start..start + r.text.len(),
                &old_text[r.range.clone()],
            ));
            delta += r.text.len() as isize - r.range.len() as isize;
        }
        TextEdit::new(out).expect("inverse of a valid edit is valid")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// Random edits (mostly breaking the code), then the same edits undone one by one.
        /// Points must match bytes after every step; the trees must equal a fresh parse whenever
        /// the text parses without errors (error recovery may legitimately differ between an
        /// incremental and a fresh parse of broken code), and always once every edit is undone.
        #[test]
        fn incremental_tree_equals_fresh_parse(
            seed in 0usize..5,
            steps in prop::collection::vec(
                prop::collection::vec((0usize..10_000, 0usize..10_000, 0usize..10_000), 1..4),
                1..10,
            ),
        ) {
            let (original, language) = match seed {
                0 => (SEED_RUST, Language::Rust),
                1 => (SEED_PY, Language::Python),
                2 => (SEED_GO, Language::Go),
                3 => (SEED_JSON, Language::Json),
                _ => (SEED_TS, Language::TypeScript),
            };
            let mut text = original.to_string();
            let mut tree = SyntaxTree::parse(&text, language);
            prop_assert!(!tree.has_errors());
            let mut undo = Vec::new();
            let check = |tree: &SyntaxTree, text: &str| -> Result<(), TestCaseError> {
                assert_points_consistent(tree, text);
                let fresh = SyntaxTree::parse(text, language);
                if !fresh.has_errors() || !tree.has_errors() {
                    prop_assert_eq!(listing(tree), listing(&fresh), "text: {:?}", text);
                }
                Ok(())
            };
            for picks in &steps {
                let edit = random_edit(&text, picks);
                let new_text = tree.apply(&text, &edit).expect("random edits fit the text");
                undo.push(inverse(&text, &edit));
                text = new_text;
                check(&tree, &text)?;
            }
            while let Some(edit) = undo.pop() {
                text = tree.apply(&text, &edit).expect("undo fits the text");
                check(&tree, &text)?;
            }
            prop_assert_eq!(&text, original);
            prop_assert_eq!(listing(&tree), listing(&SyntaxTree::parse(original, language)));
        }
    }
}
