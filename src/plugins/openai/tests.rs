//! Tests of the `openai` model against a loopback HTTP server.
//!
//! The server is a few dozen lines of HTTP/1.1 over `tokio::net`: it
//! answers each connection with the next queued reply and records what it
//! received, so the real client, parser and request body are exercised
//! without a network or a heavy dev-dependency.
//!
//! Naming: `recorded_*` tests answer with the response shapes documented in
//! the OpenAI API reference (Chat Completions object, error object);
//! `synthetic_*` tests answer with bodies made up to imitate a quirk
//! (Ollama/llama.cpp-style omissions, malformed arguments, outages).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::retry::RetryPolicy;
use super::wire::{Defaults, Prices};
use super::*;
use crate::engine::secret::{SecretValue, StaticSecretProvider};
use crate::runtime::model::{
    ChatMessage, ChatModel, ModelError, ModelOptions, ModelRequest, Role, ToolSpec, Usage,
};
use crate::runtime::tool::Cancellation;

const CANARY: &str = "sk-canary-7f3a9c1e55d04b2b";
const HEADER_CANARY: &str = "gw-canary-0b9d17e2c4";

// ---------------------------------------------------------------- server

/// One canned reply.
#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", "application/json".into())],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    fn text(status: u16, content_type: &str, body: &str) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", content_type.into())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// One request the server received.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    /// Lower-cased names.
    headers: BTreeMap<String, String>,
    body: Value,
}

struct Server {
    base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// A server answering connections with `replies` in order (then 599).
    async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        let (seen2, queue2) = (Arc::clone(&seen), Arc::clone(&queue));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (seen, queue) = (Arc::clone(&seen2), Arc::clone(&queue2));
                tokio::spawn(async move {
                    let _ = serve(stream, &seen, &queue).await;
                });
            }
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            seen,
            task,
        }
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn serve(
    mut stream: TcpStream,
    seen: &Mutex<Vec<Seen>>,
    queue: &Mutex<VecDeque<Reply>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 || buf.len() > 1 << 20 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut start = lines.next().unwrap_or_default().split(' ');
    let method = start.next().unwrap_or_default().to_owned();
    let path = start.next().unwrap_or_default().to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length.min(1 << 20) {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    seen.lock().unwrap().push(Seen {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = queue
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Reply::text(599, "text/plain", "no canned reply left"));
    tokio::time::sleep(reply.delay).await;
    let mut out = format!(
        "HTTP/1.1 {} Canned\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (k, v) in &reply.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&reply.body);
    stream.write_all(out.as_bytes()).await?;
    stream.shutdown().await
}

// ---------------------------------------------------------------- helpers

fn settings(base_url: &str) -> Settings {
    Settings {
        model: "gpt-4o-mini".into(),
        base_url: base_url.into(),
        api_key: None,
        timeout: Duration::from_secs(5),
        retry: RetryPolicy::new(2),
        defaults: Defaults::default(),
        headers: Vec::new(),
        prices: None,
    }
}

/// Millisecond backoffs, so retry tests are fast.
fn fast(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(30),
    }
}

fn model(settings: Settings, max_retries: u32) -> OpenAiModel {
    OpenAiModel::new(settings)
        .expect("client builds")
        .with_retry(fast(max_retries))
}

/// An owned request (`ModelRequest` borrows from the agent loop).
struct Ask {
    messages: Vec<ChatMessage>,
    tools: Vec<ToolSpec>,
    options: ModelOptions,
    cancel: Cancellation,
}

impl Ask {
    fn req(&self) -> ModelRequest<'_> {
        ModelRequest {
            messages: &self.messages,
            tools: &self.tools,
            options: self.options.clone(),
            cancel: self.cancel.clone(),
            cursors: crate::runtime::model::TurnCursors::new(),
            deltas: None,
            run_id: None,
        }
    }
}

fn ask(text: &str) -> Ask {
    Ask {
        messages: vec![
            ChatMessage::text(Role::System, "You are terse."),
            ChatMessage::text(Role::User, text),
        ],
        tools: Vec::new(),
        options: ModelOptions::default(),
        cancel: Cancellation::new(),
    }
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_current_weather".into(),
        description: "Get the current weather in a given location".into(),
        parameters: json!({
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"]
        }),
    }
}

