use serde_json::json;

use super::*;

const KNOWN: &[&str] = &["read_file", "edit_file"];

fn calls(text: &str) -> Vec<(String, Value)> {
    parse_tool_text(text, KNOWN)
        .calls
        .into_iter()
        .map(|c| (c.name, c.arguments))
        .collect()
}

#[test]
fn documented_tool_fence() {
    let text = "I'll look first.\n\n```tool\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n```\n";
    let parsed = parse_tool_text(text, KNOWN);
    assert_eq!(parsed.calls.len(), 1);
    assert_eq!(parsed.calls[0].name, "read_file");
    assert_eq!(parsed.calls[0].arguments, json!({"path": "src/main.rs"}));
    assert_eq!(parsed.prose, "I'll look first.");
    assert!(parsed.incomplete.is_none());
}

#[test]
fn json_in_content_as_llama_cpp_sends_it() {
    // Seen from llama.cpp's server with Qwen2.5-Coder and tool_choice "auto".
    let text = "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n```";
    assert_eq!(
        calls(text),
        vec![("read_file".into(), json!({"path": "src/lib.rs"}))]
    );
    // One line, fence and all.
    let text = "```json {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}} ```";
    assert_eq!(
        calls(text),
        vec![("read_file".into(), json!({"path": "a"}))]
    );
}

#[test]
fn tilde_fences_tags_and_prose() {
    let text = "Sure! Here is the call:\n~~~json\n{'name': 'edit_file', 'arguments': {'path': 'a.rs', 'old': \"it's\", 'new': 'x',},}\n~~~\nDone.";
    let parsed = parse_tool_text(text, KNOWN);
    assert_eq!(parsed.calls.len(), 1, "{parsed:?}");
    assert_eq!(
        parsed.calls[0].arguments,
        json!({"path": "a.rs", "old": "it's", "new": "x"})
    );
    assert_eq!(parsed.prose, "Sure! Here is the call:\nDone.");
    // Longer fences and no tag.
    let text = "````\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n````";
    assert_eq!(calls(text).len(), 1);
}

#[test]
fn trailing_commas_comments_and_python_literals() {
    let text = "```json\n{\n  \"name\": \"read_file\", // the tool\n  \"arguments\": {\"path\": \"c\", \"all\": True, \"limit\": None,},\n}\n```";
    assert_eq!(
        calls(text),
        vec![(
            "read_file".into(),
            json!({"path": "c", "all": true, "limit": null})
        )]
    );
}

#[test]
fn alternative_shapes() {
    // `parameters`, arguments as a JSON string, OpenAI's nested `function`, a list, tags.
    let text = "```json\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"d\"}}\n```";
    assert_eq!(calls(text)[0].1, json!({"path": "d"}));
    let text =
        "```json\n{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"e\\\"}\"}\n```";
    assert_eq!(calls(text)[0].1, json!({"path": "e"}));
    let text = "```json\n{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"arguments\": {\"path\": \"f\"}}}\n```";
    assert_eq!(calls(text)[0].1, json!({"path": "f"}));
    let text = "```json\n[{\"name\": \"read_file\", \"arguments\": {\"path\": \"g\"}}, {\"name\": \"read_file\", \"arguments\": {\"path\": \"h\"}}]\n```";
    assert_eq!(calls(text).len(), 2);
    let text =
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"i\"}}\n</tool_call>";
    assert_eq!(calls(text)[0].1, json!({"path": "i"}));
    let text = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"j\"}}";
    assert_eq!(calls(text)[0].1, json!({"path": "j"}));
}

#[test]
fn several_blocks_make_several_calls() {
    let text = "```tool\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\nand\n```tool\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n```";
    let parsed = parse_tool_text(text, KNOWN);
    assert_eq!(parsed.calls.len(), 2);
    assert_ne!(parsed.calls[0].id, parsed.calls[1].id);
    assert_eq!(parsed.prose, "and");
}

