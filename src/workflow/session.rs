//! The session layer: what every editor-facing edge (LSP, MCP and ACP) shares,
//! without a protocol type in sight — the command names, starting and cancelling runs, their
//! progress events, the choices a code action offers, and the edit/research requests the edges
//! turn their arguments into. An edge converts its protocol's request into these plain structs,
//! calls in, and converts the answer back (texlab, ruff_server); it keeps no bookkeeping of its
//! own, so a new edge or a new kind of run is an adapter, not a copy.
//!
//! # Commands
//! [`Command`] is the one list of command names (`patchwise.edit`, …) with their titles; edges
//! advertise [`Command::names`] and parse names with [`Command::from_name`].
//!
//! # Runs
//! Long work (an edit, a research run, a develop run) is a *run*:
//!
//! ```text
//! let mut run = runs.start_run(RunKind::Edit, "norm1");   // id "patchwise-edit-3", cancel token
//! let events = run.take_events();                          // the edge forwards these ($/progress)
//! prepared.run(&run).await;                                // reports on `run`, then ends it
//! // the events: Progress…, Usage…, Proposal(the proposal), Finished(RunOutcome::Proposal{..})
//! ```
//!
//! [`Runs::start_run`] registers the run's cancellation token under its id; [`Runs::cancel`]
//! cancels one run by id (or all), which is what `patchwise.cancel` and a progress-cancel from
//! the client call; [`Runs::start_run_within`] also cancels it with the work around it (an MCP
//! request, an ACP prompt). Dropping the [`RunHandle`] — the run ended, or the edge dropped the
//! future (`$/cancelRequest`) — cancels the token and forgets the run, so nothing keeps running
//! unobserved.
//!
//! The events ([`RunEvent`]) are typed and arrive in the order they happen: progress with a
//! percentage and a [`RunPhase`] (an edge never reads the phase out of the message), a develop
//! run's plan and each step's change, each check and test command as it starts and ends, model
//! usage, a [`Question`] the run waits on (approve the plan: the edge asks its user and
//! answers; dropping it unanswered lets the run go on), then what the run produced — its
//! report ([`RunEvent::Report`]: develop's account of its steps and checks, research's saved
//! report) and its proposal ([`RunEvent::Proposal`], ready for review) —, and last
//! [`RunEvent::Finished`] with the [`RunOutcome`]. The session's run calls (`edit`, `develop`,
//! `research`) end their runs themselves and return only the outcome: an edge takes the
//! result from the events it subscribes to, as it takes everything else ([`RunEnded::next`]
//! keeps the last three while the edge forwards the rest); a run dropped before it ended ends
//! as cancelled, with no result.
//!
//! To add a run kind: add a [`RunKind`] variant (its `name` becomes the id prefix, its `title`
//! the progress title) and a [`Command`] variant; here, a call that reports on the run
//! (`run.report`, `run.metered`) and ends it with its result and outcome; in the edge, parse the
//! command's arguments, `start_run`, forward the events and call in. Edit ([`edit`]) and
//! research ([`research`]) are the two small worked examples.
//!
//! # Files the client has open
//! [`client_files`]: an edge whose client holds files open (an ACP panel) lets a develop run
//! read them through it, unsaved text included.
//!
//! # Review
//! [`review`] accepts and rejects proposals (whole or a hunk), follows the documents they are
//! in and hands the edge the stored records to write; `review::accept_whole` is an ACP turn's
//! accept of a proposal no store follows.
//!
//! # Code-action choices
//! [`choices::code_actions`] decides which actions a range offers (accept/reject/diff of the
//! proposals there, "Apply instruction" for an instruction comment, "Develop: …" for a develop
//! comment, "Fix with model" per diagnostic, "Edit selection…" and "Develop…") as [`Choice`]s
//! in byte offsets; the edge renders them.

pub mod choices;
pub mod client_files;
pub mod develop;
pub mod edit;
pub mod research;
pub mod review;
mod runs;

pub use choices::{Choice, ChoiceArgument, ChoiceKind, ClientAbilities, ForeignDiagnostic, Lens};
// A run's result as the edges show it.
pub use crate::workflow::{Proposal, ProposalFile};
pub use runs::{
    Question, RunEnded, RunEvent, RunHandle, RunKind, RunOutcome, RunPhase, RunReport, RunUsage,
    Runs,
};

