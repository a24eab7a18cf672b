//! Stopping is bounded: a client stalled mid-request holds the server
//! neither past `--drain-timeout` nor past a second signal, and a client
//! that stalls is dropped after `--read-timeout` anyway (slowloris).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use nix::sys::signal::Signal;

use super::*;

/// A run request whose body says 100 bytes and sends 9.
const HALF_BODY: &str = "POST /v1/agents/assistant/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"input\":";

/// A request whose headers never end.
const HALF_HEADERS: &str = "GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: ";

/// A connection to `server` that sent `bytes` and then says nothing.
fn stalled(server: &Server, bytes: &str) -> TcpStream {
    let address = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    stream.write_all(bytes.as_bytes()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
}

/// What `stream` receives until the server closes it (an error other than
/// a reset — a read timeout — fails: the server kept it open).
fn until_closed(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    match stream.read_to_end(&mut seen) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!(
            "the server kept the connection open: {e}; it sent {:?}",
            String::from_utf8_lossy(&seen)
        ),
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn sigterm_closes_stalled_connections_when_the_drain_ends() {
    let (dir, _) = workspace();
    let server = Server::start(
        dir.path(),
        "serve.toml",
        &["--no-watch", "--drain-timeout", "1"],
    );
    let _body = stalled(&server, HALF_BODY);
    let _headers = stalled(&server, HALF_HEADERS);
    // Both are read (and the run request's handler waits for its body).
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    let (code, rest) = server.stop(Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
    assert!(
        signalled.elapsed() < Duration::from_secs(8),
        "stopping took {:?} with a 1 s drain",
        signalled.elapsed()
    );
    assert!(rest.contains("every plugin unmounted"), "{rest}");
}

#[test]
fn a_second_sigint_skips_the_drain_of_a_stalled_connection() {
    let (dir, _) = workspace();
    let server = Server::start(
        dir.path(),
        "serve.toml",
        &["--no-watch", "--drain-timeout", "120"],
    );
    let _body = stalled(&server, HALF_BODY);
    std::thread::sleep(Duration::from_millis(300));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    nix::sys::signal::kill(pid, Signal::SIGINT).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    let (code, rest) = server.stop(Signal::SIGINT);
    assert_eq!(code, 130, "{rest}");
    assert!(
        signalled.elapsed() < Duration::from_secs(8),
        "the second signal did not skip the drain: {:?}",
        signalled.elapsed()
    );
}

#[test]
fn a_client_that_stalls_is_dropped_after_the_read_timeout() {
    let (dir, _) = workspace();
    let server = Server::start(
        dir.path(),
        "serve.toml",
        &["--no-watch", "--read-timeout", "1"],
    );
    let started = Instant::now();
    // Half the headers: closed without an answer.
    let mut headers = stalled(&server, HALF_HEADERS);
    // Half a body: the handler's read of it fails — a problem document —
    // and the connection is closed.
    let mut body = stalled(&server, HALF_BODY);
    // A kept-alive connection that was answered, then idles: closed too.
    let mut idle = stalled(&server, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    let seen = until_closed(&mut headers);
    assert!(!seen.contains("200 OK"), "{seen}");
    let seen = until_closed(&mut body);
    assert!(seen.starts_with("HTTP/1.1 400"), "{seen}");
    assert!(seen.contains("application/problem+json"), "{seen}");
    assert!(seen.contains("the request body stalled"), "{seen}");
    let seen = until_closed(&mut idle);
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The server is none the worse.
    runtime().block_on(async {
        let (status, _) = get(&client(), &server.url("/healthz")).await;
        assert_eq!(status, 200);
    });
    let (code, rest) = server.stop(Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
}
