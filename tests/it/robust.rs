//! Inputs that used to crash, hang or litter: each is a clear error with
//! the right exit code, and nothing is left behind.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{Run, run_in};

/// `chassis ARGS` in `dir`, killed (and the test failed) after `limit`.
fn run_within(dir: &std::path::Path, args: &[&str], limit: Duration) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chassis"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drained while it runs: a report larger than a pipe's buffer must not
    // stall the process.
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "`chassis {}` did not finish within {limit:?}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().unwrap();
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
    }
}

#[test]
fn a_diagnostic_past_column_65535_is_reported_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!("version = 1\nx = \"{}\" = 3\n", "a".repeat(70_000));
    std::fs::write(dir.path().join("c.toml"), long).unwrap();
    let r = run_in(dir.path(), &["--color", "never", "check", "c.toml"], &[]);
    assert_eq!(r.code, 2, "{}", &r.stderr[..r.stderr.len().min(2000)]);
    assert!(
        r.stderr.contains("the line is too long to show"),
        "{}",
        &r.stderr[..2000.min(r.stderr.len())]
    );
    assert!(r.stderr.contains("c.toml:2:70008"), "the position is given");
    assert!(r.stderr.len() < 10_000, "the line itself is not printed");
}

#[test]
fn invalid_utf8_is_reported_with_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        b"version = 1\n[entries.a]\nplugin = \"\xff\xfe\"\n",
    )
    .unwrap();
    let r = run_in(dir.path(), &["--format", "json", "check", "c.toml"], &[]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("not valid UTF-8 at line 3, column 11"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_include_that_names_a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.toml");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::fs::write(
        dir.path().join("c.toml"),
        "version = 1\ninclude = [\"pipe.toml\"]\n",
    )
    .unwrap();
    let r = run_within(dir.path(), &["check", "c.toml"], Duration::from_secs(20));
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    // Inside an included folder too: refused by name, not skipped without
    // a word (`check` said "ok — 0 entries").
    std::fs::create_dir(dir.path().join("frag")).unwrap();
    std::fs::rename(&fifo, dir.path().join("frag/pipe.toml")).unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "version = 1\ninclude = [\"frag/\"]\n",
    )
    .unwrap();
    let r = run_within(dir.path(), &["check", "c.toml"], Duration::from_secs(20));
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("not a regular file") && r.stderr.contains("pipe.toml"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_state_url_is_refused_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "version = 1\n[plugins.a]\nversion = \"1.0.0\"\n[entries.a]\n",
    )
    .unwrap();
    let r = run_in(
        dir.path(),
        &["publish", "c.toml", "--state", "postgres://app@db/chassis"],
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("`postgres://` URL"), "{}", r.stderr);
    assert!(!dir.path().join("postgres:").exists());
    // A path that reads like an SQLite URI is a path: the store is the file
    // of that name, found again by the next command (it was written as
    // `x.db`, and `generations list --state file:x.db` found nothing).
    let r = run_in(
        dir.path(),
        &["publish", "c.toml", "--state", "file:x.db"],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(dir.path().join("file:x.db").is_file(), "{}", r.transcript());
    assert!(!dir.path().join("x.db").exists());
    let r = run_in(
        dir.path(),
        &["generations", "list", "--state", "file:x.db"],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("gen_0001"), "{}", r.stdout);
}

