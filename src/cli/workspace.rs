//! Loading what commands operate on: a composition file (with its includes),
//! a composition at a git revision, or a snapshot document — and resolving
//! it once with the engine.

use std::path::{Path, PathBuf};

use crate::engine::model::Composition;
use crate::engine::resolve::{Plan, resolve_with_tree};
use crate::engine::snapshot::{SnapshotContext, SnapshotRecord, build_snapshot, parse_document};
use crate::engine::tree::ScopeTree;
use crate::load::{FsSource, GitSource, SourceMap, load, parse_rev_path};

use super::exit::ExitStatus;
use super::ui::Ui;

/// A composition loaded and resolved.
pub struct Resolved {
    /// The composition.
    pub composition: Composition,
    /// Its scope tree.
    pub tree: ScopeTree,
    /// The resolution plan.
    pub plan: Plan,
    /// Source texts, for diagnostics.
    pub sources: SourceMap,
    /// How the user named it.
    pub display: String,
    /// The loader's warnings (already reported), for commands whose exit
    /// status depends on one (`check` and a missing lock entry).
    pub warnings: Vec<crate::engine::diag::Code>,
}

impl Resolved {
    /// The codes of the loader's `chassis.lock` findings: an `mcp` entry
    /// without locked tools, or whose lock lacks a tool it expects. Such a
    /// composition cannot publish as checked (`check` exits 1).
    pub fn lock_findings(&self) -> Vec<&'static str> {
        use crate::engine::diag::Code;
        self.warnings
            .iter()
            .filter(|c| {
                matches!(
                    c,
                    Code::McpLockMissing | Code::McpLockStale | Code::McpExpectedToolMissing
                )
            })
            .map(|c| c.as_str())
            .collect()
    }

    /// The composition a run of `agent` executes when its request brings
    /// the tools `request` (`--request-tools`): exit 2 with the reason when
    /// they cannot join it.
    pub fn with_request_tools(
        mut self,
        ui: &Ui,
        agent: &str,
        request: &crate::engine::request_tools::RequestToolsDecl,
    ) -> Result<Self, ExitStatus> {
        let composition = crate::engine::request_tools::with_request_tools(
            &self.composition,
            agent,
            request,
            &|_| false,
        )
        .map_err(|e| {
            ui.err(&format!("error: {e}"));
            ExitStatus::Input
        })?;
        self.tree = ScopeTree::new(&composition);
        self.plan = resolve_with_tree(&composition, &self.tree);
        self.composition = composition;
        Ok(self)
    }

    /// The snapshot of this composition as the first generation of an empty
    /// store.
    pub fn snapshot(&self) -> Result<SnapshotRecord, ExitStatus> {
        build_snapshot(
            &self.composition,
            &self.tree,
            &self.plan,
            &SnapshotContext::default(),
        )
        .map_err(|_| ExitStatus::Input)
    }

    /// The snapshot a run of `agent` stamps, on an empty store (`None` when
    /// the composition has no such agent).
    pub fn agent_snapshot(&self, agent: &str) -> Option<Result<SnapshotRecord, ExitStatus>> {
        let decl = self.composition.agents.get(agent)?;
        let active: Vec<&crate::engine::model::Entry> = self
            .plan
            .activation_order
            .iter()
            .filter_map(|id| self.composition.entries.get(id))
            .collect();
        Some(
            crate::engine::agent::agent_snapshot_context(
                &self.composition,
                decl,
                &active,
                SnapshotContext::default(),
            )
            .and_then(|ctx| build_snapshot(&self.composition, &self.tree, &self.plan, &ctx))
            .map_err(|_| ExitStatus::Input),
        )
    }
}

/// Load and resolve the composition at `path`, reporting diagnostics.
/// Load errors end the command with exit 2.
pub fn load_file(ui: &Ui, path: &Path) -> Result<Resolved, ExitStatus> {
    load_file_in(ui, path, &super::env::RunEnv::process())
}

/// [`load_file`], evaluating `enabled_if` conditions against `env`.
pub fn load_file_in(
    ui: &Ui,
    path: &Path,
    env: &super::env::RunEnv,
) -> Result<Resolved, ExitStatus> {
    let loaded = load(&FsSource, path);
    finish(ui, loaded, path.display().to_string(), env)
}

