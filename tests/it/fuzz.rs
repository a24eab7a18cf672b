//! A fuzz target that runs offline: proptest mutates the bundled
//! compositions, and the pure commands' code path must never panic, hang or
//! crash on what comes out.
//!
//! Each input is one bundled root composition (under `examples/`,
//! `tests/data/compositions/` and `tests/data/reference/`) together with the
//! files around it (includes, `plugins/` folders, `chassis.lock`). One to
//! four mutations are applied to the composition or, now and then, to one of
//! those other files, and the whole set is written to a temporary folder
//! (one per bundled folder, outside any git work tree, its files
//! overwritten by each input). The mutations are byte flips and deletions;
//! inserted random bytes (invalid UTF-8, NUL), unicode, nasty fragments,
//! lines longer than 65,535 columns, arrays, tables and keys nested past
//! the parser's limit, huge or special numbers, odd version strings,
//! assignments of all of these to every key the format knows; truncation;
//! duplicated lines (keys, tables); lines spliced in from another bundled
//! file; other line endings.
//! Some mutations are structured: a version or specifier value replaced
//! with garbage, a required key or a table header dropped, a cycle of
//! requirements added, an include or a `prompt_file` naming something
//! nasty (a FIFO, a symbolic link loop, a directory, a device, a file
//! outside the workspace, the file itself, a path with a NUL in it), and
//! well-formed tables that load and stress the resolver instead: ambiguous
//! providers, long chains, deep scopes, rings of sub-agents, conditional
//! entries, a tool two plugins declare, `mcp` and `command` entries.
//!
//! The input then runs through the CLI's own code, in this process:
//! `app::check::check_file` (the real loader on the file system, with
//! includes relative to the temporary directory). Every diagnostic is
//! rendered as `chassis check` renders it, as text through the miette
//! handler (`cli::ui::Ui::render`, at the input's terminal width, with or
//! without colour) and as a JSON line (`cli::ui::diagnostic_json`). The
//! check summary is rendered as text and JSON. When the composition loads,
//! `snapshot` (also with `--agent`), `graph` (dot, mermaid, JSON) and
//! `explain scope|requirement|budgets` run and render too. Each input runs
//! under `catch_unwind`, on a thread with the main thread's 8 MiB stack: a
//! panic is counted, the fuzzing goes on, and the first few panicking
//! inputs are shrunk by proptest and reported at the end (their files
//! written under `$TMPDIR/chassis-fuzz-failures/`). An input that takes
//! longer than `CASE_LIMIT` fails the test as a hang (a watchdog on the
//! test's own thread). Every `SPAWN_EVERY`-th input also goes through the
//! built binary (`check` as text with colour and as JSON, `snapshot`,
//! `graph`, `explain scope`, `diff generations` of the original against
//! the mutated composition); each process must end within `PROCESS_LIMIT`
//! with an exit code in 0..=3. A crash (a signal, a stack overflow) or a
//! panic (101) is a failure.
//!
//! Runs are deterministic: a fixed seed through proptest's ChaCha RNG.
//!
//! - `CHASSIS_FUZZ_CASES=N` runs N inputs (default `DEFAULT_CASES`: 9 s
//!   alone in a debug build on two cores, 5 s added to the `it` binary's
//!   wall time; a release build runs 200–300 inputs a second);
//! - `CHASSIS_FUZZ_SEED=S` (a u64) draws other inputs.
//!
//! At the end the test prints on stderr (past the harness's capture) how
//! many inputs it ran, how many panicked and how many made the binary
//! fail. A long run:
//!
//! ```console
//! $ CHASSIS_FUZZ_CASES=100000 cargo test --release --locked --test it fuzz
//! ```
//!
//! A release build has no overflow checks; a debug run catches an
//! arithmetic overflow as a panic.

use std::backtrace::Backtrace;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use chassis::app::check::check_file;
use chassis::app::snapshot::{SnapshotOptions, snapshot};
use chassis::app::{AppError, Notice, Reporter, explain};
use chassis::cli::render;
use chassis::cli::ui::{Format, Ui, diagnostic_json, message_json};
use chassis::engine::diag::Diagnostic;
use chassis::load::SourceMap;

/// Inputs run by default: 9 s alone in a debug build on two cores, about
/// 5 s added to `cargo test`.
const DEFAULT_CASES: usize = 800;
/// The seed used unless `CHASSIS_FUZZ_SEED` says otherwise.
const DEFAULT_SEED: u64 = 24;
/// Every this many inputs, the binary runs too.
const SPAWN_EVERY: usize = 25;
/// The longest an input may take in process before it counts as a hang
/// (generous: a debug build on a loaded machine renders 90,000-character
/// lines slowly).
const CASE_LIMIT: Duration = Duration::from_secs(30);
/// The longest one `chassis` process may take.
const PROCESS_LIMIT: Duration = Duration::from_secs(30);
/// How long the shrinking of one failing input may take.
const SHRINK_LIMIT: Duration = Duration::from_secs(180);
/// How many failing inputs are shrunk and reported.
const SHRUNK_FAILURES: usize = 3;
/// The name of the thread that fuzzes (its panics are recorded, not printed).
const WORKER: &str = "chassis-fuzz";

/// The bundled compositions, each folder with every file under it.
const ROOTS: &[&str] = &[
    "examples",
    "tests/data/compositions/full",
    "tests/data/compositions/errors",
    "tests/data/reference",
];

// ---------------------------------------------------------------- corpus

/// A folder of bundled files: (path relative to the folder, contents).
struct Fixture {
    files: Vec<(PathBuf, Vec<u8>)>,
}

/// Every bundled file, and every line of their compositions (to splice).
struct Corpus {
    fixtures: Vec<Fixture>,
    /// (fixture, index of a root composition in it): the inputs' roots.
    starts: Vec<(usize, usize)>,
    lines: Vec<Vec<u8>>,
}

fn collect(dir: &Path, rel: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap();
        let bundled = path
            .extension()
            .is_some_and(|e| e == "toml" || e == "md" || e == "lock");
        if path.is_dir() {
            collect(&path, &rel.join(name), out);
        } else if path.is_file() && bundled {
            out.push((rel.join(name), std::fs::read(&path).unwrap()));
        }
    }
}

/// Whether `bytes` is a root composition (it sets `version` before its
/// first table), not a file only ever included.
fn is_root(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes)
        .lines()
        .take_while(|l| !l.starts_with('['))
        .any(|l| l.starts_with("version"))
}

