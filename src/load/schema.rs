//! The JSON Schema of the composition format, for editors (taplo, Even Better
//! TOML) and CI. The types here exist only to describe the format; the
//! loader reads files with its own walker, and a test keeps both in step.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;

/// The path of the checked-in schema, relative to the crate root.
pub const SCHEMA_PATH: &str = "schemas/composition.schema.json";

/// A chassis composition: plugin entries placed in a tree of scopes.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields, title = "chassis composition")]
struct CompositionFile {
    /// Format version. Required in the root file, optional in included files. Only `1` is supported.
    #[schemars(range(min = 1, max = 1))]
    version: Option<u32>,
    /// Files to include, relative to this file: a file, a directory (its `*.toml` files, sorted by name, not recursive) or `dir/*.toml`.
    include: Option<Vec<String>>,
    /// The name of this composition's history (lineage) in a store several compositions share; default: the root file's path in the workspace. Root file only; a host setting, never part of the composition's identity.
    #[schemars(length(min = 1, max = 200))]
    name: Option<String>,
    /// Global provider preferences: capability = entry id.
    prefer: Option<BTreeMap<String, String>>,
    /// Declared plugins by catalog name; entries refer to them with `plugin`.
    plugins: Option<BTreeMap<String, PluginTable>>,
    /// Plugin entries by stable entry id (not beginning with `/`, which
    /// reads as a scope path).
    #[schemars(extend("propertyNames" = { "pattern": "^[^/]" }))]
    entries: Option<BTreeMap<String, EntryTable>>,
    /// Declared scopes by canonical path (`/`, `/research`, `/research/intern`); parents are implied.
    scopes: Option<BTreeMap<String, ScopeTable>>,
    /// Tool policy: grants, deny rules, approval names, per-tool overrides.
    policy: Option<PolicyTable>,
    /// Agents by name (one scope segment: any character but `/` and whitespace, not `.` or `..`); each owns a scope (default `/agents/<name>`) whose tool view is its tools and whose scope requirement is its model.
    agents: Option<BTreeMap<String, AgentTable>>,
    /// Host settings: where the generation store is. Root file only; never part of the composition's identity.
    store: Option<StoreTable>,
    /// Host settings of `chassis serve`: bearer tokens and the routes answered without one. Root file only; never part of the composition's identity.
    serve: Option<ServeTable>,
}

/// `[serve]` (a host setting): who may call `chassis serve`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ServeTable {
    /// Bearer tokens, each a secret reference `{ secret = "NAME" }` (never a literal). With tokens set, every route needs `Authorization: Bearer <token>` except `auth_excluded`.
    tokens: Option<Vec<SecretRefValue>>,
    /// Routes answered without a token: `/healthz`, `/metrics`, and exact paths of plugin routes (`/plugins/ENTRY/PATH`).
    auth_excluded: Option<Vec<ExcludableRoute>>,
    /// Seconds a session lasts after its last turn (default: until deleted).
    #[schemars(range(min = 1))]
    session_ttl_seconds: Option<u64>,
    /// Seconds a tool call that needs approval waits for a client's answer (`POST /v1/runs/{id}/approvals`) before it is refused (default 300). The wait counts against the run's `wall_clock_seconds`.
    #[schemars(range(min = 1))]
    approval_timeout_seconds: Option<u64>,
}

/// A secret reference.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct SecretRefValue {
    /// The secret's name (an environment variable, or what a `secrets` provider answers).
    #[schemars(length(min = 1))]
    secret: String,
}

/// A route that may be answered without a token.
#[derive(JsonSchema)]
#[allow(dead_code)]
#[serde(untagged)]
enum ExcludableRoute {
    /// One of the server's own.
    Own(OwnRoute),
    /// One exact path of a plugin's HTTP routes: `/plugins/ENTRY/PATH`.
    Plugin(#[schemars(regex(pattern = r"^/plugins/[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)+$"))] String),
}

/// The server's own routes that may be answered without a token.
#[derive(JsonSchema)]
#[allow(dead_code)]
enum OwnRoute {
    /// Liveness.
    #[serde(rename = "/healthz")]
    Healthz,
    /// Prometheus metrics.
    #[serde(rename = "/metrics")]
    Metrics,
}

/// `[store]` (a host setting): where the generation store is.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct StoreTable {
    /// The store file, relative to this file's directory (default `.chassis/state.db`; `--state` overrides it).
    path: Option<String>,
}

