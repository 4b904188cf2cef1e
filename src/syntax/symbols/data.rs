//! Which nodes of data files are items: JSON object keys (top-level keys and their children),
//! TOML tables, arrays of tables and their keys.
//!
//! One format family's part of the walk in [`super`]: the walk is shared, the node kinds are not.

use tree_sitter::Node;

use super::{Item, SymbolKind, Walker, collapse};

impl Walker<'_> {
    pub(super) fn classify_json<'t>(&self, node: Node<'t>) -> Vec<Item<'t>> {
        if node.kind() != "pair" {
            return Vec::new();
        }
        let Some(key) = node.child_by_field_name("key") else {
            return Vec::new();
        };
        let name = self.node_text(key).trim_matches('"').to_string();
        let mut item = self.item(SymbolKind::Key, name, node);
        item.members = node
            .child_by_field_name("value")
            .filter(|v| v.kind() == "object");
        vec![item]
    }

    pub(super) fn classify_toml<'t>(&self, node: Node<'t>, parent: Option<usize>) -> Vec<Item<'t>> {
        let key = |node: Node<'t>| {
            let mut cursor = node.walk();
            let key = node
                .named_children(&mut cursor)
                .find(|c| matches!(c.kind(), "bare_key" | "dotted_key" | "quoted_key"));
            key.map(|k| collapse(self.node_text(k)))
        };
        match node.kind() {
            "table" | "table_array_element" => {
                let Some(name) = key(node) else {
                    return Vec::new();
                };
                let mut item = self.item(SymbolKind::Table, name, node);
                item.members = Some(node);
                vec![item]
            }
            "pair" if parent.is_none_or(|p| self.out[p].kind == SymbolKind::Table) => {
                match key(node) {
                    Some(name) => vec![self.item(SymbolKind::Key, name, node)],
                    None => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }
}
