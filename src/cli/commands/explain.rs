//! `chassis explain`: why a requirement resolved the way it did; what a scope
//! sees.

use std::path::PathBuf;

use crate::engine::diag::did_you_mean;
use crate::engine::explain::{explain_requirement, explain_scope};
use crate::engine::model::ScopePath;

use super::super::exit::ExitStatus;
use super::super::render::explain as render;
use super::super::ui::{Format, Ui};
use super::super::workspace::{Resolved, load_file};

/// What to explain.
#[derive(Debug, clap::Subcommand)]
pub enum ExplainCommand {
    /// Every candidate for one requirement: origin, visibility, eligibility,
    /// selection, and the reason each was rejected.
    ///
    /// CONSUMER is an entry id, or a scope path for scope-level requirements.
    #[command(
        after_long_help = "Examples:\n  chassis explain requirement app database composition.toml\n  chassis explain requirement /ops vector composition.toml"
    )]
    Requirement {
        /// Entry id (or scope path) holding the requirement.
        consumer: String,
        /// The required capability.
        capability: String,
        /// The consumer's scope, to make sure it is the one you mean.
        #[arg(long, value_name = "PATH")]
        scope: Option<String>,
        /// Composition file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// A scope: parent, children, effective view, providers (local,
    /// inherited, visible), entries, requirements, tools. Metadata values
    /// are redacted.
    Scope {
        /// Canonical scope path, e.g. `/research`.
        path: String,
        /// Composition file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Why a node was reused, rebuilt or rewired between two stored
    /// generations: which identity parts changed.
    #[command(
        after_long_help = "Examples:\n  chassis explain reuse gen_0001 gen_0002 app\n  chassis explain reuse gen_0001 gen_0002 app --state deploy/.chassis/state.db"
    )]
    Reuse(super::reuse::ReuseArgs),
    /// Each agent's budget limits per dimension and how they are enforced
    /// (the built-in loop enforces every dimension at its boundaries).
    #[command(
        after_long_help = "Examples:\n  chassis explain budgets composition.toml\n  chassis explain budgets composition.toml --agent assistant --format json"
    )]
    Budgets(super::budgets::BudgetsArgs),
}

/// Run `explain`.
pub fn run(ui: &Ui, cmd: &ExplainCommand) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "explain")?;
    match cmd {
        ExplainCommand::Requirement {
            consumer,
            capability,
            scope,
            file,
        } => {
            let resolved = load_file(ui, file)?;
            requirement(ui, &resolved, consumer, capability, scope.as_deref())
        }
        ExplainCommand::Scope { path, file } => {
            let resolved = load_file(ui, file)?;
            scope_report(ui, &resolved, path)
        }
        ExplainCommand::Reuse(args) => super::reuse::run(ui, args),
        ExplainCommand::Budgets(args) => super::budgets::run(ui, args),
    }
}

fn requirement(
    ui: &Ui,
    r: &Resolved,
    consumer: &str,
    capability: &str,
    scope: Option<&str>,
) -> Result<ExitStatus, ExitStatus> {
    let Some(report) = explain_requirement(&r.composition, &r.tree, &r.plan, consumer, capability)
    else {
        let held = r.plan.resolutions_of(consumer);
        let absent = r
            .composition
            .disabled
            .keys()
            .map(|id| (id.as_str(), "disabled (`enabled = false`)"))
            .chain(
                r.composition
                    .skipped
                    .keys()
                    .map(|id| (id.as_str(), "skipped (its `enabled_if` does not hold)")),
            )
            .find(|(id, _)| *id == consumer);
        let message = if let Some((_, why)) = absent {
            format!(
                "error: `{consumer}` is {why} in `{}`, so it holds no requirement",
                r.display
            )
        } else if held.is_empty() {
            let consumers: Vec<&str> = r
                .plan
                .resolutions
                .iter()
                .map(|x| x.consumer.name())
                .collect();
            let hint = did_you_mean(consumer, consumers.iter().copied())
                .map(|s| format!("\n  help: did you mean `{s}`?"))
                .unwrap_or_default();
            format!(
                "error: `{consumer}` holds no requirement in `{}`{hint}",
                r.display
            )
        } else {
            let caps: Vec<String> = held
                .iter()
                .map(|x| format!("`{}`", x.requirement.capability))
                .collect();
            format!(
                "error: `{consumer}` does not require `{capability}`\n  help: it requires {}",
                caps.join(", ")
            )
        };
        ui.err(&message);
        return Err(ExitStatus::Input);
    };
    if let Some(scope) = scope
        && report.resolution.scope.as_str() != scope
    {
        ui.err(&format!(
            "error: `{consumer}` is declared in scope `{}`, not `{scope}`",
            report.resolution.scope
        ));
        return Err(ExitStatus::Input);
    }
    match ui.format {
        Format::Json => ui.out_json(&render::requirement_json(&report)),
        _ => ui.out(&render::requirement_text(&report)),
    }
    Ok(ExitStatus::Success)
}

fn scope_report(ui: &Ui, r: &Resolved, path: &str) -> Result<ExitStatus, ExitStatus> {
    let parsed = ScopePath::new(path).map_err(|e| {
        ui.err(&format!("error: {e}"));
        ExitStatus::Input
    })?;
    let Some(report) = explain_scope(&r.composition, &r.tree, &r.plan, &parsed) else {
        let paths: Vec<&str> = r.composition.scopes.keys().map(ScopePath::as_str).collect();
        let hint = did_you_mean(path, paths.iter().copied())
            .map(|s| format!("\n  help: did you mean `{s}`?"))
            .unwrap_or_default();
        ui.err(&format!(
            "error: no scope `{path}` in `{}`{hint}",
            r.display
        ));
        return Err(ExitStatus::Input);
    };
    match ui.format {
        Format::Json => ui.out_json(&render::scope_json(&report)),
        _ => ui.out(&render::scope_text(&report)),
    }
    Ok(ExitStatus::Success)
}
