//! [`McpSession`] over rmcp: stdio child processes and streamable HTTP.
//!
//! The only module that names rmcp types. Stdio servers are spawned here,
//! not by rmcp, so chassis owns the process rules: stdin/stdout piped,
//! stderr piped into tracing line by line (redacted, never the user's
//! terminal), a cleared environment, and a process group of its own that
//! is killed whole on close or drop.
//!
//! Lifecycles: `initialize` and `discover` map to rmcp's modes directly.
//! `auto` does not use rmcp's own probe (it waits 10 s on a silent server):
//! it probes `server/discover` under [`AUTO_PROBE_SECONDS`], and when the
//! server errors, exits or stays silent, starts it again (a new process or
//! a new HTTP connection) in `initialize` mode. Servers built on older SDKs
//! often exit on an unknown first request, so retrying on the same pipe
//! would not work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Map, Value};

use super::client::{CallReply, McpError, McpSession, RemoteTool, ServerIdentity};
use super::spec::{Lifecycle, ServerSpec, Transport};
use crate::engine::builtin::mcp::AUTO_PROBE_SECONDS;
use crate::engine::secret::Redactor;

/// How long a closing server may take to exit after its stdin closed
/// before its process group is killed.
pub const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// The client side of the connection: announces chassis and notes
/// `notifications/tools/list_changed`.
#[derive(Clone)]
struct Handler {
    changed: Arc<ListChanged>,
}

/// `notifications/tools/list_changed` seen: a flag the call path takes, and
/// a wake-up for the supervisor's watcher (a stored permit, so a
/// notification between two waits is never lost).
#[derive(Default)]
struct ListChanged {
    flag: AtomicBool,
    notify: tokio::sync::Notify,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("chassis", env!("CARGO_PKG_VERSION")),
        )
    }

    fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.flag.store(true, Ordering::SeqCst);
        self.changed.notify.notify_one();
        std::future::ready(())
    }
}

use crate::process::group::ProcessGroup;

/// A stdio server's stdout that refuses a message (a line) longer than
/// `limit` bytes: rmcp buffers a whole line, so without it one runaway
/// reply would be held in memory however large it grew. The error closes
/// the transport; `exceeded` tells the session why.
struct CappedLines<R> {
    inner: R,
    limit: usize,
    current: usize,
    exceeded: Arc<AtomicBool>,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for CappedLines<R> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let too_long = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a message longer than `max_reply_bytes`",
            )
        };
        if this.exceeded.load(Ordering::SeqCst) {
            return std::task::Poll::Ready(Err(too_long()));
        }
        let before = buf.filled().len();
        std::task::ready!(std::pin::Pin::new(&mut this.inner).poll_read(cx, buf))?;
        for &b in &buf.filled()[before..] {
            if b == b'\n' {
                this.current = 0;
            } else {
                this.current += 1;
                if this.current > this.limit {
                    this.exceeded.store(true, Ordering::SeqCst);
                    return std::task::Poll::Ready(Err(too_long()));
                }
            }
        }
        std::task::Poll::Ready(Ok(()))
    }
}

/// A live rmcp connection.
pub struct RmcpSession {
    identity: ServerIdentity,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    peer: rmcp::Peer<RoleClient>,
    changed: Arc<ListChanged>,
    closed: Arc<AtomicBool>,
    group: Option<Arc<ProcessGroup>>,
    /// Set when the server sent a message longer than `max_reply_bytes`.
    overflowed: Arc<AtomicBool>,
    max_reply_bytes: usize,
}

fn start_error(spec: &ServerSpec, what: impl std::fmt::Display) -> McpError {
    McpError::Start(format!("the MCP server {} {what}", spec.target()))
}

/// A failed handshake in the user's terms: a transport failure is the
/// underlying error and what was being done, without rmcp's transport type
/// names.
fn handshake_error(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::TransportError { error, context } => format!("{} (while {context})", error.error),
        E::ConnectionClosed(why) => format!("the connection closed ({why})"),
        other => other.to_string(),
    }
}

