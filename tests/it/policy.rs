//! Fail closed at the tool boundary: what no grant covers is refused, a
//! tool no permission governs needs approval unless it is read-only, and
//! `check`, `tools` and `explain scope` say so before anything runs.

use std::path::Path;

use crate::harness::{Run, run_in};

/// A `command` tool that deletes the file its argument names, and one
/// that needs no permission: `touch` (changes something) and `echo`
/// (read-only).
fn composition(dir: &Path, policy: &str) -> String {
    format!(
        r#"version = 1
[entries.files]
plugin = "command"
[[entries.files.config.tools]]
name = "delete"
description = "Delete a file."
args = {{ type = "object", required = ["path"], properties = {{ path = {{ type = "string" }} }} }}
argv = ["rm", "{{/path}}"]
permissions = ["filesystem.delete:{{/path}}"]
[[entries.files.config.tools]]
name = "touch"
description = "Create a file."
args = {{ type = "object" }}
argv = ["touch", "{touched}"]
[[entries.files.config.tools]]
name = "echo"
description = "Say hello."
args = {{ type = "object" }}
argv = ["echo", "hello"]
idempotent = true

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{{ name = "delete", args = {{ path = "{victim}" }} }}]
[[entries.model.config.turns]]
tool_calls = [{{ name = "touch", args = {{}} }}]
[[entries.model.config.turns]]
tool_calls = [{{ name = "echo", args = {{}} }}]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
{policy}
"#,
        victim = dir.join("victim.txt").display(),
        touched = dir.join("touched.txt").display(),
    )
}

fn run(dir: &Path, extra: &[&str]) -> (Run, serde_json::Value) {
    let mut args = vec!["--format", "json", "run", "c.toml"];
    args.extend_from_slice(extra);
    let r = run_in(dir, &args, &[]);
    let doc = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.transcript()));
    (r, doc)
}

/// `(tool, status, refusal)` of each call.
fn calls(doc: &serde_json::Value) -> Vec<(String, String, String)> {
    doc["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_owned(),
                c["status"].as_str().unwrap_or("").to_owned(),
                c["refusal"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn row(tool: &str, status: &str, refusal: &str) -> (String, String, String) {
    (tool.to_owned(), status.to_owned(), refusal.to_owned())
}

#[test]
fn what_no_grant_covers_is_refused_and_grants_only_widen() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let victim = d.join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    std::fs::write(d.join("c.toml"), composition(d, "")).unwrap();

    // No [policy]: the delete is refused, the file stays; the permissionless
    // `touch` needs approval (no terminal: refused); the read-only `echo` runs.
    let (r, doc) = run(d, &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        calls(&doc),
        [
            row("delete", "refused", "policy_denied"),
            row("touch", "refused", "approval_denied"),
            row("echo", "ok", ""),
        ]
    );
    assert!(
        doc["tool_calls"][0]["error"]
            .as_str()
            .unwrap()
            .contains("no grant covers"),
        "{doc}"
    );
    assert!(victim.exists());
    assert!(!d.join("touched.txt").exists());

    // `--grant` widens the default; `--approve` lets the ungoverned tool run.
    let grant = format!("filesystem.delete:{}/**", d.display());
    let (r, doc) = run(d, &["--grant", &grant, "--approve", "touch"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        calls(&doc),
        [
            row("delete", "ok", ""),
            row("touch", "ok", ""),
            row("echo", "ok", "")
        ]
    );
    assert!(!victim.exists());
    assert!(d.join("touched.txt").exists());

    // A deny rule wins over `--grant`.
    std::fs::write(&victim, "keep me").unwrap();
    let deny = format!(
        "[policy]\ndeny = [\"filesystem.delete:{}/victim.txt\"]\n",
        d.display()
    );
    std::fs::write(d.join("c.toml"), composition(d, &deny)).unwrap();
    let (_, doc) = run(d, &["--grant", &grant]);
    assert_eq!(calls(&doc)[0], row("delete", "refused", "policy_denied"));
    assert!(victim.exists());

    // A bad grant is unusable input.
    let bad = run_in(d, &["run", "c.toml", "--grant", "*"], &[]);
    assert_eq!(bad.code, 2, "{}", bad.transcript());
}

#[test]
fn a_scope_a_policy_provider_governs_ignores_grants_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let victim = d.join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    let provider = "[entries.own-policy]\nplugin = \"policy\"\nscope = \"/agents/a\"\nconfig = { grants = [\"nothing.else\"] }\n";
    std::fs::write(d.join("c.toml"), composition(d, provider)).unwrap();
    let grant = format!("filesystem.delete:{}/**", d.display());
    let (r, doc) = run(d, &["--grant", &grant]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(calls(&doc)[0], row("delete", "refused", "policy_denied"));
    assert!(victim.exists());
}

#[test]
fn every_call_has_its_policy_decision_even_without_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("c.toml"), composition(d, "")).unwrap();
    let trace = d.join("trace.jsonl");
    let (r, _) = run(d, &["--trace", trace.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let decisions: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|s| s["name"] == "policy.decision")
        .collect();
    let tools: Vec<&str> = decisions
        .iter()
        .filter_map(|s| s["attrs"]["tool"].as_str())
        .collect();
    for tool in ["delete", "touch", "echo"] {
        assert!(tools.contains(&tool), "{tool}: {decisions:?}");
    }
}

#[test]
fn check_tools_and_explain_say_what_the_policy_will_do() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("c.toml"), composition(d, "")).unwrap();
    let check = run_in(d, &["check", "c.toml"], &[]);
    assert_eq!(check.code, 0, "warnings only: {}", check.transcript());
    assert!(
        check.stderr.contains("policy::ungoverned-tool") && check.stderr.contains("`touch`"),
        "{}",
        check.stderr
    );
    assert!(
        check.stderr.contains("policy::ungranted-permission")
            && check.stderr.contains("filesystem.delete:{/path}")
            && check.stderr.contains("/agents/a"),
        "{}",
        check.stderr
    );
    // `echo` is read-only: nothing to say about it.
    assert!(!check.stderr.contains("`echo`"), "{}", check.stderr);
    // A family grant with any resource counts as granting the template.
    std::fs::write(
        d.join("c.toml"),
        composition(d, "[policy]\ngrants = [\"filesystem.*\"]\n"),
    )
    .unwrap();
    let granted = run_in(d, &["check", "c.toml"], &[]);
    assert!(
        !granted.stderr.contains("policy::ungranted-permission"),
        "{}",
        granted.stderr
    );
    let tools = run_in(d, &["tools", "c.toml"], &[]);
    let touch = tools
        .stdout
        .lines()
        .find(|l| l.starts_with("touch"))
        .unwrap();
    assert!(touch.contains("ungoverned"), "{}", tools.stdout);
    let echo = tools
        .stdout
        .lines()
        .find(|l| l.starts_with("echo"))
        .unwrap();
    assert!(!echo.contains("ungoverned"), "{}", tools.stdout);
    let scope = run_in(d, &["explain", "scope", "/agents/a", "c.toml"], &[]);
    assert!(
        scope
            .stdout
            .contains("  grant      filesystem.*  ([policy])"),
        "{}",
        scope.stdout
    );
}

