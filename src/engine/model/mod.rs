//! The validated composition: what a user declared, with every name checked.
//!
//! The loader (an edge module) builds these values from TOML; tests and
//! benchmarks build them in code. Constructors and the loader guarantee the
//! invariants documented on each type (canonical scope paths, entries placed in
//! declared scopes, manifests whose versions and specifiers parsed), so the
//! resolver never re-validates.

/// `PartialEq` for a model type that compares every field but `origin`:
/// as with [`crate::engine::span::Located`], two compositions that say the
/// same thing in different places are the same composition (a reload that
/// only moved declarations changes nothing). Every field is named, so a new
/// one cannot be left out of the comparison.
/// Fields listed after `ignoring` are derived from others and left out too.
macro_rules! eq_but_origin {
    ($ty:ident { $($field:ident),+ $(,)? } $(ignoring $($derived:ident),+)?) => {
        impl PartialEq for $ty {
            fn eq(&self, other: &Self) -> bool {
                let Self { $($field,)+ origin: _, $($($derived: _,)+)? } = self;
                $(*$field == other.$field)&&+
            }
        }
    };
}

mod agent;
mod agent_definition;
mod composition;
mod condition;
mod config;
mod guide;
mod host;
mod ids;
mod manifest;
mod policy;
mod process;
mod scope;
mod small_map;

pub use agent::{
    AGENT_METADATA_KEY, AGENT_REVISION_METADATA_KEY, AgentDecl, BudgetLimitProblem,
    DEFAULT_MAX_STEPS, MAX_STEPS, PromptSource, TEMPERATURE, budget_limit,
};
pub use agent_definition::AgentDefinition;
pub use composition::{Composition, Entry, EntryRef, Preferences};
pub use condition::{Condition, SkippedEntry};
pub use config::{ConfigValue, SecretRef};
pub use guide::{AgentGuide, GuideExample, Visibility, render_description};
pub use host::{
    AUTH_EXCLUDABLE, HOST_TABLES, HostSettings, ServeSettings, StoreSettings, is_auth_excludable,
};
pub use ids::{CapabilityName, EntryId, IdError, ScopePath, ToolName};
pub use manifest::{Manifest, Provided, Requirement, ToolDecl};
pub use policy::{POLICY, PolicyDecl};
pub use process::{PROCESS_KIND, PluginFile, ProcessCommand};
pub use scope::ScopeDecl;
pub use small_map::SmallMap;
