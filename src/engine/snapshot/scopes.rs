//! The scope-tree fingerprint of a snapshot (`scopes` / `semantic_scopes`).
//!
//! Both fingerprints have the same shape; `semantic_scopes` names providers by
//! entry id, `scopes` by runtime instance id. Scope metadata is never part of
//! either.

use std::collections::BTreeMap;
use std::sync::Arc;

use std::fmt::{self, Write};

use crate::engine::canonical::{Canon, needs_escape, write_json_string};
use crate::engine::recent::Recent;

/// One requirement's selection row.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectionRow {
    /// Entry id, or scope path for scope requirements.
    pub consumer: Arc<str>,
    /// Rendered requirement (`database <2,>=1`).
    pub requirement: Arc<str>,
    /// Status spelling (`resolved`, …).
    pub status: Arc<str>,
    /// Selected provider entry id when resolved.
    pub provider: Option<Arc<str>>,
    /// Scope of the selected provider.
    pub provider_scope: Option<Arc<str>>,
}

/// One scope of the fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeRow {
    /// Path.
    pub path: Arc<str>,
    /// Parent path.
    pub parent: Option<Arc<str>>,
    /// Sorted child paths.
    pub children: Names,
    /// Effective capability view.
    pub capabilities: Option<Names>,
    /// The scope's own tool view.
    pub tools: Option<Names>,
    /// Sorted ids of entries declared here (pending included).
    pub entries: Names,
    /// Capability → sorted local provider ids (entry ids or instance ids);
    /// each list shared, so a derived snapshot copies pointers.
    pub providers: BTreeMap<Arc<str>, ProviderIds>,
    /// Sorted names of visible tools.
    pub visible_tools: Names,
    /// Selection rows sorted by (consumer, capability). Shared: the semantic
    /// and physical trees of one snapshot hold the same rows.
    pub selections: Arc<[SelectionRow]>,
}

/// A list of names in a scope row. Shared: the semantic and physical trees
/// of one snapshot differ only in providers, so they hold the same lists.
pub type Names = Arc<[Arc<str>]>;

/// The sorted provider ids of one capability in a scope row (shared: a
/// derived snapshot copies the pointer).
pub type ProviderIds = Names;

/// The whole fingerprint: `{root, scopes}` in pre-order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopesFingerprint {
    /// Always `/`.
    pub root: String,
    /// Scopes in pre-order, children in sorted path order.
    pub scopes: Vec<ScopeRow>,
}

fn strs(items: &[Arc<str>]) -> Canon {
    Canon::List(items.iter().map(|s| Canon::from(&**s)).collect())
}

fn opt_str(s: &Option<Arc<str>>) -> Canon {
    s.as_ref().map_or(Canon::Null, |s| Canon::from(&**s))
}

impl SelectionRow {
    /// Canonical form.
    pub fn to_canon(&self) -> Canon {
        Canon::map([
            ("consumer", Canon::from(&*self.consumer)),
            ("requirement", Canon::from(&*self.requirement)),
            ("status", Canon::from(&*self.status)),
            ("provider", opt_str(&self.provider)),
            ("provider_scope", opt_str(&self.provider_scope)),
        ])
    }
}

impl ScopeRow {
    /// Canonical form.
    pub fn to_canon(&self) -> Canon {
        Canon::map([
            ("path", Canon::from(&*self.path)),
            ("parent", opt_str(&self.parent)),
            ("children", strs(&self.children)),
            (
                "capabilities",
                self.capabilities.as_deref().map_or(Canon::Null, strs),
            ),
            ("tools", self.tools.as_deref().map_or(Canon::Null, strs)),
            ("entries", strs(&self.entries)),
            (
                "providers",
                Canon::Map(
                    self.providers
                        .iter()
                        .map(|(k, v)| (k.to_string(), strs(v)))
                        .collect(),
                ),
            ),
            ("visible_tools", strs(&self.visible_tools)),
            (
                "selections",
                Canon::List(self.selections.iter().map(SelectionRow::to_canon).collect()),
            ),
        ])
    }
}

