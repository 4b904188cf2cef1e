//! Atomic multi-file writes (`tools::transaction`) on a real temp directory: every test asserts
//! the exact state of the directory after the commit — all changes, or none. Failures are
//! injected through the `Disk` trait (a full disk, a read-only directory midway, a file deleted
//! or changed between the check and the write, a rollback that itself fails), and a real
//! `kill -9` between two renames is recovered by the next start of the real binary.

use std::collections::BTreeMap;
use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use patchwise::tools::transaction::{ChangeKind, Disk, Journal, RealDisk, Transaction};

/// Every entry under `dir`: files with their text, symlinks with their target, directories.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                out.insert(
                    rel,
                    format!("-> {}", fs::read_link(e.path()).unwrap().display()),
                );
            } else if ft.is_dir() {
                out.insert(format!("{rel}/"), String::new());
                stack.push(e.path());
            } else {
                out.insert(rel, fs::read_to_string(e.path()).unwrap());
            }
        }
    }
    out
}

struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
    journal: PathBuf,
}

impl Ws {
    fn new(files: &[(&str, &str)]) -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let journal = dir.path().join("data/patchwise/transactions");
        for (name, text) in files {
            let p = root.join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        fs::create_dir_all(&root).unwrap();
        Ws {
            _dir: dir,
            root,
            journal,
        }
    }

