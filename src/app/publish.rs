//! `publish`: reconcile a composition against the store's current
//! generation and record the new generation (or report reuse).

use std::path::PathBuf;

use crate::engine::agent::AGENTS;
use crate::engine::canonical::Canon;
use crate::engine::diff::{Change, agent_changes};
use crate::engine::identity::GenerationId;
use crate::engine::snapshot::Digests;
use crate::runtime::harness::SeedState;
use crate::runtime::identity::NodeImpact;
use crate::runtime::{Harness, ReconcileReport};

use super::caller::Caller;
use super::env::RunEnv;
use super::error::AppError;
use super::refusal::{PendingEntry, pending_entries};
use super::report::Notice;
use super::state::{
    Publication, StateStore, load_beside_seed, open_to_publish, previous_of, state_path_of,
};

/// What to publish.
#[derive(Clone, Debug)]
pub struct PublishOptions {
    /// The composition.
    pub file: PathBuf,
    /// The store (default: the composition's `[store] path`, else
    /// `.chassis/state.db` beside `file`).
    pub state: Option<PathBuf>,
    /// Publish without the pending entries instead of refusing.
    pub allow_pending: bool,
    /// Write every telemetry signal (redacted) here as JSON lines.
    pub trace: Option<PathBuf>,
    /// Start the `mcp` servers first and pin what they offer in
    /// `chassis.lock`.
    pub update_lock: bool,
}

/// A publication, or the generation it left current.
pub struct Published {
    /// Whether a new generation was recorded (false: no change).
    pub published: bool,
    /// The generation now current.
    pub generation_id: String,
    /// The generation it was computed against.
    pub previous: Option<GenerationId>,
    /// The store.
    pub store: PathBuf,
    /// Per-node impact, by entry id.
    pub impact: Vec<NodeImpact>,
    /// Pending entries left out, with their first reason.
    pub pending: Vec<PendingEntry>,
    /// The current generation's digests.
    pub digests: Digests,
    /// How the agents changed (a row per agent added, removed or changed,
    /// naming the fields).
    pub agents: Vec<Change>,
    /// What it was computed from.
    pub inputs: PublishInputs,
}

/// The composition, scope tree and plan of the generation a publication
/// left current (plain data, no instance): a one-shot caller may keep them
/// until the process exits rather than free a 100,000-entry composition
/// entry by entry (a twelfth of `publish` on as many built-in entries).
pub struct PublishInputs {
    _composition: std::sync::Arc<crate::engine::model::Composition>,
    _tree: std::sync::Arc<crate::engine::tree::ScopeTree>,
    _plan: std::sync::Arc<crate::engine::resolve::Plan>,
}

/// Publish `options.file` into its store.
pub async fn publish(options: &PublishOptions, caller: &Caller) -> Result<Published, AppError> {
    let env = RunEnv::process();
    if options.update_lock {
        super::lock::update_for(&options.file, &env, caller).await?;
    }
    // The store is read beside the load, as `plan` reads it; that read is
    // used once the store is open to publish, when the guess was right and
    // it is still the lineage's head, and made again otherwise.
    let (ws, peeked) = load_beside_seed(
        &options.file,
        options.state.as_deref(),
        &env,
        &*caller.reporter,
    );
    let ws = ws?;
    if let Some(refusal) = ws.refusal(options.allow_pending, &*caller.reporter) {
        return Err(AppError::Refused {
            verb: "publish",
            display: ws.display,
            refusal,
        });
    }
    // The trace file first: a path that cannot be written is refused
    // before a store is created.
    let telemetry = super::telemetry::for_operation(options.trace.as_deref(), caller)?;
    let path = state_path_of(
        options.state.as_deref(),
        &options.file,
        &ws.composition.host,
    );
    let mut store = open_to_publish(
        &path,
        &options.file,
        &ws.composition.host,
        std::sync::Arc::clone(&caller.reporter),
    )?;
    let peeked = match peeked.of(&path, store.lineage()) {
        Some((Some(seed), agents)) => Some((seed, agents)),
        _ => None,
    };
    match publish_into(&mut store, peeked, ws, telemetry, &env, options, caller).await {
        Ok(published) => {
            if store.created() {
                caller.notice(Notice::StoreCreated {
                    path: &path,
                    in_default_folder: store.in_default_folder(),
                });
            }
            Ok(published)
        }
        Err(e) => {
            // A first publish that fails leaves no store behind.
            store.discard_if_unused();
            Err(e)
        }
    }
}

