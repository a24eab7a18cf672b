//! The agent-facing manifest (the Oracle runtime's `manifest` channel):
//! what a model should know about a plugin's or a tool's purpose, rendered
//! into the tool descriptions it sees.

/// Whether the model is offered a tool, and how much it is told.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Visibility {
    /// Offered, with the whole guide in its description (default).
    #[default]
    Always,
    /// Offered with its title and summary only: the guide's detail is left
    /// out of the description to keep the prompt small.
    OnDemand,
    /// Not offered to the model (hooks and other plugins still see it).
    Silent,
}

impl Visibility {
    /// Parse `always`, `on-demand`, `silent`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "always" => Some(Self::Always),
            "on-demand" => Some(Self::OnDemand),
            "silent" => Some(Self::Silent),
            _ => None,
        }
    }
}

/// One example call.
#[derive(Clone, Debug, PartialEq)]
pub struct GuideExample {
    /// The tool it calls (plugin-level examples name it; tool-level ones
    /// are about their tool).
    pub tool: Option<String>,
    /// Arguments.
    pub args: serde_json::Value,
    /// What it shows.
    pub description: String,
}

/// `agent = { title, summary, when_to_use, when_not_to_use, examples, visibility }`.
/// Equality ignores `example_origins` (where things were written).
#[derive(Clone, Debug, Default)]
pub struct AgentGuide {
    /// Short name.
    pub title: Option<String>,
    /// One or two sentences.
    pub summary: Option<String>,
    /// When the model should call it.
    pub when_to_use: Option<String>,
    /// When it should not.
    pub when_not_to_use: Option<String>,
    /// Example calls.
    pub examples: Vec<GuideExample>,
    /// Visibility.
    pub visibility: Visibility,
    /// Where each example naming a tool was written (loader bookkeeping,
    /// parallel to the examples that name one).
    pub example_origins: Vec<crate::engine::span::Origin>,
}

impl PartialEq for AgentGuide {
    fn eq(&self, other: &Self) -> bool {
        let Self {
            title,
            summary,
            when_to_use,
            when_not_to_use,
            examples,
            visibility,
            example_origins: _,
        } = self;
        *title == other.title
            && *summary == other.summary
            && *when_to_use == other.when_to_use
            && *when_not_to_use == other.when_not_to_use
            && *examples == other.examples
            && *visibility == other.visibility
    }
}

/// The description a model sees for `tool`: its own description, then the
/// tool's guide, then its plugin's guide (each only as much as its
/// visibility allows). `None` when the tool is silent.
pub fn render_description(
    tool: &str,
    description: &str,
    tool_guide: Option<&AgentGuide>,
    plugin_guide: Option<&AgentGuide>,
) -> Option<String> {
    let visibility = tool_guide
        .map(|g| g.visibility)
        .or(plugin_guide.map(|g| g.visibility))
        .unwrap_or_default();
    if visibility == Visibility::Silent {
        return None;
    }
    let mut out = description.trim().to_owned();
    for guide in [tool_guide, plugin_guide].into_iter().flatten() {
        let mut line = |label: &str, v: &Option<String>| {
            if let Some(v) = v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
                out.push_str(&format!("\n{label}{v}"));
            }
        };
        line("", &guide.title);
        line("", &guide.summary);
        if visibility == Visibility::OnDemand {
            continue;
        }
        line("Use when: ", &guide.when_to_use);
        line("Do not use when: ", &guide.when_not_to_use);
        for ex in &guide.examples {
            if ex.tool.as_deref().is_some_and(|t| t != tool) {
                continue;
            }
            out.push_str(&format!(
                "\nExample: {tool}({}) — {}",
                ex.args,
                ex.description.trim()
            ));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_render_by_visibility() {
        let plugin = AgentGuide {
            title: Some("Search".into()),
            when_to_use: Some("facts you do not know".into()),
            examples: vec![
                GuideExample {
                    tool: Some("search".into()),
                    args: serde_json::json!({"q": "rust"}),
                    description: "look up Rust".into(),
                },
                GuideExample {
                    tool: Some("other".into()),
                    args: serde_json::json!({}),
                    description: "not shown here".into(),
                },
            ],
            ..AgentGuide::default()
        };
        let d = render_description("search", "Searches.", None, Some(&plugin)).unwrap();
        assert_eq!(
            d,
            "Searches.\nSearch\nUse when: facts you do not know\nExample: search({\"q\":\"rust\"}) — look up Rust"
        );
        let on_demand = AgentGuide {
            visibility: Visibility::OnDemand,
            ..plugin.clone()
        };
        let d = render_description("search", "Searches.", Some(&on_demand), None).unwrap();
        assert_eq!(d, "Searches.\nSearch");
        let silent = AgentGuide {
            visibility: Visibility::Silent,
            ..AgentGuide::default()
        };
        assert_eq!(render_description("search", "x", None, Some(&silent)), None);
        assert_eq!(
            render_description("search", " x ", None, None).as_deref(),
            Some("x")
        );
    }
}
