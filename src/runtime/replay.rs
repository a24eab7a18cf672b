//! Record and replay of a run's boundaries.
//!
//! `--record FILE` writes every model call and tool call of a run
//! (redacted) with the reference's key scheme over the redacted request;
//! `--replay FILE` answers those
//! boundaries from the file. Policy, approval and budget still run on a
//! replayed tool call — a recording answers what a tool returned, never
//! whether it was allowed to ask — and a replayed model call still crosses
//! its hooks and budget. Keys are the first 32 hex digits of the canonical
//! hash of `["tool", name, args after hooks]` or `["model", model name,
//! messages, options]` *as the record shows them*: redacted by the run's
//! redactor (see [`tool_key`]); each `(kind, key)` has a cursor in
//! recording order, so a repeated identical call gets the next recorded
//! answer.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::executor::{RunContext, ToolStatus};
use super::model::{ChatModel, ModelError, ModelRequest, ModelResponse};
use crate::engine::canonical::{Canon, stable_hash};
use crate::engine::redact::REDACTED;
use crate::engine::secret::Redactor;
use crate::engine::telemetry::{AttrValue, Telemetry, attributes};

/// The replay document format version.
///
/// Still 1 although keys now hash the redacted request where earlier
/// versions hashed the raw one: the two agree on every call the redactor
/// leaves unchanged, so those recordings replay as before. A call it does
/// change gets a key that an earlier record holds only if that record's
/// raw request already read exactly like this call's redacted one (short
/// of a hash collision) — the answer a new recording would give too — so
/// otherwise it misses, naming the call: an earlier file is never answered
/// from another call's record. Refusing every earlier file would refuse
/// the recordings that still replay.
pub const REPLAY_FORMAT_VERSION: u64 = 1;

/// What a replay does when a boundary has no recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// Fail the run, naming the boundary.
    Error,
    /// Call the live model or tool (not recorded).
    Live,
}

/// Recording or replaying.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Calls go live and are written down.
    Record,
    /// Calls are answered from the records.
    Replay,
}

/// One recorded boundary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayRecord {
    /// `model` or `tool`.
    pub kind: String,
    /// Order of recording (1-based).
    pub sequence: u64,
    /// The boundary key.
    pub key: String,
    /// What was asked (redacted).
    pub request: Value,
    /// What was answered (redacted).
    pub response: Value,
    /// Generation of the recorded run.
    pub generation_id: String,
    /// Run id of the recorded run.
    pub run_id: String,
}

/// The document on disk.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayDocument {
    /// Always 1.
    pub format_version: u64,
    /// `record`.
    pub mode: Mode,
    /// The fallback the recording was made for.
    pub fallback: Fallback,
    /// Free-form metadata (agent, chassis version).
    pub metadata: BTreeMap<String, Value>,
    /// The records.
    pub records: Vec<ReplayRecord>,
}

/// Why a replay document cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the replay file is not usable: {0}")]
pub struct ReplayFormatError(pub String);

impl ReplayDocument {
    /// Parse and check a document.
    pub fn parse(text: &str) -> Result<Self, ReplayFormatError> {
        let doc: ReplayDocument =
            serde_json::from_str(text).map_err(|e| ReplayFormatError(e.to_string()))?;
        if doc.format_version != REPLAY_FORMAT_VERSION {
            return Err(ReplayFormatError(format!(
                "format_version {} is not supported (this chassis reads {REPLAY_FORMAT_VERSION})",
                doc.format_version
            )));
        }
        for r in &doc.records {
            if r.kind != "model" && r.kind != "tool" {
                return Err(ReplayFormatError(format!(
                    "record {} has the unknown kind `{}`",
                    r.sequence, r.kind
                )));
            }
        }
        Ok(doc)
    }
}

