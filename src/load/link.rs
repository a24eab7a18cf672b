//! Cross-file checks: duplicate definitions and references between tables.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::agent::WalkedAgent;
use super::builtin::BuiltinOutcome;
use super::includes::Walked;
use super::walk::{Def, EntryDecl};
use crate::engine::diag::{Code, Diagnostic, did_you_mean};
use crate::engine::model::{Composition, Entry, EntryRef, Manifest};
use crate::engine::span::Origin;
use crate::engine::tree::FxHashMap;

/// Keep the first definition of every name, reporting the others. Without
/// duplicates (the usual case) the vector is returned as it came: at
/// 100,000 plugins a copy of it is tens of megabytes. `kind` is what one is
/// (`plugin`, `global preference`), `named` what comes before its name in a
/// sentence (`plugin`, `global preference for`).
fn first_defs<T>(
    defs: Vec<Def<T>>,
    (kind, named): (&str, &str),
    diags: &mut Vec<Diagnostic>,
) -> Vec<Def<T>> {
    use std::collections::hash_map::Entry as Slot;
    // Only looked up, never iterated: the reports follow `defs`' order.
    let mut seen: FxHashMap<&str, Origin> =
        FxHashMap::with_capacity_and_hasher(defs.len(), Default::default());
    let mut again = vec![false; defs.len()];
    for (i, def) in defs.iter().enumerate() {
        match seen.entry(def.name.as_str()) {
            Slot::Occupied(first) => {
                diags.push(
                    Diagnostic::error(
                        Code::DuplicateId,
                        format!("{named} `{}` is defined twice", def.name),
                    )
                    .at(Some(def.origin), "defined again here")
                    .also(Some(*first.get()), "first defined here")
                    .with_help(format!(
                        "each {kind} may be defined once across the composition and its includes"
                    )),
                );
                again[i] = true;
            }
            Slot::Vacant(slot) => {
                slot.insert(def.origin);
            }
        }
    }
    drop(seen);
    if !again.contains(&true) {
        return defs;
    }
    defs.into_iter()
        .zip(again)
        .filter_map(|(def, again)| (!again).then_some(def))
        .collect()
}

/// Append `more` to `all`, taking it whole when `all` is empty (one file's
/// definitions, most of the time, move instead of being copied).
fn gather<T>(all: &mut Vec<T>, more: Vec<T>) {
    if all.is_empty() {
        *all = more;
    } else {
        all.extend(more);
    }
}

/// Compile every tool's argument schema once (each distinct schema once):
/// one that does not compile is an error where the tool is declared (an
/// `mcp` tool's schema comes from `chassis.lock`), a format that is not
/// checked a warning.
fn check_tool_schemas(comp: &Composition, diags: &mut Vec<Diagnostic>) {
    // Keyed by the schema itself (JSON values hash): rendering each one to
    // text to compare was a tenth of linking 100,000 `command` entries.
    let mut seen: FxHashMap<&serde_json::Value, ()> = FxHashMap::default();
    for (id, entry) in &comp.entries {
        let from_lock =
            entry.manifest.kind.as_deref() == Some(crate::engine::builtin::mcp::KIND.name);
        for tool in &entry.manifest.tools {
            let Some(schema) = &tool.args_schema else {
                continue;
            };
            if seen.insert(schema, ()).is_some() {
                continue;
            }
            let origin = tool.origin.or(entry.origin);
            let whose = if from_lock {
                format!("tool `{}` of `{id}` (pinned in `chassis.lock`)", tool.name)
            } else {
                format!("tool `{}` of `{id}`", tool.name)
            };
            match crate::engine::args_schema::compile(schema) {
                Err(e) => diags.push(
                    Diagnostic::error(
                        Code::BadSchema,
                        format!("the argument schema of {whose} does not compile: {e}"),
                    )
                    .at(origin, "declared here")
                    .with_help("fix the schema (JSON Schema 2020-12 or draft 7; `$ref` only within the schema)"),
                ),
                Ok(compiled) => {
                    for w in compiled.warnings {
                        diags.push(
                            Diagnostic::warning(
                                Code::UnknownFormat,
                                format!("the argument schema of {whose}: {w}"),
                            )
                            .at(origin, "declared here"),
                        );
                    }
                }
            }
        }
    }
}

fn did_you_mean_help<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    did_you_mean(input, candidates).map(|s| format!("did you mean `{s}`?"))
}

