//! Whole-process benchmark: what users run, measured as they run it.
//!
//! Every figure is one `chassis` process started from scratch on a file the
//! shared generator (`chassis::testing::generate`) wrote: wall time (median
//! of the runs) and the child's peak RSS (`wait4` rusage, max of the runs).
//! Publish is measured first (from no store), unchanged, after a one-entry
//! change, and after a cascade (the change every consumer feels); the store
//! growth per one-entry generation is the file's growth over those runs.
//!
//! ```text
//! cargo bench --bench cli                          # chain, fan, deep, builtin, preferred at 1k, 10k, 100k
//! cargo bench --bench cli -- --sizes=1000,10000    # other sizes
//! cargo bench --bench cli -- fan deep              # only these shapes
//! cargo bench --bench cli -- --runs=3              # runs per figure (default 5; 3 at 100k)
//! CHASSIS_BENCH_BIN=/path/to/chassis cargo bench --bench cli   # measure another build
//! cargo bench --bench cli -- --emit=DIR --sizes=10000 fan   # only write the files (to profile one)
//! ```
//!
//! Output: one markdown table per shape on stdout.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chassis::testing::generate::{Shape, generate};

/// One process: wall time and peak RSS in KiB. The bench binary runs
/// itself as a go-between ([`measure_child`]) whose only child is the
/// `chassis` process, so `getrusage(RUSAGE_CHILDREN)` there is exactly that
/// child's peak RSS.
fn measure(dir: &Path, args: &[&str], expect_ok: bool) -> (Duration, u64) {
    let out = Command::new(std::env::current_exe().expect("the bench binary"))
        .arg("--measure-child")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("the go-between starts");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace();
    let mut next = || fields.next().and_then(|f| f.parse::<u64>().ok());
    let (code, micros, rss) = (next(), next(), next());
    let (Some(code), Some(micros), Some(rss)) = (code, micros, rss) else {
        panic!("the go-between said `{text}`");
    };
    if expect_ok {
        assert!(code <= 1, "`chassis {}` exited {code}", args.join(" "));
    }
    (Duration::from_micros(micros), rss)
}

/// The go-between: run `chassis ARGS`, then print its exit code, wall
/// time in microseconds and peak RSS in KiB.
fn measure_child(args: &[String]) -> ! {
    let started = Instant::now();
    // `CHASSIS_BENCH_BIN` measures another build (a "before" column).
    let binary = std::env::var_os("CHASSIS_BENCH_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_chassis").into());
    let status = Command::new(binary)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the chassis binary starts");
    let elapsed = started.elapsed();
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    println!(
        "{} {} {}",
        status.code().map_or(255, |c| c.clamp(0, 255)),
        elapsed.as_micros(),
        usage.max_rss()
    );
    std::process::exit(0);
}

/// Median time and max RSS of `runs` runs of `args`, `before` called first
/// each time.
fn figure(
    dir: &Path,
    runs: usize,
    args: &[&str],
    mut before: impl FnMut(usize),
) -> (Duration, u64) {
    let mut times = Vec::with_capacity(runs);
    let mut rss = 0;
    for i in 0..runs {
        before(i);
        let (t, r) = measure(dir, args, true);
        times.push(t);
        rss = rss.max(r);
    }
    times.sort();
    (times[times.len() / 2], rss)
}

fn store_bytes(dir: &Path) -> u64 {
    let store = dir.join(".chassis");
    std::fs::read_dir(&store).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum()
    })
}

struct Row {
    command: &'static str,
    time: Duration,
    rss_kib: u64,
}

