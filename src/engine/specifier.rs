//! Requirement specifiers: which versions of a capability a plugin accepts.
//!
//! The Python reference implementation uses PEP 440 specifier sets from
//! `packaging`; chassis re-specifies the same syntax (`>=1.0, <2`, `~=1.4`,
//! `==2.1.*`, a bare version meaning `==`) over semantic versions. Parsing
//! reports precise spans with help texts, rendering reproduces the
//! reference's `str(SpecifierSet)` byte for byte, and [`Specifier::pinned_major`]
//! applies the reference's rule for deciding which contract generation a
//! requirement is bound to.
use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use std::sync::Arc;

use super::version::{Version, VersionError, scan};

/// A parsed requirement specifier: comma-separated clauses, empty = any.
///
/// Clauses are kept sorted by their rendering and deduplicated, like the
/// reference's `SpecifierSet`, so equality means "renders the same".
///
/// The clauses are immutable once parsed and shared (`Arc`), so cloning a
/// specifier (every resolution carries its requirement) is a reference-count
/// increment, not a copy of every operand string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Specifier {
    clauses: Arc<[Clause]>,
}

/// Why a specifier text was rejected; `span` is a byte range inside the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SpecifierError {
    /// What is wrong, lower-case, no trailing period.
    pub message: String,
    /// Byte range inside the parsed text that is wrong.
    pub span: Range<usize>,
    /// A suggestion.
    pub help: Option<String>,
}

impl SpecifierError {
    fn new(message: impl Into<String>, span: Range<usize>, help: Option<String>) -> Self {
        Self {
            message: message.into(),
            span,
            help,
        }
    }
}

impl From<VersionError> for SpecifierError {
    fn from(e: VersionError) -> Self {
        Self {
            message: e.message,
            span: e.span,
            help: e.help,
        }
    }
}

/// The comparison operator of one clause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `==` (also a bare version); with a `.*` operand, a prefix match.
    Equal,
    /// `!=`; with a `.*` operand, a negated prefix match.
    NotEqual,
    /// `>=`.
    GreaterEqual,
    /// `<=`.
    LessEqual,
    /// `>`.
    Greater,
    /// `<`; never admits pre-releases of the operand itself.
    Less,
    /// `~=`, the compatible release: `~=X.Y` is `>=X.Y,<X+1`, `~=X.Y.Z` is
    /// `>=X.Y.Z,<X.(Y+1)`.
    Compatible,
}

impl Operator {
    /// The operator as written in a rendered clause.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Equal => "==",
            Self::NotEqual => "!=",
            Self::GreaterEqual => ">=",
            Self::LessEqual => "<=",
            Self::Greater => ">",
            Self::Less => "<",
            Self::Compatible => "~=",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The version operand of one clause, as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    version: semver::Version,
    components: usize,
    prefix: bool,
    written: String,
}

impl Operand {
    /// The operand as a semver value, missing components zero (a prefix
    /// `2.1.*` gives `2.1.0`); never carries build metadata.
    pub fn version(&self) -> &semver::Version {
        &self.version
    }

    /// How many numeric components were written (1 to 3, not counting `*`).
    pub fn components(&self) -> usize {
        self.components
    }

    /// Whether the operand ends in `.*` (a prefix match).
    pub fn is_prefix(&self) -> bool {
        self.prefix
    }

    /// The operand text exactly as written (whitespace removed).
    pub fn as_str(&self) -> &str {
        &self.written
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

/// One comparison clause: an operator and its operand.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Clause {
    operator: Operator,
    operand: Operand,
}

impl Clause {
    /// The clause's operator (`==` for a bare version).
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The clause's operand.
    pub fn operand(&self) -> &Operand {
        &self.operand
    }

