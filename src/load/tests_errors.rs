//! Loader tests: every error kind with its code and position.

use super::tests::{found, only, strip};
use super::*;
use crate::engine::diag::{Code, Severity};
use crate::engine::model::{ConfigValue, SecretRef};

#[test]
fn version_is_required_and_checked() {
    let l = load_str("c.toml", "[entries]\n");
    assert_eq!(found(&l), vec![(Code::MissingKey, 1, 1)]);
    let l = load_str("c.toml", "version = 2\n[entriez.x]\n");
    assert_eq!(found(&l), vec![(Code::UnsupportedVersion, 1, 11)]);
    assert_eq!(
        l.diagnostics[0].help,
        vec!["supported versions: 1".to_owned()]
    );
    let l = load_str("c.toml", "version = \"1\"\n");
    assert_eq!(found(&l), vec![(Code::UnsupportedVersion, 1, 11)]);
    assert!(load_str("c.toml", "version = 1\n").composition.is_some());
}

#[test]
fn unknown_keys_at_every_level_suggest() {
    let text = r#"version = 1
entires = {}
[plugins.p]
version = "1.0.0"
requries = { x = "1" }
[[plugins.p.tools]]
name = "t"
descripton = "d"
[entries.p]
sope = "/"
[scopes."/a"]
capabilites = []
"#;
    let l = load_str("c.toml", text);
    let unknown: Vec<_> = l
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::UnknownKey)
        .collect();
    let helps: Vec<&str> = unknown.iter().map(|d| d.help[0].as_str()).collect();
    assert_eq!(
        helps,
        vec![
            "did you mean `entries`?",
            "did you mean `requires`?",
            "did you mean `description`?",
            "did you mean `scope`?",
            "did you mean `capabilities`?"
        ]
    );
    // The tool also misses its description.
    assert!(
        found(&l).contains(&(Code::MissingKey, 6, 1)),
        "{:#?}",
        found(&l)
    );
    assert!(found(&l).contains(&(Code::UnknownKey, 5, 1)));
    let l = load_str("c.toml", "version = 1\nzzz = 1\n");
    assert!(l.diagnostics[0].help[0].starts_with("expected one of `version`, `include`"));
}

#[test]
fn wrong_types_are_reported_with_positions() {
    let text = "version = 1\n[plugins.p]\nversion = 1\nprovides = \"x\"\n[entries.p]\nenabled = \"yes\"\nscope = 3\n";
    let l = load_str("c.toml", text);
    assert_eq!(
        found(&l),
        vec![
            (Code::WrongType, 3, 11),
            (Code::WrongType, 4, 12),
            (Code::WrongType, 6, 11),
            (Code::WrongType, 7, 9)
        ]
    );
    assert_eq!(
        l.diagnostics[0].message,
        "`plugins.p.version` must be a string, found an integer"
    );
}

#[test]
fn version_and_specifier_errors_point_inside_strings() {
    let text =
        "version = 1\n[plugins.p]\nversion = \"1.0.post1\"\nrequires = { a = \">=1,<<2\" }\n";
    let l = load_str("c.toml", text);
    let f = found(&l);
    assert_eq!(f[0].0, Code::BadVersion);
    assert_eq!((f[0].1, f[0].2 > 12), (3, true), "{f:?}");
    assert_eq!(f[1].0, Code::BadSpecifier);
    assert!(f[1].2 > 18, "{f:?}");
    let bad = &l.diagnostics[0];
    assert!(
        !bad.help.is_empty(),
        "version help comes from the parser: {bad:?}"
    );
    // With escapes, the whole value is labelled.
    let l = load_str(
        "c.toml",
        "version = 1\n[plugins.p]\nversion = \"1.0\\u0020x\"\n",
    );
    assert_eq!(found(&l), vec![(Code::BadVersion, 3, 11)]);
    let span = l.diagnostics[0].labels[0].origin.span;
    assert_eq!(span.len(), "\"1.0\\u0020x\"".len());
}

#[test]
fn manifest_rules() {
    let text = r#"version = 1
[plugins.p]
version = "1.0.0"
provides = { a = ["1.0.0", "1.5.0"], b = [], c = "2.0.0" }
requires = { x = ">=1" }
optional = { x = ">=2" }
permissions = [":res", "ok:res"]
config_version = -1
[[plugins.p.tools]]
name = "t"
description = "first"
[[plugins.p.tools]]
name = "t"
description = "again"
[[plugins.p.tools]]
name = "u"
description = ""
"#;
    let l = load_str("c.toml", text);
    assert_eq!(
        found(&l),
        vec![
            (Code::DuplicateContract, 4, 28),
            (Code::InvalidValue, 4, 42),
            (Code::RequiredAndOptional, 6, 14),
            (Code::InvalidValue, 7, 16),
            (Code::InvalidValue, 8, 18),
            (Code::DuplicateTool, 13, 8),
            (Code::InvalidValue, 17, 15),
        ],
        "{:#?}",
        l.diagnostics
    );
    let dup = only(&l, Code::DuplicateContract);
    assert_eq!(l.sources.line_col(dup.labels[1].origin), (4, 19));
    let both = only(&l, Code::RequiredAndOptional);
    assert_eq!(l.sources.line_col(both.labels[1].origin), (5, 14));
    let tool = only(&l, Code::DuplicateTool);
    assert_eq!(l.sources.line_col(tool.labels[1].origin), (10, 8));
}

