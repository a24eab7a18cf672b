//! Content-addressed chunk trees: how the store keeps a large document
//! (a snapshot, a generation's nodes, what its publish did) so that a
//! generation costs what changed, not what it holds.
//!
//! Why: a one-entry publish of a 100,000-entry composition used to write
//! the whole snapshot and a row per node again (95 MB per generation).
//! Here a document is cut into chunks of lines at *content-defined*
//! boundaries (a boundary depends on the lines around it, not on an
//! offset), so an edit moves no boundary outside the chunks it touches and
//! every other chunk is the one the previous generation already stored.
//! Chunks are keyed by their SHA-256 and shared by every generation (and
//! every lineage) that holds them. The list of chunk hashes is itself cut
//! the same way, level after level, up to one root: a generation stores
//! only its root hash, and a one-entry change adds a chunk per level.
//!
//! The cut is a pure function of the text, so the same document always
//! yields the same root on every machine.

use sha2::{Digest, Sha256};

/// Bytes per leaf chunk, on average: a line ends a chunk with a
/// probability of its length over this, so a chunk of long lines (a node's
/// identity) and one of short lines (a snapshot's) weigh alike.
const LEAF_AVERAGE: u64 = 4096;
/// No leaf chunk is cut shorter (unless the document ends).
const LEAF_MIN: usize = 512;
/// Every leaf chunk is cut once it reaches this many bytes.
const LEAF_MAX: usize = 64 * 1024;
/// Bytes per index chunk, on average (16 child hashes).
const INDEX_AVERAGE: u64 = 1024;
/// No index chunk is cut shorter.
const INDEX_MIN: usize = 256;
/// Every index chunk is cut at this many bytes.
const INDEX_MAX: usize = 16 * 1024;

/// A stored chunk: its level (0 holds text, above holds child hashes, one
/// per line) and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// 0 for text; n for a list of level n-1 chunk hashes.
    pub level: u8,
    /// The bytes.
    pub body: Vec<u8>,
}

/// The hash a chunk is stored under: SHA-256 over its level and body.
pub fn chunk_hash(level: u8, body: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update([level]);
    h.update(body);
    crate::engine::canonical::hex_lower(&h.finalize())
}

/// Cut `text` into a chunk tree, handing each chunk to `put` (hash, chunk)
/// — a chunk may be handed more than once; storing is idempotent — and
/// return the root hash.
pub fn write<E>(
    text: &str,
    put: &mut dyn FnMut(&str, &Chunk) -> Result<(), E>,
) -> Result<String, E> {
    let mut hashes = Vec::new();
    for body in cut(lines(text), LEAF_AVERAGE, LEAF_MIN, LEAF_MAX, 3) {
        hashes.push(store(0, body, put)?);
    }
    let mut level = 0u8;
    while hashes.len() != 1 {
        level = level.saturating_add(1);
        let listed: Vec<String> = hashes.iter().map(|h| format!("{h}\n")).collect();
        let refs = listed.iter().map(String::as_str).collect::<Vec<_>>();
        hashes = cut(refs.into_iter(), INDEX_AVERAGE, INDEX_MIN, INDEX_MAX, 1)
            .into_iter()
            .map(|body| store(level, body, put))
            .collect::<Result<_, _>>()?;
    }
    Ok(hashes.pop().unwrap_or_default())
}

fn store<E>(
    level: u8,
    body: String,
    put: &mut dyn FnMut(&str, &Chunk) -> Result<(), E>,
) -> Result<String, E> {
    let chunk = Chunk {
        level,
        body: body.into_bytes(),
    };
    let hash = chunk_hash(level, &chunk.body);
    put(&hash, &chunk)?;
    Ok(hash)
}

/// Why a chunk tree could not be read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError<E> {
    /// A chunk it names is not stored.
    #[error("chunk {0} is missing")]
    Missing(String),
    /// A chunk is not what its hash says.
    #[error("chunk {0} fails its hash check")]
    Damaged(String),
    /// A chunk (or the document it ends) is not UTF-8 text.
    #[error("chunk {0} is not text")]
    NotText(String),
    /// Fetching failed.
    #[error("{0}")]
    Fetch(E),
}

/// Read the document whose root is `root`, fetching chunks with `get`.
pub fn read<E>(
    root: &str,
    get: &mut dyn FnMut(&str) -> Result<Option<Chunk>, E>,
) -> Result<String, ReadError<E>> {
    let mut out = Vec::new();
    // Depth-first, children in order: a stack of hashes still to visit.
    let mut stack = vec![root.to_owned()];
    while let Some(hash) = stack.pop() {
        let chunk = get(&hash)
            .map_err(ReadError::Fetch)?
            .ok_or_else(|| ReadError::Missing(hash.clone()))?;
        if chunk_hash(chunk.level, &chunk.body) != hash {
            return Err(ReadError::Damaged(hash));
        }
        if chunk.level == 0 {
            out.extend_from_slice(&chunk.body);
            continue;
        }
        let text =
            std::str::from_utf8(&chunk.body).map_err(|_| ReadError::NotText(hash.clone()))?;
        stack.extend(text.lines().rev().map(str::to_owned));
    }
    String::from_utf8(out).map_err(|_| ReadError::NotText(root.to_owned()))
}

