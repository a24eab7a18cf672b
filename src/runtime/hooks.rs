//! Hooks: handlers registered by plugins for the thirteen harness events.
//!
//! Ordering is priority (ascending), then registration order. Payloads are
//! JSON values that handlers only read: a transform returns a whole new
//! payload. Data-plane events (tools, agent runs, policy decisions) are
//! dispatched against a run's generation; control-plane events (plugin
//! lifecycle, generations) against the live set, where `raise` degrades to
//! `record` so a failing observer never aborts a transition.

use std::sync::Arc;

use serde_json::Value;

use super::scope::BoxError;

macro_rules! events {
    ($($variant:ident => $text:literal, $plane:ident, $refusable:literal;)*) => {
        /// A harness event.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum HookEvent {
            $(#[doc = $text] $variant,)*
        }

        impl HookEvent {
            /// Every event.
            pub const ALL: &'static [HookEvent] = &[$(HookEvent::$variant,)*];

            /// The event's name.
            pub fn as_str(self) -> &'static str {
                match self { $(HookEvent::$variant => $text,)* }
            }

            /// Which plane dispatches it.
            pub fn plane(self) -> Plane {
                match self { $(HookEvent::$variant => Plane::$plane,)* }
            }

            /// Whether a bail refuses the operation.
            pub fn refusable(self) -> bool {
                match self { $(HookEvent::$variant => $refusable,)* }
            }

            /// Parse an event name.
            pub fn parse(name: &str) -> Option<HookEvent> {
                Self::ALL.iter().copied().find(|e| e.as_str() == name)
            }
        }
    };
}

events! {
    PluginMounting => "plugin_mounting", Control, false;
    PluginMounted => "plugin_mounted", Control, false;
    PluginUnmounting => "plugin_unmounting", Control, false;
    PluginUnmounted => "plugin_unmounted", Control, false;
    BeforeAgentRun => "before_agent_run", Data, true;
    AfterAgentRun => "after_agent_run", Data, false;
    AgentError => "agent_error", Data, false;
    BeforeToolExecute => "before_tool_execute", Data, true;
    AfterToolExecute => "after_tool_execute", Data, false;
    ToolError => "tool_error", Data, false;
    GenerationPublished => "generation_published", Control, false;
    GenerationDraining => "generation_draining", Control, false;
    PolicyDecision => "policy_decision", Data, false;
    BeforeModelCall => "before_model_call", Data, true;
    AfterModelCall => "after_model_call", Data, false;
}

/// Where an event is dispatched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plane {
    /// Against the run's generation.
    Data,
    /// Against the live registry; failures never abort the transition.
    Control,
}

/// What a handler's reply means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookMode {
    /// Only told: any reply but `continue` is a hook failure.
    Observe,
    /// A returned object replaces the whole payload for the rest of the chain.
    Transform,
    /// A bail stops the chain (and refuses the operation where refusable).
    Bail,
}

impl HookMode {
    /// The mode's name, as registered.
    pub fn as_str(self) -> &'static str {
        match self {
            HookMode::Observe => "observe",
            HookMode::Transform => "transform",
            HookMode::Bail => "bail",
        }
    }
}

/// What happens when a handler fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ErrorPolicy {
    /// Record the failure and continue (default).
    #[default]
    Record,
    /// Fail the operation (data plane only; control plane records).
    Raise,
}

/// A handler's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum HookReply {
    /// Nothing to change.
    Continue,
    /// The new payload (transform mode): it must be a JSON object.
    Replace(Value),
    /// Stop the chain, with a reason (bail mode).
    Bail(String),
}

impl HookReply {
    /// The reply's action on the wire (`continue`, `transform` or `bail`):
    /// what a message about it may say, never its payload or reason.
    pub fn action(&self) -> &'static str {
        match self {
            HookReply::Continue => "continue",
            HookReply::Replace(_) => "transform",
            HookReply::Bail(_) => "bail",
        }
    }
}

/// What a reply does, once its hook's mode allows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Allowed {
    /// Nothing to change.
    Continue,
    /// The new payload (a transform hook's object).
    Replace(serde_json::Map<String, Value>),
    /// Stop the chain (a bail hook's refusal).
    Bail(String),
}

