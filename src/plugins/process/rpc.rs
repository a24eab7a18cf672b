//! JSON-RPC 2.0 over a child's stdin and stdout, one message per line.
//!
//! Why it exists: the plugin protocol is symmetric — both sides send
//! requests, chassis may have several in flight to one process — and a
//! misbehaving plugin must never hang or crash chassis. One writer task
//! owns stdin (so a request dropped on its deadline can still send
//! `$/cancel` from `Drop`), one reader task owns stdout and routes each
//! line: a response to the request waiting for it, a request from the
//! plugin to [`Connection::serve`]'s handler (unknown methods get
//! −32601). A line that is not a JSON-RPC message, or longer than
//! [`MAX_MESSAGE_BYTES`], is a protocol violation: the connection closes
//! and every waiting request fails with the reason. stderr is logged,
//! redacted, and its last lines are kept for error messages.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::protocol::{MAX_MESSAGE_BYTES, code, method};
use crate::engine::secret::Redactor;
use crate::runtime::Cancellation;

/// How many stderr lines are kept for error messages.
const STDERR_LINES: usize = 20;

/// How long, once the process closed its stdout, its stderr is read to the
/// end and its exit is waited for before the requests waiting on it fail:
/// what they are told then says how it ended and what it said last.
pub const ENDING_GRACE: Duration = Duration::from_millis(500);

/// How the process behind a connection ended, asked once when it closed
/// its stdout: "exited with code 7", "was ended by signal 9 (SIGKILL)";
/// `None` when it has not ended (within [`ENDING_GRACE`]) or cannot tell.
pub type Ending =
    Box<dyn FnOnce() -> crate::runtime::BoxFuture<'static, Option<String>> + Send + Sync>;

/// Why a request got no result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RpcError {
    /// The plugin answered with an error.
    #[error("{message} (JSON-RPC error {code})")]
    Remote {
        /// JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The connection is gone (exit, crash, protocol violation).
    #[error("{0}")]
    Closed(String),
    /// No answer within the deadline (the request was cancelled).
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The caller cancelled (the request was cancelled in the plugin too).
    #[error("cancelled")]
    Cancelled,
    /// The request could not be sent.
    #[error("{0}")]
    Send(String),
}

/// Why a typed call ([`Connection::call`]) got no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No result (see [`RpcError`]).
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// A result of the wrong shape.
    #[error("answered `{method}` with the wrong shape: {error}")]
    Shape {
        /// The method.
        method: String,
        /// What did not fit.
        error: serde_json::Error,
    },
}

type Reply = Result<Value, RpcError>;

#[derive(Default)]
struct State {
    pending: BTreeMap<u64, oneshot::Sender<Reply>>,
    /// Set once, when the connection closed: why.
    closed: Option<String>,
    /// How the process ended, when it closed its stdout by ending.
    ended: Option<String>,
    stderr: VecDeque<String>,
    /// The plugin's own requests chassis is answering, by their id (as JSON).
    serving: BTreeMap<String, tokio::task::AbortHandle>,
}

/// A handler for requests the plugin sends: method and params to a
/// result or a JSON-RPC error `(code, message)`.
pub type Handler = Arc<
    dyn Fn(String, Value) -> crate::runtime::BoxFuture<'static, Result<Value, (i64, String)>>
        + Send
        + Sync,
>;

/// One connection to a plugin process.
pub struct Connection {
    out: mpsc::UnboundedSender<String>,
    state: Arc<Mutex<State>>,
    next_id: AtomicU64,
    /// Set after `initialize` when the plugin declares `max_concurrency`.
    limit: std::sync::OnceLock<Arc<Semaphore>>,
    closed: Arc<tokio::sync::Notify>,
    /// The task reading stderr, until it ended.
    stderr_task: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn close(state: &Mutex<State>, notify: &tokio::sync::Notify, reason: String) {
    let (pending, serving) = {
        let mut s = lock(state);
        if s.closed.is_none() {
            s.closed = Some(reason);
        }
        (
            std::mem::take(&mut s.pending),
            std::mem::take(&mut s.serving),
        )
    };
    for task in serving.into_values() {
        task.abort();
    }
    let reason = lock(state).closed.clone().unwrap_or_default();
    for (_, tx) in pending {
        let _ = tx.send(Err(RpcError::Closed(reason.clone())));
    }
    notify.notify_waiters();
}

/// Wait (at most `timeout`) until the stderr task in `task` reached its end.
async fn drain(task: &Mutex<Option<tokio::task::JoinHandle<()>>>, timeout: Duration) {
    let task = task.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(task) = task {
        let _ = tokio::time::timeout(timeout, task).await;
    }
}

/// Reads one line of at most `limit` bytes (without the newline); `None`
/// at end of input, `Err` when the line is longer.
async fn read_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    limit: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > limit + 1 {
            return Err(std::io::Error::other(format!(
                "a message longer than {limit} bytes"
            )));
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if done {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(line));
        }
    }
}

