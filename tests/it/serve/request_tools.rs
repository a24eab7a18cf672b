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
