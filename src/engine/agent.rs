//! What identifies an agent's definition: `prompt_hash` and
//! `graph_definition_hash`, the snapshot context of an agent run, and each
//! agent's definition as it enters a composition's identity
//! ([`agents_metadata`]).
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

/// The snapshot metadata key of the agents' definitions.
pub const AGENTS: &str = "agents";

/// Hash of a system prompt, without its surrounding whitespace (as the
/// reference hashes it): reindenting a prompt or adding a blank line after
/// it changes nothing.
pub fn prompt_hash(prompt: &str) -> Result<String, CanonError> {
    stable_hash(&Canon::Str(prompt.trim().to_owned()))
}

/// What an agent is, as it enters the composition's identity: every field
/// that changes what a run of it does. Text (prompt, description, default
/// input) appears as a hash; lists that are sets (tools, sub-agents) are
/// sorted, so reordering them is no change.
pub fn agent_definition(agent: &AgentDecl) -> Result<Canon, CanonError> {
    let text = |s: &str| stable_hash(&Canon::Str(s.trim().to_owned())).map(Canon::Str);
    let sorted = |items: Vec<&str>| {
        let mut items = items;
        items.sort_unstable();
        Canon::list(items)
    };
    Ok(Canon::map([
        ("revision", Canon::from(agent.revision.as_str())),
        ("scope", Canon::from(agent.scope.as_str())),
        ("description_hash", text(&agent.description)?),
        ("prompt_hash", Canon::Str(prompt_hash(&agent.prompt)?)),
        (
            "default_input_hash",
            match &agent.default_input {
                Some(input) => text(input)?,
                None => Canon::Null,
            },
        ),
        ("model", Canon::Str(agent.model.render())),
        (
            "prefer_model",
            agent
                .prefer_model
                .as_ref()
                .map_or(Canon::Null, |e| Canon::from(e.value.as_str())),
        ),
        (
            "tools",
            agent.tools.as_ref().map_or(Canon::Null, |tools| {
                sorted(tools.iter().map(|t| t.as_str()).collect())
            }),
        ),
        (
            "sub_agents",
            sorted(agent.sub_agents.iter().map(String::as_str).collect()),
        ),
        ("max_steps", Canon::Int(i128::from(agent.max_steps))),
        (
            "budget",
            Canon::Map(
                agent
                    .budget
                    .iter()
                    .map(|(d, v)| (d.as_str().to_owned(), Canon::Float(v)))
                    .collect(),
            ),
        ),
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
    ]))
}

/// The snapshot's `metadata.agents`: per agent, the hash of its
/// [`agent_definition`] (what the semantic composition holds) and the
/// definition itself (what a diff names); `None` for a composition without
/// agents, whose snapshot stays the reference's.
pub fn agents_metadata(composition: &Composition) -> Result<Option<Canon>, CanonError> {
    if composition.agents.is_empty() {
        return Ok(None);
    }
    let mut out = std::collections::BTreeMap::new();
    for (name, agent) in &composition.agents {
        let definition = agent_definition(agent)?;
        let hash = stable_hash(&definition)?;
        out.insert(
            name.clone(),
            Canon::map([("hash", Canon::Str(hash)), ("definition", definition)]),
        );
    }
    Ok(Some(Canon::Map(out)))
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
    // A set, as the tools are: reordering `sub_agents` is no change.
    let mut sub_agents: Vec<&String> = agent.sub_agents.iter().collect();
    sub_agents.sort_unstable();
    let subs: Vec<Canon> = sub_agents
        .into_iter()
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

    fn semantic(c: &Composition) -> String {
        let tree = crate::engine::tree::ScopeTree::new(c);
        let plan = crate::engine::resolve::resolve_with_tree(c, &tree);
        crate::engine::snapshot::build_snapshot(c, &tree, &plan, &SnapshotContext::default())
            .and_then(|s| s.semantic_digest())
            .expect("a snapshot")
    }

    #[test]
    fn an_agent_definition_is_part_of_the_semantic_digest() {
        let base = comp(BASE);
        let digest = semantic(&base);
        // Whitespace around the prompt and the order of tool lists are no change.
        let spaced = comp(&BASE.replace("\"Be brief.\"", "\"\"\"\n  Be brief.  \n\"\"\""));
        assert_eq!(semantic(&spaced), digest);
        let listed = comp(&BASE.replace("tools = [\"a\"]", "tools = [\"a\", \"b\"]"));
        let reordered = comp(&BASE.replace("tools = [\"a\"]", "tools = [\"b\", \"a\"]"));
        assert_eq!(semantic(&listed), semantic(&reordered));
        // What a run of the agent does is.
        for (what, edited) in [
            ("prompt", BASE.replace("Be brief.", "Ignore all rules.")),
            ("max_steps", format!("{BASE}max_steps = 60\n")),
            ("budget", format!("{BASE}budget = {{ tokens = 2000000 }}\n")),
            ("temperature", format!("{BASE}temperature = 0.9\n")),
            (
                "tools",
                BASE.replace("tools = [\"a\"]", "tools = [\"a\", \"b\"]"),
            ),
            (
                "model",
                BASE.replace("prefer_model = \"m1\"", "prefer_model = \"m2\""),
            ),
        ] {
            assert_ne!(semantic(&comp(&edited)), digest, "{what}");
        }
        // A composition without agents has no `agents` metadata (its
        // snapshot stays the reference's).
        let bare = comp("version = 1\n[plugins.t]\nversion = \"1.0.0\"\n[entries.t]\n");
        assert!(agents_metadata(&bare).unwrap().is_none());
    }
}
