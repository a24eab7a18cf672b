//! The one HTTP client of the binary: reqwest over rustls with the ring
//! provider. Every adapter that speaks HTTP (the `openai` model kind, the
//! `mcp` kind's streamable HTTP transport) builds its client here, so the
//! crypto provider is installed before any client exists and the defaults
//! (no redirects, chassis's user agent) are the same everywhere.

use std::sync::Once;

/// Install the process's rustls crypto provider (ring) once. reqwest is
/// built without a provider of its own (`rustls-no-provider`, to avoid
/// aws-lc-rs), so every client in the binary needs this first; calling it
/// again, or after another provider was installed, changes nothing.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means a provider is already installed: that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A client builder with the crypto provider installed and chassis's
/// defaults (no redirects: an API endpoint does not redirect, and a
/// redirect must not carry the key elsewhere).
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("chassis/", env!("CARGO_PKG_VERSION")))
}
