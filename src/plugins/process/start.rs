//! Starting a process plugin: spawn, `initialize`, `setup`, and what the
//! plugin registered; stopping it: `teardown`, then its process group.
//!
//! Every failure here happens before the plugin is mounted, so it is a
//! setup error (the harness reports a `PluginSetupError` and rolls the
//! candidate back) naming the entry, the program, the reason, and the last
//! lines the process wrote to stderr, redacted.

use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::protocol::{
    BoundProvider, InitializeParams, InitializeResult, PROTOCOL_VERSION, PluginInfo, SetupParams,
    SetupResult, TeardownParams, method,
};
use super::rpc::{CallError, Connection, RpcError};
use crate::engine::canonical::Canon;
use crate::engine::model::{ConfigValue, Manifest, ProcessCommand};
use crate::engine::secret::Redactor;
use crate::engine::specifier::Specifier;
use crate::engine::version::Version;
use crate::process::group::ProcessGroup;
use crate::runtime::{PluginContext, RegistrationBreach};

/// How long `initialize` and `setup` may each take, unless the manifest
/// says otherwise (`startup_timeout_seconds`).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long `manifest`'s process may take to answer `initialize`, and then
/// `setup`: its `startup_timeout_seconds`, else [`STARTUP_TIMEOUT`].
pub fn startup_timeout(manifest: &Manifest) -> Duration {
    manifest
        .process
        .as_ref()
        .and_then(|p| p.startup_timeout)
        .unwrap_or(STARTUP_TIMEOUT)
}

/// How long a plugin has to answer `teardown` and exit before its process
/// group is killed.
pub const TEARDOWN_GRACE: Duration = Duration::from_secs(5);

/// Variables every plugin gets (when set), besides its `env` list and
/// `PYENV_*`.
pub const BASE_ENV: [&str; 5] = ["PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV"];

/// Everything needed to start the plugin again: what `mount` read from
/// the context once (a restart must present the same entry, configuration
/// and providers as the generation published).
#[derive(Clone)]
pub struct Launch {
    /// The manifest (with its command).
    pub manifest: Arc<Manifest>,
    /// Entry id.
    pub entry: String,
    /// The resolved program.
    pub program: std::path::PathBuf,
    /// `setup`'s params (configuration with secrets resolved).
    pub setup: SetupParams,
    /// The stderr redactor.
    pub redactor: Redactor,
    /// Answers the plugin's own requests.
    pub handler: super::rpc::Handler,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("entry", &self.entry)
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

/// A started plugin process.
pub struct Process {
    /// Its connection.
    pub conn: Arc<Connection>,
    /// Its process group (the connection asks it how the process ended
    /// when its stdout closes).
    pub group: Arc<ProcessGroup>,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process").finish_non_exhaustive()
    }
}

impl Process {
    /// After a cancelled `initialize` or `setup` (its `$/cancel` sent):
    /// Send `teardown` while the connection is open and wait up to
    /// [`TEARDOWN_GRACE`] for its answer: why it failed, if it did.
    async fn ask_teardown(&self) -> Option<String> {
        if self.conn.closed_reason().is_some() {
            return None;
        }
        self.conn
            .request(
                method::TEARDOWN,
                serde_json::to_value(TeardownParams {}).unwrap_or(json!({})),
                Some(TEARDOWN_GRACE),
                None,
            )
            .await
            .err()
            .map(|e| e.to_string())
    }

    /// `teardown`, then end the process group, both within one
    /// [`TEARDOWN_GRACE`] — the plugin's setup may still be running, so its
    /// answer is not waited for beyond it.
    async fn stop_cancelled(&self, entry: &str) {
        let deadline = tokio::time::Instant::now() + TEARDOWN_GRACE;
        if let Some(e) = self.ask_teardown().await {
            tracing::debug!(target: "chassis::plugin", entry = %entry, "teardown of a cancelled setup: {e}");
        }
        self.group
            .stop(deadline.saturating_duration_since(tokio::time::Instant::now()))
            .await;
    }

    /// `teardown`, then end the process group.
    pub async fn stop(&self, entry: &str) {
        if let Some(e) = self.ask_teardown().await {
            tracing::warn!(target: "chassis::plugin", entry = %entry, "teardown: {e}");
        }
        self.group.stop(TEARDOWN_GRACE).await;
    }
}

