//! Tool boundary tests: every step of the pipeline, refusals and failures.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::engine::budget::{BudgetLimits, ManualClock};
use crate::engine::build::CompositionBuilder as B;
use crate::engine::model::Manifest;
use crate::engine::policy::{ApproveListed, Grant, PolicyRules, ToolPolicy};
use crate::engine::secret::SecretValue;
use crate::engine::telemetry::RecordingTelemetry;
use crate::engine::version::Version;

struct Echo {
    name: &'static str,
    schema: Option<Value>,
    seen: Arc<Mutex<Vec<Value>>>,
    behaviour: &'static str,
}

#[async_trait::async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "echo"
    }
    fn args_schema(&self) -> Option<&Value> {
        self.schema.as_ref()
    }
    async fn call(&self, args: Value, ctx: &ToolCallContext) -> Result<ToolOutput, BoxError> {
        self.seen.lock().unwrap().push(args.clone());
        match self.behaviour {
            "fail" => Err("backend said sk-secret-value-123 is wrong".into()),
            "hang" => {
                ctx.cancel.cancelled().await;
                Err("cancelled".into())
            }
            _ => Ok(ToolOutput::content(args)),
        }
    }
}

struct Fixture {
    harness: Harness,
    seen: Arc<Mutex<Vec<Value>>>,
}

async fn fixture(hooks: bool) -> Fixture {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let plugin = plugin_fn(
        Manifest {
            permissions: vec!["filesystem.read".into()],
            ..Manifest::new("tools", Version::parse("1.0.0").unwrap())
        },
        move |ctx: PluginContext| {
            let s = Arc::clone(&s);
            async move {
                let read = ToolPolicy {
                    permissions: vec!["filesystem.read:{/path}".into()],
                    ..ToolPolicy::default()
                };
                let schema = json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}});
                ctx.tools().register(
                    Arc::new(Echo {
                        name: "read_file",
                        schema: Some(schema),
                        seen: Arc::clone(&s),
                        behaviour: "ok",
                    }),
                    read,
                )?;
                ctx.tools().register(
                    Arc::new(Echo {
                        name: "echo",
                        schema: None,
                        seen: Arc::clone(&s),
                        behaviour: "ok",
                    }),
                    ToolPolicy::default(),
                )?;
                let approve = ToolPolicy {
                    approval_required: true,
                    ..ToolPolicy::default()
                };
                ctx.tools().register(
                    Arc::new(Echo {
                        name: "deploy",
                        schema: None,
                        seen: Arc::clone(&s),
                        behaviour: "ok",
                    }),
                    approve,
                )?;
                ctx.tools().register(
                    Arc::new(Echo {
                        name: "broken",
                        schema: None,
                        seen: Arc::clone(&s),
                        behaviour: "fail",
                    }),
                    ToolPolicy::default(),
                )?;
                let slow = ToolPolicy {
                    timeout_seconds: Some(0.05),
                    ..ToolPolicy::default()
                };
                ctx.tools().register(
                    Arc::new(Echo {
                        name: "slow",
                        schema: None,
                        seen: Arc::clone(&s),
                        behaviour: "hang",
                    }),
                    slow,
                )?;
                if hooks {
                    ctx.hooks().register(
                        HookEvent::BeforeToolExecute,
                        Arc::new(FnHook(|_, p: &Value| {
                            if p["tool"] == "echo" && p["args"]["forbidden"] == true {
                                return Ok(HookReply::Bail("no forbidden echoes".into()));
                            }
                            Ok(HookReply::Continue)
                        })),
                        HookMode::Bail,
                        0,
                    )?;
                    ctx.hooks().register(
                        HookEvent::BeforeToolExecute,
                        Arc::new(FnHook(|_, p: &Value| {
                            let mut p = p.clone();
                            if p["tool"] == "echo" {
                                p["args"]["stamped"] = json!(true);
                            }
                            Ok(HookReply::Replace(p))
                        })),
                        HookMode::Transform,
                        -1,
                    )?;
                }
                Ok(())
            }
        },
    );
    let mut catalog = Catalog::new();
    catalog.register_plugin("tools", Arc::new(plugin));
    let harness = Harness::new(catalog, HarnessOptions::default());
    let c = B::new()
        .scope("/narrow", None)
        .tool_view(&["echo"])
        .entry("tools")
        .plugin("tools", "1.0.0")
        .build()
        .unwrap();
    harness.reconcile(c).await.unwrap();
    Fixture { harness, seen }
}

