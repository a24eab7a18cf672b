//! The composition format, version 1: one file's tables into declarations.
//!
//! Each top-level table is read by one function; a new table (say `agents`)
//! is one more key in [`ROOT_KEYS`], one more function and one more field in
//! [`FileOut`]. Cross-file checks (duplicates, references) happen in
//! [`super::link`].

use std::collections::BTreeMap;

use toml::de::DeTable;

use super::plugin::{PLUGIN_KEYS, TOOL_KEYS, plugin};
use super::reader::{FileCtx, KeyPath, Node, Str, TableReader};
use super::values::config_table;
use crate::engine::diag::Code;
use crate::engine::model::{
    CapabilityName, ConfigValue, EntryId, EntryRef, IdError, Manifest, Requirement, ScopeDecl,
    ScopePath, SmallMap, ToolName,
};
use crate::engine::span::{Located, Origin, Span};
use crate::engine::specifier::Specifier;

/// Supported format versions.
pub const SUPPORTED_VERSIONS: &[i64] = &[1];

/// Keys of the document root.
pub const ROOT_KEYS: &[&str] = &[
    "version", "include", "name", "prefer", "plugins", "entries", "scopes", "policy", "agents",
    "store", "serve",
];
/// Keys of `[serve]` (a host settings table).
pub const SERVE_KEYS: &[&str] = &[
    "tokens",
    "auth_excluded",
    "session_ttl_seconds",
    "approval_timeout_seconds",
];
/// Keys of `[store]` (a host settings table).
pub const STORE_KEYS: &[&str] = &["path"];
/// Keys of an `[entries.<id>]` table.
pub const ENTRY_KEYS: &[&str] = &[
    "plugin",
    "scope",
    "enabled",
    "enabled_if",
    "on_failure",
    "config",
    "prefer",
];
/// Keys of a `[scopes."<path>"]` table.
pub const SCOPE_KEYS: &[&str] = &["capabilities", "tools", "requires", "prefer", "metadata"];

/// Every table kind with its accepted keys (the schema test compares them).
pub const TABLE_KEYS: &[(&str, &[&str])] = &[
    ("root", ROOT_KEYS),
    ("plugin", PLUGIN_KEYS),
    ("tool", TOOL_KEYS),
    ("entry", ENTRY_KEYS),
    ("scope", SCOPE_KEYS),
    ("policy", super::policy::POLICY_KEYS),
    ("tool_policy", super::policy::TOOL_POLICY_KEYS),
    ("agent", super::agent::AGENT_KEYS),
    ("store", STORE_KEYS),
    ("serve", SERVE_KEYS),
];

/// A declaration keyed by name (plugin name, entry id, scope path, or the
/// capability of a global preference), with where the key was written.
#[derive(Debug)]
pub(crate) struct Def<T> {
    pub name: String,
    pub origin: Origin,
    pub value: T,
}

/// An `include = [...]` item.
#[derive(Debug)]
pub(crate) struct Include {
    pub path: String,
    pub origin: Origin,
}

/// An entry as declared; `None` fields and `broken` mean a problem was
/// already reported, so the entry is skipped (its references still checked).
#[derive(Debug)]
pub(crate) struct EntryDecl {
    pub id: Option<EntryId>,
    pub plugin: Option<Located<String>>,
    pub scope: Option<Located<ScopePath>>,
    pub enabled: bool,
    pub config: Option<ConfigValue>,
    pub prefer: BTreeMap<CapabilityName, EntryRef>,
    pub broken: bool,
    /// `on_failure = "skip"`.
    pub skip_on_failure: bool,
    /// `enabled_if`, when given.
    pub enabled_if: Option<crate::engine::model::Condition>,
    /// For an entry naming a built-in kind: its derived manifest or the
    /// configuration's problems (used unless a `[plugins]` table shadows it).
    pub builtin: Option<super::builtin::BuiltinOutcome>,
}

