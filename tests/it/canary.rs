//! A secret canary across every command: a recognisable value sits in the
//! composition (as a literal under `api_key`, in scope metadata, in a DSN
//! password) and in the environment; it must appear in no output (nor
//! when a tool reads it through its context and answers with it). The
//! command tree is walked from clap, so a new command fails this test until
//! it is given an invocation here.

use clap::CommandFactory;

use crate::harness::{root, run_in};

const CANARY: &str = "sk-canary-7f3a9c2e51";

const VALID: &str = r#"version = 1

[plugins.db]
version = "1.0.0"
provides = { database = "1.0.0" }

[plugins.app]
version = "1.0.0"
requires = { database = ">=1,<2" }

[scopes."/team"]
metadata = { owner = "team", api_key = "sk-canary-7f3a9c2e51" }

[entries.db]
config = { dsn = "postgres://app:sk-canary-7f3a9c2e51@db/app", api_key = "sk-canary-7f3a9c2e51", password = { secret = "DB_PASSWORD" } }

[entries.app]
scope = "/team"

[entries.team-policy]
plugin = "policy"
scope = "/team"
config = { grants = ["database.read"] }

[entries.team-secrets]
plugin = "secrets.env"
scope = "/team"
config = { prefix = "TEAM_", aliases = { api_key = "DB_PASSWORD" } }
"#;

/// An agent run: the canary is a resolved secret (so the redactor knows
/// it) that the scripted model and a tool then repeat in every boundary.
const AGENT: &str = r#"version = 1

[plugins.echo]
version = "1.0.0"
[[plugins.echo.tools]]
name = "echo"
description = "Echoes."
args = { type = "object", properties = { value = { type = "string" } } }
result = "echo sk-canary-7f3a9c2e51"

[entries.echo]
config = { password = { secret = "DB_PASSWORD" } }

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "echo", args = { value = "sk-canary-7f3a9c2e51" } }]
[[entries.model.config.turns]]
tool_calls = [{ name = "leak", args = {} }]
[[entries.model.config.turns]]
text = "the password is sk-canary-7f3a9c2e51"

[entries.audit]
plugin = "audit"
config = { path = "audit.jsonl" }

[entries.agent-secrets]
plugin = "secrets.env"
scope = "/agents/a"
config = { aliases = { "db.password" = "DB_PASSWORD" } }

[entries.agent-policy]
plugin = "policy"
scope = "/agents/a"

[agents.a]
default_input = "repeat sk-canary-7f3a9c2e51"
"#;

/// Tools a request brings (`run --request-tools`): `leak` prints a variable
/// whose value is the canary (runs without it are refused the tool).
const REQUEST_TOOLS: &str = r#"version = 1
[entries.leaky]
plugin = "command"
config.env = ["CHASSIS_CANARY"]
[[entries.leaky.config.tools]]
name = "leak"
description = "Prints a variable."
args = { type = "object", properties = {} }
argv = ["printenv", "CHASSIS_CANARY"]
timeout_seconds = 5
"#;

/// An MCP server started with the canary as a secret environment variable,
/// whose `env` tool then answers with it (and whose lock is written).
fn mcp_composition() -> String {
    format!(
        r#"version = 1

[entries.s]
plugin = "mcp"
config.command = {}
config.tools = {{ allow = ["env", "echo"] }}
config.secret_env = {{ API_TOKEN = {{ secret = "DB_PASSWORD" }} }}

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{{ name = "env", args = {{}} }}]
[[entries.model.config.turns]]
tool_calls = [{{ name = "echo", args = {{ text = "sk-canary-7f3a9c2e51" }} }}]
[[entries.model.config.turns]]
text = "done"

[agents.a]
tools = ["env", "echo"]
default_input = "go"
"#,
        serde_json::to_string(&crate::mcp_servers::scripted_server().display().to_string())
            .unwrap()
    )
}

const BROKEN: &str = r#"version = 1

