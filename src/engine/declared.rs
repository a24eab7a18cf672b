//! What a composition declares, as one tree keyed the way its TOML is:
//! `entries.<id>.config.<key>`, `plugins.<name>.provides.<capability>`,
//! `agents.<name>.prompt`… Two such trees are compared leaf by leaf
//! ([`crate::engine::leaf_diff`]) so a diff of two compositions names every
//! changed key, terraform style.
//!
//! Values are as declared; a secret reference is `{secret = NAME}` (its
//! name, never a value), and what a person should not see — a value under
//! a secret-looking key, a URL's password — is masked by
//! [`mask_for_display`] before anything is shown. Host settings are not
//! part of it (they are shown apart). Metadata, a plugin's or a scope's,
//! is: nothing semantic reads it, but a diff names every key the files
//! changed.

use crate::engine::model::EntryId;
use std::collections::{BTreeMap, HashMap};

use super::canonical::Canon;
use super::leaf_diff::LeafChange;
use super::model::{Composition, Manifest, Requirement, ScopeDecl};
use super::redact::{REDACTED, is_sensitive_key, redact_url_userinfo};

fn strs<'a>(items: impl IntoIterator<Item = &'a str>) -> Canon {
    Canon::list(items)
}

fn requirements<'a>(items: impl Iterator<Item = &'a Requirement>) -> Canon {
    Canon::Map(
        items
            .map(|r| {
                let spec = r.specifier.to_string();
                (r.capability.to_string(), Canon::Str(spec))
            })
            .collect(),
    )
}

fn manifest(m: &Manifest) -> Canon {
    let mut out = BTreeMap::new();
    out.insert("version".to_owned(), Canon::Str(m.version.to_string()));
    out.insert(
        "provides".to_owned(),
        Canon::Map(
            m.provides
                .iter()
                .map(|(cap, p)| (cap.to_string(), strs(p.versions.iter().map(|v| v.as_str()))))
                .collect(),
        ),
    );
    out.insert(
        "requires".to_owned(),
        requirements(m.requires.values().filter(|r| !r.optional)),
    );
    out.insert(
        "optional".to_owned(),
        requirements(m.requires.values().filter(|r| r.optional)),
    );
    out.insert(
        "permissions".to_owned(),
        strs(m.permissions.iter().map(String::as_str)),
    );
    out.insert(
        "config_version".to_owned(),
        Canon::Int(i128::from(m.config_version)),
    );
    out.insert(
        "tools".to_owned(),
        Canon::Map(
            m.tools
                .iter()
                .map(|t| {
                    let json = |v: &Option<serde_json::Value>| {
                        v.as_ref().map_or(Canon::Null, Canon::from_json)
                    };
                    (
                        t.name.to_string(),
                        Canon::map([
                            ("description", Canon::from(t.description.as_str())),
                            ("args", json(&t.args_schema)),
                            ("result", json(&t.result)),
                        ]),
                    )
                })
                .collect(),
        ),
    );
    out.insert(
        "metadata".to_owned(),
        Canon::Map(
            m.metadata
                .iter()
                .map(|(k, v)| (k.clone(), v.to_canon_unredacted()))
                .collect(),
        ),
    );
    Canon::Map(out)
}

fn set<T: std::fmt::Display>(v: Option<&std::collections::BTreeSet<T>>) -> Canon {
    v.map_or(Canon::Null, |items| {
        Canon::List(items.iter().map(|i| Canon::Str(i.to_string())).collect())
    })
}

fn scope(s: &ScopeDecl) -> Canon {
    Canon::map([
        ("capabilities", set(s.capabilities.as_ref())),
        ("tools", set(s.tools.as_ref())),
        ("requires", requirements(s.requirements.values())),
        (
            "prefer",
            Canon::Map(
                s.prefer
                    .iter()
                    .map(|(c, e)| (c.to_string(), Canon::from(e.value.as_str())))
                    .collect(),
            ),
        ),
        (
            "metadata",
            Canon::Map(
                s.metadata
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_canon_unredacted()))
                    .collect(),
            ),
        ),
    ])
}

/// What `composition` declares, as a tree of its TOML keys.
pub fn declared_tree(composition: &Composition) -> Canon {
    declared_tree_of(composition, &|_| true, &|_| true)
}

