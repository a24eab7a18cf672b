//! Attribute values, contract validation and limit enforcement.
//!
//! Values are scalars or flat lists of scalars by construction: a nested
//! payload (a request, a message, a config table) cannot be expressed, so
//! the one contract rule the reference enforces only in tests holds here by
//! type. Lengths are the remaining runtime rule.

use std::collections::BTreeMap;

use serde::Serialize;

use super::signals::{ATTRIBUTE_ITEMS_LIMIT, ATTRIBUTE_STRING_LIMIT, SignalKind, signal};

/// A list item: a scalar attribute value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Scalar {
    /// No value.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string of at most [`ATTRIBUTE_STRING_LIMIT`] characters.
    Str(String),
}

/// An attribute value: a scalar or a list of at most
/// [`ATTRIBUTE_ITEMS_LIMIT`] scalars.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AttrValue {
    /// No value.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string of at most [`ATTRIBUTE_STRING_LIMIT`] characters.
    Str(String),
    /// A flat list of scalars.
    List(Vec<Scalar>),
}

/// A signal's attributes, ordered by key so emission is deterministic.
pub type Attributes = BTreeMap<String, AttrValue>;

/// Builds [`Attributes`] from pairs: `attributes([("tool", "search")])`.
pub fn attributes<K, V, I>(pairs: I) -> Attributes
where
    K: Into<String>,
    V: Into<AttrValue>,
    I: IntoIterator<Item = (K, V)>,
{
    pairs
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
}

/// `From` conversions into both [`Scalar`] and [`AttrValue`]; integers
/// wider than `i64` saturate.
macro_rules! conversions {
    ($($t:ty => |$v:ident| $variant:ident($e:expr)),* $(,)?) => {$(
        impl From<$t> for Scalar {
            fn from($v: $t) -> Self {
                Self::$variant($e)
            }
        }
        impl From<$t> for AttrValue {
            fn from($v: $t) -> Self {
                Self::$variant($e)
            }
        }
    )*};
}

conversions! {
    bool => |v| Bool(v),
    i64 => |v| Int(v),
    i32 => |v| Int(i64::from(v)),
    u32 => |v| Int(i64::from(v)),
    u64 => |v| Int(i64::try_from(v).unwrap_or(i64::MAX)),
    usize => |v| Int(i64::try_from(v).unwrap_or(i64::MAX)),
    f64 => |v| Float(v),
    &str => |v| Str(v.to_owned()),
    String => |v| Str(v),
    std::sync::Arc<str> => |v| Str(v.to_string()),
}

impl<T: Into<Scalar>> From<Option<T>> for Scalar {
    fn from(value: Option<T>) -> Self {
        value.map_or(Self::Null, Into::into)
    }
}

impl<T: Into<AttrValue>> From<Option<T>> for AttrValue {
    fn from(value: Option<T>) -> Self {
        value.map_or(Self::Null, Into::into)
    }
}

impl<T: Into<Scalar>> From<Vec<T>> for AttrValue {
    fn from(items: Vec<T>) -> Self {
        Self::List(items.into_iter().map(Into::into).collect())
    }
}

impl From<Scalar> for AttrValue {
    fn from(value: Scalar) -> Self {
        match value {
            Scalar::Null => Self::Null,
            Scalar::Bool(b) => Self::Bool(b),
            Scalar::Int(i) => Self::Int(i),
            Scalar::Float(f) => Self::Float(f),
            Scalar::Str(s) => Self::Str(s),
        }
    }
}

/// One way an emission breaks the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// The name is not in [`super::SIGNALS`].
    #[error("`{signal}` is not a declared signal")]
    UnknownSignal {
        /// The emitted name.
        signal: String,
    },
    /// A span was emitted as an event, or the other way round.
    #[error("`{signal}` is declared as a {expected}, emitted as a {actual}")]
    WrongKind {
        /// The signal.
        signal: String,
        /// The declared kind.
        expected: SignalKind,
        /// The kind it was emitted as.
        actual: SignalKind,
    },
    /// A required attribute is absent.
    #[error("`{signal}` lacks its required attribute `{key}`")]
    MissingAttribute {
        /// The signal.
        signal: String,
        /// The missing key.
        key: String,
    },
    /// A string (or a string list item) is over [`ATTRIBUTE_STRING_LIMIT`].
    #[error(
        "`{signal}` attribute `{key}` holds a string of {chars} characters (limit {ATTRIBUTE_STRING_LIMIT})"
    )]
    StringTooLong {
        /// The signal.
        signal: String,
        /// The attribute.
        key: String,
        /// Its length in characters.
        chars: usize,
    },
    /// A list is over [`ATTRIBUTE_ITEMS_LIMIT`].
    #[error("`{signal}` attribute `{key}` holds {items} items (limit {ATTRIBUTE_ITEMS_LIMIT})")]
    TooManyItems {
        /// The signal.
        signal: String,
        /// The attribute.
        key: String,
        /// Its item count.
        items: usize,
    },
}

