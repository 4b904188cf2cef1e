//! Files as the edge's client has them: an editor's agent panel may hold a file open with
//! unsaved edits, and a run must read that text, not the disk's, or its proposal is made against
//! a file the user no longer sees. An edge that can ask its client implements [`ClientFiles`];
//! [`read_through`] puts it under a develop run's file system, so every file the run reads to
//! show a model or to change is read through the client, and from disk when the client cannot
//! answer.
//!
//! A round trip per file adds up in a large workspace, so the client is asked only for what it
//! can hold unsaved and the run goes on with: each file at most once per run (its answer is
//! kept: the run works on one view of the file), a step's files all at once with at most
//! [`AT_ONCE`] requests in flight ([`FileSystem::prefetch`]), and never for a scan over many
//! files — a search, line counts, the files a rename would touch — which reads the disk
//! ([`FileSystem::scan_text`]; a file the client already answered for scans as the client has
//! it).
//!
//! The run's tools read synchronously (on blocking threads, and in the run's own task), so a
//! read waits for the client's answer in place ([`tokio::task::block_in_place`]); that needs
//! the multi-threaded runtime and a run that is not polled by the task that reads the client's
//! answers. On any other runtime the disk is read.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use futures::future::BoxFuture;

use crate::tools::{EntryKind, FileSystem, WalkEntry};
use crate::workspace::ReadError;

/// How many reads a prefetch keeps in flight at once.
pub const AT_ONCE: usize = 8;

/// Reads a file's text as the client has it.
pub trait ClientFiles: Send + Sync {
    /// The client's text of `path` (unsaved edits included), or `None` when the client could
    /// not say (the caller reads the disk).
    fn read(&self, path: &Path) -> BoxFuture<'static, Option<String>>;
}

/// `ctx`'s files under its roots read through `client`, the rest as before.
pub fn read_through(ctx: &mut super::develop::DevelopContext, client: Arc<dyn ClientFiles>) {
    ctx.fs = Arc::new(ThroughClient {
        disk: ctx.fs.clone(),
        client,
        roots: ctx.roots.clone(),
        answered: Mutex::new(HashMap::new()),
    });
}

struct ThroughClient {
    disk: Arc<dyn FileSystem>,
    client: Arc<dyn ClientFiles>,
    roots: Vec<PathBuf>,
    /// The client's answer for each file it was asked about (`None`: it could not say).
    answered: Mutex<HashMap<PathBuf, Option<String>>>,
}

impl ThroughClient {
    /// Whether `path` is one the client is asked about: a file under the run's roots.
    fn asks_for(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r))
            && self.disk.kind(path) == Some(EntryKind::File)
    }

    fn answer(&self, path: &Path) -> Option<Option<String>> {
        self.lock().get(path).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Option<String>>> {
        self.answered.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the client about `paths` (at most [`AT_ONCE`] at a time) and keeps the answers;
    /// nothing when the runtime cannot wait in place.
    fn ask(&self, paths: Vec<PathBuf>) {
        if paths.is_empty() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return;
        }
        let reads = futures::stream::iter(paths)
            .map(|path| {
                let read = self.client.read(&path);
                async move { (path, read.await) }
            })
            .buffer_unordered(AT_ONCE)
            .collect::<Vec<_>>();
        let answers = tokio::task::block_in_place(|| handle.block_on(reads));
        self.lock().extend(answers);
    }

    fn client_text(&self, path: &Path) -> Option<String> {
        if !self.asks_for(path) {
            return None;
        }
        if let Some(answer) = self.answer(path) {
            return answer;
        }
        self.ask(vec![path.to_path_buf()]);
        self.answer(path).flatten()
    }
}

impl FileSystem for ThroughClient {
    fn read_text(&self, path: &Path) -> Result<String, ReadError> {
        match self.client_text(path) {
            Some(text) => Ok(text),
            None => self.disk.read_text(path),
        }
    }

    fn scan_text(&self, path: &Path) -> Result<String, ReadError> {
        match self.answer(path).flatten() {
            Some(text) => Ok(text),
            None => self.disk.scan_text(path),
        }
    }