[entries.db]
config = { api_key = "sk-canary-7f3a9c2e51" }
plugin = = "db"
"#;

fn leaves(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let subs: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|c| c.get_name() != "help")
        .collect();
    if subs.is_empty() {
        out.push(prefix);
        return;
    }
    for s in subs {
        let mut p = prefix.clone();
        p.push(s.get_name().to_owned());
        leaves(s, p, out);
    }
}

/// Invocations per command path, with `{F}` for the composition file.
fn invocations(path: &str) -> Option<Vec<Vec<&'static str>>> {
    Some(match path {
        "check" => vec![
            vec!["check", "{F}"],
            vec!["--format", "json", "check", "{F}"],
        ],
        "snapshot" => vec![
            vec!["snapshot", "{F}"],
            vec!["snapshot", "{F}", "--out", "{OUT}"],
            vec!["snapshot", "{A}", "--agent", "a", "--request-tools", "{R}"],
        ],
        "explain requirement" => vec![
            vec!["explain", "requirement", "app", "database", "{F}"],
            vec![
                "--format",
                "json",
                "explain",
                "requirement",
                "app",
                "database",
                "{F}",
            ],
        ],
        "explain scope" => vec![
            vec!["explain", "scope", "/team", "{F}"],
            vec!["--format", "json", "explain", "scope", "/team", "{F}"],
        ],
        "diff generations" => vec![
            vec!["diff", "generations", "{F}", "{F}", "--include-unchanged"],
            vec!["--format", "markdown", "diff", "generations", "{F}", "{F}"],
            vec![
                "diff",
                "generations",
                "gen_0001",
                "gen_0001",
                "--state",
                "{STATE}",
            ],
        ],
        "publish" => vec![
            vec!["publish", "{F}"],
            vec!["--format", "json", "publish", "{F}", "--allow-pending"],
            vec!["publish", "{F}", "--trace", "{OUT}"],
        ],
        "plan" => vec![vec!["plan", "{F}"], vec!["--format", "json", "plan", "{F}"]],
        "generations list" => vec![
            vec!["generations", "list", "--state", "{STATE}"],
            vec![
                "--format",
                "json",
                "generations",
                "list",
                "--state",
                "{STATE}",
            ],
        ],
        "generations show" => vec![
            vec!["generations", "show", "gen_0001", "--state", "{STATE}"],
            vec![
                "--format",
                "json",
                "generations",
                "show",
                "gen_0001",
                "--state",
                "{STATE}",
            ],
        ],
        "runs list" => vec![vec!["runs", "list", "--state", "{STATE}"]],
        "runs show" => vec![vec!["runs", "show", "run_0001", "--state", "{STATE}"]],
        "explain reuse" => vec![
            vec![
                "explain", "reuse", "gen_0001", "gen_0001", "db", "--state", "{STATE}",
            ],
            vec![
                "--format", "json", "explain", "reuse", "gen_0001", "gen_0001", "db", "--state",
                "{STATE}",
            ],
        ],
        "graph" => vec![
            vec!["graph", "{F}"],
            vec!["--format", "mermaid", "graph", "{F}"],
        ],
        "schema" => vec![vec!["schema"], vec!["schema", "--kind", "scripted"]],
        "run" => vec![
            vec!["run", "{A}"],
            vec!["--format", "json", "run", "{A}", "--trace", "{OUT}"],
            vec!["run", "{A}", "--record", "{OUT}"],
            vec!["run", "{A}", "--state", "{STATE}"],
            vec!["--format", "json", "run", "{A}", "--request-tools", "{R}"],
            vec!["run", "{F}"],
        ],
        "explain budgets" => vec![
            vec!["explain", "budgets", "{A}"],
            vec!["--format", "json", "explain", "budgets", "{F}"],
        ],
        "completions" => vec![vec!["completions", "bash"]],
        // A process plugin is tested with the canary in
        // process_plugins.rs; here a scaffold and a file without one.
        "plugin new" => vec![vec!["plugin", "new", "canary", "--dir", "{OUT}.plugin"]],
        "plugin check" => vec![
            vec!["plugin", "check", "{F}"],
            vec!["--format", "json", "plugin", "check", "{A}"],
        ],
        // A server that binds is tested over HTTP (serve.rs, with this
        // canary); here its refusals before anything is served.
        "serve" => vec![
            vec!["serve", "{F}", "--listen", "0.0.0.0:7300"],
            vec!["--format", "json", "serve", "{F}", "--listen", "nonsense"],
        ],
        "tools" => vec![
            vec!["tools", "{F}"],
            vec!["--format", "json", "tools", "{A}"],
            vec!["tools", "{M}", "--update-lock"],
            vec!["--format", "json", "tools", "{M}", "--live"],
            vec!["run", "{M}", "--trace", "{OUT}"],
            vec!["--format", "json", "publish", "{M}", "--state", "{STATE}"],
        ],
        _ => return None,
    })
}

