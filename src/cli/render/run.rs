//! `run` output: the answer on stdout and a summary on stderr, or one JSON
//! document (what came from outside in it redacted once more).

use std::fmt::Write as _;

use crate::app::candidates::Outcome;
use crate::app::run::RunOutcome;
use crate::engine::budget::BudgetDimension;
use crate::engine::secret::Redactor;
use crate::runtime::agent::StopReason;

use super::super::ui::{Format, Ui};

/// Show a finished run (`streamed`: its answer was printed as it was
/// generated, so only the summary is left).
pub fn show(ui: &Ui, run: &RunOutcome, redactor: &Redactor, streamed: bool) {
    if ui.format == Format::Json {
        ui.out_json(&run.document(redactor));
        return;
    }
    let result = &run.result;
    if let Some(answer) = result.answer.as_ref().filter(|_| !streamed) {
        ui.out(answer.trim_end());
    }
    if ui.quiet && result.stop == StopReason::Answered {
        return;
    }
    ui.err(redactor.redact(summary(run).trim_end()).as_ref());
}

/// The summary on stderr: how it stopped, generation, run, digest, budget,
/// request tools and candidates.
fn summary(run: &RunOutcome) -> String {
    let result = &run.result;
    let mut text = String::new();
    if result.stop != StopReason::Answered {
        let _ = writeln!(
            text,
            "error: agent `{}`: {}",
            result.agent,
            result.stop.describe()
        );
    }
    let refused = result
        .tool_calls
        .iter()
        .filter(|c| c.status == "refused")
        .count();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let _ = write!(
        text,
        "\n{} in {:.2}s · {} step{} · {} tool call{}{}\n  generation       {}\n  run              {}\n  snapshot_digest  {}\n",
        result.stop.kind(),
        result.duration_seconds,
        result.steps,
        plural(result.steps as usize),
        result.tool_calls.len(),
        plural(result.tool_calls.len()),
        if refused > 0 {
            format!(" ({refused} refused)")
        } else {
            String::new()
        },
        result.generation_id,
        result.run_id,
        result.snapshot_digest,
    );
    if let Some(session) = &run.session {
        let _ = if session.saved {
            writeln!(
                text,
                "  session          {} (turn {})",
                session.id, session.turn
            )
        } else {
            writeln!(
                text,
                "  session          {} (this turn is not saved)",
                session.id
            )
        };
    }
    if let Some(b) = &result.budget {
        let parts: Vec<String> = b
            .dimensions
            .iter()
            .filter(|d| d.used > 0.0 || d.limit.is_some())
            .filter(|d| d.dimension != BudgetDimension::WallClockSeconds || d.limit.is_some())
            .map(|d| match d.limit {
                Some(l) => format!(
                    "{} {}/{}",
                    d.dimension.as_str(),
                    super::amount(d.used),
                    super::amount(l)
                ),
                None => format!("{} {}", d.dimension.as_str(), super::amount(d.used)),
            })
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(text, "  budget           {}", parts.join(", "));
        }
    }
    if !run.request_tools.is_empty() {
        let _ = writeln!(
            text,
            "  request tools    {} (this run's own candidate of {})",
            run.request_tools.join(", "),
            result.generation_id
        );
    }
    for c in &run.candidates {
        let _ = match &c.outcome {
            Outcome::Published { generation, .. } => writeln!(
                text,
                "  candidate        {} (entry `{}`'s tools changed)",
                generation.id, c.entry
            ),
            Outcome::Refused(why) => writeln!(text, "  candidate        refused: {why}"),
        };
    }
    text
}
