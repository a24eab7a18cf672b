//! Golden tests: every example and every error, text and JSON, each with its
//! exit code.

use crate::harness::{run, run_in};

macro_rules! golden {
    ($name:ident, $code:expr, [$($arg:expr),* $(,)?]) => {
        #[test]
        fn $name() {
            let r = run(&[$($arg),*]);
            insta::assert_snapshot!(stringify!($name), r.transcript());
            assert_eq!(r.code, $code, "{}", r.transcript());
        }
    };
}

golden!(check_minimal, 0, ["check", "examples/minimal.toml"]);
golden!(check_scoped, 0, ["check", "examples/scoped.toml"]);
golden!(check_migration, 0, ["check", "examples/migration.toml"]);
golden!(check_pending, 1, ["check", "examples/broken/pending.toml"]);
golden!(check_mcp, 0, ["check", "examples/mcp.toml"]);
golden!(tools_mcp, 0, ["tools", "examples/mcp.toml"]);
golden!(
    tools_json_quickstart,
    0,
    ["--format", "json", "tools", "examples/quickstart.toml"]
);
golden!(check_invalid, 2, ["check", "examples/broken/invalid.toml"]);
golden!(check_syntax, 2, ["check", "examples/broken/syntax.toml"]);
golden!(check_version, 2, ["check", "examples/broken/version.toml"]);
golden!(check_missing_file, 2, ["check", "examples/nope.toml"]);
golden!(
    check_json_pending,
    1,
    ["--format", "json", "check", "examples/broken/pending.toml"]
);
golden!(
    check_several_files,
    2,
    [
        "check",
        "examples/minimal.toml",
        "examples/broken/version.toml"
    ]
);
golden!(snapshot_minimal, 0, ["snapshot", "examples/minimal.toml"]);
golden!(snapshot_scoped, 0, ["snapshot", "examples/scoped.toml"]);
golden!(
    snapshot_pending,
    0,
    ["snapshot", "examples/broken/pending.toml"]
);
golden!(
    explain_requirement_preferred,
    0,
    [
        "explain",
        "requirement",
        "finance-agent",
        "database",
        "examples/scoped.toml"
    ]
);
golden!(
    explain_requirement_hidden,
    0,
    [
        "explain",
        "requirement",
        "research-agent",
        "scheduler",
        "examples/scoped.toml"
    ]
);
golden!(
    explain_requirement_scope_consumer,
    0,
    [
        "explain",
        "requirement",
        "/finance",
        "database",
        "examples/scoped.toml"
    ]
);
golden!(
    explain_requirement_ambiguous_json,
    0,
    [
        "--format",
        "json",
        "explain",
        "requirement",
        "reporting",
        "database",
        "examples/broken/pending.toml"
    ]
);
golden!(
    explain_requirement_multi_contract,
    0,
    [
        "explain",
        "requirement",
        "report",
        "database",
        "examples/migration.toml"
    ]
);
golden!(
    explain_requirement_unknown_consumer,
    2,
    [
        "explain",
        "requirement",
        "finance-agnt",
        "database",
        "examples/scoped.toml"
    ]
);
golden!(
    explain_requirement_wrong_scope,
    2,
    [
        "explain",
        "requirement",
        "finance-agent",
        "database",
        "--scope",
        "/research",
        "examples/scoped.toml"
    ]
);
golden!(
    explain_scope_research,
    0,
    ["explain", "scope", "/research", "examples/scoped.toml"]
);
golden!(
    explain_scope_finance_json,
    0,
    [
        "--format",
        "json",
        "explain",
        "scope",
        "/finance",
        "examples/scoped.toml"
    ]
);
golden!(
    explain_scope_unknown,
    2,
    ["explain", "scope", "/reserch", "examples/scoped.toml"]
);
golden!(
    diff_text,
    0,
    [
        "diff",
        "generations",
        "examples/scoped.toml",
        "tests/data/diff/new.toml"
    ]
);
golden!(
    diff_markdown_exit_code,
    1,
    [
        "--format",
        "markdown",
        "diff",
        "generations",
        "examples/scoped.toml",
        "tests/data/diff/new.toml",
        "--exit-code"
    ]
);
golden!(
    diff_json,
    0,
    [
        "--format",
        "json",
        "diff",
        "generations",
        "examples/scoped.toml",
        "tests/data/diff/new.toml"
    ]
);
golden!(
    diff_same_exit_code,
    0,
    [
        "diff",
        "generations",
        "examples/scoped.toml",
        "examples/scoped.toml",
        "--exit-code"
    ]
);
golden!(
    diff_unchanged,
    0,
    [
        "diff",
        "generations",
        "examples/minimal.toml",
        "examples/minimal.toml",
        "--include-unchanged"
    ]
);
golden!(
    diff_bad_operand,
    2,
    [
        "diff",
        "generations",
        "examples/minimal.toml",
        "nope:missing.toml"
    ]
);
golden!(graph_dot, 0, ["graph", "examples/scoped.toml"]);
golden!(
    graph_mermaid,
    0,
    ["--format", "mermaid", "graph", "examples/scoped.toml"]
);
golden!(
    wrong_format,
    2,
    ["--format", "markdown", "check", "examples/minimal.toml"]
);
golden!(unknown_command, 2, ["frobnicate"]);

