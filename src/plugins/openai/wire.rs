//! The Chat Completions wire format, and its mapping to the `model` types.
//!
//! Requests are built exactly (servers reject unknown fields); responses
//! are read leniently, because "OpenAI-compatible" servers differ in what
//! they omit: `usage`, `finish_reason`, tool call ids, and whether a tool
//! call's `arguments` is a JSON string (the documented form) or an object.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runtime::model::{
    ChatMessage, ModelError, ModelRequest, ModelResponse, ModelToolCall, Role, Usage,
};

/// The request body of `POST {base_url}/chat/completions`.
#[derive(Debug, Serialize)]
pub struct ChatRequest<'a> {
    /// Model name.
    pub model: &'a str,
    /// The conversation.
    pub messages: Vec<WireMessage<'a>>,
    /// Tools, omitted when there are none (some servers reject `[]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool<'a>>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Generated-token bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Stream the answer as Server-Sent Events (only when the caller
    /// watches the text).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// `{"include_usage": true}` with `stream`: usage in the last chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<Value>,
}

/// One request message.
#[derive(Debug, Serialize)]
pub struct WireMessage<'a> {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: &'static str,
    /// Text; `null` for an assistant turn that only calls tools.
    pub content: Option<&'a str>,
    /// An assistant turn's tool calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireCallOut<'a>>,
    /// The call a tool message answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
}

/// A tool call in a request's assistant message.
#[derive(Debug, Serialize)]
pub struct WireCallOut<'a> {
    /// Call id.
    pub id: &'a str,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Name and arguments.
    pub function: WireFunctionOut<'a>,
}

/// The function of a request tool call.
#[derive(Debug, Serialize)]
pub struct WireFunctionOut<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Arguments as a JSON string, as the API expects.
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Debug, Serialize)]
pub struct WireTool<'a> {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function.
    pub function: WireFunctionDef<'a>,
}

/// A tool's function definition.
#[derive(Debug, Serialize)]
pub struct WireFunctionDef<'a> {
    /// Name.
    pub name: &'a str,
    /// Description.
    pub description: &'a str,
    /// JSON Schema of the arguments.
    pub parameters: &'a Value,
}

fn role(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// Request-level defaults from the configuration (the request's own
/// options win).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Defaults {
    /// Temperature.
    pub temperature: Option<f64>,
    /// Token bound.
    pub max_tokens: Option<u64>,
}

/// The body for `request` to `model`.
pub fn build_request<'a>(
    model: &'a str,
    request: &'a ModelRequest,
    defaults: Defaults,
) -> ChatRequest<'a> {
    let messages = request
        .messages
        .iter()
        .map(|m| {
            let tool_calls: Vec<WireCallOut<'_>> = m
                .tool_calls
                .iter()
                .map(|c| WireCallOut {
                    id: &c.id,
                    kind: "function",
                    function: WireFunctionOut {
                        name: &c.name,
                        arguments: c.arguments.to_string(),
                    },
                })
                .collect();
            let content =
                if m.role == Role::Assistant && m.content.is_empty() && !tool_calls.is_empty() {
                    None
                } else {
                    Some(m.content.as_str())
                };
            WireMessage {
                role: role(m.role),
                content,
                tool_calls,
                tool_call_id: if m.role == Role::Tool {
                    m.tool_call_id.as_deref()
                } else {
                    None
                },
            }
        })
        .collect();
    let tools = request
        .tools
        .iter()
        .map(|t| WireTool {
            kind: "function",
            function: WireFunctionDef {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        })
        .collect();
    ChatRequest {
        model,
        messages,
        tools,
        temperature: request.options.temperature.or(defaults.temperature),
        max_tokens: request.options.max_tokens.or(defaults.max_tokens),
        stream: request.deltas.is_some(),
        stream_options: request
            .deltas
            .is_some()
            .then(|| serde_json::json!({ "include_usage": true })),
    }
}

