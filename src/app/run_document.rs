//! The run document: what `chassis run --format json` prints and what
//! `chassis serve` answers for a run — one shape, built once.
//!
//! It is written straight from the run ([`RunDocument`], fields in the
//! order a JSON object of chassis's prints its keys), never as a
//! `serde_json::Value` tree: a served run's tree, built, written and freed,
//! was a quarter of the server's work. Only what came from outside passes
//! through a tree, to be redacted.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::app::candidates::Candidate;
use crate::engine::secret::Redactor;

use super::run::RunOutcome;

impl RunOutcome {
    /// The run as its JSON document (`format_version` 1). What came from
    /// outside (the conversation, errors, stop reasons, the request's
    /// tools) passes `redactor` once more; chassis's own keys and labels
    /// (`tokens`, budget rows, hashes) are never touched.
    pub fn document(&self, redactor: &Redactor) -> Value {
        serde_json::to_value(RunDocument::of(self, redactor)).unwrap_or(Value::Null)
    }

    /// [`Self::document`] written out (compact), as a server keeps and
    /// sends it.
    pub fn document_text(&self, redactor: &Redactor) -> Box<RawValue> {
        let text = serde_json::to_string(&RunDocument::of(self, redactor))
            .unwrap_or_else(|_| "null".to_owned());
        RawValue::from_string(text).unwrap_or_else(|_| null())
    }
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).expect("`null` is JSON")
}

/// The document's keys, sorted as a JSON object of chassis's prints them.
#[derive(Serialize)]
struct RunDocument<'a> {
    agent: &'a str,
    agent_revision: &'a str,
    answer: Value,
    // Rows, not a map keyed by dimension: `tokens` is also a secret-looking
    // key name, and a report must never look redacted.
    budget: Vec<BudgetRow<'a>>,
    // Generations built while the run ran (a plugin's tools changed); the
    // run itself stayed on `generation_id`.
    candidate_generations: Value,
    composition: Composition<'a>,
    duration_seconds: f64,
    format_version: u32,
    generation_id: &'a str,
    messages: Value,
    // As the provider named it: from outside.
    model: Value,
    // Tools the request brought: the run ran on its own candidate of
    // `generation_id`, which `snapshot_digest` describes.
    request_tools: Value,
    run_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    // False when another turn of the session was saved while this one
    // ran: the turn is not in the session (and has no `session_turn`).
    #[serde(skip_serializing_if = "Option::is_none")]
    session_saved: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_turn: Option<usize>,
    snapshot_digest: &'a str,
    steps: u32,
    stop: Value,
    tool_calls: Value,
    // The W3C trace id of the run: what plugins receive in
    // `_meta.traceparent`, to find their spans and logs of this run.
    trace_id: String,
    usage: Usage,
}

#[derive(Serialize)]
struct BudgetRow<'a> {
    dimension: &'a str,
    enforcement: &'a str,
    limit: Option<f64>,
    used: f64,
}

#[derive(Serialize)]
struct Composition<'a> {
    agent_runtime: &'static str,
    capabilities: &'a BTreeMap<String, Vec<String>>,
    chassis_version: &'static str,
    config_hash: &'a str,
    generation_id: &'a str,
    graph_definition_hash: &'a str,
    plugin_graph_hash: &'a str,
    plugins: &'a BTreeMap<String, String>,
    prompt_hash: &'a str,
    semantic_digest: &'a str,
    snapshot_digest: &'a str,
    tool_schema_hash: &'a str,
}

#[derive(Serialize)]
struct Usage {
    estimated_cost: f64,
    input_tokens: u64,
    output_tokens: u64,
}

impl<'a> RunDocument<'a> {
    fn of(run: &'a RunOutcome, redactor: &Redactor) -> Self {
        let result = &run.result;
        let snap = &run.generation.snapshot;
        let outside = |value: Value| redactor.redact_document(&value);
        Self {
            agent: &result.agent,
            agent_revision: &result.agent_revision,
            answer: outside(to_json(&result.answer)),
            budget: result
                .budget
                .as_ref()
                .map(|b| {
                    b.dimensions
                        .iter()
                        .map(|d| BudgetRow {
                            dimension: d.dimension.as_str(),
                            enforcement: d.enforcement.as_str(),
                            limit: d.limit,
                            used: d.used,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            candidate_generations: outside(Value::Array(
                run.candidates.iter().map(Candidate::to_json).collect(),
            )),
            composition: Composition {
                agent_runtime: crate::engine::agent::LOOP_RUNTIME,
                capabilities: &snap.capabilities,
                chassis_version: crate::engine::snapshot::CHASSIS_VERSION,
                config_hash: &snap.config_hash,
                generation_id: &result.generation_id,
                graph_definition_hash: &result.graph_definition_hash,
                plugin_graph_hash: &snap.plugin_graph_hash,
                plugins: &snap.plugins,
                prompt_hash: &result.prompt_hash,
                semantic_digest: &result.semantic_digest,
                snapshot_digest: &result.snapshot_digest,
                tool_schema_hash: &snap.tool_schema_hash,
            },
            duration_seconds: result.duration_seconds,
            format_version: 1,
            generation_id: &result.generation_id,
            messages: outside(to_json(&result.messages)),
            model: outside(to_json(&result.model)),
            request_tools: outside(to_json(&run.request_tools)),
            run_id: &result.run_id,
            session: run.session.as_ref().map(|s| s.id.as_str()),
            session_saved: run.session.as_ref().map(|s| s.saved),
            session_turn: run.session.as_ref().filter(|s| s.saved).map(|s| s.turn),
            snapshot_digest: &result.snapshot_digest,
            steps: result.steps,
            stop: outside(to_json(&result.stop)),
            tool_calls: outside(to_json(&result.tool_calls)),
            trace_id: crate::engine::trace_context::TraceParent::trace_id_of(&result.run_id),
            usage: Usage {
                estimated_cost: result.estimated_cost,
                input_tokens: result.usage.input_tokens,
                output_tokens: result.usage.output_tokens,
            },
        }
    }
}

/// What came from outside, as JSON to redact.
fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
