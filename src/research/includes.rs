//! Include markers: the lines with which a documentation build pulls a file's text into a page.
//! Typer's docs write `{* docs_src/options/password/tutorial002_an_py310.py hl[12] *}` (FastAPI's
//! `{* ../../docs_src/… *}`, from `docs/en/`)
//! where the published page shows the example, pymdownx.snippets `--8<-- "file"`,
//! markdown-include `{!file!}`, Jinja `{% include "file" %}`, mdBook `{{#include file:anchor}}`.
//! In the Markdown a workspace holds, the example a lead-in leads to is such a line, and a reader
//! of a quote wants the code the page shows ("You can achieve the same using `hide_input=True`"
//! is in the prose; the call that does it is only in the file). When the file is in the
//! workspace, a quote shows its lines in place of the marker ([`shown`]); otherwise the marker
//! is quoted as its lead-in's code, which still names the file. The passage itself keeps the
//! marker: it is what is ranked and shown to the model, and the file's words changed which
//! passages a part got (Typer's "multiple environment variables" section lost its place to
//! the general page, 2026-12-04).
//!
//! Pure: the caller passes the reader (the workspace source's, which reads only inside the
//! workspace and outside patchwise's data). Only code is put in: an included Markdown file (a
//! glossary the build appends to every page, a shared note) is not the example, and stays a
//! marker.

use crate::research::passages::is_prose;

/// The lines of an included file shown in place of its marker, at most: with a line `…` before
/// and after them, as many as a quote shows of a code example, so the lines around the
/// highlighted ones are the ones quoted.
pub const SHOWN_LINES: usize = 13;

/// The markers expanded in one passage, at most.
const MARKERS_MOST: usize = 4;

/// An include marker read: the file it names and which of its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludeMarker {
    /// The file, as written (`docs_src/a.py`, `../listings/main.rs`).
    pub path: String,
    /// Whether the path is relative to the page's folder first (mdBook), or to the project's
    /// root first (the MkDocs plugins, which read from where the build runs).
    pub from_page: bool,
    /// A line range, 1-based and inclusive (`file.rs:3:10`, `ln[3:10]`); an open end runs to
    /// the file's end.
    pub lines: Option<(usize, Option<usize>)>,
    /// An mdBook anchor: the lines between `ANCHOR: name` and `ANCHOR_END: name`.
    pub anchor: Option<String>,
    /// Lines the page highlights (`hl[12]`, `hl[16:19,25:27]`): the lines shown are around them.
    pub highlighted: Vec<usize>,
}

/// The marker `line` is, if it is one (the syntaxes in the module's documentation). A marker
/// without a file (pymdownx's block form, `--8<--` alone) or naming a URL is none.
pub fn marker(line: &str) -> Option<IncludeMarker> {
    let t = line.trim();
    let plain = |path: &str, from_page: bool| IncludeMarker {
        path: path.to_owned(),
        from_page,
        lines: None,
        anchor: None,
        highlighted: Vec::new(),
    };
    let found = if let Some(inner) = t.strip_prefix("{*").and_then(|r| r.strip_suffix("*}")) {
        let mut words = inner.split_whitespace();
        let mut m = plain(words.next()?, false);
        for word in words {
            if let Some(spec) = word.strip_prefix("hl[").and_then(|w| w.strip_suffix(']')) {
                m.highlighted = numbers_in(spec);
            } else if let Some(spec) = word.strip_prefix("ln[").and_then(|w| w.strip_suffix(']')) {
                m.lines = range(spec, ':');
            }
        }
        m
    } else if let Some(rest) = t.strip_prefix("--8<--") {
        let (path, lines) = split_lines(unquoted(rest.split_whitespace().next()?)?);
        IncludeMarker {
            lines,
            ..plain(path, false)
        }
    } else if let Some(inner) = t.strip_prefix("{!").and_then(|r| r.strip_suffix("!}")) {
        plain(inner.split('!').next()?.trim(), false)
    } else if let Some(inner) = t
        .strip_prefix("{% include")
        .and_then(|r| r.strip_suffix("%}"))
    {
        plain(unquoted(inner.split_whitespace().next()?)?, false)
    } else {
        let inner = MDBOOK_INCLUDES
            .iter()
            .find_map(|m| t.strip_prefix(m))?
            .strip_suffix("}}")?;
        let spec = inner.split_whitespace().next()?;
        let (path, rest) = match spec.split_once(':') {
            Some((path, rest)) => (path, Some(rest)),
            None => (spec, None),
        };
        let mut m = plain(path, true);
        match rest {
            Some(rest) if rest.chars().all(|c| c.is_ascii_digit() || c == ':') => {
                m.lines = range(rest, ':');
            }
            Some(name) if !name.is_empty() => m.anchor = Some(name.to_owned()),
            _ => {}
        }
        m
    };
    let path = found.path.as_str();
    let url = path.contains("://");
    (!path.is_empty() && !url).then_some(found)
}

