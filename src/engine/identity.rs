//! Derived identifiers: generation ids and plugin instance ids.
//!
//! Both are derived rather than random so that the same composition in the
//! same store state yields the same full digest on every machine:
//! - a generation id is `gen_` + its sequence zero-padded to at least four
//!   digits (`gen_0001`, …, `gen_10000`);
//! - an instance id is `plugin_` + the first 12 hex digits of the SHA-256 of
//!   the canonical JSON `["<entry id>", <mount number>]`, where the mount
//!   number counts the entry's mounts in its store, starting at 1.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use super::canonical::write_json_string;
use super::model::EntryId;

/// A generation id such as `gen_0001`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GenerationId {
    sequence: u64,
}

impl GenerationId {
    /// The id of generation `sequence` (1-based).
    pub fn from_sequence(sequence: u64) -> Self {
        Self { sequence }
    }

    /// The first generation of an empty store.
    pub fn first() -> Self {
        Self { sequence: 1 }
    }

    /// The sequence number.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Parse `gen_0001`.
    pub fn parse(text: &str) -> Option<Self> {
        let digits = text.strip_prefix("gen_")?;
        if digits.len() < 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let sequence: u64 = digits.parse().ok()?;
        (Self { sequence }.to_string() == text).then_some(Self { sequence })
    }
}

impl fmt::Display for GenerationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gen_{:04}", self.sequence)
    }
}

/// The instance id of the `mount`-th mount of `entry` in its store.
pub fn instance_id(entry: &EntryId, mount: u64) -> String {
    instance_id_text(entry, mount).as_str().to_owned()
}

/// [`instance_id`] as shared text (one allocation: a snapshot takes one per
/// active entry).
pub fn instance_id_arc(entry: &EntryId, mount: u64) -> Arc<str> {
    Arc::from(instance_id_text(entry, mount).as_str())
}

/// The `plugin_` prefix of every instance id.
const INSTANCE_PREFIX: &[u8] = b"plugin_";

/// An instance id's text, on the stack.
struct InstanceIdText([u8; INSTANCE_PREFIX.len() + 12]);

impl InstanceIdText {
    fn as_str(&self) -> &str {
        // Written from the ASCII prefix and hex digits only.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The canonical JSON `["<entry id>",<mount>]` fed straight to SHA-256 (no
/// buffer to clear, no formatter for the number), then the id's text.
fn instance_id_text(entry: &EntryId, mount: u64) -> InstanceIdText {
    /// Feeds written text to the hasher.
    struct Feed<'h>(&'h mut Sha256);
    impl fmt::Write for Feed<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.update(s.as_bytes());
            Ok(())
        }
    }
    let mut h = Sha256::new();
    h.update(b"[");
    // Writing into the hasher cannot fail.
    let _ = write_json_string(entry.as_str(), &mut Feed(&mut h));
    // `,<mount>]`, the digits written from the right.
    let mut tail = [0u8; 22];
    let mut at = tail.len() - 1;
    tail[at] = b']';
    let mut n = mount;
    loop {
        at -= 1;
        tail[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    at -= 1;
    tail[at] = b',';
    h.update(&tail[at..]);
    let digest: [u8; 32] = h.finalize().into();
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [0u8; INSTANCE_PREFIX.len() + 12];
    text[..INSTANCE_PREFIX.len()].copy_from_slice(INSTANCE_PREFIX);
    for (i, &b) in digest[..6].iter().enumerate() {
        text[INSTANCE_PREFIX.len() + 2 * i] = HEX[usize::from(b >> 4)];
        text[INSTANCE_PREFIX.len() + 2 * i + 1] = HEX[usize::from(b & 0x0f)];
    }
    InstanceIdText(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_ids_pad_to_four_digits_and_grow() {
        assert_eq!(GenerationId::first().to_string(), "gen_0001");
        assert_eq!(GenerationId::from_sequence(12345).to_string(), "gen_12345");
        assert_eq!(
            GenerationId::parse("gen_0042"),
            Some(GenerationId::from_sequence(42))
        );
        assert_eq!(GenerationId::parse("gen_42"), None);
        assert_eq!(GenerationId::parse("gen_00042"), None);
    }

    #[test]
    fn instance_ids_hash_the_canonical_pair() {
        use crate::engine::canonical::{Canon, stable_hash};
        for (id, mount) in [
            ("postgres", 1),
            ("a\"b", 7),
            ("x", u64::MAX),
            ("back\\slash", 0),
            ("ten", 10),
            ("ünïcode-\u{202e}", 1_000_000),
        ] {
            let payload = Canon::List(vec![Canon::from(id), Canon::from(mount)]);
            let digest = stable_hash(&payload).unwrap();
            let entry = EntryId::new(id).unwrap();
            assert_eq!(
                instance_id(&entry, mount),
                format!("plugin_{}", &digest[..12])
            );
            assert_eq!(&*instance_id_arc(&entry, mount), instance_id(&entry, mount));
        }
    }
}
