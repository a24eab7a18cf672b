//! The hook kinds at the real boundary: tool calls through the executor
//! fire `before_tool_execute` and the other tool events.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::engine::secret::{Redactor, SecretValue};
use crate::engine::telemetry::{AttrValue, RecordingTelemetry};
use crate::plugins::command::tests::{call, composition, harness, mounted, run};
use crate::runtime::{
    ExecError, ExecutorServices, Harness, HookEvent, ToolCall, ToolExecutor, ToolRefusal,
    ToolResult, ToolStatus,
};

const ECHO_ARGS: &str = "printf '%s|' \"$@\"";

/// A tool `echo_args` printing `x` and a tool `touch` appending to `ran`.
fn tools() -> (&'static str, &'static str, Value) {
    (
        "tools",
        "command",
        json!({ "tools": [
            { "name": "echo_args", "description": "echo", "argv": ["sh", "-c", ECHO_ARGS, "sh", "{/x}"] },
            { "name": "read_file", "description": "read", "argv": ["sh", "-c", "echo ran >> ran"] },
            { "name": "shell_exec", "description": "shell", "argv": ["sh", "-c", "echo ran >> ran"] },
            { "name": "fails", "description": "fails", "argv": ["sh", "-c", "exit 2"] },
        ] }),
    )
}

/// A call through an executor recording telemetry.
async fn traced(
    h: &Harness,
    name: &str,
    args: Value,
) -> (Result<ToolResult, ExecError>, Arc<RecordingTelemetry>) {
    let telemetry = Arc::new(RecordingTelemetry::new());
    let mut s = ExecutorServices::permissive();
    s.telemetry = Arc::clone(&telemetry) as _;
    let (run, _lease) = run(h);
    let r = ToolExecutor::new(s)
        .execute(
            &run,
            ToolCall {
                name: name.into(),
                args,
                call_id: None,
            },
            false,
        )
        .await;
    (r, telemetry)
}

fn hook_failures(t: &RecordingTelemetry) -> Vec<String> {
    t.events()
        .into_iter()
        .filter(|(n, _)| n == "hook.failure")
        .map(|(_, a)| match a.get("description") {
            Some(AttrValue::Str(s)) => s.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_engine_event_list_is_the_runtime_event_list() {
    let engine: Vec<(&str, bool, bool)> = crate::engine::builtin::hooks::EVENTS
        .iter()
        .map(|e| (e.name, e.data_plane, e.refusable))
        .collect();
    let runtime: Vec<(&str, bool, bool)> = HookEvent::ALL
        .iter()
        .map(|e| {
            (
                e.as_str(),
                e.plane() == crate::runtime::hooks::Plane::Data,
                e.refusable(),
            )
        })
        .collect();
    assert_eq!(engine, runtime);
}

#[tokio::test]
async fn audit_appends_one_redacted_line_per_event() {
    let dir = tempfile::tempdir().unwrap();
    let redactor = Redactor::new();
    redactor.learn(&SecretValue::new("canary-5150-secret"));
    let h = mounted(
        dir.path(),
        &redactor,
        &[
            tools(),
            ("audit", "audit", json!({ "path": "audit.jsonl" })),
            (
                "failures",
                "audit",
                json!({ "path": "failures.jsonl", "events": ["tool_error"] }),
            ),
        ],
    )
    .await;
    let args = json!({ "x": "hello", "api_key": "sk-live-123", "note": "see canary-5150-secret" });
    assert_eq!(
        call(&h, "echo_args", args).await.unwrap().status,
        ToolStatus::Ok
    );
    assert_eq!(
        call(&h, "fails", json!({})).await.unwrap().status,
        ToolStatus::Error
    );
    let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    assert!(!text.contains("canary-5150-secret"), "{text}");
    assert!(!text.contains("sk-live-123"), "{text}");
    let got = lines(&dir.path().join("audit.jsonl"));
    let events: Vec<&str> = got.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(
        events,
        [
            "before_tool_execute",
            // Every call's policy decision, a tool without permissions too.
            "policy_decision",
            "after_tool_execute",
            "before_tool_execute",
            "policy_decision",
            "tool_error"
        ]
    );
    assert_eq!(got[0]["payload"]["tool"], "echo_args");
    assert_eq!(got[0]["payload"]["args"]["x"], "hello");
    assert_eq!(got[0]["payload"]["args"]["api_key"], "<redacted>");
    assert_eq!(got[0]["payload"]["args"]["note"], "see <redacted>");
    assert!(got[0]["ts"].as_f64().unwrap() > 0.0);
    let failures = lines(&dir.path().join("failures.jsonl"));
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0]["event"], "tool_error");
    assert_eq!(failures[0]["payload"]["tool"], "fails");
}

#[tokio::test]
async fn an_unwritable_audit_path_fails_setup() {
    let dir = tempfile::tempdir().unwrap();
    for path in ["no/such/dir/audit.jsonl", "."] {
        let h = harness(dir.path(), &Redactor::new());
        let err = h
            .reconcile(composition(&[("audit", "audit", json!({ "path": path }))]))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot open the audit file"), "{err}");
    }
}

#[tokio::test]
async fn deny_refuses_by_tool_glob_and_argument_glob_before_the_tool_runs() {
    let dir = tempfile::tempdir().unwrap();
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[
            tools(),
            (
                "deny",
                "deny",
                json!({
                    "tools": ["shell*"],
                    "arguments": [{ "pointer": "/path", "pattern": "*.env" }],
                    "reason": "secrets stay local",
                }),
            ),
        ],
    )
    .await;
    for (tool, args) in [
        ("shell_exec", json!({})),
        ("read_file", json!({ "path": "config/.env" })),
        ("read_file", json!({ "path": "/srv/app/../prod.env" })),
    ] {
        let err = call(&h, tool, args).await.unwrap_err();
        let ExecError::Refused(ToolRefusal::HookBail { reason, .. }) = &err else {
            panic!("{err}");
        };
        assert!(reason.starts_with("secrets stay local"), "{reason}");
        assert!(err.to_string().contains("secrets stay local"), "{err}");
    }
    assert!(
        !dir.path().join("ran").exists(),
        "a refused call never ran its program"
    );
    let ok = call(&h, "read_file", json!({ "path": "notes.txt" }))
        .await
        .unwrap();
    assert_eq!(ok.status, ToolStatus::Ok);
    assert!(dir.path().join("ran").exists());
}

