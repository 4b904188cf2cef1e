//! The model runtime inside the binary: llama.cpp (through `llama-cpp-2`, its own kernels) loads
//! one GGUF file and answers one prompt at a time, reusing the KV cache for the longest prefix a
//! prompt shares with what the cache already holds (the previous prompt and its answer).
//!
//! It runs only in the model host process (`patchwise model serve`, [`server`]), never inside a
//! language server, an MCP server or an ACP agent: an abort, a crash or an out-of-memory in C++
//! ends the host, and the next request starts a new one (docs/architecture.md, "The model
//! host"). Everything here happens on one thread that owns the model and its context; requests
//! reach it through a queue, and a request's cancel flag is read by llama.cpp's abort callback
//! between graph nodes, so a cancelled prompt stops within one operation, not one batch.
//!
//! An embedding model (a GGUF file that names a pooling, `GgufInfo::is_embedding_model`: a
//! sentence encoder such as all-MiniLM-L6-v2) is loaded with a context that pools each text's
//! tokens into one vector; it answers [`Runtime::embed`] and refuses prompts, and a chat model
//! the other way round. Research ranks passages by meaning with it (`research::meaning`).

pub mod server;
pub mod template;

use std::ffi::c_void;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc::UnboundedSender;

use crate::model::embedded::gguf;

/// What to load, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeSpec {
    /// The GGUF file.
    pub model: PathBuf,
    /// CPU threads for decoding and prompt evaluation; `None`: llama.cpp's default (the
    /// physical cores, at most 4… as llama.cpp chooses).
    pub threads: Option<u32>,
    /// The context window in tokens; `None`: the model's trained window, at most
    /// [`DEFAULT_CONTEXT`].
    pub context: Option<u32>,
    /// Layers offloaded to a GPU (0 on a CPU-only build).
    pub gpu_layers: u32,
}

/// The window used when none is configured: enough for patchwise's prompts, small enough for a
/// laptop's memory (a 7B model's KV cache at 8k tokens is ~0.5 GB).
pub use crate::model::embedded::DEFAULT_CONTEXT;

/// Tokens evaluated per `llama_decode` call while reading a prompt (llama.cpp's default).
const BATCH: usize = 512;

/// What the loaded model is.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    /// The file's stem, as `/v1/models` lists it.
    pub name: String,
    pub path: PathBuf,
    /// The context window in effect.
    pub context: u32,
    /// The window the model was trained with.
    pub train_context: u32,
    /// The Jinja chat template from the file's metadata (`tokenizer.chat_template`).
    pub chat_template: Option<String>,
    /// The text of the BOS and EOS tokens (templates refer to them).
    pub bos_token: String,
    pub eos_token: String,
    /// Fill-in-the-middle tokens as text, when the vocabulary has them.
    pub fim: Option<FimTokens>,
    /// An embedding model: the length of its vectors. `None`: a model that writes text.
    pub embedding: Option<usize>,
}

/// The model's own fill-in-the-middle markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FimTokens {
    pub prefix: String,
    pub suffix: String,
    pub middle: String,
}

/// One prompt to answer.
#[derive(Debug, Clone)]
pub struct Generation {
    /// The whole prompt as text; special tokens written in it (`<|im_start|>`) are parsed as
    /// such.
    pub prompt: String,
    /// `None`: until the model stops or the window is full.
    pub max_tokens: Option<u32>,
    /// 0: greedy (the most likely token every time).
    pub temperature: f32,
    pub top_p: f32,
    /// llama.cpp's penalty on the last 64 tokens (1: none, llama.cpp server's default;
    /// llama-cpp-python's server uses 1.1); frequency and presence penalties as OpenAI's.
    pub repeat_penalty: f32,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
    pub seed: u32,
    /// Strings that end the answer (not included in it).
    pub stop: Vec<String>,
    /// A GBNF grammar the answer must follow (a forced tool call's arguments), rooted at
    /// `root`.
    pub grammar: Option<String>,
}

