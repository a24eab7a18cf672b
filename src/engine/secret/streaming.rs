//! [`StreamingRedactor`]: redaction of text that arrives in pieces (a
//! model's answer streamed token by token). A secret split across two
//! pieces must be caught, so what could still be the start of a known
//! value is held back until the next piece (or the end) decides it; the
//! rest is released redacted.

use super::Redactor;

/// Redacts a stream of text pieces.
#[derive(Debug)]
pub struct StreamingRedactor {
    redactor: Redactor,
    held: String,
}

impl StreamingRedactor {
    /// A stream redacted with what `redactor` knows (and learns meanwhile).
    #[must_use]
    pub fn new(redactor: Redactor) -> Self {
        Self {
            redactor,
            held: String::new(),
        }
    }

    /// Take `piece`; what can be released now, redacted (maybe nothing).
    pub fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        let mut split = self
            .redactor
            .releasable(&self.held)
            .min(unfinished_url(&self.held));
        // Only a run of overlapping values (`000000…` for `000000`) is held
        // this long; released as it stands it is all `<redacted>` but for
        // less than one value at its end. Memory stays bounded.
        if self.held.len() - split > MAX_HELD {
            split = self.held.len();
        }
        let out = self.redactor.redact(&self.held[..split]).into_owned();
        self.held.drain(..split);
        out
    }

    /// The stream ended: what was held, redacted.
    pub fn finish(&mut self) -> String {
        let out = self.redactor.redact(&self.held).into_owned();
        self.held.clear();
        out
    }
}

/// The most a stream holds back before releasing it regardless.
const MAX_HELD: usize = 64 << 10;

/// The longest URL authority held back (a longer one is released as it is).
const MAX_AUTHORITY: usize = 512;

/// Where a URL whose authority (`user:password@host`) has not ended yet
/// begins, else the end of `text`: its password is masked only when the
/// whole authority is redacted at once.
fn unfinished_url(text: &str) -> usize {
    // Only the end of the text can hold an unfinished URL: look at no more
    // of it than the longest authority and scheme held (so a long stream
    // is never scanned whole on every piece).
    let mut from = text.len().saturating_sub(MAX_AUTHORITY + MAX_SCHEME + 3);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    from + unfinished_url_in(&text[from..])
}

/// The longest scheme held back.
const MAX_SCHEME: usize = 32;

fn unfinished_url_in(text: &str) -> usize {
    let scheme_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.');
    // What may still become `scheme://`: a short trailing word, with `:`
    // or `:/`.
    let bare = text.trim_end_matches(":/").trim_end_matches(':');
    let word = bare.trim_end_matches(scheme_char);
    let maybe_scheme = if word.len() < text.len() && bare.len() - word.len() <= MAX_SCHEME {
        word.len()
    } else {
        text.len()
    };
    let Some(at) = text.rfind("://") else {
        return maybe_scheme;
    };
    let authority = &text[at + 3..];
    let ended = authority.len() > MAX_AUTHORITY
        || authority
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>'));
    if ended {
        return maybe_scheme;
    }
    text[..at]
        .rfind(|c: char| !scheme_char(c))
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::secret::SecretValue;

    const CANARY: &str = "sk-canary-stream-93f1";

    #[test]
    fn a_run_of_overlapping_values_is_released_past_a_bound() {
        let r = Redactor::new();
        r.learn(&SecretValue::new("aaaaaa".to_owned()));
        let mut s = StreamingRedactor::new(r);
        let mut out = String::new();
        for _ in 0..100 {
            out.push_str(&s.push(&"a".repeat(8 << 10)));
            assert!(s.held.len() <= MAX_HELD + (8 << 10), "{}", s.held.len());
        }
        out.push_str(&s.finish());
        // Released as it went (each release is one marker), not at the end.
        assert!(out.matches("<redacted>").count() > 5, "{out}");
        assert!(!out.contains("aaaaaa"), "a value in what was released");
    }

    fn redactor() -> Redactor {
        let r = Redactor::new();
        r.learn(&SecretValue::new(CANARY.to_owned()));
        r.learn(&SecretValue::new("qqq-other-secret".to_owned()));
        r
    }

    /// Every way of cutting `text` into pieces of `size` bytes (on char
    /// boundaries) releases the redacted text, never a fragment of a value.
    fn streamed(text: &str, size: usize) -> String {
        let mut s = StreamingRedactor::new(redactor());
        let mut out = String::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = size.min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            let released = s.push(&rest[..cut]);
            for w in 4..=CANARY.len() {
                for frag in CANARY.as_bytes().windows(w) {
                    let frag = std::str::from_utf8(frag).unwrap();
                    assert!(
                        !released.contains(frag) || text.replace(CANARY, "").contains(frag),
                        "released {released:?} holds {frag:?}"
                    );
                }
            }
            out.push_str(&released);
            rest = &rest[cut..];
        }
        out.push_str(&s.finish());
        out
    }

    #[test]
    fn a_secret_split_across_pieces_is_caught() {
        let text = format!("the key is {CANARY}, and é again {CANARY}! qqq-other-secret ok");
        let whole = redactor().redact(&text).into_owned();
        assert!(!whole.contains(CANARY));
        for size in 1..=text.len() {
            assert_eq!(streamed(&text, size), whole, "pieces of {size}");
        }
    }

    #[test]
    fn a_long_run_of_a_repeating_secret_is_held_cheaply_and_released_whole() {
        let r = Redactor::new();
        r.learn(&SecretValue::new("000000".to_owned()));
        let mut s = StreamingRedactor::new(r.clone());
        let mut out = String::new();
        let started = std::time::Instant::now();
        for _ in 0..20_000 {
            out.push_str(&s.push("00000"));
        }
        out.push_str(&s.push(" then words"));
        out.push_str(&s.finish());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(!out.contains("00"), "{}", &out[..out.len().min(80)]);
        assert!(out.ends_with(" then words"), "{out}");
    }

    #[test]
    fn a_url_password_split_across_pieces_is_masked() {
        let text = "fetch https://alice:hunter2pass@db.example/x now";
        let whole = Redactor::new().redact(text).into_owned();
        assert!(!whole.contains("hunter2pass"), "{whole}");
        for size in 1..=text.len() {
            let mut s = StreamingRedactor::new(Redactor::new());
            let mut out = String::new();
            for piece in text.as_bytes().chunks(size) {
                let released = s.push(std::str::from_utf8(piece).unwrap());
                assert!(!released.contains("hunter"), "{released}");
                out.push_str(&released);
            }
            out.push_str(&s.finish());
            assert_eq!(out, whole, "pieces of {size}");
        }
    }

    #[test]
    fn text_without_a_secret_is_released_at_once_but_a_possible_start() {
        let mut s = StreamingRedactor::new(redactor());
        assert_eq!(s.push("hello "), "hello ");
        // `sk-ca` could begin the canary: held.
        assert_eq!(s.push("sk-ca"), "");
        assert_eq!(s.push("t "), "sk-cat ");
        assert_eq!(s.finish(), "");
        // A trailing word could begin a URL's scheme: held to its end.
        let mut s = StreamingRedactor::new(Redactor::new());
        assert_eq!(s.push("see sk-ca"), "see ");
        assert_eq!(s.push("t."), "");
        assert_eq!(s.push(" Done"), "sk-cat. ");
        assert_eq!(s.finish(), "Done");
    }
}
