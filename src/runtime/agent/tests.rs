//! The loop's paths, end to end: TOML → harness → generation → run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::engine::policy::ToolPolicy;
use crate::engine::telemetry::{Record, RecordingTelemetry, Telemetry};
use crate::plugins::{BuiltinEnv, register_builtins};
use crate::runtime::model::Role;
use crate::runtime::{
    Catalog, ExecutorServices, FnHook, Harness, HarnessOptions, HookEvent, HookMode, HookReply,
    PluginContext, Tool, ToolCallContext, ToolExecutor, ToolOutput, plugin_fn,
};

const TOOLS: &str = r#"
version = 1
[plugins.toolbox]
version = "1.0.0"
permissions = ["net.fetch"]
[[plugins.toolbox.tools]]
name = "lookup"
description = "Looks a word up."
args = { type = "object", required = ["word"], properties = { word = { type = "string" } } }
result = "a small domesticated feline"
[entries.toolbox]
"#;

struct Slow;

#[async_trait::async_trait]
impl Tool for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes a long time."
    }
    async fn call(
        &self,
        _args: serde_json::Value,
        _ctx: &ToolCallContext,
    ) -> Result<ToolOutput, crate::runtime::BoxError> {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(ToolOutput::content("late"))
    }
}

struct Setup {
    harness: Harness,
    telemetry: Arc<RecordingTelemetry>,
    runner: Arc<AgentRunner>,
    events: Arc<Mutex<Vec<AgentEvent>>>,
}

async fn setup(toml: &str) -> Setup {
    let loaded = crate::load::load_str("c.toml", toml);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let composition = loaded.composition.expect("loads");
    let mut catalog = Catalog::new();
    register_builtins(&mut catalog, &BuiltinEnv::new("."));
    let slow = plugin_fn(
        crate::engine::model::Manifest::new(
            "slow",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        |ctx: PluginContext| async move {
            let policy = ToolPolicy {
                timeout_seconds: Some(0.05),
                ..ToolPolicy::default()
            };
            ctx.tools().register(Arc::new(Slow), policy)?;
            Ok(())
        },
    );
    catalog.register_plugin("slow", Arc::new(slow));
    let telemetry = Arc::new(RecordingTelemetry::strict());
    let harness = Harness::new(
        catalog,
        HarnessOptions {
            telemetry: Arc::clone(&telemetry) as Arc<dyn Telemetry>,
            ..HarnessOptions::default()
        },
    );
    harness.reconcile(composition).await.expect("publishes");
    let generation = Arc::clone(harness.acquire().unwrap().generation());
    let services = ExecutorServices {
        telemetry: Arc::clone(&telemetry) as Arc<dyn Telemetry>,
        ..ExecutorServices::permissive()
    }
    .with_generation_policy(&generation);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let runner = Arc::new(
        AgentRunner::new(ToolExecutor::new(services), Arc::new(MonotonicClock::new()))
            .with_observer(Arc::new(move |e: &AgentEvent| {
                sink.lock().unwrap().push(e.clone())
            })),
    );
    Setup {
        harness,
        telemetry,
        runner,
        events,
    }
}

impl Setup {
    async fn run(&self, agent: &str, input: &str) -> AgentResult {
        let lease = self.harness.acquire().unwrap();
        self.runner
            .run(
                lease.generation(),
                AgentRequest {
                    agent: agent.into(),
                    input: input.into(),
                    run_id: None,
                    history: Vec::new(),
                },
            )
            .await
            .expect("starts")
    }

    fn signal_names(&self) -> Vec<String> {
        self.telemetry
            .records()
            .iter()
            .filter_map(|r| match r {
                Record::Event { name, .. } | Record::SpanStart { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }
}

fn tool_messages(r: &AgentResult) -> Vec<&str> {
    r.messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect()
}

fn with_agent(turns: &str, agent: &str) -> String {
    format!("{TOOLS}\n[entries.model]\nplugin = \"scripted\"\n{turns}\n{agent}\n")
}

const LOOKUP_THEN_ANSWER: &str = r#"
[[entries.model.config.turns]]
tool_calls = [{ name = "lookup", args = { word = "cat" } }]
usage = { input_tokens = 30, output_tokens = 5 }
[[entries.model.config.turns]]
text = "A cat is a small domesticated feline."
usage = { input_tokens = 50, output_tokens = 9 }
"#;

#[tokio::test]
async fn answers_after_a_tool_call_and_stamps_the_run() {
    let s = setup(&with_agent(
        LOOKUP_THEN_ANSWER,
        "[agents.helper]\nprompt = \"Be brief.\"\ntools = [\"lookup\"]",
    ))
    .await;
    let r = s.run("helper", "What is a cat?").await;
    assert_eq!(r.stop, StopReason::Answered);
    assert_eq!(
        r.answer.as_deref(),
        Some("A cat is a small domesticated feline.")
    );
    assert_eq!(r.steps, 2);
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].status, "ok");
    assert_eq!(r.usage.total(), 94);
    assert!(
        r.run_id.starts_with("run_") && r.run_id.len() == 16,
        "{}",
        r.run_id
    );
    assert_eq!(r.generation_id, "gen_0001");
    assert_eq!(r.agent_revision, "1");
    // system, user, assistant(tool call), tool, assistant(answer)
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(r.messages[3].content, "a small domesticated feline");
    let budget = r.budget.expect("report");
    assert_eq!(
        budget
            .get(crate::engine::budget::BudgetDimension::ModelCalls)
            .used,
        2.0
    );
    let names = s.signal_names();
    for expected in [
        "agent.run",
        "model.call",
        "tool.execute",
        "graph.compile",
        "graph.cache",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let events = s.events.lock().unwrap();
    assert!(matches!(
        events.first(),
        Some(AgentEvent::RunStarted { depth: 0, .. })
    ));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished { .. })
    ));
}

