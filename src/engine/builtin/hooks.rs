//! The hook kinds `audit`, `deny` and `hook-command`: middleware from TOML.
//!
//! Hooks (the Oracle runtime's `getMiddlewares` channel) were reachable
//! only from Rust plugins; these kinds make the common ones a few lines of
//! configuration: an append-only audit log, a deny list for tool calls,
//! and an executable run once per event. This module is the pure half:
//! config schemas, manifests (name = kind, version `1.0.0`, providing
//! nothing), typed specs, the deny list's matching and the parsing of a
//! hook command's reply. Files and processes are the adapters' business
//! (`crate::plugins::hooks`).
//!
//! Event names are the runtime's `HookEvent` names; the engine cannot
//! depend on the runtime, so they are listed here ([`EVENTS`]) and a test
//! at the edge keeps the two lists equal.

use std::time::Duration;

use serde_json::{Value, json};

use super::command::{check_env_names, parse_timeout};
use super::{BuiltinKind, ConfigProblem};
use crate::engine::model::{ConfigValue, Manifest};
use crate::engine::policy::{ArgumentPattern, JsonPointer};
use crate::engine::schema_check;
use crate::engine::version::Version;

/// One hook event: name, whether it is dispatched on the data plane, and
/// whether a bail refuses the operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventInfo {
    /// The name configs use.
    pub name: &'static str,
    /// Dispatched against a run's generation.
    pub data_plane: bool,
    /// A bail refuses the operation.
    pub refusable: bool,
}

const fn ev(name: &'static str, data_plane: bool, refusable: bool) -> EventInfo {
    EventInfo {
        name,
        data_plane,
        refusable,
    }
}

/// Every hook event, in the runtime's order.
pub const EVENTS: &[EventInfo] = &[
    ev("plugin_mounting", false, false),
    ev("plugin_mounted", false, false),
    ev("plugin_unmounting", false, false),
    ev("plugin_unmounted", false, false),
    ev("before_agent_run", true, true),
    ev("after_agent_run", true, false),
    ev("agent_error", true, false),
    ev("before_tool_execute", true, true),
    ev("after_tool_execute", true, false),
    ev("tool_error", true, false),
    ev("generation_published", false, false),
    ev("generation_draining", false, false),
    ev("policy_decision", true, false),
    ev("before_model_call", true, true),
    ev("after_model_call", true, false),
];

/// The event called `name`.
pub fn event(name: &str) -> Option<&'static EventInfo> {
    EVENTS.iter().find(|e| e.name == name)
}

/// The audit kind.
pub const AUDIT: BuiltinKind = BuiltinKind {
    name: "audit",
    summary: "append one redacted JSON line per hook event to a file",
    config_schema: audit_schema,
    manifest: audit_manifest,
};

/// The deny kind.
pub const DENY: BuiltinKind = BuiltinKind {
    name: "deny",
    summary: "refuse tool calls by tool name or argument globs",
    config_schema: deny_schema,
    manifest: deny_manifest,
};

/// The hook-command kind.
pub const HOOK_COMMAND: BuiltinKind = BuiltinKind {
    name: "hook-command",
    summary: "run an executable once per hook event (observe, transform or bail)",
    config_schema: hook_command_schema,
    manifest: hook_command_manifest,
};

/// The default priority of `audit` hooks: before the others, so calls a
/// later hook refuses are recorded too.
pub const AUDIT_PRIORITY: i32 = -1000;
/// The default priority of `deny` hooks: after transforms, so the deny list
/// judges the arguments the tool would receive.
pub const DENY_PRIORITY: i32 = 1000;
/// The default timeout of one `hook-command` run.
pub const HOOK_COMMAND_TIMEOUT_SECONDS: f64 = 10.0;

fn events_schema(description: &str) -> Value {
    let names: Vec<&str> = EVENTS.iter().map(|e| e.name).collect();
    json!({
        "type": "array",
        "items": { "type": "string", "enum": names },
        "description": description,
    })
}

fn priority_schema(default: i32) -> Value {
    json!({
        "type": "integer",
        "minimum": i32::MIN,
        "maximum": i32::MAX,
        "description": format!("Hook priority: lower runs first (default {default})."),
    })
}

fn schema(title: &str, required: &[&str], properties: Value) -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": title,
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": properties,
    })
}