/// An agent: a model, a prompt, a tool view, a step limit and a budget.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct AgentTable {
    /// What the agent does (shown to a parent agent when offered as a sub-agent).
    description: Option<String>,
    /// Revision, pinned by each run from the generation it leased (default `1`).
    revision: Option<String>,
    /// The agent-owned scope (default `/agents/<name>`); must not be a declared scope.
    scope: Option<String>,
    /// The model capability the agent requires (default `model`).
    model: Option<String>,
    /// Accepted versions of the model capability (default any).
    model_version: Option<String>,
    /// The entry id that provides the model, when several qualify.
    prefer_model: Option<String>,
    /// The tools the agent may call (its scope's tool view); absent = every tool visible in its scope.
    tools: Option<Vec<String>>,
    /// Other agents this agent may call as tools (nested runs with a child budget).
    sub_agents: Option<Vec<String>>,
    /// The system prompt.
    prompt: Option<String>,
    /// A file holding the system prompt, relative to this file.
    prompt_file: Option<String>,
    /// Step limit: model calls per run (default 10).
    #[schemars(range(min = 1, max = 10000))]
    max_steps: Option<u32>,
    /// Budget limits per run: wall_clock_seconds, tool_calls, child_runs, model_calls, tokens, estimated_cost.
    budget: Option<BTreeMap<String, f64>>,
    /// Sampling temperature passed to the model.
    #[schemars(range(min = 0.0, max = 2.0))]
    temperature: Option<f64>,
    /// Upper bound on generated tokens per model call.
    #[schemars(range(min = 1))]
    max_tokens: Option<u64>,
    /// The input `chassis run` uses when it is given none (`--input`, `--input-file`, stdin).
    default_input: Option<String>,
}

/// `[policy]`: who may do what at the tool boundary. Deny rules win over
/// grants; `*` stays within one path segment and `**` crosses segments;
/// path resources are normalized before matching.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct PolicyTable {
    /// Grants as `name[:resource-pattern]`, e.g. `filesystem.read:/workspace/**`; `family.*` names a family.
    grants: Option<Vec<String>>,
    /// Deny rules, same grammar; they win over grants.
    deny: Option<Vec<String>>,
    /// Permission names (or `family.*`) whose use needs approval.
    approval_required: Option<Vec<String>>,
    /// Tool name → the policy that replaces the tool's own.
    tools: Option<BTreeMap<String, ToolPolicyTable>>,
}

/// The policy of one tool.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ToolPolicyTable {
    /// Permission templates, e.g. `filesystem.read:{/path}` (a JSON Pointer into the call's arguments).
    permissions: Option<Vec<String>>,
    /// Whether repeating a call has no further effect.
    idempotent: Option<bool>,
    /// Side-effect labels, e.g. `destructive`.
    side_effects: Option<Vec<String>>,
    /// Hard timeout of one call, in seconds (at most a day).
    #[schemars(range(min = 0.001, max = 86400))]
    timeout_seconds: Option<f64>,
    /// Cost class label, e.g. `expensive`.
    cost_class: Option<String>,
    /// Whether every call needs approval.
    approval_required: Option<bool>,
}

/// A plugin manifest declared in TOML.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct PluginTable {
    /// Manifest name; defaults to the catalog name (the table key).
    name: Option<String>,
    /// The implementation version (semver, e.g. `1.4.2`).
    version: String,
    /// Provided capabilities: capability = version, or a list of versions with distinct majors for a multi-contract provider.
    provides: Option<BTreeMap<String, ProvidedVersions>>,
    /// Hard requirements: capability = version specifier (`>=1,<2`; `""` accepts any version).
    requires: Option<BTreeMap<String, String>>,
    /// Optional requirements: bound when possible, never gating. A capability cannot be both required and optional.
    optional: Option<BTreeMap<String, String>>,
    /// Permissions the plugin needs at harness boundaries, as `name[:resource]`.
    permissions: Option<Vec<String>>,
    /// Version of the configuration format the plugin reads (default 1).
    #[schemars(range(min = 0, max = 4294967295u32))]
    config_version: Option<u32>,
    /// Free-form metadata; never hashed, redacted when shown.
    metadata: Option<BTreeMap<String, serde_json::Value>>,
    /// Tools the plugin declares, unique by name.
    tools: Option<Vec<ToolTable>>,
    /// The catalog kind that implements this manifest; absent = the
    /// declared kind (provides what it declares). The `testing.*` kinds make
    /// failure paths reachable: `testing.liar`, `testing.failing-setup`,
    /// `testing.slow-teardown`, `testing.task`, `testing.secret-echo`.
    kind: Option<String>,
    /// The agent-facing guide: what a model should know about this plugin's tools.
    agent: Option<GuideTable>,
    /// A process plugin: the program chassis starts and speaks the plugin
    /// protocol with (argv, never a shell; relative paths are relative to
    /// this file's folder), e.g. `["python3", "plugin.py"]`.
    #[schemars(length(min = 1))]
    command: Option<Vec<String>>,
    /// Names of environment variables passed to the process besides PATH,
    /// HOME, LANG, TMPDIR, VIRTUAL_ENV and PYENV_*.
    env: Option<Vec<String>>,
    /// The files whose contents are the plugin's identity (editing one is a
    /// change); default: the `command` entries that are files beside this one.
    files: Option<Vec<String>>,
    /// How long the process may take to answer `initialize` and `setup`
    /// (each), in seconds (default 30).
    #[schemars(range(min = 0.001, max = 3600))]
    startup_timeout_seconds: Option<f64>,
}

