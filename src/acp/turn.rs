//! One prompt turn: the session's mode decides the run (develop, edit or research, each through
//! `workflow::session`), the run's typed events become `session/update`s as they happen, and a
//! proposal is shown as `edit` tool calls with diffs (and `locations`: each file's absolute path
//! and the first line it changes) and written only when the user allows it
//! (`session/request_permission`) — through the client (`fs/write_text_file`) when it offers
//! that, else atomically on disk as `patchwise develop --apply` does.
//!
//! A cancelled turn ends with `cancelled` and writes nothing, within a second of
//! `session/cancel`: the run stops on its token at once, and a run that has not stopped
//! [`CANCEL_GRACE`] later is dropped (its processes killed, its overlay discarded). A run that
//! fails ends the turn with a message that says why, never a hung prompt.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, PermissionOption, PermissionOptionId, PermissionOptionKind,
    Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, ResourceLink, SessionId,
    SessionNotification, SessionUpdate, StopReason, TextContent, ToolCall, ToolCallContent,
    ToolCallId, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
    UsageUpdate, WriteTextFileRequest,
};
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::agent::{ClientOffer, Mode, SessionView};
use super::target;
use crate::store::sessions::{SessionTurn, Speaker};
use crate::tools::{OpenBuffer, Snapshot};
use crate::workflow::session::client_files::{ClientFiles, read_through};
use crate::workflow::session::develop::{
    CommandEvent, DevelopContext, DevelopModels, DevelopRequest, ItemStatus, PlanItem, StepStatus,
    VerifyStatus,
};
use crate::workflow::session::edit::{RequestedEdit, Workspace};
use crate::workflow::session::{
    self, Proposal, ProposalFile, RunEnded, RunEvent, RunHandle, RunKind, RunUsage, Runs, review,
};

const ALLOW_ONCE: &str = "allow-once";
/// How long a cancelled run may take to stop on its own before the turn gives it up.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_millis(500);
const ALLOW_ALWAYS: &str = "allow-always";
const REJECT: &str = "reject";

/// The client side of a turn: notifications out, requests to the client.
#[derive(Clone)]
pub struct Peer {
    pub cx: ConnectionTo<Client>,
    pub session: SessionId,
    pub abilities: ClientOffer,
}

impl Peer {
    pub fn update(&self, update: SessionUpdate) {
        if let Err(err) = self
            .cx
            .send_notification(SessionNotification::new(self.session.clone(), update))
        {
            tracing::warn!("a session/update could not be sent: {err}");
        }
    }

    /// Ends tool call `id`: an update when it was started (`started`), else a whole call.
    /// `locations`: the files it read or changed (none: the call's own are kept).
    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        started: &[String],
        id: &str,
        title: &str,
        kind: ToolKind,
        status: ToolCallStatus,
        content: Vec<ToolCallContent>,
        locations: Vec<ToolCallLocation>,
    ) {
        let call = ToolCallId::new(id.to_owned());
        if started.iter().any(|s| s == id) {
            self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call,
                ToolCallUpdateFields::new()
                    .title(title.to_owned())
                    .status(status)
                    .content(content)
                    .locations((!locations.is_empty()).then_some(locations)),
            )));
        } else {
            self.update(SessionUpdate::ToolCall(
                ToolCall::new(call, title.to_owned())
                    .kind(kind)
                    .status(status)
                    .content(content)
                    .locations(locations),
            ));
        }
    }

    fn say(&self, text: impl Into<String>) {
        self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::Text(TextContent::new(text.into())),
        )));
    }

    fn think(&self, text: impl Into<String>) {
        self.update(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
            ContentBlock::Text(TextContent::new(text.into())),
        )));
    }

    /// The client's text of `path` (unsaved edits included) when it offers reading, else the
    /// disk's.
    async fn read(&self, path: &Path) -> Option<String> {
        match self.read_client(path).await {
            Some(text) => Some(text),
            None => crate::workspace::read_text(path).ok(),
        }
    }

    /// The client's text of `path`, when it offers reading and answers.
    async fn read_client(&self, path: &Path) -> Option<String> {
        if !self.abilities.read_text_file {
            return None;
        }
        let asked = self
            .cx
            .send_request(ReadTextFileRequest::new(
                self.session.clone(),
                path.to_path_buf(),
            ))
            .block_task()
            .await;
        match asked {
            Ok(r) => Some(r.content),
            Err(err) => {
                tracing::debug!(path = %path.display(), "the client did not read: {err}");
                None
            }
        }
    }
}

