//! `chassis generations`: the generations a store holds. Also the helpers
//! every store-opening command shares (where the store is, opening it,
//! reporting its errors).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::engine::identity::GenerationId;
use crate::store::{
    DEFAULT_STATE, GenerationSummary, OpenMode, SqliteStore, Store, StoreError, StoredGeneration,
};

use super::super::exit::ExitStatus;
use super::super::ui::{Format, Ui};

/// What to show.
#[derive(Debug, clap::Subcommand)]
pub enum GenerationsCommand {
    /// Every published generation, oldest first.
    #[command(
        after_long_help = "Examples:\n  chassis generations list\n  chassis generations list --state deploy/.chassis/state.db --format json"
    )]
    List {
        /// The store (default `.chassis/state.db` in the current directory).
        #[arg(long, value_name = "PATH")]
        state: Option<PathBuf>,
    },
    /// One generation: digests, nodes (entry, instance id, mount, identity
    /// hashes) and what its publish did to each node.
    #[command(
        after_long_help = "Examples:\n  chassis generations show gen_0002\n  chassis generations show gen_0001 --format json"
    )]
    Show {
        /// Generation id (`gen_0001`).
        id: String,
        /// The store (default `.chassis/state.db` in the current directory).
        #[arg(long, value_name = "PATH")]
        state: Option<PathBuf>,
    },
}

/// The store path: `--state`, else `.chassis/state.db` beside `file` (or in
/// the current directory).
pub(crate) fn state_path(state: Option<&Path>, file: Option<&Path>) -> PathBuf {
    match (state, file) {
        (Some(s), _) => s.to_path_buf(),
        (None, Some(f)) => crate::store::default_path(f),
        (None, None) => PathBuf::from(DEFAULT_STATE),
    }
}

/// Report a store error (`error[store::…]`) and map it to an exit status:
/// a missing store is unusable input (2), anything else a failure (3).
pub(crate) fn store_error(ui: &Ui, e: &StoreError) -> ExitStatus {
    let status = match e {
        StoreError::Missing { .. } => ExitStatus::Input,
        _ => ExitStatus::Failure,
    };
    if ui.format == Format::Json {
        let help: Vec<String> = e.help().into_iter().map(Into::into).collect();
        ui.err(
            &super::super::ui::message_json("error", Some(e.code()), &e.to_string(), &help)
                .to_string(),
        );
    } else {
        let mut text = format!("error[{}]: {e}", e.code());
        if let Some(help) = e.help() {
            let _ = write!(text, "\n  help: {help}");
        }
        ui.err(&text);
    }
    status
}

/// Open the store at `path`, reporting errors.
pub(crate) fn open_store(ui: &Ui, path: &Path, mode: OpenMode) -> Result<SqliteStore, ExitStatus> {
    crate::store::open(path, mode).map_err(|e| store_error(ui, &e))
}

/// Parse a generation id operand, reporting a bad one (exit 2).
pub(crate) fn parse_id(ui: &Ui, id: &str) -> Result<GenerationId, ExitStatus> {
    GenerationId::parse(id).ok_or_else(|| {
        ui.err(&format!(
            "error: `{id}` is not a generation id\n  help: generation ids look like `gen_0001` (see `chassis generations list`)"
        ));
        ExitStatus::Input
    })
}

/// Load generation `id`, reporting an unknown one (exit 2).
pub(crate) fn load_generation(
    ui: &Ui,
    store: &dyn Store,
    id: &str,
) -> Result<StoredGeneration, ExitStatus> {
    let parsed = parse_id(ui, id)?;
    match store.generation(&parsed) {
        Ok(Some(g)) => Ok(g),
        Ok(None) => {
            let known: Vec<String> = store
                .list()
                .map(|l| l.into_iter().map(|g| g.id).collect())
                .unwrap_or_default();
            let range = match (known.first(), known.last()) {
                (Some(a), Some(b)) if a != b => format!("{a} … {b}"),
                (Some(a), _) => a.clone(),
                _ => "none".into(),
            };
            ui.err(&format!(
                "error: the store `{}` has no generation `{id}`\n  help: it holds {range}",
                store.location()
            ));
            Err(ExitStatus::Input)
        }
        Err(e) => Err(store_error(ui, &e)),
    }
}

