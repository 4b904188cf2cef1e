//! Named items of a file — functions, methods, structs, enums, traits, impls, classes,
//! interfaces, modules, tables — found with tree-sitter, looked up by plain or qualified name
//! (`Type::method`, `Class.method`, `<Type as Trait>::method`) and replaced whole.
//!
//! Decisions:
//! - A symbol has two ranges. `range` is the declaration itself, from its first keyword
//!   (`pub fn`, `def`, `class`, `function`) to its end; `full_range` adds what is attached in
//!   front of it: doc comments and comments directly above (no blank line between), Rust
//!   attributes, Python/TypeScript decorators, and a TypeScript `export`.
//! - [`replace_symbol`] replaces `range` — keeping the attached part — unless the new text
//!   brings its own (it starts with a comment, attribute, decorator or `export`); then it
//!   replaces `full_range`. New text is re-indented to the symbol's indentation and gets the
//!   file's line endings; empty new text deletes the symbol's lines.
//! - TypeScript overloads (signatures followed by the implementation) are one symbol.
//! - A name matches a symbol when it equals its qualified name or is a suffix of it on a path
//!   boundary (`::` and `.` are interchangeable). One exact match wins; several suffix matches
//!   are refused listing every candidate with its line.
//!
//! Layout: this file holds the symbol types, lookup, replacement and the walk over the tree,
//! which every language shares (qualified names, attached comments, signatures, overloads,
//! nesting). Which node kinds are items differs per grammar and is most of the code, so each
//! language has its own file — `rust.rs`, `python.rs`, `javascript.rs` (also TypeScript and
//! TSX), `go.rs`, and `data.rs` for JSON and TOML — and `Walker::classify` picks one. A new
//! language is a new file and one arm there.
//!
//! Never does I/O and never panics: text without a grammar has no symbols and lookups say so.

use std::ops::Range;

use tree_sitter::Node;

use crate::document::change::{Replacement, TextEdit};
use crate::syntax::language::Language;
use crate::syntax::lines::LineIndex;
use crate::syntax::tree::SyntaxTree;

mod data;
mod go;
mod javascript;
mod python;
mod rust;

/// What kind of item a symbol is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    Function,
    Method,
    Struct,
    Enum,
    Union,
    Trait,
    Impl,
    Module,
    Class,
    Interface,
    Type,
    Const,
    Static,
    Variable,
    Field,
    Macro,
    Key,
    Table,
}

impl SymbolKind {
    /// A short label for listings.
    pub fn label(self) -> &'static str {
        match self {
            SymbolKind::Function => "fn",
            SymbolKind::Method => "method",
            SymbolKind::Struct => "struct",
            SymbolKind::Enum => "enum",
            SymbolKind::Union => "union",
            SymbolKind::Trait => "trait",
            SymbolKind::Impl => "impl",
            SymbolKind::Module => "module",
            SymbolKind::Class => "class",
            SymbolKind::Interface => "interface",
            SymbolKind::Type => "type",
            SymbolKind::Const => "const",
            SymbolKind::Static => "static",
            SymbolKind::Variable => "variable",
            SymbolKind::Field => "field",
            SymbolKind::Macro => "macro",
            SymbolKind::Key => "key",
            SymbolKind::Table => "table",
        }
    }
}

/// One named item of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The item's own name (`method`, `impl Display for Foo`, `a.b` for a TOML table).
    pub name: String,
    /// The name with its containers, joined by the language's separator (`Foo::method`).
    pub qualified: String,
    /// A second qualified name that tells trait-impl methods apart (`<Foo as Display>::fmt`).
    pub alias: Option<String>,
    pub kind: SymbolKind,
    /// The declaration, from its first keyword to its end.
    pub range: Range<usize>,
    /// The declaration with its attached doc comments, attributes, decorators and `export`.
    pub full_range: Range<usize>,
    /// 1-based first and last line of `full_range`.
    pub lines: (usize, usize),
    /// The declaration's head on one line (`pub fn f(a: u32) -> u32`), at most 160 characters.
    pub signature: String,
    /// Index of the containing symbol in the list this symbol came from.
    pub parent: Option<usize>,
    /// Number of containers above this symbol.
    pub depth: usize,
    /// Whether members of this symbol are listed (impl, class, module, table, ...).
    pub container: bool,
    /// Found inside a function body: not part of outlines, still found by name.
    pub nested: bool,
    /// How many declarations were merged into this symbol (TypeScript overloads); 1 otherwise.
    pub declarations: usize,
}

