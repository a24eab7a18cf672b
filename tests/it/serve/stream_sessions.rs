//! A streamed run's session is checked before the stream opens: a bad,
//! busy or other agent's session is the same problem document (400/409)
//! as for a run that is not streamed, never a 200 stream with an `error`.

use super::*;

#[test]
fn a_streamed_run_with_a_bad_or_busy_session_gets_a_problem_not_a_stream() {
    let (dir, file) = workspace();
    with_slow_turn_and_another_agent(&file, 3000);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let runs = server.url("/v1/agents/assistant/runs");
    runtime().block_on(async {
        let (status, _, _) = post(&c, &runs, &json!({"input": "hello", "session": "owned"})).await;
        assert_eq!(status, 200);
        let slow = tokio::spawn({
            let (c, runs) = (c.clone(), runs.clone());
            async move { post(&c, &runs, &json!({"input": "slow", "session": "busy"})).await }
        });
        wait_for_lease(&c, &server.base).await;
        let other = server.url("/v1/agents/other/runs");
        for (url, session, expected) in [
            (&runs, "bad id!", (400, "serve::bad-session")),
            (&runs, "busy", (409, "serve::session-busy")),
            (&other, "owned", (409, "serve::session-agent")),
        ] {
            // Asked for with `stream`, and with `Accept`.
            let by_body = c
                .post(url)
                .json(&json!({"input": "hi", "session": session, "stream": true}));
            let by_accept = c
                .post(url)
                .header("accept", "text/event-stream")
                .json(&json!({"input": "hi", "session": session}));
            for request in [by_body, by_accept] {
                let r = request.send().await.unwrap();
                let status = r.status().as_u16();
                let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
                let body = r.text().await.unwrap();
                assert_eq!(ct, "application/problem+json", "{session}: {body}");
                let doc: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(
                    (status, doc["code"].as_str().unwrap()),
                    expected,
                    "{session}: {doc}"
                );
            }
        }
        // The busy session's run was not disturbed; a refused request
        // left no claim behind.
        let (status, _, doc) = slow.await.unwrap();
        assert_eq!((status, doc["answer"].as_str()), (200, Some("slow answer")));
        let r = c
            .post(&runs)
            .json(&json!({"input": "hello", "session": "busy", "stream": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let events = Events::new(r).until("result").await;
        assert_eq!(events.last().unwrap().1["session"], "busy", "{events:?}");
    });
}
