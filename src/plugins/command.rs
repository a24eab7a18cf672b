//! The `command` kind: each configured program is a tool.
//!
//! The engine half ([`crate::engine::builtin::command`]) validated the
//! configuration and turns a call's arguments into an argv and stdin; this
//! adapter runs it through [`crate::process::run`] (own process group,
//! environment allow-list, hard timeout) and maps the outcome to a tool
//! result. A program that fails, crashes or hangs fails its call only:
//! exit codes and signals become errors naming them, with the redacted tail
//! of stderr attached, and the whole process group is killed on timeout,
//! cancellation or when the executor drops the call on its deadline.
//!
//! Timeouts: the tool's policy carries `timeout_seconds`, so the executor
//! enforces the deadline and reports the call as `timeout`; the runner's
//! own timeout is that plus [`BACKSTOP`], for callers outside the executor
//! and for compositions whose `[policy.tools]` override drops the deadline.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::BuiltinEnv;
use crate::engine::builtin::command::{self as kind, CommandToolSpec};
use crate::engine::model::{Entry, Manifest};
use crate::engine::secret::Redactor;
use crate::process::{self, ProcessOutput, ProcessSpec};
use crate::runtime::{BoxError, Catalog, Plugin, PluginContext, Tool, ToolCallContext, ToolOutput};

#[cfg(test)]
#[path = "command_tests.rs"]
pub(crate) mod tests;

/// How much of stderr a failure carries.
pub const STDERR_TAIL_BYTES: usize = 2048;

/// How much later than the policy deadline the runner kills on its own.
pub const BACKSTOP: Duration = Duration::from_secs(1);

/// The configuration's problems as one setup error.
pub(crate) fn problems_error(
    kind: &str,
    problems: &[crate::engine::builtin::ConfigProblem],
) -> BoxError {
    let list: Vec<String> = problems
        .iter()
        .map(|p| {
            let at = if p.pointer.is_empty() {
                "/"
            } else {
                &p.pointer
            };
            format!("{at}: {}", p.message)
        })
        .collect();
    format!("invalid `{kind}` configuration: {}", list.join("; ")).into()
}

/// The working directory `cwd` (relative to the composition), checked.
pub(crate) fn working_dir(env: &BuiltinEnv, cwd: Option<&str>) -> Result<PathBuf, BoxError> {
    let dir = env.resolve(cwd.unwrap_or("."));
    if !dir.is_dir() {
        return Err(format!(
            "the working directory `{}` does not exist or is not a directory",
            dir.display()
        )
        .into());
    }
    Ok(dir)
}

/// How much stderr to keep so that its last [`STDERR_TAIL_BYTES`] can be
/// shown redacted: the tail, and as much again as the longest secret
/// `redactor` knows (what [`stderr_tail`] drops at the head of a window
/// that was cut, so that no piece of a secret the cut went through is
/// shown).
pub(crate) fn stderr_capture_bytes(redactor: &Redactor) -> usize {
    STDERR_TAIL_BYTES + redactor.longest()
}

/// The tail of `out`'s stderr, at most [`STDERR_TAIL_BYTES`], redacted.
///
/// `out` kept the last [`stderr_capture_bytes`] of it, a window that may
/// begin inside a secret: that piece is no known value, so redacting the
/// window would leave it at the head. When stderr was cut, the window's
/// first bytes, as many as a secret is long less one, are dropped before
/// redacting ([`Redactor::redact_window`]); what is left is redacted
/// whole, then cut to the tail, and the elision is shown as `…`.
pub(crate) fn stderr_tail(out: &ProcessOutput, redactor: &Redactor) -> String {
    let (text, dropped) = redactor.redact_window(&out.stderr, out.stderr_truncated, false);
    let text = text.trim_end();
    let mut start = text.len().saturating_sub(STDERR_TAIL_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    if out.stderr_truncated || dropped || start > 0 {
        format!("…{}", &text[start..])
    } else {
        text.to_owned()
    }
}

/// One configured program as a tool.
pub struct CommandTool {
    spec: CommandToolSpec,
    cwd: PathBuf,
    env: Vec<(OsString, OsString)>,
    redactor: Redactor,
}

impl std::fmt::Debug for CommandTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandTool")
            .field("name", &self.spec.name)
            .field("program", &self.spec.program)
            .finish_non_exhaustive()
    }
}

