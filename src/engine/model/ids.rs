//! Validated identifiers: entry ids, capability names, tool names, scope paths.

use std::fmt;
use std::sync::Arc;

/// Why an identifier was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct IdError {
    /// What is wrong, lower-case, no trailing period.
    pub message: String,
    /// A suggestion.
    pub help: Option<String>,
}

impl IdError {
    fn new(message: impl Into<String>, help: Option<String>) -> Self {
        Self {
            message: message.into(),
            help,
        }
    }
}

fn check_name(kind: &str, text: &str) -> Result<(), IdError> {
    if text.is_empty() {
        return Err(IdError::new(format!("{kind} must not be empty"), None));
    }
    if text.trim() != text {
        return Err(IdError::new(
            format!("{kind} `{text}` has surrounding whitespace"),
            Some(format!("write `{}`", text.trim())),
        ));
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(IdError::new(
            format!("{kind} contains the control character {c:?}"),
            None,
        ));
    }
    Ok(())
}

/// Comparison and hashing of a shared-text id by its text, as derived, with
/// a shortcut for two handles of one allocation: plans and snapshots clone
/// the composition's ids, so most comparisons are between equal handles.
macro_rules! shared_text_cmp {
    ($name:ident) => {
        impl PartialEq for $name {
            #[inline]
            fn eq(&self, other: &Self) -> bool {
                Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
            }
        }

        impl Eq for $name {}

        impl PartialOrd for $name {
            #[inline]
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $name {
            #[inline]
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                if Arc::ptr_eq(&self.0, &other.0) {
                    std::cmp::Ordering::Equal
                } else {
                    (*self.0).cmp(&*other.0)
                }
            }
        }

        impl std::hash::Hash for $name {
            #[inline]
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                (*self.0).hash(state);
            }
        }
    };
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $check:expr) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name(Arc<str>);

        shared_text_cmp!($name);

        impl $name {
            /// Validate and wrap `text`.
            pub fn new(text: &str) -> Result<Self, IdError> {
                check_name($kind, text)?;
                #[allow(clippy::redundant_closure_call)]
                ($check)(text)?;
                Ok(Self(Arc::from(text)))
            }

            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The shared text, for callers that keep it without copying.
            pub fn as_arc(&self) -> &Arc<str> {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:?}", &*self.0)
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
    };
}

name_type!(
    /// The stable id of a plugin entry (`[entries.<id>]`).
    EntryId,
    "entry id",
    |_t: &str| Ok::<(), IdError>(())
);

name_type!(
    /// A capability name such as `database` or `model`.
    CapabilityName,
    "capability name",
    |t: &str| {
        if t.contains(char::is_whitespace) || t.contains('@') {
            Err(IdError::new(
                format!("capability name `{t}` must not contain whitespace or `@`"),
                Some("the contract generation comes from the version, not the name".into()),
            ))
        } else {
            Ok(())
        }
    }
);

name_type!(
    /// A tool name as the model sees it.
    ToolName,
    "tool name",
    |t: &str| {
        if t.contains(char::is_whitespace) {
            Err(IdError::new(format!("tool name `{t}` must not contain whitespace"), None))
        } else {
            Ok(())
        }
    }
);

/// Checks an agent name: a tool name (the agent is a tool of its callers)
/// that is one scope segment (it owns the scope `/agents/<name>`): no `/`,
/// not `.` or `..`. A name with `/` would own a scope inside another
/// agent's (`a/b` under `a`'s) and inherit its tool view and policy.
///
/// # Errors
///
/// Why the name cannot name an agent.
pub fn check_agent_name(text: &str) -> Result<(), IdError> {
    ToolName::new(text).map_err(|e| IdError {
        message: e.message.replace("tool name", "agent name"),
        help: e.help,
    })?;
    if text.contains('/') || text == "." || text == ".." {
        return Err(IdError::new(
            format!("agent name `{text}` is not one scope segment (an agent owns the scope `/agents/<name>`)"),
            Some(
                "an agent name may hold any character but `/` and whitespace, and is not `.` or `..`"
                    .into(),
            ),
        ));
    }
    Ok(())
}

/// The deepest scope path accepted: every ancestor of a scope is a scope of
/// its own, so a path of `n` segments adds `n` scopes whose paths sum to
/// `n²/2` segments in every snapshot; real trees are a few levels deep.
pub const MAX_SCOPE_DEPTH: usize = 64;

/// A canonical scope path: `/`, or `/` followed by `/`-separated names with no
/// empty, `.` or `..` segment, no surrounding whitespace and no trailing `/`.
#[derive(Clone)]
pub struct ScopePath(Arc<str>);

shared_text_cmp!(ScopePath);

impl ScopePath {
    /// The root scope `/`.
    pub fn root() -> Self {
        Self(Arc::from("/"))
    }

