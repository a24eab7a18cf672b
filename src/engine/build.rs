//! A fluent builder for compositions in code: tests, benchmarks and
//! embedding applications use it where others write TOML.
//!
//! ```
//! use chassis::engine::build::CompositionBuilder;
//! let composition = CompositionBuilder::new()
//!     .scope("/research", Some(&["database"]))
//!     .entry("postgres").provides("database", &["1.4.2"])
//!     .entry("app").requires("database", ">=1,<2").in_scope("/research")
//!     .build()
//!     .unwrap();
//! assert_eq!(composition.entries.len(), 2);
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;

use super::model::{
    CapabilityName, Composition, ConfigValue, Entry, EntryId, Manifest, Provided, Requirement,
    ScopeDecl, ScopePath, ToolDecl, ToolName,
};
use super::span::Located;
use super::specifier::Specifier;
use super::version::Version;

/// Why a built composition is invalid: the first problem found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BuildError(pub String);

struct Draft {
    id: String,
    plugin: Option<String>,
    version: String,
    scope: String,
    provides: Vec<(String, Vec<String>)>,
    requires: Vec<(String, String, bool)>,
    prefer: Vec<(String, String)>,
    tools: Vec<(String, String, Option<serde_json::Value>)>,
    config: ConfigValue,
}

/// A scope draft: path, capability view, tool view, requirements, preferences.
type ScopeDraft = (
    String,
    Option<Vec<String>>,
    Option<Vec<String>>,
    Vec<(String, String)>,
    Vec<(String, String)>,
);

/// Builds a [`Composition`]; errors surface at [`CompositionBuilder::build`].
pub struct CompositionBuilder {
    scopes: Vec<ScopeDraft>,
    entries: Vec<Draft>,
    global: Vec<(String, String)>,
}

impl Default for CompositionBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl CompositionBuilder {
    /// An empty composition (root scope only).
    pub fn new() -> Self {
        Self {
            scopes: Vec::new(),
            entries: Vec::new(),
            global: Vec::new(),
        }
    }

    /// Declare a scope with an optional capability view.
    pub fn scope(mut self, path: &str, capabilities: Option<&[&str]>) -> Self {
        let caps = capabilities.map(|c| c.iter().map(|s| (*s).to_owned()).collect());
        self.scopes
            .push((path.to_owned(), caps, None, Vec::new(), Vec::new()));
        self
    }

    /// Set the tool view of the last declared scope.
    pub fn tool_view(mut self, tools: &[&str]) -> Self {
        if let Some(s) = self.scopes.last_mut() {
            s.2 = Some(tools.iter().map(|t| (*t).to_owned()).collect());
        }
        self
    }

    /// Add a scope-level requirement to the last declared scope.
    pub fn scope_requires(mut self, capability: &str, spec: &str) -> Self {
        if let Some(s) = self.scopes.last_mut() {
            s.3.push((capability.to_owned(), spec.to_owned()));
        }
        self
    }

    /// Add a scope-level preference to the last declared scope.
    pub fn scope_prefer(mut self, capability: &str, provider: &str) -> Self {
        if let Some(s) = self.scopes.last_mut() {
            s.4.push((capability.to_owned(), provider.to_owned()));
        }
        self
    }

    /// Start a new entry whose plugin (and manifest name) defaults to `id`,
    /// version `1.0.0`, at the root scope.
    pub fn entry(mut self, id: &str) -> Self {
        self.entries.push(Draft {
            id: id.to_owned(),
            plugin: None,
            version: "1.0.0".into(),
            scope: "/".into(),
            provides: Vec::new(),
            requires: Vec::new(),
            prefer: Vec::new(),
            tools: Vec::new(),
            config: ConfigValue::empty_table(),
        });
        self
    }

    fn last(&mut self) -> Option<&mut Draft> {
        self.entries.last_mut()
    }

    /// Manifest name and version of the current entry.
    pub fn plugin(mut self, name: &str, version: &str) -> Self {
        if let Some(d) = self.last() {
            d.plugin = Some(name.to_owned());
            d.version = version.to_owned();
        }
        self
    }

    /// Place the current entry in `scope`.
    pub fn in_scope(mut self, scope: &str) -> Self {
        if let Some(d) = self.last() {
            d.scope = scope.to_owned();
        }
        self
    }

    /// The current entry provides `capability` in `versions`.
    pub fn provides(mut self, capability: &str, versions: &[&str]) -> Self {
        if let Some(d) = self.last() {
            d.provides.push((
                capability.to_owned(),
                versions.iter().map(|v| (*v).to_owned()).collect(),
            ));
        }
        self
    }

