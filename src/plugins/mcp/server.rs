//! One mounted server, supervised.
//!
//! Why it exists: a server is a process (or a connection) that can die or
//! change under a running generation. [`Server`] owns the live session and
//! hands it to each call. A crash fails the call in flight at once (the
//! transport closes, the pending request errors); the next call restarts
//! the server, with a bounded exponential backoff between attempts. After a
//! restart, or after `notifications/tools/list_changed`, the tool list is
//! fetched again and compared with the one this generation published: a
//! generation is immutable, so tools the server adds wait for a new
//! generation, and when a published tool is gone or changed the server's tools
//! stop answering with an error that says to publish a new generation
//! (`chassis tools --update-lock`, then publish), instead of silently
//! calling tools whose schemas no longer match what the model was shown.
//! Either way the change is reported once per distinct tool list through
//! the context's [`ToolSetReporter`], with the lock entry that pins the new
//! list, so the harness's owner can build a candidate generation from it.
//! A watcher task ([`Server::watch`]) reacts to `list_changed` at once,
//! without waiting for the next call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::McpSession;
use super::live::lock_entry;
use super::spec::ServerSpec;
use crate::engine::secret::Redactor;
use crate::lock::{LockEntry, diff_tools};
use crate::runtime::ToolSetReporter;

/// The first restart waits this long after a failure; each further one
/// doubles it, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// The longest wait between two restart attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The watcher lists a server at most this often.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(250);

struct State {
    session: Option<Arc<dyn McpSession>>,
    /// Consecutive failed restarts.
    failures: u32,
    /// No restart before this instant.
    not_before: Option<Instant>,
    /// Why the tools no longer answer (their contract changed).
    drifted: Option<String>,
    /// Restarts so far.
    restarts: u32,
    /// A `list_changed` whose listing failed: compare again before the
    /// next call.
    relist: bool,
    /// The last tool list reported as a change (reported once).
    reported: Option<LockEntry>,
}

/// A supervised server.
pub struct Server {
    spec: ServerSpec,
    config: Value,
    published: LockEntry,
    redactor: Redactor,
    state: tokio::sync::Mutex<State>,
    /// Where the plugin's health goes: unhealthy while the server is down,
    /// degraded when its tools drifted, healthy again after a restart.
    health: Option<crate::runtime::HealthReporter>,
    /// Where tool-list changes go (a candidate generation is built there).
    tool_sets: Option<ToolSetReporter>,
    /// Woken when a restart replaced the session (the watcher follows it).
    replaced: tokio::sync::Notify,
}

impl Server {
    /// Supervise `session`, started from `spec`, whose published tools are
    /// `published`.
    pub fn new(
        spec: ServerSpec,
        config: Value,
        published: LockEntry,
        redactor: Redactor,
        session: Arc<dyn McpSession>,
    ) -> Self {
        Self {
            spec,
            config,
            published,
            redactor,
            state: tokio::sync::Mutex::new(State {
                session: Some(session),
                failures: 0,
                not_before: None,
                drifted: None,
                relist: false,
                restarts: 0,
                reported: None,
            }),
            health: None,
            tool_sets: None,
            replaced: tokio::sync::Notify::new(),
        }
    }

    /// The same server, reporting tool-list changes through `reporter`.
    #[must_use]
    pub fn with_tool_sets(mut self, reporter: ToolSetReporter) -> Self {
        self.tool_sets = Some(reporter);
        self
    }

    /// Follow the server's `notifications/tools/list_changed` until the
    /// server is closed: each one is compared (and reported) at once,
    /// not at the next call. Run as a task owned by the plugin.
    pub async fn watch(self: Arc<Self>) {
        loop {
            let session = {
                let state = self.state.lock().await;
                if state.drifted.is_some() && state.session.is_none() {
                    return; // closed
                }
                state.session.clone()
            };
            match session {
                Some(s) if !s.is_closed() => {
                    tokio::select! {
                        () = s.tools_changed() => {
                            self.relist_in_background(&s).await;
                            // A server that announces on every listing
                            // is not listed in a loop.
                            tokio::time::sleep(WATCH_INTERVAL).await;
                        }
                        () = self.replaced.notified() => {}
                    }
                }
                // Down: the next call restarts it and wakes us.
                _ => self.replaced.notified().await,
            }
        }
    }

    /// The watcher's listing: the flag is taken and a compare marked as
    /// owed under the lock, the server is listed without it (calls go on;
    /// one that comes meanwhile does its own compare first, as owed), and
    /// the result is compared under the lock if nobody did it meanwhile.
    async fn relist_in_background(&self, s: &Arc<dyn McpSession>) {
        {
            let mut state = self.state.lock().await;
            if !s.take_tools_changed() {
                return; // the call path took it
            }
            state.relist = true;
        }
        let listed = tokio::time::timeout(self.spec.startup_timeout, s.list_tools()).await;
        let mut state = self.state.lock().await;
        let same = state.session.as_ref().is_some_and(|c| Arc::ptr_eq(c, s));
        if !same || !state.relist {
            return;
        }
        if let Ok(Ok(tools)) = listed {
            state.relist = false;
            let _ = self.compare(&mut state, s.identity(), &tools, "changed its tool list");
        }
        // A failed listing stays owed: the next call lists again.
    }

    /// The same server, reporting its health through `reporter`.
    #[must_use]
    pub fn with_health(mut self, reporter: crate::runtime::HealthReporter) -> Self {
        self.health = Some(reporter);
        self
    }

    /// The session closed under a call: unhealthy until a restart.
    pub fn went_away(&self) {
        self.report(crate::runtime::Health::Unhealthy);
    }