/// The first 12 hex digits of a digest.
pub(crate) fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

fn summary_json(g: &GenerationSummary) -> serde_json::Value {
    serde_json::json!({
        "id": g.id,
        "sequence": g.sequence,
        "state": g.state,
        "created_at": g.created_at,
        "nodes": g.nodes,
        "semantic_digest": g.semantic_digest,
        "digest": g.digest,
    })
}

/// Run `generations`.
pub fn run(ui: &Ui, cmd: &GenerationsCommand) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "generations")?;
    match cmd {
        GenerationsCommand::List { state } => {
            let path = state_path(state.as_deref(), None);
            let store = open_store(ui, &path, OpenMode::ReadOnly)?;
            let list = store.list().map_err(|e| store_error(ui, &e))?;
            if ui.format == Format::Json {
                ui.out_json(&serde_json::json!({
                    "format_version": 1,
                    "store": path.display().to_string(),
                    "generations": list.iter().map(summary_json).collect::<Vec<_>>(),
                }));
                return Ok(ExitStatus::Success);
            }
            if list.is_empty() {
                ui.out(&format!("no generations in `{}`", path.display()));
                return Ok(ExitStatus::Success);
            }
            let mut out = String::from(
                "ID        STATE       CREATED               NODES  SEMANTIC      DIGEST\n",
            );
            for g in &list {
                let _ = writeln!(
                    out,
                    "{:<9} {:<11} {:<21} {:<6} {:<13} {}",
                    g.id,
                    g.state,
                    g.created_at,
                    g.nodes,
                    short(&g.semantic_digest),
                    short(&g.digest)
                );
            }
            ui.out(&out);
            Ok(ExitStatus::Success)
        }
        GenerationsCommand::Show { id, state } => {
            let path = state_path(state.as_deref(), None);
            let store = open_store(ui, &path, OpenMode::ReadOnly)?;
            let g = load_generation(ui, &store, id)?;
            if ui.format == Format::Json {
                let mut doc = summary_json(&g.summary);
                doc["format_version"] = 1.into();
                doc["physical_digest"] = g.physical_digest.clone().into();
                doc["node_list"] = serde_json::to_value(&g.nodes).unwrap_or_default();
                doc["impact"] = serde_json::to_value(&g.impact).unwrap_or_default();
                doc["snapshot"] = g.snapshot.clone();
                ui.out_json(&doc);
                return Ok(ExitStatus::Success);
            }
            ui.out(&show_text(&g));
            Ok(ExitStatus::Success)
        }
    }
}

fn show_text(g: &StoredGeneration) -> String {
    let s = &g.summary;
    let mut out = format!(
        "{} ({})\n  created_at       {}\n  digest           {}\n  semantic_digest  {}\n  physical_digest  {}\n",
        s.id, s.state, s.created_at, s.digest, s.semantic_digest, g.physical_digest
    );
    let width = g
        .impact
        .iter()
        .map(|i| i.entry_id.chars().count())
        .chain(g.nodes.iter().map(|n| n.entry_id.chars().count()))
        .max()
        .unwrap_or(0);
    let _ = write!(out, "\nNODES\n");
    for i in &g.impact {
        let mount = g
            .node(&i.entry_id)
            .map(|n| format!("  mount {}", n.mount))
            .unwrap_or_default();
        let iid = match (&i.old_instance_id, &i.new_instance_id) {
            (Some(a), Some(b)) if a != b => format!("{a} -> {b}"),
            (_, Some(b)) => b.clone(),
            (Some(a), None) => a.clone(),
            (None, None) => String::new(),
        };
        let reasons = if i.reasons.is_empty() {
            String::new()
        } else {
            format!("  ({})", i.reasons.join(","))
        };
        let line = format!(
            "  {:<width$}  {:<9} {iid}{mount}{reasons}",
            i.entry_id, i.decision
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}
