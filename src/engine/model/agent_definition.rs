//! An agent a plugin defines: the fields of `[agents.X]` as data.
//!
//! Why it exists: a process plugin may bring its own agents (the Oracle
//! runtime's `getSubAgents`) — a prompt, the tools it may use, its model
//! requirement and budget — which chassis's loop runs like any agent. The
//! pure commands must see them without starting the plugin, so the
//! definitions travel as this one type: answered at `setup`, pinned in
//! `chassis.lock` by `chassis tools --update-lock`, and turned into an
//! [`AgentDecl`] by the loader with the same rules as the TOML table
//! (names, ranges, budget dimensions). What a TOML agent has and a
//! plugin's cannot: `scope` (always `/agents/<name>`), `prefer_model`
//! (entry ids belong to the composition) and `prompt_file`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::agent::{AgentDecl, BudgetLimitProblem, MAX_STEPS, TEMPERATURE, budget_limit};
use super::ids::{CapabilityName, ToolName};
use crate::engine::budget::{BudgetDimension, BudgetLimits};
use crate::engine::specifier::Specifier;

/// One agent a plugin defines.
///
/// Fields it does not know are ignored, as the protocol's minor versions
/// require of both sides (a later SDK may send more).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentDefinition {
    /// The agent's name (a sub-agent is offered to the model as a tool of
    /// this name).
    pub name: String,
    /// Shown when it is a sub-agent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The system prompt.
    #[serde(default)]
    pub prompt: String,
    /// The tools it may use (absent: every tool visible in its scope).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Other agents, offered to it as tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_agents: Vec<String>,
    /// The model capability (default `model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A version specifier for the model (default: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_version: Option<String>,
    /// Model calls per run (1–10000, default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Budget limits by dimension (`model_calls`, `tokens`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub budget: BTreeMap<String, f64>,
    /// Sampling temperature (0–2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Output token limit per model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The input a run without one uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_input: Option<String>,
    /// Pinned by each run from its generation (default `1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

// Numbers are compared as written; a definition that is not finite is
// refused by `to_decl` before it is pinned or mounted.
impl Eq for AgentDefinition {}

impl AgentDefinition {
    /// The declaration the loader adds to the composition, or every
    /// problem found (the same rules as an `[agents.X]` table).
    ///
    /// # Errors
    ///
    /// One message per problem, naming the field.
    pub fn to_decl(&self) -> Result<AgentDecl, Vec<String>> {
        let mut problems = Vec::new();
        let mut decl = match ToolName::new(&self.name).and_then(|_| AgentDecl::new(&self.name)) {
            Ok(d) => d,
            Err(e) => return Err(vec![format!("`name`: {e}")]),
        };
        decl.description.clone_from(&self.description);
        decl.prompt.clone_from(&self.prompt);
        if let Some(rev) = &self.revision {
            match AgentDecl::parse_revision(rev) {
                Some(rev) => rev.clone_into(&mut decl.revision),
                None => {
                    problems.push("`revision` must be a non-empty revision without `/`".to_owned());
                }
            }
        }
        if let Some(model) = &self.model {
            match CapabilityName::new(model) {
                Ok(c) => decl.model.capability = c,
                Err(e) => problems.push(format!("`model`: {e}")),
            }
        }
        if let Some(spec) = &self.model_version {
            match Specifier::parse(spec) {
                Ok(s) => decl.model.specifier = s,
                Err(e) => problems.push(format!("`model_version`: {e}")),
            }
        }
        if let Some(tools) = &self.tools {
            let mut names = Vec::new();
            for t in tools {
                match ToolName::new(t) {
                    Ok(n) => names.push(n),
                    Err(e) => problems.push(format!("`tools`: {e}")),
                }
            }
            decl.tools = Some(names);
        }
        decl.sub_agents.clone_from(&self.sub_agents);
        match self.max_steps {
            Some(n) if MAX_STEPS.contains(&n) => decl.max_steps = n,
            Some(_) => problems.push("`max_steps` must be between 1 and 10000".to_owned()),
            None => {}
        }
        match self.temperature {
            Some(t) if TEMPERATURE.contains(&t) => decl.temperature = Some(t),
            Some(_) => problems.push("`temperature` must be a number from 0 to 2".to_owned()),
            None => {}
        }
        match self.max_tokens {
            Some(0) => problems.push("`max_tokens` must be positive".to_owned()),
            other => decl.max_tokens = other,
        }
        decl.default_input.clone_from(&self.default_input);
        let mut limits = Vec::new();
        for (name, &value) in &self.budget {
            // JSON has one number type: a count is a number without a
            // fraction (the wire cannot tell `3` from `3.0`).
            match budget_limit(name, value, value.fract() == 0.0) {
                Ok(pair) => limits.push(pair),
                Err(BudgetLimitProblem::UnknownDimension) => {
                    let known: Vec<&str> =
                        BudgetDimension::ALL.iter().map(|d| d.as_str()).collect();
                    problems.push(format!(
                        "`budget`: unknown dimension `{name}` (dimensions: {})",
                        known.join(", ")
                    ));
                }
                Err(BudgetLimitProblem::NotACount(d)) => problems.push(format!(
                    "`budget.{name}` counts {}: a whole number",
                    d.as_str()
                )),
                Err(BudgetLimitProblem::Invalid(e)) => {
                    problems.push(format!("`budget.{name}`: {e}"));
                }
            }
        }
        decl.budget = BudgetLimits::new(limits).unwrap_or_default();
        if problems.is_empty() {
            Ok(decl)
        } else {
            Err(problems)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn researcher() -> AgentDefinition {
        AgentDefinition {
            name: "researcher".into(),
            description: "Finds sources.".into(),
            prompt: "You research.".into(),
            tools: Some(vec!["search".into()]),
            max_steps: Some(4),
            budget: [("model_calls".to_owned(), 3.0)].into(),
            temperature: Some(0.0),
            ..AgentDefinition::default()
        }
    }

    #[test]
    fn a_definition_becomes_the_declaration_a_toml_table_would() {
        let d = researcher().to_decl().unwrap();
        assert_eq!(d.name, "researcher");
        assert_eq!(d.scope.as_str(), "/agents/researcher");
        assert_eq!(d.max_steps, 4);
        assert_eq!(d.tools.as_ref().unwrap()[0].as_str(), "search");
        assert_eq!(d.model.capability.as_str(), "model");
        assert_eq!(d.revision, "1");
        assert_eq!(
            d.budget.iter().collect::<Vec<_>>(),
            [(BudgetDimension::ModelCalls, 3.0)]
        );
    }

    #[test]
    fn every_problem_is_named() {
        let bad = AgentDefinition {
            name: "researcher".into(),
            max_steps: Some(0),
            temperature: Some(3.0),
            max_tokens: Some(0),
            model_version: Some("not a specifier".into()),
            revision: Some("a/b".into()),
            budget: [("model_calls".to_owned(), 1.5), ("coffee".to_owned(), 1.0)].into(),
            ..AgentDefinition::default()
        };
        let problems = bad.to_decl().unwrap_err();
        for part in [
            "`max_steps`",
            "`temperature`",
            "`max_tokens`",
            "`model_version`",
            "`revision`",
            "`budget.model_calls`",
            "unknown dimension `coffee`",
        ] {
            assert!(
                problems.iter().any(|p| p.contains(part)),
                "{part}: {problems:?}"
            );
        }
        let unnamed = AgentDefinition {
            name: "two words".into(),
            ..AgentDefinition::default()
        };
        assert!(unnamed.to_decl().unwrap_err()[0].starts_with("`name`"));
    }
}
