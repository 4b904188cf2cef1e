//! The workspace as passages: an incremental FTS5 index of the workspace's text files (the walk
//! respects `.gitignore` and skips hidden, binary and large files), refreshed before every
//! search by comparing each file's mtime and size with what was indexed, and searched once per
//! part of the question so that every part finds passages of its own.
//!
//! patchwise's own files are never indexed, even inside the workspace: the research library's
//! folder (its database and `reports/`), the data directory, and any file that is a research
//! report (by its first lines, wherever it was copied) — otherwise a run would cite the report of
//! an earlier run as evidence.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::research::passages::{self, question_parts, terms};
use crate::store::passages::{FileStamp, IndexedFile};
use crate::store::{Library, PassageHit, StoreError, fts_query};

/// Files larger than this are skipped (generated data, lock files, minified bundles).
pub const MAX_FILE_BYTES: u64 = 512 * 1024;
/// At most this many files are looked at per refresh.
pub const MAX_FILES: usize = 20_000;
/// Files written to the index per transaction, so an interrupted first index keeps its work.
const BATCH: usize = 200;

/// What a refresh did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refresh {
    /// Files seen by the walk.
    pub files: usize,
    /// Files read again because they are new or changed.
    pub read: usize,
    /// Files forgotten because they are gone.
    pub removed: usize,
    /// `false` when the walk stopped early (file limit, deadline, cancellation): nothing is
    /// forgotten then, and the next run goes on.
    pub complete: bool,
}

/// The key a root is indexed under.
pub fn root_key(root: &Path) -> String {
    root.to_string_lossy().into_owned()
}

