//! The research library: one SQLite database (rusqlite with the bundled library, WAL) holding
//! every research run — query, synthesis, sources with their credibility factors, claims and
//! their support — with an FTS5 index over syntheses and source titles and snippets, plus a
//! cache of raw provider answers that doubles as offline mode.
//!
//! A run is saved in one transaction: it is there completely or not at all, and a process
//! killed mid-save loses nothing saved before (SQLite's journal guarantees it; a test kills the
//! real binary inside the transaction). The schema is versioned with `PRAGMA user_version` and
//! migrated forward on open; a database from a newer patchwise is refused, never altered.
//!
//! Pending proposals live in the same database ([`proposals`]), so they survive a restart.
//!
//! This module never sees LSP types and never interprets research data: it stores and returns
//! [`records`] as they are.

pub mod passages;
pub mod proposals;
pub mod records;
pub mod sessions;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, Transaction, params};

pub use passages::{Passage, PassageHit};
pub use records::{
    CitationCheck, Claim, Credibility, PartAnswer, ResearchRecord, ResearchSummary, SentenceCounts,
    SourceOutcome, SourceRecord, SupportSummary,
};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The test hook: when set to a number of milliseconds, [`Library::save`] prints
/// `patchwise: pausing in save` to stderr and sleeps that long inside the transaction, so a test
/// can kill the process mid-save.
pub const PAUSE_IN_SAVE_ENV: &str = "PATCHWISE_TEST_PAUSE_IN_SAVE";

/// Why the library could not do something.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the research library {}: {message}", path.display())]
    Open { path: PathBuf, message: String },
    #[error(
        "the research library {} has schema version {found}, newer than this patchwise (expected at most {SCHEMA_VERSION}); upgrade patchwise or use another library",
        path.display()
    )]
    NewerSchema { path: PathBuf, found: i64 },
    #[error("research library: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("research library: stored {what} is not valid JSON: {message}")]
    Corrupt { what: String, message: String },
    #[error("no research has the id {0:?}; `patchwise research list` shows the ids")]
    NotFound(String),
    #[error(
        "the id prefix {prefix:?} matches several research records ({first}, {second}, …); give more characters"
    )]
    Ambiguous {
        prefix: String,
        first: String,
        second: String,
    },
}

/// A cached raw answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedResponse {
    pub body: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// RFC 3339.
    pub fetched_at: String,
}

