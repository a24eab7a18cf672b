//! Runtime tests: reconcile, reuse, rollback, contracts, leases, disposal.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::engine::build::CompositionBuilder as B;
use crate::engine::model::{Composition, ConfigValue};
use crate::engine::resolve::resolve;
use crate::engine::snapshot::{SnapshotContext, build_snapshot};
use crate::engine::tree::ScopeTree;

fn harness() -> Harness {
    Harness::new(
        Catalog::new(),
        HarnessOptions {
            task_timeout: std::time::Duration::from_millis(200),
            ..HarnessOptions::default()
        },
    )
}

fn flat(dsn: &str) -> Composition {
    B::new()
        .entry("postgres")
        .provides("database", &["1.4.2"])
        .config(ConfigValue::Table(
            [("dsn".to_owned(), ConfigValue::Str(dsn.into()))].into(),
        ))
        .entry("app")
        .requires("database", ">=1,<2")
        .entry("cache")
        .provides("cache", &["1.0.0"])
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_published_generation_has_the_pure_snapshot_digest() {
    let h = harness();
    let c = flat("a");
    let report = h.reconcile(c.clone()).await.unwrap();
    assert!(report.published);
    assert_eq!(report.generation_id, "gen_0001");
    let g = h.current().unwrap();
    let tree = ScopeTree::new(&c);
    let pure = build_snapshot(&c, &tree, &resolve(&c), &SnapshotContext::default()).unwrap();
    assert_eq!(
        g.digests.digest,
        pure.digest().unwrap(),
        "a fresh store's first generation is what `chassis snapshot` says"
    );
    assert_eq!(g.instances.len(), 3);
    assert_eq!(g.capabilities.len(), 2);
}

#[tokio::test]
async fn an_identical_composition_publishes_nothing() {
    let h = harness();
    h.reconcile(flat("a")).await.unwrap();
    let digest = h.current().unwrap().digests.digest.clone();
    let again = h.reconcile(flat("a")).await.unwrap();
    assert!(!again.published);
    assert_eq!(again.generation_id, "gen_0001");
    assert_eq!(again.reused().len(), 3);
    assert_eq!(h.current().unwrap().digests.digest, digest);
}

#[tokio::test]
async fn a_config_change_rebuilds_the_provider_and_rewires_its_consumer() {
    let h = harness();
    h.reconcile(flat("a")).await.unwrap();
    let report = h.reconcile(flat("b")).await.unwrap();
    assert!(report.published);
    assert_eq!(report.generation_id, "gen_0002");
    let impact = report.impact.to_vec();
    let by: std::collections::BTreeMap<&str, Decision> =
        impact.iter().map(|i| (&*i.entry_id, i.decision)).collect();
    assert_eq!(by["postgres"], Decision::Rebuilt);
    assert_eq!(by["app"], Decision::Rewired);
    assert_eq!(by["cache"], Decision::Reused);
    assert_eq!(
        report.disposed.len(),
        2,
        "old postgres and old app had no lease"
    );
}

#[tokio::test]
async fn a_lease_keeps_its_generation_and_instances_alive_until_released() {
    let h = harness();
    h.reconcile(flat("a")).await.unwrap();
    let lease = h.acquire().unwrap();
    let old_ids: Vec<String> = lease
        .generation()
        .instance_ids()
        .map(str::to_owned)
        .collect();
    let report = h.reconcile(flat("b")).await.unwrap();
    assert!(
        report.disposed.is_empty(),
        "the leased generation still reaches them"
    );
    assert_eq!(lease.generation().state(), GenerationState::Draining);
    assert_eq!(
        h.generation_pressure().metrics()["chassis.generations.draining"],
        1.0
    );
    assert_eq!(lease.generation().id.to_string(), "gen_0001");
    lease.release().unwrap();
    // The last release retires the generation and reclaims in the background.
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        if h.live_generations().len() == 1 {
            break;
        }
    }
    assert_eq!(h.live_generations().len(), 1);
    let control = h.shared.control.lock().await;
    let still: Vec<&String> = old_ids
        .iter()
        .filter(|id| control.instances.contains_key(id.as_str()))
        .collect();
    assert_eq!(
        still.len(),
        1,
        "only the reused `cache` instance survives: {still:?}"
    );
}

#[tokio::test]
async fn a_liar_fails_publication_with_a_contract_error_and_rolls_back() {
    let h = harness();
    h.reconcile(flat("a")).await.unwrap();
    let lying = B::new()
        .entry("db")
        .plugin("testing.liar", "1.0.0")
        .provides("database", &["1.0.0"])
        .config(ConfigValue::Table(
            [(
                "register".to_owned(),
                ConfigValue::Str("database@2.0.0".into()),
            )]
            .into(),
        ))
        .entry("app")
        .requires("database", ">=1,<2")
        .build()
        .unwrap();
    let err = h.reconcile(lying).await.unwrap_err();
    let ReconcileError::Contract(c) = err else {
        panic!("{err}")
    };
    assert_eq!(c.provider, "db");
    assert_eq!(c.promised, "database@1");
    assert_eq!(c.actual, ["database 2.0.0"]);
    assert_eq!(c.consumers, ["app"]);
    assert_eq!(c.rolled_back, ["db"]);
    assert_eq!(
        h.current().unwrap().id.to_string(),
        "gen_0001",
        "the current generation is untouched"
    );
}

#[tokio::test]
async fn a_failing_setup_rolls_back_the_attempt_and_can_be_retried() {
    let h = harness();
    let broken = B::new()
        .entry("a-db")
        .provides("database", &["1.0.0"])
        .entry("b-bad")
        .plugin("testing.failing-setup", "1.0.0")
        .provides("queue", &["1.0.0"])
        .build()
        .unwrap();
    let err = h.reconcile(broken).await.unwrap_err();
    let ReconcileError::Setup { error, rolled_back } = err else {
        panic!("{err}")
    };
    assert_eq!(error.entry_id, "b-bad");
    assert_eq!(rolled_back, ["a-db"]);
    assert!(h.current().is_none());
    assert!(
        h.shared.control.lock().await.instances.is_empty(),
        "nothing of the attempt is left mounted"
    );
    let fixed = B::new()
        .entry("a-db")
        .provides("database", &["1.0.0"])
        .build()
        .unwrap();
    let report = h.reconcile(fixed).await.unwrap();
    assert_eq!(report.generation_id, "gen_0001");
    let g = h.current().unwrap();
    assert_eq!(
        g.snapshot.runtime_instance_ids[0],
        Arc::<str>::from(crate::engine::identity::instance_id(
            &crate::engine::model::EntryId::new("a-db").unwrap(),
            1
        )),
        "a rolled-back attempt consumes no mount number"
    );
    // Again with a mount number to restore: `a-db` is rebuilt (its
    // configuration changed) by an attempt that fails, then by one that
    // publishes, which mounts it for the second time, not the third.
    let changed = |with_bad: bool| {
        let mut b = B::new()
            .entry("a-db")
            .provides("database", &["1.0.0"])
            .config(ConfigValue::Table(
                [("v".to_owned(), ConfigValue::Int(2))].into(),
            ));
        if with_bad {
            b = b
                .entry("b-bad")
                .plugin("testing.failing-setup", "1.0.0")
                .provides("queue", &["1.0.0"]);
        }
        b.build().unwrap()
    };
    let err = h.reconcile(changed(true)).await.unwrap_err();
    assert!(matches!(err, ReconcileError::Setup { .. }), "{err}");
    h.reconcile(changed(false)).await.unwrap();
    let second = crate::engine::identity::instance_id(
        &crate::engine::model::EntryId::new("a-db").unwrap(),
        2,
    );
    assert_eq!(
        *h.current().unwrap().snapshot.runtime_instance_ids[0],
        *second,
        "the failed attempt's mount of `a-db` was given back"
    );
}

