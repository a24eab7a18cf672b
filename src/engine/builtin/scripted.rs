//! `scripted`: a deterministic model whose turns come from the composition.
//!
//! It is the embedded default that makes every example and test run
//! offline. Each model call consumes the next turn; a turn answers with
//! text, tool calls (possibly malformed, to exercise the loop's recovery),
//! usage, a finish reason, or fails (`error`) or refuses (`refusal`). When
//! the turns are used up the call fails with a clear error, unless
//! `repeat_last = true`. Each top-level run starts at turn 1 (a server
//! runs many); a turn with `when = { input = "…" }` or `{ regex = "…" }`
//! answers only that input, so one model answers different inputs
//! deterministically.
//!
//! ```toml
//! [entries.model]
//! plugin = "scripted"
//! config.model = "demo"
//! [[entries.model.config.turns]]
//! tool_calls = [{ name = "word_count", args = { text = "one two" } }]
//! usage = { input_tokens = 40, output_tokens = 12 }
//! [[entries.model.config.turns]]
//! text = "It has two words."
//! ```

use serde_json::{Value, json};

use super::{BuiltinKind, ConfigProblem, providing};
use crate::engine::model::{ConfigValue, Manifest};

/// The kind.
pub const KIND: BuiltinKind = BuiltinKind {
    name: "scripted",
    summary: "a deterministic model answering from scripted turns (offline)",
    config_schema,
    manifest,
};

/// The schema of one turn.
fn turn_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "text": { "type": "string", "description": "Assistant text of the turn." },
            "tool_calls": {
                "type": "array",
                "description": "Tool calls of the turn.",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["name"],
                    "properties": {
                        "id": { "type": "string", "description": "Call id (default `call_<turn>_<n>`)." },
                        "name": { "type": "string" },
                        "args": { "description": "Arguments (any JSON value; default `{}`)." },
                        "raw_args": { "type": "string", "description": "Arguments as raw text, e.g. malformed JSON." }
                    }
                }
            },
            "usage": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "input_tokens": { "type": "integer", "minimum": 0 },
                    "output_tokens": { "type": "integer", "minimum": 0 }
                }
            },
            "finish_reason": { "type": "string" },
            "cost": { "type": "number", "minimum": 0, "description": "Estimated cost of the turn." },
            "error": { "type": "string", "description": "The call fails with this message." },
            "refusal": { "type": "string", "description": "The model refuses with this message." },
            "delay_ms": { "type": "integer", "minimum": 0, "description": "Wait before answering." },
            "when": {
                "description": "Answer only when the last user message is `input`, or `regex` finds a match in it.",
                "type": "object",
                "additionalProperties": false,
                "minProperties": 1,
                "maxProperties": 1,
                "properties": {
                    "input": { "type": "string" },
                    "regex": { "type": "string" }
                }
            }
        }
    })
}

/// The `config` schema.
pub fn config_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "scripted model",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "model": { "type": "string", "description": "Model name in signals and replay keys (default `scripted`)." },
            "turns": { "type": "array", "items": turn_schema(), "description": "Turns, in order." },
            "turns_file": { "type": "string", "description": "A JSON-lines file of turns, relative to the composition; used after `turns`." },
            "repeat_last": { "type": "boolean", "description": "Answer every call after the last turn with the last turn." }
        }
    })
}

fn manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    if let Some(ConfigValue::Array(turns)) = config.get("turns") {
        let mut problems = Vec::new();
        for (i, turn) in turns.iter().enumerate() {
            if let Some(ConfigValue::Str(pattern)) = turn.get("when").and_then(|w| w.get("regex"))
                && let Err(e) = regex::RegexBuilder::new(pattern)
                    .size_limit(1 << 20)
                    .build()
            {
                problems.push(ConfigProblem::new(
                    format!("/turns/{i}/when/regex"),
                    format!("not a regular expression: {e}"),
                ));
            }
            if let Some(ConfigValue::Array(calls)) = turn.get("tool_calls") {
                for (j, call) in calls.iter().enumerate() {
                    if call.get("args").is_some() && call.get("raw_args").is_some() {
                        problems.push(ConfigProblem::new(
                            format!("/turns/{i}/tool_calls/{j}"),
                            "give `args` or `raw_args`, not both",
                        ));
                    }
                }
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
    }
    Ok(providing("scripted", "1.0.0", "model", "1.0.0"))
}