/// Why an answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The model's end-of-generation token, or a stop string.
    Stop,
    /// `max_tokens`, or the context window is full.
    Length,
    /// The request's cancel flag was set (the client went away or gave up).
    Cancelled,
}

/// What one answer cost, and how fast it went.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AnswerStats {
    pub prompt_tokens: u32,
    /// Prompt tokens whose KV was already in the cache and not evaluated again.
    pub cached_tokens: u32,
    /// Prompt tokens evaluated, also when the answer was cancelled while the prompt was read.
    pub evaluated_tokens: u32,
    pub completion_tokens: u32,
    /// Evaluating the prompt's new tokens (the time to the first token, less sampling).
    pub prompt_ms: f64,
    /// Generating the answer after the first token's logits.
    pub generation_ms: f64,
}

/// Events of one answer, in order: text pieces, then exactly one `Done` or `Failed`.
#[derive(Debug, Clone, PartialEq)]
pub enum Emit {
    Text(String),
    Done { finish: Finish, stats: AnswerStats },
    Failed(RuntimeError),
}

/// Why a prompt could not be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    #[error(
        "the prompt has {prompt} tokens and the model's context window is {window}: shorten it, or raise the provider's `context`"
    )]
    ContextExceeded { prompt: usize, window: u32 },
    #[error("the prompt is empty")]
    EmptyPrompt,
    #[error("llama.cpp failed: {0}")]
    Llama(String),
    #[error(
        "{0} is an embedding model: it turns texts into vectors (/v1/embeddings) and writes no text; configure a chat or completion model for this"
    )]
    NotAGenerator(String),
    #[error(
        "{0} writes text and has no pooling to turn a text into one vector: serve an embedding model for /v1/embeddings (a GGUF file with `<arch>.pooling_type`, such as `patchwise model pull all-minilm-l6-v2`)"
    )]
    NotAnEncoder(String),
    #[error("input {index} is empty: there is nothing to embed")]
    EmptyInput { index: usize },
    #[error("cancelled")]
    Cancelled,
}

/// A request in the queue.
pub struct Job {
    pub generation: Generation,
    pub events: UnboundedSender<Emit>,
    /// Set by the server when the client disconnects or cancels; read between tokens and by
    /// llama.cpp's abort callback during a batch.
    pub cancel: Arc<AtomicBool>,
}

/// Texts to turn into vectors, in the queue with the prompts.
pub struct EmbedJob {
    pub texts: Vec<String>,
    pub reply: tokio::sync::oneshot::Sender<Result<Embedded, RuntimeError>>,
    /// Set when the client goes away; read between texts and by llama.cpp's abort callback.
    pub cancel: Arc<AtomicBool>,
}

/// The vectors of an [`EmbedJob`], one per text in order, each of unit length.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    pub vectors: Vec<Vec<f32>>,
    /// Tokens read, over all texts (after cutting).
    pub tokens: usize,
    /// How many texts were longer than the model's window and were cut to it (their vector is
    /// their beginning's, as sentence-transformers cuts a text to its model's length).
    pub cut: usize,
}

/// One unit of the runtime's queue.
enum Work {
    Answer(Job),
    Embed(EmbedJob),
}

/// The loaded model, answering jobs one at a time on its own thread.
pub struct Runtime {
    jobs: mpsc::Sender<Work>,
    /// What the runtime thread has done, for `/status`.
    record: Arc<Mutex<Record>>,
    pub model: LoadedModel,
    /// The loaded model, shared with the runtime thread, for counting a prompt's tokens before
    /// it is queued (llama.cpp's model is safe to read from several threads).
    weights: Arc<LlamaModel>,
}

/// What the runtime has answered: the count, and how the last answer ended.
#[derive(Debug, Clone, Default)]
pub struct Record {
    pub answered: u64,
    /// Prompt tokens evaluated over all answers that ended, cancelled ones too (what a
    /// client's requests cost the machine, for benches; an answer that failed is not counted).
    pub evaluated_tokens: u64,
    /// `None` before the first answer; `Err` for an answer that failed.
    pub last: Option<Result<(Finish, AnswerStats), RuntimeError>>,
    /// Texts turned into vectors (an embedding model's work; each text of a request counts).
    pub embedded_texts: u64,
}