/// mdBook's directives that put a file's text into the page (not `{{#title …}}`, which names
/// the page).
const MDBOOK_INCLUDES: [&str; 3] = ["{{#include", "{{#rustdoc_include", "{{#playground"];

/// Whether `line` is an include marker by its syntax alone, whether or not it names a file
/// [`marker`] can read: `{* … *}`, `--8<--` (pymdownx's block form's bare `--8<--` too),
/// `{!…!}`, `{% include … %}`, mdBook's directives ([`MDBOOK_INCLUDES`]). Typer's docs put one
/// after nearly every lead-in ("You can make an `Enum` (choice) *CLI parameter* be
/// case-insensitive with the `case_sensitive` parameter:"), which, read as a line of prose,
/// led to nothing and was never listed for a pick (2026-12-04): a quote takes it as the
/// lead-in's code (`extractive::units`).
pub fn is_marker(line: &str) -> bool {
    let t = line.trim();
    (t.starts_with("{*") && t.ends_with("*}"))
        || t.starts_with("--8<--")
        || (t.starts_with("{!") && t.ends_with("!}"))
        || (t.starts_with("{% include") && t.ends_with("%}"))
        || (MDBOOK_INCLUDES.iter().any(|m| t.starts_with(m)) && t.ends_with("}}"))
}

/// `"file"`, `'file'` or `file` without its quotes; `None` for nothing.
fn unquoted(text: &str) -> Option<&str> {
    let t = text.trim();
    let t = t
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| t.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
        .unwrap_or(t);
    (!t.is_empty() && !t.contains(char::is_whitespace)).then_some(t)
}

/// `file.py:3:10` → (`file.py`, lines 3 to 10); `file.py` → (`file.py`, all).
fn split_lines(spec: &str) -> (&str, Option<(usize, Option<usize>)>) {
    match spec.split_once(':') {
        Some((path, rest)) if rest.chars().all(|c| c.is_ascii_digit() || c == ':') => {
            (path, range(rest, ':'))
        }
        _ => (spec, None),
    }
}

/// `3:10` → lines 3 to 10, `3:` → from 3, `:10` → to 10, `3` → line 3 alone.
fn range(spec: &str, sep: char) -> Option<(usize, Option<usize>)> {
    let (from, to) = match spec.split_once(sep) {
        Some((from, to)) => (from, to),
        None => (spec, spec),
    };
    let from = if from.is_empty() {
        1
    } else {
        from.parse().ok()?
    };
    let to = if to.is_empty() {
        None
    } else {
        Some(to.parse::<usize>().ok()?)
    };
    (from >= 1 && to.is_none_or(|to| to >= from)).then_some((from, to))
}

/// The line numbers `12`, `16:19,25:27` name, at most [`HIGHLIGHTED_MOST`] of them.
fn numbers_in(spec: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for piece in spec.split(',') {
        if let Some((from, Some(to))) = range(piece.trim(), ':') {
            let room = HIGHLIGHTED_MOST.saturating_sub(out.len());
            out.extend((from..=to).take(room));
        }
    }
    out
}

/// The highlighted lines of a marker kept, at most (only the first places what is shown).
const HIGHLIGHTED_MOST: usize = 64;

