//! Architecture invariants (ARCHITECTURE.md), checked by reading the source tree.
//!
//! 1. Only `src/lsp/` knows the protocol: nothing else names `tower_lsp_server`, `ls_types` or
//!    `lsp_types`.
//! 2. The pure core (`document/`, `edit/`, `syntax/`) does no I/O.
//! 3. Nothing in `src/lsp/` prints to stdout, which carries the protocol.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// Lines of code with comments and the contents of string literals blanked out: docs and
/// test data may mention what code must not use.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    let source = std::fs::read_to_string(path).unwrap();
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                if chars[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !prev_is_ident(&chars, i)
        {
            // Raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.push_str("\"\"");
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some('\n') => out.push('\n'),
                    _ => {}
                }
                j += 1;
            }
            i = j;
        } else if c == '"' {
            out.push_str("\"\"");
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            out.push_str("' '");
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.to_owned()))
        .filter(|(_, code)| !code.trim().is_empty())
        .collect()
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

fn violations(dir: &str, skip: Option<&str>, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let skip = skip.map(|s| root.join(s));
    let mut found = Vec::new();
    for file in rust_files(&root.join(dir)) {
        if skip.as_ref().is_some_and(|s| file.starts_with(s)) {
            continue;
        }
        for (n, line) in code_lines(&file) {
            for word in forbidden {
                let hit = line.match_indices(word).any(|(at, _)| {
                    let before = line[..at].chars().next_back();
                    let after = line[at + word.len()..].chars().next();
                    let ident =
                        |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    !ident(before) && (!ident(after) || word.ends_with(['(', ':', '!']))
                });
                if hit {
                    let shown = file.strip_prefix(root).unwrap().display();
                    found.push(format!("{shown}:{n}: `{word}` in: {}", line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn only_lsp_knows_the_protocol() {
    let found = violations(
        "src",
        Some("src/lsp"),
        &["tower_lsp_server", "ls_types", "lsp_types"],
    );
    assert!(
        found.is_empty(),
        "protocol types outside src/lsp/:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_pure_core_does_no_io() {
    let io = [
        "std::fs",
        "std::net",
        "std::process",
        "std::io::stdin",
        "std::io::stdout",
        "File::",
        "tokio",
        "reqwest",
        "rusqlite",
        "println!",
        "eprintln!",
    ];
    let mut found = Vec::new();
    for dir in ["src/document", "src/edit", "src/syntax"] {
        for line in violations(dir, None, &io) {
            // Tests may read their fixtures.
            if !line.contains("tests.rs:") && !line.contains("/tests/") {
                found.push(line);
            }
        }
    }
    assert!(
        found.is_empty(),
        "I/O in the pure core:\n{}",
        found.join("\n")
    );
}

#[test]
fn stdout_belongs_to_the_protocol() {
    let found = violations(
        "src/lsp",
        None,
        &["println!", "print!", "dbg!", "std::io::stdout().write"],
    );
    assert!(
        found.is_empty(),
        "writes to stdout in src/lsp/:\n{}",
        found.join("\n")
    );
}

/// The checker itself must catch what it is for.
#[test]
fn the_checker_sees_violations() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.rs");
    std::fs::write(
        &file,
        "use tower_lsp_server::ls_types::Position; // ok in a comment: reqwest\n\
         let s = \"println!(x)\"; let r = r#\"std::fs\"#;\n/* tokio */ let c = '\"'; std::fs::read(p);\n",
    )
    .unwrap();
    let lines = code_lines(&file);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].1.contains("tower_lsp_server"));
    assert!(!lines[0].1.contains("reqwest"));
    assert!(!lines[1].1.contains("println") && !lines[1].1.contains("std::fs"));
    assert!(lines[2].1.contains("std::fs::read") && !lines[2].1.contains("tokio"));
}