    /// Whether `version` satisfies this clause on its own, ignoring build
    /// metadata and without the specifier-wide pre-release rule (see
    /// [`Specifier::matches`]).
    pub fn matches(&self, version: &semver::Version) -> bool {
        let v = without_build(version);
        let o = &self.operand.version;
        let prefix_eq =
            || v.major == o.major && (self.operand.components < 2 || v.minor == o.minor);
        match (self.operator, self.operand.prefix) {
            (Operator::Equal, true) => prefix_eq(),
            (Operator::NotEqual, true) => !prefix_eq(),
            (Operator::Equal, false) => v == *o,
            (Operator::NotEqual, false) => v != *o,
            (Operator::GreaterEqual, _) => v >= *o,
            (Operator::Greater, _) => v > *o,
            (Operator::LessEqual, _) => v <= *o,
            (Operator::Less, _) => less_than(&v, o),
            (Operator::Compatible, _) => {
                if v < *o {
                    return false;
                }
                let upper = if self.operand.components >= 3 {
                    o.minor
                        .checked_add(1)
                        .map(|minor| semver::Version::new(o.major, minor, 0))
                } else {
                    o.major
                        .checked_add(1)
                        .map(|major| semver::Version::new(major, 0, 0))
                };
                upper.is_none_or(|u| less_than(&v, &u))
            }
        }
    }
}

/// `v < bound`, where a pre-release of a non-pre-release `bound` never counts
/// as below it (`<2` excludes `2.0.0-rc.1`).
fn less_than(v: &semver::Version, bound: &semver::Version) -> bool {
    if v >= bound {
        return false;
    }
    !(bound.pre.is_empty() && !v.pre.is_empty() && same_release(v, bound))
}

fn same_release(a: &semver::Version, b: &semver::Version) -> bool {
    (a.major, a.minor, a.patch) == (b.major, b.minor, b.patch)
}

fn without_build(version: &semver::Version) -> semver::Version {
    let mut v = version.clone();
    v.build = semver::BuildMetadata::EMPTY;
    v
}

impl Clause {
    /// What this clause says, equal for clauses that say the same: the
    /// operator and the operand as a version (`>=1` is `>=1.0`), except
    /// that a prefix (`==1.*`) or a compatible release (`~=1.0`, whose
    /// number of components is its meaning) is taken as written.
    fn meaning(&self) -> (Operator, Result<&semver::Version, &str>) {
        let operand = if self.operand.prefix || self.operator == Operator::Compatible {
            Err(self.operand.written.as_str())
        } else {
            Ok(&self.operand.version)
        };
        (self.operator, operand)
    }
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.operator, self.operand)
    }
}

/// Parse one trimmed, non-empty clause `text` found at byte `offset`.
fn parse_clause(text: &str, offset: usize) -> Result<Clause, SpecifierError> {
    let op_span = |n: usize| offset..offset + n;
    const OPERATORS: [(&str, Operator); 7] = [
        ("==", Operator::Equal),
        ("!=", Operator::NotEqual),
        (">=", Operator::GreaterEqual),
        ("<=", Operator::LessEqual),
        ("~=", Operator::Compatible),
        (">", Operator::Greater),
        ("<", Operator::Less),
    ];
    if text.starts_with("===") {
        return Err(SpecifierError::new(
            "arbitrary equality `===` is not supported",
            op_span(3),
            Some("use `==`".to_owned()),
        ));
    }
    let (operator, op_len) = match OPERATORS.iter().find(|(s, _)| text.starts_with(s)) {
        Some((s, op)) => (*op, s.len()),
        None => {
            let bad = |what: &str, help: &str| {
                Err(SpecifierError::new(
                    format!("`{what}` is not an operator"),
                    op_span(what.len()),
                    Some(help.to_owned()),
                ))
            };
            if text.starts_with('=') {
                return bad("=", "use `==`");
            }
            if text.starts_with('~') {
                return bad("~", "use `~=`, e.g. `~=1.4`");
            }
            if text.starts_with('^') {
                return bad("^", "write an explicit range, e.g. `>=1.4, <2`");
            }
            if text.starts_with('!') {
                return bad("!", "use `!=`");
            }
            (Operator::Equal, 0)
        }
    };
    let after = &text[op_len..];
    let operand_offset = offset + op_len + (after.len() - after.trim_start().len());
    let operand_text = after.trim_start();
    if operand_text.is_empty() {
        return Err(SpecifierError::new(
            format!("missing version after `{operator}`"),
            op_span(op_len),
            Some(format!("write e.g. `{operator}1.0`")),
        ));
    }
    if let Some(ws) = operand_text.find(char::is_whitespace) {
        let ws_len = operand_text[ws..].len() - operand_text[ws..].trim_start().len();
        return Err(SpecifierError::new(
            "expected `,` between clauses",
            operand_offset + ws..operand_offset + ws + ws_len,
            Some("separate clauses with `,`, e.g. `>=1.0, <2`".to_owned()),
        ));
    }
    let scanned = scan(operand_text, operand_offset)?;
    if let Some((_, span)) = &scanned.build {
        return Err(SpecifierError::new(
            "build metadata is not allowed in a specifier",
            span.clone(),
            Some("build metadata takes no part in version precedence; remove it".to_owned()),
        ));
    }
    let components = scanned.release.len();
    if let Some(star) = &scanned.wildcard {
        if !matches!(operator, Operator::Equal | Operator::NotEqual) {
            let dropped = operand_text.trim_end_matches('*').trim_end_matches('.');
            let help = if dropped.is_empty() {
                "leave the specifier empty to accept any version".to_owned()
            } else {
                format!("drop the wildcard: `{operator}{dropped}`")
            };
            return Err(SpecifierError::new(
                format!("a wildcard `*` only works with `==` and `!=`, not `{operator}`"),
                star.clone(),
                Some(help),
            ));
        }
        if components == 0 {
            return Err(SpecifierError::new(
                "a wildcard `*` needs a leading number",
                star.clone(),
                Some("write e.g. `==1.*`; an empty specifier accepts any version".to_owned()),
            ));
        }
        if components > 2 {
            let exact = operand_text.trim_end_matches('*').trim_end_matches('.');
            return Err(SpecifierError::new(
                "a wildcard `*` may follow at most two components",
                star.clone(),
                Some(format!("write `{operator}{exact}`")),
            ));
        }
    }
    if operator == Operator::Compatible && components < 2 {
        return Err(SpecifierError::new(
            "`~=` needs at least two components",
            scanned.release_span.clone(),
            Some(format!(
                "write e.g. `~={}.0`",
                scanned.release.first().copied().unwrap_or(0)
            )),
        ));
    }
    Ok(Clause {
        operator,
        operand: Operand {
            version: scanned.semver(),
            components,
            prefix: scanned.wildcard.is_some(),
            written: operand_text.to_owned(),
        },
    })
}

