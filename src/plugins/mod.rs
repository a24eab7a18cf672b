//! Adapters behind the built-in plugin kinds of [`crate::engine::builtin`].
//!
//! The engine derives each built-in kind's manifest from its configuration;
//! the behaviour lives here, at the edge, because it touches the outside
//! world (processes, HTTP, files). [`register_builtins`] installs every kind
//! into a runtime [`Catalog`], so an entry `plugin = "scripted"` mounts the
//! scripted model and `plugin = "command"` mounts command tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::runtime::Catalog;

pub mod child_stderr;
pub mod command;
pub mod hooks;
pub mod http;
pub mod mcp;
pub mod openai;
pub mod process;
pub mod scripted;
pub mod shared;
pub mod system;

/// What the built-in adapters need to know about where they run.
#[derive(Clone)]
pub struct BuiltinEnv {
    /// The directory of the root composition file: relative paths in a
    /// built-in's configuration (`turns_file`, `cwd`, audit files) are
    /// relative to it.
    pub base_dir: PathBuf,
    /// The composition's `chassis.lock`, if it has one: what `mcp` entries
    /// may publish. Shared by the clones of this environment, so a
    /// candidate generation built from a new lock mounts against it.
    lock: Arc<std::sync::RwLock<Option<Arc<crate::lock::Lock>>>>,
    /// The harness's redactor: it learns every secret the harness resolves,
    /// so audit lines, tool stderr and server logs never carry one.
    pub redactor: crate::engine::secret::Redactor,
    /// The environment `secrets.env` entries read (the process's by
    /// default; the CLI adds `--env-file`).
    pub env: Arc<dyn crate::engine::secret::EnvLookup>,
}

impl std::fmt::Debug for BuiltinEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinEnv")
            .field("base_dir", &self.base_dir)
            .finish_non_exhaustive()
    }
}

impl BuiltinEnv {
    /// An environment rooted at `base_dir`.
    pub fn new(base_dir: impl AsRef<Path>) -> Self {
        Self {
            base_dir: base_dir.as_ref().to_path_buf(),
            lock: Arc::default(),
            redactor: crate::engine::secret::Redactor::new(),
            env: Arc::new(system::ProcessEnv),
        }
    }

    /// The same environment reading variables through `env`.
    #[must_use]
    pub fn with_env(mut self, env: Arc<dyn crate::engine::secret::EnvLookup>) -> Self {
        self.env = env;
        self
    }

    /// The same environment with the harness's redactor (give it the one
    /// the harness's secret provider learns into).
    #[must_use]
    pub fn with_redactor(mut self, redactor: crate::engine::secret::Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// The same environment with the composition's lock file.
    #[must_use]
    pub fn with_lock(mut self, lock: Option<crate::lock::Lock>) -> Self {
        // A cell of its own: the environment this was cloned from keeps its lock.
        self.lock = Arc::new(std::sync::RwLock::new(lock.map(Arc::new)));
        self
    }

    /// The lock `mcp` entries mount against now.
    pub fn lock(&self) -> Option<Arc<crate::lock::Lock>> {
        self.lock
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Mount against `lock` from now on (every clone of this environment).
    pub fn set_lock(&self, lock: Option<crate::lock::Lock>) {
        *self
            .lock
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = lock.map(Arc::new);
    }

    /// `path` resolved against the base directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base_dir.join(p)
        }
    }
}

/// Install every built-in kind into `catalog`.
pub fn register_builtins(catalog: &mut Catalog, env: &BuiltinEnv) {
    let env = Arc::new(env.clone());
    command::register_with(catalog, &env, env.redactor.clone());
    hooks::register_with(catalog, &env, env.redactor.clone());
    mcp::register_with(catalog, &env, env.redactor.clone());
    openai::register_with(catalog, env.redactor.clone());
    process::register_with(catalog, &env, env.redactor.clone());
    scripted::register(catalog, &env);
    shared::register(catalog);
    system::register(catalog, &env);
}
