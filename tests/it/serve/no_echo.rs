//! Problem documents do not echo the ids, names and paths a client sent:
//! one that passed them through the redactor would answer a guess of a
//! secret's value with `<redacted>` and any other guess verbatim — an
//! oracle. A secret and a near miss get the same answer.

use super::*;

/// Not the canary: one character off.
pub(super) const NEAR_MISS: &str = "sk-canary-serve-4d8e19b8";

#[test]
fn a_secret_and_a_wrong_guess_get_the_same_problem_and_neither_is_echoed() {
    let (dir, file) = workspace();
    // The canary is a secret the served generation resolved.
    with_canary_secret(&file);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let routes = [
        ("GET", "/v1/generations/{}"),
        ("GET", "/v1/explain/budgets?agent={}"),
        (
            "GET",
            "/v1/explain/reuse?from=gen_0001&to=gen_0001&entry={}",
        ),
        (
            "GET",
            "/v1/explain/requirement?consumer={}&capability=model",
        ),
        (
            "GET",
            "/v1/explain/requirement?consumer=assistant&capability={}",
        ),
        ("GET", "/v1/explain/scope?path={}"),
        ("GET", "/v1/explain/scope?path=/{}"),
        ("GET", "/plugins/{}/health"),
        ("GET", "/plugins/vault/{}"),
        ("GET", "/nope/{}"),
        ("DELETE", "/v1/runs/{}"),
    ];
    runtime().block_on(async {
        for (method, route) in routes {
            let mut answers = Vec::new();
            for value in [CANARY, NEAR_MISS] {
                let url = server.url(&route.replace("{}", value));
                let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
                let r = c.request(method, &url).send().await.unwrap();
                let status = r.status().as_u16();
                let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
                let body = r.text().await.unwrap();
                assert!((400..500).contains(&status), "{route}: {status} {body}");
                assert_eq!(ct, "application/problem+json", "{route}: {body}");
                assert!(
                    !body.contains(value) && !body.contains("<redacted>"),
                    "{route} echoed what it was sent: {body}"
                );
                // What a client may learn is the same either way.
                answers.push((status, body.replace(value, "")));
            }
            assert_eq!(answers[0], answers[1], "{route}");
        }
        // Still helpful: what the composition holds.
        let (status, doc) = get(&c, &server.url("/v1/explain/budgets?agent=assistan")).await;
        assert_eq!(status, 400, "{doc}");
        assert!(
            doc["help"]
                .to_string()
                .contains("did you mean `assistant`?"),
            "{doc}"
        );
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
}

/// A body or query that does not parse is refused in chassis's words —
/// the fields or parameters the route takes, the type it expects, where in
/// the body — never serde's, which quote the names and values sent.
#[test]
fn a_body_or_query_that_does_not_parse_quotes_nothing_it_sent() {
    let (dir, file) = workspace();
    with_canary_secret(&file);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let runs = "/v1/agents/assistant/runs";
    let approvals = "/v1/runs/run_000000000000/approvals";
    // (method, path, body): `{}` is where the value sent goes.
    let requests = [
        // A field name the route does not take.
        ("POST", runs, r#"{"input": "x", "{}": 1}"#),
        ("POST", approvals, r#"{"{}": "a", "decision": "approve"}"#),
        // A value of the wrong type.
        ("POST", runs, r#"{"input": "x", "stream": "{}"}"#),
        ("POST", runs, r#"{"input": {"{}": 1}}"#),
        (
            "POST",
            runs,
            r#"{"input": "x", "budget": {"tokens": "{}"}}"#,
        ),
        ("POST", approvals, r#"{"tool": "a", "decision": "{}"}"#),
        // A budget dimension chassis does not know.
        ("POST", runs, r#"{"input": "x", "budget": {"{}": 1}}"#),
        // A query parameter the route does not take, or a bad value.
        ("GET", "/v1/runs?{}=1", ""),
        ("GET", "/v1/runs?limit={}", ""),
        ("GET", "/v1/explain/scope?path=/&{}=1", ""),
        ("GET", "/v1/explain/budgets?{}=assistant", ""),
        (
            "GET",
            "/v1/diff?from=gen_0001&to=gen_0001&include_unchanged={}",
            "",
        ),
    ];
    runtime().block_on(async {
        for (method, path, body) in requests {
            let mut answers = Vec::new();
            for value in [CANARY, NEAR_MISS] {
                let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
                let mut request = c.request(method, server.url(&path.replace("{}", value)));
                if !body.is_empty() {
                    request = request
                        .header("content-type", "application/json")
                        .body(body.replace("{}", value));
                }
                let r = request.send().await.unwrap();
                let status = r.status().as_u16();
                let headers: Vec<String> = r
                    .headers()
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
                    .collect();
                let text = r.text().await.unwrap();
                let all = format!("{headers:?}{text}");
                assert_eq!(status, 400, "{path} {body}: {text}");
                assert!(
                    headers.contains(&"content-type: application/problem+json".to_owned()),
                    "{path} {body}: {headers:?}"
                );
                assert!(
                    !all.contains(value) && !all.contains("<redacted>"),
                    "{path} {body} echoed what it was sent: {all}"
                );
                answers.push(text);
            }
            assert_eq!(answers[0], answers[1], "{path} {body}");
        }
        // Said in what the route expects.
        let (_, _, doc) = post(&c, &server.url(runs), &json!({"input": "x", CANARY: 1})).await;
        let detail = doc["detail"].as_str().unwrap();
        assert!(
            detail.contains("a field this route does not take")
                && detail.contains("`input`, `stream`, `session`, `request_tools`, `budget`")
                && detail.contains("(line 1, column"),
            "{doc}"
        );
        let (_, _, doc) = post(
            &c,
            &server.url(runs),
            &json!({"input": "x", "stream": CANARY}),
        )
        .await;
        assert!(
            doc["detail"]
                .as_str()
                .unwrap()
                .contains("expected a boolean"),
            "{doc}"
        );
        let (_, doc) = get(&c, &server.url(&format!("/v1/runs?{CANARY}=1"))).await;
        assert!(
            doc["detail"].as_str().unwrap().contains("`limit`, `after`"),
            "{doc}"
        );
        let (_, _, doc) = post(
            &c,
            &server.url(runs),
            &json!({"input": "x", "budget": {CANARY: 1}}),
        )
        .await;
        assert_eq!(doc["code"], "serve::bad-budget", "{doc}");
        assert!(
            doc["help"][0].as_str().unwrap().contains("model_calls"),
            "{doc}"
        );
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
}
