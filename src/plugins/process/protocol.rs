//! The plugin protocol's messages, as Rust types.
//!
//! Why it exists: a process plugin and chassis agree on these shapes and
//! nothing else. They are the single source of the protocol: the JSON
//! Schemas in `schemas/plugin-protocol/` are generated from them (a test
//! fails when the checked-in files drift) and `docs/plugin-protocol.md`
//! describes them. Every message is one JSON-RPC 2.0 object on one line;
//! the envelope lives in [`super::rpc`], the `params` and `result` of each
//! method here.
//!
//! Compatibility: the version is `MAJOR.MINOR`. chassis sends the version
//! it speaks in `initialize`; the plugin answers with the version it
//! speaks; a different major is refused. Fields added within a major are
//! optional, and both sides ignore fields they do not know.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this chassis speaks.
pub const PROTOCOL_VERSION: &str = "1.3";

/// The longest message either side may send, in bytes (16 MiB).
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// Method names.
pub mod method {
    /// chassis → plugin: negotiate the version, learn the plugin's manifest.
    pub const INITIALIZE: &str = "initialize";
    /// chassis → plugin: mount; the plugin answers with its registrations.
    pub const SETUP: &str = "setup";
    /// chassis → plugin: call a registered tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// chassis → plugin: unmount; the process exits after answering.
    pub const TEARDOWN: &str = "teardown";
    /// Either way (notification): stop working on request `id`.
    pub const CANCEL: &str = "$/cancel";
    /// Consumer → chassis → provider: call a method of a capability.
    pub const CAPABILITY_INVOKE: &str = "capability/invoke";
    /// chassis → plugin: one of its hooks is called.
    pub const HOOKS_DISPATCH: &str = "hooks/dispatch";
    /// chassis → plugin: an HTTP request to one of its routes (1.1).
    pub const HTTP_REQUEST: &str = "http/request";
}

/// `initialize` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeParams {
    /// The protocol version chassis speaks (`1.0`).
    pub protocol_version: String,
    /// The chassis version (`0.1.0`).
    pub chassis_version: String,
    /// The composition entry this process serves.
    pub entry: String,
}

impl InitializeParams {
    /// What this chassis sends to the process serving `entry`.
    pub fn new(entry: &str) -> Self {
        Self {
            protocol_version: PROTOCOL_VERSION.to_owned(),
            chassis_version: env!("CARGO_PKG_VERSION").to_owned(),
            entry: entry.to_owned(),
        }
    }
}

/// `initialize` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeResult {
    /// The protocol version the plugin speaks; its major must be chassis's.
    pub protocol_version: String,
    /// What the plugin declares about itself; it must equal the TOML
    /// manifest of its entry.
    pub plugin: PluginInfo,
    /// The most requests the plugin handles at once; chassis queues beyond
    /// it. Absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
}

/// A plugin's own declaration (the SDK's `@plugin(...)`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PluginInfo {
    /// Implementation name.
    pub name: String,
    /// Implementation version.
    pub version: String,
    /// Capability → the versions provided (one per contract generation).
    #[serde(default)]
    pub provides: BTreeMap<String, Vec<String>>,
    /// Capability → requirement specifier (`>=1,<2`).
    #[serde(default)]
    pub requires: BTreeMap<String, String>,
    /// Capability → optional requirement specifier.
    #[serde(default)]
    pub optional: BTreeMap<String, String>,
}

/// `setup` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetupParams {
    /// The entry id.
    pub entry: String,
    /// The entry's scope path (`/` is the root).
    pub scope: String,
    /// The entry's `config`, secrets resolved where it references them.
    pub config: Value,
    /// Per requirement that resolved, the provider bound to it.
    #[serde(default)]
    pub requirements: BTreeMap<String, BoundProvider>,
}

