use serde_json::json;

use crate::engine::policy::{
    AllowAll, Grant, MAX_EXPANSIONS, Permission, PermissionTemplate, PolicyRequest, PolicyRules,
    TemplateError, evaluate_or_deny, expand,
};

fn texts(perms: &[Permission]) -> Vec<String> {
    perms.iter().map(ToString::to_string).collect()
}

#[test]
fn literal_templates() {
    let t = PermissionTemplate::parse("fs.write:/workspace/**").unwrap();
    assert!(t.is_literal() && t.is_scoped());
    assert_eq!(
        texts(&t.expand(&json!({})).unwrap()),
        ["fs.write:/workspace/**"]
    );
    assert_eq!(
        texts(&expand("net.fetch", &json!(null)).unwrap()),
        ["net.fetch"]
    );
}

#[test]
fn pointer_into_arguments() {
    let args = json!({"path": "/workspace/a.txt", "opts": {"dst": "/tmp/x"}});
    assert_eq!(
        texts(&expand("fs.read:{/path}", &args).unwrap()),
        ["fs.read:/workspace/a.txt"]
    );
    assert_eq!(
        texts(&expand("fs.write:{/opts/dst}", &args).unwrap()),
        ["fs.write:/tmp/x"]
    );
    assert_eq!(
        texts(&expand("fs.read:/workspace/{/name}.txt", &json!({"name": "n"})).unwrap()),
        ["fs.read:/workspace/n.txt"]
    );
}

#[test]
fn pointer_escapes_and_indices() {
    let args = json!({"a/b": "slash", "m~n": "tilde", "list": ["x", "y"]});
    assert_eq!(texts(&expand("r.x:{/a~1b}", &args).unwrap()), ["r.x:slash"]);
    assert_eq!(texts(&expand("r.x:{/m~0n}", &args).unwrap()), ["r.x:tilde"]);
    assert_eq!(texts(&expand("r.x:{/list/1}", &args).unwrap()), ["r.x:y"]);
    assert!(matches!(
        expand("r.x:{/list/01}", &args),
        Err(TemplateError::MissingArgument { .. })
    ));
    assert!(matches!(
        expand("r.x:{/list/-}", &args),
        Err(TemplateError::MissingArgument { .. })
    ));
    assert!(matches!(
        PermissionTemplate::parse("r.x:{/a~2}"),
        Err(TemplateError::Syntax { .. })
    ));
}

#[test]
fn literal_braces() {
    let t = expand("r.x:{{lit}}-{/v}", &json!({"v": "1"})).unwrap();
    assert_eq!(texts(&t), ["r.x:{lit}-1"]);
    for bad in [
        "r.x:{/v",
        "r.x:/v}",
        "r.x:{}",
        "r.x:{path}",
        "r.x:{/a{b}",
        "r{/v}.x:a",
    ] {
        let e = PermissionTemplate::parse(bad).unwrap_err();
        assert!(matches!(e, TemplateError::Syntax { .. }), "{bad}: {e}");
    }
    assert!(
        PermissionTemplate::parse("r.x:/v}")
            .unwrap_err()
            .help()
            .unwrap()
            .contains("}}")
    );
}

#[test]
fn scalars_render_as_text() {
    assert_eq!(
        texts(&expand("db.row:orders/{/id}", &json!({"id": 42})).unwrap()),
        ["db.row:orders/42"]
    );
    assert_eq!(
        texts(&expand("x.y:{/f}", &json!({"f": true})).unwrap()),
        ["x.y:true"]
    );
    assert_eq!(
        texts(&expand("x.y:{/f}", &json!({"f": 1.5})).unwrap()),
        ["x.y:1.5"]
    );
}

