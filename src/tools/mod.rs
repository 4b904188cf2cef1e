//! The tools a model may call while it works on the workspace: reading files with line numbers,
//! listing and searching files, and editing through the edit engine (replace, line operations,
//! symbol replacement, new files). One registry describes them as [`ToolSpec`]s (names and
//! parameters are a contract); old names resolve through an alias table.
//!
//! A [`Session`] is one run's view of the workspace: paths go through the [`Sandbox`], reads and
//! edits go to the run's [`WorkingCopy`] (open buffers as the editor has them, other files from
//! disk), and the read-before-edit [`Ledger`] refuses edits to files never read or changed since.
//! Tools never write to the disk or the editor, never follow a path out of the workspace, and
//! answer every failure with a message that tells the model what to do next. Writing to disk is
//! the shells' job once the user said so, through [`transaction`] (atomic multi-file writes).

pub mod fs;
mod ops;
pub mod overlay;
pub mod process;
pub mod sandbox;
pub mod transaction;
pub mod working_copy;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::edit::{Ledger, RefusalKind};
use crate::model::{ToolCall, ToolSpec};
use crate::syntax::SizeThresholds;

pub use fs::{EntryKind, FileSystem, RealFs, WalkEntry};
pub use sandbox::{Resolved, Sandbox};
pub use working_copy::{ChangedFile, OpenBuffer, Snapshot, WorkingCopy};

/// The name of the model-agnostic coding agent entry point (an edit workflow run); see
/// `workflow::edit::coding_agent_spec`.
pub const CODING_AGENT: &str = "use_coding_agent";

/// Old or foreign tool names and what they mean now. Add rows here; [`canonical_name`] reads it.
pub const ALIASES: &[(&str, &str)] = &[
    ("use_codestral", CODING_AGENT),
    ("coding_agent", CODING_AGENT),
    ("view_file", "read_file"),
    ("open_file", "read_file"),
    ("cat", "read_file"),
    ("list_dir", "list_files"),
    ("list_directory", "list_files"),
    ("ls", "list_files"),
    ("grep", "search"),
    ("search_files", "search"),
    ("str_replace", "edit_file"),
    ("replace_in_file", "edit_file"),
    ("apply_edit", "edit_file"),
    ("create_file", "write_file"),
    ("insert", "insert_lines"),
    ("regex_replace", "replace_pattern"),
    ("replace_regex", "replace_pattern"),
    ("insert_after", "insert_text"),
    ("append_to_file", "append"),
    ("start_write", "begin_write"),
    ("finish_write", "end_write"),
    ("prepend_to_file", "prepend"),
];

/// Argument names models use for the registry's parameters (per parameter, any tool).
const ARGUMENT_ALIASES: &[(&str, &str)] = &[
    ("file_path", "path"),
    ("filepath", "path"),
    ("filename", "path"),
    ("file", "path"),
    ("old_str", "old_string"),
    ("old", "old_string"),
    ("search", "old_string"),
    ("new_str", "new_string"),
    ("new", "new_string"),
    ("replace", "new_string"),
    ("file_text", "content"),
    ("start_line", "start"),
    ("end_line", "end"),
    ("query", "pattern"),
    ("name", "symbol"),
    ("regex", "pattern"),
    ("replace_all", "all"),
    ("content", "text"),
    ("session", "id"),
    ("session_id", "id"),
];

/// The registry's tool names, in the order they are offered.
pub const TOOL_NAMES: [&str; 14] = [
    "read_file",
    "list_files",
    "search",
    "edit_file",
    "insert_lines",
    "replace_lines",
    "replace_symbol",
    "write_file",
    "replace_pattern",
    "insert_text",
    "prepend",
    "append",
    "begin_write",
    "end_write",
];

/// Tools that only work inside a model run (the workflow's write sessions answer them: their
/// content streams in the model's next answer); other callers should not offer them.
pub fn is_run_tool(name: &str) -> bool {
    matches!(name, "begin_write" | "end_write")
}

/// Tools that only read (they may run in parallel).
pub fn is_read_only(name: &str) -> bool {
    matches!(name, "read_file" | "list_files" | "search")
}

/// The registry name `name` stands for (itself, or through [`ALIASES`]); `None` when unknown.
pub fn canonical_name(name: &str) -> Option<&'static str> {
    let name = name.trim();
    if let Some(n) = TOOL_NAMES.iter().find(|n| **n == name) {
        return Some(n);
    }
    if name == CODING_AGENT {
        return Some(CODING_AGENT);
    }
    ALIASES
        .iter()
        .find(|(old, _)| *old == name)
        .map(|(_, new)| *new)
}

