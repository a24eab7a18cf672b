//! Runs over HTTP: `POST /v1/agents/{agent}/runs` (a JSON document, or
//! Server-Sent Events while it runs; a `202` when a run waits for an
//! approval), `GET /v1/runs[/{id}]`.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::app::approval_desk::{OnQuestion, PendingApproval};
use crate::app::host::{Host, HostRun, HostRunRequest};
use crate::engine::budget::{BudgetDimension, BudgetError, BudgetLimits};
use crate::runtime::agent::{AgentEvent, Streaming};

use super::Served;
use super::input::{json_body, path_param, query};
use super::problem::ApiProblem;

/// The body of `POST /v1/agents/{agent}/runs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunBody {
    input: String,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    session: Option<String>,
    /// A request-tools file's TOML: `command` entries this run brings.
    #[serde(default)]
    request_tools: Option<String>,
    /// Limits of this run by dimension (`model_calls`, `tokens`, …): each
    /// only tightens the agent's.
    #[serde(default)]
    budget: BTreeMap<String, f64>,
}

/// The request's budget caps, or a problem naming the first bad one.
fn caps(budget: &BTreeMap<String, f64>) -> Result<BudgetLimits, ApiProblem> {
    let mut pairs = Vec::with_capacity(budget.len());
    for (name, value) in budget {
        let Some(dimension) = BudgetDimension::from_name(name) else {
            // The name is not echoed (see `input`).
            return Err(ApiProblem::new(
                StatusCode::BAD_REQUEST,
                "serve::bad-budget",
                "`budget` names a dimension chassis does not know",
            )
            .with_help(format!(
                "its dimensions: {}",
                BudgetDimension::ALL.map(BudgetDimension::as_str).join(", ")
            )));
        };
        pairs.push((dimension, *value));
    }
    BudgetLimits::new(pairs).map_err(|e| {
        // Said without the value sent.
        let detail = match e {
            BudgetError::InvalidLimit {
                dimension, reason, ..
            } => format!("`budget`'s `{dimension}` cap {reason}"),
            BudgetError::DuplicateLimit { dimension } => {
                format!("`budget` caps `{dimension}` more than once")
            }
            _ => "`budget` is not a set of caps".to_owned(),
        };
        ApiProblem::new(StatusCode::BAD_REQUEST, "serve::bad-budget", detail)
            .with_help("a cap is a positive number (a whole one for counts); it only tightens the agent's budget")
    })
}

fn parse_body(body: Result<Bytes, BytesRejection>) -> Result<RunBody, ApiProblem> {
    json_body(
        body,
        "a run request",
        "send `{\"input\": \"…\"}`, with `\"stream\": true` for Server-Sent Events",
    )
}

fn wants_stream(body: &RunBody, headers: &HeaderMap) -> bool {
    body.stream
        || headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/event-stream"))
}

