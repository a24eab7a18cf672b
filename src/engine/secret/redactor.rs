//! [`Redactor`]: learns secret values and scrubs them out of text and JSON.
//!
//! The known values live in a byte trie, so [`Redactor::redact`] is one
//! left-to-right pass over the text: at each position the trie is walked
//! for the longest known value starting there. The cost is the length of
//! the text times the length of the longest *partial* match, independent
//! of how many secrets are known (the reference re-scans the whole text
//! once per secret).

use std::borrow::Cow;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

use super::SecretValue;
use crate::engine::redact::{REDACTED, is_sensitive_key, redact_url_userinfo};

/// The shortest value, in characters, that [`Redactor::learn`] accepts.
///
/// The reference learns any non-empty value, so a one-character secret
/// scrubs that character out of every trace. Six characters is shorter
/// than any real credential (API keys, tokens, passwords worth the name)
/// and long enough that ordinary words and numbers are rarely hit.
pub const MIN_SECRET_LEN: usize = 6;

/// What [`Redactor::learn`] did with a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learned {
    /// The value is new and is redacted from now on.
    Added,
    /// The value was already known.
    AlreadyKnown,
    /// The value is shorter than [`MIN_SECRET_LEN`] characters and is not
    /// redacted (it would scrub ordinary text).
    TooShort,
}

/// A shared, clonable handle to the set of known secret values.
///
/// Clones share one set (an `Arc<RwLock<..>>`), so a value learned through
/// any clone, for example by a [`super::RedactingSecretProvider`], is
/// redacted by every other, for example inside a telemetry wrapper.
#[derive(Clone, Default)]
pub struct Redactor {
    inner: Arc<RwLock<Trie>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("known", &self.len())
            .finish()
    }
}

/// The escaped spellings of `value` that differ from it: JSON string
/// escaping once and twice, and `Debug` escaping of the value and of its
/// JSON form (quotes stripped). A value with characters outside ASCII is
/// also learnt as an ASCII-only encoder writes it (`\u00e9`, and
/// `\u00E9`; a character beyond the BMP as its surrogate pair): Python's
/// `json.dumps` does by default, so a plugin that logs its configuration
/// as JSON would otherwise spell the secret in a way never learnt.
fn escaped_forms(value: &str) -> Vec<String> {
    let json = |v: &str| {
        let quoted = serde_json::to_string(v).unwrap_or_default();
        quoted[1..quoted.len().saturating_sub(1).max(1)].to_owned()
    };
    let debug = |v: &str| {
        let quoted = format!("{v:?}");
        quoted[1..quoted.len().saturating_sub(1).max(1)].to_owned()
    };
    let once = json(value);
    let mut out = vec![json(&once), debug(value), debug(&once)];
    if !value.is_ascii() {
        for upper in [false, true] {
            let ascii = ascii_escaped(&once, upper);
            out.push(json(&ascii));
            out.push(ascii);
        }
    }
    out.push(once);
    out.retain(|f| f != value);
    out.sort();
    out.dedup();
    out
}

/// `text` with every character outside ASCII written as `\uXXXX` escapes
/// of its UTF-16 units (hex digits upper or lower case).
fn ascii_escaped(text: &str, upper: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len() * 2);
    let mut units = [0u16; 2];
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        for unit in c.encode_utf16(&mut units) {
            let _ = if upper {
                write!(out, "\\u{unit:04X}")
            } else {
                write!(out, "\\u{unit:04x}")
            };
        }
    }
    out
}

impl Redactor {
    /// A redactor that knows no values.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Learns `secret`, so that [`Redactor::redact`] replaces it from now
    /// on. Values shorter than [`MIN_SECRET_LEN`] characters are refused.
    pub fn learn(&self, secret: &SecretValue) -> Learned {
        let value = secret.reveal();
        if value.chars().count() < MIN_SECRET_LEN {
            return Learned::TooShort;
        }
        let mut trie = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        let added = trie.insert(value.as_bytes());
        trie.learned += usize::from(added);
        // The value as it appears once or twice escaped: inside a JSON
        // string (a server's reply, a JSON document about that reply) and
        // in Rust `Debug` output (a dependency's log line).
        for form in escaped_forms(value) {
            trie.insert(form.as_bytes());
        }
        if added {
            Learned::Added
        } else {
            Learned::AlreadyKnown
        }
    }

    /// How many distinct values are known.
    #[must_use]
    pub fn len(&self) -> usize {
        self.read().learned
    }

