//! `--request-tools FILE`: tools one run brings with its request.
//!
//! Why it exists: the command-line form of a request that carries its own
//! tools (the Oracle runtime's `getRequestTools`; `chassis serve` takes
//! them per request, with `--allow-request-tools`, see [`load_request`]). FILE is a composition of `command` entries only,
//! loaded by the ordinary loader — so its errors point into it — with
//! `enabled_if` evaluated like the composition's; anything else in it
//! (agents, scopes, policy, other kinds) is refused. Its tools are handed to
//! the run, which gets its own candidate generation
//! ([`crate::runtime::request_tools`]); their configurations identify them
//! in the digest. `chassis snapshot --request-tools` derives the same
//! candidate's digest without running anything.

use std::path::Path;
use std::sync::Arc;

use super::env::RunEnv;
use super::error::AppError;
use super::report::{Notice, Reporter};
use crate::engine::builtin::command::{self as kind, CommandConfig};
use crate::engine::diag::{Code, Diagnostic};
use crate::engine::model::ConfigValue;
use crate::engine::request_tools::RequestToolsDecl;
use crate::load::{FsSource, load};
use crate::plugins::BuiltinEnv;
use crate::runtime::ToolRegistration;
use crate::runtime::request_tools::RequestTools;

/// The tools of a request-tools file, per entry.
pub struct RequestToolsFile {
    /// Brought by a client of `chassis serve`: every call needs approval.
    from_client: bool,
    base: BuiltinEnv,
    entries: Vec<(String, CommandConfig)>,
    /// Entry id → configuration: what identifies the tools.
    config: ConfigValue,
}

fn refuse(code: Code, message: String, origin: Option<crate::engine::span::Origin>) -> Diagnostic {
    Diagnostic::error(code, message)
        .at(origin, "not allowed in a request-tools file")
        .with_help("a request-tools file holds `command` entries only")
}

/// Load `path`, evaluating `enabled_if` against `env` (unusable input when
/// it is unusable or holds no tools; its diagnostics are reported).
pub fn load_file(
    path: &Path,
    env: &RunEnv,
    reporter: &dyn Reporter,
) -> Result<RequestToolsFile, AppError> {
    let loaded = load(&FsSource, path);
    from_loaded(
        loaded,
        path,
        BuiltinEnv::new(super::workspace::base_dir(path)),
        env,
        reporter,
    )
}

/// The tools a request to `chassis serve` brings: `text` in the format of
/// a request-tools file, read from nothing but itself (an `include` finds
/// no file, `enabled_if` sees no variable of the server's). They start in
/// `base_dir` (the composition's folder) with none of the server's
/// environment (an entry that sets `cwd` or `env` is refused), and every
/// call of one needs approval — whatever the tool says of itself, since a
/// program can do anything its user can.
pub fn load_request(
    text: &str,
    base_dir: &Path,
    reporter: &dyn Reporter,
) -> Result<RequestToolsFile, AppError> {
    const NAME: &str = "request_tools.toml";
    let loaded = crate::load::load_str(NAME, text);
    // `enabled_if` sees none of the server's variables: whether one is set
    // must not show in an answer.
    let mut file = from_loaded(
        loaded,
        Path::new(NAME),
        BuiltinEnv::new(base_dir),
        &RunEnv::default(),
        reporter,
    )?;
    file.from_client = true;
    if let Some((id, _)) = file
        .entries
        .iter()
        .find(|(_, c)| c.cwd.is_some() || !c.env.is_empty())
    {
        return Err(super::error::Problem::input(format!(
            "the request-tools entry `{id}` sets `cwd` or `env`"
        ))
        .with_help("a request's tools run in the composition's folder with none of the server's environment; leave both out")
        .into());
    }
    Ok(file)
}

