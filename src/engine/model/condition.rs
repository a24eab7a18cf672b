//! Conditional entries (`enabled_if`), the Oracle runtime's `autoDetect`.
//!
//! An entry may be enabled only when a condition holds — today: environment
//! variables are set. The engine never reads the environment: the edge
//! evaluates conditions with [`Composition::apply_conditions`] and a lookup
//! it owns (the process environment, `--env-file`). A skipped entry leaves
//! the composition like a disabled one, is reported by `check` and
//! `explain`, and is listed (names and results, never values) in the
//! snapshot's `metadata`, so the digest says what ran.

use std::collections::BTreeMap;

use super::composition::Composition;
use super::ids::EntryId;
use crate::engine::span::Origin;

/// `enabled_if = { env = ["OPENAI_API_KEY"] }`.
#[derive(Clone, Debug, Eq)]
pub struct Condition {
    /// Variables that must all be set to a non-empty value.
    pub env: Vec<String>,
    /// Where it was written.
    pub origin: Option<Origin>,
}

eq_but_origin!(Condition { env });

impl Condition {
    /// `env OPENAI_API_KEY` (names only).
    pub fn describe(&self) -> String {
        format!("env {}", self.env.join(", "))
    }
}

/// An entry left out because its condition did not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedEntry {
    /// The condition.
    pub condition: Condition,
    /// The variables that were not set.
    pub unset: Vec<String>,
}

impl Composition {
    /// Evaluate every `enabled_if` with `is_set` (whether a variable is set
    /// to a non-empty value): entries whose condition fails move from
    /// `entries` to `skipped`. Returns how many were skipped.
    pub fn apply_conditions(&mut self, is_set: &dyn Fn(&str) -> bool) -> usize {
        let mut skipped = 0;
        let conditions: Vec<(EntryId, Condition)> = self
            .conditions
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (id, condition) in conditions {
            let unset: Vec<String> = condition
                .env
                .iter()
                .filter(|v| !is_set(v))
                .cloned()
                .collect();
            if unset.is_empty() {
                continue;
            }
            if self.entries.remove(&id).is_some() {
                skipped += 1;
                self.skipped.insert(id, SkippedEntry { condition, unset });
            }
        }
        // The agents a skipped process plugin defines go with it (their
        // scopes too); an agent listing one as a sub-agent then finds no
        // such child, as with any agent that is absent.
        let gone: Vec<String> = self
            .agents
            .values()
            .filter(|a| {
                a.defined_by
                    .as_ref()
                    .is_some_and(|e| self.skipped.contains_key(e))
            })
            .map(|a| a.name.clone())
            .collect();
        for name in gone {
            if let Some(agent) = self.agents.remove(&name) {
                self.scopes.remove(&agent.scope);
            }
        }
        skipped
    }

    /// The snapshot metadata of skipped entries (`None` when none was).
    pub fn skipped_metadata(&self) -> Option<crate::engine::canonical::Canon> {
        use crate::engine::canonical::Canon;
        if self.skipped.is_empty() {
            return None;
        }
        let rows: BTreeMap<String, Canon> = self
            .skipped
            .iter()
            .map(|(id, s)| {
                (
                    id.to_string(),
                    Canon::map([
                        ("condition", Canon::Str(s.condition.describe())),
                        (
                            "unset",
                            Canon::List(s.unset.iter().map(|u| Canon::Str(u.clone())).collect()),
                        ),
                    ]),
                )
            })
            .collect();
        Some(Canon::Map(rows))
    }
}