    /// Whether no value is known.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `text` with every known value replaced by `<redacted>` and every URL
    /// user-info password masked (see [`redact_url_userinfo`]).
    ///
    /// At each position the longest known value wins; occurrences that
    /// overlap are merged into a single `<redacted>`, so no fragment of
    /// either value survives. A match lying entirely inside a `<redacted>`
    /// already present in `text` is ignored, so redacting twice changes
    /// nothing. Text without a secret is returned borrowed.
    #[must_use]
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let trie = self.read();
        scrub(&trie, text)
    }

    /// The longest known spelling of a value, in bytes (0 when none is
    /// known): a window that reaches this far past a cut holds whole any
    /// value the cut would halve.
    #[must_use]
    pub fn longest(&self) -> usize {
        self.read().longest
    }

    /// `window`, a stretch of a longer text (the last bytes a child wrote,
    /// the first bytes of a body), as redacted text that holds no piece of
    /// a known value cut by the window's edges.
    ///
    /// A value the cut went through is no known value inside the window
    /// (`…ef12` of `abcdef12`), so redacting the window alone would let
    /// that piece through. With `cut_before` (text before the window was
    /// lost) the window's first [`Self::longest`] − 1 bytes are dropped
    /// first — a value that began before the window ends within them —
    /// and with `cut_after` its last as many likewise. Each drop moves on
    /// to a character boundary, and past any value found whole across it
    /// (so a drop never halves one itself). What is left is then redacted
    /// whole, so cutting the result further is safe. The second item says
    /// whether anything was dropped (show an elision).
    #[must_use]
    pub fn redact_window(
        &self,
        window: &[u8],
        cut_before: bool,
        cut_after: bool,
    ) -> (String, bool) {
        let (start, end) = {
            let guard = self.read();
            let trie: &Trie = &guard;
            let reach = trie.longest.saturating_sub(1);
            let continuation = |b: u8| b & 0xC0 == 0x80;
            // The values found whole that begin before `at` and end after it.
            let across = |at: usize| {
                (at.saturating_sub(trie.longest)..at).filter_map(move |i| {
                    trie.longest_match(&window[i..])
                        .map(|n| (i, i + n))
                        .filter(|&(_, e)| e > at)
                })
            };
            let mut start = 0;
            let mut end = window.len();
            if cut_before {
                start = reach.min(end);
                while start < end && continuation(window[start]) {
                    start += 1;
                }
                while let Some(e) = across(start).map(|(_, e)| e).max() {
                    start = e;
                }
            }
            if cut_after {
                end = end.saturating_sub(reach).max(start);
                while end > start && end < window.len() && continuation(window[end]) {
                    end -= 1;
                }
                while let Some(b) = across(end).map(|(b, _)| b).min() {
                    end = b.max(start);
                    if end == start {
                        break;
                    }
                }
            }
            (start, end)
        };
        let dropped = start > 0 || end < window.len();
        let text = String::from_utf8_lossy(&window[start..end]);
        (self.redact(&text).into_owned(), dropped)
    }

    /// How many bytes at the start of `text` can be released while more
    /// text may follow: everything before the first place where a known
    /// value could still begin (the rest of `text` is a prefix of one), and
    /// before any value found whole that reaches into that tail. What is
    /// held is shorter than the longest known value. See
    /// [`super::StreamingRedactor`].
    #[must_use]
    pub fn releasable(&self, text: &str) -> usize {
        let trie = self.read();
        if trie.count == 0 {
            return text.len();
        }
        // Only the last `longest` bytes can begin a value that runs past
        // the end, or one that crosses a split: each look is that window.
        let bytes = text.as_bytes();
        let window = |end: usize| end.saturating_sub(trie.longest)..end;
        let Some(mut split) = window(bytes.len()).find(|&i| trie.reaches_end(&bytes[i..])) else {
            return text.len();
        };
        // A whole value that starts before the split and ends after it is
        // held with the tail, so it is never cut in two. Values that overlap
        // one another can chain back far (a run of `000000…` for the value
        // `000000`): past a few lengths, everything is held until the run
        // ends (safe, and each look stays a window).
        let floor = split.saturating_sub(4 * trie.longest);
        loop {
            let crossing = window(split).find(|&i| {
                trie.longest_match(&bytes[i..])
                    .is_some_and(|n| i + n > split)
            });
            match crossing {
                Some(i) if i < floor => return 0,
                Some(i) => split = i,
                None => return split,
            }
        }
    }

    /// Whether `text` contains a known value (URL passwords are not
    /// considered: they are not known values).
    #[must_use]
    pub fn contains_secret(&self, text: &str) -> bool {
        let trie = self.read();
        let bytes = text.as_bytes();
        trie.count > 0 && (0..bytes.len()).any(|i| trie.longest_match(&bytes[i..]).is_some())
    }

    /// A copy of `value` with every string scrubbed as by
    /// [`Redactor::redact`] (object keys included) and every value under a
    /// sensitive key ([`is_sensitive_key`]) replaced by `"<redacted>"`,
    /// whatever its type.
    ///
    /// A number whose decimal text contains a known value becomes
    /// `"<redacted>"` too (a numeric PIN is still a secret). A key that
    /// holds a secret becomes `<redacted:N>`, numbered within its object so
    /// that two such keys never collide and no entry is lost.
    #[must_use]
    pub fn redact_json(&self, value: &Value) -> Value {
        let trie = self.read();
        Scrub {
            trie: &trie,
            key_rule: true,
            keys: true,
        }
        .value(value)
    }

    /// [`Self::redact_json`] without the sensitive-key rule: known values
    /// and URL passwords are scrubbed from every string, number and key
    /// (keys numbered as there), but a key that *names* something secret
    /// keeps its value.
    ///
    /// For what came from outside and enters the conversation (a tool's
    /// output, a hook's payload): a field called `tokens` in a tokenizer's
    /// output is data, not a credential. What a model receives and what a
    /// recording keeps of it are both this function's output, so they are
    /// equal.
    #[must_use]
    pub fn redact_foreign(&self, value: &Value) -> Value {
        let trie = self.read();
        Scrub {
            trie: &trie,
            key_rule: false,
            keys: true,
        }
        .value(value)
    }

    /// A document chassis wrote (a run result, a report): known values and
    /// URL passwords are scrubbed from every value, and no key is touched.
    ///
    /// The keys of such a document are chassis's own labels (`tokens`,
    /// `answer`, `generation_id`); a secret that happens to spell one must
    /// not rewrite the document's shape. Whatever came from outside inside
    /// it was redacted with [`Self::redact_foreign`] when it came in.
    #[must_use]
    pub fn redact_document(&self, value: &Value) -> Value {
        let trie = self.read();
        Scrub {
            trie: &trie,
            key_rule: false,
            keys: false,
        }
        .value(value)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Trie> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One JSON redaction: which rules apply.
struct Scrub<'t> {
    trie: &'t Trie,
    /// Values under a sensitive key become `"<redacted>"`.
    key_rule: bool,
    /// Keys are scrubbed (and numbered) too.
    keys: bool,
}

