//! A workspace: a composition loaded (with its includes) and resolved once,
//! from a file, a file at a git revision, or as one side of a diff.
//!
//! Loading reports the loader's findings to the caller as they are found
//! ([`Notice::Diagnostics`]); a file with errors is an [`AppError::Load`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::engine::diag::{Code, Diagnostic, did_you_mean};
use crate::engine::model::Composition;
use crate::engine::request_tools::RequestToolsDecl;
use crate::engine::resolve::{Plan, resolve_with_tree};
use crate::engine::snapshot::{SnapshotContext, SnapshotRecord, build_snapshot, parse_document};
use crate::engine::tree::ScopeTree;
use crate::load::{FsSource, GitSource, SourceMap, load, parse_rev_path};

use super::env::RunEnv;
use super::error::{AppError, Problem};
use super::refusal::{Refusal, refusal};
use super::report::{Notice, Reporter};

/// A composition loaded and resolved.
pub struct Workspace {
    /// The composition.
    pub composition: Composition,
    /// Its scope tree (shared with the harness that publishes it). Built
    /// from `composition`: whatever changes the composition to reconcile
    /// it builds both again (as [`Workspace::with_request_tools`] does).
    pub tree: Arc<ScopeTree>,
    /// The resolution plan (shared likewise: a harness takes the load's
    /// instead of resolving again).
    pub plan: Arc<Plan>,
    /// Source texts, for diagnostics.
    pub sources: SourceMap,
    /// How the caller named it.
    pub display: String,
    /// The codes of the loader's warnings (already reported), for results
    /// that depend on one (`check`, and a missing lock entry).
    pub warnings: Vec<Code>,
    /// The loader's `chassis.lock` findings (already reported as
    /// warnings) about entries that would be mounted: an `mcp` entry whose
    /// tools are not pinned as it expects cannot be published, so they are
    /// refusals too.
    pub lock_problems: Vec<Diagnostic>,
}

impl Workspace {
    /// The codes of the loader's `chassis.lock` findings: an `mcp` entry
    /// without locked tools, or whose lock lacks a tool it expects, or an
    /// agent naming a tool only an unpinned entry may offer. Such a
    /// composition cannot publish as checked (`check` answers no).
    pub fn lock_findings(&self) -> Vec<&'static str> {
        self.lock_problems.iter().map(|d| d.code.as_str()).collect()
    }

    /// Why publishing this composition would be refused: cycles and tool
    /// problems always, pending requirements unless allowed. The problems
    /// (which point into the files) are reported to `reporter`.
    pub fn refusal(&self, allow_pending: bool, reporter: &dyn Reporter) -> Option<Refusal> {
        let mut found = refusal(&self.composition, &self.plan, allow_pending);
        if let Some(r) = &found
            && !r.problems.is_empty()
        {
            reporter.notice(Notice::Diagnostics {
                diagnostics: &r.problems,
                sources: &self.sources,
            });
        }
        // The lock findings were reported when the file was loaded.
        if !self.lock_problems.is_empty() {
            found
                .get_or_insert_with(Refusal::default)
                .problems
                .extend(self.lock_problems.iter().cloned());
        }
        found
    }

    /// The composition a run of `agent` executes when its request brings
    /// the tools `request`: unusable input when they cannot join it.
    pub fn with_request_tools(
        mut self,
        agent: &str,
        request: &RequestToolsDecl,
    ) -> Result<Self, AppError> {
        let composition = crate::engine::request_tools::with_request_tools(
            &self.composition,
            agent,
            request,
            &|_| false,
        )
        .map_err(|e| AppError::input(e.to_string()))?;
        self.tree = Arc::new(ScopeTree::new(&composition));
        self.plan = Arc::new(resolve_with_tree(&composition, &self.tree));
        self.composition = composition;
        Ok(self)
    }

    /// The snapshot of this composition as the first generation of an empty
    /// store.
    pub fn snapshot(&self) -> Result<SnapshotRecord, AppError> {
        build_snapshot(
            &self.composition,
            &self.tree,
            &self.plan,
            &SnapshotContext::default(),
        )
        .map_err(|e| AppError::input(e.to_string()))
    }

    /// The snapshot a run of `agent` stamps, on an empty store (an unknown
    /// agent is unusable input).
    pub fn agent_snapshot(&self, agent: &str) -> Result<SnapshotRecord, AppError> {
        let decl = self
            .composition
            .agents
            .get(agent)
            .ok_or_else(|| self.unknown_agent(agent))?;
        let active: Vec<&crate::engine::model::Entry> = self
            .plan
            .activation_order
            .iter()
            .filter_map(|id| self.composition.entries.get(id))
            .collect();
        crate::engine::agent::agent_snapshot_context(
            &self.composition,
            decl,
            &active,
            SnapshotContext::default(),
        )
        .and_then(|ctx| build_snapshot(&self.composition, &self.tree, &self.plan, &ctx))
        .map_err(|e| AppError::input(e.to_string()))
    }

    /// This composition as a `diff` operand named `operand`.
    fn operand(self, operand: &str) -> Result<Operand, AppError> {
        Ok(Operand {
            snapshot: self.snapshot()?,
            display: operand.to_owned(),
            kind: OperandKind::Composition,
            composition: Some(self.composition),
        })
    }

    /// That this composition declares no agent `name` (with a did-you-mean).
    pub fn unknown_agent(&self, name: &str) -> AppError {
        let names: Vec<&str> = self.composition.agents.keys().map(String::as_str).collect();
        let mut problem = Problem::input(format!(
            "`{}` declares no agent `{name}`; agents: {}",
            self.display,
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ));
        if let Some(s) = did_you_mean(name, names.iter().copied()) {
            problem = problem.with_help(format!("did you mean `{s}`?"));
        }
        problem.into()
    }
}