/// Load and resolve `path` as it is at git revision `rev`.
pub fn load_git(ui: &Ui, rev: &str, path: &str) -> Result<Resolved, ExitStatus> {
    let source = GitSource::new(
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        rev,
    );
    let loaded = load(&source, Path::new(path));
    finish(
        ui,
        loaded,
        format!("{rev}:{path}"),
        &super::env::RunEnv::process(),
    )
}

fn finish(
    ui: &Ui,
    loaded: crate::load::Loaded,
    display: String,
    env: &super::env::RunEnv,
) -> Result<Resolved, ExitStatus> {
    ui.diagnostics(&loaded.diagnostics, &loaded.sources);
    let warnings = loaded
        .diagnostics
        .iter()
        .filter(|d| !d.is_error())
        .map(|d| d.code)
        .collect();
    let Some(mut composition) = loaded.composition else {
        let errors = loaded.diagnostics.iter().filter(|d| d.is_error()).count();
        if ui.format != super::ui::Format::Json {
            ui.err(&format!(
                "error: could not load `{display}` ({errors} error{})",
                if errors == 1 { "" } else { "s" }
            ));
        }
        return Err(ExitStatus::Input);
    };
    composition.apply_conditions(&|name| env.is_set(name));
    let shown: &str = &display;
    tracing::info!(
        composition = shown,
        files = loaded.sources.len(),
        entries = composition.entries.len(),
        scopes = composition.scopes.len(),
        "loaded"
    );
    let tree = ScopeTree::new(&composition);
    let plan = resolve_with_tree(&composition, &tree);
    tracing::info!(
        eligible = plan.activation_order.len(),
        pending = plan.pending.len(),
        cycles = plan.cycles.len(),
        edges = plan.edges.len(),
        "resolved"
    );
    Ok(Resolved {
        composition,
        tree,
        plan,
        sources: loaded.sources,
        display,
        warnings,
    })
}

/// A snapshot from any operand kind, for `diff`.
pub struct Operand {
    /// The snapshot record.
    pub snapshot: SnapshotRecord,
    /// How the user named it.
    pub display: String,
    /// How text output names it: the operand, and for a snapshot file the
    /// generation it records too.
    pub label: String,
}

fn looks_like_snapshot(path: &Path, text: &str) -> bool {
    path.extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{')
}

/// Resolve an operand: an existing file (composition or snapshot) first,
/// then `REV:PATH`.
pub fn load_operand(ui: &Ui, operand: &str) -> Result<Operand, ExitStatus> {
    let path = Path::new(operand);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ui.err(&format!("error: cannot read `{operand}`: {e}"));
            ExitStatus::Input
        })?;
        if looks_like_snapshot(path, &text) {
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                ui.err(&format!("error: `{operand}` is not valid JSON: {e}"));
                ExitStatus::Input
            })?;
            let env = parse_document(&value).map_err(|e| {
                ui.err(&format!(
                    "error[{}]: cannot read snapshot `{operand}`: {}",
                    reason_code(e.reason),
                    e.message
                ));
                ExitStatus::Input
            })?;
            let label = format!("{operand} ({})", env.snapshot.generation_id);
            return Ok(Operand {
                snapshot: env.snapshot,
                display: operand.to_owned(),
                label,
            });
        }
        let resolved = load_file(ui, path)?;
        return Ok(Operand {
            snapshot: resolved.snapshot()?,
            display: operand.to_owned(),
            label: operand.to_owned(),
        });
    }
    if let Some((rev, file)) = parse_rev_path(operand) {
        let resolved = load_git(ui, &rev, &file)?;
        return Ok(Operand {
            snapshot: resolved.snapshot()?,
            display: operand.to_owned(),
            label: operand.to_owned(),
        });
    }
    ui.err(&format!(
        "error: `{operand}` is neither an existing file nor `REV:PATH`\n  help: name a composition (`composition.toml`), a snapshot (`snapshot.json`), or a file at a git revision (`origin/main:composition.toml`)"
    ));
    Err(ExitStatus::Input)
}

fn reason_code(reason: crate::engine::snapshot::SnapshotLoadReason) -> &'static str {
    use crate::engine::diag::Code;
    use crate::engine::snapshot::SnapshotLoadReason as R;
    match reason {
        R::FutureVersion => Code::SnapshotFutureVersion.as_str(),
        R::MalformedVersion => Code::SnapshotMalformedVersion.as_str(),
        R::Corrupted => Code::SnapshotCorrupted.as_str(),
    }
}