#[test]
fn bad_names_use_model_constructors() {
    let text = r#"version = 1
[plugins.p]
version = "1.0.0"
provides = { "data base" = "1.0.0" }
[entries." p"]
plugin = "p"
[entries.q]
plugin = "p"
scope = "research/"
[scopes."/a/"]
tools = ["two words"]
"#;
    let l = load_str("c.toml", text);
    assert_eq!(
        found(&l),
        vec![
            (Code::BadName, 4, 14),
            (Code::BadName, 5, 10),
            (Code::BadName, 9, 9),
            (Code::BadName, 10, 9),
            (Code::BadName, 11, 10)
        ],
        "{:#?}",
        l.diagnostics
    );
    assert!(
        l.diagnostics[2]
            .help
            .iter()
            .any(|h| h.contains("/research")),
        "{:?}",
        l.diagnostics[2]
    );
}

#[test]
fn references_are_checked() {
    let text = r#"version = 1
[prefer]
database = "dbx"
[plugins.pg]
version = "1.0.0"
[entries.db]
plugin = "pg"
scope = "/resarch"
prefer = { x = "old" }
[entries.old]
plugin = "pgg"
enabled = false
[scopes."/research/deep"]
prefer = { y = "nobody" }
"#;
    let l = load_str("c.toml", text);
    assert_eq!(
        found(&l),
        vec![
            (Code::UnknownEntry, 3, 12),
            (Code::UnknownScope, 8, 9),
            (Code::UnknownPlugin, 11, 10),
            (Code::UnknownEntry, 14, 16),
        ],
        "{:#?}",
        l.diagnostics
    );
    assert_eq!(
        only(&l, Code::UnknownScope).help[0],
        "did you mean `/research`?"
    );
    // An implied ancestor is a valid scope, and a disabled entry can be preferred.
    let ok = "version = 1\n[plugins.pg]\nversion = \"1.0.0\"\n[entries.db]\nplugin = \"pg\"\nscope = \"/research\"\n\
              prefer = { x = \"old\" }\n[entries.old]\nplugin = \"pg\"\nenabled = false\n[scopes.\"/research/deep\"]\n";
    let l = load_str("c.toml", ok);
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    let comp = l.composition.unwrap();
    assert!(comp.scopes["/research"].implied);
    assert!(comp.disabled.contains_key("old"));
    assert!(!comp.entries.contains_key("old"));
}

#[test]
fn unknown_plugin_without_any_catalog() {
    let l = load_str("c.toml", "version = 1\n[entries.app]\n");
    let d = only(&l, Code::UnknownPlugin);
    assert_eq!(found(&l), vec![(Code::UnknownPlugin, 2, 10)]);
    assert!(d.help[0].starts_with("no plugins are declared"));
}

#[test]
fn secrets_and_literal_secret_warnings() {
    let text = r#"version = 1
[plugins.p]
version = "1.0.0"
[entries.p.config]
token = { secret = "TOKEN" }
api_key = "sk-canary-123456"
nested = { password = "hunter2-canary", other = "fine" }
not_a_ref = { secret = "A", extra = 1 }
"#;
    let l = load_str("c.toml", text);
    // `secret = "A"` next to another key is no reference: a literal under `secret`.
    assert_eq!(
        found(&l),
        vec![
            (Code::LiteralSecret, 6, 11),
            (Code::LiteralSecret, 7, 23),
            (Code::LiteralSecret, 8, 24)
        ]
    );
    assert!(
        l.diagnostics
            .iter()
            .all(|d| d.severity == Severity::Warning)
    );
    let d = &l.diagnostics[0];
    assert_eq!(
        d.message,
        "`api_key` holds a literal value; use `{ secret = \"NAME\" }`"
    );
    for d in &l.diagnostics {
        assert!(!format!("{d:?}").contains("canary"), "{d:?}");
    }
    let comp = l
        .composition
        .expect("warnings do not prevent the composition");
    let config = &comp.entries["p"].config;
    let ConfigValue::Table(t) = &**config else {
        panic!()
    };
    assert_eq!(
        t["token"],
        ConfigValue::Secret(SecretRef {
            name: "TOKEN".into()
        })
    );
    assert!(matches!(t["not_a_ref"], ConfigValue::Table(_)));
    assert_eq!(config.secret_refs().len(), 1);
    // The shown text never has the values.
    let shown = l.sources.display_text(crate::engine::span::SourceId(0));
    assert!(!shown.contains("canary"), "{shown}");
}

