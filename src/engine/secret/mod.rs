//! Secret values, the redactor that learns them, secret providers, and
//! secret fingerprints.
//!
//! Secrets must not reach traces, snapshots, diagnostics, replay records or
//! error strings. Three mechanisms cooperate, and they live together here
//! because each is only safe in the presence of the others:
//!
//! * [`SecretValue`] refuses to render itself: `Debug` and `Display` show
//!   `<redacted>`, and the material leaves only through an explicit
//!   [`SecretValue::reveal`] at the point of use. It is deliberately not
//!   `Serialize`, so it cannot slip into a JSON document by derive.
//! * [`Redactor`] is a shared, clonable handle that learns secret values and
//!   scrubs them out of any text or JSON document in one pass. Unlike the
//!   Python reference, it refuses values shorter than [`MIN_SECRET_LEN`], so
//!   a one-character "secret" cannot scrub every `a` out of every trace.
//! * [`RedactingSecretProvider`] wraps any [`SecretProvider`] and teaches
//!   the redactor every value at the moment it is resolved, so nothing
//!   handed out can later be emitted unredacted.
//!
//! [`fingerprint()`] is the one way a secret may influence persisted data: a
//! keyed HMAC-SHA256, so a secret-only configuration change is detectable
//! across processes without storing a plain (guessable) hash of the secret.
//!
//! Everything here is pure: the environment-backed provider takes an
//! [`EnvLookup`] that the edge implements over the process environment.
#![warn(missing_docs)]

mod env;
mod fingerprint;
mod provider;
mod redactor;
mod streaming;
mod value;

pub use env::{EnvLookup, EnvSecretProvider, MapEnv, env_var_name};
pub use fingerprint::{HmacKey, fingerprint, hmac_sha256};
pub use provider::{
    RedactingSecretProvider, SecretError, SecretErrorKind, SecretProvider, StaticSecretProvider,
    UnavailableSecrets,
};
pub use redactor::{Learned, MIN_SECRET_LEN, Redactor};
pub use streaming::StreamingRedactor;
pub use value::SecretValue;
