//! Providers against local servers that replay the providers' documented wire formats
//! (`fixtures/model/`): answers, streams, tool calls, faults, retries, timeouts, cancellation,
//! round trips of tool specs and results, and an optional smoke test against a real
//! OpenAI-compatible server (`PATCHWISE_TEST_OPENAI_BASE`).

use std::sync::Once;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use patchwise::config::{Config, ModelRole, ValueSource};
use patchwise::model::replay::{ReplayServer, Reply};
use patchwise::model::{
    ChatModel, ChatOptions, ChatRequest, ChatResponse, FinishReason, HttpModel, Message,
    ModelError, ModelRouter, StreamEvent, TimeoutPhase, ToolCall, ToolChoice, ToolSpec, anthropic,
    collect, gemini, openai,
};

const KEY_ENV: &str = "PATCHWISE_TEST_PROVIDER_KEY";
const KEY: &str = "test-key-7f3a9c";

fn set_key() {
    static ONCE: Once = Once::new();
    // SAFETY: set once, before any request reads it, to a value no test changes; nothing else
    // in this test binary writes the environment.
    ONCE.call_once(|| unsafe { std::env::set_var(KEY_ENV, KEY) });
}

fn fixture(path: &str) -> Reply {
    Reply::from_file(format!(
        "{}/fixtures/model/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn config(kind: &str, base: &str, extra: &str) -> Config {
    set_key();
    let text = format!(
        r#"
[providers.test]
kind = "{kind}"
base_url = "{base}"
api_key_env = "{KEY_ENV}"

[roles]
coder = "test/test-model"

[timeouts]
connect = 2
first_token = 10
total = 60

[retry]
max_attempts = 3
initial_backoff_ms = 1
max_backoff_ms = 20
{extra}
"#
    );
    let (config, problems) = Config::from_toml_str(&text, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    config
}

/// A server replaying `replies` and a model of `kind` pointed at it.
async fn setup(kind: &str, replies: Vec<Reply>, extra: &str) -> (ReplayServer, HttpModel) {
    let server = ReplayServer::start(replies).await.unwrap();
    let base = match kind {
        "openai" => format!("{}/v1", server.url()),
        "gemini" => format!("{}/v1beta", server.url()),
        _ => server.url(),
    };
    let config = config(kind, &base, extra);
    let model = HttpModel::new(&config, "test", &config.providers["test"], "test-model");
    (server, model)
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Read a file; lines are numbered.".into(),
            parameters: json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "workspace-relative path"},
                    "start_line": {"type": ["integer", "null"], "default": 1}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "search".into(),
            description: "Search the workspace.".into(),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}}, "required": ["query"]}),
        },
    ]
}

fn request(no_stream: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("You fix bugs."),
            Message::user("Why does it crash?"),
        ],
        tools: tools(),
        options: ChatOptions {
            temperature: Some(0.0),
            max_tokens: Some(256),
            no_stream,
            ..ChatOptions::default()
        },
    }
}

async fn events(model: &HttpModel, request: ChatRequest) -> Vec<Result<StreamEvent, ModelError>> {
    model
        .chat(request, CancellationToken::new())
        .collect()
        .await
}

async fn answer(model: &HttpModel, request: ChatRequest) -> Result<ChatResponse, ModelError> {
    collect(model.chat(request, CancellationToken::new())).await
}

fn call_args(response: &ChatResponse) -> Vec<(String, Value)> {
    response
        .tool_calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

// ---------------------------------------------------------------- OpenAI-compatible

#[tokio::test]
async fn openai_plain_answer() {
    let (server, model) = setup("openai", vec![fixture("openai/plain.http")], "").await;
    let response = answer(&model, request(true)).await.unwrap();
    assert_eq!(
        response.text,
        "The bug is on line 3: `len` should be `len - 1`."
    );
    assert_eq!(response.finish, Some(FinishReason::Stop));
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (19, 14)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = requests[0].json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], false);
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You fix bugs."})
    );
}