impl Specifier {
    /// Parse a specifier such as `>=1.0, <2`, `~=1.4`, `==2.1.*` or `1.2.0`.
    ///
    /// Empty (or all-whitespace) text accepts any version. Error spans are
    /// byte ranges inside `text`.
    pub fn parse(text: &str) -> Result<Self, SpecifierError> {
        if text.trim().is_empty() {
            return Ok(Self::any());
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        for (i, c) in text.char_indices() {
            if c == ',' {
                pieces.push(start..i);
                start = i + 1;
            }
        }
        pieces.push(start..text.len());
        let mut clauses = Vec::with_capacity(pieces.len());
        for (k, piece) in pieces.iter().enumerate() {
            let raw = &text[piece.clone()];
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                // Point at the comma after the empty clause, or before it
                // when the empty clause is the last one.
                let comma = if k + 1 < pieces.len() {
                    piece.end
                } else {
                    piece.start - 1
                };
                return Err(SpecifierError::new(
                    "empty clause",
                    comma..comma + 1,
                    Some("remove the extra `,`".to_owned()),
                ));
            }
            let offset = piece.start + (raw.len() - raw.trim_start().len());
            clauses.push(parse_clause(trimmed, offset)?);
        }
        Ok(Self::from_clauses(clauses))
    }

    /// The clauses sorted by their text, each kept once: of clauses that
    /// are equal as versions (`>=1` and `>=1.0`; see [`Clause::meaning`])
    /// the first in that order stays, as the reference's `SpecifierSet`
    /// keeps it.
    fn from_clauses(clauses: Vec<Clause>) -> Self {
        let mut keyed: Vec<(String, Clause)> =
            clauses.into_iter().map(|c| (c.to_string(), c)).collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        let mut seen = std::collections::HashSet::with_capacity(keyed.len());
        let first: Vec<bool> = keyed
            .iter()
            .map(|(_, c)| seen.insert(c.meaning()))
            .collect();
        let mut first = first.into_iter();
        keyed.retain(|_| first.next().unwrap_or(false));
        Self {
            clauses: keyed.into_iter().map(|(_, c)| c).collect(),
        }
    }

    /// The specifier that accepts every release.
    pub fn any() -> Self {
        Self {
            clauses: Arc::default(),
        }
    }

    /// The specifier `==<version>` accepting exactly `version` (its build
    /// metadata, which takes no part in precedence, is dropped).
    pub fn exact(version: &Version) -> Self {
        let written = version.as_str();
        let written = written.split('+').next().unwrap_or(written);
        let release = written.split('-').next().unwrap_or(written);
        Self {
            clauses: Arc::new([Clause {
                operator: Operator::Equal,
                operand: Operand {
                    version: without_build(version.semver()),
                    components: release.split('.').count(),
                    prefix: false,
                    written: written.to_owned(),
                },
            }]),
        }
    }

    /// Whether no clause restricts the version.
    pub fn is_any(&self) -> bool {
        self.clauses.is_empty()
    }

    /// The clauses, sorted by their rendering and without duplicates.
    pub fn clauses(&self) -> &[Clause] {
        &self.clauses
    }

    /// Whether `version` satisfies every clause.
    ///
    /// Build metadata of `version` is ignored. A pre-release is admitted
    /// only when some clause's operand is a pre-release of the same
    /// `major.minor.patch` (so the any specifier admits no pre-release).
    pub fn matches(&self, version: &semver::Version) -> bool {
        if !version.pre.is_empty()
            && !self.clauses.iter().any(|c| {
                !c.operand.version.pre.is_empty() && same_release(&c.operand.version, version)
            })
        {
            return false;
        }
        self.clauses.iter().all(|c| c.matches(version))
    }

