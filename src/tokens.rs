//! Token counting shared by every layer that has to respect a model's context window
//! (prompt regions in `syntax/`, request budgets in `model/`).
//!
//! Counts come from tiktoken's BPE tables, compiled into the binary so they work offline, and
//! initialised lazily on first use (building a table costs tens of milliseconds). Local models
//! use their own tokenizers, so counts for them are estimates within a few percent — callers keep
//! a margin instead of trusting the last token. This module never does I/O and never panics.

use tiktoken_rs::CoreBPE;

/// Which BPE table to count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    /// GPT-4 / GPT-3.5 family; the default estimate for models we know nothing about.
    #[default]
    Cl100k,
    /// GPT-4o, GPT-4.1, GPT-5 and o-series models.
    O200k,
}

impl Encoding {
    /// The encoding that best approximates `model`'s tokenizer (a model name as the provider
    /// spells it, e.g. `gpt-4o-mini` or `qwen2.5-coder:7b`).
    pub fn for_model(model: &str) -> Encoding {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let o200k = [
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "o1",
            "o3",
            "o4",
            "chatgpt-4o",
            "codex",
        ];
        if o200k.iter().any(|prefix| name.starts_with(prefix)) {
            Encoding::O200k
        } else {
            Encoding::Cl100k
        }
    }

    fn bpe(self) -> &'static CoreBPE {
        match self {
            Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton(),
            Encoding::O200k => tiktoken_rs::o200k_base_singleton(),
        }
    }
}

/// Number of tokens in `text` under `encoding`. Special-token text such as `<|endoftext|>` is
/// counted as ordinary text, as a provider would see it in a user's file.
pub fn count_tokens(text: &str, encoding: Encoding) -> usize {
    if text.is_empty() {
        return 0;
    }
    encoding.bpe().encode_ordinary(text).len()
}

/// The longest prefix of `text` (ending on a char boundary, preferably at a line end) that
/// counts at most `max_tokens` tokens.
pub fn truncate_to_tokens(text: &str, max_tokens: usize, encoding: Encoding) -> &str {
    let bpe = encoding.bpe();
    let tokens = bpe.encode_ordinary(text);
    if tokens.len() <= max_tokens {
        return text;
    }
    let kept = &tokens[..max_tokens.min(tokens.len())];
    // Decoding a token prefix gives the byte length of the kept text; a token can end inside a
    // multi-byte character, so step back to a boundary.
    let mut len = bpe
        .decode_bytes(kept)
        .map(|b| b.len())
        .unwrap_or(0)
        .min(text.len());
    while len > 0 && !text.is_char_boundary(len) {
        len -= 1;
    }
    let prefix = &text[..len];
    match prefix.rfind('\n') {
        Some(nl) if nl > len / 2 => &text[..=nl],
        _ => prefix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_strings() {
        assert_eq!(count_tokens("", Encoding::Cl100k), 0);
        assert_eq!(count_tokens("hello world", Encoding::Cl100k), 2);
        assert_eq!(count_tokens("hello world", Encoding::O200k), 2);
        assert_eq!(count_tokens("<|endoftext|>", Encoding::Cl100k), 7);
    }

    #[test]
    fn picks_encoding_by_model_name() {
        assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200k);
        assert_eq!(Encoding::for_model("openai/gpt-5"), Encoding::O200k);
        assert_eq!(Encoding::for_model("qwen2.5-coder:7b"), Encoding::Cl100k);
        assert_eq!(Encoding::for_model("claude-sonnet-4-5"), Encoding::Cl100k);
    }

    #[test]
    fn truncation_respects_budget_and_char_boundaries() {
        let text = "fn main() {\n    println!(\"héllo wörld ✓\");\n}\n".repeat(50);
        for max in [0, 1, 5, 17, 100, 10_000] {
            let cut = truncate_to_tokens(&text, max, Encoding::Cl100k);
            assert!(count_tokens(cut, Encoding::Cl100k) <= max, "max {max}");
            assert!(text.starts_with(cut));
        }
        assert_eq!(truncate_to_tokens("short", 10, Encoding::Cl100k), "short");
    }
}
