//! Every loaded source text, by [`SourceId`].

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::engine::span::{Origin, SourceId, Span};

#[derive(Clone, Debug)]
struct SourceFile {
    name: String,
    path: PathBuf,
    text: String,
    /// Byte ranges never shown ([`SourceMap::conceal`]).
    concealed: Vec<Span>,
    /// [`SourceMap::display_text`], computed once: every diagnostic of a
    /// file shows it, so masking it again per diagnostic would make
    /// reporting N diagnostics O(N × file).
    shown: OnceLock<Arc<str>>,
    /// The byte offset of every line start, for [`SourceMap::line_col`].
    lines: OnceLock<Arc<[usize]>>,
}

/// The texts that origins point into: a display name and the text of every
/// loaded file, in load order (the first file is `SourceId(0)`).
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceFile {
    /// The text to show: masked and concealed, computed on first use.
    fn shown(&self) -> &str {
        self.shown.get_or_init(|| {
            let mut shown = match super::mask::mask_secrets(&self.text, super::is_sensitive_key) {
                Some(masked) => masked,
                None => self.text.clone(),
            };
            if !self.concealed.is_empty() {
                shown = super::mask::mask_ranges(
                    &shown,
                    self.concealed
                        .iter()
                        .map(|s| (s.start as usize, s.end as usize)),
                );
            }
            Arc::from(shown)
        })
    }
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a source; returns its id.
    pub fn add(
        &mut self,
        name: impl Into<String>,
        path: impl Into<PathBuf>,
        text: impl Into<String>,
    ) -> SourceId {
        let id = SourceId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        self.files.push(SourceFile {
            name: name.into(),
            path: path.into(),
            text: text.into(),
            concealed: Vec::new(),
            shown: OnceLock::new(),
            lines: OnceLock::new(),
        });
        id
    }

    /// Number of sources.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no source was loaded.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Every source id, in load order.
    pub fn ids(&self) -> impl Iterator<Item = SourceId> + '_ {
        (0..self.files.len()).map(|i| SourceId(i as u32))
    }

    fn file(&self, id: SourceId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    /// The display name of a source (`composition.toml`, `HEAD:a.toml`);
    /// `<unknown>` for an id this map does not hold.
    pub fn name(&self, id: SourceId) -> &str {
        self.file(id).map_or("<unknown>", |f| f.name.as_str())
    }

    /// The path the source was read from (as the loader built it).
    pub fn path(&self, id: SourceId) -> Option<&Path> {
        self.file(id).map(|f| f.path.as_path())
    }

    /// The raw text of a source. It may contain secrets: show
    /// [`SourceMap::display_text`] instead.
    pub fn text(&self, id: SourceId) -> &str {
        self.file(id).map_or("", |f| f.text.as_str())
    }

    /// The text to show to people: the content of every string under a key
    /// that looks sensitive, and every URL password, replaced by `*` of the
    /// same byte length, so spans stay valid.
    pub fn display_text(&self, id: SourceId) -> Cow<'_, str> {
        match self.file(id) {
            Some(f) => Cow::Borrowed(f.shown()),
            None => Cow::Borrowed(""),
        }
    }

    /// [`Self::display_text`], shared (computed once per source).
    pub fn display_arc(&self, id: SourceId) -> Arc<str> {
        self.file(id).map_or_else(
            || Arc::from(""),
            |f| {
                f.shown();
                Arc::clone(f.shown.get().expect("just computed"))
            },
        )
    }

    /// Never show the text at `spans` of source `id` (values a diagnostic
    /// says it does not show: a secret typed where a name belongs).
    pub fn conceal(&mut self, id: SourceId, spans: impl IntoIterator<Item = Span>) {
        if let Some(f) = self.files.get_mut(id.0 as usize) {
            f.concealed.extend(spans);
            f.shown = OnceLock::new();
        }
    }

    /// 1-based line and column (in characters) of the start of `origin`.
    pub fn line_col(&self, origin: Origin) -> (usize, usize) {
        let text = self.text(origin.source);
        let mut at = (origin.span.start as usize).min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let starts = self.line_starts(origin.source);
        // The last line start at or before `at`.
        let line = starts.partition_point(|&s| s <= at).max(1);
        let line_start = starts.get(line - 1).copied().unwrap_or(0);
        (line, text[line_start..at].chars().count() + 1)
    }

    /// The byte offset of each line start of source `id` (the first is 0).
    pub fn line_starts(&self, id: SourceId) -> &[usize] {
        let Some(f) = self.file(id) else {
            return &[0];
        };
        f.lines.get_or_init(|| {
            std::iter::once(0)
                .chain(f.text.match_indices('\n').map(|(i, _)| i + 1))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::span::Span;

    #[test]
    fn line_col_is_one_based() {
        let mut map = SourceMap::new();
        let id = map.add("a.toml", "a.toml", "ab\ncdé\nf");
        let at = |s: u32| map.line_col(Origin::new(id, Span { start: s, end: s }));
        assert_eq!(at(0), (1, 1));
        assert_eq!(at(3), (2, 1));
        assert_eq!(at(8), (3, 1));
        assert_eq!(at(7), (2, 4));
        assert_eq!(map.name(id), "a.toml");
    }

    #[test]
    fn display_text_masks_canary_next_to_syntax_error() {
        let mut map = SourceMap::new();
        let text = "[entries.app.config]\napi_key = \"sk-canary-123456\"\n= = oops [\n";
        let id = map.add("c.toml", "c.toml", text);
        let shown = map.display_text(id);
        assert!(!shown.contains("sk-canary-123456"), "{shown}");
        assert_eq!(shown.len(), text.len());
        assert_eq!(map.text(id), text);
    }
}
