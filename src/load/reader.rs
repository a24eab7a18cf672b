//! A small reader over spanned TOML tables that records every problem.
//!
//! The walker asks for keys by type (`str`, `table`, `array`, ...); a value
//! of the wrong type becomes a `load::wrong-type` diagnostic and `None`, and
//! [`TableReader::finish`] reports every key outside the table's accepted
//! list as `load::unknown-key` with a "did you mean" suggestion.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::engine::diag::{Code, Diagnostic, did_you_mean};
use crate::engine::span::{Origin, SourceId, Span};

/// The state of walking one file: where origins point and where problems go.
pub(crate) struct FileCtx<'a> {
    /// The file being walked.
    pub source: SourceId,
    /// The text being walked (for mapping spans inside strings): the
    /// file's, or one piece of it ([`super::pieces`]).
    pub text: &'a str,
    /// Where `text` starts in the file: spans are relative to `text` until
    /// they become origins.
    pub base: u32,
    /// Collected diagnostics.
    pub diags: &'a mut Vec<Diagnostic>,
    /// Spans whose text must never be shown ([`SourceMap::conceal`]).
    pub concealed: Vec<Span>,
}

impl FileCtx<'_> {
    /// An origin in this file.
    pub fn origin(&self, span: Span) -> Origin {
        Origin::new(self.source, self.in_file(span))
    }

    /// `span` (relative to `text`) in the file.
    pub fn in_file(&self, span: Span) -> Span {
        Span {
            start: span.start.saturating_add(self.base),
            end: span.end.saturating_add(self.base),
        }
    }

    /// Record a diagnostic.
    pub fn push(&mut self, diag: Diagnostic) {
        self.diags.push(diag);
    }

    /// Number of errors recorded so far (to tell whether an item broke).
    pub fn errors(&self) -> usize {
        self.diags.iter().filter(|d| d.is_error()).count()
    }

    /// Record an error with a primary label at `span`.
    pub fn error(
        &mut self,
        code: Code,
        span: Span,
        message: impl Into<String>,
        label: &str,
    ) -> &mut Diagnostic {
        let d = Diagnostic::error(code, message).at(Some(self.origin(span)), label);
        self.diags.push(d);
        self.diags.last_mut().expect("just pushed")
    }
}

/// A span from a TOML range.
pub(crate) fn span(range: Range<usize>) -> Span {
    Span::from_range(range)
}

/// A value's dotted path (`entries.web.config.turns[1]`), for messages
/// only: kept as links to its parent's path and rendered when a message
/// names it. Building the text for every key read was a tenth of loading
/// 100,000 built-in entries, though almost no path is ever shown.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyPath<'t>(Option<std::rc::Rc<Step<'t>>>);

/// One step of a [`KeyPath`] below its parent.
#[derive(Debug)]
enum Step<'t> {
    Key(KeyPath<'t>, &'t str),
    Index(KeyPath<'t>, usize),
}

impl<'t> KeyPath<'t> {
    /// The document root (an empty path).
    pub fn root() -> Self {
        Self(None)
    }

    /// Whether this is the document root.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// `self.key`.
    pub fn key(&self, key: &'t str) -> Self {
        Self(Some(std::rc::Rc::new(Step::Key(self.clone(), key))))
    }

    /// `self[n]`.
    pub fn index(&self, n: usize) -> Self {
        Self(Some(std::rc::Rc::new(Step::Index(self.clone(), n))))
    }
}

impl std::fmt::Display for KeyPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_deref() {
            None => Ok(()),
            Some(Step::Key(parent, key)) => {
                if !parent.is_empty() {
                    write!(f, "{parent}.")?;
                }
                if is_bare_key(key) {
                    f.write_str(key)
                } else {
                    write!(f, "{key:?}")
                }
            }
            Some(Step::Index(parent, n)) => write!(f, "{parent}[{n}]"),
        }
    }
}

/// Whether `key` is written without quotes in a dotted path.
fn is_bare_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn article(type_str: &str) -> &'static str {
    match type_str {
        "string" => "a string",
        "integer" => "an integer",
        "float" => "a float",
        "boolean" => "a boolean",
        "datetime" => "a datetime",
        "array" => "an array",
        _ => "a table",
    }
}

/// A string value with where its content lies in the file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Str<'t> {
    /// The decoded value.
    pub value: &'t str,
    /// The span of the whole value (with quotes).
    pub span: Span,
    /// Byte offset of the content in the file when the literal has no
    /// escapes (so content offsets map one to one), else `None`.
    pub content_start: Option<usize>,
}

