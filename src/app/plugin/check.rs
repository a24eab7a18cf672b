//! `chassis plugin check FILE`: a process plugin against the protocol.
//!
//! Each check starts from what a plugin author can fix and says what was
//! expected: the version negotiation and the refusal of another major, the
//! declaration against the TOML manifest, `-32601` for an unknown method,
//! `-32602` for malformed params, registrations valid against the protocol
//! schemas and the manifest, an answer (or silence) to `$/cancel` that
//! leaves the process serving, `teardown` answered and the process gone
//! within the grace period, and nothing but protocol messages on stdout
//! throughout. The plugin runs as chassis runs it (same program, folder,
//! environment); its `setup` gets the entry's configuration and, for each
//! requirement, the provider the composition binds, with its value when one
//! can be read without a mount (a process plugin it requires is started
//! alone first; a `shared-state` table as configured); the provider's
//! methods answer `-32002`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::app::caller::Caller;
use crate::app::env::RunEnv;
use crate::app::error::AppError;
use crate::engine::model::{ConfigValue, Manifest};
use crate::engine::secret::EnvLookup;
use crate::engine::secret::Redactor;
use crate::plugins::process::protocol::{
    InitializeParams, InitializeResult, SetupParams, SetupResult, code, method,
};
use crate::plugins::process::rpc::{CallError, Connection, Handler, RpcError};
use crate::plugins::process::start::{
    self, Process, TEARDOWN_GRACE, declaration_differences, startup_timeout, tool_differences,
};
use crate::runtime::Cancellation;

/// What to check.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// A TOML file declaring the plugin (its `plugin.toml`, or a composition).
    pub file: PathBuf,
    /// Which plugin, when the file declares several process plugins.
    pub plugin: Option<String>,
}

/// One check's outcome.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    /// What was checked (`initialize`, `unknown method`, …).
    pub name: &'static str,
    /// Whether it passed.
    pub passed: bool,
    /// What happened, or what was expected.
    pub detail: String,
}

/// Every check, in order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CheckReport {
    /// The plugin's name.
    pub plugin: String,
    /// Its program, resolved.
    pub program: String,
    /// The checks.
    pub checks: Vec<Check>,
}

impl CheckReport {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

/// A placeholder provider for each requirement: its methods answer -32002.
fn no_providers() -> Handler {
    crate::plugins::process::probe::alone(
        "`chassis plugin check` runs the plugin alone: no provider answers",
    )
}

struct Suite {
    checks: Vec<Check>,
    /// Knows the secrets the plugin was given: a detail quoting what the
    /// plugin said never shows one.
    redactor: Redactor,
}

impl Suite {
    /// Add the last lines `conn`'s process wrote to stderr to each check
    /// that failed since check number `from` (redacted by `record`'s
    /// redactor): a plugin that crashed says why there.
    async fn quote_stderr(&mut self, conn: &Connection, from: usize) {
        if self.checks[from..].iter().all(|c| c.passed) {
            return;
        }
        conn.stderr_drained(Duration::from_millis(500)).await;
        let said = conn.last_stderr();
        if said.is_empty() {
            return;
        }
        let tail = self.redactor.redact(&said.join(" | ")).into_owned();
        for c in self.checks[from..].iter_mut().filter(|c| !c.passed) {
            c.detail = format!("{}; its last stderr: {tail}", c.detail);
        }
    }

