//! Plugin and capability versions.
//!
//! Plugins publish semantic versions, but authors coming from the Python
//! reference implementation often write PEP 440 spellings (`1.0rc1`,
//! `1.0.post1`, `1!2.0`, `v1.0`). This module parses the semver subset that
//! chassis accepts (`1`, `1.2`, `1.2.3`, `1.2.3-rc.1`, `1.2.3+build.5`) and
//! rejects everything else with a precise span and a help text giving the
//! semver spelling. The same scanner backs the operands of
//! [`super::specifier::Specifier`] so both report identical diagnostics.
use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use std::sync::Arc;

/// A version as written, parsed to `semver::Version`.
///
/// Missing components are zero (`1.2` is `1.2.0`). Equality and ordering
/// follow the parsed semver value (a total order), while [`fmt::Display`]
/// reproduces the text as written.
///
/// The written text is shared: a resolution plan binds a version per
/// requirement, and cloning one must not allocate.
#[derive(Clone, Debug)]
pub struct Version {
    parsed: semver::Version,
    written: Arc<str>,
}

/// Why a version text was rejected; `span` is a byte range inside the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct VersionError {
    /// What is wrong, lower-case, no trailing period.
    pub message: String,
    /// Byte range inside the parsed text that is wrong.
    pub span: Range<usize>,
    /// A suggestion, e.g. the semver spelling of a PEP 440 version.
    pub help: Option<String>,
}

impl VersionError {
    fn new(message: impl Into<String>, span: Range<usize>, help: Option<String>) -> Self {
        Self {
            message: message.into(),
            span,
            help,
        }
    }
}

/// The raw result of scanning a version-like text: release numbers, an
/// optional trailing wildcard, pre-release and build metadata, each with its
/// absolute span. Callers (versions, specifier operands) apply their own
/// extra rules on top.
#[derive(Clone, Debug)]
pub(crate) struct Scanned {
    /// The written release numbers (at most three; empty only for a lone `*`).
    pub(crate) release: Vec<u64>,
    /// Span of the release numbers (without wildcard, pre-release or build).
    pub(crate) release_span: Range<usize>,
    /// Span of a trailing `*` component, if any.
    pub(crate) wildcard: Option<Range<usize>>,
    /// The pre-release, with the span of its text (after `-`).
    pub(crate) pre: Option<(semver::Prerelease, Range<usize>)>,
    /// The build metadata, with the span of `+` and its text.
    pub(crate) build: Option<(semver::BuildMetadata, Range<usize>)>,
}

impl Scanned {
    /// The release numbers padded with zeros to `major.minor.patch`.
    pub(crate) fn triple(&self) -> (u64, u64, u64) {
        let at = |i: usize| self.release.get(i).copied().unwrap_or(0);
        (at(0), at(1), at(2))
    }

    /// The semver value, missing components zero.
    pub(crate) fn semver(&self) -> semver::Version {
        let (major, minor, patch) = self.triple();
        semver::Version {
            major,
            minor,
            patch,
            pre: self
                .pre
                .as_ref()
                .map_or(semver::Prerelease::EMPTY, |(p, _)| p.clone()),
            build: self
                .build
                .as_ref()
                .map_or(semver::BuildMetadata::EMPTY, |(b, _)| b.clone()),
        }
    }
}

fn padded(release: &[u64]) -> String {
    let at = |i: usize| release.get(i).copied().unwrap_or(0);
    format!("{}.{}.{}", at(0), at(1), at(2))
}