/// The lines of `text`, each with its `\n` (the last may lack one).
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
}

/// Group `items` into chunks: a chunk ends after an item where the mixed
/// hash of the last `window` items falls below the item's length out of
/// `average` (and it has `min` bytes), or once it has `max` bytes.
fn cut<'a>(
    items: impl Iterator<Item = &'a str>,
    average: u64,
    min: usize,
    max: usize,
    window: usize,
) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut recent = [0u64; 3];
    for item in items {
        recent.rotate_right(1);
        recent[0] = fnv1a(item.as_bytes());
        let mut w = 0u64;
        for (i, h) in recent.iter().take(window.clamp(1, 3)).enumerate() {
            w ^= h.rotate_left(u32::try_from(i * 21).unwrap_or(0));
        }
        current.push_str(item);
        let boundary = mix(w) % average < item.len() as u64;
        if (boundary && current.len() >= min) || current.len() >= max {
            chunks.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() || chunks.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// FNV-1a, 64 bits: a fixed, portable hash of a line.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A finalizer (splitmix64's) so every bit of the window decides.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn put_all(text: &str, into: &mut BTreeMap<String, Chunk>) -> String {
        write::<()>(text, &mut |h, c| {
            into.insert(h.to_owned(), c.clone());
            Ok(())
        })
        .unwrap()
    }

    fn doc(n: usize, changed: Option<usize>) -> String {
        (0..n)
            .map(|i| {
                let v = if Some(i) == changed { 1_000_000 + i } else { i };
                format!("  {{\"entry\": \"e{i:06}\", \"n\": {v}}},\n    \"status\": \"resolved\"\n")
            })
            .collect()
    }

    #[test]
    fn a_document_reads_back_as_written() {
        for text in ["", "x", "a\nb", &doc(1, None), &doc(5_000, None)] {
            let mut chunks = BTreeMap::new();
            let root = put_all(text, &mut chunks);
            let back = read::<()>(&root, &mut |h| Ok(chunks.get(h).cloned())).unwrap();
            assert_eq!(back, text);
        }
    }

    #[test]
    fn the_same_text_has_the_same_root() {
        let mut a = BTreeMap::new();
        let mut b = BTreeMap::new();
        assert_eq!(
            put_all(&doc(3_000, None), &mut a),
            put_all(&doc(3_000, None), &mut b)
        );
    }

    #[test]
    fn a_one_line_change_adds_a_few_chunks_not_a_copy() {
        let mut chunks = BTreeMap::new();
        put_all(&doc(20_000, None), &mut chunks);
        let before = chunks.len();
        let bytes_before: usize = chunks.values().map(|c| c.body.len()).sum();
        put_all(&doc(20_000, Some(12_345)), &mut chunks);
        let added: Vec<&Chunk> = chunks.values().collect();
        let new_bytes: usize = added.iter().map(|c| c.body.len()).sum::<usize>() - bytes_before;
        assert!(before > 100, "{before} chunks");
        assert!(
            chunks.len() - before <= 8,
            "{} new chunks",
            chunks.len() - before
        );
        assert!(
            new_bytes < 64 * 1024,
            "{new_bytes} new bytes of {bytes_before}"
        );
    }

    #[test]
    fn an_insertion_moves_no_far_boundary() {
        let mut chunks = BTreeMap::new();
        let text = doc(10_000, None);
        put_all(&text, &mut chunks);
        let before = chunks.len();
        let at = text.len() / 2;
        let at = text[..at].rfind('\n').unwrap() + 1;
        let edited = format!(
            "{}  {{\"entry\": \"inserted\"}},\n{}",
            &text[..at],
            &text[at..]
        );
        put_all(&edited, &mut chunks);
        assert!(
            chunks.len() - before <= 8,
            "{} new chunks",
            chunks.len() - before
        );
    }

    #[test]
    fn a_damaged_or_missing_chunk_is_an_error() {
        let mut chunks = BTreeMap::new();
        let root = put_all(&doc(2_000, None), &mut chunks);
        let victim = chunks.keys().find(|h| **h != root).unwrap().clone();
        let mut damaged = chunks.clone();
        damaged.get_mut(&victim).unwrap().body.push(b'!');
        assert!(matches!(
            read::<()>(&root, &mut |h| Ok(damaged.get(h).cloned())),
            Err(ReadError::Damaged(_))
        ));
        chunks.remove(&victim);
        assert!(matches!(
            read::<()>(&root, &mut |h| Ok(chunks.get(h).cloned())),
            Err(ReadError::Missing(_))
        ));
    }

    #[test]
    fn identical_lines_are_cut_at_the_maximum() {
        let text = "same\n".repeat(5_000);
        let mut chunks = BTreeMap::new();
        let root = put_all(&text, &mut chunks);
        assert!(
            chunks
                .values()
                .all(|c| c.level > 0 || c.body.len() <= 5 * LEAF_MAX)
        );
        let back = read::<()>(&root, &mut |h| Ok(chunks.get(h).cloned())).unwrap();
        assert_eq!(back, text);
    }
}
