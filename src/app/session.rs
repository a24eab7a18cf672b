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
        let messages: Vec<ChatMessage> =
            serde_json::from_value(stored.transcript["messages"].clone())
                .map_err(|e| SessionError::Unreadable(e.to_string()))?;
        // A transcript saved before every call was answered is sent as
        // one the model accepts.
        let messages = every_call_answered(messages);
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
        let messages = every_call_answered(
            result
                .messages
                .iter()
                .filter(|m| m.role != Role::System)
                .cloned(),
        );
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

/// What a tool call the turn stopped before running is answered with.
pub const NOT_RUN: &str =
    "not run: the turn stopped (step limit, budget or failure) before this call ran";

/// `messages` with every tool call of an assistant message answered: a
/// turn that stopped with calls it did not run (the step limit, a budget,
/// a failed call before the others) left an assistant message whose calls
/// have no tool message, which OpenAI-compatible endpoints refuse in the
/// next turn's request. Each such call is answered, right after the tool
/// messages that did answer that assistant message, by a tool message
/// saying it was not run — so the model reads what it asked for and that
/// it did not happen.
fn every_call_answered(messages: impl IntoIterator<Item = ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::new();
    // The calls of the last assistant message not answered yet.
    let mut open: Vec<(String, String)> = Vec::new();
    let close = |out: &mut Vec<ChatMessage>, open: &mut Vec<(String, String)>| {
        for (id, name) in open.drain(..) {
            out.push(ChatMessage::tool(id, name, NOT_RUN.to_owned()));
        }
    };
    for m in messages {
        if m.role == Role::Tool {
            if let Some(id) = &m.tool_call_id {
                open.retain(|(open_id, _)| open_id != id);
            }
        } else {
            close(&mut out, &mut open);
        }
        if m.role == Role::Assistant {
            open = m
                .tool_calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone()))
                .collect();
        }
        out.push(m);
    }
    close(&mut out, &mut open);
    out
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
    fn every_tool_call_is_answered_right_after_its_message() {
        let call = |id: &str| crate::runtime::model::ModelToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: serde_json::json!({}),
            malformed: None,
        };
        let mut asked = ChatMessage::text(Role::Assistant, "");
        asked.tool_calls = vec![call("a"), call("b")];
        let mut last = ChatMessage::text(Role::Assistant, "");
        last.tool_calls = vec![call("c")];
        let out = every_call_answered([
            ChatMessage::text(Role::User, "go"),
            asked,
            ChatMessage::tool("a", "t", "ran".into()),
            ChatMessage::text(Role::User, "again"),
            last,
        ]);
        let shape: Vec<(Role, Option<&str>, &str)> = out
            .iter()
            .map(|m| (m.role, m.tool_call_id.as_deref(), m.content.as_str()))
            .collect();
        assert_eq!(
            shape,
            [
                (Role::User, None, "go"),
                (Role::Assistant, None, ""),
                (Role::Tool, Some("a"), "ran"),
                (Role::Tool, Some("b"), NOT_RUN),
                (Role::User, None, "again"),
                (Role::Assistant, None, ""),
                (Role::Tool, Some("c"), NOT_RUN),
            ]
        );
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
