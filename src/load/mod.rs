//! Loading compositions from TOML.
//!
//! [`load`] reads a root file and its includes through a [`Source`]
//! (file system, git revision or memory), walks the spanned TOML trees with
//! hand-written readers that collect every problem of every file, checks the
//! references between tables, and returns the [`Composition`] (when there
//! was no error), every [`Diagnostic`], and the [`SourceMap`] the
//! diagnostics' origins point into.
//!
//! Nothing here prints; `cli::diagnostic` renders diagnostics with miette,
//! always through [`SourceMap::display_text`] so secret-looking values never
//! reach a terminal.

mod agent;
mod builtin;
mod git;
mod includes;
mod link;
mod lock_pins;
mod mask;
mod pieces;
mod plugin;
mod policy;
mod reader;
pub mod recording;
pub mod schema;
mod source;
mod source_map;
mod values;
mod walk;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_more;
#[cfg(test)]
mod tests_pieces;

use std::path::Path;

pub use agent::AGENT_KEYS;
pub use git::GitSource;
pub use mask::mask_secrets;
pub use plugin::{PLUGIN_KEYS, TOOL_KEYS};
pub use policy::{POLICY_KEYS, TOOL_POLICY_KEYS};
pub use schema::{composition_schema, composition_schema_text, write_schema};
pub use source::{
    FsSource, MemorySource, Source, SourceError, SourceErrorKind, normalize, parse_rev_path,
};
pub use source_map::SourceMap;
pub use walk::{ENTRY_KEYS, ROOT_KEYS, SCOPE_KEYS, SUPPORTED_VERSIONS, TABLE_KEYS};

use crate::engine::diag::Diagnostic;
use crate::engine::model::Composition;

/// Give the `mcp` entries of a loaded `composition` the tools of `lock`
/// (what the loader does with `chassis.lock`; `chassis tools --live` uses
/// it with what the servers offer now). Findings are dropped: the loader
/// already reported them.
pub fn apply_lock(composition: &mut Composition, lock: Option<&crate::lock::Lock>) {
    lock_pins::apply(composition, lock, &mut Vec::new());
}

/// The result of loading a composition.
#[derive(Debug)]
pub struct Loaded {
    /// The composition; `None` when any error was found (warnings do not
    /// prevent it).
    pub composition: Option<Composition>,
    /// Every problem found, sorted by (source, position, code).
    pub diagnostics: Vec<Diagnostic>,
    /// The texts the diagnostics point into.
    pub sources: SourceMap,
}

impl Loaded {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Whether a configuration key looks like it holds a secret (the wide
/// display rule shared with redaction).
pub(crate) fn is_sensitive_key(key: &str) -> bool {
    crate::engine::redact::is_sensitive_key(key)
}

/// Load the composition whose root file is `root`, with its includes.
pub fn load(source: &dyn Source, root: &Path) -> Loaded {
    load_in_pieces(source, root, includes::Pieces::default())
}

/// [`load`], cutting large files as `pieces` says ([`pieces`]).
fn load_in_pieces(source: &dyn Source, root: &Path, pieces: includes::Pieces) -> Loaded {
    let mut reader = includes::Reader::new(source);
    reader.pieces = pieces;
    reader.read(root, None);
    // References are checked only against every file whole: what they name
    // may be in a part that did not parse or an include that was not read.
    let check_refs = !reader.syntax_errors && !reader.unread;
    let mut diagnostics = std::mem::take(&mut reader.diags);
    // No lock is looked for when the root file itself could not be read.
    let lock = if reader.sources.is_empty() {
        None
    } else {
        lock_pins::read(source, root).unwrap_or_else(|d| {
            diagnostics.push(d);
            None
        })
    };
    let composition = link::link(
        std::mem::take(&mut reader.files),
        &mut diagnostics,
        check_refs,
        lock.as_ref(),
    );
    sort_diagnostics(&mut diagnostics);
    let failed = diagnostics.iter().any(Diagnostic::is_error) || reader.sources.is_empty();
    Loaded {
        composition: (!failed).then_some(composition),
        diagnostics,
        sources: reader.sources,
    }
}

/// Load a single composition text named `name` (includes resolve against an
/// empty in-memory source, so they are reported missing).
pub fn load_str(name: &str, text: &str) -> Loaded {
    let source = MemorySource::new().with(name, text);
    load(&source, Path::new(name))
}

/// Sort diagnostics by (source id, span start, code) of their primary label;
/// diagnostics without a label come first, and the "… N more suppressed"
/// lines last. The sort is stable.
pub fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by_key(|d| {
        let label = d.labels.iter().find(|l| l.primary).or(d.labels.first());
        (
            d.code == crate::engine::diag::Code::Suppressed,
            label.map(|l| (l.origin.source, l.origin.span.start)),
            d.code,
        )
    });
}