/// One provided version, or several with distinct majors.
#[derive(JsonSchema)]
#[serde(untagged)]
enum ProvidedVersions {
    /// A single version (semver).
    One(String),
    /// One version per contract generation (major).
    Many(#[schemars(length(min = 1))] Vec<String>),
}

/// A tool as the model sees it.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ToolTable {
    /// Tool name (no whitespace), unique within the plugin.
    name: String,
    /// Description shown to the model; must not be empty.
    #[schemars(length(min = 1))]
    description: String,
    /// JSON Schema of the tool's arguments.
    args: Option<serde_json::Map<String, serde_json::Value>>,
    /// A static result: a declared tool answers with it; without one, a call
    /// fails with `tool_not_implemented`.
    result: Option<serde_json::Value>,
    /// The agent-facing guide of this tool.
    agent: Option<GuideTable>,
}

/// A plugin entry: an implementation placed in a scope with a configuration.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct EntryTable {
    /// Catalog name of the plugin; defaults to the entry id.
    plugin: Option<String>,
    /// The scope the entry is placed in (default `/`); must be declared, the root, or the parent of a declared scope.
    scope: Option<String>,
    /// `false` leaves the entry out of the composition (it is still listed as disabled).
    enabled: Option<bool>,
    /// Enable the entry only when a condition holds: `{ env = "OPENAI_API_KEY" }` (or a list; every variable must be set and non-empty), read from the environment and `--env-file`.
    enabled_if: Option<ConditionTable>,
    /// What a failed setup does: `fail` (default: nothing is published) or `skip` (the entry is quarantined, its consumers go pending, the rest publishes).
    on_failure: Option<OnFailure>,
    /// Plugin configuration. Write secrets as `{ secret = "NAME" }`, never as literal values.
    config: Option<BTreeMap<String, serde_json::Value>>,
    /// Preferences for this entry's own requirements: capability = entry id.
    prefer: Option<BTreeMap<String, String>>,
}

/// `on_failure`.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum OnFailure {
    Fail,
    Skip,
}

/// The agent-facing manifest, rendered into the tool descriptions a model sees.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct GuideTable {
    /// A short name.
    title: Option<String>,
    /// One or two sentences.
    summary: Option<String>,
    /// When the model should use it.
    when_to_use: Option<String>,
    /// When it should not.
    when_not_to_use: Option<String>,
    /// Example calls; on a plugin, each names its `tool` (checked at load).
    examples: Option<Vec<GuideExampleTable>>,
    /// `always` (default: the whole guide), `on-demand` (title and summary only) or `silent` (not offered to the model).
    visibility: Option<String>,
}

/// An example call.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct GuideExampleTable {
    /// The tool called (required on a plugin's guide).
    tool: Option<String>,
    /// Its arguments.
    args: Option<serde_json::Value>,
    /// What the example shows.
    description: Option<String>,
}

/// An `enabled_if` condition.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ConditionTable {
    /// Environment variables that must be set (a name or a list).
    env: EnvNames,
}

/// One variable name or several.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum EnvNames {
    One(String),
    Many(Vec<String>),
}