fn hook_command(argv: &[&str], extra: Value) -> (&'static str, &'static str, Value) {
    let mut c = json!({ "argv": argv, "events": ["before_tool_execute"], "env": ["PATH"] });
    if let Value::Object(extra) = extra {
        c.as_object_mut().unwrap().extend(extra);
    }
    ("hook", "hook-command", c)
}

#[tokio::test]
async fn hook_command_observes_events_as_json_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[
            tools(),
            hook_command(
                &["sh", "-c", "cat >> seen.jsonl; echo >> seen.jsonl"],
                json!({ "events": ["before_tool_execute", "after_tool_execute"] }),
            ),
        ],
    )
    .await;
    assert_eq!(
        call(&h, "echo_args", json!({ "x": "a" }))
            .await
            .unwrap()
            .content,
        json!("a|")
    );
    let got = lines(&dir.path().join("seen.jsonl"));
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0]["event"], "before_tool_execute");
    assert_eq!(got[0]["payload"]["tool"], "echo_args");
    assert_eq!(got[0]["payload"]["args"], json!({ "x": "a" }));
    assert_eq!(got[1]["event"], "after_tool_execute");
}

#[tokio::test]
async fn hook_command_transforms_and_bails() {
    let dir = tempfile::tempdir().unwrap();
    let transform = r#"printf '{"action":"transform","payload":{"tool":"echo_args","args":{"x":"rewritten"}}}'"#;
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[
            tools(),
            hook_command(&["sh", "-c", transform], json!({ "mode": "transform" })),
        ],
    )
    .await;
    assert_eq!(
        call(&h, "echo_args", json!({ "x": "original" }))
            .await
            .unwrap()
            .content,
        json!("rewritten|")
    );

    let bail = r#"printf '{"action":"bail","reason":"nope from the script"}'"#;
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[
            tools(),
            hook_command(&["sh", "-c", bail], json!({ "mode": "bail" })),
        ],
    )
    .await;
    let err = call(&h, "echo_args", json!({ "x": "a" }))
        .await
        .unwrap_err();
    let ExecError::Refused(ToolRefusal::HookBail { reason, .. }) = &err else {
        panic!("{err}");
    };
    assert_eq!(reason, "nope from the script");

    // In observe mode a reply is not acted on: it is a hook failure, by the
    // same table as every hook's (recorded here, the call goes on).
    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[tools(), hook_command(&["sh", "-c", bail], json!({}))],
    )
    .await;
    let (r, t) = traced(&h, "echo_args", json!({ "x": "a" })).await;
    assert_eq!(r.unwrap().status, ToolStatus::Ok);
    assert_eq!(
        hook_failures(&t),
        ["the hook replied `bail`, but its mode is `observe`"]
    );
}

/// A guard that cannot answer (crashes, hangs, replies garbage) refuses
/// the call, whatever its error policy; the tool never runs.
#[tokio::test]
async fn a_bail_hook_that_cannot_answer_refuses() {
    let dir = tempfile::tempdir().unwrap();
    for (script, why) in [
        ("exit 3", "exit code 3"),
        ("sleep 30", "timed out"),
        ("echo 'not json'", "reply is invalid"),
    ] {
        let h = mounted(
            dir.path(),
            &Redactor::new(),
            &[
                tools(),
                hook_command(
                    &["sh", "-c", script],
                    json!({ "mode": "bail", "timeout_seconds": 0.5, "error_policy": "record" }),
                ),
            ],
        )
        .await;
        let err = call(&h, "read_file", json!({})).await.unwrap_err();
        let ExecError::Refused(ToolRefusal::HookBail { reason, hook, .. }) = &err else {
            panic!("{script}: {err}");
        };
        assert!(
            reason.starts_with("the guard could not answer"),
            "{script}: {reason}"
        );
        assert!(reason.contains(why), "{script}: {reason}");
        assert!(!hook.is_empty());
        assert!(!dir.path().join("ran").exists(), "{script}: the tool ran");
    }
}

