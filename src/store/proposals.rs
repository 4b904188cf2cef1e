//! Pending proposals, kept so they survive a restart of the server.
//!
//! A proposal is stored as the review state it was last saved in: per file, a hash of the
//! text its hunks are against and the hunks themselves (range, old and new text, and the
//! context lines that re-locate them when the file changed in between). The rows are data
//! only; `workflow::proposal` decides what a stored proposal means when it comes back.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{Library, StoreError, now_rfc3339};

/// One pending proposal as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalRecord {
    /// 0 for a proposal not stored yet ([`Library::insert_proposal`] assigns the id).
    pub id: u64,
    pub instruction: String,
    pub model: String,
    pub attempts: usize,
    pub matched_by: String,
    /// RFC 3339; set when first stored.
    pub created_at: String,
    pub files: Vec<ProposalFileRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalFileRecord {
    /// Absolute path.
    pub path: String,
    pub display_path: String,
    /// The file does not exist yet; accepting creates it.
    pub created: bool,
    /// `text_hash` of the text the hunk ranges are against.
    pub base_hash: String,
    pub hunks: Vec<HunkRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkRecord {
    /// The hunk's number in its proposal.
    pub n: usize,
    /// Byte range in the base text.
    pub start: usize,
    pub end: usize,
    pub old: String,
    pub new: String,
    /// Whole lines before and after the hunk in the base text.
    pub before: String,
    pub after: String,
}

/// A stable hash of a text (the edit ledger's FNV-1a, 64 bits, with the length): equal texts
/// hash equal in every build and on every machine.
pub fn text_hash(text: &str) -> String {
    let hash = crate::edit::ledger::content_hash(text);
    format!("fnv1a64:{hash:016x}:{}", text.len())
}

impl Library {
    /// Stores a new pending proposal and returns the id it gets (unique in this database, never
    /// reused).
    pub fn insert_proposal(&self, record: &ProposalRecord) -> Result<u64, StoreError> {
        let conn = self.lock();
        let created = if record.created_at.is_empty() {
            now_rfc3339()
        } else {
            record.created_at.clone()
        };
        conn.execute(
            "INSERT INTO proposal (instruction, model, attempts, matched_by, created_at, files)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                record.instruction,
                record.model,
                record.attempts as i64,
                record.matched_by,
                created,
                files_json(record)?
            ],
        )?;
        Ok(conn.last_insert_rowid() as u64)
    }

    /// Replaces the stored review state of proposal `record.id` (a hunk was accepted or
    /// rejected). A proposal no longer stored is left alone.
    pub fn update_proposal(&self, record: &ProposalRecord) -> Result<(), StoreError> {
        self.lock().execute(
            "UPDATE proposal SET files = ?2 WHERE id = ?1",
            params![record.id as i64, files_json(record)?],
        )?;
        Ok(())
    }

    /// Forgets a proposal (accepted or rejected).
    pub fn delete_proposal(&self, id: u64) -> Result<(), StoreError> {
        self.lock()
            .execute("DELETE FROM proposal WHERE id = ?1", params![id as i64])?;
        Ok(())
    }

    /// Every stored proposal, oldest first.
    pub fn pending_proposals(&self) -> Result<Vec<ProposalRecord>, StoreError> {
        let conn = self.lock();
        let mut statement = conn.prepare(
            "SELECT id, instruction, model, attempts, matched_by, created_at, files
             FROM proposal ORDER BY id",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, i64>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, String>(6)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, instruction, model, attempts, matched_by, created_at, files) = row?;
            let files = serde_json::from_str(&files).map_err(|e| StoreError::Corrupt {
                what: format!("files of proposal {id}"),
                message: e.to_string(),
            })?;
            out.push(ProposalRecord {
                id: id as u64,
                instruction,
                model,
                attempts: attempts.max(0) as usize,
                matched_by,
                created_at,
                files,
            });
        }
        Ok(out)
    }
}

fn files_json(record: &ProposalRecord) -> Result<String, StoreError> {
    serde_json::to_string(&record.files).map_err(|e| StoreError::Corrupt {
        what: format!("files of proposal {}", record.id),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> ProposalRecord {
        ProposalRecord {
            id: 0,
            instruction: "rename".into(),
            model: "m/x".into(),
            attempts: 2,
            matched_by: "exact".into(),
            created_at: String::new(),
            files: vec![ProposalFileRecord {
                path: "/w/a.rs".into(),
                display_path: "a.rs".into(),
                created: false,
                base_hash: text_hash("fn a() {}\n"),
                hunks: vec![HunkRecord {
                    n: 1,
                    start: 0,
                    end: 10,
                    old: "fn a() {}\n".into(),
                    new: "fn b() {}\n".into(),
                    before: String::new(),
                    after: String::new(),
                }],
            }],
        }
    }

    #[test]
    fn proposals_are_stored_updated_listed_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("library.sqlite3");
        let library = Library::open(&path).unwrap();
        let first = library.insert_proposal(&record()).unwrap();
        let second = library.insert_proposal(&record()).unwrap();
        assert!(second > first);
        let mut stored = library.pending_proposals().unwrap().remove(0);
        assert_eq!(stored.id, first);
        assert_eq!(stored.files, record().files);
        assert!(!stored.created_at.is_empty());
        stored.files[0].hunks.clear();
        library.update_proposal(&stored).unwrap();
        drop(library);
        // Reopened: still there, in order.
        let library = Library::open(&path).unwrap();
        let all = library.pending_proposals().unwrap();
        assert_eq!(
            all.iter().map(|p| p.id).collect::<Vec<_>>(),
            [first, second]
        );
        assert!(all[0].files[0].hunks.is_empty());
        library.delete_proposal(first).unwrap();
        assert_eq!(library.pending_proposals().unwrap().len(), 1);
        // Ids are never reused.
        library.delete_proposal(second).unwrap();
        assert!(library.insert_proposal(&record()).unwrap() > second);
    }

    #[test]
    fn the_text_hash_is_stable() {
        assert_eq!(text_hash(""), "fnv1a64:cbf29ce484222325:0");
        assert_ne!(text_hash("a"), text_hash("b"));
    }
}