impl Connection {
    /// Start the reader, writer and stderr tasks over a child's pipes;
    /// `handler` answers the plugin's requests; `ending` tells how the
    /// process ended once its stdout closed.
    pub fn start(
        entry: &str,
        stdin: impl AsyncWrite + Unpin + Send + 'static,
        stdout: impl AsyncRead + Unpin + Send + 'static,
        stderr: Option<impl AsyncRead + Unpin + Send + 'static>,
        redactor: Redactor,
        handler: Handler,
        ending: Option<Ending>,
    ) -> Arc<Self> {
        let (out, mut rx) = mpsc::unbounded_channel::<String>();
        let state = Arc::new(Mutex::new(State::default()));
        let closed = Arc::new(tokio::sync::Notify::new());
        let conn = Arc::new(Self {
            out: out.clone(),
            state: Arc::clone(&state),
            next_id: AtomicU64::new(1),
            limit: std::sync::OnceLock::new(),
            closed: Arc::clone(&closed),
            stderr_task: Arc::new(Mutex::new(None)),
        });
        // Writer: one line per message, in order.
        {
            let (state, closed) = (Arc::clone(&state), Arc::clone(&closed));
            let mut stdin = stdin;
            tokio::spawn(async move {
                while let Some(line) = rx.recv().await {
                    let written = async {
                        stdin.write_all(line.as_bytes()).await?;
                        stdin.write_all(b"\n").await?;
                        stdin.flush().await
                    }
                    .await;
                    if let Err(e) = written {
                        close(&state, &closed, format!("its stdin closed ({e})"));
                        break;
                    }
                }
            });
        }
        if let Some(stderr) = stderr {
            let (state, entry, redactor) = (Arc::clone(&state), entry.to_owned(), redactor.clone());
            let task = tokio::spawn(async move {
                // Read to the end whatever it writes (bytes that are not
                // UTF-8, very long lines): a pipe left unread would block
                // or kill the plugin on its next write.
                let mut lines = crate::plugins::child_stderr::StderrLines::new(stderr, redactor);
                while let Some(line) = lines.next_line().await {
                    tracing::info!(target: "chassis::plugin::stderr", entry = %entry, "{line}");
                    let mut s = lock(&state);
                    if s.stderr.len() == STDERR_LINES {
                        s.stderr.pop_front();
                    }
                    s.stderr.push_back(line);
                }
            });
            *conn
                .stderr_task
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(task);
        }
        // Reader: route every line.
        {
            let (state, closed) = (Arc::clone(&state), Arc::clone(&closed));
            let redactor = redactor.clone();
            let stderr_task = Arc::clone(&conn.stderr_task);
            tokio::spawn(async move {
                let mut reader = tokio::io::BufReader::new(stdout);
                let reason = loop {
                    let line = match read_line(&mut reader, MAX_MESSAGE_BYTES).await {
                        Ok(Some(line)) => line,
                        Ok(None) => break ended(&state, &stderr_task, ending).await,
                        Err(e) => break format!("protocol violation: {e}"),
                    };
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match route(&line, &state, &out, &handler, &redactor) {
                        Ok(()) => {}
                        Err(why) => break format!("protocol violation: {why}"),
                    }
                };
                close(&state, &closed, reason);
            });
        }
        conn
    }

    /// Queue beyond `max` requests at once (from `initialize`).
    pub fn limit_concurrency(&self, max: u32) {
        let permits = usize::try_from(max.max(1)).unwrap_or(usize::MAX);
        let _ = self.limit.set(Arc::new(Semaphore::new(permits)));
    }

    /// Why the connection closed, if it did.
    pub fn closed_reason(&self) -> Option<String> {
        lock(&self.state).closed.clone()
    }

