//! The MCP tool boundary against a real server (a plain bench binary,
//! medians of many calls): the round trip of `tools/call echo` to the pinned
//! `@modelcontextprotocol/server-everything` over stdio through our
//! `McpSession` alone; the same call through the `mcp` tool and its
//! supervisor; and through the whole chassis tool boundary (executor:
//! lookup, schema check, policy with a grant, budget, telemetry). All three
//! paths share one session (one server process) and alternate call by call,
//! so the server's own noise hits them alike; the differences are what
//! chassis adds on top of the MCP round trip.
//!
//! The server comes from the test install: run `cargo test --locked --test
//! it mcp_servers` once (it installs `target/test-servers/`), then
//! `cargo bench --bench mcp` (`-- --quick` for fewer calls).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chassis::engine::budget::{BudgetGovernor, BudgetLimits, ManualClock};
use chassis::engine::build::CompositionBuilder;
use chassis::engine::model::Manifest;
use chassis::engine::policy::{Grant, PolicyRules};
use chassis::engine::secret::{Redactor, SecretValue};
use chassis::engine::telemetry::RecordingTelemetry;
use chassis::engine::version::Version;
use chassis::lock::Lock;
use chassis::plugins::BuiltinEnv;
use chassis::plugins::mcp::client::McpSession;
use chassis::plugins::mcp::server::Server;
use chassis::plugins::mcp::tool::McpTool;
use chassis::runtime::{
    Catalog, ExecutorServices, Harness, HarnessOptions, PluginContext, RunContext, Tool, ToolCall,
    ToolCallContext, ToolExecutor, plugin_fn,
};
use serde_json::json;

