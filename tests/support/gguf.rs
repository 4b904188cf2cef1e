//! A tiny GGUF model the tests build themselves: the `llama` architecture with random weights
//! (seeded, so every build is the same file), a byte-level BPE vocabulary of 256 bytes and three
//! ChatML control tokens, a ChatML template, and a 2,048-token window. It answers gibberish,
//! fast, through the real llama.cpp: enough to drive load → chat → stream → stop → cancel →
//! host killed → restarted without downloading weights. The same model with a pooling named
//! (`llama.pooling_type`, mean) is an embedding model to llama.cpp and to patchwise: random
//! vectors, through the real pooling, for the `/v1/embeddings` plumbing.

use std::path::Path;

/// Sizes of the tiny model.
const EMBD: usize = 64;
const HEADS: usize = 4;
const LAYERS: usize = 2;
const FF: usize = 128;
pub const CONTEXT: u32 = 2048;

/// The ChatML template the tiny model carries.
pub const TEMPLATE: &str = "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// Writes the tiny model to `path`.
pub fn write_tiny_model(path: &Path) {
    std::fs::write(path, tiny_model_bytes()).expect("write the tiny model");
}

/// Writes the tiny embedding model (the tiny model, mean-pooled) to `path`.
pub fn write_tiny_encoder(path: &Path) {
    std::fs::write(path, tiny_bytes(true)).expect("write the tiny encoder");
}

/// The tiny model's bytes.
pub fn tiny_model_bytes() -> Vec<u8> {
    tiny_bytes(false)
}