impl ScopesFingerprint {
    /// The tree of `scopes` (in pre-order), rooted at `/`.
    pub fn new(scopes: Vec<ScopeRow>) -> Self {
        Self {
            root: "/".into(),
            scopes,
        }
    }

    /// Canonical form.
    pub fn to_canon(&self) -> Canon {
        Canon::map([
            ("root", Canon::Str(self.root.clone())),
            (
                "scopes",
                Canon::List(self.scopes.iter().map(ScopeRow::to_canon).collect()),
            ),
        ])
    }

    /// The same tree with provider maps emptied: what a legacy (format 0)
    /// snapshot, which only carried instance ids, can say semantically.
    pub fn without_providers(&self) -> Self {
        let mut out = self.clone();
        for s in &mut out.scopes {
            s.providers.clear();
        }
        out
    }

    /// How much there is to write: scopes, entries and selection rows (what
    /// decides whether hashing the tree is worth a second thread).
    pub fn work(&self) -> usize {
        self.scopes
            .iter()
            .map(|s| 1 + s.entries.len() + s.selections.len())
            .sum()
    }

    /// A capacity for the canonical text that usually holds it whole
    /// (about 110–150 bytes per scope, entry and selection row), so a large
    /// tree is not copied over and over while it grows.
    fn text_capacity(&self) -> usize {
        self.work().saturating_mul(128).saturating_add(64)
    }

    /// The scope at `path`.
    pub fn scope(&self, path: &str) -> Option<&ScopeRow> {
        self.scopes.iter().find(|s| &*s.path == path)
    }
}

// Direct canonical writers. Snapshots of large compositions are dominated by
// these two trees, so they are written straight into the hasher or a buffer
// instead of through a `Canon` tree. Keys are written in sorted order by
// hand; `writers_agree_with_the_canon_path` in the tests checks every one
// against `to_canon`.

fn w_strs<W: Write>(items: &[Arc<str>], out: &mut W) -> fmt::Result {
    out.write_char('[')?;
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.write_char(',')?;
        }
        write_json_string(s, out)?;
    }
    out.write_char(']')
}

fn w_opt<W: Write>(s: &Option<Arc<str>>, out: &mut W) -> fmt::Result {
    match s {
        Some(s) => write_json_string(s, out),
        None => out.write_str("null"),
    }
}

impl SelectionRow {
    /// Write the canonical JSON of this row.
    pub fn write_canonical<W: Write>(&self, out: &mut W) -> fmt::Result {
        // The usual row (resolved, nothing to escape) in eleven writes, each
        // value's quotes joined to the text around it: rows are most of a
        // large snapshot's text.
        if let (Some(provider), Some(scope)) = (&self.provider, &self.provider_scope) {
            let values = [
                &*self.consumer,
                provider,
                scope,
                &self.requirement,
                &self.status,
            ];
            if !values.iter().any(|v| needs_escape(v.as_bytes())) {
                let [consumer, provider, scope, requirement, status] = values;
                out.write_str("{\"consumer\":\"")?;
                out.write_str(consumer)?;
                out.write_str("\",\"provider\":\"")?;
                out.write_str(provider)?;
                out.write_str("\",\"provider_scope\":\"")?;
                out.write_str(scope)?;
                out.write_str("\",\"requirement\":\"")?;
                out.write_str(requirement)?;
                out.write_str("\",\"status\":\"")?;
                out.write_str(status)?;
                return out.write_str("\"}");
            }
        }
        out.write_str("{\"consumer\":")?;
        write_json_string(&self.consumer, out)?;
        out.write_str(",\"provider\":")?;
        w_opt(&self.provider, out)?;
        out.write_str(",\"provider_scope\":")?;
        w_opt(&self.provider_scope, out)?;
        out.write_str(",\"requirement\":")?;
        write_json_string(&self.requirement, out)?;
        out.write_str(",\"status\":")?;
        write_json_string(&self.status, out)?;
        out.write_char('}')
    }
}

