//! The client seam: what chassis needs from an MCP connection.
//!
//! Why it exists: the MCP SDK (rmcp) is young and moves between majors;
//! everything in chassis talks to a server through [`McpSession`], and
//! only [`super::rmcp_session`] knows rmcp's types. The plain data types
//! here (tools, replies, errors) are ours, so a bump of the SDK touches one
//! module, and the tool adapter and the supervisor can be tested with a
//! fake session.

use serde_json::{Map, Value};

/// Who answered, and in which protocol era.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerIdentity {
    /// `serverInfo.name` (empty when the server gave none).
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// The negotiated protocol version.
    pub protocol_version: String,
}

/// One tool as the server lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteTool {
    /// The server's name for it.
    pub name: String,
    /// Its description (empty when none).
    pub description: String,
    /// The argument JSON Schema.
    pub input_schema: Value,
    /// The result schema, if any.
    pub output_schema: Option<Value>,
    /// `annotations` (`readOnlyHint`, …) as JSON, if any.
    pub annotations: Option<Value>,
}

/// What a `tools/call` answered.
#[derive(Clone, Debug, PartialEq)]
pub struct CallReply {
    /// The content blocks, as JSON (`{"type":"text","text":…}`, …).
    pub content: Vec<Value>,
    /// `structuredContent`, kept as given.
    pub structured: Option<Value>,
    /// `isError`: the tool ran and failed.
    pub is_error: bool,
}

impl CallReply {
    /// The text of the text blocks, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        texts.join("\n")
    }
}

/// Why a request to a server failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server could not be started or did not complete its handshake.
    #[error("{0}")]
    Start(String),
    /// The server answered with a JSON-RPC error.
    #[error("the server answered error {code}: {message}")]
    Rpc {
        /// JSON-RPC error code.
        code: i32,
        /// Its message.
        message: String,
    },
    /// The connection is gone (the process exited, the stream closed).
    #[error("the connection to the server is closed ({0})")]
    Closed(String),
    /// Anything else the client reported.
    #[error("{0}")]
    Other(String),
}

/// One live connection to a server.
#[async_trait::async_trait]
pub trait McpSession: Send + Sync {
    /// The server's identity and the negotiated protocol.
    fn identity(&self) -> &ServerIdentity;
    /// Every tool, following pagination.
    async fn list_tools(&self) -> Result<Vec<RemoteTool>, McpError>;
    /// Call `name`. Dropping the future cancels the request
    /// (`notifications/cancelled`).
    async fn call_tool(&self, name: &str, args: Map<String, Value>) -> Result<CallReply, McpError>;
    /// Whether the connection is gone.
    fn is_closed(&self) -> bool;
    /// Whether the server sent `notifications/tools/list_changed` since the
    /// last call of this method.
    fn take_tools_changed(&self) -> bool;
    /// Resolves when the server sends `notifications/tools/list_changed`
    /// (one sent since the last wait counts).
    async fn tools_changed(&self);
    /// End the session and stop the server, bounded in time.
    async fn close(&self);
}
