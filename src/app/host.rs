//! A long-running host of one composition: published once, then serving
//! runs on whatever generation is current while reloads publish new ones.
//!
//! Why it exists: `run` and `publish` build a harness, use it once and shut
//! it down. A server keeps one harness for its whole life — runs lease the
//! generation current when they arrive and finish on it, a reload
//! reconciles the edited composition into a new generation (instances whose
//! identity did not change are kept), and an old generation retires when
//! its last lease is released. This is that life as functions returning
//! data; `chassis serve` is a thin HTTP front over it.
//!
//! Store writes happen off the async workers (`spawn_blocking`), one at a
//! time behind one lock; run records go through one writer that commits
//! them in groups ([`super::run_writer`]), and a publication is built
//! outside the lock, which it holds only for its transaction.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crate::engine::identity::GenerationId;
use crate::engine::policy::Grant;
use crate::engine::secret::SecretProvider;
use crate::engine::telemetry::Telemetry;
use crate::runtime::agent::{AgentObserver, AgentRequest, AgentRunner, MonotonicClock, new_run_id};
use crate::runtime::{
    ExecutorServices, Generation, Harness, ReconcileReport, ToolExecutor, Ungoverned,
};
use crate::store::{NewRun, now_rfc3339};

use super::approval::Approvals;
use super::approval_desk::{
    ApprovalDesk, DEFAULT_APPROVAL_TIMEOUT, Decided, DeskError, OnQuestion, PendingApproval,
    Target, Verdict,
};
use super::caller::Caller;
use super::env::RunEnv;
use super::error::{AppError, ErrorKind, Problem};
use super::report::{Notice, Reporter};
use super::run::{RunOutcome, RunStatus, default_policy, parse_grants};
use super::session::{Conversation, SESSION_ID_RULE, SessionError, claim_is_live, is_session_id};
use super::state::{
    Publication, StateStore, open_to_publish, prepare_publication, previous_of, state_path_of,
};
use super::workspace::load_file_recorded;

/// How many finished runs a host keeps in memory with their documents.
const KEPT_RUNS: usize = 1024;

/// What to host.
#[derive(Clone, Debug)]
pub struct HostOptions {
    /// The composition.
    pub file: PathBuf,
    /// The store (default: the composition's `[store] path`, else
    /// `.chassis/state.db` beside `file`).
    pub state: Option<PathBuf>,
    /// Secrets and `enabled_if` variables from this env file too.
    pub env_file: Option<PathBuf>,
    /// Publish without the pending entries instead of refusing.
    pub allow_pending: bool,
    /// Grants that widen the default policy of every run.
    pub grants: Vec<String>,
    /// Tools approved for every call of every run.
    pub approve: Vec<String>,
    /// Let a run request bring its own `command` tools.
    pub allow_request_tools: bool,
}

/// The outcome of the last reload.
#[derive(Clone, Debug)]
pub struct ReloadStatus {
    /// When it ended (RFC 3339).
    pub at: String,
    /// Whether it left a (new or unchanged) generation current.
    pub ok: bool,
    /// Whether it published a new generation.
    pub published: bool,
    /// The generation current after it.
    pub generation_id: String,
    /// What went wrong (a failed reload keeps the current generation).
    pub error: Option<String>,
    /// The findings of the load, as JSON diagnostics.
    pub diagnostics: Vec<serde_json::Value>,
}

/// A run the host knows: running, or finished with its document.
#[derive(Clone, Debug)]
pub struct HostRun {
    /// `run_<12 hex>`.
    pub run_id: String,
    /// The agent.
    pub agent: String,
    /// The generation it leased.
    pub generation_id: String,
    /// `running`, `succeeded`, `no_answer`, `failed`.
    pub status: &'static str,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// The order this host started its runs in (1, 2, …).
    pub sequence: u64,
    /// When it ended.
    pub finished_at: Option<String>,
    /// The run document (`chassis run --format json`), once finished:
    /// built once, shared by the answer and the book.
    pub document: Option<Arc<serde_json::value::RawValue>>,
}

/// What one run asks for.
pub struct HostRunRequest {
    /// The agent.
    pub agent: String,
    /// The input.
    pub input: String,
    /// Told of every step (already redacted), from `run_started` (with
    /// the generation and snapshot digest) to `run_finished`.
    pub observer: Option<Arc<dyn AgentObserver>>,
    /// Continue (or start) this session, claimed for this run's agent
    /// ([`Host::claim_session`]): the model sees its earlier turns.
    pub session: Option<ClaimedSession>,
    /// Told of each tool call that waits for a client's approval.
    pub on_approval: Option<OnQuestion>,
    /// Limits of this request, which only tighten the agent's budget.
    pub budget: crate::engine::budget::BudgetLimits,
    /// Tools this request brings ([`Host::request_tools`]): the run gets
    /// its own candidate generation with them.
    pub request_tools: Option<crate::runtime::request_tools::RequestTools>,
}

/// A composition held live: one harness, one store, many runs.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    file: PathBuf,
    env: RunEnv,
    allow_pending: bool,
    grants: Vec<Grant>,
    approve: Vec<String>,
    allow_request_tools: bool,
    harness: Harness,
    telemetry: Arc<dyn Telemetry>,
    secrets: Arc<dyn SecretProvider>,
    caller: Caller,
    store: Arc<Mutex<StateStore>>,
    /// What the next publication is computed against.
    published: Mutex<Published>,
    /// One reload at a time.
    reloading: tokio::sync::Mutex<()>,
    last_reload: Mutex<Option<ReloadStatus>>,
    runs: Mutex<RunBook>,
    /// The built-in kinds' environment (a reload sets the lock it read).
    builtin: crate::plugins::BuiltinEnv,
    /// This server's id in the store's `holders`.
    instance: String,
    /// Where it listens (set once bound), written with each heartbeat.
    address: Mutex<String>,
    /// Sessions with a run under way (one at a time each).
    busy_sessions: Mutex<std::collections::BTreeSet<String>>,
    /// How many runs this host has started.
    started_runs: std::sync::atomic::AtomicU64,
    /// What `/metrics` shows.
    metrics: Arc<super::metrics::Metrics>,
    /// Commits run records in groups.
    writer: super::run_writer::RunWriter,
    /// What the last load read: what a watcher watches. (The env file is
    /// read once, at start.)
    watched: Arc<Mutex<crate::load::recording::Read>>,
    /// `[serve]` as the host started.
    serve: Option<crate::engine::model::ServeSettings>,
    /// Compiled agent plans, shared by every run's runner.
    plans: Arc<crate::runtime::agent::PlanCache>,
    /// The approval questions runs wait on.
    desk: Arc<ApprovalDesk>,
}

