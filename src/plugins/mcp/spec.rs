//! How to reach one MCP server, read from an `mcp` entry's configuration.
//!
//! The configuration was schema-checked at load; this turns it into what a
//! connection needs: the resolved program, its working directory and its
//! *whole* environment (the allow-list, the documented minimum, and the
//! secret variables, whose values the redactor learns before anything is
//! spawned), or the URL and headers of an HTTP server.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::engine::builtin::mcp as kind;
use crate::engine::secret::{Redactor, SecretValue};
use crate::plugins::BuiltinEnv;

/// Variables every stdio server gets when the chassis process has them, so
/// `#!/usr/bin/env node` servers start and find their home and locale.
pub const BASE_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// Which lifecycle the connection uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// Probe `server/discover` under [`kind::AUTO_PROBE_SECONDS`]; on an
    /// error, an exit or silence, start again with `initialize`.
    Auto,
    /// `initialize` (protocol versions up to 2025-11-25).
    Initialize,
    /// Stateless `server/discover` (2026-07-28).
    Discover,
}

/// Where the server is.
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking on stdin/stdout.
    Stdio {
        /// The resolved program.
        program: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Its working directory.
        cwd: PathBuf,
        /// Its whole environment (values may be secrets: never print).
        env: Vec<(OsString, OsString)>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The URL.
        url: String,
        /// Headers (values may be secrets: never print).
        headers: Vec<(String, String)>,
    },
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio {
                program, args, cwd, ..
            } => f
                .debug_struct("Stdio")
                .field("program", program)
                .field("args", args)
                .field("cwd", cwd)
                .finish_non_exhaustive(),
            Self::Http { url, .. } => f
                .debug_struct("Http")
                .field("url", url)
                .finish_non_exhaustive(),
        }
    }
}

/// Everything a connection needs.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// The entry id (for messages and logs).
    pub entry: String,
    /// Where.
    pub transport: Transport,
    /// Which lifecycle.
    pub lifecycle: Lifecycle,
    /// How long spawn, handshake and `tools/list` may take.
    pub startup_timeout: Duration,
    /// The longest message a stdio server may send.
    pub max_reply_bytes: usize,
}

impl ServerSpec {
    /// A short description for messages: the program or the URL.
    pub fn target(&self) -> String {
        match &self.transport {
            Transport::Stdio { program, .. } => format!("`{}`", program.display()),
            Transport::Http { url, .. } => format!("`{}`", shown_url(url)),
        }
    }
}

/// `url` without its query and fragment (tokens live there) or user info.
fn shown_url(url: &str) -> String {
    let no_query = url.split(['?', '#']).next().unwrap_or(url);
    let Some((scheme, rest)) = no_query.split_once("://") else {
        return no_query.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host}{path}")
}

