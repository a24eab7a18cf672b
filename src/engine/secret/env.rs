//! Environment-variable secrets, without touching the environment: the
//! name mapping is a pure function and the lookup is an [`EnvLookup`]
//! the edge implements over the process environment.

use std::collections::BTreeMap;

use super::{SecretError, SecretErrorKind, SecretProvider, SecretValue};

/// The environment variable that holds the secret `name`.
///
/// The reference's rule: an alias for `name` wins as given (verbatim, no
/// prefix). Otherwise `.`, `-` and `/` become `_` and the result is
/// ASCII-uppercased; a non-empty `prefix` is normalized the same way and
/// joined with `_` unless it already ends with one.
///
/// | name | prefix | result |
/// | --- | --- | --- |
/// | `openai.api_key` | — | `OPENAI_API_KEY` |
/// | `my-app/token` | — | `MY_APP_TOKEN` |
/// | `openai.api_key` | `chassis` or `CHASSIS_` | `CHASSIS_OPENAI_API_KEY` |
/// | `openai.api_key` aliased to `OPENAI_KEY` | any | `OPENAI_KEY` |
#[must_use]
pub fn env_var_name(
    name: &str,
    prefix: Option<&str>,
    aliases: &BTreeMap<String, String>,
) -> String {
    if let Some(alias) = aliases.get(name) {
        return alias.clone();
    }
    let normalize = |s: &str| {
        s.chars()
            .map(|c| match c {
                '.' | '-' | '/' => '_',
                c => c.to_ascii_uppercase(),
            })
            .collect::<String>()
    };
    let mut out = String::new();
    if let Some(prefix) = prefix.filter(|p| !p.is_empty()) {
        out.push_str(&normalize(prefix));
        if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.push_str(&normalize(name));
    out
}

/// Reads environment variables; the edge implements it over
/// `std::env::var`, tests over a map ([`MapEnv`]).
pub trait EnvLookup: Send + Sync {
    /// The variable's value, or `None` when it is unset (or not Unicode).
    fn var(&self, name: &str) -> Option<String>;
}

impl<L: EnvLookup + ?Sized> EnvLookup for std::sync::Arc<L> {
    fn var(&self, name: &str) -> Option<String> {
        (**self).var(name)
    }
}

/// An [`EnvLookup`] over a fixed map, for tests.
#[derive(Clone, Default)]
pub struct MapEnv(pub BTreeMap<String, String>);

impl std::fmt::Debug for MapEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MapEnv")
            .field(&self.0.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl EnvLookup for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

/// Secrets from environment variables named by [`env_var_name`].
///
/// An unset or empty variable is a [`SecretError`] naming the variable.
#[derive(Debug, Clone)]
pub struct EnvSecretProvider<L> {
    lookup: L,
    prefix: Option<String>,
    aliases: BTreeMap<String, String>,
}

impl<L: EnvLookup> EnvSecretProvider<L> {
    /// The provider's name in errors.
    pub const NAME: &'static str = "env";

    /// A provider reading through `lookup`, with no prefix or aliases.
    pub fn new(lookup: L) -> Self {
        Self {
            lookup,
            prefix: None,
            aliases: BTreeMap::new(),
        }
    }

    /// Sets the variable-name prefix.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Reads the secret `name` from the variable `variable` instead.
    #[must_use]
    pub fn with_alias(mut self, name: impl Into<String>, variable: impl Into<String>) -> Self {
        self.aliases.insert(name.into(), variable.into());
        self
    }

    /// The variable that holds the secret `name`.
    #[must_use]
    pub fn variable_for(&self, name: &str) -> String {
        env_var_name(name, self.prefix.as_deref(), &self.aliases)
    }
}

impl<L: EnvLookup> SecretProvider for EnvSecretProvider<L> {
    fn get(&self, name: &str) -> Result<SecretValue, SecretError> {
        let variable = self.variable_for(name);
        let error = |kind| SecretError {
            name: name.to_owned(),
            provider: Self::NAME.to_owned(),
            environment_variable: Some(variable.clone()),
            kind,
        };
        if name.is_empty() || variable.is_empty() || variable.contains(['=', '\0']) {
            return Err(error(SecretErrorKind::InvalidName));
        }
        match self.lookup.var(&variable) {
            None => Err(error(SecretErrorKind::Missing)),
            Some(value) if value.is_empty() => Err(error(SecretErrorKind::Empty)),
            Some(value) => Ok(SecretValue::new(value)),
        }
    }

    fn source(&self, name: &str) -> (String, Option<String>) {
        (Self::NAME.to_owned(), Some(self.variable_for(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_mapping_table() {
        let none = BTreeMap::new();
        let aliases: BTreeMap<String, String> =
            [("openai.api_key".to_owned(), "OPENAI_KEY".to_owned())].into();
        let cases = [
            ("openai.api_key", None, &none, "OPENAI_API_KEY"),
            ("my-app/token", None, &none, "MY_APP_TOKEN"),
            (
                "openai.api_key",
                Some("chassis"),
                &none,
                "CHASSIS_OPENAI_API_KEY",
            ),
            (
                "openai.api_key",
                Some("CHASSIS_"),
                &none,
                "CHASSIS_OPENAI_API_KEY",
            ),
            (
                "openai.api_key",
                Some("my-app"),
                &none,
                "MY_APP_OPENAI_API_KEY",
            ),
            ("openai.api_key", Some(""), &none, "OPENAI_API_KEY"),
            ("openai.api_key", None, &aliases, "OPENAI_KEY"),
            ("openai.api_key", Some("chassis"), &aliases, "OPENAI_KEY"),
            ("other.key", None, &aliases, "OTHER_KEY"),
        ];
        for (name, prefix, aliases, want) in cases {
            assert_eq!(
                env_var_name(name, prefix, aliases),
                want,
                "{name} {prefix:?}"
            );
        }
    }

    #[test]
    fn env_provider_reads_through_lookup() {
        let env = MapEnv(
            [
                ("APP_OPENAI_API_KEY", "sk-env-000001"),
                ("APP_EMPTY", ""),
                ("CUSTOM", "custom-value"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into(),
        );
        let provider = EnvSecretProvider::new(env)
            .with_prefix("app")
            .with_alias("custom.name", "CUSTOM");
        assert_eq!(
            provider.get("openai.api_key").expect("set").reveal(),
            "sk-env-000001"
        );
        assert_eq!(
            provider.get("custom.name").expect("set").reveal(),
            "custom-value"
        );
        let missing = provider.get("absent").expect_err("unset");
        assert_eq!(missing.kind, SecretErrorKind::Missing);
        assert_eq!(
            missing.to_string(),
            "secret `absent` is not set (provider `env`, environment variable `APP_ABSENT`)"
        );
        let empty = provider.get("empty").expect_err("empty");
        assert_eq!(empty.kind, SecretErrorKind::Empty);
        assert_eq!(empty.environment_variable.as_deref(), Some("APP_EMPTY"));
        assert!(!empty.to_string().contains("sk-env"));
        assert_eq!(
            provider.get("").expect_err("invalid").kind,
            SecretErrorKind::InvalidName
        );
        assert!(provider.get_optional("absent").expect("ok").is_none());
    }
}