    /// Wait until the connection closes.
    pub async fn wait_closed(&self) {
        let notified = self.closed.notified();
        if self.closed_reason().is_some() {
            return;
        }
        notified.await;
    }

    /// How the process ended ("exited with code 7"), when the connection
    /// closed because it did.
    pub fn ended(&self) -> Option<String> {
        lock(&self.state).ended.clone()
    }

    /// Wait (at most `timeout`) until stderr reached its end: after the
    /// process died, its last lines are then in [`Self::last_stderr`].
    pub async fn stderr_drained(&self, timeout: Duration) {
        drain(&self.stderr_task, timeout).await;
    }

    /// The last lines the process wrote to stderr (redacted).
    pub fn last_stderr(&self) -> Vec<String> {
        lock(&self.state).stderr.iter().cloned().collect()
    }

    /// Send a notification.
    pub fn notify(&self, method: &str, params: Value) {
        let msg = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        let _ = self.out.send(msg.to_string());
    }

    /// [`Self::request`] with typed params and result.
    pub async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &impl serde::Serialize,
        timeout: Option<Duration>,
        cancel: Option<&Cancellation>,
    ) -> Result<T, CallError> {
        let params = serde_json::to_value(params).map_err(|error| CallError::Shape {
            method: method.to_owned(),
            error,
        })?;
        let reply = self.request(method, params, timeout, cancel).await?;
        serde_json::from_value(reply).map_err(|error| CallError::Shape {
            method: method.to_owned(),
            error,
        })
    }

    /// Send `method` and wait for its result, at most `timeout`, or until
    /// `cancel` fires; either sends `$/cancel` for it.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
        cancel: Option<&Cancellation>,
    ) -> Result<Value, RpcError> {
        // A queue for `max_concurrency` counts against the deadline and
        // yields to a cancellation like the call itself.
        let until = timeout.map(|t| tokio::time::Instant::now() + t);
        let _permit = match self.limit.get() {
            Some(s) => {
                let acquire = Arc::clone(s).acquire_owned();
                let waited = tokio::select! {
                    permit = acquire => permit.map_err(|_| RpcError::Closed("closed".into()))?,
                    () = cancelled_of(cancel) => return Err(RpcError::Cancelled),
                    () = sleep_until_of(until) => return Err(RpcError::Timeout(timeout.unwrap_or_default())),
                };
                Some(waited)
            }
            None => None,
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let text =
            json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
        if text.len() > MAX_MESSAGE_BYTES {
            return Err(RpcError::Send(format!(
                "the `{method}` request is {} bytes, over the protocol's {MAX_MESSAGE_BYTES}",
                text.len()
            )));
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut s = lock(&self.state);
            if let Some(reason) = &s.closed {
                return Err(RpcError::Closed(reason.clone()));
            }
            s.pending.insert(id, tx);
        }
        // Dropped before an answer (a deadline, a cancelled run, a dropped
        // future): the plugin hears `$/cancel`.
        let mut guard = Pending {
            conn: self,
            id: Some(id),
        };
        if self.out.send(text).is_err() {
            return Err(RpcError::Closed(
                self.closed_reason().unwrap_or_else(|| "closed".into()),
            ));
        }
        let cancelled = cancelled_of(cancel);
        let deadline = sleep_until_of(until);
        let out = tokio::select! {
            reply = rx => {
                guard.id = None;
                reply.unwrap_or_else(|_| Err(RpcError::Closed(
                    self.closed_reason().unwrap_or_else(|| "closed".into()),
                )))
            }
            () = cancelled => Err(RpcError::Cancelled),
            () = deadline => Err(RpcError::Timeout(timeout.unwrap_or_default())),
        };
        drop(guard);
        out
    }
}

/// Why the connection closes when the process closed its stdout: how the
/// process ended (recorded in `state`) once its stderr reached its end —
/// both waited for [`ENDING_GRACE`] at most — so that what the requests
/// waiting on it are told, and its last stderr lines, are complete.
async fn ended(
    state: &Mutex<State>,
    stderr_task: &Mutex<Option<tokio::task::JoinHandle<()>>>,
    ending: Option<Ending>,
) -> String {
    let Some(ending) = ending else {
        return "it closed its stdout (the process exited?)".to_owned();
    };
    let (how, ()) = tokio::join!(
        async {
            tokio::time::timeout(ENDING_GRACE, ending())
                .await
                .ok()
                .flatten()
        },
        drain(stderr_task, ENDING_GRACE)
    );
    match how {
        Some(how) => {
            lock(state).ended = Some(how.clone());
            format!("the process {how}")
        }
        None => "it closed its stdout".to_owned(),
    }
}