fn corpus() -> Corpus {
    let root = crate::harness::root();
    let mut fixtures = Vec::new();
    let mut starts = Vec::new();
    let mut lines = Vec::new();
    for dir in ROOTS {
        let mut files = Vec::new();
        collect(&root.join(dir), Path::new(""), &mut files);
        for (i, (path, bytes)) in files.iter().enumerate() {
            if path.extension().is_some_and(|e| e == "toml") {
                if is_root(bytes) {
                    starts.push((fixtures.len(), i));
                }
                lines.extend(
                    bytes
                        .split(|&b| b == b'\n')
                        .filter(|l| !l.is_empty())
                        .map(<[u8]>::to_vec),
                );
            }
        }
        fixtures.push(Fixture { files });
    }
    assert!(starts.len() > 20, "the bundled compositions are found");
    Corpus {
        fixtures,
        starts,
        lines,
    }
}

// ---------------------------------------------------------------- inputs

/// Odd version strings and specifiers.
const VERSIONS: &[&str] = &[
    "",
    " ",
    "1",
    "1.0",
    "1.0rc1",
    "v1.2.3",
    "1.2.3-",
    "1.2.3+",
    "01.2.3",
    "1.2.3.4",
    "18446744073709551616.0.0",
    "99999999999999999999999999.1.1",
    "1.0.0-alpha..1",
    "1.0.0-ß",
    "1.0.0+build.1",
    "1.0.0-0.3.7",
    ">=1,<2",
    "~=2.1",
    "~=1",
    "^1",
    "*",
    "==1",
    "!=1",
    ">=",
    ",,,",
    ">=1,",
    "1 || 2",
    ">=1 <2",
    ">= 1 , < 2",
    "<0.0.0",
    ">99999999999999999999",
    "=",
    "~",
    "x.y.z",
    "1..2",
    "-1.0.0",
    "\u{661}.\u{662}.\u{663}",
    "1.0.0\u{0}",
    "\t1.0\n",
    "１.０.０",
    "1.0.0-\u{202e}evil",
    "1e3",
    "Infinity",
    ">=1.0.0-",
    "<=0.0.0-0",
];

/// Huge and special numbers.
const NUMBERS: &[&str] = &[
    "99999999999999999999999",
    "-9223372036854775809",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "0x7fffffffffffffff",
    "0xffffffffffffffffff",
    "0o777777777777777777777777",
    "0b1",
    "1e400",
    "-1e400",
    "nan",
    "-nan",
    "+inf",
    "-inf",
    "1_000_000_000_000",
    "-0",
    "-0.0",
    "5e-324",
    "1.7976931348623157e308",
    "00",
    "+1",
    "1__0",
    "0.1e",
    "4294967296",
    "65536",
    "65535",
    "-1",
    "0",
    "1979-05-27T07:32:00Z",
    "1979-05-27",
    "07:32:00",
    "true",
];

/// Fragments that have broken parsers and renderers elsewhere.
const FRAGMENTS: &[&str] = &[
    "\u{feff}",
    "\r",
    "\r\n",
    "\t",
    "\t\t\t\t\t\t\t\t= 1",
    "\u{2028}",
    "\u{200d}",
    "\u{202e}",
    "e\u{301}\u{301}\u{301}\u{301}",
    "漢字漢字漢字",
    "🦀👨\u{200d}👩\u{200d}👧",
    "\0",
    "\u{7f}",
    "\u{10ffff}",
    "\u{fffd}",
    "\"\"\"",
    "'''",
    "\"\"\"\nunterminated",
    "[[",
    "]]",
    "[",
    "]",
    "{",
    "}",
    "= =",
    "#",
    "\\",
    "\"\\uD800\"",
    "\"\\U0010FFFF\"",
    "\"\\U00110000\"",
    "\"\\x41\"",
    "a.b.c",
    "\"\".\"\" = 1",
    "[entries]",
    "[entries.x]",
    "[[entries]]",
    "[[entries.x]]",
    "[plugins.\"\"]",
    "[plugins.x]\nversion = \"1.0.0\"\nprovides = { \"\" = \"1.0.0\" }",
    "[scopes.\"/\"]",
    "[scopes.\"//\"]",
    "[scopes.\"/a/../b\"]",
    "[scopes.\"\"]",
    "[scopes.\"/a\"]\nprefer = { x = \"nobody\" }",
    "[agents.x]\nmodel = \"nobody\"\ntools = [\"nothing\"]",
    "[policy]\ngrants = [\"*\", \"\", \"filesystem.write:\"]",
    "include = []",
    "include = [1]",
    "version = 2",
    "version = 0",
    "version = -1",
    "version = \"1\"",
    "version = 1\nversion = 1",
    "x = { a = 1, a = 2 }",
    "x = [1, \"a\", { b = [] }]",
    "[entries.e]\nconfig = { secret = \"\" }",
    "[entries.e]\nenabled_if = { env = \"\" }",
    "[entries.e]\non_failure = \"explode\"",
];

/// What an include or `prompt_file` names (see [`specials`]).
const TARGETS: &[&str] = &[
    "fifo.toml",
    "loop.toml",
    "dir.toml",
    "missing.toml",
    "../outside.toml",
    "/etc/hostname",
    "/dev/zero",
    "link-out.toml",
    "dev-zero.toml",
    "dev-null.toml",
    "<self>",
    "sub/",
    "sub",
    "sub/a.toml",
    "sub/back.toml",
    "sub/f.toml",
    "",
    ".",
    "./",
    "*.toml",
    "a\0b.toml",
    "<long-name>",
    "<long-path>",
    "ünï©ødé.toml",
    "sub/../fifo.toml",
];

/// Something to insert: its bytes depend on whether it is written as a
/// line or as the value of a key.
#[derive(Clone, Debug)]
enum Snippet {
    /// Random bytes: invalid UTF-8, NUL, control characters.
    Bytes(Vec<u8>),
    /// Random unicode (a basic string as a value).
    Text(String),
    /// One of [`FRAGMENTS`].
    Fragment(usize),
    /// A line of `len` characters of some `kind`.
    Long { kind: u8, len: usize },
    /// Arrays, tables or keys nested `depth` deep.
    Nest { kind: u8, depth: usize },
    /// One of [`NUMBERS`].
    Number(usize),
    /// One of [`VERSIONS`] (a string).
    Version(usize),
}

