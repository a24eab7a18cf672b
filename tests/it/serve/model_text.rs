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
