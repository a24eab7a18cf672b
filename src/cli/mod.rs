//! The command-line interface (placeholder while the engine lands).

use std::process::ExitCode;

/// Run the CLI.
pub fn main() -> ExitCode {
    ExitCode::SUCCESS
}
