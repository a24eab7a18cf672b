//! `policy` and `secrets.env`: providers of the harness's system
//! capabilities, declared per scope (see [`crate::engine::system`]).
//!
//! ```toml
//! [entries.finance-policy]
//! plugin = "policy"
//! scope = "/agents/finance"
//! config = { grants = ["ledger.read"], deny = ["ledger.read:/payroll/**"], approval_required = ["ledger.write"] }
//!
//! [entries.finance-secrets]
//! plugin = "secrets.env"
//! scope = "/agents/finance"
//! config = { prefix = "FINANCE_", aliases = { "db.password" = "FIN_DB_PW" } }
//! ```
//!
//! A `policy` entry provides `policy@1`: the same rules as the top-level
//! `[policy]` table (one grammar, one type: [`PolicyRules`]), governing the
//! scopes that see the entry instead of `[policy]`. Per-tool overrides
//! (`[policy.tools.X]`) change a tool's declaration, not a decision, so they
//! stay in `[policy]`. A `secrets.env` entry provides `secrets@1`: the
//! environment (and `run --env-file`) under the reference's name mapping,
//! with its own prefix and aliases.

use serde_json::{Value, json};

use super::{BuiltinKind, ConfigProblem, providing};
use crate::engine::model::{ConfigValue, Manifest};
use crate::engine::policy::{Grant, PolicyRules};

/// The `policy` kind.
pub const POLICY: BuiltinKind = BuiltinKind {
    name: "policy",
    summary: "grants, deny rules and approval names for the scopes that see it (provides policy@1)",
    config_schema: policy_schema,
    manifest: policy_manifest,
};

/// The `secrets.env` kind.
pub const SECRETS_ENV: BuiltinKind = BuiltinKind {
    name: "secrets.env",
    summary: "secrets from the environment, with a prefix and aliases, for the scopes that see it (provides secrets@1)",
    config_schema: secrets_env_schema,
    manifest: secrets_env_manifest,
};

fn strings(description: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string" }, "description": description })
}

/// The `config` schema of `policy` (the `[policy]` table without `tools`).
pub fn policy_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "policy",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "grants": strings("Grants as `name[:resource-pattern]`, e.g. `filesystem.read:/workspace/**`; `family.*` names a family."),
            "deny": strings("Deny rules, same grammar; they win over grants."),
            "approval_required": strings("Permission names (or `family.*`) whose use needs approval.")
        }
    })
}

/// The rules of a `policy` entry's configuration (already valid against
/// [`policy_schema`]), or every bad rule with its pointer.
pub fn policy_rules(config: &ConfigValue) -> Result<PolicyRules, Vec<ConfigProblem>> {
    let mut problems = Vec::new();
    let items = |key: &'static str| {
        let list = match config.get(key) {
            Some(ConfigValue::Array(items)) => items.as_slice(),
            _ => &[],
        };
        list.iter().enumerate().filter_map(move |(i, v)| match v {
            ConfigValue::Str(s) => Some((format!("/{key}/{i}"), s.as_str())),
            _ => None,
        })
    };
    let grants = |key, problems: &mut Vec<ConfigProblem>| {
        let mut out = Vec::new();
        for (pointer, text) in items(key) {
            match Grant::parse(text) {
                Ok(g) => out.push(g),
                Err(e) => problems.push(ConfigProblem::new(
                    pointer,
                    format!("bad grant `{text}`: {}", with_help(&e)),
                )),
            }
        }
        out
    };
    let rules = PolicyRules {
        grants: grants("grants", &mut problems),
        deny: grants("deny", &mut problems),
        approval_required: items("approval_required")
            .filter_map(|(pointer, name)| {
                match crate::engine::policy::rules::validate_rule_name(name) {
                    Ok(()) => Some(name.to_owned()),
                    Err(e) => {
                        problems.push(ConfigProblem::new(
                            pointer,
                            format!("bad permission name `{name}`: {}", with_help(&e)),
                        ));
                        None
                    }
                }
            })
            .collect(),
    };
    if problems.is_empty() {
        Ok(rules)
    } else {
        Err(problems)
    }
}

fn with_help(e: &crate::engine::policy::PermissionError) -> String {
    match &e.help {
        Some(help) => format!("{} ({help})", e.message),
        None => e.message.clone(),
    }
}

fn policy_manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    policy_rules(config)?;
    Ok(providing("policy", "1.0.0", "policy", "1.0.0"))
}

/// The `config` schema of `secrets.env`.
pub fn secrets_env_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "secrets from the environment",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "prefix": {
                "type": "string",
                "description": "Prepended to every variable name: `db.password` with prefix `FINANCE_` reads `FINANCE_DB_PASSWORD`."
            },
            "aliases": {
                "type": "object",
                "additionalProperties": { "type": "string" },
                "description": "Secret name → the environment variable that holds it, verbatim (no prefix), e.g. { \"db.password\" = \"FIN_DB_PW\" }."
            }
        }
    })
}

