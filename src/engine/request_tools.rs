//! Per-request tools (the Oracle runtime's `getRequestTools`): tools one run
//! brings with its request.
//!
//! Why it exists: a tool set never changes under a generation, so a request
//! that brings tools of its own runs on a *candidate* generation derived
//! from the one it leased — the same instances and providers, plus an entry
//! `request-tools` in the agent's scope that declares the request's tools,
//! which the agent's tool view then includes. The candidate is private to
//! that run (it is never published, other runs never see it) and has its
//! own snapshot, so the digest a run is stamped with says exactly which
//! tools it could call. This module is the pure half, shared by the runtime
//! (which adds the tool implementations) and `chassis snapshot`, so both
//! compute the same digest.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::engine::model::{Composition, ConfigValue, Entry, EntryId, Manifest, ToolDecl};
use crate::engine::policy::ToolPolicy;
use crate::engine::version::Version;

/// The id of the entry that holds a request's tools.
pub const ENTRY_ID: &str = "request-tools";

/// Why a request's tools cannot join the composition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestToolsError {
    /// No such agent.
    #[error("no agent `{0}` in the composition")]
    UnknownAgent(String),
    /// The composition already has an entry with the reserved id.
    #[error("the composition has its own entry `{ENTRY_ID}`; that id holds a request's tools")]
    ReservedEntry,
    /// A request tool's name is taken (by the composition or the request).
    #[error(
        "the request's tool `{0}` has the name of another tool; tool names are unique in a generation"
    )]
    Duplicate(String),
    /// A request tool's name is not a tool name.
    #[error("the request's tool `{0}` does not have a valid tool name")]
    InvalidName(String),
    /// A scope tool view above the agent hides a request tool.
    #[error(
        "the request's tool `{tool}` would be hidden from agent `{agent}` by a scope tool view on its path; request tools join the agent's view only"
    )]
    Hidden {
        /// The tool.
        tool: String,
        /// The agent.
        agent: String,
    },
    /// The candidate's snapshot could not be built.
    #[error("the request's candidate generation cannot be snapshotted: {0}")]
    Snapshot(String),
}

impl RequestToolsError {
    /// What went wrong, naming no tool, agent or value: for a client of
    /// `chassis serve`, whose tool names are its own text (a reply that
    /// echoed one, or redacted it, would tell it whether its guess is a
    /// secret's value).
    pub fn unquoted(&self) -> &'static str {
        match self {
            RequestToolsError::UnknownAgent(_) => "the agent is not in the composition",
            RequestToolsError::ReservedEntry => {
                "the composition has its own entry `request-tools`; that id holds a request's tools"
            }
            RequestToolsError::Duplicate(_) => {
                "a tool the request brings has the name of another tool (the composition's, or another of the request's); tool names are unique in a generation"
            }
            RequestToolsError::InvalidName(_) => {
                "a tool the request brings does not have a valid tool name"
            }
            RequestToolsError::Hidden { .. } => {
                "a tool the request brings would be hidden from the agent by a scope tool view on its path; request tools join the agent's view only"
            }
            RequestToolsError::Snapshot(_) => {
                "the request's candidate generation cannot be snapshotted"
            }
        }
    }
}

/// What a request's tools are, as the snapshot sees them: their contracts,
/// the permissions their policies use, and a configuration that identifies
/// what they run (argv, environment names, policies: it enters
/// `config_hash` like any entry's configuration, so two requests whose
/// tools run different programs never share a digest).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestToolsDecl {
    /// The tools' contracts.
    pub tools: Vec<ToolDecl>,
    /// Permission names their policies use (the manifest declares them).
    pub permissions: Vec<String>,
    /// What identifies their behaviour.
    pub config: ConfigValue,
}

impl RequestToolsDecl {
    /// From each tool's contract and policy, and the identifying `config`.
    pub fn new<'a>(
        tools: impl IntoIterator<Item = (ToolDecl, &'a ToolPolicy)>,
        config: ConfigValue,
    ) -> Self {
        let mut decls = Vec::new();
        let mut permissions = BTreeSet::new();
        for (decl, policy) in tools {
            permissions.extend(
                policy
                    .templates()
                    .unwrap_or_default()
                    .iter()
                    .map(|t| t.name().to_owned()),
            );
            decls.push(decl);
        }
        decls.sort_by(|a, b| a.name.cmp(&b.name));
        Self {
            tools: decls,
            permissions: permissions.into_iter().collect(),
            config,
        }
    }
}