#[test]
fn json_that_is_not_a_call_stays_prose() {
    // Unknown tool names in a json block are examples, not calls.
    let text = "Config:\n```json\n{\"name\": \"my-package\", \"version\": \"1.0.0\"}\n```";
    let parsed = parse_tool_text(text, KNOWN);
    assert!(parsed.calls.is_empty());
    assert!(parsed.incomplete.is_none());
    assert_eq!(parsed.prose, text);
    // Code in another language is skipped whole, fences inside included.
    let text = "```rust\nlet x = r#\"{\"name\": \"read_file\", \"arguments\": {}}\"#;\n```\n";
    assert!(parse_tool_text(text, KNOWN).calls.is_empty());
    let text = "```markdown\n```json\n{\"name\": \"read_file\", \"arguments\": {}}\n```\n```\n";
    assert!(
        parse_tool_text(text, KNOWN).calls.is_empty(),
        "nested example in markdown"
    );
    // An explicit tool fence accepts any name (the tool layer reports unknown tools).
    let text = "```tool\n{\"name\": \"lookup\", \"arguments\": {}}\n```";
    assert_eq!(parse_tool_text(text, KNOWN).calls[0].name, "lookup");
}

#[test]
fn cut_off_blocks_are_incomplete_not_guessed() {
    let text = "Reading it.\n\n```tool\n{\"name\": \"read_file\", \"arguments\": {\"pa";
    let parsed = parse_tool_text(text, KNOWN);
    assert!(parsed.calls.is_empty());
    let incomplete = parsed.incomplete.expect("incomplete");
    assert_eq!(incomplete.line, 3);
    assert!(
        incomplete.detail.contains("never closed"),
        "{}",
        incomplete.detail
    );

    let text = "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"";
    assert!(parse_tool_text(text, KNOWN).incomplete.is_some());
    let text = "{\"name\": \"read_file\", \"arguments\": {\"path\":";
    assert!(parse_tool_text(text, KNOWN).incomplete.is_some());
    let text = "<tool_call>\n{\"name\": \"read_file\"";
    assert!(parse_tool_text(text, KNOWN).incomplete.is_some());
    // The JSON is whole and only the closing fence is missing: the call is complete.
    let text = "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}\n";
    let parsed = parse_tool_text(text, KNOWN);
    assert_eq!(parsed.calls.len(), 1);
}

#[test]
fn arguments_parsing() {
    assert_eq!(parse_arguments(""), (json!({}), None));
    assert_eq!(parse_arguments("{\"a\": 1,}"), (json!({"a": 1}), None));
    assert_eq!(
        parse_arguments("\"{\\\"a\\\": 2}\""),
        (json!({"a": 2}), None)
    );
    let (value, error) = parse_arguments("{\"a\": tru");
    assert_eq!(value, Value::Null);
    assert!(error.unwrap().contains("not valid JSON"));
}

#[test]
fn hostile_input_never_panics() {
    let inputs = [
        "```",
        "~~~",
        "```tool",
        "```tool\n",
        "```json\n{",
        "'",
        "{'",
        "/*",
        "\"\\",
        "```\n```\n```",
        "<tool_call>",
        "<TOOL_CALL></tool_call>",
        "```tool\n[1,2]\n```",
        "```tool\n{\"name\": 3}\n```",
        "é```json\n{\"name\":\"read_file\"}```",
        "```json {\"name\": \"read_file\", \"arguments\": {}}```trailing",
    ];
    for input in inputs {
        let _ = parse_tool_text(input, KNOWN);
        let _ = lenient_json(input);
        let _ = parse_arguments(input);
    }
}

