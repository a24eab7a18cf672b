//! `chassis serve` over real HTTP on loopback: the release-shaped binary in
//! its own process, a reqwest client in this one.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::root;

mod approvals;
mod budget_caps;
mod json_stderr;
mod killed;
mod model_text;
mod no_echo;
mod process_plugins;
mod readme;
mod request_tools;
mod rewatch;
mod serve_settings;
mod sessions_cli;
mod shutdown;
mod soak;
mod stream_sessions;
mod streaming;

const CANARY: &str = "sk-canary-serve-4d8e19b7";
const TOKEN: &str = "tok-serve-3b7c2a9e41";

/// A running `chassis serve`; killed when dropped.
struct Server {
    child: Child,
    base: String,
    /// Its stderr up to and including the `listening` line.
    started: Vec<String>,
    stderr: mpsc::Receiver<String>,
}

impl Server {
    /// Start `chassis serve FILE --listen 127.0.0.1:0 EXTRA…` in `dir`; the
    /// address comes from its `listening on` line (under `--format json`,
    /// its `{"type": "listening", "address": …}` line).
    fn start(dir: &Path, file: &str, extra: &[&str]) -> Server {
        Self::start_with_env(dir, file, extra, &[])
    }

    /// [`Self::start`] with the variables `env` set too.
    fn start_with_env(dir: &Path, file: &str, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = command(dir, file, extra)
            .envs(env.iter().copied())
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chassis serve starts");
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut seen = Vec::new();
        let base = loop {
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    let json = serde_json::from_str::<Value>(&line).unwrap_or_default();
                    let address = match line.split("listening on ").nth(1) {
                        Some(rest) => rest.split_whitespace().next().map(str::to_owned),
                        None if json["type"] == "listening" => {
                            json["address"].as_str().map(str::to_owned)
                        }
                        None => None,
                    };
                    seen.push(line);
                    if let Some(address) = address {
                        break address;
                    }
                }
                Err(_) => panic!("no `listening on` line; stderr: {seen:?}"),
            }
        };
        Server {
            child,
            base,
            started: seen,
            stderr: rx,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Send `signal` and wait for the exit code and the rest of stderr.
    fn stop(mut self, signal: nix::sys::signal::Signal) -> (i32, String) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        nix::sys::signal::kill(pid, signal).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code().unwrap_or(-1);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not stop"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // The reader thread ends when the pipe closes: read to the end.
        let rest: Vec<String> = self.stderr.iter().collect();
        (code, rest.join("\n"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn command(dir: &Path, file: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chassis"));
    cmd.args(["--color", "never", "serve", file])
        .args(extra)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("LANG", "C.UTF-8")
        .env("SERVE_CANARY", CANARY)
        .env("SERVE_TOKEN", TOKEN);
    cmd
}

/// A folder with `examples/serve.toml` and the tools it includes.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for f in ["serve.toml", "quickstart-tools.toml"] {
        std::fs::copy(root().join("examples").join(f), dir.path().join(f)).unwrap();
    }
    let file = dir.path().join("serve.toml");
    (dir, file)
}

/// The include line of `examples/serve.toml`, where `[serve]` goes.
const INCLUDE: &str = "include = [\"quickstart-tools.toml\"]";

/// `text` with a `[serve]` table of `body` right after its include (line 12).
fn with_serve(text: &str, body: &str) -> String {
    text.replace(INCLUDE, &format!("{INCLUDE}\n[serve]\n{body}"))
}

/// `text` with a scripted turn answering the input `slow` with `answer`
/// after `delay_ms`.
fn with_slow_turn(text: &str, answer: &str, delay_ms: u64) -> String {
    text.replace(
        "# Any other input.",
        &format!(
            "[[entries.model.config.turns]]\nwhen = {{ input = \"slow\" }}\ntext = \"{answer}\"\ndelay_ms = {delay_ms}\n\n# Any other input."
        ),
    )
}

/// Save `text` as an editor does: write a temporary file, rename it over.
fn save(file: &Path, text: &str) {
    let tmp = file.with_extension("toml.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, file).unwrap();
}

/// Make the composition at `file` resolve the canary: an entry whose
/// configuration references the secret `SERVE_CANARY`.
fn with_canary_secret(file: &Path) {
    let vault = format!(
        "{}\n[plugins.vault]\nversion = \"1.0.0\"\n[entries.vault]\nconfig = {{ token = {{ secret = \"SERVE_CANARY\" }} }}\n",
        std::fs::read_to_string(file).unwrap()
    );
    save(file, &vault);
}

/// Give the composition at `file` a slow turn (input `slow`, answered
/// after `delay_ms`) and a second agent, `other`: what the session tests
/// need for a busy session and another agent's.
fn with_slow_turn_and_another_agent(file: &Path, delay_ms: u64) {
    let text = with_slow_turn(
        &std::fs::read_to_string(file).unwrap(),
        "slow answer",
        delay_ms,
    ) + "\n[agents.other]\nprompt = \"Another agent.\"\n";
    save(file, &text);
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn post(c: &reqwest::Client, url: &str, body: &Value) -> (u16, String, Value) {
    let r = c.post(url).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = r.text().await.unwrap();
    (
        status,
        ct,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn get(c: &reqwest::Client, url: &str) -> (u16, Value) {
    let r = c.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The events of a Server-Sent Events body, as (name, data).
fn sse_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut name = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            Some((name?, serde_json::from_str(&data).ok()?))
        })
        .collect()
}

/// A streamed run read event by event, as a client watching it does.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    /// The events of `response` (a streamed run's).
    fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event, as (name, data).
    async fn next(&mut self) -> Option<(String, Value)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = sse_events(&block).into_iter().next() {
                    return Some(event);
                }
                continue;
            }
            let chunk = self.response.chunk().await.unwrap()?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Events up to and including the first named `name`.
    async fn until(&mut self, name: &str) -> Vec<(String, Value)> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            let last = event.0 == name;
            seen.push(event);
            if last {
                return seen;
            }
        }
        panic!("the stream ended before `{name}`: {seen:?}");
    }
}

