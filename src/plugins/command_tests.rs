//! `command` tools with real processes, through the real executor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::engine::model::{Composition, ConfigValue, EntryId};
use crate::engine::secret::SecretValue;
use crate::runtime::{
    ExecError, ExecutorServices, Harness, HarnessOptions, Lease, RunContext, ToolCall,
    ToolExecutor, ToolRefusal, ToolResult, ToolStatus,
};

/// A TOML-shaped configuration from JSON (no nulls).
pub(crate) fn to_config(v: &Value) -> ConfigValue {
    match v {
        Value::Bool(b) => ConfigValue::Bool(*b),
        Value::Number(n) => n.as_i64().map_or_else(
            || ConfigValue::Float(n.as_f64().unwrap_or_default()),
            ConfigValue::Int,
        ),
        Value::String(s) => ConfigValue::Str(s.clone()),
        Value::Array(a) => ConfigValue::Array(a.iter().map(to_config).collect()),
        Value::Object(m) => {
            ConfigValue::Table(m.iter().map(|(k, v)| (k.clone(), to_config(v))).collect())
        }
        Value::Null => panic!("TOML has no null"),
    }
}

/// A composition of built-in entries `(id, kind, config)`, manifests
/// derived as the loader derives them.
pub(crate) fn composition(entries: &[(&str, &str, Value)]) -> Composition {
    let mut c = Composition::new();
    for (id, kind, config) in entries {
        let config = to_config(config);
        let kind = crate::engine::builtin::find(kind).expect("a built-in kind");
        let manifest = kind
            .derive(&config)
            .unwrap_or_else(|p| panic!("{id}: {p:?}"));
        let mut entry = Entry::new(EntryId::new(id).unwrap(), Arc::new(manifest));
        entry.config = Arc::new(config);
        c.insert_entry(entry);
    }
    c
}

/// A harness whose catalog has the built-ins rooted at `dir`, with the
/// plugins' redactor `redactor`.
pub(crate) fn harness(dir: &std::path::Path, redactor: &Redactor) -> Harness {
    let mut catalog = Catalog::new();
    let env = Arc::new(BuiltinEnv::new(dir));
    crate::plugins::register_builtins(&mut catalog, &env);
    register_with(&mut catalog, &env, redactor.clone());
    crate::plugins::hooks::register_with(&mut catalog, &env, redactor.clone());
    Harness::new(catalog, HarnessOptions::default())
}

/// A harness with `entries` reconciled.
pub(crate) async fn mounted(
    dir: &std::path::Path,
    redactor: &Redactor,
    entries: &[(&str, &str, Value)],
) -> Harness {
    let h = harness(dir, redactor);
    h.reconcile(composition(entries)).await.unwrap();
    h
}

/// A run on the current generation.
pub(crate) fn run(h: &Harness) -> (RunContext, Lease) {
    let lease = h.acquire().unwrap();
    let run = RunContext {
        run_id: "run_test".into(),
        generation: Arc::clone(lease.generation()),
        agent: None,
        scope: "/".into(),
        budget: None,
        extra_tools: None,
    };
    (run, lease)
}

/// An executor whose redactor knows nothing (so the plugin's own
/// redaction is what the tests see).
pub(crate) fn executor() -> ToolExecutor {
    ToolExecutor::new(ExecutorServices::permissive())
}

pub(crate) async fn call(h: &Harness, name: &str, args: Value) -> Result<ToolResult, ExecError> {
    let (run, _lease) = run(h);
    executor()
        .execute(
            &run,
            ToolCall {
                name: name.into(),
                args,
                call_id: Some("c1".into()),
            },
            false,
        )
        .await
}

async fn ok(h: &Harness, name: &str, args: Value) -> Value {
    let r = call(h, name, args).await.unwrap();
    assert_eq!(r.status, ToolStatus::Ok, "{:?}", r.error);
    r.content
}

async fn failed(h: &Harness, name: &str, args: Value) -> ToolResult {
    let r = call(h, name, args).await.unwrap();
    assert_eq!(r.status, ToolStatus::Error, "{r:?}");
    r
}

fn tool(name: &str, argv: &[&str], extra: Value) -> Value {
    let mut t = json!({ "name": name, "description": format!("the {name} tool"), "argv": argv });
    if let Value::Object(extra) = extra {
        t.as_object_mut().unwrap().extend(extra);
    }
    t
}

const ECHO_ARGS: &str = "printf '%s|' \"$@\"";

