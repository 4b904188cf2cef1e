//! Whole files in a model's answer: the blocks of an answer that gives the complete new text of
//! one or more files (Aider's `whole` format: the file's path on the line above the fence, or
//! in the fence's info string), and the two checks a whole-file answer gets before it is taken
//! (`docs/develop.md`, "Steps that rewrite"): a file that now defines the same top-level
//! function or class twice, and a stub the request asked to implement left as it was while
//! another function was added beside it. Small models do both (four appended copies of a
//! function below an untouched `def primes(limit): pass`).
//!
//! Pure: text in, blocks or problems out. It never decides which file a block without a path
//! belongs to; the workflow does, from what it asked for.

use std::collections::HashMap;

use crate::syntax::{Language, Scope, SymbolKind, SyntaxTree, symbols};

use super::text::{fenced_blocks, is_blank};

/// One code block of an answer, with the path it was given (if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBlock {
    /// The path named above the fence or in its info string, as written (`./` removed).
    pub path: Option<String>,
    /// The fence's info string (`python`).
    pub info: String,
    /// The lines between the fences.
    pub body: String,
    /// Whether the block was closed (an unclosed block was cut).
    pub closed: bool,
}

/// Every code block of `answer` with the path the answer gives it.
pub fn file_blocks(answer: &str) -> Vec<FileBlock> {
    let answer = &path_out_of_bare_fence(answer);
    let lines: Vec<&str> = answer.lines().collect();
    fenced_blocks(answer)
        .into_iter()
        .map(|b| {
            let from_info = b
                .info
                .split(|c: char| c.is_whitespace() || c == ':' || c == '=' || c == '"')
                .map(clean_path)
                .find(|w| looks_like_path(w))
                .map(str::to_owned);
            let above = (1..=2)
                .filter_map(|back| b.open.checked_sub(back))
                .map(|i| lines.get(i).copied().unwrap_or(""))
                .find(|l| !is_blank(l))
                .and_then(path_line);
            FileBlock {
                path: from_info.or(above),
                info: b.info.clone(),
                body: b.body,
                closed: b.closed,
            }
        })
        .collect()
}

/// The path written inside a bare fence before the real one (`` ``` ``, `src/lib.rs`,
/// `` ```rust ``, the file — recorded from Qwen2.5-Coder-1.5B): the bare fence is dropped, so the
/// path stands above the real fence as a path line does.
fn path_out_of_bare_fence(answer: &str) -> String {
    let lines: Vec<&str> = answer.split_inclusive('\n').collect();
    let mut out = String::with_capacity(answer.len());
    let mut i = 0;
    while i < lines.len() {
        let bare = lines[i].trim() == "```";
        let path = lines.get(i + 1).and_then(|l| path_line(l));
        let real = lines.get(i + 2).is_some_and(|l| {
            let t = l.trim();
            t.starts_with("```") && t.len() > 3 && !t[3..].starts_with('`')
        });
        if bare && path.is_some() && real {
            out.push_str(lines[i + 1]);
            i += 1;
            continue;
        }
        out.push_str(lines[i]);
        i += 1;
    }
    out
}

/// The path a line above a fence names: the line is only a path, perhaps marked up
/// (`pangram.py`, `**src/lib.rs**`, `### File: a/b.ts`, `` `x.py`: ``).
pub fn path_line(line: &str) -> Option<String> {
    let mut t = line
        .trim()
        .trim_start_matches(['#', '*', '-', '>', ' '])
        .trim();
    for prefix in [
        "file:",
        "filename:",
        "path:",
        "file name:",
        "updated",
        "new file:",
    ] {
        if t.get(..prefix.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(prefix))
        {
            t = t[prefix.len()..].trim();
        }
    }
    // A path with a note after it, as a small model copies the label it was shown
    // (`pangram_test.py (the tests: read them, do not change them)`, `a.rs — unchanged`).
    if let Some((first, rest)) = t.split_once(char::is_whitespace) {
        let rest = rest.trim_start();
        if rest.starts_with(['(', '-', '\u{2013}', '\u{2014}']) {
            t = first;
        }
    }
    let t = clean_path(t.trim_end_matches(':'));
    (!t.contains(char::is_whitespace) && looks_like_path(t)).then(|| t.to_owned())
}

fn clean_path(w: &str) -> &str {
    w.trim_matches(|c: char| "`'\"*[](){}<>:;,".contains(c))
        .trim_start_matches("./")
}