/// The boundary key of a tool call: the first 32 hex digits of the
/// canonical hash of `["tool", name, args]` after `redactor` has redacted
/// them as a recording does ([`Redactor::redact_json`] of the request the
/// record shows, `{"tool": name, "args": args}`).
///
/// A key is computed over the redacted request, never the raw one: a plain
/// hash of content holding a secret is a guessing oracle for that secret
/// (see `engine::secret::fingerprint`), and the record, the `replay.*`
/// signals and the miss errors all carry the key. Keying on what the record
/// shows is also what lets a replay match: a replayed answer is the
/// redacted one, so the conversation a replay builds after a tool returned
/// a secret holds `<redacted>` where the recorded run's held the value.
/// Where the redactor changes nothing (no known secret, no URL password,
/// no sensitive key) the key is the one earlier versions computed over the
/// raw request, so their recordings still replay there.
///
/// Two calls that differ only in secret content (a known value, a URL
/// password, the value under a sensitive key such as `password`) get the
/// same key. That is accepted, not an accident: the record cannot tell them
/// apart either — both requests read the same once redacted — and a key
/// that could would be a function of the secret, which is the oracle (a
/// keyed fingerprint would not be, but it would tie a recording to one
/// installation's key and to the exact credentials, so a recording made
/// with one token could not replay with a rotated one). Such calls share
/// one cursor, so the n-th of them in a replay gets the n-th recorded
/// answer: a replay of the recorded run makes them in the recorded order
/// and gets each its own answer. Only a run that makes them in another
/// order (or that depends on which secret it holds) would get them swapped;
/// a recording is a re-run of one run, not a table of answers per secret.
#[must_use]
pub fn tool_key(redactor: &Redactor, name: &str, args: &Value) -> String {
    request_key("tool", &redactor.redact_json(&tool_request(name, args)))
}

/// The boundary key of a model call: the first 32 hex digits of the
/// canonical hash of `["model", model, messages, options]` after `redactor`
/// has redacted them as a recording does (the request the record shows,
/// `{"model", "messages", "options"}`). What [`tool_key`] says about
/// secrets and collisions holds here: a conversation that differs from the
/// recorded one only in a secret value gets the recorded answer.
#[must_use]
pub fn model_key(redactor: &Redactor, model: &str, request: &ModelRequest) -> String {
    request_key(
        "model",
        &redactor.redact_json(&model_request(model, request)),
    )
}

/// A response as a record keeps it. A tool's output is redacted as it was
/// when it entered the conversation ([`Redactor::redact_foreign`]: known
/// values, keys numbered, no sensitive-key rule), so a replay hands the
/// model the text the recorded run did; a model's reply is redacted as a
/// request is (its tool-call arguments under sensitive keys too).
fn redact_response(redactor: &Redactor, kind: &str, response: &Value) -> Value {
    if kind == "tool" {
        redactor.redact_foreign(response)
    } else {
        redactor.redact_json(response)
    }
}

/// Whether `live` reads as `recorded` where each `<redacted>` in a recorded
/// string (or a recorded `"<redacted>"` standing for a number) stands for
/// some non-empty text; the texts so hidden are pushed on `hidden`.
fn masked_match(recorded: &Value, live: &Value, hidden: &mut Vec<String>) -> bool {
    match (recorded, live) {
        (Value::Object(r), Value::Object(l)) => {
            r.len() == l.len()
                && r.iter()
                    .all(|(k, rv)| l.get(k).is_some_and(|lv| masked_match(rv, lv, hidden)))
        }
        (Value::Array(r), Value::Array(l)) => {
            r.len() == l.len() && r.iter().zip(l).all(|(rv, lv)| masked_match(rv, lv, hidden))
        }
        (Value::String(r), Value::String(l)) => masked_text(r, l, hidden),
        (Value::String(r), Value::Number(n)) if r == REDACTED => {
            hidden.push(n.to_string());
            true
        }
        (r, l) => r == l,
    }
}

/// [`masked_match`] on one string: the pieces between the markers appear
/// in `live` in order, first at the start and last at the end.
fn masked_text(recorded: &str, live: &str, hidden: &mut Vec<String>) -> bool {
    if !recorded.contains(REDACTED) {
        return recorded == live;
    }
    let pieces: Vec<&str> = recorded.split(REDACTED).collect();
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    let Some(mut rest) = live.strip_prefix(first) else {
        return false;
    };
    let mut gaps = Vec::new();
    for piece in &pieces[1..pieces.len() - 1] {
        // The gap before `piece` is at least one character.
        let Some(at) = rest
            .char_indices()
            .skip(1)
            .map(|(i, _)| i)
            .find(|&i| rest[i..].starts_with(piece))
        else {
            return false;
        };
        gaps.push(&rest[..at]);
        rest = &rest[at + piece.len()..];
    }
    let Some(gap) = rest.strip_suffix(last).filter(|g| !g.is_empty()) else {
        return false;
    };
    gaps.push(gap);
    hidden.extend(gaps.into_iter().map(str::to_owned));
    true
}

