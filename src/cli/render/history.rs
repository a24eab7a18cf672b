//! `generations` and `runs` output: tables, one generation or run, JSON.

use std::fmt::Write as _;

pub use crate::app::documents::{generation_json, generations_json};
use crate::app::history::Listing;
use crate::app::state::shown_lineage;
use crate::store::{GenerationSummary, StoredGeneration, StoredRun};

/// The first 12 hex digits of a digest.
fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

/// `generations list`.
pub fn generations_text(list: &Listing<GenerationSummary>) -> String {
    if list.items.is_empty() {
        return format!("no generations in `{}`", list.store.display());
    }
    let grouped = list
        .items
        .iter()
        .any(|g| g.lineage != list.items[0].lineage);
    let mut out = String::new();
    for (i, g) in list.items.iter().enumerate() {
        if i == 0 || (grouped && g.lineage != list.items[i - 1].lineage) {
            if grouped {
                if i > 0 {
                    out.push('\n');
                }
                let _ = writeln!(out, "{}", shown_lineage(&g.lineage));
            }
            out.push_str(
                "ID        STATE       CREATED               NODES  SEMANTIC      DIGEST\n",
            );
        }
        let _ = writeln!(
            out,
            "{:<9} {:<11} {:<21} {:<6} {:<13} {}",
            g.id,
            g.state,
            g.created_at,
            g.nodes,
            short(&g.semantic_digest),
            short(&g.digest)
        );
    }
    out
}

/// `generations show`.
pub fn generation_text(g: &StoredGeneration) -> String {
    let s = &g.summary;
    let mut out = format!(
        "{} ({})\n  created_at       {}\n  digest           {}\n  semantic_digest  {}\n  physical_digest  {}\n",
        s.id, s.state, s.created_at, s.digest, s.semantic_digest, g.physical_digest
    );
    let width = g
        .impact
        .iter()
        .map(|i| i.entry_id.chars().count())
        .chain(g.nodes.iter().map(|n| n.entry_id.chars().count()))
        .max()
        .unwrap_or(0);
    let _ = write!(out, "\nNODES\n");
    for i in &g.impact {
        let mount = g
            .node(&i.entry_id)
            .map(|n| format!("  mount {}", n.mount))
            .unwrap_or_default();
        let iid = match (&i.old_instance_id, &i.new_instance_id) {
            (Some(a), Some(b)) if a != b => format!("{a} -> {b}"),
            (_, Some(b)) => b.clone(),
            (Some(a), None) => a.clone(),
            (None, None) => String::new(),
        };
        let reasons = if i.reasons.is_empty() {
            String::new()
        } else {
            format!("  ({})", i.reasons.join(","))
        };
        let line = format!(
            "  {:<width$}  {:<9} {iid}{mount}{reasons}",
            i.entry_id, i.decision
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// `runs list --format json`.
pub fn runs_json(list: &Listing<StoredRun>) -> serde_json::Value {
    serde_json::json!({
        "format_version": 1,
        "store": list.store.display().to_string(),
        "runs": list.items,
    })
}

/// `runs list`.
pub fn runs_text(list: &Listing<StoredRun>) -> String {
    if list.items.is_empty() {
        return format!(
            "no runs recorded in `{}` (`chassis run` records them)",
            list.store.display()
        );
    }
    let qualified = list
        .items
        .iter()
        .any(|r| r.lineage != list.items[0].lineage);
    table(&list.items, qualified)
}

/// `runs show --format json`.
pub fn run_json(r: &StoredRun) -> serde_json::Value {
    let mut doc = serde_json::to_value(r).unwrap_or_default();
    doc["format_version"] = 1.into();
    doc
}

/// `runs show`.
pub fn run_text(r: &StoredRun) -> String {
    let generation = if r.lineage.is_empty() {
        r.generation_id.clone()
    } else {
        format!("{} ({})", r.generation_id, r.lineage)
    };
    format!(
        "{}\n  generation  {}\n  agent       {}\n  status      {}\n  started_at  {}\n  finished_at {}",
        r.id,
        generation,
        r.agent,
        r.status,
        r.started_at,
        r.finished_at.as_deref().unwrap_or("-")
    )
}

/// The runs as a table, each column as wide as its widest cell; with
/// `qualified`, generations are named with their lineage (`NAME:gen_0001`).
fn table(runs: &[StoredRun], qualified: bool) -> String {
    const HEAD: [&str; 6] = ["ID", "GENERATION", "AGENT", "STATUS", "STARTED", "FINISHED"];
    let generations: Vec<String> = runs
        .iter()
        .map(|r| {
            if qualified {
                format!("{}:{}", r.lineage, r.generation_id)
            } else {
                r.generation_id.clone()
            }
        })
        .collect();
    let rows: Vec<[&str; 6]> = runs
        .iter()
        .zip(&generations)
        .map(|(r, generation)| {
            [
                r.id.as_str(),
                generation.as_str(),
                r.agent.as_str(),
                r.status.as_str(),
                r.started_at.as_str(),
                r.finished_at.as_deref().unwrap_or("-"),
            ]
        })
        .collect();
    let mut width = HEAD.map(str::len);
    for row in &rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&HEAD).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(width).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<w$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
