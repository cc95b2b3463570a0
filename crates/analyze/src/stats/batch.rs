//! Intervals from one window's seconds: batch means of throughput and batch
//! quantiles of latency.
//!
//! A window's seconds are not independent draws: a server that is slow this
//! second (a GC pause, a checkpoint, a cache refill) tends to be slow the
//! next. Consecutive seconds are therefore grouped into batches, whose
//! averages are closer to independent, and the batch averages are checked for
//! lag-1 autocorrelation before their spread is trusted:
//!
//! 1. Start with at most [`MAX_BATCHES`] batches (batches of 1 s up to a
//!    30 s window, 2 s up to 60 s, ...), at least [`MIN_BATCHES`].
//! 2. When the batch values' lag-1 autocorrelation counts (more than one null
//!    sd above its null mean: a lenient one-sided test at 16 %, see
//!    `lag1_significant`) and at least [`MERGE_FROM`] batches remain, double
//!    the batch length and check again: longer batches are less correlated.
//! 3. When it counted at any length, the final k batches are taken as AR(1)
//!    with `r` their lag-1 autocorrelation corrected for its small-sample bias
//!    (about −(1+3r)/k: uncorrected, a 10-batch `r` reads half its true size)
//!    and clamped to 0..=[`MAX_R`]. They are worth k_eff = k(1−r)/(1+r)
//!    independent batches: the standard error s/√k_eff is the AR(1) variance
//!    inflation √((1+r)/(1−r)) applied to s/√k, and the t quantile takes
//!    k_eff − 1 df, k_eff rounded down. The interval's `n` is k_eff.
//!
//! Coverage measured in the tests, AR(1) ρ = 0.5 seconds: 91 % at 20 s, 93 %
//! at 30 s, 94 % at 60 s (73–86 % without the check); i.i.d. seconds 95–96 %.
//!
//! Seconds that do not fill the last batch are dropped from the spread at the
//! window's start, the side nearest the warm-up; the interval is still centred
//! on the whole window's figure.

use scalelab_core::LatencyHistogram;

use super::interval::{Ci95, Estimate, Method, NoInterval};
use super::sample::{check_finite, lag1_autocorrelation, mean, t_interval, variance};

/// Fewest batches an interval rests on: with 4 df, t975 is already 2.78.
pub const MIN_BATCHES: usize = 5;

/// Most batches a window starts with; longer windows start with longer batches.
pub const MAX_BATCHES: usize = 30;

/// Batches needed before merging pairs of them (so that at least 10 remain):
/// below that, merging costs more degrees of freedom than it removes bias, and
/// the interval is widened instead.
pub const MERGE_FROM: usize = 20;

/// Null standard deviations above its null mean a lag-1 autocorrelation
/// must lie to count (see `lag1_significant`).
const Z_TEST: f64 = 1.0;

/// Largest autocorrelation the widening uses (k_eff = k/19, a factor of
/// 4.4): beyond it a window is a trend, not noise, and no factor makes its
/// interval honest; it rests on 2 effective batches at most.
pub const MAX_R: f64 = 0.9;

/// Fewest completions beyond the quantile (above it, or below it for q < ½)
/// a batch of latency should expect, so that its quantile is an order
/// statistic in the body of the batch, not its extreme.
pub const MIN_TAIL_PER_BATCH: f64 = 5.0;

/// The batches a window was cut into, and what the autocorrelation check did.
#[derive(Clone, Debug, PartialEq)]
struct Batching {
    /// One value per batch (its mean, or its quantile).
    values: Vec<f64>,
    /// How many independent batches they are worth: their number, or
    /// k(1−r)/(1+r) rounded down when autocorrelation showed.
    effective: usize,
}

/// 95 % CI of the mean of a step's per-second values (throughput per
/// second), by batch means (see the module doc for the batching and the
/// autocorrelation check). Needs at least 5 seconds. A constant series gets a
/// zero-width interval, not an error: the window showed no noise at all (an
/// open loop served at exactly its rate), and saying so is the honest answer.
pub fn batch_means(per_second: &[f64]) -> Estimate {
    enough_seconds(per_second.len())?;
    check_finite(per_second, "per-second values")?;
    let batching = batched(per_second.len(), 1, |b| chunk_means(per_second, b), true);
    Ok(interval(mean(per_second), &batching))
}

/// [`batch_means`] without the autocorrelation check: what the check buys.
#[cfg(test)]
pub(super) fn batch_means_unchecked(per_second: &[f64]) -> Ci95 {
    let batching = batched(per_second.len(), 1, |b| chunk_means(per_second, b), false);
    interval(mean(per_second), &batching)
}

