//! Write sessions: long content a model streams as plain text (`docs/editing.md`).
//!
//! A small model fails to put a 400-line file inside one JSON string argument: the JSON is cut
//! at the output-token limit, escaped wrongly, or abandoned halfway, and the whole attempt is
//! lost. Here the model calls `begin_write {path, mode}`, gets a session id and an end marker
//! unique to the session, and streams the content as its next answer. The tool loop hands every
//! answer to [`WriteSessions::take_answer`] while a session is open:
//!
//! - an answer cut before the marker (output-token limit, or simply no marker) keeps its
//!   complete lines; the model is told the file, how many lines arrived, the last three, and how
//!   to continue — at most `[tools] write_continuations` times (default 3), the parts joined
//!   without repeating lines the model wrote twice (`edit::streamed::join`);
//! - content that looks unfinished (an unclosed block, a fence left open, a heading with nothing
//!   under it, a line cut inside a string) is not applied: the model continues it, or confirms
//!   with `end_write {id, complete: true}`;
//! - content that does not parse as the file's format (JSON, TOML, YAML, code through
//!   tree-sitter) is refused with line and column, or only reported, per `[tools] validate`
//!   (`error`, `warn`, `off`, per extension under `[tools.validate_by_extension]`);
//! - the content then joins the run's working copy like any edit: nothing partial ever reaches a
//!   proposal, and nothing is written to disk.
//!
//! Native tool calls and the text protocol feed the same state: the content is the answer's
//! text either way.

use serde_json::Value;

use crate::config::{ToolsSection, ValidateLevel};
use crate::edit::streamed::{self, Kind};
use crate::model::{ChatResponse, FinishReason, ToolCall};
use crate::syntax::validate::{self, Format};
use crate::tools::{Session, Status, ToolError, ToolOutcome, WholeMode, WholeTarget};

/// How many times content that failed validation may be sent again before the session ends.
const MAX_RESENDS: usize = 2;

/// The validation level `[tools]` sets for `path` (by its extension).
fn validate_for(options: &ToolsSection, path: &str) -> ValidateLevel {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((_, ext)) => options.validate_for(ext),
        None => options.validate,
    }
}

/// What the next answer is expected to be.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    /// The content, from its first line.
    Content,
    /// The rest of a cut answer, from the line after the last one received.
    Continuation,
    /// Content that looks unfinished: more of it, or `end_write {complete: true}`.
    Confirmation,
}

#[derive(Debug, Clone)]
struct Open {
    id: String,
    marker: String,
    mode: WholeMode,
    target: WholeTarget,
    /// Complete lines received so far (fences not yet removed).
    received: String,
    expect: Expect,
    continuations: usize,
    resends: usize,
}

/// The write sessions of one run (at most one open at a time).
#[derive(Debug, Clone, Default)]
pub struct WriteSessions {
    options: ToolsSection,
    open: Option<Open>,
    opened: usize,
}

/// What [`WriteSessions::take_answer`] did with an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// The message for the model (the next user turn).
    pub reply: String,
    /// The file written into the working copy, when the content was applied.
    pub wrote: Option<std::path::PathBuf>,
}

impl WriteSessions {
    /// Sessions with the options of `[tools]`.
    pub fn new(options: ToolsSection) -> WriteSessions {
        WriteSessions {
            options,
            open: None,
            opened: 0,
        }
    }

    /// Whether the next answer should be plain content (ask for it without tool calls).
    pub fn expects_content(&self) -> bool {
        self.open
            .as_ref()
            .is_some_and(|o| o.expect != Expect::Confirmation)
    }

    /// Whether the open session's content looked unfinished and waits for more of it or for
    /// `end_write {complete: true}` (the only time `end_write` is of use).
    pub fn awaits_confirmation(&self) -> bool {
        self.open
            .as_ref()
            .is_some_and(|o| o.expect == Expect::Confirmation)
    }

