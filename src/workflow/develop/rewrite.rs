//! Steps that rewrite (`docs/develop.md`, "Steps that rewrite"): the step's files are shown
//! whole, once, with the tests that exercise them to read, and the answer is the complete new
//! text of each file it changes in a code block under the file's path (Aider's `whole` format).
//! Small models rewrite a file far more reliably than they write a tool call (edit's lesson,
//! `docs/editing.md`, "Edit protocols"), so this is what `auto` asks a step for whenever its
//! files fit the model's window.
//!
//! A block becomes a change through the engine (`edit::rewrite_whole`: unchanged lines keep the
//! file's bytes, the change is the smallest that does it), never by overwriting the file, and
//! only after the checks a whole-file answer gets: no syntax errors added, no top-level
//! definition written twice, no stub the request asked for left as it was beside a new
//! function. Also here: what a step must have done besides passing the check (`not_done_yet`).

use std::collections::HashSet;

use similar::{ChangeTag, TextDiff};

use crate::edit::RefusalKind;
use crate::edit::whole::{
    FileBlock, duplicate_definitions, file_blocks, path_line, untouched_stubs,
};
use crate::model::budget::Budget;
use crate::model::{ChatModel, Message, ToolCall};
use crate::syntax::Language;
use crate::tokens::count_tokens;
use crate::tools::Status;
use crate::workflow::edit::prompt::{fence_tag, shown_target};
use crate::workflow::model_loop::rewrite::{assign_blocks, rewrite_targets, syntax_problems};
use crate::workflow::model_loop::target::{self, EditTarget};
use crate::workflow::model_loop::{REWRITE_MAX_LINES, failure_notes};

use super::asked::{
    self, asked_flags, asks_for_test, changes_tests, defined_in_code_spans, says_create,
};
use super::explore::{is_source, is_test_file, known_path};
use super::plan::Plan;
use super::step::{STEP_ATTEMPTS, StepSpec, Turn};
use super::{DevelopFailure, Run, rel_of};

/// The files of a step, as the rewrite protocol shows them.
#[derive(Debug, Clone, Default)]
pub(super) struct StepFiles {
    /// Files the step changes that exist (workspace-relative).
    pub edit: Vec<String>,
    /// Files the step creates.
    pub create: Vec<String>,
    /// The tests that exercise them: shown to read, not to change (the step does not name them).
    pub read_only: Vec<String>,
    /// Files of `edit` too large to show whole, with the names of the items the step names in
    /// each: those items are shown and rewritten, one code block each, as an edit rewrites its
    /// target (`model_loop::target::named`, resolved again on the file as it is now).
    pub items: Vec<(String, Vec<String>)>,
}

impl StepFiles {
    /// Where a whole-file answer is complete: every file the step changes or creates has its
    /// closed code block, and the answer has gone on to a line naming a file it was shown only
    /// to read — the start of a copy of the tests, which changes nothing (passed over when
    /// read) and costs the user the time of writing it out: Qwen2.5-Coder-1.5B copied the tests
    /// after its answer in 28 of 146 recorded step answers, a fifth of all their text, at ~9
    /// tokens a second. Returns where to cut (the start of that line); `None` reads on. Files
    /// shown in parts are never cut (their answer is several blocks per file).
    pub(super) fn answer_complete(&self, text: &str) -> Option<usize> {
        if !self.items.is_empty() || self.read_only.is_empty() {
            return None;
        }
        let body = text.strip_suffix('\n')?;
        let start = body.rfind('\n').map_or(0, |i| i + 1);
        let named = path_line(&body[start..])?;
        if !self.read_only.contains(&named) {
            return None;
        }
        let blocks = file_blocks(&text[..start]);
        let targets: Vec<&String> = self.edit.iter().chain(&self.create).collect();
        let has = |t: &String| {
            blocks.iter().any(|b| {
                b.closed
                    && match &b.path {
                        Some(p) => p == t,
                        None => targets.len() == 1,
                    }
            })
        };
        (!targets.is_empty() && targets.iter().all(|t| has(t))).then_some(start)
    }
}

/// What the code blocks of one answer did.
#[derive(Debug, Default)]
pub(super) struct BlocksApplied {
    /// Files changed or created.
    pub changed: Vec<String>,
    /// Why blocks were not applied, one line each, for the model.
    pub problems: Vec<String>,
    /// Some block repeated its file as it is.
    pub unchanged: bool,
    /// Some block for a file to change was a copy of the tests ([`copies_tests`]).
    pub copied_tests: bool,
}

/// File stems too common to say which test belongs to a file.
const GENERIC_STEMS: [&str; 9] = [
    "lib", "main", "mod", "index", "__init__", "app", "utils", "test", "tests",
];

/// Tokens of the prompt besides the files (system, request, plan, instructions).
const PROMPT_OVERHEAD: usize = 900;

