//! The `mcp` kind against real servers: the npm reference servers
//! (server-everything over stdio and streamable HTTP, server-filesystem
//! behind chassis policy), the PyPI time server over the stateless
//! 2026-07-28 protocol, and the scripted server of `tests/servers/` for the
//! failure paths (crash mid-call, hang past the deadline, garbage on
//! stdout, noisy stderr, a changing tool list, a drifted lock) and the
//! environment a server gets. Servers are installed pinned on first use
//! (`mcp_servers`); every test writes its composition into a temporary
//! directory, pins the lock with `chassis tools --update-lock`, and runs an
//! agent whose scripted model calls the tools.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{Run, run_in};
use crate::mcp_servers;

/// A composition `text` written to `dir/name`.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `chassis ARGS` in `dir` with `env`.
fn chassis(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--color", "never"];
    all.extend_from_slice(args);
    run_in(dir, &all, env)
}

/// Pin the lock of `file` (must succeed).
fn update_lock(dir: &Path, file: &str, env: &[(&str, &str)]) -> Run {
    let r = chassis(dir, &["tools", file, "--update-lock"], env);
    assert_eq!(r.code, 0, "{}", r.transcript());
    r
}

/// `chassis --format json run FILE --yes`, parsed: the scripted servers'
/// tools declare no permission and are not read-only, so, failing closed,
/// each call needs approval — given here as a user would.
fn run_json(dir: &Path, file: &str, env: &[(&str, &str)]) -> (Run, Value) {
    let r = chassis(dir, &["--format", "json", "run", file, "--yes"], env);
    let v = stdout_json(&r);
    (r, v)
}

/// The command's stdout, parsed as JSON.
fn stdout_json(r: &Run) -> Value {
    serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.transcript()))
}

