//! Per-scope `policy` and `secrets` providers at the tool boundary.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::engine::model::Entry;
use crate::engine::policy::ToolPolicy;
use crate::engine::secret::{MapEnv, Redactor, SecretProvider, StaticSecretProvider};
use crate::engine::telemetry::{AttrValue, RecordingTelemetry};

/// `read_secret {name}` answers the length of the secret its context
/// resolves (or fails with the secret error).
struct ReadSecret;

#[async_trait::async_trait]
impl Tool for ReadSecret {
    fn name(&self) -> &str {
        "read_secret"
    }
    fn description(&self) -> &str {
        "Read a secret."
    }
    async fn call(&self, args: Value, ctx: &ToolCallContext) -> Result<ToolOutput, BoxError> {
        let name = args["name"].as_str().unwrap_or_default();
        let value = ctx.secrets.get(name)?;
        Ok(ToolOutput::content(
            json!({ "length": value.reveal().len() }),
        ))
    }
}

/// `read_ledger` needs `ledger.read`.
struct ReadLedger;

#[async_trait::async_trait]
impl Tool for ReadLedger {
    fn name(&self) -> &str {
        "read_ledger"
    }
    fn description(&self) -> &str {
        "Read the ledger."
    }
    async fn call(&self, _args: Value, _ctx: &ToolCallContext) -> Result<ToolOutput, BoxError> {
        Ok(ToolOutput::content("ledger"))
    }
}

const BASE: &str = r#"
version = 1

[scopes."/finance"]
[scopes."/finance/reports"]
[scopes."/finance/sandbox"]
capabilities = ["model"]
[scopes."/support"]

[plugins.tools]
version = "1.0.0"
permissions = ["ledger.read"]
[[plugins.tools.tools]]
name = "read_ledger"
description = "Read the ledger."
[[plugins.tools.tools]]
name = "read_secret"
description = "Read a secret."

[entries.tools]

[entries.finance-policy]
plugin = "policy"
scope = "/finance"
config = { grants = ["ledger.read"] }

[entries.finance-secrets]
plugin = "secrets.env"
scope = "/finance"
config = { prefix = "FINANCE_", aliases = { "db.password" = "FIN_DB_PW" } }

[policy]
grants = ["network.fetch"]
"#;

struct Fixture {
    generation: Arc<Generation>,
    executor: ToolExecutor,
    telemetry: Arc<RecordingTelemetry>,
    redactor: Redactor,
    _harness: Harness,
}

