//! Cutting a large composition file into pieces that parse on their own.
//!
//! The TOML parser holds the whole document twice over while it works — a
//! token vector, then a tree of index maps — about 35 bytes for every byte
//! of text, so a 100,000-entry file (16 MB) peaked above 600 MB before a
//! single entry was read. Most of a large file is `[plugins.X]`,
//! `[entries.X]` and `[agents.X]` tables that say nothing about each other,
//! so the file is parsed and walked a piece at a time, each piece's tree
//! dropped before the next is parsed.
//!
//! A cut is made only where it cannot change what the file means: before a
//! table header, when no table, dotted key or array of tables named before
//! the cut shares its item (`plugins.X`, `entries.X`, `agents.X`) with one
//! named after it. Anything the scan does not fully understand — a quoted
//! key, an unbalanced bracket, a header it cannot read — means no cut at
//! all: the file is parsed whole, exactly as before. A piece that turns out
//! to have a syntax error sends the reader back to the whole file too, so
//! syntax errors are always reported as the parser sees the whole file.

use std::ops::Range;

use toml_parser::Source;

use crate::engine::tree::FxHashMap;
use toml_parser::lexer::TokenKind;

/// Files smaller than this are parsed whole: the saving only matters for
/// large files, and most files are far smaller.
pub(crate) const SPLIT_FROM_BYTES: usize = 1 << 20;

/// The size a piece grows to before the next cut (when a cut is allowed).
pub(crate) const PIECE_BYTES: usize = 256 << 10;

/// The root tables whose items are independent of each other; every other
/// root table stays in one piece.
const SPLITTABLE: [&str; 3] = ["plugins", "entries", "agents"];

/// The byte ranges of `text`'s pieces (in order, covering all of it), or
/// `None` when it should be parsed whole: smaller than `split_from`, fewer
/// than two pieces, or anything the scan cannot vouch for.
pub(crate) fn split(text: &str, split_from: usize, piece: usize) -> Option<Vec<Range<usize>>> {
    if text.len() < split_from {
        return None;
    }
    let sites = scan(text)?;
    let cuts = cuts(&sites, piece);
    if cuts.is_empty() {
        return None;
    }
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        pieces.push(start..cut);
        start = cut;
    }
    pieces.push(start..text.len());
    Some(pieces)
}

/// A place that names a table: the document root (its key lines) or a
/// table header.
#[derive(Debug, PartialEq)]
struct Site<'t> {
    /// Where the site starts (0 for the root).
    start: usize,
    /// The key paths it names, each at most two segments long.
    paths: Paths<'t>,
}

/// A key path cut to its first two segments.
type Path<'t> = (&'t str, Option<&'t str>);

/// What a site names: a header names one path, the root any number.
#[derive(Debug, PartialEq)]
enum Paths<'t> {
    One(Path<'t>),
    Many(Vec<Path<'t>>),
}

impl<'t> Paths<'t> {
    fn iter(&self) -> impl Iterator<Item = &Path<'t>> {
        match self {
            Self::One(p) => std::slice::from_ref(p).iter(),
            Self::Many(ps) => ps.iter(),
        }
    }
}

/// Every site of `text`, or `None` when the scan meets something it does
/// not fully understand. A large file is scanned in two halves side by
/// side when a header starts a line near its middle (see [`scan_at`]).
fn scan(text: &str) -> Option<Vec<Site<'_>>> {
    // Bytes, so a middle inside a character still finds the next line.
    let middle = text.len() / 2;
    let at = text.as_bytes()[middle..]
        .windows(2)
        .position(|w| w == b"\n[")
        .map(|i| middle + i + 1);
    match at {
        Some(at) if crate::engine::parallel::splits(text.len() / 256) => scan_at(text, at),
        _ => scan_part(text, 0, None, true).map(|p| p.sites),
    }
}