    fn record(&mut self, name: &'static str, outcome: Result<String, String>) -> bool {
        let passed = outcome.is_ok();
        let detail = outcome.unwrap_or_else(|e| e);
        self.checks.push(Check {
            name,
            passed,
            detail: self.redactor.redact(&detail).into_owned(),
        });
        passed
    }
}

/// A request for a method no plugin has: it must be refused (-32601), and
/// an answer to it shows the plugin still reads requests.
async fn unknown_method(conn: &Connection) -> Result<Value, RpcError> {
    conn.request(
        "chassis/no-such-method",
        json!({}),
        Some(Duration::from_secs(5)),
        None,
    )
    .await
}

fn expect_error(reply: Result<Value, RpcError>, want: i64) -> Result<String, String> {
    match reply {
        Err(RpcError::Remote { code, message }) if code == want => {
            Ok(format!("answered {code} ({message})"))
        }
        Err(RpcError::Remote { code, message }) => {
            Err(format!("expected error {want}, got {code} ({message})"))
        }
        Ok(v) => Err(format!("expected error {want}, got a result: {v}")),
        Err(e) => Err(format!("expected error {want}: {e}")),
    }
}

/// Run the suite on the plugin `options` names. Interrupted (a Ctrl-C),
/// it ends the plugin's process group before it returns: a plugin that
/// does not read its input (or its children) is never left running.
pub async fn check_plugin(
    options: &CheckOptions,
    env: &RunEnv,
    caller: &Caller,
) -> Result<CheckReport, AppError> {
    // Dropping the suite drops its processes, and each process group is
    // killed when dropped.
    // The interrupt first: the providers' probes inside the suite watch it
    // too, and their message ("the lock was not changed") is not this one.
    tokio::select! {
        biased;
        () = caller.interrupt.wait() => Err(AppError::Interrupted("the check did not finish")),
        report = suite(options, env, caller) => report,
    }
}

async fn suite(
    options: &CheckOptions,
    env: &RunEnv,
    caller: &Caller,
) -> Result<CheckReport, AppError> {
    let ws = crate::app::workspace::load_file(&options.file, env, caller.reporter.as_ref())?;
    let processes: Vec<(&str, &Arc<Manifest>, &ConfigValue)> = ws
        .composition
        .entries
        .iter()
        .filter(|(_, e)| e.manifest.process.is_some())
        .filter(|(_, e)| {
            options
                .plugin
                .as_deref()
                .is_none_or(|p| e.plugin.value == p || e.manifest.name == p)
        })
        .map(|(id, e)| (id.as_str(), &e.manifest, &*e.config))
        .collect();
    let (entry, manifest, config) = match processes.as_slice() {
        [one] => *one,
        [] => {
            return Err(AppError::input(format!(
                "`{}` has no entry of a process plugin{} (a `[plugins.X]` with a `command`, and an `[entries.Y]` using it)",
                options.file.display(),
                options
                    .plugin
                    .as_deref()
                    .map(|p| format!(" named `{p}`"))
                    .unwrap_or_default()
            )));
        }
        many => {
            let names: Vec<&str> = many.iter().map(|(_, m, _)| m.name.as_str()).collect();
            return Err(AppError::input(format!(
                "`{}` has several process plugins ({}); name one with `--plugin`",
                options.file.display(),
                names.join(", ")
            )));
        }
    };
    let program = start::resolve(manifest, entry).map_err(AppError::input)?;
    // The process's redactor: what it learns scrubs the log as well.
    let redactor = caller.redactor.clone();
    // Secrets the configuration references come from the environment.
    let secret = |name: &str| {
        env.var(name)
            .map(crate::engine::secret::SecretValue::new)
            .ok_or_else(|| format!("the configuration's secret `{name}` is not set"))
    };
    let config = start::config_json(config, &secret, &redactor).map_err(AppError::input)?;
    // What a run hands its setup for each requirement: the bound
    // provider, with its value when it can be read without a mount (a
    // process plugin it requires is started alone first to read it).
    let providers = crate::app::lock::providers_for(
        &options.file,
        &ws.composition,
        &ws.plan,
        entry,
        env,
        caller,
    )
    .await?;
    // As long as a mount waits for each answer.
    let startup = startup_timeout(manifest);
    let mut suite = Suite {
        checks: Vec::new(),
        redactor: redactor.clone(),
    };
    // A provider that could not be started hands `null` where a run would
    // hand its value: the check cannot stand for a run.
    for (provider, why) in &providers.failed {
        suite.record(
            "providers",
            Err(format!(
                "its provider `{provider}` could not be started to read its value: {why}"
            )),
        );
    }
    let started = |s: &mut Suite| -> Option<Process> {
        match start::spawn(manifest, entry, &program, &redactor, no_providers()) {
            Ok(p) => Some(p),
            Err(e) => {
                s.record("starts", Err(e));
                None
            }
        }
    };

    // Another major is refused, without crashing into a result.
    if let Some(p) = started(&mut suite) {
        let reply = p
            .conn
            .request(
                method::INITIALIZE,
                json!({"protocol_version": "99.0", "chassis_version": "check", "entry": entry}),
                Some(startup),
                None,
            )
            .await;
        let outcome = match reply {
            Err(RpcError::Remote { code, message }) => {
                Ok(format!("protocol 99.0 refused with {code} ({message})"))
            }
            Ok(v)
                if v.get("protocol_version")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("1.")) =>
            {
                Ok("answered with its own version 1.x (chassis refuses the mismatch)".to_owned())
            }
            Ok(v) => Err(format!("accepted protocol 99.0: {v}")),
            Err(e) => Err(format!(
                "no answer to an initialize with protocol 99.0: {e}"
            )),
        };
        let from = suite.checks.len();
        suite.record("version refusal", outcome);
        suite.quote_stderr(&p.conn, from).await;
        p.group.stop(Duration::ZERO).await;
    }

