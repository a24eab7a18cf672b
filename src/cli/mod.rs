//! The command-line interface: the only module that prints.
//!
//! Each command is a thin function in [`commands`]: parse its arguments
//! into the application layer's options, call one operation of
//! [`crate::app`], and render what it returns through [`ui::Ui`] (with the
//! renderers of [`render`]). What an operation says while it works reaches
//! stderr through [`report::CliReporter`]. Exit codes come from
//! [`exit::ExitStatus`] alone.

pub mod answer_stream;
pub mod commands;
pub mod diagnostic;
pub mod exit;
pub mod interrupt;
pub mod progress;
pub mod prompt;
pub mod render;
pub mod report;
pub mod spinner;
pub mod ui;

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::app::{AppError, Caller, Interrupt};

use exit::ExitStatus;
use ui::{ColorChoice, Format, Ui};

/// chassis: a transactional harness for agent systems.
///
/// A composition (TOML) places plugin entries in a tree of scopes; each plugin
/// declares the capabilities it provides and requires, with versions. chassis
/// resolves it deterministically, explains every decision, snapshots it with
/// stable digests, and diffs two versions of it for CI.
#[derive(Debug, Parser)]
#[command(name = "chassis", version, about, long_about, after_long_help = AFTER_HELP, max_term_width = 100)]
pub struct Cli {
    /// Output format: text, or json (one document with `format_version`;
    /// `schema` prints the JSON Schema itself); some commands also take
    /// markdown, dot or mermaid.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// When to colour diagnostics.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// More logging on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

const AFTER_HELP: &str = "\
Exit codes (every command):
  0    success, or no change
  1    a negative answer: unresolved requirements, a diff under --exit-code,
       an agent that stopped without an answer
  2    unusable input found before anything ran
  3    a failure while running
  130  interrupted

Examples:
  chassis run examples/quickstart.toml
  chassis check composition.toml
  chassis explain requirement app database composition.toml
  chassis diff generations origin/main:composition.toml composition.toml --exit-code";

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Publish a composition and run an agent against exactly that generation.
    Run(commands::run::RunArgs),
    /// Load, validate and resolve compositions; list what does not resolve.
    Check(commands::check::CheckArgs),
    /// Print the snapshot of a resolved composition with its three digests.
    Snapshot(commands::snapshot::SnapshotArgs),
    /// Explain a requirement or a scope.
    #[command(subcommand)]
    Explain(commands::explain::ExplainCommand),
    /// Compare two compositions, snapshots or git revisions semantically.
    #[command(subcommand)]
    Diff(commands::diff::DiffCommand),
    /// Reconcile a composition against the store and record a new generation.
    Publish(commands::publish::PublishArgs),
    /// Publish a composition and serve its agents over HTTP, reloading it as new generations.
    Serve(commands::serve::ServeArgs),
    /// Show what `publish` would do, changing nothing.
    Plan(commands::plan::PlanArgs),
    /// List or show the generations in the store.
    #[command(subcommand)]
    Generations(commands::generations::GenerationsCommand),
    /// List or show the runs recorded in the store.
    #[command(subcommand)]
    Runs(commands::runs::RunsCommand),
    /// List the tools a composition mounts, per scope, with their policy;
    /// start MCP servers and pin their tools in `chassis.lock`.
    Tools(commands::tools::ToolsArgs),
    /// Scaffold a plugin in Python or TypeScript, or check one against the
    /// plugin protocol.
    #[command(subcommand)]
    Plugin(commands::plugin::PluginCommand),
    /// Draw the dependency graph, scopes as clusters.
    Graph(commands::graph::GraphArgs),
    /// Print the JSON Schema of the composition format.
    Schema(commands::schema::SchemaArgs),
    /// Print a shell completion script.
    Completions(commands::completions::CompletionsArgs),
}

