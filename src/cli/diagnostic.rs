//! Rendering engine diagnostics with miette.
//!
//! Source text always comes from [`SourceMap::display_text`], so values under
//! secret-looking keys are masked in every snippet. miette shows one source
//! per diagnostic: labels in other files than the primary label's become
//! `related` diagnostics, one per file.

use std::fmt;

use std::sync::Arc;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceCode, SourceSpan, SpanContents,
};

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
    source: Option<Window>,
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

/// Lines shown around a diagnostic's labels (miette shows fewer).
const WINDOW_CONTEXT_LINES: usize = 3;

/// The part of a source a diagnostic shows: the lines around its labels,
/// cut from the (masked) display text shared by every diagnostic of the
/// file. miette finds lines by scanning its source from the start, so
/// handing it the whole file made each report cost the file's size, and
/// N reports of one file N × its size; a window costs its few lines.
#[derive(Debug)]
struct Window {
    name: String,
    text: Arc<str>,
    /// The window's byte range in `text`.
    start: usize,
    end: usize,
    /// The 0-based line number of `start`.
    first_line: usize,
    /// Where each of the window's lines starts in `text` (so a span is
    /// read from its own line, not by scanning the window from its start:
    /// a diagnostic with thousands of labels reads each in its few lines).
    starts: Vec<usize>,
}

impl Window {
    /// The window of source `id` around `labels` (byte ranges).
    fn around(sources: &SourceMap, id: SourceId, labels: &[&Label]) -> Self {
        let text = sources.display_arc(id);
        let starts = sources.line_starts(id);
        let line_of = |at: usize| starts.partition_point(|&s| s <= at).saturating_sub(1);
        let low = labels
            .iter()
            .map(|l| l.origin.span.start as usize)
            .min()
            .unwrap_or(0)
            .min(text.len());
        let high = labels
            .iter()
            .map(|l| l.origin.span.end as usize)
            .max()
            .unwrap_or(0)
            .clamp(low, text.len());
        let first_line = line_of(low).saturating_sub(WINDOW_CONTEXT_LINES);
        let last_line = line_of(high) + WINDOW_CONTEXT_LINES + 1;
        let start = starts.get(first_line).copied().unwrap_or(0);
        let end = starts.get(last_line).copied().unwrap_or(text.len());
        let window_starts = starts
            .get(first_line..last_line.min(starts.len()))
            .map_or_else(|| vec![start], <[usize]>::to_vec);
        Self {
            name: sources.name(id).to_owned(),
            text,
            start,
            end,
            first_line,
            starts: window_starts,
        }
    }
}

impl SourceCode for Window {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        // Only the span's lines and the context asked for (and a line
        // more each side: miette counts context within what it is given).
        let at = span.offset().clamp(self.start, self.end);
        let until = (span.offset() + span.len()).clamp(at, self.end);
        let line_of = |x: usize| self.starts.partition_point(|&s| s <= x).saturating_sub(1);
        let first = line_of(at).saturating_sub(context_lines_before + 1);
        let last = line_of(until) + context_lines_after + 2;
        let from = self.starts.get(first).copied().unwrap_or(self.start);
        let to = self.starts.get(last).copied().unwrap_or(self.end).max(from);
        let slice = &self.text.as_bytes()[from..to];
        let inside = SourceSpan::new(
            span.offset().saturating_sub(from).min(slice.len()).into(),
            span.len(),
        );
        let inner = slice.read_span(&inside, context_lines_before, context_lines_after)?;
        // miette counts columns in bytes; a report's location counts
        // characters, as its JSON does (`é` is one column, not two).
        let data = inner.span().offset() + from;
        let line_start = self
            .starts
            .get(line_of(data))
            .copied()
            .unwrap_or(self.start)
            .min(data);
        let column = self
            .text
            .get(line_start..line_start + inner.column())
            .map_or(inner.column(), |s| s.chars().count());
        Ok(Box::new(
            MietteSpanContents::new_named(
                self.name.clone(),
                inner.data(),
                SourceSpan::new((inner.span().offset() + from).into(), inner.span().len()),
                inner.line() + self.first_line + first,
                column,
                // As miette counts it when the source starts at the window
                // (its snippet merging reads this).
                inner.line_count() + first,
            )
            .with_language("toml"),
        ))
    }
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

/// The most labels a report shows per file (and files beside the main
/// one): a diagnostic naming 4,000 ambiguous providers reads no better
/// with all of them, and miette lays labels out in time that grows with
/// their square. The rest are counted in the help; JSON lists every one.
const MAX_SHOWN_LABELS: usize = 12;

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
    let mut hidden = 0usize;
    for label in &diag.labels {
        if Some(label.origin.source) == main {
            if labels.len() < MAX_SHOWN_LABELS || label.primary {
                labels.push(label);
            } else {
                hidden += 1;
            }
        } else if let Some(group) = others.iter_mut().find(|(id, _)| *id == label.origin.source) {
            if group.1.len() < MAX_SHOWN_LABELS {
                group.1.push(label);
            } else {
                hidden += 1;
            }
        } else if others.len() < MAX_SHOWN_LABELS {
            others.push((label.origin.source, vec![label]));
        } else {
            hidden += 1;
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
                source: Some(Window::around(sources, id, &group)),
                labels,
                related: Vec::new(),
            }
        })
        .collect();
    let (source, labels) = match main {
        Some(id) => {
            let len = sources.text(id).len();
            (
                Some(Window::around(sources, id, &labels)),
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
        help: {
            let mut help = diag.help.clone();
            if hidden > 0 {
                help.push(format!(
                    "… and {hidden} more places not shown (`--format json` lists every one)"
                ));
            }
            (!help.is_empty()).then(|| help.join("\n"))
        },
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
