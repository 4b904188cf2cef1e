use super::*;

fn record(id: &str, query: &str, synthesis: &str) -> ResearchRecord {
    let claims = vec![Claim {
        n: 1,
        text: "Close planets lock".to_owned(),
        sources: vec!["doi:10.1/x".to_owned()],
        independent_domains: 1,
        attributed: true,
        checks: vec![CitationCheck {
            source_key: "doi:10.1/x".to_owned(),
            overlap: 0.75,
            verdict: "partly".to_owned(),
            model_verdict: Some("partly".to_owned()),
        }],
    }];
    ResearchRecord {
        support: SupportSummary::of(&claims),
        id: id.to_owned(),
        query: query.to_owned(),
        created_at: "2026-11-22T01:00:00Z".to_owned(),
        status: "complete".to_owned(),
        synthesis: synthesis.to_owned(),
        synthesis_kind: "model".to_owned(),
        model: Some("test/m".to_owned()),
        duration_ms: 1200,
        input_tokens: 10,
        output_tokens: 20,
        sources: vec![SourceRecord {
            key: "doi:10.1/x".to_owned(),
            provider: "openalex".to_owned(),
            providers: vec!["openalex".to_owned(), "crossref".to_owned()],
            provider_id: "W1".to_owned(),
            doi: Some("10.1/x".to_owned()),
            title: "Tidal locking of exoplanets".to_owned(),
            authors: vec!["A. Author".to_owned()],
            venue_type: "journal".to_owned(),
            citations: Some(12),
            snippet: "Planets close to their stars become tidally locked.".to_owned(),
            n: Some(1),
            credibility: Credibility {
                tier: "peer-reviewed journal".to_owned(),
                base: 0.8,
                citation_factor: 1.05,
                corroboration_factor: 1.0,
                recency_factor: 1.0,
                score: 0.84,
                breakdown: "journal 0.80 × 1.05 = 0.84".to_owned(),
                ..Credibility::default()
            },
            ..SourceRecord::default()
        }],
        claims,
        outcomes: vec![SourceOutcome {
            provider: "openalex".to_owned(),
            status: "ok".to_owned(),
            count: 1,
            millis: 30,
            message: None,
        }],
        notes: vec!["a note".to_owned()],
        model_support: Some(SupportSummary {
            citations: 2,
            supported: 1,
            partly: 1,
            share: Some(0.5),
            method: "overlap".to_owned(),
            ..SupportSummary::default()
        }),
        sentences: Some(SentenceCounts {
            cited: 2,
            attributed: 1,
            dropped: 1,
            ..SentenceCounts::default()
        }),
        parts: vec![PartAnswer {
            part: "how do pipes work".to_owned(),
            answered: true,
            sources: vec![1],
            quoted: false,
        }],
    }
}

#[test]
fn saves_reads_lists_and_searches() {
    let dir = tempfile::tempdir().unwrap();
    let library = Library::open(&dir.path().join("lib.sqlite3")).unwrap();
    let first = record("0000000001aaa", "tidal locking", "They lock [1].");
    let second = record("0000000002bbb", "rust borrow checker", "Lifetimes [1].");
    library.save(&first).unwrap();
    library.save(&second).unwrap();
    assert_eq!(library.get("0000000001aaa").unwrap(), first);
    assert_eq!(
        library.get("0000000002").unwrap().query,
        "rust borrow checker"
    );
    assert!(matches!(
        library.get("0000000"),
        Err(StoreError::Ambiguous { .. })
    ));
    assert!(matches!(library.get("zzz"), Err(StoreError::NotFound(_))));
    let list = library.list(10).unwrap();
    assert_eq!(list[0].id, "0000000002bbb");
    assert_eq!(list.len(), 2);
    let found = library.search("borrow", 10).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, "0000000002bbb");
    // Source titles are indexed too, and hostile FTS syntax is just text.
    assert_eq!(library.search("exoplanets", 10).unwrap().len(), 2);
    assert!(library.search("\"AND (* NEAR", 10).unwrap().is_empty());
    assert!(library.search("   ", 10).unwrap().is_empty());
    let sources = library.search_sources("what is tidal locking", 10).unwrap();
    assert!(sources.iter().any(|(_, s)| s.provider == "library"));
    // Saving the same id again replaces the record rather than duplicating it.
    library.save(&first).unwrap();
    assert_eq!(library.count().unwrap(), 2);
    assert_eq!(library.search("tidal", 10).unwrap().len(), 2);
    let conn = library.lock();
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM library_fts WHERE research_id = ?1",
            ["0000000001aaa"],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 2);
}

