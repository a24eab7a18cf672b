//! Tools a run request brings (`request_tools`): refused unless the server
//! allows them; then the run gets its own candidate generation with them,
//! and no other run sees them.

use super::*;

const SHOUT: &str = r#"version = 1
[entries.shouter]
plugin = "command"
[[entries.shouter.config.tools]]
name = "shout"
description = "Upper-cases a text."
args = { type = "object", required = ["text"], properties = { text = { type = "string" } }, additionalProperties = false }
argv = ["tr", "a-z", "A-Z"]
stdin = "{/text}"
side_effects = ["read_only"]
timeout_seconds = 5
"#;

/// `examples/serve.toml` with a script that calls `shout` for `Shout: …`.
fn workspace_that_shouts() -> (tempfile::TempDir, PathBuf) {
    let (dir, file) = workspace();
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "# Any other input.",
        "[[entries.model.config.turns]]\nwhen = { regex = \"^Shout: \" }\ntool_calls = [{ name = \"shout\", args = { text = \"hey there\" } }]\n\n[[entries.model.config.turns]]\nwhen = { regex = \"^Shout: \" }\ntext = \"Shouted.\"\n\n# Any other input.",
    );
    save(&file, &text);
    (dir, file)
}

#[test]
fn a_request_brings_tools_only_where_the_server_allows_them() {
    let (dir, _) = workspace_that_shouts();
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    runtime().block_on(async {
        let (s, ct, problem) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "Shout: hey", "request_tools": SHOUT}),
        )
        .await;
        assert_eq!(
            (s, problem["code"].as_str()),
            (403, Some("serve::request-tools-disabled")),
            "{problem}"
        );
        assert!(ct.starts_with("application/problem+json"));
        assert!(
            problem["help"][0]
                .as_str()
                .unwrap()
                .contains("--allow-request-tools")
        );
    });
    let (code, _) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);

    // `--approve shout` names a tool of the server's: a request's own
    // `shout` is asked about all the same, read-only as it says it is.
    let server = Server::start(
        dir.path(),
        "serve.toml",
        &["--no-watch", "--allow-request-tools", "--approve", "shout"],
    );
    let runs = server.url("/v1/agents/assistant/runs");
    runtime().block_on(async {
        let (s, _, run) = post(
            &c,
            &runs,
            &json!({"input": "Shout: hey", "request_tools": SHOUT}),
        )
        .await;
        assert_eq!(s, 202, "a client's program is approved call by call: {run}");
        assert_eq!(run["pending_approvals"][0]["tool"], "shout", "{run}");
        let id = run["run_id"].as_str().unwrap().to_owned();
        let (s, _, _) = post(
            &c,
            &server.url(&format!("/v1/runs/{id}/approvals")),
            &json!({"tool": "shout", "decision": "approve"}),
        )
        .await;
        assert_eq!(s, 200);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let doc = loop {
            let (_, run) = get(&c, &server.url(&format!("/v1/runs/{id}"))).await;
            if run["status"] == "succeeded" {
                break run["result"].clone();
            }
            assert!(std::time::Instant::now() < deadline, "{run}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        assert_eq!(doc["request_tools"], json!(["shout"]), "{doc}");
        assert_eq!(doc["tool_calls"][0]["name"], "shout");
        assert_eq!(doc["tool_calls"][0]["status"], "ok", "{doc}");
        assert!(doc["messages"].to_string().contains("HEY THERE"), "{doc}");
        assert_eq!(doc["answer"], "Shouted.");
        // The run is stamped with its own candidate's digest.
        let (_, status) = get(&c, &server.url("/v1/status")).await;
        assert_ne!(doc["snapshot_digest"], status["current"]["digest"], "{doc}");
        assert_eq!(doc["generation_id"], status["current"]["id"]);

        // Another run does not see them.
        let (s, _, doc) = post(&c, &runs, &json!({"input": "Shout: hey"})).await;
        assert_eq!(s, 200, "{doc}");
        assert_eq!(doc["request_tools"], json!([]));
        assert_eq!(doc["tool_calls"][0]["status"], "refused", "{doc}");

        // What cannot be brought is refused before the run, with where.
        for (tools, needle) in [
            ("version = 1\n[entries.x\n", "diagnostics"),
            (
                &*SHOUT.replace(
                    "plugin = \"command\"",
                    "plugin = \"command\"\nconfig.cwd = \"/\"",
                ),
                "cwd",
            ),
            (
                &*SHOUT.replace(
                    "plugin = \"command\"",
                    "plugin = \"command\"\nconfig.env = [\"HOME\"]",
                ),
                "env",
            ),
            (
                &format!("{SHOUT}\n[agents.sneaky]\nprompt = \"x\"\n"),
                "diagnostics",
            ),
            ("version = 1\ninclude = [\"serve.toml\"]\n", "diagnostics"),
        ] {
            let (s, _, problem) = post(
                &c,
                &runs,
                &json!({"input": "Shout: hey", "request_tools": tools}),
            )
            .await;
            assert_eq!(
                (s, problem["code"].as_str()),
                (400, Some("serve::bad-request-tools")),
                "{tools}: {problem}"
            );
            if needle == "diagnostics" {
                let d = problem["diagnostics"].as_array().unwrap();
                assert!(!d.is_empty(), "{tools}: {problem}");
                assert_eq!(d[0]["labels"][0]["file"], "request_tools.toml", "{problem}");
            } else {
                assert!(
                    problem["detail"].as_str().unwrap().contains(needle),
                    "{problem}"
                );
            }
        }
        let (s, _, problem) = post(
            &c,
            &runs,
            &json!({"input": "x", "request_tools": {"entries": {}}}),
        )
        .await;
        assert_eq!(
            (s, problem["code"].as_str()),
            (400, Some("serve::bad-request")),
            "{problem}"
        );
    });
}

/// The diagnostics of a client's own `request_tools` text name where (line
/// and column), what the format expects (a type, the accepted keys) and a
/// stable code — never a key, table name or value it sent: echoed, or
/// redacted, one would tell a client whether its guess is a secret's
/// value. Nor does the server's log, at any verbosity.
#[test]
fn request_tools_diagnostics_quote_nothing_the_client_sent() {
    let (dir, file) = workspace_that_shouts();
    // The canary is a secret the served generation resolved.
    with_canary_secret(&file);
    // `{}` is where the value sent goes.
    let tools = [
        // Unknown keys: at the top, in an entry, in a tool.
        "version = 1\n{} = 1\n".to_owned(),
        SHOUT.replace("plugin = \"command\"", "plugin = \"command\"\n{} = true"),
        SHOUT.replace("timeout_seconds = 5", "timeout_seconds = 5\n{} = 1"),
        SHOUT.replace("[entries.shouter]", "[entries.shouter]\nconfig.{} = 1"),
        // Table names: an entry, an agent, a scope, a plugin.
        format!("{SHOUT}\n[entries.{{}}]\nplugin = \"scripted\"\n"),
        format!("{SHOUT}\n[entries.{{}}]\nplugin = \"nope\"\n"),
        format!("{SHOUT}\n[agents.{{}}]\nprompt = \"x\"\n"),
        format!("{SHOUT}\n[scopes.\"/{{}}\"]\n"),
        format!("{SHOUT}\n[plugins.{{}}]\nversion = 1\n"),
        SHOUT.replace("shouter", "{}").replace(
            "plugin = \"command\"",
            "plugin = \"command\"\nconfig.cwd = \"/\"",
        ),
        // Values: of the wrong type, unknown, out of range, unparsable.
        "version = \"{}\"\n".to_owned(),
        SHOUT.replace("plugin = \"command\"", "plugin = \"{}\""),
        SHOUT.replace("timeout_seconds = 5", "timeout_seconds = \"{}\""),
        SHOUT.replace("argv = [\"tr\", \"a-z\", \"A-Z\"]", "argv = \"{}\""),
        SHOUT.replace("{ type = \"string\" }", "{ type = \"{}\" }"),
        SHOUT.replace("name = \"shout\"", "name = \"{} !\""),
        SHOUT.replace(
            "[entries.shouter]",
            "[entries.shouter]\nenabled_if = \"{}\"",
        ),
        format!(
            "{SHOUT}\n[[entries.shouter.config.tools]]\nname = \"shout\"\ndescription = \"{{}}\"\nargv = [\"true\"]\n"
        ),
        // A syntax error beside it.
        "version = 1\n[entries.{}\n".to_owned(),
        "version = 1\n{} = \n".to_owned(),
    ];
    let server = Server::start(
        dir.path(),
        "serve.toml",
        &["--no-watch", "--allow-request-tools", "-vvv"],
    );
    let c = client();
    let runs = server.url("/v1/agents/assistant/runs");
    runtime().block_on(async {
        for text in &tools {
            let mut answers = Vec::new();
            for value in [CANARY, super::no_echo::NEAR_MISS] {
                let sent = text.replace("{}", value);
                let r = c
                    .post(&runs)
                    .json(&json!({"input": "Shout: hey", "request_tools": sent}))
                    .send()
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                let body = r.text().await.unwrap();
                assert_eq!(status, 400, "{sent}\n{body}");
                let problem: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(
                    problem["code"], "serve::bad-request-tools",
                    "{sent}\n{problem}"
                );
                assert!(
                    !body.contains(value) && !body.contains("<redacted>"),
                    "echoed what it was sent:\n{sent}\n{problem:#}"
                );
                for d in problem["diagnostics"].as_array().unwrap() {
                    // Where, with a code: a place in the client's text.
                    assert_eq!(d["labels"][0]["file"], "request_tools.toml", "{d}");
                    assert!(d["labels"][0]["line"].as_u64().unwrap() >= 1, "{d}");
                    assert!(d["code"].as_str().unwrap().contains("::"), "{d}");
                }
                answers.push(body);
            }
            // What a client may learn is the same either way.
            assert_eq!(answers[0], answers[1], "{text}");
        }
        // Still useful: the type expected, the keys accepted.
        let sent = SHOUT.replace(
            "plugin = \"command\"",
            "plugin = \"command\"\nenabled_iff = \"X\"",
        );
        let (_, _, problem) = post(
            &c,
            &runs,
            &json!({"input": "Shout: hey", "request_tools": sent}),
        )
        .await;
        let d = &problem["diagnostics"][0];
        assert_eq!(d["code"], "load::unknown-key", "{problem}");
        assert_eq!(d["labels"][0]["line"], 4, "{problem}");
        assert!(d["help"].to_string().contains("`enabled_if`"), "{problem}");
        let sent = SHOUT.replace(
            "timeout_seconds = 5",
            "timeout_seconds = 5\ntimeout_second = 1",
        );
        let (_, _, problem) = post(
            &c,
            &runs,
            &json!({"input": "Shout: hey", "request_tools": sent}),
        )
        .await;
        let d = &problem["diagnostics"][0];
        assert_eq!(d["code"], "load::bad-config", "{problem}");
        assert_eq!(d["labels"][0]["line"], 12, "{problem}");
        assert!(
            d["help"]
                .to_string()
                .contains("chassis schema --kind command"),
            "{problem}"
        );
        let sent = SHOUT.replace("plugin = \"command\"", "plugin = 7");
        let (_, _, problem) = post(
            &c,
            &runs,
            &json!({"input": "Shout: hey", "request_tools": sent}),
        )
        .await;
        let d = &problem["diagnostics"][0];
        assert_eq!(d["code"], "load::wrong-type", "{problem}");
        assert_eq!(d["labels"][0]["line"], 3, "{problem}");
        assert_eq!(d["labels"][0]["message"], "expected a string", "{problem}");
        // A request tool that collides with one of the composition's.
        let sent = SHOUT.replace("name = \"shout\"", "name = \"word_count\"");
        let (s, _, problem) = post(
            &c,
            &runs,
            &json!({"input": "Shout: hey", "request_tools": sent}),
        )
        .await;
        assert_eq!(s, 400, "{problem}");
        assert!(
            !problem.to_string().contains("`word_count`"),
            "named the tool it was sent: {problem}"
        );
    });
    let started = server.started.join("\n");
    let (code, stderr) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{stderr}");
    let log = format!("{started}\n{stderr}");
    assert!(log.contains("DEBUG"), "logged at -vvv: {log}");
    assert!(
        !log.contains(CANARY) && !log.contains(super::no_echo::NEAR_MISS),
        "the log quotes what a client sent: {log}"
    );
}