/// The content of each tool message, in order.
fn tool_contents(v: &Value) -> Vec<String> {
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The status of each tool call, in order.
fn statuses(v: &Value) -> Vec<String> {
    v["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap().to_owned())
        .collect()
}

/// A scripted model making `calls` (tool name, JSON args) one per turn,
/// then answering "done"; and an agent that may call `tools`.
fn agent(calls: &[(&str, &str)], tools: &[&str]) -> String {
    let mut out = String::from("\n[entries.model]\nplugin = \"scripted\"\n");
    for (name, args) in calls {
        out.push_str(&format!(
            "[[entries.model.config.turns]]\ntool_calls = [{{ name = \"{name}\", args = {args} }}]\n"
        ));
    }
    out.push_str("[[entries.model.config.turns]]\ntext = \"done\"\n");
    let list: Vec<String> = tools.iter().map(|t| format!("\"{t}\"")).collect();
    out.push_str(&format!(
        "\n[agents.a]\nprompt = \"use the tools\"\ntools = [{}]\ndefault_input = \"go\"\nmax_steps = 12\n",
        list.join(", ")
    ));
    out
}

/// TOML string literal of a path.
fn lit(p: &Path) -> String {
    serde_json::to_string(&p.display().to_string()).unwrap()
}

/// The lines of a server-side log that are `tools/call` requests.
fn calls_in_log(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == "tools/call")
        .collect()
}

#[test]
fn everything_echo_and_sum_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "version = 1\n[entries.ev]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.tools = {{ allow = [\"echo\", \"get-sum\"] }}\nconfig.expect_tools = [\"echo\", \"get-sum\"]\n{}",
        lit(&mcp_servers::everything()),
        agent(
            &[
                ("echo", r#"{ message = "hello from chassis" }"#),
                ("get-sum", "{ a = 20, b = 22 }"),
            ],
            &["echo", "get-sum"],
        )
    );
    write(dir.path(), "c.toml", &text);
    // Before the lock: `check` is a negative answer, not a load failure.
    let r = chassis(dir.path(), &["check", "c.toml"], &[]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("load::mcp-lock-missing"), "{}", r.stderr);
    update_lock(dir.path(), "c.toml", &[]);
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    assert!(
        lock.contains("server_name = \"mcp-servers/everything\""),
        "{lock}"
    );
    assert!(lock.contains("name = \"get-sum\""), "{lock}");
    assert!(!lock.contains("get-env"), "the allow-list filters: {lock}");
    let r = chassis(dir.path(), &["check", "c.toml"], &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let (r, v) = run_json(dir.path(), "c.toml", &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(statuses(&v), ["ok", "ok"], "{}", r.transcript());
    let contents = tool_contents(&v);
    assert!(contents[0].contains("hello from chassis"), "{contents:?}");
    assert!(contents[1].contains("42"), "{contents:?}");
    // The snapshot records what the run executed against.
    let snap = chassis(dir.path(), &["--format", "json", "snapshot", "c.toml"], &[]);
    assert_eq!(snap.code, 0, "{}", snap.transcript());
    assert!(
        snap.stdout.contains("mcp-servers/everything") && snap.stdout.contains("2025-11-25"),
        "{}",
        snap.stdout
    );
}

/// A free port on 127.0.0.1 (bound, read, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the child on drop.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn everything_over_streamable_http_on_loopback() {
    let exe = mcp_servers::everything();
    // `.bin/mcp-server-everything` links to `dist/index.js`.
    let index = std::fs::canonicalize(&exe).unwrap();
    let port = free_port();
    let loopback = crate::harness::root().join("tests/servers/loopback.cjs");
    let child = std::process::Command::new("node")
        .arg("--require")
        .arg(&loopback)
        .arg(&index)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("node starts");
    let _guard = Killed(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything did not listen on 127.0.0.1:{port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "version = 1\n[entries.ev]\nplugin = \"mcp\"\nconfig.url = \"http://127.0.0.1:{port}/mcp\"\nconfig.protocol = \"initialize\"\nconfig.headers = {{ Authorization = {{ secret = \"EV_TOKEN\" }}, X-Request-Source = \"chassis-test\" }}\nconfig.tools = {{ allow = [\"echo\", \"get-sum\"], prefix = \"ev_\" }}\n{}",
        agent(
            &[
                ("ev_echo", r#"{ message = "over http" }"#),
                ("ev_get-sum", "{ a = 1, b = 2 }"),
            ],
            &["ev_echo", "ev_get-sum"],
        )
    );
    write(dir.path(), "c.toml", &text);
    // Headers (one a secret, sent as written) reach the transport.
    let env = [("EV_TOKEN", "Basic dGVzdDp0b2tlbi12YWx1ZQ==")];
    update_lock(dir.path(), "c.toml", &env);
    let (r, v) = run_json(dir.path(), "c.toml", &env);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!r.stdout.contains("dGVzdDp0"), "{}", r.stdout);
    assert_eq!(statuses(&v), ["ok", "ok"], "{}", r.transcript());
    let contents = tool_contents(&v);
    assert!(contents[0].contains("over http"), "{contents:?}");
    assert!(contents[1].contains('3'), "{contents:?}");
}

#[test]
fn time_server_over_the_stateless_protocol() {
    let dir = tempfile::tempdir().unwrap();
    // `protocol = "discover"`: the stateless era, pinned (under `auto` a
    // server that takes over 2 s to answer its first request, as this
    // Python server can on a loaded machine, is started again with
    // `initialize`, which it also speaks).
    let text = format!(
        "version = 1\n[entries.time]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.args = [\"--local-timezone\", \"UTC\"]\nconfig.protocol = \"discover\"\n{}",
        lit(&mcp_servers::time_server()),
        agent(
            &[(
                "convert_time",
                r#"{ source_timezone = "Europe/London", time = "12:00", target_timezone = "Asia/Tokyo" }"#,
            )],
            &["convert_time"],
        )
    );
    write(dir.path(), "c.toml", &text);
    update_lock(dir.path(), "c.toml", &[]);
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    assert!(lock.contains("protocol_version = \"2026-07-28\""), "{lock}");
    let (r, v) = run_json(dir.path(), "c.toml", &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(statuses(&v), ["ok"], "{}", r.transcript());
    let out = &tool_contents(&v)[0];
    // 12:00 in London on any date is 20:00 or 21:00 in Tokyo.
    assert!(
        out.contains("Asia/Tokyo") && (out.contains("T20:00") || out.contains("T21:00")),
        "{out}"
    );
    // `auto` reaches it too, in one era or the other, with the same tools.
    write(
        dir.path(),
        "c.toml",
        &text.replace("config.protocol = \"discover\"\n", ""),
    );
    let live = chassis(
        dir.path(),
        &["--format", "json", "tools", "c.toml", "--live"],
        &[],
    );
    assert_eq!(live.code, 0, "{}", live.transcript());
    let v: Value = serde_json::from_str(&live.stdout).unwrap();
    let protocol = v["servers"][0]["protocol_version"].as_str().unwrap();
    assert!(
        ["2026-07-28", "2025-11-25"].contains(&protocol),
        "{protocol}"
    );
}

#[test]
fn filesystem_policy_refuses_before_the_server_sees_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap().join("workspace");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "inside the workspace\n").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "outside\n").unwrap();
    let log = dir.path().join("fs-calls.jsonl");
    let inside = ws.join("notes.txt");
    let written = ws.join("new.txt");
    let outside = std::fs::canonicalize(dir.path())
        .unwrap()
        .join("outside.txt");
    let dotdot = format!("{}/../outside.txt", ws.display());
    let ws_glob = format!("{}/**", ws.display());
    let text = format!(
        r#"version = 1
[entries.fs]
plugin = "mcp"
config.command = {proxy}
config.args = [{log}, "--", {server}, {ws}]
config.tools = {{ allow = ["read_text_file", "write_file"] }}
config.policy.read_text_file = {{ permissions = ["filesystem.read:{{/path}}"] }}
config.policy.write_file = {{ permissions = ["filesystem.write:{{/path}}"] }}

[policy]
grants = ["filesystem.read:{ws_glob}"]
{agent}"#,
        proxy = lit(&mcp_servers::log_proxy()),
        log = lit(&log),
        server = lit(&mcp_servers::filesystem()),
        ws = lit(&ws),
        agent = agent(
            &[
                ("read_text_file", &format!("{{ path = {} }}", lit(&inside))),
                (
                    "write_file",
                    &format!("{{ path = {}, content = \"x\" }}", lit(&written)),
                ),
                ("read_text_file", &format!("{{ path = {} }}", lit(&outside))),
                (
                    "read_text_file",
                    &format!("{{ path = {} }}", serde_json::to_string(&dotdot).unwrap()),
                ),
            ],
            &["read_text_file", "write_file"],
        ),
    );
    write(dir.path(), "c.toml", &text);
    update_lock(dir.path(), "c.toml", &[]);
    // The policy each tool runs under is visible before anything runs.
    let listed = chassis(dir.path(), &["tools", "c.toml"], &[]);
    assert_eq!(listed.code, 0, "{}", listed.transcript());
    assert!(
        listed
            .stdout
            .contains("permissions filesystem.write:{/path}"),
        "{}",
        listed.stdout
    );
    let _ = std::fs::remove_file(&log);
    let (r, v) = run_json(dir.path(), "c.toml", &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let st = statuses(&v);
    assert_eq!(st[0], "ok", "{}", r.transcript());
    assert!(
        st[1..].iter().all(|s| s != "ok"),
        "refused: {st:?}\n{}",
        r.transcript()
    );
    let contents = tool_contents(&v);
    assert!(contents[0].contains("inside the workspace"), "{contents:?}");
    assert!(!written.exists(), "write_file reached the server");
    // From the server's side: exactly one call arrived, the allowed read.
    let calls = calls_in_log(&log);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["params"]["name"], "read_text_file");
    assert_eq!(
        calls[0]["params"]["arguments"]["path"],
        inside.display().to_string()
    );
}

