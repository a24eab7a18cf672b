//! Progress of `chassis run` on stderr: one plain line per model call and
//! tool call, with timings, that a person can follow and a log keeps. On a
//! terminal a spinner ([`super::spinner`]) shows what is being waited on
//! between the lines; the lines themselves are the same everywhere. Under
//! `--format json` every step event is one JSON object instead
//! (`{"type": "progress", "event": "tool_call_finished", …}`), beside the
//! diagnostics' `{"type": "diagnostic", …}` lines, so a machine reads all
//! of stderr alike.

use crate::runtime::agent::{AgentEvent, AgentObserver};

/// Writes step events to stderr, as lines or as JSON objects.
#[derive(Debug, Default)]
pub struct Progress {
    json: bool,
    /// Start the spinner when the run starts (stderr is a terminal).
    spinner: bool,
}

impl Progress {
    /// Lines for a person.
    pub fn lines() -> Self {
        Self::default()
    }

    /// One JSON object per event (`--format json`).
    pub fn json() -> Self {
        Self {
            json: true,
            spinner: false,
        }
    }

    /// Lines, with the spinner between them when `spinner` (the caller
    /// decides that stderr is a terminal).
    #[must_use]
    pub fn with_spinner(mut self, spinner: bool) -> Self {
        self.spinner = spinner && !self.json;
        self
    }
}

/// `event` as a JSON progress object: the event's own fields (already
/// redacted: arguments and error messages are what the model read) under
/// `"type": "progress"`.
fn event_json(event: &AgentEvent) -> serde_json::Value {
    let mut value = serde_json::to_value(event).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.insert("type".into(), "progress".into());
    }
    value
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth + 1)
}

fn args_text(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        let cut: String = s.chars().take(77).collect();
        format!("{cut}...")
    } else {
        s
    }
}

impl AgentObserver for Progress {
    fn on_event(&self, event: &AgentEvent) {
        if self.json {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr().lock(), "{}", event_json(event));
            return;
        }
        let line = match event {
            AgentEvent::RunStarted {
                agent,
                generation_id,
                depth,
                ..
            } => {
                if *depth == 0 {
                    if self.spinner {
                        super::spinner::start();
                    }
                    format!("running agent `{agent}` on {generation_id}")
                } else {
                    format!("{}sub-agent `{agent}` started", indent(*depth - 1))
                }
            }
            // The answer's text goes to stdout, not to the progress.
            AgentEvent::TextDelta { .. } => return,
            AgentEvent::ModelCallStarted { step, model, .. } => {
                super::spinner::waiting(format!("model step {step} ({model})"));
                return;
            }
            AgentEvent::ModelCallFinished {
                step,
                duration_seconds,
                usage,
                finish_reason,
                tool_calls,
                replayed,
                ..
            } => {
                let tokens = usage.map_or_else(String::new, |u| format!(", {} tokens", u.total()));
                let calls = match tool_calls {
                    0 => String::new(),
                    1 => ", 1 tool call".into(),
                    n => format!(", {n} tool calls"),
                };
                format!(
                    "  model  step {step}  {:.3}s{tokens}{calls}{}{}",
                    duration_seconds,
                    finish_reason
                        .as_deref()
                        .map(|f| format!(" ({f})"))
                        .unwrap_or_default(),
                    if *replayed { " [replayed]" } else { "" }
                )
            }
            AgentEvent::ToolCallStarted { name, .. } => {
                super::spinner::waiting(format!("tool {name}"));
                return;
            }
            AgentEvent::ToolCallFinished { record, .. } => {
                let status = match record.refusal {
                    Some(kind) => format!("refused ({kind})"),
                    None => record.status.to_owned(),
                };
                let mut line = format!(
                    "  tool   {}  {status}  {:.3}s{}",
                    record.name,
                    record.duration_seconds,
                    if record.replayed { " [replayed]" } else { "" }
                );
                // A refusal or a failure says why (the model reads the same
                // words): what to pass to allow it, which policy rule, which
                // hook, what the tool said.
                if let Some(why) = &record.error {
                    line.push_str("\n         ");
                    line.push_str(why);
                }
                line
            }
            AgentEvent::RunFinished { stop, depth, .. } => {
                if *depth == 0 {
                    return;
                }
                format!("{}sub-agent {}", indent(*depth - 1), stop.describe())
            }
        };
        super::spinner::clear_then(&line);
    }
}

/// Arguments as shown in progress and prompts (redacted by the caller).
pub fn short_args(v: &serde_json::Value) -> String {
    args_text(v)
}
