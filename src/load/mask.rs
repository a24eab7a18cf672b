//! Lexical masking of secret-looking values in TOML text.
//!
//! This works on raw text, not on a parsed tree, so that it also protects
//! files with syntax errors: the text shown next to a diagnostic must never
//! contain the value of `api_key = "..."`, however broken the file is.
//! Masked bytes become `*` (line breaks are kept), so every byte offset and
//! line number stays valid.

/// Replace, in `text`, the content of every string literal assigned to a key
/// for which `sensitive` holds (the last segment of a bare, quoted or dotted
/// key; inside inline tables and arrays too), and the password of every URL
/// `scheme://user:password@host`. Returns `None` when nothing was masked.
pub fn mask_secrets(text: &str, sensitive: impl Fn(&str) -> bool) -> Option<String> {
    let mut ranges = Vec::new();
    string_ranges(text, &sensitive, &mut ranges);
    value_repeats(text, &mut ranges);
    url_password_ranges(text, &mut ranges);
    if ranges.is_empty() {
        return None;
    }
    Some(mask_ranges(text, ranges))
}

/// Every other string literal that holds a value masked so far (one typed
/// under `password` and again under `note` is the same secret): masked
/// whole. Only values of at least [`crate::engine::secret::MIN_SECRET_LEN`]
/// characters, as the redactor learns them; one pass over the literals,
/// each checked against them all at once.
fn value_repeats(text: &str, ranges: &mut Vec<(usize, usize)>) {
    let known = crate::engine::secret::Redactor::new();
    let mut any = false;
    for value in ranges
        .iter()
        .filter_map(|&(start, end)| text.get(start..end))
    {
        let learned = known.learn(&crate::engine::secret::SecretValue::new(value.to_owned()));
        any |= learned != crate::engine::secret::Learned::TooShort;
    }
    if !any {
        return;
    }
    let mut literals = Vec::new();
    string_ranges(text, &|_| true, &mut literals);
    for (start, end) in literals {
        if text
            .get(start..end)
            .is_some_and(|l| known.contains_secret(l))
        {
            ranges.push((start, end));
        }
    }
}

/// `text` with every byte in `ranges` (clamped to the text) replaced by
/// `*`, line breaks kept, so offsets and line numbers stay valid.
pub fn mask_ranges(text: &str, ranges: impl IntoIterator<Item = (usize, usize)>) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for (start, end) in ranges {
        // Widened to char boundaries, so every char touched is replaced
        // whole and the result stays UTF-8 of the same length.
        let mut end = end.min(text.len());
        let mut start = start.min(end);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        while !text.is_char_boundary(end) {
            end += 1;
        }
        for b in &mut bytes[start..end] {
            if *b != b'\n' && *b != b'\r' {
                *b = b'*';
            }
        }
    }
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[derive(Clone, Copy, PartialEq)]
enum Frame {
    /// An inline table `{ ... }`.
    Table,
    /// An array `[ ... ]`.
    Array,
}

/// Collect the content ranges of string literals under sensitive keys.
fn string_ranges(text: &str, sensitive: &dyn Fn(&str) -> bool, out: &mut Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let mut i = 0;
    // Inline tables and arrays we are inside of, with the key their value
    // belongs to (restored when they close).
    let mut frames: Vec<(Frame, Option<String>)> = Vec::new();
    // The last key-like token (bare word or string) seen.
    let mut candidate: Option<String> = None;
    // The key whose value we are reading, if any.
    let mut value_key: Option<String> = None;
    // Whether a line is reading a value (after `=`).
    let mut in_value = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\n' => {
                if frames.is_empty() {
                    in_value = false;
                    value_key = None;
                }
                candidate = None;
            }
            b'"' | b'\'' => {
                let (content, next) = scan_string(b, i);
                let masked = in_value && value_key.as_deref().is_some_and(sensitive);
                if masked {
                    out.push(content);
                }
                candidate = Some(text[content.0..content.1].to_owned());
                i = next;
                continue;
            }
            b'=' => {
                value_key = candidate.take();
                in_value = true;
            }
            b'[' if !in_value && frames.is_empty() => {
                // A table header: skip to `]` or the end of the line; strings
                // inside are keys, never masked.
                while i < b.len() && b[i] != b'\n' {
                    if b[i] == b'"' || b[i] == b'\'' {
                        i = scan_string(b, i).1;
                        continue;
                    }
                    if b[i] == b']' && b.get(i + 1) != Some(&b']') {
                        break;
                    }
                    i += 1;
                }
                candidate = None;
            }
            b'[' => frames.push((Frame::Array, value_key.clone())),
            b'{' => {
                frames.push((Frame::Table, value_key.clone()));
                in_value = false;
                value_key = None;
                candidate = None;
            }
            b']' | b'}' => {
                if let Some((_, key)) = frames.pop() {
                    value_key = key;
                    in_value = true;
                }
            }
            b',' => {
                if frames.last().is_some_and(|(f, _)| *f == Frame::Table) {
                    in_value = false;
                    value_key = None;
                }
                candidate = None;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-')
                {
                    i += 1;
                }
                candidate = Some(text[start..i].to_owned());
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// Scan the string literal starting at `start` (a quote). Returns the content
/// range and the index after the closing quote (or where an unterminated
/// string ends: the end of the line, or of the text for multi-line strings).
fn scan_string(b: &[u8], start: usize) -> ((usize, usize), usize) {
    let q = b[start];
    let multi = b.get(start + 1) == Some(&q) && b.get(start + 2) == Some(&q);
    if multi {
        let content = start + 3;
        let mut i = content;
        while i < b.len() {
            if q == b'"' && b[i] == b'\\' {
                i += 2;
                continue;
            }
            if b[i] == q && b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q) {
                // Up to two extra quotes may belong to the content.
                let mut end = i;
                while b.get(end + 3) == Some(&q) && end < i + 2 {
                    end += 1;
                }
                return ((content, end), end + 3);
            }
            i += 1;
        }
        let end = b.len();
        return ((content.min(end), end), end);
    }
    let content = start + 1;
    let mut i = content;
    while i < b.len() && b[i] != b'\n' {
        if q == b'"' && b[i] == b'\\' && i + 1 < b.len() && b[i + 1] != b'\n' {
            i += 2;
            continue;
        }
        if b[i] == q {
            return ((content, i), i + 1);
        }
        i += 1;
    }
    // Unterminated: the content runs to the end of the line.
    let mut end = i.min(b.len());
    if end > content && b[end - 1] == b'\r' {
        end -= 1;
    }
    ((content, end.max(content)), end.max(content))
}