/// How long a run waits for the client to answer `fs/read_text_file` before it reads the disk.
const READ_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A develop run's reads of the session's files, through the client (its open buffers with
/// their unsaved text); a cancelled turn stops waiting at once.
struct ClientReader {
    peer: Peer,
    cancel: CancellationToken,
}

impl ClientFiles for ClientReader {
    fn read(&self, path: &Path) -> BoxFuture<'static, Option<String>> {
        let (peer, cancel, path) = (self.peer.clone(), self.cancel.clone(), path.to_path_buf());
        Box::pin(async move {
            tokio::select! {
                _ = cancel.cancelled() => None,
                read = tokio::time::timeout(READ_WAIT, peer.read_client(&path)) => read.ok().flatten(),
            }
        })
    }
}

/// How the turn ended, and what it said (kept as the session's conversation).
pub struct TurnEnd {
    pub stop: StopReason,
    pub said: String,
    pub always_allow: bool,
}

/// Runs the prompt `prompt` of `session`; never fails (a failure is a message and `end_turn`).
pub async fn run(
    peer: Peer,
    session: SessionView,
    prompt: Vec<ContentBlock>,
    cancel: CancellationToken,
    runs: Arc<Runs>,
) -> TurnEnd {
    let mut turn = Turn {
        peer,
        session,
        cancel,
        runs,
        said: String::new(),
        always_allow: false,
    };
    let stop = turn.go(prompt).await;
    TurnEnd {
        stop,
        said: turn.said,
        always_allow: turn.always_allow,
    }
}

/// The user's prompt as the conversation keeps it.
pub fn prompt_text(prompt: &[ContentBlock]) -> String {
    let mut out = Vec::new();
    for block in prompt {
        match block {
            ContentBlock::Text(t) => out.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => out.push(format!("@{}", link.uri)),
            ContentBlock::Resource(r) => out.push(format!("@{}", resource_uri(r))),
            _ => {}
        }
    }
    out.join(" ")
}

pub fn user_turn(prompt: &[ContentBlock]) -> SessionTurn {
    SessionTurn {
        speaker: Speaker::User,
        text: prompt_text(prompt),
    }
}

pub fn agent_turn(text: String) -> SessionTurn {
    SessionTurn {
        speaker: Speaker::Agent,
        text,
    }
}

struct Turn {
    peer: Peer,
    session: SessionView,
    cancel: CancellationToken,
    runs: Arc<Runs>,
    said: String,
    always_allow: bool,
}

/// A file the prompt brought along: a resource link (read through the client) or an embedded
/// resource (its text as the client has it).
struct Attached {
    path: PathBuf,
    lines: Option<(usize, usize)>,
    text: Option<String>,
}

impl Turn {
    fn say(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.said.push_str(&text);
        self.peer.say(text);
    }

    async fn go(&mut self, prompt: Vec<ContentBlock>) -> StopReason {
        let text = prompt
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let attached: Vec<Attached> = prompt.iter().filter_map(attached).collect();
        match self.session.mode {
            Mode::Develop => self.develop(text, attached).await,
            Mode::Edit => self.edit(text, attached).await,
            Mode::Research => self.research(text).await,
        }
    }

    /// The open texts of the attached files inside the session's folder.
    async fn snapshot(&self, attached: &[Attached]) -> Snapshot {
        let mut snapshot = Snapshot::new();
        for a in attached {
            if !a.path.starts_with(&self.session.cwd) {
                continue;
            }
            let text = match &a.text {
                Some(t) => Some(t.clone()),
                None => self.peer.read(&a.path).await,
            };
            if let Some(text) = text {
                snapshot.insert(a.path.clone(), OpenBuffer { text, version: 0 });
            }
        }
        snapshot
    }

