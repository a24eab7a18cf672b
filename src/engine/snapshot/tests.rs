//! Snapshot tests: the reference vectors, digests, and documents read back.

use super::*;
use crate::engine::build::CompositionBuilder;
use crate::engine::canonical::{Canon, test_support::read_jsonl};
use crate::engine::model::{Composition, ConfigValue};
use crate::engine::resolve::resolve;
use crate::engine::tree::ScopeTree;
use serde_json::Value;
use std::sync::Arc;

fn config_value(v: &Value) -> ConfigValue {
    match v {
        Value::Bool(b) => ConfigValue::Bool(*b),
        Value::Number(n) if n.is_i64() => ConfigValue::Int(n.as_i64().unwrap()),
        Value::Number(n) => ConfigValue::Float(n.as_f64().unwrap()),
        Value::String(s) => ConfigValue::Str(s.clone()),
        Value::Array(a) => ConfigValue::Array(a.iter().map(config_value).collect()),
        Value::Object(o) => ConfigValue::Table(
            o.iter()
                .map(|(k, v)| (k.clone(), config_value(v)))
                .collect(),
        ),
        // TOML has no null; the one vector null sits under a secret key and
        // hashes as `<redacted>` whatever it is.
        Value::Null => ConfigValue::Str(String::new()),
    }
}

/// Build a composition from a vector's neutral description.
pub(crate) fn from_description(d: &Value) -> Result<Composition, crate::engine::build::BuildError> {
    let mut b = CompositionBuilder::new();
    for s in d["scopes"].as_array().unwrap() {
        let path = s["path"].as_str().unwrap();
        if path == "/" {
            continue;
        }
        let caps: Option<Vec<&str>> = s["capabilities"]
            .as_array()
            .map(|a| a.iter().map(|c| c.as_str().unwrap()).collect());
        b = b.scope(path, caps.as_deref());
        if let Some(tools) = s["tools"].as_array() {
            let tools: Vec<&str> = tools.iter().map(|t| t.as_str().unwrap()).collect();
            b = b.tool_view(&tools);
        }
        for (cap, spec) in s["requirements"].as_object().unwrap() {
            b = b.scope_requires(cap, spec.as_str().unwrap());
        }
    }
    for e in d["entries"].as_array().unwrap() {
        b = b
            .entry(e["id"].as_str().unwrap())
            .plugin(
                e["manifest"]["name"].as_str().unwrap(),
                e["manifest"]["version"].as_str().unwrap(),
            )
            .in_scope(e["scope"].as_str().unwrap())
            .config(config_value(&e["config"]));
        for (cap, v) in e["provides"].as_object().unwrap() {
            let versions: Vec<&str> = match v {
                Value::Array(a) => a.iter().map(|x| x.as_str().unwrap()).collect(),
                other => vec![other.as_str().unwrap()],
            };
            b = b.provides(cap, &versions);
        }
        for (cap, spec) in e["requires"].as_object().unwrap() {
            b = b.requires(cap, spec.as_str().unwrap());
        }
        for (cap, spec) in e["optional"].as_object().unwrap() {
            b = b.optional(cap, spec.as_str().unwrap());
        }
        for t in e["tools"].as_array().unwrap() {
            let args = (!t["args_schema"].is_null()).then(|| t["args_schema"].clone());
            b = b.tool(
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap(),
                args,
            );
        }
    }
    let mut c = b.build()?;
    for p in d["preferences"].as_array().unwrap() {
        let cap =
            crate::engine::model::CapabilityName::new(p["capability"].as_str().unwrap()).unwrap();
        let provider = crate::engine::span::Located::bare(
            crate::engine::model::EntryId::new(p["provider"].as_str().unwrap()).unwrap(),
        );
        if let Some(consumer) = p["consumer"].as_str() {
            let id = crate::engine::model::EntryId::new(consumer).unwrap();
            c.entries.get_mut(&id).unwrap().prefer.insert(cap, provider);
        } else if let Some(scope) = p["scope"].as_str() {
            let path = crate::engine::model::ScopePath::new(scope).unwrap();
            c.scopes
                .get_mut(&path)
                .unwrap()
                .prefer
                .insert(cap, provider);
        } else {
            c.preferences.global.insert(cap, provider);
        }
    }
    Ok(c)
}