#[test]
fn the_canary_appears_in_no_output_of_any_command() {
    let dir = tempfile::tempdir().unwrap();
    let valid = dir.path().join("valid.toml");
    let broken = dir.path().join("broken.toml");
    std::fs::write(&valid, VALID).unwrap();
    std::fs::write(&broken, BROKEN).unwrap();
    let agent = dir.path().join("agent.toml");
    std::fs::write(&agent, AGENT).unwrap();
    let request = dir.path().join("request-tools.toml");
    std::fs::write(&request, REQUEST_TOOLS).unwrap();
    let mcp = dir.path().join("mcp.toml");
    std::fs::write(&mcp, mcp_composition()).unwrap();
    let mut paths = Vec::new();
    leaves(&chassis::cli::Cli::command(), Vec::new(), &mut paths);
    assert!(paths.len() >= 7, "{paths:?}");
    // Commands that read the store come after `publish`, which creates it.
    paths.sort_by_key(|p| p.first().is_some_and(|c| c != "publish"));
    for path in paths {
        let key = path.join(" ");
        let Some(invocations) = invocations(&key) else {
            panic!("command `{key}` has no canary invocation: add one to tests/it/canary.rs");
        };
        for file in [&valid, &broken] {
            for inv in &invocations {
                let out = dir.path().join("out.json");
                // `publish` creates the store beside the composition.
                let state = dir.path().join(".chassis/state.db");
                let args: Vec<String> = inv
                    .iter()
                    .map(|a| {
                        a.replace("{F}", file.to_str().unwrap())
                            .replace("{A}", agent.to_str().unwrap())
                            .replace("{M}", mcp.to_str().unwrap())
                            .replace("{R}", request.to_str().unwrap())
                            .replace("{OUT}", out.to_str().unwrap())
                            .replace("{STATE}", state.to_str().unwrap())
                    })
                    .collect();
                let mut all: Vec<&str> = vec!["--color", "never", "-vvv"];
                all.extend(args.iter().map(String::as_str));
                let r = run_in(
                    &root(),
                    &all,
                    &[("DB_PASSWORD", CANARY), ("CHASSIS_CANARY", CANARY)],
                );
                for (stream, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
                    assert!(
                        !text.contains(CANARY),
                        "`{}` leaked the canary on {stream}:\n{text}",
                        all.join(" ")
                    );
                }
                if state.exists() {
                    let bytes = std::fs::read(&state).unwrap();
                    assert!(
                        !bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()),
                        "`{}` stored the canary",
                        all.join(" ")
                    );
                }
                if out.exists() {
                    let written = std::fs::read_to_string(&out).unwrap();
                    assert!(
                        !written.contains(CANARY),
                        "`{}` wrote the canary",
                        all.join(" ")
                    );
                    std::fs::remove_file(&out).unwrap();
                }
            }
        }
    }
    // What the plugins wrote: the audit hook's lines (it scrubs with the
    // harness's redactor, which learned the secret) and the MCP lock.
    let audit =
        std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("the audit hook ran");
    assert!(audit.contains("before_tool_execute"), "{audit}");
    assert!(
        !audit.contains(CANARY),
        "the audit file has the canary:\n{audit}"
    );
    let lock =
        std::fs::read_to_string(dir.path().join("chassis.lock")).expect("the lock was written");
    assert!(!lock.contains(CANARY), "{lock}");
}