impl Scrub<'_> {
    fn value(&self, value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(self.object(map)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::String(text) => Value::String(scrub(self.trie, text).into_owned()),
            Value::Number(n) => {
                let text = n.to_string();
                if matches!(scrub(self.trie, &text), Cow::Owned(_)) {
                    Value::String(REDACTED.to_owned())
                } else {
                    value.clone()
                }
            }
            Value::Bool(_) | Value::Null => value.clone(),
        }
    }

    fn object(&self, map: &serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
        let mut out = serde_json::Map::with_capacity(map.len());
        let mut renamed = Vec::new();
        for (key, item) in map {
            let item = if self.key_rule && is_sensitive_key(key) {
                Value::String(REDACTED.to_owned())
            } else {
                self.value(item)
            };
            match self.keys.then(|| scrub(self.trie, key)) {
                Some(Cow::Owned(_)) => renamed.push(item),
                _ => {
                    out.insert(key.clone(), item);
                }
            }
        }
        // Numbered after the keys that stay, so a number never takes the
        // place of a key already there (`<redacted:1>` from an earlier pass).
        let mut n = 0;
        for item in renamed {
            let key = loop {
                n += 1;
                let key = format!("<redacted:{n}>");
                if !out.contains_key(&key) {
                    break key;
                }
            };
            out.insert(key, item);
        }
        out
    }
}

/// Known values, then URL passwords.
fn scrub<'a>(trie: &Trie, text: &'a str) -> Cow<'a, str> {
    match scrub_known(trie, text) {
        Cow::Borrowed(text) => redact_url_userinfo(text),
        Cow::Owned(done) => match redact_url_userinfo(&done) {
            Cow::Borrowed(_) => Cow::Owned(done),
            Cow::Owned(again) => Cow::Owned(again),
        },
    }
}

