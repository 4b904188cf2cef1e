//! Running external programs (check, lint and test commands, `git`) behind one small trait, so
//! workflows can be tested with a double and the real runner stays in one place.
//!
//! The real runner starts every command in its own process group and kills the whole group when
//! the command times out, when the run is cancelled or when the caller drops the future — a
//! `cargo test` that forked a hung test binary leaves nothing behind — and, on Linux, when one
//! of the group's processes holds more resident memory than its bound (half the machine's
//! memory by default): a test of a model's code whose search runs away fills the memory faster
//! than any timeout ends it (on the develop bench an exercise's pytest reached 18 GB of 24 in
//! about six minutes, and the kernel's OOM killer, not patchwise, stopped it). One process, not
//! the group's sum: a build's parallel compilers together may rightly hold more. Output (stdout and stderr,
//! interleaved as they arrive) is kept within a byte budget: the head and the tail survive, the
//! middle is replaced by a note saying how much was cut. A program that is not installed is an
//! outcome ([`Exit::Missing`]), not an error: a develop run reports it as a warning.
//!
//! It never runs a command through a shell unless the command line needs one (pipes,
//! redirections, `&&`), never inherits stdin, and never writes anywhere itself.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

/// Bytes of output a command keeps unless its [`CommandSpec`] says otherwise.
pub const MAX_OUTPUT: usize = 16 * 1024;

/// One command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The command line as configured (`cargo check --message-format=short`).
    pub line: String,
    /// The working directory.
    pub cwd: PathBuf,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Directories searched for the program before `PATH` (a project's `node_modules/.bin`).
    pub extra_path: Vec<PathBuf>,
    pub timeout: Duration,
    /// Bytes of output kept (head and tail); the rest is replaced by a note.
    pub max_output: usize,
    /// Bytes of resident memory one process of the command may hold before the command's
    /// process group is killed (watched on Linux only); `None`: no bound.
    pub max_memory: Option<u64>,
}

impl CommandSpec {
    /// A command with a 5-minute timeout, 16 KiB of output and half the machine's memory.
    pub fn new(line: impl Into<String>, cwd: impl Into<PathBuf>) -> CommandSpec {
        CommandSpec {
            line: line.into(),
            cwd: cwd.into(),
            env: Vec::new(),
            extra_path: Vec::new(),
            timeout: Duration::from_secs(300),
            max_output: MAX_OUTPUT,
            max_memory: half_the_memory(),
        }
    }
}

/// Half the memory this process may use, in bytes: the machine's physical memory, or its
/// control group's limit when that is less (a container, a CI runner, a systemd slice), whose
/// own OOM killer would otherwise strike first. Linux only (the bound is watched through
/// `/proc`); `None` elsewhere.
pub fn half_the_memory() -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    // SAFETY: sysconf only reads system constants.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let physical = (pages > 0 && size > 0).then(|| pages as u64 * size as u64)?;
    let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limit = cgroup_limit_files(&groups)
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .filter_map(|t| t.trim().parse::<u64>().ok())
        .min()
        .unwrap_or(u64::MAX);
    Some(physical.min(limit) / 2)
}

/// The files that may hold this process's memory limit, from `/proc/self/cgroup`: cgroup v2's
/// `memory.max` (`max` when unlimited: not a number, so not a limit) and v1's
/// `memory.limit_in_bytes`, of its own group and of the hierarchy's root (inside a container the
/// root is the container's group).
fn cgroup_limit_files(proc_self_cgroup: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in proc_self_cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            out.push(Path::new("/sys/fs/cgroup").join(path).join("memory.max"));
            out.push(PathBuf::from("/sys/fs/cgroup/memory.max"));
        } else if controllers.split(',').any(|c| c == "memory") {
            out.push(
                Path::new("/sys/fs/cgroup/memory")
                    .join(path)
                    .join("memory.limit_in_bytes"),
            );
            out.push(PathBuf::from("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
        }
    }
    out
}