/// One mutation; positions are taken modulo the file's length or line count.
#[derive(Clone, Debug)]
enum Edit {
    /// Flip one bit of a byte.
    Flip { at: usize, bit: u8 },
    /// Insert a snippet at a byte offset.
    Insert { at: usize, snippet: Snippet },
    /// Insert a snippet as a line of its own.
    InsertLine { line: usize, snippet: Snippet },
    /// Insert `key = value` as a line (into whatever table is there).
    Assign {
        line: usize,
        key: usize,
        value: Snippet,
    },
    /// Delete up to `len` bytes.
    Delete { at: usize, len: usize },
    /// Cut the file short.
    Truncate { at: usize },
    /// Insert a line of another bundled file.
    Splice { line: usize, from: usize },
    /// Repeat a line (a duplicate key or table).
    DuplicateLine { line: usize },
    /// Replace a version, specifier or other value with garbage.
    GarbageValue { nth: usize, value: Snippet },
    /// Drop a line that sets a key the format needs.
    DropKey { nth: usize },
    /// Drop a table header.
    DropHeader { nth: usize },
    /// Append plugins that require each other in a ring of `len`.
    Cycle {
        len: usize,
        scoped: bool,
        optional: bool,
    },
    /// Make an include (or an agent's `prompt_file`) name one of [`TARGETS`].
    Include { target: usize, prompt: bool },
    /// `\n` becomes `\r\n` (0), `\r` (1) or nothing (2).
    LineEndings(u8),
    /// Append well-formed tables of some `kind`, `n` times: ambiguous
    /// providers, a ring of sub-agents, a deep scope, a long chain of
    /// requirements, conditional entries, a tool two plugins declare,
    /// `mcp` and `command` entries.
    Append { kind: u8, n: usize },
}

/// One fuzz input.
#[derive(Clone, Debug)]
struct Case {
    /// Which composition (modulo the corpus's roots).
    start: usize,
    /// Mutate another file of its folder (modulo their count) instead.
    other: Option<usize>,
    edits: Vec<Edit>,
    /// The terminal width diagnostics are rendered at (`COLUMNS`).
    width: usize,
    color: bool,
    /// Which scope, agent and requirement `explain` and `snapshot` pick.
    pick: usize,
}

fn snippet() -> impl Strategy<Value = Snippet> {
    let long_len = prop_oneof![0usize..=300, 900usize..=1_100, 65_000usize..=90_000];
    let depth = prop_oneof![1usize..=40, 75usize..=90, 100usize..=3_000];
    prop_oneof![
        3 => vec(any::<u8>(), 0..48).prop_map(Snippet::Bytes),
        3 => vec(any::<char>(), 0..24).prop_map(|c| Snippet::Text(c.into_iter().collect())),
        4 => (0..FRAGMENTS.len()).prop_map(Snippet::Fragment),
        2 => (0u8..10, long_len).prop_map(|(kind, len)| Snippet::Long { kind, len }),
        2 => (0u8..7, depth).prop_map(|(kind, depth)| Snippet::Nest { kind, depth }),
        2 => (0..NUMBERS.len()).prop_map(Snippet::Number),
        3 => (0..VERSIONS.len()).prop_map(Snippet::Version),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Edit::Flip { at, bit }),
        3 => (any::<usize>(), snippet()).prop_map(|(at, snippet)| Edit::Insert { at, snippet }),
        3 => (any::<usize>(), snippet())
            .prop_map(|(line, snippet)| Edit::InsertLine { line, snippet }),
        4 => (any::<usize>(), any::<usize>(), snippet())
            .prop_map(|(line, key, value)| Edit::Assign { line, key, value }),
        2 => (any::<usize>(), 1usize..64).prop_map(|(at, len)| Edit::Delete { at, len }),
        1 => any::<usize>().prop_map(|at| Edit::Truncate { at }),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(line, from)| Edit::Splice { line, from }),
        2 => any::<usize>().prop_map(|line| Edit::DuplicateLine { line }),
        3 => (any::<usize>(), snippet()).prop_map(|(nth, value)| Edit::GarbageValue { nth, value }),
        2 => any::<usize>().prop_map(|nth| Edit::DropKey { nth }),
        1 => any::<usize>().prop_map(|nth| Edit::DropHeader { nth }),
        2 => (1usize..=6, any::<bool>(), any::<bool>())
            .prop_map(|(len, scoped, optional)| Edit::Cycle { len, scoped, optional }),
        2 => (0..TARGETS.len(), prop::bool::weighted(0.25))
            .prop_map(|(target, prompt)| Edit::Include { target, prompt }),
        1 => (0u8..3).prop_map(Edit::LineEndings),
        2 => append(),
    ]
}

fn append() -> impl Strategy<Value = Edit> {
    // Hundreds, not thousands: a diagnostic with thousands of labels (a
    // requirement with as many candidates) renders in quadratic time, each
    // label's position found by a scan of the window from its start (2 s
    // at 4,000 labels in a release build); that is slow, not broken.
    (0u8..8, prop_oneof![8 => 1usize..=8, 1 => 50usize..=300])
        .prop_map(|(kind, n)| Edit::Append { kind, n })
}

/// Mutations that keep the file well-formed TOML (mostly), so that more
/// inputs load and reach the resolver, `snapshot` and `explain`.
fn structured_edit() -> impl Strategy<Value = Edit> {
    let value = prop_oneof![
        (0..VERSIONS.len()).prop_map(Snippet::Version),
        (0..NUMBERS.len()).prop_map(Snippet::Number),
        vec(any::<char>(), 0..24).prop_map(|c| Snippet::Text(c.into_iter().collect())),
        (prop::sample::select(vec![0u8, 2, 3, 4, 5]), 1usize..=100)
            .prop_map(|(kind, depth)| Snippet::Nest { kind, depth }),
    ];
    prop_oneof![
        4 => (any::<usize>(), value.clone())
            .prop_map(|(nth, value)| Edit::GarbageValue { nth, value }),
        2 => (any::<usize>(), any::<usize>(), value)
            .prop_map(|(line, key, value)| Edit::Assign { line, key, value }),
        2 => any::<usize>().prop_map(|nth| Edit::DropKey { nth }),
        1 => any::<usize>().prop_map(|nth| Edit::DropHeader { nth }),
        2 => (1usize..=6, any::<bool>(), any::<bool>())
            .prop_map(|(len, scoped, optional)| Edit::Cycle { len, scoped, optional }),
        2 => (0..TARGETS.len(), prop::bool::weighted(0.25))
            .prop_map(|(target, prompt)| Edit::Include { target, prompt }),
        4 => append(),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        any::<usize>(),
        prop::option::weighted(0.15, any::<usize>()),
        prop_oneof![
            3 => vec(edit(), 1..=4),
            2 => vec(structured_edit(), 1..=3),
            1 => vec(prop_oneof![
                (1usize..=6, any::<bool>(), any::<bool>())
                    .prop_map(|(len, scoped, optional)| Edit::Cycle { len, scoped, optional }),
                append(),
            ], 1..=2),
        ],
        prop_oneof![3 => Just(100usize), 1 => 0usize..=300],
        any::<bool>(),
        any::<usize>(),
    )
        .prop_map(|(start, other, edits, width, color, pick)| Case {
            start,
            other,
            edits,
            width,
            color,
            pick,
        })
}

// ---------------------------------------------------------------- mutation

