//! Key-name redaction.
//!
//! Secrets must never reach a hash or a terminal. Two rules live here, on
//! purpose different:
//!
//! * [`is_secret_key_for_hash`] and [`redact_for_hash`] are the Python
//!   reference's rule, reproduced exactly, because `config_hash` covers the
//!   redacted configuration: a key the reference redacts and chassis does
//!   not (or the other way round) changes the hash. Its quirks (`tokens`,
//!   `credentials` and `myApiKey` are *not* redacted) are kept.
//! * [`is_sensitive_key`] is chassis's own, wider rule for *display* of
//!   metadata and configuration keys, where hiding too much costs nothing
//!   and hiding too little leaks. [`redact_url_userinfo`] hides the password
//!   of a URL (a DSN) in displayed values.
//!
//! Everything here is allocation-free except building redacted copies, and
//! linear in the length of the key or text.

use std::borrow::Cow;

use super::canonical::Canon;

/// The text that replaces a redacted value.
pub const REDACTED: &str = "<redacted>";

/// The words of the reference rule, lowercase; `api_?key` is `api_key` plus
/// `apikey`.
const HASH_WORDS: [&str; 12] = [
    "api_key",
    "apikey",
    "secret",
    "token",
    "password",
    "passwd",
    "credential",
    "private_key",
    "access_key",
    "client_secret",
    "authorization",
    "auth",
];

/// The character `c` matches case-insensitively in the reference's regex,
/// lowercased: ASCII folds to lowercase, and Python's `re.IGNORECASE` also
/// matches `İ` (U+0130) and `ı` (U+0131) as `i`, `ſ` (U+017F) as `s` and the
/// Kelvin sign (U+212A) as `k`.
fn fold_for_hash(c: char) -> Option<u8> {
    match c {
        '\u{130}' | '\u{131}' => Some(b'i'),
        '\u{17f}' => Some(b's'),
        '\u{212a}' => Some(b'k'),
        _ if c.is_ascii() => u8::try_from(c).ok().map(|b| b.to_ascii_lowercase()),
        _ => None,
    }
}

/// Whether `c` matches `[a-z0-9]` under Python's `re.IGNORECASE`; every
/// other character (any other non-ASCII one included) is a word separator.
fn is_hash_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '\u{130}' | '\u{131}' | '\u{17f}' | '\u{212a}')
}

/// Whether `rest` starts with `word` (case-insensitively, as the reference
/// folds) followed by the end of the key or a separator.
fn hash_word_at(rest: &str, word: &str) -> bool {
    let mut chars = rest.chars();
    for &want in word.as_bytes() {
        if chars.next().and_then(fold_for_hash) != Some(want) {
            return false;
        }
    }
    chars.next().is_none_or(|c| !is_hash_word_char(c))
}

/// The reference's key rule, used for `config_hash`.
///
/// Exactly the reference's
/// `re.search(r"(?:^|[^a-z0-9])(?:api_?key|apikey|secret|token|password|passwd|credential|private_key|access_key|client_secret|authorization|auth)(?=$|[^a-z0-9])", key, re.IGNORECASE)`:
/// one of the words, compared case-insensitively, starting at the key's
/// start or after a separator and ending at the key's end or before a
/// separator. A separator is anything but `[A-Za-z0-9]` (any non-ASCII
/// character too, except the four that Python folds into ASCII letters:
/// `İ`, `ı`, `ſ` and the Kelvin sign U+212A).
///
/// | key | secret? | why |
/// | --- | --- | --- |
/// | `api_key`, `API_KEY`, `apiKey`, `api_key_id`, `openai_api_key` | yes | `api_?key` between separators |
/// | `token_count`, `auth_mode`, `db.password`, `x-auth-token`, `éauth` | yes | `_`, `.`, `-`, `é` separate |
/// | `tokens`, `credentials`, `secrets`, `password2`, `max_tokens` | no | the word runs on into `[a-z0-9]` |
/// | `author`, `oauth`, `tokenizer` | no | same |
/// | `api-key`, `x-api-key`, `private-key` | no | only `_` may sit inside the word |
/// | `myApiKey`, `accessKey` | no | `yA` / `sK` are not word boundaries here |
/// | `ſecret` | yes | Python folds `ſ` to `s` |
#[must_use]
pub fn is_secret_key_for_hash(key: &str) -> bool {
    let mut after_separator = true; // the key's start counts as one
    for (i, c) in key.char_indices() {
        if after_separator {
            let rest = &key[i..];
            if HASH_WORDS.iter().any(|w| hash_word_at(rest, w)) {
                return true;
            }
        }
        after_separator = !is_hash_word_char(c);
    }
    false
}