#[tokio::test]
async fn a_malformed_call_and_an_unknown_tool_are_messages_the_model_reads() {
    let turns = r#"
[[entries.model.config.turns]]
tool_calls = [{ name = "lookup", raw_args = "{\"word\": " }, { name = "search", args = {} }]
[[entries.model.config.turns]]
tool_calls = [{ name = "lookup", args = { wrd = "cat" } }]
[[entries.model.config.turns]]
text = "done"
"#;
    let s = setup(&with_agent(turns, "[agents.a]\ntools = [\"lookup\"]")).await;
    let r = s.run("a", "go").await;
    assert_eq!(r.stop, StopReason::Answered);
    let statuses: Vec<(&str, Option<&str>)> =
        r.tool_calls.iter().map(|c| (c.status, c.refusal)).collect();
    assert_eq!(
        statuses,
        [
            ("malformed", None),
            ("refused", Some("unknown_tool")),
            ("refused", Some("invalid_arguments"))
        ]
    );
    let tool_messages: Vec<&str> = r
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        tool_messages[0].contains("could not be used"),
        "{tool_messages:?}"
    );
    assert!(
        tool_messages[1].contains("available tools: lookup"),
        "{tool_messages:?}"
    );
    assert!(
        tool_messages[2].contains("\"word\" is a required property"),
        "{tool_messages:?}"
    );
}

#[tokio::test]
async fn a_policy_denial_is_a_tool_message_and_the_model_answers() {
    let turns = r#"
[[entries.model.config.turns]]
tool_calls = [{ name = "lookup", args = { word = "cat" } }]
[[entries.model.config.turns]]
text = "I may not look it up."
[policy]
grants = []
[policy.tools.lookup]
permissions = ["net.fetch"]
"#;
    let s = setup(&with_agent(turns, "[agents.a]\n")).await;
    let r = s.run("a", "go").await;
    assert_eq!(r.stop, StopReason::Answered);
    assert_eq!(r.tool_calls[0].refusal, Some("policy_denied"));
    assert!(
        r.messages[2].content.starts_with("refused (policy_denied)"),
        "{}",
        r.messages[2].content
    );
    assert!(s.signal_names().iter().any(|n| n == "policy.decision"));
}