/// `text` as a TOML basic string.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Snippet {
    /// The bytes, written as a line (`as_value = false`) or as the value of
    /// a key.
    fn bytes(&self, as_value: bool) -> Vec<u8> {
        let text = match self {
            Snippet::Bytes(b) => return b.clone(),
            Snippet::Text(t) if as_value => quoted(t),
            Snippet::Text(t) => t.clone(),
            Snippet::Fragment(i) => FRAGMENTS[i % FRAGMENTS.len()].to_owned(),
            Snippet::Number(i) if as_value => NUMBERS[i % NUMBERS.len()].to_owned(),
            Snippet::Number(i) => format!("n = {}", NUMBERS[i % NUMBERS.len()]),
            Snippet::Version(i) if as_value => quoted(VERSIONS[i % VERSIONS.len()]),
            Snippet::Version(i) => format!("version = {}", quoted(VERSIONS[i % VERSIONS.len()])),
            Snippet::Long { kind, len } => long(*kind, *len, as_value),
            Snippet::Nest { kind, depth } => nest(*kind, *depth, as_value),
        };
        text.into_bytes()
    }
}

fn long(kind: u8, len: usize, as_value: bool) -> String {
    let a = "a".repeat(len);
    let (line, value) = match kind {
        0 => (format!("longkey = \"{a}\""), format!("\"{a}\"")),
        // The shape that panicked in miette: an error past column 65,535.
        1 => (format!("x = \"{a}\" = 3"), format!("\"{a}\" = 3")),
        2 => (format!("# {a}"), format!("1 # {a}")),
        3 => {
            let e = "é".repeat(len);
            (format!("k = \"{e}\""), format!("\"{e}\""))
        }
        4 => {
            let ones = "1,".repeat(len / 2);
            (format!("k = [{ones}"), format!("[{ones}"))
        }
        5 => (a.clone(), a),
        6 => (format!("\"{a}\" = 1"), format!("{{ \"{a}\" = 1 }}")),
        7 => {
            let tabs = "\t".repeat(len);
            (format!("{tabs}= 1"), format!("\"{tabs}\" x"))
        }
        8 => (format!("= {a}"), format!("= {a}")),
        _ => {
            let wide = "漢".repeat(len);
            (format!("k = \"{wide}\" ="), format!("\"{wide}\" ="))
        }
    };
    if as_value { value } else { line }
}

fn nest(kind: u8, depth: usize, as_value: bool) -> String {
    let value = match kind {
        0 => format!("{}{}", "[".repeat(depth), "]".repeat(depth)),
        1 => "[".repeat(depth),
        2 => format!("{}1{}", "{ a = ".repeat(depth), " }".repeat(depth)),
        3 => format!("{{ {} = 1 }}", vec!["a"; depth].join(".")),
        4 => format!("{}1{}", "[{ a = ".repeat(depth), " }]".repeat(depth)),
        5 => format!("{}1{}", "{ a = [".repeat(depth), "] }".repeat(depth)),
        _ => format!(
            "{}{}",
            "[".repeat(depth),
            "]".repeat(depth.saturating_sub(1))
        ),
    };
    if as_value {
        return value;
    }
    match kind {
        3 => format!("[{}]", vec!["a"; depth].join(".")),
        5 => format!("{} = 1", vec!["a"; depth].join(".")),
        6 => format!("[[{}]]", vec!["a"; depth].join(".")),
        _ => format!("x = {value}"),
    }
}

/// Every key the format knows, and a few it does not.
fn keys() -> Vec<String> {
    let mut keys: Vec<String> = chassis::load::TABLE_KEYS
        .iter()
        .flat_map(|(_, keys)| keys.iter().map(|k| (*k).to_owned()))
        .collect();
    keys.extend(
        [
            "config.x",
            "budget.tokens",
            "budget.model_calls",
            "metadata.owner",
            "provides.database",
            "requires.database",
            "\"\"",
            "a.b.c",
            "\"\u{202e}\"",
        ]
        .map(str::to_owned),
    );
    keys
}

/// Byte offsets of the starts of `bytes`'s lines (and its end).
fn line_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1),
    );
    if *starts.last().unwrap() != bytes.len() {
        starts.push(bytes.len());
    }
    starts
}

/// The byte range of line `n` (modulo the line count), without its `\n`.
fn line_range(bytes: &[u8], n: usize) -> Option<(usize, usize)> {
    let starts = line_starts(bytes);
    if starts.len() < 2 {
        return None;
    }
    let i = n % (starts.len() - 1);
    let end = starts[i + 1];
    let end = if end > starts[i] && bytes[end - 1] == b'\n' {
        end - 1
    } else {
        end
    };
    Some((starts[i], end))
}

/// Insert `line` (plus a newline) before line `n` (modulo the line count + 1).
fn insert_line(bytes: &mut Vec<u8>, n: usize, line: &[u8]) {
    let starts = line_starts(bytes);
    let mut at = starts[n % starts.len()];
    let mut text = line.to_vec();
    if at == bytes.len() && !bytes.is_empty() && !bytes.ends_with(b"\n") {
        text.insert(0, b'\n');
    } else {
        text.push(b'\n');
    }
    at = at.min(bytes.len());
    bytes.splice(at..at, text);
}

/// The lines that set a key the format needs (or a table header, `header`).
fn lines_matching(bytes: &[u8], header: bool) -> Vec<(usize, usize)> {
    const NEEDED: &[&str] = &[
        "version",
        "plugin",
        "provides",
        "requires",
        "optional",
        "name",
        "include",
        "scope",
        "tools",
        "model",
        "prompt",
        "capabilities",
        "kind",
        "command",
        "args",
        "turns",
        "url",
        "grants",
        "prefer",
        "config",
    ];
    let starts = line_starts(bytes);
    let mut out = Vec::new();
    for w in starts.windows(2) {
        let line = &bytes[w[0]..w[1]];
        let trimmed = String::from_utf8_lossy(line);
        let trimmed = trimmed.trim_start();
        let hit = if header {
            trimmed.starts_with('[')
        } else {
            NEEDED.iter().any(|k| {
                trimmed
                    .strip_prefix(k)
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            })
        };
        if hit {
            out.push((w[0], w[1]));
        }
    }
    out
}

/// Quoted strings that look like a version or a specifier, and bare
/// integers after `= ` (the format's `version = 1`).
fn values(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'"' {
            let end = bytes[i + 1..]
                .iter()
                .position(|&b| b == b'"' || b == b'\n')
                .map(|p| i + 1 + p);
            match end {
                Some(end) if bytes[end] == b'"' => {
                    let first = bytes.get(i + 1).copied().unwrap_or(b'"');
                    if first.is_ascii_digit() || b"<>=~^*!\"".contains(&first) {
                        out.push((i, end + 1));
                    }
                    i = end + 1;
                }
                Some(end) => i = end + 1,
                None => break,
            }
        } else if bytes[i..].starts_with(b"= ") && bytes.get(i + 2).is_some_and(u8::is_ascii_digit)
        {
            let start = i + 2;
            let len = bytes[start..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            out.push((start, start + len));
            i = start + len;
        } else {
            i += 1;
        }
    }
    out
}