/// [`scan`] of `text` in two halves on two cores, the second starting at
/// `at` (a `[` that starts a line). The second half is scanned as if a
/// header began there; that holds only when the first half's scan reaches
/// `at` between tokens, at bracket depth 0, at the start of a line (the
/// lexer's tokens do not depend on where it started, only on where each
/// token starts). Otherwise — a string or an array spanning `at` — the file
/// is scanned in one piece, as it would have been.
fn scan_at(text: &str, at: usize) -> Option<Vec<Site<'_>>> {
    let (first, second) = crate::engine::parallel::join(
        usize::MAX,
        || scan_part(text, 0, Some(at), true),
        || scan_part(text, at, None, false),
    );
    let Some(mut first) = first.filter(|f| f.reached_cleanly) else {
        return scan_part(text, 0, None, true).map(|p| p.sites);
    };
    first.sites.extend(second?.sites);
    Some(first.sites)
}

/// What scanning part of a file found.
struct Part<'t> {
    sites: Vec<Site<'t>>,
    /// Whether the scan stopped at the asked offset between tokens, at
    /// depth 0 and at the start of a line (always true when it ran to the
    /// end).
    reached_cleanly: bool,
}

/// The sites of `text[from..]` (up to `stop`, when given: the first token
/// starting there or later ends the scan). `root`: the part starts at the
/// top of the file, where key lines before the first header name the root
/// table's keys; otherwise it starts at a header.
fn scan_part(text: &str, from: usize, stop: Option<usize>, root: bool) -> Option<Part<'_>> {
    let part = text.get(from..)?;
    let source = Source::new(part);
    let mut tokens = source.lex().filter(|t| t.kind() != TokenKind::Whitespace);
    let mut root_paths = Vec::new();
    // About one header per 64 bytes in a large file of small tables: grown
    // one push at a time, the vector was copied a dozen times.
    let mut sites = Vec::with_capacity(part.len() / 64 + 1);
    if root {
        sites.push(Site {
            start: 0,
            paths: Paths::Many(Vec::new()),
        });
    }
    let mut depth = 0usize;
    let mut line_start = true;
    let mut reached_cleanly = stop.is_none();
    let raw = |t: &toml_parser::lexer::Token| part.get(t.span().start()..t.span().end());
    while let Some(token) = tokens.next() {
        if let Some(stop) = stop
            && from + token.span().start() >= stop
        {
            reached_cleanly = from + token.span().start() == stop && depth == 0 && line_start;
            break;
        }
        match token.kind() {
            TokenKind::Eof => break,
            TokenKind::Comment => continue,
            TokenKind::Newline => {
                line_start = depth == 0;
                continue;
            }
            _ => {}
        }
        if line_start {
            line_start = false;
            if token.kind() == TokenKind::LeftSquareBracket {
                let mut next = tokens.next()?;
                let array = next.kind() == TokenKind::LeftSquareBracket;
                if array {
                    next = tokens.next()?;
                }
                let (path, closing) = key_path(next, &mut tokens, raw)?;
                if closing != TokenKind::RightSquareBracket
                    || (array && tokens.next()?.kind() != TokenKind::RightSquareBracket)
                {
                    return None;
                }
                sites.push(Site {
                    start: from + token.span().start(),
                    paths: Paths::One(path),
                });
                continue;
            }
            if root && sites.len() == 1 {
                // A key line of the root table: what it names counts.
                let (path, closing) = key_path(token, &mut tokens, raw)?;
                if closing != TokenKind::Equals {
                    return None;
                }
                root_paths.push(path);
                continue;
            }
        }
        match token.kind() {
            TokenKind::LeftSquareBracket | TokenKind::LeftCurlyBracket => depth += 1,
            TokenKind::RightSquareBracket | TokenKind::RightCurlyBracket => {
                depth = depth.checked_sub(1)?;
            }
            _ => {}
        }
    }
    if root {
        sites[0].paths = Paths::Many(root_paths);
    }
    // A part that stopped early may be inside brackets: it is not cut.
    if stop.is_some() && !reached_cleanly {
        return Some(Part {
            sites,
            reached_cleanly,
        });
    }
    (depth == 0).then_some(Part {
        sites,
        reached_cleanly,
    })
}

