//! `shared-state`: read-only values other plugins read through a
//! capability (the Oracle runtime's `getSharedState`).
//!
//! ```toml
//! [entries.settings]
//! plugin = "shared-state"
//! config = { capability = "settings", version = "1.2.0", values = { region = "eu-west-1", max_results = 20 } }
//! ```
//!
//! A consumer declares `requires = { settings = ">=1" }` and reads the
//! values with `ctx.require::<SharedState>("settings")`. The values are part
//! of the entry's configuration, so they enter `config_hash` and a change
//! rebuilds the provider and rewires its consumers; they are never secret
//! (secret references are refused: a secret is read with `ctx.secret`).

use serde_json::{Value, json};

use super::{BuiltinKind, ConfigProblem, providing};
use crate::engine::model::{CapabilityName, ConfigValue, Manifest};
use crate::engine::version::Version;

/// The kind.
pub const KIND: BuiltinKind = BuiltinKind {
    name: "shared-state",
    summary: "read-only values other plugins read through a capability",
    config_schema,
    manifest,
};

/// The `config` schema.
pub fn config_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "shared state",
        "type": "object",
        "additionalProperties": false,
        "required": ["capability", "values"],
        "properties": {
            "capability": { "type": "string", "description": "The capability the values are provided as." },
            "version": { "type": "string", "description": "The provided version (default 1.0.0)." },
            "values": { "type": "object", "description": "The read-only values (a table)." }
        }
    })
}

fn manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    let mut problems = Vec::new();
    let capability = match config.get("capability") {
        Some(ConfigValue::Str(c)) => match CapabilityName::new(c) {
            Ok(_) => c.clone(),
            Err(e) => {
                problems.push(ConfigProblem::new("/capability", e.message));
                String::new()
            }
        },
        _ => String::new(),
    };
    let version = match config.get("version") {
        Some(ConfigValue::Str(v)) => match Version::parse(v) {
            Ok(_) => v.clone(),
            Err(e) => {
                problems.push(ConfigProblem::new("/version", e.to_string()));
                String::new()
            }
        },
        _ => "1.0.0".to_owned(),
    };
    if config
        .get("values")
        .is_some_and(|v| !v.secret_refs().is_empty())
    {
        problems.push(ConfigProblem::new(
            "/values",
            "shared state is readable by every consumer: it cannot hold secret references (read secrets with `ctx.secret`)",
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(providing("shared-state", "1.0.0", &capability, &version))
}