/// `composition` with the request's tools declared by an entry
/// [`ENTRY_ID`] in `agent`'s scope, and added to `agent`'s tool view.
/// `taken` names the tools the generation already registers; a request
/// tool may not reuse a name (nor a sub-agent's). Tools are sorted by name,
/// so the order the request lists them in does not change the digest. No
/// tools: the composition unchanged.
pub fn with_request_tools(
    composition: &Composition,
    agent: &str,
    request: &RequestToolsDecl,
    taken: &dyn Fn(&str) -> bool,
) -> Result<Composition, RequestToolsError> {
    if !composition.agents.contains_key(agent) {
        return Err(RequestToolsError::UnknownAgent(agent.to_owned()));
    }
    if request.tools.is_empty() {
        return Ok(composition.clone());
    }
    let id = EntryId::new(ENTRY_ID).expect("a valid entry id");
    if composition.entries.contains_key(&id)
        || composition
            .entries
            .values()
            .any(|e| e.manifest.name == ENTRY_ID)
    {
        return Err(RequestToolsError::ReservedEntry);
    }
    let mut decls: Vec<ToolDecl> = request.tools.clone();
    decls.sort_by(|a, b| a.name.cmp(&b.name));
    for pair in decls.windows(2) {
        if pair[0].name == pair[1].name {
            return Err(RequestToolsError::Duplicate(pair[0].name.to_string()));
        }
    }
    let declared_elsewhere = |name: &str| {
        taken(name)
            || composition
                .entries
                .values()
                .any(|e| e.manifest.tools.iter().any(|t| t.name.as_str() == name))
            || composition
                .agents
                .values()
                .any(|a| a.sub_agents.iter().any(|s| s == name))
    };
    if let Some(t) = decls.iter().find(|t| declared_elsewhere(t.name.as_str())) {
        return Err(RequestToolsError::Duplicate(t.name.to_string()));
    }
    let mut decl = composition
        .agents
        .get(agent)
        .cloned()
        .ok_or_else(|| RequestToolsError::UnknownAgent(agent.to_owned()))?;
    if let Some(view) = decl.tools.as_mut() {
        view.extend(decls.iter().map(|t| t.name.clone()));
    }
    let scope = decl.scope.clone();
    let mut next = composition.clone();
    // The agent's scope (and its tool view) is derived from the agent.
    next.insert_agent(decl);
    let mut manifest = Manifest::new(ENTRY_ID, Version::parse("1.0.0").expect("a valid version"));
    manifest.kind = Some(ENTRY_ID.to_owned());
    manifest.permissions = request.permissions.clone();
    manifest.tools = decls;
    let names: Vec<_> = manifest.tools.iter().map(|t| t.name.clone()).collect();
    let mut entry = Entry::new(id.clone(), Arc::new(manifest)).in_scope(scope.clone());
    entry.config = Arc::new(request.config.clone());
    next.entries.insert(id, entry);
    // A scope tool view on the way down would hide them: say so instead of
    // stamping a digest for tools the agent cannot call.
    let tree = crate::engine::tree::ScopeTree::new(&next);
    if let Some(ix) = tree.find(&scope)
        && let Some(hidden) = names.iter().find(|n| !tree.shows_tool(ix, n))
    {
        return Err(RequestToolsError::Hidden {
            tool: hidden.to_string(),
            agent: agent.to_owned(),
        });
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::ToolName;
    use crate::engine::resolve::resolve;
    use crate::engine::snapshot::{SnapshotContext, build_snapshot};
    use crate::engine::tree::ScopeTree;

    fn decl(name: &str) -> ToolDecl {
        ToolDecl {
            name: ToolName::new(name).unwrap(),
            description: format!("{name} for this request"),
            args_schema: Some(serde_json::json!({"type": "object"})),
            result: None,
            guide: None,
            origin: None,
            policy: None,
        }
    }

    fn req(names: &[&str]) -> RequestToolsDecl {
        let policy = ToolPolicy::default();
        RequestToolsDecl::new(
            names.iter().map(|n| (decl(n), &policy)),
            ConfigValue::empty_table(),
        )
    }

    fn composition() -> Composition {
        crate::load::load_str(
            "c.toml",
            "version = 1\n[plugins.m]\nversion = \"1.0.0\"\nprovides = { model = \"1.0.0\" }\n[[plugins.m.tools]]\nname = \"search\"\ndescription = \"s\"\n[entries.m]\n[agents.a]\nprompt = \"p\"\ntools = [\"search\"]\n",
        )
        .composition
        .unwrap()
    }

    fn digest(c: &Composition) -> String {
        let tree = ScopeTree::new(c);
        let plan = resolve(c);
        build_snapshot(c, &tree, &plan, &SnapshotContext::default())
            .unwrap()
            .digests()
            .unwrap()
            .digest
    }

    #[test]
    fn request_tools_join_the_agent_view_and_change_the_digest_in_any_order() {
        let base = composition();
        let none = |_: &str| false;
        let ab = with_request_tools(&base, "a", &req(&["alpha", "beta"]), &none).unwrap();
        let ba = with_request_tools(&base, "a", &req(&["beta", "alpha"]), &none).unwrap();
        let view: Vec<&str> = ab.agents["a"]
            .tools
            .as_ref()
            .unwrap()
            .iter()
            .map(ToolName::as_str)
            .collect();
        assert_eq!(view, ["search", "alpha", "beta"]);
        let scope = &ab.scopes[&ab.agents["a"].scope];
        assert!(
            scope
                .tools
                .as_ref()
                .is_some_and(|t| t.iter().any(|n| n.as_str() == "alpha")),
            "the agent scope's tool view follows the agent"
        );
        assert_ne!(digest(&ab), digest(&base));
        assert_eq!(digest(&ab), digest(&ba));
        assert_eq!(
            digest(&base),
            digest(&composition()),
            "the base is untouched"
        );
    }

    #[test]
    fn a_request_tool_never_shadows_another_and_the_agent_must_exist() {
        let base = composition();
        let none = |_: &str| false;
        assert_eq!(
            with_request_tools(&base, "a", &req(&["search"]), &none).unwrap_err(),
            RequestToolsError::Duplicate("search".into())
        );
        assert_eq!(
            with_request_tools(&base, "a", &req(&["x", "x"]), &none).unwrap_err(),
            RequestToolsError::Duplicate("x".into())
        );
        let registered = |n: &str| n == "live";
        assert_eq!(
            with_request_tools(&base, "a", &req(&["live"]), &registered).unwrap_err(),
            RequestToolsError::Duplicate("live".into())
        );
        assert_eq!(
            with_request_tools(&base, "nobody", &req(&["x"]), &none).unwrap_err(),
            RequestToolsError::UnknownAgent("nobody".into())
        );
        // A sub-agent's name is a tool name too; a view above the agent
        // would hide the tool.
        let load = |extra: &str| {
            crate::load::load_str(
                "c.toml",
                &format!("version = 1\n[plugins.m]\nversion = \"1.0.0\"\nprovides = {{ model = \"1.0.0\" }}\n[entries.m]\n[agents.a]\nprompt = \"p\"\n{extra}"),
            )
            .composition
            .unwrap()
        };
        let with_sub = load("sub_agents = [\"w\"]\n[agents.w]\nprompt = \"q\"\n");
        assert_eq!(
            with_request_tools(&with_sub, "a", &req(&["w"]), &none).unwrap_err(),
            RequestToolsError::Duplicate("w".into())
        );
        let viewed = load("scope = \"/team/a\"\n[scopes.\"/team\"]\ntools = []\n");
        assert!(matches!(
            with_request_tools(&viewed, "a", &req(&["x"]), &none).unwrap_err(),
            RequestToolsError::Hidden { .. }
        ));
    }
}