#[tokio::test]
async fn openai_streamed_answer() {
    let (server, model) = setup("openai", vec![fixture("openai/stream_text.http")], "").await;
    let events = events(&model, request(false)).await;
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::TextDelta { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Hello", ", wörld", "!"]);
    let last = events.last().unwrap().as_ref().unwrap();
    assert_eq!(
        last,
        &StreamEvent::Done {
            finish: FinishReason::Stop,
            usage: patchwise::model::Usage {
                input_tokens: 9,
                output_tokens: 4
            }
        }
    );
    let body = server.requests()[0].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn openai_parallel_tool_calls_streamed() {
    let (_server, model) = setup(
        "openai",
        vec![fixture("openai/stream_parallel_tool_calls.http")],
        "",
    )
    .await;
    let events: Vec<StreamEvent> = events(&model, request(false))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    // Started events come as the calls begin, completed calls at finish_reason, Done last.
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e {
            StreamEvent::TextDelta { .. } => "text".to_owned(),
            StreamEvent::ToolCallStarted { index, .. } => format!("start{index}"),
            StreamEvent::ToolCallDelta { index, .. } => format!("delta{index}"),
            StreamEvent::ToolCall { index, .. } => format!("call{index}"),
            StreamEvent::TextToolCalls { .. } => "text-calls".to_owned(),
            StreamEvent::Done { .. } => "done".to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "start0", "delta0", "delta0", "start1", "delta1", "delta1", "call0", "call1", "done"
        ]
    );
    let response = collect(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
        .await
        .unwrap();
    assert_eq!(
        call_args(&response),
        vec![
            ("read_file".to_owned(), json!({"path": "src/lib.rs"})),
            (
                "search".to_owned(),
                json!({"query": "TODO", "max_results": 3})
            ),
        ]
    );
    assert_eq!(response.tool_calls[0].id, "call_DdmO9pD3xa9XTPNJ32zg2hcA");
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage.output_tokens, 38);
}

#[tokio::test]
async fn openai_tool_call_split_across_many_deltas() {
    let (_server, model) = setup(
        "openai",
        vec![fixture("openai/stream_tool_call_split.http")],
        "",
    )
    .await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(
        call_args(&response),
        vec![(
            "read_file".to_owned(),
            json!({"path": "src/parser/mod.rs", "start_line": 10, "end_line": 42, "note": "héllo \"quoted\" ✓"})
        )]
    );
    assert_eq!(response.tool_calls[0].id, "call_split01");
}

#[tokio::test]
async fn recorded_llama_cpp_streams() {
    // Recorded from the real server: the name and id repeat in every delta.
    let (_server, model) = setup(
        "openai",
        vec![fixture("openai/llamacpp_forced_tool_call.http")],
        "",
    )
    .await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(
        call_args(&response),
        vec![("read_file".to_owned(), json!({"path": "src/main.rs"}))]
    );
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));

    // Interrupted by another client: [DONE] without finish_reason, nothing streamed: retried.
    let (server, model) = setup(
        "openai",
        vec![
            fixture("openai/llamacpp_interrupted.http"),
            fixture("openai/stream_text.http"),
        ],
        "",
    )
    .await;
    assert_eq!(
        answer(&model, request(false)).await.unwrap().text,
        "Hello, wörld!"
    );
    assert_eq!(server.requests().len(), 2);
    let (_server, model) = setup(
        "openai",
        vec![fixture("openai/llamacpp_interrupted.http")],
        "",
    )
    .await;
    let err = answer(&model, request(false)).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("[DONE] arrived without a finish_reason"),
        "{err}"
    );

    let (_server, model) = setup(
        "openai",
        vec![fixture("openai/llamacpp_auto_json_in_content.http")],
        "",
    )
    .await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(
        call_args(&response),
        vec![("read_file".to_owned(), json!({"path": "src/main.rs"}))]
    );
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn openai_parallel_tool_calls_not_streamed() {
    let (_server, model) = setup("openai", vec![fixture("openai/plain_tool_calls.http")], "").await;
    let response = answer(&model, request(true)).await.unwrap();
    assert_eq!(response.text, "");
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(
        response.tool_calls[1].arguments,
        json!({"query": "fn parse", "max_results": 5})
    );
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn openai_429_then_success() {
    let (server, model) = setup(
        "openai",
        vec![
            fixture("openai/429.http"),
            fixture("openai/stream_text.http"),
        ],
        "",
    )
    .await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(response.text, "Hello, wörld!");
    assert_eq!(server.requests().len(), 2);
    // The retried request is the same request.
    assert_eq!(server.requests()[0].body, server.requests()[1].body);
}

#[tokio::test]
async fn openai_500_then_success() {
    let (server, model) = setup(
        "openai",
        vec![
            fixture("openai/500.http"),
            fixture("openai/500.http"),
            fixture("openai/plain.http"),
        ],
        "",
    )
    .await;
    let response = answer(&model, request(true)).await.unwrap();
    assert!(response.text.starts_with("The bug is on line 3"));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn openai_500_until_attempts_run_out() {
    let (server, model) = setup("openai", vec![fixture("openai/500.http")], "").await;
    let err = answer(&model, request(true)).await.unwrap_err();
    assert!(
        matches!(
            &err,
            ModelError::RetriesExhausted {
                status: 500,
                attempts: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("The server had an error"), "{err}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn openai_auth_errors_name_the_variable_not_the_key_and_are_not_retried() {
    let (server, model) = setup("openai", vec![fixture("openai/401.http")], "").await;
    let err = answer(&model, request(true)).await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, ModelError::Auth { status: 401, .. }),
        "{err:?}"
    );
    assert!(
        text.contains(KEY_ENV) && text.contains("Incorrect API key"),
        "{text}"
    );
    assert!(!text.contains(KEY) && !format!("{err:?}").contains(KEY));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn openai_unknown_model_is_a_clear_error() {
    let (server, model) = setup("openai", vec![fixture("openai/404_model.http")], "").await;
    let err = answer(&model, request(true)).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("HTTP 404: model \"qwen2.5-coder:99b\" not found"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn openai_stream_cut_mid_tool_call_is_not_retried_after_output() {
    let (server, model) = setup(
        "openai",
        vec![
            fixture("openai/stream_cut_mid_tool_call.http"),
            fixture("openai/stream_text.http"),
        ],
        "",
    )
    .await;
    let events = events(&model, request(false)).await;
    assert!(matches!(events[0], Ok(StreamEvent::ToolCallStarted { .. })));
    let err = events.last().unwrap().as_ref().unwrap_err();
    assert!(
        matches!(err, ModelError::StreamEndedEarly { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("inside tool call `edit_file`"),
        "{err}"
    );
    // The caller saw output, so the request was not sent again.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn output_limit_inside_a_tool_call_is_reported_on_the_call() {
    let (_server, model) = setup(
        "openai",
        vec![fixture("openai/stream_length_mid_tool_call.http")],
        "",
    )
    .await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(response.finish, Some(FinishReason::Length));
    let call = &response.tool_calls[0];
    assert_eq!(call.arguments, Value::Null);
    let error = call.arguments_error.as_deref().unwrap();
    assert!(
        error.starts_with("the answer reached its output-token limit inside these arguments"),
        "{error}"
    );
}

#[tokio::test]
async fn openai_invalid_json_is_retried_then_reported() {
    let (server, model) = setup(
        "openai",
        vec![
            fixture("openai/invalid_json.http"),
            fixture("openai/plain.http"),
        ],
        "",
    )
    .await;
    assert!(answer(&model, request(true)).await.is_ok());
    assert_eq!(server.requests().len(), 2);

    let (_server, model) = setup("openai", vec![fixture("openai/invalid_json.http")], "").await;
    let err = answer(&model, request(true)).await.unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("expected a JSON body"), "{err}");

    let (_server, model) = setup(
        "openai",
        vec![fixture("openai/stream_invalid_json.http")],
        "",
    )
    .await;
    let err = answer(&model, request(false)).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("expected a JSON chunk after \"data:\""),
        "{err}"
    );
}

#[tokio::test]
async fn hung_server_times_out_and_retries_are_bounded() {
    let server = ReplayServer::start(vec![Reply::Hang]).await.unwrap();
    let mut config = config("openai", &format!("{}/v1", server.url()), "");
    config.timeouts.first_token = Duration::from_millis(300);
    config.retry.max_attempts = 2;
    let model = HttpModel::new(&config, "test", &config.providers["test"], "test-model");
    let err = answer(&model, request(false)).await.unwrap_err();
    assert!(
        matches!(
            err,
            ModelError::Timeout {
                phase: TimeoutPhase::FirstToken,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("first-token timeout after")
            && err.to_string().ends_with(
                "(raise [timeouts] first_token in the configuration if the server is just slow)"
            ),
        "{err}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn stall_after_output_times_out_without_retry() {
    let server = ReplayServer::start(vec![fixture("openai/stream_hang_mid.http")])
        .await
        .unwrap();
    let mut config = config("openai", &format!("{}/v1", server.url()), "");
    config.timeouts.first_token = Duration::from_millis(300);
    let model = HttpModel::new(&config, "test", &config.providers["test"], "test-model");
    let events = events(&model, request(false)).await;
    assert_eq!(
        events[0],
        Ok(StreamEvent::TextDelta {
            text: "Thinking".into()
        })
    );
    assert!(
        matches!(events[1], Err(ModelError::Timeout { .. })),
        "{events:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn total_timeout_bounds_a_slow_stream() {
    let server = ReplayServer::start(vec![fixture("openai/stream_hang_mid.http")])
        .await
        .unwrap();
    let mut config = config("openai", &format!("{}/v1", server.url()), "");
    config.timeouts.first_token = Duration::from_secs(3600);
    config.timeouts.total = Duration::from_millis(400);
    let model = HttpModel::new(&config, "test", &config.providers["test"], "test-model");
    let err = answer(&model, request(false)).await.unwrap_err();
    assert!(
        matches!(
            err,
            ModelError::Timeout {
                phase: TimeoutPhase::Total,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn stream_ending_before_any_output_is_retried() {
    let (server, model) = setup(
        "anthropic",
        vec![
            fixture("anthropic/stream_cut_before_output.http"),
            fixture("anthropic/stream_text.http"),
        ],
        "",
    )
    .await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(response.text, "Hello!");
    assert_eq!(server.requests().len(), 2);

    // Every attempt cut: the error says where the stream ended.
    let (server, model) = setup(
        "anthropic",
        vec![fixture("anthropic/stream_cut_before_output.http")],
        "",
    )
    .await;
    let err = answer(&model, request(false)).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the answer stream from {}/v1/messages ended early: after 0 characters of text, before message_stop",
            server.url()
        )
    );
    assert_eq!(server.requests().len(), 3);
}

/// Waits (bounded) until `condition` holds.
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..3000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never happened: {what}");
}

#[tokio::test]
async fn dropping_the_stream_abandons_the_request() {
    let server = ReplayServer::start(vec![Reply::Hang]).await.unwrap();
    let mut config = config("openai", &format!("{}/v1", server.url()), "");
    config.timeouts.first_token = Duration::from_secs(3600);
    config.timeouts.total = Duration::from_secs(3600);
    let model = HttpModel::new(&config, "test", &config.providers["test"], "test-model");
    let stream = model.chat(request(false), CancellationToken::new());
    eventually("the request reached the server", || {
        server.requests().len() == 1
    })
    .await;
    assert_eq!(server.disconnects(), 0);
    drop(stream);
    eventually("the client closed the connection", || {
        server.disconnects() == 1
    })
    .await;
}

#[tokio::test]
async fn connection_refused_is_a_clear_error() {
    // Bind and drop a listener: nothing listens on that port afterwards.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut config = config("openai", &format!("http://127.0.0.1:{port}/v1"), "");
    config.retry.max_attempts = 2;
    let model = HttpModel::new(&config, "test", &config.providers["test"], "test-model");
    let err = answer(&model, request(false)).await.unwrap_err();
    assert!(matches!(err, ModelError::Connect { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot connect to http://127.0.0.1:{port}/v1/chat/completions: connection refused (is the server running?)"
        )
    );
}

#[tokio::test]
async fn cancellation_stops_an_in_flight_request() {
    let server = ReplayServer::start(vec![Reply::Hang]).await.unwrap();
    // Long timeouts: only cancellation can end this request.
    let mut config = config("openai", &format!("{}/v1", server.url()), "");
    config.timeouts.first_token = Duration::from_secs(3600);
    config.timeouts.total = Duration::from_secs(3600);
    let model = HttpModel::new(&config, "test", &config.providers["test"], "test-model");
    let cancel = CancellationToken::new();
    let stream = model.chat(request(false), cancel.clone());
    eventually("the request reached the server", || {
        server.requests().len() == 1
    })
    .await;
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(60), collect(stream))
        .await
        .expect("cancellation ended the request");
    assert_eq!(result.unwrap_err(), ModelError::Cancelled);
    eventually("the client closed the connection", || {
        server.disconnects() == 1
    })
    .await;
}

#[tokio::test]
async fn json_in_content_becomes_a_tool_call() {
    let (_server, model) = setup(
        "openai",
        vec![fixture("openai/stream_json_in_content.http")],
        "",
    )
    .await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(
        call_args(&response),
        vec![("read_file".to_owned(), json!({"path": "src/main.rs"}))]
    );
    // The call block is not left in the text (it would be sent back twice).
    assert_eq!(response.text, "");
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn text_protocol_provider_and_cut_block() {
    let server = ReplayServer::start(vec![fixture("openai/stream_text_tool_cut.http")])
        .await
        .unwrap();
    let text = format!(
        "[providers.test]\nbase_url = \"{}/v1\"\ntools = \"text\"\n",
        server.url()
    );
    let (config, problems) = Config::from_toml_str(&text, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    let model = HttpModel::new(&config, "test", &config.providers["test"], "tiny");
    let err = answer(&model, request(false)).await.unwrap_err();
    assert!(
        matches!(err, ModelError::IncompleteToolCall { line: 3, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("ask the model to repeat the call"),
        "{err}"
    );
    let body = server.requests()[0].json();
    assert!(body.get("tools").is_none(), "{body}");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("```tool") && system.contains("`read_file`"),
        "{system}"
    );
}

#[tokio::test]
async fn assistant_tool_call_messages_carry_empty_content_not_null() {
    let (server, model) = setup("openai", vec![fixture("openai/plain.http")], "").await;
    let call = ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a.rs"}),
        arguments_error: None,
        provider_data: None,
    };
    let mut req = request(true);
    req.messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![call.clone()],
    });
    req.messages
        .push(Message::tool_result(&call, "1: fn a() {}", false));
    answer(&model, req).await.unwrap();
    let body = server.requests()[0].json();
    let assistant = &body["messages"][2];
    assert_eq!(assistant["content"], json!(""));
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        json!("{\"path\":\"a.rs\"}")
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "1: fn a() {}"})
    );
}

#[tokio::test]
async fn requests_that_cannot_fit_fail_before_sending() {
    let (server, model) = setup(
        "openai",
        vec![fixture("openai/plain.http")],
        "[models.test-model]\ncontext_window = 300\n",
    )
    .await;
    let mut req = request(true);
    req.messages.push(Message::user("word ".repeat(2000)));
    let err = answer(&model, req).await.unwrap_err();
    let ModelError::ContextOverflow {
        over_by, window, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*window, 300);
    assert!(*over_by > 1500, "{err}");
    assert!(server.requests().is_empty());
}

// ---------------------------------------------------------------- Anthropic

#[tokio::test]
async fn anthropic_plain_and_headers() {
    let (server, model) = setup("anthropic", vec![fixture("anthropic/plain.http")], "").await;
    let response = answer(&model, request(true)).await.unwrap();
    assert_eq!(response.text, "Hi! My name is Claude.");
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (2095, 503)
    );
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some(anthropic::API_VERSION));
    let body = r.json();
    assert_eq!(body["system"], "You fix bugs.");
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["path"])
    );
    assert_eq!(body["tool_choice"], json!({"type": "auto"}));
}

#[tokio::test]
async fn anthropic_streamed_text_and_tool_use() {
    let (_server, model) =
        setup("anthropic", vec![fixture("anthropic/stream_text.http")], "").await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(response.text, "Hello!");
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (25, 15)
    );

    let (_server, model) = setup(
        "anthropic",
        vec![fixture("anthropic/stream_tool_use.http")],
        "",
    )
    .await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(response.text, "Okay, let's check both files:");
    assert_eq!(
        call_args(&response),
        vec![
            ("read_file".to_owned(), json!({"path": "src/main.rs"})),
            (
                "search".to_owned(),
                json!({"query": "unwrap()", "max_results": 2})
            ),
        ]
    );
    assert_eq!(response.tool_calls[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));

    let (_server, model) = setup(
        "anthropic",
        vec![fixture("anthropic/plain_tool_use.http")],
        "",
    )
    .await;
    let response = answer(&model, request(true)).await.unwrap();
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(
        response.tool_calls[1].arguments,
        json!({"path": "src/lib.rs"})
    );
}

#[tokio::test]
async fn anthropic_faults() {
    // 429, 529 and an error event before any output are all retried.
    let server = ReplayServer::start(vec![
        fixture("anthropic/429.http"),
        fixture("anthropic/529.http"),
        fixture("anthropic/stream_error_event.http"),
        fixture("anthropic/stream_text.http"),
    ])
    .await
    .unwrap();
    let mut config = config("anthropic", &server.url(), "");
    config.retry.max_attempts = 4;
    let model = HttpModel::new(&config, "test", &config.providers["test"], "test-model");
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(response.text, "Hello!");
    assert_eq!(server.requests().len(), 4);

    let (_server, model) = setup(
        "anthropic",
        vec![fixture("anthropic/stream_error_event.http")],
        "",
    )
    .await;
    let err = answer(&model, request(false)).await.unwrap_err();
    assert!(
        err.to_string().contains("overloaded_error: Overloaded"),
        "{err}"
    );

    let (server, model) = setup(
        "anthropic",
        vec![fixture("anthropic/stream_cut_mid_tool_use.http")],
        "",
    )
    .await;
    let err = answer(&model, request(false)).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("inside tool_use block `edit_file`"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

// ---------------------------------------------------------------- Gemini

#[tokio::test]
async fn gemini_answers_and_function_calls() {
    let (server, model) = setup("gemini", vec![fixture("gemini/stream_text.http")], "").await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(response.text, "Hello from Gemini.");
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (8, 4)
    );
    let r = &server.requests()[0];
    assert_eq!(
        r.path,
        "/v1beta/models/test-model:streamGenerateContent?alt=sse"
    );
    assert_eq!(r.header("x-goog-api-key"), Some(KEY));
    let body = r.json();
    assert_eq!(
        body["systemInstruction"]["parts"][0]["text"],
        "You fix bugs."
    );
    assert_eq!(body["generationConfig"]["maxOutputTokens"], 256);
    let declaration = &body["tools"][0]["functionDeclarations"][0];
    assert_eq!(declaration["name"], "read_file");
    assert!(
        declaration["parameters"]
            .get("additionalProperties")
            .is_none()
    );

    let (_server, model) = setup(
        "gemini",
        vec![fixture("gemini/stream_function_calls.http")],
        "",
    )
    .await;
    let response = answer(&model, request(false)).await.unwrap();
    assert_eq!(response.text, "Let me look.");
    assert_eq!(
        call_args(&response),
        vec![
            ("read_file".to_owned(), json!({"path": "src/main.rs"})),
            (
                "search".to_owned(),
                json!({"query": "TODO", "max_results": 3})
            ),
        ]
    );
    assert_ne!(response.tool_calls[0].id, response.tool_calls[1].id);
    // The signature travels back with the call.
    let signature = json!({"thoughtSignature": "CiQBcsjafEwv0X2nGk8VQ2hdT0tS3g=="});
    assert_eq!(response.tool_calls[0].provider_data, Some(signature));
    let (_, wire) = gemini::messages_to_wire(&[response.to_message()]);
    assert_eq!(
        wire[0]["parts"][1]["thoughtSignature"],
        "CiQBcsjafEwv0X2nGk8VQ2hdT0tS3g=="
    );
    assert!(wire[0]["parts"][2].get("thoughtSignature").is_none());
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));

    let (server, model) = setup(
        "gemini",
        vec![
            fixture("gemini/429.http"),
            fixture("gemini/plain_function_calls.http"),
        ],
        "",
    )
    .await;
    let response = answer(&model, request(true)).await.unwrap();
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(
        server.requests()[1].path,
        "/v1beta/models/test-model:generateContent"
    );

    let (_server, model) = setup("gemini", vec![fixture("gemini/plain.http")], "").await;
    assert!(
        answer(&model, request(true))
            .await
            .unwrap()
            .text
            .contains("never incremented")
    );

    let (_server, model) = setup("gemini", vec![fixture("gemini/stream_cut.http")], "").await;
    let err = answer(&model, request(false)).await.unwrap_err();
    assert!(
        matches!(err, ModelError::StreamEndedEarly { .. }),
        "{err:?}"
    );
}

// ---------------------------------------------------------------- round trips

fn conversation() -> Vec<Message> {
    let read = ToolCall {
        id: "call_a".into(),
        name: "read_file".into(),
        arguments: json!({"path": "src/main.rs"}),
        arguments_error: None,
        provider_data: None,
    };
    let search = ToolCall {
        id: "call_b".into(),
        name: "search".into(),
        arguments: json!({"query": "TODO", "max_results": 3}),
        arguments_error: None,
        provider_data: None,
    };
    vec![
        Message::system("You fix bugs."),
        Message::user("Fix main."),
        Message::Assistant {
            content: "Looking.".into(),
            tool_calls: vec![read.clone(), search.clone()],
        },
        Message::tool_result(&read, "1: fn main() {}", false),
        Message::tool_result(&search, "no such file", true),
        Message::assistant("Done: main is fine."),
    ]
}

#[test]
fn openai_round_trip() {
    let messages = conversation();
    let wire: Vec<Value> = messages.iter().map(openai::message_to_wire).collect();
    // The arguments travel as a JSON string; the order of its keys carries no meaning (it
    // follows serde_json's map order, which `preserve_order` changes).
    let arguments: Value = serde_json::from_str(
        wire[2]["tool_calls"][1]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        arguments,
        serde_json::json!({"max_results": 3, "query": "TODO"})
    );
    assert_eq!(wire[4]["content"], "error: no such file");
    assert_eq!(openai::messages_from_wire(&wire), messages);
    let spec = openai::tool_to_wire(&tools()[0]);
    assert_eq!(spec["function"]["parameters"], tools()[0].parameters);
}

#[test]
fn anthropic_round_trip() {
    let messages = conversation();
    let (system, wire) = anthropic::messages_to_wire(&messages);
    assert_eq!(system, "You fix bugs.");
    // Both results travel in one user message, right after the assistant's tool_use blocks.
    assert_eq!(wire.len(), 4);
    assert_eq!(wire[2]["role"], "user");
    assert_eq!(wire[2]["content"][1]["is_error"], true);
    assert_eq!(wire[1]["content"][1]["type"], "tool_use");
    assert_eq!(anthropic::messages_from_wire(&system, &wire), messages);
    let spec = anthropic::tool_to_wire(&tools()[1]);
    assert_eq!(spec["input_schema"], tools()[1].parameters);
}

#[test]
fn gemini_round_trip() {
    let mut messages = conversation();
    // Gemini ids are generated; results match calls by name and order.
    let (system, wire) = gemini::messages_to_wire(&messages);
    assert_eq!(wire[1]["role"], "model");
    assert_eq!(
        wire[1]["parts"][1]["functionCall"]["args"],
        json!({"path": "src/main.rs"})
    );
    assert_eq!(
        wire[2]["parts"][1]["functionResponse"],
        json!({"name": "search", "id": "call_b", "response": {"error": "no such file"}})
    );
    let back = gemini::messages_from_wire(&system, &wire);
    assert_eq!(back, messages);
    let spec = gemini::tool_to_wire(&tools()[0]);
    assert_eq!(
        spec["parameters"],
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "workspace-relative path"},
                "start_line": {"type": "integer", "nullable": true}
            },
            "required": ["path"]
        })
    );
    messages.truncate(2);
    let body = gemini::request_body(&ChatRequest {
        messages,
        tools: tools(),
        options: ChatOptions {
            tool_choice: ToolChoice::Tool("search".into()),
            ..ChatOptions::default()
        },
    });
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["search"]}})
    );
}

