//! Process plugins: real `python3` processes speaking the plugin protocol
//! through the Python SDK (`sdk/python/chassis_plugin.py`), mounted by the
//! real binary. Nothing is mocked: each test writes a plugin beside a
//! composition, runs `chassis`, and reads what a user would see.

use std::path::Path;

use serde_json::Value;

use crate::harness::{Run, python, run_in};

/// A folder with the SDK vendored and `files` written.
fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let sdk = crate::harness::root().join("sdk/python/chassis_plugin.py");
    std::fs::copy(sdk, dir.path().join("chassis_plugin.py")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text.replace("{PYTHON}", &python())).unwrap();
    }
    dir
}

/// Replace the composition in `dir` with `toml` (`{PYTHON}` filled in).
fn write_composition(dir: &Path, toml: &str) {
    std::fs::write(
        dir.join("composition.toml"),
        toml.replace("{PYTHON}", &python()),
    )
    .unwrap();
}

/// Run chassis in `dir`; afterwards no process it started is left there.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--color", "never"];
    all.extend_from_slice(args);
    let out = run_in(dir, &all, env);
    assert_no_process_in(dir);
    out
}

/// No process has `dir` as its working directory (a plugin process left
/// behind would).
fn assert_no_process_in(dir: &Path) {
    let dir = dir.canonicalize().unwrap();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd == dir))
        .map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).replace('\0', " ")
        })
        .collect();
    assert!(
        left.is_empty(),
        "processes left in {}: {left:?}",
        dir.display()
    );
}

/// The document a `run --format json` printed last (after its progress lines).
fn document(out: &Run) -> Value {
    let start = out.stdout.find("\n{\n").map_or(0, |i| i + 1);
    serde_json::from_str(&out.stdout[start..])
        .unwrap_or_else(|e| panic!("no run document ({e}):\n{}\n{}", out.stdout, out.stderr))
}

/// `chassis --format json run composition.toml ARGS` in `dir`, which must
/// answer (exit 0): its run document.
fn run_ok(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut all = vec!["--format", "json", "run", "composition.toml"];
    all.extend_from_slice(args);
    let out = run(dir, &all, env);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    document(&out)
}

/// `chassis tools composition.toml --update-lock` in `dir`, which must
/// succeed: what it printed.
fn pin(dir: &Path) -> Run {
    let out = run(dir, &["tools", "composition.toml", "--update-lock"], &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out
}

/// Vendor the compiled TypeScript SDK into `dir` (for `node` plugins).
fn with_js_sdk(dir: &Path) {
    std::fs::copy(
        crate::harness::root().join("sdk/typescript/chassis_plugin.js"),
        dir.join("chassis_plugin.js"),
    )
    .unwrap();
}

const GREETER: &str = r#"
from chassis_plugin import plugin, ToolPolicy

@plugin(name="greeter", version="1.0.0", provides={"greeting": "1.0.0"})
def greeter(ctx):
    print("print() during setup goes to stderr")
    style = ctx.config.get("style", "plain")
    def greet(name: str, excited: bool = False) -> str:
        """Greet someone by name."""
        print("print() inside a tool goes to stderr too")
        return f"Hello, {name}{'!' if excited else '.'} ({style})"
    ctx.tools.register(greet, policy=ToolPolicy(idempotent=True))
    ctx.capabilities.provide("greeting", {"style": style}, version="1.0.0")

if __name__ == "__main__":
    greeter.run()
"#;

const GREETER_TOML: &str = r#"version = 1

[plugins.greeter]
version = "1.0.0"
command = ["{PYTHON}", "greeter.py"]
provides = { greeting = "1.0.0" }

[[plugins.greeter.tools]]
name = "greet"
description = "Greet someone by name."
args = { type = "object", properties = { name = { type = "string" }, excited = { type = "boolean" } }, required = ["name"], additionalProperties = false }

[policy.tools.greet]
idempotent = true

[entries.greeter]
plugin = "greeter"
config.style = "warm"

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "greet", args = { name = "Ada", excited = true } }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#;

/// The transcript's tool results, as the model read them.
fn tool_results(doc: &Value) -> Vec<String> {
    doc["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            m["content"]
                .as_str()
                .map_or_else(|| m["content"].to_string(), str::to_owned)
        })
        .collect()
}

#[test]
fn a_python_plugin_serves_its_tool_to_an_agent() {
    let dir = workspace(&[("greeter.py", GREETER), ("composition.toml", GREETER_TOML)]);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let doc = document(&out);
    assert_eq!(doc["answer"], "done");
    // The config reached the plugin; print() broke nothing.
    assert_eq!(
        tool_results(&doc),
        vec!["Hello, Ada! (warm)".to_owned()],
        "{doc:#}"
    );
    // The plugin's capability is in the generation it ran on.
    assert_eq!(doc["composition"]["capabilities"]["greeting"][0], "1.0.0");
}

#[test]
fn editing_the_plugin_file_changes_the_digest_and_the_pure_commands_start_nothing() {
    let dir = workspace(&[("greeter.py", GREETER), ("composition.toml", GREETER_TOML)]);
    let digest = |dir: &Path| {
        let out = run(
            dir,
            &["--format", "json", "snapshot", "composition.toml"],
            &[],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        (
            doc["digests"]["semantic_digest"]
                .as_str()
                .unwrap()
                .to_owned(),
            doc["snapshot"]["metadata"]["process_plugins"]["greeter"].clone(),
        )
    };
    let (before, program) = digest(dir.path());
    assert_eq!(program["command"][1], "greeter.py", "{program}");
    assert_eq!(program["files"]["greeter.py"].as_str().unwrap().len(), 64);
    // A plugin that would announce itself if started: `check` and
    // `snapshot` never start it.
    let marker = dir.path().join("started");
    let edited = GREETER.replace(
        "from chassis_plugin import",
        &format!(
            "open({:?}, 'w').close()\nfrom chassis_plugin import",
            marker.to_str().unwrap()
        ),
    );
    std::fs::write(dir.path().join("greeter.py"), edited).unwrap();
    let (after, _) = digest(dir.path());
    assert_ne!(before, after, "editing greeter.py is a change");
    // The diff says which program changed.
    let original = workspace(&[("greeter.py", GREETER), ("composition.toml", GREETER_TOML)]);
    let old = original.path().join("composition.toml");
    let diff = run(
        dir.path(),
        &[
            "--format",
            "json",
            "diff",
            "generations",
            old.to_str().unwrap(),
            "composition.toml",
        ],
        &[],
    );
    assert_eq!(diff.code, 0, "{}", diff.stderr);
    let changes: Value = serde_json::from_str(&diff.stdout).unwrap();
    let programs: Vec<&Value> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["subject"] == "program:greeter")
        .collect();
    assert_eq!(programs.len(), 1, "{changes:#}");
    assert_eq!(programs[0]["reason"], "program_changed");
    let check = run(dir.path(), &["check", "composition.toml"], &[]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    assert!(!marker.exists(), "a pure command started the plugin");
}

/// `./plugin.py` and `plugin.py` in `files` are one file (as two spellings
/// of one include are): no change. A real edit shows only what differs,
/// not the unchanged command, variables and pinned tools.
#[test]
fn two_spellings_of_a_plugin_file_are_one_file_and_a_program_row_shows_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = run(d, &["plugin", "new", "greeter", "--lang", "python"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    std::fs::write(
        d.join("a.toml"),
        "version = 1\ninclude = [\"greeter/plugin.toml\"]\n",
    )
    .unwrap();
    let b = d.join("b");
    std::fs::create_dir_all(b.join("greeter")).unwrap();
    std::fs::copy(d.join("a.toml"), b.join("a.toml")).unwrap();
    for f in ["plugin.toml", "plugin.py", "chassis_plugin.py"] {
        std::fs::copy(d.join("greeter").join(f), b.join("greeter").join(f)).unwrap();
    }
    let manifest = b.join("greeter/plugin.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("files = [\"plugin.py\""), "{text}");
    std::fs::write(
        &manifest,
        text.replace("files = [\"plugin.py\"", "files = [\"./plugin.py\""),
    )
    .unwrap();
    let diff = |d: &Path| {
        run(
            d,
            &["diff", "generations", "a.toml", "b/a.toml", "--exit-code"],
            &[],
        )
    };
    let out = diff(d);
    assert_eq!(out.code, 0, "{}", out.transcript());
    assert!(out.stdout.contains("no semantic changes"), "{}", out.stdout);

    let code = b.join("greeter/plugin.py");
    let mut edited = std::fs::read_to_string(&code).unwrap();
    edited.push_str("# edited\n");
    std::fs::write(&code, edited).unwrap();
    let out = diff(d);
    assert_eq!(out.code, 1, "{}", out.transcript());
    let row = out
        .stdout
        .lines()
        .find(|l| l.contains("program:greeter"))
        .unwrap_or_else(|| panic!("no program row:\n{}", out.stdout));
    assert!(row.contains("files.plugin.py: "), "{row}");
    for unchanged in ["command", "env", "chassis_plugin.py", "./plugin.py"] {
        assert!(
            !row.contains(unchanged),
            "{unchanged} did not change: {row}"
        );
    }
}

#[test]
fn a_declaration_that_differs_from_the_manifest_fails_setup_with_the_difference() {
    let plugin = GREETER.replace("version=\"1.0.0\", provides", "version=\"1.1.0\", provides");
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", GREETER_TOML)]);
    let out = run(dir.path(), &["run", "composition.toml"], &[]);
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("version: the manifest says `1.0.0`, the plugin `1.1.0`"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("entry `greeter`"), "{}", out.stderr);
}

#[test]
fn a_promised_capability_not_registered_is_a_contract_error() {
    let plugin = GREETER.replace(
        "    ctx.capabilities.provide(\"greeting\", {\"style\": style}, version=\"1.0.0\")\n",
        "",
    );
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", GREETER_TOML)]);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("promised greeting@1"), "{said}");
}

#[test]
fn a_tool_the_manifest_does_not_declare_is_refused_with_the_toml_to_add() {
    let plugin = GREETER.replace(
        "    ctx.capabilities.provide(",
        "    def shout(text: str) -> str:\n        \"\"\"Shout.\"\"\"\n        return text.upper()\n    ctx.tools.register(shout)\n    ctx.capabilities.provide(",
    );
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", GREETER_TOML)]);
    let out = run(dir.path(), &["run", "composition.toml"], &[]);
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("tool `shout` is not declared"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("[[plugins.greeter.tools]]"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("name = \"shout\""), "{}", out.stderr);
}

/// The greeter whose setup runs `setup` (Python, indented four spaces)
/// instead of reading its style, and its composition with `config.token`
/// the secret `PLUGIN_TOKEN`.
fn greeter_with_setup_reading_a_secret(setup: &str) -> (String, String) {
    let plugin = GREETER.replace("    style = ctx.config.get(\"style\", \"plain\")\n", setup);
    let toml = GREETER_TOML.replace(
        "config.style = \"warm\"",
        "config.style = \"warm\"\nconfig.token = { secret = \"PLUGIN_TOKEN\" }",
    );
    (plugin, toml)
}

#[test]
fn a_crash_at_setup_names_the_entry_with_its_stderr_redacted() {
    let (plugin, toml) = greeter_with_setup_reading_a_secret(
        "    import sys\n    print('token is ' + ctx.config['token'], file=sys.stderr)\n    raise SystemExit(7)\n",
    );
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", &toml)]);
    let canary = "sk-canary-plugin-5e1f";
    let out = run(
        dir.path(),
        &["run", "composition.toml"],
        &[("PLUGIN_TOKEN", canary)],
    );
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("entry `greeter`"), "{}", out.stderr);
    // How it ended, not only that it went quiet.
    assert!(out.stderr.contains("exited with code 7"), "{}", out.stderr);
    assert!(
        out.stderr.contains("token is"),
        "the last stderr lines: {}",
        out.stderr
    );
    assert!(
        !out.stderr.contains(canary) && !out.stdout.contains(canary),
        "{}",
        out.stderr
    );
}

/// A plugin without the SDK that prints to stdout before answering.
const CHATTY: &str = r#"
import sys
sys.stdout.write("hello, I am a plugin\n")
sys.stdout.flush()
sys.stdin.readline()
"#;

/// A plugin without the SDK that speaks protocol 2.0.
const FUTURE: &str = r#"
import json, sys
line = sys.stdin.readline()
req = json.loads(line)
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {
    "protocol_version": "2.0", "plugin": {"name": "greeter", "version": "1.0.0"}}}) + "\n")
sys.stdout.flush()
sys.stdin.readline()
"#;

#[test]
fn a_line_that_is_not_json_rpc_and_an_unknown_major_are_refused() {
    for (script, expected) in [
        (CHATTY, "not JSON: `hello, I am a plugin`"),
        (
            FUTURE,
            "speaks plugin protocol 2.0; this chassis speaks 1.3",
        ),
    ] {
        let dir = workspace(&[("greeter.py", script), ("composition.toml", GREETER_TOML)]);
        let out = run(dir.path(), &["run", "composition.toml"], &[]);
        assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(expected), "{expected}: {}", out.stderr);
    }
}

/// A Python plugin that prints to the real stdout while it loads (before
/// the SDK takes stdout over), after a line of its own on stderr.
const STRAY_PY: &str = r#"
import sys, time
print("greeter: the word list is missing", file=sys.stderr, flush=True)
print("loading words...", flush=True)
time.sleep(0.1)  # chassis has read the stray line when the SDK answers
from chassis_plugin import plugin

@plugin(name="greeter", version="1.0.0", provides={"greeting": "1.0.0"})
def greeter(ctx):
    pass

if __name__ == "__main__":
    greeter.run()
"#;

/// The same in JavaScript: `process.stdout.write` during setup.
const STRAY_JS: &str = r#"
const { plugin } = require("./chassis_plugin");
plugin({ name: "greeter", version: "1.0.0", provides: { greeting: "1.0.0" } }, async (ctx) => {
  console.error("greeter: the word list is missing");
  process.stdout.write("loading words...\n");
  await new Promise((done) => setTimeout(done, 100));
  ctx.capabilities.provide("greeting", { version: "1.0.0" });
}).run();
"#;

#[test]
fn a_stray_line_on_stdout_quotes_the_plugins_own_stderr_not_an_sdk_stack() {
    // chassis refuses the line and stops reading; the SDK's next answer
    // finds the pipe closed. What chassis quotes is what the author wrote,
    // not a BrokenPipeError traceback or an EPIPE stack.
    for (program, file, script) in [
        ("{PYTHON}", "greeter.py", STRAY_PY),
        ("node", "greeter.js", STRAY_JS),
    ] {
        let toml = GREETER_TOML.replace(
            "{PYTHON}\", \"greeter.py",
            &format!("{program}\", \"{file}"),
        );
        let dir = workspace(&[(file, script), ("composition.toml", &toml)]);
        with_js_sdk(dir.path());
        let out = run(dir.path(), &["run", "composition.toml"], &[]);
        assert_eq!(out.code, 3, "{file}: {}\n{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("not JSON: `loading words...`"),
            "{file}: {}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("its last stderr lines:\n    greeter: the word list is missing"),
            "{file}: {}",
            out.stderr
        );
        for stack in ["Traceback", "BrokenPipe", "EPIPE", "node:", "    at "] {
            assert!(
                !out.stderr.contains(stack),
                "{file}: {stack}: {}",
                out.stderr
            );
        }
    }
}

