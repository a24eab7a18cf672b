//! Loader tests: includes, git revisions and rendered diagnostics.

use std::path::Path;
use std::process::Command;

use super::tests::{found, only, strip};
use super::*;
use crate::cli::diagnostic::render_plain;
use crate::engine::diag::Code;
use crate::engine::span::SourceId;

const PG: &str = "[plugins.pg]\nversion = \"1.0.0\"\nprovides = { db = \"1.0.0\" }\n";

#[test]
fn directory_pattern_and_relative_includes() {
    let src = MemorySource::new()
        .with(
            "conf/main.toml",
            "version = 1\ninclude = [\"parts/\", \"more/*.toml\", \"../shared/x.toml\"]\n",
        )
        .with("conf/parts/b.toml", "[entries.b]\nplugin = \"pg\"\n")
        .with(
            "conf/parts/a.toml",
            "include = [\"../more/deep/c.toml\"]\n[entries.a]\nplugin = \"pg\"\n",
        )
        .with("conf/parts/notes.txt", "not toml")
        .with("conf/more/m.toml", PG)
        .with("conf/more/deep/c.toml", "[entries.c]\nplugin = \"pg\"\n")
        .with("shared/x.toml", "version = 1\n[scopes.\"/s\"]\n");
    let l = load(&src, Path::new("conf/main.toml"));
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    let names: Vec<&str> = l.sources.ids().map(|i| l.sources.name(i)).collect();
    assert_eq!(
        names,
        [
            "conf/main.toml",
            "conf/parts/a.toml",
            "conf/more/deep/c.toml",
            "conf/parts/b.toml",
            "conf/more/m.toml",
            "shared/x.toml"
        ]
    );
    let comp = l.composition.unwrap();
    assert_eq!(
        comp.entries.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    assert!(comp.scopes.contains_key("/s"));
}

#[test]
fn include_order_does_not_change_the_composition() {
    let files = [
        ("a.toml", PG),
        (
            "b.toml",
            "[entries.x]\nplugin = \"pg\"\n[prefer]\ndb = \"x\"\n",
        ),
    ];
    let mut seen = Vec::new();
    for include in ["[\"a.toml\", \"b.toml\"]", "[\"b.toml\", \"a.toml\"]"] {
        let mut src =
            MemorySource::new().with("c.toml", format!("version = 1\ninclude = {include}\n"));
        files.iter().for_each(|(p, t)| src.insert(p, *t));
        let l = load(&src, Path::new("c.toml"));
        assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
        seen.push(strip(&l.composition.unwrap()));
    }
    assert_eq!(seen[0], seen[1]);
}

#[test]
fn missing_includes_and_patterns() {
    let src = MemorySource::new().with(
        "c.toml",
        "version = 1\ninclude = [\"gone.toml\", \"nodir/\", \"x/*.yaml\", \"a*.toml\", \"nodir2/*.toml\"]\n",
    );
    let l = load(&src, Path::new("c.toml"));
    assert_eq!(
        found(&l),
        vec![
            (Code::IncludeMissing, 2, 12),
            (Code::IncludeMissing, 2, 25),
            (Code::InvalidValue, 2, 35),
            (Code::InvalidValue, 2, 47),
            (Code::IncludeMissing, 2, 58),
        ],
        "{:#?}",
        l.diagnostics
    );
    // A missing root file is an I/O error without a label.
    let l = load(&MemorySource::new(), Path::new("nope.toml"));
    assert_eq!(l.diagnostics.len(), 1);
    assert_eq!(l.diagnostics[0].code, Code::Io);
    assert!(l.composition.is_none());
}

#[test]
fn include_cycles_show_both_includes() {
    let src = MemorySource::new()
        .with("a.toml", "version = 1\ninclude = [\"b.toml\"]\n")
        .with("b.toml", "include = [\"c.toml\"]\n")
        .with("c.toml", "include = [\"b.toml\", \"a.toml\"]\n");
    let l = load(&src, Path::new("a.toml"));
    let cycles: Vec<_> = l
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::IncludeCycle)
        .collect();
    assert_eq!(cycles.len(), 2, "{:#?}", l.diagnostics);
    assert_eq!(cycles[0].message, "include cycle: b.toml → c.toml → b.toml");
    assert_eq!(
        cycles[1].message,
        "include cycle: a.toml → b.toml → c.toml → a.toml"
    );
    // Primary: the include closing the cycle (in c.toml); secondary: where
    // b.toml was first included (in a.toml).
    let (p, s) = (cycles[0].labels[0].origin, cycles[0].labels[1].origin);
    assert_eq!((p.source, l.sources.line_col(p)), (SourceId(2), (1, 12)));
    assert_eq!((s.source, l.sources.line_col(s)), (SourceId(0), (2, 12)));
    // The root has no include of its own: the cycle's first include is shown.
    let s = cycles[1].labels[1].origin;
    assert_eq!((s.source, l.sources.line_col(s)), (SourceId(0), (2, 12)));
    assert_eq!(cycles[1].labels[1].message, "the cycle starts here");
    // A self include.
    let l = load(
        &MemorySource::new().with("a.toml", "version = 1\ninclude = [\"./a.toml\"]\n"),
        Path::new("a.toml"),
    );
    assert_eq!(found(&l), vec![(Code::IncludeCycle, 2, 12)]);
}