#[tokio::test]
async fn budgets_stop_the_run_at_the_model_and_tool_boundaries() {
    let two_calls = r#"
[[entries.model.config.turns]]
tool_calls = [{ name = "lookup", args = { word = "a" } }, { name = "lookup", args = { word = "b" } }]
[[entries.model.config.turns]]
text = "never"
"#;
    let s = setup(&with_agent(
        two_calls,
        "[agents.a]\nbudget = { tool_calls = 1 }",
    ))
    .await;
    let r = s.run("a", "go").await;
    assert!(
        matches!(&r.stop, StopReason::BudgetExhausted { dimension, .. } if dimension == "tool_calls"),
        "{:?}",
        r.stop
    );
    assert_eq!(r.answer, None);
    assert!(s.signal_names().iter().any(|n| n == "budget.exhausted"));

    let s = setup(&with_agent(
        LOOKUP_THEN_ANSWER,
        "[agents.a]\nbudget = { model_calls = 1 }",
    ))
    .await;
    let r = s.run("a", "go").await;
    assert!(
        matches!(&r.stop, StopReason::BudgetExhausted { dimension, .. } if dimension == "model_calls"),
        "{:?}",
        r.stop
    );
    assert_eq!(r.steps, 2, "the second call was refused before it was made");

    let s = setup(&with_agent(
        LOOKUP_THEN_ANSWER,
        "[agents.a]\nbudget = { tokens = 40 }",
    ))
    .await;
    let r = s.run("a", "go").await;
    assert!(
        matches!(&r.stop, StopReason::BudgetExhausted { dimension, .. } if dimension == "tokens"),
        "{:?}",
        r.stop
    );
}

#[tokio::test]
async fn the_step_limit_stops_a_model_that_keeps_calling_tools() {
    let forever = r#"
[entries.model.config]
repeat_last = true
[[entries.model.config.turns]]
tool_calls = [{ name = "lookup", args = { word = "again" } }]
"#;
    let s = setup(&with_agent(forever, "[agents.a]\nmax_steps = 3")).await;
    let r = s.run("a", "go").await;
    assert_eq!(r.stop, StopReason::StepLimit { max_steps: 3 });
    assert_eq!(r.steps, 3);
    assert_eq!(r.tool_calls.len(), 2, "the last step's calls are not run");
}

#[tokio::test]
async fn a_refusal_and_a_model_error_end_the_run() {
    let s = setup(&with_agent(
        "[[entries.model.config.turns]]\nrefusal = \"I cannot help with that.\"",
        "[agents.a]",
    ))
    .await;
    let r = s.run("a", "go").await;
    assert_eq!(
        r.stop,
        StopReason::Refused {
            reason: "I cannot help with that.".into()
        }
    );
    let s = setup(&with_agent("", "[agents.a]")).await;
    let r = s.run("a", "go").await;
    assert!(
        matches!(&r.stop, StopReason::ModelFailed { error } if error.contains("has no turn 1")),
        "{:?}",
        r.stop
    );
}

#[tokio::test]
async fn a_tool_timeout_is_a_tool_message() {
    let turns = r#"
[[entries.model.config.turns]]
tool_calls = [{ name = "slow" }]
[[entries.model.config.turns]]
text = "It timed out."
[entries.slow]
"#;
    let s = setup(&format!(
        "{}\n[plugins.slow]\nversion = \"1.0.0\"\n",
        with_agent(turns, "[agents.a]")
    ))
    .await;
    let r = s.run("a", "go").await;
    assert_eq!(r.stop, StopReason::Answered);
    assert_eq!(r.tool_calls[0].status, "timeout");
    let tool = tool_messages(&r);
    assert!(tool[0].contains("deadline"), "{tool:?}");
}