impl Symbol {
    /// The name to show in listings: the alias when there is one (it is the unambiguous form).
    pub fn display_name(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.qualified)
    }
}

/// How deep [`symbols`] looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Top-level items and the members of containers (what an outline shows). Cheap.
    Outline,
    /// Also items declared inside function bodies (nested functions, local types and impls).
    All,
}

/// Why a lookup found no single symbol. Messages are written for a model to act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SymbolError {
    #[error(
        "cannot look up symbols in a {language} file: it has no grammar; use line numbers instead"
    )]
    NoGrammar { language: Language },
    #[error("{}", not_found_message(.name, .suggestions))]
    NotFound {
        name: String,
        /// Similar symbols as `name (kind, line N)`.
        suggestions: Vec<String>,
    },
    #[error("{}", ambiguous_message(.name, .candidates))]
    Ambiguous {
        name: String,
        /// Every match as `qualified name (kind, line N)`.
        candidates: Vec<String>,
    },
}

/// The symbols of `text` in document order; containers come before their members.
pub fn symbols(text: &str, tree: &SyntaxTree, scope: Scope) -> Vec<Symbol> {
    symbols_with_index(text, tree, scope, &LineIndex::new(text))
}

/// [`symbols`] with the text's line index already at hand.
pub fn symbols_with_index(
    text: &str,
    tree: &SyntaxTree,
    scope: Scope,
    index: &LineIndex,
) -> Vec<Symbol> {
    let Some(root) = tree.root() else {
        return Vec::new();
    };
    let mut walker = Walker {
        text,
        language: tree.language(),
        index,
        scope,
        out: Vec::new(),
        signature_only: Vec::new(),
    };
    let body = match tree.language() {
        // JSON: the members of the top-level object.
        Language::Json => root.named_child(0).filter(|n| n.kind() == "object"),
        _ => Some(root),
    };
    if let Some(body) = body {
        walker.walk_body(body, None, &[], false);
    }
    walker.out
}

/// The one symbol `name` designates, or why there is none.
pub fn find_symbol<'s>(symbols: &'s [Symbol], name: &str) -> Result<&'s Symbol, SymbolError> {
    let matches = find_all(symbols, name);
    match matches.as_slice() {
        [] => Err(SymbolError::NotFound {
            name: name.trim().to_string(),
            suggestions: suggestions(symbols, name),
        }),
        [one] => Ok(one),
        many => {
            let wanted = segments(name);
            let exact: Vec<&&Symbol> = many
                .iter()
                .filter(|s| path_match(&s.qualified, &wanted) == Some(true))
                .collect();
            if let [one] = exact.as_slice() {
                return Ok(one);
            }
            Err(SymbolError::Ambiguous {
                name: name.trim().to_string(),
                candidates: many.iter().map(|s| describe(s)).collect(),
            })
        }
    }
}

/// Every symbol `name` matches (exactly or as a path suffix), in document order.
pub fn find_all<'s>(symbols: &'s [Symbol], name: &str) -> Vec<&'s Symbol> {
    let wanted = segments(name);
    if wanted.is_empty() {
        return Vec::new();
    }
    let hit = |candidate: &str| path_match(candidate, &wanted).is_some();
    symbols
        .iter()
        .filter(|s| hit(&s.qualified) || s.alias.as_deref().is_some_and(hit) || hit(&s.name))
        .collect()
}

/// The path segments of a name; `::` and `.` both separate.
fn segments(name: &str) -> Vec<&str> {
    name.trim()
        .split(['.', ':'])
        .filter(|s| !s.is_empty())
        .collect()
}

/// `None` when `wanted` is not a suffix of `candidate`'s path, `Some(exact)` when it is.
fn path_match(candidate: &str, wanted: &[&str]) -> Option<bool> {
    let mut have = candidate.split(['.', ':']).filter(|s| !s.is_empty()).rev();
    for want in wanted.iter().rev() {
        if have.next()? != *want {
            return None;
        }
    }
    Some(have.next().is_none())
}