/// Everything one file declares.
#[derive(Debug, Default)]
pub(crate) struct FileOut {
    pub includes: Vec<Include>,
    /// `None`: the plugin had errors.
    pub plugins: Vec<Def<Option<Manifest>>>,
    /// Per process plugin (by its `Def`'s origin), the files to read and
    /// hash into its identity.
    pub plugin_files: Vec<(Origin, Vec<super::plugin::WantedFile>)>,
    pub entries: Vec<Def<EntryDecl>>,
    /// The flag says whether the scope had errors.
    pub scopes: Vec<Def<(Option<ScopePath>, ScopeDecl, bool)>>,
    pub prefer: Vec<Def<Option<(CapabilityName, EntryRef)>>>,
    pub policy: Vec<Def<Option<crate::engine::model::PolicyDecl>>>,
    /// `None`: the agent had errors.
    pub agents: Vec<Def<Option<super::agent::WalkedAgent>>>,
    /// Host settings (read from the root file only).
    pub host: crate::engine::model::HostSettings,
}

impl FileOut {
    /// Add what a later run of pieces of the same file declares (pieces
    /// never share an item, and a root table other than `plugins`,
    /// `entries` and `agents` is in one piece only).
    pub(crate) fn append(&mut self, mut next: FileOut) {
        self.includes.append(&mut next.includes);
        self.plugins.append(&mut next.plugins);
        self.plugin_files.append(&mut next.plugin_files);
        self.entries.append(&mut next.entries);
        self.scopes.append(&mut next.scopes);
        self.prefer.append(&mut next.prefer);
        self.policy.append(&mut next.policy);
        self.agents.append(&mut next.agents);
        let crate::engine::model::HostSettings { name, store, serve } = next.host;
        self.host.name = self.host.name.take().or(name);
        self.host.store = self.host.store.take().or(store);
        self.host.serve = self.host.serve.take().or(serve);
    }
}

/// Report an [`IdError`] at `span`.
pub(crate) fn bad_name(cx: &mut FileCtx<'_>, span: Span, err: IdError) {
    cx.error(Code::BadName, span, err.message, "invalid name")
        .help
        .extend(err.help);
}