#[test]
fn scripted_server_failures_fail_one_call_and_recover() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.jsonl");
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.env = [\"SCRIPTED_LOG\"]\nconfig.policy.hang = {{ timeout_seconds = 1 }}\n{}",
        lit(&mcp_servers::scripted_server()),
        agent(
            &[
                ("crash", "{}"),
                ("echo", r#"{ text = "after the crash" }"#),
                ("hang", "{}"),
                ("garbage", "{}"),
                ("noisy", "{}"),
                ("flip", "{}"),
                ("echo", r#"{ text = "after the flip" }"#),
            ],
            &["crash", "echo", "hang", "garbage", "noisy", "flip"],
        )
    );
    write(dir.path(), "c.toml", &text);
    let env = [("SCRIPTED_LOG", log.to_str().unwrap())];
    update_lock(dir.path(), "c.toml", &env);
    let _ = std::fs::remove_file(&log);
    let (r, v) = run_json(dir.path(), "c.toml", &env);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        statuses(&v),
        ["error", "ok", "timeout", "ok", "ok", "ok", "ok"],
        "{}",
        r.transcript()
    );
    let contents = tool_contents(&v);
    assert!(
        contents[0].contains("went away during the call"),
        "{contents:?}"
    );
    assert_eq!(contents[1], "after the crash", "restarted");
    assert!(contents[2].contains("deadline"), "{contents:?}");
    assert_eq!(contents[3], "after garbage");
    assert_eq!(contents[6], "after the flip", "a new tool breaks nothing");
    // The server's stderr goes to tracing, not to the user's terminal.
    assert!(!r.stderr.contains("noisy line"), "{}", r.stderr);
    // The hung request was cancelled on the wire.
    let text = std::fs::read_to_string(&log).unwrap();
    let hang_id = calls_in_log(&log)
        .iter()
        .find(|c| c["params"]["name"] == "hang")
        .map(|c| c["id"].clone())
        .expect("hang arrived");
    let cancelled = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == hang_id);
    assert!(cancelled, "{text}");
    // With -v the server's stderr is there, as a tracing event.
    let (r, _) = {
        let r = chassis(
            dir.path(),
            &["-vv", "--format", "json", "run", "c.toml", "--yes"],
            &env,
        );
        (r, ())
    };
    assert!(r.stderr.contains("noisy line"), "{}", r.stderr);
}

/// A runaway reply fails its call with an error naming the limit, fast
/// (not a timeout), and the next call gets a fresh server.
#[test]
fn a_reply_over_max_reply_bytes_fails_the_call_and_the_server_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.max_reply_bytes = 65536\n{}",
        lit(&mcp_servers::scripted_server()),
        agent(
            &[
                ("big", "{ bytes = 1000 }"),
                ("big", "{ bytes = 5000000 }"),
                ("echo", r#"{ text = "after the flood" }"#),
            ],
            &["big", "echo"],
        )
    );
    write(dir.path(), "c.toml", &text);
    update_lock(dir.path(), "c.toml", &[]);
    let started = std::time::Instant::now();
    let (r, v) = run_json(dir.path(), "c.toml", &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(statuses(&v), ["ok", "error", "ok"], "{}", r.transcript());
    let contents = tool_contents(&v);
    assert_eq!(contents[0].len(), 1000);
    assert!(
        contents[1].contains("longer than 65536 bytes (`max_reply_bytes`)"),
        "{contents:?}"
    );
    assert_eq!(contents[2], "after the flood");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the oversized reply was cut, not waited out"
    );
}

