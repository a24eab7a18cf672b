//! Real MCP servers for the integration tests, installed pinned on first use.
//!
//! `tests/servers/` holds the pins and two stdlib Python helpers:
//! - `package.json` + `package-lock.json`: `@modelcontextprotocol/server-everything`
//!   and `@modelcontextprotocol/server-filesystem` 2026.8.31, installed with
//!   `npm ci --no-audit --no-fund` into `<target>/test-servers/npm/`;
//! - `requirements.txt`: `mcp-server-time` 2026.10.19 and every transitive
//!   dependency pinned `==`, installed with `pip install --no-deps -r` into the
//!   venv `<target>/test-servers/py/` (then `pip check`, so a missing pin
//!   fails here rather than at import time in some later test);
//! - `scripted_mcp.py`: a scripted stdio server with misbehaving tools;
//! - `log_proxy.py`: a stdio relay logging every client→server line.
//!
//! Each install runs once per process (a `OnceLock`) and, across the test
//! processes that may run at once, under an exclusive `flock` on
//! `<target>/test-servers/.lock`. A stamp file in each install holds a hash of
//! its pins (and, for the venv, the interpreter's version), so a changed pin
//! reinstalls from scratch. A failed install panics with the command and its
//! whole log; nothing is ever skipped.
//!
//! What the pinned servers speak (checked by the tests below):
//! - server-everything 2026.8.31 (TypeScript SDK 1.32.2) is a handshake-era
//!   server: `initialize` with protocolVersion "2025-06-18" is answered with
//!   "2025-06-18" (an unknown or 2026 version gets its latest, "2025-11-25");
//!   `server/discover` gets -32601 "Method not found". It may send
//!   `notifications/tools/list_changed` before the initialize reply, and it
//!   logs "Starting default (STDIO) server..." on stderr.
//! - mcp-server-time 2026.10.19 (Python SDK `mcp` 2.3.0) is dual-era: the first
//!   request decides. A `server/discover` whose `params._meta` carries the
//!   2026-07-28 envelope (`io.modelcontextprotocol/protocolVersion` and
//!   `io.modelcontextprotocol/clientCapabilities` required,
//!   `io.modelcontextprotocol/clientInfo` optional) opens a stateless
//!   2026-07-28 connection: every later request must carry the envelope too
//!   (else -32602), and an `initialize` there gets -32022 "connection is
//!   serving the 2026-07-28 protocol; the initialize handshake is not
//!   accepted". A first `initialize` opens a legacy connection instead
//!   (protocolVersion "2025-06-18" is echoed, anything newer gets
//!   "2025-11-25"), and an enveloped request on it gets -32600. A
//!   `server/discover` without the envelope is -32601 on either era.
//!   It exits on stdin EOF without finishing in-flight requests.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const NPM_PINS: &[&str] = &["package.json", "package-lock.json"];
const PY_PINS: &str = "requirements.txt";
const STAMP: &str = ".chassis-stamp";

/// The `@modelcontextprotocol/server-everything` executable (stdio by default).
pub fn everything() -> PathBuf {
    npm_install().join("node_modules/.bin/mcp-server-everything")
}

/// The `@modelcontextprotocol/server-filesystem` executable; its arguments
/// are the allowed directories.
pub fn filesystem() -> PathBuf {
    npm_install().join("node_modules/.bin/mcp-server-filesystem")
}

/// The `mcp-server-time` executable of the pinned venv.
pub fn time_server() -> PathBuf {
    py_install().join("bin/mcp-server-time")
}

/// `tests/servers/scripted_mcp.py` (executable, `#!/usr/bin/env python3`).
pub fn scripted_server() -> PathBuf {
    sources().join("scripted_mcp.py")
}