#[test]
fn non_finite_floats_and_bad_secret_names() {
    let text = "version = 1\n[plugins.p]\nversion = \"1.0.0\"\n[entries.p.config]\na = nan\nb = -inf\nc = { secret = \"\" }\nd = 1.5e3\n";
    let l = load_str("c.toml", text);
    assert_eq!(
        found(&l),
        vec![
            (Code::InvalidValue, 5, 5),
            (Code::InvalidValue, 6, 5),
            (Code::InvalidValue, 7, 16)
        ]
    );
}

#[test]
fn syntax_errors_are_all_reported_and_other_errors_still_found() {
    let text = "version = 1\nx = = 1\n[plugins.p]\nversion = \"1.0.0\"\nrequries = {}\ny = \"unterminated\n";
    let l = load_str("c.toml", text);
    let f = found(&l);
    let syntax = f.iter().filter(|x| x.0 == Code::Syntax).count();
    assert!(syntax >= 2, "{f:?}");
    assert!(
        f.iter().any(|x| x.0 == Code::UnknownKey && x.1 == 5),
        "{f:?}"
    );
    assert!(l.composition.is_none());
}

#[test]
fn shuffled_entries_give_the_same_composition() {
    let blocks = [
        "[plugins.pg]\nversion = \"1.0.0\"\nprovides = { db = \"1.0.0\" }\n",
        "[entries.a]\nplugin = \"pg\"\nscope = \"/x\"\n",
        "[entries.b]\nplugin = \"pg\"\nconfig = { n = 1 }\n",
        "[scopes.\"/x\"]\nrequires = { db = \"1\" }\n",
        "[prefer]\ndb = \"b\"\n",
    ];
    let mut seen = Vec::new();
    for order in [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 0, 4, 1, 3]] {
        let mut text = String::from("version = 1\n");
        order.iter().for_each(|&i| text.push_str(blocks[i]));
        let l = load_str("c.toml", &text);
        assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
        seen.push(strip(&l.composition.unwrap()));
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn spans_inside_literal_and_multi_line_strings() {
    // The parser flags the second `<` (byte 5 of the content): column 15 + 5
    // after `'`, 17 + 5 after `"""`.
    for (text, col) in [
        (
            "version = 1\n[plugins.p]\nversion = \"1.0.0\"\nrequires.a = '>=1,<<2'\n",
            20,
        ),
        (
            "version = 1\n[plugins.p]\nversion = \"1.0.0\"\nrequires.a = \"\"\">=1,<<2\"\"\"\n",
            22,
        ),
    ] {
        let l = load_str("c.toml", text);
        let f = found(&l);
        assert_eq!(f.len(), 1, "{:#?}", l.diagnostics);
        assert_eq!(f[0].0, Code::BadSpecifier);
        assert_eq!(f[0].2, col, "{text}: {f:?}");
    }
}

#[test]
fn scope_policy_and_secrets_kinds_point_at_the_bad_rule() {
    let text = r#"version = 1
[entries.p]
plugin = "policy"
config = { grants = ["ok", "*"] }
[entries.q]
plugin = "policy"
config = { tools = {} }
[entries.s]
plugin = "secrets.env"
config = { aliases = { "db.password" = "A=B" } }
"#;
    let l = load_str("c.toml", text);
    // The bare `*`, the per-tool overrides that belong to `[policy]`, the
    // alias; the variable name under `db.password` is no literal secret.
    assert_eq!(
        found(&l),
        vec![
            (Code::BadConfig, 4, 28),
            (Code::BadConfig, 7, 20),
            (Code::BadConfig, 10, 40)
        ]
    );
    assert!(
        l.diagnostics[0]
            .message
            .contains("bad grant `*`: a bare `*` is not a permission name"),
        "{:?}",
        l.diagnostics
    );
}

#[test]
fn a_process_plugin_hashes_its_files_and_reports_what_is_wrong_where() {
    let toml = |plugin: &str| {
        format!("version = 1\n[plugins.p]\nversion = \"1.0.0\"\n{plugin}\n[entries.p]\n")
    };
    let src = |plugin: &str| {
        MemorySource::new()
            .with("plugins/c.toml", toml(plugin))
            .with("plugins/p.py", "print('hi')\n")
            .with("plugins/lib.py", "x = 1\n")
    };
    // Default files: the argv entries that are files beside the manifest.
    let l = load(
        &src("command = [\"python3\", \"-u\", \"p.py\"]"),
        Path::new("plugins/c.toml"),
    );
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    let comp = l.composition.unwrap();
    let m = &comp.entries["p"].manifest;
    assert_eq!(m.kind.as_deref(), Some(crate::engine::model::PROCESS_KIND));
    let p = m.process.as_ref().unwrap();
    assert_eq!(p.argv, ["python3", "-u", "p.py"]);
    let files: Vec<&str> = p.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, ["p.py"]);
    {
        use sha2::Digest;
        let expected = format!("{:x}", sha2::Sha256::digest(b"print('hi')\n"));
        assert_eq!(p.files[0].sha256, expected);
    }
    assert!(p.dir.ends_with("plugins"), "{}", p.dir.display());
    // The program counts when it is a path beside the manifest and no
    // argument is a file (`./p.py` runs itself); an interpreter beside it
    // that runs a file is not the plugin's code.
    for (command, expected) in [
        ("[\"./p.py\"]", vec!["p.py"]),
        ("[\"./p.py\", \"--port\", \"8080\"]", vec!["p.py"]),
        ("[\"./p.py\", \"lib.py\"]", vec!["lib.py"]),
        ("[\"./p.py\", \"-m\", \"app\"]", vec![]),
        ("[\"p.py\"]", vec![]),
        ("[\"./gone\"]", vec![]),
    ] {
        let l = load(
            &src(&format!("command = {command}")),
            Path::new("plugins/c.toml"),
        );
        assert!(l.diagnostics.is_empty(), "{command}: {:#?}", l.diagnostics);
        let comp = l.composition.unwrap();
        let p = comp.entries["p"].manifest.process.clone().unwrap();
        let files: Vec<&str> = p.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(files, expected, "{command}");
    }
    // Listed files must exist; each error points at its string.
    let l = load(
        &src("command = [\"python3\", \"p.py\"]\nfiles = [\"p.py\", \"lib.py\", \"gone.py\"]"),
        Path::new("plugins/c.toml"),
    );
    assert_eq!(found(&l), vec![(Code::IncludeMissing, 5, 28)]);
    // An empty command, `kind` beside `command`, `env` without `command`.
    let l = load_str("c.toml", &toml("command = []"));
    assert_eq!(found(&l), vec![(Code::InvalidValue, 4, 11)]);
    let l = load_str(
        "c.toml",
        &toml("command = [\"x\"]\nkind = \"testing.liar\""),
    );
    assert_eq!(found(&l), vec![(Code::InvalidValue, 5, 8)]);
    let l = load_str("c.toml", &toml("env = [\"A\"]"));
    assert_eq!(found(&l), vec![(Code::InvalidValue, 4, 1)]);
    let l = load_str("c.toml", &toml("command = [\"x\"]\nenv = [\"1BAD\"]"));
    assert_eq!(found(&l), vec![(Code::InvalidValue, 5, 8)]);
    let l = load_str(
        "c.toml",
        &toml("command = [\"x\"]\nstartup_timeout_seconds = 0"),
    );
    assert_eq!(found(&l), vec![(Code::InvalidValue, 5, 27)]);
    let l = load_str(
        "c.toml",
        &toml("command = [\"x\"]\nstartup_timeout_seconds = 2.5"),
    );
    let comp = l.composition.expect("2.5 s is a timeout");
    let p = comp.entries["p"].manifest.process.clone().unwrap();
    assert_eq!(
        p.startup_timeout,
        Some(std::time::Duration::from_millis(2500))
    );
}

