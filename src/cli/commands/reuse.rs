//! `chassis explain reuse`: why a node was reused, rebuilt or rewired
//! between two stored generations; and the NODES section `diff
//! generations` gains when both operands are stored generations.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::engine::diag::did_you_mean;
use crate::engine::identity::GenerationId;
use crate::engine::snapshot::parse_document;
use crate::runtime::identity::changes;
use crate::store::{OpenMode, SqliteStore, StoredGeneration, StoredIdentity};

use super::super::exit::ExitStatus;
use super::super::ui::{Format, Ui};
use super::super::workspace::Operand;
use super::generations::{load_generation, open_store, state_path};

/// `explain reuse` arguments.
#[derive(Debug, clap::Args)]
pub struct ReuseArgs {
    /// The older generation (`gen_0001`).
    pub old: String,
    /// The newer generation (`gen_0002`).
    pub new: String,
    /// The node (entry id).
    pub node: String,
    /// The store (default `.chassis/state.db` in the current directory).
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
}

/// How one node changed between two stored generations.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NodeChange {
    /// Entry id.
    pub entry_id: String,
    /// `reused`, `rebuilt`, `rewired`, `unchanged`, `added`, `removed`.
    pub kind: &'static str,
    /// Reasons (`config_changed`, …).
    pub reasons: Vec<&'static str>,
    /// Old instance id.
    pub old_instance_id: Option<String>,
    /// New instance id.
    pub new_instance_id: Option<String>,
}

/// Compare `entry` in two generations.
pub fn node_change(
    old: &StoredGeneration,
    new: &StoredGeneration,
    entry: &str,
) -> Option<NodeChange> {
    let (a, b) = (old.node(entry), new.node(entry));
    let (kind, reasons) = match (a, b) {
        (None, None) => return None,
        (None, Some(_)) => ("added", vec!["entry_added"]),
        (Some(_), None) => ("removed", vec!["entry_removed"]),
        (Some(a), Some(b)) => {
            let reasons = changes(&a.identity.to_identity(), &b.identity.to_identity());
            if a.instance_id == b.instance_id {
                ("reused", reasons)
            } else if reasons.is_empty() {
                ("unchanged", vec!["instance_inactive"])
            } else if reasons == ["dependency_changed"] {
                ("rewired", reasons)
            } else {
                ("rebuilt", reasons)
            }
        }
    };
    Some(NodeChange {
        entry_id: entry.to_owned(),
        kind,
        reasons,
        old_instance_id: a.map(|n| n.instance_id.clone()),
        new_instance_id: b.map(|n| n.instance_id.clone()),
    })
}

/// Every node of either generation, by entry id.
pub fn node_changes(old: &StoredGeneration, new: &StoredGeneration) -> Vec<NodeChange> {
    let mut entries: Vec<&str> = old
        .nodes
        .iter()
        .chain(&new.nodes)
        .map(|n| n.entry_id.as_str())
        .collect();
    entries.sort_unstable();
    entries.dedup();
    entries
        .into_iter()
        .filter_map(|e| node_change(old, new, e))
        .collect()
}

fn marker(kind: &str) -> char {
    match kind {
        "added" => '+',
        "removed" => '-',
        "reused" => '=',
        "rewired" => '>',
        _ => '~',
    }
}

fn instances(c: &NodeChange) -> String {
    match (&c.old_instance_id, &c.new_instance_id) {
        (Some(a), Some(b)) if a == b => a.clone(),
        (Some(a), Some(b)) => format!("{a} -> {b}"),
        (Some(a), None) => a.clone(),
        (None, Some(b)) => b.clone(),
        (None, None) => String::new(),
    }
}

