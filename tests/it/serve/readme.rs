//! The README's `chassis serve` section works as written: every `$ curl`
//! command in it is run, in order, against `examples/serve.toml` (its
//! address put in for `localhost:7300`, `RUN_ID` for the run a command
//! answered), with the real `curl`.

use super::*;

/// The `$ curl …` lines of the README's *Serving agents* section.
fn readme_curls() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme
        .find("## Serving agents: `chassis serve`")
        .expect("the README has its serve section");
    let section = &readme[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    section[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("$ curl "))
        .map(|rest| {
            // Drop a trailing `# comment` (never inside the quoted JSON).
            let command = match rest.rfind("  #") {
                Some(i) if !rest[i..].contains('\'') => &rest[..i],
                _ => rest,
            };
            format!("curl {}", command.trim_end())
        })
        .collect()
}

fn sh(command: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", command])
        .output()
        .expect("sh runs (curl is installed by .ci/run when missing)");
    assert!(
        out.status.success(),
        "`{command}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_readme_curl_commands_work_as_written() {
    let curls = readme_curls();
    assert!(curls.len() >= 7, "{curls:?}");
    assert!(curls.iter().any(|c| c.contains("/approvals")), "{curls:?}");
    let (dir, _) = workspace();
    let server = Server::start(dir.path(), "serve.toml", &[]);
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut run_id = String::new();
    let mut seen = Vec::new();
    for curl in &curls {
        let command = curl
            .replace("localhost:7300", &address)
            .replace("RUN_ID", &run_id);
        assert!(!command.contains("RUN_ID"), "{command}");
        let mut out = sh(&command);
        // The last command polls a run that an approval let go on.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while command.ends_with(&format!("/v1/runs/{run_id}"))
            && (out.contains("\"running\"") || out.contains("\"awaiting_approval\""))
        {
            assert!(std::time::Instant::now() < deadline, "{out}");
            std::thread::sleep(Duration::from_millis(50));
            out = sh(&command);
        }
        if let Ok(doc) = serde_json::from_str::<Value>(&out) {
            assert!(
                doc.get("status").and_then(Value::as_u64).is_none(),
                "`{command}` answered a problem: {doc}"
            );
            if let Some(id) = doc["run_id"].as_str() {
                id.clone_into(&mut run_id);
            }
        }
        seen.push((command, out));
    }
    let answer = |needle: &str| {
        seen.iter()
            .find(|(c, _)| c.contains(needle))
            .unwrap_or_else(|| panic!("no command with {needle}"))
            .1
            .clone()
    };
    let counted: Value = serde_json::from_str(&answer("Count: one two three")).unwrap();
    assert_eq!(counted["answer"], "It has 3 words.");
    assert!(answer("\"stream\": true").contains("event: result"));
    assert!(answer("/metrics").contains("chassis_runs_total"));
    let waiting: Value = serde_json::from_str(&answer("Save: hello")).unwrap();
    assert_eq!(waiting["status"], "awaiting_approval", "{waiting}");
    let decided: Value = serde_json::from_str(&answer("/approvals")).unwrap();
    assert_eq!(decided["decided"][0]["decision"], "approve", "{decided}");
    let last: Value = serde_json::from_str(&seen.last().unwrap().1).unwrap();
    assert_eq!(last["status"], "succeeded", "{last}");
    assert_eq!(last["result"]["answer"], "Saved.", "{last}");
    let notes = std::fs::read_to_string(dir.path().join("quickstart-notes.txt")).unwrap();
    assert_eq!(notes, "a note saved through chassis serve\n");
}