fn init_tracing(verbose: u8, quiet: bool, json: bool) {
    use tracing_subscriber::EnvFilter;
    let default = match (quiet, verbose) {
        // rmcp reports a failed connection itself, URL and all; chassis
        // says the same in its own error, so rmcp speaks from -vv on.
        (true, _) => "error,rmcp=off",
        (_, 0) => "warn,rmcp=off",
        (_, 1) => "info,rmcp=off",
        (_, 2) => "debug",
        _ => "trace",
    };
    // `RUST_LOG` wins when it is set to something; an empty value is unset.
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let filter = from_env
        .and_then(|v| EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    let redactor = process_redactor();
    let writer = {
        let redactor = redactor.clone();
        move || RedactingStderr::new(redactor.clone())
    };
    let logger = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .without_time();
    // Under `--format json` stderr carries only JSON lines: a log line is
    // one too.
    let _ = if json {
        logger.event_format(JsonLogLine { redactor }).try_init()
    } else {
        logger.try_init()
    };
}

/// A log event as a JSON diagnostic line (`--format json`): `warning` and
/// `error` at those levels, else `note`, with a `log` object (`level`,
/// `target`, the `spans` it happened in). Scrubbed before it is encoded,
/// since an escaped secret would no longer match the writer's redactor.
struct JsonLogLine {
    redactor: crate::engine::secret::Redactor,
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for JsonLogLine
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        use tracing_subscriber::fmt::FormatFields as _;
        let meta = event.metadata();
        let mut message = String::new();
        ctx.format_fields(
            tracing_subscriber::fmt::format::Writer::new(&mut message),
            event,
        )?;
        let severity = match *meta.level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            _ => "note",
        };
        let spans: Vec<serde_json::Value> = ctx
            .event_scope()
            .into_iter()
            .flat_map(tracing_subscriber::registry::Scope::from_root)
            .map(|span| {
                let extensions = span.extensions();
                let fields = extensions
                    .get::<tracing_subscriber::fmt::FormattedFields<N>>()
                    .map(|f| self.redactor.redact(&f.fields).into_owned())
                    .unwrap_or_default();
                serde_json::json!({ "name": span.name(), "fields": fields })
            })
            .collect();
        let mut line = ui::message_json(severity, None, &self.redactor.redact(&message), &[]);
        line["log"] = serde_json::json!({
            "level": meta.level().as_str(),
            "target": meta.target(),
            "spans": spans,
        });
        writeln!(writer, "{line}")
    }
}

/// The process's redactor: every secret a command resolves is learned
/// here, and every log line (chassis's own and its dependencies', e.g.
/// rmcp's protocol frames at `-vvv`) is scrubbed with it before it
/// reaches stderr.
pub fn process_redactor() -> crate::engine::secret::Redactor {
    static REDACTOR: std::sync::OnceLock<crate::engine::secret::Redactor> =
        std::sync::OnceLock::new();
    REDACTOR
        .get_or_init(crate::engine::secret::Redactor::new)
        .clone()
}

/// One log event, buffered and written to stderr redacted when dropped
/// (tracing-subscriber makes one writer per event).
struct RedactingStderr {
    redactor: crate::engine::secret::Redactor,
    buf: Vec<u8>,
}

impl RedactingStderr {
    fn new(redactor: crate::engine::secret::Redactor) -> Self {
        Self {
            redactor,
            buf: Vec::new(),
        }
    }
}

impl std::io::Write for RedactingStderr {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactingStderr {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.buf);
        let clean = self.redactor.redact(&text);
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), clean.as_bytes());
    }
}

/// Run the CLI with the process arguments.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitStatus::Input.into()
            } else {
                ExitStatus::Success.into()
            };
        }
    };
    init_tracing(cli.verbose, cli.quiet, cli.format == Format::Json);
    run(cli).into()
}

