//! Whole-process benchmark of `chassis serve`: the release binary in its
//! own process, a load generator here (reqwest, keep-alive connections) —
//! what a user's clients see, over loopback HTTP.
//!
//! ```text
//! cargo bench --bench serve                          # 30 s per figure after a 5 s warm-up
//! cargo bench --bench serve -- --seconds=10 --warmup=2
//! CHASSIS_BENCH_BIN=/path/to/chassis cargo bench --bench serve
//! cargo bench --bench serve -- --only=small          # one agent only (or `big`)
//! ```
//!
//! A run is one scripted model call, no tool, a 100-byte input; it counts
//! when its response arrives, which the server sends after the run's record
//! is committed. Figures: runs/s, p50 and p99 latency at 1 and 200
//! concurrent clients; then, at 200 concurrent against a 10,000-entry
//! composition, p99 without and with a one-entry edit reloaded every
//! second; the server's peak RSS (`VmHWM`). Output: markdown on stdout.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chassis::testing::generate::{Shape, generate};

const AGENT: &str = r#"
[entries.bench-model]
plugin = "scripted"
config.model = "bench"
config.turns = [{ text = "ok", usage = { input_tokens = 30, output_tokens = 1 } }]

[agents.bench]
prompt = "Answer ok."
"#;

struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(dir: &Path) -> Server {
        let binary = std::env::var_os("CHASSIS_BENCH_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_chassis").into());
        let mut child = Command::new(binary)
            .args([
                "serve",
                "c.toml",
                "--listen",
                "127.0.0.1:0",
                "--max-runs",
                "4096",
            ])
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chassis serve starts");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let base = loop {
            let line = lines
                .next()
                .expect("a `listening on` line")
                .expect("stderr");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest
                    .split_whitespace()
                    .next()
                    .expect("an address")
                    .to_owned();
            }
        };
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || for _ in lines.by_ref() {});
        Server { child, base }
    }

    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Figures {
    runs_per_second: f64,
    p50: Duration,
    p99: Duration,
    failed: usize,
}

/// `clients` keep-alive clients posting runs for `warmup` + `measure`;
/// latencies of the runs that started after the warm-up.
async fn load(
    client: &reqwest::Client,
    url: &str,
    clients: usize,
    warmup: Duration,
    measure: Duration,
) -> Figures {
    let input = "x".repeat(100);
    let start = Instant::now();
    let measured_from = start + warmup;
    let end = measured_from + measure;
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let client = client.clone();
        let url = url.to_owned();
        let body = serde_json::json!({ "input": input }).to_string();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut failed = 0;
            while Instant::now() < end {
                let t = Instant::now();
                let ok = match client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if t >= measured_from && Instant::now() <= end {
                    if ok {
                        latencies.push(t.elapsed());
                    } else {
                        failed += 1;
                    }
                }
            }
            (latencies, failed)
        }));
    }
    let mut all = Vec::new();
    let mut failed = 0;
    for t in tasks {
        let (l, f) = t.await.expect("a client");
        all.extend(l);
        failed += f;
    }
    all.sort();
    let pick = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Figures {
        runs_per_second: all.len() as f64 / measure.as_secs_f64(),
        p50: pick(0.50),
        p99: pick(0.99),
        failed,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let mut seconds = 30;
    let mut warmup = 5;
    let mut only = None;
    for arg in std::env::args().skip(1) {
        if let Some(v) = arg.strip_prefix("--only=") {
            only = Some(v.to_owned());
        } else if let Some(v) = arg.strip_prefix("--seconds=") {
            seconds = v.parse().expect("--seconds=N");
        } else if let Some(v) = arg.strip_prefix("--warmup=") {
            warmup = v.parse().expect("--warmup=N");
        } else if arg != "--bench" {
            eprintln!(
                "usage: cargo bench --bench serve -- [--seconds=30] [--warmup=5] [--only=small|big]"
            );
            std::process::exit(2);
        }
    }
    let (measure, warmup) = (Duration::from_secs(seconds), Duration::from_secs(warmup));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .expect("a client");

    println!("## chassis serve (whole process, loopback HTTP)\n");
    println!(
        "{seconds} s per figure after a {} s warm-up; a run is one scripted model call, no tool, a 100-byte input.\n",
        warmup.as_secs()
    );
    println!("| composition | clients | runs/s | p50 | p99 | failed | server peak RSS |");
    println!("|---|---:|---:|---:|---:|---:|---:|");

    let wanted = |part: &str| only.as_deref().is_none_or(|o| o == part);
    if wanted("small") {
        small_figures(&rt, &client, warmup, measure);
    }
    if wanted("big") {
        big_figures(&rt, &client, warmup, measure);
    }
}

/// One agent alone, at 1 and 200 clients.
fn small_figures(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    warmup: Duration,
    measure: Duration,
) {
    let small = tempfile::tempdir().expect("a folder");
    std::fs::write(small.path().join("c.toml"), format!("version = 1\n{AGENT}")).expect("write");
    let server = Server::start(small.path());
    let url = format!("{}/v1/agents/bench/runs", server.base);
    for clients in [1, 200] {
        let f = rt.block_on(load(client, &url, clients, warmup, measure));
        println!(
            "| one agent | {clients} | {:.0} | {} | {} | {} | {:.1} MiB |",
            f.runs_per_second,
            ms(f.p50),
            ms(f.p99),
            f.failed,
            server.peak_rss_mib()
        );
    }
    drop(server);
}

/// 10,000 entries; a one-entry edit reloaded every second under load.
fn big_figures(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    warmup: Duration,
    measure: Duration,
) {
    let big = tempfile::tempdir().expect("a folder");
    let c = generate(Shape::Fan, 10_000);
    let file = big.path().join("c.toml");
    let text = format!("{}\n{AGENT}", c.text);
    let edited = format!("{}\n{AGENT}", c.one_change());
    std::fs::write(&file, &text).expect("write");
    let server = Server::start(big.path());
    let url = format!("{}/v1/agents/bench/runs", server.base);
    let quiet = rt.block_on(load(client, &url, 200, warmup, measure));
    let reloading = Arc::new(AtomicBool::new(true));
    let reloads = {
        let client = client.clone();
        let reload_url = format!("{}/v1/reload", server.base);
        let reloading = Arc::clone(&reloading);
        let file = file.clone();
        rt.spawn(async move {
            let mut n = 0u32;
            let mut slowest = Duration::ZERO;
            while reloading.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_secs(1)).await;
                std::fs::write(&file, if n.is_multiple_of(2) { &edited } else { &text })
                    .expect("edit");
                let t = Instant::now();
                let r = client.post(&reload_url).send().await.expect("reload");
                assert!(r.status().is_success(), "a reload failed");
                slowest = slowest.max(t.elapsed());
                n += 1;
            }
            (n, slowest)
        })
    };
    let busy = rt.block_on(load(client, &url, 200, warmup, measure));
    reloading.store(false, Ordering::SeqCst);
    let (n, slowest) = rt.block_on(reloads).expect("the reloader");
    for (label, f) in [
        ("10,000 entries", &quiet),
        ("10,000 entries, reloading", &busy),
    ] {
        println!(
            "| {label} | 200 | {:.0} | {} | {} | {} | {:.1} MiB |",
            f.runs_per_second,
            ms(f.p50),
            ms(f.p99),
            f.failed,
            server.peak_rss_mib()
        );
    }
    println!(
        "\n{n} reloads of a one-entry edit, the slowest {}; p99 added by reloading: {}.",
        ms(slowest),
        ms(busy.p99.saturating_sub(quiet.p99))
    );
}
