//! A process plugin's hook as a chassis [`HookHandler`].
//!
//! The harness's dispatcher decides when a hook runs and what its mode
//! allows (a transform from an observe hook is a failure, a bail refuses
//! only refusable events); this adapter forwards the call as
//! `hooks/dispatch` and turns the answer into a [`HookReply`]. A dispatch
//! that takes longer than [`HOOK_TIMEOUT`] fails like any hook failure
//! (for a bail hook: the operation is refused — a guard that cannot answer
//! never means yes).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::protocol::{HookDispatchParams, HookDispatchResult, method};
use super::rpc::RpcError;
use super::supervise::Supervisor;
use crate::runtime::{BoxError, HookEvent, HookHandler, HookReply};

/// How long one hook call may take.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// One registered hook of a process plugin.
pub struct ProcessHook {
    /// Its index in the plugin's registrations.
    pub index: usize,
    /// The plugin's process.
    pub supervisor: Arc<Supervisor>,
}

#[async_trait::async_trait]
impl HookHandler for ProcessHook {
    async fn call(&self, event: HookEvent, payload: &Value) -> Result<HookReply, BoxError> {
        // The whole call — waiting for a restart included — within the timeout.
        tokio::time::timeout(HOOK_TIMEOUT, self.dispatch(event, payload))
            .await
            .map_err(|_| -> BoxError {
                format!("the hook did not answer within {}s", HOOK_TIMEOUT.as_secs()).into()
            })?
    }
}

impl ProcessHook {
    async fn dispatch(&self, event: HookEvent, payload: &Value) -> Result<HookReply, BoxError> {
        let conn = self.supervisor.connection(None).await?;
        let params = HookDispatchParams {
            hook: self.index,
            event: event.as_str().to_owned(),
            payload: payload.clone(),
            // Inside a run (a data-plane event names it), the run's trace.
            meta: payload.get("run_id").and_then(Value::as_str).map(|run| {
                super::protocol::RequestMeta::in_run(
                    run,
                    &format!("hook:{}:{}", self.supervisor.entry(), event.as_str()),
                )
            }),
        };
        let reply = conn
            .request(
                method::HOOKS_DISPATCH,
                serde_json::to_value(&params)?,
                Some(HOOK_TIMEOUT),
                None,
            )
            .await
            .map_err(|e| -> BoxError {
                match e {
                    RpcError::Closed(reason) => self
                        .supervisor
                        .gone(&conn, method::HOOKS_DISPATCH, &reason)
                        .into(),
                    other => other.into(),
                }
            })?;
        let reply: HookDispatchResult = serde_json::from_value(reply).map_err(|e| {
            format!("the plugin answered `hooks/dispatch` with the wrong shape: {e}")
        })?;
        Ok(match reply {
            HookDispatchResult::Continue => HookReply::Continue,
            HookDispatchResult::Transform { payload } => HookReply::Replace(payload),
            HookDispatchResult::Bail { reason } => HookReply::Bail(reason),
        })
    }
}