#[tokio::test]
async fn word_count_runs_through_the_executor() {
    let dir = tempfile::tempdir().unwrap();
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[(
            "text-tools",
            "command",
            json!({ "tools": [tool("word_count", &["wc", "-w"], json!({
                "args": { "type": "object", "required": ["text"], "properties": { "text": { "type": "string" } } },
                "stdin": "{/text}",
            }))] }),
        )],
    )
    .await;
    let got = ok(&h, "word_count", json!({ "text": "one two three" })).await;
    assert_eq!(got.as_str().map(str::trim), Some("3"));
    let err = call(&h, "word_count", json!({ "text": 3 }))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ExecError::Refused(ToolRefusal::InvalidArguments { .. })
        ),
        "the executor checks the schema before the program runs: {err}"
    );
}

#[tokio::test]
async fn argv_templates_expand_arguments_and_a_missing_one_fails_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[(
            "t",
            "command",
            json!({ "tools": [tool("echo_args", &["sh", "-c", ECHO_ARGS, "sh", "{/a}", "n={/n}", "{/obj}", "{{lit}}"], json!({ "input": "none" }))] }),
        )],
    )
    .await;
    let got = ok(
        &h,
        "echo_args",
        json!({ "a": "one two; $(rm -rf /)", "n": 4, "obj": { "k": [1] } }),
    )
    .await;
    assert_eq!(got, json!("one two; $(rm -rf /)|n=4|{\"k\":[1]}|{lit}|"));
    let r = failed(&h, "echo_args", json!({ "a": "x" })).await;
    let error = r.error.unwrap();
    assert!(error.contains("argument `/n` is missing"), "{error}");
}

#[tokio::test]
async fn arguments_arrive_as_json_flags_nothing_or_a_stdin_template() {
    let dir = tempfile::tempdir().unwrap();
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[(
            "t",
            "command",
            json!({ "tools": [
                tool("as_json", &["cat"], json!({ "output": "json" })),
                tool("as_flags", &["sh", "-c", ECHO_ARGS, "sh"], json!({ "input": "flags" })),
                tool("as_none", &["cat"], json!({ "input": "none" })),
                tool("as_stdin", &["cat"], json!({ "stdin": "name={/name}\n" })),
            ] }),
        )],
    )
    .await;
    let args =
        json!({ "name": "Ada", "tags": ["x", "y"], "verbose": true, "quiet": false, "n": 2.5 });
    assert_eq!(ok(&h, "as_json", args.clone()).await, args);
    assert_eq!(
        ok(&h, "as_flags", args.clone()).await,
        json!("--n|2.5|--name|Ada|--tags|x|--tags|y|--verbose|")
    );
    assert_eq!(ok(&h, "as_none", args.clone()).await, json!(""));
    assert_eq!(ok(&h, "as_stdin", args).await, json!("name=Ada"));
}

#[tokio::test]
async fn only_allow_listed_variables_reach_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let home = std::env::var("HOME").expect("HOME is set for tests");
    assert!(std::env::var_os("PATH").is_some());
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[(
            "t",
            "command",
            json!({ "env": ["HOME", "CHASSIS_SURELY_UNSET"], "tools": [tool("show_env", &["env"], json!({ "input": "none" }))] }),
        )],
    )
    .await;
    // `env` prints the whole environment: PATH and everything else of the
    // test process are absent.
    assert_eq!(
        ok(&h, "show_env", json!({})).await,
        json!(format!("HOME={home}"))
    );
}

#[tokio::test]
async fn the_working_directory_is_relative_to_the_composition() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let script = sub.join("where.sh");
    std::fs::write(&script, "#!/bin/sh\npwd\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[(
            "t",
            "command",
            json!({ "cwd": "sub", "tools": [tool("where", &["./where.sh"], json!({}))] }),
        )],
    )
    .await;
    let got = ok(&h, "where", json!({})).await;
    assert_eq!(
        std::fs::canonicalize(got.as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&sub).unwrap()
    );
    let bad = harness(dir.path(), &Redactor::new());
    let err = bad
        .reconcile(composition(&[(
            "t",
            "command",
            json!({ "cwd": "missing", "tools": [tool("x", &["true"], json!({}))] }),
        )]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("working directory"), "{err}");
}

