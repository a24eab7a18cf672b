//! `--request-tools FILE`: tools one run brings with its request.
//!
//! Why it exists: the command-line form of a request that carries its own
//! tools (the Oracle runtime's `getRequestTools`; `chassis serve` will take
//! them per request). FILE is a composition of `command` entries only,
//! loaded by the ordinary loader — so its errors point into it — whose tools
//! are handed to the run, which gets its own candidate generation
//! ([`crate::runtime::request_tools`]). `chassis snapshot --request-tools`
//! derives the same candidate's digest without running anything.

use std::path::Path;
use std::sync::Arc;

use super::exit::ExitStatus;
use super::ui::Ui;
use crate::engine::builtin::command::{self as kind, CommandConfig};
use crate::engine::diag::{Code, Diagnostic};
use crate::engine::model::ToolDecl;
use crate::load::{FsSource, load};
use crate::plugins::BuiltinEnv;
use crate::runtime::ToolRegistration;

/// The tools of a request-tools file, per entry.
pub struct RequestTools {
    base: BuiltinEnv,
    entries: Vec<(String, CommandConfig)>,
}

/// Load `path` (exit 2 when it is unusable, with diagnostics).
pub fn load_file(ui: &Ui, path: &Path) -> Result<RequestTools, ExitStatus> {
    let loaded = load(&FsSource, path);
    let mut diagnostics = loaded.diagnostics.clone();
    let mut entries = Vec::new();
    if let Some(c) = &loaded.composition {
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
            if let Ok(config) = kind::parse(&entry.config) {
                entries.push((id.to_string(), config));
            }
        }
    }
    ui.diagnostics(&diagnostics, &loaded.sources);
    if loaded.composition.is_none() || diagnostics.iter().any(Diagnostic::is_error) {
        ui.err(&format!(
            "error: could not load the request tools `{}`",
            path.display()
        ));
        return Err(ExitStatus::Input);
    }
    Ok(RequestTools {
        base: BuiltinEnv::new(super::workspace::base_dir(path)),
        entries,
    })
}

impl RequestTools {
    /// The tools' contracts (what the snapshot hashes).
    pub fn decls(&self) -> Vec<ToolDecl> {
        self.entries
            .iter()
            .flat_map(|(_, c)| c.tools.iter())
            .map(|t| ToolDecl {
                name: t.name.clone(),
                description: t.description.clone(),
                args_schema: t.args_schema.clone(),
                result: None,
                guide: None,
                origin: None,
            })
            .collect()
    }

    /// The tools, ready to run (relative `cwd` resolves beside the file;
    /// only the allowed environment reaches them). Exit 2 when a working
    /// directory is missing.
    pub fn registrations(
        &self,
        ui: &Ui,
        redactor: &crate::engine::secret::Redactor,
    ) -> Result<Vec<ToolRegistration>, ExitStatus> {
        let mut out = Vec::new();
        for (id, config) in &self.entries {
            let cwd = crate::plugins::command::working_dir(&self.base, config.cwd.as_deref())
                .map_err(|e| {
                    ui.err(&format!("error: request-tools entry `{id}`: {e}"));
                    ExitStatus::Input
                })?;
            let env = crate::process::allowed_env(&config.env);
            for spec in &config.tools {
                let policy = spec.policy.clone();
                let tool = crate::plugins::command::CommandTool::new(
                    spec.clone(),
                    cwd.clone(),
                    env.clone(),
                    redactor.clone(),
                );
                out.push(ToolRegistration {
                    id: String::new(),
                    owner: id.clone(),
                    tool: Arc::new(tool),
                    policy,
                });
            }
        }
        Ok(out)
    }
}