impl ScopeRow {
    /// Write the canonical JSON of this scope.
    pub fn write_canonical<W: Write>(&self, out: &mut W) -> fmt::Result {
        self.write_head(out)?;
        self.write_providers(out)?;
        self.write_tail(out)
    }

    /// The canonical JSON up to the `providers` value.
    fn write_head<W: Write>(&self, out: &mut W) -> fmt::Result {
        out.write_str("{\"capabilities\":")?;
        match &self.capabilities {
            Some(c) => w_strs(c, out)?,
            None => out.write_str("null")?,
        }
        out.write_str(",\"children\":")?;
        w_strs(&self.children, out)?;
        out.write_str(",\"entries\":")?;
        w_strs(&self.entries, out)?;
        out.write_str(",\"parent\":")?;
        w_opt(&self.parent, out)?;
        out.write_str(",\"path\":")?;
        write_json_string(&self.path, out)?;
        out.write_str(",\"providers\":")
    }

    /// The canonical JSON of the `providers` value.
    fn write_providers<W: Write>(&self, out: &mut W) -> fmt::Result {
        out.write_char('{')?;
        for (i, (cap, ids)) in self.providers.iter().enumerate() {
            if i > 0 {
                out.write_char(',')?;
            }
            write_json_string(cap, out)?;
            out.write_char(':')?;
            w_strs(ids, out)?;
        }
        out.write_char('}')
    }

    /// The canonical JSON after the `providers` value.
    fn write_tail<W: Write>(&self, out: &mut W) -> fmt::Result {
        self.write_tail_with(out, |out, row| row.write_canonical(out))
    }

    /// [`Self::write_tail`], each selection row written by `write_row`
    /// (which may also start a new piece after it).
    fn write_tail_with<W: Write>(
        &self,
        out: &mut W,
        mut write_row: impl FnMut(&mut W, &SelectionRow) -> fmt::Result,
    ) -> fmt::Result {
        out.write_str(",\"selections\":[")?;
        for (i, row) in self.selections.iter().enumerate() {
            if i > 0 {
                out.write_char(',')?;
            }
            write_row(out, row)?;
        }
        out.write_str("],\"tools\":")?;
        match &self.tools {
            Some(t) => w_strs(t, out)?,
            None => out.write_str("null")?,
        }
        out.write_str(",\"visible_tools\":")?;
        w_strs(&self.visible_tools, out)?;
        out.write_char('}')
    }

    /// Whether this row equals `other` in everything but `providers`.
    /// Shared values compare by pointer first (`Arc`'s own `==` does that
    /// only for sized types, not for `str` or slices).
    fn same_but_providers(&self, other: &ScopeRow) -> bool {
        fn same<T: ?Sized + PartialEq>(a: &Arc<T>, b: &Arc<T>) -> bool {
            Arc::ptr_eq(a, b) || a == b
        }
        fn same_list(a: &Names, b: &Names) -> bool {
            Arc::ptr_eq(a, b)
                || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| same(x, y)))
        }
        fn same_opt_list(a: &Option<Names>, b: &Option<Names>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => same_list(a, b),
                (a, b) => a.is_none() && b.is_none(),
            }
        }
        same(&self.path, &other.path)
            && match (&self.parent, &other.parent) {
                (Some(a), Some(b)) => same(a, b),
                (a, b) => a.is_none() && b.is_none(),
            }
            && same_list(&self.children, &other.children)
            && same_opt_list(&self.capabilities, &other.capabilities)
            && same_opt_list(&self.tools, &other.tools)
            && same_list(&self.entries, &other.entries)
            && same_list(&self.visible_tools, &other.visible_tools)
            && same(&self.selections, &other.selections)
    }
}

