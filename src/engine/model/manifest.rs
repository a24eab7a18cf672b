//! Plugin manifests: what a plugin provides and requires, as versioned contracts.

use std::collections::BTreeMap;

use super::config::ConfigValue;
use super::ids::{CapabilityName, ToolName};
use super::small_map::SmallMap;
use crate::engine::span::Origin;
use crate::engine::specifier::{Specifier, render_requirement};
use crate::engine::version::Version;

/// One capability a manifest provides, in one or more contract generations.
///
/// `provides = { database = "1.4.2" }` declares `database@1`;
/// `provides = { database = ["1.0.0", "2.0.0"] }` declares `database@1` and
/// `database@2`. Versions are sorted and never share a major (the loader
/// rejects two versions of one generation).
#[derive(Clone, Debug)]
pub struct Provided {
    /// The capability.
    pub capability: CapabilityName,
    /// Provided versions, ascending, one per contract generation, never empty.
    pub versions: Vec<Version>,
    /// Where it was declared.
    pub origin: Option<Origin>,
}

eq_but_origin!(Provided {
    capability,
    versions
});

impl Provided {
    /// The provided version of contract generation `major`, if any.
    pub fn generation(&self, major: u64) -> Option<&Version> {
        self.versions.iter().find(|v| v.major() == major)
    }
}

/// A requirement on a capability: `requires = { database = ">=1,<2" }`.
#[derive(Clone, Debug)]
pub struct Requirement {
    /// The capability required.
    pub capability: CapabilityName,
    /// Accepted versions.
    pub specifier: Specifier,
    /// Optional requirements bind when they can but never gate their consumer.
    pub optional: bool,
    /// Where it was declared.
    pub origin: Option<Origin>,
}

eq_but_origin!(Requirement {
    capability,
    specifier,
    optional
});

impl Requirement {
    /// A hard requirement.
    pub fn hard(capability: CapabilityName, specifier: Specifier) -> Self {
        Self {
            capability,
            specifier,
            optional: false,
            origin: None,
        }
    }

    /// Whether `version` of this capability is accepted, including the
    /// contract generation pin.
    pub fn accepts(&self, version: &Version) -> bool {
        if let Some(major) = self.specifier.pinned_major()
            && version.major() != major
        {
            return false;
        }
        self.specifier.matches(version.semver())
    }

    /// The reference's rendering: `database <2,>=1`, `vector * (optional)`.
    pub fn render(&self) -> String {
        render_requirement(self.capability.as_str(), &self.specifier, self.optional)
    }
}

/// A tool a plugin declares: its contract as the model sees it.
#[derive(Clone, Debug)]
pub struct ToolDecl {
    /// Tool name.
    pub name: ToolName,
    /// Description shown to the model.
    pub description: String,
    /// JSON Schema of the arguments, `None` for a tool without one.
    pub args_schema: Option<serde_json::Value>,
    /// A static result a declared tool answers with (not part of the
    /// contract hash: it is behaviour, not interface).
    pub result: Option<serde_json::Value>,
    /// The agent-facing guide of this tool.
    pub guide: Option<super::guide::AgentGuide>,
    /// Where it was declared.
    pub origin: Option<Origin>,
    /// The policy its built-in kind's configuration gives it (a `command`
    /// tool's), kept from deriving the manifest so listing the tools need
    /// not read the configuration again. Not part of the contract: it comes
    /// from the configuration, which the entry's identity covers.
    pub policy: Option<Box<crate::engine::policy::ToolPolicy>>,
}

impl ToolDecl {
    /// The declaration of a tool `chassis.lock` pins (an `mcp` server's, or
    /// a process plugin's the TOML does not declare); `None` when its name
    /// is not a valid tool name.
    pub fn from_lock(t: &crate::lock::LockedTool) -> Option<Self> {
        Some(Self {
            name: ToolName::new(&t.name).ok()?,
            description: t.description.clone(),
            args_schema: t.input_schema_json(),
            result: None,
            guide: None,
            origin: None,
            policy: None,
        })
    }
}

// The policy comes from the configuration: it is not part of the contract.
eq_but_origin!(ToolDecl {
    name,
    description,
    args_schema,
    result,
    guide
} ignoring policy);

/// A plugin manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Implementation name, e.g. `postgres`.
    pub name: String,
    /// Implementation version.
    pub version: Version,
    /// Provided capabilities by name.
    pub provides: SmallMap<CapabilityName, Provided>,
    /// Hard and optional requirements by capability (a capability is either
    /// required or optional, never both).
    pub requires: SmallMap<CapabilityName, Requirement>,
    /// Permissions the plugin needs at harness boundaries (`name[:resource]`).
    pub permissions: Vec<String>,
    /// Version of the configuration format the plugin reads.
    pub config_version: u32,
    /// Free-form metadata; never hashed, redacted when shown.
    pub metadata: BTreeMap<String, ConfigValue>,
    /// Declared tools, sorted by name, unique.
    pub tools: Vec<ToolDecl>,
    /// Tools promised by name only, whose interface is not declared here
    /// (an `mcp` entry's `expect_tools`, as chassis names after its prefix):
    /// a mount that does not register one breaks the contract. Not part of
    /// any hash (the configuration that states them is).
    pub expected_tools: Vec<ToolName>,
    /// The catalog kind implementing this manifest (`testing.liar`);
    /// `None` is the declared kind.
    pub kind: Option<String>,
    /// The agent-facing guide of the plugin (applies to its tools).
    pub guide: Option<super::guide::AgentGuide>,
    /// The program implementing this manifest, for a process plugin
    /// (`kind` is then `process`).
    pub process: Option<std::sync::Arc<super::ProcessCommand>>,
    /// Where the manifest was declared.
    pub origin: Option<Origin>,
}

eq_but_origin!(Manifest {
    name,
    version,
    provides,
    requires,
    permissions,
    config_version,
    metadata,
    tools,
    expected_tools,
    kind,
    guide,
    process
});

impl Manifest {
    /// A manifest with only a name and version.
    pub fn new(name: impl Into<String>, version: Version) -> Self {
        Self {
            name: name.into(),
            version,
            provides: SmallMap::new(),
            requires: SmallMap::new(),
            permissions: Vec::new(),
            config_version: 1,
            metadata: BTreeMap::new(),
            tools: Vec::new(),
            expected_tools: Vec::new(),
            kind: None,
            guide: None,
            process: None,
            origin: None,
        }
    }

    /// `name@version` as written.
    pub fn identity(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }

    /// Whether this manifest provides `capability` in any generation.
    pub fn provides_capability(&self, capability: &CapabilityName) -> bool {
        self.provides.contains_key(capability)
    }

    /// Hard requirements in capability order.
    pub fn hard_requirements(&self) -> impl Iterator<Item = &Requirement> {
        self.requires.values().filter(|r| !r.optional)
    }
}
