//! What a server tells without running anything: health, status, the
//! store's generations; and `POST /v1/reload`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use crate::app::documents::{generation_json, generations_json};
use crate::app::history::Listing;
use crate::app::host::ReloadStatus;
use crate::app::state::CompositionRef;

use super::Served;
use super::problem::ApiProblem;

/// `GET /healthz`: the process answers and has a generation to run on.
pub async fn healthz(State(s): State<Served>) -> Result<Json<serde_json::Value>, ApiProblem> {
    match s.host.current() {
        Some(g) => Ok(Json(
            serde_json::json!({ "format_version": 1, "status": "ok", "generation_id": g.id.to_string() }),
        )),
        None => Err(ApiProblem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "serve::no-generation",
            "no generation is current (the server is stopping)",
        )),
    }
}

fn reload_json(r: &ReloadStatus) -> serde_json::Value {
    serde_json::json!({
        "at": r.at,
        "ok": r.ok,
        "published": r.published,
        "generation_id": r.generation_id,
        "error": r.error,
        "diagnostics": r.diagnostics,
    })
}

/// `GET /v1/status`: the current generation, the live ones (with their
/// leases), the last reload and its findings.
pub async fn status(State(s): State<Served>) -> Json<serde_json::Value> {
    let current = s.host.current();
    let live: Vec<serde_json::Value> = s
        .host
        .live_generations()
        .iter()
        .map(|g| {
            serde_json::json!({
                "id": g.id.to_string(),
                "state": g.state().as_str(),
                "leases": g.leases(),
            })
        })
        .collect();
    Json(serde_json::json!({
        "format_version": 1,
        "composition": s.host.file().display().to_string(),
        "store": s.host.store_path().display().to_string(),
        "uptime_seconds": s.started.elapsed().as_secs_f64(),
        "current": current.as_ref().map(|g| serde_json::json!({
            "id": g.id.to_string(),
            "digest": g.digests.digest,
            "semantic_digest": g.digests.semantic_digest,
            "agents": g.composition.agents.keys().collect::<Vec<_>>(),
        })),
        "live_generations": live,
        "runs_in_flight": s.limits.concurrent_runs - s.runs.available_permits(),
        "last_reload": s.host.last_reload().as_ref().map(reload_json),
    }))
}

/// `GET /v1/generations`: this composition's generations, as
/// `chassis generations list --format json` prints them.
pub async fn generations(State(s): State<Served>) -> Result<Json<serde_json::Value>, ApiProblem> {
    let redactor = s.host.redactor();
    s.host
        .read_store(|store| {
            let items = store.list(Some(store.lineage()))?;
            Ok(generations_json(&Listing {
                store: store.path().to_path_buf(),
                items,
            }))
        })
        .await
        .map(Json)
        .map_err(|e| ApiProblem::from_app(&e, &redactor))
}

/// `GET /v1/generations/{id}`: one generation with its snapshot, as
/// `chassis generations show --format json` prints it.
pub async fn generation(
    State(s): State<Served>,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Json<serde_json::Value>, ApiProblem> {
    let id = super::input::path_param(id)?;
    let redactor = s.host.redactor();
    s.host
        .read_store(move |store| {
            let lineage = CompositionRef::Name(store.lineage().to_owned());
            let g = store.generation(&id, Some(&lineage))?;
            Ok(generation_json(&g))
        })
        .await
        .map(Json)
        .map_err(|e| {
            // The id is not echoed (see `ApiProblem::about_sent`), nor what
            // the store holds besides.
            if e.kind() == crate::app::ErrorKind::Input
                && !matches!(e, crate::app::AppError::Store(_))
            {
                ApiProblem::new(
                    StatusCode::NOT_FOUND,
                    "serve::unknown-generation",
                    "this composition has no generation of that id",
                )
                .with_help("ids look like `gen_0001`; `GET /v1/generations` lists them")
            } else {
                ApiProblem::from_app(&e, &redactor)
            }
        })
}

/// `POST /v1/reload`: read the composition again and publish what
/// changed; a reload that fails keeps the current generation and answers
/// 422 with its findings.
pub async fn reload(State(s): State<Served>) -> Result<Json<serde_json::Value>, ApiProblem> {
    let r = s.host.reload().await;
    if let Some(log) = &s.reload_log {
        log(&r);
    }
    if r.ok {
        let mut doc = reload_json(&r);
        doc["format_version"] = 1.into();
        Ok(Json(doc))
    } else {
        Err(ApiProblem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "serve::reload-failed",
            r.error.clone().unwrap_or_default(),
        )
        .with_help(format!(
            "generation {} is still served; fix the composition and reload again",
            r.generation_id
        ))
        .with_diagnostics(r.diagnostics))
    }
}
