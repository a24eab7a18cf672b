//! Rendering a [`GenerationDiff`] as plain text or GitHub markdown.
//!
//! Rendering only: no colour, no I/O. Values are shown compactly: strings
//! bare, lists as `[a, b]`, maps as `key: value; …` (null fields left out of
//! a single value), and 64-hex digests (config and tool hashes) shortened to
//! 12 characters.

use std::fmt::Write as _;

use crate::engine::canonical::Canon;
use crate::engine::diff::{Category, Change, ChangeKind, GenerationDiff};
use crate::engine::leaf_diff::LeafChange;

const CATEGORIES: [(Category, &str, &str); 5] = [
    (Category::Scope, "SCOPES", "Scopes"),
    (Category::Provider, "PROVIDERS", "Providers"),
    (Category::Requirement, "REQUIREMENTS", "Requirements"),
    (Category::Agent, "AGENTS", "Agents"),
    (Category::Policy, "POLICY", "Policy"),
];

/// The short form of a digest: its first 12 characters.
fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

fn is_digest(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One value, compactly. Null fields of a map are left out.
fn compact(v: &Canon) -> String {
    match v {
        Canon::Null => "none".to_owned(),
        Canon::Bool(b) => b.to_string(),
        Canon::Int(i) => i.to_string(),
        Canon::Float(f) => f.to_string(),
        Canon::Str(s) if is_digest(s) => short(s).to_owned(),
        Canon::Str(s) => s.clone(),
        Canon::List(items) => format!(
            "[{}]",
            items.iter().map(compact).collect::<Vec<_>>().join(", ")
        ),
        Canon::Map(m) if m.is_empty() => "{}".to_owned(),
        Canon::Map(m) => m
            .iter()
            .filter(|(_, v)| **v != Canon::Null)
            .map(|(k, v)| format!("{k}: {}", compact(v)))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

fn compact_opt(v: Option<&Canon>) -> String {
    v.map(compact).unwrap_or_default()
}

/// `old -> new`; two maps over the same fields read field by field
/// (`tools: none -> [search]; entries: [a] -> [a, b]`).
fn transition(old: Option<&Canon>, new: Option<&Canon>) -> String {
    if let (Some(Canon::Map(o)), Some(Canon::Map(n))) = (old, new)
        && o.keys().eq(n.keys())
    {
        return o
            .iter()
            .zip(n.values())
            .map(|((k, x), y)| format!("{k}: {} -> {}", compact(x), compact(y)))
            .collect::<Vec<_>>()
            .join("; ");
    }
    let show = |v: Option<&Canon>| v.map_or_else(|| "none".to_owned(), compact);
    format!("{} -> {}", show(old), show(new))
}

/// The one-character marker of a kind.
fn marker(kind: ChangeKind) -> char {
    match kind {
        ChangeKind::Added => '+',
        ChangeKind::Removed => '-',
        ChangeKind::Changed | ChangeKind::Replaced => '~',
        ChangeKind::Rewired => '>',
        ChangeKind::Unchanged => '=',
    }
}

/// `3 changes: 1 added, 1 removed, 1 rewired`, `no semantic changes`, with
/// `; N unchanged` when unchanged rows are listed.
fn summary(d: &GenerationDiff) -> String {
    let counts = d.counts();
    let total = counts.total_changes();
    let mut line = if total == 0 && d.semantic_changed {
        "no listed changes, but the semantic digests differ".to_owned()
    } else if total == 0 {
        "no semantic changes".to_owned()
    } else {
        let parts: Vec<String> = counts
            .by_kind()
            .iter()
            .filter(|(k, n)| *k != ChangeKind::Unchanged && *n > 0)
            .map(|(k, n)| format!("{n} {}", k.as_str()))
            .collect();
        let noun = if total == 1 { "change" } else { "changes" };
        format!("{total} {noun}: {}", parts.join(", "))
    };
    if counts.unchanged > 0 {
        let _ = write!(line, "; {} unchanged", counts.unchanged);
    }
    line
}

fn section(d: &GenerationDiff, category: Category) -> Vec<&Change> {
    d.changes
        .iter()
        .filter(|c| c.category == category)
        .collect()
}

/// The detail after the subject on a text line.
fn text_detail(c: &Change) -> String {
    // An agent that came or went is its name: its whole definition (hashes
    // and limits) is in the JSON. So is a policy rule (its subject) or a
    // tool's policy.
    if matches!(c.category, Category::Agent | Category::Policy)
        && matches!(c.kind, ChangeKind::Added | ChangeKind::Removed)
    {
        return format!("({})", c.reason);
    }
    match c.kind {
        ChangeKind::Added => compact_opt(c.new.as_ref()),
        ChangeKind::Removed => compact_opt(c.old.as_ref()),
        ChangeKind::Unchanged => compact_opt(c.new.as_ref().or(c.old.as_ref())),
        ChangeKind::Changed | ChangeKind::Replaced | ChangeKind::Rewired => {
            format!(
                "{}  ({})",
                transition(c.old.as_ref(), c.new.as_ref()),
                c.reason
            )
        }
    }
}

/// Plain text: a header, one section per non-empty category, a summary.
pub fn render_text(d: &GenerationDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "diff {} (sem {}) -> {} (sem {})",
        d.old.generation_id,
        short(&d.old.semantic_digest),
        d.new.generation_id,
        short(&d.new.semantic_digest)
    );
    for (category, title, _) in CATEGORIES {
        let changes = section(d, category);
        if changes.is_empty() {
            continue;
        }
        let _ = write!(out, "\n{title}\n{}", change_lines(&changes));
    }
    let _ = writeln!(out, "\n{}", summary(d));
    out
}

/// One line per change (`  ~ subject  old -> new  (reason)`), subjects in
/// one column: a section of `diff`, and the AGENTS of `plan` and `publish`.
pub fn change_lines(changes: &[&Change]) -> String {
    let width = changes
        .iter()
        .map(|c| c.subject.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for c in changes {
        let line = format!(
            "  {} {:<width$}  {}",
            marker(c.kind),
            c.subject,
            text_detail(c)
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// A markdown code span for a table cell: pipes escaped, newlines folded,
/// backticks fenced; empty stays empty.
fn cell(value: &str) -> String {
    if value.is_empty() {
        return String::new();
    }
    let v = value.replace(['\n', '\r'], " ").replace('|', "\\|");
    if v.contains('`') {
        format!("`` {v} ``")
    } else {
        format!("`{v}`")
    }
}

/// GitHub markdown: a heading, both digests, one table per non-empty
/// category, the summary.
pub fn render_markdown(d: &GenerationDiff) -> String {
    let mut out = String::from("### chassis: composition diff\n\n");
    let side = |label: &str, s: &crate::engine::diff::Side| {
        format!(
            "- {label}: {} (semantic {})\n",
            cell(&s.generation_id),
            cell(short(&s.semantic_digest))
        )
    };
    out.push_str(&side("old", &d.old));
    out.push_str(&side("new", &d.new));
    for (category, _, title) in CATEGORIES {
        let changes = section(d, category);
        if changes.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "\n#### {title}\n\n| | subject | old | new | reason |\n|---|---|---|---|---|\n"
        );
        for c in changes {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                marker(c.kind),
                cell(&c.subject),
                cell(&compact_opt(c.old.as_ref())),
                cell(&compact_opt(c.new.as_ref())),
                c.reason.replace('|', "\\|")
            );
        }
    }
    let _ = writeln!(out, "\n{}", summary(d));
    out
}

/// A leaf value as TOML spells it: strings quoted, lists in brackets,
/// tables inline; a masked value as `(masked)`.
fn leaf_value(v: Option<&Canon>) -> String {
    match v {
        None => "(none)".to_owned(),
        Some(Canon::Str(s)) if s == crate::engine::redact::REDACTED => "(masked)".to_owned(),
        Some(v) => toml_value(v),
    }
}

fn toml_value(v: &Canon) -> String {
    match v {
        Canon::Str(s) => crate::engine::leaf_diff::toml_string(s),
        Canon::List(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        Canon::Map(m) if m.is_empty() => "{}".to_owned(),
        Canon::Map(m) => format!(
            "{{ {} }}",
            m.iter()
                .map(|(k, v)| format!(
                    "{} = {}",
                    crate::engine::leaf_diff::toml_key(k),
                    toml_value(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => compact(other),
    }
}

/// The most lines a changed text (a prompt) shows.
const TEXT_DIFF_LINES: usize = 20;

/// Two texts worth a unified diff rather than `old -> new`: several lines,
/// or long.
fn long_texts<'a>(old: Option<&'a Canon>, new: Option<&'a Canon>) -> Option<(&'a str, &'a str)> {
    match (old, new) {
        (Some(Canon::Str(a)), Some(Canon::Str(b)))
            if a.contains('\n') || b.contains('\n') || a.len().max(b.len()) > 60 =>
        {
            Some((a, b))
        }
        _ => None,
    }
}

/// A unified diff of two texts, at most [`TEXT_DIFF_LINES`] lines (then
/// how many more there are), each prefixed with `indent`.
fn text_diff(old: &str, new: &str, indent: &str) -> String {
    let (old, new) = (
        format!("{}\n", old.trim_end()),
        format!("{}\n", new.trim_end()),
    );
    let diff = similar::TextDiff::from_lines(&old, &new);
    let text = diff.unified_diff().context_radius(2).to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for line in lines.iter().take(TEXT_DIFF_LINES) {
        let _ = writeln!(out, "{indent}{line}");
    }
    if lines.len() > TEXT_DIFF_LINES {
        let _ = writeln!(
            out,
            "{indent}… {} more lines",
            lines.len() - TEXT_DIFF_LINES
        );
    }
    out
}

/// One line per changed leaf, terraform style:
/// `  ~ store.path: ".chassis/a.db" -> "b.db"`; a masked value is named
/// only (`(changed)`), a changed text is a unified diff below its path.
pub fn leaves_text(leaves: &[LeafChange]) -> String {
    let mut out = String::new();
    for l in leaves {
        let (old, new) = (leaf_value(l.old.as_ref()), leaf_value(l.new.as_ref()));
        let path = l.path_text();
        match (&l.old, &l.new) {
            (None, _) if new == "(masked)" => {
                let _ = writeln!(out, "  + {path} (added)");
            }
            (None, _) => {
                let _ = writeln!(out, "  + {path} = {new}");
            }
            (_, None) if old == "(masked)" => {
                let _ = writeln!(out, "  - {path} (removed)");
            }
            (_, None) => {
                let _ = writeln!(out, "  - {path} = {old}");
            }
            _ if old == new => {
                let _ = writeln!(out, "  ~ {path} (changed)");
            }
            (a, b) => match long_texts(a.as_ref(), b.as_ref()) {
                Some((a, b)) => {
                    let _ = write!(out, "  ~ {path}:\n{}", text_diff(a, b, "      "));
                }
                None => {
                    let _ = writeln!(out, "  ~ {path}: {old} -> {new}");
                }
            },
        }
    }
    out
}

/// The leaves as a markdown table (a changed text as a `diff` block after
/// it).
pub fn leaves_markdown(leaves: &[LeafChange]) -> String {
    let mut out = String::from("| | key | old | new |\n|---|---|---|---|\n");
    let mut texts = String::new();
    for l in leaves {
        let mark = match (&l.old, &l.new) {
            (None, _) => '+',
            (_, None) => '-',
            _ => '~',
        };
        let (old, new) = match long_texts(l.old.as_ref(), l.new.as_ref()) {
            Some((a, b)) => {
                let _ = write!(
                    texts,
                    "\n`{}`:\n\n```diff\n{}```\n",
                    l.path_text(),
                    text_diff(a, b, "")
                );
                ("(text, below)".to_owned(), "(text, below)".to_owned())
            }
            None => (
                l.old
                    .as_ref()
                    .map_or_else(String::new, |_| cell(&leaf_value(l.old.as_ref()))),
                l.new
                    .as_ref()
                    .map_or_else(String::new, |_| cell(&leaf_value(l.new.as_ref()))),
            ),
        };
        let _ = writeln!(out, "| {mark} | {} | {old} | {new} |", cell(&l.path_text()));
    }
    out.push_str(&texts);
    out
}

/// The CHANGED KEYS section of `diff` (text), empty when none changed.
pub fn keys_text(leaves: &[LeafChange]) -> String {
    if leaves.is_empty() {
        return String::new();
    }
    format!(
        "\nCHANGED KEYS (what the files say, whether or not it is semantic)\n{}",
        leaves_text(leaves)
    )
}

/// The changed keys section of `diff` (markdown), empty when none changed.
pub fn keys_markdown(leaves: &[LeafChange]) -> String {
    if leaves.is_empty() {
        return String::new();
    }
    format!(
        "\n#### Changed keys\n\nWhat the files say, whether or not it is semantic.\n\n{}",
        leaves_markdown(leaves)
    )
}

/// The HOST SETTINGS section of `diff` (text), empty when none changed.
pub fn host_settings_text(leaves: &[LeafChange]) -> String {
    if leaves.is_empty() {
        return String::new();
    }
    format!(
        "\nHOST SETTINGS (not part of the composition; --exit-code ignores them)\n{}",
        leaves_text(leaves)
    )
}

/// The host settings section of `diff` (markdown), empty when none changed.
pub fn host_settings_markdown(leaves: &[LeafChange]) -> String {
    if leaves.is_empty() {
        return String::new();
    }
    format!(
        "\n#### Host settings\n\nNot part of the composition; `--exit-code` ignores them.\n\n{}",
        leaves_markdown(leaves)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::diff::Side;

    fn side(generation: &str, digit: char) -> Side {
        Side {
            generation_id: generation.into(),
            semantic_digest: digit.to_string().repeat(64),
            digest: "d".repeat(64),
        }
    }

    fn change(
        category: Category,
        kind: ChangeKind,
        subject: &str,
        old: Option<Canon>,
        new: Option<Canon>,
        reason: &str,
    ) -> Change {
        Change {
            category,
            kind,
            subject: subject.into(),
            old,
            new,
            reason: reason.into(),
        }
    }

    fn sample() -> GenerationDiff {
        let map = |pairs: Vec<(&str, Canon)>| Some(Canon::map(pairs));
        GenerationDiff {
            old: side("gen_0001", 'a'),
            new: side("gen_0002", 'b'),
            semantic_changed: true,
            changes: vec![
                change(
                    Category::Scope,
                    ChangeKind::Changed,
                    "/",
                    map(vec![("children", Canon::list(["/research"]))]),
                    map(vec![("children", Canon::list(["/ops", "/research"]))]),
                    "children_changed",
                ),
                change(
                    Category::Scope,
                    ChangeKind::Added,
                    "/ops",
                    None,
                    map(vec![
                        ("capabilities", Canon::list(["cache"])),
                        ("tools", Canon::Null),
                        ("entries", Canon::list(["redis"])),
                    ]),
                    "scope_added",
                ),
                change(
                    Category::Provider,
                    ChangeKind::Removed,
                    "/::cache",
                    Some(Canon::list(["memcached"])),
                    None,
                    "provider_removed",
                ),
                change(
                    Category::Provider,
                    ChangeKind::Changed,
                    "config",
                    Some(Canon::from("0123456789ab".repeat(5) + "cdef")),
                    Some(Canon::from("fedcba987654".repeat(5) + "3210")),
                    "config_changed",
                ),
                change(
                    Category::Requirement,
                    ChangeKind::Rewired,
                    "/::app::database",
                    Some(Canon::from("postgres")),
                    Some(Canon::from("sqlite")),
                    "provider_selection_changed",
                ),
                change(
                    Category::Requirement,
                    ChangeKind::Unchanged,
                    "/::app::cache",
                    map(vec![
                        ("requirement", Canon::from("cache <2,>=1 | x")),
                        ("provider", Canon::from("redis")),
                    ]),
                    map(vec![
                        ("requirement", Canon::from("cache <2,>=1 | x")),
                        ("provider", Canon::from("redis")),
                    ]),
                    "unchanged",
                ),
            ],
        }
    }

    #[test]
    fn text_lists_sections_and_a_summary() {
        insta::assert_snapshot!(render_text(&sample()), @r"
        diff gen_0001 (sem aaaaaaaaaaaa) -> gen_0002 (sem bbbbbbbbbbbb)

        SCOPES
          ~ /     children: [/research] -> [/ops, /research]  (children_changed)
          + /ops  capabilities: [cache]; entries: [redis]

        PROVIDERS
          - /::cache  [memcached]
          ~ config    0123456789ab -> fedcba987654  (config_changed)

        REQUIREMENTS
          > /::app::database  postgres -> sqlite  (provider_selection_changed)
          = /::app::cache     provider: redis; requirement: cache <2,>=1 | x

        5 changes: 1 added, 1 removed, 2 changed, 1 rewired; 1 unchanged
        ");
    }

    #[test]
    fn text_of_an_empty_diff_omits_sections() {
        let d = GenerationDiff {
            old: side("gen_0001", 'a'),
            new: side("gen_0001", 'a'),
            changes: Vec::new(),
            semantic_changed: false,
        };
        insta::assert_snapshot!(render_text(&d), @r"
        diff gen_0001 (sem aaaaaaaaaaaa) -> gen_0001 (sem aaaaaaaaaaaa)

        no semantic changes
        ");
    }

    #[test]
    fn one_change_is_singular() {
        let mut d = sample();
        d.changes.truncate(1);
        assert!(render_text(&d).ends_with("\n1 change: 1 changed\n"));
        d.changes.clear();
        assert!(
            render_text(&d).ends_with("\nno listed changes, but the semantic digests differ\n")
        );
    }

    #[test]
    fn markdown_has_one_table_per_section() {
        insta::assert_snapshot!(render_markdown(&sample()), @r"
        ### chassis: composition diff

        - old: `gen_0001` (semantic `aaaaaaaaaaaa`)
        - new: `gen_0002` (semantic `bbbbbbbbbbbb`)

        #### Scopes

        | | subject | old | new | reason |
        |---|---|---|---|---|
        | ~ | `/` | `children: [/research]` | `children: [/ops, /research]` | children_changed |
        | + | `/ops` |  | `capabilities: [cache]; entries: [redis]` | scope_added |

        #### Providers

        | | subject | old | new | reason |
        |---|---|---|---|---|
        | - | `/::cache` | `[memcached]` |  | provider_removed |
        | ~ | `config` | `0123456789ab` | `fedcba987654` | config_changed |

        #### Requirements

        | | subject | old | new | reason |
        |---|---|---|---|---|
        | > | `/::app::database` | `postgres` | `sqlite` | provider_selection_changed |
        | = | `/::app::cache` | `provider: redis; requirement: cache <2,>=1 \| x` | `provider: redis; requirement: cache <2,>=1 \| x` | unchanged |

        5 changes: 1 added, 1 removed, 2 changed, 1 rewired; 1 unchanged
        ");
    }

    #[test]
    fn markdown_cells_survive_backticks_and_newlines() {
        assert_eq!(cell("a`b\nc|d"), "`` a`b c\\|d ``");
        assert_eq!(cell(""), "");
        assert_eq!(cell("plain"), "`plain`");
    }
}