#[test]
fn text_protocol_rewrites_history() {
    let call = ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a.rs"}),
        arguments_error: None,
        provider_data: None,
    };
    let request = ChatRequest {
        messages: vec![
            Message::system("Be brief."),
            Message::user("Fix a.rs"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call.clone()],
            },
            Message::tool_result(&call, "1: fn main() {}", false),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file with line numbers.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        options: ChatOptions {
            tool_choice: ToolChoice::Tool("read_file".into()),
            ..ChatOptions::default()
        },
    };
    let text = to_text_protocol(request);
    assert!(text.tools.is_empty());
    let system = text.messages[0].text();
    assert!(system.starts_with("Be brief."));
    assert!(system.contains("```tool") && system.contains("`read_file`: Read a file"));
    assert!(system.contains("Call the tool `read_file` in this answer."));
    let Message::Assistant {
        content,
        tool_calls,
    } = &text.messages[2]
    else {
        panic!()
    };
    assert!(tool_calls.is_empty());
    // The rewritten call parses back to the same call.
    let back = parse_tool_text(content, &["read_file"]);
    assert_eq!(back.calls[0].arguments, json!({"path": "a.rs"}));
    assert!(
        matches!(&text.messages[3], Message::User { content } if content.starts_with("Result of `read_file`"))
    );
}

#[test]
fn watcher_turns_text_calls_into_events() {
    let tools = vec![ToolSpec {
        name: "read_file".into(),
        description: String::new(),
        parameters: json!({}),
    }];
    let mut watcher = ToolTextWatcher::new(&tools, &ToolChoice::Auto);
    let mut out = Vec::new();
    for event in [
        StreamEvent::TextDelta {
            text: "```json\n{\"name\": \"read_file\", ".into(),
        },
        StreamEvent::TextDelta {
            text: "\"arguments\": {\"path\": \"x\"}}\n```".into(),
        },
        StreamEvent::Done {
            finish: FinishReason::Stop,
            usage: Default::default(),
        },
    ] {
        out.extend(watcher.on_event(event).unwrap());
    }
    assert_eq!(
        out[2],
        StreamEvent::TextToolCalls {
            prose: String::new()
        }
    );
    assert!(matches!(&out[3], StreamEvent::ToolCallStarted { name, .. } if name == "read_file"));
    assert!(
        matches!(&out[4], StreamEvent::ToolCall { call, .. } if call.arguments == json!({"path": "x"}))
    );
    assert!(matches!(
        &out[5],
        StreamEvent::Done {
            finish: FinishReason::ToolCalls,
            ..
        }
    ));

    // With tool_choice none, JSON in the text is just text.
    let mut watcher = ToolTextWatcher::new(&tools, &ToolChoice::None);
    watcher
        .on_event(StreamEvent::TextDelta {
            text: "{\"name\": \"read_file\", \"arguments\": {}}".into(),
        })
        .unwrap();
    let out = watcher
        .on_event(StreamEvent::Done {
            finish: FinishReason::Stop,
            usage: Default::default(),
        })
        .unwrap();
    assert_eq!(out.len(), 1);

    let mut watcher = ToolTextWatcher::new(&tools, &ToolChoice::Auto);
    watcher
        .on_event(StreamEvent::TextDelta {
            text: "```tool\n{\"name\": \"read_file\", \"argu".into(),
        })
        .unwrap();
    let err = watcher
        .on_event(StreamEvent::Done {
            finish: FinishReason::Length,
            usage: Default::default(),
        })
        .unwrap_err();
    assert!(
        matches!(err, ModelError::IncompleteToolCall { line: 1, .. }),
        "{err}"
    );
}

mod properties {
    use proptest::prelude::*;

    use super::*;
    use crate::model::http::StreamDecoder;
    use crate::model::{anthropic, gemini, openai};

