//! A host's metrics: what a long-running server counts about its runs,
//! model and tool calls, tokens, budgets and reloads — as data, which a
//! front end renders (`chassis serve` as Prometheus text at `/metrics`).
//!
//! Labels are bounded by the composition (agent, model, tool, budget
//! dimension, status): never a run, session or user id, so a busy server
//! does not grow a series per request — nor text a model chose: a tool
//! name the composition does not declare is counted as [`UNKNOWN_TOOL`]
//! (a tool a request brought as [`REQUEST_TOOL`]), and the model of a
//! run's tokens is the one its entry is configured with, not the name a
//! provider reports.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::runtime::Generation;
use crate::runtime::agent::{AgentEvent, AgentObserver, AgentResult, StopReason};

/// The `tool` label of a call to a tool the composition does not declare:
/// a name the model made up (each would otherwise be a new series).
pub const UNKNOWN_TOOL: &str = "<unknown>";

/// The `tool` label of a call to a tool the request brought (their names
/// are the client's, not the composition's).
pub const REQUEST_TOOL: &str = "<request>";

/// Latency buckets, in seconds (runs, model calls, tool calls).
pub const SECONDS_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// A histogram over [`SECONDS_BUCKETS`] (cumulative when read).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// Per bucket (not cumulative), then the `+Inf` overflow.
    counts: Vec<u64>,
    /// Sum of the observations.
    pub sum: f64,
    /// How many observations.
    pub count: u64,
}

impl Histogram {
    fn observe(&mut self, value: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; SECONDS_BUCKETS.len() + 1];
        }
        let i = SECONDS_BUCKETS
            .iter()
            .position(|b| value <= *b)
            .unwrap_or(SECONDS_BUCKETS.len());
        self.counts[i] += 1;
        self.sum += value;
        self.count += 1;
    }

    /// `(upper bound, cumulative count)` per bucket, ending with `+Inf`.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut total = 0;
        SECONDS_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .enumerate()
            .map(|(i, bound)| {
                total += self.counts.get(i).copied().unwrap_or(0);
                (bound, total)
            })
            .collect()
    }
}

/// What a metric is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// A distribution.
    Histogram,
}

/// One series' value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A counter or gauge.
    Number(f64),
    /// A histogram.
    Histogram(Histogram),
}

