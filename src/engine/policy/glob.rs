//! Resource patterns and path normalization.
//!
//! The reference matched resources with `fnmatch` and no normalization, so
//! `/workspace/../etc/passwd` passed `/workspace/**`. Here:
//!
//! * a pattern is split into `/`-separated segments; `*` matches any run of
//!   characters inside one segment, a segment that is exactly `**` matches
//!   zero or more whole segments (so `/workspace/**` also covers
//!   `/workspace` itself), every other character is literal, and matching is
//!   case-sensitive;
//! * a resource that starts with `/` is a *path* and is normalized
//!   lexically before matching ([`normalize_path`]): `//` collapses, `.`
//!   segments drop, `..` removes its parent, and a `..` above the root makes
//!   the resource match nothing;
//! * any other resource (`api.example.com`, `db:orders`) is *opaque* and is
//!   matched as written, with the same segment rules;
//! * path patterns only match path resources and opaque patterns only opaque
//!   ones, so an opaque `**` never silently covers the file system.
//!
//! Resources that a consumer could reinterpret after the check match
//! nothing (fail closed): control characters (NUL included), the
//! percent-encodings `%00`, `%25`, `%2e`, `%2f`, `%5c` (any case), a
//! backslash in a path, and a `..` component in an opaque resource.
//!
//! A `*` inside a *request* resource is a claim over a set, not a literal
//! character: `/workspace/**` asked by a tool is covered by the pattern
//! `/workspace/**` but not by `/workspace/*`. The check is sound (a pattern
//! only covers a claim if it covers every resource the claim stands for)
//! and conservative in corner cases.
use std::fmt;

use super::permission::PermissionError;

/// Why a resource matches nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// The resource contains a control character (NUL included).
    #[error("contains a control character")]
    ControlCharacter,
    /// A path resource contains a backslash, a separator on some platforms.
    #[error("contains a backslash, which some platforms treat as a path separator")]
    Backslash,
    /// The resource contains a percent-encoding a consumer may decode later.
    #[error("contains the percent-encoding `{0}`, which a consumer may decode after the check")]
    PercentEncoded(String),
    /// A path's `..` climbs above the root.
    #[error("has a `..` that escapes the root")]
    EscapesRoot,
    /// An opaque resource contains a `..` component.
    #[error("has a `..` component, which is only resolved in absolute paths")]
    DotDotComponent,
    /// [`normalize_path`] was given a text that does not start with `/`.
    #[error("is not an absolute path")]
    NotAbsolute,
}

const FORBIDDEN_ENCODINGS: [&str; 5] = ["%00", "%25", "%2e", "%2f", "%5c"];

fn check_common(text: &str) -> Result<(), ResourceError> {
    if text.chars().any(char::is_control) {
        return Err(ResourceError::ControlCharacter);
    }
    let lower = text.to_ascii_lowercase();
    if let Some(enc) = FORBIDDEN_ENCODINGS.iter().find(|e| lower.contains(*e)) {
        return Err(ResourceError::PercentEncoded((*enc).to_owned()));
    }
    Ok(())
}

/// Lexically normalize an absolute path: collapse repeated `/`, drop `.`,
/// resolve `..` against its parent, drop a trailing `/`.
///
/// Errors when the path is not absolute, climbs above the root, or contains
/// something a consumer could reinterpret (see the module docs). The result
/// is a fixed point: normalizing it again returns it unchanged.
pub fn normalize_path(path: &str) -> Result<String, ResourceError> {
    let segments = path_segments(path)?;
    Ok(format!("/{}", segments.join("/")))
}

fn path_segments(path: &str) -> Result<Vec<&str>, ResourceError> {
    let Some(rest) = path.strip_prefix('/') else {
        return Err(ResourceError::NotAbsolute);
    };
    check_common(path)?;
    if path.contains('\\') {
        return Err(ResourceError::Backslash);
    }
    let mut out: Vec<&str> = Vec::new();
    for seg in rest.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if out.pop().is_none() {
                    return Err(ResourceError::EscapesRoot);
                }
            }
            s => out.push(s),
        }
    }
    Ok(out)
}

/// A resource prepared for matching: its kind and segments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PreparedResource<'a> {
    path: bool,
    segments: Vec<&'a str>,
}