#[tokio::test]
async fn cycles_are_refused_before_anything_mounts() {
    let h = harness();
    let c = B::new()
        .entry("a")
        .provides("x", &["1.0.0"])
        .requires("y", "")
        .entry("b")
        .provides("y", &["1.0.0"])
        .requires("x", "")
        .build()
        .unwrap();
    let err = h.reconcile(c).await.unwrap_err();
    assert_eq!(
        err,
        ReconcileError::Cycle {
            cycles: vec!["a -> b -> a".into()]
        }
    );
}

#[tokio::test]
async fn duplicate_tool_names_are_a_publication_error() {
    let h = harness();
    let c = B::new()
        .entry("one")
        .tool("search", "one", None)
        .entry("two")
        .tool("search", "two", None)
        .build()
        .unwrap();
    let err = h.reconcile(c).await.unwrap_err();
    assert!(
        matches!(err, ReconcileError::DuplicateTool { ref tool, .. } if tool == "search"),
        "{err}"
    );
}

#[tokio::test]
async fn consumers_read_the_providers_bound_for_this_composition() {
    let mut catalog = Catalog::new();
    let provider = plugin_fn(
        crate::engine::model::Manifest {
            provides: B::new()
                .entry("x")
                .provides("database", &["1.2.0"])
                .build()
                .unwrap()
                .entries
                .values()
                .next()
                .unwrap()
                .manifest
                .provides
                .clone(),
            ..crate::engine::model::Manifest::new(
                "pg",
                crate::engine::version::Version::parse("1.0.0").unwrap(),
            )
        },
        |ctx: PluginContext| async move {
            ctx.capabilities().provide(
                "database",
                CapabilityValue::new(String::from("postgres://db")),
                "1.2.0",
            )?;
            Ok(())
        },
    );
    let seen = Arc::new(std::sync::Mutex::new(None));
    let seen2 = Arc::clone(&seen);
    let consumer = plugin_fn(
        crate::engine::model::Manifest::new(
            "app",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        move |ctx: PluginContext| {
            let seen = Arc::clone(&seen2);
            async move {
                let dsn = ctx.require::<String>("database")?;
                *seen.lock().unwrap() = Some((*dsn).clone());
                assert!(ctx.get::<String>("model").is_none());
                Ok(())
            }
        },
    );
    catalog.register_plugin("pg", Arc::new(provider));
    catalog.register_plugin("app", Arc::new(consumer));
    let h = Harness::new(catalog, HarnessOptions::default());
    let c = B::new()
        .entry("pg")
        .plugin("pg", "1.0.0")
        .provides("database", &["1.2.0"])
        .entry("app")
        .plugin("app", "1.0.0")
        .requires("database", ">=1,<2")
        .build()
        .unwrap();
    h.reconcile(c).await.unwrap();
    assert_eq!(seen.lock().unwrap().as_deref(), Some("postgres://db"));
}

#[tokio::test]
async fn unloading_cancels_owned_tasks_and_runs_teardown() {
    let h = harness();
    let c = B::new()
        .entry("t")
        .plugin("testing.task", "1.0.0")
        .entry("slow")
        .plugin("testing.slow-teardown", "1.0.0")
        .config(ConfigValue::Table(
            [
                ("teardown_ms".to_owned(), ConfigValue::Int(5)),
                ("fail".to_owned(), ConfigValue::Bool(true)),
            ]
            .into(),
        ))
        .build()
        .unwrap();
    h.reconcile(c).await.unwrap();
    {
        let control = h.shared.control.lock().await;
        let live: usize = control
            .instances
            .values()
            .map(|m| m.instance.context().map_or(0, PluginContext::live_effects))
            .sum();
        assert_eq!(live, 1, "the task is an owned effect");
    }
    let failures = h.shutdown().await;
    assert_eq!(
        failures.len(),
        1,
        "the failing teardown is reported: {failures:?}"
    );
    assert!(failures[0].description.contains("teardown"));
    assert!(h.acquire().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_each_see_exactly_one_complete_generation() {
    let h = harness();
    h.reconcile(flat("v0")).await.unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let observed = Arc::new(AtomicUsize::new(0));
    let mut runs = Vec::new();
    for _ in 0..8 {
        let h = h.clone();
        let stop = Arc::clone(&stop);
        let observed = Arc::clone(&observed);
        runs.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let lease = h.acquire().unwrap();
                let g = lease.generation();
                // A complete generation: every instance it lists provides
                // what its manifest promises, and its snapshot names them.
                assert_eq!(g.instances.len(), 3);
                assert_eq!(g.snapshot.runtime_instance_ids.len(), 3);
                assert_eq!(g.snapshot.generation_id, g.id.to_string());
                observed.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
                drop(lease);
            }
        }));
    }
    for i in 1..=20 {
        h.reconcile(flat(&format!("v{i}"))).await.unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    for r in runs {
        r.await.unwrap();
    }
    assert!(observed.load(Ordering::SeqCst) > 0);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let control = h.shared.control.lock().await;
    drop(control);
    let pressure = h.generation_pressure();
    assert_eq!(
        pressure.metrics()["chassis.generations.leases"],
        0.0,
        "every lease was released"
    );
}

#[tokio::test]
async fn testing_kinds_and_static_results_are_reachable_from_toml() {
    let text = r#"
version = 1

[plugins.liar]
version = "1.0.0"
provides = { database = "1.0.0" }
kind = "testing.liar"

[plugins.app]
version = "1.0.0"
requires = { database = ">=1,<2" }

[entries.db]
plugin = "liar"

[entries.app]
"#;
    let loaded = crate::load::load_str("liar.toml", text);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let err = harness()
        .reconcile(loaded.composition.unwrap())
        .await
        .unwrap_err();
    let ReconcileError::Contract(c) = err else {
        panic!("{err}")
    };
    assert_eq!(
        (c.provider.as_str(), c.promised.as_str()),
        ("db", "database@1")
    );

    let typo = crate::load::load_str(
        "typo.toml",
        "version = 1\n[plugins.x]\nversion = \"1.0.0\"\nkind = \"testing.lair\"\n",
    );
    let d = &typo.diagnostics[0];
    assert_eq!(d.code, crate::engine::diag::Code::UnknownPlugin);
    assert!(
        d.help.iter().any(|h| h.contains("testing.liar")),
        "{:?}",
        d.help
    );

    let answering = r#"
version = 1
[plugins.toolbox]
version = "1.0.0"
[[plugins.toolbox.tools]]
name = "ping"
description = "Answers pong."
result = { pong = true }
[entries.toolbox]
"#;
    let h = harness();
    h.reconcile(
        crate::load::load_str("t.toml", answering)
            .composition
            .unwrap(),
    )
    .await
    .unwrap();
    let lease = h.acquire().unwrap();
    let run = RunContext {
        run_id: "r".into(),
        generation: Arc::clone(lease.generation()),
        agent: None,
        scope: "/".into(),
        budget: None,
        extra_tools: None,
    };
    let out = ToolExecutor::new(ExecutorServices::permissive())
        .execute(
            &run,
            ToolCall {
                name: "ping".into(),
                args: serde_json::json!({}),
                call_id: None,
            },
            false,
        )
        .await
        .unwrap();
    assert_eq!(out.content, serde_json::json!({ "pong": true }));
}

