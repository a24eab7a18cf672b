//! Rendering engine diagnostics with miette.
//!
//! Source text always comes from [`SourceMap::display_text`], so values under
//! secret-looking keys are masked in every snippet. miette shows one source
//! per diagnostic: labels in other files than the primary label's become
//! `related` diagnostics, one per file.

use std::fmt;

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};

use crate::engine::diag::{Diagnostic, Label, Severity};
use crate::engine::span::SourceId;
use crate::load::SourceMap;

/// A [`Diagnostic`] ready for miette.
#[derive(Debug)]
pub struct Rendered {
    code: Option<String>,
    severity: miette::Severity,
    message: String,
    help: Option<String>,
    source: Option<NamedSource<String>>,
    labels: Vec<LabeledSpan>,
    related: Vec<Rendered>,
}

impl fmt::Display for Rendered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rendered {}

impl miette::Diagnostic for Rendered {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.code
            .as_ref()
            .map(|c| Box::new(c) as Box<dyn fmt::Display>)
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        if self.related.is_empty() {
            None
        } else {
            Some(Box::new(
                self.related.iter().map(|r| r as &dyn miette::Diagnostic),
            ))
        }
    }
}

fn named_source(sources: &SourceMap, id: SourceId) -> NamedSource<String> {
    NamedSource::new(sources.name(id), sources.display_text(id).into_owned()).with_language("toml")
}

fn labeled(label: &Label, text_len: usize, primary: bool) -> LabeledSpan {
    let start = (label.origin.span.start as usize).min(text_len);
    let len = label.origin.span.len().min(text_len - start);
    let span = SourceSpan::new(start.into(), len);
    let message = (!label.message.is_empty()).then(|| label.message.clone());
    if primary {
        LabeledSpan::new_primary_with_span(message, span)
    } else {
        LabeledSpan::new_with_span(message, span)
    }
}

/// The longest source line a report shows; a label on a longer line (a
/// minified file, a generated 70,000-character value) is reported by its
/// position instead: miette pads to the label's column, which past 65,535
/// is out of the formatter's range, and such a line helps nobody on a
/// terminal anyway.
const MAX_SHOWN_LINE: usize = 1_000;

/// Whether every byte of `label` sits on lines short enough to show.
fn showable(label: &Label, text: &str) -> bool {
    let start = (label.origin.span.start as usize).min(text.len());
    let end = (label.origin.span.end as usize).clamp(start, text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    text[line_start..line_end]
        .split('\n')
        .all(|line| line.len() <= MAX_SHOWN_LINE)
}

/// Build the miette form of `diag`.
pub fn to_rendered(diag: &Diagnostic, sources: &SourceMap) -> Rendered {
    if let Some(label) = diag
        .labels
        .iter()
        .find(|l| !showable(l, sources.text(l.origin.source)))
    {
        let (line, column) = sources.line_col(label.origin);
        return Rendered {
            code: Some(diag.code.as_str().to_owned()),
            severity: match diag.severity {
                Severity::Error => miette::Severity::Error,
                Severity::Warning => miette::Severity::Warning,
            },
            message: format!(
                "{} (at {}:{line}:{column}; the line is too long to show)",
                diag.message,
                sources.name(label.origin.source)
            ),
            help: (!diag.help.is_empty()).then(|| diag.help.join("\n")),
            source: None,
            labels: Vec::new(),
            related: Vec::new(),
        };
    }
    let main = diag
        .labels
        .iter()
        .find(|l| l.primary)
        .or(diag.labels.first())
        .map(|l| l.origin.source);
    let mut labels = Vec::new();
    let mut others: Vec<(SourceId, Vec<&Label>)> = Vec::new();
    for label in &diag.labels {
        if Some(label.origin.source) == main {
            labels.push(label);
        } else if let Some(group) = others.iter_mut().find(|(id, _)| *id == label.origin.source) {
            group.1.push(label);
        } else {
            others.push((label.origin.source, vec![label]));
        }
    }
    let related = others
        .into_iter()
        .map(|(id, group)| {
            let len = sources.text(id).len();
            let message = group.iter().find(|l| !l.message.is_empty()).map_or_else(
                || format!("see `{}`", sources.name(id)),
                |l| l.message.clone(),
            );
            // The message already says what a label with the same text would.
            let labels = group
                .iter()
                .map(|l| {
                    let span = labeled(l, len, false);
                    if l.message == message {
                        LabeledSpan::new_with_span(None, *span.inner())
                    } else {
                        span
                    }
                })
                .collect();
            Rendered {
                code: None,
                severity: miette::Severity::Advice,
                message,
                help: None,
                source: Some(named_source(sources, id)),
                labels,
                related: Vec::new(),
            }
        })
        .collect();
    let (source, labels) = match main {
        Some(id) => {
            let len = sources.text(id).len();
            (
                Some(named_source(sources, id)),
                labels.iter().map(|l| labeled(l, len, l.primary)).collect(),
            )
        }
        None => (None, Vec::new()),
    };
    Rendered {
        code: Some(diag.code.as_str().to_owned()),
        severity: match diag.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        },
        message: diag.message.clone(),
        help: (!diag.help.is_empty()).then(|| diag.help.join("\n")),
        source,
        labels,
        related,
    }
}

/// `diag` as a miette report (for printing with the installed handler).
pub fn to_report(diag: &Diagnostic, sources: &SourceMap) -> miette::Report {
    miette::Report::new(to_rendered(diag, sources))
}

/// The report handler: `theme` at `width` columns, wrapping only between
/// words — never inside one, never at a hyphen — so an entry id or a
/// `prefer = { … }` line in a help stays whole and copyable.
pub fn handler(theme: GraphicalTheme, width: usize) -> GraphicalReportHandler {
    GraphicalReportHandler::new_themed(theme)
        .with_width(width)
        .with_break_words(false)
        .with_word_splitter(textwrap::WordSplitter::NoHyphenation)
}

/// `diag` rendered without colors at `width` columns (for golden tests and
/// plain output).
pub fn render_plain(diag: &Diagnostic, sources: &SourceMap, width: usize) -> String {
    let handler = handler(GraphicalTheme::unicode_nocolor(), width);
    let mut out = String::new();
    handler
        .render_report(&mut out, &to_rendered(diag, sources))
        .expect("rendering into a String cannot fail");
    out
}
