//! What a rewrite rewrites: the selection's whole lines, or the item (function, method, class)
//! that encloses the selection or the cursor — the unit a small model rewrites well in one
//! answer. Also the short context that goes with it (the signatures of the items around it) and
//! the line where an insertion into it most likely goes.
//!
//! Pure: computed from the text and its syntax tree, no I/O.

use std::ops::Range;

use crate::syntax::{Language, Scope, Symbol, SymbolKind, SyntaxTree, symbols};

/// The lines an edit is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditTarget {
    /// First and last line, 1-based, inclusive.
    pub first: usize,
    pub last: usize,
    /// How the prompt names it: "function `mid`", "lines 12-30".
    pub label: String,
    /// The item's own name when the target is an item (`mid`).
    pub name: Option<String>,
    /// Signatures of the items around the target, outermost first (`class Parser:`).
    pub context: Vec<String>,
    /// The whole lines of the selection (the user's own range), 1-based inclusive.
    pub selection: Option<(usize, usize)>,
}

impl EditTarget {
    /// The target's text (whole lines, with their line breaks).
    pub fn text<'t>(&self, text: &'t str) -> &'t str {
        let r = crate::workflow::edit::lines_to_bytes(text, self.first, self.last);
        &text[r]
    }
}

/// 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The target for a byte `range` of `text`: the innermost item that contains the selection
/// (or the cursor) when the selection lies inside one and the item has at most `max_lines`
/// lines; otherwise the selection's whole lines. `None` for a cursor outside every item, or an
/// empty file.
pub fn resolve(
    text: &str,
    range: &Range<usize>,
    language: Language,
    max_lines: usize,
) -> Option<EditTarget> {
    if text.is_empty() {
        return None;
    }
    let total = text.lines().count().max(1);
    let cursor = range.is_empty();
    let sel_first = line_of(text, range.start);
    // A selection ending at the start of a line does not include that line.
    let end_offset = if !cursor && text[..range.end.min(text.len())].ends_with('\n') {
        range.end - 1
    } else {
        range.end
    };
    let sel_last = line_of(text, end_offset.max(range.start)).clamp(sel_first, total);
    let tree = SyntaxTree::parse(text, language);
    let all = symbols(text, &tree, Scope::Outline);
    // The innermost item whose lines contain the selection (ties: the later, deeper one).
    let enclosing = all
        .iter()
        .enumerate()
        .filter(|(_, s)| s.lines.0 <= sel_first && sel_last <= s.lines.1)
        .max_by_key(|(_, s)| (s.depth, s.lines.0))
        .map(|(i, _)| i);
    let selection = (!cursor).then_some((sel_first, sel_last));
    if let Some(i) = enclosing {
        let s = &all[i];
        let (first, last) = s.lines;
        let inside = cursor
            || first < sel_first
            || sel_last < last
            || (first, last) == (sel_first, sel_last);
        if inside && last + 1 - first <= max_lines {
            return Some(EditTarget {
                selection,
                ..item(&all, i)
            });
        }
    }
    if cursor {
        return None;
    }
    Some(EditTarget {
        first: sel_first,
        last: sel_last,
        label: if sel_first == sel_last {
            format!("line {sel_first}")
        } else {
            format!("lines {sel_first}-{sel_last}")
        },
        name: None,
        context: enclosing.map_or_else(Vec::new, |i| containers(&all, i)),
        selection,
    })
}

/// Item `i` of `all` as a target: its lines, its kind and name, the signatures around it.
fn item(all: &[Symbol], i: usize) -> EditTarget {
    let s = &all[i];
    EditTarget {
        first: s.lines.0,
        last: s.lines.1,
        label: format!(
            "{} `{}`",
            match s.kind {
                SymbolKind::Function => "function",
                other => other.label(),
            },
            s.name
        ),
        name: Some(s.name.clone()),
        context: containers(all, i),
        selection: None,
    }
}

/// The signatures of the items that contain item `i`, outermost first.
fn containers(all: &[Symbol], i: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = all[i].parent;
    while let Some(k) = p {
        out.push(all[k].signature.clone());
        p = all[k].parent;
    }
    out.reverse();
    out
}