#[tokio::test]
async fn control_plane_hooks_and_signals_fire_at_their_boundaries() {
    use crate::engine::telemetry::RecordingTelemetry;
    let seen = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let s = Arc::clone(&seen);
    let observer = plugin_fn(
        crate::engine::model::Manifest::new(
            "observer",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        move |ctx: PluginContext| {
            let s = Arc::clone(&s);
            async move {
                for event in HookEvent::ALL
                    .iter()
                    .copied()
                    .filter(|e| e.plane() == hooks::Plane::Control)
                {
                    let s = Arc::clone(&s);
                    ctx.hooks().register(
                        event,
                        Arc::new(FnHook(move |e: HookEvent, _: &serde_json::Value| {
                            s.lock().unwrap().insert(e.as_str());
                            Ok(HookReply::Continue)
                        })),
                        HookMode::Observe,
                        0,
                    )?;
                }
                Ok(())
            }
        },
    );
    let mut catalog = Catalog::new();
    catalog.register_plugin("observer", Arc::new(observer));
    let telemetry = Arc::new(RecordingTelemetry::strict());
    let options = HarnessOptions {
        telemetry: Arc::clone(&telemetry) as Arc<dyn crate::engine::telemetry::Telemetry>,
        ..HarnessOptions::default()
    };
    let h = Harness::new(catalog, options);
    let with = |dsn: &str| {
        B::new()
            .entry("observer")
            .plugin("observer", "1.0.0")
            .entry("db")
            .provides("database", &["1.0.0"])
            .config(ConfigValue::Table(
                [("dsn".to_owned(), ConfigValue::Str(dsn.into()))].into(),
            ))
            .build()
            .unwrap()
    };
    h.reconcile(with("a")).await.unwrap();
    let lease = h.acquire().unwrap();
    h.reconcile(with("b")).await.unwrap();
    drop(lease);
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    h.shutdown().await;
    let fired = seen.lock().unwrap().clone();
    let control: std::collections::BTreeSet<&str> = HookEvent::ALL
        .iter()
        .filter(|e| e.plane() == hooks::Plane::Control)
        .map(|e| e.as_str())
        .collect();
    assert_eq!(
        fired, control,
        "every control-plane event fired at its boundary"
    );
    let names: std::collections::BTreeSet<String> = telemetry
        .records()
        .iter()
        .map(|r| match r {
            crate::engine::telemetry::Record::Event { name, .. } => name.clone(),
            crate::engine::telemetry::Record::SpanStart { name, .. } => name.clone(),
            other => format!("{other:?}")
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_owned(),
        })
        .collect();
    for expected in [
        "harness.reconcile",
        "harness.shutdown",
        "plugin.mount",
        "plugin.unmount",
        "dependency.resolve",
        "generation.build",
        "generation.publish",
        "generation.acquire",
        "generation.release",
        "generation.draining",
        "generation.retired",
        "generation.impact",
    ] {
        assert!(names.contains(expected), "missing {expected}: {names:?}");
    }
    assert!(
        telemetry.violations().is_empty(),
        "{:?}",
        telemetry.violations()
    );
}

#[tokio::test]
async fn the_composition_policy_gates_tools_and_permissions_must_be_declared() {
    let text = r#"
version = 1

[plugins.fs]
version = "1.0.0"
permissions = ["filesystem.read"]
[[plugins.fs.tools]]
name = "read_file"
description = "Read a file."
args = { type = "object", required = ["path"], properties = { path = { type = "string" } } }
result = "contents"

[entries.fs]

[policy]
grants = ["filesystem.read:/workspace/**"]
deny = ["filesystem.read:/workspace/secrets/**"]

[policy.tools.read_file]
permissions = ["filesystem.read:{/path}"]
"#;
    let loaded = crate::load::load_str("policy.toml", text);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let h = harness();
    h.reconcile(loaded.composition.unwrap()).await.unwrap();
    let lease = h.acquire().unwrap();
    let g = Arc::clone(lease.generation());
    assert_eq!(
        g.tools["read_file"].policy.permissions,
        ["filesystem.read:{/path}"],
        "the override replaced the policy"
    );
    let ex = ToolExecutor::new(ExecutorServices::permissive().with_generation_policy(&g));
    let run = RunContext {
        run_id: "r".into(),
        generation: g,
        agent: None,
        scope: "/".into(),
        budget: None,
        extra_tools: None,
    };
    let call = |path: &str| ToolCall {
        name: "read_file".into(),
        args: serde_json::json!({ "path": path }),
        call_id: None,
    };
    assert_eq!(
        ex.execute(&run, call("/workspace/notes.md"), false)
            .await
            .unwrap()
            .content,
        serde_json::json!("contents")
    );
    for refused in [
        "/workspace/secrets/key",
        "/workspace/../etc/passwd",
        "/etc/passwd",
    ] {
        assert!(
            matches!(
                ex.execute(&run, call(refused), false).await,
                Err(ExecError::Refused(ToolRefusal::PolicyDenied { .. }))
            ),
            "{refused}"
        );
    }

    let undeclared = text.replace("permissions = [\"filesystem.read\"]\n[[", "[[");
    let loaded = crate::load::load_str("undeclared.toml", &undeclared);
    let err = harness()
        .reconcile(loaded.composition.unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ReconcileError::UndeclaredPermission { ref tool, .. } if tool == "read_file"),
        "{err}"
    );

    let bad = crate::load::load_str(
        "bad.toml",
        "version = 1\n[policy]\ngrants = [\"Filesystem.read:/x\"]\n",
    );
    assert_eq!(
        bad.diagnostics[0].code,
        crate::engine::diag::Code::BadPermission,
        "{:?}",
        bad.diagnostics
    );
}

