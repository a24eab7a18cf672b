//! The permission grammar: `name[:resource]`.
//!
//! A permission is what a tool asks for at a harness boundary. The text is
//! split at the *first* colon so resources may contain colons themselves
//! (`database.query:db:orders`); both halves are trimmed when parsing text.
//!
//! Names are deliberately narrow so that name wildcards in grants
//! (`filesystem.*`) have one meaning: dot-separated components, each made
//! of `[a-z0-9_-]`, the first starting with a lower-case letter
//! (`filesystem.read`, `network.fetch`, `db.orders-ro`). Resources are
//! free text without control characters; whether a resource is a path, and
//! what it matches, is decided by [`super::glob`].
use std::fmt;
use std::str::FromStr;

/// Why a permission, grant or resource pattern text was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PermissionError {
    /// What is wrong: lower-case, no trailing period, literals in backticks.
    pub message: String,
    /// A suggestion, if there is one.
    pub help: Option<String>,
}

impl PermissionError {
    pub(crate) fn new(message: impl Into<String>, help: Option<&str>) -> Self {
        Self {
            message: message.into(),
            help: help.map(str::to_owned),
        }
    }
}

/// A validated permission: a name and an optional resource.
///
/// Construct it with [`Permission::parse`] (text, trimmed) or
/// [`Permission::new`] (parts, exact). The resource is kept as written;
/// path normalization happens when it is matched, so messages show what the
/// tool actually asked for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Permission {
    name: String,
    resource: Option<String>,
}

impl Permission {
    /// A permission from its parts, taken exactly: the name must satisfy the
    /// name grammar and the resource must be non-empty, free of control
    /// characters and without surrounding whitespace (a resource checked by
    /// policy must be byte-for-byte the one the tool uses).
    pub fn new(name: &str, resource: Option<&str>) -> Result<Self, PermissionError> {
        validate_name(name)?;
        if let Some(r) = resource {
            validate_resource_text(r)?;
        }
        Ok(Self {
            name: name.to_owned(),
            resource: resource.map(str::to_owned),
        })
    }

    /// Parse `name[:resource]`, split at the first colon, both parts trimmed.
    pub fn parse(text: &str) -> Result<Self, PermissionError> {
        let (name, resource) = split(text, "permission")?;
        Self::new(name, resource)
    }

    /// The permission name, e.g. `filesystem.read`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The resource, if the permission is scoped.
    pub fn resource(&self) -> Option<&str> {
        self.resource.as_deref()
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.resource {
            Some(r) => write!(f, "{}:{}", self.name, r),
            None => f.write_str(&self.name),
        }
    }
}

impl FromStr for Permission {
    type Err = PermissionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for Permission {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Permission {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Split `text` at the first colon into trimmed name and resource; `what`
/// names the kind of text in messages.
pub(crate) fn split<'a>(
    text: &'a str,
    what: &str,
) -> Result<(&'a str, Option<&'a str>), PermissionError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(PermissionError::new(
            format!("{what} is empty"),
            Some("write `name` or `name:resource`, e.g. `filesystem.read:/workspace/**`"),
        ));
    }
    match text.split_once(':') {
        None => Ok((text, None)),
        Some((name, resource)) => {
            let (name, resource) = (name.trim(), resource.trim());
            if name.is_empty() {
                return Err(PermissionError::new(
                    format!("{what} `{text}` has an empty name"),
                    Some("the name comes before the first `:`"),
                ));
            }
            if resource.is_empty() {
                return Err(PermissionError::new(
                    format!("{what} `{text}` has an empty resource"),
                    Some("drop the `:` for an unscoped permission"),
                ));
            }
            Ok((name, Some(resource)))
        }
    }
}

/// Check the permission name grammar: dot-separated components of
/// `[a-z0-9_-]`, the first character a lower-case ASCII letter.
pub(crate) fn validate_name(name: &str) -> Result<(), PermissionError> {
    if name.is_empty() {
        return Err(PermissionError::new("permission name is empty", None));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(PermissionError::new(
            format!("permission name `{name}` must start with a lower-case letter"),
            Some("names look like `filesystem.read` or `network.fetch`"),
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.')))
    {
        let help = if bad.is_ascii_uppercase() {
            "permission names are lower-case"
        } else if bad == '*' {
            "name wildcards (`prefix.*`) are only allowed in grants"
        } else if matches!(bad, '{' | '}') {
            "placeholders are only allowed in the resource, after the first `:`"
        } else {
            "names use `a-z`, `0-9`, `_`, `-` and `.` between components"
        };
        return Err(PermissionError::new(
            format!("permission name `{name}` contains {bad:?}"),
            Some(help),
        ));
    }
    if name.split('.').any(str::is_empty) {
        return Err(PermissionError::new(
            format!("permission name `{name}` has an empty component"),
            Some("components are separated by single dots, e.g. `filesystem.read`"),
        ));
    }
    Ok(())
}

/// Check a resource text: non-empty, no surrounding whitespace, no control
/// characters (NUL included).
pub(crate) fn validate_resource_text(resource: &str) -> Result<(), PermissionError> {
    if resource.is_empty() {
        return Err(PermissionError::new("permission resource is empty", None));
    }
    if resource.trim() != resource {
        return Err(PermissionError::new(
            format!("permission resource {resource:?} has surrounding whitespace"),
            Some("the checked resource must be exactly the one the tool uses"),
        ));
    }
    if resource.chars().any(char::is_control) {
        return Err(PermissionError::new(
            format!("permission resource {resource:?} contains a control character"),
            None,
        ));
    }
    Ok(())
}
