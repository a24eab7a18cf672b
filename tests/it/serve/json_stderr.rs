//! `chassis serve --format json`: stderr carries only JSON lines, as every
//! command's does — status lines as `note`s, findings and log lines as
//! diagnostics, the `listening` line — from start through runs, reloads
//! (saved, SIGHUP, `POST /v1/reload`, failed) and a drained SIGINT.

use super::*;

/// Read `server`'s stderr into `seen` until a line holds `what`.
fn until(server: &Server, seen: &mut Vec<String>, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if let Ok(line) = server.stderr.recv_timeout(Duration::from_millis(100)) {
            let found = line.contains(what);
            seen.push(line);
            if found {
                return;
            }
        }
    }
    panic!("no stderr line holds {what:?}: {seen:#?}");
}

#[test]
fn under_format_json_every_line_serve_writes_on_stderr_is_json() {
    let (dir, file) = workspace();
    let text = with_slow_turn(
        &std::fs::read_to_string(&file).unwrap(),
        "slow answer",
        3000,
    );
    save(&file, &text);
    // A server killed mid-run, so the next one warns on its log that it
    // marked the run `interrupted`.
    {
        let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
        let url = server.url("/v1/agents/assistant/runs");
        let slow = std::thread::spawn(move || {
            runtime().block_on(async move {
                let _ = client()
                    .post(&url)
                    .json(&json!({"input": "slow"}))
                    .send()
                    .await;
            });
        });
        // Recorded `running` before it dies.
        until_running(dir.path());
        drop(server);
        slow.join().unwrap();
    }
    let server = Server::start(dir.path(), "serve.toml", &["--format", "json", "-v"]);
    let mut seen = server.started.clone();
    let c = client();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    runtime().block_on(async {
        let (s, _, doc) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "Count: a b"}),
        )
        .await;
        assert_eq!(s, 200, "{doc}");
        // A saved change, SIGHUP, POST /v1/reload, a broken save.
        save(&file, &text.replace("It has 3 words.", "Three words."));
        until(&server, &mut seen, "reloaded (published: gen_0002)");
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
        until(&server, &mut seen, "reloaded (no change: gen_0002)");
        let r = c.post(server.url("/v1/reload")).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
        until(&server, &mut seen, "reloaded (no change: gen_0002)");
        save(&file, &format!("{text}\n[agents.assistant\n"));
        until(&server, &mut seen, "serve::reload-failed");
        // A run in flight when SIGINT comes: drained, then stopped.
        let url = server.url("/v1/agents/assistant/runs");
        let slow = tokio::spawn({
            let c = c.clone();
            async move { post(&c, &url, &json!({"input": "slow"})).await }
        });
        wait_for_lease(&c, &server.base).await;
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        let (s, _, doc) = slow.await.unwrap();
        assert_eq!(
            (s, doc["answer"].as_str()),
            (200, Some("slow answer")),
            "{doc}"
        );
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGINT);
    assert_eq!(code, 130, "{rest}");
    seen.extend(rest.lines().map(str::to_owned));
    let lines: Vec<Value> = seen
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| panic!("not a JSON object: {l:?} in {seen:#?}"))
        })
        .collect();
    for line in &lines {
        assert!(
            line["type"] == "listening"
                || (line["type"] == "diagnostic"
                    && matches!(
                        line["severity"].as_str(),
                        Some("error" | "warning" | "note")
                    )
                    && line["message"].is_string()
                    && line["help"].is_array()
                    && line["labels"].is_array()),
            "{line}"
        );
    }
    let has = |what: &dyn Fn(&Value) -> bool| lines.iter().any(what);
    assert!(
        has(&|l| l["type"] == "listening"
            && l["address"]
                .as_str()
                .is_some_and(|a| a.starts_with("http://127.0.0.1:"))),
        "{seen:#?}"
    );
    // Log lines: the killed server's run marked, what -v tells.
    assert!(
        has(&|l| l["severity"] == "warning"
            && l["log"]["level"] == "WARN"
            && l["message"].as_str().unwrap().contains("`interrupted`")),
        "{seen:#?}"
    );
    assert!(has(&|l| l["log"]["level"] == "INFO"), "{seen:#?}");
    // A failed reload's findings point into the file.
    assert!(
        has(&|l| l["code"] == "serve::reload-failed" && l["severity"] == "error"),
        "{seen:#?}"
    );
    assert!(
        has(&|l| l["labels"][0]["file"] == "serve.toml" && l["labels"][0]["line"].is_u64()),
        "{seen:#?}"
    );
    assert!(
        has(&|l| l["severity"] == "note" && l["message"] == "stopped; every plugin unmounted"),
        "{seen:#?}"
    );
}
