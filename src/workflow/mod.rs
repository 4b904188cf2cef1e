//! Workflows: what turns a user's request into a proposal. `edit` runs one instruction against a
//! target range through a model and the tools, with a retry loop; `proposal` holds the result
//! until the user accepts or rejects it; `tool_loop` holds what the workflows' tool loops share
//! (results back to the model, calls run on a blocking thread, edits written as text).
//!
//! Workflows never write to the disk or the editor: their result is a proposal, and applying it
//! is the caller's decision. They never see protocol types.

pub mod develop;
pub mod edit;
pub mod proposal;
pub mod session;
mod tool_loop;
pub mod write_session;

pub use edit::{
    EditContext, EditFailure, EditFormat, EditOptions, EditRequest, Models, Progress, run,
};
pub use proposal::{ApplyError, FileApply, Hunk, Proposal, ProposalFile, ProposalId, Proposals};