/// Why the model did not load. Written for the user who must act on it.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    NotGguf(String),
    #[error("llama.cpp could not load {path}: {reason}")]
    Load { path: PathBuf, reason: String },
    #[error("llama.cpp could not make a context of {context} tokens for {path}: {reason}")]
    Context {
        path: PathBuf,
        context: u32,
        reason: String,
    },
}

impl Runtime {
    /// Loads the model on a new thread and returns once it is ready to answer (or failed to
    /// load). The file is checked as GGUF first, so a wrong file is a clear error rather than
    /// whatever llama.cpp makes of it.
    pub fn start(spec: RuntimeSpec) -> Result<Runtime, LoadError> {
        let info =
            gguf::read_info(&spec.model).map_err(|err| LoadError::NotGguf(err.to_string()))?;
        let embedding = info.is_embedding_model();
        let (ready_tx, ready_rx) = mpsc::channel();
        let (jobs_tx, jobs_rx) = mpsc::channel::<Work>();
        let record = Arc::new(Mutex::new(Record::default()));
        let written = record.clone();
        std::thread::Builder::new()
            .name("llama".into())
            .spawn(move || run(spec, embedding, jobs_rx, ready_tx, written))
            .map_err(|err| LoadError::Load {
                path: PathBuf::new(),
                reason: format!("cannot start the runtime thread: {err}"),
            })?;
        let (model, weights) = ready_rx.recv().map_err(|_| LoadError::Load {
            path: PathBuf::new(),
            reason: "the runtime thread ended while loading".into(),
        })??;
        Ok(Runtime {
            jobs: jobs_tx,
            record,
            model,
            weights,
        })
    }

