//! Data-driven tool tests, one named test per case: each `fixtures/tools/cases/NAME.json` is a
//! list of calls run in one session on a copy of `fixtures/tools/workspace` (with ignored files
//! and a file outside the workspace added); the answers are compared with `NAME.expected`
//! (`UPDATE_EXPECT=1 cargo test --test tool_fixtures` rewrites them). No call may write to
//! disk: the tools work on the working copy.

mod support;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use patchwise::model::ToolCall;
use patchwise::tools::{RealFs, Session, Snapshot, ToolOptions};
use serde_json::Value;
use support::{cases, expect, tree};

fn main() -> ExitCode {
    let root = support::fixture("tools/cases");
    let files = support::json_files(&root);
    let total = files.len();
    let mut trials = vec![cases::test("corpus_has_eight_cases", move || {
        assert!(total >= 8, "expected the tool fixture cases, found {total}");
    })];
    trials.extend(cases::per_file(&root, files, check));
    cases::main(trials)
}

fn check(case: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    support::copy_dir(&support::fixture("tools/workspace"), &ws);
    std::fs::create_dir_all(ws.join("target")).unwrap();
    std::fs::write(ws.join("target/out.txt"), "pub fn built() {}\n").unwrap();
    std::fs::write(ws.join("debug.log"), "pub fn logged() {}\n").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "secret\n").unwrap();
    let before = tree(dir.path());

    let spec: Value = serde_json::from_str(&std::fs::read_to_string(case).unwrap()).unwrap();
    let mut session = Session::new(
        std::slice::from_ref(&ws),
        Arc::new(RealFs),
        Snapshot::new(),
        ToolOptions::default(),
    );
    let mut actual = String::new();
    // One by one, so that each answer sees the effects of the calls before it.
    for c in spec["calls"].as_array().expect("a case has `calls`") {
        let name = c["name"].as_str().unwrap();
        let call = ToolCall {
            id: format!("call_{name}"),
            name: name.to_owned(),
            arguments: c["arguments"].clone(),
            arguments_error: None,
            provider_data: None,
        };
        let o = session.execute(&call);
        actual.push_str(&format!(
            "### {} {}{}\n{}\n",
            call.name,
            call.arguments,
            if o.is_error() { " [error]" } else { "" },
            o.content.trim_end()
        ));
    }
    let actual = actual.replace(&dir.path().display().to_string(), "$TMP");
    expect::expect_path(&case.with_extension("expected"), &actual);
    assert_eq!(tree(dir.path()), before, "a tool wrote to disk");
}
