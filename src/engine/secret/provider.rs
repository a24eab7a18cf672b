//! [`SecretProvider`] and the providers that need no environment.

use std::collections::BTreeMap;

use super::{Learned, Redactor, SecretValue};

/// Why a secret could not be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretErrorKind {
    /// The provider has no value under that name.
    Missing,
    /// The provider has the name, but its value is empty.
    Empty,
    /// The name cannot be looked up (for example, it is empty).
    InvalidName,
    /// No provider can be asked: the scope's secrets provider could not be
    /// resolved (fail closed); `provider` says why.
    Unavailable,
    /// The value is shorter than [`super::MIN_SECRET_LEN`] characters, so
    /// it could not be redacted from output: chassis refuses to use a
    /// secret it cannot hide.
    TooShort,
}

impl SecretErrorKind {
    /// Stable name (`missing`, `empty`, `invalid_name`, `unavailable`,
    /// `too_short`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Empty => "empty",
            Self::InvalidName => "invalid_name",
            Self::Unavailable => "unavailable",
            Self::TooShort => "too_short",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Missing => "is not set",
            Self::Empty => "is empty",
            Self::InvalidName => "has an invalid name",
            Self::Unavailable => "cannot be resolved",
            Self::TooShort => {
                "is shorter than 6 characters: chassis uses only secrets it can redact from every output, so set a longer value"
            }
        }
    }
}

/// A secret that could not be resolved.
///
/// It names the secret, the provider and (for environment-backed
/// providers) the variable that was read; its `Display` never contains a
/// value, because it never holds one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "secret `{name}` {}{}",
    kind.describe(),
    match kind {
        SecretErrorKind::Unavailable => format!(": {provider}"),
        _ => format!(
            " (provider `{provider}`{})",
            environment_variable.as_deref().map(|v| format!(", environment variable `{v}`")).unwrap_or_default()
        ),
    }
)]
pub struct SecretError {
    /// The secret's name, as requested.
    pub name: String,
    /// The provider that was asked (for [`SecretErrorKind::Unavailable`],
    /// why none could be).
    pub provider: String,
    /// The environment variable that was read, for environment providers.
    pub environment_variable: Option<String>,
    /// What went wrong.
    pub kind: SecretErrorKind,
}

/// Resolves secrets by name.
///
/// Implementations must be shareable across threads, because a harness
/// resolves secrets from wherever a plugin asks for them.
pub trait SecretProvider: Send + Sync {
    /// The secret called `name`.
    ///
    /// # Errors
    ///
    /// A [`SecretError`] when the provider has no (non-empty) value for it.
    fn get(&self, name: &str) -> Result<SecretValue, SecretError>;

    /// Where `name` is read from, for an error about its value: the
    /// provider's name and, for environment providers, the variable.
    fn source(&self, name: &str) -> (String, Option<String>) {
        let _ = name;
        ("custom".to_owned(), None)
    }

    /// The secret called `name`, or `None` when it is missing or empty;
    /// other errors are still errors.
    ///
    /// # Errors
    ///
    /// A [`SecretError`] of any other kind than missing or empty.
    fn get_optional(&self, name: &str) -> Result<Option<SecretValue>, SecretError> {
        match self.get(name) {
            Ok(value) => Ok(Some(value)),
            Err(e) if matches!(e.kind, SecretErrorKind::Missing | SecretErrorKind::Empty) => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

impl<P: SecretProvider + ?Sized> SecretProvider for &P {
    fn get(&self, name: &str) -> Result<SecretValue, SecretError> {
        (**self).get(name)
    }

    fn source(&self, name: &str) -> (String, Option<String>) {
        (**self).source(name)
    }
}

impl<P: SecretProvider + ?Sized> SecretProvider for Box<P> {
    fn get(&self, name: &str) -> Result<SecretValue, SecretError> {
        (**self).get(name)
    }

    fn source(&self, name: &str) -> (String, Option<String>) {
        (**self).source(name)
    }
}

impl<P: SecretProvider + ?Sized> SecretProvider for std::sync::Arc<P> {
    fn get(&self, name: &str) -> Result<SecretValue, SecretError> {
        (**self).get(name)
    }

    fn source(&self, name: &str) -> (String, Option<String>) {
        (**self).source(name)
    }
}

/// Secrets from a fixed map, for tests and embedded compositions.
///
/// An empty value is reported as [`SecretErrorKind::Empty`], as the
/// environment provider does, so tests see the same errors.
#[derive(Clone, Default)]
pub struct StaticSecretProvider {
    values: BTreeMap<String, SecretValue>,
}

impl std::fmt::Debug for StaticSecretProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticSecretProvider")
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl StaticSecretProvider {
    /// The provider's name in errors.
    pub const NAME: &'static str = "static";

    /// A provider with no secrets.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the secret `name`.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, value: impl Into<SecretValue>) -> Self {
        self.insert(name, value);
        self
    }

    /// Adds (or replaces) the secret `name`.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<SecretValue>) {
        self.values.insert(name.into(), value.into());
    }
}

impl<N: Into<String>, V: Into<SecretValue>> FromIterator<(N, V)> for StaticSecretProvider {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        let mut provider = Self::new();
        for (name, value) in iter {
            provider.insert(name, value);
        }
        provider
    }
}

