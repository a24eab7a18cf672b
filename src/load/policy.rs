//! `[policy]`: grants, deny rules, approval names and per-tool overrides.
//!
//! ```toml
//! [policy]
//! grants = ["filesystem.read:/workspace/**", "network.fetch"]
//! deny = ["filesystem.read:/workspace/secrets/**"]
//! approval_required = ["deploy.*"]
//!
//! [policy.tools.write_file]
//! permissions = ["filesystem.write:{/path}"]
//! approval_required = true
//! timeout_seconds = 30
//! ```

use super::reader::{FileCtx, Node};
use super::values::json_value;
use super::walk::invalid;
use crate::engine::diag::Code;
use crate::engine::model::PolicyDecl;
use crate::engine::policy::{Grant, ToolPolicy};

/// Keys of `[policy]`.
pub const POLICY_KEYS: &[&str] = &["grants", "deny", "approval_required", "tools"];
/// Keys of `[policy.tools.<tool>]`.
pub const TOOL_POLICY_KEYS: &[&str] = &[
    "permissions",
    "idempotent",
    "side_effects",
    "timeout_seconds",
    "cost_class",
    "approval_required",
];

fn grants(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Vec<Grant> {
    let mut out = Vec::new();
    for item in node.items(cx).unwrap_or_default() {
        let Some(s) = item.str(cx) else { continue };
        match Grant::parse(s.value) {
            Ok(g) => out.push(g),
            Err(e) => {
                let d = cx.error(
                    Code::BadPermission,
                    s.span,
                    format!("bad grant `{}` in `{}`: {}", s.value, node.path, e.message),
                    "bad grant",
                );
                d.help.extend(e.help);
            }
        }
    }
    out
}

fn strings(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Vec<String> {
    node.items(cx)
        .unwrap_or_default()
        .iter()
        .filter_map(|i| i.str(cx))
        .map(|s| s.value.to_owned())
        .collect()
}

fn tool_policy(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Option<ToolPolicy> {
    let r = node.reader(cx, TOOL_POLICY_KEYS)?;
    let mut p = ToolPolicy::default();
    if let Some(n) = r.get("permissions") {
        p.permissions = strings(cx, &n);
    }
    if let Some(n) = r.get("idempotent") {
        p.idempotent = n.bool(cx).unwrap_or(false);
    }
    if let Some(n) = r.get("side_effects") {
        p.side_effects = strings(cx, &n);
    }
    if let Some(n) = r.get("timeout_seconds") {
        match json_value(cx, &n).and_then(|v| v.as_f64()) {
            Some(t) => p.timeout_seconds = Some(t),
            None => invalid(
                cx,
                n.span,
                format!("`{}` must be a number of seconds", n.path),
                "not a number",
            ),
        }
    }
    if let Some(n) = r.get("cost_class") {
        p.cost_class = n.str(cx).map(|s| s.value.to_owned());
    }
    if let Some(n) = r.get("approval_required") {
        p.approval_required = n.bool(cx).unwrap_or(false);
    }
    r.finish(cx);
    if let Err(e) = p.validate() {
        cx.error(
            Code::BadPermission,
            node.span,
            format!("invalid policy for tool `{}`: {e}", node.key),
            "invalid tool policy",
        );
        return None;
    }
    Some(p)
}

/// Read `[policy]`.
pub(crate) fn policy(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Option<PolicyDecl> {
    let r = node.reader(cx, POLICY_KEYS)?;
    let mut decl = PolicyDecl {
        origin: Some(cx.origin(node.key_span)),
        ..PolicyDecl::default()
    };
    if let Some(n) = r.get("grants") {
        decl.rules.grants = grants(cx, &n);
    }
    if let Some(n) = r.get("deny") {
        decl.rules.deny = grants(cx, &n);
    }
    if let Some(n) = r.get("approval_required") {
        decl.rules.approval_required = strings(cx, &n);
    }
    if let Some(n) = r.get("tools") {
        for item in n.entries(cx).unwrap_or_default() {
            if let Some(p) = tool_policy(cx, &item) {
                decl.tool_origins
                    .insert(item.key.to_owned(), cx.origin(item.key_span));
                decl.tools.insert(item.key.to_owned(), p);
            }
        }
    }
    r.finish(cx);
    if let Err(e) = decl.rules.validate() {
        cx.error(
            Code::BadPermission,
            node.key_span,
            format!("invalid `[policy]`: {}", e.message),
            "invalid policy",
        );
    }
    Some(decl)
}