async fn fixture(extra: &str) -> Fixture {
    let text = format!("{BASE}{extra}");
    let loaded = crate::load::load_str("system.toml", &text);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let redactor = Redactor::new();
    let env = MapEnv(
        [
            ("FIN_DB_PW", "finance-db-password-1"),
            ("FINANCE_API_KEY", "finance-api-key-22"),
            ("DB_PASSWORD", "root-db-password-333"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    );
    let mut catalog = Catalog::new();
    crate::plugins::register_builtins(
        &mut catalog,
        &crate::plugins::BuiltinEnv::new(".")
            .with_redactor(redactor.clone())
            .with_env(Arc::new(env)),
    );
    catalog.register(
        "tools",
        Arc::new(|entry: &Entry| {
            let plugin = plugin_fn((*entry.manifest).clone(), |ctx: PluginContext| async move {
                ctx.tools()
                    .register(Arc::new(ReadSecret), ToolPolicy::default())?;
                let ledger = ToolPolicy {
                    permissions: vec!["ledger.read".into()],
                    ..ToolPolicy::default()
                };
                ctx.tools().register(Arc::new(ReadLedger), ledger)?;
                Ok(())
            });
            Ok(Arc::new(plugin) as Arc<dyn Plugin>)
        }),
    );
    let harness = Harness::new(catalog, HarnessOptions::default());
    harness
        .reconcile(loaded.composition.expect("composition"))
        .await
        .expect("publishes");
    let generation = Arc::clone(harness.acquire().expect("lease").generation());
    let telemetry = Arc::new(RecordingTelemetry::new());
    let services = ExecutorServices {
        telemetry: Arc::clone(&telemetry) as _,
        redactor: redactor.clone(),
        secrets: Arc::new(
            StaticSecretProvider::new().with("db.password", "default-db-password-4444"),
        ),
        ..ExecutorServices::permissive()
    }
    .with_generation_policy(&generation);
    Fixture {
        generation,
        executor: ToolExecutor::new(services),
        telemetry,
        redactor,
        _harness: harness,
    }
}

impl Fixture {
    async fn call(&self, scope: &str, tool: &str, args: Value) -> Result<ToolResult, ExecError> {
        let run = RunContext {
            run_id: "run_1".into(),
            generation: Arc::clone(&self.generation),
            agent: None,
            scope: scope.into(),
            budget: None,
            extra_tools: None,
        };
        let call = ToolCall {
            name: tool.into(),
            args,
            call_id: None,
        };
        self.executor.execute(&run, call, false).await
    }

    /// The reason `read_ledger` is refused from `scope`, `None` if allowed.
    async fn ledger_refusal(&self, scope: &str) -> Option<String> {
        match self.call(scope, "read_ledger", json!({})).await {
            Ok(r) => {
                assert_eq!(r.content, json!("ledger"));
                None
            }
            Err(ExecError::Refused(ToolRefusal::PolicyDenied { reason, .. })) => Some(reason),
            Err(e) => panic!("{e}"),
        }
    }

    /// What `read_secret {name}` answers from `scope`: the length, or the
    /// error.
    async fn secret(&self, scope: &str, name: &str) -> Result<u64, String> {
        let r = self
            .call(scope, "read_secret", json!({ "name": name }))
            .await
            .expect("runs");
        match r.status {
            ToolStatus::Ok => Ok(r.content["length"].as_u64().expect("length")),
            _ => Err(r.error.expect("error")),
        }
    }
}

#[tokio::test]
async fn a_scope_policy_governs_its_subtree_and_a_sibling_keeps_the_default() {
    let f = fixture("").await;
    assert_eq!(f.ledger_refusal("/finance").await, None);
    assert_eq!(f.ledger_refusal("/finance/reports").await, None);
    // The reference leaks a scope's policy to its siblings; chassis does not.
    for scope in ["/support", "/"] {
        assert_eq!(
            f.ledger_refusal(scope).await.as_deref(),
            Some("no grant covers `ledger.read`"),
            "{scope}"
        );
    }
}

#[tokio::test]
async fn a_capability_view_hiding_policy_fails_closed_instead_of_widening() {
    let f = fixture("").await;
    let refusal = f.ledger_refusal("/finance/sandbox").await.expect("refused");
    assert!(
        refusal.starts_with("policy resolution failed for scope /finance/sandbox: a capability view hides finance-policy"),
        "{refusal}"
    );
    let err = f
        .secret("/finance/sandbox", "db.password")
        .await
        .expect_err("not the process environment");
    assert!(err.contains("hides finance-secrets"), "{err}");
}

#[tokio::test]
async fn two_visible_policies_fail_closed_until_a_preference_chooses() {
    let other = r#"
[entries.other-policy]
plugin = "policy"
config = { grants = ["ledger.read"] }
"#;
    let f = fixture(other).await;
    let expected = "policy resolution failed for scope /finance: ambiguous between finance-policy, other-policy (name one in the scope's `prefer` or in `[prefer]`)";
    assert_eq!(
        f.ledger_refusal("/finance").await.as_deref(),
        Some(expected)
    );
    assert!(f.ledger_refusal("/finance/reports").await.is_some());
    // The decision went through the normal signal.
    let decisions = f.telemetry.events();
    assert!(
        decisions.iter().any(|(name, attrs)| {
            name == "policy.decision"
                && attrs.get("reason") == Some(&AttrValue::from(expected))
                && attrs.get("allowed") == Some(&AttrValue::from(false))
        }),
        "{decisions:?}"
    );
    // Only the root's is visible from a sibling.
    assert_eq!(f.ledger_refusal("/support").await, None);

    let f = fixture(&format!("{other}\n[prefer]\npolicy = \"finance-policy\"\n")).await;
    assert_eq!(f.ledger_refusal("/finance").await, None);
}

#[tokio::test]
async fn a_policy_value_that_is_not_an_engine_fails_closed() {
    let fake = r#"
[plugins.fake-policy]
version = "1.0.0"
provides = { policy = "1.0.0" }

[entries.fake-policy]
scope = "/support"
"#;
    let f = fixture(fake).await;
    assert_eq!(
        f.ledger_refusal("/support").await.as_deref(),
        Some(
            "policy resolution failed for scope /support: the value fake-policy provides is not a policy engine"
        )
    );
    // A permission-free tool still runs; the other scopes are unaffected.
    assert!(f.secret("/support", "db.password").await.is_ok());
    assert_eq!(f.ledger_refusal("/finance").await, None);
}

#[tokio::test]
async fn tools_read_their_scopes_secrets_and_the_redactor_learns_them() {
    let f = fixture("").await;
    assert_eq!(
        f.redactor.redact("finance-db-password-1"),
        "finance-db-password-1"
    );
    // The alias, then the prefix mapping.
    assert_eq!(f.secret("/finance", "db.password").await, Ok(21));
    assert_eq!(f.secret("/finance/reports", "api.key").await, Ok(18));
    assert_eq!(
        f.redactor
            .redact("x finance-db-password-1 finance-api-key-22"),
        "x <redacted> <redacted>"
    );
    // A sibling keeps the default provider, which the redactor learns too.
    assert_eq!(f.secret("/support", "db.password").await, Ok(24));
    assert_eq!(f.redactor.redact("default-db-password-4444"), "<redacted>");
    let missing = f.secret("/finance", "nope").await.expect_err("unset");
    assert!(
        missing.contains("environment variable `FINANCE_NOPE`"),
        "{missing}"
    );
}

#[tokio::test]
async fn ambiguous_secrets_fail_every_lookup() {
    let f = fixture(
        r#"
[entries.more-secrets]
plugin = "secrets.env"
scope = "/finance/reports"
"#,
    )
    .await;
    assert_eq!(f.secret("/finance", "db.password").await, Ok(21));
    let err = f
        .secret("/finance/reports", "db.password")
        .await
        .expect_err("fails closed");
    assert!(
        err.contains(
            "secret `db.password` cannot be resolved: secrets resolution failed for scope /finance/reports: ambiguous between finance-secrets, more-secrets"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn the_system_of_a_scope_is_bound_once() {
    let f = fixture("").await;
    let a = f.generation.system("/finance").policy.expect("governed");
    let b = f.generation.system("/finance").policy.expect("governed");
    assert!(Arc::ptr_eq(&a, &b));
    assert!(f.generation.system("/support").policy.is_none());
    // A scope outside the tree fails closed.
    let unknown = f.generation.system("/nowhere");
    let decision = unknown
        .policy
        .expect("stand-in")
        .evaluate(&crate::engine::policy::PolicyRequest::for_tool(
            "t",
            crate::engine::policy::Permission::parse("ledger.read").expect("permission"),
        ))
        .expect("decides");
    assert!(!decision.allowed);
    assert!(decision.reason.contains("/nowhere"), "{}", decision.reason);
}