/// [`declared_tree`] with only the entries `keep` and the declared plugins
/// `keep_plugin` accept (the rest of the composition still in it).
fn declared_tree_of(
    composition: &Composition,
    keep: &dyn Fn(&EntryId) -> bool,
    keep_plugin: &dyn Fn(&str) -> bool,
) -> Canon {
    let mut root = BTreeMap::new();
    let mut entries = BTreeMap::new();
    let mut plugins = BTreeMap::new();
    for (id, e) in &composition.entries {
        // A built-in kind's manifest derives from the entry's config, which
        // is compared with the entry; a declared one is its `[plugins]`
        // table, built once however many entries share it.
        if e.manifest.kind.is_none()
            && !plugins.contains_key(&e.manifest.name)
            && keep_plugin(&e.manifest.name)
        {
            plugins.insert(e.manifest.name.clone(), manifest(&e.manifest));
        }
        if !keep(id) {
            continue;
        }
        let mut entry = BTreeMap::new();
        entry.insert("plugin".to_owned(), Canon::from(e.plugin.value.as_str()));
        entry.insert("scope".to_owned(), Canon::from(e.scope.value.as_str()));
        entry.insert("config".to_owned(), e.config.to_canon_unredacted());
        entry.insert(
            "prefer".to_owned(),
            Canon::Map(
                e.prefer
                    .iter()
                    .map(|(c, r)| (c.to_string(), Canon::from(r.value.as_str())))
                    .collect(),
            ),
        );
        entry.insert(
            "on_failure".to_owned(),
            Canon::from(if composition.skip_on_failure.contains(id) {
                "skip"
            } else {
                "fail"
            }),
        );
        entry.insert(
            "enabled_if".to_owned(),
            composition
                .conditions
                .get(id)
                .map_or(Canon::Null, |c| strs(c.env.iter().map(String::as_str))),
        );
        entries.insert(id.to_string(), Canon::Map(entry));
    }
    root.insert("entries".to_owned(), Canon::Map(entries));
    root.insert("plugins".to_owned(), Canon::Map(plugins));
    let agent_scopes: std::collections::BTreeSet<&str> = composition
        .agents
        .values()
        .map(|a| a.scope.as_str())
        .collect();
    root.insert(
        "scopes".to_owned(),
        Canon::Map(
            composition
                .scopes
                .values()
                .filter(|s| !s.implied && !agent_scopes.contains(s.path.as_str()))
                .map(|s| (s.path.to_string(), scope(s)))
                .collect(),
        ),
    );
    root.insert(
        "agents".to_owned(),
        Canon::Map(
            composition
                .agents
                .iter()
                .map(|(name, a)| {
                    let text = |s: &Option<String>| s.as_deref().map_or(Canon::Null, Canon::from);
                    (
                        name.clone(),
                        Canon::map([
                            ("description", Canon::from(a.description.as_str())),
                            // As its hash reads it: whitespace around it is
                            // no change.
                            ("prompt", Canon::from(a.prompt.trim())),
                            ("default_input", text(&a.default_input)),
                            ("revision", Canon::from(a.revision.as_str())),
                            ("scope", Canon::from(a.scope.as_str())),
                            ("model", Canon::Str(a.model.render())),
                            (
                                "prefer_model",
                                a.prefer_model
                                    .as_ref()
                                    .map_or(Canon::Null, |e| Canon::from(e.value.as_str())),
                            ),
                            (
                                "tools",
                                a.tools
                                    .as_ref()
                                    .map_or(Canon::Null, |t| strs(t.iter().map(|t| t.as_str()))),
                            ),
                            ("sub_agents", strs(a.sub_agents.iter().map(String::as_str))),
                            ("max_steps", Canon::Int(i128::from(a.max_steps))),
                            (
                                "budget",
                                Canon::Map(
                                    a.budget
                                        .iter()
                                        .map(|(d, v)| (d.as_str().to_owned(), Canon::Float(v)))
                                        .collect(),
                                ),
                            ),
                            (
                                "temperature",
                                a.temperature.map_or(Canon::Null, Canon::Float),
                            ),
                            (
                                "max_tokens",
                                a.max_tokens
                                    .map_or(Canon::Null, |t| Canon::Int(i128::from(t))),
                            ),
                        ]),
                    )
                })
                .collect(),
        ),
    );
    root.insert(
        "prefer".to_owned(),
        Canon::Map(
            composition
                .preferences
                .global
                .iter()
                .map(|(c, e)| (c.to_string(), Canon::from(e.value.as_str())))
                .collect(),
        ),
    );
    if let Some(p) = &composition.policy {
        let grants = |g: &[crate::engine::policy::Grant]| {
            Canon::List(g.iter().map(|g| Canon::Str(g.to_string())).collect())
        };
        root.insert(
            "policy".to_owned(),
            Canon::map([
                ("grants", grants(&p.rules.grants)),
                ("deny", grants(&p.rules.deny)),
                (
                    "approval_required",
                    strs(p.rules.approval_required.iter().map(String::as_str)),
                ),
                (
                    "tools",
                    Canon::Map(
                        p.tools
                            .iter()
                            .map(|(name, t)| {
                                let json = serde_json::to_value(t).unwrap_or_default();
                                (name.clone(), Canon::from_json(&json))
                            })
                            .collect(),
                    ),
                ),
            ]),
        );
    }
    root.insert(
        "disabled".to_owned(),
        strs(composition.disabled.keys().map(|k| k.as_str())),
    );
    Canon::Map(root)
}