#[test]
fn unusable_values_are_errors() {
    let args = json!({"n": null, "o": {}, "e": [], "nested": [["a"]], "mixed": ["a", null]});
    assert!(matches!(
        expand("x.y:{/missing}", &args),
        Err(TemplateError::MissingArgument { .. })
    ));
    assert!(matches!(
        expand("x.y:{/n}", &args),
        Err(TemplateError::UnsupportedValue { kind: "null", .. })
    ));
    assert!(matches!(
        expand("x.y:{/o}", &args),
        Err(TemplateError::UnsupportedValue { .. })
    ));
    assert!(matches!(
        expand("x.y:{/e}", &args),
        Err(TemplateError::EmptyArray { .. })
    ));
    assert!(matches!(
        expand("x.y:{/nested}", &args),
        Err(TemplateError::UnsupportedValue { .. })
    ));
    assert!(matches!(
        expand("x.y:{/mixed}", &args),
        Err(TemplateError::UnsupportedValue { .. })
    ));
    // Substituted resources are taken exactly, never trimmed.
    assert!(matches!(
        expand("x.y:{/p}", &json!({"p": " /etc/passwd"})),
        Err(TemplateError::InvalidResource { .. })
    ));
    assert!(matches!(
        expand("x.y:{/p}", &json!({"p": ""})),
        Err(TemplateError::InvalidResource { .. })
    ));
    assert!(matches!(
        expand("x.y:{/p}", &json!({"p": "a\0b"})),
        Err(TemplateError::InvalidResource { .. })
    ));
}

#[test]
fn arrays_and_products() {
    let args = json!({"src": ["/a", "/b"], "dst": ["/x", "/y", "/a"], "one": "/o"});
    assert_eq!(
        texts(&expand("fs.read:{/src}", &args).unwrap()),
        ["fs.read:/a", "fs.read:/b"]
    );
    assert_eq!(
        texts(&expand("r.x:{/src}{/one}", &args).unwrap()),
        ["r.x:/a/o", "r.x:/b/o"]
    );
    let product = expand("r.x:{/src}->{/dst}", &args).unwrap();
    assert_eq!(
        texts(&product),
        [
            "r.x:/a->/x",
            "r.x:/a->/y",
            "r.x:/a->/a",
            "r.x:/b->/x",
            "r.x:/b->/y",
            "r.x:/b->/a"
        ]
    );
    // Duplicates collapse.
    assert_eq!(
        texts(&expand("r.x:{/v}", &json!({"v": ["a", "a"]})).unwrap()),
        ["r.x:a"]
    );
}

#[test]
fn product_is_capped() {
    let nine: Vec<String> = (0..9).map(|i| i.to_string()).collect();
    let args = json!({"a": nine, "b": nine});
    assert!(expand("r.x:{/a}{/b}", &args).is_err());
    let e = expand("r.x:{/a}{/b}", &args).unwrap_err();
    assert_eq!(
        e,
        TemplateError::TooManyExpansions {
            template: "r.x:{/a}{/b}".into(),
            count: 81,
            limit: MAX_EXPANSIONS
        }
    );
    let eight: Vec<String> = (0..8).map(|i| i.to_string()).collect();
    assert_eq!(
        expand("r.x:{/a}{/b}", &json!({"a": eight, "b": eight}))
            .unwrap()
            .len(),
        64
    );
}

#[test]
fn one_element_outside_denies_the_call() {
    let rules = PolicyRules {
        grants: vec![Grant::parse("fs.read:/workspace/**").unwrap()],
        ..PolicyRules::default()
    };
    let all_allowed = |args: serde_json::Value| {
        expand("fs.read:{/paths}", &args).is_ok_and(|perms| {
            perms
                .into_iter()
                .all(|p| evaluate_or_deny(&rules, &PolicyRequest::for_tool("cat", p)).allowed)
        })
    };
    assert!(all_allowed(
        json!({"paths": ["/workspace/a", "/workspace/b/c"]})
    ));
    assert!(!all_allowed(
        json!({"paths": ["/workspace/a", "/etc/passwd"]})
    ));
    assert!(!all_allowed(
        json!({"paths": ["/workspace/a", "/workspace/../etc/passwd"]})
    ));
    assert!(!all_allowed(json!({"paths": []})));
    assert!(!all_allowed(json!({})));
    // Relative values cannot climb out of a literal prefix either.
    let perms = expand("fs.read:/workspace/{/p}", &json!({"p": "../etc/passwd"})).unwrap();
    assert!(!evaluate_or_deny(&rules, &PolicyRequest::for_tool("cat", perms[0].clone())).allowed);
    // Template errors are errors, never an allowed empty list, whatever the engine.
    assert!(expand("fs.read:{/p}", &json!({})).is_err());
    let _ = AllowAll;
}
