//! Synthetic compositions of any size, as TOML text: one generator shared
//! by the whole-process benchmark (`benches/cli.rs`) and the tests, so the
//! figures and the tests speak of the same files.
//!
//! Shapes (deterministic, ids zero-padded so file order is id order):
//! - [`Shape::Chain`]: entry `e00000` provides `cap00000`; each next entry
//!   provides its own capability and requires the previous one. Its
//!   cascade edits the root's configuration: every consumer is rewired.
//! - [`Shape::Fan`]: `db` provides `database`; every other entry requires
//!   it (one manifest shared by all consumers).
//! - [`Shape::Deep`]: a scope tree with branching 4; a `database` provider
//!   at the root and a `shard` provider in every scope above the leaves;
//!   consumers in the leaves require both.
//! - [`Shape::Builtin`]: built-in kinds with an agent: `scripted` models
//!   (a 2-turn config each; the agent prefers the first) and `command`
//!   entries with one tool each.
//! - [`Shape::Preferred`]: in one scope, providers `d00000`, `d00002`, …
//!   of `database` (one manifest) alternate with consumers `c00001`, … (one
//!   manifest), each preferring the provider before it: every consumer sees
//!   every provider, and the output is linear (issue #24: resolution was
//!   quadratic here).
//!
//! Every manifest-only entry has a small configuration (`n = i`), so a
//! "one change" edit ([`Composition::one_change`]) changes one leaf.

use std::fmt::Write as _;

/// The shape of a generated composition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A chain of requirements.
    Chain,
    /// One provider, many consumers.
    Fan,
    /// A deep scope tree.
    Deep,
    /// Built-in kinds and an agent.
    Builtin,
    /// Many providers of one capability, each consumer preferring one.
    Preferred,
}

impl Shape {
    /// Every shape.
    pub const ALL: [Shape; 5] = [
        Shape::Chain,
        Shape::Fan,
        Shape::Deep,
        Shape::Builtin,
        Shape::Preferred,
    ];

