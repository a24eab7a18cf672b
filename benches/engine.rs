//! Engine benchmark: resolve, snapshot and digests of synthetic compositions.
//!
//! A plain binary (no criterion): every measurement warms up, then takes the
//! median of N runs, N chosen so one measurement takes roughly 0.3 s (at
//! least 3 runs). Prints markdown tables to stdout.
//!
//! ```text
//! cargo bench --bench engine                  # every shape, 100 … 100,000 entries
//! cargo bench --bench engine -- --quick       # 1,000 and 10,000 entries only
//! cargo bench --bench engine -- chain fan/1000  # cases whose `shape/entries` contains a filter
//! cargo bench --bench engine -- --sizes=100,1000 --no-extras
//! cargo bench --bench engine -- --extras-all  # extras at 100,000 entries too
//! cargo bench --bench engine -- --emit-toml=deep/1000  # print one composition as TOML
//! ```
//!
//! Shapes (deterministic):
//! - `chain`: entry i provides `cap_i` and requires `cap_{i-1}` (`>=1,<2`); one scope.
//! - `fan`: one provider of `database`, N-1 consumers requiring it.
//! - `fan-pref`: two providers of `database` and a global preference for one;
//!   two thirds of the consumers prefer one of them (alternating), the rest
//!   are decided by the global preference.
//! - `deep`: a scope tree with branching 4 and depth ⌊log4 N⌋; `database` and
//!   `model` at the root, a `region` provider in each depth-1 scope, a `shard`
//!   provider in each parent of leaves, capability views on some depth-1 and
//!   depth-2 scopes; consumers spread over the leaves require the root
//!   capabilities (`model` only where a view exposes it), `region` and `shard`.
//! - `wide-scopes`: N/10 sibling scopes under `/`, each with one local provider
//!   and nine consumers.
//!
//! Extras (last table, up to 10,000 entries unless `--extras-all`): explain
//! one requirement, diff two snapshots that differ in one entry, and TOML
//! parse + load of the same composition rendered as text.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chassis::engine::diff::diff_snapshots;
use chassis::engine::explain::explain_requirement;
use chassis::engine::model::{
    CapabilityName, Composition, Entry, EntryId, Manifest, Provided, Requirement, ScopeDecl,
    ScopePath,
};
use chassis::engine::resolve::{Plan, resolve, resolve_with_tree};
use chassis::engine::snapshot::{
    SnapshotContext, SnapshotRecord, build_snapshot, build_snapshot_digested,
};
use chassis::engine::span::Located;
use chassis::engine::specifier::Specifier;
use chassis::engine::tree::ScopeTree;
use chassis::engine::version::Version;
use chassis::load::load_str;

/// The allocator of the `chassis` binary, so the figures are what users run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// ---------------------------------------------------------------------------
// Synthetic compositions, described once and rendered both as model values and
// as TOML text.