/// A piece of a fingerprint's canonical text ([`PieceStream`]). Pieces
/// are cut only after a selection row or a scope, so every `providers`
/// value lies whole in one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextPiece {
    /// The text.
    pub text: String,
    /// Where the `providers` values in this piece sit, in scope order.
    pub providers: Vec<(usize, usize)>,
    /// When the stream was given a second tree, the same but for providers
    /// (a snapshot's physical tree): that tree's `providers` values for the
    /// same scopes, one after another…
    pub other: String,
    /// …each ending here in `other`.
    pub other_ends: Vec<usize>,
}

impl TextPiece {
    /// Write this piece of the second tree's text: the piece with the
    /// second tree's `providers` values in place of the first's.
    pub fn write_other<W: Write>(&self, out: &mut W) -> fmt::Result {
        let (mut at, mut from) = (0, 0);
        for (&(start, end), &to) in self.providers.iter().zip(&self.other_ends) {
            out.write_str(&self.text[at..start])?;
            out.write_str(&self.other[from..to])?;
            (at, from) = (end, to);
        }
        out.write_str(&self.text[at..])
    }
}

/// Writes a fingerprint's canonical text scope by scope, in pieces of
/// about `cut` bytes handed to `emit` in order as each is written: a hasher
/// on another core can take a piece while the next scope is built.
pub struct PieceStream<'e> {
    piece: TextPiece,
    cut: usize,
    /// The capacity each new piece starts with.
    capacity: usize,
    scopes: usize,
    emit: &'e mut dyn FnMut(TextPiece),
    tails: RecentTails,
}

/// How many row tails [`RecentTails`] keeps.
const TAIL_SLOTS: usize = 16;

/// After how many resolved rows [`RecentTails`] decides whether it pays.
const TAIL_TRIAL: u32 = 1024;

/// The canonical text of a resolved selection row after its consumer
/// (`,"provider":…,"status":…}`), for the provider, provider scope,
/// requirement and status of the rows written last, found by pointer (the
/// slots keep their values, so an equal pointer is the same text). Rows of
/// one scope and of its neighbours bind the same few providers, so a few
/// texts serve nearly every row: the 31,784 rows of the 10,000-entry
/// benchmark tree have 1,030 distinct tails, and 16 slots find 96% of
/// them, turning a row's eleven writes and five escape scans into three
/// and one. Where rows bind different providers each (a chain), it turns
/// itself off after a trial.
#[derive(Default)]
struct RecentTails {
    slots: Recent<RowTail, TAIL_SLOTS>,
    looked: u32,
    found: u32,
    off: bool,
}

/// One slot of [`RecentTails`].
struct RowTail {
    /// Provider, provider scope, requirement, status.
    keys: [Arc<str>; 4],
    text: String,
}

/// A resolved row's canonical text after its consumer, `keys` being its
/// provider, provider scope, requirement and status: the same bytes as
/// [`SelectionRow::write_canonical`] writes there.
fn write_row_tail<W: Write>(keys: &[Arc<str>; 4], out: &mut W) -> fmt::Result {
    let [provider, scope, requirement, status] = keys;
    out.write_str(",\"provider\":")?;
    write_json_string(provider, out)?;
    out.write_str(",\"provider_scope\":")?;
    write_json_string(scope, out)?;
    out.write_str(",\"requirement\":")?;
    write_json_string(requirement, out)?;
    out.write_str(",\"status\":")?;
    write_json_string(status, out)?;
    out.write_char('}')
}

impl RecentTails {
    /// The tail of `row`'s text, when it is a resolved row and the tails
    /// are on.
    fn get(&mut self, row: &SelectionRow) -> Option<&str> {
        let (Some(provider), Some(scope)) = (&row.provider, &row.provider_scope) else {
            return None;
        };
        if self.off {
            return None;
        }
        let keys = [provider, scope, &row.requirement, &row.status];
        self.looked += 1;
        let at = self.slots.position(|slot| {
            slot.keys
                .iter()
                .zip(keys)
                .all(|(kept, key)| Arc::ptr_eq(kept, key))
        });
        let at = match at {
            Some(at) => {
                self.found += 1;
                at
            }
            None => {
                if self.looked == TAIL_TRIAL && self.found < TAIL_TRIAL / 4 {
                    self.off = true;
                    self.slots.clear();
                    return None;
                }
                let keys = keys.map(Arc::clone);
                self.slots.insert(|replaced| {
                    // The replaced tail's buffer, reused.
                    let mut text = replaced.map(|t| t.text).unwrap_or_default();
                    text.clear();
                    // Writing into a String cannot fail.
                    let _ = write_row_tail(&keys, &mut text);
                    RowTail { keys, text }
                })
            }
        };
        Some(&self.slots.get(at).text)
    }
}