#[tokio::test]
async fn a_non_zero_exit_names_the_code_and_carries_redacted_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let redactor = Redactor::new();
    redactor.learn(&SecretValue::new("canary-4711-secret"));
    let h = mounted(
        dir.path(),
        &redactor,
        &[(
            "t",
            "command",
            json!({ "tools": [
                tool("fails", &["sh", "-c", "echo partial; echo 'token canary-4711-secret was rejected' >&2; exit 3"], json!({})),
                tool("noisy", &["sh", "-c", "i=0; while [ $i -lt 500 ]; do echo early-line-$i >&2; i=$((i+1)); done; echo last-line >&2; exit 1"], json!({})),
                // The secret, then 2,040 bytes: the tail's cut falls inside it.
                tool("straddle", &["sh", "-c", "printf canary-4711-secret >&2; head -c 2040 /dev/zero | tr '\\0' x >&2; exit 1"], json!({})),
            ] }),
        )],
    )
    .await;
    let r = failed(&h, "fails", json!({})).await;
    let error = r.error.unwrap();
    assert!(error.contains("exit code 3"), "{error}");
    assert!(error.contains("was rejected"), "{error}");
    assert!(error.contains("<redacted>"), "{error}");
    assert!(!error.contains("canary-4711-secret"), "{error}");
    let error = failed(&h, "noisy", json!({})).await.error.unwrap();
    assert!(error.contains("last-line"), "{error}");
    assert!(!error.contains("early-line-0\n"), "{error}");
    assert!(error.len() < STDERR_TAIL_BYTES + 200, "{}", error.len());
    // Redacted whole, then cut: no piece of it is left at the cut.
    let error = failed(&h, "straddle", json!({})).await.error.unwrap();
    assert!(error.contains("xxxx"), "{error}");
    assert!(
        !error.contains("secret") && !error.contains("4711"),
        "{error}"
    );
}

#[tokio::test]
async fn a_timeout_kills_the_process_group_and_the_harness_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!("sleep 30 & echo $! > '{}'; sleep 30", pidfile.display());
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[(
            "t",
            "command",
            json!({ "tools": [
                tool("hang", &["sh", "-c", &script], json!({ "timeout_seconds": 2 })),
                tool("crash", &["sh", "-c", "kill -SEGV $$"], json!({})),
                tool("fine", &["echo", "still here"], json!({})),
            ] }),
        )],
    )
    .await;
    let started = Instant::now();
    let r = call(&h, "hang", json!({})).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.status, ToolStatus::Timeout, "{r:?}");
    let mut pid = None;
    for _ in 0..100 {
        pid = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        if pid.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = pid.expect("the background sleep wrote its pid");
    assert!(
        crate::process::tests::wait_gone(pid).await,
        "the grandchild survived the timeout"
    );
    let error = failed(&h, "crash", json!({})).await.error.unwrap();
    assert!(
        error.contains("terminated by signal 11 (SIGSEGV)"),
        "{error}"
    );
    assert_eq!(ok(&h, "fine", json!({})).await, json!("still here"));
}

#[tokio::test]
async fn the_runner_backstop_fails_a_call_whose_policy_lost_its_deadline() {
    // Called directly (no executor deadline): the runner's own timeout.
    let spec = crate::engine::builtin::command::parse(&to_config(&json!({
        "tools": [tool("hang", &["sleep", "30"], json!({ "timeout_seconds": 0.2 }))]
    })))
    .unwrap()
    .tools
    .remove(0);
    let tool = CommandTool::new(spec, std::env::temp_dir(), Vec::new(), Redactor::new());
    let ctx = ToolCallContext::detached("r", "g", "/");
    let started = Instant::now();
    let err = tool.call(json!({}), &ctx).await.unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(err.contains("was killed: timed out"), "{err}");
}

#[tokio::test]
async fn spawn_failures_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.txt"), "not a program").unwrap();
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[(
            "t",
            "command",
            json!({ "tools": [
                tool("missing", &["chassis-no-such-program"], json!({})),
                tool("not_exec", &["./data.txt"], json!({})),
                tool("bad_json", &["echo", "not json"], json!({ "output": "json" })),
                tool("big", &["sh", "-c", "while :; do echo yyyyyyyyyyyyyyyy; done"], json!({ "max_output_bytes": 100 })),
            ] }),
        )],
    )
    .await;
    let e = failed(&h, "missing", json!({})).await.error.unwrap();
    assert!(
        e.contains("program `chassis-no-such-program` was not found on PATH"),
        "{e}"
    );
    let e = failed(&h, "not_exec", json!({})).await.error.unwrap();
    assert!(e.contains("is not an executable file"), "{e}");
    let e = failed(&h, "bad_json", json!({})).await.error.unwrap();
    assert!(e.contains("not valid JSON"), "{e}");
    let e = failed(&h, "big", json!({})).await.error.unwrap();
    assert!(e.contains("more than 100 bytes"), "{e}");
}