/// One pass: collect the byte ranges covered by known values (merging
/// overlaps) and replace each with the marker.
fn scrub_known<'a>(trie: &Trie, text: &'a str) -> Cow<'a, str> {
    if trie.count == 0 {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let marker = REDACTED.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut cover: Option<(usize, usize)> = None;
    let mut marker_end = 0;
    let flush = |out: &mut Option<String>, (start, end): (usize, usize), copied: &mut usize| {
        let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
        // Every known value is valid UTF-8, so it starts on a lead byte and
        // ends on a char boundary: the slices below are on boundaries.
        buf.push_str(&text[*copied..start]);
        buf.push_str(REDACTED);
        *copied = end;
    };
    for i in 0..bytes.len() {
        if let Some(range) = cover
            && i >= range.1
        {
            flush(&mut out, range, &mut copied);
            cover = None;
        }
        let rest = &bytes[i..];
        if rest.starts_with(marker) {
            marker_end = i + marker.len();
        }
        let Some(len) = trie.longest_match(rest) else {
            continue;
        };
        let end = i + len;
        if end <= marker_end {
            continue; // inside a marker that was already there
        }
        cover = Some(match cover {
            Some((start, cover_end)) => (start, cover_end.max(end)),
            None => (i, end),
        });
    }
    if let Some(range) = cover {
        flush(&mut out, range, &mut copied);
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
    }
}

/// A byte trie of the known values; node 0 is the root.
struct Trie {
    nodes: Vec<Node>,
    /// Strings known: values and their escaped spellings.
    count: usize,
    /// Values learnt (their spellings not counted).
    learned: usize,
    /// The longest value, in bytes.
    longest: usize,
}

#[derive(Default)]
struct Node {
    /// Outgoing edges, sorted by byte.
    edges: Vec<(u8, u32)>,
    /// A known value ends here.
    terminal: bool,
}

impl Default for Trie {
    fn default() -> Self {
        Self {
            nodes: vec![Node::default()],
            count: 0,
            learned: 0,
            longest: 0,
        }
    }
}

impl Trie {
    fn child(&self, node: usize, byte: u8) -> Option<usize> {
        let edges = &self.nodes[node].edges;
        edges
            .binary_search_by_key(&byte, |&(b, _)| b)
            .ok()
            .map(|i| edges[i].1 as usize)
    }

    /// Inserts `value`; whether it was new.
    fn insert(&mut self, value: &[u8]) -> bool {
        let mut node = 0;
        for &byte in value {
            node = match self.nodes[node]
                .edges
                .binary_search_by_key(&byte, |&(b, _)| b)
            {
                Ok(i) => self.nodes[node].edges[i].1 as usize,
                Err(i) => {
                    let next = self.nodes.len();
                    let id = u32::try_from(next).expect("fewer than 2^32 trie nodes");
                    self.nodes.push(Node::default());
                    self.nodes[node].edges.insert(i, (byte, id));
                    next
                }
            };
        }
        let new = !self.nodes[node].terminal;
        self.nodes[node].terminal = true;
        self.longest = self.longest.max(value.len());
        self.count += usize::from(new);
        new
    }

    /// Whether walking `text` from the root never leaves the trie: all of
    /// `text` is a prefix of (or is) a known value.
    fn reaches_end(&self, text: &[u8]) -> bool {
        let mut node = 0;
        for &byte in text {
            match self.child(node, byte) {
                Some(next) => node = next,
                None => return false,
            }
        }
        !text.is_empty()
    }

