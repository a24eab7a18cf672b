//! `chassis run` through the binary: exit codes, the result document, the
//! digest it stamps, replay, approvals with and without a terminal, and the
//! store.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::harness::{Run, run_in};

const BASE: &str = r#"version = 1

[plugins.toolbox]
version = "1.0.0"
permissions = ["notes.write"]
[[plugins.toolbox.tools]]
name = "lookup"
description = "Looks a word up."
args = { type = "object", required = ["word"], properties = { word = { type = "string" } } }
result = "a small domesticated feline"
[[plugins.toolbox.tools]]
name = "save_note"
description = "Saves a note."
args = { type = "object", required = ["note"], properties = { note = { type = "string" } } }
result = "saved"

[entries.toolbox]

[policy]
grants = ["notes.write"]
[policy.tools.lookup]
idempotent = true
[policy.tools.save_note]
permissions = ["notes.write"]
approval_required = true
"#;

const ANSWERING: &str = r#"
[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "lookup", args = { word = "cat" } }]
usage = { input_tokens = 30, output_tokens = 5 }
[[entries.model.config.turns]]
tool_calls = [{ name = "save_note", args = { note = "cats" } }]
[[entries.model.config.turns]]
text = "A cat is a small domesticated feline."
usage = { input_tokens = 50, output_tokens = 9 }

[agents.helper]
prompt = "Be brief."
default_input = "What is a cat?"
"#;

struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.toml"), text).unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, args: &[&str]) -> Run {
        let mut all = vec!["--color", "never"];
        all.extend_from_slice(args);
        run_in(self.dir.path(), &all, &[])
    }

    fn json(&self, args: &[&str]) -> (i32, serde_json::Value, String) {
        let mut all = vec!["--format", "json"];
        all.extend_from_slice(args);
        let r = self.run(&all);
        let v =
            serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.transcript()));
        (r.code, v, r.stderr)
    }
}

fn composition(extra: &str) -> String {
    format!("{BASE}{ANSWERING}{extra}")
}

