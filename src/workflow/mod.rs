//! Workflows: what turns a user's request into a proposal. `edit` runs one instruction against a
//! target range through a model and the tools, with a retry loop; `proposal` holds the result
//! until the user accepts or rejects it; `model_loop` is how a model answer becomes a change, the
//! one loop that edit and develop share (attempts, protocols, reading answers, rewrites,
//! feedback, cancellation), with `edit.rs` and `develop/step.rs` as its policies.
//!
//! Workflows never write to the disk or the editor: their result is a proposal, and applying it
//! is the caller's decision. They never see protocol types.

pub mod develop;
pub mod edit;
pub(crate) mod model_loop;
pub mod proposal;
pub mod session;
pub mod write_session;

pub use edit::{
    EditContext, EditFailure, EditFormat, EditOptions, EditRequest, Models, Progress, RunPhase, run,
};
pub use proposal::{ApplyError, FileApply, Hunk, Proposal, ProposalFile, ProposalId, Proposals};