/// The NODES section in text.
pub fn nodes_text(changes: &[NodeChange]) -> String {
    let width = changes
        .iter()
        .map(|c| c.entry_id.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::from("\nNODES\n");
    for c in changes {
        let reasons = if c.reasons.is_empty() {
            String::new()
        } else {
            format!("  ({})", c.reasons.join(","))
        };
        let line = format!(
            "  {} {:<width$}  {:<9} {}{reasons}",
            marker(c.kind),
            c.entry_id,
            c.kind,
            instances(c)
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// The NODES section in markdown.
pub fn nodes_markdown(changes: &[NodeChange]) -> String {
    let mut out = String::from(
        "\n#### Nodes\n\n| | node | kind | instance | reasons |\n|---|---|---|---|---|\n",
    );
    for c in changes {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | `{}` | {} |",
            marker(c.kind),
            c.entry_id,
            c.kind,
            instances(c),
            c.reasons.join(", ")
        );
    }
    out
}

/// A `diff generations` operand that names a stored generation: a
/// `gen_NNNN` that is not an existing file. `Ok(None)` when it is not one.
pub fn store_operand(
    ui: &Ui,
    operand: &str,
    state: Option<&Path>,
    store: &mut Option<SqliteStore>,
) -> Result<Option<(Operand, StoredGeneration)>, ExitStatus> {
    if Path::new(operand).exists() || GenerationId::parse(operand).is_none() {
        return Ok(None);
    }
    if store.is_none() {
        *store = Some(open_store(
            ui,
            &state_path(state, None),
            OpenMode::ReadOnly,
        )?);
    }
    let Some(opened) = store.as_ref() else {
        return Err(ExitStatus::Failure);
    };
    let g = load_generation(ui, opened, operand)?;
    let env = parse_document(&g.snapshot).map_err(|e| {
        ui.err(&format!(
            "error[store::not-a-store]: the snapshot of {operand} cannot be read: {}",
            e.message
        ));
        ExitStatus::Failure
    })?;
    Ok(Some((
        Operand {
            snapshot: env.snapshot,
            display: operand.to_owned(),
            label: operand.to_owned(),
        },
        g,
    )))
}

fn part(a: &StoredIdentity, b: &StoredIdentity) -> [(&'static str, bool, &'static str); 5] {
    [
        (
            "implementation",
            a.implementation == b.implementation,
            "implementation_changed",
        ),
        (
            "contracts",
            a.contracts == b.contracts,
            "capability_contract_changed",
        ),
        ("config", a.config == b.config, "config_changed"),
        ("scope", a.scope == b.scope, "scope_visibility_changed"),
        (
            "dependencies",
            a.dependencies == b.dependencies,
            "dependency_changed",
        ),
    ]
}

/// Run `explain reuse`.
pub fn run(ui: &Ui, args: &ReuseArgs) -> Result<ExitStatus, ExitStatus> {
    let path = state_path(args.state.as_deref(), None);
    let store = open_store(ui, &path, OpenMode::ReadOnly)?;
    let old = load_generation(ui, &store, &args.old)?;
    let new = load_generation(ui, &store, &args.new)?;
    let Some(change) = node_change(&old, &new, &args.node) else {
        let mut known: Vec<&str> = old
            .nodes
            .iter()
            .chain(&new.nodes)
            .map(|n| n.entry_id.as_str())
            .collect();
        known.sort_unstable();
        known.dedup();
        let hint = did_you_mean(&args.node, known.iter().copied())
            .map(|s| format!("\n  help: did you mean `{s}`?"))
            .unwrap_or_else(|| format!("\n  help: its nodes are {}", known.join(", ")));
        ui.err(&format!(
            "error: no node `{}` in {} or {}{hint}",
            args.node, args.old, args.new
        ));
        return Err(ExitStatus::Input);
    };
    let parts = match (old.node(&args.node), new.node(&args.node)) {
        (Some(a), Some(b)) => Some(part(&a.identity, &b.identity)),
        _ => None,
    };
    if ui.format == Format::Json {
        let mut doc = serde_json::to_value(&change).unwrap_or_default();
        doc["format_version"] = 1.into();
        doc["old_generation_id"] = args.old.clone().into();
        doc["new_generation_id"] = args.new.clone().into();
        if let Some(parts) = parts {
            doc["identity"] = parts
                .iter()
                .map(|(name, same, _)| {
                    (
                        (*name).to_owned(),
                        serde_json::Value::from(if *same { "same" } else { "changed" }),
                    )
                })
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        ui.out_json(&doc);
        return Ok(ExitStatus::Success);
    }
    let mut out = format!(
        "{}: {} -> {}: {}\n  instance        {}\n",
        change.entry_id,
        args.old,
        args.new,
        change.kind,
        instances(&change)
    );
    if let Some(parts) = parts {
        for (name, same, reason) in parts {
            let _ = writeln!(
                out,
                "  {name:<15} {}",
                if same {
                    "same".to_owned()
                } else {
                    format!("changed ({reason})")
                }
            );
        }
    }
    let because = match change.kind {
        "reused" => "every identity part is the same, so the instance id carried over (mounted afresh in each process)".to_owned(),
        "added" => format!("it is not in {}", args.old),
        "removed" => format!("it is not in {}", args.new),
        "rewired" => "only its bindings changed (a provider it binds got a new instance), so it was mounted afresh with a new instance id".to_owned(),
        _ => format!("its identity changed ({}), so it was mounted afresh with a new instance id", change.reasons.join(", ")),
    };
    let _ = writeln!(out, "\n{because}");
    ui.out(&out);
    Ok(ExitStatus::Success)
}
