//! Tool tests below the fixture corpus: specs, the sandbox, the ledger and each tool's edge
//! cases on a copy of `fixtures/tools/workspace`. The corpus itself (`fixtures/tools/cases/`)
//! runs one named test per case in `tests/tool_fixtures.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tools")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A temp dir holding `ws/` (the workspace copy, with ignored files added) and an `outside.txt`
/// next to it.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    copy_dir(&fixtures().join("workspace"), &ws);
    std::fs::create_dir_all(ws.join("target")).unwrap();
    std::fs::write(ws.join("target/out.txt"), "pub fn built() {}\n").unwrap();
    std::fs::write(ws.join("debug.log"), "pub fn logged() {}\n").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "secret\n").unwrap();
    (dir, ws)
}

fn session(ws: &Path) -> Session {
    Session::new(
        &[ws.to_path_buf()],
        Arc::new(RealFs),
        Snapshot::new(),
        ToolOptions::default(),
    )
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: format!("call_{name}"),
        name: name.to_owned(),
        arguments,
        arguments_error: None,
        provider_data: None,
    }
}

/// Every file under `dir` with its content, for "nothing was written" assertions.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            } else {
                out.push((e.path(), Vec::new()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn specs_are_the_contract() {
    let specs = specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, TOOL_NAMES);
    let required = |name: &str| -> Vec<String> {
        let s = spec(name).unwrap();
        s.parameters["required"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    };
    assert_eq!(required("read_file"), ["path"]);
    assert!(required("list_files").is_empty());
    assert_eq!(required("search"), ["pattern"]);
    assert_eq!(required("edit_file"), ["path", "old_string", "new_string"]);
    assert_eq!(required("insert_lines"), ["path", "line", "text"]);
    assert_eq!(required("replace_lines"), ["path", "start", "end", "text"]);
    assert_eq!(required("replace_symbol"), ["path", "symbol", "text"]);
    assert_eq!(required("write_file"), ["path", "content"]);
    assert_eq!(
        required("replace_pattern"),
        ["path", "pattern", "replacement"]
    );
    assert_eq!(required("insert_text"), ["path", "anchor", "text"]);
    assert_eq!(required("prepend"), ["path", "text"]);
    assert_eq!(required("append"), ["path", "text"]);
    assert_eq!(required("begin_write"), ["path"]);
    assert_eq!(required("end_write"), ["id"]);
    for s in &specs {
        assert!(
            s.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        assert_eq!(s.parameters["type"], "object");
        for (param, _) in s.parameters["properties"].as_object().unwrap() {
            assert!(!param.is_empty());
        }
    }
    let props = |name: &str| -> Vec<String> {
        let mut v: Vec<String> = spec(name).unwrap().parameters["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        v.sort();
        v
    };
    assert_eq!(props("read_file"), ["limit", "offset", "path"]);
    assert_eq!(props("list_files"), ["path", "pattern"]);
    assert_eq!(props("search"), ["path", "pattern", "regex"]);
    assert_eq!(
        props("edit_file"),
        ["new_string", "old_string", "path", "replace_all"]
    );
    assert_eq!(props("insert_lines"), ["before", "line", "path", "text"]);
    assert_eq!(
        props("replace_pattern"),
        ["all", "path", "pattern", "replacement"]
    );
    assert_eq!(props("insert_text"), ["anchor", "before", "path", "text"]);
    assert_eq!(props("prepend"), ["path", "text"]);
    assert_eq!(props("append"), ["path", "text"]);
    assert_eq!(props("begin_write"), ["mode", "path"]);
    assert_eq!(props("end_write"), ["complete", "id"]);
    assert_eq!(
        spec("begin_write").unwrap().parameters["properties"]["mode"]["enum"],
        json!(["create", "overwrite", "append"])
    );
}

#[test]
fn aliases_resolve_old_names() {
    assert_eq!(canonical_name("use_codestral"), Some(CODING_AGENT));
    assert_eq!(canonical_name("use_coding_agent"), Some(CODING_AGENT));
    assert_eq!(canonical_name("str_replace"), Some("edit_file"));
    assert_eq!(canonical_name(" read_file "), Some("read_file"));
    assert_eq!(canonical_name("rm_rf"), None);
    for (old, new) in ALIASES {
        assert_eq!(canonical_name(old), Some(*new), "{old}");
        assert!(
            TOOL_NAMES.contains(new) || *new == CODING_AGENT,
            "alias {old} points at unknown {new}"
        );
    }
    assert_eq!(spec("view_file").unwrap().name, "read_file");
}

#[cfg(unix)]
#[test]
fn symlinks_leading_outside_are_refused() {
    let (dir, ws) = workspace();
    let outside = dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("x.rs"), "fn x() {}\n").unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.txt"), ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("linkdir")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("missing"), ws.join("dangling")).unwrap();
    std::os::unix::fs::symlink(ws.join("src/lib.rs"), ws.join("inside.rs")).unwrap();
    let before = tree(dir.path());
    let mut s = session(&ws);
    for (name, args) in [
        ("read_file", json!({"path": "link.txt"})),
        ("read_file", json!({"path": "linkdir/x.rs"})),
        ("list_files", json!({"path": "linkdir"})),
        ("search", json!({"pattern": "fn", "path": "linkdir"})),
        (
            "write_file",
            json!({"path": "linkdir/new.rs", "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "linkdir/deep/new.rs", "content": "x"}),
        ),
        ("write_file", json!({"path": "dangling", "content": "x"})),
        (
            "read_file",
            json!({"path": format!("{}/link.txt", ws.display())}),
        ),
    ] {
        let o = s.execute(&call(name, args.clone()));
        assert!(
            matches!(o.status, Status::Failed(ToolError::Permission { .. })),
            "{name} {args}: {}",
            o.content
        );
        assert!(o.content.contains("permission denied"), "{}", o.content);
    }
    // A symlink that stays inside is fine.
    let o = s.execute(&call("read_file", json!({"path": "inside.rs"})));
    assert!(!o.is_error(), "{}", o.content);
    // The walk does not follow the symlinked directory either.
    let o = s.execute(&call("search", json!({"pattern": "fn x"})));
    assert!(o.content.starts_with("no matches"), "{}", o.content);
    assert!(s.copy.changes().is_empty());
    assert_eq!(tree(dir.path()), before);
}

#[test]
fn reads_run_in_parallel_and_keep_their_order() {
    let (_dir, ws) = workspace();
    let mut s = session(&ws);
    let calls = vec![
        call("read_file", json!({"path": "src/lib.rs"})),
        call("search", json!({"pattern": "greet"})),
        call("read_file", json!({"path": "src/util.py"})),
        call("list_files", json!({"path": "docs"})),
        call(
            "edit_file",
            json!({"path": "src/util.py", "old_string": "hello ", "new_string": "hi "}),
        ),
        call("read_file", json!({"path": "src/util.py", "limit": 2})),
    ];
    let out = s.execute_all(&calls);
    assert_eq!(out.len(), 6);
    let ids: Vec<&str> = out.iter().map(|o| o.call_id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "call_read_file",
            "call_search",
            "call_read_file",
            "call_list_files",
            "call_edit_file",
            "call_read_file"
        ]
    );
    assert!(
        out[0].content.starts_with("src/lib.rs (23 lines)"),
        "{}",
        out[0].content
    );
    assert!(
        out[1].content.contains("src/util.py:1:"),
        "{}",
        out[1].content
    );
    // The edit saw the parallel reads in the ledger, and the read after it sees the edit.
    assert!(
        matches!(out[4].status, Status::Edited { .. }),
        "{}",
        out[4].content
    );
    assert!(
        out[5].content.contains("return \"hi \" + name"),
        "{}",
        out[5].content
    );
}

#[test]
fn open_buffers_are_the_truth_and_disk_is_never_written() {
    let (dir, ws) = workspace();
    let before = tree(dir.path());
    let lib = ws.join("src/lib.rs");
    let buffer = "pub fn add(a: i32, b: i32) -> i32 {\n    b + a\n}\n".to_owned();
    let mut open = Snapshot::new();
    open.insert(
        lib.clone(),
        OpenBuffer {
            text: buffer.clone(),
            version: 7,
        },
    );
    let mut s = Session::new(
        std::slice::from_ref(&ws),
        Arc::new(RealFs),
        open,
        ToolOptions::default(),
    );
    let o = s.execute(&call("read_file", json!({"path": "src/lib.rs"})));
    assert!(o.content.contains("    b + a"), "{}", o.content);
    assert_eq!(s.ledger.seen(&lib).unwrap().version, Some(7));
    let o = s.execute(&call(
        "edit_file",
        json!({"path": "src/lib.rs", "old_string": "b + a", "new_string": "a + b"}),
    ));
    assert!(!o.is_error(), "{}", o.content);
    let o = s.execute(&call("search", json!({"pattern": "a + b", "path": "src"})));
    assert!(o.content.contains("src/lib.rs:2:"), "{}", o.content);
    let changes = s.copy.changes();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].path, lib);
    assert_eq!(changes[0].base_version, Some(7));
    assert_eq!(changes[0].original.as_deref(), Some(buffer.as_str()));
    assert!(changes[0].text.contains("    a + b"));
    assert_eq!(tree(dir.path()), before, "nothing reaches the disk");
}

#[test]
fn a_file_changed_since_it_was_read_is_stale() {
    let (_dir, ws) = workspace();
    let mut s = session(&ws);
    s.execute(&call("read_file", json!({"path": "src/util.py"})));
    std::fs::write(
        ws.join("src/util.py"),
        "def greet(name):\n    return 'yo ' + name\n",
    )
    .unwrap();
    let o = s.execute(&call(
        "edit_file",
        json!({"path": "src/util.py", "old_string": "return \"hello \" + name", "new_string": "return name"}),
    ));
    assert!(
        matches!(
            o.status,
            Status::Failed(ToolError::Refused {
                kind: RefusalKind::Stale,
                ..
            })
        ),
        "{}",
        o.content
    );
    assert!(
        o.content.contains("changed since you read it"),
        "{}",
        o.content
    );
    assert!(o.content.contains("'yo '"), "{}", o.content);
}

#[test]
fn parse_check_can_be_turned_off() {
    let (_dir, ws) = workspace();
    let options = ToolOptions {
        parse_check: false,
        ..ToolOptions::default()
    };
    let mut s = Session::new(
        std::slice::from_ref(&ws),
        Arc::new(RealFs),
        Snapshot::new(),
        options,
    );
    s.execute(&call("read_file", json!({"path": "src/lib.rs"})));
    let o = s.execute(&call(
        "edit_file",
        json!({"path": "src/lib.rs", "old_string": "    a + b\n}", "new_string": "    a + b\n"}),
    ));
    assert!(!o.is_error(), "{}", o.content);
}

#[test]
fn hostile_arguments_never_panic() {
    let (_dir, ws) = workspace();
    let mut s = session(&ws);
    let values = [
        json!(null),
        json!(-1),
        json!(1.5),
        json!(u64::MAX),
        json!("\u{0}"),
        json!(""),
        json!("é"),
        json!([]),
        json!({}),
        json!(true),
        json!("../../../../etc/passwd"),
        json!("a".repeat(5000)),
    ];
    for name in TOOL_NAMES {
        for v in &values {
            let args = json!({"path": v, "old_string": v, "new_string": v, "text": v,
                "line": v, "start": v, "end": v, "offset": v, "limit": v, "pattern": v,
                "symbol": v, "content": v, "regex": v});
            let _ = s.execute(&call(name, args));
        }
    }
}
