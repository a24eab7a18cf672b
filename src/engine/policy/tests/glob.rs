use crate::engine::policy::{ResourceError, ResourcePattern, normalize_path};

fn m(pattern: &str, resource: &str) -> bool {
    ResourcePattern::parse(pattern).unwrap().matches(resource)
}

#[test]
fn semantics_table() {
    let table: &[(&str, &str, bool)] = &[
        // exact
        ("/workspace/a.txt", "/workspace/a.txt", true),
        ("/workspace/a.txt", "/workspace/A.txt", false),
        ("/workspace/a.txt", "/workspace/a.txt/b", false),
        // `*` stays in one segment
        ("/workspace/*", "/workspace/a", true),
        ("/workspace/*", "/workspace/a/b", false),
        ("/workspace/*", "/workspace", false),
        ("/workspace/*.txt", "/workspace/a.txt", true),
        ("/workspace/*.txt", "/workspace/.txt", true),
        ("/workspace/*.txt", "/workspace/d/a.txt", false),
        ("/workspace/a*b*c", "/workspace/aXbYbZc", true),
        ("/workspace/a*b*c", "/workspace/aXbY", false),
        // `**` crosses segments, zero or more
        ("/workspace/**", "/workspace", true),
        ("/workspace/**", "/workspace/a", true),
        ("/workspace/**", "/workspace/a/b/c", true),
        ("/workspace/**", "/workspacex", false),
        ("/workspace/**", "/other/workspace", false),
        ("/a/**/b", "/a/b", true),
        ("/a/**/b", "/a/x/y/b", true),
        ("/a/**/b", "/a/x/y/c", false),
        ("/**/*.rs", "/src/main.rs", true),
        ("/**/*.rs", "/main.rs", true),
        ("/**", "/", true),
        ("/", "/", true),
        ("/", "/a", false),
        // opaque resources
        ("api.example.com", "api.example.com", true),
        ("*.example.com", "api.example.com", true),
        ("*.example.com", "example.com", false),
        ("*.example.com", "a/b.example.com", false),
        ("db:orders", "db:orders", true),
        ("db:*", "db:orders", true),
        ("**", "anything/at/all", true),
        (
            "https://api.example.com/v1/**",
            "https://api.example.com/v1/x/y",
            true,
        ),
        (
            "https://api.example.com/v1/**",
            "https://api.example.com/v1/../admin",
            false,
        ),
        // relative resources are normalized as paths are
        ("workspace/secrets/**", "workspace/./secrets/key.txt", true),
        ("workspace/secrets/**", "workspace//secrets/key.txt", true),
        ("workspace/secrets/**", "./workspace/secrets/key.txt", true),
        ("workspace/*", "workspace/a/", true),
        ("workspace/./a", "workspace/a", true),
        ("workspace/**", "workspace/../etc/passwd", false),
        // `?`, `{ }` and `[ ]` are literal in grants
        ("/a/[ab]", "/a/[ab]", true),
        ("/a/[ab]", "/a/a", false),
        ("/a/{x,y}", "/a/x", false),
        ("/a/{x,y}", "/a/{x,y}", true),
        ("/a/?", "/a/b", false),
        // kinds never mix
        ("**", "/etc/passwd", false),
        ("/**", "etc/passwd", false),
        // a `*` in the request is a claim, not a literal
        ("/workspace/**", "/workspace/**", true),
        ("/workspace/*", "/workspace/**", false),
        ("/workspace/*", "/workspace/*", true),
        ("/workspace/a*", "/workspace/*", false),
        ("/workspace/*", "/workspace/a*", true),
    ];
    for &(pattern, resource, expected) in table {
        assert_eq!(m(pattern, resource), expected, "{pattern} vs {resource}");
    }
}