/// The request of a tool call as a record shows it (before redaction).
fn tool_request(name: &str, args: &Value) -> Value {
    json!({ "tool": name, "args": args })
}

/// The request of a model call as a record shows it (before redaction).
fn model_request(model: &str, request: &ModelRequest) -> Value {
    let messages = serde_json::to_value(request.messages).unwrap_or(Value::Null);
    json!({ "model": model, "messages": messages, "options": request.options })
}

/// The key of a request already redacted ([`tool_request`] or
/// [`model_request`] through the redactor): it is a function of what the
/// record shows and of nothing else.
fn request_key(kind: &str, request: &Value) -> String {
    let part = |field: &str| Canon::from_json(request.get(field).unwrap_or(&Value::Null));
    let parts = if kind == "tool" {
        vec![Canon::from("tool"), part("tool"), part("args")]
    } else {
        vec![
            Canon::from("model"),
            part("model"),
            part("messages"),
            part("options"),
        ]
    };
    key(&Canon::List(parts))
}

fn key(c: &Canon) -> String {
    stable_hash(c).map_or_else(|_| "unhashable".to_owned(), |h| h[..32].to_owned())
}

/// A tool call answered from a recording.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedTool {
    /// Status.
    pub status: ToolStatus,
    /// Content.
    pub content: Value,
    /// Artifact.
    pub artifact: Option<Value>,
    /// Error.
    pub error: Option<String>,
}

/// The outcome of looking a tool call up.
#[derive(Debug)]
pub enum ToolLookup {
    /// Not replaying, or a miss with the live fallback: run the tool.
    Live,
    /// Answered from the recording.
    Hit(RecordedTool),
    /// A miss: the run must fail with this message.
    Miss(String),
}

/// A session of record or replay shared by one run's boundaries.
pub struct Replay {
    mode: Mode,
    fallback: Fallback,
    redactor: Redactor,
    telemetry: std::sync::Arc<dyn Telemetry>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    records: Vec<ReplayRecord>,
    cursors: BTreeMap<(String, String), usize>,
}

impl Replay {
    /// A recording session.
    pub fn recording(redactor: Redactor, telemetry: std::sync::Arc<dyn Telemetry>) -> Self {
        Self {
            mode: Mode::Record,
            fallback: Fallback::Error,
            redactor,
            telemetry,
            state: Mutex::new(State::default()),
        }
    }

    /// A replay session over `doc`.
    pub fn replaying(
        doc: ReplayDocument,
        fallback: Fallback,
        redactor: Redactor,
        telemetry: std::sync::Arc<dyn Telemetry>,
    ) -> Self {
        Self {
            mode: Mode::Replay,
            fallback,
            redactor,
            telemetry,
            state: Mutex::new(State {
                records: doc.records,
                cursors: BTreeMap::new(),
            }),
        }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The document of what was recorded.
    ///
    /// Every record is redacted again with what the redactor knows now and
    /// its key recomputed from the request so redacted: a secret the run
    /// learned after a call (a later tool looked it up) is then neither in
    /// that call's request nor hashed into its key. The price is paid by a
    /// value that reaches a call from outside the recording (the input, the
    /// system prompt) before the run learns it is a secret: a replay, which
    /// runs no tool and so never learns it, keys that call on the raw value
    /// and misses it, naming the call, where a key over the raw request
    /// would have matched by hashing the secret.
    pub fn document(&self, metadata: BTreeMap<String, Value>) -> ReplayDocument {
        let records = self
            .state()
            .records
            .iter()
            .map(|r| {
                let request = self.redactor.redact_json(&r.request);
                ReplayRecord {
                    key: request_key(&r.kind, &request),
                    request,
                    response: redact_response(&self.redactor, &r.kind, &r.response),
                    ..r.clone()
                }
            })
            .collect();
        ReplayDocument {
            format_version: REPLAY_FORMAT_VERSION,
            mode: Mode::Record,
            fallback: self.fallback,
            metadata,
            records,
        }
    }

    /// Record a call: `request` as [`tool_request`] or [`model_request`]
    /// built it, keyed once redacted.
    fn push(&self, kind: &str, request: &Value, response: &Value, run: &RunContext) {
        let request = self.redactor.redact_json(request);
        let mut st = self.state();
        let sequence = st.records.len() as u64 + 1;
        st.records.push(ReplayRecord {
            kind: kind.to_owned(),
            sequence,
            key: request_key(kind, &request),
            request,
            response: redact_response(&self.redactor, kind, response),
            generation_id: run.generation.id.to_string(),
            run_id: run.run_id.clone(),
        });
    }

    /// The next recorded response for `(kind, key)`, `Err(reason)` naming
    /// `missing` or `exhausted`. `request` is the live request, redacted
    /// with what the redactor knows now; see [`Self::learned_match`] for
    /// what happens when no record has its key.
    fn next(&self, kind: &str, key: &str, request: &Value) -> Result<Value, &'static str> {
        let mut st = self.state();
        let cursor = st
            .cursors
            .get(&(kind.to_owned(), key.to_owned()))
            .copied()
            .unwrap_or(0);
        let matching: Vec<&ReplayRecord> = st
            .records
            .iter()
            .filter(|r| r.kind == kind && r.key == key)
            .collect();
        if matching.is_empty() {
            return self.learned_match(&mut st, kind, request).ok_or("missing");
        }
        let Some(found) = matching.get(cursor).map(|r| r.response.clone()) else {
            return Err("exhausted");
        };
        st.cursors
            .insert((kind.to_owned(), key.to_owned()), cursor + 1);
        Ok(found)
    }

