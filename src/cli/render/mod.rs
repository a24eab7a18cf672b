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
pub mod plugin;
pub mod publish;
pub mod reuse;
pub mod run;
pub mod tools;

pub use crate::app::explain_documents::{config_json, resolution_json};
use crate::engine::model::ConfigValue;

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