/// [`publish`] once its store is open.
async fn publish_into(
    store: &mut StateStore,
    peeked: Option<(SeedState, Option<Canon>)>,
    ws: super::workspace::Workspace,
    telemetry: std::sync::Arc<dyn crate::engine::telemetry::Telemetry>,
    env: &RunEnv,
    options: &PublishOptions,
    caller: &Caller,
) -> Result<Published, AppError> {
    let path = store.path().to_path_buf();
    let (seed, agents_before) = match peeked {
        Some((seed, agents)) if store.still_current(&seed)? => (seed, agents),
        _ => store.seed_and_agents()?,
    };
    let previous = previous_of(&seed);
    let mounts = seed.mounts.clone();
    // This harness publishes once and shuts down: an entry whose mount
    // would only restate its manifest is placed without mounting.
    let harness_options = crate::runtime::HarnessOptions {
        publish_only: true,
        ..super::mount::harness_options(telemetry, &caller.redactor, env)
    };
    let (catalog, _) = super::mount::catalog(&options.file, &caller.redactor, env);
    let harness = Harness::new(catalog, harness_options);
    // A fresh harness has no generation, so seeding cannot fail.
    let _ = harness.seed(seed).await;
    // The load resolved the composition: the harness takes its tree and
    // plan rather than building them again.
    let pending = pending_entries(&ws.plan);
    let super::workspace::Workspace {
        composition,
        tree,
        plan,
        ..
    } = ws;
    let resolved = harness.reconcile_resolved(composition, tree, plan);
    // Interrupted, the setups in flight are cancelled, not waited for.
    let report = harness
        .unless_interrupted(resolved, caller.interrupt.wait())
        .await;
    let nodes = harness.nodes().await;
    let generation = harness.current();
    let cleanup = harness.shutdown().await;
    let Some(report) = report else {
        return Err(AppError::Interrupted("nothing was published"));
    };
    for f in &cleanup {
        caller.notice(Notice::CleanupFailed {
            description: &f.description,
            error: &f.error,
        });
    }
    let report = report?;
    notice_quarantined(caller, &report);
    let Some(generation) = generation else {
        return Err(AppError::failure("the reconcile published no generation"));
    };
    // Another publish of the same composition may have recorded this very
    // generation first: then this one changes nothing, like a publish
    // made after it.
    let recorded = report.published
        && store.record_publication(Publication {
            report: &report,
            nodes: &nodes,
            generation: &generation,
            previous: previous.clone(),
            mounts,
        })?;
    let (previous, impact) = if report.published && !recorded {
        (
            GenerationId::parse(&report.generation_id),
            report
                .impact
                .iter()
                .filter_map(|i| {
                    let id = i.new_instance_id.clone()?;
                    Some(NodeImpact::reused(i.entry_id.clone(), id))
                })
                .collect(),
        )
    } else {
        (previous, report.impact.to_vec())
    };
    let agents = if recorded {
        agent_changes(
            agents_before.as_ref(),
            generation.snapshot.metadata.get(AGENTS),
            false,
        )
    } else {
        Vec::new()
    };
    Ok(Published {
        agents,
        published: recorded,
        generation_id: report.generation_id.clone(),
        previous,
        store: path,
        impact,
        pending,
        digests: generation.digests.clone(),
        inputs: PublishInputs {
            _composition: std::sync::Arc::clone(&generation.composition),
            _tree: std::sync::Arc::clone(&generation.tree),
            _plan: std::sync::Arc::clone(&generation.plan),
        },
    })
}

/// Say which entries `on_failure = "skip"` left out.
pub(crate) fn notice_quarantined(caller: &Caller, report: &ReconcileReport) {
    for (entry, error) in &report.quarantined {
        caller.notice(Notice::Quarantined { entry, error });
    }
}
