//! Grants, deny rules and the policy engines.
//!
//! [`PolicyRules`] is the declarative engine: deny rules are checked first
//! and always win, then the first grant that covers the request allows it.
//! Requests are treated conservatively in both directions: an *unscoped*
//! request (`filesystem.read`) stands for "any resource", so a scoped grant
//! never covers it but a scoped deny rule does. A request whose resource
//! matches nothing (a `..` escaping the root, a NUL, a percent-encoded dot;
//! see [`super::glob`]) is denied before any rule is consulted, whatever
//! the grants say.
//!
//! Engines are behind [`PolicyEngine`] so hosts can plug in their own; an
//! engine error never allows anything ([`evaluate_or_deny`]).
use std::collections::BTreeMap;
use std::fmt;

use super::glob::{ResourcePattern, prepare};
use super::permission::{Permission, PermissionError, split, validate_name};

/// A grant or deny rule: a permission name (exact, or `prefix.*`) and an
/// optional resource pattern.
///
/// `prefix.*` covers every name below `prefix` at any depth
/// (`filesystem.*` covers `filesystem.read` and `filesystem.read.meta`) but
/// not `prefix` itself; a bare `*` is rejected, use [`AllowAll`] instead.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Grant {
    name: String,
    resource: Option<ResourcePattern>,
}

impl Grant {
    /// A rule from its parts; `name` is validated as a rule name.
    pub fn new(name: &str, resource: Option<ResourcePattern>) -> Result<Self, PermissionError> {
        validate_rule_name(name)?;
        Ok(Self {
            name: name.to_owned(),
            resource,
        })
    }

    /// Parse `name[:pattern]`, split at the first colon, both parts trimmed.
    pub fn parse(text: &str) -> Result<Self, PermissionError> {
        let (name, resource) = split(text, "grant")?;
        let resource = resource.map(ResourcePattern::parse).transpose()?;
        Self::new(name, resource)
    }

    /// The name as written, including a trailing `.*`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The resource pattern, if the rule is scoped.
    pub fn resource(&self) -> Option<&ResourcePattern> {
        self.resource.as_ref()
    }

    /// Whether the rule's name (exact or `prefix.*`) covers `name`.
    pub fn matches_name(&self, name: &str) -> bool {
        name_matches(&self.name, name)
    }

    /// Grant semantics: names match, and the rule is unscoped or the request
    /// is scoped with a resource the pattern covers. A resource that matches
    /// nothing is never covered, even by an unscoped grant.
    pub fn covers(&self, permission: &Permission) -> bool {
        if !self.matches_name(permission.name()) {
            return false;
        }
        match (permission.resource(), &self.resource) {
            (Some(r), pattern) => match prepare(r) {
                Ok(prepared) => pattern.as_ref().is_none_or(|p| p.covers(&prepared)),
                Err(_) => false,
            },
            (None, None) => true,
            (None, Some(_)) => false,
        }
    }

    /// Deny semantics: names match, and the rule is unscoped, the request is
    /// unscoped (it may touch any resource), the resource matches nothing,
    /// or the pattern covers it.
    pub fn denies(&self, permission: &Permission) -> bool {
        if !self.matches_name(permission.name()) {
            return false;
        }
        match (permission.resource(), &self.resource) {
            (_, None) | (None, _) => true,
            (Some(r), Some(p)) => prepare(r).is_err() || p.matches(r),
        }
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.resource {
            Some(r) => write!(f, "{}:{}", self.name, r),
            None => f.write_str(&self.name),
        }
    }
}

impl serde::Serialize for Grant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Grant {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Validate a rule name: a permission name, or a permission name followed
/// by `.*`.
pub(crate) fn validate_rule_name(name: &str) -> Result<(), PermissionError> {
    if name == "*" {
        return Err(PermissionError::new(
            "a bare `*` is not a permission name",
            Some("grant `prefix.*` for a family of names, or use the allow-all policy"),
        ));
    }
    validate_name(name.strip_suffix(".*").unwrap_or(name))
}

pub(crate) fn name_matches(rule: &str, name: &str) -> bool {
    match rule.strip_suffix(".*") {
        Some(prefix) => name
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.') && rest.len() > 1),
        None => rule == name,
    }
}

/// One question to a policy engine.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PolicyRequest {
    /// The permission asked for.
    pub permission: Permission,
    /// Who asks, e.g. `tool:web_search`.
    pub subject: String,
    /// Extra facts for custom engines (owner, generation id, ...).
    pub context: BTreeMap<String, String>,
}

impl PolicyRequest {
    /// A request on behalf of the tool `tool` (subject `tool:<tool>`).
    pub fn for_tool(tool: &str, permission: Permission) -> Self {
        Self {
            permission,
            subject: format!("tool:{tool}"),
            context: BTreeMap::new(),
        }
    }

    /// Add a context entry.
    pub fn with_context(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.context.insert(key.into(), value.into());
        self
    }
}

