//! `openai`: a model behind any OpenAI-compatible Chat Completions endpoint.
//!
//! OpenAI itself, and the servers that speak its wire format (Ollama, vLLM,
//! llama.cpp's server, LM Studio), are one kind: only `base_url`, the model
//! name and the key differ. This module is the pure half — the `config`
//! schema and the manifest (it provides `model`); the HTTP client lives in
//! `crate::plugins::openai`.
//!
//! The key is a secret *reference*, never a literal: the composition names
//! the secret and the harness resolves it at mount time, so snapshots and
//! hashes never see its value.
//!
//! ```toml
//! [entries.model]
//! plugin = "openai"
//! config.model = "gpt-4o-mini"
//! config.api_key = { secret = "OPENAI_API_KEY" }
//!
//! [entries.local]
//! plugin = "openai"
//! config.model = "llama3.2"
//! config.base_url = "http://localhost:11434/v1"   # Ollama: no key
//! ```

use serde_json::{Value, json};

use super::{BuiltinKind, ConfigProblem, providing};
use crate::engine::model::{ConfigValue, Manifest};

/// The kind.
pub const KIND: BuiltinKind = BuiltinKind {
    name: "openai",
    summary: "a model behind an OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, vLLM, …)",
    config_schema,
    manifest,
};

/// The endpoint used when `base_url` is not given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Seconds one attempt may take when `timeout_seconds` is not given.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 60.0;
/// Retries after the first attempt when `max_retries` is not given.
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// The largest `max_retries` accepted.
pub const MAX_RETRIES_LIMIT: u32 = 10;

/// The schema of a secret reference (`{ secret = "NAME" }` in TOML).
fn secret_ref_schema(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        "additionalProperties": false,
        "required": ["secret"],
        "properties": {
            "secret": { "type": "string", "minLength": 1, "description": "The secret's name (resolved at run time, e.g. from the environment)." }
        }
    })
}

/// The `config` schema.
pub fn config_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "OpenAI-compatible model",
        "type": "object",
        "additionalProperties": false,
        "required": ["model"],
        "properties": {
            "model": {
                "type": "string",
                "minLength": 1,
                "description": "The model name the endpoint knows (`gpt-4o-mini`, `llama3.2`, …)."
            },
            "base_url": {
                "type": "string",
                "description": "The API root; `/chat/completions` is appended (default `https://api.openai.com/v1`; Ollama is `http://localhost:11434/v1`)."
            },
            "api_key": secret_ref_schema(
                "The API key, as a secret reference `{ secret = \"NAME\" }`; sent as `Authorization: Bearer …`. Omit it for servers that need none (Ollama)."
            ),
            "timeout_seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 3600,
                "description": "How long one attempt may take, connection to last byte (default 60)."
            },
            "max_retries": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_RETRIES_LIMIT,
                "description": "Retries after the first attempt on HTTP 429, 5xx and connection errors, with exponential backoff honouring `Retry-After` (default 2)."
            },
            "temperature": {
                "type": "number",
                "minimum": 0,
                "maximum": 2,
                "description": "Sampling temperature, unless the agent's request sets one."
            },
            "max_tokens": {
                "type": "integer",
                "minimum": 1,
                "description": "Upper bound on generated tokens, unless the agent's request sets one."
            },
            "headers": {
                "type": "object",
                "description": "Extra HTTP headers: a string, or a secret reference for a header that carries a credential.",
                "additionalProperties": {
                    "anyOf": [
                        { "type": "string" },
                        secret_ref_schema("A secret reference whose value is the header's value.")
                    ]
                }
            },
            "prices": {
                "type": "object",
                "description": "Prices per million tokens, for the `estimated_cost` of each call.",
                "additionalProperties": false,
                "required": ["input_per_million", "output_per_million"],
                "properties": {
                    "input_per_million": { "type": "number", "minimum": 0, "description": "Price of one million prompt tokens." },
                    "output_per_million": { "type": "number", "minimum": 0, "description": "Price of one million completion tokens." }
                }
            }
        }
    })
}

