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

/// A claim on a session's turn as the store of `dir` holds it.
#[derive(Debug)]
struct Claim {
    run_id: String,
    instance: String,
    pid: i64,
    host: String,
    heartbeat: i64,
}

fn store_of(dir: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(dir.join(".chassis/state.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn
}

/// The claim on session `id`'s turn in the store of `dir`, if any.
fn claim(dir: &Path, id: &str) -> Option<Claim> {
    use rusqlite::OptionalExtension as _;
    store_of(dir)
        .query_row(
            "SELECT run_id, instance, pid, host, heartbeat FROM session_claims
             WHERE session_id = ?1",
            [id],
            |r| {
                Ok(Claim {
                    run_id: r.get(0)?,
                    instance: r.get(1)?,
                    pid: r.get(2)?,
                    host: r.get(3)?,
                    heartbeat: r.get(4)?,
                })
            },
        )
        .optional()
        .unwrap()
}

/// The claim on session `id`'s turn, once a run has taken it.
fn until_claimed(dir: &Path, id: &str) -> Claim {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(c) = claim(dir, id) {
            return c;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no run claimed the turn of `{id}`"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until `held`'s heartbeat is beaten (every 5 s while its turn
/// runs), its claim still there.
fn until_beaten(dir: &Path, id: &str, held: &Claim) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = claim(dir, id);
        let now = now
            .as_ref()
            .filter(|c| c.run_id == held.run_id)
            .unwrap_or_else(|| panic!("the claim {held:?} went before a beat: {now:?}"));
        if now.heartbeat > held.heartbeat {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "never beaten");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `chassis run serve.toml --session SESSION --input INPUT --format json`
/// started in `dir`, not waited for.
fn start_turn(dir: &Path, session: &str, input: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_chassis"))
        .args([
            "--format",
            "json",
            "run",
            "serve.toml",
            "--agent",
            "assistant",
            "--session",
            session,
            "--input",
            input,
        ])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A turn that would save a note (`Save: …`, its call approved): what a
/// refused turn must never have done.
const SAVES_A_NOTE: [&str; 2] = ["--approve", "save_note"];

/// The runs the store of `dir` records.
fn recorded_runs(dir: &Path) -> usize {
    stored_runs(dir).len()
}

#[test]
fn a_second_turn_of_a_session_in_another_process_is_refused_before_its_model_runs() {
    let (dir, file) = workspace();
    let text = with_slow_turn(
        &std::fs::read_to_string(&file).unwrap(),
        "slow answer",
        4000,
    );
    save(&file, &text);
    let agent = ["--agent", "assistant"];
    let warm = run_turn(dir.path(), "both", "hello", &agent);
    assert_eq!(warm.code, 0, "{}", warm.stderr);
    assert!(claim(dir.path(), "both").is_none(), "a turn lets go");

    // One process takes a slow turn; while it runs, another process's turn
    // of the session is refused before it calls the model.
    let first = start_turn(dir.path(), "both", "slow");
    let held = until_claimed(dir.path(), "both");
    assert_eq!(held.run_id, held.instance, "{held:?}");
    assert_eq!(held.pid, i64::from(first.id()), "{held:?}");
    let second = run_turn(
        dir.path(),
        "both",
        "Save: a note",
        &[&agent[..], &SAVES_A_NOTE[..]].concat(),
    );
    assert_eq!(second.code, 2, "{}", second.stderr);
    // The JSON error document names the session and the run holding it.
    let error: Value =
        serde_json::from_str(second.stderr.lines().last().unwrap()).expect(&second.stderr);
    assert_eq!(error["code"], "run::session-busy", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("session `both`"), "{message}");
    assert!(message.contains(&held.run_id), "{message}");
    assert!(!error["help"].as_array().unwrap().is_empty(), "{error}");
    assert!(second.stdout.is_empty(), "{}", second.stdout);
    // Nothing of it ran: its tool wrote no note, it is not recorded.
    assert!(!dir.path().join("quickstart-notes.txt").exists());

    let first = first.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(
        (&doc["session_saved"], &doc["session_turn"], &doc["run_id"]),
        (&json!(true), &json!(2), &json!(held.run_id)),
        "{doc}"
    );
    assert!(claim(dir.path(), "both").is_none(), "the turn let go");
    assert_eq!(recorded_runs(dir.path()), 2, "the refused turn left no run");

    // Let go, the session takes its next turn — the one refused, which
    // does save a note when it runs (so the probe above is one).
    let next = run_turn(
        dir.path(),
        "both",
        "Save: a note",
        &[&agent[..], &SAVES_A_NOTE[..]].concat(),
    );
    assert_eq!(next.code, 0, "{}", next.stderr);
    let doc: Value = serde_json::from_str(&next.stdout).unwrap();
    assert_eq!(doc["session_turn"], 3, "{doc}");
    assert!(dir.path().join("quickstart-notes.txt").exists());
}

#[test]
fn an_interrupted_turn_lets_go_and_a_killed_or_stale_ones_is_taken_over() {
    let (dir, file) = workspace();
    let text = with_slow_turn(
        &std::fs::read_to_string(&file).unwrap(),
        "slow answer",
        60_000,
    );
    save(&file, &text);
    let agent = ["--agent", "assistant"];
    let warm = run_turn(dir.path(), "kept", "hello", &agent);
    assert_eq!(warm.code, 0, "{}", warm.stderr);

    // A run interrupted in its turn (Ctrl-C) lets go as it exits.
    let mut interrupted = start_turn(dir.path(), "kept", "slow");
    until_claimed(dir.path(), "kept");
    // Once its model is called (its signal handlers are in place then).
    let mut progress = BufReader::new(interrupted.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    while !seen
        .last()
        .is_some_and(|l: &String| l.contains("model_call_started"))
    {
        seen.push(progress.next().expect("the run calls its model").unwrap());
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(interrupted.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    seen.extend(progress.map_while(Result::ok));
    let status = interrupted.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen:?}");
    assert!(
        claim(dir.path(), "kept").is_none(),
        "the interrupted turn let go"
    );

    // A run killed outright in its turn cannot let go...
    let mut killed = start_turn(dir.path(), "kept", "slow");
    let held = until_claimed(dir.path(), "kept");
    let refused = run_turn(dir.path(), "kept", "hello", &agent);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("run::session-busy"),
        "{}",
        refused.stderr
    );
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(
        claim(dir.path(), "kept").map(|c| c.run_id),
        Some(held.run_id.clone()),
        "a SIGKILL leaves the claim"
    );
    // ...and its turn is taken over at once: its pid is gone from this host.
    let started = std::time::Instant::now();
    let next = run_turn(dir.path(), "kept", "hello", &agent);
    assert_eq!(next.code, 0, "{}", next.stderr);
    assert!(started.elapsed() < Duration::from_secs(15));
    let doc: Value = serde_json::from_str(&next.stdout).unwrap();
    assert_eq!(
        doc["session_turn"], 2,
        "the killed turn added nothing: {doc}"
    );

    // A claim of a process that is there (this one) holds the turn while
    // its heartbeat is fresh, and is taken over once it is 20 s old.
    let put = |heartbeat: i64| {
        store_of(dir.path())
            .execute(
                "INSERT OR REPLACE INTO session_claims
                   (lineage, session_id, run_id, instance, pid, host, claimed_at, heartbeat)
                 SELECT name, 'kept', 'run_0000000000aa', 'run_0000000000aa', ?1, ?2,
                        '2026-01-01T00:00:00Z', ?3 FROM lineages",
                rusqlite::params![i64::from(std::process::id()), held.host, heartbeat],
            )
            .unwrap();
    };
    let now = i64::try_from(chassis::store::unix_now()).unwrap();
    put(now);
    let refused = run_turn(dir.path(), "kept", "hello", &agent);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("run_0000000000aa"),
        "{}",
        refused.stderr
    );
    put(now - 21);
    let next = run_turn(dir.path(), "kept", "hello", &agent);
    assert_eq!(next.code, 0, "{}", next.stderr);
    let doc: Value = serde_json::from_str(&next.stdout).unwrap();
    assert_eq!(doc["session_turn"], 3, "{doc}");
    assert!(claim(dir.path(), "kept").is_none(), "the turn let go");
}

#[test]
fn a_turn_on_the_command_line_makes_a_served_turn_of_the_session_409_and_back() {
    let (dir, file) = workspace();
    let text = with_slow_turn(
        &std::fs::read_to_string(&file).unwrap(),
        "slow answer",
        8000,
    );
    save(&file, &text);
    let agent = ["--agent", "assistant"];
    let warm = run_turn(dir.path(), "mixed", "hello", &agent);
    assert_eq!(warm.code, 0, "{}", warm.stderr);

    // The command line takes a slow turn; a server starts on the lineage
    // meanwhile, and its turn of the session is refused (409) before its
    // model runs, naming the run that holds it.
    let cli = start_turn(dir.path(), "mixed", "slow");
    let held = until_claimed(dir.path(), "mixed");
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let runs = server.url("/v1/agents/assistant/runs");
    runtime().block_on(async {
        let (status, _, problem) = post(
            &c,
            &runs,
            &json!({"input": "Count: a b", "session": "mixed"}),
        )
        .await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (409, Some("serve::session-busy")),
            "{problem}"
        );
        assert!(
            problem["detail"].as_str().unwrap().contains(&held.run_id),
            "{problem}"
        );
        // Streamed alike, and the session cannot be deleted under it.
        let (status, _, problem) = post(
            &c,
            &runs,
            &json!({"input": "Count: a b", "session": "mixed", "stream": true}),
        )
        .await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (409, Some("serve::session-busy")),
            "{problem}"
        );
        let r = c
            .delete(server.url("/v1/sessions/mixed"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 409);
    });
    // The command line beats its claim while its turn runs.
    until_beaten(dir.path(), "mixed", &held);
    assert_eq!(
        recorded_runs(dir.path()),
        1,
        "no served run started: {:?}",
        stored_runs(dir.path())
    );
    let cli = cli.wait_with_output().unwrap();
    assert_eq!(
        cli.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    let doc: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(doc["session_turn"], 2, "{doc}");
    assert!(claim(dir.path(), "mixed").is_none(), "the turn let go");

    // Back: a served turn holds the session in the store, with the
    // server's instance, until it is saved.
    runtime().block_on(async {
        let slow = tokio::spawn({
            let (c, runs) = (c.clone(), runs.clone());
            async move { post(&c, &runs, &json!({"input": "slow", "session": "mixed"})).await }
        });
        let served = tokio::task::spawn_blocking({
            let dir = dir.path().to_path_buf();
            move || until_claimed(&dir, "mixed")
        })
        .await
        .unwrap();
        assert!(served.instance.starts_with("srv_"), "{served:?}");
        assert_ne!(served.run_id, served.instance, "{served:?}");
        // The server beats its runs' claims with its heartbeat.
        tokio::task::spawn_blocking({
            let dir = dir.path().to_path_buf();
            move || until_beaten(&dir, "mixed", &served)
        })
        .await
        .unwrap();
        let served = claim(dir.path(), "mixed").unwrap();
        let (status, _, doc) = slow.await.unwrap();
        assert_eq!(status, 200, "{doc}");
        assert_eq!(
            (&doc["session_turn"], &doc["run_id"]),
            (&json!(3), &json!(served.run_id)),
            "{doc}"
        );
    });
    assert!(
        claim(dir.path(), "mixed").is_none(),
        "the served turn let go"
    );
    let (code, _) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
}

#[test]
fn a_turn_whose_claim_lapsed_is_still_never_lost_it_exits_3_and_is_recorded_failed() {
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
    // Two slow turns of one session at once, both begun from turn 1: the
    // first's claim lapsed (as a stopped process's does) and the second
    // took the turn over.
    let first = start_turn(dir.path(), "both", "slow");
    until_claimed(dir.path(), "both");
    store_of(dir.path())
        .execute("DELETE FROM session_claims", [])
        .unwrap();
    let second = run_turn(dir.path(), "both", "slow", &agent);
    let first = first.wait_with_output().unwrap();
    let first = crate::harness::Run {
        code: first.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&first.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&first.stderr).into_owned(),
    };
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
    assert!(claim(dir.path(), "both").is_none(), "both turns let go");
}

/// How many user messages a run document's transcript holds.
fn user_messages(doc: &Value) -> usize {
    doc["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "user").count())
}
