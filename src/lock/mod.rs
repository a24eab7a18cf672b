//! The lock file (`chassis.lock`, TOML, beside the root composition).
//!
//! Why it exists: the pure commands (`check`, `snapshot`, `explain`,
//! `diff`) never start a process, yet an `mcp` entry's tools — names,
//! descriptions, argument schemas — belong in `tool_schema_hash` like any
//! declared tool. So what a live server offered (after the entry's
//! allow/deny filter and prefix) is pinned here by
//! `chassis tools FILE --update-lock`, and the `mcp` kind derives its
//! manifest from it. A process plugin's entry is pinned the same way: every
//! tool it registers (with its policy) and every hook, so what its TOML
//! manifest does not declare is still seen, reviewed and checked at mount. The file is data, written by chassis and reviewed in
//! diffs; schemas are stored as canonical JSON strings (TOML has no `null`,
//! JSON Schemas may contain one, and one line per schema diffs well).
//!
//! ```toml
//! version = 1
//!
//! [entries.fs]
//! server_name = "secure-filesystem-server"
//! server_version = "0.2.0"
//! protocol_version = "2025-11-25"
//!
//! [[entries.fs.tools]]
//! name = "fs_read_file"
//! remote_name = "read_file"
//! description = "Read a file"
//! input_schema = '{"properties":{"path":{"type":"string"}},"type":"object"}'
//! annotations = '{"readOnlyHint":true}'
//! ```
//!
//! Parsing is pure ([`Lock::parse`]) so the loader can call it on the text
//! it read through its `Source` (a `REV:PATH` diff reads the lock at that
//! revision).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The lock file's name, beside the root composition file.
pub const LOCK_FILE: &str = "chassis.lock";

/// The format version this build reads and writes.
pub const LOCK_VERSION: u32 = 1;

/// A lock file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// Format version ([`LOCK_VERSION`]).
    pub version: u32,
    /// Per `mcp` entry id, what its server offered.
    #[serde(default)]
    pub entries: BTreeMap<String, LockEntry>,
}

/// What one `mcp` entry's server offered, or one process plugin's entry
/// registered, when the lock was written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    /// `serverInfo.name` (empty when the server gave none); a process
    /// plugin's declared name.
    #[serde(default)]
    pub server_name: String,
    /// `serverInfo.version`; a process plugin's declared version.
    #[serde(default)]
    pub server_version: String,
    /// The negotiated protocol version (`2025-11-25`, `2026-07-28`, …; the
    /// plugin protocol's `1.x` for a process plugin).
    #[serde(default)]
    pub protocol_version: String,
    /// The tools after the entry's filter and prefix, sorted by name.
    #[serde(default)]
    pub tools: Vec<LockedTool>,
    /// A process plugin's hooks, in registration order (which breaks ties
    /// of priority).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<LockedHook>,
    /// A process plugin's HTTP routes, sorted by path then method.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<LockedRoute>,
    /// The methods of the capabilities a process plugin provides, sorted
    /// by capability then name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<LockedMethod>,
    /// The agents a process plugin defines, sorted by name: the loader
    /// adds them to the composition, so the pure commands see them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<crate::engine::model::AgentDefinition>,
}

/// One method of a capability a process plugin provides.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedMethod {
    /// The capability (`database`).
    pub capability: String,
    /// The method (`insert`).
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The argument JSON Schema, as canonical JSON text.
    pub input_schema: String,
    /// The result's JSON Schema, as canonical JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_schema: Option<String>,
    /// Permissions a caller needs.
    #[serde(default)]
    pub permissions: Vec<String>,
}

/// One HTTP route a process plugin registered.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedRoute {
    /// The path under `/plugins/{entry}`.
    pub path: String,
    /// The method.
    pub method: String,
}

/// One hook a process plugin registered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedHook {
    /// The event (`before_tool_execute`, …).
    pub event: String,
    /// `observe`, `transform` or `bail`.
    pub mode: String,
    /// Lower runs first.
    #[serde(default)]
    pub priority: i32,
    /// `record` or `raise`.
    pub error_policy: String,
}

impl LockedHook {
    /// How it is named in a difference: the event and its ordinal among
    /// the hooks of that event (`before_tool_execute#0`).
    fn key(hooks: &[LockedHook]) -> Vec<String> {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        hooks
            .iter()
            .map(|h| {
                let n = seen.entry(h.event.as_str()).or_default();
                let key = format!("hook {}#{n}", h.event);
                *n += 1;
                key
            })
            .collect()
    }
}

