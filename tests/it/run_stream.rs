//! `chassis run` on a terminal prints the answer as it is generated (the
//! `openai` model streams); through a pipe the answer comes whole, at the
//! end, and the model is not asked to stream. The terminal is a real pty
//! (`script` from util-linux, part of every Debian system).

use std::process::Command;

use crate::harness::run_in;
use crate::loopback::{Endpoint, answer_reply, streamed_reply};

fn composition(base_url: &str) -> String {
    format!(
        "version = 1\n\n[entries.model]\nplugin = \"openai\"\n[entries.model.config]\nmodel = \"loopback\"\nbase_url = \"{base_url}\"\n\n[agents.assistant]\nprompt = \"You answer.\"\n"
    )
}

#[test]
fn on_a_terminal_the_answer_streams_and_through_a_pipe_it_comes_whole() {
    let endpoint = Endpoint::start(vec![
        streamed_reply(&["Hel", "lo ", "there."], true),
        answer_reply("Whole."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.toml"), composition(&endpoint.base_url)).unwrap();
    let chassis = env!("CARGO_BIN_EXE_chassis");
    let out = Command::new("script")
        .args([
            "-qec",
            &format!("{chassis} --color never run c.toml --input hi"),
            "/dev/null",
        ])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "xterm")
        .env("HOME", dir.path())
        .output()
        .expect("script (util-linux) runs");
    let shown = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    assert!(out.status.success(), "{shown}");
    assert_eq!(
        shown.matches("Hello there.").count(),
        1,
        "printed once: {shown}"
    );
    assert!(
        shown.contains("answered in"),
        "the summary follows: {shown}"
    );
    // Through a pipe: the whole answer on stdout, no stream asked for.
    let piped = run_in(dir.path(), &["run", "c.toml", "--input", "hi"], &[]);
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert_eq!(piped.stdout, "Whole.\n");
    let bodies = endpoint.bodies();
    assert_eq!(bodies[0]["stream"], true, "{}", bodies[0]);
    assert!(bodies[1].get("stream").is_none(), "{}", bodies[1]);
}