    /// A request whose value the recorded run learned only later: the
    /// recording, redacted when the run ended, shows `<redacted>` where
    /// this request still holds the value (the `--input` named a token a
    /// tool then looked up, say), and a replay, which runs no tool, never
    /// learns it. The first unconsumed record of `kind` that is the next of
    /// its key and reads like `request` with each `<redacted>` standing
    /// for some text answers it, and that text is learned as the secret it
    /// was in the recorded run: from here on it is redacted from every
    /// output, and the keys of later calls match as recorded.
    fn learned_match(&self, st: &mut State, kind: &str, request: &Value) -> Option<Value> {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        let mut found = None;
        for r in st.records.iter().filter(|r| r.kind == kind) {
            let index = seen.entry(r.key.as_str()).or_insert(0);
            let position = *index;
            *index += 1;
            let consumed = st
                .cursors
                .get(&(kind.to_owned(), r.key.clone()))
                .copied()
                .unwrap_or(0);
            if position != consumed {
                continue;
            }
            let mut hidden = Vec::new();
            if masked_match(&r.request, request, &mut hidden) && !hidden.is_empty() {
                found = Some((r.key.clone(), r.response.clone(), hidden));
                break;
            }
        }
        let (key, response, hidden) = found?;
        for value in hidden {
            self.redactor
                .learn(&crate::engine::secret::SecretValue::new(value));
        }
        *st.cursors.entry((kind.to_owned(), key)).or_insert(0) += 1;
        Some(response)
    }

    fn signal(&self, name: &str, kind: &str, tool: Option<&str>, key: &str, run: &RunContext) {
        let mut attrs = attributes([
            ("kind", AttrValue::from(kind)),
            ("key", AttrValue::from(key)),
        ]);
        if let Some(t) = tool {
            attrs.insert("tool".into(), AttrValue::from(t));
        }
        if name == "replay.hit" {
            attrs.insert("run_id".into(), AttrValue::from(run.run_id.clone()));
            attrs.insert(
                "generation_id".into(),
                AttrValue::from(run.generation.id.to_string()),
            );
        }
        if name == "replay.miss" {
            attrs.insert(
                "fallback".into(),
                AttrValue::from(match self.fallback {
                    Fallback::Error => "error",
                    Fallback::Live => "live",
                }),
            );
        }
        let _ = self.telemetry.event(name, &attrs);
    }

    /// Look a tool call up (replay mode), after policy, approval and budget.
    pub fn tool_lookup(&self, name: &str, args: &Value, run: &RunContext) -> ToolLookup {
        if self.mode != Mode::Replay {
            return ToolLookup::Live;
        }
        let request = self.redactor.redact_json(&tool_request(name, args));
        let key = request_key("tool", &request);
        match self.next("tool", &key, &request) {
            Ok(v) => {
                self.signal("replay.hit", "tool", Some(name), &key, run);
                let status = match v.get("status").and_then(Value::as_str) {
                    Some("error") => ToolStatus::Error,
                    Some("timeout") => ToolStatus::Timeout,
                    _ => ToolStatus::Ok,
                };
                ToolLookup::Hit(RecordedTool {
                    status,
                    content: v.get("content").cloned().unwrap_or(Value::Null),
                    artifact: v.get("artifact").cloned().filter(|a| !a.is_null()),
                    error: v.get("error").and_then(Value::as_str).map(str::to_owned),
                })
            }
            Err(reason) => {
                let event = if reason == "exhausted" {
                    "replay.exhausted"
                } else {
                    "replay.miss"
                };
                self.signal(event, "tool", Some(name), &key, run);
                match self.fallback {
                    Fallback::Live => ToolLookup::Live,
                    Fallback::Error => ToolLookup::Miss(format!(
                        "replay {reason}: no recorded answer for the tool call `{name}` (key {key}); record the run again or pass --replay-fallback live"
                    )),
                }
            }
        }
    }