/// A second canary, reached through the `secrets.env` prefix.
const PREFIX_CANARY: &str = "sk-canary-prefix-1b2c3d";

/// An agent whose tool reads secrets through `ctx.secrets` (its scope's
/// `secrets.env` provider, by prefix and by alias) and answers with them:
/// nothing else in the composition resolves them, so only that lookup can
/// teach the run's redactor.
const SECRET_ECHO: &str = r#"version = 1

[plugins.vault]
version = "1.0.0"
kind = "testing.secret-echo"
[[plugins.vault.tools]]
name = "reveal"
description = "Echoes a secret of the run's scope."
args = { type = "object", properties = { name = { type = "string" } }, required = ["name"] }

[entries.vault]

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "reveal", args = { name = "api.token" } }]
[[entries.model.config.turns]]
tool_calls = [{ name = "reveal", args = { name = "db.password" } }]
[[entries.model.config.turns]]
text = "done"

[entries.audit]
plugin = "audit"
config = { path = "audit.jsonl" }

[entries.agent-secrets]
plugin = "secrets.env"
scope = "/agents/a"
config = { prefix = "VAULT_", aliases = { "db.password" = "VAULT_DB_PW" } }

[agents.a]
default_input = "go"
"#;

#[test]
fn a_secret_a_tool_reads_through_its_context_appears_in_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vault.toml");
    std::fs::write(&file, SECRET_ECHO).unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (f, trace, record, state) = (
        path("vault.toml"),
        path("trace.jsonl"),
        path("record.json"),
        path(".chassis/state.db"),
    );
    let env = [("VAULT_DB_PW", CANARY), ("VAULT_API_TOKEN", PREFIX_CANARY)];
    let leaks = |what: &str, bytes: &[u8]| {
        for canary in [CANARY, PREFIX_CANARY] {
            assert!(
                !bytes.windows(canary.len()).any(|w| w == canary.as_bytes()),
                "{what} has the canary `{canary}`:\n{}",
                String::from_utf8_lossy(bytes)
            );
        }
    };
    let chassis = |args: &[&str]| {
        let mut all = vec!["--color", "never", "-vvv"];
        all.extend_from_slice(args);
        let r = run_in(dir.path(), &all, &env);
        let what = all.join(" ");
        leaks(&format!("the stdout of `{what}`"), r.stdout.as_bytes());
        leaks(&format!("the stderr of `{what}`"), r.stderr.as_bytes());
        r
    };

    let run = chassis(&[
        "--format", "json", "run", &f, "--yes", "--trace", &trace, "--record", &record, "--state",
        &state,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The tool did receive both values: it answered their lengths, and the
    // values themselves are redacted where it echoed them.
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let answers: Vec<serde_json::Value> = doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        answers,
        [
            serde_json::json!({ "echo": "<redacted>", "length": PREFIX_CANARY.len() }),
            serde_json::json!({ "echo": "<redacted>", "length": CANARY.len() }),
        ],
        "{}",
        run.stdout
    );
    for written in [&trace, &record, &state, &path("audit.jsonl")] {
        let bytes = std::fs::read(written).unwrap_or_else(|e| panic!("{written}: {e}"));
        leaks(written, &bytes);
    }
    let trace_text = std::fs::read_to_string(&trace).unwrap();
    assert!(trace_text.contains("reveal"), "{trace_text}");

    // Follow-ups: the recording replayed, the run read back from the store.
    // Plain `--replay`: the model call after the secret-bearing tool answer
    // is keyed on the redacted conversation, which is what a replay reads
    // back, so it hits without the live fallback and answers the same.
    let replay = chassis(&["--format", "json", "run", &f, "--yes", "--replay", &record]);
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    // Under `--format json` progress is JSON lines: replayed calls say so.
    assert!(
        replay.stderr.contains("\"replayed\":true"),
        "{}",
        replay.stderr
    );
    let replayed: serde_json::Value = serde_json::from_str(&replay.stdout).unwrap();
    assert_eq!(doc["answer"], "done", "{}", run.stdout);
    assert_eq!(replayed["answer"], doc["answer"], "{}", replay.stdout);
    assert_eq!(replayed["messages"], doc["messages"], "{}", replay.stdout);
    assert!(
        replayed["tool_calls"]
            .as_array()
            .is_some_and(|c| c.len() == 2 && c.iter().all(|c| c["replayed"] == true)),
        "{}",
        replay.stdout
    );
    chassis(&["runs", "list", "--state", &state]);
    let run_id = doc["run_id"].as_str().unwrap();
    let shown = chassis(&[
        "--format", "json", "runs", "show", run_id, "--state", &state,
    ]);
    assert_eq!(
        shown.code, 0,
        "the run is found by the id it printed: {}",
        shown.stderr
    );
    chassis(&["run", &f]);
    leaks("the store", &std::fs::read(&state).unwrap());
    leaks(
        "the audit file",
        &std::fs::read(path("audit.jsonl")).unwrap(),
    );
}