    /// Strings made of the pieces these parsers care about, so that the interesting paths
    /// (fences, tags, quotes, escapes, cut-offs) are reached often.
    fn pieces() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("```".to_owned()),
            Just("~~~".to_owned()),
            Just("````".to_owned()),
            Just("json".to_owned()),
            Just("tool".to_owned()),
            Just("<tool_call>".to_owned()),
            Just("</tool_call>".to_owned()),
            Just("{".to_owned()),
            Just("}".to_owned()),
            Just("[".to_owned()),
            Just("]".to_owned()),
            Just("\"name\": \"read_file\"".to_owned()),
            Just("'arguments': ".to_owned()),
            Just(",".to_owned()),
            Just(":".to_owned()),
            Just("'".to_owned()),
            Just("\"".to_owned()),
            Just("\\".to_owned()),
            Just("//".to_owned()),
            Just("/*".to_owned()),
            Just("\n".to_owned()),
            Just(" ".to_owned()),
            Just("True".to_owned()),
            Just("é😀".to_owned()),
            "[a-z0-9 ]{0,6}",
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    /// JSON built from the keys the three wire formats use, nested at random, so decoders see
    /// plausible but wrong shapes (an index that is a string, a delta that is an array, ...).
    fn wire_json() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            Just("choices"),
            Just("delta"),
            Just("tool_calls"),
            Just("index"),
            Just("id"),
            Just("function"),
            Just("name"),
            Just("arguments"),
            Just("content"),
            Just("finish_reason"),
            Just("usage"),
            Just("type"),
            Just("content_block"),
            Just("partial_json"),
            Just("text"),
            Just("candidates"),
            Just("parts"),
            Just("functionCall"),
            Just("args"),
            Just("finishReason"),
            Just("error"),
            Just("message"),
            Just("stop_reason"),
            Just("input"),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop_oneof![
                Just("tool_use"),
                Just("text_delta"),
                Just("input_json_delta"),
                Just("stop"),
                Just("tool_calls"),
                Just("STOP"),
                Just("message_stop"),
                Just("content_block_start"),
                Just("content_block_delta"),
                Just("content_block_stop"),
                Just("message_delta"),
                Just("{\"a\":"),
                Just("[DONE]"),
                Just(""),
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((key.clone(), inner), 0..6).prop_map(|entries| {
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect(),
                    )
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn decoders_survive_wrong_shapes(values in proptest::collection::vec(wire_json(), 0..10)) {
            let mut decoders: Vec<(&str, Box<dyn StreamDecoder>)> = vec![
                ("", Box::new(openai::OpenAiDecoder::default())),
                ("message", Box::new(anthropic::AnthropicDecoder::default())),
                ("", Box::new(gemini::GeminiDecoder::default())),
            ];
            for (name, decoder) in &mut decoders {
                for value in &values {
                    let _ = decoder.event(name, &value.to_string());
                }
                let _ = decoder.end();
            }
            for value in &values {
                let _ = openai::parse_response(value);
                let _ = anthropic::parse_response(value);
                let _ = openai::message_from_wire(value);
            }
            let _ = anthropic::messages_from_wire("", &values);
            let _ = gemini::messages_from_wire("", &values);
        }

        #[test]
        fn tool_text_parsing_never_panics(text in pieces()) {
            let parsed = parse_tool_text(&text, &["read_file"]);
            // Every call found has a name; prose is a subsequence of the input's lines.
            for call in &parsed.calls {
                prop_assert!(!call.name.is_empty());
            }
            let _ = lenient_json(&text);
            let _ = parse_arguments(&text);
        }

        #[test]
        fn stream_decoders_never_panic(events in proptest::collection::vec((pieces(), pieces()), 0..8)) {
            let mut decoders: Vec<Box<dyn StreamDecoder>> = vec![
                Box::new(openai::OpenAiDecoder::default()),
                Box::new(anthropic::AnthropicDecoder::default()),
                Box::new(gemini::GeminiDecoder::default()),
            ];
            for decoder in &mut decoders {
                for (name, data) in &events {
                    let _ = decoder.event(name, data);
                }
                let _ = decoder.end();
            }
        }
    }
}

#[test]
fn bare_arguments_are_the_call_of_the_one_tool_they_fit() {
    let tools: Vec<ToolSpec> = ["read_file", "list_files", "edit_file", "insert_lines"]
        .iter()
        .filter_map(|n| crate::tools::spec(n))
        .collect();
    // Recorded from Qwen2.5-Coder-1.5B (llama.cpp) asked to rename a local variable.
    let text = "```json\n{\"new_string\": \"mid_value\", \"old_string\": \"mid\", \"path\": \"bisect.py\"}\n```";
    let calls = bare_argument_calls(text, &tools);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "edit_file");
    assert_eq!(calls[0].arguments["old_string"], "mid");
    // `path` alone fits read_file and list_files: not a call.
    assert!(bare_argument_calls("{\"path\": \"a.py\"}", &tools).is_empty());
    // A key no tool has: not a call; a required key missing: not a call.
    assert!(
        bare_argument_calls(
            "{\"old_string\": \"a\", \"new_string\": \"b\", \"path\": \"a\", \"why\": 1}",
            &tools
        )
        .is_empty()
    );
    assert!(
        bare_argument_calls("{\"old_string\": \"a\", \"new_string\": \"b\"}", &tools).is_empty()
    );
    // Code blocks in other languages are never read as arguments.
    assert!(
        bare_argument_calls(
            "```python\n{\"path\": \"a\", \"line\": 1, \"text\": \"x\"}\n```",
            &tools
        )
        .is_empty()
    );
}

