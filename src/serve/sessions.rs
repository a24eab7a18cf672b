//! `GET` and `DELETE /v1/sessions/{id}`: a conversation's turns (which
//! run and generation answered each) and its messages as the model saw
//! them, redacted.

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::Served;
use super::input::path_param;
use super::problem::ApiProblem;

fn unknown() -> ApiProblem {
    ApiProblem::new(
        StatusCode::NOT_FOUND,
        "serve::unknown-session",
        "no session of that id",
    )
    .with_help(
        "a session starts with a run that names it: `{\"input\": \"…\", \"session\": \"ID\"}`",
    )
}

/// `GET /v1/sessions/{id}`.
pub async fn show(
    State(s): State<Served>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let id = path_param(id)?;
    let redactor = s.host.redactor();
    let session = s
        .host
        .session(&id)
        .await
        .map_err(|e| ApiProblem::from_app(&e, &redactor))?
        .ok_or_else(unknown)?;
    Ok(Json(serde_json::json!({
        "format_version": 1,
        "id": session.id,
        "agent": session.agent,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
        "turns": session.transcript["turns"],
        "messages": session.transcript["messages"],
    })))
}

/// `DELETE /v1/sessions/{id}`: 204, or 404 when there is none.
pub async fn delete(
    State(s): State<Served>,
    id: Result<Path<String>, PathRejection>,
) -> Result<StatusCode, ApiProblem> {
    let id = path_param(id)?;
    match s.host.delete_session(&id).await {
        Ok(true) => Ok(StatusCode::NO_CONTENT),
        Ok(false) => Err(unknown()),
        Err(e) => Err(ApiProblem::from_app(&e, &s.host.redactor())),
    }
}