    /// Record a tool call that ran (record mode).
    pub fn tool_record(&self, name: &str, args: &Value, recorded: &RecordedTool, run: &RunContext) {
        if self.mode != Mode::Record {
            return;
        }
        let status = match recorded.status {
            ToolStatus::Ok => "ok",
            ToolStatus::Error => "error",
            ToolStatus::Timeout => "timeout",
        };
        self.push(
            "tool",
            &tool_request(name, args),
            &json!({ "status": status, "content": recorded.content, "artifact": recorded.artifact, "error": recorded.error }),
            run,
        );
    }
}

#[async_trait::async_trait]
impl super::agent::ModelBoundary for Replay {
    async fn complete(
        &self,
        model: &dyn ChatModel,
        request: &ModelRequest,
        run: &RunContext,
    ) -> Result<(ModelResponse, bool), ModelError> {
        if self.mode == Mode::Replay {
            let live = self
                .redactor
                .redact_json(&model_request(model.model_name(), request));
            let key = request_key("model", &live);
            match self.next("model", &key, &live) {
                Ok(v) => {
                    self.signal("replay.hit", "model", None, &key, run);
                    return serde_json::from_value::<ModelResponse>(v)
                        .map(|r| (r, true))
                        .map_err(|e| {
                            ModelError::Protocol(format!("a recorded model answer: {e}"))
                        });
                }
                Err(reason) => {
                    let event = if reason == "exhausted" {
                        "replay.exhausted"
                    } else {
                        "replay.miss"
                    };
                    self.signal(event, "model", None, &key, run);
                    if self.fallback == Fallback::Error {
                        return Err(ModelError::Replay(format!(
                            "replay {reason}: no recorded answer for a call of the model `{}` with {} messages (key {key}); record the run again or pass --replay-fallback live",
                            model.model_name(),
                            request.messages.len()
                        )));
                    }
                    return model.complete(request).await.map(|r| (r, false));
                }
            }
        }
        let response = model.complete(request).await?;
        self.push(
            "model",
            &model_request(model.model_name(), request),
            &serde_json::to_value(&response).unwrap_or(Value::Null),
            run,
        );
        Ok((response, false))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;
    use crate::engine::redact::REDACTED;
    use crate::engine::secret::SecretValue;
    use crate::engine::telemetry::NoopTelemetry;
    use crate::runtime::agent::ModelBoundary;
    use crate::runtime::model::{ChatMessage, ModelOptions, ModelToolCall, Role};
    use crate::runtime::tool::Cancellation;

    #[test]
    fn masked_text_captures_what_each_marker_hides() {
        let mut hidden = Vec::new();
        assert!(masked_text(
            "a <redacted> b <redacted>",
            "a xyz b w",
            &mut hidden
        ));
        assert_eq!(hidden, ["xyz", "w"]);
        let mut none = Vec::new();
        for (recorded, live) in [
            ("a <redacted> b", "a  b"),
            ("a <redacted> b", "x abc b"),
            ("a <redacted> b", "a abc c"),
            ("plain", "other"),
        ] {
            assert!(
                !masked_text(recorded, live, &mut none),
                "{recorded} / {live}"
            );
        }
        assert!(none.is_empty());
        let mut hidden = Vec::new();
        assert!(masked_match(
            &json!({ "m": ["<redacted>", { "n": "<redacted>" }] }),
            &json!({ "m": ["tok", { "n": 123456 }] }),
            &mut hidden
        ));
        assert_eq!(hidden, ["tok", "123456"]);
        assert!(!masked_match(
            &json!({ "a": 1 }),
            &json!({ "a": 1, "b": 2 }),
            &mut hidden
        ));
    }

    const SECRET: &str = "sk-live-4f9c2a";
    const OTHER_SECRET: &str = "sk-live-7d1e0b";

    fn redactor(values: &[&str]) -> Redactor {
        let r = Redactor::new();
        for v in values {
            r.learn(&SecretValue::new(*v));
        }
        r
    }

    /// A conversation in which the tool `reveal` answered `echoed`.
    fn conversation(echoed: &str) -> Vec<ChatMessage> {
        let mut assistant = ChatMessage::text(Role::Assistant, "");
        assistant.tool_calls = vec![ModelToolCall {
            id: "call_1".into(),
            name: "reveal".into(),
            arguments: json!({ "name": "api.token" }),
            malformed: None,
        }];
        vec![
            ChatMessage::text(Role::System, "You are terse."),
            ChatMessage::text(Role::User, "Read the token."),
            assistant,
            ChatMessage::tool("call_1", "reveal", json!({ "echo": echoed }).to_string()),
        ]
    }

    fn request(messages: &[ChatMessage]) -> ModelRequest<'_> {
        ModelRequest {
            messages,
            tools: &[],
            options: ModelOptions {
                temperature: Some(0.2),
                max_tokens: Some(256),
            },
            cancel: Cancellation::new(),
            cursors: crate::runtime::model::TurnCursors::new(),
            deltas: None,
            run_id: None,
        }
    }

