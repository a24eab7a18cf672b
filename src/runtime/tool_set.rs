//! Tool-set changes: a mounted plugin's tools changed under a generation.
//!
//! Why it exists: a generation is immutable, yet some plugins front tools
//! that live elsewhere — an MCP server restarted on a new version, or one
//! that sent `notifications/tools/list_changed`. The plugin must not change
//! what the running generation offers (a run sees the tools its model was
//! shown); it reports the change here instead, and whoever owns the harness
//! (`chassis run`, later `chassis serve`) builds a *candidate* generation
//! from it — the composition with the entry's new tools — and publishes it
//! through the ordinary transactional reconcile, while runs in flight
//! finish on the generation they leased.
//!
//! The harness keeps one broadcast channel; each mounted plugin gets a
//! [`ToolSetReporter`] bound to its entry and instance, so a report from an
//! instance that is no longer current can be told apart and ignored.

use tokio::sync::broadcast;

use crate::lock::LockEntry;

/// How many reports a slow subscriber may fall behind before it misses
/// some (it then sees [`broadcast::error::RecvError::Lagged`]).
pub const CHANNEL_CAPACITY: usize = 64;

/// One change a plugin reported.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSetChange {
    /// The entry whose tools changed.
    pub entry_id: String,
    /// The instance that saw the change (compare with the current
    /// generation's instances: a report from a retired one is stale).
    pub instance_id: String,
    /// What happened, for people (`was restarted and now offers other tools`).
    pub reason: String,
    /// The tool diff against what the generation published (`+ extra`,
    /// `~ echo (input_schema)`, `- gone`).
    pub changes: Vec<String>,
    /// For a kind whose tools are pinned in `chassis.lock` (`mcp`): the
    /// lock entry that pins the tools offered now — what a candidate
    /// generation is built from.
    pub pinned: Option<LockEntry>,
}

/// Where reports go: the harness's channel (cheap to clone).
#[derive(Clone, Debug)]
pub struct ToolSetSink(broadcast::Sender<ToolSetChange>);

impl Default for ToolSetSink {
    fn default() -> Self {
        Self(broadcast::channel(CHANNEL_CAPACITY).0)
    }
}

impl ToolSetSink {
    /// A new receiver of every report sent from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ToolSetChange> {
        self.0.subscribe()
    }

    /// The reporter of one mounted instance.
    pub fn reporter(&self, entry_id: &str, instance_id: &str) -> ToolSetReporter {
        ToolSetReporter {
            sink: self.clone(),
            entry_id: entry_id.to_owned(),
            instance_id: instance_id.to_owned(),
        }
    }
}

/// A handle a plugin keeps to report that the tools it could offer differ
/// from those its generation published ([`crate::runtime::PluginContext::tool_set_reporter`]).
#[derive(Clone, Debug)]
pub struct ToolSetReporter {
    sink: ToolSetSink,
    entry_id: String,
    instance_id: String,
}

impl ToolSetReporter {
    /// Report a change; a report nobody listens to is dropped (a harness
    /// without an owner that builds candidates keeps its generation).
    pub fn report(&self, reason: &str, changes: Vec<String>, pinned: Option<LockEntry>) {
        let _ = self.sink.0.send(ToolSetChange {
            entry_id: self.entry_id.clone(),
            instance_id: self.instance_id.clone(),
            reason: reason.to_owned(),
            changes,
            pinned,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_report_reaches_every_subscriber_with_its_entry_and_instance() {
        let sink = ToolSetSink::default();
        let mut a = sink.subscribe();
        let mut b = sink.subscribe();
        sink.reporter("fs", "inst-1")
            .report("changed its tool list", vec!["+ extra".into()], None);
        for rx in [&mut a, &mut b] {
            let got = rx.recv().await.unwrap();
            assert_eq!(
                (got.entry_id.as_str(), got.instance_id.as_str()),
                ("fs", "inst-1")
            );
            assert_eq!(got.changes, ["+ extra"]);
        }
    }

    #[tokio::test]
    async fn a_report_nobody_listened_to_is_not_delivered_later() {
        let sink = ToolSetSink::default();
        let reporter = sink.reporter("fs", "i");
        reporter.report("before", Vec::new(), None);
        let mut rx = sink.subscribe();
        reporter.report("after", Vec::new(), None);
        assert_eq!(rx.recv().await.unwrap().reason, "after");
        assert!(rx.try_recv().is_err());
    }
}
