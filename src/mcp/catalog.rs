//! The tools `patchwise mcp` offers, as plain data: names, descriptions written for the model
//! that reads them, JSON schemas and honest behaviour hints. Names and parameters are a contract
//! with every agent configured against this server (`tests/mcp.rs` pins them); the editing tools
//! take their parameters from the shared registry (`tools::spec`), so the MCP edge and the
//! editor workflows describe the same engine the same way.
//!
//! No protocol types here: `server.rs` turns a [`ToolDef`] into an rmcp `Tool`.

use serde_json::{Map, Value, json};

use crate::tools;

/// The tool names, in the order they are listed.
pub const NAMES: [&str; 10] = [
    "read_file",
    "list_files",
    "search",
    "edit_file",
    "insert_lines",
    "replace_lines",
    "replace_symbol",
    "context",
    "research",
    "research_search",
];

/// Tools that change files (they take `dry_run`).
pub const EDITS: [&str; 4] = [
    "edit_file",
    "insert_lines",
    "replace_lines",
    "replace_symbol",
];

/// What a client may assume about a tool (MCP tool annotations). Hints, set honestly so that
/// clients can auto-approve reads and ask before writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// Changes nothing anywhere.
    pub read_only: bool,
    /// May overwrite or remove existing content (only meaningful when not read-only).
    pub destructive: bool,
    /// Calling again with the same arguments changes nothing more.
    pub idempotent: bool,
    /// Talks to the world outside the workspace.
    pub open_world: bool,
}

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: String,
    /// A JSON Schema object for the arguments.
    pub schema: Value,
    pub hints: Hints,
}

const READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// Edits replace existing text. Only `replace_symbol` converges: a second identical call is a
/// refused no-op, while the same `edit_file`, `insert_lines` or `replace_lines` call can apply
/// again (NEW may contain OLD; line numbers shift).
const fn edit(idempotent: bool) -> Hints {
    Hints {
        read_only: false,
        destructive: true,
        idempotent,
        open_world: false,
    }
}

const DRY_RUN: &str = "Only show the unified diff; write nothing (default false)";

const WRITES: &str = " The file is written to disk at once (atomically; permissions and \
                      symlinks kept) and the answer is the unified diff. dry_run=true shows the \
                      diff without writing.";

/// Every tool, in [`NAMES`] order.
pub fn tools() -> Vec<ToolDef> {
    NAMES.iter().filter_map(|n| tool(n)).collect()
}

/// One tool by name.
pub fn tool(name: &str) -> Option<ToolDef> {
    let registry = |name: &str| tools::spec(name).map(|s| (s.description, s.parameters));
    let (title, description, schema, hints) = match name {
        "read_file" | "list_files" | "search" => {
            let (description, schema) = registry(name)?;
            let title = match name {
                "read_file" => "Read file",
                "list_files" => "List files",
                _ => "Search files",
            };
            (title, description, schema, READ)
        }
        "edit_file" => {
            let (_, schema) = registry(name)?;
            (
                "Edit file",
                "Replace old_string with new_string in a file you have read with read_file in \
                 this session. Copy old_string from read_file's output without the line-number \
                 prefix; slips in indentation, tabs/spaces, trailing whitespace and line endings \
                 are tolerated, but it must match exactly one place (add context lines, or set \
                 replace_all to change every occurrence). The answer names the matching pass \
                 used. A refused edit changes nothing and says why: the closest current text \
                 with line numbers, the first differing line with whitespace made visible, or \
                 every line of an ambiguous match; a file changed on disk since you read it is \
                 refused with its current text."
                    .to_owned()
                    + WRITES,
                with_dry_run(schema),
                edit(false),
            )
        }
        "insert_lines" | "replace_lines" | "replace_symbol" => {
            let (description, schema) = registry(name)?;
            let title = match name {
                "insert_lines" => "Insert lines",
                "replace_lines" => "Replace lines",
                _ => "Replace symbol",
            };
            (
                title,
                description + WRITES,
                with_dry_run(schema),
                edit(name == "replace_symbol"),
            )
        }
        "context" => (
            "Context for a target",
            "What matters in a file for a target, within a token budget: the enclosing items \
             of `line`, the item `symbol` (`name`, `Type::method`, `Class.method`) whole, or \
             the items that best match `query`, with an outline of the rest and line numbers. \
             Cheaper than reading a large file whole; counts as reading it for later edits."
                .to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the workspace root"},
                    "line": {"type": "integer", "minimum": 1, "description": "1-based line the task is about"},
                    "symbol": {"type": "string", "description": "Show this item whole"},
                    "query": {"type": "string", "description": "Show the items that best match this task description"},
                    "budget": {"type": "integer", "minimum": 100, "description": "Tokens the answer may use (default 4000)"}
                },
                "required": ["path"]
            }),
            READ,
        ),
        "research" => (
            "Deep research",
            "Research a question across scholarly, web, feed and workspace sources: results are \
             de-duplicated and scored for credibility, and a model writes a synthesis that \
             cites them by number. Answers the report (synthesis, claims, sources with scores) \
             and its library id. Slow (seconds to minutes); sends progress and can be \
             cancelled. The record is saved in the research library."
                .to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question to research"},
                    "sources": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Only these sources: openalex, arxiv, crossref, semantic_scholar, searxng, brave, feeds, workspace, library, or a configured name"
                    },
                    "depth": {"type": "integer", "minimum": 1, "maximum": 5, "description": "How deep to look; results per source = 5 x depth (default 2)"}
                },
                "required": ["question"]
            }),
            Hints {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: true,
            },
        ),
        "research_search" => (
            "Search earlier research",
            "Find earlier research in the library: records whose question, synthesis or sources \
             mention every word of text, newest first, with their ids. Give a research id as \
             text to see that report again."
                .to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "Words to find, or a research id"}
                },
                "required": ["text"]
            }),
            READ,
        ),
        _ => return None,
    };
    let name = NAMES.iter().find(|n| **n == name)?;
    Some(ToolDef {
        name,
        title,
        description,
        schema,
        hints,
    })
}

fn with_dry_run(mut schema: Value) -> Value {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            "dry_run".to_owned(),
            json!({"type": "boolean", "description": DRY_RUN}),
        );
    }
    schema
}

/// The parameter names of a tool's schema, sorted (for the contract test and error messages).
pub fn parameters(def: &ToolDef) -> Vec<String> {
    let mut names: Vec<String> = def.schema["properties"]
        .as_object()
        .map(Map::keys)
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_has_a_tool_with_an_object_schema() {
        let all = tools();
        assert_eq!(all.len(), NAMES.len());
        for def in &all {
            assert_eq!(def.schema["type"], "object", "{}", def.name);
            assert!(!def.description.is_empty());
            for required in def.schema["required"].as_array().into_iter().flatten() {
                let r = required.as_str().unwrap();
                assert!(parameters(def).iter().any(|p| p == r), "{}: {r}", def.name);
            }
        }
        for name in EDITS {
            let def = tool(name).unwrap();
            assert!(parameters(&def).contains(&"dry_run".to_owned()), "{name}");
            assert!(!def.hints.read_only && def.hints.destructive, "{name}");
        }
        assert!(tool("write_file").is_none());
    }
}
