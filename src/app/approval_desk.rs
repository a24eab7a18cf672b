//! Approvals answered from outside a run. A served run whose tool call
//! needs a person pauses, tells its client (an `approval_requested` event,
//! or a `202` with the run to poll), and waits until a client answers —
//! that call, or every call of the tool in this run — or the deadline
//! refuses it.
//!
//! Why a desk: the question is asked inside the run's executor, the answer
//! arrives on another request. The desk holds every open question of a
//! host by run; a run's [`DeskPrompter`] puts questions on it and waits, and
//! [`ApprovalDesk::answer`] hands the answers over.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use super::approval::{Answer, Asking, Prompter};
use crate::engine::policy::ApprovalRequest;
use crate::store::now_rfc3339;

/// How long a question waits when `[serve] approval_timeout_seconds` is
/// not set.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// A question a run waits on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PendingApproval {
    /// `apr_<12 hex>`: what an answer names.
    pub approval_id: String,
    /// The run that waits.
    pub run_id: String,
    /// The tool the call is for.
    pub tool: String,
    /// The permissions the call needs.
    pub permissions: Vec<String>,
    /// The call's arguments, secrets redacted.
    pub arguments: serde_json::Value,
    /// When it was asked (RFC 3339).
    pub requested_at: String,
    /// Seconds it waits before it is refused.
    pub timeout_seconds: u64,
}

/// A client's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The call runs.
    Approve,
    /// The call is refused; the model is told why.
    Deny,
}

/// What an answer is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One waiting call.
    Call(String),
    /// Every call of this tool in the run: those waiting and those to come.
    Tool(String),
}

/// One call an answer decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decided {
    /// The question it answered.
    pub approval_id: String,
    /// Its tool.
    pub tool: String,
    /// The answer.
    pub decision: Verdict,
}

/// Why an answer found nothing to answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeskError {
    /// The run is not waiting here (unknown, or finished).
    NotOpen,
    /// The run has no waiting question of that id.
    UnknownApproval,
}

struct Waiting {
    pending: PendingApproval,
    answer: oneshot::Sender<Answer>,
}

/// A rule for every later call of a tool in one run.
#[derive(Clone, Debug)]
struct Rule {
    verdict: Verdict,
    reason: Option<String>,
}

#[derive(Default)]
struct RunQuestions {
    waiting: BTreeMap<String, Waiting>,
    rules: BTreeMap<String, Rule>,
}

/// Every open question of a host's runs.
pub struct ApprovalDesk {
    runs: Mutex<BTreeMap<String, RunQuestions>>,
    timeout: Duration,
    /// A question leaves scrubbed: a permission built from an argument
    /// (`filesystem.read:{/path}`) may carry a secret the arguments had.
    redactor: crate::engine::secret::Redactor,
}

/// Told of each question as it is asked (the SSE stream, the `202`).
pub type OnQuestion = Arc<dyn Fn(&PendingApproval) + Send + Sync>;

impl ApprovalDesk {
    /// A desk whose questions wait `timeout` before they are refused, and
    /// leave redacted by `redactor`.
    pub fn new(timeout: Duration, redactor: crate::engine::secret::Redactor) -> Self {
        Self {
            runs: Mutex::default(),
            timeout,
            redactor,
        }
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, RunQuestions>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Open run `run_id` for questions; the prompter asks on it until
    /// [`Self::close`].
    pub fn open(self: &Arc<Self>, run_id: &str, on_question: Option<OnQuestion>) -> DeskPrompter {
        self.runs()
            .insert(run_id.to_owned(), RunQuestions::default());
        DeskPrompter {
            desk: Arc::clone(self),
            run_id: run_id.to_owned(),
            on_question,
        }
    }

    /// The run ended: forget its rules (a question still waiting, there is
    /// none once the run has ended, would be refused).
    pub fn close(&self, run_id: &str) {
        self.runs().remove(run_id);
    }

    /// The questions run `run_id` waits on, oldest first; `None` when the
    /// run is not open here.
    pub fn pending(&self, run_id: &str) -> Option<Vec<PendingApproval>> {
        let runs = self.runs();
        let questions = runs.get(run_id)?;
        let mut pending: Vec<PendingApproval> = questions
            .waiting
            .values()
            .map(|w| w.pending.clone())
            .collect();
        pending.sort_by(|a, b| {
            (&a.requested_at, &a.approval_id).cmp(&(&b.requested_at, &b.approval_id))
        });
        Some(pending)
    }

    /// Answer `target` of run `run_id`. A tool answer also decides every
    /// later call of that tool in the run. `reason` is what the model is
    /// told of a refusal.
    pub fn answer(
        &self,
        run_id: &str,
        target: &Target,
        verdict: Verdict,
        reason: Option<String>,
    ) -> Result<Vec<Decided>, DeskError> {
        let mut runs = self.runs();
        let questions = runs.get_mut(run_id).ok_or(DeskError::NotOpen)?;
        let ids: Vec<String> = match target {
            Target::Call(id) => {
                if !questions.waiting.contains_key(id) {
                    return Err(DeskError::UnknownApproval);
                }
                vec![id.clone()]
            }
            Target::Tool(tool) => {
                questions.rules.insert(
                    tool.clone(),
                    Rule {
                        verdict,
                        reason: reason.clone(),
                    },
                );
                questions
                    .waiting
                    .iter()
                    .filter(|(_, w)| &w.pending.tool == tool)
                    .map(|(id, _)| id.clone())
                    .collect()
            }
        };
        let mut decided = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(waiting) = questions.waiting.remove(&id) else {
                continue;
            };
            let whole = matches!(target, Target::Tool(_));
            // A wait that ended meanwhile (its deadline) no longer
            // listens: that call was refused, and is not reported decided.
            if waiting
                .answer
                .send(answer_of(verdict, reason.clone(), whole))
                .is_err()
            {
                continue;
            }
            decided.push(Decided {
                approval_id: id,
                tool: waiting.pending.tool,
                decision: verdict,
            });
        }
        Ok(decided)
    }
}

