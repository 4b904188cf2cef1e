//! Running a develop run's check, lint and test commands on the proposed text: the working
//! copy's changes are synced into the overlay, the commands run there with the run's timeout,
//! and their output comes back with overlay paths turned into workspace paths (the model must
//! read `src/lib.rs:3`, not a cache directory).
//!
//! A missing tool is a warning, never a failure. A check that already failed before the run
//! changed anything (the baseline) counts as passing while it fails the same way, so a broken
//! workspace does not make every step fail. Failures are fingerprinted by their normalised text
//! (numbers and whitespace dropped) so the step loop can tell "the same error again".

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::tools::overlay::Overlay;
use crate::tools::process::{CommandSpec, Exit, MAX_OUTPUT, ProcessRunner, truncate_output};

use super::project::{CheckCommand, CheckKind, Checks, ProjectKind};

/// Bytes of a command's output shown to a model (head and tail).
const MODEL_OUTPUT: usize = 3500;

/// Bytes of a test command's output kept for reading its failures (head and tail; a check's
/// or a lint's keeps the runner's 16 KiB, of which a model sees [`MODEL_OUTPUT`]): enough for every
/// failing test's name of a long run. At 16 KiB the names of allergies' 50 failures (23–25 KB of
/// pytest output) were partly cut, and whether they were depended on the environment: pytest
/// prints each failure's whole message in its summary when `CI` is set, so CI's run lost names a
/// terminal's run kept, and a fix round took another path (2026-11-30).
const FULL_OUTPUT: usize = 256 * 1024;

/// A check, lint or test command of a run as it starts and as it ends, for an edge that shows
/// each one when it runs (ACP's `execute` tool calls). `id` counts the run's commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandEvent {
    Started {
        id: usize,
        kind: CheckKind,
        line: String,
    },
    Ended {
        id: usize,
        run: CheckRun,
    },
}

/// Told each [`CommandEvent`].
pub type CommandObserver = Arc<dyn Fn(CommandEvent) + Send + Sync>;

/// One command's run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRun {
    pub kind: CheckKind,
    pub line: String,
    pub exit: Exit,
    /// Passed (or could not run and counts as a warning).
    pub passed: bool,
    /// The output, workspace paths, cut for a model.
    pub output: String,
    /// The output as the runner kept it (256 KiB of a test run, head and tail), workspace paths: what
    /// `failures.rs` reads, so that a long run's failing tests are all named (the model's
    /// 3,500 bytes held one of camicia's 28 with its detail).
    #[serde(skip)]
    pub full_output: String,
    /// Set when the command did not really run (tool missing) or failed as before the run.
    pub warning: Option<String>,
}

impl CheckRun {
    /// A fingerprint of the failure: the output without numbers and whitespace.
    pub fn fingerprint(&self) -> u64 {
        fingerprint(&self.output)
    }
}

/// The fingerprint of an error text: FNV-1a of its distinct lines, sorted, with digits and
/// whitespace dropped (line numbers and timings change while the error stays the same; parallel
/// build jobs print in any order) and build-progress lines left out, and so are the lines of
/// code a compiler quotes under its error (rustc's `12 |     let x = …` and the `|` lines that
/// mark it; a check configured without `--message-format=short`): the same error on code
/// written another way is the same error.
pub fn fingerprint(text: &str) -> u64 {
    const NOISE: &[&str] = &[
        "[killed",
        "Checking ",
        "Compiling ",
        "Finished ",
        "Running ",
        "Blocking ",
        "warning: build failed",
        "error: could not compile",
    ];
    // rustc's quoted code: `12 |     let x = …` (and its suggestions' `12 + …`, `12 ~ …`).
    let quoted = |l: &str| {
        let rest = l.trim_start_matches(|c: char| c.is_ascii_digit());
        rest.len() < l.len() && matches!(rest.trim_start().chars().next(), Some('|' | '+' | '~'))
    };
    let mut lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !NOISE.iter().any(|n| l.starts_with(n)) && !quoted(l))
        .map(|l| {
            // Under the code, its marks (`--- ^^^ expected `u32``): the words stay.
            let marks = l.starts_with('|');
            l.chars()
                .filter(|c| {
                    let mark = marks && matches!(c, '|' | '^' | '-' | '~' | '+');
                    !(c.is_ascii_digit() || c.is_whitespace() || mark)
                })
                .collect::<String>()
        })
        .filter(|l| !l.is_empty())
        .collect();
    lines.sort();
    lines.dedup();
    crate::tools::overlay::fnv1a(lines.join("\n").as_bytes())
}

/// The commands of one workspace and the overlay they run in.
pub struct Checker {
    overlay: Arc<Mutex<Overlay>>,
    checks: Checks,
    runner: Arc<dyn ProcessRunner>,
    env: Vec<(String, String)>,
    /// Fingerprints of the commands that failed before any change, by command line.
    baseline: HashMap<String, u64>,
    /// Tools already reported missing (one warning per tool).
    warned: Vec<String>,
    /// Warnings not yet collected by [`Checker::take_warnings`].
    warnings: Vec<String>,
    observer: Option<CommandObserver>,
    /// Commands started so far.
    started: usize,
}

