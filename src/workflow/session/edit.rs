//! An edit run as the edges ask for it: a target (file, byte range, instruction) and the
//! editor's view of the workspace in, a proposal out.
//!
//! The rules that used to live in the LSP handler live here, once: an instruction is required;
//! a file outside every workspace root is sandboxed to its own directory, never anything above
//! it; `[edit] auto_apply` is read from the configuration; and the "Apply instruction" action's
//! promise — the instruction comment goes away with the change — is kept by rewriting the
//! proposal.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::choices::{
    develop_comment, instruction_comment, strip_develop_comment, strip_instruction_comment,
};
use super::runs::{RunHandle, RunOutcome};
use crate::config::Config;
use crate::model::ModelRouter;
use crate::tools::Snapshot;
use crate::workflow::{
    self, EditContext, EditRequest, Models, Proposal, ProposalFile, ProposalId, Proposals,
};
// Why an edit ended without a proposal, as the edges tell it.
pub use crate::workflow::EditFailure;

/// What the user asked to edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestedEdit {
    /// Absolute path of the file.
    pub path: PathBuf,
    /// Byte range in the file's current text.
    pub range: Range<usize>,
    /// The instruction; `None` or blank when the client supplied none.
    pub instruction: Option<String>,
    /// Set by "Apply instruction": the proposal also drops the instruction comment line.
    pub remove_instruction_comment: bool,
}

/// The editor's side of the workspace when the run starts.
pub struct Workspace {
    /// Workspace roots (absolute).
    pub roots: Vec<PathBuf>,
    /// The open buffers.
    pub snapshot: Snapshot,
    pub config: Arc<Config>,
    pub router: Arc<ModelRouter>,
}

/// An edit ready to run.
pub struct PreparedEdit {
    ctx: EditContext,
    request: EditRequest,
    remove_instruction_comment: bool,
    /// `[edit] auto_apply`: the caller applies the proposal without asking.
    pub auto_apply: bool,
}

/// Why an edit could not start; the text is the message for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditRefused {
    /// The edge says how its clients give one.
    #[error("no instruction")]
    NoInstruction,
}

/// Checks the target and builds the run's context.
pub fn prepare(target: RequestedEdit, workspace: Workspace) -> Result<PreparedEdit, EditRefused> {
    let instruction = target
        .instruction
        .filter(|i| !i.trim().is_empty())
        .ok_or(EditRefused::NoInstruction)?;
    let roots = sandbox_roots(workspace.roots, &target.path);
    let config = (*workspace.config).clone();
    let auto_apply = auto_apply(&config);
    let ctx = EditContext::new(
        config,
        Models::Router(workspace.router),
        roots,
        workspace.snapshot,
    );
    Ok(PreparedEdit {
        ctx,
        request: EditRequest {
            path: target.path,
            range: target.range,
            instruction,
        },
        remove_instruction_comment: target.remove_instruction_comment,
        auto_apply,
    })
}

impl PreparedEdit {
    pub fn path(&self) -> &Path {
        &self.request.path
    }

    /// Runs the edit, reporting progress on `run` and stopping when it is cancelled; ends
    /// `run` with the proposal ([`RunEvent::Proposal`](super::RunEvent)) and returns the
    /// outcome.
    pub async fn run(mut self, run: &RunHandle) -> RunOutcome {
        if let Models::Router(router) = &self.ctx.models {
            self.ctx.models = Models::Router(run.metered(router));
        }
        let report = |p: workflow::Progress| run.report(p.percent, p.phase, &p.message);
        let path = self.request.path.clone();
        let instruction = self.request.instruction.clone();
        let result = workflow::run(&self.ctx, self.request, &report, run.cancel_token())
            .await
            .map(|proposal| {
                if self.remove_instruction_comment {
                    without_instruction_comment(proposal, &path, &instruction)
                } else {
                    proposal
                }
            });
        match result {
            Ok(p) => {
                let files = p.files.iter().map(|f| f.display_path.clone()).collect();
                let outcome = RunOutcome::Proposal {
                    files,
                    stopped: None,
                };
                run.end(None, Some(p), outcome)
            }
            Err(EditFailure::Cancelled) => run.end(None, None, RunOutcome::Cancelled),
            Err(e) => run.end(None, None, RunOutcome::Failed(e.to_string())),
        }
    }
}