pub(crate) fn snapshot_of(c: &Composition) -> SnapshotRecord {
    let tree = ScopeTree::new(c);
    let plan = resolve(c);
    build_snapshot(c, &tree, &plan, &SnapshotContext::default()).unwrap()
}

#[test]
fn reference_vectors_reproduce_semantic_hashes() {
    let mut checked = 0;
    for line in read_jsonl("reference-snapshots.jsonl") {
        let name = line["name"].as_str().unwrap();
        let built = from_description(&line["composition"]);
        if name == "version-normalisation" {
            // The reference accepts the PEP 440 spelling `01.0`; semver
            // forbids leading zeros, so chassis rejects the composition.
            let err = built.expect_err("leading zeros must be rejected");
            assert!(err.0.contains("leading zero"), "{err}");
            continue;
        }
        let c = built.unwrap_or_else(|e| panic!("{name}: {e}"));
        let s = snapshot_of(&c);
        let want = &line["snapshot"];
        assert_eq!(
            s.config_hash,
            line["config_hash"].as_str().unwrap(),
            "{name}: config_hash"
        );
        assert_eq!(
            s.plugin_graph_hash,
            line["plugin_graph_hash"].as_str().unwrap(),
            "{name}: plugin_graph_hash"
        );
        assert_eq!(
            s.tool_schema_hash,
            line["tool_schema_hash"].as_str().unwrap(),
            "{name}: tool_schema_hash"
        );
        assert_eq!(
            s.semantic_scopes.to_canon(),
            Canon::from_json(&line["semantic_scopes"]),
            "{name}: semantic_scopes"
        );
        assert_eq!(
            Canon::Map(
                s.plugins
                    .iter()
                    .map(|(k, v)| (k.clone(), Canon::from(v.as_str())))
                    .collect()
            ),
            Canon::from_json(&want["plugins"]),
            "{name}: plugins"
        );
        assert_eq!(
            s.semantic_digest().unwrap(),
            line["semantic_digest"].as_str().unwrap(),
            "{name}: semantic_digest"
        );
        checked += 1;
    }
    assert_eq!(checked, 9);
}

#[test]
fn reference_records_load_and_their_digests_recompute() {
    for line in read_jsonl("reference-snapshots.jsonl") {
        let loaded = parse_document(&line["snapshot"]).unwrap();
        assert_eq!(loaded.digests.digest, line["digest"].as_str().unwrap());
        assert_eq!(
            loaded.digests.semantic_digest,
            line["semantic_digest"].as_str().unwrap()
        );
        assert_eq!(
            loaded.digests.physical_digest,
            line["physical_digest"].as_str().unwrap()
        );
        assert_eq!(
            loaded.snapshot.to_canon(),
            Canon::from_json(&line["snapshot"])
        );
    }
}

#[test]
fn envelopes_round_trip_and_detect_corruption() {
    let c = CompositionBuilder::new()
        .entry("postgres")
        .provides("database", &["1.4.2"])
        .entry("app")
        .requires("database", ">=1,<2")
        .build()
        .unwrap();
    let s = snapshot_of(&c);
    let doc = envelope(&s).unwrap().to_json();
    let back = parse_document(&doc).unwrap();
    assert_eq!(back.snapshot, s);
    let mut tampered = doc.clone();
    tampered["snapshot"]["plugins"]["app"] = Value::from("9.9.9");
    assert_eq!(
        parse_document(&tampered).unwrap_err().reason,
        SnapshotLoadReason::Corrupted
    );
    let mut future = doc.clone();
    future["format_version"] = Value::from(2);
    assert_eq!(
        parse_document(&future).unwrap_err().reason,
        SnapshotLoadReason::FutureVersion
    );
    let mut malformed = s.to_canon().to_json();
    malformed["format_version"] = Value::from("1");
    assert_eq!(
        parse_document(&malformed).unwrap_err().reason,
        SnapshotLoadReason::MalformedVersion
    );
    malformed["format_version"] = Value::from(true);
    assert_eq!(
        parse_document(&malformed).unwrap_err().reason,
        SnapshotLoadReason::MalformedVersion
    );
    let mut wrong = s.to_canon().to_json();
    wrong["sequence"] = Value::from(true);
    assert_eq!(
        parse_document(&wrong).unwrap_err().reason,
        SnapshotLoadReason::Corrupted
    );
}

