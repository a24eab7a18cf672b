//! The telemetry of operations that mount plugins: every signal redacted,
//! to a JSON-lines trace file when asked for (`--trace FILE`), else to the
//! log (visible with `-vv`); hook failures of both planes said to the
//! caller either way, since under the default error policy (and always on
//! the control plane) they fail nothing.

use std::path::Path;
use std::sync::Arc;

use crate::engine::telemetry::{Telemetry, harness_chain};
use crate::trace::{JsonLinesTelemetry, TracingTelemetry, WarnHookFailures};

use super::caller::Caller;
use super::error::AppError;
use super::report::Notice;

/// The telemetry chain for `trace` (unusable input when the file cannot be
/// written, found before a store is created).
pub fn for_operation(
    trace: Option<&Path>,
    caller: &Caller,
) -> Result<Arc<dyn Telemetry>, AppError> {
    let reporter = Arc::clone(&caller.reporter);
    let warn = move |text: &str| reporter.notice(Notice::HookFailed { text });
    let redactor = caller.redactor.clone();
    Ok(match trace {
        Some(path) => {
            let file = JsonLinesTelemetry::create(path).map_err(|e| {
                AppError::input(format!("cannot write the trace `{}`: {e}", path.display()))
            })?;
            Arc::new(harness_chain(WarnHookFailures::new(file, warn), redactor))
        }
        None => Arc::new(harness_chain(
            WarnHookFailures::new(TracingTelemetry::default(), warn),
            redactor,
        )),
    })
}