/// `tests/servers/log_proxy.py`: `log_proxy.py LOGFILE -- CMD ARGS...`.
pub fn log_proxy() -> PathBuf {
    sources().join("log_proxy.py")
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sources() -> PathBuf {
    manifest_dir().join("tests/servers")
}

/// `$CARGO_TARGET_DIR` (a relative one resolved against the manifest dir),
/// else `<manifest>/target`, joined with `test-servers`.
fn test_servers_dir() -> PathBuf {
    servers_dir_for(&manifest_dir(), std::env::var_os("CARGO_TARGET_DIR"))
}

fn servers_dir_for(manifest: &Path, target: Option<OsString>) -> PathBuf {
    let target = match target {
        Some(t) if !t.is_empty() => manifest.join(PathBuf::from(t)),
        _ => manifest.join("target"),
    };
    target.join("test-servers")
}

fn npm_install() -> PathBuf {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let result = DIR.get_or_init(|| {
        let src = sources();
        let stamp = stamp_of(
            &NPM_PINS.iter().map(|p| src.join(p)).collect::<Vec<_>>(),
            "",
        );
        install("npm", &stamp, |dir, log| {
            for pin in NPM_PINS {
                copy(&src.join(pin), &dir.join(pin))?;
            }
            let mut npm = Command::new("npm");
            npm.args(["ci", "--no-audit", "--no-fund", "--no-update-notifier"])
                .arg("--prefix")
                .arg(dir)
                .current_dir(dir);
            run_logged(npm, log)
        })
    });
    unwrap_install(result)
}

fn py_install() -> PathBuf {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let result = DIR.get_or_init(|| {
        let requirements = sources().join(PY_PINS);
        // A venv is bound to its interpreter: a different python3 reinstalls.
        let python = Command::new("python3")
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let stamp = stamp_of(std::slice::from_ref(&requirements), &python);
        install("py", &stamp, |dir, log| {
            let mut venv = Command::new("python3");
            venv.args(["-m", "venv"]).arg(dir);
            run_logged(venv, log)?;
            let pip = dir.join("bin/pip");
            let mut install = Command::new(&pip);
            install
                .args([
                    "install",
                    "--no-deps",
                    "--disable-pip-version-check",
                    "--no-input",
                    "-r",
                ])
                .arg(&requirements);
            run_logged(install, log)?;
            let mut check = Command::new(&pip);
            check.args(["check", "--disable-pip-version-check"]);
            run_logged(check, log)
        })
    });
    unwrap_install(result)
}

fn unwrap_install(result: &Result<PathBuf, String>) -> PathBuf {
    match result {
        Ok(dir) => dir.clone(),
        Err(report) => panic!("{report}"),
    }
}

/// A hash over the pin files' names and contents plus `extra`.
fn stamp_of(pins: &[PathBuf], extra: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(b"chassis test-servers stamp v1\n");
    for pin in pins {
        let bytes = fs::read(pin).unwrap_or_else(|e| panic!("reading {}: {e}", pin.display()));
        hash.update(pin.file_name().unwrap_or_default().as_encoded_bytes());
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    hash.update(extra.as_bytes());
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Install `<test-servers>/NAME` with `steps` unless its stamp is `stamp`,
/// holding the cross-process lock throughout. `steps` gets the (fresh, empty)
/// install dir and the log file path; its error is the failed command.
fn install(
    name: &str,
    stamp: &str,
    steps: impl FnOnce(&Path, &Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let root = test_servers_dir();
    fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
    let lock_path = root.join(".lock");
    let lock_file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("opening {}: {e}", lock_path.display()))?;
    let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("locking {}: {e}", lock_path.display()))?;

    let dir = root.join(name);
    let stamp_path = dir.join(STAMP);
    if fs::read_to_string(&stamp_path).is_ok_and(|s| s.trim() == stamp) {
        return Ok(dir);
    }
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    }
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let log = root.join(format!("{name}-install.log"));
    fs::write(&log, "").map_err(|e| format!("creating {}: {e}", log.display()))?;
    let started = Instant::now();
    if let Err(command) = steps(&dir, &log) {
        let output = fs::read_to_string(&log).unwrap_or_else(|e| format!("(no log: {e})"));
        return Err(format!(
            "installing the {name} test servers into {} failed\ncommand: {command}\n\
             --- install log ({}, stdout+stderr)\n{output}--- end of install log",
            dir.display(),
            log.display()
        ));
    }
    fs::write(&stamp_path, format!("{stamp}\n"))
        .map_err(|e| format!("writing {}: {e}", stamp_path.display()))?;
    eprintln!(
        "mcp_servers: installed {name} test servers in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(dir)
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("copy {} {}: {e}", from.display(), to.display()))
}

/// Run `cmd` with stdout and stderr appended to `log`; `Err` names the command.
fn run_logged(mut cmd: Command, log: &Path) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let opened = File::options().append(true).open(log).and_then(|mut out| {
        writeln!(out, "$ {shown}")?;
        let err = out.try_clone()?;
        Ok((out, err))
    });
    let (out, err) = opened.map_err(|e| format!("{shown} (opening {}: {e})", log.display()))?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| format!("{shown} (could not start: {e})"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} ({status})"))
    }
}

