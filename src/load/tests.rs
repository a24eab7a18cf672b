//! Loader tests: the format, its errors and their positions.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::engine::diag::Code;
use crate::engine::model::{
    CapabilityName, ConfigValue, Entry, EntryId, Manifest, Provided, Requirement, ScopeDecl,
    ScopePath, SecretRef, ToolDecl, ToolName,
};
use crate::engine::span::Located;
use crate::engine::specifier::Specifier;
use crate::engine::version::Version;

/// Every (code, line, col) of the primary labels, in diagnostic order.
pub(super) fn found(l: &Loaded) -> Vec<(Code, usize, usize)> {
    l.diagnostics
        .iter()
        .map(|d| {
            let (line, col) = d
                .labels
                .iter()
                .find(|l| l.primary)
                .map_or((0, 0), |label| l.sources.line_col(label.origin));
            (d.code, line, col)
        })
        .collect()
}

/// The one diagnostic with `code`.
pub(super) fn only(l: &Loaded, code: Code) -> &crate::engine::diag::Diagnostic {
    let all: Vec<_> = l.diagnostics.iter().filter(|d| d.code == code).collect();
    assert_eq!(all.len(), 1, "expected one {code}: {:#?}", l.diagnostics);
    all[0]
}

/// The composition with every origin removed, for comparing loads of
/// differently laid out texts.
pub(super) fn strip(c: &Composition) -> Composition {
    let mut c = c.clone();
    let strip_reqs = |reqs: &mut crate::engine::model::SmallMap<CapabilityName, Requirement>| {
        reqs.values_mut().for_each(|r| r.origin = None)
    };
    for s in c.scopes.values_mut() {
        s.origin = None;
        strip_reqs(&mut s.requirements);
    }
    for e in c.entries.values_mut() {
        e.origin = None;
        let mut m = (*e.manifest).clone();
        m.origin = None;
        m.provides.values_mut().for_each(|p| p.origin = None);
        strip_reqs(&mut m.requires);
        m.tools.iter_mut().for_each(|t| t.origin = None);
        e.manifest = Arc::new(m);
    }
    c.disabled.values_mut().for_each(|o| *o = None);
    c
}

fn cap(s: &str) -> CapabilityName {
    CapabilityName::new(s).unwrap()
}
fn id(s: &str) -> EntryId {
    EntryId::new(s).unwrap()
}
fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}
fn req(c: &str, spec: &str, optional: bool) -> (CapabilityName, Requirement) {
    let mut r = Requirement::hard(cap(c), Specifier::parse(spec).unwrap());
    r.optional = optional;
    (cap(c), r)
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/compositions")
        .join(name)
}

fn expected_full() -> Composition {
    let mut app = Manifest::new("app", v("0.3.0"));
    app.requires = [req("database", ">=1,<2", false), req("vector", ">=2", true)]
        .into_iter()
        .collect();
    app.permissions = vec!["network:api.example.com".into(), "fs.read".into()];
    let args = serde_json::json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]});
    let tool = |name: &str, description: &str, args_schema| ToolDecl {
        name: ToolName::new(name).unwrap(),
        description: description.into(),
        args_schema,
        result: None,
        guide: None,
        origin: None,
        policy: None,
    };
    app.tools = vec![
        tool("answer", "Answer a question.", None),
        tool("search", "Search documents.", Some(args)),
    ];
    let app = Arc::new(app);

    let mut pg = Manifest::new("postgres-impl", v("1.4.2"));
    let provided = |c: &str, vs: &[&str]| {
        (
            cap(c),
            Provided {
                capability: cap(c),
                versions: vs.iter().map(|s| v(s)).collect(),
                origin: None,
            },
        )
    };
    pg.provides = [
        provided("database", &["1.4.2", "2.0.0"]),
        provided("sql", &["1.0"]),
    ]
    .into_iter()
    .collect();
    pg.config_version = 2;
    pg.metadata = [("team".to_owned(), ConfigValue::Str("data".into()))]
        .into_iter()
        .collect();
    let pg = Arc::new(pg);

    let research = ScopePath::new("/research").unwrap();
    let mut comp = Composition::new();
    let mut scope = ScopeDecl::new(research.clone());
    scope.capabilities = Some([cap("database"), cap("model")].into_iter().collect());
    scope.tools = Some([ToolName::new("search").unwrap()].into_iter().collect());
    scope.requirements = [req("database", ">=1,<2", false)].into_iter().collect();
    scope.prefer = [(cap("database"), Located::bare(id("db-replica")))]
        .into_iter()
        .collect();
    scope.metadata = [("owner".to_owned(), ConfigValue::Str("research".into()))]
        .into_iter()
        .collect();
    comp.insert_scope(scope);
    comp.insert_scope(ScopeDecl::new(ScopePath::new("/research/intern").unwrap()));

    let table = |pairs: Vec<(&str, ConfigValue)>| {
        ConfigValue::Table(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    };
    let mut e = Entry::new(id("app"), app).in_scope(research.clone());
    e.plugin = Located::bare("app".into());
    *std::sync::Arc::make_mut(&mut e.config) = table(vec![
        (
            "endpoint",
            ConfigValue::Str("https://api.example.com".into()),
        ),
        (
            "password",
            ConfigValue::Secret(SecretRef {
                name: "APP_PASSWORD".into(),
            }),
        ),
        ("retries", ConfigValue::Int(3)),
    ]);
    e.prefer = [(cap("database"), Located::bare(id("db-replica")))]
        .into_iter()
        .collect();
    comp.insert_entry(e);
    let mut e = Entry::new(id("db"), pg.clone());
    e.plugin = Located::bare("postgres".into());
    *std::sync::Arc::make_mut(&mut e.config) = table(vec![
        ("dsn", ConfigValue::Str("postgres://app@db/main".into())),
        (
            "pool",
            table(vec![
                ("size", ConfigValue::Int(4)),
                ("timeout", ConfigValue::Float(2.5)),
            ]),
        ),
    ]);
    comp.insert_entry(e);
    let mut e = Entry::new(id("db-replica"), pg).in_scope(research);
    e.plugin = Located::bare("postgres".into());
    comp.insert_entry(e);
    comp.disabled.insert(id("old-db"), None);
    comp.preferences
        .global
        .insert(cap("database"), Located::bare(id("db")));
    comp
}

