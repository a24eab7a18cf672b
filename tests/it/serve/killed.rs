//! A server killed with SIGKILL leaves a consistent store: the runs it had
//! in flight were recorded `running` when they started, and the next
//! server of the lineage marks them `interrupted` — at once, since the
//! killed server's pid is gone from this host.

use super::*;

#[test]
fn runs_in_flight_at_a_sigkill_are_marked_interrupted_by_the_next_server() {
    let (dir, file) = workspace();
    let text = with_slow_turn(&std::fs::read_to_string(&file).unwrap(), "late", 30_000);
    save(&file, &text);
    let mut server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let url = server.url("/v1/agents/assistant/runs");
    let rt = runtime();
    // A finished run, then one still running when the server dies.
    rt.block_on(async {
        let (s, _, doc) = post(&c, &url, &json!({"input": "hello"})).await;
        assert_eq!(s, 200, "{doc}");
    });
    // (A client of its own: a pooled connection belongs to its runtime.)
    let slow = {
        let url = url.clone();
        std::thread::spawn(move || {
            runtime().block_on(async move {
                client()
                    .post(&url)
                    .json(&json!({"input": "slow"}))
                    .send()
                    .await
                    .is_err()
            })
        })
    };
    // Its `running` record is in the store while it runs.
    let running = until_running(dir.path());
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert!(slow.join().unwrap(), "the client saw its connection cut");
    drop(server);

    // The next server starts at once (the holder's pid is gone) and marks
    // the run interrupted; the finished one is left as it was.
    let started = std::time::Instant::now();
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "waited for the stale heartbeat"
    );
    let runs = stored_runs(dir.path());
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0].1, "succeeded", "{runs:?}");
    assert_eq!(runs[1].0, running);
    assert_eq!(runs[1].1, "interrupted", "{runs:?}");
    assert!(
        runs[1].2.is_some(),
        "an interrupted run has an end: {runs:?}"
    );
    rt.block_on(async {
        let (s, run) = get(&c, &server.url(&format!("/v1/runs/{running}"))).await;
        assert_eq!(s, 200, "{run}");
        assert_eq!(run["status"], "interrupted", "{run}");
        // A run of this server is recorded as before.
        let (s, _, doc) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "hello"}),
        )
        .await;
        assert_eq!(s, 200, "{doc}");
    });
    let (code, _) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
    let runs = stored_runs(dir.path());
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(runs[2].1, "succeeded", "{runs:?}");
    assert_eq!(
        runs[1].1, "interrupted",
        "a clean stop leaves it as it was: {runs:?}"
    );
}
