//! Agent sessions (`patchwise acp`), kept so a client can load one again after a restart: the
//! folder it works in, the mode and the model it was left in, whether the user chose to always allow its
//! changes, and its conversation as it was shown — the user's prompts and patchwise's answers,
//! each a turn. The rows are data only; the edge decides
//! how a turn is shown again.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Library, StoreError, now_rfc3339};

/// One stored session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: String,
    /// The absolute folder the session works in.
    pub cwd: String,
    /// The mode's id (`develop`, `edit`, `research`).
    pub mode: String,
    /// The `model` option's value: `roles` (each role its configured model) or the
    /// `provider/model` that answers for every role.
    #[serde(default)]
    pub model: String,
    /// RFC 3339; set when first stored.
    pub created_at: String,
    /// The user chose "always write changes in this session": later changes are written
    /// without asking, also after the session is loaded again.
    #[serde(default)]
    pub always_allow: bool,
    pub turns: Vec<SessionTurn>,
}

/// Who said a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    User,
    Agent,
}

/// One message of the conversation, as plain text (Markdown for the agent's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionTurn {
    pub speaker: Speaker,
    pub text: String,
}

impl Library {
    /// Stores `record`, replacing a session with the same id (its creation time is kept).
    pub fn save_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        let turns = serde_json::to_string(&record.turns).map_err(|e| StoreError::Corrupt {
            what: "session turns".to_owned(),
            message: e.to_string(),
        })?;
        let now = now_rfc3339();
        let created = if record.created_at.is_empty() {
            now.clone()
        } else {
            record.created_at.clone()
        };
        self.lock().execute(
            "INSERT INTO agent_session (id, cwd, mode, created_at, updated_at, turns, always_allow, model)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT(id) DO UPDATE SET cwd = excluded.cwd, mode = excluded.mode,
               updated_at = excluded.updated_at, turns = excluded.turns,
               always_allow = excluded.always_allow, model = excluded.model",
            params![
                record.id,
                record.cwd,
                record.mode,
                created,
                now,
                turns,
                record.always_allow,
                record.model
            ],
        )?;
        Ok(())
    }

    /// The session with this id, if stored.
    pub fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let row = self
            .lock()
            .query_row(
                "SELECT id, cwd, mode, created_at, turns, always_allow, model FROM agent_session
                 WHERE id = ?1",
                [id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, String>(4)?,
                        row.get::<_, bool>(5)?,
                        row.get::<_, String>(6)?,
                    ))
                },
            )
            .optional()?;
        let Some((id, cwd, mode, created_at, turns, always_allow, model)) = row else {
            return Ok(None);
        };
        let turns = serde_json::from_str(&turns).map_err(|e| StoreError::Corrupt {
            what: format!("the turns of session {id}"),
            message: e.to_string(),
        })?;
        Ok(Some(SessionRecord {
            id,
            cwd,
            mode,
            model,
            created_at,
            always_allow,
            turns,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_round_trips_and_a_save_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(&dir.path().join("library.db")).unwrap();
        assert_eq!(library.session("nope").unwrap(), None);
        let mut record = SessionRecord {
            id: "s1".into(),
            cwd: "/w".into(),
            mode: "develop".into(),
            model: "roles".into(),
            created_at: String::new(),
            always_allow: false,
            turns: vec![SessionTurn {
                speaker: Speaker::User,
                text: "add a flag".into(),
            }],
        };
        library.save_session(&record).unwrap();
        let stored = library.session("s1").unwrap().unwrap();
        assert!(!stored.created_at.is_empty());
        assert_eq!(stored.turns, record.turns);
        assert!(!stored.always_allow);
        record.mode = "research".into();
        record.always_allow = true;
        record.model = "code/coder-model".into();
        record.turns.push(SessionTurn {
            speaker: Speaker::Agent,
            text: "done".into(),
        });
        library.save_session(&record).unwrap();
        let again = library.session("s1").unwrap().unwrap();
        assert_eq!(again.mode, "research");
        assert!(again.always_allow);
        assert_eq!(again.model, "code/coder-model");
        assert_eq!(again.turns.len(), 2);
        assert_eq!(again.created_at, stored.created_at);
    }
}
