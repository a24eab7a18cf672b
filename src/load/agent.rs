//! `[agents.NAME]`: agents declared in the composition.
//!
//! ```toml
//! [agents.assistant]
//! description = "Answers questions about text."
//! prompt = "You are a careful assistant."      # or prompt_file = "prompts/assistant.md"
//! tools = ["word_count", "save_note"]          # the agent scope's tool view
//! max_steps = 8
//! budget = { model_calls = 8, tool_calls = 12, tokens = 20000 }
//! ```
//!
//! The prompt file is read through the same source as the composition
//! (relative to the declaring file), so a git revision diffs its prompt too.

use super::reader::{FileCtx, Node};
use super::values::json_value;
use super::walk::{bad_name, invalid};
use crate::engine::budget::{BudgetDimension, BudgetLimits};
use crate::engine::diag::{Code, Diagnostic};
use crate::engine::model::{AgentDecl, CapabilityName, EntryId, PromptSource, ScopePath, ToolName};
use crate::engine::model::{BudgetLimitProblem, MAX_STEPS, TEMPERATURE, budget_limit};
use crate::engine::span::{Located, Origin};
use crate::engine::specifier::Specifier;

/// Keys of an `[agents.<name>]` table.
pub const AGENT_KEYS: &[&str] = &[
    "description",
    "revision",
    "scope",
    "model",
    "model_version",
    "prefer_model",
    "tools",
    "sub_agents",
    "prompt",
    "prompt_file",
    "max_steps",
    "budget",
    "temperature",
    "max_tokens",
    "default_input",
];

/// An agent as walked: the declaration plus the prompt file still to read.
#[derive(Debug)]
pub(crate) struct WalkedAgent {
    pub decl: AgentDecl,
    /// `prompt_file` as written, with its origin.
    pub prompt_file: Option<(String, Origin)>,
    /// Where `scope` was written (for the collision error).
    pub scope_origin: Option<Origin>,
    /// Tool and sub-agent names with their origins (for reference checks).
    pub tool_refs: Vec<(String, Origin)>,
    pub sub_agent_refs: Vec<(String, Origin)>,
}

