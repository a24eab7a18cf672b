//! Checking tool arguments against their JSON Schema.
//!
//! A deliberately small validator for the keywords tool schemas use
//! (`type`, `enum`, `const`, `required`, `properties`,
//! `additionalProperties`, `items`, `minItems`/`maxItems`,
//! `minimum`/`maximum` and their exclusive forms, `minLength`/`maxLength`,
//! `allOf`/`anyOf`/`oneOf`, local `$ref` into `$defs`/`definitions`).
//! Unknown keywords are ignored rather than guessed at. Errors carry a JSON
//! Pointer so a model can correct the call.

use serde_json::Value;

/// One violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaViolation {
    /// JSON Pointer into the arguments (`""` is the whole document).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {}", self.message)
    }
}

/// Every violation of `schema` by `value` (empty when valid).
pub fn check(schema: &Value, value: &Value) -> Vec<SchemaViolation> {
    let mut out = Vec::new();
    walk(schema, schema, value, "", &mut out, 0);
    out
}

fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => {
            v.as_i64().is_some()
                || v.as_u64().is_some()
                || v.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix('#')?;
    if path.is_empty() {
        return Some(root);
    }
    root.pointer(path)
}

fn walk(
    root: &Value,
    schema: &Value,
    v: &Value,
    at: &str,
    out: &mut Vec<SchemaViolation>,
    depth: usize,
) {
    let mut push = |m: String| {
        out.push(SchemaViolation {
            pointer: at.to_owned(),
            message: m,
        })
    };
    if depth > 64 {
        push("schema nesting is too deep".into());
        return;
    }
    let Some(s) = schema.as_object() else {
        if schema == &Value::Bool(false) {
            push("no value is allowed here".into());
        }
        return;
    };
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        match resolve(root, r) {
            Some(target) => walk(root, target, v, at, out, depth + 1),
            None => out.push(SchemaViolation {
                pointer: at.to_owned(),
                message: format!("unresolvable `$ref` {r}"),
            }),
        }
        return;
    }
    if let Some(t) = s.get("type") {
        let names: Vec<&str> = match t {
            Value::String(n) => vec![n.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !names.is_empty() && !names.iter().any(|n| type_matches(n, v)) {
            push(format!(
                "expected {}, found {}",
                names.join(" or "),
                kind(v)
            ));
            return;
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        push(format!("must be one of {}", Value::Array(e.clone())));
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        push(format!("must be {c}"));
    }
    if let Some(n) = v.as_f64() {
        let bound = |k: &str| s.get(k).and_then(Value::as_f64);
        if let Some(m) = bound("minimum").filter(|m| n < *m) {
            push(format!("must be at least {m}"));
        }
        if let Some(m) = bound("maximum").filter(|m| n > *m) {
            push(format!("must be at most {m}"));
        }
        if let Some(m) = bound("exclusiveMinimum").filter(|m| n <= *m) {
            push(format!("must be greater than {m}"));
        }
        if let Some(m) = bound("exclusiveMaximum").filter(|m| n >= *m) {
            push(format!("must be less than {m}"));
        }
    }
    if let Some(text) = v.as_str() {
        let len = text.chars().count() as u64;
        if let Some(m) = s
            .get("minLength")
            .and_then(Value::as_u64)
            .filter(|m| len < *m)
        {
            push(format!("must be at least {m} characters"));
        }
        if let Some(m) = s
            .get("maxLength")
            .and_then(Value::as_u64)
            .filter(|m| len > *m)
        {
            push(format!("must be at most {m} characters"));
        }
    }
    if let Some(items) = v.as_array() {
        let n = items.len() as u64;
        if let Some(m) = s.get("minItems").and_then(Value::as_u64).filter(|m| n < *m) {
            push(format!("needs at least {m} items"));
        }
        if let Some(m) = s.get("maxItems").and_then(Value::as_u64).filter(|m| n > *m) {
            push(format!("allows at most {m} items"));
        }
        if let Some(item_schema) = s.get("items") {
            for (i, item) in items.iter().enumerate() {
                walk(
                    root,
                    item_schema,
                    item,
                    &format!("{at}/{i}"),
                    out,
                    depth + 1,
                );
            }
        }
    }
    if let Some(obj) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        if let Some(required) = s.get("required").and_then(Value::as_array) {
            for key in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(key) {
                    out.push(SchemaViolation {
                        pointer: at.to_owned(),
                        message: format!("missing required property `{key}`"),
                    });
                }
            }
        }
        for (key, value) in obj {
            let child = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
            match props.and_then(|p| p.get(key)) {
                Some(p) => walk(root, p, value, &child, out, depth + 1),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => out.push(SchemaViolation {
                        pointer: child,
                        message: format!("unknown property `{key}`"),
                    }),
                    Some(extra @ Value::Object(_)) => {
                        walk(root, extra, value, &child, out, depth + 1)
                    }
                    _ => {}
                },
            }
        }
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for sub in all {
            walk(root, sub, v, at, out, depth + 1);
        }
    }
    for (key, exactly_one) in [("anyOf", false), ("oneOf", true)] {
        if let Some(alts) = s.get(key).and_then(Value::as_array) {
            let passing = alts.iter().filter(|sub| {
                let mut scratch = Vec::new();
                walk(root, sub, v, at, &mut scratch, depth + 1);
                scratch.is_empty()
            });
            let count = passing.count();
            if count == 0 || (exactly_one && count > 1) {
                out.push(SchemaViolation {
                    pointer: at.to_owned(),
                    message: if count == 0 {
                        format!("matches none of the `{key}` alternatives")
                    } else {
                        "matches more than one `oneOf` alternative".into()
                    },
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn common_keywords_are_checked_with_pointers() {
        let schema = json!({
            "type": "object",
            "required": ["query"],
            "additionalProperties": false,
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "mode": {"enum": ["spot", "forward"]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
            }
        });
        assert!(check(&schema, &json!({"query": "x", "limit": 5})).is_empty());
        let errors = check(
            &schema,
            &json!({"limit": 99, "mode": "x", "tags": ["a", 1, "c"], "extra": true}),
        );
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(
            text.contains(&"/: missing required property `query`".to_owned()),
            "{text:?}"
        );
        assert!(
            text.contains(&"/limit: must be at most 50".to_owned()),
            "{text:?}"
        );
        assert!(
            text.iter().any(|t| t.starts_with("/mode: must be one of")),
            "{text:?}"
        );
        assert!(
            text.contains(&"/tags: allows at most 2 items".to_owned()),
            "{text:?}"
        );
        assert!(
            text.contains(&"/tags/1: expected string, found number".to_owned()),
            "{text:?}"
        );
        assert!(
            text.contains(&"/extra: unknown property `extra`".to_owned()),
            "{text:?}"
        );
    }

    #[test]
    fn refs_and_combinators() {
        let schema = json!({
            "$defs": {"pos": {"type": "integer", "exclusiveMinimum": 0}},
            "type": "object",
            "properties": {"n": {"$ref": "#/$defs/pos"}, "v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}
        });
        assert!(check(&schema, &json!({"n": 3, "v": "a"})).is_empty());
        assert_eq!(check(&schema, &json!({"n": 0})).len(), 1);
        assert_eq!(check(&schema, &json!({"v": true})).len(), 1);
    }
}
