//! `run` output: the answer on stdout and a summary on stderr, or one JSON
//! document (what came from outside in it redacted once more).

use std::fmt::Write as _;

use crate::app::candidates::{Candidate, Outcome};
use crate::app::run::RunOutcome;
use crate::engine::budget::BudgetDimension;
use crate::engine::secret::Redactor;
use crate::runtime::agent::StopReason;

use super::super::ui::{Format, Ui};

/// The result document of `--format json`.
fn result_json(run: &RunOutcome) -> serde_json::Value {
    let result = &run.result;
    let snap = &run.generation.snapshot;
    // Rows, not a map keyed by dimension: `tokens` is also a secret-looking
    // key name, and a report must never look redacted.
    let budget: Vec<serde_json::Value> = result
        .budget
        .as_ref()
        .map(|b| {
            b.dimensions
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "dimension": d.dimension.as_str(),
                        "limit": d.limit,
                        "used": d.used,
                        "enforcement": d.enforcement.as_str(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({
        "format_version": 1,
        "agent": result.agent,
        "agent_revision": result.agent_revision,
        "answer": result.answer,
        "stop": result.stop,
        "steps": result.steps,
        "messages": result.messages,
        "tool_calls": result.tool_calls,
        "usage": {
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
            "estimated_cost": result.estimated_cost,
        },
        "model": result.model,
        "budget": budget,
        "run_id": result.run_id,
        "generation_id": result.generation_id,
        "snapshot_digest": result.snapshot_digest,
        "duration_seconds": result.duration_seconds,
        "composition": {
            "generation_id": result.generation_id,
            "chassis_version": crate::engine::snapshot::CHASSIS_VERSION,
            "agent_runtime": crate::engine::agent::LOOP_RUNTIME,
            "plugins": snap.plugins,
            "capabilities": snap.capabilities,
            "config_hash": snap.config_hash,
            "plugin_graph_hash": snap.plugin_graph_hash,
            "tool_schema_hash": snap.tool_schema_hash,
            "graph_definition_hash": result.graph_definition_hash,
            "prompt_hash": result.prompt_hash,
            "snapshot_digest": result.snapshot_digest,
            "semantic_digest": result.semantic_digest,
        },
        // Generations built while the run ran (a plugin's tools changed);
        // the run itself stayed on `generation_id`.
        "candidate_generations": run.candidates.iter().map(Candidate::to_json).collect::<Vec<_>>(),
        // Tools the request brought: the run ran on its own candidate of
        // `generation_id`, which `snapshot_digest` describes.
        "request_tools": run.request_tools,
    })
}

/// Show a finished run.
pub fn show(ui: &Ui, run: &RunOutcome, redactor: &Redactor) {
    if ui.format == Format::Json {
        let mut out = result_json(run);
        // What came from outside (the conversation, errors, stop reasons,
        // the request's tools) passes the redactor once more; chassis's own
        // keys and labels (`tokens`, budget rows, hashes) are never touched.
        for field in [
            "answer",
            "stop",
            "messages",
            "tool_calls",
            "candidate_generations",
            "request_tools",
        ] {
            if let Some(slot) = out.get_mut(field) {
                *slot = redactor.redact_document(slot);
            }
        }
        ui.out_json(&out);
        return;
    }
    let result = &run.result;
    if let Some(answer) = &result.answer {
        ui.out(answer.trim_end());
    }
    if ui.quiet && result.stop == StopReason::Answered {
        return;
    }
    ui.err(redactor.redact(summary(run).trim_end()).as_ref());
}

/// The summary on stderr: how it stopped, generation, run, digest, budget,
/// request tools and candidates.
fn summary(run: &RunOutcome) -> String {
    let result = &run.result;
    let mut text = String::new();
    if result.stop != StopReason::Answered {
        let _ = writeln!(
            text,
            "error: agent `{}`: {}",
            result.agent,
            result.stop.describe()
        );
    }
    let refused = result
        .tool_calls
        .iter()
        .filter(|c| c.status == "refused")
        .count();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let _ = write!(
        text,
        "\n{} in {:.2}s · {} step{} · {} tool call{}{}\n  generation       {}\n  run              {}\n  snapshot_digest  {}\n",
        result.stop.kind(),
        result.duration_seconds,
        result.steps,
        plural(result.steps as usize),
        result.tool_calls.len(),
        plural(result.tool_calls.len()),
        if refused > 0 {
            format!(" ({refused} refused)")
        } else {
            String::new()
        },
        result.generation_id,
        result.run_id,
        result.snapshot_digest,
    );
    if let Some(b) = &result.budget {
        let parts: Vec<String> = b
            .dimensions
            .iter()
            .filter(|d| d.used > 0.0 || d.limit.is_some())
            .filter(|d| d.dimension != BudgetDimension::WallClockSeconds || d.limit.is_some())
            .map(|d| match d.limit {
                Some(l) => format!(
                    "{} {}/{}",
                    d.dimension.as_str(),
                    super::amount(d.used),
                    super::amount(l)
                ),
                None => format!("{} {}", d.dimension.as_str(), super::amount(d.used)),
            })
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(text, "  budget           {}", parts.join(", "));
        }
    }
    if !run.request_tools.is_empty() {
        let _ = writeln!(
            text,
            "  request tools    {} (this run's own candidate of {})",
            run.request_tools.join(", "),
            result.generation_id
        );
    }
    for c in &run.candidates {
        let _ = match &c.outcome {
            Outcome::Published { generation, .. } => writeln!(
                text,
                "  candidate        {} (entry `{}`'s tools changed)",
                generation.id, c.entry
            ),
            Outcome::Refused(why) => writeln!(text, "  candidate        refused: {why}"),
        };
    }
    text
}
