//! Errors over HTTP: `application/problem+json` (RFC 9457) with a stable
//! `code`, the same message and help a terminal would show — never a
//! panic, never a bare status line.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::app::{AppError, ErrorKind};
use crate::engine::secret::Redactor;

/// One problem document.
#[derive(Debug)]
pub struct ApiProblem {
    status: StatusCode,
    code: &'static str,
    detail: String,
    help: Vec<String>,
    diagnostics: Vec<serde_json::Value>,
    /// Seconds a client should wait before retrying (a 429 or 503).
    retry_after: Option<u64>,
}

impl ApiProblem {
    /// A problem of `status` with a stable `code`.
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code,
            detail: detail.into(),
            help: Vec::new(),
            diagnostics: Vec::new(),
            retry_after: None,
        }
    }

    /// With a suggestion.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    /// With the findings of a load.
    #[must_use]
    pub fn with_diagnostics(mut self, diagnostics: Vec<serde_json::Value>) -> Self {
        self.diagnostics = diagnostics;
        self
    }

    /// With a `Retry-After`.
    #[must_use]
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// A failed operation, scrubbed by `redactor`: unusable input is 400
    /// (an unknown agent 404), a refusal 422, a failure 500, an
    /// interruption (the server is stopping) 503; a damaged store
    /// (`store::damaged`) is 500.
    pub fn from_app(e: &AppError, redactor: &Redactor) -> Self {
        let (status, default_code) = match e.kind() {
            ErrorKind::Input => (StatusCode::BAD_REQUEST, "serve::bad-request"),
            ErrorKind::Negative => (StatusCode::UNPROCESSABLE_ENTITY, "serve::refused"),
            ErrorKind::Failure => (StatusCode::INTERNAL_SERVER_ERROR, "serve::failed"),
            ErrorKind::Interrupted => (StatusCode::SERVICE_UNAVAILABLE, "serve::stopping"),
        };
        let (code, help) = match e {
            AppError::Problem(p) => (p.code.unwrap_or(default_code), p.help.clone()),
            AppError::Store(s) => (s.code(), s.help().into_iter().map(Into::into).collect()),
            _ => (default_code, Vec::new()),
        };
        let status = match code {
            "serve::unknown-agent" => StatusCode::NOT_FOUND,
            "serve::stopping" => StatusCode::SERVICE_UNAVAILABLE,
            "serve::session-busy" | "serve::session-agent" => StatusCode::CONFLICT,
            "serve::request-tools-disabled" => StatusCode::FORBIDDEN,
            // The server's own store is damaged, not the request: a 500
            // (the same code a terminal shows; a retry reads the same).
            "store::damaged" => StatusCode::INTERNAL_SERVER_ERROR,
            _ => status,
        };
        Self {
            status,
            code,
            detail: redactor.redact(&e.to_string()).into_owned(),
            help: help
                .iter()
                .map(|h| redactor.redact(h).into_owned())
                .collect(),
            diagnostics: Vec::new(),
            retry_after: None,
        }
    }

    /// `e`, the failure of a request about values the client sent (an id,
    /// a name, a path), without echoing them: unusable input is `status`
    /// and `code` with `detail` (which names no value) and the help of `e`
    /// that quotes none of `sent` (a "did you mean `assistant`?" names what
    /// the composition holds; a handler checks first what help would quote
    /// a value it derives, as a scope path's "write `/a`" does); anything
    /// else is [`ApiProblem::from_app`].
    /// A reply that passed a value through the redactor would tell a client
    /// its guess is a secret's value (`<redacted>`) or is not (echoed).
    pub fn about_sent(
        e: &AppError,
        redactor: &Redactor,
        sent: &[&str],
        (status, code): (StatusCode, &'static str),
        detail: &str,
    ) -> Self {
        // A store's own failure (a damaged one) is not about what was sent.
        if e.kind() != ErrorKind::Input || matches!(e, AppError::Store(_)) {
            return Self::from_app(e, redactor);
        }
        let mut p = Self::from_app(e, redactor);
        p.status = status;
        p.code = code;
        p.detail = detail.to_owned();
        let help = match e {
            AppError::Problem(x) => x.help.clone(),
            _ => Vec::new(),
        };
        // Help names what the composition or the store holds ("did you
        // mean `assistant`?"); a line that quotes a value sent is dropped.
        p.help = help
            .into_iter()
            .filter(|h| {
                !sent
                    .iter()
                    .any(|v| !v.is_empty() && h.contains(&format!("`{v}`")))
            })
            .map(|h| redactor.redact(&h).into_owned())
            .collect();
        p
    }

    /// The document (also an SSE `error` event's data).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "type": format!("https://chassis.dev/problems/{}", self.code.replace("::", "/")),
            "title": self.status.canonical_reason().unwrap_or("error"),
            "status": self.status.as_u16(),
            "code": self.code,
            "detail": self.detail,
            "help": self.help,
            "diagnostics": self.diagnostics,
        })
    }
}

impl IntoResponse for ApiProblem {
    fn into_response(self) -> Response {
        let body = self.to_json().to_string();
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body,
        )
            .into_response();
        if let Some(seconds) = self.retry_after
            && let Ok(value) = header::HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

/// No route here. (The path is not echoed: see [`ApiProblem::about_sent`].)
pub async fn not_found() -> ApiProblem {
    ApiProblem::new(
        StatusCode::NOT_FOUND,
        "serve::not-found",
        "no route answers this path",
    )
    .with_help("see the routes in the README's `chassis serve` section; `GET /v1/status` tells what is served")
}

/// The route exists, not with this method (its `Allow` header says which).
pub async fn method_not_allowed() -> ApiProblem {
    ApiProblem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "serve::method-not-allowed",
        "this route does not answer this method",
    )
    .with_help("its `Allow` header lists the methods it answers")
}
