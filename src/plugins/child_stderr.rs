//! A child process's stderr as redacted log lines: what process plugins and
//! MCP servers print is logged, and must never carry a secret.
//!
//! Why one reader for both: the stream is read to its end whatever it holds
//! (a pipe left unread blocks the child on its next write), so a long line
//! is cut into pieces and bytes that are not UTF-8 are shown as
//! replacement characters. Redacting each piece on its own let a secret
//! that straddled a cut through, half in one log line and half in the next;
//! and a reader that stopped at the first byte that was not UTF-8 left the
//! pipe to fill. Here the whole stream, line breaks included, passes
//! through one [`StreamingRedactor`] (which holds back what may still be
//! the start of a secret until what follows decides it), so a value cut by
//! a piece boundary, or one with line breaks in it (a PEM key, a
//! service-account JSON) written over several lines, is redacted whole; a
//! character cut in two by a piece boundary is carried over whole to the
//! next piece.

use std::collections::VecDeque;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use crate::engine::secret::{Redactor, StreamingRedactor};

/// The longest piece of a line read at once (a longer line is logged in
/// pieces of about this size).
pub const PIECE_BYTES: usize = 8 << 10;

/// Reads a child's stderr into redacted lines.
pub struct StderrLines<R> {
    reader: BufReader<R>,
    stream: StreamingRedactor,
    /// The bytes of a character a piece boundary cut in two.
    carry: Vec<u8>,
    raw: Vec<u8>,
    /// Released text whose line has not ended yet.
    partial: String,
    /// Lines released whole, oldest first.
    ready: VecDeque<String>,
    done: bool,
}

impl<R: AsyncRead + Unpin> StderrLines<R> {
    /// Lines of `stderr`, redacted with what `redactor` knows (and learns
    /// meanwhile).
    pub fn new(stderr: R, redactor: Redactor) -> Self {
        Self {
            reader: BufReader::new(stderr),
            stream: StreamingRedactor::new(redactor),
            carry: Vec::new(),
            raw: Vec::new(),
            partial: String::new(),
            ready: VecDeque::new(),
            done: false,
        }
    }

    /// The next line, or piece of a long line (without its line break),
    /// redacted; `None` once the stream ended (or failed). A line that ends
    /// with what may be the start of a secret written over several lines
    /// is returned once the next line decides it.
    pub async fn next_line(&mut self) -> Option<String> {
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Some(line);
            }
            if self.done {
                return None;
            }
            self.raw.clear();
            self.raw.append(&mut self.carry);
            let read = (&mut self.reader)
                .take(PIECE_BYTES as u64)
                .read_until(b'\n', &mut self.raw)
                .await;
            if matches!(read, Ok(0) | Err(_)) {
                self.done = true;
            }
            let line_ended = self.raw.last() == Some(&b'\n');
            let whole = if line_ended || self.done {
                self.raw.len()
            } else {
                complete_prefix(&self.raw)
            };
            self.carry = self.raw.split_off(whole);
            let released = self.stream.push(&String::from_utf8_lossy(&self.raw));
            self.partial.push_str(&released);
            if self.done {
                let rest = self.stream.finish();
                self.partial.push_str(&rest);
            }
            self.take_lines(!line_ended || self.done);
        }
    }

    /// Move every line `partial` holds whole into `ready`; with `flush`,
    /// what is left too (a piece of a long line, or the stream's end).
    fn take_lines(&mut self, flush: bool) {
        while let Some(end) = self.partial.find('\n') {
            let rest = self.partial.split_off(end + 1);
            let line = std::mem::replace(&mut self.partial, rest);
            self.ready.push_back(line.trim_end().to_owned());
        }
        if flush && !self.partial.is_empty() {
            let piece = std::mem::take(&mut self.partial);
            let piece = if self.done {
                piece.trim_end().to_owned()
            } else {
                piece
            };
            self.ready.push_back(piece);
        }
    }
}

