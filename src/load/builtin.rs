//! Entries of built-in kinds: their configuration is checked against the
//! kind's JSON Schema while the TOML is at hand, so every problem points at
//! the offending value in the file.

use std::sync::Arc;

use toml::de::DeValue;

use super::reader::{FileCtx, Node, span};
use crate::engine::builtin::BuiltinKind;
use crate::engine::diag::{Code, Diagnostic};
use crate::engine::model::{ConfigValue, Manifest};
use crate::engine::span::Span;

/// What a built-in entry's configuration gave: its manifest, or the
/// diagnostics to report if no `[plugins]` table shadows the kind.
#[derive(Clone, Debug)]
pub(crate) enum BuiltinOutcome {
    /// The derived manifest.
    Manifest(Arc<Manifest>),
    /// The configuration's problems.
    Problems(Vec<Diagnostic>),
}

/// The span of the value at JSON `pointer` under `node` (the deepest value
/// that exists: a missing property points at its table).
fn span_at(node: &Node<'_, '_>, pointer: &str) -> Span {
    let mut value = node.value;
    let mut at = node.span;
    for raw in pointer.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        match value {
            DeValue::Table(t) => match t.iter().find(|(k, _)| k.get_ref().as_ref() == segment) {
                Some((_, v)) => {
                    value = v.get_ref();
                    at = span(v.span());
                }
                None => break,
            },
            DeValue::Array(a) => match segment.parse::<usize>().ok().and_then(|i| a.get(i)) {
                Some(v) => {
                    value = v.get_ref();
                    at = span(v.span());
                }
                None => break,
            },
            _ => break,
        }
    }
    at
}

/// `config.turns[0].text` for the pointer `/turns/0/text`.
fn dotted(pointer: &str) -> String {
    let mut out = String::from("config");
    for raw in pointer.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        if segment.parse::<usize>().is_ok() {
            out.push_str(&format!("[{segment}]"));
        } else {
            out.push('.');
            out.push_str(&segment);
        }
    }
    out
}

/// Mask, in every snippet of the file (the one place that decides it for
/// built-in configurations), the values that may be secrets typed where a
/// name belongs — `NAME=value` in an `env` allow-list, a
/// `secrets.env` prefix or alias that is not a variable name — whatever
/// else is wrong with the configuration (a schema error stops the kind's
/// own checks before it reaches them).
fn conceal_secret_shapes(
    cx: &mut FileCtx<'_>,
    kind: &BuiltinKind,
    config: &ConfigValue,
    node: Option<&Node<'_, '_>>,
) {
    use crate::engine::builtin::system::{SECRETS_ENV, is_variable_name, pointer_token};
    let Some(node) = node else { return };
    let mut pointers = Vec::new();
    if let Some(ConfigValue::Array(items)) = config.get("env") {
        for (i, item) in items.iter().enumerate() {
            if matches!(item, ConfigValue::Str(s) if s.contains('=')) {
                pointers.push(format!("/env/{i}"));
            }
        }
    }
    if kind.name == SECRETS_ENV.name {
        if matches!(config.get("prefix"), Some(ConfigValue::Str(p)) if !p.is_empty() && !is_variable_name(p))
        {
            pointers.push("/prefix".to_owned());
        }
        if let Some(ConfigValue::Table(aliases)) = config.get("aliases") {
            for (name, variable) in aliases {
                if matches!(variable, ConfigValue::Str(v) if !is_variable_name(v)) {
                    pointers.push(format!("/aliases/{}", pointer_token(name)));
                }
            }
        }
    }
    for p in pointers {
        let at = span_at(node, &p);
        // Only a value's own span: never the table it falls back to.
        if at != node.span {
            cx.concealed.push(cx.in_file(at));
        }
    }
}

/// Check `config` (parsed from `node`, or absent) for `kind`.
pub(crate) fn check(
    cx: &mut FileCtx<'_>,
    kind: &BuiltinKind,
    entry: &str,
    config: &ConfigValue,
    node: Option<&Node<'_, '_>>,
    fallback: Span,
) -> BuiltinOutcome {
    conceal_secret_shapes(cx, kind, config, node);
    match kind.derive(config) {
        Ok(manifest) => BuiltinOutcome::Manifest(Arc::new(manifest)),
        Err(problems) => BuiltinOutcome::Problems(
            problems
                .into_iter()
                .map(|p| {
                    let at = node.map_or(fallback, |n| span_at(n, &p.pointer));
                    let path = dotted(&p.pointer);
                    Diagnostic::error(
                        Code::BadConfig,
                        format!(
                            "entry `{entry}`: `{path}` is not valid for the built-in kind `{}`: {}",
                            kind.name, p.message
                        ),
                    )
                    .at(Some(cx.origin(at)), &p.message)
                    .with_help(format!(
                        "`chassis schema --kind {}` prints the configuration schema",
                        kind.name
                    ))
                })
                .collect(),
        ),
    }
}