#[tokio::test]
async fn the_policy_fields_reach_the_executor() {
    let dir = tempfile::tempdir().unwrap();
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[(
            "t",
            "command",
            json!({ "tools": [
                tool("deploy", &["true"], json!({ "approval_required": true })),
                tool("write", &["true"], json!({ "permissions": ["filesystem.write:{/path}"], "idempotent": true })),
            ] }),
        )],
    )
    .await;
    let err = call(&h, "deploy", json!({})).await.unwrap_err();
    assert!(
        matches!(err, ExecError::Refused(ToolRefusal::ApprovalDenied { .. })),
        "{err}"
    );
    let err = call(&h, "write", json!({})).await.unwrap_err();
    assert!(
        matches!(err, ExecError::Refused(ToolRefusal::PolicyDenied { .. })),
        "the permission template needs `/path`: {err}"
    );
    assert_eq!(
        ok(&h, "write", json!({ "path": "/tmp/x" })).await,
        json!("")
    );
    let (run, _lease) = run(&h);
    let reg = &run.generation.tools["write"];
    assert!(reg.policy.idempotent);
    assert_eq!(reg.policy.timeout_seconds, Some(30.0));
}

#[tokio::test]
async fn an_invalid_configuration_fails_setup_with_pointers() {
    let dir = tempfile::tempdir().unwrap();
    let h = harness(dir.path(), &Redactor::new());
    // Built by hand: the manifest could not be derived from this config.
    let mut c = composition(&[(
        "t",
        "command",
        json!({ "tools": [tool("ok", &["true"], json!({}))] }),
    )]);
    let e = c.entries.values_mut().next().unwrap();
    *Arc::make_mut(&mut e.config) =
        to_config(&json!({ "tools": [tool("a b", &["true"], json!({}))] }));
    let err = h.reconcile(c).await.unwrap_err().to_string();
    assert!(err.contains("invalid `command` configuration"), "{err}");
    assert!(err.contains("/tools/0/name"), "{err}");
}

#[tokio::test]
async fn a_toml_entry_naming_the_kind_loads_without_a_plugins_table_and_runs() {
    let text = r#"
version = 1

[entries.text-tools]
plugin = "command"
[entries.text-tools.config]
env = ["LANG"]
[[entries.text-tools.config.tools]]
name = "word_count"
description = "Count the words in a text."
args = { type = "object", required = ["text"], properties = { text = { type = "string" } } }
argv = ["wc", "-w"]
stdin = "{/text}"
timeout_seconds = 10
permissions = ["text.count"]

[entries.guard]
plugin = "deny"
config = { tools = ["shell*"], reason = "no shells" }
"#;
    let loaded = crate::load::load_str("chassis.toml", text);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let c = loaded.composition.unwrap();
    let m = &c.entries[&EntryId::new("text-tools").unwrap()].manifest;
    assert_eq!(m.kind.as_deref(), Some("command"));
    assert_eq!(m.permissions, ["text.count"]);
    assert_eq!(m.tools[0].name.as_str(), "word_count");
    let dir = tempfile::tempdir().unwrap();
    let h = harness(dir.path(), &Redactor::new());
    h.reconcile(c).await.unwrap();
    let got = ok(&h, "word_count", json!({ "text": "a b" })).await;
    assert_eq!(got.as_str().map(str::trim), Some("2"));
}

#[test]
fn a_toml_entry_with_a_bad_configuration_points_at_the_value() {
    let text = r#"
version = 1

[entries.t]
plugin = "command"
[[entries.t.config.tools]]
name = "bad"
description = "x"
argv = ["echo", "{oops}"]
"#;
    let loaded = crate::load::load_str("chassis.toml", text);
    assert!(loaded.has_errors());
    let d = loaded
        .diagnostics
        .iter()
        .find(|d| d.message.contains("config.tools[0].argv[1]"))
        .unwrap_or_else(|| panic!("{:#?}", loaded.diagnostics));
    assert!(d.message.contains("JSON Pointer"), "{}", d.message);
}