/// The reference's redaction walk, applied before `config_hash`.
///
/// A map value whose key satisfies [`is_secret_key_for_hash`] becomes
/// `Str("<redacted>")` whatever its type (string, number, `null`, a whole
/// table or list). Maps recurse into their values, lists into their items
/// (items have no key, but maps inside them are checked again), and every
/// other value is kept as it is.
#[must_use]
pub fn redact_for_hash(value: &Canon) -> Canon {
    redact_for_hash_with(value, &|_| None)
}

/// [`redact_for_hash`] with a scrubber for leaf strings.
///
/// The reference also replaces, in every leaf string that is kept, each
/// secret value its redactor has learned (resolved secrets, `redactor.add`).
/// `scrub` receives each kept leaf string and returns its replacement, or
/// `None` to keep it. Map keys are not scrubbed.
#[must_use]
pub fn redact_for_hash_with(value: &Canon, scrub: &dyn Fn(&str) -> Option<String>) -> Canon {
    match value {
        Canon::Map(map) => Canon::Map(
            map.iter()
                .map(|(key, item)| {
                    let item = if is_secret_key_for_hash(key) {
                        Canon::Str(REDACTED.to_owned())
                    } else {
                        redact_for_hash_with(item, scrub)
                    };
                    (key.clone(), item)
                })
                .collect(),
        ),
        Canon::List(items) => Canon::List(
            items
                .iter()
                .map(|item| redact_for_hash_with(item, scrub))
                .collect(),
        ),
        Canon::Str(s) => scrub(s).map_or_else(|| value.clone(), Canon::Str),
        other => other.clone(),
    }
}

/// Words that are sensitive wherever they occur in a key (lowercase).
const SENSITIVE_WORDS: [&str; 21] = [
    "apikey",
    "apikeys",
    "secret",
    "secrets",
    "password",
    "passwords",
    "passwd",
    "pwd",
    "passphrase",
    "credential",
    "credentials",
    "authorization",
    "auth",
    "bearer",
    "cookie",
    "cookies",
    "privatekey",
    "privatekeys",
    "accesskey",
    "accesskeys",
    "clientsecret",
];

/// First words of two-word sensitive sequences, completed by `key(s)` (or
/// `secret(s)` for `client`, already covered by [`SENSITIVE_WORDS`]).
const KEY_QUALIFIERS: [&str; 3] = ["api", "private", "access"];

/// Qualifiers that make a trailing `tokens` a count, not a list of tokens.
const TOKEN_COUNT_QUALIFIERS: [&str; 13] = [
    "max",
    "min",
    "num",
    "number",
    "total",
    "prompt",
    "completion",
    "input",
    "output",
    "reasoning",
    "cached",
    "context",
    "n",
];

fn is_one_of(word: &str, list: &[&str]) -> bool {
    list.iter().any(|w| word.eq_ignore_ascii_case(w))
}

/// Iterator over the words of a key: runs of alphanumeric characters,
/// further split at camelCase boundaries (`apiKey` → `api`, `Key`;
/// `APIKey` → `API`, `Key`) and at letter/digit boundaries (`password2` →
/// `password`, `2`).
struct Words<'a> {
    key: &'a str,
    pos: usize,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.key[self.pos..];
        let skip = rest
            .char_indices()
            .find(|&(_, c)| c.is_alphanumeric())
            .map(|(i, _)| i)?;
        let start = self.pos + skip;
        let mut chars = self.key[start..].char_indices().peekable();
        let mut prev: Option<char> = None;
        let mut end = self.key.len();
        while let Some((i, c)) = chars.next() {
            if !c.is_alphanumeric() {
                end = start + i;
                break;
            }
            if let Some(p) = prev {
                let next = chars.peek().map(|&(_, n)| n);
                let camel = p.is_lowercase() && c.is_uppercase();
                let acronym_end =
                    p.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
                let digit_edge = p.is_numeric() != c.is_numeric();
                if camel || acronym_end || digit_edge {
                    end = start + i;
                    break;
                }
            }
            prev = Some(c);
        }
        self.pos = end;
        Some(&self.key[start..end])
    }
}