/// A newline-delimited JSON-RPC peer over a child's stdio, for these tests.
struct LineClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl LineClient {
    fn spawn(mut cmd: Command) -> LineClient {
        let shown = format!("{cmd:?}");
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {shown}: {e}"));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        LineClient {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("writing to the server");
        stdin.flush().expect("flushing to the server");
    }

    /// The next stdout line, raw; panics after 30 s or at EOF.
    fn line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("no line from the server: {e}"))
    }

    /// The reply to request `id`, skipping notifications and other lines.
    fn reply(&self, id: i64) -> Value {
        loop {
            let line = self.line();
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && value["id"] == json!(id)
            {
                return value;
            }
        }
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.reply(id)
    }

    /// Close stdin and wait for the exit status (killing it after 30 s).
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting for the server") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LineClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "chassis-test", "version": "0"}
    })
}

/// The 2026-07-28 per-request envelope mcp-server-time requires.
fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "chassis-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

#[test]
fn test_servers_dir_follows_cargo_target_dir() {
    let m = Path::new("/repo");
    assert_eq!(
        servers_dir_for(m, None),
        Path::new("/repo/target/test-servers")
    );
    assert_eq!(
        servers_dir_for(m, Some("".into())),
        Path::new("/repo/target/test-servers")
    );
    assert_eq!(
        servers_dir_for(m, Some("/t".into())),
        Path::new("/t/test-servers")
    );
    assert_eq!(
        servers_dir_for(m, Some("out/t".into())),
        Path::new("/repo/out/t/test-servers")
    );
}

#[test]
fn the_pinned_servers_install() {
    for exe in [
        everything(),
        filesystem(),
        time_server(),
        scripted_server(),
        log_proxy(),
    ] {
        assert!(exe.is_file(), "{} is missing", exe.display());
    }
    // A second call is the OnceLock's answer, and the stamps are written.
    assert_eq!(everything(), everything());
    let root = test_servers_dir();
    assert!(root.join("npm").join(STAMP).is_file());
    assert!(root.join("py").join(STAMP).is_file());
}

#[test]
fn time_server_answers_server_discover_in_the_2026_07_28_era() {
    let mut time = LineClient::spawn(Command::new(time_server()));
    let discover = time.request(1, "server/discover", json!({"_meta": envelope()}));
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(["2026-07-28"]),
        "{discover}"
    );
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "mcp-time", "version": "2026.10.19"}),
        "{discover}"
    );
    let mut call = json!({"name": "get_current_time", "arguments": {"timezone": "UTC"}});
    call["_meta"] = envelope();
    let called = time.request(2, "tools/call", call);
    assert_eq!(called["result"]["isError"], json!(false), "{called}");
    assert_eq!(
        called["result"]["structuredContent"]["timezone"],
        json!("UTC"),
        "{called}"
    );
    // The connection is now stateless-era: the handshake is refused.
    let init = time.request(3, "initialize", initialize_params("2025-11-25"));
    assert_eq!(init["error"]["code"], json!(-32022), "{init}");
    assert_eq!(
        init["error"]["data"]["supported"],
        json!(["2026-07-28"]),
        "{init}"
    );
    drop(time);
}

#[test]
fn time_server_also_answers_the_initialize_handshake() {
    let mut time = LineClient::spawn(Command::new(time_server()));
    let init = time.request(1, "initialize", initialize_params("2025-06-18"));
    assert_eq!(
        init["result"]["protocolVersion"],
        json!("2025-06-18"),
        "{init}"
    );
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!("mcp-time"),
        "{init}"
    );
    time.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let list = time.request(2, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["get_current_time", "convert_time"], "{list}");
    // Without the envelope there is no server/discover.
    let discover = time.request(3, "server/discover", json!({}));
    assert_eq!(discover["error"]["code"], json!(-32601), "{discover}");
}