    /// What has been answered so far.
    pub fn record(&self) -> Record {
        self.record.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// How many tokens `prompt` is, as the runtime will read it.
    pub fn count_tokens(&self, prompt: &str) -> usize {
        self.weights
            .vocab()
            .tokenize(prompt.as_bytes(), true, true)
            .len()
    }

    /// Queues `job`. Jobs run in the order they were queued, one at a time; a job whose cancel
    /// flag is set by the time its turn comes is skipped (it ends `Cancelled` with no text).
    pub fn submit(&self, job: Job) -> Result<(), Job> {
        self.jobs
            .send(Work::Answer(job))
            .map_err(|err| match err.0 {
                Work::Answer(job) => job,
                Work::Embed(_) => unreachable!("an answer was sent"),
            })
    }

    /// Queues texts to turn into vectors, in turn with the prompts; the vectors (or why there
    /// are none) come through `job.reply`. Fails when the runtime thread has ended.
    pub fn embed(&self, job: EmbedJob) -> Result<(), EmbedJob> {
        self.jobs.send(Work::Embed(job)).map_err(|err| match err.0 {
            Work::Embed(job) => job,
            Work::Answer(_) => unreachable!("an embedding was sent"),
        })
    }
}

/// The abort flag llama.cpp's callback reads: the current job's cancel flag.
struct AbortSlot(Mutex<Arc<AtomicBool>>);

extern "C" fn abort_requested(data: *mut c_void) -> bool {
    // SAFETY: `data` is the `AbortSlot` that `run` keeps alive (boxed, never moved) for as long
    // as the context that calls this exists.
    let slot = unsafe { &*(data as *const AbortSlot) };
    slot.0
        .lock()
        .map(|flag| flag.load(Ordering::Relaxed))
        .unwrap_or(false)
}

/// `params` with llama.cpp's abort callback set to read `slot`. llama-cpp-2 exposes no setter
/// for the callback, so the wrapper (one field: the C struct) is converted to the C struct and
/// back; the size check below fails the build if the wrapper ever gains a field.
fn with_abort_callback(params: LlamaContextParams, slot: &AbortSlot) -> LlamaContextParams {
    const _: () = assert!(
        std::mem::size_of::<LlamaContextParams>()
            == std::mem::size_of::<llama_cpp_sys_2::llama_context_params>()
    );
    // SAFETY: `LlamaContextParams` is a struct of exactly one field of type
    // `llama_context_params` (same size, checked above), so both have the same layout.
    let mut raw: llama_cpp_sys_2::llama_context_params = unsafe { std::mem::transmute(params) };
    raw.abort_callback = Some(abort_requested);
    raw.abort_callback_data = slot as *const AbortSlot as *mut c_void;
    // SAFETY: as above, in the other direction.
    unsafe { std::mem::transmute(raw) }
}

fn run(
    spec: RuntimeSpec,
    embedding: bool,
    jobs: mpsc::Receiver<Work>,
    ready: mpsc::Sender<Result<(LoadedModel, Arc<LlamaModel>), LoadError>>,
    record: Arc<Mutex<Record>>,
) {
    let backend = match LlamaBackend::init() {
        Ok(backend) => backend,
        Err(err) => {
            let _ = ready.send(Err(LoadError::Load {
                path: spec.model.clone(),
                reason: err.to_string(),
            }));
            return;
        }
    };
    llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
    let params = LlamaModelParams::default().with_n_gpu_layers(spec.gpu_layers);
    let model = match LlamaModel::load_from_file(&backend, &spec.model, &params) {
        Ok(model) => Arc::new(model),
        Err(err) => {
            let _ = ready.send(Err(LoadError::Load {
                path: spec.model.clone(),
                reason: format!(
                    "{err} (a truncated or corrupt file, an architecture this llama.cpp does not know, or not enough memory)"
                ),
            }));
            return;
        }
    };
    let train_context = model.n_ctx_train();
    let context = spec
        .context
        .unwrap_or_else(|| train_context.clamp(1, DEFAULT_CONTEXT));
    let slot = Box::new(AbortSlot(Mutex::new(Arc::new(AtomicBool::new(false)))));
    let mut ctx_params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(context))
        .with_n_batch(BATCH as u32)
        // Off, as in llama-cpp-python's server: on a CPU it is no faster at these lengths, and
        // with it the greedy answers drift from that server's on near-ties.
        .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED);
    if embedding {
        // A text is read in one batch (an encoder's attention is not causal: llama.cpp cannot
        // split it), with every token an output for the pooling.
        ctx_params = ctx_params
            .with_embeddings(true)
            .with_n_batch(context)
            .with_n_ubatch(context)
            .with_n_seq_max(1);
    }
    if let Some(threads) = spec.threads {
        ctx_params = ctx_params
            .with_n_threads(threads as i32)
            .with_n_threads_batch(threads as i32);
    }
    let ctx_params = with_abort_callback(ctx_params, &slot);
    let mut ctx = match model.new_context(&backend, ctx_params) {
        Ok(ctx) => ctx,
        Err(err) => {
            let _ = ready.send(Err(LoadError::Context {
                path: spec.model.clone(),
                context,
                reason: format!("{err} (not enough memory for the KV cache?)"),
            }));
            return;
        }
    };
    let mut loaded = describe(&model, &spec.model, ctx.n_ctx());
    loaded.embedding = embedding.then(|| model.n_embd_out().max(0) as usize);
    tracing::info!(
        model = %loaded.name,
        context = loaded.context,
        train_context = loaded.train_context,
        "model loaded"
    );
    if ready.send(Ok((loaded, model.clone()))).is_err() {
        return;
    }
    let mut cache: Vec<LlamaToken> = Vec::new();
    while let Ok(work) = jobs.recv() {
        let job = match work {
            Work::Answer(job) => job,
            Work::Embed(job) => {
                if let Ok(mut current) = slot.0.lock() {
                    *current = job.cancel.clone();
                }
                let outcome = if embedding {
                    embed(&model, &mut ctx, &job)
                } else {
                    Err(RuntimeError::NotAnEncoder(spec.model.display().to_string()))
                };
                if let (Ok(mut record), Ok(done)) = (record.lock(), &outcome) {
                    record.embedded_texts += done.vectors.len() as u64;
                }
                let _ = job.reply.send(outcome);
                continue;
            }
        };
        let outcome = if job.cancel.load(Ordering::Relaxed) {
            Ok((Finish::Cancelled, AnswerStats::default()))
        } else {
            if let Ok(mut current) = slot.0.lock() {
                *current = job.cancel.clone();
            }
            if embedding {
                Err(RuntimeError::NotAGenerator(
                    spec.model.display().to_string(),
                ))
            } else {
                answer(&model, &mut ctx, &mut cache, &job)
            }
        };
        if let Ok(mut record) = record.lock() {
            record.answered += 1;
            if let Ok((_, stats)) = &outcome {
                record.evaluated_tokens += u64::from(stats.evaluated_tokens);
            }
            record.last = Some(outcome.clone());
        }
        let _ = job.events.send(match outcome {
            Ok((finish, stats)) => Emit::Done { finish, stats },
            Err(err) => Emit::Failed(err),
        });
    }
    // The context borrows the model and the slot; both outlive it here.
    drop(ctx);
    drop(slot);
}