/// Build the composition from every walked file. With `check_refs` false
/// (some file did not parse, or an include was not read), references are
/// not checked: what they name may be in the part that is missing.
pub(crate) fn link(
    files: Vec<Walked>,
    diags: &mut Vec<Diagnostic>,
    check_refs: bool,
    lock: Option<&crate::lock::Lock>,
) -> Composition {
    let (mut plugins, mut entries, mut scopes, mut prefer) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut policy = Vec::new();
    let mut agents = Vec::new();
    let mut host = crate::engine::model::HostSettings::default();
    for file in files {
        if !file.out.host.is_empty() {
            host = file.out.host;
        }
        gather(&mut agents, file.out.agents);
        gather(&mut plugins, file.out.plugins);
        gather(&mut entries, file.out.entries);
        gather(&mut scopes, file.out.scopes);
        gather(&mut prefer, file.out.prefer);
        gather(&mut policy, file.out.policy);
    }
    let policy = first_defs(policy, ("table", "table"), diags);
    let plugins = first_defs(plugins, ("plugin", "plugin"), diags);
    let mut entries = first_defs(entries, ("entry", "entry"), diags);
    let scopes = first_defs(scopes, ("scope", "scope"), diags);
    let prefer = first_defs(
        prefer,
        ("global preference", "the global preference for"),
        diags,
    );
    let agents = first_defs(agents, ("agent", "agent"), diags);

    let catalog: BTreeMap<String, Option<Arc<Manifest>>> = plugins
        .into_iter()
        .map(|d| (d.name, d.value.map(Arc::new)))
        .collect();
    let entry_ids: BTreeSet<String> = entries.iter().map(|d| d.name.clone()).collect();

    let mut comp = Composition::new();
    comp.host = host;
    comp.policy = policy.into_iter().next().and_then(|d| d.value);
    for def in &scopes {
        if let (Some(_), decl, _) = &def.value {
            comp.insert_scope(decl.clone());
        }
    }
    let walked_agents: Vec<&WalkedAgent> = agents.iter().filter_map(|d| d.value.as_ref()).collect();
    place_agents(&walked_agents, &mut comp, diags);
    let mut refs: Vec<&EntryRef> = Vec::new();
    for a in &walked_agents {
        refs.extend(a.decl.prefer_model.as_ref());
    }
    for def in &scopes {
        refs.extend(def.value.1.prefer.values());
    }
    for def in &prefer {
        if let Some((cap, r)) = &def.value {
            refs.push(r);
            comp.preferences.global.insert(cap.clone(), r.clone());
        }
    }
    // Entries are moved into the composition (their configurations are
    // most of a large composition's memory): their preferences are checked
    // here, before they move.
    for def in &mut entries {
        if check_refs {
            for r in def.value.prefer.values() {
                unknown_entry(r, &entry_ids, diags);
            }
        }
        if let (Some(id), Some(c)) = (&def.value.id, &def.value.enabled_if) {
            comp.conditions.insert(id.clone(), c.clone());
        }
        if let (Some(id), true) = (&def.value.id, def.value.skip_on_failure) {
            comp.skip_on_failure.insert(id.clone());
        }
        let (name, origin) = (def.name.as_str(), def.origin);
        if let Some(entry) = entry(
            &mut def.value,
            name,
            origin,
            &catalog,
            &mut comp,
            diags,
            check_refs,
        ) {
            comp.entries.insert(entry.id.clone(), entry);
        }
    }
    super::lock_pins::apply(&mut comp, lock, diags);
    // The agents process plugins define, as `chassis.lock` pins them: placed
    // like the TOML's, after them, and checked with them.
    let (plugin_agents, withheld) = super::lock_pins::plugin_agents(&comp, &walked_agents, diags);
    let plugin_refs: Vec<&WalkedAgent> = plugin_agents.iter().collect();
    place_agents(&plugin_refs, &mut comp, diags);
    let walked_agents: Vec<&WalkedAgent> = walked_agents.into_iter().chain(plugin_refs).collect();
    check_tool_schemas(&comp, diags);
    if check_refs {
        check_agent_refs(&walked_agents, &withheld, &comp, diags);
        for r in refs {
            unknown_entry(r, &entry_ids, diags);
        }
    }
    comp
}

/// Report `r` when no entry has its id.
fn unknown_entry(r: &EntryRef, entry_ids: &BTreeSet<String>, diags: &mut Vec<Diagnostic>) {
    if entry_ids.contains(r.value.as_str()) {
        return;
    }
    let d = Diagnostic::error(
        Code::UnknownEntry,
        format!("no entry has the id `{}`", r.value),
    )
    .at(r.origin, "unknown entry")
    .with_help_opt(did_you_mean_help(
        r.value.as_str(),
        entry_ids.iter().map(String::as_str),
    ));
    diags.push(d);
}

