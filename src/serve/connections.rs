//! The accept loop and the connections of `chassis serve`.
//!
//! Why not `axum::serve`: it sets no header read timeout (a client that
//! sends half a request line holds its connection for ever), and its
//! graceful shutdown waits for every connection to close — a stalled one
//! too, past any drain. Here each connection is HTTP/1 with
//! `read_timeout` to send its headers (an idle keep-alive connection is
//! closed after it too) and between the chunks of a body; a stop stops
//! accepting and asks every connection to close once its answer is sent;
//! runs in flight get until `cancelled`; then every connection still open
//! is closed.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::serve::Listener;
use futures_util::StreamExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::{Access, Served, router};

/// Once runs are cancelled: how long they get to end (and be recorded).
const RUNS_GRACE: Duration = Duration::from_secs(5);

/// Then: how long connections get to send the answers of cancelled runs
/// before every connection still open is closed.
const FLUSH_GRACE: Duration = Duration::from_millis(500);

/// Serve `served` behind `access` on `listener` until `stop` resolves:
/// then accept no more, close each connection once its answer is sent,
/// and wait for the runs in flight — until `cancelled` resolves (the
/// drain's end, a second signal), after which the cancelled runs get a
/// moment to end and every connection still open is closed.
pub async fn serve<L: Listener>(
    mut listener: L,
    served: Served,
    access: Access,
    stop: impl Future<Output = ()>,
    cancelled: impl Future<Output = ()>,
) {
    let read_timeout = served.limits.read_timeout;
    let app = router(served.clone(), access);
    // Dropped at the stop: each connection then closes after its answer.
    let (stopping, stopped) = watch::channel(());
    let mut connections = JoinSet::new();
    let mut stop = pin!(stop);
    loop {
        tokio::select! {
            (io, _) = listener.accept() => {
                connections.spawn(connection(io, app.clone(), read_timeout, stopped.clone()));
            }
            // Reap the connections that ended, so the set stays small.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = &mut stop => break,
        }
    }
    drop(listener);
    drop(stopping);
    let drained = async {
        while connections.join_next().await.is_some() {}
        // A run whose client went away goes on without a connection.
        served.runs_ended().await;
    };
    let cancelled = tokio::select! {
        () = drained => false,
        () = cancelled => true,
    };
    if cancelled {
        // Cancelled runs are recorded, then answered.
        let _ = tokio::time::timeout(RUNS_GRACE, served.runs_ended()).await;
        let _ = tokio::time::timeout(FLUSH_GRACE, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
    }
    // What is still open is stalled: closed.
    connections.shutdown().await;
}

/// One HTTP/1 connection, until it ends or — after `stopped` changes or
/// closes — its answer in progress is sent.
async fn connection<I>(
    io: I,
    app: axum::Router,
    read_timeout: Duration,
    mut stopped: watch::Receiver<()>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(read_timeout);
    let conn = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(app));
    let mut conn = pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stopped.changed() => conn.as_mut().graceful_shutdown(),
    }
    let _ = conn.await;
}

/// A request body that stalls — no bytes for `read_timeout` — fails its
/// read (a 400 from the handler reading it), so a slow client cannot hold
/// a connection with half a body either.
pub async fn body_deadline(
    State(read_timeout): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let chunks =
        futures_util::stream::unfold(Some(body.into_data_stream()), move |body| async move {
            let mut body = body?;
            match tokio::time::timeout(read_timeout, body.next()).await {
                Ok(Some(chunk)) => Some((chunk, Some(body))),
                Ok(None) => None,
                Err(_) => Some((Err(axum::Error::new(Stalled(read_timeout))), None)),
            }
        });
    next.run(Request::from_parts(parts, Body::from_stream(chunks)))
        .await
}

/// A body that stopped arriving.
#[derive(Debug)]
struct Stalled(Duration);

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body stalled: nothing arrived for {} s",
            self.0.as_secs_f64()
        )
    }
}

impl std::error::Error for Stalled {}