/// A metric with its series.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// `chassis_runs_total`.
    pub name: &'static str,
    /// What it counts.
    pub help: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// Label sets (name, value) and their values, sorted.
    pub series: Vec<(Vec<(&'static str, String)>, Value)>,
}

type Labels = Vec<String>;

#[derive(Default)]
struct State {
    runs: BTreeMap<Labels, f64>,
    run_seconds: BTreeMap<Labels, Histogram>,
    model_seconds: BTreeMap<Labels, Histogram>,
    tool_seconds: BTreeMap<Labels, Histogram>,
    tool_calls: BTreeMap<Labels, f64>,
    tokens: BTreeMap<Labels, f64>,
    cost: BTreeMap<Labels, f64>,
    budget_exhaustions: BTreeMap<Labels, f64>,
    reloads: BTreeMap<Labels, f64>,
}

/// The counters of one host.
#[derive(Default)]
pub struct Metrics {
    state: Mutex<State>,
}

impl Metrics {
    fn with(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// A finished top-level run whose model (as its entry names it) was
    /// `model`.
    fn run_finished(&self, result: &AgentResult, model: &str, status: &str) {
        let agent = result.agent.clone();
        let model = model.to_owned();
        self.with(|s| {
            *s.runs
                .entry(vec![agent.clone(), status.to_owned()])
                .or_default() += 1.0;
            s.run_seconds
                .entry(vec![agent.clone()])
                .or_default()
                .observe(result.duration_seconds);
            for (kind, n) in [
                ("input", result.usage.input_tokens),
                ("output", result.usage.output_tokens),
            ] {
                *s.tokens
                    .entry(vec![agent.clone(), model.clone(), kind.to_owned()])
                    .or_default() += n as f64;
            }
            *s.cost
                .entry(vec![agent.clone(), model.clone()])
                .or_default() += result.estimated_cost;
            if let StopReason::BudgetExhausted { dimension, .. } = &result.stop {
                *s.budget_exhaustions
                    .entry(vec![agent, dimension.clone()])
                    .or_default() += 1.0;
            }
        });
    }

    /// A run that ended without a result (`error`, `cancelled`).
    pub fn run_failed(&self, agent: &str, status: &str) {
        self.with(|s| {
            *s.runs
                .entry(vec![agent.to_owned(), status.to_owned()])
                .or_default() += 1.0;
        });
    }

    /// A reload: `published`, `unchanged` or `failed`.
    pub fn reloaded(&self, outcome: &str) {
        self.with(|s| *s.reloads.entry(vec![outcome.to_owned()]).or_default() += 1.0);
    }

    /// The counters of one run on `generation` (which declares the tools
    /// that are labelled by name), with the tools the request brought
    /// named in `request_tools`; it then tells `next`. Give it to the
    /// run's runner as its observer, and tell it how the run finished
    /// ([`RunMetrics::finished`]).
    pub fn run(
        self: &Arc<Self>,
        generation: Arc<Generation>,
        request_tools: Vec<String>,
        next: Option<Arc<dyn AgentObserver>>,
    ) -> Arc<RunMetrics> {
        Arc::new(RunMetrics {
            metrics: Arc::clone(self),
            generation,
            request_tools,
            models: Mutex::new(BTreeMap::new()),
            agent_models: Mutex::new(BTreeMap::new()),
            next,
        })
    }

    /// Every family, with `gauges` (name, help, value) first.
    pub fn families(&self, gauges: Vec<(&'static str, &'static str, f64)>) -> Vec<Family> {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<Family> = gauges
            .into_iter()
            .map(|(name, help, v)| Family {
                name,
                help,
                kind: Kind::Gauge,
                series: vec![(Vec::new(), Value::Number(v))],
            })
            .collect();
        let numbers =
            |name, help, kind, labels: &[&'static str], map: &BTreeMap<Labels, f64>| Family {
                name,
                help,
                kind,
                series: map
                    .iter()
                    .map(|(values, v)| (label_pairs(labels, values), Value::Number(*v)))
                    .collect(),
            };
        let histograms =
            |name, help, labels: &[&'static str], map: &BTreeMap<Labels, Histogram>| Family {
                name,
                help,
                kind: Kind::Histogram,
                series: map
                    .iter()
                    .map(|(values, h)| (label_pairs(labels, values), Value::Histogram(h.clone())))
                    .collect(),
            };
        out.extend([
            numbers(
                "chassis_runs_total",
                "Runs finished, by agent and status.",
                Kind::Counter,
                &["agent", "status"],
                &s.runs,
            ),
            histograms(
                "chassis_run_duration_seconds",
                "Wall time of finished runs.",
                &["agent"],
                &s.run_seconds,
            ),
            histograms(
                "chassis_model_call_duration_seconds",
                "Wall time of model calls.",
                &["model"],
                &s.model_seconds,
            ),
            histograms(
                "chassis_tool_call_duration_seconds",
                "Wall time of tool calls.",
                &["tool"],
                &s.tool_seconds,
            ),
            numbers(
                "chassis_tool_calls_total",
                "Tool calls, by tool and outcome (ok, error, refused, …).",
                Kind::Counter,
                &["tool", "outcome"],
                &s.tool_calls,
            ),
            numbers(
                "chassis_tokens_total",
                "Tokens of finished runs, by agent, model and kind (input, output).",
                Kind::Counter,
                &["agent", "model", "kind"],
                &s.tokens,
            ),
            numbers(
                "chassis_estimated_cost_total",
                "Estimated cost of finished runs, by agent and model.",
                Kind::Counter,
                &["agent", "model"],
                &s.cost,
            ),
            numbers(
                "chassis_budget_exhaustions_total",
                "Runs stopped by a budget, by agent and dimension.",
                Kind::Counter,
                &["agent", "dimension"],
                &s.budget_exhaustions,
            ),
            numbers(
                "chassis_reloads_total",
                "Reloads, by outcome (published, unchanged, failed).",
                Kind::Counter,
                &["outcome"],
                &s.reloads,
            ),
        ]);
        out
    }
}

fn label_pairs(names: &[&'static str], values: &[String]) -> Vec<(&'static str, String)> {
    names.iter().copied().zip(values.iter().cloned()).collect()
}

/// The counters of one run (see [`Metrics::run`]).
pub struct RunMetrics {
    metrics: Arc<Metrics>,
    /// What declares the tools labelled by name.
    generation: Arc<Generation>,
    /// The names of the tools the request brought.
    request_tools: Vec<String>,
    /// The model of each call under way, by (agent, step).
    models: Mutex<BTreeMap<(String, u32), String>>,
    /// The model each agent of the run called last.
    agent_models: Mutex<BTreeMap<String, String>>,
    next: Option<Arc<dyn AgentObserver>>,
}

impl RunMetrics {
    /// The run finished with `result`, `status`: its tokens and cost are
    /// counted under the model its agent called (as the entry names it).
    pub fn finished(&self, result: &AgentResult, status: &str) {
        let model = self
            .agent_models
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&result.agent)
            .cloned()
            .unwrap_or_default();
        self.metrics.run_finished(result, &model, status);
    }

    /// The `tool` label of a call to `name`: the name when the composition
    /// declares such a tool (or a sub-agent), else one fixed label.
    fn tool_label(&self, name: &str) -> String {
        if self.request_tools.iter().any(|t| t == name) {
            REQUEST_TOOL.to_owned()
        } else if self.generation.tools.contains_key(name)
            || self.generation.composition.agents.contains_key(name)
        {
            name.to_owned()
        } else {
            UNKNOWN_TOOL.to_owned()
        }
    }

    fn count(&self, event: &AgentEvent) {
        match event {
            AgentEvent::ModelCallStarted { agent, step, model } => {
                self.models
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert((agent.clone(), *step), model.clone());
                self.agent_models
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(agent.clone(), model.clone());
            }
            AgentEvent::ModelCallFinished {
                agent,
                step,
                duration_seconds,
                ..
            } => {
                let model = self
                    .models
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&(agent.clone(), *step))
                    .unwrap_or_default();
                self.metrics.with(|s| {
                    s.model_seconds
                        .entry(vec![model])
                        .or_default()
                        .observe(*duration_seconds);
                });
            }
            AgentEvent::ToolCallFinished { record, .. } => {
                let tool = self.tool_label(&record.name);
                self.metrics.with(|s| {
                    s.tool_seconds
                        .entry(vec![tool.clone()])
                        .or_default()
                        .observe(record.duration_seconds);
                    *s.tool_calls
                        .entry(vec![tool, record.status.to_owned()])
                        .or_default() += 1.0;
                });
            }
            _ => {}
        }
    }
}

impl AgentObserver for RunMetrics {
    fn on_event(&self, event: &AgentEvent) {
        self.count(event);
        if let Some(next) = &self.next {
            next.on_event(event);
        }
    }

    fn wants_text(&self) -> bool {
        self.next.as_ref().is_some_and(|n| n.wants_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_counts_cumulatively_up_to_inf() {
        let mut h = Histogram::default();
        for v in [0.0005, 0.003, 0.003, 100.0] {
            h.observe(v);
        }
        let c = h.cumulative();
        assert_eq!(c[0], (0.001, 1));
        assert_eq!(c[2], (0.005, 3));
        assert_eq!(c.last(), Some(&(f64::INFINITY, 4)));
        assert_eq!(h.count, 4);
        assert!((h.sum - 100.0065).abs() < 1e-9);
    }
}
