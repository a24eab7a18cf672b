use crate::engine::policy::{Grant, Permission, ResourcePattern};

#[test]
fn splits_at_first_colon_and_trims() {
    let p = Permission::parse("  database.query : db:orders ").unwrap();
    assert_eq!(p.name(), "database.query");
    assert_eq!(p.resource(), Some("db:orders"));
    assert_eq!(p.to_string(), "database.query:db:orders");
}

#[test]
fn unscoped_permission() {
    let p: Permission = "network.fetch".parse().unwrap();
    assert_eq!(p.resource(), None);
    assert_eq!(p.to_string(), "network.fetch");
}

#[test]
fn rejects_empty_parts_with_help() {
    for text in ["", "   ", ":/x", " : /x", "fs.read:", "fs.read:   "] {
        let e = Permission::parse(text).unwrap_err();
        assert!(e.help.is_some(), "{text:?}: {e}");
    }
}

#[test]
fn name_grammar() {
    for ok in ["a", "filesystem.read", "db.orders-ro", "x_1.y2", "a.b.c"] {
        Permission::parse(ok).unwrap();
    }
    for bad in [
        "Filesystem.read",
        "1fs",
        "fs..read",
        "fs.",
        ".fs",
        "fs read",
        "fs.*",
        "fs/read",
        "_a",
    ] {
        assert!(Permission::parse(bad).is_err(), "{bad}");
    }
    let e = Permission::parse("fs.Read").unwrap_err();
    assert_eq!(e.help.as_deref(), Some("permission names are lower-case"));
}

#[test]
fn new_is_exact() {
    assert!(Permission::new("fs.read", Some(" /x")).is_err());
    assert!(Permission::new("fs.read", Some("")).is_err());
    assert!(Permission::new("fs.read", Some("/a\0b")).is_err());
    assert!(Permission::new(" fs.read", None).is_err());
    assert_eq!(
        Permission::new("fs.read", Some("/x")).unwrap(),
        Permission::parse("fs.read:/x").unwrap()
    );
}

#[test]
fn serde_round_trip_as_string() {
    let p = Permission::parse("fs.read:/workspace/**").unwrap();
    let json = serde_json::to_string(&p).unwrap();
    assert_eq!(json, "\"fs.read:/workspace/**\"");
    assert_eq!(serde_json::from_str::<Permission>(&json).unwrap(), p);
    assert!(serde_json::from_str::<Permission>("\"Bad\"").is_err());
    let g: Grant = serde_json::from_str("\"fs.*:/workspace/**\"").unwrap();
    assert_eq!(serde_json::to_string(&g).unwrap(), "\"fs.*:/workspace/**\"");
}

#[test]
fn grant_names() {
    Grant::parse("filesystem.*").unwrap();
    Grant::parse("filesystem.read:/workspace/**").unwrap();
    assert!(Grant::parse("*").is_err());
    assert!(Grant::parse("*.read").is_err());
    assert!(Grant::parse("fs.*.read").is_err());
    assert!(Grant::parse("fs*").is_err());
}

#[test]
fn pattern_grammar() {
    for ok in [
        "/",
        "/**",
        "/workspace/**",
        "/a/**/b",
        "/a/*.txt",
        "**",
        "*.example.com",
        "db:orders",
    ] {
        ResourcePattern::parse(ok).unwrap();
    }
    for bad in [
        "",
        "/workspace/",
        "/workspace//a",
        "/workspace/./a",
        "/workspace/../etc",
        "/a**",
        "/**b/c",
        "/***",
        "a/../b",
        "/a%2e%2e/b",
        "/a\\b",
        "/a\0",
    ] {
        let e = ResourcePattern::parse(bad);
        assert!(e.is_err(), "{bad:?}");
    }
    let e = ResourcePattern::parse("/a**").unwrap_err();
    assert!(e.help.unwrap().contains("whole segment"));
}
