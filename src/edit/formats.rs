//! Parsers for the edit formats models write in plain text: SEARCH/REPLACE blocks (Aider),
//! `OLD_CODE:` / `NEW_CODE:` fenced pairs, unified diff hunks, and `*** Begin Patch` patches
//! (Codex `apply_patch`). Each turns text into edit requests for the engine; none applies
//! anything. Markers are read leniently (5–9 marker characters, optional words, `~~~` or ```
//! fences), because models vary them; malformed input is a [`ParseError`] saying what was
//! expected where, never a guess.

use std::fmt;

use super::ops::Operation;
use super::text;

/// What a parsed block asks for in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Change the file's text.
    Edit(Operation),
    /// Create the file with this text.
    Create(String),
    Delete,
    /// Rename the file (after its edits, if any).
    Move {
        to: String,
    },
}

/// One request parsed from a model's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    /// The file it targets, when the format names one.
    pub path: Option<String>,
    pub action: Action,
    /// A context line the format gives to find the hunk (a patch's `@@ fn name`), or the line
    /// number a diff hunk claims; the engine does not need it, messages may show it.
    pub hint: Option<String>,
}

/// Why a reply could not be parsed, with the 1-based line where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// Detects the format and parses it.
pub fn parse(text: &str) -> Result<Vec<FileEdit>, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.iter().any(|l| l.trim() == "*** Begin Patch") {
        return parse_patch(text);
    }
    if lines.iter().any(|l| is_marker(l, '<')) {
        return parse_search_replace(text);
    }
    if lines.iter().any(|l| label(l, "OLD_CODE")) {
        return parse_old_new(text);
    }
    if lines.iter().any(|l| l.starts_with("@@")) {
        return parse_unified_diff(text);
    }
    Err(err(
        1,
        "expected an edit: SEARCH/REPLACE blocks (`<<<<<<< SEARCH` … `=======` … `>>>>>>> REPLACE`), \
         `OLD_CODE:`/`NEW_CODE:` fenced blocks, a unified diff (`@@` hunks) or a `*** Begin Patch` \
         patch; found none of these markers",
    ))
}

// ---------------------------------------------------------------------------------------------
// SEARCH/REPLACE

/// A line of 5–9 `c` characters, optionally followed by a word (`SEARCH`, `REPLACE`, `UPDATED`).
fn is_marker(line: &str, c: char) -> bool {
    let t = line.trim();
    let n = t.chars().take_while(|&x| x == c).count();
    if !(5..=9).contains(&n) {
        return false;
    }
    let rest = t[n..].trim();
    if c == '=' {
        return rest.is_empty();
    }
    rest.is_empty()
        || rest
            .chars()
            .all(|ch| ch.is_ascii_alphabetic() || ch == ' ' || ch == '_')
            && rest.len() <= 20
}

fn is_fence(line: &str) -> bool {
    text::fence_line(line).is_some()
}

/// A file name on a line of its own, as models write it before a block (`src/a.rs`,
/// `**src/a.rs**`, `` `src/a.rs` ``, `File: src/a.rs`).
fn path_line(line: &str) -> Option<String> {
    let mut t = line.trim();
    for p in ["File:", "FILE:", "file:", "Path:", "path:", "#"] {
        if let Some(r) = t.strip_prefix(p) {
            t = r.trim();
        }
    }
    let t = t
        .trim_matches(|c| c == '*' || c == '`' || c == '"' || c == '\'')
        .trim_end_matches(':')
        .trim();
    if t.is_empty() || t.len() > 300 || t.contains(char::is_whitespace) {
        return None;
    }
    let looks = t.contains('.') || t.contains('/') || t.contains('\\');
    if !looks || t.starts_with("```") || t.starts_with("~~~") {
        return None;
    }
    Some(t.to_string())
}