/// The roots a run may touch: the workspace roots, plus the file's own directory when the
/// file is outside every root (or there is none) — never anything above it.
pub fn sandbox_roots(mut roots: Vec<PathBuf>, path: &Path) -> Vec<PathBuf> {
    if !roots.iter().any(|r| path.starts_with(r))
        && let Some(parent) = path.parent()
    {
        roots.push(parent.to_path_buf());
    }
    roots
}

/// Whether accepted-without-asking is on: `[edit] auto_apply`.
pub fn auto_apply(config: &Config) -> bool {
    config.edit.auto_apply
}

/// Stores a finished proposal and re-bases it onto the texts as they are now (the user may have
/// typed during the run); `current` gives a file's current text when the editor has it open.
/// Returns the id and whether the proposal went stale doing so.
pub fn adopt(
    proposals: &mut Proposals,
    proposal: Proposal,
    current: impl Fn(&Path) -> Option<String>,
) -> (ProposalId, bool) {
    let paths: Vec<PathBuf> = proposal.files.iter().map(|f| f.path.clone()).collect();
    let id = proposals.add(proposal);
    let mut stale = false;
    for path in paths {
        if let Some(text) = current(&path) {
            stale |= !proposals.sync(&path, &text).is_empty();
        }
    }
    if stale {
        tracing::warn!(
            id,
            "the target changed during the run; the proposal is stale"
        );
    }
    (id, stale)
}

/// Drops the instruction comment line from the proposal's new text of `path`, when it is there
/// exactly once (the "Apply instruction" action promises the comment goes away).
pub fn without_instruction_comment(proposal: Proposal, path: &Path, instruction: &str) -> Proposal {
    let is_it = |l: &str| instruction_comment(l).as_deref() == Some(instruction);
    without_comment(proposal, path, None, &is_it, strip_instruction_comment)
}

/// Drops the `patchwise develop: <request>` comment a develop run started from, as "Apply
/// instruction" drops its comment: from the proposal's new text of `path` when the proposal
/// changes that file, else as a change of its own to the file's text `now` (the open buffer
/// the comment is in, with its version and the path shown in diffs). Only when the comment is
/// there exactly once.
pub fn without_develop_comment(
    proposal: Proposal,
    path: &Path,
    request: &str,
    now: Option<(String, Option<i32>, String)>,
) -> Proposal {
    let is_it = |l: &str| develop_comment(l).as_deref() == Some(request);
    without_comment(proposal, path, now, &is_it, strip_develop_comment)
}

/// `text` with the one line that `is_it` picks stripped by `strip`; `None` when no line or
/// several lines are picked.
fn strip_once(
    text: &str,
    is_it: &dyn Fn(&str) -> bool,
    strip: fn(&str) -> String,
) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let hits: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| is_it(l))
        .map(|(i, _)| i)
        .collect();
    let [only] = hits[..] else {
        return None;
    };
    Some(
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| if i == only { strip(l) } else { (*l).to_owned() })
            .collect(),
    )
}