impl Str<'_> {
    /// The file span of `range`, a byte range inside the decoded value; the
    /// whole value span when the literal has escapes.
    pub fn sub_span(&self, range: Range<usize>) -> Span {
        match self.content_start {
            Some(start) => {
                let len = self.value.len();
                let (a, b) = (range.start.min(len), range.end.min(len));
                Span::from_range(start + a..start + b.max(a))
            }
            None => self.span,
        }
    }
}

/// Where the content of the string literal at `span` starts, if the literal
/// has no escapes.
fn content_start(text: &str, span: Span, value: &str) -> Option<usize> {
    let raw = text.get(span.range())?;
    let quote = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
        3
    } else if raw.starts_with('"') || raw.starts_with('\'') {
        1
    } else {
        return None;
    };
    let inner = raw.get(quote..raw.len().checked_sub(quote)?)?;
    if inner == value {
        return Some(span.start as usize + quote);
    }
    // A multi-line string drops a newline right after the opening quotes.
    for nl in ["\n", "\r\n"] {
        if quote == 3 && inner.strip_prefix(nl) == Some(value) {
            return Some(span.start as usize + quote + nl.len());
        }
    }
    None
}

/// A value in a table (or array), with its key and dotted path.
#[derive(Clone, Debug)]
pub(crate) struct Node<'t, 'i> {
    /// The last key segment (for array items: the array's key).
    pub key: &'t str,
    /// The span of the key (for array items: the item).
    pub key_span: Span,
    /// The full dotted path, for messages.
    pub path: KeyPath<'t>,
    /// The value.
    pub value: &'t DeValue<'i>,
    /// The span of the value.
    pub span: Span,
}

impl<'t, 'i> Node<'t, 'i> {
    /// A node from a table entry.
    pub fn entry(
        prefix: &KeyPath<'t>,
        key: &'t Spanned<std::borrow::Cow<'i, str>>,
        value: &'t Spanned<DeValue<'i>>,
    ) -> Self {
        Self {
            key: key.get_ref(),
            key_span: span(key.span()),
            path: prefix.key(key.get_ref()),
            value: value.get_ref(),
            span: span(value.span()),
        }
    }

    pub fn wrong_type(&self, cx: &mut FileCtx<'_>, expected: &str) {
        let found = self.value.type_str();
        cx.error(
            Code::WrongType,
            self.span,
            format!(
                "`{}` must be {expected}, found {}",
                self.path,
                article(found)
            ),
            &format!("expected {expected}"),
        );
    }

    /// The value as a string.
    pub fn str(&self, cx: &mut FileCtx<'_>) -> Option<Str<'t>> {
        match self.value {
            DeValue::String(s) => {
                let value: &'t str = s.as_ref();
                Some(Str {
                    value,
                    span: self.span,
                    content_start: content_start(cx.text, self.span, value),
                })
            }
            _ => {
                self.wrong_type(cx, "a string");
                None
            }
        }
    }

    /// The value as a boolean.
    pub fn bool(&self, cx: &mut FileCtx<'_>) -> Option<bool> {
        let b = self.value.as_bool();
        if b.is_none() {
            self.wrong_type(cx, "a boolean");
        }
        b
    }

    /// The value as an integer (`None` after reporting a wrong type or overflow).
    pub fn int(&self, cx: &mut FileCtx<'_>) -> Option<i64> {
        let Some(i) = self.value.as_integer() else {
            self.wrong_type(cx, "an integer");
            return None;
        };
        let parsed = parse_int(i.as_str(), i.radix());
        if parsed.is_none() {
            cx.error(
                Code::InvalidValue,
                self.span,
                format!("`{}` does not fit in 64 bits", self.path),
                "too large",
            );
        }
        parsed
    }

    /// The value as a table, read through a [`TableReader`].
    pub fn reader(
        &self,
        cx: &mut FileCtx<'_>,
        accepted: &'static [&'static str],
    ) -> Option<TableReader<'t, 'i>> {
        match self.value {
            DeValue::Table(t) => Some(TableReader::new(
                t,
                self.key_span,
                self.path.clone(),
                accepted,
            )),
            _ => {
                self.wrong_type(cx, "a table");
                None
            }
        }
    }

    /// The entries of a table value (a map with free keys).
    pub fn entries(&self, cx: &mut FileCtx<'_>) -> Option<Vec<Node<'t, 'i>>> {
        match self.value {
            DeValue::Table(t) => Some(
                t.iter()
                    .map(|(k, v)| Node::entry(&self.path, k, v))
                    .collect(),
            ),
            _ => {
                self.wrong_type(cx, "a table");
                None
            }
        }
    }