/// A documented-shape completion with `message` and `finish_reason`.
fn completion(message: &Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_677_652_288,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason
        }],
        "usage": {
            "prompt_tokens": 82,
            "completion_tokens": 17,
            "total_tokens": 99,
            "completion_tokens_details": {"reasoning_tokens": 0}
        },
        "service_tier": "default"
    })
}

// ---------------------------------------------------------------- answers

#[tokio::test]
async fn recorded_plain_text_answer() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(
            &json!({"role": "assistant", "content": "Hello there, how may I assist you today?", "refusal": null}),
            "stop",
        ),
    )])
    .await;
    let mut s = settings(&server.base_url);
    s.prices = Some(Prices {
        input_per_million: 0.15,
        output_per_million: 0.6,
    });
    s.defaults = Defaults {
        temperature: Some(0.2),
        max_tokens: Some(256),
    };
    let m = model(s, 2);
    assert_eq!(m.model_name(), "gpt-4o-mini");
    assert_eq!(m.provider(), "openai");
    let r = m.complete(&ask("Hello!").req()).await.unwrap();
    assert_eq!(r.message.role, Role::Assistant);
    assert_eq!(
        r.message.content,
        "Hello there, how may I assist you today?"
    );
    assert!(r.message.tool_calls.is_empty());
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.model, "gpt-4o-mini-2024-07-18");
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 82,
            output_tokens: 17
        })
    );
    let cost = r.estimated_cost.unwrap();
    assert!(
        (cost - (82.0 * 0.15 + 17.0 * 0.6) / 1e6).abs() < 1e-12,
        "{cost}"
    );

    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.headers["content-type"], "application/json");
    assert!(
        !req.headers.contains_key("authorization"),
        "no key, no header"
    );
    assert_eq!(
        req.body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Hello!"}
            ],
            "temperature": 0.2,
            "max_tokens": 256
        }),
        "no `tools` key when there are no tools"
    );
}

#[tokio::test]
async fn recorded_tool_calls_with_string_arguments() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(
            &json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [
                    {"id": "call_abc123", "type": "function", "function": {
                        "name": "get_current_weather",
                        "arguments": "{\n\"location\": \"Boston, MA\"\n}"}},
                    {"id": "call_def456", "type": "function", "function": {
                        "name": "get_current_weather",
                        "arguments": "{\"location\": \"Paris, France\"}"}}
                ],
                "refusal": null
            }),
            "tool_calls",
        ),
    )])
    .await;
    let m = model(settings(&server.base_url), 0);
    let mut request = ask("Weather in Boston and Paris?");
    request.tools.push(weather_tool());
    let r = m.complete(&request.req()).await.unwrap();
    assert_eq!(r.message.content, "");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    let calls = &r.message.tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "call_abc123");
    assert_eq!(calls[0].name, "get_current_weather");
    assert_eq!(calls[0].arguments, json!({"location": "Boston, MA"}));
    assert_eq!(calls[0].malformed, None);
    assert_eq!(calls[1].arguments, json!({"location": "Paris, France"}));

    let body = &server.requests()[0].body;
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}
        }}])
    );
}

#[tokio::test]
async fn recorded_tool_round_trip_sends_assistant_calls_and_tool_results() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(
            &json!({"role": "assistant", "content": "It is 22 °C in Boston."}),
            "stop",
        ),
    )])
    .await;
    let m = model(settings(&server.base_url), 0);
    let mut request = ask("Weather in Boston?");
    request.tools.push(weather_tool());
    request.messages.push(ChatMessage {
        role: Role::Assistant,
        content: String::new(),
        tool_calls: vec![crate::runtime::model::ModelToolCall {
            id: "call_abc123".into(),
            name: "get_current_weather".into(),
            arguments: json!({"location": "Boston, MA"}),
            malformed: None,
        }],
        tool_call_id: None,
        name: None,
    });
    request.messages.push(ChatMessage::tool(
        "call_abc123",
        "get_current_weather",
        "{\"celsius\": 22}".into(),
    ));
    let r = m.complete(&request.req()).await.unwrap();
    assert_eq!(r.message.content, "It is 22 °C in Boston.");
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_abc123", "type": "function",
            "function": {"name": "get_current_weather", "arguments": "{\"location\":\"Boston, MA\"}"}
        }]})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "content": "{\"celsius\": 22}", "tool_call_id": "call_abc123"})
    );
}