/// The `audit` config schema.
pub fn audit_schema() -> Value {
    schema(
        "audit log",
        &["path"],
        json!({
            "path": { "type": "string", "description": "The JSON-lines file appended to, relative to the composition's directory." },
            "events": events_schema("Events recorded (default: every data-plane event)."),
            "priority": priority_schema(AUDIT_PRIORITY),
        }),
    )
}

/// The `deny` config schema.
pub fn deny_schema() -> Value {
    schema(
        "deny list",
        &[],
        json!({
            "tools": {
                "type": "array",
                "items": { "type": "string" },
                "description": "Tool name globs refused (`*` any run of characters, `?` one character).",
            },
            "arguments": {
                "type": "array",
                "description": "Argument rules: a call is refused when the string (or any string of the array) at `pointer` matches `pattern`.",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["pointer", "pattern"],
                    "properties": {
                        "pointer": { "type": "string", "description": "JSON Pointer into the call's arguments, e.g. `/path`." },
                        "pattern": { "type": "string", "description": "Glob over the value, the grants' dialect read as `.gitignore` reads a line: `*` within one segment, `**` whole segments, `?` one character; without `/` it matches any segment (`*.env` refuses `a/b/.env`), with `/` it is anchored and refuses everything below what it matches. Values are also matched normalized and cut at a NUL." },
                        "tools": { "type": "array", "items": { "type": "string" }, "description": "Only for tools matching these globs (default: every tool)." }
                    }
                }
            },
            "reason": { "type": "string", "description": "Why, as the model reads it (default `refused by the deny list`)." },
            "priority": priority_schema(DENY_PRIORITY),
        }),
    )
}

/// The `hook-command` config schema.
pub fn hook_command_schema() -> Value {
    schema(
        "hook command",
        &["argv", "events"],
        json!({
            "argv": {
                "type": "array",
                "minItems": 1,
                "items": { "type": "string" },
                "description": "The program and its arguments (no shell); it reads `{\"event\": name, \"payload\": payload}` as JSON on stdin.",
            },
            "events": events_schema("Events the program runs for."),
            "mode": {
                "type": "string",
                "enum": ["observe", "transform", "bail"],
                "description": "`observe` (default): the reply is ignored; `transform`: `{\"action\":\"transform\",\"payload\":{…}}` replaces the payload; `bail`: `{\"action\":\"bail\",\"reason\":\"…\"}` refuses (refusable events only).",
            },
            "timeout_seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": super::command::MAX_TIMEOUT_SECONDS,
                "description": "Hard timeout of one run (default 10): the whole process group is killed and the hook fails.",
            },
            "env": { "type": "array", "items": { "type": "string" }, "description": "Environment allow-list (nothing else is inherited)." },
            "cwd": { "type": "string", "description": "Working directory, relative to the composition's directory." },
            "priority": priority_schema(0),
            "error_policy": {
                "type": "string",
                "enum": ["record", "raise"],
                "description": "A failed run (non-zero exit, timeout, unparseable reply): `record` (default) and continue, or `raise` (fails the operation on the data plane). A `bail` hook that fails always refuses: a guard that cannot answer never lets the operation through.",
            },
        }),
    )
}

fn schema_problems(schema: &Value, json: &Value) -> Vec<ConfigProblem> {
    schema_check::check(schema, json)
        .into_iter()
        .map(|v| ConfigProblem::new(v.pointer, v.message))
        .collect()
}

fn hook_manifest(name: &str) -> Manifest {
    Manifest::new(
        name,
        Version::parse("1.0.0").expect("built-in versions are valid"),
    )
}

fn priority(v: Option<&Value>, default: i32) -> i32 {
    v.and_then(Value::as_i64)
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or(default)
}

/// Validated event names at `pointer` (unknown and duplicate names are
/// problems); `None` when absent.
fn events(
    v: Option<&Value>,
    pointer: &str,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Vec<&'static EventInfo>> {
    let names = v.map(|v| super::string_array(Some(v)))?;
    let mut out: Vec<&'static EventInfo> = Vec::new();
    for (i, n) in names.iter().enumerate() {
        match event(n) {
            Some(e) if out.contains(&e) => problems.push(ConfigProblem::new(
                format!("{pointer}/{i}"),
                format!("the event `{n}` is listed twice"),
            )),
            Some(e) => out.push(e),
            None => problems.push(ConfigProblem::new(
                format!("{pointer}/{i}"),
                format!("`{n}` is not a hook event"),
            )),
        }
    }
    Some(out)
}