impl CommandTool {
    /// A tool running `spec` in `cwd` with the environment `env`; stderr in
    /// failures is scrubbed by `redactor`.
    pub fn new(
        spec: CommandToolSpec,
        cwd: PathBuf,
        env: Vec<(OsString, OsString)>,
        redactor: Redactor,
    ) -> Self {
        Self {
            spec,
            cwd,
            env,
            redactor,
        }
    }
}

#[async_trait::async_trait]
impl Tool for CommandTool {
    fn name(&self) -> &str {
        self.spec.name.as_str()
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn args_schema(&self) -> Option<&Value> {
        self.spec.args_schema.as_ref()
    }

    async fn call(&self, args: Value, ctx: &ToolCallContext) -> Result<ToolOutput, BoxError> {
        let name = self.spec.name.as_str();
        let invocation = self
            .spec
            .invocation(&args)
            .map_err(|e| format!("cannot build the command line: {e}"))?;
        let mut p = ProcessSpec::new(invocation.program, invocation.args, self.cwd.clone());
        p.env = self.env.clone();
        p.stdin = invocation.stdin;
        p.timeout = Some(self.spec.timeout + BACKSTOP);
        p.max_stdout_bytes = self.spec.max_output_bytes;
        p.max_stderr_bytes = stderr_capture_bytes(&self.redactor);
        let out = process::run(&p, &ctx.cancel)
            .await
            .map_err(|e| format!("cannot run `{name}`: {e}"))?;
        if !out.success() {
            let stderr = stderr_tail(&out, &self.redactor);
            let how = match (out.killed, out.exit) {
                (Some(reason), _) => format!("was killed: {reason}"),
                (None, process::Exit::Signal(_)) => format!("was terminated by {}", out.exit),
                (None, exit) => format!("failed with {exit}"),
            };
            let msg = if stderr.is_empty() {
                format!("the program {how} (no stderr)")
            } else {
                format!("the program {how}; stderr: {stderr}")
            };
            return Err(msg.into());
        }
        let content = self.spec.decode_output(&out.stdout)?;
        let mut artifact = json!({
            "exit_code": 0,
            "duration_seconds": out.duration.as_secs_f64(),
        });
        let stderr = stderr_tail(&out, &self.redactor);
        if !stderr.is_empty() {
            artifact["stderr"] = Value::String(stderr);
        }
        Ok(ToolOutput {
            content,
            artifact: Some(artifact),
        })
    }
}

struct CommandPlugin {
    manifest: Arc<Manifest>,
    env: Arc<BuiltinEnv>,
    redactor: Redactor,
}

#[async_trait::async_trait]
impl Plugin for CommandPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        let config = kind::parse(ctx.config()).map_err(|p| problems_error(kind::KIND.name, &p))?;
        let cwd = working_dir(&self.env, config.cwd.as_deref())?;
        // Snapshot the allowed variables at mount: a generation's tools see
        // the environment it was published with.
        let env = process::allowed_env(&config.env);
        for spec in config.tools {
            let policy = spec.policy.clone();
            let tool = CommandTool::new(spec, cwd.clone(), env.clone(), self.redactor.clone());
            ctx.tools().register(Arc::new(tool), policy)?;
        }
        Ok(())
    }
}

/// Install the kind; stderr attached to failures is scrubbed by a redactor
/// that knows no values (the executor scrubs known secrets again).
pub fn register(catalog: &mut Catalog, env: &Arc<BuiltinEnv>) {
    register_with(catalog, env, Redactor::new());
}

/// Install the kind with the harness's redactor.
pub fn register_with(catalog: &mut Catalog, env: &Arc<BuiltinEnv>, redactor: Redactor) {
    let env = Arc::clone(env);
    catalog.register(
        kind::KIND.name,
        Arc::new(move |entry: &Entry| {
            Ok(Arc::new(CommandPlugin {
                manifest: Arc::clone(&entry.manifest),
                env: Arc::clone(&env),
                redactor: redactor.clone(),
            }) as Arc<dyn Plugin>)
        }),
    );
}
