//! A run's own candidate generation when its request brings tools.
//!
//! Why it exists: the runtime half of [`crate::engine::request_tools`]. A
//! request's tools (the Oracle runtime's `getRequestTools`) never join a
//! published generation: the run gets a candidate derived from the one it
//! leased — the same instances, providers and hooks (kept alive by that
//! lease), plus the request's tools — with its own snapshot and digests.
//! The candidate is never current and nothing else sees it; it ends with
//! the run. It is not leased itself: the lease on the base generation keeps
//! the instances alive, so hold that lease for as long as the candidate.

use std::sync::Arc;

use super::generation::Generation;
use super::tool::ToolRegistration;
use crate::engine::model::{ConfigValue, EntryId, ToolDecl, ToolName};
use crate::engine::request_tools::{
    ENTRY_ID, RequestToolsDecl, RequestToolsError, with_request_tools,
};
use crate::engine::resolve::resolve_with_tree;
use crate::engine::snapshot::{SnapshotContext, build_snapshot_digested};
use crate::engine::tree::ScopeTree;

/// The contract of a registered tool, as a declaration.
fn decl_of(r: &ToolRegistration) -> Result<ToolDecl, RequestToolsError> {
    Ok(ToolDecl {
        name: ToolName::new(r.tool.name())
            .map_err(|_| RequestToolsError::InvalidName(r.tool.name().to_owned()))?,
        description: r.tool.description().to_owned(),
        args_schema: r.tool.args_schema().cloned(),
        result: None,
        guide: None,
        origin: None,
        policy: None,
    })
}

/// Tools a request brings, and what identifies them.
#[derive(Clone, Debug)]
pub struct RequestTools {
    /// The tools, with their policies (`[policy.tools.NAME]` of the
    /// composition still overrides them).
    pub tools: Vec<ToolRegistration>,
    /// What identifies their behaviour (argv, environment names, …): it
    /// enters `config_hash`, so it belongs in the digest the run is stamped
    /// with.
    pub config: ConfigValue,
}

impl Default for RequestTools {
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            config: ConfigValue::empty_table(),
        }
    }
}

impl RequestTools {
    /// Whether the request brings no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// What the snapshot sees of them.
    pub fn decl(&self) -> Result<RequestToolsDecl, RequestToolsError> {
        let decls = self
            .tools
            .iter()
            .map(|r| Ok((decl_of(r)?, &r.policy)))
            .collect::<Result<Vec<_>, RequestToolsError>>()?;
        Ok(RequestToolsDecl::new(decls, self.config.clone()))
    }
}

/// The candidate generation of one run of `agent` on `base` with the
/// request's tools (see the module docs).
pub fn candidate_for_request(
    base: &Arc<Generation>,
    agent: &str,
    request: RequestTools,
) -> Result<Arc<Generation>, RequestToolsError> {
    let decl = request.decl()?;
    let composition = with_request_tools(&base.composition, agent, &decl, &|n| {
        base.tools.contains_key(n)
    })?;
    let mut tools = request.tools;
    tools.sort_by(|a, b| a.tool.name().cmp(b.tool.name()));
    let tree = ScopeTree::new(&composition);
    let plan = resolve_with_tree(&composition, &tree);
    let mut mounts = base.mounts.clone();
    mounts.insert(EntryId::new(ENTRY_ID).expect("a valid entry id"), 1);
    let ctx = SnapshotContext {
        generation: base.id.clone(),
        mounts: mounts.clone(),
        ..SnapshotContext::default()
    };
    let (snapshot, digests) = build_snapshot_digested(&composition, &tree, &plan, &ctx)
        .map_err(|e| RequestToolsError::Snapshot(e.to_string()))?;
    let mut all = base.tools.clone();
    for (n, r) in tools.into_iter().enumerate() {
        let name = r.tool.name().to_owned();
        // The composition's `[policy.tools.<name>]` replaces the policy the
        // request gave, as for any registered tool.
        let policy = composition
            .policy
            .as_ref()
            .and_then(|p| p.tools.get(&name))
            .cloned()
            .unwrap_or(r.policy);
        all.insert(
            name,
            ToolRegistration {
                id: format!("tool_{ENTRY_ID}_{}", n + 1),
                owner: ENTRY_ID.to_owned(),
                tool: r.tool,
                policy,
            },
        );
    }
    let candidate = Generation::new(
        base.id.clone(),
        Arc::new(composition),
        Arc::new(tree),
        Arc::new(plan),
        base.instances.clone(),
        base.capabilities.clone(),
        all,
        base.hooks.clone(),
        snapshot,
        digests,
    )
    .with_mounts(mounts);
    candidate.set_state(super::generation::GenerationState::Active);
    Ok(Arc::new(candidate))
}