    /// The contract generation this specifier pins, if its range provably stays in one major.
    ///
    /// `!=` clauses are ignored. With any `==` or `~=` clause, the major of
    /// the smallest such operand. Otherwise a lower bound (`>=`, `>`) and an
    /// upper bound (`<`, `<=`) are both required: the largest lower operand
    /// and the smallest upper operand must share a major, where a strict
    /// `<X.0.0` ceiling counts as major `X-1` (and `<0.0.0` pins nothing).
    pub fn pinned_major(&self) -> Option<u64> {
        let relevant = || {
            self.clauses
                .iter()
                .filter(|c| c.operator != Operator::NotEqual)
        };
        if let Some(smallest) = relevant()
            .filter(|c| matches!(c.operator, Operator::Equal | Operator::Compatible))
            .map(|c| &c.operand.version)
            .min()
        {
            return Some(smallest.major);
        }
        let floor = relevant()
            .filter(|c| matches!(c.operator, Operator::GreaterEqual | Operator::Greater))
            .map(|c| &c.operand.version)
            .max()?;
        // On equal operands the strict `<` is the tighter ceiling.
        let ceiling = relevant()
            .filter(|c| matches!(c.operator, Operator::Less | Operator::LessEqual))
            .min_by(|a, b| {
                a.operand.version.cmp(&b.operand.version).then_with(|| {
                    (a.operator != Operator::Less).cmp(&(b.operator != Operator::Less))
                })
            })?;
        let c = &ceiling.operand.version;
        let ceiling_major = if ceiling.operator == Operator::Less
            && c.minor == 0
            && c.patch == 0
            && c.pre.is_empty()
        {
            c.major.checked_sub(1)?
        } else {
            c.major
        };
        (floor.major == ceiling_major).then_some(ceiling_major)
    }
}

impl FromStr for Specifier {
    type Err = SpecifierError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// Renders the normalized clauses sorted as strings and joined by `,`; empty for any.
impl fmt::Display for Specifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, clause) in self.clauses.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{clause}")?;
        }
        Ok(())
    }
}

