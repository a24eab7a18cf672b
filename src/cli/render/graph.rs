//! `graph` output: Graphviz dot and Mermaid, scopes as nested clusters.

use std::fmt::Write;

use crate::cli::workspace::Resolved;
use crate::engine::resolve::{Consumer, Status};
use crate::engine::tree::ScopeIx;

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Bound requirements as `(consumer, provider, label)`, sorted.
fn bound(r: &Resolved) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = r
        .plan
        .resolutions
        .iter()
        .filter(|x| x.status == Status::Resolved)
        .filter_map(|x| match (&x.consumer, &x.selected) {
            (Consumer::Entry(c), Some(s)) => Some((
                c.to_string(),
                s.entry.to_string(),
                format!("{}@{}", x.requirement.capability, s.version.major()),
            )),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

fn entries_in(r: &Resolved, ix: ScopeIx) -> Vec<(&str, bool)> {
    let path = &r.tree.get(ix).path;
    r.composition
        .entries
        .values()
        .filter(|e| &e.scope.value == path)
        .map(|e| (e.id.as_str(), r.plan.is_eligible(&e.id)))
        .collect()
}

fn dot_scope(r: &Resolved, ix: ScopeIx, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth + 1);
    let scope = r.tree.get(ix);
    let _ = writeln!(out, "{pad}subgraph {} {{", quote(&format!("cluster_{ix}")));
    let _ = writeln!(out, "{pad}  label = {};", quote(scope.path.as_str()));
    for (id, eligible) in entries_in(r, ix) {
        let style = if eligible { "" } else { ", style = dashed" };
        let _ = writeln!(out, "{pad}  {} [label = {}{style}];", quote(id), quote(id));
    }
    for &child in &scope.children {
        dot_scope(r, child, depth + 1, out);
    }
    let _ = writeln!(out, "{pad}}}");
}

/// Graphviz dot.
pub fn dot(r: &Resolved) -> String {
    let mut out = String::from("digraph chassis {\n  rankdir = LR;\n  node [shape = box];\n");
    if !r.tree.is_empty() {
        dot_scope(r, 0, 0, &mut out);
    }
    for (c, p, label) in bound(r) {
        let _ = writeln!(
            out,
            "  {} -> {} [label = {}];",
            quote(&c),
            quote(&p),
            quote(&label)
        );
    }
    out.push_str("}\n");
    out
}

fn mermaid_id(s: &str) -> String {
    let mut id = String::from("n_");
    for ch in s.chars() {
        if ch.is_ascii_alphanumeric() {
            id.push(ch)
        } else {
            let _ = write!(id, "_{:x}_", ch as u32);
        }
    }
    id
}

fn mermaid_scope(r: &Resolved, ix: ScopeIx, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth + 1);
    let scope = r.tree.get(ix);
    let _ = writeln!(
        out,
        "{pad}subgraph s{ix}[\"{}\"]",
        scope.path.as_str().replace('"', "'")
    );
    for (id, eligible) in entries_in(r, ix) {
        let shape = if eligible {
            format!("[\"{id}\"]")
        } else {
            format!("([\"{id} (pending)\"])")
        };
        let _ = writeln!(out, "{pad}  {}{shape}", mermaid_id(id));
    }
    for &child in &scope.children {
        mermaid_scope(r, child, depth + 1, out);
    }
    let _ = writeln!(out, "{pad}end");
}

/// Mermaid flowchart.
pub fn mermaid(r: &Resolved) -> String {
    let mut out = String::from("flowchart LR\n");
    if !r.tree.is_empty() {
        mermaid_scope(r, 0, 0, &mut out);
    }
    for (c, p, label) in bound(r) {
        let _ = writeln!(out, "  {} -->|{label}| {}", mermaid_id(&c), mermaid_id(&p));
    }
    out
}

/// JSON: nodes, edges and scopes.
pub fn json(r: &Resolved) -> serde_json::Value {
    serde_json::json!({
        "format_version": 1,
        "nodes": r.composition.entries.values().map(|e| serde_json::json!({
            "id": e.id.as_str(), "scope": e.scope.value.as_str(), "plugin": e.plugin.value, "eligible": r.plan.is_eligible(&e.id),
        })).collect::<Vec<_>>(),
        "edges": bound(r).into_iter().map(|(c, p, l)| serde_json::json!({"consumer": c, "provider": p, "contract": l})).collect::<Vec<_>>(),
        "scopes": r.tree.scopes().iter().map(|s| serde_json::json!({
            "path": s.path.as_str(), "parent": s.parent.map(|p| r.tree.get(p).path.as_str().to_owned()),
        })).collect::<Vec<_>>(),
    })
}
