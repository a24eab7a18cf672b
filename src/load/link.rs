//! Cross-file checks: duplicate definitions and references between tables.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::includes::Walked;
use super::walk::{Def, EntryDecl};
use crate::engine::diag::{Code, Diagnostic, did_you_mean};
use crate::engine::model::{Composition, Entry, EntryRef, Manifest};

/// Keep the first definition of every name, reporting the others.
fn first_defs<T>(defs: Vec<Def<T>>, kind: &str, diags: &mut Vec<Diagnostic>) -> Vec<Def<T>> {
    let mut seen: BTreeMap<String, crate::engine::span::Origin> = BTreeMap::new();
    let mut out = Vec::new();
    for def in defs {
        if let Some(first) = seen.get(&def.name) {
            diags.push(
                Diagnostic::error(
                    Code::DuplicateId,
                    format!("{kind} `{}` is defined twice", def.name),
                )
                .at(Some(def.origin), "defined again here")
                .also(Some(*first), "first defined here")
                .with_help(format!(
                    "each {kind} may be defined once across the composition and its includes"
                )),
            );
            continue;
        }
        seen.insert(def.name.clone(), def.origin);
        out.push(def);
    }
    out
}

fn did_you_mean_help<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    did_you_mean(input, candidates).map(|s| format!("did you mean `{s}`?"))
}

/// Build the composition from every walked file. With `check_refs` false
/// (some file did not parse), references are not checked: what they name
/// may be in the part that did not parse.
pub(crate) fn link(
    files: Vec<Walked>,
    diags: &mut Vec<Diagnostic>,
    check_refs: bool,
) -> Composition {
    let (mut plugins, mut entries, mut scopes, mut prefer) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut policy = Vec::new();
    for file in files {
        plugins.extend(file.out.plugins);
        entries.extend(file.out.entries);
        scopes.extend(file.out.scopes);
        prefer.extend(file.out.prefer);
        policy.extend(file.out.policy);
    }
    let policy = first_defs(policy, "table", diags);
    let plugins = first_defs(plugins, "plugin", diags);
    let entries = first_defs(entries, "entry", diags);
    let scopes = first_defs(scopes, "scope", diags);
    let prefer = first_defs(prefer, "global preference for", diags);

    let catalog: BTreeMap<String, Option<Arc<Manifest>>> = plugins
        .into_iter()
        .map(|d| (d.name, d.value.map(Arc::new)))
        .collect();
    let entry_ids: BTreeSet<String> = entries.iter().map(|d| d.name.clone()).collect();

    let mut comp = Composition::new();
    comp.policy = policy.into_iter().next().and_then(|d| d.value);
    for def in &scopes {
        if let (Some(_), decl, _) = &def.value {
            comp.insert_scope(decl.clone());
        }
    }
    let mut refs: Vec<&EntryRef> = Vec::new();
    for def in &scopes {
        refs.extend(def.value.1.prefer.values());
    }
    for def in &prefer {
        if let Some((cap, r)) = &def.value {
            refs.push(r);
            comp.preferences.global.insert(cap.clone(), r.clone());
        }
    }
    for def in &entries {
        refs.extend(def.value.prefer.values());
        if let Some(entry) = entry(&def.value, def, &catalog, &mut comp, diags, check_refs) {
            comp.entries.insert(entry.id.clone(), entry);
        }
    }
    if check_refs {
        for r in refs {
            if entry_ids.contains(r.value.as_str()) {
                continue;
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
    }
    comp
}

fn entry(
    decl: &EntryDecl,
    def: &Def<EntryDecl>,
    catalog: &BTreeMap<String, Option<Arc<Manifest>>>,
    comp: &mut Composition,
    diags: &mut Vec<Diagnostic>,
    check_refs: bool,
) -> Option<Entry> {
    let plugin = decl.plugin.as_ref()?;
    let manifest = match catalog.get(&plugin.value) {
        Some(m) => m.clone(),
        None => {
            if check_refs {
                let names: Vec<&str> = catalog.keys().map(String::as_str).collect();
                let list = if names.is_empty() {
                    "no plugins are declared; add a `[plugins.<name>]` table".to_owned()
                } else {
                    format!(
                        "available plugins: {}",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                let d = Diagnostic::error(
                    Code::UnknownPlugin,
                    format!(
                        "entry `{}` names the unknown plugin `{}`",
                        def.name, plugin.value
                    ),
                )
                .at(plugin.origin, "unknown plugin")
                .with_help_opt(did_you_mean_help(&plugin.value, names.iter().copied()))
                .with_help(list);
                diags.push(d);
            }
            None
        }
    };
    let id = decl.id.clone()?;
    if !decl.enabled {
        comp.disabled.insert(id, Some(def.origin));
        return None;
    }
    let scope = decl.scope.clone()?;
    if !comp.scopes.contains_key(&scope.value) {
        if check_refs {
            let d = Diagnostic::error(
                Code::UnknownScope,
                format!(
                    "entry `{}` is placed in the undeclared scope `{}`",
                    def.name, scope.value
                ),
            )
            .at(scope.origin, "unknown scope")
            .with_help_opt(did_you_mean_help(
                scope.value.as_str(),
                comp.scopes.keys().map(|p| p.as_str()),
            ))
            .with_help(format!("declare it with `[scopes.\"{}\"]`", scope.value));
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
        config: decl.config.clone()?,
        prefer: decl.prefer.clone(),
        origin: Some(def.origin),
    })
}