// ---------------------------------------------------------------- roles

#[tokio::test]
async fn router_probes_open_choices_and_roles_fall_back_to_coder() {
    let server = ReplayServer::start(vec![
        fixture("openai/models.http"),
        fixture("openai/plain.http"),
    ])
    .await
    .unwrap();
    let text = format!("[providers.local]\nbase_url = \"{}/v1\"\n", server.url());
    let (config, _) = Config::from_toml_str(&text, ValueSource::Default);
    let router = ModelRouter::new(config);
    let judge = router
        .model(ModelRole::Judge, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(judge.name(), "local/qwen2.5-coder:7b");
    // Cached: the coder role resolves without another probe.
    let coder = router
        .model(ModelRole::Coder, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(coder.name(), judge.name());
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.requests()[0].path, "/v1/models");
}

#[tokio::test]
async fn router_reports_every_unreachable_candidate() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let text = format!(
        "[providers.a]\nbase_url = \"http://127.0.0.1:{port}/v1\"\n[providers.b]\nbase_url = \"http://127.0.0.1:{port}/v2\"\n"
    );
    let (config, _) = Config::from_toml_str(&text, ValueSource::Default);
    let router = ModelRouter::new(config);
    let err = router
        .model(ModelRole::Planner, CancellationToken::new())
        .await
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(
        text.starts_with("no model for role planner: a (http://127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("/v2/models): connection refused"), "{text}");
    assert!(
        text.contains("set [roles] coder = \"provider/model\""),
        "{text}"
    );
}

/// With nothing configured, no server on the default ports and no model downloaded, the error
/// the editor shows leads with the one command that fixes it.
#[tokio::test]
async fn with_nothing_configured_or_downloaded_the_error_names_model_pull() {
    let data = tempfile::tempdir().unwrap();
    let text = format!("data_dir = {:?}\n", data.path().display().to_string());
    let (config, _) = Config::from_toml_str(&text, ValueSource::Default);
    let router = ModelRouter::new(config);
    let err = router
        .model(ModelRole::Coder, CancellationToken::new())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with(
            "no model for role coder: no model server answers and no model is downloaded: run `patchwise model pull`"
        ),
        "{err}"
    );
    assert!(
        err.contains("ollama (http://127.0.0.1:11434/v1/models)"),
        "{err}"
    );
    assert!(
        err.contains(
            "embedded (the model inside patchwise): qwen2.5-coder-1.5b is not downloaded yet"
        ),
        "{err}"
    );
}