/// Whether a word looks like a file path: it has a `/` between names, or ends in a short
/// extension of a known file type (`v1.2`, `self.x` and `fs.read` do not).
pub fn looks_like_path(w: &str) -> bool {
    if w.is_empty() || w.contains("://") || w.starts_with('-') || w.contains(char::is_whitespace) {
        return false;
    }
    let name = w.rsplit('/').next().unwrap_or(w);
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return w.contains('/') && !name.is_empty() && w.chars().any(char::is_alphabetic);
    };
    const EXTENSIONS: &[&str] = &[
        "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "c", "h", "cc",
        "cpp", "hpp", "cs", "rb", "php", "swift", "scala", "sh", "toml", "json", "yaml", "yml",
        "md", "txt", "cfg", "ini", "html", "css", "scss", "sql", "lua", "ex", "exs", "zig",
    ];
    !stem.is_empty() && EXTENSIONS.contains(&ext)
}

/// Names defined more than once at the top level of `after` that were not defined that often
/// in `before`: functions, classes, structs, enums, traits, interfaces, types.
pub fn duplicate_definitions(language: Language, before: &str, after: &str) -> Vec<String> {
    let count = |text: &str| -> HashMap<String, usize> {
        let mut out = HashMap::new();
        for s in top_level(language, text) {
            *out.entry(s.0).or_insert(0) += 1;
        }
        out
    };
    let (old, new) = (count(before), count(after));
    let mut dup: Vec<String> = new
        .into_iter()
        .filter(|(name, n)| *n >= 2 && *n > old.get(name).copied().unwrap_or(0))
        .map(|(name, _)| name)
        .collect();
    dup.sort();
    dup
}

/// Stubs of `before` (a function whose body is only `pass`, `...`, Rust's placeholder macros
/// (`todo`, `unimplemented`), a "not implemented" error or nothing) that are still stubs in `after` while `after` defines
/// top-level functions `before` did not: the model wrote a new function instead of
/// implementing the one asked for. Returns (stub, added functions) pairs.
pub fn untouched_stubs(
    language: Language,
    before: &str,
    after: &str,
) -> Vec<(String, Vec<String>)> {
    let old = top_level(language, before);
    let new = top_level(language, after);
    let added: Vec<String> = new
        .iter()
        .filter(|(name, kind, _)| {
            matches!(kind, SymbolKind::Function) && !old.iter().any(|(o, _, _)| o == name)
        })
        .map(|(name, _, _)| name.clone())
        .collect();
    if added.is_empty() {
        return Vec::new();
    }
    old.iter()
        .filter(|(_, _, stub)| *stub)
        .filter(|(name, _, _)| new.iter().any(|(n, _, stub)| n == name && *stub))
        .map(|(name, _, _)| (name.clone(), added.clone()))
        .collect()
}

/// Top-level definitions of `text`: name, kind, and whether it is a function stub.
fn top_level(language: Language, text: &str) -> Vec<(String, SymbolKind, bool)> {
    let tree = SyntaxTree::parse(text, language);
    symbols(text, &tree, Scope::Outline)
        .into_iter()
        .filter(|s| s.depth == 0 && !s.nested)
        .filter(|s| {
            matches!(
                s.kind,
                SymbolKind::Function
                    | SymbolKind::Class
                    | SymbolKind::Struct
                    | SymbolKind::Enum
                    | SymbolKind::Trait
                    | SymbolKind::Interface
                    | SymbolKind::Type
            )
        })
        .map(|s| {
            let stub = matches!(s.kind, SymbolKind::Function)
                && text
                    .get(s.range.clone())
                    .is_some_and(|f| is_stub(language, f));
            (s.name, s.kind, stub)
        })
        .collect()
}

