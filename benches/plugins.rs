//! Process plugins (a plain bench binary, medians of many calls): what the
//! plugin SDKs and chassis's side of the protocol add to a tool call, and
//! what mounting adds to starting an interpreter.
//!
//! ```text
//! cargo bench --bench plugins                  # 10,000 calls per path after 1,000 warm-up
//! cargo bench --bench plugins -- --quick       # 1,000 calls
//! cargo bench --bench plugins -- --only=mount  # or --only=calls: one half
//! ```
//!
//! Calls, per language (python3, node), alternating call by call so the
//! machine's noise hits every path alike:
//! - **raw pipes**: one JSON line written to a raw echo program (no SDK,
//!   a loop of read line / parse / write line) and its reply read back, by
//!   hand over the child's pipes — the floor;
//! - **chassis rpc → raw**: the same program through chassis's JSON-RPC
//!   connection (`plugins::process::rpc`);
//! - **chassis tool → SDK**: a `ProcessTool::call` (supervisor, rpc) to an
//!   echo tool registered through the SDK — what a tool call of a process
//!   plugin costs beyond the executor.
//!
//! "chassis adds" is the last minus the first (target: ≤ 50 µs). The bench
//! runs on the first CPU and the programs it calls on the second, so every
//! path crosses between the same two cores.
//! Mounting: 100 minimal Python plugins (one tool) started one after the
//! other through `start::launch` (spawn, `initialize`, `setup`) against 100
//! bare interpreters started the same way until they are ready to talk
//! (`python3 -c` writing one line; target: ≤ 2 ms added per plugin),
//! alternating one of each, reported as the difference of the means and of
//! the medians (the median shrugs off a start the machine delayed), with
//! this machine's `python3` and with a venv of it made under
//! `target/bench-venv` (no site-packages: a fresh interpreter, as most
//! plugins run). Every process gets the environment chassis gives a plugin.
//! Output: markdown on stdout.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chassis::engine::model::Manifest;
use chassis::engine::secret::Redactor;
use chassis::load::FsSource;
use chassis::plugins::process::protocol::SetupParams;
use chassis::plugins::process::rpc::no_methods;
use chassis::plugins::process::start::{self, Launch, Process};
use chassis::plugins::process::supervise::Supervisor;
use chassis::plugins::process::tool::ProcessTool;
use chassis::runtime::{Tool, ToolCallContext};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// The allocator of the `chassis` binary, so the figures are what users run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RAW_PY: &str = r#"
import json, sys
out = sys.stdout
for line in sys.stdin:
    req = json.loads(line)
    if "id" not in req:
        continue
    if req.get("method") == "tools/call":
        result = {"content": req["params"]["arguments"]["text"], "is_error": False}
    else:
        result = {}
    out.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": result}) + "\n")
    out.flush()
"#;

const RAW_JS: &str = r#"
const rl = require("readline").createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const req = JSON.parse(line);
  if (!("id" in req)) return;
  const result = req.method === "tools/call"
    ? { content: req.params.arguments.text, is_error: false } : {};
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: req.id, result }) + "\n");
});
"#;

/// The smallest useful plugin: one echo tool (its schema derived at
/// setup), for the call benchmark and the mount benchmark alike.
const SDK_PY: &str = r#"
from chassis_plugin import plugin

@plugin(name="echo", version="1.0.0")
def echo(ctx):
    def say(text: str) -> str:
        "Echo."
        return text
    ctx.tools.register(say)

if __name__ == "__main__":
    echo.run()
"#;

const SDK_JS: &str = r#"
const { plugin, s } = require("./chassis_plugin");
plugin({ name: "echo", version: "1.0.0" }, (ctx) => {
  ctx.tools.register({ name: "say", description: "Echo.", inputSchema: s.object({ text: s.string() }) },
    ({ text }) => text);
}).run();
"#;

fn manifest_toml(command: &str, tools: bool) -> String {
    let tool = if tools {
        r#"
[[plugins.echo.tools]]
name = "say"
description = "Echo."
args = { type = "object", properties = { text = { type = "string" } }, required = ["text"], additionalProperties = false }
"#
    } else {
        ""
    };
    format!(
        "version = 1\n[plugins.echo]\nversion = \"1.0.0\"\ncommand = {command}\n{tool}\n[entries.echo]\nplugin = \"echo\"\n"
    )
}

/// The manifest of the one entry of `file`.
fn manifest_of(file: &Path) -> Arc<Manifest> {
    let loaded = chassis::load::load(&FsSource, file);
    let composition = loaded
        .composition
        .unwrap_or_else(|| panic!("{} does not load: {:?}", file.display(), loaded.diagnostics));
    let entry = composition.entries.values().next().expect("one entry");
    Arc::clone(&entry.manifest)
}

