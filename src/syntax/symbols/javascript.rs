//! Which JavaScript, TypeScript and TSX nodes are items: functions and their overload
//! signatures, classes, interfaces, type aliases, enums, namespaces, methods, fields of classes
//! and interfaces, and top-level `const`/`let`/`var` declarations (a function or class value
//! makes the declaration a function or class). `export` and `declare` wrap the item they export.
//!
//! One language's part of the walk in [`super`]: the walk is shared, the node kinds are not.

use tree_sitter::Node;

use super::{Item, SymbolKind, Walker};

impl Walker<'_> {
    pub(super) fn classify_js<'t>(
        &self,
        node: Node<'t>,
        outer: Node<'t>,
        parent: Option<usize>,
        nested: bool,
        in_container: bool,
    ) -> Vec<Item<'t>> {
        let name = || self.field_text(node, "name");
        let with_outer = |mut item: Item<'t>| {
            item.outer = outer;
            vec![item]
        };
        match node.kind() {
            "export_statement" => {
                if let Some(decl) = node.child_by_field_name("declaration") {
                    return self.classify_js(decl, outer, parent, nested, in_container);
                }
                if let Some(value) = node.child_by_field_name("value") {
                    // `export default function () {}` / `export default class {}`
                    let kind = match value.kind() {
                        "class" | "class_declaration" => SymbolKind::Class,
                        "function_expression" | "function_declaration" | "arrow_function" => {
                            SymbolKind::Function
                        }
                        _ => return Vec::new(),
                    };
                    let name = self
                        .field_text(value, "name")
                        .unwrap_or_else(|| "default".to_string());
                    let mut item = self.item(kind, name, value);
                    item.outer = outer;
                    item.members = value
                        .child_by_field_name("body")
                        .filter(|_| kind == SymbolKind::Class);
                    item.code = value
                        .child_by_field_name("body")
                        .filter(|_| kind == SymbolKind::Function);
                    return vec![item];
                }
                Vec::new()
            }
            "expression_statement" => match node.named_child(0) {
                Some(inner) if inner.kind() == "internal_module" => {
                    self.classify_js(inner, outer, parent, nested, in_container)
                }
                _ => Vec::new(),
            },
            "ambient_declaration" => match node.named_child(0) {
                Some(inner) => self.classify_js(inner, outer, parent, nested, in_container),
                None => Vec::new(),
            },
            "function_declaration" | "generator_function_declaration" | "function_signature" => {
                let Some(name) = name() else {
                    return Vec::new();
                };
                let mut item = self.item(SymbolKind::Function, name, node);
                item.code = node.child_by_field_name("body");
                item.signature_only = node.kind() == "function_signature";
                with_outer(item)
            }
            "class_declaration" | "abstract_class_declaration" | "class" => {
                let Some(name) = name() else {
                    return Vec::new();
                };
                let mut item = self.item(SymbolKind::Class, name, node);
                item.members = node.child_by_field_name("body");
                with_outer(item)
            }
            "interface_declaration" => {
                let Some(name) = name() else {
                    return Vec::new();
                };
                let mut item = self.item(SymbolKind::Interface, name, node);
                item.members = node.child_by_field_name("body");
                with_outer(item)
            }
            "type_alias_declaration" => match name() {
                Some(name) => with_outer(self.item(SymbolKind::Type, name, node)),
                None => Vec::new(),
            },
            "enum_declaration" => match name() {
                Some(name) => with_outer(self.item(SymbolKind::Enum, name, node)),
                None => Vec::new(),
            },
            "internal_module" | "module" => {
                let Some(name) = name() else {
                    return Vec::new();
                };
                let name = name.trim_matches(['"', '\'']).to_string();
                let mut item = self.item(SymbolKind::Module, name, node);
                item.members = node.child_by_field_name("body");
                with_outer(item)
            }
            "method_definition" | "method_signature" | "abstract_method_signature" => {
                let Some(name) = name() else {
                    return Vec::new();
                };
                let mut item = self.item(SymbolKind::Method, name, node);
                item.code = node.child_by_field_name("body");
                item.signature_only = node.kind() != "method_definition";
                with_outer(item)
            }
            "public_field_definition" | "field_definition" | "property_signature"
                if in_container =>
            {
                let name = self
                    .field_text(node, "name")
                    .or_else(|| self.field_text(node, "property"));
                match name {
                    Some(name) => with_outer(self.item(SymbolKind::Field, name, node)),
                    None => Vec::new(),
                }
            }
            "lexical_declaration" | "variable_declaration" if !nested && parent.is_none() => {
                let mut cursor = node.walk();
                let Some(declarator) = node
                    .named_children(&mut cursor)
                    .find(|c| c.kind() == "variable_declarator")
                else {
                    return Vec::new();
                };
                let Some(name_node) = declarator
                    .child_by_field_name("name")
                    .filter(|n| n.kind() == "identifier")
                else {
                    return Vec::new();
                };
                let value = declarator.child_by_field_name("value");
                let is_function = value.is_some_and(|v| {
                    matches!(
                        v.kind(),
                        "arrow_function"
                            | "function_expression"
                            | "function"
                            | "generator_function"
                    )
                });
                let is_class = value.is_some_and(|v| v.kind() == "class");
                let constant = self.node_text(node).starts_with("const");
                let kind = if is_function {
                    SymbolKind::Function
                } else if is_class {
                    SymbolKind::Class
                } else if constant {
                    SymbolKind::Const
                } else {
                    SymbolKind::Variable
                };
                let mut item = self.item(kind, self.node_text(name_node).to_string(), node);
                if is_function {
                    item.code = value.and_then(|v| v.child_by_field_name("body"));
                }
                if is_class {
                    item.members = value.and_then(|v| v.child_by_field_name("body"));
                }
                with_outer(item)
            }
            _ => Vec::new(),
        }
    }
}
