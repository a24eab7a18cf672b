//! Capabilities across processes: a provider's methods, called by its
//! consumers through chassis.
//!
//! Why it exists: a process plugin provides a capability by registering
//! its key, version, an optional JSON value and the methods it exposes;
//! chassis wraps that in a [`ProcessCapability`], the value consumers are
//! bound to. A consumer (another process plugin) calls
//! `capability/invoke {key, method, arguments}`; chassis — never the
//! processes themselves — checks that the key is a requirement bound for
//! that consumer, that the method exists, that the arguments are valid
//! against the method's schema, and that every permission the method needs
//! is declared by the consumer's manifest (fail closed), then forwards the
//! call to the provider's process with a deadline (30 s by default). The
//! two processes never see each other.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::calls::{CallScope, InFlight};
use super::protocol::{InvokeParams, InvokeResult, MethodDecl, ProviderInvokeParams, code, method};
use super::rpc::{Handler, RpcError};
use super::supervise::Supervisor;
use crate::engine::args_schema::ArgsSchema;
use crate::engine::policy::PolicyEngine;
use crate::engine::secret::Redactor;

/// How long an invoke may take when nothing says otherwise.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// One method, its argument schema (and result schema, when it declares
/// one) compiled.
pub struct Method {
    /// The declaration.
    pub decl: MethodDecl,
    schema: ArgsSchema,
    result: Option<ArgsSchema>,
}

/// The value a process plugin's capability binds its consumers to.
pub struct ProcessCapability {
    /// The capability key.
    pub key: String,
    /// The JSON value it registered.
    pub value: Option<Value>,
    /// Its methods, by name.
    pub methods: BTreeMap<String, Method>,
    /// The provider's process.
    pub provider: Arc<Supervisor>,
    /// The provider's calls in flight: an invoke made inside a tool call
    /// enters that call here, for what the provider invokes in turn.
    pub provider_calls: Arc<InFlight>,
}