/// Whether a function's text has a body that does nothing yet.
fn is_stub(language: Language, function: &str) -> bool {
    let lines: Vec<&str> = function.lines().collect();
    let body: String = if language == Language::Python {
        // After the header's `:` (the first line ending in one), or after the last `:` of a
        // one-line function.
        match lines.iter().position(|l| l.trim_end().ends_with(':')) {
            Some(i) => lines[i + 1..].join("\n"),
            None => function.rsplit_once(':').map_or("", |(_, b)| b).to_owned(),
        }
    } else {
        match lines.iter().position(|l| l.trim_end().ends_with('{')) {
            Some(i) if lines.len() > 1 => {
                let inner = lines[i + 1..].join("\n");
                inner
                    .rsplit_once('}')
                    .map_or(inner.clone(), |(b, _)| b.to_owned())
            }
            _ => {
                let after = function.rfind(')').map_or(function, |i| &function[i..]);
                match (after.find('{'), after.rfind('}')) {
                    (Some(a), Some(b)) if a < b => after[a + 1..b].to_owned(),
                    _ => return false,
                }
            }
        }
    };
    let mut rest = String::new();
    let mut in_doc = false;
    for line in body.lines() {
        let t = line.trim();
        let quotes = t.matches("\"\"\"").count() + t.matches("'''").count();
        if in_doc {
            if quotes % 2 == 1 {
                in_doc = false;
            }
            continue;
        }
        if t.starts_with("\"\"\"") || t.starts_with("'''") {
            in_doc = quotes == 1;
            continue;
        }
        if t.is_empty() || t.starts_with('#') || t.starts_with("//") {
            continue;
        }
        rest.push_str(t);
        rest.push('\n');
    }
    let rest = rest.trim().trim_end_matches(';');
    let lower = rest.to_lowercase();
    // Rust's placeholder macros, with or without a message: `NAME!()`, `NAME!("…")`.
    let placeholder = |name: &str| {
        lower
            .strip_prefix(name)
            .is_some_and(|after| after.starts_with("!("))
    };
    rest.is_empty()
        || matches!(rest, "pass" | "...")
        || lower.starts_with("raise notimplementederror")
        || (lower.starts_with("throw new error") && lower.contains("implement"))
        || placeholder("todo")
        || placeholder("unimplemented")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_take_the_path_above_or_in_the_info_string() {
        let answer = "Here you go.\n\npangram.py\n```python\ndef f():\n    pass\n```\n\n**src/lib.rs**\n\n```rust\nfn a() {}\n```\n```ts src/x.ts\nlet a = 1;\n```\nSome prose.\n```\nplain\n```\n";
        let blocks = file_blocks(answer);
        let paths: Vec<Option<&str>> = blocks.iter().map(|b| b.path.as_deref()).collect();
        assert_eq!(
            paths,
            [
                Some("pangram.py"),
                Some("src/lib.rs"),
                Some("src/x.ts"),
                None
            ]
        );
        assert_eq!(blocks[0].body, "def f():\n    pass\n");
        assert_eq!(path_line("### File: `a/b.py`:"), Some("a/b.py".to_owned()));
        assert_eq!(path_line("Here is the updated file:"), None);
        // The label the model was shown, copied (Qwen2.5-Coder-1.5B, develop bench py-pangram).
        assert_eq!(
            path_line("pangram_test.py (the tests: read them, do not change them)"),
            Some("pangram_test.py".to_owned())
        );
        assert_eq!(
            path_line("src/a.rs \u{2014} unchanged"),
            Some("src/a.rs".to_owned())
        );
        assert_eq!(path_line("Use pangram.py (it is shorter)"), None);
        assert_eq!(path_line("v1.2"), None);
    }

    #[test]
    fn a_path_inside_a_bare_fence_names_the_block_after_it() {
        // Recorded from qwen2.5-coder-1.5b (the develop bench's rust-fix-test, a fix round).
        let answer = "```\nsrc/lib.rs\n```rust\nfn a() {}\n```\n";
        let blocks = file_blocks(answer);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].path.as_deref(), Some("src/lib.rs"));
        assert_eq!(blocks[0].info, "rust");
        assert_eq!(blocks[0].body, "fn a() {}\n");
    }

    #[test]
    fn duplicates_and_untouched_stubs_are_found() {
        let before = "def primes(limit):\n    pass\n";
        let appended = "def primes(limit):\n    pass\n\n\ndef sieve(limit):\n    return []\n";
        assert_eq!(
            untouched_stubs(Language::Python, before, appended),
            [("primes".to_owned(), vec!["sieve".to_owned()])]
        );
        let implemented = "def primes(limit):\n    return [n for n in range(2, limit + 1)]\n";
        assert!(untouched_stubs(Language::Python, before, implemented).is_empty());
        let twice = "def primes(limit):\n    pass\n\n\ndef primes(limit):\n    return []\n";
        assert_eq!(
            duplicate_definitions(Language::Python, before, twice),
            ["primes"]
        );
        assert!(duplicate_definitions(Language::Python, before, implemented).is_empty());
        let doc = "def f(x):\n    \"\"\"Does f.\n\n    More.\n    \"\"\"\n    pass\n";
        let py = Language::Python;
        assert!(is_stub(py, doc));
        assert!(is_stub(
            py,
            "def maximum_value(maximum_weight, items): pass"
        ));
        assert!(!is_stub(py, "def f(): return {'a': 1}"));
        let placeholder = format!("fn f() -> u32 {{\n    {}!()\n}}", "todo");
        assert!(is_stub(Language::Rust, &placeholder));
        assert!(!is_stub(Language::Rust, "fn f() -> u32 {\n    1\n}"));
        assert!(is_stub(
            Language::TypeScript,
            "export function f(): number {\n  throw new Error('Not implemented');\n}"
        ));
    }
}