/// `POST /v1/agents/{agent}/runs`.
pub async fn create(
    State(s): State<Served>,
    agent: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let agent = match path_param(agent) {
        Ok(a) => a,
        Err(p) => return p.into_response(),
    };
    let body = match parse_body(body) {
        Ok(b) => b,
        Err(p) => return p.into_response(),
    };
    if !s.host.has_agent(&agent) {
        let p = ApiProblem::new(
            StatusCode::NOT_FOUND,
            "serve::unknown-agent",
            // The name is not echoed: a reply that redacts it would tell a
            // client its guess is a secret's value.
            "the current generation has no agent of that name".to_owned(),
        )
        .with_help("`GET /v1/status` lists the agents served");
        return p.into_response();
    }
    let Ok(permit) = Arc::clone(&s.runs).try_acquire_owned() else {
        return ApiProblem::new(
            StatusCode::TOO_MANY_REQUESTS,
            "serve::too-many-runs",
            format!("{} runs are in flight already", s.limits.concurrent_runs),
        )
        .retry_after(1)
        .into_response();
    };
    let budget = match caps(&body.budget) {
        Ok(b) => b,
        Err(p) => return p.into_response(),
    };
    let request_tools = match body
        .request_tools
        .as_deref()
        .map(|t| s.host.request_tools(t))
    {
        None => None,
        Some(Ok(tools)) => Some(tools),
        Some(Err(refused)) => {
            let refused = *refused;
            return ApiProblem::from_app(&refused.error, &s.host.redactor())
                .with_diagnostics(refused.diagnostics)
                .into_response();
        }
    };
    let stream = wants_stream(&body, &headers);
    // The session is claimed here, before a stream opens: a bad id (400),
    // a session busy or of another agent (409) is a problem document, as
    // it is for a run that is not streamed.
    let session = match body.session {
        None => None,
        Some(id) => match s.host.claim_session(id, &agent).await {
            Ok(claimed) => Some(claimed),
            Err(e) => return ApiProblem::from_app(&e, &s.host.redactor()).into_response(),
        },
    };
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    // A call waiting for approval: an event on a stream; otherwise the
    // answer becomes a `202` with the run to poll.
    let (asked_tx, mut asked) = mpsc::unbounded_channel::<String>();
    let on_approval: OnQuestion = if stream {
        let tx = tx.clone();
        Arc::new(move |p: &PendingApproval| {
            let _ = tx.send(json_event(
                "approval_requested",
                &serde_json::to_value(p).unwrap_or_default(),
            ));
        })
    } else {
        Arc::new(move |p: &PendingApproval| {
            let _ = asked_tx.send(p.run_id.clone());
        })
    };
    let model_failed_help = model_failed_help(&agent);
    let request = HostRunRequest {
        agent,
        session,
        input: body.input,
        // A streamed run takes the answer's text as it is generated too.
        observer: stream.then(|| {
            let tx = tx.clone();
            Arc::new(Streaming(move |e: &AgentEvent| {
                let _ = tx.send(agent_event(e));
            })) as Arc<dyn crate::runtime::agent::AgentObserver>
        }),
        on_approval: Some(on_approval),
        budget,
        request_tools,
    };
    // The run is a task of its own: a client that goes away does not
    // cancel it, and it is recorded either way.
    let host = s.host.clone();
    let redactor = host.redactor();
    let task = tokio::spawn(async move {
        let outcome = host.run(request).await;
        drop(permit);
        outcome
    });
    if !stream {
        drop(tx);
        let mut task = task;
        let done = tokio::select! {
            done = &mut task => done,
            Some(run_id) = asked.recv() => {
                // The run goes on and waits; the client polls it and
                // answers at `POST /v1/runs/{id}/approvals`.
                let Some(run) = s.host.run_of(&run_id) else {
                    return ApiProblem::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "serve::failed",
                        "the run waiting for approval is not in the book",
                    )
                    .into_response();
                };
                let mut doc = run_json(&s.host, &run);
                doc["format_version"] = 1.into();
                return (
                    StatusCode::ACCEPTED,
                    [(header::LOCATION, format!("/v1/runs/{run_id}"))],
                    Json(doc),
                )
                    .into_response();
            }
        };
        return match done {
            Ok(Ok(document)) => Json(document).into_response(),
            Ok(Err(e)) => ApiProblem::from_app(&e, &redactor).into_response(),
            Err(e) => ApiProblem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "serve::failed",
                format!("the run stopped: {e}"),
            )
            .into_response(),
        };
    }
    tokio::spawn(async move {
        let last = match task.await {
            Ok(Ok(document)) => {
                // A model that failed (a stream cut mid-answer, say) is an
                // `error` event too, before the run's document.
                let stop = stop_of(&document);
                if stop["kind"] == "model_failed" {
                    let _ = tx.send(json_event(
                        "error",
                        &serde_json::json!({
                            "type": "https://chassis.dev/problems/serve/model-failed",
                            "title": "The model failed",
                            "status": 502,
                            "code": "serve::model-failed",
                            "detail": stop["error"],
                            "help": model_failed_help,
                            "diagnostics": [],
                        }),
                    ));
                }
                Event::default().event("result").data(document.get())
            }
            Ok(Err(e)) => json_event("error", &ApiProblem::from_app(&e, &redactor).to_json()),
            Err(e) => json_event(
                "error",
                &ApiProblem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "serve::failed",
                    format!("the run stopped: {e}"),
                )
                .to_json(),
            ),
        };
        let _ = tx.send(last);
    });
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// What a client can do about a model that failed in a run of `agent`
/// (a name the composition holds: it was checked before the run).
fn model_failed_help(agent: &str) -> [String; 2] {
    [
        format!(
            "check the model entry this agent uses — its `model`, `base_url` and API key for `openai`, its turns for `scripted`: `GET /v1/explain/requirement?consumer=/agents/{agent}&capability=model` names it (`chassis explain requirement /agents/{agent} model FILE` on the command line)"
        ),
        "the run is recorded as `failed` (its document follows as `result`); send the request again to retry it".to_owned(),
    ]
}