/// The entry `decl` declares (named `name`, declared at `origin`), its
/// configuration and preferences moved out of `decl`.
fn entry(
    decl: &mut EntryDecl,
    name: &str,
    origin: Origin,
    catalog: &BTreeMap<String, Option<Arc<Manifest>>>,
    comp: &mut Composition,
    diags: &mut Vec<Diagnostic>,
    check_refs: bool,
) -> Option<Entry> {
    let plugin = decl.plugin.as_ref()?;
    let builtin = match (&decl.builtin, catalog.contains_key(&plugin.value)) {
        (Some(outcome), false) => Some(outcome),
        _ => None,
    };
    let manifest = match (catalog.get(&plugin.value), builtin) {
        (Some(m), _) => m.clone(),
        (None, Some(BuiltinOutcome::Manifest(m))) => Some(Arc::clone(m)),
        (None, Some(BuiltinOutcome::Problems(problems))) => {
            diags.extend(problems.iter().cloned());
            None
        }
        // A built-in whose configuration did not parse: already reported.
        (None, None) if crate::engine::builtin::find(&plugin.value).is_some() => None,
        (None, None) => {
            if check_refs {
                let names: Vec<&str> = catalog.keys().map(String::as_str).collect();
                let builtins: Vec<&str> = crate::engine::builtin::kinds()
                    .iter()
                    .map(|k| k.name)
                    .collect();
                let list = if names.is_empty() {
                    format!(
                        "no plugins are declared; add a `[plugins.<name>]` table or use a built-in kind: {}",
                        builtins.join(", ")
                    )
                } else {
                    format!(
                        "available plugins: {}; built-in kinds: {}",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        builtins.join(", ")
                    )
                };
                let d = Diagnostic::error(
                    Code::UnknownPlugin,
                    format!(
                        "entry `{}` names the unknown plugin `{}`",
                        name, plugin.value
                    ),
                )
                .at(plugin.origin, "unknown plugin")
                .with_help_opt(did_you_mean_help(
                    &plugin.value,
                    names.iter().copied().chain(builtins.iter().copied()),
                ))
                .with_help(list);
                diags.push(d);
            }
            None
        }
    };
    let id = decl.id.clone()?;
    if !decl.enabled {
        comp.disabled.insert(id, Some(origin));
        return None;
    }
    let mut scope = decl.scope.clone()?;
    // The entry shares its scope's path (one allocation per scope path; the
    // scope tree then finds an entry's scope by address).
    if let Some((path, _)) = comp.scopes.get_key_value(&scope.value) {
        scope.value = path.clone();
    } else {
        if check_refs {
            let d = Diagnostic::error(
                Code::UnknownScope,
                format!(
                    "entry `{}` is placed in the undeclared scope `{}`",
                    name, scope.value
                ),
            )
            .at(scope.origin, "unknown scope")
            .with_help_opt(did_you_mean_help(
                scope.value.as_str(),
                comp.scopes.keys().map(|p| p.as_str()),
            ))
            .with_help(format!(
                "declare it with `[scopes.{}]`",
                toml::Value::String(scope.value.to_string())
            ));
            diags.push(d);
        }
        return None;
    }
    if decl.broken {
        return None;
    }
    Some(Entry {
        id,
        plugin: plugin.clone(),
        manifest: manifest?,
        scope,
        config: Arc::new(decl.config.take()?),
        prefer: std::mem::take(&mut decl.prefer),
        origin: Some(origin),
    })
}

/// Give each agent its scope: never a scope the user declared, never one
/// another agent owns.
fn place_agents(agents: &[&WalkedAgent], comp: &mut Composition, diags: &mut Vec<Diagnostic>) {
    let mut owners: BTreeMap<String, &WalkedAgent> = BTreeMap::new();
    for a in agents {
        let path = &a.decl.scope;
        if let Some(user) = comp.scopes.get(path).filter(|s| !s.implied) {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "agent `{}` would own the scope `{path}`, which the composition declares",
                        a.decl.name
                    ),
                )
                .at(a.scope_origin.or(a.decl.origin), "agent scope")
                .also(user.origin, "scope declared here")
                .with_help("an agent owns its scope; give it another `scope` (the default is `/agents/<name>`)"),
            );
            continue;
        }
        if let Some(first) = owners.get(path.as_str()) {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "agents `{}` and `{}` both own the scope `{path}`",
                        first.decl.name, a.decl.name
                    ),
                )
                .at(a.scope_origin.or(a.decl.origin), "second owner")
                .also(first.scope_origin.or(first.decl.origin), "first owner"),
            );
            continue;
        }
        owners.insert(path.to_string(), a);
        comp.insert_agent(a.decl.clone());
    }
}

