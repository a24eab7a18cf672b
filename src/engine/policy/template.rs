//! Permission templates: permissions that depend on a call's arguments.
//!
//! A tool that reads "the file it is asked to read" declares
//! `filesystem.read:{/path}`; each `{...}` is an RFC 6901 JSON Pointer
//! (`~0` is `~`, `~1` is `/`) into the call's arguments. Placeholders are
//! only allowed in the resource, so the *name* of every permission a tool
//! can need is known at registration and can be checked against its
//! plugin's manifest. `{{` and `}}` are literal braces.
//!
//! Expansion fails (and the executor denies) rather than guess:
//! a missing pointer, `null`, an object, a nested array or an empty array
//! (an empty list may mean "everything" to the tool) are errors; strings are
//! used as they are, numbers and booleans as their JSON text. An array
//! yields one permission per element, every one of which must be allowed;
//! several placeholders expand to the cartesian product, at most
//! [`MAX_EXPANSIONS`] permissions. Every expanded resource must be a valid
//! permission resource exactly as substituted (no trimming), so the
//! resource policy sees is the one the tool receives.
use std::fmt;

use serde_json::Value;

use super::permission::{Permission, split, validate_name, validate_resource_text};

/// The most permissions one template may expand to.
pub const MAX_EXPANSIONS: usize = 64;

/// Why a template could not be parsed or expanded; the executor denies.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template text is malformed.
    #[error("invalid permission template `{template}`: {message}")]
    Syntax {
        /// The template as given.
        template: String,
        /// What is wrong.
        message: String,
        /// A suggestion.
        help: Option<String>,
    },
    /// A pointer does not resolve in the arguments.
    #[error("argument `{pointer}` is missing")]
    MissingArgument {
        /// The JSON Pointer as written.
        pointer: String,
    },
    /// A pointer resolves to a value that cannot name a resource.
    #[error("argument `{pointer}` is {kind}, which cannot name a resource")]
    UnsupportedValue {
        /// The JSON Pointer as written.
        pointer: String,
        /// `null`, `an object`, `a nested array`.
        kind: &'static str,
    },
    /// A pointer resolves to an empty array.
    #[error("argument `{pointer}` is an empty array")]
    EmptyArray {
        /// The JSON Pointer as written.
        pointer: String,
    },
    /// The cartesian product is larger than [`MAX_EXPANSIONS`].
    #[error("template `{template}` expands to {count} permissions, more than the limit of {limit}")]
    TooManyExpansions {
        /// The template as given.
        template: String,
        /// The size of the product (saturating).
        count: usize,
        /// [`MAX_EXPANSIONS`].
        limit: usize,
    },
    /// A substituted resource is not a valid permission resource.
    #[error("expanded resource {resource:?} is invalid: {message}")]
    InvalidResource {
        /// The resource after substitution.
        resource: String,
        /// Why it is invalid.
        message: String,
    },
}

impl TemplateError {
    /// A suggestion for the author or the caller, if there is one.
    pub fn help(&self) -> Option<String> {
        match self {
            Self::Syntax { help, .. } => help.clone(),
            Self::MissingArgument { .. } => {
                Some("pointers are RFC 6901: `/a/0/b`, with `~1` for `/` and `~0` for `~`".into())
            }
            Self::UnsupportedValue { .. } => {
                Some("use a string, number, boolean or array of those".into())
            }
            Self::EmptyArray { .. } => {
                Some("an empty list requires nothing, which could mean anything to the tool".into())
            }
            Self::TooManyExpansions { .. } => {
                Some("split the call, or declare a broader permission".into())
            }
            Self::InvalidResource { .. } => None,
        }
    }
}

/// An RFC 6901 JSON Pointer, validated.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JsonPointer {
    text: String,
    tokens: Vec<String>,
}

