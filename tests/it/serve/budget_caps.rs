//! Per-request budget caps: a run request's `budget` tightens the agent's
//! limits, never loosens them.

use super::*;

/// The budget row of `dimension` in a run document.
fn row<'a>(doc: &'a Value, dimension: &str) -> &'a Value {
    doc["budget"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dimension"] == dimension)
        .unwrap_or_else(|| panic!("no {dimension} row: {doc}"))
}

#[test]
fn a_request_budget_only_tightens_the_agents() {
    let (dir, _) = workspace();
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let runs = server.url("/v1/agents/assistant/runs");
    runtime().block_on(async {
        // One model call allowed: the word count's second step is refused.
        let (s, _, doc) = post(
            &c,
            &runs,
            &json!({"input": "Count: one two three", "budget": {"model_calls": 1}}),
        )
        .await;
        assert_eq!(s, 200, "{doc}");
        assert_eq!(doc["stop"]["kind"], "budget_exhausted", "{doc}");
        assert_eq!(doc["stop"]["dimension"], "model_calls", "{doc}");
        assert_eq!(row(&doc, "model_calls")["limit"], 1.0);
        // A looser cap leaves the agent's limit; a new dimension is added.
        let (s, _, doc) = post(
            &c,
            &runs,
            &json!({"input": "Count: one two three", "budget": {"model_calls": 100, "estimated_cost": 0.5}}),
        )
        .await;
        assert_eq!(s, 200, "{doc}");
        assert_eq!(doc["answer"], "It has 3 words.");
        assert_eq!(row(&doc, "model_calls")["limit"], 4.0);
        assert_eq!(row(&doc, "estimated_cost")["limit"], 0.5);
        // What is not a cap is refused before the run starts.
        for budget in [
            json!({"model_call": 1}),
            json!({"model_calls": 1.5}),
            json!({"tokens": -3}),
            json!({"tokens": "many"}),
        ] {
            let (s, ct, problem) = post(&c, &runs, &json!({"input": "hello", "budget": budget})).await;
            assert_eq!(s, 400, "{budget}: {problem}");
            assert!(ct.starts_with("application/problem+json"), "{ct}");
            let code = problem["code"].as_str().unwrap();
            assert!(code == "serve::bad-budget" || code == "serve::bad-request", "{problem}");
        }
        let (_, _, problem) =
            post(&c, &runs, &json!({"input": "hello", "budget": {"model_call": 1}})).await;
        assert_eq!(problem["code"], "serve::bad-budget");
        assert!(problem["help"][0].as_str().unwrap().contains("model_calls"), "{problem}");
        // Nothing was run for the refused requests.
        let (_, listed) = get(&c, &server.url("/v1/runs")).await;
        assert_eq!(listed["runs"].as_array().unwrap().len(), 2, "{listed}");
    });
}