/// Tools in an agent's view must be declared by some plugin (or be a
/// sub-agent); sub-agents must be other agents, without cycles.
/// A reference to what entries `chassis.lock` does not pin yet may offer:
/// a lock finding (a warning `--update-lock` resolves), so the file still
/// loads to write the lock.
fn unpinned_finding(what: String, unpinned: &[&str], may: &str, origin: Origin) -> Diagnostic {
    Diagnostic::warning(
        Code::UnknownTool,
        format!(
            "{what}; the entr{} {} that `chassis.lock` does not pin {may}",
            if unpinned.len() == 1 { "y" } else { "ies" },
            unpinned
                .iter()
                .map(|u| format!("`{u}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .at(Some(origin), "not known until the lock is written")
    .with_help("`chassis tools FILE --update-lock` starts them and pins what they offer")
}

/// `withheld`: agents a plugin defines that the lock finding about them
/// left out (a reference to one is covered by that finding).
fn check_agent_refs(
    agents: &[&WalkedAgent],
    withheld: &BTreeSet<String>,
    comp: &Composition,
    diags: &mut Vec<Diagnostic>,
) {
    let mut tools: BTreeSet<&str> = BTreeSet::new();
    for e in comp.entries.values() {
        tools.extend(e.manifest.tools.iter().map(|t| t.name.as_str()));
    }
    // An `mcp` entry without a lock entry has tools nobody has seen yet,
    // and so may a process plugin's entry the lock does not pin: a
    // reference to an unknown tool may be one of them, so it is a warning
    // (for `mcp`, the missing lock is already a finding), and `chassis
    // tools --update-lock` can still load the file to write the lock.
    // Process plugins may also define agents (a sub-agent one names).
    let unpinned_processes: Vec<&str> = comp
        .entries
        .iter()
        .filter(|(_, e)| {
            e.manifest
                .process
                .as_ref()
                .is_some_and(|p| p.pinned.is_none())
        })
        .map(|(id, _)| id.as_str())
        .collect();
    let mut unlocked: Vec<&str> = comp
        .entries
        .iter()
        .filter(|(_, e)| {
            e.manifest.kind.as_deref() == Some(crate::engine::builtin::mcp::KIND.name)
                && !e.manifest.metadata.contains_key("mcp.server_name")
        })
        .map(|(id, _)| id.as_str())
        .chain(unpinned_processes.iter().copied())
        .collect();
    unlocked.sort_unstable();
    let names: BTreeSet<&str> = agents.iter().map(|a| a.decl.name.as_str()).collect();
    for a in agents {
        for (tool, origin) in &a.tool_refs {
            if tools.contains(tool.as_str()) || a.decl.sub_agents.iter().any(|s| s == tool) {
                continue;
            }
            if !unlocked.is_empty() {
                diags.push(unpinned_finding(
                    format!(
                        "agent `{}` lists the tool `{tool}`, which no plugin declares",
                        a.decl.name
                    ),
                    &unlocked,
                    "may offer it",
                    *origin,
                ));
                continue;
            }
            let mut d = Diagnostic::error(
                Code::UnknownTool,
                format!(
                    "agent `{}` lists the tool `{tool}`, which no plugin declares",
                    a.decl.name
                ),
            )
            .at(Some(*origin), "unknown tool")
            .with_help_opt(did_you_mean_help(tool, tools.iter().copied()));
            if tools.is_empty() {
                d = d.with_help("no entry declares any tool");
            }
            diags.push(d);
        }
        for (sub, origin) in &a.sub_agent_refs {
            if sub == &a.decl.name {
                diags.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("agent `{sub}` lists itself as a sub-agent"),
                    )
                    .at(Some(*origin), "itself"),
                );
            } else if withheld.contains(sub) {
                // The lock finding about the definition covers it.
            } else if !names.contains(sub.as_str()) && !unpinned_processes.is_empty() {
                // A process plugin the lock does not pin yet may define
                // it: a lock finding (`--update-lock` fixes it), so the
                // file still loads to write the lock.
                diags.push(unpinned_finding(
                    format!(
                        "agent `{}` lists the sub-agent `{sub}`, which no agent declares",
                        a.decl.name
                    ),
                    &unpinned_processes,
                    "may define it",
                    *origin,
                ));
            } else if !names.contains(sub.as_str()) {
                diags.push(
                    Diagnostic::error(Code::UnknownEntry, format!("no agent is called `{sub}`"))
                        .at(Some(*origin), "unknown agent")
                        .with_help_opt(did_you_mean_help(sub, names.iter().copied())),
                );
            } else if tools.contains(sub.as_str()) {
                diags.push(
                    Diagnostic::error(
                        Code::DuplicateTool,
                        format!("sub-agent `{sub}` has the name of a tool a plugin declares"),
                    )
                    .at(Some(*origin), "sub-agent")
                    .with_help(
                        "sub-agents are offered to the model as tools named after the agent",
                    ),
                );
            }
        }
    }
    // Cycles among sub-agents are a negative answer, not unusable input:
    // `engine::findings` reports them (exit 1, as a requirement cycle).
}
