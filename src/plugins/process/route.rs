//! A process plugin's HTTP route as a chassis [`RouteHandler`].
//!
//! `chassis serve` looks a request to `/plugins/{entry}/…` up in the
//! generation and calls this handler, which forwards it as `http/request`
//! (the route's index, method, path, query, headers, body) within
//! [`ROUTE_TIMEOUT`] and turns the answer into a response.

use std::sync::Arc;
use std::time::Duration;

use super::protocol::{HttpRequestParams, HttpRequestResult, method};
use super::supervise::Supervisor;
use crate::runtime::{BoxError, Cancellation, RouteHandler, RouteRequest, RouteResponse};

/// How long a plugin may take to answer one request.
pub const ROUTE_TIMEOUT: Duration = Duration::from_secs(30);

/// One registered route of a process plugin.
pub struct ProcessRoute {
    /// Its index in the plugin's registrations.
    pub index: usize,
    /// The plugin's process.
    pub supervisor: Arc<Supervisor>,
}

#[async_trait::async_trait]
impl RouteHandler for ProcessRoute {
    async fn handle(
        &self,
        request: RouteRequest,
        cancel: &Cancellation,
    ) -> Result<RouteResponse, BoxError> {
        let started = tokio::time::Instant::now();
        let conn = tokio::time::timeout(ROUTE_TIMEOUT, self.supervisor.connection(Some(cancel)))
            .await
            .map_err(|_| {
                format!(
                    "the plugin did not come back within {}s",
                    ROUTE_TIMEOUT.as_secs()
                )
            })??;
        // The caller's trace continues into the plugin when it sent one.
        let meta = request
            .headers
            .get("traceparent")
            .and_then(|h| crate::engine::trace_context::TraceParent::parse(h))
            .map(|t| super::protocol::RequestMeta {
                // Its flags as sent: an unsampled trace stays unsampled.
                traceparent: t.header(),
            });
        let params = HttpRequestParams {
            meta,
            route: self.index,
            method: request.method,
            path: request.path,
            query: request.query,
            headers: request.headers,
            body: request.body,
        };
        let reply = conn
            .request(
                method::HTTP_REQUEST,
                serde_json::to_value(&params)?,
                Some(ROUTE_TIMEOUT.saturating_sub(started.elapsed())),
                Some(cancel),
            )
            .await?;
        let reply: HttpRequestResult = serde_json::from_value(reply)
            .map_err(|e| format!("the plugin answered `http/request` with the wrong shape: {e}"))?;
        // 1xx is framing (an upgrade, a continue), not an answer.
        if !(200..=599).contains(&reply.status) {
            return Err(format!("the plugin answered with the status {}", reply.status).into());
        }
        Ok(RouteResponse {
            status: reply.status,
            headers: reply.headers,
            body: reply.body,
        })
    }
}