    /// The current entry requires `capability` matching `spec`.
    pub fn requires(mut self, capability: &str, spec: &str) -> Self {
        if let Some(d) = self.last() {
            d.requires
                .push((capability.to_owned(), spec.to_owned(), false));
        }
        self
    }

    /// The current entry optionally requires `capability`.
    pub fn optional(mut self, capability: &str, spec: &str) -> Self {
        if let Some(d) = self.last() {
            d.requires
                .push((capability.to_owned(), spec.to_owned(), true));
        }
        self
    }

    /// A consumer-level preference on the current entry.
    pub fn prefer(mut self, capability: &str, provider: &str) -> Self {
        if let Some(d) = self.last() {
            d.prefer.push((capability.to_owned(), provider.to_owned()));
        }
        self
    }

    /// A tool declared by the current entry's plugin.
    pub fn tool(mut self, name: &str, description: &str, args: Option<serde_json::Value>) -> Self {
        if let Some(d) = self.last() {
            d.tools
                .push((name.to_owned(), description.to_owned(), args));
        }
        self
    }

    /// The current entry's configuration table.
    pub fn config(mut self, config: ConfigValue) -> Self {
        if let Some(d) = self.last() {
            d.config = config;
        }
        self
    }

    /// A global preference.
    pub fn prefer_global(mut self, capability: &str, provider: &str) -> Self {
        self.global
            .push((capability.to_owned(), provider.to_owned()));
        self
    }

    /// Validate and build.
    pub fn build(self) -> Result<Composition, BuildError> {
        let err = |e: &dyn std::fmt::Display| BuildError(e.to_string());
        let cap = |s: &str| CapabilityName::new(s).map_err(|e| err(&e));
        let entry_id = |s: &str| EntryId::new(s).map_err(|e| err(&e));
        let spec = |s: &str| Specifier::parse(s).map_err(|e| err(&e));
        let mut c = Composition::new();
        for (path, caps, tools, reqs, prefs) in self.scopes {
            let mut decl = ScopeDecl::new(ScopePath::new(&path).map_err(|e| err(&e))?);
            if let Some(caps) = caps {
                decl.capabilities = Some(
                    caps.iter()
                        .map(|s| cap(s))
                        .collect::<Result<BTreeSet<_>, _>>()?,
                );
            }
            if let Some(tools) = tools {
                decl.tools = Some(
                    tools
                        .iter()
                        .map(|t| ToolName::new(t).map_err(|e| err(&e)))
                        .collect::<Result<BTreeSet<_>, _>>()?,
                );
            }
            for (k, s) in reqs {
                decl.requirements
                    .insert(cap(&k)?, Requirement::hard(cap(&k)?, spec(&s)?));
            }
            for (k, p) in prefs {
                decl.prefer.insert(cap(&k)?, Located::bare(entry_id(&p)?));
            }
            c.insert_scope(decl);
        }
        for d in self.entries {
            let name = d.plugin.clone().unwrap_or_else(|| d.id.clone());
            let mut m = Manifest::new(name, Version::parse(&d.version).map_err(|e| err(&e))?);
            for (k, versions) in d.provides {
                let mut vs = versions
                    .iter()
                    .map(|v| Version::parse(v).map_err(|e| err(&e)))
                    .collect::<Result<Vec<_>, _>>()?;
                vs.sort();
                m.provides.insert(
                    cap(&k)?,
                    Provided {
                        capability: cap(&k)?,
                        versions: vs,
                        origin: None,
                    },
                );
            }
            for (k, s, optional) in d.requires {
                let mut r = Requirement::hard(cap(&k)?, spec(&s)?);
                r.optional = optional;
                m.requires.insert(cap(&k)?, r);
            }
            for (name, description, args) in d.tools {
                m.tools.push(ToolDecl {
                    name: ToolName::new(&name).map_err(|e| err(&e))?,
                    description,
                    args_schema: args,
                    result: None,
                    guide: None,
                    origin: None,
                    policy: None,
                });
            }
            m.tools.sort_by(|a, b| a.name.cmp(&b.name));
            let mut entry = Entry::new(entry_id(&d.id)?, Arc::new(m))
                .in_scope(ScopePath::new(&d.scope).map_err(|e| err(&e))?);
            entry.config = Arc::new(d.config);
            for (k, p) in d.prefer {
                entry.prefer.insert(cap(&k)?, Located::bare(entry_id(&p)?));
            }
            if c.entries.contains_key(&entry.id) {
                return Err(BuildError(format!("entry `{}` defined twice", entry.id)));
            }
            c.insert_entry(entry);
        }
        for (k, p) in self.global {
            c.preferences
                .global
                .insert(cap(&k)?, Located::bare(entry_id(&p)?));
        }
        Ok(c)
    }
}
