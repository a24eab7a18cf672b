//! What a client sent — a JSON body, a query string, a path parameter —
//! parsed, or a problem document that quotes none of it.
//!
//! serde's messages quote what was sent (``unknown field `hunter2` ``,
//! `invalid type: string "…"`); passed through the redactor, a quoted
//! guess would come back as `<redacted>` when it is a secret's value and
//! verbatim when it is not — an oracle (see [`ApiProblem::about_sent`]).
//! So a problem here names only what chassis expects: the fields or
//! parameters a route takes, the type a value should have, where in the
//! body it went wrong.

use axum::http::StatusCode;
use serde::de::{DeserializeOwned, Deserializer, Visitor};

use super::problem::ApiProblem;

/// A JSON request body of type `T`, or a problem document: 413
/// `serve::body-too-large` past the body limit, else 400
/// `serve::bad-request` saying how it is not `what` (naming no value it
/// holds), with `usage` as help.
pub fn json_body<T: DeserializeOwned>(
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
    what: &str,
    usage: &str,
) -> Result<T, ApiProblem> {
    let bytes = body.map_err(|e| {
        let status = e.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "serve::body-too-large"
        } else {
            "serve::bad-request"
        };
        // The rejection's text is axum's and ours (a stalled body), never
        // the body's.
        ApiProblem::new(status, code, e.body_text())
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        let at = format!("line {}, column {}", e.line(), e.column());
        let detail = match e.classify() {
            serde_json::error::Category::Eof => {
                format!("the body is not {what}: its JSON ends early ({at})")
            }
            // JSON that a field's type does not read (a number where a
            // name is expected) is a syntax error to serde_json.
            serde_json::error::Category::Syntax | serde_json::error::Category::Io
                if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok() =>
            {
                format!("the body is not {what}: a value is not of the type its field takes ({at})")
            }
            serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
                format!("the body is not {what}: it is not JSON ({at})")
            }
            serde_json::error::Category::Data => {
                let message = e.to_string();
                let message = message
                    .strip_suffix(&format!(" at line {} column {}", e.line(), e.column()))
                    .unwrap_or(&message);
                let sent = String::from_utf8_lossy(&bytes);
                let unfit = unfit(message, &[&sent], fields_of::<T>(), "field");
                format!("the body is not {what}: {unfit} ({at})")
            }
        };
        ApiProblem::new(StatusCode::BAD_REQUEST, "serve::bad-request", detail).with_help(usage)
    })
}

/// The query string `raw` (the route's `?…`, `None` without one) as `T`,
/// or a 400 `serve::bad-request` that names no parameter or value sent,
/// with `expected` (how the route's query reads) as help.
pub fn query<T: DeserializeOwned>(raw: Option<&str>, expected: &str) -> Result<T, ApiProblem> {
    let raw = raw.unwrap_or_default();
    serde_urlencoded::from_str(raw).map_err(|e| {
        // What was sent, as written and decoded: the expected type quoted
        // back is checked against both.
        let decoded: Vec<(String, String)> = serde_urlencoded::from_str(raw).unwrap_or_default();
        let mut sent: Vec<&str> = vec![raw];
        for (k, v) in &decoded {
            sent.push(k);
            sent.push(v);
        }
        let unfit = unfit(&e.to_string(), &sent, fields_of::<T>(), "parameter");
        ApiProblem::new(
            StatusCode::BAD_REQUEST,
            "serve::bad-request",
            format!("the query does not fit this route: {unfit}"),
        )
        .with_help(format!("expected {expected}"))
    })
}