fn names(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Vec<(String, Origin)> {
    node.items(cx)
        .unwrap_or_default()
        .iter()
        .filter_map(|i| i.str(cx).map(|s| (s.value.to_owned(), cx.origin(s.span))))
        .collect()
}

/// Read one agent (`None` after a reported problem).
pub(crate) fn agent(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> Option<WalkedAgent> {
    let before = cx.errors();
    let mut decl = match AgentDecl::new(node.key) {
        Ok(d) => d,
        Err(e) => {
            bad_name(cx, node.key_span, e);
            return None;
        }
    };
    decl.origin = Some(cx.origin(node.key_span));
    let r = node.reader(cx, AGENT_KEYS)?;
    let mut out = WalkedAgent {
        decl,
        prompt_file: None,
        scope_origin: None,
        tool_refs: Vec::new(),
        sub_agent_refs: Vec::new(),
    };
    let d = &mut out.decl;
    if let Some(n) = r.get("description") {
        d.description = n.str(cx).map(|s| s.value.to_owned()).unwrap_or_default();
    }
    if let Some(n) = r.get("revision")
        && let Some(s) = n.str(cx)
    {
        match AgentDecl::parse_revision(s.value) {
            Some(rev) => rev.clone_into(&mut d.revision),
            None => invalid(
                cx,
                s.span,
                format!("`{}` must be a non-empty revision without `/`", n.path),
                "invalid revision",
            ),
        }
    }
    if let Some(n) = r.get("scope")
        && let Some(s) = n.str(cx)
    {
        match ScopePath::new(s.value) {
            Ok(p) if p == ScopePath::root() => invalid(
                cx,
                s.span,
                "an agent cannot own the root scope".into(),
                "the root scope",
            ),
            Ok(p) => {
                d.scope = p;
                out.scope_origin = Some(cx.origin(s.span));
            }
            Err(e) => bad_name(cx, s.span, e),
        }
    }
    if let Some(n) = r.get("model")
        && let Some(s) = n.str(cx)
    {
        match CapabilityName::new(s.value) {
            Ok(c) => d.model.capability = c,
            Err(e) => bad_name(cx, s.span, e),
        }
    }
    if let Some(n) = r.get("model_version")
        && let Some(s) = n.str(cx)
    {
        match Specifier::parse(s.value) {
            Ok(spec) => d.model.specifier = spec,
            Err(e) => {
                cx.error(
                    Code::BadSpecifier,
                    s.span,
                    format!("`{}`: {e}", n.path),
                    "invalid specifier",
                );
            }
        }
    }
    d.model.origin = Some(cx.origin(node.key_span));
    if let Some(n) = r.get("prefer_model")
        && let Some(s) = n.str(cx)
    {
        match EntryId::new(s.value) {
            Ok(id) => d.prefer_model = Some(Located::new(id, Some(cx.origin(s.span)))),
            Err(e) => bad_name(cx, s.span, e),
        }
    }
    if let Some(n) = r.get("tools") {
        let refs = names(cx, &n);
        let mut tools = Vec::new();
        for (name, origin) in &refs {
            match ToolName::new(name) {
                Ok(t) => tools.push(t),
                Err(e) => bad_name(cx, origin.span, e),
            }
        }
        d.tools = Some(tools);
        out.tool_refs = refs;
    }
    if let Some(n) = r.get("sub_agents") {
        out.sub_agent_refs = names(cx, &n);
        d.sub_agents = out.sub_agent_refs.iter().map(|(n, _)| n.clone()).collect();
    }
    match (r.get("prompt"), r.get("prompt_file")) {
        (Some(p), Some(f)) => {
            let d = Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "`{}` has both `prompt` and `prompt_file`; keep one",
                    node.path
                ),
            )
            .at(Some(cx.origin(f.key_span)), "second prompt")
            .also(Some(cx.origin(p.key_span)), "first prompt");
            cx.push(d);
        }
        (Some(p), None) => {
            d.prompt = p.str(cx).map(|s| s.value.to_owned()).unwrap_or_default();
        }
        (None, Some(f)) => {
            if let Some(s) = f.str(cx) {
                d.prompt_source = PromptSource::File(s.value.to_owned());
                out.prompt_file = Some((s.value.to_owned(), cx.origin(s.span)));
            }
        }
        (None, None) => {}
    }
    if let Some(n) = r.get("max_steps") {
        match n.int(cx) {
            Some(v) if u32::try_from(v).is_ok_and(|v| MAX_STEPS.contains(&v)) => {
                d.max_steps = v as u32;
            }
            Some(_) => invalid(
                cx,
                n.span,
                format!("`{}` must be between 1 and 10000", n.path),
                "out of range",
            ),
            None => {}
        }
    }
    if let Some(n) = r.get("temperature") {
        match json_value(cx, &n).and_then(|v| v.as_f64()) {
            Some(t) if TEMPERATURE.contains(&t) => d.temperature = Some(t),
            _ => invalid(
                cx,
                n.span,
                format!("`{}` must be a number from 0 to 2", n.path),
                "invalid temperature",
            ),
        }
    }
    if let Some(n) = r.get("max_tokens") {
        match n.int(cx) {
            Some(v) if v > 0 => d.max_tokens = Some(v as u64),
            Some(_) => invalid(
                cx,
                n.span,
                format!("`{}` must be positive", n.path),
                "not positive",
            ),
            None => {}
        }
    }
    if let Some(n) = r.get("default_input") {
        d.default_input = n.str(cx).map(|s| s.value.to_owned());
    }
    if let Some(n) = r.get("budget") {
        d.budget = budget(cx, &n);
    }
    r.finish(cx);
    (cx.errors() == before).then_some(out)
}

fn budget(cx: &mut FileCtx<'_>, node: &Node<'_, '_>) -> BudgetLimits {
    let mut pairs = Vec::new();
    for item in node.entries(cx).unwrap_or_default() {
        if BudgetDimension::from_name(item.key).is_none() {
            let known: Vec<&str> = BudgetDimension::ALL.iter().map(|d| d.as_str()).collect();
            let help = crate::engine::diag::did_you_mean(item.key, known.iter().copied())
                .map(|s| format!("did you mean `{s}`?"));
            let d = Diagnostic::error(
                Code::UnknownKey,
                format!("unknown budget dimension `{}`", item.key),
            )
            .at(Some(cx.origin(item.key_span)), "unknown dimension")
            .with_help_opt(help)
            .with_help(format!("budget dimensions: {}", known.join(", ")));
            cx.push(d);
            continue;
        };
        let json = json_value(cx, &item);
        let Some(value) = json.as_ref().and_then(serde_json::Value::as_f64) else {
            invalid(
                cx,
                item.span,
                format!("`{}` must be a number", item.path),
                "not a number",
            );
            continue;
        };
        // A count is written as an integer: `1.0` tool calls is a float
        // where a count belongs, refused like `1.5` rather than read as 1.
        let integral = json.as_ref().is_some_and(|v| v.is_u64() || v.is_i64());
        match budget_limit(item.key, value, integral) {
            Ok(pair) => pairs.push(pair),
            Err(BudgetLimitProblem::NotACount(dimension)) => invalid(
                cx,
                item.span,
                format!(
                    "`{}` counts {}: write a whole number without a decimal point",
                    item.path,
                    dimension.as_str()
                ),
                "a count must be an integer",
            ),
            Err(BudgetLimitProblem::Invalid(e)) => invalid(
                cx,
                item.span,
                format!("`{}`: {e}", item.path),
                "invalid limit",
            ),
            // Reported above, with the dimensions there are.
            Err(BudgetLimitProblem::UnknownDimension) => {}
        }
    }
    BudgetLimits::new(pairs).unwrap_or_default()
}
