//! Host settings: keys that configure the process that loads a
//! composition rather than the composition (`name`, the lineage it
//! publishes into, `[store]` and `[serve]` today; `[telemetry]` joins them
//! with its feature).
//!
//! Why apart: moving the store or changing how a server listens must not
//! make CI believe the composition changed. Host settings are validated
//! with the composition (`check`), shown by `diff` in a section of their
//! own that never fails `--exit-code`, and never enter the semantic digest,
//! a node identity or the snapshot. They are read from the root file only:
//! an include is a fragment of a composition, which configures no host.

use crate::engine::canonical::Canon;
use crate::engine::span::Located;

/// Every host settings table, by its key in the root file.
pub const HOST_TABLES: &[&str] = &["serve", "store"];

/// The server's own routes a `[serve] auth_excluded` may name (besides
/// plugin routes: see [`is_auth_excludable`]; everything else always needs
/// a token when tokens are set).
pub const AUTH_EXCLUDABLE: &[&str] = &["/healthz", "/metrics"];

/// Whether `[serve] auth_excluded` may name `path`: one of
/// [`AUTH_EXCLUDABLE`], or one exact path of a plugin's HTTP routes
/// (`/plugins/ENTRY/…`: plain segments only, so no pattern and no path
/// trick opens more than that path).
pub fn is_auth_excludable(path: &str) -> bool {
    if AUTH_EXCLUDABLE.contains(&path) {
        return true;
    }
    let Some(rest) = path.strip_prefix("/plugins/") else {
        return false;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    segments.len() >= 2
        && segments.iter().all(|s| {
            !s.is_empty()
                && *s != "."
                && *s != ".."
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
        })
}

#[cfg(test)]
mod excludable_tests {
    use super::is_auth_excludable;

    #[test]
    fn plugin_paths_are_excludable_exactly() {
        assert!(is_auth_excludable("/healthz"));
        assert!(is_auth_excludable("/plugins/desk/health"));
        assert!(is_auth_excludable("/plugins/desk/v1/hook.json"));
        for bad in [
            "/plugins/desk",
            "/plugins/desk/",
            "/plugins/desk/*",
            "/plugins/desk/../v1",
            "/plugins//x",
            "/plugins/desk/a%2f",
            "/v1/status",
        ] {
            assert!(!is_auth_excludable(bad), "{bad}");
        }
    }
}

/// `[serve]`: how `chassis serve` lets clients in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServeSettings {
    /// Bearer tokens, each a secret's name (never a literal in the file).
    pub tokens: Vec<Located<String>>,
    /// Routes answered without a token ([`is_auth_excludable`]).
    pub auth_excluded: Vec<Located<String>>,
    /// Seconds a session lasts after its last turn (none: until deleted).
    pub session_ttl_seconds: Option<u64>,
    /// Seconds a tool call waits for a client's approval before it is
    /// refused (none: 300).
    pub approval_timeout_seconds: Option<u64>,
}

impl ServeSettings {
    /// The keys whose values differ between `self` and `other`, in the
    /// order they are declared (where a value was written is no change).
    pub fn changed_keys(&self, other: &ServeSettings) -> Vec<&'static str> {
        [
            ("tokens", self.tokens != other.tokens),
            ("auth_excluded", self.auth_excluded != other.auth_excluded),
            (
                "session_ttl_seconds",
                self.session_ttl_seconds != other.session_ttl_seconds,
            ),
            (
                "approval_timeout_seconds",
                self.approval_timeout_seconds != other.approval_timeout_seconds,
            ),
        ]
        .into_iter()
        .filter_map(|(key, changed)| changed.then_some(key))
        .collect()
    }
}

/// `[store]`: where the generation store is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreSettings {
    /// The store file, relative to the root composition file's directory
    /// (`--state` overrides it).
    pub path: Option<Located<String>>,
}

/// The host settings of a composition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostSettings {
    /// `name = "…"`: the lineage the composition publishes into (default:
    /// the root file's path in its workspace).
    pub name: Option<Located<String>>,
    /// `[store]`.
    pub store: Option<StoreSettings>,
    /// `[serve]`.
    pub serve: Option<ServeSettings>,
}

impl HostSettings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.store.is_none() && self.name.is_none() && self.serve.is_none()
    }

    /// The settings as a tree of their keys (what `diff` compares): tables
    /// by key, each holding the keys set in it.
    pub fn to_canon(&self) -> Canon {
        let mut tables = std::collections::BTreeMap::new();
        if let Some(name) = &self.name {
            tables.insert("name".to_owned(), Canon::from(name.value.as_str()));
        }
        if let Some(store) = &self.store {
            let mut keys = std::collections::BTreeMap::new();
            if let Some(path) = &store.path {
                keys.insert("path".to_owned(), Canon::from(path.value.as_str()));
            }
            tables.insert("store".to_owned(), Canon::Map(keys));
        }
        if let Some(serve) = &self.serve {
            let list = |items: &[Located<String>]| {
                Canon::List(
                    items
                        .iter()
                        .map(|i| Canon::from(i.value.as_str()))
                        .collect(),
                )
            };
            let mut keys = std::collections::BTreeMap::new();
            if !serve.tokens.is_empty() {
                // The secrets' names, never their values.
                keys.insert("tokens".to_owned(), list(&serve.tokens));
            }
            if !serve.auth_excluded.is_empty() {
                keys.insert("auth_excluded".to_owned(), list(&serve.auth_excluded));
            }
            if let Some(ttl) = serve.session_ttl_seconds {
                keys.insert(
                    "session_ttl_seconds".to_owned(),
                    Canon::Int(i128::from(ttl)),
                );
            }
            if let Some(seconds) = serve.approval_timeout_seconds {
                keys.insert(
                    "approval_timeout_seconds".to_owned(),
                    Canon::Int(i128::from(seconds)),
                );
            }
            tables.insert("serve".to_owned(), Canon::Map(keys));
        }
        Canon::Map(tables)
    }
}

#[cfg(test)]
mod canon_tests {
    use super::{HostSettings, ServeSettings};

    #[test]
    fn every_serve_setting_is_in_the_canonical_form() {
        // What `diff` shows of host settings: a setting missing here was a
        // change no diff could show.
        let settings = |approval: Option<u64>| HostSettings {
            serve: Some(ServeSettings {
                approval_timeout_seconds: approval,
                ..ServeSettings::default()
            }),
            ..HostSettings::default()
        };
        let text = settings(Some(60)).to_canon().to_json().to_string();
        assert!(text.contains("\"approval_timeout_seconds\":60"), "{text}");
        assert_ne!(settings(Some(60)).to_canon(), settings(None).to_canon());
    }
}
