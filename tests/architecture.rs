//! Architecture invariants (`docs/architecture.md`), checked by reading the source tree.
//!
//! 1. Only `src/lsp/` knows the protocol: nothing else names `tower_lsp_server`, `ls_types` or
//!    `lsp_types`; likewise only `src/mcp/` names `rmcp`, and only `src/acp/` names
//!    `agent_client_protocol`.
//! 2. The pure core (`document/`, `edit/`, `syntax/`) does no I/O.
//! 3. Nothing in `src/lsp/`, `src/mcp/` or `src/acp/` prints to stdout, which carries the
//!    protocol.
//! 4. A type name declared in `src/` means one thing (`docs/style.md`, "Distinct names").

use std::collections::BTreeMap;
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
    numbered(&split_source(&std::fs::read_to_string(path).unwrap()).0)
}

/// The comments of a file, line by line (`//`, `///`, `//!` and `/* */`), without code or strings.
fn comment_lines(path: &Path) -> Vec<(usize, String)> {
    numbered(&split_source(&std::fs::read_to_string(path).unwrap()).1)
}

fn numbered(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.to_owned()))
        .filter(|(_, line)| !line.trim().is_empty())
        .collect()
}

/// Splits Rust source into its code (comments and string contents blanked) and its comments;
/// both keep the source's line breaks, so line numbers agree.
fn split_source(source: &str) -> (String, String) {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut comments = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                comments.push(chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                if chars[i] == '\n' {
                    newline(&mut out, &mut comments);
                } else {
                    comments.push(chars[i]);
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
                    Some('\n') => newline(&mut out, &mut comments),
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
                    newline(&mut out, &mut comments);
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            out.push_str("' '");
            i += 3;
        } else if c == '\n' {
            newline(&mut out, &mut comments);
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    (out, comments)
}

fn newline(out: &mut String, comments: &mut String) {
    out.push('\n');
    comments.push('\n');
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
fn only_mcp_knows_rmcp() {
    let found = violations("src", Some("src/mcp"), &["rmcp"]);
    assert!(
        found.is_empty(),
        "rmcp outside src/mcp/:\n{}",
        found.join("\n")
    );
}

/// llama.cpp runs only in the model host process: `src/runtime/` and the `model serve` command
/// that starts it (docs/architecture.md, "The model host"); everything else reaches a model
/// over HTTP, so a crash in C++ never takes an editor's server with it.
#[test]
fn only_the_model_host_runs_llama_cpp() {
    let mut found = violations(
        "src",
        Some("src/runtime"),
        &["llama_cpp_2", "llama_cpp_sys_2"],
    );
    found.extend(
        violations("src", Some("src/runtime"), &["runtime::"])
            .into_iter()
            .filter(|hit| !hit.starts_with("src/cli/model.rs") && hit.contains("crate::runtime")),
    );
    assert!(
        found.is_empty(),
        "llama.cpp reached outside src/runtime/ and `model serve`:\n{}",
        found.join("\n")
    );
}

#[test]
fn only_acp_knows_the_agent_client_protocol() {
    let found = violations("src", Some("src/acp"), &["agent_client_protocol"]);
    assert!(
        found.is_empty(),
        "agent_client_protocol outside src/acp/:\n{}",
        found.join("\n")
    );
}

/// The edges reach the workflows only through the session layer (`workflow::session`), so a
/// run starts, reports and ends the same way whichever protocol asked for it: every mention of
/// `workflow` in their code is `workflow::session` (no `workflow::develop`, no
/// `use crate::workflow;` or `workflow::{…}` to reach past it), and a research run starts
/// through `session::research::run`, not the pipeline's own entry points.
#[test]
fn edges_reach_the_workflow_only_through_the_session_layer() {
    let mut found = Vec::new();
    for dir in ["src/lsp", "src/mcp", "src/acp"] {
        for file in rust_files(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).as_path()) {
            let relative = file
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap()
                .display()
                .to_string();
            for (n, line) in code_lines(&file) {
                if reaches_past_the_session_layer(&line) {
                    found.push(format!("{relative}:{n}: {}", line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "an edge reaches past workflow::session:\n{}",
        found.join("\n")
    );
}

/// Whether one line of edge code (comments and strings already removed) names `workflow`
/// other than as `workflow::session`, or starts a research run by the pipeline's own entry
/// points instead of `session::research::run`.
fn reaches_past_the_session_layer(line: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let alone = |at: usize, len: usize| {
        !ident(line[..at].chars().next_back()) && !ident(line[at + len..].chars().next())
    };
    const SESSION: &str = "workflow::session";
    let through_session = |at: usize| line[at..].starts_with(SESSION) && alone(at, SESSION.len());
    let deeper = line
        .match_indices("workflow")
        .any(|(i, w)| alone(i, w.len()) && !through_session(i));
    let own_run = ["research::run(", "Research::new("].iter().any(|call| {
        line.match_indices(call).any(|(i, _)| {
            !ident(line[..i].chars().next_back()) && !line[..i].ends_with("session::")
        })
    });
    deeper || own_run
}

/// The session-layer check catches each way an edge could reach past it, and lets the ways
/// through the session layer pass.
#[test]
fn the_session_layer_check_sees_violations() {
    for bad in [
        "use crate::workflow::develop::Develop;",
        "use crate::workflow;",
        "use crate::workflow::{session, edit};",
        "let plan = crate::workflow::develop::plan(&request);",
        "let report = research::run(&config, question);",
        "let r = Research::new(config);",
        "use crate::workflow::sessions::Run;",
    ] {
        assert!(reaches_past_the_session_layer(bad), "not seen: {bad}");
    }
    for good in [
        "use crate::workflow::session::{self, RunEvent, RunKind, Runs};",
        "let research = session::research::run(&self.config, question, options, &run);",
        "let workflows = 2; let my_workflow = 1;",
        "use crate::workflow::session::research::{ResearchError, RunOptions};",
    ] {
        assert!(!reaches_past_the_session_layer(good), "flagged: {good}");
    }
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
    for dir in ["src/lsp", "src/mcp", "src/acp"] {
        let found = violations(
            dir,
            None,
            &["println!", "print!", "dbg!", "std::io::stdout"],
        );
        assert!(
            found.is_empty(),
            "writes to stdout in {dir}/:\n{}",
            found.join("\n")
        );
    }
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

/// The `pub`, `pub(crate)` and `pub(super)` structs, enums, traits and type aliases under `dir`
/// whose name is declared in more than one place, each as `Name: path:line, path:line`.
fn shared_type_names(dir: &Path) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut places: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in rust_files(dir) {
        for (n, line) in code_lines(&file) {
            let Some(rest) = line.trim_start().strip_prefix("pub") else {
                continue;
            };
            let rest = ["(crate)", "(super)"]
                .iter()
                .find_map(|v| rest.strip_prefix(v))
                .unwrap_or(rest);
            let mut words = rest.split_whitespace();
            if !matches!(words.next(), Some("struct" | "enum" | "trait" | "type")) {
                continue;
            }
            let Some(name) = words.next() else { continue };
            let name: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let shown = file.strip_prefix(root).unwrap_or(&file).display();
            places.entry(name).or_default().push(format!("{shown}:{n}"));
        }
    }
    places
        .into_iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name}: {}", at.join(", ")))
        .collect()
}

/// `docs/style.md`, "Distinct names": a type name means one thing across the crate.
#[test]
fn type_names_are_distinct() {
    let shared = shared_type_names(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        shared.is_empty(),
        "type names declared in more than one place in src/ (give each its own name):\n{}",
        shared.join("\n")
    );
}

/// The name check sees a name declared twice, whatever the visibility, and nothing in comments.
#[test]
fn the_name_check_sees_shared_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.rs"),
        "pub struct Same {}\npub(crate) enum Other {}\n// pub struct Quiet;\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.rs"),
        "pub(super) struct Same;\npub trait Lone {}\n/// pub enum Other\nlet s = \"pub struct Quiet\";\n",
    )
    .unwrap();
    let shared = shared_type_names(dir.path());
    assert_eq!(shared.len(), 1, "{shared:?}");
    assert!(shared[0].starts_with("Same: "), "{shared:?}");
}

/// Upstream projects whose issue trackers a comment may cite as `<project> issue N`.
const UPSTREAM: [&str; 8] = [
    "tower-lsp",
    "tower-lsp-server",
    "rust-analyzer",
    "helix",
    "ruff",
    "neovim",
    "tokio",
    "reqwest",
];

/// Design files that lived outside the repository before `docs/`; citing them leaves a reader
/// of a fresh clone with nothing to open.
const OUTSIDE_DESIGN: [&str; 7] = [
    "ARCHITECTURE.md",
    "EDITING.md",
    "RESEARCH.md",
    "STYLE.md",
    "DEPENDENCIES.md",
    "NOTES.md",
    "shared/design",
];

/// What is wrong with the citations in one comment line, given the documents in `docs/`.
fn citation_problems(comment: &str, docs: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let lower = comment.to_ascii_lowercase();
    for (at, _) in lower.match_indices("issue") {
        let rest = lower[at + "issue".len()..].trim_start_matches('s');
        let rest = rest.trim_start_matches([' ', '#']);
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let before = lower[..at].trim_end();
        let project = before
            .rsplit(|c: char| c.is_whitespace() || c == '(')
            .next()
            .unwrap_or("")
            .trim_start_matches(['`', '"', '\'']);
        if !UPSTREAM.contains(&project) {
            problems.push(
                "cites an issue number: point at docs/<file>.md or state the decision".to_owned(),
            );
        }
    }
    for name in OUTSIDE_DESIGN {
        for (at, _) in comment.match_indices(name) {
            if !comment[..at].ends_with("docs/") {
                problems.push(format!(
                    "cites {name}, which a clone does not have: cite docs/<file>.md"
                ));
            }
        }
    }
    for (at, _) in comment.match_indices("docs/") {
        let name: String = comment[at + "docs/".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect();
        let name = name.trim_end_matches('.');
        if (name.ends_with(".md") || name.ends_with(".json")) && !docs.iter().any(|d| d == name) {
            problems.push(format!("cites docs/{name}, which does not exist"));
        }
    }
    problems
}

fn docs_present() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Comments state a decision or cite a document a clone has (`docs/<file>.md`), never an issue
/// number or a design note outside the repository; upstream projects' issues are cited with
/// their project (`tower-lsp issue 284`).
#[test]
fn comments_cite_documents_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = docs_present();
    let mut found = Vec::new();
    for dir in ["src", "tests", "benches"] {
        for file in rust_files(&root.join(dir)) {
            for (n, line) in comment_lines(&file) {
                for problem in citation_problems(&line, &docs) {
                    let shown = file.strip_prefix(root).unwrap().display();
                    found.push(format!("{shown}:{n}: {problem}: {}", line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Every relative link in the README and in `docs/` leads to a file of the repository.
#[test]
fn document_links_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    pages.extend(
        docs_present()
            .iter()
            .filter(|n| n.ends_with(".md"))
            .map(|n| root.join("docs").join(n)),
    );
    let mut broken = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for (at, _) in text.match_indices("](") {
            let target: String = text[at + 2..].chars().take_while(|c| *c != ')').collect();
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                continue;
            }
            if !page.parent().unwrap().join(path).exists() {
                broken.push(format!(
                    "{}: {target}",
                    page.strip_prefix(root).unwrap().display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_citation_check_sees_bad_citations() {
    let docs = vec!["architecture.md".to_owned(), "editing.md".to_owned()];
    for bad in [
        "// Decisions (issue 4):",
        "/// Issue 6 in a real client",
        "// see issue #12",
        "//! `EDITING.md` is the contract",
        "// the design notes in ../shared/design/",
        "// see docs/nowhere.md",
    ] {
        assert!(!citation_problems(bad, &docs).is_empty(), "{bad}");
    }
    for good in [
        "// `docs/editing.md` is the contract",
        "// (tower-lsp issue 284)",
        "// `docs/architecture.md` invariant 4",
        "// the issue is that the model answers twice",
        "// AGENTS.md and CLAUDE.md are rule files",
    ] {
        assert!(citation_problems(good, &docs).is_empty(), "{good}");
    }
}

/// The README's command table names every subcommand and every flag the binary accepts, so a
/// new command or option cannot land undocumented.
#[test]
fn readme_lists_every_command_and_flag() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let table: String = readme
        .lines()
        .filter(|l| l.starts_with("| `patchwise"))
        .collect::<Vec<_>>()
        .join("\n");
    let help = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_patchwise"))
            .args(args)
            .arg("-h")
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let section = |text: &str, heading: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with(heading))
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with(' '))
            .filter(|l| l.trim_start().starts_with('-') || !l.starts_with("      "))
            .map(|l| l.trim().to_owned())
            .collect()
    };
    let mut missing = Vec::new();
    let check = |path: Vec<&str>, missing: &mut Vec<String>| {
        let text = help(&path);
        for option in section(&text, "Options:") {
            let Some(long) = option.split_whitespace().find(|w| w.starts_with("--")) else {
                continue;
            };
            let long: String = long
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            let long = long.as_str();
            if matches!(long, "--help" | "--version" | "--verbose" | "--log-file") {
                continue;
            }
            if !table.contains(long) {
                missing.push(format!("patchwise {} {long}", path.join(" ")));
            }
        }
        section(&text, "Commands:")
            .into_iter()
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .filter(|c| c != "help")
            .collect::<Vec<_>>()
    };
    for command in check(vec![], &mut missing) {
        if !table.contains(&format!("`patchwise {command}")) {
            missing.push(format!("patchwise {command}"));
        }
        for sub in check(vec![&command], &mut missing) {
            if !table.contains(&format!("`{sub}")) && !table.contains(&format!("{command} {sub}")) {
                missing.push(format!("patchwise {command} {sub}"));
            }
            check(vec![&command, &sub], &mut missing);
        }
    }
    assert!(
        missing.is_empty(),
        "missing from the README's command table:\n{}",
        missing.join("\n")
    );
}

/// The `[[test]]` targets with `harness = false` (fixture corpora run by libtest-mimic), as
/// paths inside the repository.
fn harness_free_targets() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
    let targets = manifest.get("test").and_then(|t| t.as_array());
    targets
        .into_iter()
        .flatten()
        .filter(|t| t.get("harness").and_then(|h| h.as_bool()) == Some(false))
        .map(|t| {
            let name = t["name"].as_str().unwrap();
            let path = t.get("path").and_then(|p| p.as_str());
            root.join(path.map_or_else(|| format!("tests/{name}.rs"), str::to_owned))
        })
        .collect()
}

/// A target without the standard harness never runs a `#[test]` function: it would compile,
/// pass in review, and never run. Its tests are trials listed in its `main`
/// (`tests/support/cases.rs`).
#[test]
fn harness_free_targets_hold_no_test_attributes() {
    let targets = harness_free_targets();
    assert!(
        targets.len() >= 5,
        "expected the fixture corpora as harness = false targets: {targets:?}"
    );
    let mut found = Vec::new();
    for file in &targets {
        for (n, line) in code_lines(file) {
            if ["#[test]", "#[tokio::test", "proptest!"]
                .iter()
                .any(|a| line.contains(a))
            {
                found.push(format!("{}:{n}: {}", file.display(), line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "these tests would never run in a harness = false target; make them trials in `main` \
         or move them to a target with the standard harness:\n{}",
        found.join("\n")
    );
}