/// The resident memory of the largest process in group `pgid`, in bytes, from `/proc`; `None`
/// where there is no `/proc` (not Linux).
fn largest_in_group(pgid: i32) -> Option<u64> {
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    let mut largest = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        largest = largest.max(group_rss_pages(&stat, pgid).unwrap_or(0) * page);
    }
    Some(largest)
}

/// The resident pages of a `/proc/PID/stat` line when its process is in group `pgid`. The
/// command name (second field, in parentheses) may hold spaces and parentheses: the fields
/// are read after its last `)`: state, ppid, pgrp, … and rss, the 24th field.
fn group_rss_pages(stat: &str, pgid: i32) -> Option<u64> {
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if fields.get(2)?.parse::<i32>().ok()? != pgid {
        return None;
    }
    fields.get(21)?.parse().ok()
}

/// Bytes as a reader reads them: `12.0 GiB`, `512 MiB`.
fn gib(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", bytes / MIB)
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it (not one of ours).
    Signal(i32),
    /// It ran past its timeout; its process group was killed.
    TimedOut,
    /// One of its processes held more resident memory than this many bytes; its process group
    /// was killed.
    OutOfMemory(u64),
    /// The run was cancelled; its process group was killed.
    Cancelled,
    /// The program is not installed (not on `PATH`); the text names it.
    Missing(String),
    /// It could not be started for another reason.
    Failed(String),
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProcessOutput {
    pub exit: Exit,
    /// stdout and stderr interleaved, cut to the budget with a note.
    pub output: String,
    /// Bytes of output that were cut.
    pub cut: usize,
    #[serde(skip)]
    pub duration: Duration,
}

impl ProcessOutput {
    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }
}

