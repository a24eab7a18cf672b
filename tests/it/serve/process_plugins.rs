//! A process plugin under `chassis serve`: kept across a reload that does
//! not change it (same process), rebuilt when its file is saved (the file
//! is watched), and its old process ended; a reload whose plugin fails at
//! setup rolls back and the current generation keeps its process.

use serde_json::{Value, json};

use super::{Server, client, post, runtime, save, status_until};
use crate::harness::python;

const PLUGIN: &str = r#"
import os
from chassis_plugin import plugin, ToolPolicy

@plugin(name="pid", version="1.0.0")
def pid(ctx):
    def whoami() -> str:
        "The plugin process's pid."
        return str(os.getpid())
    ctx.tools.register(whoami, policy=ToolPolicy(idempotent=True))

if __name__ == "__main__":
    pid.run()
"#;

const COMPOSITION: &str = r#"version = 1

[plugins.pid]
version = "1.0.0"
command = ["{PYTHON}", "pid.py"]

[[plugins.pid.tools]]
name = "whoami"
description = "The plugin process's pid."
args = { type = "object", properties = {}, required = [], additionalProperties = false }

[policy.tools.whoami]
idempotent = true

[entries.pid]
plugin = "pid"

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "whoami", args = {} }]
[[entries.model.config.turns]]
text = "ANSWER"

[agents.a]
prompt = "p"
"#;