/// The spec of every registry tool.
pub fn specs() -> Vec<ToolSpec> {
    TOOL_NAMES.iter().filter_map(|n| spec(n)).collect()
}

/// The spec of one tool.
pub fn spec(name: &str) -> Option<ToolSpec> {
    let (description, parameters) = match canonical_name(name)? {
        "read_file" => (
            "Read a file of the workspace. Lines are numbered like `cat -n` (number, tab, text); \
             the numbers are not part of the file. The header gives the total line count. Large \
             files are shown in ranges: pass offset (first line, 1-based) and limit (line count) \
             to read more. Read a file before editing it.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the workspace root"},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)"},
                    "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to show"}
                },
                "required": ["path"]
            }),
        ),
        "list_files" => (
            "List files under a directory of the workspace (recursively, honouring .gitignore), \
             with line counts; [LARGE] and [MASSIVE] mark files to read in ranges.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the workspace root (default: the root)"},
                    "pattern": {"type": "string", "description": "Glob to filter files, e.g. `*.rs` or `src/**/*.ts`"}
                }
            }),
        ),
        "search" => (
            "Search file contents for a text (or a regular expression with regex=true). Answers \
             `path:line: text` for each match, capped.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The text to find"},
                    "path": {"type": "string", "description": "File or directory to search (default: the workspace)"},
                    "regex": {"type": "boolean", "description": "Treat pattern as a regular expression (default false)"}
                },
                "required": ["pattern"]
            }),
        ),
        "edit_file" => (
            "Replace old_string with new_string in a file you have read. Copy old_string from the \
             file exactly (without the line-number prefix), with enough lines to match exactly \
             one place; set replace_all to change every occurrence. If the edit is refused, the \
             answer says why and shows the current text.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_string": {"type": "string", "description": "Exact text to replace"},
                    "new_string": {"type": "string", "description": "Replacement text"},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)"}
                },
                "required": ["path", "old_string", "new_string"]
            }),
        ),
        "insert_lines" => (
            "Insert whole lines into a file you have read: after line `line` (0 inserts at the \
             top), or before it when before=true.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "line": {"type": "integer", "minimum": 0, "description": "1-based line number as read_file shows it"},
                    "text": {"type": "string", "description": "The lines to insert"},
                    "before": {"type": "boolean", "description": "Insert before the line instead of after (default false)"}
                },
                "required": ["path", "line", "text"]
            }),
        ),
        "replace_lines" => (
            "Replace lines start..=end (1-based, inclusive, as read_file shows them) of a file \
             you have read with text; empty text deletes them.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "start": {"type": "integer", "minimum": 1},
                    "end": {"type": "integer", "minimum": 1},
                    "text": {"type": "string"}
                },
                "required": ["path", "start", "end", "text"]
            }),
        ),
        "replace_symbol" => (
            "Replace a whole function, method, struct, class or other item of a file you have \
             read, found by name (`name`, `Type::method` or `Class.method`), with text (the \
             complete new item). Empty text deletes it.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "symbol": {"type": "string"},
                    "text": {"type": "string"}
                },
                "required": ["path", "symbol", "text"]
            }),
        ),
        "write_file" => (
            "Create a new file with content. Only for files that do not exist: change existing \
             files with edit_file.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"}
                },
                "required": ["path", "content"]
            }),
        ),
        "replace_pattern" => (
            "Replace what a regular expression matches in a file you have read (Rust regex \
             syntax; ^ and $ match at line starts and ends). $1 or ${name} in replacement insert \
             a group. Refused when it matches more than once, unless all=true.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "pattern": {"type": "string", "description": "The regular expression"},
                    "replacement": {"type": "string", "description": "The text that replaces each match"},
                    "all": {"type": "boolean", "description": "Replace every match (default false)"}
                },
                "required": ["path", "pattern", "replacement"]
            }),
        ),
        "insert_text" => (
            "Insert text after (or, with before=true, before) an anchor in a file you have read. \
             The anchor is text copied from the file (whole lines, without the line-number \
             prefix) that occurs exactly once; an anchor found in several places is refused \
             with their line numbers.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "anchor": {"type": "string", "description": "Text of the file that occurs once"},
                    "text": {"type": "string", "description": "The text to insert"},
                    "before": {"type": "boolean", "description": "Insert before the anchor instead of after (default false)"}
                },
                "required": ["path", "anchor", "text"]
            }),
        ),
        "prepend" => (
            "Insert text as the first lines of a file you have read.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "text": {"type": "string"}
                },
                "required": ["path", "text"]
            }),
        ),
        "append" => (
            "Add text as the last lines of a file you have read.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "text": {"type": "string"}
                },
                "required": ["path", "text"]
            }),
        ),
        "begin_write" => (
            "Start writing a long file as plain text, instead of putting it in a JSON string: \
             answers with a session id and an end marker. Then send the whole content as your \
             next answer (plain text, exactly as the file should read) and end it with the \
             marker on its own line. mode: create (a new file), overwrite (replace a file you \
             have read), append (add to the end of a file you have read).",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "mode": {"type": "string", "enum": ["create", "overwrite", "append"], "description": "Default create"}
                },
                "required": ["path"]
            }),
        ),
        "end_write" => (
            "Confirm that the content of a write session is complete as it is, when you were \
             told it looks incomplete (complete=true).",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The write session id"},
                    "complete": {"type": "boolean"}
                },
                "required": ["id"]
            }),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: canonical_name(name)?.to_owned(),
        description: description.to_owned(),
        parameters,
    })
}