fn describe(model: &LlamaModel, path: &Path, context: u32) -> LoadedModel {
    let vocab = model.vocab();
    let text = |token: LlamaToken| -> String {
        String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)).into_owned()
    };
    let fim = [vocab.fim_pre(), vocab.fim_suf(), vocab.fim_mid()];
    let fim = fim.iter().all(|t| t.0 >= 0).then(|| FimTokens {
        prefix: text(fim[0]),
        suffix: text(fim[1]),
        middle: text(fim[2]),
    });
    let bos = vocab.bos();
    let eos = vocab.eos();
    LoadedModel {
        name: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into()),
        path: path.to_path_buf(),
        context,
        train_context: model.n_ctx_train(),
        chat_template: model
            .meta_val_str("tokenizer.chat_template")
            .ok()
            .filter(|t| !t.trim().is_empty()),
        bos_token: if bos.0 >= 0 { text(bos) } else { String::new() },
        eos_token: if eos.0 >= 0 { text(eos) } else { String::new() },
        fim,
        embedding: None,
    }
}

/// Turns each text of `job` into one vector: its tokens (with the model's own markers, a BERT
/// model's `[CLS]` … `[SEP]`) read in one batch, pooled as the model's file says, scaled to unit
/// length. A text longer than the window is cut to it, keeping its closing marker.
fn embed(
    model: &LlamaModel,
    ctx: &mut LlamaContext<'_>,
    job: &EmbedJob,
) -> Result<Embedded, RuntimeError> {
    let vocab = model.vocab();
    let window = ctx.n_batch().min(ctx.n_ubatch()).min(ctx.n_ctx()) as usize;
    let mut batch = LlamaBatch::new(window, 1);
    let mut done = Embedded {
        vectors: Vec::with_capacity(job.texts.len()),
        tokens: 0,
        cut: 0,
    };
    for (index, text) in job.texts.iter().enumerate() {
        if job.cancel.load(Ordering::Relaxed) {
            return Err(RuntimeError::Cancelled);
        }
        let mut tokens = vocab.tokenize(text.as_bytes(), true, false);
        if text.trim().is_empty() || tokens.is_empty() {
            return Err(RuntimeError::EmptyInput { index });
        }
        if tokens.len() > window {
            let last = tokens[tokens.len() - 1];
            tokens.truncate(window);
            if vocab.is_eog(last) || last == vocab.sep() {
                tokens[window - 1] = last;
            }
            done.cut += 1;
        }
        batch.clear();
        batch
            .add_sequence(&tokens, 0, true)
            .map_err(|err| RuntimeError::Llama(err.to_string()))?;
        ctx.clear_kv_cache();
        if let Err(err) = ctx.decode(&mut batch) {
            if job.cancel.load(Ordering::Relaxed) {
                return Err(RuntimeError::Cancelled);
            }
            return Err(RuntimeError::Llama(err.to_string()));
        }
        let pooled = ctx
            .embeddings_seq_ith(0)
            .map_err(|err| RuntimeError::Llama(format!("no pooled vector: {err}")))?;
        done.vectors.push(unit(pooled).ok_or_else(|| {
            RuntimeError::Llama(format!(
                "the vector of input {index} holds a number that is not finite, or only zeros"
            ))
        })?);
        done.tokens += tokens.len();
    }
    Ok(done)
}