/// An engine's answer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PolicyDecision {
    /// Whether the permission is allowed.
    pub allowed: bool,
    /// Why, in words, e.g. "no grant covers `filesystem.read:/etc/passwd`".
    pub reason: String,
    /// Whether an allowed permission additionally needs approval.
    pub approval_required: bool,
    /// The rule that decided (grant when allowed, deny rule when denied).
    pub matched: Option<String>,
}

impl PolicyDecision {
    /// An allowing decision without approval or matched rule.
    pub fn allow(reason: impl Into<String>) -> Self {
        Self {
            allowed: true,
            reason: reason.into(),
            approval_required: false,
            matched: None,
        }
    }

    /// A denying decision without matched rule.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            allowed: false,
            reason: reason.into(),
            approval_required: false,
            matched: None,
        }
    }

    /// The decision used when an engine fails: denied, reason
    /// "policy provider failure".
    pub fn provider_failure() -> Self {
        Self::deny(PROVIDER_FAILURE)
    }
}

/// The reason of a decision replacing an engine error.
pub const PROVIDER_FAILURE: &str = "policy provider failure";

/// An engine failed to decide; callers deny ([`evaluate_or_deny`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("policy provider failed: {message}")]
pub struct PolicyError {
    /// What went wrong inside the engine.
    pub message: String,
}

/// A policy engine: decides one permission request at a time.
pub trait PolicyEngine: Send + Sync {
    /// Decide `request`. An `Err` means "could not decide" and the caller
    /// must deny (fail closed).
    fn evaluate(&self, request: &PolicyRequest) -> Result<PolicyDecision, PolicyError>;
}

/// Ask `engine`, turning an error into [`PolicyDecision::provider_failure`].
pub fn evaluate_or_deny(engine: &dyn PolicyEngine, request: &PolicyRequest) -> PolicyDecision {
    engine
        .evaluate(request)
        .unwrap_or_else(|_| PolicyDecision::provider_failure())
}

/// Allows every request (the reference's default engine).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllowAll;

impl PolicyEngine for AllowAll {
    fn evaluate(&self, _request: &PolicyRequest) -> Result<PolicyDecision, PolicyError> {
        Ok(PolicyDecision::allow("allowed by the allow-all policy"))
    }
}

/// Stands in for a policy that could not be resolved: denies every
/// request with the reason it could not be resolved (fail closed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailClosed {
    /// Why, e.g. "policy resolution failed for scope /x: ambiguous between a, b".
    pub reason: String,
}

impl PolicyEngine for FailClosed {
    fn evaluate(&self, _request: &PolicyRequest) -> Result<PolicyDecision, PolicyError> {
        Ok(PolicyDecision::deny(self.reason.clone()))
    }
}

/// Denies every request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DenyAll;

impl PolicyEngine for DenyAll {
    fn evaluate(&self, _request: &PolicyRequest) -> Result<PolicyDecision, PolicyError> {
        Ok(PolicyDecision::deny("denied by the deny-all policy"))
    }
}

/// The declarative engine: grants, deny rules, and the permission names
/// (exact or `prefix.*`) whose allowed uses need approval.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyRules {
    /// What is allowed; the first covering grant is reported.
    pub grants: Vec<Grant>,
    /// What is never allowed; wins over every grant.
    pub deny: Vec<Grant>,
    /// Permission names (exact or `prefix.*`) that need approval when allowed.
    pub approval_required: Vec<String>,
}

impl PolicyRules {
    /// Check the `approval_required` names (grants and deny rules are
    /// validated when they are built).
    pub fn validate(&self) -> Result<(), PermissionError> {
        self.approval_required
            .iter()
            .try_for_each(|n| validate_rule_name(n))
    }

    /// Decide `request`: resource sanity, then deny rules, then grants.
    pub fn evaluate(&self, request: &PolicyRequest) -> PolicyDecision {
        let permission = &request.permission;
        if let Some(resource) = permission.resource()
            && let Err(e) = prepare(resource)
        {
            return PolicyDecision::deny(format!(
                "resource {resource:?} of `{permission}` matches nothing: it {e}"
            ));
        }
        if let Some(rule) = self.deny.iter().find(|d| d.denies(permission)) {
            return PolicyDecision {
                matched: Some(rule.to_string()),
                ..PolicyDecision::deny(format!("`{permission}` is denied by rule `{rule}`"))
            };
        }
        match self.grants.iter().find(|g| g.covers(permission)) {
            Some(grant) => PolicyDecision {
                allowed: true,
                reason: format!("`{permission}` is granted by `{grant}`"),
                approval_required: self.requires_approval(permission.name()),
                matched: Some(grant.to_string()),
            },
            None => PolicyDecision::deny(format!("no grant covers `{permission}`")),
        }
    }

    /// Whether allowed uses of permission `name` need approval.
    pub fn requires_approval(&self, name: &str) -> bool {
        self.approval_required
            .iter()
            .any(|rule| name_matches(rule, name))
    }
}

impl PolicyEngine for PolicyRules {
    fn evaluate(&self, request: &PolicyRequest) -> Result<PolicyDecision, PolicyError> {
        Ok(PolicyRules::evaluate(self, request))
    }
}
