//! Inline completion end to end: the real binary over stdio answering
//! `textDocument/inlineCompletion` from a local server on 127.0.0.1 that speaks the
//! `/v1/completions` SSE stream of llama.cpp's server (`tests/support/fim.rs`: `SLOW` in a
//! prompt gets a stream that never ends, `LINES` one of whole lines, `BLANK` one that begins
//! with a line end and a pause). Shaping end to end: a suggestion that closes the function the
//! cursor is in again is cut before its `}`.

mod support;

use serde_json::{Value, json};
use support::client::{TestServer, path_uri, ranged, whole};
use support::fim::start_model;
use tower_lsp_server::ls_types::request::InlineCompletionRequest;
use tower_lsp_server::ls_types::{
    InlineCompletionContext, InlineCompletionParams, InlineCompletionResponse,
    InlineCompletionTriggerKind, Position, TextDocumentIdentifier, TextDocumentPositionParams, Uri,
    WorkDoneProgressParams,
};

fn start(url: &str) -> (TestServer, tempfile::TempDir) {
    start_with(url, json!({ "debounce_ms": 0 }))
}

fn start_with(url: &str, completion: Value) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let init = json!({
        "providers": { "fake": { "kind": "openai", "base_url": url, "api_key_env": "" } },
        "roles": { "completion": "fake/qwen2.5-coder-1.5b" },
        "completion": completion,
        "data_dir": dir.path().join("data"),
    });
    let (server, _) = TestServer::builder()
        .config_home(&dir.path().join("config"))
        .root(dir.path())
        .initialization_options(init)
        .start();
    (server, dir)
}

fn params(
    uri: &Uri,
    line: u32,
    character: u32,
    kind: InlineCompletionTriggerKind,
) -> InlineCompletionParams {
    InlineCompletionParams {
        work_done_progress_params: WorkDoneProgressParams::default(),
        text_document_position: TextDocumentPositionParams {
            text_document: TextDocumentIdentifier { uri: uri.clone() },
            position: Position { line, character },
        },
        context: InlineCompletionContext {
            trigger_kind: kind,
            selected_completion_info: None,
        },
    }
}

/// The prompts the scripted model was sent, in order.
fn prompts_of(seen: &std::sync::Mutex<support::fim::Seen>) -> Vec<String> {
    let seen = seen.lock().unwrap();
    seen.bodies
        .iter()
        .map(|b| b["prompt"].as_str().unwrap().to_owned())
        .collect()
}

fn texts(response: Option<InlineCompletionResponse>) -> Vec<String> {
    match response {
        Some(InlineCompletionResponse::Array(items)) => items,
        Some(InlineCompletionResponse::List(list)) => list.items,
        None => Vec::new(),
    }
    .into_iter()
    .map(|item| item.insert_text)
    .collect()
}

#[test]
fn a_suggestion_comes_from_a_fill_in_the_middle_prompt_and_narrows_as_the_user_types() {
    let (url, seen) = start_model("return a + b\n\nprint(add(1, 2))\n");
    let (mut server, dir) = start(&url);
    assert_eq!(
        server.initialize_json()["capabilities"]["inlineCompletionProvider"],
        true
    );
    let uri = path_uri(&dir.path().join("app.py"));
    server.open(
        &uri,
        "python",
        "def add(a, b):\n    \n\nprint(add(1, 2))\n",
        1,
    );

    let automatic = InlineCompletionTriggerKind::AUTOMATIC;
    let answer = server.request::<InlineCompletionRequest>(params(&uri, 1, 4, automatic));
    // The block ends before the line after the cursor, which is not written again.
    assert_eq!(texts(answer), ["return a + b"]);
    let bodies = seen.lock().unwrap().bodies.clone();
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        bodies[0]["prompt"],
        "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n\nprint(add(1, 2))\n<|fim_middle|>"
    );
    assert_eq!(bodies[0]["stream"], true);

    // Typing the suggestion's start narrows it; the model is not asked again.
    server.change(&uri, 2, vec![ranged((1, 4), (1, 4), "ret")]);
    let answer = server.request::<InlineCompletionRequest>(params(&uri, 1, 7, automatic));
    assert_eq!(texts(answer), ["urn a + b"]);
    assert_eq!(seen.lock().unwrap().bodies.len(), 1);

    // Inside a comment nothing is suggested while typing, and the model is not asked.
    server.change(&uri, 3, vec![ranged((1, 7), (1, 7), "  # the sum")]);
    let answer = server.request::<InlineCompletionRequest>(params(&uri, 1, 18, automatic));
    assert_eq!(texts(answer), Vec::<String>::new());
    assert_eq!(seen.lock().unwrap().bodies.len(), 1);

    // A docstring is prose too; a query in a string begun on an earlier line is code.
    let doc = path_uri(&dir.path().join("query.py"));
    let text =
        "def f():\n    \"\"\"Sum of\n    tw\n    \"\"\"\n\nQ = \"\"\"\nSELECT id\nFR\n\"\"\"\n";
    server.open(&doc, "python", text, 1);
    let answer = server.request::<InlineCompletionRequest>(params(&doc, 2, 6, automatic));
    assert_eq!(texts(answer), Vec::<String>::new());
    assert_eq!(seen.lock().unwrap().bodies.len(), 1);
    server.request::<InlineCompletionRequest>(params(&doc, 7, 2, automatic));
    assert_eq!(seen.lock().unwrap().bodies.len(), 2);
}

