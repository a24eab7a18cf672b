//! `chassis serve`: publish a composition and serve its agents over HTTP
//! until stopped, reloading it as new generations.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::app::caller::Interrupt;
use crate::app::host::{Admission, Host, HostOptions};
use crate::app::{AppError, Problem};
use crate::serve::{Access, Limits, Served};

use super::super::exit::ExitStatus;
use super::super::ui::{Format, Ui, message_json};

/// Serve a composition's agents over HTTP.
///
/// Publishes FILE (exactly as `chassis publish` does; a composition that
/// cannot be published exits with that code before the port is bound),
/// then serves until stopped. Every run leases the generation current when
/// it arrives and finishes on it; a saved change to any file the load read
/// (FILE, its includes, prompt files, `chassis.lock`), `POST /v1/reload` or
/// SIGHUP reads FILE again and publishes what changed as a new generation — a reload that
/// fails keeps serving the current one and reports its findings at
/// `GET /v1/status`. Old generations retire when their last run ends.
///
/// Routes: `POST /v1/agents/{agent}/runs` with `{"input": "…"}` answers the
/// document `chassis run --format json` prints (`"stream": true` or
/// `Accept: text/event-stream` for Server-Sent Events: `run_started`, each
/// step, then `result` or `error`); `GET /v1/runs`, `GET /v1/runs/{id}`,
/// `POST /v1/runs/{id}/approvals`,
/// `GET /v1/generations`, `GET /v1/generations/{id}`, `GET /v1/status`,
/// `POST /v1/reload`, `GET /healthz`. Errors are `application/problem+json`
/// with a stable `code`.
///
/// A tool call that needs approval (and was not `--approve`d) pauses its
/// run: an `approval_requested` event, or a `202` with the run to poll;
/// `POST /v1/runs/{id}/approvals` answers it, and nobody answering within
/// `[serve] approval_timeout_seconds` (300) refuses it. What no grant
/// covers is refused.
///
/// Who may call: with `[serve] tokens = [{ secret = "CHASSIS_TOKEN" }]`
/// every route needs `Authorization: Bearer <token>` (401 without), but
/// those `[serve] auth_excluded` names (`/healthz`, `/metrics`). A
/// non-loopback `--listen` needs tokens, and TLS (`--tls-cert`,
/// `--tls-key`) or `--allow-insecure-bind`.
///
/// SIGTERM stops accepting, lets runs in flight finish (up to
/// `--drain-timeout`, then cancels them), closes every connection still
/// open (a client stalled mid-request too), unmounts every plugin and
/// exits 0; SIGINT does the same and exits 130; a second signal skips the
/// drain. A client gets `--read-timeout` to send a request's headers (an
/// idle connection is closed after as long) and between its body's chunks.
///
/// Exit status: 0 stopped by SIGTERM, 1 refused (pending, a cycle),
/// 2 unusable input (the file, the address), 3 a plugin, store or bind
/// failure, 130 stopped by SIGINT.
#[derive(Debug, clap::Args)]
#[command(
    after_long_help = "Examples:\n  chassis serve examples/serve.toml\n  chassis serve composition.toml --listen 127.0.0.1:8080 --approve word_count\n  curl -s localhost:7300/v1/agents/assistant/runs -d '{\"input\": \"Count: one two\"}'\n  curl -sN localhost:7300/v1/agents/assistant/runs -d '{\"input\": \"hi\", \"stream\": true}'"
)]
pub struct ServeArgs {
    /// Composition file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Address to listen on (port 0 picks a free port; the address is
    /// printed on stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7300")]
    pub listen: String,
    /// The store (default: the composition's `[store] path`, else
    /// `.chassis/state.db` beside FILE).
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
    /// Secrets and `enabled_if` variables from this env file too.
    #[arg(long, value_name = "PATH")]
    pub env_file: Option<PathBuf>,
    /// Approve every call of this tool without asking a client (repeatable).
    #[arg(long, value_name = "TOOL")]
    pub approve: Vec<String>,
    /// Widen the default policy: `name[:resource-pattern]` (repeatable).
    #[arg(long, value_name = "GRANT")]
    pub grant: Vec<String>,
    /// Publish without the pending entries instead of refusing.
    #[arg(long)]
    pub allow_pending: bool,
    /// Let a run request bring its own `command` tools (`request_tools`,
    /// a request-tools file's TOML). A client can then name any program,
    /// run as this server's user: each call of one waits for a client's
    /// approval, starts in the composition's folder with none of the
    /// server's environment; without this flag such a request is refused
    /// (403).
    #[arg(long)]
    pub allow_request_tools: bool,
    /// Runs at once; more are refused with 429 and `Retry-After`.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_runs: u32,
    /// Largest request body, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20, value_parser = clap::value_parser!(u32).range(1..=1 << 30))]
    pub max_body: u32,
    /// Seconds runs in flight may take to finish after SIGTERM/SIGINT
    /// before they are cancelled.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub drain_timeout: u64,
    /// Seconds a client may take to send a request's headers, or between
    /// two chunks of its body; an idle kept-alive connection is closed
    /// after as long.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub read_timeout: u64,
    /// Serve HTTPS with this PEM certificate chain (with --tls-key).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Do not reload when the composition's files change (SIGHUP and
    /// `POST /v1/reload` still do).
    #[arg(long)]
    pub no_watch: bool,
    /// Listen on a non-loopback address without TLS (tokens still
    /// required): only behind a proxy that terminates TLS.
    #[arg(long)]
    pub allow_insecure_bind: bool,
}