/// Whether `v` is a secret reference as the tree holds one (`{secret =
/// NAME}`): a value, compared whole.
pub fn is_secret_ref(v: &Canon) -> bool {
    matches!(v, Canon::Map(m) if m.len() == 1 && matches!(m.get("secret"), Some(Canon::Str(_))))
}

/// The changed keys from `old` to `new`, each masked for display.
pub fn changed_keys(old: &Composition, new: &Composition) -> Vec<LeafChange> {
    // An entry declared alike on both sides has no changed key: only the
    // others are laid out and compared (a one-entry edit of 100,000).
    let differs = |id: &EntryId| {
        old.entries.get(id) != new.entries.get(id)
            || old.skip_on_failure.contains(id) != new.skip_on_failure.contains(id)
            || old.conditions.get(id) != new.conditions.get(id)
    };
    // Likewise a declared plugin alike on both sides (a composition of
    // 100,000 entries may declare as many plugins).
    let (old_plugins, new_plugins) = (declared_plugins(old), declared_plugins(new));
    let plugin_differs = |name: &str| match (old_plugins.get(name), new_plugins.get(name)) {
        (Some(a), Some(b)) => !(std::ptr::eq(*a, *b) || (a == b && same_version_texts(a, b))),
        (None, None) => false,
        _ => true,
    };
    let mut changes = super::leaf_diff::changed_leaves_with(
        &declared_tree_of(old, &differs, &plugin_differs),
        &declared_tree_of(new, &differs, &plugin_differs),
        &is_secret_ref,
    );
    changes.iter_mut().for_each(mask_for_display);
    // A value typed under a credential's key is masked there, and wherever
    // else it is typed (`note = "…"` repeating a password).
    let typed = typed_credentials([old, new]);
    if !typed.is_empty() {
        for change in changes.iter_mut().filter(|c| !c.masked) {
            let mentions = |v: &Option<Canon>| v.as_ref().is_some_and(|v| mentions(v, &typed));
            if mentions(&change.old) || mentions(&change.new) {
                change.masked = true;
                change.old = change.old.as_ref().map(|_| Canon::from(REDACTED));
                change.new = change.new.as_ref().map(|_| Canon::from(REDACTED));
            }
        }
    }
    changes
}

/// The texts typed in `compositions`' configurations under a credential's
/// key (`password = "…"`), learnt by a redactor (one pass over them all).
fn typed_credentials<'a>(
    compositions: impl IntoIterator<Item = &'a Composition>,
) -> super::secret::Redactor {
    fn walk(v: &super::model::ConfigValue, sensitive: bool, into: &super::secret::Redactor) {
        use super::model::ConfigValue as V;
        match v {
            V::Str(s) if sensitive => {
                into.learn(&super::secret::SecretValue::new(s.clone()));
            }
            V::Array(items) => items.iter().for_each(|i| walk(i, sensitive, into)),
            V::Table(map) => {
                for (k, v) in map {
                    walk(v, sensitive || is_sensitive_key(k), into);
                }
            }
            _ => {}
        }
    }
    let typed = super::secret::Redactor::new();
    for c in compositions {
        for e in c.entries.values() {
            walk(&e.config, false, &typed);
        }
    }
    typed
}

