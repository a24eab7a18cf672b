//! `mcp`: the tools of an MCP server, mounted as chassis tools.
//!
//! This is the pure half: the `config` schema, the name filter and prefix,
//! the default [`ToolPolicy`] from a server's annotations with the entry's
//! overrides, and the manifest. The manifest's tools cannot come from the
//! server here — the pure commands never start one — so they come from the
//! lock file ([`crate::lock`]): [`manifest_with_lock`] turns a locked entry
//! into declared tools, so `tool_schema_hash` covers every schema the
//! server offered. The client, transports and supervision live in
//! `crate::plugins::mcp`.
//!
//! Names in `tools.allow`, `tools.deny`, `policy` and `expect_tools` are the
//! server's names (before `tools.prefix`).
//!
//! ```toml
//! [entries.fs]
//! plugin = "mcp"
//! config.command = "npx"
//! config.args = ["@modelcontextprotocol/server-filesystem", "."]
//! config.tools = { allow = ["read_file", "list_directory"], prefix = "fs_" }
//! config.policy.read_file = { permissions = ["filesystem.read:{/path}"] }
//! ```

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{BuiltinKind, ConfigProblem};
use crate::engine::model::{ConfigValue, Manifest, ToolDecl, ToolName};
use crate::engine::policy::ToolPolicy;
use crate::engine::policy::tool_policy::MAX_TIMEOUT_SECONDS;
use crate::engine::version::Version;
use crate::lock::LockEntry;

/// The kind.
pub const KIND: BuiltinKind = BuiltinKind {
    name: "mcp",
    summary: "the tools of an MCP server (stdio child process or streamable HTTP)",
    config_schema,
    manifest,
};

/// Seconds one call may take when neither the tool's policy nor the entry
/// sets `timeout_seconds`.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 60.0;
/// Seconds the start (spawn, handshake, `tools/list`) may take by default.
pub const DEFAULT_STARTUP_TIMEOUT_SECONDS: f64 = 30.0;

/// The longest message a stdio server may send, by default (8 MiB).
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 8 << 20;

/// The most `max_reply_bytes` may be set to (1 GiB).
pub const MAX_REPLY_BYTES: u64 = 1 << 30;
/// How long `protocol = "auto"` waits for a `server/discover` answer before
/// respawning the server in `initialize` mode.
pub const AUTO_PROBE_SECONDS: f64 = 2.0;

fn secret_ref_schema(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        "additionalProperties": false,
        "required": ["secret"],
        "properties": { "secret": { "type": "string", "minLength": 1 } }
    })
}

fn string_list(description: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string", "minLength": 1 }, "description": description })
}

/// The `config` schema.
pub fn config_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "MCP server",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "command": { "type": "string", "minLength": 1, "description": "stdio transport: the program (a path, or a name looked up in PATH, e.g. `npx`)." },
            "args": string_list("Arguments of `command`."),
            "cwd": { "type": "string", "description": "Working directory of the server, relative to the composition (default: the composition's directory)." },
            "env": string_list("Names of environment variables passed through to the server; besides them it only gets PATH, HOME, LANG and TMPDIR."),
            "secret_env": {
                "type": "object",
                "description": "Environment variables whose values are secrets, resolved at start and never logged.",
                "additionalProperties": secret_ref_schema("The secret whose value the variable gets.")
            },
            "url": { "type": "string", "minLength": 1, "description": "streamable HTTP transport: the MCP endpoint URL." },
            "headers": {
                "type": "object",
                "description": "HTTP headers: a string, or a secret reference.",
                "additionalProperties": { "anyOf": [ { "type": "string" }, secret_ref_schema("The secret whose value the header gets.") ] }
            },
            "protocol": {
                "enum": ["auto", "initialize", "discover"],
                "description": "Lifecycle: `initialize` (protocol versions up to 2025-11-25), `discover` (stateless 2026-07-28 `server/discover`), or `auto` (probe discover for 2 s, then respawn in initialize mode; the default)."
            },
            "tools": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "allow": string_list("Only these server tools are mounted (default: all)."),
                    "deny": string_list("These server tools are never mounted."),
                    "prefix": { "type": "string", "description": "Prepended to every mounted tool's name (`fs_` gives `fs_read_file`)." }
                }
            },
            "policy": {
                "type": "object",
                "description": "Per server tool name: policy overriding the defaults derived from the server's annotations.",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "permissions": string_list("Permission templates, e.g. `filesystem.read:{/path}`."),
                        "approval_required": { "type": "boolean" },
                        "timeout_seconds": { "type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_SECONDS },
                        "cost_class": { "type": "string", "minLength": 1 },
                        "idempotent": { "type": "boolean" },
                        "side_effects": string_list("Side-effect labels, e.g. `destructive`.")
                    }
                }
            },
            "permissions": string_list("Permissions the entry declares (grant grammar) beyond those named by `policy`; `[policy.tools]` overrides of its tools must stay within them."),
            "expect_tools": string_list("Server tools the entry needs: publication fails when the server does not offer them."),
            "timeout_seconds": { "type": "number", "exclusiveMinimum": 0, "maximum": 86400, "description": "Default per-call timeout (default 60)." },
            "startup_timeout_seconds": { "type": "number", "exclusiveMinimum": 0, "maximum": 3600, "description": "How long spawn, handshake and tools/list may take (default 30)." },
            "max_reply_bytes": { "type": "integer", "minimum": 1024, "maximum": MAX_REPLY_BYTES, "description": "The longest message a stdio server may send (default 8388608, 8 MiB): a longer one fails the call with a clear error and closes the connection (the server is started again on the next call), so a runaway reply cannot exhaust memory." }
        }
    })
}

