//! `chassis schema`: the JSON Schema of the composition format.

use std::path::PathBuf;

use super::super::exit::ExitStatus;
use super::super::ui::Ui;

/// Print the JSON Schema (draft-07) of compositions.
///
/// Point your editor at it for validation and completion, e.g. with taplo /
/// Even Better TOML: add `#:schema ./schemas/composition.schema.json` as the
/// first line of a composition.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// Write `composition.schema.json` into this directory instead of printing.
    #[arg(long, value_name = "DIR")]
    pub write: Option<PathBuf>,
}

/// Run `schema`.
pub fn run(ui: &Ui, args: &SchemaArgs) -> Result<ExitStatus, ExitStatus> {
    match &args.write {
        None => ui.out(&crate::load::composition_schema_text()),
        Some(dir) => match crate::load::write_schema(dir) {
            Ok(path) => ui.err(&format!("wrote {}", path.display())),
            Err(e) => {
                ui.err(&format!(
                    "error: cannot write the schema into `{}`: {e}",
                    dir.display()
                ));
                return Err(ExitStatus::Failure);
            }
        },
    }
    Ok(ExitStatus::Success)
}
