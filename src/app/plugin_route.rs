//! A request to a plugin's HTTP route, answered on the current generation
//! (`chassis serve`'s `/plugins/{entry}/…`).
//!
//! Why it exists: the server stays a thin adapter. This is the operation —
//! lease the current generation (so the instance answering is not retired
//! under the request), find the entry's route, call it, and scrub what
//! comes back: a plugin's answer leaves the process only redacted, like a
//! tool's output, and credentials never reach the plugin.

use crate::runtime::{Cancellation, RouteLookup, RouteRequest, RouteResponse};

use super::host::Host;

/// Header names never forwarded to a plugin.
pub const WITHHELD_HEADERS: [&str; 4] = [
    "authorization",
    "cookie",
    "proxy-authorization",
    "x-api-key",
];

/// Why a plugin request got no answer from the plugin.
#[derive(Debug, thiserror::Error)]
pub enum PluginRouteError {
    /// No generation is being served (the server is stopping).
    #[error("no generation to answer on: {0}")]
    Stopping(String),
    /// The current generation has no entry by that name with routes.
    #[error("generation {generation} has no entry `{entry}` with HTTP routes")]
    NoEntry {
        /// The generation.
        generation: String,
        /// The entry asked for.
        entry: String,
    },
    /// The entry has routes, none for the path.
    #[error("entry `{entry}` has no route for `{path}`")]
    NoRoute {
        /// The entry.
        entry: String,
        /// The path.
        path: String,
    },
    /// Routes for the path answer other methods.
    #[error("entry `{entry}` answers `{path}` only to {}", allowed.join(", "))]
    WrongMethod {
        /// The entry.
        entry: String,
        /// The path.
        path: String,
        /// The methods it answers.
        allowed: Vec<String>,
    },
    /// The plugin failed to answer (crashed, timed out, answered wrongly).
    #[error("entry `{entry}` failed to answer: {reason}")]
    Failed {
        /// The entry.
        entry: String,
        /// Why (redacted).
        reason: String,
    },
}

impl Host {
    /// Answer `request` with the route of `entry` in the current generation.
    pub async fn plugin_request(
        &self,
        entry: &str,
        mut request: RouteRequest,
    ) -> Result<RouteResponse, PluginRouteError> {
        let harness = self.harness();
        let lease = harness
            .acquire()
            .map_err(|e| PluginRouteError::Stopping(e.to_string()))?;
        let generation = std::sync::Arc::clone(lease.generation());
        request
            .headers
            .retain(|name, _| !WITHHELD_HEADERS.contains(&name.as_str()));
        let route = match generation.route(entry, &request.method, &request.path) {
            RouteLookup::Found(r) => r,
            RouteLookup::NoEntry => {
                return Err(PluginRouteError::NoEntry {
                    generation: generation.id.to_string(),
                    entry: entry.to_owned(),
                });
            }
            RouteLookup::NoRoute => {
                return Err(PluginRouteError::NoRoute {
                    entry: entry.to_owned(),
                    path: request.path,
                });
            }
            RouteLookup::WrongMethod(allowed) => {
                return Err(PluginRouteError::WrongMethod {
                    entry: entry.to_owned(),
                    path: request.path,
                    allowed,
                });
            }
        };
        // A client that goes away drops this future, and with it the
        // plugin request (which then sends `$/cancel`).
        let answered = route.handler.handle(request, &Cancellation::new()).await;
        drop(lease);
        let redactor = self.redactor();
        match answered {
            Ok(mut response) => {
                response.body = redactor.redact(&response.body).into_owned();
                for value in response.headers.values_mut() {
                    *value = redactor.redact(value).into_owned();
                }
                Ok(response)
            }
            Err(e) => Err(PluginRouteError::Failed {
                entry: entry.to_owned(),
                reason: redactor.redact(&e.to_string()).into_owned(),
            }),
        }
    }
}