/// The entry's tool filter and prefix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// `tools.allow` (`None`: everything).
    pub allow: Option<Vec<String>>,
    /// `tools.deny`.
    pub deny: Vec<String>,
    /// `tools.prefix`.
    pub prefix: String,
}

impl ToolFilter {
    /// Read from an entry's configuration (as JSON).
    pub fn from_config(config: &Value) -> Self {
        let tools = config.get("tools");
        Self {
            allow: tools
                .and_then(|t| t.get("allow"))
                .map(|a| super::string_array(Some(a))),
            deny: super::string_array(tools.and_then(|t| t.get("deny"))),
            prefix: tools
                .and_then(|t| t.get("prefix"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// Whether the server tool `name` is mounted.
    pub fn admits(&self, name: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|a| a.iter().any(|n| n == name))
            && !self.deny.iter().any(|n| n == name)
    }

    /// The name chassis exposes for the server tool `name`.
    pub fn exposed(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }
}

/// The policy of server tool `remote` (exposed under any name): defaults
/// from the server's `annotations`, then the entry's `policy.<remote>`.
///
/// `readOnlyHint` gives `side_effects = ["read_only"]` and `idempotent`;
/// `destructiveHint` gives `["destructive"]` (only when not read-only, as
/// the specification says); `idempotentHint` sets `idempotent`;
/// `openWorldHint` adds `open_world`. The annotations are kept in the
/// policy's `metadata` (`mcp.annotations`). Hints are hints: an override
/// always wins, and the defaults never grant anything.
pub fn tool_policy(config: &Value, remote: &str, annotations: Option<&Value>) -> ToolPolicy {
    let mut p = ToolPolicy::default();
    let hint = |k: &str| annotations.and_then(|a| a.get(k)).and_then(Value::as_bool);
    let read_only = hint("readOnlyHint") == Some(true);
    if read_only {
        p.side_effects.push("read_only".into());
        p.idempotent = true;
    } else if hint("destructiveHint") == Some(true) {
        p.side_effects.push("destructive".into());
    }
    if let Some(i) = hint("idempotentHint") {
        p.idempotent = i || read_only;
    }
    if hint("openWorldHint") == Some(true) {
        p.side_effects.push("open_world".into());
    }
    if let Some(a) = annotations.filter(|a| a.as_object().is_some_and(|o| !o.is_empty())) {
        p.metadata.insert("mcp.annotations".into(), a.clone());
    }
    p.timeout_seconds = Some(
        config
            .get("timeout_seconds")
            .and_then(Value::as_f64)
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS),
    );
    if let Some(o) = config.get("policy").and_then(|p| p.get(remote)) {
        if let Some(v) = o.get("permissions") {
            p.permissions = super::string_array(Some(v));
        }
        if let Some(v) = o.get("approval_required").and_then(Value::as_bool) {
            p.approval_required = v;
        }
        if let Some(v) = o.get("timeout_seconds").and_then(Value::as_f64) {
            p.timeout_seconds = Some(v);
        }
        if let Some(v) = o.get("cost_class").and_then(Value::as_str) {
            p.cost_class = Some(v.to_owned());
        }
        if let Some(v) = o.get("idempotent").and_then(Value::as_bool) {
            p.idempotent = v;
        }
        if let Some(v) = o.get("side_effects") {
            p.side_effects = super::string_array(Some(v));
        }
    }
    p
}

/// What the manifest declares: `permissions`, plus the permission name of
/// every template in `policy` (unscoped, so any resource its template
/// expands to is declared).
fn declared_permissions(config: &Value) -> Vec<String> {
    let mut out: BTreeSet<String> = super::string_array(config.get("permissions"))
        .into_iter()
        .collect();
    if let Some(policy) = config.get("policy").and_then(Value::as_object) {
        for p in policy.values() {
            for t in super::string_array(p.get("permissions")) {
                let name = t.split(':').next().unwrap_or_default().trim();
                if !name.is_empty() {
                    out.insert(name.to_owned());
                }
            }
        }
    }
    out.into_iter().collect()
}

fn problems(config: &Value) -> Vec<ConfigProblem> {
    let mut out = Vec::new();
    match (config.get("command"), config.get("url")) {
        (Some(_), Some(_)) => out.push(ConfigProblem::new(
            "/url",
            "give `command` (stdio) or `url` (streamable HTTP), not both",
        )),
        (None, None) => out.push(ConfigProblem::new(
            "",
            "give `command` (a stdio server) or `url` (a streamable HTTP server)",
        )),
        _ => {}
    }
    if let Some(url) = config.get("url").and_then(Value::as_str)
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        out.push(ConfigProblem::new(
            "/url",
            format!("`{url}` is not an http:// or https:// URL"),
        ));
    }
    if config.get("url").is_some() {
        for key in ["args", "cwd", "env", "secret_env"] {
            if config.get(key).is_some() {
                out.push(ConfigProblem::new(
                    format!("/{key}"),
                    format!("`{key}` is for stdio servers (`command`), not `url`"),
                ));
            }
        }
    }
    // Names only, as for `command` tools (`NAME=value` may hold a secret).
    super::command::check_env_names(&super::string_array(config.get("env")), "/env", &mut out);
    if config.get("command").is_some() && config.get("headers").is_some() {
        out.push(ConfigProblem::new(
            "/headers",
            "`headers` is for HTTP servers (`url`), not `command`",
        ));
    }
    if let Some(policy) = config.get("policy").and_then(Value::as_object) {
        for (name, p) in policy {
            let mut tp = tool_policy(config, name, None);
            tp.permissions = super::string_array(p.get("permissions"));
            if let Err(e) = tp.validate() {
                out.push(ConfigProblem::new(
                    format!("/policy/{}", name.replace('~', "~0").replace('/', "~1")),
                    e.to_string(),
                ));
            }
        }
    }
    out
}

/// The `expect_tools` of `config` (server names) that `offered` — a server's
/// tools after the entry's filter, as locked or as live — lacks. One check
/// for `check` (the lock), `chassis tools` (the live list) and mount.
pub fn missing_expected(config: &Value, offered: &LockEntry) -> Vec<String> {
    super::string_array(config.get("expect_tools"))
        .into_iter()
        .filter(|n| !offered.tools.iter().any(|t| &t.remote_name == n))
        .collect()
}

fn manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    manifest_with_lock(config, None)
}