fn cycle(len: usize, scoped: bool, optional: bool) -> String {
    let mut out = String::from("\n");
    let field = if optional { "optional" } else { "requires" };
    for i in 0..len {
        let next = (i + 1) % len;
        out.push_str(&format!(
            "[plugins.fz-cycle-{i}]\nversion = \"1.0.0\"\n\
             provides = {{ fz-cap-{i} = \"1.0.0\" }}\n{field} = {{ fz-cap-{next} = \">=1\" }}\n\n\
             [entries.fz-cycle-{i}]\n"
        ));
        if scoped {
            out.push_str("scope = \"/fz\"\n");
        }
        out.push('\n');
    }
    if scoped {
        out.push_str("[scopes.\"/fz\"]\nrequires = { fz-cap-0 = \">=1\" }\n");
    }
    out
}

fn appended(kind: u8, n: usize) -> String {
    let mut out = String::from("\n");
    let mut push = |text: String| out.push_str(&text);
    match kind % 8 {
        0 => {
            for i in 0..n {
                push(format!(
                    "[plugins.fz-db-{i}]\nversion = \"{i}.0.0\"\n\
                     provides = {{ database = \"1.{i}.0\" }}\n[entries.fz-db-{i}]\n\n"
                ));
            }
            push(
                "[plugins.fz-user]\nversion = \"1.0.0\"\n\
                 requires = { database = \">=1\" }\n[entries.fz-user]\n"
                    .to_owned(),
            );
        }
        1 => {
            for i in 0..n {
                push(format!(
                    "[agents.fz-a{i}]\nprompt = \"x\"\nsub_agents = [\"fz-a{}\"]\n\
                     budget = {{ tokens = {i} }}\n\n",
                    (i + 1) % n
                ));
            }
        }
        2 => {
            let path = "/s".repeat(n.min(500));
            push(format!(
                "[scopes.\"{path}\"]\nrequires = {{ database = \">=1\" }}\n\
                 prefer = {{ database = \"nobody\" }}\n\n\
                 [plugins.fz-deep]\nversion = \"1.0.0\"\nrequires = {{ database = \">=1\" }}\n\n\
                 [entries.fz-deep]\nscope = \"{path}\"\n"
            ));
        }
        3 => {
            for i in 0..n {
                push(format!(
                    "[plugins.fz-c{i}]\nversion = \"1.0.0\"\nprovides = {{ fz-c{i} = \"1.0.0\" }}\n"
                ));
                if i + 1 < n {
                    push(format!("requires = {{ fz-c{} = \">=1\" }}\n", i + 1));
                }
                push(format!("[entries.fz-c{i}]\n\n"));
            }
        }
        4 => {
            for i in 0..n {
                let var = if i % 2 == 0 {
                    "PATH"
                } else {
                    "CHASSIS_FUZZ_UNSET"
                };
                push(format!(
                    "[plugins.fz-if{i}]\nversion = \"1.0.0\"\n\
                     provides = {{ fz-if = \"1.0.{i}\" }}\nrequires = {{ fz-if = \">=1\" }}\n\
                     [entries.fz-if{i}]\nenabled_if = {{ env = \"{var}\" }}\n\n"
                ));
            }
        }
        5 => {
            for i in 0..n {
                push(format!(
                    "[plugins.fz-t{i}]\nversion = \"1.0.0\"\npermissions = [\"fz.perm:{i}\"]\n\
                     [[plugins.fz-t{i}.tools]]\nname = \"fz-dup\"\ndescription = \"d\"\n\
                     args = {{ type = \"object\", properties = \
                     {{ a = {{ type = \"string\", pattern = \"(a+)+$\" }} }} }}\n\
                     [entries.fz-t{i}]\n\n"
                ));
            }
        }
        6 => {
            for i in 0..n {
                push(format!(
                    "[entries.fz-mcp{i}]\nplugin = \"mcp\"\n\
                     config = {{ command = \"/bin/false\", expect_tools = [\"t{i}\"] }}\n\n"
                ));
            }
        }
        _ => {
            for i in 0..n {
                push(format!(
                    "[entries.fz-cmd{i}]\nplugin = \"command\"\n\
                     [[entries.fz-cmd{i}.config.tools]]\nname = \"fz-t{i}\"\ndescription = \"x\"\n\
                     argv = [\"{{/a}}\", \"--\", \"{{/b}}\"]\n\
                     args = {{ type = \"object\" }}\n\n"
                ));
            }
        }
    }
    out
}

fn target_name(target: usize, main_name: &str) -> String {
    match TARGETS[target % TARGETS.len()] {
        "<self>" => main_name.to_owned(),
        "<long-name>" => format!("{}.toml", "n".repeat(300)),
        "<long-path>" => format!("{}x.toml", "d/".repeat(3_000)),
        t => t.to_owned(),
    }
}