    let Some(p) = started(&mut suite) else {
        return Ok(report(manifest, &program, suite));
    };
    let from = suite.checks.len();
    let init = p
        .conn
        .call::<InitializeResult>(
            method::INITIALIZE,
            &InitializeParams::new(entry),
            Some(startup),
            None,
        )
        .await
        .map_err(|e| e.to_string());
    let init_ok = suite.record(
        "initialize",
        init.as_ref().map_err(Clone::clone).and_then(|r| {
            if r.protocol_version.split('.').next() == Some("1") {
                Ok(format!("speaks {}", r.protocol_version))
            } else {
                Err(format!("speaks {}, not 1.x", r.protocol_version))
            }
        }),
    );
    if let Ok(r) = &init {
        let differences = declaration_differences(manifest, &r.plugin);
        suite.record(
            "declaration",
            if differences.is_empty() {
                Ok("equals the TOML manifest".to_owned())
            } else {
                Err(differences.join("; "))
            },
        );
    }
    if init_ok {
        let reply = unknown_method(&p.conn).await;
        suite.record(
            "unknown method",
            expect_error(reply, code::METHOD_NOT_FOUND),
        );
        let reply = p
            .conn
            .request(
                method::TOOLS_CALL,
                json!("not an object"),
                Some(Duration::from_secs(5)),
                None,
            )
            .await;
        suite.record(
            "malformed params",
            expect_error(reply, code::INVALID_PARAMS),
        );
        let setup = SetupParams {
            entry: entry.to_owned(),
            scope: "/".to_owned(),
            config,
            requirements: providers.bound.clone(),
        };
        let registered = p
            .conn
            .call::<SetupResult>(method::SETUP, &setup, Some(startup), None)
            .await
            .map_err(|e| match e {
                CallError::Shape { error, .. } => format!(
                    "not a setup result (see schemas/plugin-protocol/setup.result.json): {error}"
                ),
                other => other.to_string(),
            });
        let setup_ok = suite.record(
            "setup",
            registered.as_ref().map_err(Clone::clone).and_then(|r| {
                let mut problems = tool_differences(manifest, r, start::Pins::Enforce);
                for t in &manifest.tools {
                    if !r.tools.iter().any(|x| x.name == t.name.as_str()) {
                        problems.push(format!(
                            "promised tool `{}` but did not register it",
                            t.name
                        ));
                    }
                }
                for t in &r.tools {
                    if let Err(e) = crate::engine::args_schema::compile(&t.input_schema) {
                        problems.push(format!("tool `{}`: its input_schema: {e}", t.name));
                    }
                }
                // What a mount would refuse: method schemas, policies, hook
                // events, routes.
                if let Err(e) = crate::plugins::process::pin::validate(r) {
                    problems.push(e);
                }
                for c in r
                    .capabilities
                    .iter()
                    .filter(|c| c.key == crate::runtime::model::MODEL_CAPABILITY)
                {
                    if !c
                        .methods
                        .iter()
                        .any(|m| m.name == crate::plugins::process::model::COMPLETE)
                    {
                        problems.push("provides `model` without a `complete` method".to_owned());
                    }
                }
                for h in &r.hooks {
                    if crate::runtime::HookEvent::parse(&h.event).is_none() {
                        problems.push(format!("a hook for the unknown event `{}`", h.event));
                    }
                }
                for (cap, p) in &manifest.provides {
                    for v in &p.versions {
                        if !r.capabilities.iter().any(|c| {
                            c.key == cap.as_str()
                                && crate::engine::version::Version::parse(&c.version)
                                    .is_ok_and(|rv| rv.major() == v.major())
                        }) {
                            problems.push(format!(
                                "promised {cap}@{} but did not provide it",
                                v.major()
                            ));
                        }
                    }
                }
                if problems.is_empty() {
                    Ok(format!(
                        "registered {} tool(s) and {} capability(ies), as the manifest says",
                        r.tools.len(),
                        r.capabilities.len()
                    ))
                } else {
                    Err(problems.join("; "))
                }
            }),
        );
        if setup_ok {
            // A request cancelled at once: the process answers it or drops
            // it, and keeps serving.
            let cancel = Cancellation::new();
            cancel.cancel();
            let name = registered
                .as_ref()
                .ok()
                .and_then(|r| r.tools.first())
                .map_or_else(String::new, |t| t.name.clone());
            let _ = p
                .conn
                .request(
                    method::TOOLS_CALL,
                    json!({"name": name, "arguments": {}, "run_id": "check", "generation_id": "check"}),
                    None,
                    Some(&cancel),
                )
                .await;
            let after = unknown_method(&p.conn).await;
            suite.record(
                "cancel",
                match after {
                    Err(RpcError::Remote { .. }) | Ok(_) => {
                        Ok("still serving after `$/cancel`".to_owned())
                    }
                    Err(e) => Err(format!("not serving after `$/cancel`: {e}")),
                },
            );
        }
    }
    suite.record(
        "stdout discipline",
        match p.conn.closed_reason() {
            Some(reason) if reason.contains("protocol violation") => Err(reason),
            _ => Ok("only protocol messages on stdout".to_owned()),
        },
    );
    let asked = Instant::now();
    let teardown = p
        .conn
        .request(method::TEARDOWN, json!({}), Some(TEARDOWN_GRACE), None)
        .await;
    // As chassis stops a plugin: the grace period for the answer, then the
    // grace period for the exit.
    let answered = Instant::now();
    let mut exited = false;
    while answered.elapsed() < TEARDOWN_GRACE {
        if p.group.exited().await.is_some() {
            exited = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    suite.record(
        "teardown",
        match (teardown, exited) {
            (Ok(_), true) => Ok(format!(
                "answered and exited in {:.2}s",
                asked.elapsed().as_secs_f64()
            )),
            (Err(e), _) => Err(format!(
                "no answer to `teardown` within {}s: {e}",
                TEARDOWN_GRACE.as_secs()
            )),
            (Ok(_), false) => Err(format!(
                "answered but did not exit within the grace period ({}s) after it",
                TEARDOWN_GRACE.as_secs()
            )),
        },
    );
    suite.quote_stderr(&p.conn, from).await;
    p.group.stop(Duration::ZERO).await;
    Ok(report(manifest, &program, suite))
}

fn report(manifest: &Manifest, program: &Path, suite: Suite) -> CheckReport {
    CheckReport {
        plugin: manifest.name.clone(),
        program: program.display().to_string(),
        checks: suite.checks,
    }
}