/// One tool of a locked entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedTool {
    /// The name chassis exposes (with the entry's prefix).
    pub name: String,
    /// The name the server knows.
    pub remote_name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// The argument JSON Schema, as canonical JSON text.
    pub input_schema: String,
    /// The output schema, as canonical JSON text, if the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// The server's annotations (`readOnlyHint`, …), as canonical JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<String>,
    /// A process plugin's tool policy (permissions, approval, …), as
    /// canonical JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

impl LockedTool {
    /// The parsed argument schema (`None` when the text is not JSON).
    pub fn input_schema_json(&self) -> Option<Value> {
        serde_json::from_str(&self.input_schema).ok()
    }

    /// The parsed annotations.
    pub fn annotations_json(&self) -> Option<Value> {
        self.annotations
            .as_deref()
            .and_then(|a| serde_json::from_str(a).ok())
    }

    /// The parsed policy of a process plugin's tool.
    pub fn policy_json(&self) -> Option<Value> {
        self.policy
            .as_deref()
            .and_then(|a| serde_json::from_str(a).ok())
    }
}

/// Why a lock file could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// Not TOML of the lock's shape.
    #[error("`{LOCK_FILE}` is not a valid lock file: {0}")]
    Syntax(String),
    /// A version this build does not read.
    #[error("`{LOCK_FILE}` has format version {0}; this chassis reads version {LOCK_VERSION}")]
    Version(u32),
    /// A schema that is not JSON.
    #[error("`{LOCK_FILE}`: tool `{tool}` of entry `{entry}` has a schema that is not JSON")]
    Schema {
        /// Entry id.
        entry: String,
        /// Tool name.
        tool: String,
    },
}

/// Canonical JSON text: object keys sorted, no whitespace (serde_json's
/// map is sorted without the `preserve_order` feature).
pub fn canonical_json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

impl Lock {
    /// An empty lock of the current version.
    pub fn new() -> Self {
        Self {
            version: LOCK_VERSION,
            entries: BTreeMap::new(),
        }
    }

    /// Parse a lock file's text.
    pub fn parse(text: &str) -> Result<Self, LockError> {
        let lock: Lock = toml::from_str(text).map_err(|e| LockError::Syntax(e.message().into()))?;
        if lock.version != LOCK_VERSION {
            return Err(LockError::Version(lock.version));
        }
        for (id, entry) in &lock.entries {
            for tool in &entry.tools {
                let bad = tool.input_schema_json().is_none()
                    || tool
                        .output_schema
                        .as_deref()
                        .is_some_and(|s| serde_json::from_str::<Value>(s).is_err())
                    || tool.annotations.is_some() && tool.annotations_json().is_none()
                    || tool.policy.is_some() && tool.policy_json().is_none();
                if bad {
                    return Err(LockError::Schema {
                        entry: id.clone(),
                        tool: tool.name.clone(),
                    });
                }
            }
            for m in &entry.methods {
                let json = |s: &str| serde_json::from_str::<Value>(s).is_ok();
                if !json(&m.input_schema) || m.result_schema.as_deref().is_some_and(|s| !json(s)) {
                    return Err(LockError::Schema {
                        entry: id.clone(),
                        tool: format!("{}.{}", m.capability, m.name),
                    });
                }
            }
        }
        Ok(lock)
    }

    /// The lock file's text (deterministic: entries, tools, routes and
    /// methods sorted; hooks keep their order, which breaks priority ties).
    pub fn to_text(&self) -> String {
        let mut lock = self.clone();
        for entry in lock.entries.values_mut() {
            entry.tools.sort_by(|a, b| a.name.cmp(&b.name));
            entry.routes.sort();
            entry
                .methods
                .sort_by(|a, b| (&a.capability, &a.name).cmp(&(&b.capability, &b.name)));
        }
        let body = toml::to_string(&lock).unwrap_or_default();
        format!(
            "# chassis.lock: what each `mcp` entry's server offered and each process\n# plugin's entry registered, written by `chassis tools FILE --update-lock`.\n# Review changes; do not edit by hand.\n{body}"
        )
    }
}

/// How one tool (or a process plugin's hook) differs between two entry
/// locks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum ToolChange {
    /// Offered now, not in the lock.
    Added {
        /// Tool name.
        name: String,
    },
    /// In the lock, not offered now.
    Removed {
        /// Tool name.
        name: String,
    },
    /// Offered under the same name with another contract.
    Changed {
        /// Tool name.
        name: String,
        /// Which fields differ.
        fields: Vec<String>,
    },
}

impl std::fmt::Display for ToolChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Added { name } => write!(f, "+ {name}"),
            Self::Removed { name } => write!(f, "- {name}"),
            Self::Changed { name, fields } => write!(f, "~ {name} ({})", fields.join(", ")),
        }
    }
}

