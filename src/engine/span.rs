//! Where a value came from: a source file and a byte range in it.
//!
//! The engine keeps origins as plain numbers so that errors found long after
//! loading (during resolution, snapshotting or publication) can still point
//! into the user's TOML. Turning a [`SourceId`] back into a file name and text
//! is the edge's job (`load::SourceMap`).

use std::fmt;

/// Identifies one loaded source text (a composition file or an include).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceId(pub u32);

/// A half-open byte range `start..end` in a source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    /// First byte of the range.
    pub start: u32,
    /// One past the last byte of the range.
    pub end: u32,
}

impl Span {
    /// A span from a `Range<usize>`, saturating at `u32::MAX`.
    pub fn from_range(range: std::ops::Range<usize>) -> Self {
        let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        Self {
            start: clamp(range.start),
            end: clamp(range.end.max(range.start)),
        }
    }

    /// The span as a `Range<usize>`.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// Length in bytes.
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// Whether the span covers no bytes.
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
}

/// A span inside a particular source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    /// The source text the span points into.
    pub source: SourceId,
    /// The byte range in that source.
    pub span: Span,
}

impl Origin {
    /// An origin in `source` covering `span`.
    pub fn new(source: SourceId, span: Span) -> Self {
        Self { source, span }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "source {}@{}..{}",
            self.source.0, self.span.start, self.span.end
        )
    }
}

/// A value together with where it was written, if it was written anywhere.
///
/// Equality, ordering and hashing look at the value only: two compositions
/// that say the same thing in different places are the same composition.
#[derive(Clone, Debug)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Where the value was written; `None` for values built in code.
    pub origin: Option<Origin>,
}

impl<T> Located<T> {
    /// A value with an origin.
    pub fn new(value: T, origin: Option<Origin>) -> Self {
        Self { value, origin }
    }

    /// A value built in code, with no origin.
    pub fn bare(value: T) -> Self {
        Self {
            value,
            origin: None,
        }
    }
}

impl<T: PartialEq> PartialEq for Located<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for Located<T> {}

impl<T: PartialOrd> PartialOrd for Located<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.value.partial_cmp(&other.value)
    }
}

impl<T: Ord> Ord for Located<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.value.cmp(&other.value)
    }
}

impl<T> std::ops::Deref for Located<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}