struct Published {
    previous: Option<GenerationId>,
    mounts: BTreeMap<String, u64>,
}

#[derive(Default)]
struct RunBook {
    runs: BTreeMap<String, HostRun>,
    /// Finished runs, oldest first (what is forgotten first).
    finished: VecDeque<String>,
}

impl Host {
    /// Load, publish and hold `options.file`. A composition that cannot be
    /// published is refused here, before anything is served; so is one
    /// `admit` refuses — it judges the loaded composition's `[serve]` (its
    /// token secrets) before the store is opened or anything published,
    /// and what it returns is handed back with the host.
    pub async fn start<T>(
        options: HostOptions,
        caller: Caller,
        admit: impl FnOnce(&Admission<'_>) -> Result<T, AppError>,
    ) -> Result<(Host, T), AppError> {
        let env = super::mount::run_env(options.env_file.as_deref())?;
        let grants = parse_grants(&options.grants)?;
        let (ws, read) = load_file_recorded(&options.file, &env, &*caller.reporter);
        let ws = ws?;
        if let Some(refusal) = ws.refusal(options.allow_pending, &*caller.reporter) {
            return Err(AppError::Refused {
                verb: "serve",
                display: ws.display,
                refusal,
            });
        }
        let telemetry = super::telemetry::for_operation(None, &caller)?;
        let harness_options =
            super::mount::harness_options(Arc::clone(&telemetry), &caller.redactor, &env);
        let secrets = Arc::clone(&harness_options.secrets);
        let admitted = admit(&Admission {
            serve: ws.composition.host.serve.clone().unwrap_or_default(),
            secrets: &*secrets,
        })?;
        let path = state_path_of(
            options.state.as_deref(),
            &options.file,
            &ws.composition.host,
        );
        // One server per lineage; `chassis publish` on it is refused while
        // this one beats (see `StateStore::refuse_if_served`).
        let mut store = open_to_publish(
            &path,
            &options.file,
            &ws.composition.host,
            Arc::clone(&caller.reporter),
        )?;
        // The head is read (and so checked) before the store is written: a
        // damaged one is refused as it was found (`store::damaged`).
        let seed = store.seed()?;
        let instance = new_run_id().replacen("run_", "srv_", 1);
        store.hold(&crate::store::Holder {
            instance: instance.clone(),
            pid: std::process::id(),
            address: String::new(),
            started_at: now_rfc3339(),
            heartbeat: crate::store::unix_now(),
            host: crate::process::liveness::host_name(),
        })?;
        // Runs a killed server of this lineage left `running` never end:
        // they were interrupted.
        let interrupted = store.interrupt_runs(&instance)?;
        if interrupted > 0 {
            tracing::warn!(
                runs = interrupted,
                "marked {interrupted} run(s) of a server that stopped without finishing them `interrupted`"
            );
        }
        // A publish that committed before the hold moved the head on: read
        // it again (a server that cannot, lets go of the lineage).
        let seed = match store.still_current(&seed) {
            Ok(true) => seed,
            Ok(false) => match store.seed() {
                Ok(seed) => seed,
                Err(e) => {
                    let _ = store.release(&instance);
                    return Err(e);
                }
            },
            Err(e) => {
                let _ = store.release(&instance);
                return Err(e);
            }
        };
        let (catalog, builtin) = super::mount::catalog(&options.file, &caller.redactor, &env);
        let harness = Harness::new(catalog, harness_options);
        let mut published = Published {
            previous: previous_of(&seed),
            mounts: seed.mounts.clone(),
        };
        let _ = harness.seed(seed).await;
        // Interrupted, the setups in flight are cancelled, not waited for.
        let reconciled = harness
            .unless_interrupted(
                harness.reconcile_resolved(
                    ws.composition.clone(),
                    Arc::clone(&ws.tree),
                    Arc::clone(&ws.plan),
                ),
                caller.interrupt.wait(),
            )
            .await;
        let first = match reconciled {
            Some(Ok(report)) => first_record(&harness, store, report, &mut published).await,
            Some(Err(e)) => Err((e.into(), Some(store))),
            None => Err((AppError::Interrupted("nothing was published"), Some(store))),
        };
        let (store, report) = match first {
            Ok(ok) => ok,
            Err((e, store)) => {
                harness.shutdown().await;
                // A first publish that fails leaves no store behind.
                if let Some(mut store) = store {
                    let _ = store.release(&instance);
                    store.discard_if_unused();
                }
                return Err(e);
            }
        };
        super::publish::notice_quarantined(&caller, &report);
        if store.created() {
            caller.notice(Notice::StoreCreated {
                path: store.path(),
                in_default_folder: store.in_default_folder(),
            });
        }
        let mut store = store;
        store.keep_up_beside_writes();
        let store = Arc::new(Mutex::new(store));
        let redactor = caller.redactor.clone();
        let host = Host {
            inner: Arc::new(Inner {
                writer: super::run_writer::RunWriter::start(Arc::clone(&store)),
                metrics: Arc::default(),
                started_runs: std::sync::atomic::AtomicU64::new(0),
                busy_sessions: Mutex::default(),
                instance,
                address: Mutex::default(),
                builtin,
                file: options.file,
                env,
                allow_pending: options.allow_pending,
                grants,
                approve: options.approve,
                allow_request_tools: options.allow_request_tools,
                harness,
                telemetry,
                secrets,
                caller,
                store,
                published: Mutex::new(published),
                reloading: tokio::sync::Mutex::new(()),
                last_reload: Mutex::new(None),
                runs: Mutex::new(RunBook::default()),
                plans: Arc::default(),
                desk: Arc::new(ApprovalDesk::new(
                    ws.composition
                        .host
                        .serve
                        .as_ref()
                        .and_then(|s| s.approval_timeout_seconds)
                        .map_or(DEFAULT_APPROVAL_TIMEOUT, std::time::Duration::from_secs),
                    redactor,
                )),
                serve: ws.composition.host.serve.clone(),
                watched: Arc::new(Mutex::new(read)),
            }),
        };
        Ok((host, admitted))
    }

    /// The redactor that knows every secret this host resolved.
    pub fn redactor(&self) -> crate::engine::secret::Redactor {
        self.inner.caller.redactor.clone()
    }

    /// `[serve]` of the composition the host started with (what a reload
    /// changes there applies at the next start: the reload warns,
    /// `serve::restart-needed`).
    pub fn serve_settings(&self) -> crate::engine::model::ServeSettings {
        self.inner.serve.clone().unwrap_or_default()
    }

    /// Every file the last load read (or tried to) and the folders it
    /// listed: a change to any of them is a reason to reload.
    pub fn watched(&self) -> crate::load::recording::Read {
        lock(&self.inner.watched).clone()
    }

    /// Every metric: the generation gauges (live, draining, leases, the
    /// oldest lease's age, instances shared between live generations),
    /// `gauges` the caller adds, then the counters and histograms.
    pub fn metrics(
        &self,
        mut gauges: Vec<(&'static str, &'static str, f64)>,
    ) -> Vec<super::metrics::Family> {
        let pressure = self.inner.harness.generation_pressure().metrics();
        let help = |name: &str| match name {
            "chassis.generations.live" => (
                "chassis_generations_live",
                "Live generations (current and draining).",
            ),
            "chassis.generations.draining" => (
                "chassis_generations_draining",
                "Generations draining (superseded, still leased).",
            ),
            "chassis.generations.leases" => (
                "chassis_generation_leases",
                "Leases held on live generations (runs in flight).",
            ),
            "chassis.generations.oldest_lease_age_seconds" => (
                "chassis_generation_oldest_lease_age_seconds",
                "Age of the oldest lease held.",
            ),
            "chassis.resources.shared" => (
                "chassis_shared_resources",
                "Plugin instances shared by more than one live generation.",
            ),
            _ => ("", ""),
        };
        let mut first: Vec<(&'static str, &'static str, f64)> = pressure
            .iter()
            .map(|(name, v)| {
                let (n, h) = help(name);
                (n, h, *v)
            })
            .filter(|(n, _, _)| !n.is_empty())
            .collect();
        first.append(&mut gauges);
        let mut families = self.inner.metrics.families(first);
        families.push(super::metrics::Family {
            name: "chassis_plugin_restarts_total",
            help: "Restarts of what a plugin supervises (a crashed MCP server started again), by entry.",
            kind: super::metrics::Kind::Counter,
            series: self
                .inner
                .harness
                .plugin_restarts()
                .into_iter()
                .map(|(entry, n)| {
                    #[allow(clippy::cast_precision_loss)]
                    let n = n as f64;
                    (vec![("entry", entry)], super::metrics::Value::Number(n))
                })
                .collect(),
        });
        families
    }

    /// `chassis diff generations FROM TO --format json` between two of this
    /// composition's stored generations (ids only: a server reads no file
    /// or git revision a client names).
    pub async fn diff(
        &self,
        from: String,
        to: String,
        include_unchanged: bool,
    ) -> Result<serde_json::Value, AppError> {
        let store = self.stored_generations(&from, &to)?;
        tokio::task::spawn_blocking(move || {
            let options = super::diff::DiffOptions {
                old: from.clone(),
                new: to.clone(),
                include_unchanged,
                store,
            };
            super::diff::diff(&options, &super::report::Silent).map(|o| o.document(&from, &to))
        })
        .await
        .map_err(|e| AppError::failure(format!("the diff stopped: {e}")))?
    }

    /// Why node `entry` was reused, rebuilt or rewired between two stored
    /// generations of this composition (ids only): the document of
    /// `chassis explain reuse --format json`.
    pub async fn reuse(
        &self,
        from: String,
        to: String,
        entry: String,
    ) -> Result<serde_json::Value, AppError> {
        let store = self.stored_generations(&from, &to)?;
        tokio::task::spawn_blocking(move || {
            super::reuse::explain_reuse(&store, &from, &to, &entry).map(|r| r.document())
        })
        .await
        .map_err(|e| AppError::failure(format!("the explanation stopped: {e}")))?
    }

    /// This host's lineage in its store, once `ids` are generation ids (a
    /// server reads no file or revision a client names).
    fn stored_generations(
        &self,
        from: &str,
        to: &str,
    ) -> Result<super::state::StoreSelection, AppError> {
        for id in [from, to] {
            if crate::engine::identity::GenerationId::parse(id).is_none() {
                return Err(
                    Problem::input("`from` and `to` are generation ids (`gen_0001`)")
                        .with_code("serve::bad-request")
                        .into(),
                );
            }
        }
        Ok(super::state::StoreSelection {
            state: Some(self.store_path()),
            composition: Some(super::state::CompositionRef::Name(
                lock(&self.inner.store).lineage().to_owned(),
            )),
        })
    }

    /// `f` of the current generation as an explain view (named by its id).
    pub fn explain<T>(
        &self,
        f: impl FnOnce(&super::explain::View<'_>) -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let g = self.current().ok_or_else(|| {
            AppError::from(
                Problem::failure("no generation is current (the server is stopping)")
                    .with_code("serve::stopping"),
            )
        })?;
        let display = format!("generation {}", g.id);
        f(&super::explain::View {
            composition: &g.composition,
            tree: &g.tree,
            plan: &g.plan,
            display: &display,
        })
    }

