//! `GET /v1/explain/{requirement,scope,budgets}`: the documents of
//! `chassis explain … --format json`, for the generation current now;
//! `GET /v1/explain/reuse` and `GET /v1/diff` between two stored
//! generations of this composition.

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
        .map_err(|e| stored_problem(&s, &e, "serve::unknown-generation"))
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
    q: Result<Query<ReuseQuery>, QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let q = query(q, "`?from=gen_0001&to=gen_0002&entry=ENTRY`")?;
    s.host
        .reuse(q.from, q.to, q.entry)
        .await
        .map(Json)
        .map_err(|e| stored_problem(&s, &e, "serve::unknown-node"))
}

/// The problem of a read of stored generations: a generation the store
/// does not have is a 404; so is `missing`, what other unusable input
/// without a code of its own means once the ids were checked (for
/// `reuse`, a node neither generation has).
fn stored_problem(s: &Served, e: &crate::app::AppError, missing: &'static str) -> ApiProblem {
    let p = ApiProblem::from_app(e, &s.host.redactor());
    let code = match e {
        crate::app::AppError::Problem(x) => x.code,
        _ => return p,
    };
    match code {
        Some("store::unknown-generation") => {
            p.with_status(StatusCode::NOT_FOUND, "serve::unknown-generation")
        }
        None if p.is_status(StatusCode::BAD_REQUEST) => {
            p.with_status(StatusCode::NOT_FOUND, missing)
        }
        _ => p,
    }
}
