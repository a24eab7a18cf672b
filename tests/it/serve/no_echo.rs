//! Problem documents do not echo the ids, names and paths a client sent:
//! one that passed them through the redactor would answer a guess of a
//! secret's value with `<redacted>` and any other guess verbatim — an
//! oracle. A secret and a near miss get the same answer.

use super::*;

/// Not the canary: one character off.
const NEAR_MISS: &str = "sk-canary-serve-4d8e19b8";

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