#[test]
fn legacy_records_migrate_with_empty_semantic_providers() {
    let c = CompositionBuilder::new()
        .entry("postgres")
        .provides("database", &["1.4.2"])
        .build()
        .unwrap();
    let s = snapshot_of(&c);
    let mut legacy = s.to_canon().to_json();
    let obj = legacy.as_object_mut().unwrap();
    obj.remove("format_version");
    obj.remove("semantic_scopes");
    let back = parse_document(&legacy).unwrap();
    assert_eq!(back.source_format_version, 0);
    assert!(back.snapshot.semantic_scopes.scopes[0].providers.is_empty());
}

#[test]
fn ids_are_derived_so_full_digests_are_stable() {
    let c = CompositionBuilder::new()
        .entry("postgres")
        .provides("database", &["1.4.2"])
        .build()
        .unwrap();
    let a = snapshot_of(&c);
    let b = snapshot_of(&c);
    assert_eq!(a.digest().unwrap(), b.digest().unwrap());
    assert_eq!(a.generation_id, "gen_0001");
    assert!(a.runtime_instance_ids[0].starts_with("plugin_"));
    assert_eq!(a.runtime_instance_ids[0].len(), "plugin_".len() + 12);
}

#[test]
fn config_values_never_appear_in_a_snapshot() {
    let secretish = "pool-password-value-canary";
    let c = CompositionBuilder::new()
        .entry("db")
        .provides("database", &["1.0.0"])
        .config(ConfigValue::Table(
            [
                ("password".to_owned(), ConfigValue::Str(secretish.into())),
                ("dsn".to_owned(), ConfigValue::Str("visible-dsn".into())),
            ]
            .into(),
        ))
        .build()
        .unwrap();
    let text = envelope(&snapshot_of(&c)).unwrap().to_json().to_string();
    assert!(!text.contains(secretish));
    assert!(!text.contains("visible-dsn"));
}

#[test]
fn direct_writers_agree_with_the_canon_path() {
    use crate::engine::canonical::{stable_hash, to_canonical_json};
    let mut records: Vec<SnapshotRecord> = Vec::new();
    for line in read_jsonl("reference-snapshots.jsonl") {
        records.push(parse_document(&line["snapshot"]).unwrap().snapshot);
    }
    for r in &records {
        assert_eq!(
            r.semantic_scopes.canonical_text(),
            to_canonical_json(&r.semantic_scopes.to_canon()).unwrap()
        );
        assert_eq!(
            r.scopes.canonical_text(),
            to_canonical_json(&r.scopes.to_canon()).unwrap()
        );
        assert_eq!(r.digest().unwrap(), stable_hash(&r.to_canon()).unwrap());
        assert_eq!(
            r.semantic_digest().unwrap(),
            stable_hash(&r.semantic_composition()).unwrap()
        );
    }
}

#[test]
fn a_selection_row_writes_as_its_canon_whatever_it_holds() {
    use crate::engine::canonical::to_canonical_json;
    let plain = SelectionRow {
        consumer: "app".into(),
        requirement: "database <2,>=1".into(),
        status: "resolved".into(),
        provider: Some("db".into()),
        provider_scope: Some("/".into()),
    };
    let mut rows = vec![plain.clone()];
    // Each field in turn needs an escape; then no provider; then non-ASCII.
    for field in 0..5 {
        let mut row = plain.clone();
        let odd: Arc<str> = "a\"b\\c\n".into();
        match field {
            0 => row.consumer = odd,
            1 => row.provider = Some(odd),
            2 => row.provider_scope = Some(odd),
            3 => row.requirement = odd,
            _ => row.status = odd,
        }
        rows.push(row);
    }
    rows.push(SelectionRow {
        provider: None,
        provider_scope: None,
        status: "missing".into(),
        ..plain.clone()
    });
    rows.push(SelectionRow {
        consumer: "été".into(),
        ..plain
    });
    for row in rows {
        let mut text = String::new();
        row.write_canonical(&mut text).unwrap();
        assert_eq!(text, to_canonical_json(&row.to_canon()).unwrap(), "{row:?}");
    }
}

