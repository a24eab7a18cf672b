//! A file read in pieces ([`super::pieces`]) loads exactly as the whole
//! file does: the same composition, the same diagnostics at the same
//! places, the same concealed spans — for the bundled compositions, the
//! generated shapes, and thousands of mutations of them.

use std::path::{Path, PathBuf};

use super::includes::Pieces;
use super::source::MemorySource;
use super::{Loaded, load_in_pieces};
use crate::testing::generate::{Shape, generate};

/// Whole: never cut.
const WHOLE: Pieces = Pieces {
    from: usize::MAX,
    size: 0,
};

/// Every cut the scan allows.
const FINEST: Pieces = Pieces { from: 0, size: 0 };

/// Pieces of a few hundred bytes.
const SMALL: Pieces = Pieces { from: 0, size: 300 };

fn load(text: &str, pieces: Pieces) -> Loaded {
    let source = MemorySource::new().with("c.toml", text);
    load_in_pieces(&source, Path::new("c.toml"), pieces)
}

/// Everything a load produces, as text.
fn seen(loaded: &Loaded) -> String {
    format!(
        "{:#?}\n{:#?}\n{:#?}",
        loaded.composition, loaded.diagnostics, loaded.sources
    )
}

fn same_in_pieces(text: &str, what: &str) -> usize {
    let whole = seen(&load(text, WHOLE));
    for pieces in [FINEST, SMALL] {
        let cut = seen(&load(text, pieces));
        if cut != whole {
            let line = whole
                .lines()
                .zip(cut.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{what} loads differently in pieces ({pieces:?}); first difference at line {line}:\n  whole: {:?}\n  cut:   {:?}\n--- text ---\n{text}",
                whole.lines().nth(line),
                cut.lines().nth(line),
            );
        }
    }
    super::pieces::split(text, 0, 0).map_or(1, |p| p.len())
}

fn corpus() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for shape in Shape::ALL {
        let c = generate(shape, 60);
        out.push((format!("{} one change", shape.name()), c.one_change()));
        out.push((format!("{} cascade", shape.name()), c.cascade()));
        out.push((shape.name().to_owned(), c.text));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("examples"), root.join("tests/data/compositions")];
    while let Some(dir) = dirs.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "toml")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.push((path.display().to_string(), text));
            }
        }
    }
    out
}

#[test]
fn bundled_and_generated_compositions_load_the_same_in_pieces() {
    let corpus = corpus();
    assert!(corpus.len() > 20, "{}", corpus.len());
    let mut cut = 0;
    for (name, text) in &corpus {
        if same_in_pieces(text, name) > 1 {
            cut += 1;
        }
    }
    // The generated shapes and most bundled files are cut at all.
    assert!(cut >= 12, "only {cut} files were cut");
}

/// A small deterministic generator (xorshift), so the mutations are the
/// same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }
}

/// Fragments that stress the scan: brackets, quotes, headers that repeat
/// an item or name a whole table, root dotted keys, versions, secrets.
const FRAGMENTS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    "\"",
    "\"\"\"",
    "'''",
    "\n",
    "=",
    ".",
    "\r\n",
    "# [entries.zz]\n",
    "\n[entries.e00003]\nconfig = { n = 1 }\n",
    "\n[entries.c00003]\nplugin = \"consumer\"\n",
    "\n[plugins.p00002]\nversion = \"x\"\n",
    "\n[plugins.consumer.requires]\nshard = \">=1\"\n",
    "\n[entries]\n",
    "\n[plugins]\nextra.version = \"1.0.0\"\n",
    "\n[[agents.a.tools]]\n",
    "\n[agents]\n",
    "\nversion = 2\n",
    "\n[entries.zz]\nconfig = { api_key = \"sk-canary\", token = { secret = \"\" } }\n",
    "\n[entries.\"e00001\"]\n",
    "\n[scopes.\"/x\"]\n",
    "\n[serve]\nlisten = 1\n",
    "entries.e00001.plugin = \"p\"\n",
    "\n[entries.e00001.config]\nn = 7\n",
    "\n[policy]\nunknown = 1\n",
    "x = [\n[1],\n]\n",
    "n = 1e999\n",
    "\u{feff}",
    "\n[unknown.a]\n[unknown.b]\n",
];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(4) {
            0 => {
                let end = (at + rng.below(24)).min(bytes.len());
                bytes.drain(at..end);
            }
            1 => {
                let fragment = FRAGMENTS[rng.below(FRAGMENTS.len())];
                bytes.splice(at..at, fragment.bytes());
            }
            2 => {
                // Repeat a line elsewhere.
                let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
                let line = lines[rng.below(lines.len())].to_vec();
                let mut line_at = at;
                while line_at > 0 && bytes[line_at - 1] != b'\n' {
                    line_at -= 1;
                }
                bytes.splice(line_at..line_at, line.into_iter().chain([b'\n']));
            }
            _ => {
                let fragment = FRAGMENTS[rng.below(FRAGMENTS.len())];
                let mut line_at = at;
                while line_at > 0 && bytes[line_at - 1] != b'\n' {
                    line_at -= 1;
                }
                bytes.splice(line_at..line_at, fragment.bytes());
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn mutated_compositions_load_the_same_in_pieces() {
    let corpus = corpus();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cut = 0;
    let cases = 3000;
    for case in 0..cases {
        let (name, text) = &corpus[rng.below(corpus.len())];
        let mutated = mutate(&mut rng, text);
        if same_in_pieces(&mutated, &format!("case {case} (from {name})")) > 1 {
            cut += 1;
        }
    }
    // Most mutations still leave something to cut.
    assert!(cut > cases / 3, "only {cut} of {cases} inputs were cut");
}