fn launch_of(manifest: Arc<Manifest>) -> Launch {
    let program = start::resolve(&manifest, "echo").expect("the program resolves");
    Launch {
        manifest,
        entry: "echo".into(),
        program,
        setup: SetupParams {
            entry: "echo".into(),
            scope: "/".into(),
            config: json!({}),
            requirements: Default::default(),
        },
        redactor: Redactor::new(),
        handler: no_methods(),
    }
}

/// A folder with `files` written (and the SDKs).
fn folder(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        root.join("sdk/python/chassis_plugin.py"),
        dir.path().join("chassis_plugin.py"),
    )
    .unwrap();
    std::fs::copy(
        root.join("sdk/typescript/chassis_plugin.js"),
        dir.path().join("chassis_plugin.js"),
    )
    .unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// The environment chassis gives a plugin that lists no `env`: cleared,
/// then the base allow-list (`start::BASE_ENV`) and `PYENV_*`.
fn plugin_env() -> Vec<(String, std::ffi::OsString)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .filter(|(k, _)| start::BASE_ENV.contains(&k.as_str()) || k.starts_with("PYENV_"))
        .collect()
}

/// Pin this thread (and what it starts from now on) to `cpu`; false on a
/// machine without it.
fn pin(cpu: usize) -> bool {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).is_ok()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The three call paths for one language.
async fn calls(
    lang: &str,
    program: &str,
    raw: &str,
    sdk: &str,
    n: usize,
    warmup: usize,
) -> [Duration; 3] {
    let ext = if lang == "python" { "py" } else { "js" };
    // Every program on the second CPU (they inherit it), this thread on the
    // first: each path crosses between the same two cores. Unpinned, where
    // the scheduler put each program moved the floor between 47 and 78 µs
    // from one run to the next, and "chassis adds" with it.
    let unpinned = rustix::thread::sched_getaffinity(None).ok();
    let pinned = pin(1);
    let dir = folder(&[
        (&format!("raw.{ext}"), raw.to_owned()),
        (&format!("sdk.{ext}"), sdk.to_owned()),
        (
            "raw.toml",
            manifest_toml(&format!("[\"{program}\", \"raw.{ext}\"]"), false),
        ),
        (
            "sdk.toml",
            manifest_toml(&format!("[\"{program}\", \"sdk.{ext}\"]"), true),
        ),
    ]);
    // Raw pipes: by hand.
    let mut child = tokio::process::Command::new(program)
        .arg(format!("raw.{ext}"))
        .env_clear()
        .envs(plugin_env())
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the interpreter starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    // chassis rpc to the raw program.
    let raw_manifest = manifest_of(&dir.path().join("raw.toml"));
    let raw_launch = launch_of(raw_manifest);
    let Process {
        conn: raw_conn,
        group: _raw_group,
    } = start::spawn(
        &raw_launch.manifest,
        "echo",
        &raw_launch.program,
        &Redactor::new(),
        no_methods(),
    )
    .expect("the raw program starts");
    // chassis tool to the SDK plugin.
    let sdk_launch = launch_of(manifest_of(&dir.path().join("sdk.toml")));
    let (process, registered) = start::launch(&sdk_launch)
        .await
        .expect("the SDK plugin mounts");
    let supervisor = Supervisor::new(sdk_launch, process, registered, None);
    let tool = ProcessTool {
        name: "say".into(),
        description: "Echo.".into(),
        schema: json!({}),
        deadline: None,
        supervisor: Arc::clone(&supervisor),
        calls: Arc::default(),
    };
    // Inside a run, as an agent calls it: the call is entered for the
    // invokes it may make.
    let mut ctx = ToolCallContext::detached("run_bench", "gen_0001", "/");
    ctx.reach = Some(chassis::runtime::CallReach::new(
        Arc::new(chassis::engine::policy::AllowAll),
        "say",
        "sdk",
        "gen_0001",
    ));
    if pinned {
        pin(0);
    }
    let text = "x".repeat(64);
    let args = json!({ "text": text });
    let mut times: [Vec<Duration>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let mut line = String::new();
    for i in 0..(n + warmup) {
        let t = Instant::now();
        let msg = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "say", "arguments": args, "run_id": "r", "generation_id": "g"}});
        stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        line.clear();
        stdout.read_line(&mut line).await.unwrap();
        let a = t.elapsed();
        let t = Instant::now();
        raw_conn
            .request(
                "tools/call",
                json!({"name": "say", "arguments": args, "run_id": "r", "generation_id": "g"}),
                None,
                None,
            )
            .await
            .expect("the raw program answers");
        let b = t.elapsed();
        let t = Instant::now();
        let out = tool
            .call(args.clone(), &ctx)
            .await
            .expect("the SDK tool answers");
        let c = t.elapsed();
        assert_eq!(out.content, json!(text));
        if i >= warmup {
            times[0].push(a);
            times[1].push(b);
            times[2].push(c);
        }
    }
    supervisor.stop().await;
    if let Some(all) = unpinned {
        let _ = rustix::thread::sched_setaffinity(None, &all);
    }
    let [a, b, c] = times;
    [median(a), median(b), median(c)]
}

