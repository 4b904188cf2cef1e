//! Which Go nodes are items: functions, methods (qualified by their receiver's base type), and
//! the specs of `type`, `const` and `var` declarations. A lone spec is the whole declaration so
//! that replacing it keeps exactly one keyword.
//!
//! One language's part of the walk in [`super`]: the walk is shared, the node kinds are not.

use tree_sitter::Node;

use super::{Item, SymbolKind, Walker, base_type_name};

impl Walker<'_> {
    pub(super) fn classify_go<'t>(&self, node: Node<'t>, nested: bool) -> Vec<Item<'t>> {
        match node.kind() {
            "function_declaration" => {
                let Some(name) = self.field_text(node, "name") else {
                    return Vec::new();
                };
                let mut item = self.item(SymbolKind::Function, name, node);
                item.code = node.child_by_field_name("body");
                vec![item]
            }
            "method_declaration" => {
                let Some(name) = self.field_text(node, "name") else {
                    return Vec::new();
                };
                let receiver = node
                    .child_by_field_name("receiver")
                    .and_then(|r| r.named_child(0))
                    .and_then(|p| p.child_by_field_name("type"))
                    .map(|t| base_type_name(self, t))
                    .unwrap_or_default();
                let mut item = self.item(SymbolKind::Method, name, node);
                item.code = node.child_by_field_name("body");
                item.owner = Some(receiver).filter(|r| !r.is_empty());
                vec![item]
            }
            "type_declaration" | "const_declaration" | "var_declaration" if !nested => {
                let mut cursor = node.walk();
                let specs: Vec<Node> = node
                    .named_children(&mut cursor)
                    .filter(|c| {
                        matches!(
                            c.kind(),
                            "type_spec" | "type_alias" | "const_spec" | "var_spec"
                        )
                    })
                    .collect();
                let single = specs.len() == 1;
                specs
                    .into_iter()
                    .filter_map(|spec| {
                        let name = self.field_text(spec, "name")?;
                        let kind = match spec.kind() {
                            "const_spec" => SymbolKind::Const,
                            "var_spec" => SymbolKind::Variable,
                            "type_alias" => SymbolKind::Type,
                            _ => match spec.child_by_field_name("type").map(|t| t.kind()) {
                                Some("struct_type") => SymbolKind::Struct,
                                Some("interface_type") => SymbolKind::Interface,
                                _ => SymbolKind::Type,
                            },
                        };
                        // A lone spec is the whole `type X struct {...}` declaration, so that
                        // replacing it keeps exactly one `type` keyword.
                        let node = if single { node } else { spec };
                        let name = name.split(',').next().unwrap_or("").trim().to_string();
                        Some(self.item(kind, name, node))
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}
