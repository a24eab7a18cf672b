//! Built-in plugin kinds: implementation names chassis itself provides.
//!
//! An entry may name a built-in kind directly (`plugin = "scripted"`)
//! without a `[plugins.…]` table: the kind publishes a JSON Schema for its
//! `config` (the Oracle runtime's `configSchema` channel) and derives its
//! manifest from that configuration — what it provides, the tools it
//! declares, the permissions they need — so the pure commands resolve,
//! snapshot and hash it like any declared plugin. The behaviour behind a
//! kind (spawning processes, calling HTTP endpoints) lives in adapters at
//! the edge (`crate::plugins`); this module is pure.
//!
//! A `[plugins.NAME]` table in the composition wins over a built-in of the
//! same name.

pub mod command;
pub mod hooks;
pub mod mcp;
pub mod openai;
pub mod scripted;
pub mod shared;
pub mod system;

use serde_json::Value;

use crate::engine::model::{ConfigValue, Manifest};
use crate::engine::schema_check;
use crate::engine::schema_check::Instance;

/// The strings of a JSON array in a built-in's configuration (other items
/// are skipped; the config schema has already reported them).
pub fn string_array<I: Instance>(value: Option<&I>) -> Vec<String> {
    value
        .and_then(I::as_array)
        .map(|a| a.iter().filter_map(I::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// One problem with a built-in kind's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    /// JSON Pointer into the entry's `config` (`""` is the whole table).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl ConfigProblem {
    /// A problem at `pointer`.
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// A built-in kind.
#[derive(Clone, Copy)]
pub struct BuiltinKind {
    /// The name entries use (`plugin = "scripted"`).
    pub name: &'static str,
    /// One line for `--help` and listings.
    pub summary: &'static str,
    /// JSON Schema (draft-07) of the entry's `config`.
    pub config_schema: fn() -> Value,
    /// The manifest for an entry with this configuration (already valid
    /// against the schema); problems the schema cannot express are returned
    /// with their pointer.
    pub manifest: fn(&ConfigValue) -> Result<Manifest, Vec<ConfigProblem>>,
}

impl std::fmt::Debug for BuiltinKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinKind")
            .field("name", &self.name)
            .finish()
    }
}

/// Every built-in kind, sorted by name.
pub fn kinds() -> &'static [BuiltinKind] {
    static KINDS: &[BuiltinKind] = &[
        hooks::AUDIT,
        command::KIND,
        hooks::DENY,
        hooks::HOOK_COMMAND,
        mcp::KIND,
        openai::KIND,
        system::POLICY,
        scripted::KIND,
        system::SECRETS_ENV,
        shared::KIND,
    ];
    KINDS
}

/// The built-in kind called `name`.
pub fn find(name: &str) -> Option<&'static BuiltinKind> {
    kinds().iter().find(|k| k.name == name)
}

/// The configuration schema of the kind called `name`, built once per
/// process: a composition of 100,000 built-in entries checks each one
/// against its kind's schema, which took longer to build than to check.
pub fn config_schema_of(name: &str) -> Option<&'static Value> {
    static SCHEMAS: std::sync::OnceLock<Vec<(&'static str, Value)>> = std::sync::OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            kinds()
                .iter()
                .map(|k| (k.name, (k.config_schema)()))
                .collect()
        })
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, schema)| schema)
}

impl BuiltinKind {
    /// This kind's configuration schema (built once per process: see
    /// [`config_schema_of`]).
    pub fn schema(&self) -> std::borrow::Cow<'static, Value> {
        config_schema_of(self.name).map_or_else(
            || std::borrow::Cow::Owned((self.config_schema)()),
            std::borrow::Cow::Borrowed,
        )
    }

    /// Check `config` against the schema, then derive the manifest: every
    /// problem, or the manifest (with `kind` set to this kind's name).
    pub fn derive(&self, config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
        let problems: Vec<ConfigProblem> = schema_check::check_instance(&self.schema(), config)
            .into_iter()
            .map(|v| ConfigProblem::new(v.pointer, v.message))
            .collect();
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut manifest = (self.manifest)(config)?;
        manifest.kind = Some(self.name.to_owned());
        Ok(manifest)
    }
}

/// A manifest `name@version` that provides `capability` at `contract`
/// (what model providers and other single-capability kinds declare).
pub fn providing(name: &str, version: &str, capability: &str, contract: &str) -> Manifest {
    use crate::engine::model::{CapabilityName, Provided};
    use crate::engine::version::Version;
    let version = Version::parse(version).expect("built-in versions are valid");
    let mut manifest = Manifest::new(name, version);
    let capability = CapabilityName::new(capability).expect("built-in capability names are valid");
    let contract = Version::parse(contract).expect("built-in contract versions are valid");
    manifest.provides.insert(
        capability.clone(),
        Provided {
            capability,
            versions: vec![contract],
            origin: None,
        },
    );
    manifest
}

/// The configuration schemas of every built-in kind, by name (for
/// `chassis schema`).
pub fn config_schemas() -> serde_json::Map<String, Value> {
    kinds()
        .iter()
        .map(|k| (k.name.to_owned(), (k.config_schema)()))
        .collect()
}

/// A configuration table from JSON, for tests (TOML has no null).
#[cfg(test)]
pub(crate) fn test_config(json: Value) -> ConfigValue {
    match json {
        Value::Bool(b) => ConfigValue::Bool(b),
        Value::Number(n) => n.as_i64().map_or_else(
            || ConfigValue::Float(n.as_f64().unwrap_or(0.0)),
            ConfigValue::Int,
        ),
        Value::String(s) => ConfigValue::Str(s),
        Value::Array(a) => ConfigValue::Array(a.into_iter().map(test_config).collect()),
        Value::Object(m) => {
            ConfigValue::Table(m.into_iter().map(|(k, v)| (k, test_config(v))).collect())
        }
        Value::Null => ConfigValue::Table(Default::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_sorted_and_unique() {
        let names: Vec<&str> = kinds().iter().map(|k| k.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
    }

    #[test]
    fn every_schema_is_an_object_schema() {
        for k in kinds() {
            let s = (k.config_schema)();
            assert_eq!(s["type"], "object", "{}", k.name);
            assert_eq!(s["additionalProperties"], false, "{}", k.name);
        }
    }
}