/// Brings the index of `root` up to date. `exclude` lists folders never indexed (patchwise's
/// data); they are compared after resolving symbolic links.
pub fn refresh(
    library: &Library,
    root: &Path,
    exclude: &[PathBuf],
    cancel: &CancellationToken,
    deadline: Instant,
) -> Result<Refresh, StoreError> {
    let key = root_key(root);
    let known = library.passage_files(&key)?;
    let exclude: Vec<PathBuf> = exclude
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let canonical_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let skip = exclude.clone();
    let walker = ignore::WalkBuilder::new(&canonical_root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .max_filesize(Some(MAX_FILE_BYTES))
        .filter_entry(move |entry| !skip.iter().any(|x| entry.path().starts_with(x)))
        .build();
    let mut done = Refresh {
        complete: true,
        ..Refresh::default()
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut batch: Vec<IndexedFile> = Vec::new();
    for entry in walker.flatten() {
        if done.files >= MAX_FILES || cancel.is_cancelled() || Instant::now() > deadline {
            done.complete = false;
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        done.files += 1;
        let relative = entry
            .path()
            .strip_prefix(&canonical_root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .replace('\\', "/");
        let stamp = FileStamp {
            mtime_ns: meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64),
            size: meta.len().min(i64::MAX as u64) as i64,
        };
        seen.insert(relative.clone());
        if known.get(&relative) == Some(&stamp) {
            continue;
        }
        done.read += 1;
        // Unreadable, binary or non-UTF-8 files are remembered with no passages, so they are
        // not read again until they change.
        let passages = std::fs::read(entry.path())
            .ok()
            .filter(|bytes| !bytes.contains(&0))
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .filter(|text| !is_research_report(text))
            .map(|text| passages::split(&relative, &text))
            .unwrap_or_default();
        batch.push(IndexedFile {
            path: relative,
            stamp,
            passages,
        });
        if batch.len() >= BATCH {
            library.update_passages(&key, &batch, &[])?;
            batch.clear();
        }
    }
    let removed: Vec<String> = if done.complete {
        known
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    done.removed = removed.len();
    if !batch.is_empty() || !removed.is_empty() {
        library.update_passages(&key, &batch, &removed)?;
    }
    Ok(done)
}

/// Whether `text` is a research report patchwise wrote (`# question`, then
/// `*Research \`id\` · …`).
pub fn is_research_report(text: &str) -> bool {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    lines.next().is_some_and(|l| l.starts_with("# "))
        && lines
            .next()
            .is_some_and(|l| l.starts_with("*Research `") && l.contains("` · "))
}

/// The FTS5 query matching any of `words` (the words of [`terms`], so no stop word is left
/// for [`fts_query`] to drop; each is quoted, so nothing in them is syntax).
fn any_of(words: &[String]) -> Option<String> {
    fts_query(&words.join(" "), true)
}

/// A passage found for a question, with the part of the question it was found for.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundPassage {
    pub hit: PassageHit,
    /// Index into [`question_parts`] of the question; `None` when found for the whole question.
    pub part: Option<usize>,
    /// Its place (0 the best) in the search of each part that ranked it: (part, place).
    pub ranks: Vec<(usize, usize)>,
}

/// The best passages under `root` for `question`, at most `max`: the best of each part of the
/// question in turn (then of the whole question), then the second best of each, and so on.
pub fn search(
    library: &Library,
    root: &Path,
    question: &str,
    max: usize,
) -> Result<Vec<FoundPassage>, StoreError> {
    let key = root_key(root);
    let parts = question_parts(question);
    let mut queries: Vec<(Option<usize>, Vec<String>, String)> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let words = terms(part);
        if let Some(q) = any_of(&words) {
            queries.push(((parts.len() > 1).then_some(i), words, q));
        }
    }
    let words = terms(question);
    if parts.len() > 1
        && let Some(q) = any_of(&words)
    {
        queries.push((None, words, q));
    }
    let mut rankings: Vec<(Option<usize>, std::vec::IntoIter<PassageHit>)> = Vec::new();
    // Where each passage stands in each part's own ranking: a passage found first for one
    // part may be another part's best too.
    let mut ranks: std::collections::HashMap<i64, Vec<(usize, usize)>> =
        std::collections::HashMap::new();
    for (part, words, q) in queries {
        let hits = coordinate(
            library.search_passages(&key, &q, max.saturating_mul(3).max(10))?,
            &words,
        );
        tracing::debug!(
            ?part,
            hits = ?hits.iter().take(12).map(PassageHit::lines).collect::<Vec<_>>(),
            "a query's hits"
        );
        if let Some(p) = part {
            for (place, hit) in hits.iter().enumerate() {
                ranks.entry(hit.id).or_default().push((p, place));
            }
        }
        rankings.push((part, hits.into_iter()));
    }
    let mut out: Vec<FoundPassage> = Vec::new();
    let mut taken: HashSet<i64> = HashSet::new();
    while out.len() < max {
        let mut any = false;
        for (part, ranking) in &mut rankings {
            if out.len() >= max {
                break;
            }
            for hit in ranking.by_ref() {
                if taken.insert(hit.id) {
                    let ranks = ranks.get(&hit.id).cloned().unwrap_or_default();
                    out.push(FoundPassage {
                        hit,
                        part: *part,
                        ranks,
                    });
                    any = true;
                    break;
                }
            }
        }
        if !any {
            break;
        }
    }
    Ok(out)
}

/// What a navigation passage's score is multiplied by ([`passages::is_navigation`]): it ranks
/// below any passage of content that holds a tenth of its score.
const NAVIGATION: f64 = 0.1;

/// Re-ranks `hits` (best first by `bm25()`, which adds up per-word scores, so one rare word can
/// outweigh all the others) by the share of the question's words each passage holds: the
/// score is `bm25 × matched / words`, so a passage about every word of the part comes first.
fn coordinate(hits: Vec<PassageHit>, words: &[String]) -> Vec<PassageHit> {
    let wanted: Vec<String> = words.iter().map(|w| passages::stem(w)).collect();
    let mut scored: Vec<(f64, PassageHit)> = hits
        .into_iter()
        .map(|hit| {
            let have: HashSet<String> = passages::content_stems(&format!(
                "{} {} {}",
                hit.path, hit.passage.heading, hit.passage.text
            ))
            .into_iter()
            .collect();
            let matched = wanted.iter().filter(|w| have.contains(*w)).count().max(1);
            // Navigation holds the words of every section it names and says nothing.
            let navigation = if passages::is_navigation(&hit.passage.text) {
                NAVIGATION
            } else {
                1.0
            };
            (
                hit.rank * navigation * matched as f64 / wanted.len().max(1) as f64,
                hit,
            )
        })
        .collect();
    // bm25 is negative: lower is better.
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    scored.into_iter().map(|(_, hit)| hit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_recognised_by_their_first_lines() {
        assert!(is_research_report(
            "# how does x work\n\n*Research `01abcdefghjk` · 2026-11-22T01:00:00Z · synthesis by m · 1.0 s*\n"
        ));
        assert!(!is_research_report("# Notes\n\n*Research* is fun · yes\n"));
    }

    #[test]
    fn fts_queries_quote_every_word() {
        // A quote inside a word cannot end the quoting: the word is split at it.
        assert_eq!(
            any_of(&["cache".to_owned(), "ev\"il".to_owned()]).as_deref(),
            Some("\"cache\" OR \"ev\" OR \"il\"")
        );
        assert_eq!(
            any_of(&terms("how does the cache evict entries")).as_deref(),
            Some("\"cache\" OR \"evict\" OR \"entries\"")
        );
        assert_eq!(any_of(&[]), None);
    }
}
