//! Finding, or starting, the one model host for a model on this machine.
//!
//! A host is `patchwise model serve` in a process of its own (so C++ failing cannot take an
//! editor's language server with it), one per model file and settings, shared by every
//! patchwise process of the user: `<data dir>/hosts/<key>.json` names its address once its model
//! is loaded. [`ensure`] takes `<key>.lock` (an exclusive `flock`, released by the kernel when
//! its holder dies, so a crash never leaves it held), trusts the address only if the process
//! lives and answers `/health`, and otherwise removes the stale file and starts a new host,
//! waiting until it announces itself or dies (its log then says why). Two processes starting
//! the host at once: the second waits on the lock and finds the first one's host.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a host writes about itself once it listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    pub pid: u32,
    /// The OpenAI-compatible base URL (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    pub model: PathBuf,
    pub context: u32,
    /// Seconds since the Unix epoch.
    pub started: u64,
}

impl Announcement {
    /// Writes the announcement atomically (a reader never sees half of it).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension(format!("tmp{}", self.pid));
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&tmp, path)
    }

    pub fn read(path: &Path) -> Option<Announcement> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// Removes the file if it still names `pid` (a newer host may have replaced it).
    pub fn remove_if_own(path: &Path, pid: u32) {
        if Announcement::read(path).is_some_and(|a| a.pid == pid) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Which host: the model and the settings it is loaded with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    pub model: PathBuf,
    pub threads: Option<u32>,
    pub context: Option<u32>,
    pub gpu_layers: u32,
    /// The host exits after this long with no request.
    pub idle: Duration,
}

impl HostSpec {
    /// A name for this host's files: the same model and settings share one host.
    pub fn key(&self) -> String {
        let model = std::fs::canonicalize(&self.model).unwrap_or_else(|_| self.model.clone());
        let mut hash = Sha256::new();
        hash.update(model.to_string_lossy().as_bytes());
        hash.update(
            format!("|{:?}|{:?}|{}", self.threads, self.context, self.gpu_layers).as_bytes(),
        );
        let digest = hash.finalize();
        let stem = model
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect();
        format!(
            "{stem}-{}",
            digest[..6]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        )
    }
}

/// Where a host's files live.
#[derive(Debug, Clone)]
pub struct HostFiles {
    pub announcement: PathBuf,
    pub lock: PathBuf,
    pub log: PathBuf,
}

impl HostFiles {
    pub fn new(data_dir: &Path, spec: &HostSpec) -> HostFiles {
        let dir = data_dir.join("hosts");
        let key = spec.key();
        HostFiles {
            announcement: dir.join(format!("{key}.json")),
            lock: dir.join(format!("{key}.lock")),
            log: dir.join(format!("{key}.log")),
        }
    }
}

/// Why no host could be had.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HostError {
    #[error("cannot prepare the model host's files in {dir}: {reason}")]
    Files { dir: String, reason: String },
    #[error("cannot start the model host ({program}): {reason}")]
    Spawn { program: String, reason: String },
    #[error("the model host for {model} stopped while loading: {reason} (its log: {log})")]
    Died {
        model: String,
        reason: String,
        log: String,
    },
    #[error("the model host for {model} did not load within {secs} s (its log: {log})")]
    Slow {
        model: String,
        secs: u64,
        log: String,
    },
}

/// How long a new host may take to load its model before the starter gives up.
pub const LOAD_PATIENCE: Duration = Duration::from_secs(300);

/// The running host for `spec`, started if none is. Blocking: call it off the async runtime.
/// `program` is the `patchwise` binary to start (`std::env::current_exe()` in the product).
pub fn ensure(spec: &HostSpec, data_dir: &Path, program: &Path) -> Result<Announcement, HostError> {
    let files = HostFiles::new(data_dir, spec);
    let dir = files.lock.parent().unwrap_or(data_dir);
    std::fs::create_dir_all(dir).map_err(|err| HostError::Files {
        dir: dir.display().to_string(),
        reason: err.to_string(),
    })?;
    // Fast path: an announced host that answers, without waiting on the lock.
    if let Some(host) = Announcement::read(&files.announcement).filter(alive) {
        return Ok(host);
    }
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&files.lock)
        .map_err(|err| HostError::Files {
            dir: dir.display().to_string(),
            reason: err.to_string(),
        })?;
    let _held = Flock::exclusive(&lock).map_err(|err| HostError::Files {
        dir: dir.display().to_string(),
        reason: format!("cannot lock {}: {err}", files.lock.display()),
    })?;
    if let Some(host) = Announcement::read(&files.announcement).filter(alive) {
        return Ok(host);
    }
    // Whatever is announced is dead or deaf: a host that crashed, or was killed.
    let _ = std::fs::remove_file(&files.announcement);
    start(spec, &files, program)
}

/// Whether an announced host is this machine's live process and answers.
fn alive(host: &Announcement) -> bool {
    process_lives(host.pid) && health(&host.url, Duration::from_secs(3))
}

