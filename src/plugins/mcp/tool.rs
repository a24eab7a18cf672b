//! One server tool as a chassis [`Tool`].
//!
//! Every call crosses the executor first (hooks, policy, approval, budget,
//! telemetry, replay); this adapter only forwards it. The server's answer
//! is normalized: text blocks become the text the model reads, other
//! blocks are kept as JSON, `structuredContent` is kept in the artifact,
//! and `isError` results, JSON-RPC errors and a dead connection become
//! tool failures. Cancellation (the executor's deadline or a cancelled
//! run) drops the request future, which sends `notifications/cancelled`.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::client::{CallReply, McpError};
use super::server::Server;
use crate::runtime::{BoxError, Tool, ToolCallContext, ToolOutput};

/// A mounted MCP tool.
pub struct McpTool {
    /// The name chassis exposes.
    pub name: String,
    /// The server's name.
    pub remote: String,
    /// Description.
    pub description: String,
    /// Argument schema.
    pub schema: Option<Value>,
    /// The server.
    pub server: Arc<Server>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .field("remote", &self.remote)
            .finish_non_exhaustive()
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Null | Value::Object(_) => "an object",
    }
}

/// The tool output of a successful reply.
pub fn output(reply: CallReply) -> ToolOutput {
    let all_text = reply
        .content
        .iter()
        .all(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    let content = if all_text && !reply.content.is_empty() {
        Value::String(reply.text())
    } else if reply.content.is_empty() {
        reply
            .structured
            .clone()
            .unwrap_or(Value::String(String::new()))
    } else {
        Value::Array(reply.content.clone())
    };
    let artifact = reply.structured.map(|s| json!({ "structured_content": s }));
    ToolOutput { content, artifact }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn args_schema(&self) -> Option<&Value> {
        self.schema.as_ref()
    }

    async fn call(&self, args: Value, ctx: &ToolCallContext) -> Result<ToolOutput, BoxError> {
        let args = match args {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return Err(format!(
                    "MCP tool arguments must be an object, not {}",
                    kind_of(&other)
                )
                .into());
            }
        };
        let session = self.server.session().await?;
        let reply = tokio::select! {
            r = session.call_tool(&self.remote, args) => r,
            () = ctx.cancel.cancelled() => return Err("the call was cancelled".into()),
        };
        match reply {
            Ok(r) if r.is_error => {
                let text = r.text();
                Err(if text.is_empty() {
                    "the tool reported an error (no text)".into()
                } else {
                    format!("the tool reported an error: {text}").into()
                })
            }
            Ok(r) => Ok(output(r)),
            Err(McpError::Closed(why)) => {
                self.server.went_away();
                Err(format!(
                    "the MCP server of entry `{}` went away during the call ({why}); it is restarted on the next call",
                    self.server.entry()
                )
                .into())
            }
            Err(e) => Err(e.to_string().into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_blocks_become_text_and_structured_content_is_kept() {
        let o = output(CallReply {
            content: vec![
                json!({ "type": "text", "text": "a" }),
                json!({ "type": "text", "text": "b" }),
            ],
            structured: Some(json!({ "sum": 3 })),
            is_error: false,
        });
        assert_eq!(o.content, json!("a\nb"));
        assert_eq!(
            o.artifact,
            Some(json!({ "structured_content": { "sum": 3 } }))
        );
        let img = json!({ "type": "image", "data": "AA==", "mimeType": "image/png" });
        let o = output(CallReply {
            content: vec![img.clone()],
            structured: None,
            is_error: false,
        });
        assert_eq!(o.content, json!([img]));
        let o = output(CallReply {
            content: vec![],
            structured: Some(json!({ "x": 1 })),
            is_error: false,
        });
        assert_eq!(o.content, json!({ "x": 1 }));
    }
}