impl<'e> PieceStream<'e> {
    /// A stream of the fingerprint rooted at `root`, its pieces starting
    /// with room for `capacity` bytes.
    pub fn new(
        root: &str,
        cut: usize,
        capacity: usize,
        emit: &'e mut dyn FnMut(TextPiece),
    ) -> Self {
        let mut stream = Self {
            piece: TextPiece {
                text: String::with_capacity(capacity),
                ..TextPiece::default()
            },
            cut,
            capacity,
            scopes: 0,
            emit,
            tails: RecentTails::default(),
        };
        // Writing into a String cannot fail.
        let _ = stream.write_str("{\"root\":");
        let _ = write_json_string(root, &mut stream);
        let _ = stream.write_str(",\"scopes\":[");
        stream
    }

    /// Write the next scope, `row`; with `other`, that scope's row in the
    /// second tree, whose providers the pieces carry.
    pub fn push(&mut self, row: &ScopeRow, other: Option<&ScopeRow>) {
        // Writing into a String cannot fail.
        let _ = self.push_row(row, other);
    }

    fn push_row(&mut self, row: &ScopeRow, other: Option<&ScopeRow>) -> fmt::Result {
        if self.scopes > 0 {
            self.write_char(',')?;
        }
        self.scopes += 1;
        row.write_head(self)?;
        let start = self.piece.text.len();
        row.write_providers(self)?;
        let end = self.piece.text.len();
        self.piece.providers.push((start, end));
        if let Some(other) = other {
            other.write_providers(&mut self.piece.other)?;
            self.piece.other_ends.push(self.piece.other.len());
        }
        row.write_tail_with(self, |stream, row| {
            stream.write_selection(row)?;
            stream.cut_point();
            Ok(())
        })?;
        self.cut_point();
        Ok(())
    }

    /// One selection row: its consumer and a kept tail when there is one.
    fn write_selection(&mut self, row: &SelectionRow) -> fmt::Result {
        let text = &mut self.piece.text;
        match self.tails.get(row) {
            Some(tail) => {
                text.push_str("{\"consumer\":");
                write_json_string(&row.consumer, text)?;
                text.push_str(tail);
                Ok(())
            }
            None => row.write_canonical(text),
        }
    }

    /// Close the text and hand over the last piece.
    pub fn finish(mut self) {
        let _ = self.write_str("]}");
        (self.emit)(self.piece);
    }

    fn cut_point(&mut self) {
        if self.piece.text.len() >= self.cut {
            let next = TextPiece {
                text: String::with_capacity(self.capacity),
                ..TextPiece::default()
            };
            (self.emit)(std::mem::replace(&mut self.piece, next));
        }
    }
}

impl Write for PieceStream<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.piece.text.push_str(s);
        Ok(())
    }

    #[inline]
    fn write_char(&mut self, c: char) -> fmt::Result {
        self.piece.text.push(c);
        Ok(())
    }
}

impl ScopesFingerprint {
    /// Write the canonical JSON of the fingerprint.
    pub fn write_canonical<W: Write>(&self, out: &mut W) -> fmt::Result {
        out.write_str("{\"root\":")?;
        write_json_string(&self.root, out)?;
        out.write_str(",\"scopes\":[")?;
        for (i, s) in self.scopes.iter().enumerate() {
            if i > 0 {
                out.write_char(',')?;
            }
            s.write_canonical(out)?;
        }
        out.write_str("]}")
    }

