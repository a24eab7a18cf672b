//! The catalog: implementation names used in TOML → plugin implementations.
//!
//! A name registered here wins; otherwise an entry's plugin is the
//! *declared* kind, whose manifest came from the composition and which
//! provides what it declares. The `testing.*` kinds exist in every build
//! (like terraform's null provider) so failure paths are reachable from TOML.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::declared::DeclaredPlugin;
use super::identity::Implementation;
use super::plugin::Plugin;
use super::scope::BoxError;
use super::testing_kinds;
use crate::engine::model::Entry;

/// Builds a plugin for one entry.
pub type Factory = Arc<dyn Fn(&Entry) -> Result<Arc<dyn Plugin>, BoxError> + Send + Sync>;

/// An entry names an implementation no catalog has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("entry `{entry}` uses the unknown plugin kind `{kind}`; known kinds: {}", available.join(", "))]
pub struct UnknownKind {
    /// Entry id.
    pub entry: String,
    /// The kind asked for.
    pub kind: String,
    /// What exists.
    pub available: Vec<String>,
}

/// Resolves names the catalog does not hold, at instantiation time.
pub type Resolver = Arc<dyn Fn(&Entry) -> Option<Result<Arc<dyn Plugin>, BoxError>> + Send + Sync>;

/// Name → implementation.
#[derive(Clone)]
pub struct Catalog {
    factories: BTreeMap<String, Factory>,
    resolver: Option<Resolver>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("kinds", &self.factories.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Default for Catalog {
    fn default() -> Self {
        Self::new()
    }
}

impl Catalog {
    /// The built-in catalog: the `testing.*` kinds.
    pub fn new() -> Self {
        let mut catalog = Self {
            factories: BTreeMap::new(),
            resolver: None,
        };
        testing_kinds::register(&mut catalog);
        catalog
    }

    /// Register (or replace) `name`.
    pub fn register(&mut self, name: impl Into<String>, factory: Factory) {
        self.factories.insert(name.into(), factory);
    }

    /// Register a fixed plugin object under `name` (every entry shares it).
    pub fn register_plugin(&mut self, name: impl Into<String>, plugin: Arc<dyn Plugin>) {
        self.register(name, Arc::new(move |_| Ok(Arc::clone(&plugin))));
    }

    /// Consult `resolver` for names no factory is registered under (before
    /// falling back to the declared kind). Test harnesses use it to install
    /// plugins after the harness exists.
    pub fn set_resolver(&mut self, resolver: Resolver) {
        self.resolver = Some(resolver);
    }

    /// Registered kind names, sorted.
    pub fn kinds(&self) -> Vec<String> {
        self.factories.keys().cloned().collect()
    }

    /// What implements `entry`, as its node identity names it: its kind,
    /// or its plugin name when the catalog registers that name (or may
    /// resolve it), else the declared kind. Agrees with
    /// [`Self::instantiate`].
    pub fn implementation<'e>(&self, entry: &'e Entry) -> Implementation<'e> {
        if let Some(kind) = entry.manifest.kind.as_deref() {
            return Implementation::Named(kind);
        }
        let name = entry.plugin.value.as_str();
        if self.factories.contains_key(name) || self.resolver.is_some() {
            Implementation::Named(name)
        } else {
            Implementation::Declared
        }
    }

    /// The implementation for `entry`: a registered kind named by
    /// `kind` (or the entry's plugin name), else the declared kind.
    pub fn instantiate(
        &self,
        entry: &Entry,
        kind: Option<&str>,
    ) -> Result<Arc<dyn Plugin>, BoxError> {
        let name = kind.unwrap_or(&entry.plugin.value);
        match self.factories.get(name) {
            Some(factory) => factory(entry),
            None => {
                if let Some(found) = self.resolver.as_ref().and_then(|r| r(entry)) {
                    return found;
                }
                match kind {
                    Some(_) => Err(Box::new(UnknownKind {
                        entry: entry.id.to_string(),
                        kind: name.to_owned(),
                        available: self.kinds(),
                    })),
                    None => Ok(Arc::new(DeclaredPlugin::new(entry))),
                }
            }
        }
    }
}