/// A declared scope.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ScopeTable {
    /// The capabilities visible in this scope (intersected with the parents' views); absent = no restriction.
    capabilities: Option<Vec<String>>,
    /// The tools visible in this scope; absent = no restriction.
    tools: Option<Vec<String>>,
    /// Scope-level requirements: capability = specifier; explained, never gating.
    requires: Option<BTreeMap<String, String>>,
    /// Preferences for consumers declared in exactly this scope: capability = entry id.
    prefer: Option<BTreeMap<String, String>>,
    /// Free-form metadata; never hashed, redacted when shown.
    metadata: Option<BTreeMap<String, serde_json::Value>>,
}

/// The schema as JSON (draft-07, which taplo and Even Better TOML accept).
pub fn composition_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<CompositionFile>();
    let mut value = schema.to_value();
    drop_null_types(&mut value);
    add_builtin_configs(&mut value);
    value
}

/// Each built-in kind's configuration schema, applied to the `config` of
/// entries whose `plugin` names it (draft-07 `if`/`then`).
fn add_builtin_configs(schema: &mut serde_json::Value) {
    let mut rules = Vec::new();
    for kind in crate::engine::builtin::kinds() {
        let mut config = (kind.config_schema)();
        if let Some(obj) = config.as_object_mut() {
            obj.remove("$schema");
        }
        let def = format!("builtin-{}", kind.name);
        schema["definitions"][&def] = config;
        rules.push(serde_json::json!({
            "if": { "properties": { "plugin": { "const": kind.name } }, "required": ["plugin"] },
            "then": { "properties": { "config": { "$ref": format!("#/definitions/{def}") } } }
        }));
    }
    schema["definitions"]["EntryTable"]["allOf"] = serde_json::Value::Array(rules);
}

/// TOML has no null (an optional key is simply absent): turn the
/// `"type": [T, "null"]` that `Option<T>` produces into `"type": T`.
fn drop_null_types(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t.as_str() != Some("null"));
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            map.values_mut().for_each(drop_null_types);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_null_types),
        _ => {}
    }
}

/// The schema as pretty JSON with a trailing newline (the checked-in file).
pub fn composition_schema_text() -> String {
    let mut text =
        serde_json::to_string_pretty(&composition_schema()).expect("a schema serializes");
    text.push('\n');
    text
}

/// Write `composition.schema.json` into `dir` (creating it); returns the path.
pub fn write_schema(dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("composition.schema.json");
    std::fs::write(&path, composition_schema_text())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Property names of the object schema `name` (`root` = the document).
    fn properties(schema: &serde_json::Value, name: &str) -> Vec<String> {
        let def = match name {
            "root" => schema,
            other => {
                let type_name = match other {
                    "plugin" => "PluginTable",
                    "tool" => "ToolTable",
                    "entry" => "EntryTable",
                    "scope" => "ScopeTable",
                    "policy" => "PolicyTable",
                    "tool_policy" => "ToolPolicyTable",
                    "agent" => "AgentTable",
                    "store" => "StoreTable",
                    "serve" => "ServeTable",
                    _ => panic!("unknown table kind {other}"),
                };
                &schema["definitions"][type_name]
            }
        };
        assert_eq!(
            def["additionalProperties"],
            serde_json::Value::Bool(false),
            "{name}"
        );
        let mut keys: Vec<String> = def["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn walker_keys_match_schema_properties() {
        let schema = composition_schema();
        for (kind, keys) in super::super::TABLE_KEYS {
            let mut expected: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
            expected.sort();
            assert_eq!(properties(&schema, kind), expected, "table kind `{kind}`");
        }
    }

    #[test]
    fn checked_in_schema_is_current() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        if std::env::var_os("CHASSIS_UPDATE_SCHEMA").is_some() {
            write_schema(&root.join("schemas")).expect("write schema");
        }
        let checked_in = std::fs::read_to_string(root.join(SCHEMA_PATH)).unwrap_or_default();
        assert!(
            checked_in == composition_schema_text(),
            "{SCHEMA_PATH} is out of date: run `CHASSIS_UPDATE_SCHEMA=1 cargo test --lib load::schema` \
             (or `cargo run -- schema --write`) and commit the result"
        );
    }

    #[test]
    fn schema_is_draft07_with_descriptions() {
        let schema = composition_schema();
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
        let desc = &schema["definitions"]["PluginTable"]["properties"]["requires"]["description"];
        assert!(
            desc.as_str().is_some_and(|d| d.contains("specifier")),
            "{desc}"
        );
        assert_eq!(
            schema["required"],
            serde_json::Value::Null,
            "no top-level key is required by the schema"
        );
    }
}
