//! Declared scopes: where entries live and what they may see.

use std::collections::{BTreeMap, BTreeSet};

use super::composition::EntryRef;
use super::config::ConfigValue;
use super::ids::{CapabilityName, ScopePath, ToolName};
use super::manifest::Requirement;
use super::small_map::SmallMap;
use crate::engine::span::Origin;

/// A scope as declared (`[scopes."/research"]`), or implied as the parent of a
/// declared scope.
#[derive(Clone, Debug)]
pub struct ScopeDecl {
    /// Canonical path.
    pub path: ScopePath,
    /// The scope's own capability view; `None` = no restriction. The effective
    /// view is the intersection of the views from the root down.
    pub capabilities: Option<BTreeSet<CapabilityName>>,
    /// The scope's own tool view; `None` = no restriction.
    pub tools: Option<BTreeSet<ToolName>>,
    /// Scope-level requirements: explained, never gating.
    pub requirements: SmallMap<CapabilityName, Requirement>,
    /// Preferences for consumers declared in exactly this scope.
    pub prefer: BTreeMap<CapabilityName, EntryRef>,
    /// Free-form metadata; never hashed into the snapshot, redacted when shown.
    pub metadata: BTreeMap<String, ConfigValue>,
    /// Whether the scope was implied by a descendant rather than declared.
    pub implied: bool,
    /// Where it was declared.
    pub origin: Option<Origin>,
}

eq_but_origin!(ScopeDecl {
    path,
    capabilities,
    tools,
    requirements,
    prefer,
    metadata,
    implied
});

impl ScopeDecl {
    /// An unrestricted scope at `path`.
    pub fn new(path: ScopePath) -> Self {
        Self {
            path,
            capabilities: None,
            tools: None,
            requirements: SmallMap::new(),
            prefer: BTreeMap::new(),
            metadata: BTreeMap::new(),
            implied: false,
            origin: None,
        }
    }
}
