//! The sources that are always there: the workspace (files mentioning the question's words, a
//! ripgrep-style walk that respects `.gitignore`) and the research library (FTS5 over earlier
//! syntheses and sources). Both run on the blocking pool.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use crate::research::config::SourceSettings;
use crate::research::sources::{Found, Source, SourceContext, SourceError, SourceQuery};
use crate::store::{SourceRecord, now_rfc3339};

/// Files larger than this are skipped (generated data, lock files, minified bundles).
const MAX_FILE_BYTES: u64 = 512 * 1024;
/// At most this many files are read per search.
const MAX_FILES: usize = 20_000;

/// The workspace folder.
pub struct Workspace {
    name: String,
    root: PathBuf,
    timeout: Duration,
}

impl Workspace {
    pub fn new(settings: &SourceSettings, root: &Path) -> Workspace {
        Workspace {
            name: settings.name.clone(),
            root: root.to_path_buf(),
            timeout: settings.timeout,
        }
    }
}

impl Source for Workspace {
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
    ) -> BoxFuture<'a, Result<Found, SourceError>> {
        Box::pin(async move {
            let root = self.root.clone();
            let text = query.text.clone();
            let max = query.max_results;
            let cancel = context.cancel.clone();
            let deadline = Instant::now() + self.timeout.mul_f32(0.9);
            let records = tokio::task::spawn_blocking(move || {
                search_workspace(&root, &text, max, &cancel, deadline)
            })
            .await
            .map_err(|e| SourceError::Transport(format!("the workspace search stopped: {e}")))?;
            Ok(Found {
                records,
                cached: None,
            })
        })
    }
}

/// Files under `root` (respecting `.gitignore`, skipping hidden and large files) whose text
/// mentions the most distinct query words; the snippet is the best-matching lines.
pub fn search_workspace(
    root: &Path,
    query: &str,
    max: usize,
    cancel: &tokio_util::sync::CancellationToken,
    deadline: Instant,
) -> Vec<SourceRecord> {
    let terms: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.chars().count() > 2)
        .map(str::to_lowercase)
        .filter(|w| {
            !matches!(
                w.as_str(),
                "the" | "and" | "what" | "how" | "does" | "why" | "are" | "for" | "with"
            )
        })
        .collect();
    if terms.is_empty() {
        return Vec::new();
    }
    let retrieved_at = now_rfc3339();
    let mut hits: Vec<(usize, usize, SourceRecord)> = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .max_filesize(Some(MAX_FILE_BYTES))
        .build();
    for (seen, entry) in walker.flatten().enumerate() {
        if seen >= MAX_FILES || cancel.is_cancelled() || Instant::now() > deadline {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        if bytes.contains(&0) {
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let lower = text.to_lowercase();
        let distinct = terms.iter().filter(|t| lower.contains(t.as_str())).count();
        // At least half the words, and at least one.
        if distinct == 0 || distinct * 2 < terms.len() {
            continue;
        }
        let occurrences: usize = terms
            .iter()
            .map(|t| lower.matches(t.as_str()).count())
            .sum();
        let mut lines: Vec<(usize, usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let ll = l.to_lowercase();
                (
                    terms.iter().filter(|t| ll.contains(t.as_str())).count(),
                    i,
                    l,
                )
            })
            .filter(|(n, _, l)| *n > 0 && l.trim().len() > 3)
            .collect();
        lines.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        lines.truncate(4);
        lines.sort_by_key(|l| l.1);
        let snippet = lines
            .iter()
            .map(|(_, i, l)| {
                let l: String = l.trim().chars().take(300).collect();
                format!("line {}: {l}", i + 1)
            })
            .collect::<Vec<_>>()
            .join("\n");
        let relative = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .replace('\\', "/");
        hits.push((
            distinct,
            occurrences,
            SourceRecord {
                key: format!("file:{relative}"),
                provider: "workspace".to_owned(),
                providers: vec!["workspace".to_owned()],
                provider_id: entry.path().to_string_lossy().into_owned(),
                title: relative,
                venue: Some("workspace".to_owned()),
                venue_type: "workspace".to_owned(),
                snippet,
                retrieved_at: retrieved_at.clone(),
                ..SourceRecord::default()
            },
        ));
    }
    hits.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1.cmp(&a.1))
            .then(a.2.title.cmp(&b.2.title))
    });
    hits.into_iter().take(max).map(|(_, _, r)| r).collect()
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
    ) -> BoxFuture<'a, Result<Found, SourceError>> {
        Box::pin(async move {
            let Some(library) = context.library.clone() else {
                return Err(SourceError::Unavailable(
                    "no research library is open".to_owned(),
                ));
            };
            let text = query.text.clone();
            let max = query.max_results;
            let hits = tokio::task::spawn_blocking(move || library.search_sources(&text, max * 3))
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
                if !records.iter().any(|x| x.key == r.key) {
                    records.push(r);
                }
            }
            Ok(Found {
                records,
                cached: None,
            })
        })
    }
}
