//! Record and replay of a run's boundaries.
//!
//! `--record FILE` writes every model call and tool call of a run
//! (redacted) with the reference's key scheme; `--replay FILE` answers those
//! boundaries from the file. Policy, approval and budget still run on a
//! replayed tool call — a recording answers what a tool returned, never
//! whether it was allowed to ask — and a replayed model call still crosses
//! its hooks and budget. Keys are the first 32 hex digits of the canonical
//! hash of `["tool", name, args after hooks]` or `["model", model name,
//! messages, options]`; each `(kind, key)` has a cursor in recording order,
//! so a repeated identical call gets the next recorded answer.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::executor::{RunContext, ToolStatus};
use super::model::{ChatModel, ModelError, ModelRequest, ModelResponse};
use crate::engine::canonical::{Canon, stable_hash};
use crate::engine::secret::Redactor;
use crate::engine::telemetry::{AttrValue, Telemetry, attributes};

/// The replay document format version.
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

/// The boundary key of a tool call.
pub fn tool_key(name: &str, args: &Value) -> String {
    key(&Canon::List(vec![
        Canon::from("tool"),
        Canon::from(name),
        Canon::from_json(args),
    ]))
}

/// The boundary key of a model call.
pub fn model_key(model: &str, request: &ModelRequest) -> String {
    let messages = serde_json::to_value(request.messages).unwrap_or(Value::Null);
    let options = serde_json::to_value(&request.options).unwrap_or(Value::Null);
    key(&Canon::List(vec![
        Canon::from("model"),
        Canon::from(model),
        Canon::from_json(&messages),
        Canon::from_json(&options),
    ]))
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
    pub fn document(&self, metadata: BTreeMap<String, Value>) -> ReplayDocument {
        ReplayDocument {
            format_version: REPLAY_FORMAT_VERSION,
            mode: Mode::Record,
            fallback: self.fallback,
            metadata,
            records: self.state().records.clone(),
        }
    }

    fn push(&self, kind: &str, key: String, request: Value, response: Value, run: &RunContext) {
        let mut st = self.state();
        let sequence = st.records.len() as u64 + 1;
        st.records.push(ReplayRecord {
            kind: kind.to_owned(),
            sequence,
            key,
            request: self.redactor.redact_json(&request),
            response: self.redactor.redact_json(&response),
            generation_id: run.generation.id.to_string(),
            run_id: run.run_id.clone(),
        });
    }

    /// The next recorded response for `(kind, key)`: `Ok(None)` when there
    /// is none, `Err(reason)` naming `missing` or `exhausted`.
    fn next(&self, kind: &str, key: &str) -> Result<Value, &'static str> {
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
            return Err("missing");
        }
        let Some(found) = matching.get(cursor).map(|r| r.response.clone()) else {
            return Err("exhausted");
        };
        st.cursors
            .insert((kind.to_owned(), key.to_owned()), cursor + 1);
        Ok(found)
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
        let key = tool_key(name, args);
        match self.next("tool", &key) {
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
            tool_key(name, args),
            json!({ "tool": name, "args": args }),
            json!({ "status": status, "content": recorded.content, "artifact": recorded.artifact, "error": recorded.error }),
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
        let key = model_key(model.model_name(), request);
        if self.mode == Mode::Replay {
            match self.next("model", &key) {
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
        let messages = serde_json::to_value(request.messages).unwrap_or(Value::Null);
        self.push(
            "model",
            key,
            json!({ "model": model.model_name(), "messages": messages, "options": request.options }),
            serde_json::to_value(&response).unwrap_or(Value::Null),
            run,
        );
        Ok((response, false))
    }
}
