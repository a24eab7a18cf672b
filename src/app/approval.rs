//! The approval gate of a run: tools approved up front (`--approve TOOL`,
//! `--yes`), answers remembered for the run, and otherwise a person asked
//! through the caller's [`Prompter`] (a terminal, later an HTTP client).
//! Every decision is a `policy.decision` signal.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use crate::engine::policy::{ApprovalDecision, ApprovalGate, ApprovalRequest};
use crate::engine::telemetry::{AttrValue, Telemetry, attributes};

/// A person's answer to one approval request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Approve this call.
    Once,
    /// Approve this call and every later call of the tool in this run.
    Always,
    /// Refuse it.
    No,
    /// Nobody answered (end of input).
    NoAnswer,
}

/// Where a person is asked about a call.
pub trait Prompter: Send + Sync {
    /// Ask about `request`; `Err(reason)` when nobody can be asked (the
    /// call is refused with that reason, which says how to approve it).
    fn ask(&self, request: &ApprovalRequest) -> Result<Answer, String>;
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

    fn decide_inner(&self, request: &ApprovalRequest) -> ApprovalDecision {
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
        match self.prompter.ask(request) {
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
        }
    }
}

impl ApprovalGate for Approvals {
    fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        let decision = self.decide_inner(request);
        self.signal(request, &decision);
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::telemetry::RecordingTelemetry;

    struct Scripted(Option<&'static str>, bool);
    impl Prompter for Scripted {
        fn ask(&self, r: &ApprovalRequest) -> Result<Answer, String> {
            if !self.1 {
                return Err(format!("nobody to ask; pass `--approve {}`", r.tool));
            }
            Ok(match self.0.map(str::trim) {
                Some("y") => Answer::Once,
                Some("always") => Answer::Always,
                Some(_) => Answer::No,
                None => Answer::NoAnswer,
            })
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
        let d = gate(None, false, &[], false).decide(&request("rm"));
        assert!(!d.approved);
        assert!(d.reason.contains("--approve rm"), "{}", d.reason);
        assert!(
            gate(None, false, &["rm"], false)
                .decide(&request("rm"))
                .approved
        );
        assert!(
            !gate(None, false, &["ls"], false)
                .decide(&request("rm"))
                .approved
        );
        assert!(gate(None, false, &[], true).decide(&request("rm")).approved);
    }

    #[test]
    fn at_a_terminal_the_answer_decides() {
        assert!(
            gate(Some("y\n"), true, &[], false)
                .decide(&request("rm"))
                .approved
        );
        assert!(
            !gate(Some("\n"), true, &[], false)
                .decide(&request("rm"))
                .approved
        );
        assert!(!gate(None, true, &[], false).decide(&request("rm")).approved);
        let g = gate(Some("always\n"), true, &[], false);
        assert!(g.decide(&request("rm")).approved);
        assert!(g.remembered.lock().unwrap().contains("rm"));
    }
}