impl Checker {
    pub fn new(overlay: Overlay, checks: Checks, runner: Arc<dyn ProcessRunner>) -> Checker {
        let mut env = vec![("CARGO_TERM_COLOR".to_owned(), "never".to_owned())];
        if checks.kind == ProjectKind::Rust {
            env.push((
                "CARGO_TARGET_DIR".to_owned(),
                overlay
                    .build_dir("cargo-target")
                    .to_string_lossy()
                    .into_owned(),
            ));
        }
        env.push(("NO_COLOR".to_owned(), "1".to_owned()));
        // What a check prints, and so what `failures.rs` reads and where the kept output is
        // cut, must not depend on the terminal the editor was started from: pytest fits its
        // summary lines to `COLUMNS`, and at 200 columns allergies' 50 failing tests printed
        // 51 KB against 36 KB at 80, so the kept tail lost test names and the fix round took
        // another path than on a developer's machine (CI, 2026-11-30).
        env.push(("COLUMNS".to_owned(), "80".to_owned()));
        // Python trusts bytecode whose source has the same mtime (whole seconds) and size: a
        // one-character fix synced into the overlay within a second of `compileall` compiling
        // the old text (`+` for `*`) ran the stale code. With SOURCE_DATE_EPOCH set,
        // `compileall` writes hash-checked bytecode, which an import checks against the
        // source's text; imports themselves write none.
        env.push(("SOURCE_DATE_EPOCH".to_owned(), "0".to_owned()));
        env.push(("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned()));
        Checker {
            overlay: Arc::new(Mutex::new(overlay)),
            checks,
            runner,
            env,
            baseline: HashMap::new(),
            warned: Vec::new(),
            warnings: Vec::new(),
            observer: None,
            started: 0,
        }
    }

    /// Tells `observer` each command as it starts and ends.
    pub fn observe(&mut self, observer: Option<CommandObserver>) {
        self.observer = observer;
    }

    fn tell(&self, event: CommandEvent) {
        if let Some(observer) = &self.observer {
            observer(event);
        }
    }

    /// The warnings of the runs since the last call (tools missing, commands that could not
    /// start, failures that were there before the run), each once.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Whether any command of `kind` is configured.
    pub fn has(&self, kind: CheckKind) -> bool {
        self.checks.of(kind).next().is_some()
    }

    /// Runs the check and lint commands on the unchanged workspace and remembers which fail.
    /// Returns those runs (for a warning).
    pub async fn baseline(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<Vec<CheckRun>, CheckError> {
        let mut failing = Vec::new();
        for kind in [CheckKind::Check, CheckKind::Lint] {
            for run in self.run(kind, &[], cancel).await? {
                if !run.passed {
                    self.baseline.insert(run.line.clone(), run.fingerprint());
                    failing.push(run);
                }
            }
        }
        Ok(failing)
    }

    /// Syncs `changes` (absolute workspace paths and their proposed text) into the overlay and
    /// runs the commands of `kind` there, stopping at the first failure.
    pub async fn run(
        &mut self,
        kind: CheckKind,
        changes: &[(PathBuf, String)],
        cancel: &CancellationToken,
    ) -> Result<Vec<CheckRun>, CheckError> {
        let commands: Vec<CheckCommand> = self.checks.of(kind).cloned().collect();
        if commands.is_empty() {
            return Ok(Vec::new());
        }
        let (dir, target) = self.sync(changes.to_vec()).await?;
        let mut out = Vec::new();
        for command in commands {
            if cancel.is_cancelled() {
                return Err(CheckError::Cancelled);
            }
            self.started += 1;
            let id = self.started;
            self.tell(CommandEvent::Started {
                id,
                kind,
                line: command.line.clone(),
            });
            let spec = CommandSpec {
                env: self.env.clone(),
                extra_path: self.checks.tool_dirs.iter().map(|d| dir.join(d)).collect(),
                timeout: self.checks.timeout,
                max_memory: self.checks.max_memory,
                max_output: if kind == CheckKind::Test {
                    FULL_OUTPUT
                } else {
                    MAX_OUTPUT
                },
                ..CommandSpec::new(command.line.clone(), dir.clone())
            };
            let result = self.runner.run(spec, cancel.clone()).await;
            let shown = result
                .output
                .replace(&format!("{}/", dir.display()), "")
                .replace(&dir.display().to_string(), ".")
                .replace(&target, "<target>");
            let (output, _) = truncate_output(shown.as_bytes(), MODEL_OUTPUT);
            let mut run = CheckRun {
                kind,
                line: command.line.clone(),
                passed: false,
                output,
                full_output: shown,
                warning: None,
                exit: result.exit.clone(),
            };
            match &result.exit {
                Exit::Cancelled => {
                    self.tell(CommandEvent::Ended { id, run });
                    return Err(CheckError::Cancelled);
                }
                Exit::Code(0) => run.passed = true,
                Exit::Missing(tool) => {
                    run.passed = true;
                    if command.optional {
                        self.tell(CommandEvent::Ended { id, run });
                        continue;
                    }
                    if !self.warned.contains(tool) {
                        self.warned.push(tool.clone());
                        run.warning = Some(format!(
                            "`{tool}` is not installed, so `{}` was not run; install it or set \
                             [develop.checks] {}",
                            command.line,
                            kind.name()
                        ));
                    }
                }
                Exit::Failed(reason) => {
                    run.passed = true;
                    run.warning = Some(format!("`{}` could not run: {reason}", command.line));
                }
                Exit::Code(_) | Exit::Signal(_) | Exit::TimedOut | Exit::OutOfMemory(_) => {
                    if self.baseline.get(&command.line) == Some(&run.fingerprint()) {
                        run.passed = true;
                        run.warning = Some(format!(
                            "`{}` fails the same way it did before any change",
                            command.line
                        ));
                    }
                }
            }
            if let Some(w) = &run.warning
                && !self.warnings.contains(w)
            {
                self.warnings.push(w.clone());
            }
            let failed = !run.passed;
            self.tell(CommandEvent::Ended {
                id,
                run: run.clone(),
            });
            out.push(run);
            if failed {
                break;
            }
        }
        Ok(out)
    }

    async fn sync(&self, changes: Vec<(PathBuf, String)>) -> Result<(PathBuf, String), CheckError> {
        let overlay = self.overlay.clone();
        tokio::task::spawn_blocking(move || {
            let mut o = overlay.lock().unwrap_or_else(|e| e.into_inner());
            o.sync(&changes)
                .map_err(|e| CheckError::Overlay(e.to_string()))?;
            Ok((
                o.dir().to_path_buf(),
                o.build_dir("cargo-target").display().to_string(),
            ))
        })
        .await
        .map_err(|e| CheckError::Overlay(format!("the overlay sync stopped unexpectedly: {e}")))?
    }
}

/// Why commands could not run at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("cancelled")]
    Cancelled,
    #[error("cannot prepare the overlay to run checks in: {0}")]
    Overlay(String),
}

/// The failing runs as the model reads them.
pub fn describe_failures(runs: &[CheckRun]) -> String {
    let mut out = String::new();
    for r in runs.iter().filter(|r| !r.passed) {
        let how = match &r.exit {
            Exit::Code(c) => format!(" (exit code {c})"),
            Exit::Signal(s) => format!(" (killed by signal {s})"),
            exit => killed_because(exit).map_or(String::new(), |why| format!(" ({why})")),
        };
        out.push_str(&format!(
            "`{}` failed{how}:\n```\n{}\n```\n",
            r.line,
            r.output.trim_end()
        ));
    }
    out
}

/// Why the runner killed a command, with the likely cause in the code under test, for the
/// model; `None` when it ended by itself.
pub fn killed_because(exit: &Exit) -> Option<&'static str> {
    match exit {
        Exit::TimedOut => Some("it timed out: an endless loop or a wait that never ends?"),
        Exit::OutOfMemory(_) => Some(
            "it filled the memory and was killed: an endless loop or recursion that keeps \
             allocating, or a search that grows without bound?",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_ignore_numbers_and_spacing() {
        let a = "src/lib.rs:3:5: error[E0425]: cannot find value `x`\n";
        let b = "src/lib.rs:14:9:  error[E0425]: cannot find value `x`\n";
        let c = "src/lib.rs:3:5: error[E0308]: mismatched types\n";
        assert_eq!(fingerprint(a), fingerprint(b));
        assert_ne!(fingerprint(a), fingerprint(c));
        let racy = "    Checking x v0.1.0 (.)\nsrc/lib.rs:3:5: error[E0308]: mismatched types\nwarning: build failed, waiting for other jobs to finish...\nerror: could not compile `x` (lib test)\n";
        assert_eq!(fingerprint(racy), fingerprint(c));
    }

    /// rustc's human format (`cargo check` on rust-armstrong's answers, 2026-11-30): the same
    /// error under code written another way has the same fingerprint; another error does not.
    #[test]
    fn fingerprints_leave_out_the_code_rustc_quotes() {
        let error = |code: &str, width: usize, found: &str| {
            format!(
                "error[E0308]: mismatched types\n --> src/lib.rs:5:49\n  |\n5 | {code}\n  |{} ^^^ expected `u32`, found `{found}`\n  |\nhelp: you can convert a `{found}` to a `u32`\n  |\n5 | {code}.try_into()\n  |      ++++++++++++\n",
                " ".repeat(width)
            )
        };
        let a = error(
            "    let sum: u32 = digits.iter().map(|&d| d.pow(len)).sum();",
            44,
            "usize",
        );
        let b = error(
            "    let total: u32 = ds.iter().map(|d| d.pow(n)).sum();",
            38,
            "usize",
        );
        let c = error(
            "    let sum: u32 = digits.iter().map(|&d| d.pow(len)).sum();",
            44,
            "u64",
        );
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }
}