#[test]
fn diamond_includes_are_read_once() {
    let src = MemorySource::new()
        .with(
            "a.toml",
            "version = 1\ninclude = [\"b.toml\", \"c.toml\"]\n",
        )
        .with("b.toml", "include = [\"d.toml\"]\n")
        .with("c.toml", "include = [\"d.toml\"]\n")
        .with("d.toml", PG);
    let l = load(&src, Path::new("a.toml"));
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    assert_eq!(l.sources.len(), 4);
}

/// `check` and `diff` read pull-request content in CI: nothing outside the
/// workspace (the composition's directory here; no git work tree above a
/// temporary directory) is read, through a path, `..`, a directory or a
/// symbolic link, and an include is a `.toml` file. The outside file's text
/// never reaches a diagnostic.
#[test]
fn includes_and_prompt_files_stay_inside_the_workspace() {
    const CANARY: &str = "CANARY-outside-3e1f";
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.toml");
    std::fs::write(&secret, format!("token {CANARY}\n")).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let dir = ws.path();
    // Its own work tree, whatever holds the temporary directory.
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("link.toml")).unwrap();
    std::fs::write(dir.join("notes.txt"), format!("{CANARY}\n")).unwrap();
    let cases = [
        format!("include = [{:?}]", secret.display().to_string()),
        format!("include = [{:?}]", format!("{}/", outside.path().display())),
        "include = [\"link.toml\"]".to_owned(),
        "include = [\"notes.txt\"]".to_owned(),
        format!(
            "[agents.a]\nprompt_file = {:?}",
            secret.display().to_string()
        ),
    ];
    for case in cases {
        std::fs::write(dir.join("main.toml"), format!("version = 1\n{case}\n")).unwrap();
        let l = load(&FsSource, &dir.join("main.toml"));
        let codes: Vec<Code> = l.diagnostics.iter().map(|d| d.code).collect();
        assert!(
            codes.contains(&Code::IncludeOutside) || codes.contains(&Code::IncludeNotToml),
            "{case}: {codes:?}"
        );
        let rendered = render_all(&l);
        assert!(!rendered.contains(CANARY), "{case}:\n{rendered}");
    }
    // A directory of the work tree that links outside cannot widen it, and
    // the root file read through it is refused; so is a linked lock.
    std::fs::write(
        outside.path().join("c.toml"),
        "version = 1\ninclude = [\"secret.toml\"]\n",
    )
    .unwrap();
    let refused_alone = |root: &Path| {
        let l = load(&FsSource, root);
        let codes: Vec<Code> = l.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::IncludeOutside], "{:#?}", l.diagnostics);
        assert!(!render_all(&l).contains(CANARY));
    };
    std::os::unix::fs::symlink(outside.path(), dir.join("app")).unwrap();
    refused_alone(&dir.join("app/c.toml"));
    // Also when the link leads to another work tree (its own `.git`).
    std::fs::create_dir_all(outside.path().join(".git")).unwrap();
    refused_alone(&dir.join("app/c.toml"));
    std::fs::write(dir.join("main.toml"), "version = 1\n").unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("chassis.lock")).unwrap();
    refused_alone(&dir.join("main.toml"));
}