/// A composition with scopes, two local providers of one capability (so a
/// physical provider list holds several instance ids), a tool and a config
/// on `db-b` that varies with `v`.
fn rederive_case(v: i64) -> Composition {
    let config = |v: i64| ConfigValue::Table([("v".to_owned(), ConfigValue::Int(v))].into());
    CompositionBuilder::new()
        .scope("/research", None)
        .scope("/research/deep", Some(&["database", "cache"]))
        .entry("db-a")
        .provides("database", &["1.0.0"])
        .entry("db-b")
        .provides("database", &["1.0.0", "2.0.0"])
        .provides("cache", &["1.0.0"])
        .tool("lookup", "look up", None)
        .config(config(v))
        .entry("app")
        .in_scope("/research/deep")
        .requires("database", ">=1,<2")
        .prefer("database", "db-b")
        .requires("cache", "")
        .config(config(1))
        .entry("helper")
        .in_scope("/research")
        .requires("cache", ">=1")
        .build()
        .unwrap()
}

#[test]
fn a_rederived_snapshot_is_the_built_one() {
    let (a, b) = (rederive_case(1), rederive_case(2));
    let tree = ScopeTree::new(&a);
    let plan = crate::engine::resolve::resolve_with_tree(&a, &tree);
    assert!(plan.pending.is_empty(), "{:?}", plan.pending);
    let first = SnapshotContext::default();
    let previous = build_snapshot(&a, &tree, &plan, &first).unwrap();
    let position = |id: &str| {
        plan.activation_order
            .iter()
            .position(|e| e.as_str() == id)
            .unwrap()
    };
    // db-b is mounted again (mount 2), and app, bound to it, too (mount 3).
    let mut ctx = SnapshotContext {
        generation: crate::engine::identity::GenerationId::from_sequence(2),
        ..SnapshotContext::default()
    };
    for (id, mount) in [("db-b", 2), ("app", 3)] {
        ctx.mounts
            .insert(crate::engine::model::EntryId::new(id).unwrap(), mount);
    }
    let remounted = [position("db-b"), position("app")];
    let derived = rederive_snapshot(&previous, &b, &tree, &plan, &ctx, &remounted).unwrap();
    let built = build_snapshot(&b, &tree, &plan, &ctx).unwrap();
    assert_eq!(derived, built);
    assert_ne!(derived.config_hash, previous.config_hash);
    assert_ne!(derived.scopes, previous.scopes);
    assert!(Arc::ptr_eq(
        &derived.semantic_scopes,
        &previous.semantic_scopes
    ));
    let text = derived.semantic_scopes.text();
    assert_eq!(*text.text, derived.semantic_scopes.canonical_text());
    assert_eq!(text.providers.len(), derived.scopes.scopes.len());
    assert_eq!(
        derived.digests_with_semantic_text(&text).unwrap(),
        built.digests().unwrap()
    );
    // The physical tree written over the semantic text is its own text.
    let mut over = String::new();
    derived
        .scopes
        .write_canonical_over(&text, &mut over)
        .unwrap();
    assert_eq!(over, derived.scopes.canonical_text());
    assert_ne!(over, *text.text);
    // Nothing remounted: only the generation and the configuration hash move.
    let same = SnapshotContext {
        generation: crate::engine::identity::GenerationId::from_sequence(3),
        ..SnapshotContext::default()
    };
    assert_eq!(
        rederive_snapshot(&previous, &b, &tree, &plan, &same, &[]).unwrap(),
        build_snapshot(&b, &tree, &plan, &same).unwrap()
    );
    // What the previous snapshot's context put in its metadata is not
    // carried over: the tool contracts come from the entries, and a key the
    // composition does not fill (`mcp_servers` here) stays out.
    let stale = SnapshotContext {
        metadata: [
            ("mcp_servers".to_owned(), Canon::Str("from-ctx".into())),
            (TOOL_CONTRACTS.to_owned(), Canon::Str("from-ctx".into())),
        ]
        .into(),
        ..SnapshotContext::default()
    };
    let previous = build_snapshot(&a, &tree, &plan, &stale).unwrap();
    assert_eq!(
        previous.metadata.get("mcp_servers"),
        Some(&Canon::Str("from-ctx".into()))
    );
    let derived = rederive_snapshot(&previous, &b, &tree, &plan, &same, &[]).unwrap();
    assert_eq!(derived, build_snapshot(&b, &tree, &plan, &same).unwrap());
    assert!(!derived.metadata.contains_key("mcp_servers"));
    assert!(derived.metadata.contains_key(TOOL_CONTRACTS));
}

