//! Service-level objectives: `p99<=20ms`, `p50<=5ms`, `p99.9<=1s`, `errors<=0.1%`.

use super::Observation;

/// What an SLO bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SloMetric {
    /// A latency percentile (50, 90, 99, 99.9) from the intended send.
    Latency(f64),
    /// Failed requests as a share of all.
    Errors,
}

/// One objective: the metric stays at or below `limit` (ms, or a share 0..=1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slo {
    pub metric: SloMetric,
    pub limit: f64,
}

/// Parses `p99<=20ms` (p50, p90, p99, p99.9; us, ms or s) or `errors<=0.1%`.
pub fn parse_slo(text: &str) -> Result<Slo, String> {
    let fix = "use e.g. 'p99<=20ms', 'p50<=5ms', 'p99.9<=1s' or 'errors<=0.1%'";
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
    let Some((name, value)) = compact.split_once("<=") else {
        return Err(format!("--slo '{}': no '<=': {fix}", text.escape_debug()));
    };
    let bad = || format!("--slo '{}': {fix}", text.escape_debug());
    if name == "errors" {
        let pct: f64 = value.strip_suffix('%').ok_or_else(bad)?.parse().map_err(|_| bad())?;
        if !(0.0..=100.0).contains(&pct) {
            return Err(format!("--slo '{}': errors must be between 0% and 100%", text.escape_debug()));
        }
        return Ok(Slo { metric: SloMetric::Errors, limit: pct / 100.0 });
    }
    let pct = match name {
        "p50" => 50.0,
        "p90" => 90.0,
        "p99" => 99.0,
        "p99.9" | "p999" => 99.9,
        _ => return Err(bad()),
    };
    let (number, scale) = if let Some(n) = value.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = value.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = value.strip_suffix('s') {
        (n, 1000.0)
    } else {
        return Err(bad());
    };
    let v: f64 = number.parse().map_err(|_| bad())?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("--slo '{}': the latency bound must be above 0", text.escape_debug()));
    }
    Ok(Slo { metric: SloMetric::Latency(pct), limit: v * scale })
}

impl Slo {
    /// `p99` or `errors`.
    pub fn name(&self) -> String {
        match self.metric {
            SloMetric::Latency(99.9) => "p99.9".into(),
            SloMetric::Latency(p) => format!("p{p:.0}"),
            SloMetric::Errors => "errors".into(),
        }
    }

    /// The measured value (ms, or a share), `None` when nothing completed.
    pub fn value(&self, o: &Observation) -> Option<f64> {
        match self.metric {
            SloMetric::Latency(50.0) => o.p50_ms,
            SloMetric::Latency(90.0) => o.p90_ms,
            SloMetric::Latency(99.0) => o.p99_ms,
            SloMetric::Latency(_) => o.p999_ms,
            SloMetric::Errors => Some(o.error_share),
        }
    }

    /// `p99 14.2 ms ≤ 20 ms` or `errors 0.00 % ≤ 0.10 %` (with `>` when it breaks).
    pub fn describe(&self, o: &Observation) -> String {
        let v = self.value(o);
        let held = v.is_some_and(|v| v <= self.limit);
        let op = if held { "≤" } else { ">" };
        match (self.metric, v) {
            (SloMetric::Errors, Some(v)) => format!("errors {:.2} % {op} {:.2} %", v * 100.0, self.limit * 100.0),
            (_, Some(v)) => format!("{} {v:.1} ms {op} {} ms", self.name(), trim(self.limit)),
            (_, None) => format!("{} unmeasured (nothing completed)", self.name()),
        }
    }

    /// The breach, described, or `None` when the SLO holds.
    pub fn breach(&self, o: &Observation) -> Option<String> {
        match self.value(o) {
            Some(v) if v <= self.limit => None,
            _ => Some(self.describe(o)),
        }
    }
}

fn trim(x: f64) -> String {
    let t = format!("{x:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}
