//! The `openai` model: any OpenAI-compatible Chat Completions endpoint.
//!
//! One adapter covers OpenAI, Ollama, vLLM, llama.cpp's server and LM
//! Studio, because they share the wire format; the differences (omitted
//! usage, empty finish reasons, tool arguments as objects) are absorbed by
//! a lenient parser ([`wire`]) rather than by per-server code.
//!
//! Setup resolves the key and secret header values through
//! `ctx.secret(name)` — so the harness's redactor learns them — and builds
//! one `reqwest::Client` per entry; a missing secret fails setup with the
//! secret's name and where it was looked for, never a value. The key is
//! held in a sensitive header value and never printed (`Debug` of every
//! type here omits it).
//!
//! The configuration schema and the manifest are pure and live in
//! [`crate::engine::builtin::openai`].

pub mod client;
pub mod retry;
mod stream;
pub mod wire;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

pub use client::{HeaderSource, OpenAiModel, Settings, client_builder, install_crypto_provider};

use crate::engine::builtin::openai::{self as kind, DEFAULT_BASE_URL};
use crate::engine::model::{ConfigValue, Entry, Manifest};
use crate::runtime::model::{MODEL_CAPABILITY, ModelHandle};
use crate::runtime::{BoxError, CapabilityValue, Catalog, Plugin, PluginContext};
use retry::RetryPolicy;
use wire::{Defaults, Prices};

fn number(v: &ConfigValue) -> Option<f64> {
    match v {
        // Configuration integers are small; the cast is exact below 2^53.
        #[allow(clippy::cast_precision_loss)]
        ConfigValue::Int(i) => Some(*i as f64),
        ConfigValue::Float(f) => Some(*f),
        _ => None,
    }
}

fn uint(v: &ConfigValue) -> Option<u64> {
    match v {
        ConfigValue::Int(i) => u64::try_from(*i).ok(),
        _ => None,
    }
}

/// Read an entry's configuration into [`Settings`], resolving secrets with
/// `secret`. The configuration passed the kind's schema when the manifest
/// was derived; everything is still checked here, because a plugin may be
/// mounted from a composition built in code.
///
/// # Errors
///
/// The first problem, as a message that names keys and secrets only.
pub fn settings_from_config(
    config: &ConfigValue,
    secret: &dyn Fn(&str) -> Result<crate::engine::secret::SecretValue, String>,
) -> Result<Settings, String> {
    let model = match config.get("model") {
        Some(ConfigValue::Str(m)) if !m.is_empty() => m.clone(),
        Some(_) => return Err("`model` must be a non-empty string".into()),
        None => return Err("`model` is required (the model name the endpoint knows)".into()),
    };
    let base_url = match config.get("base_url") {
        Some(ConfigValue::Str(u)) => u.clone(),
        Some(_) => return Err("`base_url` must be a string".into()),
        None => DEFAULT_BASE_URL.to_owned(),
    };
    if let Some(p) = kind::base_url_problem(&base_url) {
        return Err(format!("`base_url`: {p}"));
    }
    let api_key = match config.get("api_key") {
        None => None,
        Some(ConfigValue::Secret(r)) => Some(secret(&r.name)?),
        Some(_) => {
            return Err(
                "`api_key` must be a secret reference, e.g. `{ secret = \"OPENAI_API_KEY\" }`"
                    .into(),
            );
        }
    };
    let timeout = match config.get("timeout_seconds") {
        None => Duration::from_secs_f64(kind::DEFAULT_TIMEOUT_SECONDS),
        Some(v) => number(v)
            .filter(|s| *s > 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or("`timeout_seconds` must be a positive number")?,
    };
    let max_retries = match config.get("max_retries") {
        None => kind::DEFAULT_MAX_RETRIES,
        Some(v) => uint(v)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n <= kind::MAX_RETRIES_LIMIT)
            .ok_or_else(|| {
                format!(
                    "`max_retries` must be an integer from 0 to {}",
                    kind::MAX_RETRIES_LIMIT
                )
            })?,
    };
    let temperature = match config.get("temperature") {
        None => None,
        Some(v) => Some(number(v).ok_or("`temperature` must be a number")?),
    };
    let max_tokens = match config.get("max_tokens") {
        None => None,
        Some(v) => Some(
            uint(v)
                .filter(|n| *n > 0)
                .ok_or("`max_tokens` must be a positive integer")?,
        ),
    };
    let mut headers = Vec::new();
    match config.get("headers") {
        None => {}
        Some(ConfigValue::Table(map)) => {
            for (name, value) in map {
                let source = match value {
                    ConfigValue::Str(s) => HeaderSource::Plain(s.clone()),
                    ConfigValue::Secret(r) => HeaderSource::Secret(secret(&r.name)?),
                    _ => {
                        return Err(format!(
                            "header `{name}` must be a string or a secret reference"
                        ));
                    }
                };
                headers.push((name.clone(), source));
            }
        }
        Some(_) => return Err("`headers` must be a table".into()),
    }
    let prices = match config.get("prices") {
        None => None,
        Some(p) => {
            let price = |k: &str| {
                p.get(k)
                    .and_then(number)
                    .filter(|n| *n >= 0.0)
                    .ok_or_else(|| format!("`prices.{k}` must be a non-negative number"))
            };
            Some(Prices {
                input_per_million: price("input_per_million")?,
                output_per_million: price("output_per_million")?,
            })
        }
    };
    Ok(Settings {
        model,
        base_url,
        api_key,
        timeout,
        retry: RetryPolicy::new(max_retries),
        defaults: Defaults {
            temperature,
            max_tokens,
        },
        headers,
        prices,
    })
}

struct OpenAiPlugin {
    manifest: Arc<Manifest>,
    redactor: crate::engine::secret::Redactor,
}

#[async_trait::async_trait]
impl Plugin for OpenAiPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn setup(&self, ctx: PluginContext) -> Result<(), BoxError> {
        let settings = settings_from_config(ctx.config(), &|name| {
            ctx.secret(name).map_err(|e| e.to_string())
        })
        .map_err(|e| format!("openai model `{}`: {e}", ctx.entry_id()))?;
        let model = OpenAiModel::with_redactor(settings, self.redactor.clone())
            .map_err(|e| format!("openai model `{}`: {e}", ctx.entry_id()))?;
        let version = self
            .manifest
            .provides
            .values()
            .next()
            .and_then(|p| p.versions.first())
            .map_or_else(
                || crate::runtime::model::MODEL_CONTRACT_VERSION.to_owned(),
                |v| v.as_str().to_owned(),
            );
        ctx.capabilities().provide(
            MODEL_CAPABILITY,
            CapabilityValue::new(ModelHandle(Arc::new(model))),
            &version,
        )?;
        Ok(())
    }
}

/// Install the kind. Also installs the process's rustls crypto provider
/// ([`install_crypto_provider`]), so every reqwest client built after the
/// built-ins are registered (this one's, MCP's) finds it.
pub fn register(catalog: &mut Catalog) {
    register_with(catalog, crate::engine::secret::Redactor::new());
}

/// [`register`] with the harness's redactor: what a server says in an
/// error is quoted with no secret the harness knows in it.
pub fn register_with(catalog: &mut Catalog, redactor: crate::engine::secret::Redactor) {
    install_crypto_provider();
    catalog.register(
        crate::engine::builtin::openai::KIND.name,
        Arc::new(move |entry: &Entry| {
            Ok(Arc::new(OpenAiPlugin {
                manifest: Arc::clone(&entry.manifest),
                redactor: redactor.clone(),
            }) as Arc<dyn Plugin>)
        }),
    );
}
