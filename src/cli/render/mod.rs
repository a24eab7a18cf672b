//! Renderers: what the application layer returns, to text, JSON, Markdown,
//! dot and Mermaid. Pure functions from values to strings; printing happens
//! in `ui` (a failure is shown through it by [`error::show`]).

pub mod budgets;
pub mod check;
pub mod diff;
pub mod error;
pub mod explain;
pub mod graph;
pub mod history;
pub mod publish;
pub mod reuse;
pub mod run;
pub mod tools;

use crate::engine::model::ConfigValue;
use crate::engine::resolve::Resolution;

/// A budget amount for people: whole numbers as integers, fractions to four
/// places, and anything huge (an estimated cost a provider got wrong) in
/// scientific notation rather than hundreds of digits.
pub fn amount(v: f64) -> String {
    if !v.is_finite() || v.abs() >= 1e15 {
        format!("{v:.3e}")
    } else if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.4}")
    }
}

/// A resolution as JSON.
pub fn resolution_json(r: &Resolution) -> serde_json::Value {
    serde_json::json!({
        "consumer": r.consumer.name(),
        "consumer_kind": r.consumer.kind(),
        "scope": r.scope.as_str(),
        "capability": r.requirement.capability.as_str(),
        "requirement": r.requirement.render(),
        "optional": r.requirement.optional,
        "status": r.status.as_str(),
        "reason": r.reason.map(|x| x.as_str()),
        "selected": r.selected.as_ref().map(|s| serde_json::json!({
            "provider": s.entry.as_str(),
            "version": s.version.to_string(),
            "scope": s.scope.as_str(),
            "origin": s.origin.as_str(),
        })),
        "ambiguous_between": r.ambiguous_between.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
    })
}

/// A configuration value as JSON (secret references as `{"secret": NAME}`).
pub fn config_json(v: &ConfigValue) -> serde_json::Value {
    v.to_json()
}

/// A configuration value inline, TOML-like.
pub fn config_text(v: &ConfigValue) -> String {
    match v {
        ConfigValue::Str(s) | ConfigValue::Datetime(s) => format!("{s:?}"),
        ConfigValue::Secret(s) => format!("{{ secret = {:?} }}", s.name),
        ConfigValue::Table(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k} = {}", config_text(v)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
        ConfigValue::Array(a) => format!(
            "[{}]",
            a.iter().map(config_text).collect::<Vec<_>>().join(", ")
        ),
        other => config_json(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::amount;

    #[test]
    fn budget_amounts_stay_short() {
        assert_eq!(amount(4.0), "4");
        assert_eq!(amount(0.003_81), "0.0038");
        assert_eq!(amount(1e300), "1.000e300");
        assert_eq!(amount(f64::INFINITY), "inf");
    }
}
