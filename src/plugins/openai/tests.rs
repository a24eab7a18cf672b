//! Tests of the `openai` model against a loopback HTTP server.
