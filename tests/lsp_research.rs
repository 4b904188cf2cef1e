//! Research from the editor, end to end: `patchwise.research` over stdio with a scripted model
//! (OpenAI SSE) and every network source unreachable, so the answer comes from the workspace
//! and the library; the report is opened with `window/showDocument`; list, search and open
//! read the record back from SQLite.

mod support;

use patchwise::model::replay::ReplayServer;
use serde_json::json;
use support::client::{TestServer, progress_message, showing_client};
use support::openai_sse;
use tower_lsp_server::ls_types::notification::ShowMessage;
use tower_lsp_server::ls_types::request::{ShowDocument, WorkDoneProgressCreate};

#[test]
fn research_runs_offline_saves_lists_searches_and_reopens() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let answer = json!({ "text": "Ropes keep edits cheap on large buffers [1]. The server clamps positions past the end of a line [2]; see also [7].\n\nClaims:\n- Ropes make edits on large buffers cheap [1]\n" });
    let model = runtime
        .block_on(ReplayServer::start(vec![openai_sse(&answer)]))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    std::fs::write(
        ws.join("docs/ropes.md"),
        "# Ropes\n\nA rope keeps edits cheap on large buffers: inserting in the middle of a 50 MB file costs a few tree nodes.\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("docs/positions.md"),
        "# Positions\n\nA position past the end of a line clamps to the line end; ropes make that cheap to compute.\n",
    )
    .unwrap();
    let dead = "http://127.0.0.1:9"; // discard port: connection refused
    let init = json!({
        "providers": { "fake": { "kind": "openai", "base_url": format!("{}/v1", model.url()), "api_key_env": "" } },
        "roles": { "coder": "fake/test-model" },
        "retry": { "max_attempts": 1 },
        "data_dir": dir.path().join("data"),
        "research": {
            "sources": {
                "openalex": { "base_url": dead },
                "arxiv": { "base_url": dead },
                "crossref": { "base_url": dead },
            }
        }
    });
    let (mut server, _) = TestServer::builder()
        .config_home(&dir.path().join("config"))
        .capabilities(showing_client())
        .root(&ws)
        .initialization_options(init)
        .start();
    server.ignore_request::<WorkDoneProgressCreate>();
    server.ignore::<ShowMessage>();

    let result = server
        .run_command(
            "patchwise.research",
            json!({ "query": "why do editors keep buffers in ropes" }),
        )
        .unwrap();
    let id = result["id"].as_str().unwrap().to_owned();
    let synthesis = result["synthesis"].as_str().unwrap();
    // [7] did not exist among the sources: removed, and said so.
    assert!(!synthesis.contains("[7]"), "{synthesis}");
    assert!(
        result["notes"].to_string().contains("[7]"),
        "the removed citation is reported: {result}"
    );
    let report = result["report"].as_str().unwrap();
    let markdown = std::fs::read_to_string(report).unwrap();
    assert!(markdown.contains("ropes"), "{markdown}");

    // Progress went through the phases and the report was shown.
    let phases: Vec<String> = server
        .received_progress()
        .iter()
        .filter_map(|p| progress_message(p).map(str::to_owned))
        .collect();
    for phase in ["sources", "synthesis", "saved"] {
        assert!(
            phases.iter().any(|p| p.starts_with(phase)),
            "no {phase} phase in {phases:?}"
        );
    }
    let shown = server.server_request::<ShowDocument>();
    assert!(shown.uri.as_str().ends_with(".md"), "{:?}", shown.uri);

    let listed = server
        .command("patchwise.research.list", json!({}))
        .unwrap();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["query"], "why do editors keep buffers in ropes");
    let found = server
        .command("patchwise.research.list", json!({ "search": "ropes" }))
        .unwrap();
    assert_eq!(found[0]["id"], id.as_str());
    let opened = server
        .command("patchwise.research.open", json!({ "id": id }))
        .unwrap();
    assert_eq!(opened["report"], report);
    // Opening a saved record shows its report again.
    let reopened = server.server_request::<ShowDocument>();
    assert_eq!(
        reopened.uri.to_file_path().as_deref(),
        Some(std::path::Path::new(report))
    );
    let err = server
        .command("patchwise.research.open", json!({ "id": "nope" }))
        .unwrap_err();
    assert!(err.message.contains("nope"), "{err:?}");
    let err = server
        .command("patchwise.research", json!({ "query": " " }))
        .unwrap_err();
    assert_eq!(err.code, -32602);
    server.shutdown();
}
