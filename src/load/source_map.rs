//! Every loaded source text, by [`SourceId`].

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::engine::span::{Origin, SourceId, Span};

#[derive(Clone, Debug)]
struct SourceFile {
    name: String,
    path: PathBuf,
    text: String,
    /// Byte ranges never shown ([`SourceMap::conceal`]).
    concealed: Vec<Span>,
}

/// The texts that origins point into: a display name and the text of every
/// loaded file, in load order (the first file is `SourceId(0)`).
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
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
        let text = self.text(id);
        let mut shown = match super::mask::mask_secrets(text, super::is_sensitive_key) {
            Some(masked) => Cow::Owned(masked),
            None => Cow::Borrowed(text),
        };
        let concealed = self.file(id).map_or(&[][..], |f| f.concealed.as_slice());
        if !concealed.is_empty() {
            shown = Cow::Owned(super::mask::mask_ranges(
                &shown,
                concealed.iter().map(|s| (s.start as usize, s.end as usize)),
            ));
        }
        shown
    }

    /// Never show the text at `spans` of source `id` (values a diagnostic
    /// says it does not show: a secret typed where a name belongs).
    pub fn conceal(&mut self, id: SourceId, spans: impl IntoIterator<Item = Span>) {
        if let Some(f) = self.files.get_mut(id.0 as usize) {
            f.concealed.extend(spans);
        }
    }

    /// 1-based line and column (in characters) of the start of `origin`.
    pub fn line_col(&self, origin: Origin) -> (usize, usize) {
        let text = self.text(origin.source);
        let mut at = (origin.span.start as usize).min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[line_start..].chars().count() + 1)
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
