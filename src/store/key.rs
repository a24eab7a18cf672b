//! The per-store key and the keyed fingerprints made with it.
//!
//! Identity across processes compares configuration (and, once secrets are
//! resolved at mount, secret values) through fingerprints. A plain hash of a
//! low-entropy value can be guessed offline, so the store keeps
//! HMAC-SHA256 fingerprints keyed by a random 32-byte key created with the
//! store. The key is never printed, logged or exported.

use crate::engine::secret::HmacKey;
use std::io::Read;

/// The store's secret key, with its HMAC pads hashed once.
#[derive(Clone)]
pub struct StoreKey([u8; 32], HmacKey);

impl std::fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreKey(<redacted>)")
    }
}

impl StoreKey {
    /// 32 bytes from the operating system (`/dev/urandom`).
    pub fn generate() -> std::io::Result<Self> {
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(Self::new(bytes))
    }

    fn new(bytes: [u8; 32]) -> Self {
        Self(bytes, HmacKey::new(&bytes))
    }

    /// A key from stored bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        Some(Self::new(bytes.try_into().ok()?))
    }

    /// The raw bytes (for storing only).
    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Hex HMAC-SHA256 of `value` under this key, domain-separated by
    /// `purpose`.
    pub fn fingerprint(&self, purpose: &str, value: &str) -> String {
        crate::engine::canonical::hex_lower(&self.1.mac(&[
            purpose.as_bytes(),
            &[0],
            value.as_bytes(),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_an_independent_implementation() {
        // Python: hmac.new(b"\x0b" * 32, b"Hi There", hashlib.sha256).hexdigest()
        use crate::engine::canonical::hex_lower;
        use crate::engine::secret::hmac_sha256;
        let key = StoreKey::new([0x0b; 32]);
        // The precomputed pads give what HMAC over the raw key gives.
        let mac = hex_lower(&key.1.mac(&[b"Hi ", b"There"]));
        assert_eq!(
            mac,
            "198a607eb44bfbc69903a0f1cf2bbdc5ba0aa3f3d9ae3c1c7a3b1696a0b68cf7"
        );
        assert_eq!(mac, hex_lower(&hmac_sha256(&key.0, b"Hi There")));
        // purpose, a NUL, then the value.
        assert_eq!(
            key.fingerprint("config", "abc"),
            hex_lower(&hmac_sha256(&key.0, b"config\0abc"))
        );
        assert_ne!(key.fingerprint("a", "x"), key.fingerprint("b", "x"));
        assert_eq!(format!("{key:?}"), "StoreKey(<redacted>)");
    }
}
