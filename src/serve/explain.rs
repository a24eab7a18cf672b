//! `GET /v1/explain/{requirement,scope,budgets}`: the documents of
//! `chassis explain … --format json`, for the generation current now.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use crate::app::explain::{budgets_in, requirement_in, scope_in};
use crate::app::explain_documents::{budgets_json, requirement_json, scope_json};

use super::Served;
use super::problem::ApiProblem;

fn query<T>(q: Result<Query<T>, QueryRejection>, expected: &str) -> Result<T, ApiProblem> {
    q.map(|Query(v)| v).map_err(|e| {
        ApiProblem::new(StatusCode::BAD_REQUEST, "serve::bad-request", e.body_text())
            .with_help(format!("expected {expected}"))
    })
}

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
    q: Result<Query<RequirementQuery>, QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q = query(q, "`?consumer=ENTRY&capability=NAME`")?;
    s.host
        .explain(|view| requirement_in(view, &q.consumer, &q.capability, q.scope.as_deref()))
        .map(|r| Json(requirement_json(&r)))
        .map_err(|e| ApiProblem::from_app(&e, &s.host.redactor()))
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
    q: Result<Query<ScopeQuery>, QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q = query(q, "`?path=/a/scope`")?;
    s.host
        .explain(|view| scope_in(view, &q.path))
        .map(|r| Json(scope_json(&r)))
        .map_err(|e| ApiProblem::from_app(&e, &s.host.redactor()))
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
    q: Result<Query<BudgetsQuery>, QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q = query(q, "`?agent=NAME` or nothing")?;
    s.host
        .explain(|view| budgets_in(view, q.agent.as_deref()))
        .map(|agents| Json(budgets_json(&agents)))
        .map_err(|e| ApiProblem::from_app(&e, &s.host.redactor()))
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
    q: Result<Query<DiffQuery>, QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q = query(q, "`?from=gen_0001&to=gen_0002`")?;
    s.host
        .diff(q.from, q.to, q.include_unchanged)
        .await
        .map(Json)
        .map_err(|e| {
            let p = ApiProblem::from_app(&e, &s.host.redactor());
            // The ids were checked: unusable input without a code of its
            // own is a generation the store does not have.
            let uncoded = matches!(&e, crate::app::AppError::Problem(x) if x.code.is_none());
            if p.is_status(StatusCode::BAD_REQUEST) && uncoded {
                p.with_status(StatusCode::NOT_FOUND, "serve::unknown-generation")
            } else {
                p
            }
        })
}