#[test]
fn everything_answers_initialize_but_not_server_discover() {
    let mut cmd = Command::new(everything());
    cmd.arg("stdio");
    let mut server = LineClient::spawn(cmd);
    let init = server.request(1, "initialize", initialize_params("2025-06-18"));
    assert_eq!(
        init["result"]["protocolVersion"],
        json!("2025-06-18"),
        "{init}"
    );
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!("mcp-servers/everything"),
        "{init}"
    );
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let list = server.request(2, "tools/list", json!({}));
    assert!(
        list["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "echo")),
        "{list}"
    );
    let discover = server.request(3, "server/discover", json!({"_meta": envelope()}));
    assert_eq!(discover["error"]["code"], json!(-32601), "{discover}");
}

#[test]
fn filesystem_answers_initialize() {
    let allowed = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(filesystem());
    cmd.arg(allowed.path());
    let mut server = LineClient::spawn(cmd);
    let init = server.request(1, "initialize", initialize_params("2025-06-18"));
    assert_eq!(
        init["result"]["protocolVersion"],
        json!("2025-06-18"),
        "{init}"
    );
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!("secure-filesystem-server"),
        "{init}"
    );
}

#[test]
fn scripted_server_through_the_log_proxy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let proxy_log = dir.path().join("proxy.log");
    let server_log = dir.path().join("server.log");
    let mut cmd = Command::new(log_proxy());
    cmd.arg(&proxy_log)
        .arg("--")
        .arg(scripted_server())
        .env("SCRIPTED_LOG", &server_log)
        .env("SCRIPTED_PROBE", "here");
    let mut server = LineClient::spawn(cmd);
    let init = server.request(1, "initialize", initialize_params("2025-06-18"));
    assert_eq!(
        init["result"],
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "scripted", "version": "1.0.0"}
        })
    );
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let echo = server.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(echo["result"]["content"][0]["text"], json!("hi"), "{echo}");
    let env = server.request(3, "tools/call", json!({"name": "env", "arguments": {}}));
    let env: Value = serde_json::from_str(env["result"]["content"][0]["text"].as_str().unwrap())
        .expect("env is JSON");
    assert_eq!(env["SCRIPTED_PROBE"], json!("here"));
    // garbage: a non-JSON line, then the reply.
    server.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "garbage", "arguments": {}}}));
    assert_eq!(server.line(), "this is not json");
    assert_eq!(
        server.reply(4)["result"]["content"][0]["text"],
        json!("after garbage")
    );
    // flip: list_changed, then the reply, then the new tool is listed.
    server.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "flip", "arguments": {}}}));
    let note: Value = serde_json::from_str(&server.line()).expect("a JSON line");
    assert_eq!(note["method"], json!("notifications/tools/list_changed"));
    assert_eq!(
        server.reply(5)["result"]["content"][0]["text"],
        json!("flipped")
    );
    let list = server.request(6, "tools/list", json!({}));
    assert!(
        list["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "extra")),
        "{list}"
    );
    let unknown = server.request(7, "no/such", json!({}));
    assert_eq!(unknown["error"]["code"], json!(-32601), "{unknown}");
    // crash: the child exits 1 mid-call, and the proxy with it.
    server.send(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "crash", "arguments": {}}}));
    assert_eq!(server.finish().code(), Some(1));

    let methods = |path: &Path| -> Vec<String> {
        fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("a JSON log line");
                v["method"].as_str().unwrap_or("").to_string()
            })
            .collect()
    };
    let expected = [
        "initialize",
        "notifications/initialized",
        "tools/call",
        "tools/call",
        "tools/call",
        "tools/call",
        "tools/list",
        "no/such",
        "tools/call",
    ];
    assert_eq!(methods(&proxy_log), expected);
    assert_eq!(methods(&server_log), expected);
}

#[test]
fn scripted_server_start_modes() {
    let mut cmd = Command::new(scripted_server());
    cmd.env("SCRIPTED_MODE", "exit_on_start");
    let server = LineClient::spawn(cmd);
    assert_eq!(server.finish().code(), Some(3));

    let mut cmd = Command::new(scripted_server());
    cmd.env("SCRIPTED_MODE", "garbage_start");
    let mut server = LineClient::spawn(cmd);
    assert_eq!(server.line(), "this is not json");
    let ping = server.request(1, "ping", json!({}));
    assert_eq!(ping["result"], json!({}), "{ping}");
}