/// How much of `bytes` ends on a character boundary: all of it, unless its
/// last character is cut short (then up to where that character starts).
fn complete_prefix(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(4) {
        let byte = bytes[n - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: the character starts earlier
        }
        let needs = match byte {
            0xF0..=0xF7 => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1, // ASCII, or a byte no character starts with
        };
        return if needs > back { n - back } else { n };
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::secret::SecretValue;

    const CANARY: &str = "CANARY-é7f3a9-stderr";

    async fn lines_of(bytes: Vec<u8>) -> Vec<String> {
        let redactor = Redactor::new();
        redactor.learn(&SecretValue::new(CANARY.to_owned()));
        let mut lines = StderrLines::new(std::io::Cursor::new(bytes), redactor);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().await {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn a_secret_across_a_piece_boundary_is_redacted() {
        // The canary straddles the 8 KiB cut at every offset around it.
        for before in PIECE_BYTES - CANARY.len()..PIECE_BYTES + 2 {
            let mut text = "x".repeat(before);
            text.push_str(CANARY);
            text.push_str(" after\nnext line\n");
            let lines = lines_of(text.into_bytes()).await;
            let all = lines.concat();
            assert!(!all.contains("CANARY"), "{before}: {lines:?}");
            // No line ends with the start of the value or begins with its
            // rest: nothing of it was cut in two.
            for (k, _) in CANARY.char_indices().skip(1) {
                let (head, tail) = CANARY.split_at(k);
                for l in &lines {
                    assert!(!l.ends_with(head), "{before}: {head:?} ends {l:?}");
                    assert!(!l.starts_with(tail), "{before}: {tail:?} starts {l:?}");
                }
            }
            assert!(all.contains("<redacted> after"), "{before}: {lines:?}");
            assert_eq!(lines.last().map(String::as_str), Some("next line"));
        }
    }

    #[tokio::test]
    async fn a_secret_written_over_several_lines_is_redacted_whole() {
        // A PEM-like value: its first line alone is an ordinary line, so a
        // reader that redacts line by line lets every line of it through.
        let pem = "-----BEGIN KEY-----\nMIIcanary7f3a9\n-----END KEY-----";
        let redactor = Redactor::new();
        redactor.learn(&SecretValue::new(pem.to_owned()));
        let text = format!("loading\n{pem}\n-----BEGIN KEY-----\nnot it\nlast");
        let mut lines = StderrLines::new(std::io::Cursor::new(text.into_bytes()), redactor);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().await {
            out.push(line);
        }
        assert_eq!(
            out,
            vec![
                "loading",
                "<redacted>",
                "-----BEGIN KEY-----",
                "not it",
                "last"
            ]
        );
    }

    #[tokio::test]
    async fn a_character_cut_by_a_boundary_is_kept_whole() {
        let mut text = "x".repeat(PIECE_BYTES - 1);
        text.push('é');
        text.push('\n');
        let lines = lines_of(text.into_bytes()).await;
        assert!(lines.concat().ends_with("xé"), "{lines:?}");
        assert!(!lines.concat().contains('\u{fffd}'), "{lines:?}");
    }

    #[tokio::test]
    async fn bytes_that_are_not_utf8_do_not_stop_the_reading() {
        let mut bytes = b"bad \xff\xfe bytes\n".to_vec();
        bytes.extend_from_slice(format!("then {CANARY}\nlast").as_bytes());
        let lines = lines_of(bytes).await;
        assert_eq!(
            lines,
            vec!["bad \u{fffd}\u{fffd} bytes", "then <redacted>", "last"]
        );
    }

    #[test]
    fn complete_prefix_stops_before_a_cut_character() {
        let e = "é".as_bytes();
        assert_eq!(complete_prefix(b"abc"), 3);
        assert_eq!(complete_prefix(&[b'a', e[0]]), 1);
        assert_eq!(complete_prefix(&[b'a', e[0], e[1]]), 3);
        let four = "😀".as_bytes();
        assert_eq!(complete_prefix(&four[..3]), 0);
        assert_eq!(complete_prefix(four), 4);
        assert_eq!(complete_prefix(&[0xff]), 1);
    }
}