/// The edit that replaces symbol `name` of `text` with `new_text` (see the module docs for what
/// is replaced and how the new text is indented).
pub fn replace_symbol(
    text: &str,
    tree: &SyntaxTree,
    name: &str,
    new_text: &str,
) -> Result<TextEdit, SymbolError> {
    let language = tree.language();
    if tree.root().is_none() {
        return Err(SymbolError::NoGrammar { language });
    }
    let all = symbols(text, tree, Scope::All);
    let symbol = find_symbol(&all, name)?;
    Ok(TextEdit::single(replacement_for(
        text, language, symbol, new_text,
    )))
}

/// The replacement that puts `new_text` in place of `symbol` (already located in `text`).
pub fn replacement_for(
    text: &str,
    language: Language,
    symbol: &Symbol,
    new_text: &str,
) -> Replacement {
    let index = LineIndex::new(text);
    if new_text.trim().is_empty() {
        // Deleting: the symbol's whole lines go, attached comments and attributes included,
        // unless other code shares its first or last line.
        let (first, last) = index.lines_of(&symbol.full_range);
        let lines = index.lines_range(first, last);
        let before = &text[lines.start..symbol.full_range.start];
        let after = &text[symbol.full_range.end..lines.end];
        let range = if before.trim().is_empty() && after.trim().is_empty() {
            lines
        } else {
            symbol.full_range.clone()
        };
        return Replacement::delete(range);
    }
    let range = if starts_with_attachment(language, new_text) {
        symbol.full_range.clone()
    } else {
        symbol.range.clone()
    };
    let line_start = index.line_range(index.line_of(range.start)).start;
    let prefix = &text[line_start..range.start];
    let indent = if prefix.chars().all(char::is_whitespace) {
        prefix
    } else {
        &prefix[..prefix.len() - prefix.trim_start().len()]
    };
    let own_text = text.get(symbol.range.clone()).unwrap_or("");
    let tabs = indent.contains('\t') || own_text.contains("\n\t");
    Replacement::new(range, reindent(new_text, indent, file_is_crlf(text), tabs))
}

/// Whether the first non-blank line of `new_text` is a comment, attribute, decorator or
/// `export` — a part [`Symbol::full_range`] covers and `range` does not.
pub fn starts_with_attachment(language: Language, new_text: &str) -> bool {
    let first = new_text.trim_start();
    let markers: &[&str] = match language {
        Language::Rust => &["#[", "//", "/*"],
        Language::Python => &["@", "#"],
        Language::TypeScript | Language::Tsx | Language::JavaScript => {
            &["@", "//", "/*", "export "]
        }
        Language::Go => &["//", "/*"],
        Language::Toml => &["#"],
        Language::Json => &["//", "/*"],
        Language::Text => &[],
    };
    markers.iter().any(|m| first.starts_with(m))
}

fn file_is_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= text.matches('\n').count()
}

