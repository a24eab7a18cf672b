//! A loopback OpenAI-compatible Chat Completions endpoint for tests that
//! need to see the bytes chassis sends a model: it answers each request
//! with the next canned reply and keeps every request it received, raw.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A running endpoint; it stops accepting when dropped.
pub struct Endpoint {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    _thread: std::thread::JoinHandle<()>,
}

impl Endpoint {
    /// Serve `replies` (Chat Completions response bodies) in order; after
    /// them every request gets a 500.
    pub fn start(replies: Vec<serde_json::Value>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        let thread = std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let reply = replies.next();
                if serve(stream, reply.as_ref(), &kept).is_err() {
                    return;
                }
            }
        });
        Self {
            base_url,
            seen,
            _thread: thread,
        }
    }

    /// Every request received so far, head and body, as bytes.
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.seen.lock().unwrap().clone()
    }

    /// The JSON bodies of the requests.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.requests()
            .iter()
            .map(|raw| {
                let at = find(raw, b"\r\n\r\n").expect("a request head") + 4;
                serde_json::from_slice(&raw[at..]).expect("a JSON body")
            })
            .collect()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn serve(
    mut stream: TcpStream,
    reply: Option<&serde_json::Value>,
    seen: &Mutex<Vec<Vec<u8>>>,
) -> std::io::Result<()> {
    let mut raw = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = find(&raw, b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        raw.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while raw.len() < head_end + 4 + length {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
    }
    let unanswered = unanswered_tool_call(&raw[head_end + 4..]);
    seen.lock().unwrap().push(raw);
    // A reply that is a JSON string is a Server-Sent Events body, sent as
    // it is (a streamed answer).
    let (status, content_type, body) = match reply {
        // As OpenAI refuses it.
        _ if unanswered => (
            "400 Bad Request",
            "application/json",
            r#"{"error":{"message":"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'.","type":"invalid_request_error","param":"messages","code":null}}"#.to_owned(),
        ),
        Some(serde_json::Value::String(events)) => ("200 OK", "text/event-stream", events.clone()),
        Some(r) => ("200 OK", "application/json", r.to_string()),
        None => (
            "500 Internal Server Error",
            "application/json",
            r#"{"error":{"message":"no canned reply left"}}"#.to_owned(),
        ),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// Whether the request `body` has an assistant message with `tool_calls`
/// not each answered by the tool messages right after it: what OpenAI
/// refuses with a 400.
fn unanswered_tool_call(body: &[u8]) -> bool {
    let Ok(body) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    let Some(messages) = body["messages"].as_array() else {
        return false;
    };
    messages.iter().enumerate().any(|(i, m)| {
        let Some(calls) = m["tool_calls"]
            .as_array()
            .filter(|_| m["role"] == "assistant")
        else {
            return false;
        };
        let answered: Vec<&serde_json::Value> = messages[i + 1..]
            .iter()
            .take_while(|r| r["role"] == "tool")
            .map(|r| &r["tool_call_id"])
            .collect();
        calls.iter().any(|c| !answered.contains(&&c["id"]))
    })
}

/// A Chat Completions reply asking for one tool call.
pub fn tool_call_reply(name: &str, arguments: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "loopback",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": { "name": name, "arguments": arguments.to_string() },
                }],
            },
            "finish_reason": "tool_calls",
        }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15 },
    })
}

/// A Chat Completions reply with a final answer.
pub fn answer_reply(text: &str) -> serde_json::Value {
    serde_json::json!({
        "id": "chatcmpl-2", "object": "chat.completion", "model": "loopback",
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": text },
            "finish_reason": "stop",
        }],
        "usage": { "prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23 },
    })
}

/// A streamed answer: one `chat.completion.chunk` event per piece of
/// `pieces`, then (when `done`) the finish reason and `[DONE]`; no usage.
pub fn streamed_reply(pieces: &[&str], done: bool) -> serde_json::Value {
    let mut events = String::new();
    for piece in pieces {
        let chunk = serde_json::json!({
            "id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "loopback",
            "choices": [{ "index": 0, "delta": { "content": piece }, "finish_reason": null }],
        });
        events.push_str(&format!("data: {chunk}\n\n"));
    }
    if done {
        let last = serde_json::json!({
            "id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "loopback",
            "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }],
        });
        events.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
    }
    serde_json::Value::String(events)
}
