//! `chassis publish`: reconcile a composition against the store's current
//! generation and record the new generation (or report reuse).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::engine::resolve::PendingReason;
use crate::engine::snapshot::envelope;
use crate::runtime::identity::{Decision, NodeImpact};
use crate::runtime::{Harness, ReconcileError};
use crate::store::{
    OpenMode, PublishRecord, Store, StoredIdentity, StoredImpact, StoredNode, decision_name,
    seed_state,
};

use super::super::exit::ExitStatus;
use super::super::ui::{Format, Ui};
use super::super::workspace::{Resolved, load_file};
use super::generations::{open_store, state_path, store_error};

/// Publish a composition as a new generation.
///
/// Loads and resolves FILE, then reconciles it against the last published
/// generation in the store: a node whose identity (implementation,
/// contracts, configuration, scope, bindings) is unchanged keeps its
/// instance id (`reused`, mounted afresh in this process); others are
/// rebuilt or rewired. The new generation is recorded in one transaction;
/// an unchanged composition records nothing (`no change: gen_0001 reused`).
///
/// The store is `.chassis/state.db` beside FILE unless `--state` names
/// another; it is created on the first publish (keep it out of git).
/// A composition with a pending hard requirement is refused unless
/// `--allow-pending`; a dependency cycle is always refused.
///
/// Exit status: 0 published or no change, 1 refused (pending or cycle),
/// 2 unusable input, 3 a plugin, contract or store failure.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis publish composition.toml\n  chassis publish composition.toml --state /var/lib/chassis/state.db --format json"
)]
pub struct PublishArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The store (default `.chassis/state.db` beside FILE).
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
    /// Publish even when some entries are pending (they are left out).
    #[arg(long)]
    pub allow_pending: bool,
    /// Write every telemetry signal of the publish (redacted) to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Start the `mcp` servers first and pin what they offer in
    /// `chassis.lock` (otherwise a server that differs from the lock fails
    /// the publication with the tool diff).
    #[arg(long)]
    pub update_lock: bool,
}

/// Why a composition is refused before anything runs.
pub(crate) struct Refusal {
    /// Cycles as `a -> b -> a`.
    pub cycles: Vec<String>,
    /// `(entry, capability, status)` of pending hard requirements.
    pub pending: Vec<(String, String, String)>,
}