/// `v` scaled to unit length; `None` when it holds a non-finite number or is all zeros.
pub fn unit(v: &[f32]) -> Option<Vec<f32>> {
    if v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    (norm > 0.0).then(|| v.iter().map(|x| (f64::from(*x) / norm) as f32).collect())
}

/// Answers one job: reuses the cached prefix, evaluates the rest of the prompt, samples until
/// a stop, and sends the text as it becomes final (a piece that may begin a stop string, or
/// half a UTF-8 character, is held back until it is known).
fn answer(
    model: &LlamaModel,
    ctx: &mut LlamaContext<'_>,
    cache: &mut Vec<LlamaToken>,
    job: &Job,
) -> Result<(Finish, AnswerStats), RuntimeError> {
    let generation = &job.generation;
    let vocab = model.vocab();
    let tokens = vocab.tokenize(generation.prompt.as_bytes(), true, true);
    if tokens.is_empty() {
        return Err(RuntimeError::EmptyPrompt);
    }
    let window = ctx.n_ctx();
    if tokens.len() >= window as usize {
        return Err(RuntimeError::ContextExceeded {
            prompt: tokens.len(),
            window,
        });
    }
    let mut stats = AnswerStats {
        prompt_tokens: tokens.len() as u32,
        ..AnswerStats::default()
    };
    let started = Instant::now();

    // The longest prefix already in the cache stays; at least the last prompt token is
    // evaluated again, for its logits.
    let mut keep = common_prefix(cache, &tokens).min(tokens.len() - 1);
    if ctx.kv_cache_seq_rm(0, Some(keep as u32), None).is_err() {
        // A cache that cannot drop a partial sequence (recurrent models) starts over.
        ctx.clear_kv_cache();
        keep = 0;
    }
    cache.truncate(keep);
    stats.cached_tokens = keep as u32;

    let cancelled = || job.cancel.load(Ordering::Relaxed);
    let mut batch = LlamaBatch::new(BATCH, 1);
    let rest = &tokens[keep..];
    for (index, chunk) in rest.chunks(BATCH).enumerate() {
        if cancelled() {
            return Ok((Finish::Cancelled, stats));
        }
        batch.clear();
        let last_chunk = (index + 1) * BATCH >= rest.len();
        for (i, token) in chunk.iter().enumerate() {
            let logits = last_chunk && i + 1 == chunk.len();
            batch
                .add(*token, (cache.len() + i) as i32, &[0], logits)
                .map_err(|err| RuntimeError::Llama(err.to_string()))?;
        }
        if let Err(err) = ctx.decode(&mut batch) {
            forget_after(ctx, cache);
            if cancelled() {
                return Ok((Finish::Cancelled, stats));
            }
            return Err(RuntimeError::Llama(err.to_string()));
        }
        cache.extend_from_slice(chunk);
        stats.evaluated_tokens += chunk.len() as u32;
    }
    stats.prompt_ms = started.elapsed().as_secs_f64() * 1000.0;

    let mut sampler = sampler_for(model, generation)?;
    let mut text = PendingText::new(&generation.stop);
    let generating = Instant::now();
    let mut logits_at = batch.n_tokens() - 1;
    let finish = loop {
        if cancelled() {
            break Finish::Cancelled;
        }
        // `sample` also accepts the token into the samplers' state (grammar, penalties).
        let token = sampler.sample(ctx, logits_at);
        if vocab.is_eog(token) {
            break Finish::Stop;
        }
        stats.completion_tokens += 1;
        let piece = vocab.token_to_piece(token, false, None);
        let (ready, stopped) = text.push(&piece);
        if !ready.is_empty() && job.events.send(Emit::Text(ready)).is_err() {
            break Finish::Cancelled;
        }
        if stopped {
            break Finish::Stop;
        }
        if generation
            .max_tokens
            .is_some_and(|max| stats.completion_tokens >= max)
            || cache.len() + 1 >= window as usize
        {
            break Finish::Length;
        }
        batch.clear();
        batch
            .add(token, cache.len() as i32, &[0], true)
            .map_err(|err| RuntimeError::Llama(err.to_string()))?;
        if let Err(err) = ctx.decode(&mut batch) {
            forget_after(ctx, cache);
            if cancelled() {
                break Finish::Cancelled;
            }
            return Err(RuntimeError::Llama(err.to_string()));
        }
        cache.push(token);
        logits_at = 0;
    };
    let rest = text.finish(finish != Finish::Stop);
    if !rest.is_empty() {
        let _ = job.events.send(Emit::Text(rest));
    }
    stats.generation_ms = generating.elapsed().as_secs_f64() * 1000.0;
    Ok((finish, stats))
}