    /// The canonical JSON text of the fingerprint.
    pub fn canonical_text(&self) -> String {
        let mut out = String::with_capacity(self.text_capacity());
        // Writing into a String cannot fail.
        let _ = self.write_canonical(&mut out);
        out
    }

    /// The canonical JSON text of the fingerprint, with where each scope's
    /// `providers` value sits in it.
    pub fn text(&self) -> ScopesText {
        let mut whole = TextPiece::default();
        self.write_pieces(usize::MAX, self.text_capacity(), None, &mut |piece| {
            whole = piece;
        });
        ScopesText {
            text: whole.text.into(),
            providers: whole.providers,
        }
    }

    /// The canonical JSON text of the fingerprint through a [`PieceStream`]
    /// (pieces of about `cut` bytes, each starting with room for
    /// `capacity`); with `other`, a tree of as many scopes, the pieces also
    /// carry its providers.
    pub fn write_pieces(
        &self,
        cut: usize,
        capacity: usize,
        other: Option<&ScopesFingerprint>,
        emit: &mut dyn FnMut(TextPiece),
    ) {
        let capacity = capacity.min(self.text_capacity());
        let mut stream = PieceStream::new(&self.root, cut, capacity, emit);
        for (i, row) in self.scopes.iter().enumerate() {
            stream.push(row, other.and_then(|o| o.scopes.get(i)));
        }
        stream.finish();
    }

    /// Whether this tree equals `other` in everything but the scopes'
    /// `providers` values (as a built snapshot's two trees do), so one's
    /// text can be written over the other's.
    pub fn same_but_providers(&self, other: &ScopesFingerprint) -> bool {
        self.root == other.root
            && self.scopes.len() == other.scopes.len()
            && self
                .scopes
                .iter()
                .zip(&other.scopes)
                .all(|(a, b)| a.same_but_providers(b))
    }

    /// Write the canonical JSON of this fingerprint, which is the one
    /// `base` is the text of but for the scopes' `providers` values (as a
    /// snapshot's physical tree is its semantic tree): the shared text is
    /// copied, only the providers are written. A fingerprint with another
    /// number of scopes is written whole.
    pub fn write_canonical_over<W: Write>(&self, base: &ScopesText, out: &mut W) -> fmt::Result {
        if base.providers.len() != self.scopes.len() {
            return self.write_canonical(out);
        }
        let mut at = 0;
        for (row, &(start, end)) in self.scopes.iter().zip(&base.providers) {
            out.write_str(&base.text[at..start])?;
            row.write_providers(out)?;
            at = end;
        }
        out.write_str(&base.text[at..])
    }
}