/// A step event (already redacted by the runner) as an SSE event named by
/// its kind (`model_call_started`, `tool_call_finished`, …).
fn agent_event(e: &AgentEvent) -> Event {
    let value = serde_json::to_value(e).unwrap_or_default();
    let name = value
        .get("event")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("step")
        .to_owned();
    json_event(&name, &value)
}

/// A run document's `stop` (what the stream says first when the model
/// failed).
fn stop_of(document: &serde_json::value::RawValue) -> serde_json::Value {
    #[derive(serde::Deserialize)]
    struct Stop {
        #[serde(default)]
        stop: serde_json::Value,
    }
    serde_json::from_str::<Stop>(document.get()).map_or(serde_json::Value::Null, |d| d.stop)
}

fn json_event(name: &str, data: &serde_json::Value) -> Event {
    Event::default().event(name).data(data.to_string())
}

/// A run this server knows. A running run that waits for approval is
/// `awaiting_approval`, with the calls it waits on.
fn run_json(host: &Host, r: &HostRun) -> serde_json::Value {
    let pending = if r.finished_at.is_none() {
        host.pending_approvals(&r.run_id).unwrap_or_default()
    } else {
        Vec::new()
    };
    let status = if pending.is_empty() {
        r.status
    } else {
        "awaiting_approval"
    };
    serde_json::json!({
        "run_id": r.run_id,
        "agent": r.agent,
        "generation_id": r.generation_id,
        "status": status,
        "started_at": r.started_at,
        "finished_at": r.finished_at,
        "pending_approvals": pending,
        "result": r.document.as_deref(),
    })
}

/// `GET /v1/runs/{id}`: a run this server knows (running, or among the
/// last 1,024 finished, with its document), else the store's record.
pub async fn show(
    State(s): State<Served>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let id = path_param(id)?;
    if let Some(r) = s.host.run_of(&id) {
        let mut doc = run_json(&s.host, &r);
        doc["format_version"] = 1.into();
        return Ok(Json(doc));
    }
    let stored = s
        .host
        .read_store(move |store| store.run(&id))
        .await
        .map_err(|_| {
            // The id is not echoed (see `create`).
            ApiProblem::new(
                StatusCode::NOT_FOUND,
                "serve::unknown-run",
                "no run of that id in this server or its store",
            )
        })?;
    Ok(Json(serde_json::json!({
        "format_version": 1,
        "run_id": stored.id,
        "agent": stored.agent,
        "generation_id": stored.generation_id,
        "status": stored.status,
        "started_at": stored.started_at,
        "finished_at": stored.finished_at,
        "pending_approvals": [],
        "result": null,
    })))
}

/// `?limit=&after=` of `GET /v1/runs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Page {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    after: Option<String>,
}

/// `GET /v1/runs`: the runs this server knows, newest first (at most
/// `limit`, default 50, at most 1,000; those after run `after`).
pub async fn list(
    State(s): State<Served>,
    RawQuery(page): RawQuery,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let page: Page = query(
        page.as_deref(),
        "`?limit=N&after=RUN_ID`: `limit` a whole number, `after` a run id",
    )?;
    let limit = page.limit.unwrap_or(50).min(1000);
    let Some(runs) = s.host.runs(limit, page.after.as_deref()) else {
        // A run it does not know is a 404, as at `GET /v1/runs/{id}`; the
        // id is not echoed (see `create`).
        return Err(ApiProblem::new(
            StatusCode::NOT_FOUND,
            "serve::unknown-run",
            "`after` names no run this server knows",
        )
        .with_help("page with the `next` of the previous page; a server keeps its last 1,024 finished runs"));
    };
    Ok(Json(serde_json::json!({
        "format_version": 1,
        "runs": runs.iter().map(|r| run_json(&s.host, r)).collect::<Vec<_>>(),
        "next": (runs.len() == limit).then(|| runs.last().map(|r| r.run_id.clone())).flatten(),
    })))
}