/// The workspace-relative paths `m` may name from the page at `page` (workspace-relative), in
/// the order to try them: from the page's folder first for mdBook, from the root first for the
/// MkDocs plugins (then the page's folder and `docs/`). A path that is absolute or climbs out of
/// the workspace is none.
pub fn candidates(page: &str, m: &IncludeMarker) -> Vec<String> {
    if m.path.starts_with('/') || m.path.contains('\\') || m.path.contains(':') {
        return Vec::new();
    }
    let folder = page.rsplit_once('/').map_or("", |(dir, _)| dir);
    let joined = |base: &str| {
        if base.is_empty() {
            m.path.clone()
        } else {
            format!("{base}/{}", m.path)
        }
    };
    // The MkDocs plugins read from where the build runs, often the root, sometimes a folder
    // above the page (FastAPI's `{* ../../docs_src/… *}` from `docs/en/`): each folder from the
    // page's up is tried after the root.
    let mut tries = if m.from_page {
        vec![joined(folder), m.path.clone()]
    } else {
        vec![m.path.clone(), joined(folder), joined("docs")]
    };
    if !m.from_page {
        let mut up = folder;
        while let Some((parent, _)) = up.rsplit_once('/') {
            tries.push(joined(parent));
            up = parent;
        }
    }
    let mut out: Vec<String> = Vec::new();
    for path in tries {
        if let Some(path) = normalised(&path)
            && !out.contains(&path)
        {
            out.push(path);
        }
    }
    out
}