/// The allocator of the `chassis` binary, so the figures are what users run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn everything() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| {
            if t.is_absolute() {
                t
            } else {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(t)
            }
        })
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("test-servers/npm/node_modules/.bin/mcp-server-everything")
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let ix = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[ix]
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.2} ms", us / 1_000.0)
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let calls: usize = if quick { 500 } else { 3_000 };
    let server = everything();
    if !server.exists() {
        eprintln!(
            "bench mcp: `{}` is not installed; run `cargo test --locked --test it mcp_servers` once",
            server.display()
        );
        std::process::exit(2);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = json!({
        "command": server.display().to_string(),
        "tools": { "allow": ["echo"] },
        "policy": { "echo": { "permissions": ["bench.echo:{/message}"] } },
    });
    let env = BuiltinEnv::new(".");
    let redactor = Redactor::new();
    let no_secrets =
        |name: &str| -> Result<SecretValue, String> { Err(format!("no secret {name}")) };

    // The lock, from the live server.
    let locked = rt
        .block_on(chassis::plugins::mcp::probe(
            "ev",
            &config,
            &env,
            &no_secrets,
            &redactor,
        ))
        .expect("probe server-everything");
    let mut lock = Lock::new();
    lock.entries.insert("ev".into(), locked);

    // One session, three ways of calling it.
    let spec =
        chassis::plugins::mcp::spec::server_spec("ev", &config, &env, &no_secrets, &redactor)
            .expect("spec");
    let session: Arc<dyn McpSession> = Arc::new(
        rt.block_on(chassis::plugins::mcp::rmcp_session::connect(
            &spec, &redactor,
        ))
        .expect("connect"),
    );
    let published = lock.entries["ev"].clone();
    let echo = published.tools[0].clone();
    let server = Arc::new(Server::new(
        spec,
        config.clone(),
        published,
        redactor.clone(),
        Arc::clone(&session),
    ));
    let tool = Arc::new(McpTool {
        name: echo.name.clone(),
        remote: echo.remote_name.clone(),
        description: echo.description.clone(),
        schema: echo.input_schema_json(),
        server: Arc::clone(&server),
    });
    let policy = chassis::engine::builtin::mcp::tool_policy(
        &config,
        "echo",
        echo.annotations_json().as_ref(),
    );
    let mut manifest = Manifest::new("ev", Version::parse("1.0.0").expect("v"));
    manifest.permissions = vec!["bench.echo".into()];
    let mut catalog = Catalog::new();
    {
        let tool = Arc::clone(&tool);
        catalog.register_plugin(
            "ev",
            Arc::new(plugin_fn(manifest, move |ctx: PluginContext| {
                let tool = Arc::clone(&tool);
                let policy = policy.clone();
                async move {
                    ctx.tools().register(tool, policy)?;
                    Ok(())
                }
            })),
        );
    }
    let composition = CompositionBuilder::new()
        .entry("ev")
        .plugin("ev", "1.0.0")
        .build()
        .expect("valid");
    let harness = Harness::new(catalog, HarnessOptions::default());
    rt.block_on(harness.reconcile(composition))
        .expect("reconcile");
    let lease = harness.acquire().expect("lease");
    let mut services = ExecutorServices::permissive();
    services.policy = Arc::new(PolicyRules {
        grants: vec![Grant::parse("bench.echo:*").expect("grant")],
        ..PolicyRules::default()
    });
    services.telemetry = Arc::new(RecordingTelemetry::new());
    let executor = ToolExecutor::new(services);
    let run = RunContext {
        run_id: "bench".into(),
        generation: Arc::clone(lease.generation()),
        agent: None,
        scope: "/".into(),
        budget: Some(BudgetGovernor::new(
            BudgetLimits::builder()
                .tool_calls(calls as f64 * 4.0)
                .build()
                .expect("limits"),
            Arc::new(ManualClock::new()),
        )),
        extra_tools: None,
    };
    let ctx = ToolCallContext::detached("bench", "gen_0001", "/");

    let mut direct = Vec::with_capacity(calls);
    let mut via_tool = Vec::with_capacity(calls);
    let mut boundary = Vec::with_capacity(calls);
    rt.block_on(async {
        // The first calls warm all three paths (the server's JIT, first
        // allocations) and are not counted.
        const WARM: usize = 50;
        for i in 0..WARM + calls {
            let args = json!({ "message": format!("call {i}") });
            let t = Instant::now();
            let reply = session
                .call_tool("echo", args.as_object().cloned().unwrap_or_default())
                .await
                .expect("direct");
            if i >= WARM {
                direct.push(t.elapsed());
            }
            std::hint::black_box(reply);
            let t = Instant::now();
            let out = tool.call(args.clone(), &ctx).await.expect("tool");
            if i >= WARM {
                via_tool.push(t.elapsed());
            }
            std::hint::black_box(out);
            let t = Instant::now();
            let r = executor
                .execute(
                    &run,
                    ToolCall {
                        name: "echo".into(),
                        args,
                        call_id: None,
                    },
                    true,
                )
                .await
                .expect("boundary");
            if i >= WARM {
                boundary.push(t.elapsed());
            }
            std::hint::black_box(r);
        }
    });
    let d50 = percentile(&mut direct, 0.5);
    let d90 = percentile(&mut direct, 0.9);
    let t50 = percentile(&mut via_tool, 0.5);
    let t90 = percentile(&mut via_tool, 0.9);
    let b50 = percentile(&mut boundary, 0.5);
    let b90 = percentile(&mut boundary, 0.9);
    println!("server-everything 2026.8.31 over stdio, `echo`, {calls} calls each (median / p90)");
    println!(
        "| MCP round trip (McpSession alone) | {} | {} |",
        fmt(d50),
        fmt(d90)
    );
    println!(
        "| through the `mcp` tool (supervisor, normalization) | {} | {} |",
        fmt(t50),
        fmt(t90)
    );
    println!(
        "| through the chassis tool boundary | {} | {} |",
        fmt(b50),
        fmt(b90)
    );
    println!(
        "| chassis overhead per call (boundary - round trip, medians) | {} | |",
        fmt(b50.saturating_sub(d50))
    );
    drop(lease);
    rt.block_on(server.close());
    let _ = rt.block_on(harness.shutdown());
}