/// The research library. Safe to share between threads; each call holds the connection briefly.
pub struct Library {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl Library {
    /// Opens (creating if needed) the database at `path` and migrates it to [`SCHEMA_VERSION`].
    pub fn open(path: &Path) -> Result<Library, StoreError> {
        let open_err = |message: String| StoreError::Open {
            path: path.to_path_buf(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_err(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| open_err(e.to_string()))?;
        // WAL: readers (the editor listing the library) never block a saving run.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(|e| open_err(e.to_string()))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::debug!(mode, "journal mode is not WAL");
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(|e| open_err(e.to_string()))?;
        let library = Library {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
        };
        library.migrate()?;
        Ok(library)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where Markdown reports are written: `reports/` next to the database.
    pub fn report_dir(&self) -> PathBuf {
        self.path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
            .join("reports")
    }

    /// The Markdown report of a record.
    pub fn report_path(&self, id: &str) -> PathBuf {
        self.report_dir().join(format!("{id}.md"))
    }

    /// Saves a whole run in one transaction (replacing a record with the same id).
    pub fn save(&self, record: &ResearchRecord) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        write_record(&tx, record)?;
        if let Some(ms) = std::env::var(PAUSE_IN_SAVE_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            eprintln!("patchwise: pausing in save");
            std::thread::sleep(Duration::from_millis(ms));
        }
        tx.commit()?;
        Ok(())
    }

    /// The newest records first.
    pub fn list(&self, limit: usize) -> Result<Vec<ResearchSummary>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT id, query, created_at FROM research ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([clamp_limit(limit)], summary_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many records the library holds.
    pub fn count(&self) -> Result<u64, StoreError> {
        let conn = self.lock();
        let n: i64 = conn.query_row("SELECT count(*) FROM research", [], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    /// The record with this id, or the only one whose id starts with it.
    pub fn get(&self, id: &str) -> Result<ResearchRecord, StoreError> {
        let id = self.resolve_id(id)?;
        let conn = self.lock();
        read_record(&conn, &id)
    }

    /// Records whose query, synthesis or sources match every word of `text`, best first.
    pub fn search(&self, text: &str, limit: usize) -> Result<Vec<ResearchSummary>, StoreError> {
        let Some(query) = fts_query(text, false) else {
            return Ok(Vec::new());
        };
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT r.id, r.query, r.created_at FROM research r JOIN (
                 SELECT research_id, min(rank) AS best FROM library_fts
                 WHERE library_fts MATCH ?1 GROUP BY research_id
             ) m ON m.research_id = r.id
             ORDER BY m.best, r.id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![query, clamp_limit(limit)], summary_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Earlier syntheses and sources matching any word of `text`, best first, as sources for a
    /// new run: each synthesis becomes a `library` source; stored sources come back as they were.
    pub fn search_sources(
        &self,
        text: &str,
        limit: usize,
    ) -> Result<Vec<(String, SourceRecord)>, StoreError> {
        let Some(query) = fts_query(text, true) else {
            return Ok(Vec::new());
        };
        let hits: Vec<(String, String)> = {
            let conn = self.lock();
            let mut stmt = conn.prepare_cached(
                "SELECT research_id, source_key FROM library_fts WHERE library_fts MATCH ?1
                 ORDER BY rank LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![query, clamp_limit(limit)], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?;
            rows.collect::<Result<_, _>>()?
        };
        let conn = self.lock();
        let mut out = Vec::new();
        for (research_id, key) in hits {
            if key.is_empty() {
                let row: Option<(String, String, String)> = conn
                    .query_row(
                        "SELECT query, synthesis, created_at FROM research WHERE id = ?1",
                        [&research_id],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )
                    .optional()?;
                if let Some((query, synthesis, created_at)) = row {
                    out.push((
                        research_id.clone(),
                        SourceRecord {
                            key: format!("research:{research_id}"),
                            provider: "library".to_owned(),
                            providers: vec!["library".to_owned()],
                            provider_id: research_id.clone(),
                            title: format!("Earlier research: {query}"),
                            date: Some(created_at.chars().take(10).collect()),
                            venue: Some("research library".to_owned()),
                            venue_type: "library".to_owned(),
                            snippet: synthesis,
                            ..SourceRecord::default()
                        },
                    ));
                }
            } else if let Some(source) = read_source(&conn, &research_id, &key)? {
                out.push((research_id, source));
            }
        }
        Ok(out)
    }

    /// Resolves a full id or a unique prefix.
    pub fn resolve_id(&self, id: &str) -> Result<String, StoreError> {
        let id = id.trim().to_ascii_lowercase();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(StoreError::NotFound(id));
        }
        let conn = self.lock();
        let exact: Option<String> = conn
            .query_row("SELECT id FROM research WHERE id = ?1", [&id], |r| r.get(0))
            .optional()?;
        if let Some(found) = exact {
            return Ok(found);
        }
        let mut stmt = conn.prepare_cached(
            "SELECT id FROM research WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 2",
        )?;
        let upper = format!("{id}\u{7f}");
        let ids: Vec<String> = stmt
            .query_map(params![id, upper], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        match ids.as_slice() {
            [] => Err(StoreError::NotFound(id)),
            [one] => Ok(one.clone()),
            [first, second, ..] => Err(StoreError::Ambiguous {
                prefix: id.clone(),
                first: first.clone(),
                second: second.clone(),
            }),
        }
    }

    /// The cached answer for `key` (a provider and its normalised request).
    pub fn cache_get(&self, key: &str) -> Result<Option<CachedResponse>, StoreError> {
        let conn = self.lock();
        Ok(conn
            .query_row(
                "SELECT body, etag, last_modified, fetched_at FROM http_cache WHERE key = ?1",
                [key],
                |r| {
                    Ok(CachedResponse {
                        body: r.get(0)?,
                        etag: r.get(1)?,
                        last_modified: r.get(2)?,
                        fetched_at: r.get(3)?,
                    })
                },
            )
            .optional()?)
    }

    /// Stores (replaces) the cached answer for `key`.
    pub fn cache_put(&self, key: &str, response: &CachedResponse) -> Result<(), StoreError> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO http_cache(key, body, etag, last_modified, fetched_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(key) DO UPDATE SET body = excluded.body, etag = excluded.etag,
               last_modified = excluded.last_modified, fetched_at = excluded.fetched_at",
            params![
                key,
                response.body,
                response.etag,
                response.last_modified,
                response.fetched_at
            ],
        )?;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found: version,
            });
        }
        for (i, step) in MIGRATIONS.iter().enumerate() {
            let target = i as i64 + 1;
            if version >= target {
                continue;
            }
            let tx = conn.transaction()?;
            tx.execute_batch(step)?;
            tx.pragma_update(None, "user_version", target)?;
            tx.commit()?;
            tracing::info!(version = target, path = %self.path.display(), "library migrated");
        }
        Ok(())
    }
}

/// Schema steps; step `i` brings the database to version `i + 1`. Never edit a released step:
/// add one.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE research (
    id TEXT PRIMARY KEY,
    query TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    synthesis TEXT NOT NULL,
    synthesis_kind TEXT NOT NULL,
    model TEXT,
    duration_ms INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    outcomes TEXT NOT NULL,
    notes TEXT NOT NULL
);
CREATE TABLE source (
    research_id TEXT NOT NULL REFERENCES research(id) ON DELETE CASCADE,
    source_key TEXT NOT NULL,
    position INTEGER NOT NULL,
    n INTEGER,
    provider TEXT NOT NULL,
    providers TEXT NOT NULL,
    provider_id TEXT NOT NULL,
    doi TEXT,
    arxiv_id TEXT,
    url TEXT,
    title TEXT NOT NULL,
    authors TEXT NOT NULL,
    date TEXT,
    venue TEXT,
    venue_type TEXT NOT NULL,
    citations INTEGER,
    retracted INTEGER NOT NULL,
    snippet TEXT NOT NULL,
    retrieved_at TEXT NOT NULL,
    domain TEXT,
    tier TEXT NOT NULL,
    base REAL NOT NULL,
    citation_factor REAL NOT NULL,
    independent_domains INTEGER NOT NULL,
    corroboration_factor REAL NOT NULL,
    recency_factor REAL NOT NULL,
    cap REAL,
    cap_reason TEXT,
    score REAL NOT NULL,
    breakdown TEXT NOT NULL,
    PRIMARY KEY (research_id, source_key)
);
CREATE TABLE claim (
    research_id TEXT NOT NULL REFERENCES research(id) ON DELETE CASCADE,
    n INTEGER NOT NULL,
    text TEXT NOT NULL,
    independent_domains INTEGER NOT NULL,
    PRIMARY KEY (research_id, n)
);
CREATE TABLE claim_support (
    research_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    source_key TEXT NOT NULL,
    PRIMARY KEY (research_id, n, source_key),
    FOREIGN KEY (research_id, n) REFERENCES claim(research_id, n) ON DELETE CASCADE
);
CREATE VIRTUAL TABLE library_fts USING fts5(
    research_id UNINDEXED,
    source_key UNINDEXED,
    title,
    body,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE http_cache (
    key TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    etag TEXT,
    last_modified TEXT,
    fetched_at TEXT NOT NULL
);
"#,
    // 2: claims attributed to a passage, each citation's support check, and the workspace
    // passage index (files with the mtime/size they were read at, their passages, and FTS5 over
    // path, heading and text; the FTS rowid is the passage id).
    r#"
ALTER TABLE claim ADD COLUMN attributed INTEGER NOT NULL DEFAULT 0;
CREATE TABLE claim_check (
    research_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    source_key TEXT NOT NULL,
    overlap REAL NOT NULL,
    verdict TEXT NOT NULL,
    model_verdict TEXT,
    PRIMARY KEY (research_id, n, source_key),
    FOREIGN KEY (research_id, n) REFERENCES claim(research_id, n) ON DELETE CASCADE
);
CREATE TABLE passage_file (
    id INTEGER PRIMARY KEY,
    root TEXT NOT NULL,
    path TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    UNIQUE (root, path)
);
CREATE TABLE passage (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES passage_file(id) ON DELETE CASCADE,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL
);
CREATE INDEX passage_by_file ON passage(file_id);
CREATE VIRTUAL TABLE passage_fts USING fts5(
    path,
    heading,
    body,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"#,
    // 3: pending proposals (their files and hunks as JSON: `proposals::ProposalFileRecord`).
    r#"
CREATE TABLE proposal (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    instruction TEXT NOT NULL,
    model TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    matched_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    files TEXT NOT NULL
);
"#,
    // 4: the support of the model's own citations as it wrote them, before the check repaired
    // them (`SupportSummary` as JSON; NULL when the model cited nothing or no model answered).
    r#"
ALTER TABLE research ADD COLUMN model_support TEXT;
"#,
    // 5: what became of the model's sentences and the parts of the question (`Answered` as
    // JSON: `sentences`, `parts`; NULL for records saved before).
    r#"
ALTER TABLE research ADD COLUMN answered TEXT;
"#,
    // 6: agent sessions (`patchwise acp`): the folder, the mode, and the conversation as JSON
    // (`sessions::SessionTurn`s), so `session/load` can show it again after a restart.
    r#"
CREATE TABLE agent_session (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    mode TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    turns TEXT NOT NULL
);
"#,
    // 7: an agent session's "always write changes in this session" (0 or 1), kept so a loaded
    // session does not ask again.
    r#"
ALTER TABLE agent_session ADD COLUMN always_allow INTEGER NOT NULL DEFAULT 0;
"#,
    // 8: an agent session's `model` option (`roles`, or the `provider/model` chosen for every
    // role), kept so a loaded session answers with the model it was left with.
    r#"
ALTER TABLE agent_session ADD COLUMN model TEXT NOT NULL DEFAULT 'roles';
"#,
    // 9: one FTS5 table per workspace root (`passage_fts_<id>`, made when the root is first
    // indexed, `store::passages`): `bm25()` counts the words of every row of its table, and with
    // one table for all roots a project's passages were ranked with the words of the others
    // (over MkDocs' docs a question found three other passages once Ruff's and attrs' docs had
    // been indexed). The index is a cache of the files: it is read again on the next search.
    r#"
DROP TABLE passage_fts;
DELETE FROM passage;
DELETE FROM passage_file;
CREATE TABLE passage_root (
    id INTEGER PRIMARY KEY,
    root TEXT NOT NULL UNIQUE
);
"#,
    // 10: Markdown's setext headings ("NAME" over "----", as man pages in Markdown write every
    // section) head their passages (`research::passages::split`): every file is read again on
    // the next search, as if it had changed, so its passages are cut the new way.
    r#"
UPDATE passage_file SET mtime_ns = -1;
"#,
    // 11: a passage no longer ends on a lead-in whose block opens the next one
    // (`research::passages::split`): every file is read again on the next search.
    r#"
UPDATE passage_file SET mtime_ns = -1;
"#,
    // 12: reStructuredText is read as the Markdown it renders as (`research::rst`): its pages
    // (`.rst`, and `.txt` pages that show it) are read again on the next search.
    r#"
UPDATE passage_file SET mtime_ns = -1
    WHERE path LIKE '%.rst' OR path LIKE '%.rest' OR path LIKE '%.txt';
"#,
    // 13: AsciiDoc and Org are read as the Markdown they render as (`research::adoc`,
    // `research::org`), and Markdown as its site renders it (front matter, admonitions, content
    // tabs, shortcodes: `research::passages`): those pages are read again on the next search.
    r#"
UPDATE passage_file SET mtime_ns = -1
    WHERE path LIKE '%.adoc' OR path LIKE '%.asciidoc' OR path LIKE '%.org'
       OR path LIKE '%.md' OR path LIKE '%.markdown' OR path LIKE '%.mdx';
"#,
];

/// The `answered` column: what became of the model's sentences and the parts of the question.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Answered {
    #[serde(default)]
    sentences: Option<SentenceCounts>,
    #[serde(default)]
    parts: Vec<PartAnswer>,
}

fn write_record(tx: &Transaction<'_>, r: &ResearchRecord) -> Result<(), StoreError> {
    // `research_id` is not indexed in the FTS table (a scan), so only look when replacing.
    let exists = tx
        .query_row("SELECT 1 FROM research WHERE id = ?1", [&r.id], |_| Ok(()))
        .optional()?
        .is_some();
    if exists {
        tx.execute("DELETE FROM library_fts WHERE research_id = ?1", [&r.id])?;
        tx.execute("DELETE FROM research WHERE id = ?1", [&r.id])?;
    }
    tx.execute(
        "INSERT INTO research(id, query, created_at, status, synthesis, synthesis_kind, model,
             duration_ms, input_tokens, output_tokens, outcomes, notes, model_support, answered)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            r.id,
            r.query,
            r.created_at,
            r.status,
            r.synthesis,
            r.synthesis_kind,
            r.model,
            r.duration_ms as i64,
            r.input_tokens as i64,
            r.output_tokens as i64,
            to_json(&r.outcomes),
            to_json(&r.notes),
            r.model_support.as_ref().map(to_json),
            to_json(&Answered {
                sentences: r.sentences.clone(),
                parts: r.parts.clone(),
            }),
        ],
    )?;
    tx.execute(
        "INSERT INTO library_fts(research_id, source_key, title, body) VALUES (?1, '', ?2, ?3)",
        params![r.id, r.query, r.synthesis],
    )?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT OR REPLACE INTO source(research_id, source_key, position, n, provider, providers,
                 provider_id, doi, arxiv_id, url, title, authors, date, venue, venue_type,
                 citations, retracted, snippet, retrieved_at, domain, tier, base, citation_factor,
                 independent_domains, corroboration_factor, recency_factor, cap, cap_reason,
                 score, breakdown)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)",
        )?;
        let mut fts = tx.prepare_cached(
            "INSERT INTO library_fts(research_id, source_key, title, body) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for (position, s) in r.sources.iter().enumerate() {
            let c = &s.credibility;
            insert.execute(params![
                r.id,
                s.key,
                position as i64,
                s.n,
                s.provider,
                to_json(&s.providers),
                s.provider_id,
                s.doi,
                s.arxiv_id,
                s.url,
                s.title,
                to_json(&s.authors),
                s.date,
                s.venue,
                s.venue_type,
                s.citations.map(|n| n.min(i64::MAX as u64) as i64),
                s.retracted,
                s.snippet,
                s.retrieved_at,
                c.domain,
                c.tier,
                c.base,
                c.citation_factor,
                c.independent_domains,
                c.corroboration_factor,
                c.recency_factor,
                c.cap,
                c.cap_reason,
                c.score,
                c.breakdown,
            ])?;
            // Sources that are themselves earlier research are not indexed again.
            if s.venue_type != "library" {
                fts.execute(params![r.id, s.key, s.title, s.snippet])?;
            }
        }
    }
    let mut claim = tx.prepare_cached(
        "INSERT OR REPLACE INTO claim(research_id, n, text, independent_domains, attributed)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut support = tx.prepare_cached(
        "INSERT OR IGNORE INTO claim_support(research_id, n, source_key) VALUES (?1, ?2, ?3)",
    )?;
    let mut check = tx.prepare_cached(
        "INSERT OR REPLACE INTO claim_check(research_id, n, source_key, overlap, verdict, model_verdict)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for c in &r.claims {
        claim.execute(params![
            r.id,
            c.n,
            c.text,
            c.independent_domains,
            c.attributed
        ])?;
        for key in &c.sources {
            support.execute(params![r.id, c.n, key])?;
        }
        for k in &c.checks {
            check.execute(params![
                r.id,
                c.n,
                k.source_key,
                k.overlap,
                k.verdict,
                k.model_verdict
            ])?;
        }
    }
    Ok(())
}

