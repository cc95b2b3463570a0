//! The exposition: metric families, each a name, a help line, a type and
//! labelled series. Names follow OpenMetrics: a counter's family name has no
//! `_total` (its sample has), units are base units (seconds, bytes, ratios).

/// What a family measures over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up within a run; its sample is `NAME_total`.
    Counter,
    /// A value that may go up and down.
    Gauge,
    /// Observations in cumulative buckets, with their count and sum.
    Histogram,
    /// Labels that describe something; the value is always 1 (`NAME_info`).
    Info,
}

/// One labelled series of a family.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Label names and values, in the order they are printed.
    pub labels: Vec<(String, String)>,
    pub value: Value,
}

/// A series' value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A counter, gauge or info value.
    Number(f64),
    /// Cumulative bucket counts by upper bound (ascending, `+Inf` last), the
    /// number of observations and their sum.
    Histogram { buckets: Vec<(f64, u64)>, count: u64, sum: f64 },
}

/// A metric family.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// `scalelab_…`, without the `_total` or `_info` suffix of its samples.
    pub name: String,
    pub help: String,
    /// The base unit the name ends with (`seconds`, `bytes`, `ratio`), if any.
    pub unit: Option<String>,
    pub kind: Kind,
    pub series: Vec<Series>,
}

impl Family {
    /// An empty family; series are added with [`Family::add`].
    pub fn new(name: &str, kind: Kind, unit: Option<&str>, help: &str) -> Family {
        Family { name: name.into(), help: help.into(), unit: unit.map(str::to_string), kind, series: Vec::new() }
    }

    /// Adds a series of `value` with `labels`; `None` (not measured) adds nothing.
    pub fn add(&mut self, labels: &[(&str, &str)], value: Option<f64>) -> &mut Self {
        if let Some(v) = value {
            self.series.push(Series { labels: own(labels), value: Value::Number(v) });
        }
        self
    }

    /// Adds a histogram series.
    pub fn add_histogram(&mut self, labels: &[(&str, &str)], buckets: Vec<(f64, u64)>, count: u64, sum: f64) -> &mut Self {
        self.series.push(Series { labels: own(labels), value: Value::Histogram { buckets, count, sum } });
        self
    }
}

fn own(labels: &[(&str, &str)]) -> Vec<(String, String)> {
    labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// One written sample: its full name, its labels, its value.
pub type SampleRow = (String, Vec<(String, String)>, f64);

/// Everything served at one moment: families in a stable order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    pub families: Vec<Family>,
}

impl Exposition {
    /// Adds `f` (kept even when it has no series: its HELP and TYPE tell a
    /// scraper the name exists).
    pub fn push(&mut self, f: Family) {
        self.families.push(f);
    }

    /// Every sample as it is written, by full name: (`name_total` /
    /// `name_bucket` …, labels with `le` for buckets, value). Remote write
    /// sends these; tests read values through it.
    pub fn samples(&self) -> Vec<SampleRow> {
        let mut out = Vec::new();
        for f in &self.families {
            for s in &f.series {
                match &s.value {
                    Value::Number(v) => {
                        let name = match f.kind {
                            Kind::Counter => format!("{}_total", f.name),
                            Kind::Info => format!("{}_info", f.name),
                            Kind::Gauge | Kind::Histogram => f.name.clone(),
                        };
                        out.push((name, s.labels.clone(), *v));
                    }
                    Value::Histogram { buckets, count, sum } => {
                        for (le, n) in buckets {
                            let mut labels = s.labels.clone();
                            labels.push(("le".into(), float(*le)));
                            out.push((format!("{}_bucket", f.name), labels, *n as f64));
                        }
                        out.push((format!("{}_count", f.name), s.labels.clone(), *count as f64));
                        out.push((format!("{}_sum", f.name), s.labels.clone(), *sum));
                    }
                }
            }
        }
        out
    }
}

/// A sample value as both formats write it (`+Inf`, `NaN`, shortest decimal).
pub fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

/// Log-scale latency bucket bounds, seconds: 50 µs to 10 s in steps of
/// 1, 2.5, 5 (then `+Inf`): loopback requests sit in the first few, a
/// stalled database in the last.
pub const LATENCY_BUCKETS_S: [f64; 17] =
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_carry_the_suffix_of_their_type_and_a_missing_value_is_no_series() {
        let mut e = Exposition::default();
        let mut c = Family::new("scalelab_requests", Kind::Counter, None, "Requests completed.");
        c.add(&[("run", "7")], Some(12.0)).add(&[("run", "8")], None);
        e.push(c);
        let mut h = Family::new("scalelab_latency_seconds", Kind::Histogram, Some("seconds"), "Latency.");
        h.add_histogram(&[], vec![(0.001, 3), (f64::INFINITY, 5)], 5, 0.004);
        e.push(h);
        let mut i = Family::new("scalelab_run", Kind::Info, None, "The run.");
        i.add(&[("label", "a")], Some(1.0));
        e.push(i);
        let names: Vec<String> = e.samples().iter().map(|(n, l, v)| format!("{n}{l:?}={v}")).collect();
        assert_eq!(
            names,
            [
                r#"scalelab_requests_total[("run", "7")]=12"#,
                r#"scalelab_latency_seconds_bucket[("le", "0.001")]=3"#,
                r#"scalelab_latency_seconds_bucket[("le", "+Inf")]=5"#,
                "scalelab_latency_seconds_count[]=5",
                "scalelab_latency_seconds_sum[]=0.004",
                r#"scalelab_run_info[("label", "a")]=1"#,
            ]
        );
    }
}
