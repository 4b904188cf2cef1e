//! Typed failures of a model call, written so that a user (or the workflow deciding whether to
//! retry or escalate) knows what happened and what to do next.
//!
//! No variant ever carries an API key or a request header: messages quote URLs, statuses and the
//! provider's own error text only.

use std::time::Duration;

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum ModelError {
    #[error("cannot connect to {url}: {reason} (is the server running?)")]
    Connect { url: String, reason: String },

    #[error(
        "{phase} timeout after {:.1}s waiting for {url} (raise [timeouts] {} in the configuration if the server is just slow)",
        elapsed.as_secs_f32(),
        phase.config_key()
    )]
    Timeout {
        phase: TimeoutPhase,
        url: String,
        elapsed: Duration,
    },

    #[error(
        "{url} refused the credentials (HTTP {status}): {message}; set the environment variable {key_env} to a valid key"
    )]
    Auth {
        url: String,
        status: u16,
        key_env: String,
        message: String,
    },

    #[error("{url} answered HTTP {status}: {message}")]
    Http {
        url: String,
        status: u16,
        message: String,
    },

    #[error("{url} kept answering HTTP {status} after {attempts} attempts: {message}")]
    RetriesExhausted {
        url: String,
        status: u16,
        attempts: u32,
        message: String,
    },

    #[error("malformed response from {url}: expected {expected}, found {found}")]
    Malformed {
        url: String,
        expected: String,
        found: String,
    },

    #[error("the answer stream from {url} ended early: {detail}")]
    StreamEndedEarly { url: String, detail: String },

    #[error("{url} reported an error mid-answer: {message}")]
    Provider { url: String, message: String },

    #[error(
        "the answer ended inside a tool-call block opened at line {line}: {detail}; ask the model to repeat the call"
    )]
    IncompleteToolCall { line: usize, detail: String },

    #[error(
        "the request needs {needed} tokens but {model} allows {available} (context window {window} minus {reserved} reserved for the answer): {over_by} tokens over even after truncating old tool results and dropping old turns"
    )]
    ContextOverflow {
        model: String,
        needed: usize,
        available: usize,
        window: usize,
        reserved: usize,
        over_by: usize,
    },

    #[error("no model for role {role}: {reason}")]
    NoModel { role: String, reason: String },

    #[error("the request was cancelled")]
    Cancelled,

    #[error("cannot send the request: {0}")]
    Request(String),
}

/// Which of the three timeouts fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    Connect,
    FirstToken,
    Total,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "connect",
            TimeoutPhase::FirstToken => "first-token",
            TimeoutPhase::Total => "total",
        })
    }
}

impl TimeoutPhase {
    /// The `[timeouts]` key that sets this timeout.
    pub fn config_key(self) -> &'static str {
        match self {
            TimeoutPhase::Connect => "connect",
            TimeoutPhase::FirstToken => "first_token",
            TimeoutPhase::Total => "total",
        }
    }
}

impl ModelError {
    /// Whether the same request may be sent again (nothing has reached the caller yet is the
    /// caller's condition; this is the error's half of the decision).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ModelError::Connect { .. }
                | ModelError::Timeout {
                    phase: TimeoutPhase::Connect | TimeoutPhase::FirstToken,
                    ..
                }
                | ModelError::Malformed { .. }
                | ModelError::StreamEndedEarly { .. }
        )
    }
}
