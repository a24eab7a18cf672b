//! Carrying a plan over to a composition that says the same thing elsewhere.
//!
//! A plan depends on what a composition says, never on where: a reload that
//! only moved declarations (an edit above them, a table moved to an include)
//! resolves exactly as before. The plan's requirements still say where they
//! were declared, for diagnostics; [`with_origins_of`] points them at the new
//! declarations instead of resolving again.

use super::{Consumer, Plan};
use crate::engine::model::{Composition, Requirement};

/// `plan`, a plan of a composition equal to `composition` (`==`, which
/// ignores origins), with each requirement's origin taken from
/// `composition`; `None` when every origin already agrees (the common case:
/// nothing is cloned).
pub fn with_origins_of(plan: &Plan, composition: &Composition) -> Option<Plan> {
    let declared = |c: &Consumer, r: &Requirement| -> Option<&Requirement> {
        match c {
            Consumer::Entry(id) => composition
                .entries
                .get(id)?
                .manifest
                .requires
                .get(&r.capability),
            Consumer::Scope(path) => composition
                .scopes
                .get(path)?
                .requirements
                .get(&r.capability),
        }
    };
    let moved = |i: usize| {
        let r = &plan.resolutions[i];
        declared(&r.consumer, &r.requirement).is_some_and(|d| d.origin != r.requirement.origin)
    };
    let first = (0..plan.resolutions.len()).find(|&i| moved(i))?;
    let mut out = plan.clone();
    for r in &mut out.resolutions[first..] {
        if let Some(d) = declared(&r.consumer, &r.requirement) {
            r.requirement.origin = d.origin;
        }
    }
    Some(out)
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
    fn plan_equality_ignores_origins_so_the_test_above_compares_them_itself() {
        let c = load_str("c.toml", TEXT).composition.expect("loads");
        let plan = resolve(&c);
        let mut other = plan.clone();
        other.resolutions[0].requirement.origin =
            Some(Origin::new(SourceId(9), Span { start: 1, end: 2 }));
        assert_eq!(plan, other);
    }
}