    fn start(&self, kind: RunKind, label: &str) -> (RunHandle, tokio::task::JoinHandle<RunEnded>) {
        // `session/cancel` cancels the prompt's token, and with it the run's.
        let mut run = self.runs.start_run_within(kind, label, &self.cancel);
        let events = run.take_events();
        let forward = tokio::spawn(forward(
            self.peer.clone(),
            self.session.cwd.clone(),
            run.id().to_owned(),
            events,
        ));
        (run, forward)
    }

    /// Awaits `work`, or gives it up (drops it) when the prompt was cancelled and `work` has
    /// not ended on its own [`CANCEL_GRACE`] later.
    async fn unless_cancelled<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        let cancel = self.cancel.clone();
        tokio::select! {
            out = work => Some(out),
            _ = async {
                cancel.cancelled().await;
                tokio::time::sleep(CANCEL_GRACE).await;
            } => None,
        }
    }

    // -- develop ------------------------------------------------------------------------------

    async fn develop(&mut self, request: String, attached: Vec<Attached>) -> StopReason {
        if request.trim().is_empty() {
            self.say("Say what to build or change (the develop mode plans, changes and checks the workspace).");
            return StopReason::EndTurn;
        }
        let focus = attached
            .iter()
            .map(|a| a.path.clone())
            .find(|p| p.starts_with(&self.session.cwd));
        let snapshot = self.snapshot(&attached).await;
        let mut ctx = DevelopContext::new(
            (*self.session.config).clone(),
            DevelopModels::Router(self.session.router.clone()),
            vec![self.session.cwd.clone()],
            snapshot,
        );
        // Every file the run shows the model is read as the editor has it (`fs/read_text_file`).
        if self.peer.abilities.read_text_file {
            read_through(
                &mut ctx,
                Arc::new(ClientReader {
                    peer: self.peer.clone(),
                    cancel: self.cancel.clone(),
                }),
            );
        }
        let (run, forward) = self.start(RunKind::Develop, &request);
        let id = run.id().to_owned();
        let ran = self
            .unless_cancelled(session::develop::run(
                ctx,
                DevelopRequest { request, focus },
                &run,
            ))
            .await;
        // Ended by the session, or (given up) as cancelled when dropped.
        drop(run);
        // Each step and each command went out as its tool call when it ended (`forward`); the
        // report and the proposal come last.
        let ended = forward.await.unwrap_or_default();
        if ran.is_none() || self.cancel.is_cancelled() {
            return StopReason::Cancelled;
        }
        let Some(report) = ended.develop_report() else {
            self.say(format!(
                "The develop run ended without a report: {}",
                ended.outcome
            ));
            return StopReason::EndTurn;
        };
        self.say(report.summary());
        let mut note = String::new();
        if let VerifyStatus::Failed(_) = &report.verify {
            note = " The tests FAIL with this change.".to_owned();
        }
        let Some(proposal) = ended.proposal else {
            return StopReason::EndTurn;
        };
        self.offer(&id, proposal, &note).await
    }

    // -- edit ---------------------------------------------------------------------------------

    async fn edit(&mut self, text: String, attached: Vec<Attached>) -> StopReason {
        let named = attached
            .iter()
            .find(|a| a.lines.is_some())
            .or(attached.first())
            .map(|a| (a.path.clone(), a.lines, text.clone()));
        let named = named.or_else(|| {
            target::from_text(&text, &self.session.cwd).map(|(t, rest)| (t.path, t.lines, rest))
        });
        let Some((path, lines, instruction)) = named else {
            self.say(
                "Name the file and lines to edit: `@src/lib.rs:10-20 make it iterative`, or \
                 attach a selection, then say what to change.",
            );
            return StopReason::EndTurn;
        };
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        if !path.starts_with(&self.session.cwd) {
            self.say(format!(
                "{} is outside this session's folder {}; nothing was edited.",
                path.display(),
                self.session.cwd.display()
            ));
            return StopReason::EndTurn;
        }
        let mut snapshot = self.snapshot(&attached).await;
        let text_now = match snapshot.get(&path) {
            Some(b) => Some(b.text.clone()),
            None => self.peer.read(&path).await,
        };
        let Some(current) = text_now else {
            self.say(format!(
                "Cannot read {}; nothing was edited.",
                path.display()
            ));
            return StopReason::EndTurn;
        };
        snapshot.insert(
            path.clone(),
            OpenBuffer {
                text: current.clone(),
                version: 0,
            },
        );
        let range = target::byte_range(&current, lines);
        let prepared = session::edit::prepare(
            RequestedEdit {
                path: path.clone(),
                range,
                instruction: Some(instruction),
                remove_instruction_comment: false,
            },
            Workspace {
                roots: vec![self.session.cwd.clone()],
                snapshot,
                config: self.session.config.clone(),
                router: self.session.router.clone(),
            },
        );
        let prepared = match prepared {
            Ok(p) => p,
            Err(_) => {
                self.say("Say what to change in the named lines (the instruction is empty).");
                return StopReason::EndTurn;
            }
        };
        let (run, forward) = self.start(RunKind::Edit, &path.display().to_string());
        let id = run.id().to_owned();
        let ran = self.unless_cancelled(prepared.run(&run)).await;
        // Ended by the session, or (given up) as cancelled when dropped.
        drop(run);
        let ended = forward.await.unwrap_or_default();
        if ran.is_none() || self.cancel.is_cancelled() {
            return StopReason::Cancelled;
        }
        match ended.proposal {
            Some(proposal) => {
                self.say(format!(
                    "Proposed by {} ({} attempt{}).",
                    proposal.model,
                    proposal.attempts,
                    if proposal.attempts == 1 { "" } else { "s" }
                ));
                self.offer(&id, proposal, "").await
            }
            None => {
                self.say(format!(
                    "The edit failed; nothing was changed: {}",
                    ended.outcome
                ));
                StopReason::EndTurn
            }
        }
    }

    // -- research -----------------------------------------------------------------------------

    async fn research(&mut self, query: String) -> StopReason {
        if query.trim().is_empty() {
            self.say("Ask a question to research.");
            return StopReason::EndTurn;
        }
        let (run, forward) = self.start(RunKind::Research, &query);
        let options = session::research::RunOptions {
            workspace: Some(self.session.cwd.clone()),
            ..session::research::RunOptions::default()
        };
        let ran = self
            .unless_cancelled(session::research::run(
                &self.session.config,
                &query,
                options,
                &run,
            ))
            .await;
        // Ended by the session, or (given up) as cancelled when dropped.
        drop(run);
        let ended = forward.await.unwrap_or_default();
        if ran.is_none() || self.cancel.is_cancelled() {
            return StopReason::Cancelled;
        }
        let Some(done) = ended.research() else {
            self.say(format!("The research failed: {}", ended.outcome));
            return StopReason::EndTurn;
        };
        let record = &done.record;
        self.say(record.synthesis.trim_end().to_owned());
        let cited: Vec<_> = record.sources.iter().filter(|s| s.n.is_some()).collect();
        if !cited.is_empty() {
            self.say("\n\nSources:\n");
        }
        for s in &cited {
            let n = s.n.unwrap_or_default();
            let uri = source_uri(s, &self.session.cwd);
            self.said.push_str(&format!("[{n}] {} {uri}\n", s.title));
            self.peer
                .update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                    ContentBlock::ResourceLink(
                        ResourceLink::new(format!("[{n}] {}", s.title), uri).title(s.title.clone()),
                    ),
                )));
        }
        for note in &record.notes {
            self.say(format!("\nnote: {note}"));
        }
        let report = file_uri(&done.report);
        self.say(format!(
            "\n\nSaved in the library as {} ({}).",
            record.id, report
        ));
        self.peer
            .update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                ContentBlock::ResourceLink(
                    ResourceLink::new(format!("research {}", record.id), report)
                        .title(record.query.clone()),
                ),
            )));
        StopReason::EndTurn
    }

    // -- proposal: show, ask, write -----------------------------------------------------------

    /// Shows `proposal` as one `edit` tool call with a diff per file, asks before writing, and
    /// writes on allow.
    async fn offer(&mut self, id: &str, proposal: Proposal, note: &str) -> StopReason {
        let call = ToolCallId::new(format!("{id}-write"));
        let files: Vec<&str> = proposal
            .files
            .iter()
            .map(|f| f.display_path.as_str())
            .collect();
        let title = format!("Write {}", files.join(", "));
        let content: Vec<ToolCallContent> = proposal.files.iter().map(diff).collect();
        // Where each file changes first, so a panel shows (and opens) the real file.
        let locations: Vec<ToolCallLocation> = proposal
            .files
            .iter()
            .map(|f| {
                let before = (!f.created).then_some(f.original.as_str());
                location(&f.path, before, &f.new_text)
            })
            .collect();
        self.peer.update(SessionUpdate::ToolCall(
            ToolCall::new(call.clone(), title.clone())
                .kind(ToolKind::Edit)
                .status(ToolCallStatus::Pending)
                .content(content.clone())
                .locations(locations.clone()),
        ));
        let allowed = if self.session.always_allow || self.always_allow {
            true
        } else {
            let ask = RequestPermissionRequest::new(
                self.peer.session.clone(),
                ToolCallUpdate::new(
                    call.clone(),
                    ToolCallUpdateFields::new()
                        .title(format!("{title}?{note}"))
                        .kind(ToolKind::Edit)
                        .content(content)
                        .locations(locations),
                ),
                vec![
                    PermissionOption::new(
                        PermissionOptionId::new(ALLOW_ONCE),
                        "Write the change",
                        PermissionOptionKind::AllowOnce,
                    ),
                    PermissionOption::new(
                        PermissionOptionId::new(ALLOW_ALWAYS),
                        "Always write changes in this session",
                        PermissionOptionKind::AllowAlways,
                    ),
                    PermissionOption::new(
                        PermissionOptionId::new(REJECT),
                        "Don't write it",
                        PermissionOptionKind::RejectOnce,
                    ),
                ],
            );
            let asked = self.peer.cx.send_request(ask).block_task();
            let answer = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => None,
                a = asked => Some(a),
            };
            match answer {
                None => {
                    self.finish_call(
                        &call,
                        ToolCallStatus::Failed,
                        "Cancelled; nothing was written.",
                    );
                    return StopReason::Cancelled;
                }
                Some(Err(err)) => {
                    self.finish_call(&call, ToolCallStatus::Failed, "Nothing was written.");
                    self.say(format!("\nThe client did not answer the permission request ({err}); nothing was written."));
                    return StopReason::EndTurn;
                }
                Some(Ok(answer)) => match answer.outcome {
                    RequestPermissionOutcome::Cancelled => {
                        self.finish_call(
                            &call,
                            ToolCallStatus::Failed,
                            "Cancelled; nothing was written.",
                        );
                        return StopReason::Cancelled;
                    }
                    RequestPermissionOutcome::Selected(selected) => {
                        let option = selected.option_id.0.to_string();
                        if option == ALLOW_ALWAYS {
                            self.always_allow = true;
                        }
                        option == ALLOW_ONCE || option == ALLOW_ALWAYS
                    }
                    _ => false,
                },
            }
        };
        if self.cancel.is_cancelled() {
            self.finish_call(
                &call,
                ToolCallStatus::Failed,
                "Cancelled; nothing was written.",
            );
            return StopReason::Cancelled;
        }
        if !allowed {
            self.finish_call(
                &call,
                ToolCallStatus::Failed,
                "Rejected; nothing was written.",
            );
            self.say("\nNot written: the change was rejected.");
            return StopReason::EndTurn;
        }
        match self.write(&proposal).await {
            Ok(through) => {
                self.finish_call(
                    &call,
                    ToolCallStatus::Completed,
                    &format!("Written {through}."),
                );
                self.say(format!(
                    "\nWrote {} file{} ({through}).",
                    files.len(),
                    if files.len() == 1 { "" } else { "s" }
                ));
            }
            Err(err) => {
                self.finish_call(&call, ToolCallStatus::Failed, &err);
                self.say(format!("\n{err}"));
            }
        }
        StopReason::EndTurn
    }

    fn finish_call(&self, call: &ToolCallId, status: ToolCallStatus, text: &str) {
        self.peer
            .update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call.clone(),
                ToolCallUpdateFields::new()
                    .status(status)
                    .raw_output(serde_json::json!({ "message": text })),
            )));
    }

    /// Accepts the proposal against its files as they are now (`session::review`, as an
    /// editor's accept: hunks a change elsewhere moved are re-located, a change to their own
    /// text refuses it), then writes every file: through the client when it offers it, else as
    /// one atomic transaction on disk.
    async fn write(&self, proposal: &Proposal) -> Result<&'static str, String> {
        let mut now = std::collections::HashMap::new();
        for f in &proposal.files {
            now.insert(f.path.clone(), self.peer.read(&f.path).await);
        }
        let files = review::accept_whole(proposal, |path| now.get(path).cloned().flatten())
            .map_err(|e| format!("Nothing was written: {e}; run the prompt again."))?;
        if self.peer.abilities.write_text_file {
            for f in &files {
                self.peer
                    .cx
                    .send_request(WriteTextFileRequest::new(
                        self.peer.session.clone(),
                        f.path.clone(),
                        f.after.clone(),
                    ))
                    .block_task()
                    .await
                    .map_err(|e| format!("The client did not write {}: {e}", f.display_path))?;
            }
            return Ok("through the editor");
        }
        review::write_accepted(&files)
            .map(|()| "on disk")
            .map_err(|e| format!("Nothing was written: {e}"))
    }
}