#[test]
fn snapshot_is_deterministic_and_reads_back_for_diff() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("snap.json");
    let out_s = out.to_str().unwrap();
    let a = run(&["snapshot", "examples/scoped.toml"]);
    let b = run(&["snapshot", "examples/scoped.toml"]);
    assert_eq!(a.stdout, b.stdout);
    let w = run(&["snapshot", "examples/scoped.toml", "--out", out_s]);
    assert_eq!(w.code, 0, "{}", w.transcript());
    let d = run(&[
        "diff",
        "generations",
        out_s,
        "examples/scoped.toml",
        "--exit-code",
    ]);
    assert_eq!(d.code, 0, "{}", d.transcript());
    // A corrupted envelope is rejected, never guessed at.
    let text =
        std::fs::read_to_string(&out)
            .unwrap()
            .replacen("research-model", "research-modem", 1);
    std::fs::write(&out, text).unwrap();
    let d = run(&["diff", "generations", out_s, "examples/scoped.toml"]);
    assert_eq!(d.code, 2, "{}", d.transcript());
    assert!(d.stderr.contains("corrupted"), "{}", d.stderr);
}

#[test]
fn diff_reads_a_git_revision_with_its_includes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(p)
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
    };
    std::fs::create_dir(p.join("plugins")).unwrap();
    std::fs::write(
        p.join("plugins/db.toml"),
        "[plugins.db]\nversion = \"1.0.0\"\nprovides = { database = \"1.0.0\" }\n",
    )
    .unwrap();
    std::fs::write(
        p.join("composition.toml"),
        "version = 1\ninclude = [\"plugins/\"]\n\n[plugins.app]\nversion = \"1.0.0\"\nrequires = { database = \">=1,<2\" }\n\n[entries.db]\n[entries.app]\n",
    )
    .unwrap();
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "one"]);
    std::fs::write(
        p.join("plugins/db.toml"),
        "[plugins.db]\nversion = \"1.1.0\"\nprovides = { database = \"1.1.0\" }\n",
    )
    .unwrap();
    let r = run_in(
        p,
        &[
            "--color",
            "never",
            "diff",
            "generations",
            "HEAD:composition.toml",
            "composition.toml",
            "--exit-code",
        ],
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stdout.contains("db"), "{}", r.stdout);
    let same = run_in(
        p,
        &[
            "--color",
            "never",
            "diff",
            "generations",
            "HEAD:composition.toml",
            "HEAD:composition.toml",
            "--exit-code",
        ],
        &[],
    );
    assert_eq!(same.code, 0, "{}", same.transcript());
    let missing = run_in(
        p,
        &[
            "--color",
            "never",
            "diff",
            "generations",
            "no-such-rev:composition.toml",
            "composition.toml",
        ],
        &[],
    );
    assert_eq!(missing.code, 2, "{}", missing.transcript());
}

#[test]
fn entry_order_in_the_file_never_changes_the_digest() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(crate::harness::root().join("examples/migration.toml")).unwrap();
    // Reverse the order of the top-level tables.
    let mut blocks: Vec<&str> = text.split("\n\n").collect();
    let head = blocks.remove(0);
    blocks.reverse();
    let reversed = format!("{head}\n\n{}\n", blocks.join("\n\n"));
    let a = dir.path().join("a.toml");
    std::fs::write(&a, reversed).unwrap();
    let x = run(&["snapshot", "examples/migration.toml"]);
    let y = run(&["snapshot", a.to_str().unwrap()]);
    assert_eq!(x.code, 0);
    assert_eq!(x.stdout, y.stdout, "{}", y.transcript());
}
golden!(check_policy, 0, ["check", "examples/policy.toml"]);
golden!(
    check_scope_policy,
    0,
    ["check", "examples/scope-policy.toml"]
);
golden!(
    explain_scope_policy_provider,
    0,
    [
        "explain",
        "scope",
        "/agents/finance",
        "examples/scope-policy.toml"
    ]
);
golden!(
    explain_scope_policy_default,
    0,
    [
        "explain",
        "scope",
        "/agents/support",
        "examples/scope-policy.toml"
    ]
);
golden!(
    explain_scope_policy_json,
    0,
    [
        "--format",
        "json",
        "explain",
        "scope",
        "/agents/finance",
        "examples/scope-policy.toml"
    ]
);
golden!(
    check_undeclared_permission,
    1,
    ["check", "examples/broken/undeclared-permission.toml"]
);