/// Scan `text` (already trimmed, non-empty) as a version; spans are offset by
/// `offset`, the position of `text` inside the caller's input.
///
/// Rejects the PEP 440-only spellings (leading `v`, epochs, `rc1`/`a1`/`b1`
/// suffixes, `.devN`, `.postN`), leading zeros, more than three components,
/// a pre-release on a short version, and anything else semver rejects.
/// A trailing `*` component is returned, not rejected: callers decide.
pub(crate) fn scan(text: &str, offset: usize) -> Result<Scanned, VersionError> {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let abs = |r: Range<usize>| offset + r.start..offset + r.end;

    // Leading `v`.
    if len > 1 && matches!(bytes[0], b'v' | b'V') && bytes[1].is_ascii_digit() {
        return Err(VersionError::new(
            format!("leading `{}` is not part of a version", &text[..1]),
            abs(0..1),
            Some(format!("drop it: write `{}`", &text[1..])),
        ));
    }
    // Epoch `N!`.
    if let Some(bang) = text.find('!') {
        let epoch = &text[..bang];
        if !epoch.is_empty() && epoch.bytes().all(|b| b.is_ascii_digit()) {
            return Err(VersionError::new(
                format!("epoch `{epoch}!` is not supported"),
                abs(0..bang + 1),
                Some(format!(
                    "semver has no epochs; write `{}`",
                    &text[bang + 1..]
                )),
            ));
        }
    }

    // Release numbers, possibly ending in a `*` component.
    let mut i = 0;
    let mut components: Vec<Range<usize>> = Vec::new();
    let mut wildcard = None;
    loop {
        let start = i;
        if i < len && bytes[i] == b'*' {
            wildcard = Some(abs(i..i + 1));
            i += 1;
            break;
        }
        while i < len && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if start == i {
            return Err(unexpected(text, i, offset, true));
        }
        components.push(start..i);
        if i + 1 < len
            && bytes[i] == b'.'
            && (bytes[i + 1].is_ascii_digit() || bytes[i + 1] == b'*')
        {
            i += 1;
            continue;
        }
        break;
    }
    let release_end = components.last().map_or(0, |r| r.end);
    let release_span = abs(components.first().map_or(0, |r| r.start)..release_end);

    let mut release = Vec::with_capacity(components.len());
    for r in &components {
        let digits = &text[r.clone()];
        let n: u64 = digits.parse().map_err(|_| {
            VersionError::new(
                format!("version component `{digits}` is too large"),
                abs(r.clone()),
                Some(format!("components must be at most `{}`", u64::MAX)),
            )
        })?;
        release.push(n);
    }
    if let Some(r) = components
        .iter()
        .find(|r| r.len() > 1 && bytes[r.start] == b'0')
    {
        let numbers: Vec<String> = release.iter().map(u64::to_string).collect();
        let mut fixed = numbers.join(".");
        fixed.push_str(&text[release_end..]);
        return Err(VersionError::new(
            format!("leading zero in version component `{}`", &text[r.clone()]),
            abs(r.clone()),
            Some(format!("semver forbids leading zeros; write `{fixed}`")),
        ));
    }
    if components.len() > 3 {
        return Err(VersionError::new(
            format!("too many version components ({})", components.len()),
            abs(components[3].start..release_end),
            Some("semver versions have three components: `major.minor.patch`".to_owned()),
        ));
    }

    let rest = &text[i..];
    if wildcard.is_some() {
        if !rest.is_empty() {
            return Err(VersionError::new(
                "a wildcard `*` must be the last component",
                abs(i..len),
                None,
            ));
        }
        return Ok(Scanned {
            release,
            release_span,
            wildcard,
            pre: None,
            build: None,
        });
    }

    // PEP 440 suffixes: `1.0rc1`, `1.0.dev1`, `1.0.post1`, ...
    let rb = rest.as_bytes();
    if !rb.is_empty()
        && (rb[0].is_ascii_alphabetic()
            || (rb[0] == b'.' && rb.len() > 1 && rb[1].is_ascii_alphabetic()))
    {
        return Err(pep440_suffix(text, i, offset, &release));
    }
    if rest == "." {
        return Err(VersionError::new(
            "missing version component after `.`",
            abs(i..len),
            Some(format!("write `{text}0`")),
        ));
    }

    let mut pre = None;
    let mut build = None;
    if rb.first() == Some(&b'-') {
        let pre_start = i + 1;
        let pre_end = text[pre_start..].find('+').map_or(len, |p| pre_start + p);
        let pre_text = &text[pre_start..pre_end];
        if pre_text.is_empty() {
            return Err(VersionError::new(
                "empty pre-release after `-`",
                abs(i..pre_start),
                Some(format!("write e.g. `{}-rc.1`", &text[..i])),
            ));
        }
        let parsed = semver::Prerelease::new(pre_text).map_err(|e| {
            VersionError::new(
                format!("invalid pre-release `{pre_text}`: {e}"),
                abs(pre_start..pre_end),
                None,
            )
        })?;
        if release.len() < 3 {
            return Err(VersionError::new(
                "a pre-release needs a full `major.minor.patch` version",
                release_span,
                Some(format!("write `{}-{pre_text}`", padded(&release))),
            ));
        }
        pre = Some((parsed, abs(pre_start..pre_end)));
        i = pre_end;
    }
    if i < len && bytes[i] == b'+' {
        let build_text = &text[i + 1..];
        if build_text.is_empty() {
            return Err(VersionError::new(
                "empty build metadata after `+`",
                abs(i..i + 1),
                Some(format!("write e.g. `{}+build.1`", &text[..i])),
            ));
        }
        let parsed = semver::BuildMetadata::new(build_text).map_err(|e| {
            VersionError::new(
                format!("invalid build metadata `{build_text}`: {e}"),
                abs(i + 1..len),
                None,
            )
        })?;
        build = Some((parsed, abs(i..len)));
        i = len;
    }
    if i < len {
        return Err(unexpected(text, i, offset, false));
    }
    Ok(Scanned {
        release,
        release_span,
        wildcard,
        pre,
        build,
    })
}

