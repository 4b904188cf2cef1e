//! The syntax layer: tree-sitter parses kept in sync with documents, regions of a file a model
//! can work with inside a token budget, symbol lookup and replacement, and parse checks on edits.
//!
//! It exists because large files are where models lose context: a prompt must carry the right
//! part of a file, whole, with line numbers, instead of a truncated prefix. Pure: text and byte
//! offsets in, plain values out. It never does I/O, never knows protocol types and never panics
//! on bad input — unknown languages and broken code get line-based or best-effort answers.

pub mod checks;
pub mod language;
pub mod lines;
pub mod regions;
pub mod size;
pub mod symbols;
pub mod tree;

pub use checks::{ParseProblem, introduced_problems, introduced_problems_for_edit, parse_problems};
pub use language::Language;
pub use regions::{Region, RegionOptions, Target, extract_region};
pub use size::{SizeThresholds, size_tag};
pub use symbols::{Scope, Symbol, SymbolError, SymbolKind, find_symbol, replace_symbol, symbols};
pub use tree::{SyntaxTree, input_edits, point_at};
