//! The layering, held by reading the sources: the application layer never
//! names a front end nor writes to the terminal, and nothing below it names
//! it (or the CLI). Test-only files (`tests.rs`, `tests_*.rs`,
//! `*_tests.rs`, `tests/`) may use whatever they test with.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_only(path: &Path) -> bool {
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    name == "tests"
        || name.starts_with("tests_")
        || name.ends_with("_tests")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// Every `(file, line number, line)` of production code under `src/<dir>`
/// that contains one of `needles` (comments included: a doc that names a
/// front end is a smell too, and there is none).
fn offending(dirs: &[&str], needles: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root.join(dir), &mut files);
    }
    let mut out = Vec::new();
    for file in files.iter().filter(|f| !is_test_only(f)) {
        let text = std::fs::read_to_string(file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            if needles.iter().any(|needle| line.contains(needle)) {
                out.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn the_application_layer_names_no_front_end_and_never_prints() {
    let found = offending(
        &["app"],
        &[
            "crate::cli",
            "super::cli",
            "clap::",
            "println!",
            "print!(",
            "eprint",
            "dbg!",
            "io::stdout",
            "io::stderr",
            "process::exit",
            "IsTerminal",
        ],
    );
    assert!(
        found.is_empty(),
        "the app layer must not print or name the CLI:\n{}",
        found.join("\n")
    );
}

#[test]
fn nothing_below_the_application_layer_names_it_or_the_cli() {
    let found = offending(
        &[
            "engine", "load", "lock", "plugins", "process", "runtime", "store", "trace",
        ],
        &["crate::app", "crate::cli"],
    );
    assert!(
        found.is_empty(),
        "a lower layer names an upper one:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_http_front_names_no_cli_and_never_prints() {
    let found = offending(
        &["serve"],
        &[
            "crate::cli",
            "super::cli",
            "clap::",
            "println!",
            "print!(",
            "eprint",
            "io::stdout",
            "io::stderr",
            "process::exit",
        ],
    );
    assert!(
        found.is_empty(),
        "the HTTP front must not print or name the CLI:\n{}",
        found.join("\n")
    );
    // It is a front over the application layer, and nothing names it.
    assert!(!offending(&["serve"], &["crate::app::host"]).is_empty());
    assert!(
        offending(
            &[
                "app", "engine", "load", "lock", "plugins", "process", "runtime", "store", "trace"
            ],
            &["crate::serve"],
        )
        .is_empty()
    );
}

#[test]
fn the_scan_sees_what_it_looks_for() {
    // The scan is not vacuous: the CLI does name the app layer, and prints.
    assert!(!offending(&["cli"], &["crate::app"]).is_empty());
    assert!(!offending(&["cli"], &["io::stderr"]).is_empty());
    assert!(is_test_only(Path::new("src/load/tests_more.rs")));
    assert!(!is_test_only(Path::new("src/app/run.rs")));
}