    /// The composition file.
    pub fn file(&self) -> &std::path::Path {
        &self.inner.file
    }

    /// The store's path.
    pub fn store_path(&self) -> PathBuf {
        lock(&self.inner.store).path().to_path_buf()
    }

    /// The harness (for the application layer's other host operations).
    pub(super) fn harness(&self) -> &Harness {
        &self.inner.harness
    }

    /// The generation new runs take.
    pub fn current(&self) -> Option<Arc<Generation>> {
        self.inner.harness.current()
    }

    /// Every generation still alive (current, and draining ones held by
    /// leases).
    pub fn live_generations(&self) -> Vec<Arc<Generation>> {
        self.inner.harness.live_generations()
    }

    /// The last reload's outcome (`None` before the first reload).
    pub fn last_reload(&self) -> Option<ReloadStatus> {
        lock(&self.inner.last_reload).clone()
    }

    /// The store, for reads (generations, snapshots, runs), off the async
    /// workers.
    pub async fn read_store<T: Send + 'static>(
        &self,
        read: impl FnOnce(&StateStore) -> Result<T, AppError> + Send + 'static,
    ) -> Result<T, AppError> {
        let store = Arc::clone(&self.inner.store);
        tokio::task::spawn_blocking(move || read(&lock(&store)))
            .await
            .map_err(|e| AppError::failure(format!("a store read stopped: {e}")))?
    }

    /// Reload the composition from disk: a new generation when it changed,
    /// the current one kept (and the findings reported) when it cannot be
    /// published.
    pub async fn reload(&self) -> ReloadStatus {
        let _one = self.inner.reloading.lock().await;
        let capture = Arc::new(Capture::new(
            Arc::clone(&self.inner.caller.reporter),
            self.inner.caller.redactor.clone(),
        ));
        let status = match self
            .reload_with(Arc::clone(&capture) as Arc<dyn Reporter>)
            .await
        {
            Ok(report) => ReloadStatus {
                at: now_rfc3339(),
                ok: true,
                published: report.published,
                generation_id: report.generation_id,
                error: None,
                diagnostics: capture.take(),
            },
            Err(e) => ReloadStatus {
                at: now_rfc3339(),
                ok: false,
                published: false,
                generation_id: self.current().map(|g| g.id.to_string()).unwrap_or_default(),
                error: Some(
                    self.inner
                        .caller
                        .redactor
                        .redact(&e.to_string())
                        .into_owned(),
                ),
                diagnostics: capture.take(),
            },
        };
        self.inner
            .metrics
            .reloaded(match (status.ok, status.published) {
                (false, _) => "failed",
                (true, true) => "published",
                (true, false) => "unchanged",
            });
        *lock(&self.inner.last_reload) = Some(status.clone());
        status
    }

    async fn reload_with(&self, reporter: Arc<dyn Reporter>) -> Result<ReconcileReport, AppError> {
        // Reading and resolving the files is blocking work: off the async
        // workers that serve runs.
        let (file, env, allow_pending) = (
            self.inner.file.clone(),
            self.inner.env.clone(),
            self.inner.allow_pending,
        );
        let watched = Arc::clone(&self.inner.watched);
        let started = self.inner.serve.clone().unwrap_or_default();
        // Beside the runs, at a lower priority: they keep the cores.
        let ws = super::background::beside_runs("reload", move || {
            let (ws, read) = load_file_recorded(&file, &env, &*reporter);
            *lock(&watched) = read;
            let ws = ws?;
            if let Some(refusal) = ws.refusal(allow_pending, &*reporter) {
                return Err(AppError::Refused {
                    verb: "reload",
                    display: ws.display,
                    refusal,
                });
            }
            if let Some(warning) = serve_changed(&started, ws.composition.host.serve.as_ref()) {
                reporter.notice(Notice::Diagnostics {
                    diagnostics: &[warning],
                    sources: &ws.sources,
                });
            }
            Ok(ws)
        })
        .await??;
        // `mcp` entries mount against the lock as it is now.
        self.inner
            .builtin
            .set_lock(super::lock::read_lock(&self.inner.file));
        // Reconciling is CPU work that grows with the composition: on a
        // blocking thread, so the async workers keep serving runs. At
        // normal priority, not beside them: it mounts plugins, and a
        // program started from a lowered thread (an `mcp` server, a
        // process plugin) would keep its priority for life.
        let harness = self.inner.harness.clone();
        let runtime = tokio::runtime::Handle::current();
        let super::workspace::Workspace {
            composition,
            tree,
            plan,
            ..
        } = ws;
        let report = tokio::task::spawn_blocking(move || {
            runtime.block_on(harness.reconcile_resolved(composition, tree, plan))
        })
        .await
        .map_err(|e| AppError::failure(format!("the reconcile stopped: {e}")))??;
        super::publish::notice_quarantined(&self.inner.caller, &report);
        self.record(&report).await?;
        Ok(report)
    }

    /// Record a publication (when the reconcile published one).
    async fn record(&self, report: &ReconcileReport) -> Result<(), AppError> {
        if !report.published {
            return Ok(());
        }
        let Some(generation) = self.current() else {
            return Err(AppError::failure("the reconcile published no generation"));
        };
        let nodes = self.inner.harness.nodes().await;
        let (previous, mounts) = {
            let p = lock(&self.inner.published);
            (p.previous.clone(), p.mounts.clone())
        };
        let store = Arc::clone(&self.inner.store);
        let fingerprint = {
            let store = Arc::clone(&store);
            tokio::task::spawn_blocking(move || lock(&store).config_fingerprint())
                .await
                .map_err(|e| AppError::failure(format!("reading the store stopped: {e}")))?
        };
        let report = report.clone();
        let recorded = Arc::clone(&generation);
        // Built, cut and hashed beside the runs, so the store (which run
        // records wait on) is held only to insert the rows and chunks —
        // by a thread of normal priority, never the background one.
        let (record, nodes) = super::background::beside_runs("publication", move || {
            let mut record = prepare_publication(
                Publication {
                    report: &report,
                    nodes: &nodes,
                    generation: &recorded,
                    previous,
                    mounts,
                },
                &fingerprint,
            )?;
            record.chunk();
            Ok::<_, AppError>((record, nodes))
        })
        .await??;
        tokio::task::spawn_blocking(move || lock(&store).commit_publication(record))
            .await
            .map_err(|e| AppError::failure(format!("recording the generation stopped: {e}")))??;
        lock(&self.inner.published).advance(&generation, nodes);
        Ok(())
    }

    /// The tool calls run `run_id` waits on for approval; `None` when it is
    /// not running here.
    pub fn pending_approvals(&self, run_id: &str) -> Option<Vec<PendingApproval>> {
        self.inner.desk.pending(run_id)
    }

    /// Answer approval questions of run `run_id`: one call, or every call
    /// of a tool in the run (those waiting and those to come). A refusal's
    /// `reason` is redacted before the model is told it.
    pub fn answer_approvals(
        &self,
        run_id: &str,
        target: &Target,
        verdict: Verdict,
        reason: Option<String>,
    ) -> Result<Vec<Decided>, DeskError> {
        let reason = reason.map(|r| self.inner.caller.redactor.redact(&r).into_owned());
        self.inner.desk.answer(run_id, target, verdict, reason)
    }

    /// The tools a run request brings, from `text` (a request-tools file's
    /// TOML): refused unless the server allows them; on unusable input,
    /// the error with the load's diagnostics as JSON (redacted).
    pub fn request_tools(
        &self,
        text: &str,
    ) -> Result<crate::runtime::request_tools::RequestTools, Box<RequestToolsRefused>> {
        let inner = &self.inner;
        if !inner.allow_request_tools {
            return Err(Box::new(RequestToolsRefused {
                error: Problem::input("this server takes no tools from a request")
                    .with_code("serve::request-tools-disabled")
                    .with_help("a request's tools are programs run on the server: start `chassis serve` with `--allow-request-tools` to take them")
                    .into(),
                diagnostics: Vec::new(),
            }));
        }
        let capture = Capture::new(
            Arc::clone(&inner.caller.reporter),
            inner.caller.redactor.clone(),
        );
        let file = super::request_tools::load_request(
            text,
            super::workspace::base_dir(&inner.file),
            &capture,
        )
        .map_err(|e| RequestToolsRefused::new(e, capture.take()))?;
        file.request_tools(&inner.caller.redactor)
            .map_err(|e| RequestToolsRefused::new(e, Vec::new()))
    }

    /// Whether the current generation has agent `name`.
    pub fn has_agent(&self, name: &str) -> bool {
        self.current()
            .is_some_and(|g| g.composition.agents.contains_key(name))
    }

    /// Run an agent on the generation current now (holding a lease on it
    /// until the run ends), and record the run; its document (what
    /// `chassis run --format json` prints).
    pub async fn run(
        &self,
        request: HostRunRequest,
    ) -> Result<Arc<serde_json::value::RawValue>, AppError> {
        let inner = &self.inner;
        let lease = inner.harness.acquire().map_err(|e| {
            Problem::failure(format!("no generation to run on: {e}")).with_code("serve::stopping")
        })?;
        let generation = Arc::clone(lease.generation());
        if !generation.composition.agents.contains_key(&request.agent) {
            let known: Vec<&String> = generation.composition.agents.keys().collect();
            return Err(Problem::input(format!(
                "generation {} has no agent `{}`",
                generation.id, request.agent
            ))
            .with_code("serve::unknown-agent")
            .with_help(format!(
                "its agents: {}",
                known
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .into());
        }
        // Tools the request brings: the run's own candidate generation
        // (the published one never changes; no other run sees them).
        let mut request_tool_names = Vec::new();
        let generation = match request.request_tools {
            Some(tools) if !tools.is_empty() => {
                request_tool_names = tools
                    .tools
                    .iter()
                    .map(|t| t.tool.name().to_owned())
                    .collect();
                request_tool_names.sort();
                crate::runtime::request_tools::candidate_for_request(
                    &generation,
                    &request.agent,
                    tools,
                )
                .map_err(|e| {
                    // Naming no tool: the names are the client's text.
                    AppError::from(
                        Problem::input(format!(
                            "the request's tools cannot join: {}",
                            e.unquoted()
                        ))
                        .with_code("serve::bad-request-tools"),
                    )
                })?
            }
            _ => generation,
        };
        // A session: one run at a time, one agent, its earlier turns.
        let session = match request.session {
            None => None,
            Some(claimed) if claimed.agent == request.agent => Some(claimed.open),
            Some(claimed) => {
                return Err(Problem::input(format!(
                    "the session was claimed for agent `{}`",
                    claimed.agent
                ))
                .with_code("serve::session-agent")
                .into());
            }
        };
        let history = session
            .as_ref()
            .map(|s| s.conversation.messages.clone())
            .unwrap_or_default();
        // A session's run has the id its turn was claimed under.
        let run_id = session
            .as_ref()
            .map_or_else(new_run_id, |s| s.run_id.clone());
        let started = HostRun {
            run_id: run_id.clone(),
            agent: request.agent.clone(),
            generation_id: generation.id.to_string(),
            status: "running",
            started_at: now_rfc3339(),
            sequence: inner
                .started_runs
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1,
            finished_at: None,
            document: None,
        };
        lock(&inner.runs)
            .runs
            .insert(run_id.clone(), started.clone());
        // In the store as `running` (with this server's instance), so a
        // server killed now leaves a record the next one marks interrupted.
        inner.writer.record_soon(NewRun {
            id: run_id.clone(),
            generation_id: started.generation_id.clone(),
            agent: started.agent.clone(),
            status: "running".to_owned(),
            started_at: started.started_at.clone(),
            finished_at: None,
            instance: Some(inner.instance.clone()),
        });
        // Whatever happens below (a panic in a plugin included), the run
        // leaves the book's `running` state.
        let mut guard = Unfinished {
            host: self,
            run: Some(started.clone()),
        };
        // A call that needs approval waits for a client's answer (tools
        // approved at start excepted); the run's questions close with it.
        let prompter = inner.desk.open(&run_id, request.on_approval);
        let _questions = CloseQuestions {
            desk: &inner.desk,
            run_id: &run_id,
        };
        // `--approve` names the server's tools: a tool a request brings is
        // asked about even when it takes such a name.
        let approvals = Approvals::new(
            inner
                .approve
                .iter()
                .filter(|t| !request_tool_names.contains(t))
                .cloned(),
            false,
            Arc::new(prompter),
            Arc::clone(&inner.telemetry),
        );
        let services = ExecutorServices {
            policy: Arc::new(default_policy(&generation, inner.grants.clone())),
            approvals: Arc::new(approvals),
            telemetry: Arc::clone(&inner.telemetry),
            redactor: inner.caller.redactor.clone(),
            secrets: Arc::clone(&inner.secrets),
            ungoverned: Ungoverned::NeedsApproval,
            paths: Some(crate::runtime::paths::PathResolver::new(
                super::workspace::base_dir(&inner.file),
            )),
            ..ExecutorServices::permissive()
        };
        let mut runner =
            AgentRunner::new(ToolExecutor::new(services), Arc::new(MonotonicClock::new()))
                .with_plan_cache(Arc::clone(&inner.plans));
        // Tools are labelled by name only when the published composition
        // declares them: a name a model made up is no new series.
        let counted = inner.metrics.run(
            Arc::clone(lease.generation()),
            request_tool_names.clone(),
            request.observer,
        );
        runner = runner.with_observer(Arc::clone(&counted) as Arc<dyn AgentObserver>);
        let runner = Arc::new(runner);
        let caps = request.budget;
        let agent_request = AgentRequest {
            agent: request.agent,
            input: request.input,
            run_id: Some(run_id.clone()),
            history,
        };
        let result = tokio::select! {
            r = runner.run_capped(&generation, agent_request, &caps) => Some(r),
            () = inner.caller.interrupt.wait() => {
                runner.cancellation().cancel();
                None
            }
        };
        // The lease is held until the run is recorded: a server that is
        // stopping waits for it.
        let (result, status_text) = match result {
            None => (
                Err(AppError::Interrupted(
                    "the server is stopping; the run was cancelled",
                )),
                "cancelled",
            ),
            Some(Err(e)) => (Err(super::run::agent_error(e)), "error"),
            Some(Ok(result)) => {
                let status = RunStatus::of(&result.stop);
                (Ok(result), status.as_str())
            }
        };
        let finished_at = now_rfc3339();
        let record = NewRun {
            instance: Some(inner.instance.clone()),
            id: run_id.clone(),
            generation_id: generation.id.to_string(),
            agent: started.agent.clone(),
            status: status_text.to_owned(),
            started_at: started.started_at.clone(),
            finished_at: Some(finished_at.clone()),
        };
        // Every run is recorded, however it ended; a run whose record
        // fails is finished in the book all the same (as `failed`).
        let recorded = inner.writer.record(record).await;
        drop(lease);
        let outcome = result.map(|result| {
            let status = RunStatus::of(&result.stop);
            counted.finished(&result, status.as_str());
            RunOutcome {
                session: session.as_ref().map(|s| super::run::SessionTurn {
                    id: s.conversation.id.clone(),
                    turn: s.conversation.next_turn(),
                    saved: true,
                }),
                result,
                generation,
                candidates: Vec::new(),
                request_tools: request_tool_names,
                status,
            }
        });
        if outcome.is_err() {
            inner.metrics.run_failed(&started.agent, status_text);
        }
        if let (Some(session), Ok(o)) = (&session, &outcome) {
            self.save_turn(session, o).await?;
        }
        if let Some(session) = session {
            self.release_turn(session).await;
        }
        let (status_text, document) = match (&outcome, &recorded) {
            (Ok(o), Ok(_)) => (
                status_text,
                Some(Arc::from(o.document_text(&inner.caller.redactor))),
            ),
            (Ok(_), Err(_)) => ("failed", None),
            (Err(_), _) => (status_text, None),
        };
        guard.run = None;
        self.finish(HostRun {
            status: status_text,
            finished_at: Some(finished_at),
            document: document.clone(),
            ..started
        });
        recorded?;
        outcome?;
        document.ok_or_else(|| AppError::failure("the run has no document"))
    }

    /// Claim session `id` for a run of `agent`, before the run starts (so a
    /// stream opens only for a run that can go on): unusable input
    /// (`serve::bad-session`) when `id` is not a session id, 409 when a run
    /// of it is under way or it belongs to another agent. Released when the
    /// run ends, or when dropped unused.
    pub async fn claim_session(&self, id: String, agent: &str) -> Result<ClaimedSession, AppError> {
        Ok(ClaimedSession {
            agent: agent.to_owned(),
            open: self.open_session(id, agent).await?,
        })
    }

    /// Hold session `id`'s one turn, here and in the store, until the
    /// guard is dropped: 409 while a run of it is under way, in this server
    /// or in another process.
    async fn hold_turn(&self, id: &str) -> Result<TurnHeld, AppError> {
        if !lock(&self.inner.busy_sessions).insert(id.to_owned()) {
            return Err(Problem::input("the session has a run under way")
                .with_code("serve::session-busy")
                .with_help("wait for it to finish; a session answers one turn at a time")
                .into());
        }
        // Claimed from here: released when this is dropped.
        let mut claim = TurnHeld {
            host: self.clone(),
            id: id.to_owned(),
            run_id: None,
        };
        // And in the store, which every process taking a turn of the
        // session asks (`chassis run --session` among them): its claims are
        // what a session's one turn at a time rests on. This server's own
        // claims are not live for it — its runs of the session are the
        // ones marked busy above, and one left behind is over.
        let run_id = new_run_id();
        let store = Arc::clone(&self.inner.store);
        let instance = self.inner.instance.clone();
        let held = {
            let (id, run_id) = (id.to_owned(), run_id.clone());
            tokio::task::spawn_blocking(move || {
                lock(&store).claim_session(&id, &run_id, &instance, &|c| {
                    c.instance != instance && claim_is_live(c)
                })
            })
            .await
            .map_err(|e| AppError::failure(format!("claiming the session stopped: {e}")))??
        };
        if let Some(holder) = held {
            return Err(busy_elsewhere(&holder).into());
        }
        claim.run_id = Some(run_id);
        Ok(claim)
    }

    /// Claim session `id` for a run of `agent`: 409 when a run of it is
    /// under way or it belongs to another agent.
    async fn open_session(&self, id: String, agent: &str) -> Result<OpenSession, AppError> {
        if !is_session_id(&id) {
            return Err(Problem::input(SESSION_ID_RULE)
                .with_code("serve::bad-session")
                .into());
        }
        let claim = self.hold_turn(&id).await?;
        let run_id = claim.run_id.clone().unwrap_or_default();
        self.expire_sessions().await?;
        let wanted = id.clone();
        let stored = self.read_store(move |s| s.session(&wanted)).await?;
        let conversation = Conversation::resume(id, stored, agent).map_err(|e| match e {
            SessionError::OtherAgent(owner) => AppError::from(
                Problem::input(format!("the session belongs to agent `{owner}`"))
                    .with_code("serve::session-agent")
                    .with_help("a session talks to one agent; start another session for this one"),
            ),
            SessionError::Unreadable(why) => {
                AppError::failure(format!("a stored session does not read back: {why}"))
            }
        })?;
        Ok(OpenSession {
            conversation,
            run_id,
            claim,
        })
    }

    /// Let go of a session's turn in the store (once its turn is saved, or
    /// not), then here.
    async fn release_turn(&self, session: OpenSession) {
        let OpenSession { mut claim, .. } = session;
        if let Some(run_id) = claim.run_id.take() {
            let store = Arc::clone(&self.inner.store);
            let id = claim.id.clone();
            let released = tokio::task::spawn_blocking(move || {
                lock(&store).release_session_claim(&id, &run_id)
            })
            .await;
            if !matches!(released, Ok(Ok(_))) {
                tracing::warn!(session = %claim.id, "the session's turn was not let go in the store; it lapses with this server's heartbeat");
            }
        }
    }

    /// Add `outcome` as the session's next turn (its messages as the model
    /// saw them, redacted) and store it.
    async fn save_turn(&self, session: &OpenSession, outcome: &RunOutcome) -> Result<(), AppError> {
        let stored = session.conversation.with_turn(
            &outcome.result,
            outcome.status.as_str(),
            &self.inner.caller.redactor,
        );
        let store = Arc::clone(&self.inner.store);
        let turns = session.conversation.next_turn() - 1;
        tokio::task::spawn_blocking(move || lock(&store).save_session(&stored, turns))
            .await
            .map_err(|e| AppError::failure(format!("saving the session stopped: {e}")))?
    }

    /// Forget the sessions older than `[serve] session_ttl_seconds` (none
    /// when it is not set): before a session is read, and with each
    /// heartbeat.
    async fn expire_sessions(&self) -> Result<(), AppError> {
        let Some(ttl) = self
            .inner
            .serve
            .as_ref()
            .and_then(|s| s.session_ttl_seconds)
        else {
            return Ok(());
        };
        let store = Arc::clone(&self.inner.store);
        tokio::task::spawn_blocking(move || lock(&store).expire_sessions(ttl).map(|_| ()))
            .await
            .map_err(|e| AppError::failure(format!("expiring sessions stopped: {e}")))?
    }

    /// Session `id` as stored (`None`: no such session).
    pub async fn session(&self, id: &str) -> Result<Option<crate::store::StoredSession>, AppError> {
        self.expire_sessions().await?;
        let id = id.to_owned();
        self.read_store(move |s| s.session(&id)).await
    }

    /// Delete session `id` (409 while a run of it is under way); whether
    /// there was one.
    pub async fn delete_session(&self, id: &str) -> Result<bool, AppError> {
        // The turn is held while the session is deleted: a turn another
        // process began between a look at its claim and the delete would
        // save the old transcript back with its own turn.
        let _turn = self.hold_turn(id).await?;
        let store = Arc::clone(&self.inner.store);
        let id = id.to_owned();
        tokio::task::spawn_blocking(move || lock(&store).delete_session(&id))
            .await
            .map_err(|e| AppError::failure(format!("deleting the session stopped: {e}")))?
    }

    /// Move a run to the finished end of the book (the oldest finished
    /// runs beyond [`KEPT_RUNS`] are forgotten).
    fn finish(&self, run: HostRun) {
        let mut evicted = Vec::new();
        {
            let mut book = lock(&self.inner.runs);
            let id = run.run_id.clone();
            book.runs.insert(id.clone(), run);
            book.finished.push_back(id);
            while book.finished.len() > KEPT_RUNS {
                if let Some(old) = book.finished.pop_front() {
                    evicted.extend(book.runs.remove(&old));
                }
            }
        }
        // Freed here, not under the lock every run and every read of a run
        // takes.
        drop(evicted);
    }

    /// A run this host knows (running, or among the last finished).
    pub fn run_of(&self, run_id: &str) -> Option<HostRun> {
        lock(&self.inner.runs).runs.get(run_id).cloned()
    }

    /// The runs this host knows, newest first: at most `limit`, those after
    /// run `after` when given (`None`: `after` is not a run it knows).
    pub fn runs(&self, limit: usize, after: Option<&str>) -> Option<Vec<HostRun>> {
        let book = lock(&self.inner.runs);
        let mut all: Vec<&HostRun> = book.runs.values().collect();
        all.sort_by_key(|r| std::cmp::Reverse(r.sequence));
        let start = match after {
            None => 0,
            Some(id) => all.iter().position(|r| r.run_id == id)? + 1,
        };
        Some(all.into_iter().skip(start).take(limit).cloned().collect())
    }

    /// Say where this server listens, and keep its hold on the lineage
    /// alive (a heartbeat every 5 s until [`Host::shutdown`]).
    pub async fn announce(&self, address: String) -> tokio::task::JoinHandle<()> {
        *lock(&self.inner.address) = address;
        let _ = self.beat().await;
        let host = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                if !host.beat().await {
                    return;
                }
            }
        })
    }

    /// One heartbeat (and expired sessions swept); false when the hold is
    /// gone (or the store failed).
    async fn beat(&self) -> bool {
        let _ = self.expire_sessions().await;
        let store = Arc::clone(&self.inner.store);
        let instance = self.inner.instance.clone();
        let address = lock(&self.inner.address).clone();
        // The turns its runs are taking are beaten with it.
        tokio::task::spawn_blocking(move || {
            let mut store = lock(&store);
            let held = store.heartbeat(&instance, &address);
            if let Err(e) = store.beat_session_claims(&instance) {
                tracing::warn!(error = %e, "the sessions' turn claims were not beaten");
            }
            held
        })
        .await
        .is_ok_and(|r| r.unwrap_or(false))
    }

    /// Cancel the plugin setups in flight (a reload's) and to come: the
    /// server is stopping (see [`crate::runtime::Harness::cancel_setups`]).
    pub fn cancel_setups(&self) {
        self.inner.harness.cancel_setups();
    }

    /// Stop: no new run leases a generation; the harness unmounts every
    /// instance in reverse order; the lineage is let go. Runs in flight
    /// should have finished (or been interrupted through the caller) first.
    pub async fn shutdown(&self) {
        let store = Arc::clone(&self.inner.store);
        let instance = self.inner.instance.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let mut store = lock(&store);
            // Any session turn still claimed (a run cancelled by the stop)
            // is over.
            let _ = store.release_session_claims(&instance);
            store.release(&instance)
        })
        .await;
        for f in self.inner.harness.shutdown().await {
            self.inner.caller.notice(Notice::CleanupFailed {
                description: &f.description,
                error: &f.error,
            });
        }
    }
}