    /// [`Self::entries`] one at a time (a table of 100,000 entries is not
    /// copied into a list first), with how many there are.
    pub fn entries_iter(
        &self,
        cx: &mut FileCtx<'_>,
    ) -> Option<impl ExactSizeIterator<Item = Node<'t, 'i>> + '_> {
        match self.value {
            DeValue::Table(t) => Some(t.iter().map(|(k, v)| Node::entry(&self.path, k, v))),
            _ => {
                self.wrong_type(cx, "a table");
                None
            }
        }
    }

    /// The entries of a table value; empty (and nothing reported) otherwise.
    pub fn table_entries(&self) -> Vec<Node<'t, 'i>> {
        match self.value {
            DeValue::Table(t) => t
                .iter()
                .map(|(k, v)| Node::entry(&self.path, k, v))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The items of an array value.
    pub fn items(&self, cx: &mut FileCtx<'_>) -> Option<Vec<Node<'t, 'i>>> {
        match self.value {
            DeValue::Array(a) => Some(self.array_items(a)),
            _ => {
                self.wrong_type(cx, "an array");
                None
            }
        }
    }

    /// The items of `array` (which must be this node's value).
    pub fn array_items(&self, array: &'t toml::de::DeArray<'i>) -> Vec<Node<'t, 'i>> {
        array
            .iter()
            .enumerate()
            .map(|(n, v)| Node {
                key: self.key,
                key_span: span(v.span()),
                path: self.path.index(n),
                value: v.get_ref(),
                span: span(v.span()),
            })
            .collect()
    }
}

/// Parse a TOML integer's digits (underscores allowed) in `radix`.
pub(crate) fn parse_int(digits: &str, radix: u32) -> Option<i64> {
    let digits: String = digits.chars().filter(|&c| c != '_').collect();
    i64::from_str_radix(&digits, radix).ok()
}

/// Parse a TOML float's text (underscores allowed); may be NaN or infinite.
pub(crate) fn parse_float(text: &str) -> Option<f64> {
    let text: String = text.chars().filter(|&c| c != '_').collect();
    text.parse().ok()
}

/// Reads a table with a fixed set of accepted keys.
pub(crate) struct TableReader<'t, 'i> {
    table: &'t DeTable<'i>,
    /// Where a missing key is reported (the table's key).
    pub span: Span,
    /// The table's dotted path (empty for the document root).
    pub path: KeyPath<'t>,
    accepted: &'static [&'static str],
}

impl<'t, 'i> TableReader<'t, 'i> {
    /// A reader over `table`.
    pub fn new(
        table: &'t DeTable<'i>,
        span: Span,
        path: KeyPath<'t>,
        accepted: &'static [&'static str],
    ) -> Self {
        Self {
            table,
            span,
            path,
            accepted,
        }
    }

    /// The value at `key`, if present.
    pub fn get(&self, key: &str) -> Option<Node<'t, 'i>> {
        debug_assert!(
            self.accepted.contains(&key),
            "`{key}` is not in the accepted list"
        );
        self.table
            .get_key_value(key)
            .map(|(k, v)| Node::entry(&self.path, k, v))
    }

    /// The value at `key`, reporting `load::missing-key` when absent.
    pub fn require(&self, cx: &mut FileCtx<'_>, key: &str) -> Option<Node<'t, 'i>> {
        let node = self.get(key);
        if node.is_none() {
            let what = if self.path.is_empty() {
                "the file".to_owned()
            } else {
                format!("`{}`", self.path)
            };
            cx.error(
                Code::MissingKey,
                self.span,
                format!("{what} is missing `{key}`"),
                &format!("`{key}` is required here"),
            );
        }
        node
    }

    /// Report every key outside the accepted list.
    pub fn finish(self, cx: &mut FileCtx<'_>) {
        for (key, _) in self.table.iter() {
            let name: &str = key.get_ref();
            if self.accepted.contains(&name) {
                continue;
            }
            let message = if self.path.is_empty() {
                format!("unknown top-level key `{name}`")
            } else {
                format!("unknown key `{name}` in `{}`", self.path)
            };
            let help = match did_you_mean(name, self.accepted.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => {
                    let list: Vec<String> =
                        self.accepted.iter().map(|k| format!("`{k}`")).collect();
                    format!("expected one of {}", list.join(", "))
                }
            };
            cx.error(Code::UnknownKey, span(key.span()), message, "unknown key")
                .help
                .push(help);
        }
    }
}
