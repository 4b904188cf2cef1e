//! The tools' implementations over a [`Session`]: read-only tools take `&Session` (they may run
//! in parallel), edit tools `&mut Session`. Every edit goes through the ledger, the edit engine
//! and (optionally) a parse check, and lands in the working copy only.

use std::path::{Path, PathBuf};
use std::time::Instant;

use globset::{Glob, GlobMatcher};
use regex::{Regex, RegexBuilder};
use serde_json::{Map, Value};

use crate::edit::text::clip;
use crate::edit::{self, Operation, Refusal, ReplaceOptions};
use crate::syntax::size::count_lines;
use crate::syntax::validate::{self, Format};
use crate::syntax::{Language, SyntaxTree, introduced_problems, replace_symbol, size_tag};
use crate::workspace::ReadError;

use super::fs::EntryKind;
use super::sandbox::Resolved;
use super::{ReadRecord, Session, ToolError, WholeMode, WholeTarget};

type Args = Map<String, Value>;

fn string(args: &Args, key: &str) -> Option<String> {
    match args.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        // A model sending lines as an array: join them.
        Value::Array(a) => Some(
            a.iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Value::Object(_) => None,
    }
}

fn required_string(args: &Args, tool: &str, key: &str) -> Result<String, ToolError> {
    string(args, key).ok_or_else(|| ToolError::InvalidArguments {
        tool: tool.to_owned(),
        message: format!("expected `{key}` to be a string"),
    })
}

fn number(args: &Args, tool: &str, key: &str) -> Result<Option<usize>, ToolError> {
    let bad = |found: String| ToolError::InvalidArguments {
        tool: tool.to_owned(),
        message: format!("expected `{key}` to be a non-negative integer, found {found}"),
    };
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .map(|n| Some(n as usize))
            .ok_or_else(|| bad(n.to_string())),
        Some(Value::String(s)) => s
            .trim()
            .parse::<usize>()
            .map(Some)
            .map_err(|_| bad(format!("{s:?}"))),
        Some(other) => Err(bad(other.to_string())),
    }
}

fn flag(args: &Args, key: &str) -> bool {
    match args.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => {
            matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "1")
        }
        Some(Value::Number(n)) => n.as_u64() == Some(1),
        _ => false,
    }
}

fn resolve(session: &Session, path: &str) -> Result<Resolved, ToolError> {
    session.sandbox.resolve(path, session.fs.as_ref())
}

/// Reads a file of the working copy, turning read errors into guidance.
fn read(session: &Session, r: &Resolved) -> Result<(String, Option<i32>), ToolError> {
    if session.fs.kind(&r.abs) == Some(EntryKind::Dir) {
        return Err(ToolError::IsDirectory {
            path: r.rel.clone(),
        });
    }
    session
        .copy
        .read(&r.abs, session.fs.as_ref())
        .map_err(|e| match e {
            ReadError::NotFound { .. } => ToolError::NotFound {
                path: r.rel.clone(),
                nearby: nearby(session, r),
            },
            ReadError::IsDirectory { .. } => ToolError::IsDirectory { path: r.rel.clone() },
            ReadError::InvalidUtf8 { offset, .. } => ToolError::Unreadable {
                path: r.rel.clone(),
                reason: format!(
                    "not UTF-8 text (first invalid byte at offset {offset}); it cannot be read or edited"
                ),
            },
            ReadError::Io { source, .. } => ToolError::Unreadable {
                path: r.rel.clone(),
                reason: source.to_string(),
            },
        })
}

