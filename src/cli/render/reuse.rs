//! `explain reuse` output, and the NODES section `diff generations` adds
//! when both sides are stored generations.

use std::fmt::Write as _;

use crate::app::reuse::{NodeChange, ReuseReport};
use crate::runtime::identity::Decision;
use crate::store::decision_name;

fn marker(kind: Decision) -> char {
    match kind {
        Decision::Added => '+',
        Decision::Removed => '-',
        Decision::Reused => '=',
        Decision::Rewired => '>',
        Decision::Pending => '!',
        Decision::Rebuilt | Decision::Unchanged => '~',
    }
}

fn instances(c: &NodeChange) -> String {
    match (&c.old_instance_id, &c.new_instance_id) {
        (Some(a), Some(b)) if a == b => a.clone(),
        (Some(a), Some(b)) => format!("{a} -> {b}"),
        (Some(a), None) => a.clone(),
        (None, Some(b)) => b.clone(),
        (None, None) => String::new(),
    }
}

/// The reused nodes, when they are only counted: their number, and the
/// others.
fn split(changes: &[NodeChange], all: bool) -> (Vec<&NodeChange>, usize) {
    let shown: Vec<&NodeChange> = changes
        .iter()
        .filter(|c| all || c.kind != Decision::Reused)
        .collect();
    let reused = changes.len() - shown.len();
    (shown, reused)
}

/// The NODES section in text (reused nodes as a count unless `all`).
pub fn nodes_text(changes: &[NodeChange], all: bool) -> String {
    let (changes, reused) = split(changes, all);
    let width = changes
        .iter()
        .map(|c| c.entry_id.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::from("\nNODES\n");
    for c in changes {
        let reasons = if c.reasons.is_empty() {
            String::new()
        } else {
            format!("  ({})", c.reasons.join(","))
        };
        let line = format!(
            "  {} {:<width$}  {:<9} {}{reasons}",
            marker(c.kind),
            c.entry_id,
            decision_name(c.kind),
            instances(c)
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if reused > 0 {
        let _ = writeln!(
            out,
            "  … {reused} reused (identity unchanged; --all lists them)"
        );
    }
    out
}

/// The NODES section in markdown (reused nodes as a count unless `all`).
pub fn nodes_markdown(changes: &[NodeChange], all: bool) -> String {
    let (changes, reused) = split(changes, all);
    let mut out = String::from(
        "\n#### Nodes\n\n| | node | kind | instance | reasons |\n|---|---|---|---|---|\n",
    );
    for c in changes {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | `{}` | {} |",
            marker(c.kind),
            c.entry_id,
            decision_name(c.kind),
            instances(c),
            c.reasons.join(", ")
        );
    }
    if reused > 0 {
        let _ = writeln!(
            out,
            "\n{reused} more reused (identity unchanged; `--all` lists them)."
        );
    }
    out
}

/// How a node that was mounted afresh got its instance id. The same id on
/// both sides is no instance carried over: ids count mounts per lineage,
/// so two lineages may give one entry the same id.
fn afresh(change: &NodeChange) -> &'static str {
    match (&change.old_instance_id, &change.new_instance_id) {
        (Some(a), Some(b)) if a == b => {
            "(its instance id is the same only because each lineage counts its own mounts)"
        }
        _ => "with a new instance id",
    }
}

/// `explain reuse`.
pub fn text(r: &ReuseReport) -> String {
    let change = &r.change;
    let mut out = format!(
        "{}: {} -> {}: {}\n  instance        {}\n",
        change.entry_id,
        r.old,
        r.new,
        decision_name(change.kind),
        instances(change)
    );
    for p in r.parts.iter().flatten() {
        let _ = writeln!(
            out,
            "  {:<15} {}",
            p.name,
            if p.same {
                "same".to_owned()
            } else {
                format!("changed ({})", p.reason)
            }
        );
    }
    let because = match change.kind {
        Decision::Reused => "every identity part is the same, so the instance id carried over (mounted afresh in each process)".to_owned(),
        Decision::Added => format!("it is not in {}", r.old),
        Decision::Removed => format!("it is not in {}", r.new),
        Decision::Pending => format!(
            "it is still declared, but {} does not mount it: a requirement of it does not resolve ({})",
            r.new,
            change.reasons.join(", ")
        ),
        Decision::Rewired => format!(
            "only its bindings changed (a provider it binds got a new instance), so it was mounted afresh {}",
            afresh(change)
        ),
        Decision::Rebuilt => format!(
            "its identity changed ({}), so it was mounted afresh {}",
            change.reasons.join(", "),
            afresh(change)
        ),
        Decision::Unchanged => format!(
            "every identity part is the same as in {}, but a generation in between replaced that instance, so it was mounted afresh with a new instance id",
            r.old
        ),
    };
    let _ = writeln!(out, "\n{because}");
    out
}
