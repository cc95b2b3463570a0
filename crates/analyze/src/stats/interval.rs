//! The values every estimate returns: an interval with its method, or the
//! reason there is none; and the word a comparison prints.

use serde::{Deserialize, Serialize};

use super::t::t975;

/// How an interval was estimated. It travels with the interval so that a
/// reader (and [`independent_delta_pct`](super::independent_delta_pct)) knows
/// what the bounds rest on: the method and its `n` give the degrees of freedom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Batch means over one window's seconds (`n` batches, `n − 1` df).
    BatchMeans,
    /// Student t over repeated measurements (`n` repeats, `n − 1` df).
    StudentT,
    /// Paired t on the log ratios of interleaved A/B pairs (`n` pairs, `n − 1` df).
    PairedT,
    /// Welch on the log scale for two independent figures; `n` is the sum of
    /// both sides' `n`, and `n − 2` df is the most Welch–Satterthwaite can give.
    Welch,
}

impl Method {
    /// The method's name as JSON and the tables write it.
    pub fn name(self) -> &'static str {
        match self {
            Method::BatchMeans => "batch-means",
            Method::StudentT => "student-t",
            Method::PairedT => "paired-t",
            Method::Welch => "welch",
        }
    }

    /// The degrees of freedom an interval of this method on `n` items has:
    /// `n − 1`, or `n − 2` for Welch (its upper bound, which recovers a
    /// standard error no smaller than the real one). At least 1.
    pub fn df(self, n: u32) -> f64 {
        let lost = if self == Method::Welch { 2 } else { 1 };
        f64::from(n.saturating_sub(lost).max(1))
    }
}

/// A figure's two-sided 95 % confidence interval.
/// JSON: `{"low":..,"high":..,"method":"batch-means","n":..}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ci95 {
    /// Lower bound, in the figure's unit.
    pub low: f64,
    /// Upper bound, in the figure's unit.
    pub high: f64,
    /// How the bounds were estimated.
    pub method: Method,
    /// The batches, repeats or pairs it rests on (for batch means, the
    /// batches it is worth as independent ones when autocorrelation widened it).
    pub n: u32,
}

impl Ci95 {
    /// Half-width as % of |point| (the larger side when asymmetric); `None`
    /// when `point` is 0 or not finite, where a relative width means nothing.
    pub fn half_width_pct(&self, point: f64) -> Option<f64> {
        if point == 0.0 || !point.is_finite() {
            return None;
        }
        let pct = 100.0 * self.half_width(point) / point.abs();
        pct.is_finite().then_some(pct)
    }

    /// Half-width in the figure's unit around `point`: the larger of the two
    /// sides, so an asymmetric interval is never read as narrower than it is.
    pub fn half_width(&self, point: f64) -> f64 {
        (self.high - point).max(point - self.low)
    }

    /// Whether `x` lies inside the interval (bounds included).
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }

    /// The degrees of freedom behind the interval ([`Method::df`] of its `n`).
    pub fn df(&self) -> f64 {
        self.method.df(self.n)
    }

    /// The standard error the interval was built from, recovered as its
    /// half-width around `point` over the t quantile of its degrees of freedom
    /// (an autocorrelation widening stays in it, as it should).
    pub fn std_error(&self, point: f64) -> f64 {
        self.half_width(point) / t975(self.df())
    }
}

/// Why a figure has no interval, in words for the user (e.g. "a 2 s window:
/// batch means need at least 5 seconds; use --duration 5s or --repeats").
/// A figure without an interval is still shown; it just cannot be judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoInterval(pub String);

impl std::fmt::Display for NoInterval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl NoInterval {
    /// A reason, from anything that reads as one.
    pub fn new(reason: impl Into<String>) -> Self {
        NoInterval(reason.into())
    }
}

/// A figure's interval, or why it has none.
pub type Estimate = Result<Ci95, NoInterval>;

/// The word a comparison prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Better beyond noise (more throughput, or less latency).
    Faster,
    /// Worse beyond noise.
    Slower,
    /// No detectable difference: the interval of the delta contains 0. Not
    /// "equal": a difference smaller than the noise may still be there.
    Same,
}

impl Change {
    /// `"faster"`, `"slower"` or `"same"`.
    pub fn name(self) -> &'static str {
        match self {
            Change::Faster => "faster",
            Change::Slower => "slower",
            Change::Same => "same",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names() {
        let ci = Ci95 { low: 1.0, high: 2.0, method: Method::BatchMeans, n: 7 };
        assert_eq!(serde_json::to_string(&ci).unwrap(), r#"{"low":1.0,"high":2.0,"method":"batch-means","n":7}"#);
        for m in [Method::BatchMeans, Method::StudentT, Method::PairedT, Method::Welch] {
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{}\"", m.name()));
        }
        for c in [Change::Faster, Change::Slower, Change::Same] {
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{}\"", c.name()));
        }
        let back: Ci95 = serde_json::from_str(r#"{"low":1.0,"high":2.0,"method":"welch","n":7}"#).unwrap();
        assert_eq!(back.method, Method::Welch);
    }

    #[test]
    fn half_width_takes_the_larger_side() {
        let ci = Ci95 { low: 90.0, high: 120.0, method: Method::PairedT, n: 4 };
        assert_eq!(ci.half_width_pct(100.0), Some(20.0));
        assert_eq!(ci.half_width_pct(-100.0).map(|p| p > 0.0), Some(true));
        assert_eq!(ci.half_width_pct(0.0), None);
        assert_eq!(ci.half_width_pct(f64::NAN), None);
        assert!(ci.contains(90.0) && ci.contains(120.0) && !ci.contains(120.1) && !ci.contains(f64::NAN));
    }

    #[test]
    fn degrees_of_freedom() {
        assert_eq!(Method::BatchMeans.df(10), 9.0);
        assert_eq!(Method::Welch.df(10), 8.0);
        assert_eq!(Method::StudentT.df(1), 1.0);
    }
}