/// Classify, check and (for paths) normalize a request resource.
pub(crate) fn prepare(resource: &str) -> Result<PreparedResource<'_>, ResourceError> {
    if resource.starts_with('/') {
        return Ok(PreparedResource {
            path: true,
            segments: path_segments(resource)?,
        });
    }
    check_common(resource)?;
    if resource.split(['/', '\\']).any(|c| c == "..") {
        return Err(ResourceError::DotDotComponent);
    }
    Ok(PreparedResource {
        path: false,
        segments: resource.split('/').collect(),
    })
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Segment {
    /// `**`: zero or more whole segments.
    Any,
    /// Literal characters and `*`, inside one segment.
    Glob(Vec<char>),
}

/// A validated resource pattern for a grant or deny rule.
///
/// Path patterns (starting with `/`) must already be in normal form: no
/// empty, `.` or `..` segments, no backslash. `**` must be a whole segment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourcePattern {
    text: String,
    path: bool,
    segments: Vec<Segment>,
}

impl ResourcePattern {
    /// Parse a pattern; surrounding whitespace is trimmed.
    pub fn parse(text: &str) -> Result<Self, PermissionError> {
        let text = text.trim();
        let err = |message: String, help: Option<&str>| Err(PermissionError::new(message, help));
        if text.is_empty() {
            return err("resource pattern is empty".into(), None);
        }
        if let Err(e) = check_common(text) {
            return err(format!("resource pattern {text:?} {e}"), None);
        }
        let path = text.starts_with('/');
        let raw: Vec<&str> = if path {
            if text.contains('\\') {
                return err(
                    format!("resource pattern `{text}` {}", ResourceError::Backslash),
                    Some("use `/` as the path separator"),
                );
            }
            if text == "/" {
                Vec::new()
            } else {
                text[1..].split('/').collect()
            }
        } else {
            text.split('/').collect()
        };
        let mut segments = Vec::with_capacity(raw.len());
        for seg in raw {
            if path && matches!(seg, "" | "." | "..") {
                return err(
                    format!("path pattern `{text}` is not normalized"),
                    Some(
                        "remove empty, `.` and `..` segments and any trailing `/`; use `/dir/**` for everything below `/dir`",
                    ),
                );
            }
            if !path && seg == ".." {
                return err(
                    format!("resource pattern `{text}` has a `..` component"),
                    Some(
                        "opaque resources with `..` never match; write the resource as a normalized absolute path",
                    ),
                );
            }
            if seg == "**" {
                segments.push(Segment::Any);
            } else if seg.contains("**") {
                return err(
                    format!("resource pattern `{text}` uses `**` inside a segment"),
                    Some(
                        "`**` must be a whole segment (`/a/**/b`); use `*` to match within one segment",
                    ),
                );
            } else {
                segments.push(Segment::Glob(seg.chars().collect()));
            }
        }
        Ok(Self {
            text: text.to_owned(),
            path,
            segments,
        })
    }

    /// The pattern as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether this is a path pattern (starts with `/`).
    pub fn is_path(&self) -> bool {
        self.path
    }

    /// Whether the pattern covers `resource`; a resource that matches
    /// nothing (see [`ResourceError`]) is never covered.
    pub fn matches(&self, resource: &str) -> bool {
        prepare(resource).is_ok_and(|r| self.covers(&r))
    }

    pub(crate) fn covers(&self, resource: &PreparedResource<'_>) -> bool {
        self.path == resource.path && cover(&self.segments, &resource.segments)
    }
}

impl fmt::Display for ResourcePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether the pattern segments cover the resource segments (dynamic
/// programming over suffixes; `**` absorbs any run of segments).
fn cover(pattern: &[Segment], resource: &[&str]) -> bool {
    let m = resource.len();
    // next[j]: pattern[i+1..] covers resource[j..].
    let mut next = vec![false; m + 1];
    next[m] = true;
    for seg in pattern.iter().rev() {
        let mut cur = vec![false; m + 1];
        for j in (0..=m).rev() {
            cur[j] = match seg {
                Segment::Any => next[j] || (j < m && cur[j + 1]),
                Segment::Glob(g) => j < m && segment_covers(g, resource[j]) && next[j + 1],
            };
        }
        next = cur;
    }
    next[0]
}

/// One glob segment against one resource segment. A resource segment that
/// contains `**` claims several segments and only a `**` pattern segment
/// covers it; a `*` in the resource can only be absorbed by a `*` in the
/// pattern, because pattern literals are never `*`.
fn segment_covers(pattern: &[char], resource: &str) -> bool {
    if resource.contains("**") {
        return false;
    }
    let text: Vec<char> = resource.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] != '*' && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}