/// A response body (every field optional: servers omit what they like).
#[derive(Debug, Default, Deserialize)]
pub struct ChatResponse {
    /// Choices; the first one is the answer.
    #[serde(default)]
    pub choices: Option<Vec<Choice>>,
    /// Token usage.
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// The model that answered.
    #[serde(default)]
    pub model: Option<String>,
}

/// One choice.
#[derive(Debug, Default, Deserialize)]
pub struct Choice {
    /// The assistant message.
    #[serde(default)]
    pub message: Option<ResponseMessage>,
    /// Why generation stopped.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// The assistant message of a choice.
#[derive(Debug, Default, Deserialize)]
pub struct ResponseMessage {
    /// Text: a string, `null`, or (some servers) an array of text parts.
    #[serde(default)]
    pub content: Option<Value>,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<ResponseCall>>,
    /// A refusal (OpenAI sets it instead of content when it declines).
    #[serde(default)]
    pub refusal: Option<String>,
}

/// A tool call in a response.
#[derive(Debug, Default, Deserialize)]
pub struct ResponseCall {
    /// Call id (some servers omit it).
    #[serde(default)]
    pub id: Option<String>,
    /// The function.
    #[serde(default)]
    pub function: Option<ResponseFunction>,
}

/// The function of a response tool call.
#[derive(Debug, Default, Deserialize)]
pub struct ResponseFunction {
    /// Tool name.
    #[serde(default)]
    pub name: Option<String>,
    /// Arguments: a JSON string (documented) or an object (some servers).
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// Characters per token, for an estimate of usage a server did not report.
pub const CHARS_PER_TOKEN: usize = 4;

/// The usage charged when a server reports none (non-streamed or
/// streamed alike, so a tokens budget holds against such a server): a
/// token per [`CHARS_PER_TOKEN`] characters of the request (`request_bytes`)
/// and of what was generated (`generated_chars`), at least one each.
pub fn estimated_usage(request_bytes: usize, generated_chars: usize) -> Usage {
    let tokens = |n: usize| u64::try_from(n.div_ceil(CHARS_PER_TOKEN).max(1)).unwrap_or(u64::MAX);
    Usage {
        input_tokens: tokens(request_bytes),
        output_tokens: tokens(generated_chars),
    }
}

/// What `message` generated, in characters: its text and each tool call's
/// name and arguments.
pub fn generated_chars(message: &ChatMessage) -> usize {
    message.content.chars().count()
        + message
            .tool_calls
            .iter()
            .map(|c| c.name.chars().count() + c.arguments.to_string().chars().count())
            .sum::<usize>()
}

/// Usage as reported.
#[derive(Debug, Default, Deserialize)]
pub struct WireUsage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

/// Prices per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prices {
    /// Per million prompt tokens.
    pub input_per_million: f64,
    /// Per million completion tokens.
    pub output_per_million: f64,
}

impl Prices {
    /// The cost of `usage`.
    pub fn cost(&self, usage: &Usage) -> f64 {
        // u64 → f64 loses precision only beyond 2^53 tokens.
        #[allow(clippy::cast_precision_loss)]
        let (i, o) = (usage.input_tokens as f64, usage.output_tokens as f64);
        (i * self.input_per_million + o * self.output_per_million) / 1_000_000.0
    }
}

fn text_of(content: Option<Value>) -> Result<String, ModelError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s),
        Some(Value::Array(parts)) => Ok(parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                other => other.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("")),
        Some(other) => Err(ModelError::Protocol(format!(
            "`choices[0].message.content` is a {}, not a string",
            kind_of(&other)
        ))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    crate::engine::schema_check::Instance::kind(v)
}