/// The provider bound to one requirement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BoundProvider {
    /// The provider's entry id.
    pub provider: String,
    /// The exact contract version bound.
    pub version: String,
    /// The capability's value when it crosses as JSON (a value another
    /// process plugin registered); absent for an in-process value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// `setup` result: everything the plugin registers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetupResult {
    /// Capabilities provided.
    #[serde(default)]
    pub capabilities: Vec<CapabilityRegistration>,
    /// Tools.
    #[serde(default)]
    pub tools: Vec<ToolRegistration>,
    /// Hooks, called with `hooks/dispatch` (by their index in this list).
    #[serde(default)]
    pub hooks: Vec<HookRegistration>,
    /// HTTP routes (1.1), called with `http/request` (by their index in
    /// this list); `chassis serve` answers them under `/plugins/{entry}`.
    #[serde(default)]
    pub routes: Vec<RouteRegistrationWire>,
    /// Agents the plugin defines (1.2): the fields of `[agents.X]`, run by
    /// chassis's loop like any agent once `chassis.lock` pins them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<crate::engine::model::AgentDefinition>,
}

/// One HTTP route the plugin registers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RouteRegistrationWire {
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: String,
    /// The path under `/plugins/{entry}`: exact (`/stats`), or a prefix
    /// ending in `/*` (`/files/*`).
    pub path: String,
}

/// `http/request` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HttpRequestParams {
    /// The route's index in the `setup` result's `routes`.
    pub route: usize,
    /// The request's method.
    pub method: String,
    /// Its path under `/plugins/{entry}`.
    pub path: String,
    /// Its raw query string, without `?`.
    #[serde(default)]
    pub query: String,
    /// Its headers, names lowercase (credentials are never forwarded).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Its body, as UTF-8 text.
    #[serde(default)]
    pub body: String,
    /// Trace context (1.2): the request's own `traceparent` header, when
    /// it carries a valid one.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
}

/// `http/request` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HttpRequestResult {
    /// The status (200–599).
    pub status: u16,
    /// Response headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body, as text (chassis redacts every secret it knows).
    #[serde(default)]
    pub body: String,
}

/// One hook the plugin registers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HookRegistration {
    /// The event (`before_tool_execute`, `after_model_call`, …).
    pub event: String,
    /// `observe` (the reply is ignored), `transform` (may replace the
    /// payload) or `bail` (may refuse the operation).
    #[serde(default)]
    pub mode: HookModeWire,
    /// Lower runs first; ties keep registration order.
    #[serde(default)]
    pub priority: i32,
    /// `record` (a failure is recorded and the chain goes on) or `raise`
    /// (a failure fails the operation).
    #[serde(default)]
    pub error_policy: ErrorPolicyWire,
}

/// A hook's mode on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookModeWire {
    /// Only told.
    #[default]
    Observe,
    /// May replace the payload.
    Transform,
    /// May refuse the operation.
    Bail,
}

/// A hook's error policy on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorPolicyWire {
    /// Record the failure, go on.
    #[default]
    Record,
    /// Fail the operation.
    Raise,
}

/// `hooks/dispatch` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookDispatchParams {
    /// The hook's index in the `setup` result's `hooks`.
    pub hook: usize,
    /// The event.
    pub event: String,
    /// The event's payload (redacted, as every hook sees it).
    pub payload: Value,
    /// Trace context (1.2): `{traceparent}`, inside a run.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
}

/// `hooks/dispatch` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum HookDispatchResult {
    /// Nothing to change.
    Continue,
    /// Replace the payload (a transform hook; a JSON object).
    Transform {
        /// The new payload.
        payload: Value,
    },
    /// Refuse the operation (a bail hook).
    Bail {
        /// Why; the model or the caller reads it.
        reason: String,
    },
}

/// One capability the plugin provides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CapabilityRegistration {
    /// The capability (`database`).
    pub key: String,
    /// The version registered; its major is the contract generation.
    pub version: String,
    /// A value consumers receive as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Methods consumers may call with `capability/invoke`.
    #[serde(default)]
    pub methods: Vec<MethodDecl>,
}

/// One method of a provided capability.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MethodDecl {
    /// The method (`query`).
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments; chassis checks every call against it.
    pub input_schema: Value,
    /// JSON Schema of the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_schema: Option<Value>,
    /// Permissions a caller needs: each must be declared in the calling
    /// plugin's manifest (`permissions`), or the call is refused.
    #[serde(default)]
    pub permissions: Vec<String>,
}