    /// Its name (`chain`, `fan`, `deep`, `builtin`, `preferred`).
    pub fn name(self) -> &'static str {
        match self {
            Shape::Chain => "chain",
            Shape::Fan => "fan",
            Shape::Deep => "deep",
            Shape::Builtin => "builtin",
            Shape::Preferred => "preferred",
        }
    }

    /// The shape called `name`.
    pub fn parse(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// A generated composition: its text and the edits a benchmark makes.
#[derive(Clone, Debug)]
pub struct Composition {
    /// The shape.
    pub shape: Shape,
    /// How many entries.
    pub entries: usize,
    /// The TOML text.
    pub text: String,
    /// An entry that holds a requirement, and the capability (for
    /// `explain requirement`).
    pub consumer: (String, String),
}

impl Composition {
    /// The text with one entry's configuration changed (the last entry's).
    pub fn one_change(&self) -> String {
        let last = self.entries.saturating_sub(1);
        if self.shape == Shape::Builtin {
            let (from, to) = if last.is_multiple_of(2) {
                (
                    format!("text = \"done {last}\""),
                    format!("text = \"changed {last}\""),
                )
            } else {
                (format!("\"Says {last}.\""), format!("\"Changed {last}.\""))
            };
            return replace_last(&self.text, &from, &to);
        }
        let from = format!("config = {{ n = {last} }}");
        let to = format!("config = {{ n = {} }}", last + 1_000_000);
        replace_last(&self.text, &from, &to)
    }

    /// The text with a change every consumer feels: for a chain, the root
    /// provider's configuration (every consumer is rewired); elsewhere the
    /// first entry's (the shared provider of a fan or a tree, the model
    /// the agent prefers; with preferred providers, only the first
    /// consumer's).
    pub fn cascade(&self) -> String {
        if self.shape == Shape::Builtin {
            return self
                .text
                .replacen("text = \"done 0\"", "text = \"cascade 0\"", 1);
        }
        self.text.replacen(
            "config = { n = 0 }",
            "config = { n = 0, cascade = true }",
            1,
        )
    }
}

fn replace_last(text: &str, from: &str, to: &str) -> String {
    match text.rfind(from) {
        Some(at) => format!("{}{to}{}", &text[..at], &text[at + from.len()..]),
        None => text.to_owned(),
    }
}

/// A composition of `shape` with `entries` entries (at least 2).
pub fn generate(shape: Shape, entries: usize) -> Composition {
    let n = entries.max(2);
    match shape {
        Shape::Chain => chain(n),
        Shape::Fan => fan(n),
        Shape::Deep => deep(n),
        Shape::Builtin => builtin(n),
        Shape::Preferred => preferred(n),
    }
}

fn preferred(n: usize) -> Composition {
    let mut t = String::from(
        "version = 1\n\n[plugins.db]\nversion = \"1.0.0\"\nprovides = { database = \"1.0.0\" }\n\n[plugins.consumer]\nversion = \"1.0.0\"\nrequires = { database = \">=1,<2\" }\n",
    );
    let mut last = String::new();
    for i in 0..n {
        if i % 2 == 0 {
            let _ = write!(
                t,
                "\n[entries.d{i:05}]\nplugin = \"db\"\nconfig = {{ n = {i} }}\n"
            );
        } else {
            last = format!("c{i:05}");
            let _ = write!(
                t,
                "\n[entries.{last}]\nplugin = \"consumer\"\nprefer = {{ database = \"d{:05}\" }}\nconfig = {{ n = {i} }}\n",
                i - 1
            );
        }
    }
    Composition {
        shape: Shape::Preferred,
        entries: n,
        text: t,
        consumer: (last, "database".into()),
    }
}

fn chain(n: usize) -> Composition {
    let mut t = String::from("version = 1\n");
    for i in 0..n {
        let _ = write!(
            t,
            "\n[plugins.p{i:05}]\nversion = \"1.0.0\"\nprovides = {{ cap{i:05} = \"1.0.0\" }}\n"
        );
        if i > 0 {
            let _ = writeln!(t, "requires = {{ cap{:05} = \">=1,<2\" }}", i - 1);
        }
        let _ = write!(
            t,
            "[entries.e{i:05}]\nplugin = \"p{i:05}\"\nconfig = {{ n = {i} }}\n"
        );
    }
    Composition {
        shape: Shape::Chain,
        entries: n,
        text: t,
        consumer: (format!("e{:05}", n - 1), format!("cap{:05}", n - 2)),
    }
}

fn fan(n: usize) -> Composition {
    let mut t = String::from(
        "version = 1\n\n[plugins.db]\nversion = \"1.0.0\"\nprovides = { database = \"1.0.0\" }\n\n[plugins.consumer]\nversion = \"1.0.0\"\nrequires = { database = \">=1,<2\" }\n\n[entries.db]\nconfig = { n = 0 }\n",
    );
    for i in 1..n {
        let _ = write!(
            t,
            "\n[entries.c{i:05}]\nplugin = \"consumer\"\nconfig = {{ n = {i} }}\n"
        );
    }
    Composition {
        shape: Shape::Fan,
        entries: n,
        text: t,
        consumer: (format!("c{:05}", n - 1), "database".into()),
    }
}

fn deep(n: usize) -> Composition {
    // Depth so that the leaves hold about 16 consumers each.
    let mut depth = 1;
    while 4usize.pow(depth) * 16 < n {
        depth += 1;
    }
    let mut t = String::from(
        "version = 1\n\n[plugins.db]\nversion = \"1.0.0\"\nprovides = { database = \"1.0.0\" }\n\n[plugins.shard]\nversion = \"1.0.0\"\nprovides = { shard = \"1.0.0\" }\n\n[plugins.consumer]\nversion = \"1.0.0\"\nrequires = { database = \">=1,<2\", shard = \">=1,<2\" }\n\n[entries.db]\nconfig = { n = 0 }\n",
    );
    // Scopes above the leaves get a shard provider each.
    let mut parents = vec![String::new()];
    for _ in 1..depth {
        let mut next = Vec::new();
        for p in &parents {
            for b in 0..4 {
                next.push(format!("{p}/s{b}"));
            }
        }
        parents = next;
    }
    let leaves: Vec<String> = parents
        .iter()
        .flat_map(|p| (0..4).map(move |b| format!("{p}/l{b}")))
        .collect();
    // Every scope the tree uses is declared, parents before children.
    let mut declared = std::collections::BTreeSet::new();
    for path in parents.iter().chain(&leaves) {
        let mut at = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            at.push('/');
            at.push_str(part);
            declared.insert(at.clone());
        }
    }
    for scope in &declared {
        let _ = write!(t, "\n[scopes.\"{scope}\"]\n");
    }
    let mut made = 1;
    for (i, p) in parents.iter().enumerate() {
        if made >= n {
            break;
        }
        let scope = if p.is_empty() { "/" } else { p.as_str() };
        let _ = write!(
            t,
            "\n[entries.shard{i:05}]\nplugin = \"shard\"\nscope = \"{scope}\"\nconfig = {{ n = {made} }}\n"
        );
        made += 1;
    }
    let mut i = 0;
    let mut last = String::new();
    while made < n {
        let scope = &leaves[i % leaves.len()];
        last = format!("c{i:05}");
        let _ = write!(
            t,
            "\n[entries.{last}]\nplugin = \"consumer\"\nscope = \"{scope}\"\nconfig = {{ n = {made} }}\n"
        );
        made += 1;
        i += 1;
    }
    Composition {
        shape: Shape::Deep,
        entries: n,
        text: t,
        consumer: (last, "shard".into()),
    }
}

