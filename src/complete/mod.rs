//! Completion as you type: a suggestion for the text at the cursor from a fill-in-the-middle
//! model, for `textDocument/inlineCompletion`.
//!
//! One [`Completer`] per server. A request goes: the language turned off → nothing; the cache
//! of recent suggestions (typing into a shown one narrows it, no model call); a cursor in
//! prose (a comment, a docstring, a string begun on its line; not the code they show) gets
//! nothing unless the user invoked it; an automatic request waits out
//! the debounce; then the `completion` role's provider ([`provider`]) is asked with the prompt
//! [`context`] gathers (with the places edited lately, [`recent`]) and [`fim`] lays out, and its answer is shaped ([`shape`]). Each request
//! supersedes the one before it: the earlier one's wait or model call is dropped at once, which
//! closes its HTTP request and stops the provider's decoding. Speaks byte offsets and plain
//! text; never protocol types (`docs/architecture.md`).

pub mod cache;
pub mod context;
pub mod fim;
pub mod provider;
pub mod recent;
pub mod shape;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::model::ModelError;
use crate::syntax::{Language, SyntaxTree};
pub use cache::SuggestionCache;
pub use context::OtherDocument;
pub use provider::{FimAnswer, FimProvider, FimRequest};
pub use recent::{EditedChunk, RecentEdits};

/// One request for a suggestion.
#[derive(Debug, Clone)]
pub struct CompletionRequest {
    /// The file's path as the prompt names it (relative to the workspace when it can be).
    pub path: String,
    pub text: String,
    /// The cursor, a byte offset into `text`.
    pub offset: usize,
    /// The LSP language id.
    pub language_id: String,
    /// The user asked (else it came while typing).
    pub invoked: bool,
    /// The other open documents.
    pub others: Vec<OtherDocument>,
}

/// A suggestion to insert at the cursor.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    pub text: String,
    /// Narrowed from a recent suggestion; no model was asked.
    pub from_cache: bool,
    /// Prompt tokens the provider evaluated, when it says.
    pub evaluated_tokens: Option<u64>,
}

/// The server's completion state: recent suggestions, the request in flight, the provider.
#[derive(Default)]
pub struct Completer {
    cache: Mutex<SuggestionCache>,
    /// The places the user edited lately, shown to the model as other files' chunks.
    recent: Mutex<RecentEdits>,
    /// Where the last prompt's chunk of later lines started: its file, and bytes from the end.
    later: Mutex<Option<(String, usize)>>,
    current: Mutex<Option<CancellationToken>>,
    /// The provider chosen for a configuration (a reloaded configuration is a new `Arc`).
    provider: tokio::sync::Mutex<Option<Chosen>>,
}

/// A provider and the configuration it was chosen for.
type Chosen = (Arc<Config>, Arc<dyn FimProvider>);

impl Completer {
    /// Stops the request in flight (its wait or its model call) and returns the token of a new
    /// one. Called before the new request's first `.await`, so requests supersede each other
    /// in the order they arrived.
    pub fn begin(&self) -> CancellationToken {
        let token = CancellationToken::new();
        let previous = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(token.clone());
        if let Some(previous) = previous {
            previous.cancel();
        }
        token
    }