/// Runs commands. [`RealRunner`] is the real one; tests may script answers.
pub trait ProcessRunner: Send + Sync {
    /// Runs `spec` to its end, its timeout, or the cancellation of `cancel`.
    fn run(
        &self,
        spec: CommandSpec,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ProcessOutput>;

    /// Whether `program` can be started (found on `extra_path` or `PATH`).
    fn has_program(&self, program: &str, extra_path: &[PathBuf]) -> bool {
        find_program(program, extra_path).is_some()
    }
}

/// The runner of real processes.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealRunner;

impl RealRunner {
    pub fn shared() -> Arc<dyn ProcessRunner> {
        Arc::new(RealRunner)
    }
}

impl ProcessRunner for RealRunner {
    fn run(
        &self,
        spec: CommandSpec,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ProcessOutput> {
        Box::pin(run_real(spec, cancel))
    }
}

/// The words of a command line (single and double quotes, backslash escapes), or `None` when
/// the line needs a shell (pipes, redirections, `&&`, `;`, `$`, backquotes, globs).
pub fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => word.push(ch),
                        None => return None,
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => word.push(chars.next()?),
                        Some('$' | '`') => return None,
                        Some(ch) => word.push(ch),
                        None => return None,
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            '|' | '&' | ';' | '<' | '>' | '(' | ')' | '$' | '`' | '*' | '?' | '~' => return None,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// The program a command line starts (its first word; `sh` when it needs a shell and the first
/// word cannot be told).
pub fn program_of(line: &str) -> String {
    match split_words(line) {
        Some(words) => words.into_iter().next().unwrap_or_default(),
        None => line
            .split_whitespace()
            .next()
            .unwrap_or("sh")
            .trim_matches(['\'', '"'])
            .to_owned(),
    }
}

/// Where `program` is: a path with a `/` as given, else the first executable on `extra` then
/// `PATH`.
pub fn find_program(program: &str, extra: &[PathBuf]) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    extra
        .iter()
        .cloned()
        .chain(std::env::split_paths(&path))
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Words of the note [`truncate_output`] leaves where it cut ([`is_cut_note`]).
const CUT_NOTE: &str = "of output cut here";

/// Whether `line` holds the note [`truncate_output`] leaves where it cut the middle of an
/// output (after the head's last, partial line when no line ended near the cut): a reader of
/// the output knows that the lines after it do not follow the lines before it.
pub fn is_cut_note(line: &str) -> bool {
    line.contains("[… ") && line.contains(CUT_NOTE)
}

/// Keeps the head and the tail of `bytes` within `max`, with a note where the middle was cut.
/// Returns the text and the number of bytes cut.
pub fn truncate_output(bytes: &[u8], max: usize) -> (String, usize) {
    if bytes.len() <= max {
        return (String::from_utf8_lossy(bytes).into_owned(), 0);
    }
    let head = max * 3 / 5;
    let tail = max - head;
    let cut = bytes.len() - head - tail;
    // Cut at line boundaries when one is near, so no line is shown half.
    let head_end = bytes[..head]
        .iter()
        .rposition(|&b| b == b'\n')
        .filter(|&i| i + 1 >= head / 2)
        .map_or(head, |i| i + 1);
    let tail_start = bytes.len() - tail;
    let tail_start = bytes[tail_start..]
        .iter()
        .position(|&b| b == b'\n')
        .filter(|&i| i < tail / 2)
        .map_or(tail_start, |i| tail_start + i + 1);
    let cut_bytes = tail_start - head_end;
    let lines = bytes[head_end..tail_start]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    let text = format!(
        "{}[… {cut_bytes} bytes ({lines} lines) {CUT_NOTE}; the beginning and the end are shown …]\n{}",
        String::from_utf8_lossy(&bytes[..head_end]),
        String::from_utf8_lossy(&bytes[tail_start..]),
    );
    (text, cut.max(cut_bytes))
}

/// Kills the process group when dropped, unless disarmed: a cancelled or dropped run leaves no
/// process behind.
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILL to every process of group `pgid`.
fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: killpg only sends a signal; a group that is gone answers ESRCH, ignored.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

async fn run_real(spec: CommandSpec, cancel: CancellationToken) -> ProcessOutput {
    let started = Instant::now();
    let done = |exit: Exit, output: String, cut: usize| ProcessOutput {
        exit,
        output,
        cut,
        duration: started.elapsed(),
    };
    let (program, args) = match split_words(&spec.line) {
        Some(words) if words.is_empty() => {
            return done(
                Exit::Failed("the command line is empty".to_owned()),
                String::new(),
                0,
            );
        }
        Some(mut words) => {
            let mut program = words.remove(0);
            // `.venv/bin/python`: relative to the command's directory, not ours.
            if program.contains('/') && !program.starts_with('/') {
                program = spec.cwd.join(&program).to_string_lossy().into_owned();
            }
            match find_program(&program, &spec.extra_path) {
                Some(found) => (found, words),
                None => return done(Exit::Missing(program), String::new(), 0),
            }
        }
        None => (
            PathBuf::from("/bin/sh"),
            vec!["-c".to_owned(), spec.line.clone()],
        ),
    };
    let mut command = tokio::process::Command::new(&program);
    command
        .args(&args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if !spec.extra_path.is_empty() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let joined = std::env::join_paths(
            spec.extra_path
                .iter()
                .cloned()
                .chain(std::env::split_paths(&path)),
        );
        if let Ok(joined) = joined {
            command.env("PATH", joined);
        }
    }
    for (k, v) in &spec.env {
        command.env(k, v);
    }
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let name = program_of(&spec.line);
            return done(
                if spec.cwd.is_dir() {
                    Exit::Missing(name)
                } else {
                    Exit::Failed(format!(
                        "the directory {} does not exist",
                        spec.cwd.display()
                    ))
                },
                String::new(),
                0,
            );
        }
        Err(e) => {
            return done(
                Exit::Failed(format!("cannot start `{}`: {e}", spec.line)),
                String::new(),
                0,
            );
        }
    };
    let mut guard = GroupGuard {
        pgid: child.id().map(|id| id as i32),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let readers = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Unpin + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Unpin + Send>),
    ];
    for mut reader in readers.into_iter().flatten() {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            while let Ok(n) = reader.read(&mut buf).await {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    // Keep the head in full and a rolling tail, so a chatty command cannot fill the memory.
    let max = spec.max_output.max(256);
    let mut collected = Collected::new(max);
    let deadline = tokio::time::sleep(spec.timeout);
    tokio::pin!(deadline);
    let mut memory = tokio::time::interval(Duration::from_millis(500));
    memory.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let watched = spec.max_memory.zip(guard.pgid);
    let mut open = true;
    // The command ends when its process exits, even while a process it left in the background
    // still holds the output pipes: that one is killed with the group below, it is no timeout.
    let exit = loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => { guard.kill(); break Exit::Cancelled; }
            _ = &mut deadline => { guard.kill(); break Exit::TimedOut; }
            _ = memory.tick(), if watched.is_some() => {
                if let Some((max, pgid)) = watched
                    && largest_in_group(pgid).is_some_and(|held| held > max)
                {
                    guard.kill();
                    break Exit::OutOfMemory(max);
                }
            }
            chunk = rx.recv(), if open => match chunk {
                Some(c) => collected.push(&c),
                None => open = false,
            },
            status = child.wait() => {
                break match status {
                    Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
                        (Some(code), _) => Exit::Code(code),
                        (None, Some(sig)) => Exit::Signal(sig),
                        (None, None) => Exit::Failed("it ended without an exit code".to_owned()),
                    },
                    Err(e) => Exit::Failed(format!("cannot wait for `{}`: {e}", spec.line)),
                };
            }
        }
    };
    // Whatever the outcome, nothing of the group may outlive the command (a test binary that
    // forked a server, a daemonised helper).
    guard.kill();
    if matches!(
        exit,
        Exit::TimedOut | Exit::Cancelled | Exit::OutOfMemory(_)
    ) {
        let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    }
    // What the pipes still hold; they close once the group is gone (a process that left the
    // group and keeps them open is not waited for long).
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(c) = rx.recv().await {
            collected.push(&c);
        }
    })
    .await;
    let (mut output, cut) = collected.finish();
    match &exit {
        Exit::TimedOut => output.push_str(&format!(
            "\n[killed: `{}` ran longer than its timeout of {}s]\n",
            spec.line,
            spec.timeout.as_secs()
        )),
        Exit::OutOfMemory(max) => output.push_str(&format!(
            "\n[killed: a process of `{}` held more than {} of memory]\n",
            spec.line,
            gib(*max)
        )),
        Exit::Cancelled => output.push_str("\n[killed: the run was cancelled]\n"),
        _ => {}
    }
    done(exit, output, cut)
}

