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

use super::canonical::{Sha256Writer, push_hex_lower, write_json_string};
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
///
/// The canonical JSON `["<entry id>",<mount>]` is written straight into the
/// hasher (a snapshot computes one id per active entry).
pub fn instance_id(entry: &EntryId, mount: u64) -> String {
    use std::fmt::Write as _;
    let mut h = Sha256Writer::new();
    // Writing into the hasher cannot fail.
    let _ = h.write_char('[');
    let _ = write_json_string(entry.as_str(), &mut h);
    let _ = write!(h, ",{mount}]");
    let digest = h.finish();
    let mut out = String::with_capacity("plugin_".len() + 12);
    out.push_str("plugin_");
    push_hex_lower(&digest[..6], &mut out);
    out
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
        for (id, mount) in [("postgres", 1), ("a\"b", 7), ("x", u64::MAX)] {
            let payload = Canon::List(vec![Canon::from(id), Canon::from(mount)]);
            let digest = stable_hash(&payload).unwrap();
            assert_eq!(
                instance_id(&EntryId::new(id).unwrap(), mount),
                format!("plugin_{}", &digest[..12])
            );
        }
    }
}
