//! Tool argument schemas, the full JSON Schema (drafts 2020-12 and 7 among
//! those the `jsonschema` crate knows), compiled once and checked on every
//! call.
//!
//! Why a well-kept crate: a tool's schema is written by whoever wrote the
//! tool — an MCP server chassis does not control — and a keyword a small
//! validator skips (`pattern`, `format`, `not`, `if`/`then`/`else`,
//! `prefixItems`…) is a check that silently does not happen. The compiled
//! schema is offline (a remote `$ref` does not compile), asserts the
//! formats the crate knows, and runs `pattern` on a backtracking engine with
//! a backtrack limit, so a schema cannot hang the boundary.

use jsonschema::{PatternOptions, Validator};
use serde_json::Value;

use super::schema_check::SchemaViolation;

/// How many backtracking steps a `pattern` may take on one value: past it
/// the value does not match (the call is refused).
const BACKTRACK_LIMIT: usize = 100_000;

/// A compiled argument schema.
pub struct ArgsSchema {
    validator: Validator,
}

impl std::fmt::Debug for ArgsSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgsSchema")
    }
}

/// A schema compiled, with what is worth a warning (formats the validator
/// does not know: not asserted).
#[derive(Debug)]
pub struct Compiled {
    /// The schema.
    pub schema: ArgsSchema,
    /// Warnings about it.
    pub warnings: Vec<String>,
}

fn options(ignore_unknown_formats: bool) -> jsonschema::ValidationOptions<'static> {
    jsonschema::options()
        .offline()
        .should_validate_formats(true)
        .should_ignore_unknown_formats(ignore_unknown_formats)
        .with_pattern_options(PatternOptions::fancy_regex().backtrack_limit(BACKTRACK_LIMIT))
}

/// Compile `schema`; `Err` with the reason when it does not compile (an
/// invalid schema, a remote `$ref`, a `pattern` that is not a regex).
pub fn compile(schema: &Value) -> Result<Compiled, String> {
    match options(false).build(schema) {
        Ok(validator) => Ok(Compiled {
            schema: ArgsSchema { validator },
            warnings: Vec::new(),
        }),
        Err(strict) => {
            // An unknown format is not asserted, and said.
            let Ok(validator) = options(true).build(schema) else {
                return Err(strict.to_string());
            };
            let text = strict.to_string();
            let warning = match text
                .strip_prefix("Unknown format: '")
                .and_then(|rest| rest.split_once('\''))
            {
                Some((name, _)) => format!(
                    "format `{name}` is not one chassis checks: values are not checked against it"
                ),
                None => format!("{text} (not checked)"),
            };
            Ok(Compiled {
                schema: ArgsSchema { validator },
                warnings: vec![warning],
            })
        }
    }
}

impl ArgsSchema {
    /// Every violation of the schema by `args`, each at its JSON Pointer.
    pub fn violations(&self, args: &Value) -> Vec<SchemaViolation> {
        self.validator
            .iter_errors(args)
            .map(|e| SchemaViolation {
                pointer: e.instance_path().to_string(),
                message: e.to_string(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value, args: Value) -> Vec<String> {
        compile(&schema)
            .unwrap()
            .schema
            .violations(&args)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn keywords_a_small_validator_skips_are_checked() {
        let s = json!({ "type": "object", "properties": { "path": { "type": "string", "pattern": "^[a-z]+$" } } });
        assert!(errors(s.clone(), json!({ "path": "notes" })).is_empty());
        let bad = errors(s, json!({ "path": "../../etc/passwd; rm -rf" }));
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].starts_with("/path:"), "{bad:?}");
        for (schema, good, wrong) in [
            (
                json!({ "format": "email" }),
                json!("a@b.example"),
                json!("not an email"),
            ),
            (json!({ "uniqueItems": true }), json!([1, 2]), json!([1, 1])),
            (json!({ "multipleOf": 5 }), json!(10), json!(7)),
            (json!({ "not": { "type": "string" } }), json!(1), json!("s")),
            (
                json!({ "if": { "minimum": 10 }, "then": { "multipleOf": 10 } }),
                json!(20),
                json!(15),
            ),
            (
                json!({ "patternProperties": { "^x_": { "type": "integer" } } }),
                json!({ "x_a": 1 }),
                json!({ "x_a": "s" }),
            ),
            (
                json!({ "prefixItems": [{ "type": "string" }] }),
                json!(["a"]),
                json!([1]),
            ),
        ] {
            assert!(errors(schema.clone(), good).is_empty(), "{schema}");
            assert!(!errors(schema.clone(), wrong).is_empty(), "{schema}");
        }
    }

    #[test]
    fn what_does_not_compile_is_refused_and_unknown_formats_are_said() {
        assert!(compile(&json!({ "$ref": "https://example.com/s.json" })).is_err());
        assert!(compile(&json!({ "type": "no-such-type" })).is_err());
        assert!(compile(&json!({ "pattern": "(" })).is_err());
        let c = compile(&json!({ "format": "zip-code" })).unwrap();
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(c.schema.violations(&json!("anything")).is_empty());
    }

    #[test]
    fn a_catastrophic_pattern_does_not_hang() {
        let s = json!({ "type": "string", "pattern": "^(a+)+$" });
        let started = std::time::Instant::now();
        let input = format!("{}!", "a".repeat(40));
        // Refused (or found not to match) rather than hanging.
        let _ = errors(s, json!(input));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