/// Forwards a run's events as they happen: progress as thoughts (each phase once), the plan
/// as `plan` updates, each step as an `edit` tool call that starts when the step does, and
/// each check, lint and test command as an `execute` call from when it starts to when it ends,
/// with its output.
async fn forward(
    peer: Peer,
    cwd: PathBuf,
    run: String,
    events: Option<mpsc::UnboundedReceiver<RunEvent>>,
) -> RunEnded {
    let mut ended = RunEnded::default();
    let mut calls: Vec<String> = Vec::new();
    let Some(mut events) = events else {
        return ended;
    };
    let mut last_phase = None;
    let mut started: Vec<usize> = Vec::new();
    let mut extra = 0;
    // The report, the proposal and the end are kept for the turn to show when the run ended.
    while let Some(event) = ended.next(&mut events).await {
        match event {
            RunEvent::Progress { phase, message, .. } => {
                // One thought per phase (each step, each attempt is a phase of its own).
                if last_phase != Some(phase) && !message.is_empty() {
                    peer.think(format!("{message}\n"));
                    last_phase = Some(phase);
                }
            }
            RunEvent::Plan { items } => {
                peer.update(SessionUpdate::Plan(Plan::new(
                    items.iter().map(plan_entry).collect(),
                )));
                for item in items.iter().filter(|i| !i.verify) {
                    if item.status == ItemStatus::Pending || started.contains(&item.number) {
                        continue;
                    }
                    started.push(item.number);
                    let id = format!("{run}-step-{}", item.number);
                    peer.update(SessionUpdate::ToolCall(
                        ToolCall::new(
                            ToolCallId::new(id.clone()),
                            format!("Step {}: {}", item.number, item.text),
                        )
                        .kind(ToolKind::Edit)
                        .status(ToolCallStatus::InProgress)
                        // The files the plan says the step works on.
                        .locations(
                            item.files
                                .iter()
                                .map(|f| ToolCallLocation::new(cwd.join(f)))
                                .collect(),
                        ),
                    ));
                    calls.push(id);
                }
            }
            RunEvent::Step(ended) => {
                let step = &ended.step;
                let id = match step_number(&step.name) {
                    Some(n) => format!("{run}-step-{n}"),
                    // Fix rounds and the judge's objections have no plan entry: a call of their own.
                    None => {
                        extra += 1;
                        format!("{run}-extra-{extra}")
                    }
                };
                let mut content: Vec<ToolCallContent> = ended
                    .files
                    .iter()
                    .map(|f| {
                        ToolCallContent::Diff(
                            Diff::new(f.path.clone(), f.new_text.clone())
                                .old_text(f.old_text.clone()),
                        )
                    })
                    .collect();
                if let Some(e) = &step.error {
                    content.push(text_content(&crate::edit::text::clip(e.trim(), 600)));
                }
                let status = match step.status {
                    StepStatus::Done => ToolCallStatus::Completed,
                    _ => ToolCallStatus::Failed,
                };
                let title = format!("{}: {}", capitalized(&step.name), step.text);
                let locations = ended
                    .files
                    .iter()
                    .map(|f| location(&f.path, f.old_text.as_deref(), &f.new_text))
                    .collect();
                peer.call(
                    &calls,
                    &id,
                    &title,
                    ToolKind::Edit,
                    status,
                    content,
                    locations,
                );
                if !calls.contains(&id) {
                    calls.push(id);
                }
            }
            RunEvent::Command(command) => match *command {
                CommandEvent::Started { id, kind, line } => {
                    let id = format!("{run}-command-{id}");
                    peer.update(SessionUpdate::ToolCall(
                        ToolCall::new(
                            ToolCallId::new(id.clone()),
                            format!("{}: {line}", kind.name()),
                        )
                        .kind(ToolKind::Execute)
                        .status(ToolCallStatus::InProgress),
                    ));
                    calls.push(id);
                }
                CommandEvent::Ended { id, run: ran } => {
                    let status = if ran.passed {
                        ToolCallStatus::Completed
                    } else {
                        ToolCallStatus::Failed
                    };
                    let mut output = format!("```\n{}\n```", ran.output.trim_end());
                    if let Some(w) = &ran.warning {
                        output.push_str(&format!("\n{w}"));
                    }
                    let title = format!("{}: {}", ran.kind.name(), ran.line);
                    let id = format!("{run}-command-{id}");
                    peer.call(
                        &calls,
                        &id,
                        &title,
                        ToolKind::Execute,
                        status,
                        vec![text_content(&output)],
                        Vec::new(),
                    );
                }
            },
            RunEvent::Usage(usage) => peer.update(SessionUpdate::UsageUpdate(usage_update(&usage))),
            // An agent panel's user reviews the change itself before anything is written
            // (`session/request_permission`); the plan goes on as it is shown.
            RunEvent::Question(question) => question.answer(true),
            RunEvent::Report(_) | RunEvent::Proposal(_) | RunEvent::Finished(_) => {}
        }
    }
    ended
}