impl JsonPointer {
    /// Parse a non-empty pointer: `/`-prefixed reference tokens, `~0` and
    /// `~1` the only escapes. The whole-document pointer `""` is rejected
    /// because arguments are an object and never name a resource.
    pub fn parse(text: &str) -> Result<Self, String> {
        let Some(rest) = text.strip_prefix('/') else {
            return Err(format!("JSON Pointer `{text}` must start with `/`"));
        };
        let mut tokens = Vec::new();
        for raw in rest.split('/') {
            let mut token = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => token.push('~'),
                        Some('1') => token.push('/'),
                        _ => {
                            return Err(format!(
                                "JSON Pointer `{text}` has a `~` that is not `~0` or `~1`"
                            ));
                        }
                    }
                } else {
                    token.push(c);
                }
            }
            tokens.push(token);
        }
        Ok(Self {
            text: text.to_owned(),
            tokens,
        })
    }

    /// The pointer as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The value the pointer refers to. Array indices are `0` or digits
    /// without a leading zero; `-` refers to nothing.
    pub fn resolve<'a>(&self, document: &'a Value) -> Option<&'a Value> {
        self.tokens
            .iter()
            .try_fold(document, |value, token| match value {
                Value::Object(map) => map.get(token),
                Value::Array(items) => {
                    let index_ok = !token.is_empty()
                        && token.bytes().all(|b| b.is_ascii_digit())
                        && (token == "0" || !token.starts_with('0'));
                    if !index_ok {
                        return None;
                    }
                    token.parse::<usize>().ok().and_then(|i| items.get(i))
                }
                _ => None,
            })
    }
}

impl fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Part {
    Literal(String),
    Placeholder(JsonPointer),
}

/// A parsed permission template: a literal name and an optional resource
/// made of literal text and placeholders.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PermissionTemplate {
    text: String,
    name: String,
    resource: Option<Vec<Part>>,
}

