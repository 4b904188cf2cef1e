//! End-to-end tests of the language server foundation through the real binary over stdio.

mod support;

use serde_json::{Value, json};
use support::{Enc, Options, Rng, Server, file_uri, position_of};

const URI: &str = "file:///tmp/patchwise-test/main.rs";

fn open(server: &mut Server, uri: &str, text: &str, version: i64) {
    server.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "rust", "version": version, "text": text } }),
    );
}

fn view(server: &mut Server, uri: &str) -> Result<Value, Value> {
    server.request("patchwise/viewFileText", json!({ "uri": uri }))
}

fn change(server: &mut Server, uri: &str, version: i64, changes: Value) {
    server.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": changes }),
    );
}

fn caps_with_encodings(encodings: &[&str]) -> Value {
    json!({ "general": { "positionEncodings": encodings } })
}

#[test]
fn lifecycle_advertises_only_what_is_implemented() {
    let (server, result) = Server::initialized(json!({}));
    let caps = &result["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-16");
    assert_eq!(
        caps["textDocumentSync"],
        json!({ "openClose": true, "change": 2 })
    );
    let mut advertised: Vec<_> = caps.as_object().unwrap().keys().cloned().collect();
    advertised.sort();
    assert_eq!(
        advertised,
        [
            "codeActionProvider",
            "codeLensProvider",
            "executeCommandProvider",
            "hoverProvider",
            "positionEncoding",
            "textDocumentSync"
        ]
    );
    let commands = caps["executeCommandProvider"]["commands"]
        .as_array()
        .unwrap();
    for command in [
        "patchwise.edit",
        "patchwise.proposal.accept",
        "patchwise.cancel",
    ] {
        assert!(
            commands.contains(&json!(command)),
            "{command} not advertised"
        );
    }
    assert_eq!(caps["codeActionProvider"]["resolveProvider"], false);
    assert_eq!(result["serverInfo"]["name"], "patchwise");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    let status = server.shutdown();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn exit_without_shutdown_is_code_1_and_closed_stdin_ends_the_server() {
    let (mut server, _) = Server::initialized(json!({}));
    server.notify("exit", Value::Null);
    assert_eq!(server.wait_exit().code(), Some(1));

    let (mut server, _) = Server::initialized(json!({}));
    server.close_stdin();
    assert_eq!(server.wait_exit().code(), Some(1));
}

#[test]
fn position_encoding_is_negotiated() {
    let cases: &[(Value, &str)] = &[
        (json!({}), "utf-16"),
        (json!({ "general": {} }), "utf-16"),
        (caps_with_encodings(&[]), "utf-16"),
        (caps_with_encodings(&["utf-16", "utf-8"]), "utf-8"),
        (caps_with_encodings(&["utf-8"]), "utf-8"),
        (caps_with_encodings(&["utf-32", "utf-16"]), "utf-16"),
        (caps_with_encodings(&["utf-32"]), "utf-32"),
        (caps_with_encodings(&["latin-1"]), "utf-16"),
    ];
    for (caps, expected) in cases {
        let (server, result) = Server::initialized(caps.clone());
        assert_eq!(
            result["capabilities"]["positionEncoding"], *expected,
            "client capabilities {caps}"
        );
        server.shutdown();
    }
}

/// Hundreds of rapid incremental changes with requests pipelined between them: every
/// `viewFileText` answer must equal the client's text at the moment the request was sent,
/// which only holds if mutations apply in order and before later requests read.
#[test]
fn rapid_changes_apply_in_order_in_every_encoding() {
    for (enc, count, seed) in [
        (Enc::Utf16, 1000, 7),
        (Enc::Utf8, 400, 11),
        (Enc::Utf32, 400, 13),
    ] {
        let (mut server, result) = Server::initialized(caps_with_encodings(&[enc.name()]));
        assert_eq!(result["capabilities"]["positionEncoding"], enc.name());
        let mut text = String::from("fn main() {\r\n    println!(\"héllo 😀\");\n}\n");
        open(&mut server, URI, &text, 0);
        let mut rng = Rng::new(seed);
        let pieces = ["a", "😀", "日本", "e\u{301}", "\n", "\r\n", " ", "{}", ""];
        let mut expected = Vec::new();
        for version in 1..=count {
            let boundaries: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .filter(|&i| {
                    !(i > 0
                        && text.as_bytes()[i - 1] == b'\r'
                        && text.as_bytes().get(i) == Some(&b'\n'))
                })
                .collect();
            let start_i = rng.below(boundaries.len());
            let end_i = (start_i + rng.below(4)).min(boundaries.len() - 1);
            let (start, end) = (boundaries[start_i], boundaries[end_i]);
            let insert = pieces[rng.below(pieces.len())];
            let range = json!({ "start": position_of(&text, start, enc), "end": position_of(&text, end, enc) });
            text.replace_range(start..end, insert);
            change(
                &mut server,
                URI,
                version,
                json!([{ "range": range, "text": insert }]),
            );
            if version % 25 == 0 {
                let id = server.request_async("patchwise/viewFileText", json!({ "uri": URI }));
                expected.push((id, text.clone()));
            }
        }
        for (id, text) in expected {
            assert_eq!(
                server.response(json!(id)),
                Ok(json!(text)),
                "{} request {id}",
                enc.name()
            );
        }
        assert_eq!(view(&mut server, URI), Ok(json!(text)));
        server.shutdown();
    }
}

#[test]
fn stale_versions_are_ignored_and_positions_clamped() {
    let (mut server, _) = Server::initialized(json!({}));
    open(&mut server, URI, "one\ntwo\n", 5);
    // Older version: ignored.
    change(&mut server, URI, 4, json!([{ "text": "stale" }]));
    assert_eq!(view(&mut server, URI), Ok(json!("one\ntwo\n")));
    // Absurd positions clamp to the line end and to the end of the file.
    change(
        &mut server,
        URI,
        6,
        json!([{ "range": { "start": { "line": 0, "character": 4000000000u32 }, "end": { "line": 0, "character": 4000000000u32 } }, "text": "!" }]),
    );
    change(
        &mut server,
        URI,
        7,
        json!([{ "range": { "start": { "line": 99999, "character": 3 }, "end": { "line": 4294967295u32, "character": 0 } }, "text": "EOF" }]),
    );
    // Surrogate-pair split, inverted range.
    change(&mut server, URI, 8, json!([{ "text": "a😀b" }]));
    change(
        &mut server,
        URI,
        9,
        json!([{ "range": { "start": { "line": 0, "character": 2 }, "end": { "line": 0, "character": 2 } }, "text": "x" }]),
    );
    assert_eq!(view(&mut server, URI), Ok(json!("ax😀b")));
    // The log reaches stderr through a pipe the harness reads in a thread: give it time.
    let logged = |s: &str| {
        s.contains("older than the document's version") && s.contains("past the line end")
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !logged(&server.stderr()) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let stderr_so_far = server.stderr();
    assert!(
        stderr_so_far.contains("older than the document's version"),
        "{stderr_so_far}"
    );
    assert!(
        stderr_so_far.contains("past the line end"),
        "{stderr_so_far}"
    );
    assert!(
        stderr_so_far.contains("inside a character"),
        "{stderr_so_far}"
    );
    server.shutdown();
}

#[test]
fn hostile_input_gets_answers_and_the_server_keeps_running() {
    let (mut server, _) = Server::initialized_with(
        Options {
            env: vec![("PATCHWISE_DEBUG_METHODS", "1".into())],
            ..Options::default()
        },
        json!({}),
        Value::Null,
    );
    open(&mut server, URI, "fn main() {}\n", 1);

    // A frame whose body is not JSON.
    server.send_raw(b"Content-Length: 12\r\n\r\n{not json!!}");
    let error = server.wait_for(|m| m["id"].is_null() && m.get("error").is_some());
    assert_eq!(error["error"]["code"], -32700, "{error}");
    // Invalid UTF-8 in the body.
    server.send_raw(b"Content-Length: 4\r\n\r\n\xff\xfe\xfd\xfc");
    server.wait_for(|m| m["id"].is_null() && m.get("error").is_some());
    // JSON that is not JSON-RPC.
    server.send_raw(b"Content-Length: 9\r\n\r\n{\"a\": 1}\n");
    server.wait_for(|m| m["id"].is_null() && m.get("error").is_some());

    // Unknown request: -32601. Unknown notification: ignored.
    let err = server
        .request("patchwise/noSuchMethod", json!({}))
        .unwrap_err();
    assert_eq!(err["code"], -32601);
    server.notify("patchwise/noSuchNotification", json!({ "x": 1 }));
    // Wrong params shape: an invalid-params error, not a crash.
    let err = server
        .request("patchwise/viewFileText", json!({ "url": 3 }))
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
    // Unknown document.
    let err = view(&mut server, "untitled:Untitled-1").unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("not open"),
        "{err}"
    );
    change(
        &mut server,
        "file:///nowhere/x.rs",
        2,
        json!([{ "text": "x" }]),
    );
    server.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": "file:///nowhere/y.rs" } }),
    );
    // A didChange with params of the wrong shape.
    server.notify("textDocument/didChange", json!({ "textDocument": 5 }));

    // A panicking handler answers with an internal error and the server lives on.
    let err = server
        .request("patchwise/debug/panic", json!({}))
        .unwrap_err();
    assert_eq!(err["code"], -32603);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("deliberate panic"),
        "{err}"
    );
    assert_eq!(view(&mut server, URI), Ok(json!("fn main() {}\n")));

    // A 50 MB document.
    let line = "let x = \"ö😀\"; // 50 MB of this\n";
    let big = line.repeat(50 * 1024 * 1024 / line.len());
    open(&mut server, "file:///tmp/patchwise-test/big.rs", &big, 1);
    let last_line = big.lines().count();
    change(
        &mut server,
        "file:///tmp/patchwise-test/big.rs",
        2,
        json!([{ "range": { "start": { "line": last_line, "character": 0 }, "end": { "line": last_line, "character": 0 } }, "text": "END" }]),
    );
    let text = view(&mut server, "file:///tmp/patchwise-test/big.rs").unwrap();
    let text = text.as_str().unwrap();
    assert_eq!(text.len(), big.len() + 3);
    assert!(text.ends_with("// 50 MB of this\nEND"));

    assert_eq!(view(&mut server, URI), Ok(json!("fn main() {}\n")));
    assert_eq!(server.shutdown().code(), Some(0));
}