/// How the server was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Running,
    Terminate,
    Interrupt,
}

/// Run `serve`.
pub fn run(ui: &Ui, args: &ServeArgs) -> Result<ExitStatus, ExitStatus> {
    super::super::require_format(ui, &[Format::Text, Format::Json], "serve")?;
    let listen = listen_address(&args.listen).map_err(|e| {
        super::super::report::fail(
            ui,
            &Problem::input(format!("`--listen {}` is not an address: {e}", args.listen))
                .with_help("give `HOST:PORT`, e.g. `127.0.0.1:7300` or `localhost:7300` (port 0 picks a free one)")
                .into(),
        )
    })?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            Some(crate::serve::tls::server_config(cert, key).map_err(|e| {
                super::super::report::fail(ui, &Problem::input(e).with_code("serve::tls").into())
            })?)
        }
        _ => None,
    };
    if !listen.ip().is_loopback() && tls.is_none() && !args.allow_insecure_bind {
        return Err(super::super::report::fail(
            ui,
            &Problem::input(format!(
                "`--listen {listen}` is not a loopback address: serving it needs TLS"
            ))
            .with_code("serve::insecure-bind")
            .with_help("give --tls-cert and --tls-key, or --allow-insecure-bind behind a proxy that terminates TLS")
            .into(),
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            super::super::report::fail(
                ui,
                &AppError::failure(format!("cannot start the runtime: {e}")),
            )
        })?;
    runtime.block_on(serve(ui, args, listen, tls))
}

/// The tokens of `[serve]`, resolved; a non-loopback address without any
/// is refused. Judged before the store is opened or anything published.
/// The address `text` names: `IP:PORT`, or `HOST:PORT` with the host
/// resolved (`localhost:7300`), its first address taken; whether it is
/// loopback is judged on that address.
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    use std::net::ToSocketAddrs as _;
    let mut found = text.to_socket_addrs().map_err(|e| e.to_string())?;
    found
        .next()
        .ok_or_else(|| format!("`{text}` resolves to no address"))
}

fn access(admission: &Admission<'_>, listen: SocketAddr) -> Result<Access, AppError> {
    let settings = admission.serve_settings();
    let tokens = settings
        .tokens
        .iter()
        .map(|t| admission.secret(&t.value))
        .collect::<Result<Vec<_>, _>>()?;
    if tokens.is_empty() && !listen.ip().is_loopback() {
        return Err(Problem::input(format!(
            "`--listen {listen}` is not a loopback address, and `[serve] tokens` names none"
        ))
        .with_code("serve::needs-tokens")
        .with_help("add `[serve]\ntokens = [{ secret = \"CHASSIS_TOKEN\" }]` to the composition and set CHASSIS_TOKEN")
        .into());
    }
    Ok(Access::new(
        tokens,
        settings
            .auth_excluded
            .iter()
            .map(|r| r.value.clone())
            .collect(),
    ))
}

