//! Agents declared in the composition (`[agents.NAME]`).
//!
//! An agent is materialized as an agent-owned scope (default
//! `/agents/<name>`, never a scope the user declared) whose tool view is the
//! agent's tools and whose scope-level requirement is the model capability.
//! So the resolver explains the agent's model like any requirement, the
//! snapshot's scope fingerprint changes when the agent's wiring changes, and
//! a run sees exactly the tools of its agent's scope.

use std::collections::BTreeMap;

use super::ids::{CapabilityName, ScopePath, ToolName};
use super::manifest::Requirement;
use crate::engine::budget::BudgetLimits;
use crate::engine::span::Origin;

/// Scope metadata key naming the agent that owns a scope (reserved).
pub const AGENT_METADATA_KEY: &str = "chassis.agent";
/// Scope metadata key holding the agent's revision (reserved).
pub const AGENT_REVISION_METADATA_KEY: &str = "chassis.agent_revision";
/// The default step limit.
pub const DEFAULT_MAX_STEPS: u32 = 10;

/// Where an agent's system prompt came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptSource {
    /// Written inline (`prompt = "…"`).
    Inline,
    /// Read from a file (`prompt_file = "…"`), path as written.
    File(String),
}

/// An agent as declared.
#[derive(Clone, Debug)]
pub struct AgentDecl {
    /// Name (the table key).
    pub name: String,
    /// Revision, pinned by each run from its generation (default `1`).
    pub revision: String,
    /// Description (shown when the agent is offered as a sub-agent tool).
    pub description: String,
    /// The agent-owned scope.
    pub scope: ScopePath,
    /// The model requirement (capability `model` by default, any version).
    pub model: Requirement,
    /// Tool view; `None` = every tool visible in the agent's scope.
    pub tools: Option<Vec<ToolName>>,
    /// Other agents this one may call as tools.
    pub sub_agents: Vec<String>,
    /// System prompt text.
    pub prompt: String,
    /// Where the prompt came from.
    pub prompt_source: PromptSource,
    /// Step limit: model calls in one run.
    pub max_steps: u32,
    /// Budget limits of one run.
    pub budget: BudgetLimits,
    /// Sampling temperature passed to the model.
    pub temperature: Option<f64>,
    /// Generated-token cap passed to the model.
    pub max_tokens: Option<u64>,
    /// The input a run uses when it is given none (examples, demos).
    pub default_input: Option<String>,
    /// Preferred provider for the model capability (an entry id).
    pub prefer_model: Option<super::composition::EntryRef>,
    /// Where it was declared.
    pub origin: Option<Origin>,
}

eq_but_origin!(AgentDecl {
    name,
    revision,
    description,
    scope,
    model,
    tools,
    sub_agents,
    prompt,
    prompt_source,
    max_steps,
    budget,
    temperature,
    max_tokens,
    default_input,
    prefer_model
});

impl AgentDecl {
    /// An agent `name` with defaults: scope `/agents/<name>`, model `*`,
    /// every visible tool, revision `1`, an empty prompt.
    pub fn new(name: &str) -> Result<Self, super::ids::IdError> {
        let scope = ScopePath::new(&format!("/agents/{name}"))?;
        let model = Requirement::hard(
            CapabilityName::new("model").expect("valid capability name"),
            crate::engine::specifier::Specifier::any(),
        );
        Ok(Self {
            name: name.to_owned(),
            revision: "1".into(),
            description: String::new(),
            scope,
            model,
            tools: None,
            sub_agents: Vec::new(),
            prompt: String::new(),
            prompt_source: PromptSource::Inline,
            max_steps: DEFAULT_MAX_STEPS,
            budget: BudgetLimits::unlimited(),
            temperature: None,
            max_tokens: None,
            default_input: None,
            prefer_model: None,
            origin: None,
        })
    }

    /// The scope the agent owns, as the resolver sees it.
    pub fn scope_decl(&self) -> super::scope::ScopeDecl {
        let mut scope = super::scope::ScopeDecl::new(self.scope.clone());
        scope.tools = self.tools.as_ref().map(|t| {
            let mut names: std::collections::BTreeSet<ToolName> = t.iter().cloned().collect();
            // Sub-agents are tools of this agent's scope too.
            for sub in &self.sub_agents {
                if let Ok(n) = ToolName::new(sub) {
                    names.insert(n);
                }
            }
            names
        });
        scope
            .requirements
            .insert(self.model.capability.clone(), self.model.clone());
        if let Some(p) = &self.prefer_model {
            scope
                .prefer
                .insert(self.model.capability.clone(), p.clone());
        }
        let mut metadata = BTreeMap::new();
        metadata.insert(
            AGENT_METADATA_KEY.to_owned(),
            super::config::ConfigValue::Str(self.name.clone()),
        );
        metadata.insert(
            AGENT_REVISION_METADATA_KEY.to_owned(),
            super::config::ConfigValue::Str(self.revision.clone()),
        );
        scope.metadata = metadata;
        scope.origin = self.origin;
        scope
    }
}
