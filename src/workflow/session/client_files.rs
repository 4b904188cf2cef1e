//! Files as the edge's client has them: an editor's agent panel may hold a file open with
//! unsaved edits, and a run must read that text, not the disk's, or its proposal is made against
//! a file the user no longer sees. An edge that can ask its client implements [`ClientFiles`];
//! [`read_through`] puts it under a develop run's file system, so every file the run shows a
//! model is read through the client, and from disk when the client cannot answer.
//!
//! The run's tools read synchronously (on blocking threads, and in the run's own task), so a
//! read waits for the client's answer in place ([`tokio::task::block_in_place`]); that needs
//! the multi-threaded runtime and a run that is not polled by the task that reads the client's
//! answers. On any other runtime the disk is read.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::tools::{EntryKind, FileSystem, WalkEntry};
use crate::workspace::ReadError;

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
    });
}

struct ThroughClient {
    disk: Arc<dyn FileSystem>,
    client: Arc<dyn ClientFiles>,
    roots: Vec<PathBuf>,
}

impl ThroughClient {
    fn client_text(&self, path: &Path) -> Option<String> {
        if !self.roots.iter().any(|r| path.starts_with(r))
            || self.disk.kind(path) != Some(EntryKind::File)
        {
            return None;
        }
        let handle = tokio::runtime::Handle::try_current().ok()?;
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return None;
        }
        let read = self.client.read(path);
        tokio::task::block_in_place(|| handle.block_on(read))
    }
}

impl FileSystem for ThroughClient {
    fn read_text(&self, path: &Path) -> Result<String, ReadError> {
        match self.client_text(path) {
            Some(text) => Ok(text),
            None => self.disk.read_text(path),
        }
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

    struct Buffers;

    impl ClientFiles for Buffers {
        fn read(&self, path: &Path) -> BoxFuture<'static, Option<String>> {
            let open = path.ends_with("open.rs");
            Box::pin(async move { open.then(|| "unsaved\n".to_owned()) })
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
        let fs = ThroughClient {
            disk: Arc::new(RealFs),
            client: Arc::new(Buffers),
            roots: vec![root.clone()],
        };
        assert_eq!(fs.read_text(&root.join("open.rs")).unwrap(), "unsaved\n");
        assert_eq!(fs.read_text(&root.join("closed.rs")).unwrap(), "on disk\n");
        assert_eq!(
            fs.read_text(&outside.path().join("open.rs")).unwrap(),
            "outside\n"
        );
        // From a blocking thread too, as the run's tools read.
        let fs = Arc::new(fs);
        let path = root.join("open.rs");
        let text = tokio::task::spawn_blocking(move || fs.read_text(&path))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(text, "unsaved\n");
    }
}
