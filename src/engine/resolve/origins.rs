//! Carrying a plan over to a composition that says the same thing elsewhere.
//!
//! A plan depends on what a composition says, never on where: a reload that
//! only moved declarations (an edit above them, a table moved to an include)
//! resolves exactly as before. The plan's requirements still say where they
//! were declared, for diagnostics; [`with_origins_of`] points them at the new
//! declarations instead of resolving again.

use super::{Consumer, Plan};
use crate::engine::model::{Composition, Entry, EntryId, Requirement};
use crate::engine::span::Origin;

/// `plan`, a plan of a composition equal to `composition` (`==`, which
/// ignores origins), with each requirement's origin taken from
/// `composition`; `None` when every origin already agrees (the common case:
/// nothing is cloned).
pub fn with_origins_of(plan: &Plan, composition: &Composition) -> Option<Plan> {
    let mut entries = EntryCursor::new(composition);
    let mut declared = |c: &Consumer, r: &Requirement| -> Option<Option<Origin>> {
        let requirements = match c {
            Consumer::Entry(id) => &entries.find(id)?.manifest.requires,
            Consumer::Scope(path) => &composition.scopes.get(path)?.requirements,
        };
        requirements.get(&r.capability).map(|d| d.origin)
    };
    let first = plan.resolutions.iter().position(|r| {
        declared(&r.consumer, &r.requirement).is_some_and(|o| o != r.requirement.origin)
    })?;
    let mut out = plan.clone();
    for r in &mut out.resolutions[first..] {
        if let Some(origin) = declared(&r.consumer, &r.requirement) {
            r.requirement.origin = origin;
        }
    }
    Some(out)
}

/// Entries looked up in id order by walking beside them (a plan lists its
/// resolutions by consumer name, so a 10,000-entry plan costs one pass
/// instead of 10,000 map searches); a lookup out of order searches the map.
struct EntryCursor<'c> {
    composition: &'c Composition,
    walk: std::iter::Peekable<std::collections::btree_map::Iter<'c, EntryId, Entry>>,
}

impl<'c> EntryCursor<'c> {
    fn new(composition: &'c Composition) -> Self {
        Self {
            composition,
            walk: composition.entries.iter().peekable(),
        }
    }

    fn find(&mut self, id: &EntryId) -> Option<&'c Entry> {
        while let Some(&(next, entry)) = self.walk.peek() {
            match next.cmp(id) {
                std::cmp::Ordering::Less => {
                    self.walk.next();
                }
                std::cmp::Ordering::Equal => return Some(entry),
                std::cmp::Ordering::Greater => break,
            }
        }
        // Out of order (or past the end): the map answers.
        self.composition.entries.get(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::resolve::resolve;
    use crate::engine::span::{Origin, SourceId, Span};
    use crate::load::load_str;

    const TEXT: &str = r#"
version = 1

[plugins.postgres]
version = "1.0.0"
provides = { database = "1.4.2" }

[plugins.app]
version = "1.0.0"
requires = { database = ">=1,<2" }

[entries.db]
plugin = "postgres"

[entries.app]

[entries.worker]
plugin = "app"
"#;

    fn origin_of(plan: &Plan) -> Option<Origin> {
        plan.resolutions[0].requirement.origin
    }

    #[test]
    fn a_moved_declaration_moves_the_plans_origins_and_nothing_else() {
        let before = load_str("c.toml", TEXT).composition.expect("loads");
        let moved_text = format!("# a comment above everything\n{TEXT}");
        let after = load_str("c.toml", &moved_text).composition.expect("loads");
        assert_eq!(before, after, "only origins differ");
        let plan = resolve(&before);
        assert_eq!(with_origins_of(&plan, &before), None);
        let carried = with_origins_of(&plan, &after).expect("origins moved");
        assert_eq!(carried, plan, "the same resolution");
        assert_eq!(carried, resolve(&after));
        let (old, new) = (origin_of(&plan).unwrap(), origin_of(&carried).unwrap());
        let shift = u32::try_from("# a comment above everything\n".len()).unwrap();
        assert_eq!(new.span.start, old.span.start + shift);
        assert_eq!(origin_of(&carried), origin_of(&resolve(&after)));
    }

    #[test]
    fn resolutions_out_of_entry_order_still_find_their_declarations() {
        let before = load_str("c.toml", TEXT).composition.expect("loads");
        let moved_text = format!("# moved\n{TEXT}");
        let after = load_str("c.toml", &moved_text).composition.expect("loads");
        let mut plan = resolve(&before);
        assert!(plan.resolutions.len() >= 2);
        plan.resolutions.reverse();
        let carried = with_origins_of(&plan, &after).expect("origins moved");
        let mut expected = resolve(&after);
        expected.resolutions.reverse();
        let origins =
            |p: &Plan| -> Vec<_> { p.resolutions.iter().map(|r| r.requirement.origin).collect() };
        assert_eq!(origins(&carried), origins(&expected));
    }

    #[test]
    fn plan_equality_ignores_origins_so_the_test_above_compares_them_itself() {
        let c = load_str("c.toml", TEXT).composition.expect("loads");
        let plan = resolve(&c);
        let mut other = plan.clone();
        other.resolutions[0].requirement.origin =
            Some(Origin::new(SourceId(9), Span { start: 1, end: 2 }));
        assert_eq!(plan, other);
    }
}
