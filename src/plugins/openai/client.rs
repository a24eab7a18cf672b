//! The HTTP client: one `POST {base_url}/chat/completions` per attempt,
//! retried per [`RetryPolicy`], bounded by a per-attempt timeout, and
//! abandoned the moment the run's [`Cancellation`](crate::runtime::tool::Cancellation) fires.
//!
//! Everything that can carry server text (error messages, body excerpts,
//! transport errors, which include the URL) passes through a [`Redactor`]
//! that knows the key and every secret header value, so a server that
//! echoes the credential back cannot put it into a trace or an error.

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::retry::{RetryPolicy, parse_retry_after, retryable_status};
use super::wire::{self, ChatResponse, Defaults, Prices};
use crate::engine::secret::{Redactor, SecretValue};
use crate::runtime::model::{ChatModel, ModelError, ModelRequest, ModelResponse, TextDeltas};

/// The most of a successful answer read (larger is a protocol error).
const MAX_BODY: usize = 16 * 1024 * 1024;
/// The most of an error answer read.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The most characters of an error body quoted in an error.
const EXCERPT_CHARS: usize = 300;

/// A header value: literal, or resolved from a secret.
#[derive(Clone, Debug)]
pub enum HeaderSource {
    /// A literal value.
    Plain(String),
    /// A secret's value (`Debug` shows `<redacted>`).
    Secret(SecretValue),
}

/// The resolved configuration of one model.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The model name sent and reported.
    pub model: String,
    /// The API root.
    pub base_url: String,
    /// The key, sent as `Authorization: Bearer …`.
    pub api_key: Option<SecretValue>,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Retry schedule.
    pub retry: RetryPolicy,
    /// Temperature and token defaults.
    pub defaults: Defaults,
    /// Extra headers, in configuration order.
    pub headers: Vec<(String, HeaderSource)>,
    /// Prices for `estimated_cost`.
    pub prices: Option<Prices>,
}

pub use crate::plugins::http::{client_builder, install_crypto_provider};

/// Why an attempt failed, and whether another may succeed.
struct Failure {
    error: ModelError,
    retry: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retry: false,
            retry_after: None,
        }
    }
}

/// A chat model behind an OpenAI-compatible endpoint.
pub struct OpenAiModel {
    model: String,
    endpoint: String,
    http: reqwest::Client,
    /// Authorization and configured headers (secret values marked
    /// sensitive); never printed.
    headers: HeaderMap,
    timeout: Duration,
    retry: RetryPolicy,
    defaults: Defaults,
    prices: Option<Prices>,
    redactor: Redactor,
}