#[test]
fn a_server_that_differs_from_the_lock_fails_publication_with_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.tools = {{ allow = [\"echo\", \"env\"] }}\n",
        lit(&mcp_servers::scripted_server()),
    );
    write(dir.path(), "c.toml", &text);
    update_lock(dir.path(), "c.toml", &[]);
    let lock_path = dir.path().join("chassis.lock");
    let good = std::fs::read_to_string(&lock_path).unwrap();
    let state = dir.path().join("state.db");
    let state = state.to_str().unwrap();

    // A changed description: publication fails with the diff (exit 3) and
    // nothing is published.
    std::fs::write(&lock_path, good.replace("Echo the text back.", "Echo.")).unwrap();
    let r = chassis(dir.path(), &["publish", "c.toml", "--state", state], &[]);
    assert_eq!(r.code, 3, "{}", r.transcript());
    assert!(r.stderr.contains("~ echo (description)"), "{}", r.stderr);
    assert!(r.stderr.contains("--update-lock"), "{}", r.stderr);
    let live = chassis(dir.path(), &["tools", "c.toml", "--live"], &[]);
    assert_eq!(live.code, 1, "{}", live.transcript());
    assert!(
        live.stdout.contains("differs from chassis.lock"),
        "{}",
        live.stdout
    );

    // `--update-lock` accepts it and publishes.
    let r = chassis(
        dir.path(),
        &["publish", "c.toml", "--state", state, "--update-lock"],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), good);

    // A lock that pins a tool the entry no longer mounts: `check` reports
    // it (load::mcp-lock-stale, exit 1), and publish refuses it alike before
    // starting anything — the current generation stays.
    let extra = "\n[[entries.s.tools]]\nname = \"vanished\"\nremote_name = \"vanished\"\ndescription = \"gone\"\ninput_schema = '{\"type\":\"object\"}'\n";
    std::fs::write(&lock_path, format!("{good}{extra}")).unwrap();
    let check = chassis(dir.path(), &["check", "c.toml"], &[]);
    assert_eq!(check.code, 1, "{}", check.transcript());
    assert!(
        check.stderr.contains("load::mcp-lock-stale"),
        "{}",
        check.stderr
    );
    let r = chassis(dir.path(), &["publish", "c.toml", "--state", state], &[]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("load::mcp-lock-stale"), "{}", r.stderr);
    assert!(r.stderr.contains("vanished"), "{}", r.stderr);
    assert!(
        r.stderr.contains("refusing to publish") && r.stderr.contains("--update-lock"),
        "{}",
        r.stderr
    );
}

