//! A run's own candidate generation when its request brings tools.
//!
//! Why it exists: the runtime half of [`crate::engine::request_tools`]. A
//! request's tools (the Oracle runtime's `getRequestTools`) never join a
//! published generation: the run gets a candidate derived from the one it
//! leased — the same instances, providers and hooks (kept alive by that
//! lease), plus the request's tools — with its own snapshot and digests.
//! The candidate is never current and nothing else sees it; it ends with
//! the run.

use std::sync::Arc;

use super::generation::Generation;
use super::tool::ToolRegistration;
use crate::engine::model::{EntryId, ToolDecl, ToolName};
use crate::engine::request_tools::{ENTRY_ID, RequestToolsError, with_request_tools};
use crate::engine::resolve::resolve_with_tree;
use crate::engine::snapshot::{SnapshotContext, build_snapshot};
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
    })
}

/// The candidate generation of one run of `agent` on `base` with the
/// request's `tools` (see the module docs).
pub fn candidate_for_request(
    base: &Arc<Generation>,
    agent: &str,
    tools: Vec<ToolRegistration>,
) -> Result<Arc<Generation>, RequestToolsError> {
    let decls = tools.iter().map(decl_of).collect::<Result<Vec<_>, _>>()?;
    let composition = with_request_tools(&base.composition, agent, &decls, &|n| {
        base.tools.contains_key(n)
    })?;
    let tree = ScopeTree::new(&composition);
    let plan = resolve_with_tree(&composition, &tree);
    let mut mounts = base.mounts.clone();
    mounts.insert(EntryId::new(ENTRY_ID).expect("a valid entry id"), 1);
    let ctx = SnapshotContext {
        generation: base.id.clone(),
        mounts: mounts.clone(),
        ..SnapshotContext::default()
    };
    let snapshot = build_snapshot(&composition, &tree, &plan, &ctx)
        .map_err(|e| RequestToolsError::Snapshot(e.to_string()))?;
    let digests = snapshot
        .digests()
        .map_err(|e| RequestToolsError::Snapshot(e.to_string()))?;
    let mut all = base.tools.clone();
    for (n, r) in tools.into_iter().enumerate() {
        let name = r.tool.name().to_owned();
        all.insert(
            name,
            ToolRegistration {
                id: format!("tool_{ENTRY_ID}_{}", n + 1),
                owner: ENTRY_ID.to_owned(),
                ..r
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