async fn serve(
    ui: &Ui,
    args: &ServeArgs,
    listen: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> Result<ExitStatus, ExitStatus> {
    let (stop_tx, stop_rx) = watch::channel(Stop::Running);
    // Cancels what is still running: a second signal, or the drain timeout.
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let serving = Arc::new(AtomicBool::new(false));
    let signals = spawn_signals(stop_tx.clone(), cancel_tx.clone(), Arc::clone(&serving));
    let mut caller = super::super::caller(ui);
    // What cancels the publish and the runs: a signal before the port is
    // bound, a second signal or the drain's end after.
    caller.interrupt = Interrupt::new(move || {
        let mut cancel = cancel_rx.clone();
        async move {
            let _ = cancel.wait_for(|c| *c).await;
        }
    });
    let host = Host::start(
        HostOptions {
            file: args.file.clone(),
            state: args.state.clone(),
            env_file: args.env_file.clone(),
            allow_pending: args.allow_pending,
            grants: args.grant.clone(),
            approve: args.approve.clone(),
            allow_request_tools: args.allow_request_tools,
        },
        caller.clone(),
        |admission| access(admission, listen),
    )
    .await;
    let (host, access) = match host {
        Ok(started) => started,
        Err(e) => {
            signals.abort();
            return Err(super::super::report::fail(ui, &e));
        }
    };
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => {
            host.shutdown().await;
            signals.abort();
            return Err(super::super::report::fail(
                ui,
                &Problem::failure(format!("cannot listen on {listen}: {e}"))
                    .with_code("serve::bind")
                    .with_help("another process may hold the port; choose one with --listen")
                    .into(),
            ));
        }
    };
    serving.store(true, Ordering::SeqCst);
    let address = listener.local_addr().unwrap_or(listen);
    let scheme = if tls.is_some() { "https" } else { "http" };
    let heartbeat = host.announce(format!("{scheme}://{address}")).await;
    let current = host.current().map(|g| g.id.to_string()).unwrap_or_default();
    if ui.format == Format::Json {
        ui.err(
            &serde_json::json!({
                "type": "listening",
                "address": format!("{scheme}://{address}"),
                "generation_id": current,
            })
            .to_string(),
        );
    } else {
        ui.err(&format!(
            "chassis serve: listening on {scheme}://{address} (generation {current}); stop with Ctrl-C"
        ));
    }
    // SIGHUP reloads, and so does a change to any file the load read.
    let reloader = spawn_reload_on_hangup(host.clone(), ui.clone());
    let watcher = if args.no_watch {
        None
    } else {
        let said = ui.clone();
        match crate::serve::watch::spawn(host.clone(), move |r| say_reload(r, &said)) {
            Ok(w) => Some(w),
            Err(e) => {
                ui.err(&format!(
                    "warning: {e}; reload with SIGHUP or POST /v1/reload"
                ));
                None
            }
        }
    };
    let served = Served::new(
        host.clone(),
        Limits {
            body_bytes: args.max_body as usize,
            concurrent_runs: args.max_runs as usize,
            read_timeout: Duration::from_secs(args.read_timeout),
        },
    )
    .with_reload_log({
        let ui = ui.clone();
        Arc::new(move |r| say_reload(r, &ui))
    });
    let mut stopped = stop_rx.clone();
    let drain = Duration::from_secs(args.drain_timeout);
    let cancel_on_timeout = cancel_tx.clone();
    let stopping = host.clone();
    let stop = async move {
        let _ = stopped.wait_for(|s| *s != Stop::Running).await;
        // A reload setting a plugin up would publish onto a server that is
        // stopping: its setup is cancelled now, not waited for (a process
        // plugin's could take its whole startup timeout).
        stopping.cancel_setups();
        // Runs in flight get `drain`; then what is left is cancelled.
        tokio::spawn(async move {
            tokio::time::sleep(drain).await;
            let _ = cancel_on_timeout.send(true);
        });
    };
    let mut cancel = cancel_tx.subscribe();
    let cancelled = async move {
        let _ = cancel.wait_for(|c| *c).await;
    };
    let result = match tls {
        None => {
            crate::serve::serve(listener, served, access, stop, cancelled).await;
            Ok(())
        }
        Some(config) => match crate::serve::tls::TlsListener::new(listener, config) {
            Ok(tls) => {
                crate::serve::serve(tls, served, access, stop, cancelled).await;
                Ok(())
            }
            Err(e) => Err(e),
        },
    };
    reloader.abort();
    heartbeat.abort();
    if let Some(w) = watcher {
        w.abort();
    }
    host.shutdown().await;
    signals.abort();
    if let Err(e) = result {
        return Err(super::super::report::fail(
            ui,
            &AppError::failure(format!("the server failed: {e}")),
        ));
    }
    let how = *stop_rx.borrow();
    if !ui.quiet {
        say(ui, "stopped; every plugin unmounted");
    }
    Ok(match how {
        Stop::Interrupt => ExitStatus::Interrupted,
        _ => ExitStatus::Success,
    })
}

