//! `[serve]` is read when the server starts: a reload that finds it
//! changed keeps the running settings and says so.

use super::*;

#[test]
fn a_reload_that_changes_serve_settings_warns_that_a_restart_applies_them() {
    let (dir, file) = workspace();
    let server = Server::start(dir.path(), "serve.toml", &["--no-watch"]);
    let c = client();
    let original = std::fs::read_to_string(&file).unwrap();
    save(
        &file,
        &with_serve(
            &original,
            "tokens = [{ secret = \"SERVE_TOKEN\" }]\napproval_timeout_seconds = 5",
        ),
    );
    runtime().block_on(async {
        let (status, _, reload) = post(&c, &server.url("/v1/reload"), &Value::Null).await;
        assert_eq!(status, 200, "{reload}");
        let warning = |doc: &Value| {
            doc["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["code"] == "serve::restart-needed")
                .cloned()
                .unwrap_or_else(|| panic!("no restart warning: {doc}"))
        };
        let w = warning(&reload);
        assert_eq!(w["severity"], "warning", "{w}");
        let message = w["message"].as_str().unwrap();
        assert!(
            message.contains("`tokens`") && message.contains("`approval_timeout_seconds`"),
            "{message}"
        );
        assert!(!message.contains("auth_excluded"), "{message}");
        assert!(w["help"][0].as_str().unwrap().contains("restart"), "{w}");
        // Not applied: the server still answers without a token.
        let (status, doc) = get(&c, &server.url("/v1/status")).await;
        assert_eq!(status, 200, "{doc}");
        assert_eq!(warning(&doc["last_reload"]), w);
        // Back as it started: no warning.
        save(&file, &original);
        let (_, _, reload) = post(&c, &server.url("/v1/reload"), &Value::Null).await;
        assert_eq!(reload["diagnostics"], json!([]), "{reload}");
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
    // The log says it too, once, on the first reload's line.
    assert_eq!(rest.matches("chassis serve: reloaded").count(), 2, "{rest}");
    assert_eq!(
        rest.matches("warning: `[serve]` changed (`tokens`, `approval_timeout_seconds`)")
            .count(),
        1,
        "{rest}"
    );
    assert!(rest.contains("help: restart `chassis serve`"), "{rest}");
}
