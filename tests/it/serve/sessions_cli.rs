//! `chassis run --session NAME`: a conversation kept in the store, shared
//! with `chassis serve` — started by either, continued by the other.

use super::*;

/// `chassis run FILE --session NAME --input INPUT --format json` in `dir`.
fn run_turn(dir: &Path, session: &str, input: &str, extra: &[&str]) -> crate::harness::Run {
    let mut args = vec![
        "--format",
        "json",
        "run",
        "serve.toml",
        "--session",
        session,
        "--input",
        input,
    ];
    args.extend_from_slice(extra);
    crate::harness::run_in(dir, &args, &[])
}

#[test]
fn a_session_started_by_serve_continues_on_the_command_line_and_back() {
    let (dir, file) = workspace();
    // A second agent, to show a session keeps to its own.
    let text = std::fs::read_to_string(&file).unwrap()
        + "\n[agents.other]\nprompt = \"Another agent.\"\nmax_steps = 2\n";
    save(&file, &text);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    runtime().block_on(async {
        let (s, _, doc) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "Count: one two three", "session": "chat-9"}),
        )
        .await;
        assert_eq!(s, 200, "{doc}");
        assert_eq!(
            (doc["session"].as_str(), doc["session_turn"].as_u64()),
            (Some("chat-9"), Some(1))
        );
    });
    // While the server holds the lineage, the command line is refused.
    let held = run_turn(dir.path(), "chat-9", "hello", &["--agent", "assistant"]);
    assert_eq!(held.code, 1, "{}", held.stderr);
    assert!(held.stderr.contains("store::served"), "{}", held.stderr);
    let (code, _) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);

    // Turn 2 on the command line: the model is sent turn 1 first.
    let out = run_turn(dir.path(), "chat-9", "hello", &["--agent", "assistant"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (doc["session"].as_str(), doc["session_turn"].as_u64()),
        (Some("chat-9"), Some(2))
    );
    let roles: Vec<&str> = doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ],
        "{doc}"
    );
    assert_eq!(doc["messages"][1]["content"], "Count: one two three");
    assert_eq!(doc["answer"], "Hello! Ask me to `Count: <some words>`.");
    // Text output names the session and the turn.
    let text = crate::harness::run_in(
        dir.path(),
        &[
            "--color",
            "never",
            "run",
            "serve.toml",
            "--agent",
            "assistant",
            "--session",
            "chat-9",
            "--input",
            "hi",
        ],
        &[],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stderr.contains("session          chat-9 (turn 3)"),
        "{}",
        text.stderr
    );

    // A session keeps to its agent; an id must be one.
    let other = run_turn(dir.path(), "chat-9", "hi", &["--agent", "other"]);
    assert_eq!(other.code, 2, "{}", other.stderr);
    assert!(
        other.stderr.contains("run::session-agent"),
        "{}",
        other.stderr
    );
    assert!(
        other.stderr.contains("--agent assistant"),
        "{}",
        other.stderr
    );
    let bad = crate::harness::run_in(
        dir.path(),
        &[
            "run",
            "serve.toml",
            "--agent",
            "assistant",
            "--session",
            "../x",
            "--input",
            "hi",
            "--state",
            "fresh.db",
        ],
        &[],
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("run::bad-session"), "{}", bad.stderr);
    assert!(
        !dir.path().join("fresh.db").exists(),
        "a refused run leaves no store"
    );

    // Back on the server: turn 4 sees all three earlier turns, and the
    // transcript says who answered each.
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    runtime().block_on(async {
        let (s, _, doc) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "last", "session": "chat-9"}),
        )
        .await;
        assert_eq!(s, 200, "{doc}");
        assert_eq!(doc["session_turn"], 4, "{doc}");
        assert_eq!(user_messages(&doc), 4, "{doc}");
        let (_, session) = get(&c, &server.url("/v1/sessions/chat-9")).await;
        let turns = session["turns"].as_array().unwrap();
        assert_eq!(turns.len(), 4, "{session}");
        assert!(
            turns.iter().all(|t| t["generation_id"] == "gen_0001"),
            "{session}"
        );
    });
}