fn answer_of(verdict: Verdict, reason: Option<String>, whole_tool: bool) -> Answer {
    let by = if whole_tool {
        "by a client for every call of the tool in this run"
    } else {
        "by a client"
    };
    match (verdict, reason) {
        (Verdict::Approve, _) => Answer::Given {
            approved: true,
            reason: format!("approved {by}"),
        },
        (Verdict::Deny, None) => Answer::Given {
            approved: false,
            reason: format!("refused {by}"),
        },
        (Verdict::Deny, Some(why)) => Answer::Given {
            approved: false,
            reason: format!("refused {by}: {why}"),
        },
    }
}

/// The prompter of one served run: asks on the desk, waits for a client.
pub struct DeskPrompter {
    desk: Arc<ApprovalDesk>,
    run_id: String,
    on_question: Option<OnQuestion>,
}

/// Takes a question off the desk when its wait ends, however it ends (an
/// answer, the deadline, the run cancelled).
struct Withdraw<'d> {
    desk: &'d ApprovalDesk,
    run_id: &'d str,
    approval_id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if let Some(q) = self.desk.runs().get_mut(self.run_id) {
            q.waiting.remove(&self.approval_id);
        }
    }
}

impl DeskPrompter {
    async fn ask_desk(&self, request: &ApprovalRequest) -> Result<Answer, String> {
        let desk = &*self.desk;
        let timeout = desk.timeout;
        let approval_id = crate::runtime::agent::new_run_id().replacen("run_", "apr_", 1);
        let pending = PendingApproval {
            approval_id: approval_id.clone(),
            run_id: self.run_id.clone(),
            tool: request.tool.clone(),
            permissions: request
                .permissions
                .iter()
                .map(|p| desk.redactor.redact(&p.to_string()).into_owned())
                .collect(),
            arguments: desk.redactor.redact_json(&request.arguments_redacted),
            requested_at: now_rfc3339(),
            timeout_seconds: timeout.as_secs(),
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut runs = desk.runs();
            let Some(questions) = runs.get_mut(&self.run_id) else {
                return Err("the run is no longer open for approvals".into());
            };
            if let Some(rule) = questions.rules.get(&request.tool) {
                return Ok(answer_of(rule.verdict, rule.reason.clone(), true));
            }
            questions.waiting.insert(
                approval_id.clone(),
                Waiting {
                    pending: pending.clone(),
                    answer: tx,
                },
            );
        }
        let _withdraw = Withdraw {
            desk,
            run_id: &self.run_id,
            approval_id,
        };
        if let Some(tell) = &self.on_question {
            tell(&pending);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err("the run stopped waiting for approvals".into()),
            Err(_) => Err(format!(
                "nobody answered within {} s (`[serve] approval_timeout_seconds`); answer at `POST /v1/runs/{}/approvals`, or start the server with `--approve {}`",
                timeout.as_secs(),
                self.run_id,
                request.tool
            )),
        }
    }
}

