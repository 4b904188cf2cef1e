//! A scripted fill-in-the-middle model: a local server on 127.0.0.1 that speaks the
//! `/v1/completions` SSE stream of llama.cpp's server (`data: {"choices":[{"text":…}]}`, then
//! `data: [DONE]`), for the completion tests of the server and of the real editors.
//!
//! Every prompt is answered with the one scripted answer, a word per event. A prompt holding
//! `SLOW` gets a stream that never ends, one chunk at a time until the client leaves, so a test
//! sees a superseded or cancelled request close its connection; one holding `LINES` gets a
//! never-ending stream of whole lines (with `BLANK`, it begins with a line end and a pause, as a
//! model does after `def f():`; with `READ`, its first token comes after half a second, as a
//! model's does after reading a long prompt).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

#[derive(Default)]
pub struct Seen {
    /// The request bodies, in arrival order.
    pub bodies: Vec<Value>,
    /// Slow streams whose client left.
    pub dropped: usize,
}

/// Starts the server; returns its base URL (`http://127.0.0.1:PORT/v1`, a provider's
/// `base_url`) and what it has been asked.
pub fn start_model(answer: &'static str) -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let shared = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = shared.clone();
            std::thread::spawn(move || serve(stream, answer, &seen));
        }
    });
    (url, seen)
}

fn serve(mut stream: TcpStream, answer: &str, seen: &Mutex<Seen>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    let prompt = body["prompt"].as_str().unwrap_or("").to_owned();
    let slow = prompt.contains("SLOW") || prompt.contains("LINES");
    seen.lock().unwrap().bodies.push(body);
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    let event = |text: &str| format!("data: {}\n\n", json!({"choices": [{"text": text}]}));
    if slow {
        if prompt.contains("READ") {
            std::thread::sleep(Duration::from_millis(500));
        }
        if prompt.contains("BLANK") {
            let _ = stream.write_all(event("\n    ").as_bytes());
            let _ = stream.flush();
            std::thread::sleep(Duration::from_millis(400));
            let _ = stream.write_all(event("v").as_bytes());
        }
        // One token every 20 ms until the client leaves (or a minute passes).
        let token = if prompt.contains("BLANK") {
            " = 1\n    v"
        } else if prompt.contains("LINES") {
            "v = 1\n    "
        } else {
            "x"
        };
        for _ in 0..3000 {
            if stream
                .write_all(event(token).as_bytes())
                .and_then(|_| stream.flush())
                .is_err()
            {
                seen.lock().unwrap().dropped += 1;
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        return;
    }
    for part in answer.split_inclusive(' ') {
        let _ = stream.write_all(event(part).as_bytes());
    }
    let _ = stream.write_all(b"data: [DONE]\n\n");
}

/// The hole the real editors' tests fill: the empty body of `norm1`, where the user types `a`
/// at the end of line 2 (0-based line 1, column 4); the model answers every request with the
/// body after that `a` and then the text after the cursor again (the server cuts it to the
/// block); the file after the suggestion is accepted.
pub mod norm1 {
    pub const ORIGINAL: &str = "def norm1(x, y):\n    \n\nprint(norm1(3, -4))\n";
    pub const ANSWER: &str =
        "x = abs(x)\n    ay = abs(y)\n    return ax + ay\n\nprint(norm1(3, -4))\n";
    pub const ACCEPTED: &str = "def norm1(x, y):\n    ax = abs(x)\n    ay = abs(y)\n    return ax + ay\n\nprint(norm1(3, -4))\n";
    /// The model's prompt after the typed `a` (Qwen2.5-Coder's fill-in-the-middle tokens).
    pub const PROMPT: &str = "<|fim_prefix|>def norm1(x, y):\n    a<|fim_suffix|>\n\nprint(norm1(3, -4))\n<|fim_middle|>";
}
