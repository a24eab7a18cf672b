//! `explain`: why a requirement resolved the way it did, what a scope
//! sees, and each agent's budget — as the engine's reports, of a loaded
//! workspace (`workspace::load_file`) or a served generation.

use crate::engine::diag::did_you_mean;
use crate::engine::explain::{RequirementReport, ScopeReport, explain_requirement, explain_scope};
use crate::engine::model::{AgentDecl, Composition, ScopePath};
use crate::engine::resolve::Plan;
use crate::engine::tree::ScopeTree;

use super::error::{AppError, Problem};
use super::workspace::Workspace;

/// A resolved composition to explain: a loaded workspace, or a served
/// generation.
pub struct View<'a> {
    /// The composition.
    pub composition: &'a Composition,
    /// Its scope tree.
    pub tree: &'a ScopeTree,
    /// Its resolution plan.
    pub plan: &'a Plan,
    /// How it is named in messages.
    pub display: &'a str,
}

impl<'a> View<'a> {
    /// The view of a loaded workspace.
    pub fn of(ws: &'a Workspace) -> Self {
        Self {
            composition: &ws.composition,
            tree: &ws.tree,
            plan: &ws.plan,
            display: &ws.display,
        }
    }
}

/// Every candidate for `consumer`'s requirement of `capability` in a
/// resolved composition; `scope`, when given, must be the consumer's.
pub fn requirement_in(
    ws: &View<'_>,
    consumer: &str,
    capability: &str,
    scope: Option<&str>,
) -> Result<RequirementReport, AppError> {
    let Some(report) = explain_requirement(ws.composition, ws.tree, ws.plan, consumer, capability)
    else {
        return Err(no_requirement(ws, consumer, capability));
    };
    if let Some(scope) = scope
        && report.resolution.scope.as_str() != scope
    {
        return Err(AppError::input(format!(
            "`{consumer}` is declared in scope `{}`, not `{scope}`",
            report.resolution.scope
        )));
    }
    Ok(report)
}

/// Why `consumer` holds no requirement of `capability`.
fn no_requirement(ws: &View<'_>, consumer: &str, capability: &str) -> AppError {
    let held = ws.plan.resolutions_of(consumer);
    let absent = ws
        .composition
        .disabled
        .keys()
        .map(|id| (id.as_str(), "disabled (`enabled = false`)"))
        .chain(
            ws.composition
                .skipped
                .keys()
                .map(|id| (id.as_str(), "skipped (its `enabled_if` does not hold)")),
        )
        .find(|(id, _)| *id == consumer);
    let problem = if let Some((_, why)) = absent {
        Problem::input(format!(
            "`{consumer}` is {why} in `{}`, so it holds no requirement",
            ws.display
        ))
    } else if held.is_empty() {
        let consumers: Vec<&str> = ws
            .plan
            .resolutions
            .iter()
            .map(|x| x.consumer.name())
            .collect();
        let problem = Problem::input(format!(
            "`{consumer}` holds no requirement in `{}`",
            ws.display
        ));
        match did_you_mean(consumer, consumers.iter().copied()) {
            Some(s) => problem.with_help(format!("did you mean `{s}`?")),
            None => problem,
        }
    } else {
        let caps: Vec<String> = held
            .iter()
            .map(|x| format!("`{}`", x.requirement.capability))
            .collect();
        Problem::input(format!("`{consumer}` does not require `{capability}`"))
            .with_help(format!("it requires {}", caps.join(", ")))
    };
    problem.into()
}

/// What the scope `path` of a resolved composition sees.
pub fn scope_in(ws: &View<'_>, path: &str) -> Result<ScopeReport, AppError> {
    let parsed = ScopePath::new(path).map_err(|e| AppError::input(e.to_string()))?;
    explain_scope(ws.composition, ws.tree, ws.plan, &parsed).ok_or_else(|| {
        let paths: Vec<&str> = ws
            .composition
            .scopes
            .keys()
            .map(ScopePath::as_str)
            .collect();
        let problem = Problem::input(format!("no scope `{path}` in `{}`", ws.display));
        match did_you_mean(path, paths.iter().copied()) {
            Some(s) => problem.with_help(format!("did you mean `{s}`?")).into(),
            None => problem.into(),
        }
    })
}

/// The agents of a resolved composition whose budgets to explain: all,
/// or the one named (unusable input when there is none such).
pub fn budgets_in(ws: &View<'_>, agent: Option<&str>) -> Result<Vec<AgentDecl>, AppError> {
    let agents: Vec<AgentDecl> = ws
        .composition
        .agents
        .values()
        .filter(|a| agent.is_none_or(|n| n == a.name))
        .cloned()
        .collect();
    match agent {
        Some(name) if agents.is_empty() => {
            let names: Vec<&str> = ws.composition.agents.keys().map(String::as_str).collect();
            let problem = Problem::input(format!(
                "`{}` declares no agent `{name}`; agents: {}",
                ws.display,
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ));
            Err(match did_you_mean(name, names.iter().copied()) {
                Some(s) => problem.with_help(format!("did you mean `{s}`?")).into(),
                None => problem.into(),
            })
        }
        _ => Ok(agents),
    }
}
