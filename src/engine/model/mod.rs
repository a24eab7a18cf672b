//! The validated composition: what a user declared, with every name checked.
//!
//! The loader (an edge module) builds these values from TOML; tests and
//! benchmarks build them in code. Constructors and the loader guarantee the
//! invariants documented on each type (canonical scope paths, entries placed in
//! declared scopes, manifests whose versions and specifiers parsed), so the
//! resolver never re-validates.

mod agent;
mod composition;
mod condition;
mod config;
mod guide;
mod ids;
mod manifest;
mod policy;
mod scope;

pub use agent::{
    AGENT_METADATA_KEY, AGENT_REVISION_METADATA_KEY, AgentDecl, DEFAULT_MAX_STEPS, PromptSource,
};
pub use composition::{Composition, Entry, EntryRef, Preferences};
pub use condition::{Condition, SkippedEntry};
pub use config::{ConfigValue, SecretRef};
pub use guide::{AgentGuide, GuideExample, Visibility, render_description};
pub use ids::{CapabilityName, EntryId, IdError, ScopePath, ToolName};
pub use manifest::{Manifest, Provided, Requirement, ToolDecl};
pub use policy::PolicyDecl;
pub use scope::ScopeDecl;