/// A warning when `[serve]` as a reload read it (`now`) differs from what
/// the host started with: those settings (who may call, how long approvals
/// and sessions last) apply at the next start, never to a running server.
fn serve_changed(
    started: &crate::engine::model::ServeSettings,
    now: Option<&crate::engine::model::ServeSettings>,
) -> Option<crate::engine::diag::Diagnostic> {
    let changed = started.changed_keys(&now.cloned().unwrap_or_default());
    if changed.is_empty() {
        return None;
    }
    let keys: Vec<String> = changed.iter().map(|k| format!("`{k}`")).collect();
    Some(
        crate::engine::diag::Diagnostic::warning(
            crate::engine::diag::Code::ServeRestartNeeded,
            format!(
                "`[serve]` changed ({}): this server keeps the settings it started with",
                keys.join(", ")
            ),
        )
        .with_help("restart `chassis serve` to apply them; a reload never changes them"),
    )
}

/// What [`Host::start`] lets a server judge before the store is opened or
/// anything published: the loaded composition's `[serve]`, and its secrets.
pub struct Admission<'a> {
    serve: crate::engine::model::ServeSettings,
    secrets: &'a dyn SecretProvider,
}

impl Admission<'_> {
    /// `[serve]` of the loaded composition (the settings the host keeps).
    pub fn serve_settings(&self) -> &crate::engine::model::ServeSettings {
        &self.serve
    }

    /// The value of secret `name` (a `[serve]` token), learned by the
    /// redactor so it never leaves in a document; unusable input
    /// (`serve::token-missing`) when it is not set.
    pub fn secret(&self, name: &str) -> Result<crate::engine::secret::SecretValue, AppError> {
        self.secrets.get(name).map_err(|e| {
            Problem::input(format!("the `[serve]` token secret `{name}`: {e}"))
                .with_code("serve::token-missing")
                .with_help(format!(
                    "set `{name}` in the environment (or an --env-file) before starting"
                ))
                .into()
        })
    }
}