/// 95 % CI of the `q`-quantile (ms) of a window from its per-second
/// histograms: batches of consecutive seconds merged, the quantile taken per
/// batch, and the t interval of their spread centred on the whole window's
/// quantile (the batch quantiles of a skewed distribution are biased, their
/// spread much less so).
///
/// Seconds that completed nothing carry no latency and are left out. A
/// batch is made long enough to expect [`MIN_TAIL_PER_BATCH`] completions
/// beyond the quantile (a p99 batch needs ~500); with fewer than 5 such
/// batches there is no interval, and the reason says how many completions it
/// would take.
pub fn batch_quantile(seconds: &[&LatencyHistogram], q: f64) -> Estimate {
    if !(q > 0.0 && q < 1.0) {
        return Err(NoInterval(format!("quantile {q}: an interval needs a quantile strictly between 0 and 1")));
    }
    enough_seconds(seconds.len())?;
    let busy: Vec<&LatencyHistogram> = seconds.iter().copied().filter(|h| !h.is_empty()).collect();
    if busy.len() < MIN_BATCHES {
        return Err(NoInterval(format!(
            "{} of the window's {} seconds completed a request: batch quantiles need at least {MIN_BATCHES}",
            busy.len(),
            seconds.len()
        )));
    }
    let total: u64 = busy.iter().map(|h| h.count()).sum();
    let per_batch = MIN_TAIL_PER_BATCH / q.min(1.0 - q);
    let min_batch_s = (per_batch * busy.len() as f64 / total as f64).ceil().max(1.0) as usize;
    if busy.len() / min_batch_s < MIN_BATCHES {
        return Err(NoInterval(format!(
            "too few completions for a {} interval: {MIN_BATCHES} batches of about {per_batch:.0} completions each \
             ({:.0} in all), the window has {total}; run longer or use --repeats",
            percentile_name(q),
            per_batch * MIN_BATCHES as f64
        )));
    }
    let whole = merged(&busy);
    let Some(centre) = whole.quantile_ms(q) else {
        return Err(NoInterval("no completions in the window".into()));
    };
    let batching = batched(busy.len(), min_batch_s, |b| chunk_quantiles(&busy, b, q), true);
    Ok(interval(centre, &batching))
}

/// `Err` saying the window is too short when it has fewer than [`MIN_BATCHES`] seconds.
fn enough_seconds(n: usize) -> Result<(), NoInterval> {
    if n < MIN_BATCHES {
        return Err(NoInterval(format!(
            "a {n} s window: batch means need at least {MIN_BATCHES} seconds; use --duration {MIN_BATCHES}s or --repeats"
        )));
    }
    Ok(())
}

/// The batch values of a window of `n` seconds, from batches of at least
/// `min_batch_s` seconds, after the autocorrelation check (module doc) when
/// `check` (tests turn it off to measure what it buys).
/// `values_of(b)` gives one value per batch of `b` seconds.
fn batched(n: usize, min_batch_s: usize, values_of: impl Fn(usize) -> Vec<f64>, check: bool) -> Batching {
    let mut b = n.div_ceil(MAX_BATCHES).max(min_batch_s);
    let mut autocorrelated = false;
    loop {
        let values = values_of(b);
        let k = values.len();
        let r = lag1_autocorrelation(&values);
        let significant = check && lag1_significant(r, k);
        autocorrelated |= significant;
        if significant && k >= MERGE_FROM {
            b *= 2;
            continue;
        }
        let effective = if autocorrelated { effective_batches(k, debiased(r, k)) } else { k };
        return Batching { values, effective };
    }
}

/// Whether a lag-1 autocorrelation `r` of `k` values is significantly
/// positive: more than one null sd (≈ 1/√k) above its null mean −1/k, a
/// one-sided test at 16 %. Lenient on purpose: a missed autocorrelation
/// costs coverage (74 % instead of 95 % at ρ = 0.5 in 20 s), a false alarm
/// only width (i.i.d. coverage stays 95–96 %). Only positive correlation
/// narrows an interval falsely; negative makes it conservative.
fn lag1_significant(r: f64, k: usize) -> bool {
    let k = k as f64;
    r + 1.0 / k > Z_TEST / k.sqrt()
}

/// `r` of `k` values corrected for the estimator's bias E[r̂] ≈ ρ − (1+3ρ)/k
/// (Marriott and Pope), clamped to 0..=[`MAX_R`].
fn debiased(r: f64, k: usize) -> f64 {
    let k = k as f64;
    ((k * r + 1.0) / (k - 3.0)).clamp(0.0, MAX_R)
}

/// How many independent values `k` AR(1) values with lag-1 correlation `r`
/// are worth for their mean: k(1−r)/(1+r) rounded down, at least 2 (one
/// degree of freedom). The standard error over it is the AR(1) variance
/// inflation √((1+r)/(1−r)) applied to the independent one (a little more
/// for the rounding).
fn effective_batches(k: usize, r: f64) -> usize {
    ((k as f64 * (1.0 - r) / (1.0 + r)).floor() as usize).clamp(2, k)
}

