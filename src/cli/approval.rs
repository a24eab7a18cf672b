//! The approval gate of `chassis run`: `--approve TOOL`, `--yes`, or a
//! prompt on the terminal; without a terminal, a refusal that says how to
//! approve. Every decision is a `policy.decision` signal.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex};

use crate::engine::policy::{ApprovalDecision, ApprovalGate, ApprovalRequest};
use crate::engine::telemetry::{AttrValue, Telemetry, attributes};

/// Where a prompt is asked and answered.
pub trait Prompter: Send + Sync {
    /// Whether a person can answer.
    fn interactive(&self) -> bool;
    /// Ask `question`; the answer line, or `None` on end of input.
    fn ask(&self, question: &str) -> Option<String>;
}

/// The process's terminal (stdin and stderr).
#[derive(Debug, Default)]
pub struct Terminal;

impl Prompter for Terminal {
    fn interactive(&self) -> bool {
        std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
    }

    fn ask(&self, question: &str) -> Option<String> {
        let _quiet_spinner = super::spinner::pause();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{question}");
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    }
}

/// The gate.
pub struct CliApprovals {
    approved: BTreeSet<String>,
    yes: bool,
    prompter: Arc<dyn Prompter>,
    telemetry: Arc<dyn Telemetry>,
    /// Tools approved "always" at a prompt during this run.
    remembered: Mutex<BTreeSet<String>>,
}

impl CliApprovals {
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
        if !self.prompter.interactive() {
            return ApprovalDecision::deny(format!(
                "there is no terminal to ask; pass `--approve {tool}` or `--yes`"
            ));
        }
        let args = serde_json::to_string(&request.arguments_redacted).unwrap_or_default();
        let question = format!(
            "\napprove tool `{tool}` with arguments {args}?\n  [y]es / [a]lways for this run / [N]o: "
        );
        match self
            .prompter
            .ask(&question)
            .map(|a| a.trim().to_ascii_lowercase())
            .as_deref()
        {
            Some("y" | "yes") => ApprovalDecision::approve("approved at the prompt"),
            Some("a" | "always") => {
                self.remembered
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(tool.clone());
                ApprovalDecision::approve("approved at the prompt for this run")
            }
            Some(_) => ApprovalDecision::deny("refused at the prompt"),
            None => ApprovalDecision::deny("no answer at the prompt (end of input)"),
        }
    }
}

impl ApprovalGate for CliApprovals {
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
        fn interactive(&self) -> bool {
            self.1
        }
        fn ask(&self, _q: &str) -> Option<String> {
            self.0.map(str::to_owned)
        }
    }

    fn request(tool: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool: tool.into(),
            permissions: Vec::new(),
            arguments_redacted: serde_json::json!({}),
        }
    }

    fn gate(answer: Option<&'static str>, tty: bool, approve: &[&str], yes: bool) -> CliApprovals {
        CliApprovals::new(
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