#[tokio::test]
async fn a_tool_promised_by_name_and_not_registered_breaks_the_contract() {
    use crate::engine::model::{EntryId, Manifest, ToolName};
    let mut catalog = Catalog::new();
    let quiet = plugin_fn(
        Manifest::new(
            "quiet",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        |_ctx: PluginContext| async move { Ok(()) },
    );
    catalog.register_plugin("quiet", Arc::new(quiet));
    let h = Harness::new(catalog, HarnessOptions::default());
    let mut c = B::new()
        .entry("q")
        .plugin("quiet", "1.0.0")
        .build()
        .unwrap();
    let entry = c.entries.get_mut(&EntryId::new("q").unwrap()).unwrap();
    let mut manifest = (*entry.manifest).clone();
    manifest.expected_tools = vec![ToolName::new("search").unwrap()];
    entry.manifest = Arc::new(manifest);
    let err = h.reconcile(c).await.unwrap_err();
    let ReconcileError::Contract(broken) = err else {
        panic!("{err}")
    };
    assert_eq!(broken.promised, "tool `search`");
    assert_eq!(
        broken.promise,
        "promised tool `search` (expect_tools) but did not register it"
    );
    assert_eq!(broken.rolled_back, ["q"]);
    assert!(h.current().is_none(), "nothing was published");
}

#[tokio::test]
async fn a_plugin_reports_a_tool_set_change_to_the_harness_owner() {
    use crate::engine::model::Manifest;
    let mut catalog = Catalog::new();
    let reporting = plugin_fn(
        Manifest::new(
            "upstream",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        |ctx: PluginContext| async move {
            let reporter = ctx.tool_set_reporter();
            ctx.create_task("announce", async move {
                reporter.report("changed its tool list", vec!["+ extra".into()], None);
                Ok(())
            })?;
            Ok(())
        },
    );
    catalog.register_plugin("upstream", Arc::new(reporting));
    let h = Harness::new(catalog, HarnessOptions::default());
    let mut changes = h.tool_set_changes();
    let c = B::new()
        .entry("u")
        .plugin("upstream", "1.0.0")
        .build()
        .unwrap();
    h.reconcile(c).await.unwrap();
    let change = tokio::time::timeout(std::time::Duration::from_secs(5), changes.recv())
        .await
        .expect("reported")
        .unwrap();
    let generation = h.current().unwrap();
    assert_eq!(change.entry_id, "u");
    assert_eq!(change.changes, ["+ extra"]);
    assert!(
        generation
            .instances
            .iter()
            .any(|i| *i.instance_id == *change.instance_id),
        "the report names the instance of the current generation"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn an_instance_down_for_good_is_rebuilt_by_the_next_reconcile() {
    // A process plugin down after its restarts tells the user a new
    // generation brings it back: the same composition must then mount a
    // fresh instance, not keep the dead one. A passing `Unhealthy` (a
    // crash being restarted) keeps it.
    use crate::engine::model::Manifest;
    let mut catalog = Catalog::new();
    let mounts = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&mounts);
    let sick = plugin_fn(
        Manifest::new(
            "sick",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        move |ctx: PluginContext| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 => ctx.health_reporter().down(),
                    _ => ctx.health_reporter().report(Health::Unhealthy),
                }
                Ok(())
            }
        },
    );
    catalog.register_plugin("sick", Arc::new(sick));
    let h = Harness::new(catalog, HarnessOptions::default());
    let c = B::new()
        .entry("s")
        .plugin("sick", "1.0.0")
        .entry("fine")
        .build()
        .unwrap();
    h.reconcile(c.clone()).await.unwrap();
    let report = h.reconcile(c.clone()).await.unwrap();
    assert!(report.published, "{report:?}");
    assert_eq!(mounts.load(Ordering::SeqCst), 2);
    let s = report.impact.iter().find(|i| &*i.entry_id == "s").unwrap();
    assert_eq!(s.reasons, ["instance_down"], "{s:?}");
    assert_ne!(s.old_instance_id, s.new_instance_id);
    assert_eq!(
        report.reused().iter().map(|e| &**e).collect::<Vec<_>>(),
        ["fine"]
    );
    // Unhealthy for now, not down: the next reconcile of the same
    // composition is a no-op.
    let again = h.reconcile(c).await.unwrap();
    assert!(!again.published, "{again:?}");
    assert_eq!(mounts.load(Ordering::SeqCst), 2);
    h.shutdown().await;
}

/// A secret provider whose one value can be changed between reconciles.
struct Rotating(std::sync::Mutex<String>);

impl crate::engine::secret::SecretProvider for Rotating {
    fn get(
        &self,
        _name: &str,
    ) -> Result<crate::engine::secret::SecretValue, crate::engine::secret::SecretError> {
        Ok(crate::engine::secret::SecretValue::new(
            self.0.lock().unwrap().clone(),
        ))
    }
}

fn shortcuts(h: &Harness) -> u64 {
    h.shared.shortcuts.load(Ordering::SeqCst)
}

/// A provider and a consumer that each read a secret, an entry without one,
/// and a pending entry.
fn with_secret_dsn() -> Composition {
    let secret = |name: &str| {
        ConfigValue::Table(
            [(
                "dsn".to_owned(),
                ConfigValue::Secret(crate::engine::model::SecretRef { name: name.into() }),
            )]
            .into(),
        )
    };
    B::new()
        .entry("postgres")
        .provides("database", &["1.4.2"])
        .config(secret("DB_DSN"))
        .entry("app")
        .requires("database", ">=1,<2")
        .config(secret("APP_TOKEN"))
        .entry("cache")
        .provides("cache", &["1.0.0"])
        .entry("orphan")
        .requires("nothing", ">=1")
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_identical_composition_with_a_rotated_secret_rebuilds_what_reads_it() {
    let secrets = Arc::new(Rotating(std::sync::Mutex::new("postgres://one".into())));
    let h = Harness::new(
        Catalog::new(),
        HarnessOptions {
            secrets: secrets.clone(),
            ..HarnessOptions::default()
        },
    );
    let first = h.reconcile(with_secret_dsn()).await.unwrap();
    assert_eq!(first.pending, ["orphan"]);
    let same = h.reconcile(with_secret_dsn()).await.unwrap();
    assert!(!same.published, "same composition, same secret value");
    assert_eq!(same.pending, ["orphan"]);
    assert_eq!(shortcuts(&h), 1, "answered by the no-op shortcut");
    *secrets.0.lock().unwrap() = "postgres://two".into();
    let rotated = h.reconcile(with_secret_dsn()).await.unwrap();
    assert_eq!(shortcuts(&h), 1, "a rotated value is not a no-op");
    assert!(
        rotated.published,
        "the composition is identical, the value is not"
    );
    let impact = rotated.impact.to_vec();
    let by: std::collections::BTreeMap<&str, Decision> =
        impact.iter().map(|i| (&*i.entry_id, i.decision)).collect();
    assert_eq!(by["postgres"], Decision::Rebuilt);
    assert_eq!(by["app"], Decision::Rebuilt);
    assert_eq!(by["cache"], Decision::Reused);
    assert!(!by.contains_key("orphan"));
}

#[tokio::test]
async fn the_no_op_shortcut_reports_what_placing_every_entry_reports() {
    for composition in [flat("a"), with_secret_dsn()] {
        let h = Harness::new(
            Catalog::new(),
            HarnessOptions {
                secrets: Arc::new(Rotating(std::sync::Mutex::new("value-one".into()))),
                ..HarnessOptions::default()
            },
        );
        h.reconcile(composition.clone()).await.unwrap();
        let fast = h.reconcile(composition.clone()).await.unwrap();
        assert_eq!(shortcuts(&h), 1);
        h.shared.always_place.store(true, Ordering::SeqCst);
        let placed = h.reconcile(composition.clone()).await.unwrap();
        assert_eq!(shortcuts(&h), 1, "the second no-op placed every entry");
        assert!(!fast.published);
        assert_eq!(fast, placed);
    }
}

#[tokio::test]
async fn a_no_op_reports_every_node_reused_as_placing_them_would() {
    let h = harness();
    let first = h.reconcile(flat("a")).await.unwrap();
    let again = h.reconcile(flat("a")).await.unwrap();
    assert!(!again.published);
    assert!(again.mounted.is_empty() && again.disposed.is_empty());
    assert_eq!(
        again.reused(),
        ["app".into(), "cache".into(), "postgres".into()]
    );
    let json = serde_json::to_value(&again).unwrap();
    assert_eq!(
        json["reused"],
        serde_json::json!(["app", "cache", "postgres"])
    );
    assert_eq!(json["impact"].as_array().map(Vec::len), Some(3));
    let expected: Vec<NodeImpact> = first
        .impact
        .iter()
        .map(|i| NodeImpact {
            entry_id: i.entry_id.clone(),
            decision: Decision::Reused,
            reasons: vec![],
            old_instance_id: i.new_instance_id.clone(),
            new_instance_id: i.new_instance_id.clone(),
        })
        .collect();
    assert_eq!(again.impact.to_vec(), expected);
    assert_eq!(again.impact.count(Decision::Reused), 3);
    // After a configuration change and back, the no-op still holds for the
    // instances now current.
    h.reconcile(flat("b")).await.unwrap();
    let back = h.reconcile(flat("a")).await.unwrap();
    assert!(back.published);
    let still = h.reconcile(flat("a")).await.unwrap();
    assert!(!still.published);
    assert_eq!(still.generation_id, back.generation_id);
    let ids = |r: &ReconcileReport| -> Vec<Option<Arc<str>>> {
        r.impact.iter().map(|i| i.new_instance_id.clone()).collect()
    };
    assert_eq!(ids(&still), ids(&back));
    assert_eq!(still.impact.len(), 3);
}

#[tokio::test]
async fn a_configuration_change_keeps_the_plan_and_matches_a_fresh_build() {
    let h = harness();
    h.reconcile(flat("a")).await.unwrap();
    let before = h.current().unwrap();
    let report = h.reconcile(flat("b")).await.unwrap();
    assert!(report.published);
    let after = h.current().unwrap();
    assert!(
        Arc::ptr_eq(&before.plan, &after.plan) && Arc::ptr_eq(&before.tree, &after.tree),
        "only configurations changed: the resolution is shared"
    );
    let c = flat("b");
    let tree = ScopeTree::new(&c);
    let fresh = build_snapshot(&c, &tree, &resolve(&c), &SnapshotContext::default()).unwrap();
    assert_eq!(
        after.digests.semantic_digest,
        fresh.semantic_digest().unwrap()
    );
    assert_eq!(*after.plan, resolve(&c));
    // A change beyond configurations resolves afresh.
    let moved = B::new()
        .entry("postgres")
        .provides("database", &["1.4.2"])
        .entry("app")
        .requires("database", ">=1,<2")
        .build()
        .unwrap();
    h.reconcile(moved.clone()).await.unwrap();
    let third = h.current().unwrap();
    assert!(!Arc::ptr_eq(&after.plan, &third.plan));
    assert_eq!(*third.plan, resolve(&moved));
}

#[tokio::test]
async fn a_failing_policy_provider_is_never_skipped_into_the_default() {
    let with = |capability: &str| {
        let mut c = B::new()
            .entry("a-db")
            .provides("database", &["1.0.0"])
            .entry("guard")
            .plugin("testing.failing-setup", "1.0.0")
            .provides(capability, &["1.0.0"])
            .build()
            .unwrap();
        c.skip_on_failure
            .insert(crate::engine::model::EntryId::new("guard").unwrap());
        c
    };
    // An ordinary provider is quarantined and the rest publishes...
    let h = harness();
    let report = h.reconcile(with("queue")).await.unwrap();
    assert!(report.published);
    assert_eq!(report.quarantined.len(), 1);
    // ...a policy (or secrets) provider is not: its scopes would fall back
    // to the more permissive default.
    for system in ["policy", "secrets"] {
        let h = harness();
        let err = h.reconcile(with(system)).await.unwrap_err();
        assert!(
            matches!(&err, ReconcileError::Setup { error, .. } if error.entry_id == "guard"),
            "{system}: {err}"
        );
        assert!(h.current().is_none(), "{system}: nothing published");
    }
}

/// Scopes, two providers of one capability, a chain across scopes, a
/// tool-registering entry, a hook-registering entry and a secret reference;
/// `v[i]` is the configuration of the i-th of `db-b`, `svc`, `web`,
/// `searcher`, `hooked`.
fn incremental_case(v: [i64; 5]) -> Composition {
    let config = |v: i64| ConfigValue::Table([("v".to_owned(), ConfigValue::Int(v))].into());
    B::new()
        .scope("/team", None)
        .entry("db-a")
        .provides("database", &["1.0.0"])
        .entry("db-b")
        .provides("database", &["1.0.0"])
        .provides("cache", &["1.0.0"])
        .config(config(v[0]))
        .entry("svc")
        .in_scope("/team")
        .requires("database", ">=1,<2")
        .prefer("database", "db-b")
        .provides("api", &["1.0.0"])
        .config(config(v[1]))
        .entry("web")
        .in_scope("/team")
        .requires("api", ">=1")
        .optional("cache", "")
        .config(config(v[2]))
        .entry("searcher")
        .tool("search", "search things", None)
        .config(config(v[3]))
        .entry("hooked")
        .plugin("hooked", "1.0.0")
        .config(config(v[4]))
        .entry("reader")
        .in_scope("/team")
        .requires("cache", "")
        .config(ConfigValue::Table(
            [(
                "token".to_owned(),
                ConfigValue::Secret(crate::engine::model::SecretRef {
                    name: "TOKEN".into(),
                }),
            )]
            .into(),
        ))
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_incremental_reconcile_reports_what_placing_every_entry_reports() {
    let make = || {
        let hooked = plugin_fn(
            crate::engine::model::Manifest::new(
                "hooked",
                crate::engine::version::Version::parse("1.0.0").unwrap(),
            ),
            |ctx: PluginContext| async move {
                ctx.hooks().register(
                    HookEvent::BeforeToolExecute,
                    Arc::new(FnHook(|_: HookEvent, _: &serde_json::Value| {
                        Ok(HookReply::Continue)
                    })),
                    HookMode::Observe,
                    0,
                )?;
                Ok(())
            },
        );
        let mut catalog = Catalog::new();
        catalog.register_plugin("hooked", Arc::new(hooked));
        let secrets = Arc::new(Rotating(std::sync::Mutex::new("one".into())));
        let h = Harness::new(
            catalog,
            HarnessOptions {
                secrets: secrets.clone(),
                ..HarnessOptions::default()
            },
        );
        (h, secrets)
    };
    let ((fast, fast_secrets), (full, full_secrets)) = (make(), make());
    full.shared.always_place.store(true, Ordering::SeqCst);
    let derived = |h: &Harness| h.shared.derived.load(Ordering::SeqCst);
    let steps = [
        [1, 1, 1, 1, 1],
        [2, 1, 1, 1, 1], // a provider: its consumers, transitively, follow
        [2, 1, 2, 1, 1], // a leaf
        [2, 1, 2, 2, 1], // a tool's entry
        [2, 1, 2, 2, 2], // a hook's entry: the hook order is rebuilt
        [1, 2, 1, 1, 1], // several at once, one back to its first value
        [1, 2, 1, 1, 1], // nothing
        [1, 3, 1, 1, 1], // after a secret rotated (below)
    ];
    for (i, step) in steps.into_iter().enumerate() {
        if i == 7 {
            *fast_secrets.0.lock().unwrap() = "two".into();
            *full_secrets.0.lock().unwrap() = "two".into();
        }
        let a = fast.reconcile(incremental_case(step)).await.unwrap();
        let b = full.reconcile(incremental_case(step)).await.unwrap();
        assert_eq!(a, b, "step {i}");
        let (ga, gb) = (fast.current().unwrap(), full.current().unwrap());
        assert_eq!(ga.digests, gb.digests, "step {i}");
        assert_eq!(ga.snapshot, gb.snapshot, "step {i}");
        assert!(a.pending.is_empty(), "step {i}: {:?}", a.pending);
        let impact = a.impact.to_vec();
        let rebuilt: Vec<&str> = impact
            .iter()
            .filter(|n| n.decision != Decision::Reused)
            .map(|n| &*n.entry_id)
            .collect();
        match i {
            1 => assert_eq!(rebuilt, ["db-b", "reader", "svc", "web"]),
            7 => assert_eq!(rebuilt, ["reader", "svc", "web"], "the rotated secret"),
            _ => {}
        }
    }
    // Steps 1, 2, 3 and 7 derived their generation; 4 and 5 (a hook's
    // entry mounted again) built it; the full harness never derives.
    assert_eq!((derived(&fast), derived(&full)), (4, 0));
}

#[tokio::test]
async fn a_tool_moving_between_remounted_entries_stays_in_the_derived_generation() {
    use crate::engine::model::Manifest;
    let named = plugin_fn(
        Manifest::new(
            "named",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        |ctx: PluginContext| async move {
            if let ConfigValue::Table(t) = ctx.config()
                && let Some(ConfigValue::Str(name)) = t.get("tool")
                && !name.is_empty()
            {
                ctx.tools().register(
                    Arc::new(crate::runtime::tool::DeclaredTool {
                        name: name.clone(),
                        description: "d".into(),
                        args_schema: None,
                        result: Some(serde_json::json!("r")),
                    }),
                    crate::engine::policy::ToolPolicy::default(),
                )?;
            }
            Ok(())
        },
    );
    let mut catalog = Catalog::new();
    catalog.register_plugin("named", Arc::new(named));
    let h = Harness::new(catalog, HarnessOptions::default());
    let make = |a: &str, b: &str| {
        let cfg =
            |t: &str| ConfigValue::Table([("tool".to_owned(), ConfigValue::Str(t.into()))].into());
        B::new()
            .entry("a")
            .plugin("named", "1.0.0")
            .config(cfg(a))
            .entry("b")
            .plugin("named", "1.0.0")
            .config(cfg(b))
            .build()
            .unwrap()
    };
    h.reconcile(make("", "fetch")).await.unwrap();
    // `fetch` moves from b to a (a comes first in the activation order).
    h.reconcile(make("fetch", "")).await.unwrap();
    let g = h.current().unwrap();
    assert_eq!(g.tools.get("fetch").map(|t| t.owner.as_str()), Some("a"));
    assert_eq!(h.shared.derived.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_cancelled_reconcile_leaves_nothing_behind_after_the_next_publication() {
    use crate::engine::model::Manifest;
    let slow = plugin_fn(
        Manifest::new(
            "slow",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        |ctx: PluginContext| async move {
            let m = ctx.manifest().clone();
            crate::runtime::declared::provide_declared(&ctx, &m)?;
            if matches!(ctx.config(), ConfigValue::Table(t) if t.get("block") == Some(&ConfigValue::Bool(true)))
            {
                tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
            }
            Ok(())
        },
    );
    let mut catalog = Catalog::new();
    catalog.register_plugin("slow", Arc::new(slow));
    let h = Harness::new(catalog, HarnessOptions::default());
    let make = |v: i64, block: bool| {
        B::new()
            .entry("a")
            .plugin("slow", "1.0.0")
            .provides("database", &["1.0.0"])
            .config(ConfigValue::Table(
                [("v".to_owned(), ConfigValue::Int(v))].into(),
            ))
            .entry("b")
            .plugin("slow", "1.0.0")
            .requires("database", ">=1")
            .config(ConfigValue::Table(
                [("block".to_owned(), ConfigValue::Bool(block))].into(),
            ))
            .build()
            .unwrap()
    };
    h.reconcile(make(1, false)).await.unwrap();
    // `a` is mounted again, then `b` hangs in setup and the caller gives up.
    assert!(
        tokio::time::timeout(
            std::time::Duration::from_millis(200),
            h.reconcile(make(2, true))
        )
        .await
        .is_err()
    );
    assert!(h.reconcile(make(3, false)).await.unwrap().published);
    let control = h.shared.control.lock().await;
    let current: Vec<&Arc<str>> = control.current_by_entry.values().collect();
    let leaked: Vec<&Arc<str>> = control
        .instances
        .keys()
        .filter(|i| !current.contains(i))
        .collect();
    assert!(leaked.is_empty(), "never disposed: {leaked:?}");
}

/// A composition as a file would give it: `pad` comment lines above the
/// text move every declaration without changing what it says (a disabled
/// entry and a guide example included: both keep where they were written).
fn loaded(pad: usize, dsn: &str) -> Composition {
    let text = format!(
        "{}version = 1\n\n[plugins.postgres]\nversion = \"1.4.2\"\nprovides = {{ database = \"1.4.2\" }}\n\n\
         [plugins.app]\nversion = \"1.0.0\"\nrequires = {{ database = \">=1,<2\" }}\n\
         agent = {{ examples = [{{ tool = \"lookup\", description = \"d\" }}] }}\n\
         [[plugins.app.tools]]\nname = \"lookup\"\ndescription = \"Look up.\"\nresult = \"r\"\n\n\
         [entries.postgres]\nconfig = {{ dsn = \"{dsn}\" }}\n\n[entries.app]\n\n\
         [entries.old]\nplugin = \"postgres\"\nenabled = false\n",
        "# moved down\n".repeat(pad)
    );
    crate::load::load_str("composition.toml", &text)
        .composition
        .expect("loads")
}

#[tokio::test]
async fn a_reload_that_only_moved_declarations_changes_nothing() {
    let h = harness();
    let c = loaded(0, "a");
    assert!(c.disabled.contains_key("old"));
    let guide = c.entries["app"].manifest.guide.as_ref().expect("a guide");
    assert_eq!(guide.example_origins.len(), 1);
    h.reconcile(c).await.unwrap();
    let first = h.current().unwrap();
    let report = h.reconcile(loaded(3, "a")).await.unwrap();
    let g = h.current().unwrap();
    assert_eq!(g.id, first.id, "no new generation: {report:?}");
    assert_eq!(h.shared.shortcuts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_config_edit_that_moved_declarations_is_derived_and_points_at_the_new_text() {
    let h = harness();
    h.reconcile(loaded(0, "a")).await.unwrap();
    let desired = loaded(3, "postgres://elsewhere");
    h.reconcile(desired.clone()).await.unwrap();
    assert_eq!(h.shared.derived.load(Ordering::SeqCst), 1, "incremental");
    let g = h.current().unwrap();
    let expected = resolve(&desired);
    assert_eq!(*g.plan, expected);
    // `==` ignores origins: compare them directly.
    let origins = |p: &crate::engine::resolve::Plan| -> Vec<_> {
        p.resolutions.iter().map(|r| r.requirement.origin).collect()
    };
    assert_eq!(origins(&g.plan), origins(&expected));
    assert!(origins(&expected).iter().all(Option::is_some));
}

#[tokio::test]
async fn incremental_reconciles_share_one_selecting_index() {
    let h = harness();
    h.reconcile(loaded(0, "a")).await.unwrap();
    // The first incremental reconcile builds the current generation's
    // index and hands it on; the next one uses and hands on the same.
    h.reconcile(loaded(0, "b")).await.unwrap();
    let second = h.current().unwrap();
    let index = Arc::clone(second.selecting_index_if_built().expect("handed on"));
    h.reconcile(loaded(0, "c")).await.unwrap();
    let third = h.current().unwrap();
    assert_eq!(
        h.shared.derived.load(Ordering::SeqCst),
        2,
        "both incremental"
    );
    assert!(Arc::ptr_eq(&third.plan, &second.plan));
    let handed = third.selecting_index_if_built().expect("handed on");
    assert!(Arc::ptr_eq(handed, &index));
    assert_eq!(
        **handed,
        crate::runtime::generation::selecting_index(&third.plan)
    );
    assert!(!handed.is_empty());
}

#[tokio::test]
async fn a_panicking_setup_fails_its_mount_and_the_harness_goes_on() {
    use crate::engine::model::Manifest;
    let mut catalog = Catalog::new();
    let panicking = plugin_fn(
        Manifest::new(
            "boom",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        |_ctx: PluginContext| async move {
            if std::hint::black_box(true) {
                panic!("setup blew up");
            }
            Ok(())
        },
    );
    catalog.register_plugin("boom", Arc::new(panicking));
    let h = Harness::new(catalog, HarnessOptions::default());
    let with_boom = B::new()
        .entry("b")
        .plugin("boom", "1.0.0")
        .entry("cache")
        .provides("cache", &["1.0.0"])
        .build()
        .unwrap();
    let err = h.reconcile(with_boom).await.unwrap_err().to_string();
    assert!(err.contains("setup panicked"), "{err}");
    assert!(h.current().is_none(), "nothing was published");
    // The harness is whole: the same composition without the plugin
    // publishes.
    let without = B::new()
        .entry("cache")
        .provides("cache", &["1.0.0"])
        .build()
        .unwrap();
    let report = h.reconcile(without).await.unwrap();
    assert!(report.published);
}

/// A plugin `observer` that records `"<event> <entry id>"` for each of
/// `events` it observes, and provides `audit`.
fn observer(events: &'static [HookEvent]) -> (FnPlugin, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let observer = plugin_fn(
        crate::engine::model::Manifest::new(
            "observer",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        move |ctx: PluginContext| {
            let s = Arc::clone(&s);
            async move {
                for event in events {
                    let s = Arc::clone(&s);
                    ctx.hooks().register(
                        *event,
                        Arc::new(FnHook(move |e: HookEvent, p: &serde_json::Value| {
                            s.lock().unwrap().push(format!(
                                "{} {}",
                                e.as_str(),
                                p["entry_id"].as_str().unwrap_or("")
                            ));
                            Ok(HookReply::Continue)
                        })),
                        HookMode::Observe,
                        0,
                    )?;
                }
                ctx.capabilities()
                    .provide("audit", CapabilityValue::unit(), "1.0.0")?;
                Ok(())
            }
        },
    );
    (observer, seen)
}

/// `cache` and `db`, the `observer` (it requires `db`), then `a` and `b`,
/// consumers of the observer's `audit`: mounted in that order.
fn observed_composition() -> Composition {
    B::new()
        .entry("cache")
        .provides("cache", &["1.0.0"])
        .entry("db")
        .provides("database", &["1.0.0"])
        .entry("observer")
        .plugin("observer", "1.0.0")
        .requires("database", ">=1,<2")
        .provides("audit", &["1.0.0"])
        .entry("a")
        .requires("audit", ">=1,<2")
        .entry("b")
        .requires("audit", ">=1,<2")
        .build()
        .unwrap()
}

/// Shutdown unmounts newest first; an instance that registered hooks sees
/// the unmounts of the instances mounted after it, and none once it is
/// gone itself.
#[tokio::test]
async fn shutdown_unmounts_newest_first_under_the_hooks_still_live() {
    let (observer, seen) = observer(&[HookEvent::PluginUnmounting, HookEvent::PluginUnmounted]);
    let mut catalog = Catalog::new();
    catalog.register_plugin("observer", Arc::new(observer));
    let telemetry = Arc::new(crate::engine::telemetry::RecordingTelemetry::strict());
    let h = Harness::new(
        catalog,
        HarnessOptions {
            telemetry: Arc::clone(&telemetry) as Arc<dyn crate::engine::telemetry::Telemetry>,
            ..HarnessOptions::default()
        },
    );
    // Mounted in activation order: db, then the observer (it requires
    // db), then the consumers of the observer's capability.
    let composition = observed_composition();
    let report = h.reconcile(composition).await.unwrap();
    let order: Vec<&str> = report.mounted.iter().map(|e| &**e).collect();
    assert_eq!(order, ["cache", "db", "observer", "a", "b"]);
    assert!(h.shutdown().await.is_empty());
    let after_observer: Vec<&str> = order
        .iter()
        .copied()
        .skip_while(|e| *e != "observer")
        .skip(1)
        .collect();
    let expected: Vec<String> = after_observer
        .iter()
        .rev()
        .flat_map(|e| {
            [
                format!("plugin_unmounting {e}"),
                format!("plugin_unmounted {e}"),
            ]
        })
        .collect();
    assert!(!expected.is_empty(), "{order:?}");
    assert_eq!(*seen.lock().unwrap(), expected);
    // Every instance was unmounted, newest first.
    let unmounted: Vec<String> = telemetry
        .records()
        .iter()
        .filter(|r| r.name() == "plugin.unmount")
        .filter(|r| matches!(r, crate::engine::telemetry::Record::SpanStart { .. }))
        .map(|r| format!("{:?}", r.attrs().get("entry_id")))
        .collect();
    let newest_first: Vec<String> = order
        .iter()
        .rev()
        .map(|e| format!("{:?}", Some(&crate::engine::telemetry::AttrValue::from(*e))))
        .collect();
    assert_eq!(unmounted, newest_first);
}

/// A harness of `catalog` that only publishes, or one that also runs.
fn publishing(catalog: Catalog, publish_only: bool) -> Harness {
    Harness::new(
        catalog,
        HarnessOptions {
            publish_only,
            ..HarnessOptions::default()
        },
    )
}

/// `flat` with declared tools, and an `app` entry of a registered kind
/// (so it must be mounted) bound to the declared `postgres`: it records the
/// version it was bound to.
fn with_a_mounted_consumer() -> (Catalog, Composition, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let app = plugin_fn(
        crate::engine::model::Manifest::new(
            "app",
            crate::engine::version::Version::parse("1.0.0").unwrap(),
        ),
        move |ctx: PluginContext| {
            let seen = Arc::clone(&seen2);
            async move {
                let bound = ctx.binding("database").expect("bound");
                seen.lock()
                    .unwrap()
                    .push(format!("{} {}", bound.provider, bound.version));
                Ok(())
            }
        },
    );
    let mut catalog = Catalog::new();
    catalog.register_plugin("app", Arc::new(app));
    let c = B::new()
        .entry("postgres")
        .provides("database", &["1.4.2"])
        .tool("query", "Runs a query.", None)
        .tool("explain", "Explains a query.", None)
        .entry("app")
        .plugin("app", "1.0.0")
        .requires("database", ">=1,<2")
        .entry("cache")
        .provides("cache", &["1.0.0"])
        .build()
        .unwrap();
    (catalog, c, seen)
}

/// What a generation holds apart from live instances, comparable.
fn published_shape(g: &Generation) -> String {
    let instances: Vec<_> = g
        .instances
        .iter()
        .map(|i| (&*i.entry_id, &*i.instance_id, &*i.plugin))
        .collect();
    let capabilities: Vec<_> = g
        .capabilities
        .iter()
        .map(|(c, ps)| {
            let ps: Vec<_> = ps
                .iter()
                .map(|p| {
                    (
                        &*p.entry_id,
                        &*p.instance_id,
                        p.registration.version.to_string(),
                    )
                })
                .collect();
            (c.to_string(), ps)
        })
        .collect();
    let tools: Vec<_> = g
        .tools
        .values()
        .map(|t| (&t.id, &t.owner, t.tool.name(), format!("{:?}", t.policy)))
        .collect();
    format!(
        "{} {:?} {instances:?} {capabilities:?} {tools:?}",
        g.id, g.digests
    )
}

#[tokio::test]
async fn a_publish_only_harness_mounts_only_what_has_a_setup_and_publishes_the_same_generation() {
    let (catalog, c, seen) = with_a_mounted_consumer();
    let full = publishing(catalog.clone(), false);
    let lean = publishing(catalog, true);
    let a = full.reconcile(c.clone()).await.unwrap();
    let b = lean.reconcile(c.clone()).await.unwrap();
    assert_eq!(a.mounted.len(), 3);
    let mounted: Vec<&str> = b.mounted.iter().map(|e| &**e).collect();
    assert_eq!(mounted, ["app"], "only the entry with a setup of its own");
    assert_eq!(a.impact, b.impact);
    assert_eq!(
        published_shape(&full.current().unwrap()),
        published_shape(&lean.current().unwrap())
    );
    assert_eq!(full.nodes().await, lean.nodes().await);
    // The consumer was bound to the unmounted provider as to a mounted one.
    assert_eq!(*seen.lock().unwrap(), ["postgres 1.4.2", "postgres 1.4.2"]);
    // Seeded with what it published, the same composition is adopted, and
    // a change to the unmounted provider rebuilds it and rewires `app`.
    let seed = super::harness::SeedState {
        sequence: 1,
        digest: Some(lean.current().unwrap().digests.digest.clone()),
        mounts: lean
            .nodes()
            .await
            .iter()
            .map(|n| (n.entry_id.clone(), n.mount))
            .collect(),
        nodes: lean.nodes().await,
        config_fingerprint: None,
    };
    for publish_only in [false, true] {
        let h = publishing(with_a_mounted_consumer().0, publish_only);
        h.seed(seed.clone()).await.unwrap();
        let again = h.reconcile(c.clone()).await.unwrap();
        assert!(!again.published && again.generation_id == "gen_0001");
        assert!(again.impact.iter().all(|i| i.decision == Decision::Reused));
    }
    let mut changed = c.clone();
    let pg = crate::engine::model::EntryId::new("postgres").unwrap();
    changed.entries.get_mut(&pg).unwrap().config = Arc::new(ConfigValue::Table(
        [("dsn".to_owned(), ConfigValue::Str("b".into()))].into(),
    ));
    let mut reports = Vec::new();
    let mut shapes = Vec::new();
    for publish_only in [false, true] {
        let h = publishing(with_a_mounted_consumer().0, publish_only);
        h.seed(seed.clone()).await.unwrap();
        reports.push(h.reconcile(changed.clone()).await.unwrap());
        shapes.push(published_shape(&h.current().unwrap()));
        h.shutdown().await;
    }
    assert_eq!(reports[0].impact, reports[1].impact);
    assert_eq!(shapes[0], shapes[1]);
    let decisions: Vec<(String, Decision)> = reports[1]
        .impact
        .iter()
        .map(|i| (i.entry_id.to_string(), i.decision))
        .collect();
    assert_eq!(
        decisions,
        [
            ("app".to_owned(), Decision::Rewired),
            ("cache".to_owned(), Decision::Reused),
            ("postgres".to_owned(), Decision::Rebuilt)
        ]
    );
}

#[tokio::test]
async fn an_unmounted_entry_still_breaks_its_contract_and_its_tools_still_collide() {
    use crate::engine::model::{EntryId, ToolName};
    let h = publishing(Catalog::new(), true);
    let mut c = flat("a");
    let entry = c.entries.get_mut(&EntryId::new("cache").unwrap()).unwrap();
    let mut manifest = (*entry.manifest).clone();
    manifest.expected_tools = vec![ToolName::new("search").unwrap()];
    entry.manifest = Arc::new(manifest);
    let err = h.reconcile(c).await.unwrap_err();
    let ReconcileError::Contract(broken) = err else {
        panic!("{err}")
    };
    assert_eq!(
        broken.promise,
        "promised tool `search` (expect_tools) but did not register it"
    );
    assert!(h.current().is_none(), "nothing was published");
    let c = B::new()
        .entry("a")
        .tool("search", "Searches.", None)
        .entry("b")
        .tool("search", "Searches too.", None)
        .build()
        .unwrap();
    let err = publishing(Catalog::new(), true)
        .reconcile(c)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ReconcileError::DuplicateTool { tool, owners, .. } if tool == "search" && owners == &["a", "b"]),
        "{err}"
    );
}

#[tokio::test]
async fn the_declared_kind_registers_what_it_says_it_would_without_a_mount() {
    let (_, c, _) = with_a_mounted_consumer();
    let h = harness();
    h.reconcile(c.clone()).await.unwrap();
    let control = h.shared.control.lock().await;
    for entry in ["postgres", "cache"] {
        let id = crate::engine::model::EntryId::new(entry).unwrap();
        let iid = &control.current_by_entry[entry];
        assert!(control.instances.contains_key(iid), "{entry} is mounted");
        let mounted = control.registrations(iid).unwrap();
        let pure = super::declared::declared_registrations(entry, &c.entries[&id].manifest);
        assert_eq!(format!("{mounted:?}"), format!("{pure:?}"));
    }
}

#[tokio::test]
async fn live_hooks_see_every_mount_and_unmount_a_publish_only_harness_would_skip() {
    // The observer watches every mount and unmount from its own on; it
    // requires `db` and provides what `a` and `b` require.
    let observed = |publish_only: bool| async move {
        let (observer, seen) = observer(&[
            HookEvent::PluginMounting,
            HookEvent::PluginMounted,
            HookEvent::PluginUnmounting,
            HookEvent::PluginUnmounted,
        ]);
        let mut catalog = Catalog::new();
        catalog.register_plugin("observer", Arc::new(observer));
        let h = publishing(catalog, publish_only);
        let composition = observed_composition();
        let report = h.reconcile(composition).await.unwrap();
        assert!(h.shutdown().await.is_empty());
        let mounted: Vec<String> = report.mounted.iter().map(ToString::to_string).collect();
        let seen = seen.lock().unwrap().clone();
        (mounted, seen)
    };
    let (all, seen_all) = observed(false).await;
    let (some, seen_some) = observed(true).await;
    assert_eq!(all, ["cache", "db", "observer", "a", "b"]);
    // Mounted before any hook was live: nothing would have seen them.
    assert_eq!(some, ["observer", "a", "b"]);
    assert_eq!(seen_all, seen_some);
    assert!(
        seen_some.contains(&"plugin_mounted a".to_owned()),
        "{seen_some:?}"
    );
}