#[test]
fn a_tool_timeout_longer_than_a_day_is_refused_where_it_is_written() {
    // 1e20 s is no duration at all: accepted, it used to panic the run
    // when the tool was first called.
    for t in ["1e20", "86400.5"] {
        let text =
            format!("version = 1\n[policy.tools.echo]\nidempotent = true\ntimeout_seconds = {t}\n");
        let l = load_str("c.toml", &text);
        let d = only(&l, Code::BadPermission);
        assert!(d.message.contains("at most 86400"), "{t}: {}", d.message);
        assert_eq!(found(&l), vec![(Code::BadPermission, 2, 1)], "{t}");
    }
    let l = load_str(
        "c.toml",
        "version = 1\n[policy.tools.echo]\ntimeout_seconds = 86400\n",
    );
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    // An `mcp` entry's override of a server tool's policy too, where it is
    // written (it was refused only when the server was mounted).
    let l = load_str(
        "c.toml",
        "version = 1\n[entries.s]\nplugin = \"mcp\"\nconfig.command = \"srv\"\nconfig.policy.echo.timeout_seconds = 1e20\n",
    );
    let d = only(&l, Code::BadConfig);
    assert!(
        d.message.contains("policy.echo.timeout_seconds"),
        "{}",
        d.message
    );
}