/// The t interval of the batch values' spread, centred on `centre`: standard
/// error s/√k_eff, t quantile at k_eff − 1 df, `n` = k_eff (so that
/// [`Ci95::std_error`] recovers exactly the standard error used).
fn interval(centre: f64, batching: &Batching) -> Ci95 {
    let k_eff = batching.effective;
    let se = (variance(&batching.values) / k_eff as f64).sqrt();
    t_interval(centre, se, (k_eff - 1) as f64, Method::BatchMeans, k_eff)
}

/// Means of consecutive batches of `b` values; the `len % b` first are left out.
fn chunk_means(xs: &[f64], b: usize) -> Vec<f64> {
    xs[xs.len() % b..].chunks(b).map(mean).collect()
}

/// The `q`-quantile (ms) of each batch of `b` consecutive histograms merged;
/// the `len % b` first are left out.
fn chunk_quantiles(seconds: &[&LatencyHistogram], b: usize, q: f64) -> Vec<f64> {
    seconds[seconds.len() % b..].chunks(b).filter_map(|c| merged(c).quantile_ms(q)).collect()
}

/// The histograms merged into one.
fn merged(seconds: &[&LatencyHistogram]) -> LatencyHistogram {
    let mut all = LatencyHistogram::new();
    for h in seconds {
        all.merge(h);
    }
    all
}

/// "p50", "p99", "p99.9" for q = 0.5, 0.99, 0.999.
fn percentile_name(q: f64) -> String {
    format!("p{}", (q * 100.0 * 1000.0).round() / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_windows_say_what_to_do() {
        let e = batch_means(&[100.0, 101.0]).unwrap_err();
        assert_eq!(e.0, "a 2 s window: batch means need at least 5 seconds; use --duration 5s or --repeats");
        assert!(batch_means(&[]).unwrap_err().0.starts_with("a 0 s window"));
        assert!(batch_means(&[1.0, 2.0, 3.0, 4.0]).is_err());
        assert!(batch_means(&[1.0, 2.0, 3.0, 4.0, 5.0]).is_ok());
    }

    #[test]
    fn a_constant_series_has_a_zero_width_interval() {
        let ci = batch_means(&[250.0; 12]).unwrap();
        assert_eq!((ci.low, ci.high, ci.method, ci.n), (250.0, 250.0, Method::BatchMeans, 12));
    }

    #[test]
    fn non_finite_seconds_are_refused() {
        let e = batch_means(&[1.0, 2.0, f64::INFINITY, 4.0, 5.0]).unwrap_err();
        assert!(e.0.contains("value 3 of 5 is inf"), "{e}");
    }

    #[test]
    fn batches_grow_with_the_window_and_drop_the_first_seconds() {
        assert_eq!(chunk_means(&[9.0, 1.0, 2.0, 3.0, 4.0], 2), vec![1.5, 3.5]);
        // 95 s of scattered values: batches of 4 s, 23 of them (the first 3 s left out).
        let xs: Vec<f64> = (0..95).map(|i| 100.0 + f64::from((i * 7919) % 13)).collect();
        let ci = batch_means(&xs).unwrap();
        assert_eq!(ci.n, 23);
        assert!(ci.contains(mean(&xs)) && ci.high > ci.low);
    }

    #[test]
    fn a_trend_is_found_autocorrelated_and_widened() {
        // A slow ramp plus alternating noise: the ramp makes neighbours alike.
        let xs: Vec<f64> = (0..20).map(|i| 100.0 + f64::from(i) + if i % 2 == 0 { 3.0 } else { -3.0 }).collect();
        let plain = {
            let k = xs.len() as f64;
            2.093 * (variance(&xs) / k).sqrt()
        };
        let ci = batch_means(&xs).unwrap();
        assert!(ci.half_width(mean(&xs)) > 1.3 * plain, "{ci:?} vs ±{plain}");
    }

    #[test]
    fn autocorrelation_test_and_widening() {
        assert!(!lag1_significant(0.0, 20));
        assert!(lag1_significant(0.5, 20));
        assert!(!lag1_significant(0.2, 5) && lag1_significant(0.3, 5));
        assert_eq!(debiased(-0.5, 10), 0.0);
        assert_eq!(debiased(0.99, 10), MAX_R);
        // r = 0.5 makes 30 batches worth 10: the se grows by √3.
        assert_eq!(effective_batches(30, 0.5), 10);
        assert_eq!(effective_batches(10, MAX_R), 2);
    }

    #[test]
    fn percentile_names() {
        assert_eq!(percentile_name(0.5), "p50");
        assert_eq!(percentile_name(0.99), "p99");
        assert_eq!(percentile_name(0.999), "p99.9");
    }
}