/// Fires when `cancel` does; never without one.
async fn cancelled_of(cancel: Option<&Cancellation>) {
    match cancel {
        Some(c) => c.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Fires at `until`; never without one.
async fn sleep_until_of(until: Option<tokio::time::Instant>) {
    match until {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// A request in flight; dropping it unanswered cancels it in the plugin.
struct Pending<'c> {
    conn: &'c Connection,
    id: Option<u64>,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let was_pending = lock(&self.conn.state).pending.remove(&id).is_some();
            if was_pending {
                self.conn.notify(method::CANCEL, json!({ "id": id }));
            }
        }
    }
}

/// Route one line; `Err` names the protocol violation.
fn route(
    line: &[u8],
    state: &Arc<Mutex<State>>,
    out: &mpsc::UnboundedSender<String>,
    handler: &Handler,
    redactor: &Redactor,
) -> Result<(), String> {
    // What the plugin wrote is quoted redacted: it may echo a secret.
    let shown = || {
        let text = String::from_utf8_lossy(line);
        let text = redactor.redact(&text);
        let mut cut: String = text.chars().take(120).collect();
        if cut.len() < text.len() {
            cut.push('…');
        }
        cut
    };
    let msg: Value = serde_json::from_slice(line).map_err(|_| {
        format!(
            "a line on stdout is not JSON: `{}` (write logs to stderr)",
            shown()
        )
    })?;
    let obj = msg
        .as_object()
        .filter(|o| o.get("jsonrpc").and_then(Value::as_str) == Some("2.0"))
        .ok_or_else(|| {
            format!(
                "a line on stdout is not a JSON-RPC 2.0 message: `{}`",
                shown()
            )
        })?;
    if let Some(m) = obj.get("method").and_then(Value::as_str) {
        let params = obj.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = obj.get("id").cloned() else {
            // `$/cancel` from the plugin stops the request of its own it
            // names (an invoke chassis is forwarding); other notifications
            // mean nothing to chassis yet.
            if m == method::CANCEL
                && let Some(id) = params.get("id")
                && let Some(task) = lock(state).serving.remove(&id.to_string())
            {
                task.abort();
                let reply = json!({ "jsonrpc": "2.0", "id": id,
                    "error": { "code": code::CANCELLED, "message": "cancelled" } });
                let _ = out.send(reply.to_string());
            }
            return Ok(());
        };
        let key = id.to_string();
        let (handler, out, m) = (Arc::clone(handler), out.clone(), m.to_owned());
        let served = Arc::clone(state);
        let done_key = key.clone();
        // Entered before the task can finish: on a multi-thread runtime a
        // quick answer (an unknown method) would otherwise find no entry
        // and be dropped, leaving the plugin waiting.
        let mut serving = lock(state);
        let task = tokio::spawn(async move {
            let reply = match handler(m, params).await {
                Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                Err((code, message)) => json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": { "code": code, "message": message }
                }),
            };
            if lock(&served).serving.remove(&done_key).is_some() {
                let _ = out.send(reply.to_string());
            }
        });
        serving.serving.insert(key, task.abort_handle());
        return Ok(());
    }
    if obj.get("id").is_some_and(Value::is_null) {
        // An error about a line the plugin could not read (JSON-RPC sends
        // those with `id: null`): nothing waits for it.
        tracing::warn!(target: "chassis::plugin", "the plugin reported: {}", shown());
        return Ok(());
    }
    let id = obj.get("id").and_then(Value::as_u64).ok_or_else(|| {
        format!(
            "a response without a request id chassis sent: `{}`",
            shown()
        )
    })?;
    let reply = if let Some(result) = obj.get("result") {
        Ok(result.clone())
    } else if let Some(error) = obj.get("error") {
        Err(RpcError::Remote {
            code: error
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(code::INTERNAL_ERROR),
            // The plugin's words, redacted: they reach errors and logs.
            message: redactor
                .redact(
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("(no message)"),
                )
                .into_owned(),
        })
    } else {
        return Err(format!(
            "a response with neither `result` nor `error`: `{}`",
            shown()
        ));
    };
    // An answer to a request already cancelled is dropped.
    if let Some(tx) = lock(state).pending.remove(&id) {
        let _ = tx.send(reply);
    }
    Ok(())
}