/// The `--input` names a secret that the run learns only later (a tool
/// looks it up): the recording, redacted when the run ends, hides it, and
/// the replay, which runs no tool, still finds every call and hides it too.
#[test]
fn a_replay_whose_input_holds_a_secret_learned_later_finds_its_calls() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vault.toml");
    std::fs::write(&file, SECRET_ECHO).unwrap();
    let f = file.to_str().unwrap();
    let record = dir.path().join("record.json");
    let r = record.to_str().unwrap();
    let env = [("VAULT_DB_PW", CANARY), ("VAULT_API_TOKEN", PREFIX_CANARY)];
    let input = format!("rotate the token {PREFIX_CANARY} today");
    let run = |extra: &[&str]| {
        let mut all = vec!["--format", "json", "run", f, "--yes", "--input", &input];
        all.extend_from_slice(extra);
        let out = run_in(dir.path(), &all, &env);
        for canary in [CANARY, PREFIX_CANARY] {
            assert!(
                !out.stdout.contains(canary) && !out.stderr.contains(canary),
                "{}\n{}",
                out.stdout,
                out.stderr
            );
        }
        out
    };
    let recorded = run(&["--record", r]);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(!text.contains(PREFIX_CANARY), "{text}");
    assert!(text.contains("rotate the token <redacted> today"), "{text}");

    let replayed = run(&["--replay", r]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let a: serde_json::Value = serde_json::from_str(&recorded.stdout).unwrap();
    let b: serde_json::Value = serde_json::from_str(&replayed.stdout).unwrap();
    assert_eq!(a["answer"], b["answer"]);
    assert_eq!(a["messages"], b["messages"]);
    assert!(
        b["tool_calls"]
            .as_array()
            .is_some_and(|c| !c.is_empty() && c.iter().all(|c| c["replayed"] == true)),
        "{}",
        replayed.stdout
    );

    // Another input is still another conversation: a miss, exit 3.
    let other = run_in(
        dir.path(),
        &[
            "run",
            f,
            "--yes",
            "--input",
            "rotate nothing",
            "--replay",
            r,
        ],
        &env,
    );
    assert_eq!(other.code, 3, "{}", other.stderr);
    assert!(other.stderr.contains("replay missing"), "{}", other.stderr);
}
