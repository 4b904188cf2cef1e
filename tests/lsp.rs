//! End-to-end tests of the language server foundation through the real binary over stdio.

mod support;

use serde_json::{Value, json};
use support::client::{TestServer, ViewFileText, ViewFileTextParams, path_uri, ranged, uri, whole};
use support::{Enc, Options, Rng, position_of};
use tower_lsp_server::ls_types::notification::{DidChangeConfiguration, Exit, ShowMessage};
use tower_lsp_server::ls_types::{
    ClientCapabilities, DidChangeConfigurationParams, GeneralClientCapabilities, MessageType,
    Position, PositionEncodingKind, Range, TextDocumentContentChangeEvent, Uri,
};

const URI: &str = "file:///tmp/patchwise-test/main.rs";

fn open(server: &mut TestServer, uri: &Uri, text: &str, version: i32) {
    server.open(uri, "rust", text, version);
}

fn caps_with_encodings(encodings: &[&str]) -> ClientCapabilities {
    ClientCapabilities {
        general: Some(GeneralClientCapabilities {
            position_encodings: Some(
                encodings
                    .iter()
                    .map(|e| PositionEncodingKind::from(e.to_string()))
                    .collect(),
            ),
            ..GeneralClientCapabilities::default()
        }),
        ..ClientCapabilities::default()
    }
}

fn encoding_of(server: &TestServer) -> Value {
    server.initialize_json()["capabilities"]["positionEncoding"].clone()
}

#[test]
fn lifecycle_advertises_only_what_is_implemented() {
    let (server, result) = TestServer::start();
    let caps = &server.initialize_json()["capabilities"];
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
            "inlineCompletionProvider",
            "positionEncoding",
            "textDocumentSync"
        ]
    );
    let commands = &result
        .capabilities
        .execute_command_provider
        .expect("commands are advertised")
        .commands;
    for command in [
        "patchwise.edit",
        "patchwise.proposal.accept",
        "patchwise.cancel",
    ] {
        assert!(
            commands.iter().any(|c| c == command),
            "{command} not advertised"
        );
    }
    // "Accept" actions fill in their edit in codeAction/resolve.
    assert_eq!(caps["codeActionProvider"]["resolveProvider"], true);
    let info = result.server_info.expect("serverInfo");
    assert_eq!(info.name, "patchwise");
    assert_eq!(info.version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    let status = server.shutdown();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn exit_without_shutdown_is_code_1_and_closed_stdin_ends_the_server() {
    let (mut server, _) = TestServer::start();
    server.notify::<Exit>(());
    assert_eq!(server.wait_exit().code(), Some(1));

    let (mut server, _) = TestServer::start();
    server.raw().close_stdin();
    assert_eq!(server.wait_exit().code(), Some(1));
}

#[test]
fn position_encoding_is_negotiated() {
    let general = ClientCapabilities {
        general: Some(GeneralClientCapabilities::default()),
        ..ClientCapabilities::default()
    };
    let cases = [
        (ClientCapabilities::default(), "utf-16"),
        (general, "utf-16"),
        (caps_with_encodings(&[]), "utf-16"),
        (caps_with_encodings(&["utf-16", "utf-8"]), "utf-8"),
        (caps_with_encodings(&["utf-8"]), "utf-8"),
        (caps_with_encodings(&["utf-32", "utf-16"]), "utf-16"),
        (caps_with_encodings(&["utf-32"]), "utf-32"),
        (caps_with_encodings(&["latin-1"]), "utf-16"),
    ];
    for (caps, expected) in cases {
        let shown = serde_json::to_string(&caps).unwrap();
        let (server, result) = TestServer::builder().capabilities(caps).start();
        assert_eq!(
            result
                .capabilities
                .position_encoding
                .as_ref()
                .map(|e| e.as_str()),
            Some(expected),
            "client capabilities {shown}"
        );
        server.shutdown();
    }
}

/// Hundreds of rapid incremental changes with requests pipelined between them: every
/// `viewFileText` answer must equal the client's text at the moment the request was sent,
/// which only holds if mutations apply in order and before later requests read.
#[test]
fn rapid_changes_apply_in_order_in_every_encoding() {
    let file = uri(URI);
    for (enc, count, seed) in [
        (Enc::Utf16, 1000, 7),
        (Enc::Utf8, 400, 11),
        (Enc::Utf32, 400, 13),
    ] {
        let (mut server, _) = TestServer::builder()
            .capabilities(caps_with_encodings(&[enc.name()]))
            .start();
        assert_eq!(encoding_of(&server), enc.name());
        let mut text = String::from("fn main() {\r\n    println!(\"héllo 😀\");\n}\n");
        open(&mut server, &file, &text, 0);
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
            let position = |offset| -> Position {
                serde_json::from_value(position_of(&text, offset, enc)).unwrap()
            };
            let change = TextDocumentContentChangeEvent {
                range: Some(Range::new(position(start), position(end))),
                range_length: None,
                text: insert.to_owned(),
            };
            text.replace_range(start..end, insert);
            server.change(&file, version, vec![change]);
            if version % 25 == 0 {
                let id =
                    server.send_request::<ViewFileText>(ViewFileTextParams { uri: file.clone() });
                expected.push((id, text.clone()));
            }
        }
        for (id, text) in expected {
            assert_eq!(
                server.response::<ViewFileText>(id),
                Ok(text),
                "{} request {id}",
                enc.name()
            );
        }
        assert_eq!(server.view(&file), Ok(text));
        server.shutdown();
    }
}

