//! HTTP routes a plugin contributes (the Oracle runtime's Nest modules):
//! what `chassis serve` answers under `/plugins/{entry}/…`.
//!
//! Why it exists: a plugin sometimes needs to be reached directly — a
//! webhook, a health page, an export — not only through an agent's tools.
//! A plugin registers routes through its context like tools; they belong
//! to its instance, so a generation serves exactly the routes its
//! instances registered, and a retired instance's routes go with it. This
//! module holds the data and the matching (no I/O): the HTTP server is an
//! adapter that looks a request up here, forwards it, and owns
//! authentication (`[serve] tokens`, `auth_excluded`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::scope::BoxError;
use super::tool::Cancellation;

/// The methods a route may answer.
pub const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// A request as a route handler sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RouteRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path under `/plugins/{entry}` (`/stats`).
    pub path: String,
    /// The raw query string, without `?` (empty when none).
    pub query: String,
    /// Header names (lowercase) and values; credentials are never here.
    pub headers: BTreeMap<String, String>,
    /// The body, as UTF-8 text.
    pub body: String,
}

/// What a route handler answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RouteResponse {
    /// HTTP status (200–599).
    pub status: u16,
    /// Header names and values.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body, as text.
    #[serde(default)]
    pub body: String,
}

/// Answers the requests of one route.
#[async_trait::async_trait]
pub trait RouteHandler: Send + Sync {
    /// Answer `request`; stop when `cancel` fires.
    async fn handle(
        &self,
        request: RouteRequest,
        cancel: &Cancellation,
    ) -> Result<RouteResponse, BoxError>;
}

/// One registered route.
#[derive(Clone)]
pub struct RouteRegistration {
    /// The entry that registered it.
    pub owner: String,
    /// Its method.
    pub method: String,
    /// Its path: exact (`/stats`), or a prefix ending in `/*` (`/files/*`).
    pub path: String,
    /// Its handler.
    pub handler: Arc<dyn RouteHandler>,
}

impl std::fmt::Debug for RouteRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteRegistration")
            .field("owner", &self.owner)
            .field("method", &self.method)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Why a route cannot be registered.
pub fn check(method: &str, path: &str) -> Result<(), String> {
    if !METHODS.contains(&method) {
        return Err(format!(
            "method `{method}` is not one of {}",
            METHODS.join(", ")
        ));
    }
    let body = path.strip_suffix("/*").unwrap_or(path);
    let ok = path.starts_with('/')
        && !body.contains('*')
        && !path.contains(['?', '#', '%', '\\'])
        && !path.chars().any(char::is_control)
        && path.split('/').all(|s| s != ".." && s != ".");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "path `{path}` must start with `/`, hold no `?`, `#`, `%`, `\\`, `.` or `..` segment, and use `*` only as a final `/*`"
        ))
    }
}

/// Whether a request's path (decoded, under `/plugins/{entry}`) may reach
/// a plugin: no `.` or `..` segment, no backslash, no control character —
/// a prefix route never sees a path that climbs out of it.
pub fn request_path_ok(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
        && path.split('/').all(|s| s != "." && s != "..")
}

/// Whether `pattern` (exact, or a prefix ending in `/*`) matches `path`.
pub fn matches(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix("/*") {
        Some(prefix) => {
            path == prefix
                || path
                    .strip_prefix(prefix)
                    .is_some_and(|r| r.starts_with('/'))
        }
        None => pattern == path,
    }
}

/// What a lookup of a request found.
pub enum RouteLookup {
    /// The route to answer it.
    Found(RouteRegistration),
    /// The generation has no such entry (or it registered no route).
    NoEntry,
    /// The entry has routes, none for this path.
    NoRoute,
    /// Routes for this path answer only these methods.
    WrongMethod(Vec<String>),
}