fn builtin(n: usize) -> Composition {
    let mut t = String::from(
        "version = 1\n\n[agents.assistant]\nprompt = \"Use the tools.\"\ndefault_input = \"go\"\nprefer_model = \"m00000\"\ntools = [\"t00001\"]\n",
    );
    for i in 0..n {
        if i % 2 == 0 {
            let _ = write!(
                t,
                "\n[entries.m{i:05}]\nplugin = \"scripted\"\n[[entries.m{i:05}.config.turns]]\ntool_calls = [{{ name = \"t00001\", args = {{}} }}]\n[[entries.m{i:05}.config.turns]]\ntext = \"done {i}\"\n"
            );
        } else {
            let _ = write!(
                t,
                "\n[entries.t{i:05}]\nplugin = \"command\"\n[[entries.t{i:05}.config.tools]]\nname = \"t{i:05}\"\ndescription = \"Says {i}.\"\nargs = {{ type = \"object\" }}\nargv = [\"echo\", \"{i}\"]\nidempotent = true\n"
            );
        }
    }
    Composition {
        shape: Shape::Builtin,
        entries: n,
        text: t,
        consumer: ("/agents/assistant".into(), "model".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_loads_resolves_and_has_its_size() {
        for shape in Shape::ALL {
            let c = generate(shape, 200);
            let loaded = crate::load::load_str("c.toml", &c.text);
            assert!(
                !loaded.has_errors(),
                "{}: {:#?}",
                shape.name(),
                loaded.diagnostics
            );
            let composition = loaded.composition.expect("loads");
            assert_eq!(composition.entries.len(), 200, "{}", shape.name());
            let plan = crate::engine::resolve::resolve(&composition);
            assert!(
                plan.pending.is_empty(),
                "{}: {:?}",
                shape.name(),
                plan.pending
            );
            if shape == Shape::Preferred {
                // Each consumer binds the provider it prefers.
                for r in &plan.resolutions {
                    let (consumer, selected) = (r.consumer.name(), r.selected.as_ref());
                    let n: usize = consumer[1..].parse().expect("c#####");
                    assert_eq!(
                        selected.map(|s| s.entry.as_str().to_owned()),
                        Some(format!("d{:05}", n - 1)),
                        "{consumer}"
                    );
                }
            }
            for edited in [c.one_change(), c.cascade()] {
                assert!(
                    edited != c.text,
                    "{}: an edit changes the text",
                    shape.name()
                );
                assert!(!crate::load::load_str("c.toml", &edited).has_errors());
            }
        }
    }
}
