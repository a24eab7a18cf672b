//! JSON shapes every front end shares: a diagnostic as `chassis check
//! --format json` prints it, which `chassis serve` also answers with (a
//! reload's findings in `/v1/status`, a problem document's `diagnostics`);
//! the store's generations as `chassis generations list|show --format json`
//! prints them and `GET /v1/generations[/{id}]` answers.

use crate::engine::diag::{Diagnostic, Severity};
use crate::load::SourceMap;
use crate::store::{GenerationSummary, StoredGeneration};

use super::history::Listing;

/// The JSON line of a diagnostic that points at no file: `help` is always a
/// list, `code` `null` when the finding has none.
pub fn message_json(
    severity: &str,
    code: Option<&str>,
    message: &str,
    help: &[String],
) -> serde_json::Value {
    serde_json::json!({
        "type": "diagnostic",
        "code": code,
        "severity": severity,
        "message": message,
        "labels": [],
        "help": help,
    })
}

/// A diagnostic as a JSON line.
pub fn diagnostic_json(d: &Diagnostic, sources: &SourceMap) -> serde_json::Value {
    let labels: Vec<serde_json::Value> = d
        .labels
        .iter()
        .map(|l| {
            let (line, column) = sources.line_col(l.origin);
            serde_json::json!({
                "file": sources.name(l.origin.source),
                "line": line,
                "column": column,
                "message": l.message,
                "primary": l.primary,
            })
        })
        .collect();
    serde_json::json!({
        "type": "diagnostic",
        "code": d.code.as_str(),
        "severity": match d.severity { Severity::Error => "error", Severity::Warning => "warning" },
        "message": d.message,
        "labels": labels,
        "help": d.help,
    })
}

fn summary_json(g: &GenerationSummary) -> serde_json::Value {
    serde_json::json!({
        "lineage": g.lineage,
        "id": g.id,
        "sequence": g.sequence,
        "state": g.state,
        "created_at": g.created_at,
        "nodes": g.nodes,
        "semantic_digest": g.semantic_digest,
        "digest": g.digest,
    })
}

/// `generations list --format json`.
pub fn generations_json(list: &Listing<GenerationSummary>) -> serde_json::Value {
    serde_json::json!({
        "format_version": 1,
        "store": list.store.display().to_string(),
        "generations": list.items.iter().map(summary_json).collect::<Vec<_>>(),
    })
}

/// `generations show --format json`.
pub fn generation_json(g: &StoredGeneration) -> serde_json::Value {
    let mut doc = summary_json(&g.summary);
    doc["format_version"] = 1.into();
    doc["physical_digest"] = g.physical_digest.clone().into();
    doc["node_list"] = serde_json::to_value(&g.nodes).unwrap_or_default();
    doc["impact"] = serde_json::to_value(&g.impact).unwrap_or_default();
    doc["snapshot"] = g.snapshot.clone();
    doc
}