    /// Runs calls in order: `begin_write` and `end_write` here, the others through `session`
    /// (consecutive ones together, so reads still run in parallel).
    pub fn execute_all(&mut self, session: &mut Session, calls: &[ToolCall]) -> Vec<ToolOutcome> {
        let mut out = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            let name = crate::tools::canonical_name(&calls[i].name);
            match name {
                Some("begin_write") => {
                    out.push(self.begin(session, &calls[i]));
                    i += 1;
                }
                Some("end_write") => {
                    out.push(self.end(session, &calls[i]));
                    i += 1;
                }
                _ => {
                    let j = (i..calls.len())
                        .find(|&j| {
                            crate::tools::canonical_name(&calls[j].name)
                                .is_some_and(crate::tools::is_run_tool)
                        })
                        .unwrap_or(calls.len());
                    if self.open.take().is_some() {
                        tracing::debug!("write session dropped: the model called other tools");
                    }
                    out.extend(session.execute_all(&calls[i..j]));
                    i = j;
                }
            }
        }
        out
    }

    fn begin(&mut self, session: &mut Session, call: &ToolCall) -> ToolOutcome {
        let args = |k: &str| call.arguments.get(k).and_then(Value::as_str);
        let fail = |e: ToolError| outcome(call, "begin_write", e.to_string(), Status::Failed(e));
        let Some(path) = args("path").or_else(|| args("file_path")) else {
            return fail(invalid("begin_write", "expected `path`, the file to write"));
        };
        let mode = match args("mode") {
            None => WholeMode::Create,
            Some(m) => match WholeMode::parse(m) {
                Some(m) => m,
                None => {
                    return fail(invalid(
                        "begin_write",
                        &format!("unknown mode `{m}`; use create, overwrite or append"),
                    ));
                }
            },
        };
        let target = match session.check_whole(path, mode) {
            Ok(t) => t,
            Err(e) => return fail(e),
        };
        let open = self.open_session(target, mode);
        let text = format!(
            "Write session {} is open for {} ({}). Send the content as your next answer: \
             plain text exactly as the file should read (not JSON, not a tool call), from its \
             first line to its last. Then write this marker on a line of its own:\n{}\n\
             If your answer is cut off, you will be told how to continue.",
            open.id,
            open.target.resolved.rel,
            mode.name(),
            open.marker
        );
        self.open = Some(open);
        outcome(call, "begin_write", text, Status::Ok)
    }

    fn end(&mut self, session: &mut Session, call: &ToolCall) -> ToolOutcome {
        let id = call
            .arguments
            .get("id")
            .or_else(|| call.arguments.get("session"))
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .unwrap_or_default();
        let complete = match call.arguments.get("complete") {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s.trim().eq_ignore_ascii_case("true"),
            _ => false,
        };
        let fail = |e: ToolError| outcome(call, "end_write", e.to_string(), Status::Failed(e));
        let Some(open) = self.open.as_ref() else {
            return fail(invalid(
                "end_write",
                "no write session is open; start one with begin_write",
            ));
        };
        if open.id != id.trim() {
            return fail(invalid(
                "end_write",
                &format!("the open write session is {}, not `{id}`", open.id),
            ));
        }
        if !complete {
            let open = open.clone();
            let text = format!(
                "Write session {} stays open. {}",
                open.id,
                continue_instruction(&open)
            );
            return outcome(call, "end_write", text, Status::Ok);
        }
        let mut open = self.open.take().expect("checked above");
        let content = finished_content(&open.received);
        match self.apply(session, &mut open, content) {
            Ok((text, path)) => outcome(
                call,
                "end_write",
                text,
                Status::Edited {
                    path,
                    matched_by: "write-session".to_owned(),
                },
            ),
            Err(text) => {
                let e = ToolError::InvalidArguments {
                    tool: "end_write".to_owned(),
                    message: text,
                };
                outcome(call, "end_write", e.to_string(), Status::Failed(e))
            }
        }
    }

    /// Takes an answer as content when a session waits for it; `None` when the answer is not
    /// content (no session open, or only tool calls, which run as usual).
    pub fn take_answer(
        &mut self,
        session: &mut Session,
        response: &ChatResponse,
    ) -> Option<Collected> {
        self.open.as_ref()?;
        if response.text.trim().is_empty() && !response.tool_calls.is_empty() {
            return None;
        }
        let open = self.open.take()?;
        let mut reply = String::new();
        if !response.tool_calls.is_empty() {
            reply.push_str(
                "(The tool calls in that answer were not run: it was taken as the file's \
                 content.)\n",
            );
        }
        let cut = streamed::cut_at_marker(&response.text, &open.marker);
        let length = response.finish == Some(FinishReason::Length);
        // An answer that stopped on its own right after closing the code block around the
        // content has ended it; whether the content is finished is checked as for a marker.
        let mut ended = cut.ended;
        if !ended && !length && streamed::closed_by_fence(&open.received, cut.body) {
            ended = true;
            reply.push_str(&format!(
                "(No end marker: the closed code block was taken as the end of the content. \
                 Next time end it with {} on its own line.)\n",
                open.marker
            ));
        }
        Some(self.receive(session, open, cut.body, ended, length, reply))
    }

    /// Takes a code block answered instead of a `begin_write` call as the content of `path`
    /// (`docs/editing.md`, "Write sessions"): a session is opened for it as if the model had
    /// called `begin_write`, so the block is validated, checked for an unfinished end and, when
    /// the answer was cut at the output-token limit, continued. `Err` when `path` may not be
    /// written whole in `mode` (the message for the model).
    pub fn adopt_block(
        &mut self,
        session: &mut Session,
        path: &str,
        mode: WholeMode,
        response: &ChatResponse,
    ) -> Result<Collected, String> {
        let blocks = crate::edit::text::fenced_blocks(&response.text);
        let Some(block) = blocks.iter().max_by_key(|b| b.body.len()) else {
            return Err("the answer has no code block".to_owned());
        };
        let target = session.check_whole(path, mode).map_err(|e| e.to_string())?;
        let open = self.open_session(target, mode);
        let reply = format!(
            "Your code block was taken as the content of {} (write session {}).\n",
            open.target.resolved.rel, open.id
        );
        let length = response.finish == Some(FinishReason::Length);
        if block.closed {
            return Ok(self.receive(session, open, &block.body, true, length, reply));
        }
        // An unclosed block keeps its opening fence: the continuation may close it, and the
        // fence that then wraps all of the content is removed.
        let from = streamed::after_lines(&response.text, block.open);
        Ok(self.receive(
            session,
            open,
            &response.text[from..],
            !length,
            length,
            reply,
        ))
    }

    fn open_session(&mut self, target: WholeTarget, mode: WholeMode) -> Open {
        if let Some(old) = self.open.take() {
            tracing::debug!("write session {} replaced by a new one", old.id);
        }
        self.opened += 1;
        let id = format!("w{}", self.opened);
        Open {
            marker: streamed::end_marker(&id),
            id,
            mode,
            target,
            received: String::new(),
            expect: Expect::Content,
            continuations: 0,
            resends: 0,
        }
    }

    /// Adds `body` (the text before the marker, or the whole answer when `ended` is false; cut
    /// at the output-token limit when `length`) to the open session's content, then continues, confirms, validates or applies it.
    fn receive(
        &mut self,
        session: &mut Session,
        mut open: Open,
        body: &str,
        ended: bool,
        length: bool,
        mut reply: String,
    ) -> Collected {
        let body = if ended {
            let mut b = body.to_owned();
            if !b.is_empty() && !b.ends_with('\n') {
                b.push('\n');
            }
            b
        } else {
            streamed::complete_lines(body).0.to_owned()
        };
        open.received = match open.expect {
            Expect::Content => {
                if ended
                    && let Some(echo) =
                        begin_arguments(&finished_content(&body), &open.target.resolved.rel)
                {
                    reply.push_str(&format!(
                        "{echo}, not the content of {}; nothing was written.",
                        open.target.resolved.rel
                    ));
                    let ask = format!(
                        " Write session {} is open: send the file's content itself as plain \
                         text, from its first line to its last, then {} on its own line.",
                        open.id, open.marker
                    );
                    return self.resend(open, reply, Some(&ask));
                }
                body
            }
            Expect::Continuation | Expect::Confirmation => {
                // The numbers of the "last lines received" message, copied in front of the
                // lines, are not content.
                let shown = received_so_far(&open).lines().count();
                let near = shown.saturating_sub(5).max(1)..=shown + 1;
                let body = streamed::strip_echoed_numbers(&body, near);
                streamed::join(&open.received, &body)
            }
        };
        if !ended {
            open.continuations += 1;
            let mut why = if length {
                "was cut off at the output-token limit".to_owned()
            } else {
                "ended without the end marker".to_owned()
            };
            if length && let Some(found) = streamed::looping_tail(&open.received) {
                // A model in a loop writes the same block until the limit: keep its first
                // occurrence and ask for what comes after it.
                let keep = streamed::after_lines(&open.received, found.keep_lines);
                open.received.truncate(keep);
                why = format!(
                    "repeated the same {} over and over ({} times) until it was cut off at the \
                     output-token limit; the repeats were dropped",
                    lines_word(found.period),
                    found.times
                );
            }
            let limit = self.options.write_continuations as usize;
            if open.continuations > limit {
                reply.push_str(&format!(
                    "The content of {} {why} again; after {} continuation{} the write session \
                     {} is closed and nothing was written. Write the file in smaller pieces: \
                     begin_write with mode create for the first part, then begin_write with \
                     mode append for each next part.",
                    open.target.resolved.rel,
                    limit,
                    if limit == 1 { "" } else { "s" },
                    open.id
                ));
                return Collected { reply, wrote: None };
            }
            open.expect = Expect::Continuation;
            reply.push_str(&truncated(&open, &why));
            self.open = Some(open);
            return Collected { reply, wrote: None };
        }
        let content = finished_content(&open.received);
        let signs = unfinished_signs(&open, &content);
        if !signs.is_empty() {
            open.received = content;
            open.expect = Expect::Confirmation;
            reply.push_str(&format!(
                "The content of {} ({}) looks unfinished:\n{}\nNothing is written yet. If it is \
                 not finished, {}. If it is complete as it is, call end_write with \
                 {{\"id\": \"{}\", \"complete\": true}}.",
                open.target.resolved.rel,
                lines(&open.received),
                signs
                    .iter()
                    .map(|s| format!("- {s}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
                continue_sentence(&open),
                open.id
            ));
            self.open = Some(open);
            return Collected { reply, wrote: None };
        }
        match self.apply(session, &mut open, content) {
            Ok((text, path)) => {
                reply.push_str(&text);
                Collected {
                    reply,
                    wrote: Some(path),
                }
            }
            Err(text) => {
                reply.push_str(&text);
                self.resend(open, reply, None)
            }
        }
    }

    /// Keeps the session open for the content sent again after `reply` (which says what was
    /// wrong), at most [`MAX_RESENDS`] times; `ask` is how to send it, when `reply` does not say.
    fn resend(&mut self, mut open: Open, mut reply: String, ask: Option<&str>) -> Collected {
        if open.resends < MAX_RESENDS {
            open.resends += 1;
            open.received.clear();
            open.expect = Expect::Content;
            if let Some(ask) = ask {
                reply.push_str(ask);
            }
            self.open = Some(open);
        } else {
            reply.push_str(&format!(
                "\n(That was the last try: write session {} is closed. Start again with \
                 begin_write.)",
                open.id
            ));
        }
        Collected { reply, wrote: None }
    }

    /// Validates `content` and puts it into the working copy; the text for the model, or why
    /// not (then the session may stay open for the corrected content).
    fn apply(
        &mut self,
        session: &mut Session,
        open: &mut Open,
        content: String,
    ) -> Result<(String, std::path::PathBuf), String> {
        let rel = open.target.resolved.rel.clone();
        let new_text = match (&open.mode, &open.target.current) {
            (WholeMode::Append, Some((current, _))) => {
                let mut t = current.clone();
                if !t.is_empty() && !t.ends_with('\n') {
                    t.push('\n');
                }
                t.push_str(&content);
                t
            }
            _ => content,
        };
        let mut note = String::new();
        let mode = validate_for(&self.options, &rel);
        if let (Some(format), true) = (Format::of(&rel), mode != ValidateLevel::Off) {
            let problems = validate::validate(format, &new_text);
            if !problems.is_empty() {
                let listed: Vec<String> = problems.iter().map(|p| format!("  {p}")).collect();
                if mode == ValidateLevel::Error {
                    return Err(format!(
                        "The content of {rel} is not valid {}, so nothing was written:\n{}\n\
                         Send the whole corrected content as your next answer, then the marker \
                         {} on its own line.",
                        format.name(),
                        listed.join("\n"),
                        open.marker
                    ));
                }
                note = format!(
                    "\nWarning: it is not valid {}:\n{}\nFix it with edit_file.",
                    format.name(),
                    listed.join("\n")
                );
            }
        }
        let text = session.write_whole(&open.target, new_text);
        Ok((format!("{text}{note}"), open.target.resolved.abs.clone()))
    }
}

fn outcome(call: &ToolCall, name: &str, content: String, status: Status) -> ToolOutcome {
    ToolOutcome {
        call_id: call.id.clone(),
        name: name.to_owned(),
        content,
        status,
    }
}

fn invalid(tool: &str, message: &str) -> ToolError {
    ToolError::InvalidArguments {
        tool: tool.to_owned(),
        message: message.to_owned(),
    }
}

/// The received content with a fence that wraps all of it removed (closed at the end, or never).
fn finished_content(received: &str) -> String {
    streamed::strip_unclosed_opening_fence(streamed::strip_wrapping_fence(received)).to_owned()
}

fn lines(text: &str) -> String {
    lines_word(text.lines().count())
}

fn lines_word(n: usize) -> String {
    match n {
        1 => "1 line".to_owned(),
        n => format!("{n} lines"),
    }
}

/// Content that is only `begin_write`'s own arguments for this file (`{"path": "<rel>", "mode":
/// …}`): a small model answers the session's first turn with the call it just made. The sentence
/// saying so, or `None` for real content (a JSON file `{"mode": "dark"}`, or one naming another
/// path, is content).
fn begin_arguments(content: &str, rel: &str) -> Option<String> {
    let value: Value = serde_json::from_str(content.trim()).ok()?;
    let object = value.as_object()?;
    let known = ["path", "file_path", "mode", "id"];
    let names_this_file = ["path", "file_path"].iter().any(|k| {
        object
            .get(*k)
            .and_then(Value::as_str)
            .is_some_and(|p| p.trim_start_matches("./") == rel)
    });
    (names_this_file && object.keys().all(|k| known.contains(&k.as_str()))).then(|| {
        format!(
            "That answer is begin_write's arguments again ({})",
            serde_json::to_string(&value).unwrap_or_default()
        )
    })
}

fn kind_of(rel: &str) -> Kind {
    if streamed::is_markdown(rel) {
        Kind::Markdown
    } else if Format::of(rel).is_some() {
        Kind::Code
    } else {
        Kind::Text
    }
}

/// Why the finished content looks cut short (empty: it does not).
fn unfinished_signs(open: &Open, content: &str) -> Vec<String> {
    let rel = &open.target.resolved.rel;
    if content.trim().is_empty() {
        return vec!["no content arrived before the marker".to_owned()];
    }
    let mut signs = streamed::incomplete_signs(content, kind_of(rel));
    if let Some(format) = Format::of(rel) {
        let whole = match (&open.mode, &open.target.current) {
            (WholeMode::Append, Some((current, _))) => format!("{current}{content}"),
            _ => content.to_owned(),
        };
        if let Some(s) = validate::unfinished_end(format, &whole) {
            signs.push(s);
        }
    }
    signs
}

/// The content received so far as the model should count it: without a fence it opened and
/// has not closed yet (line 1 is the file's first line).
fn received_so_far(open: &Open) -> &str {
    streamed::strip_unclosed_opening_fence(&open.received)
}

/// "continue the content from the line after "…", then the marker".
fn continue_sentence(open: &Open) -> String {
    match streamed::last_lines(received_so_far(open), 1).first() {
        Some((_, last)) => format!(
            "continue the content from the line after \"{}\" (do not repeat earlier lines), then \
             write {} on its own line",
            last.trim_end(),
            open.marker
        ),
        None => format!(
            "send the content from its first line, then write {} on its own line",
            open.marker
        ),
    }
}

fn continue_instruction(open: &Open) -> String {
    let mut s = continue_sentence(open);
    s[..1].make_ascii_uppercase();
    s.push('.');
    s
}

/// The message after an answer that stopped before the marker.
fn truncated(open: &Open, why: &str) -> String {
    let rel = &open.target.resolved.rel;
    let so_far = received_so_far(open);
    let last = streamed::last_lines(so_far, 3);
    let mut s = format!(
        "Your answer {why}: {} of {rel} received so far ({}), nothing is written yet.",
        lines(so_far),
        open.id
    );
    if !last.is_empty() {
        s.push_str(" The last lines received:\n");
        for (n, l) in &last {
            s.push_str(&format!("{n:>6}\t{l}\n"));
        }
    } else {
        s.push('\n');
    }
    s.push_str(&continue_instruction(open));
    s
}

#[cfg(test)]
mod tests {
    use super::begin_arguments;

    #[test]
    fn only_the_call_for_this_file_is_begin_writes_arguments() {
        let rel = "schema/config.schema.json";
        // Recorded from Qwen2.5-Coder 1.5B (fixtures/model/write-sessions/session-2-arguments.json).
        let echo = "{\n  \"mode\": \"create\",\n  \"path\": \"schema/config.schema.json\"\n}\n";
        assert!(begin_arguments(echo, rel).is_some());
        assert!(begin_arguments("{\"file_path\": \"./schema/config.schema.json\"}", rel).is_some());
        // A JSON file whose keys happen to be among the arguments' names is content.
        assert!(begin_arguments("{\"mode\": \"dark\"}", rel).is_none());
        assert!(begin_arguments("{\"path\": \"/usr/bin\", \"mode\": \"755\"}", rel).is_none());
        assert!(
            begin_arguments(
                "{\"path\": \"schema/config.schema.json\", \"type\": \"object\"}",
                rel
            )
            .is_none()
        );
        assert!(begin_arguments("not json", rel).is_none());
    }
}
