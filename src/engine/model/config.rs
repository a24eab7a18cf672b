//! Plugin configuration values, including references to secrets.
//!
//! A secret reference (`{ secret = "OPENAI_API_KEY" }` in TOML) is kept as a
//! name only: the pure commands never resolve it, and hashing renders it as
//! `<redacted>`, exactly as a resolved secret value would be scrubbed.

use std::collections::BTreeMap;

use crate::engine::canonical::Canon;
use crate::engine::redact::REDACTED;

/// A reference to a secret by name; the value is resolved only at run time.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SecretRef {
    /// The secret's name, e.g. `OPENAI_API_KEY`.
    pub name: String,
}

/// A configuration value as declared.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigValue {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A finite float.
    Float(f64),
    /// A string.
    Str(String),
    /// A TOML date-time, kept as its text.
    Datetime(String),
    /// An array.
    Array(Vec<ConfigValue>),
    /// A table with sorted keys.
    Table(BTreeMap<String, ConfigValue>),
    /// A secret reference.
    Secret(SecretRef),
}

impl ConfigValue {
    /// An empty table.
    pub fn empty_table() -> Self {
        Self::Table(BTreeMap::new())
    }

    /// The value for hashing, before key-name redaction: secret references
    /// become `<redacted>` (never their name, never a value).
    pub fn to_canon(&self) -> Canon {
        match self {
            Self::Bool(b) => Canon::Bool(*b),
            Self::Int(i) => Canon::Int(i128::from(*i)),
            Self::Float(f) => Canon::Float(*f),
            Self::Str(s) | Self::Datetime(s) => Canon::Str(s.clone()),
            Self::Array(items) => Canon::List(items.iter().map(Self::to_canon).collect()),
            Self::Table(map) => {
                Canon::Map(map.iter().map(|(k, v)| (k.clone(), v.to_canon())).collect())
            }
            Self::Secret(_) => Canon::Str(REDACTED.to_owned()),
        }
    }

    /// The value for identity comparison (never emitted): like
    /// [`ConfigValue::to_canon`], but a secret reference keeps its name, so
    /// pointing at another secret changes the identity. Resolved secret
    /// values enter identity as a keyed fingerprint, never as text.
    pub fn to_canon_unredacted(&self) -> Canon {
        match self {
            Self::Array(items) => {
                Canon::List(items.iter().map(Self::to_canon_unredacted).collect())
            }
            Self::Table(map) => Canon::Map(
                map.iter()
                    .map(|(k, v)| (k.clone(), v.to_canon_unredacted()))
                    .collect(),
            ),
            Self::Secret(s) => Canon::map([("secret", Canon::Str(s.name.clone()))]),
            other => other.to_canon(),
        }
    }

    /// Every secret reference in this value, depth first in key order.
    pub fn secret_refs(&self) -> Vec<&SecretRef> {
        let mut out = Vec::new();
        self.collect_secret_refs(&mut out);
        out
    }

    /// Whether the value references a secret anywhere (without collecting
    /// the references).
    pub fn has_secret_refs(&self) -> bool {
        match self {
            Self::Secret(_) => true,
            Self::Array(items) => items.iter().any(Self::has_secret_refs),
            Self::Table(map) => map.values().any(Self::has_secret_refs),
            _ => false,
        }
    }

    fn collect_secret_refs<'a>(&'a self, out: &mut Vec<&'a SecretRef>) {
        match self {
            Self::Secret(s) => out.push(s),
            Self::Array(items) => items.iter().for_each(|v| v.collect_secret_refs(out)),
            Self::Table(map) => map.values().for_each(|v| v.collect_secret_refs(out)),
            _ => {}
        }
    }

    /// The value as JSON, secret references as `{"secret": NAME}` (never a
    /// value: they are not resolved here).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Bool(b) => (*b).into(),
            Self::Int(i) => (*i).into(),
            Self::Float(f) => serde_json::Number::from_f64(*f)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Self::Str(s) | Self::Datetime(s) => s.clone().into(),
            Self::Array(a) => a.iter().map(Self::to_json).collect(),
            Self::Table(m) => m
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect::<serde_json::Map<_, _>>()
                .into(),
            Self::Secret(s) => serde_json::json!({ "secret": s.name }),
        }
    }

    /// The value at `key` of a table value.
    pub fn get(&self, key: &str) -> Option<&ConfigValue> {
        match self {
            Self::Table(map) => map.get(key),
            _ => None,
        }
    }

    /// Keys of a table value, in order; empty for non-tables.
    pub fn keys(&self) -> Vec<&str> {
        match self {
            Self::Table(map) => map.keys().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }
}
