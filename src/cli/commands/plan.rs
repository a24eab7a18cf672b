//! `chassis plan`: what `publish` would do, computed without mounting or
//! writing anything.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::engine::model::Composition;
use crate::engine::resolve::Plan;
use crate::engine::tree::ScopeTree;
use crate::runtime::reconcile::predict;
use crate::store::{OpenMode, StoreError, seed_state};

use super::super::exit::ExitStatus;
use super::super::ui::{Format, Ui};
use super::super::workspace::load_file;
use super::generations::{state_path, store_error};
use super::publish::{counts, counts_text, node_json, nodes_text, pending_lines, refusal};

/// Show what `chassis publish` would do, changing nothing.
///
/// The zero-mutation dry run: it resolves FILE, compares every node's
/// identity with the store's current generation and prints, per node, the
/// action (`add`, `remove`, `reuse`, `rebuild`, `rewire`, `reject`) with its
/// reasons, and overall `publish` (with the generation id and digests it
/// would record), `no-op` or `reject`. Nothing is mounted; the store is
/// opened read-only (or not at all when it does not exist yet).
///
/// Exit status: 0 when publish would succeed or change nothing, 1 when it
/// would refuse or fail (pending requirements, a cycle, a secret that is not
/// set), 2 unusable input, 3 a store failure.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis plan composition.toml\n  chassis plan composition.toml --format json"
)]
pub struct PlanArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The store (default `.chassis/state.db` beside FILE).
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
    /// Plan as `publish --allow-pending` would.
    #[arg(long)]
    pub allow_pending: bool,
}

