//! `plugin new` and `plugin check`: scaffolding a process plugin and
//! checking one against the plugin protocol.
//!
//! Why it exists: a user writing a plugin in Python or TypeScript should
//! start from something that works and find out what is wrong with theirs
//! from one command, not from a failed publication. Both are operations
//! of the application layer (they return data; the CLI renders it).

pub mod check;
pub mod new;
pub mod templates;