impl std::fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("model", &self.model)
            .field("endpoint", &self.redactor.redact(&self.endpoint))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    /// A model from resolved settings: builds its one HTTP client.
    ///
    /// # Errors
    ///
    /// A header that is not valid HTTP, or a client that cannot be built
    /// (no usable TLS roots); the message names no secret value.
    pub fn new(settings: Settings) -> Result<Self, String> {
        Self::with_redactor(settings, Redactor::new())
    }

    /// [`Self::new`] redacting with `redactor` (the harness's, which knows
    /// every secret it resolved), taught the key and the secret headers:
    /// what the server says is quoted with none of them in it.
    ///
    /// # Errors
    ///
    /// As [`Self::new`].
    pub fn with_redactor(settings: Settings, redactor: Redactor) -> Result<Self, String> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &settings.api_key {
            redactor.learn(key);
            let mut v = HeaderValue::from_str(&format!("Bearer {}", key.reveal()))
                .map_err(|_| "the API key contains characters an HTTP header cannot carry")?;
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        for (name, source) in &settings.headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
            let value = match source {
                HeaderSource::Plain(v) => HeaderValue::from_str(v)
                    .map_err(|_| format!("the value of header `{name}` is not valid HTTP"))?,
                HeaderSource::Secret(secret) => {
                    redactor.learn(secret);
                    let mut v = HeaderValue::from_str(secret.reveal()).map_err(|_| {
                        format!("the secret value of header `{name}` is not valid HTTP")
                    })?;
                    v.set_sensitive(true);
                    v
                }
            };
            headers.insert(header, value);
        }
        let mut builder = client_builder();
        if settings.base_url.starts_with("http://") {
            // Plain HTTP (a local server) needs no CA roots; do not fail
            // on a machine that has none.
            builder = builder.tls_certs_only(Vec::new());
        }
        let http = builder.build().map_err(|e| {
            format!(
                "cannot build the HTTP client: {}",
                redactor.redact(&chain(&e))
            )
        })?;
        let endpoint = format!(
            "{}/chat/completions",
            settings.base_url.trim_end_matches('/')
        );
        Ok(Self {
            model: settings.model,
            endpoint,
            http,
            headers,
            timeout: settings.timeout,
            retry: settings.retry,
            defaults: settings.defaults,
            prices: settings.prices,
            redactor,
        })
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Replace the retry schedule (tests use millisecond backoffs).
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    fn redact(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    fn redact_error(&self, error: ModelError) -> ModelError {
        match error {
            ModelError::Transport(m) => ModelError::Transport(self.redact(&m)),
            ModelError::Http { status, message } => ModelError::Http {
                status,
                message: self.redact(&message),
            },
            ModelError::Protocol(m) => ModelError::Protocol(self.redact(&m)),
            ModelError::Refused(m) => ModelError::Refused(self.redact(&m)),
            ModelError::Scripted(m) => ModelError::Scripted(self.redact(&m)),
            ModelError::Replay(m) => ModelError::Replay(self.redact(&m)),
            other @ (ModelError::Timeout(_) | ModelError::Cancelled) => other,
        }
    }

    /// One attempt; with `deltas`, the answer streams and its text goes
    /// there as it arrives. Only what fails before the answer starts is
    /// retried: once a streamed answer has begun, its text was handed on.
    async fn attempt(
        &self,
        body: &[u8],
        deltas: Option<&TextDeltas>,
    ) -> Result<ModelResponse, Failure> {
        let transport = |e: reqwest::Error| Failure {
            error: ModelError::Transport(chain(&e)),
            retry: true,
            retry_after: None,
        };
        let response = self
            .http
            .post(&self.endpoint)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(
                ACCEPT,
                if deltas.is_some() {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .body(body.to_vec())
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            // A body that breaks off still leaves the status to report.
            // Redacted before it is cut: a secret the excerpt's end (or
            // the read's limit) went through would be left half.
            let (bytes, cut) = read_bounded(response, MAX_ERROR_BODY)
                .await
                .unwrap_or_default();
            let message = wire::error_message(&bytes)
                .map(|m| wire::excerpt(&self.redact(&m), EXCERPT_CHARS))
                .filter(|m| !m.is_empty())
                .or_else(|| {
                    let (text, _) = self.redactor.redact_window(&bytes, false, cut);
                    let text = wire::excerpt(&text, EXCERPT_CHARS);
                    (!text.is_empty()).then_some(text)
                })
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("no body").to_owned());
            return Err(Failure {
                error: ModelError::Http {
                    status: status.as_u16(),
                    message,
                },
                // A 429 for an exhausted quota (not a rate) will not pass
                // by waiting.
                retry: retryable_status(status.as_u16())
                    && wire::error_code(&bytes).as_deref() != Some("insufficient_quota"),
                retry_after,
            });
        }
        // Only an event stream is read as one. A server that ignores
        // `stream` answers whole — as JSON, or as an error page of another
        // type, whose text the whole-body path quotes — and that answer is
        // read as usual and handed on as one piece.
        let streamed = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if let (Some(deltas), true) = (deltas, streamed) {
            let parsed =
                super::stream::read(response, deltas, body.len(), MAX_BODY, &self.redactor)
                    .await
                    .map_err(Failure::fatal)?;
            return wire::parse_response(parsed, &self.model, self.prices.as_ref())
                .map_err(Failure::fatal);
        }
        let (bytes, cut) = read_bounded(response, MAX_BODY).await.map_err(transport)?;
        if cut {
            return Err(Failure::fatal(ModelError::Protocol(format!(
                "the answer is larger than {} MiB",
                MAX_BODY / (1024 * 1024)
            ))));
        }
        let parsed: ChatResponse = serde_json::from_slice(&bytes).map_err(|e| {
            Failure::fatal(ModelError::Protocol(format!(
                "the answer is not a Chat Completions JSON document ({e}): {}",
                wire::excerpt(
                    &self.redact(&String::from_utf8_lossy(&bytes)),
                    EXCERPT_CHARS
                )
            )))
        })?;
        let mut answer = wire::parse_response(parsed, &self.model, self.prices.as_ref())
            .map_err(Failure::fatal)?;
        if answer.usage.is_none() {
            // Charged as a stream without usage is: never zero.
            let usage = wire::estimated_usage(body.len(), wire::generated_chars(&answer.message));
            answer.estimated_cost = self.prices.as_ref().map(|p| p.cost(&usage));
            answer.usage = Some(usage);
        }
        if let Some(deltas) = deltas {
            deltas.send(&answer.message.content);
        }
        Ok(answer)
    }
}

/// A reqwest error with its causes (`error sending request …: connection
/// refused`), which its `Display` alone leaves out.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// Up to `limit` bytes of the body, and whether it was cut.
async fn read_bounded(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut buf = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit.saturating_sub(buf.len());
        if chunk.len() > room {
            buf.extend_from_slice(&chunk[..room]);
            return Ok((buf, true));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok((buf, false))
}

#[async_trait::async_trait]
impl ChatModel for OpenAiModel {
    fn model_name(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &str {
        "openai"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let body = serde_json::to_vec(&wire::build_request(&self.model, request, self.defaults))
            .map_err(|e| ModelError::Protocol(format!("cannot encode the request: {e}")))?;
        let mut retry = 0u32;
        loop {
            if request.cancel.is_cancelled() {
                return Err(ModelError::Cancelled);
            }
            let outcome = tokio::select! {
                biased;
                () = request.cancel.cancelled() => return Err(ModelError::Cancelled),
                r = tokio::time::timeout(self.timeout, self.attempt(&body, request.deltas.as_ref())) => r,
            };
            let failure = match outcome {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(failure)) => failure,
                Err(_) => return Err(ModelError::Timeout(self.timeout.as_secs_f64())),
            };
            let error = self.redact_error(failure.error);
            if !failure.retry {
                return Err(error);
            }
            if retry >= self.retry.max_retries {
                return Err(if retry == 0 {
                    error
                } else {
                    gave_up(error, retry + 1)
                });
            }
            let wait = self.retry.delay(retry, failure.retry_after);
            tracing::debug!(
                model = %self.model,
                retry = retry + 1,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                error = %error,
                "retrying the model call"
            );
            tokio::select! {
                biased;
                () = request.cancel.cancelled() => return Err(ModelError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
            retry += 1;
        }
    }
}

/// `error`, saying how many attempts were made.
fn gave_up(error: ModelError, attempts: u32) -> ModelError {
    let note = format!(" (gave up after {attempts} attempts)");
    match error {
        ModelError::Transport(m) => ModelError::Transport(m + &note),
        ModelError::Http { status, message } => ModelError::Http {
            status,
            message: message + &note,
        },
        other => other,
    }
}