/// Each start's time, bare interpreters and plugins, in the order run.
async fn mounting(python: &str, count: usize) -> (Vec<Duration>, Vec<Duration>) {
    let dir = folder(&[
        ("p.py", SDK_PY.to_owned()),
        (
            "p.toml",
            manifest_toml(&format!("[\"{python}\", \"p.py\"]"), true),
        ),
    ]);
    let manifest = manifest_of(&dir.path().join("p.toml"));
    // Alternating, one bare interpreter then one plugin, so the machine's
    // drift over the run hits both columns alike; every process stays up
    // until the end, as mounted plugins do.
    let (mut bare, mut plugins) = (Vec::new(), Vec::new());
    let (mut ready, mut mounted) = (Vec::new(), Vec::new());
    for _ in 0..count {
        // Ready to talk: the interpreter has started and written a line.
        let t = Instant::now();
        let mut child = tokio::process::Command::new(python)
            .args([
                "-c",
                "import sys; sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.read()",
            ])
            .env_clear()
            .envs(plugin_env())
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python runs");
        let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).await.unwrap();
        bare.push(t.elapsed());
        assert_eq!(line, "ready\n");
        ready.push(child);

        let t = Instant::now();
        let launch = launch_of(Arc::clone(&manifest));
        let (process, _) = start::launch(&launch).await.expect("the plugin mounts");
        plugins.push(t.elapsed());
        mounted.push(process);
    }
    drop(ready);
    for p in mounted {
        p.stop("echo").await;
    }
    (bare, plugins)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let only = std::env::args().find_map(|a| a.strip_prefix("--only=").map(str::to_owned));
    let (calls_too, mount_too) = match only.as_deref() {
        None => (true, true),
        Some("calls") => (true, false),
        Some("mount") => (false, true),
        Some(other) => panic!("--only=calls or --only=mount, not {other}"),
    };
    let (n, warmup) = if quick { (1_000, 100) } else { (10_000, 1_000) };
    let python = String::from_utf8(
        std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs")
            .stdout,
    )
    .unwrap()
    .trim()
    .to_owned();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        if !calls_too {
            return;
        }
        println!("## Process plugins: one echo tool call ({n} calls per path, medians)\n");
        println!(
            "| language | raw pipes | chassis rpc → raw | chassis tool → SDK | chassis adds |"
        );
        println!("|---|---:|---:|---:|---:|");
        for (lang, program, raw, sdk) in [
            ("python", python.as_str(), RAW_PY, SDK_PY),
            ("node", "node", RAW_JS, SDK_JS),
        ] {
            let [a, b, c] = calls(lang, program, raw, sdk, n, warmup).await;
            println!(
                "| {lang} | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} µs |",
                micros(a),
                micros(b),
                micros(c),
                micros(c) - micros(a)
            );
        }
    });
    rt.block_on(async {
        if !mount_too {
            return;
        }
        let count = if quick { 20 } else { 100 };
        // This machine's interpreter, and a virtual environment of it: what
        // most plugins run in, without the machine's site-packages (here a
        // `.pth` file that imports `threading`, `typing` and `re` into every
        // interpreter, which hides what a fresh one pays for them).
        let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-venv");
        if !venv.join("bin/python3").exists() {
            let made = std::process::Command::new(&python)
                .args(["-m", "venv", "--without-pip"])
                .arg(&venv)
                .status()
                .expect("python3 runs");
            assert!(made.success(), "python3 -m venv {} failed", venv.display());
        }
        let venv_python = venv.join("bin/python3").display().to_string();
        println!("\n## Mounting {count} minimal Python plugins, one after the other\n");
        println!(
            "| interpreter | bare `python3` ready ×{count} | plugins mounted ×{count} | added per plugin (means) \
             | median bare | median plugin | added per plugin (medians) |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|");
        for (label, interpreter) in [
            ("this machine's `python3`", python.as_str()),
            ("a venv of it", venv_python.as_str()),
        ] {
            let (bare, plugins) = mounting(interpreter, count).await;
            let millis = |d: Duration| d.as_secs_f64() * 1e3;
            let total = |v: &[Duration]| millis(v.iter().sum::<Duration>());
            let (sum_bare, sum_plugins) = (total(&bare), total(&plugins));
            let (bare, plugins) = (millis(median(bare)), millis(median(plugins)));
            println!(
                "| {label} | {sum_bare:.0} ms | {sum_plugins:.0} ms | {:.2} ms | {bare:.2} ms | {plugins:.2} ms | {:.2} ms |",
                (sum_plugins - sum_bare) / count as f64,
                plugins - bare,
            );
        }
    });
}
