//! What leaves through the conversation: a command tool prints a secret;
//! the bytes a real OpenAI-compatible endpoint receives, the stdin of a
//! `hook-command` and the recording are checked for it, and the recorded
//! model requests must be what the endpoint received.

use serde_json::{Value, json};

use crate::harness::run_in;
use crate::loopback::{Endpoint, answer_reply, tool_call_reply};

const CANARY: &str = "sk-vault-canary-93b1e7";
const MODEL_KEY: &str = "sk-model-key-5c2a90";

fn composition(base_url: &str) -> String {
    format!(
        r#"version = 1

# The canary is a referenced secret: the redactor knows it.
[plugins.vault]
version = "1.0.0"

[entries.vault]
config = {{ token = {{ secret = "VAULT_TOKEN" }} }}

# A tool that prints it, as a value and as two keys of its JSON output.
[entries.tools]
plugin = "command"
[entries.tools.config]
env = ["VAULT_TOKEN"]
[[entries.tools.config.tools]]
name = "leak"
description = "Prints the vault token."
args = {{ type = "object", properties = {{}} }}
# (`\\173` and `\\175` are printf's braces: a brace in argv is a template.)
argv = ["sh", "-c", "printf '\\173\"token\": \"%s\", \"%s\": 1, \"x-%s\": 2\\175' \"$VAULT_TOKEN\" \"$VAULT_TOKEN\" \"$VAULT_TOKEN\""]
output = "json"
idempotent = true
timeout_seconds = 5

# A hook that keeps what it is given on stdin.
[entries.spy]
plugin = "hook-command"
[entries.spy.config]
argv = ["sh", "-c", "cat >> hook-stdin.jsonl; echo >> hook-stdin.jsonl"]
env = ["PATH"]
events = ["before_agent_run", "before_model_call", "before_tool_execute", "after_model_call"]

[entries.model]
plugin = "openai"
[entries.model.config]
model = "loopback"
base_url = "{base_url}"
api_key = {{ secret = "MODEL_KEY" }}
max_retries = 0

[agents.a]
prompt = "Use the tools."
tools = ["leak"]
default_input = "go"
"#
    )
}

