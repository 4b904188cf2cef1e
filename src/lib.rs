//! patchwise: a language server that brings model-driven coding into any editor that speaks LSP.
//!
//! The crate is laid out as `docs/architecture.md` describes: a pure core that speaks byte offsets
//! (`document`), and a protocol edge (`lsp`) that is the only place LSP types are known.

pub mod acp;
pub mod cli;
pub mod complete;
pub mod config;
pub mod document;
pub mod edit;
pub mod logging;
pub mod lsp;
pub mod mcp;
pub mod model;
pub mod research;
// The model runtime (llama.cpp), only in builds with the `embedded` feature, and only ever run
// inside the model host process (`patchwise model serve`).
#[cfg(feature = "embedded")]
pub mod runtime;
pub mod store;
pub mod syntax;
pub mod tokens;
pub mod tools;
pub mod workflow;
pub mod workspace;