    fn prefetch(&self, paths: &[PathBuf]) {
        let wanted: Vec<PathBuf> = {
            let answered = self.lock();
            let mut wanted: Vec<PathBuf> = paths
                .iter()
                .filter(|p| !answered.contains_key(*p))
                .cloned()
                .collect();
            wanted.sort();
            wanted.dedup();
            wanted
        };
        let wanted = wanted.into_iter().filter(|p| self.asks_for(p)).collect();
        self.ask(wanted);
    }

    fn kind(&self, path: &Path) -> Option<EntryKind> {
        self.disk.kind(path)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.disk.canonicalize(path)
    }

    fn walk(&self, dir: &Path, max: usize) -> (Vec<WalkEntry>, bool) {
        self.disk.walk(dir, max)
    }

    fn list_dir(&self, dir: &Path) -> Vec<String> {
        self.disk.list_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::RealFs;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A client with `open.rs` open (unsaved), counting its requests and the most in flight.
    #[derive(Default)]
    struct Buffers {
        asked: AtomicUsize,
        in_flight: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
    }

    impl ClientFiles for Buffers {
        fn read(&self, path: &Path) -> BoxFuture<'static, Option<String>> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            let open = path.ends_with("open.rs");
            let (in_flight, most) = (self.in_flight.clone(), self.most.clone());
            Box::pin(async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                open.then(|| "unsaved\n".to_owned())
            })
        }
    }

    fn through(root: &Path, client: Arc<Buffers>) -> ThroughClient {
        ThroughClient {
            disk: Arc::new(RealFs),
            client,
            roots: vec![root.to_path_buf()],
            answered: Mutex::new(HashMap::new()),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn open_files_come_from_the_client_and_the_rest_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for name in ["open.rs", "closed.rs"] {
            std::fs::write(root.join(name), "on disk\n").unwrap();
        }
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("open.rs"), "outside\n").unwrap();
        let client = Arc::new(Buffers::default());
        let fs = through(&root, client.clone());
        assert_eq!(fs.read_text(&root.join("open.rs")).unwrap(), "unsaved\n");
        assert_eq!(fs.read_text(&root.join("closed.rs")).unwrap(), "on disk\n");
        assert_eq!(
            fs.read_text(&outside.path().join("open.rs")).unwrap(),
            "outside\n"
        );
        // Each file is asked about once per run.
        assert_eq!(fs.read_text(&root.join("open.rs")).unwrap(), "unsaved\n");
        assert_eq!(client.asked.load(Ordering::SeqCst), 2);
        // From a blocking thread too, as the run's tools read.
        let fs = Arc::new(fs);
        let path = root.join("open.rs");
        let text = tokio::task::spawn_blocking(move || fs.read_text(&path))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(text, "unsaved\n");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn scans_read_the_disk_and_a_prefetch_asks_a_few_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for n in 0..40 {
            std::fs::write(root.join(format!("f{n}.rs")), "on disk\n").unwrap();
        }
        std::fs::write(root.join("open.rs"), "on disk\n").unwrap();
        let client = Arc::new(Buffers::default());
        let fs = through(&root, client.clone());
        // A scan asks nobody.
        for n in 0..40 {
            assert_eq!(
                fs.scan_text(&root.join(format!("f{n}.rs"))).unwrap(),
                "on disk\n"
            );
        }
        assert_eq!(fs.scan_text(&root.join("open.rs")).unwrap(), "on disk\n");
        assert_eq!(client.asked.load(Ordering::SeqCst), 0);
        // A prefetch asks about each file once, never more than AT_ONCE at a time, and what
        // it learned is what reads and scans see after.
        let mut paths: Vec<PathBuf> = (0..40).map(|n| root.join(format!("f{n}.rs"))).collect();
        paths.push(root.join("open.rs"));
        paths.push(root.join("open.rs"));
        paths.push(root.join("missing.rs"));
        fs.prefetch(&paths);
        assert_eq!(client.asked.load(Ordering::SeqCst), 41);
        let most = client.most.load(Ordering::SeqCst);
        assert!((2..=AT_ONCE).contains(&most), "{most} in flight");
        assert_eq!(fs.scan_text(&root.join("open.rs")).unwrap(), "unsaved\n");
        assert_eq!(fs.read_text(&root.join("open.rs")).unwrap(), "unsaved\n");
        assert_eq!(fs.read_text(&root.join("f3.rs")).unwrap(), "on disk\n");
        fs.prefetch(&paths);
        assert_eq!(client.asked.load(Ordering::SeqCst), 41);
    }
}
