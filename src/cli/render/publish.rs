//! `publish` and `plan` output: the same node lines and JSON rows, so what
//! `plan` foresees reads like what `publish` then does.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::app::plan::{PlanOutcome, Planned};
use crate::app::publish::Published;
use crate::app::refusal::{PendingEntry, Refusal};
use crate::engine::diff::Change;
use crate::engine::resolve::PendingReason;
use crate::runtime::identity::{Decision, NodeImpact};
use crate::store::decision_name;

/// The action (reference vocabulary) for a decision.
fn action(d: Decision) -> &'static str {
    match d {
        Decision::Added => "add",
        Decision::Removed => "remove",
        Decision::Pending => "pending",
        Decision::Reused => "reuse",
        Decision::Unchanged | Decision::Rebuilt => "rebuild",
        Decision::Rewired => "rewire",
    }
}

/// Reasons, with `identity_unchanged` for a reuse.
fn reasons(i: &NodeImpact) -> Vec<&'static str> {
    if i.decision == Decision::Reused {
        vec!["identity_unchanged"]
    } else {
        i.reasons.clone()
    }
}

/// One node as `plan` and `publish` print it in JSON.
fn node_json(i: &NodeImpact) -> serde_json::Value {
    serde_json::json!({
        "entry_id": i.entry_id,
        "action": action(i.decision),
        "decision": decision_name(i.decision),
        "reasons": reasons(i),
        "old_instance_id": i.old_instance_id,
        "new_instance_id": i.new_instance_id,
    })
}

/// Impact counts by decision.
fn counts(impact: &[NodeImpact]) -> BTreeMap<&'static str, usize> {
    let mut out: BTreeMap<&'static str, usize> = [
        "added",
        "removed",
        "reused",
        "rebuilt",
        "rewired",
        "unchanged",
        "pending",
    ]
    .into_iter()
    .map(|k| (k, 0))
    .collect();
    for i in impact {
        *out.entry(decision_name(i.decision)).or_default() += 1;
    }
    out
}

fn counts_text(impact: &[NodeImpact]) -> String {
    let c = counts(impact);
    let mut text = format!(
        "{} added, {} removed, {} reused, {} rebuilt, {} rewired",
        c["added"],
        c["removed"],
        c["reused"],
        c["rebuilt"] + c["unchanged"],
        c["rewired"]
    );
    if c["pending"] > 0 {
        let _ = write!(text, ", {} pending", c["pending"]);
    }
    text
}

/// Why an entry is pending, as a `reject` line says it.
fn pending_why(p: &PendingEntry) -> String {
    match &p.reason {
        Some(PendingReason::Requirement { capability, status }) => {
            format!("pending: {capability} {}", status.as_str())
        }
        Some(PendingReason::Cycle { .. }) => "dependency_cycle".to_owned(),
        None => "pending".to_owned(),
    }
}

