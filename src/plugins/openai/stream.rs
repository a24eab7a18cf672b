//! A streamed answer (`"stream": true`): Server-Sent Events of
//! `chat.completion.chunk` objects, parsed with `sse-stream` (already in
//! the tree through rmcp) and assembled into the answer a non-streamed call
//! returns — text, tool calls put together from their deltas by `index`,
//! finish reason, usage — so record/replay, tracing and budgets see one
//! message either way. Each piece of text is handed on as it arrives.
//!
//! Usage is asked for (`stream_options.include_usage`); a server that does
//! not send it is charged an estimate — 4 characters a token, at least one
//! — never zero.

use std::collections::BTreeMap;

use futures_util::StreamExt;
use serde_json::{Value, json};

use super::wire::ChatResponse;
use crate::runtime::model::{ModelError, TextDeltas};

/// A tool call being put together.
#[derive(Default)]
struct Call {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// What the chunks said so far.
#[derive(Default)]
struct Assembly {
    content: String,
    refusal: String,
    calls: BTreeMap<u64, Call>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    model: Option<String>,
}

impl Assembly {
    /// Take one chunk; its text goes to `deltas`.
    fn chunk(&mut self, chunk: &Value, deltas: &TextDeltas) {
        if let Some(m) = chunk["model"].as_str() {
            self.model.get_or_insert_with(|| m.to_owned());
        }
        if chunk["usage"].is_object() {
            self.usage = Some(chunk["usage"].clone());
        }
        let Some(choice) = chunk["choices"].as_array().and_then(|c| c.first()) else {
            return;
        };
        if let Some(f) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(f.to_owned());
        }
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            self.content.push_str(text);
            deltas.send(text);
        }
        if let Some(text) = delta["refusal"].as_str() {
            self.refusal.push_str(text);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            // Calls are keyed by `index`; a server that omits it names a
            // new call by a new `id` and continues the last one otherwise.
            let index = match (call["index"].as_u64(), call["id"].as_str()) {
                (Some(i), _) => i,
                (None, Some(id)) => self
                    .calls
                    .iter()
                    .find(|(_, c)| c.id.as_deref() == Some(id))
                    .map(|(i, _)| *i)
                    .unwrap_or_else(|| self.calls.keys().next_back().map_or(0, |k| k + 1)),
                (None, None) => self.calls.keys().next_back().copied().unwrap_or(0),
            };
            let slot = self.calls.entry(index).or_default();
            if let Some(id) = call["id"].as_str() {
                slot.id = Some(id.to_owned());
            }
            if let Some(name) = call["function"]["name"].as_str() {
                slot.name.push_str(name);
            }
            if let Some(args) = call["function"]["arguments"].as_str() {
                slot.arguments.push_str(args);
            }
        }
    }

    /// The answer as a non-streamed body would have been (`request_bytes`:
    /// the request's size, for a usage estimate).
    fn finish(self, request_bytes: usize) -> Result<ChatResponse, ModelError> {
        let generated = self.content.chars().count()
            + self
                .calls
                .values()
                .map(|c| c.name.chars().count() + c.arguments.chars().count())
                .sum::<usize>();
        let usage = self.usage.unwrap_or_else(|| {
            let estimate = super::wire::estimated_usage(request_bytes, generated);
            json!({
                "prompt_tokens": estimate.input_tokens,
                "completion_tokens": estimate.output_tokens,
            })
        });
        let calls: Vec<Value> = self
            .calls
            .into_values()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": { "name": c.name, "arguments": c.arguments },
                })
            })
            .collect();
        let body = json!({
            "model": self.model,
            "usage": usage,
            "choices": [{
                "finish_reason": self.finish_reason,
                "message": {
                    "role": "assistant",
                    "content": self.content,
                    "tool_calls": if calls.is_empty() { Value::Null } else { Value::Array(calls) },
                    "refusal": if self.refusal.is_empty() { Value::Null } else { Value::String(self.refusal) },
                },
            }],
        });
        serde_json::from_value(body).map_err(|e| {
            ModelError::Protocol(format!("the streamed answer does not assemble: {e}"))
        })
    }
}