/// The environment of a plugin: the base allow-list, `PYENV_*`, and the
/// names the manifest lists, as this process has them.
fn environment(command: &ProcessCommand) -> Vec<(OsString, OsString)> {
    let mut names: Vec<String> = BASE_ENV.iter().map(|s| (*s).to_owned()).collect();
    names.extend(command.env.iter().cloned());
    names.extend(
        std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .filter(|k| k.starts_with("PYENV_")),
    );
    names.sort();
    names.dedup();
    crate::process::allowed_env(&names)
}

/// The entry's configuration as JSON, each secret reference replaced by
/// the value `secret` resolves (which `redactor` learns first): a plugin
/// sees a secret only where its configuration names one.
pub fn config_json(
    value: &ConfigValue,
    secret: &dyn Fn(&str) -> Result<crate::engine::secret::SecretValue, String>,
    redactor: &Redactor,
) -> Result<Value, String> {
    Ok(match value {
        ConfigValue::Secret(r) => {
            let value = secret(&r.name)?;
            redactor.learn(&value);
            Value::String(value.reveal().to_owned())
        }
        ConfigValue::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| config_json(v, secret, redactor))
                .collect::<Result<_, _>>()?,
        ),
        ConfigValue::Table(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), config_json(v, secret, redactor)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.to_json(),
    })
}