#[tokio::test]
async fn synthetic_malformed_arguments_keep_the_call_with_a_reason() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(
            &json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {
                    "name": "get_current_weather", "arguments": "{\"location\": \"Bos"}}
            ]}),
            "tool_calls",
        ),
    )])
    .await;
    let r = model(settings(&server.base_url), 0)
        .complete(&ask("weather").req())
        .await
        .unwrap();
    let call = &r.message.tool_calls[0];
    assert_eq!(call.id, "call_1");
    assert_eq!(call.name, "get_current_weather");
    assert_eq!(call.arguments, Value::Null);
    let reason = call.malformed.as_deref().unwrap();
    assert!(reason.contains("not valid JSON"), "{reason}");
}

#[tokio::test]
async fn synthetic_arguments_as_an_object_are_accepted() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(
            &json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {
                    "name": "get_current_weather", "arguments": {"location": "Oslo"}}}
            ]}),
            "tool_calls",
        ),
    )])
    .await;
    let r = model(settings(&server.base_url), 0)
        .complete(&ask("weather").req())
        .await
        .unwrap();
    let call = &r.message.tool_calls[0];
    assert_eq!(call.arguments, json!({"location": "Oslo"}));
    assert_eq!(call.malformed, None);
}

#[tokio::test]
async fn synthetic_ollama_like_answer_without_usage_and_with_empty_finish_reason() {
    let server = Server::start(vec![Reply::json(
        200,
        &json!({
            "id": "chatcmpl-42",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "llama3.2",
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi."}, "finish_reason": ""}]
        }),
    )])
    .await;
    let mut s = settings(&server.base_url);
    s.model = "llama3.2".into();
    s.prices = Some(Prices {
        input_per_million: 1.0,
        output_per_million: 1.0,
    });
    let r = model(s, 0).complete(&ask("hi").req()).await.unwrap();
    assert_eq!(r.message.content, "Hi.");
    assert_eq!(r.finish_reason, None);
    // No usage reported: charged an estimate, as a stream without usage
    // is (a tokens budget holds against such a server), never zero.
    let usage = r.usage.expect("an estimate");
    assert!(
        usage.input_tokens >= 1 && usage.output_tokens == 1,
        "{usage:?}"
    );
    assert!(r.estimated_cost.is_some_and(|c| c > 0.0), "{r:?}");
    assert_eq!(r.model, "llama3.2");
}

#[tokio::test]
async fn synthetic_streamed_request_answered_whole_by_a_page_that_is_not_json() {
    // Asked to stream, a proxy answers 200 with an HTML page: the error
    // quotes it, as for a call that did not stream (it was read as a
    // stream that "ended before [DONE]").
    let page = "<html><body>Bad Gateway from the proxy</body></html>";
    let server = Server::start(vec![Reply::text(200, "text/html", page)]).await;
    let asked = ask("hi");
    let mut request = asked.req();
    request.deltas = Some(crate::runtime::model::TextDeltas(std::sync::Arc::new(
        |_: &str| {},
    )));
    let err = model(settings(&server.base_url), 0)
        .complete(&request)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("not a Chat Completions JSON document") && text.contains("Bad Gateway"),
        "{text}"
    );
}

// ---------------------------------------------------------------- failures

