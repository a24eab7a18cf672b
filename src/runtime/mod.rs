//! The runtime: plugins mounted through contexts that own their effects.
//!
//! This module is the live half of chassis. It grows in layers: the plugin
//! API and its ownership scopes (here now), then transactional reconcile into
//! immutable generations, the tool executor and the agent runtime. It uses
//! tokio for tasks and time; it performs no other I/O.

pub mod agent;
pub mod catalog;
pub mod context;
pub mod declared;
pub mod executor;
pub mod generation;
pub mod harness;
pub mod hooks;
pub mod identity;
pub mod inspect;
pub mod instance;
pub mod lifecycle;
pub mod model;
pub mod paths;
pub mod plugin;
mod reaper;
pub mod reconcile;
pub mod replay;
pub mod request_tools;
pub mod route;
pub mod scope;
pub mod signals;
pub mod testing_kinds;
pub mod tool;
pub mod tool_set;
pub mod value;

pub use catalog::{Catalog, Factory, Resolver, UnknownKind};
pub use context::{
    Binding, CapabilityRegistration, ContextError, ContextSpec, HealthReporter, PluginContext,
    Registrations,
};
pub use executor::{
    ExecError, ExecutorServices, RunContext, ToolCall, ToolExecutor, ToolRefusal, ToolResult,
    ToolStatus, Ungoverned,
};
pub use generation::{Generation, GenerationState, PressureReport, ScopeSystem};
pub use harness::{AcquireError, Harness, HarnessOptions, Lease};
pub use hooks::{ErrorPolicy, FnHook, HookEvent, HookHandler, HookMode, HookReply, HookSet};
pub use identity::{Decision, NodeIdentity, NodeImpact, NodeImpacts};
pub use inspect::InstanceView;
pub use instance::{PluginInstance, PluginSetupError, RegistrationBreach};
pub use lifecycle::{Health, PluginState, StateError, StateMachine};
pub use plugin::{FnPlugin, Plugin, plugin_fn};
pub use reconcile::{PluginContractError, ReconcileError, ReconcileReport};
pub use route::{RouteHandler, RouteLookup, RouteRegistration, RouteRequest, RouteResponse};
pub use scope::{BoxError, BoxFuture, CleanupFn, EffectCleanupError, OwnershipScope};
pub use tool::{
    CallReach, Cancellation, DeclaredTool, RunBudgetExhausted, Tool, ToolCallContext, ToolOutput,
    ToolRegistration, ToolSecrets,
};
pub use tool_set::{ToolSetChange, ToolSetReporter, ToolSetSink};
pub use value::CapabilityValue;

#[cfg(test)]
mod executor_tests;
#[cfg(test)]
mod system_tests;
#[cfg(test)]
mod tests;