/// A `secrets.env` entry's configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvSecrets {
    /// The variable-name prefix.
    pub prefix: Option<String>,
    /// Secret name → variable, in name order.
    pub aliases: Vec<(String, String)>,
}

/// The prefix and aliases of a `secrets.env` entry's configuration.
pub fn secrets_env_config(config: &ConfigValue) -> Result<EnvSecrets, Vec<ConfigProblem>> {
    let mut problems = Vec::new();
    // Never echo a rejected value: a secret typed where a variable name
    // belongs must stay out of every message.
    let not_a_name = "not an environment variable name (upper-case letters, digits and `_`, \
                      not starting with a digit); the value is not shown";
    let prefix = match config.get("prefix") {
        Some(ConfigValue::Str(p)) if p.is_empty() || is_variable_name(p) => Some(p.clone()),
        Some(ConfigValue::Str(_)) => {
            problems.push(ConfigProblem::new(
                "/prefix",
                format!("the prefix is {not_a_name}"),
            ));
            None
        }
        _ => None,
    };
    let mut aliases = Vec::new();
    if let Some(ConfigValue::Table(map)) = config.get("aliases") {
        for (name, variable) in map {
            let ConfigValue::Str(variable) = variable else {
                continue;
            };
            if is_variable_name(variable) {
                aliases.push((name.clone(), variable.clone()));
            } else {
                problems.push(ConfigProblem::new(
                    format!("/aliases/{}", pointer_token(name)),
                    format!("the alias of `{name}` is {not_a_name}"),
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(EnvSecrets { prefix, aliases })
    } else {
        Err(problems)
    }
}

/// `name` escaped as a JSON Pointer token.
pub(crate) fn pointer_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn secrets_env_manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    secrets_env_config(config)?;
    Ok(providing("secrets.env", "1.0.0", "secrets", "1.0.0"))
}

/// An environment variable name as chassis accepts one in a `secrets.env`
/// configuration: `[A-Z_][A-Z0-9_]*`.
pub(crate) fn is_variable_name(text: &str) -> bool {
    let mut bytes = text.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::builtin::test_config as config;

    #[test]
    fn policy_config_is_the_policy_table() {
        let c = config(json!({
            "grants": ["ledger.read", "fs.read:/workspace/**"],
            "deny": ["fs.read:/workspace/secrets/**"],
            "approval_required": ["ledger.*"]
        }));
        let rules = policy_rules(&c).expect("valid");
        assert_eq!(rules.grants.len(), 2);
        assert_eq!(rules.deny[0].to_string(), "fs.read:/workspace/secrets/**");
        assert!(rules.requires_approval("ledger.write"));
        let m = POLICY.derive(&c).expect("manifest");
        assert!(
            m.provides
                .get("policy")
                .is_some_and(|p| p.generation(1).is_some())
        );
        assert_eq!(m.kind.as_deref(), Some("policy"));
    }

    #[test]
    fn bad_rules_point_at_the_item() {
        let c = config(json!({ "grants": ["ok", "*"], "approval_required": ["a b"] }));
        let problems = POLICY.derive(&c).expect_err("bad");
        let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(pointers, ["/grants/1", "/approval_required/0"]);
        assert!(problems[0].message.starts_with("bad grant `*`"));
        let unknown = POLICY
            .derive(&config(json!({ "tools": {} })))
            .expect_err("per-tool overrides belong to [policy]");
        assert_eq!(unknown.len(), 1);
    }

    #[test]
    fn secrets_env_config_and_manifest() {
        let c = config(json!({ "prefix": "FINANCE_", "aliases": { "db.password": "FIN_DB_PW" } }));
        let parsed = secrets_env_config(&c).expect("valid");
        assert_eq!(parsed.prefix.as_deref(), Some("FINANCE_"));
        assert_eq!(
            parsed.aliases,
            [("db.password".to_owned(), "FIN_DB_PW".to_owned())]
        );
        let m = SECRETS_ENV.derive(&c).expect("manifest");
        assert!(
            m.provides
                .get("secrets")
                .is_some_and(|p| p.generation(1).is_some())
        );
        let bad = SECRETS_ENV
            .derive(&config(json!({ "aliases": { "a/b": "X=Y" } })))
            .expect_err("bad alias");
        assert_eq!(bad[0].pointer, "/aliases/a~1b");
        assert!(SECRETS_ENV.derive(&config(json!({ "prefix": 3 }))).is_err());
        // A value typed where a variable name belongs is refused, and the
        // message never repeats it.
        let typed = SECRETS_ENV
            .derive(&config(json!({
                "prefix": "finance-",
                "aliases": { "db.password": "Pr0dPassw0rd", "ok": "_OK_1" }
            })))
            .expect_err("not variable names");
        assert_eq!(
            typed.iter().map(|p| p.pointer.as_str()).collect::<Vec<_>>(),
            ["/prefix", "/aliases/db.password"]
        );
        for p in &typed {
            assert!(
                !p.message.contains("Pr0dPassw0rd") && !p.message.contains("finance-"),
                "{}",
                p.message
            );
        }
    }
}