#[test]
fn a_newer_request_or_a_cancel_stops_the_model_request_in_flight() {
    let (url, seen) = start_model("fast answer");
    let (mut server, dir) = start(&url);
    let uri = path_uri(&dir.path().join("slow.py"));
    server.open(&uri, "python", "SLOW = 1\nx = \n", 1);
    let automatic = InlineCompletionTriggerKind::AUTOMATIC;

    let first = server.send_request::<InlineCompletionRequest>(params(&uri, 1, 4, automatic));
    server.wait_until("the slow stream to start", || {
        seen.lock().unwrap().bodies.len() == 1
    });
    // The next keystroke's request supersedes it: its stream is closed, it answers nothing.
    server.change(&uri, 2, vec![ranged((1, 4), (1, 4), "y")]);
    server.change(&uri, 3, vec![ranged((0, 0), (0, 4), "FAST")]);
    let second = server.request::<InlineCompletionRequest>(params(&uri, 1, 5, automatic));
    assert_eq!(texts(second), ["fast answer"]);
    let first = server.response::<InlineCompletionRequest>(first).unwrap();
    assert_eq!(texts(first), Vec::<String>::new());
    server.wait_until("the superseded stream to be dropped", || {
        seen.lock().unwrap().dropped == 1
    });

    // `$/cancelRequest` drops it the same way.
    server.change(&uri, 4, vec![ranged((0, 0), (0, 4), "SLOW")]);
    let third = server.send_request::<InlineCompletionRequest>(params(&uri, 1, 5, automatic));
    server.wait_until("the second slow stream to start", || {
        seen.lock().unwrap().bodies.len() == 3
    });
    server
        .raw()
        .notify("$/cancelRequest", json!({ "id": third }));
    server.wait_until("the cancelled stream to be dropped", || {
        seen.lock().unwrap().dropped == 2
    });
    let error = server
        .response::<InlineCompletionRequest>(third)
        .unwrap_err();
    assert_eq!(error.code, -32800, "{}", error.message);
}

#[test]
fn a_suggestion_that_writes_on_ends_at_its_last_whole_line_after_the_time_budget() {
    let (url, seen) = start_model("unused");
    // 1.5 s (the default): the stream's first lines come well within it on a loaded machine
    // too, where a budget of 300 ms from the keystroke could be spent before the second line.
    let (mut server, dir) = start_with(&url, json!({ "debounce_ms": 0, "predict_ms": 1500 }));
    let uri = path_uri(&dir.path().join("lines.py"));
    server.open(&uri, "python", "LINES = 1\ndef f():\n    \n", 1);

    // The stream writes lines for a minute; the budget ends the suggestion after 1.5 s at a
    // line end, and the stream is closed.
    let automatic = InlineCompletionTriggerKind::AUTOMATIC;
    let answer = texts(server.request::<InlineCompletionRequest>(params(&uri, 2, 4, automatic)));
    assert_eq!(answer.len(), 1, "{answer:?}");
    let lines: Vec<&str> = answer[0].lines().map(str::trim).collect();
    assert!(lines.len() >= 2, "{answer:?}");
    assert!(lines.iter().all(|line| *line == "v = 1"), "{answer:?}");
    server.wait_until("the stream to be dropped", || {
        seen.lock().unwrap().dropped == 1
    });

    // A suggestion that begins with a line end is not cut to that line end when the budget
    // (300 ms here) runs out before its first written line is whole.
    let (mut server, dir) = start_with(&url, json!({ "debounce_ms": 0, "predict_ms": 300 }));
    let uri = path_uri(&dir.path().join("blank.py"));
    server.open(&uri, "python", "LINES = BLANK = 1\ndef g():\n", 1);
    let answer = texts(server.request::<InlineCompletionRequest>(params(&uri, 1, 8, automatic)));
    assert_eq!(answer.len(), 1, "{answer:?}");
    let lines: Vec<&str> = answer[0]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert!(!lines.is_empty(), "{answer:?}");
    assert!(lines.iter().all(|line| *line == "v = 1"), "{answer:?}");
}