/// Inside a git work tree the workspace is the whole tree (`..` may reach a
/// sibling directory), and two spellings of one file are one file.
#[test]
fn the_workspace_is_the_git_work_tree_and_files_have_one_identity() {
    let ws = tempfile::tempdir().unwrap();
    let dir = ws.path();
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::create_dir_all(dir.join("app")).unwrap();
    std::fs::create_dir_all(dir.join("shared")).unwrap();
    std::fs::write(dir.join("shared/pg.toml"), PG).unwrap();
    std::fs::write(
        dir.join("app/main.toml"),
        "version = 1\ninclude = [\"../shared/pg.toml\", \"../app/../shared/pg.toml\", \"pg.toml\"]\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.join("shared/pg.toml"), dir.join("app/pg.toml")).unwrap();
    let l = load(&FsSource, &dir.join("app/main.toml"));
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    assert_eq!(l.sources.len(), 2);
}

#[test]
fn duplicates_across_files_show_both_spans() {
    let src = MemorySource::new()
        .with("a.toml", format!("version = 1\ninclude = [\"b.toml\"]\n{PG}[entries.x]\nplugin = \"pg\"\n[scopes.\"/s\"]\n[prefer]\ndb = \"x\"\n"))
        .with("b.toml", format!("{PG}[entries.x]\nplugin = \"pg\"\n[scopes.\"/s\"]\n[prefer]\ndb = \"x\"\n"));
    let l = load(&src, Path::new("a.toml"));
    let dups: Vec<_> = l
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::DuplicateId)
        .collect();
    assert_eq!(dups.len(), 4, "{:#?}", l.diagnostics);
    for d in dups {
        assert_eq!(d.labels[0].origin.source, SourceId(1));
        assert_eq!(d.labels[1].origin.source, SourceId(0));
        assert_eq!(d.labels[1].message, "first defined here");
    }
}

#[test]
fn diagnostics_are_sorted() {
    let text =
        "version = 1\n[entries.z]\nplugin = \"nope\"\n[entries.a]\nplugin = \"nope\"\nbad = 1\n";
    let l = load_str("c.toml", text);
    let f = found(&l);
    let mut sorted = f.clone();
    sorted.sort_by_key(|x| (x.1, x.2));
    assert_eq!(f, sorted);
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            message,
        ],
    );
}

#[test]
fn git_source_reads_a_revision_with_includes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    git(dir, &["init", "-q"]);
    std::fs::create_dir_all(dir.join("conf/plugins")).unwrap();
    std::fs::write(
        dir.join("conf/composition.toml"),
        "version = 1\ninclude = [\"plugins/\"]\n[entries.x]\nplugin = \"pg\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("conf/plugins/pg.toml"), PG).unwrap();
    commit_all(dir, "one");
    // The work tree changes after the commit; the revision does not.
    std::fs::remove_file(dir.join("conf/plugins/pg.toml")).unwrap();
    std::fs::write(dir.join("conf/composition.toml"), "broken = = =").unwrap();

    let (rev, path) = parse_rev_path("HEAD:composition.toml").unwrap();
    let src = GitSource::new(dir.join("conf"), rev);
    let l = load(&src, Path::new(&path));
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    assert!(l.composition.unwrap().entries.contains_key("x"));
    assert_eq!(l.sources.name(SourceId(0)), "HEAD:conf/composition.toml");
    assert_eq!(l.sources.name(SourceId(1)), "HEAD:conf/plugins/pg.toml");

    // A missing include at the revision.
    let l = load(
        &GitSource::new(dir, "HEAD"),
        Path::new("conf/plugins/pg.toml/../../composition.toml"),
    );
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    std::fs::write(
        dir.join("conf/composition.toml"),
        "version = 1\ninclude = [\"gone.toml\"]\n",
    )
    .unwrap();
    commit_all(dir, "two");
    let l = load(
        &GitSource::new(dir, "HEAD"),
        Path::new("conf/composition.toml"),
    );
    assert_eq!(found(&l), vec![(Code::IncludeMissing, 2, 12)]);

    // A directory at the revision is said to be one, not parsed as TOML.
    let l = load(&GitSource::new(dir, "HEAD~1"), Path::new("conf/plugins"));
    let d = only(&l, Code::Io);
    assert!(d.message.contains("is a directory"), "{d:?}");

    // A revision that does not resolve.
    let l = load(
        &GitSource::new(dir, "no-such-branch"),
        Path::new("conf/composition.toml"),
    );
    let d = only(&l, Code::Git);
    assert!(d.message.contains("no-such-branch"), "{d:?}");
    assert!(!d.help.iter().any(|h| h.contains("unshallow")));

    // In a shallow clone, the help says how to fetch the history.
    let shallow = tmp.path().join("shallow");
    let url = format!("file://{}", dir.display());
    let out = Command::new("git")
        .args(["clone", "-q", "--depth", "1", &url])
        .arg(&shallow)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l = load(
        &GitSource::new(&shallow, "HEAD~1"),
        Path::new("conf/composition.toml"),
    );
    let d = only(&l, Code::Git);
    assert!(
        d.help
            .iter()
            .any(|h| h.contains("git fetch --unshallow") && h.contains("fetch-depth: 0")),
        "{d:?}"
    );
}