/// `capability/invoke` params, as a consumer sends them to chassis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InvokeParams {
    /// The capability, as the consumer requires it (`database`).
    pub key: String,
    /// The method.
    pub method: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Value,
    /// The `call_id` of the `tools/call` being handled (1.1), so the invoke
    /// runs under that call's run; absent outside a tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// `capability/invoke` params, as chassis forwards them to the provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderInvokeParams {
    /// The capability.
    pub key: String,
    /// The method.
    pub method: String,
    /// Its arguments (valid against the method's `input_schema`).
    pub arguments: Value,
    /// The entry that called.
    pub caller: String,
    /// Milliseconds the call may take.
    pub deadline_ms: u64,
    /// The run the invoke belongs to (1.1), when it was made inside one of
    /// its tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The provider's token for that tool call (1.3): what it passes as
    /// `call_id` when it invokes in turn while answering, so that a `chat`
    /// or another provider it calls stays in the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Trace context (1.2): `{traceparent}`, inside a run.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
}

/// `capability/invoke` result (both legs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InvokeResult {
    /// What the method returned.
    pub result: Value,
}

/// One tool the plugin registers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolRegistration {
    /// The name the model calls.
    pub name: String,
    /// What the model reads.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// How chassis treats calls.
    #[serde(default)]
    pub policy: ToolPolicyWire,
}

/// A tool's policy on the wire (chassis's `ToolPolicy`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolPolicyWire {
    /// Permission templates (`filesystem.read:{/path}`); each must be
    /// declared in the manifest's `permissions`.
    #[serde(default)]
    pub permissions: Vec<String>,
    /// Whether repeating a call has no further effect.
    #[serde(default)]
    pub idempotent: bool,
    /// Side-effect labels (`destructive`).
    #[serde(default)]
    pub side_effects: Vec<String>,
    /// Deadline of one call, in seconds: above 0 and at most 86400 (a
    /// day); anything else fails the setup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 86400))]
    pub timeout_seconds: Option<f64>,
    /// Cost label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_class: Option<String>,
    /// Whether every call needs approval.
    #[serde(default)]
    pub approval_required: bool,
}

impl From<&ToolPolicyWire> for crate::engine::policy::ToolPolicy {
    fn from(p: &ToolPolicyWire) -> Self {
        Self {
            permissions: p.permissions.clone(),
            idempotent: p.idempotent,
            side_effects: p.side_effects.clone(),
            timeout_seconds: p.timeout_seconds,
            cost_class: p.cost_class.clone(),
            approval_required: p.approval_required,
            metadata: BTreeMap::new(),
        }
    }
}

/// `_meta` of a request (1.2): W3C trace context. Inside a run, the trace
/// id is derived from the run id (`chassis run` prints it as `trace_id`)
/// and the parent id from the run id and the request, so a plugin's spans
/// join the run's trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequestMeta {
    /// `00-<trace id>-<parent id>-01`.
    pub traceparent: String,
}

impl RequestMeta {
    /// The trace context of a request inside run `run_id`, named by `span`
    /// and numbered, so two requests never share a parent id (the same
    /// hook firing twice in a run, a method invoked twice in one call).
    #[must_use]
    pub fn in_run(run_id: &str, span: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            traceparent: crate::engine::trace_context::TraceParent::of_run(
                run_id,
                &format!("{span}#{n}"),
            )
            .header(),
        }
    }
}

/// `tools/call` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallParams {
    /// The tool.
    pub name: String,
    /// Its arguments, valid against its `input_schema`.
    pub arguments: Value,
    /// The run the call belongs to.
    pub run_id: String,
    /// The generation the run leased.
    pub generation_id: String,
    /// Milliseconds the call may still take; the plugin should stop by
    /// then (chassis cancels it and answers the model itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// Names this call (1.1): a `capability/invoke` made while handling it
    /// passes it back as its `call_id`, and then runs under the call's
    /// run — its deadline, cancellation, scope policy and budget. Absent
    /// for a call outside a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Trace context (1.2): `{traceparent}`, inside a run.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
}

/// `tools/call` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallResult {
    /// What the model reads: a string, or any JSON value.
    pub content: Value,
    /// `true` when the call failed in a way the model should see as a
    /// tool error (`content` says why).
    #[serde(default)]
    pub is_error: bool,
    /// Structured data kept beside the content, not shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Value>,
}

/// `teardown` params (none yet).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TeardownParams {}

/// `teardown` result: an empty object, sent once the plugin's cleanups
/// ran; the process then exits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TeardownResult {}