#[test]
fn a_missing_program_is_named() {
    let toml = GREETER_TOML.replace("{PYTHON}", "/nonexistent/python9");
    let dir = workspace(&[("greeter.py", GREETER), ("composition.toml", &toml)]);
    let out = run(dir.path(), &["run", "composition.toml"], &[]);
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("/nonexistent/python9"),
        "{}",
        out.stderr
    );
}

/// A tool that crashes the process, one that hangs past its deadline, and
/// one that reports the environment and configuration it was given.
const FAULTY: &str = r#"
import json, os, time
from chassis_plugin import plugin, ToolPolicy

@plugin(name="greeter", version="1.0.0", provides={"greeting": "1.0.0"})
def greeter(ctx):
    def greet(name: str, excited: bool = False) -> str:
        """Greet someone by name."""
        if name == "crash":
            os._exit(9)
        if name == "hang":
            time.sleep(60)
        return json.dumps({"env": dict(os.environ), "config": ctx.config})
    ctx.tools.register(greet, policy=ToolPolicy(idempotent=True, timeout_seconds=1))
    ctx.capabilities.provide("greeting", None, version="1.0.0")

if __name__ == "__main__":
    greeter.run()
"#;

fn faulty_composition(calls: &[&str]) -> String {
    let turns: String = calls
        .iter()
        .map(|n| {
            format!(
                "[[entries.model.config.turns]]\ntool_calls = [{{ name = \"greet\", args = {{ name = \"{n}\" }} }}]\n"
            )
        })
        .collect();
    GREETER_TOML
        .replace(
            "[[entries.model.config.turns]]\ntool_calls = [{ name = \"greet\", args = { name = \"Ada\", excited = true } }]\n",
            &turns,
        )
        .replace("idempotent = true\n", "idempotent = true\ntimeout_seconds = 1\n")
}

#[test]
fn a_hang_meets_its_deadline_and_a_crash_mid_call_is_a_tool_error() {
    let toml = faulty_composition(&["hang", "crash"]);
    let dir = workspace(&[("greeter.py", FAULTY), ("composition.toml", &toml)]);
    let started = std::time::Instant::now();
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the hang was waited for"
    );
    let doc = document(&out);
    let results = tool_results(&doc);
    assert_eq!(results.len(), 2, "{doc:#}");
    assert!(
        results[0].contains("timed out") || results[0].contains("deadline"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("is gone while answering `tools/call`: the process exited with code 9"),
        "{}",
        results[1]
    );
    assert_eq!(doc["answer"], "done");
}

/// A model provider that writes a line to stderr and then kills itself
/// with `SIGKILL` while it answers `complete`.
const DYING_MODEL: &str = r#"
import os, signal, sys
from chassis_plugin import plugin