/// The per-node lines (reused nodes as a count unless `all`), then a
/// `reject` line per pending entry.
fn nodes_text(impact: &[NodeImpact], pending: &[PendingEntry], all: bool) -> String {
    let width = impact
        .iter()
        .map(|i| i.entry_id.chars().count())
        .chain(pending.iter().map(|p| p.entry.as_str().chars().count()))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let mut reused = 0;
    for i in impact {
        if !all && i.decision == Decision::Reused {
            reused += 1;
            continue;
        }
        let iid = match (&i.old_instance_id, &i.new_instance_id) {
            (Some(a), Some(b)) if a != b => format!("{a} -> {b}"),
            (_, Some(b)) => b.to_string(),
            (Some(a), None) => a.to_string(),
            (None, None) => String::new(),
        };
        let line = format!(
            "  {:<7}  {:<width$}  {iid}  ({})",
            action(i.decision),
            i.entry_id,
            reasons(i).join(",")
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    // An entry the current generation mounted is a `pending` node above.
    let shown = |e: &str| impact.iter().any(|i| &*i.entry_id == e);
    for p in pending.iter().filter(|p| !shown(p.entry.as_str())) {
        let _ = writeln!(
            out,
            "  {:<7}  {:<width$}  ({})",
            "reject",
            p.entry.as_str(),
            pending_why(p)
        );
    }
    if reused > 0 {
        let _ = writeln!(
            out,
            "  … {reused} reused (identity unchanged; --all lists them)"
        );
    }
    out
}

fn pending_ids(pending: &[PendingEntry]) -> Vec<&str> {
    pending.iter().map(|p| p.entry.as_str()).collect()
}

/// `plan`'s `refusal` in JSON.
fn refusal_json(r: &Refusal) -> serde_json::Value {
    serde_json::json!({
        "reason": r.reason().as_str(),
        "cycles": r.cycles,
        "pending": r.pending.iter().map(|p| serde_json::json!({
            "entry_id": p.entry.as_str(),
            "capability": p.capability.as_str(),
            "status": p.status.as_str(),
        })).collect::<Vec<_>>(),
        "problems": r.problems.iter().map(|d| serde_json::json!({
            "code": d.code.as_str(), "message": d.message,
        })).collect::<Vec<_>>(),
    })
}

/// `publish --format json`.
pub fn publish_json(p: &Published) -> serde_json::Value {
    let d = &p.digests;
    serde_json::json!({
        "format_version": 1,
        "action": if p.published { "publish" } else { "no-op" },
        "published": p.published,
        "generation_id": p.generation_id,
        "previous_generation_id": p.previous.as_ref().map(ToString::to_string),
        "store": p.store.display().to_string(),
        "impact": counts(&p.impact),
        "nodes": p.impact.iter().map(node_json).collect::<Vec<_>>(),
        "pending": pending_ids(&p.pending),
        "agents": agents_json(&p.agents),
        "digests": {
            "digest": d.digest,
            "semantic_digest": d.semantic_digest,
            "physical_digest": d.physical_digest,
        },
    })
}

/// `publish` as text (reused nodes listed with `all`).
pub fn publish_text(p: &Published, all: bool) -> String {
    let d = &p.digests;
    let mut out = if p.published {
        format!(
            "published {}{}\n",
            p.generation_id,
            p.previous
                .as_ref()
                .map(|g| format!(" (previous {g})"))
                .unwrap_or_default()
        )
    } else {
        format!("no change: {} reused\n", p.generation_id)
    };
    let _ = write!(
        out,
        "  store            {}\n  nodes            {}\n  digest           {}\n  semantic_digest  {}\n  physical_digest  {}\n",
        p.store.display(),
        counts_text(&p.impact),
        d.digest,
        d.semantic_digest,
        d.physical_digest
    );
    if p.published {
        let _ = write!(out, "\nNODES\n{}", nodes_text(&p.impact, &p.pending, all));
    }
    out.push_str(&agents_text(&p.agents));
    out
}

/// The AGENTS section: each agent added, removed or changed (its fields).
fn agents_text(agents: &[Change]) -> String {
    if agents.is_empty() {
        return String::new();
    }
    let rows: Vec<&Change> = agents.iter().collect();
    format!("\nAGENTS\n{}", super::diff::change_lines(&rows))
}

fn agents_json(agents: &[Change]) -> Vec<serde_json::Value> {
    agents.iter().map(|c| c.to_canon().to_json()).collect()
}

/// `plan --format json`.
pub fn plan_json(outcome: &PlanOutcome) -> serde_json::Value {
    match outcome {
        PlanOutcome::Refused {
            store,
            pending,
            refusal,
        } => {
            let mut doc = serde_json::json!({
                "format_version": 1,
                "action": "reject",
                "store": store.display().to_string(),
                "pending": pending_ids(pending),
            });
            doc["refusal"] = refusal_json(refusal);
            doc
        }
        PlanOutcome::MissingSecrets { store, missing } => serde_json::json!({
            "format_version": 1,
            "action": "reject",
            "reason": "missing_secret",
            "store": store.display().to_string(),
            // `problem`: `missing`, `empty`, `too_short` (under 6
            // characters: it could not be redacted), …
            "missing_secrets": missing
                .iter()
                .map(|m| serde_json::json!({ "secret": m.secret, "entry": m.entry, "problem": m.kind, "message": m.message }))
                .collect::<Vec<_>>(),
        }),
        PlanOutcome::Planned(p) => planned_json(p),
    }
}

fn planned_json(p: &Planned) -> serde_json::Value {
    let prediction = &p.prediction;
    let d = &prediction.digests;
    serde_json::json!({
        "format_version": 1,
        "action": if prediction.published { "publish" } else { "no-op" },
        "reason": if prediction.published { "changes" } else { "no_change" },
        "generation_id": prediction.generation_id,
        "previous_generation_id": p.previous,
        "store": p.store.display().to_string(),
        "store_exists": p.store_exists,
        "impact": counts(&prediction.impact),
        "nodes": prediction.impact.iter().map(node_json).collect::<Vec<_>>(),
        "pending": pending_ids(&p.pending),
        "quarantined": p.quarantined
            .iter()
            .map(|q| serde_json::json!({ "entry": q.entry, "missing_secret": q.secret, "problem": q.kind }))
            .collect::<Vec<_>>(),
        "agents": agents_json(&p.agents),
        "digests": {
            "digest": d.digest,
            "semantic_digest": d.semantic_digest,
            "physical_digest": d.physical_digest,
        },
    })
}

/// `plan` as text (reused nodes listed with `all`).
pub fn plan_text(outcome: &PlanOutcome, all: bool) -> String {
    match outcome {
        PlanOutcome::Refused {
            pending, refusal, ..
        } => {
            let mut out = format!("plan: reject ({})\n", refusal.reason().as_str());
            for c in &refusal.cycles {
                let _ = writeln!(out, "  cycle    {c}");
            }
            for d in &refusal.problems {
                let _ = writeln!(out, "  refused  {}", super::error::problem_line(d));
            }
            if !refusal.problems.is_empty() && refusal.cycles.is_empty() {
                out.push_str("\npublish would refuse: fix them (see `chassis check`)\n");
            } else if refusal.cycles.is_empty() {
                let _ = write!(out, "\nACTIONS\n{}", nodes_text(&[], pending, all));
                out.push_str("\npublish would refuse; --allow-pending publishes without them\n");
            } else {
                out.push_str("\npublish would refuse: a cycle cannot be published\n");
            }
            out
        }
        PlanOutcome::MissingSecrets { missing, .. } => {
            let mut out = String::from("plan: reject (unusable secret)\n");
            for m in missing {
                let _ = writeln!(out, "  entry `{}`: {}", m.entry, m.message);
            }
            out.push_str("\npublish would fail mounting it: set each variable in the environment (6 characters at least)\n");
            out
        }
        PlanOutcome::Planned(p) => planned_text(p, all),
    }
}

fn planned_text(p: &Planned, all: bool) -> String {
    let prediction = &p.prediction;
    let d = &prediction.digests;
    let mut out = if prediction.published {
        format!(
            "plan: publish {}{}\n",
            prediction.generation_id,
            p.previous
                .as_ref()
                .map_or_else(|| " (new store)".to_owned(), |a| format!(" (previous {a})"))
        )
    } else {
        format!("plan: no-op ({} reused)\n", prediction.generation_id)
    };
    let _ = write!(
        out,
        "  store            {}{}\n  nodes            {}\n  digest           {}\n  semantic_digest  {}\n",
        p.store.display(),
        if p.store_exists {
            ""
        } else {
            " (absent: publish creates it)"
        },
        counts_text(&prediction.impact),
        d.digest,
        d.semantic_digest,
    );
    let _ = write!(
        out,
        "\nACTIONS\n{}",
        nodes_text(&prediction.impact, &p.pending, all)
    );
    for q in &p.quarantined {
        let _ = writeln!(
            out,
            "  quarantine  {}  ({}; on_failure = \"skip\")",
            q.entry, q.message
        );
    }
    out.push_str(&agents_text(&p.agents));
    out
}