/// `new_text` without its common indentation, every line after the first indented by `indent`
/// (the first goes where the old declaration started), trailing line breaks dropped, `\n` as
/// `\r\n` when `crlf`, and leading spaces as tabs when `tabs` and the new text has none.
///
/// A snippet copied from inside a block often has its first line trimmed and the rest still
/// indented (`fn f() {` / `        body` / `    }`): when its last line closes a bracket at the
/// indentation every later line shares, that indentation is the snippet's own.
fn reindent(new_text: &str, indent: &str, crlf: bool, tabs: bool) -> String {
    let normalised = new_text.replace("\r\n", "\n");
    let body = normalised.trim_end_matches(['\n', ' ', '\t']);
    let body = body.trim_start_matches('\n');
    let lines: Vec<&str> = body.split('\n').collect();
    let leading = |l: &str| -> usize { l.len() - l.trim_start().len() };
    let common_of = |lines: &[&str]| -> String {
        lines
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| &l[..leading(l)])
            .reduce(|a, b| {
                let shared = a
                    .char_indices()
                    .zip(b.chars())
                    .find(|((_, x), y)| x != y)
                    .map_or(a.len().min(b.len()), |((i, _), _)| i);
                &a[..shared]
            })
            .unwrap_or("")
            .to_string()
    };
    let first_common = common_of(&lines);
    let rest_common = if lines.len() > 1 {
        common_of(&lines[1..])
    } else {
        String::new()
    };
    let last = lines.last().copied().unwrap_or("");
    let closes = last.trim_start().starts_with(['}', ')', ']']);
    let rest_strip = if leading(lines[0]) == 0 && closes && leading(last) == rest_common.len() {
        rest_common
    } else {
        first_common.clone()
    };
    let relative: Vec<&str> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let common = if i == 0 { &first_common } else { &rest_strip };
            line.strip_prefix(common.as_str())
                .unwrap_or(line.trim_start())
        })
        .collect();
    let unit = relative
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .filter(|&n| n > 0)
        .min()
        .unwrap_or(4);
    let convert = tabs && !relative.iter().any(|l| l.starts_with('\t'));
    let mut out = String::with_capacity(body.len() + lines.len() * indent.len());
    for (i, line) in relative.iter().enumerate() {
        if i > 0 {
            out.push_str(if crlf { "\r\n" } else { "\n" });
        }
        if line.trim().is_empty() {
            continue;
        }
        if i > 0 {
            out.push_str(indent);
        }
        let line = line.trim_end_matches('\r');
        if convert {
            let spaces = line.len() - line.trim_start_matches(' ').len();
            for _ in 0..spaces / unit {
                out.push('\t');
            }
            for _ in 0..spaces % unit {
                out.push(' ');
            }
            out.push_str(&line[spaces..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

fn describe(symbol: &Symbol) -> String {
    format!(
        "{} ({}, line {})",
        symbol.display_name(),
        symbol.kind.label(),
        symbol.lines.0
    )
}

fn suggestions(symbols: &[Symbol], name: &str) -> Vec<String> {
    let wanted = segments(name);
    let last = wanted.last().copied().unwrap_or("").to_lowercase();
    if last.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(usize, &Symbol)> = symbols
        .iter()
        .filter_map(|s| {
            let own = s.name.to_lowercase();
            let score = if own == last {
                0
            } else if own.contains(&last) || (own.len() >= 3 && last.contains(&own)) {
                1
            } else {
                let distance = edit_distance(&own, &last);
                if distance <= 2.max(last.len() / 4) {
                    1 + distance
                } else {
                    return None;
                }
            };
            Some((score, s))
        })
        .collect();
    scored.sort_by_key(|&(score, s)| (score, s.range.start));
    scored
        .into_iter()
        .take(8)
        .map(|(_, s)| describe(s))
        .collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == cb {
                previous
            } else {
                1 + previous.min(row[j]).min(row[j + 1])
            };
            previous = current;
        }
    }
    row[b.len()]
}

fn not_found_message(name: &str, suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        format!("no symbol named `{name}` in this file; use a name from the file's outline")
    } else {
        format!(
            "no symbol named `{name}` in this file; similar symbols: {}",
            suggestions.join(", ")
        )
    }
}

fn ambiguous_message(name: &str, candidates: &[String]) -> String {
    format!(
        "`{name}` is ambiguous: {} symbols match: {}; use one of these qualified names",
        candidates.len(),
        candidates.join(", ")
    )
}

/// An item found at one level of the tree, before it becomes a [`Symbol`].
struct Item<'t> {
    kind: SymbolKind,
    name: String,
    /// The node that is attached-to (export statement, decorated definition, the declaration).
    outer: Node<'t>,
    /// The declaration proper.
    decl: Node<'t>,
    /// Members to list (impl/class/module bodies).
    members: Option<Node<'t>>,
    /// A function body to search for nested items (only with [`Scope::All`]).
    code: Option<Node<'t>>,
    /// The path segment members get instead of `name` (`Foo` for `impl Display for Foo`).
    member_prefix: Option<String>,
    /// `Display` for `impl Display for Foo`: members get the alias `<Foo as Display>::m`.
    trait_name: Option<String>,
    /// A declaration without body that may be an overload of the next one (TypeScript).
    signature_only: bool,
    /// A path segment between the container's path and the name (a Go method's receiver).
    owner: Option<String>,
}

struct Walker<'a> {
    text: &'a str,
    language: Language,
    index: &'a LineIndex,
    scope: Scope,
    out: Vec<Symbol>,
    signature_only: Vec<bool>,
}

const ATTACHED: &[&str] = &[
    "line_comment",
    "block_comment",
    "comment",
    "attribute_item",
    "decorator",
];

impl<'a> Walker<'a> {
    fn walk_body(&mut self, body: Node<'_>, parent: Option<usize>, path: &[String], nested: bool) {
        let mut cursor = body.walk();
        let children: Vec<Node> = body.named_children(&mut cursor).collect();
        for (i, &child) in children.iter().enumerate() {
            self.visit(child, &children[..i], parent, path, nested);
        }
    }