/// Why a tool call failed, written for the model that will read it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool `{name}`; the tools are: {}", known.join(", "))]
    UnknownTool { name: String, known: Vec<String> },
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments { tool: String, message: String },
    #[error("{path} does not exist.{}", nearby_text(.nearby))]
    NotFound { path: String, nearby: Vec<String> },
    #[error("{path} is a directory; use list_files to see what it contains")]
    IsDirectory { path: String },
    #[error("permission denied for {path}: {reason}")]
    Permission { path: String, reason: String },
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} already exists; read it and change it with edit_file instead of write_file")]
    Exists { path: String },
    #[error("edit refused for {path}: {message}")]
    Refused {
        path: String,
        kind: RefusalKind,
        message: String,
    },
    #[error(
        "edit refused for {path}: it would introduce syntax errors, so nothing was changed:\n{problems}\nFix the new text and call the tool again"
    )]
    Syntax { path: String, problems: String },
    #[error("{tool} timed out after {}s: {detail}", seconds)]
    Timeout {
        tool: String,
        seconds: u64,
        detail: String,
    },
    #[error("{tool} is not available here: {reason}")]
    NotAvailable { tool: String, reason: String },
}

fn nearby_text(nearby: &[String]) -> String {
    if nearby.is_empty() {
        " Use list_files to see which files exist.".to_owned()
    } else {
        format!(
            " Nearby: {}. Use list_files to see more.",
            nearby.join(", ")
        )
    }
}

