//! `snapshot`: the record of a resolved composition with its digests — as
//! the first generation of an empty store, or as a run of one agent stamps
//! it (with the tools its request brings).

use std::path::{Path, PathBuf};

use crate::engine::snapshot::{Digests, EnvelopeView, SnapshotRecord};

use super::env::RunEnv;
use super::error::AppError;
use super::report::{Notice, Reporter};
use super::workspace::{Workspace, load_file};

/// What to snapshot.
#[derive(Clone, Debug)]
pub struct SnapshotOptions {
    /// The composition.
    pub file: PathBuf,
    /// As a run of this agent stamps it.
    pub agent: Option<String>,
    /// With `agent`: a run whose request brings the tools of this file.
    pub request_tools: Option<PathBuf>,
    /// Write the document here.
    pub out: Option<PathBuf>,
}

/// The snapshot document, and where it was written.
pub struct SnapshotOutcome {
    /// The record.
    pub record: SnapshotRecord,
    /// Its digests.
    pub digests: Digests,
    /// The file it was written to (`out`).
    pub written: Option<PathBuf>,
    /// The load it was built from: a one-shot caller may keep it until the
    /// process exits rather than free a 100,000-entry composition entry by
    /// entry.
    pub workspace: Workspace,
}

/// Build the snapshot document (and write it to `out`).
pub fn snapshot(
    options: &SnapshotOptions,
    reporter: &dyn Reporter,
) -> Result<SnapshotOutcome, AppError> {
    let mut ws = load_file(&options.file, &RunEnv::process(), reporter)?;
    if let (Some(path), Some(agent)) = (&options.request_tools, &options.agent) {
        if !ws.composition.agents.contains_key(agent) {
            return Err(ws.unknown_agent(agent));
        }
        let tools = super::request_tools::load_file(path, &RunEnv::process(), reporter)?;
        ws = ws.with_request_tools(agent, &tools.decl())?;
    }
    if !ws.plan.pending.is_empty() {
        reporter.notice(Notice::PendingLeftOut {
            count: ws.plan.pending.len(),
        });
    }
    let record = match &options.agent {
        None => ws.snapshot()?,
        Some(name) => ws.agent_snapshot(name)?,
    };
    let digests = record
        .digests()
        .map_err(|e| AppError::input(e.to_string()))?;
    let outcome = SnapshotOutcome {
        record,
        digests,
        written: options.out.clone(),
        workspace: ws,
    };
    if let Some(out) = &options.out {
        write(out, &outcome.document())?;
    }
    Ok(outcome)
}

impl SnapshotOutcome {
    /// The document `{format_version, snapshot, digests}`, written straight
    /// from the record (a tree of it would be a few hundred megabytes more
    /// at 100,000 entries).
    pub fn document(&self) -> EnvelopeView<'_> {
        EnvelopeView::with_digests(&self.record, self.digests.clone())
    }
}

/// Write `document` to `out` as it is serialized.
fn write(out: &Path, document: &EnvelopeView<'_>) -> Result<(), AppError> {
    use std::io::Write as _;
    let failed = |e: &dyn std::fmt::Display| {
        AppError::failure(format!("cannot write `{}`: {e}", out.display()))
    };
    let file = std::fs::File::create(out).map_err(|e| failed(&e))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
    serde_json::to_writer_pretty(&mut w, document).map_err(|e| failed(&e))?;
    w.write_all(b"\n").map_err(|e| failed(&e))?;
    w.flush().map_err(|e| failed(&e))
}