#[test]
fn the_time_budget_counts_from_the_keystroke_so_a_slow_reading_leaves_one_line() {
    // The model takes half a second to begin (it reads the prompt), then writes lines on; the
    // budget, 300 ms from the keystroke, has run out by its first line: that line is shown,
    // whole, and the stream is closed.
    let (url, seen) = start_model("unused");
    let (mut server, dir) = start_with(&url, json!({ "debounce_ms": 0, "predict_ms": 300 }));
    let uri = path_uri(&dir.path().join("read.py"));
    server.open(&uri, "python", "LINES = READ = 1\ndef h():\n    \n", 1);
    let automatic = InlineCompletionTriggerKind::AUTOMATIC;
    let answer = texts(server.request::<InlineCompletionRequest>(params(&uri, 2, 4, automatic)));
    assert_eq!(answer, ["v = 1"], "{answer:?}");
    server.wait_until("the stream to be dropped", || {
        seen.lock().unwrap().dropped == 1
    });
}

#[test]
fn a_place_edited_elsewhere_is_shown_before_the_file_and_stays_put_while_typing() {
    let (url, seen) = start_model("x");
    let (mut server, dir) = start_with(&url, json!({ "debounce_ms": 0, "context_tokens": 100 }));
    let text: String = (0..400).map(|i| format!("v{i} = {i}\n")).collect();
    let uri = path_uri(&dir.path().join("app.py"));
    server.open(&uri, "python", &text, 1);
    let other = path_uri(&dir.path().join("util.py"));
    server.open(&other, "python", "def helper():\n    return 1\n", 1);
    // The user changes line 10, then goes on at line 390.
    server.change(&uri, 2, vec![ranged((10, 0), (10, 8), "limit = 99")]);
    server.change(&uri, 3, vec![ranged((390, 0), (390, 0), "z")]);
    let automatic = InlineCompletionTriggerKind::AUTOMATIC;
    server.request::<InlineCompletionRequest>(params(&uri, 390, 1, automatic));
    server.change(&uri, 4, vec![ranged((390, 1), (390, 1), "y")]);
    server.request::<InlineCompletionRequest>(params(&uri, 390, 2, automatic));

    let prompts = prompts_of(&seen);
    assert_eq!(prompts.len(), 2, "{prompts:#?}");
    let (others, file) = prompts[0].split_once("<|fim_prefix|>").unwrap();
    // The open file's start, then the lines around the edit far above (not the place typed in,
    // which the prompt shows anyway), then the file itself.
    let helper = others
        .find("<|file_sep|>util.py\ndef helper():")
        .expect(others);
    let edited = others.find("<|file_sep|>app.py\n").expect(others);
    assert!(helper < edited, "{others}");
    assert!(others[edited..].contains("limit = 99\n"), "{others}");
    assert!(!others.contains("zv390"), "{others}");
    assert!(others.ends_with("<|file_sep|>app.py\n"), "{others}");
    assert!(
        !file.contains("limit = 99"),
        "the edit is far above the prompt's text"
    );
    // A keystroke later the text before the file's is the same: the provider's cache holds.
    let (later, _) = prompts[1].split_once("<|fim_prefix|>").unwrap();
    assert_eq!(later, others);
}

