//! Approvals over HTTP: a run whose tool call needs a person waits (a
//! `202` to poll, or an `approval_requested` event) until a client answers
//! at `POST /v1/runs/{id}/approvals`, or its deadline refuses the call.

use super::*;

/// `examples/serve.toml` with `[serve] approval_timeout_seconds = secs`.
fn workspace_with_timeout(secs: u64) -> (tempfile::TempDir, PathBuf) {
    let (dir, file) = workspace();
    let text = with_serve(
        &std::fs::read_to_string(&file).unwrap(),
        &format!("approval_timeout_seconds = {secs}"),
    );
    save(&file, &text);
    (dir, file)
}

/// Poll run `id` until it leaves `running`/`awaiting_approval`.
async fn finished(c: &reqwest::Client, server: &Server, id: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, run) = get(c, &server.url(&format!("/v1/runs/{id}"))).await;
        assert_eq!(status, 200, "{run}");
        if !matches!(
            run["status"].as_str(),
            Some("running" | "awaiting_approval")
        ) {
            return run;
        }
        assert!(std::time::Instant::now() < deadline, "{run}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[test]
fn a_run_waits_for_a_clients_approval_and_polls_to_its_answer() {
    let (dir, _) = workspace_with_timeout(60);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let runs = server.url("/v1/agents/assistant/runs");
    runtime().block_on(async {
        // Not streamed: a 202 with the run, what it waits on, where to poll.
        let r = c
            .post(&runs)
            .json(&json!({"input": "Save: hello"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 202);
        let location = r.headers()["location"].to_str().unwrap().to_owned();
        let run: Value = r.json().await.unwrap();
        assert_eq!(run["status"], "awaiting_approval", "{run}");
        let id = run["run_id"].as_str().unwrap().to_owned();
        assert_eq!(location, format!("/v1/runs/{id}"));
        let pending = &run["pending_approvals"][0];
        assert_eq!(pending["tool"], "save_note");
        assert_eq!(
            pending["arguments"]["note"],
            "a note saved through chassis serve"
        );
        assert_eq!(
            pending["permissions"][0],
            "filesystem.write:quickstart-notes.txt"
        );
        assert_eq!(pending["timeout_seconds"], 60);
        let approval = pending["approval_id"].as_str().unwrap().to_owned();
        // Polling shows the same wait; the tool has not run.
        let (_, polled) = get(&c, &server.url(&location)).await;
        assert_eq!(polled["status"], "awaiting_approval");
        assert_eq!(
            polled["pending_approvals"][0]["approval_id"],
            approval.as_str()
        );
        assert!(!dir.path().join("quickstart-notes.txt").exists());

        let answers = server.url(&format!("/v1/runs/{id}/approvals"));
        // Answers that name nothing, or both, or something unknown.
        for (body, status, code) in [
            (json!({"decision": "approve"}), 400, "serve::bad-request"),
            (
                json!({"approval_id": approval, "tool": "save_note", "decision": "approve"}),
                400,
                "serve::bad-request",
            ),
            (
                json!({"approval_id": approval, "decision": "maybe"}),
                400,
                "serve::bad-request",
            ),
            (
                json!({"approval_id": "apr_000000000000", "decision": "approve"}),
                404,
                "serve::unknown-approval",
            ),
        ] {
            let (s, ct, problem) = post(&c, &answers, &body).await;
            assert_eq!(
                (s, problem["code"].as_str()),
                (status, Some(code)),
                "{problem}"
            );
            assert!(ct.starts_with("application/problem+json"), "{ct}");
        }
        let (s, _, problem) = post(
            &c,
            &server.url("/v1/runs/run_000000000000/approvals"),
            &json!({"tool": "save_note", "decision": "approve"}),
        )
        .await;
        assert_eq!(
            (s, problem["code"].as_str()),
            (404, Some("serve::unknown-run"))
        );

        // The answer: the call runs, the run finishes.
        let (s, _, answered) = post(
            &c,
            &answers,
            &json!({"approval_id": approval, "decision": "approve"}),
        )
        .await;
        assert_eq!(s, 200, "{answered}");
        assert_eq!(answered["decided"][0]["approval_id"], approval.as_str());
        assert_eq!(answered["decided"][0]["decision"], "approve");
        assert_eq!(answered["rule"], Value::Null);
        let run = finished(&c, &server, &id).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        assert_eq!(run["pending_approvals"], json!([]));
        assert_eq!(run["result"]["answer"], "Saved.");
        assert_eq!(run["result"]["tool_calls"][0]["status"], "ok");
        let notes = std::fs::read_to_string(dir.path().join("quickstart-notes.txt")).unwrap();
        assert_eq!(notes, "a note saved through chassis serve\n");
        // A finished run waits on nothing.
        let (s, _, problem) = post(
            &c,
            &answers,
            &json!({"tool": "save_note", "decision": "approve"}),
        )
        .await;
        assert_eq!(
            (s, problem["code"].as_str()),
            (409, Some("serve::run-finished"))
        );

        // A run that needs no approval still answers 200 at once.
        let (s, _, doc) = post(&c, &runs, &json!({"input": "Count: one two three"})).await;
        assert_eq!((s, doc["answer"].as_str()), (200, Some("It has 3 words.")));
    });
}

#[test]
fn a_streamed_run_asks_in_an_event_and_a_refusal_reaches_the_model() {
    let (dir, _) = workspace_with_timeout(60);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    runtime().block_on(async {
        let response = c
            .post(server.url("/v1/agents/assistant/runs"))
            .json(&json!({"input": "Save: secretly", "stream": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let mut events = Events::new(response);
        let before = events.until("approval_requested").await;
        assert_eq!(before[0].0, "run_started");
        let asked = &before.last().unwrap().1;
        assert_eq!(asked["tool"], "save_note");
        let id = asked["run_id"].as_str().unwrap().to_owned();
        let (_, polled) = get(&c, &server.url(&format!("/v1/runs/{id}"))).await;
        assert_eq!(polled["status"], "awaiting_approval");

        // Every call of the tool in this run, refused with a reason.
        let (s, _, answered) = post(
            &c,
            &server.url(&format!("/v1/runs/{id}/approvals")),
            &json!({"tool": "save_note", "decision": "deny", "reason": "notes are read-only today"}),
        )
        .await;
        assert_eq!(s, 200, "{answered}");
        assert_eq!(answered["decided"][0]["decision"], "deny");
        assert_eq!(answered["rule"], json!({"tool": "save_note", "decision": "deny"}));

        let rest = events.until("result").await;
        let finished = rest
            .iter()
            .find(|(name, _)| name == "tool_call_finished")
            .expect("the refused call is reported");
        assert_eq!(finished.1["record"]["status"], "refused", "{}", finished.1);
        let result = &rest.last().unwrap().1;
        let call = &result["tool_calls"][0];
        assert_eq!(call["refusal"], "approval_denied", "{result}");
        let error = call["error"].as_str().unwrap();
        assert!(error.contains("notes are read-only today"), "{error}");
        assert!(error.contains("every call of the tool"), "{error}");
        // The model read the refusal: the tool message says so.
        let told = result["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool" && m.to_string().contains("notes are read-only today"));
        assert!(told, "{result}");
        assert!(!dir.path().join("quickstart-notes.txt").exists());
    });
}

#[test]
fn nobody_answering_refuses_the_call_at_the_deadline() {
    let (dir, _) = workspace_with_timeout(1);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    runtime().block_on(async {
        let (s, _, run) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "Save: later"}),
        )
        .await;
        assert_eq!(s, 202, "{run}");
        let id = run["run_id"].as_str().unwrap();
        let run = finished(&c, &server, id).await;
        // The run goes on without the call: the model is told why.
        assert_eq!(run["status"], "succeeded", "{run}");
        let call = &run["result"]["tool_calls"][0];
        assert_eq!(call["refusal"], "approval_denied", "{run}");
        let error = call["error"].as_str().unwrap();
        assert!(error.contains("nobody answered within 1 s"), "{error}");
        assert!(error.contains("--approve save_note"), "{error}");
        assert!(!dir.path().join("quickstart-notes.txt").exists());
    });
    // `--approve` at start still approves without asking.
    let (code, _) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
    let server = Server::start(
        dir.path(),
        "serve.toml",
        &["--no-watch", "--approve", "save_note"],
    );
    runtime().block_on(async {
        let (s, _, doc) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "Save: now"}),
        )
        .await;
        assert_eq!((s, doc["answer"].as_str()), (200, Some("Saved.")), "{doc}");
    });
}