impl ToolError {
    /// The engine's refusal kind, when the engine refused an edit.
    pub fn refusal_kind(&self) -> Option<&RefusalKind> {
        match self {
            ToolError::Refused { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// Whether an edit was refused (by the engine, the ledger or the parse check).
    pub fn is_edit_refusal(&self) -> bool {
        matches!(self, ToolError::Refused { .. } | ToolError::Syntax { .. })
    }
}

/// What a tool call did, beyond its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Read or listed something.
    Ok,
    /// Changed (or created) a file in the working copy.
    Edited {
        path: PathBuf,
        matched_by: String,
    },
    Failed(ToolError),
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The call's id (the model matches results by it).
    pub call_id: String,
    /// The registry name (after aliases), or the name as called when unknown.
    pub name: String,
    /// The text the model reads.
    pub content: String,
    pub status: Status,
}

impl ToolOutcome {
    pub fn is_error(&self) -> bool {
        matches!(self.status, Status::Failed(_))
    }
}

/// Limits and checks of a session.
#[derive(Debug, Clone)]
pub struct ToolOptions {
    /// Lines `read_file` shows when no limit is given.
    pub read_lines: usize,
    /// Characters after which a very long line is cut in `read_file` (with a note).
    pub max_line_chars: usize,
    pub max_search_matches: usize,
    pub max_list_entries: usize,
    /// Files larger than this are skipped by `search`.
    pub max_file_bytes: u64,
    /// Files larger than this are tagged by size in `list_files` instead of being read to
    /// count their lines.
    pub max_count_bytes: u64,
    /// Wall-clock limit of one `search` or `list_files` walk.
    pub walk_timeout: Duration,
    /// Refuse edits that add syntax errors (tree-sitter).
    pub parse_check: bool,
    pub size: SizeThresholds,
}

impl Default for ToolOptions {
    fn default() -> Self {
        ToolOptions {
            read_lines: 2000,
            max_line_chars: 2000,
            max_search_matches: 100,
            max_list_entries: 500,
            max_file_bytes: 4 * 1024 * 1024,
            max_count_bytes: 1024 * 1024,
            walk_timeout: Duration::from_secs(20),
            parse_check: true,
            size: SizeThresholds::default(),
        }
    }
}

/// One run's tools: sandbox, working copy, ledger and options.
pub struct Session {
    pub sandbox: Sandbox,
    pub fs: Arc<dyn FileSystem>,
    pub copy: WorkingCopy,
    pub ledger: Ledger,
    pub options: ToolOptions,
}

/// How a write session writes its whole content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WholeMode {
    /// A new file; refused when the path exists.
    Create,
    /// Replace a file read in this run.
    Overwrite,
    /// Add to the end of a file read in this run.
    Append,
}

impl WholeMode {
    pub fn parse(text: &str) -> Option<WholeMode> {
        match text.trim().to_ascii_lowercase().as_str() {
            "create" | "new" => Some(WholeMode::Create),
            "overwrite" | "replace" | "rewrite" => Some(WholeMode::Overwrite),
            "append" => Some(WholeMode::Append),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WholeMode::Create => "create",
            WholeMode::Overwrite => "overwrite",
            WholeMode::Append => "append",
        }
    }
}

/// A file checked for a whole write: where it is and, unless it is new, its current text and
/// buffer version.
#[derive(Debug, Clone)]
pub struct WholeTarget {
    pub resolved: Resolved,
    pub current: Option<(String, Option<i32>)>,
}

/// A ledger entry a parallel read produces (applied in call order afterwards).
type ReadRecord = (PathBuf, String, Option<i32>);

impl Session {
    pub fn new(
        roots: &[PathBuf],
        fs: Arc<dyn FileSystem>,
        open: Snapshot,
        options: ToolOptions,
    ) -> Session {
        let sandbox = Sandbox::new(roots, fs.as_ref());
        Session {
            sandbox,
            fs,
            copy: WorkingCopy::new(open),
            ledger: Ledger::new(),
            options,
        }
    }

    /// Checks that `path` may be written whole in `mode`: `create` refuses a path that exists,
    /// `overwrite` and `append` need a file read in this run and unchanged since (the ledger).
    pub fn check_whole(&self, path: &str, mode: WholeMode) -> Result<WholeTarget, ToolError> {
        ops::check_whole(self, path, mode)
    }

    /// Puts `text` (the file's whole new text) into the working copy for a checked target;
    /// answers a line for the model. No parse check: the caller validated the content.
    pub fn write_whole(&mut self, target: &WholeTarget, text: String) -> String {
        ops::write_whole(self, target, text)
    }

    /// Runs one call.
    pub fn execute(&mut self, call: &ToolCall) -> ToolOutcome {
        self.execute_all(std::slice::from_ref(call)).remove(0)
    }

    /// Runs calls in order; consecutive read-only calls run in parallel, writes one by one.
    pub fn execute_all(&mut self, calls: &[ToolCall]) -> Vec<ToolOutcome> {
        let mut out = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            let read_only = |c: &ToolCall| canonical_name(&c.name).is_some_and(is_read_only);
            if read_only(&calls[i]) {
                let mut j = i;
                while j < calls.len() && read_only(&calls[j]) {
                    j += 1;
                }
                let results: Vec<(ToolOutcome, Option<ReadRecord>)> = if j - i == 1 {
                    vec![self.run_read(&calls[i])]
                } else {
                    let this = &*self;
                    std::thread::scope(|s| {
                        let handles: Vec<_> = calls[i..j]
                            .iter()
                            .map(|c| s.spawn(move || this.run_read(c)))
                            .collect();
                        handles
                            .into_iter()
                            .zip(&calls[i..j])
                            .map(|(h, c)| {
                                h.join().unwrap_or_else(|_| {
                                    (
                                        failed(
                                            c,
                                            canonical_name(&c.name).unwrap_or("?"),
                                            ToolError::Unreadable {
                                                path: "?".into(),
                                                reason: "the tool crashed".into(),
                                            },
                                        ),
                                        None,
                                    )
                                })
                            })
                            .collect()
                    })
                };
                for (outcome, record) in results {
                    if let Some((path, text, version)) = record {
                        match version {
                            Some(v) => self.ledger.record_version(path, &text, v),
                            None => self.ledger.record_read(path, &text),
                        }
                    }
                    out.push(outcome);
                }
                i = j;
            } else {
                out.push(self.run_write(&calls[i]));
                i += 1;
            }
        }
        out
    }