#[test]
fn a_whole_text_change_shows_a_place_edited_before_as_the_text_now_has_it() {
    let (url, seen) = start_model("x");
    let (mut server, dir) = start_with(&url, json!({ "debounce_ms": 0, "context_tokens": 100 }));
    let mut lines: Vec<String> = (0..400).map(|i| format!("v{i} = {i}\n")).collect();
    let uri = path_uri(&dir.path().join("app.py"));
    server.open(&uri, "python", &lines.concat(), 1);
    // The user begins a line at line 10 (a keystroke the client sends as a range); the client
    // then sends the finished text whole, as some do; the user goes on at line 390.
    server.change(&uri, 2, vec![ranged((10, 0), (10, 0), "lim")]);
    lines[10] = "limit = 99\n".into();
    server.change(&uri, 3, vec![whole(&lines.concat())]);
    server.change(&uri, 4, vec![ranged((390, 0), (390, 0), "z")]);
    let automatic = InlineCompletionTriggerKind::AUTOMATIC;
    server.request::<InlineCompletionRequest>(params(&uri, 390, 1, automatic));

    let prompts = prompts_of(&seen);
    assert_eq!(prompts.len(), 1, "{prompts:#?}");
    let (others, _) = prompts[0].split_once("<|fim_prefix|>").unwrap();
    // The place edited is shown as the text has it now, not as it was at its last keystroke.
    assert!(
        others.contains("v9 = 9\nlimit = 99\nv11 = 11\n"),
        "{others}"
    );
    assert!(!others.contains("limv10"), "{others}");
}

#[test]
fn the_lines_after_the_short_suffix_come_before_the_file_and_stay_put_while_typing() {
    let (url, seen) = start_model("x");
    let completion = json!({ "debounce_ms": 0, "suffix_tokens": 8, "later_tokens": 20 });
    let (mut server, dir) = start_with(&url, completion);
    let text: String = (0..40).map(|i| format!("v{i:02} = {i}\n")).collect();
    let uri = path_uri(&dir.path().join("app.py"));
    server.open(&uri, "python", &text, 1);
    let automatic = InlineCompletionTriggerKind::AUTOMATIC;
    server.change(&uri, 2, vec![ranged((10, 0), (10, 0), "z")]);
    server.request::<InlineCompletionRequest>(params(&uri, 10, 1, automatic));
    server.change(&uri, 3, vec![ranged((10, 1), (10, 1), "y")]);
    server.request::<InlineCompletionRequest>(params(&uri, 10, 2, automatic));

    let prompts = prompts_of(&seen);
    assert_eq!(prompts.len(), 2, "{prompts:#?}");
    // The suffix: the rest of the cursor's line and the next whole line within 24 bytes; the
    // 60 bytes after it, whole lines, as a chunk of the same file before the file's own text.
    let later = "<|file_sep|>app.py\nv12 = 12\nv13 = 13\nv14 = 14\nv15 = 15\nv16 = 16\nv17 = 17\n";
    assert!(
        prompts[0].starts_with(&format!(
            "{later}<|file_sep|>app.py\n<|fim_prefix|>v00 = 0\n"
        )),
        "{}",
        prompts[0]
    );
    let suffix = "<|fim_suffix|>v10 = 10\nv11 = 11\n<|fim_middle|>";
    assert!(
        prompts[0].ends_with(&format!("v09 = 9\nz{suffix}")),
        "{}",
        prompts[0]
    );
    // A keystroke later everything up to the cursor is the same: the provider's cache holds.
    let (first, _) = prompts[0].split_once("<|fim_suffix|>").unwrap();
    assert_eq!(prompts[1], format!("{first}y{suffix}"));
}

#[test]
fn a_suggestion_that_closes_the_function_again_ends_before_the_closing_brace() {
    // The model writes the body, the `}` the file already has, and a function of its own.
    let (url, _seen) =
        start_model("\n  return a + b;\n}\n\nfunction mul(a, b) {\n  return a * b;\n}\n");
    let (mut server, dir) = start(&url);
    let uri = path_uri(&dir.path().join("math.ts"));
    server.open(
        &uri,
        "typescript",
        "function add(a, b) {\n}\n\nfunction sub(a, b) {\n  return a - b;\n}\n",
        1,
    );
    let automatic = InlineCompletionTriggerKind::AUTOMATIC;
    let answer = server.request::<InlineCompletionRequest>(params(&uri, 0, 20, automatic));
    assert_eq!(texts(answer), ["\n  return a + b;"]);
}