/// A composition large enough for the two-core paths: `scopes` scopes
/// under `/` (some with a capability view), each with a local provider of
/// `shard` and consumers of it and of the root `database`.
fn wide_composition(scopes: usize, consumers: usize) -> Composition {
    let mut b = CompositionBuilder::new();
    for k in 0..scopes {
        let view: Option<&[&str]> = (k % 3 == 0).then_some(&["database", "shard"][..]);
        b = b.scope(&format!("/w{k:04}"), view);
    }
    b = b
        .entry("db")
        .plugin("postgres", "1.4.2")
        .provides("database", &["1.4.2"])
        .tool("query", "Run a query.", None);
    for k in 0..scopes {
        let scope = format!("/w{k:04}");
        b = b
            .entry(&format!("shard-{k:04}"))
            .plugin("shard", "1.0.0")
            .in_scope(&scope)
            .provides("shard", &["1.0.0"]);
        for c in 0..consumers {
            b = b
                .entry(&format!("app-{k:04}-{c:02}"))
                .plugin("app", "1.0.0")
                .in_scope(&scope)
                .requires("database", ">=1,<2")
                .requires("shard", ">=1,<2");
        }
    }
    b.build().unwrap()
}

#[test]
fn building_and_hashing_in_one_pipeline_is_building_then_hashing() {
    for (scopes, consumers) in [(3, 2), (400, 12)] {
        let c = wide_composition(scopes, consumers);
        let tree = ScopeTree::new(&c);
        let plan = resolve(&c);
        assert!(plan.is_complete());
        let mut ctx = SnapshotContext::default();
        // A remounted entry: the physical tree differs in its providers.
        ctx.mounts
            .insert(crate::engine::model::EntryId::new("shard-0001").unwrap(), 3);
        let built = build_snapshot(&c, &tree, &plan, &ctx).unwrap();
        let (record, digests) = build_snapshot_digested(&c, &tree, &plan, &ctx).unwrap();
        assert_eq!(record, built, "{scopes} scopes");
        assert_eq!(digests, built.digests().unwrap(), "{scopes} scopes");
        assert_eq!(
            digests.digest,
            crate::engine::canonical::stable_hash(&built.to_canon()).unwrap()
        );
        assert_eq!(
            digests.semantic_digest,
            crate::engine::canonical::stable_hash(&built.semantic_composition()).unwrap()
        );
    }
    // The large one is large enough for the pipeline.
    let c = wide_composition(400, 12);
    let tree = ScopeTree::new(&c);
    assert!(
        tree.len() + resolve(&c).resolutions.len() + c.entries.len()
            >= crate::engine::parallel::PARALLEL_MIN_WORK
    );
}

#[test]
fn the_snapshot_graph_hash_is_the_canon_one_for_awkward_ids() {
    // Ids with quotes, backslashes and non-ASCII text, and one longer than
    // the hasher's buffer.
    let long = format!("long-{}", "x".repeat(1500));
    let ids = [
        "a\"quote",
        "back\\slash",
        "ünï\u{202e}code",
        long.as_str(),
        "plain",
    ];
    let mut b = CompositionBuilder::new()
        .entry("db\"1")
        .plugin("post\"gres", "1.4.2")
        .provides("database", &["1.4.2"]);
    for id in ids {
        b = b.entry(id).requires("database", ">=1,<2");
    }
    let c = b.build().unwrap();
    let plan = resolve(&c);
    assert!(plan.is_complete());
    assert_eq!(plan.edges.len(), ids.len());
    let active: Vec<&crate::engine::model::Entry> = plan
        .activation_order
        .iter()
        .map(|id| &c.entries[id])
        .collect();
    let record =
        build_snapshot(&c, &ScopeTree::new(&c), &plan, &SnapshotContext::default()).unwrap();
    assert_eq!(
        record.plugin_graph_hash,
        plugin_graph_hash(&active, &plan).unwrap()
    );
}