#[test]
fn arguments_are_checked_against_the_full_schema_and_bad_schemas_are_load_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ran = d.join("ran.txt");
    let text = format!(
        r#"version = 1
[entries.files]
plugin = "command"
[[entries.files.config.tools]]
name = "show"
description = "Show a note by name."
args = {{ type = "object", required = ["name"], properties = {{ name = {{ type = "string", pattern = "^[a-z]+$" }} }} }}
argv = ["touch", "{ran}"]
idempotent = true

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{{ name = "show", args = {{ name = "../../etc/passwd; rm -rf" }} }}]
[[entries.model.config.turns]]
tool_calls = [{{ name = "show", args = {{ name = "notes" }} }}]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#,
        ran = ran.display()
    );
    std::fs::write(d.join("c.toml"), &text).unwrap();
    let (r, doc) = run(d, &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        calls(&doc),
        [
            row("show", "refused", "invalid_arguments"),
            row("show", "ok", "")
        ]
    );
    assert!(
        doc["tool_calls"][0]["error"]
            .as_str()
            .unwrap()
            .contains("/name"),
        "{doc}"
    );

    // A schema that does not compile is a load error, with a span.
    std::fs::write(d.join("c.toml"), text.replace("^[a-z]+$", "(")).unwrap();
    let bad = run_in(d, &["--format", "json", "check", "c.toml"], &[]);
    assert_eq!(bad.code, 2, "{}", bad.transcript());
    let diag = bad
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| l["code"] == "load::bad-schema")
        .unwrap_or_else(|| panic!("{}", bad.transcript()));
    assert_eq!(diag["labels"][0]["file"], "c.toml");

    // So is an MCP server's schema pinned in the lock (and a remote $ref).
    std::fs::write(
        d.join("c.toml"),
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig = { command = \"/bin/false\" }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("chassis.lock"),
        "version = 1\n\n[entries.s]\nserver_name = \"s\"\nserver_version = \"1\"\nprotocol_version = \"2025-11-25\"\n\n[[entries.s.tools]]\nname = \"fetch\"\nremote_name = \"fetch\"\ndescription = \"d\"\ninput_schema = '{\"$ref\":\"https://example.com/schema.json\"}'\n",
    )
    .unwrap();
    let lock = run_in(d, &["check", "c.toml"], &[]);
    assert_eq!(lock.code, 2, "{}", lock.transcript());
    assert!(
        lock.stderr.contains("load::bad-schema") && lock.stderr.contains("chassis.lock"),
        "{}",
        lock.stderr
    );
}