/// Load and resolve the composition at `path`, evaluating `enabled_if`
/// conditions against `env`.
pub fn load_file(
    path: &Path,
    env: &RunEnv,
    reporter: &dyn Reporter,
) -> Result<Workspace, AppError> {
    let loaded = load(&FsSource, path);
    finish(loaded, path.display().to_string(), env, reporter)
}

/// [`load_file`], and what the load read (every file it read or tried to,
/// every folder it listed): what a server watches.
pub fn load_file_recorded(
    path: &Path,
    env: &RunEnv,
    reporter: &dyn Reporter,
) -> (Result<Workspace, AppError>, crate::load::recording::Read) {
    let recording = crate::load::recording::Recording::new(&FsSource);
    let loaded = load(&recording, path);
    let read = recording.into_read();
    (
        finish(loaded, path.display().to_string(), env, reporter),
        read,
    )
}

/// Load and resolve `path` as it is at git revision `rev` (in the git work
/// tree of the current directory).
pub fn load_git(rev: &str, path: &str, reporter: &dyn Reporter) -> Result<Workspace, AppError> {
    let source = GitSource::new(
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        rev,
    );
    let loaded = load(&source, Path::new(path));
    finish(
        loaded,
        format!("{rev}:{path}"),
        &RunEnv::process(),
        reporter,
    )
}

fn finish(
    loaded: crate::load::Loaded,
    display: String,
    env: &RunEnv,
    reporter: &dyn Reporter,
) -> Result<Workspace, AppError> {
    if !loaded.diagnostics.is_empty() {
        reporter.notice(Notice::Diagnostics {
            diagnostics: &loaded.diagnostics,
            sources: &loaded.sources,
        });
    }
    let warnings = loaded
        .diagnostics
        .iter()
        .filter(|d| !d.is_error())
        .map(|d| d.code)
        .collect();
    // An unknown tool is a warning only while an entry the lock does not
    // pin may offer it: a lock finding too.
    let lock_findings: Vec<Diagnostic> = loaded
        .diagnostics
        .iter()
        .filter(|d| {
            matches!(
                d.code,
                Code::McpLockMissing
                    | Code::McpLockStale
                    | Code::McpExpectedToolMissing
                    | Code::UnknownTool
                    | Code::BadLock
            ) && !d.is_error()
        })
        .cloned()
        .collect();
    let Some(mut composition) = loaded.composition else {
        let errors = loaded.diagnostics.iter().filter(|d| d.is_error()).count();
        return Err(AppError::Load { display, errors });
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
    // Only an entry that would be mounted needs its tools pinned (one that
    // is skipped, disabled or pending starts no server).
    let active: std::collections::BTreeSet<crate::engine::span::Origin> = plan
        .activation_order
        .iter()
        .filter_map(|id| composition.entries.get(id).and_then(|e| e.origin))
        .collect();
    let lock_problems = lock_findings
        .into_iter()
        .filter(|d| {
            // An unknown tool points at the agent naming it, not at an entry.
            d.code == Code::UnknownTool
                || d.labels
                    .iter()
                    .find(|l| l.primary)
                    .is_some_and(|l| active.contains(&l.origin))
        })
        .collect();
    Ok(Workspace {
        composition,
        tree: Arc::new(tree),
        plan: Arc::new(plan),
        sources: loaded.sources,
        display,
        warnings,
        lock_problems,
    })
}

/// What a `diff` operand is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperandKind {
    /// A composition (a file, or a file at a git revision).
    Composition,
    /// A snapshot file.
    SnapshotFile,
    /// A generation of the store.
    Stored,
}

/// A snapshot from any operand kind, for `diff`.
pub struct Operand {
    /// The snapshot record.
    pub snapshot: SnapshotRecord,
    /// How the caller named it.
    pub display: String,
    /// What it is.
    pub kind: OperandKind,
    /// The composition, when the operand is one (a snapshot or a stored
    /// generation holds none): what its keys and host settings are.
    pub composition: Option<Composition>,
}

fn looks_like_snapshot(path: &Path, text: &str) -> bool {
    path.extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{')
}

/// Resolve an operand: an existing file (composition or snapshot) first,
/// then `REV:PATH`.
pub fn load_operand(operand: &str, reporter: &dyn Reporter) -> Result<Operand, AppError> {
    let path = Path::new(operand);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| AppError::input(format!("cannot read `{operand}`: {e}")))?;
        if looks_like_snapshot(path, &text) {
            let value: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| AppError::input(format!("`{operand}` is not valid JSON: {e}")))?;
            let env = parse_document(&value).map_err(|e| {
                Problem::input(format!("cannot read snapshot `{operand}`: {}", e.message))
                    .with_code(reason_code(e.reason))
            })?;
            return Ok(Operand {
                snapshot: env.snapshot,
                display: operand.to_owned(),
                kind: OperandKind::SnapshotFile,
                composition: None,
            });
        }
        let ws = load_file(path, &RunEnv::process(), reporter)?;
        return ws.operand(operand);
    }
    if let Some((rev, file)) = parse_rev_path(operand) {
        return load_git(&rev, &file, reporter)?.operand(operand);
    }
    Err(Problem::input(format!("`{operand}` is neither an existing file nor `REV:PATH`"))
        .with_help("name a composition (`composition.toml`), a snapshot (`snapshot.json`), or a file at a git revision (`origin/main:composition.toml`)")
        .into())
}

fn reason_code(reason: crate::engine::snapshot::SnapshotLoadReason) -> &'static str {
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