/// The manifest of an entry with this configuration: its tools are the
/// locked ones (none without a lock entry), and `metadata` records the
/// locked server identity and protocol (`mcp.server_name`,
/// `mcp.server_version`, `mcp.protocol_version`).
pub fn manifest_with_lock(
    config: &ConfigValue,
    lock: Option<&LockEntry>,
) -> Result<Manifest, Vec<ConfigProblem>> {
    let json = config.to_json();
    let problems = problems(&json);
    if !problems.is_empty() {
        return Err(problems);
    }
    let version = Version::parse("1.0.0").expect("a valid version");
    let mut m = Manifest::new("mcp", version);
    m.kind = Some(KIND.name.to_owned());
    m.permissions = declared_permissions(&json);
    let filter = ToolFilter::from_config(&json);
    m.expected_tools = super::string_array(json.get("expect_tools"))
        .iter()
        .filter_map(|n| ToolName::new(&filter.exposed(n)).ok())
        .collect();
    m.expected_tools.sort();
    m.expected_tools.dedup();
    if let Some(lock) = lock {
        for (k, v) in [
            ("mcp.server_name", &lock.server_name),
            ("mcp.server_version", &lock.server_version),
            ("mcp.protocol_version", &lock.protocol_version),
        ] {
            m.metadata.insert(k.into(), ConfigValue::Str(v.clone()));
        }
        let mut tools: Vec<ToolDecl> = lock.tools.iter().filter_map(ToolDecl::from_lock).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools.dedup_by(|a, b| a.name == b.name);
        m.tools = tools;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cv(v: &Value) -> ConfigValue {
        match v {
            Value::Bool(b) => ConfigValue::Bool(*b),
            Value::Number(n) => n
                .as_i64()
                .map_or_else(|| ConfigValue::Float(n.as_f64().unwrap()), ConfigValue::Int),
            Value::String(s) => ConfigValue::Str(s.clone()),
            Value::Array(a) => ConfigValue::Array(a.iter().map(cv).collect()),
            Value::Object(o) => {
                ConfigValue::Table(o.iter().map(|(k, v)| (k.clone(), cv(v))).collect())
            }
            Value::Null => ConfigValue::Str(String::new()),
        }
    }

    #[test]
    fn filter_allows_denies_and_prefixes() {
        let f = ToolFilter::from_config(
            &json!({ "tools": { "allow": ["a", "b"], "deny": ["b"], "prefix": "x_" } }),
        );
        assert!(f.admits("a"));
        assert!(!f.admits("b"));
        assert!(!f.admits("c"));
        assert_eq!(f.exposed("a"), "x_a");
        assert!(ToolFilter::default().admits("anything"));
    }

    #[test]
    fn policy_defaults_from_annotations_then_overrides() {
        let config = json!({ "timeout_seconds": 5,
            "policy": { "rm": { "approval_required": true, "permissions": ["fs.write:{/path}"] } } });
        let p = tool_policy(&config, "rm", Some(&json!({ "destructiveHint": true })));
        assert_eq!(p.side_effects, ["destructive"]);
        assert!(p.approval_required);
        assert_eq!(p.timeout_seconds, Some(5.0));
        assert_eq!(p.permissions, ["fs.write:{/path}"]);
        let r = tool_policy(
            &config,
            "ls",
            Some(&json!({ "readOnlyHint": true, "destructiveHint": true })),
        );
        assert_eq!(r.side_effects, ["read_only"]);
        assert!(r.idempotent);
        let i = tool_policy(&json!({}), "x", Some(&json!({ "idempotentHint": true })));
        assert!(i.idempotent);
        assert_eq!(i.timeout_seconds, Some(DEFAULT_TIMEOUT_SECONDS));
        assert!(tool_policy(&json!({}), "x", None).side_effects.is_empty());
    }

    #[test]
    fn transport_keys_are_exclusive() {
        let c = |v: Value| problems(&v);
        assert!(c(json!({ "command": "x" })).is_empty());
        assert!(c(json!({ "url": "http://127.0.0.1:1/mcp" })).is_empty());
        assert_eq!(c(json!({})).len(), 1);
        assert_eq!(c(json!({ "command": "x", "url": "http://h" })).len(), 1);
        assert_eq!(c(json!({ "url": "ftp://h" })).len(), 1);
        assert_eq!(c(json!({ "url": "http://h", "env": ["A"] })).len(), 1);
        assert_eq!(c(json!({ "command": "srv", "env": ["A=secret"] })).len(), 1);
        assert_eq!(
            c(json!({ "command": "x", "policy": { "t": { "permissions": ["{"] } } })).len(),
            1
        );
    }

    #[test]
    fn manifest_declares_policy_permission_names_and_locked_tools() {
        let config = cv(&json!({ "command": "x",
            "policy": { "read": { "permissions": ["filesystem.read:{/path}"] } } }));
        let m = manifest_with_lock(&config, None).unwrap();
        assert_eq!(m.permissions, ["filesystem.read"]);
        assert!(m.tools.is_empty());
        let lock = LockEntry {
            server_name: "s".into(),
            server_version: "1".into(),
            protocol_version: "2025-11-25".into(),
            tools: vec![crate::lock::LockedTool {
                name: "p_read".into(),
                remote_name: "read".into(),
                input_schema: r#"{"type":"object"}"#.into(),
                ..Default::default()
            }],
            hooks: Vec::new(),
            routes: Vec::new(),
            methods: Vec::new(),
            agents: Vec::new(),
        };
        let m = manifest_with_lock(&config, Some(&lock)).unwrap();
        assert_eq!(m.tools.len(), 1);
        assert_eq!(m.tools[0].args_schema, Some(json!({ "type": "object" })));
        assert_eq!(
            m.metadata.get("mcp.protocol_version"),
            Some(&ConfigValue::Str("2025-11-25".into()))
        );
    }
}