#[test]
fn calls_as_a_small_model_writes_them_are_read() {
    // Qwen2.5-Coder-1.5B (develop, rust-add-fn): the call, then an imagined result in a fence.
    let text = "{\"name\": \"edit_file\", \"arguments\": \"{\\\"path\\\":\\\"src/lib.rs\\\",\\\"old_string\\\":\\\"a\\\",\\\"new_string\\\":\\\"b\\\"}\"}\n```\nobj['tool_response']\n```";
    let parsed = parse_tool_text(text, KNOWN);
    assert_eq!(
        parsed
            .calls
            .iter()
            .map(|c| (c.name.as_str(), c.arguments.clone()))
            .collect::<Vec<_>>(),
        [(
            "edit_file",
            json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"})
        )]
    );
    assert_eq!(parsed.prose, "```\nobj['tool_response']\n```");
    // Two calls one after the other (ts-add-fn), in a fence and bare.
    let two = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}} {\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}";
    assert_eq!(calls(two).len(), 2);
    assert_eq!(calls(&format!("```json\n{two}\n```")).len(), 2);
    // Code as it is in the file: raw line breaks and unescaped quotes (rust-flag).
    let text = "```json\n{\n  \"name\": \"edit_file\",\n  \"arguments\": {\n    \"path\": \"src/cli.rs\",\n    \"old_string\": \"\",\n    \"new_string\": \"if arg == \"--quiet\" {\n\treturn;\n}\"\n  }\n}\n```";
    assert_eq!(
        calls(text)[0].1["new_string"],
        "if arg == \"--quiet\" {\n\treturn;\n}"
    );
}

#[test]
fn a_call_whose_arguments_stay_unreadable_gets_an_error_not_silence() {
    // The content's string is left open before "path" (rust-add-fn): which quote was meant to
    // close it is not known, so the call is answered with why.
    let text = "```json\n{\n  \"name\": \"edit_file\",\n  \"arguments\": {\n    \"new_string\": \"/// Counts.\\n/// ```\n    \"path\": \"tests/lib.rs\"\n  }\n}\n```";
    let parsed = parse_tool_text(text, KNOWN);
    assert_eq!(parsed.calls.len(), 1, "{parsed:?}");
    let call = &parsed.calls[0];
    assert_eq!(call.name, "edit_file");
    let error = call.arguments_error.as_deref().unwrap();
    assert!(
        error.contains("in the argument \"new_string\": the string is not closed before the next argument \"path\""),
        "{error}"
    );
    // A block naming no offered tool stays prose, broken or not.
    let text = "```json\n{\"name\": \"my-package\", \"version\": \"1.0\n}\n```";
    assert!(parse_tool_text(text, KNOWN).calls.is_empty());
}