/// Output kept within a budget while it streams: the first `max` bytes, then a rolling tail.
struct Collected {
    max: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
}

impl Collected {
    fn new(max: usize) -> Collected {
        Collected {
            max,
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let room = self.max.saturating_sub(self.head.len());
        let (h, t) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(h);
        self.tail.extend(t);
        while self.tail.len() > self.max {
            self.tail.pop_front();
        }
    }

    fn finish(self) -> (String, usize) {
        if self.tail.is_empty() {
            return truncate_output(&self.head, self.max);
        }
        // head (up to max) + dropped middle + tail (up to max): cut the joined text to max and
        // count what the rolling tail dropped too.
        let dropped = self.total - self.head.len() - self.tail.len();
        let mut all = self.head;
        all.extend(self.tail);
        let (text, cut) = truncate_output(&all, self.max);
        (text, cut + dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_shell_lines() {
        assert_eq!(
            split_words("cargo check --message-format=short").unwrap(),
            ["cargo", "check", "--message-format=short"]
        );
        assert_eq!(
            split_words(r#"python3 -m compileall -q -x '(^|/)\.venv/' ."#).unwrap(),
            [
                "python3",
                "-m",
                "compileall",
                "-q",
                "-x",
                r"(^|/)\.venv/",
                "."
            ]
        );
        assert_eq!(
            split_words(r#"echo "a b" c\ d"#).unwrap(),
            ["echo", "a b", "c d"]
        );
        assert_eq!(split_words("npm test && echo ok"), None);
        assert_eq!(split_words("ls *.rs"), None);
        assert_eq!(split_words("echo 'open"), None);
        assert_eq!(program_of("npm test && echo ok"), "npm");
        assert_eq!(program_of("  ruff check ."), "ruff");
    }

    #[test]
    fn output_keeps_head_and_tail_with_a_note() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (out, cut) = truncate_output(text.as_bytes(), 500);
        assert!(out.starts_with("line 0\n"), "{out}");
        assert!(out.ends_with("line 999\n"), "{out}");
        assert!(out.contains("of output cut here"), "{out}");
        assert!(cut > 0 && out.len() < 700, "{cut} {}", out.len());
        assert_eq!(truncate_output(b"short", 500), ("short".to_owned(), 0));
    }

    #[test]
    fn collected_output_stays_bounded() {
        let mut c = Collected::new(1000);
        for i in 0..10_000 {
            c.push(format!("row {i}\n").as_bytes());
        }
        let (out, cut) = c.finish();
        assert!(
            out.starts_with("row 0\n") && out.ends_with("row 9999\n"),
            "{out}"
        );
        assert!(out.len() < 1200 && cut > 70_000, "{} {cut}", out.len());
    }

    fn spec(line: &str, dir: &Path) -> CommandSpec {
        CommandSpec {
            timeout: Duration::from_secs(60),
            ..CommandSpec::new(line, dir)
        }
    }

    #[tokio::test]
    async fn runs_commands_and_reports_exit_and_output() {
        let dir = tempfile::tempdir().unwrap();
        let out = RealRunner
            .run(
                spec("sh -c 'echo out; echo err >&2; exit 3'", dir.path()),
                CancellationToken::new(),
            )
            .await;
        assert_eq!(out.exit, Exit::Code(3));
        assert!(
            out.output.contains("out") && out.output.contains("err"),
            "{out:?}"
        );
        let out = RealRunner
            .run(
                spec("echo a | tr a b", dir.path()),
                CancellationToken::new(),
            )
            .await;
        assert!(out.success() && out.output.trim() == "b", "{out:?}");
        let out = RealRunner
            .run(
                spec("no-such-tool-patchwise --version", dir.path()),
                CancellationToken::new(),
            )
            .await;
        assert_eq!(out.exit, Exit::Missing("no-such-tool-patchwise".to_owned()));
        assert!(!RealRunner.has_program("no-such-tool-patchwise", &[]));
        assert!(RealRunner.has_program("sh", &[]));
    }

    /// A hung command is killed at its timeout, with every process of its group.
    /// Runs `sh -c 'sleep 300 & …; REST'` with `set` applied to its spec, and checks that the
    /// background sleeper did not outlive the command, however it ended.
    async fn with_a_sleeper(rest: &str, set: impl FnOnce(&mut CommandSpec)) -> ProcessOutput {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let line = format!(
            "sh -c 'sleep 300 & echo $! > {}; {rest}'",
            pidfile.display()
        );
        let mut s = spec(&line, dir.path());
        set(&mut s);
        let out = RealRunner.run(s, CancellationToken::new()).await;
        let sleeper = read_pid(&pidfile);
        assert!(
            !wait_gone(sleeper).await,
            "process {sleeper} survived: {out:?}"
        );
        out
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let out = with_a_sleeper("wait", |s| s.timeout = Duration::from_secs(2)).await;
        assert_eq!(out.exit, Exit::TimedOut, "{out:?}");
        assert!(out.output.contains("longer than its timeout"), "{out:?}");
    }

    /// A command that exits while a process it started in the background keeps its output open
    /// ends with its own exit code, not at the timeout, and the background process is killed.
    #[tokio::test]
    async fn exit_ends_the_command_while_a_background_process_holds_the_output() {
        let out = with_a_sleeper("echo started; exit 4", |s| {
            s.timeout = Duration::from_secs(30)
        })
        .await;
        assert_eq!(out.exit, Exit::Code(4), "{out:?}");
        assert!(out.output.contains("started"), "{out:?}");
    }

    #[tokio::test]
    async fn cancel_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let line = format!("sh -c 'sleep 300 & echo $! > {}; wait'", pidfile.display());
        let cancel = CancellationToken::new();
        let job = tokio::spawn(RealRunner.run(spec(&line, dir.path()), cancel.clone()));
        while std::fs::read_to_string(&pidfile).map_or(true, |s| s.trim().is_empty()) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
        let out = job.await.unwrap();
        assert_eq!(out.exit, Exit::Cancelled, "{out:?}");
        let sleeper = read_pid(&pidfile);
        assert!(
            !wait_gone(sleeper).await,
            "process {sleeper} survived the cancel"
        );
    }

    /// A command whose memory runs away is killed at its bound, its whole group, long before
    /// its timeout: `tail` looking for the end of a line in `/dev/zero` never finds one.
    #[tokio::test]
    async fn a_command_that_fills_the_memory_is_killed_at_its_bound() {
        if !Path::new("/proc/self/stat").exists() {
            return; // the bound is watched on Linux only
        }
        let out = with_a_sleeper("tail /dev/zero", |s| s.max_memory = Some(64 << 20)).await;
        assert_eq!(out.exit, Exit::OutOfMemory(64 << 20), "{out:?}");
        assert!(
            out.output.contains("held more than 64 MiB of memory"),
            "{out:?}"
        );
        assert!(out.duration < Duration::from_secs(60), "{out:?}");
    }

    #[test]
    fn finds_the_memory_limit_of_cgroup_v1_and_v2() {
        let v1 = "9:name=systemd:/\n4:memory:/process_api/f14d\n0::/\n";
        assert_eq!(
            cgroup_limit_files(v1),
            [
                "/sys/fs/cgroup/memory/process_api/f14d/memory.limit_in_bytes",
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "/sys/fs/cgroup/memory.max",
                "/sys/fs/cgroup/memory.max",
            ]
            .map(PathBuf::from)
        );
        assert_eq!(
            cgroup_limit_files("0::/user.slice/session-2.scope\n"),
            [
                "/sys/fs/cgroup/user.slice/session-2.scope/memory.max",
                "/sys/fs/cgroup/memory.max"
            ]
            .map(PathBuf::from)
        );
        assert!(cgroup_limit_files("garbage\n").is_empty());
    }

    #[test]
    fn reads_a_group_s_resident_pages_from_proc_stat() {
        // The command name may hold spaces and parentheses.
        let stat = "4242 (my (odd) cmd) R 1 777 777 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 1 0 \
                    123 4096000 321 18446744073709551615";
        assert_eq!(group_rss_pages(stat, 777), Some(321));
        assert_eq!(group_rss_pages(stat, 778), None);
        assert_eq!(group_rss_pages("garbage", 777), None);
        assert_eq!(gib(12 << 30), "12.0 GiB");
        assert_eq!(gib(64 << 20), "64 MiB");
    }

    fn read_pid(path: &Path) -> i32 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Whether process `pid` still runs after a grace period: gone, or a zombie waiting for an
    /// init that does not reap, both count as killed.
    async fn wait_gone(pid: i32) -> bool {
        let running = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next())
                    != Some("Z")
            })
        };
        for _ in 0..100 {
            if !running() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        running()
    }
}