/// The length violations of `attrs`, emitted as `signal`.
///
/// Lengths are counted in characters; a list reports its item count and
/// each over-long string item.
#[must_use]
pub fn validate_limits(signal: &str, attrs: &Attributes) -> Vec<Violation> {
    let mut out = Vec::new();
    let check_str = |key: &str, s: &str, out: &mut Vec<Violation>| {
        let chars = s.chars().count();
        if chars > ATTRIBUTE_STRING_LIMIT {
            out.push(Violation::StringTooLong {
                signal: signal.to_owned(),
                key: key.to_owned(),
                chars,
            });
        }
    };
    for (key, value) in attrs {
        match value {
            AttrValue::Str(s) => check_str(key, s, &mut out),
            AttrValue::List(items) => {
                if items.len() > ATTRIBUTE_ITEMS_LIMIT {
                    out.push(Violation::TooManyItems {
                        signal: signal.to_owned(),
                        key: key.clone(),
                        items: items.len(),
                    });
                }
                for item in items {
                    if let Scalar::Str(s) = item {
                        check_str(key, s, &mut out);
                    }
                }
            }
            AttrValue::Null | AttrValue::Bool(_) | AttrValue::Int(_) | AttrValue::Float(_) => {}
        }
    }
    out
}

/// The name and kind violations of emitting `name` as `kind`.
pub(super) fn validate_name(name: &str, kind: SignalKind) -> Vec<Violation> {
    match signal(name) {
        None => vec![Violation::UnknownSignal {
            signal: name.to_owned(),
        }],
        Some(spec) if spec.kind != kind => vec![Violation::WrongKind {
            signal: name.to_owned(),
            expected: spec.kind,
            actual: kind,
        }],
        Some(_) => Vec::new(),
    }
}

/// The missing required attributes of `name` (none for an unknown name).
pub(super) fn validate_required(name: &str, attrs: &Attributes) -> Vec<Violation> {
    signal(name)
        .map(|spec| {
            spec.required
                .iter()
                .filter(|key| !attrs.contains_key(**key))
                .map(|key| Violation::MissingAttribute {
                    signal: name.to_owned(),
                    key: (*key).to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Checks one complete emission (for a span: its attributes from start and
/// end together) against the contract.
///
/// Every violation is reported: an unknown name, the wrong kind, each
/// missing required key, each over-long string and each over-long list.
/// Extra keys are allowed.
///
/// # Errors
///
/// The violations, when there is at least one.
pub fn validate_signal(
    name: &str,
    kind: SignalKind,
    attrs: &Attributes,
) -> Result<(), Vec<Violation>> {
    let mut out = validate_name(name, kind);
    out.extend(validate_required(name, attrs));
    out.extend(validate_limits(name, attrs));
    if out.is_empty() { Ok(()) } else { Err(out) }
}

/// `s` cut to [`ATTRIBUTE_STRING_LIMIT`] characters, the last being `…`;
/// whether it was cut.
fn truncate_str(s: &mut String) -> bool {
    let Some((cut, _)) = s.char_indices().nth(ATTRIBUTE_STRING_LIMIT) else {
        return false;
    };
    let keep = s[..cut].char_indices().next_back().map_or(0, |(i, _)| i);
    s.truncate(keep);
    s.push('…');
    true
}

/// Enforces the limits in place, so an emission never violates them:
/// strings longer than [`ATTRIBUTE_STRING_LIMIT`] characters keep their
/// first 511 and end in `…`, lists keep their first
/// [`ATTRIBUTE_ITEMS_LIMIT`] items. Returns how many values were changed.
pub fn truncate(attrs: &mut Attributes) -> usize {
    let mut changed = 0;
    for value in attrs.values_mut() {
        let touched = match value {
            AttrValue::Str(s) => truncate_str(s),
            AttrValue::List(items) => {
                let long = items.len() > ATTRIBUTE_ITEMS_LIMIT;
                items.truncate(ATTRIBUTE_ITEMS_LIMIT);
                let mut cut = false;
                for item in items.iter_mut() {
                    if let Scalar::Str(s) = item {
                        cut |= truncate_str(s);
                    }
                }
                long || cut
            }
            AttrValue::Null | AttrValue::Bool(_) | AttrValue::Int(_) | AttrValue::Float(_) => false,
        };
        changed += usize::from(touched);
    }
    changed
}
