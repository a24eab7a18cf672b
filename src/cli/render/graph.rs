//! `graph` output: Graphviz dot and Mermaid, scopes as nested clusters.

use std::fmt::Write;

use crate::app::Workspace;
use crate::engine::resolve::{Consumer, Status};
use crate::engine::tree::ScopeIx;

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Bound requirements as `(consumer, provider, label)`, sorted.
fn bound(r: &Workspace) -> Vec<(String, String, String)> {
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

fn entries_in(r: &Workspace, ix: ScopeIx) -> Vec<(&str, bool)> {
    let path = &r.tree.get(ix).path;
    r.composition
        .entries
        .values()
        .filter(|e| &e.scope.value == path)
        .map(|e| (e.id.as_str(), r.plan.is_eligible(&e.id)))
        .collect()
}

fn dot_scope(r: &Workspace, ix: ScopeIx, depth: usize, out: &mut String) {
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
pub fn dot(r: &Workspace) -> String {
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

/// Text for a quoted Mermaid label: the characters Mermaid reads as syntax
/// or markup inside quotes, as its entity codes (`#quot;`, …).
fn mermaid_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '|' => out.push_str("#124;"),
            _ => out.push(ch),
        }
    }
    out
}

fn mermaid_scope(r: &Workspace, ix: ScopeIx, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth + 1);
    let scope = r.tree.get(ix);
    let _ = writeln!(
        out,
        "{pad}subgraph s{ix}[\"{}\"]",
        mermaid_text(scope.path.as_str())
    );
    for (id, eligible) in entries_in(r, ix) {
        let label = mermaid_text(id);
        let shape = if eligible {
            format!("[\"{label}\"]")
        } else {
            format!("([\"{label} (pending)\"])")
        };
        let _ = writeln!(out, "{pad}  {}{shape}", mermaid_id(id));
    }
    for &child in &scope.children {
        mermaid_scope(r, child, depth + 1, out);
    }
    let _ = writeln!(out, "{pad}end");
}

/// Mermaid flowchart.
pub fn mermaid(r: &Workspace) -> String {
    let mut out = String::from("flowchart LR\n");
    if !r.tree.is_empty() {
        mermaid_scope(r, 0, 0, &mut out);
    }
    for (c, p, label) in bound(r) {
        let _ = writeln!(
            out,
            "  {} -->|\"{}\"| {}",
            mermaid_id(&c),
            mermaid_text(&label),
            mermaid_id(&p)
        );
    }
    out
}

/// JSON: nodes, edges and scopes.
pub fn json(r: &Workspace) -> serde_json::Value {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids and capabilities may hold characters Mermaid reads as syntax
    /// (`"` closes a label, `|` an edge label): they are written as entity
    /// codes inside quoted labels, so the chart still parses.
    #[test]
    fn mermaid_labels_escape_what_mermaid_reads_as_syntax() {
        let text = "version = 1\n\
            [plugins.p]\nversion = \"1.0.0\"\nprovides = { \"c|ap\" = \"1.0.0\" }\n\
            [plugins.q]\nversion = \"1.0.0\"\nrequires = { \"c|ap\" = \">=1\" }\n\
            [entries.\"a\\\"b]c\"]\nplugin = \"p\"\n\
            [entries.\"x<y>#\"]\nplugin = \"q\"\n";
        let loaded = crate::load::load_str("c.toml", text);
        assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
        let composition = loaded.composition.unwrap();
        let tree = crate::engine::tree::ScopeTree::new(&composition);
        let plan = crate::engine::resolve::resolve(&composition);
        let r = Workspace {
            composition,
            tree: tree.into(),
            plan: plan.into(),
            sources: loaded.sources,
            display: "c.toml".into(),
            warnings: Vec::new(),
            lock_problems: Vec::new(),
        };
        let chart = mermaid(&r);
        assert!(chart.contains(r#"["a#quot;b]c"]"#), "{chart}");
        assert!(chart.contains(r#"["x#lt;y#gt;#35;"]"#), "{chart}");
        assert!(chart.contains(r#"-->|"c#124;ap@1"|"#), "{chart}");
        // Every quote left is a label delimiter: an even number per line.
        for line in chart.lines() {
            assert_eq!(line.matches('"').count() % 2, 0, "{line}");
        }
    }
}