    /// `before`: the named siblings before `node` (looking them up in the tree instead costs
    /// time proportional to their number, for every item).
    fn visit(
        &mut self,
        node: Node<'_>,
        before: &[Node<'_>],
        parent: Option<usize>,
        path: &[String],
        nested: bool,
    ) {
        let items = self.classify(node, parent, nested);
        if items.is_empty() {
            if nested {
                // Inside code: keep looking for items at any depth.
                self.walk_body(node, parent, path, true);
            }
            return;
        }
        for item in items {
            let before = (item.outer.id() == node.id()).then_some(before);
            self.push(item, before, parent, path, nested);
        }
    }

    fn push(
        &mut self,
        item: Item<'_>,
        before: Option<&[Node<'_>]>,
        parent: Option<usize>,
        path: &[String],
        nested: bool,
    ) {
        let sep = self.language.path_separator();
        let mut qualified = String::with_capacity(32);
        for segment in path.iter().chain(item.owner.as_ref()) {
            qualified.push_str(segment);
            qualified.push_str(sep);
        }
        qualified.push_str(&item.name);
        let alias = parent
            .and_then(|p| self.out.get(p))
            .and_then(|p| p.alias.clone())
            .map(|a| format!("{a}{sep}{}", item.name));
        let start = first_content_start(item.decl);
        let range = start..item.decl.end_byte();
        let full_start = self.attached_start(item.outer, before);
        let full_range = full_start..item.outer.end_byte().max(range.end);
        let (first, last) = self.index.lines_of(&full_range);
        let mut symbol = Symbol {
            signature: self.signature(item.decl, start),
            name: item.name,
            qualified,
            alias,
            kind: item.kind,
            range,
            full_range,
            lines: (first + 1, last + 1),
            parent,
            depth: path.len(),
            container: item.members.is_some(),
            nested,
            declarations: 1,
        };
        // TypeScript overloads: signatures directly followed by a declaration of the same name
        // become one symbol.
        if let (Some(previous), Some(&true)) = (self.out.last(), self.signature_only.last())
            && previous.name == symbol.name
            && previous.parent == parent
            && matches!(previous.kind, SymbolKind::Function | SymbolKind::Method)
            && previous.kind == symbol.kind
        {
            symbol.range.start = previous.range.start;
            symbol.full_range.start = previous.full_range.start;
            symbol.lines.0 = previous.lines.0;
            symbol.signature = previous.signature.clone();
            symbol.declarations += previous.declarations;
            self.out.pop();
            self.signature_only.pop();
        }
        let index = self.out.len();
        if let Some(trait_name) = &item.trait_name {
            let own = item.member_prefix.clone().unwrap_or_default();
            symbol.alias = Some(format!("<{own} as {trait_name}>"));
        }
        self.out.push(symbol);
        self.signature_only.push(item.signature_only);
        let walks_code = self.scope == Scope::All && item.code.is_some();
        let member_path = if item.members.is_some() || walks_code {
            let mut p = path.to_vec();
            p.push(
                item.member_prefix
                    .clone()
                    .unwrap_or_else(|| self.out[index].name.clone()),
            );
            p
        } else {
            Vec::new()
        };
        if let Some(members) = item.members {
            // JSON: top-level keys and their children; deeper data is not an outline.
            let depth_limit = self.language == Language::Json && !path.is_empty();
            if !depth_limit {
                self.walk_body(members, Some(index), &member_path, nested);
            }
        }
        if self.scope == Scope::All
            && let Some(code) = item.code
        {
            self.walk_body(code, Some(index), &member_path, true);
        }
        // An impl's alias (`<Foo as Display>`) is only a prefix for its members.
        if item.trait_name.is_some() {
            self.out[index].alias = None;
        }
    }

    /// Where the comments, attributes and decorators attached above `node` begin.
    fn attached_start(&self, node: Node<'_>, before: Option<&[Node<'_>]>) -> usize {
        let mut start = node.start_byte();
        let mut current = node;
        let mut remaining = before.map(<[Node]>::len);
        loop {
            let previous = match (before, remaining.as_mut()) {
                (Some(before), Some(n)) => {
                    if *n == 0 {
                        break;
                    }
                    *n -= 1;
                    before[*n]
                }
                _ => match current.prev_named_sibling() {
                    Some(previous) => previous,
                    None => break,
                },
            };
            if !ATTACHED.contains(&previous.kind()) {
                break;
            }
            let (_, previous_last) = self.index.lines_of(&previous.byte_range());
            let current_first = self.index.line_of(current.start_byte());
            if current_first > previous_last + 1 {
                break; // a blank line separates them
            }
            // A trailing comment on the line of earlier code is not attached to this item.
            let line_start = self
                .index
                .line_range(self.index.line_of(previous.start_byte()))
                .start;
            if !self.text[line_start..previous.start_byte()]
                .trim()
                .is_empty()
            {
                break;
            }
            if previous.kind() == "line_comment" || previous.kind() == "comment" {
                let comment = &self.text[previous.byte_range()];
                // `//!` documents the enclosing module, not the next item.
                if comment.starts_with("//!") {
                    break;
                }
            }
            start = previous.start_byte();
            current = previous;
        }
        start
    }

    /// The declaration's head on one line: from its first keyword to its body (or the end of
    /// its first line), whitespace collapsed.
    fn signature(&self, decl: Node<'_>, start: usize) -> String {
        let body_start = decl
            .child_by_field_name("body")
            .map(|b| b.start_byte())
            .filter(|&b| b > start);
        let end = match body_start {
            Some(b) => b,
            None => {
                let line = self.index.line_of(start);
                let line_end = self.index.line_range(line).end;
                line_end.min(decl.end_byte()).max(start)
            }
        };
        let raw = self.text.get(start..end).unwrap_or("");
        // A Python comment between `class X:` and the body is not part of the head.
        let uncommented: String;
        let raw = if self.language == Language::Python && raw.contains('#') {
            uncommented = raw
                .lines()
                .map(|line| {
                    let mut quotes = 0;
                    for (i, c) in line.char_indices() {
                        match c {
                            '"' | '\'' => quotes += 1,
                            '#' if quotes % 2 == 0 => return &line[..i],
                            _ => {}
                        }
                    }
                    line
                })
                .collect::<Vec<_>>()
                .join("\n");
            uncommented.as_str()
        } else {
            raw
        };
        let collapsed = collapse_head(raw);
        let trimmed = collapsed
            .trim_end_matches(['{', ':', '=', ' '])
            .trim_end()
            .to_string();
        let head = if trimmed.is_empty() {
            collapsed
        } else {
            trimmed
        };
        if head.chars().count() > 160 {
            let cut: String = head.chars().take(159).collect();
            format!("{cut}…")
        } else {
            head
        }
    }

    fn node_text(&self, node: Node<'_>) -> &'a str {
        self.text.get(node.byte_range()).unwrap_or("")
    }

    fn field_text(&self, node: Node<'_>, field: &str) -> Option<String> {
        node.child_by_field_name(field)
            .map(|n| self.node_text(n).to_string())
    }

    fn classify<'t>(&self, node: Node<'t>, parent: Option<usize>, nested: bool) -> Vec<Item<'t>> {
        let in_container = parent
            .is_some_and(|p| matches!(self.out[p].kind, SymbolKind::Class | SymbolKind::Interface));
        match self.language {
            Language::Rust => self.classify_rust(node, parent).into_iter().collect(),
            Language::Python => self.classify_python(node, node, parent, nested),
            Language::TypeScript | Language::Tsx | Language::JavaScript => {
                self.classify_js(node, node, parent, nested, in_container)
            }
            Language::Go => self.classify_go(node, nested),
            Language::Json => self.classify_json(node),
            Language::Toml => self.classify_toml(node, parent),
            Language::Text => Vec::new(),
        }
    }

