//! `chassis tools`: every tool a composition mounts, per scope, with the
//! policy each call runs under; `--live` starts the MCP servers and
//! compares them with `chassis.lock`, `--update-lock` rewrites it.

use std::path::PathBuf;

use crate::app::tools::{ToolsOptions, tools};

use super::super::exit::ExitStatus;
use super::super::render::tools as render;
use super::super::ui::{Format, Ui};

/// List the tools a composition mounts and the policy each runs under.
///
/// Shows every tool of FILE — declared tools, `command` tools, and the
/// tools of `mcp` entries as pinned in `chassis.lock` beside FILE — with
/// its effective policy: permissions (argument templates), side effects,
/// idempotence, approval, timeout and cost class, and where that policy
/// came from (`override` = the composition's `[policy.tools.<name>]`,
/// `config` = a `command` entry, `annotations` = an MCP server's hints
/// with the entry's `config.policy`, `default`). Then, per scope, the tools
/// its tool views let an agent there see.
///
/// Without `--live` nothing is started. `--live` starts the selected `mcp`
/// entries' servers (secrets from the environment and `--env-file`), lists
/// what they offer, and compares it with the lock; `--update-lock` does
/// the same and writes `chassis.lock` (review it like code; commit it).
///
/// Exit status: 0 listed (and, with `--live`, every server matches its
/// lock; with `--update-lock`, the lock is written), 1 a server differs
/// from or is missing in the lock (`--live`), 2 unusable input, 3 a server
/// could not be started or read.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis tools composition.toml\n  chassis tools composition.toml --entry fs --live\n  chassis tools composition.toml --update-lock\n  chassis tools composition.toml --scope /research --format json"
)]
pub struct ToolsArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only the tools of this entry (and only its server with `--live`).
    #[arg(long, value_name = "ID")]
    pub entry: Option<String>,
    /// Only this scope in the per-scope listing (e.g. `/research`).
    #[arg(long, value_name = "PATH")]
    pub scope: Option<String>,
    /// Start the `mcp` servers and compare what they offer with the lock.
    #[arg(long)]
    pub live: bool,
    /// Start the `mcp` servers and write what they offer to `chassis.lock`.
    #[arg(long)]
    pub update_lock: bool,
    /// Read KEY=VALUE lines as extra environment (secrets for the servers).
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
}

/// Run `tools`.
pub fn run(ui: &Ui, args: &ToolsArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "tools")?;
    let options = ToolsOptions {
        file: args.file.clone(),
        entry: args.entry.clone(),
        scope: args.scope.clone(),
        live: args.live,
        update_lock: args.update_lock,
        env_file: args.env_file.clone(),
    };
    let caller = super::super::caller(ui);
    let report = super::super::block_on(ui, tools(&options, &caller))?;
    ui.emit(
        || render::json(&report, &args.file),
        || render::text(&report, &args.file),
    );
    Ok(if report.drift(args.update_lock) {
        ExitStatus::Negative
    } else {
        ExitStatus::Success
    })
}
