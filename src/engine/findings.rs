//! Resolution findings as diagnostics that point back into the composition:
//! unresolved hard requirements, cycles, and preferences that chose nothing.

use super::diag::{Code, Diagnostic};
use super::model::{Composition, EntryId};
use super::resolve::{Consumer, Plan, PreferenceFinding, PreferenceLevel, Status};
use super::span::Origin;
use super::system::{Governing, SystemCapability, SystemFailure, governing};
use super::tree::ScopeTree;

/// How many candidates one finding names. N consumers ambiguous among the
/// same N providers would otherwise be N findings naming N each (`check`
/// printed 320 MB for N = 1,000); past this, a finding names the first
/// ones and counts the rest, and `chassis explain requirement` lists them
/// all.
pub const LISTED_CANDIDATES: usize = 10;

/// The first [`LISTED_CANDIDATES`] of `all`, and how many are left out.
pub fn listed(all: &[EntryId]) -> (&[EntryId], usize) {
    let shown = all.get(..LISTED_CANDIDATES).unwrap_or(all);
    (shown, all.len() - shown.len())
}

/// `all` as backquoted names, the first [`LISTED_CANDIDATES`], then how
/// many more there are and the command listing them (`explain`, the
/// consumer and the capability).
fn listed_names(all: &[EntryId], explain: (&str, &str)) -> String {
    let (shown, more) = listed(all);
    let mut names: Vec<String> = shown.iter().map(|e| format!("`{e}`")).collect();
    if more > 0 {
        names.push(format!(
            "… and {more} more; `chassis explain requirement {} {} FILE` lists them all",
            explain.0, explain.1
        ));
    }
    names.join(", ")
}

fn entry_origin(composition: &Composition, id: &EntryId) -> Option<Origin> {
    composition.entries.get(id).and_then(|e| e.origin)
}

fn status_text(status: Status) -> &'static str {
    match status {
        Status::Resolved => "resolved",
        Status::Ambiguous => "is ambiguous",
        Status::VersionMismatch => "has no provider with an accepted version",
        Status::ProviderPending => "has a provider that cannot activate",
        Status::NotVisible => "has no provider visible from this scope",
        Status::SelfReference => "is provided only by the consumer itself",
        Status::NoProvider => "has no provider",
    }
}

/// Diagnostics for everything `check` reports about a plan, in a
/// deterministic order: requirements (by consumer, capability), cycles,
/// preferences.
pub fn plan_diagnostics(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for r in &plan.resolutions {
        if r.status == Status::Resolved {
            continue;
        }
        let consumer_is_entry = matches!(r.consumer, Consumer::Entry(_));
        // A consumer pending only because of a cycle is reported by the cycle.
        if let Consumer::Entry(id) = &r.consumer {
            let in_cycle = plan.cycles.iter().any(|c| c.contains(id));
            if in_cycle && r.status == Status::ProviderPending {
                continue;
            }
        }
        let (code, severe) = if !consumer_is_entry {
            (Code::ScopeRequirementUnresolved, false)
        } else if r.requirement.optional {
            (Code::OptionalUnresolved, false)
        } else if r.status == Status::Ambiguous {
            (Code::Ambiguous, true)
        } else {
            (Code::Unresolved, true)
        };
        let message = format!(
            "`{}` requires `{}`, which {}",
            r.consumer.name(),
            r.requirement.render(),
            status_text(r.status)
        );
        let mut d = if severe {
            Diagnostic::error(code, message)
        } else {
            Diagnostic::warning(code, message)
        };
        d = d.at(r.requirement.origin, r.status.as_str());
        if let Consumer::Entry(id) = &r.consumer
            && r.requirement.origin.is_none()
        {
            d = d.at(entry_origin(composition, id), r.status.as_str());
        }
        if r.status == Status::Ambiguous {
            let (shown, _) = listed(&r.ambiguous_between);
            let names = listed_names(
                &r.ambiguous_between,
                (r.consumer.name(), r.requirement.capability.as_str()),
            );
            for id in shown {
                d = d.also(entry_origin(composition, id), "candidate");
            }
            let first = r
                .ambiguous_between
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            // The snippet on a line of its own, so it is never wrapped.
            d = d
                .with_help(format!(
                    "several providers qualify ({names}); choose one with a preference on the consumer, its scope, or `[prefer]`:",
                ))
                .with_help(format!(
                    "prefer = {{ {} = {} }}",
                    super::leaf_diff::toml_key(r.requirement.capability.as_str()),
                    super::leaf_diff::toml_string(&first)
                ));
        } else {
            d = d.with_help(format!(
                "run `chassis explain requirement {} {} FILE` to see every candidate",
                r.consumer.name(),
                r.requirement.capability
            ));
        }
        out.push(d);
    }
    for ((cycle, text), members) in plan
        .cycle_paths
        .iter()
        .zip(plan.cycle_texts())
        .zip(&plan.cycles)
    {
        let mut message = format!("dependency cycle (provider -> consumer): {text}");
        if members.len() > cycle.len() {
            let names: Vec<String> = members.iter().map(|m| format!("`{m}`")).collect();
            message.push_str(&format!("; its component holds {}", names.join(", ")));
        }
        let mut d = Diagnostic::error(Code::Cycle, message);
        for (i, id) in members.iter().enumerate() {
            d = if i == 0 {
                d.at(entry_origin(composition, id), "in this cycle")
            } else {
                d.also(entry_origin(composition, id), "in this cycle")
            };
        }
        out.push(d.with_help("break the cycle by making one of these requirements optional or providing the capability elsewhere"));
    }
    for f in &plan.preference_findings {
        out.push(preference_diagnostic(composition, f));
    }
    out.extend(unknown_tool_policies(composition));
    out.extend(refusal_diagnostics(composition, plan));
    out.extend(system_diagnostics(composition, tree, plan));
    out
}

