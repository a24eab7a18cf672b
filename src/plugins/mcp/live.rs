//! What a live server offers, in the lock's terms.
//!
//! [`lock_entry`] applies the entry's filter and prefix to a server's tool
//! list and turns it into a [`LockEntry`] (canonical JSON schemas), so the
//! lock file, the publication check and a restart all compare the same
//! thing. [`probe`] starts a server just to read that (`chassis tools`,
//! `--update-lock`) and stops it again.

use serde_json::Value;

use super::client::{McpSession, RemoteTool, ServerIdentity};
use super::spec::{ServerSpec, server_spec};
use crate::engine::builtin::mcp::ToolFilter;
use crate::engine::model::ToolName;
use crate::engine::secret::{Redactor, SecretValue};
use crate::lock::{LockEntry, LockedTool, canonical_json};
use crate::plugins::BuiltinEnv;

/// The lock entry of `tools` offered by `identity`, after the filter and
/// prefix of `config`; tools whose exposed name is not a valid chassis tool
/// name are an error naming them.
///
/// What the server said is redacted first (its name and version, each
/// description, schema and annotation): a server that echoes the secret it
/// was started with must not put it into `chassis.lock`, the file users
/// commit, nor into what `tools` and `snapshot` print. Tool names are kept:
/// they are what chassis calls the server with.
pub fn lock_entry(
    identity: &ServerIdentity,
    tools: &[RemoteTool],
    config: &Value,
    redactor: &Redactor,
) -> Result<LockEntry, String> {
    let text = |t: &str| redactor.redact(t).into_owned();
    let json = |v: &Value| canonical_json(&redactor.redact_foreign(v));
    let filter = ToolFilter::from_config(config);
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for t in tools.iter().filter(|t| filter.admits(&t.name)) {
        let name = filter.exposed(&t.name);
        if ToolName::new(&name).is_err() {
            bad.push(name);
            continue;
        }
        out.push(LockedTool {
            name,
            remote_name: t.name.clone(),
            description: text(&t.description),
            input_schema: json(&t.input_schema),
            output_schema: t.output_schema.as_ref().map(json),
            annotations: t.annotations.as_ref().map(json),
            policy: None,
        });
    }
    if !bad.is_empty() {
        return Err(format!(
            "the server offers tools whose names are not valid chassis tool names: {}; leave them out with `tools.deny`",
            bad.join(", ")
        ));
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = out.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(format!("the server lists the tool `{}` twice", w[0].name));
    }
    Ok(LockEntry {
        server_name: text(&identity.name),
        server_version: text(&identity.version),
        protocol_version: identity.protocol_version.clone(),
        tools: out,
        hooks: Vec::new(),
        routes: Vec::new(),
        methods: Vec::new(),
        agents: Vec::new(),
    })
}

/// Start the server of entry `entry` (configuration `config`), read what
/// it offers, stop it.
pub async fn probe(
    entry: &str,
    config: &Value,
    env: &BuiltinEnv,
    secret: &dyn Fn(&str) -> Result<SecretValue, String>,
    redactor: &Redactor,
) -> Result<LockEntry, String> {
    let spec = server_spec(entry, config, env, secret, redactor)?;
    let (session, tools) = start(&spec, redactor).await?;
    session.close().await;
    let entry = lock_entry(session.identity(), &tools, config, redactor)?;
    expected_offered(config, &entry)?;
    Ok(entry)
}

/// `Err` naming the `expect_tools` that `offered` (after the filter) lacks.
pub fn expected_offered(config: &Value, offered: &LockEntry) -> Result<(), String> {
    let missing = crate::engine::builtin::mcp::missing_expected(config, offered);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the server does not offer the expected tool(s) {} (after `tools.allow`/`tools.deny`)",
            missing.join(", ")
        ))
    }
}

/// Connect and list the tools, both within the start-up timeout.
pub async fn start(
    spec: &ServerSpec,
    redactor: &Redactor,
) -> Result<(std::sync::Arc<dyn McpSession>, Vec<RemoteTool>), String> {
    let session: std::sync::Arc<dyn McpSession> = std::sync::Arc::new(
        super::rmcp_session::connect(spec, redactor)
            .await
            .map_err(|e| e.to_string())?,
    );
    let listed = tokio::time::timeout(spec.startup_timeout, session.list_tools()).await;
    match listed {
        Ok(Ok(tools)) => Ok((session, tools)),
        Ok(Err(e)) => {
            session.close().await;
            Err(format!("`tools/list` failed: {e}"))
        }
        Err(_) => {
            session.close().await;
            Err(format!(
                "`tools/list` did not answer within {:.1} s",
                spec.startup_timeout.as_secs_f64()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> RemoteTool {
        RemoteTool {
            name: name.into(),
            description: format!("{name} things"),
            input_schema: json!({ "type": "object", "properties": { "b": {}, "a": {} } }),
            output_schema: None,
            annotations: Some(json!({ "readOnlyHint": true })),
        }
    }

    #[test]
    fn filters_prefixes_sorts_and_canonicalizes() {
        let id = ServerIdentity {
            name: "srv".into(),
            version: "1".into(),
            protocol_version: "2025-11-25".into(),
        };
        let config = json!({ "tools": { "deny": ["rm"], "prefix": "fs_" } });
        let e = lock_entry(
            &id,
            &[tool("write"), tool("rm"), tool("read")],
            &config,
            &Redactor::new(),
        )
        .unwrap();
        let names: Vec<&str> = e.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["fs_read", "fs_write"]);
        assert_eq!(e.tools[0].remote_name, "read");
        assert_eq!(
            e.tools[0].input_schema,
            r#"{"properties":{"a":{},"b":{}},"type":"object"}"#
        );
        assert_eq!(
            e.tools[0].annotations.as_deref(),
            Some(r#"{"readOnlyHint":true}"#)
        );
        let err = lock_entry(&id, &[tool("bad name!")], &json!({}), &Redactor::new()).unwrap_err();
        assert!(err.contains("bad name!"), "{err}");
        let offered = lock_entry(&id, &[tool("read")], &json!({}), &Redactor::new()).unwrap();
        assert_eq!(
            crate::engine::builtin::mcp::missing_expected(
                &json!({ "expect_tools": ["read", "nope"] }),
                &offered
            ),
            ["nope"]
        );
        let denied = lock_entry(
            &id,
            &[tool("read")],
            &json!({ "tools": { "deny": ["read"] } }),
            &Redactor::new(),
        )
        .unwrap();
        assert!(expected_offered(&json!({ "expect_tools": ["read"] }), &denied).is_err());
    }

    #[test]
    fn what_a_server_echoes_of_a_secret_is_redacted() {
        let redactor = Redactor::new();
        redactor.learn(&SecretValue::new("sk-echoed-4411"));
        let id = ServerIdentity {
            name: "srv sk-echoed-4411".into(),
            version: "1".into(),
            protocol_version: "2025-11-25".into(),
        };
        let mut t = tool("read");
        t.description = "uses sk-echoed-4411".into();
        t.input_schema = json!({ "properties": { "k": { "default": "sk-echoed-4411" } } });
        let e = lock_entry(&id, &[t], &json!({}), &redactor).unwrap();
        let text = crate::lock::Lock {
            version: crate::lock::LOCK_VERSION,
            entries: [("s".to_owned(), e)].into(),
        }
        .to_text();
        assert!(!text.contains("sk-echoed-4411"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }
}