    /// The suggestion for `request`; `Ok(None)` when there is none, it is turned off, or a
    /// later request superseded it (`cancel`, from [`Completer::begin`]).
    pub async fn suggest(
        &self,
        config: &Arc<Config>,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> Result<Option<Suggestion>, ModelError> {
        // The keystroke, as far as the server can tell: what `predict_ms` counts from.
        let asked_at = Instant::now();
        let section = &config.completion;
        let turned_off = section.languages.get(&request.language_id) == Some(&false);
        if turned_off || (!request.invoked && !section.enabled_for(&request.language_id)) {
            return Ok(None);
        }
        let offset = context::floor_boundary(&request.text, request.offset);
        let (before, after) = request.text.split_at(offset);
        let rest_of_line = after.split('\n').next().unwrap_or("");
        if let Some(text) = self.cache().lookup(&request.path, before, rest_of_line) {
            return Ok(Some(Suggestion {
                text,
                from_cache: true,
                evaluated_tokens: Some(0),
            }));
        }
        let mid_line = !rest_of_line.trim().is_empty();
        let language = Language::detect(Some(&request.language_id), Some(&request.path));
        // One parse of the document serves the prose check and the shaping (which
        // uses it when the cursor ends its line).
        let tree = if !request.invoked || !mid_line {
            SyntaxTree::parse(&request.text, language)
        } else {
            SyntaxTree::text(language)
        };
        if !request.invoked {
            if shape::in_prose(&tree, &request.text, offset) {
                return Ok(None);
            }
            let debounce = Duration::from_millis(section.debounce_ms);
            tokio::select! {
                _ = cancel.cancelled() => return Ok(None),
                _ = tokio::time::sleep(debounce) => {}
            }
        }
        let provider = tokio::select! {
            _ = cancel.cancelled() => return Ok(None),
            provider = self.provider(config) => provider?,
        };
        let budget = context::PromptBudget {
            prefix_tokens: section.context_tokens as usize,
            suffix_tokens: section.suffix_tokens as usize,
            later_tokens: section.later_tokens as usize,
            extra_tokens: section.extra_context_tokens as usize,
        };
        let one_line = mid_line || !section.multi_line;
        let input = {
            let mut later = self.later.lock().unwrap_or_else(PoisonError::into_inner);
            let previous = later
                .as_ref()
                .filter(|(path, _)| *path == request.path)
                .map(|&(_, from_end)| from_end);
            let (input, from_end) = context::gather(
                &request.path,
                &request.text,
                offset,
                &request.others,
                &self.recent.lock().unwrap_or_else(PoisonError::into_inner),
                previous,
                budget,
            );
            *later = from_end.map(|n| (request.path.clone(), n));
            input
        };
        let fim_request = FimRequest {
            input,
            max_tokens: section.max_tokens,
            one_line,
            write_until: (!request.invoked && !one_line && section.predict_ms > 0)
                .then(|| asked_at + Duration::from_millis(section.predict_ms)),
        };
        let answer = tokio::select! {
            _ = cancel.cancelled() => {
                tracing::debug!("completion superseded; its request is dropped");
                return Ok(None);
            }
            answer = provider.complete(&fim_request) => answer?,
        };
        let cursor =
            shape::Cursor::in_document(&request.text, offset, section.multi_line, Some(&tree));
        let Some(text) = shape::shape(&answer.text, cursor) else {
            return Ok(None);
        };
        self.cache()
            .insert(&request.path, before, rest_of_line, &text);
        Ok(Some(Suggestion {
            text,
            from_cache: false,
            evaluated_tokens: answer.evaluated_tokens,
        }))
    }

    /// The user edited the place `chunk` shows (taken around the edited line, now).
    pub fn edited(&self, chunk: EditedChunk) {
        self.recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .edited(chunk);
    }

    /// The whole text of `path` was replaced: its chunks are taken again by `retake` (see
    /// [`RecentEdits::replaced`]).
    pub fn replaced(
        &self,
        path: &str,
        retake: impl FnMut(std::ops::Range<usize>) -> Option<String>,
    ) {
        self.recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replaced(path, retake);
    }

    /// Forgets recent suggestions (the configuration changed).
    pub fn clear(&self) {
        self.cache().clear();
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, SuggestionCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn provider(&self, config: &Arc<Config>) -> Result<Arc<dyn FimProvider>, ModelError> {
        let mut slot = self.provider.lock().await;
        if let Some((known, provider)) = slot.as_ref()
            && Arc::ptr_eq(known, config)
        {
            return Ok(provider.clone());
        }
        let provider = provider::choose(config).await?;
        *slot = Some((config.clone(), provider.clone()));
        Ok(provider)
    }
}