impl SecretProvider for StaticSecretProvider {
    fn get(&self, name: &str) -> Result<SecretValue, SecretError> {
        let error = |kind| SecretError {
            name: name.to_owned(),
            provider: Self::NAME.to_owned(),
            environment_variable: None,
            kind,
        };
        match self.values.get(name) {
            None => Err(error(SecretErrorKind::Missing)),
            Some(value) if value.is_empty() => Err(error(SecretErrorKind::Empty)),
            Some(value) => Ok(value.clone()),
        }
    }

    fn source(&self, _name: &str) -> (String, Option<String>) {
        (Self::NAME.to_owned(), None)
    }
}

/// Stands in for a secrets provider that could not be resolved: every
/// lookup fails with [`SecretErrorKind::Unavailable`] and the reason (fail
/// closed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnavailableSecrets {
    /// Why, e.g. "secrets resolution failed for scope /x: ambiguous between a, b".
    pub reason: String,
}

impl SecretProvider for UnavailableSecrets {
    fn get(&self, name: &str) -> Result<SecretValue, SecretError> {
        Err(SecretError {
            name: name.to_owned(),
            provider: self.reason.clone(),
            environment_variable: None,
            kind: SecretErrorKind::Unavailable,
        })
    }
}

/// Wraps a provider so that every value it hands out is learned by a
/// [`Redactor`] at the moment it is resolved.
///
/// Learning is idempotent, so wrapping twice with the same redactor is
/// harmless. A value shorter than [`super::MIN_SECRET_LEN`] is refused
/// ([`SecretErrorKind::TooShort`]): it could not be redacted, and a secret
/// chassis cannot hide is not used.
#[derive(Debug, Clone)]
pub struct RedactingSecretProvider<P> {
    inner: P,
    redactor: Redactor,
}

impl<P: SecretProvider> RedactingSecretProvider<P> {
    /// Wraps `inner`, teaching `redactor`.
    pub fn new(inner: P, redactor: Redactor) -> Self {
        Self { inner, redactor }
    }

    /// The redactor being taught.
    #[must_use]
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The wrapped provider.
    #[must_use]
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Like [`SecretProvider::get`], also reporting what the redactor did.
    ///
    /// # Errors
    ///
    /// The wrapped provider's error.
    pub fn get_learned(&self, name: &str) -> Result<(SecretValue, Learned), SecretError> {
        let value = self.inner.get(name)?;
        match self.redactor.learn(&value) {
            Learned::TooShort => {
                let (provider, environment_variable) = self.inner.source(name);
                Err(SecretError {
                    name: name.to_owned(),
                    provider,
                    environment_variable,
                    kind: SecretErrorKind::TooShort,
                })
            }
            learned => Ok((value, learned)),
        }
    }
}

impl<P: SecretProvider> SecretProvider for RedactingSecretProvider<P> {
    fn get(&self, name: &str) -> Result<SecretValue, SecretError> {
        self.get_learned(name).map(|(value, _)| value)
    }

    fn source(&self, name: &str) -> (String, Option<String>) {
        self.inner.source(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_provider_and_errors() {
        let provider: StaticSecretProvider = [("a.key", "value-aaaa"), ("empty", "")]
            .into_iter()
            .collect();
        assert_eq!(provider.get("a.key").expect("set").reveal(), "value-aaaa");
        let missing = provider.get("nope").expect_err("missing");
        assert_eq!(missing.kind, SecretErrorKind::Missing);
        assert_eq!(
            missing.to_string(),
            "secret `nope` is not set (provider `static`)"
        );
        let empty = provider.get("empty").expect_err("empty");
        assert_eq!(empty.kind, SecretErrorKind::Empty);
        assert!(provider.get_optional("nope").expect("ok").is_none());
        assert!(provider.get_optional("empty").expect("ok").is_none());
        assert!(!format!("{provider:?}").contains("value-aaaa"));
    }

    #[test]
    fn redacting_provider_teaches_at_resolution() {
        let redactor = Redactor::new();
        let provider = RedactingSecretProvider::new(
            StaticSecretProvider::new()
                .with("openai.api_key", "sk-canary-0001")
                .with("pin", "12"),
            redactor.clone(),
        );
        assert_eq!(redactor.redact("sk-canary-0001"), "sk-canary-0001");
        let value = provider.get("openai.api_key").expect("set");
        assert_eq!(value.reveal(), "sk-canary-0001");
        assert_eq!(redactor.redact("k=sk-canary-0001"), "k=<redacted>");
        let (_, learned) = provider.get_learned("openai.api_key").expect("set");
        assert_eq!(learned, Learned::AlreadyKnown);
        let short = provider.get_learned("pin").expect_err("too short to hide");
        assert_eq!(short.kind, SecretErrorKind::TooShort);
        assert_eq!(
            short.to_string(),
            "secret `pin` is shorter than 6 characters: chassis uses only secrets it can redact from every output, so set a longer value (provider `static`)"
        );
        assert!(
            provider.get_optional("pin").is_err(),
            "an optional lookup is refused too"
        );
        assert_eq!(redactor.redact("12"), "12");
        assert!(provider.get("nope").is_err());
        let unavailable = UnavailableSecrets {
            reason: "secrets resolution failed for scope /x: ambiguous between a, b".into(),
        };
        let e = unavailable.get("db.password").expect_err("fails closed");
        assert_eq!(
            e.to_string(),
            "secret `db.password` cannot be resolved: secrets resolution failed for scope /x: ambiguous between a, b"
        );
        // Optional lookups fail closed too.
        assert!(unavailable.get_optional("db.password").is_err());
        // Works through references and boxes as a trait object.
        let boxed: Box<dyn SecretProvider> = Box::new(provider);
        assert!(boxed.get("openai.api_key").is_ok());
    }
}