#[tokio::test]
async fn synthetic_429_with_retry_after_zero_then_success() {
    let server = Server::start(vec![
        Reply::json(
            429,
            &json!({"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
        )
        .header("Retry-After", "0"),
        Reply::json(200, &completion(&json!({"role": "assistant", "content": "ok"}), "stop")),
    ])
    .await;
    // A 10 s computed backoff proves that `Retry-After: 0` won.
    let m = OpenAiModel::new(settings(&server.base_url))
        .unwrap()
        .with_retry(RetryPolicy {
            base: Duration::from_secs(10),
            max_backoff: Duration::from_secs(10),
            ..RetryPolicy::new(2)
        });
    let started = Instant::now();
    let r = m.complete(&ask("hi").req()).await.unwrap();
    assert_eq!(r.message.content, "ok");
    assert_eq!(server.requests().len(), 2);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn recorded_429_for_an_exhausted_quota_is_not_retried() {
    let server = Server::start(vec![
        Reply::json(
            429,
            &json!({"error": {
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "type": "insufficient_quota",
                "param": null,
                "code": "insufficient_quota"
            }}),
        ),
        Reply::json(200, &completion(&json!({"role": "assistant", "content": "never"}), "stop")),
    ])
    .await;
    let err = model(settings(&server.base_url), 2)
        .complete(&ask("hi").req())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::Http { status: 429, message } if message.starts_with("You exceeded your current quota")),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn synthetic_500_twice_then_success() {
    let server = Server::start(vec![
        Reply::text(500, "text/plain", "internal error"),
        Reply::json(
            500,
            &json!({"error": {"message": "The server had an error"}}),
        ),
        Reply::json(
            200,
            &completion(
                &json!({"role": "assistant", "content": "third time"}),
                "stop",
            ),
        ),
    ])
    .await;
    let r = model(settings(&server.base_url), 2)
        .complete(&ask("hi").req())
        .await
        .unwrap();
    assert_eq!(r.message.content, "third time");
    let seen = server.requests();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].body, seen[2].body, "the same request is retried");
}

#[tokio::test]
async fn recorded_400_is_not_retried_and_surfaces_the_server_message() {
    let server = Server::start(vec![
        Reply::json(
            400,
            &json!({"error": {
                "message": "Invalid value for 'temperature': must be between 0 and 2.",
                "type": "invalid_request_error",
                "param": "temperature",
                "code": null
            }}),
        ),
        Reply::json(
            200,
            &completion(&json!({"role": "assistant", "content": "never"}), "stop"),
        ),
    ])
    .await;
    let err = model(settings(&server.base_url), 2)
        .complete(&ask("hi").req())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ModelError::Http {
            status: 400,
            message: "Invalid value for 'temperature': must be between 0 and 2.".into()
        }
    );
    assert_eq!(
        server.requests().len(),
        1,
        "4xx other than 429 is never retried"
    );
}

#[tokio::test]
async fn synthetic_retries_exhausted_report_the_last_status() {
    let server = Server::start(vec![
        Reply::json(503, &json!({"error": {"message": "overloaded"}})),
        Reply::json(503, &json!({"error": {"message": "overloaded"}})),
        Reply::json(503, &json!({"error": {"message": "still overloaded"}})),
        Reply::json(
            200,
            &completion(&json!({"role": "assistant", "content": "too late"}), "stop"),
        ),
    ])
    .await;
    let err = model(settings(&server.base_url), 2)
        .complete(&ask("hi").req())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ModelError::Http {
            status: 503,
            message: "still overloaded (gave up after 3 attempts)".into()
        }
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn synthetic_non_json_error_body_is_a_bounded_excerpt() {
    let page = format!("<html><body>{}</body></html>", "Bad gateway. ".repeat(200));
    let server = Server::start(vec![Reply::text(502, "text/html", &page)]).await;
    let err = model(settings(&server.base_url), 0)
        .complete(&ask("hi").req())
        .await
        .unwrap_err();
    let ModelError::Http { status, message } = err else {
        panic!("expected HTTP, got {err:?}");
    };
    assert_eq!(status, 502);
    assert!(message.starts_with("<html><body>Bad gateway."), "{message}");
    assert!(message.chars().count() <= 301, "{}", message.len());
}

#[tokio::test]
async fn an_error_excerpt_cut_through_a_secret_keeps_no_piece_of_it() {
    // The secret (the harness's, not the key) straddles the excerpt's cut
    // (300 characters) at every offset, in a JSON message and in a page;
    // whitespace collapsed first would have hidden a value with a line
    // break in it from the redactor.
    let secret = "sk-excerpt-7f3a9c2e51d4\nline-two";
    let redactor = crate::engine::secret::Redactor::new();
    redactor.learn(&crate::engine::secret::SecretValue::new(secret.to_owned()));
    for before in 300 - secret.len()..=300 {
        let text = format!("{}{secret} and more", "x".repeat(before));
        let server = Server::start(vec![
            Reply::json(400, &json!({ "error": { "message": text } })),
            Reply::text(502, "text/html", &text),
        ])
        .await;
        for _ in 0..2 {
            let err = OpenAiModel::with_redactor(settings(&server.base_url), redactor.clone())
                .unwrap()
                .with_retry(fast(0))
                .complete(&ask("hi").req())
                .await
                .unwrap_err();
            let shown = err.to_string();
            for piece in secret.as_bytes().windows(6) {
                let piece = std::str::from_utf8(piece).unwrap();
                assert!(!shown.contains(piece), "{before}: {piece:?} in {shown}");
            }
        }
    }
}

#[tokio::test]
async fn synthetic_unparseable_success_body_is_a_protocol_error() {
    let server = Server::start(vec![Reply::text(
        200,
        "application/json",
        "{\"choices\": [",
    )])
    .await;
    let err = model(settings(&server.base_url), 2)
        .complete(&ask("hi").req())
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Protocol(_)), "{err:?}");
    assert_eq!(
        server.requests().len(),
        1,
        "a protocol error is not retried"
    );
}