#[tokio::test]
async fn hook_command_failures_are_recorded_redacted_or_raised() {
    let dir = tempfile::tempdir().unwrap();
    let redactor = Redactor::new();
    redactor.learn(&SecretValue::new("canary-8088-secret"));
    let failing = "echo 'bad canary-8088-secret' >&2; exit 4";
    let h = mounted(
        dir.path(),
        &redactor,
        &[tools(), hook_command(&["sh", "-c", failing], json!({}))],
    )
    .await;
    let (r, t) = traced(&h, "echo_args", json!({ "x": "a" })).await;
    assert_eq!(
        r.unwrap().status,
        ToolStatus::Ok,
        "record: the call goes on"
    );
    let failures = hook_failures(&t);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("exit code 4"), "{failures:?}");
    assert!(failures[0].contains("bad <redacted>"), "{failures:?}");
    assert!(!failures[0].contains("canary-8088-secret"), "{failures:?}");

    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[
            tools(),
            hook_command(&["echo", "not json"], json!({ "mode": "transform" })),
        ],
    )
    .await;
    let (r, t) = traced(&h, "echo_args", json!({ "x": "a" })).await;
    assert_eq!(r.unwrap().status, ToolStatus::Ok);
    let failures = hook_failures(&t);
    assert!(failures[0].contains("reply is invalid"), "{failures:?}");

    let h = mounted(
        dir.path(),
        &Redactor::new(),
        &[
            tools(),
            hook_command(
                &["sleep", "30"],
                json!({ "timeout_seconds": 0.5, "error_policy": "raise" }),
            ),
        ],
    )
    .await;
    let started = Instant::now();
    let err = call(&h, "echo_args", json!({ "x": "a" }))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    let ExecError::Hook(e) = &err else {
        panic!("{err}")
    };
    assert!(e.error.contains("timed out"), "{e}");
}

#[tokio::test]
async fn an_agent_calls_command_tools_under_deny_and_audit_end_to_end() {
    use crate::runtime::agent::{AgentRequest, AgentRunner, MonotonicClock, StopReason};
    let text = r#"
version = 1

[entries.text-tools]
plugin = "command"
[[entries.text-tools.config.tools]]
name = "word_count"
description = "Count the words in a text."
args = { type = "object", required = ["text"], properties = { text = { type = "string" } } }
argv = ["wc", "-w"]
stdin = "{/text}"
[[entries.text-tools.config.tools]]
name = "shell_exec"
description = "Run a shell command."
argv = ["sh", "-c", "echo ran >> ran"]

[entries.guard]
plugin = "deny"
config = { tools = ["shell*"], reason = "no shells here" }

[entries.audit]
plugin = "audit"
config = { path = "audit.jsonl" }

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "shell_exec", args = {} }, { name = "word_count", args = { text = "one two three" } }]
[[entries.model.config.turns]]
text = "Three words."

[agents.helper]
prompt = "Count."
tools = ["word_count", "shell_exec"]
"#;
    let loaded = crate::load::load_str("chassis.toml", text);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let dir = tempfile::tempdir().unwrap();
    let h = harness(dir.path(), &Redactor::new());
    h.reconcile(loaded.composition.unwrap()).await.unwrap();
    let runner = Arc::new(AgentRunner::new(
        ToolExecutor::new(ExecutorServices::permissive()),
        Arc::new(MonotonicClock::new()),
    ));
    let lease = h.acquire().unwrap();
    let r = runner
        .run(
            lease.generation(),
            AgentRequest {
                agent: "helper".into(),
                input: "How many words?".into(),
                run_id: None,
                history: Vec::new(),
            },
        )
        .await
        .unwrap();
    assert_eq!(r.stop, StopReason::Answered);
    assert_eq!(r.answer.as_deref(), Some("Three words."));
    let tool_messages: Vec<&str> = r
        .messages
        .iter()
        .filter(|m| m.role == crate::runtime::model::Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(tool_messages.len(), 2, "{tool_messages:?}");
    assert!(
        tool_messages[0].contains("no shells here"),
        "{tool_messages:?}"
    );
    assert_eq!(tool_messages[1].trim(), "3");
    assert!(!dir.path().join("ran").exists());
    let events: Vec<String> = lines(&dir.path().join("audit.jsonl"))
        .iter()
        .map(|l| l["event"].as_str().unwrap_or_default().to_owned())
        .collect();
    for e in [
        "before_agent_run",
        "before_model_call",
        "before_tool_execute",
        "after_tool_execute",
        "after_agent_run",
    ] {
        assert!(events.iter().any(|x| x == e), "{e} missing from {events:?}");
    }
}