impl PermissionTemplate {
    /// Parse `name[:resource-template]`, split at the first colon, trimmed.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let syntax = |e: super::permission::PermissionError| TemplateError::Syntax {
            template: text.to_owned(),
            message: e.message,
            help: e.help,
        };
        let (name, resource) = split(text, "permission template").map_err(syntax)?;
        validate_name(name).map_err(syntax)?;
        let resource = resource.map(|r| parse_parts(text, r)).transpose()?;
        let template = Self {
            text: text.trim().to_owned(),
            name: name.to_owned(),
            resource,
        };
        if let Some(parts) = &template.resource {
            let literal: String = parts
                .iter()
                .filter_map(|p| match p {
                    Part::Literal(s) => Some(s.as_str()),
                    Part::Placeholder(_) => None,
                })
                .collect();
            if literal.chars().any(char::is_control) {
                return Err(TemplateError::Syntax {
                    template: text.to_owned(),
                    message: "resource contains a control character".into(),
                    help: None,
                });
            }
        }
        Ok(template)
    }

    /// The template as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The permission name every expansion carries.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the template has a resource part.
    pub fn is_scoped(&self) -> bool {
        self.resource.is_some()
    }

    /// Whether the template has no placeholders (it always expands to one
    /// permission).
    pub fn is_literal(&self) -> bool {
        self.placeholders().next().is_none()
    }

    /// The placeholders, in order of appearance.
    pub fn placeholders(&self) -> impl Iterator<Item = &JsonPointer> {
        self.resource.iter().flatten().filter_map(|p| match p {
            Part::Placeholder(ptr) => Some(ptr),
            Part::Literal(_) => None,
        })
    }

    /// Expand against a call's arguments: one permission per element of the
    /// cartesian product of placeholder values (first placeholder varying
    /// slowest), duplicates removed, order kept.
    pub fn expand(&self, args: &Value) -> Result<Vec<Permission>, TemplateError> {
        let Some(parts) = &self.resource else {
            return Ok(vec![self.permission(None)?]);
        };
        let mut choices: Vec<Vec<String>> = Vec::new();
        for part in parts {
            if let Part::Placeholder(ptr) = part {
                choices.push(values(ptr, args)?);
            }
        }
        let count = choices
            .iter()
            .fold(1usize, |n, c| n.saturating_mul(c.len()));
        if count > MAX_EXPANSIONS {
            return Err(TemplateError::TooManyExpansions {
                template: self.text.clone(),
                count,
                limit: MAX_EXPANSIONS,
            });
        }
        let mut out: Vec<Permission> = Vec::with_capacity(count);
        let mut index = vec![0usize; choices.len()];
        for _ in 0..count {
            let mut resource = String::new();
            let mut k = 0;
            for part in parts {
                match part {
                    Part::Literal(s) => resource.push_str(s),
                    Part::Placeholder(_) => {
                        resource.push_str(&choices[k][index[k]]);
                        k += 1;
                    }
                }
            }
            let permission = self.permission(Some(&resource))?;
            if !out.contains(&permission) {
                out.push(permission);
            }
            // Odometer: the last placeholder varies fastest.
            for d in (0..index.len()).rev() {
                index[d] += 1;
                if index[d] < choices[d].len() {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(out)
    }

    fn permission(&self, resource: Option<&str>) -> Result<Permission, TemplateError> {
        if let Some(r) = resource {
            validate_resource_text(r).map_err(|e| TemplateError::InvalidResource {
                resource: r.to_owned(),
                message: e.message,
            })?;
        }
        Permission::new(&self.name, resource).map_err(|e| TemplateError::InvalidResource {
            resource: resource.unwrap_or_default().to_owned(),
            message: e.message,
        })
    }

    /// The resource with each placeholder-bearing `/`-segment replaced by
    /// `**` (consecutive ones merged): a pattern-shaped over-approximation
    /// of every expansion, used to check templates against manifests.
    /// `None` when unscoped or when the resource starts with a placeholder
    /// (its kind, path or opaque, is then unknown).
    pub(crate) fn resource_shape(&self) -> Option<String> {
        let parts = self.resource.as_ref()?;
        if matches!(parts.first(), Some(Part::Placeholder(_))) {
            return None;
        }
        const MARK: char = '\u{0}';
        let mut flat = String::new();
        for part in parts {
            match part {
                Part::Literal(s) => flat.push_str(s),
                Part::Placeholder(_) => flat.push(MARK),
            }
        }
        let mut segments: Vec<&str> = Vec::new();
        for seg in flat.split('/') {
            let seg = if seg.contains(MARK) { "**" } else { seg };
            if !(seg == "**" && segments.last() == Some(&"**")) {
                segments.push(seg);
            }
        }
        Some(segments.join("/"))
    }
}

impl fmt::Display for PermissionTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Parse then expand `template` against `args`.
pub fn expand(template: &str, args: &Value) -> Result<Vec<Permission>, TemplateError> {
    PermissionTemplate::parse(template)?.expand(args)
}

fn parse_parts(template: &str, resource: &str) -> Result<Vec<Part>, TemplateError> {
    let syntax = |message: String, help: Option<&str>| TemplateError::Syntax {
        template: template.to_owned(),
        message,
        help: help.map(str::to_owned),
    };
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = resource.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                literal.push('}');
            }
            '}' => {
                return Err(syntax(
                    "unmatched `}`".into(),
                    Some("write `}}` for a literal brace"),
                ));
            }
            '{' => {
                let mut pointer = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some('{') => {
                            return Err(syntax(
                                "`{` inside a placeholder".into(),
                                Some("write `{{` for a literal brace"),
                            ));
                        }
                        Some(c) => pointer.push(c),
                        None => {
                            return Err(syntax(
                                "unterminated placeholder".into(),
                                Some("close it with `}`, or write `{{` for a literal brace"),
                            ));
                        }
                    }
                }
                if pointer.is_empty() {
                    return Err(syntax(
                        "empty placeholder `{}`".into(),
                        Some("write a JSON Pointer such as `{/path}`"),
                    ));
                }
                let ptr = JsonPointer::parse(&pointer).map_err(|m| {
                    syntax(
                        m,
                        Some("placeholders are RFC 6901 JSON Pointers, e.g. `{/path}`"),
                    )
                })?;
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(Part::Placeholder(ptr));
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn values(ptr: &JsonPointer, args: &Value) -> Result<Vec<String>, TemplateError> {
    let pointer = || ptr.as_str().to_owned();
    let value = ptr
        .resolve(args)
        .ok_or_else(|| TemplateError::MissingArgument { pointer: pointer() })?;
    let unsupported = |kind| TemplateError::UnsupportedValue {
        pointer: pointer(),
        kind,
    };
    match value {
        Value::Null => Err(unsupported("null")),
        Value::Object(_) => Err(unsupported("an object")),
        Value::Array(items) if items.is_empty() => {
            Err(TemplateError::EmptyArray { pointer: pointer() })
        }
        Value::Array(items) => items
            .iter()
            .map(|item| {
                scalar(item).ok_or_else(|| {
                    unsupported(match item {
                        Value::Null => "an array containing null",
                        Value::Object(_) => "an array containing an object",
                        _ => "a nested array",
                    })
                })
            })
            .collect(),
        Value::String(_) | Value::Number(_) | Value::Bool(_) => scalar(value)
            .map(|s| vec![s])
            .ok_or_else(|| unsupported("not a scalar")),
    }
}