    /// Validate a canonical path.
    pub fn new(text: &str) -> Result<Self, IdError> {
        if text == "/" {
            return Ok(Self::root());
        }
        if !text.starts_with('/') {
            return Err(IdError::new(
                format!("scope path `{text}` is not absolute"),
                Some(format!("write `/{}`", text.trim_matches('/'))),
            ));
        }
        if text.ends_with('/') {
            return Err(IdError::new(
                format!("scope path `{text}` ends with `/`"),
                Some(format!("write `{}`", text.trim_end_matches('/'))),
            ));
        }
        let depth = text[1..].split('/').count();
        if depth > MAX_SCOPE_DEPTH {
            return Err(IdError::new(
                format!("scope path has {depth} segments; at most {MAX_SCOPE_DEPTH} are allowed"),
                Some(
                    "every ancestor of a scope is a scope in the tree and in each snapshot: \
                     keep the tree shallow and use names for the rest"
                        .into(),
                ),
            ));
        }
        for segment in text[1..].split('/') {
            if segment.is_empty() {
                return Err(IdError::new(
                    format!("scope path `{text}` has an empty segment"),
                    None,
                ));
            }
            if segment == "." || segment == ".." {
                return Err(IdError::new(
                    format!("scope path `{text}` has a `{segment}` segment"),
                    Some("scope paths are canonical: no `.` or `..`".into()),
                ));
            }
            if segment.trim() != segment || segment.chars().any(char::is_control) {
                return Err(IdError::new(
                    format!("scope path `{text}` has a segment with surrounding whitespace"),
                    None,
                ));
            }
        }
        Ok(Self(Arc::from(text)))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shared text, for callers that keep it without copying.
    pub fn as_arc(&self) -> &Arc<str> {
        &self.0
    }

    /// Whether this is the root scope.
    pub fn is_root(&self) -> bool {
        &*self.0 == "/"
    }

    /// The parent path, `None` for the root.
    pub fn parent(&self) -> Option<ScopePath> {
        if self.is_root() {
            return None;
        }
        match self.0.rfind('/') {
            Some(0) => Some(Self::root()),
            Some(i) => Some(Self(Arc::from(&self.0[..i]))),
            None => None,
        }
    }

    /// The last segment; `root` for `/`.
    pub fn name(&self) -> &str {
        if self.is_root() {
            "root"
        } else {
            self.0.rsplit('/').next().unwrap_or("")
        }
    }

    /// Number of segments: 0 for the root.
    pub fn depth(&self) -> usize {
        if self.is_root() {
            0
        } else {
            self.0.matches('/').count()
        }
    }

    /// Whether `self` is `other` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, other: &ScopePath) -> bool {
        if self.is_root() || self == other {
            return true;
        }
        other.0.len() > self.0.len()
            && other.0.starts_with(&*self.0)
            && other.0.as_bytes()[self.0.len()] == b'/'
    }

    /// The child path `self/name`.
    pub fn child(&self, name: &str) -> Result<ScopePath, IdError> {
        if self.is_root() {
            Self::new(&format!("/{name}"))
        } else {
            Self::new(&format!("{}/{name}", self.0))
        }
    }
}

impl fmt::Display for ScopePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ScopePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

impl std::borrow::Borrow<str> for ScopePath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_paths_are_canonical() {
        for ok in ["/", "/a", "/a/b", "/research/intern"] {
            assert!(ScopePath::new(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a", "/a/", "//a", "/a/./b", "/a/../b", "/ a", "/a//b"] {
            assert!(ScopePath::new(bad).is_err(), "{bad}");
        }
        let deep = |n: usize| "/s".repeat(n);
        assert!(ScopePath::new(&deep(MAX_SCOPE_DEPTH)).is_ok());
        let e = ScopePath::new(&deep(MAX_SCOPE_DEPTH + 1)).unwrap_err();
        assert!(e.to_string().contains("65 segments"), "{e}");
    }

    #[test]
    fn parents_and_ancestry() {
        let p = ScopePath::new("/a/b").unwrap();
        assert_eq!(p.parent().unwrap().as_str(), "/a");
        assert_eq!(p.parent().unwrap().parent().unwrap().as_str(), "/");
        assert!(ScopePath::root().parent().is_none());
        assert!(ScopePath::new("/a").unwrap().is_ancestor_or_self(&p));
        assert!(
            !ScopePath::new("/ab")
                .unwrap()
                .is_ancestor_or_self(&ScopePath::new("/a/b").unwrap())
        );
        assert_eq!(p.name(), "b");
        assert_eq!(p.depth(), 2);
    }

    #[test]
    fn names_reject_whitespace() {
        assert!(EntryId::new(" x").is_err());
        assert!(EntryId::new("").is_err());
        assert!(CapabilityName::new("data base").is_err());
        assert!(CapabilityName::new("database@1").is_err());
        assert!(CapabilityName::new("database").is_ok());
    }
}