/// A capability name from a key.
pub(crate) fn capability(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Option<CapabilityName> {
    CapabilityName::new(node.key)
        .map_err(|e| bad_name(cx, node.key_span, e))
        .ok()
}

/// The origin spanning a key and its value.
pub(crate) fn key_value_origin(cx: &FileCtx<'_>, node: &Node<'_, '_>) -> Origin {
    let end = node.span.end.max(node.key_span.end);
    cx.origin(Span {
        start: node.key_span.start.min(node.span.start),
        end,
    })
}

/// A specifier string, reporting `load::bad-specifier` inside the string.
pub(crate) fn specifier(
    cx: &mut FileCtx<'_>,
    node: &Node<'_, '_>,
    s: Str<'_>,
) -> Option<Specifier> {
    Specifier::parse(s.value)
        .map_err(|e| {
            let at = s.sub_span(e.span.clone());
            cx.error(
                Code::BadSpecifier,
                at,
                format!("bad specifier `{}` for `{}`", s.value, node.path),
                &e.message,
            )
            .help
            .extend(e.help);
        })
        .ok()
}

/// A `capability = "specifier"` table.
pub(crate) fn requirements(
    cx: &mut FileCtx<'_>,
    node: &Node<'_, '_>,
    optional: bool,
) -> SmallMap<CapabilityName, Requirement> {
    let mut out = SmallMap::new();
    for item in node.entries(cx).unwrap_or_default() {
        let cap = capability(cx, &item);
        let spec = item.str(cx).and_then(|s| specifier(cx, &item, s));
        if let (Some(capability), Some(specifier)) = (cap, spec) {
            let origin = Some(key_value_origin(cx, &item));
            out.insert(
                capability.clone(),
                Requirement {
                    capability,
                    specifier,
                    optional,
                    origin,
                },
            );
        }
    }
    out
}

/// A `capability = "entry id"` preference table.
fn preferences(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> BTreeMap<CapabilityName, EntryRef> {
    let mut out = BTreeMap::new();
    for item in node.entries(cx).unwrap_or_default() {
        if let Some(pair) = preference(cx, &item) {
            out.insert(pair.0, pair.1);
        }
    }
    out
}

fn preference(cx: &mut FileCtx<'_>, item: &Node<'_, '_>) -> Option<(CapabilityName, EntryRef)> {
    let cap = capability(cx, item);
    let s = item.str(cx)?;
    let id = EntryId::new(s.value)
        .map_err(|e| bad_name(cx, s.span, e))
        .ok()?;
    Some((cap?, Located::new(id, Some(cx.origin(s.span)))))
}

/// Walk one parsed file, or one piece of it ([`super::pieces`]), into
/// `out` (pieces never share an item, and a root table other than
/// `plugins`, `entries` and `agents` is in one piece only). `root` says
/// whether this is the root file; `first` whether this is the file's first
/// piece, where `version` is (required in the root file). `false`: the file
/// has an unsupported format version and is not read further.
pub(crate) fn walk_file(
    cx: &mut FileCtx<'_>,
    doc: &DeTable<'_>,
    root: bool,
    first: bool,
    out: &mut FileOut,
) -> bool {
    let r = TableReader::new(doc, Span::default(), KeyPath::root(), ROOT_KEYS);
    if first && !format_version(cx, &r, root) {
        return false;
    }
    if let Some(node) = r.get("include") {
        includes(cx, &node, out);
    }
    if let Some(node) = r.get("prefer") {
        for item in node.entries(cx).unwrap_or_default() {
            let value = preference(cx, &item);
            out.prefer.push(Def {
                name: item.key.to_owned(),
                origin: cx.origin(item.key_span),
                value,
            });
        }
    }
    if let Some(node) = r.get("plugins")
        && let Some(items) = node.entries_iter(cx)
    {
        out.plugins.reserve(items.len());
        for item in items {
            let before = cx.errors();
            let parsed = plugin(cx, &item);
            let origin = cx.origin(item.key_span);
            let value = parsed
                .filter(|_| cx.errors() == before)
                .map(|(manifest, files)| {
                    if manifest.process.is_some() {
                        out.plugin_files.push((origin, files));
                    }
                    manifest
                });
            out.plugins.push(Def {
                name: item.key.to_owned(),
                origin,
                value,
            });
        }
    }
    if let Some(node) = r.get("entries")
        && let Some(items) = node.entries_iter(cx)
    {
        out.entries.reserve(items.len());
        for item in items {
            let value = entry(cx, &item);
            out.entries.push(Def {
                name: item.key.to_owned(),
                origin: cx.origin(item.key_span),
                value,
            });
        }
    }
    if let Some(node) = r.get("scopes") {
        for item in node.entries(cx).unwrap_or_default() {
            let value = scope(cx, &item);
            out.scopes.push(Def {
                name: item.key.to_owned(),
                origin: cx.origin(item.key_span),
                value,
            });
        }
    }
    if let Some(node) = r.get("agents") {
        for item in node.entries(cx).unwrap_or_default() {
            let value = super::agent::agent(cx, &item);
            out.agents.push(Def {
                name: item.key.to_owned(),
                origin: cx.origin(item.key_span),
                value,
            });
        }
    }
    if let Some(node) = r.get("name")
        && host_table(cx, &node, root)
    {
        out.host.name = composition_name(cx, &node);
    }
    if let Some(node) = r.get("store")
        && host_table(cx, &node, root)
    {
        out.host.store = Some(store(cx, &node));
    }
    if let Some(node) = r.get("serve")
        && host_table(cx, &node, root)
    {
        out.host.serve = Some(serve(cx, &node));
    }
    if let Some(node) = r.get("policy") {
        let value = super::policy::policy(cx, &node);
        out.policy.push(Def {
            name: "policy".to_owned(),
            origin: cx.origin(node.key_span),
            value,
        });
    }
    r.finish(cx);
    true
}

/// Whether a host settings table may be read here: in the root file only
/// (an include that declares one is an error: host settings configure the
/// process that loads the root).
fn host_table(cx: &mut FileCtx<'_>, node: &Node<'_, '_>, root: bool) -> bool {
    if root {
        return true;
    }
    let d = cx.error(
        Code::HostSettingInInclude,
        node.key_span,
        format!(
            "{} configures the host, so it belongs in the root composition file, not in an include",
            if node.key == "name" {
                "`name`".to_owned()
            } else {
                format!("`[{}]`", node.key)
            }
        ),
        "in an included file",
    );
    d.help
        .push("move it to the file you pass to chassis".to_owned());
    false
}

/// `name = "…"`: a lineage name (no control characters; at most 200
/// bytes; not empty).
fn composition_name(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Option<Located<String>> {
    let s = node.str(cx)?;
    let problem = if s.value.trim().is_empty() {
        Some("`name` is empty")
    } else if s.value.chars().any(char::is_control) {
        Some("`name` holds a control character")
    } else if s.value.len() > 200 {
        Some("`name` is longer than 200 bytes")
    } else {
        None
    };
    if let Some(problem) = problem {
        let d = cx.error(Code::InvalidValue, s.span, problem, "a composition name");
        d.help.push(
            "a name such as `support-bot`; it names this composition's history in the store".into(),
        );
        return None;
    }
    Some(Located::new(s.value.to_owned(), Some(cx.origin(s.span))))
}

/// `[store]`.
fn store(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> crate::engine::model::StoreSettings {
    let mut out = crate::engine::model::StoreSettings::default();
    let Some(r) = node.reader(cx, STORE_KEYS) else {
        return out;
    };
    if let Some(n) = r.get("path")
        && let Some(s) = n.str(cx)
    {
        if s.value.trim().is_empty() {
            cx.error(
                Code::InvalidValue,
                s.span,
                "`store.path` is empty",
                "a path",
            );
        } else {
            out.path = Some(Located::new(s.value.to_owned(), Some(cx.origin(s.span))));
        }
    }
    r.finish(cx);
    out
}

/// A positive number of seconds at `key` of `r`, else an error at it.
fn seconds(cx: &mut FileCtx<'_>, r: &TableReader<'_, '_>, key: &str) -> Option<u64> {
    let n = r.get(key)?;
    let v = n.int(cx)?;
    match u64::try_from(v) {
        Ok(secs) if secs > 0 => Some(secs),
        _ => {
            cx.error(
                Code::InvalidValue,
                n.span,
                format!("`{key}` must be a positive number of seconds"),
                "not positive",
            );
            None
        }
    }
}

/// `[serve]`: tokens as secret references only, auth exclusions of the
/// routes that may have them.
fn serve(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> crate::engine::model::ServeSettings {
    use crate::engine::model::{AUTH_EXCLUDABLE, is_auth_excludable};
    let mut out = crate::engine::model::ServeSettings::default();
    let Some(r) = node.reader(cx, SERVE_KEYS) else {
        return out;
    };
    if let Some(n) = r.get("tokens") {
        for item in n.items(cx).unwrap_or_default() {
            match super::values::config_value(cx, &item, false) {
                Some(crate::engine::model::ConfigValue::Secret(s)) => out
                    .tokens
                    .push(Located::new(s.name, Some(cx.origin(item.span)))),
                Some(_) => {
                    let d = cx.error(
                        Code::InvalidValue,
                        item.span,
                        "a `[serve]` token must be a secret reference",
                        "not `{ secret = \"NAME\" }`",
                    );
                    d.help.push(
                        "write `tokens = [{ secret = \"CHASSIS_TOKEN\" }]` and set the token in that variable; a literal token would sit in the file".into(),
                    );
                }
                None => {}
            }
        }
    }
    out.session_ttl_seconds = seconds(cx, &r, "session_ttl_seconds");
    out.approval_timeout_seconds = seconds(cx, &r, "approval_timeout_seconds");
    if let Some(n) = r.get("auth_excluded") {
        for item in n.items(cx).unwrap_or_default() {
            let Some(s) = item.str(cx) else { continue };
            if is_auth_excludable(s.value) {
                out.auth_excluded
                    .push(Located::new(s.value.to_owned(), Some(cx.origin(s.span))));
            } else {
                let d = cx.error(
                    Code::InvalidValue,
                    s.span,
                    format!("`{}` cannot be excluded from authentication", s.value),
                    "not an excludable route",
                );
                d.help.push(format!(
                    "routes that may be answered without a token: {}, and exact paths of plugin routes (`/plugins/ENTRY/PATH`)",
                    AUTH_EXCLUDABLE.join(", ")
                ));
            }
        }
    }
    r.finish(cx);
    out
}

/// Check `version`; `false` when the file must not be read further.
fn format_version(cx: &mut FileCtx<'_>, r: &TableReader<'_, '_>, root: bool) -> bool {
    let supported: Vec<String> = SUPPORTED_VERSIONS.iter().map(ToString::to_string).collect();
    let help = format!("supported versions: {}", supported.join(", "));
    let node = if root {
        r.require(cx, "version")
    } else {
        r.get("version")
    };
    let Some(node) = node else {
        if root && let Some(d) = cx.diags.last_mut() {
            d.help.push("start the file with `version = 1`".into());
        }
        return true;
    };
    let Some(v) = node.value.as_integer() else {
        cx.error(
            Code::UnsupportedVersion,
            node.span,
            "the format `version` must be an integer",
            "not an integer",
        )
        .help
        .push(help);
        return true;
    };
    if super::reader::parse_int(v.as_str(), v.radix())
        .is_some_and(|v| SUPPORTED_VERSIONS.contains(&v))
    {
        return true;
    }
    cx.error(
        Code::UnsupportedVersion,
        node.span,
        format!("composition format version `{v}` is not supported"),
        "unsupported version",
    )
    .help
    .push(help);
    false
}

fn includes(cx: &mut FileCtx<'_>, node: &Node<'_, '_>, out: &mut FileOut) {
    for item in node.items(cx).unwrap_or_default() {
        let Some(s) = item.str(cx) else { continue };
        if s.value.trim().is_empty() {
            cx.error(
                Code::InvalidValue,
                s.span,
                "an include path must not be empty",
                "empty path",
            );
            continue;
        }
        out.includes.push(Include {
            path: s.value.to_owned(),
            origin: cx.origin(s.span),
        });
    }
}

/// An entry id that begins with `/` reads as a scope path where a command
/// takes either (`explain requirement /x database` explains scope `/x`,
/// as `check`'s hints spell it): refused, at its key.
fn scope_like(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> bool {
    if !node.key.starts_with('/') {
        return false;
    }
    let d = cx.error(
        Code::BadName,
        node.key_span,
        format!("entry id `{}` begins with `/`", node.key),
        "an entry id, not a scope path",
    );
    d.help.push(
        "commands that take an entry or a scope read `/…` as a scope path: name the entry without the leading `/` (its scope is `scope = \"/…\"`)"
            .to_owned(),
    );
    true
}

fn entry(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> EntryDecl {
    let before = cx.errors();
    let id = EntryId::new(node.key)
        .map_err(|e| bad_name(cx, node.key_span, e))
        .ok()
        .filter(|_| !scope_like(cx, node));
    let mut decl = EntryDecl {
        id,
        plugin: None,
        scope: None,
        enabled: true,
        config: None,
        prefer: BTreeMap::new(),
        broken: false,
        builtin: None,
        enabled_if: None,
        skip_on_failure: false,
    };
    let Some(r) = node.reader(cx, ENTRY_KEYS) else {
        decl.broken = true;
        return decl;
    };
    decl.plugin = match r.get("plugin") {
        Some(n) => n
            .str(cx)
            .map(|s| Located::new(s.value.to_owned(), Some(cx.origin(s.span)))),
        None => Some(Located::new(
            node.key.to_owned(),
            Some(cx.origin(node.key_span)),
        )),
    };
    decl.scope = match r.get("scope") {
        Some(n) => n.str(cx).and_then(|s| match ScopePath::new(s.value) {
            Ok(p) => Some(Located::new(p, Some(cx.origin(s.span)))),
            Err(e) => {
                bad_name(cx, s.span, e);
                None
            }
        }),
        None => Some(Located::new(
            ScopePath::root(),
            Some(cx.origin(node.key_span)),
        )),
    };
    if let Some(n) = r.get("enabled") {
        decl.enabled = n.bool(cx).unwrap_or(true);
    }
    if let Some(n) = r.get("on_failure")
        && let Some(s) = n.str(cx)
    {
        match s.value {
            "skip" => decl.skip_on_failure = true,
            "fail" => {}
            other => invalid(
                cx,
                s.span,
                format!(
                    "`{}` must be `fail` (the default) or `skip`, not `{other}`",
                    n.path
                ),
                "unknown policy",
            ),
        }
    }
    if let Some(n) = r.get("enabled_if") {
        decl.enabled_if = condition(cx, &n);
    }
    let config_node = r.get("config");
    // A `secrets.env` configuration holds variable names under secret
    // names (`"db.password" = "FIN_DB_PW"`), never values.
    let warn_literal = decl
        .plugin
        .as_ref()
        .is_none_or(|p| p.value != crate::engine::builtin::system::SECRETS_ENV.name);
    decl.config = match &config_node {
        Some(n) => config_table(cx, n, warn_literal).map(ConfigValue::Table),
        None => Some(ConfigValue::empty_table()),
    };
    if let (Some(plugin), Some(config)) = (&decl.plugin, &decl.config)
        && let Some(kind) = crate::engine::builtin::find(&plugin.value)
    {
        decl.builtin = Some(super::builtin::check(
            cx,
            kind,
            node.key,
            config,
            config_node.as_ref(),
            node.key_span,
        ));
    }
    if let Some(n) = r.get("prefer") {
        decl.prefer = preferences(cx, &n);
    }
    r.finish(cx);
    decl.broken = cx.errors() > before;
    decl
}

/// `enabled_if = { env = "NAME" }` or `{ env = ["A", "B"] }`.
fn condition(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Option<crate::engine::model::Condition> {
    let r = node.reader(cx, &["env"])?;
    let mut env = Vec::new();
    // Whether a name was given at all (a refused one is already reported).
    let mut named = false;
    if let Some(n) = r.get("env") {
        let items = match n.value {
            toml::de::DeValue::Array(_) => n.items(cx).unwrap_or_default(),
            _ => vec![n.clone()],
        };
        for item in items {
            if let Some(s) = item.str(cx) {
                named = true;
                if s.value.is_empty() || s.value.contains('=') {
                    // `NAME=value` may carry a secret: the snippet hides it.
                    cx.concealed.push(cx.in_file(s.span));
                    invalid(
                        cx,
                        s.span,
                        format!(
                            "`{}` must name environment variables (the name only); the value is not shown",
                            n.path
                        ),
                        "not a variable name",
                    );
                } else {
                    env.push(s.value.to_owned());
                }
            }
        }
    }
    r.finish(cx);
    if env.is_empty() && named {
        return None;
    }
    if env.is_empty() {
        invalid(
            cx,
            node.span,
            format!("`{}` needs `env = \"VARIABLE\"` (or a list)", node.path),
            "no condition",
        );
        return None;
    }
    Some(crate::engine::model::Condition {
        env,
        origin: Some(cx.origin(node.span)),
    })
}

fn scope(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> (Option<ScopePath>, ScopeDecl, bool) {
    let before = cx.errors();
    let path = ScopePath::new(node.key)
        .map_err(|e| bad_name(cx, node.key_span, e))
        .ok();
    let mut decl = ScopeDecl::new(path.clone().unwrap_or_else(ScopePath::root));
    decl.origin = Some(cx.origin(node.key_span));
    if let Some(r) = node.reader(cx, SCOPE_KEYS) {
        if let Some(n) = r.get("capabilities") {
            let items = n.items(cx).unwrap_or_default();
            let names = items.iter().filter_map(|i| {
                let s = i.str(cx)?;
                CapabilityName::new(s.value)
                    .map_err(|e| bad_name(cx, s.span, e))
                    .ok()
            });
            decl.capabilities = Some(names.collect());
        }
        if let Some(n) = r.get("tools") {
            let items = n.items(cx).unwrap_or_default();
            let names = items.iter().filter_map(|i| {
                let s = i.str(cx)?;
                ToolName::new(s.value)
                    .map_err(|e| bad_name(cx, s.span, e))
                    .ok()
            });
            decl.tools = Some(names.collect());
        }
        if let Some(n) = r.get("requires") {
            decl.requirements = requirements(cx, &n, false);
        }
        if let Some(n) = r.get("prefer") {
            decl.prefer = preferences(cx, &n);
        }
        if let Some(n) = r.get("metadata") {
            decl.metadata = metadata(cx, &n);
        }
        r.finish(cx);
    }
    let broken = cx.errors() > before;
    (path, decl, broken)
}

/// Report a value outside what a key accepts.
pub(crate) fn invalid(cx: &mut FileCtx<'_>, span: Span, message: String, label: &str) {
    cx.error(Code::InvalidValue, span, message, label);
}

/// A free-form metadata table.
pub(crate) fn metadata(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> BTreeMap<String, ConfigValue> {
    config_table(cx, node, false).unwrap_or_default()
}
