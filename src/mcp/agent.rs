//! What an MCP client's calls do, without the protocol: one [`Agent`] per MCP session owns a
//! `tools::Session` (the workspace sandbox and the read-before-edit ledger keyed on content
//! hashes, exactly as the editor workflows use them) and answers every call with a [`CallReply`]:
//! text for the model, and whether it is an error the model should act on.
//!
//! Unlike an editor run, an agent has no proposal to accept: an edit that the engine applies is
//! written to disk at once (atomically, through `workflow::session::write_files`, the writer
//! `develop --apply` and ACP share); `dry_run` shows the same
//! diff and writes nothing. The working copy is emptied after every call, so the disk stays the
//! one truth and a file changed on disk since it was read is refused as stale. Nothing here may
//! write outside the workspace, leave half a file, or record a read the model did not see.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::cli::context::{ContextArgs, render_text};
use crate::config::Config;
use crate::edit::unified_diff;
use crate::model::ToolCall;
use crate::research;
use crate::store::StoreError;
use crate::tools::transaction::TransactionError;
use crate::tools::{ChangedFile, RealFs, Session, Snapshot, Status, ToolOptions};
use crate::workflow::session::research::RunOptions;
use crate::workflow::session::{self, RunEnded, RunEvent, RunKind, RunOutcome, Runs};
use crate::workspace::ReadError;

use super::catalog;

/// Arguments larger than this are refused before any work (a model that sends more is looping
/// or pasting a whole repository).
pub const MAX_ARGUMENT_BYTES: usize = 4 * 1024 * 1024;

/// The answer to one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallReply {
    pub text: String,
    /// The call failed or was refused; `text` says what to do next.
    pub is_error: bool,
}