/// Render a requirement line: `<capability> <spec>`, `<capability> *` when
/// the specifier accepts any version, followed by ` (optional)` when
/// `optional` (e.g. `database <2,>=1`, `vector * (optional)`).
pub fn render_requirement(capability: &str, spec: &Specifier, optional: bool) -> String {
    let mut out = if spec.is_any() {
        format!("{capability} *")
    } else {
        format!("{capability} {spec}")
    };
    if optional {
        out.push_str(" (optional)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec(text: &str) -> Specifier {
        Specifier::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    fn err(text: &str) -> SpecifierError {
        Specifier::parse(text).expect_err(text)
    }

    fn sv(text: &str) -> semver::Version {
        semver::Version::parse(text).unwrap()
    }

    fn admits(spec_text: &str, version: &str) -> bool {
        spec(spec_text).matches(&sv(version))
    }

    #[test]
    fn empty_is_any() {
        for text in ["", "   ", "\t\n"] {
            let s = spec(text);
            assert!(s.is_any());
            assert_eq!(s.to_string(), "");
            assert_eq!(s.pinned_major(), None);
            assert!(s.clauses().is_empty());
        }
        assert_eq!(Specifier::any(), spec(""));
        assert_eq!(Specifier::default(), Specifier::any());
        assert!(Specifier::any().matches(&sv("0.0.0")));
        assert!(Specifier::any().matches(&sv("99.1.2+build")));
        assert!(!Specifier::any().matches(&sv("1.0.0-rc.1")));
    }

    #[test]
    fn renders_like_packaging() {
        let cases = [
            (">=1,<2", "<2,>=1"),
            (">= 1.0, < 2", "<2,>=1.0"),
            ("~=2.1", "~=2.1"),
            ("1.2", "==1.2"),
            ("== 1.2", "==1.2"),
            ("~=1.1", "~=1.1"),
            ("  !=1.5 , >=1 ", "!=1.5,>=1"),
            ("==2.1.*", "==2.1.*"),
            ("<=3.0.0-rc.1,>0.9", "<=3.0.0-rc.1,>0.9"),
            (">=1,>=1", ">=1"),
            (">=1, >= 1", ">=1"),
            ("1.2.0,>=1,!=1.3", "!=1.3,==1.2.0,>=1"),
            // Clauses equal as versions are one clause, the first by text
            // kept (packaging 26.4, which the reference requires at >=26.3).
            ("==1,==1.0", "==1"),
            (">=1.0,>=1", ">=1"),
            (">=1.0.0,>=1.0,<2", "<2,>=1.0"),
            ("~=1.0,~=1.0.0", "~=1.0,~=1.0.0"),
            ("==1.*,==1.0.*,==1", "==1,==1.*,==1.0.*"),
            (">=1.0.0-rc.1,>=1.0,>=1", ">=1,>=1.0.0-rc.1"),
            ("!=1.5,!=1.5.0,<2.0,<2", "!=1.5,<2"),
            (">=2.0.0-rc.1,>=2.0.0-rc.1,<3", "<3,>=2.0.0-rc.1"),
        ];
        for (text, rendered) in cases {
            assert_eq!(spec(text).to_string(), rendered, "{text}");
        }
    }

    #[test]
    fn clauses_are_exposed() {
        let s = spec(">= 1.0, <2, ==1.2.*");
        let shown: Vec<(Operator, &str, usize, bool)> = s
            .clauses()
            .iter()
            .map(|c| {
                let o = c.operand();
                (c.operator(), o.as_str(), o.components(), o.is_prefix())
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                (Operator::Less, "2", 1, false),
                (Operator::Equal, "1.2.*", 2, true),
                (Operator::GreaterEqual, "1.0", 2, false),
            ]
        );
        assert_eq!(s.clauses()[1].operand().version(), &sv("1.2.0"));
        assert_eq!(s.clauses()[0].to_string(), "<2");
        assert_eq!(Operator::Compatible.to_string(), "~=");
        assert_eq!(spec("1.2").clauses()[0].operator(), Operator::Equal);
    }

    #[test]
    fn exact_specifier() {
        let v = Version::parse("1.2.3").unwrap();
        let s = Specifier::exact(&v);
        assert_eq!(s.to_string(), "==1.2.3");
        assert_eq!(s, spec("==1.2.3"));
        assert!(s.matches(&sv("1.2.3")));
        assert!(!s.matches(&sv("1.2.4")));
        assert_eq!(s.pinned_major(), Some(1));
        let s = Specifier::exact(&Version::parse("2.0.0-rc.1+b.7").unwrap());
        assert_eq!(s, spec("==2.0.0-rc.1"));
        assert!(s.matches(&sv("2.0.0-rc.1+other")));
        assert_eq!(
            Specifier::exact(&Version::parse("1.2").unwrap()),
            spec("1.2")
        );
    }

    #[test]
    fn renders_requirements() {
        assert_eq!(
            render_requirement("database", &spec(">=1,<2"), false),
            "database <2,>=1"
        );
        assert_eq!(
            render_requirement("vector", &Specifier::any(), true),
            "vector * (optional)"
        );
        assert_eq!(
            render_requirement("vector", &Specifier::any(), false),
            "vector *"
        );
        assert_eq!(
            render_requirement("cache", &spec("~=1.4"), true),
            "cache ~=1.4 (optional)"
        );
    }

    #[test]
    fn matches_basic_operators() {
        assert!(admits("==1.2", "1.2.0"));
        assert!(!admits("==1.2", "1.2.1"));
        assert!(admits("1.2", "1.2.0+build"));
        assert!(!admits("!=1.2", "1.2.0"));
        assert!(admits("!=1.2", "1.2.1"));
        assert!(admits("<=1.2", "1.2.0"));
        assert!(!admits("<=1.2", "1.2.1"));
        assert!(admits(">1.2", "1.2.1"));
        assert!(!admits(">1.2", "1.2.0"));
        assert!(!admits(">1.2", "1.2.0+build"));
        assert!(admits(">=1,<2", "1.0.0"));
        assert!(admits(">=1,<2", "1.99.99"));
        assert!(!admits(">=1,<2", "2.0.0"));
        assert!(!admits(">=1,<2", "0.9.9"));
        assert!(admits(">= 1.0, < 2", "1.5.0"));
    }

    #[test]
    fn matches_prefixes() {
        assert!(admits("==2.1.*", "2.1.0"));
        assert!(admits("==2.1.*", "2.1.9"));
        assert!(!admits("==2.1.*", "2.2.0"));
        assert!(admits("==2.*", "2.9.1"));
        assert!(!admits("==2.*", "3.0.0"));
        assert!(!admits("!=2.*", "2.3.4"));
        assert!(admits("!=2.*", "3.0.0"));
        assert!(!admits("!=2.1.*", "2.1.5"));
        assert!(admits("!=2.1.*", "2.2.0"));
        assert!(!admits("==2.1.*", "2.1.0-rc.1"));
    }

    #[test]
    fn matches_compatible_release() {
        assert!(admits("~=1.4", "1.4.0"));
        assert!(admits("~=1.4", "1.9.0"));
        assert!(!admits("~=1.4", "1.3.9"));
        assert!(!admits("~=1.4", "2.0.0"));
        assert!(admits("~=1.4.2", "1.4.9"));
        assert!(!admits("~=1.4.2", "1.4.1"));
        assert!(!admits("~=1.4.2", "1.5.0"));
        assert!(admits("~=1.4.0-rc.1", "1.4.0-rc.2"));
        assert!(!admits("~=1.4.0-rc.1", "1.5.0-rc.1"));
    }

    #[test]
    fn pre_release_gate() {
        assert!(!admits(">=1,<2", "1.5.0-rc.1"));
        assert!(admits(">=1.5.0-rc.1", "1.5.0-rc.2"));
        assert!(admits(">=1.5.0-rc.1", "1.5.0-rc.1"));
        assert!(!admits(">=1.5.0-rc.2", "1.5.0-rc.1"));
        assert!(admits(">=1.5.0-rc.1", "1.6.0"));
        assert!(!admits(">=1.5.0-rc.1", "1.6.0-beta"));
        assert!(admits(">=1.5.0-rc.1", "1.5.0"));
        assert!(admits("==1.5.0-rc.1", "1.5.0-rc.1+b"));
        // `<V` never admits pre-releases of V, even when the gate is open.
        assert!(!admits("<2", "2.0.0-rc.1"));
        assert!(!admits(">=2.0.0-rc.1,<2", "2.0.0-rc.2"));
        assert!(!admits(">=2.0.0-rc.1,<2.0.0", "2.0.0-rc.2"));
        // ... unless V itself is a pre-release.
        assert!(admits("<2.0.0-rc.2", "2.0.0-rc.1"));
        assert!(admits("<=2,>=2.0.0-rc.1", "2.0.0-rc.5"));
    }

    #[test]
    fn pinning_table() {
        let cases: [(&str, Option<u64>); 22] = [
            (">=1,<2", Some(1)),
            (">=0,<1", Some(0)),
            (">=2,<=2", Some(2)),
            ("==2.1.*", Some(2)),
            ("~=1.4", Some(1)),
            ("1.2.0", Some(1)),
            (">=1", None),
            ("<2", None),
            ("", None),
            (">1.9,<3", None),
            (">=1,<=2", None),
            (">=1.4,<2.0.1", None),
            (">=1.4,<2.0", Some(1)),
            (">=1.4,<2.0.0", Some(1)),
            (">=1.4,<2.1", None),
            (">=1.4,<2.0.0-rc.1", None),
            (">=0,<0", None),
            ("==3.*,>=1,<2", Some(3)),
            ("==2.0.0,~=1.4", Some(1)),
            ("!=1.5,>=1,<2", Some(1)),
            ("!=1.5", None),
            (">=1,>=2,<3,<4", Some(2)),
        ];
        for (text, pinned) in cases {
            assert_eq!(spec(text).pinned_major(), pinned, "{text}");
        }
        // Equal ceilings: the strict `<` is the tighter one.
        assert_eq!(spec(">=1,<2,<=2").pinned_major(), Some(1));
        assert_eq!(spec(">=2,<2,<=2").pinned_major(), None);
    }

    #[test]
    fn rejects_empty_clauses() {
        let e = err(">=1,,<2");
        assert_eq!(e.message, "empty clause");
        assert_eq!(e.span, 4..5);
        assert_eq!(e.help.as_deref(), Some("remove the extra `,`"));
        assert_eq!(err(">=1,").span, 3..4);
        assert_eq!(err(">=1, ").span, 3..4);
        assert_eq!(err(",>=1").span, 0..1);
        assert_eq!(err(",").span, 0..1);
        assert_eq!(err(">=1, ,<2").span, 5..6);
    }

    #[test]
    fn rejects_bad_operators() {
        let e = err("===1.0");
        assert_eq!(e.message, "arbitrary equality `===` is not supported");
        assert_eq!(e.span, 0..3);
        assert_eq!(e.help.as_deref(), Some("use `==`"));
        let e = err(">=1, =1.0");
        assert_eq!(e.message, "`=` is not an operator");
        assert_eq!(e.span, 5..6);
        assert_eq!(e.help.as_deref(), Some("use `==`"));
        assert_eq!(err("~1.2").help.as_deref(), Some("use `~=`, e.g. `~=1.4`"));
        assert_eq!(err("^1.2").message, "`^` is not an operator");
        assert_eq!(err("!1.2").help.as_deref(), Some("use `!=`"));
        let e = err(">=");
        assert_eq!(e.message, "missing version after `>=`");
        assert_eq!(e.span, 0..2);
        let e = err(">=1.0 <2");
        assert_eq!(e.message, "expected `,` between clauses");
        assert_eq!(e.span, 5..6);
    }

    #[test]
    fn rejects_misplaced_wildcards() {
        let e = err(">=1.*");
        assert_eq!(
            e.message,
            "a wildcard `*` only works with `==` and `!=`, not `>=`"
        );
        assert_eq!(e.span, 4..5);
        assert_eq!(e.help.as_deref(), Some("drop the wildcard: `>=1`"));
        assert!(err("~=1.2.*").message.contains("`~=`"));
        assert!(err("<1.*").message.contains("`<`"));
        assert_eq!(err("==*").message, "a wildcard `*` needs a leading number");
        let e = err("==1.2.3.*");
        assert_eq!(
            e.message,
            "a wildcard `*` may follow at most two components"
        );
        assert_eq!(e.span, 8..9);
        assert_eq!(e.help.as_deref(), Some("write `==1.2.3`"));
        assert_eq!(
            err("==1.*.2").message,
            "a wildcard `*` must be the last component"
        );
        // A bare wildcard operand means `==`.
        assert_eq!(spec("1.*").to_string(), "==1.*");
    }

    #[test]
    fn rejects_compatible_with_one_component() {
        let e = err("~=1");
        assert_eq!(e.message, "`~=` needs at least two components");
        assert_eq!(e.span, 2..3);
        assert_eq!(e.help.as_deref(), Some("write e.g. `~=1.0`"));
        assert_eq!(err(">=0, ~= 3").span, 8..9);
    }

    #[test]
    fn rejects_build_metadata() {
        let e = err(">=1.0.0+local");
        assert_eq!(e.message, "build metadata is not allowed in a specifier");
        assert_eq!(e.span, 7..13);
        assert_eq!(
            e.help.as_deref(),
            Some("build metadata takes no part in version precedence; remove it")
        );
        assert_eq!(err("==1.2+local").span, 5..11);
    }

    #[test]
    fn operand_errors_reuse_version_checks() {
        // Each operand error equals the version error, shifted to the operand.
        for (text, operand_at, operand) in [
            (">=1.0rc1", 2, "1.0rc1"),
            (">=1, < 2.0.post1", 7, "2.0.post1"),
            ("==1!2.0", 2, "1!2.0"),
            ("  ~= 1.0.dev1", 5, "1.0.dev1"),
            (">=v1.0", 2, "v1.0"),
            ("<01.0", 1, "01.0"),
            ("1.2.3.4", 0, "1.2.3.4"),
            (">=1.2-rc.1", 2, "1.2-rc.1"),
            ("!=1.0a1", 2, "1.0a1"),
            (">=1.2.3-rc.01", 2, "1.2.3-rc.01"),
        ] {
            let e = err(text);
            let v = Version::parse(operand).expect_err(operand);
            assert_eq!(e.message, v.message, "{text}");
            assert_eq!(e.help, v.help, "{text}");
            assert_eq!(
                e.span,
                v.span.start + operand_at..v.span.end + operand_at,
                "{text}"
            );
        }
        assert_eq!(err(">=1.0rc1").help.as_deref(), Some("write `1.0.0-rc.1`"));
        assert_eq!(err(">=1.0rc1").span, 5..8);
    }

    // ---- property tests -------------------------------------------------

    const OPS: [&str; 7] = ["==", "!=", ">=", "<=", ">", "<", "~="];
    const PRES: [&str; 5] = ["alpha", "alpha.1", "beta", "rc.1", "rc.2"];

    /// A valid clause text with random inner whitespace.
    fn clause_text() -> impl Strategy<Value = String> {
        (
            0usize..8,
            proptest::collection::vec(0u64..4, 1..=3),
            proptest::option::of(0usize..PRES.len()),
            any::<bool>(),
            "[ ]{0,2}",
        )
            .prop_map(|(op, mut nums, pre, wildcard, ws)| {
                let op = if op == 7 { "" } else { OPS[op] };
                if op == "~=" && nums.len() < 2 {
                    nums.push(0);
                }
                let mut operand: Vec<String> = nums.iter().map(u64::to_string).collect();
                let mut text = operand.join(".");
                if wildcard && matches!(op, "==" | "!=") && nums.len() <= 2 {
                    operand.push("*".into());
                    text = operand.join(".");
                } else if let Some(p) = pre
                    && nums.len() == 3
                {
                    text = format!("{text}-{}", PRES[p]);
                }
                format!("{op}{ws}{text}")
            })
    }

    fn spec_text() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec(clause_text(), 0..4)
    }

    fn sample_version() -> impl Strategy<Value = semver::Version> {
        (
            0u64..5,
            0u64..5,
            0u64..5,
            proptest::option::of(0usize..PRES.len()),
            any::<bool>(),
        )
            .prop_map(|(major, minor, patch, pre, build)| {
                let mut v = semver::Version::new(major, minor, patch);
                if let Some(p) = pre {
                    v.pre = semver::Prerelease::new(PRES[p]).unwrap();
                }
                if build {
                    v.build = semver::BuildMetadata::new("b.1").unwrap();
                }
                v
            })
    }

    fn floor_of(major: u64, minor: u64, patch: u64) -> semver::Version {
        semver::Version {
            major,
            minor,
            patch,
            pre: semver::Prerelease::new("0").unwrap(),
            build: semver::BuildMetadata::EMPTY,
        }
    }

    /// Naive oracle: expand each clause into comparisons over plain semver
    /// ordering, using `X.Y.Z-0` (the smallest version of a release) to
    /// express prefixes and the exclusion of pre-releases below `<V`.
    fn oracle(spec: &Specifier, version: &semver::Version) -> bool {
        let mut v = version.clone();
        v.build = semver::BuildMetadata::EMPTY;
        let gate = v.pre.is_empty()
            || spec.clauses().iter().any(|c| {
                let o = c.operand().version();
                !o.pre.is_empty() && (o.major, o.minor, o.patch) == (v.major, v.minor, v.patch)
            });
        let lt = |o: &semver::Version| {
            if o.pre.is_empty() {
                v < floor_of(o.major, o.minor, o.patch)
            } else {
                v < *o
            }
        };
        let in_prefix = |o: &semver::Version, components: usize| {
            let (lo, hi) = if components == 1 {
                (floor_of(o.major, 0, 0), floor_of(o.major + 1, 0, 0))
            } else {
                (
                    floor_of(o.major, o.minor, 0),
                    floor_of(o.major, o.minor + 1, 0),
                )
            };
            v >= lo && v < hi
        };
        gate && spec.clauses().iter().all(|c| {
            let o = c.operand().version();
            let n = c.operand().components();
            match c.operator() {
                Operator::Equal if c.operand().is_prefix() => in_prefix(o, n),
                Operator::NotEqual if c.operand().is_prefix() => !in_prefix(o, n),
                Operator::Equal => v == *o,
                Operator::NotEqual => v != *o,
                Operator::GreaterEqual => v >= *o,
                Operator::Greater => v > *o,
                Operator::LessEqual => v <= *o,
                Operator::Less => lt(o),
                Operator::Compatible => {
                    let upper = if n >= 3 {
                        semver::Version::new(o.major, o.minor + 1, 0)
                    } else {
                        semver::Version::new(o.major + 1, 0, 0)
                    };
                    v >= *o && lt(&upper)
                }
            }
        })
    }

    proptest! {
        #[test]
        fn render_parse_render_is_a_fixpoint(clauses in spec_text(), sep in "[ ]{0,2},[ ]{0,2}") {
            let text = clauses.join(&sep);
            let s = spec(&text);
            let rendered = s.to_string();
            let again = spec(&rendered);
            prop_assert_eq!(again.to_string(), rendered.clone());
            prop_assert_eq!(&again, &s);
            prop_assert!(!rendered.contains(' '));
        }

        #[test]
        fn pinned_major_bounds_every_match(
            clauses in spec_text(),
            versions in proptest::collection::vec(sample_version(), 1..40),
        ) {
            let s = spec(&clauses.join(","));
            if let Some(m) = s.pinned_major() {
                for v in &versions {
                    if s.matches(v) {
                        prop_assert_eq!(v.major, m, "{} admits {}", s, v);
                    }
                }
                // Also probe the edges of every operand's neighbourhood.
                for c in s.clauses() {
                    let o = c.operand().version();
                    for major in o.major.saturating_sub(1)..=o.major + 1 {
                        for probe in [semver::Version::new(major, 0, 0), semver::Version::new(major, 99, 99)] {
                            if s.matches(&probe) {
                                prop_assert_eq!(probe.major, m, "{} admits {}", s, probe);
                            }
                        }
                    }
                }
            }
        }

        #[test]
        fn compatible_equals_its_expansion(
            x in 0u64..5, y in 0u64..5, z in proptest::option::of(0u64..5),
            v in sample_version(),
        ) {
            let (compat, expanded) = match z {
                None => (format!("~={x}.{y}"), format!(">={x}.{y},<{}", x + 1)),
                Some(z) => (format!("~={x}.{y}.{z}"), format!(">={x}.{y}.{z},<{x}.{}", y + 1)),
            };
            let (a, b) = (spec(&compat), spec(&expanded));
            prop_assert_eq!(a.matches(&v), b.matches(&v), "{} vs {} on {}", compat, expanded, v);
            prop_assert_eq!(a.pinned_major(), Some(x));
        }

        #[test]
        fn matches_agrees_with_oracle(clauses in spec_text(), v in sample_version()) {
            let s = spec(&clauses.join(","));
            prop_assert_eq!(s.matches(&v), oracle(&s, &v), "{} on {}", s, v);
            // Probe each operand's neighbourhood, pre-releases included, so
            // the pre-release gate and `<V` exclusions are exercised.
            for c in s.clauses() {
                let o = c.operand().version();
                for (major, minor, patch) in [
                    (o.major, o.minor, o.patch),
                    (o.major, o.minor, o.patch + 1),
                    (o.major, o.minor + 1, 0),
                    (o.major + 1, 0, 0),
                ] {
                    let mut probe = semver::Version::new(major, minor, patch);
                    prop_assert_eq!(s.matches(&probe), oracle(&s, &probe), "{} on {}", s, probe);
                    for pre in PRES {
                        probe.pre = semver::Prerelease::new(pre).unwrap();
                        prop_assert_eq!(s.matches(&probe), oracle(&s, &probe), "{} on {}", s, probe);
                    }
                }
            }
        }

        #[test]
        fn clause_order_is_irrelevant(
            clauses in spec_text(),
            seed in any::<u64>(),
            v in sample_version(),
        ) {
            let s = spec(&clauses.join(","));
            let mut shuffled = clauses.clone();
            // Deterministic Fisher-Yates driven by `seed`.
            let mut state = seed;
            for i in (1..shuffled.len()).rev() {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let j = (state >> 33) as usize % (i + 1);
                shuffled.swap(i, j);
            }
            let t = spec(&shuffled.join(" , "));
            prop_assert_eq!(t.to_string(), s.to_string());
            prop_assert_eq!(t.pinned_major(), s.pinned_major());
            prop_assert_eq!(t.matches(&v), s.matches(&v));
            prop_assert_eq!(&t, &s);
        }

        #[test]
        fn error_spans_stay_inside_input(text in "[ 0-9a-z.,+*!=<>~-]{0,14}") {
            if let Err(e) = Specifier::parse(&text) {
                prop_assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{:?} {:?}", text, e);
            }
        }
    }
}