/// `path` with `.` and `..` resolved, when it stays inside the workspace and is relative.
fn normalised(path: &str) -> Option<String> {
    if path.starts_with('/') || path.contains('\\') || path.contains(':') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for piece in path.split('/') {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            piece => parts.push(piece),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The lines of `text` (an included file) that `m` names, at most [`SHOWN_LINES`]: its range
/// or anchor, or the whole file; of more, those around the highlighted lines (or the first),
/// with a line `…` where lines are left out. `None` when the range or anchor is not there.
pub fn selected(text: &str, m: &IncludeMarker) -> Option<String> {
    let all: Vec<&str> = text.lines().collect();
    let mut lines: Vec<(usize, &str)> = match (&m.lines, &m.anchor) {
        (Some((from, to)), _) => {
            let from = (*from).max(1);
            let to = to.unwrap_or(all.len()).min(all.len());
            if from > to {
                return None;
            }
            (from..=to).map(|n| (n, all[n - 1])).collect()
        }
        (None, Some(name)) => {
            let start = all.iter().position(|l| anchor_named(l, "ANCHOR:", name))?;
            let end = all[start..]
                .iter()
                .position(|l| anchor_named(l, "ANCHOR_END:", name))
                .map_or(all.len(), |k| start + k);
            (start + 1..end).map(|i| (i + 1, all[i])).collect()
        }
        (None, None) => all.iter().enumerate().map(|(i, l)| (i + 1, *l)).collect(),
    };
    // mdBook drops every anchor line from what it includes.
    lines.retain(|(_, l)| !l.contains("ANCHOR:") && !l.contains("ANCHOR_END:"));
    while lines.last().is_some_and(|(_, l)| l.trim().is_empty()) {
        lines.pop();
    }
    let first = lines.iter().position(|(_, l)| !l.trim().is_empty())?;
    lines.drain(..first);
    let mut start = 0;
    // A few lines of what leads to the highlighted ones, the rest after them.
    if lines.len() > SHOWN_LINES
        && let Some(&first) = m.highlighted.iter().min()
        && let Some(at) = lines.iter().position(|(n, _)| *n >= first)
    {
        start = at.saturating_sub(4).min(lines.len() - SHOWN_LINES);
    }
    let end = (start + SHOWN_LINES).min(lines.len());
    let mut out: Vec<&str> = Vec::new();
    if start > 0 {
        out.push("\u{2026}");
    }
    out.extend(lines[start..end].iter().map(|(_, l)| *l));
    if end < lines.len() {
        out.push("\u{2026}");
    }
    Some(out.join("\n"))
}

/// Whether `line` is the anchor comment `ANCHOR: name` (or `ANCHOR_END: name`).
fn anchor_named(line: &str, kind: &str, name: &str) -> bool {
    line.split_once(kind)
        .is_some_and(|(_, rest)| rest.split_whitespace().next() == Some(name))
}

/// The language a fenced block of the file at `path` is marked with: its extension, or the
/// name code fences use for it.
fn language(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "py" => "python",
        "rs" => "rust",
        "js" | "mjs" | "cjs" => "javascript",
        "ts" => "typescript",
        "sh" | "bash" | "zsh" => "sh",
        "yml" => "yaml",
        "md" => "markdown",
        ext => ext,
    }
}

/// The code the first [`MARKERS_MOST`] include markers of `text` (a passage of the page at
/// `page`, workspace-relative) name, each as its marker's line (trimmed) and a fenced block of
/// the lines it names ([`selected`]), marked with the file's language, when `read` returns the
/// file (given a workspace-relative path from [`candidates`]). A marker of a prose file, of a
/// file `read` does not return, or inside a fenced block has none; a code file's passage has
/// no markers.
pub fn shown(
    text: &str,
    page: &str,
    read: impl Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    if !is_prose(page) {
        return out;
    }
    let mut fences = crate::edit::text::Fences::default();
    let mut tried = 0;
    for line in text.lines() {
        let outside = matches!(fences.line(line), crate::edit::text::FenceLine::Outside);
        if !outside || tried >= MARKERS_MOST || out.iter().any(|(m, _)| m == line.trim()) {
            continue;
        }
        let Some(m) = marker(line).filter(|m| !is_prose(&m.path)) else {
            continue;
        };
        tried += 1;
        let block = candidates(page, &m).into_iter().find_map(|path| {
            let body = selected(&read(&path)?, &m)?;
            Some(fenced(&body, language(&path)))
        });
        if let Some(block) = block {
            out.push((line.trim().to_owned(), block));
        }
    }
    out
}

/// `body` in a fenced block marked `language`, its fence longer than any run of backticks that
/// opens a line of it (a docstring's own fence would otherwise close the block early).
fn fenced(body: &str, language: &str) -> String {
    let fence = crate::edit::text::fence_for(body.lines());
    format!("{fence}{language}\n{body}\n{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_syntax_is_read() {
        let m = marker("{* docs_src/options/version/tutorial003_an_py310.py hl[25:28] *}").unwrap();
        assert_eq!(m.path, "docs_src/options/version/tutorial003_an_py310.py");
        assert_eq!(m.highlighted, vec![25, 26, 27, 28]);
        assert!(!m.from_page);
        let m = marker("{* docs_src/a.py ln[3:10] hl[4,6:7] *}").unwrap();
        assert_eq!(
            (m.lines, m.highlighted),
            (Some((3, Some(10))), vec![4, 6, 7])
        );
        let m = marker("--8<-- \"examples/config.py:3:10\"").unwrap();
        assert_eq!(
            (m.path.as_str(), m.lines),
            ("examples/config.py", Some((3, Some(10))))
        );
        assert_eq!(
            marker("--8<-- 'snippets/a.sh'").unwrap().path,
            "snippets/a.sh"
        );
        assert_eq!(
            marker("{!docs/snippet.py!}").unwrap().path,
            "docs/snippet.py"
        );
        assert_eq!(marker("{% include \"a.toml\" %}").unwrap().path, "a.toml");
        let m = marker("{{#include ../listings/ch02/src/main.rs:print}}").unwrap();
        assert!(m.from_page);
        assert_eq!(m.path, "../listings/ch02/src/main.rs");
        assert_eq!(m.anchor.as_deref(), Some("print"));
        let m = marker("{{#rustdoc_include listing.rs:5:}}").unwrap();
        assert_eq!(m.lines, Some((5, None)));
        assert_eq!(
            marker("{{#include file.rs::3}}").unwrap().lines,
            Some((1, Some(3)))
        );
        for none in [
            "--8<--",
            "--8<-- \"https://example.com/a.py\"",
            "{{#title The Book}}",
            "{ \"json\": true }",
            "{* *}",
            "Some prose with {* in it",
        ] {
            assert_eq!(marker(none), None, "{none}");
        }
    }

    #[test]
    fn paths_stay_inside_the_workspace() {
        let m = marker("{{#include ../listings/main.rs}}").unwrap();
        // From the root, `../` climbs out: only the page's folder is tried.
        assert_eq!(
            candidates("book/src/ch01.md", &m),
            vec!["book/listings/main.rs"]
        );
        let m = marker("{* docs_src/a.py *}").unwrap();
        assert_eq!(
            candidates("docs/tutorial/a.md", &m),
            vec![
                "docs_src/a.py",
                "docs/tutorial/docs_src/a.py",
                "docs/docs_src/a.py"
            ]
        );
        // FastAPI's pages under docs/en/docs/ name their code from docs/en/.
        let m = marker("{* ../../docs_src/first_steps/tutorial001.py *}").unwrap();
        assert!(
            candidates("docs/en/docs/tutorial/first-steps.md", &m)
                .contains(&"docs_src/first_steps/tutorial001.py".to_owned()),
            "{:?}",
            candidates("docs/en/docs/tutorial/first-steps.md", &m)
        );
        for escaping in [
            "{{#include ../../etc/passwd}}",
            "--8<-- \"/etc/passwd\"",
            "{!..\\..\\secret.py!}",
        ] {
            let m = marker(escaping).unwrap();
            assert!(
                candidates("docs/a.md", &m).is_empty(),
                "{escaping}: {:?}",
                candidates("docs/a.md", &m)
            );
        }
    }

    #[test]
    fn the_lines_shown_are_the_named_ones_around_the_highlight() {
        let file: String = (1..=40).map(|n| format!("line {n}\n")).collect();
        let m = marker("{* a.py hl[30] *}").unwrap();
        let shown = selected(&file, &m).unwrap();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], "\u{2026}");
        assert_eq!(lines[1], "line 26");
        assert!(lines.contains(&"line 30"));
        assert_eq!(lines.len(), SHOWN_LINES + 2);
        let m = marker("--8<-- \"a.py:3:5\"").unwrap();
        assert_eq!(selected(&file, &m).unwrap(), "line 3\nline 4\nline 5");
        let m = marker("--8<-- \"a.py:50:60\"").unwrap();
        assert_eq!(selected(&file, &m), None);
        let anchored = "fn main() {\n    // ANCHOR: print\n    println!(\"hi\");\n    // ANCHOR_END: print\n}\n";
        let m = marker("{{#include main.rs:print}}").unwrap();
        assert_eq!(selected(anchored, &m).unwrap(), "    println!(\"hi\");");
        let m = marker("{{#include main.rs:other}}").unwrap();
        assert_eq!(selected(anchored, &m), None);
        let m = marker("{{#include main.rs}}").unwrap();
        assert_eq!(
            selected(anchored, &m).unwrap(),
            "fn main() {\n    println!(\"hi\");\n}"
        );
    }

    #[test]
    fn a_marker_is_shown_as_the_code_it_names() {
        let page = "You can achieve the same using `hide_input=True`:\n\n{* docs_src/password/tutorial002.py hl[3] *}\n\n```console\n{* not/a/marker.py *}\n```\n\n--8<-- \"includes/abbreviations.md\"\n\n{* docs_src/missing.py *}\n";
        let read = |path: &str| {
            match path {
            "docs_src/password/tutorial002.py" => Some(
                "import typer\n\ndef main(password: str = typer.Option(..., prompt=True, hide_input=True)):\n    print(password)\n"
                    .to_owned(),
            ),
            "includes/abbreviations.md" => Some("*[HTML]: Hyper Text\n".to_owned()),
            "not/a/marker.py" => Some("x = 1\n".to_owned()),
            _ => None,
        }
        };
        // Inside a fence, a prose file, a file not there: none.
        assert_eq!(
            shown(page, "docs/tutorial/password.md", read),
            vec![(
                "{* docs_src/password/tutorial002.py hl[3] *}".to_owned(),
                "```python\nimport typer\n\ndef main(password: str = typer.Option(..., prompt=True, hide_input=True)):\n    print(password)\n```".to_owned()
            )]
        );
        // A file with its own fence gets a longer one; a hostile highlight is no panic.
        let docstring = |_: &str| {
            Some("def f():\n    \"\"\"\n    ```\n    f()\n    ```\n    \"\"\"\n".to_owned())
        };
        let block = &shown(
            "Use it:\n\n{* a.py hl[18446744073709551615] *}\n",
            "docs/a.md",
            docstring,
        )[0]
        .1;
        assert!(
            block.starts_with("````python\n") && block.ends_with("\n````"),
            "{block}"
        );
        let many: String = format!("{{* a.py hl[{}] *}}", "1:999,".repeat(1000));
        assert!(marker(&many).unwrap().highlighted.len() <= HIGHLIGHTED_MOST);
        // A code file's passage has no markers.
        assert!(shown("{* a.py *}\n", "src/a.py", |_| Some("x".into())).is_empty());
    }
}
