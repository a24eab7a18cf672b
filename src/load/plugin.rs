//! `[plugins.<name>]`: declared plugin manifests.

use std::collections::BTreeMap;

use toml::de::DeValue;

use super::reader::{FileCtx, Node, Str};
use super::values::json_value;
use super::walk::{bad_name, capability, invalid, key_value_origin, metadata, requirements};
use crate::engine::diag::{Code, Diagnostic};
use crate::engine::model::{
    AgentGuide, GuideExample, Manifest, PROCESS_KIND, ProcessCommand, Provided, ToolDecl, ToolName,
    Visibility,
};
use crate::engine::version::Version;

/// Keys of a `[plugins.<name>]` table.
pub const PLUGIN_KEYS: &[&str] = &[
    "name",
    "version",
    "provides",
    "requires",
    "optional",
    "permissions",
    "config_version",
    "metadata",
    "tools",
    "kind",
    "agent",
    "command",
    "env",
    "files",
    "startup_timeout_seconds",
];
/// Keys of a `[[plugins.<name>.tools]]` table.
pub const TOOL_KEYS: &[&str] = &["name", "description", "args", "result", "agent"];
/// Keys of an `agent = { … }` guide (plugins and tools).
pub const GUIDE_KEYS: &[&str] = &[
    "title",
    "summary",
    "when_to_use",
    "when_not_to_use",
    "examples",
    "visibility",
];

/// An `agent = { … }` guide; `plugin_level` examples must name a tool.
fn guide(cx: &mut FileCtx<'_>, node: &Node<'_, '_>, plugin_level: bool) -> Option<AgentGuide> {
    let r = node.reader(cx, GUIDE_KEYS)?;
    let mut g = AgentGuide::default();
    let text = |cx: &mut FileCtx<'_>, key: &str| {
        r.get(key)
            .and_then(|n| n.str(cx).map(|s| s.value.to_owned()))
    };
    g.title = text(cx, "title");
    g.summary = text(cx, "summary");
    g.when_to_use = text(cx, "when_to_use");
    g.when_not_to_use = text(cx, "when_not_to_use");
    if let Some(n) = r.get("visibility")
        && let Some(s) = n.str(cx)
    {
        match Visibility::parse(s.value) {
            Some(v) => g.visibility = v,
            None => invalid(
                cx,
                s.span,
                format!(
                    "`{}` must be `always`, `on-demand` or `silent`, not `{}`",
                    n.path, s.value
                ),
                "unknown visibility",
            ),
        }
    }
    if let Some(n) = r.get("examples") {
        for item in n.items(cx).unwrap_or_default() {
            let Some(er) = item.reader(cx, &["tool", "args", "description"]) else {
                continue;
            };
            let tool = er
                .get("tool")
                .and_then(|t| t.str(cx).map(|s| (s.value.to_owned(), cx.origin(s.span))));
            if plugin_level && tool.is_none() {
                invalid(
                    cx,
                    item.span,
                    format!("`{}` needs the `tool` it calls", item.path),
                    "which tool?",
                );
            }
            let args = er
                .get("args")
                .and_then(|a| json_value(cx, &a))
                .unwrap_or_else(|| serde_json::json!({}));
            let description = er
                .get("description")
                .and_then(|d| d.str(cx).map(|s| s.value.to_owned()))
                .unwrap_or_default();
            er.finish(cx);
            if let Some((_, origin)) = &tool {
                g.example_origins.push(*origin);
            }
            g.examples.push(GuideExample {
                tool: tool.map(|(t, _)| t),
                args,
                description,
            });
        }
    }
    r.finish(cx);
    Some(g)
}

/// A version string, reporting `load::bad-version` inside the string.
fn version(cx: &mut FileCtx<'_>, node: &Node<'_, '_>, s: Str<'_>) -> Option<Version> {
    Version::parse(s.value)
        .map_err(|e| {
            let at = s.sub_span(e.span.clone());
            cx.error(
                Code::BadVersion,
                at,
                format!("bad version `{}` for `{}`", s.value, node.path),
                &e.message,
            )
            .help
            .extend(e.help);
        })
        .ok()
}

/// A file a process plugin's identity covers, before it is read.
#[derive(Debug)]
pub(crate) struct WantedFile {
    /// As written, relative to the declaring file's folder (normalized
    /// when it is read).
    pub path: String,
    /// Where it is named.
    pub origin: crate::engine::span::Origin,
    /// Listed in `files` (a missing one is an error) rather than an argv
    /// entry that may or may not be a file.
    pub required: bool,
    /// The program itself, named by a relative path (`./plugin`): it counts
    /// only when no argument is a file (else it runs them: an interpreter).
    pub program: bool,
}