/// What the default policy (fail closed) will do with the active tools,
/// found before anything runs (warnings): a tool that declares no
/// permission and is not read-only needs approval for every call
/// (`policy::ungoverned-tool`); a tool permission that no grant of the
/// policy where an agent runs covers is refused on every call
/// (`policy::ungranted-permission`, with the scopes). A templated permission
/// (`filesystem.delete:{/path}`) counts as granted when a grant names it or
/// its family with any resource. Scopes a `policy` provider governs are
/// decided by it at run time; `--grant` widens the default at run time.
pub fn tool_policy_findings(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
    tools: &[super::tool_listing::ListedTool],
) -> Vec<Diagnostic> {
    let origin = |t: &super::tool_listing::ListedTool| {
        EntryId::new(&t.entry)
            .ok()
            .and_then(|id| composition.entries.get(&id))
            .and_then(|e| {
                e.manifest
                    .tools
                    .iter()
                    .find(|d| d.name.as_str() == t.name)
                    .and_then(|d| d.origin)
                    .or(e.origin)
            })
    };
    let default_grants: Vec<&super::policy::Grant> = composition
        .policy
        .iter()
        .flat_map(|p| p.rules.grants.iter())
        .collect();
    // Where calls happen: each agent's scope (else the root).
    let mut run_scopes: Vec<usize> = composition
        .agents
        .values()
        .filter_map(|a| tree.find(&a.scope))
        .collect();
    if run_scopes.is_empty() {
        run_scopes.extend(tree.find(&super::model::ScopePath::root()));
    }
    let mut out = Vec::new();
    for t in tools.iter().filter(|t| t.active) {
        // A policy the plugin registers at mount (a process plugin's) is
        // not known here: no verdict on it.
        let known = t.policy_source != super::tool_listing::PolicySource::Runtime;
        if known && t.policy.is_ungoverned() {
            out.push(
                Diagnostic::warning(
                    Code::UngovernedTool,
                    format!(
                        "tool `{}` of `{}` declares no permission and is not read-only: every call needs approval",
                        t.name, t.entry
                    ),
                )
                .at(origin(t), "no permission, not read-only")
                .with_help("declare the permissions it needs (`[policy.tools.NAME] permissions = [...]`), or mark it `idempotent = true` if calling it changes nothing"),
            );
        }
        let Ok(name) = super::model::ToolName::new(&t.name) else {
            continue;
        };
        for template in &t.policy.permissions {
            let Ok(parsed) = super::policy::PermissionTemplate::parse(template) else {
                continue;
            };
            let ungranted: Vec<&str> = run_scopes
                .iter()
                .filter(|&&ix| tree.shows_tool(ix, &name))
                .filter(|&&ix| {
                    matches!(
                        super::system::governing(
                            composition,
                            tree,
                            plan,
                            ix,
                            SystemCapability::Policy
                        ),
                        Governing::Default
                    )
                })
                .filter(|_| !default_grants.iter().any(|g| g.matches_name(parsed.name())))
                .map(|&ix| tree.scopes()[ix].path.as_str())
                .collect();
            if ungranted.is_empty() {
                continue;
            }
            out.push(
                Diagnostic::warning(
                    Code::UngrantedPermission,
                    format!(
                        "tool `{}` of `{}` requires `{template}`, which no grant covers where it runs ({}): every call will be refused",
                        t.name,
                        t.entry,
                        ungranted
                            .iter()
                            .map(|s| format!("`{s}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .at(origin(t), "requires it")
                .with_help(format!(
                    "grant it in `[policy] grants` (e.g. `{}`), or for one run with `chassis run --grant {}`",
                    parsed.name(),
                    parsed.name()
                )),
            );
        }
    }
    out
}

/// What makes publication refuse a composition that resolves, found
/// without running a plugin (errors, each also in [`plan_diagnostics`]):
/// two active entries declaring tools of one name (tool names are unique in
/// a generation), and declared tools whose effective permissions their
/// plugin does not declare. `check`, `plan`, `publish` and `run` refuse
/// them alike, before anything is mounted.
pub fn refusal_diagnostics(composition: &Composition, plan: &Plan) -> Vec<Diagnostic> {
    let mut out = duplicate_tools(composition, plan);
    out.extend(undeclared_permissions(composition, plan));
    out.extend(sub_agent_cycles(composition));
    out
}

/// Agents that call each other as sub-agents in a cycle: a negative answer
/// (exit 1, as a requirement cycle), at the agent each cycle is found
/// from. An agent that lists itself is a load error of its own.
fn sub_agent_cycles(composition: &Composition) -> Vec<Diagnostic> {
    use std::collections::{BTreeMap, BTreeSet};
    let edges: BTreeMap<&str, Vec<&str>> = composition
        .agents
        .values()
        .map(|a| {
            (
                a.name.as_str(),
                a.sub_agents
                    .iter()
                    .map(String::as_str)
                    .filter(|s| *s != a.name)
                    .collect(),
            )
        })
        .collect();
    // One depth-first walk over every agent (each visited once, each edge
    // followed once): an edge back to an agent still on the walk's path
    // closes a cycle. Enumerating every path instead was exponential in a
    // densely linked set of agents.
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut reported: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for root in edges.keys().copied() {
        if done.contains(root) {
            continue;
        }
        // The path from `root`, each agent with the next edge to follow,
        // and where each agent on it stands.
        let mut path: Vec<(&str, usize)> = vec![(root, 0)];
        let mut on_path: BTreeMap<&str, usize> = BTreeMap::from([(root, 0)]);
        while let Some((at, next_edge)) = path.last_mut() {
            let at = *at;
            let Some(&next) = edges.get(at).and_then(|e| e.get(*next_edge)) else {
                on_path.remove(at);
                done.insert(at);
                path.pop();
                continue;
            };
            *next_edge += 1;
            if let Some(&from) = on_path.get(next) {
                if reported.insert(next) {
                    let mut cycle: Vec<&str> = path[from..].iter().map(|(a, _)| *a).collect();
                    cycle.push(next);
                    reported.extend(cycle.iter().copied());
                    let origin = composition.agents.get(next).and_then(|a| a.origin);
                    out.push(
                        Diagnostic::error(
                            Code::Cycle,
                            format!(
                                "sub-agents call each other in a cycle: {}",
                                cycle.join(" -> ")
                            ),
                        )
                        .at(origin, "agent")
                        .with_help("remove one of these agents from the other's `sub_agents`"),
                    );
                }
            } else if edges.contains_key(next) && !done.contains(next) {
                on_path.insert(next, path.len());
                path.push((next, 0));
            }
        }
    }
    out
}

/// Tools of one name declared by several active entries.
fn duplicate_tools(composition: &Composition, plan: &Plan) -> Vec<Diagnostic> {
    let mut owners: std::collections::BTreeMap<&str, Vec<(&EntryId, Option<Origin>)>> =
        std::collections::BTreeMap::new();
    for id in &plan.activation_order {
        let Some(entry) = composition.entries.get(id) else {
            continue;
        };
        for tool in &entry.manifest.tools {
            owners
                .entry(tool.name.as_str())
                .or_default()
                .push((id, tool.origin.or(entry.origin)));
        }
    }
    let mut out = Vec::new();
    for (name, owners) in owners.into_iter().filter(|(_, o)| o.len() > 1) {
        let ids: Vec<String> = owners.iter().map(|(id, _)| format!("`{id}`")).collect();
        let mut d = Diagnostic::error(
            Code::ToolNameTaken,
            format!(
                "tool `{name}` is declared by several active entries: {}",
                ids.join(", ")
            ),
        );
        for (i, (id, origin)) in owners.iter().enumerate() {
            let label = format!("`{name}` of `{id}`");
            d = if i == 0 {
                d.at(*origin, label)
            } else {
                d.also(*origin, label)
            };
        }
        out.push(d.with_help(
            "tool names are unique in a generation: rename one (an `mcp` entry can add a `prefix`), or disable one of the entries",
        ));
    }
    out
}

/// Scopes whose `policy` or `secrets` fails closed (warnings: every
/// permission there is denied, every secret lookup fails), one per distinct
/// failure with the scopes it affects; and `policy` / `secrets` preferences
/// that name an entry not providing the capability (such a preference can
/// never choose, so the scope it was meant for stays ambiguous).
pub fn system_diagnostics(
    composition: &Composition,
    tree: &ScopeTree,
    plan: &Plan,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let scope_prefs = composition
        .scopes
        .iter()
        .flat_map(|(path, s)| s.prefer.iter().map(move |(c, r)| (Some(path), c, r)));
    let global_prefs = composition
        .preferences
        .global
        .iter()
        .map(|(c, r)| (None, c, r));
    for (holder, cap, preferred) in scope_prefs.chain(global_prefs) {
        if !SystemCapability::is_system(cap.as_str()) {
            continue;
        }
        let Some(entry) = composition.entries.get(&preferred.value) else {
            continue; // unknown or disabled entries are reported elsewhere
        };
        if entry.manifest.provides.contains_key(cap) {
            continue;
        }
        let at = holder.map_or_else(|| "[prefer]".to_owned(), |p| format!("scope `{p}`"));
        out.push(
            Diagnostic::warning(
                Code::SystemPreferenceNotProvider,
                format!(
                    "{at} prefers `{}` for `{cap}`, which it does not provide",
                    preferred.value
                ),
            )
            .at(preferred.origin, "does not provide it")
            .with_help(format!(
                "name an entry that provides `{cap}@{}`",
                SystemCapability::CONTRACT
            )),
        );
    }
    if !crate::engine::system::any_provider(composition) {
        return out;
    }
    for system in SystemCapability::ALL {
        // failure text → (the failure, the scopes it affects), in first-seen
        // (pre-order) order.
        let mut failures: Vec<(String, SystemFailure, Vec<&str>)> = Vec::new();
        for (ix, scope) in tree.scopes().iter().enumerate() {
            let Governing::FailClosed(failure) = governing(composition, tree, plan, ix, system)
            else {
                continue;
            };
            let text = failure.to_string();
            match failures.iter_mut().find(|(t, _, _)| *t == text) {
                Some((_, _, scopes)) => scopes.push(scope.path.as_str()),
                None => failures.push((text, failure, vec![scope.path.as_str()])),
            }
        }
        for (text, failure, scopes) in failures {
            let shown = match scopes.as_slice() {
                [one] => format!("scope `{one}`"),
                [first, rest @ ..] => format!(
                    "scope `{first}` and {} more ({})",
                    rest.len(),
                    rest.iter()
                        .take(5)
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                        + if rest.len() > 5 { ", …" } else { "" }
                ),
                [] => continue,
            };
            let mut d = Diagnostic::warning(
                Code::SystemFailClosed,
                format!("`{}` fails closed in {shown}: {text}", system.name()),
            );
            let involved: &[EntryId] = match &failure {
                SystemFailure::Ambiguous { candidates } => candidates,
                SystemFailure::ContractMismatch { providers }
                | SystemFailure::Hidden { providers } => providers,
                SystemFailure::Pending { entry } => std::slice::from_ref(entry),
            };
            for (i, id) in involved.iter().enumerate() {
                d = if i == 0 {
                    d.at(entry_origin(composition, id), "provider")
                } else {
                    d.also(entry_origin(composition, id), "provider")
                };
            }
            let effect = match system {
                SystemCapability::Policy => "every permission is denied there",
                SystemCapability::Secrets => "every secret lookup fails there",
            };
            out.push(d.with_help(format!(
                "{effect}; run `chassis explain scope {} FILE` to see why",
                scopes[0]
            )));
        }
    }
    out
}

/// `[policy.tools]` overrides that name no declared tool (warnings: tools of
/// other kinds appear only at run time).
fn unknown_tool_policies(composition: &Composition) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(policy) = &composition.policy else {
        return out;
    };
    for name in policy.tools.keys() {
        let offered = composition
            .entries
            .values()
            .any(|e| e.manifest.tools.iter().any(|t| t.name.as_str() == name));
        if !offered {
            out.push(
                Diagnostic::warning(
                    Code::UnknownTool,
                    format!("`[policy.tools.{name}]` names a tool no declared plugin offers"),
                )
                .at(policy.tool_origin(name), "policy declared here")
                .with_help(
                    "tools registered by other plugin kinds are checked when they are published",
                ),
            );
        }
    }
    out
}

/// Declared tools of active entries whose `[policy.tools]` permissions
/// their plugin does not declare.
fn undeclared_permissions(composition: &Composition, plan: &Plan) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(policy) = &composition.policy else {
        return out;
    };
    for id in &plan.activation_order {
        let Some(entry) = composition.entries.get(id) else {
            continue;
        };
        for tool in &entry.manifest.tools {
            let Some(p) = policy.tools.get(tool.name.as_str()) else {
                continue;
            };
            if let Err(problems) =
                super::policy::check_declared(&p.permissions, &entry.manifest.permissions)
            {
                let mut d = Diagnostic::error(
                    Code::UndeclaredPermission,
                    format!(
                        "tool `{}` of `{id}` would require permissions its plugin does not declare",
                        tool.name
                    ),
                )
                .at(tool.origin, "tool declared here")
                .also(
                    policy.tool_origin(tool.name.as_str()),
                    "policy declared here",
                );
                for problem in problems {
                    d = d.with_help(problem);
                }
                out.push(d.with_help(format!(
                    "add them to `permissions` of the plugin `{}`",
                    entry.plugin.value
                )));
            }
        }
    }
    out
}

fn preference_origin(
    composition: &Composition,
    level: PreferenceLevel,
    holder: &Option<String>,
    capability: &super::model::CapabilityName,
) -> Option<Origin> {
    match level {
        PreferenceLevel::Consumer => holder
            .as_ref()
            .and_then(|h| EntryId::new(h).ok())
            .and_then(|id| composition.entries.get(&id))
            .and_then(|e| e.prefer.get(capability))
            .and_then(|r| r.origin),
        PreferenceLevel::Scope => holder
            .as_ref()
            .and_then(|h| super::model::ScopePath::new(h).ok())
            .and_then(|p| composition.scopes.get(&p))
            .and_then(|s| s.prefer.get(capability))
            .and_then(|r| r.origin),
        PreferenceLevel::Global => composition
            .preferences
            .global
            .get(capability)
            .and_then(|r| r.origin),
    }
}

fn holder_text(level: PreferenceLevel, holder: &Option<String>) -> String {
    match (level, holder) {
        (PreferenceLevel::Consumer, Some(h)) => format!("entry `{h}`"),
        (PreferenceLevel::Scope, Some(h)) => format!("scope `{h}`"),
        _ => "`[prefer]`".to_owned(),
    }
}

fn preference_diagnostic(composition: &Composition, f: &PreferenceFinding) -> Diagnostic {
    match f {
        PreferenceFinding::NotCandidate {
            level,
            holder,
            capability,
            preferred,
            consumer,
            candidates,
        } => {
            let names = listed_names(candidates, (consumer.name(), capability.as_str()));
            // An entry `enabled_if` left out is no candidate for that reason.
            let skipped = composition
                .skipped
                .iter()
                .find(|(id, _)| id.as_str() == preferred.as_str())
                .map(|(_, s)| s);
            let d = Diagnostic::warning(
                Code::PreferenceNotCandidate,
                format!(
                    "the preference of {} for `{capability}` names `{preferred}`, which is not a candidate of `{}`",
                    holder_text(*level, holder),
                    consumer.name()
                ),
            )
            .at(preference_origin(composition, *level, holder, capability), "not a candidate");
            let d = match skipped {
                Some(s) => d.with_help(format!(
                    "`{preferred}` is skipped: its `enabled_if` ({}) does not hold ({} not set)",
                    s.condition.describe(),
                    s.unset.join(", ")
                )),
                None => d,
            };
            d.with_help(format!("candidates there: {names}"))
        }
        PreferenceFinding::Unused {
            level,
            holder,
            capability,
            preferred,
        } => Diagnostic::warning(
            Code::PreferenceUnused,
            format!(
                "the preference of {} for `{capability}` (`{preferred}`) applies to no requirement",
                holder_text(*level, holder)
            ),
        )
        .at(
            preference_origin(composition, *level, holder, capability),
            "unused",
        )
        .with_help(format!(
            "nothing there requires `{capability}`; remove the preference"
        )),
        PreferenceFinding::Disabled {
            level,
            holder,
            capability,
            preferred,
        } => Diagnostic::warning(
            Code::PreferenceDisabled,
            format!(
                "the preference of {} for `{capability}` names the disabled entry `{preferred}`",
                holder_text(*level, holder)
            ),
        )
        .at(
            preference_origin(composition, *level, holder, capability),
            "disabled entry",
        ),
    }
}
