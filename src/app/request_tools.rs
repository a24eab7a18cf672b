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
        BroughtBy::File,
        reporter,
    )
}

/// Where a request's tools come from: what their diagnostics may quote.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BroughtBy {
    /// A file of the user's own (`--request-tools FILE`): its diagnostics
    /// quote it, as a composition's do.
    File,
    /// A client of `chassis serve`: its diagnostics quote nothing it sent
    /// (see [`unquoted`]).
    Client,
}

/// How a request's tools are written, for a client that sent something
/// else (the accepted shape, quoting nothing it sent).
const SHAPE_HELP: &str = "a request's tools are TOML: `version = 1`, then one `[entries.ID]` table per program with `plugin = \"command\"` and its `[[entries.ID.config.tools]]` (`name`, `description`, `args`, `argv`, …), as a `--request-tools` file";

/// `d` as a client that sent the text it is about may see it: its code,
/// severity and places (file, line and column), with the code's own
/// description for a message and label texts and help only where they are
/// the format's own words — the type a value must have (`expected a
/// string`), the keys a table accepts (`expected one of …`, `did you mean
/// …?`, both from the format's fixed lists), the command that prints a
/// built-in kind's configuration schema. The loader's messages quote
/// what they are about (``unknown key `…` in `entries.…` ``, an entry id, a
/// value): a reply that echoed a client's text — or redacted it — would
/// tell a client its guess is a secret's value, or is not.
fn unquoted(d: &Diagnostic) -> Diagnostic {
    let own_words = |message: &str| match d.code {
        Code::WrongType | Code::UnknownKey => message.to_owned(),
        _ => String::new(),
    };
    Diagnostic {
        code: d.code,
        severity: d.severity,
        message: d.code.description().to_owned(),
        labels: d
            .labels
            .iter()
            .map(|l| crate::engine::diag::Label {
                origin: l.origin,
                message: own_words(&l.message),
                primary: l.primary,
            })
            .collect(),
        help: match d.code {
            Code::UnknownKey | Code::BadConfig => d.help.clone(),
            _ => Vec::new(),
        },
    }
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
        BroughtBy::Client,
        reporter,
    )?;
    file.from_client = true;
    // The entry is not named: its id is the client's text.
    if file
        .entries
        .iter()
        .any(|(_, c)| c.cwd.is_some() || !c.env.is_empty())
    {
        return Err(super::error::Problem::input(
            "a request-tools entry sets `cwd` or `env`",
        )
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
    from: BroughtBy,
    reporter: &dyn Reporter,
) -> Result<RequestToolsFile, AppError> {
    let client = from == BroughtBy::Client;
    // What the file says of itself, named where it is the user's own.
    let named = |unnamed: &str, named: String| if client { unnamed.to_owned() } else { named };
    let mut diagnostics = match from {
        BroughtBy::File => loaded.diagnostics.clone(),
        BroughtBy::Client => loaded.diagnostics.iter().map(unquoted).collect(),
    };
    let mut entries = Vec::new();
    let mut config = std::collections::BTreeMap::new();
    if let Some(mut c) = loaded.composition.clone() {
        c.apply_conditions(&|name| env.is_set(name));
        for a in c.agents.values() {
            diagnostics.push(refuse(
                Code::RequestToolsKind,
                named(
                    "an agent in a request-tools file",
                    format!("agent `{}` in a request-tools file", a.name),
                ),
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
                named(
                    "a scope in a request-tools file",
                    format!("scope `{}` in a request-tools file", s.path),
                ),
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
                        named(
                            "a request-tools entry that is not a `command` entry",
                            format!("the request-tools entry `{id}` is not a `command` entry"),
                        ),
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
        let problem = super::error::Problem::input(format!(
            "could not load the request tools `{}`",
            path.display()
        ));
        return Err(if client {
            problem.with_help(SHAPE_HELP)
        } else {
            problem
        }
        .into());
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
                .map_err(|e| {
                    // A client's entry id is not quoted (nor its `cwd`,
                    // which it may not set).
                    AppError::input(if self.from_client {
                        format!(
                            "a request-tools entry cannot start in the composition's folder: {e}"
                        )
                    } else {
                        format!("request-tools entry `{id}`: {e}")
                    })
                })?;
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