impl CallReply {
    pub fn ok(text: impl Into<String>) -> CallReply {
        CallReply {
            text: text.into(),
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> CallReply {
        CallReply {
            text: text.into(),
            is_error: true,
        }
    }
}

/// One MCP session's view of the workspace.
pub struct Agent {
    session: Mutex<Session>,
    config: Config,
    roots: Vec<PathBuf>,
    /// Research calls are runs of the session layer, as in the editors.
    runs: Arc<Runs>,
}

impl Agent {
    /// An agent on `roots` (the first is the primary root: research's workspace source).
    pub fn new(roots: Vec<PathBuf>, config: Config) -> Agent {
        let session = Session::new(
            &roots,
            Arc::new(RealFs),
            Snapshot::new(),
            ToolOptions::default(),
        );
        Agent {
            session: Mutex::new(session),
            config,
            roots,
            runs: Runs::new(),
        }
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Runs a tool other than `research` (blocking: file I/O). `name` must be one of
    /// [`catalog::NAMES`]; the caller answers unknown names as a protocol error.
    pub fn call(&self, name: &str, mut args: Map<String, Value>) -> CallReply {
        if let Some(reply) = too_large(name, &args) {
            return reply;
        }
        match name {
            "read_file" | "list_files" | "search" => self.registry(name, args),
            "edit_file" | "insert_lines" | "replace_lines" | "replace_symbol" => {
                let dry_run = match args.remove("dry_run") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => b,
                    Some(other) => {
                        return CallReply::error(format!(
                            "invalid arguments for {name}: expected `dry_run` to be true or \
                             false, found {other}"
                        ));
                    }
                };
                self.edit(name, args, dry_run)
            }
            "context" => self.context(&args),
            "research_search" => self.research_search(&args),
            "research" => CallReply::error("research runs asynchronously; call Agent::research"),
            other => CallReply::error(format!(
                "unknown tool `{other}`; the tools are: {}",
                catalog::NAMES.join(", ")
            )),
        }
    }

    fn session(&self) -> MutexGuard<'_, Session> {
        // A panic inside a tool leaves the session as it was before the call's write.
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn registry(&self, name: &str, args: Map<String, Value>) -> CallReply {
        let outcome = self.session().execute(&tool_call(name, args));
        CallReply {
            is_error: outcome.is_error(),
            text: outcome.content,
        }
    }

    fn edit(&self, name: &str, args: Map<String, Value>, dry_run: bool) -> CallReply {
        let mut session = self.session();
        let ledger = session.ledger.clone();
        let outcome = session.execute(&tool_call(name, args));
        let changes = session.copy.changes();
        session.copy.reset();
        let Status::Edited { .. } = outcome.status else {
            return CallReply {
                is_error: outcome.is_error(),
                text: outcome.content,
            };
        };
        // The first line says where and by which pass: `edited a.rs at line 3 (matched by
        // indentation(+4)).`
        let summary = outcome
            .content
            .lines()
            .next()
            .unwrap_or("edited")
            .to_owned();
        let mut diff = String::new();
        for change in &changes {
            let rel = self.rel(&change.path);
            diff.push_str(&unified_diff(
                change.original.as_deref().unwrap_or(""),
                &change.text,
                &rel,
            ));
        }
        if dry_run {
            session.ledger = ledger;
            let summary = summary.strip_prefix("edited ").unwrap_or(&summary);
            return CallReply::ok(format!(
                "dry run, nothing written: would edit {summary}\n{diff}"
            ));
        }
        if let Err(err) = commit(&changes) {
            session.ledger = ledger;
            let mut message = err.to_string();
            for change in &changes {
                message =
                    message.replace(&change.path.display().to_string(), &self.rel(&change.path));
            }
            return CallReply::error(message);
        }
        CallReply::ok(format!("{summary}\n{diff}"))
    }

    fn context(&self, args: &Map<String, Value>) -> CallReply {
        let invalid =
            |message: String| CallReply::error(format!("invalid arguments for context: {message}"));
        let Some(path) = args.get("path").and_then(Value::as_str) else {
            return invalid("expected `path` to be a string".to_owned());
        };
        let line = match optional_integer(args, "line") {
            Ok(l) => l,
            Err(e) => return invalid(e),
        };
        let budget = match optional_integer(args, "budget") {
            Ok(b) => b.unwrap_or(4000).clamp(100, 100_000),
            Err(e) => return invalid(e),
        };
        let text_arg = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let (symbol, query) = (text_arg("symbol"), text_arg("query"));
        if symbol.is_some() && query.is_some() {
            return invalid("give at most one of `symbol` and `query`".to_owned());
        }
        let mut session = self.session();
        let fs = session.fs.clone();
        let resolved = match session.sandbox.resolve(path, fs.as_ref()) {
            Ok(r) => r,
            Err(e) => return CallReply::error(e.to_string()),
        };
        let text = match fs.read_text(&resolved.abs) {
            Ok(t) => t,
            Err(e) => return CallReply::error(read_error(&e, &resolved.rel)),
        };
        let context_args = ContextArgs {
            target: resolved.rel.clone(),
            symbol,
            query,
            budget,
            encoding: "cl100k_base".to_owned(),
            whole_file_bytes: 8 * 1024,
            language: None,
        };
        match render_text(
            &text,
            &resolved.rel,
            line.map(|l| (l.max(1), None)),
            &context_args,
        ) {
            Ok((out, found)) => {
                session.ledger.record_read(resolved.abs, &text);
                CallReply {
                    text: out,
                    is_error: !found,
                }
            }
            Err(e) => invalid(format!("{e:#}")),
        }
    }

    fn research_search(&self, args: &Map<String, Value>) -> CallReply {
        let Some(text) = args
            .get("text")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
        else {
            return CallReply::error(
                "invalid arguments for research_search: expected `text` to be a non-empty \
                 string (words to find, or a research id)",
            );
        };
        let library = match research::open_library(&self.config) {
            Ok(l) => l,
            Err(e) => return CallReply::error(format!("cannot open the research library: {e}")),
        };
        // A single word that names a record (an id or a unique prefix of one) shows it.
        if !text.contains(char::is_whitespace) && text.len() >= 4 {
            match library.get(text) {
                Ok(record) => {
                    return CallReply::ok(format!(
                        "{}\nlibrary id: {}\n",
                        research::report::render(&record).trim_end(),
                        record.id
                    ));
                }
                Err(StoreError::NotFound(_) | StoreError::Ambiguous { .. }) => {}
                Err(e) => {
                    return CallReply::error(format!("cannot read the research library: {e}"));
                }
            }
        }
        match library.search(text, 20) {
            Ok(found) if found.is_empty() => CallReply::ok(format!(
                "no earlier research mentions every word of `{text}`; run research to start one"
            )),
            Ok(found) => {
                let mut out = format!(
                    "{} record{} (newest first); pass an id as text to read its report:\n",
                    found.len(),
                    if found.len() == 1 { "" } else { "s" }
                );
                for s in found {
                    out.push_str(&format!("{}  {}  {}\n", s.id, s.created_at, s.query));
                }
                CallReply::ok(out)
            }
            Err(e) => CallReply::error(format!("cannot search the research library: {e}")),
        }
    }

    /// Runs deep research. `progress` gets the percent of the whole run (0–100) and a message;
    /// `cancel` stops outstanding requests and saves nothing.
    pub async fn research(
        &self,
        args: &Map<String, Value>,
        progress: impl Fn(u8, String) + Send + Sync,
        cancel: CancellationToken,
    ) -> CallReply {
        if let Some(reply) = too_large("research", args) {
            return reply;
        }
        let invalid =
            |message: &str| CallReply::error(format!("invalid arguments for research: {message}"));
        let Some(question) = args
            .get("question")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
        else {
            return invalid("expected `question` to be a non-empty string");
        };
        let sources = match args.get("sources") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let names: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect();
                match names {
                    Some(n) if !n.is_empty() => Some(n),
                    Some(_) => None,
                    None => return invalid("expected `sources` to be an array of source names"),
                }
            }
            // A model writing "openalex,arxiv".
            Some(Value::String(s)) => Some(
                s.split(',')
                    .map(|p| p.trim().to_owned())
                    .filter(|p| !p.is_empty())
                    .collect(),
            ),
            Some(_) => return invalid("expected `sources` to be an array of source names"),
        };
        let depth = match optional_integer(args, "depth") {
            Ok(None) => None,
            Ok(Some(d)) if (1..=5).contains(&d) => Some(d as u8),
            Ok(Some(d)) => return invalid(&format!("expected `depth` from 1 to 5, found {d}")),
            Err(e) => return invalid(&e),
        };
        let options = RunOptions {
            sources,
            depth,
            workspace: self.roots.first().cloned(),
            ..RunOptions::default()
        };
        let mut run = self
            .runs
            .start_run_within(RunKind::Research, question, &cancel);
        let events = run.take_events();
        let mut ended = RunEnded::default();
        let forward = async {
            let Some(mut events) = events else { return };
            while let Some(event) = ended.next(&mut events).await {
                if let RunEvent::Progress {
                    percent, message, ..
                } = event
                {
                    progress(percent.min(100) as u8, message);
                }
            }
        };
        let research = session::research::run(&self.config, question, options, &run);
        tokio::join!(research, forward);
        match (ended.research(), &ended.outcome) {
            (Some(run), _) => CallReply::ok(format!(
                "{}\nlibrary id: {}\nreport file: {}\n",
                research::report::render(&run.record).trim_end(),
                run.record.id,
                run.report.display()
            )),
            (None, RunOutcome::Cancelled) => {
                CallReply::error("research cancelled; nothing was saved")
            }
            (None, outcome) => CallReply::error(format!("research failed: {outcome}")),
        }
    }