/// The error for an unexpected character (or end of text) at byte `i`.
fn unexpected(text: &str, i: usize, offset: usize, want_number: bool) -> VersionError {
    let help = Some("a version looks like `1.2.3`".to_owned());
    match text[i..].chars().next() {
        None => VersionError::new("expected a version number", offset + i..offset + i, help),
        Some(c) => {
            let message = if want_number {
                format!("expected a version number, found `{c}`")
            } else {
                format!("unexpected character `{c}` in version")
            };
            VersionError::new(message, offset + i..offset + i + c.len_utf8(), help)
        }
    }
}

/// The error for a PEP 440 suffix starting at byte `i` of `text`.
fn pep440_suffix(text: &str, i: usize, offset: usize, release: &[u64]) -> VersionError {
    let b = text.as_bytes();
    let mut j = i;
    if b[j] == b'.' {
        j += 1;
    }
    let letters_start = j;
    while j < b.len() && b[j].is_ascii_alphabetic() {
        j += 1;
    }
    let letters = text[letters_start..j].to_ascii_lowercase();
    let mut k = j;
    if k + 1 < b.len() && matches!(b[k], b'.' | b'-' | b'_') && b[k + 1].is_ascii_digit() {
        k += 1;
    }
    let digits_start = k;
    while k < b.len() && b[k].is_ascii_digit() {
        k += 1;
    }
    let (end, number) = if k > digits_start {
        let n = text[digits_start..k].trim_start_matches('0');
        (k, Some(if n.is_empty() { "0" } else { n }.to_owned()))
    } else {
        (j, None)
    };
    let suffix = &text[i..end];
    let span = offset + i..offset + end;
    let base = padded(release);
    let semver_pre = |tag: &str| match &number {
        Some(n) => format!("{base}-{tag}.{n}"),
        None => format!("{base}-{tag}"),
    };
    match letters.as_str() {
        "a" | "alpha" | "b" | "beta" | "c" | "rc" | "pre" | "preview" => {
            let tag = match letters.as_str() {
                "a" | "alpha" => "alpha",
                "b" | "beta" => "beta",
                _ => "rc",
            };
            VersionError::new(
                format!("pre-release `{suffix}` uses PEP 440 spelling"),
                span,
                Some(format!("write `{}`", semver_pre(tag))),
            )
        }
        "dev" => VersionError::new(
            format!("development release `{suffix}` uses PEP 440 spelling"),
            span,
            Some(format!("write `{}`", semver_pre("dev"))),
        ),
        "post" | "rev" | "r" => {
            let (major, minor, patch) = (
                release.first().copied().unwrap_or(0),
                release.get(1).copied().unwrap_or(0),
                release.get(2).copied().unwrap_or(0),
            );
            VersionError::new(
                format!("post-release `{suffix}` uses PEP 440 spelling"),
                span,
                Some(format!(
                    "post-releases do not exist in semver; publish `{major}.{minor}.{}`",
                    patch.saturating_add(1)
                )),
            )
        }
        _ => VersionError::new(
            format!("unexpected `{suffix}` after the version number"),
            span,
            Some(format!(
                "a pre-release follows a full version after `-`, e.g. `{base}-{letters}`"
            )),
        ),
    }
}