/// A dotted key of bare segments starting at `first`, cut to its first two
/// segments, and the token that ended it. Quoted segments (which may equal
/// a bare one) and anything unexpected refuse.
fn key_path<'t>(
    first: toml_parser::lexer::Token,
    tokens: &mut impl Iterator<Item = toml_parser::lexer::Token>,
    raw: impl Fn(&toml_parser::lexer::Token) -> Option<&'t str>,
) -> Option<(Path<'t>, TokenKind)> {
    let mut path: (Option<&'t str>, Option<&'t str>) = (None, None);
    let mut token = first;
    loop {
        if token.kind() != TokenKind::Atom {
            return None;
        }
        let segment = raw(&token)?;
        if segment.is_empty()
            || !segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return None;
        }
        match path {
            (None, _) => path.0 = Some(segment),
            (Some(_), None) => path.1 = Some(segment),
            _ => {}
        }
        let after = tokens.next()?;
        match after.kind() {
            TokenKind::Dot => token = tokens.next()?,
            kind => return Some(((path.0?, path.1), kind)),
        }
    }
}

/// The offsets to cut at: before a header where every item named before it
/// is named only before it, once the piece has grown to `piece` bytes.
fn cuts<'t>(sites: &[Site<'t>], piece: usize) -> Vec<usize> {
    // A root table named whole (`[plugins]`, `plugins = {…}`, `plugins.x`
    // under `[plugins]`…) ties all of its items together.
    let whole: Vec<&'t str> = sites
        .iter()
        .flat_map(|s| s.paths.iter())
        .filter(|p| p.1.is_none())
        .map(|p| p.0)
        .collect();
    // The item a path belongs to: `entries.X` of a splittable root table,
    // else the root table itself. Borrowed, so a 100,000-entry file makes
    // no string per header.
    let item = |&(root, second): &Path<'t>| -> Path<'t> {
        match second {
            Some(_) if SPLITTABLE.contains(&root) && !whole.contains(&root) => (root, second),
            _ => (root, None),
        }
    };
    // The last site naming each item.
    // Fx-hashed: SipHash on 200,000 short keys was a quarter of the scan.
    let mut last: FxHashMap<Path<'t>, usize> =
        FxHashMap::with_capacity_and_hasher(sites.len(), Default::default());
    for (i, site) in sites.iter().enumerate() {
        for path in site.paths.iter() {
            last.insert(item(path), i);
        }
    }
    let mut cuts = Vec::new();
    let mut reach = 0;
    let mut piece_start = 0;
    for (i, site) in sites.iter().enumerate() {
        if i > 0 && reach < i && site.start - piece_start >= piece {
            cuts.push(site.start);
            piece_start = site.start;
        }
        for path in site.paths.iter() {
            reach = reach.max(last.get(&item(path)).copied().unwrap_or(i));
        }
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Option<Vec<&str>> {
        split(text, 0, 0).map(|p| p.into_iter().map(|r| &text[r]).collect())
    }

    #[test]
    fn cuts_before_each_independent_item() {
        let text = "version = 1\n[plugins.a]\nversion = \"1\"\n[entries.a]\nconfig = { n = [1, [2]] }\n[entries.b]\n";
        assert_eq!(
            pieces(text).unwrap(),
            vec![
                "version = 1\n",
                "[plugins.a]\nversion = \"1\"\n",
                "[entries.a]\nconfig = { n = [1, [2]] }\n",
                "[entries.b]\n"
            ]
        );
    }

    #[test]
    fn an_item_named_twice_stays_in_one_piece() {
        let text =
            "version = 1\n[entries.a]\n[entries.b]\n[entries.a.config]\nn = 1\n[entries.c]\n";
        assert_eq!(
            pieces(text).unwrap(),
            vec![
                "version = 1\n",
                "[entries.a]\n[entries.b]\n[entries.a.config]\nn = 1\n",
                "[entries.c]\n"
            ]
        );
    }

    #[test]
    fn a_table_named_whole_is_not_cut() {
        // `[plugins]` ties every plugin together; the entries still cut.
        let text =
            "version = 1\n[plugins]\na.version = \"1\"\n[plugins.b]\n[entries.a]\n[entries.b]\n";
        assert_eq!(
            pieces(text).unwrap(),
            vec![
                "version = 1\n",
                "[plugins]\na.version = \"1\"\n[plugins.b]\n",
                "[entries.a]\n",
                "[entries.b]\n"
            ]
        );
        // A root dotted key ties its item to the root piece.
        let text = "version = 1\nentries.a.plugin = \"p\"\n[entries.b]\n[entries.a.config]\n";
        assert_eq!(pieces(text), None);
        // Root tables other than the three are never cut apart.
        let text =
            "version = 1\n[scopes.a]\n[scopes.b]\n[[agents.a.x]]\n[[agents.a.x]]\n[[agents.b.x]]\n";
        assert_eq!(
            pieces(text).unwrap(),
            vec![
                "version = 1\n",
                "[scopes.a]\n[scopes.b]\n",
                "[[agents.a.x]]\n[[agents.a.x]]\n",
                "[[agents.b.x]]\n"
            ]
        );
    }

    #[test]
    fn brackets_inside_values_and_strings_are_not_headers() {
        let text = "version = 1\n[entries.a]\nconfig = { x = [\n[1],\n\"[entries.z]\"\n] }\ns = \"\"\"\n[entries.y]\n\"\"\"\n[entries.b]\n";
        let p = pieces(text).unwrap();
        assert_eq!(p.len(), 3);
        assert!(p[1].contains("[entries.y]"));
        assert_eq!(p[2], "[entries.b]\n");
    }

    #[test]
    fn anything_unclear_parses_whole() {
        for text in [
            "version = 1\n[entries.\"a\"]\n[entries.b]\n",
            "version = 1\n[entries.'a']\n[entries.b]\n",
            "version = 1\n[entries.a\n[entries.b]\n",
            "version = 1\n[entries.a]\nx = [1\n[entries.b]\n",
            "version = 1\n[entries.a]\nx = 1]\n[entries.b]\n",
            "version = 1\n[entries.a b]\n[entries.b]\n",
            "version = 1\n[1,2]\n[entries.b]\n",
            "\"version\" = 1\n[entries.a]\n[entries.b]\n",
        ] {
            assert_eq!(pieces(text), None, "{text:?}");
        }
        // Small files are never cut.
        assert_eq!(
            split("version = 1\n[entries.a]\n[entries.b]\n", 1 << 20, 0),
            None
        );
    }

    #[test]
    fn pieces_grow_to_the_asked_size() {
        let mut text = String::from("version = 1\n");
        for i in 0..100 {
            text.push_str(&format!("[entries.e{i:03}]\nconfig = {{ n = {i} }}\n"));
        }
        let ranges = split(&text, 0, 1000).unwrap();
        assert!(ranges.len() > 2 && ranges.len() < 10, "{}", ranges.len());
        assert_eq!(ranges.first().unwrap().start, 0);
        assert_eq!(ranges.last().unwrap().end, text.len());
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
    }

    /// Scanning in two halves finds what scanning in one does, wherever
    /// the second half starts: at a header, or in a string, an array or an
    /// inline table that spans a line starting with `[`.
    #[test]
    fn two_halves_scan_as_one_wherever_they_meet() {
        let text = concat!(
            "version = 1\n",
            "title = \"x\"\n",
            "[plugins.a]\nversion = \"1\"\n",
            "[entries.a]\nconfig = { n = [1,\n[2]] }\n",
            "[entries.b]\ns = \"\"\"\n[entries.fake]\n\"\"\"\n",
            "t = '''\n[[entries.fake.x]]\n'''\n",
            "# [entries.comment]\n",
            "[[entries.b.config.turns]]\ntext = \"a\"\n",
            "[entries.c]\nx = [\n[1],\n]\n",
            "[entries.d]\r\n",
            "[agents.x]\nprompt = \"p\"\n",
        );
        let whole = scan_part(text, 0, None, true).map(|p| p.sites);
        assert!(whole.is_some());
        let starts: Vec<usize> = text.match_indices("\n[").map(|(i, _)| i + 1).collect();
        assert!(starts.len() > 10, "{starts:?}");
        for at in starts {
            assert_eq!(scan_at(text, at), whole, "second half at {at}");
        }
        // A file the scan refuses is refused from either half.
        for bad in [
            "version = 1\n[entries.a]\n[entries.\"b\"]\nx = 1\n[entries.c]\n",
            "version = 1\n[entries.a]\nx = [1\n[entries.c]\n",
        ] {
            for (at, _) in bad.match_indices("\n[") {
                assert_eq!(scan_at(bad, at + 1), None, "{bad:?} at {at}");
            }
        }
    }
}