    /// `path` relative to the root it is under.
    fn rel(&self, path: &Path) -> String {
        self.roots
            .iter()
            .find_map(|r| path.strip_prefix(r).ok())
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|| path.display().to_string())
    }
}

fn tool_call(name: &str, args: Map<String, Value>) -> ToolCall {
    ToolCall {
        id: "mcp".to_owned(),
        name: name.to_owned(),
        arguments: Value::Object(args),
        arguments_error: None,
        provider_data: None,
    }
}

fn too_large(name: &str, args: &Map<String, Value>) -> Option<CallReply> {
    let size: usize = args.iter().map(|(k, v)| k.len() + value_size(v)).sum();
    (size > MAX_ARGUMENT_BYTES).then(|| {
        CallReply::error(format!(
            "{name} refused: its arguments hold {size} bytes, more than the {} MiB a call may \
             carry; split the change into smaller edits",
            MAX_ARGUMENT_BYTES / (1024 * 1024)
        ))
    })
}

/// Bytes of text in a JSON value (strings count their length; structure counts a little).
fn value_size(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(value_size).sum::<usize>() + a.len(),
        Value::Object(m) => m.iter().map(|(k, v)| k.len() + value_size(v)).sum(),
        _ => 8,
    }
}

fn optional_integer(args: &Map<String, Value>, key: &str) -> Result<Option<usize>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .map(|n| Some(n as usize))
            .ok_or_else(|| format!("expected `{key}` to be a positive integer, found {n}")),
        Some(Value::String(s)) => s
            .trim()
            .parse::<usize>()
            .map(Some)
            .map_err(|_| format!("expected `{key}` to be a positive integer, found {s:?}")),
        Some(other) => Err(format!(
            "expected `{key}` to be a positive integer, found {other}"
        )),
    }
}

fn read_error(e: &ReadError, rel: &str) -> String {
    match e {
        ReadError::NotFound { .. } => {
            format!("{rel} does not exist; use list_files to see which files exist")
        }
        ReadError::IsDirectory { .. } => {
            format!("{rel} is a directory; use list_files to see what it contains")
        }
        ReadError::InvalidUtf8 { offset, .. } => {
            format!("cannot read {rel}: not UTF-8 text (first invalid byte at offset {offset})")
        }
        ReadError::Io { source, .. } => format!("cannot read {rel}: {source}"),
    }
}

/// Writes the call's changes to disk through the one writer every edge shares
/// (`workflow::session::write_files`: one transaction, refused when a file on disk is no longer
/// the text the edit was made against).
fn commit(changes: &[ChangedFile]) -> Result<(), TransactionError> {
    session::write_files(changes.iter().map(|c| session::FileWrite {
        path: &c.path,
        before: c.original.as_deref(),
        after: c.text.clone(),
    }))
}