/// Record the first publication with the store still owned here (nothing
/// is served yet), handing the store back either way.
async fn first_record(
    harness: &Harness,
    mut store: StateStore,
    report: ReconcileReport,
    published: &mut Published,
) -> Result<(StateStore, ReconcileReport), (AppError, Option<StateStore>)> {
    if !report.published {
        return Ok((store, report));
    }
    let Some(generation) = harness.current() else {
        return Err((
            AppError::failure("the reconcile published no generation"),
            Some(store),
        ));
    };
    let nodes = harness.nodes().await;
    let recorded = store.record_publication(Publication {
        report: &report,
        nodes: &nodes,
        generation: &generation,
        previous: published.previous.clone(),
        mounts: published.mounts.clone(),
    });
    if let Err(e) = recorded {
        return Err((e, Some(store)));
    }
    published.advance(&generation, nodes);
    Ok((store, report))
}

impl Published {
    /// After `generation` was recorded with `nodes`.
    fn advance(&mut self, generation: &Generation, nodes: Vec<crate::runtime::harness::SeedNode>) {
        self.previous = Some(generation.id.clone());
        for n in nodes {
            let m = self.mounts.entry(n.entry_id).or_default();
            *m = (*m).max(n.mount);
        }
    }
}

/// A session claimed for one run of one agent ([`Host::claim_session`]),
/// with its earlier turns.
pub struct ClaimedSession {
    agent: String,
    open: OpenSession,
}