impl Run<'_> {
    /// The files of `spec`: those it names (existing, or to create) and the tests that go
    /// with them.
    pub(super) fn step_files(&mut self, spec: &StepSpec) -> StepFiles {
        let all = self.workspace_files();
        let mut out = StepFiles::default();
        // A test file the step names only to say where the tests are ("The tests are in
        // pangram_test.py") is shown to read: the user's tests change only when the step
        // asks for that.
        let asked = format!(
            "{}\n{}\n{}",
            self.request.request,
            spec.text,
            spec.goal.as_deref().unwrap_or("")
        );
        let tests_change = changes_tests(&asked);
        // The step's files are what it reads and changes: read at once, not one by one.
        let named: Vec<String> = spec
            .files
            .iter()
            .filter(|f| !f.ends_with('/'))
            .cloned()
            .collect();
        self.prefetch(&named);
        for f in spec.files.iter().filter(|f| !f.ends_with('/')) {
            if self.read_text(f).is_some() {
                if is_test_file(f) && !tests_change {
                    out.read_only.push(f.clone());
                } else {
                    out.edit.push(f.clone());
                }
            } else {
                out.create.push(f.clone());
            }
        }
        let stems: Vec<String> = out
            .edit
            .iter()
            .chain(&out.create)
            .filter(|f| !is_test_file(f))
            .map(|f| stem(f).to_owned())
            .filter(|s| s.len() >= 3 && !GENERIC_STEMS.contains(&s.as_str()))
            .collect();
        if out.edit.is_empty() && out.create.is_empty() {
            // A step about the tests alone changes them.
            out.edit = std::mem::take(&mut out.read_only);
        }
        let named_tests = out.read_only.len();
        let tests: Vec<String> = all
            .into_iter()
            .filter(|f| is_source(f) && is_test_file(f))
            .collect();
        let found: Vec<String> = tests
            .iter()
            .filter(|f| {
                !out.edit.contains(f) && !out.create.contains(f) && !out.read_only.contains(f)
            })
            .filter(|f| {
                let name = f.rsplit('/').next().unwrap_or(f);
                stems.iter().any(|s| name.contains(s.as_str()))
            })
            .take(2usize.saturating_sub(named_tests))
            .cloned()
            .collect();
        out.read_only.extend(found);
        // A test file named after another module that imports the one the step changes
        // exercises it too: `tests/test_core.py` tests `export` of `inventory/cli.py`. Not
        // shown, the 1.5B model rewrote `export` for a `--json` flag and broke that test (the
        // develop bench, py-flag).
        if out.read_only.len() < 2 {
            let targets: Vec<String> = out
                .edit
                .iter()
                .filter(|f| !is_test_file(f))
                .cloned()
                .collect();
            let mut candidates: Vec<String> = tests
                .into_iter()
                .filter(|f| !out.edit.contains(f) && !out.read_only.contains(f))
                .collect();
            nearest_first(&mut candidates, &targets);
            for f in candidates.into_iter().take(IMPORT_SCAN_FILES) {
                if out.read_only.len() >= 2 {
                    break;
                }
                let Some(text) = self.scan_text(&f) else {
                    continue;
                };
                if targets.iter().any(|t| imports_module(&text, t)) {
                    out.read_only.push(f);
                }
            }
        }
        out
    }

    /// The text of a workspace-relative file in the working copy for a scan over many files
    /// (`FileSystem::scan_text`: from disk where the run's reads go through an editor).
    pub(super) fn scan_text(&mut self, rel: &str) -> Option<String> {
        let s = self.session();
        let resolved = s.sandbox.resolve(rel, s.fs.as_ref()).ok()?;
        s.copy.scan(&resolved.abs, s.fs.as_ref()).ok()
    }

    /// Reads these workspace-relative files ahead, all at once (`FileSystem::prefetch`), for
    /// the `read_text`s that follow.
    pub(super) fn prefetch(&mut self, rels: &[String]) {
        let s = self.session();
        let paths: Vec<std::path::PathBuf> = rels
            .iter()
            .filter_map(|r| s.sandbox.resolve(r, s.fs.as_ref()).ok())
            .map(|r| r.abs)
            .collect();
        s.fs.prefetch(&paths);
    }

    /// The text of a workspace-relative file in the working copy.
    pub(super) fn read_text(&mut self, rel: &str) -> Option<String> {
        let s = self.session();
        let resolved = s.sandbox.resolve(rel, s.fs.as_ref()).ok()?;
        if !s.copy.exists(&resolved.abs, s.fs.as_ref()) {
            return None;
        }
        s.copy
            .read(&resolved.abs, s.fs.as_ref())
            .ok()
            .map(|(t, _)| t)
    }

    /// Tokens of the files of `edit` as a rewrite prompt shows them: whole, or the items.
    fn shown_tokens(&mut self, files: &StepFiles, model: &dyn ChatModel) -> usize {
        let encoding = Budget::for_window(model.name(), model.context_window()).encoding;
        let mut n = 0;
        for f in &files.edit {
            let Some(text) = self.read_text(f) else {
                continue;
            };
            n += match items_of(files, f, &text) {
                Some(targets) => targets
                    .iter()
                    .map(|t| count_tokens(t.text(&text), encoding) + 30)
                    .sum(),
                None => count_tokens(&text, encoding),
            };
        }
        n
    }

    /// Whether the rewrite protocol can take the step: it has files, and they, the prompt and
    /// the answer (the files again, a quarter more) fit the model's window.
    pub(super) fn rewrite_fits(&mut self, files: &StepFiles, model: &dyn ChatModel) -> bool {
        if files.edit.is_empty() && files.create.is_empty() {
            return false;
        }
        let window = model.context_window();
        let shown = self.shown_tokens(files, model);
        let wanted = shown * 5 / 4 + 300 + 700 * files.create.len();
        wanted <= window / 2 && shown + PROMPT_OVERHEAD + wanted.max(1024) <= window * 9 / 10
    }

    /// Whether the rewrite protocol can take the step, showing a file too large to rewrite whole
    /// as the items the step names in it (largest files first, as few as needed; `files.items`
    /// says which). False when a file that does not fit names no item the step asks about.
    pub(super) fn fit_rewrite(
        &mut self,
        spec: &StepSpec,
        files: &mut StepFiles,
        model: &dyn ChatModel,
    ) -> bool {
        files.items.clear();
        if self.rewrite_fits(files, model) {
            return true;
        }
        let names = step_names(spec);
        let encoding = Budget::for_window(model.name(), model.context_window()).encoding;
        let mut by_size: Vec<(usize, String, Vec<String>)> = Vec::new();
        for f in &files.edit {
            let Some(text) = self.read_text(f) else {
                continue;
            };
            let language = Language::from_path(f).unwrap_or(Language::Text);
            let found: Vec<String> = target::named(&text, language, &names, REWRITE_MAX_LINES)
                .into_iter()
                .filter_map(|t| t.name)
                .collect();
            if !found.is_empty() {
                by_size.push((count_tokens(&text, encoding), f.clone(), found));
            }
        }
        by_size.sort_by_key(|b| std::cmp::Reverse(b.0));
        for (_, f, found) in by_size {
            files.items.push((f, found));
            if self.rewrite_fits(files, model) {
                return true;
            }
        }
        files.items.clear();
        false
    }

    /// Output tokens kept for a rewrite answer: the files again, a quarter more, and room for
    /// each new file.
    pub(super) fn rewrite_answer_tokens(
        &mut self,
        files: &StepFiles,
        model: &dyn ChatModel,
    ) -> u32 {
        let window = model.context_window();
        let shown = self.shown_tokens(files, model);
        (shown * 5 / 4 + 300 + 700 * files.create.len()).clamp(1024, window / 2) as u32
    }

    /// The prompt of a rewrite attempt: the files whole (then the tests to read, as far as the
    /// window allows), the request and the step, why earlier attempts failed, `feedback` on the
    /// last answer, and how to answer.
    pub(super) fn rewrite_prompt(
        &mut self,
        plan: &Plan,
        spec: &StepSpec,
        files: &StepFiles,
        failures: &[String],
        afresh: &[String],
        feedback: Option<&str>,
    ) -> Vec<Message> {
        let intro = if files.items.is_empty() {
            "You are an expert programmer carrying out one step of a change to a project. You \
             answer with the complete new text of every file you change: the file's path on a \
             line of its own, then the whole file in one fenced code block, every line written \
             out (never `...` or a placeholder). Change only what the step asks for and keep \
             every other line exactly as it is. Keep the names the files and the request use. \
             Never change the tests you are shown to read.\n"
        } else {
            "You are an expert programmer carrying out one step of a change to a project. You \
             answer with the complete new text of every part of a file you are shown in parts, \
             and of every file shown whole that you change: the file's path on a line of its \
             own, then the new text in one fenced code block, every line written out (never \
             `...` or a placeholder). Change only what the step asks for and keep every other \
             line exactly as it is. Keep the names the files and the request use. Never change \
             the tests you are shown to read.\n"
        };
        // The workspace rules come first in the user message, as context the answer follows
        // and never repeats: in the system message, under markdown headings, the 1.5B model
        // answered by echoing them (heading and all) before the files, and a fix round echoed
        // them again and again until the token limit (the develop bench, rust-rename).
        let system = intro.to_owned();
        let coder = self.roles().coder.clone();
        let window = coder.context_window();
        let encoding = Budget::for_window(coder.name(), window).encoding;
        // The tests come before the files: they stay the same across the attempts and rounds
        // of a step while the files change, and a local server reuses a prompt's unchanged
        // beginning (Qwen2.5-Coder-1.5B on 2 cores reads ~27 prompt tokens a second: a retry
        // that began with the changed file paid ~50 s again for tests it had read). The
        // request stays right after the files, nearest the answer: asked before the file, the
        // 1.5B model gave the file back unchanged (the develop bench, rust-add-fn, 3 attempts).
        let mut files_part = String::new();
        let mut used = 0;
        for f in &files.edit {
            let Some(text) = self.read_text(f) else {
                continue;
            };
            self.record_read(f, &text);
            match items_of(files, f, &text) {
                Some(targets) => {
                    let language = Language::from_path(f).unwrap_or(Language::Text);
                    files_part.push_str(&format!(
                        "{f} is too large to show whole; its parts this step is about:\n\n"
                    ));
                    for t in &targets {
                        let shown = shown_target(f, language, t, t.text(&text));
                        used += count_tokens(&shown, encoding);
                        files_part.push_str(&shown);
                    }
                }
                None => {
                    used += count_tokens(&text, encoding);
                    files_part.push_str(&fenced(f, &text, ""));
                }
            }
        }
        let mut user = rules_as_context(&self.rules);
        let reserve = self.rewrite_answer_tokens(files, coder.as_ref()) as usize;
        let room = (window * 9 / 10).saturating_sub(used + reserve + PROMPT_OVERHEAD);
        let mut test_tokens = 0;
        let mut tests_part = String::new();
        for t in &files.read_only {
            let Some(text) = self.read_text(t) else {
                continue;
            };
            let n = count_tokens(&text, encoding);
            if test_tokens + n > room {
                continue;
            }
            test_tokens += n;
            tests_part.push_str(&fenced(
                t,
                &text,
                " (the tests: read them, do not change them)",
            ));
        }
        // Once the model has answered with a copy of the tests under a file's name, the rest
        // of the step shows the files first and the tests after them, as the plain prompt
        // does: the 1.5B model copies the first file it is shown.
        if self.tests_after_files {
            user.push_str(&files_part);
            user.push_str(&tests_part);
        } else {
            user.push_str(&tests_part);
            user.push_str(&files_part);
        }
        let request = self.request.request.trim().to_owned();
        user.push_str(&format!("Request: {request}\n"));
        if plan.work().count() > 1 {
            user.push_str(&format!("\nPlan:\n{}", plan.numbered(spec.number)));
        }
        if spec.text.trim() != request {
            user.push_str(&format!("\nDo this now ({}): {}\n", spec.name, spec.text));
        }
        for c in &files.create {
            user.push_str(&format!("\n{c} does not exist yet: create it.\n"));
        }
        if let Some(extra) = &spec.extra {
            user.push('\n');
            user.push_str(extra.trim_end());
            user.push('\n');
        }
        if !afresh.is_empty() {
            let names = afresh.join(" and ");
            user.push_str(&format!(
                "\nYour earlier version of {names} failed these tests and was undone: {names} \
                 is shown as it was before the change. Write it anew so that the tests pass; do \
                 not give the earlier version again.\n"
            ));
        }
        if !failures.is_empty() {
            user.push('\n');
            user.push_str(&failure_notes(failures, STEP_ATTEMPTS, 900));
        }
        if let Some(feedback) = feedback {
            user.push_str(&format!("\n{}\n", feedback.trim_end()));
        } else {
            user.push_str(&format!("\n{}", self.answer_shape(files)));
        }
        // Where the answer starts: the first file's path, not the rules or a preamble.
        if let Some(first) = files
            .items
            .first()
            .map(|(f, _)| f)
            .or(files.edit.first())
            .or(files.create.first())
        {
            // A small model copies every file it was shown; tests it repeats cost the user
            // the time of writing them out, and change nothing.
            let not_repeated = if test_tokens > 0 {
                "the rules or the tests"
            } else {
                "the rules"
            };
            user.push_str(&format!(
                "\nStart your answer with the line `{first}`; do not repeat {not_repeated}.\n"
            ));
        }
        vec![Message::system(system), Message::user(user)]
    }

    /// How to answer, naming the files (and the items of a file too large to show whole).
    fn answer_shape(&mut self, files: &StepFiles) -> String {
        let names: Vec<String> = files
            .edit
            .iter()
            .chain(&files.create)
            .filter(|f| !files.items.iter().any(|(i, _)| i == *f))
            .map(|f| format!("`{f}`"))
            .collect();
        let whole = format!(
            "Reply with the complete new {}: for each file you change, its path on a line of its \
             own, then the whole file in one code block.",
            names.join(" and ")
        );
        let mut parts: Vec<String> = Vec::new();
        for (f, _) in &files.items {
            let Some(text) = self.read_text(f) else {
                continue;
            };
            let labels: Vec<String> = items_of(files, f, &text)
                .unwrap_or_default()
                .into_iter()
                .map(|t| t.label)
                .collect();
            parts.push(format!("{} of `{f}`", labels.join(" and ")));
        }
        if parts.is_empty() {
            return whole;
        }
        let items = format!(
            "Reply with the complete rewritten {}: each in its own code block, with the file's \
             path on the line above, written out in full (never `...`).",
            parts.join(", and ")
        );
        if names.is_empty() {
            items
        } else {
            format!(
                "{items} {}",
                whole.replacen("Reply with", "Also reply with", 1)
            )
        }
    }

    /// What to answer after an answer that was not applied.
    pub(super) fn answer_again(&mut self, turn: &Turn<'_>) -> String {
        self.answer_shape(turn.files)
    }

    /// How to answer with a correction after a failing check.
    pub(super) fn correction(&mut self, turn: &Turn<'_>) -> String {
        if turn.files.items.is_empty() {
            "Reply with the complete corrected file(s), each in one code block with its path on \
             the line above."
                .to_owned()
        } else {
            self.answer_shape(turn.files)
        }
    }

    /// The coaching message of the rewrite protocol for a stuck answer.
    pub(super) fn rewrite_coaching(&mut self, turn: &Turn<'_>, refused: bool) -> String {
        format!(
            "{}{}",
            if refused {
                "You can make this change: answer with the code, not with an explanation. "
            } else {
                "Your answer made no change. This step needs a change to the files. "
            },
            self.answer_shape(turn.files)
        )
    }

    fn record_read(&mut self, rel: &str, text: &str) {
        let s = self.session();
        if let Ok(r) = s.sandbox.resolve(rel, s.fs.as_ref()) {
            s.ledger.record_read(r.abs, text);
        }
    }

    /// Applies the code blocks of an answer: each to the file named above it (or the step's
    /// only file), through the engine and the whole-file checks; a new file through
    /// `write_file` (validated like any new file).
    pub(super) async fn apply_blocks(
        &mut self,
        turn: &Turn<'_>,
        blocks: Vec<FileBlock>,
    ) -> Result<BlocksApplied, DevelopFailure> {
        let files = turn.files;
        let targets: Vec<String> = files.edit.iter().chain(&files.create).cloned().collect();
        let all = self.workspace_files();
        let unnamed: Vec<usize> = (0..blocks.len())
            .filter(|&i| blocks[i].path.is_none())
            .collect();
        let mut out = BlocksApplied::default();
        let used = self.apply_item_blocks(turn, &blocks, &mut out);
        for (i, b) in blocks.iter().enumerate() {
            if used.contains(&i) {
                continue;
            }
            let body = b.body.trim_start();
            if body.trim().is_empty() {
                out.problems.push("a code block was empty".to_owned());
                continue;
            }
            if body.starts_with('{') && body.contains("\"name\"") {
                out.problems.push(
                    "a code block held a tool call; write the file's complete text instead"
                        .to_owned(),
                );
                continue;
            }
            let rel = match &b.path {
                Some(p) => known_path(&targets, p)
                    .or_else(|| known_path(&all, p))
                    .unwrap_or_else(|| p.clone()),
                None if targets.len() == 1 => targets[0].clone(),
                None if unnamed.len() == targets.len() => {
                    let k = unnamed.iter().position(|&u| u == i).unwrap_or(0);
                    targets[k].clone()
                }
                None => {
                    out.problems.push(format!(
                        "a code block names no file; write the file's path on the line above \
                         each block ({})",
                        targets.join(", ")
                    ));
                    continue;
                }
            };
            if files.read_only.contains(&rel) {
                // The tests repeated as they are (a small model often copies every file it
                // was shown) change nothing and need no correction; nor does a copy that left
                // some of them out or broke off: told "the tests were not changed", the 1.5B
                // model took that for the problem and gave the same wrong code three times
                // (py-pangram), where what fails is its code.
                let repeated = self.read_text(&rel).is_some_and(|current| {
                    copied_from(&current, &b.body)
                        || matches!(
                            crate::edit::rewrite_whole(&current, &rel, &b.body),
                            Err(r) if r.kind == RefusalKind::NoOp
                        )
                });
                if repeated {
                    out.unchanged = true;
                    continue;
                }
                out.problems.push(format!(
                    "{rel} holds the tests, shown to read only: it was not changed; change the \
                     code so that they pass"
                ));
                continue;
            }
            if let Some((_, names)) = files.items.iter().find(|(f, _)| *f == rel) {
                out.problems.push(format!(
                    "{rel} is too large to rewrite whole: a code block for it must be one of the \
                     parts shown ({}), complete, with its path on the line above",
                    names.join(", ")
                ));
                continue;
            }
            // The tests pasted under the source's name (with or without code below them): the
            // 1.5B model's first answer to js-roman at temperature 0 and six more after it were
            // roman-numerals.test.js under `roman-numerals.js`, which then held the tests.
            if !is_test_file(&rel)
                && let Some(tests) = files.read_only.iter().find(|t| {
                    self.read_text(t)
                        .is_some_and(|text| copies_tests(&text, &b.body))
                })
            {
                out.problems.push(format!(
                    "your code block for {rel} is a copy of {tests} (the tests, shown to read \
                     only), so it was not applied: {rel} must hold only the code the tests import, \
                     never the tests themselves; write {rel} alone"
                ));
                out.copied_tests = true;
                continue;
            }
            match self.read_text(&rel) {
                Some(current) => {
                    let applied = match crate::edit::rewrite_whole(&current, &rel, &b.body) {
                        Ok(a) => a,
                        Err(r) if r.kind == RefusalKind::NoOp => {
                            out.unchanged = true;
                            continue;
                        }
                        Err(r) => {
                            out.problems.push(format!("{rel}: {}", r.message));
                            continue;
                        }
                    };
                    if let Some(problem) =
                        self.whole_file_problems(turn, &rel, &current, &applied.text)
                    {
                        out.problems.push(problem);
                        continue;
                    }
                    if self.write_text(&rel, &current, &applied.text) {
                        out.changed.push(rel);
                    }
                }
                None => {
                    // A new file: when the step names it or says to create one.
                    let goal = turn.spec.goal.clone().unwrap_or_default();
                    let allowed = files.create.contains(&rel)
                        || says_create(&turn.spec.text)
                        || says_create(&self.request.request)
                        || (is_test_file(&rel) && asks_for_test(&goal));
                    if !allowed {
                        out.problems.push(format!(
                            "{rel} does not exist, and this step creates no file: change {}",
                            targets.join(", ")
                        ));
                        continue;
                    }
                    let call = ToolCall::new(
                        format!("whole_{i}"),
                        "write_file",
                        serde_json::json!({"path": rel, "content": b.body}),
                    );
                    let outcomes = self.execute(vec![call]).await?;
                    for o in outcomes {
                        if matches!(o.status, Status::Edited { .. }) {
                            out.changed.push(rel.clone());
                        } else {
                            out.problems.push(format!("{rel}: {}", o.content.trim()));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Applies the code blocks that rewrite the items of files too large to show whole
    /// (`StepFiles::items`): each block to the item it defines, several items of one file in one
    /// answer, then the whole-file checks on the file's new text. Returns the blocks it used.
    fn apply_item_blocks(
        &mut self,
        turn: &Turn<'_>,
        blocks: &[FileBlock],
        out: &mut BlocksApplied,
    ) -> Vec<usize> {
        let mut used = Vec::new();
        for (rel, names) in &turn.files.items {
            let Some(current) = self.read_text(rel) else {
                continue;
            };
            let language = Language::from_path(rel).unwrap_or(Language::Text);
            let targets = target::named(&current, language, names, REWRITE_MAX_LINES);
            let assigned = assign_blocks(rel, &targets, blocks);
            if assigned.is_empty() {
                continue;
            }
            used.extend(assigned.iter().map(|(_, b)| *b));
            let rewrites: Vec<(&EditTarget, &str)> = assigned
                .iter()
                .map(|(t, b)| (&targets[*t], blocks[*b].body.as_str()))
                .collect();
            // The parse check is among the whole-file checks below.
            match rewrite_targets(&current, rel, &rewrites, false) {
                Ok(text) if text == current => out.unchanged = true,
                Ok(text) => match self.whole_file_problems(turn, rel, &current, &text) {
                    Some(problem) => out.problems.push(problem),
                    None => {
                        if self.write_text(rel, &current, &text) {
                            out.changed.push(rel.clone());
                        }
                    }
                },
                Err(problems) => out.problems.extend(problems),
            }
        }
        used
    }

    /// Sets every file the run changed back to its text before the run (files it created stay),
    /// in the working copy and the ledger; returns their workspace-relative paths.
    pub(super) fn back_to_the_originals(&mut self) -> Vec<String> {
        let root = self.root();
        let s = self.session();
        let mut out = Vec::new();
        for c in s.copy.changes() {
            let Some(original) = c.original else {
                continue;
            };
            s.copy.write(&c.path, &c.text, None, original.clone());
            s.ledger.record_write(&c.path, &original);
            out.push(rel_of(&root, &c.path));
        }
        out
    }

    /// Writes `text` over `current` in the working copy and records the write; false when the
    /// path does not resolve.
    pub(super) fn write_text(&mut self, rel: &str, current: &str, text: &str) -> bool {
        let s = self.session();
        let Ok(resolved) = s.sandbox.resolve(rel, s.fs.as_ref()) else {
            return false;
        };
        let version = s
            .copy
            .read(&resolved.abs, s.fs.as_ref())
            .ok()
            .and_then(|(_, v)| v);
        s.copy
            .write(&resolved.abs, current, version, text.to_owned());
        s.ledger.record_write(&resolved.abs, text);
        true
    }

    /// Why a whole file's new text is not taken: syntax errors it adds, a top-level definition
    /// written twice, a stub left as it was beside a new function when the request names the
    /// stub or the tests shown with it call it (not from words such as "implement", which an
    /// exercise's instructions may not say).
    fn whole_file_problems(
        &mut self,
        turn: &Turn<'_>,
        rel: &str,
        before: &str,
        after: &str,
    ) -> Option<String> {
        let language = Language::from_path(rel).unwrap_or(Language::Text);
        if !language.is_parsed() {
            return None;
        }
        if let Some(problem) = syntax_problems(language, rel, before, after) {
            return Some(problem);
        }
        let dup = duplicate_definitions(language, before, after);
        if !dup.is_empty() {
            let names: Vec<String> = dup.iter().map(|d| format!("`{d}`")).collect();
            return Some(format!(
                "{rel} would define {} twice at the top level, so nothing was changed; write \
                 each definition once: change the existing one instead of adding another",
                names.join(", ")
            ));
        }
        let asked = format!(
            "{}\n{}\n{}",
            self.request.request,
            turn.spec.text,
            turn.spec.goal.as_deref().unwrap_or("")
        )
        .to_lowercase();
        let tests: Vec<String> = turn
            .files
            .read_only
            .iter()
            .filter_map(|t| self.read_text(t))
            .collect();
        let stubs: Vec<(String, Vec<String>)> = untouched_stubs(language, before, after)
            .into_iter()
            .filter(|(stub, _)| {
                asked.contains(&stub.to_lowercase())
                    || tests.iter().any(|t| {
                        t.contains(&format!("{stub}(")) || t.contains(&format!("import {stub}"))
                    })
            })
            .collect();
        if let Some((stub, added)) = stubs.first() {
            let added: Vec<String> = added.iter().map(|a| format!("`{a}`")).collect();
            return Some(format!(
                "{rel}: `{stub}` is still a stub, and the answer adds {} beside it, so nothing \
                 was changed; implement `{stub}` itself (keep its name and parameters) instead \
                 of adding another function",
                added.join(", ")
            ));
        }
        None
    }

    /// What the step asked for that is not there yet, though the check passes and no tests
    /// decide it: a file it names unchanged, and what [`Run::shown_missing`] finds
    /// (`docs/develop.md`, "The tests decide"). Empty when nothing is missing.
    pub(super) fn not_done_yet(&mut self, turn: &Turn<'_>) -> Vec<String> {
        let mut missing = Vec::new();
        let untouched: Vec<String> = self
            .untouched(turn.spec)
            .into_iter()
            .filter(|f| !turn.files.read_only.contains(f))
            .collect();
        if !untouched.is_empty() {
            missing.push(format!(
                "it names {}, which you have not changed",
                untouched.join(", ")
            ));
        }
        missing.extend(self.shown_missing(turn));
        missing
    }

    /// What the step asks for that the change can be shown to lack, even when its tests pass:
    /// a test it asks to write that no file gained, a function it asks for by name that is not
    /// in the code, a flag it asks to add that no added line reads. Each rule that reads the
    /// step's words here has no false positive on the request corpus (`asked.rs`); what it
    /// finds missing is then checked on the code, not taken from the words.
    pub(super) fn shown_missing(&mut self, turn: &Turn<'_>) -> Vec<String> {
        let mut missing = Vec::new();
        let Some(goal) = turn.spec.goal.clone() else {
            return missing;
        };
        let added = self.added_lines(turn);
        if asks_for_test(&goal) && !added.iter().any(|l| is_test_line(l)) {
            missing.push("it asks for a test, and the change adds none".to_owned());
        }
        let texts: Vec<String> = {
            let mut rels: Vec<String> = turn.spec.files.clone();
            rels.extend(self.changed_rel());
            rels.into_iter()
                .filter_map(|r| self.read_text(&r))
                .collect()
        };
        for name in asked::asked_names(&goal) {
            if !texts.iter().any(|t| t.contains(&name)) {
                missing.push(format!("`{name}` is not in the code yet"));
            }
        }
        for flag in asked_flags(&goal) {
            if !added.iter().any(|l| handles_flag(l, &flag)) {
                missing.push(format!(
                    "no line you added reads the `{flag}` flag: the program must check for it"
                ));
            }
        }
        missing
    }

    /// Lines this step added to any file.
    fn added_lines(&mut self, turn: &Turn<'_>) -> Vec<String> {
        let changes = self.session().copy.changes();
        let mut out = Vec::new();
        for c in changes {
            let old = turn.text_before(&c.path, c.original.as_deref());
            for ch in TextDiff::from_lines(&old, &c.text).iter_all_changes() {
                if ch.tag() == ChangeTag::Insert {
                    out.push(ch.value().to_owned());
                }
            }
        }
        out
    }
}

/// The items of `rel` a rewrite shows and takes instead of the whole file, resolved on `text`
/// as it is now; `None` when the file is shown whole.
fn items_of(files: &StepFiles, rel: &str, text: &str) -> Option<Vec<EditTarget>> {
    let (_, names) = files.items.iter().find(|(f, _)| f == rel)?;
    let language = Language::from_path(rel).unwrap_or(Language::Text);
    Some(target::named(text, language, names, REWRITE_MAX_LINES))
}

/// The names a step gives the code it is about, from its text, its goal and the failures it
/// fixes: words in backticks (`` `fn total` ``, `` `Cart.total()` ``), words before `(`, and
/// identifiers that cannot be plain English (`snake_case`, `camelCase`).
fn step_names(spec: &StepSpec) -> Vec<String> {
    let text = format!(
        "{}\n{}\n{}",
        spec.text,
        spec.goal.as_deref().unwrap_or(""),
        spec.extra.as_deref().unwrap_or("")
    );
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out: Vec<String> = called_names(&text);
    let mut push = |w: &str| {
        let ok = w.len() >= 2
            && w.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
            && !out.iter().any(|o| o == w);
        if ok {
            out.push(w.to_owned());
        }
    };
    for span in text.split('`').skip(1).step_by(2) {
        for w in span.split(|c: char| !ident(c)) {
            if !matches!(
                w,
                "fn" | "def" | "pub" | "function" | "class" | "async" | "self"
            ) {
                push(w);
            }
        }
    }
    for w in text.split(|c: char| !ident(c)) {
        let inner_upper = w.chars().skip(1).any(char::is_uppercase)
            && w.chars().next().is_some_and(char::is_lowercase);
        if (w.contains('_') && w.trim_matches('_').len() > 1) || inner_upper {
            push(w);
        }
    }
    out
}

/// A file shown whole: its path (and `note`), then the text in a fence.
/// The workspace rules as the first lines of a step's user message: the rule files' own lines
/// without their markdown headings (which the model copies as the start of its answer), under
/// one sentence saying they are context. Empty without rules.
/// Whether every line of `block` is a line of `current`, in order: a copy of the file that
/// leaves lines out (or breaks off), not a change to it.
fn copied_from(current: &str, block: &str) -> bool {
    let mut lines = current.lines().map(str::trim_end);
    let mut any = false;
    for line in block.lines().map(str::trim_end) {
        if line.trim().is_empty() {
            continue;
        }
        any = true;
        if !lines.any(|l| l == line) {
            return false;
        }
    }
    any
}

/// Whether `block` (the answer for a file to change) holds a copy of the tests `tests`: at
/// least five of the tests' distinctive lines (not blank, not punctuation only, not shorter
/// than eight characters), and at least three in five of them. Code can share a line or two
/// with its tests (an import, a signature); it does not share most of them.
pub(super) fn copies_tests(tests: &str, block: &str) -> bool {
    let distinctive = |l: &&str| l.len() >= 8 && l.chars().any(char::is_alphanumeric);
    let theirs: HashSet<&str> = tests.lines().map(str::trim).filter(distinctive).collect();
    let ours: HashSet<&str> = block.lines().map(str::trim).filter(distinctive).collect();
    let shared = theirs.intersection(&ours).count();
    shared >= 5 && shared * 5 >= theirs.len() * 3
}

fn rules_as_context(rules: &str) -> String {
    let lines: Vec<&str> = rules
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    let body = lines.join("\n");
    let body = body.trim();
    if body.is_empty() {
        return String::new();
    }
    format!(
        "The project's rules (your change follows them; they are not part of any file, do not \
         repeat them):\n{body}\n\n"
    )
}

fn fenced(rel: &str, text: &str, note: &str) -> String {
    let tag = fence_tag(Language::from_path(rel).unwrap_or(Language::Text));
    let fence = if text.contains("```") { "````" } else { "```" };
    let mut out = format!("{rel}{note}\n{fence}{tag}\n{text}");
    if !text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(fence);
    out.push_str("\n\n");
    out
}

/// Whether the source `text` (a test file) imports the module at workspace path `target`:
/// Python `from inventory.cli import export`, `import inventory.cli`, `from inventory import
/// cli`, `from .cli import x`; JavaScript and TypeScript `from '../src/cli'`,
/// `require("./cli.js")`. Generic names (`lib`, `index`, `main`) never match: every test
/// imports those.
/// Test files read in search of one that imports a step's module: a bound on a step's start in
/// a workspace with thousands of tests (the nearest to the module are read first).
const IMPORT_SCAN_FILES: usize = 200;

/// Orders `files` by how many leading directories they share with the nearest of `targets`,
/// most first (the order among equals kept): `pkg/tests/test_a.py` before `other/test_b.py`
/// for `pkg/a.py`.
fn nearest_first(files: &mut [String], targets: &[String]) {
    let dirs = |p: &str| -> Vec<String> {
        let mut parts: Vec<String> = p.split('/').map(str::to_owned).collect();
        parts.pop();
        parts
    };
    let shared = |f: &str| -> usize {
        let fd = dirs(f);
        targets
            .iter()
            .map(|t| {
                let td = dirs(t);
                fd.iter().zip(&td).take_while(|(a, b)| a == b).count()
            })
            .max()
            .unwrap_or(0)
    };
    files.sort_by_cached_key(|f| std::cmp::Reverse(shared(f)));
}

fn imports_module(text: &str, target: &str) -> bool {
    let name = stem(target);
    if name.len() < 3 || GENERIC_STEMS.contains(&name) {
        return false;
    }
    if target.ends_with(".py") {
        let dotted = target.trim_end_matches(".py").replace('/', ".");
        let dotted = dotted.strip_prefix("src.").unwrap_or(&dotted);
        let parent = dotted.rsplit_once('.').map(|(p, _)| p);
        return text.lines().any(|l| {
            let l = l.trim();
            let words: Vec<&str> = l
                .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
                .filter(|w| !w.is_empty())
                .collect();
            match words.as_slice() {
                ["from", module, "import", names @ ..] => {
                    *module == dotted
                        || *module == format!(".{name}")
                        || (parent == Some(*module) && names.contains(&name))
                }
                ["import", modules @ ..] => modules.contains(&dotted),
                _ => false,
            }
        });
    }
    let script = [".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx"]
        .iter()
        .any(|e| target.ends_with(e));
    script
        && text.lines().any(|l| {
            (l.contains("import") || l.contains("require(")) && {
                l.split(['\'', '"', '`']).skip(1).step_by(2).any(|spec| {
                    spec.starts_with('.') && {
                        let last = spec.rsplit('/').next().unwrap_or(spec);
                        last == name || last.split('.').next() == Some(name)
                    }
                })
            }
        })
}

fn stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.split('.').next().unwrap_or(name)
}

/// Whether an added line can read `flag`: it holds the flag itself, or its name as code spells
/// it (`dry_run`, `dryRun`, `DRY_RUN`, `quiet` for `--quiet`), as a parser's field or a
/// comparison would.
fn handles_flag(line: &str, flag: &str) -> bool {
    let name = flag.trim_start_matches('-');
    let code = line.trim_start();
    // A comment that only mentions the flag does not read it.
    if code.starts_with("//") || code.starts_with('#') && !code.starts_with("#[") {
        return false;
    }
    if line.contains(flag) {
        return true;
    }
    let snake = name.replace('-', "_");
    let camel: String = name
        .split('-')
        .enumerate()
        .map(|(k, w)| {
            if k == 0 {
                w.to_owned()
            } else {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_uppercase().chain(c).collect())
                    .unwrap_or_default()
            }
        })
        .collect();
    let lower = line.to_lowercase();
    lower.contains(&snake.to_lowercase()) || line.contains(&camel)
}

/// A line that defines a test in one of the languages develop knows.
pub(super) fn is_test_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("#[test]")
        || t.starts_with("#[tokio::test")
        || t.starts_with("def test")
        || t.starts_with("async def test")
        || t.starts_with("test(")
        || t.starts_with("it(")
        || t.starts_with("test.each")
        || t.starts_with("describe(")
        || t.starts_with("func Test")
        || t.starts_with("@Test")
        || t.starts_with(">>> ")
}

/// The functions a step's text calls by name, to find the items of a large file it is about:
/// `name(` in its text, or a backticked `fn name` / `def name` / `function name`. Broad on
/// purpose (an item shown that the step does not need costs a few lines of prompt); what a step
/// must contain is [`asked::asked_names`]. None for a rename or a removal.
fn called_names(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    if ["rename", "remove", "delete", "replace"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return Vec::new();
    }
    const NOT_NAMES: &[&str] = &[
        "print",
        "println",
        "len",
        "range",
        "list",
        "dict",
        "str",
        "int",
        "float",
        "format",
        "assert",
        "assert_eq",
        "console",
        "log",
        "main",
        "test",
        "self",
        "some",
        "ok",
        "err",
        "vec",
        "map",
        "filter",
        "sum",
        "count",
        "return",
        "returns",
        "e.g",
        "i.e",
    ];
    let mut out: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        let ok = name.len() >= 3
            && super::rename::is_identifier(name)
            && !NOT_NAMES.contains(&name.to_lowercase().as_str());
        if ok && !out.iter().any(|o| o == name) {
            out.push(name.to_owned());
        }
    };
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        if c != '(' || k == 0 {
            continue;
        }
        let start = text[..i]
            .rfind(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .map_or(0, |p| p + 1);
        // A method call (`self.x(`, `obj.y(`) is not a function the step adds.
        if start > 0 && text[..start].ends_with('.') {
            continue;
        }
        push(&text[start..i]);
    }
    for name in defined_in_code_spans(text) {
        push(&name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer as read line by line: where `answer_complete` first says to stop.
    fn cut_of(files: &StepFiles, answer: &str) -> Option<usize> {
        answer
            .match_indices('\n')
            .find_map(|(i, _)| files.answer_complete(&answer[..=i]))
    }

    #[test]
    fn a_whole_file_answer_is_read_until_it_starts_copying_the_tests() {
        let files = StepFiles {
            edit: vec!["src/lib.rs".into()],
            read_only: vec!["tests/armstrong_numbers.rs".into()],
            ..StepFiles::default()
        };
        // Recorded from Qwen2.5-Coder-1.5B (the develop bench, rust-armstrong, a fix round).
        let block = "src/lib.rs\n```rust\npub fn is_armstrong_number(num: u32) -> bool {\n    \
                     let digits = num.to_string().chars();\n    sum == num\n}\n```\n\n";
        let copy = "tests/armstrong_numbers.rs (the tests: read them, do not change them)\n\
                    ```rust\nuse armstrong_numbers::*;\n\n#[test]\nfn zero() {\n    \
                    assert!(is_armstrong_number(0))\n}\n```\n";
        let answer = format!("{block}{copy}");
        assert_eq!(cut_of(&files, &answer), Some(block.len()));
        // The tests named before the file's block: the block is still to come.
        let tests_first = format!("{copy}\n{block}");
        assert_eq!(cut_of(&files, &tests_first), None);
        // A block still open, or a second file to change still missing, reads on.
        let open = "src/lib.rs\n```rust\npub fn f() {}\ntests/armstrong_numbers.rs\n";
        assert_eq!(cut_of(&files, open), None);
        let two = StepFiles {
            edit: vec!["src/lib.rs".into(), "src/main.rs".into()],
            read_only: files.read_only.clone(),
            ..StepFiles::default()
        };
        assert_eq!(cut_of(&two, &answer), None);
        let both = format!("{block}src/main.rs\n```rust\nfn main() {{}}\n```\n{copy}");
        assert_eq!(cut_of(&two, &both), Some(both.find("tests/").unwrap()));
        // Without tests shown, or with a file shown in parts, nothing is cut.
        let no_tests = StepFiles {
            edit: files.edit.clone(),
            ..StepFiles::default()
        };
        assert_eq!(cut_of(&no_tests, &answer), None);
        let parts = StepFiles {
            items: vec![("src/lib.rs".into(), vec!["is_armstrong_number".into()])],
            ..files.clone()
        };
        assert_eq!(cut_of(&parts, &answer), None);
    }

    #[test]
    fn a_test_file_that_imports_the_module_exercises_it() {
        let py = "import unittest\n\nfrom inventory.cli import export\nfrom inventory.core import Item\n";
        assert!(imports_module(py, "inventory/cli.py"));
        assert!(imports_module(py, "inventory/core.py"));
        assert!(!imports_module(py, "inventory/report.py"));
        assert!(imports_module(
            "import inventory.cli as cli\n",
            "inventory/cli.py"
        ));
        assert!(imports_module(
            "from inventory import cli, core\n",
            "inventory/cli.py"
        ));
        assert!(imports_module(
            "from .words import count\n",
            "textkit/words.py"
        ));
        assert!(imports_module(
            "from textkit.words import x\n",
            "src/textkit/words.py"
        ));
        // A comment or a longer module name is no import of it.
        assert!(!imports_module("# see inventory.cli\n", "inventory/cli.py"));
        assert!(!imports_module(
            "from inventory.cli_old import x\n",
            "inventory/cli.py"
        ));
        let js = "const { parseTodo } = require('../src/todo');\nimport { sortByPriority } from \"./priority.js\";\n";
        assert!(imports_module(js, "src/todo.js"));
        assert!(imports_module(js, "src/priority.js"));
        assert!(!imports_module(js, "src/cli.js"));
        // Every test imports the crate's or the package's entry point: no signal.
        assert!(!imports_module(
            "import x from './index';\n",
            "src/index.ts"
        ));
    }

    #[test]
    fn tests_nearest_the_module_are_read_first() {
        let mut files: Vec<String> = ["other/test_b.py", "test_top.py", "pkg/tests/test_a.py"]
            .map(str::to_owned)
            .to_vec();
        nearest_first(&mut files, &["pkg/core.py".to_owned()]);
        assert_eq!(
            files,
            ["pkg/tests/test_a.py", "other/test_b.py", "test_top.py"]
        );
    }

    #[test]
    fn a_copy_of_the_tests_that_leaves_lines_out_is_no_change() {
        let tests = "import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        \
                     self.assertIs(f(\"\"), False)\n\n    def test_b(self):\n        \
                     self.assertIs(f(\"x\"), True)\n";
        // The last test left out, as the model wrote it in the py-pangram recording.
        let shorter = "import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        \
                       self.assertIs(f(\"\"), False)\n";
        assert!(copied_from(tests, shorter));
        assert!(copied_from(tests, tests));
        // An assertion changed, a line added, lines in another order: changes.
        assert!(!copied_from(tests, &tests.replace("True", "False")));
        assert!(!copied_from(
            tests,
            &format!("{tests}    def test_c(self):\n        pass\n")
        ));
        assert!(!copied_from(
            tests,
            "    def test_b(self):\n    def test_a(self):\n"
        ));
        assert!(!copied_from(tests, "\n\n"));
    }

    #[test]
    fn a_copy_of_the_tests_is_not_the_code() {
        let tests = "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n\n\
                     import { toRoman } from './roman-numerals.js';\n\nconst cases = [\n  [1, 'I'],\n  \
                     [4, 'IV'],\n  [9, 'IX'],\n  [3999, 'MMMCMXCIX'],\n];\n\n\
                     for (const [number, roman] of cases) {\n  test(`${number} is ${roman}`, () => {\n    \
                     assert.equal(toRoman(number), roman);\n  });\n}\n";
        // The model's js-roman answer: the tests whole; and the tests with the code below them.
        assert!(copies_tests(tests, tests));
        let code = "export const toRoman = (number) => {\n  const numerals = [\n    \
                    { value: 1000, symbol: 'M' },\n  ];\n  let result = '';\n  return result;\n};\n";
        assert!(copies_tests(tests, &format!("{tests}\n{code}")));
        // The code alone shares no line with its tests; nor does code that names their cases.
        assert!(!copies_tests(tests, code));
        let cases = "// toRoman(4) is 'IV'\nimport assert from 'node:assert/strict';\n\
                     export const toRoman = (number) => {\n  return 'IV';\n};\n";
        assert!(!copies_tests(tests, cases));
        // Small tests (fewer than five distinctive lines) are never taken for a copy.
        assert!(!copies_tests("assert f(1) == 2\n", "assert f(1) == 2\n"));
    }

    #[test]
    fn flags_read_and_tests_added() {
        assert!(handles_flag(
            "    if args.first().map(String::as_str) == Some(\"--quiet\") {",
            "--quiet"
        ));
        assert!(handles_flag(
            "    parser.add_argument(\"--dry-run\", action=\"store_true\")",
            "--dry-run"
        ));
        assert!(handles_flag("    if (opts.dryRun) {", "--dry-run"));
        assert!(handles_flag("    quiet: bool,", "--quiet"));
        assert!(!handles_flag("    // TODO: --quiet", "--quiet"));
        assert!(!handles_flag("# the --quiet flag", "--quiet"));
        assert!(!handles_flag("    println!(\"words: {}\", n);", "--quiet"));
        assert!(is_test_line("    #[test]\n") && is_test_line("def test_doubles(self):"));
        assert!(!is_test_line("fn double(x: i32) -> i32 {"));
        assert_eq!(
            called_names("Pick the best hand(s); see `fn score`."),
            ["hand", "score"]
        );
    }

    #[test]
    fn files_are_shown_under_their_path() {
        assert_eq!(
            fenced("a.py", "x = 1", " (read only)"),
            "a.py (read only)\n```python\nx = 1\n```\n\n"
        );
        assert_eq!(stem("src/slug.test.ts"), "slug");
    }
}
