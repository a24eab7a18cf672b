//! A conversation continued across runs: `chassis run --session NAME` and
//! a served run's `session`. The model of each turn is sent the whole
//! transcript (every earlier turn's messages as it saw them, redacted),
//! and the transcript records which run and generation answered each turn.
//!
//! Why one module: the command line and the server store sessions in the
//! same table of the same store, so a session started by one continues in
//! the other; this is the one reading and writing of that transcript.

use crate::engine::secret::Redactor;
use crate::runtime::agent::AgentResult;
use crate::runtime::model::{ChatMessage, Role};
use crate::store::{StoredSession, now_rfc3339};

/// Whether `id` may name a session: `[A-Za-z0-9._-]{1,128}`.
pub fn is_session_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// What a session id must look like, for an error's words.
pub const SESSION_ID_RULE: &str = "a session id is 1 to 128 of `A-Z a-z 0-9 . _ -`";

/// Why a session cannot take a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionError {
    /// It belongs to this other agent.
    OtherAgent(String),
    /// Its stored transcript does not read back.
    Unreadable(String),
}

/// A session about to take a turn.
#[derive(Clone, Debug)]
pub struct Conversation {
    /// Its id.
    pub id: String,
    /// As stored (`None`: its first turn).
    pub stored: Option<StoredSession>,
    /// The messages of its earlier turns (no system message).
    pub messages: Vec<ChatMessage>,
}

impl Conversation {
    /// Session `id` (as `stored`, or new) taking a turn of `agent`.
    pub fn resume(
        id: String,
        stored: Option<StoredSession>,
        agent: &str,
    ) -> Result<Self, SessionError> {
        let Some(stored) = stored else {
            return Ok(Self {
                id,
                stored: None,
                messages: Vec::new(),
            });
        };
        if stored.agent != agent {
            return Err(SessionError::OtherAgent(stored.agent));
        }
        let messages = serde_json::from_value(stored.transcript["messages"].clone())
            .map_err(|e| SessionError::Unreadable(e.to_string()))?;
        Ok(Self {
            id,
            stored: Some(stored),
            messages,
        })
    }

    /// The number of the turn about to be taken (1 for a new session).
    pub fn next_turn(&self) -> usize {
        self.turns().len() + 1
    }

    fn turns(&self) -> Vec<serde_json::Value> {
        self.stored
            .as_ref()
            .and_then(|s| s.transcript["turns"].as_array().cloned())
            .unwrap_or_default()
    }

    /// The session with `result` (which ended `status`) as its next turn:
    /// its messages as the model saw them, redacted, and which run and
    /// generation answered.
    pub fn with_turn(
        &self,
        result: &AgentResult,
        status: &str,
        redactor: &Redactor,
    ) -> StoredSession {
        let now = now_rfc3339();
        let mut turns = self.turns();
        turns.push(serde_json::json!({
            "turn": turns.len() + 1,
            "run_id": result.run_id,
            "generation_id": result.generation_id,
            "status": status,
        }));
        let messages: Vec<&ChatMessage> = result
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .collect();
        StoredSession {
            id: self.id.clone(),
            agent: result.agent.clone(),
            created_at: self
                .stored
                .as_ref()
                .map_or_else(|| now.clone(), |s| s.created_at.clone()),
            updated_at: now,
            transcript: redactor
                .redact_document(&serde_json::json!({ "turns": turns, "messages": messages })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_short_and_plain() {
        assert!(is_session_id("chat-1"));
        assert!(is_session_id("a.b_c-D9"));
        assert!(is_session_id(&"x".repeat(128)));
        assert!(!is_session_id(""));
        assert!(!is_session_id(&"x".repeat(129)));
        assert!(!is_session_id("has space"));
        assert!(!is_session_id("../up"));
        assert!(!is_session_id("é"));
    }

    fn stored(agent: &str, transcript: serde_json::Value) -> StoredSession {
        StoredSession {
            id: "s".into(),
            agent: agent.into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
            transcript,
        }
    }

    #[test]
    fn a_session_belongs_to_one_agent_and_must_read_back() {
        let new = Conversation::resume("s".into(), None, "a").unwrap();
        assert_eq!((new.next_turn(), new.messages.len()), (1, 0));
        let t = serde_json::json!({
            "turns": [{"turn": 1}],
            "messages": [{"role": "user", "content": "hi"}],
        });
        let old = Conversation::resume("s".into(), Some(stored("a", t.clone())), "a").unwrap();
        assert_eq!((old.next_turn(), old.messages.len()), (2, 1));
        assert_eq!(
            Conversation::resume("s".into(), Some(stored("a", t)), "b").unwrap_err(),
            SessionError::OtherAgent("a".into())
        );
        let bad = serde_json::json!({"messages": [{"role": 7}]});
        assert!(matches!(
            Conversation::resume("s".into(), Some(stored("a", bad)), "a"),
            Err(SessionError::Unreadable(_))
        ));
    }
}