fn run_in(
    f: &Fixture,
    scope: &str,
    budget: Option<crate::engine::budget::BudgetGovernor>,
) -> (RunContext, Lease) {
    let lease = f.harness.acquire().unwrap();
    let run = RunContext {
        run_id: "run_test".into(),
        generation: Arc::clone(lease.generation()),
        agent: None,
        scope: scope.into(),
        budget,
        extra_tools: None,
    };
    (run, lease)
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        name: name.into(),
        args,
        call_id: Some("c1".into()),
    }
}

fn executor(
    telemetry: Arc<RecordingTelemetry>,
    policy: Option<PolicyRules>,
    approve: &[&str],
) -> ToolExecutor {
    let mut s = ExecutorServices::permissive();
    s.telemetry = telemetry;
    if let Some(p) = policy {
        s.policy = Arc::new(p);
    }
    if !approve.is_empty() {
        s.approvals = Arc::new(ApproveListed(
            approve.iter().map(|t| (*t).to_owned()).collect(),
        ));
    }
    ToolExecutor::new(s)
}

#[tokio::test]
async fn unknown_tools_and_tool_views_refuse_with_what_is_available() {
    let f = fixture(false).await;
    let ex = executor(Arc::new(RecordingTelemetry::new()), None, &[]);
    let (run, _lease) = run_in(&f, "/", None);
    let err = ex
        .execute(&run, call("nope", json!({})), false)
        .await
        .unwrap_err();
    let ExecError::Refused(ToolRefusal::UnknownTool { available, .. }) = err else {
        panic!("{err}")
    };
    assert_eq!(available, ["broken", "deploy", "echo", "read_file", "slow"]);
    let (narrow, _l2) = run_in(&f, "/narrow", None);
    assert!(
        ex.execute(
            &narrow,
            call("read_file", json!({"path": "/workspace/a"})),
            false
        )
        .await
        .is_err(),
        "hidden by the view"
    );
    assert!(
        ex.execute(&narrow, call("echo", json!({})), false)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn hooks_bail_and_transform_before_the_tool_runs() {
    let f = fixture(true).await;
    let ex = executor(Arc::new(RecordingTelemetry::new()), None, &[]);
    let (run, _lease) = run_in(&f, "/", None);
    let err = ex
        .execute(&run, call("echo", json!({"forbidden": true})), false)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ExecError::Refused(ToolRefusal::HookBail { .. })),
        "{err}"
    );
    let ok = ex
        .execute(&run, call("echo", json!({"x": 1})), false)
        .await
        .unwrap();
    assert_eq!(
        ok.content,
        json!({"x": 1, "stamped": true}),
        "the tool received the transformed arguments"
    );
    assert_eq!(
        f.seen.lock().unwrap().len(),
        1,
        "the bailed call never reached the tool"
    );
}

#[tokio::test]
async fn arguments_are_checked_then_policy_decides_on_normalized_paths() {
    let f = fixture(false).await;
    let telemetry = Arc::new(RecordingTelemetry::new());
    let rules = PolicyRules {
        grants: vec![Grant::parse("filesystem.read:/workspace/**").unwrap()],
        ..PolicyRules::default()
    };
    let ex = executor(Arc::clone(&telemetry), Some(rules), &[]);
    let (run, _lease) = run_in(&f, "/", None);
    let err = ex
        .execute(&run, call("read_file", json!({"path": 3})), false)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ExecError::Refused(ToolRefusal::InvalidArguments { .. })
        ),
        "{err}"
    );
    let err = ex
        .execute(
            &run,
            call("read_file", json!({"path": "/workspace/../etc/passwd"})),
            false,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, ExecError::Refused(ToolRefusal::PolicyDenied { .. })),
        "{err}"
    );
    let ok = ex
        .execute(
            &run,
            call("read_file", json!({"path": "/workspace/notes.txt"})),
            false,
        )
        .await
        .unwrap();
    assert_eq!(ok.status, ToolStatus::Ok);
    assert_eq!(
        f.seen.lock().unwrap().len(),
        1,
        "refused calls never reached the tool"
    );
    let decisions: Vec<bool> = telemetry
        .events()
        .iter()
        .filter(|(n, _)| n == "policy.decision")
        .map(|(_, a)| a["allowed"] == true.into())
        .collect();
    assert_eq!(decisions, [false, true]);
}