/// Run `plan`.
pub fn run(ui: &Ui, args: &PlanArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "plan")?;
    let resolved = load_file(ui, &args.file)?;
    let path = state_path(args.state.as_deref(), Some(&args.file));
    let pending = pending_lines(&resolved);
    if let Some(r) = refusal(&resolved, args.allow_pending) {
        match ui.format {
            Format::Json => {
                let mut doc = serde_json::json!({
                    "format_version": 1,
                    "action": "reject",
                    "store": path.display().to_string(),
                    "pending": pending.iter().map(|(e, _)| e).collect::<Vec<_>>(),
                });
                doc["refusal"] = r.json();
                ui.out_json(&doc);
            }
            _ => {
                let mut out = format!("plan: reject ({})\n", r.reason());
                for c in &r.cycles {
                    let _ = writeln!(out, "  cycle    {c}");
                }
                if r.cycles.is_empty() {
                    let _ = write!(out, "\nACTIONS\n{}", nodes_text(&[], &pending));
                    out.push_str(
                        "\npublish would refuse; --allow-pending publishes without them\n",
                    );
                } else {
                    out.push_str("\npublish would refuse: a cycle cannot be published\n");
                }
                ui.out(&out);
            }
        }
        return Ok(ExitStatus::Negative);
    }
    let seed = match crate::store::open(&path, OpenMode::ReadOnly) {
        Ok(store) => Some(seed_state(&store).map_err(|e| store_error(ui, &e))?),
        Err(StoreError::Missing { .. }) => None,
        Err(e) => return Err(store_error(ui, &e)),
    };
    let against = seed
        .as_ref()
        .filter(|s| s.sequence > 0)
        .map(|s| crate::engine::identity::GenerationId::from_sequence(s.sequence).to_string());
    // Secret values enter node identities, as at publication.
    let secrets =
        super::super::workspace::secret_provider(ui, &super::super::process_redactor(), None)?;
    // A secret that is not set fails publish's mount: say so rather than
    // predict a changed identity from its absence.
    let mut missing: Vec<(String, String)> = resolved
        .plan
        .activation_order
        .iter()
        .filter_map(|id| resolved.composition.entries.get(id))
        .flat_map(|e| {
            e.config
                .secret_refs()
                .into_iter()
                .map(move |r| (r.name.clone(), e.id.to_string()))
        })
        .filter(|(name, _)| secrets.get(name).is_err())
        .collect();
    missing.sort();
    missing.dedup();
    // An entry with `on_failure = "skip"` that governs no scope would be
    // quarantined by publish, not fail it: predict without it.
    let skippable = |entry: &str| {
        crate::engine::model::EntryId::new(entry)
            .is_ok_and(|id| resolved.composition.quarantines_on_failure(&id))
    };
    let (quarantined, missing): (Vec<_>, Vec<_>) =
        missing.into_iter().partition(|(_, entry)| skippable(entry));
    if !missing.is_empty() {
        match ui.format {
            Format::Json => ui.out_json(&serde_json::json!({
                "format_version": 1,
                "action": "reject",
                "reason": "missing_secret",
                "store": path.display().to_string(),
                "missing_secrets": missing
                    .iter()
                    .map(|(name, entry)| serde_json::json!({ "secret": name, "entry": entry }))
                    .collect::<Vec<_>>(),
            })),
            _ => {
                let mut out = String::from("plan: reject (missing secret)\n");
                for (name, entry) in &missing {
                    let _ = writeln!(out, "  secret   `{name}` of entry `{entry}` is not set");
                }
                out.push_str(
                    "\npublish would fail mounting it: set the variable in the environment\n",
                );
                ui.out(&out);
            }
        }
        return Ok(ExitStatus::Negative);
    }
    let without: Option<(Composition, ScopeTree, Plan)> = (!quarantined.is_empty()).then(|| {
        let mut composition = resolved.composition.clone();
        for (_, entry) in &quarantined {
            if let Ok(id) = crate::engine::model::EntryId::new(entry) {
                composition.entries.remove(&id);
                // What publish records: the entry failed to instantiate
                // (its configuration's secret could not be read).
                composition
                    .quarantined
                    .insert(id, "instantiate_failed".to_owned());
            }
        }
        let tree = ScopeTree::new(&composition);
        let plan = crate::engine::resolve::resolve_with_tree(&composition, &tree);
        (composition, tree, plan)
    });
    let (composition, tree, plan) = without.as_ref().map_or(
        (&resolved.composition, &resolved.tree, &resolved.plan),
        |(c, t, p)| (c, t, p),
    );
    let prediction = match predict(
        composition,
        tree,
        plan,
        seed.as_ref(),
        Some(secrets.as_ref()),
    ) {
        Ok(p) => p,
        Err(e) => return Err(super::publish::reconcile_failure(ui, &e)),
    };
    let action = if prediction.published {
        "publish"
    } else {
        "no-op"
    };
    let d = &prediction.digests;
    match ui.format {
        Format::Json => ui.out_json(&serde_json::json!({
            "format_version": 1,
            "action": action,
            "reason": if prediction.published { "changes" } else { "no_change" },
            "generation_id": prediction.generation_id,
            "previous_generation_id": against,
            "store": path.display().to_string(),
            "store_exists": seed.is_some(),
            "impact": counts(&prediction.impact),
            "nodes": prediction.impact.iter().map(node_json).collect::<Vec<_>>(),
            "pending": pending.iter().map(|(e, _)| e).collect::<Vec<_>>(),
            "quarantined": quarantined
                .iter()
                .map(|(name, entry)| serde_json::json!({ "entry": entry, "missing_secret": name }))
                .collect::<Vec<_>>(),
            "digests": {
                "digest": d.digest,
                "semantic_digest": d.semantic_digest,
                "physical_digest": d.physical_digest,
            },
        })),
        _ => {
            let mut out = if prediction.published {
                format!(
                    "plan: publish {}{}\n",
                    prediction.generation_id,
                    against
                        .as_ref()
                        .map_or_else(|| " (new store)".to_owned(), |a| format!(" (previous {a})"))
                )
            } else {
                format!("plan: no-op ({} reused)\n", prediction.generation_id)
            };
            let _ = write!(
                out,
                "  store            {}{}\n  nodes            {}\n  digest           {}\n  semantic_digest  {}\n",
                path.display(),
                if seed.is_some() {
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
                nodes_text(&prediction.impact, &pending)
            );
            for (name, entry) in &quarantined {
                let _ = writeln!(
                    out,
                    "  quarantine  {entry}  (secret `{name}` is not set; on_failure = \"skip\")"
                );
            }
            ui.out(&out);
        }
    }
    Ok(ExitStatus::Success)
}
