//! Free-form values: plugin configuration, metadata and tool argument schemas.

use std::collections::BTreeMap;

use toml::de::DeValue;

use super::reader::{FileCtx, Node, parse_float};
use crate::engine::diag::{Code, Diagnostic};
use crate::engine::model::{ConfigValue, SecretRef};

/// If `node` is a secret reference `{ secret = "NAME" }`, its name node.
fn secret_name<'t, 'i>(node: &Node<'t, 'i>) -> Option<Node<'t, 'i>> {
    let DeValue::Table(t) = node.value else {
        return None;
    };
    if t.len() != 1 {
        return None;
    }
    let (k, v) = t.get_key_value("secret")?;
    v.get_ref().is_str().then(|| Node::entry(&node.path, k, v))
}

fn non_finite(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) {
    cx.error(
        Code::InvalidValue,
        node.span,
        format!("`{}` is not a finite number", node.path),
        "NaN and infinities are not allowed",
    );
}

/// Convert any TOML value to a [`ConfigValue`], reporting non-finite floats,
/// overflowing integers and empty secret names. With `warn_literal`, a literal
/// string under a key that looks sensitive produces `load::literal-secret`.
pub(crate) fn config_value(
    cx: &mut FileCtx<'_>,
    node: &Node<'_, '_>,
    warn_literal: bool,
) -> Option<ConfigValue> {
    if let Some(name) = secret_name(node) {
        let s = name.str(cx)?;
        if s.value.trim().is_empty() {
            cx.error(
                Code::InvalidValue,
                s.span,
                format!("`{}` must name a secret", name.path),
                "empty secret name",
            );
            return None;
        }
        return Some(ConfigValue::Secret(SecretRef {
            name: s.value.to_owned(),
        }));
    }
    Some(match node.value {
        DeValue::String(s) => {
            if warn_literal && !s.is_empty() && super::is_sensitive_key(node.key) {
                cx.push(
                    Diagnostic::warning(
                        Code::LiteralSecret,
                        format!(
                            "`{}` holds a literal value; use `{{ secret = \"NAME\" }}`",
                            node.key
                        ),
                    )
                    .at(Some(cx.origin(node.span)), "literal value")
                    .with_help("move the value into a secret and reference it by name"),
                );
            }
            ConfigValue::Str(s.to_string())
        }
        DeValue::Integer(_) => ConfigValue::Int(node.int(cx)?),
        DeValue::Float(f) => match parse_float(f.as_str()) {
            Some(v) if v.is_finite() => ConfigValue::Float(v),
            _ => {
                non_finite(cx, node);
                return None;
            }
        },
        DeValue::Boolean(b) => ConfigValue::Bool(*b),
        DeValue::Datetime(d) => ConfigValue::Datetime(d.to_string()),
        DeValue::Array(a) => {
            let mut ok = true;
            let mut out = Vec::new();
            for item in node.array_items(a) {
                match config_value(cx, &item, warn_literal) {
                    Some(v) => out.push(v),
                    None => ok = false,
                }
            }
            if !ok {
                return None;
            }
            ConfigValue::Array(out)
        }
        DeValue::Table(_) => ConfigValue::Table(config_table(cx, node, warn_literal)?),
    })
}

/// Convert a TOML table to configuration entries (`None` after a problem,
/// which is reported; every problem in the table is reported).
pub(crate) fn config_table(
    cx: &mut FileCtx<'_>,
    node: &Node<'_, '_>,
    warn_literal: bool,
) -> Option<BTreeMap<String, ConfigValue>> {
    let entries = node.entries(cx)?;
    let mut ok = true;
    let mut out = BTreeMap::new();
    for entry in entries {
        match config_value(cx, &entry, warn_literal) {
            Some(v) => {
                out.insert(entry.key.to_owned(), v);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// Convert any TOML value to JSON (tool argument schemas).
pub(crate) fn json_value(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Option<serde_json::Value> {
    use serde_json::Value;
    Some(match node.value {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(_) => Value::from(node.int(cx)?),
        DeValue::Float(f) => match parse_float(f.as_str()).and_then(serde_json::Number::from_f64) {
            Some(n) => Value::Number(n),
            None => {
                non_finite(cx, node);
                return None;
            }
        },
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::String(d.to_string()),
        DeValue::Array(a) => {
            let items: Vec<Option<Value>> = node
                .array_items(a)
                .iter()
                .map(|i| json_value(cx, i))
                .collect();
            Value::Array(items.into_iter().collect::<Option<Vec<_>>>()?)
        }
        DeValue::Table(_) => {
            let entries = node.entries(cx)?;
            let items: Vec<Option<(String, Value)>> = entries
                .iter()
                .map(|e| json_value(cx, e).map(|v| (e.key.to_owned(), v)))
                .collect();
            Value::Object(
                items
                    .into_iter()
                    .collect::<Option<serde_json::Map<_, _>>>()?,
            )
        }
    })
}