    fn item<'t>(&self, kind: SymbolKind, name: String, node: Node<'t>) -> Item<'t> {
        Item {
            kind,
            name,
            outer: node,
            decl: node,
            members: None,
            code: None,
            member_prefix: None,
            trait_name: None,
            signature_only: false,
            owner: None,
        }
    }
}

/// Where the declaration's own text starts: after decorators, attributes and comments that the
/// grammar put inside the node.
fn first_content_start(decl: Node<'_>) -> usize {
    if decl
        .child(0)
        .is_none_or(|first| !ATTACHED.contains(&first.kind()))
    {
        return decl.start_byte();
    }
    let mut cursor = decl.walk();
    decl.children(&mut cursor)
        .find(|c| !ATTACHED.contains(&c.kind()))
        .map_or(decl.start_byte(), |c| c.start_byte())
}

/// `Foo` for `Foo<T>`, `&'a mut Foo`, `*Foo`, `pkg.Foo[T]`.
fn base_type_name(walker: &Walker<'_>, ty: Node<'_>) -> String {
    let mut node = ty;
    while matches!(
        node.kind(),
        "generic_type" | "reference_type" | "pointer_type" | "qualified_type"
    ) {
        let inner = node
            .child_by_field_name("type")
            .or_else(|| node.child_by_field_name("name"))
            .or_else(|| {
                let count = node.named_child_count();
                (count > 0)
                    .then(|| node.named_child((count - 1) as u32))
                    .flatten()
            });
        match inner {
            Some(inner) if inner.id() != node.id() => node = inner,
            _ => break,
        }
    }
    collapse(walker.node_text(node))
}

