//! Asking again, differently. Runs ask at temperature 0 (`[edit] temperature`), which makes a
//! small model's edits markedly more reliable — and makes it answer the same request with the
//! same text. When a step's attempt ends and the next one starts from the same clean prompt, or
//! a feedback message comes back word for word, the model is asked something it has already
//! answered: at temperature 0 it answers it the same way again, and the call is wasted (the
//! develop bench, py-pangram: three identical wrong answers in a row, 40 s each). The tests or
//! the check are the oracle in every loop that asks again, so a different sample is what a
//! repeat should buy.
//!
//! The rule: a request whose messages were already sent to the same model in this run, or the
//! first request after an answer the model had already given word for word, goes out at
//! [`RESAMPLE_TEMPERATURE`] (or the configured temperature when that is higher). Everything
//! else keeps the configured temperature.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::model::{ChatResponse, Message};

/// The temperature of a request the model has answered before (enough for another answer from
/// a 1.5B model, low enough that it stays on the request).
pub(crate) const RESAMPLE_TEMPERATURE: f32 = 0.7;

/// What a run has asked and been answered, to tell a repeat.
#[derive(Debug, Default)]
pub(crate) struct Resample {
    asked: HashSet<u64>,
    answers: HashSet<u64>,
    /// The last answer repeated an earlier one: the next request is sampled.
    repeated: bool,
}

impl Resample {
    /// The temperature to send `messages` to `model` at.
    pub fn temperature(
        &mut self,
        model: &str,
        messages: &[Message],
        configured: Option<f32>,
    ) -> Option<f32> {
        let key = fingerprint(model, &serde_json::to_string(messages).unwrap_or_default());
        let asked_before = !self.asked.insert(key);
        let after_repeat = std::mem::take(&mut self.repeated);
        if (asked_before || after_repeat) && configured.unwrap_or(0.0) < RESAMPLE_TEMPERATURE {
            Some(RESAMPLE_TEMPERATURE)
        } else {
            configured
        }
    }

    /// Notes the text of `model`'s answer (its text and tool calls as one string).
    pub fn answered(&mut self, model: &str, answer: &str) {
        if answer.trim().is_empty() {
            return;
        }
        if !self.answers.insert(fingerprint(model, answer)) {
            self.repeated = true;
        }
    }
}

/// An answer as [`Resample::answered`] compares it: its text and its tool calls' names and
/// arguments (not their ids, which a provider or the text fallback makes up per answer).
pub(crate) fn answer_key(r: &ChatResponse) -> String {
    let mut key = r.text.clone();
    for call in &r.tool_calls {
        key.push('\n');
        key.push_str(&call.name);
        key.push(' ');
        key.push_str(&call.arguments.to_string());
    }
    key
}

fn fingerprint(model: &str, text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    model.hash(&mut h);
    text.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_asked_again_is_sampled() {
        let mut r = Resample::default();
        let m = vec![Message::system("s"), Message::user("fix pangram.py")];
        assert_eq!(r.temperature("qwen", &m, Some(0.0)), Some(0.0));
        assert_eq!(
            r.temperature("qwen", &m, Some(0.0)),
            Some(RESAMPLE_TEMPERATURE)
        );
        // Another model has not answered it yet.
        assert_eq!(r.temperature("big", &m, Some(0.0)), Some(0.0));
        // A higher configured temperature is kept.
        assert_eq!(r.temperature("qwen", &m, Some(1.0)), Some(1.0));
    }

    #[test]
    fn the_request_after_a_repeated_answer_is_sampled() {
        let mut r = Resample::default();
        r.answered("qwen", "pangram.py\n```python\nreturn True\n```");
        let first = vec![Message::user("one")];
        assert_eq!(r.temperature("qwen", &first, None), None);
        r.answered("qwen", "pangram.py\n```python\nreturn True\n```");
        let second = vec![Message::user("two")];
        assert_eq!(
            r.temperature("qwen", &second, None),
            Some(RESAMPLE_TEMPERATURE)
        );
        // Only the one request after the repeat.
        assert_eq!(r.temperature("qwen", &[Message::user("three")], None), None);
        // An empty answer is no repeat.
        r.answered("qwen", "");
        r.answered("qwen", " ");
        assert_eq!(r.temperature("qwen", &[Message::user("four")], None), None);
    }
}