#[derive(Clone)]
struct PluginSpec {
    name: String,
    version: &'static str,
    provides: Vec<(String, &'static str)>,
    requires: Vec<(String, &'static str)>,
}

#[derive(Clone)]
struct ScopeSpec {
    path: String,
    view: Option<Vec<&'static str>>,
}

#[derive(Clone)]
struct EntrySpec {
    id: String,
    plugin: usize,
    scope: usize,
    prefer: Vec<(&'static str, String)>,
}

#[derive(Clone)]
struct Spec {
    plugins: Vec<PluginSpec>,
    /// Index 0 is the root scope `/`.
    scopes: Vec<ScopeSpec>,
    entries: Vec<EntrySpec>,
    global: Vec<(&'static str, String)>,
    /// The requirement to explain: (consumer entry id, capability).
    explain: (String, String),
}

impl Spec {
    fn new() -> Self {
        Self {
            plugins: Vec::new(),
            scopes: vec![ScopeSpec {
                path: "/".into(),
                view: None,
            }],
            entries: Vec::new(),
            global: Vec::new(),
            explain: (String::new(), String::new()),
        }
    }

    fn plugin(
        &mut self,
        name: impl Into<String>,
        provides: &[(&str, &'static str)],
        requires: &[(&str, &'static str)],
    ) -> usize {
        self.plugins.push(PluginSpec {
            name: name.into(),
            version: "1.0.0",
            provides: provides
                .iter()
                .map(|(c, v)| ((*c).to_owned(), *v))
                .collect(),
            requires: requires
                .iter()
                .map(|(c, s)| ((*c).to_owned(), *s))
                .collect(),
        });
        self.plugins.len() - 1
    }

    fn scope(&mut self, path: String, view: Option<Vec<&'static str>>) -> usize {
        self.scopes.push(ScopeSpec { path, view });
        self.scopes.len() - 1
    }

    fn entry(&mut self, id: impl Into<String>, plugin: usize, scope: usize) -> &mut EntrySpec {
        self.entries.push(EntrySpec {
            id: id.into(),
            plugin,
            scope,
            prefer: Vec::new(),
        });
        self.entries.last_mut().expect("just pushed")
    }

    /// The composition as model values (no builder, no re-validation beyond
    /// the id constructors).
    fn composition(&self) -> Composition {
        let cap = |s: &str| CapabilityName::new(s).expect("capability");
        let manifests: Vec<Arc<Manifest>> = self
            .plugins
            .iter()
            .map(|p| {
                let mut m =
                    Manifest::new(p.name.clone(), Version::parse(p.version).expect("version"));
                for (c, v) in &p.provides {
                    let versions = vec![Version::parse(v).expect("version")];
                    m.provides.insert(
                        cap(c),
                        Provided {
                            capability: cap(c),
                            versions,
                            origin: None,
                        },
                    );
                }
                for (c, s) in &p.requires {
                    m.requires.insert(
                        cap(c),
                        Requirement::hard(cap(c), Specifier::parse(s).expect("specifier")),
                    );
                }
                Arc::new(m)
            })
            .collect();
        let paths: Vec<ScopePath> = self
            .scopes
            .iter()
            .map(|s| ScopePath::new(&s.path).expect("scope path"))
            .collect();
        let mut c = Composition::new();
        for (s, path) in self.scopes.iter().zip(&paths) {
            let mut decl = ScopeDecl::new(path.clone());
            decl.capabilities = s
                .view
                .as_ref()
                .map(|v| v.iter().map(|n| cap(n)).collect::<BTreeSet<_>>());
            c.insert_scope(decl);
        }
        for e in &self.entries {
            let mut entry = Entry::new(
                EntryId::new(&e.id).expect("entry id"),
                Arc::clone(&manifests[e.plugin]),
            )
            .in_scope(paths[e.scope].clone());
            for (k, p) in &e.prefer {
                entry
                    .prefer
                    .insert(cap(k), Located::bare(EntryId::new(p).expect("entry id")));
            }
            c.insert_entry(entry);
        }
        for (k, p) in &self.global {
            c.preferences
                .global
                .insert(cap(k), Located::bare(EntryId::new(p).expect("entry id")));
        }
        c
    }

    /// The same composition as one TOML file.
    fn toml(&self) -> String {
        let mut t = String::with_capacity(self.entries.len() * 80 + self.plugins.len() * 120);
        t.push_str("version = 1\n");
        if !self.global.is_empty() {
            t.push_str("\n[prefer]\n");
            for (k, p) in &self.global {
                let _ = writeln!(t, "{k} = \"{p}\"");
            }
        }
        let table = |items: &[(String, &str)]| {
            let inner: Vec<String> = items
                .iter()
                .map(|(k, v)| format!("\"{k}\" = \"{v}\""))
                .collect();
            format!("{{ {} }}", inner.join(", "))
        };
        for p in &self.plugins {
            let _ = writeln!(t, "\n[plugins.\"{}\"]\nversion = \"{}\"", p.name, p.version);
            if !p.provides.is_empty() {
                let _ = writeln!(t, "provides = {}", table(&p.provides));
            }
            if !p.requires.is_empty() {
                let _ = writeln!(t, "requires = {}", table(&p.requires));
            }
        }
        for s in self.scopes.iter().skip(1) {
            let _ = writeln!(t, "\n[scopes.\"{}\"]", s.path);
            if let Some(v) = &s.view {
                let names: Vec<String> = v.iter().map(|n| format!("\"{n}\"")).collect();
                let _ = writeln!(t, "capabilities = [{}]", names.join(", "));
            }
        }
        for e in &self.entries {
            let _ = writeln!(
                t,
                "\n[entries.\"{}\"]\nplugin = \"{}\"",
                e.id, self.plugins[e.plugin].name
            );
            if e.scope != 0 {
                let _ = writeln!(t, "scope = \"{}\"", self.scopes[e.scope].path);
            }
            if !e.prefer.is_empty() {
                let inner: Vec<String> = e
                    .prefer
                    .iter()
                    .map(|(k, p)| format!("{k} = \"{p}\""))
                    .collect();
                let _ = writeln!(t, "prefer = {{ {} }}", inner.join(", "));
            }
        }
        t
    }
}

const SPEC_1: &str = ">=1,<2";
const SPEC_2: &str = ">=2,<3";

fn chain(n: usize) -> Spec {
    let mut s = Spec::new();
    for i in 0..n {
        let provides = format!("cap_{i:06}");
        let requires = format!("cap_{:06}", i.wrapping_sub(1));
        let p = if i == 0 {
            s.plugin(format!("link_{i:06}"), &[(&provides, "1.0.0")], &[])
        } else {
            s.plugin(
                format!("link_{i:06}"),
                &[(&provides, "1.0.0")],
                &[(&requires, SPEC_1)],
            )
        };
        s.entry(format!("e{i:06}"), p, 0);
    }
    s.explain = (format!("e{:06}", n - 1), format!("cap_{:06}", n - 2));
    s
}

fn fan(n: usize) -> Spec {
    let mut s = Spec::new();
    let db = s.plugin("postgres", &[("database", "1.4.2")], &[]);
    let app = s.plugin("app", &[], &[("database", SPEC_1)]);
    s.entry("db", db, 0);
    for i in 1..n {
        s.entry(format!("app{i:06}"), app, 0);
    }
    s.explain = (format!("app{:06}", n / 2), "database".into());
    s
}

fn fan_pref(n: usize) -> Spec {
    let mut s = Spec::new();
    let db = s.plugin("postgres", &[("database", "1.4.2")], &[]);
    let app = s.plugin("app", &[], &[("database", SPEC_1)]);
    s.entry("db-a", db, 0);
    s.entry("db-b", db, 0);
    s.global.push(("database", "db-a".into()));
    for i in 2..n {
        let e = s.entry(format!("app{i:06}"), app, 0);
        match i % 3 {
            0 => e.prefer.push(("database", "db-a".into())),
            1 => e.prefer.push(("database", "db-b".into())),
            _ => {}
        }
    }
    s.explain = (format!("app{:06}", n / 2), "database".into());
    s
}

fn deep(n: usize) -> Spec {
    let mut s = Spec::new();
    let mut depth = 2u32;
    while 4usize.pow(depth + 1) <= n {
        depth += 1;
    }
    let db = s.plugin("postgres", &[("database", "1.4.2")], &[]);
    let model = s.plugin("llm", &[("model", "2.1.0")], &[]);
    let region = s.plugin("region", &[("region", "1.0.0")], &[]);
    let shard = s.plugin("shard", &[("shard", "1.0.0")], &[]);
    let full = s.plugin(
        "consumer-full",
        &[],
        &[
            ("database", SPEC_1),
            ("model", SPEC_2),
            ("region", SPEC_1),
            ("shard", SPEC_1),
        ],
    );
    let lite = s.plugin(
        "consumer-lite",
        &[],
        &[("database", SPEC_1), ("region", SPEC_1), ("shard", SPEC_1)],
    );
    s.entry("root-db", db, 0);
    s.entry("root-model", model, 0);
    // Breadth-first: scopes of depth k, each with (index, lite?) of its depth-1 ancestor.
    let mut level: Vec<(usize, bool)> = vec![(0, false)];
    for d in 1..=depth {
        let mut next = Vec::with_capacity(level.len() * 4);
        for &(parent, parent_lite) in &level {
            for k in 0..4 {
                let path = if parent == 0 {
                    format!("/s{k}")
                } else {
                    format!("{}/s{k}", s.scopes[parent].path)
                };
                let (view, is_lite) = match d {
                    1 if k % 2 == 1 => (Some(vec!["database", "region", "shard"]), true),
                    2 if k == 0 => (
                        Some(vec!["database", "model", "region", "shard"]),
                        parent_lite,
                    ),
                    _ => (None, parent_lite),
                };
                let ix = s.scope(path, view);
                next.push((ix, is_lite));
                if d == 1 {
                    s.entry(format!("region-{k}"), region, ix);
                }
                if d == depth - 1 {
                    s.entry(format!("shard-{ix:06}"), shard, ix);
                }
            }
        }
        level = next;
    }
    let providers = s.entries.len();
    let leaves = level.len();
    for i in 0..n.saturating_sub(providers) {
        let (leaf, is_lite) = level[i % leaves];
        s.entry(format!("c{i:06}"), if is_lite { lite } else { full }, leaf);
    }
    s.explain = ("c000000".into(), "database".into());
    s
}

fn wide_scopes(n: usize) -> Spec {
    let mut s = Spec::new();
    let provider = s.plugin("local-provider", &[("local", "1.0.0")], &[]);
    let consumer = s.plugin("local-consumer", &[], &[("local", SPEC_1)]);
    for i in 0..n / 10 {
        let ix = s.scope(format!("/w{i:05}"), None);
        s.entry(format!("w{i:05}-p"), provider, ix);
        for j in 1..10 {
            s.entry(format!("w{i:05}-c{j}"), consumer, ix);
        }
    }
    s.explain = (format!("w{:05}-c1", n / 20), "local".into());
    s
}

/// A named generator of synthetic compositions.
type Shape = (&'static str, fn(usize) -> Spec);

const SHAPES: &[Shape] = &[
    ("chain", chain),
    ("fan", fan),
    ("fan-pref", fan_pref),
    ("deep", deep),
    ("wide-scopes", wide_scopes),
];

// ---------------------------------------------------------------------------
// Timing.

/// Time budget of one measurement (excluding warm-up).
const TARGET: Duration = Duration::from_millis(300);
/// Batch fast calls so one sample is at least this long.
const MIN_SAMPLE: Duration = Duration::from_micros(200);

struct Measured {
    median: Duration,
    /// The fastest sample: on a loaded machine, the closest to unloaded time.
    min: Duration,
    /// Mean CPU time of this thread per call, when the kernel reports it:
    /// unlike wall time, barely affected by other processes on the machine.
    cpu: Option<Duration>,
    runs: usize,
}

/// CPU time this thread has run, from `/proc/thread-self/schedstat` (updated
/// at context switches and ticks, so only sums over many calls are exact).
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Warm up, then the median of N samples (N adaptive, at least 3). The result
/// of `f` is dropped outside the clock when samples are single calls.
fn measure<T>(mut f: impl FnMut() -> T) -> Measured {
    // `ENGINE_BENCH_RUNS` fixes the number of single-call samples (one
    // warm-up), so counters read around the process compare across builds.
    let fixed_runs: Option<usize> = std::env::var("ENGINE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map(|n| n.max(1));
    let warm_start = Instant::now();
    let mut first = Duration::MAX;
    loop {
        let t = Instant::now();
        let r = f();
        first = first.min(t.elapsed());
        drop(black_box(r));
        if fixed_runs.is_some()
            || warm_start.elapsed() >= Duration::from_millis(30)
            || first > Duration::from_millis(100)
        {
            break;
        }
    }
    let per = first.max(Duration::from_nanos(10));
    let batch = if fixed_runs.is_some() {
        1
    } else {
        (MIN_SAMPLE.as_nanos() / per.as_nanos()).max(1) as u32
    };
    // `ENGINE_BENCH_TARGET_MS` stretches measurements (e.g. under a profiler).
    let target = std::env::var("ENGINE_BENCH_TARGET_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(TARGET, Duration::from_millis);
    let max_samples = if target > TARGET { 100_000 } else { 101 };
    let samples = fixed_runs.unwrap_or_else(|| {
        (target.as_nanos() / (per * batch).as_nanos()).clamp(3, max_samples) as usize
    });
    let mut times = Vec::with_capacity(samples);
    let cpu_start = thread_cpu();
    for _ in 0..samples {
        if batch == 1 {
            let t = Instant::now();
            let r = f();
            times.push(t.elapsed());
            drop(black_box(r));
        } else {
            let t = Instant::now();
            for _ in 0..batch {
                black_box(f());
            }
            times.push(t.elapsed() / batch);
        }
    }
    let runs = samples * batch as usize;
    let cpu = cpu_start
        .zip(thread_cpu())
        .map(|(a, b)| b.saturating_sub(a) / runs as u32);
    times.sort_unstable();
    Measured {
        median: times[times.len() / 2],
        min: times[0],
        cpu,
        runs,
    }
}

fn fmt_dur(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

fn fmt_count(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------
// Cases.

struct Row {
    shape: &'static str,
    entries: usize,
    edges: usize,
    scopes: usize,
    requirements: usize,
    resolve: Duration,
    snapshot: Duration,
    digests: Duration,
    headline: Duration,
    headline_min: Duration,
    headline_cpu: Option<Duration>,
    headline_runs: usize,
    /// Canonical JSON bytes fed to the hashers by `digests` (the semantic
    /// tree twice, the physical tree once, plus the small fields).
    hashed: usize,
}

struct Extra {
    shape: &'static str,
    entries: usize,
    explain: Duration,
    diff: Duration,
    diff_changes: usize,
    toml_bytes: usize,
    toml_load: Duration,
    toml_load_runs: usize,
}

fn snapshot_of(comp: &Composition) -> SnapshotRecord {
    let tree = ScopeTree::new(comp);
    let plan = resolve_with_tree(comp, &tree);
    build_snapshot(comp, &tree, &plan, &SnapshotContext::default()).expect("snapshot")
}

/// Bytes the three digests hash: the record and the semantic composition
/// (each with the semantic tree) and the instance ids.
fn hashed_bytes(record: &SnapshotRecord) -> usize {
    let record_text = record.to_canon().canonical_json().map_or(0, |t| t.len());
    let semantic = record
        .semantic_composition()
        .canonical_json()
        .map_or(0, |t| t.len());
    let ids: usize = record
        .runtime_instance_ids
        .iter()
        .map(|s| s.len() + 3)
        .sum();
    record_text + semantic + ids + 1
}

fn run_case(
    shape: &'static str,
    spec: &Spec,
    extras: bool,
    headline_only: bool,
) -> (Row, Option<Extra>) {
    let comp = spec.composition();
    assert_eq!(
        comp.entries.len(),
        spec.entries.len(),
        "{shape}: duplicate entry ids"
    );
    let ctx = SnapshotContext::default();
    let tree = ScopeTree::new(&comp);
    let plan: Plan = resolve(&comp);
    assert!(
        plan.is_complete(),
        "{shape}/{}: plan has pending entries: {:?}",
        comp.entries.len(),
        &plan.pending[..plan.pending.len().min(5)]
    );
    let record = build_snapshot(&comp, &tree, &plan, &ctx).expect("snapshot");

    let skipped = || Measured {
        median: Duration::ZERO,
        min: Duration::ZERO,
        cpu: None,
        runs: 0,
    };
    let (resolve_m, snapshot_m, digests_m) = if headline_only {
        (skipped(), skipped(), skipped())
    } else {
        (
            measure(|| resolve(&comp)),
            measure(|| build_snapshot(&comp, &tree, &plan, &ctx).expect("snapshot")),
            measure(|| record.digests().expect("digests")),
        )
    };
    // A publish keeps the tree and the plan (they are the generation's), so
    // they are returned and dropped outside the timer, like the record.
    let headline_m = measure(|| {
        let tree = ScopeTree::new(&comp);
        let plan = resolve_with_tree(&comp, &tree);
        let record = build_snapshot_digested(&comp, &tree, &plan, &ctx).expect("snapshot");
        (tree, plan, record)
    });
    let row = Row {
        shape,
        entries: comp.entries.len(),
        edges: plan.edges.len(),
        scopes: comp.scopes.len(),
        requirements: plan.resolutions.len(),
        resolve: resolve_m.median,
        snapshot: snapshot_m.median,
        digests: digests_m.median,
        headline: headline_m.median,
        headline_min: headline_m.min,
        headline_cpu: headline_m.cpu,
        headline_runs: headline_m.runs,
        hashed: hashed_bytes(&record),
    };
    if !extras {
        return (row, None);
    }

    let (consumer, capability) = &spec.explain;
    assert!(
        explain_requirement(&comp, &tree, &plan, consumer, capability).is_some(),
        "{shape}: nothing to explain for {consumer}/{capability}"
    );
    let explain_m = measure(|| explain_requirement(&comp, &tree, &plan, consumer, capability));

    // Two snapshots that differ in one entry: the second lacks the last entry
    // (a consumer in every shape).
    let mut smaller = spec.clone();
    smaller.entries.pop();
    if smaller.explain.0
        == spec
            .entries
            .last()
            .map(|e| e.id.clone())
            .unwrap_or_default()
    {
        smaller.explain = spec.explain.clone();
    }
    let old = snapshot_of(&smaller.composition());
    let diff = diff_snapshots(&old, &record, false);
    let diff_changes = diff.changes.len();
    assert!(diff_changes > 0, "{shape}: the diff found no change");
    let diff_m = measure(|| diff_snapshots(&old, &record, false));

    let text = spec.toml();
    let loaded = load_str("composition.toml", &text);
    let Some(loaded_comp) = loaded.composition.as_ref() else {
        panic!(
            "{shape}: the TOML rendering does not load: {:#?}",
            &loaded.diagnostics[..loaded.diagnostics.len().min(3)]
        );
    };
    assert_eq!(
        loaded_comp.entries.len(),
        comp.entries.len(),
        "{shape}: TOML entries"
    );
    assert_eq!(
        resolve(loaded_comp).edges,
        plan.edges,
        "{shape}: the TOML rendering resolves differently"
    );
    let load_m = measure(|| load_str("composition.toml", &text));

    let extra = Extra {
        shape,
        entries: comp.entries.len(),
        explain: explain_m.median,
        diff: diff_m.median,
        diff_changes,
        toml_bytes: text.len(),
        toml_load: load_m.median,
        toml_load_runs: load_m.runs,
    };
    (row, Some(extra))
}

/// Extras (explain, diff, TOML) run up to this size unless `--extras-all`,
/// which keeps the default run within a few minutes on two cores.
const EXTRAS_MAX: usize = 10_000;

fn target_of(entries: usize) -> Option<Duration> {
    match entries {
        10_000 => Some(Duration::from_millis(20)),
        100_000 => Some(Duration::from_secs(1)),
        _ => None,
    }
}

fn main() {
    let mut quick = false;
    let mut headline_only = false;
    let mut extras = true;
    let mut extras_all = false;
    let mut sizes: Vec<usize> = vec![100, 1_000, 10_000, 100_000];
    let mut filters: Vec<String> = Vec::new();
    for arg in std::env::args().skip(1) {
        if arg == "--quick" {
            quick = true;
        } else if arg == "--headline-only" {
            // For profiling: only the headline (implies --no-extras).
            headline_only = true;
            extras = false;
        } else if arg == "--no-extras" {
            extras = false;
        } else if arg == "--extras-all" {
            extras_all = true;
        } else if let Some(list) = arg.strip_prefix("--sizes=") {
            sizes = list
                .split(',')
                .filter_map(|s| s.trim().replace('_', "").parse().ok())
                .collect();
        } else if let Some(case) = arg.strip_prefix("--emit-toml=") {
            // For inspection: print one case's composition as TOML and stop.
            let (shape, size) = case.split_once('/').unwrap_or((case, "1000"));
            let Some(&(_, generate)) = SHAPES.iter().find(|s| s.0 == shape) else {
                eprintln!("unknown shape {shape}");
                return;
            };
            print!("{}", generate(size.parse().unwrap_or(1000)).toml());
            return;
        } else if arg == "--help" || arg == "-h" {
            println!(
                "usage: cargo bench --bench engine -- [--quick] [--no-extras] [--headline-only] [--extras-all] [--sizes=100,1000] [--emit-toml=SHAPE/N] [FILTER…]"
            );
            println!(
                "shapes: {}",
                SHAPES.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
            );
            return;
        } else if arg.starts_with('-') {
            // `cargo bench` passes `--bench`; ignore libtest-style flags.
        } else {
            filters.push(arg);
        }
    }
    if quick {
        sizes.retain(|&s| s == 1_000 || s == 10_000);
    }
    let selected = |shape: &str, size: usize| {
        let id = format!("{shape}/{size}");
        filters.is_empty()
            || filters
                .iter()
                .any(|f| id.contains(f.as_str()) || (shape == f.as_str()))
    };

    let started = Instant::now();
    let mut rows = Vec::new();
    let mut extra_rows = Vec::new();
    for &(shape, generate) in SHAPES {
        for &size in &sizes {
            if !selected(shape, size) {
                continue;
            }
            let t = Instant::now();
            let spec = generate(size);
            let (row, extra) = run_case(
                shape,
                &spec,
                extras && (extras_all || size <= EXTRAS_MAX),
                headline_only,
            );
            eprintln!(
                "  {shape}/{size}: headline {} (min {}, cpu {}, {} runs), case took {:.1} s",
                fmt_dur(row.headline),
                fmt_dur(row.headline_min),
                row.headline_cpu.map_or("?".into(), fmt_dur),
                row.headline_runs,
                t.elapsed().as_secs_f64()
            );
            rows.push(row);
            extra_rows.extend(extra);
        }
    }
    if rows.is_empty() {
        eprintln!("no case matches the filters {filters:?}");
        return;
    }

    println!("## chassis engine benchmark\n");
    println!(
        "Median of N runs after warm-up; release build; `resolve` includes building the scope tree; `snapshot` is `build_snapshot` given tree and plan; `digests` is all three digests; `hashed` is the canonical JSON the digests hash; `total` (the headline) is one call of each as a publish makes it: tree, resolve, then `build_snapshot_digested` (snapshot and digests in one pipeline on two cores), so it is less than the sum of the columns; like a publish, it keeps the tree, plan and record it made (they are dropped outside the timer).\n"
    );
    println!(
        "| shape | entries | requirements | edges | scopes | hashed | resolve | snapshot | digests | **total** | per entry | target |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &rows {
        let target = match target_of(r.entries) {
            Some(t) if r.headline <= t => format!("< {} ✓", fmt_dur(t)),
            Some(t) => format!("< {} ✗", fmt_dur(t)),
            None => String::new(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {:.1} MiB | {} | {} | {} | **{}** | {} | {} |",
            r.shape,
            fmt_count(r.entries),
            fmt_count(r.requirements),
            fmt_count(r.edges),
            fmt_count(r.scopes),
            r.hashed as f64 / (1024.0 * 1024.0),
            fmt_dur(r.resolve),
            fmt_dur(r.snapshot),
            fmt_dur(r.digests),
            fmt_dur(r.headline),
            fmt_dur(r.headline / r.entries.max(1) as u32),
            target
        );
    }

    // Growth of the headline between consecutive sizes of one shape.
    let mut growth = Vec::new();
    for &(shape, _) in SHAPES {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.shape == shape).collect();
        for w in mine.windows(2) {
            let (a, b) = (w[0], w[1]);
            let size_ratio = b.entries as f64 / a.entries as f64;
            let time_ratio = b.headline.as_secs_f64() / a.headline.as_secs_f64();
            growth.push((shape, a.entries, b.entries, size_ratio, time_ratio));
        }
    }
    if !growth.is_empty() {
        println!("\n### Growth of the total\n");
        println!("Linear growth means time ratio ≈ size ratio (exponent ≈ 1.0).\n");
        println!("| shape | from | to | size ratio | time ratio | exponent |");
        println!("|---|---:|---:|---:|---:|---:|");
        for (shape, from, to, sr, tr) in growth {
            println!(
                "| {shape} | {} | {} | ×{sr:.0} | ×{tr:.1} | {:.2} |",
                fmt_count(from),
                fmt_count(to),
                tr.ln() / sr.ln()
            );
        }
    }

    if !extra_rows.is_empty() {
        println!("\n### Explain, diff and TOML loading\n");
        println!(
            "`explain` = `explain_requirement` of one consumer's requirement; `diff` = `diff_snapshots(old, new, false)` of two snapshots differing in one entry; `toml load` = `load::load_str` (parse + walk + link) of the same composition rendered as one TOML file.\n"
        );
        println!(
            "| shape | entries | explain | diff | diff changes | toml size | toml load | toml load runs |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|");
        for e in &extra_rows {
            println!(
                "| {} | {} | {} | {} | {} | {:.1} KiB | {} | {} |",
                e.shape,
                fmt_count(e.entries),
                fmt_dur(e.explain),
                fmt_dur(e.diff),
                e.diff_changes,
                e.toml_bytes as f64 / 1024.0,
                fmt_dur(e.toml_load),
                e.toml_load_runs
            );
        }
    }
    eprintln!("total bench time {:.1} s", started.elapsed().as_secs_f64());
}