impl Version {
    /// Parse `1`, `1.2`, `1.2.3`, `1.2.3-rc.1`, `1.2.3+build`.
    ///
    /// Surrounding whitespace is ignored; error spans are byte ranges inside
    /// the untrimmed `text`.
    pub fn parse(text: &str) -> Result<Self, VersionError> {
        let start = text.len() - text.trim_start().len();
        let t = text.trim();
        if t.is_empty() {
            return Err(VersionError::new(
                "empty version",
                0..text.len(),
                Some("write a version such as `1.0.0`".to_owned()),
            ));
        }
        let scanned = scan(t, start)?;
        if let Some(star) = &scanned.wildcard {
            let fixed = format!("{}0", &t[..star.start - start]);
            return Err(VersionError::new(
                "wildcards are not allowed in a version",
                star.clone(),
                Some(format!("a version names one release; write `{fixed}`")),
            ));
        }
        if let Some((build, _)) = &scanned.build
            && scanned.release.len() < 3
        {
            return Err(VersionError::new(
                "build metadata needs a full `major.minor.patch` version",
                scanned.release_span.clone(),
                Some(format!("write `{}+{build}`", padded(&scanned.release))),
            ));
        }
        Ok(Self {
            parsed: scanned.semver(),
            written: Arc::from(t),
        })
    }

    /// Wrap an already parsed semver value; the written text is its display.
    pub fn from_semver(parsed: semver::Version) -> Self {
        let written = Arc::from(parsed.to_string());
        Self { parsed, written }
    }

    /// The parsed semantic version.
    pub fn semver(&self) -> &semver::Version {
        &self.parsed
    }

    /// The text as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.written
    }

    /// The major version: the contract generation.
    pub fn major(&self) -> u64 {
        self.parsed.major
    }
}

impl FromStr for Version {
    type Err = VersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.parsed == other.parsed
    }
}

impl Eq for Version {}

impl std::hash::Hash for Version {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.parsed.hash(state);
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.parsed.cmp(&other.parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn err(text: &str) -> VersionError {
        Version::parse(text).expect_err(text)
    }

    fn help(text: &str) -> String {
        err(text).help.unwrap_or_default()
    }

    fn sv(text: &str) -> semver::Version {
        semver::Version::parse(text).unwrap()
    }

    #[test]
    fn accepts_short_and_full_versions() {
        assert_eq!(Version::parse("1").unwrap().semver(), &sv("1.0.0"));
        assert_eq!(Version::parse("1.2").unwrap().semver(), &sv("1.2.0"));
        assert_eq!(Version::parse("1.2.3").unwrap().semver(), &sv("1.2.3"));
        assert_eq!(Version::parse("0.0.0").unwrap().semver(), &sv("0.0.0"));
        assert_eq!(Version::parse("10.20.30").unwrap().major(), 10);
    }

    #[test]
    fn accepts_pre_release_and_build() {
        let v = Version::parse("1.2.3-rc.1").unwrap();
        assert_eq!(v.semver(), &sv("1.2.3-rc.1"));
        let v = Version::parse("1.2.3+build.5").unwrap();
        assert_eq!(v.semver(), &sv("1.2.3+build.5"));
        let v = Version::parse("1.2.3-alpha.1+exp.sha.5114f85").unwrap();
        assert_eq!(v.semver(), &sv("1.2.3-alpha.1+exp.sha.5114f85"));
        assert!(Version::parse("1.0.0-rc1").is_ok());
    }

    #[test]
    fn keeps_written_text_trimmed() {
        let v = Version::parse("  1.2 \t").unwrap();
        assert_eq!(v.as_str(), "1.2");
        assert_eq!(v.to_string(), "1.2");
        assert_eq!(v.major(), 1);
        assert_eq!("1.2".parse::<Version>().unwrap(), v);
    }

    #[test]
    fn equality_and_order_follow_semver() {
        let a = Version::parse("1.2").unwrap();
        let b = Version::parse("1.2.0").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.cmp(&b), std::cmp::Ordering::Equal);
        assert_ne!(a.as_str(), b.as_str());
        let rc = Version::parse("1.2.0-rc.1").unwrap();
        assert!(rc < a);
        assert!(Version::parse("1.10").unwrap() > Version::parse("1.9").unwrap());
        // Build metadata is part of the (total) order, so Eq stays consistent.
        let b1 = Version::parse("1.2.0+a").unwrap();
        assert_ne!(b1, b);
    }