#[test]
fn full_fixture_round_trips() {
    let l = load(&FsSource, &fixture("full/composition.toml"));
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    let comp = l.composition.expect("valid");
    assert_eq!(strip(&comp), expected_full());
    // Include traversal order: root, then plugins/ sorted, then scopes.toml.
    let names: Vec<String> = l
        .sources
        .ids()
        .map(|i| l.sources.name(i).replace('\\', "/"))
        .collect();
    assert!(names[0].ends_with("full/composition.toml"), "{names:?}");
    assert!(
        names[1].ends_with("plugins/app.toml") && names[2].ends_with("plugins/postgres.toml"),
        "{names:?}"
    );
    assert!(names[3].ends_with("scopes.toml"));
    // Origins point at the keys.
    let db = &comp.entries["db"];
    assert_eq!(l.sources.line_col(db.origin.unwrap()), (13, 10));
    assert_eq!(
        l.sources.line_col(comp.disabled["old-db"].unwrap()),
        (22, 10)
    );
    assert!(comp.scopes["/research/intern"].origin.is_some());
    assert!(!comp.scopes["/research"].implied);
}

#[test]
fn memory_source_loads_the_same_composition() {
    let mut src = MemorySource::new();
    for f in [
        "composition.toml",
        "plugins/app.toml",
        "plugins/postgres.toml",
        "scopes.toml",
    ] {
        src.insert(f, std::fs::read_to_string(fixture("full").join(f)).unwrap());
    }
    let l = load(&src, Path::new("composition.toml"));
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    assert_eq!(strip(&l.composition.unwrap()), expected_full());
    assert_eq!(
        l.sources.name(crate::engine::span::SourceId(1)),
        "plugins/app.toml"
    );
}

#[test]
fn errors_fixture_reports_everything() {
    // `missing.toml` cannot be read: what it would declare is unknown, so
    // the scope, entry and plugin the root names are no findings of their
    // own.
    let l = load(&FsSource, &fixture("errors/composition.toml"));
    assert!(l.composition.is_none());
    let codes: Vec<(Code, usize, usize)> = found(&l);
    let expected = [
        (Code::IncludeMissing, 2, 12),
        (Code::BadVersion, 5, 15),
        (Code::DuplicateContract, 6, 30),
        (Code::UnknownKey, 7, 1),
        (Code::LiteralSecret, 11, 22),
        (Code::DuplicateId, 1, 10),
    ];
    assert_eq!(codes, expected, "{:#?}", l.diagnostics);
    // Every file read, every problem.
    let mut src = MemorySource::new();
    for f in ["composition.toml", "other.toml"] {
        let text = std::fs::read_to_string(fixture("errors").join(f)).unwrap();
        src.insert(f, text.replace("\"missing.toml\", ", ""));
    }
    let l = load(&src, Path::new("composition.toml"));
    let codes: Vec<(Code, usize, usize)> = found(&l);
    let expected = [
        (Code::BadVersion, 5, 15),
        (Code::DuplicateContract, 6, 30),
        (Code::UnknownKey, 7, 1),
        (Code::UnknownScope, 10, 9),
        (Code::LiteralSecret, 11, 22),
        (Code::UnknownEntry, 12, 17),
        (Code::UnknownPlugin, 15, 10),
        (Code::DuplicateId, 1, 10),
    ];
    assert_eq!(codes, expected, "{:#?}", l.diagnostics);
    let dup = only(&l, Code::DuplicateId);
    assert_eq!(dup.labels.len(), 2);
    assert_eq!(l.sources.line_col(dup.labels[1].origin), (4, 10));
    assert_ne!(dup.labels[0].origin.source, dup.labels[1].origin.source);
    assert_eq!(
        only(&l, Code::UnknownKey).help,
        vec!["did you mean `requires`?".to_owned()]
    );
    assert_eq!(
        only(&l, Code::UnknownEntry).help,
        vec!["did you mean `db`?".to_owned()]
    );
    let plugin = only(&l, Code::UnknownPlugin);
    assert_eq!(
        plugin.help,
        vec![
            "did you mean `svc`?".to_owned(),
            format!(
                "available plugins: `svc`; built-in kinds: {}",
                crate::engine::builtin::kinds()
                    .iter()
                    .map(|k| k.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        ]
    );
    for d in &l.diagnostics {
        assert!(!format!("{d:?}").contains("canary"), "{d:?}");
    }
}