fn without_comment(
    proposal: Proposal,
    path: &Path,
    now: Option<(String, Option<i32>, String)>,
    is_it: &dyn Fn(&str) -> bool,
    strip: fn(&str) -> String,
) -> Proposal {
    let mut files = Vec::new();
    let mut changed = false;
    for file in &proposal.files {
        let stripped = (file.path == path)
            .then(|| strip_once(&file.new_text, is_it, strip))
            .flatten();
        let Some(text) = stripped else {
            files.push(file.clone());
            continue;
        };
        files.push(ProposalFile::new(
            file.path.clone(),
            file.display_path.clone(),
            file.base_version,
            file.created,
            file.original.clone(),
            text,
        ));
        changed = true;
    }
    if !proposal.files.iter().any(|f| f.path == path)
        && let Some((text, version, display_path)) = now
        && let Some(stripped) = strip_once(&text, is_it, strip)
    {
        files.push(ProposalFile::new(
            path.to_path_buf(),
            display_path,
            version,
            false,
            text,
            stripped,
        ));
        changed = true;
    }
    if !changed {
        return proposal;
    }
    let mut rebuilt = Proposal::new(
        proposal.instruction.clone(),
        files,
        proposal.model.clone(),
        proposal.attempts,
        proposal.matched_by.clone(),
    );
    rebuilt.id = proposal.id;
    rebuilt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_outside_the_roots_is_sandboxed_to_its_directory() {
        let roots = vec![PathBuf::from("/w")];
        assert_eq!(
            sandbox_roots(roots.clone(), Path::new("/w/src/a.rs")),
            roots
        );
        assert_eq!(
            sandbox_roots(roots, Path::new("/tmp/x/b.rs")),
            [PathBuf::from("/w"), PathBuf::from("/tmp/x")]
        );
        assert_eq!(
            sandbox_roots(Vec::new(), Path::new("/tmp/x/b.rs")),
            [PathBuf::from("/tmp/x")]
        );
    }

    #[test]
    fn the_instruction_comment_goes_away_only_when_it_is_there_once() {
        let original = "// patchwise: add one\nfn a() {}\n";
        let file = |new: &str| {
            ProposalFile::new(
                PathBuf::from("/w/a.rs"),
                "a.rs".into(),
                Some(1),
                false,
                original.into(),
                new.into(),
            )
        };
        let proposal = Proposal::new(
            "add one",
            vec![file("// patchwise: add one\nfn a() { 1 }\n")],
            "m",
            1,
            "exact",
        );
        let id = proposal.id;
        let out = without_instruction_comment(proposal, Path::new("/w/a.rs"), "add one");
        assert_eq!(out.files[0].new_text, "fn a() { 1 }\n");
        assert_eq!(out.id, id);
        let twice = Proposal::new(
            "add one",
            vec![file("// patchwise: add one\n// patchwise: add one\n")],
            "m",
            1,
            "exact",
        );
        let kept = without_instruction_comment(twice.clone(), Path::new("/w/a.rs"), "add one");
        assert_eq!(kept, twice);
    }

    #[test]
    fn the_develop_comment_goes_away_from_the_proposal_or_as_a_change_of_its_own() {
        let text = "// patchwise develop: add a flag\nfn main() {}\n";
        let other = ProposalFile::new(
            PathBuf::from("/w/src/lib.rs"),
            "src/lib.rs".into(),
            None,
            false,
            "".into(),
            "pub fn flag() {}\n".into(),
        );
        let proposal = Proposal::new("add a flag", vec![other], "m", 1, "develop");
        let now = Some((text.to_owned(), Some(4), "src/main.rs".to_owned()));
        let out = without_develop_comment(
            proposal.clone(),
            Path::new("/w/src/main.rs"),
            "add a flag",
            now.clone(),
        );
        assert_eq!(out.files.len(), 2);
        assert_eq!(out.files[1].new_text, "fn main() {}\n");
        assert_eq!(out.files[1].base_version, Some(4));
        assert!(
            out.diff.contains("-// patchwise develop: add a flag\n"),
            "{}",
            out.diff
        );
        // The file the proposal changes loses the comment there.
        let main = ProposalFile::new(
            PathBuf::from("/w/src/main.rs"),
            "src/main.rs".into(),
            Some(4),
            false,
            text.into(),
            text.replace("{}", "{ flag(); }"),
        );
        let proposal = Proposal::new("add a flag", vec![main], "m", 1, "develop");
        let out = without_develop_comment(proposal, Path::new("/w/src/main.rs"), "add a flag", now);
        assert_eq!(out.files.len(), 1);
        assert_eq!(out.files[0].new_text, "fn main() { flag(); }\n");
        // Another request's comment stays.
        let kept = without_develop_comment(
            Proposal::new("other", Vec::new(), "m", 1, "develop"),
            Path::new("/w/src/main.rs"),
            "something else",
            Some((text.to_owned(), Some(4), "src/main.rs".to_owned())),
        );
        assert!(kept.files.is_empty());
    }

    #[test]
    fn blank_instructions_are_refused() {
        let target = RequestedEdit {
            path: PathBuf::from("/w/a.rs"),
            range: 0..0,
            instruction: Some("  ".into()),
            remove_instruction_comment: false,
        };
        let config = Arc::new(Config::default());
        let workspace = Workspace {
            roots: Vec::new(),
            snapshot: Snapshot::new(),
            router: Arc::new(ModelRouter::new((*config).clone())),
            config,
        };
        assert!(matches!(
            prepare(target, workspace),
            Err(EditRefused::NoInstruction)
        ));
    }
}
