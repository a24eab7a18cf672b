//! What a model provider writes into names and ids (the model it reports,
//! a tool call's name and id) reaches no client of a served run, and a
//! tool name it invents is no new `/metrics` series.

use super::*;
use crate::loopback::Endpoint;
use crate::secret_pieces::{
    named_answer, naming_composition, naming_reply, piece_in, random_canary,
};

#[test]
fn names_and_ids_a_model_sends_back_reach_no_served_response_event_metric_or_log() {
    let canary = random_canary("CNRY");
    let endpoint = Endpoint::start(vec![
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
    let server = Server::start_with_env(
        dir.path(),
        "c.toml",
        &["--no-watch", "--approve", "echo"],
        &[("CANARY_TOKEN", canary.as_str())],
    );
    let c = client();
    let url = server.url("/v1/agents/a/runs");
    let mut seen = Vec::new();
    runtime().block_on(async {
        let (status, _, doc) = post(&c, &url, &json!({"input": "go"})).await;
        assert_eq!(status, 200, "{doc}");
        assert_eq!(doc["model"], "model-<redacted>", "{doc}");
        seen.push(("the response", doc.to_string()));
        let r = c
            .post(&url)
            .json(&json!({"input": "go", "stream": true}))
            .send()
            .await
            .unwrap();
        let headers = format!("{:?}", r.headers());
        let events = r.text().await.unwrap();
        assert!(events.contains("tool_<redacted>"), "{events}");
        seen.push(("the stream", format!("{headers}{events}")));
        let r = c.get(server.url("/metrics")).send().await.unwrap();
        seen.push(("/metrics", r.text().await.unwrap()));
        let r = c.get(server.url("/v1/runs")).send().await.unwrap();
        seen.push(("/v1/runs", r.text().await.unwrap()));
    });
    let started = server.started.join("\n");
    let (code, stderr) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{stderr}");
    seen.push(("stderr", format!("{started}\n{stderr}")));
    let store = std::fs::read(dir.path().join(".chassis/state.db")).unwrap();
    seen.push(("the store", String::from_utf8_lossy(&store).into_owned()));
    for (what, text) in &seen {
        assert_eq!(
            piece_in(&canary, text, 8),
            None,
            "a piece of the secret is in {what}:\n{text}"
        );
    }
    assert_eq!(endpoint.requests().len(), 4);
}

/// A reply asking for `echo` and for `n` tools no composition declares,
/// from a provider naming its model `reported`.
fn inventing_reply(n: usize, reported: &str) -> Value {
    let mut calls = vec![json!({
        "id": "call_echo", "type": "function",
        "function": { "name": "echo", "arguments": "{\"text\":\"hi\"}" },
    })];
    calls.extend((0..n).map(|i| {
        json!({
            "id": format!("call_{i}"), "type": "function",
            "function": { "name": format!("made_up_{reported}_{i}"), "arguments": "{}" },
        })
    }));
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": reported,
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": null, "tool_calls": calls },
            "finish_reason": "tool_calls",
        }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15 },
    })
}

/// The label sets of the series of `family` in a Prometheus text.
fn series<'a>(metrics: &'a str, family: &str) -> Vec<&'a str> {
    let prefix = format!("{family}{{");
    metrics
        .lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .filter_map(|rest| rest.split('}').next())
        .collect()
}

#[test]
fn tool_names_a_model_invents_are_one_metrics_series() {
    // Two runs, each inventing 25 tool names and reporting a model name of
    // its own: 50 names, 2 reported models, none a label.
    let mut replies = Vec::new();
    for reported in ["invented-a", "invented-b"] {
        replies.push(inventing_reply(25, reported));
        let mut answer = crate::loopback::answer_reply("done");
        answer["model"] = json!(reported);
        replies.push(answer);
    }
    let endpoint = Endpoint::start(replies);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        naming_composition(&endpoint.base_url),
    )
    .unwrap();
    let canary = random_canary("CNRY");
    let server = Server::start_with_env(
        dir.path(),
        "c.toml",
        &["--no-watch", "--approve", "echo"],
        &[("CANARY_TOKEN", canary.as_str())],
    );
    let c = client();
    let metrics = runtime().block_on(async {
        for _ in 0..2 {
            let (status, _, doc) = post(
                &c,
                &server.url("/v1/agents/a/runs"),
                &json!({"input": "go"}),
            )
            .await;
            assert_eq!(status, 200, "{doc}");
            assert_eq!(doc["tool_calls"].as_array().unwrap().len(), 26, "{doc}");
        }
        c.get(server.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    assert_eq!(
        series(&metrics, "chassis_tool_call_duration_seconds_count"),
        ["tool=\"<unknown>\"", "tool=\"echo\""],
        "{metrics}"
    );
    assert_eq!(
        series(&metrics, "chassis_tool_calls_total"),
        [
            "tool=\"<unknown>\",outcome=\"refused\"",
            "tool=\"echo\",outcome=\"ok\""
        ],
        "{metrics}"
    );
    assert!(
        metrics.contains("chassis_tool_calls_total{tool=\"<unknown>\",outcome=\"refused\"} 50"),
        "{metrics}"
    );
    // The model labels are the entry's model, not what the provider said.
    for family in [
        "chassis_tokens_total",
        "chassis_estimated_cost_total",
        "chassis_model_call_duration_seconds_count",
    ] {
        let labelled = series(&metrics, family);
        assert!(!labelled.is_empty(), "{family}: {metrics}");
        for labels in labelled {
            assert!(labels.contains("model=\"loopback\""), "{family}: {metrics}");
        }
    }
    assert!(
        !metrics.contains("made_up") && !metrics.contains("invented"),
        "{metrics}"
    );
}
