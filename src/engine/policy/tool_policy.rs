//! Per-tool policy metadata and the manifest declaration check.
//!
//! [`ToolPolicy`] carries what the harness needs to know about a tool that
//! the tool object itself does not model: which permissions it requires
//! (templates over its arguments), whether it is idempotent, its side
//! effects, its deadline, its cost class and whether every call needs
//! approval. [`check_declared`] closes a gap in the reference, where a
//! plugin manifest's `permissions` were diagnostic only: a tool may only
//! require what its plugin declares.
use std::collections::BTreeMap;

use serde_json::Value;

use super::glob::prepare;
use super::permission::Permission;
use super::rules::Grant;
use super::template::{PermissionTemplate, TemplateError};

/// The longest deadline one tool call may have: a day. Every tool's
/// `timeout_seconds` — a `command` tool's, a `[policy.tools]` override's, a
/// process plugin's or an MCP server's registration — is checked against
/// it, so every deadline is a representable duration.
pub const MAX_TIMEOUT_SECONDS: f64 = 86_400.0;

/// Policy metadata attached to a tool registration.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolPolicy {
    /// Permission templates the tool requires, e.g. `filesystem.read:{/path}`.
    pub permissions: Vec<String>,
    /// Whether repeating a call has no further effect.
    pub idempotent: bool,
    /// Free-form side-effect labels, e.g. `destructive`.
    pub side_effects: Vec<String>,
    /// Deadline for one call; `None` or positive and at most
    /// [`MAX_TIMEOUT_SECONDS`].
    pub timeout_seconds: Option<f64>,
    /// Free-form cost label, e.g. `expensive`.
    pub cost_class: Option<String>,
    /// Whether every call needs approval, whatever the policy engine says.
    pub approval_required: bool,
    /// Opaque extra data.
    pub metadata: BTreeMap<String, Value>,
}

/// Why a [`ToolPolicy`] is invalid.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ToolPolicyError {
    /// `timeout_seconds` is zero, negative, NaN, infinite or longer than
    /// [`MAX_TIMEOUT_SECONDS`].
    #[error(
        "`timeout_seconds` must be positive and at most {MAX_TIMEOUT_SECONDS} (a day), got {0}"
    )]
    Timeout(f64),
    /// A permission template does not parse.
    #[error("permission {index}: {error}")]
    Permission {
        /// Position in `permissions`.
        index: usize,
        /// The parse error.
        error: TemplateError,
    },
    /// A side-effect label is blank.
    #[error("side effect {0} is blank")]
    BlankSideEffect(usize),
    /// `cost_class` is present but blank.
    #[error("`cost_class` is blank")]
    BlankCostClass,
}

impl ToolPolicy {
    /// Whether calling the tool changes nothing: it is idempotent and its
    /// only side effect, if any, is `read_only` (an MCP server's
    /// `readOnlyHint`).
    pub fn is_read_only(&self) -> bool {
        self.idempotent && self.side_effects.iter().all(|s| s == "read_only")
    }

    /// Whether the tool is *ungoverned*: it declares no permission, so no
    /// policy can decide it, and it is not read-only — its calls need
    /// approval.
    pub fn is_ungoverned(&self) -> bool {
        self.permissions.is_empty() && !self.is_read_only()
    }

    /// Check the timeout, the permission templates and the labels.
    pub fn validate(&self) -> Result<(), ToolPolicyError> {
        if let Some(t) = self.timeout_seconds
            && !(t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_SECONDS)
        {
            return Err(ToolPolicyError::Timeout(t));
        }
        self.templates()?;
        if let Some(i) = self.side_effects.iter().position(|s| s.trim().is_empty()) {
            return Err(ToolPolicyError::BlankSideEffect(i));
        }
        if self
            .cost_class
            .as_ref()
            .is_some_and(|c| c.trim().is_empty())
        {
            return Err(ToolPolicyError::BlankCostClass);
        }
        Ok(())
    }

    /// The parsed permission templates, in order.
    pub fn templates(&self) -> Result<Vec<PermissionTemplate>, ToolPolicyError> {
        self.permissions
            .iter()
            .enumerate()
            .map(|(index, t)| {
                PermissionTemplate::parse(t)
                    .map_err(|error| ToolPolicyError::Permission { index, error })
            })
            .collect()
    }

    /// Every permission one call with `args` requires: all templates
    /// expanded, duplicates removed, order kept. Any error means deny.
    pub fn required_permissions(&self, args: &Value) -> Result<Vec<Permission>, TemplateError> {
        let mut out: Vec<Permission> = Vec::new();
        for text in &self.permissions {
            // A text without braces is a literal template: it expands to the
            // permission it parses as (an invalid one takes the template
            // path, for the template's error).
            if !text.contains(['{', '}'])
                && let Ok(p) = Permission::parse(text)
            {
                if !out.contains(&p) {
                    out.push(p);
                }
                continue;
            }
            for p in PermissionTemplate::parse(text)?.expand(args)? {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        Ok(out)
    }
}

/// Check that every permission a tool requires is declared by its plugin's
/// manifest.
///
/// Manifest entries use the grant grammar (`name`, `prefix.*`,
/// `name:pattern`). An unscoped entry declares every resource of its names;
/// a scoped entry only declares tool permissions whose resource it covers;
/// for a template, each `/`-segment holding a placeholder is treated as
/// `**` (and a resource that starts with a placeholder is only declared by
/// an unscoped entry). Returns every problem, one message each, in order.
pub fn check_declared(
    tool_permissions: &[String],
    manifest_permissions: &[String],
) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let mut declared = Vec::new();
    for text in manifest_permissions {
        match Grant::parse(text) {
            Ok(g) => declared.push(g),
            Err(e) => problems.push(format!("manifest permission `{text}` is invalid: {e}")),
        }
    }
    for text in tool_permissions {
        let template = match PermissionTemplate::parse(text) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("tool permission `{text}` is invalid: {e}"));
                continue;
            }
        };
        if !declared.iter().any(|g| declares(g, &template)) {
            let list: Vec<String> = declared.iter().map(|g| format!("`{g}`")).collect();
            let list = if list.is_empty() {
                "nothing".to_owned()
            } else {
                list.join(", ")
            };
            problems.push(format!(
                "tool permission `{template}` is not declared by the plugin manifest (declared: {list})"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

fn declares(entry: &Grant, template: &PermissionTemplate) -> bool {
    if !entry.matches_name(template.name()) {
        return false;
    }
    let Some(pattern) = entry.resource() else {
        return true;
    };
    if !template.is_scoped() {
        return false;
    }
    template
        .resource_shape()
        .is_some_and(|shape| prepare(&shape).is_ok_and(|r| pattern.covers(&r)))
}