/// After a failed or aborted decode the KV cache may hold part of the batch: drop everything
/// past what `cache` records as evaluated.
fn forget_after(ctx: &mut LlamaContext<'_>, cache: &mut Vec<LlamaToken>) {
    if ctx
        .kv_cache_seq_rm(0, Some(cache.len() as u32), None)
        .is_err()
    {
        ctx.clear_kv_cache();
        cache.clear();
    }
}

fn sampler_for(model: &LlamaModel, generation: &Generation) -> Result<LlamaSampler, RuntimeError> {
    let mut chain = Vec::new();
    if generation.repeat_penalty != 1.0
        || generation.frequency_penalty != 0.0
        || generation.presence_penalty != 0.0
    {
        chain.push(LlamaSampler::penalties(
            model.n_vocab(),
            64,
            generation.repeat_penalty,
            generation.frequency_penalty,
            generation.presence_penalty,
        ));
    }
    if let Some(grammar) = &generation.grammar {
        chain.push(
            LlamaSampler::grammar(model, grammar, "root").map_err(|err| {
                RuntimeError::Llama(format!("the grammar for the forced tool call: {err}"))
            })?,
        );
    }
    if generation.temperature <= 0.0 {
        chain.push(LlamaSampler::greedy());
    } else {
        chain.extend([
            LlamaSampler::top_k(40),
            LlamaSampler::top_p(generation.top_p.clamp(0.0, 1.0), 1),
            LlamaSampler::min_p(0.05, 1),
            LlamaSampler::temp(generation.temperature),
            LlamaSampler::dist(generation.seed),
        ]);
    }
    Ok(LlamaSampler::chain_simple(chain))
}

/// The GBNF grammar of a JSON value following `schema` (llama.cpp's own converter).
pub fn grammar_for_schema(schema: &serde_json::Value) -> Result<String, String> {
    llama_cpp_2::json_schema_to_grammar(&schema.to_string())
        .map_err(|err| format!("cannot turn the tool's parameters into a grammar: {err}"))
}

/// How many tokens two sequences share from the start.
pub fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The answer's text as tokens arrive: bytes become text only as whole UTF-8 characters, and
/// text that could still turn out to begin a stop string is held back.
pub struct PendingText<'a> {
    stops: &'a [String],
    bytes: Vec<u8>,
    /// Decoded, not yet sent.
    held: String,
}

impl<'a> PendingText<'a> {
    pub fn new(stops: &'a [String]) -> PendingText<'a> {
        PendingText {
            stops,
            bytes: Vec::new(),
            held: String::new(),
        }
    }

    /// Adds a token's bytes; returns the text now safe to send, and whether a stop string was
    /// reached (the text before it is returned, the stop string and anything after are not).
    pub fn push(&mut self, piece: &[u8]) -> (String, bool) {
        self.bytes.extend_from_slice(piece);
        let valid = match std::str::from_utf8(&self.bytes) {
            Ok(_) => self.bytes.len(),
            Err(err) if err.error_len().is_some() => self.bytes.len(),
            Err(err) => err.valid_up_to(),
        };
        let decoded: Vec<u8> = self.bytes.drain(..valid).collect();
        self.held.push_str(&String::from_utf8_lossy(&decoded));
        if let Some(at) = self
            .stops
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| self.held.find(s.as_str()))
            .min()
        {
            let before = self.held[..at].to_owned();
            self.held.clear();
            return (before, true);
        }
        let hold = self
            .stops
            .iter()
            .map(|stop| partial_suffix(&self.held, stop))
            .max()
            .unwrap_or(0);
        let cut = self.held.len() - hold;
        let ready = self.held[..cut].to_owned();
        self.held.drain(..cut);
        (ready, false)
    }