fn render_all(l: &Loaded) -> String {
    l.diagnostics
        .iter()
        .map(|d| render_plain(d, &l.sources, 100))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn snapshot_unknown_key_and_bad_version() {
    let text = "version = 1\n[plugins.p]\nversion = \"1.0rc1\"\nrequries = { db = \">=1\" }\n";
    insta::assert_snapshot!(
        "unknown_key_and_bad_version",
        render_all(&load_str("composition.toml", text))
    );
}

#[test]
fn snapshot_duplicate_across_files() {
    let src = MemorySource::new()
        .with(
            "composition.toml",
            format!("version = 1\ninclude = [\"more.toml\"]\n{PG}"),
        )
        .with("more.toml", PG);
    insta::assert_snapshot!(
        "duplicate_across_files",
        render_all(&load(&src, Path::new("composition.toml")))
    );
}

#[test]
fn snapshot_literal_secret_and_syntax_error_never_show_the_canary() {
    let text = "version = 1\n[entries.app.config]\napi_key = \"sk-canary-123456\"\nx = = 1\n";
    let l = load_str("composition.toml", text);
    let rendered = render_all(&l);
    assert!(!rendered.contains("sk-canary-123456"), "{rendered}");
    insta::assert_snapshot!("syntax_error_with_secret", rendered);
    let text = "version = 1\n[plugins.app]\nversion = \"1.0.0\"\n[entries.app]\nconfig = { api_key = \"sk-canary-123456\", dsn = \"postgres://u:pw-canary@h/db\" }\n";
    let l = load_str("composition.toml", text);
    let rendered = render_all(&l);
    assert!(!rendered.contains("canary"), "{rendered}");
    insta::assert_snapshot!("literal_secret", rendered);
}

#[test]
fn snapshot_unknown_plugin() {
    let text = "version = 1\n[plugins.postgres]\nversion = \"1.0.0\"\n[entries.db]\nplugin = \"postgress\"\nscope = \"/reserch\"\n[scopes.\"/research\"]\n";
    insta::assert_snapshot!(
        "unknown_plugin_and_scope",
        render_all(&load_str("composition.toml", text))
    );
}

/// A secret typed where `secrets.env` wants a variable name is refused
/// without being shown: not in the message, not in the source snippet.
#[test]
fn a_rejected_secrets_env_value_is_masked_in_the_snippet() {
    let text = "version = 1\n[entries.vault]\nplugin = \"secrets.env\"\nconfig = { prefix = \"sk-live-CANARY-prefix\", aliases = { \"db.url\" = \"sk-live-CANARY-alias\" } }\n";
    let l = load_str("c.toml", text);
    assert_eq!(
        l.diagnostics
            .iter()
            .filter(|d| d.code == Code::BadConfig)
            .count(),
        2,
        "{:#?}",
        l.diagnostics
    );
    let rendered = render_all(&l);
    assert!(rendered.contains("prefix = ***"), "{rendered}");
    assert!(!rendered.contains("CANARY"), "{rendered}");
    // Only what is shown changes: spans and the text itself stay.
    assert_eq!(l.sources.text(SourceId(0)), text);
    assert_eq!(l.sources.display_text(SourceId(0)).len(), text.len());
    // `NAME=value` where a variable name belongs, in a command's allow-list
    // and in `enabled_if`.
    let text = "version = 1\n[entries.tools]\nplugin = \"command\"\nconfig = { env = [\"API_KEY=sk-CANARY-env\"], tools = [] }\n[entries.x]\nplugin = \"command\"\nenabled_if = { env = \"TOKEN=sk-CANARY-cond\" }\n";
    let l = load_str("c.toml", text);
    assert!(l.has_errors(), "{:#?}", l.diagnostics);
    let rendered = render_all(&l);
    assert!(!rendered.contains("CANARY"), "{rendered}");
    // Whatever else is wrong with the configuration (a schema error stops
    // the kind's own checks), such values stay hidden.
    let text = "version = 1\n[entries.t]\nplugin = \"command\"\nconfig.env = [\"API_KEY=CANARY-a\"]\nconfig.tools = [{ name = \"x\", description = \"d\", argv = [\"true\"], timeout_seconds = -1 }]\n[entries.u]\nplugin = \"secrets.env\"\nconfig = { prefix = \"CANARY-b\", bogus = 2 }\n";
    let l = load_str("c.toml", text);
    assert!(l.has_errors(), "{:#?}", l.diagnostics);
    let rendered = render_all(&l);
    assert!(!rendered.contains("CANARY"), "{rendered}");
}

/// An agent that lists itself is reported once, as listing itself, not
/// also as a cycle of one; a real cycle between two agents is no load
/// error (the findings report it, exit 1, as a requirement cycle).
#[test]
fn a_self_listed_sub_agent_is_one_finding_and_a_cycle_is_not_a_load_error() {
    let text = "version = 1\n\
        [agents.a]\nprompt = \"x\"\nsub_agents = [\"a\"]\n\
        [agents.b]\nprompt = \"x\"\nsub_agents = [\"c\"]\n\
        [agents.c]\nprompt = \"x\"\nsub_agents = [\"b\"]\n";
    let l = load_str("c.toml", text);
    let messages: Vec<(Code, &str)> = l
        .diagnostics
        .iter()
        .map(|d| (d.code, d.message.as_str()))
        .collect();
    let itself = messages
        .iter()
        .filter(|(_, m)| m.contains("lists itself"))
        .count();
    assert_eq!(itself, 1, "{messages:#?}");
    assert!(
        messages.iter().all(|(c, _)| *c != Code::Cycle),
        "{messages:#?}"
    );
    let cycle_only = text.replace("sub_agents = [\"a\"]", "");
    let l = load_str("c.toml", &cycle_only);
    assert!(!l.has_errors(), "{:#?}", l.diagnostics);
}

/// Densely linked agents (each lists every later one: 2^39 paths from the
/// first) with one edge back: the cycle is found in one walk, once. A
/// search that followed every path never finished.
#[test]
fn a_sub_agent_cycle_among_densely_linked_agents_is_found_in_one_walk() {
    let n = 40;
    let mut text = String::from("version = 1\n");
    for i in 0..n {
        let mut subs: Vec<String> = (i + 1..n).map(|j| format!("\"a{j:02}\"")).collect();
        if i == n - 1 {
            subs.push("\"a00\"".to_owned());
        }
        text.push_str(&format!(
            "[agents.a{i:02}]\nprompt = \"x\"\nsub_agents = [{}]\n",
            subs.join(", ")
        ));
    }
    let l = load_str("c.toml", &text);
    let composition = l
        .composition
        .expect("it loads: a cycle is not a load error");
    let tree = crate::engine::tree::ScopeTree::new(&composition);
    let plan = crate::engine::resolve::resolve_with_tree(&composition, &tree);
    let cycles: Vec<String> = crate::engine::findings::refusal_diagnostics(&composition, &plan)
        .into_iter()
        .filter(|d| d.code == Code::Cycle)
        .map(|d| d.message)
        .collect();
    assert_eq!(cycles.len(), 1, "{cycles:#?}");
    assert!(
        cycles[0].ends_with("a38 -> a39 -> a00") && cycles[0].contains("a00 -> a01"),
        "{cycles:#?}"
    );
}

/// `enabled_if = { env = "A=b" }` is one finding (the refused name), not also
/// "no condition"; an empty condition is the other finding.
#[test]
fn a_refused_condition_name_is_one_finding() {
    let l = load_str(
        "c.toml",
        "version = 1\n[plugins.p]\nversion = \"1.0.0\"\n[entries.y]\nplugin = \"p\"\nenabled_if = { env = \"A=b\" }\n[entries.z]\nplugin = \"p\"\nenabled_if = {}\n",
    );
    let lines: Vec<usize> = l
        .diagnostics
        .iter()
        .map(|d| l.sources.line_col(d.labels[0].origin).0)
        .collect();
    assert_eq!(lines, [6, 9], "{:#?}", l.diagnostics);
}

/// A loaded entry shares its scope's path with the composition's scope map
/// (the scope tree finds it by address).
#[test]
fn loaded_entries_share_their_scope_path() {
    let text = "version = 1\n[plugins.postgres]\nversion = \"1.0.0\"\n[entries.db]\nplugin = \"postgres\"\nscope = \"/research/deep\"\n[scopes.\"/research/deep\"]\n";
    let l = load_str("composition.toml", text);
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    let comp = l.composition.unwrap();
    let (key, decl) = comp.scopes.get_key_value("/research/deep").unwrap();
    let entry = &comp.entries["db"];
    assert!(std::sync::Arc::ptr_eq(
        entry.scope.value.as_arc(),
        key.as_arc()
    ));
    assert!(std::sync::Arc::ptr_eq(decl.path.as_arc(), key.as_arc()));
}
