//! The run document: what `chassis run --format json` prints and what
//! `chassis serve` answers for a run — one shape, built once.

use crate::app::candidates::Candidate;
use crate::engine::secret::Redactor;

use super::run::RunOutcome;

impl RunOutcome {
    /// The run as its JSON document (`format_version` 1). What came from
    /// outside (the conversation, errors, stop reasons, the request's
    /// tools) passes `redactor` once more; chassis's own keys and labels
    /// (`tokens`, budget rows, hashes) are never touched.
    pub fn document(&self, redactor: &Redactor) -> serde_json::Value {
        let mut out = result_json(self);
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
        if let Some(session) = &self.session {
            out["session"] = session.id.clone().into();
            out["session_turn"] = session.turn.into();
        }
        out
    }
}

/// The document before redaction.
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
        // The W3C trace id of the run: what plugins receive in
        // `_meta.traceparent`, to find their spans and logs of this run.
        "trace_id": crate::engine::trace_context::TraceParent::trace_id_of(&result.run_id),
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