/// Whether any text in `v` holds a value `typed` knows.
fn mentions(v: &Canon, typed: &super::secret::Redactor) -> bool {
    match v {
        Canon::Str(s) => typed.contains_secret(s),
        Canon::List(items) => items.iter().any(|i| mentions(i, typed)),
        Canon::Map(map) => map.values().any(|v| mentions(v, typed)),
        _ => false,
    }
}

/// Whether two manifests equal as versions (`1.2` is `1.2.0`) also write
/// their versions alike, as the declared tree lays them out: a rewritten
/// version is a changed key.
fn same_version_texts(a: &Manifest, b: &Manifest) -> bool {
    a.version.as_str() == b.version.as_str()
        && a.provides
            .iter()
            .zip(b.provides.iter())
            .all(|((_, x), (_, y))| {
                x.versions
                    .iter()
                    .map(|v| v.as_str())
                    .eq(y.versions.iter().map(|v| v.as_str()))
            })
}

/// The declared (not built-in) plugins `composition`'s entries use, by
/// name: the first entry's manifest of each name, as [`declared_tree`]
/// lays it out.
fn declared_plugins(composition: &Composition) -> HashMap<&str, &Manifest> {
    let mut plugins = HashMap::new();
    for e in composition.entries.values() {
        if e.manifest.kind.is_none() {
            plugins
                .entry(e.manifest.name.as_str())
                .or_insert(&*e.manifest);
        }
    }
    plugins
}

/// Every leaf of an entry's configuration — its path below `config` and
/// the hash of its value (a secret reference by its name; an empty table
/// inside it is a leaf too) — for a store that keeps no values but must name what
/// changed. A leaf that may hold a credential (a secret-looking key, `env`
/// or `headers`, a secret-looking text) has no hash (`None`): a
/// fingerprint of a short password could be guessed by whoever holds the
/// store and its key.
pub fn config_leaves(
    config: &super::model::ConfigValue,
) -> Result<Vec<ConfigLeaf>, super::canonical::CanonError> {
    let mut out = Vec::new();
    collect_leaves(&mut Vec::new(), &config.to_canon_unredacted(), &mut out)?;
    Ok(out)
}

/// One leaf of a configuration (see [`config_leaves`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigLeaf {
    /// Its keys below `config`.
    pub path: Vec<String>,
    /// The hash of its value; `None` when it may hold a credential.
    pub hash: Option<String>,
}

fn collect_leaves(
    path: &mut Vec<String>,
    v: &Canon,
    out: &mut Vec<ConfigLeaf>,
) -> Result<(), super::canonical::CanonError> {
    match v {
        // An empty table is a leaf, but for the configuration itself.
        Canon::Map(m) if (!m.is_empty() || path.is_empty()) && !is_secret_ref(v) => {
            for (k, item) in m {
                path.push(k.clone());
                collect_leaves(path, item, out)?;
                path.pop();
            }
        }
        leaf => {
            let secret = path
                .iter()
                .any(|k| is_sensitive_key(k) || OPAQUE.contains(&k.as_str()))
                || matches!(leaf, Canon::Str(s) if looks_secret(s))
                || contains_secret_text(leaf);
            let hash = if secret {
                None
            } else {
                Some(super::canonical::stable_hash(leaf)?)
            };
            out.push(ConfigLeaf {
                path: path.clone(),
                hash,
            });
        }
    }
    Ok(())
}

/// Whether a list (or anything in it) holds a text that may be a
/// credential, or a value after a secret-looking flag.
fn contains_secret_text(v: &Canon) -> bool {
    let mut copy = v.clone();
    mask_value(&mut copy, true)
}

/// Keys below which a value is free-form user data (where secret-looking
/// keys are masked); above them the keys are chassis's own (`tokens` of a
/// budget is a limit, not a credential).
const FREE_FORM: &[&str] = &["config", "metadata"];

/// Keys of free-form data whose every value is masked: environment
/// variables and HTTP headers carry credentials under any name.
const OPAQUE: &[&str] = &["env", "headers", "environment", "secret_env"];