/// The handler for a plugin that may call no chassis method (yet): every
/// request is −32601.
pub fn no_methods() -> Handler {
    Arc::new(|m: String, _| {
        Box::pin(async move {
            Err((
                code::METHOD_NOT_FOUND,
                format!("chassis has no method `{m}`"),
            ))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (
        Arc<Connection>,
        tokio::io::DuplexStream,
        tokio::io::DuplexStream,
    ) {
        let (ours_in, theirs_in) = tokio::io::duplex(1 << 16);
        let (theirs_out, ours_out) = tokio::io::duplex(1 << 16);
        let conn = Connection::start(
            "e",
            ours_in,
            ours_out,
            None::<tokio::io::DuplexStream>,
            Redactor::new(),
            no_methods(),
            None,
        );
        (conn, theirs_in, theirs_out)
    }

    async fn next_line(r: &mut tokio::io::BufReader<tokio::io::DuplexStream>) -> Value {
        let mut s = String::new();
        r.read_line(&mut s).await.unwrap();
        serde_json::from_str(&s).unwrap()
    }

    #[tokio::test]
    async fn answers_route_by_id_even_out_of_order() {
        let (conn, theirs_in, mut theirs_out) = pair();
        let mut reader = tokio::io::BufReader::new(theirs_in);
        let c = Arc::clone(&conn);
        let a = tokio::spawn(async move { c.request("a", json!({}), None, None).await });
        let first = next_line(&mut reader).await;
        let c = Arc::clone(&conn);
        let b = tokio::spawn(async move { c.request("b", json!({}), None, None).await });
        let second = next_line(&mut reader).await;
        for (m, v) in [(&second, 2), (&first, 1)] {
            let line = json!({"jsonrpc":"2.0","id":m["id"],"result":v}).to_string() + "\n";
            theirs_out.write_all(line.as_bytes()).await.unwrap();
        }
        assert_eq!(a.await.unwrap().unwrap(), json!(1));
        assert_eq!(b.await.unwrap().unwrap(), json!(2));
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_rpc_closes_and_fails_what_waits() {
        let (conn, _theirs_in, mut theirs_out) = pair();
        let c = Arc::clone(&conn);
        let waiting = tokio::spawn(async move { c.request("a", json!({}), None, None).await });
        tokio::task::yield_now().await;
        theirs_out.write_all(b"hello from print()\n").await.unwrap();
        let err = waiting.await.unwrap().unwrap_err();
        assert!(
            matches!(&err, RpcError::Closed(r) if r.contains("not JSON") && r.contains("hello from print()")),
            "{err}"
        );
        assert!(conn.request("b", json!({}), None, None).await.is_err());
    }

    #[tokio::test]
    async fn a_timeout_sends_cancel() {
        let (conn, theirs_in, _theirs_out) = pair();
        let mut reader = tokio::io::BufReader::new(theirs_in);
        let err = conn
            .request("slow", json!({}), Some(Duration::from_millis(20)), None)
            .await
            .unwrap_err();
        assert!(matches!(err, RpcError::Timeout(_)));
        let sent = next_line(&mut reader).await;
        let cancel = next_line(&mut reader).await;
        assert_eq!(cancel["method"], "$/cancel");
        assert_eq!(cancel["params"]["id"], sent["id"]);
    }

    #[tokio::test]
    async fn the_plugin_s_requests_get_method_not_found() {
        let (_conn, theirs_in, mut theirs_out) = pair();
        let mut reader = tokio::io::BufReader::new(theirs_in);
        theirs_out
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"nope\"}\n")
            .await
            .unwrap();
        let reply = next_line(&mut reader).await;
        assert_eq!(reply["id"], 7);
        assert_eq!(reply["error"]["code"], code::METHOD_NOT_FOUND);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_request_of_the_plugin_is_answered_on_a_multi_thread_runtime() {
        // An answer that comes at once must not race its own bookkeeping.
        let (_conn, theirs_in, mut theirs_out) = pair();
        let mut reader = tokio::io::BufReader::new(theirs_in);
        let mut lines = String::new();
        for id in 0..500 {
            lines.push_str(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"nope\"}}\n"
            ));
        }
        theirs_out.write_all(lines.as_bytes()).await.unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let reply = tokio::time::timeout(Duration::from_secs(10), next_line(&mut reader))
                .await
                .expect("every request is answered");
            assert_eq!(reply["error"]["code"], code::METHOD_NOT_FOUND);
            seen.insert(reply["id"].as_u64().unwrap());
        }
        assert_eq!(seen.len(), 500);
    }

    #[tokio::test]
    async fn the_plugin_cancels_its_own_request_and_a_null_id_error_is_not_a_violation() {
        let (ours_in, theirs_in) = tokio::io::duplex(1 << 16);
        let (mut theirs_out, ours_out) = tokio::io::duplex(1 << 16);
        // A handler that never answers.
        let handler: Handler = Arc::new(|_, _| Box::pin(std::future::pending()));
        let conn = Connection::start(
            "e",
            ours_in,
            ours_out,
            None::<tokio::io::DuplexStream>,
            Redactor::new(),
            handler,
            None,
        );
        let mut reader = tokio::io::BufReader::new(theirs_in);
        theirs_out
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"capability/invoke\"}\n")
            .await
            .unwrap();
        theirs_out
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"not JSON\"}}\n")
            .await
            .unwrap();
        theirs_out
            .write_all(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel\",\"params\":{\"id\":\"p1\"}}\n",
            )
            .await
            .unwrap();
        let reply = next_line(&mut reader).await;
        assert_eq!(reply["id"], "p1");
        assert_eq!(reply["error"]["code"], code::CANCELLED);
        assert!(conn.closed_reason().is_none(), "{:?}", conn.closed_reason());
    }

    #[tokio::test]
    async fn what_the_plugin_says_is_redacted_in_errors() {
        let (ours_in, theirs_in) = tokio::io::duplex(1 << 16);
        let (mut theirs_out, ours_out) = tokio::io::duplex(1 << 16);
        let redactor = Redactor::new();
        redactor.learn(&crate::engine::secret::SecretValue::new(
            "sk-canary-rpc-1234",
        ));
        let conn = Connection::start(
            "e",
            ours_in,
            ours_out,
            None::<tokio::io::DuplexStream>,
            redactor,
            no_methods(),
            None,
        );
        let mut reader = tokio::io::BufReader::new(theirs_in);
        let c = Arc::clone(&conn);
        let waiting = tokio::spawn(async move { c.request("a", json!({}), None, None).await });
        let sent = next_line(&mut reader).await;
        let line = json!({"jsonrpc": "2.0", "id": sent["id"],
            "error": {"code": -32603, "message": "bad token sk-canary-rpc-1234"}})
        .to_string()
            + "\n";
        theirs_out.write_all(line.as_bytes()).await.unwrap();
        let err = waiting.await.unwrap().unwrap_err().to_string();
        assert!(
            !err.contains("sk-canary-rpc-1234") && err.contains("bad token"),
            "{err}"
        );
        // A line that is not JSON-RPC is quoted redacted too.
        let c = Arc::clone(&conn);
        let waiting = tokio::spawn(async move { c.request("b", json!({}), None, None).await });
        let _ = next_line(&mut reader).await;
        theirs_out
            .write_all(b"token sk-canary-rpc-1234\n")
            .await
            .unwrap();
        let err = waiting.await.unwrap().unwrap_err().to_string();
        assert!(
            !err.contains("sk-canary-rpc-1234") && err.contains("not JSON"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn an_overlong_message_is_a_violation() {
        let mut input: &[u8] = b"0123456789\n";
        let mut r = tokio::io::BufReader::new(&mut input);
        let err = read_line(&mut r, 5).await.unwrap_err();
        assert!(err.to_string().contains("longer than 5"));
        let mut input: &[u8] = b"01234\n56";
        let mut r = tokio::io::BufReader::new(&mut input);
        assert_eq!(read_line(&mut r, 5).await.unwrap().unwrap(), b"01234");
        assert_eq!(read_line(&mut r, 5).await.unwrap().unwrap(), b"56");
        assert!(read_line(&mut r, 5).await.unwrap().is_none());
    }
}
