//! TEMPORARY stand-in for the stats helper's module (replaced at merge).
use scalelab_core::LatencyHistogram;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    BatchMeans,
    StudentT,
    PairedT,
    Welch,
}
impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::BatchMeans => "batch-means",
            Method::StudentT => "student-t",
            Method::PairedT => "paired-t",
            Method::Welch => "welch",
        }
    }
}
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ci95 {
    pub low: f64,
    pub high: f64,
    pub method: Method,
    pub n: u32,
}
impl Ci95 {
    pub fn half_width_pct(&self, point: f64) -> Option<f64> {
        if point == 0.0 || !point.is_finite() {
            return None;
        }
        Some(100.0 * (point - self.low).max(self.high - point) / point.abs())
    }
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoInterval(pub String);
pub type Estimate = Result<Ci95, NoInterval>;

pub fn t975(df: f64) -> f64 {
    let t = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228];
    if df < 1.0 {
        return 12.706;
    }
    let i = df.floor() as usize;
    if i <= 10 {
        t[i - 1]
    } else {
        1.96 + 2.4 / df
    }
}
fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, v.sqrt())
}
pub fn batch_means(per_second: &[f64]) -> Estimate {
    if per_second.len() < 5 {
        return Err(NoInterval(format!(
            "a {} s window: batch means need at least 5 seconds; use --duration 5s or --repeats",
            per_second.len()
        )));
    }
    let (m, s) = mean_sd(per_second);
    let h = t975(per_second.len() as f64 - 1.0) * s / (per_second.len() as f64).sqrt();
    Ok(Ci95 { low: m - h, high: m + h, method: Method::BatchMeans, n: per_second.len() as u32 })
}
pub fn batch_quantile(seconds: &[&LatencyHistogram], q: f64) -> Estimate {
    if seconds.len() < 5 {
        return Err(NoInterval(format!("a {} s window: batch means need at least 5 seconds", seconds.len())));
    }
    let mut all = LatencyHistogram::new();
    let mut qs = Vec::new();
    for h in seconds {
        all.merge(h);
        if let Some(v) = h.quantile_ms(q) {
            qs.push(v)
        }
    }
    let point = all.quantile_ms(q).ok_or_else(|| NoInterval("no latency recorded".into()))?;
    if qs.len() < 5 {
        return Err(NoInterval("fewer than 5 seconds with completions".into()));
    }
    let (_, s) = mean_sd(&qs);
    let h = t975(qs.len() as f64 - 1.0) * s / (qs.len() as f64).sqrt();
    Ok(Ci95 { low: point - h, high: point + h, method: Method::BatchMeans, n: qs.len() as u32 })
}
pub fn mean_of_repeats(xs: &[f64]) -> Estimate {
    if xs.len() < 2 {
        return Err(NoInterval("one repeat".into()));
    }
    let (m, s) = mean_sd(xs);
    let h = t975(xs.len() as f64 - 1.0) * s / (xs.len() as f64).sqrt();
    Ok(Ci95 { low: m - h, high: m + h, method: Method::StudentT, n: xs.len() as u32 })
}
pub fn cv_pct(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let (m, s) = mean_sd(xs);
    (m != 0.0).then(|| 100.0 * s / m)
}
pub fn paired_delta_pct(pairs: &[(f64, f64)]) -> Result<(f64, Ci95), NoInterval> {
    if pairs.len() < 2 {
        return Err(NoInterval("fewer than 2 pairs".into()));
    }
    let d: Vec<f64> = pairs.iter().map(|(a, b)| (a / b).ln()).collect();
    let (m, s) = mean_sd(&d);
    let h = t975(d.len() as f64 - 1.0) * s / (d.len() as f64).sqrt();
    let p = |x: f64| 100.0 * (x.exp() - 1.0);
    Ok((p(m), Ci95 { low: p(m - h), high: p(m + h), method: Method::PairedT, n: d.len() as u32 }))
}
pub fn independent_delta_pct(a: (f64, &Ci95), b: (f64, &Ci95)) -> Result<(f64, Ci95), NoInterval> {
    let se = |x: f64, c: &Ci95| (c.high - c.low) / 2.0 / t975(c.n as f64 - 1.0) / x;
    let s = (se(a.0, a.1).powi(2) + se(b.0, b.1).powi(2)).sqrt();
    let m = (a.0 / b.0).ln();
    let h = 1.96 * s;
    let p = |x: f64| 100.0 * (x.exp() - 1.0);
    Ok((p(m), Ci95 { low: p(m - h), high: p(m + h), method: Method::Welch, n: a.1.n + b.1.n }))
}
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Faster,
    Slower,
    Same,
}
impl Change {
    pub fn name(self) -> &'static str {
        match self {
            Change::Faster => "faster",
            Change::Slower => "slower",
            Change::Same => "same",
        }
    }
}
pub fn judge(delta_pct: f64, ci: &Ci95, higher_is_better: bool) -> Change {
    if ci.contains(0.0) {
        Change::Same
    } else if (delta_pct > 0.0) == higher_is_better {
        Change::Faster
    } else {
        Change::Slower
    }
}
pub fn differ(a: (f64, Option<&Ci95>), b: (f64, Option<&Ci95>)) -> bool {
    match (a.1, b.1) {
        (Some(x), Some(y)) => x.high < y.low || y.high < x.low,
        _ => false,
    }
}
