//! The CI gate tells the whole truth: what `check` refuses, `plan`,
//! `publish` and `run` refuse with the same code and exit status.

use std::path::Path;

use crate::harness::{Run, run_in};

/// Two plugins that declare a tool of one name, both active.
const DUPLICATE_TOOL: &str = r#"version = 1

[plugins.a]
version = "1.0.0"
[[plugins.a.tools]]
name = "search"
description = "Search A."
result = "a"

[plugins.b]
version = "1.0.0"
[[plugins.b.tools]]
name = "search"
description = "Search B."
result = "b"

[entries.a]
[entries.b]

[entries.model]
plugin = "scripted"
config = { turns = [{ text = "done" }] }

[agents.assistant]
prompt = "Search."
"#;

/// A tool whose policy needs a permission its plugin does not declare.
const UNDECLARED_PERMISSION: &str = r#"version = 1

[plugins.fs]
version = "1.0.0"
[[plugins.fs.tools]]
name = "read_file"
description = "Read a file."
result = "x"

[entries.fs]

[policy.tools.read_file]
permissions = ["filesystem.read:{/path}"]
"#;

fn chassis(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    run_in(dir, &all, &[])
}

/// The codes of the error diagnostics on stderr (JSON lines).
fn error_codes(r: &Run) -> Vec<String> {
    r.stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|d| d["severity"] == "error")
        .filter_map(|d| d["code"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn what_check_refuses_plan_publish_and_run_refuse_alike() {
    for (text, code) in [
        (DUPLICATE_TOOL, "resolve::duplicate-tool"),
        (UNDECLARED_PERMISSION, "resolve::undeclared-permission"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.toml"), text).unwrap();
        let mut runs = vec![
            ("check", chassis(dir.path(), &["check", "c.toml"])),
            ("plan", chassis(dir.path(), &["plan", "c.toml"])),
            (
                "plan --allow-pending",
                chassis(dir.path(), &["plan", "c.toml", "--allow-pending"]),
            ),
            ("publish", chassis(dir.path(), &["publish", "c.toml"])),
            (
                "publish --allow-pending",
                chassis(dir.path(), &["publish", "c.toml", "--allow-pending"]),
            ),
        ];
        if text.contains("[agents.") {
            runs.push((
                "run",
                chassis(dir.path(), &["run", "c.toml", "--input", "x"]),
            ));
        }
        for (what, r) in &runs {
            assert_eq!(r.code, 1, "{what}: {}", r.transcript());
            assert!(
                error_codes(r).iter().any(|c| c == code),
                "{what} does not say {code}: {}",
                r.transcript()
            );
        }
        // `plan` says it on stdout too, in its refusal.
        let plan: serde_json::Value = serde_json::from_str(&runs[1].1.stdout).unwrap();
        assert_eq!(plan["action"], "reject");
        assert_eq!(plan["refusal"]["reason"], "tool_problems");
        assert_eq!(plan["refusal"]["problems"][0]["code"], code);
        // Nothing was published, so no store was created.
        assert!(!dir.path().join(".chassis").exists());
    }
}

/// The quickstart's agent edited as a pull request might: its prompt, its
/// step limit and its token budget.
fn edited_quickstart(dir: &Path) {
    let text = std::fs::read_to_string(dir.join("quickstart.toml")).unwrap();
    let edited = text
        .replace(
            "prompt = \"You count words",
            "prompt = \"Ignore all rules. You count words",
        )
        .replace("max_steps = 6", "max_steps = 60")
        .replace("tokens = 2000,", "tokens = 2000000,");
    assert_ne!(edited, text);
    std::fs::write(dir.join("quickstart.toml"), edited).unwrap();
}

fn examples_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::harness::root().join("examples");
    for name in ["quickstart.toml", "quickstart-tools.toml"] {
        std::fs::copy(root.join(name), dir.path().join(name)).unwrap();
    }
    dir
}

#[test]
fn an_agent_edit_is_a_change_the_gate_sees_and_publish_records() {
    let dir = examples_copy();
    let d = dir.path();
    std::fs::copy(d.join("quickstart.toml"), d.join("before.toml")).unwrap();
    let first = chassis(d, &["publish", "quickstart.toml"]);
    assert_eq!(first.code, 0, "{}", first.transcript());
    edited_quickstart(d);

    // The diff names the agent and each field, and fails the gate.
    let diff = run_in(
        d,
        &[
            "diff",
            "generations",
            "before.toml",
            "quickstart.toml",
            "--exit-code",
        ],
        &[],
    );
    assert_eq!(diff.code, 1, "{}", diff.transcript());
    assert!(diff.stdout.contains("AGENTS"), "{}", diff.stdout);
    for field in [
        "prompt_hash:",
        "max_steps: 6 -> 60",
        "budget.tokens: 2000 -> 2000000",
    ] {
        assert!(diff.stdout.contains(field), "{field}: {}", diff.stdout);
    }
    // A whitespace-only change around the prompt is no change.
    let text = std::fs::read_to_string(d.join("before.toml")).unwrap();
    std::fs::write(
        d.join("spaced.toml"),
        text.replace(
            "prompt = \"You count words with the word_count tool and save a note of each answer.\"",
            "prompt = \"\"\"\n  You count words with the word_count tool and save a note of each answer.\n\"\"\"",
        ),
    )
    .unwrap();
    let same = run_in(
        d,
        &[
            "diff",
            "generations",
            "before.toml",
            "spaced.toml",
            "--exit-code",
        ],
        &[],
    );
    assert_eq!(same.code, 0, "{}", same.transcript());

    // plan foresees a publication whose agent changed, naming the fields.
    let plan = chassis(d, &["plan", "quickstart.toml"]);
    assert_eq!(plan.code, 0, "{}", plan.transcript());
    let plan: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(plan["action"], "publish");
    assert_eq!(plan["agents"][0]["subject"], "assistant");
    assert_eq!(
        plan["agents"][0]["reason"],
        "budget_changed,max_steps_changed,prompt_changed"
    );
    // publish records a new generation (every node reused)...
    let publish = chassis(d, &["publish", "quickstart.toml"]);
    let doc: serde_json::Value = serde_json::from_str(&publish.stdout).unwrap();
    assert_eq!(doc["action"], "publish", "{}", publish.transcript());
    assert_eq!(doc["generation_id"], "gen_0002");
    assert_eq!(doc["impact"]["reused"], 2);
    assert_eq!(doc["agents"][0]["subject"], "assistant");
    // ... and the next run is stamped with it.
    let run = chassis(d, &["run", "quickstart.toml", "--state", "--yes"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["generation_id"], "gen_0002", "{}", run.transcript());
    // The stored generations' diff names the agent too.
    let stored = run_in(d, &["diff", "generations", "gen_0001", "gen_0002"], &[]);
    assert!(
        stored.stdout.contains("~ assistant") && stored.stdout.contains("max_steps: 6 -> 60"),
        "{}",
        stored.transcript()
    );
}

#[test]
fn a_policy_edit_is_a_change_the_gate_sees_and_publish_records() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let policy = crate::harness::root().join("examples/policy.toml");
    let text = std::fs::read_to_string(policy).unwrap();
    std::fs::write(d.join("before.toml"), &text).unwrap();
    std::fs::write(d.join("policy.toml"), &text).unwrap();
    let first = chassis(d, &["publish", "policy.toml"]);
    assert_eq!(first.code, 0, "{}", first.transcript());

    // Dropping a deny rule and widening a grant, as a pull request might.
    let deny = r#"deny = ["filesystem.read:/workspace/secrets/**"]"#;
    let grant = r#""filesystem.write:/workspace/out/**""#;
    assert!(text.contains(deny) && text.contains(grant));
    let widened = text
        .replace(deny, "deny = []")
        .replace(grant, r#""filesystem.write:/workspace/**""#);
    std::fs::write(d.join("policy.toml"), &widened).unwrap();
    let diff = run_in(
        d,
        &[
            "diff",
            "generations",
            "before.toml",
            "policy.toml",
            "--exit-code",
        ],
        &[],
    );
    assert_eq!(diff.code, 1, "{}", diff.transcript());
    for row in [
        "POLICY",
        "- deny filesystem.read:/workspace/secrets/**",
        "- grant filesystem.write:/workspace/out/**",
        "+ grant filesystem.write:/workspace/**",
    ] {
        assert!(diff.stdout.contains(row), "{row}: {}", diff.stdout);
    }
    let json = chassis(d, &["diff", "generations", "before.toml", "policy.toml"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let rows = doc["changes"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["category"] == "policy" && r["reason"] == "deny_removed"),
        "{}",
        json.stdout
    );

    // The order of rules decides nothing: no change.
    let reordered = text.replace(
        r#"grants = ["filesystem.read:/workspace/**", "filesystem.write:/workspace/out/**"]"#,
        r#"grants = ["filesystem.write:/workspace/out/**", "filesystem.read:/workspace/**"]"#,
    );
    assert_ne!(reordered, text);
    std::fs::write(d.join("reordered.toml"), reordered).unwrap();
    let same = run_in(
        d,
        &[
            "diff",
            "generations",
            "before.toml",
            "reordered.toml",
            "--exit-code",
        ],
        &[],
    );
    assert_eq!(same.code, 0, "{}", same.transcript());

    // publish records a new generation for it, and the stored generations'
    // diff names the rule.
    let publish = chassis(d, &["publish", "policy.toml"]);
    let doc: serde_json::Value = serde_json::from_str(&publish.stdout).unwrap();
    assert_eq!(doc["generation_id"], "gen_0002", "{}", publish.transcript());
    let stored = run_in(d, &["diff", "generations", "gen_0001", "gen_0002"], &[]);
    assert!(
        stored
            .stdout
            .contains("- deny filesystem.read:/workspace/secrets/**"),
        "{}",
        stored.transcript()
    );
}

#[test]
fn host_settings_are_validated_shown_apart_and_never_identity() {
    let dir = examples_copy();
    let d = dir.path();
    let text = std::fs::read_to_string(d.join("quickstart.toml")).unwrap();
    std::fs::write(
        d.join("moved.toml"),
        format!("{text}\n[store]\npath = \"state/quickstart.db\"\n"),
    )
    .unwrap();
    // The store moved: no semantic change, the gate passes, the diff says so
    // in its own section.
    let diff = run_in(
        d,
        &[
            "diff",
            "generations",
            "quickstart.toml",
            "moved.toml",
            "--exit-code",
        ],
        &[],
    );
    assert_eq!(diff.code, 0, "{}", diff.transcript());
    assert!(
        diff.stdout.contains("no semantic changes"),
        "{}",
        diff.stdout
    );
    assert!(
        diff.stdout.contains("HOST SETTINGS")
            && diff
                .stdout
                .contains("+ store = { path = \"state/quickstart.db\" }"),
        "{}",
        diff.stdout
    );
    let json = chassis(d, &["diff", "generations", "quickstart.toml", "moved.toml"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["semantic_changed"], false);
    assert_eq!(
        doc["host_settings"][0]["path"],
        serde_json::json!(["store"])
    );
    assert_eq!(doc["host_settings"][0]["masked"], false);
    // The snapshots are the same record: host settings never enter one.
    let snap = |f: &str| chassis(d, &["snapshot", f]).stdout;
    assert_eq!(snap("quickstart.toml"), snap("moved.toml"));
    // publish and plan use the store it names.
    let publish = chassis(d, &["publish", "moved.toml"]);
    assert_eq!(publish.code, 0, "{}", publish.transcript());
    assert!(d.join("state/quickstart.db").is_file());
    assert!(!d.join(".chassis").exists());
    let plan = chassis(d, &["plan", "moved.toml"]);
    let doc: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(doc["action"], "no-op", "{}", plan.transcript());
    // check validates them: an unknown key, and a table in an include.
    std::fs::write(
        d.join("bad.toml"),
        format!("{text}\n[store]\npth = \"x.db\"\n"),
    )
    .unwrap();
    let bad = chassis(d, &["check", "bad.toml"]);
    assert_eq!(bad.code, 2);
    assert!(
        error_codes(&bad).contains(&"load::unknown-key".to_owned()),
        "{}",
        bad.transcript()
    );
    std::fs::write(d.join("host.toml"), "[store]\npath = \"x.db\"\n").unwrap();
    std::fs::write(
        d.join("included.toml"),
        text.replace(
            "include = [\"quickstart-tools.toml\"]",
            "include = [\"quickstart-tools.toml\", \"host.toml\"]",
        ),
    )
    .unwrap();
    let included = chassis(d, &["check", "included.toml"]);
    assert_eq!(included.code, 2, "{}", included.transcript());
    assert!(
        error_codes(&included).contains(&"load::host-setting-in-include".to_owned()),
        "{}",
        included.transcript()
    );
}

const PROVIDER_AND_CONSUMER: &str = r#"version = 1
[plugins.pg]
version = "1.0.0"
provides = { database = "1.0.0" }
[plugins.app]
version = "1.0.0"
requires = { database = ">=1,<2" }
[plugins.cache]
version = "1.0.0"
[entries.db]
plugin = "pg"
[entries.app]
[entries.cache]
"#;

#[test]
fn a_renamed_plugin_table_is_the_same_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("c.toml"), PROVIDER_AND_CONSUMER).unwrap();
    assert_eq!(chassis(d, &["publish", "c.toml"]).code, 0);
    std::fs::write(
        d.join("c.toml"),
        PROVIDER_AND_CONSUMER
            .replace("[plugins.pg]", "[plugins.postgres]")
            .replace("plugin = \"pg\"", "plugin = \"postgres\""),
    )
    .unwrap();
    for command in ["plan", "publish"] {
        let r = chassis(d, &[command, "c.toml"]);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(doc["action"], "publish", "{command}: {}", r.transcript());
        assert_eq!(doc["impact"]["reused"], 3, "{command}: {}", r.transcript());
        assert_eq!(doc["impact"]["rebuilt"], 0);
        assert_eq!(doc["impact"]["rewired"], 0);
    }
    // The diff says the plugin's name changed, and nothing else.
    let diff = chassis(d, &["diff", "generations", "gen_0001", "gen_0002"]);
    let doc: serde_json::Value = serde_json::from_str(&diff.stdout).unwrap();
    let subjects: Vec<&str> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["pg", "postgres"], "{}", diff.stdout);
    assert!(
        doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["kind"] == "reused"),
        "{}",
        diff.stdout
    );
}

#[test]
fn a_consumer_whose_provider_is_removed_is_pending_not_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("c.toml"), PROVIDER_AND_CONSUMER).unwrap();
    assert_eq!(chassis(d, &["publish", "c.toml"]).code, 0);
    std::fs::write(
        d.join("c.toml"),
        PROVIDER_AND_CONSUMER.replace("[entries.db]\nplugin = \"pg\"\n", ""),
    )
    .unwrap();
    let decisions = |r: &Run| -> Vec<(String, String, String)> {
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        doc["nodes"]
            .as_array()
            .unwrap_or_else(|| panic!("{}", r.transcript()))
            .iter()
            .map(|n| {
                (
                    n["entry_id"].as_str().unwrap().to_owned(),
                    n["decision"].as_str().unwrap().to_owned(),
                    n["reasons"][0].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let expected = [
        (
            "app".to_owned(),
            "pending".to_owned(),
            "no_provider".to_owned(),
        ),
        (
            "cache".to_owned(),
            "reused".to_owned(),
            "identity_unchanged".to_owned(),
        ),
        (
            "db".to_owned(),
            "removed".to_owned(),
            "entry_removed".to_owned(),
        ),
    ];
    let plan = chassis(d, &["plan", "c.toml", "--allow-pending"]);
    assert_eq!(decisions(&plan), expected, "{}", plan.transcript());
    let publish = chassis(d, &["publish", "c.toml", "--allow-pending"]);
    assert_eq!(decisions(&publish), expected, "{}", publish.transcript());
    let text = run_in(d, &["explain", "reuse", "gen_0001", "gen_0002", "app"], &[]);
    assert!(
        text.stdout.contains("app: gen_0001 -> gen_0002: pending")
            && text.stdout.contains("still declared")
            && text.stdout.contains("no_provider"),
        "{}",
        text.transcript()
    );
    let diff = chassis(d, &["diff", "generations", "gen_0001", "gen_0002"]);
    let doc: serde_json::Value = serde_json::from_str(&diff.stdout).unwrap();
    let app = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["entry_id"] == "app")
        .unwrap();
    assert_eq!(app["kind"], "pending");
    assert_eq!(app["reasons"], serde_json::json!(["no_provider"]));
    // Still pending two generations on: a diff across them says so too.
    std::fs::write(
        d.join("c.toml"),
        PROVIDER_AND_CONSUMER
            .replace("[entries.db]\nplugin = \"pg\"\n", "")
            .replace(
                "[entries.cache]\n",
                "[entries.cache]\nconfig = { size = 2 }\n",
            ),
    )
    .unwrap();
    let third = chassis(d, &["publish", "c.toml", "--allow-pending"]);
    assert_eq!(third.code, 0, "{}", third.transcript());
    let diff = chassis(d, &["diff", "generations", "gen_0001", "gen_0003"]);
    let doc: serde_json::Value = serde_json::from_str(&diff.stdout).unwrap();
    let app = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["entry_id"] == "app")
        .unwrap();
    assert_eq!(app["kind"], "pending", "{}", diff.stdout);
}

#[test]
fn explain_says_why_each_candidate_lost_and_how_to_choose() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("c.toml"),
        r#"version = 1
[plugins.old]
version = "1.0.0"
provides = { database = "1.2.0" }
[plugins.pg]
version = "1.0.0"
provides = { database = "1.4.0" }
[plugins.app]
version = "1.0.0"
requires = { database = ">=1.3,<2" }
[entries.old]
[entries.finance-primary-database-replica-one]
plugin = "pg"
[entries.finance-primary-database-replica-two]
plugin = "pg"
[entries.app]
"#,
    )
    .unwrap();
    let json = chassis(d, &["explain", "requirement", "app", "database", "c.toml"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let old = doc["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["entry"] == "old")
        .unwrap();
    // A version mismatch is not eligible, and says why in a sentence.
    assert_eq!(old["eligible"], false, "{old}");
    assert_eq!(old["active"], true);
    assert_eq!(
        old["why"],
        "provides `database` 1.2.0; the requirement accepts `<2,>=1.3`"
    );
    assert_eq!(
        doc["prefer_snippets"][1],
        "[prefer]\ndatabase = \"finance-primary-database-replica-one\""
    );
    let text = run_in(
        d,
        &["explain", "requirement", "app", "database", "c.toml"],
        &[],
    );
    let line = text
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("old "))
        .unwrap();
    assert!(!line.contains("eligible"), "{line}");
    assert!(
        text.stdout.contains(
            "    [entries.app]\n    prefer = { database = \"finance-primary-database-replica-one\" }"
        ),
        "{}",
        text.stdout
    );
    // check's help has the snippet on a line of its own, and however
    // narrow the terminal, an id is never broken (at a hyphen or anywhere).
    let wide = run_in(d, &["check", "c.toml"], &[]);
    assert!(
        wide.stderr.lines().any(|l| l.trim()
            == "prefer = { database = \"finance-primary-database-replica-one\" }"),
        "{}",
        wide.stderr
    );
    let narrow = run_in(d, &["check", "c.toml"], &[("COLUMNS", "40")]);
    let help: Vec<&str> = narrow
        .stderr
        .lines()
        .skip_while(|l| !l.contains("help: several"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(help.len() > 3, "{}", narrow.stderr);
    assert_eq!(
        help.join("\n")
            .matches("finance-primary-database-replica-")
            .count(),
        3,
        "{}",
        narrow.stderr
    );
    assert!(
        help.iter().all(|l| !l.trim_end().ends_with('-')),
        "{}",
        narrow.stderr
    );
}

#[test]
fn a_cycle_reads_in_the_direction_of_the_edges_and_optional_requirements_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // a requires beta (b), b requires gamma (c), c requires alpha (a): each
    // provides to the one that requires it.
    std::fs::write(
        d.join("c.toml"),
        r#"version = 1
[plugins.a]
version = "1.0.0"
provides = { alpha = "1.0.0" }
requires = { beta = "" }
[plugins.b]
version = "1.0.0"
provides = { beta = "1.0.0" }
requires = { gamma = "" }
[plugins.c]
version = "1.0.0"
provides = { gamma = "1.0.0" }
requires = { alpha = "" }
[plugins.d]
version = "1.0.0"
provides = { delta = "1.0.0" }
optional = { cache = "", delta2 = "" }
[plugins.e]
version = "1.0.0"
provides = { delta2 = "1.0.0" }
[entries.a]
[entries.b]
[entries.c]
[entries.d]
[entries.e]
"#,
    )
    .unwrap();
    let r = run_in(d, &["check", "c.toml"], &[]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("cycle     a -> c -> b -> a (provider -> consumer)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr
            .contains("dependency cycle (provider -> consumer): a -> c -> b -> a"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("1/2 optional bound"), "{}", r.stdout);
    let publish = run_in(d, &["publish", "c.toml"], &[]);
    assert!(
        publish.stderr.contains("a -> c -> b -> a"),
        "{}",
        publish.stderr
    );
}

#[test]
fn a_diff_names_every_changed_key_and_masks_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long_prompt: String = (1..=40).map(|i| format!("Rule {i}.\n")).collect();
    let base = format!(
        r#"version = 1
[plugins.db]
version = "1.0.0"
[entries."finance-db"]
plugin = "db"
config = {{ timeout_seconds = 5, api_key = "sk-canary-old-1", "a.b" = 1, dsn = "postgres://u:pw-canary-1@h/db" }}
[entries.model]
plugin = "scripted"
config = {{ turns = [{{ text = "done" }}] }}
[agents.assistant]
prompt = """
{long_prompt}"""
"#
    );
    let edited = base
        .replace("timeout_seconds = 5", "timeout_seconds = 30")
        .replace("sk-canary-old-1", "sk-canary-new-2")
        .replace("pw-canary-1", "pw-canary-2")
        .replace("\"a.b\" = 1", "\"a.b\" = 2")
        .replace("Rule 3.\n", "Rule 3, changed.\n")
        .replace("Rule 30.\n", "");
    std::fs::write(d.join("old.toml"), &base).unwrap();
    std::fs::write(d.join("new.toml"), &edited).unwrap();
    let text = run_in(d, &["diff", "generations", "old.toml", "new.toml"], &[]);
    assert_eq!(text.code, 0, "{}", text.transcript());
    let out = &text.stdout;
    for line in [
        "  ~ entries.finance-db.config.timeout_seconds: 5 -> 30",
        "  ~ entries.finance-db.config.\"a.b\": 1 -> 2",
        "  ~ entries.finance-db.config.api_key (changed)",
        "  ~ entries.finance-db.config.dsn (changed)",
        "  ~ agents.assistant.prompt:",
        "      -Rule 3.",
        "      +Rule 3, changed.",
    ] {
        assert!(out.contains(line), "{line:?}:\n{out}");
    }
    assert!(!out.contains("canary"), "{out}");
    // The prompt's diff is at most 20 lines, then says how many more.
    let prompt_lines = out
        .lines()
        .skip_while(|l| !l.starts_with("  ~ agents.assistant.prompt:"))
        .skip(1)
        .take_while(|l| l.starts_with("      "))
        .count();
    assert!(prompt_lines <= 21, "{out}");
    for format in ["json", "markdown"] {
        let r = run_in(
            d,
            &[
                "--format",
                format,
                "diff",
                "generations",
                "old.toml",
                "new.toml",
            ],
            &[],
        );
        assert!(!r.stdout.contains("canary"), "{format}: {}", r.stdout);
        assert!(
            r.stdout.contains("timeout_seconds"),
            "{format}: {}",
            r.stdout
        );
    }
    let json = chassis(d, &["diff", "generations", "old.toml", "new.toml"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let key = |path: &[&str]| {
        doc["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["path"] == serde_json::json!(path))
            .unwrap_or_else(|| panic!("{path:?}: {}", doc["keys"]))
            .clone()
    };
    assert_eq!(
        key(&["entries", "finance-db", "config", "timeout_seconds"]),
        serde_json::json!({"path": ["entries", "finance-db", "config", "timeout_seconds"], "old": 5, "new": 30, "masked": false})
    );
    assert_eq!(
        key(&["entries", "finance-db", "config", "api_key"])["masked"],
        true
    );

    // Between stored generations the store names the keys, with no values.
    std::fs::copy(d.join("old.toml"), d.join("c.toml")).unwrap();
    assert_eq!(chassis(d, &["publish", "c.toml"]).code, 0);
    std::fs::copy(d.join("new.toml"), d.join("c.toml")).unwrap();
    assert_eq!(chassis(d, &["publish", "c.toml"]).code, 0);
    let stored = run_in(d, &["diff", "generations", "gen_0001", "gen_0002"], &[]);
    for line in [
        "  ~ entries.finance-db.config.timeout_seconds (changed)",
        "  ~ entries.finance-db.config.\"a.b\" (changed)",
    ] {
        assert!(stored.stdout.contains(line), "{line:?}:\n{}", stored.stdout);
    }
    assert!(!stored.stdout.contains("-> 30"), "{}", stored.stdout);
    // A value that may be a credential is never fingerprinted (a short
    // password could be guessed from its HMAC by whoever holds the store):
    // when only such a value changed, the entry's config is the row.
    assert!(!stored.stdout.contains("api_key"), "{}", stored.stdout);
    std::fs::write(
        d.join("c.toml"),
        edited.replace("sk-canary-new-2", "sk-canary-new-3"),
    )
    .unwrap();
    assert_eq!(chassis(d, &["publish", "c.toml"]).code, 0);
    let stored = run_in(d, &["diff", "generations", "gen_0002", "gen_0003"], &[]);
    assert!(
        stored
            .stdout
            .contains("  ~ entries.finance-db.config (changed)"),
        "{}",
        stored.stdout
    );
    let db = std::fs::read(d.join(".chassis/state.db")).unwrap();
    assert!(
        !String::from_utf8_lossy(&db).contains("canary"),
        "a value in the store"
    );
}

#[test]
fn one_change_among_many_nodes_is_a_short_plan_unless_all() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut text = String::from("version = 1\n[plugins.p]\nversion = \"1.0.0\"\n");
    for i in 0..200 {
        text.push_str(&format!(
            "[entries.e{i:03}]\nplugin = \"p\"\nconfig = {{ n = 1 }}\n"
        ));
    }
    std::fs::write(d.join("c.toml"), &text).unwrap();
    assert_eq!(chassis(d, &["publish", "c.toml"]).code, 0);
    std::fs::write(
        d.join("c.toml"),
        text.replacen("config = { n = 1 }", "config = { n = 2 }", 1),
    )
    .unwrap();
    let plan = run_in(d, &["plan", "c.toml"], &[]);
    assert!(plan.stdout.lines().count() < 15, "{}", plan.stdout);
    assert!(
        plan.stdout.contains("rebuild  e000")
            && plan
                .stdout
                .contains("… 199 reused (identity unchanged; --all lists them)"),
        "{}",
        plan.stdout
    );
    let all = run_in(d, &["plan", "c.toml", "--all"], &[]);
    assert!(all.stdout.lines().count() > 200, "{}", all.stdout);
    let json = chassis(d, &["plan", "c.toml"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 200);
    assert_eq!(chassis(d, &["publish", "c.toml"]).code, 0);
    let diff = run_in(d, &["diff", "generations", "gen_0001", "gen_0002"], &[]);
    assert!(
        diff.stdout.contains("… 199 reused") && diff.stdout.lines().count() < 20,
        "{}",
        diff.stdout
    );
}

#[test]
fn an_unpinned_mcp_entry_is_refused_before_its_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The command would fail if it were ever started.
    std::fs::write(
        d.join("c.toml"),
        "version = 1\n[entries.fs]\nplugin = \"mcp\"\nconfig = { command = \"/bin/false\" }\n",
    )
    .unwrap();
    let codes = |r: &Run| -> Vec<String> {
        r.stderr
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|d| d["code"].as_str().map(str::to_owned))
            .collect()
    };
    let check = chassis(d, &["check", "c.toml"]);
    assert_eq!(check.code, 1, "{}", check.transcript());
    assert!(codes(&check).contains(&"load::mcp-lock-missing".to_owned()));
    let plan = chassis(d, &["plan", "c.toml"]);
    assert_eq!(plan.code, 1, "{}", plan.transcript());
    let doc: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(
        doc["refusal"]["problems"][0]["code"],
        "load::mcp-lock-missing"
    );
    let publish = chassis(d, &["publish", "c.toml"]);
    assert_eq!(publish.code, 1, "{}", publish.transcript());
    assert!(
        publish.stderr.contains("[load::mcp-lock-missing]")
            && codes(&publish).contains(&"publish::refused".to_owned()),
        "{}",
        publish.transcript()
    );
    assert!(!d.join(".chassis").exists());
    // An entry that would not be mounted needs no pinned tools: one whose
    // `enabled_if` does not hold publishes, and leaves as `entry_skipped`.
    std::fs::write(
        d.join("c.toml"),
        "version = 1\n[plugins.p]\nversion = \"1.0.0\"\n[entries.p]\n[entries.fs]\nplugin = \"mcp\"\nconfig = { command = \"/bin/false\" }\nenabled_if = { env = \"CHASSIS_TEST_UNSET_VARIABLE\" }\n",
    )
    .unwrap();
    let plan = chassis(d, &["plan", "c.toml"]);
    assert_eq!(plan.code, 0, "{}", plan.transcript());
    let publish = chassis(d, &["publish", "c.toml"]);
    assert_eq!(publish.code, 0, "{}", publish.transcript());
    std::fs::write(
        d.join("c.toml"),
        "version = 1\n[plugins.p]\nversion = \"1.0.0\"\n[entries.p]\nenabled = false\n",
    )
    .unwrap();
    let gone = chassis(d, &["publish", "c.toml"]);
    let doc: serde_json::Value = serde_json::from_str(&gone.stdout).unwrap();
    assert_eq!(
        doc["nodes"][0]["reasons"],
        serde_json::json!(["entry_disabled"]),
        "{}",
        gone.stdout
    );
}

/// An entry id that begins with `/` reads as a scope path wherever a
/// command takes either: `explain requirement /x database` (the command
/// `check`'s hint spells for scope `/x`) explained the entry instead.
#[test]
fn an_entry_id_that_looks_like_a_scope_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = r#"version = 1
[plugins.db]
version = "1.0.0"
provides = { database = "1.0.0" }
[plugins.app]
version = "1.0.0"
requires = { database = ">=1,<2" }

[entries."/x"]
plugin = "app"
"#;
    std::fs::write(d.join("c.toml"), text).unwrap();
    let r = chassis(d, &["check", "c.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert_eq!(error_codes(&r), ["load::bad-name"], "{}", r.stderr);
    let diag: serde_json::Value = r
        .stderr
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap();
    assert!(
        diag["message"]
            .as_str()
            .unwrap()
            .contains("`/x` begins with `/`"),
        "{diag}"
    );
    // The span is the key, `"/x"` on line 9.
    let labels = diag["labels"].to_string();
    assert!(labels.contains("\"line\":9"), "{diag}");
    assert!(diag["help"].to_string().contains("scope path"), "{diag}");
    let r = chassis(d, &["explain", "requirement", "/x", "database", "c.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
}

/// A global preference given in the root and again in an include: both
/// places, and a help that reads as a sentence.
#[test]
fn a_global_preference_defined_twice_says_so_in_a_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("c.toml"),
        r#"version = 1
include = ["more.toml"]
[plugins.cache]
version = "1.0.0"
provides = { cache = "1.0.0" }
[entries.a]
plugin = "cache"
[entries.b]
plugin = "cache"
[prefer]
cache = "a"
"#,
    )
    .unwrap();
    std::fs::write(
        d.join("more.toml"),
        "version = 1\n[prefer]\ncache = \"b\"\n",
    )
    .unwrap();
    let r = chassis(d, &["check", "c.toml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert_eq!(error_codes(&r), ["load::duplicate-id"], "{}", r.stderr);
    let diag: serde_json::Value = r
        .stderr
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap();
    assert_eq!(
        diag["message"], "the global preference for `cache` is defined twice",
        "{diag}"
    );
    assert_eq!(
        diag["help"],
        serde_json::json!([
            "each global preference may be defined once across the composition and its includes"
        ]),
        "{diag}"
    );
}

/// Agents that call each other as sub-agents are a cycle like a
/// requirement cycle: a negative answer (exit 1) that `check` reports with
/// its place and `plan`, `publish` and `run` refuse, not a file that could
/// not be loaded (exit 2).
#[test]
fn a_sub_agent_cycle_is_a_negative_answer_like_a_requirement_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("c.toml"),
        r#"version = 1
[entries.model]
plugin = "scripted"
config = { turns = [{ text = "done" }] }

[agents.a]
prompt = "A."
sub_agents = ["b"]

[agents.b]
prompt = "B."
sub_agents = ["a"]
"#,
    )
    .unwrap();
    let check = chassis(d, &["check", "c.toml"]);
    assert_eq!(check.code, 1, "{}", check.transcript());
    assert_eq!(error_codes(&check), ["resolve::cycle"], "{}", check.stderr);
    let diag: serde_json::Value = check
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|d| d["code"] == "resolve::cycle")
        .unwrap();
    assert!(
        diag["message"].as_str().unwrap().contains("a -> b -> a"),
        "{diag}"
    );
    assert_eq!(diag["labels"][0]["line"], 6, "{diag}");
    for args in [
        &["plan", "c.toml"][..],
        &["publish", "c.toml"],
        &["run", "c.toml", "--agent", "a", "--input", "hi"],
    ] {
        let r = chassis(d, args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.transcript());
        assert!(
            error_codes(&r).contains(&"resolve::cycle".to_owned()),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert!(
        !d.join(".chassis").exists(),
        "a refused publish records nothing"
    );
}

/// A plugin file or an include that cannot be read is the one error:
/// not first an unknown tool or plugin that the unread file declares.
#[test]
fn an_unreadable_plugin_file_or_include_is_reported_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let new = run_in(d, &["plugin", "new", "greeter", "--lang", "python"], &[]);
    assert_eq!(new.code, 0, "{}", new.transcript());
    std::fs::remove_file(d.join("greeter/chassis_plugin.py")).unwrap();
    let composition = |include: &str| {
        format!(
            r#"version = 1
include = ["{include}"]
[entries.model]
plugin = "scripted"
config = {{ turns = [{{ text = "done" }}] }}
[entries.other]
plugin = "greeter"
[agents.a]
prompt = "A."
tools = ["greeter_echo"]
"#
        )
    };
    for (include, file) in [
        ("greeter/plugin.toml", "chassis_plugin.py"),
        ("gone/plugin.toml", "gone/plugin.toml"),
    ] {
        std::fs::write(d.join("c.toml"), composition(include)).unwrap();
        let r = chassis(d, &["check", "c.toml"]);
        assert_eq!(r.code, 2, "{}", r.transcript());
        assert_eq!(error_codes(&r), ["load::include-missing"], "{}", r.stderr);
        assert!(r.stderr.contains(file), "{}", r.stderr);
    }
}