/// Find the route of `routes` (one entry's) for `method` and `path`: an
/// exact path before a prefix, the longest prefix first.
pub fn find(routes: &[RouteRegistration], method: &str, path: &str) -> RouteLookup {
    let mut matching: Vec<&RouteRegistration> =
        routes.iter().filter(|r| matches(&r.path, path)).collect();
    if matching.is_empty() {
        return if routes.is_empty() {
            RouteLookup::NoEntry
        } else {
            RouteLookup::NoRoute
        };
    }
    // Exact paths first, then longer patterns.
    matching.sort_by_key(|r| (r.path.ends_with("/*"), std::cmp::Reverse(r.path.len())));
    match matching.iter().find(|r| r.method == method) {
        Some(r) => RouteLookup::Found((*r).clone()),
        None => {
            let mut allowed: Vec<String> = matching.iter().map(|r| r.method.clone()).collect();
            allowed.sort();
            allowed.dedup();
            RouteLookup::WrongMethod(allowed)
        }
    }
}

impl super::Generation {
    /// The route of `entry`'s instance in this generation for `method` and
    /// `path` (the caller holds a lease on it). No lock is taken: the
    /// routes were copied into the generation when it was built.
    pub fn route(&self, entry: &str, method: &str, path: &str) -> RouteLookup {
        // The instances follow the activation order; the plan knows the
        // entry's place in it (an entry it does not know has no instance).
        let Some(order) = crate::engine::model::EntryId::new(entry)
            .ok()
            .and_then(|id| self.plan.entries.get(&id))
            .map(|p| p.order)
        else {
            return RouteLookup::NoEntry;
        };
        let instance = order
            .and_then(|i| self.instances.get(i))
            .filter(|i| &*i.entry_id == entry)
            .or_else(|| self.instances.iter().find(|i| &*i.entry_id == entry));
        match instance {
            Some(i) => find(&i.routes, method, path),
            None => RouteLookup::NoEntry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;

    #[async_trait::async_trait]
    impl RouteHandler for Nothing {
        async fn handle(
            &self,
            _request: RouteRequest,
            _cancel: &Cancellation,
        ) -> Result<RouteResponse, BoxError> {
            Ok(RouteResponse::default())
        }
    }

    fn route(method: &str, path: &str) -> RouteRegistration {
        RouteRegistration {
            owner: "e".into(),
            method: method.into(),
            path: path.into(),
            handler: Arc::new(Nothing),
        }
    }

    #[test]
    fn paths_are_checked() {
        assert!(check("GET", "/stats").is_ok());
        assert!(check("POST", "/files/*").is_ok());
        assert!(check("GET", "/").is_ok());
        for bad in ["stats", "/a/../b", "/a?x", "/a*b", "/*/x", "/a/%2e", "/./a"] {
            assert!(check("GET", bad).is_err(), "{bad}");
        }
        assert!(check("TRACE", "/x").is_err());
    }

    #[test]
    fn request_paths_that_climb_or_hide_are_refused() {
        assert!(request_path_ok("/files/a/b.txt"));
        assert!(request_path_ok("/"));
        for bad in ["/files/../admin", "/files/./x", "/a\\b", "/a\u{0}b", "x"] {
            assert!(!request_path_ok(bad), "{bad:?}");
        }
    }

    #[test]
    fn exact_before_prefix_and_methods_are_told() {
        let routes = [
            route("GET", "/files/*"),
            route("GET", "/files/top"),
            route("POST", "/files/*"),
        ];
        assert!(matches("/files/*", "/files"));
        assert!(matches("/files/*", "/files/a/b"));
        assert!(!matches("/files/*", "/filesx"));
        let RouteLookup::Found(r) = find(&routes, "GET", "/files/top") else {
            panic!("not found")
        };
        assert_eq!(r.path, "/files/top");
        let RouteLookup::Found(r) = find(&routes, "POST", "/files/top") else {
            panic!("not found")
        };
        assert_eq!(r.path, "/files/*");
        assert!(matches!(
            find(&routes, "DELETE", "/files/a"),
            RouteLookup::WrongMethod(m) if m == ["GET", "POST"]
        ));
        assert!(matches!(
            find(&routes, "GET", "/other"),
            RouteLookup::NoRoute
        ));
        assert!(matches!(find(&[], "GET", "/x"), RouteLookup::NoEntry));
    }
}