    fn run_read(&self, call: &ToolCall) -> (ToolOutcome, Option<ReadRecord>) {
        let name = canonical_name(&call.name).unwrap_or("");
        let args = match arguments(call, name) {
            Ok(a) => a,
            Err(e) => return (failed(call, name, e), None),
        };
        let result = match name {
            "read_file" => ops::read_file(self, &args).map(|(text, record)| (text, Some(record))),
            "list_files" => ops::list_files(self, &args).map(|t| (t, None)),
            "search" => ops::search(self, &args).map(|t| (t, None)),
            _ => unreachable_tool(name),
        };
        match result {
            Ok((content, record)) => (
                ToolOutcome {
                    call_id: call.id.clone(),
                    name: name.to_owned(),
                    content,
                    status: Status::Ok,
                },
                record,
            ),
            Err(e) => (failed(call, name, e), None),
        }
    }

    fn run_write(&mut self, call: &ToolCall) -> ToolOutcome {
        let Some(name) = canonical_name(&call.name) else {
            let mut known: Vec<String> = TOOL_NAMES.iter().map(|s| (*s).to_owned()).collect();
            known.sort();
            return failed(
                call,
                &call.name,
                ToolError::UnknownTool {
                    name: call.name.clone(),
                    known,
                },
            );
        };
        if name == CODING_AGENT {
            return failed(
                call,
                name,
                ToolError::NotAvailable {
                    tool: name.to_owned(),
                    reason: "this is an edit run and you are the coding agent; make the \
                             change with edit_file (deleting or renaming files is not possible \
                             in an edit run)"
                        .to_owned(),
                },
            );
        }
        let args = match arguments(call, name) {
            Ok(a) => a,
            Err(e) => return failed(call, name, e),
        };
        match ops::write(self, name, &args) {
            Ok((content, path, matched_by)) => ToolOutcome {
                call_id: call.id.clone(),
                name: name.to_owned(),
                content,
                status: Status::Edited { path, matched_by },
            },
            Err(e) => failed(call, name, e),
        }
    }
}

fn unreachable_tool(name: &str) -> Result<(String, Option<ReadRecord>), ToolError> {
    Err(ToolError::UnknownTool {
        name: name.to_owned(),
        known: TOOL_NAMES.iter().map(|s| (*s).to_owned()).collect(),
    })
}

fn failed(call: &ToolCall, name: &str, error: ToolError) -> ToolOutcome {
    ToolOutcome {
        call_id: call.id.clone(),
        name: name.to_owned(),
        content: error.to_string(),
        status: Status::Failed(error),
    }
}

/// The call's arguments as an object with registry parameter names, checked against the spec's
/// required parameters.
fn arguments(call: &ToolCall, name: &str) -> Result<Map<String, Value>, ToolError> {
    let invalid = |message: String| ToolError::InvalidArguments {
        tool: name.to_owned(),
        message,
    };
    // Written for the model already: which argument, what is wrong, how to write it.
    if let Some(err) = &call.arguments_error {
        return Err(invalid(err.clone()));
    }
    let raw = match &call.arguments {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(invalid(
                    "expected a JSON object of arguments, found a string".to_owned(),
                ));
            }
        },
        other => {
            return Err(invalid(format!(
                "expected a JSON object of arguments, found {}",
                kind_of(other)
            )));
        }
    };
    let spec = spec(name).ok_or_else(|| invalid("unknown tool".to_owned()))?;
    let props = spec.parameters["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut args = Map::new();
    for (k, v) in raw {
        let key = if props.contains_key(&k) {
            k
        } else {
            ARGUMENT_ALIASES
                .iter()
                .find(|(a, real)| *a == k && props.contains_key(*real))
                .map(|(_, real)| (*real).to_owned())
                .unwrap_or(k)
        };
        args.entry(key).or_insert(v);
    }
    if let Some(required) = spec.parameters["required"].as_array() {
        let missing: Vec<&str> = required
            .iter()
            .filter_map(Value::as_str)
            .filter(|r| args.get(*r).is_none_or(Value::is_null))
            .collect();
        if !missing.is_empty() {
            return Err(invalid(format!(
                "missing {}; expected {}",
                missing.join(", "),
                spec.parameters["properties"]
            )));
        }
    }
    Ok(args)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
