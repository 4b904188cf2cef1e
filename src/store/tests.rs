use super::*;

fn record(id: &str, query: &str, synthesis: &str) -> ResearchRecord {
    ResearchRecord {
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
        claims: vec![Claim {
            n: 1,
            text: "Close planets lock".to_owned(),
            sources: vec!["doi:10.1/x".to_owned()],
            independent_domains: 1,
        }],
        outcomes: vec![SourceOutcome {
            provider: "openalex".to_owned(),
            status: "ok".to_owned(),
            count: 1,
            millis: 30,
            message: None,
        }],
        notes: vec!["a note".to_owned()],
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
    assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339_from_unix(1_763_775_725), "2025-11-22T01:42:05Z");
    for days in [-1000, 0, 59, 60, 11_000, 20_000, 200_000] {
        let (y, m, d) = civil_from_days(days);
        assert_eq!(days_from_civil(y, m, d), days);
    }
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