/// `command`, `env` and `files` of a process plugin: the command (files
/// not yet read) and the files to read.
fn process(
    cx: &mut FileCtx<'_>,
    r: &super::reader::TableReader<'_, '_>,
) -> Option<(ProcessCommand, Vec<WantedFile>)> {
    let command = r.get("command")?;
    let mut argv = Vec::new();
    let mut wanted = Vec::new();
    let items = command.items(cx).unwrap_or_default();
    if items.is_empty() {
        invalid(
            cx,
            command.span,
            format!(
                "`{}` must name a program: `[\"python3\", \"plugin.py\"]`",
                command.path
            ),
            "empty command",
        );
    }
    for (position, item) in items.into_iter().enumerate() {
        let Some(s) = item.str(cx) else { continue };
        if s.value.is_empty() || s.value.contains('\0') {
            invalid(
                cx,
                s.span,
                format!("`{}` must not be empty or contain NUL", item.path),
                "bad argument",
            );
            continue;
        }
        argv.push(s.value.to_owned());
        // The program itself (`python3`, a venv's interpreter) is not the
        // plugin's code: by default only its arguments that are files are,
        // or, when none is, the program given as a path beside the
        // manifest (`./plugin`: a compiled plugin, a script with a `#!`).
        let program = position == 0;
        let named = if program {
            s.value.contains('/')
        } else {
            !s.value.starts_with('-')
        };
        if named && !s.value.contains(char::is_whitespace) {
            wanted.push((s.value.to_owned(), cx.origin(s.span), program));
        }
    }
    // `-m app` / `-c code`: the program is an interpreter running a module
    // or a string, not the plugin's code.
    if argv.iter().skip(1).any(|a| a == "-m" || a == "-c") {
        wanted.retain(|(_, _, program)| !program);
    }
    let mut env = Vec::new();
    if let Some(n) = r.get("env") {
        for item in n.items(cx).unwrap_or_default() {
            let Some(s) = item.str(cx) else { continue };
            let valid = !s.value.is_empty()
                && !s.value.starts_with(|c: char| c.is_ascii_digit())
                && s.value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if valid {
                env.push(s.value.to_owned());
            } else {
                invalid(
                    cx,
                    s.span,
                    format!("`{}` is not an environment variable name", s.value),
                    "expected letters, digits and `_`",
                );
            }
        }
    }
    env.sort();
    env.dedup();
    let files = match r.get("files") {
        Some(n) => {
            let mut listed = Vec::new();
            for item in n.items(cx).unwrap_or_default() {
                let Some(s) = item.str(cx) else { continue };
                if s.value.is_empty() || std::path::Path::new(s.value).is_absolute() {
                    invalid(
                        cx,
                        s.span,
                        format!(
                            "`{}` must be a path relative to this file's folder",
                            item.path
                        ),
                        "relative path expected",
                    );
                    continue;
                }
                listed.push(WantedFile {
                    path: s.value.to_owned(),
                    origin: cx.origin(s.span),
                    required: true,
                    program: false,
                });
            }
            listed
        }
        None => wanted
            .into_iter()
            .map(|(path, origin, program)| WantedFile {
                path,
                origin,
                required: false,
                program,
            })
            .collect(),
    };
    let mut startup_timeout = None;
    if let Some(n) = r.get("startup_timeout_seconds") {
        match super::values::json_value(cx, &n).and_then(|v| v.as_f64()) {
            Some(s) if s > 0.0 && s <= 3600.0 => {
                startup_timeout = Some(std::time::Duration::from_secs_f64(s));
            }
            _ => invalid(
                cx,
                n.span,
                format!(
                    "`{}` must be a number of seconds, more than 0 and at most 3600",
                    n.path
                ),
                "out of range",
            ),
        }
    }
    Some((
        ProcessCommand {
            argv,
            env,
            files: Vec::new(),
            startup_timeout,
            dir: std::path::PathBuf::new(),
            pinned: None,
        },
        files,
    ))
}

