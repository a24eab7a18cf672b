//! The watcher follows a folder that is removed and made again (`git
//! checkout`, `rm -rf prompts && mkdir prompts`): inotify watched the old
//! folder, so the new one is watched again — edits to it keep reloading.

use super::*;

/// The system prompt a run of the current generation is sent.
async fn prompt(c: &reqwest::Client, server: &Server) -> String {
    let (status, _, doc) = post(
        c,
        &server.url("/v1/agents/assistant/runs"),
        &json!({"input": "hello"}),
    )
    .await;
    assert_eq!(status, 200, "{doc}");
    doc["messages"][0]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no system message: {doc}"))
        .to_owned()
}

/// Wait until generation `id` is current.
async fn current_is(c: &reqwest::Client, server: &Server, id: &str) {
    status_until(c, server, |s| s["current"]["id"] == id).await;
}

#[test]
fn a_prompt_folder_removed_and_made_again_is_still_watched() {
    let (dir, file) = workspace();
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "prompt = \"You count words with the word_count tool.\"",
        "prompt_file = \"prompts/a.md\"",
    );
    save(&file, &text);
    let prompts = dir.path().join("prompts");
    let a = prompts.join("a.md");
    std::fs::create_dir(&prompts).unwrap();
    std::fs::write(&a, "v1").unwrap();
    let server = Server::start(dir.path(), "serve.toml", &[]);
    let c = client();
    runtime().block_on(async {
        assert_eq!(prompt(&c, &server).await, "v1");
        // Removed and made again at once: one reload, then the new folder
        // is watched.
        std::fs::remove_dir_all(&prompts).unwrap();
        std::fs::create_dir(&prompts).unwrap();
        std::fs::write(&a, "v2").unwrap();
        current_is(&c, &server, "gen_0002").await;
        assert_eq!(prompt(&c, &server).await, "v2");
        std::fs::write(&a, "v3").unwrap();
        current_is(&c, &server, "gen_0003").await;
        assert_eq!(prompt(&c, &server).await, "v3");
        // Removed (the reload fails and keeps serving), made again later:
        // its making is seen from the folder above.
        std::fs::remove_dir_all(&prompts).unwrap();
        status_until(&c, &server, |s| s["last_reload"]["ok"] == false).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::fs::create_dir(&prompts).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::fs::write(&a, "v4").unwrap();
        current_is(&c, &server, "gen_0004").await;
        assert_eq!(prompt(&c, &server).await, "v4");
        std::fs::write(&a, "v5").unwrap();
        current_is(&c, &server, "gen_0005").await;
        assert_eq!(prompt(&c, &server).await, "v5");
    });
    let (code, rest) = server.stop(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, 0, "{rest}");
}