#[tokio::test]
async fn approval_is_denied_by_default_and_granted_when_listed() {
    let f = fixture(false).await;
    let (run, _lease) = run_in(&f, "/", None);
    let denied = executor(Arc::new(RecordingTelemetry::new()), None, &[])
        .execute(&run, call("deploy", json!({})), false)
        .await;
    assert!(matches!(
        denied,
        Err(ExecError::Refused(ToolRefusal::ApprovalDenied { .. }))
    ));
    let approved = executor(Arc::new(RecordingTelemetry::new()), None, &["deploy"])
        .execute(&run, call("deploy", json!({})), false)
        .await;
    assert_eq!(approved.unwrap().status, ToolStatus::Ok);
}

#[tokio::test]
async fn budget_exhaustion_propagates_and_is_signalled() {
    let f = fixture(false).await;
    let telemetry = Arc::new(RecordingTelemetry::new());
    let ex = executor(Arc::clone(&telemetry), None, &[]);
    let budget = crate::engine::budget::BudgetGovernor::new(
        BudgetLimits::builder().tool_calls(1.0).build().unwrap(),
        Arc::new(ManualClock::new()),
    );
    let (run, _lease) = run_in(&f, "/", Some(budget));
    ex.execute(&run, call("echo", json!({})), false)
        .await
        .unwrap();
    let err = ex
        .execute(&run, call("echo", json!({})), false)
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Budget(_)), "{err}");
    assert!(
        telemetry
            .events()
            .iter()
            .any(|(n, _)| n == "budget.exhausted")
    );
}

#[tokio::test]
async fn failures_and_timeouts_are_normalized_and_redacted() {
    let f = fixture(false).await;
    let telemetry = Arc::new(RecordingTelemetry::new());
    let ex = executor(Arc::clone(&telemetry), None, &[]);
    ex.services()
        .redactor
        .learn(&SecretValue::new("sk-secret-value-123"));
    let (run, _lease) = run_in(&f, "/", None);
    let failed = ex
        .execute(&run, call("broken", json!({})), false)
        .await
        .unwrap();
    assert_eq!(failed.status, ToolStatus::Error);
    let text = failed.error.clone().unwrap();
    assert!(
        !text.contains("sk-secret-value-123") && text.contains("<redacted>"),
        "{text}"
    );
    assert!(matches!(
        ex.execute(&run, call("broken", json!({})), true).await,
        Err(ExecError::Failed(_))
    ));
    let started = std::time::Instant::now();
    let slow = ex
        .execute(&run, call("slow", json!({})), false)
        .await
        .unwrap();
    assert_eq!(slow.status, ToolStatus::Timeout);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(telemetry.spans().iter().any(|s| s.name == "tool.execute"));
}

#[tokio::test]
async fn declared_tools_are_contracts_that_answer_not_implemented() {
    let h = Harness::new(Catalog::new(), HarnessOptions::default());
    let c = B::new()
        .entry("toolbox")
        .tool("search", "Search.", None)
        .build()
        .unwrap();
    h.reconcile(c).await.unwrap();
    let lease = h.acquire().unwrap();
    let run = RunContext {
        run_id: "r".into(),
        generation: Arc::clone(lease.generation()),
        agent: None,
        scope: "/".into(),
        budget: None,
        extra_tools: None,
    };
    let ex = ToolExecutor::new(ExecutorServices::permissive());
    let out = ex
        .execute(&run, call("search", json!({})), false)
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Error);
    assert!(out.error.unwrap().contains("tool_not_implemented"));
}
