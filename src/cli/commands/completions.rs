//! `chassis completions`: shell completion scripts.

use std::path::PathBuf;

use clap::CommandFactory;
use clap_complete::Shell;

use super::super::exit::ExitStatus;
use super::super::ui::Ui;

/// Print a completion script for SHELL.
///
/// bash: `chassis completions bash > ~/.local/share/bash-completion/completions/chassis`;
/// zsh: `chassis completions zsh > "${fpath[1]}/_chassis"`;
/// fish: `chassis completions fish > ~/.config/fish/completions/chassis.fish`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
    /// Write the script into this directory (created when missing), named as
    /// clap_complete names it.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The completion script for `shell`.
pub fn script(shell: Shell) -> String {
    let mut cmd = super::super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "chassis", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The file name clap_complete gives `shell`'s script.
pub fn file_name(shell: Shell) -> String {
    match shell {
        Shell::Bash => "chassis.bash".into(),
        Shell::Zsh => "_chassis".into(),
        Shell::Fish => "chassis.fish".into(),
        Shell::PowerShell => "_chassis.ps1".into(),
        Shell::Elvish => "chassis.elv".into(),
        _ => format!("chassis.{shell}"),
    }
}

/// Run `completions`.
pub fn run(ui: &Ui, args: &CompletionsArgs) -> Result<ExitStatus, ExitStatus> {
    let text = script(args.shell);
    match &args.dir {
        None => ui.out(&text),
        Some(dir) => {
            // Like `schema --write`: the directory is created when missing.
            let path = dir.join(file_name(args.shell));
            if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, text))
            {
                ui.err(&format!("error: cannot write `{}`: {e}", path.display()));
                return Err(ExitStatus::Failure);
            }
            if !ui.quiet {
                ui.info(&format!("wrote {}", path.display()));
            }
        }
    }
    Ok(ExitStatus::Success)
}