/// ACP's usage update: the tokens in the context of the answer that just ended, of the model's
/// window; the run's totals so far go in `_meta.patchwise` (the stable protocol has no place
/// for them; docs/editors.md).
fn usage_update(usage: &RunUsage) -> UsageUpdate {
    let used = usage.last.input_tokens + usage.last.output_tokens;
    let mut meta = agent_client_protocol::v1::schema::Meta::new();
    meta.insert(
        "patchwise".to_owned(),
        serde_json::json!({
            "model": usage.model,
            "inputTokens": usage.total.input_tokens,
            "outputTokens": usage.total.output_tokens,
            "answers": usage.answers,
        }),
    );
    UsageUpdate::new(used, usage.context_window as u64).meta(meta)
}

/// `step 2` → `Step 2`.
fn capitalized(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn plan_entry(item: &PlanItem) -> PlanEntry {
    let (status, prefix) = match item.status {
        ItemStatus::Pending => (PlanEntryStatus::Pending, ""),
        ItemStatus::Running => (PlanEntryStatus::InProgress, ""),
        ItemStatus::Done => (PlanEntryStatus::Completed, ""),
        // ACP has no failed entry: completed, and the text says it failed.
        ItemStatus::Failed => (PlanEntryStatus::Completed, "FAILED: "),
    };
    PlanEntry::new(
        format!("{prefix}{}", item.text),
        PlanEntryPriority::Medium,
        status,
    )
}

fn step_number(name: &str) -> Option<usize> {
    name.strip_prefix("step ")?.parse().ok()
}

fn diff(f: &ProposalFile) -> ToolCallContent {
    ToolCallContent::Diff(
        Diff::new(f.path.clone(), f.new_text.clone())
            .old_text((!f.created).then(|| f.original.clone())),
    )
}

/// `path` (absolute) at the first line (1-based) where `after` differs from `before` (`None`:
/// a new file, line 1).
fn location(path: &Path, before: Option<&str>, after: &str) -> ToolCallLocation {
    let line = match before {
        None => 1,
        Some(before) => {
            let same = before
                .split_inclusive('\n')
                .zip(after.split_inclusive('\n'))
                .take_while(|(a, b)| a == b)
                .count();
            // Past the last line of both (only the end changed): the last line.
            same.min(after.lines().count().saturating_sub(1)) + 1
        }
    };
    ToolCallLocation::new(path.to_path_buf()).line(u32::try_from(line).unwrap_or(u32::MAX))
}

fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::Content(agent_client_protocol::v1::schema::Content::new(
        ContentBlock::Text(TextContent::new(text.to_owned())),
    ))
}