#[test]
fn expected_tools_are_a_contract() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.expect_tools = [\"echo\", \"teleport\"]\n",
        lit(&mcp_servers::scripted_server()),
    );
    write(dir.path(), "c.toml", &text);
    // The server does not offer `teleport`: no lock is written.
    let r = chassis(dir.path(), &["tools", "c.toml", "--update-lock"], &[]);
    assert_eq!(r.code, 3, "{}", r.transcript());
    assert!(r.stderr.contains("teleport"), "{}", r.stderr);
    assert!(!dir.path().join("chassis.lock").exists());
    // A lock that lacks it is a `check` finding.
    write(dir.path(), "c.toml", &text.replace(", \"teleport\"", ""));
    update_lock(dir.path(), "c.toml", &[]);
    write(dir.path(), "c.toml", &text);
    let r = chassis(dir.path(), &["check", "c.toml"], &[]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(
        r.stderr.contains("load::mcp-expected-tool-missing") && r.stderr.contains("teleport"),
        "{}",
        r.stderr
    );
    // Publishing it anyway is refused as check refuses it, before the
    // server starts: the same code, exit 1, and no store is created.
    let state = dir.path().join("state.db");
    let r = chassis(
        dir.path(),
        &[
            "--format",
            "json",
            "publish",
            "c.toml",
            "--state",
            state.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(
        r.stderr
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|d| d["code"] == "load::mcp-expected-tool-missing"),
        "{}",
        r.transcript()
    );
    assert!(!state.exists());
}

#[test]
fn a_server_gets_only_the_allowed_environment_and_its_secrets_stay_hidden() {
    let dir = tempfile::tempdir().unwrap();
    // Quotes and backslashes: the value also travels JSON-escaped (the
    // server's reply, the result document) and Debug-escaped (logs).
    let canary = r#"mcp-canary"7f3a\9c1e5b"#;
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.args = [{}]\nconfig.env = [\"ALLOWED_VAR\"]\nconfig.secret_env = {{ API_TOKEN = {{ secret = \"MCP_TOKEN\" }} }}\n{}",
        lit(Path::new(&crate::harness::python())),
        lit(&mcp_servers::scripted_server()),
        agent(&[("env", "{}")], &["env"])
    );
    write(dir.path(), "c.toml", &text);
    let env = [
        ("ALLOWED_VAR", "yes"),
        ("NOT_ALLOWED", "leak"),
        ("AWS_SECRET_ACCESS_KEY", "leak-too"),
        ("MCP_TOKEN", canary),
    ];
    update_lock(dir.path(), "c.toml", &env);
    let trace = dir.path().join("trace.jsonl");
    let r = chassis(
        dir.path(),
        &[
            "-vvv",
            "--format",
            "json",
            "run",
            "c.toml",
            "--yes",
            "--trace",
            trace.to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let seen: Value = serde_json::from_str(&tool_contents(&v)[0]).unwrap();
    let keys: Vec<&str> = seen
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for k in &keys {
        assert!(
            [
                "PATH",
                "HOME",
                "LANG",
                "TMPDIR",
                "ALLOWED_VAR",
                "API_TOKEN",
                "LC_CTYPE"
            ]
            .contains(k),
            "the server saw `{k}`: {keys:?}"
        );
    }
    assert_eq!(seen["ALLOWED_VAR"], "yes");
    assert!(seen.get("NOT_ALLOWED").is_none());
    // The secret reached the server, and no output carries it.
    assert!(seen["API_TOKEN"].as_str().is_some_and(|s| !s.is_empty()));
    let trace_text = std::fs::read_to_string(&trace).unwrap();
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    for (what, text) in [
        ("stdout", r.stdout.as_str()),
        ("stderr", r.stderr.as_str()),
        ("trace", trace_text.as_str()),
        ("lock", lock.as_str()),
    ] {
        assert!(
            !text.contains("7f3a") && !text.contains("9c1e5b"),
            "the secret is in the {what}:\n{text}"
        );
    }
}

/// A server that echoes the secret it was started with (in its name, a
/// tool description and a schema default): `chassis.lock`, which users
/// commit, and everything printed from it hold `<redacted>` instead, and
/// the lock still matches the server at run time.
#[test]
fn what_a_server_echoes_of_its_secret_never_reaches_the_lock_or_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let canary = "mcp-echo-canary-5e21d0";
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.args = [{}]\nconfig.env = [\"SCRIPTED_ECHO_ENV\"]\nconfig.secret_env = {{ API_TOKEN = {{ secret = \"MCP_TOKEN\" }} }}\n{}",
        lit(Path::new(&crate::harness::python())),
        lit(&mcp_servers::scripted_server()),
        agent(&[("echo", "{ text = \"hi\" }")], &["echo"])
    );
    write(dir.path(), "c.toml", &text);
    let env = [("SCRIPTED_ECHO_ENV", "API_TOKEN"), ("MCP_TOKEN", canary)];
    let mut outputs = vec![(
        "tools --update-lock",
        update_lock(dir.path(), "c.toml", &env),
    )];
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    assert!(!lock.contains(canary), "{lock}");
    assert!(
        lock.contains("Token: <redacted>") && lock.contains("scripted <redacted>"),
        "the lock says where the server put something secret:\n{lock}"
    );
    for (what, args) in [
        ("tools", vec!["--format", "json", "tools", "c.toml"]),
        ("tools --live", vec!["tools", "c.toml", "--live"]),
        ("snapshot", vec!["snapshot", "c.toml"]),
        (
            "run",
            vec!["-vv", "--format", "json", "run", "c.toml", "--yes"],
        ),
    ] {
        let r = chassis(dir.path(), &args, &env);
        assert_eq!(r.code, 0, "{what}: {}", r.transcript());
        outputs.push((what, r));
    }
    for (what, r) in &outputs {
        assert!(
            !r.stdout.contains(canary) && !r.stderr.contains(canary),
            "{what}: {}",
            r.transcript()
        );
    }
}

#[test]
fn the_bundled_example_matches_its_lock_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let example = crate::harness::root().join("examples");
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    for f in ["mcp.toml", "chassis.lock", "workspace/notes.md"] {
        std::fs::copy(example.join(f), dir.path().join(f)).unwrap();
    }
    // The same server, from the pinned install instead of `npx`.
    let text = std::fs::read_to_string(dir.path().join("mcp.toml")).unwrap();
    let command = r#"command = "npx""#;
    let args = r#"args = ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "."]"#;
    assert!(
        text.contains(command) && text.contains(args),
        "the example's server lines changed"
    );
    let text = text
        .replace(
            command,
            &format!("command = {}", lit(&mcp_servers::filesystem())),
        )
        .replace(args, r#"args = ["."]"#);
    write(dir.path(), "mcp.toml", &text);
    let live = chassis(dir.path(), &["tools", "mcp.toml", "--live"], &[]);
    assert_eq!(
        live.code,
        0,
        "the shipped lock is stale:\n{}",
        live.transcript()
    );
    assert!(
        live.stdout.contains("matches chassis.lock"),
        "{}",
        live.stdout
    );
    let (r, v) = run_json(dir.path(), "mcp.toml", &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(statuses(&v), ["ok", "ok", "refused"], "{}", r.transcript());
    assert!(tool_contents(&v)[1].contains("Release notes"));
    assert!(!dir.path().join("workspace/summary.md").exists());
}

#[test]
fn an_interrupt_while_a_server_starts_exits_130_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    // A "server" that never answers: chassis waits in its handshake.
    let marker = "313.25";
    write(
        dir.path(),
        "c.toml",
        &format!(
            "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = \"sleep\"\nconfig.args = [\"{marker}\"]\nconfig.protocol = \"initialize\"\nconfig.startup_timeout_seconds = 60\n"
        ),
    );
    for (signal, args) in [
        (
            nix::sys::signal::Signal::SIGINT,
            vec!["tools", "c.toml", "--live"],
        ),
        (
            nix::sys::signal::Signal::SIGTERM,
            vec!["tools", "c.toml", "--update-lock"],
        ),
    ] {
        let out = crate::harness::signal_once_running(
            dir.path(),
            &args,
            &format!("sleep {marker}"),
            std::time::Duration::from_millis(200),
            signal,
        );
        assert_eq!(
            out.status.code(),
            Some(130),
            "{signal}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // SIGKILL is delivered at once but acted on when the process is
        // next scheduled: allow a loaded machine a moment.
        let gone = std::time::Instant::now() + std::time::Duration::from_secs(3);
        while crate::harness::running(&format!("sleep {marker}"))
            && std::time::Instant::now() < gone
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            !crate::harness::running(&format!("sleep {marker}")),
            "{signal}: the server outlived chassis"
        );
    }
    assert!(!dir.path().join("chassis.lock").exists());
}

#[test]
fn the_lock_is_shared_kept_checked_against_the_filter_and_rewritten_when_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let entry = |id: &str, extra: &str| {
        format!(
            "version = 1\n[entries.{id}]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.tools = {{ allow = [\"echo\", \"env\"]{extra} }}\n",
            lit(&mcp_servers::scripted_server())
        )
    };
    write(dir.path(), "a.toml", &entry("s", ""));
    write(dir.path(), "b.toml", &entry("t", ""));
    update_lock(dir.path(), "a.toml", &[]);
    update_lock(dir.path(), "b.toml", &[]);
    // One lock, both compositions' entries.
    for f in ["a.toml", "b.toml"] {
        let r = chassis(dir.path(), &["check", f], &[]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    // A changed prefix makes the lock stale: a `check` finding.
    write(dir.path(), "a.toml", &entry("s", ", prefix = \"x_\""));
    let r = chassis(dir.path(), &["check", "a.toml"], &[]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("load::mcp-lock-stale"), "{}", r.stderr);
    update_lock(dir.path(), "a.toml", &[]);
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    assert!(
        lock.contains("name = \"x_echo\"") && lock.contains("[entries.t]"),
        "{lock}"
    );
    // An unreadable lock: kept aside, written afresh.
    std::fs::write(dir.path().join("chassis.lock"), "version = 1\n[entries.s\n").unwrap();
    let r = chassis(dir.path(), &["check", "a.toml"], &[]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    let r = update_lock(dir.path(), "a.toml", &[]);
    assert!(r.stderr.contains("chassis.lock.invalid"), "{}", r.stderr);
    assert!(dir.path().join("chassis.lock.invalid").exists());
    assert_eq!(chassis(dir.path(), &["check", "a.toml"], &[]).code, 0);
    // `expect_tools` counts what the filter mounts: a denied tool is missing.
    write(
        dir.path(),
        "c.toml",
        &format!(
            "version = 1\n[entries.u]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.tools = {{ deny = [\"echo\"] }}\nconfig.expect_tools = [\"echo\"]\n",
            lit(&mcp_servers::scripted_server())
        ),
    );
    let r = chassis(dir.path(), &["tools", "c.toml", "--update-lock"], &[]);
    assert_eq!(r.code, 3, "{}", r.transcript());
    assert!(r.stderr.contains("expected tool(s) echo"), "{}", r.stderr);
}

#[test]
fn a_crash_marks_the_plugin_unhealthy_until_its_restart() {
    use chassis::runtime::{
        Catalog, ExecutorServices, Harness, HarnessOptions, Health, RunContext, ToolCall,
        ToolExecutor, ToolStatus,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = mcp_servers::scripted_server().display().to_string();
    let config = serde_json::json!({ "command": server, "tools": { "allow": ["crash", "echo"] } });
    let env = chassis::plugins::BuiltinEnv::new(dir.path());
    let redactor = chassis::engine::secret::Redactor::new();
    let no_secrets = |n: &str| -> Result<chassis::engine::secret::SecretValue, String> {
        Err(format!("no secret {n}"))
    };
    let locked = rt
        .block_on(chassis::plugins::mcp::probe(
            "s",
            &config,
            &env,
            &no_secrets,
            &redactor,
        ))
        .expect("probe");
    let mut lock = chassis::lock::Lock::new();
    lock.entries.insert("s".into(), locked);
    let toml = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.tools = {{ allow = [\"crash\", \"echo\"] }}\n",
        lit(Path::new(&server))
    );
    let mut composition = chassis::load::load_str("c.toml", &toml)
        .composition
        .expect("loads");
    chassis::load::apply_lock(&mut composition, Some(&lock));
    let mut catalog = Catalog::new();
    chassis::plugins::register_builtins(&mut catalog, &env.clone().with_lock(Some(lock)));
    let harness = Harness::new(catalog, HarnessOptions::default());
    rt.block_on(harness.reconcile(composition))
        .expect("publishes");
    let health = || rt.block_on(harness.instance_state("s")).expect("mounted").1;
    assert_eq!(health(), Health::Healthy);
    let lease = harness.acquire().expect("lease");
    let executor = ToolExecutor::new(ExecutorServices::permissive());
    let run = RunContext {
        run_id: "t".into(),
        generation: std::sync::Arc::clone(lease.generation()),
        agent: None,
        scope: "/".into(),
        budget: None,
        extra_tools: None,
    };
    let call = |name: &str, args: Value| {
        rt.block_on(executor.execute(
            &run,
            ToolCall {
                name: name.into(),
                args,
                call_id: None,
            },
            false,
        ))
        .expect("runs")
    };
    assert_eq!(
        call("crash", serde_json::json!({})).status,
        ToolStatus::Error
    );
    assert_eq!(health(), Health::Unhealthy, "a crash is reported");
    assert!(harness.plugin_restarts().is_empty(), "not restarted yet");
    let r = call("echo", serde_json::json!({ "text": "back" }));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(health(), Health::Healthy, "the restart is reported");
    // Counted for `chassis_plugin_restarts_total{entry="s"}`.
    assert_eq!(
        harness.plugin_restarts(),
        std::collections::BTreeMap::from([("s".to_owned(), 1)])
    );
    drop(lease);
    rt.block_on(harness.shutdown());
}

#[test]
fn a_paged_tool_list_is_read_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.jsonl");
    write(
        dir.path(),
        "c.toml",
        &format!(
            "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.env = [\"SCRIPTED_PAGE_SIZE\", \"SCRIPTED_LOG\"]\n",
            lit(&mcp_servers::scripted_server())
        ),
    );
    let env = [
        ("SCRIPTED_PAGE_SIZE", "2"),
        ("SCRIPTED_LOG", log.to_str().unwrap()),
    ];
    update_lock(dir.path(), "c.toml", &env);
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    for tool in ["crash", "echo", "env", "flip", "garbage", "hang", "noisy"] {
        assert!(
            lock.contains(&format!("name = \"{tool}\"")),
            "{tool}: {lock}"
        );
    }
    let pages = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"tools/list\""))
        .count();
    assert!(pages >= 4, "7 tools in pages of 2: {pages} requests");
}

#[test]
fn a_changed_tool_list_builds_a_candidate_generation_and_the_run_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let upgraded = dir.path().join("upgraded");
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.env = [\"SCRIPTED_STATE\"]\n{}",
        lit(&mcp_servers::scripted_server()),
        agent(
            &[("flip", "{}"), ("echo", r#"{ text = "after the flip" }"#)],
            &["flip", "echo"],
        )
    );
    write(dir.path(), "c.toml", &text);
    let env = [("SCRIPTED_STATE", upgraded.to_str().unwrap())];
    update_lock(dir.path(), "c.toml", &env);
    let lock_path = dir.path().join("chassis.lock");
    let pinned = std::fs::read_to_string(&lock_path).unwrap();
    assert!(!pinned.contains("\"extra\""), "{pinned}");

    // Without `--update-lock` the lock is the gate: the change is reported
    // with its diff, no candidate is published, the lock stays.
    let (r, v) = run_json(dir.path(), "c.toml", &env);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(statuses(&v), ["ok", "ok"], "{}", r.transcript());
    let candidates = v["candidate_generations"].as_array().unwrap();
    assert_eq!(candidates.len(), 1, "{}", r.transcript());
    assert_eq!(candidates[0]["entry"], "s");
    assert_eq!(candidates[0]["changes"], serde_json::json!(["+ extra"]));
    assert!(candidates[0]["generation_id"].is_null());
    assert!(
        candidates[0]["refused"]
            .as_str()
            .unwrap()
            .contains("--update-lock"),
        "{v}"
    );
    assert!(
        r.stderr.contains("no candidate generation was published"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), pinned);

    // With it, the candidate is built from the new list and published while
    // the run finishes on the generation it leased; the lock follows.
    std::fs::remove_file(&upgraded).unwrap();
    let state = dir.path().join("state.db");
    let state = state.to_str().unwrap();
    let r = chassis(
        dir.path(),
        &[
            "--format",
            "json",
            "run",
            "c.toml",
            "--yes",
            "--update-lock",
            "--state",
            state,
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = stdout_json(&r);
    assert_eq!(tool_contents(&v), ["flipped", "after the flip"]);
    assert_eq!(v["generation_id"], "gen_0001", "the run stays on its lease");
    let candidates = v["candidate_generations"].as_array().unwrap();
    assert_eq!(candidates.len(), 1, "{}", r.transcript());
    assert_eq!(candidates[0]["generation_id"], "gen_0002", "{v}");
    assert!(candidates[0]["refused"].is_null(), "{v}");
    assert!(
        r.stderr
            .contains("published candidate gen_0002 (this run continues on gen_0001)"),
        "{}",
        r.stderr
    );
    let relocked = std::fs::read_to_string(&lock_path).unwrap();
    assert!(relocked.contains("name = \"extra\""), "{relocked}");
    // The store holds both; the candidate is the active one and differs in
    // exactly the entry's tools.
    let r = chassis(
        dir.path(),
        &["--format", "json", "generations", "list", "--state", state],
        &[],
    );
    let listed = stdout_json(&r);
    let states: Vec<(String, String)> = listed["generations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["id"].as_str().unwrap_or_default().to_owned(),
                g["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("gen_0001".to_owned(), "superseded".to_owned()),
            ("gen_0002".to_owned(), "active".to_owned())
        ],
        "{listed}"
    );
    let r = chassis(
        dir.path(),
        &[
            "--format",
            "json",
            "diff",
            "generations",
            "gen_0001",
            "gen_0002",
            "--state",
            state,
        ],
        &[],
    );
    let diff = stdout_json(&r);
    let nodes: Vec<(&str, &str)> = diff["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["entry_id"].as_str().unwrap(), n["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(nodes, [("model", "reused"), ("s", "rebuilt")], "{diff}");
    let rows: Vec<(&str, &str)> = diff["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["kind"].as_str().unwrap(), c["subject"].as_str().unwrap()))
        .collect();
    assert!(rows.contains(&("added", "tool:extra")), "{diff}");
    assert!(rows.contains(&("changed", "tools")), "{diff}");
    // The composition checks clean against the lock the candidate wrote.
    let r = chassis(dir.path(), &["check", "c.toml"], &env);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_server_restarted_with_other_tools_gets_a_candidate_generation() {
    let dir = tempfile::tempdir().unwrap();
    let upgraded = dir.path().join("upgraded");
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.env = [\"SCRIPTED_STATE\", \"SCRIPTED_MODE\"]\n{}",
        lit(&mcp_servers::scripted_server()),
        agent(
            &[("crash", "{}"), ("echo", r#"{ text = "restarted" }"#)],
            &["crash", "echo"],
        )
    );
    write(dir.path(), "c.toml", &text);
    let env = [
        ("SCRIPTED_STATE", upgraded.to_str().unwrap()),
        ("SCRIPTED_MODE", "upgrade_on_crash"),
    ];
    update_lock(dir.path(), "c.toml", &env);
    let r = chassis(
        dir.path(),
        &[
            "--format",
            "json",
            "run",
            "c.toml",
            "--yes",
            "--update-lock",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = stdout_json(&r);
    // The crash fails its call; the restarted server answers, and its new
    // tool waits for the candidate rather than joining this generation.
    assert_eq!(statuses(&v), ["error", "ok"], "{}", r.transcript());
    assert_eq!(v["generation_id"], "gen_0001");
    let candidates = v["candidate_generations"].as_array().unwrap();
    assert_eq!(candidates.len(), 1, "{}", r.transcript());
    assert_eq!(candidates[0]["changes"], serde_json::json!(["+ extra"]));
    assert_eq!(candidates[0]["generation_id"], "gen_0002", "{v}");
    assert!(
        r.stderr
            .contains("was restarted and now offers other tools"),
        "{}",
        r.stderr
    );
    let relocked = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    assert!(relocked.contains("name = \"extra\""), "{relocked}");
}

#[test]
fn a_list_announced_by_the_last_call_is_watched_and_gets_a_candidate() {
    // No call follows `flip`: only the supervisor's watcher sees the
    // notification (the model's last turn waits, as a slow model would).
    let dir = tempfile::tempdir().unwrap();
    let upgraded = dir.path().join("upgraded");
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = {}\nconfig.env = [\"SCRIPTED_STATE\"]\n\n[entries.model]\nplugin = \"scripted\"\n[[entries.model.config.turns]]\ntool_calls = [{{ name = \"flip\", args = {{}} }}]\n[[entries.model.config.turns]]\ntext = \"done\"\ndelay_ms = 3000\n\n[agents.a]\nprompt = \"p\"\ntools = [\"flip\"]\ndefault_input = \"go\"\n",
        lit(&mcp_servers::scripted_server()),
    );
    write(dir.path(), "c.toml", &text);
    let env = [("SCRIPTED_STATE", upgraded.to_str().unwrap())];
    update_lock(dir.path(), "c.toml", &env);
    let r = chassis(
        dir.path(),
        &[
            "--format",
            "json",
            "run",
            "c.toml",
            "--yes",
            "--update-lock",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = stdout_json(&r);
    assert_eq!(statuses(&v), ["ok"]);
    let candidates = v["candidate_generations"].as_array().unwrap();
    assert_eq!(candidates.len(), 1, "{}", r.transcript());
    assert_eq!(candidates[0]["generation_id"], "gen_0002", "{v}");
    assert_eq!(v["generation_id"], "gen_0001");
}

#[test]
fn a_candidate_whose_fresh_mount_fails_is_refused_and_the_generation_stays() {
    // `flip` without SCRIPTED_STATE: the new tool exists only in the session
    // that announced it, so the candidate's fresh server lacks it — a broken
    // promise even under `on_failure = "skip"`, which a candidate does not
    // apply to the changed entry (that would publish without the server).
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "version = 1\n[entries.s]\nplugin = \"mcp\"\non_failure = \"skip\"\nconfig.command = {}\n{}",
        lit(&mcp_servers::scripted_server()),
        agent(
            &[("flip", "{}"), ("echo", r#"{ text = "still here" }"#)],
            &["flip", "echo"],
        )
    );
    write(dir.path(), "c.toml", &text);
    update_lock(dir.path(), "c.toml", &[]);
    let lock_path = dir.path().join("chassis.lock");
    let pinned = std::fs::read_to_string(&lock_path).unwrap();
    let state = dir.path().join("state.db");
    let state = state.to_str().unwrap();
    let r = chassis(
        dir.path(),
        &[
            "--format",
            "json",
            "run",
            "c.toml",
            "--yes",
            "--update-lock",
            "--state",
            state,
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = stdout_json(&r);
    assert_eq!(tool_contents(&v), ["flipped", "still here"]);
    let candidates = v["candidate_generations"].as_array().unwrap();
    assert_eq!(candidates.len(), 1, "{}", r.transcript());
    assert!(candidates[0]["generation_id"].is_null(), "{v}");
    let why = candidates[0]["refused"].as_str().unwrap();
    assert!(
        why.contains("stays current") && why.contains("promised tool `extra`"),
        "{why}"
    );
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), pinned);
    let r = chassis(
        dir.path(),
        &["--format", "json", "generations", "list", "--state", state],
        &[],
    );
    let listed = stdout_json(&r);
    assert_eq!(
        listed["generations"].as_array().map(Vec::len),
        Some(1),
        "only the run's generation: {listed}"
    );
}
