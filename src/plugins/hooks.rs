//! Adapters of the hook kinds `audit`, `deny` and `hook-command`.
//!
//! The engine ([`crate::engine::builtin::hooks`]) validated the
//! configuration; these adapters register the hooks: `audit` appends a
//! redacted JSON line per event to a file, `deny` bails `before_tool_execute`
//! for matching calls, `hook-command` runs an executable per event through
//! [`crate::process::run`] under the same rules as command tools (own
//! process group, environment allow-list, hard timeout). A hook that fails
//! (unwritable file, non-zero exit, timeout, unparseable reply) returns an
//! error, which the dispatcher handles by the registration's error policy;
//! a reply the hook's mode does not allow is judged by the dispatcher, as
//! for every hook.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::BuiltinEnv;
use super::command::{problems_error, stderr_capture_bytes, stderr_tail, working_dir};
use crate::engine::builtin::hooks::{
    self as kinds, AuditSpec, DenySpec, HookCommandMode, HookCommandReply, HookCommandSpec,
};
use crate::engine::model::{Entry, Manifest};
use crate::engine::secret::Redactor;
use crate::process::{self, ProcessSpec};
use crate::runtime::{
    BoxError, Cancellation, Catalog, ErrorPolicy, HookEvent, HookHandler, HookMode, HookReply,
    Plugin, PluginContext,
};

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;

/// The most stdout a hook command's reply may have.
pub const MAX_REPLY_BYTES: usize = 1 << 20;

fn hook_event(name: &str) -> Result<HookEvent, BoxError> {
    HookEvent::parse(name).ok_or_else(|| format!("`{name}` is not a hook event").into())
}

/// Appends one line per event.
struct AuditHook {
    file: Arc<Mutex<std::fs::File>>,
    path: PathBuf,
    redactor: Redactor,
}

#[async_trait::async_trait]
impl HookHandler for AuditHook {
    async fn call(&self, event: HookEvent, payload: &Value) -> Result<HookReply, BoxError> {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| (d.as_millis() as f64) / 1000.0);
        let line = json!({
            "event": event.as_str(),
            "ts": ts,
            "payload": self.redactor.redact_json(payload),
        });
        let mut text = line.to_string();
        text.push('\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        // One write per line (O_APPEND): lines of concurrent runs never
        // interleave, and nothing is buffered in the process.
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| format!("cannot append to `{}`: {e}", self.path.display()))?;
        Ok(HookReply::Continue)
    }
}

/// Refuses matching tool calls.
struct DenyHook {
    spec: DenySpec,
}

#[async_trait::async_trait]
impl HookHandler for DenyHook {
    async fn call(&self, _event: HookEvent, payload: &Value) -> Result<HookReply, BoxError> {
        let tool = payload.get("tool").and_then(Value::as_str).unwrap_or("");
        let args = payload.get("args").unwrap_or(&Value::Null);
        Ok(match self.spec.refusal(tool, args) {
            Some(reason) => HookReply::Bail(reason),
            None => HookReply::Continue,
        })
    }
}

/// Runs the executable once per event.
struct CommandHook {
    spec: Arc<HookCommandSpec>,
    cwd: PathBuf,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    redactor: Redactor,
}

#[async_trait::async_trait]
impl HookHandler for CommandHook {
    async fn call(&self, event: HookEvent, payload: &Value) -> Result<HookReply, BoxError> {
        let spec = &self.spec;
        let mut p = ProcessSpec::new(spec.program.clone(), spec.args.clone(), self.cwd.clone());
        p.env = self.env.clone();
        // A hook is outside: it sees what the conversation holds, with no
        // secret value in it (a transform that echoes a payload back gets
        // the redacted form).
        p.stdin = Some(
            json!({ "event": event.as_str(), "payload": self.redactor.redact_foreign(payload) })
                .to_string()
                .into_bytes(),
        );
        p.timeout = Some(spec.timeout);
        p.max_stdout_bytes = MAX_REPLY_BYTES;
        p.max_stderr_bytes = stderr_capture_bytes(&self.redactor);
        // Hooks have no cancellation of their own: the timeout bounds them,
        // and dropping the dispatch kills the group.
        let out = process::run(&p, &Cancellation::new())
            .await
            .map_err(|e| format!("cannot run the hook command: {e}"))?;
        if !out.success() {
            let stderr = stderr_tail(&out, &self.redactor);
            let tail = if stderr.is_empty() {
                String::new()
            } else {
                format!("; stderr: {stderr}")
            };
            return Err(format!("the hook command {}{tail}", out.describe()).into());
        }
        let reply = kinds::parse_reply(&out.stdout)
            .map_err(|e| format!("the hook command's reply is invalid: {e}"))?;
        // What its mode lets the reply do is the dispatcher's decision, the
        // same for every hook ([`crate::runtime::hooks::allowed`]).
        Ok(match reply {
            HookCommandReply::Continue => HookReply::Continue,
            HookCommandReply::Transform(p) => HookReply::Replace(p),
            HookCommandReply::Bail(reason) => HookReply::Bail(reason),
        })
    }
}