/// A session claimed for one run, with its earlier turns.
struct OpenSession {
    conversation: Conversation,
    /// The run taking the turn: its claim in the store is under this id.
    run_id: String,
    claim: TurnHeld,
}

/// A session's one run at a time; released when dropped (in the store
/// too, when [`Host::release_turn`] has not).
struct TurnHeld {
    host: Host,
    id: String,
    /// The run whose claim on the turn is in the store, until let go.
    run_id: Option<String>,
}

impl Drop for TurnHeld {
    fn drop(&mut self) {
        if let Some(run_id) = self.run_id.take() {
            // A run that ended early (a request refused after its session
            // was claimed, a turn that could not be saved): let go in the
            // store beside the runtime, by the run's id, so a later turn's
            // claim is never the one let go.
            let store = Arc::clone(&self.host.inner.store);
            let id = self.id.clone();
            let release = move || {
                if lock(&store).release_session_claim(&id, &run_id).is_err() {
                    tracing::warn!(session = %id, "the session's turn was not let go in the store");
                }
            };
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => drop(rt.spawn_blocking(release)),
                Err(_) => release(),
            }
        }
        lock(&self.host.inner.busy_sessions).remove(&self.id);
    }
}

/// Why a session cannot take a served turn: another process (`chassis run
/// --session`) is taking one — 409, as for a run of this server.
fn busy_elsewhere(holder: &crate::store::SessionClaim) -> Problem {
    Problem::input(format!(
        "the session has a turn under way in another process: {}",
        super::session::claim_holder(holder)
    ))
    .with_code("serve::session-busy")
    .with_help("wait for it to finish; a session answers one turn at a time")
}

