//! Unit tests for the policy engine, one file per concern.
mod approval;
mod glob;
mod grammar;
mod props;
mod rules;
mod template;
mod tool_policy;