/// The differences from `locked` to `live` (server identity and protocol
/// changes are not among them): tools sorted by name, then hooks
/// (`hook before_tool_execute#0`), routes (`route GET /stats`) and
/// capability methods (`method database.insert`).
pub fn diff_tools(locked: &LockEntry, live: &LockEntry) -> Vec<ToolChange> {
    let mut out = Vec::new();
    let tools = |e: &LockEntry| -> Vec<(String, LockedTool)> {
        e.tools
            .iter()
            .map(|t| (t.name.clone(), t.clone()))
            .collect()
    };
    diff_keyed(&mut out, tools(locked), tools(live), |a, b| {
        [
            ("remote_name", a.remote_name != b.remote_name),
            ("description", a.description != b.description),
            ("input_schema", a.input_schema != b.input_schema),
            ("output_schema", a.output_schema != b.output_schema),
            ("annotations", a.annotations != b.annotations),
            ("policy", a.policy != b.policy),
        ]
    });
    let hooks = |e: &LockEntry| -> Vec<(String, LockedHook)> {
        LockedHook::key(&e.hooks)
            .into_iter()
            .zip(e.hooks.iter().cloned())
            .collect()
    };
    diff_keyed(&mut out, hooks(locked), hooks(live), |a, b| {
        [
            ("mode", a.mode != b.mode),
            ("priority", a.priority != b.priority),
            ("error_policy", a.error_policy != b.error_policy),
        ]
    });
    let routes = |e: &LockEntry| -> Vec<(String, ())> {
        e.routes
            .iter()
            .map(|r| (format!("route {} {}", r.method, r.path), ()))
            .collect()
    };
    diff_keyed(&mut out, routes(locked), routes(live), |(), ()| []);
    let methods = |e: &LockEntry| -> Vec<(String, LockedMethod)> {
        e.methods
            .iter()
            .map(|m| (format!("method {}.{}", m.capability, m.name), m.clone()))
            .collect()
    };
    diff_keyed(&mut out, methods(locked), methods(live), |a, b| {
        [
            ("description", a.description != b.description),
            ("input_schema", a.input_schema != b.input_schema),
            ("result_schema", a.result_schema != b.result_schema),
            ("permissions", a.permissions != b.permissions),
        ]
    });
    let agents = |e: &LockEntry| -> Vec<(String, crate::engine::model::AgentDefinition)> {
        e.agents
            .iter()
            .map(|a| (format!("agent {}", a.name), a.clone()))
            .collect()
    };
    diff_keyed(&mut out, agents(locked), agents(live), |a, b| {
        [
            ("description", a.description != b.description),
            ("prompt", a.prompt != b.prompt),
            ("tools", a.tools != b.tools),
            ("sub_agents", a.sub_agents != b.sub_agents),
            (
                "model",
                (&a.model, &a.model_version) != (&b.model, &b.model_version),
            ),
            ("max_steps", a.max_steps != b.max_steps),
            ("budget", a.budget != b.budget),
            (
                "sampling",
                (a.temperature, a.max_tokens) != (b.temperature, b.max_tokens),
            ),
            ("default_input", a.default_input != b.default_input),
            ("revision", a.revision != b.revision),
        ]
    });
    out
}

