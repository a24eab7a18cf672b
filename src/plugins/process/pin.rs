//! What a process plugin registers, in `chassis.lock` terms, and the check
//! of a mount against what the lock pins.
//!
//! Why it exists: the pure commands never start a plugin, so what a
//! process registers beyond its TOML manifest — tools the TOML does not
//! declare, each tool's policy, its hooks, HTTP routes, capability
//! methods and the agents it defines — is pinned in `chassis.lock`
//! (`chassis tools FILE --update-lock`), reviewed like any diff, and
//! enforced here: a mount whose registrations differ from the pin is a
//! contract error showing the difference. Without a pin, the process may
//! register only what its TOML declares (tools; no hooks, no HTTP routes,
//! no agents),
//! since nothing else would be visible before it runs.

use crate::engine::model::Manifest;
use crate::lock::{
    LockEntry, LockedHook, LockedMethod, LockedRoute, LockedTool, canonical_json, diff_tools,
};
use crate::runtime::RegistrationBreach;

use super::protocol::{InitializeResult, SetupResult};

/// What the plugin registered, as the lock pins it.
pub fn lock_entry(init: &InitializeResult, registered: &SetupResult) -> LockEntry {
    let wire = |v: serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let mut tools: Vec<LockedTool> = registered
        .tools
        .iter()
        .map(|t| LockedTool {
            name: t.name.clone(),
            remote_name: t.name.clone(),
            description: t.description.clone(),
            input_schema: canonical_json(&t.input_schema),
            output_schema: None,
            annotations: None,
            policy: Some(canonical_json(
                &serde_json::to_value(&t.policy).unwrap_or_default(),
            )),
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    LockEntry {
        server_name: init.plugin.name.clone(),
        server_version: init.plugin.version.clone(),
        protocol_version: init.protocol_version.clone(),
        tools,
        hooks: registered
            .hooks
            .iter()
            .map(|h| LockedHook {
                event: h.event.clone(),
                mode: wire(serde_json::to_value(h.mode).unwrap_or_default()),
                priority: h.priority,
                error_policy: wire(serde_json::to_value(h.error_policy).unwrap_or_default()),
            })
            .collect(),
        routes: {
            let mut routes: Vec<LockedRoute> = registered
                .routes
                .iter()
                .map(|r| LockedRoute {
                    path: r.path.clone(),
                    method: r.method.clone(),
                })
                .collect();
            routes.sort();
            routes
        },
        methods: {
            let mut methods: Vec<LockedMethod> = registered
                .capabilities
                .iter()
                .flat_map(|c| {
                    c.methods.iter().map(|m| LockedMethod {
                        capability: c.key.clone(),
                        name: m.name.clone(),
                        description: m.description.clone(),
                        input_schema: canonical_json(&m.input_schema),
                        result_schema: m.result_schema.as_ref().map(canonical_json),
                        permissions: m.permissions.clone(),
                    })
                })
                .collect();
            methods.sort_by(|a, b| (&a.capability, &a.name).cmp(&(&b.capability, &b.name)));
            methods
        },
        agents: {
            let mut agents = registered.agents.clone();
            agents.sort_by(|a, b| a.name.cmp(&b.name));
            agents
        },
    }
}

/// `Err` naming every registration a mount would refuse (a policy that
/// does not validate, an unknown hook event, a route that cannot be
/// served or is registered twice): what a probe checks before pinning, so
/// the lock never pins what cannot mount.
pub fn validate(registered: &SetupResult) -> Result<(), String> {
    let mut problems = Vec::new();
    for t in &registered.tools {
        if let Err(e) = crate::engine::policy::ToolPolicy::from(&t.policy).validate() {
            problems.push(format!("tool `{}`: its policy: {e}", t.name));
        }
    }
    for h in &registered.hooks {
        if crate::runtime::HookEvent::parse(&h.event).is_none() {
            problems.push(format!("a hook for the unknown event `{}`", h.event));
        }
    }
    for c in &registered.capabilities {
        for m in &c.methods {
            if let Err(e) = crate::engine::args_schema::compile(&m.input_schema) {
                problems.push(format!(
                    "method `{}.{}`: its input_schema: {e}",
                    c.key, m.name
                ));
            }
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for a in &registered.agents {
        if !names.insert(&a.name) {
            problems.push(format!("agent `{}` is defined twice", a.name));
        }
        if let Err(e) = a.to_decl() {
            problems.push(format!("agent `{}`: {}", a.name, e.join("; ")));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for r in &registered.routes {
        if let Err(e) = crate::runtime::route::check(&r.method, &r.path) {
            problems.push(format!("route `{} {}`: {e}", r.method, r.path));
        } else if !seen.insert((&r.method, &r.path)) {
            problems.push(format!(
                "route `{} {}` is registered twice",
                r.method, r.path
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "registers what cannot be mounted: {}",
            problems.join("; ")
        ))
    }
}

/// `Err` naming every field of an agent definition that quotes a secret
/// chassis knows: a definition is written to `chassis.lock`, shown by the
/// pure commands and sent to models, so it may carry none (a prompt built
/// from the plugin's configuration would).
pub fn agents_without_secrets(
    registered: &SetupResult,
    redactor: &crate::engine::secret::Redactor,
) -> Result<(), String> {
    let mut problems = Vec::new();
    for a in &registered.agents {
        let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(a) else {
            continue;
        };
        for (field, value) in &fields {
            if redactor.redact_foreign(value) != *value {
                problems.push(format!("agent `{}`: its `{field}`", a.name));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "defines agents that quote a secret ({}); an agent definition is pinned in `chassis.lock`, shown by `check` and `snapshot` and sent to models, so it may carry no secret",
            problems.join(", ")
        ))
    }
}

/// `Err` when what the plugin registered is not what the lock pins for
/// its entry (or, without a pin, when it registers hooks).
pub fn check(
    manifest: &Manifest,
    init: &InitializeResult,
    registered: &SetupResult,
) -> Result<(), RegistrationBreach> {
    let pinned = manifest.process.as_ref().and_then(|p| p.pinned.as_deref());
    let live = lock_entry(init, registered);
    match pinned {
        Some(locked) => {
            let changes = diff_tools(locked, &live);
            if changes.is_empty() {
                return Ok(());
            }
            Err(RegistrationBreach {
                promise: "registers something else than `chassis.lock` pins for its entry (review the difference, then `chassis tools FILE --update-lock` pins what it registers now)".to_owned(),
                promised: "chassis.lock".to_owned(),
                actual: changes.iter().map(ToString::to_string).collect(),
            })
        }
        None if live.hooks.is_empty() && live.routes.is_empty() && live.agents.is_empty() => {
            Ok(())
        }
        None => Err(RegistrationBreach {
            promise: "registers hooks, HTTP routes or agents that `chassis.lock` does not pin, so the pure commands cannot see them (`chassis tools FILE --update-lock` pins them)".to_owned(),
            promised: "chassis.lock".to_owned(),
            actual: live
                .hooks
                .iter()
                .map(show_hook)
                .chain(live.routes.iter().map(|r| format!("route {} {}", r.method, r.path)))
                .chain(live.agents.iter().map(|a| format!("agent {}", a.name)))
                .collect(),
        }),
    }
}

fn show_hook(h: &LockedHook) -> String {
    format!(
        "hook {} ({}, priority {}, on error {})",
        h.event, h.mode, h.priority, h.error_policy
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::protocol::{
        ErrorPolicyWire, HookModeWire, HookRegistration, PluginInfo, ToolPolicyWire,
        ToolRegistration,
    };
    use super::*;
    use crate::engine::model::ProcessCommand;
    use crate::engine::version::Version;
    use serde_json::json;

    fn init() -> InitializeResult {
        InitializeResult {
            protocol_version: "1.0".into(),
            plugin: PluginInfo {
                name: "p".into(),
                version: "1.0.0".into(),
                ..PluginInfo::default()
            },
            max_concurrency: None,
        }
    }

    fn registered() -> SetupResult {
        SetupResult {
            capabilities: Vec::new(),
            tools: vec![ToolRegistration {
                name: "greet".into(),
                description: "Greet".into(),
                input_schema: json!({"type": "object"}),
                policy: ToolPolicyWire {
                    idempotent: true,
                    ..ToolPolicyWire::default()
                },
            }],
            hooks: vec![HookRegistration {
                event: "before_tool_execute".into(),
                mode: HookModeWire::Bail,
                priority: 3,
                error_policy: ErrorPolicyWire::Raise,
            }],
            routes: Vec::new(),
            agents: vec![crate::engine::model::AgentDefinition {
                name: "researcher".into(),
                prompt: "You research.".into(),
                ..Default::default()
            }],
        }
    }

    fn manifest(pinned: Option<LockEntry>) -> Manifest {
        let mut m = Manifest::new("p", Version::parse("1.0.0").unwrap());
        m.process = Some(Arc::new(ProcessCommand {
            argv: vec!["python3".into()],
            env: Vec::new(),
            files: Vec::new(),
            startup_timeout: None,
            dir: std::path::PathBuf::new(),
            pinned: pinned.map(Arc::new),
        }));
        m
    }

    #[test]
    fn the_lock_entry_pins_policies_and_hooks_in_wire_terms() {
        let e = lock_entry(&init(), &registered());
        assert_eq!(e.server_name, "p");
        assert_eq!(e.tools[0].policy_json().unwrap()["idempotent"], true);
        assert_eq!(e.tools[0].input_schema, r#"{"type":"object"}"#);
        assert_eq!(
            e.hooks,
            [LockedHook {
                event: "before_tool_execute".into(),
                mode: "bail".into(),
                priority: 3,
                error_policy: "raise".into(),
            }]
        );
    }

    #[test]
    fn a_mount_must_register_what_is_pinned() {
        let pin = lock_entry(&init(), &registered());
        assert_eq!(
            check(&manifest(Some(pin.clone())), &init(), &registered()),
            Ok(())
        );
        let mut other = registered();
        other.tools[0].policy.approval_required = true;
        other.hooks[0].priority = 4;
        other.agents[0].prompt = "You research harder.".into();
        other.agents[0].max_steps = Some(3);
        let breach = check(&manifest(Some(pin)), &init(), &other).unwrap_err();
        assert_eq!(breach.promised, "chassis.lock");
        assert_eq!(
            breach.actual,
            [
                "~ greet (policy)",
                "~ hook before_tool_execute#0 (priority)",
                "~ agent researcher (prompt, max_steps)"
            ]
        );
    }

    #[test]
    fn a_probe_refuses_to_pin_what_cannot_mount() {
        assert_eq!(validate(&registered()), Ok(()));
        let mut bad = registered();
        bad.tools[0].policy.timeout_seconds = Some(-1.0);
        bad.hooks[0].event = "before_lunch".into();
        bad.agents.push(bad.agents[0].clone());
        bad.agents[0].max_steps = Some(0);
        bad.routes = vec![
            super::super::protocol::RouteRegistrationWire {
                method: "GET".into(),
                path: "/a".into(),
            },
            super::super::protocol::RouteRegistrationWire {
                method: "GET".into(),
                path: "/a".into(),
            },
            super::super::protocol::RouteRegistrationWire {
                method: "GET".into(),
                path: "../x".into(),
            },
        ];
        let e = validate(&bad).unwrap_err();
        for part in [
            "tool `greet`: its policy",
            "unknown event `before_lunch`",
            "route `GET /a` is registered twice",
            "route `GET ../x`",
            "agent `researcher`: `max_steps` must be between 1 and 10000",
            "agent `researcher` is defined twice",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
    }

    #[test]
    fn an_agent_definition_may_not_quote_a_secret() {
        let redactor = crate::engine::secret::Redactor::new();
        redactor.learn(&crate::engine::secret::SecretValue::new(
            "sk-canary-agent-42",
        ));
        assert_eq!(agents_without_secrets(&registered(), &redactor), Ok(()));
        let mut leaky = registered();
        leaky.agents[0].prompt = "Use the key sk-canary-agent-42.".into();
        let e = agents_without_secrets(&leaky, &redactor).unwrap_err();
        assert!(
            e.contains("agent `researcher`: its `prompt`") && !e.contains("sk-canary"),
            "{e}"
        );
    }

    #[test]
    fn without_a_pin_hooks_are_refused_and_tools_alone_pass() {
        let breach = check(&manifest(None), &init(), &registered()).unwrap_err();
        assert_eq!(
            breach.actual,
            [
                "hook before_tool_execute (bail, priority 3, on error raise)",
                "agent researcher"
            ]
        );
        let mut no_hooks = registered();
        no_hooks.hooks.clear();
        no_hooks.agents.clear();
        assert_eq!(check(&manifest(None), &init(), &no_hooks), Ok(()));
    }
}