fn tiny_bytes(encoder: bool) -> Vec<u8> {
    let mut tokens: Vec<String> = byte_tokens();
    let specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
    tokens.extend(specials.iter().map(|s| s.to_string()));
    let vocab = tokens.len();
    let mut types = vec![1i32; 256];
    types.extend([3, 3, 3]);

    let mut kv = Kv::default();
    kv.string("general.architecture", "llama");
    kv.string("general.name", "patchwise tiny test model");
    kv.u32("general.alignment", 32);
    kv.u32("llama.context_length", CONTEXT);
    kv.u32("llama.embedding_length", EMBD as u32);
    kv.u32("llama.block_count", LAYERS as u32);
    kv.u32("llama.feed_forward_length", FF as u32);
    kv.u32("llama.attention.head_count", HEADS as u32);
    kv.u32("llama.attention.head_count_kv", HEADS as u32);
    kv.u32("llama.rope.dimension_count", (EMBD / HEADS) as u32);
    kv.f32("llama.attention.layer_norm_rms_epsilon", 1e-5);
    kv.u32("llama.vocab_size", vocab as u32);
    kv.string("tokenizer.ggml.model", "gpt2");
    kv.string("tokenizer.ggml.pre", "default");
    kv.strings("tokenizer.ggml.tokens", &tokens);
    kv.i32s("tokenizer.ggml.token_type", &types);
    kv.strings("tokenizer.ggml.merges", &[]);
    kv.u32("tokenizer.ggml.bos_token_id", 256);
    kv.u32("tokenizer.ggml.eos_token_id", 258);
    kv.bool("tokenizer.ggml.add_bos_token", false);
    kv.string("tokenizer.chat_template", TEMPLATE);
    if encoder {
        // LLAMA_POOLING_TYPE_MEAN, as sentence-transformers pools all-MiniLM-L6-v2.
        kv.u32("llama.pooling_type", 1);
    }

    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = |n: usize, scale: f32| -> Vec<f32> {
        (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                ((rng >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
            })
            .collect()
    };
    let ones = |n: usize| vec![1.0f32; n];
    let mut tensors: Vec<(String, Vec<u64>, Vec<f32>)> = Vec::new();
    tensors.push((
        "token_embd.weight".into(),
        vec![EMBD as u64, vocab as u64],
        random(EMBD * vocab, 1.0),
    ));
    for layer in 0..LAYERS {
        let name = |part: &str| format!("blk.{layer}.{part}.weight");
        tensors.push((name("attn_norm"), vec![EMBD as u64], ones(EMBD)));
        for part in ["attn_q", "attn_k", "attn_v", "attn_output"] {
            tensors.push((
                name(part),
                vec![EMBD as u64, EMBD as u64],
                random(EMBD * EMBD, 0.5),
            ));
        }
        tensors.push((name("ffn_norm"), vec![EMBD as u64], ones(EMBD)));
        tensors.push((
            name("ffn_gate"),
            vec![EMBD as u64, FF as u64],
            random(EMBD * FF, 0.5),
        ));
        tensors.push((
            name("ffn_up"),
            vec![EMBD as u64, FF as u64],
            random(EMBD * FF, 0.5),
        ));
        tensors.push((
            name("ffn_down"),
            vec![FF as u64, EMBD as u64],
            random(FF * EMBD, 0.5),
        ));
    }
    tensors.push(("output_norm.weight".into(), vec![EMBD as u64], ones(EMBD)));
    // The control tokens' output rows are zero and every other row leans positive, so greedy
    // decoding never picks one: answers run to max_tokens, which makes their length testable.
    let mut output = random(EMBD * vocab, 1.0);
    for (row, chunk) in output.chunks_mut(EMBD).enumerate() {
        if row >= 256 {
            chunk.iter_mut().for_each(|w| *w = 0.0);
        } else {
            chunk[0] = 4.0;
        }
    }
    tensors.push((
        "output.weight".into(),
        vec![EMBD as u64, vocab as u64],
        output,
    ));
    // Every token's first embedding value is positive, so the row leaning on it wins.
    if let Some(embd) = tensors.first_mut() {
        for chunk in embd.2.chunks_mut(EMBD) {
            chunk[0] = 1.0;
        }
    }

    let mut out = Vec::new();
    out.extend_from_slice(b"GGUF");
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(kv.count as u64).to_le_bytes());
    out.extend_from_slice(&kv.bytes);
    let mut offset = 0u64;
    let mut offsets = Vec::new();
    for (name, dims, data) in &tensors {
        put_string(&mut out, name);
        out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
        for d in dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&0u32.to_le_bytes()); // F32
        out.extend_from_slice(&offset.to_le_bytes());
        offsets.push(offset);
        offset += (data.len() * 4) as u64;
        offset = offset.div_ceil(32) * 32;
    }
    while out.len() % 32 != 0 {
        out.push(0);
    }
    let start = out.len();
    for ((_, _, data), at) in tensors.iter().zip(offsets) {
        out.resize(start + at as usize, 0);
        for value in data {
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
    while (out.len() - start) % 32 != 0 {
        out.push(0);
    }
    out
}

/// GPT-2's byte-to-character table: every byte as the character byte-level BPE writes it.
fn byte_tokens() -> Vec<String> {
    let printable = |b: u32| {
        (b'!' as u32..=b'~' as u32).contains(&b)
            || (0xA1..=0xAC).contains(&b)
            || (0xAE..=0xFF).contains(&b)
    };
    let mut extra = 0u32;
    (0u32..256)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).unwrap().to_string()
            } else {
                extra += 1;
                char::from_u32(255 + extra).unwrap().to_string()
            }
        })
        .collect()
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

#[derive(Default)]
struct Kv {
    bytes: Vec<u8>,
    count: usize,
}

impl Kv {
    fn key(&mut self, key: &str, kind: u32) {
        put_string(&mut self.bytes, key);
        self.bytes.extend_from_slice(&kind.to_le_bytes());
        self.count += 1;
    }
    fn u32(&mut self, key: &str, v: u32) {
        self.key(key, 4);
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    fn f32(&mut self, key: &str, v: f32) {
        self.key(key, 6);
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    fn bool(&mut self, key: &str, v: bool) {
        self.key(key, 7);
        self.bytes.push(v as u8);
    }
    fn string(&mut self, key: &str, v: &str) {
        self.key(key, 8);
        put_string(&mut self.bytes, v);
    }
    fn strings(&mut self, key: &str, values: &[String]) {
        self.key(key, 9);
        self.bytes.extend_from_slice(&8u32.to_le_bytes());
        self.bytes
            .extend_from_slice(&(values.len() as u64).to_le_bytes());
        for v in values {
            put_string(&mut self.bytes, v);
        }
    }
    fn i32s(&mut self, key: &str, values: &[i32]) {
        self.key(key, 9);
        self.bytes.extend_from_slice(&5u32.to_le_bytes());
        self.bytes
            .extend_from_slice(&(values.len() as u64).to_le_bytes());
        for v in values {
            self.bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
}