/// An `audit` entry, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditSpec {
    /// The file, relative to the composition.
    pub path: String,
    /// Events recorded.
    pub events: Vec<&'static str>,
    /// Hook priority.
    pub priority: i32,
}

/// Parse an `audit` configuration.
pub fn parse_audit(config: &ConfigValue) -> Result<AuditSpec, Vec<ConfigProblem>> {
    let json = config.to_json();
    let mut problems = schema_problems(&audit_schema(), &json);
    if !problems.is_empty() {
        return Err(problems);
    }
    let path = json
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if path.trim().is_empty() {
        problems.push(ConfigProblem::new("/path", "the path must not be empty"));
    }
    let events = events(json.get("events"), "/events", &mut problems)
        .unwrap_or_else(|| EVENTS.iter().filter(|e| e.data_plane).collect());
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(AuditSpec {
        path,
        events: events.iter().map(|e| e.name).collect(),
        priority: priority(json.get("priority"), AUDIT_PRIORITY),
    })
}

fn audit_manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    parse_audit(config).map(|_| hook_manifest("audit"))
}

/// A glob: `*` matches any run of characters (`/` included), `?` exactly
/// one; everything else is literal and case-sensitive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob(Vec<char>);

impl Glob {
    /// A glob over `pattern` (not empty).
    pub fn new(pattern: &str) -> Result<Self, String> {
        if pattern.is_empty() {
            return Err("a pattern must not be empty".into());
        }
        Ok(Self(pattern.chars().collect()))
    }

    /// Whether `text` matches the whole pattern.
    pub fn matches(&self, text: &str) -> bool {
        let p = &self.0;
        let t: Vec<char> = text.chars().collect();
        let (mut pi, mut ti) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while ti < t.len() {
            if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
                pi += 1;
                ti += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some((pi, ti));
                pi += 1;
            } else if let Some((sp, st)) = star {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            } else {
                return false;
            }
        }
        while pi < p.len() && p[pi] == '*' {
            pi += 1;
        }
        pi == p.len()
    }

    /// The pattern as text.
    pub fn as_string(&self) -> String {
        self.0.iter().collect()
    }
}

/// One argument rule of a deny list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentRule {
    /// Where in the arguments.
    pub pointer: JsonPointer,
    /// What is refused.
    pub pattern: ArgumentPattern,
    /// The tools it applies to (empty: every tool).
    pub tools: Vec<Glob>,
}

/// A `deny` entry, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenySpec {
    /// Tool name globs.
    pub tools: Vec<Glob>,
    /// Argument rules.
    pub arguments: Vec<ArgumentRule>,
    /// The reason the model reads.
    pub reason: String,
    /// Hook priority.
    pub priority: i32,
}

impl DenySpec {
    /// Why a call of `tool` with `args` is refused, if it is: the configured
    /// reason and what matched.
    pub fn refusal(&self, tool: &str, args: &Value) -> Option<String> {
        if let Some(g) = self.tools.iter().find(|g| g.matches(tool)) {
            return Some(format!(
                "{} (tool `{tool}` matches `{}`)",
                self.reason,
                g.as_string()
            ));
        }
        for rule in &self.arguments {
            if !rule.tools.is_empty() && !rule.tools.iter().any(|g| g.matches(tool)) {
                continue;
            }
            let values: Vec<&str> = match rule.pointer.resolve(args) {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for v in values {
                if rule.pattern.matches(v) {
                    return Some(format!(
                        "{} (argument `{}` matches `{}`)",
                        self.reason, rule.pointer, rule.pattern
                    ));
                }
            }
        }
        None
    }
}

fn globs(names: &[String], pointer: &str, problems: &mut Vec<ConfigProblem>) -> Vec<Glob> {
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        match Glob::new(n) {
            Ok(g) => out.push(g),
            Err(e) => problems.push(ConfigProblem::new(format!("{pointer}/{i}"), e)),
        }
    }
    out
}

