//! Who may call a server: bearer tokens from `[serve] tokens` (secrets,
//! never literals), compared in constant time; the routes `[serve]
//! auth_excluded` names are answered without one.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::engine::secret::SecretValue;

use super::problem::ApiProblem;

/// The tokens a server accepts and the routes that need none.
#[derive(Clone, Debug, Default)]
pub struct Access {
    tokens: Vec<SecretValue>,
    excluded: Vec<String>,
}

impl Access {
    /// Accept `tokens` (none: every request is let in); `excluded` routes
    /// need no token.
    pub fn new(tokens: Vec<SecretValue>, excluded: Vec<String>) -> Self {
        Self { tokens, excluded }
    }

    /// Whether any token is set.
    pub fn requires_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// Whether `header` (the `Authorization` value) carries a token.
    fn admits(&self, header: Option<&str>) -> bool {
        let Some(given) = header.and_then(|h| h.strip_prefix("Bearer ")) else {
            return false;
        };
        // Every token is compared (no early exit on a match).
        self.tokens
            .iter()
            .fold(subtle::Choice::from(0), |found, t| {
                found | t.reveal().as_bytes().ct_eq(given.trim().as_bytes())
            })
            .into()
    }
}

/// The middleware: 401 with `WWW-Authenticate: Bearer` unless the request
/// carries a token or its route is excluded.
pub async fn authorize(State(access): State<Arc<Access>>, req: Request, next: Next) -> Response {
    if !access.requires_tokens() || access.excluded.iter().any(|p| p == req.uri().path()) {
        return next.run(req).await;
    }
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if access.admits(header) {
        return next.run(req).await;
    }
    let mut response = ApiProblem::new(
        StatusCode::UNAUTHORIZED,
        "serve::unauthorized",
        if header.is_some() {
            "the bearer token is not accepted"
        } else {
            "this server needs `Authorization: Bearer <token>`"
        },
    )
    .with_help("the tokens are the secrets `[serve] tokens` names")
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_admitted_only_whole_and_only_as_bearer() {
        let access = Access::new(
            vec![
                SecretValue::new("tok-one-1234"),
                SecretValue::new("tok-two-5678"),
            ],
            vec![],
        );
        assert!(access.admits(Some("Bearer tok-one-1234")));
        assert!(access.admits(Some("Bearer tok-two-5678")));
        for bad in [
            None,
            Some("tok-one-1234"),
            Some("Basic tok-one-1234"),
            Some("Bearer tok-one-123"),
            Some("Bearer tok-one-12345"),
            Some("Bearer "),
        ] {
            assert!(!access.admits(bad), "{bad:?}");
        }
        assert!(!Access::default().requires_tokens());
    }
}