impl Refusal {
    pub(crate) fn reason(&self) -> &'static str {
        if self.cycles.is_empty() {
            "pending_requirements"
        } else {
            "dependency_cycle"
        }
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "reason": self.reason(),
            "cycles": self.cycles,
            "pending": self.pending.iter().map(|(e, c, s)| serde_json::json!({
                "entry_id": e, "capability": c, "status": s,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The refusal for `r`: cycles always, pending requirements unless allowed.
pub(crate) fn refusal(r: &Resolved, allow_pending: bool) -> Option<Refusal> {
    let cycles: Vec<String> = r
        .plan
        .cycle_paths
        .iter()
        .map(|c| {
            let mut names: Vec<&str> = c.iter().map(|e| e.as_str()).collect();
            names.extend(c.first().map(|e| e.as_str()));
            names.join(" -> ")
        })
        .collect();
    let mut pending = Vec::new();
    if !allow_pending {
        for entry in &r.plan.pending {
            for reason in r
                .plan
                .entries
                .get(entry)
                .map_or(&[][..], |p| &p.pending[..])
            {
                if let PendingReason::Requirement { capability, status } = reason {
                    pending.push((
                        entry.to_string(),
                        capability.to_string(),
                        status.as_str().to_owned(),
                    ));
                }
            }
        }
    }
    (!cycles.is_empty() || !pending.is_empty()).then_some(Refusal { cycles, pending })
}

/// Report a refusal on stderr.
pub(crate) fn report_refusal(ui: &Ui, verb: &str, display: &str, refusal: &Refusal) {
    let mut text = String::new();
    if !refusal.cycles.is_empty() {
        let _ = writeln!(
            text,
            "error: refusing to {verb} `{display}`: {} dependency cycle{}",
            refusal.cycles.len(),
            if refusal.cycles.len() == 1 { "" } else { "s" }
        );
        for c in &refusal.cycles {
            let _ = writeln!(text, "  - {c}");
        }
    }
    if !refusal.pending.is_empty() {
        let _ = writeln!(
            text,
            "error: refusing to {verb} `{display}`: {} pending hard requirement{}",
            refusal.pending.len(),
            if refusal.pending.len() == 1 { "" } else { "s" }
        );
        for (e, c, s) in &refusal.pending {
            let _ = writeln!(text, "  - {e}: {c} ({s})");
        }
    }
    let help = if refusal.cycles.is_empty() {
        format!(
            "  help: fix them (see `chassis check {display}`), or {verb} without the pending entries with --allow-pending"
        )
    } else {
        format!(
            "  help: break the cycle (see `chassis check {display}`); a cycle cannot be published"
        )
    };
    text.push_str(&help);
    if ui.format == Format::Json {
        let code = if refusal.cycles.is_empty() {
            "publish::pending"
        } else {
            "publish::cycle"
        };
        let mut doc = super::super::ui::plain_diagnostic(&text).unwrap_or_default();
        doc["code"] = code.into();
        ui.err(&doc.to_string());
    } else {
        ui.err(&text);
    }
}

/// The action (reference vocabulary) for a decision.
pub(crate) fn action(d: Decision) -> &'static str {
    match d {
        Decision::Added => "add",
        Decision::Removed => "remove",
        Decision::Reused => "reuse",
        Decision::Unchanged | Decision::Rebuilt => "rebuild",
        Decision::Rewired => "rewire",
    }
}

/// Reasons, with `identity_unchanged` for a reuse.
pub(crate) fn reasons(i: &NodeImpact) -> Vec<&'static str> {
    if i.decision == Decision::Reused {
        vec!["identity_unchanged"]
    } else {
        i.reasons.clone()
    }
}

/// One node as `plan` and `publish` print it in JSON (the same shape, so
/// they can be compared).
pub(crate) fn node_json(i: &NodeImpact) -> serde_json::Value {
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
pub(crate) fn counts(impact: &[NodeImpact]) -> BTreeMap<&'static str, usize> {
    let mut out: BTreeMap<&'static str, usize> = [
        "added",
        "removed",
        "reused",
        "rebuilt",
        "rewired",
        "unchanged",
    ]
    .into_iter()
    .map(|k| (k, 0))
    .collect();
    for i in impact {
        *out.entry(decision_name(i.decision)).or_default() += 1;
    }
    out
}

pub(crate) fn counts_text(impact: &[NodeImpact]) -> String {
    let c = counts(impact);
    format!(
        "{} added, {} removed, {} reused, {} rebuilt, {} rewired",
        c["added"],
        c["removed"],
        c["reused"],
        c["rebuilt"] + c["unchanged"],
        c["rewired"]
    )
}

/// The per-node lines of `plan` and `publish`.
pub(crate) fn nodes_text(impact: &[NodeImpact], pending: &[(String, String)]) -> String {
    let width = impact
        .iter()
        .map(|i| i.entry_id.chars().count())
        .chain(pending.iter().map(|(e, _)| e.chars().count()))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for i in impact {
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
    for (e, why) in pending {
        let _ = writeln!(out, "  {:<7}  {e:<width$}  ({why})", "reject");
    }
    out
}

/// Pending entries with their first reason, for `reject` lines.
pub(crate) fn pending_lines(r: &Resolved) -> Vec<(String, String)> {
    r.plan
        .pending
        .iter()
        .map(|e| {
            let why = r
                .plan
                .entries
                .get(e)
                .and_then(|p| p.pending.first())
                .map_or_else(
                    || "pending".to_owned(),
                    |p| match p {
                        PendingReason::Requirement { capability, status } => {
                            format!("pending: {capability} {}", status.as_str())
                        }
                        PendingReason::Cycle { .. } => "dependency_cycle".to_owned(),
                    },
                );
            (e.to_string(), why)
        })
        .collect()
}

/// Render a reconcile failure with its fields (exit 3; a cycle is 1).
pub(crate) fn reconcile_failure(ui: &Ui, e: &ReconcileError) -> ExitStatus {
    let (code, fields) = match e {
        ReconcileError::Cycle { cycles } => {
            ("runtime::cycle", serde_json::json!({ "cycles": cycles }))
        }
        ReconcileError::Instantiate {
            entry,
            error,
            rolled_back,
        } => (
            "runtime::instantiate",
            serde_json::json!({ "entry": entry, "error": error, "rolled_back": rolled_back }),
        ),
        ReconcileError::Setup { error, rolled_back } => (
            "runtime::setup",
            serde_json::json!({
                "plugin": error.plugin,
                "entry": error.entry_id,
                "instance_id": error.instance_id,
                "error": error.error,
                "cleanup_failures": error.cleanup_failures.iter().map(|f| format!("{} -> {}", f.description, f.error)).collect::<Vec<_>>(),
                "rolled_back": rolled_back,
            }),
        ),
        ReconcileError::Contract(c) => (
            "runtime::contract",
            serde_json::to_value(c.as_ref()).unwrap_or_default(),
        ),
        ReconcileError::DuplicateTool {
            tool,
            owners,
            rolled_back,
        } => (
            "runtime::duplicate-tool",
            serde_json::json!({ "tool": tool, "owners": owners, "rolled_back": rolled_back }),
        ),
        ReconcileError::UndeclaredPermission {
            entry,
            tool,
            undeclared,
            rolled_back,
        } => (
            "runtime::undeclared-permission",
            serde_json::json!({ "entry": entry, "tool": tool, "undeclared": undeclared, "rolled_back": rolled_back }),
        ),
        ReconcileError::Snapshot(m) => ("runtime::snapshot", serde_json::json!({ "error": m })),
        ReconcileError::Stopping => ("runtime::stopping", serde_json::json!({})),
    };
    if ui.format == Format::Json {
        ui.err(
            &serde_json::json!({
                "type": "diagnostic",
                "code": code,
                "severity": "error",
                "message": e.to_string(),
                "labels": [],
                "help": [],
                "fields": fields,
            })
            .to_string(),
        );
    } else {
        let mut text = format!("error[{code}]: {e}");
        if let Some(obj) = fields.as_object() {
            let width = obj.keys().map(String::len).max().unwrap_or(0);
            for (k, v) in obj {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Array(a) => format!(
                        "[{}]",
                        a.iter()
                            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    other => other.to_string(),
                };
                let _ = write!(text, "\n  {k:<width$}  {v}");
            }
        }
        text.push_str("\n  nothing was published; the current generation is unchanged");
        ui.err(&text);
    }
    if matches!(e, ReconcileError::Cycle { .. }) {
        ExitStatus::Negative
    } else {
        ExitStatus::Failure
    }
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

/// Run `publish`.
/// The telemetry for `--trace FILE` (safe + redacting around a JSON-lines
/// file), or a tracing bridge (visible with `-vv`) without it.
pub(crate) fn trace_telemetry(
    ui: &Ui,
    trace: Option<&std::path::Path>,
    redactor: &crate::engine::secret::Redactor,
) -> Result<std::sync::Arc<dyn crate::engine::telemetry::Telemetry>, ExitStatus> {
    use crate::engine::telemetry::harness_chain;
    use crate::trace::WarnHookFailures;
    let redactor = redactor.clone();
    // Hook failures as warnings: a JSON line under `--format json`, else a
    // line that clears the spinner first; nothing under `-q`.
    let (json, quiet) = (ui.format == Format::Json, ui.quiet);
    let warn = move |text: &str| {
        if quiet {
        } else if json {
            eprintln!(
                "{}",
                super::super::ui::message_json("warning", Some("runtime::hook-failure"), text, &[])
            );
        } else {
            super::super::spinner::clear_then(&format!("warning: {text}"));
        }
    };
    Ok(match trace {
        Some(path) => {
            let file = crate::trace::JsonLinesTelemetry::create(path).map_err(|e| {
                ui.err(&format!(
                    "error: cannot write the trace `{}`: {e}",
                    path.display()
                ));
                ExitStatus::Input
            })?;
            std::sync::Arc::new(harness_chain(WarnHookFailures::new(file, warn), redactor))
        }
        None => std::sync::Arc::new(harness_chain(
            WarnHookFailures::new(crate::trace::TracingTelemetry::default(), warn),
            redactor,
        )),
    })
}

pub fn run(ui: &Ui, args: &PublishArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "publish")?;
    let redactor = super::super::process_redactor();
    if args.update_lock {
        super::super::lockfile::update_for(ui, &args.file, None, &redactor)?;
    }
    let resolved = load_file(ui, &args.file)?;
    if let Some(r) = refusal(&resolved, args.allow_pending) {
        report_refusal(ui, "publish", &resolved.display, &r);
        return Err(ExitStatus::Negative);
    }
    // The trace file first: a path that cannot be written is refused
    // before a store is created.
    let telemetry = trace_telemetry(ui, args.trace.as_deref(), &redactor)?;
    let path = state_path(args.state.as_deref(), Some(&args.file));
    let mut store = open_store(ui, &path, OpenMode::Create)?;
    if store.created() && !ui.quiet {
        // The advice names the default folder only when the store is in it.
        let in_default = path
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == ".chassis");
        let ignore = if in_default {
            " (add `.chassis/` to .gitignore)"
        } else {
            ""
        };
        ui.err(&format!(
            "note: created the generation store `{}`; keep it out of version control{ignore}",
            path.display()
        ));
    }
    let seed = seed_state(&store).map_err(|e| store_error(ui, &e))?;
    let previous = (seed.sequence > 0)
        .then(|| crate::engine::identity::GenerationId::from_sequence(seed.sequence));
    let fingerprint = store.config_fingerprint();
    let mounts = seed.mounts.clone();
    let rt = runtime().map_err(|e| {
        ui.err(&format!("error: cannot start the runtime: {e}"));
        ExitStatus::Failure
    })?;
    let composition = resolved.composition.clone();
    let options = super::super::workspace::harness_options(ui, telemetry, &redactor, None)?;
    let catalog = super::super::workspace::catalog(
        &args.file,
        &redactor,
        &crate::cli::env::RunEnv::process(),
    );
    let (report, nodes, generation, cleanup) = rt.block_on(async move {
        let harness = Harness::new(catalog, options);
        // A fresh harness has no generation, so seeding cannot fail.
        let _ = harness.seed(seed).await;
        let report = tokio::select! {
            r = harness.reconcile(composition) => Some(r),
            () = super::super::interrupt::signalled() => None,
        };
        let nodes = harness.nodes().await;
        let generation = harness.current();
        let cleanup = harness.shutdown().await;
        (report, nodes, generation, cleanup)
    });
    let Some(report) = report else {
        ui.err("interrupted: nothing was published");
        return Err(ExitStatus::Interrupted);
    };
    for f in &cleanup {
        if !ui.quiet {
            ui.err(&format!(
                "warning: cleanup: {} -> {}",
                f.description, f.error
            ));
        }
    }
    let report = report.map_err(|e| reconcile_failure(ui, &e))?;
    warn_quarantined(ui, &report);
    let Some(generation) = generation else {
        ui.err("error: the reconcile published no generation");
        return Err(ExitStatus::Failure);
    };
    if report.published {
        record_publication(
            ui,
            &mut store,
            &report,
            &nodes,
            &generation,
            previous.clone(),
            mounts,
            &fingerprint,
        )?;
    }
    let d = &generation.digests;
    let pending = pending_lines(&resolved);
    let impact = report.impact.to_vec();
    match ui.format {
        Format::Json => ui.out_json(&serde_json::json!({
            "format_version": 1,
            "action": if report.published { "publish" } else { "no-op" },
            "published": report.published,
            "generation_id": report.generation_id,
            "previous_generation_id": previous.map(|g| g.to_string()),
            "store": path.display().to_string(),
            "impact": counts(&impact),
            "nodes": impact.iter().map(node_json).collect::<Vec<_>>(),
            "pending": pending.iter().map(|(e, _)| e).collect::<Vec<_>>(),
            "digests": {
                "digest": d.digest,
                "semantic_digest": d.semantic_digest,
                "physical_digest": d.physical_digest,
            },
        })),
        _ => {
            let mut out = if report.published {
                format!(
                    "published {}{}\n",
                    report.generation_id,
                    previous
                        .map(|p| format!(" (previous {p})"))
                        .unwrap_or_default()
                )
            } else {
                format!("no change: {} reused\n", report.generation_id)
            };
            let _ = write!(
                out,
                "  store            {}\n  nodes            {}\n  digest           {}\n  semantic_digest  {}\n  physical_digest  {}\n",
                path.display(),
                counts_text(&impact),
                d.digest,
                d.semantic_digest,
                d.physical_digest
            );
            if report.published {
                let _ = write!(out, "\nNODES\n{}", nodes_text(&impact, &pending));
            }
            ui.out(&out);
        }
    }
    Ok(ExitStatus::Success)
}

/// Record a published generation in `store` (one transaction).
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_publication(
    ui: &Ui,
    store: &mut crate::store::SqliteStore,
    report: &crate::runtime::ReconcileReport,
    nodes: &[crate::runtime::harness::SeedNode],
    generation: &crate::runtime::Generation,
    previous: Option<crate::engine::identity::GenerationId>,
    mut mounts: BTreeMap<String, u64>,
    fingerprint: &crate::runtime::harness::ConfigFingerprint,
) -> Result<(), ExitStatus> {
    let snapshot = envelope(&generation.snapshot)
        .map(|c| c.to_json())
        .map_err(|e| {
            ui.err(&format!("error: {e}"));
            ExitStatus::Failure
        })?;
    for n in nodes {
        let m = mounts.entry(n.entry_id.clone()).or_default();
        *m = (*m).max(n.mount);
    }
    let record = PublishRecord {
        generation_id: generation.id.clone(),
        expected_current: previous,
        snapshot,
        digests: generation.digests.clone(),
        nodes: nodes
            .iter()
            .map(|n| StoredNode {
                entry_id: n.entry_id.clone(),
                instance_id: n.instance_id.clone(),
                mount: n.mount,
                identity: StoredIdentity::from_identity(&n.identity, Some(fingerprint)),
            })
            .collect(),
        impact: report
            .impact
            .iter()
            .map(|i| StoredImpact::from(&i))
            .collect(),
        mounts,
    };
    store.publish(record).map_err(|e| store_error(ui, &e))?;
    Ok(())
}

/// Warn about entries quarantined by `on_failure = "skip"`.
pub(crate) fn warn_quarantined(ui: &Ui, report: &crate::runtime::ReconcileReport) {
    if ui.quiet {
        return;
    }
    for (entry, error) in &report.quarantined {
        ui.err(&format!(
            "warning: entry `{entry}` was quarantined (on_failure = \"skip\"): {error}; its consumers are pending"
        ));
    }
}