/// The pid the run's tool call reported, and the run's generation.
fn pid_of(doc: &Value) -> (u32, String) {
    let pid = doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool result: {doc:#}"))
        .parse()
        .unwrap();
    (pid, doc["generation_id"].as_str().unwrap().to_owned())
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn a_process_plugin_is_kept_across_a_reload_and_rebuilt_when_its_file_is_saved() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        crate::harness::root().join("sdk/python/chassis_plugin.py"),
        dir.path().join("chassis_plugin.py"),
    )
    .unwrap();
    std::fs::write(dir.path().join("pid.py"), PLUGIN).unwrap();
    let file = dir.path().join("composition.toml");
    let text = COMPOSITION.replace("{PYTHON}", &python());
    std::fs::write(&file, text.replace("ANSWER", "one")).unwrap();
    let server = Server::start(dir.path(), "composition.toml", &[]);
    let c = client();
    runtime().block_on(async {
        let run = |c: reqwest::Client, url: String| async move {
            let (code, _, doc) = post(&c, &url, &json!({"input": "go"})).await;
            assert_eq!(code, 200, "{doc:#}");
            doc
        };
        let url = server.url("/v1/agents/a/runs");
        let (first, generation) = pid_of(&run(c.clone(), url.clone()).await);
        assert_eq!(generation, "gen_0001");
        // Another entry changes: a new generation, the same plugin process.
        save(&file, &text.replace("ANSWER", "two"));
        status_until(&c, &server, |s| s["current"]["id"] == "gen_0002").await;
        let doc = run(c.clone(), url.clone()).await;
        assert_eq!(doc["answer"], "two");
        assert_eq!(pid_of(&doc), (first, "gen_0002".to_owned()));
        // The plugin's file changes: a new process, and the old one ends.
        let plugin = dir.path().join("pid.py");
        std::fs::write(
            dir.path().join("pid.py.tmp"),
            PLUGIN.replace(
                "The plugin process's pid.\"",
                "The plugin process's pid.\"\n        # edited",
            ),
        )
        .unwrap();
        std::fs::rename(dir.path().join("pid.py.tmp"), &plugin).unwrap();
        status_until(&c, &server, |s| s["current"]["id"] == "gen_0003").await;
        let (second, generation) = pid_of(&run(c.clone(), url.clone()).await);
        assert_eq!(generation, "gen_0003");
        assert_ne!(second, first, "an edited plugin file rebuilds the instance");
        for _ in 0..250 {
            if !alive(first) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(
            !alive(first),
            "the old plugin process {first} is still running"
        );
        // A plugin file that fails at setup: the reload fails and rolls
        // back, and the current generation keeps serving with its process.
        std::fs::write(
            dir.path().join("pid.py.tmp"),
            PLUGIN.replace(
                "def pid(ctx):\n",
                "def pid(ctx):\n    raise RuntimeError('broken on purpose')\n",
            ),
        )
        .unwrap();
        std::fs::rename(dir.path().join("pid.py.tmp"), &plugin).unwrap();
        let status = status_until(&c, &server, |s| s["last_reload"]["ok"] == false).await;
        let error = status["last_reload"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("broken on purpose"), "{status:#}");
        assert_eq!(status["current"]["id"], "gen_0003", "{status:#}");
        assert_eq!(
            pid_of(&run(c.clone(), url.clone()).await),
            (second, "gen_0003".to_owned())
        );
        assert!(alive(second), "the serving plugin process {second} ended");
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
}

/// A plugin with HTTP routes: JSON, text, a prefix route echoing its body
/// (and telling whether it saw credentials), and a header quoting the
/// secret its configuration references.
const DESK: &str = r#"
from chassis_plugin import plugin, Response

@plugin(name="desk", version="1.0.0")
def desk(ctx):
    key = ctx.config["key"]
    def stats(request):
        return {"count": 3, "query": request.query}
    def echo(request):
        return Response(request.path + " " + request.body.upper(), status=201,
                        headers={"x-saw-credentials": str("authorization" in request.headers or "cookie" in request.headers),
                                 "x-key": key})
    def health(request):
        return "ok"
    ctx.routes.register("GET", "/stats", stats)
    ctx.routes.register("POST", "/echo/*", echo)
    ctx.routes.register("GET", "/health", health)

if __name__ == "__main__":
    desk.run()
"#;

/// The same from TypeScript's SDK (compiled JavaScript).
const PING_JS: &str = r#"
const { plugin, RouteResponse, traceparent } = require("./chassis_plugin");
plugin({ name: "ping", version: "1.0.0" }, (ctx) => {
  ctx.routes.register({ method: "GET", path: "/ping" }, (request) =>
    new RouteResponse({ pong: true, query: request.query, trace: traceparent() ?? null }, 202));
}).run();
"#;

const DESK_TOML: &str = r#"version = 1

[plugins.ping]
version = "1.0.0"
command = ["node", "ping.js"]

[entries.ping]
plugin = "ping"

[plugins.desk]
version = "1.0.0"
command = ["{PYTHON}", "desk.py"]

[entries.desk]
plugin = "desk"
config.key = { secret = "SERVE_CANARY" }

[serve]
tokens = [{ secret = "SERVE_TOKEN" }]
auth_excluded = ["/plugins/desk/health"]
"#;

#[test]
fn a_plugins_http_routes_are_pinned_then_served_behind_the_servers_tokens() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        crate::harness::root().join("sdk/python/chassis_plugin.py"),
        dir.path().join("chassis_plugin.py"),
    )
    .unwrap();
    std::fs::write(dir.path().join("desk.py"), DESK).unwrap();
    std::fs::write(dir.path().join("ping.js"), PING_JS).unwrap();
    std::fs::copy(
        crate::harness::root().join("sdk/typescript/chassis_plugin.js"),
        dir.path().join("chassis_plugin.js"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("composition.toml"),
        DESK_TOML.replace("{PYTHON}", &python()),
    )
    .unwrap();
    // Unpinned routes are refused: the server exits before binding.
    let out = super::command(dir.path(), "composition.toml", &["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("registers hooks, HTTP routes or agents that `chassis.lock` does not pin")
            && stderr.contains("route GET /stats"),
        "{stderr}"
    );
    let pinned = crate::harness::run_in(
        dir.path(),
        &["tools", "composition.toml", "--update-lock"],
        &[("SERVE_CANARY", super::CANARY)],
    );
    assert_eq!(pinned.code, 0, "{}\n{}", pinned.stdout, pinned.stderr);
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    assert!(
        lock.contains("[[entries.desk.routes]]\npath = \"/echo/*\"\nmethod = \"POST\""),
        "{lock}"
    );
    assert!(!lock.contains(super::CANARY));

    let server = Server::start(dir.path(), "composition.toml", &[]);
    let c = client();
    let bearer = format!("Bearer {}", super::TOKEN);
    let mut seen = String::new();
    runtime().block_on(async {
        let r = c
            .get(server.url("/plugins/desk/stats"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status().as_u16(),
            401,
            "the server's tokens guard plugin routes"
        );
        let r = c
            .get(server.url("/plugins/desk/stats?x=1&x=2"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(r.headers()["content-type"], "application/json");
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc, json!({"count": 3, "query": {"x": ["1", "2"]}}));
        // Listed in `[serve] auth_excluded`: no token needed.
        let r = c
            .get(server.url("/plugins/desk/health"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(r.text().await.unwrap(), "ok");
        // A prefix route; credentials are not forwarded, and a secret the
        // plugin answers with is redacted.
        let r = c
            .post(server.url("/plugins/desk/echo/a/b"))
            .header("authorization", &bearer)
            .header("cookie", "session=1")
            .body("hi")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
        assert_eq!(r.headers()["x-saw-credentials"], "False");
        let key = r.headers()["x-key"].to_str().unwrap().to_owned();
        assert!(!key.contains(super::CANARY), "{key}");
        seen.push_str(&key);
        assert_eq!(r.text().await.unwrap(), "/echo/a/b HI");
        // The caller's trace context continues into the plugin, its flags
        // as sent (not sampled stays not sampled).
        let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let r = c
            .get(server.url("/plugins/ping/ping?a=1"))
            .header("authorization", &bearer)
            .header("traceparent", trace)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 202);
        assert_eq!(r.headers()["content-type"], "application/json");
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc, json!({"pong": true, "query": "a=1", "trace": trace}));
        // Problems: another method, an unknown path, an unknown entry.
        for (method, path, status, code) in [
            (
                reqwest::Method::DELETE,
                "/plugins/desk/stats",
                405,
                "serve::method-not-allowed",
            ),
            (
                reqwest::Method::GET,
                "/plugins/desk/nope",
                404,
                "serve::unknown-plugin-route",
            ),
            (
                reqwest::Method::GET,
                "/plugins/ghost/stats",
                404,
                "serve::unknown-plugin-route",
            ),
        ] {
            let r = c
                .request(method, server.url(path))
                .header("authorization", &bearer)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), status, "{path}");
            assert_eq!(r.headers()["content-type"], "application/problem+json");
            if status == 405 {
                assert_eq!(r.headers()["allow"], "GET");
            }
            let doc: Value = r.json().await.unwrap();
            assert_eq!(doc["code"], code, "{doc:#}");
        }
        // A path may not climb out of a prefix route, nor hide a separator
        // (the client library would normalize `..`: sent raw).
        let r = c
            .post(server.url("/plugins/desk/echo/a%2Fb"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400);
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["code"], "serve::bad-plugin-path", "{doc:#}");
    });
    {
        use std::io::{Read, Write};
        let address = server.url("").trim_start_matches("http://").to_owned();
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "POST /plugins/desk/echo/../../v1/status HTTP/1.1\r\nHost: {address}\r\nAuthorization: {bearer}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("serve::bad-plugin-path"), "{answer}");
    }
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
    assert!(!rest.contains(super::CANARY) && !seen.contains(super::CANARY));
}

/// A plugin whose setup registers a cleanup (it writes `cleaned-up`), then
/// sleeps 30 s.
const SLOW: &str = r#"
import os, time
from chassis_plugin import plugin

HERE = os.path.dirname(os.path.abspath(__file__))

@plugin(name="slow", version="1.0.0")
def slow(ctx):
    def mark():
        with open(os.path.join(HERE, "cleaned-up"), "a") as f:
            f.write("teardown ran the setup's cleanup\n")
    ctx.cleanup("mark", mark)
    time.sleep(30)

if __name__ == "__main__":
    slow.run()
"#;

#[test]
fn a_server_stopped_during_a_reloads_slow_setup_cancels_it_and_does_not_wait_for_it() {
    // A reload mounts a plugin whose setup takes 30 s (its startup timeout
    // too); the server is stopped meanwhile. The setup is cancelled — the
    // plugin gets `teardown` (its cleanups run) and its process group is
    // ended — and the server stops within a few seconds, not when the
    // setup would have answered.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        crate::harness::root().join("sdk/python/chassis_plugin.py"),
        dir.path().join("chassis_plugin.py"),
    )
    .unwrap();
    std::fs::write(dir.path().join("slow.py"), SLOW).unwrap();
    let file = dir.path().join("composition.toml");
    let base = "version = 1\n[entries.model]\nplugin = \"scripted\"\n[[entries.model.config.turns]]\ntext = \"hi\"\n[agents.a]\nprompt = \"p\"\n";
    std::fs::write(&file, base).unwrap();
    let server = Server::start(dir.path(), "composition.toml", &[]);
    save(
        &file,
        &format!(
            "{base}[plugins.slow]\nversion = \"1.0.0\"\ncommand = [\"{}\", \"slow.py\"]\n[entries.slow]\nplugin = \"slow\"\n",
            python()
        ),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !crate::harness::running("slow.py") {
        assert!(
            std::time::Instant::now() < deadline,
            "the reload never started the plugin"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Into its setup.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let signalled = std::time::Instant::now();
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    let took = signalled.elapsed();
    assert_eq!(code, 0, "{rest}");
    assert!(
        took < std::time::Duration::from_secs(4),
        "{took:?} after SIGTERM: {rest}"
    );
    let cleaned = std::fs::read_to_string(dir.path().join("cleaned-up")).unwrap_or_default();
    assert_eq!(
        cleaned, "teardown ran the setup's cleanup\n",
        "the plugin was killed without its teardown: {rest}"
    );
    let gone = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while crate::harness::running(&format!("{} slow.py", python()))
        && std::time::Instant::now() < gone
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !crate::harness::running(&format!("{} slow.py", python())),
        "the plugin outlived the server"
    );
}
