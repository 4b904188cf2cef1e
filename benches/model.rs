//! Costs the model layer adds around a model call, each next to its floor measured in the same
//! run: decoding a streamed answer (vs. only parsing its JSON chunks), fitting a long
//! conversation into a context window (vs. only counting its tokens), and finding a tool call
//! in an answer's text.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

use patchwise::model::budget::{Budget, count_request, fit};
use patchwise::model::http::StreamDecoder;
use patchwise::model::openai::OpenAiDecoder;
use patchwise::model::text_tools::parse_tool_text;
use patchwise::model::{ChatRequest, Message, ToolCall};
use patchwise::tokens::Encoding;

/// 2,000 chunks: text, then one tool call whose arguments arrive 4 characters at a time.
fn stream_chunks() -> Vec<String> {
    let mut chunks = Vec::new();
    for i in 0..1000 {
        chunks.push(json!({"choices": [{"index": 0, "delta": {"content": format!("word{i} ")}, "finish_reason": null}]}).to_string());
    }
    chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "edit_file", "arguments": ""}}]}, "finish_reason": null}]}).to_string());
    let args =
        json!({"path": "src/lib.rs", "old": "x".repeat(2000), "new": "y".repeat(1980)}).to_string();
    let pieces: Vec<String> = args
        .chars()
        .collect::<Vec<_>>()
        .chunks(4)
        .map(|c| c.iter().collect())
        .collect();
    for piece in pieces.iter().take(998) {
        chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, "finish_reason": null}]}).to_string());
    }
    let rest: String = pieces.iter().skip(998).map(String::as_str).collect();
    chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": rest}}]}, "finish_reason": "tool_calls"}]}).to_string());
    chunks.push("[DONE]".to_owned());
    chunks
}

/// 40 turns of read_file calls with 200-line results (~150k tokens).
fn conversation() -> ChatRequest {
    let mut messages = vec![
        Message::system("You are a careful coder."),
        Message::user("Fix the parser."),
    ];
    for turn in 0..40 {
        let call = ToolCall::new(
            format!("call_{turn}"),
            "read_file",
            json!({"path": format!("src/file_{turn}.rs")}),
        );
        messages.push(Message::Assistant {
            content: String::new(),
            tool_calls: vec![call.clone()],
        });
        let body: String = (0..200)
            .map(|l| format!("{l:>4}: let value_{l} = compute_{turn}(input, {l}); // step {l}\n"))
            .collect();
        messages.push(Message::tool_result(&call, body, false));
    }
    ChatRequest {
        messages,
        ..ChatRequest::default()
    }
}

fn benches(c: &mut Criterion) {
    let chunks = stream_chunks();
    let bytes: usize = chunks.iter().map(String::len).sum();
    let mut group = c.benchmark_group("stream_2000_chunks");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("floor_parse_json_only", |b| {
        b.iter(|| {
            chunks
                .iter()
                .filter(|c| c.as_str() != "[DONE]")
                .map(|c| serde_json::from_str::<Value>(c).map(|_| 1).unwrap_or(0))
                .sum::<usize>()
        })
    });
    group.bench_function("openai_decoder", |b| {
        b.iter(|| {
            let mut decoder = OpenAiDecoder::default();
            let mut events = 0;
            for chunk in &chunks {
                events += decoder.event("", chunk).unwrap().len();
            }
            events + decoder.end().unwrap().len()
        })
    });
    group.finish();

    let request = conversation();
    let mut group = c.benchmark_group("fit_150k_tokens_into_32k");
    group.sample_size(10);
    group.bench_function("floor_count_only", |b| {
        b.iter(|| count_request(&request, Encoding::Cl100k))
    });
    let budget = Budget::for_model("qwen2.5-coder:7b", Default::default());
    group.bench_function("fit", |b| {
        b.iter(|| {
            let mut r = request.clone();
            fit(&mut r, &budget).unwrap().tokens_after
        })
    });
    group.finish();

    let answer = format!(
        "{}\n\n```json\n{{\"name\": \"edit_file\", \"arguments\": {{\"path\": \"a.rs\", \"old\": \"{}\", \"new\": \"x\",}}}}\n```\n",
        "Some explanation of the change. ".repeat(200),
        "y".repeat(4000)
    );
    let mut group = c.benchmark_group("tool_text_10kb");
    group.bench_function("floor_serde_json_of_the_block", |b| {
        let start = answer.find('{').unwrap();
        let end = answer.rfind('}').unwrap();
        let block = answer[start..=end].replace(",}", "}");
        b.iter(|| serde_json::from_str::<Value>(&block).unwrap())
    });
    group.bench_function("parse_tool_text", |b| {
        b.iter(|| parse_tool_text(&answer, &["edit_file"]).calls.len())
    });
    group.finish();
}

criterion_group!(model, benches);
criterion_main!(model);