#[test]
fn escape_cases() {
    assert!(!m("/workspace/**", "/workspace/../etc/passwd"));
    assert!(m("/etc/**", "/workspace/../etc/passwd"));
    assert!(m("/workspace/b", "/workspace/a/../b"));
    assert!(m("/workspace/a", "/workspace/./a"));
    assert!(m("/workspace/a", "/workspace//a"));
    assert!(m("/workspace/a", "/workspace/a/"));
    assert!(!m("/**", "/../x"));
    assert!(!m("/**", "/workspace/../../x"));
    assert!(!m("/workspace/**", "/workspace/%2e%2e/etc"));
    assert!(!m("/workspace/**", "/workspace/%2E%2E/etc"));
    assert!(!m("/workspace/**", "/workspace/a%2fb"));
    assert!(!m("/workspace/**", "/workspace/a%00"));
    assert!(!m("/workspace/**", "/workspace/a\0"));
    assert!(!m("/workspace/**", "/workspace/..\\etc"));
    assert!(!m("**", "a/../b"));
    assert!(!m("**", "a\\..\\b"));
}

#[test]
fn normalization() {
    assert_eq!(normalize_path("/").unwrap(), "/");
    assert_eq!(normalize_path("//").unwrap(), "/");
    assert_eq!(normalize_path("/a//b/./c/").unwrap(), "/a/b/c");
    assert_eq!(normalize_path("/a/b/../c").unwrap(), "/a/c");
    assert_eq!(normalize_path("/a/..").unwrap(), "/");
    assert_eq!(
        normalize_path("/..").unwrap_err(),
        ResourceError::EscapesRoot
    );
    assert_eq!(
        normalize_path("/a/../..").unwrap_err(),
        ResourceError::EscapesRoot
    );
    assert_eq!(
        normalize_path("a/b").unwrap_err(),
        ResourceError::NotAbsolute
    );
    assert_eq!(
        normalize_path("/a/%2E").unwrap_err(),
        ResourceError::PercentEncoded("%2e".into())
    );
    assert_eq!(
        normalize_path("/a\0").unwrap_err(),
        ResourceError::ControlCharacter
    );
    assert_eq!(
        normalize_path("/a\\b").unwrap_err(),
        ResourceError::Backslash
    );
    // `...` is an ordinary name.
    assert_eq!(normalize_path("/a/.../b").unwrap(), "/a/.../b");
}

#[test]
fn argument_patterns_read_like_gitignore() {
    use crate::engine::policy::ArgumentPattern;
    let m = |p: &str, v: &str| ArgumentPattern::parse(p).unwrap().matches(v);
    let table: &[(&str, &str, bool)] = &[
        // What the deny tests refused before the dialect changed still is.
        ("*.env", "a/.env", true),
        ("*.env", "/home/u/.env", true),
        ("*.env", "config/prod.env", true),
        ("*.env", "x.env\0", true),
        ("*.env", "x.env\0.txt", true),
        ("*.env", "a/.env.txt", false),
        ("*.env", "prod.env.bak", false),
        ("/secrets/*", "/tmp/../secrets/k", true),
        ("*internal*", "http://internal", true),
        // Without `/`: any segment; what it matches covers what is below.
        ("*.env", "a/b/.env", true),
        ("secrets", "secrets/key", true),
        ("secrets", "a/secrets", true),
        ("secrets", "a/secrets-old/k", false),
        ("?.env", "a/x.env", true),
        ("?.env", "a/xy.env", false),
        // With `/`: anchored, and everything below is refused too.
        ("/secrets/*", "/secrets/a", true),
        ("/secrets/*", "/secrets/a/b", true),
        ("/secrets/*", "/secrets", false),
        ("/secrets/*", "/x/secrets/a", false),
        ("/secrets/*", "secrets/a", false),
        ("workspace/secrets/**", "workspace/./secrets/key.txt", true),
        ("workspace/secrets/**", "workspace//secrets/key.txt", true),
        ("workspace/secrets/**", "/workspace/secrets/key.txt", false),
        ("/a/**/b", "/a/x/y/b/c", true),
        ("**", "anything/at/all", true),
        // Literal brackets; a `*` in a value is the character.
        ("[ab].txt", "[ab].txt", true),
        ("[ab].txt", "a.txt", false),
        ("{a,b}", "a", false),
        ("/s/*", "/s/**", true),
    ];
    for &(pattern, value, expected) in table {
        assert_eq!(m(pattern, value), expected, "{pattern} vs {value:?}");
    }
    assert!(ArgumentPattern::parse("").is_err());
    assert!(ArgumentPattern::parse("a**b").is_err());
    assert!(ArgumentPattern::parse("//").is_err());
}
