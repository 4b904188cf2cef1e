//! The workspace passage index: for each workspace root, the files read (with the mtime and
//! size they had, so a later run re-reads only what changed) and their passages in the root's
//! own FTS5 table (Porter stemmer over unicode61) ranked with `bm25()`. Own, because `bm25()`
//! weighs a word by how many rows of its table hold it: in one table for every root, a
//! project's passages were ranked with the words of every other project indexed.
//!
//! Storage only: what a passage is and which files are indexed is decided in `research/`.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::{Library, StoreError, clamp_limit};

/// A passage to index (see `research::passages`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Passage {
    /// The Markdown heading path (`Cache › Eviction`) or, in code, the nearest definition;
    /// empty when there is none.
    pub heading: String,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
}

/// A passage found by a search, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageHit {
    pub id: i64,
    /// Relative to the root, `/`-separated.
    pub path: String,
    pub passage: Passage,
    /// `bm25()`: lower is better.
    pub rank: f64,
}

impl PassageHit {
    /// Where it is: its path, its first line and its last (`README.md:12-30`).
    pub fn lines(&self) -> String {
        format!(
            "{}:{}-{}",
            self.path, self.passage.start_line, self.passage.end_line
        )
    }
}

/// A file's state when it was indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub mtime_ns: i64,
    pub size: i64,
}

/// A file to (re)index with its passages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFile {
    pub path: String,
    pub stamp: FileStamp,
    pub passages: Vec<Passage>,
}

/// `bm25()` weights of the columns path, heading, body: a word in a file name or a heading
/// says more about a passage than one in its text.
const WEIGHTS: &str = "2.0, 3.0, 1.0";

/// The FTS5 table of `root`'s passages, `None` for a root never indexed.
fn fts_table(conn: &Connection, root: &str) -> Result<Option<String>, StoreError> {
    let id: Option<i64> = conn
        .query_row("SELECT id FROM passage_root WHERE root = ?1", [root], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(id.map(|id| format!("passage_fts_{id}")))
}

/// The FTS5 table of `root`'s passages, made (and the root numbered) when it has none yet.
fn fts_table_made(conn: &Connection, root: &str) -> Result<String, StoreError> {
    if let Some(table) = fts_table(conn, root)? {
        return Ok(table);
    }
    conn.execute("INSERT INTO passage_root(root) VALUES (?1)", [root])?;
    let table = format!("passage_fts_{}", conn.last_insert_rowid());
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE {table} USING fts5(
            path, heading, body, tokenize = 'porter unicode61 remove_diacritics 2'
        );"
    ))?;
    Ok(table)
}

impl Library {
    /// The files indexed under `root` and their stamps.
    pub fn passage_files(&self, root: &str) -> Result<HashMap<String, FileStamp>, StoreError> {
        let conn = self.lock();
        let mut stmt =
            conn.prepare_cached("SELECT path, mtime_ns, size FROM passage_file WHERE root = ?1")?;
        let rows = stmt.query_map([root], |r| {
            Ok((
                r.get::<_, String>(0)?,
                FileStamp {
                    mtime_ns: r.get(1)?,
                    size: r.get(2)?,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// In one transaction: replaces the passages of every file of `files` and forgets the files
    /// in `removed`.
    pub fn update_passages(
        &self,
        root: &str,
        files: &[IndexedFile],
        removed: &[String],
    ) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        {
            let fts = fts_table_made(&tx, root)?;
            let mut find =
                tx.prepare_cached("SELECT id FROM passage_file WHERE root = ?1 AND path = ?2")?;
            let mut delete_fts = tx.prepare_cached(&format!(
                "DELETE FROM {fts} WHERE rowid IN (SELECT id FROM passage WHERE file_id = ?1)"
            ))?;
            let mut delete_passages =
                tx.prepare_cached("DELETE FROM passage WHERE file_id = ?1")?;
            let mut delete_file = tx.prepare_cached("DELETE FROM passage_file WHERE id = ?1")?;
            let mut forget = |path: &str| -> Result<(), StoreError> {
                let id: Option<i64> = find
                    .query_row(params![root, path], |r| r.get(0))
                    .optional()?;
                if let Some(id) = id {
                    delete_fts.execute([id])?;
                    delete_passages.execute([id])?;
                    delete_file.execute([id])?;
                }
                Ok(())
            };
            for path in removed {
                forget(path)?;
            }
            for file in files {
                forget(&file.path)?;
            }
            let mut insert_file = tx.prepare_cached(
                "INSERT INTO passage_file(root, path, mtime_ns, size) VALUES (?1, ?2, ?3, ?4)",
            )?;
            let mut insert_passage = tx.prepare_cached(
                "INSERT INTO passage(file_id, start_line, end_line) VALUES (?1, ?2, ?3)",
            )?;
            let mut insert_fts = tx.prepare_cached(&format!(
                "INSERT INTO {fts}(rowid, path, heading, body) VALUES (?1, ?2, ?3, ?4)"
            ))?;
            for file in files {
                insert_file.execute(params![
                    root,
                    file.path,
                    file.stamp.mtime_ns,
                    file.stamp.size
                ])?;
                let file_id = tx.last_insert_rowid();
                for p in &file.passages {
                    insert_passage.execute(params![file_id, p.start_line, p.end_line])?;
                    let id = tx.last_insert_rowid();
                    insert_fts.execute(params![id, file.path, p.heading, p.text])?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Passages under `root` matching the FTS5 query `query` (see [`super::fts_query`]), best
    /// first by `bm25()`.
    pub fn search_passages(
        &self,
        root: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<PassageHit>, StoreError> {
        let conn = self.lock();
        let Some(fts) = fts_table(&conn, root)? else {
            return Ok(Vec::new());
        };
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT p.id, f.path, p.start_line, p.end_line, {fts}.heading, {fts}.body,
                    bm25({fts}, {WEIGHTS}) AS score
             FROM {fts}
             JOIN passage p ON p.id = {fts}.rowid
             JOIN passage_file f ON f.id = p.file_id
             WHERE {fts} MATCH ?1
             ORDER BY score, p.id LIMIT ?2"
        ))?;
        let rows = stmt.query_map(params![query, clamp_limit(limit)], |r| {
            Ok(PassageHit {
                id: r.get(0)?,
                path: r.get(1)?,
                passage: Passage {
                    start_line: r.get(2)?,
                    end_line: r.get(3)?,
                    heading: r.get(4)?,
                    text: r.get(5)?,
                },
                rank: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