#[test]
fn files_that_are_not_open_are_read_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("lib.rs");
    std::fs::write(&good, "pub fn answer() -> u32 {\r\n    42\r\n}\r\n").unwrap();
    let bad = dir.path().join("latin1.txt");
    std::fs::write(&bad, b"caf\xe9\n").unwrap();
    let (mut server, _) = Server::initialized(json!({}));

    assert_eq!(
        view(&mut server, &file_uri(&good)),
        Ok(json!("pub fn answer() -> u32 {\r\n    42\r\n}\r\n"))
    );
    let err = view(&mut server, &file_uri(&bad)).unwrap_err();
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("not valid UTF-8") && message.contains("offset 3"),
        "{message}"
    );
    let err = view(&mut server, &file_uri(&dir.path().join("missing.rs"))).unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("no such file"),
        "{err}"
    );
    let err = view(&mut server, &file_uri(dir.path())).unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("directory"),
        "{err}"
    );

    // Once open, the buffer wins over the disk; once closed, the disk again.
    open(&mut server, &file_uri(&good), "unsaved buffer", 1);
    assert_eq!(
        view(&mut server, &file_uri(&good)),
        Ok(json!("unsaved buffer"))
    );
    server.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": file_uri(&good) } }),
    );
    assert_eq!(
        view(&mut server, &file_uri(&good)),
        Ok(json!("pub fn answer() -> u32 {\r\n    42\r\n}\r\n"))
    );
    server.shutdown();
}