#[test]
fn the_canary_never_leaves_in_a_question_or_a_refusal() {
    let (dir, file) = workspace_with_timeout(60);
    // The canary is a resolved secret; the call's note and a client's
    // refusal reason both carry it.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace(
            "note = \"a note saved through chassis serve\"",
            &format!("note = \"key {CANARY}\""),
        )
        .replace(
            "[agents.assistant]",
            "[plugins.vault]\nversion = \"1.0.0\"\n\n[entries.vault]\nconfig = { token = { secret = \"SERVE_CANARY\" } }\n\n[agents.assistant]",
        );
    save(&file, &text);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let mut seen = String::new();
    runtime().block_on(async {
        let url = server.url("/v1/agents/assistant/runs");
        let (s, _, run) = post(&c, &url, &json!({"input": "Save: it"})).await;
        assert_eq!(s, 202, "{run}");
        seen.push_str(&run.to_string());
        let id = run["run_id"].as_str().unwrap().to_owned();
        let (s, _, answered) = post(
            &c,
            &server.url(&format!("/v1/runs/{id}/approvals")),
            &json!({"tool": "save_note", "decision": "deny", "reason": format!("not with {CANARY}")}),
        )
        .await;
        assert_eq!(s, 200, "{answered}");
        seen.push_str(&answered.to_string());
        let run = finished(&c, &server, &id).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        seen.push_str(&run.to_string());

        let response = c
            .post(&url)
            .json(&json!({"input": "Save: streamed", "stream": true}))
            .send()
            .await
            .unwrap();
        let mut events = Events::new(response);
        let asked = events.until("approval_requested").await;
        let id = asked.last().unwrap().1["run_id"].as_str().unwrap().to_owned();
        let (s, _, _) = post(
            &c,
            &server.url(&format!("/v1/runs/{id}/approvals")),
            &json!({"tool": "save_note", "decision": "deny", "reason": CANARY}),
        )
        .await;
        assert_eq!(s, 200);
        for (name, data) in asked.into_iter().chain(events.until("result").await) {
            seen.push_str(&format!("{name} {data}\n"));
        }
    });
    assert!(seen.contains("awaiting_approval"), "{seen}");
    assert!(seen.contains("approval_requested"), "{seen}");
    assert!(seen.contains("refused by a client"), "{seen}");
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
    assert_canary_absent(&seen, &rest, dir.path());
}

#[test]
fn waiting_for_approval_counts_against_the_runs_wall_clock() {
    let (dir, file) = workspace_with_timeout(60);
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("wall_clock_seconds = 30", "wall_clock_seconds = 1");
    save(&file, &text);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    runtime().block_on(async {
        let started = std::time::Instant::now();
        let (s, _, run) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "Save: in time?"}),
        )
        .await;
        assert_eq!(s, 202, "{run}");
        let run = finished(&c, &server, run["run_id"].as_str().unwrap()).await;
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "waited for the approval deadline"
        );
        assert_eq!(run["status"], "failed", "{run}");
        let stop = &run["result"]["stop"];
        assert_eq!(stop["kind"], "budget_exhausted", "{run}");
        assert_eq!(stop["dimension"], "wall_clock_seconds", "{run}");
    });
}