/// SIGTERM and SIGINT: the first stops accepting (and records which) —
/// and, before the port is bound, cancels the publish — the second cancels
/// what is still running.
fn spawn_signals(
    stop: watch::Sender<Stop>,
    cancel: watch::Sender<bool>,
    serving: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            // Installed from the start, so a SIGHUP before the port is
            // bound no longer kills the process; once serving, it reloads
            // (see spawn_reload_on_hangup).
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        let mut seen = 0;
        loop {
            let got = tokio::select! {
                _ = term.recv() => Stop::Terminate,
                _ = int.recv() => Stop::Interrupt,
                _ = hup.recv() => continue,
            };
            seen += 1;
            if seen == 1 {
                let _ = stop.send(got);
                if !serving.load(Ordering::SeqCst) {
                    let _ = cancel.send(true);
                }
            } else {
                let _ = cancel.send(true);
            }
        }
    })
}

/// A status line on stderr: `chassis serve: {text}`, or under `--format
/// json` a `note` line.
fn say(ui: &Ui, text: &str) {
    if ui.format == Format::Json {
        ui.info(text);
    } else {
        ui.err(&format!("chassis serve: {text}"));
    }
}

/// One line on stderr per reload (`-q`: none), then its findings (already
/// scrubbed) one line each: a failed reload's errors, a published one's
/// warnings (`[serve]` changes that wait for a restart, say). Under
/// `--format json`, the reload is a `note` line (a failed one an `error`
/// line, `serve::reload-failed`) and each finding its diagnostic line.
fn say_reload(r: &crate::app::host::ReloadStatus, ui: &Ui) {
    if ui.quiet {
        return;
    }
    let what = if r.ok {
        format!(
            "reloaded ({}: {})",
            if r.published {
                "published"
            } else {
                "no change"
            },
            r.generation_id
        )
    } else {
        format!(
            "reload failed, still serving {}: {}",
            r.generation_id,
            r.error.as_deref().unwrap_or_default()
        )
    };
    if ui.format == Format::Json {
        let mut lines = vec![if r.ok {
            message_json("note", None, &what, &[])
        } else {
            message_json(
                "error",
                Some("serve::reload-failed"),
                &what,
                &[format!(
                    "generation {} is still served; fix the composition and reload again",
                    r.generation_id
                )],
            )
        }];
        lines.extend(r.diagnostics.iter().cloned());
        let text: Vec<String> = lines.iter().map(ToString::to_string).collect();
        // One write, so a concurrent line never splits a reload's.
        ui.err(&text.join("\n"));
        return;
    }
    let mut text = format!("chassis serve: {what}");
    for d in &r.diagnostics {
        let at = &d["labels"][0];
        let place = match (
            at["file"].as_str(),
            at["line"].as_u64(),
            at["column"].as_u64(),
        ) {
            (Some(f), Some(l), Some(c)) => format!("{f}:{l}:{c}: "),
            _ => String::new(),
        };
        text.push_str(&format!(
            "\n  {place}{}: {}",
            d["severity"].as_str().unwrap_or("error"),
            d["message"].as_str().unwrap_or_default()
        ));
        for help in d["help"].as_array().into_iter().flatten() {
            if let Some(help) = help.as_str() {
                text.push_str(&format!("\n    help: {help}"));
            }
        }
    }
    ui.err(&text);
}

fn spawn_reload_on_hangup(host: Host, ui: Ui) -> tokio::task::JoinHandle<()> {
    let host = Arc::new(host);
    tokio::spawn(async move {
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            return;
        };
        while hup.recv().await.is_some() {
            say_reload(&host.reload().await, &ui);
        }
    })
}

#[cfg(test)]
mod listen_tests {
    use super::listen_address;

    #[test]
    fn a_host_name_is_resolved_and_judged_on_its_address() {
        assert_eq!(
            listen_address("127.0.0.1:7300").unwrap(),
            "127.0.0.1:7300".parse().unwrap()
        );
        let local = listen_address("localhost:7300").unwrap();
        assert!(local.ip().is_loopback(), "{local}");
        assert_eq!(local.port(), 7300);
        // No port: not an address (and nothing is looked up).
        assert!(listen_address("localhost").is_err());
    }
}