/// The wider display rule: whether the value under `key` should be hidden
/// when metadata or configuration is shown (never used for hashing).
///
/// It holds for every key [`is_secret_key_for_hash`] holds for, so nothing
/// the hash treats as secret is ever displayed, and also for keys whose
/// *words* say secret. The key is split into words on non-alphanumeric
/// characters, camelCase boundaries and letter/digit boundaries, compared
/// ASCII-case-insensitively, and is sensitive when:
///
/// * any word is one of `apikey(s)`, `secret(s)`, `password(s)`, `passwd`,
///   `pwd`, `passphrase`, `credential(s)`, `authorization`, `auth`,
///   `bearer`, `cookie(s)`, `privatekey(s)`, `accesskey(s)`, `clientsecret`;
/// * two consecutive words are `api`/`private`/`access` followed by
///   `key(s)`;
/// * the **last** word is `token` (the key names a token: `githubToken`,
///   `session_token`), or `tokens` not preceded by a count qualifier
///   (`max`, `min`, `num`, `number`, `total`, `prompt`, `completion`,
///   `input`, `output`, `reasoning`, `cached`, `context`, `n`). A `token`
///   that is not the last word qualifies something else (`tokenizer`,
///   `tokenUrl`, `token_type`).
///
/// | key | sensitive? | why |
/// | --- | --- | --- |
/// | `api-key`, `x-api-key`, `apiKey`, `myApiKey`, `APIKey`, `API_KEY` | yes | words `api`, `key` |
/// | `private-key`, `accessKeyId`, `aws_access_key` | yes | `private`/`access` + `key` |
/// | `credentials`, `secrets`, `password2`, `db.password`, `pwd` | yes | a secret word |
/// | `githubToken`, `access_token`, `tokens`, `githubTokens` | yes | trailing `token(s)` |
/// | `Authorization`, `auth`, `auth_mode`, `authToken`, `bearer`, `cookies` | yes | a secret word |
/// | `token_count`, `token-type` | yes | the hash rule redacts them, so display does too |
/// | `max_tokens`, `prompt_tokens`, `tokenCount`, `tokenizer`, `tokenType` | no | counts and qualifiers |
/// | `author`, `oauth`, `oauth_provider`, `keyboard`, `key`, `dsn` | no | no secret word |
///
/// A DSN is not sensitive by its key, but its value may carry a password:
/// pass displayed values through [`redact_url_userinfo`].
#[must_use]
pub fn is_sensitive_key(key: &str) -> bool {
    if is_secret_key_for_hash(key) {
        return true;
    }
    let mut prev: Option<&str> = None;
    let mut words = Words { key, pos: 0 }.peekable();
    while let Some(word) = words.next() {
        let last = words.peek().is_none();
        if is_one_of(word, &SENSITIVE_WORDS) {
            return true;
        }
        let is_key = word.eq_ignore_ascii_case("key") || word.eq_ignore_ascii_case("keys");
        if is_key && prev.is_some_and(|p| is_one_of(p, &KEY_QUALIFIERS)) {
            return true;
        }
        if last && word.eq_ignore_ascii_case("token") {
            return true;
        }
        if last
            && word.eq_ignore_ascii_case("tokens")
            && !prev.is_some_and(|p| is_one_of(p, &TOKEN_COUNT_QUALIFIERS))
        {
            return true;
        }
        prev = Some(word);
    }
    false
}

/// Whether `b` may appear in a URL scheme (`[A-Za-z0-9+.-]`).
fn is_scheme_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