#[test]
fn the_command_line_forgets_a_session_past_the_serve_ttl_as_the_server_does() {
    let (dir, file) = workspace();
    let text = with_serve(
        &std::fs::read_to_string(&file).unwrap(),
        "session_ttl_seconds = 1",
    );
    save(&file, &text);
    let first = run_turn(
        dir.path(),
        "brief",
        "Count: one two",
        &["--agent", "assistant"],
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    let again = run_turn(dir.path(), "brief", "hello", &["--agent", "assistant"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let doc: Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(doc["session_turn"], 2, "within the TTL the session goes on");
    // Past the TTL (whole seconds in the store), the session starts afresh.
    std::thread::sleep(std::time::Duration::from_millis(2_200));
    let later = run_turn(dir.path(), "brief", "hello", &["--agent", "assistant"]);
    assert_eq!(later.code, 0, "{}", later.stderr);
    let doc: Value = serde_json::from_str(&later.stdout).unwrap();
    assert_eq!(doc["session_turn"], 1, "{doc}");
    assert_eq!(user_messages(&doc), 1, "{doc}");
}

#[test]
fn of_two_turns_at_once_the_one_not_saved_exits_3_with_its_document_and_is_recorded_failed() {
    let (dir, file) = workspace();
    let text = with_slow_turn(
        &std::fs::read_to_string(&file).unwrap(),
        "slow answer",
        1500,
    );
    save(&file, &text);
    let agent = ["--agent", "assistant"];
    let warm = run_turn(dir.path(), "both", "hello", &agent);
    assert_eq!(warm.code, 0, "{}", warm.stderr);
    // Two slow turns of one session at once: both begin from turn 1.
    let first = {
        let dir = dir.path().to_path_buf();
        std::thread::spawn(move || run_turn(&dir, "both", "slow", &["--agent", "assistant"]))
    };
    std::thread::sleep(Duration::from_millis(400));
    let second = run_turn(dir.path(), "both", "slow", &agent);
    let first = first.join().unwrap();
    let (saved, lost) = if first.code == 0 {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    // The other ran, so it is no unusable input: a failure, with the run's
    // document on stdout and the reason on stderr.
    assert_eq!(lost.code, 3, "{}", lost.stderr);
    assert!(
        lost.stderr.contains("store::session-moved-on"),
        "{}",
        lost.stderr
    );
    let doc: Value = serde_json::from_str(&lost.stdout).expect(&lost.stderr);
    assert_eq!(doc["answer"], "slow answer", "{doc}");
    assert_eq!(
        (&doc["session"], &doc["session_saved"], &doc["session_turn"]),
        (&json!("both"), &json!(false), &Value::Null),
        "{doc}"
    );
    let kept: Value = serde_json::from_str(&saved.stdout).unwrap();
    assert_eq!(
        (&kept["session_saved"], &kept["session_turn"]),
        (&json!(true), &json!(2)),
        "{kept}"
    );
    // The store says so: the turn not saved is `failed`, never `succeeded`.
    let runs = crate::harness::run_in(dir.path(), &["--format", "json", "runs", "list"], &[]);
    assert_eq!(runs.code, 0, "{}", runs.stderr);
    let runs: Value = serde_json::from_str(&runs.stdout).unwrap();
    let status = |id: &Value| {
        runs["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| &r["id"] == id)
            .map(|r| r["status"].clone())
    };
    assert_eq!(status(&doc["run_id"]), Some(json!("failed")), "{runs}");
    assert_eq!(status(&kept["run_id"]), Some(json!("succeeded")), "{runs}");
}

/// How many user messages a run document's transcript holds.
fn user_messages(doc: &Value) -> usize {
    doc["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "user").count())
}