/// Paths are judged where the program lands: a relative path is normalized
/// as an absolute one is (`./`, `//`), and a symlink inside the granted
/// tree that leads out of it is judged by its target.
#[test]
fn relative_paths_and_symlinks_are_judged_where_the_tool_lands() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("workspace");
    std::fs::create_dir_all(ws.join("secrets")).unwrap();
    std::fs::write(ws.join("secrets/key.txt"), "the-secret-key-file").unwrap();
    std::fs::write(ws.join("notes.md"), "notes").unwrap();
    std::fs::create_dir_all(dir.path().join("outside")).unwrap();
    std::fs::write(dir.path().join("outside/private.txt"), "outside-file").unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside"), ws.join("out")).unwrap();
    std::os::unix::fs::symlink("secrets", ws.join("alias")).unwrap();
    let paths = [
        "workspace/./secrets/key.txt",
        "workspace//secrets/key.txt",
        "workspace/alias/key.txt",
        "workspace/out/private.txt",
        "workspace/notes.md",
    ];
    let turns: String = paths
        .iter()
        .map(|p| {
            format!("[[entries.model.config.turns]]\ntool_calls = [{{ name = \"read\", args = {{ path = \"{p}\" }} }}]\n")
        })
        .collect();
    std::fs::write(
        dir.path().join("c.toml"),
        format!(
            r#"version = 1
[entries.files]
plugin = "command"
[[entries.files.config.tools]]
name = "read"
description = "Read a file."
args = {{ type = "object", required = ["path"], properties = {{ path = {{ type = "string" }} }} }}
argv = ["cat", "--", "{{/path}}"]
permissions = ["filesystem.read:{{/path}}"]
idempotent = true

[policy]
grants = ["filesystem.read:workspace/**"]
deny = ["filesystem.read:workspace/secrets/**"]

[entries.model]
plugin = "scripted"
{turns}[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
max_steps = 10
"#
        ),
    )
    .unwrap();
    let (r, doc) = run(dir.path(), &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        calls(&doc),
        [
            row("read", "refused", "policy_denied"),
            row("read", "refused", "policy_denied"),
            row("read", "refused", "policy_denied"),
            row("read", "refused", "policy_denied"),
            row("read", "ok", ""),
        ],
        "{}",
        r.stdout
    );
    for leaked in ["the-secret-key-file", "outside-file"] {
        assert!(!r.stdout.contains(leaked), "{}", r.stdout);
    }
    // The refusal names the path the tool would have read.
    let errors: Vec<&str> = doc["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["error"].as_str())
        .collect();
    assert!(
        errors[2].contains("workspace/secrets/key.txt"),
        "{errors:?}"
    );
    assert!(errors[3].contains("outside/private.txt"), "{errors:?}");
}

/// A substituted argument that starts with `-` is not handed to the
/// program as an option: the call fails before it runs, and a literal `--`
/// in argv makes the same value an operand.
#[test]
fn an_argument_is_never_an_option_unless_the_tool_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        r#"version = 1
[entries.files]
plugin = "command"
[[entries.files.config.tools]]
name = "list"
description = "List a directory."
args = { type = "object", required = ["path"], properties = { path = { type = "string" } } }
argv = ["ls", "{/path}"]
idempotent = true
[[entries.files.config.tools]]
name = "list_operand"
description = "List a directory."
args = { type = "object", required = ["path"], properties = { path = { type = "string" } } }
argv = ["ls", "--", "{/path}"]
idempotent = true

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{ name = "list", args = { path = "--version" } }]
[[entries.model.config.turns]]
tool_calls = [{ name = "list_operand", args = { path = "--version" } }]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "p"
default_input = "go"
"#,
    )
    .unwrap();
    let (r, doc) = run(dir.path(), &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        calls(&doc),
        [row("list", "error", ""), row("list_operand", "error", "")],
        "{}",
        r.stdout
    );
    let errors: Vec<&str> = doc["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["error"].as_str())
        .collect();
    assert!(errors[0].contains("starts with `-`"), "{errors:?}");
    // As an operand, `ls` looked for a file called `--version`.
    assert!(errors[1].contains("No such file"), "{errors:?}");
    assert!(!r.stdout.contains("coreutils"), "{}", r.stdout);
}