fn tool_call(index: usize, call: ResponseCall) -> ModelToolCall {
    let id = call
        .id
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("call_{}", index + 1));
    let function = call.function.unwrap_or_default();
    let name = function.name.unwrap_or_default();
    let (arguments, mut malformed) = match function.arguments {
        // The documented form: a JSON document in a string. An empty
        // string is what some servers send for a call without arguments.
        Some(Value::String(raw)) if raw.trim().is_empty() => {
            (Value::Object(serde_json::Map::new()), None)
        }
        Some(Value::String(raw)) => match serde_json::from_str::<Value>(&raw) {
            Ok(v) => (v, None),
            Err(e) => (
                Value::Null,
                Some(format!("the arguments are not valid JSON: {e}")),
            ),
        },
        None | Some(Value::Null) => (Value::Object(serde_json::Map::new()), None),
        Some(other) => (other, None),
    };
    if name.is_empty() {
        malformed.get_or_insert_with(|| "the call has no tool name".to_owned());
    }
    ModelToolCall {
        id,
        name,
        arguments,
        malformed,
    }
}

/// The assistant turn of a parsed body. `fallback_model` names the model
/// when the server does not; `prices` gives `estimated_cost`.
pub fn parse_response(
    body: ChatResponse,
    fallback_model: &str,
    prices: Option<&Prices>,
) -> Result<ModelResponse, ModelError> {
    let choice = body
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| ModelError::Protocol("the answer has no `choices`".into()))?;
    let message = choice
        .message
        .ok_or_else(|| ModelError::Protocol("`choices[0]` has no `message`".into()))?;
    let content = text_of(message.content)?;
    let tool_calls: Vec<ModelToolCall> = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| tool_call(i, c))
        .collect();
    if let Some(refusal) = message.refusal.filter(|r| !r.is_empty())
        && content.is_empty()
        && tool_calls.is_empty()
    {
        return Err(ModelError::Refused(refusal));
    }
    let usage = body.usage.and_then(|u| {
        if u.prompt_tokens.is_none() && u.completion_tokens.is_none() {
            None
        } else {
            Some(Usage {
                input_tokens: u.prompt_tokens.unwrap_or(0),
                output_tokens: u.completion_tokens.unwrap_or(0),
            })
        }
    });
    let estimated_cost = match (&usage, prices) {
        (Some(u), Some(p)) => Some(p.cost(u)),
        _ => None,
    };
    Ok(ModelResponse {
        message: ChatMessage {
            role: Role::Assistant,
            content,
            tool_calls,
            tool_call_id: None,
            name: None,
        },
        usage,
        finish_reason: choice.finish_reason.filter(|f| !f.is_empty()),
        model: body
            .model
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| fallback_model.to_owned()),
        estimated_cost,
    })
}

/// The message of an error body: `error.message` (OpenAI), `error` as a
/// string (Ollama), or `message`/`detail` (other servers).
pub fn error_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let error = v.get("error");
    error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .or_else(|| error.and_then(Value::as_str))
        .or_else(|| v.get("message").and_then(Value::as_str))
        .or_else(|| v.get("detail").and_then(Value::as_str))
        .map(str::to_owned)
}

/// The machine-readable `error.code` (or `error.type`) of an error body.
pub fn error_code(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let error = v.get("error")?;
    error
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str))
        .map(str::to_owned)
}