/// Read the events of `response` (a `200` already), handing each piece of
/// text to `deltas`, up to `limit` bytes. A stream that breaks off, holds
/// an event that is not a chunk, or ends without `[DONE]` fails the call.
pub(super) async fn read(
    response: reqwest::Response,
    deltas: &TextDeltas,
    request_bytes: usize,
    limit: usize,
    redactor: &crate::engine::secret::Redactor,
) -> Result<ChatResponse, ModelError> {
    let bytes = futures_util::stream::unfold(response, |mut r| async move {
        match r.chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), r)),
            Ok(None) => None,
            Err(e) => Some((Err(e), r)),
        }
    });
    let mut events = std::pin::pin!(sse_stream::SseStream::from_bytes_stream(bytes));
    let mut assembly = Assembly::default();
    let mut read = 0usize;
    while let Some(event) = events.next().await {
        let event = event
            .map_err(|e| ModelError::Transport(format!("the answer's stream broke off: {e}")))?;
        let Some(data) = event.data else { continue };
        read += data.len();
        if read > limit {
            return Err(ModelError::Protocol(format!(
                "the streamed answer is larger than {} MiB",
                limit / (1024 * 1024)
            )));
        }
        if data.trim() == "[DONE]" {
            return assembly.finish(request_bytes);
        }
        let chunk: Value = serde_json::from_str(&data).map_err(|e| {
            ModelError::Protocol(format!(
                "a streamed event is not a chunk ({e}): {}",
                super::wire::excerpt(&redactor.redact(&data), 300)
            ))
        })?;
        if let Some(message) = chunk["error"]["message"].as_str() {
            return Err(ModelError::Protocol(format!(
                "the stream reported an error: {}",
                super::wire::excerpt(&redactor.redact(message), 300)
            )));
        }
        assembly.chunk(&chunk, deltas);
    }
    Err(ModelError::Transport(
        "the answer's stream ended before `[DONE]`".into(),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn collect() -> (TextDeltas, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        (
            TextDeltas(Arc::new(move |p: &str| {
                kept.lock().unwrap().push(p.to_owned())
            })),
            seen,
        )
    }

    #[test]
    fn tool_calls_are_put_together_from_their_deltas() {
        let (deltas, seen) = collect();
        let mut a = Assembly::default();
        let chunks = [
            json!({"model": "m", "choices": [{"delta": {"role": "assistant", "content": "Let me "}}]}),
            json!({"choices": [{"delta": {"content": "check."}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_", "arguments": "{\"ci"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "now", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "weather", "arguments": "ty\": \"Oslo\"}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7}}),
        ];
        for c in &chunks {
            a.chunk(c, &deltas);
        }
        assert_eq!(*seen.lock().unwrap(), ["Let me ", "check."]);
        let body = a.finish(100).unwrap();
        let r = super::super::wire::parse_response(body, "fallback", None).unwrap();
        assert_eq!(r.message.content, "Let me check.");
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.model, "m");
        let calls: Vec<(&str, &str, String)> = r
            .message
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.to_string()))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_a", "get_weather", r#"{"city":"Oslo"}"#.to_owned()),
                ("call_b", "now", "{}".to_owned()),
            ]
        );
        let usage = r.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (12, 7));
    }

    #[test]
    fn without_usage_an_estimate_is_charged() {
        let (deltas, _) = collect();
        let mut a = Assembly::default();
        a.chunk(
            &json!({"choices": [{"delta": {"content": "abcdefghi"}}]}),
            &deltas,
        );
        let body = a.finish(41).unwrap();
        let r = super::super::wire::parse_response(body, "m", None).unwrap();
        let usage = r.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (11, 3));
        // Nothing generated still costs a token.
        let body = Assembly::default().finish(0).unwrap();
        let usage = super::super::wire::parse_response(body, "m", None)
            .unwrap()
            .usage
            .unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (1, 1));
    }
}
