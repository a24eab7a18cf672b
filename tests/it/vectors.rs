//! The reference vectors written as TOML compositions: loading each through
//! the real loader and snapshotting it with the real binary must reproduce
//! the reference's hashes.

use crate::harness::{root, run};

#[test]
fn reference_compositions_in_toml_hash_like_the_reference() {
    let text = std::fs::read_to_string(root().join("tests/data/vectors/reference-snapshots.jsonl"))
        .unwrap();
    let mut checked = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let name = v["name"].as_str().unwrap();
        let file = format!("tests/data/reference/{name}.toml");
        let r = run(&["-q", "snapshot", &file]);
        if name == "version-normalisation" {
            // `01.0` is a PEP 440 spelling; semver forbids the leading zero,
            // so chassis refuses the file with a clear error instead.
            assert_eq!(r.code, 2, "{}", r.transcript());
            assert!(r.stderr.contains("leading zero"), "{}", r.stderr);
            continue;
        }
        assert_eq!(r.code, 0, "{name}: {}", r.transcript());
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let snap = &doc["snapshot"];
        for key in ["config_hash", "plugin_graph_hash", "tool_schema_hash"] {
            assert_eq!(snap[key], v[key], "{name}: {key}");
        }
        assert_eq!(
            snap["semantic_scopes"], v["semantic_scopes"],
            "{name}: semantic_scopes"
        );
        assert_eq!(snap["plugins"], v["snapshot"]["plugins"], "{name}: plugins");
        assert_eq!(
            snap["capabilities"], v["snapshot"]["capabilities"],
            "{name}: capabilities"
        );
        assert_eq!(
            doc["digests"]["semantic_digest"], v["semantic_digest"],
            "{name}: semantic_digest"
        );
        checked += 1;
    }
    assert_eq!(checked, 9);
}