#[test]
fn a_first_publish_that_fails_leaves_no_store() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "version = 1\n[plugins.vault]\nversion = \"1.0.0\"\n[entries.vault]\nconfig = { token = { secret = \"CHASSIS_UNSET_TOKEN\" } }\n",
    )
    .unwrap();
    for verb in ["publish", "run"] {
        let r = run_in(dir.path(), &[verb, "c.toml"], &[]);
        assert_ne!(r.code, 0, "{}", r.transcript());
        assert!(
            !dir.path().join(".chassis").exists(),
            "`{verb}` left a store: {}",
            r.transcript()
        );
        assert!(
            !r.stderr.contains("created the generation store"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn a_file_with_syntax_errors_reports_twenty_then_sums_up_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("version = 1\n");
    for i in 0..2_000 {
        text.push_str(&format!("k{i} = = {i}\n"));
    }
    std::fs::write(dir.path().join("c.toml"), text).unwrap();
    let r = run_in(dir.path(), &["--format", "json", "check", "c.toml"], &[]);
    assert_eq!(r.code, 2);
    let lines: Vec<serde_json::Value> = r
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 21, "{}", r.stderr);
    let last = lines.last().unwrap();
    assert_eq!(last["code"], "load::suppressed");
    assert!(
        last["message"]
            .as_str()
            .unwrap()
            .contains("more diagnostics in `c.toml` suppressed"),
        "{last}"
    );
    // The first reported is the first broken line.
    assert_eq!(lines[0]["labels"][0]["line"], 2, "{}", lines[0]);
}

#[test]
fn a_diagnostic_with_thousands_of_places_shows_a_dozen_and_counts_the_rest() {
    // A cycle through 3,000 entries: one finding with a place per member.
    // (An ambiguity among thousands of providers names only the first few:
    // `an_ambiguity_among_thousands_names_ten_and_counts_the_rest`.)
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("version = 1\n");
    let n = 3_000;
    for i in 0..n {
        text.push_str(&format!(
            "[plugins.p{i}]\nversion = \"1.0.0\"\nprovides = {{ c{i} = \"1.0.0\" }}\nrequires = {{ c{} = \">=1\" }}\n[entries.p{i}]\n",
            (i + 1) % n
        ));
    }
    std::fs::write(dir.path().join("c.toml"), text).unwrap();
    let r = run_within(
        dir.path(),
        &["--color", "never", "check", "c.toml"],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert_eq!(
        r.stderr.matches("╰── in this cycle").count(),
        12,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("… and 2988 more places not shown (`--format json` lists every one)"),
        "{}",
        r.stderr
    );
    // JSON lists every one.
    let r = run_within(
        dir.path(),
        &["--format", "json", "check", "c.toml"],
        Duration::from_secs(20),
    );
    let labels = r
        .stdout
        .lines()
        .chain(r.stderr.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|d| d["code"] == "resolve::cycle")
        .map(|d| d["labels"].as_array().map_or(0, Vec::len))
        .max();
    assert_eq!(labels, Some(3_000), "{}", r.transcript());
}

#[test]
fn an_ambiguity_among_thousands_names_ten_and_counts_the_rest() {
    // Consumers ambiguous among the same 3,000 providers: each finding
    // names ten (N findings naming N each made `check --format json`
    // print 320 MB for N = 1,000), counts the rest and says where they
    // are all listed; `explain requirement` lists every one.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "version = 1\n\n[plugins.p]\nversion = \"1.0.0\"\nprovides = { database = \"1.0.0\" }\n\n[plugins.c]\nversion = \"1.0.0\"\nrequires = { database = \">=1,<2\" }\n\n[entries.consumer]\nplugin = \"c\"\n\n[entries.other]\nplugin = \"c\"\n\n",
    );
    for i in 0..3_000 {
        text.push_str(&format!("[entries.p{i:05}]\nplugin = \"p\"\n\n"));
    }
    std::fs::write(dir.path().join("c.toml"), text).unwrap();
    let r = run_within(
        dir.path(),
        &["--color", "never", "check", "c.toml"],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert_eq!(
        r.stderr.matches("╰── candidate").count(),
        20,
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("more places not shown"), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("… and 2990 more;").count(),
        2,
        "{}",
        r.stderr
    );
    assert!(
        r.stdout
            .contains("consumer: `database <2,>=1` ambiguous between p00000, p00001, p00002, p00003, p00004, p00005, p00006, p00007, p00008, p00009, … and 2990 more"),
        "{}",
        r.stdout
    );
    let r = run_within(
        dir.path(),
        &["--format", "json", "check", "c.toml"],
        Duration::from_secs(20),
    );
    let document: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.transcript()));
    let file = &document["files"][0];
    let ambiguous: Vec<serde_json::Value> = r
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .chain(file["findings"].as_array().unwrap().iter().cloned())
        .filter(|d| d["code"] == "resolve::ambiguous")
        .collect();
    // Two consumers, on stderr as they come and in the document.
    assert_eq!(ambiguous.len(), 4, "{}", r.transcript());
    for d in &ambiguous {
        assert_eq!(d["labels"].as_array().map(Vec::len), Some(11), "{d}");
        let help = d["help"][0].as_str().unwrap();
        let more =
            "… and 2990 more; `chassis explain requirement consumer database FILE` lists them all";
        assert!(
            help.contains(more) || help.contains(&more.replace("consumer", "other")),
            "{d}"
        );
    }
    let rows = file["requirements"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{document}");
    for row in rows {
        assert_eq!(row["status"], "ambiguous", "{row}");
        assert_eq!(row["candidates_total"], 3_000, "{row}");
        let between = row["ambiguous_between"].as_array().unwrap();
        assert_eq!(between.len(), 10, "{row}");
        assert_eq!(between[0], "p00000", "{row}");
    }
    // Explaining one requirement lists every candidate, each naming ten of
    // the others it ties with.
    let r = run_within(
        dir.path(),
        &[
            "--format",
            "json",
            "explain",
            "requirement",
            "consumer",
            "database",
            "c.toml",
        ],
        Duration::from_secs(20),
    );
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.transcript()));
    assert_eq!(v["ambiguous_between"].as_array().map(Vec::len), Some(3_000));
    let candidates = v["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 3_000);
    let why = candidates[0]["why"].as_str().unwrap();
    assert!(why.contains("`p00010`, … and 2989 more"), "{why}");
    assert!(!why.contains("`p00000`"), "{why}");
}

#[test]
fn a_report_counts_columns_in_characters_as_its_json_does() {
    // `é` is one column, not two: text and JSON name the same place.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "version = 1\n[plugins.p]\nversion = \"1.0.0\"\ndescription = \"éé\" junk\n",
    )
    .unwrap();
    let text = run_in(dir.path(), &["--color", "never", "check", "c.toml"], &[]);
    assert_eq!(text.code, 2, "{}", text.transcript());
    assert!(text.stderr.contains("[c.toml:4:20]"), "{}", text.stderr);
    let json = run_in(dir.path(), &["--format", "json", "check", "c.toml"], &[]);
    assert!(
        json.stderr
            .contains("\"column\":20,\"file\":\"c.toml\",\"line\":4"),
        "{}",
        json.stderr
    );
}