#[tokio::test]
async fn synthetic_timeout_is_reported_and_not_retried() {
    let server = Server::start(vec![
        Reply::json(
            200,
            &completion(&json!({"role": "assistant", "content": "slow"}), "stop"),
        )
        .delayed(Duration::from_secs(3)),
    ])
    .await;
    let mut s = settings(&server.base_url);
    s.timeout = Duration::from_millis(200);
    let started = Instant::now();
    let err = model(s, 2).complete(&ask("hi").req()).await.unwrap_err();
    assert_eq!(err, ModelError::Timeout(0.2));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_a_retried_transport_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = model(settings(&format!("http://{addr}/v1")), 2)
        .complete(&ask("hi").req())
        .await
        .unwrap_err();
    let ModelError::Transport(message) = err else {
        panic!("expected transport, got {err:?}");
    };
    assert!(message.contains("gave up after 3 attempts"), "{message}");
}

#[tokio::test]
async fn cancellation_aborts_a_pending_request() {
    let server = Server::start(vec![
        Reply::json(
            200,
            &completion(&json!({"role": "assistant", "content": "late"}), "stop"),
        )
        .delayed(Duration::from_secs(5)),
    ])
    .await;
    let m = model(settings(&server.base_url), 2);
    let request = ask("hi");
    let cancel = request.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let err = m.complete(&request.req()).await.unwrap_err();
    assert_eq!(err, ModelError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2));
}

// ---------------------------------------------------------------- secrets

#[tokio::test]
async fn synthetic_the_key_is_a_bearer_token_on_the_wire_and_nowhere_else() {
    // A server that echoes the key back, as some gateways do.
    let server = Server::start(vec![Reply::json(
        401,
        &json!({"error": {
            "message": format!("Incorrect API key provided: {CANARY}. Header {HEADER_CANARY} is not allowed."),
            "type": "invalid_request_error",
            "code": "invalid_api_key"
        }}),
    )])
    .await;
    let mut s = settings(&server.base_url);
    s.api_key = Some(SecretValue::new(CANARY));
    s.headers = vec![
        (
            "X-Gateway-Key".into(),
            HeaderSource::Secret(SecretValue::new(HEADER_CANARY)),
        ),
        (
            "OpenAI-Organization".into(),
            HeaderSource::Plain("org-test".into()),
        ),
    ];
    let settings_debug = format!("{s:?}");
    let m = model(s, 2);
    let err = m.complete(&ask("hi").req()).await.unwrap_err();

    let seen = server.requests();
    assert_eq!(seen.len(), 1, "401 is not retried");
    assert_eq!(seen[0].headers["authorization"], format!("Bearer {CANARY}"));
    assert_eq!(seen[0].headers["x-gateway-key"], HEADER_CANARY);
    assert_eq!(seen[0].headers["openai-organization"], "org-test");

    let ModelError::Http { status, message } = &err else {
        panic!("expected HTTP, got {err:?}");
    };
    assert_eq!(*status, 401);
    assert!(
        message.starts_with("Incorrect API key provided: <redacted>"),
        "{message}"
    );
    for text in [
        err.to_string(),
        format!("{err:?}"),
        format!("{m:?}"),
        format!(
            "{:?}",
            ModelHandle(Arc::new(model(settings(&server.base_url), 0)))
        ),
        settings_debug,
    ] {
        assert!(!text.contains(CANARY), "key leaked: {text}");
        assert!(
            !text.contains(HEADER_CANARY),
            "header secret leaked: {text}"
        );
    }
}

