//! The sources that are always there: the workspace (passages from an incremental FTS5 index
//! of its text files, see [`crate::research::index`]) and the research library (FTS5 over
//! earlier syntheses and sources). Both run on the blocking pool. The workspace source also
//! reads the files its passages' include markers name ([`crate::research::includes`]), and only
//! files the index holds: never a hidden or ignored file, nothing outside the workspace.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use crate::research::config::SourceSettings;
use crate::research::includes;
use crate::research::index;
use crate::research::passages::{self, terms};
use crate::research::sources::{Source, SourceContext, SourceError, SourceQuery, SourceResults};
use crate::store::{Library, SourceRecord, now_rfc3339};

/// The workspace folder.
pub struct WorkspaceSource {
    name: String,
    root: PathBuf,
    timeout: Duration,
    /// Folders never indexed: patchwise's data directory.
    exclude: Vec<PathBuf>,
}

impl WorkspaceSource {
    pub fn new(settings: &SourceSettings, root: &Path, exclude: &[PathBuf]) -> WorkspaceSource {
        WorkspaceSource {
            name: settings.name.clone(),
            root: root.to_path_buf(),
            timeout: settings.timeout,
            exclude: exclude.to_vec(),
        }
    }
}

impl Source for WorkspaceSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn search<'a>(
        &'a self,
        query: &'a SourceQuery,
        context: &'a SourceContext,
    ) -> BoxFuture<'a, Result<SourceResults, SourceError>> {
        Box::pin(async move {
            let library = match &context.library {
                Some(library) => library.clone(),
                // Without a library (an embedder's choice), an index for this search only.
                None => Arc::new(
                    Library::open(Path::new(":memory:"))
                        .map_err(|e| SourceError::Unavailable(e.to_string()))?,
                ),
            };
            let mut exclude = self.exclude.clone();
            // The library's folder holds its database and the reports.
            if let Some(dir) = library
                .path()
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
            {
                exclude.push(dir.to_path_buf());
            }
            let root = self.root.clone();
            let text = query.text.clone();
            let max = query.max_results;
            let cancel = context.cancel.clone();
            let deadline = Instant::now() + self.timeout.mul_f32(0.8);
            tokio::task::spawn_blocking(move || {
                search_workspace(&library, &root, &exclude, &text, max, &cancel, deadline)
            })
            .await
            .map_err(|e| SourceError::Transport(format!("the workspace search stopped: {e}")))?
        })
    }
}

/// Refreshes the index of `root` and returns its best passages for `question` as sources.
pub fn search_workspace(
    library: &Library,
    root: &Path,
    exclude: &[PathBuf],
    question: &str,
    max: usize,
    cancel: &tokio_util::sync::CancellationToken,
    deadline: Instant,
) -> Result<SourceResults, SourceError> {
    let store = |e: crate::store::StoreError| {
        SourceError::Transport(format!("the workspace index failed: {e}"))
    };
    let refreshed = index::refresh(library, root, exclude, cancel, deadline).map_err(store)?;
    tracing::debug!(?refreshed, root = %root.display(), "workspace index refreshed");
    let found = index::search(library, root, question, max).map_err(store)?;
    let retrieved_at = now_rfc3339();
    let inside = root.canonicalize().ok();
    let outside: Vec<PathBuf> = exclude
        .iter()
        .filter_map(|d| d.canonicalize().ok())
        .collect();
    let indexed = library
        .passage_files(&index::root_key(root))
        .map_err(store)?;
    let read = |path: &str| {
        indexed
            .contains_key(path)
            .then(|| read_included(inside.as_deref()?, &outside, path))
            .flatten()
    };
    let records = found
        .into_iter()
        .map(|f| {
            let mut record = passage_record(root, &f.hit, &retrieved_at);
            record.included = includes::shown(&record.snippet, &f.hit.path, read);
            SourceRecord {
                found_for: f.part,
                search_ranks: f.ranks,
                ..record
            }
        })
        .collect();
    if !refreshed.complete {
        tracing::info!(
            files = refreshed.files,
            "the workspace index covers the files read in time; the next run reads on"
        );
    }
    Ok(SourceResults {
        records,
        cached: None,
    })
}

/// The largest file an include marker is shown from ([`includes::shown`]).
const INCLUDED_BYTES: u64 = 256 * 1024;