/// The directory of the composition `file`: where relative paths in
/// built-in configurations resolve, and where `chassis.lock` lives.
pub fn base_dir(file: &Path) -> &Path {
    file.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The runtime catalog for a composition at `file`: the built-in kinds,
/// with relative paths in their configuration resolved beside the file,
/// scrubbing with `redactor` (the one the harness's secrets learn into),
/// `secrets.env` entries reading `run_env`.
pub fn catalog(
    file: &Path,
    redactor: &crate::engine::secret::Redactor,
    run_env: &super::env::RunEnv,
) -> crate::runtime::Catalog {
    catalog_with_env(file, redactor, run_env).0
}

/// [`catalog`], and the built-in kinds' environment it was built with (a
/// candidate generation sets a new lock there).
pub fn catalog_with_env(
    file: &Path,
    redactor: &crate::engine::secret::Redactor,
    run_env: &super::env::RunEnv,
) -> (crate::runtime::Catalog, crate::plugins::BuiltinEnv) {
    let base = base_dir(file);
    // The loader already refused an unreadable lock; here it is only read.
    let lock = super::lockfile::read_lock(file);
    let mut catalog = crate::runtime::Catalog::new();
    let env = crate::plugins::BuiltinEnv::new(base)
        .with_lock(lock)
        .with_redactor(redactor.clone())
        .with_env(std::sync::Arc::new(run_env.clone()));
    crate::plugins::register_builtins(&mut catalog, &env);
    (catalog, env)
}

/// The process environment with `env_file` on top (exit 2 when the file
/// is unusable).
pub fn run_env(ui: &Ui, env_file: Option<&Path>) -> Result<super::env::RunEnv, ExitStatus> {
    match env_file {
        None => Ok(super::env::RunEnv::process()),
        Some(path) => super::env::RunEnv::with_file(path).map_err(|e| {
            ui.err(&format!("error: {e}"));
            ExitStatus::Input
        }),
    }
}

/// The secrets of commands that start plugins: the environment (and
/// `env_file`), each value learned by `redactor` as it is resolved.
pub fn secret_provider(
    ui: &Ui,
    redactor: &crate::engine::secret::Redactor,
    env_file: Option<&Path>,
) -> Result<std::sync::Arc<dyn crate::engine::secret::SecretProvider>, ExitStatus> {
    use crate::engine::secret::{EnvSecretProvider, RedactingSecretProvider};
    let env = run_env(ui, env_file)?;
    // Values from an env file are secrets-in-waiting: learn them now, so
    // one a plugin never asks for still cannot leak through a tool's output.
    for value in env.file_vars().values() {
        if value.len() >= crate::engine::secret::MIN_SECRET_LEN {
            redactor.learn(&crate::engine::secret::SecretValue::new(value.clone()));
        }
    }
    Ok(std::sync::Arc::new(RedactingSecretProvider::new(
        EnvSecretProvider::new(env),
        redactor.clone(),
    )))
}

/// Harness options for commands that mount plugins: `telemetry`, and
/// [`secret_provider`].
pub fn harness_options(
    ui: &Ui,
    telemetry: std::sync::Arc<dyn crate::engine::telemetry::Telemetry>,
    redactor: &crate::engine::secret::Redactor,
    env_file: Option<&Path>,
) -> Result<crate::runtime::HarnessOptions, ExitStatus> {
    Ok(crate::runtime::HarnessOptions {
        telemetry,
        secrets: secret_provider(ui, redactor, env_file)?,
        ..crate::runtime::HarnessOptions::default()
    })
}

/// Report that `r` declares no agent `name` (with a did-you-mean), exit 2.
pub fn unknown_agent(ui: &Ui, r: &Resolved, name: &str) -> ExitStatus {
    let names: Vec<&str> = r.composition.agents.keys().map(String::as_str).collect();
    let help = crate::engine::diag::did_you_mean(name, names.iter().copied())
        .map(|s| format!("\n  help: did you mean `{s}`?"))
        .unwrap_or_default();
    ui.err(&format!(
        "error: `{}` declares no agent `{name}`; agents: {}{help}",
        r.display,
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    ));
    ExitStatus::Input
}
