//! [`SecretValue`]: a string that will not print itself.

use std::fmt;

use crate::engine::redact::REDACTED;

/// A secret's material, held privately.
///
/// `Debug` and `Display` both render `<redacted>`; [`SecretValue::reveal`]
/// is the only way to read the value, so every use is explicit and
/// greppable. There is no `Serialize`, `PartialEq` or `Hash` on purpose:
/// comparing or hashing secrets belongs in [`super::fingerprint()`].
#[derive(Clone)]
pub struct SecretValue {
    value: String,
}

impl SecretValue {
    /// Wraps `value` as a secret.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
        }
    }

    /// The secret material. Call this only at the point of use.
    #[must_use]
    pub fn reveal(&self) -> &str {
        &self.value
    }

    /// Whether the value is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.value.is_empty()
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl From<String> for SecretValue {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl From<&str> for SecretValue {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_renders_itself() {
        let secret = SecretValue::new("sk-canary-123456");
        assert_eq!(format!("{secret}"), "<redacted>");
        assert_eq!(format!("{secret:?}"), "<redacted>");
        assert_eq!(format!("{:?}", Some(secret.clone())), "Some(<redacted>)");
        assert_eq!(secret.reveal(), "sk-canary-123456");
        assert!(!secret.is_empty());
        assert!(SecretValue::from(String::new()).is_empty());
    }
}