fn from_loaded(
    loaded: crate::load::Loaded,
    path: &Path,
    base: BuiltinEnv,
    env: &RunEnv,
    reporter: &dyn Reporter,
) -> Result<RequestToolsFile, AppError> {
    let mut diagnostics = loaded.diagnostics.clone();
    let mut entries = Vec::new();
    let mut config = std::collections::BTreeMap::new();
    if let Some(mut c) = loaded.composition.clone() {
        c.apply_conditions(&|name| env.is_set(name));
        for a in c.agents.values() {
            diagnostics.push(refuse(
                Code::RequestToolsKind,
                format!("agent `{}` in a request-tools file", a.name),
                a.origin,
            ));
        }
        for s in c
            .scopes
            .values()
            .filter(|s| !s.implied && s.origin.is_some())
        {
            diagnostics.push(refuse(
                Code::RequestToolsKind,
                format!("scope `{}` in a request-tools file", s.path),
                s.origin,
            ));
        }
        if c.policy.is_some() {
            diagnostics.push(refuse(
                Code::RequestToolsKind,
                "`[policy]` in a request-tools file (the composition's policy applies)".into(),
                None,
            ));
        }
        for (id, entry) in &c.entries {
            if entry.manifest.kind.as_deref() != Some(kind::KIND.name) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::RequestToolsKind,
                        format!("the request-tools entry `{id}` is not a `command` entry"),
                    )
                    .at(entry.origin, "a request brings command tools")
                    .with_help("write `plugin = \"command\"` with `config.tools`"),
                );
                continue;
            }
            // The loader checked the configuration against its schema.
            if let Ok(parsed) = kind::parse(&entry.config) {
                config.insert(id.to_string(), (*entry.config).clone());
                entries.push((id.to_string(), parsed));
            }
        }
    }
    let errors = diagnostics.iter().any(Diagnostic::is_error);
    if !errors && loaded.composition.is_some() && entries.iter().all(|(_, c)| c.tools.is_empty()) {
        diagnostics.push(Diagnostic::error(
            Code::RequestToolsKind,
            format!("`{}` brings no tools", path.display()),
        ));
    }
    if !diagnostics.is_empty() {
        reporter.notice(Notice::Diagnostics {
            diagnostics: &diagnostics,
            sources: &loaded.sources,
        });
    }
    if loaded.composition.is_none() || diagnostics.iter().any(Diagnostic::is_error) {
        return Err(AppError::input(format!(
            "could not load the request tools `{}`",
            path.display()
        )));
    }
    Ok(RequestToolsFile {
        from_client: false,
        base,
        entries,
        config: ConfigValue::Table(config),
    })
}

impl RequestToolsFile {
    /// What the snapshot sees of the tools (the same as the runtime derives
    /// from [`Self::request_tools`]).
    pub fn decl(&self) -> RequestToolsDecl {
        let tools = self
            .entries
            .iter()
            .flat_map(|(_, c)| c.tools.iter())
            .map(|t| (t.decl(), &t.policy));
        RequestToolsDecl::new(tools, self.config.clone())
    }

    /// The tools, ready to run (relative `cwd` resolves beside the file;
    /// only the allowed environment reaches them). Unusable input when a
    /// working directory is missing.
    pub fn request_tools(
        &self,
        redactor: &crate::engine::secret::Redactor,
    ) -> Result<RequestTools, AppError> {
        let mut tools = Vec::new();
        for (id, config) in &self.entries {
            let cwd = crate::plugins::command::working_dir(&self.base, config.cwd.as_deref())
                .map_err(|e| AppError::input(format!("request-tools entry `{id}`: {e}")))?;
            let env = crate::process::allowed_env(&config.env);
            for spec in &config.tools {
                let mut policy = spec.policy.clone();
                // A client's program is approved call by call, whatever
                // it says of itself (`read_only`, `idempotent`): it can run
                // anything as the server's user.
                if self.from_client {
                    policy.approval_required = true;
                }
                let tool = crate::plugins::command::CommandTool::new(
                    spec.clone(),
                    cwd.clone(),
                    env.clone(),
                    redactor.clone(),
                );
                tools.push(ToolRegistration {
                    id: String::new(),
                    owner: id.clone(),
                    tool: Arc::new(tool),
                    policy,
                });
            }
        }
        Ok(RequestTools {
            tools,
            config: self.config.clone(),
        })
    }
}