    /// The key earlier versions wrote: the hash of the raw request.
    fn unredacted_model_key(model: &str, messages: &[ChatMessage]) -> String {
        model_key(&Redactor::new(), model, &request(messages))
    }

    #[test]
    fn requests_differing_only_in_a_secret_share_a_key_and_others_do_not() {
        let r = redactor(&[SECRET, OTHER_SECRET]);
        let (a, b) = (conversation(SECRET), conversation(OTHER_SECRET));
        let replayed = conversation(REDACTED);
        let key = |m: &[ChatMessage]| model_key(&r, "gpt-test", &request(m));
        // Two secret values, and the redacted answer a replay reads back.
        assert_eq!(key(&a), key(&b));
        assert_eq!(key(&a), key(&replayed));
        // The raw hash is not what is keyed (it is the guessing oracle).
        assert_ne!(key(&a), unredacted_model_key("gpt-test", &a));
        assert_eq!(key(&a), unredacted_model_key("gpt-test", &replayed));
        // Non-secret content still tells calls apart.
        let mut other_input = conversation(SECRET);
        other_input[1].content = "Read the other token.".into();
        assert_ne!(key(&a), key(&other_input));
        assert_ne!(key(&a), model_key(&r, "gpt-other", &request(&a)));
        let mut other_options = request(&a);
        other_options.options.max_tokens = Some(512);
        assert_ne!(key(&a), model_key(&r, "gpt-test", &other_options));

        // Tool calls: a known value, the value under a sensitive key.
        let tool = |args: Value| tool_key(&r, "login", &args);
        assert_eq!(
            tool(json!({ "user": "ann", "header": format!("Bearer {SECRET}") })),
            tool(json!({ "user": "ann", "header": format!("Bearer {OTHER_SECRET}") })),
        );
        assert_eq!(
            tool(json!({ "user": "ann", "password": "hunter2" })),
            tool(json!({ "user": "ann", "password": "correct horse" })),
        );
        assert_eq!(
            tool(json!({ "user": "ann", "password": "hunter2" })),
            tool(json!({ "user": "ann", "password": REDACTED })),
        );
        assert_ne!(
            tool(json!({ "user": "ann", "password": "hunter2" })),
            tool(json!({ "user": "bob", "password": "hunter2" })),
        );
        assert_ne!(
            tool(json!({ "user": "ann" })),
            tool_key(&r, "logout", &json!({ "user": "ann" }))
        );
    }