fn has(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// `(role, content)` of each message, as the endpoint or the recording
/// has them.
fn contents(messages: &Value) -> Vec<(String, String)> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_secret_a_tool_prints_reaches_neither_the_model_nor_a_hook_and_the_recording_is_what_was_sent()
{
    let endpoint = Endpoint::start(vec![
        tool_call_reply("leak", &json!({})),
        answer_reply("done"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, composition(&endpoint.base_url)).unwrap();
    let record = dir.path().join("record.json");
    let env = [("VAULT_TOKEN", CANARY), ("MODEL_KEY", MODEL_KEY)];
    let run = run_in(
        dir.path(),
        &[
            "--color",
            "never",
            "-vv",
            "--format",
            "json",
            "run",
            file.to_str().unwrap(),
            "--yes",
            "--record",
            record.to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for (what, bytes) in [
        ("stdout", run.stdout.as_bytes()),
        ("stderr", run.stderr.as_bytes()),
    ] {
        assert!(
            !has(bytes, CANARY),
            "{what}:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }

    // The endpoint: two calls, the canary in neither (head nor body); the
    // key it is owed is in the head, where the composition references it.
    let requests = endpoint.requests();
    assert_eq!(requests.len(), 2);
    for raw in &requests {
        assert!(!has(raw, CANARY), "{}", String::from_utf8_lossy(raw));
        assert!(
            has(raw, MODEL_KEY),
            "the api_key is sent where it is referenced"
        );
    }
    let bodies = endpoint.bodies();
    let tool_message = &bodies[1]["messages"].as_array().unwrap()[3];
    assert_eq!(tool_message["role"], "tool", "{}", bodies[1]);
    let output: Value = serde_json::from_str(tool_message["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        output,
        json!({ "token": "<redacted>", "<redacted:1>": 1, "<redacted:2>": 2 }),
        "the secret keys are numbered, none lost"
    );

    // The hook: every payload it was given, without the canary, and the
    // conversation it saw holds the redacted output.
    let hook = std::fs::read(dir.path().join("hook-stdin.jsonl")).unwrap();
    assert!(!has(&hook, CANARY), "{}", String::from_utf8_lossy(&hook));
    let events: Vec<Value> = String::from_utf8_lossy(&hook)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let second_model_call = events
        .iter()
        .filter(|e| e["event"] == "before_model_call")
        .nth(1)
        .expect("two before_model_call events");
    assert_eq!(
        contents(&second_model_call["payload"]["messages"]),
        contents(&bodies[1]["messages"]),
        "the hook saw what the model was sent"
    );

    // The recording: no canary, and each model request's conversation is
    // the one the endpoint received.
    let recorded = std::fs::read(&record).unwrap();
    assert!(!has(&recorded, CANARY));
    let doc: Value = serde_json::from_slice(&recorded).unwrap();
    let model_requests: Vec<&Value> = doc["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "model")
        .map(|r| &r["request"]["messages"])
        .collect();
    assert_eq!(model_requests.len(), 2);
    for (recorded, sent) in model_requests.iter().zip(&bodies) {
        assert_eq!(contents(recorded), contents(&sent["messages"]));
    }

    // The recording replays: the tool's output, keys numbered, comes back
    // as the model saw it, so every model call is found.
    let replay = run_in(
        dir.path(),
        &[
            "--color",
            "never",
            "--format",
            "json",
            "run",
            file.to_str().unwrap(),
            "--yes",
            "--replay",
            record.to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(replay.code, 0, "{}\n{}", replay.stdout, replay.stderr);
    let first: Value = serde_json::from_str(&run.stdout).unwrap();
    let again: Value = serde_json::from_str(&replay.stdout).unwrap();
    assert_eq!(again["messages"], first["messages"]);
    assert_eq!(endpoint.requests().len(), 2, "the replay called no model");
}

/// A secret that spells a key or label chassis writes changes none of
/// them: the result document keeps its shape.
#[test]
fn a_secret_spelling_a_label_leaves_the_result_document_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        r#"version = 1

[plugins.vault]
version = "1.0.0"

[entries.vault]
config = { token = { secret = "VAULT_TOKEN" } }

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
text = "done"
usage = { input_tokens = 3, output_tokens = 2 }

[agents.a]
default_input = "go"
budget = { tokens = 100 }
"#,
    )
    .unwrap();
    let run = run_in(
        dir.path(),
        &["--format", "json", "run", file.to_str().unwrap()],
        &[("VAULT_TOKEN", "tokens")],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["answer"], "done");
    let dimensions: Vec<&str> = doc["budget"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["dimension"].as_str())
        .collect();
    assert!(dimensions.contains(&"tokens"), "{}", run.stdout);
    assert!(doc["usage"]["input_tokens"].is_u64(), "{}", run.stdout);

    // A secret too short to be redacted is not used: the run fails before
    // it starts (exit 3), naming the variable and the rule.
    let short = run_in(
        dir.path(),
        &["run", file.to_str().unwrap()],
        &[("VAULT_TOKEN", "tok5!")],
    );
    assert_eq!(short.code, 3, "{}", short.stderr);
    assert!(
        short.stderr.contains("VAULT_TOKEN") && short.stderr.contains("shorter than 6 characters"),
        "{}",
        short.stderr
    );
    assert!(!short.stderr.contains("tok5!") && !short.stdout.contains("tok5!"));
}

/// A session turn that stopped at the step limit with a tool call it did
/// not run leaves a transcript an OpenAI-compatible endpoint still
/// accepts: the next turn's request answers the call, saying it was not
/// run (the loopback endpoint refuses an unanswered call with OpenAI's 400).
#[test]
fn a_session_turn_stopped_at_the_step_limit_leaves_every_tool_call_answered() {
    let endpoint = Endpoint::start(vec![
        tool_call_reply("leak", &json!({})),
        answer_reply("done"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    let text = composition(&endpoint.base_url).replace(
        "default_input = \"go\"",
        "default_input = \"go\"\nmax_steps = 1",
    );
    std::fs::write(&file, text).unwrap();
    let env = [("VAULT_TOKEN", CANARY), ("MODEL_KEY", MODEL_KEY)];
    let turn = |input: &str| {
        run_in(
            dir.path(),
            &[
                "--format",
                "json",
                "run",
                file.to_str().unwrap(),
                "--yes",
                "--session",
                "s",
                "--state",
                "st.db",
                "--input",
                input,
            ],
            &env,
        )
    };
    let first = turn("go");
    assert_eq!(first.code, 1, "{}", first.stderr);
    let doc: Value = serde_json::from_str(&first.stdout).unwrap();
    assert_eq!(doc["stop"]["kind"], "step_limit", "{doc}");

    let second = turn("again");
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    let sent = &endpoint.bodies()[1]["messages"];
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "user"],
        "{sent}"
    );
    assert_eq!(sent[2]["tool_calls"][0]["id"], "call_1", "{sent}");
    assert_eq!(sent[3]["tool_call_id"], "call_1", "{sent}");
    assert!(
        sent[3]["content"].as_str().unwrap().starts_with("not run"),
        "{sent}"
    );
    // The run's document shows the same conversation.
    let doc: Value = serde_json::from_str(&second.stdout).unwrap();
    let tool = &doc["messages"][3];
    assert_eq!(
        (&tool["tool_call_id"], &tool["content"]),
        (&sent[3]["tool_call_id"], &sent[3]["content"]),
        "{doc}"
    );
}
