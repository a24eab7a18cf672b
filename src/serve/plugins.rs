//! `/plugins/{entry}/…`: the HTTP routes process plugins register,
//! answered by the entry's instance in the current generation.
//!
//! Parse the request (method, path under the entry, query, headers, a
//! UTF-8 body), call [`Host::plugin_request`](crate::app::host::Host),
//! render the plugin's answer; everything else is a problem document.
//! Authentication is the server's (`[serve] tokens`; a path listed in
//! `[serve] auth_excluded` needs none), never the plugin's.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::Served;
use super::problem::ApiProblem;
use crate::app::plugin_route::PluginRouteError;
use crate::runtime::RouteRequest;

/// Response headers a plugin may not set (the server owns framing).
const OWN_HEADERS: [&str; 4] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "set-cookie",
];

/// `/plugins/{entry}` and `/plugins/{entry}/{*rest}`, any method.
pub async fn forward(
    State(s): State<Served>,
    method: Method,
    uri: axum::http::Uri,
    params: Result<Path<BTreeMap<String, String>>, PathRejection>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiProblem> {
    let Path(params) = params.map_err(|e| {
        ApiProblem::new(StatusCode::BAD_REQUEST, "serve::bad-request", e.body_text())
    })?;
    let entry = params.get("entry").cloned().unwrap_or_default();
    let path = format!("/{}", params.get("rest").map_or("", String::as_str));
    // Decoded, a path may not climb out of a prefix route; encoded, it may
    // not hide a separator.
    let raw = uri.path().to_ascii_lowercase();
    if !crate::runtime::route::request_path_ok(&path) || raw.contains("%2f") || raw.contains("%5c")
    {
        return Err(ApiProblem::new(
            StatusCode::BAD_REQUEST,
            "serve::bad-plugin-path",
            "a plugin route's path may not hold a `.` or `..` segment, a backslash, an encoded `/` or `\\`, or a control character",
        ));
    }
    let body = String::from_utf8(body.to_vec()).map_err(|_| {
        ApiProblem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "serve::plugin-body",
            "a plugin route takes a UTF-8 text body",
        )
    })?;
    let request = RouteRequest {
        method: method.as_str().to_owned(),
        path,
        query: query.unwrap_or_default(),
        headers: headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
        body,
    };
    let answered = s.host.plugin_request(&entry, request).await;
    let redactor = s.host.redactor();
    // Neither the entry nor the path is echoed (see
    // `ApiProblem::about_sent`).
    let problem = |status, code, e: &PluginRouteError| {
        let detail = match e {
            PluginRouteError::Stopping(why) => format!("no generation to answer on: {why}"),
            PluginRouteError::NoEntry { .. } => {
                "the current generation has no entry of that name with HTTP routes".to_owned()
            }
            PluginRouteError::NoRoute { .. } => "the entry has no route for that path".to_owned(),
            PluginRouteError::WrongMethod { allowed, .. } => {
                format!("the entry answers that path only to {}", allowed.join(", "))
            }
            PluginRouteError::Failed { reason, .. } => {
                format!("the entry failed to answer: {reason}")
            }
        };
        ApiProblem::new(status, code, redactor.redact(&detail).into_owned())
    };
    let response = match answered {
        Ok(r) => r,
        Err(e @ PluginRouteError::Stopping(_)) => {
            return Err(problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "serve::stopping",
                &e,
            ));
        }
        Err(e @ (PluginRouteError::NoEntry { .. } | PluginRouteError::NoRoute { .. })) => {
            return Err(problem(StatusCode::NOT_FOUND, "serve::unknown-plugin-route", &e)
                .with_help("a process plugin registers its routes at setup (`ctx.routes.register`), pinned in `chassis.lock`"));
        }
        Err(e @ PluginRouteError::WrongMethod { .. }) => {
            let allow = match &e {
                PluginRouteError::WrongMethod { allowed, .. } => allowed.join(", "),
                _ => String::new(),
            };
            let mut out = problem(
                StatusCode::METHOD_NOT_ALLOWED,
                "serve::method-not-allowed",
                &e,
            )
            .into_response();
            if let Ok(value) = HeaderValue::from_str(&allow) {
                out.headers_mut().insert(axum::http::header::ALLOW, value);
            }
            return Ok(out);
        }
        Err(e @ PluginRouteError::Failed { .. }) => {
            return Err(problem(StatusCode::BAD_GATEWAY, "serve::plugin-failed", &e));
        }
    };
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut out = (status, response.body).into_response();
    for (name, value) in &response.headers {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) else {
            continue;
        };
        if !OWN_HEADERS.contains(&name.as_str()) {
            out.headers_mut().insert(name, value);
        }
    }
    Ok(out)
}
