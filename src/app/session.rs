//! A conversation continued across runs: `chassis run --session NAME` and
//! a served run's `session`. The model of each turn is sent the whole
//! transcript (every earlier turn's messages as it saw them, redacted),
//! and the transcript records which run and generation answered each turn.
//!
//! Why one module: the command line and the server store sessions in the
//! same table of the same store, so a session started by one continues in
//! the other; this is the one reading and writing of that transcript.

use std::sync::mpsc;
use std::time::Duration;

use crate::engine::secret::Redactor;
use crate::runtime::agent::AgentResult;
use crate::runtime::model::{ChatMessage, Role};
use crate::store::{SessionClaim, StoredSession, now_rfc3339};

use super::error::{AppError, Problem};
use super::state::{HOLD_FRESH_SECONDS, StateStore};

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

/// How often a session's turn claim is beaten while the turn runs.
pub const CLAIM_BEAT: Duration = Duration::from_secs(5);

/// Whether `claim` still holds its session's turn: its heartbeat is at
/// most [`HOLD_FRESH_SECONDS`] old (it is beaten every [`CLAIM_BEAT`]
/// while the turn runs, an approval wait included) and its process is not
/// known to be gone — on this host a killed process is seen gone at once,
/// elsewhere its claim lapses with its heartbeat. The same rule as a
/// server's hold on its lineage.
pub fn claim_is_live(claim: &SessionClaim) -> bool {
    crate::store::unix_now().saturating_sub(claim.heartbeat) <= HOLD_FRESH_SECONDS
        && !crate::process::liveness::is_gone(&claim.host, claim.pid)
}

/// Who holds a claim, for a person: the run and the program running it.
pub fn claim_holder(claim: &SessionClaim) -> String {
    if claim.instance == claim.run_id {
        format!(
            "run `{}` of `chassis run` (pid {})",
            claim.run_id, claim.pid
        )
    } else {
        format!(
            "run `{}` of `chassis serve` (pid {})",
            claim.run_id, claim.pid
        )
    }
}

/// Why session `id` cannot take a turn of `chassis run`: `holder` is
/// taking one (unusable input, exit 2, found before anything ran — as a
/// server answers a busy session with 409 `serve::session-busy`).
pub fn session_busy(id: &str, holder: &SessionClaim) -> Problem {
    Problem::input(format!(
        "session `{id}` is taking a turn in another process: {} holds it since {}",
        claim_holder(holder),
        holder.claimed_at
    ))
    .with_code("run::session-busy")
    .with_help("a session answers one turn at a time: run this turn again once that one has ended")
    .with_help(format!(
        "a turn whose process was killed lets go when its heartbeat is {HOLD_FRESH_SECONDS} s old, at once on the same host"
    ))
}

/// A session's turn claimed in the store for this process's run (`chassis
/// run --session`): a thread of its own, with its own connection to the
/// store, beats the claim's heart every [`CLAIM_BEAT`] while the run goes
/// on, and lets it go when the lease is dropped — however the run ends
/// (an answer, a failure, a budget, Ctrl-C). A process killed outright
/// leaves a claim that lapses ([`claim_is_live`]).
pub struct TurnLease {
    stop: Option<mpsc::Sender<()>>,
    beating: Option<std::thread::JoinHandle<()>>,
}

impl TurnLease {
    /// Claim the turn of session `id` of `store`'s lineage for run
    /// `run_id`, before the run calls anything: unusable input
    /// (`run::session-busy`, naming the run that holds it) when another
    /// process is taking a turn of it.
    pub fn take(store: &mut StateStore, id: &str, run_id: &str) -> Result<Self, AppError> {
        // The lease's thread keeps a connection of its own.
        let mut own = store.beside()?;
        if let Some(holder) = store.claim_session(id, run_id, run_id, &claim_is_live)? {
            return Err(session_busy(id, &holder).into());
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let beating = std::thread::Builder::new()
            .name("session-claim".into())
            .spawn({
                let (id, run_id) = (id.to_owned(), run_id.to_owned());
                move || {
                    while let Err(mpsc::RecvTimeoutError::Timeout) =
                        stopped.recv_timeout(CLAIM_BEAT)
                    {
                        match own.beat_session_claims(&run_id) {
                            Ok(0) => tracing::warn!(
                                session = %id,
                                "the session's turn was taken over by another run"
                            ),
                            Ok(_) => {}
                            Err(e) => tracing::warn!(
                                session = %id,
                                error = %e,
                                "the session's turn claim was not beaten"
                            ),
                        }
                    }
                    if let Err(e) = own.release_session_claim(&id, &run_id) {
                        tracing::warn!(
                            session = %id,
                            error = %e,
                            "the session's turn was not let go; it lapses with its heartbeat"
                        );
                    }
                }
            });
        match beating {
            Ok(beating) => Ok(Self {
                stop: Some(stop),
                beating: Some(beating),
            }),
            Err(e) => {
                let _ = store.release_session_claim(id, run_id);
                Err(AppError::failure(format!(
                    "cannot keep the turn of session `{id}`: {e}"
                )))
            }
        }
    }
}

impl Drop for TurnLease {
    fn drop(&mut self) {
        // The thread lets go of the claim when told to stop (or when the
        // sender is gone), and is waited for: the claim is gone once the
        // lease is.
        drop(self.stop.take());
        if let Some(beating) = self.beating.take() {
            let _ = beating.join();
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
    fn a_claim_is_live_while_its_heartbeat_is_fresh_and_its_process_there() {
        let host = crate::process::liveness::host_name();
        let claim = |pid: u32, age: u64| SessionClaim {
            session: "s".into(),
            run_id: "run_a".into(),
            instance: "run_a".into(),
            pid,
            host: host.clone(),
            claimed_at: "2026-01-01T00:00:00Z".into(),
            heartbeat: crate::store::unix_now() - age,
        };
        assert!(claim_is_live(&claim(std::process::id(), 0)));
        assert!(claim_is_live(&claim(
            std::process::id(),
            HOLD_FRESH_SECONDS
        )));
        assert!(!claim_is_live(&claim(
            std::process::id(),
            HOLD_FRESH_SECONDS + 1
        )));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!claim_is_live(&claim(pid, 0)), "its process is gone");
        let busy = session_busy("chat-1", &claim(std::process::id(), 0));
        assert_eq!(busy.code, Some("run::session-busy"));
        assert_eq!(busy.kind, crate::app::ErrorKind::Input);
        assert!(
            busy.message.contains("session `chat-1`"),
            "{}",
            busy.message
        );
        assert!(
            busy.message.contains("run `run_a` of `chassis run`"),
            "{}",
            busy.message
        );
    }

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