/// Collect the password ranges of `scheme://user:password@host` URLs.
fn url_password_ranges(text: &str, out: &mut Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(pos) = text[from..].find("://") {
        let authority = from + pos + 3;
        let mut end = authority;
        while end < b.len()
            && !matches!(
                b[end],
                b'/' | b'?' | b'#' | b'"' | b'\'' | b'\n' | b'\r' | b' ' | b'\t'
            )
        {
            end += 1;
        }
        let auth = &text[authority..end];
        if let Some(at) = auth.rfind('@')
            && let Some(colon) = auth[..at].find(':')
            && colon + 1 < at
        {
            out.push((authority + colon + 1, authority + at));
        }
        from = end.max(authority);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sens(k: &str) -> bool {
        let k = k.to_ascii_lowercase();
        k.contains("key") || k.contains("password") || k.contains("token")
    }

    fn mask(t: &str) -> String {
        mask_secrets(t, sens).unwrap_or_else(|| t.to_owned())
    }

    #[test]
    fn a_masked_value_is_masked_wherever_else_it_is_typed() {
        let t = "c = { password = \"CANARY-9c1e-secret\", note = \"CANARY-9c1e-secret\" }\nid = \"abc\"\n";
        let m = mask(t);
        assert_eq!(m.len(), t.len());
        assert!(!m.contains("CANARY"), "{m}");
        assert!(m.contains("note = \"******************\""), "{m}");
        // A short value is not hunted through the file.
        let t = "password = \"abc\"\nname = \"abc\"\n";
        assert!(mask(t).contains("name = \"abc\""));
    }

    #[test]
    fn masks_sensitive_values_only() {
        let t = "api_key = \"sk-canary-123456\"\nname = \"x\"\n";
        let m = mask(t);
        assert_eq!(m.len(), t.len());
        assert!(!m.contains("sk-canary"), "{m}");
        assert!(m.contains("name = \"x\""));
        assert!(m.contains("api_key = \"****************\""));
    }

    #[test]
    fn masks_dotted_quoted_inline_and_arrays() {
        for t in [
            "config.api_key = 'sk-canary-123456'",
            "\"api_key\" = \"sk-canary-123456\"",
            "config = { name = \"a\", api_key = \"sk-canary-123456\" }",
            "tokens = [\"sk-canary-123456\",\n  \"sk-canary-123456\"]",
            "password = \"\"\"\nsk-canary-123456\"\"\"",
            "x = { y = { token = \"sk-canary-123456\" } }",
        ] {
            let m = mask(t);
            assert!(!m.contains("canary"), "{t} -> {m}");
            assert_eq!(m.len(), t.len());
        }
        let t = "config = { name = \"visible\", api_key = \"s\" }";
        assert!(mask(t).contains("visible"));
    }

    #[test]
    fn masks_despite_syntax_errors() {
        for t in [
            "api_key = \"sk-canary-123456\"\nthis is = = broken [\n",
            "x = [1, 2\napi_key = \"sk-canary-123456\"\n",
            "x = { a = 1\napi_key = \"sk-canary-123456\"\n",
            "api_key = \"sk-canary-123456\n",
            "[broken\napi_key = \"sk-canary-123456\"",
        ] {
            assert!(!mask(t).contains("canary"), "{t} -> {}", mask(t));
        }
    }

    #[test]
    fn masks_url_passwords() {
        let t = "dsn = \"postgres://app:hunter2@db:5432/x\"\n# see https://example.com/a:b@c\n";
        let m = mask(t);
        assert!(!m.contains("hunter2"), "{m}");
        assert!(m.contains("postgres://app:*******@db:5432/x"));
        assert!(m.contains("https://example.com/a:b@c"));
    }
}