/// At most `max` characters of `text`, whitespace collapsed, with `…` when
/// cut.
pub fn excerpt(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = collapsed.chars().take(max).collect();
    if collapsed.chars().count() > max {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::model::{ModelOptions, ToolSpec};
    use crate::runtime::tool::Cancellation;
    use serde_json::json;

    #[test]
    fn the_request_body_has_the_documented_shape() {
        let messages = vec![
            ChatMessage::text(Role::System, "be brief"),
            ChatMessage::text(Role::User, "count"),
            ChatMessage {
                role: Role::Assistant,
                content: String::new(),
                tool_calls: vec![ModelToolCall {
                    id: "call_1".into(),
                    name: "word_count".into(),
                    arguments: json!({"text": "a b"}),
                    malformed: None,
                }],
                tool_call_id: None,
                name: None,
            },
            ChatMessage::tool("call_1", "word_count", "2".into()),
        ];
        let tools = vec![ToolSpec {
            name: "word_count".into(),
            description: "Counts words".into(),
            parameters: json!({"type": "object"}),
        }];
        let request = ModelRequest {
            messages: &messages,
            tools: &tools,
            options: ModelOptions {
                temperature: None,
                max_tokens: Some(10),
            },
            cancel: Cancellation::new(),
            cursors: crate::runtime::model::TurnCursors::new(),
            deltas: None,
            run_id: None,
        };
        let body = build_request(
            "m",
            &request,
            Defaults {
                temperature: Some(0.5),
                max_tokens: Some(99),
            },
        );
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "count"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "word_count", "arguments": "{\"text\":\"a b\"}"}}
                    ]},
                    {"role": "tool", "content": "2", "tool_call_id": "call_1"}
                ],
                "tools": [{"type": "function", "function": {
                    "name": "word_count", "description": "Counts words",
                    "parameters": {"type": "object"}}}],
                "temperature": 0.5,
                "max_tokens": 10
            })
        );
    }

    #[test]
    fn no_tools_means_no_tools_key() {
        let messages = vec![ChatMessage::text(Role::User, "hi")];
        let request = ModelRequest {
            messages: &messages,
            tools: &[],
            options: ModelOptions::default(),
            cancel: Cancellation::new(),
            cursors: crate::runtime::model::TurnCursors::new(),
            deltas: None,
            run_id: None,
        };
        let v = serde_json::to_value(build_request("m", &request, Defaults::default())).unwrap();
        assert_eq!(
            v,
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        );
    }

    fn parse(v: Value) -> Result<ModelResponse, ModelError> {
        parse_response(serde_json::from_value(v).unwrap(), "fallback", None)
    }

    #[test]
    fn synthetic_oddities_are_tolerated() {
        let r = parse(json!({
            "choices": [{"message": {
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                "tool_calls": [
                    {"function": {"name": "t", "arguments": ""}},
                    {"id": "", "function": {"arguments": "{}"}}
                ]
            }, "finish_reason": null}],
            "usage": null
        }))
        .unwrap();
        assert_eq!(r.message.content, "ab");
        assert_eq!(r.model, "fallback");
        assert_eq!(r.finish_reason, None);
        assert_eq!(r.usage, None);
        assert_eq!(r.message.tool_calls[0].id, "call_1");
        assert_eq!(r.message.tool_calls[0].arguments, json!({}));
        assert_eq!(r.message.tool_calls[1].id, "call_2");
        assert!(r.message.tool_calls[1].malformed.is_some());
    }

    #[test]
    fn synthetic_refusals_and_broken_shapes() {
        assert!(matches!(
            parse(json!({"choices": [{"message": {"content": null, "refusal": "no"}}]})),
            Err(ModelError::Refused(r)) if r == "no"
        ));
        assert!(matches!(
            parse(json!({"choices": []})),
            Err(ModelError::Protocol(_))
        ));
        assert!(matches!(
            parse(json!({"choices": [{}]})),
            Err(ModelError::Protocol(_))
        ));
        assert!(matches!(
            parse(json!({"choices": [{"message": {"content": 5}}]})),
            Err(ModelError::Protocol(_))
        ));
    }

    #[test]
    fn error_bodies_and_excerpts() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#)
                .as_deref(),
            Some("bad model")
        );
        assert_eq!(
            error_message(br#"{"error":"model 'x' not found"}"#).as_deref(),
            Some("model 'x' not found")
        );
        assert_eq!(error_message(b"<html>oops</html>"), None);
        assert_eq!(
            error_code(br#"{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}"#)
                .as_deref(),
            Some("insufficient_quota")
        );
        assert_eq!(error_code(br#"{"error":"x"}"#), None);
        assert_eq!(excerpt("a  b\n\nc", 10), "a b c");
        assert_eq!(excerpt("ééééé", 3), "ééé…");
    }

    #[test]
    fn prices_give_a_cost() {
        let p = Prices {
            input_per_million: 2.0,
            output_per_million: 8.0,
        };
        let cost = p.cost(&Usage {
            input_tokens: 500_000,
            output_tokens: 250_000,
        });
        assert!((cost - 3.0).abs() < 1e-9);
    }
}