/// A plugin manifest; `None` (or errors recorded) when it is broken. A
/// process plugin's files come back to be read and hashed by the caller.
pub(crate) fn plugin(
    cx: &mut FileCtx<'_>,
    node: &Node<'_, '_>,
) -> Option<(Manifest, Vec<WantedFile>)> {
    if node.key.is_empty() || node.key.trim() != node.key || node.key.contains(char::is_control) {
        invalid(
            cx,
            node.key_span,
            format!("plugin name `{}` is not a valid catalog name", node.key),
            "invalid name",
        );
    }
    let r = node.reader(cx, PLUGIN_KEYS)?;
    let name = match r.get("name") {
        Some(n) => n.str(cx).map(|s| {
            if s.value.trim().is_empty() {
                invalid(
                    cx,
                    s.span,
                    format!("`{}` must not be empty", n.path),
                    "empty name",
                );
            }
            s.value.to_owned()
        }),
        None => Some(node.key.to_owned()),
    };
    let version = r
        .require(cx, "version")
        .and_then(|n| n.str(cx).and_then(|s| version(cx, &n, s)));
    let mut manifest = Manifest::new(
        name.unwrap_or_default(),
        version.unwrap_or_else(|| Version::parse("0").expect("0")),
    );
    manifest.origin = Some(cx.origin(node.key_span));
    if let Some(n) = r.get("provides") {
        for item in n.entries(cx).unwrap_or_default() {
            if let Some(p) = provided(cx, &item) {
                manifest.provides.insert(p.capability.clone(), p);
            }
        }
    }
    if let Some(n) = r.get("requires") {
        manifest.requires = requirements(cx, &n, false);
    }
    if let Some(n) = r.get("optional") {
        let required: BTreeMap<&str, Node<'_, '_>> = r
            .get("requires")
            .map(|n| n.table_entries())
            .unwrap_or_default()
            .into_iter()
            .map(|n| (n.key, n))
            .collect();
        for (cap, req) in requirements(cx, &n, true) {
            if let Some(first) = required.get(cap.as_str()) {
                let opt = req.origin;
                let d = Diagnostic::error(
                    Code::RequiredAndOptional,
                    format!(
                        "capability `{cap}` of plugin `{}` is both required and optional",
                        node.key
                    ),
                )
                .at(opt, "declared optional here")
                .also(Some(cx.origin(first.key_span)), "required here")
                .with_help("keep it in `requires` or in `optional`, not both");
                cx.push(d);
            } else {
                manifest.requires.insert(cap, req);
            }
        }
    }
    if let Some(n) = r.get("permissions") {
        for item in n.items(cx).unwrap_or_default() {
            let Some(s) = item.str(cx) else { continue };
            let name = s.value.split_once(':').map_or(s.value, |(n, _)| n);
            if name.trim().is_empty() {
                invalid(
                    cx,
                    s.span,
                    format!("permission `{}` has an empty name", s.value),
                    "expected `name[:resource]`",
                );
                continue;
            }
            manifest.permissions.push(s.value.to_owned());
        }
    }
    if let Some(n) = r.get("config_version")
        && let Some(v) = n.int(cx)
    {
        match u32::try_from(v) {
            Ok(v) => manifest.config_version = v,
            Err(_) => invalid(
                cx,
                n.span,
                format!("`{}` must be between 0 and {}", n.path, u32::MAX),
                "out of range",
            ),
        }
    }
    if let Some(n) = r.get("metadata") {
        manifest.metadata = metadata(cx, &n);
    }
    if let Some(n) = r.get("tools") {
        manifest.tools = tools(cx, &n, node.key);
    }
    if let Some(n) = r.get("agent") {
        manifest.guide = guide(cx, &n, true);
        if let Some(g) = &manifest.guide {
            let named = g.examples.iter().filter(|e| e.tool.is_some());
            for (ex, origin) in named.zip(&g.example_origins) {
                let Some(tool) = &ex.tool else { continue };
                if !manifest.tools.iter().any(|t| t.name.as_str() == tool) {
                    let names: Vec<&str> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
                    let d = Diagnostic::error(
                        Code::UnknownTool,
                        format!(
                            "an example of plugin `{}` calls `{tool}`, which the plugin does not declare",
                            node.key
                        ),
                    )
                    .at(Some(*origin), "unknown tool")
                    .with_help_opt(
                        crate::engine::diag::did_you_mean(tool, names.iter().copied())
                            .map(|s| format!("did you mean `{s}`?")),
                    );
                    cx.push(d);
                }
            }
        }
    }
    let mut wanted = Vec::new();
    if let Some((command, files)) = process(cx, &r) {
        if let Some(k) = r.get("kind") {
            invalid(
                cx,
                k.span,
                format!(
                    "`{}` is a process plugin (it has a `command`); it cannot also name a `kind`",
                    node.path
                ),
                "remove `kind` or `command`",
            );
        }
        manifest.kind = Some(PROCESS_KIND.to_owned());
        manifest.process = Some(std::sync::Arc::new(command));
        wanted = files;
    } else if let Some(n) = ["env", "files", "startup_timeout_seconds"]
        .iter()
        .find_map(|k| r.get(k))
    {
        let at = Some(n.key_span);
        if let Some(at) = at {
            invalid(
                cx,
                at,
                format!(
                    "`env`, `files` and `startup_timeout_seconds` of `{}` only mean something with a `command`",
                    node.path
                ),
                "no `command`",
            );
        }
    }
    if let Some(n) = r.get("kind")
        && manifest.process.is_none()
        && let Some(s) = n.str(cx)
    {
        let kinds = crate::runtime::Catalog::new().kinds();
        if kinds.iter().any(|k| k == s.value) {
            manifest.kind = Some(s.value.to_owned());
        } else {
            let hint = crate::engine::diag::did_you_mean(s.value, kinds.iter().map(String::as_str));
            let d = cx.error(
                Code::UnknownPlugin,
                s.span,
                format!("unknown plugin kind `{}` for `{}`", s.value, n.path),
                "unknown kind",
            );
            if let Some(h) = hint {
                d.help.push(format!("did you mean `{h}`?"));
            }
            d.help.push(format!(
                "known kinds: {} (omit `kind` for a declared plugin)",
                kinds.join(", ")
            ));
        }
    }
    r.finish(cx);
    Some((manifest, wanted))
}

