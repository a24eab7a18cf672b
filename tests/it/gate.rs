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
