//! Subcommands of the `patchwise` binary that are more than a call into the core: argument
//! types and the code around them, kept out of `main.rs`.

pub mod context;
pub mod develop;
pub mod doctor;
pub mod edit;
pub mod init;
pub mod mcp;
pub mod research;