#[test]
fn stale_versions_are_ignored_and_positions_clamped() {
    let file = uri(URI);
    let (mut server, _) = TestServer::start();
    open(&mut server, &file, "one\ntwo\n", 5);
    // Older version: ignored.
    server.change(&file, 4, vec![whole("stale")]);
    assert_eq!(server.view(&file).unwrap(), "one\ntwo\n");
    // Absurd positions clamp to the line end and to the end of the file.
    server.change(
        &file,
        6,
        vec![ranged((0, 4_000_000_000), (0, 4_000_000_000), "!")],
    );
    server.change(&file, 7, vec![ranged((99_999, 3), (u32::MAX, 0), "EOF")]);
    // Surrogate-pair split, inverted range.
    server.change(&file, 8, vec![whole("a😀b")]);
    server.change(&file, 9, vec![ranged((0, 2), (0, 2), "x")]);
    assert_eq!(server.view(&file).unwrap(), "ax😀b");
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
    let file = uri(URI);
    let (mut server, _) = TestServer::builder()
        .options(Options {
            env: vec![("PATCHWISE_DEBUG_METHODS", "1".into())],
            ..Options::default()
        })
        .start();
    open(&mut server, &file, "fn main() {}\n", 1);

    // What no typed client can send goes through the raw one.
    let raw = server.raw();
    // A frame whose body is not JSON.
    raw.send_raw(b"Content-Length: 12\r\n\r\n{not json!!}");
    let error = raw.wait_for(|m| m["id"].is_null() && m.get("error").is_some());
    assert_eq!(error["error"]["code"], -32700, "{error}");
    // Invalid UTF-8 in the body.
    raw.send_raw(b"Content-Length: 4\r\n\r\n\xff\xfe\xfd\xfc");
    raw.wait_for(|m| m["id"].is_null() && m.get("error").is_some());
    // JSON that is not JSON-RPC.
    raw.send_raw(b"Content-Length: 9\r\n\r\n{\"a\": 1}\n");
    raw.wait_for(|m| m["id"].is_null() && m.get("error").is_some());

    // Unknown request: -32601. Unknown notification: ignored.
    let err = raw
        .request("patchwise/noSuchMethod", json!({}))
        .unwrap_err();
    assert_eq!(err["code"], -32601);
    raw.notify("patchwise/noSuchNotification", json!({ "x": 1 }));
    // Wrong params shape: an invalid-params error, not a crash.
    let err = raw
        .request("patchwise/viewFileText", json!({ "url": 3 }))
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
    // A didChange with params of the wrong shape.
    raw.notify("textDocument/didChange", json!({ "textDocument": 5 }));
    // A panicking handler answers with an internal error and the server lives on.
    let err = raw.request("patchwise/debug/panic", json!({})).unwrap_err();
    assert_eq!(err["code"], -32603);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("deliberate panic"),
        "{err}"
    );

    // Unknown documents.
    let err = server.view(&uri("untitled:Untitled-1")).unwrap_err();
    assert!(err.message.contains("not open"), "{err:?}");
    server.change(&uri("file:///nowhere/x.rs"), 2, vec![whole("x")]);
    server.close(&uri("file:///nowhere/y.rs"));
    assert_eq!(server.view(&file).unwrap(), "fn main() {}\n");

    // A 50 MB document.
    let big_file = uri("file:///tmp/patchwise-test/big.rs");
    let line = "let x = \"ö😀\"; // 50 MB of this\n";
    let big = line.repeat(50 * 1024 * 1024 / line.len());
    open(&mut server, &big_file, &big, 1);
    let last_line = u32::try_from(big.lines().count()).unwrap();
    server.change(
        &big_file,
        2,
        vec![ranged((last_line, 0), (last_line, 0), "END")],
    );
    let text = server.view(&big_file).unwrap();
    assert_eq!(text.len(), big.len() + 3);
    assert!(text.ends_with("// 50 MB of this\nEND"));

    assert_eq!(server.view(&file).unwrap(), "fn main() {}\n");
    assert_eq!(server.shutdown().code(), Some(0));
}

