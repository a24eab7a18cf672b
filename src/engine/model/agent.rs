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
use crate::engine::budget::{BudgetDimension, BudgetLimits};
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
    /// The process plugin entry that defines it (pinned in
    /// `chassis.lock`); `None` for an `[agents.X]` table. Skipping that
    /// entry (`enabled_if`) removes the agent too.
    pub defined_by: Option<super::ids::EntryId>,
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
    prefer_model,
    defined_by
});

/// The `max_steps` an agent may declare.
pub const MAX_STEPS: std::ops::RangeInclusive<u32> = 1..=10_000;

/// The `temperature` an agent may declare.
pub const TEMPERATURE: std::ops::RangeInclusive<f64> = 0.0..=2.0;

/// Why one budget limit of an agent cannot be used.
#[derive(Clone, Debug, PartialEq)]
pub enum BudgetLimitProblem {
    /// No dimension has this name.
    UnknownDimension,
    /// A count written with a fraction (or as a float where a whole number
    /// belongs).
    NotACount(BudgetDimension),
    /// The limit itself is refused (negative, not finite).
    Invalid(String),
}

/// One budget limit as an agent declares it (`name = value`; `integral`:
/// written as a whole number): the same rules for a TOML table and for an
/// agent a plugin defines.
///
/// # Errors
///
/// Why the limit cannot be used.
pub fn budget_limit(
    name: &str,
    value: f64,
    integral: bool,
) -> Result<(BudgetDimension, f64), BudgetLimitProblem> {
    let dimension = BudgetDimension::from_name(name).ok_or(BudgetLimitProblem::UnknownDimension)?;
    if dimension.is_count() && !integral {
        return Err(BudgetLimitProblem::NotACount(dimension));
    }
    BudgetLimits::new([(dimension, value)])
        .map_err(|e| BudgetLimitProblem::Invalid(e.to_string()))?;
    Ok((dimension, value))
}

impl AgentDecl {
    /// A `revision` as written, trimmed: `None` when it is empty or holds
    /// a `/`.
    #[must_use]
    pub fn parse_revision(text: &str) -> Option<&str> {
        let rev = text.trim();
        (!rev.is_empty() && !rev.contains('/')).then_some(rev)
    }

    /// An agent `name` with defaults: scope `/agents/<name>`, model `*`,
    /// every visible tool, revision `1`, an empty prompt.
    ///
    /// # Errors
    ///
    /// A name that is not a tool name or not one scope segment
    /// ([`super::ids::check_agent_name`]).
    pub fn new(name: &str) -> Result<Self, super::ids::IdError> {
        super::ids::check_agent_name(name)?;
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
            defined_by: None,
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