fn apply(edit: &Edit, bytes: &mut Vec<u8>, corpus: &Corpus, keys: &[String], main_name: &str) {
    let len = bytes.len();
    match edit {
        Edit::Flip { at, bit } => {
            if len > 0 {
                bytes[at % len] ^= 1 << (bit % 8);
            }
        }
        Edit::Insert { at, snippet } => {
            let at = at % (len + 1);
            bytes.splice(at..at, snippet.bytes(false));
        }
        Edit::InsertLine { line, snippet } => insert_line(bytes, *line, &snippet.bytes(false)),
        Edit::Assign { line, key, value } => {
            let mut text = format!("{} = ", keys[key % keys.len()]).into_bytes();
            text.extend(value.bytes(true));
            insert_line(bytes, *line, &text);
        }
        Edit::Delete { at, len: n } => {
            if len > 0 {
                let at = at % len;
                bytes.drain(at..(at + n).min(len));
            }
        }
        Edit::Truncate { at } => bytes.truncate(at % (len + 1)),
        Edit::Splice { line, from } => {
            let spliced = corpus.lines[from % corpus.lines.len()].clone();
            insert_line(bytes, *line, &spliced);
        }
        Edit::DuplicateLine { line } => {
            if let Some((s, e)) = line_range(bytes, *line) {
                let copy = bytes[s..e].to_vec();
                insert_line(bytes, *line, &copy);
            }
        }
        Edit::GarbageValue { nth, value } => {
            let found = values(bytes);
            if !found.is_empty() {
                let (s, e) = found[nth % found.len()];
                bytes.splice(s..e, value.bytes(true));
            }
        }
        Edit::DropKey { nth } | Edit::DropHeader { nth } => {
            let found = lines_matching(bytes, matches!(edit, Edit::DropHeader { .. }));
            if !found.is_empty() {
                let (s, e) = found[nth % found.len()];
                bytes.drain(s..e);
            }
        }
        Edit::Cycle {
            len: n,
            scoped,
            optional,
        } => bytes.extend(cycle(*n, *scoped, *optional).into_bytes()),
        Edit::Include { target, prompt } => {
            let name = quoted(&target_name(*target, main_name));
            if *prompt {
                bytes.extend(
                    format!("\n[agents.fz-agent]\nprompt_file = {name}\nmodel = \"model\"\n")
                        .into_bytes(),
                );
            } else if let Some(at) = find(bytes, b"\ninclude = [") {
                let at = at + b"\ninclude = [".len();
                bytes.splice(at..at, format!("{name}, ").into_bytes());
            } else {
                bytes.splice(0..0, format!("include = [{name}]\n").into_bytes());
            }
        }
        Edit::Append { kind, n } => bytes.extend(appended(*kind, *n).into_bytes()),
        Edit::LineEndings(kind) => {
            let to: &[u8] = match kind % 3 {
                0 => b"\r\n",
                1 => b"\r",
                _ => b"",
            };
            let mut out = Vec::with_capacity(len + len / 8);
            for &b in bytes.iter() {
                if b == b'\n' {
                    out.extend_from_slice(to);
                } else {
                    out.push(b);
                }
            }
            *bytes = out;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A case's files, ready to write.
struct Input {
    /// Which folder of the corpus they come from.
    fixture: usize,
    files: Vec<(PathBuf, Vec<u8>)>,
    /// The root composition, relative to the folder.
    main: PathBuf,
    /// The root composition as bundled (the old side of `diff`).
    original: Vec<u8>,
}

fn materialize(corpus: &Corpus, keys: &[String], case: &Case) -> Input {
    let (fixture, main) = corpus.starts[case.start % corpus.starts.len()];
    let mut files = corpus.fixtures[fixture].files.clone();
    let target = case.other.map_or(main, |o| o % files.len());
    let main_path = files[main].0.clone();
    let original = files[main].1.clone();
    let main_name = main_path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let bytes = &mut files[target].1;
    for edit in &case.edits {
        apply(edit, bytes, corpus, keys, &main_name);
    }
    Input {
        fixture,
        files,
        main: main_path,
        original,
    }
}

/// The nasty things an include may name, beside the root compositions of
/// `dir` ([`point_back`] makes `sub/a.toml` include the one under test).
fn specials(dir: &Path) -> std::io::Result<()> {
    use nix::sys::stat::Mode;
    use std::os::unix::fs::symlink;
    let fifo = |p: &Path| {
        nix::unistd::mkfifo(p, Mode::S_IRUSR | Mode::S_IWUSR).map_err(std::io::Error::from)
    };
    fifo(&dir.join("fifo.toml"))?;
    symlink("loop.toml", dir.join("loop.toml"))?;
    std::fs::create_dir(dir.join("dir.toml"))?;
    std::fs::write(dir.join("dir.toml/inner.toml"), "version = 1\n")?;
    symlink("/etc/hostname", dir.join("link-out.toml"))?;
    symlink("/dev/zero", dir.join("dev-zero.toml"))?;
    symlink("/dev/null", dir.join("dev-null.toml"))?;
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub)?;
    std::fs::write(sub.join("a.toml"), "version = 1\n")?;
    fifo(&sub.join("f.toml"))?;
    // Two spellings of one file.
    symlink("a.toml", sub.join("back.toml"))?;
    std::fs::write(
        dir.join("ünï©ødé.toml"),
        "version = 1\n[plugins.\"ü\"]\nversion = \"1.0.0\"\n",
    )?;
    Ok(())
}

/// Make `sub/a.toml` include `main` (an include cycle through `sub/`).
fn point_back(dir: &Path, main: &Path) {
    let name = main.file_name().unwrap().to_string_lossy();
    let text = format!(
        "version = 1\ninclude = [{}]\n",
        quoted(&format!("../{name}"))
    );
    let sub = dir.join(main.parent().unwrap()).join("sub");
    std::fs::write(sub.join("a.toml"), text).unwrap();
}

/// Write `input`'s files, and the [`specials`] beside every root
/// composition of its folder, in the empty folder `dir`.
fn populate(dir: &Path, corpus: &Corpus, input: &Input) {
    let mut dirs = std::collections::BTreeSet::new();
    for (path, bytes) in &input.files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    for &(fixture, main) in &corpus.starts {
        if fixture == input.fixture {
            let main_dir = dir.join(corpus.fixtures[fixture].files[main].0.parent().unwrap());
            if dirs.insert(main_dir.clone()) {
                specials(&main_dir).unwrap();
            }
        }
    }
    point_back(dir, &input.main);
}

/// One folder per corpus folder, reused by every input: its files are
/// overwritten in place, never created and deleted for each input (ext4
/// creates files slower and slower among thousands just deleted: the
/// 2,000th input spent 10 ms on that alone).
struct Scratch {
    base: tempfile::TempDir,
    populated: Vec<bool>,
}

impl Scratch {
    fn new(corpus: &Corpus) -> Self {
        Self {
            base: tempfile::tempdir().unwrap(),
            populated: vec![false; corpus.fixtures.len()],
        }
    }

    /// Where `input` is written (its folder of the corpus).
    fn root(&self, input: &Input) -> PathBuf {
        self.base.path().join(format!("f{}", input.fixture))
    }

    /// Write `input`; its folder.
    fn prepare(&mut self, corpus: &Corpus, input: &Input) -> PathBuf {
        let root = self.root(input);
        if self.populated[input.fixture] {
            for (path, bytes) in &input.files {
                std::fs::write(root.join(path), bytes).unwrap();
            }
            point_back(&root, &input.main);
        } else {
            populate(&root, corpus, input);
            self.populated[input.fixture] = true;
        }
        root
    }
}

// ---------------------------------------------------------------- running

/// Renders every notice the way the CLI does, into nothing.
struct Sink {
    ui: Ui,
    rendered: Mutex<usize>,
}

impl Sink {
    fn diagnostics(&self, diagnostics: &[Diagnostic], sources: &SourceMap) {
        for d in diagnostics {
            let text = self.ui.render(d, sources);
            let json = diagnostic_json(d, sources).to_string();
            assert!(!text.is_empty() && !json.is_empty());
            *self.rendered.lock().unwrap() += 1;
        }
    }

    /// A failed operation, as `error: …` and as a JSON line.
    fn error(&self, e: &AppError) {
        let text = format!("error: {e}");
        let json = message_json("error", None, &text, &[]).to_string();
        assert!(!json.is_empty());
    }
}

impl Reporter for Sink {
    fn notice(&self, notice: Notice<'_>) {
        match notice {
            Notice::Diagnostics {
                diagnostics,
                sources,
            } => self.diagnostics(diagnostics, sources),
            Notice::Error(e) => self.error(e),
            _ => {}
        }
    }
}

/// What one input did in process.
#[derive(Default)]
struct Ran {
    loaded: bool,
    diagnostics: usize,
}

/// The pure commands on `file`, in process, everything rendered.
fn run_pure(file: &Path, case: &Case) -> Ran {
    let sink = Sink {
        ui: Ui {
            format: Format::Text,
            color: case.color,
            width: case.width,
            quiet: false,
        },
        rendered: Mutex::new(0),
    };
    let report = match check_file(file, &sink) {
        Ok(report) => report,
        Err(e) => {
            sink.error(&e);
            return Ran {
                loaded: false,
                diagnostics: *sink.rendered.lock().unwrap(),
            };
        }
    };
    sink.diagnostics(&report.findings, &report.workspace.sources);
    let _ = render::check::check_text(&report);
    let _ = render::check::check_json(&report).to_string();
    let ws = &report.workspace;
    let _ = render::graph::dot(ws);
    let _ = render::graph::mermaid(ws);
    let _ = render::graph::json(ws).to_string();

    let pick = |n: usize| case.pick % n.max(1);
    let agent = ws
        .composition
        .agents
        .keys()
        .nth(pick(ws.composition.agents.len()));
    for agent in [None, agent.cloned()] {
        let options = SnapshotOptions {
            file: file.to_path_buf(),
            agent,
            request_tools: None,
            out: None,
        };
        match snapshot(&options, &sink) {
            Ok(outcome) => {
                let _ = serde_json::to_string_pretty(&outcome.document());
            }
            Err(e) => sink.error(&e),
        }
    }
    let scope = ws
        .composition
        .scopes
        .keys()
        .nth(pick(ws.composition.scopes.len()))
        .map(|s| s.as_str().to_owned());
    for path in ["/".to_owned(), "/fz/nowhere".to_owned()]
        .into_iter()
        .chain(scope)
    {
        match explain::scope_in(&explain::View::of(ws), &path) {
            Ok(r) => {
                let _ = render::explain::scope_text(&r);
                let _ = render::explain::scope_json(&r).to_string();
            }
            Err(e) => sink.error(&e),
        }
    }
    let resolutions = &ws.plan.resolutions;
    let requirement = resolutions.get(pick(resolutions.len())).map(|r| {
        (
            r.consumer.name().to_owned(),
            r.requirement.capability.to_string(),
        )
    });
    if let Some((consumer, capability)) = requirement {
        match explain::requirement_in(&explain::View::of(ws), &consumer, &capability, None) {
            Ok(r) => {
                let _ = render::explain::requirement_text(&r);
                let _ = render::explain::requirement_json(&r).to_string();
            }
            Err(e) => sink.error(&e),
        }
    }
    match explain::budgets_in(&explain::View::of(ws), None) {
        Ok(agents) => {
            let _ = render::budgets::text(&agents);
            let _ = render::budgets::json(&agents).to_string();
        }
        Err(e) => sink.error(&e),
    }
    let diagnostics = *sink.rendered.lock().unwrap();
    Ran {
        loaded: true,
        diagnostics,
    }
}

/// The exit code of `chassis ARGS` in `dir`, or why it is not one (its
/// output goes to files in `out_dir`).
fn run_process(dir: &Path, out_dir: &Path, args: &[&str], width: usize) -> Result<i32, String> {
    use std::os::unix::process::ExitStatusExt;
    let out = out_dir.join("stdout.txt");
    let err = out_dir.join("stderr.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_chassis"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("COLUMNS", width.to_string())
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .map_err(|e| format!("cannot start chassis: {e}"))?;
    let deadline = Instant::now() + PROCESS_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "`chassis {}` did not finish within {PROCESS_LIMIT:?}",
                args.join(" ")
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let tail = || {
        let text = std::fs::read(&err).unwrap_or_default();
        String::from_utf8_lossy(&text[text.len().saturating_sub(3_000)..]).into_owned()
    };
    match status.code() {
        Some(code @ 0..=3) => Ok(code),
        Some(code) => Err(format!(
            "`chassis {}` exited with {code}:\n{}",
            args.join(" "),
            tail()
        )),
        None => Err(format!(
            "`chassis {}` was killed by signal {:?}:\n{}",
            args.join(" "),
            status.signal(),
            tail()
        )),
    }
}

/// The pure commands through the binary; the exit codes.
fn run_binary(dir: &Path, out_dir: &Path, input: &Input, width: usize) -> Result<Vec<i32>, String> {
    let main = input.main.to_string_lossy().into_owned();
    let orig = input
        .main
        .with_file_name(format!(
            "{}.orig.toml",
            input.main.file_stem().unwrap().to_string_lossy()
        ))
        .to_string_lossy()
        .into_owned();
    std::fs::write(dir.join(&orig), &input.original).unwrap();
    let commands: [&[&str]; 6] = [
        &["--color", "always", "check", &main],
        &["--format", "json", "check", &main],
        &["snapshot", &main],
        &["--format", "mermaid", "graph", &main],
        &["explain", "scope", "/", &main],
        &["diff", "generations", &orig, &main],
    ];
    let exits = commands
        .iter()
        .map(|args| run_process(dir, out_dir, args, width))
        .collect();
    // Later inputs list this folder (`include = ["./"]`) without it.
    std::fs::remove_file(dir.join(&orig)).unwrap();
    exits
}

/// How an input failed.
enum Failure {
    Panic {
        message: String,
        location: String,
        backtrace: String,
    },
    Exit(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Panic {
                message,
                location,
                backtrace,
            } => write!(f, "panicked at {location}: {message}\n{backtrace}"),
            Failure::Exit(why) => f.write_str(why),
        }
    }
}

thread_local! {
    /// Where the last panic of the fuzzing thread happened, with its backtrace.
    static LAST_PANIC: RefCell<Option<(String, Backtrace)>> = const { RefCell::new(None) };
}

/// Record the fuzzing thread's panics instead of printing them (shrinking
/// panics hundreds of times); other threads' go to the previous hook.
fn install_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some(WORKER) {
                let location = info.location().map(|l| l.to_string()).unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some((location, Backtrace::force_capture())));
            } else {
                previous(info);
            }
        }));
    });
}

