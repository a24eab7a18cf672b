//! A process plugin under `chassis serve`: kept across a reload that does
//! not change it (same process), rebuilt when its file is saved (the file
//! is watched), and its old process ended.

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
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
}
