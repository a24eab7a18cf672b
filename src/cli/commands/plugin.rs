//! `chassis plugin`: scaffold a process plugin, check one against the
//! plugin protocol.

use std::path::PathBuf;

use crate::app::env::RunEnv;
use crate::app::plugin::check::{CheckOptions, check_plugin};
use crate::app::plugin::new::{Lang, NewOptions, new_plugin};

use super::super::exit::ExitStatus;
use super::super::render::plugin as render;
use super::super::shown;
use super::super::ui::{Format, Ui};

/// The plugin's language.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LangArg {
    /// Python 3.9+ (the SDK is one file of the standard library only).
    Python,
    /// JavaScript for Node 18+, with TypeScript declarations.
    Typescript,
}

/// Scaffold or check a process plugin (a program speaking the plugin
/// protocol; see docs/plugin-protocol.md).
#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Write a working plugin into a new folder: the plugin, its SDK vendored
    /// beside it, its manifest as an include file, and a test.
    ///
    /// Your composition is never edited: the command prints the `include`
    /// line to add.
    ///
    /// Example: chassis plugin new weather --lang python
    New {
        /// The plugin's name (`[plugins.NAME]`): lowercase letters, digits, `-`, `_`.
        name: String,
        /// Its language.
        #[arg(long, value_enum, default_value = "python")]
        lang: LangArg,
        /// The folder to create (default: ./NAME); it must not exist or be empty.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Run the protocol conformance suite against a plugin, started as chassis
    /// starts it: version negotiation and refusal, its declaration against the
    /// TOML manifest, -32601 for an unknown method, -32602 for malformed params,
    /// its registrations, `$/cancel`, teardown within the grace period, and
    /// nothing but protocol messages on stdout. Exit 1 when a check fails.
    ///
    /// Example: chassis plugin check weather/plugin.toml
    Check {
        /// A TOML file declaring the plugin and an entry using it (the
        /// `plugin.toml` of `plugin new`, or a composition).
        file: PathBuf,
        /// Which plugin, when the file has several process plugins.
        #[arg(long, value_name = "NAME")]
        plugin: Option<String>,
        /// Read secrets the entry's configuration references from this
        /// dotenv file too.
        #[arg(long, value_name = "FILE")]
        env_file: Option<PathBuf>,
    },
}

/// Run `plugin`.
pub fn run(ui: &Ui, cmd: &PluginCommand) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "plugin")?;
    match cmd {
        PluginCommand::New { name, lang, dir } => {
            let options = NewOptions {
                name: name.clone(),
                lang: match lang {
                    LangArg::Python => Lang::Python,
                    LangArg::Typescript => Lang::TypeScript,
                },
                dir: dir.clone(),
            };
            let created = shown(ui, new_plugin(&options))?;
            ui.emit(
                || render::created_json(&created),
                || render::created_text(&created),
            );
            Ok(ExitStatus::Success)
        }
        PluginCommand::Check {
            file,
            plugin,
            env_file,
        } => {
            let env = match env_file {
                Some(path) => RunEnv::with_file(path).map_err(|e| {
                    ui.err(&format!("error: {e}"));
                    ExitStatus::Input
                })?,
                None => RunEnv::process(),
            };
            let options = CheckOptions {
                file: file.clone(),
                plugin: plugin.clone(),
            };
            let caller = super::super::caller(ui);
            let report = super::super::block_on(ui, check_plugin(&options, &env, &caller))?;
            ui.emit(
                || render::check_json(&report),
                || render::check_text(&report),
            );
            Ok(if report.passed() {
                ExitStatus::Success
            } else {
                ExitStatus::Negative
            })
        }
    }
}