    /// What is left when the answer ends: the held text (unless it ended at a stop string,
    /// `flush_held`), and half a character as U+FFFD.
    pub fn finish(&mut self, flush_held: bool) -> String {
        let mut rest = if flush_held {
            std::mem::take(&mut self.held)
        } else {
            String::new()
        };
        if !self.bytes.is_empty() {
            rest.push_str(&String::from_utf8_lossy(&self.bytes));
            self.bytes.clear();
        }
        rest
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `stop`, at a
/// character boundary.
fn partial_suffix(text: &str, stop: &str) -> usize {
    (1..stop.len().min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n)
                && stop.is_char_boundary(n)
                && text.ends_with(&stop[..n])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(stops: &[&str], pieces: &[&[u8]]) -> (Vec<String>, bool, String) {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut pending = PendingText::new(&stops);
        let mut sent = Vec::new();
        let mut stopped = false;
        for piece in pieces {
            let (ready, stop) = pending.push(piece);
            sent.push(ready);
            if stop {
                stopped = true;
                break;
            }
        }
        let rest = pending.finish(!stopped);
        (sent, stopped, rest)
    }

    #[test]
    fn a_stop_string_split_over_tokens_is_held_back_and_cut() {
        let (sent, stopped, rest) = feed(&["</s>"], &[b"fn main", b"() </", b"s> tail"]);
        assert_eq!(sent, vec!["fn main", "() ", ""]);
        assert!(stopped);
        assert_eq!(rest, "");
    }

    #[test]
    fn held_text_that_was_not_a_stop_is_sent() {
        let (sent, stopped, rest) = feed(&["</s>"], &[b"a </", b"b"]);
        assert_eq!(sent, vec!["a ", "</b"]);
        assert!(!stopped);
        assert_eq!(rest, "");
        let (sent, _, rest) = feed(&["</s>"], &[b"a </"]);
        assert_eq!(sent, vec!["a "]);
        assert_eq!(rest, "</", "an answer that ends on a partial stop keeps it");
    }

    #[test]
    fn a_character_split_over_tokens_is_sent_whole() {
        let euro = "€".as_bytes();
        let (sent, _, rest) = feed(&[], &[&euro[..1], &euro[1..], b"!"]);
        assert_eq!(sent, vec!["", "€", "!"]);
        assert_eq!(rest, "");
        let (_, _, rest) = feed(&[], &[&euro[..2]]);
        assert_eq!(
            rest, "\u{FFFD}",
            "half a character at the end is marked, never dropped"
        );
        let (sent, _, _) = feed(&[], &[b"\xff ok"]);
        assert_eq!(sent, vec!["\u{FFFD} ok"]);
    }

    #[test]
    fn a_vector_is_scaled_to_unit_length_and_a_broken_one_refused() {
        assert_eq!(unit(&[3.0, 4.0]), Some(vec![0.6, 0.8]));
        assert_eq!(unit(&[0.0, 0.0]), None);
        assert_eq!(unit(&[1.0, f32::NAN]), None);
    }

    #[test]
    fn the_common_prefix_counts_equal_leading_tokens() {
        let t = |v: &[i32]| v.iter().map(|&i| LlamaToken(i)).collect::<Vec<_>>();
        assert_eq!(common_prefix(&t(&[1, 2, 3]), &t(&[1, 2, 4, 5])), 2);
        assert_eq!(common_prefix(&t(&[]), &t(&[1])), 0);
        assert_eq!(common_prefix(&t(&[1, 2]), &t(&[1, 2])), 2);
    }
}