fn attached(block: &ContentBlock) -> Option<Attached> {
    match block {
        ContentBlock::ResourceLink(link) => {
            let t = target::from_uri(&link.uri)?;
            Some(Attached {
                path: t.path,
                lines: t.lines,
                text: None,
            })
        }
        ContentBlock::Resource(r) => {
            let uri = resource_uri(r);
            let t = target::from_uri(&uri)?;
            let text = match &r.resource {
                agent_client_protocol::v1::schema::EmbeddedResourceResource::TextResourceContents(
                    c,
                ) => Some(c.text.clone()),
                _ => None,
            };
            Some(Attached {
                path: t.path,
                lines: t.lines,
                // Only a whole file's text stands for the file.
                text: text.filter(|_| t.lines.is_none()),
            })
        }
        _ => None,
    }
}

fn resource_uri(r: &agent_client_protocol::v1::schema::EmbeddedResource) -> String {
    match &r.resource {
        agent_client_protocol::v1::schema::EmbeddedResourceResource::TextResourceContents(c) => {
            c.uri.clone()
        }
        agent_client_protocol::v1::schema::EmbeddedResourceResource::BlobResourceContents(c) => {
            c.uri.clone()
        }
        _ => String::new(),
    }
}

fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Where a source can be opened: its URL, or the workspace file it names.
fn source_uri(s: &crate::store::SourceRecord, cwd: &Path) -> String {
    if let Some(url) = &s.url {
        return url.clone();
    }
    if let Some(doi) = &s.doi {
        return format!("https://doi.org/{doi}");
    }
    let path = Path::new(&s.provider_id);
    if path.is_absolute() {
        file_uri(path)
    } else {
        file_uri(&cwd.join(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(before: Option<&str>, after: &str) -> Option<u32> {
        location(Path::new("/w/a.rs"), before, after).line
    }

    #[test]
    fn a_location_is_the_first_changed_line() {
        assert_eq!(line(Some("a\nb\nc\n"), "a\nB\nc\n"), Some(2));
        assert_eq!(line(Some("a\nb\n"), "x\nb\n"), Some(1));
        // Lines added at the end: the first new line.
        assert_eq!(line(Some("a\nb\n"), "a\nb\nc\n"), Some(3));
        // The last line's newline added: that line.
        assert_eq!(line(Some("a\nb"), "a\nb\n"), Some(2));
        // Lines removed at the end: the last line left.
        assert_eq!(line(Some("a\nb\nc\n"), "a\n"), Some(1));
        // A new file, and a file emptied.
        assert_eq!(line(None, "fn main() {}\n"), Some(1));
        assert_eq!(line(Some("a\n"), ""), Some(1));
    }
}
