//! `POST /v1/runs/{id}/approvals`: a client answers the tool calls a run
//! waits on — one call by its `approval_id`, or every call of a `tool` in
//! this run (those waiting and those to come).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use crate::app::approval_desk::{DeskError, Target, Verdict};

use super::Served;
use super::input::{json_body, path_param};
use super::problem::ApiProblem;

/// The body: exactly one of `approval_id` and `tool`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    #[serde(default)]
    approval_id: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    decision: Verdict,
    /// What the model is told of a refusal.
    #[serde(default)]
    reason: Option<String>,
}

const USAGE: &str = "send `{\"approval_id\": \"apr_…\", \"decision\": \"approve\"}` for one call, or `{\"tool\": \"NAME\", \"decision\": \"deny\", \"reason\": \"…\"}` for every call of a tool in this run";

fn parse(body: Result<Bytes, BytesRejection>) -> Result<(Target, AnswerBody), ApiProblem> {
    let body: AnswerBody = json_body(body, "an approval answer", USAGE)?;
    let target = match (&body.approval_id, &body.tool) {
        (Some(id), None) => Target::Call(id.clone()),
        (None, Some(tool)) => Target::Tool(tool.clone()),
        _ => {
            return Err(ApiProblem::new(
                StatusCode::BAD_REQUEST,
                "serve::bad-request",
                "name exactly one of `approval_id` and `tool`",
            )
            .with_help(USAGE));
        }
    };
    Ok((target, body))
}

/// `POST /v1/runs/{id}/approvals`.
pub async fn answer(
    State(s): State<Served>,
    id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let run_id = path_param(id)?;
    let (target, body) = parse(body)?;
    match s
        .host
        .answer_approvals(&run_id, &target, body.decision, body.reason)
    {
        Ok(decided) => Ok(Json(serde_json::json!({
            "format_version": 1,
            "run_id": run_id,
            "decided": decided,
            // A tool answer also holds for the run's later calls of it.
            "rule": body.tool.map(|tool| serde_json::json!({"tool": tool, "decision": body.decision})),
            "pending_approvals": s.host.pending_approvals(&run_id).unwrap_or_default(),
        }))),
        Err(DeskError::UnknownApproval) => Err(unknown_approval()),
        Err(DeskError::NotOpen) => Err(match s.host.run_of(&run_id) {
            Some(run) if run.finished_at.is_none() => unknown_approval(),
            Some(run) if run.finished_at.is_some() => ApiProblem::new(
                StatusCode::CONFLICT,
                "serve::run-finished",
                format!(
                    "the run finished ({}); nothing waits for an answer",
                    run.status
                ),
            ),
            // The id is not echoed (see `runs::create`).
            _ => ApiProblem::new(
                StatusCode::NOT_FOUND,
                "serve::unknown-run",
                "no run of that id is running in this server",
            ),
        }),
    }
}

fn unknown_approval() -> ApiProblem {
    ApiProblem::new(
        StatusCode::NOT_FOUND,
        "serve::unknown-approval",
        "the run waits on no call of that approval id",
    )
    .with_help(
        "`GET /v1/runs/{id}` lists the calls it waits on; an answered or expired call is gone",
    )
}
