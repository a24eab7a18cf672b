//! Runtime benchmarks (a plain bench binary, median of repeated runs):
//! no-op reconcile and one-entry replacement at 1,000 and 10,000 entries,
//! lease acquire + release, and the per-call overhead of the tool boundary
//! with one observe hook, a grant policy, a budget and recording telemetry
//! (also with the policy from a scope's `policy` provider).
//!
//! ```text
//! cargo bench --bench runtime                  # every case
//! cargo bench --bench runtime -- --quick       # 1,000 entries only
//! cargo bench --bench runtime -- noop replace  # cases whose name contains a filter
//! cargo bench --bench runtime -- --sizes=10000 # reconcile at these sizes
//! cargo bench --bench runtime -- --runs=200 replace  # more repetitions (to profile)
//! cargo bench --bench runtime -- --idle-ms=30 replace # replacements after a pause
//! ```
//!
//! Case names: `noop`, `replace`, `lease`, `boundary`, `agent`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chassis::engine::budget::{BudgetGovernor, BudgetLimits, ManualClock};
use chassis::engine::build::CompositionBuilder;
use chassis::engine::model::{Composition, ConfigValue, Manifest};
use chassis::engine::policy::{Grant, PolicyRules, ToolPolicy};
use chassis::engine::telemetry::RecordingTelemetry;
use chassis::engine::version::Version;
use chassis::runtime::{
    BoxError, CapabilityValue, Catalog, ExecutorServices, FnHook, Harness, HarnessOptions,
    HookEvent, HookMode, HookReply, PluginContext, RunContext, Tool, ToolCall, ToolCallContext,
    ToolExecutor, ToolOutput, plugin_fn,
};
use serde_json::{Value, json};

/// The allocator of the `chassis` binary, so the figures are what users run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn chain(n: usize, leaf_config: i64) -> Composition {
    let mut b = CompositionBuilder::new();
    for i in 0..n {
        let name = format!("e{i:06}");
        b = b.entry(&name).provides(&format!("cap{i}"), &["1.0.0"]);
        if i > 0 {
            b = b.requires(&format!("cap{}", i - 1), ">=1,<2");
        }
        if i == n - 1 {
            b = b.config(ConfigValue::Table(
                [("v".to_owned(), ConfigValue::Int(leaf_config))].into(),
            ));
        }
    }
    b.build().expect("valid chain")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.2} µs")
    } else {
        format!("{:.2} ms", us / 1_000.0)
    }
}

struct Echo;