/// What differs between the TOML manifest and the plugin's declaration,
/// one line each.
pub fn declaration_differences(manifest: &Manifest, info: &PluginInfo) -> Vec<String> {
    let mut out = Vec::new();
    if info.name != manifest.name {
        out.push(format!(
            "name: the manifest says `{}`, the plugin `{}`",
            manifest.name, info.name
        ));
    }
    match Version::parse(&info.version) {
        Ok(v) if v == manifest.version => {}
        _ => out.push(format!(
            "version: the manifest says `{}`, the plugin `{}`",
            manifest.version, info.version
        )),
    }
    let toml_provides: Vec<(String, Vec<String>)> = manifest
        .provides
        .iter()
        .map(|(k, p)| {
            (
                k.to_string(),
                p.versions.iter().map(ToString::to_string).collect(),
            )
        })
        .collect();
    let mut plugin_provides: Vec<(String, Vec<String>)> = info
        .provides
        .iter()
        .map(|(k, vs)| {
            let mut vs: Vec<String> = vs
                .iter()
                .map(|v| Version::parse(v).map_or_else(|_| v.clone(), |v| v.to_string()))
                .collect();
            vs.sort_by(|a, b| match (Version::parse(a), Version::parse(b)) {
                (Ok(a), Ok(b)) => a.cmp(&b),
                _ => a.cmp(b),
            });
            (k.clone(), vs)
        })
        .collect();
    plugin_provides.sort();
    if toml_provides != plugin_provides {
        let show = |p: &[(String, Vec<String>)]| {
            p.iter()
                .map(|(k, v)| format!("{k} {}", v.join("/")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push(format!(
            "provides: the manifest says [{}], the plugin [{}]",
            show(&toml_provides),
            show(&plugin_provides)
        ));
    }
    for (field, optional, declared) in [
        ("requires", false, &info.requires),
        ("optional", true, &info.optional),
    ] {
        let toml: Vec<(String, String)> = manifest
            .requires
            .values()
            .filter(|r| r.optional == optional)
            .map(|r| (r.capability.to_string(), r.specifier.to_string()))
            .collect();
        let plugin: Vec<(String, String)> = declared
            .iter()
            .map(|(k, s)| {
                let s = Specifier::parse(s).map_or_else(|_| s.clone(), |s| s.to_string());
                (k.clone(), s)
            })
            .collect();
        if toml != plugin {
            let show = |p: &[(String, String)]| {
                p.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push(format!(
                "{field}: the manifest says [{}], the plugin [{}]",
                show(&toml),
                show(&plugin)
            ));
        }
    }
    out
}

/// What differs between the tools the manifest declares and those the
/// plugin registered; a tool the manifest does not declare is refused
/// (the pure commands could not have seen it) unless `pins` is
/// [`Pins::Read`] (it is being read for the lock).
pub fn tool_differences(manifest: &Manifest, registered: &SetupResult, pins: Pins) -> Vec<String> {
    let canon = |v: &Value| Canon::from_json(v);
    let mut out = Vec::new();
    for t in &registered.tools {
        let Some(declared) = manifest.tools.iter().find(|d| d.name.as_str() == t.name) else {
            // Read for the lock: what the TOML does not declare is what
            // the lock will pin.
            if pins == Pins::Read {
                continue;
            }
            out.push(format!(
                "tool `{}` is not declared in the manifest nor pinned in `chassis.lock`; declare it:\n\n[[plugins.{}.tools]]\nname = {}\ndescription = {}\nargs = {}\n\nor pin what the plugin registers with `chassis tools FILE --update-lock`",
                t.name,
                manifest.name,
                toml_string(&t.name),
                toml_string(&t.description),
                toml_inline(&t.input_schema)
            ));
            continue;
        };
        if declared.description != t.description {
            out.push(format!(
                "tool `{}`: the manifest's description is {}, the plugin's {}",
                t.name,
                toml_string(&declared.description),
                toml_string(&t.description)
            ));
        }
        let declared_schema = declared.args_schema.as_ref().map(canon);
        if declared_schema.as_ref() != Some(&canon(&t.input_schema)) {
            out.push(format!(
                "tool `{}`: its argument schema differs from the manifest's `args`; the plugin registers\n  args = {}",
                t.name,
                toml_inline(&t.input_schema)
            ));
        }
    }
    out
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// `v` as a TOML inline value (what a user pastes into `args = …`).
fn toml_inline(v: &Value) -> String {
    fn to_toml(v: &Value) -> toml::Value {
        match v {
            Value::Null => toml::Value::String(String::new()),
            Value::Bool(b) => toml::Value::Boolean(*b),
            Value::Number(n) => n.as_i64().map_or_else(
                || toml::Value::Float(n.as_f64().unwrap_or(0.0)),
                toml::Value::Integer,
            ),
            Value::String(s) => toml::Value::String(s.clone()),
            Value::Array(a) => toml::Value::Array(a.iter().map(to_toml).collect()),
            Value::Object(m) => {
                toml::Value::Table(m.iter().map(|(k, v)| (k.clone(), to_toml(v))).collect())
            }
        }
    }
    to_toml(v).to_string()
}

/// The process plugin of `entry` named with its program, `why`, and the
/// last stderr lines it wrote (redacted).
pub fn failure(
    manifest: &Manifest,
    entry: &str,
    program: &str,
    why: impl std::fmt::Display,
    stderr: &[String],
) -> String {
    let mut out = format!(
        "the process plugin `{}` (entry `{entry}`, program `{program}`) {why}",
        manifest.name
    );
    if !stderr.is_empty() {
        out.push_str("; its last stderr lines:");
        for line in stderr {
            out.push_str("\n    ");
            out.push_str(line);
        }
    }
    out
}

/// What starting the plugin of `ctx`'s entry needs, read once: the
/// program (resolved), the configuration with its secrets, the providers.
pub fn prepare(
    ctx: &PluginContext,
    manifest: &Arc<Manifest>,
    redactor: &Redactor,
    handler: super::rpc::Handler,
) -> Result<Launch, String> {
    let entry = ctx.entry_id().to_owned();
    let program = resolve(manifest, &entry)?;
    // Configuration first: a missing secret fails before anything starts.
    let secret = |name: &str| {
        ctx.secret(name)
            .map_err(|e| format!("its configuration's secret `{name}`: {e}"))
    };
    let config = config_json(ctx.config(), &secret, redactor)
        .map_err(|e| failure(manifest, &entry, &program.display().to_string(), e, &[]))?;
    let requirements = manifest
        .requires
        .keys()
        .filter_map(|cap| {
            let b = ctx.binding(cap.as_str())?;
            Some((
                cap.to_string(),
                BoundProvider {
                    provider: b.provider.clone(),
                    version: b.version.to_string(),
                    value: provided_value(&b.value).map(|v| redactor.redact_foreign(&v)),
                },
            ))
        })
        .collect();
    Ok(Launch {
        manifest: Arc::clone(manifest),
        entry: entry.clone(),
        program,
        setup: SetupParams {
            entry,
            scope: ctx.scope_path().to_owned(),
            config,
            requirements,
        },
        redactor: redactor.clone(),
        handler,
    })
}

/// What a consumer process receives of a provider's capability: a process
/// provider's value, or shared state (a process's value-only capability or
/// the built-in `shared-state` kind). Redacted by the caller: a value
/// quoting a secret the provider's configuration referenced does not reach
/// a consumer that did not reference it.
fn provided_value(value: &crate::runtime::CapabilityValue) -> Option<Value> {
    if let Some(c) = value.downcast::<super::invoke::ProcessCapability>() {
        return c.value.clone();
    }
    value
        .downcast::<crate::plugins::shared::SharedState>()
        .map(|s| (*s.0).clone())
}

/// Start the plugin's program with its pipes connected: no message sent yet.
pub fn spawn(
    manifest: &Manifest,
    entry: &str,
    program: &std::path::Path,
    redactor: &Redactor,
    handler: super::rpc::Handler,
) -> Result<Process, String> {
    let command = manifest
        .process
        .as_ref()
        .ok_or_else(|| format!("the plugin `{}` has no `command`", manifest.name))?;
    let shown = program.display().to_string();
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(command.argv.iter().skip(1))
        .current_dir(&command.dir)
        .env_clear()
        .envs(environment(command))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let (mut child, registered) = crate::process::orphans::spawn(&mut cmd).map_err(|e| {
        failure(
            manifest,
            entry,
            &shown,
            format_args!("cannot start: {e}"),
            &[],
        )
    })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(failure(manifest, entry, &shown, "has no stdio pipes", &[]));
    };
    let stderr = child.stderr.take();
    let group = Arc::new(ProcessGroup::new(child, registered));
    // Once its stdout closes, how the process ended (a crash says so to the
    // calls it fails). Weak: the connection never keeps the group alive,
    // whose drop kills it.
    let weak = Arc::downgrade(&group);
    let ending: super::rpc::Ending = Box::new(move || {
        Box::pin(async move {
            let group = weak.upgrade()?;
            let status = group.wait_exited(super::rpc::ENDING_GRACE).await?;
            Some(crate::process::group::how_it_ended(&status))
        })
    });
    let conn = Connection::start(
        entry,
        stdin,
        stdout,
        stderr,
        redactor.clone(),
        handler,
        Some(ending),
    );
    Ok(Process { conn, group })
}

/// The program of a process plugin's manifest, resolved as chassis starts it.
pub fn resolve(manifest: &Manifest, entry: &str) -> Result<std::path::PathBuf, String> {
    let command = manifest
        .process
        .as_ref()
        .ok_or_else(|| format!("the plugin `{}` has no `command`", manifest.name))?;
    let shown = command.argv.first().cloned().unwrap_or_default();
    crate::process::resolve_program(&shown, &command.dir, std::env::var_os("PATH").as_deref())
        .map_err(|e| {
            failure(
                manifest,
                entry,
                &shown,
                format_args!("cannot start: {e}"),
                &[],
            )
        })
}

/// Why a launch failed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct LaunchError {
    /// What to tell the user (with the last stderr lines).
    pub message: String,
    /// Set when the process answered, but with a declaration or
    /// registrations that differ from the manifest or the lock: trying
    /// again will not help.
    pub breach: Option<RegistrationBreach>,
    /// The process speaks another major of the protocol: trying again will
    /// not help either.
    pub incompatible: bool,
}

impl LaunchError {
    /// Whether the process answered with something else than promised, or
    /// in another protocol major (a restart cannot fix either).
    pub fn mismatch(&self) -> bool {
        self.breach.is_some() || self.incompatible
    }

    /// What `setup` returns: the breach itself (a contract error), or the
    /// failure.
    pub fn into_setup_error(self) -> crate::runtime::BoxError {
        match self.breach {
            Some(b) => Box::new(b),
            None => Box::new(self),
        }
    }
}

impl From<String> for LaunchError {
    fn from(message: String) -> Self {
        Self {
            message,
            breach: None,
            incompatible: false,
        }
    }
}

/// What went wrong in the handshake.
enum Refusal {
    /// The process failed (exit, violation, timeout, bad answer).
    Failed(String),
    /// It declared or registered something else than the manifest or the
    /// lock.
    Mismatch(RegistrationBreach),
    /// It speaks another major of the protocol.
    Incompatible(String),
}

impl From<String> for Refusal {
    fn from(s: String) -> Self {
        Self::Failed(s)
    }
}

/// Start the process and mount it: `initialize`, the declaration check,
/// `setup`, the tool check, and the check against what `chassis.lock`
/// pins.
pub async fn launch(launch: &Launch) -> Result<(Process, SetupResult), LaunchError> {
    launch_unless(launch, None).await
}

/// [`launch`], unless `cancel` fires first (chassis unmounts the plugin
/// while it starts: an interrupt, a shutdown): then the request in flight
/// (`initialize` or `setup`) is cancelled (`$/cancel`), `teardown` is sent
/// and the process group ended within [`TEARDOWN_GRACE`], without waiting
/// for the setup to answer; the launch fails saying so.
pub async fn launch_unless(
    launch: &Launch,
    cancel: Option<&crate::runtime::Cancellation>,
) -> Result<(Process, SetupResult), LaunchError> {
    let (process, _, registered) = start_checked_unless(launch, Pins::Enforce, cancel).await?;
    Ok((process, registered))
}

/// Whether a start holds the process to what `chassis.lock` pins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pins {
    /// Refuse registrations the pin (or, without one, the TOML) lacks.
    Enforce,
    /// Accept them: the start reads what to pin.
    Read,
}

/// Start the process: `initialize`, the declaration check, `setup`, the
/// check of its tools against the TOML, and with [`Pins::Enforce`] the
/// check against the lock.
pub async fn start_checked(
    launch: &Launch,
    pins: Pins,
) -> Result<(Process, InitializeResult, SetupResult), LaunchError> {
    start_checked_unless(launch, pins, None).await
}

/// [`start_checked`], cancelled when `cancel` fires (see [`launch_unless`]).
async fn start_checked_unless(
    launch: &Launch,
    pins: Pins,
    cancel: Option<&crate::runtime::Cancellation>,
) -> Result<(Process, InitializeResult, SetupResult), LaunchError> {
    let (manifest, entry) = (&*launch.manifest, launch.entry.as_str());
    let shown = launch.program.display().to_string();
    let Process { conn, group } = spawn(
        manifest,
        entry,
        &launch.program,
        &launch.redactor,
        Arc::clone(&launch.handler),
    )?;
    let timeout = startup_timeout(manifest);
    let handshaking = handshake(manifest, entry, &conn, &launch.setup, timeout, pins);
    let answered = match cancel {
        None => Some(handshaking.await),
        Some(cancel) => tokio::select! {
            r = handshaking => Some(r),
            () = cancel.cancelled() => None,
        },
    };
    // The handshake was dropped with its request in flight, which sent
    // `$/cancel` for it.
    let Some(answered) = answered else {
        let process = Process { conn, group };
        process.stop_cancelled(entry).await;
        return Err(LaunchError::from(failure(
            manifest,
            entry,
            &shown,
            "was unmounted while it started: its `setup` was cancelled (an interrupt, a shutdown)",
            &[],
        )));
    };
    let answered = answered.and_then(|(init, registered)| {
        super::pin::agents_without_secrets(&registered, &launch.redactor)
            .map_err(Refusal::Failed)?;
        if pins == Pins::Enforce {
            super::pin::check(manifest, &init, &registered).map_err(Refusal::Mismatch)?;
        }
        Ok((init, registered))
    });
    match answered {
        Ok((init, registered)) => Ok((Process { conn, group }, init, registered)),
        Err(refusal) => {
            let (why, breach, incompatible) = match refusal {
                Refusal::Failed(w) => (w, None, false),
                Refusal::Incompatible(w) => (w, None, true),
                Refusal::Mismatch(b) => (b.to_string(), Some(b), false),
            };
            // Let the process's last words reach stderr before quoting them.
            let ended = group.stop_with_status(Duration::from_millis(200)).await;
            conn.stderr_drained(Duration::from_millis(500)).await;
            // What the plugin said may quote a secret it was given. How it
            // ended says why it went quiet (`os._exit(5)`, a signal), unless
            // the reason already does (it closed its stdout by ending).
            let why = match ended.and_then(|s| exit_text(&s)) {
                Some(how) if conn.ended().is_none() => format!("{why}; the process {how}"),
                _ => why,
            };
            let why = launch.redactor.redact(&why).into_owned();
            // What the plugin registered may quote a secret too.
            let breach = breach.map(|b| RegistrationBreach {
                actual: b
                    .actual
                    .iter()
                    .map(|a| launch.redactor.redact(a).into_owned())
                    .collect(),
                ..b
            });
            Err(LaunchError {
                message: failure(manifest, entry, &shown, why, &conn.last_stderr()),
                breach,
                incompatible,
            })
        }
    }
}

/// How a process that ended on its own ended, in words (`None` for a
/// clean exit, which says nothing more than that it went away).
fn exit_text(status: &std::process::ExitStatus) -> Option<String> {
    (status.code() != Some(0)).then(|| crate::process::group::how_it_ended(status))
}

fn call_failure(step: &str, e: CallError) -> String {
    match e {
        CallError::Rpc(e) => rpc_failure(step, e),
        shape @ CallError::Shape { .. } => shape.to_string(),
    }
}

fn rpc_failure(step: &str, e: RpcError) -> String {
    match e {
        RpcError::Closed(reason) => format!("failed at `{step}`: {reason}"),
        RpcError::Timeout(t) => format!(
            "did not answer `{step}` within {:.1}s (a slow start may raise `startup_timeout_seconds` of its `[plugins.…]` table)",
            t.as_secs_f64()
        ),
        other => format!("failed at `{step}`: {other}"),
    }
}

async fn handshake(
    manifest: &Manifest,
    entry: &str,
    conn: &Connection,
    setup: &SetupParams,
    timeout: Duration,
    pins: Pins,
) -> Result<(InitializeResult, SetupResult), Refusal> {
    let init: InitializeResult = conn
        .call(
            method::INITIALIZE,
            &InitializeParams::new(entry),
            Some(timeout),
            None,
        )
        .await
        .map_err(|e| call_failure(method::INITIALIZE, e))?;
    let major = |v: &str| v.split('.').next().unwrap_or_default().to_owned();
    if major(&init.protocol_version) != major(PROTOCOL_VERSION) {
        return Err(Refusal::Incompatible(format!(
            "speaks plugin protocol {}; this chassis speaks {PROTOCOL_VERSION} (a different major is refused: update the plugin's SDK or chassis)",
            init.protocol_version
        )));
    }
    let differences = declaration_differences(manifest, &init.plugin);
    if !differences.is_empty() {
        return Err(Refusal::Mismatch(RegistrationBreach {
            promise: "declares itself differently from its TOML manifest (which is authoritative)"
                .to_owned(),
            promised: "the TOML manifest".to_owned(),
            actual: differences,
        }));
    }
    if let Some(max) = init.max_concurrency {
        conn.limit_concurrency(max);
    }
    let registered: SetupResult = conn
        .call(method::SETUP, setup, Some(timeout), None)
        .await
        .map_err(|e| call_failure(method::SETUP, e))?;
    let differences = tool_differences(manifest, &registered, pins);
    if !differences.is_empty() {
        return Err(Refusal::Mismatch(RegistrationBreach {
            promise: "registered tools its TOML manifest does not declare as they are".to_owned(),
            promised: "the TOML manifest".to_owned(),
            actual: differences,
        }));
    }
    Ok((init, registered))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_inline_renders_a_schema_a_user_can_paste() {
        let v =
            json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]});
        let text = toml_inline(&v);
        let back: toml::Value = toml::from_str(&format!("args = {text}"))
            .map(|t: toml::Table| t["args"].clone())
            .unwrap();
        assert_eq!(back["properties"]["name"]["type"].as_str(), Some("string"));
    }
}
