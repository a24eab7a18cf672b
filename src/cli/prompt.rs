//! The terminal as the approval prompter of `chassis run`: a question on
//! stderr, the answer from stdin; without a terminal, a refusal that says
//! how to approve up front.

use std::io::{BufRead, IsTerminal, Write};

use crate::app::approval::{Answer, Asking, Prompter};
use crate::engine::policy::ApprovalRequest;

/// The process's terminal (stdin and stderr).
#[derive(Debug, Default)]
pub struct Terminal;

impl Prompter for Terminal {
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> Asking<'a> {
        // The question blocks this worker while the person answers, as a
        // terminal program does; the run has nothing else to do meanwhile.
        Box::pin(std::future::ready(ask_at_the_terminal(request)))
    }
}

fn ask_at_the_terminal(request: &ApprovalRequest) -> Result<Answer, String> {
    let tool = &request.tool;
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(format!(
            "there is no terminal to ask; pass `--approve {tool}` or `--yes`"
        ));
    }
    let args = serde_json::to_string(&request.arguments_redacted).unwrap_or_default();
    let question = format!(
        "\napprove tool `{tool}` with arguments {args}?\n  [y]es / [a]lways for this run / [N]o: "
    );
    let answer = {
        let _quiet_spinner = super::spinner::pause();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{question}");
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    };
    Ok(
        match answer.map(|a| a.trim().to_ascii_lowercase()).as_deref() {
            Some("y" | "yes") => Answer::Once,
            Some("a" | "always") => Answer::Always,
            Some(_) => Answer::No,
            None => Answer::NoAnswer,
        },
    )
}