/// Append to `out`, by key order, what `new` adds to `old`, what it
/// removes, and what it changes (the fields `differ` marks).
fn diff_keyed<T, const N: usize>(
    out: &mut Vec<ToolChange>,
    old: Vec<(String, T)>,
    new: Vec<(String, T)>,
    differ: impl Fn(&T, &T) -> [(&'static str, bool); N],
) {
    let old: BTreeMap<String, T> = old.into_iter().collect();
    let mut new: BTreeMap<String, T> = new.into_iter().collect();
    let mut changes: BTreeMap<String, ToolChange> = BTreeMap::new();
    for (name, a) in old {
        let change = match new.remove(&name) {
            None => Some(ToolChange::Removed { name: name.clone() }),
            Some(b) => {
                let fields: Vec<String> = differ(&a, &b)
                    .into_iter()
                    .filter(|(_, differs)| *differs)
                    .map(|(f, _)| f.to_owned())
                    .collect();
                (!fields.is_empty()).then(|| ToolChange::Changed {
                    name: name.clone(),
                    fields,
                })
            }
        };
        if let Some(c) = change {
            changes.insert(name, c);
        }
    }
    for name in new.into_keys() {
        changes.insert(name.clone(), ToolChange::Added { name });
    }
    out.extend(changes.into_values());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Lock {
        let mut lock = Lock::new();
        lock.entries.insert(
            "fs".into(),
            LockEntry {
                server_name: "srv".into(),
                server_version: "1.2.3".into(),
                protocol_version: "2025-11-25".into(),
                tools: vec![
                    LockedTool {
                        name: "fs_b".into(),
                        remote_name: "b".into(),
                        description: "B".into(),
                        input_schema: r#"{"default":null,"type":"object"}"#.into(),
                        output_schema: None,
                        annotations: Some(r#"{"readOnlyHint":true}"#.into()),
                        policy: None,
                    },
                    LockedTool {
                        name: "fs_a".into(),
                        remote_name: "a".into(),
                        description: String::new(),
                        input_schema: r#"{"type":"object"}"#.into(),
                        output_schema: Some(r#"{"type":"object"}"#.into()),
                        annotations: None,
                        policy: Some(r#"{"idempotent":true}"#.into()),
                    },
                ],
                hooks: vec![
                    LockedHook {
                        event: "before_tool_execute".into(),
                        mode: "bail".into(),
                        priority: 0,
                        error_policy: "record".into(),
                    },
                    LockedHook {
                        event: "before_tool_execute".into(),
                        mode: "transform".into(),
                        priority: 10,
                        error_policy: "raise".into(),
                    },
                ],
                routes: Vec::new(),
                methods: Vec::new(),
                agents: Vec::new(),
            },
        );
        lock
    }

    #[test]
    fn round_trips_sorted() {
        let text = sample().to_text();
        let back = Lock::parse(&text).unwrap();
        let names: Vec<&str> = back.entries["fs"]
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(names, ["fs_a", "fs_b"]);
        assert_eq!(back.to_text(), text);
    }

    #[test]
    fn rejects_other_versions_and_bad_schemas() {
        assert_eq!(Lock::parse("version = 2"), Err(LockError::Version(2)));
        assert!(matches!(
            Lock::parse("version = 1\nbogus = 1"),
            Err(LockError::Syntax(_))
        ));
        let bad = "version = 1\n[[entries.x.tools]]\nname = \"t\"\nremote_name = \"t\"\ninput_schema = \"{\"\n";
        assert!(matches!(Lock::parse(bad), Err(LockError::Schema { .. })));
        let bad_policy = "version = 1\n[[entries.x.tools]]\nname = \"t\"\nremote_name = \"t\"\ninput_schema = \"{}\"\npolicy = \"nope\"\n";
        assert!(matches!(
            Lock::parse(bad_policy),
            Err(LockError::Schema { .. })
        ));
    }

    #[test]
    fn diff_names_added_removed_changed() {
        let old = sample().entries["fs"].clone();
        let mut new = old.clone();
        new.tools.retain(|t| t.name != "fs_a");
        new.tools[0].input_schema = r#"{"type":"string"}"#.into();
        new.tools.push(LockedTool {
            name: "fs_c".into(),
            remote_name: "c".into(),
            input_schema: "{}".into(),
            ..LockedTool::default()
        });
        let d = diff_tools(&old, &new);
        let shown: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["- fs_a", "~ fs_b (input_schema)", "+ fs_c"]);
        assert!(diff_tools(&old, &old).is_empty());
    }

    #[test]
    fn diff_names_policy_and_hook_changes_by_event_and_ordinal() {
        let old = sample().entries["fs"].clone();
        let mut new = old.clone();
        new.tools[1].policy = Some(r#"{"idempotent":false}"#.into());
        new.hooks[1].priority = 5;
        new.hooks.push(LockedHook {
            event: "after_model_call".into(),
            mode: "observe".into(),
            priority: 0,
            error_policy: "record".into(),
        });
        let shown: Vec<String> = diff_tools(&old, &new)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            shown,
            [
                "~ fs_a (policy)",
                "+ hook after_model_call#0",
                "~ hook before_tool_execute#1 (priority)"
            ]
        );
        let mut routed = old.clone();
        routed.routes.push(LockedRoute {
            path: "/stats".into(),
            method: "GET".into(),
        });
        let shown: Vec<String> = diff_tools(&old, &routed)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["+ route GET /stats"]);
        let shown: Vec<String> = diff_tools(&routed, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["- route GET /stats"]);
        let method = LockedMethod {
            capability: "database".into(),
            name: "insert".into(),
            input_schema: "{}".into(),
            permissions: vec!["database.write".into()],
            ..LockedMethod::default()
        };
        let mut with_method = old.clone();
        with_method.methods.push(method.clone());
        let mut widened = old.clone();
        widened.methods.push(LockedMethod {
            permissions: vec!["database.admin".into()],
            ..method
        });
        let shown: Vec<String> = diff_tools(&with_method, &widened)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["~ method database.insert (permissions)"]);
        let shown: Vec<String> = diff_tools(&old, &with_method)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["+ method database.insert"]);
        let mut fewer = old.clone();
        fewer.hooks.truncate(1);
        let shown: Vec<String> = diff_tools(&old, &fewer)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["- hook before_tool_execute#1"]);
    }
}