impl std::fmt::Debug for ProcessCapability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessCapability")
            .field("key", &self.key)
            .field("methods", &self.methods.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ProcessCapability {
    /// The capability `key` of `provider`, its method schemas compiled.
    pub fn new(
        key: &str,
        value: Option<Value>,
        methods: &[MethodDecl],
        provider: Arc<Supervisor>,
        provider_calls: Arc<InFlight>,
    ) -> Result<Self, String> {
        let mut compiled = BTreeMap::new();
        for m in methods {
            let schema = crate::engine::args_schema::compile(&m.input_schema)
                .map_err(|e| format!("method `{}` of `{key}`: its input_schema: {e}", m.name))?
                .schema;
            let result = m
                .result_schema
                .as_ref()
                .map(|r| {
                    crate::engine::args_schema::compile(r)
                        .map(|c| c.schema)
                        .map_err(|e| {
                            format!("method `{}` of `{key}`: its result_schema: {e}", m.name)
                        })
                })
                .transpose()?;
            if compiled
                .insert(
                    m.name.clone(),
                    Method {
                        decl: m.clone(),
                        schema,
                        result,
                    },
                )
                .is_some()
            {
                return Err(format!(
                    "method `{}` of `{key}` is registered twice",
                    m.name
                ));
            }
        }
        Ok(Self {
            key: key.to_owned(),
            value,
            methods: compiled,
            provider,
            provider_calls,
        })
    }
}

/// A provider a consumer may call.
pub enum Bound {
    /// A process plugin's capability, with its methods.
    Process(Arc<ProcessCapability>),
    /// A model (any provider): its one method is `chat`.
    Model(Arc<crate::runtime::model::ModelHandle>),
}

/// Whether `declared` (a manifest's `name[:resource]` permissions) covers
/// `needed`: the same permission, or its name without a resource.
fn declares(declared: &[String], needed: &str) -> bool {
    let name = needed.split_once(':').map_or(needed, |(n, _)| n);
    declared.iter().any(|d| d == needed || d == name)
}

/// What a consumer's handler knows: who it is, what it may reach, and its
/// tool calls in flight.
struct Consumer {
    entry: String,
    bound: BTreeMap<String, Bound>,
    permissions: Vec<String>,
    calls: Arc<InFlight>,
    redactor: Redactor,
    /// What judges its invokes made outside any tool call.
    outside_run: Arc<dyn PolicyEngine>,
}

type Refused = (i64, String);

/// The handler of a consumer's requests: `capability/invoke` over the
/// providers bound to it, under its manifest's permissions — and, when the
/// invoke names a tool call in flight, under that call's run — else under
/// `outside_run` (the plugin context's
/// [`crate::runtime::PluginContext::outside_run_policy`]). What goes back
/// to the consumer (an answer, an error quoting one) passes `redactor`: a
/// secret a provider's configuration referenced does not reach a consumer
/// that did not, as with shared state.
pub fn consumer_handler(
    entry: String,
    bound: BTreeMap<String, Bound>,
    permissions: Vec<String>,
    calls: Arc<InFlight>,
    redactor: Redactor,
    outside_run: Arc<dyn PolicyEngine>,
) -> Handler {
    let consumer = Arc::new(Consumer {
        entry,
        bound,
        permissions,
        calls,
        redactor,
        outside_run,
    });
    Arc::new(move |m: String, params: Value| {
        let consumer = Arc::clone(&consumer);
        Box::pin(async move {
            if m != method::CAPABILITY_INVOKE {
                return Err((
                    code::METHOD_NOT_FOUND,
                    format!("chassis has no method `{m}`"),
                ));
            }
            let p: InvokeParams = serde_json::from_value(params)
                .map_err(|e| (code::INVALID_PARAMS, format!("capability/invoke: {e}")))?;
            match consumer.invoke(p).await {
                Ok(answer) => Ok(consumer.redactor.redact_foreign(&answer)),
                Err((code, message)) => {
                    Err((code, consumer.redactor.redact(&message).into_owned()))
                }
            }
        })
    })
}

impl Consumer {
    async fn invoke(&self, p: InvokeParams) -> Result<Value, Refused> {
        let entry = &self.entry;
        let call = match &p.call_id {
            Some(token) => Some(self.calls.get(token).ok_or_else(|| {
                (
                    code::INVALID_PARAMS,
                    format!(
                        "`call_id` `{token}` is not a tool call of `{entry}` in flight (pass the `call_id` of the `tools/call` being handled, or none outside a call)"
                    ),
                )
            })?),
            None => None,
        };
        // Inside a call: its deadline (the run's included), else 30 s.
        if let Some(c) = &call
            && let Some(Err(e)) = c.reach.budget.as_ref().map(|b| b.check_deadline())
        {
            c.exhausted(e.clone());
            return Err((
                code::BUDGET_EXHAUSTED,
                format!("the run is out of time: {e}"),
            ));
        }
        let deadline = call
            .as_ref()
            .and_then(|c| c.reach.time_left())
            .unwrap_or(DEFAULT_DEADLINE);
        let bound_to = self.bound.get(&p.key).ok_or_else(|| {
            (
                code::INVALID_PARAMS,
                format!(
                    "`{}` is not a requirement of `{entry}` bound to a process plugin or a model; requirements with methods: [{}]",
                    p.key,
                    self.bound.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
        })?;
        let cap = match bound_to {
            Bound::Process(cap) => cap,
            Bound::Model(model) => {
                if p.method != super::model::CHAT {
                    return Err((
                        code::INVALID_PARAMS,
                        format!("`{}` is a model; its one method is `chat`", p.key),
                    ));
                }
                return chat(model, p.arguments, call.as_deref(), deadline).await;
            }
        };
        let method = cap.methods.get(&p.method).ok_or_else(|| {
            (
                code::INVALID_PARAMS,
                format!(
                    "`{}` has no method `{}`; its methods: [{}]",
                    p.key,
                    p.method,
                    cap.methods.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
        })?;
        let args = if p.arguments.is_null() {
            Value::Object(serde_json::Map::new())
        } else {
            p.arguments
        };
        let violations = method.schema.violations(&args);
        if !violations.is_empty() {
            let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
            return Err((
                code::INVALID_PARAMS,
                format!("`{}.{}`: {}", p.key, p.method, list.join("; ")),
            ));
        }
        let missing: Vec<&String> = method
            .decl
            .permissions
            .iter()
            .filter(|n| !declares(&self.permissions, n))
            .collect();
        if !missing.is_empty() {
            return Err((
                code::PERMISSION_DENIED,
                format!(
                    "`{}.{}` needs {}, which the manifest of `{entry}` does not declare in `permissions`",
                    p.key,
                    p.method,
                    missing
                        .iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        // The policy decides each permission too: inside a run its scope's,
        // outside one the composition's (`outside_run`). An invoke cannot
        // stop to ask a person, so needing approval refuses.
        {
            let via = format!("{}.{}", p.key, p.method);
            for permission in &method.decl.permissions {
                let decision = match &call {
                    Some(c) => c.reach.decide(permission, &via),
                    None => crate::runtime::tool::decide_permission(
                        self.outside_run.as_ref(),
                        &via,
                        permission,
                        &[("owner", entry), ("via", &via)],
                    ),
                };
                if !decision.allowed || decision.approval_required {
                    let whose = if call.is_some() {
                        "the policy of the run's scope"
                    } else {
                        "the composition's policy (this call is made outside any run)"
                    };
                    let why = if decision.allowed {
                        "needs approval, which a capability call cannot ask for".to_owned()
                    } else {
                        format!("is denied by {whose}: {}", decision.reason)
                    };
                    return Err((
                        code::PERMISSION_DENIED,
                        format!("`{via}` needs `{permission}`, which {why}"),
                    ));
                }
            }
        }
        // A provider restarting gets the call's deadline, no more.
        let started = tokio::time::Instant::now();
        let conn = tokio::time::timeout(deadline, cap.provider.connection(None))
            .await
            .map_err(|_| {
                (
                    code::PROVIDER_UNAVAILABLE,
                    format!(
                        "the provider of `{}` ({}) did not come back within {:.1}s",
                        p.key,
                        cap.provider.entry(),
                        deadline.as_secs_f64()
                    ),
                )
            })?
            .map_err(|e| (code::PROVIDER_UNAVAILABLE, e))?;
        let left = deadline.saturating_sub(started.elapsed());
        // The provider's token for this call, while it answers.
        let entered = call
            .as_ref()
            .map(|c| cap.provider_calls.enter_scope(Arc::clone(c)));
        let forward = ProviderInvokeParams {
            key: p.key.clone(),
            method: p.method.clone(),
            arguments: args,
            caller: entry.clone(),
            deadline_ms: u64::try_from(left.as_millis()).unwrap_or(u64::MAX),
            run_id: call.as_ref().map(|c| c.run_id.clone()),
            call_id: entered.as_ref().map(|e| e.token.clone()),
            meta: call.as_ref().map(|c| {
                super::protocol::RequestMeta::in_run(
                    &c.run_id,
                    &format!("invoke:{entry}:{}.{}", p.key, p.method),
                )
            }),
        };
        let reply = conn
            .request(
                method::CAPABILITY_INVOKE,
                serde_json::to_value(forward).unwrap_or(Value::Null),
                Some(left),
                call.as_ref().map(|c| &c.cancel),
            )
            .await
            .map_err(|e| match e {
                RpcError::Remote { code, message } => (code, message),
                RpcError::Closed(reason) => (
                    code::PROVIDER_UNAVAILABLE,
                    format!(
                        "the provider of `{}`: {}",
                        p.key,
                        cap.provider.gone(&conn, method::CAPABILITY_INVOKE, &reason)
                    ),
                ),
                other => (
                    code::PROVIDER_UNAVAILABLE,
                    format!(
                        "the provider of `{}` ({}): {other}",
                        p.key,
                        cap.provider.entry()
                    ),
                ),
            })?;
        let result: InvokeResult = serde_json::from_value(reply).map_err(|e| {
            (
                code::INTERNAL_ERROR,
                format!(
                    "the provider of `{}` answered with the wrong shape: {e}",
                    p.key
                ),
            )
        })?;
        // What the provider promised to answer is what the consumer gets.
        if let Some(schema) = &method.result {
            let violations = schema.violations(&result.result);
            if !violations.is_empty() {
                let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                return Err((
                    code::INTERNAL_ERROR,
                    format!(
                        "the provider of `{}` ({}) answered `{}.{}` against its result_schema: {}",
                        p.key,
                        cap.provider.entry(),
                        p.key,
                        p.method,
                        list.join("; ")
                    ),
                ));
            }
        }
        Ok(serde_json::to_value(result).unwrap_or(Value::Null))
    }
}

/// `chat` on a bound model; inside a tool call, one more model call and
/// its tokens are charged to the run's budget (checked before, recorded
/// after, as the agent loop does), and the call's cancellation stops it.
async fn chat(
    model: &crate::runtime::model::ModelHandle,
    arguments: Value,
    call: Option<&CallScope>,
    deadline: Duration,
) -> Result<Value, Refused> {
    use crate::engine::budget::{BudgetDimension, BudgetError, Usage};
    let budget = call.and_then(|c| c.reach.budget.as_ref());
    let refuse = |e: BudgetError| -> Refused {
        if let (BudgetError::Exceeded(x), Some(c)) = (&e, call) {
            c.exhausted(x.clone());
        }
        (
            code::BUDGET_EXHAUSTED,
            format!("the run's budget refuses the model call: {e}"),
        )
    };
    if let Some(b) = budget {
        b.check(BudgetDimension::ModelCalls, 1.0).map_err(refuse)?;
    }
    // The chat's own signal: its timeout must not cancel the tool call it
    // was made in, while the call's cancellation stops the chat.
    let cancel = crate::runtime::Cancellation::new();
    let run_id = call.map(|c| c.run_id.as_str());
    let chatting = super::model::chat(model, arguments, deadline, &cancel, run_id);
    let answer = match call {
        Some(c) => tokio::select! {
            answer = chatting => answer,
            () = c.cancel.cancelled() => {
                cancel.cancel();
                Err("the tool call was cancelled".to_owned())
            }
        },
        None => chatting.await,
    }
    .map_err(|e| (code::PROVIDER_UNAVAILABLE, e))?;
    if let Some(b) = budget {
        let usage = answer.usage.unwrap_or_default();
        // A cost that is not a finite, non-negative number is not charged
        // (the call and its tokens still are).
        let cost = answer
            .estimated_cost
            .filter(|c| c.is_finite() && *c >= 0.0)
            .unwrap_or(0.0);
        // The call happened: it is charged even when its tokens cannot be
        // counted exactly (then they are not, and the answer is refused),
        // so `model_calls` still bounds a plugin that calls again.
        let Some(tokens) = usage.counted_total() else {
            b.spend(Usage {
                model_calls: 1.0,
                ..Usage::default()
            })
            .map_err(refuse)?;
            return Err((
                code::PROVIDER_UNAVAILABLE,
                format!(
                    "the model reported a usage that cannot be counted: {} input and {} output tokens are more than {} together; the call is charged, its tokens are not",
                    usage.input_tokens,
                    usage.output_tokens,
                    crate::runtime::model::Usage::MAX_COUNTED
                ),
            ));
        };
        b.spend(Usage {
            model_calls: 1.0,
            tokens: tokens as f64,
            estimated_cost: cost,
            tool_calls: None,
        })
        .map_err(refuse)?;
    }
    let result = serde_json::to_value(answer).unwrap_or(Value::Null);
    Ok(serde_json::to_value(InvokeResult { result }).unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_invoke_naming_no_call_in_flight_is_refused_before_anything_runs() {
        let calls = Arc::new(InFlight::default());
        let handler = consumer_handler(
            "e".into(),
            BTreeMap::new(),
            Vec::new(),
            calls,
            Redactor::new(),
            Arc::new(crate::engine::policy::DenyAll),
        );
        let refused = handler(
            method::CAPABILITY_INVOKE.to_owned(),
            serde_json::json!({"key": "database", "method": "insert", "call_id": "call-9"}),
        )
        .await
        .unwrap_err();
        assert_eq!(refused.0, code::INVALID_PARAMS);
        assert!(
            refused
                .1
                .contains("`call-9` is not a tool call of `e` in flight"),
            "{}",
            refused.1
        );
    }

    #[test]
    fn a_permission_is_declared_exactly_or_by_its_name() {
        let declared = vec!["database.query".to_owned(), "fs.read:/tmp".to_owned()];
        assert!(declares(&declared, "database.query"));
        assert!(declares(&declared, "database.query:users"));
        assert!(declares(&declared, "fs.read:/tmp"));
        assert!(!declares(&declared, "fs.read:/etc"));
        assert!(!declares(&declared, "database.write"));
    }
}