    #[test]
    fn where_nothing_is_redacted_the_key_is_the_one_earlier_versions_wrote() {
        // Computed by the previous scheme (`stable_hash` of the raw parts).
        let messages = [
            ChatMessage::text(Role::System, "You are terse."),
            ChatMessage::text(Role::User, "What is the weather in Lyon?"),
        ];
        let r = redactor(&[SECRET]);
        assert_eq!(
            model_key(&r, "scripted", &request(&messages)),
            "d2509c1521a0e21d2046a27b693c291c"
        );
        assert_eq!(
            tool_key(&r, "weather", &json!({ "city": "Lyon", "days": 3 })),
            "7b139b1ea5e860bcce46b581c57e421a"
        );
        // The field names of a request are not sensitive: a conversation
        // with tool calls keys on its raw parts when it holds no secret.
        let messages = conversation("sunny");
        let raw = key(&Canon::List(vec![
            Canon::from("model"),
            Canon::from("scripted"),
            Canon::from_json(&serde_json::to_value(&messages[..]).unwrap()),
            Canon::from_json(&json!({ "temperature": 0.2, "max_tokens": 256 })),
        ]));
        assert_eq!(model_key(&r, "scripted", &request(&messages)), raw);
    }

    /// A model answering every call with `done`.
    fn done() -> crate::plugins::scripted::ScriptedModel {
        let turn = crate::plugins::scripted::Turn {
            text: "done".into(),
            ..Default::default()
        };
        crate::plugins::scripted::ScriptedModel::new("gpt-test", vec![turn], true)
    }

    async fn run_context() -> (RunContext, crate::runtime::Lease) {
        let harness = crate::runtime::Harness::new(
            crate::runtime::Catalog::new(),
            crate::runtime::HarnessOptions::default(),
        );
        harness
            .reconcile(
                crate::engine::build::CompositionBuilder::new()
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        let lease = harness.acquire().unwrap();
        let run = RunContext {
            run_id: "run_test".into(),
            generation: Arc::clone(lease.generation()),
            agent: None,
            scope: "/".into(),
            budget: None,
            extra_tools: None,
        };
        (run, lease)
    }

    #[tokio::test]
    async fn a_recording_hashes_no_secret_and_replays_after_a_tool_returned_one() {
        let (run, _lease) = run_context().await;
        let r = Redactor::new();
        let rec = Replay::recording(r.clone(), Arc::new(NoopTelemetry::default()));
        // The prompt holds a value the run learns only later.
        let early = [ChatMessage::text(Role::User, format!("use {OTHER_SECRET}"))];
        rec.complete(&done(), &request(&early), &run).await.unwrap();
        // The tool looks the secret up (teaching the redactor) and echoes it.
        r.learn(&SecretValue::new(SECRET));
        r.learn(&SecretValue::new(OTHER_SECRET));
        rec.tool_record(
            "reveal",
            &json!({ "name": "api.token" }),
            &RecordedTool {
                status: ToolStatus::Ok,
                content: json!({ "echo": SECRET }),
                artifact: None,
                error: None,
            },
            &run,
        );
        // The model reads the raw answer.
        let live = conversation(SECRET);
        rec.complete(&done(), &request(&live), &run).await.unwrap();

        let doc = rec.document(BTreeMap::new());
        let text = serde_json::to_string(&doc).unwrap();
        assert!(
            !text.contains(SECRET) && !text.contains(OTHER_SECRET),
            "{text}"
        );
        let keys: Vec<&str> = doc.records.iter().map(|r| r.key.as_str()).collect();
        for raw in [
            unredacted_model_key("gpt-test", &early),
            unredacted_model_key("gpt-test", &live),
        ] {
            assert!(!keys.contains(&raw.as_str()), "{keys:?} has {raw}");
        }
        // Each key is the hash of the request as the record shows it, even
        // for the call made before the run knew its prompt held a secret.
        let redacted_early = [ChatMessage::text(Role::User, format!("use {REDACTED}"))];
        assert_eq!(
            keys[0],
            unredacted_model_key("gpt-test", &redacted_early).as_str()
        );
        assert_eq!(doc.records[2].response["message"]["content"], "done");

        // A replay that never runs the tool (its redactor never learns the
        // value) reads the redacted answer back and still matches.
        let doc = ReplayDocument::parse(&text).unwrap();
        let replay = Replay::replaying(
            doc,
            Fallback::Error,
            Redactor::new(),
            Arc::new(NoopTelemetry::default()),
        );
        let ToolLookup::Hit(answer) =
            replay.tool_lookup("reveal", &json!({ "name": "api.token" }), &run)
        else {
            panic!("the tool call missed");
        };
        assert_eq!(answer.content, json!({ "echo": REDACTED }));
        let replayed = conversation(REDACTED);
        let (answer, hit) = replay
            .complete(&done(), &request(&replayed), &run)
            .await
            .unwrap();
        assert!(hit);
        assert_eq!(answer.message.content, "done");
    }
}