/// A path parameter, or a problem document when it does not decode (it
/// is not UTF-8 once percent-decoded). The parameter is not quoted.
pub fn path_param(
    p: Result<axum::extract::Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<String, ApiProblem> {
    p.map(|axum::extract::Path(v)| v).map_err(|e| match e {
        axum::extract::rejection::PathRejection::FailedToDeserializePathParams(_) => {
            ApiProblem::new(
                StatusCode::BAD_REQUEST,
                "serve::bad-request",
                "a segment of the path is not UTF-8 once percent-decoded",
            )
        }
        other => ApiProblem::new(
            other.status(),
            "serve::failed",
            "the route's path parameters could not be read",
        ),
    })
}

/// What is wrong with a document that parsed but does not fit a type of
/// `fields`, from serde's `message` about it — in words that quote none of
/// `sent`: a field or parameter is named only when it is one of `fields`
/// (what the route takes), and an expected type only when it is serde's
/// (what follows the message's last `, expected `) and none of `sent`
/// holds it. `noun` is `field` or `parameter`.
fn unfit(message: &str, sent: &[&str], fields: &[&str], noun: &str) -> String {
    let ours = |name: &str| fields.contains(&name).then(|| format!("`{name}`"));
    // The name a message quotes first: ``missing field `input` ``.
    let quoted = |prefix: &str| {
        message
            .strip_prefix(prefix)
            .and_then(|rest| rest.split_once('`'))
            .and_then(|(name, _)| ours(name))
    };
    let expected = message
        .rsplit_once(", expected ")
        .map(|(_, e)| e.trim())
        .filter(|e| !e.is_empty() && !sent.iter().any(|s| s.contains(e)));
    let takes = if fields.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
        format!(" (it takes {})", names.join(", "))
    };
    if message.starts_with("unknown field `") {
        format!("it has a {noun} this route does not take{takes}")
    } else if let Some(name) = quoted("missing field `") {
        format!("it lacks the {noun} {name}")
    } else if let Some(name) = quoted("duplicate field `") {
        format!("it gives the {noun} {name} more than once")
    } else if message.starts_with("invalid type: ") && expected.is_some_and(is_struct) {
        "it is not a JSON object".to_owned()
    } else {
        let what = if message.starts_with("unknown variant `") {
            format!("a value is not one its {noun} takes")
        } else {
            format!("a value is not of the type its {noun} takes")
        };
        match expected {
            Some(e) if !is_struct(e) => format!("{what}: expected {e}"),
            _ => what,
        }
    }
}

/// serde's expectation of a whole struct (`struct RunBody`): the body is
/// not an object.
fn is_struct(expected: &str) -> bool {
    expected.starts_with("struct ")
}

/// The fields a struct `T` deserializes — what `#[derive(Deserialize)]`
/// hands its deserializer — or none for another type.
fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// A deserializer that only learns a struct's fields, then stops.
struct Fields<'a>(&'a mut &'static [&'static str]);

/// Its only answer.
#[derive(Debug)]
struct Learned;

impl std::fmt::Display for Learned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the fields were learned")
    }
}

impl std::error::Error for Learned {}

impl serde::de::Error for Learned {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Learned
    }
}

impl<'de> Deserializer<'de> for Fields<'_> {
    type Error = Learned;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Learned> {
        Err(Learned)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Learned> {
        *self.0 = fields;
        Err(Learned)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::{fields_of, unfit};

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        input: String,
        #[serde(default)]
        stream: bool,
    }

    #[test]
    fn a_structs_fields_are_learned_and_another_type_has_none() {
        assert_eq!(fields_of::<Body>(), ["input", "stream"]);
        assert!(fields_of::<String>().is_empty());
    }

    /// What serde says of `body` as a `Body`, said in chassis's words.
    fn said(body: &str) -> String {
        let e = serde_json::from_str::<Body>(body).unwrap_err();
        let message = e.to_string();
        let message = message
            .strip_suffix(&format!(" at line {} column {}", e.line(), e.column()))
            .unwrap_or(&message)
            .to_owned();
        unfit(&message, &[body], fields_of::<Body>(), "field")
    }

    #[test]
    fn what_does_not_fit_is_said_without_what_was_sent() {
        let canary = "hunter2, expected sk-canary";
        for (body, words) in [
            (
                format!(r#"{{"input": "x", "{canary}": 1}}"#),
                "it has a field this route does not take (it takes `input`, `stream`)",
            ),
            (
                format!(r#"{{"input": "x", "stream": "{canary}"}}"#),
                "a value is not of the type its field takes: expected a boolean",
            ),
            (
                format!(r#"{{"input": ["{canary}"]}}"#),
                "a value is not of the type its field takes: expected a string",
            ),
            (
                r#"{"stream": true}"#.to_owned(),
                "it lacks the field `input`",
            ),
            (
                r#"{"input": "a", "input": "b"}"#.to_owned(),
                "it gives the field `input` more than once",
            ),
            (format!(r#""{canary}""#), "it is not a JSON object"),
        ] {
            let words_said = said(&body);
            assert_eq!(words_said, words, "{body}");
            assert!(!words_said.contains("hunter2"), "{words_said}");
        }
        // An expectation the client wrote itself is not quoted back.
        assert_eq!(
            unfit(
                "invalid type: string \"a boolean\", expected a boolean",
                &["{\"stream\": \"a boolean\"}"],
                &["stream"],
                "field"
            ),
            "a value is not of the type its field takes"
        );
        // Nor a name that is not the route's.
        assert_eq!(
            unfit("missing field `hunter2`", &[""], &["input"], "field"),
            "a value is not of the type its field takes"
        );
    }
}