#[test]
fn logs_go_to_the_log_file_and_never_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("patchwise.log");
    let log_arg = log.to_str().unwrap().to_owned();
    let (mut server, _) = Server::initialized_with(
        Options {
            args: vec!["serve", "-vv", "--log-file", &log_arg],
            env: vec![("RUST_LOG", String::new())],
            ..Options::default()
        },
        json!({}),
        Value::Null,
    );
    open(&mut server, URI, "x", 1);
    change(&mut server, URI, 0, json!([{ "text": "stale" }]));
    assert_eq!(view(&mut server, URI), Ok(json!("x")));
    server.shutdown();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("initialize"), "{logged}");
    assert!(
        logged.contains("older than the document's version"),
        "{logged}"
    );
}

#[test]
fn cli_prints_version_and_help() {
    let bin = env!("CARGO_BIN_EXE_patchwise");
    let out = std::process::Command::new(bin)
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("patchwise {}", env!("CARGO_PKG_VERSION"))
    );
    let out = std::process::Command::new(bin)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("serve") && help.contains("--log-file"),
        "{help}"
    );
    let out = std::process::Command::new(bin)
        .arg("--no-such-flag")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn configuration_problems_are_shown_and_the_server_still_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".patchwise")).unwrap();
    std::fs::write(
        dir.path().join(".patchwise/config.toml"),
        "[providers.local]\nkind = \"carrier-pigeon\"\n",
    )
    .unwrap();
    let (mut server, _) = Server::initialized_with(
        Options {
            env: vec![(
                "XDG_CONFIG_HOME",
                dir.path().join("user-config").display().to_string(),
            )],
            ..Options::default()
        },
        json!({}),
        json!(file_uri(dir.path())),
    );
    let shown = server.wait_for(|m| m["method"] == "window/showMessage");
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("config.toml") && message.contains("kind"),
        "{message}"
    );
    assert_eq!(shown["params"]["type"], 2);
    // Settings pushed by the client are checked the same way.
    server.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "patchwise": { "roles": { "coder": 42 } } } }),
    );
    let shown = server.wait_for(|m| m["method"] == "window/showMessage");
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(message.contains("roles.coder"), "{message}");
    // And the server keeps working.
    open(&mut server, URI, "ok", 1);
    assert_eq!(view(&mut server, URI), Ok(json!("ok")));
    server.shutdown();
}
