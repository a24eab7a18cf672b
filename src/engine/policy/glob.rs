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
//! * any other resource (`workspace/notes.md`, `api.example.com`,
//!   `db:orders`) is *relative* (or opaque) and is normalized the same way
//!   but for `..`: empty and `.` segments drop, so `workspace/./secrets/k`
//!   and `workspace//secrets/k` are `workspace/secrets/k` for grants and
//!   deny rules alike, and a `..` makes it match nothing (only the file
//!   system can say where a relative `..` leads; the runtime resolves
//!   file-system resources, symlinks included, before they get here);
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
        segments: relative_segments(resource).collect(),
    })
}

/// The segments of a relative resource or pattern: empty and `.` segments
/// dropped, as a path's are.
fn relative_segments(text: &str) -> impl Iterator<Item = &str> {
    text.split('/').filter(|s| !s.is_empty() && *s != ".")
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
            relative_segments(text).collect()
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

/// Whether the pattern segments cover the resource segments.
fn cover(pattern: &[Segment], resource: &[&str]) -> bool {
    segments_match(
        pattern,
        resource,
        |seg| matches!(seg, Segment::Any),
        |seg, text| match seg {
            Segment::Any => true,
            Segment::Glob(g) => segment_covers(g, text),
        },
    )
}

/// Whether `pattern` matches the whole of `text`, segment by segment
/// (dynamic programming over suffixes): a segment for which `any` holds
/// absorbs any run of segments (`**`), any other must match one segment
/// by `one`. Shared by grants and deny patterns, so they agree on `**`.
fn segments_match<S>(
    pattern: &[S],
    text: &[&str],
    any: impl Fn(&S) -> bool,
    one: impl Fn(&S, &str) -> bool,
) -> bool {
    let m = text.len();
    // next[j]: pattern[i+1..] matches text[j..].
    let mut next = vec![false; m + 1];
    next[m] = true;
    for seg in pattern.iter().rev() {
        let mut cur = vec![false; m + 1];
        for j in (0..=m).rev() {
            cur[j] = if any(seg) {
                next[j] || (j < m && cur[j + 1])
            } else {
                j < m && one(seg, text[j]) && next[j + 1]
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

/// One character class of an argument pattern's segment.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    /// Itself.
    Literal(char),
    /// `*`: any run of characters inside the segment.
    Star,
    /// `?`: exactly one character.
    One,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ArgSegment {
    /// `**`: zero or more whole segments.
    Any,
    Glob(Vec<Token>),
}

/// The pattern of a `deny` hook's argument rule: the dialect of grants
/// (`*` inside one segment, `**` whole segments, paths normalized) read
/// the way `.gitignore` reads a line, so that a deny rule never covers
/// less than it says:
///
/// * a pattern without `/` matches any segment of the value (`*.env`
///   refuses `a/b/.env`; `secrets` refuses `secrets/key` and
///   `a/secrets`);
/// * a pattern with `/` is anchored (an absolute one to absolute values, a
///   relative one to relative values) and also refuses everything below
///   what it matches (`/secrets/*` refuses `/secrets/a/b`);
/// * `?` is one character (a deny rule may be wider than a grant, never
///   narrower); `{`, `}`, `[`, `]` are literal, as in grants.
///
/// A value is matched as written, lexically normalized, and cut at a NUL
/// (what a C API would see); it is refused if any form matches. Values
/// are literal: a `*` in a value is the character.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentPattern {
    text: String,
    /// `None`: no `/`, any segment; `Some(absolute)`: anchored.
    anchor: Option<bool>,
    segments: Vec<ArgSegment>,
}

impl ArgumentPattern {
    /// Parse a pattern (not empty).
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("a pattern must not be empty".into());
        }
        let anchor = text.contains('/').then(|| text.starts_with('/'));
        let mut segments = Vec::new();
        for seg in relative_segments(text) {
            if seg == "**" {
                segments.push(ArgSegment::Any);
            } else if seg.contains("**") {
                return Err(format!(
                    "`{text}` uses `**` inside a segment: `**` must be a whole segment (`a/**/b`), `*` matches within one"
                ));
            } else {
                segments.push(ArgSegment::Glob(
                    seg.chars()
                        .map(|c| match c {
                            '*' => Token::Star,
                            '?' => Token::One,
                            c => Token::Literal(c),
                        })
                        .collect(),
                ));
            }
        }
        if segments.is_empty() {
            return Err(format!("`{text}` has no segment to match"));
        }
        Ok(Self {
            text: text.to_owned(),
            anchor,
            segments,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `value` (in any of its forms) is refused.
    pub fn matches(&self, value: &str) -> bool {
        value_forms(value)
            .iter()
            .any(|form| self.matches_form(form))
    }

    fn matches_form(&self, form: &str) -> bool {
        let segments: Vec<&str> = relative_segments(form).collect();
        match self.anchor {
            None => match &self.segments[..] {
                [ArgSegment::Glob(g)] => segments.iter().any(|s| tokens_match(g, s)),
                _ => !segments.is_empty(),
            },
            Some(absolute) => {
                absolute == form.starts_with('/')
                    && (1..=segments.len()).any(|n| arg_cover(&self.segments, &segments[..n]))
            }
        }
    }
}

impl fmt::Display for ArgumentPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `value` as written, lexically normalized (`/a/../b.env` is also
/// `/b.env`, `a/./b` is also `a/b`), and cut at a NUL.
fn value_forms(value: &str) -> Vec<String> {
    if let Some((before, _)) = value.split_once('\0') {
        let mut out = value_forms(before);
        out.push(value.to_owned());
        return out;
    }
    let mut out = vec![value.to_owned()];
    let normalized = if value.starts_with('/') {
        path_segments(value)
            .ok()
            .map(|s| format!("/{}", s.join("/")))
    } else if value.contains('/') {
        path_segments(&format!("/{value}"))
            .ok()
            .map(|s| s.join("/"))
    } else {
        None
    };
    if let Some(n) = normalized.filter(|n| n != value) {
        out.push(n);
    }
    out
}

/// [`cover`] for argument patterns over literal values.
fn arg_cover(pattern: &[ArgSegment], value: &[&str]) -> bool {
    segments_match(
        pattern,
        value,
        |seg| matches!(seg, ArgSegment::Any),
        |seg, text| match seg {
            ArgSegment::Any => true,
            ArgSegment::Glob(g) => tokens_match(g, text),
        },
    )
}

/// One segment's tokens against one literal text.
fn tokens_match(pattern: &[Token], text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(Token::One) => {
                p += 1;
                t += 1;
            }
            Some(Token::Literal(c)) if *c == text[t] => {
                p += 1;
                t += 1;
            }
            Some(Token::Star) => {
                star = Some((p, t));
                p += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|t| *t == Token::Star)
}
