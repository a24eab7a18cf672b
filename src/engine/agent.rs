//! What identifies an agent's definition: `prompt_hash` and
//! `graph_definition_hash`, and the snapshot context of an agent run.
//!
//! `graph_definition_hash` is the cache key of the agent's compiled plan
//! (the reference's graph cache key): the runtime kind, the prompt, the step
//! limit and options, the sub-agents, and the contracts of the tools the
//! agent sees. The model provider is bound at run time and never enters it,
//! so swapping the model reuses the plan while changing a tool contract
//! does not.

use crate::engine::canonical::{Canon, CanonError, stable_hash};
use crate::engine::model::{AgentDecl, Composition, Entry};
use crate::engine::snapshot::SnapshotContext;

/// The runtime kind of the built-in tool-calling loop.
pub const LOOP_RUNTIME: &str = "chassis.loop";
/// The version of the loop's plan format (bump when the loop's behaviour
/// for the same definition changes).
pub const LOOP_DEFINITION_VERSION: u64 = 1;

/// Hash of a system prompt.
pub fn prompt_hash(prompt: &str) -> Result<String, CanonError> {
    stable_hash(&Canon::Str(prompt.to_owned()))
}

/// Whether `agent` sees the tool `name` (its tool view, or every tool).
pub fn agent_sees(agent: &AgentDecl, name: &str) -> bool {
    agent
        .tools
        .as_ref()
        .is_none_or(|tools| tools.iter().any(|t| t.as_str() == name))
}

/// `graph_definition_hash` of `agent` among the `active` entries.
pub fn graph_definition_hash(
    composition: &Composition,
    agent: &AgentDecl,
    active: &[&Entry],
) -> Result<String, CanonError> {
    let mut tools: Vec<Canon> = Vec::new();
    let mut named: Vec<(&str, Canon)> = Vec::new();
    for e in active {
        for t in &e.manifest.tools {
            if !agent_sees(agent, t.name.as_str()) {
                continue;
            }
            // What the model is told, guide included; a silent tool is not
            // part of the plan.
            let Some(description) = crate::engine::model::render_description(
                t.name.as_str(),
                &t.description,
                t.guide.as_ref(),
                e.manifest.guide.as_ref(),
            ) else {
                continue;
            };
            let args = t.args_schema.as_ref().map_or(Canon::Null, Canon::from_json);
            named.push((
                t.name.as_str(),
                Canon::map([
                    ("name", Canon::from(t.name.as_str())),
                    ("description", Canon::Str(description)),
                    ("args", args),
                ]),
            ));
        }
    }
    named.sort_by(|a, b| a.0.cmp(b.0));
    tools.extend(named.into_iter().map(|(_, c)| c));
    let subs: Vec<Canon> = agent
        .sub_agents
        .iter()
        .map(|s| {
            let description = composition
                .agents
                .get(s)
                .map_or("", |a| a.description.as_str());
            Canon::map([
                ("name", Canon::from(s.as_str())),
                ("description", Canon::from(description)),
            ])
        })
        .collect();
    let definition = Canon::map([
        ("runtime", Canon::from(LOOP_RUNTIME)),
        (
            "definition_version",
            Canon::Int(i128::from(LOOP_DEFINITION_VERSION)),
        ),
        ("agent", Canon::from(agent.name.as_str())),
        ("prompt_hash", Canon::Str(prompt_hash(&agent.prompt)?)),
        ("max_steps", Canon::Int(i128::from(agent.max_steps))),
        (
            "temperature",
            agent.temperature.map_or(Canon::Null, Canon::Float),
        ),
        (
            "max_tokens",
            agent
                .max_tokens
                .map_or(Canon::Null, |t| Canon::Int(i128::from(t))),
        ),
        ("tools", Canon::List(tools)),
        ("sub_agents", Canon::List(subs)),
    ]);
    stable_hash(&definition)
}

/// The snapshot context of a run of `agent`, on top of `base` (generation
/// and mounts).
pub fn agent_snapshot_context(
    composition: &Composition,
    agent: &AgentDecl,
    active: &[&Entry],
    base: SnapshotContext,
) -> Result<SnapshotContext, CanonError> {
    Ok(SnapshotContext {
        agent_runtime: LOOP_RUNTIME.to_owned(),
        agent: Some((agent.name.clone(), agent.revision.clone())),
        graph_definition_hash: Some(graph_definition_hash(composition, agent, active)?),
        prompt_hash: Some(prompt_hash(&agent.prompt)?),
        ..base
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load_str;

    fn comp(text: &str) -> Composition {
        let loaded = load_str("c.toml", text);
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        loaded.composition.expect("loads")
    }

    const BASE: &str = r#"
version = 1
[plugins.t]
version = "1.0.0"
[[plugins.t.tools]]
name = "a"
description = "A."
[[plugins.t.tools]]
name = "b"
description = "B."
[entries.t]
[entries.m1]
plugin = "scripted"
[entries.m2]
plugin = "scripted"
config.model = "other"
[agents.x]
prompt = "Be brief."
tools = ["a"]
prefer_model = "m1"
"#;

    fn hash(c: &Composition) -> String {
        let agent = &c.agents["x"];
        let active: Vec<&Entry> = c.entries.values().collect();
        graph_definition_hash(c, agent, &active).expect("hash")
    }

    #[test]
    fn swapping_the_model_keeps_the_plan_and_tool_contracts_change_it() {
        let base = comp(BASE);
        let swapped = comp(&BASE.replace("prefer_model = \"m1\"", "prefer_model = \"m2\""));
        assert_eq!(hash(&base), hash(&swapped), "model provider swap reuses");
        let unseen = comp(&BASE.replace("description = \"B.\"", "description = \"B2.\""));
        assert_eq!(hash(&base), hash(&unseen), "a tool the agent cannot see");
        let seen = comp(&BASE.replace("description = \"A.\"", "description = \"A2.\""));
        assert_ne!(hash(&base), hash(&seen), "a visible tool contract changed");
        let prompt = comp(&BASE.replace("Be brief.", "Be thorough."));
        assert_ne!(hash(&base), hash(&prompt), "the prompt changed");
    }
}