#[test]
fn an_answer_exits_0_with_the_digest_snapshot_agrees_on() {
    let d = Dir::new(&composition(""));
    let (code, doc, stderr) = d.json(&["run", "c.toml", "--approve", "save_note"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["answer"], "A cat is a small domesticated feline.");
    assert_eq!(doc["stop"]["kind"], "answered");
    assert_eq!(doc["steps"], 3);
    assert_eq!(doc["generation_id"], "gen_0001");
    assert_eq!(doc["tool_calls"][1]["name"], "save_note");
    assert_eq!(doc["tool_calls"][1]["status"], "ok");
    assert_eq!(
        doc["composition"]["chassis_version"],
        env!("CARGO_PKG_VERSION")
    );
    assert!(doc["composition"]["plugins"]["scripted"].is_string());
    let tokens = doc["budget"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dimension"] == "tokens")
        .cloned()
        .unwrap();
    assert_eq!(tokens["used"], 94.0);
    let (code, snap, _) = d.json(&["snapshot", "c.toml", "--agent", "helper"]);
    assert_eq!(code, 0);
    assert_eq!(snap["digests"]["digest"], doc["snapshot_digest"]);
    assert_eq!(snap["snapshot"]["agent"], "helper");
    assert_eq!(
        snap["snapshot"]["prompt_hash"],
        doc["composition"]["prompt_hash"]
    );
    // The text form: the answer alone on stdout, the summary on stderr.
    let r = d.run(&["run", "c.toml", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.stdout.trim(), "A cat is a small domesticated feline.");
    assert!(r.stderr.contains("tool   lookup  ok"), "{}", r.stderr);
    assert!(r.stderr.contains("snapshot_digest"), "{}", r.stderr);
}

/// Under `--format json` all of stderr is JSON lines: each step event as a
/// `progress` object, status lines as `note` diagnostics.
#[test]
fn under_format_json_stderr_is_json_lines() {
    let d = Dir::new(&composition(""));
    let rec = d.path("rec.json");
    let (code, _, stderr) = d.json(&[
        "run",
        "c.toml",
        "--approve",
        "save_note",
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?} in {stderr}")))
        .collect();
    let events: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "progress")
        .map(|l| l["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "run_started",
            "model_call_started",
            "model_call_finished",
            "tool_call_started",
            "tool_call_finished",
            "model_call_started",
            "model_call_finished",
            "tool_call_started",
            "tool_call_finished",
            "model_call_started",
            "model_call_finished",
            "run_finished"
        ],
        "{stderr}"
    );
    let lookup = lines
        .iter()
        .find(|l| l["event"] == "tool_call_finished")
        .unwrap();
    assert_eq!(lookup["record"]["name"], "lookup");
    assert_eq!(lookup["record"]["status"], "ok");
    assert!(
        lines.iter().any(|l| l["type"] == "diagnostic"
            && l["severity"] == "note"
            && l["message"]
                .as_str()
                .unwrap()
                .starts_with("recorded 5 boundaries to ")),
        "{stderr}"
    );
    // The text form keeps its lines.
    let r = d.run(&["run", "c.toml", "--yes"]);
    assert!(r.stderr.contains("  tool   lookup  ok"), "{}", r.stderr);
}

#[test]
fn without_a_terminal_an_approval_is_refused_and_the_model_reads_why() {
    let d = Dir::new(&composition(""));
    let (code, doc, _) = d.json(&["run", "c.toml"]);
    assert_eq!(code, 0, "the scripted model still answers");
    assert_eq!(doc["tool_calls"][1]["status"], "refused");
    assert_eq!(doc["tool_calls"][1]["refusal"], "approval_denied");
    let msg = doc["tool_calls"][1]["error"].as_str().unwrap();
    assert!(msg.contains("--approve save_note"), "{msg}");
}

#[test]
fn exit_codes_follow_the_table() {
    // 1: the step limit without an answer.
    let d = Dir::new(&composition("max_steps = 2\n"));
    let r = d.run(&["run", "c.toml", "--yes"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("step limit (2)"), "{}", r.stderr);
    // 3: a budget runs out.
    let d = Dir::new(&composition("budget = { tool_calls = 1 }\n"));
    let r = d.run(&["run", "c.toml", "--yes"]);
    assert_eq!(r.code, 3, "{}", r.transcript());
    assert!(r.stderr.contains("budget exhausted"), "{}", r.stderr);
    // 2: no input and no default; an unknown agent; a bad flag.
    let d = Dir::new(&composition("").replace("default_input = \"What is a cat?\"\n", ""));
    assert_eq!(d.run(&["run", "c.toml"]).code, 2);
    assert_eq!(
        d.run(&["run", "c.toml", "--agent", "nope", "--input", "x"])
            .code,
        2
    );
    // A tool named by --approve that nothing declares is a warning.
    let r = d.run(&["run", "c.toml", "--input", "x", "--approve", "save_not"]);
    assert!(
        r.stderr.contains("--approve names `save_not`") && r.stderr.contains("`save_note`"),
        "{}",
        r.transcript()
    );
    // A recording that cannot be written is refused before anything runs.
    let r = d.run(&[
        "run",
        "c.toml",
        "--input",
        "x",
        "--yes",
        "--record",
        "no/such/dir/r.json",
    ]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("cannot write the recording"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.is_empty() && !r.stderr.contains("lookup"),
        "{}",
        r.transcript()
    );
    // --input - reads stdin (empty here).
    assert_eq!(d.run(&["run", "c.toml", "--input", "-", "--yes"]).code, 0);
    // 1: a pending hard requirement, refused before anything runs.
    let d = Dir::new(&format!(
        "{}\n[plugins.needy]\nversion = \"1.0.0\"\nrequires = {{ database = \">=1\" }}\n[entries.needy]\n",
        composition("")
    ));
    let r = d.run(&["run", "c.toml"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(
        r.stderr.contains("pending hard requirement"),
        "{}",
        r.stderr
    );
    assert_eq!(
        d.run(&["run", "c.toml", "--allow-pending", "--yes"]).code,
        0
    );
    // 3: a missing secret fails the mount.
    let d = Dir::new(&composition(
        "[plugins.vault]\nversion = \"1.0.0\"\n[entries.vault]\nconfig = { token = { secret = \"CHASSIS_TEST_UNSET\" } }\n",
    ));
    let r = d.run(&["run", "c.toml"]);
    assert_eq!(r.code, 3, "{}", r.transcript());
    assert!(r.stderr.contains("CHASSIS_TEST_UNSET"), "{}", r.stderr);
    // A run that fails before recording leaves an earlier recording as it
    // was, and leaves no empty file where there was none.
    std::fs::write(d.path("old.json"), "earlier recording").unwrap();
    assert_eq!(d.run(&["run", "c.toml", "--record", "old.json"]).code, 3);
    assert_eq!(
        std::fs::read_to_string(d.path("old.json")).unwrap(),
        "earlier recording"
    );
    assert_eq!(d.run(&["run", "c.toml", "--record", "new.json"]).code, 3);
    assert!(!d.path("new.json").exists());
    // 1: the model refuses.
    let d = Dir::new(&format!(
        "{BASE}[entries.model]\nplugin = \"scripted\"\n[[entries.model.config.turns]]\nrefusal = \"no\"\n[agents.a]\ndefault_input = \"x\"\n"
    ));
    assert_eq!(d.run(&["run", "c.toml"]).code, 1);
}

#[test]
fn an_env_file_supplies_secrets() {
    let d = Dir::new(&composition(
        "[plugins.vault]\nversion = \"1.0.0\"\n[entries.vault]\nconfig = { token = { secret = \"CHASSIS_TEST_TOKEN\" } }\n",
    ));
    assert_eq!(
        d.run(&["run", "c.toml", "--yes"]).code,
        3,
        "unset: the mount fails"
    );
    std::fs::write(d.path(".env"), "CHASSIS_TEST_TOKEN=tok-from-env-file\n").unwrap();
    let r = d.run(&["run", "c.toml", "--env-file", ".env", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!r.stderr.contains("tok-from-env-file"), "{}", r.stderr);
    let r = d.run(&["run", "c.toml", "--env-file", "missing.env"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
}

#[test]
fn a_recording_replays_and_a_changed_run_misses() {
    let d = Dir::new(&composition(""));
    let rec = d.path("rec.json");
    let rec_s = rec.to_str().unwrap();
    let r = d.run(&["run", "c.toml", "--yes", "--record", rec_s]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    let kinds: Vec<&str> = doc["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["model", "tool", "model", "tool", "model"]);
    let trace = d.path("trace.jsonl");
    let (code, out, _) = d.json(&[
        "run",
        "c.toml",
        "--yes",
        "--replay",
        rec_s,
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(
        out["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["replayed"] == true)
    );
    let signals = std::fs::read_to_string(&trace).unwrap();
    assert!(signals.contains("replay.hit"), "{signals}");
    // Policy still runs on a replayed call: without approval it is refused.
    let (_, out, _) = d.json(&["run", "c.toml", "--replay", rec_s]);
    assert_eq!(out["tool_calls"][1]["refusal"], "approval_denied");
    // Another input misses: exit 3 naming the boundary, unless live fallback.
    let r = d.run(&[
        "run", "c.toml", "--yes", "--replay", rec_s, "--input", "a dog?",
    ]);
    assert_eq!(r.code, 3, "{}", r.transcript());
    assert!(r.stderr.contains("replay missing"), "{}", r.stderr);
    let r = d.run(&[
        "run",
        "c.toml",
        "--yes",
        "--replay",
        rec_s,
        "--input",
        "a dog?",
        "--replay-fallback",
        "live",
    ]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    std::fs::write(&rec, "{\"format_version\": 9}").unwrap();
    assert_eq!(d.run(&["run", "c.toml", "--replay", rec_s]).code, 2);
}

#[test]
fn with_state_the_run_is_recorded_against_its_generation() {
    let d = Dir::new(&composition(""));
    let r = d.run(&["run", "c.toml", "--yes", "--state"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(d.path(".chassis/state.db").exists());
    let (code, runs, _) = d.json(&["runs", "list", "--state", ".chassis/state.db"]);
    assert_eq!(code, 0);
    let text = runs.to_string();
    assert!(
        text.contains("gen_0001") && text.contains("helper"),
        "{text}"
    );
    // A second run reuses the generation and is recorded too, under the id
    // it printed.
    let (code, doc, stderr) = d.json(&["run", "c.toml", "--yes", "--state"]);
    assert_eq!(code, 0, "{stderr}");
    let id = doc["run_id"].as_str().unwrap();
    assert!(stderr.contains(&format!("recorded {id} in")), "{stderr}");
    let (code, shown, _) = d.json(&["runs", "show", id, "--state", ".chassis/state.db"]);
    assert_eq!(code, 0);
    assert_eq!(shown["id"], id, "{shown}");
    let (_, runs, _) = d.json(&["runs", "list", "--state", ".chassis/state.db"]);
    assert_eq!(runs["runs"][1]["id"], id, "the latest is last: {runs}");
    let (_, gens, _) = d.json(&["generations", "list", "--state", ".chassis/state.db"]);
    assert_eq!(gens.to_string().matches("gen_0002").count(), 0, "{gens}");
}

fn read_until(pty: &mut pty_process::blocking::Pty, needle: &str, seen: &mut String) -> bool {
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) {
        match pty.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    true
}

fn run_on_terminal(dir: &Path, answer: &str) -> (i32, String) {
    let (mut pty, pts) = pty_process::blocking::open().expect("a pty");
    let mut child = pty_process::blocking::Command::new(env!("CARGO_BIN_EXE_chassis"))
        .args(["--color", "never", "run", "c.toml"])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .spawn(pts)
        .expect("spawns on the pty");
    let mut seen = String::new();
    assert!(
        read_until(&mut pty, "[N]o: ", &mut seen),
        "the prompt appears: {seen}"
    );
    assert!(seen.contains("approve tool `save_note`"), "{seen}");
    pty.write_all(answer.as_bytes()).unwrap();
    let _ = read_until(&mut pty, "snapshot_digest", &mut seen);
    let status = child.wait().expect("exits");
    (status.code().unwrap_or(-1), seen)
}

#[test]
fn on_a_terminal_the_prompt_decides() {
    let d = Dir::new(&composition(""));
    let (code, seen) = run_on_terminal(d.dir.path(), "y\n");
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("tool   save_note  ok"), "{seen}");
    let (code, seen) = run_on_terminal(d.dir.path(), "n\n");
    assert_eq!(code, 0, "{seen}");
    assert!(
        seen.contains("save_note  refused (approval_denied)"),
        "{seen}"
    );
}

/// Replace what changes between runs (run ids, timings) with placeholders.
fn stable(text: &str) -> String {
    let mut out = Vec::new();
    for line in text.lines() {
        let words: Vec<String> = line
            .split(' ')
            .map(|w| {
                let hex = w
                    .strip_prefix("run_")
                    .is_some_and(|h| h.len() == 12 && h.bytes().all(|b| b.is_ascii_hexdigit()));
                let core = w.trim_end_matches(',');
                let comma = if core.len() < w.len() { "," } else { "" };
                let secs = core.strip_suffix('s').is_some_and(|n| {
                    n.contains('.') && n.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                });
                let wall = w.starts_with("0.") && w.contains('/');
                let wall_comma = w.trim_end_matches(',');
                let wall2 = wall_comma.contains('/')
                    && wall_comma
                        .split('/')
                        .next()
                        .is_some_and(|n| n.contains('.'));
                if hex {
                    "run_[ID]".to_owned()
                } else if secs {
                    format!("[T]s{comma}")
                } else if wall || wall2 {
                    format!("[T]/{}", w.split('/').nth(1).unwrap_or_default())
                } else {
                    w.to_owned()
                }
            })
            .collect();
        out.push(words.join(" "));
    }
    out.join("\n")
}

#[test]
fn the_quickstart_runs_offline() {
    let r = crate::harness::run(&["run", "examples/quickstart.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    insta::assert_snapshot!("run_quickstart", stable(&r.transcript()));
    // The README shows this run, digest and all.
    let digest = r
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("snapshot_digest"))
        .map(str::trim)
        .unwrap_or_else(|| panic!("{}", r.transcript()));
    let readme = std::fs::read_to_string(crate::harness::root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("snapshot_digest  {digest}")),
        "README.md shows another quickstart digest than {digest}"
    );
    let r = crate::harness::run(&["check", "examples/quickstart.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    insta::assert_snapshot!("check_quickstart", r.transcript());
    let r = crate::harness::run(&["check", "examples/openai.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = crate::harness::run(&["explain", "budgets", "examples/quickstart.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    insta::assert_snapshot!("explain_budgets_quickstart", r.transcript());
}

#[test]
fn enabled_if_skips_an_entry_and_says_so() {
    let text = r#"version = 1
[entries.live]
plugin = "openai"
enabled_if = { env = "CHASSIS_TRY_LIVE" }
config = { model = "gpt-4o-mini", api_key = { secret = "OPENAI_API_KEY" } }
[entries.offline]
plugin = "scripted"
config.turns = [{ text = "offline answer" }]
[agents.a]
default_input = "hi"
"#;
    let d = Dir::new(text);
    let (code, doc, _) = d.json(&["check", "c.toml"]);
    assert_eq!(code, 0);
    assert_eq!(doc["files"][0]["skipped"][0]["entry_id"], "live", "{doc}");
    let (_, snap, _) = d.json(&["snapshot", "c.toml"]);
    assert_eq!(
        snap["snapshot"]["metadata"]["skipped_entries"]["live"]["unset"][0],
        "CHASSIS_TRY_LIVE"
    );
    let r = d.run(&["run", "c.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.stdout.trim(), "offline answer");
    // A preference for the skipped entry says why it is no candidate.
    std::fs::write(
        d.path("p.toml"),
        format!("{text}[prefer]\nmodel = \"live\"\n"),
    )
    .unwrap();
    let r = d.run(&["check", "p.toml"]);
    assert!(
        r.stderr.contains("`live` is skipped: its `enabled_if`"),
        "{}",
        r.transcript()
    );
    // Set in an env file, the entry is back (and the agent's model is then
    // ambiguous: a negative answer, exit 1).
    std::fs::write(
        d.path(".env"),
        "CHASSIS_TRY_LIVE=1\nOPENAI_API_KEY=sk-test-0000\n",
    )
    .unwrap();
    let r = d.run(&["run", "c.toml", "--env-file", ".env"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("ambiguous"), "{}", r.stderr);
}

#[test]
fn on_failure_skip_quarantines_a_failed_setup_and_publishes_the_rest() {
    let text = r#"version = 1
[plugins.flaky]
kind = "testing.failing-setup"
version = "1.0.0"
provides = { search = "1.0.0" }
[plugins.needs-search]
version = "1.0.0"
requires = { search = ">=1" }
[entries.flaky]
on_failure = "skip"
config = { message = "the index is unavailable" }
[entries.needs-search]
[entries.model]
plugin = "scripted"
config.turns = [{ text = "still here" }]
[agents.a]
default_input = "hi"
"#;
    let d = Dir::new(text);
    let r = d.run(&["publish", "c.toml", "--state", "s.db"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr.contains("entry `flaky` was quarantined"),
        "{}",
        r.stderr
    );
    let r = d.run(&["run", "c.toml"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.stdout.trim(), "still here");
    // Without the policy, the failure stops the publication.
    let d = Dir::new(&text.replace("on_failure = \"skip\"\n", ""));
    let r = d.run(&["publish", "c.toml", "--state", "s.db"]);
    assert_eq!(r.code, 3, "{}", r.transcript());
}

#[test]
fn on_a_terminal_a_spinner_shows_the_wait_and_the_lines_stay_plain() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "version = 1\n[entries.model]\nplugin = \"scripted\"\n[[entries.model.config.turns]]\ntext = \"slow answer\"\ndelay_ms = 600\n[agents.a]\ndefault_input = \"hi\"\n",
    )
    .unwrap();
    let (mut pty, pts) = pty_process::blocking::open().expect("a pty");
    let mut child = pty_process::blocking::Command::new(env!("CARGO_BIN_EXE_chassis"))
        .args(["--color", "never", "run", "c.toml"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "xterm")
        .spawn(pts)
        .expect("spawns on the pty");
    let mut seen = String::new();
    let _ = read_until(&mut pty, "snapshot_digest", &mut seen);
    assert_eq!(child.wait().expect("exits").code(), Some(0), "{seen}");
    // The spinner drew the wait, then erased itself before the answer,
    // which is printed as it is generated (once), then the step's line.
    assert!(seen.contains("model step 1 (scripted)"), "{seen:?}");
    assert!(
        seen.contains("\r\x1b[2Kslow answer\r\n  model  step 1"),
        "{seen:?}"
    );
    assert_eq!(seen.matches("slow answer").count(), 1, "{seen:?}");
    // Off a terminal: the same lines, no spinner.
    let r = run_in(dir.path(), &["run", "c.toml"], &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!r.stderr.contains('\x1b'), "{:?}", r.stderr);
    assert!(r.stderr.contains("  model  step 1"), "{}", r.stderr);
}

const REQUEST_TOOLS: &str = r#"version = 1
# Tools one request brings.
[entries.clock]
plugin = "command"
[[entries.clock.config.tools]]
name = "shout"
description = "Upper-case a word."
args = { type = "object", required = ["word"], properties = { word = { type = "string" } }, additionalProperties = false }
argv = ["tr", "a-z", "A-Z"]
stdin = "{/word}"
idempotent = true
timeout_seconds = 5
"#;

#[test]
fn request_tools_run_on_their_own_candidate_generation() {
    // The agent sees only `lookup` by its view; the request brings `shout`.
    let text = format!(
        "{BASE}\n[entries.model]\nplugin = \"scripted\"\n[[entries.model.config.turns]]\ntool_calls = [{{ name = \"shout\", args = {{ word = \"cat\" }} }}]\n[[entries.model.config.turns]]\ntext = \"done\"\n\n[agents.helper]\nprompt = \"p\"\ntools = [\"lookup\"]\ndefault_input = \"go\"\n"
    );
    let d = Dir::new(&text);
    std::fs::write(d.path("extra.toml"), REQUEST_TOOLS).unwrap();
    // Without the request's tools the call is refused as unknown.
    let (code, plain, stderr) = d.json(&["run", "c.toml"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(plain["tool_calls"][0]["status"], "refused", "{plain}");
    assert_eq!(plain["request_tools"], serde_json::json!([]));
    // With them the tool runs, on a candidate of gen_0001 with its own digest.
    let (code, doc, stderr) = d.json(&["run", "c.toml", "--request-tools", "extra.toml"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["tool_calls"][0]["name"], "shout");
    assert_eq!(doc["tool_calls"][0]["status"], "ok", "{doc}");
    assert_eq!(doc["messages"][3]["content"], "CAT", "{doc}");
    assert_eq!(doc["generation_id"], "gen_0001");
    assert_eq!(doc["request_tools"], serde_json::json!(["shout"]));
    assert_ne!(doc["snapshot_digest"], plain["snapshot_digest"]);
    assert_ne!(
        doc["composition"]["tool_schema_hash"],
        plain["composition"]["tool_schema_hash"]
    );
    // The pure command derives the same digest, and the plain one is unchanged.
    let (_, snap, _) = d.json(&[
        "snapshot",
        "c.toml",
        "--agent",
        "helper",
        "--request-tools",
        "extra.toml",
    ]);
    assert_eq!(snap["digests"]["digest"], doc["snapshot_digest"]);
    let (_, base, _) = d.json(&["snapshot", "c.toml", "--agent", "helper"]);
    assert_eq!(base["digests"]["digest"], plain["snapshot_digest"]);
    // What a request tool runs is in the digest, not only its contract.
    std::fs::write(
        d.path("other.toml"),
        REQUEST_TOOLS.replace(
            r#"argv = ["tr", "a-z", "A-Z"]"#,
            r#"argv = ["tr", "a-y", "A-Y"]"#,
        ),
    )
    .unwrap();
    let (_, other, _) = d.json(&[
        "snapshot",
        "c.toml",
        "--agent",
        "helper",
        "--request-tools",
        "other.toml",
    ]);
    assert_ne!(other["digests"]["digest"], snap["digests"]["digest"]);
    // With a store, the published generation is the composition's own.
    let state = d.path("state.db");
    let state = state.to_str().unwrap();
    let (code, _, stderr) = d.json(&[
        "run",
        "c.toml",
        "--request-tools",
        "extra.toml",
        "--state",
        state,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (_, listed, _) = d.json(&["generations", "list", "--state", state]);
    let (_, published, _) = d.json(&["snapshot", "c.toml"]);
    assert_eq!(
        listed["generations"][0]["digest"], published["digests"]["digest"],
        "{listed}"
    );
    assert_eq!(listed["generations"].as_array().map(Vec::len), Some(1));
}

#[test]
fn request_tools_that_collide_or_are_not_commands_are_refused_before_running() {
    let d = Dir::new(&composition(""));
    // A name the composition already has.
    std::fs::write(
        d.path("clash.toml"),
        REQUEST_TOOLS.replace("name = \"shout\"", "name = \"lookup\""),
    )
    .unwrap();
    let r = d.run(&["run", "c.toml", "--yes", "--request-tools", "clash.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("`lookup` has the name of another tool"),
        "{}",
        r.stderr
    );
    // An entry of another kind, pointed at in the file.
    std::fs::write(
        d.path("declared.toml"),
        "version = 1\n[plugins.p]\nversion = \"1.0.0\"\n[entries.p]\n",
    )
    .unwrap();
    let r = d.run(&["run", "c.toml", "--yes", "--request-tools", "declared.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("load::request-tools-kind") && r.stderr.contains("declared.toml:4"),
        "{}",
        r.stderr
    );
    // No tools (an empty file, or its only entry disabled by `enabled_if`).
    std::fs::write(d.path("empty.toml"), "version = 1\n").unwrap();
    let r = d.run(&["run", "c.toml", "--yes", "--request-tools", "empty.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("brings no tools"), "{}", r.stderr);
    std::fs::write(
        d.path("gated.toml"),
        REQUEST_TOOLS.replace(
            "plugin = \"command\"",
            "plugin = \"command\"\nenabled_if = { env = \"CHASSIS_TEST_UNSET_GATE\" }",
        ),
    )
    .unwrap();
    let r = d.run(&[
        "snapshot",
        "c.toml",
        "--agent",
        "helper",
        "--request-tools",
        "gated.toml",
    ]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("brings no tools"), "{}", r.stderr);
    // A sub-agent's name, and a scope view that would hide the tool.
    let sub = composition("sub_agents = [\"shout\"]\n[agents.shout]\nprompt = \"x\"\n");
    let d = Dir::new(&sub);
    std::fs::write(d.path("extra.toml"), REQUEST_TOOLS).unwrap();
    let r = d.run(&[
        "run",
        "c.toml",
        "--agent",
        "helper",
        "--yes",
        "--request-tools",
        "extra.toml",
    ]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("`shout` has the name of another tool"),
        "{}",
        r.stderr
    );
    let viewed = composition(
        "scope = \"/team/helper\"\n[scopes.\"/team\"]\ntools = [\"lookup\", \"save_note\"]\n",
    );
    let d = Dir::new(&viewed);
    std::fs::write(d.path("extra.toml"), REQUEST_TOOLS).unwrap();
    let r = d.run(&["run", "c.toml", "--yes", "--request-tools", "extra.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("would be hidden"), "{}", r.stderr);
}

#[test]
fn a_scope_policy_allows_its_agent_and_its_sibling_keeps_the_global_policy() {
    let text =
        std::fs::read_to_string(crate::harness::root().join("examples/scope-policy.toml")).unwrap();
    let d = Dir::new(&text);
    let (code, doc, stderr) = d.json(&["run", "c.toml", "--agent", "finance"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["tool_calls"][0]["name"], "read_ledger");
    assert_eq!(doc["tool_calls"][0]["status"], "ok", "{doc}");
    // Plugin and capability names are not secrets: their versions show.
    assert_eq!(doc["composition"]["plugins"]["secrets.env"], "1.0.0");
    assert_eq!(doc["composition"]["capabilities"]["secrets"][0], "1.0.0");
    // The sibling agent: finance's policy does not leak to it.
    let (code, doc, stderr) = d.json(&["run", "c.toml", "--agent", "support"]);
    assert_eq!(code, 0, "the scripted model still answers: {stderr}");
    assert_eq!(doc["tool_calls"][0]["status"], "refused", "{doc}");
    assert_eq!(doc["tool_calls"][0]["refusal"], "policy_denied");
    let msg = doc["tool_calls"][0]["error"].as_str().unwrap();
    assert!(msg.contains("no grant covers `ledger.read`"), "{msg}");

    // Two policies for the finance agent, no preference: it fails closed,
    // naming both.
    let d = Dir::new(&format!(
        "{text}\n[entries.more-policy]\nplugin = \"policy\"\nscope = \"/agents\"\nconfig = {{ grants = [\"ledger.read\"] }}\n"
    ));
    let (code, doc, stderr) = d.json(&["run", "c.toml", "--agent", "finance"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["tool_calls"][0]["status"], "refused", "{doc}");
    let msg = doc["tool_calls"][0]["error"].as_str().unwrap();
    assert!(
        msg.contains(
            "policy resolution failed for scope /agents/finance: ambiguous between finance-policy, more-policy"
        ),
        "{msg}"
    );
}

/// A `transform` hook that renames the tool (or drops its name) cannot get
/// a call past a `deny` guard on tool names: the guard judges the tool that
/// will run, and the failed rename is a warning on stderr.
#[test]
fn a_transform_hook_cannot_rename_a_call_past_a_deny_guard() {
    for reply in [
        r#"{"action":"transform","payload":{"tool":"harmless","args":{"note":"renamed"}}}"#,
        r#"{"action":"transform","payload":{"args":{"note":"renamed"}}}"#,
    ] {
        let d = Dir::new("");
        let hook = d.path("rename.sh");
        std::fs::write(&hook, format!("cat > /dev/null\necho '{reply}'\n")).unwrap();
        std::fs::write(
            d.path("c.toml"),
            composition(&format!(
                r#"
[entries.rename]
plugin = "hook-command"
config = {{ argv = ["sh", {hook:?}], events = ["before_tool_execute"], mode = "transform", priority = -100 }}

[entries.guard]
plugin = "deny"
config = {{ tools = ["save_*"], reason = "no saving here" }}
"#
            )),
        )
        .unwrap();
        let (code, doc, stderr) = d.json(&["run", "c.toml", "--yes"]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(doc["tool_calls"][1]["name"], "save_note", "{doc:#}");
        assert_eq!(doc["tool_calls"][1]["status"], "refused", "{doc:#}");
        assert_eq!(doc["tool_calls"][1]["refusal"], "hook", "{doc:#}");
        // Renaming is a hook failure, warned as a JSON line under `--format
        // json`; leaving `tool` out is not (it is simply kept).
        let warned: Vec<serde_json::Value> = stderr
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .filter(|v: &serde_json::Value| v["code"] == "runtime::hook-failure")
            .collect();
        let renames = reply.contains(r#""tool":"harmless""#);
        // One per renamed call (both tool calls go through the hook).
        assert_eq!(warned.len(), if renames { 2 } else { 0 }, "{stderr}");
        for w in &warned {
            let message = w["message"].as_str().unwrap();
            assert!(message.contains("cannot change `tool`"), "{message}");
        }
    }
}

/// The wall-clock budget bounds what is in flight: a slow model call and a
/// slow command tool are cut off at the deadline and the run fails with
/// exit 3 (`budget_exhausted`), instead of answering late.
#[test]
fn the_wall_clock_budget_cuts_off_a_slow_model_call_and_a_slow_tool() {
    let slow_model = r#"version = 1
[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
text = "late"
delay_ms = 20000
[agents.a]
default_input = "x"
budget = { wall_clock_seconds = 0.3 }
"#;
    let slow_tool = r#"version = 1
[entries.sleepy]
plugin = "command"
[[entries.sleepy.config.tools]]
name = "nap"
description = "Sleeps."
args = { type = "object" }
argv = ["sleep", "20"]
idempotent = true
timeout_seconds = 30
[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "nap", args = {} }]
[[entries.model.config.turns]]
text = "rested"
[agents.a]
default_input = "x"
budget = { wall_clock_seconds = 0.3 }
"#;
    for text in [slow_model, slow_tool] {
        let d = Dir::new(text);
        let started = std::time::Instant::now();
        let (code, doc, stderr) = d.json(&["run", "c.toml"]);
        let took = started.elapsed();
        assert_eq!(code, 3, "{doc:#}\n{stderr}");
        assert_eq!(doc["stop"]["kind"], "budget_exhausted", "{doc:#}");
        assert_eq!(doc["stop"]["dimension"], "wall_clock_seconds", "{doc:#}");
        assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    }
}

/// A child run whose reported usage would cross its parent's limit is
/// refused that charge (nothing is charged), and the parent stops (exit 3)
/// instead of starting the child again and again.
#[test]
fn a_sub_agent_that_overspends_stops_its_parent() {
    let d = Dir::new(
        r#"version = 1
[entries.pm]
plugin = "scripted"
[[entries.pm.config.turns]]
tool_calls = [{ name = "child", args = { input = "1" } }]
usage = { input_tokens = 10, output_tokens = 10 }
[[entries.pm.config.turns]]
tool_calls = [{ name = "child", args = { input = "2" } }]
usage = { input_tokens = 10, output_tokens = 10 }
[[entries.pm.config.turns]]
tool_calls = [{ name = "child", args = { input = "3" } }]
usage = { input_tokens = 10, output_tokens = 10 }
[[entries.pm.config.turns]]
text = "parent done"
usage = { input_tokens = 10, output_tokens = 10 }
[entries.cm]
plugin = "scripted"
config.repeat_last = true
[[entries.cm.config.turns]]
text = "child answer"
usage = { input_tokens = 200, output_tokens = 100 }
[agents.parent]
prompt = "p"
default_input = "go"
prefer_model = "pm"
sub_agents = ["child"]
tools = []
budget = { tokens = 250 }
[agents.child]
description = "c"
prompt = "c"
prefer_model = "cm"
tools = []
"#,
    );
    let (code, doc, stderr) = d.json(&["run", "c.toml", "--agent", "parent"]);
    assert_eq!(code, 3, "{doc:#}\n{stderr}");
    assert_eq!(doc["stop"]["kind"], "budget_exhausted", "{doc:#}");
    let tokens = doc["budget"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["dimension"] == "tokens"))
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(
        tokens["used"], 320.0,
        "the child's call counts on it: {doc:#}"
    );
    assert_eq!(doc["tool_calls"][0]["refusal"], "budget", "{doc:#}");
    assert_eq!(
        doc["tool_calls"].as_array().map(Vec::len),
        Some(1),
        "{doc:#}"
    );
}

/// A usage report past the limit is charged in full (the call happened)
/// and stops the run: the message says what was used before and what the
/// call asked for, the rows what is used now, `usage` what the model said;
/// a count written as a float is refused at load.
#[test]
fn a_usage_report_past_the_limit_is_charged_and_counts_are_integers() {
    let text = r#"version = 1
[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
text = "done"
usage = { input_tokens = 6, output_tokens = 5 }

[agents.a]
default_input = "go"
budget = { tokens = 10 }
"#;
    let d = Dir::new(text);
    let (code, doc, stderr) = d.json(&["run", "c.toml"]);
    assert_eq!(code, 3, "{doc:#}\n{stderr}");
    assert_eq!(
        doc["stop"]["message"], "tokens budget exceeded: 0 used of 10, 11 more requested",
        "{doc:#}"
    );
    let row = |name: &str| {
        doc["budget"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["dimension"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{doc:#}"))
    };
    assert_eq!(row("tokens")["used"], 11.0, "{doc:#}");
    assert_eq!(row("model_calls")["used"], 1.0, "{doc:#}");
    assert_eq!(doc["usage"]["input_tokens"], 6, "{doc:#}");
    let r = d.run(&["run", "c.toml"]);
    assert!(r.stderr.contains("tokens 11/10"), "{}", r.stderr);

    let d = Dir::new(&text.replace("tokens = 10 }", "tokens = 10, model_calls = 1.0 }"));
    let r = d.run(&["check", "c.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("write a whole number without a decimal point"),
        "{}",
        r.stderr
    );
}

/// Control-plane hook failures (`plugin_mounted`, `generation_published`)
/// fail nothing, so they are said: as warnings in text, as diagnostic
/// lines under `--format json`; and a trace keeps a failing tool's message
/// with only the secret removed.
#[test]
fn control_plane_hook_failures_are_said_and_trace_errors_keep_their_message() {
    let d = Dir::new(
        r#"version = 1
[entries.h]
plugin = "hook-command"
config = { argv = ["sh", "-c", "exit 4"], events = ["plugin_mounted", "generation_published"], env = ["PATH"] }

[plugins.vault]
version = "1.0.0"
[entries.vault]
config = { token = { secret = "VAULT_TOKEN" } }

[entries.tools]
plugin = "command"
[entries.tools.config]
env = ["VAULT_TOKEN"]
[[entries.tools.config.tools]]
name = "fail"
description = "Fails."
args = { type = "object" }
argv = ["sh", "-c", "echo \"cannot open vault with $VAULT_TOKEN\" >&2; exit 2"]
input = "none"
idempotent = true

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "fail", args = {} }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
default_input = "go"
"#,
    );
    let env = [("VAULT_TOKEN", "sk-trace-canary-4417")];
    let publish = run_in(
        d.dir.path(),
        &["--color", "never", "publish", "c.toml"],
        &env,
    );
    assert_eq!(publish.code, 0, "{}", publish.transcript());
    for event in ["plugin_mounted", "generation_published"] {
        assert!(
            publish.stderr.contains(&format!("failed on `{event}`")),
            "{}",
            publish.stderr
        );
    }
    let trace = d.path("trace.jsonl");
    let run = run_in(
        d.dir.path(),
        &[
            "--format",
            "json",
            "run",
            "c.toml",
            "--trace",
            trace.to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("\"diagnostic\"") && l.contains("plugin_mounted")),
        "{}",
        run.stderr
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains("sk-trace-canary-4417"), "{text}");
    assert!(
        text.contains("cannot open vault with <redacted>"),
        "the message stays, the secret goes:\n{text}"
    );
}

/// A usage report whose tokens do not fit a count (a sum past u64, which
/// wrapped to a few tokens, or past 2^53) is refused whole: the run stops
/// (exit 3) naming the model entry, whatever the provider — never charged
/// as what the sum wrapped to, which passed any `tokens` limit.
#[test]
fn a_usage_report_too_large_to_count_is_refused_naming_the_model_entry() {
    let huge = 9_223_372_036_854_775_808_u64; // 2^63: twice that wraps to 0
    let cases = [(huge, huge), (u64::MAX, 11), (1 << 53, 1)];
    for (input, output) in cases {
        let turn = serde_json::json!({
            "text": "answer",
            "usage": { "input_tokens": input, "output_tokens": output },
        });
        let d = Dir::new(
            r#"version = 1
[entries.model]
plugin = "scripted"
config.turns_file = "turns.jsonl"

[agents.a]
default_input = "go"
budget = { tokens = 100 }
"#,
        );
        std::fs::write(d.path("turns.jsonl"), format!("{turn}\n")).unwrap();
        let r = d.run(&["run", "c.toml"]);
        assert_eq!(r.code, 3, "{input} + {output}: {}", r.transcript());
        assert!(
            r.stderr
                .contains("model entry `model` reported a usage that cannot be counted"),
            "{}",
            r.stderr
        );
        assert!(!r.stdout.contains("answer"), "{}", r.transcript());
    }

    // The same report from an OpenAI-compatible endpoint.
    let mut reply = crate::loopback::answer_reply("answer");
    reply["usage"] = serde_json::json!({
        "prompt_tokens": huge, "completion_tokens": huge, "total_tokens": 0
    });
    let endpoint = crate::loopback::Endpoint::start(vec![reply]);
    let d = Dir::new(&format!(
        r#"version = 1
[entries.gpt]
plugin = "openai"
config.model = "m"
config.base_url = "{}"
config.max_retries = 0

[agents.a]
default_input = "go"
budget = {{ tokens = 100 }}
"#,
        endpoint.base_url
    ));
    let (code, doc, stderr) = d.json(&["run", "c.toml"]);
    assert_eq!(code, 3, "{doc:#}\n{stderr}");
    assert_eq!(doc["stop"]["kind"], "model_failed", "{doc:#}");
    assert!(
        doc["stop"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("model entry `gpt`")),
        "{doc:#}"
    );
}

/// A sub-agent's model call that crossed the sub-agent's own budget still
/// happened: it is charged up the whole chain, so its caller's budget
/// counts it and the caller makes no more paid calls than its
/// `model_calls` allow. (The call count was dropped with the refused
/// tokens: five paid calls under `model_calls 2/2`, exit 0.)
#[test]
fn a_sub_agent_call_past_its_own_budget_still_counts_on_its_caller() {
    let text = r#"version = 1
[entries.pm]
plugin = "scripted"
[[entries.pm.config.turns]]
tool_calls = [
  { name = "b", args = { input = "1" }, id = "c1" },
  { name = "b", args = { input = "2" }, id = "c2" },
  { name = "b", args = { input = "3" }, id = "c3" },
]
usage = { input_tokens = 10, output_tokens = 10 }
[[entries.pm.config.turns]]
text = "parent done"
usage = { input_tokens = 10, output_tokens = 10 }
[entries.cm]
plugin = "scripted"
config.repeat_last = true
[[entries.cm.config.turns]]
text = "child answer"
usage = { input_tokens = 1000, output_tokens = 0 }
[agents.a]
default_input = "go"
prefer_model = "pm"
sub_agents = ["b"]
tools = []
budget = { model_calls = 2, tokens = PARENT_TOKENS }
[agents.b]
description = "b"
prefer_model = "cm"
tools = []
budget = { tokens = 5 }
"#;
    // The caller's tokens crossed too (1,020 of 100): the caller stops at
    // once. Only the child's (1,020 of 10,000): the caller's model reads
    // a failed call, and the next child is refused its model call.
    for (parent_tokens, tool_calls) in [(100, 1), (10_000, 2)] {
        let d = Dir::new(&text.replace("PARENT_TOKENS", &parent_tokens.to_string()));
        let trace = d.path("trace.jsonl");
        let (code, doc, stderr) = d.json(&[
            "run",
            "c.toml",
            "--agent",
            "a",
            "--trace",
            trace.to_str().unwrap(),
        ]);
        assert_eq!(code, 3, "{doc:#}\n{stderr}");
        assert_eq!(doc["stop"]["kind"], "budget_exhausted", "{doc:#}");
        let row = |name: &str| {
            doc["budget"]
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["dimension"] == name))
                .cloned()
                .unwrap_or_else(|| panic!("{doc:#}"))
        };
        assert_eq!(row("model_calls")["used"], 2.0, "{doc:#}");
        assert_eq!(row("tokens")["used"], 1020.0, "{doc:#}");
        assert_eq!(
            doc["tool_calls"].as_array().map(Vec::len),
            Some(tool_calls),
            "{doc:#}"
        );
        // The calls made, whoever was charged: the caller's and one child's.
        let signals = std::fs::read_to_string(&trace).unwrap();
        let made = signals
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|s| s["name"] == "model.call" && s["type"] == "span_start")
            .count();
        assert_eq!(made, 2, "{signals}");
    }
}

/// A run with a sub-agent under a `tokens` budget replays: the sub-agent
/// runs again with its model calls answered from the recording, so its
/// tokens are charged as they were and the caller's next call (whose
/// `max_tokens` the tokens left cap) is the recorded one. (The sub-agent
/// call was answered as a tool, its tokens never charged, and the caller's
/// next call missed: exit 3, "replay missing".)
#[test]
fn a_run_with_a_sub_agent_under_a_tokens_budget_replays() {
    let d = Dir::new(
        r#"version = 1
[entries.pm]
plugin = "scripted"
[[entries.pm.config.turns]]
tool_calls = [{ name = "b", args = { input = "find" }, id = "c1" }]
usage = { input_tokens = 10, output_tokens = 10 }
[[entries.pm.config.turns]]
text = "parent done"
usage = { input_tokens = 10, output_tokens = 10 }
[entries.cm]
plugin = "scripted"
[[entries.cm.config.turns]]
text = "child answer"
usage = { input_tokens = 30, output_tokens = 5 }
[agents.a]
default_input = "go"
prefer_model = "pm"
sub_agents = ["b"]
tools = []
budget = { tokens = 1000 }
[agents.b]
description = "b"
prefer_model = "cm"
tools = []
"#,
    );
    let rec = d.path("rec.json");
    let rec_s = rec.to_str().unwrap();
    let (code, recorded, stderr) = d.json(&["run", "c.toml", "--agent", "a", "--record", rec_s]);
    assert_eq!(code, 0, "{recorded:#}\n{stderr}");
    let (code, replayed, stderr) = d.json(&["run", "c.toml", "--agent", "a", "--replay", rec_s]);
    assert_eq!(code, 0, "{replayed:#}\n{stderr}");
    assert_eq!(replayed["answer"], "parent done", "{replayed:#}");
    let tokens = |doc: &serde_json::Value| {
        doc["budget"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["dimension"] == "tokens"))
            .map(|r| r["used"].clone())
            .unwrap_or_else(|| panic!("{doc:#}"))
    };
    assert_eq!(tokens(&recorded), 75.0, "{recorded:#}");
    assert_eq!(
        tokens(&replayed),
        75.0,
        "the child's tokens are charged: {replayed:#}"
    );
}

/// Reordering `sub_agents` is no change, as reordering `tools` is not:
/// the run's `graph_definition_hash` and `snapshot_digest` stay.
#[test]
fn reordering_sub_agents_keeps_the_digests() {
    let text = r#"version = 1
[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
text = "done"
[agents.a]
default_input = "go"
sub_agents = ["b", "c"]
tools = []
[agents.b]
description = "b"
[agents.c]
description = "c"
"#;
    let stamp = |text: &str| {
        let d = Dir::new(text);
        let (code, doc, stderr) = d.json(&["run", "c.toml", "--agent", "a"]);
        assert_eq!(code, 0, "{doc:#}\n{stderr}");
        (
            doc["composition"]["graph_definition_hash"].clone(),
            doc["snapshot_digest"].clone(),
        )
    };
    let listed = stamp(text);
    let reordered = stamp(&text.replace(r#"["b", "c"]"#, r#"["c", "b"]"#));
    assert!(listed.0.is_string(), "{listed:?}");
    assert_eq!(listed, reordered);
}

/// An agent name is one scope segment: `a/b` would own a scope inside
/// agent `a`'s (`/agents/a/b`) and inherit its tool view, so it is refused
/// at load (exit 2), pointing at the name and saying what is allowed.
#[test]
fn an_agent_name_with_a_slash_is_refused_at_load() {
    let d = Dir::new(
        r#"version = 1
[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
text = "done"
[agents.a]
tools = []
[agents."a/b"]
default_input = "go"
"#,
    );
    for args in [
        &["check", "c.toml"][..],
        &["run", "c.toml", "--agent", "a/b"],
    ] {
        let r = d.run(args);
        assert_eq!(r.code, 2, "{}", r.transcript());
        assert!(
            r.stderr
                .contains("agent name `a/b` is not one scope segment"),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr.contains("any character but `/` and whitespace"),
            "{}",
            r.stderr
        );
    }
    let (code, doc, stderr) = d.json(&["check", "c.toml"]);
    assert_eq!(code, 2, "{doc:#}\n{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("not one scope segment"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let diag: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(diag["labels"][0]["message"], "invalid name", "{diag:#}");
    assert_eq!(diag["labels"][0]["column"], 9, "{diag:#}");
    assert_eq!(diag["labels"][0]["line"], 8, "{diag:#}");
}