/// Whitespace runs as one space, none after `(` or before `)`, no comma before `)`.
fn collapse_head(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(200));
    for word in text.split_whitespace() {
        if !out.is_empty() && !out.ends_with('(') && !word.starts_with(')') {
            out.push(' ');
        }
        if word.starts_with(')') && out.ends_with(',') {
            out.pop();
        }
        out.push_str(word);
    }
    out
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(text: &str, language: Language, name: &str, new_text: &str) -> String {
        let tree = SyntaxTree::parse(text, language);
        let edit = replace_symbol(text, &tree, name, new_text).unwrap();
        edit.apply(text).unwrap()
    }

    #[test]
    fn keeps_indentation_and_line_endings() {
        let text = "impl A {\r\n    fn f(&self) {\r\n        1;\r\n    }\r\n}\r\n";
        let out = replaced(text, Language::Rust, "A::f", "fn f(&self) {\n    2;\n}\n");
        assert_eq!(
            out,
            "impl A {\r\n    fn f(&self) {\r\n        2;\r\n    }\r\n}\r\n"
        );
    }

    #[test]
    fn snippets_with_a_trimmed_first_line_keep_their_shape() {
        let text = "impl A {\n    fn f(&self) {\n        1;\n    }\n}\n";
        let out = replaced(
            text,
            Language::Rust,
            "f",
            "fn f(&self) {\n        2;\n    }",
        );
        assert_eq!(out, "impl A {\n    fn f(&self) {\n        2;\n    }\n}\n");
    }

    #[test]
    fn spaces_become_tabs_in_tab_indented_code() {
        let text = "package p\n\nfunc F() {\n\treturn\n}\n";
        let out = replaced(
            text,
            Language::Go,
            "F",
            "func F() {\n    if x {\n        return\n    }\n}",
        );
        assert_eq!(
            out,
            "package p\n\nfunc F() {\n\tif x {\n\t\treturn\n\t}\n}\n"
        );
    }

    #[test]
    fn refusals_name_candidates_and_missing_grammars() {
        let text = "struct A;\nimpl A { fn new() {} }\nstruct B;\nimpl B { fn new() {} }\n";
        let tree = SyntaxTree::parse(text, Language::Rust);
        let err = replace_symbol(text, &tree, "new", "fn new() {}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`new` is ambiguous: 2 symbols match: A::new (method, line 2), B::new (method, line 4); use one of these qualified names"
        );
        let plain = SyntaxTree::parse("fn a() {}", Language::Text);
        assert!(matches!(
            replace_symbol("fn a() {}", &plain, "a", "x"),
            Err(SymbolError::NoGrammar { .. })
        ));
    }

    #[test]
    fn decorated_python_methods_keep_decorators_unless_new_text_brings_them() {
        let text = "class C:\n    @property\n    def p(self):\n        return 1\n";
        let kept = replaced(
            text,
            Language::Python,
            "C.p",
            "def p(self):\n    return 2\n",
        );
        assert_eq!(
            kept,
            "class C:\n    @property\n    def p(self):\n        return 2\n"
        );
        let swapped = replaced(
            text,
            Language::Python,
            "C.p",
            "@cached\ndef p(self):\n    return 2\n",
        );
        assert_eq!(
            swapped,
            "class C:\n    @cached\n    def p(self):\n        return 2\n"
        );
    }
}
