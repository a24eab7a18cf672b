//! Plugin configuration values, including references to secrets.
//!
//! A secret reference (`{ secret = "OPENAI_API_KEY" }` in TOML) is kept as a
//! name only: the pure commands never resolve it, and hashing renders it as
//! `<redacted>`, exactly as a resolved secret value would be scrubbed.

use std::collections::BTreeMap;

use crate::engine::canonical::{
    Canon, CanonError, write_array, write_float, write_json_string, write_object,
};
use crate::engine::redact::{REDACTED, is_secret_key_for_hash};

/// A reference to a secret by name; the value is resolved only at run time.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SecretRef {
    /// The secret's name, e.g. `OPENAI_API_KEY`.
    pub name: String,
}

/// What a value under a secret key hashes as: a secret reference writes as
/// `<redacted>`, whatever it names.
static REDACTED_VALUE: ConfigValue = ConfigValue::Secret(SecretRef {
    name: String::new(),
});

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

    /// Write a scalar as canonical JSON (the same redacted or not): `false`,
    /// with nothing written, for a secret reference, an array or a table.
    fn write_scalar<W: std::fmt::Write>(&self, out: &mut W) -> Result<bool, CanonError> {
        match self {
            Self::Bool(true) => out.write_str("true")?,
            Self::Bool(false) => out.write_str("false")?,
            Self::Int(i) => write!(out, "{i}")?,
            Self::Float(f) => write_float(*f, out)?,
            Self::Str(s) | Self::Datetime(s) => write_json_string(s, out)?,
            Self::Secret(_) | Self::Array(_) | Self::Table(_) => return Ok(false),
        }
        Ok(true)
    }

    /// The canonical JSON of `redact_for_hash(&self.to_canon())`, written
    /// straight into `out`: what `config_hash` covers of an entry, without
    /// building the two intermediate trees (a snapshot of 10,000 entries
    /// writes 10,000 of these).
    ///
    /// # Errors
    ///
    /// [`CanonError::NonFinite`] on a NaN or an infinity that is kept (a
    /// redacted one is not written, as in the tree walk).
    pub fn write_redacted_for_hash<W: std::fmt::Write>(
        &self,
        out: &mut W,
    ) -> Result<(), CanonError> {
        if self.write_scalar(out)? {
            return Ok(());
        }
        match self {
            Self::Secret(_) => write_json_string(REDACTED, out)?,
            Self::Array(items) => write_array(items, out, Self::write_redacted_for_hash)?,
            // A value under a secret key is redacted whatever it is.
            Self::Table(map) => write_object(
                map.iter().map(|(key, item)| {
                    (
                        key,
                        if is_secret_key_for_hash(key) {
                            &REDACTED_VALUE
                        } else {
                            item
                        },
                    )
                }),
                out,
                Self::write_redacted_for_hash,
            )?,
            _ => {}
        }
        Ok(())
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

    /// The canonical JSON of [`ConfigValue::to_canon_unredacted`], written
    /// straight into `out` without building the tree: a node identity
    /// hashes one per entry, 100,000 of them in a `plan` of as many
    /// built-in entries.
    ///
    /// # Errors
    ///
    /// [`CanonError::NonFinite`] on a NaN or an infinity.
    pub fn write_unredacted<W: std::fmt::Write>(&self, out: &mut W) -> Result<(), CanonError> {
        if self.write_scalar(out)? {
            return Ok(());
        }
        match self {
            Self::Secret(s) => {
                out.write_str("{\"secret\":")?;
                write_json_string(&s.name, out)?;
                out.write_char('}')?;
            }
            Self::Array(items) => write_array(items, out, Self::write_unredacted)?,
            Self::Table(map) => write_object(map.iter(), out, Self::write_unredacted)?,
            _ => {}
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::canonical::write_canonical;
    use crate::engine::redact::redact_for_hash;

    fn table(items: Vec<(&str, ConfigValue)>) -> ConfigValue {
        ConfigValue::Table(items.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// The direct writers and the tree walks they replace agree, value for
    /// value (and error for error).
    #[test]
    fn redacted_writer_matches_the_tree_walk() {
        let secret = || {
            ConfigValue::Secret(SecretRef {
                name: "OPENAI_API_KEY".into(),
            })
        };
        let nested = table(vec![
            ("api_key", ConfigValue::Str("sk-canary".into())),
            ("password", table(vec![("inner", ConfigValue::Int(1))])),
            ("token", ConfigValue::Float(f64::NAN)),
            ("url", ConfigValue::Str("postgres://x\"y\\z\n".into())),
            ("ünïcode", ConfigValue::Str("é".into())),
            ("Z", ConfigValue::Bool(false)),
        ]);
        let values = [
            ConfigValue::Bool(true),
            ConfigValue::Int(-42),
            ConfigValue::Int(i64::MAX),
            ConfigValue::Float(1.0),
            ConfigValue::Float(0.1),
            ConfigValue::Float(1e300),
            ConfigValue::Float(-2.5e-7),
            ConfigValue::Str(String::new()),
            ConfigValue::Datetime("1979-05-27T07:32:00Z".into()),
            secret(),
            ConfigValue::Array(vec![]),
            ConfigValue::Array(vec![nested.clone(), secret(), ConfigValue::Int(3)]),
            table(vec![]),
            nested.clone(),
            table(vec![
                ("outer", nested.clone()),
                ("list", ConfigValue::Array(vec![nested, table(vec![])])),
                ("auth", secret()),
                ("timeout", ConfigValue::Float(30.0)),
            ]),
            table(vec![("ratio", ConfigValue::Float(f64::INFINITY))]),
            ConfigValue::Array(vec![ConfigValue::Float(f64::NAN)]),
        ];
        for value in &values {
            let mut tree = String::new();
            let tree_result = write_canonical(&value.to_canon_unredacted(), &mut tree);
            let mut direct = String::new();
            let direct_result = value.write_unredacted(&mut direct);
            assert_eq!(direct_result, tree_result, "unredacted {value:?}");
            if tree_result.is_ok() {
                assert_eq!(direct, tree, "unredacted {value:?}");
            }
            let mut tree = String::new();
            let tree_result = write_canonical(&redact_for_hash(&value.to_canon()), &mut tree);
            let mut direct = String::new();
            let direct_result = value.write_redacted_for_hash(&mut direct);
            assert_eq!(direct_result, tree_result, "{value:?}");
            if tree_result.is_ok() {
                assert_eq!(direct, tree, "{value:?}");
            }
        }
    }
}