/// The text of the file at `path` (relative to the workspace, whose canonical folder is
/// `root`) for an include marker. The caller asks only for a file the index holds (so not
/// hidden, not ignored by `.gitignore`, outside patchwise's data: a page's `--8<-- ".env"`
/// reads nothing); here, again, only a UTF-8 file without NUL bytes of at most
/// [`INCLUDED_BYTES`] that is, links resolved, inside the workspace and outside every
/// `excluded` folder (both `root` and these canonical).
fn read_included(root: &Path, excluded: &[PathBuf], path: &str) -> Option<String> {
    use std::io::Read;
    let full = root.join(path).canonicalize().ok()?;
    if !full.starts_with(root) || excluded.iter().any(|dir| full.starts_with(dir)) {
        return None;
    }
    let file = std::fs::File::open(&full).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(INCLUDED_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > INCLUDED_BYTES || bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// A workspace passage as a source: `file:PATH#Lstart-end`, titled with its lines and heading.
pub fn passage_record(
    root: &Path,
    hit: &crate::store::PassageHit,
    retrieved_at: &str,
) -> SourceRecord {
    let p = &hit.passage;
    let lines = hit.lines();
    let title = if p.heading.is_empty() {
        lines
    } else {
        format!("{lines} — {}", p.heading)
    };
    SourceRecord {
        key: format!("file:{}#L{}-{}", hit.path, p.start_line, p.end_line),
        provider: "workspace".to_owned(),
        providers: vec!["workspace".to_owned()],
        provider_id: root.join(&hit.path).to_string_lossy().into_owned(),
        title,
        venue: Some("workspace".to_owned()),
        venue_type: "workspace".to_owned(),
        snippet: p.text.clone(),
        retrieved_at: retrieved_at.to_owned(),
        ..SourceRecord::default()
    }
}

/// The passage of a long text (an earlier synthesis) that mentions most of `question`'s words.
fn best_passage(text: &str, question: &str) -> String {
    let words = terms(question);
    passages::split("synthesis.md", text)
        .into_iter()
        .max_by_key(|p| {
            let lower = p.text.to_lowercase();
            let hits = words.iter().filter(|w| lower.contains(w.as_str())).count();
            (hits, std::cmp::Reverse(p.start_line))
        })
        .map(|p| p.text)
        .unwrap_or_else(|| text.to_owned())
}

/// Earlier research in the library.
pub struct LibrarySource {
    name: String,
    timeout: Duration,
}

impl LibrarySource {
    pub fn new(settings: &SourceSettings) -> LibrarySource {
        LibrarySource {
            name: settings.name.clone(),
            timeout: settings.timeout,
        }
    }
}

impl Source for LibrarySource {
    fn name(&self) -> &str {
        &self.name
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn search<'a>(
        &'a self,
        query: &'a SourceQuery,
        context: &'a SourceContext,
    ) -> BoxFuture<'a, Result<SourceResults, SourceError>> {
        Box::pin(async move {
            let Some(library) = context.library.clone() else {
                return Err(SourceError::Unavailable(
                    "no research library is open".to_owned(),
                ));
            };
            let text = query.text.clone();
            let max = query.max_results;
            let asked = text.clone();
            let hits = tokio::task::spawn_blocking(move || library.search_sources(&asked, max * 3))
                .await
                .map_err(|e| SourceError::Transport(format!("the library search stopped: {e}")))?
                .map_err(|e| SourceError::Transport(e.to_string()))?;
            let retrieved_at = now_rfc3339();
            let mut records: Vec<SourceRecord> = Vec::new();
            for (research_id, mut r) in hits {
                if records.len() >= max {
                    break;
                }
                r.n = None;
                r.retrieved_at = retrieved_at.clone();
                if r.provider != "library" {
                    // A source found by an earlier run: the same facts, reached through the library.
                    r.providers = vec!["library".to_owned()];
                    r.provider = "library".to_owned();
                    r.provider_id = format!("{research_id}/{}", r.key);
                }
                r.credibility = Default::default();
                if r.key.starts_with("research:") {
                    r.snippet = best_passage(&r.snippet, &text);
                }
                if !records.iter().any(|x| x.key == r.key) {
                    records.push(r);
                }
            }
            Ok(SourceResults {
                records,
                cached: None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_included_file_is_read_only_from_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("docs_src")).unwrap();
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::write(root.join("docs_src/a.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("docs_src/nul.py"), "x\0").unwrap();
        let big = "y = 2\n".repeat(INCLUDED_BYTES as usize / 6 + 1);
        std::fs::write(root.join("docs_src/big.py"), big).unwrap();
        std::fs::write(root.join("data/private.py"), "secret\n").unwrap();
        std::fs::write(dir.path().join("outside.py"), "secret\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("outside.py"), root.join("docs_src/link.py"))
            .unwrap();
        let root = root.canonicalize().unwrap();
        let excluded = [root.join("data")];
        let read = |path: &str| read_included(&root, &excluded, path);
        assert_eq!(read("docs_src/a.py").as_deref(), Some("x = 1\n"));
        for refused in [
            "docs_src/../../outside.py",
            "docs_src/link.py",
            "data/private.py",
            "docs_src/nul.py",
            "docs_src/big.py",
            "docs_src",
            "docs_src/missing.py",
        ] {
            assert_eq!(read(refused), None, "{refused}");
        }
    }
}