/// Closes a run's approval questions however the run ends.
struct CloseQuestions<'h> {
    desk: &'h ApprovalDesk,
    run_id: &'h str,
}

impl Drop for CloseQuestions<'_> {
    fn drop(&mut self) {
        self.desk.close(self.run_id);
    }
}

/// Finishes a run in the book as `failed` if it is dropped armed.
struct Unfinished<'h> {
    host: &'h Host,
    run: Option<HostRun>,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if let Some(run) = self.run.take() {
            self.host.finish(HostRun {
                status: "failed",
                finished_at: Some(now_rfc3339()),
                ..run
            });
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps a reload's diagnostics as JSON, scrubbed by the redactor (the
/// server reports them at `/v1/status`, in the reload's answer and in one
/// line each on its log — never the source text, which may hold a value a
/// secret also has); passes every other notice on.
struct Capture {
    next: Arc<dyn Reporter>,
    redactor: crate::engine::secret::Redactor,
    kept: Mutex<Vec<serde_json::Value>>,
}

impl Capture {
    fn new(next: Arc<dyn Reporter>, redactor: crate::engine::secret::Redactor) -> Self {
        Self {
            next,
            redactor,
            kept: Mutex::new(Vec::new()),
        }
    }

    fn take(&self) -> Vec<serde_json::Value> {
        std::mem::take(&mut *lock(&self.kept))
    }
}

impl Reporter for Capture {
    fn notice(&self, notice: Notice<'_>) {
        if let Notice::Diagnostics {
            diagnostics,
            sources,
        } = &notice
        {
            lock(&self.kept).extend(diagnostics.iter().map(|d| {
                self.redactor
                    .redact_json(&super::documents::diagnostic_json(d, sources))
            }));
            return;
        }
        self.next.notice(notice);
    }
}

/// Why the tools a request brings are refused, with the load's findings
/// (JSON diagnostics, redacted).
#[derive(Debug)]
pub struct RequestToolsRefused {
    /// The refusal (unusable input under `serve::bad-request-tools`, or
    /// `serve::request-tools-disabled`).
    pub error: AppError,
    /// Where in the tools' TOML.
    pub diagnostics: Vec<serde_json::Value>,
}

impl RequestToolsRefused {
    fn new(e: AppError, diagnostics: Vec<serde_json::Value>) -> Box<Self> {
        let error = match e {
            AppError::Problem(mut p) if p.code.is_none() => {
                p.code = Some("serve::bad-request-tools");
                AppError::Problem(p)
            }
            e => e,
        };
        Box::new(Self { error, diagnostics })
    }
}

/// Whether a failure is the client's (4xx) or the server's (5xx).
pub fn is_client_error(e: &AppError) -> bool {
    matches!(e.kind(), ErrorKind::Input | ErrorKind::Negative)
}