/// Parse a `deny` configuration.
pub fn parse_deny(config: &ConfigValue) -> Result<DenySpec, Vec<ConfigProblem>> {
    let json = config.to_json();
    let mut problems = schema_problems(&deny_schema(), &json);
    if !problems.is_empty() {
        return Err(problems);
    }
    let tools = globs(
        &super::string_array(json.get("tools")),
        "/tools",
        &mut problems,
    );
    let mut arguments = Vec::new();
    let items = json
        .get("arguments")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, item) in items.iter().enumerate() {
        let text = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
        let pointer = match JsonPointer::parse(text("pointer")) {
            Ok(p) => Some(p),
            Err(e) => {
                problems.push(ConfigProblem::new(format!("/arguments/{i}/pointer"), e));
                None
            }
        };
        let pattern = match ArgumentPattern::parse(text("pattern")) {
            Ok(g) => Some(g),
            Err(e) => {
                problems.push(ConfigProblem::new(format!("/arguments/{i}/pattern"), e));
                None
            }
        };
        let only = globs(
            &super::string_array(item.get("tools")),
            &format!("/arguments/{i}/tools"),
            &mut problems,
        );
        if let (Some(pointer), Some(pattern)) = (pointer, pattern) {
            arguments.push(ArgumentRule {
                pointer,
                pattern,
                tools: only,
            });
        }
    }
    if problems.is_empty() && tools.is_empty() && arguments.is_empty() {
        problems.push(ConfigProblem::new(
            "",
            "a deny list needs `tools` or `arguments`: this one refuses nothing",
        ));
    }
    let reason = json
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("refused by the deny list")
        .to_owned();
    if reason.trim().is_empty() {
        problems.push(ConfigProblem::new(
            "/reason",
            "the reason must not be blank",
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(DenySpec {
        tools,
        arguments,
        reason,
        priority: priority(json.get("priority"), DENY_PRIORITY),
    })
}

fn deny_manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    parse_deny(config).map(|_| hook_manifest("deny"))
}

/// How a hook command's reply is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookCommandMode {
    /// Ignored.
    Observe,
    /// A `transform` reply replaces the payload.
    Transform,
    /// A `bail` reply refuses.
    Bail,
}

/// A `hook-command` entry, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct HookCommandSpec {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Events it runs for.
    pub events: Vec<&'static str>,
    /// Mode.
    pub mode: HookCommandMode,
    /// Hard timeout of one run.
    pub timeout: Duration,
    /// Environment allow-list.
    pub env: Vec<String>,
    /// Working directory, relative to the composition.
    pub cwd: Option<String>,
    /// Hook priority.
    pub priority: i32,
    /// Whether a failed run fails the operation (`error_policy = "raise"`).
    pub raise: bool,
}

/// Parse a `hook-command` configuration.
pub fn parse_hook_command(config: &ConfigValue) -> Result<HookCommandSpec, Vec<ConfigProblem>> {
    let json = config.to_json();
    let mut problems = schema_problems(&hook_command_schema(), &json);
    if !problems.is_empty() {
        return Err(problems);
    }
    let argv = super::string_array(json.get("argv"));
    let Some((program, args)) = argv.split_first() else {
        return Err(vec![ConfigProblem::new(
            "/argv",
            "`argv` must name the program to run",
        )]);
    };
    if program.is_empty() {
        problems.push(ConfigProblem::new(
            "/argv/0",
            "the program must not be empty",
        ));
    }
    let events = events(json.get("events"), "/events", &mut problems).unwrap_or_default();
    if events.is_empty() && problems.is_empty() {
        problems.push(ConfigProblem::new("/events", "list at least one event"));
    }
    let mode = match json.get("mode").and_then(Value::as_str) {
        Some("transform") => HookCommandMode::Transform,
        Some("bail") => HookCommandMode::Bail,
        _ => HookCommandMode::Observe,
    };
    if mode == HookCommandMode::Bail {
        for (i, e) in events.iter().enumerate() {
            if !e.refusable {
                problems.push(ConfigProblem::new(
                    format!("/events/{i}"),
                    format!(
                        "`{}` cannot be refused, so a bail hook cannot run for it",
                        e.name
                    ),
                ));
            }
        }
    }
    let timeout = parse_timeout(
        json.get("timeout_seconds"),
        HOOK_COMMAND_TIMEOUT_SECONDS,
        "/timeout_seconds",
        &mut problems,
    );
    let env = super::string_array(json.get("env"));
    check_env_names(&env, "/env", &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(HookCommandSpec {
        program: program.clone(),
        args: args.to_vec(),
        events: events.iter().map(|e| e.name).collect(),
        mode,
        timeout,
        env,
        cwd: json.get("cwd").and_then(Value::as_str).map(str::to_owned),
        priority: priority(json.get("priority"), 0),
        raise: json.get("error_policy").and_then(Value::as_str) == Some("raise"),
    })
}

fn hook_command_manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    parse_hook_command(config).map(|_| hook_manifest("hook-command"))
}

