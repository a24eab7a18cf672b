//! Loading compositions from TOML (placeholder).