    fn p(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn tx(&self) -> Transaction {
        Transaction::new().with_journal(Some(Journal::at(&self.journal)))
    }

    fn journal_entries(&self) -> Vec<String> {
        fs::read_dir(&self.journal)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A disk that asks `hook` before every operation: the hook may act on the real disk (delete a
/// file) and may answer an error to fail the operation.
struct Faulty<F> {
    hook: F,
    ops: Mutex<Vec<String>>,
}

impl<F: Fn(&str, &Path, usize) -> Option<io::Error> + Send + Sync> Faulty<F> {
    fn new(hook: F) -> Self {
        Faulty {
            hook,
            ops: Mutex::new(Vec::new()),
        }
    }

    /// Runs the hook with how many times `op` ran before.
    fn check(&self, op: &str, path: &Path) -> io::Result<()> {
        let n = {
            let mut ops = self.ops.lock().unwrap();
            let n = ops.iter().filter(|o| *o == op).count();
            ops.push(op.to_owned());
            n
        };
        match (self.hook)(op, path, n) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl<F: Fn(&str, &Path, usize) -> Option<io::Error> + Send + Sync> Disk for Faulty<F> {
    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        RealDisk.symlink_metadata(path)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        RealDisk.canonicalize(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.check("read", path)?;
        RealDisk.read(path)
    }
    fn write_new(&self, path: &Path, bytes: &[u8], like: Option<&Metadata>) -> io::Result<()> {
        self.check("write_new", path)?;
        RealDisk.write_new(path, bytes, like)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check("hard_link", to)?;
        RealDisk.hard_link(from, to)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check("rename", to)?;
        RealDisk.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.check("remove_file", path)?;
        RealDisk.remove_file(path)
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.check("create_dir", path)?;
        RealDisk.create_dir(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        RealDisk.remove_dir(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        RealDisk.sync_dir(dir)
    }
}

const A: &str = "fn a() {}\n";
const B: &str = "fn b() {}\n";
const C: &str = "fn c() {}\n";

fn three() -> Ws {
    Ws::new(&[("a.rs", A), ("src/b.rs", B), ("c.rs", C)])
}

/// Replace a.rs and src/b.rs, create new/deep/d.rs, delete c.rs.
fn full_tx(ws: &Ws) -> Transaction {
    let mut tx = ws.tx();
    tx.replace(ws.p("a.rs"), A, "fn a2() {}\n")
        .replace(ws.p("src/b.rs"), B, "fn b2() {}\n")
        .create(ws.p("new/deep/d.rs"), "fn d() {}\n")
        .delete(ws.p("c.rs"), C);
    tx
}

#[test]
fn every_change_lands_and_no_side_file_is_left() {
    let ws = three();
    let done = full_tx(&ws).commit().unwrap();
    let kinds: Vec<ChangeKind> = done.files.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [
            ChangeKind::Replace,
            ChangeKind::Replace,
            ChangeKind::Create,
            ChangeKind::Delete
        ]
    );
    let want: BTreeMap<String, String> = [
        ("a.rs", "fn a2() {}\n"),
        ("new/", ""),
        ("new/deep/", ""),
        ("new/deep/d.rs", "fn d() {}\n"),
        ("src/", ""),
        ("src/b.rs", "fn b2() {}\n"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect();
    assert_eq!(tree(&ws.root), want);
    assert!(
        ws.journal_entries().is_empty(),
        "{:?}",
        ws.journal_entries()
    );
}

#[cfg(unix)]
#[test]
fn permissions_and_symlinks_are_kept() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let ws = Ws::new(&[("run.sh", "echo 1\n"), ("real.rs", A)]);
    fs::set_permissions(ws.p("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    symlink("real.rs", ws.p("link.rs")).unwrap();
    let mut tx = ws.tx();
    tx.replace(ws.p("run.sh"), "echo 1\n", "echo 2\n").replace(
        ws.p("link.rs"),
        A,
        "fn linked() {}\n",
    );
    let done = tx.commit().unwrap();
    assert_eq!(
        done.files[1].target,
        fs::canonicalize(ws.p("real.rs")).unwrap()
    );
    let mode = fs::metadata(ws.p("run.sh")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o750);
    let t = tree(&ws.root);
    assert_eq!(t["link.rs"], "-> real.rs");
    assert_eq!(t["real.rs"], "fn linked() {}\n");
    assert_eq!(t["run.sh"], "echo 2\n");
    assert_eq!(t.len(), 3, "{t:?}");
}

#[test]
fn a_full_disk_midway_leaves_every_file_as_it_was() {
    let ws = three();
    let before = tree(&ws.root);
    // The second temporary file cannot be written.
    let disk = Faulty::new(|op, _, n| {
        (op == "write_new" && n == 1).then(|| io::Error::from(io::ErrorKind::StorageFull))
    });
    let err = full_tx(&ws).commit_on(&disk).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("cannot write {}", ws.p("src/b.rs").display())),
        "{msg}"
    );
    assert!(msg.contains("free some space"), "{msg}");
    assert!(msg.ends_with("nothing was changed"), "{msg}");
    assert_eq!(tree(&ws.root), before);
    assert!(ws.journal_entries().is_empty());
}

#[test]
fn a_read_only_directory_midway_restores_the_files_already_renamed() {
    let ws = three();
    let before = tree(&ws.root);
    let src = ws.p("src");
    // a.rs is renamed into place first; then src/ refuses the rename.
    let disk = Faulty::new(move |op, path, _| {
        (op == "rename" && path.parent() == Some(src.as_path()))
            .then(|| io::Error::from(io::ErrorKind::PermissionDenied))
    });
    let err = full_tx(&ws).commit_on(&disk).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("src/b.rs: cannot move the new text into place: permission denied"),
        "{msg}"
    );
    assert!(msg.contains("check the permissions"), "{msg}");
    assert_eq!(err.undone, vec![ws.p("a.rs")]);
    assert!(err.not_undone.is_empty());
    assert_eq!(tree(&ws.root), before);
}

#[test]
fn a_file_deleted_between_check_and_write_is_not_recreated() {
    let ws = three();
    let b = ws.p("src/b.rs");
    // Someone deletes src/b.rs after the checks, before its original is kept.
    let disk = Faulty::new(move |op, path, _| {
        if op == "hard_link" && path.to_string_lossy().contains(".b.rs.pw-") {
            let _ = fs::remove_file(&b);
        }
        None
    });
    let err = full_tx(&ws).commit_on(&disk).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("src/b.rs: it was deleted since it was read"),
        "{msg}"
    );
    let mut after = three_without_b();
    after.insert("src/".into(), String::new());
    assert_eq!(tree(&ws.root), after);
}

fn three_without_b() -> BTreeMap<String, String> {
    [("a.rs", A), ("c.rs", C)]
        .into_iter()
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
}

#[test]
fn a_file_changed_between_check_and_write_is_not_overwritten() {
    let ws = three();
    let b = ws.p("src/b.rs");
    let disk = Faulty::new(move |op, path, _| {
        if op == "hard_link" && path.to_string_lossy().contains(".b.rs.pw-") {
            fs::write(&b, "fn theirs() {}\n").unwrap();
        }
        None
    });
    let err = full_tx(&ws).commit_on(&disk).unwrap_err();
    assert!(
        err.to_string()
            .contains("it changed on disk since it was read"),
        "{err}"
    );
    let t = tree(&ws.root);
    assert_eq!(t["src/b.rs"], "fn theirs() {}\n");
    assert_eq!(t["a.rs"], A);
    assert_eq!(t["c.rs"], C);
    assert_eq!(t.len(), 4, "{t:?}");
}

#[test]
fn stale_or_existing_files_are_refused_before_anything_is_written() {
    let ws = three();
    let before = tree(&ws.root);
    let mut tx = ws.tx();
    tx.replace(ws.p("a.rs"), "fn other() {}\n", "x");
    let err = tx.commit().unwrap_err();
    assert!(
        err.to_string()
            .contains("changed on disk since it was read"),
        "{err}"
    );
    let mut tx = ws.tx();
    tx.replace(ws.p("a.rs"), A, "x").create(ws.p("c.rs"), "x");
    let err = tx.commit().unwrap_err();
    assert!(err.to_string().contains("c.rs: it already exists"), "{err}");
    let mut tx = ws.tx();
    tx.replace(ws.p("a.rs"), A, "x")
        .replace(ws.p("gone.rs"), "y", "x");
    let err = tx.commit().unwrap_err();
    assert!(
        err.to_string()
            .contains("gone.rs: it was deleted since it was read"),
        "{err}"
    );
    let mut tx = ws.tx();
    tx.replace(ws.p("a.rs"), A, "x")
        .replace(ws.p("./a.rs"), A, "y");
    let err = tx.commit().unwrap_err();
    assert!(err.to_string().contains("the same file as"), "{err}");
    assert_eq!(tree(&ws.root), before);
}

#[test]
fn a_file_created_by_someone_else_meanwhile_is_kept() {
    let ws = three();
    let d = ws.p("d.rs");
    let disk = Faulty::new(move |op, path, _| {
        if op == "hard_link" && path.ends_with("d.rs") {
            fs::write(&d, "theirs\n").unwrap();
        }
        None
    });
    let mut tx = ws.tx();
    tx.replace(ws.p("a.rs"), A, "fn a2() {}\n")
        .create(ws.p("d.rs"), "ours\n");
    let err = tx.commit_on(&disk).unwrap_err();
    assert!(err.to_string().contains("created by someone else"), "{err}");
    let t = tree(&ws.root);
    assert_eq!(t["d.rs"], "theirs\n");
    assert_eq!(t["a.rs"], A);
    assert_eq!(t.len(), 5, "{t:?}");
}

#[test]
fn a_rollback_that_fails_says_where_the_original_is() {
    let ws = three();
    let a = ws.p("a.rs");
    // src/b.rs fails to rename; then restoring a.rs fails too.
    let disk = Faulty::new(move |op, path, n| match op {
        "rename" if path.ends_with("src/b.rs") => Some(io::Error::other("injected")),
        "rename" if path == a.as_path() && n >= 1 => Some(io::Error::other("injected again")),
        _ => None,
    });
    let err = full_tx(&ws).commit_on(&disk).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("the rollback was incomplete"), "{msg}");
    assert!(
        msg.contains("a.rs could not be restored (injected again)"),
        "{msg}"
    );
    let kept = err.not_undone[0]
        .rsplit("kept in ")
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(fs::read_to_string(&kept).unwrap(), A);
    // The journal stays, so a later start can still restore it.
    assert_eq!(ws.journal_entries().len(), 1);
}

/// The test binary re-runs this test in a child process (`PATCHWISE_TX_CHILD` set): the child
/// commits two files and stops forever after the first rename; the parent kills it with
/// SIGKILL, then starts the real `patchwise` binary, which must roll the half-done commit back
/// and say so.
#[test]
fn kill_9_between_writes_is_recovered_on_the_next_start() {
    if let Ok(dir) = std::env::var("PATCHWISE_TX_CHILD") {
        let dir = PathBuf::from(dir);
        let ready = dir.join("ready");
        let disk = Faulty::new(move |op, _, n| {
            if op == "rename" && n == 1 {
                fs::write(&ready, "").unwrap();
                std::thread::sleep(Duration::from_secs(600));
            }
            None
        });
        let journal = Journal::at(dir.join("data/patchwise/transactions"));
        let mut tx = Transaction::new().with_journal(Some(journal));
        tx.replace(dir.join("ws/a.rs"), A, "fn a2() {}\n")
            .replace(dir.join("ws/src/b.rs"), B, "fn b2() {}\n")
            .create(dir.join("ws/new/d.rs"), "fn d() {}\n");
        let _ = tx.commit_on(&disk);
        return;
    }
    let ws = three();
    let base = ws.root.parent().unwrap().to_path_buf();
    let before = tree(&ws.root);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "kill_9_between_writes_is_recovered_on_the_next_start",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PATCHWISE_TX_CHILD", &base)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !base.join("ready").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the child never reached the second rename"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child ended early: {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Half done: a.rs is new, temporary files and a backup lie around, the journal remains.
    let half = tree(&ws.root);
    assert_eq!(half["a.rs"], "fn a2() {}\n");
    assert!(half.keys().any(|k| k.contains(".pw-")), "{half:?}");
    assert_eq!(ws.journal_entries().len(), 1);

    // The next start (any command) rolls it back and reports it.
    let out = Command::new(env!("CARGO_BIN_EXE_patchwise"))
        .args(["edit", "missing.rs", "--old-file", "x", "--new-file", "y"])
        .current_dir(&ws.root)
        .env("XDG_DATA_HOME", base.join("data"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "restored {} to its text before an interrupted write",
            fs::canonicalize(ws.p("a.rs")).unwrap().display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("temporary files left by an interrupted write"),
        "{stderr}"
    );
    assert_eq!(tree(&ws.root), before);
    assert!(
        ws.journal_entries().is_empty(),
        "{:?}",
        ws.journal_entries()
    );
    // Nothing left to do the time after.
    let again = Journal::at(&ws.journal).recover();
    assert!(again.is_empty(), "{again:?}");
}

#[test]
fn a_commit_whose_clean_up_failed_is_cleaned_by_the_next_start() {
    let ws = three();
    // The commit went through, but its originals could not be removed (as if the process had
    // died right after the last rename).
    let disk = Faulty::new(|op, path, _| {
        (op == "remove_file" && path.to_string_lossy().ends_with(".orig"))
            .then(|| io::Error::other("killed"))
    });
    let mut tx = ws.tx();
    tx.replace(ws.p("a.rs"), A, "fn a2() {}\n");
    tx.commit_on(&disk).unwrap();
    assert!(tree(&ws.root).keys().any(|k| k.ends_with(".orig")));
    assert_eq!(ws.journal_entries().len(), 1);
    let report = Journal::at(&ws.journal).recover();
    assert_eq!(
        report,
        ["removed 1 temporary file left by an interrupted write"]
    );
    let mut want = three_without_b();
    want.insert("a.rs".into(), "fn a2() {}\n".into());
    want.insert("src/".into(), String::new());
    want.insert("src/b.rs".into(), B.into());
    assert_eq!(tree(&ws.root), want);
    assert!(ws.journal_entries().is_empty());
}
