use proptest::prelude::*;

use crate::engine::policy::{ResourcePattern, normalize_path};

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("..".to_owned()),
        1 => Just(".".to_owned()),
        1 => Just(String::new()),
        1 => Just("workspace".to_owned()),
        1 => Just("*".to_owned()),
        1 => Just("**".to_owned()),
        4 => "[a-z.]{1,4}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 0..8).prop_map(|s| format!("/{}", s.join("/")))
}

/// An independent oracle: where the path ends up after lexical
/// resolution, or `None` if a `..` climbs above the root.
fn resolve(path: &str) -> Option<Vec<&str>> {
    let mut stack = Vec::new();
    for seg in path.split('/').skip(1) {
        match seg {
            "" | "." => {}
            ".." => {
                stack.pop()?;
            }
            s => stack.push(s),
        }
    }
    Some(stack)
}

fn escapes_workspace(path: &str) -> bool {
    resolve(path).is_none_or(|s| s.first() != Some(&"workspace"))
}

proptest! {
    #[test]
    fn escaping_paths_never_match_workspace(rest in path()) {
        let pattern = ResourcePattern::parse("/workspace/**").unwrap();
        let resource = format!("/workspace{rest}");
        prop_assert_eq!(pattern.matches(&resource), !escapes_workspace(&resource), "{}", resource);
        // Anything that matches normalizes to a path below `/workspace`.
        if pattern.matches(&resource) {
            let n = normalize_path(&resource).unwrap();
            prop_assert!(n == "/workspace" || n.starts_with("/workspace/"), "{resource} -> {n}");
        }
    }

    #[test]
    fn any_dotdot_above_workspace_never_matches(prefix in prop::collection::vec("[a-z]{1,3}", 0..4), extra in 1usize..4, tail in path()) {
        // `/workspace/p1/../../..` climbs `extra` levels above /workspace's contents.
        let ups = prefix.len() + extra;
        let mut resource = String::from("/workspace");
        for p in &prefix {
            resource.push('/');
            resource.push_str(p);
        }
        for _ in 0..ups {
            resource.push_str("/..");
        }
        resource.push_str(&tail);
        let pattern = ResourcePattern::parse("/workspace/**").unwrap();
        let n = normalize_path(&resource);
        if pattern.matches(&resource) {
            // Only possible if the tail re-enters `/workspace` explicitly.
            let n = n.unwrap();
            prop_assert!(n == "/workspace" || n.starts_with("/workspace/"));
            prop_assert!(tail.contains("workspace"), "{resource}");
        }
    }

    #[test]
    fn normalization_is_idempotent(p in path()) {
        if let Ok(n) = normalize_path(&p) {
            prop_assert_eq!(normalize_path(&n).unwrap(), n.clone());
            prop_assert!(!n.contains("//") && !n.contains("/./") && !n.ends_with("/.."));
            prop_assert!(n == "/" || !n.ends_with('/'));
        }
    }

    #[test]
    fn normalized_paths_match_like_their_originals(p in path()) {
        let pattern = ResourcePattern::parse("/workspace/**").unwrap();
        if let Ok(n) = normalize_path(&p) {
            prop_assert_eq!(pattern.matches(&p), pattern.matches(&n));
        } else {
            prop_assert!(!pattern.matches(&p));
        }
    }
}