impl Prompter for DeskPrompter {
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> Asking<'a> {
        Box::pin(self.ask_desk(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(tool: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool: tool.into(),
            permissions: Vec::new(),
            arguments_redacted: serde_json::json!({"path": "a"}),
        }
    }

    fn given(a: Result<Answer, String>) -> (bool, String) {
        match a {
            Ok(Answer::Given { approved, reason }) => (approved, reason),
            other => panic!("not a client's answer: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_call_waits_for_its_answer_and_leaves_the_desk() {
        let desk = Arc::new(ApprovalDesk::new(
            Duration::from_secs(5),
            crate::engine::secret::Redactor::new(),
        ));
        let (told_tx, mut told) = tokio::sync::mpsc::unbounded_channel();
        let prompter = desk.open(
            "run_1",
            Some(Arc::new(move |p: &PendingApproval| {
                let _ = told_tx.send(p.clone());
            })),
        );
        let asked = tokio::spawn(async move { prompter.ask(&request("rm")).await });
        let question = told.recv().await.unwrap();
        assert_eq!(question.tool, "rm");
        assert!(question.approval_id.starts_with("apr_"));
        assert_eq!(desk.pending("run_1").unwrap(), vec![question.clone()]);
        assert_eq!(
            desk.answer(
                "run_1",
                &Target::Call("apr_nope".into()),
                Verdict::Approve,
                None
            ),
            Err(DeskError::UnknownApproval)
        );
        let decided = desk
            .answer(
                "run_1",
                &Target::Call(question.approval_id.clone()),
                Verdict::Deny,
                Some("use the staging path".into()),
            )
            .unwrap();
        assert_eq!(decided.len(), 1);
        let (approved, reason) = given(asked.await.unwrap());
        assert!(!approved);
        assert!(reason.contains("use the staging path"), "{reason}");
        assert_eq!(desk.pending("run_1").unwrap(), vec![]);
        desk.close("run_1");
        assert_eq!(desk.pending("run_1"), None);
        assert_eq!(
            desk.answer("run_1", &Target::Tool("rm".into()), Verdict::Approve, None),
            Err(DeskError::NotOpen)
        );
    }

    #[tokio::test]
    async fn a_tool_answer_decides_waiting_and_later_calls() {
        let desk = Arc::new(ApprovalDesk::new(
            Duration::from_secs(5),
            crate::engine::secret::Redactor::new(),
        ));
        let prompter = Arc::new(desk.open("run_2", None));
        let p = Arc::clone(&prompter);
        let first = tokio::spawn(async move { p.ask(&request("rm")).await });
        while desk.pending("run_2").unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let decided = desk
            .answer("run_2", &Target::Tool("rm".into()), Verdict::Approve, None)
            .unwrap();
        assert_eq!(decided[0].tool, "rm");
        assert!(given(first.await.unwrap()).0);
        // A later call of the tool is answered by the rule, at once.
        let (approved, reason) = given(prompter.ask(&request("rm")).await);
        assert!(approved);
        assert!(reason.contains("every call"), "{reason}");
        // Nothing else waits.
        assert!(desk.pending("run_2").unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn nobody_answering_refuses_at_the_deadline() {
        let desk = Arc::new(ApprovalDesk::new(
            Duration::from_secs(2),
            crate::engine::secret::Redactor::new(),
        ));
        let prompter = desk.open("run_3", None);
        let refused = prompter.ask(&request("rm")).await.unwrap_err();
        assert!(refused.contains("within 2 s"), "{refused}");
        assert!(refused.contains("--approve rm"), "{refused}");
        assert_eq!(desk.pending("run_3").unwrap(), vec![]);
    }

    #[tokio::test]
    async fn a_question_leaves_without_a_secret_in_its_permissions() {
        use crate::engine::policy::Permission;
        let redactor = crate::engine::secret::Redactor::new();
        redactor.learn(&crate::engine::secret::SecretValue::new(
            "sk-perm-canary-41".to_owned(),
        ));
        let desk = Arc::new(ApprovalDesk::new(Duration::from_secs(5), redactor));
        let (told_tx, mut told) = tokio::sync::mpsc::unbounded_channel();
        let prompter = desk.open(
            "run_5",
            Some(Arc::new(move |p: &PendingApproval| {
                let _ = told_tx.send(p.clone());
            })),
        );
        let request = ApprovalRequest {
            tool: "fetch".into(),
            permissions: vec![Permission::parse("network.fetch:/sk-perm-canary-41").unwrap()],
            arguments_redacted: serde_json::json!({"key": "sk-perm-canary-41"}),
        };
        let asked = tokio::spawn(async move { prompter.ask(&request).await });
        let question = told.recv().await.unwrap();
        let shown = serde_json::to_string(&question).unwrap();
        assert!(!shown.contains("sk-perm-canary-41"), "{shown}");
        assert!(shown.contains("network.fetch"), "{shown}");
        desk.answer("run_5", &Target::Tool("fetch".into()), Verdict::Deny, None)
            .unwrap();
        assert!(!given(asked.await.unwrap()).0);
    }

    #[tokio::test]
    async fn a_cancelled_wait_withdraws_its_question() {
        let desk = Arc::new(ApprovalDesk::new(
            Duration::from_secs(60),
            crate::engine::secret::Redactor::new(),
        ));
        let prompter = desk.open("run_4", None);
        let r = request("rm");
        let wait = prompter.ask(&r);
        let cut = tokio::time::timeout(Duration::from_millis(20), wait).await;
        assert!(cut.is_err());
        assert_eq!(desk.pending("run_4").unwrap(), vec![]);
    }
}