    /// The length of the longest known value that `text` starts with.
    fn longest_match(&self, text: &[u8]) -> Option<usize> {
        let mut node = 0;
        let mut best = None;
        for (i, &byte) in text.iter().enumerate() {
            match self.child(node, byte) {
                Some(next) => node = next,
                None => break,
            }
            if self.nodes[node].terminal {
                best = Some(i + 1);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn escaped_spellings_of_a_value_are_redacted_too() {
        let r = super::Redactor::new();
        r.learn(&super::SecretValue::new(r#"tok"en\sec123"#.to_owned()));
        for text in [
            r#"raw tok"en\sec123"#,
            r#"json {"v":"tok\"en\\sec123"}"#,
            r#"twice "{\"v\":\"tok\\\"en\\\\sec123\"}""#,
        ] {
            let out = r.redact(text);
            assert!(!out.contains("sec123"), "{text} -> {out}");
        }
    }

    #[test]
    fn a_value_outside_ascii_is_redacted_as_ascii_only_json_writes_it() {
        let r = super::Redactor::new();
        r.learn(&super::SecretValue::new("CANARY-é7f3a9".to_owned()));
        r.learn(&super::SecretValue::new("pass😀word-42".to_owned()));
        for text in [
            // Python's json.dumps (ensure_ascii), Java's upper-case hex,
            // and each of them inside another JSON string.
            r#"{"token": "CANARY-\u00e97f3a9"}"#,
            r#"{"token": "CANARY-\u00E97f3a9"}"#,
            r#""{\"token\": \"CANARY-\\u00e97f3a9\"}""#,
            r#""{\"token\": \"CANARY-\\u00E97f3a9\"}""#,
            r#"{"p": "pass\ud83d\ude00word-42"}"#,
            r#"{"p": "pass\uD83D\uDE00word-42"}"#,
        ] {
            let out = r.redact(text);
            assert!(
                !out.contains("7f3a9") && !out.contains("word-42"),
                "{text} -> {out}"
            );
        }
    }

    use super::*;
    use serde_json::json;

    fn redactor(values: &[&str]) -> Redactor {
        let r = Redactor::new();
        for v in values {
            assert_eq!(r.learn(&SecretValue::new(*v)), Learned::Added, "{v}");
        }
        r
    }

    #[test]
    fn short_values_are_refused() {
        let r = Redactor::new();
        for short in ["", "a", "abc", "12345", "ééééé"] {
            assert_eq!(r.learn(&SecretValue::new(short)), Learned::TooShort);
        }
        assert!(r.is_empty());
        assert_eq!(r.redact("a abc 12345"), "a abc 12345");
        assert_eq!(r.learn(&SecretValue::new("éééééé")), Learned::Added);
        assert_eq!(r.learn(&SecretValue::new("éééééé")), Learned::AlreadyKnown);
        assert_eq!(r.len(), 1);
        assert_eq!(format!("{r:?}"), "Redactor { known: 1 }");
    }

    #[test]
    fn redacts_every_occurrence_longest_first() {
        let r = redactor(&["secret", "secret-longer"]);
        assert_eq!(
            r.redact("a secret-longer and a secret, secretsecret"),
            "a <redacted> and a <redacted>, <redacted><redacted>"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert!(r.contains_secret("xxsecretxx"));
        assert!(!r.contains_secret("secre t"));
        assert!(!Redactor::new().contains_secret("secret"));
    }

    #[test]
    fn overlapping_values_leave_no_fragment() {
        // "xxabcd" and "abcdef" overlap in "xxabcdef".
        let r = redactor(&["xxabcd", "abcdef"]);
        assert_eq!(r.redact("1 xxabcdef 2"), "1 <redacted> 2");
        // A chain of overlaps is one region.
        let r = redactor(&["aaaaaa"]);
        assert_eq!(r.redact("aaaaaaaa."), "<redacted>.");
        // Shared prefixes: the longest wins, a shorter one still matches.
        let r = redactor(&["sk-proj-111111", "sk-proj-222222", "sk-pro"]);
        assert_eq!(
            r.redact("sk-proj-222222 sk-proj-1 sk-proj-111111"),
            "<redacted> <redacted>j-1 <redacted>"
        );
        // Non-ASCII values and text.
        let r = redactor(&["pässwörd"]);
        assert_eq!(r.redact("ä pässwörd ö"), "ä <redacted> ö");
    }

    #[test]
    fn a_window_cut_through_a_value_keeps_no_piece_of_it() {
        // The longer value's escaped spellings make `longest` 23 bytes: a
        // drop that long would halve the short value lying across it, were
        // a value found whole not dropped whole.
        let (value, short) = ("sk-wïndow-7f3a9c", "short1");
        let r = redactor(&[value, short]);
        let text = format!("aaaa {value} {short} bbbb {short} {value} cccc");
        let bytes = text.as_bytes();
        // Every window: a cut edge may go through either value anywhere.
        for start in 0..bytes.len() {
            for end in start..=bytes.len() {
                let (out, dropped) =
                    r.redact_window(&bytes[start..end], start > 0, end < bytes.len());
                for v in [value, short] {
                    for (k, _) in v.char_indices() {
                        for piece in [&v[k..], &v[..k]] {
                            if piece.len() >= 3 {
                                assert!(!out.contains(piece), "{start}..{end}: {out:?}");
                            }
                        }
                    }
                }
                assert_eq!(
                    dropped,
                    (start > 0 || end < bytes.len()) && !bytes[start..end].is_empty(),
                    "{start}..{end}"
                );
                assert!(!out.contains('\u{fffd}'), "{start}..{end}: {out:?}");
            }
        }
        // Nothing cut: nothing dropped, every copy redacted.
        assert_eq!(
            r.redact_window(bytes, false, false),
            (
                "aaaa <redacted> <redacted> bbbb <redacted> <redacted> cccc".to_owned(),
                false
            )
        );
        // Cut before only: the head loses `longest - 1` bytes (here `aaaa`
        // and the first value); the rest stays.
        let (out, dropped) = r.redact_window(bytes, true, false);
        assert!(dropped);
        assert_eq!(out, " <redacted> bbbb <redacted> <redacted> cccc");
        // No value known: nothing to drop for.
        assert_eq!(
            Redactor::new().redact_window(b"abc", true, true),
            ("abc".to_owned(), false)
        );
    }

    #[test]
    fn redaction_is_idempotent_and_masks_urls() {
        let r = redactor(&["redacted", "hunter22"]);
        let once = r
            .redact("x redacted hunter22 postgres://u:pw@db/x")
            .into_owned();
        assert_eq!(once, "x <redacted> <redacted> postgres://u:<redacted>@db/x");
        assert_eq!(r.redact(&once), once);
        let clone = r.clone();
        clone.learn(&SecretValue::new("learned-by-clone"));
        assert_eq!(r.redact("learned-by-clone"), "<redacted>");
    }

    #[test]
    fn redact_json_scrubs_strings_keys_and_sensitive_keys() {
        let r = redactor(&["canary-777", "424242"]);
        let doc = json!({
            "api_key": {"nested": 1},
            "password": null,
            "note": "token canary-777 here",
            "list": ["canary-777", 1, true, {"sessionToken": "plain"}],
            "pin": 4242421,
            "count": 12,
            "canary-777": "k",
            "dsn": "mysql://root:toor@h/db",
        });
        let got = r.redact_json(&doc);
        assert_eq!(
            got,
            json!({
                "api_key": "<redacted>",
                "password": "<redacted>",
                "note": "token <redacted> here",
                "list": ["<redacted>", 1, true, {"sessionToken": "<redacted>"}],
                "pin": "<redacted>",
                "count": 12,
                "<redacted:1>": "k",
                "dsn": "mysql://root:<redacted>@h/db",
            })
        );
        assert!(!got.to_string().contains("canary-777"));
        assert_eq!(r.redact_json(&got), got, "idempotent");
    }

    #[test]
    fn redact_foreign_numbers_keys_and_keeps_values_under_names() {
        let r = redactor(&["canary-777", "other-888"]);
        let doc = json!({
            "tokens": ["a", "b"],
            "password": "plain",
            "canary-777": "canary-777",
            "x-other-888": 1,
            "<redacted:1>": "was here",
            "dsn": "mysql://root:toor@h/db",
        });
        let got = r.redact_foreign(&doc);
        assert_eq!(
            got,
            json!({
                "tokens": ["a", "b"],
                "password": "plain",
                "<redacted:1>": "was here",
                "<redacted:2>": "<redacted>",
                "<redacted:3>": 1,
                "dsn": "mysql://root:<redacted>@h/db",
            })
        );
        assert_eq!(r.redact_foreign(&got), got, "idempotent");
    }

    #[test]
    fn redact_document_never_touches_keys() {
        // A secret that spells a label chassis writes.
        let r = redactor(&["tokens", "answer-key"]);
        let doc = json!({
            "tokens": 12,
            "answer": "the answer-key is answer-key",
            "rows": [{ "dimension": "tokens", "api_key": "plain" }],
        });
        assert_eq!(
            r.redact_document(&doc),
            json!({
                "tokens": 12,
                "answer": "the <redacted> is <redacted>",
                "rows": [{ "dimension": "<redacted>", "api_key": "plain" }],
            })
        );
    }

    #[test]
    fn many_values_one_pass() {
        let r = Redactor::new();
        for i in 0..2000 {
            r.learn(&SecretValue::new(format!("sk-{i:06}-key")));
        }
        let text = "sk-001999-key ".repeat(1000);
        let got = r.redact(&text);
        assert_eq!(got, "<redacted> ".repeat(1000));
    }
}
