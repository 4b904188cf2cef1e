//! Which Python nodes are items: functions (methods inside a class), classes, and module-level
//! assignments. A decorated definition is the item, so that its decorators are attached.
//!
//! One language's part of the walk in [`super`]: the walk is shared, the node kinds are not.

use tree_sitter::Node;

use super::{Item, SymbolKind, Walker};

impl Walker<'_> {
    pub(super) fn classify_python<'t>(
        &self,
        node: Node<'t>,
        outer: Node<'t>,
        parent: Option<usize>,
        nested: bool,
    ) -> Vec<Item<'t>> {
        let in_class = parent.is_some_and(|p| self.out[p].kind == SymbolKind::Class);
        let name = || self.field_text(node, "name");
        let mut item = match node.kind() {
            "decorated_definition" => {
                return match node.child_by_field_name("definition") {
                    Some(def) => self.classify_python(def, outer, parent, nested),
                    None => Vec::new(),
                };
            }
            "function_definition" => {
                let kind = if in_class && !nested {
                    SymbolKind::Method
                } else {
                    SymbolKind::Function
                };
                let Some(name) = name() else {
                    return Vec::new();
                };
                let mut item = self.item(kind, name, node);
                item.code = node.child_by_field_name("body");
                item
            }
            "class_definition" => {
                let Some(name) = name() else {
                    return Vec::new();
                };
                let mut item = self.item(SymbolKind::Class, name, node);
                item.members = node.child_by_field_name("body");
                item
            }
            "expression_statement" if parent.is_none() && !nested => {
                let Some(assign) = node.named_child(0).filter(|n| n.kind() == "assignment") else {
                    return Vec::new();
                };
                let Some(left) = assign
                    .child_by_field_name("left")
                    .filter(|l| l.kind() == "identifier")
                else {
                    return Vec::new();
                };
                self.item(SymbolKind::Variable, self.node_text(left).to_string(), node)
            }
            _ => return Vec::new(),
        };
        item.outer = outer;
        vec![item]
    }
}