// ---------------------------------------------------------------- real server (optional)

/// Runs against a real OpenAI-compatible server when `PATCHWISE_TEST_OPENAI_BASE` is set
/// (e.g. `http://127.0.0.1:8088/v1` from `local-model start`); `PATCHWISE_TEST_OPENAI_MODEL`
/// names the model (default: the first the server lists).
#[tokio::test]
async fn smoke_real_openai_compatible_server() {
    let Ok(base) = std::env::var("PATCHWISE_TEST_OPENAI_BASE") else {
        return;
    };
    let mut text = format!(
        "[providers.real]\nbase_url = \"{base}\"\n[timeouts]\nfirst_token = 300\ntotal = 600\n"
    );
    if let Ok(model) = std::env::var("PATCHWISE_TEST_OPENAI_MODEL") {
        text.push_str(&format!("[roles]\ncoder = \"real/{model}\"\n"));
    }
    let (config, problems) = Config::from_toml_str(&text, ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    let router = ModelRouter::new(config);
    let model = router
        .model(ModelRole::Coder, CancellationToken::new())
        .await
        .unwrap();
    let cancel = CancellationToken::new;

    // 1. Plain streamed answer.
    let started = std::time::Instant::now();
    let plain = ChatRequest {
        messages: vec![Message::user("Reply with exactly the word: pong")],
        tools: vec![],
        options: ChatOptions {
            temperature: Some(0.0),
            max_tokens: Some(16),
            ..ChatOptions::default()
        },
    };
    let response = patchwise::model::complete(model.as_ref(), plain, cancel())
        .await
        .unwrap();
    eprintln!(
        "smoke plain: {:?} {:?} {:?} in {:?}",
        response.text,
        response.finish,
        response.usage,
        started.elapsed()
    );
    assert!(
        response.text.to_lowercase().contains("pong"),
        "{response:?}"
    );

    // 2. A forced tool call (native tool_calls expected).
    let started = std::time::Instant::now();
    let forced = ChatRequest {
        messages: vec![Message::user("Read the file src/main.rs.")],
        tools: tools(),
        options: ChatOptions {
            temperature: Some(0.0),
            max_tokens: Some(128),
            tool_choice: ToolChoice::Tool("read_file".into()),
            ..ChatOptions::default()
        },
    };
    let response = patchwise::model::complete(model.as_ref(), forced.clone(), cancel())
        .await
        .unwrap();
    eprintln!(
        "smoke forced: {:?} {:?} {:?} in {:?}",
        response.tool_calls,
        response.finish,
        response.usage,
        started.elapsed()
    );
    assert_eq!(
        response.tool_calls.first().map(|c| c.name.as_str()),
        Some("read_file"),
        "{response:?}"
    );

    // 3. Auto: native or JSON-in-content, both must come out as a tool call.
    let started = std::time::Instant::now();
    let mut auto = forced.clone();
    auto.options.tool_choice = ToolChoice::Auto;
    let response = patchwise::model::complete(model.as_ref(), auto, cancel())
        .await
        .unwrap();
    eprintln!(
        "smoke auto: text {:?} calls {:?} {:?} in {:?}",
        response.text,
        response.tool_calls,
        response.finish,
        started.elapsed()
    );
    assert!(!response.tool_calls.is_empty(), "{response:?}");

    // 4. The result goes back (assistant content "" with tool_calls) and the model answers.
    //    Sent without tools: llama-cpp-python does not show tool results to the model while
    //    tools are offered (it repeats its call), so this is how a workflow asks for the answer.
    let mut follow = forced;
    follow.tools.clear();
    follow.messages.push(response.to_message());
    let call = response.tool_calls[0].clone();
    follow.messages.push(Message::tool_result(
        &call,
        "1: fn main() {\n2:     println!(\"hi\");\n3: }",
        false,
    ));
    follow.options.tool_choice = ToolChoice::None;
    let response = patchwise::model::complete(model.as_ref(), follow, cancel())
        .await
        .unwrap();
    eprintln!("smoke follow-up: {:?} {:?}", response.text, response.finish);
    assert!(response.text.contains("hi"), "{response:?}");

    // 5. The same model through the text protocol: the call as a ```tool block, the result as
    //    a user message, then an answer that uses it.
    let text_config = format!(
        "[providers.real]\nbase_url = \"{base}\"\ntools = \"text\"\n[timeouts]\nfirst_token = 300\ntotal = 600\n"
    );
    let (config, _) = Config::from_toml_str(&text_config, ValueSource::Default);
    let name = model
        .name()
        .split_once('/')
        .map(|(_, m)| m.to_owned())
        .unwrap_or_default();
    let text_model = HttpModel::new(&config, "real", &config.providers["real"], &name);
    let ask = ChatRequest {
        messages: vec![
            Message::system("You are a coding assistant working in a Rust repository."),
            Message::user("What does src/main.rs print? Read it first."),
        ],
        tools: tools(),
        options: ChatOptions {
            temperature: Some(0.0),
            max_tokens: Some(128),
            ..ChatOptions::default()
        },
    };
    let started = std::time::Instant::now();
    let response = patchwise::model::complete(&text_model, ask.clone(), cancel())
        .await
        .unwrap();
    eprintln!(
        "smoke text protocol: text {:?} calls {:?} in {:?}",
        response.text,
        response.tool_calls,
        started.elapsed()
    );
    assert_eq!(
        response.tool_calls.first().map(|c| c.name.as_str()),
        Some("read_file"),
        "{response:?}"
    );
    let mut follow = ask;
    follow.messages.push(response.to_message());
    let call = response.tool_calls[0].clone();
    follow.messages.push(Message::tool_result(
        &call,
        "1: fn main() {\n2:     println!(\"hello from patchwise\");\n3: }",
        false,
    ));
    follow.options.tool_choice = ToolChoice::None;
    let response = patchwise::model::complete(&text_model, follow, cancel())
        .await
        .unwrap();
    eprintln!(
        "smoke text protocol follow-up: {:?} calls {:?}",
        response.text, response.tool_calls
    );
    // A 1.5B model often ignores "do not call a tool" here; any answer is accepted.
    assert!(
        !response.text.is_empty() || !response.tool_calls.is_empty(),
        "{response:?}"
    );

    // 6. Cancelling mid-answer: first token, then cancel; the stream ends with Cancelled.
    let long = ChatRequest {
        messages: vec![Message::user(
            "Write a long essay about the history of Rust.",
        )],
        tools: vec![],
        options: ChatOptions {
            max_tokens: Some(400),
            ..ChatOptions::default()
        },
    };
    let token = CancellationToken::new();
    let started = std::time::Instant::now();
    let mut stream = model.chat(long, token.clone());
    let mut first_token = None;
    let mut cancelled_at = None;
    let mut end = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(StreamEvent::TextDelta { .. }) if first_token.is_none() => {
                first_token = Some(started.elapsed());
                token.cancel();
                cancelled_at = Some(std::time::Instant::now());
            }
            Ok(_) => {}
            Err(err) => {
                end = Some(err);
                break;
            }
        }
    }
    let stop = cancelled_at.map(|t| t.elapsed());
    eprintln!(
        "smoke cancel: first token after {first_token:?}, stream ended {stop:?} after cancel with {end:?}"
    );
    assert_eq!(end, Some(ModelError::Cancelled));
}