#[test]
fn refuses_a_newer_schema_and_reopens_an_existing_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lib.sqlite3");
    {
        let library = Library::open(&path).unwrap();
        library.save(&record("0000000001aaa", "q", "s")).unwrap();
    }
    let library = Library::open(&path).unwrap();
    assert_eq!(library.count().unwrap(), 1);
    drop(library);
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = Library::open(&path).err().unwrap();
    assert!(
        matches!(err, StoreError::NewerSchema { found: 99, .. }),
        "{err}"
    );
}

#[test]
fn ids_sort_by_time_and_dates_round_trip() {
    let a = id_from(1_700_000_000_000, 0x7fff);
    let b = id_from(1_700_000_000_001, 0);
    assert_eq!(a.len(), 12);
    assert!(a < b);
    assert_ne!(new_id(), "");
    assert!(now_rfc3339().ends_with('Z'));
}

#[test]
fn cache_round_trip() {
    let library = Library::open(&tempfile::tempdir().unwrap().keep().join("c.db")).unwrap();
    assert!(library.cache_get("k").unwrap().is_none());
    let cached = CachedResponse {
        body: "b".to_owned(),
        etag: Some("\"e\"".to_owned()),
        last_modified: None,
        fetched_at: "2026-01-01T00:00:00Z".to_owned(),
    };
    library.cache_put("k", &cached).unwrap();
    library.cache_put("k", &cached).unwrap();
    assert_eq!(library.cache_get("k").unwrap(), Some(cached));
}

#[test]
fn a_first_version_library_is_migrated_and_keeps_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lib.sqlite3");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute_batch(
            "INSERT INTO research VALUES ('0000000001aaa', 'q', '2026-01-01T00:00:00Z', 'complete',
                 's [1]', 'model', NULL, 1, 2, 3, '[]', '[]');
             INSERT INTO claim VALUES ('0000000001aaa', 1, 'an old claim', 1);",
        )
        .unwrap();
    }
    let library = Library::open(&path).unwrap();
    let old = library.get("0000000001aaa").unwrap();
    assert_eq!(old.claims[0].text, "an old claim");
    assert!(!old.claims[0].attributed);
    assert!(old.claims[0].checks.is_empty());
    assert_eq!(old.support.share, None);
    let version: i64 = library
        .lock()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let saved = record("0000000002bbb", "q2", "s2");
    library.save(&saved).unwrap();
    let back = library.get("0000000002bbb").unwrap();
    assert_eq!(back, saved);
    assert_eq!(back.support.citations, 1);
    assert_eq!(back.support.partly, 1);
    assert_eq!(back.support.method, "model");
}

#[test]
fn passages_are_indexed_per_root_replaced_and_forgotten() {
    use passages::{FileStamp, IndexedFile};
    let library = Library::open(Path::new(":memory:")).unwrap();
    let stamp = FileStamp {
        mtime_ns: 1,
        size: 10,
    };
    let file = |path: &str, text: &str| IndexedFile {
        path: path.to_owned(),
        stamp,
        passages: vec![Passage {
            heading: "Heading".to_owned(),
            start_line: 1,
            end_line: 3,
            text: text.to_owned(),
        }],
    };
    library
        .update_passages(
            "/a",
            &[
                file("docs/cache.md", "The cache evicts entries when full."),
                file("docs/retry.md", "Requests are retried with backoff."),
            ],
            &[],
        )
        .unwrap();
    library
        .update_passages("/b", &[file("other.md", "The cache of b.")], &[])
        .unwrap();
    let hits = library
        .search_passages("/a", "\"evicting\" OR \"caches\"", 10)
        .unwrap();
    assert_eq!(hits.len(), 1, "porter stems, and only the root asked for");
    assert_eq!(hits[0].path, "docs/cache.md");
    assert_eq!(hits[0].passage.heading, "Heading");
    assert_eq!(library.passage_files("/a").unwrap().len(), 2);
    // Replacing a file replaces its passages; removing one forgets them.
    library
        .update_passages(
            "/a",
            &[file("docs/cache.md", "Now about sharding only.")],
            &["docs/retry.md".to_owned()],
        )
        .unwrap();
    assert!(
        library
            .search_passages("/a", "\"cache\" OR \"retried\"", 10)
            .unwrap()
            .iter()
            .all(|h| h.path == "docs/cache.md" && h.passage.text.contains("sharding"))
    );
    assert_eq!(
        library
            .search_passages("/a", "\"sharding\"", 10)
            .unwrap()
            .len(),
        1
    );
    let conn = library.lock();
    let count = |table: &str| -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count("passage_fts_1"), 1, "no orphaned FTS rows");
    assert_eq!(count("passage_fts_2"), 1, "b's passages in b's own table");
}