fn provided(cx: &mut FileCtx<'_>, item: &Node<'_, '_>) -> Option<Provided> {
    let cap = capability(cx, item);
    let origin = Some(key_value_origin(cx, item));
    let mut versions: Vec<(Version, Node<'_, '_>)> = Vec::new();
    match item.value {
        DeValue::Array(a) => {
            let items = item.array_items(a);
            if items.is_empty() {
                invalid(
                    cx,
                    item.span,
                    format!("`{}` must list at least one version", item.path),
                    "empty list",
                );
                return None;
            }
            for i in items {
                if let Some(v) = i.str(cx).and_then(|s| version(cx, &i, s)) {
                    versions.push((v, i));
                }
            }
        }
        DeValue::String(_) => {
            let s = item.str(cx)?;
            versions.push((version(cx, item, s)?, item.clone()));
        }
        _ => {
            item.wrong_type(cx, "a version string or a list of them");
            return None;
        }
    }
    let mut by_major: BTreeMap<u64, &(Version, Node<'_, '_>)> = BTreeMap::new();
    let mut ok = true;
    for pair in &versions {
        if let Some(first) = by_major.get(&pair.0.major()) {
            ok = false;
            let d = Diagnostic::error(
                Code::DuplicateContract,
                format!(
                    "`{}` lists two versions of contract generation {} (`{}` and `{}`)",
                    item.path,
                    pair.0.major(),
                    first.0,
                    pair.0
                ),
            )
            .at(
                Some(cx.origin(pair.1.span)),
                "same major as an earlier version",
            )
            .also(
                Some(cx.origin(first.1.span)),
                "first version of this generation",
            )
            .with_help(
                "a plugin provides one version per contract generation (major); keep the newest",
            );
            cx.push(d);
        } else {
            by_major.insert(pair.0.major(), pair);
        }
    }
    let mut versions: Vec<Version> = versions.into_iter().map(|(v, _)| v).collect();
    versions.sort();
    (ok && !versions.is_empty()).then_some(())?;
    Some(Provided {
        capability: cap?,
        versions,
        origin,
    })
}

fn tools(cx: &mut FileCtx<'_>, node: &Node<'_, '_>, plugin: &str) -> Vec<ToolDecl> {
    let mut by_name: BTreeMap<ToolName, ToolDecl> = BTreeMap::new();
    for item in node.items(cx).unwrap_or_default() {
        let Some(r) = item.reader(cx, TOOL_KEYS) else {
            continue;
        };
        let name_node = r.require(cx, "name");
        let name_str = name_node.as_ref().and_then(|n| n.str(cx));
        let name = name_str.and_then(|s| {
            ToolName::new(s.value)
                .map_err(|e| bad_name(cx, s.span, e))
                .ok()
        });
        let description = r.require(cx, "description").and_then(|n| {
            let s = n.str(cx)?;
            if s.value.trim().is_empty() {
                invalid(
                    cx,
                    s.span,
                    format!("`{}` must not be empty", n.path),
                    "empty description",
                );
                return None;
            }
            Some(s.value.to_owned())
        });
        let args_schema = match r.get("args") {
            Some(n) if n.value.is_table() => json_value(cx, &n).map(Some),
            Some(n) => {
                n.reader(cx, &[]);
                None
            }
            None => Some(None),
        };
        let result = r.get("result").and_then(|n| json_value(cx, &n));
        let tool_guide = r.get("agent").and_then(|n| guide(cx, &n, false));
        r.finish(cx);
        let (Some(name), Some(s)) = (name, name_str) else {
            continue;
        };
        let origin = Some(cx.origin(s.span));
        if let Some(first) = by_name.get(&name) {
            let d = Diagnostic::error(
                Code::DuplicateTool,
                format!("plugin `{plugin}` declares tool `{name}` twice"),
            )
            .at(origin, "declared again here")
            .also(first.origin, "first declared here")
            .with_help("tool names are unique within a plugin");
            cx.push(d);
            continue;
        }
        if let (Some(description), Some(args_schema)) = (description, args_schema) {
            by_name.insert(
                name.clone(),
                ToolDecl {
                    name,
                    description,
                    args_schema,
                    result,
                    guide: tool_guide,
                    origin,
                    policy: None,
                },
            );
        }
    }
    by_name.into_values().collect()
}