#[test]
fn a_long_activation_order_is_cut_in_text_and_whole_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("version = 1\n[plugins.p]\nversion = \"1.0.0\"\n");
    for i in 0..60 {
        text.push_str(&format!("[entries.e{i:02}]\nplugin = \"p\"\n"));
    }
    std::fs::write(dir.path().join("c.toml"), text).unwrap();
    let r = run_in(dir.path(), &["--color", "never", "check", "c.toml"], &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stdout
            .contains("e49, … (10 more; `--format json` lists all)"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("e50"), "{}", r.stdout);
    let r = run_in(dir.path(), &["--format", "json", "check", "c.toml"], &[]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["files"][0]["activation_order"].as_array().map(Vec::len),
        Some(60)
    );
}

/// Under `--format json`, every finding on stderr is a JSON diagnostic line
/// of one shape (`type`, `code`, `severity`, `message`, `labels`, `help` as
/// a list), whether the loader, a store or a command found it.
#[test]
fn json_errors_are_diagnostic_lines_of_one_shape() {
    let cases: &[&[&str]] = &[
        &["explain", "scope", "/nope", "examples/scoped.toml"],
        &["diff", "generations", "no-such-a", "no-such-b"],
        &[
            "runs",
            "show",
            "run_0123456789ab",
            "--state",
            "target/no-such-store.db",
        ],
        &["check", "examples/broken/invalid.toml"],
        &[
            "run",
            "examples/quickstart.toml",
            "--agent",
            "nope",
            "--input",
            "x",
        ],
        &[
            "publish",
            "examples/broken/pending.toml",
            "--state",
            "target/never-written.db",
        ],
    ];
    for args in cases {
        let mut all = vec!["--format", "json"];
        all.extend_from_slice(args);
        let r = run(&all);
        assert_ne!(r.code, 0, "{args:?}: {}", r.transcript());
        let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(!lines.is_empty(), "{args:?}: {}", r.transcript());
        for line in lines {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {line}"));
            assert_eq!(v["type"], "diagnostic", "{args:?}: {line}");
            assert!(v["help"].is_array(), "{args:?}: {line}");
            assert!(v["labels"].is_array(), "{args:?}: {line}");
            assert!(
                v["message"]
                    .as_str()
                    .is_some_and(|m| !m.starts_with("error")),
                "{args:?}: {line}"
            );
            assert!(
                matches!(v["severity"].as_str(), Some("error" | "warning" | "note")),
                "{args:?}: {line}"
            );
        }
    }
}

/// `explain requirement` on a consumer that is disabled says so, instead of
/// "holds no requirement" alone.
#[test]
fn explaining_a_disabled_consumer_says_it_is_disabled() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "version = 1\n[plugins.p]\nversion = \"1.0.0\"\nrequires = { db = \">=1\" }\n[entries.y]\nplugin = \"p\"\nenabled = false\n",
    )
    .unwrap();
    let r = run_in(
        dir.path(),
        &["explain", "requirement", "y", "db", "c.toml"],
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("`y` is disabled"), "{}", r.transcript());
}

#[test]
fn diff_loads_two_files_side_by_side_and_reports_them_in_turn() {
    // The two sides load at the same time; what each file's load reports
    // reads as if they had loaded in turn: the old side's first.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let file = |key: &str, n: u32| {
        let mut text = format!(
            "version = 1\n\n[plugins.svc]\nversion = \"1.0.0\"\n\n[entries.svc]\nconfig.{key} = \"literal-value-{key}\"\n"
        );
        // Enough entries that each load takes a while.
        for i in 0..n {
            text.push_str(&format!("\n[entries.e{i}]\nplugin = \"svc\"\n"));
        }
        text
    };
    std::fs::write(p.join("old.toml"), file("api_key", 2000)).unwrap();
    std::fs::write(p.join("new.toml"), file("password", 10)).unwrap();
    for _ in 0..3 {
        let r = run_in(
            p,
            &[
                "--color",
                "never",
                "diff",
                "generations",
                "old.toml",
                "new.toml",
            ],
            &[],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
        let (old, new) = (
            r.stderr.find("`api_key` holds a literal value"),
            r.stderr.find("`password` holds a literal value"),
        );
        assert!(old.is_some() && new.is_some(), "{}", r.stderr);
        assert!(old < new, "the old side's warning first:\n{}", r.stderr);
    }
    // A side that does not load fails the diff: the old side's error when
    // both fail, as in turn; the new side's when only it fails.
    std::fs::write(p.join("bad_a.toml"), "version = 1\n[entries.x\n").unwrap();
    std::fs::write(p.join("bad_b.toml"), "version = 2\n").unwrap();
    let r = run_in(
        p,
        &[
            "--color",
            "never",
            "diff",
            "generations",
            "bad_a.toml",
            "bad_b.toml",
        ],
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("bad_a.toml"), "{}", r.stderr);
    assert!(!r.stderr.contains("bad_b.toml"), "{}", r.stderr);
    let r = run_in(
        p,
        &[
            "--color",
            "never",
            "diff",
            "generations",
            "new.toml",
            "bad_b.toml",
        ],
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("bad_b.toml"), "{}", r.stderr);
}
