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

use super::model::ConfigValue;

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
    check_instance(schema, value)
}

/// Every violation of `schema` by `value`, read in place: a built-in
/// entry's configuration is checked as it was loaded, without building its
/// JSON first (100,000 `scripted` and `command` entries each built one, a
/// tenth of loading them). The violations are those [`check`] finds in the
/// value's JSON form.
pub fn check_instance<I: Instance>(schema: &Value, value: &I) -> Vec<SchemaViolation> {
    let mut out = Vec::new();
    walk(schema, schema, value, &Pointer::Root, &mut out, 0);
    out
}

/// A value the checker can read as if it were JSON.
pub trait Instance: Sized {
    /// The JSON to check in this value's place, for a value whose JSON form
    /// has no counterpart here (a secret reference reads as
    /// `{"secret": NAME}`).
    fn substitute(&self) -> Option<Value>;
    /// The JSON type's name (`object`, `array`, `string`, `number`,
    /// `boolean`, `null`).
    fn kind(&self) -> &'static str;
    /// A number with no fractional part.
    fn is_integer(&self) -> bool;
    /// A number as a float.
    fn as_f64(&self) -> Option<f64>;
    /// A string.
    fn as_str(&self) -> Option<&str>;
    /// An array's items.
    fn as_array(&self) -> Option<&[Self]>;
    /// An object's value at `key` (`None` for a missing key or a
    /// non-object).
    fn get(&self, key: &str) -> Option<&Self>;
    /// An object's members in key order (empty for a non-object).
    fn members(&self) -> Vec<(&str, &Self)>;
    /// Whether this equals `json` as JSON.
    fn equals(&self, json: &Value) -> bool;
    /// A boolean.
    fn as_bool(&self) -> Option<bool>;
    /// A non-negative integer.
    fn as_u64(&self) -> Option<u64>;
    /// This value as JSON.
    fn to_value(&self) -> Value;
}

impl Instance for Value {
    fn substitute(&self) -> Option<Value> {
        None
    }
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    fn is_integer(&self) -> bool {
        self.as_i64().is_some()
            || self.as_u64().is_some()
            || self.as_f64().is_some_and(|f| f.fract() == 0.0)
    }
    fn as_f64(&self) -> Option<f64> {
        Value::as_f64(self)
    }
    fn as_str(&self) -> Option<&str> {
        Value::as_str(self)
    }
    fn as_array(&self) -> Option<&[Self]> {
        Value::as_array(self).map(Vec::as_slice)
    }
    fn get(&self, key: &str) -> Option<&Self> {
        self.as_object()?.get(key)
    }
    fn members(&self) -> Vec<(&str, &Self)> {
        self.as_object()
            .map(|o| o.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default()
    }
    fn equals(&self, json: &Value) -> bool {
        self == json
    }
    fn as_bool(&self) -> Option<bool> {
        Value::as_bool(self)
    }
    fn as_u64(&self) -> Option<u64> {
        Value::as_u64(self)
    }
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl Instance for ConfigValue {
    fn substitute(&self) -> Option<Value> {
        match self {
            // Its JSON is an object this value has no members for.
            ConfigValue::Secret(_) => Some(self.to_json()),
            _ => None,
        }
    }
    // A float that is not finite reads as JSON's null, as `to_json` writes
    // it (the loader refuses one; a composition built in code may not).
    fn kind(&self) -> &'static str {
        match self {
            ConfigValue::Bool(_) => "boolean",
            ConfigValue::Float(f) if !f.is_finite() => "null",
            ConfigValue::Int(_) | ConfigValue::Float(_) => "number",
            ConfigValue::Str(_) | ConfigValue::Datetime(_) => "string",
            ConfigValue::Array(_) => "array",
            ConfigValue::Table(_) | ConfigValue::Secret(_) => "object",
        }
    }
    fn is_integer(&self) -> bool {
        match self {
            ConfigValue::Int(_) => true,
            ConfigValue::Float(f) => f.is_finite() && f.fract() == 0.0,
            _ => false,
        }
    }
    #[allow(clippy::cast_precision_loss)] // as serde_json reads an integer
    fn as_f64(&self) -> Option<f64> {
        match self {
            ConfigValue::Int(i) => Some(*i as f64),
            ConfigValue::Float(f) if f.is_finite() => Some(*f),
            _ => None,
        }
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            ConfigValue::Str(s) | ConfigValue::Datetime(s) => Some(s),
            _ => None,
        }
    }
    fn as_array(&self) -> Option<&[Self]> {
        match self {
            ConfigValue::Array(items) => Some(items),
            _ => None,
        }
    }
    fn get(&self, key: &str) -> Option<&Self> {
        ConfigValue::get(self, key)
    }
    fn members(&self) -> Vec<(&str, &Self)> {
        match self {
            ConfigValue::Table(map) => map.iter().map(|(k, v)| (k.as_str(), v)).collect(),
            _ => Vec::new(),
        }
    }
    fn equals(&self, json: &Value) -> bool {
        self.to_json() == *json
    }
    fn as_bool(&self) -> Option<bool> {
        match self {
            ConfigValue::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn as_u64(&self) -> Option<u64> {
        match self {
            ConfigValue::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }
    fn to_value(&self) -> Value {
        self.to_json()
    }
}

/// Where a value is, as a JSON Pointer rendered only when a violation
/// names it: building one string per member checked was most of checking
/// a valid value.
enum Pointer<'p> {
    Root,
    Key(&'p Pointer<'p>, &'p str),
    Index(&'p Pointer<'p>, usize),
}

impl Pointer<'_> {
    fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Pointer::Root => {}
            Pointer::Key(parent, key) => {
                parent.write(out);
                out.push('/');
                out.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Pointer::Index(parent, i) => {
                parent.write(out);
                out.push('/');
                out.push_str(&i.to_string());
            }
        }
    }
}

fn type_matches<I: Instance>(name: &str, v: &I) -> bool {
    match name {
        "integer" => v.is_integer(),
        "object" | "array" | "string" | "boolean" | "null" | "number" => v.kind() == name,
        _ => true,
    }
}

fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix('#')?;
    if path.is_empty() {
        return Some(root);
    }
    root.pointer(path)
}