/// The one table of what a hook's `mode` lets its reply do, for every hook
/// alike (built-in, in-process or a process plugin's): `continue` is always
/// allowed, a `transform` hook may return an object, a `bail` hook may bail,
/// and an `observe` hook is only told. Anything else is the hook's failure,
/// described by the reply's action and kind only (a payload or a reason
/// could hold a secret); the dispatcher handles it like a hook that failed:
/// a `bail` hook on a refusable event refuses, others by `error_policy`.
pub fn allowed(mode: HookMode, reply: HookReply) -> Result<Allowed, String> {
    match (mode, reply) {
        (_, HookReply::Continue) => Ok(Allowed::Continue),
        (HookMode::Transform, HookReply::Replace(Value::Object(m))) => Ok(Allowed::Replace(m)),
        (HookMode::Transform, HookReply::Replace(other)) => Err(format!(
            "the hook replied `transform` with {} payload, but a transform must return a JSON object",
            json_kind(&other)
        )),
        (HookMode::Bail, HookReply::Bail(reason)) => Ok(Allowed::Bail(reason)),
        (mode, reply) => Err(format!(
            "the hook replied `{}`, but its mode is `{}`",
            reply.action(),
            mode.as_str()
        )),
    }
}

/// What kind of JSON value `v` is (`an array`, `a string`, …).
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "a null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A hook handler.
#[async_trait::async_trait]
pub trait HookHandler: Send + Sync {
    /// Handle `event` with a read-only `payload`.
    async fn call(&self, event: HookEvent, payload: &Value) -> Result<HookReply, BoxError>;
}

/// A handler from a closure returning a reply synchronously.
pub struct FnHook<F>(pub F);

#[async_trait::async_trait]
impl<F> HookHandler for FnHook<F>
where
    F: Fn(HookEvent, &Value) -> Result<HookReply, BoxError> + Send + Sync,
{
    async fn call(&self, event: HookEvent, payload: &Value) -> Result<HookReply, BoxError> {
        (self.0)(event, payload)
    }
}

/// One registration.
#[derive(Clone)]
pub struct HookRegistration {
    /// `hook_<n>` within its owner.
    pub id: String,
    /// Owning entry id.
    pub owner: String,
    /// Event.
    pub event: HookEvent,
    /// Mode.
    pub mode: HookMode,
    /// Priority (lower runs first).
    pub priority: i32,
    /// Global registration sequence (ties on priority).
    pub sequence: u64,
    /// Error policy.
    pub error_policy: ErrorPolicy,
    /// The handler.
    pub handler: Arc<dyn HookHandler>,
}

impl std::fmt::Debug for HookRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRegistration")
            .field("id", &self.id)
            .field("owner", &self.owner)
            .field("event", &self.event)
            .field("mode", &self.mode)
            .field("priority", &self.priority)
            .finish()
    }
}

/// A failure recorded during dispatch (a `hook.failure` signal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookFailure {
    /// Event.
    pub event: HookEvent,
    /// Registration id.
    pub hook: String,
    /// Owner entry.
    pub owner: String,
    /// Error text (already redacted by the caller's redactor when emitted).
    pub error: String,
}

/// The outcome of dispatching one event.
#[derive(Clone, Debug, PartialEq)]
pub struct Dispatch {
    /// The payload after transforms.
    pub payload: Value,
    /// The bail that stopped the chain, if one did.
    pub bailed: Option<Bail>,
    /// Recorded failures.
    pub failures: Vec<HookFailure>,
}

/// A guard (a `bail`-mode hook) refused, or could not answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason} (hook `{hook}` of `{owner}`)")]
pub struct Bail {
    /// Registration id.
    pub hook: String,
    /// Owner entry.
    pub owner: String,
    /// The hook's reason, or why it could not answer.
    pub reason: String,
}

/// A handler failed under `raise` on the data plane.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("hook `{hook}` of `{owner}` failed on `{}`: {error}", event.as_str())]
pub struct HookExecutionError {
    /// Event.
    pub event: HookEvent,
    /// Registration id.
    pub hook: String,
    /// Owner entry.
    pub owner: String,
    /// Error text.
    pub error: String,
}