/// One file for [`write_files`]: the text it must have on disk now (`None`: it must not exist
/// yet) and the text to write.
pub struct FileWrite<'a> {
    pub path: &'a std::path::Path,
    pub before: Option<&'a str>,
    pub after: String,
}

/// The one writer of every edge that writes to disk itself (`patchwise develop --apply`, MCP's
/// edit tools, an ACP client without `fs/write_text_file`): every file as one transaction — all
/// land, or none —, atomically, permissions and symlinks kept, and refused when a file on disk
/// is no longer the text the change was made against.
pub fn write_files<'a>(
    files: impl IntoIterator<Item = FileWrite<'a>>,
) -> Result<(), crate::tools::transaction::TransactionError> {
    let mut tx = crate::tools::transaction::Transaction::new();
    for f in files {
        match f.before {
            Some(before) => tx.replace(f.path, before, f.after),
            None => tx.create(f.path, f.after),
        };
    }
    tx.commit().map(|_| ())
}

/// Writes every file of `proposal` where nobody else holds the files ([`write_files`]).
pub fn write_proposal(
    proposal: &Proposal,
) -> Result<(), crate::tools::transaction::TransactionError> {
    write_files(proposal.files.iter().map(|f| FileWrite {
        path: &f.path,
        before: (!f.created).then_some(f.original.as_str()),
        after: f.new_text.clone(),
    }))
}

/// Every command the server executes, with the name clients send and a title for menus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// `{uri, range, instruction, removeInstructionComment?}`: edit a range.
    Edit,
    /// `{uri, range}`: "Edit selection…"; the client asks for the instruction.
    EditSelection,
    /// `{request, uri?}`: plan, execute and check a change across the workspace.
    Develop,
    /// `{id, hunk?}`: accept a proposal, or one hunk of it.
    ProposalAccept,
    /// `{id, hunk?}`: reject a proposal, or one hunk of it.
    ProposalReject,
    /// `{id, show?}`: the current diff, shown in the editor unless `show: false`.
    ProposalDiff,
    /// `{}`: every pending proposal with its files and hunks.
    ProposalList,
    Research,
    ResearchList,
    ResearchOpen,
    /// `{id?}`: cancel one run by id, or every run.
    Cancel,
}

impl Command {
    pub const ALL: [Command; 11] = [
        Command::Edit,
        Command::EditSelection,
        Command::Develop,
        Command::ProposalAccept,
        Command::ProposalReject,
        Command::ProposalDiff,
        Command::ProposalList,
        Command::Research,
        Command::ResearchList,
        Command::ResearchOpen,
        Command::Cancel,
    ];

    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Command::Edit => "patchwise.edit",
            Command::EditSelection => "patchwise.editSelection",
            Command::Develop => "patchwise.develop",
            Command::ProposalAccept => "patchwise.proposal.accept",
            Command::ProposalReject => "patchwise.proposal.reject",
            Command::ProposalDiff => "patchwise.proposal.diff",
            Command::ProposalList => "patchwise.proposal.list",
            Command::Research => "patchwise.research",
            Command::ResearchList => "patchwise.research.list",
            Command::ResearchOpen => "patchwise.research.open",
            Command::Cancel => "patchwise.cancel",
        }
    }

    /// A title for menus and code lenses.
    pub fn title(self) -> &'static str {
        match self {
            Command::Edit => "Edit",
            Command::EditSelection => "Edit selection…",
            Command::Develop => "Develop…",
            Command::ProposalAccept => "Accept",
            Command::ProposalReject => "Reject",
            Command::ProposalDiff => "Diff",
            Command::ProposalList => "Show proposals",
            Command::Research => "Research…",
            Command::ResearchList => "Research library",
            Command::ResearchOpen => "Open research report",
            Command::Cancel => "Cancel running work",
        }
    }

    pub fn from_name(name: &str) -> Option<Command> {
        Command::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The names of every command, for error messages and capabilities.
    pub fn names() -> Vec<&'static str> {
        Command::ALL.into_iter().map(Command::name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_names_round_trip_and_are_unique() {
        for command in Command::ALL {
            assert_eq!(Command::from_name(command.name()), Some(command));
        }
        let mut names: Vec<_> = Command::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Command::ALL.len());
        assert_eq!(Command::from_name("patchwise.nope"), None);
    }
}