/// Parses SEARCH/REPLACE blocks. A file name on the line before the block (or before its fence)
/// applies to that block and the following ones until another is given.
pub fn parse_search_replace(text: &str) -> Result<Vec<FileEdit>, ParseError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = Vec::new();
    let mut path: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        if !is_marker(lines[i], '<') {
            i += 1;
            continue;
        }
        // The file name: the closest non-blank line above, skipping one opening fence.
        let mut j = i;
        let mut skipped_fence = false;
        while j > 0 {
            j -= 1;
            let l = lines[j].trim();
            if l.is_empty() {
                continue;
            }
            if is_fence(l) && !skipped_fence {
                skipped_fence = true;
                if let Some(p) = path_line(l.trim_start_matches(['`', '~']).trim()) {
                    path = Some(p);
                    break;
                }
                continue;
            }
            if let Some(p) = path_line(l) {
                path = Some(p);
            }
            break;
        }
        let start = i + 1;
        let mut k = start;
        while k < lines.len() && !is_marker(lines[k], '=') {
            if is_marker(lines[k], '<') || is_marker(lines[k], '>') {
                return Err(err(
                    k + 1,
                    format!(
                        "expected the divider `=======` after the SEARCH text that starts at line {}, \
                         found `{}`",
                        start,
                        lines[k].trim()
                    ),
                ));
            }
            k += 1;
        }
        if k >= lines.len() {
            return Err(err(
                i + 1,
                "expected the divider `=======` after `<<<<<<< SEARCH`, found the end of the text",
            ));
        }
        let old: String = lines[start..k].concat();
        let rstart = k + 1;
        let mut m = rstart;
        while m < lines.len() && !is_marker(lines[m], '>') {
            if is_marker(lines[m], '<') {
                return Err(err(
                    m + 1,
                    format!(
                        "expected `>>>>>>> REPLACE` to close the block that starts at line {}, found \
                         another `<<<<<<<`",
                        i + 1
                    ),
                ));
            }
            m += 1;
        }
        if m >= lines.len() {
            return Err(err(
                k + 1,
                "expected `>>>>>>> REPLACE` after the REPLACE text, found the end of the text",
            ));
        }
        let new: String = lines[rstart..m].concat();
        out.push(FileEdit {
            path: path.clone(),
            action: Action::Edit(Operation::Replace {
                old: strip_final_newline(&old),
                new: strip_final_newline(&new),
                replace_all: false,
            }),
            hint: None,
        });
        i = m + 1;
    }
    if out.is_empty() {
        return Err(err(
            1,
            "expected `<<<<<<< SEARCH` to open a block, found none",
        ));
    }
    Ok(out)
}