#[tokio::test]
async fn sub_agents_run_nested_with_child_budgets() {
    let turns = r#"
[[entries.model.config.turns]]
tool_calls = [{ name = "researcher", args = { input = "find cats" } }]
[[entries.model.config.turns]]
text = "cats found"
[[entries.model.config.turns]]
tool_calls = [{ name = "researcher", args = { input = "again" } }]
[[entries.model.config.turns]]
text = "Done: cats found."
"#;
    let agents = r#"
[agents.lead]
sub_agents = ["researcher"]
tools = []
budget = { child_runs = 1 }
[agents.researcher]
description = "Finds things."
"#;
    let s = setup(&with_agent(turns, agents)).await;
    let r = s.run("lead", "go").await;
    assert_eq!(r.tool_calls[0].status, "ok");
    assert_eq!(tool_messages(&r)[0], "cats found");
    // The lead's own `child_runs` are spent: its run stops there, with no
    // further (paid) model call, rather than telling its model.
    assert!(
        matches!(&r.stop, StopReason::BudgetExhausted { dimension, .. } if dimension == "child_runs"),
        "{:?}",
        r.stop
    );
    assert_eq!(
        (r.tool_calls[1].status, r.tool_calls[1].refusal),
        ("refused", Some("budget")),
        "{:?}",
        r.tool_calls[1]
    );
    let budget = r.budget.expect("report");
    assert_eq!(
        budget
            .get(crate::engine::budget::BudgetDimension::ChildRuns)
            .used,
        1.0
    );
    // Two calls of the lead and the child's one, counted on the lead.
    assert_eq!(
        budget
            .get(crate::engine::budget::BudgetDimension::ModelCalls)
            .used,
        3.0
    );
    let depths: Vec<usize> = s
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::RunStarted { depth, .. } => Some(*depth),
            _ => None,
        })
        .collect();
    assert_eq!(depths, [0, 1]);
}

/// A child that exhausts only its own budget is a failed tool call its
/// caller reads; one refused by its caller's limit stops the caller.
#[tokio::test]
async fn a_sub_agent_out_of_its_own_budget_fails_one_call_out_of_its_callers_stops_it() {
    let turns = r#"
[[entries.model.config.turns]]
tool_calls = [{ name = "researcher", args = { input = "find cats" } }]
[[entries.model.config.turns]]
tool_calls = [{ name = "lookup", args = { word = "cat" } }]
[[entries.model.config.turns]]
text = "Done without help."
"#;
    let own = r#"
[agents.lead]
sub_agents = ["researcher"]
tools = []
[agents.researcher]
description = "Finds things."
budget = { model_calls = 1 }
"#;
    let s = setup(&with_agent(turns, own)).await;
    let r = s.run("lead", "go").await;
    assert_eq!(r.stop, StopReason::Answered, "{:?}", r.tool_calls);
    assert_eq!(r.tool_calls[0].status, "error", "{:?}", r.tool_calls);
    assert!(
        r.tool_calls[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("model_calls")),
        "{:?}",
        r.tool_calls[0]
    );

    let turns = r#"
[[entries.model.config.turns]]
tool_calls = [{ name = "researcher", args = { input = "find cats" } }]
usage = { input_tokens = 10, output_tokens = 0 }
[[entries.model.config.turns]]
text = "a very long answer"
usage = { input_tokens = 60, output_tokens = 0 }
[[entries.model.config.turns]]
text = "never asked"
"#;
    let callers = r#"
[agents.lead]
sub_agents = ["researcher"]
tools = []
budget = { tokens = 50 }
[agents.researcher]
description = "Finds things."
"#;
    let s = setup(&with_agent(turns, callers)).await;
    let r = s.run("lead", "go").await;
    assert!(
        matches!(&r.stop, StopReason::BudgetExhausted { dimension, .. } if dimension == "tokens"),
        "{:?}",
        r.stop
    );
    let budget = r.budget.expect("report");
    assert_eq!(
        budget
            .get(crate::engine::budget::BudgetDimension::ModelCalls)
            .used,
        2.0,
        "the child's call happened and counts on the caller; no model call followed"
    );
    assert_eq!(
        budget
            .get(crate::engine::budget::BudgetDimension::Tokens)
            .used,
        70.0
    );
}