enum Spec {
    Audit(AuditSpec),
    Deny(DenySpec),
    Command(HookCommandSpec),
}

struct HookPlugin {
    kind: &'static str,
    manifest: Arc<Manifest>,
    env: Arc<BuiltinEnv>,
    redactor: Redactor,
}

impl HookPlugin {
    fn parse(&self, ctx: &PluginContext) -> Result<Spec, BoxError> {
        let config = ctx.config();
        let err = |p: Vec<crate::engine::builtin::ConfigProblem>| problems_error(self.kind, &p);
        Ok(match self.kind {
            "audit" => Spec::Audit(kinds::parse_audit(config).map_err(err)?),
            "deny" => Spec::Deny(kinds::parse_deny(config).map_err(err)?),
            _ => Spec::Command(kinds::parse_hook_command(config).map_err(err)?),
        })
    }
}

#[async_trait::async_trait]
impl Plugin for HookPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        match self.parse(&ctx)? {
            Spec::Audit(spec) => {
                let path = self.env.resolve(&spec.path);
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|e| format!("cannot open the audit file `{}`: {e}", path.display()))?;
                let handler: Arc<dyn HookHandler> = Arc::new(AuditHook {
                    file: Arc::new(Mutex::new(file)),
                    path,
                    redactor: self.redactor.clone(),
                });
                for name in &spec.events {
                    ctx.hooks().register(
                        hook_event(name)?,
                        Arc::clone(&handler),
                        HookMode::Observe,
                        spec.priority,
                    )?;
                }
            }
            Spec::Deny(spec) => {
                let priority = spec.priority;
                ctx.hooks().register(
                    HookEvent::BeforeToolExecute,
                    Arc::new(DenyHook { spec }),
                    HookMode::Bail,
                    priority,
                )?;
            }
            Spec::Command(spec) => {
                let cwd = working_dir(&self.env, spec.cwd.as_deref())?;
                let env = process::allowed_env(&spec.env);
                let mode = match spec.mode {
                    HookCommandMode::Observe => HookMode::Observe,
                    HookCommandMode::Transform => HookMode::Transform,
                    HookCommandMode::Bail => HookMode::Bail,
                };
                let policy = if spec.raise {
                    ErrorPolicy::Raise
                } else {
                    ErrorPolicy::Record
                };
                let spec = Arc::new(spec);
                let handler: Arc<dyn HookHandler> = Arc::new(CommandHook {
                    spec: Arc::clone(&spec),
                    cwd,
                    env,
                    redactor: self.redactor.clone(),
                });
                for name in &spec.events {
                    ctx.hooks().register_with(
                        hook_event(name)?,
                        Arc::clone(&handler),
                        mode,
                        spec.priority,
                        policy,
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// Install the three kinds; audit lines and failure stderr are scrubbed by
/// key name and by a redactor that knows no values.
pub fn register(catalog: &mut Catalog, env: &Arc<BuiltinEnv>) {
    register_with(catalog, env, Redactor::new());
}

/// Install the three kinds with the harness's redactor (so values it
/// learned, e.g. resolved secrets, never reach an audit file).
pub fn register_with(catalog: &mut Catalog, env: &Arc<BuiltinEnv>, redactor: Redactor) {
    for kind in [
        kinds::AUDIT.name,
        kinds::DENY.name,
        kinds::HOOK_COMMAND.name,
    ] {
        let env = Arc::clone(env);
        let redactor = redactor.clone();
        catalog.register(
            kind,
            Arc::new(move |entry: &Entry| {
                Ok(Arc::new(HookPlugin {
                    kind,
                    manifest: Arc::clone(&entry.manifest),
                    env: Arc::clone(&env),
                    redactor: redactor.clone(),
                }) as Arc<dyn Plugin>)
            }),
        );
    }
}