fn strip_final_newline(s: &str) -> String {
    s.strip_suffix("\r\n")
        .or_else(|| s.strip_suffix('\n'))
        .unwrap_or(s)
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// OLD_CODE / NEW_CODE

fn label(line: &str, name: &str) -> bool {
    let t = line.trim().trim_matches('*').trim_matches('#').trim();
    let t = t.trim_matches('*').trim();
    t == name || t == format!("{name}:") || t.strip_suffix(':').is_some_and(|x| x.trim() == name)
}

/// The fenced block starting at or after line `from` (blank lines skipped): its content, the
/// index of its opening fence and the index after it. An unclosed block is not one here.
fn fenced_block(lines: &[&str], from: usize) -> Option<(String, usize, usize)> {
    let i = (from..lines.len()).find(|&i| !lines[i].trim().is_empty())?;
    let block = text::fence_at(lines, i).filter(|b| b.closed)?;
    Some((block.body, block.open, block.end))
}

/// Parses `OLD_CODE:` / `NEW_CODE:` pairs, each followed by a fenced block.
pub fn parse_old_new(text: &str) -> Result<Vec<FileEdit>, ParseError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = Vec::new();
    let mut path = None;
    let mut i = 0;
    while i < lines.len() {
        if let Some(p) = lines[i]
            .trim()
            .strip_prefix("FILE:")
            .or_else(|| lines[i].trim().strip_prefix("File:"))
        {
            path = path_line(p);
        }
        if !label(lines[i], "OLD_CODE") {
            i += 1;
            continue;
        }
        let Some((old, _, after_old)) = fenced_block(&lines, i + 1) else {
            return Err(err(
                i + 2,
                "expected a fenced block (``` or ~~~) after `OLD_CODE:`",
            ));
        };
        let mut k = after_old;
        while k < lines.len() && lines[k].trim().is_empty() {
            k += 1;
        }
        if k >= lines.len() || !label(lines[k], "NEW_CODE") {
            return Err(err(
                k.min(lines.len()) + 1,
                "expected `NEW_CODE:` after the OLD_CODE block",
            ));
        }
        let Some((new, _, after_new)) = fenced_block(&lines, k + 1) else {
            return Err(err(
                k + 2,
                "expected a fenced block (``` or ~~~) after `NEW_CODE:`",
            ));
        };
        out.push(FileEdit {
            path: path.clone(),
            action: Action::Edit(Operation::Replace {
                old: strip_final_newline(&old),
                new: strip_final_newline(&new),
                replace_all: false,
            }),
            hint: None,
        });
        i = after_new;
    }
    if out.is_empty() {
        return Err(err(
            1,
            "expected `OLD_CODE:` followed by a fenced block, found none",
        ));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Unified diff

fn diff_path(rest: &str) -> Option<String> {
    let p = rest.split('\t').next()?.trim();
    if p == "/dev/null" || p.is_empty() {
        return None;
    }
    let p = p
        .strip_prefix("a/")
        .or_else(|| p.strip_prefix("b/"))
        .unwrap_or(p);
    Some(p.to_string())
}

/// Parses unified diff hunks into replaces: context and `-` lines are OLD, context and `+` lines
/// NEW. Line numbers in `@@` headers are kept as hints only; the context locates the hunk.
pub fn parse_unified_diff(text: &str) -> Result<Vec<FileEdit>, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut path: Option<String> = None;
    let mut creating = false;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(rest) = l.strip_prefix("--- ")
            && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))
        {
            let from = diff_path(rest);
            let to = diff_path(&lines[i + 1][4..]);
            creating = from.is_none() && to.is_some();
            if from.is_some() && to.is_none() {
                out.push(FileEdit {
                    path: from.clone(),
                    action: Action::Delete,
                    hint: None,
                });
            }
            path = to.or(from);
            i += 2;
            continue;
        }
        if !l.starts_with("@@") {
            i += 1;
            continue;
        }
        let header = l.to_string();
        let mut old = String::new();
        let mut new = String::new();
        let mut changed = false;
        let mut context = false;
        let mut j = i + 1;
        while j < lines.len() {
            let h = lines[j];
            if h.starts_with("@@")
                || (h.starts_with("--- ")
                    && lines.get(j + 1).is_some_and(|n| n.starts_with("+++ ")))
            {
                break;
            }
            if let Some(r) = h.strip_prefix('-') {
                old.push_str(r);
                old.push('\n');
                changed = true;
            } else if let Some(r) = h.strip_prefix('+') {
                new.push_str(r);
                new.push('\n');
                changed = true;
            } else if let Some(r) = h.strip_prefix(' ') {
                old.push_str(r);
                old.push('\n');
                new.push_str(r);
                new.push('\n');
                context = true;
            } else if h.is_empty() {
                // A context line whose single leading space was stripped (common in model output),
                // unless it is the blank line that ends the hunk.
                let more = lines[j + 1..]
                    .iter()
                    .take_while(|x| !x.starts_with("@@"))
                    .any(|x| x.starts_with([' ', '-', '+']) && !x.starts_with("--- "));
                if !more {
                    break;
                }
                old.push('\n');
                new.push('\n');
            } else if h.starts_with('\\') {
                // "\ No newline at end of file"
            } else {
                break;
            }
            j += 1;
        }
        if !changed {
            return Err(err(
                i + 1,
                "expected `-` or `+` lines in the hunk, found only context",
            ));
        }
        if creating {
            out.push(FileEdit {
                path: path.clone(),
                action: Action::Create(new),
                hint: None,
            });
        } else if old.trim().is_empty() && !context {
            return Err(err(
                i + 1,
                "expected context or `-` lines in the hunk to locate it; a hunk of only `+` lines \
                 cannot be placed (line numbers are not trusted)",
            ));
        } else {
            out.push(FileEdit {
                path: path.clone(),
                action: Action::Edit(Operation::Replace {
                    old,
                    new,
                    replace_all: false,
                }),
                hint: Some(header),
            });
        }
        i = j;
    }
    if out.is_empty() {
        return Err(err(1, "expected `@@` hunks of a unified diff, found none"));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// *** Begin Patch

/// Parses a Codex-style patch: `*** Begin Patch`, then `*** Update File:`, `*** Add File:` and
/// `*** Delete File:` sections, then `*** End Patch`.
pub fn parse_patch(text: &str) -> Result<Vec<FileEdit>, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(begin) = lines.iter().position(|l| l.trim() == "*** Begin Patch") else {
        return Err(err(1, "expected `*** Begin Patch`, found none"));
    };
    let mut out = Vec::new();
    let mut i = begin + 1;
    let mut ended = false;
    while i < lines.len() {
        let l = lines[i].trim_end();
        if l.trim() == "*** End Patch" {
            ended = true;
            break;
        }
        if let Some(p) = l.strip_prefix("*** Add File:") {
            let path = p.trim().to_string();
            let mut body = String::new();
            i += 1;
            while i < lines.len() && !lines[i].starts_with("***") {
                match lines[i].strip_prefix('+') {
                    Some(r) => {
                        body.push_str(r);
                        body.push('\n');
                    }
                    None if lines[i].is_empty() => body.push('\n'),
                    None => {
                        return Err(err(
                            i + 1,
                            format!(
                                "expected every line of an added file to start with `+`, found `{}`",
                                lines[i]
                            ),
                        ));
                    }
                }
                i += 1;
            }
            out.push(FileEdit {
                path: Some(path),
                action: Action::Create(body),
                hint: None,
            });
            continue;
        }
        if let Some(p) = l.strip_prefix("*** Delete File:") {
            out.push(FileEdit {
                path: Some(p.trim().to_string()),
                action: Action::Delete,
                hint: None,
            });
            i += 1;
            continue;
        }
        if let Some(p) = l.strip_prefix("*** Update File:") {
            let path = p.trim().to_string();
            i += 1;
            let mut move_to = None;
            if let Some(to) = lines.get(i).and_then(|x| x.strip_prefix("*** Move to:")) {
                move_to = Some(to.trim().to_string());
                i += 1;
            }
            let mut chunks = 0;
            let mut hint: Option<String> = None;
            let mut old = String::new();
            let mut new = String::new();
            let mut changed = false;
            let flush = |old: &mut String,
                         new: &mut String,
                         changed: &mut bool,
                         hint: &Option<String>,
                         out: &mut Vec<FileEdit>,
                         at: usize|
             -> Result<(), ParseError> {
                if old.is_empty() && new.is_empty() {
                    return Ok(());
                }
                if !*changed {
                    return Err(err(
                        at,
                        "expected `-` or `+` lines in the chunk, found only context",
                    ));
                }
                if old.trim().is_empty() {
                    return Err(err(
                        at,
                        "expected context or `-` lines in the chunk to locate it, found only `+` lines",
                    ));
                }
                out.push(FileEdit {
                    path: Some(path.clone()),
                    action: Action::Edit(Operation::Replace {
                        old: std::mem::take(old),
                        new: std::mem::take(new),
                        replace_all: false,
                    }),
                    hint: hint.clone(),
                });
                *changed = false;
                Ok(())
            };
            while i < lines.len() {
                let h = lines[i];
                if h.starts_with("*** ") && h.trim() != "*** End of File" {
                    break;
                }
                if h.trim() == "*** End of File" {
                    i += 1;
                    continue;
                }
                if let Some(r) = h.strip_prefix("@@") {
                    flush(&mut old, &mut new, &mut changed, &hint, &mut out, i + 1)?;
                    chunks += 1;
                    let r = r.trim();
                    hint = if r.is_empty() {
                        None
                    } else {
                        Some(r.to_string())
                    };
                } else if let Some(r) = h.strip_prefix('-') {
                    old.push_str(r);
                    old.push('\n');
                    changed = true;
                } else if let Some(r) = h.strip_prefix('+') {
                    new.push_str(r);
                    new.push('\n');
                    changed = true;
                } else if let Some(r) = h.strip_prefix(' ') {
                    old.push_str(r);
                    old.push('\n');
                    new.push_str(r);
                    new.push('\n');
                } else if h.is_empty() {
                    old.push('\n');
                    new.push('\n');
                } else {
                    return Err(err(
                        i + 1,
                        format!(
                            "expected a patch line starting with ` `, `-`, `+` or `@@`, found `{}`",
                            h
                        ),
                    ));
                }
                i += 1;
            }
            let before = out.len();
            flush(&mut old, &mut new, &mut changed, &hint, &mut out, i)?;
            if out.len() == before && chunks == 0 && move_to.is_none() {
                return Err(err(i, format!("expected changes for `{path}`, found none")));
            }
            if let Some(to) = move_to {
                out.push(FileEdit {
                    path: Some(path.clone()),
                    action: Action::Move { to },
                    hint: None,
                });
            }
            continue;
        }
        if l.trim().is_empty() {
            i += 1;
            continue;
        }
        return Err(err(
            i + 1,
            format!(
                "expected `*** Update File:`, `*** Add File:`, `*** Delete File:` or `*** End Patch`, \
                 found `{}`",
                l
            ),
        ));
    }
    if !ended {
        return Err(err(
            lines.len().max(1),
            "expected `*** End Patch` at the end of the patch",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replace(e: &FileEdit) -> (&str, &str) {
        match &e.action {
            Action::Edit(Operation::Replace { old, new, .. }) => (old, new),
            other => panic!("not a replace: {other:?}"),
        }
    }

    #[test]
    fn parses_search_replace_with_lenient_markers() {
        let text = "Here is the fix:\n\nsrc/lib.rs\n```rust\n<<<<<<< SEARCH\nfn a() {}\n=======\nfn b() {}\n>>>>>>> REPLACE\n```\n\n~~~\n<<<<<<<\nx\n=========\ny\n>>>>>>>>\n~~~\n";
        let edits = parse(text).unwrap();
        assert_eq!(edits.len(), 2);
        assert_eq!(edits[0].path.as_deref(), Some("src/lib.rs"));
        assert_eq!(replace(&edits[0]), ("fn a() {}", "fn b() {}"));
        assert_eq!(edits[1].path.as_deref(), Some("src/lib.rs"));
        assert_eq!(replace(&edits[1]), ("x", "y"));
    }

    #[test]
    fn reports_a_missing_divider() {
        let e = parse("<<<<<<< SEARCH\nfoo\n>>>>>>> REPLACE\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("expected the divider"), "{e}");
    }

    #[test]
    fn parses_old_new_pairs() {
        let text =
            "FILE: app.py\nOLD_CODE:\n```python\nx = 1\n```\nNEW_CODE:\n```python\nx = 2\n```\n";
        let edits = parse(text).unwrap();
        assert_eq!(edits[0].path.as_deref(), Some("app.py"));
        assert_eq!(replace(&edits[0]), ("x = 1", "x = 2"));
        assert!(parse("OLD_CODE:\n```\nx\n```\n").is_err());
    }

    #[test]
    fn parses_unified_diff_hunks() {
        let text = "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -10,3 +10,3 @@ fn main() {\n     let a = 1;\n-    let b = 2;\n+    let b = 3;\n     let c = 4;\n";
        let edits = parse(text).unwrap();
        assert_eq!(edits.len(), 1);
        assert_eq!(edits[0].path.as_deref(), Some("src/a.rs"));
        assert_eq!(
            replace(&edits[0]),
            (
                "    let a = 1;\n    let b = 2;\n    let c = 4;\n",
                "    let a = 1;\n    let b = 3;\n    let c = 4;\n"
            )
        );
    }

    #[test]
    fn parses_begin_patch() {
        let text = "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n     x = 1\n-    y = 2\n+    y = 3\n*** Add File: NOTES.md\n+hello\n*** Delete File: old.txt\n*** End Patch\n";
        let edits = parse(text).unwrap();
        assert_eq!(edits.len(), 3);
        assert_eq!(edits[0].hint.as_deref(), Some("def main():"));
        assert_eq!(replace(&edits[0]).0, "    x = 1\n    y = 2\n");
        assert_eq!(edits[1].action, Action::Create("hello\n".into()));
        assert_eq!(edits[2].action, Action::Delete);
        let e = parse("*** Begin Patch\n*** Update File: a\n-x\n+y\n").unwrap_err();
        assert!(e.message.contains("End Patch"), "{e}");
    }
}