#[test]
fn files_that_are_not_open_are_read_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("lib.rs");
    std::fs::write(&good, "pub fn answer() -> u32 {\r\n    42\r\n}\r\n").unwrap();
    let bad = dir.path().join("latin1.txt");
    std::fs::write(&bad, b"caf\xe9\n").unwrap();
    let (mut server, _) = TestServer::start();
    let good = path_uri(&good);

    assert_eq!(
        server.view(&good).unwrap(),
        "pub fn answer() -> u32 {\r\n    42\r\n}\r\n"
    );
    let err = server.view(&path_uri(&bad)).unwrap_err();
    assert!(
        err.message.contains("not valid UTF-8") && err.message.contains("offset 3"),
        "{err:?}"
    );
    let err = server
        .view(&path_uri(&dir.path().join("missing.rs")))
        .unwrap_err();
    assert!(err.message.contains("no such file"), "{err:?}");
    let err = server.view(&path_uri(dir.path())).unwrap_err();
    assert!(err.message.contains("directory"), "{err:?}");

    // Once open, the buffer wins over the disk; once closed, the disk again.
    open(&mut server, &good, "unsaved buffer", 1);
    assert_eq!(server.view(&good).unwrap(), "unsaved buffer");
    server.close(&good);
    assert_eq!(
        server.view(&good).unwrap(),
        "pub fn answer() -> u32 {\r\n    42\r\n}\r\n"
    );
    server.shutdown();
}

#[test]
fn logs_go_to_the_log_file_and_never_to_stdout() {
    let file = uri(URI);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("patchwise.log");
    let log_arg = log.to_str().unwrap().to_owned();
    let (mut server, _) = TestServer::builder()
        .options(Options {
            args: vec!["serve", "-vv", "--log-file", &log_arg],
            env: vec![("RUST_LOG", String::new())],
            ..Options::default()
        })
        .start();
    open(&mut server, &file, "x", 1);
    server.change(&file, 0, vec![whole("stale")]);
    assert_eq!(server.view(&file).unwrap(), "x");
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
    let (mut server, _) = TestServer::builder()
        .config_home(&dir.path().join("user-config"))
        .root(dir.path())
        .start();
    let shown = server.notification::<ShowMessage>();
    assert!(
        shown.message.contains("config.toml") && shown.message.contains("kind"),
        "{}",
        shown.message
    );
    assert_eq!(shown.typ, MessageType::WARNING);
    // Settings pushed by the client are checked the same way.
    server.notify::<DidChangeConfiguration>(DidChangeConfigurationParams {
        settings: json!({ "patchwise": { "roles": { "coder": 42 } } }),
    });
    let shown = server.notification::<ShowMessage>();
    assert!(shown.message.contains("roles.coder"), "{}", shown.message);
    // And the server keeps working.
    let file = uri(URI);
    open(&mut server, &file, "ok", 1);
    assert_eq!(server.view(&file).unwrap(), "ok");
    server.shutdown();
}