    #[test]
    fn from_semver_writes_display() {
        let v = Version::from_semver(sv("1.2.3-rc.1+b"));
        assert_eq!(v.as_str(), "1.2.3-rc.1+b");
        assert_eq!(v, Version::parse("1.2.3-rc.1+b").unwrap());
    }

    #[test]
    fn rejects_empty() {
        let e = err("");
        assert_eq!(e.message, "empty version");
        assert_eq!(e.span, 0..0);
        let e = err("   ");
        assert_eq!(e.span, 0..3);
        assert!(e.help.is_some());
    }

    #[test]
    fn rejects_leading_v() {
        let e = err("v1.2.3");
        assert_eq!(e.message, "leading `v` is not part of a version");
        assert_eq!(e.span, 0..1);
        assert_eq!(e.help.as_deref(), Some("drop it: write `1.2.3`"));
        assert_eq!(err("  V1").span, 2..3);
    }

    #[test]
    fn rejects_leading_zeros() {
        let e = err("01.0");
        assert_eq!(e.message, "leading zero in version component `01`");
        assert_eq!(e.span, 0..2);
        assert_eq!(
            e.help.as_deref(),
            Some("semver forbids leading zeros; write `1.0`")
        );
        let e = err("1.02.3");
        assert_eq!(e.span, 2..4);
        assert_eq!(
            e.help.as_deref(),
            Some("semver forbids leading zeros; write `1.2.3`")
        );
        // Leading zeros in a numeric pre-release identifier come from semver.
        let e = err("1.2.3-rc.01");
        assert!(
            e.message.starts_with("invalid pre-release `rc.01`"),
            "{}",
            e.message
        );
        assert_eq!(e.span, 6..11);
    }

    #[test]
    fn rejects_four_components() {
        let e = err("1.2.3.4");
        assert_eq!(e.message, "too many version components (4)");
        assert_eq!(e.span, 6..7);
        assert!(help("1.2.3.4").contains("major.minor.patch"));
        assert_eq!(err("1.2.3.4.5").span, 6..9);
    }

    #[test]
    fn rejects_pep440_pre_releases() {
        let e = err("1.0rc1");
        assert_eq!(e.message, "pre-release `rc1` uses PEP 440 spelling");
        assert_eq!(e.span, 3..6);
        assert_eq!(e.help.as_deref(), Some("write `1.0.0-rc.1`"));
        assert_eq!(help("1.0a1"), "write `1.0.0-alpha.1`");
        assert_eq!(help("1.0b2"), "write `1.0.0-beta.2`");
        assert_eq!(help("1.2.3rc"), "write `1.2.3-rc`");
        assert_eq!(help("1.0.rc01"), "write `1.0.0-rc.1`");
        assert_eq!(help("2c3"), "write `2.0.0-rc.3`");
        assert_eq!(err(" 1.0rc1").span, 4..7);
    }

    #[test]
    fn rejects_pep440_dev_and_post() {
        let e = err("1.0.dev1");
        assert_eq!(
            e.message,
            "development release `.dev1` uses PEP 440 spelling"
        );
        assert_eq!(e.span, 3..8);
        assert_eq!(e.help.as_deref(), Some("write `1.0.0-dev.1`"));
        let e = err("1.0.post1");
        assert_eq!(e.message, "post-release `.post1` uses PEP 440 spelling");
        assert_eq!(e.span, 3..9);
        assert_eq!(
            e.help.as_deref(),
            Some("post-releases do not exist in semver; publish `1.0.1`")
        );
        assert_eq!(
            help("1.2.3.post2"),
            "post-releases do not exist in semver; publish `1.2.4`"
        );
    }

    #[test]
    fn rejects_epochs() {
        let e = err("1!2.0");
        assert_eq!(e.message, "epoch `1!` is not supported");
        assert_eq!(e.span, 0..2);
        assert_eq!(e.help.as_deref(), Some("semver has no epochs; write `2.0`"));
    }

    #[test]
    fn rejects_wildcards() {
        let e = err("1.*");
        assert_eq!(e.message, "wildcards are not allowed in a version");
        assert_eq!(e.span, 2..3);
        assert_eq!(
            e.help.as_deref(),
            Some("a version names one release; write `1.0`")
        );
        assert_eq!(err("*").span, 0..1);
        assert_eq!(
            err("1.*.2").message,
            "a wildcard `*` must be the last component"
        );
    }