fn process_lives(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks that the process exists.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

/// `GET /health` on the host's address, answered 200 within `timeout`.
pub fn health(url: &str, timeout: Duration) -> bool {
    let Some(authority) = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
    else {
        return false;
    };
    let Ok(address) = authority.parse::<SocketAddr>() else {
        return false;
    };
    if !address.ip().is_loopback() {
        return false;
    }
    let Ok(mut stream) = TcpStream::connect_timeout(&address, timeout) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let request = format!("GET /health HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = stream.take(4096).read_to_end(&mut answer);
    answer.starts_with(b"HTTP/1.1 200")
}

fn start(spec: &HostSpec, files: &HostFiles, program: &Path) -> Result<Announcement, HostError> {
    let log = File::create(&files.log).map_err(|err| HostError::Files {
        dir: files.log.display().to_string(),
        reason: err.to_string(),
    })?;
    let mut command = Command::new(program);
    command
        .arg("model")
        .arg("serve")
        .arg(&spec.model)
        .arg("--announce")
        .arg(&files.announcement)
        .arg("--idle-secs")
        .arg(spec.idle.as_secs().max(1).to_string())
        .arg("--gpu-layers")
        .arg(spec.gpu_layers.to_string());
    if let Some(threads) = spec.threads {
        command.arg("--threads").arg(threads.to_string());
    }
    if let Some(context) = spec.context {
        command.arg("--context").arg(context.to_string());
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .env(
            "RUST_LOG",
            std::env::var("PATCHWISE_HOST_LOG").unwrap_or_else(|_| "info".into()),
        );
    // Its own process group: a Ctrl-C meant for the process that started it (a terminal's
    // `patchwise develop`) does not stop the host the editors share.
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command.spawn().map_err(|err| HostError::Spawn {
        program: program.display().to_string(),
        reason: err.to_string(),
    })?;
    let pid = child.id();
    let model = spec.model.display().to_string();
    let began = Instant::now();
    loop {
        if let Some(host) = Announcement::read(&files.announcement).filter(|a| a.pid == pid) {
            // Reaped by a thread of its own, so the host never lingers as a zombie of ours.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            return Ok(host);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(HostError::Died {
                model,
                reason: last_words(&files.log).unwrap_or_else(|| format!("exit {status}")),
                log: files.log.display().to_string(),
            });
        }
        if began.elapsed() > LOAD_PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            return Err(HostError::Slow {
                model,
                secs: LOAD_PATIENCE.as_secs(),
                log: files.log.display().to_string(),
            });
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The host's last error line, from its log.
fn last_words(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines()
        .rev()
        .map(str::trim)
        .find(|line| line.starts_with("patchwise model serve:") || line.contains("ERROR"))
        .or_else(|| text.lines().rev().map(str::trim).find(|l| !l.is_empty()))
        .map(|line| {
            line.trim_start_matches("patchwise model serve:")
                .trim()
                .to_owned()
        })
}

/// An exclusive advisory lock on a file, released when dropped or when the process dies.
struct Flock<'a>(&'a File);

impl<'a> Flock<'a> {
    fn exclusive(file: &'a File) -> std::io::Result<Flock<'a>> {
        use std::os::fd::AsRawFd;
        loop {
            // SAFETY: flock on a descriptor this function borrows for the guard's lifetime.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(Flock(file));
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlocking the descriptor locked in `exclusive`.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_model_and_settings_share_a_key_and_others_do_not() {
        let spec = HostSpec {
            model: PathBuf::from("/m/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
            threads: Some(2),
            context: None,
            gpu_layers: 0,
            idle: Duration::from_secs(600),
        };
        let idle_differs = HostSpec {
            idle: Duration::from_secs(5),
            ..spec.clone()
        };
        assert_eq!(spec.key(), idle_differs.key());
        assert!(
            spec.key()
                .starts_with("qwen2.5-coder-1.5b-instruct-q4_k_m-")
        );
        let threads_differ = HostSpec {
            threads: Some(4),
            ..spec.clone()
        };
        assert_ne!(spec.key(), threads_differ.key());
    }

    #[test]
    fn a_stale_announcement_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.json");
        // A pid that cannot exist, and a port nobody listens on.
        let stale = Announcement {
            pid: u32::MAX,
            url: "http://127.0.0.1:9/v1".into(),
            model: PathBuf::from("m.gguf"),
            context: 8192,
            started: 0,
        };
        stale.write(&path).unwrap();
        assert_eq!(Announcement::read(&path), Some(stale.clone()));
        assert!(!alive(&stale));
        Announcement::remove_if_own(&path, 1);
        assert!(path.exists(), "another pid's file stays");
        Announcement::remove_if_own(&path, u32::MAX);
        assert!(!path.exists());
        assert!(!health(
            "http://example.com:80/v1",
            Duration::from_millis(10)
        ));
    }
}
