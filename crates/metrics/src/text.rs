//! The exposition as text: OpenMetrics 1.0 (what Prometheus asks for
//! first) or the Prometheus text format 0.0.4 (what older scrapers and
//! `promtool check metrics` read), chosen by the `Accept` header.

use crate::model::{float, Exposition, Kind, Value};
use std::fmt::Write;

/// OpenMetrics text's content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The Prometheus text format's content type.
pub const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The content type and body for a scraper that sent `accept`: OpenMetrics
/// when it asks for it, the Prometheus text format otherwise.
pub fn negotiate(accept: Option<&str>, e: &Exposition) -> (&'static str, String) {
    if accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
        (OPENMETRICS, openmetrics(e))
    } else {
        (PROMETHEUS, prometheus(e))
    }
}

/// A label value between its quotes: backslash, quote and newline escaped.
fn label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A HELP text: backslash and newline escaped (and the quote in OpenMetrics).
fn help(v: &str, quote: bool) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n").replace('"', if quote { "\\\"" } else { "\"" })
}

fn labels(out: &mut String, labels: &[(String, String)], le: Option<f64>) {
    if labels.is_empty() && le.is_none() {
        return;
    }
    out.push('{');
    let mut first = true;
    for (k, v) in labels {
        if !first {
            out.push(',');
        }
        first = false;
        let _ = write!(out, "{k}=\"{}\"", label_value(v));
    }
    if let Some(le) = le {
        if !first {
            out.push(',');
        }
        let _ = write!(out, "le=\"{}\"", float(le));
    }
    out.push('}');
}

fn samples(out: &mut String, e: &crate::model::Family, number_name: &str) {
    for s in &e.series {
        match &s.value {
            Value::Number(v) => {
                out.push_str(number_name);
                labels(out, &s.labels, None);
                let _ = writeln!(out, " {}", float(*v));
            }
            Value::Histogram { buckets, count, sum } => {
                for (le, n) in buckets {
                    let _ = write!(out, "{}_bucket", e.name);
                    labels(out, &s.labels, Some(*le));
                    let _ = writeln!(out, " {n}");
                }
                let _ = write!(out, "{}_count", e.name);
                labels(out, &s.labels, None);
                let _ = writeln!(out, " {count}");
                let _ = write!(out, "{}_sum", e.name);
                labels(out, &s.labels, None);
                let _ = writeln!(out, " {}", float(*sum));
            }
        }
    }
}

/// OpenMetrics text: `# TYPE`, `# UNIT`, `# HELP` per family, counters'
/// samples `_total`, info `_info`, and the closing `# EOF`.
pub fn openmetrics(e: &Exposition) -> String {
    let mut out = String::new();
    for f in &e.families {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Info => "info",
        };
        let _ = writeln!(out, "# TYPE {} {kind}", f.name);
        if let Some(u) = &f.unit {
            let _ = writeln!(out, "# UNIT {} {u}", f.name);
        }
        let _ = writeln!(out, "# HELP {} {}", f.name, help(&f.help, true));
        let name = match f.kind {
            Kind::Counter => format!("{}_total", f.name),
            Kind::Info => format!("{}_info", f.name),
            Kind::Gauge | Kind::Histogram => f.name.clone(),
        };
        samples(&mut out, f, &name);
    }
    out.push_str("# EOF\n");
    out
}

/// The Prometheus text format 0.0.4: HELP and TYPE name the sample
/// (`_total` for counters); an info family is a gauge named `_info`.
pub fn prometheus(e: &Exposition) -> String {
    let mut out = String::new();
    for f in &e.families {
        let (name, kind) = match f.kind {
            Kind::Counter => (format!("{}_total", f.name), "counter"),
            Kind::Info => (format!("{}_info", f.name), "gauge"),
            Kind::Gauge => (f.name.clone(), "gauge"),
            Kind::Histogram => (f.name.clone(), "histogram"),
        };
        let _ = writeln!(out, "# HELP {name} {}", help(&f.help, false));
        let _ = writeln!(out, "# TYPE {name} {kind}");
        samples(&mut out, f, &name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Family;

    fn sample() -> Exposition {
        let mut e = Exposition::default();
        let mut c = Family::new("scalelab_requests", Kind::Counter, None, "Requests completed, \\ and \"quoted\"\nsecond line.");
        c.add(&[("run", "7"), ("target", "http://h/a\"b\\c\nd")], Some(12.0));
        e.push(c);
        let mut g = Family::new("scalelab_server_threads_ratio", Kind::Gauge, Some("ratio"), "Thread states.");
        g.add(&[("state", "futex")], Some(0.5));
        e.push(g);
        let mut h = Family::new("scalelab_latency_seconds", Kind::Histogram, Some("seconds"), "Latency.");
        h.add_histogram(&[("run", "7")], vec![(0.00025, 3), (f64::INFINITY, 5)], 5, 0.0041);
        e.push(h);
        let mut i = Family::new("scalelab_run", Kind::Info, None, "The run.");
        i.add(&[("label", "x")], Some(1.0));
        e.push(i);
        e
    }

    #[test]
    fn openmetrics_names_units_escapes_and_ends_with_eof() {
        let text = openmetrics(&sample());
        let want = r#"# TYPE scalelab_requests counter
# HELP scalelab_requests Requests completed, \\ and \"quoted\"\nsecond line.
scalelab_requests_total{run="7",target="http://h/a\"b\\c\nd"} 12
# TYPE scalelab_server_threads_ratio gauge
# UNIT scalelab_server_threads_ratio ratio
# HELP scalelab_server_threads_ratio Thread states.
scalelab_server_threads_ratio{state="futex"} 0.5
# TYPE scalelab_latency_seconds histogram
# UNIT scalelab_latency_seconds seconds
# HELP scalelab_latency_seconds Latency.
scalelab_latency_seconds_bucket{run="7",le="0.00025"} 3
scalelab_latency_seconds_bucket{run="7",le="+Inf"} 5
scalelab_latency_seconds_count{run="7"} 5
scalelab_latency_seconds_sum{run="7"} 0.0041
# TYPE scalelab_run info
# HELP scalelab_run The run.
scalelab_run_info{label="x"} 1
# EOF
"#;
        assert_eq!(text, want);
    }

    #[test]
    fn prometheus_text_names_the_samples_in_help_and_type() {
        let text = prometheus(&sample());
        assert!(text.starts_with("# HELP scalelab_requests_total Requests completed, \\\\ and \"quoted\"\\nsecond line.\n# TYPE scalelab_requests_total counter\n"), "{text}");
        assert!(text.contains("# TYPE scalelab_run_info gauge\nscalelab_run_info{label=\"x\"} 1\n"), "{text}");
        assert!(!text.contains("# EOF") && !text.contains("# UNIT"), "{text}");
    }

    #[test]
    fn the_accept_header_chooses_the_format() {
        let e = sample();
        assert_eq!(negotiate(Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"), &e).0, OPENMETRICS);
        assert_eq!(negotiate(Some("text/plain"), &e).0, PROMETHEUS);
        assert_eq!(negotiate(None, &e).0, PROMETHEUS);
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(float(1e-5), "0.00001");
    }
}