#[async_trait::async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "echo"
    }
    async fn call(&self, args: Value, _ctx: &ToolCallContext) -> Result<ToolOutput, BoxError> {
        Ok(ToolOutput::content(args))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    const CASES: [&str; 5] = ["noop", "replace", "lease", "boundary", "agent"];
    if let Some(unknown) = filters
        .iter()
        .find(|f| !CASES.iter().any(|case| case.contains(**f)))
    {
        eprintln!(
            "no case matches `{unknown}`; the cases are {}",
            CASES.join(", ")
        );
        std::process::exit(2);
    }
    let wants = |case: &str| filters.is_empty() || filters.iter().any(|f| case.contains(f));
    let sizes: Vec<usize> = match args.iter().find_map(|a| a.strip_prefix("--sizes=")) {
        Some(list) => list
            .split(',')
            .map(|n| n.trim().parse().expect("--sizes=N,M"))
            .collect(),
        None if quick => vec![1_000],
        None => vec![1_000, 10_000],
    };
    // `--idle-ms=N` waits N ms before each timed replacement (a reload after
    // a quiet spell: caches cold, freed memory returned to the system).
    let idle: Option<Duration> = args
        .iter()
        .find_map(|a| a.strip_prefix("--idle-ms="))
        .map(|n| Duration::from_millis(n.trim().parse().expect("--idle-ms=N")));
    // `--runs=N` repeats the reconcile cases N times (e.g. to profile them).
    let runs_override: Option<usize> = args
        .iter()
        .find_map(|a| a.strip_prefix("--runs="))
        .map(|n| n.trim().parse().expect("--runs=N"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("## chassis runtime benchmark\n");
    println!("| case | entries | median |");
    println!("|---|---:|---:|");
    for &n in sizes.iter().filter(|_| wants("noop") || wants("replace")) {
        let h = Harness::new(Catalog::new(), HarnessOptions::default());
        let a = chain(n, 1);
        let b = chain(n, 2);
        rt.block_on(h.reconcile(a.clone()))
            .expect("first reconcile");
        let runs = runs_override.unwrap_or(31);
        let mut noop = Vec::new();
        for _ in 0..runs * usize::from(wants("noop")) {
            let c = a.clone();
            let t = Instant::now();
            let r = rt.block_on(h.reconcile(c)).expect("no-op");
            noop.push(t.elapsed());
            assert!(!r.published);
        }
        if wants("noop") {
            println!("| no-op reconcile (chain) | {n} | {} |", fmt(median(noop)));
            // The same composition built again, as a reload from a file gives
            // it: nothing shared, so every manifest is compared by value.
            let mut reload = Vec::new();
            for _ in 0..runs {
                let c = chain(n, 1);
                let t = Instant::now();
                let r = rt.block_on(h.reconcile(c)).expect("no-op");
                reload.push(t.elapsed());
                assert!(!r.published);
            }
            println!(
                "| no-op reconcile (chain, rebuilt as by a reload) | {n} | {} |",
                fmt(median(reload))
            );
        }
        if !wants("replace") {
            continue;
        }
        let mut replace = Vec::new();
        for i in 0..runs {
            let c = if i % 2 == 0 { b.clone() } else { a.clone() };
            if let Some(idle) = idle {
                std::thread::sleep(idle);
            }
            let t = Instant::now();
            let r = rt.block_on(h.reconcile(c)).expect("replacement");
            replace.push(t.elapsed());
            assert!(
                r.published && r.mounted.len() == 1,
                "one entry (the leaf) is rebuilt"
            );
        }
        println!(
            "| one-entry replacement (chain leaf) | {n} | {} |",
            fmt(median(replace))
        );
    }

    if wants("lease") {
        // Lease acquire + release.
        let h = Harness::new(Catalog::new(), HarnessOptions::default());
        rt.block_on(h.reconcile(chain(10, 1))).expect("reconcile");
        let rounds = 200_000u32;
        let t = Instant::now();
        for _ in 0..rounds {
            let lease = h.acquire().expect("lease");
            drop(lease);
        }
        println!("| acquire + release | — | {} |", fmt(t.elapsed() / rounds));
    }

    if wants("boundary") {
        // Warm up once: the first harness a process builds pays for it.
        boundary_per_call(&rt, false);
        let boundary = boundary_per_call(&rt, false);
        let governed = boundary_per_call(&rt, true);
        let (calls, args) = (20_000u32, json!({ "q": "x" }));
        let ctx = ToolCallContext::detached("bench", "gen_0001", "/");
        let t = Instant::now();
        rt.block_on(async {
            for _ in 0..calls {
                std::hint::black_box(Echo.call(args.clone(), &ctx).await.expect("direct"));
            }
        });
        let direct = t.elapsed() / calls;
        println!("| tool call through the boundary | — | {} |", fmt(boundary));
        println!(
            "| tool call through the boundary, scope governed by a `policy` provider | — | {} |",
            fmt(governed)
        );
        println!("| tool call direct | — | {} |", fmt(direct));
        println!(
            "| boundary overhead per call | — | {} |",
            fmt(boundary.saturating_sub(direct))
        );
    }

    if wants("agent") {
        agent_steps(&rt, quick);
    }
}

/// Per-call time through the tool boundary: one observe hook, a grant
/// policy, a budget, recording telemetry. `governed`: the run's scope is
/// governed by a `policy` provider (granting the same) instead of the
/// executor's default policy.
fn boundary_per_call(rt: &tokio::runtime::Runtime, governed: bool) -> Duration {
    let grants = || PolicyRules {
        grants: vec![Grant::parse("net.fetch").expect("grant")],
        ..PolicyRules::default()
    };
    let mut catalog = Catalog::new();
    let manifest = Manifest {
        permissions: vec!["net.fetch".into()],
        ..Manifest::new("tools", Version::parse("1.0.0").expect("v"))
    };
    catalog.register_plugin(
        "tools",
        Arc::new(plugin_fn(manifest, |ctx: PluginContext| async move {
            ctx.tools().register(
                Arc::new(Echo),
                ToolPolicy {
                    permissions: vec!["net.fetch".into()],
                    ..ToolPolicy::default()
                },
            )?;
            ctx.hooks().register(
                HookEvent::BeforeToolExecute,
                Arc::new(FnHook(|_, _: &Value| Ok(HookReply::Continue))),
                HookMode::Observe,
                0,
            )?;
            Ok(())
        })),
    );
    let policy = Manifest::new("scope-policy", Version::parse("1.0.0").expect("v"));
    catalog.register_plugin(
        "scope-policy",
        Arc::new(plugin_fn(policy, move |ctx: PluginContext| async move {
            ctx.capabilities()
                .provide("policy", CapabilityValue::policy(grants()), "1.0.0")?;
            Ok(())
        })),
    );
    let h = Harness::new(catalog, HarnessOptions::default());
    let mut c = CompositionBuilder::new()
        .scope("/governed", None)
        .entry("tools")
        .plugin("tools", "1.0.0");
    if governed {
        c = c
            .entry("scope-policy")
            .plugin("scope-policy", "1.0.0")
            .in_scope("/governed")
            .provides("policy", &["1.0.0"]);
    }
    rt.block_on(h.reconcile(c.build().expect("valid")))
        .expect("reconcile");
    let lease = h.acquire().expect("lease");
    let mut services = ExecutorServices::permissive();
    if !governed {
        services.policy = Arc::new(grants());
    }
    services.telemetry = Arc::new(RecordingTelemetry::new());
    let ex = ToolExecutor::new(services);
    let calls = 20_000u32;
    let budget = BudgetGovernor::new(
        BudgetLimits::builder()
            .tool_calls(f64::from(calls) * 4.0)
            .build()
            .expect("limits"),
        Arc::new(ManualClock::new()),
    );
    let run = RunContext {
        run_id: "bench".into(),
        generation: Arc::clone(lease.generation()),
        agent: None,
        scope: if governed { "/governed" } else { "/" }.into(),
        budget: Some(budget),
        extra_tools: None,
    };
    let args = json!({ "q": "x" });
    let t = Instant::now();
    rt.block_on(async {
        for _ in 0..calls {
            let r = ex
                .execute(
                    &run,
                    ToolCall {
                        name: "echo".into(),
                        args: args.clone(),
                        call_id: None,
                    },
                    false,
                )
                .await
                .expect("call");
            assert_eq!(r.status, chassis::runtime::ToolStatus::Ok);
            std::hint::black_box(r);
        }
    });
    t.elapsed() / calls
}

/// Harness overhead per agent step: the built-in loop with the scripted
/// model calling an in-process tool, minus the model and the tool alone.
fn agent_steps(rt: &tokio::runtime::Runtime, quick: bool) {
    use chassis::runtime::agent::{AgentRequest, AgentRunner, MonotonicClock};
    use chassis::runtime::model::{ChatMessage, ChatModel, ModelRequest, Role};
    let steps: u32 = if quick { 2_000 } else { 10_000 };
    let toml = format!(
        r#"version = 1
[plugins.tools]
version = "1.0.0"
[entries.tools]
[entries.model]
plugin = "scripted"
[entries.model.config]
repeat_last = true
[[entries.model.config.turns]]
tool_calls = [{{ name = "echo", args = {{ q = "x" }} }}]
usage = {{ input_tokens = 10, output_tokens = 2 }}
[agents.bench]
prompt = "Benchmark."
max_steps = {steps}
budget = {{ model_calls = {limit}, tool_calls = {limit}, tokens = {tokens} }}
"#,
        limit = steps * 2,
        tokens = steps * 100
    );
    let composition = chassis::load::load_str("bench.toml", &toml)
        .composition
        .expect("the bench composition loads");
    let mut catalog = Catalog::new();
    chassis::plugins::register_builtins(&mut catalog, &chassis::plugins::BuiltinEnv::new("."));
    catalog.register_plugin(
        "tools",
        Arc::new(plugin_fn(
            Manifest::new("tools", Version::parse("1.0.0").expect("v")),
            |ctx: PluginContext| async move {
                ctx.tools()
                    .register(Arc::new(Echo), ToolPolicy::default())?;
                Ok(())
            },
        )),
    );
    let h = Harness::new(catalog, HarnessOptions::default());
    rt.block_on(h.reconcile(composition)).expect("reconcile");
    let lease = h.acquire().expect("lease");
    let services = ExecutorServices {
        telemetry: Arc::new(RecordingTelemetry::new()),
        ..ExecutorServices::permissive()
    };
    let runner = Arc::new(AgentRunner::new(
        ToolExecutor::new(services),
        Arc::new(MonotonicClock::new()),
    ));
    let t = Instant::now();
    let result = rt
        .block_on(runner.run(
            lease.generation(),
            AgentRequest {
                agent: "bench".into(),
                input: "go".into(),
                run_id: None,
                history: Vec::new(),
            },
        ))
        .expect("runs");
    let total = t.elapsed();
    assert_eq!(result.steps, steps, "{:?}", result.stop);
    let per_step_long = total / steps;
    // Typical runs: 10 steps each, run after run (per-run work amortized).
    let short_runs = steps / 10;
    let agent10 = toml.replace(&format!("max_steps = {steps}"), "max_steps = 10");
    let composition = chassis::load::load_str("bench.toml", &agent10)
        .composition
        .expect("loads");
    rt.block_on(h.reconcile(composition)).expect("reconcile");
    drop(lease);
    let lease = h.acquire().expect("lease");
    let t = Instant::now();
    rt.block_on(async {
        for _ in 0..short_runs {
            let r = runner
                .run(
                    lease.generation(),
                    AgentRequest {
                        agent: "bench".into(),
                        input: "go".into(),
                        run_id: None,
                        history: Vec::new(),
                    },
                )
                .await
                .expect("runs");
            assert_eq!(r.steps, 10);
        }
    });
    let per_step = t.elapsed() / (short_runs * 10);
    // The model alone, with a conversation of the same average length.
    let model = chassis::plugins::scripted::ScriptedModel::new(
        "m",
        vec![
            chassis::plugins::scripted::parse_turn(
                &json!({ "tool_calls": [{ "name": "echo", "args": { "q": "x" } }] }),
                0,
            )
            .expect("turn"),
        ],
        true,
    );
    let messages = vec![ChatMessage::text(Role::User, "go"); 4];
    let request = ModelRequest {
        messages: &messages,
        tools: &[],
        options: Default::default(),
        cancel: Default::default(),
        cursors: Default::default(),
        deltas: None,
        run_id: None,
    };
    let t = Instant::now();
    rt.block_on(async {
        for _ in 0..steps {
            std::hint::black_box(model.complete(&request).await.expect("model"));
        }
    });
    let model_alone = t.elapsed() / steps;
    let ctx = ToolCallContext::detached("bench", "gen_0001", "/");
    let t = Instant::now();
    rt.block_on(async {
        for _ in 0..steps {
            std::hint::black_box(Echo.call(json!({ "q": "x" }), &ctx).await.expect("tool"));
        }
    });
    let tool_alone = t.elapsed() / steps;
    println!(
        "| agent step, {steps}-step run (scripted model + in-process tool) | — | {} |",
        fmt(per_step_long)
    );
    println!(
        "| agent step, 10-step runs (scripted model + in-process tool) | — | {} |",
        fmt(per_step)
    );
    println!(
        "| harness overhead per agent step | — | {} |",
        fmt(per_step.saturating_sub(model_alone + tool_alone))
    );
    drop(lease);
}