fn walk<I: Instance>(
    root: &Value,
    schema: &Value,
    v: &I,
    at: &Pointer<'_>,
    out: &mut Vec<SchemaViolation>,
    depth: usize,
) {
    if let Some(json) = v.substitute() {
        walk(root, schema, &json, at, out, depth);
        return;
    }
    let mut push = |m: String| {
        out.push(SchemaViolation {
            pointer: at.render(),
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
    let k = Keywords::of(s);
    if let Some(r) = k.reference.and_then(Value::as_str) {
        match resolve(root, r) {
            Some(target) => walk(root, target, v, at, out, depth + 1),
            None => push(format!("unresolvable `$ref` {r}")),
        }
        return;
    }
    if let Some(t) = k.types {
        // The names are listed only for a message: most values match.
        let names: &[Value] = match t {
            Value::String(_) => std::slice::from_ref(t),
            Value::Array(a) => a,
            _ => &[],
        };
        let mut named = names.iter().filter_map(Value::as_str).peekable();
        if named.peek().is_some() && !named.any(|n| type_matches(n, v)) {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            push(format!(
                "expected {}, found {}",
                names.join(" or "),
                v.kind()
            ));
            return;
        }
    }
    if let Some(e) = k.enumeration.and_then(Value::as_array)
        && !e.iter().any(|x| v.equals(x))
    {
        push(format!("must be one of {}", Value::Array(e.clone())));
    }
    if let Some(c) = k.constant
        && !v.equals(c)
    {
        push(format!("must be {c}"));
    }
    if let Some(n) = v.as_f64() {
        let bound = |b: Option<&Value>| b.and_then(Value::as_f64);
        if let Some(m) = bound(k.minimum).filter(|m| n < *m) {
            push(format!("must be at least {m}"));
        }
        if let Some(m) = bound(k.maximum).filter(|m| n > *m) {
            push(format!("must be at most {m}"));
        }
        if let Some(m) = bound(k.exclusive_minimum).filter(|m| n <= *m) {
            push(format!("must be greater than {m}"));
        }
        if let Some(m) = bound(k.exclusive_maximum).filter(|m| n >= *m) {
            push(format!("must be less than {m}"));
        }
    }
    if let Some(text) = v.as_str() {
        let len = text.chars().count() as u64;
        if let Some(m) = k.min_length.and_then(Value::as_u64).filter(|m| len < *m) {
            push(format!("must be at least {m} characters"));
        }
        if let Some(m) = k.max_length.and_then(Value::as_u64).filter(|m| len > *m) {
            push(format!("must be at most {m} characters"));
        }
    }
    if let Some(items) = v.as_array() {
        let n = items.len() as u64;
        if let Some(m) = k.min_items.and_then(Value::as_u64).filter(|m| n < *m) {
            push(format!("needs at least {m} items"));
        }
        if let Some(m) = k.max_items.and_then(Value::as_u64).filter(|m| n > *m) {
            push(format!("allows at most {m} items"));
        }
        if let Some(item_schema) = k.items {
            for (i, item) in items.iter().enumerate() {
                walk(
                    root,
                    item_schema,
                    item,
                    &Pointer::Index(at, i),
                    out,
                    depth + 1,
                );
            }
        }
    }
    if v.kind() == "object" {
        let props = k.properties.and_then(Value::as_object);
        if let Some(required) = k.required.and_then(Value::as_array) {
            for key in required.iter().filter_map(Value::as_str) {
                if v.get(key).is_none() {
                    out.push(SchemaViolation {
                        pointer: at.render(),
                        message: format!("missing required property `{key}`"),
                    });
                }
            }
        }
        for (key, value) in v.members() {
            let child = Pointer::Key(at, key);
            match props.and_then(|p| p.get(key)) {
                Some(p) => walk(root, p, value, &child, out, depth + 1),
                None => match k.additional_properties {
                    Some(Value::Bool(false)) => out.push(SchemaViolation {
                        pointer: child.render(),
                        message: format!("unknown property `{key}`"),
                    }),
                    Some(extra @ Value::Object(_)) => {
                        walk(root, extra, value, &child, out, depth + 1);
                    }
                    _ => {}
                },
            }
        }
    }
    if let Some(all) = k.all_of.and_then(Value::as_array) {
        for sub in all {
            walk(root, sub, v, at, out, depth + 1);
        }
    }
    for (key, exactly_one, alternatives) in [("anyOf", false, k.any_of), ("oneOf", true, k.one_of)]
    {
        if let Some(alts) = alternatives.and_then(Value::as_array) {
            let passing = alts.iter().filter(|sub| {
                let mut scratch = Vec::new();
                walk(root, sub, v, at, &mut scratch, depth + 1);
                scratch.is_empty()
            });
            let count = passing.count();
            if count == 0 || (exactly_one && count > 1) {
                out.push(SchemaViolation {
                    pointer: at.render(),
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

/// The keywords of one schema object, read in one pass over its members:
/// looking each up in the map by name (fifteen searches per value checked)
/// was most of checking a built-in entry's configuration.
#[derive(Default)]
struct Keywords<'s> {
    reference: Option<&'s Value>,
    types: Option<&'s Value>,
    enumeration: Option<&'s Value>,
    constant: Option<&'s Value>,
    minimum: Option<&'s Value>,
    maximum: Option<&'s Value>,
    exclusive_minimum: Option<&'s Value>,
    exclusive_maximum: Option<&'s Value>,
    min_length: Option<&'s Value>,
    max_length: Option<&'s Value>,
    min_items: Option<&'s Value>,
    max_items: Option<&'s Value>,
    items: Option<&'s Value>,
    properties: Option<&'s Value>,
    required: Option<&'s Value>,
    additional_properties: Option<&'s Value>,
    all_of: Option<&'s Value>,
    any_of: Option<&'s Value>,
    one_of: Option<&'s Value>,
}

impl<'s> Keywords<'s> {
    fn of(schema: &'s serde_json::Map<String, Value>) -> Self {
        let mut k = Self::default();
        for (name, value) in schema {
            let slot = match name.as_str() {
                "$ref" => &mut k.reference,
                "type" => &mut k.types,
                "enum" => &mut k.enumeration,
                "const" => &mut k.constant,
                "minimum" => &mut k.minimum,
                "maximum" => &mut k.maximum,
                "exclusiveMinimum" => &mut k.exclusive_minimum,
                "exclusiveMaximum" => &mut k.exclusive_maximum,
                "minLength" => &mut k.min_length,
                "maxLength" => &mut k.max_length,
                "minItems" => &mut k.min_items,
                "maxItems" => &mut k.max_items,
                "items" => &mut k.items,
                "properties" => &mut k.properties,
                "required" => &mut k.required,
                "additionalProperties" => &mut k.additional_properties,
                "allOf" => &mut k.all_of,
                "anyOf" => &mut k.any_of,
                "oneOf" => &mut k.one_of,
                _ => continue,
            };
            *slot = Some(value);
        }
        k
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

    /// A configuration read in place gets exactly the violations its JSON
    /// form gets, for every built-in kind's schema and the keywords above.
    mod in_place {
        use super::super::*;
        use crate::engine::model::SecretRef;
        use proptest::prelude::*;
        use serde_json::json;

        fn leaf() -> impl Strategy<Value = ConfigValue> {
            prop_oneof![
                any::<bool>().prop_map(ConfigValue::Bool),
                prop_oneof![Just(0i64), Just(1), Just(-3), Just(60), any::<i64>()]
                    .prop_map(ConfigValue::Int),
                prop_oneof![
                    Just(1.0f64),
                    Just(0.5),
                    Just(-2.0),
                    Just(f64::NAN),
                    Just(f64::INFINITY)
                ]
                .prop_map(ConfigValue::Float),
                prop_oneof![
                    Just(String::new()),
                    Just("echo".to_owned()),
                    Just("spot".to_owned()),
                    Just("{/path}".to_owned()),
                    Just("é".repeat(300)),
                ]
                .prop_map(ConfigValue::Str),
                Just(ConfigValue::Datetime("1979-05-27T07:32:00Z".into())),
                Just(ConfigValue::Secret(SecretRef {
                    name: "OPENAI_API_KEY".into()
                })),
            ]
        }

        fn key() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("turns"),
                Just("tools"),
                Just("name"),
                Just("argv"),
                Just("args"),
                Just("description"),
                Just("text"),
                Just("tool_calls"),
                Just("when"),
                Just("input"),
                Just("regex"),
                Just("env"),
                Just("cwd"),
                Just("model"),
                Just("idempotent"),
                Just("timeout_seconds"),
                Just("query"),
                Just("limit"),
                Just("mode"),
                Just("n"),
                Just("v"),
                Just("a/b~c"),
                Just("secret"),
            ]
            .prop_map(str::to_owned)
        }

        fn value() -> impl Strategy<Value = ConfigValue> {
            leaf().prop_recursive(5, 48, 6, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4).prop_map(ConfigValue::Array),
                    proptest::collection::btree_map(key(), inner, 0..6)
                        .prop_map(ConfigValue::Table),
                ]
            })
        }

        fn schemas() -> Vec<Value> {
            let mut all: Vec<Value> = crate::engine::builtin::config_schemas()
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            all.push(json!({
                "type": "object",
                "required": ["query"],
                "additionalProperties": false,
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 4},
                    "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 50},
                    "mode": {"enum": ["spot", 1, {"secret": "OPENAI_API_KEY"}]},
                    "n": {"const": 60, "exclusiveMaximum": 100},
                    "tools": {"type": "array", "items": {"$ref": "#/$defs/t"}, "minItems": 1, "maxItems": 2},
                    "secret": {"type": "object"}
                },
                "$defs": {"t": {"anyOf": [{"type": "string"}, {"type": "object", "additionalProperties": {"type": "number"}}]}}
            }));
            all.push(
                json!({"oneOf": [{"type": "object"}, {"type": "integer"}, {"type": "number"}]}),
            );
            all.push(json!({"allOf": [{"type": "object", "properties": {"v": false}}, {"$ref": "#/nowhere"}]}));
            all
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]
            #[test]
            fn reading_in_place_matches_the_json_form(config in value()) {
                let json = config.to_json();
                for schema in schemas() {
                    prop_assert_eq!(
                        check_instance(&schema, &config),
                        check(&schema, &json),
                        "schema {}", schema
                    );
                }
            }
        }
    }
}
