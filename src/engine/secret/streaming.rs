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
        let split = self.redactor.releasable(&self.held);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::secret::SecretValue;

    const CANARY: &str = "sk-canary-stream-93f1";

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
    fn text_without_a_secret_is_released_at_once_but_a_possible_start() {
        let mut s = StreamingRedactor::new(redactor());
        assert_eq!(s.push("hello "), "hello ");
        // `sk-ca` could begin the canary: held.
        assert_eq!(s.push("sk-ca"), "");
        assert_eq!(s.push("t"), "sk-cat");
        assert_eq!(s.finish(), "");
        let mut s = StreamingRedactor::new(Redactor::new());
        assert_eq!(s.push("sk-ca"), "sk-ca");
    }
}