/// What is running now, for the watchdog.
#[derive(Default)]
struct Progress {
    current: Option<(usize, Instant, Case)>,
}

/// Tallies.
#[derive(Default)]
struct Summary {
    inputs: usize,
    panics: usize,
    bad_exits: usize,
    loaded: usize,
    diagnostics: usize,
    spawned_inputs: usize,
    exits: BTreeMap<i32, usize>,
    /// (input number, shrunk case, its failure, where its files were written).
    shrunk: Vec<(usize, Case, Failure, String)>,
}

/// Run `case`: in process always, through the binary when `spawn`.
fn check_case(
    corpus: &Corpus,
    keys: &[String],
    scratch: &mut Scratch,
    case: &Case,
    number: usize,
    spawn: bool,
    progress: &Mutex<Progress>,
) -> Result<(Ran, Vec<i32>), Failure> {
    let input = materialize(corpus, keys, case);
    let dir = scratch.prepare(corpus, &input);
    let file = dir.join(&input.main);
    progress.lock().unwrap().current = Some((number, Instant::now(), case.clone()));
    LAST_PANIC.with(|p| p.borrow_mut().take());
    let ran = catch_unwind(AssertUnwindSafe(|| run_pure(&file, case)));
    progress.lock().unwrap().current = None;
    let ran = ran.map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a non-string panic)".to_owned());
        let (location, backtrace) = LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .map(|(l, b)| (l, b.to_string()))
            .unwrap_or_default();
        Failure::Panic {
            message,
            location,
            backtrace,
        }
    })?;
    let exits = if spawn {
        run_binary(&dir, scratch.base.path(), &input, case.width).map_err(Failure::Exit)?
    } else {
        Vec::new()
    };
    Ok((ran, exits))
}