#[test]
fn settings_default_what_the_config_omits() {
    let config = ConfigValue::Table([("model".to_owned(), ConfigValue::Str("m".into()))].into());
    let s = settings_from_config(&config, &|n| Err(format!("no {n}"))).unwrap();
    assert_eq!(s.base_url, "https://api.openai.com/v1");
    assert!(s.api_key.is_none());
    assert_eq!(s.timeout, Duration::from_secs(60));
    assert_eq!(s.retry, RetryPolicy::new(2));
    assert_eq!(s.defaults, Defaults::default());
    assert!(s.headers.is_empty() && s.prices.is_none());
}

#[test]
fn settings_read_every_key_and_resolve_secret_headers() {
    use crate::engine::model::SecretRef;
    let table = |pairs: Vec<(&str, ConfigValue)>| {
        ConfigValue::Table(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    };
    let secret = |n: &str| ConfigValue::Secret(SecretRef { name: n.into() });
    let config = table(vec![
        ("model", ConfigValue::Str("llama3.2".into())),
        (
            "base_url",
            ConfigValue::Str("http://localhost:11434/v1".into()),
        ),
        ("api_key", secret("KEY")),
        ("timeout_seconds", ConfigValue::Int(5)),
        ("max_retries", ConfigValue::Int(4)),
        ("temperature", ConfigValue::Float(0.0)),
        ("max_tokens", ConfigValue::Int(64)),
        (
            "headers",
            table(vec![
                ("X-Plain", ConfigValue::Str("p".into())),
                ("X-Secret", secret("GATEWAY")),
            ]),
        ),
        (
            "prices",
            table(vec![
                ("input_per_million", ConfigValue::Int(1)),
                ("output_per_million", ConfigValue::Float(2.5)),
            ]),
        ),
    ]);
    let provider = StaticSecretProvider::new()
        .with("KEY", CANARY)
        .with("GATEWAY", HEADER_CANARY);
    let resolve = |n: &str| {
        crate::engine::secret::SecretProvider::get(&provider, n).map_err(|e| e.to_string())
    };
    let s = settings_from_config(&config, &resolve).unwrap();
    assert_eq!(s.model, "llama3.2");
    assert_eq!(s.base_url, "http://localhost:11434/v1");
    assert_eq!(s.api_key.as_ref().map(SecretValue::reveal), Some(CANARY));
    assert_eq!(s.timeout, Duration::from_secs(5));
    assert_eq!(s.retry.max_retries, 4);
    assert_eq!(
        s.defaults,
        Defaults {
            temperature: Some(0.0),
            max_tokens: Some(64)
        }
    );
    assert!(matches!(&s.headers[0], (n, HeaderSource::Plain(v)) if n == "X-Plain" && v == "p"));
    assert!(
        matches!(&s.headers[1], (n, HeaderSource::Secret(v)) if n == "X-Secret" && v.reveal() == HEADER_CANARY)
    );
    assert_eq!(
        s.prices,
        Some(Prices {
            input_per_million: 1.0,
            output_per_million: 2.5
        })
    );
    let debug = format!("{s:?}");
    assert!(
        !debug.contains(CANARY) && !debug.contains(HEADER_CANARY),
        "{debug}"
    );

    let only_key = StaticSecretProvider::new().with("KEY", CANARY);
    let err = settings_from_config(&config, &|n: &str| {
        crate::engine::secret::SecretProvider::get(&only_key, n).map_err(|e| e.to_string())
    })
    .unwrap_err();
    assert!(err.contains("secret `GATEWAY` is not set"), "{err}");
    assert!(!err.contains(CANARY), "{err}");
}

#[test]
fn an_https_client_builds_with_the_ring_provider() {
    let m = OpenAiModel::new(settings("https://api.openai.com/v1")).unwrap();
    assert_eq!(m.endpoint(), "https://api.openai.com/v1/chat/completions");
}

// ---------------------------------------------------------------- harness

fn entry_config(base_url: &str) -> ConfigValue {
    ConfigValue::Table(
        [
            ("model".to_owned(), ConfigValue::Str("gpt-4o-mini".into())),
            ("base_url".to_owned(), ConfigValue::Str(base_url.into())),
            (
                "api_key".to_owned(),
                ConfigValue::Secret(crate::engine::model::SecretRef {
                    name: "OPENAI_API_KEY".into(),
                }),
            ),
            ("max_retries".to_owned(), ConfigValue::Int(0)),
        ]
        .into(),
    )
}

fn composition(base_url: &str) -> crate::engine::model::Composition {
    let config = entry_config(base_url);
    let mut c = crate::engine::build::CompositionBuilder::new()
        .entry("model")
        .plugin("openai", "1.0.0")
        .config(config.clone())
        .build()
        .unwrap();
    let manifest = crate::engine::builtin::openai::KIND
        .derive(&config)
        .expect("the configuration is valid");
    for entry in c.entries.values_mut() {
        entry.manifest = Arc::new(manifest.clone());
    }
    c
}

fn harness(secrets: StaticSecretProvider) -> crate::runtime::Harness {
    let mut catalog = Catalog::new();
    crate::plugins::register_builtins(&mut catalog, &crate::plugins::BuiltinEnv::new("."));
    crate::runtime::Harness::new(
        catalog,
        crate::runtime::HarnessOptions {
            secrets: Arc::new(secrets),
            ..crate::runtime::HarnessOptions::default()
        },
    )
}

#[tokio::test]
async fn the_harness_mounts_the_model_and_agents_call_it_through_the_capability() {
    let server = Server::start(vec![Reply::json(
        200,
        &completion(&json!({"role": "assistant", "content": "mounted"}), "stop"),
    )])
    .await;
    let h = harness(StaticSecretProvider::new().with("OPENAI_API_KEY", CANARY));
    let report = h.reconcile(composition(&server.base_url)).await.unwrap();
    assert!(report.published);
    let generation = h.current().unwrap();
    let (capability, providers) = generation
        .capabilities
        .iter()
        .find(|(k, _)| k.as_str() == MODEL_CAPABILITY)
        .expect("model is provided");
    assert_eq!(capability.as_str(), "model");
    let handle = providers[0]
        .registration
        .value
        .downcast::<ModelHandle>()
        .expect("the value is a ModelHandle");
    assert_eq!(handle.0.provider(), "openai");
    assert_eq!(handle.0.model_name(), "gpt-4o-mini");
    let r = handle.0.complete(&ask("hi").req()).await.unwrap();
    assert_eq!(r.message.content, "mounted");
    assert_eq!(
        server.requests()[0].headers["authorization"],
        format!("Bearer {CANARY}")
    );
    h.shutdown().await;
}

#[tokio::test]
async fn setup_fails_clearly_when_the_secret_is_missing() {
    let h = harness(StaticSecretProvider::new());
    let err = h
        .reconcile(composition("http://127.0.0.1:9/v1"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("secret `OPENAI_API_KEY` is not set"), "{err}");
    // Secrets are resolved before the plugin mounts: the error names the entry.
    assert!(err.contains("entry `model`"), "{err}");
    assert!(h.current().is_none(), "nothing was published");
}