/// The items of `text` that `names` name (a develop step's functions, methods and classes in a
/// file too large to show whole), each of at most `max_lines` lines, in the file's order. An item
/// inside another chosen one is left out (rewriting the outer one rewrites it too).
pub fn named(
    text: &str,
    language: Language,
    names: &[String],
    max_lines: usize,
) -> Vec<EditTarget> {
    if text.is_empty() || names.is_empty() {
        return Vec::new();
    }
    let tree = SyntaxTree::parse(text, language);
    let all = symbols(text, &tree, Scope::Outline);
    let mut chosen: Vec<usize> = (0..all.len())
        .filter(|&i| names.iter().any(|n| *n == all[i].name))
        .filter(|&i| all[i].lines.1 + 1 - all[i].lines.0 <= max_lines)
        .collect();
    let inside = |i: usize, j: usize| {
        i != j && all[j].lines.0 <= all[i].lines.0 && all[i].lines.1 <= all[j].lines.1
    };
    let snapshot = chosen.clone();
    chosen.retain(|&i| !snapshot.iter().any(|&j| inside(i, j)));
    chosen.sort_by_key(|&i| all[i].lines.0);
    chosen.into_iter().map(|i| item(&all, i)).collect()
}

/// The line after which an insertion at the top of the target goes: after its signature (the
/// line that ends with `:` or `{`) and a docstring right below it.
pub fn insertion_line(text: &str, target: &EditTarget) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let get = |n: usize| lines.get(n - 1).copied().unwrap_or("");
    let mut at = target.first;
    while at < target.last {
        let t = get(at).trim_end();
        if t.ends_with(':') || t.ends_with('{') {
            break;
        }
        at += 1;
    }
    // A Python docstring right after the signature.
    let next = get(at + 1).trim_start();
    for q in ["\"\"\"", "'''"] {
        if let Some(rest) = next.strip_prefix(q) {
            if rest.contains(q) {
                return at + 1;
            }
            let mut k = at + 2;
            while k <= target.last {
                if get(k).contains(q) {
                    return k;
                }
                k += 1;
            }
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::edit::lines_to_bytes as line_bytes;

    const PY: &str = "import os\n\nclass A:\n    def f(self, x):\n        \"\"\"Half.\"\"\"\n        mid = x // 2\n        return mid\n\n    def g(self):\n        return 1\n";

    #[test]
    fn a_selection_inside_a_method_targets_the_method() {
        let r = line_bytes(PY, 6, 6);
        let t = resolve(PY, &r, Language::Python, 300).unwrap();
        assert_eq!((t.first, t.last), (4, 7));
        assert_eq!(t.label, "method `f`");
        assert_eq!(t.context, vec!["class A".to_owned()]);
        assert_eq!(t.selection, Some((6, 6)));
        assert_eq!(insertion_line(PY, &t), 5);
        assert!(t.text(PY).starts_with("    def f(self, x):\n"));
        assert!(t.text(PY).ends_with("return mid\n"));
    }

    #[test]
    fn a_too_long_item_leaves_the_selection() {
        let r = line_bytes(PY, 6, 7);
        let t = resolve(PY, &r, Language::Python, 2).unwrap();
        assert_eq!((t.first, t.last), (6, 7));
        assert_eq!(t.label, "lines 6-7");
    }

    #[test]
    fn a_cursor_outside_any_item_has_no_target() {
        assert_eq!(resolve(PY, &(1..1), Language::Python, 300), None);
        let t = resolve(
            PY,
            &(PY.find("return 1").unwrap()..PY.find("return 1").unwrap()),
            Language::Python,
            300,
        )
        .unwrap();
        assert_eq!((t.first, t.last), (9, 10));
    }

    #[test]
    fn named_items_are_targets_and_an_inner_one_goes_with_its_container() {
        let names = ["g".to_owned(), "f".to_owned(), "missing".to_owned()];
        let t = named(PY, Language::Python, &names, 300);
        assert_eq!(
            t.iter().map(|t| (t.first, t.last)).collect::<Vec<_>>(),
            [(4, 7), (9, 10)]
        );
        assert_eq!(t[1].label, "method `g`");
        assert_eq!(t[1].context, vec!["class A".to_owned()]);
        let with_class = named(PY, Language::Python, &["A".to_owned(), "g".to_owned()], 300);
        assert_eq!(with_class.len(), 1);
        assert_eq!(with_class[0].name.as_deref(), Some("A"));
    }
}