    #[test]
    fn rejects_short_pre_release_and_build() {
        let e = err("1.2-rc.1");
        assert_eq!(
            e.message,
            "a pre-release needs a full `major.minor.patch` version"
        );
        assert_eq!(e.span, 0..3);
        assert_eq!(e.help.as_deref(), Some("write `1.2.0-rc.1`"));
        let e = err("1+b.5");
        assert_eq!(
            e.message,
            "build metadata needs a full `major.minor.patch` version"
        );
        assert_eq!(e.help.as_deref(), Some("write `1.0.0+b.5`"));
    }

    #[test]
    fn rejects_other_garbage() {
        let e = err("abc");
        assert_eq!(e.message, "expected a version number, found `a`");
        assert_eq!(e.span, 0..1);
        let e = err("1.2.3 4");
        assert_eq!(e.message, "unexpected character ` ` in version");
        assert_eq!(e.span, 5..6);
        let e = err("1.");
        assert_eq!(e.message, "missing version component after `.`");
        assert_eq!(e.help.as_deref(), Some("write `1.0`"));
        assert_eq!(err(".1").span, 0..1);
        assert_eq!(err("1.2.3-").message, "empty pre-release after `-`");
        assert_eq!(err("1.2.3-").span, 5..6);
        assert_eq!(err("1.2.3-+b").span, 5..6);
        assert_eq!(err("1.2.3+").message, "empty build metadata after `+`");
        assert_eq!(err("1.2.3+").span, 5..6);
        assert!(
            err("1.2.3+a..b")
                .message
                .starts_with("invalid build metadata")
        );
        assert!(err("1.2.3-a..b").message.starts_with("invalid pre-release"));
        assert!(err("1.2.3-rc!1").message.starts_with("invalid pre-release"));
        assert!(err("99999999999999999999").message.contains("too large"));
        assert_eq!(err("1.2é").span, 3..5);
        assert_eq!(
            err("1.0foo").message,
            "unexpected `foo` after the version number"
        );
    }

    #[test]
    fn messages_are_lower_case_without_period() {
        for text in [
            "",
            "v1",
            "01",
            "1.2.3.4",
            "1.0rc1",
            "1.0.dev1",
            "1.0.post1",
            "1!2",
            "1.*",
            "1.2-rc.1",
            "x",
            "1.",
            "1.2.3-",
            "1+b",
        ] {
            let e = err(text);
            let first = e.message.chars().next().unwrap();
            assert!(!first.is_uppercase(), "{text}: {}", e.message);
            assert!(!e.message.ends_with('.'), "{text}: {}", e.message);
            assert!(e.span.end <= text.len().max(e.span.end), "{text}");
        }
    }

    proptest! {
        #[test]
        fn full_versions_agree_with_semver(
            major in 0u64..1000, minor in 0u64..1000, patch in 0u64..1000,
            pre in proptest::option::of("[a-z]{1,5}(\\.[1-9][0-9]{0,2})?"),
            build in proptest::option::of("[a-z0-9]{1,5}"),
            pad in 0usize..3,
        ) {
            let mut text = format!("{major}.{minor}.{patch}");
            if let Some(p) = &pre { text.push('-'); text.push_str(p); }
            if let Some(b) = &build { text.push('+'); text.push_str(b); }
            let padded_text = format!("{}{text}{}", " ".repeat(pad), " ".repeat(pad));
            let v = Version::parse(&padded_text).unwrap();
            prop_assert_eq!(v.semver(), &semver::Version::parse(&text).unwrap());
            prop_assert_eq!(v.as_str(), text.as_str());
            prop_assert_eq!(Version::from_semver(v.semver().clone()), v);
        }

        #[test]
        fn error_spans_stay_inside_input(text in "[ 0-9a-z.+*!-]{0,12}") {
            if let Err(e) = Version::parse(&text) {
                prop_assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{:?} {:?}", text, e);
                prop_assert!(text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end));
            } else {
                // Whatever we accept, semver accepts once padded to three parts.
                let v = Version::parse(&text).unwrap();
                prop_assert!(semver::Version::parse(&v.semver().to_string()).is_ok());
            }
        }
    }
}