/// What a hook command replied.
#[derive(Clone, Debug, PartialEq)]
pub enum HookCommandReply {
    /// Nothing to change (empty output or `{"action":"continue"}`).
    Continue,
    /// `{"action":"transform","payload":{…}}`.
    Transform(Value),
    /// `{"action":"bail","reason":"…"}`.
    Bail(String),
}

/// Parse a hook command's stdout.
pub fn parse_reply(stdout: &[u8]) -> Result<HookCommandReply, String> {
    let text = String::from_utf8_lossy(stdout);
    if text.trim().is_empty() {
        return Ok(HookCommandReply::Continue);
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        format!("the reply is not JSON ({e}); print nothing or `{{\"action\":\"continue\"}}`")
    })?;
    let action = v
        .get("action")
        .and_then(Value::as_str)
        .ok_or("the reply has no string `action` (continue, transform or bail)")?;
    match action {
        "continue" => Ok(HookCommandReply::Continue),
        "transform" => match v.get("payload") {
            Some(p) if p.is_object() => Ok(HookCommandReply::Transform(p.clone())),
            _ => Err("a `transform` reply needs an object `payload`".into()),
        },
        "bail" => Ok(HookCommandReply::Bail(
            v.get("reason")
                .and_then(Value::as_str)
                .unwrap_or("refused by a hook command")
                .to_owned(),
        )),
        other => Err(format!(
            "unknown action `{other}` (continue, transform or bail)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(v: Value) -> ConfigValue {
        crate::engine::model::ConfigValue::Table(
            v.as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), json_to_config(v)))
                .collect(),
        )
    }

    fn json_to_config(v: &Value) -> ConfigValue {
        match v {
            Value::Bool(b) => ConfigValue::Bool(*b),
            Value::Number(n) => n
                .as_i64()
                .map_or_else(|| ConfigValue::Float(n.as_f64().unwrap()), ConfigValue::Int),
            Value::String(s) => ConfigValue::Str(s.clone()),
            Value::Array(a) => ConfigValue::Array(a.iter().map(json_to_config).collect()),
            Value::Object(_) => cfg(v.clone()),
            Value::Null => unreachable!(),
        }
    }

    fn pointers(kind: &BuiltinKind, v: Value) -> Vec<String> {
        kind.derive(&cfg(v))
            .unwrap_err()
            .into_iter()
            .map(|p| p.pointer)
            .collect()
    }

    #[test]
    fn manifests_are_named_after_the_kind_and_provide_nothing() {
        for (kind, config) in [
            (&AUDIT, json!({ "path": "a.jsonl" })),
            (&DENY, json!({ "tools": ["rm*"] })),
            (
                &HOOK_COMMAND,
                json!({ "argv": ["cat"], "events": ["tool_error"] }),
            ),
        ] {
            let m = kind.derive(&cfg(config)).unwrap();
            assert_eq!(m.name, kind.name);
            assert_eq!(m.version.as_str(), "1.0.0");
            assert_eq!(m.kind.as_deref(), Some(kind.name));
            assert!(m.provides.is_empty() && m.tools.is_empty() && m.permissions.is_empty());
        }
    }

    #[test]
    fn event_names_are_checked_by_schema_and_derivation() {
        let got = pointers(&AUDIT, json!({ "path": "a", "events": ["tool_eror"] }));
        assert_eq!(got, ["/events/0"]);
        let got = pointers(
            &AUDIT,
            json!({ "path": "a", "events": ["tool_error", "tool_error"] }),
        );
        assert_eq!(got, ["/events/1"]);
        let got = pointers(&HOOK_COMMAND, json!({ "argv": ["x"], "events": [] }));
        assert_eq!(got, ["/events"]);
        let got = pointers(
            &HOOK_COMMAND,
            json!({ "argv": ["x"], "events": ["before_tool_execute", "after_tool_execute"], "mode": "bail" }),
        );
        assert_eq!(got, ["/events/1"]);
        let got = pointers(
            &HOOK_COMMAND,
            json!({ "argv": ["x"], "events": ["tool_error"], "mode": "loud" }),
        );
        assert_eq!(got, ["/mode"]);
        let got = pointers(
            &HOOK_COMMAND,
            json!({ "argv": ["x"], "events": ["tool_error"], "env": ["A=1"], "timeout_seconds": 0 }),
        );
        assert_eq!(got, ["/timeout_seconds"]);
        let got = pointers(&DENY, json!({ "tools": ["x"], "extra": 1 }));
        assert_eq!(got.len(), 1);
        let got = pointers(&DENY, json!({}));
        assert_eq!(got, [""]);
        let got = pointers(
            &DENY,
            json!({ "tools": [""], "arguments": [{ "pointer": "path", "pattern": "" }] }),
        );
        assert_eq!(
            got,
            ["/tools/0", "/arguments/0/pointer", "/arguments/0/pattern"]
        );
        let spec = parse_audit(&cfg(json!({ "path": "a" }))).unwrap();
        assert_eq!(spec.events.len(), 9);
        assert!(spec.events.contains(&"before_model_call"));
        assert!(!spec.events.contains(&"plugin_mounted"));
        assert_eq!(spec.priority, AUDIT_PRIORITY);
    }

    #[test]
    fn globs_match_whole_texts() {
        let g = |p: &str, t: &str| Glob::new(p).unwrap().matches(t);
        assert!(g("rm*", "rm_rf"));
        assert!(g("*", ""));
        assert!(g("*.env", "/home/u/.env"));
        assert!(g("*.env", "config/prod.env"));
        assert!(!g("*.env", "prod.env.bak"));
        assert!(g("a?c", "abc"));
        assert!(!g("a?c", "ac"));
        assert!(g("*a*b*", "xxaxxbxx"));
        assert!(!g("*a*b", "xxaxxbxxc"));
        assert!(g("é*", "éa"));
        assert!(!g("Rm*", "rm"));
    }

    #[test]
    fn the_deny_list_refuses_by_tool_and_by_argument() {
        let spec = parse_deny(&cfg(json!({
            "tools": ["shell*"],
            "arguments": [
                { "pointer": "/path", "pattern": "*.env" },
                { "pointer": "/paths", "pattern": "/secrets/*" },
                { "pointer": "/url", "pattern": "*internal*", "tools": ["fetch"] },
            ],
            "reason": "not here",
        })))
        .unwrap();
        assert_eq!(spec.priority, DENY_PRIORITY);
        let r = spec.refusal("shell_exec", &json!({})).unwrap();
        assert!(r.starts_with("not here") && r.contains("shell*"), "{r}");
        assert!(spec.refusal("read", &json!({ "path": "a/.env" })).is_some());
        // A NUL cannot hide the end of a path from the pattern.
        assert!(
            spec.refusal("read", &json!({ "path": "x.env\u{0}" }))
                .is_some()
        );
        assert!(
            spec.refusal("read", &json!({ "path": "x.env\u{0}.txt" }))
                .is_some()
        );
        assert!(
            spec.refusal("read", &json!({ "path": "a/.env.txt" }))
                .is_none()
        );
        assert!(spec.refusal("read", &json!({ "path": 3 })).is_none());
        assert!(
            spec.refusal("read", &json!({ "paths": ["/ok", "/tmp/../secrets/k"] }))
                .is_some(),
            "normalized paths match too"
        );
        assert!(
            spec.refusal("read", &json!({ "url": "http://internal" }))
                .is_none()
        );
        assert!(
            spec.refusal("fetch", &json!({ "url": "http://internal" }))
                .is_some()
        );
    }

    #[test]
    fn replies_parse_into_actions() {
        assert_eq!(parse_reply(b"").unwrap(), HookCommandReply::Continue);
        assert_eq!(parse_reply(b" \n").unwrap(), HookCommandReply::Continue);
        assert_eq!(
            parse_reply(br#"{"action":"continue"}"#).unwrap(),
            HookCommandReply::Continue
        );
        assert_eq!(
            parse_reply(br#"{"action":"transform","payload":{"a":1}}"#).unwrap(),
            HookCommandReply::Transform(json!({"a": 1}))
        );
        assert_eq!(
            parse_reply(br#"{"action":"bail","reason":"no"}"#).unwrap(),
            HookCommandReply::Bail("no".into())
        );
        assert!(parse_reply(b"nope").is_err());
        assert!(parse_reply(br#"{"action":"transform","payload":3}"#).is_err());
        assert!(parse_reply(br#"{"action":"explode"}"#).is_err());
        assert!(parse_reply(br#"[1]"#).is_err());
    }
}
