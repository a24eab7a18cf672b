//! The soak: 200 clients keep streamed runs going while the composition is
//! edited 20 times. Zero failed or lost runs, each answered by the
//! generation it started on, every old generation retired at the end, no
//! lease left, and the server's memory back near where it was after the
//! warm-up. Bounded to 90 s.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::*;

const CLIENTS: usize = 200;
const EDITS: usize = 20;

/// The server's resident set, in KiB (`VmRSS` of `/proc/PID/status`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// The composition at edit `n`: the slow turn answers `answer-n`.
fn edition(original: &str, n: usize) -> String {
    with_slow_turn(original, &format!("answer-{n}"), 150)
}

/// One streamed run: (generation it started on, its answer), or why not.
async fn streamed_run(c: &reqwest::Client, url: &str) -> Result<(String, String), String> {
    let response = c
        .post(url)
        .json(&json!({"input": "slow", "stream": true}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if response.status() != 200 {
        return Err(format!("status {}", response.status()));
    }
    let mut events = Events::new(response);
    let mut started = None;
    while let Some((name, data)) = events.next().await {
        match name.as_str() {
            "run_started" if started.is_none() => {
                started = data["generation_id"].as_str().map(str::to_owned);
            }
            "result" => {
                let generation = started.ok_or("no run_started event")?;
                if data["generation_id"] != generation.as_str() {
                    return Err(format!("started on {generation}, result says {data}"));
                }
                let answer = data["answer"]
                    .as_str()
                    .ok_or(format!("no answer: {data}"))?;
                return Ok((generation, answer.to_owned()));
            }
            "error" => return Err(format!("error event: {data}")),
            _ => {}
        }
    }
    Err("the stream ended without a result".into())
}

#[test]
fn two_hundred_streamed_runs_across_twenty_edits_lose_nothing() {
    let began = std::time::Instant::now();
    let (dir, file) = workspace();
    let original = std::fs::read_to_string(&file).unwrap();
    save(&file, &edition(&original, 0));
    let server = Server::start(dir.path(), "serve.toml", &["--max-runs", "400"]);
    let pid = server.child.id();
    let url = server.url("/v1/agents/assistant/runs");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let c = client();
    let stop = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let (rss_warm, results, generations) = rt.block_on(async {
        // Warm-up: every client runs once.
        let warm: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (c, url) = (c.clone(), url.clone());
                tokio::spawn(async move { streamed_run(&c, &url).await })
            })
            .collect();
        for w in warm {
            w.await.unwrap().expect("a warm-up run");
        }
        let rss_warm = rss_kib(pid);
        // The soak: each client runs until the edits are done.
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (c, url, stop, runs) =
                    (c.clone(), url.clone(), Arc::clone(&stop), Arc::clone(&runs));
                tokio::spawn(async move {
                    let mut mine = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        mine.push(streamed_run(&c, &url).await);
                        runs.fetch_add(1, Ordering::Relaxed);
                    }
                    mine
                })
            })
            .collect();
        // Twenty edits, each saved as an editor does and waited for: the
        // generation published from edit n is gen_000(n+1).
        let mut generations = BTreeMap::from([("gen_0001".to_owned(), 0_usize)]);
        for n in 1..=EDITS {
            tokio::time::sleep(Duration::from_millis(300)).await;
            save(&file, &edition(&original, n));
            let want = format!("gen_{:04}", n + 1);
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let (_, status) = get(&c, &server.url("/v1/status")).await;
                if status["current"]["id"] == want.as_str() {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "edit {n} not served: {status}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            generations.insert(want, n);
        }
        stop.store(true, Ordering::Relaxed);
        let mut results = Vec::new();
        for client in clients {
            results.extend(client.await.unwrap());
        }
        (rss_warm, results, generations)
    });
    // Zero failed or lost runs; each answered by the generation it started on.
    let failed: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    assert_eq!(results.len(), runs.load(Ordering::Relaxed));
    assert!(results.len() >= CLIENTS * 5, "only {} runs", results.len());
    let mut seen = std::collections::BTreeSet::new();
    for (generation, answer) in results.iter().flatten() {
        let n = generations
            .get(generation)
            .unwrap_or_else(|| panic!("a run on an unknown {generation}"));
        assert_eq!(answer, &format!("answer-{n}"), "a run of {generation}");
        seen.insert(generation.clone());
    }
    assert!(
        seen.len() > EDITS / 2,
        "runs spread over {} generations",
        seen.len()
    );
    rt.block_on(async {
        // Every run is recorded; every old generation retired; no lease.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let (_, status) = get(&c, &server.url("/v1/status")).await;
            let live = status["live_generations"].as_array().unwrap().clone();
            if live.len() == 1 && live[0]["leases"] == 0 && status["runs_in_flight"] == 0 {
                assert_eq!(live[0]["id"], format!("gen_{:04}", EDITS + 1).as_str());
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "not drained: {status}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let metrics = c
            .get(server.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let total: f64 = metrics
            .lines()
            .filter(|l| l.starts_with("chassis_runs_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        #[allow(clippy::cast_precision_loss)]
        let expected = (results.len() + CLIENTS) as f64;
        assert!(
            (total - expected).abs() < 0.5,
            "metrics count {total} runs, clients {expected}"
        );
    });
    let rss_after = rss_kib(pid);
    assert!(
        rss_after <= rss_warm + 32 * 1024,
        "RSS grew from {rss_warm} KiB to {rss_after} KiB"
    );
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
    assert!(
        began.elapsed() < Duration::from_secs(90),
        "the soak took {:?}",
        began.elapsed()
    );
    eprintln!(
        "soak: {} runs over {} generations in {:.1} s; RSS {} → {} KiB",
        results.len(),
        seen.len(),
        began.elapsed().as_secs_f64(),
        rss_warm,
        rss_after
    );
}
