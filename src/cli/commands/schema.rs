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
    #[arg(long, value_name = "DIR", conflicts_with = "kind")]
    pub write: Option<PathBuf>,
    /// Print the `config` schema of one built-in plugin kind instead
    /// (`scripted`, `command`, …).
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
}

/// Run `schema`.
pub fn run(ui: &Ui, args: &SchemaArgs) -> Result<ExitStatus, ExitStatus> {
    if let Some(name) = &args.kind {
        let Some(kind) = crate::engine::builtin::find(name) else {
            let known: Vec<&str> = crate::engine::builtin::kinds()
                .iter()
                .map(|k| k.name)
                .collect();
            ui.err(&format!(
                "error: `{name}` is not a built-in plugin kind; built-in kinds: {}",
                known.join(", ")
            ));
            return Err(ExitStatus::Input);
        };
        let mut text = serde_json::to_string_pretty(&(kind.config_schema)())
            .unwrap_or_else(|_| "{}".to_owned());
        text.push('\n');
        ui.out(&text);
        return Ok(ExitStatus::Success);
    }
    match &args.write {
        None => ui.out(&crate::load::composition_schema_text()),
        Some(dir) => match crate::load::write_schema(dir) {
            Ok(path) => ui.info(&format!("wrote {}", path.display())),
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