/// A root's passages are ranked by the words of that root's files only: `bm25()` weighs a word
/// by the rows of its table that hold it, and with one table for every root the passages a
/// question found in one project changed once another was indexed.
#[test]
fn a_roots_ranking_does_not_depend_on_other_roots() {
    use passages::{FileStamp, IndexedFile};
    let library = Library::open(Path::new(":memory:")).unwrap();
    let file = |path: &str, text: &str| IndexedFile {
        path: path.to_owned(),
        stamp: FileStamp {
            mtime_ns: 1,
            size: 1,
        },
        passages: vec![Passage {
            heading: String::new(),
            start_line: 1,
            end_line: 1,
            text: text.to_owned(),
        }],
    };
    library
        .update_passages(
            "/a",
            &[
                file("cache.md", "The cache evicts old entries."),
                file("retry.md", "Retries back off; the cache is not retried."),
                file("log.md", "The log is flushed."),
            ],
            &[],
        )
        .unwrap();
    let ranks = |library: &Library| -> Vec<(String, f64)> {
        library
            .search_passages("/a", "\"cache\" OR \"retri\"*", 10)
            .unwrap()
            .into_iter()
            .map(|h| (h.path, h.rank))
            .collect()
    };
    let alone = ranks(&library);
    assert_eq!(alone.len(), 2, "{alone:?}");
    // Another project where "cache" is in every file and "retried" in none.
    let others: Vec<IndexedFile> = (0..20)
        .map(|i| file(&format!("c{i}.md"), "The cache, the cache, the cache."))
        .collect();
    library.update_passages("/b", &others, &[]).unwrap();
    assert_eq!(ranks(&library), alone);
    assert!(
        library
            .search_passages("/never", "\"cache\"", 10)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_library_indexed_before_a_reader_changed_reads_its_pages_again() {
    // As after the newest migration that changes how passages are cut (AsciiDoc, Org and
    // Markdown read as they render): those pages are read again, other files are not.
    use passages::{FileStamp, IndexedFile};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lib.sqlite3");
    let stamp = FileStamp {
        mtime_ns: 7,
        size: 10,
    };
    let file = |path: &str, text: &str| IndexedFile {
        path: path.to_owned(),
        stamp,
        passages: vec![Passage {
            heading: String::new(),
            start_line: 1,
            end_line: 2,
            text: text.to_owned(),
        }],
    };
    {
        let library = Library::open(&path).unwrap();
        let files = [
            file("docs/quickstart.adoc", "= Quickstart"),
            file("notes/setup.org", "* Setup"),
            file("docs/guide.md", "!!! note"),
            file("src/lib.rs", "fn main() {}"),
        ];
        library.update_passages("/w", &files, &[]).unwrap();
        library
            .lock()
            .pragma_update(None, "user_version", SCHEMA_VERSION - 1)
            .unwrap();
    }
    let library = Library::open(&path).unwrap();
    let known = library.passage_files("/w").unwrap();
    for page in ["docs/quickstart.adoc", "notes/setup.org", "docs/guide.md"] {
        assert_ne!(known[page], stamp, "{page} read again as if changed");
    }
    assert_eq!(known["src/lib.rs"], stamp, "not read again");
    // Its passages are still found until then.
    assert_eq!(
        library
            .search_passages("/w", "\"quickstart\"", 5)
            .unwrap()
            .len(),
        1
    );
}
