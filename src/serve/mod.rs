//! `chassis serve`: the HTTP front of a [`Host`].
//!
//! Why it exists: generations, leases, draining and reload only mean
//! something in a process that stays up. This module is an adapter — parse
//! the request, call the application layer ([`crate::app::host`]), render
//! the same JSON documents the command line prints — and imports nothing
//! from the command line. Errors are `application/problem+json` with a
//! stable code ([`problem`]); streamed runs are Server-Sent Events.

mod approvals;
pub mod auth;
mod connections;
mod explain;
mod input;
mod metrics;
mod plugins;
pub mod problem;
mod reads;
mod runs;
mod sessions;
pub mod tls;
pub mod watch;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get, post};

use crate::app::host::Host;

pub use auth::Access;
pub use connections::serve;
pub use problem::ApiProblem;

/// Limits of one server.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub body_bytes: usize,
    /// Runs at once; more are refused with 429 and `Retry-After`.
    pub concurrent_runs: usize,
    /// How long a client may take to send a request's headers (an idle
    /// connection is closed after it too) and between a body's chunks.
    pub read_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            body_bytes: 1 << 20,
            concurrent_runs: 256,
            read_timeout: Duration::from_secs(30),
        }
    }
}

/// Told of each reload's outcome (a log line).
pub type ReloadLog = Arc<dyn Fn(&crate::app::host::ReloadStatus) + Send + Sync>;

/// What every handler shares.
#[derive(Clone)]
pub struct Served {
    host: Host,
    started: Instant,
    limits: Limits,
    runs: Arc<tokio::sync::Semaphore>,
    reload_log: Option<ReloadLog>,
}

impl Served {
    /// Serve `host` within `limits`.
    pub fn new(host: Host, limits: Limits) -> Self {
        Self {
            host,
            started: Instant::now(),
            limits,
            runs: Arc::new(tokio::sync::Semaphore::new(limits.concurrent_runs)),
            reload_log: None,
        }
    }

    /// Telling `log` of each `POST /v1/reload` too (as of a watched save
    /// or SIGHUP).
    #[must_use]
    pub fn with_reload_log(mut self, log: ReloadLog) -> Self {
        self.reload_log = Some(log);
        self
    }

    /// Resolves once no run is in flight (each holds a permit until it is
    /// recorded).
    async fn runs_ended(&self) {
        while self.runs.available_permits() < self.limits.concurrent_runs {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The routes, behind `access`.
pub fn router(served: Served, access: Access) -> Router {
    let body = served.limits.body_bytes;
    Router::new()
        .route("/healthz", get(reads::healthz))
        .route("/metrics", get(metrics::metrics))
        .route("/v1/status", get(reads::status))
        .route("/v1/generations", get(reads::generations))
        .route("/v1/generations/{id}", get(reads::generation))
        .route("/v1/reload", post(reads::reload))
        .route("/v1/explain/requirement", get(explain::requirement))
        .route("/v1/explain/scope", get(explain::scope))
        .route("/v1/explain/budgets", get(explain::budgets))
        .route("/v1/explain/reuse", get(explain::reuse))
        .route("/v1/diff", get(explain::diff))
        .route("/v1/agents/{agent}/runs", post(runs::create))
        .route("/v1/runs", get(runs::list))
        .route("/v1/runs/{id}", get(runs::show))
        .route("/v1/runs/{id}/approvals", post(approvals::answer))
        .route(
            "/v1/sessions/{id}",
            get(sessions::show).delete(sessions::delete),
        )
        .route("/plugins/{entry}", any(plugins::forward))
        .route("/plugins/{entry}/{*rest}", any(plugins::forward))
        .fallback(problem::not_found)
        .method_not_allowed_fallback(problem::method_not_allowed)
        .layer(DefaultBodyLimit::max(body))
        .layer(axum::middleware::from_fn_with_state(
            served.limits.read_timeout,
            connections::body_deadline,
        ))
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(access),
            auth::authorize,
        ))
        .with_state(served)
}
