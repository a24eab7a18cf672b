//! No piece of a secret leaves: not one a window of a child's stderr cut
//! in two, nor one a model provider wrote into what it names (its model,
//! a tool call's name or id). The secrets are random canaries, so nothing
//! passes by knowing them in advance.

use std::io::Read;
use std::path::Path;

use crate::harness::run_in;

/// `prefix` and 60 random hex digits.
pub fn random_canary(prefix: &str) -> String {
    let mut bytes = [0u8; 30];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("random bytes");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

/// The first piece of `secret` at least `min` bytes long that `text` holds.
pub fn piece_in(secret: &str, text: &str, min: usize) -> Option<String> {
    (0..=secret.len().saturating_sub(min))
        .map(|i| &secret[i..i + min])
        .find(|piece| text.contains(piece))
        .map(str::to_owned)
}

/// What a run left: stdout, stderr, and the files named (that exist).
fn everything(stdout: &str, stderr: &str, dir: &Path, files: &[&str]) -> Vec<(String, String)> {
    let mut out = vec![
        ("stdout".to_owned(), stdout.to_owned()),
        ("stderr".to_owned(), stderr.to_owned()),
    ];
    for f in files {
        if let Ok(bytes) = std::fs::read(dir.join(f)) {
            out.push((
                (*f).to_owned(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    out
}

/// Writes to stderr 5000 bytes of `x`, the token, dots, and the token on
/// each of three last lines, so that the last `2048 + len(token)` bytes
/// (what chassis keeps of a failing program's stderr) begin `k` bytes into
/// the first copy; then fails. `k` is the first argument, or (as a hook)
/// the `k` of the tool call's arguments in the payload on stdin.
const FAILER: &str = r#"s="$CANARY_TOKEN"
if [ $# -gt 0 ]; then k=$1; else k=$(tr -d '\n' | sed -n 's/.*"k": *"\([0-9]*\)".*/\1/p'); fi
n=${#s}
pad=$(( 2048 + k - 3 * (n + 1) - 1 ))
{
  head -c 5000 /dev/zero | tr '\0' x
  printf '%s' "$s"
  head -c "$pad" /dev/zero | tr '\0' .
  printf '\n%s\n%s\n%s\n' "$s" "$s" "$s"
} >&2
exit 3
"#;

fn failing_composition(len: usize) -> String {
    let calls: Vec<String> = (0..=len)
        .map(|k| format!("{{ name = \"fail\", args = {{ k = \"{k}\" }} }}"))
        .collect();
    format!(
        r#"version = 1

# The canary is a referenced secret: the redactor knows it.
[plugins.vault]
version = "1.0.0"

[entries.vault]
config = {{ token = {{ secret = "CANARY_TOKEN" }} }}

[entries.tools]
plugin = "command"
config.env = ["CANARY_TOKEN", "PATH"]
[[entries.tools.config.tools]]
name = "fail"
description = "Fails, its stderr window starting k bytes into the token."
args = {{ type = "object", properties = {{ k = {{ type = "string" }} }}, required = ["k"] }}
argv = ["sh", "failer.sh", "{{/k}}"]
input = "none"
idempotent = true
timeout_seconds = 30

# A hook that fails the same way on every call.
[entries.obs]
plugin = "hook-command"
config = {{ argv = ["sh", "failer.sh"], events = ["before_tool_execute"], env = ["CANARY_TOKEN", "PATH"] }}

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{calls}]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "Fail."
tools = ["fail"]
default_input = "go"
"#,
        calls = calls.join(", ")
    )
}

#[test]
fn a_failing_command_or_hook_shows_no_piece_of_a_secret_its_stderr_window_cut() {
    let canary = random_canary("CNRY");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("failer.sh"), FAILER).unwrap();
    std::fs::write(dir.path().join("c.toml"), failing_composition(canary.len())).unwrap();
    for format in ["json", "text"] {
        let run = run_in(
            dir.path(),
            &[
                "--color", "never", "--format", format, "run", "c.toml", "--record", "rec.json",
                "--trace", "tr.jsonl",
            ],
            &[("CANARY_TOKEN", canary.as_str())],
        );
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        // Every call failed quoting its stderr's tail, the copies whole in
        // it redacted; the hook failed the same way each time.
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains("exit code 3; stderr: …"), "{all}");
        assert!(all.contains("<redacted>"), "{all}");
        if format == "text" {
            assert!(all.contains("hook `"), "{all}");
        }
        for (what, text) in everything(
            &run.stdout,
            &run.stderr,
            dir.path(),
            &["rec.json", "tr.jsonl"],
        ) {
            assert_eq!(
                piece_in(&canary, &text, 8),
                None,
                "a piece of the secret is in {what} ({format}):\n{text}"
            );
        }
    }
}

/// A Chat Completions reply whose every name and id carries `canary`: the
/// model it reports, and two tool calls — the real tool `echo` and one
/// invented — with ids holding it.
pub fn naming_reply(canary: &str) -> serde_json::Value {
    serde_json::json!({
        "id": format!("chatcmpl-{canary}"), "object": "chat.completion",
        "model": format!("echo-{canary}"),
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant", "content": null,
                "tool_calls": [
                    {
                        "id": format!("call_{canary}_1"), "type": "function",
                        "function": { "name": "echo", "arguments": "{\"text\":\"hi\"}" },
                    },
                    {
                        "id": format!("call_{canary}_2"), "type": "function",
                        "function": { "name": format!("tool_{canary}"), "arguments": "{}" },
                    },
                ],
            },
            "finish_reason": "tool_calls",
        }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15 },
    })
}

/// The final answer of a provider that names its model with `canary`.
pub fn named_answer(canary: &str) -> serde_json::Value {
    let mut reply = crate::loopback::answer_reply("done");
    reply["model"] = serde_json::json!(format!("model-{canary}"));
    reply
}

/// An `openai` model at `base_url`, the canary a referenced secret, and a
/// tool `echo`.
pub fn naming_composition(base_url: &str) -> String {
    format!(
        r#"version = 1

[plugins.vault]
version = "1.0.0"

[entries.vault]
config = {{ token = {{ secret = "CANARY_TOKEN" }} }}

[entries.model]
plugin = "openai"
[entries.model.config]
model = "loopback"
base_url = "{base_url}"
max_retries = 0

[entries.tools]
plugin = "command"
[[entries.tools.config.tools]]
name = "echo"
description = "Echoes."
args = {{ type = "object", properties = {{ text = {{ type = "string" }} }} }}
argv = ["echo", "{{/text}}"]
input = "none"
idempotent = true
side_effects = ["read_only"]

[agents.a]
prompt = "Use the tools."
tools = ["echo"]
default_input = "go"
"#
    )
}

#[test]
fn names_and_ids_a_model_provider_sends_back_are_redacted_where_they_enter() {
    let canary = random_canary("CNRY");
    let endpoint = crate::loopback::Endpoint::start(vec![
        naming_reply(&canary),
        named_answer(&canary),
        naming_reply(&canary),
        named_answer(&canary),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        naming_composition(&endpoint.base_url),
    )
    .unwrap();
    for format in ["json", "text"] {
        let run = run_in(
            dir.path(),
            &[
                "--color", "never", "--format", format, "run", "c.toml", "--record", "rec.json",
                "--trace", "tr.jsonl",
            ],
            &[("CANARY_TOKEN", canary.as_str())],
        );
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        for (what, text) in everything(
            &run.stdout,
            &run.stderr,
            dir.path(),
            &["rec.json", "tr.jsonl"],
        ) {
            assert_eq!(
                piece_in(&canary, &text, 8),
                None,
                "a piece of the secret is in {what} ({format}):\n{text}"
            );
        }
        if format == "json" {
            // Redacted, not dropped: the names are there, marked.
            let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            assert_eq!(doc["model"], "model-<redacted>", "{doc}");
            let names: Vec<&str> = doc["tool_calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, ["echo", "tool_<redacted>"], "{doc}");
        }
    }
    // The model was sent the ids as redacted, and the recording's model
    // requests are what it was sent.
    let requests = endpoint.requests();
    assert_eq!(requests.len(), 4);
    for raw in &requests {
        let raw = String::from_utf8_lossy(raw);
        assert_eq!(piece_in(&canary, &raw, 8), None, "{raw}");
    }
    let sent = &endpoint.bodies()[3]["messages"];
    assert_eq!(
        sent[2]["tool_calls"][0]["id"], "call_<redacted>_1",
        "{sent}"
    );
    assert_eq!(sent[3]["tool_call_id"], "call_<redacted>_1", "{sent}");
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("rec.json")).unwrap()).unwrap();
    let model_requests: Vec<&serde_json::Value> = recorded["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "model")
        .map(|r| &r["request"]["messages"])
        .collect();
    assert_eq!(model_requests.len(), 2);
    assert_eq!(ids(model_requests[1]), ids(sent));
    assert_eq!(
        ids(sent),
        [
            "call_<redacted>_1",
            "call_<redacted>_2",
            "call_<redacted>_1",
            "call_<redacted>_2"
        ]
    );
}

/// The tool call ids of a conversation (of the calls, then of the tool
/// messages answering them), as the wire or a recording has them.
fn ids(messages: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages.as_array().unwrap() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            out.push(c["id"].as_str().unwrap().to_owned());
        }
        if let Some(id) = m["tool_call_id"].as_str() {
            out.push(id.to_owned());
        }
    }
    out
}