/// Why `url` cannot be a `base_url`, if it cannot.
pub fn base_url_problem(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let Some(rest) = rest else {
        return Some(format!(
            "`{url}` is not an http:// or https:// URL (e.g. `https://api.openai.com/v1`)"
        ));
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() {
        return Some(format!("`{url}` has no host"));
    }
    if host.contains('@') {
        return Some(format!(
            "`{}` carries credentials; give the key as `api_key = {{ secret = \"NAME\" }}`",
            url.split_once("://")
                .map_or(url, |(scheme, _)| scheme)
                .to_owned()
                + "://…@…"
        ));
    }
    if rest.contains(['?', '#']) {
        return Some(format!(
            "`{url}` has a query or fragment; give the API root only (`/chat/completions` is appended)"
        ));
    }
    if url.chars().any(char::is_whitespace) {
        return Some(format!("`{url}` contains whitespace"));
    }
    None
}

/// Whether `name` is a valid HTTP header name (an RFC 9110 token).
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Headers the client sets itself.
const RESERVED_HEADERS: &[&str] = &["content-type", "content-length", "host"];

fn manifest(config: &ConfigValue) -> Result<Manifest, Vec<ConfigProblem>> {
    let mut problems = Vec::new();
    if let Some(ConfigValue::Str(url)) = config.get("base_url")
        && let Some(p) = base_url_problem(url)
    {
        problems.push(ConfigProblem::new("/base_url", p));
    }
    if let Some(ConfigValue::Table(headers)) = config.get("headers") {
        for (name, value) in headers {
            let pointer = format!("/headers/{}", name.replace('~', "~0").replace('/', "~1"));
            if !is_header_name(name) {
                problems.push(ConfigProblem::new(
                    &pointer,
                    format!("`{name}` is not a valid HTTP header name"),
                ));
                continue;
            }
            let lower = name.to_ascii_lowercase();
            if RESERVED_HEADERS.contains(&lower.as_str()) {
                problems.push(ConfigProblem::new(
                    &pointer,
                    format!("`{name}` is set by the client and cannot be configured"),
                ));
            }
            if lower == "authorization" && config.get("api_key").is_some() {
                problems.push(ConfigProblem::new(
                    &pointer,
                    "give `api_key` or an `Authorization` header, not both",
                ));
            }
            if let ConfigValue::Str(v) = value
                && v.chars().any(|c| c == '\r' || c == '\n' || c == '\0')
            {
                problems.push(ConfigProblem::new(
                    &pointer,
                    "a header value cannot contain line breaks or NUL",
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(providing("openai", "1.0.0", "model", "1.0.0"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::SecretRef;

    fn table(pairs: Vec<(&str, ConfigValue)>) -> ConfigValue {
        ConfigValue::Table(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    fn s(v: &str) -> ConfigValue {
        ConfigValue::Str(v.to_owned())
    }

    fn secret(name: &str) -> ConfigValue {
        ConfigValue::Secret(SecretRef { name: name.into() })
    }

    #[test]
    fn a_full_configuration_derives_a_model_provider() {
        let config = table(vec![
            ("model", s("gpt-4o-mini")),
            ("base_url", s("http://localhost:11434/v1")),
            ("api_key", secret("OPENAI_API_KEY")),
            ("timeout_seconds", ConfigValue::Float(12.5)),
            ("max_retries", ConfigValue::Int(3)),
            ("temperature", ConfigValue::Float(0.2)),
            ("max_tokens", ConfigValue::Int(512)),
            (
                "headers",
                table(vec![
                    ("OpenAI-Organization", s("org-1")),
                    ("X-Gateway-Key", secret("GATEWAY_KEY")),
                ]),
            ),
            (
                "prices",
                table(vec![
                    ("input_per_million", ConfigValue::Float(0.15)),
                    ("output_per_million", ConfigValue::Float(0.6)),
                ]),
            ),
        ]);
        let m = KIND.derive(&config).expect("valid");
        assert_eq!(m.name.as_str(), "openai");
        assert_eq!(m.kind.as_deref(), Some("openai"));
        let provided: Vec<&str> = m.provides.keys().map(|k| k.as_str()).collect();
        assert_eq!(provided, ["model"]);
    }

    #[test]
    fn the_schema_refuses_what_it_can() {
        let bad = [
            table(vec![]),
            table(vec![("model", s("m")), ("api_key", s("sk-literal"))]),
            table(vec![("model", s("m")), ("unknown", s("x"))]),
            table(vec![
                ("model", s("m")),
                ("max_retries", ConfigValue::Int(-1)),
            ]),
            table(vec![
                ("model", s("m")),
                ("timeout_seconds", ConfigValue::Int(0)),
            ]),
            table(vec![
                ("model", s("m")),
                ("headers", table(vec![("X-A", ConfigValue::Int(1))])),
            ]),
            table(vec![
                ("model", s("m")),
                (
                    "prices",
                    table(vec![("input_per_million", ConfigValue::Float(1.0))]),
                ),
            ]),
        ];
        for config in bad {
            assert!(KIND.derive(&config).is_err(), "{config:?}");
        }
    }

    #[test]
    fn problems_the_schema_cannot_express_have_pointers() {
        let config = table(vec![
            ("model", s("m")),
            ("base_url", s("ftp://example.com")),
            ("api_key", secret("K")),
            (
                "headers",
                table(vec![
                    ("Authorization", s("Bearer x")),
                    ("bad header", s("x")),
                    ("Content-Type", s("text/plain")),
                    ("X-Ok", s("a\r\nInjected: 1")),
                ]),
            ),
        ]);
        let problems = KIND.derive(&config).unwrap_err();
        let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/base_url",
                "/headers/Authorization",
                "/headers/Content-Type",
                "/headers/X-Ok",
                "/headers/bad header"
            ]
        );
    }

    #[test]
    fn base_urls() {
        assert_eq!(base_url_problem("https://api.openai.com/v1"), None);
        assert_eq!(base_url_problem("http://127.0.0.1:8080"), None);
        assert!(base_url_problem("api.openai.com/v1").is_some());
        assert!(base_url_problem("https:///v1").is_some());
        assert!(base_url_problem("https://h/v1?x=1").is_some());
        assert!(base_url_problem("https://h/v 1").is_some());
        let p = base_url_problem("https://user:sk-abc@h/v1").unwrap();
        assert!(!p.contains("sk-abc"), "{p}");
    }
}
