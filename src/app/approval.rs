//! The approval gate of a run: tools approved up front (`--approve TOOL`,
//! `--yes`), answers remembered for the run, and otherwise a person asked
//! through the caller's [`Prompter`] (a terminal for `chassis run`, an HTTP
//! client for `chassis serve`). Every decision is a `policy.decision`
//! signal.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use crate::engine::policy::{ApprovalDecision, ApprovalGate, ApprovalRequest, Deciding};
use crate::engine::telemetry::{AttrValue, Telemetry, attributes};

/// A person's answer to one approval request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Approve this call.
    Once,
    /// Approve this call and every later call of the tool in this run.
    Always,
    /// Refuse it.
    No,
    /// Nobody answered (end of input).
    NoAnswer,
    /// A decision with its own reason (a client of `chassis serve`).
    Given {
        /// Whether the call runs.
        approved: bool,
        /// Why, in words (what the model is told of a refusal).
        reason: String,
    },
}

/// An answer on its way (`Err(reason)`: nobody can be asked).
pub type Asking<'a> = Pin<Box<dyn Future<Output = Result<Answer, String>> + Send + 'a>>;

/// Where a person is asked about a call.
pub trait Prompter: Send + Sync {
    /// Ask about `request` and wait for the answer; `Err(reason)` when
    /// nobody can be asked (the call is refused with that reason, which
    /// says how to approve it).
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> Asking<'a>;
}

/// The gate.
pub struct Approvals {
    approved: BTreeSet<String>,
    yes: bool,
    prompter: Arc<dyn Prompter>,
    telemetry: Arc<dyn Telemetry>,
    /// Tools approved "always" at a prompt during this run.
    remembered: Mutex<BTreeSet<String>>,
}

impl Approvals {
    /// A gate approving `approved` tools (or all with `yes`), asking
    /// `prompter` otherwise.
    pub fn new(
        approved: impl IntoIterator<Item = String>,
        yes: bool,
        prompter: Arc<dyn Prompter>,
        telemetry: Arc<dyn Telemetry>,
    ) -> Self {
        Self {
            approved: approved.into_iter().collect(),
            yes,
            prompter,
            telemetry,
            remembered: Mutex::new(BTreeSet::new()),
        }
    }

    fn signal(&self, request: &ApprovalRequest, decision: &ApprovalDecision) {
        let permissions: Vec<String> = request
            .permissions
            .iter()
            .map(ToString::to_string)
            .collect();
        let _ = self.telemetry.event(
            "policy.decision",
            &attributes([
                ("tool", AttrValue::from(request.tool.clone())),
                ("allowed", AttrValue::from(decision.approved)),
                ("permissions", AttrValue::from(permissions)),
                ("reason", AttrValue::from(decision.reason.clone())),
            ]),
        );
    }

    async fn decide_inner(&self, request: &ApprovalRequest) -> ApprovalDecision {
        let tool = &request.tool;
        if self.yes {
            return ApprovalDecision::approve("approved by --yes");
        }
        if self.approved.contains(tool) {
            return ApprovalDecision::approve(format!("approved by --approve {tool}"));
        }
        if self
            .remembered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(tool)
        {
            return ApprovalDecision::approve("approved at the prompt for this run");
        }
        match self.prompter.ask(request).await {
            Err(reason) => ApprovalDecision::deny(reason),
            Ok(Answer::Once) => ApprovalDecision::approve("approved at the prompt"),
            Ok(Answer::Always) => {
                self.remembered
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(tool.clone());
                ApprovalDecision::approve("approved at the prompt for this run")
            }
            Ok(Answer::No) => ApprovalDecision::deny("refused at the prompt"),
            Ok(Answer::NoAnswer) => {
                ApprovalDecision::deny("no answer at the prompt (end of input)")
            }
            Ok(Answer::Given { approved, reason }) => ApprovalDecision { approved, reason },
        }
    }
}

impl ApprovalGate for Approvals {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> Deciding<'a> {
        Box::pin(async move {
            let decision = self.decide_inner(request).await;
            self.signal(request, &decision);
            decision
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::telemetry::RecordingTelemetry;
    use futures_util::FutureExt;

    struct Scripted(Option<&'static str>, bool);
    impl Prompter for Scripted {
        fn ask<'a>(&'a self, r: &'a ApprovalRequest) -> Asking<'a> {
            Box::pin(std::future::ready(if self.1 {
                Ok(match self.0.map(str::trim) {
                    Some("y") => Answer::Once,
                    Some("always") => Answer::Always,
                    Some(_) => Answer::No,
                    None => Answer::NoAnswer,
                })
            } else {
                Err(format!("nobody to ask; pass `--approve {}`", r.tool))
            }))
        }
    }

    impl Approvals {
        /// The decision of a prompter that answers at once.
        fn decided(&self, request: &ApprovalRequest) -> ApprovalDecision {
            self.decide(request)
                .now_or_never()
                .expect("answered at once")
        }
    }

    fn request(tool: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool: tool.into(),
            permissions: Vec::new(),
            arguments_redacted: serde_json::json!({}),
        }
    }

    fn gate(answer: Option<&'static str>, tty: bool, approve: &[&str], yes: bool) -> Approvals {
        Approvals::new(
            approve.iter().map(|s| (*s).to_owned()),
            yes,
            Arc::new(Scripted(answer, tty)),
            Arc::new(RecordingTelemetry::strict()),
        )
    }

    #[test]
    fn without_a_terminal_only_flags_approve() {
        let d = gate(None, false, &[], false).decided(&request("rm"));
        assert!(!d.approved);
        assert!(d.reason.contains("--approve rm"), "{}", d.reason);
        assert!(
            gate(None, false, &["rm"], false)
                .decided(&request("rm"))
                .approved
        );
        assert!(
            !gate(None, false, &["ls"], false)
                .decided(&request("rm"))
                .approved
        );
        assert!(
            gate(None, false, &[], true)
                .decided(&request("rm"))
                .approved
        );
    }

    #[test]
    fn at_a_terminal_the_answer_decides() {
        assert!(
            gate(Some("y\n"), true, &[], false)
                .decided(&request("rm"))
                .approved
        );
        assert!(
            !gate(Some("\n"), true, &[], false)
                .decided(&request("rm"))
                .approved
        );
        assert!(
            !gate(None, true, &[], false)
                .decided(&request("rm"))
                .approved
        );
        let g = gate(Some("always\n"), true, &[], false);
        assert!(g.decided(&request("rm")).approved);
        assert!(g.remembered.lock().unwrap().contains("rm"));
    }
}