/// The keys of a payload that say what the event is about (which tool, of
/// which entry, in which generation and run). A transform replaces the rest
/// of the payload; these stay as they were, so a later hook (a `deny` guard
/// on tool names, say) always judges the call that will really happen.
pub const CONTEXT_KEYS: [&str; 4] = ["tool", "owner", "generation_id", "run_id"];

/// Put back into `replaced` the [`CONTEXT_KEYS`] of `before` (a transform
/// that returns only what it changes simply leaves them out); the first key
/// the transform gave another value, if any.
fn keep_context(
    before: &Value,
    replaced: &mut serde_json::Map<String, Value>,
) -> Option<&'static str> {
    let mut changed = None;
    for key in CONTEXT_KEYS {
        match (before.get(key), replaced.get(key)) {
            (Some(v), Some(new)) if new != v => {
                replaced.insert(key.to_owned(), v.clone());
                changed = changed.or(Some(key));
            }
            (Some(v), None) => {
                replaced.insert(key.to_owned(), v.clone());
            }
            (None, Some(_)) => {
                replaced.remove(key);
                changed = changed.or(Some(key));
            }
            _ => {}
        }
    }
    changed
}

/// An immutable, ordered set of registrations (one per generation).
#[derive(Clone, Debug, Default)]
pub struct HookSet {
    ordered: Vec<HookRegistration>,
}

impl HookSet {
    /// Order `registrations` by (priority, sequence).
    pub fn new(mut registrations: Vec<HookRegistration>) -> Self {
        registrations.sort_by_key(|r| (r.priority, r.sequence));
        Self {
            ordered: registrations,
        }
    }

    /// Registrations for `event`, in dispatch order.
    pub fn for_event(&self, event: HookEvent) -> impl Iterator<Item = &HookRegistration> {
        self.ordered.iter().filter(move |r| r.event == event)
    }

    /// Number of registrations.
    pub fn len(&self) -> usize {
        self.ordered.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }

    /// Dispatch `event`. Data-plane `raise` failures return an error;
    /// everything else is recorded in the outcome.
    pub async fn dispatch(
        &self,
        event: HookEvent,
        payload: Value,
    ) -> Result<Dispatch, HookExecutionError> {
        let mut out = Dispatch {
            payload,
            bailed: None,
            failures: Vec::new(),
        };
        for reg in self.for_event(event) {
            let answer = reg
                .handler
                .call(event, &out.payload)
                .await
                .map_err(|e| e.to_string())
                .and_then(|reply| allowed(reg.mode, reply));
            let error = match answer {
                Ok(Allowed::Continue) => continue,
                Ok(Allowed::Replace(mut m)) => {
                    let changed = keep_context(&out.payload, &mut m);
                    out.payload = Value::Object(m);
                    match changed {
                        // The keys are put back; the change is a failure.
                        Some(changed) => {
                            format!("a transform cannot change `{changed}`; it is kept as it was")
                        }
                        None => continue,
                    }
                }
                Ok(Allowed::Bail(reason)) => {
                    out.bailed = Some(Bail {
                        hook: reg.id.clone(),
                        owner: reg.owner.clone(),
                        reason,
                    });
                    break;
                }
                // A guard that cannot answer (crashed, hung, replied
                // garbage or what its mode does not allow) refuses: its
                // silence is never a yes.
                Err(e) if reg.mode == HookMode::Bail && event.refusable() => {
                    out.bailed = Some(Bail {
                        hook: reg.id.clone(),
                        owner: reg.owner.clone(),
                        reason: format!("the guard could not answer: {e}"),
                    });
                    break;
                }
                Err(e) => e,
            };
            if reg.error_policy == ErrorPolicy::Raise && event.plane() == Plane::Data {
                return Err(HookExecutionError {
                    event,
                    hook: reg.id.clone(),
                    owner: reg.owner.clone(),
                    error,
                });
            }
            out.failures.push(HookFailure {
                event,
                hook: reg.id.clone(),
                owner: reg.owner.clone(),
                error,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reg(
        id: &str,
        event: HookEvent,
        mode: HookMode,
        priority: i32,
        seq: u64,
        h: Arc<dyn HookHandler>,
    ) -> HookRegistration {
        HookRegistration {
            id: id.into(),
            owner: "p".into(),
            event,
            mode,
            priority,
            sequence: seq,
            error_policy: ErrorPolicy::Record,
            handler: h,
        }
    }

    #[test]
    fn there_are_the_reference_thirteen_events_plus_two_model_events() {
        // The reference's thirteen, plus the documented model-call
        // extension (the Oracle runtime's beforeModel / afterModel).
        assert_eq!(HookEvent::ALL.len(), 15);
        let refusable: Vec<&str> = HookEvent::ALL
            .iter()
            .filter(|e| e.refusable())
            .map(|e| e.as_str())
            .collect();
        assert_eq!(
            refusable,
            [
                "before_agent_run",
                "before_tool_execute",
                "before_model_call"
            ]
        );
        assert_eq!(HookEvent::parse("tool_error"), Some(HookEvent::ToolError));
    }

    #[tokio::test]
    async fn priority_then_registration_order_with_transform_and_bail() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s1 = Arc::clone(&seen);
        let observe = Arc::new(FnHook(move |_, p: &Value| {
            s1.lock().unwrap().push(p["n"].as_i64().unwrap_or(-1));
            Ok(HookReply::Continue)
        }));
        let bump = Arc::new(FnHook(|_, p: &Value| {
            Ok(HookReply::Replace(
                json!({ "n": p["n"].as_i64().unwrap_or(0) + 1 }),
            ))
        }));
        let bail = Arc::new(FnHook(|_, _: &Value| Ok(HookReply::Bail("no".into()))));
        let e = HookEvent::BeforeToolExecute;
        let set = HookSet::new(vec![
            reg("late", e, HookMode::Observe, 10, 1, observe.clone()),
            reg("bail", e, HookMode::Bail, 5, 2, bail),
            reg("first", e, HookMode::Transform, -10, 3, bump),
            reg("second", e, HookMode::Observe, 0, 4, observe),
        ]);
        let out = set.dispatch(e, json!({ "n": 1 })).await.unwrap();
        assert_eq!(out.payload, json!({ "n": 2 }));
        assert_eq!(out.bailed.map(|b| b.reason).as_deref(), Some("no"));
        assert_eq!(
            *seen.lock().unwrap(),
            [2],
            "the bail stopped the chain before `late`"
        );
    }

    #[tokio::test]
    async fn failures_are_recorded_or_raised_by_policy_and_plane() {
        let broken: Arc<dyn HookHandler> = Arc::new(FnHook(|_, _: &Value| Err("boom".into())));
        let not_object: Arc<dyn HookHandler> =
            Arc::new(FnHook(|_, _: &Value| Ok(HookReply::Replace(json!(3)))));
        let mut raising = reg(
            "r",
            HookEvent::AfterToolExecute,
            HookMode::Observe,
            0,
            1,
            broken.clone(),
        );
        raising.error_policy = ErrorPolicy::Raise;
        let set = HookSet::new(vec![
            raising.clone(),
            reg(
                "t",
                HookEvent::AfterToolExecute,
                HookMode::Transform,
                1,
                2,
                not_object,
            ),
        ]);
        assert!(
            set.dispatch(HookEvent::AfterToolExecute, json!({}))
                .await
                .is_err()
        );
        let mut control = raising;
        control.event = HookEvent::PluginMounted;
        let set = HookSet::new(vec![control]);
        let out = set
            .dispatch(HookEvent::PluginMounted, json!({}))
            .await
            .unwrap();
        assert_eq!(
            out.failures.len(),
            1,
            "raise degrades to record on the control plane"
        );
        let set = HookSet::new(vec![reg(
            "t",
            HookEvent::AfterToolExecute,
            HookMode::Transform,
            1,
            2,
            Arc::new(FnHook(|_, _: &Value| Ok(HookReply::Replace(json!([]))))),
        )]);
        let out = set
            .dispatch(HookEvent::AfterToolExecute, json!({"a": 1}))
            .await
            .unwrap();
        assert_eq!(out.payload, json!({"a": 1}));
        assert_eq!(
            out.failures.len(),
            1,
            "under `record`, a non-object transform is recorded"
        );
    }

    /// What each mode lets a reply do: one table for every hook. A reply
    /// the mode does not allow is described by its action only (never the
    /// payload or reason it carried).
    #[test]
    fn the_mode_decides_what_a_reply_may_do() {
        use HookMode::{Bail as B, Observe as O, Transform as T};
        let object = || HookReply::Replace(json!({"a": "secret-payload"}));
        let bail = || HookReply::Bail("secret-reason".into());
        for mode in [O, T, B] {
            assert_eq!(allowed(mode, HookReply::Continue), Ok(Allowed::Continue));
        }
        assert!(matches!(allowed(T, object()), Ok(Allowed::Replace(_))));
        assert_eq!(
            allowed(B, bail()),
            Ok(Allowed::Bail("secret-reason".into()))
        );
        for (mode, reply, action) in [
            (B, object(), "transform"),
            (B, HookReply::Replace(json!("no")), "transform"),
            (T, bail(), "bail"),
            (O, object(), "transform"),
            (O, bail(), "bail"),
        ] {
            let e = allowed(mode, reply).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "the hook replied `{action}`, but its mode is `{}`",
                    mode.as_str()
                )
            );
        }
        for (payload, kind) in [
            (json!("secret-payload"), "a string"),
            (json!(["secret-payload"]), "an array"),
            (json!(null), "a null"),
        ] {
            assert_eq!(
                allowed(T, HookReply::Replace(payload)),
                Err(format!(
                    "the hook replied `transform` with {kind} payload, \
                     but a transform must return a JSON object"
                ))
            );
        }
    }

    /// An observe hook that replies and a transform that returns no object
    /// are failures by their error policy: `raise` fails the call, `record`
    /// records and goes on with the payload unchanged.
    #[tokio::test]
    async fn an_observe_reply_and_a_non_object_transform_follow_the_error_policy() {
        let e = HookEvent::BeforeToolExecute;
        let cases: [(HookMode, HookReply, &str); 3] = [
            (
                HookMode::Observe,
                HookReply::Replace(json!({"n": 2})),
                "the hook replied `transform`, but its mode is `observe`",
            ),
            (
                HookMode::Observe,
                HookReply::Bail("no".into()),
                "the hook replied `bail`, but its mode is `observe`",
            ),
            (
                HookMode::Transform,
                HookReply::Replace(json!("n")),
                "the hook replied `transform` with a string payload, \
                 but a transform must return a JSON object",
            ),
        ];
        for (mode, reply, said) in cases {
            for policy in [ErrorPolicy::Record, ErrorPolicy::Raise] {
                let given = reply.clone();
                let mut r = reg(
                    "h",
                    e,
                    mode,
                    0,
                    1,
                    Arc::new(FnHook(move |_, _: &Value| Ok(given.clone()))),
                );
                r.error_policy = policy;
                let got = HookSet::new(vec![r]).dispatch(e, json!({"n": 1})).await;
                match policy {
                    ErrorPolicy::Raise => {
                        let err = got.expect_err(said);
                        assert_eq!((err.hook.as_str(), err.error.as_str()), ("h", said));
                    }
                    ErrorPolicy::Record => {
                        let out = got.unwrap();
                        assert_eq!(out.payload, json!({"n": 1}), "{said}");
                        assert!(out.bailed.is_none(), "{said}");
                        assert_eq!(out.failures.len(), 1, "{said}");
                        assert_eq!(out.failures[0].error, said);
                    }
                }
            }
        }
    }

    /// A bail hook whose reply its mode does not allow could not answer:
    /// on a refusable event it refuses whatever its error policy; a
    /// transform hook's bail is a failure by its error policy.
    #[tokio::test]
    async fn a_reply_the_mode_does_not_allow_refuses_or_fails_by_policy() {
        let transform: Arc<dyn HookHandler> = Arc::new(FnHook(|_, _: &Value| {
            Ok(HookReply::Replace(json!({"deny": true})))
        }));
        let bail: Arc<dyn HookHandler> =
            Arc::new(FnHook(|_, _: &Value| Ok(HookReply::Bail("no".into()))));
        let e = HookEvent::BeforeToolExecute;
        for policy in [ErrorPolicy::Record, ErrorPolicy::Raise] {
            let mut guard = reg("g", e, HookMode::Bail, 0, 1, Arc::clone(&transform));
            guard.error_policy = policy;
            let out = HookSet::new(vec![guard.clone()])
                .dispatch(e, json!({"tool": "t"}))
                .await
                .unwrap();
            let refusal = out.bailed.expect("a guard that cannot answer refuses");
            assert_eq!(
                refusal.reason,
                "the guard could not answer: the hook replied `transform`, but its mode is `bail`"
            );
            assert_eq!(out.payload, json!({"tool": "t"}), "nothing was replaced");
            // On an event that cannot be refused, by its error policy.
            guard.event = HookEvent::AfterToolExecute;
            let got = HookSet::new(vec![guard])
                .dispatch(HookEvent::AfterToolExecute, json!({}))
                .await;
            match policy {
                ErrorPolicy::Raise => assert!(got.is_err(), "{got:?}"),
                ErrorPolicy::Record => {
                    let out = got.unwrap();
                    assert!(out.bailed.is_none());
                    assert_eq!(out.failures.len(), 1);
                }
            }

            let mut t = reg("t", e, HookMode::Transform, 0, 1, Arc::clone(&bail));
            t.error_policy = policy;
            let got = HookSet::new(vec![t]).dispatch(e, json!({})).await;
            match policy {
                ErrorPolicy::Raise => {
                    let err = got.unwrap_err();
                    assert_eq!(err.hook, "t");
                    assert_eq!(
                        err.error,
                        "the hook replied `bail`, but its mode is `transform`"
                    );
                }
                ErrorPolicy::Record => {
                    let out = got.unwrap();
                    assert!(out.bailed.is_none(), "a transform's bail is not a refusal");
                    assert_eq!(
                        out.failures[0].error,
                        "the hook replied `bail`, but its mode is `transform`"
                    );
                }
            }
        }
    }

    /// A transform cannot rename the tool (or drop its name) for the hooks
    /// after it: a guard on tool names judges the call that will run.
    #[tokio::test]
    async fn a_transform_keeps_the_context_keys() {
        for reply in [
            json!({"tool": "harmless", "args": {"n": 2}}),
            json!({"args": {"n": 2}}),
            json!({"tool": "save_note", "owner": "other", "args": {"n": 2}, "run_id": "r1"}),
        ] {
            let seen = Arc::new(std::sync::Mutex::new(Value::Null));
            let seen_by_guard = Arc::clone(&seen);
            let given = reply.clone();
            let set = HookSet::new(vec![
                reg(
                    "rename",
                    HookEvent::BeforeToolExecute,
                    HookMode::Transform,
                    -10,
                    1,
                    Arc::new(FnHook(move |_, _: &Value| {
                        Ok(HookReply::Replace(given.clone()))
                    })),
                ),
                reg(
                    "guard",
                    HookEvent::BeforeToolExecute,
                    HookMode::Bail,
                    0,
                    2,
                    Arc::new(FnHook(move |_, p: &Value| {
                        *seen_by_guard.lock().unwrap() = p.clone();
                        Ok(if p["tool"] == "save_note" {
                            HookReply::Bail("no saving".into())
                        } else {
                            HookReply::Continue
                        })
                    })),
                ),
            ]);
            let before =
                json!({"tool": "save_note", "owner": "notes", "run_id": "r1", "args": {"n": 1}});
            let out = set
                .dispatch(HookEvent::BeforeToolExecute, before)
                .await
                .unwrap();
            assert_eq!(out.bailed.map(|b| b.reason).as_deref(), Some("no saving"));
            let seen = seen.lock().unwrap().clone();
            assert_eq!(
                seen,
                json!({"tool": "save_note", "owner": "notes", "run_id": "r1", "args": {"n": 2}})
            );
            // Leaving a key out is no failure; changing one is.
            let renamed = reply.get("tool").is_some_and(|t| t != "save_note")
                || reply.get("owner").is_some_and(|o| o != "notes");
            assert_eq!(
                out.failures.len(),
                usize::from(renamed),
                "{:?}",
                out.failures
            );
            if renamed {
                assert!(out.failures[0].error.contains("cannot change"));
            }
        }
    }
}