/// Dispatch a parsed command line.
pub fn run(cli: Cli) -> ExitStatus {
    let ui = Ui::new(cli.format, cli.color, cli.quiet);
    // The commands that start programs adopt what escapes them (a `setsid`
    // in a tool) and kill it before they exit; see `process::orphans`.
    let starts_programs = matches!(
        &cli.command,
        Command::Run(_)
            | Command::Publish(_)
            | Command::Serve(_)
            | Command::Tools(_)
            | Command::Plugin(_)
    );
    if starts_programs {
        crate::process::orphans::adopt_orphans();
    }
    let result = match &cli.command {
        Command::Run(args) => commands::run::run(&ui, args),
        Command::Check(args) => commands::check::run(&ui, args),
        Command::Snapshot(args) => commands::snapshot::run(&ui, args),
        Command::Explain(cmd) => commands::explain::run(&ui, cmd),
        Command::Diff(cmd) => commands::diff::run(&ui, cmd),
        Command::Publish(args) => commands::publish::run(&ui, args),
        Command::Serve(args) => commands::serve::run(&ui, args),
        Command::Plan(args) => commands::plan::run(&ui, args),
        Command::Generations(cmd) => commands::generations::run(&ui, cmd),
        Command::Runs(cmd) => commands::runs::run(&ui, cmd),
        Command::Tools(args) => commands::tools::run(&ui, args),
        Command::Plugin(cmd) => commands::plugin::run(&ui, cmd),
        Command::Graph(args) => commands::graph::run(&ui, args),
        Command::Schema(args) => commands::schema::run(&ui, args),
        Command::Completions(args) => commands::completions::run(&ui, args),
    };
    if starts_programs {
        crate::process::orphans::sweep();
    }
    result.unwrap_or_else(|status| status)
}

/// The reporter of a command: notices on stderr, as `ui` renders them.
pub(crate) fn reporter(ui: &Ui) -> report::CliReporter {
    report::CliReporter::new(ui, process_redactor())
}

/// The caller of an operation run from the command line: notices on
/// stderr, the process's redactor (the log writer's too), interrupted by
/// SIGINT, SIGTERM or SIGHUP.
pub(crate) fn caller(ui: &Ui) -> Caller {
    Caller {
        reporter: Arc::new(reporter(ui)),
        redactor: process_redactor(),
        interrupt: Interrupt::new(interrupt::signalled),
    }
}

/// `result`, or its failure shown on stderr as its exit status.
pub(crate) fn shown<T>(ui: &Ui, result: Result<T, AppError>) -> Result<T, ExitStatus> {
    result.map_err(|e| report::fail(ui, &e))
}

/// Run an operation that mounts plugins on a runtime of its own.
pub(crate) fn block_on<T>(
    ui: &Ui,
    operation: impl Future<Output = Result<T, AppError>>,
) -> Result<T, ExitStatus> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::failure(format!("cannot start the runtime: {e}")));
    shown(ui, runtime.and_then(|rt| rt.block_on(operation)))
}

/// Refuse a `--format` a command does not produce.
pub(crate) fn require_format(ui: &Ui, allowed: &[Format], command: &str) -> Result<(), ExitStatus> {
    if allowed.contains(&ui.format) {
        return Ok(());
    }
    let names: Vec<String> = allowed
        .iter()
        .map(|f| {
            format!(
                "`{}`",
                clap::ValueEnum::to_possible_value(f)
                    .map(|v| v.get_name().to_owned())
                    .unwrap_or_default()
            )
        })
        .collect();
    ui.err(&format!(
        "error: `chassis {command}` does not support this --format\n  help: use one of {}",
        names.join(", ")
    ));
    Err(ExitStatus::Input)
}

#[cfg(test)]
mod json_log_tests {
    use std::sync::{Arc, Mutex};

    use crate::engine::secret::{Redactor, SecretValue};

    use super::JsonLogLine;

    #[test]
    fn a_log_line_is_a_json_diagnostic_scrubbed_before_it_is_encoded() {
        // A secret JSON escapes (`"`, `\`) would slip past a redactor run
        // over the encoded line.
        let secret = "sk-\"log\\canary-7";
        let redactor = Redactor::new();
        redactor.learn(&SecretValue::new(secret));
        let written = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = Arc::clone(&written);
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || Sink(Arc::clone(&sink)))
            .with_ansi(false)
            .event_format(JsonLogLine { redactor })
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("reload", entry = "e");
            let _entered = span.enter();
            tracing::warn!(runs = 2, "the key {secret} leaked\nover two lines");
        });
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let line: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(line["type"], "diagnostic");
        assert_eq!(line["severity"], "warning");
        assert_eq!(line["log"]["level"], "WARN");
        assert_eq!(line["log"]["spans"][0]["name"], "reload");
        let message = line["message"].as_str().unwrap();
        assert!(
            message.contains("the key <redacted> leaked\nover two lines"),
            "{message}"
        );
        assert!(message.contains("runs=2"), "{message}");
        assert!(!text.contains("canary"), "{text}");
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