/// What exists near a missing path: the entries of its nearest existing directory, and files
/// with the same name elsewhere in the workspace.
fn nearby(session: &Session, r: &Resolved) -> Vec<String> {
    let mut out = Vec::new();
    let name = r.abs.file_name().map(|n| n.to_string_lossy().into_owned());
    if let (Some(name), Some(root)) = (&name, session.sandbox.primary()) {
        let (files, _) = session.fs.walk(root, 20_000);
        for f in files {
            if f.path.file_name().map(|n| n.to_string_lossy()) == Some(name.into()) {
                out.push(rel_of(session, &f.path));
                if out.len() >= 5 {
                    break;
                }
            }
        }
    }
    let mut dir = r.abs.parent().map(Path::to_path_buf);
    while let Some(d) = dir {
        if session.fs.kind(&d) == Some(EntryKind::Dir) {
            let prefix = rel_of(session, &d);
            let entries = session.fs.list_dir(&d);
            let shown = entries.len().min(20);
            for e in &entries[..shown] {
                let p = if prefix == "." {
                    e.clone()
                } else {
                    format!("{prefix}/{e}")
                };
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            if entries.len() > shown {
                out.push(format!("… {} more in {prefix}", entries.len() - shown));
            }
            break;
        }
        if !d.starts_with(session.sandbox.primary().unwrap_or(Path::new("/"))) {
            break;
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    out
}

/// `path` relative to the root it is under, `/`-separated.
pub(super) fn rel_of(session: &Session, path: &Path) -> String {
    for root in session.sandbox.roots() {
        if let Ok(rel) = path.strip_prefix(root) {
            let s = rel.to_string_lossy().replace('\\', "/");
            return if s.is_empty() { ".".to_owned() } else { s };
        }
    }
    path.display().to_string()
}

// ---------------------------------------------------------------------------------------------
// read_file

pub(super) fn read_file(session: &Session, args: &Args) -> Result<(String, ReadRecord), ToolError> {
    let path = required_string(args, "read_file", "path")?;
    let r = resolve(session, &path)?;
    let (text, version) = read(session, &r)?;
    let offset = number(args, "read_file", "offset")?.unwrap_or(1).max(1);
    let limit = number(args, "read_file", "limit")?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = count_lines(&text);
    let tag = size_tag(total, &session.options.size)
        .map(|t| format!(" {t}"))
        .unwrap_or_default();
    let mut out = String::new();
    if total == 0 {
        out.push_str(&format!("{} (empty file, 0 lines)\n", r.rel));
        return Ok((out, (r.abs, text, version)));
    }
    if offset > total {
        return Err(ToolError::InvalidArguments {
            tool: "read_file".to_owned(),
            message: format!(
                "offset {offset} is past the end of {} ({total} lines); use an offset from 1 to {total}",
                r.rel
            ),
        });
    }
    let limit = limit.unwrap_or(session.options.read_lines).max(1);
    let last = (offset - 1 + limit).min(total);
    if offset == 1 && last == total {
        out.push_str(&format!("{} ({total} lines){tag}\n", r.rel));
    } else {
        out.push_str(&format!(
            "{} ({total} lines){tag}, showing lines {offset}-{last}\n",
            r.rel
        ));
    }
    for (i, line) in lines.iter().enumerate().take(last).skip(offset - 1) {
        let content = line.trim_end_matches(['\n', '\r']);
        let max = session.options.max_line_chars;
        if content.chars().count() > max {
            out.push_str(&format!(
                "{:>6}\t{} [line cut at {max} characters]\n",
                i + 1,
                clip(content, max)
            ));
        } else {
            out.push_str(&format!("{:>6}\t{content}\n", i + 1));
        }
    }
    if last < total {
        let rest = if last + 1 == total {
            format!("line {total}")
        } else {
            format!("lines {}-{total}", last + 1)
        };
        out.push_str(&format!(
            "… {rest} not shown; call read_file with offset={} to read on\n",
            last + 1
        ));
    }
    Ok((out, (r.abs, text, version)))
}

// ---------------------------------------------------------------------------------------------
// list_files

fn glob(pattern: &str) -> Result<GlobMatcher, ToolError> {
    Glob::new(pattern.trim())
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::InvalidArguments {
            tool: "list_files".to_owned(),
            message: format!(
                "the pattern is not a valid glob ({e}); use e.g. `*.rs` or `src/**/*.ts`"
            ),
        })
}

/// Whether `rel` (relative to the root) matches: patterns without `/` match the file name.
fn glob_matches(m: &GlobMatcher, pattern: &str, rel: &str) -> bool {
    if pattern.contains('/') {
        m.is_match(rel)
    } else {
        m.is_match(rel.rsplit('/').next().unwrap_or(rel))
    }
}

pub(super) fn list_files(session: &Session, args: &Args) -> Result<String, ToolError> {
    let path = string(args, "path").unwrap_or_else(|| ".".to_owned());
    let pattern = string(args, "pattern").filter(|p| !p.trim().is_empty());
    let matcher = pattern.as_deref().map(glob).transpose()?;
    let r = resolve(session, &path)?;
    match session.fs.kind(&r.abs) {
        Some(EntryKind::Dir) => {}
        Some(_) => {
            return Err(ToolError::InvalidArguments {
                tool: "list_files".to_owned(),
                message: format!(
                    "{} is a file, not a directory; read it with read_file",
                    r.rel
                ),
            });
        }
        None => {
            return Err(ToolError::NotFound {
                path: r.rel.clone(),
                nearby: nearby(session, &r),
            });
        }
    }
    let max = session.options.max_list_entries;
    let started = Instant::now();
    let (files, _) = session.fs.walk(&r.abs, 50_000);
    let mut rows: Vec<String> = Vec::new();
    let mut matched = 0usize;
    let mut timed_out = false;
    let mut all: Vec<(PathBuf, u64)> = files.into_iter().map(|f| (f.path, f.len)).collect();
    for created in session.copy.created() {
        if created.starts_with(&r.abs) && !all.iter().any(|(p, _)| p == created) {
            all.push((created.to_path_buf(), 0));
        }
    }
    all.sort();
    for (p, len) in &all {
        let rel = rel_of(session, p);
        if let (Some(m), Some(pat)) = (&matcher, &pattern)
            && !glob_matches(m, pat, &rel)
        {
            continue;
        }
        matched += 1;
        if rows.len() >= max {
            continue;
        }
        if started.elapsed() > session.options.walk_timeout {
            timed_out = true;
            rows.push(rel);
            continue;
        }
        let row = if *len > session.options.max_count_bytes {
            format!("{rel} ({} bytes) [MASSIVE]", len)
        } else {
            match session.copy.scan(p, session.fs.as_ref()) {
                Ok(text) => {
                    let n = lines_label(count_lines(&text));
                    match size_tag(count_lines(&text), &session.options.size) {
                        Some(tag) => format!("{rel} ({n}) {tag}"),
                        None => format!("{rel} ({n})"),
                    }
                }
                Err(ReadError::InvalidUtf8 { .. }) => format!("{rel} [BINARY]"),
                Err(_) => rel,
            }
        };
        rows.push(row);
    }
    let mut out = format!(
        "{} file{} under {}{}\n",
        matched,
        if matched == 1 { "" } else { "s" },
        r.rel,
        pattern
            .as_deref()
            .map(|p| format!(" matching `{p}`"))
            .unwrap_or_default()
    );
    for row in &rows {
        out.push_str(row);
        out.push('\n');
    }
    if matched > rows.len() {
        out.push_str(&format!(
            "… {} more not listed; narrow the listing with path or pattern\n",
            matched - rows.len()
        ));
    }
    if timed_out {
        out.push_str("(line counts stopped early: the listing took too long)\n");
    }
    if matched == 0 {
        out.push_str("no files; check the path and pattern (.gitignored files are not listed)\n");
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// search

pub(super) fn search(session: &Session, args: &Args) -> Result<String, ToolError> {
    let pattern = required_string(args, "search", "pattern")?;
    if pattern.is_empty() {
        return Err(ToolError::InvalidArguments {
            tool: "search".to_owned(),
            message: "the pattern is empty; give the text to find".to_owned(),
        });
    }
    let path = string(args, "path").unwrap_or_else(|| ".".to_owned());
    let is_regex = flag(args, "regex");
    let source = if is_regex {
        pattern.clone()
    } else {
        regex::escape(&pattern)
    };
    let re: Regex = RegexBuilder::new(&source)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| ToolError::InvalidArguments {
            tool: "search".to_owned(),
            message: format!(
                "the pattern is not a valid regular expression ({}); fix it or search with regex=false",
                e.to_string().lines().last().unwrap_or("invalid")
            ),
        })?;
    let r = resolve(session, &path)?;
    let files: Vec<PathBuf> = match session.fs.kind(&r.abs) {
        Some(EntryKind::Dir) => {
            let (mut files, _) = session.fs.walk(&r.abs, 50_000);
            files.retain(|f| f.len <= session.options.max_file_bytes);
            let mut paths: Vec<PathBuf> = files.into_iter().map(|f| f.path).collect();
            for c in session.copy.created() {
                if c.starts_with(&r.abs) && !paths.iter().any(|p| p == c) {
                    paths.push(c.to_path_buf());
                }
            }
            paths.sort();
            paths
        }
        Some(_) => vec![r.abs.clone()],
        None if session.copy.exists(&r.abs, session.fs.as_ref()) => vec![r.abs.clone()],
        None => {
            return Err(ToolError::NotFound {
                path: r.rel.clone(),
                nearby: nearby(session, &r),
            });
        }
    };
    let max = session.options.max_search_matches;
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut total = 0usize;
    let mut searched = 0usize;
    let mut timed_out = false;
    for p in &files {
        if started.elapsed() > session.options.walk_timeout {
            timed_out = true;
            break;
        }
        let Ok(text) = session.copy.scan(p, session.fs.as_ref()) else {
            continue;
        };
        searched += 1;
        let rel = rel_of(session, p);
        for (i, line) in text.lines().enumerate() {
            if re.is_match(line) {
                total += 1;
                if rows.len() < max {
                    rows.push(format!("{rel}:{}: {}", i + 1, clip(line.trim_end(), 200)));
                }
            }
        }
    }
    let mut out = String::new();
    if total == 0 {
        out.push_str(&format!(
            "no matches for `{pattern}` in {} ({searched} file{} searched)\n",
            r.rel,
            if searched == 1 { "" } else { "s" }
        ));
    } else {
        out.push_str(&format!(
            "{total} match{} for `{pattern}` in {} ({searched} file{} searched)\n",
            if total == 1 { "" } else { "es" },
            r.rel,
            if searched == 1 { "" } else { "s" }
        ));
        for row in &rows {
            out.push_str(row);
            out.push('\n');
        }
        if total > rows.len() {
            out.push_str(&format!(
                "… {} more matches not shown; narrow the pattern or the path\n",
                total - rows.len()
            ));
        }
    }
    if timed_out {
        let err = ToolError::Timeout {
            tool: "search".to_owned(),
            seconds: session.options.walk_timeout.as_secs(),
            detail: format!(
                "searched {searched} of {} files; the results above are partial. Search a smaller directory with path",
                files.len()
            ),
        };
        if total == 0 {
            return Err(err);
        }
        out.push_str(&err.to_string());
        out.push('\n');
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// edits

/// Runs an edit tool; answers the text for the model, the file changed and the matching pass.
pub(super) fn write(
    session: &mut Session,
    name: &str,
    args: &Args,
) -> Result<(String, PathBuf, String), ToolError> {
    if super::is_run_tool(name) {
        return Err(ToolError::NotAvailable {
            tool: name.to_owned(),
            reason: "write sessions exist only inside an edit or develop run, where the \
                     content streams in the model's next answer; outside one, create files \
                     with write_file"
                .to_owned(),
        });
    }
    let path = required_string(args, name, "path")?;
    let r = resolve(session, &path)?;
    if name == "write_file" {
        return write_file(session, &r, args);
    }
    let (current, version) = match read(session, &r) {
        Err(ToolError::NotFound { path, nearby }) => {
            return Err(ToolError::NotFound {
                path: format!("{path} (create new files with write_file)"),
                nearby,
            });
        }
        other => other?,
    };
    // What the model believes is in the file: shown back when the file changed since.
    let old_hint = string(args, "old_string").or_else(|| string(args, "anchor"));
    session
        .ledger
        .check(&r.abs, &current, old_hint.as_deref())
        .map_err(|refusal| refused(&r, refusal))?;
    let (new_text, matched_by, where_) = match name {
        "edit_file" => {
            let old = required_string(args, name, "old_string")?;
            let new = required_string(args, name, "new_string")?;
            let options = ReplaceOptions {
                replace_all: flag(args, "replace_all"),
            };
            let applied =
                edit::replace(&current, &old, &new, options).map_err(|x| refused(&r, x))?;
            let lines = applied
                .located
                .iter()
                .flat_map(|l| l.lines.iter().copied())
                .collect::<Vec<_>>();
            (
                applied.text.clone(),
                applied.matched_by().to_string(),
                summary_lines(&lines, applied.replacements()),
            )
        }
        "replace_pattern" | "insert_text" | "prepend" | "append" | "insert_lines"
        | "replace_lines" => {
            let op = engine_operation(name, args)?;
            let applied = edit::apply(&current, &op).map_err(|x| refused(&r, x))?;
            let lines: Vec<usize> = applied
                .located
                .iter()
                .flat_map(|l| l.lines.iter().copied())
                .collect();
            (
                applied.text.clone(),
                applied.matched_by().to_string(),
                summary_lines(&lines, applied.replacements().max(1)),
            )
        }
        "replace_symbol" => {
            let symbol = required_string(args, name, "symbol")?;
            let text = required_string(args, name, "text")?;
            let language = Language::from_path(&r.rel).unwrap_or(Language::Text);
            let tree = SyntaxTree::parse(&current, language);
            let edit = replace_symbol(&current, &tree, &symbol, &text).map_err(|e| {
                ToolError::Refused {
                    path: r.rel.clone(),
                    kind: edit::RefusalKind::NotFound,
                    message: e.to_string(),
                }
            })?;
            let new_text = edit.apply(&current).map_err(|e| ToolError::Refused {
                path: r.rel.clone(),
                kind: edit::RefusalKind::Overlap,
                message: format!("the symbol's replacement does not fit the text ({e})"),
            })?;
            if new_text == current {
                return Err(ToolError::Refused {
                    path: r.rel.clone(),
                    kind: edit::RefusalKind::NoOp,
                    message: format!(
                        "the new text of `{symbol}` is the same as the current one; nothing to change"
                    ),
                });
            }
            let line = edit
                .replacements()
                .first()
                .map(|x| current[..x.range.start].matches('\n').count() + 1)
                .unwrap_or(1);
            (new_text, "symbol".to_owned(), format!("at line {line}"))
        }
        other => {
            return Err(ToolError::UnknownTool {
                name: other.to_owned(),
                known: super::TOOL_NAMES.iter().map(|s| (*s).to_owned()).collect(),
            });
        }
    };
    check_syntax(session, &r, &current, &new_text)?;
    session
        .copy
        .write(&r.abs, &current, version, new_text.clone());
    session.ledger.record_write(&r.abs, &new_text);
    let mut out = format!("edited {} {where_} (matched by {matched_by}).\n", r.rel);
    out.push_str(&changed_region(&current, &new_text));
    Ok((out, r.abs, matched_by))
}

/// The engine operation of a line, pattern or anchor tool (`insert_lines`, `replace_lines`,
/// `replace_pattern`, `insert_text`, `prepend`, `append`).
fn engine_operation(name: &str, args: &Args) -> Result<Operation, ToolError> {
    let text = || required_string(args, name, "text");
    Ok(match name {
        "replace_pattern" => Operation::ReplacePattern {
            pattern: required_string(args, name, "pattern")?,
            replacement: required_string(args, name, "replacement")?,
            all: flag(args, "all"),
        },
        "insert_text" => {
            let anchor = required_string(args, name, "anchor")?;
            if anchor.trim().is_empty() {
                return Err(ToolError::InvalidArguments {
                    tool: name.to_owned(),
                    message: "the anchor is empty; give a line of the file (copied exactly, \
                              without the line-number prefix) that occurs once"
                        .to_owned(),
                });
            }
            Operation::at_anchor(anchor, text()?, flag(args, "before"))
        }
        "prepend" => Operation::Prepend { text: text()? },
        "insert_lines" => {
            let text = text()?;
            let line = number(args, name, "line")?.unwrap_or(0);
            if flag(args, "before") {
                Operation::InsertBeforeLine { line, text }
            } else {
                Operation::InsertAfterLine { line, text }
            }
        }
        "replace_lines" => {
            let text = text()?;
            let start = number(args, name, "start")?.unwrap_or(0);
            let end = number(args, name, "end")?.unwrap_or(start);
            Operation::ReplaceLines { start, end, text }
        }
        _ => Operation::Append { text: text()? },
    })
}

/// Checks that `path` may be written whole in `mode` (see [`super::Session::check_whole`]).
pub(super) fn check_whole(
    session: &Session,
    path: &str,
    mode: WholeMode,
) -> Result<WholeTarget, ToolError> {
    let r = resolve(session, path)?;
    if session.fs.kind(&r.abs) == Some(EntryKind::Dir) {
        return Err(ToolError::IsDirectory { path: r.rel });
    }
    let exists = session.copy.exists(&r.abs, session.fs.as_ref());
    if mode == WholeMode::Create {
        if exists {
            return Err(ToolError::InvalidArguments {
                tool: "begin_write".to_owned(),
                message: format!(
                    "{} already exists, so it cannot be created; read it, then write it again \
                     with mode overwrite (or append), or change part of it with edit_file",
                    r.rel
                ),
            });
        }
        return Ok(WholeTarget {
            resolved: r,
            current: None,
        });
    }
    let (current, version) = match read(session, &r) {
        Err(ToolError::NotFound { path, nearby }) => {
            return Err(ToolError::NotFound {
                path: format!("{path} (write a new file with mode create)"),
                nearby,
            });
        }
        other => other?,
    };
    session
        .ledger
        .check(&r.abs, &current, None)
        .map_err(|refusal| refused(&r, refusal))?;
    Ok(WholeTarget {
        resolved: r,
        current: Some((current, version)),
    })
}

/// Puts whole new text for a checked target into the working copy.
pub(super) fn write_whole(session: &mut Session, target: &WholeTarget, text: String) -> String {
    let r = &target.resolved;
    match &target.current {
        None => session.copy.create(&r.abs, text.clone()),
        Some((before, version)) => session.copy.write(&r.abs, before, *version, text.clone()),
    }
    session.ledger.record_write(&r.abs, &text);
    let verb = if target.current.is_some() {
        "wrote"
    } else {
        "created"
    };
    format!("{verb} {} ({}).", r.rel, lines_label(count_lines(&text)))
}

fn write_file(
    session: &mut Session,
    r: &Resolved,
    args: &Args,
) -> Result<(String, PathBuf, String), ToolError> {
    let content = required_string(args, "write_file", "content")?;
    // A fence around all of the content is the chat habit, not the file (recorded from
    // Qwen2.5-Coder 1.5B: a ```yaml block inside the JSON string); a Markdown file may be one
    // code block, so it keeps its fences (`docs/editing.md`, "Write sessions").
    let content = if edit::streamed::is_markdown(&r.rel) {
        content
    } else {
        edit::streamed::strip_wrapping_fence(&content).to_owned()
    };
    if session.fs.kind(&r.abs) == Some(EntryKind::Dir) {
        return Err(ToolError::IsDirectory {
            path: r.rel.clone(),
        });
    }
    if session.copy.exists(&r.abs, session.fs.as_ref()) {
        return Err(ToolError::Exists {
            path: r.rel.clone(),
        });
    }
    check_syntax(session, r, "", &content)?;
    session.copy.create(&r.abs, content.clone());
    session.ledger.record_write(&r.abs, &content);
    Ok((
        format!(
            "created {} ({}).\n",
            r.rel,
            lines_label(count_lines(&content))
        ),
        r.abs.clone(),
        "new-file".to_owned(),
    ))
}

fn lines_label(n: usize) -> String {
    if n == 1 {
        "1 line".to_owned()
    } else {
        format!("{n} lines")
    }
}

fn refused(r: &Resolved, refusal: Refusal) -> ToolError {
    // The ledger names files by absolute path; the model knows them by workspace path.
    let message = refusal
        .message
        .replace(&r.abs.display().to_string(), &r.rel);
    ToolError::Refused {
        path: r.rel.clone(),
        kind: refusal.kind,
        message,
    }
}

fn check_syntax(
    session: &Session,
    r: &Resolved,
    before: &str,
    after: &str,
) -> Result<(), ToolError> {
    if !session.options.parse_check {
        return Ok(());
    }
    let problems: Vec<String> = match Language::from_path(&r.rel) {
        Some(language) => introduced_problems(language, before, after)
            .iter()
            .map(ToString::to_string)
            .collect(),
        None => data_problems(&r.rel, before, after),
    };
    if problems.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = problems.iter().take(5).map(|p| format!("  {p}")).collect();
    Err(ToolError::Syntax {
        path: r.rel.clone(),
        problems: listed.join("\n"),
    })
}

/// TOML and YAML, which tree-sitter does not check here, parsed like a write session's content
/// (`docs/editing.md`, "Write sessions"): problems only when the change makes a file that parsed
/// (or did not exist) fail to parse.
fn data_problems(rel: &str, before: &str, after: &str) -> Vec<String> {
    let Some(format @ (Format::Toml | Format::Yaml)) = Format::of(rel) else {
        return Vec::new();
    };
    if !before.trim().is_empty() && !validate::validate(format, before).is_empty() {
        return Vec::new();
    }
    validate::validate(format, after)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn summary_lines(lines: &[usize], count: usize) -> String {
    let shown: Vec<String> = lines.iter().take(10).map(|l| l.to_string()).collect();
    match (count, lines.len()) {
        (_, 0) => String::new(),
        (1, _) | (_, 1) => format!("at line {}", shown.join(", ")),
        (n, _) => format!("in {n} places (lines {})", shown.join(", ")),
    }
}

/// The changed lines of `after` with two lines of context, numbered, so the model sees the
/// result (and the new line numbers) without reading the file again.
pub(super) fn changed_region(before: &str, after: &str) -> String {
    let prefix = before
        .bytes()
        .zip(after.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = before
        .bytes()
        .rev()
        .zip(after.bytes().rev())
        .take(before.len().min(after.len()) - prefix)
        .take_while(|(a, b)| a == b)
        .count();
    let first = after[..floor_char(after, prefix)].matches('\n').count();
    let end = after.len() - suffix;
    let last = after[..floor_char(after, end)].matches('\n').count();
    let lines: Vec<&str> = after.lines().collect();
    if lines.is_empty() {
        return "The file is now empty.\n".to_owned();
    }
    let from = first.saturating_sub(2);
    let to = (last + 3).min(lines.len());
    let mut out = format!("Lines {}-{} now read:\n", from + 1, to.max(from + 1));
    for (i, l) in lines.iter().enumerate().take(to.min(from + 60)).skip(from) {
        out.push_str(&format!("{:>6}\t{}\n", i + 1, clip(l, 300)));
    }
    if to > from + 60 {
        out.push_str("      \t…\n");
    }
    out
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