/// Write `case`'s files where a person can run `chassis` on them.
fn save(corpus: &Corpus, keys: &[String], case: &Case, name: &str) -> String {
    // Not under `target/`: inside the git work tree, includes may reach
    // further than from a temporary folder.
    let dir = std::env::temp_dir()
        .join("chassis-fuzz-failures")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let input = materialize(corpus, keys, case);
    populate(&dir, corpus, &input);
    dir.join(&input.main).display().to_string()
}

/// Shrink the failing input `tree` (first failure `failure`) with proptest.
fn shrink(
    mut tree: impl ValueTree<Value = Case>,
    failure: Failure,
    mut fails: impl FnMut(&Case) -> Option<Failure>,
) -> (Case, Failure) {
    let mut best = (tree.current(), failure);
    let deadline = Instant::now() + SHRINK_LIMIT;
    if !tree.simplify() {
        return best;
    }
    while Instant::now() < deadline {
        let case = tree.current();
        match fails(&case) {
            Some(f) => {
                best = (case, f);
                if !tree.simplify() {
                    break;
                }
            }
            None => {
                if !tree.complicate() {
                    break;
                }
            }
        }
    }
    best
}

fn fuzz(cases: usize, seed: u64, progress: &Mutex<Progress>) -> Summary {
    let corpus = corpus();
    let keys = keys();
    let config = Config {
        cases: u32::try_from(cases).unwrap_or(u32::MAX),
        failure_persistence: None,
        ..Config::default()
    };
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&seed.to_le_bytes());
    }
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let strategy = case();
    let mut scratch = Scratch::new(&corpus);
    let mut summary = Summary::default();
    for number in 0..cases {
        let tree = strategy.new_tree(&mut runner).expect("an input");
        let case = tree.current();
        let spawn = number % SPAWN_EVERY == 0;
        summary.inputs += 1;
        summary.spawned_inputs += usize::from(spawn);
        match check_case(&corpus, &keys, &mut scratch, &case, number, spawn, progress) {
            Ok((ran, exits)) => {
                summary.loaded += usize::from(ran.loaded);
                summary.diagnostics += ran.diagnostics;
                for code in exits {
                    *summary.exits.entry(code).or_default() += 1;
                }
            }
            Err(failure) => {
                match failure {
                    Failure::Panic { .. } => summary.panics += 1,
                    Failure::Exit(_) => summary.bad_exits += 1,
                }
                if summary.shrunk.len() < SHRUNK_FAILURES {
                    let (case, failure) = shrink(tree, failure, |c| {
                        check_case(&corpus, &keys, &mut scratch, c, number, spawn, progress).err()
                    });
                    let saved = save(
                        &corpus,
                        &keys,
                        &case,
                        &format!("seed-{seed}-input-{number}"),
                    );
                    summary.shrunk.push((number, case, failure, saved));
                }
            }
        }
    }
    summary
}

fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} is not a number")),
    )
}

#[test]
fn mutated_compositions_never_panic_hang_or_crash() {
    let cases = env_number("CHASSIS_FUZZ_CASES").unwrap_or(DEFAULT_CASES);
    let seed = env_number("CHASSIS_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    install_hook();
    let started = Instant::now();
    let progress = Arc::new(Mutex::new(Progress::default()));
    let worker = {
        let progress = Arc::clone(&progress);
        std::thread::Builder::new()
            .name(WORKER.to_owned())
            // The CLI runs on the main thread's 8 MiB stack.
            .stack_size(8 << 20)
            .spawn(move || fuzz(cases, seed, &progress))
            .unwrap()
    };
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
        let running = progress.lock().unwrap().current.clone();
        if let Some((number, since, case)) = running
            && since.elapsed() > CASE_LIMIT
        {
            let corpus = corpus();
            let saved = save(
                &corpus,
                &keys(),
                &case,
                &format!("seed-{seed}-hang-{number}"),
            );
            panic!(
                "fuzz input {number} (seed {seed}) did not finish within {CASE_LIMIT:?}: \
                 {case:?}\nits files: {saved}"
            );
        }
    }
    let summary = match worker.join() {
        Ok(summary) => summary,
        Err(payload) => std::panic::resume_unwind(payload),
    };
    let elapsed = started.elapsed();
    let exits: Vec<String> = summary
        .exits
        .iter()
        .map(|(code, n)| format!("{n}× exit {code}"))
        .collect();
    // Straight to stderr, past the test harness's capture: the count is
    // the point of the test.
    let _ = writeln!(
        std::io::stderr(),
        "fuzz: {} inputs (seed {seed}) in {:.1} s: {} panics, {} bad exits or hangs of the binary; \
         {} loaded, {} diagnostics rendered; {} inputs also through the binary ({})",
        summary.inputs,
        elapsed.as_secs_f64(),
        summary.panics,
        summary.bad_exits,
        summary.loaded,
        summary.diagnostics,
        summary.spawned_inputs,
        exits.join(", "),
    );
    if summary.panics + summary.bad_exits > 0 {
        let mut report = format!(
            "{} of {} fuzz inputs panicked, {} made the binary fail (seed {seed}); \
             the first, shrunk:\n",
            summary.panics, summary.inputs, summary.bad_exits
        );
        for (number, case, failure, saved) in &summary.shrunk {
            report.push_str(&format!(
                "\ninput {number}: {case:?}\nfiles: {saved}\n{failure}\n"
            ));
        }
        panic!("{report}");
    }
}