fn service_error(e: rmcp::ServiceError) -> McpError {
    match e {
        rmcp::ServiceError::McpError(data) => McpError::Rpc {
            code: data.code.0,
            message: data.message.into_owned(),
        },
        rmcp::ServiceError::TransportClosed => {
            McpError::Closed("the server closed the connection".into())
        }
        rmcp::ServiceError::TransportSend(e) => McpError::Closed(format!("cannot send: {e}")),
        other => McpError::Other(other.to_string()),
    }
}

/// Connect to the server `spec` describes; its stderr lines go to tracing
/// through `redactor`.
pub async fn connect(spec: &ServerSpec, redactor: &Redactor) -> Result<RmcpSession, McpError> {
    let probe = Duration::from_secs_f64(AUTO_PROBE_SECONDS).min(spec.startup_timeout);
    let attempt = |mode: ClientLifecycleMode, limit: Duration| async move {
        match tokio::time::timeout(limit, connect_once(spec, redactor, mode)).await {
            Ok(r) => r,
            Err(_) => Err(start_error(
                spec,
                format_args!(
                    "did not complete its handshake within {:.1} s",
                    limit.as_secs_f64()
                ),
            )),
        }
    };
    let discover = || ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    match spec.lifecycle {
        Lifecycle::Initialize => {
            attempt(ClientLifecycleMode::Initialize, spec.startup_timeout).await
        }
        Lifecycle::Discover => attempt(discover(), spec.startup_timeout).await,
        Lifecycle::Auto => match attempt(discover(), probe).await {
            Ok(s) => Ok(s),
            Err(probe_error) => {
                tracing::debug!(
                    target: "chassis::mcp",
                    entry = %spec.entry,
                    "server/discover probe failed ({probe_error}); starting again with initialize"
                );
                attempt(ClientLifecycleMode::Initialize, spec.startup_timeout).await
            }
        },
    }
}

async fn connect_once(
    spec: &ServerSpec,
    redactor: &Redactor,
    mode: ClientLifecycleMode,
) -> Result<RmcpSession, McpError> {
    let changed = Arc::new(ListChanged::default());
    let overflowed = Arc::new(AtomicBool::new(false));
    let handler = Handler {
        changed: Arc::clone(&changed),
    };
    let (service, group) = match &spec.transport {
        Transport::Stdio {
            program,
            args,
            cwd,
            env,
        } => {
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args)
                .current_dir(cwd)
                .env_clear()
                .envs(env.iter().map(|(k, v)| (k, v)))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .process_group(0)
                .kill_on_drop(true);
            let (mut child, registered) = crate::process::orphans::spawn(&mut cmd)
                .map_err(|e| start_error(spec, format_args!("cannot be started: {e}")))?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err(start_error(spec, "has no stdio pipes"));
            };
            if let Some(stderr) = child.stderr.take() {
                forward_stderr(spec.entry.clone(), stderr, redactor.clone());
            }
            let group = Arc::new(ProcessGroup::new(child, registered));
            let stdout = CappedLines {
                inner: stdout,
                limit: spec.max_reply_bytes,
                current: 0,
                exceeded: Arc::clone(&overflowed),
            };
            let service = handler
                .serve_with_lifecycle((stdout, stdin), mode)
                .await
                .map_err(|e| {
                    start_error(
                        spec,
                        format_args!("failed its handshake: {}", handshake_error(&e)),
                    )
                });
            match service {
                Ok(s) => (s, Some(group)),
                Err(e) => {
                    group.stop(Duration::ZERO).await;
                    return Err(e);
                }
            }
        }
        Transport::Http { url, headers } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            // Every header goes out exactly as written, `Authorization`
            // included (rmcp's own auth header would prefix `Bearer ` to
            // whatever scheme the user wrote).
            let mut custom = std::collections::HashMap::new();
            for (k, v) in headers {
                let name = reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|_| {
                    start_error(spec, format_args!("header `{k}` is not a valid name"))
                })?;
                let value = reqwest::header::HeaderValue::from_str(v).map_err(|_| {
                    start_error(spec, format_args!("header `{k}` has an invalid value"))
                })?;
                custom.insert(name, value);
            }
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            config.custom_headers = custom;
            let client = crate::plugins::http::client_builder()
                .build()
                .map_err(|e| start_error(spec, format_args!("has no HTTP client: {e}")))?;
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let service = handler
                .serve_with_lifecycle(transport, mode)
                .await
                .map_err(|e| {
                    start_error(
                        spec,
                        format_args!("failed its handshake: {}", handshake_error(&e)),
                    )
                })?;
            (service, None)
        }
    };
    let info = service.peer_info();
    let identity = ServerIdentity {
        name: info
            .as_ref()
            .and_then(|i| i.server_info.as_ref())
            .map(|s| s.name.clone())
            .unwrap_or_default(),
        version: info
            .as_ref()
            .and_then(|i| i.server_info.as_ref())
            .map(|s| s.version.clone())
            .unwrap_or_default(),
        protocol_version: info
            .as_ref()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default(),
    };
    let peer = service.peer().clone();
    let closed = Arc::new(AtomicBool::new(false));
    Ok(RmcpSession {
        identity,
        service: tokio::sync::Mutex::new(Some(service)),
        peer,
        changed,
        closed,
        group,
        overflowed,
        max_reply_bytes: spec.max_reply_bytes,
    })
}