/// Whether `c` ends a URL authority (RFC 3986 `/`, `?`, `#`; and, since
/// URLs sit inside free text, whitespace and quoting characters).
fn ends_authority(c: char) -> bool {
    matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>' | '`') || c.is_whitespace()
}

/// Replaces the password of every URL user-info in `text` with
/// [`REDACTED`], for display.
///
/// A URL is `scheme://authority`, with a scheme of `[A-Za-z][A-Za-z0-9+.-]*`
/// and the authority running to the next `/`, `?`, `#`, whitespace or
/// quote. Its user-info is everything before the authority's last `@`; the
/// password is the part of the user-info after its first `:`. A non-empty
/// password is replaced; user names, hosts and paths are kept, and text
/// without such a URL is returned borrowed.
///
/// | text | result |
/// | --- | --- |
/// | `postgres://user:pass@host/db` | `postgres://user:<redacted>@host/db` |
/// | `redis://:s3cret@cache:6379` | `redis://:<redacted>@cache:6379` |
/// | `dsn=mysql://u:p@ss@h x https://a:b@c` | `dsn=mysql://u:<redacted>@h x https://a:<redacted>@c` |
/// | `https://token@github.com`, `http://host:8080/x?u=a@b`, `user:pass@host` | unchanged |
///
/// A password holding an unencoded `/`, `?`, `#` or space is not valid in a
/// URL and is not recognised.
#[must_use]
pub fn redact_url_userinfo(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `text` already accounted for in `out`
    let mut search = 0;
    while let Some(found) = text[search..].find("://") {
        let sep = search + found;
        let auth_start = sep + 3;
        let auth_end = text[auth_start..]
            .find(ends_authority)
            .map_or(text.len(), |i| auth_start + i);
        search = auth_end.max(auth_start);

        let mut scheme_start = sep;
        while scheme_start > 0 && is_scheme_byte(bytes[scheme_start - 1]) {
            scheme_start -= 1;
        }
        // A scheme starts with a letter: skip leading digits and signs.
        while scheme_start < sep && !bytes[scheme_start].is_ascii_alphabetic() {
            scheme_start += 1;
        }
        if scheme_start == sep {
            continue;
        }
        let authority = &text[auth_start..auth_end];
        let Some(at) = authority.rfind('@') else {
            continue;
        };
        let Some(colon) = authority[..at].find(':') else {
            continue;
        };
        let password = &authority[colon + 1..at];
        if password.is_empty() || password == REDACTED {
            continue;
        }
        let pw_start = auth_start + colon + 1;
        let pw_end = auth_start + at;
        let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
        buf.push_str(&text[copied..pw_start]);
        buf.push_str(REDACTED);
        copied = pw_end;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::canonical::test_support::read_jsonl;
    use super::super::canonical::{Canon, hash_text, stable_hash, to_canonical_json};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hash_rule_documented_cases() {
        let secret = [
            "api_key",
            "API_KEY",
            "apiKey",
            "apikey",
            "api_key_id",
            "openai_api_key",
            "token",
            "token_count",
            "auth",
            "auth_mode",
            "Authorization",
            "db.password",
            "x-auth-token",
            "éauth",
            "credential",
            "client_secret",
            "secret_name",
            "passwd",
            "private_key",
            "access_key",
            "ſecret",
            "api\u{212a}ey",
            "apİ_key",
            "a b secret",
            "token\n",
        ];
        let plain = [
            "",
            "max_tokens",
            "tokens",
            "tokenizer",
            "credentials",
            "secrets",
            "password2",
            "author",
            "oauth",
            "api-key",
            "x-api-key",
            "private-key",
            "myApiKey",
            "accessKey",
            "xſecret",
            "ıauth",
            "İauth.x",
            "secretary",
            "keyboard",
        ];
        for key in secret {
            assert!(is_secret_key_for_hash(key), "{key:?} should be secret");
        }
        for key in plain {
            assert!(!is_secret_key_for_hash(key), "{key:?} should not be secret");
        }
    }

    /// The `config-key-rules` composition: every key classifies as the
    /// reference's hashed config shows.
    #[test]
    fn hash_rule_matches_reference_vector() {
        let lines = read_jsonl("reference-snapshots.jsonl");
        let line = lines
            .iter()
            .find(|l| l["name"] == "config-key-rules")
            .expect("config-key-rules line");
        let hashed: serde_json::Value =
            serde_json::from_str(line["hashed_texts"]["config"].as_str().expect("text"))
                .expect("config text is JSON");
        let entries = line["composition"]["entries"].as_array().expect("entries");
        let mut checked = 0;
        for entry in entries {
            let id = entry["id"].as_str().expect("id");
            let config = entry["config"].as_object().expect("config");
            for (key, value) in config {
                let redacted = &hashed[id][key];
                let expect_secret = redacted == REDACTED && value != REDACTED;
                assert_eq!(is_secret_key_for_hash(key), expect_secret, "key {key:?}");
                if value.is_string() {
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 30, "the vector's 30 top-level key names");
    }

    #[test]
    fn redaction_walk() {
        let value = Canon::map([
            ("password", Canon::map([("inner", 1_i64)])),
            ("plain", Canon::from("kept")),
            (
                "list",
                Canon::list([
                    Canon::map([("token", Canon::Null)]),
                    Canon::list([Canon::map([("auth", 2.5)])]),
                    Canon::from("loose"),
                ]),
            ),
        ]);
        let got = to_canonical_json(&redact_for_hash(&value)).expect("finite");
        assert_eq!(
            got,
            r#"{"list":[{"token":"<redacted>"},[{"auth":"<redacted>"}],"loose"],"password":"<redacted>","plain":"kept"}"#
        );
        // A top-level list or scalar has no key: nothing is redacted.
        assert_eq!(redact_for_hash(&Canon::from("token")), Canon::from("token"));
        let scrubbed = redact_for_hash_with(&value, &|s: &str| {
            s.contains("loo").then(|| s.replace("loo", REDACTED))
        });
        assert!(
            to_canonical_json(&scrubbed)
                .expect("finite")
                .contains(r#""<redacted>se""#)
        );
    }

    /// For every reference composition: the hashed texts hash to the
    /// published hashes, re-canonicalize to themselves, and the config text
    /// is rebuilt from the composition by the redaction walk.
    #[test]
    fn reference_snapshot_vectors() {
        let lines = read_jsonl("reference-snapshots.jsonl");
        assert_eq!(lines.len(), 10);
        for line in &lines {
            let name = line["name"].as_str().expect("name");
            let texts = &line["hashed_texts"];
            for (text_key, hash_key) in [
                ("config", "config_hash"),
                ("plugin_graph", "plugin_graph_hash"),
                ("tool_schema", "tool_schema_hash"),
                ("semantic_composition", "semantic_digest"),
            ] {
                let text = texts[text_key].as_str().expect("hashed text");
                let hash = line[hash_key].as_str().expect("hash");
                assert_eq!(hash_text(text), hash, "{name}: {text_key}");
                let parsed = Canon::from_json(&serde_json::from_str(text).expect("JSON"));
                assert_eq!(
                    to_canonical_json(&parsed).expect("finite"),
                    text,
                    "{name}: {text_key}"
                );
                assert_eq!(
                    stable_hash(&parsed).expect("finite"),
                    hash,
                    "{name}: {hash_key}"
                );
            }

            let config_text = texts["config"].as_str().expect("config text");
            let hashed: serde_json::Value = serde_json::from_str(config_text).expect("JSON");
            let active = hashed.as_object().expect("config is a map");
            let entries = line["composition"]["entries"].as_array().expect("entries");
            let rebuilt = Canon::map(
                entries
                    .iter()
                    .filter(|e| active.contains_key(e["id"].as_str().expect("id")))
                    .map(|e| {
                        let config = Canon::from_json(&e["config"]);
                        (e["id"].as_str().expect("id"), redact_for_hash(&config))
                    }),
            );
            let Canon::Map(rebuilt_map) = &rebuilt else {
                unreachable!("Canon::map builds a map")
            };
            assert_eq!(
                rebuilt_map.len(),
                active.len(),
                "{name}: every active entry is in the composition"
            );
            assert_eq!(
                to_canonical_json(&rebuilt).expect("finite"),
                config_text,
                "{name}"
            );
            assert_eq!(
                stable_hash(&rebuilt).expect("finite"),
                line["config_hash"].as_str().expect("hash"),
                "{name}"
            );
        }
    }

    #[test]
    fn display_rule_table() {
        let sensitive = [
            "api-key",
            "x-api-key",
            "apiKey",
            "myApiKey",
            "APIKey",
            "XApiKey",
            "API_KEY",
            "api_keys",
            "private-key",
            "accessKeyId",
            "aws_access_key",
            "credentials",
            "credential",
            "secrets",
            "secret_name",
            "clientSecret",
            "password2",
            "db.password",
            "userPassword",
            "pwd",
            "passphrase",
            "githubToken",
            "sessionToken",
            "session_token",
            "access_token",
            "tokens",
            "githubTokens",
            "Authorization",
            "auth",
            "auth_mode",
            "authToken",
            "bearer",
            "cookie",
            "cookies",
            "token_count",
            "ſecret",
        ];
        let plain = [
            "",
            "max_tokens",
            "prompt_tokens",
            "maxTokens",
            "tokenCount",
            "tokenizer",
            "tokenType",
            "tokenUrl",
            "author",
            "oauth",
            "oauth_provider",
            "keyboard",
            "key",
            "keys",
            "dsn",
            "database_url",
            "name",
            "privateMode",
            "secretary",
        ];
        for key in sensitive {
            assert!(is_sensitive_key(key), "{key:?} should be sensitive");
        }
        for key in plain {
            assert!(!is_sensitive_key(key), "{key:?} should not be sensitive");
        }
    }

    #[test]
    fn words_split() {
        let words = |k: &'static str| Words { key: k, pos: 0 }.collect::<Vec<_>>();
        assert_eq!(words("myApiKey"), ["my", "Api", "Key"]);
        assert_eq!(words("APIKey"), ["API", "Key"]);
        assert_eq!(words("x-api_key.id"), ["x", "api", "key", "id"]);
        assert_eq!(words("password2"), ["password", "2"]);
        assert_eq!(words("__"), Vec::<&str>::new());
        assert_eq!(words("éauth"), ["éauth"]);
    }

    #[test]
    fn url_userinfo() {
        let cases = [
            (
                "postgres://user:pass@host/db",
                "postgres://user:<redacted>@host/db",
            ),
            (
                "redis://:s3cret@cache:6379",
                "redis://:<redacted>@cache:6379",
            ),
            (
                "dsn=mysql://u:p@ss@h x https://a:b@c",
                "dsn=mysql://u:<redacted>@h x https://a:<redacted>@c",
            ),
            (
                "url = \"amqp://guest:guest@mq\"",
                "url = \"amqp://guest:<redacted>@mq\"",
            ),
            (
                "postgres+psycopg://u:pä@h?x=1",
                "postgres+psycopg://u:<redacted>@h?x=1",
            ),
        ];
        for (text, want) in cases {
            let got = redact_url_userinfo(text);
            assert!(matches!(got, Cow::Owned(_)), "{text}");
            assert_eq!(got, want, "{text}");
            // Idempotent, and the second pass borrows.
            assert!(
                matches!(redact_url_userinfo(want), Cow::Borrowed(_)),
                "{want}"
            );
        }
        for text in [
            "",
            "no url here",
            "https://token@github.com",
            "http://host:8080/x?u=a@b",
            "user:pass@host",
            "://x:y@z",
            "1://x:y@z",
            "postgres://user:@host",
            "ssh://git@github.com:repo",
        ] {
            assert!(
                matches!(redact_url_userinfo(text), Cow::Borrowed(_)),
                "{text}"
            );
        }
    }

    proptest! {
        #[test]
        fn hash_rule_never_panics_and_is_case_insensitive(key in "\\PC{0,24}") {
            let secret = is_secret_key_for_hash(&key);
            prop_assert_eq!(secret, is_secret_key_for_hash(&key.to_ascii_uppercase()));
            prop_assert_eq!(secret, is_secret_key_for_hash(&key.to_ascii_lowercase()));
            // The display rule is wider.
            prop_assert!(!secret || is_sensitive_key(&key));
        }

        #[test]
        fn hash_rule_finds_embedded_words(
            prefix in "[a-z0-9]{0,4}[-_. é]",
            word in prop::sample::select(HASH_WORDS.to_vec()),
            suffix in "([-_. é][a-z0-9]{0,4})?",
        ) {
            let key = format!("{prefix}{word}{suffix}");
            prop_assert!(is_secret_key_for_hash(&key), "{}", key);
            // Glued to a letter the word no longer counts (unless the prefix
            // itself is the word `auth`).
            let glued = format!("{prefix}{word}x");
            let head = prefix.trim_end_matches(['-', '_', '.', ' ', 'é']);
            prop_assert!(head == "auth" || !is_secret_key_for_hash(&glued), "{}", glued);
        }

        #[test]
        fn url_redaction_never_panics(text in "\\PC{0,40}") {
            let once = redact_url_userinfo(&text).into_owned();
            prop_assert_eq!(redact_url_userinfo(&once), Cow::Borrowed(once.as_str()));
        }
    }
}