/// Whether a string of free-form data may be a credential whatever its
/// key: a `name=value` (or `name: value`) pair with a secret-looking name —
/// a connection string, a query string, `--password=x` — or a token-like
/// word (at least 20 characters of letters and digits, no spaces, no `/`).
fn looks_secret(text: &str) -> bool {
    let pair_with_secret_name = text
        .split(|c: char| c.is_whitespace() || matches!(c, '&' | ';' | '?' | ','))
        .filter_map(|part| part.split_once(['=', ':']))
        .any(|(name, _)| is_sensitive_key(name.trim_start_matches('-')));
    let token_like = text.len() >= 20
        && !text.contains(char::is_whitespace)
        && !text.contains('/')
        && text.chars().any(|c| c.is_ascii_digit())
        && text.chars().any(|c| c.is_ascii_alphabetic());
    pair_with_secret_name || token_like
}

/// Mask what a person must not see in a changed leaf of free-form data (a
/// configuration, metadata): a leaf under a secret-looking key, under `env`
/// or `headers`, or whose text may be a credential ([`looks_secret`]) is
/// masked whole — named, never shown; inside a value, the same keys and
/// texts become `<redacted>`, and in a list the value after a
/// secret-looking flag (`--password x`). A secret reference shows its name
/// (it is no secret). URL passwords are hidden everywhere.
pub fn mask_for_display(change: &mut LeafChange) {
    let free_from = change
        .path
        .iter()
        .position(|k| FREE_FORM.contains(&k.as_str()));
    let below = free_from.map_or(&[][..], |at| &change.path[at + 1..]);
    let refs_only = [&change.old, &change.new]
        .iter()
        .all(|v| v.as_ref().is_none_or(is_secret_ref));
    let by_key = below
        .iter()
        .any(|k| is_sensitive_key(k) || OPAQUE.contains(&k.as_str()));
    let by_text = free_from.is_some()
        && [&change.old, &change.new]
            .iter()
            .any(|v| matches!(v, Some(Canon::Str(s)) if looks_secret(s)));
    if (by_key && !refs_only) || by_text {
        change.masked = true;
        change.old = change.old.as_ref().map(|_| Canon::from(REDACTED));
        change.new = change.new.as_ref().map(|_| Canon::from(REDACTED));
        return;
    }
    let mut masked = false;
    for side in [&mut change.old, &mut change.new] {
        if let Some(v) = side.as_mut() {
            masked |= mask_value(v, free_from.is_some());
        }
    }
    change.masked = masked;
}

