//! Where output goes: data on stdout, diagnostics and logs on stderr.
//!
//! Every command renders through a [`Ui`], so format, colour and width are
//! decided once. With `--format json`, stdout is one versioned document and
//! diagnostics on stderr are JSON lines.

use std::io::{IsTerminal, Write};

use crate::engine::diag::{Diagnostic, Severity};
use crate::load::SourceMap;

pub use crate::app::documents::{diagnostic_json, message_json};

use super::diagnostic::to_rendered;

/// Output format requested with `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable text.
    Text,
    /// One JSON document with `format_version`.
    Json,
    /// Markdown (diff: a pull-request comment).
    Markdown,
    /// Graphviz dot (graph).
    Dot,
    /// Mermaid flowchart (graph).
    Mermaid,
}

/// `--color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stderr is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// Rendering settings shared by every command.
#[derive(Clone, Debug)]
pub struct Ui {
    /// Output format.
    pub format: Format,
    /// Whether stderr gets colour.
    pub color: bool,
    /// Width for wrapped output.
    pub width: usize,
    /// `-q`: only errors on stderr.
    pub quiet: bool,
}

impl Ui {
    /// Settings from the global flags and the environment.
    pub fn new(format: Format, color: ColorChoice, quiet: bool) -> Self {
        let color = match color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
            }
        };
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(100);
        Self {
            format,
            color,
            width,
            quiet,
        }
    }

    /// Write `text` to stdout (a trailing newline is added when missing).
    /// A closed pipe is not an error.
    pub fn out(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = stdout.write_all(b"\n");
        }
        let _ = stdout.flush();
    }

    /// A command's result on stdout: the JSON document under `--format
    /// json`, else the text (each built only when it is the one shown).
    pub fn emit(&self, json: impl FnOnce() -> serde_json::Value, text: impl FnOnce() -> String) {
        if self.format == Format::Json {
            self.out_json(&json());
        } else {
            self.out(&text());
        }
    }

    /// Write a JSON document to stdout, pretty-printed, as it is
    /// serialized (a 100,000-entry snapshot is never held as text).
    pub fn out_json(&self, value: &impl serde::Serialize) {
        let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        if serde_json::to_writer_pretty(&mut stdout, value).is_ok() {
            let _ = stdout.write_all(b"\n");
        }
        let _ = stdout.flush();
    }

    /// Write a line to stderr. Under `--format json`, a message written as
    /// text (`error: …`, `error[code]: …`, `warning: …`, `note: …`, then
    /// `  help: …` lines) goes out as a JSON diagnostic line instead, the
    /// same shape as the loader's, so a machine reads every finding alike.
    pub fn err(&self, text: &str) {
        let json = (self.format == Format::Json)
            .then(|| plain_diagnostic(text))
            .flatten();
        let mut stderr = std::io::stderr().lock();
        match json {
            Some(value) => {
                let _ = writeln!(stderr, "{value}");
            }
            None => {
                let _ = writeln!(stderr, "{text}");
            }
        }
    }

    /// A status line on stderr (`recorded 3 boundaries to …`): as written,
    /// or under `--format json` a `note` diagnostic line.
    pub fn info(&self, text: &str) {
        let mut stderr = std::io::stderr().lock();
        if self.format == Format::Json {
            let _ = writeln!(stderr, "{}", message_json("note", None, text, &[]));
        } else {
            let _ = writeln!(stderr, "{text}");
        }
    }

    /// Report diagnostics on stderr, as miette reports or JSON lines.
    pub fn diagnostics(&self, diagnostics: &[Diagnostic], sources: &SourceMap) {
        for d in diagnostics {
            if self.quiet && d.severity == Severity::Warning {
                continue;
            }
            if self.format == Format::Json {
                self.err(&diagnostic_json(d, sources).to_string());
            } else {
                self.err(&self.render(d, sources));
            }
        }
    }

    /// One diagnostic rendered for a person.
    pub fn render(&self, d: &Diagnostic, sources: &SourceMap) -> String {
        let theme = if self.color {
            miette::GraphicalTheme::unicode()
        } else {
            miette::GraphicalTheme::unicode_nocolor()
        };
        let handler = super::diagnostic::handler(theme, self.width);
        let rendered = to_rendered(d, sources);
        let mut out = String::new();
        if handler.render_report(&mut out, &rendered).is_err() {
            out = d.message.clone();
        }
        out.trim_end().to_owned()
    }
}

/// A message a command wrote as text (see [`Ui::err`]) as a JSON
/// diagnostic; `None` for text that is not one (progress, summaries).
pub(crate) fn plain_diagnostic(text: &str) -> Option<serde_json::Value> {
    if text.starts_with('{') {
        return None;
    }
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let (head, message) = first.split_once(": ")?;
    let (severity, code) = match head.split_once('[') {
        Some((s, c)) => (s, Some(c.strip_suffix(']')?)),
        // `interrupted: …` (exit 130) is an error with a code of its own.
        None if head == "interrupted" => ("error", Some("run::interrupted")),
        None => (head, None),
    };
    if !matches!(severity, "error" | "warning" | "note") {
        return None;
    }
    let mut message = message.to_owned();
    let mut help: Vec<String> = Vec::new();
    for line in rest.lines() {
        if let Some(h) = line.trim_start().strip_prefix("help: ") {
            help.push(h.to_owned());
        } else if let Some(last) = help.last_mut() {
            last.push('\n');
            last.push_str(line);
        } else if !line.trim().is_empty() {
            message.push('\n');
            message.push_str(line);
        }
    }
    for h in &mut help {
        let trimmed = h.trim_end().len();
        h.truncate(trimmed);
    }
    Some(message_json(severity, code, &message, &help))
}

#[cfg(test)]
mod plain_diagnostic_tests {
    use super::plain_diagnostic;

    #[test]
    fn text_findings_become_diagnostic_lines() {
        let v = plain_diagnostic(
            "error: no input for agent `a`\n  help: pass --input TEXT\n  help: or set `default_input`",
        )
        .unwrap();
        assert_eq!(v["severity"], "error");
        assert_eq!(v["code"], serde_json::Value::Null);
        assert_eq!(v["message"], "no input for agent `a`");
        assert_eq!(
            v["help"],
            serde_json::json!(["pass --input TEXT", "or set `default_input`"])
        );
        let v = plain_diagnostic("error[store::missing]: no store\n  - a\n  - b").unwrap();
        assert_eq!(v["code"], "store::missing");
        assert_eq!(v["message"], "no store\n  - a\n  - b");
        let v = plain_diagnostic("interrupted: the run was cancelled").unwrap();
        assert_eq!(
            (v["severity"].as_str(), v["code"].as_str()),
            (Some("error"), Some("run::interrupted"))
        );
        // Progress and summaries are not findings.
        for text in [
            "recorded 2 boundaries to r.json",
            "  tool   x  ok",
            "wrote a: b",
            "{\"type\":1}",
        ] {
            assert!(plain_diagnostic(text).is_none(), "{text}");
        }
    }
}
