//! Which leaves of two trees differ, each named by its path: what a
//! terraform-style diff shows (`~ store.path: "a.db" -> "b.db"`).
//!
//! A tree is a [`Canon`] value; maps are walked key by key, anything else
//! (a string, a number, a list) is a leaf compared whole. A key only one
//! side has is a leaf added or removed (its whole value, even a map).

use crate::engine::canonical::Canon;

/// One leaf that differs.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafChange {
    /// The keys from the root to the leaf.
    pub path: Vec<String>,
    /// Its old value (`None`: added).
    pub old: Option<Canon>,
    /// Its new value (`None`: removed).
    pub new: Option<Canon>,
    /// Whether the values were replaced by a mask (a secret, a value under
    /// a secret-looking key): the change is named, never shown.
    pub masked: bool,
}

impl LeafChange {
    /// `{"path": [...], "old", "new", "masked"}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "path": self.path,
            "old": self.old.as_ref().map(Canon::to_json),
            "new": self.new.as_ref().map(Canon::to_json),
            "masked": self.masked,
        })
    }

    /// The path as TOML spells it: bare keys where TOML allows them
    /// (`A-Za-z0-9_-`), quoted otherwise (`entries.db.config."a.b"`).
    pub fn path_text(&self) -> String {
        path_text(&self.path)
    }
}

/// `segments` as a TOML dotted key.
pub fn path_text(segments: &[String]) -> String {
    segments
        .iter()
        .map(|s| toml_key(s))
        .collect::<Vec<_>>()
        .join(".")
}

/// One key as TOML spells it: bare where TOML allows (`A-Za-z0-9_-`),
/// a quoted string otherwise (`"a.b"`, `"llm.chat"`).
pub fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        key.to_owned()
    } else {
        toml_string(key)
    }
}

/// `text` as a TOML basic string, escaped.
pub fn toml_string(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// Every leaf that differs between `old` and `new`, in path order.
pub fn changed_leaves(old: &Canon, new: &Canon) -> Vec<LeafChange> {
    changed_leaves_with(old, new, &|_| false)
}

/// [`changed_leaves`], treating a map for which `is_leaf` holds as one leaf
/// (a secret reference `{secret = NAME}` is a value, not a table).
pub fn changed_leaves_with(
    old: &Canon,
    new: &Canon,
    is_leaf: &dyn Fn(&Canon) -> bool,
) -> Vec<LeafChange> {
    let mut out = Vec::new();
    walk(&mut Vec::new(), Some(old), Some(new), is_leaf, &mut out);
    out
}

fn walk(
    path: &mut Vec<String>,
    old: Option<&Canon>,
    new: Option<&Canon>,
    is_leaf: &dyn Fn(&Canon) -> bool,
    out: &mut Vec<LeafChange>,
) {
    match (old, new) {
        (Some(x @ Canon::Map(a)), Some(y @ Canon::Map(b))) if !is_leaf(x) && !is_leaf(y) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                path.push(key.clone());
                walk(path, a.get(key), b.get(key), is_leaf, out);
                path.pop();
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(LeafChange {
            path: path.clone(),
            old: a.cloned(),
            new: b.cloned(),
            masked: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_are_named_by_their_path() {
        let old = Canon::map([
            ("store", Canon::map([("path", Canon::from("a.db"))])),
            ("same", Canon::Int(1)),
            ("gone", Canon::map([("x", Canon::Int(1))])),
        ]);
        let new = Canon::map([
            ("store", Canon::map([("path", Canon::from("b.db"))])),
            ("same", Canon::Int(1)),
            ("new", Canon::list(["a"])),
        ]);
        let rows: Vec<(String, Option<Canon>, Option<Canon>)> = changed_leaves(&old, &new)
            .into_iter()
            .map(|c| (c.path_text(), c.old, c.new))
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "gone".into(),
                    Some(Canon::map([("x", Canon::Int(1))])),
                    None
                ),
                ("new".into(), None, Some(Canon::list(["a"]))),
                (
                    "store.path".into(),
                    Some(Canon::from("a.db")),
                    Some(Canon::from("b.db"))
                ),
            ]
        );
        assert!(changed_leaves(&old, &old).is_empty());
    }

    #[test]
    fn paths_quote_what_toml_cannot_leave_bare() {
        let p = |s: &[&str]| path_text(&s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>());
        assert_eq!(
            p(&["entries", "finance-db", "config", "a.b"]),
            "entries.finance-db.config.\"a.b\""
        );
        assert_eq!(
            p(&["x", "with space", "q\"uote", ""]),
            "x.\"with space\".\"q\\\"uote\".\"\""
        );
    }
}
