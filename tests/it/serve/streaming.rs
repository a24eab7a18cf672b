//! The answer's text streamed from an `openai` model to a served run's
//! client as it is generated: `text_delta` events, every piece through a
//! streaming redactor (a secret split across two pieces is caught), usage
//! estimated when the stream reports none, and a stream cut mid-answer is
//! an `error` event, never retried.

use super::*;
use crate::loopback::{Endpoint, answer_reply, streamed_reply};

/// A composition whose model is the loopback endpoint at `base_url`, its
/// key the canary (so the redactor knows it).
fn composition(base_url: &str) -> String {
    format!(
        "version = 1\n\n[entries.model]\nplugin = \"openai\"\n[entries.model.config]\nmodel = \"loopback\"\nbase_url = \"{base_url}\"\napi_key = {{ secret = \"SERVE_CANARY\" }}\nmax_retries = 2\n\n[agents.assistant]\nprompt = \"You answer.\"\nbudget = {{ model_calls = 2, tokens = 1000 }}\n"
    )
}

async fn streamed(c: &reqwest::Client, url: &str) -> Vec<(String, Value)> {
    let response = c
        .post(url)
        .json(&json!({"input": "the key?", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let mut events = Events::new(response);
    events.until("result").await
}

#[test]
fn a_streamed_answer_arrives_in_pieces_with_a_split_secret_caught() {
    let (first, rest) = CANARY.split_at(9);
    let endpoint = Endpoint::start(vec![
        streamed_reply(&["The key ", "is ", first, rest, ", of course."], true),
        answer_reply("Whole."),
        streamed_reply(&["Cut off mid-"], false),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.toml"), composition(&endpoint.base_url)).unwrap();
    let server = Server::start(dir.path(), "s.toml", &["--no-watch"]);
    let c = client();
    let url = server.url("/v1/agents/assistant/runs");
    let mut seen = String::new();
    runtime().block_on(async {
        let events = streamed(&c, &url).await;
        seen.push_str(&format!("{events:?}"));
        let pieces: Vec<&str> = events
            .iter()
            .filter(|(name, _)| name == "text_delta")
            .map(|(_, d)| d["text"].as_str().unwrap())
            .collect();
        assert!(pieces.len() >= 3, "{events:?}");
        let streamed_text = pieces.concat();
        assert!(!streamed_text.contains(first) || !streamed_text.contains(rest));
        assert!(!streamed_text.contains(CANARY), "{streamed_text}");
        let result = &events.last().unwrap().1;
        assert_eq!(
            result["answer"].as_str(),
            Some(streamed_text.as_str()),
            "{result}"
        );
        assert!(streamed_text.starts_with("The key is "), "{streamed_text}");
        assert!(streamed_text.ends_with(", of course."), "{streamed_text}");
        // No usage in the stream: an estimate is charged, never zero.
        assert!(
            result["usage"]["output_tokens"].as_u64().unwrap() > 0,
            "{result}"
        );
        assert!(
            result["usage"]["input_tokens"].as_u64().unwrap() > 0,
            "{result}"
        );
        // Not streamed: one answer, no pieces.
        let (s, _, doc) = post(&c, &url, &json!({"input": "again"})).await;
        assert_eq!((s, doc["answer"].as_str()), (200, Some("Whole.")), "{doc}");
        // Cut mid-answer: the model call fails, the client gets an error
        // event, and it is not retried (the text was already handed on).
        let events = streamed(&c, &url).await;
        let error = events
            .iter()
            .find(|(name, _)| name == "error")
            .unwrap_or_else(|| panic!("no error event: {events:?}"));
        assert_eq!(error.1["code"], "serve::model-failed", "{error:?}");
        assert!(
            error.1["detail"].as_str().unwrap().contains("[DONE]"),
            "{error:?}"
        );
        // What to do about it: the entry serving the agent's model, named
        // by a route this server answers, and that a retry is the client's.
        let help = error.1["help"]
            .as_array()
            .unwrap_or_else(|| panic!("no help: {error:?}"));
        let help: Vec<&str> = help.iter().filter_map(Value::as_str).collect();
        assert!(
            help.iter().any(|h| h.contains("`base_url`")
                && h.contains(
                    "/v1/explain/requirement?consumer=/agents/assistant&capability=model"
                )),
            "{error:?}"
        );
        assert!(
            help.iter().any(|h| h.contains("send the request again")),
            "{error:?}"
        );
        let (s, explained) = get(
            &c,
            &server.url("/v1/explain/requirement?consumer=/agents/assistant&capability=model"),
        )
        .await;
        assert_eq!(s, 200, "{explained}");
        assert!(
            explained["candidates"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["entry"] == "model" && c["selected"] == true),
            "{explained}"
        );
        let result = &events.last().unwrap().1;
        assert_eq!(result["stop"]["kind"], "model_failed", "{result}");
        seen.push_str(&format!("{events:?}"));
    });
    // What the endpoint was asked: stream with usage, then not, then stream
    // once (no retry after the first byte).
    let bodies = endpoint.bodies();
    assert_eq!(bodies.len(), 3, "{bodies:?}");
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[0]["stream_options"]["include_usage"], true);
    assert!(bodies[1].get("stream").is_none(), "{}", bodies[1]);
    assert_eq!(bodies[2]["stream"], true);
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
    assert_canary_absent(&seen, &rest, dir.path());
}

#[test]
fn a_hook_that_may_change_the_answer_keeps_it_from_streaming() {
    let endpoint = Endpoint::start(vec![answer_reply("Checked whole.")]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.toml"),
        composition(&endpoint.base_url)
            + "\n[entries.audit]\nplugin = \"audit\"\nconfig = { path = \"audit.jsonl\", events = [\"after_model_call\"] }\n",
    )
    .unwrap();
    let server = Server::start(dir.path(), "s.toml", &["--no-watch"]);
    let c = client();
    let url = server.url("/v1/agents/assistant/runs");
    runtime().block_on(async {
        let events = streamed(&c, &url).await;
        assert!(
            events.iter().all(|(name, _)| name != "text_delta"),
            "{events:?}"
        );
        assert_eq!(events.last().unwrap().1["answer"], "Checked whole.");
    });
    // The model was asked for a whole answer.
    assert!(endpoint.bodies()[0].get("stream").is_none());
}