#[tokio::test]
async fn model_call_hooks_observe_transform_and_bail() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let toml = with_agent(
        LOOKUP_THEN_ANSWER,
        "[agents.a]\n[entries.watch]\n[plugins.watch]\nversion = \"1.0.0\"",
    );
    let loaded = crate::load::load_str("c.toml", &toml);
    let composition = loaded.composition.expect("loads");
    let mut catalog = Catalog::new();
    register_builtins(&mut catalog, &BuiltinEnv::new("."));
    let sink = Arc::clone(&seen);
    let watch = plugin_fn(
        crate::engine::model::Manifest::new(
            "watch",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        move |ctx: PluginContext| {
            let sink = Arc::clone(&sink);
            async move {
                for event in [
                    HookEvent::BeforeAgentRun,
                    HookEvent::BeforeModelCall,
                    HookEvent::AfterModelCall,
                    HookEvent::AfterAgentRun,
                ] {
                    let sink = Arc::clone(&sink);
                    ctx.hooks().register(
                        event,
                        Arc::new(FnHook(move |e: HookEvent, p: &serde_json::Value| {
                            sink.lock().unwrap().push(e.as_str().to_owned());
                            if e == HookEvent::BeforeModelCall && p["step"] == 2 {
                                return Ok(HookReply::Bail("no second call".into()));
                            }
                            Ok(HookReply::Continue)
                        })),
                        if event == HookEvent::BeforeModelCall {
                            HookMode::Bail
                        } else {
                            HookMode::Observe
                        },
                        0,
                    )?;
                }
                Ok(())
            }
        },
    );
    catalog.register_plugin("watch", Arc::new(watch));
    let harness = Harness::new(catalog, HarnessOptions::default());
    harness.reconcile(composition).await.expect("publishes");
    let lease = harness.acquire().unwrap();
    let runner = Arc::new(AgentRunner::new(
        ToolExecutor::new(ExecutorServices::permissive()),
        Arc::new(MonotonicClock::new()),
    ));
    let r = runner
        .run(
            lease.generation(),
            AgentRequest {
                agent: "a".into(),
                input: "go".into(),
                run_id: None,
                history: Vec::new(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        r.stop,
        StopReason::Refused {
            reason: "no second call (hook `hook_watch_2` of `watch`)".into()
        },
        "a refusal names the hook"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "before_agent_run",
            "before_model_call",
            "after_model_call",
            "before_model_call",
            "after_agent_run"
        ]
    );
}

#[tokio::test]
async fn the_plan_is_cached_by_definition() {
    let s = setup(&with_agent(
        &format!("{LOOKUP_THEN_ANSWER}\n[[entries.model.config.turns]]\ntext = \"x\"\n[[entries.model.config.turns]]\ntext = \"y\""),
        "[agents.a]",
    ))
    .await;
    let _ = s.run("a", "one").await;
    let _ = s.run("a", "two").await;
    assert_eq!(s.runner.plans().len(), 1);
    let results: Vec<String> = s
        .telemetry
        .records()
        .iter()
        .filter_map(|r| match r {
            Record::Event { name, attrs, .. } if name == "graph.cache" => {
                attrs.get("result").map(|v| format!("{v:?}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        results[0].contains("miss") && results[1].contains("hit"),
        "{results:?}"
    );
}

#[tokio::test]
async fn an_unknown_agent_and_an_unbound_model_cannot_start() {
    let s = setup(&with_agent(LOOKUP_THEN_ANSWER, "[agents.a]")).await;
    let lease = s.harness.acquire().unwrap();
    let err = s
        .runner
        .run(
            lease.generation(),
            AgentRequest {
                agent: "b".into(),
                input: String::new(),
                run_id: None,
                history: Vec::new(),
            },
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("agents: a"), "{err}");
    let s = setup(&format!("{TOOLS}\n[agents.a]\n")).await;
    let lease = s.harness.acquire().unwrap();
    let err = s
        .runner
        .run(
            lease.generation(),
            AgentRequest {
                agent: "a".into(),
                input: String::new(),
                run_id: None,
                history: Vec::new(),
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::ModelUnavailable { .. }), "{err}");
}

#[tokio::test]
async fn the_agent_facing_guide_is_rendered_and_silent_tools_are_not_offered() {
    let toml = r#"
version = 1
[plugins.kit]
version = "1.0.0"
agent = { title = "Word kit", when_to_use = "questions about words", examples = [{ tool = "lookup", args = { word = "cat" }, description = "define cat" }] }
[[plugins.kit.tools]]
name = "lookup"
description = "Looks a word up."
[[plugins.kit.tools]]
name = "internal"
description = "Bookkeeping."
agent = { visibility = "silent" }
[entries.kit]
[entries.model]
plugin = "scripted"
[agents.a]
"#;
    let s = setup(toml).await;
    let lease = s.harness.acquire().unwrap();
    let g = lease.generation();
    let plan = super::run::compile(g, &g.composition.agents["a"], "h".into());
    let names: Vec<&str> = plan.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["lookup"], "the silent tool is not offered");
    assert_eq!(
        plan.tools[0].description,
        "Looks a word up.\nWord kit\nUse when: questions about words\nExample: lookup({\"word\":\"cat\"}) — define cat"
    );
    // An example naming a tool the plugin does not declare fails the load.
    let bad = toml.replace("tool = \"lookup\", args", "tool = \"lookpu\", args");
    let loaded = crate::load::load_str("c.toml", &bad);
    let d = loaded
        .diagnostics
        .iter()
        .find(|d| d.code == crate::engine::diag::Code::UnknownTool)
        .expect("an unknown-tool error");
    assert!(
        d.is_error() && d.help.iter().any(|h| h.contains("`lookup`")),
        "{d:?}"
    );
}

struct Echo;

#[async_trait::async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echo the arguments."
    }
    async fn call(
        &self,
        args: serde_json::Value,
        _ctx: &ToolCallContext,
    ) -> Result<ToolOutput, crate::runtime::BoxError> {
        Ok(ToolOutput::content(args.to_string()))
    }
}

#[tokio::test]
async fn request_tools_reach_only_their_run_and_stamp_its_own_digest() {
    let turns = r#"
[[entries.model.config.turns]]
tool_calls = [{ name = "echo", args = { said = "hi" } }]
[[entries.model.config.turns]]
text = "done"
[[entries.model.config.turns]]
tool_calls = [{ name = "echo", args = { said = "hi" } }]
[[entries.model.config.turns]]
text = "done"
"#;
    let s = setup(&with_agent(
        turns,
        "[agents.helper]\nprompt = \"p\"\ntools = [\"lookup\"]",
    ))
    .await;
    let lease = s.harness.acquire().unwrap();
    let request = |input: &str| AgentRequest {
        agent: "helper".into(),
        input: input.into(),
        run_id: None,
        history: Vec::new(),
    };
    let tools = crate::runtime::request_tools::RequestTools {
        tools: vec![crate::runtime::ToolRegistration {
            id: String::new(),
            owner: "caller".into(),
            tool: Arc::new(Echo),
            policy: ToolPolicy::default(),
        }],
        config: crate::engine::model::ConfigValue::empty_table(),
    };
    let with = s
        .runner
        .run_with_request_tools(lease.generation(), request("one"), tools)
        .await
        .expect("starts");
    assert_eq!(with.tool_calls[0].status, "ok", "{:?}", with.tool_calls);
    assert_eq!(with.generation_id, "gen_0001");
    // The published generation never saw the tool; a plain run is refused it
    // and stamps another digest.
    assert!(!lease.generation().tools.contains_key("echo"));
    let plain = s
        .runner
        .run(lease.generation(), request("two"))
        .await
        .expect("starts");
    assert_eq!(plain.tool_calls[0].status, "refused");
    assert_ne!(plain.snapshot_digest, with.snapshot_digest);
}
