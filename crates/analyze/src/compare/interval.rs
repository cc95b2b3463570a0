//! The intervals of the comparison's figures: a delta with its 95 %
//! interval and what it supports (faster, slower, no detectable
//! difference), and the AVG of several levels with its interval.
//!
//! A delta is paired (`stats::paired_delta_pct` over the windows taken one
//! to one) when the two runs are the arms of one `--versus` sweep: their
//! windows alternated in ABBA blocks, so the machine's drift hits both
//! alike and cancels in each pair. Otherwise it is independent
//! (`stats::independent_delta_pct` from each figure's own interval), and
//! the drift between the two runs is in neither interval.

use crate::series::Point;
use crate::stats::{self, Change, Ci95, Method};
use serde::{Deserialize, Serialize};

/// One delta cell: 100 × (X_A / X_B − 1) % with its 95 % interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    /// The delta in %, unrounded. Paired: the geometric mean of the
    /// windows' ratios; otherwise the ratio of the two figures.
    pub delta_pct: f64,
    /// The interval's low bound in %; `None` when there is no interval.
    pub ci95_low_pct: Option<f64>,
    /// The interval's high bound in %; `None` when there is no interval.
    pub ci95_high_pct: Option<f64>,
    /// `faster` (A's throughput is higher and the interval excludes 0),
    /// `slower`, or `same` (the interval contains 0: no detectable
    /// difference); absent when there is no interval to judge by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Change>,
    /// How the interval was estimated: `paired-t` (windows of one
    /// `--versus` sweep, pair by pair) or `welch` (two independent figures).
    pub method: Option<Method>,
    /// Pairs of windows (paired) or the figures' sample sizes added (welch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    /// Why there is no interval, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_interval: Option<String>,
}

impl Delta {
    /// The interval as a [`Ci95`], when there is one.
    pub fn ci(&self) -> Option<Ci95> {
        Some(Ci95 { low: self.ci95_low_pct?, high: self.ci95_high_pct?, method: self.method?, n: self.n.unwrap_or(0) })
    }

    /// Half the interval's width in percentage points: the `x` of "no
    /// detectable difference (±x %)".
    pub fn half_width_pct(&self) -> Option<f64> {
        Some((self.ci95_high_pct? - self.ci95_low_pct?) / 2.0)
    }

    /// What the delta supports, in the words the tables print: `faster`,
    /// `slower`, `no detectable difference (±x %)`, or `no interval`.
    pub fn words(&self) -> String {
        match (self.verdict, self.half_width_pct()) {
            (Some(Change::Same), Some(h)) => format!("no detectable difference (±{h:.1} %)"),
            (Some(v), _) => v.name().to_string(),
            (None, _) => "no interval".to_string(),
        }
    }
}

/// The standard error of a figure from its 95 % interval (the half-width
/// over Student's t at the interval's degrees of freedom): how every
/// interval of [`stats`] was built, read backwards.
pub fn standard_error(ci: &Ci95) -> f64 {
    (ci.high - ci.low) / 2.0 / stats::t975(f64::from(ci.n.max(2)) - 1.0)
}

/// The mean of several levels' throughputs as one [`Point`] (the AVG row):
/// its interval from the levels' standard errors propagated (the levels
/// were measured apart, so their errors add in quadrature: se = √Σse² / k,
/// times Student's t at the fewest degrees of freedom among the levels),
/// present only when every level has one. Its repeats
/// are the mean over the levels of each level's k-th window, when every
/// level has the same number of windows, so an AVG of interleaved runs
/// pairs like a level does. `None` for no points.
pub fn mean_point(points: &[&Point]) -> Option<Point> {
    let first = points.first()?;
    let k = points.len() as f64;
    let throughput = points.iter().map(|p| p.throughput).sum::<f64>() / k;
    let cis: Option<Vec<Ci95>> = points.iter().map(|p| p.throughput_ci).collect();
    let ci = cis.filter(|c| !c.is_empty()).map(|cis| {
        let se = cis.iter().map(|c| standard_error(c).powi(2)).sum::<f64>().sqrt() / k;
        // Student's t at the smallest level's degrees of freedom: on the
        // safe side of Welch–Satterthwaite, and one level's own interval.
        let df = cis.iter().map(|c| c.n.max(2)).min().unwrap_or(2);
        let h = stats::t975(f64::from(df) - 1.0) * se;
        let method = if cis.iter().all(|c| c.method == cis[0].method) { cis[0].method } else { Method::StudentT };
        Ci95 { low: throughput - h, high: throughput + h, method, n: cis.iter().map(|c| c.n).sum() }
    });
    let windows = first.repeats.len();
    let repeats = if windows >= 2 && points.iter().all(|p| p.repeats.len() == windows) {
        (0..windows).map(|i| points.iter().map(|p| p.repeats[i]).sum::<f64>() / k).collect()
    } else {
        Vec::new()
    };
    let no_interval = match ci {
        Some(_) => None,
        None => Some(points.iter().find_map(|p| p.no_interval.clone()).unwrap_or_else(|| "a level without an interval".to_string())),
    };
    Some(Point { throughput_ci: ci, repeats, no_interval, ..Point::new(first.concurrency, throughput) })
}

/// The delta of `a` against `b` with its interval: paired over their
/// windows when `paired` (the arms of one `--versus` sweep) and both have
/// the same number of windows (at least 2); otherwise from each figure's
/// own interval. Without an interval on either side the delta is bare
/// (`no_interval` says why) and never judged. `None` when `b` is 0.
pub fn delta_of(a: &Point, b: &Point, paired: bool) -> Option<Delta> {
    let bare = crate::pct::delta_pct(a.throughput, b.throughput)?;
    let positive = |p: &Point| p.throughput > 0.0 && p.repeats.iter().all(|x| *x > 0.0);
    let mut why: Option<String> = None;
    if paired && a.repeats.len() >= 2 && a.repeats.len() == b.repeats.len() && positive(a) && positive(b) {
        let pairs: Vec<(f64, f64)> = a.repeats.iter().copied().zip(b.repeats.iter().copied()).collect();
        match stats::paired_delta_pct(&pairs) {
            Ok((d, ci)) => return Some(judged(d, ci)),
            Err(e) => why = Some(e.0),
        }
    } else if paired {
        why = Some(format!("unequal windows to pair ({} and {})", a.n(), b.n()));
    }
    match (a.throughput_ci, b.throughput_ci) {
        (Some(ca), Some(cb)) if positive(a) && positive(b) => {
            match stats::independent_delta_pct((a.throughput, &ca), (b.throughput, &cb)) {
                Ok((d, ci)) => Some(judged(d, ci)),
                Err(e) => Some(unjudged(bare, e.0)),
            }
        }
        _ => {
            let reason = why
                .or_else(|| a.no_interval.clone())
                .or_else(|| b.no_interval.clone())
                .unwrap_or_else(|| "the figures carry none".to_string());
            Some(unjudged(bare, reason))
        }
    }
}

fn judged(delta_pct: f64, ci: Ci95) -> Delta {
    Delta {
        delta_pct,
        ci95_low_pct: Some(ci.low),
        ci95_high_pct: Some(ci.high),
        verdict: Some(stats::judge(delta_pct, &ci, true)),
        method: Some(ci.method),
        n: Some(ci.n),
        no_interval: None,
    }
}

fn unjudged(delta_pct: f64, why: String) -> Delta {
    Delta { delta_pct, ci95_low_pct: None, ci95_high_pct: None, verdict: None, method: None, n: None, no_interval: Some(why) }
}
