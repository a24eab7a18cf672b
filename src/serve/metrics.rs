//! `GET /metrics`: the host's metrics in the Prometheus text exposition
//! format (version 0.0.4).
//!
//! Written by hand: the format is `# HELP`, `# TYPE` and one line per
//! series (histograms as `_bucket{le=…}`, `_sum`, `_count`), with three
//! escapes in label values; a client crate would put its registry types
//! into the application layer, which keeps its counters as plain data.

use std::fmt::Write as _;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use crate::app::metrics::{Family, Kind, Value};

use super::Served;

/// `GET /metrics`.
pub async fn metrics(State(s): State<Served>) -> impl IntoResponse {
    let in_flight = (s.limits.concurrent_runs - s.runs.available_permits()) as f64;
    let families = s.host.metrics(vec![(
        "chassis_runs_in_flight",
        "Runs under way.",
        in_flight,
    )]);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        render(&families),
    )
}

/// The text of `families`.
pub fn render(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {kind}", f.name);
        for (labels, value) in &f.series {
            match value {
                Value::Number(v) => {
                    let _ = writeln!(out, "{}{} {}", f.name, label_set(labels, None), number(*v));
                }
                Value::Histogram(h) => {
                    for (bound, count) in h.cumulative() {
                        let le = if bound.is_infinite() {
                            "+Inf".to_owned()
                        } else {
                            number(bound)
                        };
                        let _ = writeln!(
                            out,
                            "{}_bucket{} {count}",
                            f.name,
                            label_set(labels, Some(&le))
                        );
                    }
                    let _ = writeln!(
                        out,
                        "{}_sum{} {}",
                        f.name,
                        label_set(labels, None),
                        number(h.sum)
                    );
                    let _ = writeln!(
                        out,
                        "{}_count{} {}",
                        f.name,
                        label_set(labels, None),
                        h.count
                    );
                }
            }
        }
    }
    out
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v}")
    }
}

fn label_set(labels: &[(&'static str, String)], le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

/// A label value: backslash, double quote and line feed escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_format_escapes_labels_and_ends_histograms_at_inf() {
        let families = vec![Family {
            name: "chassis_runs_total",
            help: "Runs.",
            kind: Kind::Counter,
            series: vec![(
                vec![
                    ("agent", "a\"b\\c\nd".into()),
                    ("status", "succeeded".into()),
                ],
                Value::Number(3.0),
            )],
        }];
        let text = render(&families);
        assert_eq!(
            text,
            "# HELP chassis_runs_total Runs.\n# TYPE chassis_runs_total counter\nchassis_runs_total{agent=\"a\\\"b\\\\c\\nd\",status=\"succeeded\"} 3\n"
        );
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(f64::INFINITY), "+Inf");
    }
}