/// Read `stderr` line by line into tracing (redacted) until it closes.
fn forward_stderr(entry: String, stderr: tokio::process::ChildStderr, redactor: Redactor) {
    tokio::spawn(async move {
        // To its end, whatever it holds: a reader that stopped at a byte
        // that is not UTF-8 left the pipe to fill and the server to block.
        let mut lines = crate::plugins::child_stderr::StderrLines::new(stderr, redactor);
        while let Some(line) = lines.next_line().await {
            tracing::info!(target: "chassis::mcp::stderr", entry = %entry, "{line}");
        }
    });
}

fn remote_tool(tool: rmcp::model::Tool) -> RemoteTool {
    let annotations = tool
        .annotations
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok())
        .filter(|a| a.as_object().is_some_and(|o| !o.is_empty()));
    RemoteTool {
        name: tool.name.into_owned(),
        description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
        input_schema: Value::Object((*tool.input_schema).clone()),
        output_schema: tool.output_schema.map(|s| Value::Object((*s).clone())),
        annotations,
    }
}

#[async_trait::async_trait]
impl McpSession for RmcpSession {
    fn identity(&self) -> &ServerIdentity {
        &self.identity
    }

    async fn list_tools(&self) -> Result<Vec<RemoteTool>, McpError> {
        let tools = self
            .peer
            .list_all_tools()
            .await
            .map_err(|e| self.failed(e))?;
        Ok(tools.into_iter().map(remote_tool).collect())
    }

    async fn call_tool(&self, name: &str, args: Map<String, Value>) -> Result<CallReply, McpError> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
        let result = self
            .peer
            .call_tool(params)
            .await
            .map_err(|e| self.failed(e))?;
        Ok(CallReply {
            content: result
                .content
                .iter()
                .filter_map(|b| serde_json::to_value(b).ok())
                .collect(),
            structured: result.structured_content,
            is_error: result.is_error.unwrap_or(false),
        })
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst) || self.peer.is_transport_closed()
    }

    fn take_tools_changed(&self) -> bool {
        self.changed.flag.swap(false, Ordering::SeqCst)
    }

    async fn tools_changed(&self) {
        self.changed.notify.notified().await;
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let service = self.service.lock().await.take();
        if let Some(service) = service {
            // Closing the transport closes the server's stdin; a bounded
            // wait, then the group is killed.
            let _ = tokio::time::timeout(CLOSE_GRACE, service.cancel()).await;
        }
        if let Some(group) = &self.group {
            group.stop(CLOSE_GRACE).await;
        }
    }
}

impl RmcpSession {
    /// A request's failure in the user's terms: a reply over the limit is
    /// named as such, not as a closed connection.
    fn failed(&self, e: rmcp::ServiceError) -> McpError {
        self.note_closed(&e);
        if self.overflowed.load(Ordering::SeqCst) {
            self.closed.store(true, Ordering::SeqCst);
            return McpError::Closed(format!(
                "the server sent a message longer than {} bytes (`max_reply_bytes`)",
                self.max_reply_bytes
            ));
        }
        service_error(e)
    }

    fn note_closed(&self, e: &rmcp::ServiceError) {
        if matches!(
            e,
            rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
        ) {
            self.closed.store(true, Ordering::SeqCst);
        }
    }
}