#[test]
fn the_envelope_view_writes_the_canon_envelope_byte_for_byte() {
    use super::serialize::canon_of;
    let mut records: Vec<SnapshotRecord> = Vec::new();
    for line in read_jsonl("reference-snapshots.jsonl") {
        records.push(parse_document(&line["snapshot"]).unwrap().snapshot);
    }
    for v in 0..3 {
        records.push(snapshot_of(&rederive_case(v)));
    }
    records.push(snapshot_of(&wide_composition(6, 20)));
    let mut odd = snapshot_of(&rederive_case(7));
    odd.agent = Some("a\"gent".into());
    odd.metadata
        .insert("agents".into(), Canon::map([("x", Canon::Float(0.5))]));
    records.push(odd);
    assert!(records.len() > 10);
    for r in &records {
        let view = EnvelopeView::new(r).unwrap();
        let canon = canon_of(&view);
        assert_eq!(
            serde_json::to_string_pretty(&view).unwrap(),
            serde_json::to_string_pretty(&canon).unwrap()
        );
        assert_eq!(
            serde_json::to_string(&view).unwrap(),
            serde_json::to_string(&canon).unwrap()
        );
    }
}

/// The tool hashes written once from each declaration's text are the
/// hashes of the canonical trees they replaced: every tool sorted by name
/// (equal names in activation order), and per name the list of its
/// declarations.
#[test]
fn tool_hashes_are_the_canon_ones_with_repeated_names() {
    use crate::engine::canonical::stable_hash;
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"z": {"type": "number", "maximum": 2.5}, "a": {"enum": ["x", 1]}},
        "required": ["a"]
    });
    let c = CompositionBuilder::new()
        .entry("b")
        .tool("search", "finds \"it\"", Some(schema.clone()))
        .tool("write", "writes", None)
        .entry("a")
        .tool("search", "looks", None)
        .tool(
            "alpha",
            "first",
            Some(serde_json::json!({"type": "object"})),
        )
        .build()
        .unwrap();
    let s = snapshot_of(&c);
    let plan = resolve(&c);
    let active: Vec<&crate::engine::model::Entry> = plan
        .activation_order
        .iter()
        .map(|id| &c.entries[id])
        .collect();
    let decl = |t: &crate::engine::model::ToolDecl| {
        Canon::map([
            ("name", Canon::from(t.name.as_str())),
            ("description", Canon::from(t.description.as_str())),
            (
                "args",
                t.args_schema.as_ref().map_or(Canon::Null, Canon::from_json),
            ),
        ])
    };
    let mut all: Vec<(&str, Canon)> = active
        .iter()
        .flat_map(|e| e.manifest.tools.iter().map(|t| (t.name.as_str(), decl(t))))
        .collect();
    all.sort_by(|a, b| a.0.cmp(b.0));
    let whole = stable_hash(&Canon::List(all.iter().map(|(_, d)| d.clone()).collect())).unwrap();
    assert_eq!(s.tool_schema_hash, whole);
    let mut by_name: std::collections::BTreeMap<String, Vec<Canon>> = Default::default();
    for (name, d) in all {
        by_name.entry(name.to_owned()).or_default().push(d);
    }
    assert_eq!(by_name["search"].len(), 2);
    let contracts = Canon::Map(
        by_name
            .into_iter()
            .map(|(n, ds)| (n, Canon::Str(stable_hash(&Canon::List(ds)).unwrap())))
            .collect(),
    );
    assert_eq!(s.metadata[TOOL_CONTRACTS], contracts);
}