/// The spec of `entry` with configuration `config` (as JSON); secrets are
/// looked up with `secret` and taught to `redactor`.
pub fn server_spec(
    entry: &str,
    config: &Value,
    env: &BuiltinEnv,
    secret: &dyn Fn(&str) -> Result<SecretValue, String>,
    redactor: &Redactor,
) -> Result<ServerSpec, String> {
    let lifecycle = match config.get("protocol").and_then(Value::as_str) {
        Some("initialize") => Lifecycle::Initialize,
        Some("discover") => Lifecycle::Discover,
        _ => Lifecycle::Auto,
    };
    let startup_timeout = Duration::from_secs_f64(
        config
            .get("startup_timeout_seconds")
            .and_then(Value::as_f64)
            .unwrap_or(kind::DEFAULT_STARTUP_TIMEOUT_SECONDS),
    );
    let reveal = |name: &str| -> Result<String, String> {
        let value = secret(name)?;
        redactor.learn(&value);
        Ok(value.reveal().to_owned())
    };
    let transport = if let Some(url) = config.get("url").and_then(Value::as_str) {
        let mut headers = Vec::new();
        if let Some(map) = config.get("headers").and_then(Value::as_object) {
            for (k, v) in map {
                let value = match v {
                    Value::String(s) => s.clone(),
                    other => match other.get("secret").and_then(Value::as_str) {
                        Some(name) => reveal(name)?,
                        None => {
                            return Err(format!("header `{k}` is neither a string nor a secret"));
                        }
                    },
                };
                headers.push((k.clone(), value));
            }
        }
        Transport::Http {
            url: url.to_owned(),
            headers,
        }
    } else {
        let program = config
            .get("command")
            .and_then(Value::as_str)
            .ok_or("give `command` (a stdio server) or `url` (an HTTP server)")?;
        let cwd =
            crate::plugins::command::working_dir(env, config.get("cwd").and_then(Value::as_str))
                .map_err(|e| e.to_string())?;
        let program =
            crate::process::resolve_program(program, &cwd, std::env::var_os("PATH").as_deref())
                .map_err(|e| e.to_string())?;
        let mut names: Vec<String> = BASE_ENV.iter().map(|s| (*s).to_owned()).collect();
        names.extend(crate::engine::builtin::string_array(config.get("env")));
        names.sort();
        names.dedup();
        let mut vars = crate::process::allowed_env(&names);
        if let Some(map) = config.get("secret_env").and_then(Value::as_object) {
            for (k, v) in map {
                let name = v
                    .get("secret")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("`secret_env.{k}` is not a secret reference"))?;
                let value = reveal(name)?;
                vars.retain(|(n, _)| n != k.as_str());
                vars.push((OsString::from(k), OsString::from(value)));
            }
        }
        Transport::Stdio {
            program,
            args: crate::engine::builtin::string_array(config.get("args")),
            cwd,
            env: vars,
        }
    };
    let max_reply_bytes = config
        .get("max_reply_bytes")
        .and_then(Value::as_u64)
        .unwrap_or(kind::DEFAULT_MAX_REPLY_BYTES)
        .min(kind::MAX_REPLY_BYTES);
    Ok(ServerSpec {
        entry: entry.to_owned(),
        transport,
        lifecycle,
        startup_timeout,
        max_reply_bytes: usize::try_from(max_reply_bytes).unwrap_or(usize::MAX),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_are_shown_without_query_or_user_info() {
        assert_eq!(
            super::shown_url("https://u:pw@mcp.example.com:8443/mcp?api_key=x#f"),
            "https://mcp.example.com:8443/mcp"
        );
        assert_eq!(
            super::shown_url("http://127.0.0.1:3001/mcp"),
            "http://127.0.0.1:3001/mcp"
        );
    }

    use super::*;
    use serde_json::json;

    fn no_secret(name: &str) -> Result<SecretValue, String> {
        Err(format!("secret `{name}` is not set"))
    }

    #[test]
    fn stdio_env_is_the_minimum_plus_the_allow_list_plus_secrets() {
        let env = BuiltinEnv::new(std::env::temp_dir());
        let r = Redactor::new();
        let spec = server_spec(
            "e",
            &json!({ "command": "sh", "env": ["CHASSIS_SURELY_UNSET"], "secret_env": { "TOKEN": { "secret": "T" } } }),
            &env,
            &|_| Ok(SecretValue::new("s3cr3t-value")),
            &r,
        )
        .unwrap();
        let Transport::Stdio { env, program, .. } = &spec.transport else {
            panic!("stdio")
        };
        assert!(program.is_absolute());
        let names: Vec<&str> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert!(names.contains(&"TOKEN"));
        assert!(!names.contains(&"CHASSIS_SURELY_UNSET"));
        assert!(names.iter().all(|n| BASE_ENV.contains(n) || *n == "TOKEN"));
        assert_eq!(r.redact("x s3cr3t-value y"), "x <redacted> y");
        assert!(!format!("{spec:?}").contains("s3cr3t"));
        assert_eq!(spec.lifecycle, Lifecycle::Auto);
    }

    #[test]
    fn missing_secret_and_missing_program_fail() {
        let env = BuiltinEnv::new(std::env::temp_dir());
        let r = Redactor::new();
        let e = server_spec(
            "e",
            &json!({ "url": "http://127.0.0.1:1/mcp", "headers": { "Authorization": { "secret": "K" } } }),
            &env,
            &no_secret,
            &r,
        )
        .unwrap_err();
        assert!(e.contains("`K`"), "{e}");
        let e = server_spec(
            "e",
            &json!({ "command": "chassis-no-such-program" }),
            &env,
            &no_secret,
            &r,
        )
        .unwrap_err();
        assert!(e.contains("not found"), "{e}");
    }
}