@plugin(name="py-model", version="1.0.0", provides={"model": "1.0.0"})
def py_model(ctx):
    def complete(messages: list, tools: list = (), options: dict = None) -> dict:
        "One assistant turn."
        print("the model ran out of memory", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    ctx.capabilities.provide("model", {"name": "dying"}, version="1.0.0", methods=[complete])

if __name__ == "__main__":
    py_model.run()
"#;

#[test]
fn a_crash_during_a_call_says_how_the_process_ended_and_quotes_its_stderr() {
    // A tool whose process says something quoting its secret on stderr and
    // exits with code 7 while it answers: the model reads a tool error
    // naming the entry, how the process ended and its last stderr lines.
    let plugin = FAULTY.replace(
        "            os._exit(9)\n",
        "            import sys\n            print('dying, token ' + ctx.config['token'], file=sys.stderr, flush=True)\n            os._exit(7)\n",
    );
    let toml = faulty_composition(&["crash"]).replace(
        "config.style = \"warm\"",
        "config.style = \"warm\"\nconfig.token = { secret = \"PLUGIN_TOKEN\" }",
    );
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", &toml)]);
    let canary = "sk-canary-crash-77d1";
    let env = [("PLUGIN_TOKEN", canary)];
    let said = |text: &str| {
        for part in [
            "the process plugin `greeter` (entry `greeter`",
            "is gone while answering `tools/call`: the process exited with code 7",
            "its last stderr lines:\n    dying, token",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert!(!text.contains(canary), "{text}");
    };
    let out = run(dir.path(), &["run", "composition.toml"], &env);
    assert_eq!(
        out.code, 0,
        "the model read the error: {}\n{}",
        out.stdout, out.stderr
    );
    said(&out.stderr);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &env,
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let doc = document(&out);
    said(&tool_results(&doc)[0]);
    said(doc["tool_calls"][0]["error"].as_str().unwrap_or_default());
    assert!(!out.stdout.contains(canary) && !out.stderr.contains(canary));

    // The model provider killed by a signal while answering `complete`
    // (a `capability/invoke`): the run fails, exit 3, and says the same.
    let toml = "version = 1\n\n[plugins.py-model]\nversion = \"1.0.0\"\ncommand = [\"{PYTHON}\", \"py_model.py\"]\nprovides = { model = \"1.0.0\" }\n\n[entries.py-model]\nplugin = \"py-model\"\n\n[agents.a]\nprompt = \"p\"\ndefault_input = \"Ada\"\n";
    let dir = workspace(&[("py_model.py", DYING_MODEL), ("composition.toml", toml)]);
    let said = |text: &str| {
        for part in [
            "the process plugin `py-model` (entry `py-model`",
            "is gone while answering `capability/invoke`: the process was ended by signal 9 (SIGKILL)",
            "its last stderr lines:\n    the model ran out of memory",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    };
    let out = run(dir.path(), &["run", "composition.toml"], &[]);
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    said(&out.stderr);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    let doc = document(&out);
    assert_eq!(doc["stop"]["kind"], "model_failed", "{doc:#}");
    said(doc["stop"]["error"].as_str().unwrap_or_default());
}

#[test]
fn a_plugin_sees_the_allowed_environment_and_only_its_own_secrets() {
    // Another entry references the canary as a secret: the plugin, which
    // does not, must see it nowhere (environment, configuration).
    let toml = faulty_composition(&["env"]).replace(
        "[entries.greeter]",
        "[plugins.other]\nversion = \"1.0.0\"\n\n[entries.other]\nplugin = \"other\"\nconfig.password = { secret = \"OTHER_SECRET\" }\n\n[entries.greeter]",
    );
    let dir = workspace(&[("greeter.py", FAULTY), ("composition.toml", &toml)]);
    let canary = "sk-canary-env-91c2";
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[("OTHER_SECRET", canary), ("PLUGIN_EXTRA", "x")],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let doc = document(&out);
    let raw = &tool_results(&doc)[0];
    assert!(!raw.contains(canary) && !raw.contains("<redacted"), "{raw}");
    let seen: Value = serde_json::from_str(raw).unwrap();
    assert_eq!(seen["config"], serde_json::json!({"style": "warm"}));
    let env = seen["env"].as_object().unwrap();
    assert!(
        !env.contains_key("OTHER_SECRET") && !env.contains_key("PLUGIN_EXTRA"),
        "{env:?}"
    );
    assert!(
        env.contains_key("PATH") && env.contains_key("HOME"),
        "{env:?}"
    );
    assert!(!out.stdout.contains(canary));
    // Listed in `env`, a variable passes.
    let listed = toml
        .replace("command = [", "env = [\"PLUGIN_EXTRA\"]\ncommand = [")
        .replace("{PYTHON}", &python());
    std::fs::write(dir.path().join("composition.toml"), listed).unwrap();
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[("PLUGIN_EXTRA", "x"), ("OTHER_SECRET", canary)],
    );
    let seen: Value = serde_json::from_str(&tool_results(&document(&out))[0]).unwrap();
    assert_eq!(seen["env"]["PLUGIN_EXTRA"], "x");
}

#[test]
fn a_crashed_plugin_restarts_and_a_changed_one_asks_for_a_new_generation() {
    // `crash` kills the process; the next call waits for the restart.
    let toml = faulty_composition(&["crash", "Ada"]);
    let dir = workspace(&[("greeter.py", FAULTY), ("composition.toml", &toml)]);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = tool_results(&document(&out));
    assert!(
        results[0].contains("is gone while answering `tools/call`: the process exited with code 9"),
        "{}",
        results[0]
    );
    let seen: Value = serde_json::from_str(&results[1]).expect("the restarted plugin answered");
    assert!(seen["env"].is_object());
    // A restarted process that registers something else is refused.
    let changing = FAULTY.replace(
        "        \"\"\"Greet someone by name.\"\"\"\n        if name == \"crash\":",
        "        \"\"\"Greet someone by name.\"\"\"\n        if name == \"crash\":\n            open('crashed', 'w').close()",
    ).replace(
        "    ctx.tools.register(greet,",
        "    if os.path.exists('crashed'):\n        greet.__doc__ = 'Something else.'\n    ctx.tools.register(greet,",
    );
    let dir = workspace(&[("greeter.py", &changing), ("composition.toml", &toml)]);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = tool_results(&document(&out));
    assert!(
        results[1].contains("publish a new generation"),
        "{}",
        results[1]
    );
}

const NOTES_DB: &str = r#"
import sqlite3, threading
from chassis_plugin import plugin, Method

@plugin(name="notes-db", version="1.0.0", provides={"database": "1.0.0"})
def notes_db(ctx):
    db = sqlite3.connect(":memory:", check_same_thread=False)
    lock = threading.Lock()
    db.execute("create table notes (text text)")

    def insert(text: str) -> int:
        "Store a note; the number of notes."
        with lock:
            db.execute("insert into notes values (?)", (text,))
            return db.execute("select count(*) from notes").fetchone()[0]

    def search(word: str) -> list:
        "Notes containing a word."
        with lock:
            rows = db.execute("select text from notes where text like ?", (f"%{word}%",))
            return [r[0] for r in rows]

    ctx.capabilities.provide(
        "database", {"engine": "sqlite"}, version="1.0.0",
        methods=[Method(insert, permissions=["database.write"]),
                 Method(search, permissions=["database.read"])],
    )

if __name__ == "__main__":
    notes_db.run()
"#;

const NOTES: &str = r#"
from chassis_plugin import plugin, InvokeError

@plugin(name="notes", version="1.0.0", requires={"database": ">=1,<2"})
def notes(ctx):
    db = ctx.require("database")

    def remember(text: str) -> str:
        "Remember a note."
        try:
            n = db.insert(text=text)
        except InvokeError as e:
            return f"refused ({e.code}): {e}"
        return f"{n} notes in {db.value['engine']}"

    def recall(word: str) -> str:
        "Recall notes with a word."
        return "; ".join(db.search(word=word))

    ctx.tools.register(remember)
    ctx.tools.register(recall)

if __name__ == "__main__":
    notes.run()
"#;

const NOTES_TOML: &str = r#"version = 1

[plugins.notes-db]
version = "1.0.0"
command = ["{PYTHON}", "notes_db.py"]
provides = { database = "1.0.0" }

[plugins.notes]
version = "1.0.0"
command = ["{PYTHON}", "notes.py"]
requires = { database = ">=1,<2" }
permissions = ["database.read", "database.write"]

[[plugins.notes.tools]]
name = "recall"
description = "Recall notes with a word."
args = { type = "object", properties = { word = { type = "string" } }, required = ["word"], additionalProperties = false }

[[plugins.notes.tools]]
name = "remember"
description = "Remember a note."
args = { type = "object", properties = { text = { type = "string" } }, required = ["text"], additionalProperties = false }

[policy]
grants = ["database.read", "database.write"]
[policy.tools.recall]
idempotent = true
[policy.tools.remember]
idempotent = true

[entries.notes-db]
plugin = "notes-db"

[entries.notes]
plugin = "notes"

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "remember", args = { text = "buy milk" } }]
[[entries.model.config.turns]]
tool_calls = [{ name = "remember", args = { text = "buy bread" } }]
[[entries.model.config.turns]]
tool_calls = [{ name = "recall", args = { word = "milk" } }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#;

/// The notes consumer, calling the database at setup: outside any run.
const NOTES_AT_SETUP: &str = r#"
from chassis_plugin import plugin, InvokeError

@plugin(name="notes", version="1.0.0", requires={"database": ">=1,<2"})
def notes(ctx):
    db = ctx.require("database")
    try:
        said = f"{db.insert(text='at setup')} notes"
    except InvokeError as e:
        said = f"refused ({e.code}): {e}"

    def remember(text: str) -> str:
        "Remember a note."
        return said

    def recall(word: str) -> str:
        "Recall notes with a word."
        return ""

    ctx.tools.register(remember)
    ctx.tools.register(recall)

if __name__ == "__main__":
    notes.run()
"#;

#[test]
fn a_capability_call_outside_any_run_is_judged_by_the_compositions_policy() {
    let dir = workspace(&[
        ("notes_db.py", NOTES_DB),
        ("notes.py", NOTES_AT_SETUP),
        ("composition.toml", NOTES_TOML),
    ]);
    let said = |toml: &str| {
        write_composition(dir.path(), toml);
        let out = run(
            dir.path(),
            &["--format", "json", "run", "composition.toml"],
            &[],
        );
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        tool_results(&document(&out))[0].clone()
    };
    // Granted: the setup's insert goes through.
    assert_eq!(said(NOTES_TOML), "1 notes");
    // Declared by the manifest but granted by nothing: refused (fail
    // closed), as inside a run.
    let refused = said(&NOTES_TOML.replace(
        "grants = [\"database.read\", \"database.write\"]",
        "grants = [\"database.read\"]",
    ));
    assert!(
        refused.starts_with("refused (-32001)")
            && refused.contains("database.write")
            && refused.contains("outside any run"),
        "{refused}"
    );
    // In a scope a `policy` entry governs (it judges inside runs), a call
    // outside any run fails closed, whatever it grants.
    let governed = NOTES_TOML.replace(
        "[entries.notes]\nplugin = \"notes\"",
        "[scopes.\"/team\"]\n\n[entries.team-policy]\nplugin = \"policy\"\nscope = \"/team\"\nconfig = { grants = [\"database.read\", \"database.write\"] }\n\n[entries.notes]\nplugin = \"notes\"\nscope = \"/team\"",
    );
    assert!(governed.contains("[entries.team-policy]"));
    let refused = said(&governed);
    assert!(
        refused.starts_with("refused (-32001)")
            && refused.contains("a `policy` provider governs scope /team"),
        "{refused}"
    );
}

#[test]
fn a_plugin_calls_another_plugins_capability_methods_through_chassis() {
    let dir = workspace(&[
        ("notes_db.py", NOTES_DB),
        ("notes.py", NOTES),
        ("composition.toml", NOTES_TOML),
    ]);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        tool_results(&document(&out)),
        vec![
            "1 notes in sqlite".to_owned(),
            "2 notes in sqlite".to_owned(),
            "buy milk".to_owned()
        ]
    );
    // Without `database.write` declared, `insert` is refused by chassis
    // (fail closed); `search` still works.
    let toml = NOTES_TOML.replace(
        "permissions = [\"database.read\", \"database.write\"]",
        "permissions = [\"database.read\"]",
    );
    write_composition(dir.path(), &toml);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = tool_results(&document(&out));
    assert!(
        results[0].starts_with("refused (-32001)") && results[0].contains("database.write"),
        "{}",
        results[0]
    );
    assert_eq!(results[2], "");

    // Declared but not granted: inside a tool call, the run's scope policy
    // judges the method's permissions too, and fails closed.
    let toml = NOTES_TOML.replace(
        "grants = [\"database.read\", \"database.write\"]",
        "grants = [\"database.read\"]",
    );
    write_composition(dir.path(), &toml);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = tool_results(&document(&out));
    assert!(
        results[0].starts_with("refused (-32001)")
            && results[0].contains("denied by the policy of the run's scope"),
        "{}",
        results[0]
    );
    // One run's grant widens it.
    let out = run(
        dir.path(),
        &[
            "--format",
            "json",
            "run",
            "composition.toml",
            "--grant",
            "database.write",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(tool_results(&document(&out))[0], "1 notes in sqlite");

    // The provider's methods are pinned with the rest, and a provider that
    // now asks more of its callers is a difference the lock shows.
    let pinned = run(
        dir.path(),
        &["tools", "composition.toml", "--update-lock"],
        &[],
    );
    assert_eq!(pinned.code, 0, "{}\n{}", pinned.stdout, pinned.stderr);
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    assert!(
        lock.contains("[[entries.notes-db.methods]]\ncapability = \"database\"\nname = \"insert\""),
        "{lock}"
    );
    std::fs::write(
        dir.path().join("notes_db.py"),
        NOTES_DB.replace(
            "permissions=[\"database.write\"]",
            "permissions=[\"database.admin\"]",
        ),
    )
    .unwrap();
    let live = run(dir.path(), &["tools", "composition.toml", "--live"], &[]);
    assert_eq!(live.code, 1, "{}\n{}", live.stdout, live.stderr);
    assert!(
        live.stdout
            .contains("~ method database.insert (permissions)"),
        "{}",
        live.stdout
    );
}

/// `examples/polyglot`: a Python plugin's SQLite-backed capability used by
/// a JavaScript plugin's tools, as the README runs it (copied, so its store
/// lands in a temporary folder).
#[test]
fn the_polyglot_example_runs_python_and_javascript_plugins_together() {
    let dir = tempfile::tempdir().unwrap();
    let example = crate::harness::root().join("examples/polyglot");
    for f in std::fs::read_dir(&example).unwrap() {
        let f = f.unwrap();
        if f.file_type().unwrap().is_file() {
            std::fs::copy(f.path(), dir.path().join(f.file_name())).unwrap();
        }
    }
    // The real HOME: `python3` may be a pyenv shim, which needs it.
    let home = std::env::var("HOME").unwrap_or_default();
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[("HOME", &home)],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let doc = document(&out);
    assert_eq!(
        tool_results(&doc),
        vec![
            "remembered; 1 note(s) in sqlite".to_owned(),
            "remembered; 2 note(s) in sqlite".to_owned(),
            "buy milk".to_owned()
        ]
    );
    assert_eq!(doc["answer"], "You asked me to buy milk.");

    // `notes` reads the value `notes-db` provides during its setup: the
    // lock's probe and `plugin check` start `notes-db` first and hand it
    // over, as a run does (it was `null`, and the setup threw).
    let out = run(
        dir.path(),
        &["tools", "composition.toml", "--update-lock"],
        &[("HOME", &home)],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    assert!(lock.contains("[entries.notes]"), "{lock}");
    let out = run(
        dir.path(),
        &["plugin", "check", "composition.toml", "--plugin", "notes"],
        &[("HOME", &home)],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("9 checks: 9 passed"), "{}", out.stdout);
    // And a run against the lock it wrote still answers.
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[("HOME", &home)],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);

    // A provider that cannot start is named where its consumer fails (its
    // setup met `null`), not left for the consumer's TypeError to explain.
    std::fs::write(
        dir.path().join("notes_db.py"),
        "import sys\nprint('no database today', file=sys.stderr)\nsys.exit(3)\n",
    )
    .unwrap();
    let out = run(
        dir.path(),
        &["tools", "composition.toml", "--update-lock"],
        &[("HOME", &home)],
    );
    assert_ne!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("its provider `notes-db` could not be started for the probe either"),
        "{}",
        out.stderr
    );
    let out = run(
        dir.path(),
        &["plugin", "check", "composition.toml", "--plugin", "notes"],
        &[("HOME", &home)],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("its provider `notes-db` could not be started to read its value"),
        "{}",
        out.stdout
    );
}

/// The SDKs vendored in the example are the SDKs.
#[test]
fn the_vendored_sdks_are_the_sdks() {
    let root = crate::harness::root();
    for (vendored, sdk) in [
        (
            "examples/polyglot/chassis_plugin.py",
            "sdk/python/chassis_plugin.py",
        ),
        (
            "examples/polyglot/chassis_plugin.js",
            "sdk/typescript/chassis_plugin.js",
        ),
    ] {
        let same = std::fs::read_to_string(root.join(vendored)).unwrap()
            == std::fs::read_to_string(root.join(sdk)).unwrap();
        assert!(same, "{vendored} differs from {sdk}: copy it again");
    }
}

/// `sdk/typescript/chassis_plugin.js` (and `.d.ts`) is what the pinned
/// TypeScript compiles `src/chassis_plugin.ts` to: `npm ci` of
/// `sdk/typescript/package-lock.json` into `<target>/sdk-build/`, then `tsc`.
#[test]
fn the_checked_in_javascript_is_the_compiled_typescript() {
    let root = crate::harness::root();
    let sdk = root.join("sdk/typescript");
    let build = root.join("target/sdk-build");
    std::fs::create_dir_all(&build).unwrap();
    for f in ["package.json", "package-lock.json"] {
        std::fs::copy(sdk.join(f), build.join(f)).unwrap();
    }
    let tsc = build.join("node_modules/.bin/tsc");
    if !tsc.exists() {
        let out = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&build)
            .output()
            .expect("npm runs (the TypeScript SDK test needs node and npm)");
        assert!(
            out.status.success(),
            "npm ci failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&tsc)
        .arg("-p")
        .arg(sdk.join("tsconfig.json"))
        .arg("--outDir")
        .arg(out_dir.path())
        .arg("--typeRoots")
        .arg(build.join("node_modules/@types"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tsc failed:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    for f in ["chassis_plugin.js", "chassis_plugin.d.ts"] {
        assert_eq!(
            std::fs::read_to_string(out_dir.path().join(f)).unwrap(),
            std::fs::read_to_string(sdk.join(f)).unwrap(),
            "sdk/typescript/{f} is not what src/chassis_plugin.ts compiles to: run tsc -p sdk/typescript"
        );
    }
}

#[test]
fn plugin_new_writes_working_plugins_that_pass_plugin_check_and_serve_an_agent() {
    let dir = tempfile::tempdir().unwrap();
    let home = std::env::var("HOME").unwrap_or_default();
    for (name, lang, test) in [
        // Names with a `-`: a capability key and a string everywhere.
        (
            "weather-now",
            "python",
            vec!["python3", "weather-now/test_plugin.py"],
        ),
        (
            "world-clock",
            "typescript",
            vec!["node", "world-clock/test_plugin.js"],
        ),
    ] {
        let out = run(dir.path(), &["plugin", "new", name, "--lang", lang], &[]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stdout
                .contains(&format!("include = [\"{name}/plugin.toml\"]")),
            "{}",
            out.stdout
        );
        // Its own test passes with a plain interpreter.
        let t = std::process::Command::new(test[0])
            .args(&test[1..])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            t.status.success(),
            "{name}: {}\n{}",
            String::from_utf8_lossy(&t.stdout),
            String::from_utf8_lossy(&t.stderr)
        );
        // The conformance suite passes.
        let manifest = format!("{name}/plugin.toml");
        let check = run(
            dir.path(),
            &["--format", "json", "plugin", "check", &manifest],
            &[("HOME", &home)],
        );
        assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
        let report: Value = serde_json::from_str(&check.stdout).unwrap();
        assert_eq!(report["passed"], true);
        assert_eq!(report["checks"].as_array().unwrap().len(), 9, "{report:#}");
    }
    // Both, included in a composition, serve an agent.
    std::fs::write(
        dir.path().join("composition.toml"),
        r#"version = 1
include = ["weather-now/plugin.toml", "world-clock/plugin.toml"]

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "weather_now_echo", args = { text = "rain" } }, { name = "world_clock_echo", args = { text = "noon" } }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#,
    )
    .unwrap();
    let check = run(dir.path(), &["check", "composition.toml"], &[]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    assert!(!check.stderr.contains("ungoverned"), "{}", check.stderr);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[("HOME", &home)],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        tool_results(&document(&out)),
        vec!["hello: rain".to_owned(), "hello: noon".to_owned()]
    );
    // A folder that is not empty is refused.
    // The vendored SDK is one of the plugin's files: editing it is a change.
    let before = run(
        dir.path(),
        &["--format", "json", "snapshot", "composition.toml"],
        &[],
    );
    assert_eq!(before.code, 0, "{}", before.stderr);
    let sdk = dir.path().join("world-clock/chassis_plugin.js");
    let text = std::fs::read_to_string(&sdk).unwrap();
    std::fs::write(&sdk, text + "\n// edited\n").unwrap();
    let after = run(
        dir.path(),
        &["--format", "json", "snapshot", "composition.toml"],
        &[],
    );
    assert_eq!(after.code, 0, "{}", after.stderr);
    let digest = |out: &Run| {
        serde_json::from_str::<Value>(&out.stdout).unwrap()["digests"]["semantic_digest"].clone()
    };
    assert_ne!(digest(&before), digest(&after));
    let again = run(dir.path(), &["plugin", "new", "weather-now"], &[]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
}

/// A plugin without the SDK that gets the protocol wrong: it accepts any
/// version, answers unknown methods and malformed params with results.
const SLOPPY: &str = r#"
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if "id" not in req:
        continue
    if req["method"] == "initialize":
        result = {"protocol_version": req["params"]["protocol_version"],
                  "plugin": {"name": "greeter", "version": "1.0.0", "provides": {"greeting": ["1.0.0"]}}}
    elif req["method"] == "setup":
        result = {"capabilities": [{"key": "greeting", "version": "1.0.0"}], "tools": [],
                  "routes": [{"method": "TRACE", "path": "x"}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": result}) + "\n")
    sys.stdout.flush()
    if req["method"] == "teardown":
        break
"#;

#[test]
fn plugin_check_fails_a_plugin_that_gets_the_protocol_wrong() {
    let dir = workspace(&[("greeter.py", SLOPPY), ("composition.toml", GREETER_TOML)]);
    let out = run(
        dir.path(),
        &["--format", "json", "plugin", "check", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let failed: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        [
            "version refusal",
            "unknown method",
            "malformed params",
            "setup"
        ],
        "{report:#}"
    );
    // What a mount would refuse is named: here a route it cannot serve.
    let setup = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "setup")
        .unwrap();
    assert!(
        setup["detail"]
            .as_str()
            .unwrap()
            .contains("route `TRACE x`: method `TRACE` is not one of"),
        "{setup:#}"
    );
    // The text form says the same.
    let text = run(dir.path(), &["plugin", "check", "composition.toml"], &[]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout.contains("FAIL version refusal"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("8 checks: 4 passed, 4 failed"),
        "{}",
        text.stdout
    );
}

#[test]
fn plugin_check_quotes_what_a_plugin_that_dies_said_on_stderr() {
    // A plugin that dies at setup: the failing checks say why, in its
    // words (redacted: the canary its configuration references stays out).
    let (plugin, toml) = greeter_with_setup_reading_a_secret(
        "    import os\n    print('cannot open the store with ' + ctx.config['token'])\n    os._exit(4)\n",
    );
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", &toml)]);
    let canary = "sk-canary-check-0d4e";
    let out = run(
        dir.path(),
        &["--format", "json", "plugin", "check", "composition.toml"],
        &[("PLUGIN_TOKEN", canary)],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let setup = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "setup")
        .unwrap();
    assert_eq!(setup["passed"], false, "{report:#}");
    let detail = setup["detail"].as_str().unwrap();
    assert!(
        detail.contains("its last stderr: ")
            && detail.contains("cannot open the store with <redacted"),
        "{setup:#}"
    );
    assert!(!out.stdout.contains(canary) && !out.stderr.contains(canary));
}

#[test]
fn an_async_tool_and_an_async_setup_run_on_the_sdk_loop() {
    let plugin = GREETER
        .replace("def greeter(ctx):", "async def greeter(ctx):")
        .replace(
            "    def greet(name: str, excited: bool = False) -> str:\n        \"\"\"Greet someone by name.\"\"\"",
            "    async def greet(name: str, excited: bool = False) -> str:\n        \"\"\"Greet someone by name.\"\"\"\n        import asyncio\n        await asyncio.sleep(0.01)",
        );
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", GREETER_TOML)]);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        tool_results(&document(&out)),
        vec!["Hello, Ada! (warm)".to_owned()]
    );
}

/// The Python SDK's own unit tests (schemas from type hints, argument
/// binding), with the interpreter the other tests use.
#[test]
fn the_python_sdk_unit_tests_pass() {
    let root = crate::harness::root();
    let out = std::process::Command::new(python())
        .args(["-B", "-m", "unittest", "sdk/python/test_chassis_plugin.py"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Python plugin's transform and observe hooks.
const SHOUT_PY: &str = r#"
import json
from chassis_plugin import plugin

@plugin(name="shout", version="1.0.0")
def shout(ctx):
    def upper(event, payload):
        args = payload.get("args") or {}
        if "name" in args:
            payload["args"] = dict(args, name=args["name"].upper())
            return payload
    def watch(event, payload):
        with open("seen.jsonl", "a") as f:
            f.write(json.dumps({"event": event, "tool": payload.get("tool")}) + "\n")
    ctx.hooks.register("before_tool_execute", upper, mode="transform", priority=10)
    ctx.hooks.register("after_tool_execute", watch)

if __name__ == "__main__":
    shout.run()
"#;

/// A JavaScript plugin's bail hook.
const GUARD_JS: &str = r#"
const { plugin, Bail } = require("./chassis_plugin");
plugin({ name: "guard", version: "1.0.0" }, (ctx) => {
  ctx.hooks.register({ event: "before_tool_execute", mode: "bail" }, (event, payload) => {
    if (payload.args && payload.args.name === "Mallory") throw new Bail("Mallory is not greeted");
  });
}).run();
"#;

#[test]
fn hooks_of_process_plugins_bail_transform_and_observe() {
    let toml = GREETER_TOML
        .replace(
            "[[entries.model.config.turns]]\ntool_calls = [{ name = \"greet\", args = { name = \"Ada\", excited = true } }]\n",
            "[[entries.model.config.turns]]\ntool_calls = [{ name = \"greet\", args = { name = \"Mallory\" } }]\n[[entries.model.config.turns]]\ntool_calls = [{ name = \"greet\", args = { name = \"Ada\", excited = true } }]\n",
        )
        .replace(
            "[entries.greeter]",
            "[plugins.shout]\nversion = \"1.0.0\"\ncommand = [\"{PYTHON}\", \"shout.py\"]\n\n[plugins.guard]\nversion = \"1.0.0\"\ncommand = [\"node\", \"guard.js\"]\n\n[entries.shout]\nplugin = \"shout\"\n\n[entries.guard]\nplugin = \"guard\"\n\n[entries.greeter]",
        );
    let dir = workspace(&[
        ("greeter.py", GREETER),
        ("shout.py", SHOUT_PY),
        ("guard.js", GUARD_JS),
        ("composition.toml", &toml),
    ]);
    std::fs::copy(
        crate::harness::root().join("sdk/typescript/chassis_plugin.js"),
        dir.path().join("chassis_plugin.js"),
    )
    .unwrap();
    // Hooks the lock does not pin are refused: the pure commands could
    // not see them.
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    let refusal: Value = serde_json::from_str(out.stderr.lines().last().unwrap()).unwrap();
    assert_eq!(refusal["code"], "runtime::contract", "{}", out.stderr);
    assert!(
        refusal["fields"]["promise"]
            .as_str()
            .unwrap()
            .contains("hooks, HTTP routes or agents that `chassis.lock` does not pin"),
        "{refusal}"
    );
    let pinned = run(
        dir.path(),
        &["tools", "composition.toml", "--update-lock"],
        &[],
    );
    assert_eq!(pinned.code, 0, "{}\n{}", pinned.stdout, pinned.stderr);
    let lock = std::fs::read_to_string(dir.path().join("chassis.lock")).unwrap();
    for pinned in [
        "[[entries.shout.hooks]]\nevent = \"before_tool_execute\"\nmode = \"transform\"\npriority = 10",
        "[[entries.shout.hooks]]\nevent = \"after_tool_execute\"\nmode = \"observe\"",
        "[[entries.guard.hooks]]\nevent = \"before_tool_execute\"\nmode = \"bail\"",
    ] {
        assert!(lock.contains(pinned), "{pinned} not in\n{lock}");
    }
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = tool_results(&document(&out));
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].contains("Mallory is not greeted"),
        "{}",
        results[0]
    );
    assert_eq!(results[1], "Hello, ADA! (warm)");
    let seen = std::fs::read_to_string(dir.path().join("seen.jsonl")).unwrap();
    let seen: Vec<Value> = seen
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        seen,
        vec![serde_json::json!({"event": "after_tool_execute", "tool": "greet"})]
    );
}

/// A hook that replies what its mode may not: its event, mode, error policy
/// and reply (`object`, `string`, `bail` or `none`) come from its config;
/// what it replies holds a canary no message may quote.
const MISFIT_PY: &str = r#"
from chassis_plugin import Bail, plugin

@plugin(name="misfit", version="1.0.0")
def misfit(ctx):
    reply = ctx.config["reply"]
    def hook(event, payload):
        if reply == "bail":
            raise Bail("reason-canary-4471")
        if reply == "string":
            return "payload-canary-4471"
        if reply == "object":
            return dict(payload, note="payload-canary-4471")
    ctx.hooks.register(ctx.config["event"], hook, mode=ctx.config["mode"],
                       error_policy=ctx.config["policy"])

if __name__ == "__main__":
    misfit.run()
"#;

/// The misfit hook beside a command tool that leaves a mark when it runs.
const MISFIT_TOML: &str = r#"version = 1

[plugins.misfit]
version = "1.0.0"
command = ["{PYTHON}", "misfit.py"]

[entries.misfit]
plugin = "misfit"
config = { event = "EVENT", mode = "MODE", reply = "REPLY", policy = "POLICY" }

[entries.tools]
plugin = "command"
[[entries.tools.config.tools]]
name = "write_it"
description = "Leave a mark."
argv = ["touch", "MARK"]
input = "none"

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "write_it", args = {} }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
tools = ["write_it"]
default_input = "go"
"#;

/// Pin and run a composition whose one hook (`mode`, on `event`, under
/// `policy`) replies `reply`: the exit code, what chassis printed (stdout
/// and stderr) and whether the tool ran.
fn misfit_run(event: &str, mode: &str, reply: &str, policy: &str) -> (i32, String, bool) {
    let dir = workspace(&[("misfit.py", MISFIT_PY)]);
    let mark = dir.path().join("ran");
    write_composition(
        dir.path(),
        &MISFIT_TOML
            .replace("EVENT", event)
            .replace("MODE", mode)
            .replace("REPLY", reply)
            .replace("POLICY", policy)
            .replace("MARK", &mark.display().to_string()),
    );
    pin(dir.path());
    let out = run(
        dir.path(),
        &["run", "composition.toml", "--approve", "write_it"],
        &[],
    );
    let said = format!("{}\n{}", out.stdout, out.stderr);
    (out.code, said, mark.exists())
}

/// What chassis said names the reply's kind, never what it held.
fn quotes_no_reply(said: &str) -> bool {
    !said.contains("canary-4471")
}

/// A `bail` hook that replies a transform (a dict or a string returned
/// instead of raising `Bail`) is a guard that could not answer: the call is
/// refused whatever its error policy, naming the hook, its entry and the
/// kind of reply; before an agent run, the run is refused.
#[test]
fn a_bail_hook_replying_what_its_mode_does_not_allow_refuses_whatever_its_error_policy() {
    // A guard that lets the call through (returns None): the tool runs.
    let (code, said, ran) = misfit_run("before_tool_execute", "bail", "none", "raise");
    assert!(ran && code == 0, "{said}");
    for policy in ["record", "raise"] {
        for reply in ["object", "string"] {
            let (code, said, ran) = misfit_run("before_tool_execute", "bail", reply, policy);
            let case = format!("{reply} under {policy}");
            assert!(!ran, "{case}: the tool ran\n{said}");
            assert_eq!(code, 0, "{case}: the run answers\n{said}");
            assert!(
                said.contains(
                    "tool `write_it` was refused by hook `hook_misfit_1` of `misfit`: \
                     the guard could not answer: the hook replied `transform`, but its mode is `bail`"
                ),
                "{case}\n{said}"
            );
            assert!(quotes_no_reply(&said), "{case}\n{said}");
        }
        let (code, said, ran) = misfit_run("before_agent_run", "bail", "object", policy);
        assert!(
            !ran,
            "before_agent_run under {policy}: the tool ran\n{said}"
        );
        assert_eq!(code, 1, "before_agent_run under {policy}\n{said}");
        assert!(
            said.contains(
                "agent `a`: refused: the guard could not answer: the hook replied `transform`, \
                 but its mode is `bail` (hook `hook_misfit_1` of `misfit`)"
            ),
            "before_agent_run under {policy}\n{said}"
        );
        assert!(quotes_no_reply(&said), "{said}");
    }
}

/// A `transform` hook that bails replies what its mode does not allow: under
/// `raise` the call fails (the tool never runs, exit 3), under `record` it
/// is warned and the call goes on.
#[test]
fn a_transform_hook_that_bails_fails_the_call_under_raise_and_is_warned_under_record() {
    let failure = "hook `hook_misfit_1` of `misfit` failed on `before_tool_execute`: \
                   the hook replied `bail`, but its mode is `transform`";
    let (code, said, ran) = misfit_run("before_tool_execute", "transform", "bail", "raise");
    assert!(!ran, "raise: the tool ran\n{said}");
    assert_eq!(code, 3, "{said}");
    assert!(said.contains(failure), "{said}");
    assert!(quotes_no_reply(&said), "{said}");
    let (code, said, ran) = misfit_run("before_tool_execute", "transform", "bail", "record");
    assert!(ran, "record: the call goes on\n{said}");
    assert_eq!(code, 0, "{said}");
    assert!(said.contains(&format!("warning: {failure}")), "{said}");
    assert!(quotes_no_reply(&said), "{said}");
}

/// An `observe` hook is only told: one that replies (a transform or a bail)
/// replies what its mode does not allow, and so does a `transform` hook that
/// returns no object. Under `raise` the call fails (the tool never runs,
/// exit 3); under `record` it is warned and the call goes on.
#[test]
fn an_observe_hook_that_replies_and_a_transform_returning_no_object_follow_the_error_policy() {
    for (mode, reply, what) in [
        (
            "observe",
            "object",
            "the hook replied `transform`, but its mode is `observe`",
        ),
        (
            "observe",
            "bail",
            "the hook replied `bail`, but its mode is `observe`",
        ),
        (
            "transform",
            "string",
            "the hook replied `transform` with a string payload, but a transform must return a JSON object",
        ),
    ] {
        let failure =
            format!("hook `hook_misfit_1` of `misfit` failed on `before_tool_execute`: {what}");
        let case = format!("{mode} hook replying {reply}");
        let (code, said, ran) = misfit_run("before_tool_execute", mode, reply, "raise");
        assert!(!ran, "{case} under raise: the tool ran\n{said}");
        assert_eq!(code, 3, "{case} under raise\n{said}");
        assert!(said.contains(&failure), "{case} under raise\n{said}");
        assert!(quotes_no_reply(&said), "{case} under raise\n{said}");
        let (code, said, ran) = misfit_run("before_tool_execute", mode, reply, "record");
        assert!(ran, "{case} under record: the call goes on\n{said}");
        assert_eq!(code, 0, "{case} under record\n{said}");
        assert!(
            said.contains(&format!("warning: {failure}")),
            "{case} under record\n{said}"
        );
        assert!(quotes_no_reply(&said), "{case} under record\n{said}");
    }
}

/// A model provider written in Python: a tool call for a user message,
/// a short answer to `summarize: X`, and the tool results when they come.
/// It writes the trace context of each call to `traces.txt`.
const PY_MODEL: &str = r#"
from chassis_plugin import plugin, traceparent

@plugin(name="py-model", version="1.0.0", provides={"model": "1.0.0"})
def py_model(ctx):
    def complete(messages: list, tools: list = (), options: dict = None) -> dict:
        "One assistant turn."
        with open("traces.txt", "a") as f:
            f.write((traceparent() or "none") + "\n")
        last = messages[-1]
        if last["role"] == "user" and last["content"].startswith("summarize: "):
            return {"message": {"role": "assistant", "content": "short: " + last["content"][11:]},
                    "finish_reason": "stop"}
        if last["role"] == "user":
            name = last["content"]
            calls = [{"id": "c1", "name": "greet", "arguments": {"name": name}},
                     {"id": "c2", "name": "summarize", "arguments": {"text": name}}]
            return {"message": {"role": "assistant", "content": "", "tool_calls": calls},
                    "finish_reason": "tool_calls", "usage": {"input_tokens": 7, "output_tokens": 3}}
        said = [m["content"] for m in messages if m["role"] == "tool"]
        return {"message": {"role": "assistant", "content": "done: " + " | ".join(said)},
                "finish_reason": "stop", "usage": {"input_tokens": 9, "output_tokens": 4}}
    ctx.capabilities.provide("model", {"name": "py-echo"}, version="1.0.0", methods=[complete])

if __name__ == "__main__":
    py_model.run()
"#;

/// A tool that asks the model its composition binds it to (`chat`).
const SUMMARIZER: &str = r#"
from chassis_plugin import plugin

@plugin(name="summarizer", version="1.0.0", requires={"model": ">=1,<2"})
def summarizer(ctx):
    model = ctx.require("model")
    def summarize(text: str) -> str:
        "Summarize a text."
        turn = model.chat(messages=[{"role": "user", "content": "summarize: " + text}])
        return turn["message"]["content"]
    ctx.tools.register(summarize)

if __name__ == "__main__":
    summarizer.run()
"#;

/// A greeter, the Python model, and a tool that asks the model (`chat`).
const MODEL_TOML: &str = r#"version = 1

[plugins.greeter]
version = "1.0.0"
command = ["{PYTHON}", "greeter.py"]
provides = { greeting = "1.0.0" }

[[plugins.greeter.tools]]
name = "greet"
description = "Greet someone by name."
args = { type = "object", properties = { name = { type = "string" }, excited = { type = "boolean" } }, required = ["name"], additionalProperties = false }

[plugins.py-model]
version = "1.0.0"
command = ["{PYTHON}", "py_model.py"]
provides = { model = "1.0.0" }

[plugins.summarizer]
version = "1.0.0"
command = ["{PYTHON}", "summarizer.py"]
requires = { model = ">=1,<2" }

[[plugins.summarizer.tools]]
name = "summarize"
description = "Summarize a text."
args = { type = "object", properties = { text = { type = "string" } }, required = ["text"], additionalProperties = false }

[policy.tools.greet]
idempotent = true
[policy.tools.summarize]
idempotent = true

[entries.greeter]
plugin = "greeter"
config.style = "warm"

[entries.py-model]
plugin = "py-model"

[entries.summarizer]
plugin = "summarizer"

[agents.a]
prompt = "p"
default_input = "Ada"
"#;

#[test]
fn a_model_provider_written_in_python_drives_an_agent_and_answers_chat() {
    let dir = workspace(&[
        ("greeter.py", GREETER),
        ("py_model.py", PY_MODEL),
        ("summarizer.py", SUMMARIZER),
        ("composition.toml", MODEL_TOML),
    ]);
    chats_are_charged_to_the_run(dir.path(), MODEL_TOML, "tool -> chat");
}

/// A model call is charged even when what it reports cannot be taken: a
/// `chat` (a tool asking the model) that reports 2^63 + 2^63 tokens
/// counts as a model call, its tokens refused; a turn of the loop with a
/// negative cost still charges its tokens. (Both charged nothing: a plugin
/// could call again and again under `model_calls`.)
#[test]
fn a_model_call_is_charged_even_when_its_report_cannot_be_taken() {
    let summarize = r#"{"message": {"role": "assistant", "content": "short: " + last["content"][11:]},
                    "finish_reason": "stop"}"#;
    let done = r#""finish_reason": "stop", "usage": {"input_tokens": 9, "output_tokens": 4}}"#;
    assert!(PY_MODEL.contains(summarize) && PY_MODEL.contains(done));
    let model = PY_MODEL
        .replace(
            summarize,
            r#"{"message": {"role": "assistant", "content": "short"},
                    "finish_reason": "stop", "usage": {"input_tokens": 2**63, "output_tokens": 2**63}}"#,
        )
        .replace(
            done,
            r#""finish_reason": "stop", "usage": {"input_tokens": 9, "output_tokens": 4}, "estimated_cost": -1.0}"#,
        );
    let dir = workspace(&[
        ("greeter.py", GREETER),
        ("py_model.py", &model),
        ("summarizer.py", SUMMARIZER),
        ("composition.toml", MODEL_TOML),
    ]);
    write_composition(dir.path(), MODEL_TOML);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    let doc = document(&out);
    // The loop's two calls and the tool's `chat`; the chat's tokens are
    // not counted, the last turn's are (its cost is refused).
    assert_eq!(used(&doc, "model_calls"), 3.0, "{doc:#}\n{}", out.stderr);
    assert_eq!(used(&doc, "tokens"), 23.0, "{doc:#}");
    assert!(
        doc.to_string().contains("cannot be counted"),
        "the tool's chat failed saying why: {doc:#}"
    );
}

/// How much of budget `dimension` the run of `doc` used.
fn used(doc: &Value, dimension: &str) -> Value {
    doc["budget"]
        .as_array()
        .and_then(|b| b.iter().find(|d| d["dimension"] == dimension))
        .map(|d| d["used"].clone())
        .unwrap_or_else(|| panic!("no {dimension} in {:#}", doc["budget"]))
}

/// Run `toml` (the Python model answering the loop, and a `summarize` tool
/// whose work asks the model, through `path`): the tool's `chat` is one of
/// the run's model calls, on its trace and in its budget.
fn chats_are_charged_to_the_run(dir: &Path, toml: &str, path: &str) {
    write_composition(dir, toml);
    let _ = std::fs::remove_file(dir.join("traces.txt"));
    let out = run(dir, &["--format", "json", "run", "composition.toml"], &[]);
    assert_eq!(out.code, 0, "{path}\n{}\n{}", out.stdout, out.stderr);
    let doc = document(&out);
    assert_eq!(
        doc["answer"], "done: Hello, Ada. (warm) | short: Ada",
        "{path}: {doc:#}"
    );
    assert_eq!(doc["usage"]["input_tokens"], 16, "{:#}", doc["usage"]);
    assert_eq!(doc["model"], "py-echo", "{:#}", doc["model"]);
    assert_eq!(used(&doc, "model_calls"), 3.0, "{path}");
    // Each of the three calls (two from the loop, one `chat` for the tool
    // call) carried the run's trace, each with its own parent.
    let trace_id = doc["trace_id"].as_str().expect("the run's trace id");
    let traces = std::fs::read_to_string(dir.join("traces.txt")).unwrap();
    let parents: std::collections::BTreeSet<[u8; 8]> = traces
        .lines()
        .map(|line| {
            assert!(line.starts_with(&format!("00-{trace_id}-")), "{traces}");
            chassis::engine::trace_context::TraceParent::parse(line)
                .unwrap_or_else(|| panic!("not a traceparent: {line}"))
                .parent_id
        })
        .collect();
    assert_eq!(traces.lines().count(), 3, "{path}: {traces}");
    assert_eq!(parents.len(), 3, "{traces}");

    // With one model call in its budget, the run's own call spends it: the
    // tool's `chat` is refused, and the run stops as out of budget (a
    // failure while running: exit 3).
    let toml = toml.replace(
        "default_input = \"Ada\"",
        "default_input = \"Ada\"\nbudget = { model_calls = 1 }",
    );
    write_composition(dir, &toml);
    let out = run(dir, &["--format", "json", "run", "composition.toml"], &[]);
    assert_eq!(out.code, 3, "{path}\n{}\n{}", out.stdout, out.stderr);
    let doc = document(&out);
    assert_eq!(doc["stop"]["kind"], "budget_exhausted", "{:#}", doc["stop"]);
    assert_eq!(doc["stop"]["dimension"], "model_calls", "{:#}", doc["stop"]);
    assert_eq!(used(&doc, "model_calls"), 1.0, "{path}");
}

/// A provider whose method asks the model (`chat`): what it invokes in
/// turn while answering belongs to the tool call that invoked it.
const SUMMARY_SERVICE: &str = r#"
from chassis_plugin import plugin

@plugin(name="summary-service", version="1.0.0", provides={"summary": "1.0.0"},
        requires={"model": ">=1,<2"})
def summary_service(ctx):
    model = ctx.require("model")
    def summarize(text: str) -> str:
        "Summarize a text with the model."
        turn = model.chat(messages=[{"role": "user", "content": "summarize: " + text}])
        return turn["message"]["content"]
    ctx.capabilities.provide("summary", None, version="1.0.0", methods=[summarize])

if __name__ == "__main__":
    summary_service.run()
"#;

/// The same service in TypeScript's JavaScript.
const SUMMARY_SERVICE_JS: &str = r#"
const { plugin, s } = require("./chassis_plugin");
plugin({ name: "summary-service", version: "1.0.0", provides: { summary: "1.0.0" },
         requires: { model: ">=1,<2" } }, (ctx) => {
  const model = ctx.require("model");
  const summarize = async ({ text }) => {
    const turn = await model.invoke("chat", { messages: [{ role: "user", content: "summarize: " + text }] });
    return turn.message.content;
  };
  ctx.capabilities.provide("summary", { version: "1.0.0", methods: [
    [{ name: "summarize", description: "Summarize a text with the model.",
       inputSchema: s.object({ text: s.string() }) }, summarize]] });
}).run();
"#;

/// A tool that calls the summary service, which calls the model.
const RELAY: &str = r#"
from chassis_plugin import plugin

@plugin(name="relay", version="1.0.0", requires={"summary": ">=1,<2"})
def relay(ctx):
    service = ctx.require("summary")
    def summarize(text: str) -> str:
        "Summarize a text."
        return service.summarize(text=text)
    ctx.tools.register(summarize)

if __name__ == "__main__":
    relay.run()
"#;

#[test]
fn a_chat_a_provider_makes_for_a_tool_call_is_charged_to_the_run() {
    // tool (relay) -> provider (summary-service) -> `chat` (py-model), the
    // provider in Python and in TypeScript's JavaScript.
    let chained = MODEL_TOML
        .replace(
            "[plugins.summarizer]\nversion = \"1.0.0\"\ncommand = [\"{PYTHON}\", \"summarizer.py\"]\nrequires = { model = \">=1,<2\" }\n\n[[plugins.summarizer.tools]]",
            "[plugins.summary-service]\nversion = \"1.0.0\"\ncommand = SERVICE\nprovides = { summary = \"1.0.0\" }\nrequires = { model = \">=1,<2\" }\n\n[plugins.relay]\nversion = \"1.0.0\"\ncommand = [\"{PYTHON}\", \"relay.py\"]\nrequires = { summary = \">=1,<2\" }\n\n[[plugins.relay.tools]]",
        )
        .replace(
            "[entries.summarizer]\nplugin = \"summarizer\"",
            "[entries.summary-service]\nplugin = \"summary-service\"\n\n[entries.relay]\nplugin = \"relay\"",
        );
    assert!(chained.contains("[entries.relay]") && chained.contains("SERVICE"));
    let dir = workspace(&[
        ("greeter.py", GREETER),
        ("py_model.py", PY_MODEL),
        ("summary_service.py", SUMMARY_SERVICE),
        ("summary_service.js", SUMMARY_SERVICE_JS),
        ("relay.py", RELAY),
    ]);
    std::fs::copy(
        crate::harness::root().join("sdk/typescript/chassis_plugin.js"),
        dir.path().join("chassis_plugin.js"),
    )
    .unwrap();
    for service in [
        "[\"{PYTHON}\", \"summary_service.py\"]",
        "[\"node\", \"summary_service.js\"]",
    ] {
        let toml = chained.replace("SERVICE", service);
        chats_are_charged_to_the_run(dir.path(), &toml, service);
    }
}

/// A provider whose configuration references a secret: one method quotes
/// it, one answers against its own return annotation.
const VAULT_PY: &str = r#"
from chassis_plugin import plugin

@plugin(name="vault", version="1.0.0", provides={"vault": "1.0.0"})
def vault(ctx):
    token = ctx.config["token"]
    def reveal() -> str:
        "Quote the token."
        return "token=" + token
    def count() -> int:
        "A count that is not one."
        return "many, " + token
    def size() -> int:
        "A count."
        return 3
    ctx.capabilities.provide("vault", None, version="1.0.0", methods=[reveal, count, size])

if __name__ == "__main__":
    vault.run()
"#;

/// A consumer that writes down what its provider answered.
const PEEK_PY: &str = r#"
import json
from chassis_plugin import plugin, InvokeError

@plugin(name="peek", version="1.0.0", requires={"vault": ">=1,<2"})
def peek(ctx):
    vault = ctx.require("vault")
    def look() -> str:
        "Ask the vault."
        seen = {}
        for method in ("reveal", "count", "size"):
            try:
                seen[method] = vault.invoke(method)
            except InvokeError as e:
                seen[method] = "error: " + str(e)
        with open("seen.json", "w") as f:
            json.dump(seen, f)
        return "looked"
    ctx.tools.register(look)

if __name__ == "__main__":
    peek.run()
"#;

#[test]
fn a_providers_answers_are_held_to_its_result_schema_and_keep_its_secrets_back() {
    let toml = r#"version = 1

[plugins.vault]
version = "1.0.0"
command = ["{PYTHON}", "vault.py"]
provides = { vault = "1.0.0" }

[plugins.peek]
version = "1.0.0"
command = ["{PYTHON}", "peek.py"]
requires = { vault = ">=1,<2" }

[[plugins.peek.tools]]
name = "look"
description = "Ask the vault."
args = { type = "object", properties = {}, required = [], additionalProperties = false }

[policy.tools.look]
idempotent = true

[entries.vault]
plugin = "vault"
config.token = { secret = "VAULT_TOKEN" }

[entries.peek]
plugin = "peek"

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "look", args = {} }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#;
    let dir = workspace(&[
        ("vault.py", VAULT_PY),
        ("peek.py", PEEK_PY),
        ("composition.toml", toml),
    ]);
    let canary = "sk-canary-vault-41d7";
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[("VAULT_TOKEN", canary)],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let raw = std::fs::read_to_string(dir.path().join("seen.json")).unwrap();
    assert!(
        !raw.contains(canary),
        "the consumer got the provider's secret: {raw}"
    );
    let seen: Value = serde_json::from_str(&raw).unwrap();
    let reveal = seen["reveal"].as_str().unwrap();
    assert!(
        reveal.starts_with("token=") && reveal.contains("redacted"),
        "{reveal}"
    );
    let count = seen["count"].as_str().unwrap();
    assert!(
        count.starts_with("error: ")
            && count.contains("answered `vault.count` against its result_schema"),
        "{count}"
    );
    assert_eq!(seen["size"], 3);
    assert!(!out.stdout.contains(canary) && !out.stderr.contains(canary));
}

#[test]
fn a_plugin_that_keeps_crashing_is_down_until_the_next_generation() {
    // After the first crash, every restart dies at once: five attempts
    // (0.2 + 0.4 + 0.8 + 1.6 + 3.2 s apart), then the tool says so.
    let plugin = FAULTY
        .replace(
            "@plugin(",
            "if os.path.exists('crashed'):\n    os._exit(3)\n\n@plugin(",
        )
        .replace(
            "        if name == \"crash\":\n",
            "        if name == \"crash\":\n            open('crashed', 'w').close()\n",
        );
    let toml = faulty_composition(&["crash", "Ada"])
        .replace("timeout_seconds = 1", "timeout_seconds = 30");
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", &toml)]);
    let started = std::time::Instant::now();
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = tool_results(&document(&out));
    assert!(
        results[0].contains("is gone while answering `tools/call`: the process exited with code 9"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("stopped 5 times within 5 minutes")
            && results[1].contains("until the next generation"),
        "{}",
        results[1]
    );
    // The backoff was waited for, not skipped.
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_hang_at_setup_fails_the_mount_within_the_startup_timeout() {
    let plugin = GREETER.replace(
        "    style = ctx.config.get(\"style\", \"plain\")\n",
        "    import time\n    time.sleep(60)\n    style = 'never'\n",
    );
    let toml = GREETER_TOML.replace(
        "command = [\"{PYTHON}\", \"greeter.py\"]",
        "command = [\"{PYTHON}\", \"greeter.py\"]\nstartup_timeout_seconds = 1",
    );
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", &toml)]);
    let started = std::time::Instant::now();
    let out = run(dir.path(), &["run", "composition.toml"], &[]);
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        out.stderr.contains("did not answer `setup` within 1.0s"),
        "{}",
        out.stderr
    );
    // What it printed before it hung is quoted.
    assert!(
        out.stderr.contains("print() during setup goes to stderr"),
        "{}",
        out.stderr
    );
}

/// Tools that raise, and one that crashes a moment after answering.
const RAISING: &str = r#"
import os, threading, time
from chassis_plugin import plugin, ToolPolicy

@plugin(name="greeter", version="1.0.0", provides={"greeting": "1.0.0"})
def greeter(ctx):
    def greet(name: str, excited: bool = False) -> str:
        """Greet someone by name."""
        if name == "raise":
            raise ValueError("bad token " + ctx.config["token"])
        if name == "later":
            threading.Thread(target=lambda: (time.sleep(0.2), os._exit(9)), daemon=True).start()
            return "see you"
        return f"pid {os.getpid()}"
    ctx.tools.register(greet, policy=ToolPolicy(idempotent=True))
    ctx.capabilities.provide("greeting", None, version="1.0.0")

if __name__ == "__main__":
    greeter.run()
"#;

#[test]
fn raising_tools_are_tool_errors_redacted_and_never_exhaust_the_plugin() {
    // Ten raising calls (more than the SDK's eight workers), then one that
    // answers: every failure is a tool error the model sees, redacted.
    let mut names = vec!["raise"; 10];
    names.push("Ada");
    let toml = faulty_composition(&names)
        .replace(
            "config.style = \"warm\"",
            "config.style = \"warm\"\nconfig.token = { secret = \"PLUGIN_TOKEN\" }",
        )
        .replace("prompt = \"p\"", "prompt = \"p\"\nmax_steps = 20");
    let dir = workspace(&[("greeter.py", RAISING), ("composition.toml", &toml)]);
    let canary = "sk-canary-raise-77d1";
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[("PLUGIN_TOKEN", canary)],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = tool_results(&document(&out));
    assert_eq!(results.len(), 11, "{results:?}");
    for r in &results[..10] {
        assert!(r.contains("ValueError: bad token"), "{r}");
    }
    assert!(results[10].starts_with("pid "), "{}", results[10]);
    assert!(!out.stdout.contains(canary) && !out.stderr.contains(canary));
}

#[test]
fn a_plugin_that_crashes_while_idle_is_back_for_the_next_call() {
    // `later` answers, then the process dies while nothing waits on it; the
    // model's next turn comes a second later and finds it restarted.
    let toml = faulty_composition(&["later", "Ada"]).replace(
        "[[entries.model.config.turns]]\ntool_calls = [{ name = \"greet\", args = { name = \"Ada\" } }]\n",
        "[[entries.model.config.turns]]\ndelay_ms = 1000\ntool_calls = [{ name = \"greet\", args = { name = \"Ada\" } }]\n",
    );
    assert!(toml.contains("delay_ms = 1000"), "{toml}");
    let dir = workspace(&[("greeter.py", RAISING), ("composition.toml", &toml)]);
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = tool_results(&document(&out));
    assert_eq!(results[0], "see you");
    assert!(results[1].starts_with("pid "), "{}", results[1]);
}

#[test]
fn a_setup_error_quoting_a_secret_is_redacted() {
    let (plugin, toml) = greeter_with_setup_reading_a_secret(
        "    raise RuntimeError('cannot log in with ' + ctx.config['token'])\n",
    );
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", &toml)]);
    let canary = "sk-canary-setup-3c9a";
    for format in ["text", "json"] {
        let out = run(
            dir.path(),
            &["--format", format, "run", "composition.toml"],
            &[("PLUGIN_TOKEN", canary)],
        );
        assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
        let said = format!("{}{}", out.stdout, out.stderr);
        assert!(said.contains("cannot log in with"), "{said}");
        assert!(!said.contains(canary), "{said}");
    }
}

/// The testing kit mounts a process plugin from its TOML, as a run would.
#[test]
fn the_testing_kit_mounts_a_process_plugin() {
    let dir = workspace(&[("greeter.py", GREETER), ("composition.toml", GREETER_TOML)]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut h = chassis::testing::TestHarness::new();
        let id = h
            .install_process(&dir.path().join("composition.toml"))
            .unwrap();
        h.reconcile().await.unwrap();
        assert_eq!(h.instance(&id).await.unwrap().as_str(), "active");
        assert!(
            h.tool_names().contains(&"greet".to_owned()),
            "{:?}",
            h.tool_names()
        );
        let out = h
            .call_tool("greet", serde_json::json!({"name": "Ada"}))
            .await
            .unwrap();
        assert_eq!(
            out.content,
            serde_json::json!("Hello, Ada. (plain)"),
            "{out:?}"
        );
        // A file without a process plugin says so.
        std::fs::write(dir.path().join("none.toml"), "version = 1\n").unwrap();
        let e = h
            .install_process(&dir.path().join("none.toml"))
            .unwrap_err();
        assert!(e.contains("no entry of a process plugin"), "{e}");
        // Shutting down tears the plugin down and ends its process.
        assert!(h.shutdown().await.is_empty());
    });
    drop(rt);
    assert_no_process_in(dir.path());
}

/// What a plugin registers beyond its TOML: a tool it does not declare,
/// each tool's policy, a hook.
const PINNED_PY: &str = r#"
from chassis_plugin import plugin, ToolPolicy

@plugin(name="greeter", version="1.0.0", provides={"greeting": "1.0.0"}, permissions=["voice.loud"])
def greeter(ctx):
    def greet(name: str, excited: bool = False) -> str:
        """Greet someone by name."""
        return f"Hello, {name}."
    def shout(text: str) -> str:
        """Shout a text."""
        return text.upper()
    def watch(event, payload):
        pass
    ctx.tools.register(greet, policy=ToolPolicy(idempotent=True))
    ctx.tools.register(shout, policy=ToolPolicy(permissions=["voice.loud"], side_effects=["loud"]))
    ctx.hooks.register("after_tool_execute", watch)
    ctx.capabilities.provide("greeting", {}, version="1.0.0")

if __name__ == "__main__":
    greeter.run()
"#;

#[test]
fn the_lock_pins_what_a_plugin_registers_beyond_its_toml_and_a_mount_is_held_to_it() {
    let toml = GREETER_TOML
        .replace(
            "provides = { greeting = \"1.0.0\" }\n",
            "provides = { greeting = \"1.0.0\" }\npermissions = [\"voice.loud\"]\n",
        )
        .replace(
            "tool_calls = [{ name = \"greet\", args = { name = \"Ada\", excited = true } }]",
            "tool_calls = [{ name = \"shout\", args = { text = \"hi\" } }]",
        )
        .replace("[agents.a]\n", "[agents.a]\ntools = [\"shout\"]\n");
    let dir = workspace(&[("greeter.py", PINNED_PY), ("composition.toml", &toml)]);
    let path = dir.path();
    // Unpinned, `shout` is unknown to the pure commands: `check` answers
    // no, and a run is refused before anything starts.
    let check = run(path, &["check", "composition.toml"], &[]);
    assert_eq!(check.code, 1, "{}\n{}", check.stdout, check.stderr);
    assert!(
        check
            .stderr
            .contains("the entry `greeter` that\n  │ `chassis.lock` does not pin may offer it")
            || check
                .stderr
                .contains("the entry `greeter` that `chassis.lock` does not pin may offer it"),
        "{}",
        check.stderr
    );
    let out = run(
        path,
        &["run", "composition.toml", "--grant", "voice.loud"],
        &[],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("--update-lock"), "{}", out.stderr);

    // Pinning starts the plugin alone and writes what it registers.
    let pinned = pin(path);
    assert!(
        pinned.stdout.contains("greeter (new, 2 tools, 1 hook)"),
        "{}",
        pinned.stdout
    );
    let lock = std::fs::read_to_string(path.join("chassis.lock")).unwrap();
    assert!(
        lock.contains(r#"policy = '{"approval_required":false,"idempotent":false,"permissions":["voice.loud"],"side_effects":["loud"]}'"#),
        "{lock}"
    );
    // The pure commands now see the pinned tool and its policy.
    let check = run(path, &["check", "composition.toml"], &[]);
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
    let tools = run(
        path,
        &["--format", "json", "tools", "composition.toml"],
        &[],
    );
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    let tools: Value = serde_json::from_str(&tools.stdout).unwrap();
    let shout = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shout")
        .unwrap_or_else(|| panic!("{tools}"));
    assert_eq!(shout["policy_source"], "lock");
    assert_eq!(
        shout["policy"]["permissions"],
        serde_json::json!(["voice.loud"])
    );
    let digest = |out: &Run| {
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        doc["digests"]["semantic_digest"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let before = digest(&run(
        path,
        &["--format", "json", "snapshot", "composition.toml"],
        &[],
    ));

    let out = run(
        path,
        &[
            "--format",
            "json",
            "run",
            "composition.toml",
            "--grant",
            "voice.loud",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(tool_results(&document(&out)), ["HI"]);

    // A plugin that now registers something else: the live check names the
    // difference (exit 1), the mount refuses it as a contract error, and
    // pinning again accepts it and changes the digest.
    let changed = PINNED_PY
        .replace(", side_effects=[\"loud\"]", "")
        .replace(
            "    ctx.hooks.register(\"after_tool_execute\", watch)\n",
            "    ctx.hooks.register(\"after_tool_execute\", watch)\n    ctx.hooks.register(\"before_tool_execute\", watch, mode=\"bail\", priority=5)\n",
        );
    std::fs::write(path.join("greeter.py"), changed).unwrap();
    let live = run(path, &["tools", "composition.toml", "--live"], &[]);
    assert_eq!(live.code, 1, "{}\n{}", live.stdout, live.stderr);
    assert!(
        live.stdout
            .contains("differs from chassis.lock: ~ shout (policy), + hook before_tool_execute#0"),
        "{}",
        live.stdout
    );
    let out = run(
        path,
        &["run", "composition.toml", "--grant", "voice.loud"],
        &[],
    );
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("error[runtime::contract]")
            && out
                .stderr
                .contains("registers something else than `chassis.lock` pins")
            && out
                .stderr
                .contains("\n    ~ shout (policy)\n    + hook before_tool_execute#0\n"),
        "{}",
        out.stderr
    );
    let out = run(
        path,
        &[
            "--format",
            "json",
            "run",
            "composition.toml",
            "--grant",
            "voice.loud",
            "--update-lock",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let lock = std::fs::read_to_string(path.join("chassis.lock")).unwrap();
    assert!(lock.contains("mode = \"bail\"\npriority = 5"), "{lock}");
    let after = digest(&run(
        path,
        &["--format", "json", "snapshot", "composition.toml"],
        &[],
    ));
    assert_ne!(
        before, after,
        "the pinned registrations are part of the identity"
    );
}

/// Shared state from a Python plugin: a capability with a value and no
/// methods. Its configuration quotes a secret it references.
const LIMITS_PY: &str = r#"
from chassis_plugin import plugin

@plugin(name="limits", version="1.0.0", provides={"limits": "1.0.0"})
def limits(ctx):
    ctx.capabilities.provide("limits", {"max_rows": 5, "endpoint": "https://h/" + ctx.config["token"]}, version="1.0.0")

if __name__ == "__main__":
    limits.run()
"#;

/// Reads the shared state of a built-in `shared-state` entry and of a
/// Python plugin, as values.
const READER_PY: &str = r#"
import json
from chassis_plugin import plugin, ToolPolicy

@plugin(name="reader", version="1.0.0", requires={"settings": ">=1", "limits": ">=1"})
def reader(ctx):
    settings = ctx.require("settings").value
    limits = ctx.require("limits")
    def read_state() -> str:
        """What the shared state says."""
        return json.dumps({"settings": settings, "limits": limits.value}, sort_keys=True)
    def invoke_state() -> str:
        """Shared state has no methods."""
        try:
            limits.invoke("get")
            return "invoked"
        except Exception as e:
            return str(e)
    ctx.tools.register(read_state, policy=ToolPolicy(idempotent=True))
    ctx.tools.register(invoke_state, policy=ToolPolicy(idempotent=True))

if __name__ == "__main__":
    reader.run()
"#;

const SHARED_TOML: &str = r#"version = 1

[plugins.limits]
version = "1.0.0"
command = ["{PYTHON}", "limits.py"]
provides = { limits = "1.0.0" }

[plugins.reader]
version = "1.0.0"
command = ["{PYTHON}", "reader.py"]
requires = { settings = ">=1", limits = ">=1" }

[[plugins.reader.tools]]
name = "read_state"
description = "What the shared state says."
args = { type = "object", properties = {}, required = [], additionalProperties = false }

[[plugins.reader.tools]]
name = "invoke_state"
description = "Shared state has no methods."
args = { type = "object", properties = {}, required = [], additionalProperties = false }

[policy.tools.read_state]
idempotent = true

[policy.tools.invoke_state]
idempotent = true

[entries.settings]
plugin = "shared-state"
config = { capability = "settings", version = "1.2.0", values = { region = "eu-west-1" } }

[entries.limits]
plugin = "limits"
config.token = { secret = "LIMITS_TOKEN" }

[entries.reader]
plugin = "reader"

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "read_state", args = {} }, { name = "invoke_state", args = {} }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#;

#[test]
fn shared_state_crosses_from_a_builtin_and_a_python_plugin_and_keeps_secrets_back() {
    let dir = workspace(&[
        ("limits.py", LIMITS_PY),
        ("reader.py", READER_PY),
        ("composition.toml", SHARED_TOML),
    ]);
    let canary = "sk-canary-shared-7f3e";
    let out = run(
        dir.path(),
        &["--format", "json", "run", "composition.toml"],
        &[("LIMITS_TOKEN", canary)],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = tool_results(&document(&out));
    let seen: Value = serde_json::from_str(&results[0]).unwrap();
    // The built-in kind's values, and the Python plugin's value with the
    // secret its configuration referenced held back from the consumer.
    assert_eq!(seen["settings"], serde_json::json!({"region": "eu-west-1"}));
    assert_eq!(seen["limits"]["max_rows"], 5);
    // The value is what is redacted, whatever its key is called.
    let endpoint = seen["limits"]["endpoint"].as_str().unwrap();
    assert!(
        endpoint.starts_with("https://h/")
            && !endpoint.contains(canary)
            && endpoint.contains("redacted"),
        "{endpoint}"
    );
    // Read-only: no method to call.
    assert!(
        results[1].contains("not a requirement of `reader` bound to a process plugin"),
        "{}",
        results[1]
    );
    assert!(!out.stdout.contains(canary) && !out.stderr.contains(canary));

    // A setup that reads into both values: the lock's probe and `plugin
    // check` hand them over as a run does (the built-in's table as
    // configured, the Python plugin's after starting it), so neither meets
    // a `None`.
    let reading = READER_PY.replace(
        "    settings = ctx.require(\"settings\").value\n",
        "    settings = ctx.require(\"settings\").value\n    assert settings[\"region\"] == \"eu-west-1\", settings\n    assert ctx.require(\"limits\").value[\"max_rows\"] == 5\n",
    );
    assert_ne!(reading, READER_PY);
    std::fs::write(dir.path().join("reader.py"), reading).unwrap();
    for args in [
        &["tools", "composition.toml", "--update-lock"][..],
        &["plugin", "check", "composition.toml", "--plugin", "reader"][..],
        &["--format", "json", "run", "composition.toml"][..],
    ] {
        let out = run(dir.path(), args, &[("LIMITS_TOKEN", canary)]);
        assert_eq!(out.code, 0, "{args:?}: {}\n{}", out.stdout, out.stderr);
        assert!(!out.stdout.contains(canary) && !out.stderr.contains(canary));
    }
}

#[test]
fn a_rust_plugin_reads_a_python_plugins_shared_state() {
    use chassis::engine::version::Version;
    use chassis::plugins::shared::SharedState;
    let dir = workspace(&[
        (
            "limits.py",
            LIMITS_PY
                .replace("ctx.config[\"token\"]", "\"none\"")
                .as_str(),
        ),
        (
            "plugin.toml",
            "version = 1\n\n[plugins.limits]\nversion = \"1.0.0\"\ncommand = [\"{PYTHON}\", \"limits.py\"]\nprovides = { limits = \"1.0.0\" }\n\n[entries.limits]\nplugin = \"limits\"\n",
        ),
    ]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    rt.block_on(async {
        let mut h = chassis::testing::TestHarness::new();
        h.install_process(&dir.path().join("plugin.toml")).unwrap();
        let mut manifest =
            chassis::engine::model::Manifest::new("rust-reader", Version::parse("1.0.0").unwrap());
        h.require(&mut manifest, "limits", ">=1");
        let into = std::sync::Arc::clone(&seen);
        h.install(chassis::runtime::plugin::plugin_fn(manifest, move |ctx| {
            let into = std::sync::Arc::clone(&into);
            async move {
                let state = ctx.require::<SharedState>("limits")?;
                *into.lock().unwrap() = state.get("max_rows").cloned();
                Ok(())
            }
        }));
        h.reconcile().await.unwrap();
        assert!(h.shutdown().await.is_empty());
    });
    drop(rt);
    assert_eq!(*seen.lock().unwrap(), Some(serde_json::json!(5)));
    assert_no_process_in(dir.path());
}

/// A plugin that brings its own agent: a tool and the researcher that uses
/// it.
const RESEARCH_PY: &str = r#"
from chassis_plugin import plugin, ToolPolicy

@plugin(name="research", version="1.0.0")
def research(ctx):
    def search(query: str) -> str:
        """Search the notes."""
        return f"3 notes about {query}"
    ctx.tools.register(search, policy=ToolPolicy(idempotent=True))
    ctx.agents.register("researcher", "You research with the search tool.",
                        description="Finds notes about a topic.", tools=["search"],
                        max_steps=3, budget={"model_calls": 3})

if __name__ == "__main__":
    research.run()
"#;

/// The composition's own agent delegates to the plugin's (one scripted
/// model: its turns are shared by the run and its sub-agent, in order).
const RESEARCH_TOML: &str = r#"version = 1

[plugins.research]
version = "1.0.0"
command = ["{PYTHON}", "research.py"]

[[plugins.research.tools]]
name = "search"
description = "Search the notes."
args = { type = "object", properties = { query = { type = "string" } }, required = ["query"], additionalProperties = false }

[policy.tools.search]
idempotent = true

[entries.research]
plugin = "research"

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "researcher", args = { input = "milk" } }]
[[entries.model.config.turns]]
tool_calls = [{ name = "search", args = { query = "milk" } }]
[[entries.model.config.turns]]
text = "found 3 notes about milk"
[[entries.model.config.turns]]
text = "done"

[agents.lead]
prompt = "p"
default_input = "go"
tools = []
sub_agents = ["researcher"]
"#;

#[test]
fn a_plugin_defines_an_agent_that_the_lock_pins_and_chassis_runs() {
    let dir = workspace(&[
        ("research.py", RESEARCH_PY),
        ("composition.toml", RESEARCH_TOML),
    ]);
    let path = dir.path();
    // Before the lock pins it, the sub-agent is a lock finding: the file
    // loads, `check` answers no and `run` refuses with the fix.
    let check = run(path, &["check", "composition.toml"], &[]);
    assert_eq!(check.code, 1, "{}\n{}", check.stdout, check.stderr);
    assert!(
        check.stderr.contains("lists the sub-agent `researcher`")
            && check.stderr.contains("may define it"),
        "{}",
        check.stderr
    );
    let out = run(path, &["run", "composition.toml"], &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("--update-lock"), "{}", out.stderr);

    let pinned = pin(path);
    assert!(
        pinned.stdout.contains("research (new, 1 tool, 1 agent)"),
        "{}",
        pinned.stdout
    );
    let lock = std::fs::read_to_string(path.join("chassis.lock")).unwrap();
    assert!(
        lock.contains("[[entries.research.agents]]\nname = \"researcher\"")
            && lock.contains("prompt = \"You research with the search tool.\""),
        "{lock}"
    );

    // The pure commands see it: checked, and in the snapshot's agents.
    let check = run(path, &["check", "composition.toml"], &[]);
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
    let snapshot = run(
        path,
        &["--format", "json", "snapshot", "composition.toml"],
        &[],
    );
    assert_eq!(snapshot.code, 0, "{}", snapshot.stderr);
    let doc: Value = serde_json::from_str(&snapshot.stdout).unwrap();
    let before = doc["digests"]["semantic_digest"].clone();
    assert!(
        snapshot.stdout.contains("researcher") && snapshot.stdout.contains("/agents/researcher"),
        "{}",
        snapshot.stdout
    );

    // chassis's loop runs it as a sub-agent, with the plugin's tool.
    let doc = run_ok(path, &["--agent", "lead"], &[]);
    assert_eq!(doc["answer"], "done", "{doc:#}");
    assert_eq!(tool_results(&doc), ["found 3 notes about milk"], "{doc:#}");

    // A plugin that now defines it otherwise differs from its pin.
    std::fs::write(
        path.join("research.py"),
        RESEARCH_PY.replace("max_steps=3", "max_steps=5"),
    )
    .unwrap();
    let live = run(path, &["tools", "composition.toml", "--live"], &[]);
    assert_eq!(live.code, 1, "{}\n{}", live.stdout, live.stderr);
    assert!(
        live.stdout.contains("~ agent researcher (max_steps)"),
        "{}",
        live.stdout
    );
    let out = run(path, &["run", "composition.toml", "--agent", "lead"], &[]);
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("~ agent researcher (max_steps)"),
        "{}",
        out.stderr
    );
    // Pinned again, the definition is part of the digest.
    pin(path);
    let snapshot = run(
        path,
        &["--format", "json", "snapshot", "composition.toml"],
        &[],
    );
    let doc: Value = serde_json::from_str(&snapshot.stdout).unwrap();
    assert_ne!(doc["digests"]["semantic_digest"], before);

    // A hand-edited lock the loader cannot use: a lock finding (the file
    // still loads), which pinning again repairs.
    let lock = std::fs::read_to_string(path.join("chassis.lock")).unwrap();
    std::fs::write(
        path.join("chassis.lock"),
        lock.replace("max_steps = 5", "max_steps = 0"),
    )
    .unwrap();
    let check = run(path, &["check", "composition.toml"], &[]);
    assert_eq!(check.code, 1, "{}\n{}", check.stdout, check.stderr);
    assert!(
        check
            .stderr
            .contains("`max_steps` must be between 1 and 10000"),
        "{}",
        check.stderr
    );
    let out = run(path, &["run", "composition.toml", "--agent", "lead"], &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    pin(path);
    let check = run(path, &["check", "composition.toml"], &[]);
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);

    // Skipped by `enabled_if`, the entry takes its agent with it.
    write_composition(
        path,
        &RESEARCH_TOML.replace(
            "[entries.research]\nplugin = \"research\"\n",
            "[entries.research]\nplugin = \"research\"\nenabled_if = { env = \"RESEARCH_ON\" }\n",
        ),
    );
    let snapshot = run(
        path,
        &["--format", "json", "snapshot", "composition.toml"],
        &[],
    );
    assert_eq!(snapshot.code, 0, "{}", snapshot.stderr);
    assert!(
        !snapshot.stdout.contains("/agents/researcher"),
        "{}",
        snapshot.stdout
    );
    let on = run(
        path,
        &["--format", "json", "snapshot", "composition.toml"],
        &[("RESEARCH_ON", "1")],
    );
    assert!(on.stdout.contains("/agents/researcher"), "{}", on.stdout);

    // A name the composition already uses: the plugin's agent is left
    // out, and the lock finding says to rename one (exit 1).
    write_composition(
        path,
        &format!("{RESEARCH_TOML}\n[agents.researcher]\nprompt = \"mine\"\n"),
    );
    let check = run(path, &["check", "composition.toml"], &[]);
    assert_eq!(check.code, 1, "{}\n{}", check.stdout, check.stderr);
    assert!(
        check.stderr.contains(
            "the agent `researcher` is defined by the entry `research` (pinned in `chassis.lock`) and by"
        ) && check.stderr.contains("defines it too"),
        "{}",
        check.stderr
    );
}

/// The same plugin in JavaScript, through the TypeScript SDK.
const RESEARCH_JS: &str = r#"
const { plugin, s } = require("./chassis_plugin");
plugin({ name: "research", version: "1.0.0" }, (ctx) => {
  ctx.tools.register(
    { name: "search", description: "Search the notes.", inputSchema: s.object({ query: s.string() }), policy: { idempotent: true } },
    ({ query }) => `3 notes about ${query}`,
  );
  ctx.agents.register({
    name: "researcher",
    prompt: "You research with the search tool.",
    description: "Finds notes about a topic.",
    tools: ["search"],
    maxSteps: 3,
    budget: { model_calls: 3 },
  });
}).run();
"#;

#[test]
fn a_javascript_plugin_defines_an_agent_the_same_way() {
    let toml = RESEARCH_TOML.replace(
        "command = [\"{PYTHON}\", \"research.py\"]",
        "command = [\"node\", \"research.js\"]",
    );
    let dir = workspace(&[("research.js", RESEARCH_JS), ("composition.toml", &toml)]);
    with_js_sdk(dir.path());
    let path = dir.path();
    pin(path);
    // The Python plugin pins the same definition: the lock does not
    // depend on the language.
    let lock = std::fs::read_to_string(path.join("chassis.lock")).unwrap();
    let agents = lock
        .split("[[entries.research.agents]]")
        .nth(1)
        .unwrap_or_else(|| panic!("{lock}"));
    assert_eq!(
        agents.trim(),
        "name = \"researcher\"\ndescription = \"Finds notes about a topic.\"\nprompt = \"You research with the search tool.\"\ntools = [\"search\"]\nmax_steps = 3\n\n[entries.research.agents.budget]\nmodel_calls = 3.0",
        "{lock}"
    );
    let doc = run_ok(path, &["--agent", "lead"], &[]);
    assert_eq!(tool_results(&doc), ["found 3 notes about milk"]);
}

/// Tools that answer with the trace context of their own call.
const TRACED_PY: &str = r#"
from chassis_plugin import plugin, ToolPolicy, traceparent

@plugin(name="traced-py", version="1.0.0")
def traced(ctx):
    def trace_py() -> str:
        """The call's traceparent."""
        return traceparent() or "none"
    ctx.tools.register(trace_py, policy=ToolPolicy(idempotent=True))

if __name__ == "__main__":
    traced.run()
"#;

const TRACED_JS: &str = r#"
const { plugin, s, traceparent } = require("./chassis_plugin");
plugin({ name: "traced-js", version: "1.0.0" }, (ctx) => {
  ctx.tools.register(
    { name: "trace_js", description: "The call's traceparent.", inputSchema: s.object({}), policy: { idempotent: true } },
    async () => { await new Promise((r) => setTimeout(r, 1)); return traceparent() ?? "none"; },
  );
}).run();
"#;

#[test]
fn tool_calls_carry_the_runs_trace_context_to_python_and_javascript() {
    let toml = r#"version = 1

[plugins.traced-py]
version = "1.0.0"
command = ["{PYTHON}", "traced.py"]

[[plugins.traced-py.tools]]
name = "trace_py"
description = "The call's traceparent."
args = { type = "object", properties = {}, required = [], additionalProperties = false }

[plugins.traced-js]
version = "1.0.0"
command = ["node", "traced.js"]

[[plugins.traced-js.tools]]
name = "trace_js"
description = "The call's traceparent."
args = { type = "object", properties = {}, required = [], additionalProperties = false }

[policy.tools.trace_py]
idempotent = true

[policy.tools.trace_js]
idempotent = true

[entries.traced-py]
plugin = "traced-py"

[entries.traced-js]
plugin = "traced-js"

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "trace_py", args = {} }, { name = "trace_js", args = {} }, { name = "trace_py", args = {} }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#;
    let dir = workspace(&[
        ("traced.py", TRACED_PY),
        ("traced.js", TRACED_JS),
        ("composition.toml", toml),
    ]);
    with_js_sdk(dir.path());
    let doc = run_ok(dir.path(), &[], &[]);
    let trace = doc["trace_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(trace.len(), 32, "{trace}");
    let results = tool_results(&doc);
    assert_eq!(results.len(), 3, "{results:?}");
    let mut parents = std::collections::BTreeSet::new();
    for r in &results {
        let parsed = chassis::engine::trace_context::TraceParent::parse(r)
            .unwrap_or_else(|| panic!("not a traceparent: {r}"));
        assert!(r.starts_with(&format!("00-{trace}-")), "{r} in {trace}");
        parents.insert(parsed.parent_id);
    }
    // Each call is its own parent span, in either language.
    assert_eq!(parents.len(), 3, "{results:?}");
}

/// A provider whose method and hook answer with their trace context.
const CLOCK_PY: &str = r#"
from chassis_plugin import plugin, Method, traceparent

@plugin(name="clock", version="1.0.0", provides={"clock": "1.0.0"})
def clock(ctx):
    def now() -> str:
        "The invoke's traceparent."
        return traceparent() or "none"
    def seen(event, payload):
        with open("hook.log", "a") as f:
            f.write((traceparent() or "none") + "\n")
    ctx.capabilities.provide("clock", {}, version="1.0.0", methods=[Method(now)])
    ctx.hooks.register("after_tool_execute", seen)

if __name__ == "__main__":
    clock.run()
"#;

const ASKER_PY: &str = r#"
import json
from chassis_plugin import plugin, ToolPolicy, traceparent

@plugin(name="asker", version="1.0.0", requires={"clock": ">=1"})
def asker(ctx):
    clk = ctx.require("clock")
    def ask() -> str:
        """Ask the clock."""
        return json.dumps({"tool": traceparent(), "provider": clk.now()})
    ctx.tools.register(ask, policy=ToolPolicy(idempotent=True))

if __name__ == "__main__":
    asker.run()
"#;

#[test]
fn invokes_and_hooks_carry_the_runs_trace_context_too() {
    let toml = r#"version = 1

[plugins.clock]
version = "1.0.0"
command = ["{PYTHON}", "clock.py"]
provides = { clock = "1.0.0" }

[plugins.asker]
version = "1.0.0"
command = ["{PYTHON}", "asker.py"]
requires = { clock = ">=1" }

[[plugins.asker.tools]]
name = "ask"
description = "Ask the clock."
args = { type = "object", properties = {}, required = [], additionalProperties = false }

[policy.tools.ask]
idempotent = true

[entries.clock]
plugin = "clock"

[entries.asker]
plugin = "asker"

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "ask", args = {} }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#;
    let dir = workspace(&[
        ("clock.py", CLOCK_PY),
        ("asker.py", ASKER_PY),
        ("composition.toml", toml),
    ]);
    let path = dir.path();
    pin(path);
    let doc = run_ok(path, &[], &[]);
    let trace = doc["trace_id"].as_str().unwrap().to_owned();
    let seen: Value = serde_json::from_str(&tool_results(&doc)[0]).unwrap();
    let parse = |v: &str| {
        chassis::engine::trace_context::TraceParent::parse(v)
            .unwrap_or_else(|| panic!("not a traceparent: {v}"))
    };
    let tool = parse(seen["tool"].as_str().unwrap());
    let provider = parse(seen["provider"].as_str().unwrap());
    let hook_log = std::fs::read_to_string(path.join("hook.log")).unwrap();
    let hook = parse(hook_log.lines().next().unwrap());
    for t in [&tool, &provider, &hook] {
        assert_eq!(
            chassis::engine::canonical::hex_lower(&t.trace_id),
            trace,
            "{seen} {hook_log}"
        );
    }
    assert!(
        tool.parent_id != provider.parent_id && provider.parent_id != hook.parent_id,
        "{seen} {hook_log}"
    );
}

/// A tool that takes a while and logs when each call starts and ends.
const SLOW_PY: &str = r#"
import time
from chassis_plugin import plugin, ToolPolicy

@plugin(name="slow", version="1.0.0"MAX)
def slow(ctx):
    def wait(tag: str) -> str:
        "Wait a moment."
        with open("calls.log", "a") as f:
            f.write(f"start {tag} {time.monotonic()}\n")
        time.sleep(0.3)
        with open("calls.log", "a") as f:
            f.write(f"end {tag} {time.monotonic()}\n")
        return tag
    ctx.tools.register(wait, policy=ToolPolicy(idempotent=True))

if __name__ == "__main__":
    slow.run()
"#;

/// Whether two calls of the slow tool, made at once, ran at the same
/// time in a plugin declaring `max` (or nothing).
fn slow_calls_overlap(max: &str) -> bool {
    let dir = workspace(&[
        ("slow.py", &SLOW_PY.replace("MAX", max)),
        (
            "plugin.toml",
            "version = 1\n\n[plugins.slow]\nversion = \"1.0.0\"\ncommand = [\"{PYTHON}\", \"slow.py\"]\n\n[[plugins.slow.tools]]\nname = \"wait\"\ndescription = \"Wait a moment.\"\nargs = { type = \"object\", properties = { tag = { type = \"string\" } }, required = [\"tag\"], additionalProperties = false }\n\n[entries.slow]\nplugin = \"slow\"\n",
        ),
    ]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut h = chassis::testing::TestHarness::new();
        h.install_process(&dir.path().join("plugin.toml")).unwrap();
        h.reconcile().await.unwrap();
        let (a, b) = tokio::join!(
            h.call_tool("wait", serde_json::json!({"tag": "a"})),
            h.call_tool("wait", serde_json::json!({"tag": "b"})),
        );
        assert_eq!(a.unwrap().content, "a");
        assert_eq!(b.unwrap().content, "b");
        assert!(h.shutdown().await.is_empty());
    });
    drop(rt);
    assert_no_process_in(dir.path());
    let log = std::fs::read_to_string(dir.path().join("calls.log")).unwrap();
    let events: Vec<&str> = log.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(events.len(), 4, "{log}");
    // Serial: start, end, start, end. At once: both start first.
    events == ["start", "start", "end", "end"]
}

#[test]
fn a_plugin_declaring_max_concurrency_gets_no_more_calls_at_once() {
    // The control: without a limit the SDK runs both calls at once.
    assert!(slow_calls_overlap(""));
    // With `max_concurrency = 1` at `initialize`, chassis queues the
    // second call until the first is answered.
    assert!(!slow_calls_overlap(", max_concurrency=1"));
}

#[test]
fn a_tool_timeout_past_a_day_is_refused_at_setup_never_a_panic() {
    // 1e20 s is no duration: accepted, it panicked (exit 101) the first
    // time the tool was called.
    let plugin = GREETER.replace(
        "policy=ToolPolicy(idempotent=True)",
        "policy=ToolPolicy(idempotent=True, timeout_seconds=1e20)",
    );
    let toml = GREETER_TOML.replace("[policy.tools.greet]\nidempotent = true\n", "");
    let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", &toml)]);
    let out = run(dir.path(), &["run", "composition.toml"], &[]);
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("entry `greeter`")
            && out
                .stderr
                .contains("`timeout_seconds` must be positive and at most 86400"),
        "{}",
        out.stderr
    );
    // Nor can the lock pin it.
    let out = run(
        dir.path(),
        &["tools", "composition.toml", "--update-lock"],
        &[],
    );
    assert_ne!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("at most 86400"), "{}", out.stderr);
    assert!(!dir.path().join("chassis.lock").exists());
}

#[test]
fn a_secret_split_by_a_long_stderr_line_or_written_as_ascii_json_stays_redacted() {
    // The plugin's stderr is read in 8 KiB pieces: a secret that straddles
    // a cut was redacted half by half (that is, not at all). And Python's
    // json.dumps writes a secret outside ASCII as `\u00e9`.
    let cases = [
        (
            "    import sys\n    print('x' * 8190 + ctx.config['token'] + ' end', file=sys.stderr)\n    raise SystemExit(7)\n",
            "sk-canary-split-5e1f",
        ),
        (
            "    import sys, json\n    print('config: ' + json.dumps(ctx.config), file=sys.stderr)\n    raise SystemExit(7)\n",
            "sk-canary-\u{e9}5e1f",
        ),
    ];
    for (setup, canary) in cases {
        let (plugin, toml) = greeter_with_setup_reading_a_secret(setup);
        let dir = workspace(&[("greeter.py", &plugin), ("composition.toml", &toml)]);
        for args in [
            &["run", "composition.toml", "-v"][..],
            &["plugin", "check", "composition.toml"][..],
        ] {
            let out = run(dir.path(), args, &[("PLUGIN_TOKEN", canary)]);
            assert_ne!(out.code, 0, "{args:?}: {}\n{}", out.stdout, out.stderr);
            let all = format!("{}{}", out.stdout, out.stderr);
            assert!(all.contains("<redacted"), "{args:?}: {all}");
            // Neither the secret nor a piece of it (its tail is distinct).
            assert!(!all.contains("5e1f"), "{args:?}: {all}");
        }
    }
}

/// A plugin without the SDK whose `setup` never answers (nor does it read
/// its input again); it answers `initialize` and refuses anything else.
const STUCK_IN_SETUP: &str = r#"
import json, sys, time
for line in sys.stdin:
    req = json.loads(line)
    if "id" not in req:
        continue
    if req["method"] == "setup":
        time.sleep(313.5)
    if req["method"] == "initialize":
        reply = {"result": {"protocol_version": "1.0", "plugin": {"name": "greeter",
            "version": "1.0.0", "provides": {"greeting": ["1.0.0"]}}}}
    else:
        reply = {"error": {"code": -32601, "message": "no"}}
    sys.stdout.write(json.dumps(dict(reply, jsonrpc="2.0", id=req["id"])) + "\n")
    sys.stdout.flush()
"#;

#[test]
fn plugin_check_waits_the_startup_timeout_and_an_interrupt_leaves_no_process() {
    let toml = GREETER_TOML.replace(
        "command = [\"{PYTHON}\", \"greeter.py\"]",
        "command = [\"{PYTHON}\", \"greeter.py\", \"stuck\"]\nstartup_timeout_seconds = 1",
    );
    let dir = workspace(&[("greeter.py", STUCK_IN_SETUP), ("composition.toml", &toml)]);
    // The manifest's startup timeout, not the default 30 s.
    let started = std::time::Instant::now();
    let out = run(dir.path(), &["plugin", "check", "composition.toml"], &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(out.stdout.contains("within 1s"), "{}", out.stdout);

    // Ctrl-C while the plugin is stuck: exit 130, and its process is gone
    // (it does not read its input, so only chassis can end it).
    write_composition(
        dir.path(),
        &toml.replace(
            "startup_timeout_seconds = 1",
            "startup_timeout_seconds = 60",
        ),
    );
    // Past the version check's process, into the one stuck in setup.
    let out = crate::harness::signal_once_running(
        dir.path(),
        &["plugin", "check", "composition.toml"],
        "greeter.py stuck",
        std::time::Duration::from_millis(1500),
        nix::sys::signal::Signal::SIGINT,
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_process_in(dir.path());
}

/// A greeter whose setup registers a cleanup (it writes `cleaned-up`
/// beside the plugin), then sleeps 30 s before it registers anything.
const SLOW_SETUP: &str = r#"
import os, time
from chassis_plugin import plugin, ToolPolicy

HERE = os.path.dirname(os.path.abspath(__file__))

@plugin(name="greeter", version="1.0.0", provides={"greeting": "1.0.0"})
def greeter(ctx):
    def mark():
        with open(os.path.join(HERE, "cleaned-up"), "a") as f:
            f.write("teardown ran the setup's cleanup\n")
    ctx.cleanup("mark", mark)
    print("setting up slowly")
    time.sleep(30)
    def greet(name: str, excited: bool = False) -> str:
        """Greet someone by name."""
        return "hello"
    ctx.tools.register(greet, policy=ToolPolicy(idempotent=True))
    ctx.capabilities.provide("greeting", None, version="1.0.0")

if __name__ == "__main__":
    greeter.run()
"#;

#[test]
fn an_interrupt_during_a_slow_setup_cancels_it_tears_the_plugin_down_and_exits_130_at_once() {
    // The setup would take 30 s (its startup timeout too): Ctrl-C of `run`
    // or `publish` does not wait for it — the setup is cancelled, the
    // plugin is sent `teardown` (its cleanups run) and its process group
    // ended, and chassis exits 130 within a few seconds, leaving no
    // process behind.
    let dir = workspace(&[
        ("greeter.py", SLOW_SETUP),
        ("composition.toml", GREETER_TOML),
    ]);
    for args in [
        &["run", "composition.toml"][..],
        &["publish", "composition.toml"],
    ] {
        let _ = std::fs::remove_file(dir.path().join("cleaned-up"));
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_chassis"))
            .args(args)
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
            std::fs::read(p.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("greeter.py"))
                && std::fs::read_link(p.path().join("cwd"))
                    .is_ok_and(|cwd| cwd == dir.path().canonicalize().unwrap())
        }) {
            assert!(
                std::time::Instant::now() < deadline,
                "{args:?}: the plugin never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Into its setup.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let signalled = std::time::Instant::now();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let out = child.wait_with_output().unwrap();
        let took = signalled.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{args:?}: {stderr}");
        assert!(
            took < std::time::Duration::from_secs(4),
            "{args:?}: {took:?} after the interrupt: {stderr}"
        );
        assert_no_process_in(dir.path());
        let cleaned = std::fs::read_to_string(dir.path().join("cleaned-up")).unwrap_or_default();
        assert_eq!(
            cleaned, "teardown ran the setup's cleanup\n",
            "{args:?}: the plugin was killed without its teardown: {stderr}"
        );
        assert!(
            !dir.path().join(".chassis").exists(),
            "{args:?}: nothing is recorded"
        );
    }
}

/// A model provider that names itself, its model and its tool calls with
/// the secret it was given, and keeps the conversations it is sent.
const NAMING_MODEL: &str = r#"
import json
from chassis_plugin import plugin

@plugin(name="naming-model", version="1.0.0", provides={"model": "1.0.0"})
def naming_model(ctx):
    tok = ctx.config["token"]
    def complete(messages: list, tools: list = (), options: dict = None) -> dict:
        "One turn."
        with open("model_in.jsonl", "a") as f:
            f.write(json.dumps(messages) + "\n")
        if not any(m["role"] == "tool" for m in messages):
            calls = [{"id": "id_" + tok, "name": "echo", "arguments": {"text": "hi"}},
                     {"id": "x2", "name": "nosuch_" + tok, "arguments": {}}]
            return {"message": {"role": "assistant", "content": "", "tool_calls": calls},
                    "finish_reason": "tool_calls", "model": "m-" + tok,
                    "usage": {"input_tokens": 1, "output_tokens": 1}}
        return {"message": {"role": "assistant", "content": "done"},
                "finish_reason": "stop", "model": tok}
    ctx.capabilities.provide("model", {"name": "pm-" + tok}, version="1.0.0", methods=[complete])

if __name__ == "__main__":
    naming_model.run()
"#;

/// What a process plugin's model names with a secret (its capability's
/// name, the model it reports, a tool call's name and id) is redacted as
/// it enters: in no output, and the conversation the model is sent back
/// is the one the recording keeps.
#[test]
fn a_python_model_naming_things_with_a_secret_has_them_redacted_where_they_enter() {
    let canary = crate::secret_pieces::random_canary("CNRY");
    let toml = r#"version = 1

[plugins.naming-model]
version = "1.0.0"
command = ["{PYTHON}", "naming_model.py"]
provides = { model = "1.0.0" }

[entries.naming-model]
plugin = "naming-model"
config.token = { secret = "CANARY_TOKEN" }

[entries.tools]
plugin = "command"
[[entries.tools.config.tools]]
name = "echo"
description = "Echoes."
args = { type = "object", properties = { text = { type = "string" } } }
argv = ["echo", "{/text}"]
input = "none"
idempotent = true

[agents.a]
prompt = "p"
tools = ["echo"]
default_input = "go"
"#;
    let dir = workspace(&[
        ("naming_model.py", NAMING_MODEL),
        ("composition.toml", toml),
    ]);
    let out = run(
        dir.path(),
        &[
            "--format",
            "json",
            "run",
            "composition.toml",
            "--record",
            "rec.json",
            "--trace",
            "tr.jsonl",
        ],
        &[("CANARY_TOKEN", canary.as_str())],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let recorded = std::fs::read_to_string(dir.path().join("rec.json")).unwrap();
    let trace = std::fs::read_to_string(dir.path().join("tr.jsonl")).unwrap();
    for (what, text) in [
        ("stdout", &out.stdout),
        ("stderr", &out.stderr),
        ("the recording", &recorded),
        ("the trace", &trace),
    ] {
        assert_eq!(
            crate::secret_pieces::piece_in(&canary, text, 8),
            None,
            "a piece of the secret is in {what}:\n{text}"
        );
    }
    let doc = document(&out);
    assert_eq!(doc["model"], "<redacted>", "{doc}");
    assert!(
        out.stderr.contains(r#""model":"pm-<redacted>""#),
        "{}",
        out.stderr
    );
    // The second call was sent the conversation as the recording keeps it.
    let sent = std::fs::read_to_string(dir.path().join("model_in.jsonl")).unwrap();
    let sent: Vec<Value> = sent
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(sent.len(), 2);
    let recorded: Value = serde_json::from_str(&recorded).unwrap();
    let requests: Vec<&Value> = recorded["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "model")
        .map(|r| &r["request"]["messages"])
        .collect();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1], &sent[1]);
    assert_eq!(
        sent[1][2]["tool_calls"][0]["id"], "id_<redacted>",
        "{}",
        sent[1]
    );
    assert_eq!(sent[1][3]["tool_call_id"], "id_<redacted>", "{}", sent[1]);
}
