//! Generated files in the repository must be current.

use crate::harness::{root, run};

#[test]
fn completions_are_current() {
    for (shell, file) in [
        ("bash", "chassis.bash"),
        ("zsh", "_chassis"),
        ("fish", "chassis.fish"),
        ("powershell", "_chassis.ps1"),
        ("elvish", "chassis.elv"),
    ] {
        let r = run(&["completions", shell]);
        assert_eq!(r.code, 0);
        let path = root().join("completions").join(file);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == r.stdout,
            "completions/{file} is stale: run `cargo run -- completions {shell} --dir completions`"
        );
    }
}

#[test]
fn schema_command_prints_the_checked_in_schema() {
    let r = run(&["schema"]);
    assert_eq!(r.code, 0);
    let committed =
        std::fs::read_to_string(root().join("schemas/composition.schema.json")).unwrap();
    assert_eq!(
        committed, r.stdout,
        "schemas/composition.schema.json is stale: run `cargo run -- schema --write schemas`"
    );
}

#[test]
fn help_teaches_exit_codes() {
    let r = run(&["--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("Exit codes"), "{}", r.stdout);
}

#[test]
fn writing_generated_files_reports_a_line_or_a_json_note() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let r = run(&["schema", "--write", d]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.starts_with("wrote "), "{}", r.stderr);
    let r = run(&["--format", "json", "schema", "--write", d]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let note: serde_json::Value = serde_json::from_str(r.stderr.trim()).unwrap();
    assert_eq!(note["type"], "diagnostic");
    assert_eq!(note["severity"], "note");
    assert!(note["message"].as_str().unwrap().starts_with("wrote "));
    assert!(dir.path().join("composition.schema.json").exists());
}
