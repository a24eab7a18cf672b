//! No piece of a secret leaves: not one a window of a child's stderr cut
//! in two, nor one a model provider wrote into what it names (its model,
//! a tool call's name or id). The secrets are random canaries, so nothing
//! passes by knowing them in advance.

use std::io::Read;
use std::path::Path;

use crate::harness::run_in;

/// `prefix` and 60 random hex digits.
pub fn random_canary(prefix: &str) -> String {
    let mut bytes = [0u8; 30];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("random bytes");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

/// The first piece of `secret` at least `min` bytes long that `text` holds.
pub fn piece_in(secret: &str, text: &str, min: usize) -> Option<String> {
    (0..=secret.len().saturating_sub(min))
        .map(|i| &secret[i..i + min])
        .find(|piece| text.contains(piece))
        .map(str::to_owned)
}

/// What a run left: stdout, stderr, and the files named (that exist).
fn everything(stdout: &str, stderr: &str, dir: &Path, files: &[&str]) -> Vec<(String, String)> {
    let mut out = vec![
        ("stdout".to_owned(), stdout.to_owned()),
        ("stderr".to_owned(), stderr.to_owned()),
    ];
    for f in files {
        if let Ok(bytes) = std::fs::read(dir.join(f)) {
            out.push((
                (*f).to_owned(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    out
}

/// Writes to stderr 5000 bytes of `x`, the token, dots, and the token on
/// each of three last lines, so that the last `2048 + len(token)` bytes
/// (what chassis keeps of a failing program's stderr) begin `k` bytes into
/// the first copy; then fails. `k` is the first argument, or (as a hook)
/// the `k` of the tool call's arguments in the payload on stdin.
const FAILER: &str = r#"s="$CANARY_TOKEN"
if [ $# -gt 0 ]; then k=$1; else k=$(tr -d '\n' | sed -n 's/.*"k": *"\([0-9]*\)".*/\1/p'); fi
n=${#s}
pad=$(( 2048 + k - 3 * (n + 1) - 1 ))
{
  head -c 5000 /dev/zero | tr '\0' x
  printf '%s' "$s"
  head -c "$pad" /dev/zero | tr '\0' .
  printf '\n%s\n%s\n%s\n' "$s" "$s" "$s"
} >&2
exit 3
"#;

fn failing_composition(len: usize) -> String {
    let calls: Vec<String> = (0..=len)
        .map(|k| format!("{{ name = \"fail\", args = {{ k = \"{k}\" }} }}"))
        .collect();
    format!(
        r#"version = 1

# The canary is a referenced secret: the redactor knows it.
[plugins.vault]
version = "1.0.0"

[entries.vault]
config = {{ token = {{ secret = "CANARY_TOKEN" }} }}

[entries.tools]
plugin = "command"
config.env = ["CANARY_TOKEN", "PATH"]
[[entries.tools.config.tools]]
name = "fail"
description = "Fails, its stderr window starting k bytes into the token."
args = {{ type = "object", properties = {{ k = {{ type = "string" }} }}, required = ["k"] }}
argv = ["sh", "failer.sh", "{{/k}}"]
input = "none"
idempotent = true
timeout_seconds = 30

# A hook that fails the same way on every call.
[entries.obs]
plugin = "hook-command"
config = {{ argv = ["sh", "failer.sh"], events = ["before_tool_execute"], env = ["CANARY_TOKEN", "PATH"] }}

[entries.model]
plugin = "scripted"
[[entries.model.config.turns]]
tool_calls = [{calls}]
[[entries.model.config.turns]]
text = "done"

[agents.a]
prompt = "Fail."
tools = ["fail"]
default_input = "go"
"#,
        calls = calls.join(", ")
    )
}

#[test]
fn a_failing_command_or_hook_shows_no_piece_of_a_secret_its_stderr_window_cut() {
    let canary = random_canary("CNRY");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("failer.sh"), FAILER).unwrap();
    std::fs::write(dir.path().join("c.toml"), failing_composition(canary.len())).unwrap();
    for format in ["json", "text"] {
        let run = run_in(
            dir.path(),
            &[
                "--color", "never", "--format", format, "run", "c.toml", "--record", "rec.json",
                "--trace", "tr.jsonl",
            ],
            &[("CANARY_TOKEN", canary.as_str())],
        );
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        // Every call failed quoting its stderr's tail, the copies whole in
        // it redacted; the hook failed the same way each time.
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains("exit code 3; stderr: …"), "{all}");
        assert!(all.contains("<redacted>"), "{all}");
        if format == "text" {
            assert!(all.contains("hook `"), "{all}");
        }
        for (what, text) in everything(
            &run.stdout,
            &run.stderr,
            dir.path(),
            &["rec.json", "tr.jsonl"],
        ) {
            assert_eq!(
                piece_in(&canary, &text, 8),
                None,
                "a piece of the secret is in {what} ({format}):\n{text}"
            );
        }
    }
}