fn read_record(conn: &Connection, id: &str) -> Result<ResearchRecord, StoreError> {
    type Head = (
        String,
        String,
        String,
        String,
        String,
        Option<String>,
        i64,
        i64,
        i64,
        String,
        String,
        Option<String>,
        Option<String>,
    );
    let head: Option<Head> = conn
        .query_row(
            "SELECT query, created_at, status, synthesis, synthesis_kind, model, duration_ms,
                 input_tokens, output_tokens, outcomes, notes, model_support, answered FROM research
                 WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                    r.get(12)?,
                ))
            },
        )
        .optional()?;
    let Some((
        query,
        created_at,
        status,
        synthesis,
        kind,
        model,
        ms,
        tin,
        tout,
        outcomes,
        notes,
        model_support,
        answered,
    )) = head
    else {
        return Err(StoreError::NotFound(id.to_owned()));
    };
    let mut record = ResearchRecord {
        id: id.to_owned(),
        query,
        created_at,
        status,
        synthesis,
        synthesis_kind: kind,
        model,
        duration_ms: ms.max(0) as u64,
        input_tokens: tin.max(0) as u64,
        output_tokens: tout.max(0) as u64,
        outcomes: from_json("outcomes", &outcomes)?,
        notes: from_json("notes", &notes)?,
        model_support: model_support
            .map(|json| from_json::<Option<SupportSummary>>("model_support", &json))
            .transpose()?
            .flatten(),
        ..ResearchRecord::default()
    };
    if let Some(json) = answered {
        let answered: Answered = from_json("answered", &json)?;
        record.sentences = answered.sentences;
        record.parts = answered.parts;
    }
    let keys: Vec<String> = {
        let mut stmt = conn.prepare_cached(
            "SELECT source_key FROM source WHERE research_id = ?1 ORDER BY position",
        )?;
        stmt.query_map([id], |r| r.get(0))?
            .collect::<Result<_, _>>()?
    };
    for key in keys {
        if let Some(source) = read_source(conn, id, &key)? {
            record.sources.push(source);
        }
    }
    let claims: Vec<(u32, String, u32, bool)> = {
        let mut stmt = conn.prepare_cached(
            "SELECT n, text, independent_domains, attributed FROM claim WHERE research_id = ?1
             ORDER BY n",
        )?;
        stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<Result<_, _>>()?
    };
    let mut checks = conn.prepare_cached(
        "SELECT cc.source_key, cc.overlap, cc.verdict, cc.model_verdict FROM claim_check cc
         LEFT JOIN source s ON s.research_id = cc.research_id AND s.source_key = cc.source_key
         WHERE cc.research_id = ?1 AND cc.n = ?2 ORDER BY s.n, s.position",
    )?;
    let mut support = conn.prepare_cached(
        "SELECT cs.source_key FROM claim_support cs
         LEFT JOIN source s ON s.research_id = cs.research_id AND s.source_key = cs.source_key
         WHERE cs.research_id = ?1 AND cs.n = ?2 ORDER BY s.n, s.position",
    )?;
    for (n, text, independent_domains, attributed) in claims {
        let sources = support
            .query_map(params![id, n], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let checks = checks
            .query_map(params![id, n], |r| {
                Ok(CitationCheck {
                    source_key: r.get(0)?,
                    overlap: r.get(1)?,
                    verdict: r.get(2)?,
                    model_verdict: r.get(3)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        record.claims.push(Claim {
            n,
            text,
            sources,
            independent_domains,
            attributed,
            checks,
        });
    }
    record.support = SupportSummary::of(&record.claims);
    Ok(record)
}

fn read_source(
    conn: &Connection,
    research_id: &str,
    key: &str,
) -> Result<Option<SourceRecord>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT n, provider, providers, provider_id, doi, arxiv_id, url, title, authors, date,
             venue, venue_type, citations, retracted, snippet, retrieved_at, domain, tier, base,
             citation_factor, independent_domains, corroboration_factor, recency_factor, cap,
             cap_reason, score, breakdown
         FROM source WHERE research_id = ?1 AND source_key = ?2",
    )?;
    let row = stmt
        .query_row(params![research_id, key], |r| {
            let providers: String = r.get(2)?;
            let authors: String = r.get(8)?;
            let citations: Option<i64> = r.get(12)?;
            Ok((
                SourceRecord {
                    key: key.to_owned(),
                    n: r.get(0)?,
                    provider: r.get(1)?,
                    provider_id: r.get(3)?,
                    doi: r.get(4)?,
                    arxiv_id: r.get(5)?,
                    url: r.get(6)?,
                    title: r.get(7)?,
                    date: r.get(9)?,
                    venue: r.get(10)?,
                    venue_type: r.get(11)?,
                    citations: citations.map(|n| n.max(0) as u64),
                    retracted: r.get(13)?,
                    snippet: r.get(14)?,
                    retrieved_at: r.get(15)?,
                    credibility: Credibility {
                        domain: r.get(16)?,
                        tier: r.get(17)?,
                        base: r.get(18)?,
                        citation_factor: r.get(19)?,
                        independent_domains: r.get(20)?,
                        corroboration_factor: r.get(21)?,
                        recency_factor: r.get(22)?,
                        cap: r.get(23)?,
                        cap_reason: r.get(24)?,
                        score: r.get(25)?,
                        breakdown: r.get(26)?,
                    },
                    ..SourceRecord::default()
                },
                providers,
                authors,
            ))
        })
        .optional()?;
    let Some((mut source, providers, authors)) = row else {
        return Ok(None);
    };
    source.providers = from_json("source providers", &providers)?;
    source.authors = from_json("source authors", &authors)?;
    Ok(Some(source))
}

fn summary_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ResearchSummary> {
    Ok(ResearchSummary {
        id: row.get(0)?,
        query: row.get(1)?,
        created_at: row.get(2)?,
    })
}

fn clamp_limit(limit: usize) -> i64 {
    limit.clamp(1, 1_000_000) as i64
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

fn from_json<T: serde::de::DeserializeOwned + Default>(
    what: &str,
    text: &str,
) -> Result<T, StoreError> {
    if text == "null" {
        return Ok(T::default());
    }
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        what: what.to_owned(),
        message: e.to_string(),
    })
}

/// Turns user text into a safe FTS5 query: every word quoted (so `"`, `AND`, `*`, `(` are just
/// text), joined by AND (`any = false`) or OR. `None` when there is no word at all.
pub fn fts_query(text: &str, any: bool) -> Option<String> {
    const STOP: [&str; 24] = [
        "a", "an", "and", "are", "as", "at", "be", "by", "does", "for", "from", "how", "in", "is",
        "it", "of", "on", "or", "the", "to", "what", "which", "who", "why",
    ];
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !any || !STOP.contains(&w.as_str()))
        .take(32)
        .map(|w| format!("\"{w}\""))
        .collect();
    if words.is_empty() {
        return None;
    }
    Some(words.join(if any { " OR " } else { " " }))
}

/// A new short id, sortable by creation time: 9 Crockford base32 digits of the milliseconds
/// since 1970 (good until the year 3084) and 3 random ones, lower-case (`01jd2k8v3x7qa`).
pub fn new_id() -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    id_from(millis, random_bits())
}

/// The id for a given time and 15 random bits (deterministic, for tests).
pub fn id_from(millis: u64, random: u64) -> String {
    const DIGITS: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut out = String::with_capacity(12);
    for shift in (0..9).rev() {
        out.push(DIGITS[((millis >> (shift * 5)) & 31) as usize] as char);
    }
    for shift in (0..3).rev() {
        out.push(DIGITS[((random >> (shift * 5)) & 31) as usize] as char);
    }
    out
}

fn random_bits() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.finish()
}

/// Now as RFC 3339 UTC with seconds (`2026-11-22T01:42:05Z`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests;