/// The canonical text of a scope fingerprint, and the byte range of each
/// scope's `providers` value in it ([`ScopesFingerprint::text`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopesText {
    /// The canonical JSON.
    pub text: Arc<str>,
    /// Per scope, where its `providers` value is.
    pub providers: Vec<(usize, usize)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::canonical::to_canonical_json;

    static RESOLVED: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| "resolved".into());

    fn resolved(
        consumer: &str,
        provider: &Arc<str>,
        scope: &Arc<str>,
        req: &Arc<str>,
    ) -> SelectionRow {
        SelectionRow {
            consumer: consumer.into(),
            requirement: Arc::clone(req),
            // One status text for every row, as a built snapshot has.
            status: Arc::clone(&RESOLVED),
            provider: Some(Arc::clone(provider)),
            provider_scope: Some(Arc::clone(scope)),
        }
    }

    /// One scope holding `rows`, as a tree.
    fn tree_of(rows: Vec<SelectionRow>) -> ScopesFingerprint {
        let empty: Names = Arc::from([]);
        ScopesFingerprint::new(vec![ScopeRow {
            path: "/".into(),
            parent: None,
            children: Arc::clone(&empty),
            capabilities: None,
            tools: None,
            entries: Arc::clone(&empty),
            providers: BTreeMap::new(),
            visible_tools: empty,
            selections: rows.into(),
        }])
    }

    /// The streamed text, whole and in small pieces, is the canonical text.
    fn assert_streams_as_canon(tree: &ScopesFingerprint) {
        let canon = to_canonical_json(&tree.to_canon()).unwrap();
        assert_eq!(&*tree.text().text, canon);
        let mut joined = String::new();
        tree.write_pieces(300, 64, None, &mut |p| joined.push_str(&p.text));
        assert_eq!(joined, canon);
    }

    #[test]
    fn kept_row_tails_write_the_canonical_text() {
        let req: Arc<str> = "database <2,>=1".into();
        let odd: Arc<str> = "a\"b\\c\n".into();
        let scopes: Vec<Arc<str>> = (0..20).map(|i| Arc::from(format!("/s{i}"))).collect();
        let providers: Vec<Arc<str>> = (0..20).map(|i| Arc::from(format!("db{i}"))).collect();
        let mut rows = Vec::new();
        // Repeated tails (found), more distinct tails than slots (evicted
        // and written again), escapes in each tail value, an unresolved
        // row, and an equal tail behind other pointers.
        for round in 0..3 {
            for i in 0..20 {
                rows.push(resolved(
                    &format!("c{round}-{i}"),
                    &providers[i],
                    &scopes[i % 3],
                    &req,
                ));
                rows.push(resolved(
                    &format!("d{round}-{i}"),
                    &providers[i % 2],
                    &scopes[0],
                    &req,
                ));
            }
        }
        rows.push(resolved("e1", &odd, &scopes[0], &req));
        rows.push(resolved("e2", &providers[0], &odd, &req));
        rows.push(resolved("e3", &providers[0], &scopes[0], &odd));
        rows.push(resolved("e\"4", &providers[0], &scopes[0], &req));
        rows.push(SelectionRow {
            status: odd.clone(),
            ..resolved("e5", &providers[0], &scopes[0], &req)
        });
        rows.push(SelectionRow {
            provider: None,
            provider_scope: None,
            status: "missing".into(),
            ..resolved("e6", &providers[0], &scopes[0], &req)
        });
        rows.push(resolved(
            "e7",
            &Arc::from("db0"),
            &Arc::from("/s0"),
            &Arc::from("database <2,>=1"),
        ));
        assert_streams_as_canon(&tree_of(rows));
    }

    #[test]
    fn row_tails_are_found_by_pointer_and_switch_off_when_they_do_not_pay() {
        let req: Arc<str> = "database <2,>=1".into();
        let scope: Arc<str> = "/".into();
        let db: Arc<str> = "db".into();
        // Rows binding a few providers: all but the first found.
        let mut tails = RecentTails::default();
        for i in 0..100 {
            let row = resolved(&format!("c{i}"), &db, &scope, &req);
            let mut text = String::new();
            row.write_canonical(&mut text).unwrap();
            let tail = tails.get(&row).unwrap().to_owned();
            assert_eq!(format!("{{\"consumer\":\"c{i}\"{tail}"), text);
        }
        assert_eq!((tails.looked, tails.found), (100, 99));
        // Equal text behind another pointer is a new tail, not a wrong one.
        let other = resolved("x", &Arc::from("db"), &scope, &req);
        assert!(tails.get(&other).is_some());
        assert_eq!(tails.found, 99);
        // A chain (a different provider every row) turns the tails off
        // after the trial; its rows are then written whole.
        let mut tails = RecentTails::default();
        let rows: Vec<SelectionRow> = (0..TAIL_TRIAL + 10)
            .map(|i| resolved(&format!("c{i}"), &Arc::from(format!("p{i}")), &scope, &req))
            .collect();
        let given = rows.iter().filter(|r| tails.get(r).is_some()).count();
        assert!(tails.off);
        assert_eq!(given, TAIL_TRIAL as usize - 1);
        assert_streams_as_canon(&tree_of(rows));
    }
}