    fn report(&self, health: crate::runtime::Health) {
        if let Some(r) = &self.health {
            r.report(health);
        }
    }

    /// The entry id.
    pub fn entry(&self) -> &str {
        &self.spec.entry
    }

    /// How many times the server was restarted.
    pub async fn restarts(&self) -> u32 {
        self.state.lock().await.restarts
    }

    /// A live session for one call: the current one, or a restarted one.
    pub async fn session(&self) -> Result<Arc<dyn McpSession>, String> {
        let mut state = self.state.lock().await;
        if let Some(why) = &state.drifted {
            return Err(why.clone());
        }
        if let Some(s) = state.session.as_ref().filter(|s| !s.is_closed()) {
            let s = Arc::clone(s);
            if s.take_tools_changed() || state.relist {
                // The server announced a new list: compare before calling.
                self.relist(&mut state, &s).await?;
            }
            return Ok(s);
        }
        if let Some(old) = state.session.take() {
            self.report(crate::runtime::Health::Unhealthy);
            old.close().await;
            tracing::warn!(target: "chassis::mcp", entry = %self.spec.entry, "the MCP server is gone; restarting it");
        }
        let now = Instant::now();
        if let Some(t) = state.not_before.filter(|t| *t > now) {
            return Err(format!(
                "the MCP server of entry `{}` is down; the next restart is allowed in {:.1} s",
                self.spec.entry,
                (t - now).as_secs_f64()
            ));
        }
        match super::live::start(&self.spec, &self.redactor).await {
            Ok((session, tools)) => {
                state.failures = 0;
                state.not_before = None;
                state.restarts += 1;
                if let Some(r) = &self.health {
                    r.restarted();
                }
                if let Err(e) = self.compare(
                    &mut state,
                    session.identity(),
                    &tools,
                    "was restarted and now offers other tools",
                ) {
                    session.close().await;
                    return Err(e);
                }
                state.session = Some(Arc::clone(&session));
                self.replaced.notify_one();
                self.report(crate::runtime::Health::Healthy);
                Ok(session)
            }
            Err(e) => {
                self.report(crate::runtime::Health::Unhealthy);
                state.failures += 1;
                let backoff = FIRST_BACKOFF
                    .saturating_mul(2u32.saturating_pow(state.failures - 1))
                    .min(MAX_BACKOFF);
                state.not_before = Some(Instant::now() + backoff);
                Err(format!(
                    "the MCP server of entry `{}` is down and could not be restarted: {e}",
                    self.spec.entry
                ))
            }
        }
    }

    /// List the tools of `session` after `list_changed` and compare them
    /// (within the start-up timeout; a failed listing is tried again before
    /// the next call, never skipped).
    async fn relist(&self, state: &mut State, session: &Arc<dyn McpSession>) -> Result<(), String> {
        let listed = tokio::time::timeout(self.spec.startup_timeout, session.list_tools()).await;
        match listed {
            Ok(Ok(tools)) => {
                state.relist = false;
                self.compare(state, session.identity(), &tools, "changed its tool list")
            }
            Ok(Err(e)) => {
                state.relist = true;
                Err(format!(
                    "the server changed its tool list and listing it failed: {e}"
                ))
            }
            Err(_) => {
                state.relist = true;
                Err("the server changed its tool list and did not list it in time".into())
            }
        }
    }

    /// Compare `tools` (offered by the server `identity`) with the
    /// published ones: report a new list once, and mark the tools drifted
    /// when a published one is gone or changed.
    fn compare(
        &self,
        state: &mut State,
        identity: &super::client::ServerIdentity,
        tools: &[super::client::RemoteTool],
        what: &str,
    ) -> Result<(), String> {
        let live = lock_entry(identity, tools, &self.config, &self.redactor)?;
        let changes = diff_tools(&self.published, &live);
        if !changes.is_empty() && state.reported.as_ref() != Some(&live) {
            if let Some(r) = &self.tool_sets {
                r.report(
                    &format!("the MCP server {what}"),
                    changes.iter().map(ToString::to_string).collect(),
                    Some(live.clone()),
                );
            }
            state.reported = Some(live);
        }
        // New tools do not touch what this generation published: they wait
        // for a new generation. A published tool gone or changed does.
        let (added, broken): (Vec<_>, Vec<_>) = changes
            .iter()
            .partition(|c| matches!(c, crate::lock::ToolChange::Added { .. }));
        if !added.is_empty() {
            let list: Vec<String> = added.iter().map(ToString::to_string).collect();
            tracing::info!(
                target: "chassis::mcp",
                entry = %self.spec.entry,
                "the MCP server {what} ({}); a new generation offers them, this one keeps its tools",
                list.join(", ")
            );
        }
        if broken.is_empty() {
            return Ok(());
        }
        let list: Vec<String> = broken.iter().map(ToString::to_string).collect();
        let why = format!(
            "the MCP server of entry `{}` {what} ({}); this generation keeps the tools it published, so its tools are unavailable until a new generation is published (`chassis tools FILE --update-lock`, then publish)",
            self.spec.entry,
            list.join(", ")
        );
        tracing::warn!(target: "chassis::mcp", entry = %self.spec.entry, "{why}");
        state.drifted = Some(why.clone());
        self.report(crate::runtime::Health::Degraded);
        Err(why)
    }

    /// Stop the server (unload).
    pub async fn close(&self) {
        let mut state = self.state.lock().await;
        if let Some(s) = state.session.take() {
            s.close().await;
        }
        state.drifted = Some(format!(
            "the MCP server of entry `{}` was unloaded",
            self.spec.entry
        ));
        self.replaced.notify_one();
    }
}
