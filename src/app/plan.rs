//! `plan`: what `publish` would do, computed without mounting or writing
//! anything (the store is opened read-only, or not at all when absent).

use std::path::PathBuf;

use crate::engine::agent::agents_metadata;
use crate::engine::diff::{Change, agent_changes};
use crate::engine::model::{Composition, EntryId};
use crate::engine::resolve::{Plan, resolve_with_tree};
use crate::engine::tree::ScopeTree;
use crate::runtime::reconcile::{Prediction, predict};
use crate::store::OpenMode;

use super::caller::Caller;
use super::env::RunEnv;
use super::error::AppError;
use super::refusal::{PendingEntry, Refusal, pending_entries};
use super::state::{lineage_of, load_beside_seed, previous_of, read_seed, state_path_of};
use super::workspace::Workspace;

/// What to plan.
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// The composition.
    pub file: PathBuf,
    /// The store (default: the composition's `[store] path`, else
    /// `.chassis/state.db` beside `file`).
    pub state: Option<PathBuf>,
    /// Plan as `publish --allow-pending` would.
    pub allow_pending: bool,
}

/// What `publish` would do.
pub enum PlanOutcome {
    /// It would refuse the composition (a cycle, pending requirements).
    Refused {
        /// The store.
        store: PathBuf,
        /// Pending entries with their first reason.
        pending: Vec<PendingEntry>,
        /// Why.
        refusal: Refusal,
    },
    /// It would fail mounting an entry whose secret is not set, or is too
    /// short to be redacted.
    MissingSecrets {
        /// The store.
        store: PathBuf,
        /// Each unusable secret, sorted by name then entry.
        missing: Vec<UnusableSecret>,
    },
    /// It would publish, or change nothing.
    Planned(Box<Planned>),
}

/// A secret the configuration references that publish could not use.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnusableSecret {
    /// The secret's name.
    pub secret: String,
    /// The entry whose configuration references it.
    pub entry: String,
    /// Why (`missing`, `empty`, `too_short`, …).
    pub kind: &'static str,
    /// The whole reason, naming the provider and variable (never a value).
    pub message: String,
}

impl PlanOutcome {
    /// Whether publish would refuse or fail.
    pub fn is_negative(&self) -> bool {
        !matches!(self, PlanOutcome::Planned(_))
    }
}

/// A publication (or no-op) foreseen.
pub struct Planned {
    /// The store.
    pub store: PathBuf,
    /// Whether the store exists yet.
    pub store_exists: bool,
    /// The generation it is computed against.
    pub previous: Option<String>,
    /// Per-node actions, generation id and digests.
    pub prediction: Prediction,
    /// Pending entries with their first reason (left out).
    pub pending: Vec<PendingEntry>,
    /// Secrets of entries `on_failure = "skip"` would quarantine.
    pub quarantined: Vec<UnusableSecret>,
    /// How the agents would change (a row per agent added, removed or
    /// changed, naming the fields).
    pub agents: Vec<Change>,
    /// What it was computed from.
    pub inputs: PlanInputs,
}

/// The load and the stored state a plan was computed from: a one-shot
/// caller may keep them until the process exits rather than free a
/// 100,000-entry composition entry by entry (a tenth of `plan` on as many
/// built-in entries).
pub struct PlanInputs {
    _workspace: Workspace,
    _seed: Option<crate::runtime::harness::SeedState>,
}

/// Plan the publication of `options.file`.
pub fn plan(options: &PlanOptions, caller: &Caller) -> Result<PlanOutcome, AppError> {
    // The store is read beside the load, and used when the composition
    // keeps it where the guess looked and the peek succeeded; read again,
    // as before, otherwise. A plan reads without a lock: the store may
    // change a moment later just as well.
    let (ws, peeked) = load_beside_seed(
        &options.file,
        options.state.as_deref(),
        &RunEnv::process(),
        &*caller.reporter,
    );
    let ws = ws?;
    let store = state_path_of(
        options.state.as_deref(),
        &options.file,
        &ws.composition.host,
    );
    let pending = pending_entries(&ws.plan);
    if let Some(refusal) = ws.refusal(options.allow_pending, &*caller.reporter) {
        return Ok(PlanOutcome::Refused {
            store,
            pending,
            refusal,
        });
    }
    let lineage = lineage_of(&options.file, &ws.composition.host, &store);
    let (seed, current_agents) = match peeked.of(&store, &lineage) {
        Some(read) => read,
        None => read_seed(&store, &lineage, OpenMode::ReadOnly)?,
    };
    let previous = seed.as_ref().and_then(previous_of).map(|g| g.to_string());
    // Secret values enter node identities, as at publication.
    let secrets = super::mount::secret_provider(&caller.redactor, &RunEnv::process());
    // A secret that is not set fails publish's mount: say so rather than
    // predict a changed identity from its absence.
    let mut missing: Vec<UnusableSecret> = ws
        .plan
        .activation_order
        .iter()
        .filter_map(|id| ws.composition.entries.get(id))
        .flat_map(|e| {
            e.config
                .secret_refs()
                .into_iter()
                .map(move |r| (r.name.clone(), e.id.to_string()))
        })
        .filter_map(|(secret, entry)| {
            let e = secrets.get(&secret).err()?;
            Some(UnusableSecret {
                secret,
                entry,
                kind: e.kind.as_str(),
                message: e.to_string(),
            })
        })
        .collect();
    missing.sort();
    missing.dedup();
    // An entry with `on_failure = "skip"` that governs no scope would be
    // quarantined by publish, not fail it: predict without it.
    let skippable = |entry: &str| {
        EntryId::new(entry).is_ok_and(|id| ws.composition.quarantines_on_failure(&id))
    };
    let (quarantined, missing): (Vec<_>, Vec<_>) =
        missing.into_iter().partition(|m| skippable(&m.entry));
    if !missing.is_empty() {
        return Ok(PlanOutcome::MissingSecrets { store, missing });
    }
    let without = (!quarantined.is_empty()).then(|| without_quarantined(&ws, &quarantined));
    let (composition, tree, plan) = without
        .as_ref()
        .map_or((&ws.composition, &*ws.tree, &*ws.plan), |(c, t, p)| {
            (c, t, p)
        });
    let prediction = predict(
        composition,
        tree,
        plan,
        seed.as_ref(),
        Some(secrets.as_ref()),
        // What implements each entry, as publish's harness names it.
        &super::mount::catalog(&options.file, &caller.redactor, &RunEnv::process()).0,
    )?;
    let agents = agents_metadata(&ws.composition).map_err(|e| AppError::input(e.to_string()))?;
    Ok(PlanOutcome::Planned(Box::new(Planned {
        store,
        store_exists: seed.is_some(),
        previous,
        prediction,
        pending,
        quarantined,
        agents: agent_changes(current_agents.as_ref(), agents.as_ref(), false),
        inputs: PlanInputs {
            _workspace: ws,
            _seed: seed,
        },
    })))
}

/// The composition without the entries publish would quarantine, as
/// publish records them: failed to instantiate (their configuration's
/// secret could not be read).
fn without_quarantined(
    ws: &Workspace,
    quarantined: &[UnusableSecret],
) -> (Composition, ScopeTree, Plan) {
    let mut composition = ws.composition.clone();
    for q in quarantined {
        if let Ok(id) = EntryId::new(&q.entry) {
            composition.entries.remove(&id);
            composition
                .quarantined
                .insert(id, "instantiate_failed".to_owned());
        }
    }
    let tree = ScopeTree::new(&composition);
    let plan = resolve_with_tree(&composition, &tree);
    (composition, tree, plan)
}