#[test]
fn serves_runs_plain_streamed_and_concurrent_with_problem_documents() {
    let (dir, _) = workspace();
    let server = Server::start(dir.path(), "serve.toml", &[]);
    let c = client();
    runtime().block_on(async {
        let (status, health) = get(&c, &server.url("/healthz")).await;
        assert_eq!(
            (status, health["generation_id"].as_str()),
            (200, Some("gen_0001"))
        );
        assert_eq!(health["format_version"], 1, "{health}");

        // The same document `chassis run --format json` prints; every run
        // starts at the script's first turn (a served scripted model
        // answers many runs).
        let runs_url = server.url("/v1/agents/assistant/runs");
        for _ in 0..2 {
            let (status, ct, doc) =
                post(&c, &runs_url, &json!({"input": "Count: one two three"})).await;
            assert_eq!(status, 200, "{doc}");
            assert!(ct.starts_with("application/json"), "{ct}");
            assert_eq!(doc["format_version"], 1);
            assert_eq!(doc["answer"], "It has 3 words.");
            assert_eq!(doc["generation_id"], "gen_0001");
            assert_eq!(doc["tool_calls"][0]["name"], "word_count");
            assert_eq!(doc["tool_calls"][0]["status"], "ok");
        }
        // 24 runs at once, two inputs: each gets its own input's answer.
        let mut tasks = Vec::new();
        for i in 0..24 {
            let c = c.clone();
            let url = runs_url.clone();
            tasks.push(tokio::spawn(async move {
                let input = if i % 2 == 0 {
                    "Count: one two three"
                } else {
                    "hello"
                };
                let (status, _, doc) = post(&c, &url, &json!({ "input": input })).await;
                (
                    i,
                    status,
                    doc["answer"].as_str().unwrap_or_default().to_owned(),
                )
            }));
        }
        for t in tasks {
            let (i, status, answer) = t.await.unwrap();
            assert_eq!(status, 200);
            let expected = if i % 2 == 0 {
                "It has 3 words."
            } else {
                "Hello! Ask me to `Count: <some words>`."
            };
            assert_eq!(answer, expected, "run {i}");
        }

        // Streamed: run_started (generation, snapshot digest), each step,
        // then the result document.
        let r = c
            .post(&runs_url)
            .json(&json!({"input": "Count: a b c", "stream": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let events = sse_events(&r.text().await.unwrap());
        let mut names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        // The answer's text as it was generated, in one piece or more (the
        // streaming redactor holds a trailing word until the next piece).
        let text: String = events
            .iter()
            .filter(|(n, _)| n == "text_delta")
            .map(|(_, d)| d["text"].as_str().unwrap())
            .collect();
        assert_eq!(text, "It has 3 words.");
        names.dedup();
        assert_eq!(
            names,
            [
                "run_started",
                "model_call_started",
                "model_call_finished",
                "tool_call_started",
                "tool_call_finished",
                "model_call_started",
                "text_delta",
                "model_call_finished",
                "run_finished",
                "result"
            ]
        );
        let started = &events[0].1;
        let result = &events.last().unwrap().1;
        assert_eq!(started["generation_id"], "gen_0001");
        assert_eq!(started["snapshot_digest"], result["snapshot_digest"]);
        assert_eq!(result["answer"], "It has 3 words.");
        // `Accept: text/event-stream` streams too.
        let r = c
            .post(&runs_url)
            .header("accept", "text/event-stream")
            .json(&json!({"input": "hi"}))
            .send()
            .await
            .unwrap();
        let events = sse_events(&r.text().await.unwrap());
        assert_eq!(events.last().unwrap().0, "result");

        // Runs by id and by page.
        let run_id = result["run_id"].as_str().unwrap().to_owned();
        let (status, run) = get(&c, &server.url(&format!("/v1/runs/{run_id}"))).await;
        assert_eq!(status, 200);
        assert_eq!(run["status"], "succeeded");
        assert_eq!(run["result"]["answer"], "It has 3 words.");
        let (_, page) = get(&c, &server.url("/v1/runs?limit=2")).await;
        assert_eq!(page["runs"].as_array().unwrap().len(), 2);
        let next = page["next"].as_str().unwrap().to_owned();
        let (_, page2) = get(&c, &server.url(&format!("/v1/runs?limit=2&after={next}"))).await;
        assert_ne!(page2["runs"][0]["run_id"], page["runs"][0]["run_id"]);
        assert_ne!(page2["runs"][0]["run_id"], page["runs"][1]["run_id"]);

        // Explain: the documents `chassis explain … --format json` prints.
        for (path, args) in [
            (
                "/v1/explain/requirement?consumer=/agents/assistant&capability=model",
                vec![
                    "explain",
                    "requirement",
                    "/agents/assistant",
                    "model",
                    "serve.toml",
                ],
            ),
            (
                "/v1/explain/scope?path=/agents/assistant",
                vec!["explain", "scope", "/agents/assistant", "serve.toml"],
            ),
            (
                "/v1/explain/budgets?agent=assistant",
                vec!["explain", "budgets", "serve.toml", "--agent", "assistant"],
            ),
        ] {
            let (status, served) = get(&c, &server.url(path)).await;
            assert_eq!(status, 200, "{path}: {served}");
            let mut all = vec!["--format", "json"];
            all.extend(args);
            let cli = crate::harness::run_in(dir.path(), &all, &[]);
            assert_eq!(cli.code, 0, "{}", cli.stderr);
            let printed: Value = serde_json::from_str(&cli.stdout).unwrap();
            assert_eq!(served, printed, "{path}");
        }
        let (status, problem) = get(
            &c,
            &server.url("/v1/explain/requirement?consumer=nobody&capability=model"),
        )
        .await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (400, Some("serve::bad-request")),
            "{problem}"
        );
        let (status, _) = get(&c, &server.url("/v1/explain/scope")).await;
        assert_eq!(status, 400);

        // Metrics: Prometheus text, labels bounded by the composition.
        let r = c.get(server.url("/metrics")).send().await.unwrap();
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/plain; version=0.0.4")
        );
        let text = r.text().await.unwrap();
        for line in [
            "chassis_runs_total{agent=\"assistant\",status=\"succeeded\"} 28",
            "chassis_tool_calls_total{tool=\"word_count\",outcome=\"ok\"} 15",
            "chassis_tool_call_duration_seconds_count{tool=\"word_count\"} 15",
            "chassis_model_call_duration_seconds_bucket{model=\"serve-script\",le=\"+Inf\"} 43",
            "chassis_run_duration_seconds_count{agent=\"assistant\"} 28",
            "chassis_generations_live 1",
            "chassis_generation_leases 0",
            "# TYPE chassis_run_duration_seconds histogram",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from:\n{text}"
            );
        }
        assert!(
            text.contains(
                "chassis_tokens_total{agent=\"assistant\",model=\"serve-script\",kind=\"input\"}"
            ),
            "{text}"
        );
        let has_run_id = text.match_indices("run_").any(|(i, _)| {
            text[i + 4..]
                .chars()
                .take(12)
                .filter(char::is_ascii_hexdigit)
                .count()
                == 12
        });
        assert!(!has_run_id, "a run id in a label:\n{text}");

        // Problems: JSON documents with a stable code.
        for (method, path, body, status, code) in [
            (
                "POST",
                "/v1/agents/nobody/runs",
                json!({"input": "x"}),
                404,
                "serve::unknown-agent",
            ),
            (
                "POST",
                "/v1/agents/assistant/runs",
                json!({"inptu": "x"}),
                400,
                "serve::bad-request",
            ),
            (
                "POST",
                "/v1/agents/assistant/runs",
                json!({"input": "x", "request_tools": "version = 1"}),
                403,
                "serve::request-tools-disabled",
            ),
            (
                "POST",
                "/v1/agents/assistant/runs",
                json!({"input": "x", "session": "not a session id"}),
                400,
                "serve::bad-session",
            ),
            (
                "GET",
                "/v1/nothing-here",
                Value::Null,
                404,
                "serve::not-found",
            ),
            (
                "DELETE",
                "/v1/status",
                Value::Null,
                405,
                "serve::method-not-allowed",
            ),
            (
                "GET",
                "/v1/runs/run_000000000000",
                Value::Null,
                404,
                "serve::unknown-run",
            ),
            (
                "GET",
                "/v1/runs?limit=lots",
                Value::Null,
                400,
                "serve::bad-request",
            ),
            (
                "GET",
                "/v1/generations/gen_0099",
                Value::Null,
                404,
                "serve::unknown-generation",
            ),
        ] {
            let req = c.request(method.parse().unwrap(), server.url(path));
            let req = if body.is_null() { req } else { req.json(&body) };
            let r = req.send().await.unwrap();
            assert_eq!(r.status().as_u16(), status, "{method} {path}");
            assert_eq!(
                r.headers()["content-type"].to_str().unwrap(),
                "application/problem+json",
                "{method} {path}"
            );
            let doc: Value = r.json().await.unwrap();
            assert_eq!(doc["code"], code, "{method} {path}: {doc}");
            assert_eq!(doc["status"], status);
        }
        // Not JSON at all, and a body over the limit.
        let r = c.post(&runs_url).body("{nope").send().await.unwrap();
        assert_eq!(r.status().as_u16(), 400);
        let r = c
            .post(&runs_url)
            .body(format!("{{\"input\": \"{}\"}}", "x".repeat(2 << 20)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 413);
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["code"], "serve::body-too-large");
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains("stopped"), "{rest}");
    // Every run was recorded in the store.
    let listed = crate::harness::run_in(dir.path(), &["--format", "json", "runs", "list"], &[]);
    let runs: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(
        runs["runs"].as_array().unwrap().len(),
        2 + 24 + 2,
        "{}",
        listed.stdout
    );
}

#[test]
fn a_reload_publishes_a_new_generation_while_a_run_finishes_on_the_old_one() {
    let (dir, file) = workspace();
    // The "slow" input waits before its answer: it is in flight across the
    // reload.
    let original = with_slow_turn(
        &std::fs::read_to_string(&file).unwrap(),
        "slow answer",
        2500,
    );
    save(&file, &original);
    // Reloads here are asked for (watching has a test of its own).
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    runtime().block_on(async {
        let runs_url = server.url("/v1/agents/assistant/runs");
        let slow = {
            let c = c.clone();
            let url = runs_url.clone();
            tokio::spawn(async move { post(&c, &url, &json!({"input": "slow"})).await })
        };
        // Wait until the slow run holds its lease.
        let mut leased = false;
        for _ in 0..100 {
            let (_, status) = get(&c, &server.url("/v1/status")).await;
            if status["live_generations"][0]["leases"] == 1 {
                leased = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(leased, "the slow run never leased its generation");

        save(&file, &original.replace("It has 3 words.", "Three words."));
        let (status, _, reload) = post(&c, &server.url("/v1/reload"), &Value::Null).await;
        assert_eq!(status, 200, "{reload}");
        assert_eq!(
            (
                reload["published"].as_bool(),
                reload["generation_id"].as_str()
            ),
            (Some(true), Some("gen_0002"))
        );
        // Two generations live: the old one drains under the slow run.
        let (_, status) = get(&c, &server.url("/v1/status")).await;
        assert_eq!(status["current"]["id"], "gen_0002");
        let live: Vec<(&str, &str)> = status["live_generations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| (g["id"].as_str().unwrap(), g["state"].as_str().unwrap()))
            .collect();
        assert!(live.contains(&("gen_0001", "draining")), "{live:?}");

        let (_, _, new_run) = post(&c, &runs_url, &json!({"input": "Count: x y z"})).await;
        assert_eq!(
            (
                new_run["answer"].as_str(),
                new_run["generation_id"].as_str()
            ),
            (Some("Three words."), Some("gen_0002"))
        );
        let (status, _, old_run) = slow.await.unwrap();
        assert_eq!(status, 200);
        assert_eq!(
            (
                old_run["answer"].as_str(),
                old_run["generation_id"].as_str()
            ),
            (Some("slow answer"), Some("gen_0001"))
        );
        // Its last lease released, the old generation retired.
        let (_, status) = get(&c, &server.url("/v1/status")).await;
        let ids: Vec<&str> = status["live_generations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["gen_0002"]);

        // An unchanged reload publishes nothing.
        let (_, _, reload) = post(&c, &server.url("/v1/reload"), &Value::Null).await;
        assert_eq!(
            (
                reload["published"].as_bool(),
                reload["generation_id"].as_str()
            ),
            (Some(false), Some("gen_0002"))
        );

        // A reload that fails keeps serving, with its findings.
        save(&file, &format!("{original}\n[agents.assistant\n"));
        let r = c.post(server.url("/v1/reload")).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 422);
        let problem: Value = r.json().await.unwrap();
        assert_eq!(problem["code"], "serve::reload-failed");
        let d = &problem["diagnostics"][0];
        assert_eq!(d["severity"], "error", "{problem}");
        assert_eq!(d["labels"][0]["file"], "serve.toml", "{problem}");
        assert!(d["labels"][0]["line"].as_u64().unwrap() > 40, "{problem}");
        let (_, status) = get(&c, &server.url("/v1/status")).await;
        assert_eq!(status["last_reload"]["ok"], false);
        assert_eq!(status["current"]["id"], "gen_0002");
        let (_, _, still) = post(&c, &runs_url, &json!({"input": "hello"})).await;
        assert_eq!(still["generation_id"], "gen_0002");

        // The store's generations, as `generations list --format json`.
        let (_, gens) = get(&c, &server.url("/v1/generations")).await;
        let ids: Vec<&str> = gens["generations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["gen_0001", "gen_0002"]);
        let (status, one) = get(&c, &server.url("/v1/generations/gen_0001")).await;
        assert_eq!(status, 200);
        assert!(one["snapshot"].is_object());
        // The diff of two stored generations, as `chassis diff generations`
        // prints it; ids only.
        let (status, served) = get(&c, &server.url("/v1/diff?from=gen_0001&to=gen_0002")).await;
        assert_eq!(status, 200, "{served}");
        let cli = crate::harness::run_in(
            dir.path(),
            &[
                "--format",
                "json",
                "diff",
                "generations",
                "gen_0001",
                "gen_0002",
                "--composition",
                "serve.toml",
            ],
            &[],
        );
        assert_eq!(cli.code, 0, "{}", cli.stderr);
        let printed: Value = serde_json::from_str(&cli.stdout).unwrap();
        assert_eq!(served, printed);
        assert_eq!(served["semantic_changed"], true, "{served}");
        // Why a node was rebuilt, as `chassis explain reuse` prints it.
        let (status, served) = get(
            &c,
            &server.url("/v1/explain/reuse?from=gen_0001&to=gen_0002&entry=model"),
        )
        .await;
        assert_eq!(status, 200, "{served}");
        let cli = crate::harness::run_in(
            dir.path(),
            &[
                "--format",
                "json",
                "explain",
                "reuse",
                "gen_0001",
                "gen_0002",
                "model",
                "--composition",
                "serve.toml",
            ],
            &[],
        );
        assert_eq!(cli.code, 0, "{}", cli.stderr);
        assert_eq!(served, serde_json::from_str::<Value>(&cli.stdout).unwrap());
        assert_eq!(served["kind"], "rebuilt", "{served}");
        assert_eq!(served["identity"]["config"], "changed", "{served}");
        for (query, status, code) in [
            (
                "from=gen_0001&to=gen_0002&entry=nobody",
                404,
                "serve::unknown-node",
            ),
            (
                "from=gen_0001&to=gen_0042&entry=model",
                404,
                "serve::unknown-generation",
            ),
            (
                "from=serve.toml&to=gen_0002&entry=model",
                400,
                "serve::bad-request",
            ),
            ("from=gen_0001&to=gen_0002", 400, "serve::bad-request"),
        ] {
            let (s, problem) = get(&c, &server.url(&format!("/v1/explain/reuse?{query}"))).await;
            assert_eq!(
                (s, problem["code"].as_str()),
                (status, Some(code)),
                "{query}: {problem}"
            );
        }
        let (status, problem) = get(&c, &server.url("/v1/diff?from=serve.toml&to=gen_0002")).await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (400, Some("serve::bad-request")),
            "{problem}"
        );
        let (status, problem) = get(&c, &server.url("/v1/diff?from=gen_0001&to=gen_0042")).await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (404, Some("serve::unknown-generation")),
            "{problem}"
        );
        let metrics = c
            .get(server.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for line in [
            "chassis_reloads_total{outcome=\"published\"} 1",
            "chassis_reloads_total{outcome=\"unchanged\"} 1",
            "chassis_reloads_total{outcome=\"failed\"} 1",
        ] {
            assert!(
                metrics.lines().any(|l| l == line),
                "{line} missing from:\n{metrics}"
            );
        }
    });
    // SIGHUP reloads too: fix the file, hang up, and the fix is served.
    save(
        &file,
        &original.replace("It has 3 words.", "Three, after a hangup."),
    );
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    runtime().block_on(async {
        let mut current = String::new();
        for _ in 0..200 {
            let (_, status) = get(&c, &server.url("/v1/status")).await;
            current = status["current"]["id"].as_str().unwrap().to_owned();
            if current == "gen_0003" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(current, "gen_0003");
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGINT);
    assert_eq!(code, 130, "{rest}");
}

#[test]
fn sigterm_lets_a_run_in_flight_finish_and_it_is_recorded() {
    let (dir, file) = workspace();
    let text = with_slow_turn(&std::fs::read_to_string(&file).unwrap(), "slow answer", 800);
    save(&file, &text);
    let server = Server::start(dir.path(), "serve.toml", &[]);
    let c = client();
    let url = server.url("/v1/agents/assistant/runs");
    let base = server.base.clone();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    let answer = runtime().block_on(async {
        let slow = tokio::spawn({
            let c = c.clone();
            async move { post(&c, &url, &json!({"input": "slow"})).await }
        });
        wait_for_lease(&c, &base).await;
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let (status, _, doc) = slow.await.unwrap();
        (status, doc["answer"].clone())
    });
    assert_eq!(answer, (200, json!("slow answer")));
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
    let listed = crate::harness::run_in(dir.path(), &["--format", "json", "runs", "list"], &[]);
    assert!(listed.stdout.contains("\"succeeded\""), "{}", listed.stdout);
}

#[test]
fn what_cannot_be_served_exits_before_the_port_is_bound() {
    let (dir, file) = workspace();
    let bad = |args: &[&str]| {
        let out = command(dir.path(), "serve.toml", &[])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Only loopback without authentication.
    let (code, err) = bad(&["--listen", "0.0.0.0:7300"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a loopback address"), "{err}");
    assert!(!err.contains("listening"), "{err}");
    let (code, err) = bad(&["--listen", "here"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not an address"), "{err}");
    // A composition that does not load: exit 2, its diagnostics, no port,
    // no store left behind.
    save(&file, "version = 1\n[entries.model]\nplugin = \"nope\"\n");
    let (code, err) = bad(&["--listen", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown plugin"), "{err}");
    assert!(!err.contains("listening"), "{err}");
    assert!(!dir.path().join(".chassis").exists());
}

#[test]
fn the_canary_secret_leaves_through_no_endpoint_event_or_log() {
    let (dir, file) = workspace();
    // The canary is a resolved secret (so the redactor knows it), which the
    // model then repeats and a tool prints.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace(
            "text = \"It has 3 words.\"",
            &format!("text = \"It has 3 words; the key is {CANARY}.\""),
        )
        .replace(
            "tool_calls = [{ name = \"word_count\", args = { text = \"one two three\" } }]",
            "tool_calls = [{ name = \"word_count\", args = { text = \"one two three\" } }, { name = \"leak\" }]",
        )
        .replace("tools = [\"word_count\"]", "tools = [\"word_count\", \"leak\"]")
        .replace("tool_calls = 2", "tool_calls = 4")
        .replace(
            "[agents.assistant]",
            "[plugins.vault]\nversion = \"1.0.0\"\n\n[entries.vault]\nconfig = { token = { secret = \"SERVE_CANARY\" } }\n\n[entries.leaky]\nplugin = \"command\"\nconfig.env = [\"SERVE_CANARY\"]\n[[entries.leaky.config.tools]]\nname = \"leak\"\ndescription = \"Prints the token.\"\nargs = { type = \"object\", properties = {} }\nargv = [\"printenv\", \"SERVE_CANARY\"]\ntimeout_seconds = 5\n\n[agents.assistant]",
        );
    save(&file, &text);
    let server = Server::start(dir.path(), "serve.toml", &["--approve", "leak"]);
    let c = client();
    let mut seen = String::new();
    runtime().block_on(async {
        let url = server.url("/v1/agents/assistant/runs");
        let (status, _, doc) = post(
            &c,
            &url,
            &json!({"input": format!("Count: {CANARY}"), "session": "canary-chat"}),
        )
        .await;
        assert_eq!(status, 200, "{doc}");
        seen.push_str(&doc.to_string());
        let (status, session) = get(&c, &server.url("/v1/sessions/canary-chat")).await;
        assert_eq!(status, 200, "{session}");
        assert!(session["messages"].as_array().unwrap().len() > 2);
        seen.push_str(&session.to_string());
        let r = c
            .post(&url)
            .json(&json!({"input": format!("Count: {CANARY}"), "stream": true}))
            .send()
            .await
            .unwrap();
        seen.push_str(&format!("{:?}", r.headers()));
        seen.push_str(&r.text().await.unwrap());
        for path in [
            "/v1/status",
            "/v1/runs",
            "/v1/generations",
            "/v1/generations/gen_0001",
            "/healthz",
        ] {
            let r = c.get(server.url(path)).send().await.unwrap();
            seen.push_str(&format!("{:?}", r.headers()));
            seen.push_str(&r.text().await.unwrap());
        }
        let (_, _, problem) = post(
            &c,
            &server.url(&format!("/v1/agents/{CANARY}/runs")),
            &json!({"input": CANARY}),
        )
        .await;
        seen.push_str(&problem.to_string());
        let (_, status) = get(&c, &server.url(&format!("/v1/runs/{CANARY}"))).await;
        seen.push_str(&status.to_string());
    });
    assert!(seen.contains("It has 3 words; the key is"), "{seen}");
    assert!(
        seen.contains("\"leak\""),
        "the leak tool was called: {seen}"
    );
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
    // Nor into the store (run records, the session's transcript).
    assert_canary_absent(&seen, &rest, dir.path());
}

/// The canary is in nothing a client saw (`seen`), nor on the server's
/// stderr, nor in the bytes of the store in `dir`.
fn assert_canary_absent(seen: &str, stderr: &str, dir: &Path) {
    assert!(
        !seen.contains(CANARY),
        "the canary leaked over HTTP: {seen}"
    );
    assert!(
        !stderr.contains(CANARY),
        "the canary leaked on stderr: {stderr}"
    );
    let stored = std::fs::read(dir.join(".chassis/state.db")).unwrap();
    assert!(
        !stored.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()),
        "the canary is in the store"
    );
}

#[test]
fn tokens_guard_every_route_but_the_excluded_and_never_show() {
    let (dir, file) = workspace();
    let text = with_serve(
        &std::fs::read_to_string(&file).unwrap(),
        "tokens = [{ secret = \"SERVE_TOKEN\" }]\nauth_excluded = [\"/healthz\"]",
    );
    save(&file, &text);
    let server = Server::start(dir.path(), "serve.toml", &[]);
    let c = client();
    let mut seen = String::new();
    runtime().block_on(async {
        let status = |r: &reqwest::Response| r.status().as_u16();
        let r = c.get(server.url("/v1/status")).send().await.unwrap();
        assert_eq!(status(&r), 401);
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        // Only the excluded route exactly: no path trick opens another.
        for tricky in [
            "/healthz/",
            "//healthz",
            "/%68ealthz",
            "/v1//status",
            "/HEALTHZ",
        ] {
            let r = c.get(server.url(tricky)).send().await.unwrap();
            assert_eq!(status(&r), 401, "{tricky}");
        }
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["code"], "serve::unauthorized");
        for wrong in [
            "Bearer tok-serve-3b7c2a9e4",
            "Basic tok-serve-3b7c2a9e41",
            "tok-serve-3b7c2a9e41",
        ] {
            let r = c
                .get(server.url("/v1/status"))
                .header("authorization", wrong)
                .send()
                .await
                .unwrap();
            assert_eq!(status(&r), 401, "{wrong}");
            seen.push_str(&r.text().await.unwrap());
        }
        let r = c
            .post(server.url("/v1/agents/assistant/runs"))
            .json(&json!({"input": format!("Count: {TOKEN}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(status(&r), 401);
        // The excluded route answers anyone; the token opens the rest.
        let r = c.get(server.url("/healthz")).send().await.unwrap();
        assert_eq!(status(&r), 200);
        let r = c.get(server.url("/metrics")).send().await.unwrap();
        assert_eq!(status(&r), 401);
        let bearer = format!("Bearer {TOKEN}");
        let r = c
            .get(server.url("/v1/status"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(status(&r), 200);
        seen.push_str(&r.text().await.unwrap());
        let r = c
            .post(server.url("/v1/agents/assistant/runs"))
            .header("authorization", &bearer)
            .json(&json!({"input": format!("Count: {TOKEN}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(status(&r), 200);
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["answer"], "It has 3 words.");
        seen.push_str(&doc.to_string());
    });
    // The token is a secret: the run's input echoed it, redacted.
    assert!(seen.contains("Count: "), "{seen}");
    assert!(!seen.contains(TOKEN), "the token leaked: {seen}");
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
    assert!(!rest.contains(TOKEN), "{rest}");
}

#[test]
fn tls_serves_https_with_the_given_certificate() {
    let (dir, _) = workspace();
    let tls = root().join("tests/data/tls");
    let cert = tls.join("server.pem").display().to_string();
    let key = tls.join("server.key").display().to_string();
    let server = Server::start(
        dir.path(),
        "serve.toml",
        &["--tls-cert", &cert, "--tls-key", &key],
    );
    assert!(
        server.base.starts_with("https://127.0.0.1:"),
        "{}",
        server.base
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = reqwest::Certificate::from_pem(&std::fs::read(tls.join("ca.pem")).unwrap()).unwrap();
    let c = reqwest::Client::builder()
        .add_root_certificate(ca)
        .build()
        .unwrap();
    let plain = client();
    runtime().block_on(async {
        let r = c.get(server.url("/healthz")).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let r = c
            .post(server.url("/v1/agents/assistant/runs"))
            .json(&json!({"input": "Count: a b c"}))
            .send()
            .await
            .unwrap();
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["answer"], "It has 3 words.");
        // Plain HTTP to the TLS port gets no answer.
        let url = server.url("/healthz").replace("https://", "http://");
        let answered = plain
            .get(url)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        assert!(!answered);
    });
    let (code, _) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
}

#[test]
fn a_public_address_needs_tokens_and_tls_and_a_token_must_be_a_secret() {
    let (dir, file) = workspace();
    let run = |args: &[&str]| {
        let out = command(dir.path(), "serve.toml", args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--listen", "0.0.0.0:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("serve::insecure-bind"), "{err}");
    let (code, err) = run(&["--listen", "0.0.0.0:0", "--allow-insecure-bind"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("serve::needs-tokens"), "{err}");
    let (code, err) = run(&[
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        "nowhere.pem",
        "--tls-key",
        "nowhere.key",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nowhere.pem"), "{err}");
    // A token secret that is not set: exit 2 before the port is bound.
    let original = std::fs::read_to_string(&file).unwrap();
    save(
        &file,
        &with_serve(&original, "tokens = [{ secret = \"NOT_SET_ANYWHERE\" }]"),
    );
    let (code, err) = run(&["--listen", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("serve::token-missing") && !err.contains("listening"),
        "{err}"
    );
    // A literal token is refused by `check`, pointing at it.
    save(
        &file,
        &with_serve(
            &original,
            "tokens = [\"hunter2-literal\"]\nauth_excluded = [\"/v1/runs\"]",
        ),
    );
    let out = crate::harness::run_in(
        dir.path(),
        &["--color", "never", "check", "serve.toml"],
        &[],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("must be a secret reference"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("serve.toml:13"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("cannot be excluded from authentication"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_token_refusal_exits_2_before_a_store_is_created_or_a_generation_recorded() {
    let (dir, file) = workspace();
    let serve = |args: &[&str]| {
        let out = command(dir.path(), "serve.toml", args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let public = ["--listen", "0.0.0.0:0", "--allow-insecure-bind"];
    let local = ["--listen", "127.0.0.1:0"];
    let unset = "tokens = [{ secret = \"NOT_SET_ANYWHERE\" }]";
    let original = std::fs::read_to_string(&file).unwrap();
    // No store yet: none is created.
    let (code, err) = serve(&public);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("serve::needs-tokens"), "{err}");
    assert!(!dir.path().join(".chassis").exists(), "{err}");
    save(&file, &with_serve(&original, unset));
    let (code, err) = serve(&local);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("serve::token-missing"), "{err}");
    assert!(!dir.path().join(".chassis").exists(), "{err}");
    // A store with gen_0001: an edited composition refused for its tokens
    // publishes nothing.
    save(&file, &original);
    let publish = crate::harness::run_in(dir.path(), &["publish", "serve.toml"], &[]);
    assert_eq!(publish.code, 0, "{}", publish.stderr);
    let edited = original.replace("It has 3 words.", "Three words.");
    save(&file, &with_serve(&edited, unset));
    let (code, err) = serve(&local);
    assert_eq!(code, 2, "{err}");
    save(&file, &edited);
    let (code, err) = serve(&public);
    assert_eq!(code, 2, "{err}");
    let listed = crate::harness::run_in(
        dir.path(),
        &["--format", "json", "generations", "list"],
        &[],
    );
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains("gen_0001"), "{}", listed.stdout);
    assert!(!listed.stdout.contains("gen_0002"), "{}", listed.stdout);
}

/// Poll `/v1/status` until `done` holds (at most 10 s).
async fn status_until(
    c: &reqwest::Client,
    server: &Server,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    for _ in 0..500 {
        let (_, status) = get(c, &server.url("/v1/status")).await;
        if done(&status) {
            return status;
        }
        last = status;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("status never matched: {last}");
}

#[test]
fn saving_any_file_the_load_read_reloads_once() {
    let (dir, file) = workspace();
    let server = Server::start(dir.path(), "serve.toml", &[]);
    let c = client();
    let original = std::fs::read_to_string(&file).unwrap();
    runtime().block_on(async {
        // An editor's save: a temporary file renamed over the original.
        save(
            &file,
            &original.replace("It has 3 words.", "Three words, watched."),
        );
        let status = status_until(&c, &server, |s| {
            s["last_reload"]["generation_id"] == "gen_0002"
        })
        .await;
        assert_eq!(status["last_reload"]["published"], true);
        let (_, _, doc) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "Count: a b c"}),
        )
        .await;
        assert_eq!(
            (doc["answer"].as_str(), doc["generation_id"].as_str()),
            (Some("Three words, watched."), Some("gen_0002"))
        );
        // An included file is watched too.
        let tools = dir.path().join("quickstart-tools.toml");
        let text = std::fs::read_to_string(&tools).unwrap();
        save(
            &tools,
            &text.replace("Count the words in a text.", "Count words."),
        );
        status_until(&c, &server, |s| {
            s["last_reload"]["generation_id"] == "gen_0003"
        })
        .await;
        // A file the load never read changes nothing.
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        let (_, status) = get(&c, &server.url("/v1/status")).await;
        assert_eq!(status["current"]["id"], "gen_0003");
        // A broken save keeps serving, with its findings.
        save(&file, &format!("{original}\n[agents.assistant\n"));
        let status = status_until(&c, &server, |s| s["last_reload"]["ok"] == false).await;
        assert_eq!(status["current"]["id"], "gen_0003");
        assert!(
            !status["last_reload"]["diagnostics"]
                .as_array()
                .unwrap()
                .is_empty()
        );
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
    // One reload per save: three saves, three reload lines.
    let reloads = rest.matches("chassis serve: reload").count();
    assert_eq!(reloads, 3, "{rest}");
}

/// `chassis runs list --format json` in `dir`: (id, status, finished_at).
fn stored_runs(dir: &Path) -> Vec<(String, String, Option<String>)> {
    let out = crate::harness::run_in(dir, &["--format", "json", "runs", "list"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
                r["finished_at"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// The id of a run the store in `dir` records `running`, once there is one
/// (a served run is recorded from its start).
fn until_running(dir: &Path) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let runs = stored_runs(dir);
        if let Some(r) = runs.iter().find(|r| r.1 == "running") {
            return r.0.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no running record: {runs:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait until a run holds a lease on the current generation.
async fn wait_for_lease(c: &reqwest::Client, base: &str) {
    for _ in 0..250 {
        let (_, status) = get(c, &format!("{base}/v1/status")).await;
        if status["live_generations"][0]["leases"]
            .as_u64()
            .unwrap_or(0)
            > 0
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no run ever leased a generation");
}

#[test]
fn a_run_past_the_drain_timeout_is_cancelled_and_recorded_as_such() {
    let (dir, file) = workspace();
    let text = with_slow_turn(&std::fs::read_to_string(&file).unwrap(), "too late", 20000);
    save(&file, &text);
    let server = Server::start(dir.path(), "serve.toml", &["--drain-timeout", "1"]);
    let c = client();
    let url = server.url("/v1/agents/assistant/runs");
    let base = server.base.clone();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    let started = std::time::Instant::now();
    let (status, problem) = runtime().block_on(async {
        let slow = tokio::spawn({
            let c = c.clone();
            async move { post(&c, &url, &json!({"input": "slow"})).await }
        });
        wait_for_lease(&c, &base).await;
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let (status, _, problem) = slow.await.unwrap();
        (status, problem)
    });
    assert_eq!(
        (status, problem["code"].as_str()),
        (503, Some("serve::stopping")),
        "{problem}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the drain did not time out"
    );
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
    let listed = crate::harness::run_in(dir.path(), &["--format", "json", "runs", "list"], &[]);
    assert!(listed.stdout.contains("\"cancelled\""), "{}", listed.stdout);
}

#[test]
fn odd_requests_get_problem_documents_and_reload_findings_are_scrubbed() {
    let (dir, file) = workspace();
    // The canary is a secret the served generation resolved.
    with_canary_secret(&file);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    runtime().block_on(async {
        for path in ["/v1/runs/%ff", "/v1/generations/%ff"] {
            let r = c.get(server.url(path)).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 400, "{path}");
            assert_eq!(
                r.headers()["content-type"],
                "application/problem+json",
                "{path}"
            );
        }
        let r = c
            .post(server.url("/v1/agents/%ff/runs"))
            .json(&json!({"input": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        // A page after a run the server does not know: 404, as for the run
        // itself, and the id is not echoed.
        for after in ["run_000000000000", CANARY] {
            let (status, problem) = get(&c, &server.url(&format!("/v1/runs?after={after}"))).await;
            assert_eq!(
                (status, problem["code"].as_str()),
                (404, Some("serve::unknown-run")),
                "{problem}"
            );
            assert_eq!(problem["status"], 404, "{problem}");
            let text = problem.to_string();
            assert!(
                !text.contains(after) && !text.contains("<redacted>"),
                "{text}"
            );
        }
        // A secret's value in a file a reload reads: the findings say where,
        // never the value.
        let original = std::fs::read_to_string(&file).unwrap();
        save(
            &file,
            &format!("{original}\n[serve]\nauth_excluded = [\"{CANARY}\"]\n"),
        );
        let r = c.post(server.url("/v1/reload")).send().await.unwrap();
        let body = r.text().await.unwrap();
        let (_, status) = get(&c, &server.url("/v1/status")).await;
        let all = format!("{body}{status}");
        assert!(
            all.contains("cannot be excluded from authentication"),
            "{all}"
        );
        assert!(!all.contains(CANARY), "{all}");
    });
    let (_, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert!(!rest.contains(CANARY), "{rest}");
}

#[test]
fn a_session_continues_a_conversation_across_turns_reloads_and_restarts() {
    let (dir, file) = workspace();
    with_slow_turn_and_another_agent(&file, 1500);
    let text = std::fs::read_to_string(&file).unwrap();
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let runs = server.url("/v1/agents/assistant/runs");
    runtime().block_on(async {
        let (status, _, first) =
            post(&c, &runs, &json!({"input": "hello", "session": "chat-1"})).await;
        assert_eq!(status, 200, "{first}");
        assert_eq!(first["session"], "chat-1");
        // The next turn runs on the generation current then, and the model
        // sees the whole conversation.
        save(&file, &text.replace("It has 3 words.", "Three words."));
        let (_, _, reload) = post(&c, &server.url("/v1/reload"), &Value::Null).await;
        assert_eq!(reload["generation_id"], "gen_0002");
        let (status, _, second) = post(
            &c,
            &runs,
            &json!({"input": "Count: a b c", "session": "chat-1"}),
        )
        .await;
        assert_eq!(status, 200, "{second}");
        assert_eq!(second["answer"], "Three words.");
        let seen: Vec<(&str, &str)> = second["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap(),
                    m["content"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(seen[1], ("user", "hello"), "{seen:?}");
        assert_eq!(
            seen[2],
            ("assistant", "Hello! Ask me to `Count: <some words>`."),
            "{seen:?}"
        );
        assert_eq!(seen[3], ("user", "Count: a b c"), "{seen:?}");
        // The transcript says which generation answered which turn.
        let (status, session) = get(&c, &server.url("/v1/sessions/chat-1")).await;
        assert_eq!(status, 200, "{session}");
        assert_eq!(session["agent"], "assistant");
        let turns: Vec<(&str, &str)> = session["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["run_id"].as_str().unwrap(),
                    t["generation_id"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            turns,
            [
                (first["run_id"].as_str().unwrap(), "gen_0001"),
                (second["run_id"].as_str().unwrap(), "gen_0002")
            ]
        );
        assert_eq!(
            session["messages"].as_array().unwrap().len(),
            6,
            "{session}"
        );
        // One agent per session; one run at a time.
        let other = server.url("/v1/agents/other/runs");
        let (status, _, problem) =
            post(&c, &other, &json!({"input": "hi", "session": "chat-1"})).await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (409, Some("serve::session-agent")),
            "{problem}"
        );
        let slow = tokio::spawn({
            let (c, runs) = (c.clone(), runs.clone());
            async move { post(&c, &runs, &json!({"input": "slow", "session": "chat-2"})).await }
        });
        wait_for_lease(&c, &server.base).await;
        let (status, _, problem) =
            post(&c, &runs, &json!({"input": "hello", "session": "chat-2"})).await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (409, Some("serve::session-busy")),
            "{problem}"
        );
        let r = c
            .delete(server.url("/v1/sessions/chat-2"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 409);
        let (status, _, _) = slow.await.unwrap();
        assert_eq!(status, 200);
        let r = c
            .delete(server.url("/v1/sessions/chat-2"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 204);
        let (status, problem) = get(&c, &server.url("/v1/sessions/chat-2")).await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (404, Some("serve::unknown-session"))
        );
    });
    let (code, _) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
    // Sessions are in the store: a restarted server continues them.
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    runtime().block_on(async {
        let (status, session) = get(&c, &server.url("/v1/sessions/chat-1")).await;
        assert_eq!(status, 200);
        assert_eq!(session["turns"].as_array().unwrap().len(), 2);
        let (_, _, third) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "hello", "session": "chat-1"}),
        )
        .await;
        assert_eq!(
            third["messages"].as_array().unwrap().len(),
            1 + 6 + 2,
            "{third}"
        );
    });
}

#[test]
fn a_served_lineage_refuses_publish_and_a_second_server_until_released() {
    let (dir, file) = workspace();
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let original = std::fs::read_to_string(&file).unwrap();
    save(&file, &original.replace("It has 3 words.", "Three."));
    let publish = crate::harness::run_in(
        dir.path(),
        &["--color", "never", "publish", "serve.toml"],
        &[],
    );
    assert_eq!(publish.code, 1, "{}", publish.stderr);
    assert!(
        publish.stderr.contains("store::served"),
        "{}",
        publish.stderr
    );
    assert!(
        publish
            .stderr
            .contains(&format!("{}/v1/reload", server.base)),
        "{}",
        publish.stderr
    );
    let run = crate::harness::run_in(
        dir.path(),
        &[
            "--color",
            "never",
            "run",
            "serve.toml",
            "--input",
            "hello",
            "--state",
            "@",
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("store::served"), "{}", run.stderr);
    let second = command(dir.path(), "serve.toml", &["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("store::served"));
    // A run without a store is not a publication: it is not refused.
    let run = crate::harness::run_in(dir.path(), &["run", "serve.toml", "--input", "hello"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (code, _) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0);
    // Stopped, the server let go: the publish goes through.
    let publish = crate::harness::run_in(dir.path(), &["publish", "serve.toml"], &[]);
    assert_eq!(publish.code, 0, "{}", publish.stderr);
}

#[test]
fn a_session_past_its_ttl_is_forgotten() {
    let (dir, file) = workspace();
    let text = with_serve(
        &std::fs::read_to_string(&file).unwrap(),
        "session_ttl_seconds = 1",
    );
    save(&file, &text);
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let runs = server.url("/v1/agents/assistant/runs");
    runtime().block_on(async {
        let (status, _, _) = post(&c, &runs, &json!({"input": "hello", "session": "brief"})).await;
        assert_eq!(status, 200);
        let (status, _) = get(&c, &server.url("/v1/sessions/brief")).await;
        assert_eq!(status, 200);
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let (status, _) = get(&c, &server.url("/v1/sessions/brief")).await;
        assert_eq!(status, 404);
        // The same id starts afresh.
        let (_, _, doc) = post(&c, &runs, &json!({"input": "hello", "session": "brief"})).await;
        assert_eq!(doc["messages"].as_array().unwrap().len(), 3, "{doc}");
    });
    // Not a positive number of seconds: refused by `check`.
    save(
        &file,
        &text.replace("session_ttl_seconds = 1", "session_ttl_seconds = 0"),
    );
    let out = crate::harness::run_in(
        dir.path(),
        &["--color", "never", "check", "serve.toml"],
        &[],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("positive number of seconds"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_damaged_generation_is_a_500_store_damaged_and_a_damaged_head_stops_serve_with_exit_2() {
    use crate::store::{DAMAGE_CANARY, damage_snapshot_record, roots};
    let (dir, file) = workspace();
    let original = std::fs::read_to_string(&file).unwrap();
    let publish = |what: &str| {
        let r = crate::harness::run_in(dir.path(), &["publish", "serve.toml"], &[]);
        assert_eq!(r.code, 0, "{what}: {}", r.transcript());
    };
    publish("gen_0001");
    save(&file, &original.replace("It has 3 words.", "Three words."));
    publish("gen_0002");
    let state = dir.path().join(".chassis/state.db");
    // gen_0001's snapshot no longer hashes to its digests.
    let rows = |conn: &rusqlite::Connection| -> Vec<(i64, String, String)> {
        conn.prepare(
            "SELECT sequence, snapshot_root, nodes_root FROM generations ORDER BY sequence",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let before = {
        let conn = rusqlite::Connection::open(&state).unwrap();
        damage_snapshot_record(&conn, 1);
        rows(&conn)
    };
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    runtime().block_on(async {
        for path in [
            "/v1/generations/gen_0001",
            "/v1/diff?from=gen_0001&to=gen_0002",
            "/v1/explain/reuse?from=gen_0001&to=gen_0002&entry=model",
        ] {
            let r = c.get(server.url(path)).send().await.unwrap();
            let status = r.status().as_u16();
            let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
            let body = r.text().await.unwrap();
            assert_eq!(status, 500, "{path}: {body}");
            assert_eq!(ct, "application/problem+json", "{path}");
            let problem: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(problem["code"], "store::damaged", "{path}: {problem}");
            assert_eq!(problem["status"], 500, "{path}: {problem}");
            let detail = problem["detail"].as_str().unwrap();
            assert!(
                detail.contains("is damaged: the snapshot of gen_0001 (composition `serve.toml`)"),
                "{path}: {problem}"
            );
            assert!(
                problem["help"][0]
                    .as_str()
                    .unwrap()
                    .contains("restore the store from a backup"),
                "{path}: {problem}"
            );
            assert!(!body.contains(DAMAGE_CANARY), "{path}: {body}");
        }
        // The server goes on serving the current generation.
        let (status, one) = get(&c, &server.url("/v1/generations/gen_0002")).await;
        assert_eq!(status, 200, "{one}");
        let (status, _, doc) = post(
            &c,
            &server.url("/v1/agents/assistant/runs"),
            &json!({"input": "hello"}),
        )
        .await;
        assert_eq!(status, 200, "{doc}");
    });
    let (code, stderr) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains(DAMAGE_CANARY), "{stderr}");
    let conn = rusqlite::Connection::open(&state).unwrap();
    assert_eq!(
        rows(&conn),
        before,
        "the generations were left as they were"
    );

    // A damaged current generation: serve reads it before it listens, and
    // stops as every command does (exit 2, `store::damaged`).
    let (_, nodes) = roots(&conn, 2);
    conn.execute("UPDATE chunks SET body = X'00' WHERE hash = ?1", [&nodes])
        .unwrap();
    drop(conn);
    let damaged = std::fs::read(&state).unwrap();
    let out = command(dir.path(), "serve.toml", &["--no-watch"])
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "error[store::damaged]: the store `.chassis/state.db` is damaged: the nodes of gen_0002"
        ),
        "{stderr}"
    );
    assert!(
        std::fs::read(&state).unwrap() == damaged,
        "serve wrote to it"
    );
}