/// The `error` of a response, either way (JSON-RPC 2.0): a code from
/// [`code`] and a message a person can read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorObject {
    /// The error code (`-32601`: no such method, `-32602`: bad params,
    /// `-32800`: cancelled, `-32001`: permission denied, …).
    pub code: i64,
    /// What went wrong.
    pub message: String,
    /// Anything more, as JSON (optional; chassis sends none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// `$/cancel` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CancelParams {
    /// The id of the request to stop.
    pub id: u64,
}

/// JSON-RPC error codes the protocol uses.
pub mod code {
    /// Not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Params of the wrong shape.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The handler failed.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The request was cancelled.
    pub const CANCELLED: i64 = -32800;
    /// A permission the caller's manifest does not declare (fail closed).
    pub const PERMISSION_DENIED: i64 = -32001;
    /// The provider could not be reached (down, restarting past the
    /// deadline, not a process plugin).
    pub const PROVIDER_UNAVAILABLE: i64 = -32002;
    /// The run's budget refused the invoke (1.1): the tool call that made
    /// it fails, and the run stops as out of budget.
    pub const BUDGET_EXHAUSTED: i64 = -32003;
}

/// Every message's schema, by file name (`initialize.params.json`, …):
/// what `schemas/plugin-protocol/` holds.
pub fn schemas() -> BTreeMap<String, Value> {
    fn one<T: JsonSchema>() -> Value {
        serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
    }
    BTreeMap::from([
        ("initialize.params".to_owned(), one::<InitializeParams>()),
        ("initialize.result".to_owned(), one::<InitializeResult>()),
        ("setup.params".to_owned(), one::<SetupParams>()),
        ("setup.result".to_owned(), one::<SetupResult>()),
        ("tools-call.params".to_owned(), one::<ToolCallParams>()),
        ("tools-call.result".to_owned(), one::<ToolCallResult>()),
        ("teardown.params".to_owned(), one::<TeardownParams>()),
        ("teardown.result".to_owned(), one::<TeardownResult>()),
        ("error".to_owned(), one::<ErrorObject>()),
        ("cancel.params".to_owned(), one::<CancelParams>()),
        ("http-request.params".to_owned(), one::<HttpRequestParams>()),
        ("http-request.result".to_owned(), one::<HttpRequestResult>()),
        ("capability-invoke.params".to_owned(), one::<InvokeParams>()),
        (
            "capability-invoke.provider-params".to_owned(),
            one::<ProviderInvokeParams>(),
        ),
        ("capability-invoke.result".to_owned(), one::<InvokeResult>()),
        (
            "hooks-dispatch.params".to_owned(),
            one::<HookDispatchParams>(),
        ),
        (
            "hooks-dispatch.result".to_owned(),
            one::<HookDispatchResult>(),
        ),
    ])
    .into_iter()
    .map(|(k, v)| (format!("{k}.json"), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `schemas/plugin-protocol/` holds exactly what the types generate;
    /// `CHASSIS_UPDATE_SCHEMA=1` writes it again.
    #[test]
    fn the_checked_in_schemas_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/plugin-protocol");
        let update = std::env::var_os("CHASSIS_UPDATE_SCHEMA").is_some();
        let generated = schemas();
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            for old in std::fs::read_dir(&dir).unwrap() {
                std::fs::remove_file(old.unwrap().path()).unwrap();
            }
        }
        for (name, schema) in &generated {
            let text = serde_json::to_string_pretty(schema).unwrap() + "\n";
            let path = dir.join(name);
            if update {
                std::fs::write(&path, &text).unwrap();
            }
            let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
            assert_eq!(
                on_disk, text,
                "{name} drifted from the protocol types; run CHASSIS_UPDATE_SCHEMA=1 cargo test --lib plugins::process"
            );
        }
        let files = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(files, generated.len(), "stale files in {}", dir.display());
    }

    #[test]
    fn unknown_fields_are_ignored_and_defaults_fill_in() {
        let r: InitializeResult = serde_json::from_str(
            r#"{"protocol_version":"1.3","plugin":{"name":"p","version":"1.0.0"},"later":true}"#,
        )
        .unwrap();
        assert_eq!(r.plugin.provides.len(), 0);
        assert_eq!(r.max_concurrency, None);
    }
}
