//! Keyed fingerprints of secret values.
//!
//! A plain SHA-256 of a secret is a guessing oracle for low-entropy
//! secrets; a fingerprint keyed with a per-installation key is not, yet two
//! processes sharing the key agree on it, so a secret-only configuration
//! change is detectable across processes. HMAC (RFC 2104) is written out
//! here over `sha2` because it is a dozen lines and avoids a dependency.

use sha2::{Digest, Sha256};

use super::SecretValue;

/// SHA-256's block size in bytes.
const BLOCK: usize = 64;

/// The version tag that starts every fingerprinted message, so a future
/// change of encoding cannot collide with this one.
const DOMAIN: &[u8] = b"chassis.secret-fingerprint.v1\0";

/// HMAC-SHA256 of `message` under `key` (RFC 2104; vectors in RFC 4231).
#[must_use]
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    HmacKey::new(key).mac(&[message])
}

/// An HMAC-SHA256 key with its two padded blocks already hashed, so a
/// key used for many messages (a store's, once per node of a publish)
/// pays two compressions per message fewer.
#[derive(Clone)]
pub struct HmacKey {
    inner: Sha256,
    outer: Sha256,
}

impl HmacKey {
    /// The key `key` (hashed first when longer than a block).
    #[must_use]
    pub fn new(key: &[u8]) -> Self {
        let mut block = [0_u8; BLOCK];
        if key.len() > BLOCK {
            block[..32].copy_from_slice(&Sha256::digest(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let pad = |byte: u8| block.map(|b| b ^ byte);
        Self {
            inner: Sha256::new().chain_update(pad(0x36)),
            outer: Sha256::new().chain_update(pad(0x5c)),
        }
    }

    /// HMAC-SHA256 of the concatenation of `parts`.
    #[must_use]
    pub fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut inner = self.inner.clone();
        for part in parts {
            inner.update(part);
        }
        self.outer
            .clone()
            .chain_update(inner.finalize())
            .finalize()
            .into()
    }
}

impl std::fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HmacKey(<redacted>)")
    }
}

/// The keyed fingerprint of a set of named secrets, as 64 lowercase hex
/// digits.
///
/// The message is canonical: the pairs sorted by name (then value, should a
/// name repeat), each encoded as the name's byte length (8 bytes,
/// big-endian), the name, `=`, the value's byte length and the value,
/// after a version tag. Lengths make the encoding unambiguous whatever the
/// names and values contain, and sorting makes it independent of the order
/// the caller lists them in.
#[must_use]
pub fn fingerprint(key: &[u8], values: &[(&str, &SecretValue)]) -> String {
    let mut pairs: Vec<(&str, &str)> = values
        .iter()
        .map(|(name, value)| (*name, value.reveal()))
        .collect();
    pairs.sort_unstable();
    let mut message = DOMAIN.to_vec();
    for (name, value) in pairs {
        message.extend_from_slice(&(name.len() as u64).to_be_bytes());
        message.extend_from_slice(name.as_bytes());
        message.push(b'=');
        message.extend_from_slice(&(value.len() as u64).to_be_bytes());
        message.extend_from_slice(value.as_bytes());
    }
    crate::engine::canonical::hex_lower(&hmac_sha256(key, &message))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::canonical::hex_lower as hex;

    #[test]
    fn rfc_4231_vectors() {
        // Test case 1.
        assert_eq!(
            hex(&hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn fingerprint_is_order_independent_and_keyed() {
        let a = SecretValue::new("alpha-secret");
        let b = SecretValue::new("beta-secret");
        let one = fingerprint(b"key", &[("a", &a), ("b", &b)]);
        let two = fingerprint(b"key", &[("b", &b), ("a", &a)]);
        assert_eq!(one, two);
        assert_eq!(one.len(), 64);
        assert!(
            one.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(one, fingerprint(b"other key", &[("a", &a), ("b", &b)]));
        // Changing a value, or moving it to another name, changes it.
        let c = SecretValue::new("alpha-secreT");
        assert_ne!(one, fingerprint(b"key", &[("a", &c), ("b", &b)]));
        assert_ne!(one, fingerprint(b"key", &[("a", &b), ("b", &a)]));
        // The encoding is unambiguous: `a=b` + `c` is not `a` + `b=c`.
        let x = SecretValue::new("b=c");
        let y = SecretValue::new("c");
        assert_ne!(
            fingerprint(b"k", &[("a", &x)]),
            fingerprint(b"k", &[("a=b", &y)])
        );
        assert_ne!(fingerprint(b"k", &[]), fingerprint(b"k", &[("", &y)]));
    }
}
