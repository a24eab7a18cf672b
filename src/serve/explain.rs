//! `GET /v1/explain/{requirement,scope,budgets}`: the documents of
//! `chassis explain … --format json`, for the generation current now;
//! `GET /v1/explain/reuse` and `GET /v1/diff` between two stored
//! generations of this composition.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use serde::Deserialize;

use crate::app::explain::{budgets_in, requirement_in, scope_in};
use crate::app::explain_documents::{budgets_json, requirement_json, scope_json};

use super::Served;
use super::input::query;
use super::problem::ApiProblem;

/// Unusable input: 400 `serve::bad-request`.
const BAD_REQUEST: (StatusCode, &str) = (StatusCode::BAD_REQUEST, "serve::bad-request");

/// `?consumer=&capability=[&scope=]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequirementQuery {
    consumer: String,
    capability: String,
    #[serde(default)]
    scope: Option<String>,
}

/// `GET /v1/explain/requirement`.
pub async fn requirement(
    State(s): State<Served>,
    RawQuery(q): RawQuery,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q: RequirementQuery = query(q.as_deref(), "`?consumer=ENTRY&capability=NAME`")?;
    s.host
        .explain(|view| requirement_in(view, &q.consumer, &q.capability, q.scope.as_deref()))
        .map(|r| Json(requirement_json(&r)))
        .map_err(|e| {
            let sent = [q.consumer.as_str(), &q.capability, q.scope.as_deref().unwrap_or("")];
            ApiProblem::about_sent(
                &e,
                &s.host.redactor(),
                &sent,
                BAD_REQUEST,
                "in the current generation, that `consumer` holds no requirement of that `capability` (in that `scope`, when given)",
            )
            .with_help("`GET /v1/explain/scope?path=/` lists each scope's requirements")
        })
}

/// `?path=`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeQuery {
    path: String,
}

/// `GET /v1/explain/scope`.
pub async fn scope(
    State(s): State<Served>,
    RawQuery(q): RawQuery,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q: ScopeQuery = query(q.as_deref(), "`?path=/a/scope`")?;
    if crate::engine::model::ScopePath::new(&q.path).is_err() {
        return Err(ApiProblem::new(
            StatusCode::BAD_REQUEST,
            "serve::bad-request",
            "`path` is not a scope path",
        )
        .with_help("a scope path is `/` or absolute, like `/team/research`: no empty, `.` or `..` segment, no trailing `/`"));
    }
    s.host
        .explain(|view| scope_in(view, &q.path))
        .map(|r| Json(scope_json(&r)))
        .map_err(|e| {
            ApiProblem::about_sent(
                &e,
                &s.host.redactor(),
                &[&q.path],
                BAD_REQUEST,
                "the current generation has no scope of that `path`",
            )
        })
}

/// `[?agent=]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetsQuery {
    #[serde(default)]
    agent: Option<String>,
}

/// `GET /v1/explain/budgets`.
pub async fn budgets(
    State(s): State<Served>,
    RawQuery(q): RawQuery,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q: BudgetsQuery = query(q.as_deref(), "`?agent=NAME` or nothing")?;
    s.host
        .explain(|view| budgets_in(view, q.agent.as_deref()))
        .map(|agents| Json(budgets_json(&agents)))
        .map_err(|e| {
            ApiProblem::about_sent(
                &e,
                &s.host.redactor(),
                &[q.agent.as_deref().unwrap_or("")],
                BAD_REQUEST,
                "the current generation declares no agent of that name",
            )
            .with_help("`GET /v1/status` lists the agents served")
        })
}

/// `?from=&to=[&include_unchanged=]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffQuery {
    from: String,
    to: String,
    #[serde(default)]
    include_unchanged: bool,
}

/// `GET /v1/diff`: `chassis diff generations FROM TO --format json`
/// between two stored generations of this composition.
pub async fn diff(
    State(s): State<Served>,
    RawQuery(q): RawQuery,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q: DiffQuery = query(q.as_deref(), "`?from=gen_0001&to=gen_0002`")?;
    s.host
        .diff(q.from, q.to, q.include_unchanged)
        .await
        .map(Json)
        .map_err(|e| stored_problem(&s, &e, &[], "serve::unknown-generation"))
}

/// `?from=&to=&entry=`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReuseQuery {
    from: String,
    to: String,
    entry: String,
}

/// `GET /v1/explain/reuse`: `chassis explain reuse FROM TO ENTRY --format
/// json` between two stored generations of this composition.
pub async fn reuse(
    State(s): State<Served>,
    RawQuery(q): RawQuery,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q: ReuseQuery = query(q.as_deref(), "`?from=gen_0001&to=gen_0002&entry=ENTRY`")?;
    s.host
        .reuse(q.from, q.to, q.entry.clone())
        .await
        .map(Json)
        .map_err(|e| stored_problem(&s, &e, &[&q.entry], "serve::unknown-node"))
}

/// The problem of a read of stored generations: a generation the store
/// does not have is a 404; so is `missing`, what other unusable input
/// without a code of its own means once the ids were checked (for
/// `reuse`, a node neither generation has, `entry` among `sent`). Neither
/// echoes what was sent (see [`ApiProblem::about_sent`]).
fn stored_problem(
    s: &Served,
    e: &crate::app::AppError,
    sent: &[&str],
    missing: &'static str,
) -> ApiProblem {
    let redactor = s.host.redactor();
    let code = match e {
        crate::app::AppError::Problem(x) => x.code,
        _ => return ApiProblem::from_app(e, &redactor),
    };
    match code {
        Some("store::unknown-generation") => ApiProblem::new(
            StatusCode::NOT_FOUND,
            "serve::unknown-generation",
            "`from` or `to` names no generation of this composition",
        )
        .with_help("`GET /v1/generations` lists them"),
        None if e.kind() == crate::app::ErrorKind::Input => ApiProblem::about_sent(
            e,
            &redactor,
            sent,
            (StatusCode::NOT_FOUND, missing),
            "neither generation has a node of that `entry`",
        ),
        _ => ApiProblem::from_app(e, &redactor),
    }
}