/// Redact inside `v` (`free_form`: below a configuration or metadata key);
/// whether anything was.
fn mask_value(v: &mut Canon, free_form: bool) -> bool {
    if is_secret_ref(v) {
        return false;
    }
    match v {
        Canon::Str(s) if free_form && looks_secret(s) => {
            *s = REDACTED.to_owned();
            true
        }
        Canon::Str(s) => match redact_url_userinfo(s) {
            std::borrow::Cow::Owned(clean) => {
                *s = clean;
                true
            }
            std::borrow::Cow::Borrowed(_) => false,
        },
        Canon::List(items) => {
            let mut masked = false;
            let mut after_flag = false;
            for item in items.iter_mut() {
                if free_form && after_flag && matches!(item, Canon::Str(_)) {
                    *item = Canon::from(REDACTED);
                    masked = true;
                } else {
                    masked |= mask_value(item, free_form);
                }
                after_flag = matches!(item, Canon::Str(flag) if flag.starts_with('-')
                    && is_sensitive_key(flag.trim_start_matches('-')));
            }
            masked
        }
        Canon::Map(map) => {
            let mut masked = false;
            for (k, item) in map.iter_mut() {
                let opaque = is_sensitive_key(k) || OPAQUE.contains(&k.as_str());
                if free_form && opaque && !is_secret_ref(item) {
                    *item = Canon::from(REDACTED);
                    masked = true;
                } else {
                    masked |= mask_value(item, free_form || FREE_FORM.contains(&k.as_str()));
                }
            }
            masked
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load_str;

    fn comp(text: &str) -> Composition {
        let l = load_str("c.toml", text);
        assert!(!l.has_errors(), "{:?}", l.diagnostics);
        l.composition.unwrap()
    }

    fn rows(a: &str, b: &str) -> Vec<String> {
        changed_keys(&comp(a), &comp(b))
            .into_iter()
            .map(|c| format!("{} {:?} -> {:?} {}", c.path_text(), c.old, c.new, c.masked))
            .collect()
    }

    const BASE: &str = r#"version = 1
[plugins.pg]
version = "1.0.0"
provides = { database = "1.0.0" }
[entries.finance-db]
plugin = "pg"
config = { dsn = "postgres://u:pw-canary@h/db", api_key = "sk-canary-1", timeout = 5, "a.b" = 1, password = { secret = "DB_PW" } }
"#;

    #[test]
    fn every_changed_key_is_named_and_secrets_stay_masked() {
        let edited = BASE
            .replace("timeout = 5", "timeout = 30")
            .replace("\"a.b\" = 1", "\"a.b\" = 2")
            .replace("sk-canary-1", "sk-canary-2")
            .replace("pw-canary", "pw-canary-2")
            .replace("DB_PW", "DB_PASSWORD");
        let rows = rows(BASE, &edited);
        let text = rows.join("\n");
        assert!(!text.contains("canary"), "{text}");
        assert_eq!(
            rows,
            [
                r#"entries.finance-db.config."a.b" Some(Int(1)) -> Some(Int(2)) false"#,
                r#"entries.finance-db.config.api_key Some(Str("<redacted>")) -> Some(Str("<redacted>")) true"#,
                r#"entries.finance-db.config.dsn Some(Str("postgres://u:<redacted>@h/db")) -> Some(Str("postgres://u:<redacted>@h/db")) true"#,
                r#"entries.finance-db.config.password Some(Map({"secret": Str("DB_PW")})) -> Some(Map({"secret": Str("DB_PASSWORD")})) false"#,
                r#"entries.finance-db.config.timeout Some(Int(5)) -> Some(Int(30)) false"#,
            ]
        );
        assert!(self::rows(BASE, BASE).is_empty());
        // chassis's own keys are never masked, and an added entry's config
        // is redacted inside.
        let more = format!(
            "{BASE}[agents.a]\nprompt = \"p\"\nbudget = {{ tokens = 10 }}\n[entries.cache]\nplugin = \"pg\"\nconfig = {{ token = \"sk-canary-3\", size = 2 }}\n"
        );
        let rows = self::rows(BASE, &more);
        let text = rows.join("\n");
        assert!(!text.contains("canary"), "{text}");
        assert!(text.contains("budget"), "{text}");
        assert!(text.contains(r#""token": Str("<redacted>")"#), "{text}");
        let more2 = more.replace("tokens = 10", "tokens = 20");
        assert_eq!(
            self::rows(&more, &more2),
            ["agents.a.budget.tokens Some(Float(10.0)) -> Some(Float(20.0)) false"]
        );
    }

    #[test]
    fn a_scope_metadata_edit_is_a_changed_key_with_secrets_masked() {
        let old =
            "version = 1\n[scopes.\"/s\"]\nmetadata = { owner = \"a\", token = \"x-canary-1\" }\n";
        let new = old
            .replace("owner = \"a\"", "owner = \"b\"")
            .replace("x-canary-1", "x-canary-2");
        let rows = rows(old, &new);
        assert!(!rows.join("\n").contains("canary"), "{rows:?}");
        assert_eq!(
            rows,
            [
                r#"scopes."/s".metadata.owner Some(Str("a")) -> Some(Str("b")) false"#,
                r#"scopes."/s".metadata.token Some(Str("<redacted>")) -> Some(Str("<redacted>")) true"#,
            ]
        );
    }

    #[test]
    fn a_changed_added_or_removed_plugin_is_named_among_unchanged_ones() {
        let plugin = |name: &str, version: &str| {
            format!(
                "[plugins.{name}]\nversion = \"{version}\"\nprovides = {{ {name}-cap = \"1.0.0\" }}\n[entries.{name}-e]\nplugin = \"{name}\"\n"
            )
        };
        let old = format!(
            "version = 1\n{}{}{}",
            plugin("a", "1.0.0"),
            plugin("b", "1.0.0"),
            plugin("c", "1.0.0")
        );
        // `a` is edited, `b` stays, `c` goes, `d` comes (with its entry).
        let new = format!(
            "version = 1\n{}{}{}",
            plugin("a", "1.1.0"),
            plugin("b", "1.0.0"),
            plugin("d", "1.0.0")
        );
        // The changed keys' paths.
        let paths = |rows: &[String]| -> Vec<String> {
            rows.iter()
                .map(|r| r.split(' ').next().unwrap_or_default().to_owned())
                .collect()
        };
        let rows = rows(&old, &new);
        assert_eq!(
            paths(&rows),
            [
                "entries.c-e",
                "entries.d-e",
                "plugins.a.version",
                "plugins.c",
                "plugins.d"
            ],
            "{rows:#?}"
        );
        assert!(
            rows[2].contains(r#"Str("1.0.0")) -> Some(Str("1.1.0"))"#),
            "{rows:#?}"
        );
        // Versions equal as versions but written otherwise are changed keys
        // too, as the whole trees compared them.
        let rewritten = old
            .replace(
                "[plugins.b]\nversion = \"1.0.0\"",
                "[plugins.b]\nversion = \"1.0\"",
            )
            .replace("c-cap = \"1.0.0\"", "c-cap = \"1\"");
        assert_ne!(rewritten, old);
        let rows = self::rows(&old, &rewritten);
        assert_eq!(
            paths(&rows),
            ["plugins.b.version", "plugins.c.provides.c-cap"],
            "{rows:#?}"
        );
    }

    #[test]
    fn credentials_under_any_name_stay_masked() {
        let config = |c: &str| {
            format!(
                "version = 1\n[plugins.p]\nversion = \"1.0.0\"\n[entries.x]\nplugin = \"p\"\nconfig = {c}\n"
            )
        };
        let cases = [
            (
                "{ args = [\"--password\", \"canary-1\"] }",
                "{ args = [\"--password\", \"canary-2\"] }",
            ),
            (
                "{ args = [\"--api-key=canary-1\"] }",
                "{ args = [\"--api-key=canary-2\"] }",
            ),
            (
                "{ conn = \"host=h password=canary-1\" }",
                "{ conn = \"host=h password=canary-2\" }",
            ),
            (
                "{ url = \"https://h/x?api_key=canary-1\" }",
                "{ url = \"https://h/x?api_key=canary-2\" }",
            ),
            (
                "{ env = { OPENAI = \"canary-1\" } }",
                "{ env = { OPENAI = \"canary-2\" } }",
            ),
            (
                "{ headers = { X-Custom = \"canary-1\" } }",
                "{ headers = { X-Custom = \"canary-2\" } }",
            ),
            (
                "{ note = \"sk1canary1abcdefghijklmnop\" }",
                "{ note = \"sk1canary2abcdefghijklmnop\" }",
            ),
        ];
        for (old, new) in cases {
            let changed = rows(&config(old), &config(new));
            assert!(!changed.is_empty(), "{old}");
            let text = changed.join("\n");
            assert!(!text.contains("canary"), "{old}: {text}");
            // Added whole, inside a new entry, too.
            let added = rows(
                &config("{}"),
                &format!(
                    "{}[entries.y]\nplugin = \"p\"\nconfig = {new}\n",
                    config("{}")
                ),
            )
            .join("\n");
            assert!(!added.contains("canary"), "{new}: {added}");
        }
        // A value typed under a credential's key is masked wherever else
        // it is typed, here or in another entry.
        let repeated = rows(
            &config("{ password = \"CANARY-9c1e-secret\", note = \"x\" }"),
            &format!(
                "{}[entries.y]\nplugin = \"p\"\nconfig = {{ note = \"about CANARY-9c1e-secret\" }}\n",
                config("{ password = \"CANARY-9c1e-secret\", note = \"CANARY-9c1e-secret\" }")
            ),
        )
        .join("\n");
        assert!(!repeated.contains("CANARY"), "{repeated}");
        assert!(repeated.contains("entries.x.config.note"), "{repeated}");
        // A secret reference shows its name, under any key.
        let renamed = rows(
            &config("{ password = { secret = \"DB_PW\" } }"),
            &config("{ password = { secret = \"DB_PASSWORD\" } }"),
        );
        assert_eq!(renamed.len(), 1);
        assert!(
            renamed[0].contains("DB_PASSWORD") && renamed[0].ends_with("false"),
            "{renamed:?}"
        );
        // Ordinary values are shown.
        assert_eq!(
            rows(
                &config("{ model = \"gpt-4o\", n = 1 }"),
                &config("{ model = \"gpt-4.1\", n = 1 }")
            ),
            [r#"entries.x.config.model Some(Str("gpt-4o")) -> Some(Str("gpt-4.1")) false"#]
        );
    }
}
