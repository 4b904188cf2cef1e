//! Which Rust nodes are items: functions (methods inside `impl` and `trait`), structs, enums,
//! unions, type aliases, consts, statics, macros, traits, modules, `extern` blocks and impls.
//! An impl is named `impl Trait for Type`; its members are qualified by the type and get the
//! alias `<Type as Trait>::member` so that trait methods of the same name stay apart.
//!
//! One language's part of the walk in [`super`]: the walk is shared, the node kinds are not.

use tree_sitter::Node;

use super::{Item, SymbolKind, Walker, base_type_name, collapse};

impl Walker<'_> {
    pub(super) fn classify_rust<'t>(
        &self,
        node: Node<'t>,
        parent: Option<usize>,
    ) -> Option<Item<'t>> {
        let in_impl = parent
            .is_some_and(|p| matches!(self.out[p].kind, SymbolKind::Impl | SymbolKind::Trait));
        let name = || self.field_text(node, "name");
        let item = match node.kind() {
            "function_item" | "function_signature_item" => {
                let kind = if in_impl {
                    SymbolKind::Method
                } else {
                    SymbolKind::Function
                };
                let mut item = self.item(kind, name()?, node);
                item.code = node.child_by_field_name("body");
                item
            }
            "struct_item" => self.item(SymbolKind::Struct, name()?, node),
            "enum_item" => self.item(SymbolKind::Enum, name()?, node),
            "union_item" => self.item(SymbolKind::Union, name()?, node),
            "type_item" | "associated_type" => self.item(SymbolKind::Type, name()?, node),
            "const_item" => self.item(SymbolKind::Const, name()?, node),
            "static_item" => self.item(SymbolKind::Static, name()?, node),
            "macro_definition" => self.item(SymbolKind::Macro, format!("{}!", name()?), node),
            "trait_item" => {
                let mut item = self.item(SymbolKind::Trait, name()?, node);
                item.members = node.child_by_field_name("body");
                item
            }
            "mod_item" => {
                let mut item = self.item(SymbolKind::Module, name()?, node);
                item.members = node.child_by_field_name("body");
                item
            }
            "foreign_mod_item" => {
                let abi = node
                    .named_child(0)
                    .filter(|n| n.kind() == "extern_modifier")
                    .map(|n| self.node_text(n).to_string())
                    .unwrap_or_else(|| "extern".to_string());
                let mut item = self.item(SymbolKind::Module, abi, node);
                item.members = node.child_by_field_name("body");
                item
            }
            "impl_item" => {
                let ty = node.child_by_field_name("type")?;
                let ty_text = collapse(self.node_text(ty));
                let trait_text = node
                    .child_by_field_name("trait")
                    .map(|t| collapse(self.node_text(t)));
                let negative = self
                    .text
                    .get(node.start_byte()..ty.start_byte())
                    .is_some_and(|head| head.contains('!'));
                let name = match &trait_text {
                    Some(t) if negative => format!("impl !{t} for {ty_text}"),
                    Some(t) => format!("impl {t} for {ty_text}"),
                    None => format!("impl {ty_text}"),
                };
                let base = base_type_name(self, ty);
                let mut item = self.item(SymbolKind::Impl, name, node);
                item.members = node.child_by_field_name("body");
                item.trait_name = trait_text;
                item.member_prefix = Some(base);
                item
            }
            "macro_invocation" if parent.is_none() => {
                let mac = node.child_by_field_name("macro")?;
                self.item(SymbolKind::Macro, format!("{}!", self.node_text(mac)), node)
            }
            _ => return None,
        };
        Some(item)
    }
}