fn bench(shape: Shape, entries: usize, runs: usize) -> (Vec<Row>, u64) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    let c = generate(shape, entries);
    let file = d.join("c.toml");
    let one = d.join("one.toml");
    std::fs::write(&file, &c.text).unwrap();
    std::fs::write(&one, c.one_change()).unwrap();
    let write = |p: &PathBuf, text: &str| std::fs::write(p, text).unwrap();
    let mut rows = Vec::new();
    let mut row = |command, (time, rss_kib)| {
        rows.push(Row {
            command,
            time,
            rss_kib,
        });
    };
    let (consumer, capability) = c.consumer.clone();
    row("check", figure(d, runs, &["check", "c.toml"], |_| {}));
    row("snapshot", figure(d, runs, &["snapshot", "c.toml"], |_| {}));
    row(
        "explain requirement",
        figure(
            d,
            runs,
            &["explain", "requirement", &consumer, &capability, "c.toml"],
            |_| {},
        ),
    );
    row(
        "diff (one change)",
        figure(
            d,
            runs,
            &["diff", "generations", "c.toml", "one.toml"],
            |_| {},
        ),
    );
    row(
        "publish (first)",
        figure(d, runs, &["publish", "c.toml"], |_| {
            let _ = std::fs::remove_dir_all(d.join(".chassis"));
        }),
    );
    row(
        "plan (unchanged)",
        figure(d, runs, &["plan", "c.toml"], |_| {}),
    );
    row(
        "publish (unchanged)",
        figure(d, runs, &["publish", "c.toml"], |_| {}),
    );
    let before = store_bytes(d);
    let generations = runs;
    row(
        "publish (one change)",
        figure(d, runs, &["publish", "c.toml"], |i| {
            // Alternate: every run is a one-entry change from the last.
            if i % 2 == 0 {
                write(&file, &c.one_change());
            } else {
                write(&file, &c.text);
            }
        }),
    );
    let per_generation = (store_bytes(d).saturating_sub(before)) / generations as u64;
    write(&file, &c.text);
    let _ = measure(d, &["publish", "c.toml"], true);
    row(
        "publish (cascade)",
        figure(d, runs, &["publish", "c.toml"], |i| {
            if i % 2 == 0 {
                write(&file, &c.cascade());
            } else {
                write(&file, &c.text);
            }
        }),
    );
    (rows, per_generation)
}

/// `--emit=DIR`: write `SHAPE-ENTRIES/{c,one,cascade}.toml` — the files
/// a figure is measured on — so one command can be profiled by hand.
fn emit_files(dir: &Path, shapes: &[Shape], sizes: &[usize]) {
    for &shape in shapes {
        for &entries in sizes {
            let c = generate(shape, entries);
            let folder = dir.join(format!("{}-{entries}", shape.name()));
            std::fs::create_dir_all(&folder).expect("the folder is created");
            std::fs::write(folder.join("c.toml"), &c.text).unwrap();
            std::fs::write(folder.join("one.toml"), c.one_change()).unwrap();
            std::fs::write(folder.join("cascade.toml"), c.cascade()).unwrap();
            println!("{}", folder.display());
        }
    }
}

fn main() {
    let all: Vec<String> = std::env::args().collect();
    if all.get(1).map(String::as_str) == Some("--measure-child") {
        measure_child(&all[2..]);
    }
    let mut sizes = vec![1_000, 10_000, 100_000];
    let mut runs = None;
    let mut shapes = Vec::new();
    let mut emit = None;
    for arg in std::env::args().skip(1) {
        if let Some(list) = arg.strip_prefix("--sizes=") {
            sizes = list.split(',').filter_map(|s| s.parse().ok()).collect();
        } else if let Some(n) = arg.strip_prefix("--runs=") {
            runs = n.parse().ok();
        } else if let Some(dir) = arg.strip_prefix("--emit=") {
            emit = Some(PathBuf::from(dir));
        } else if let Some(shape) = Shape::parse(&arg) {
            shapes.push(shape);
        } else if arg != "--bench" {
            eprintln!(
                "usage: cargo bench --bench cli -- [--sizes=1000,10000] [--runs=N] [--emit=DIR] [chain|fan|deep|builtin…]"
            );
            std::process::exit(2);
        }
    }
    if shapes.is_empty() {
        shapes = Shape::ALL.to_vec();
    }
    if let Some(dir) = emit {
        emit_files(&dir, &shapes, &sizes);
        return;
    }
    println!("# Whole-process figures (`chassis` release binary, one process per figure)\n");
    for shape in shapes {
        println!(
            "## {}\n\n| entries | command | median | peak RSS |\n|---:|---|---:|---:|",
            shape.name()
        );
        for &entries in &sizes {
            let runs = runs.unwrap_or(if entries >= 100_000 { 3 } else { 5 });
            let (rows, per_generation) = bench(shape, entries, runs);
            for r in rows {
                println!(
                    "| {entries} | {} | {:.1} ms | {:.1} MiB |",
                    r.command,
                    r.time.as_secs_f64() * 1000.0,
                    r.rss_kib as f64 / 1024.0
                );
            }
            println!(
                "| {entries} | store growth per one-entry generation | {:.1} KiB | |",
                per_generation as f64 / 1024.0
            );
        }
        println!();
    }
}
