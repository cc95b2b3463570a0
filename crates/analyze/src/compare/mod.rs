//! The comparison table of several runs (`scalelab compare`), as data.
//!
//! One [`Row`] per concurrency in the union of all runs' steps, sorted; a run
//! without that step has `None` there (shown as missing, never as 0). Each
//! row carries every run's throughput, its scaling (X(N) / X(first step of
//! that run), in %) and the delta columns (100 × (X_A / X_B − 1) %), then an
//! AVG row (mean of each run's steps at concurrency >= `avg_from`, default
//! all) and a MAX row (each run's highest throughput). The AVG and MAX
//! scaling and delta cells are computed from the AVG and MAX throughputs, as
//! published tables do (the MAX delta compares the two peaks, wherever each
//! occurred; AVG or MAX scaling is that value relative to the run's first
//! step). An AVG delta between two runs whose steps in the AVG range differ
//! is left out (`None`): means over different loads do not compare.
//!
//! Throughputs are kept exact; percentages are rounded to whole numbers,
//! half away from zero ([`crate::pct::round_half_away`]).
//!
//! Every throughput carries its 95 % interval where it has one, and every
//! delta a [`Delta`]: unrounded, with its interval and what it supports
//! ([`interval`]). The AVG row's interval propagates the levels'; the MAX
//! row's is the peak level's.

mod environment;
pub mod interval;

pub use environment::{differences as environment_differences, versus_arms};
pub use interval::{delta_of, mean_point, Delta};

use crate::pct::{delta_pct, ratio_pct, round_half_away};
use crate::series::{Point, Series, SeriesError};
use crate::stats::Ci95;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use thiserror::Error;

/// What to put in the table beyond throughput and scaling.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    /// A run every other run is compared with (`--baseline`): one delta column each.
    pub baseline: Option<String>,
    /// Extra delta columns `(A, B)`: A vs B (`--pair A:B`).
    pub pairs: Vec<(String, String)>,
    /// The AVG row covers steps with concurrency >= this (`--avg-from`);
    /// `None` = all steps. Published tables often leave out the lightest loads.
    pub avg_from: Option<u32>,
    /// Pairs of run labels `(A, B)` that are the two arms of one `--versus`
    /// sweep: their windows at each level alternated, the k-th of A with
    /// the k-th of B, so their deltas are paired window by window.
    #[serde(default)]
    pub paired: Vec<(String, String)>,
}

/// One delta column: 100 × (X_A / X_B − 1) %.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeltaColumn {
    /// Column name and key in [`Cells::delta_pct`]: `"A vs B"`.
    pub name: String,
    /// Label of the run compared.
    pub a: String,
    /// Label of the run it is compared with.
    pub b: String,
}

/// The cells of one row, each map keyed and ordered like the table's columns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cells {
    /// Throughput per run label (exact, not rounded).
    pub throughput: IndexMap<String, Option<f64>>,
    /// Scaling per run label: throughput / the run's first step, in whole %.
    pub scaling_pct: IndexMap<String, Option<i64>>,
    /// Delta per column name (`"A vs B"`), in whole %.
    pub delta_pct: IndexMap<String, Option<i64>>,
    /// The 95 % interval of each run's throughput (keyed like `throughput`);
    /// `None` where the figure has none (a published figure, a window too
    /// short) or is missing.
    #[serde(default)]
    pub throughput_ci95: IndexMap<String, Option<Ci95>>,
    /// Each delta with its interval and verdict (keyed like `delta_pct`);
    /// `None` where the delta is missing or not comparable.
    #[serde(default)]
    pub delta: IndexMap<String, Option<Delta>>,
}

/// One concurrency of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The step's concurrency.
    pub concurrency: u32,
    /// The row's cells (flattened in JSON: `throughput`, `scaling_pct`, `delta_pct`).
    #[serde(flatten)]
    pub cells: Cells,
}

/// The comparison table of several runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Run labels, in column order.
    pub labels: Vec<String>,
    /// Delta columns, in column order: baseline deltas first, then pairs.
    pub deltas: Vec<DeltaColumn>,
    /// The AVG row's lower concurrency bound (`None` = all steps).
    pub avg_from: Option<u32>,
    /// One row per concurrency, ascending.
    pub rows: Vec<Row>,
    /// Mean of each run's steps at concurrency >= `avg_from`; a delta
    /// between runs with different steps in that range is `None`.
    pub avg: Cells,
    /// Each run's highest throughput over all steps.
    pub max: Cells,
    /// How the deltas' intervals were estimated and what they leave out
    /// (the drift between separate runs), one sentence each.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Why the runs may not compare (their environments differ), one line
    /// each; filled by the caller, who has the runs
    /// ([`environment_differences`]).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Why no table can be made.
#[derive(Debug, Error, PartialEq)]
pub enum CompareError {
    /// Nothing to compare.
    #[error("no runs to compare")]
    NoRuns,
    /// Two runs with one label would make ambiguous columns.
    #[error("two runs are labelled `{0}`: labels must be unique in a comparison")]
    DuplicateLabel(String),
    /// A baseline or pair names a run that is not in the comparison.
    #[error("`{label}` is not one of the compared runs ({known})")]
    UnknownRun { label: String, known: String },
    /// A `--pair` that is not `A:B` with two compared labels.
    #[error("pair `{spec}`: expected A:B where A and B are compared runs ({known})")]
    BadPair { spec: String, known: String },
    /// A run's steps cannot be analysed.
    #[error(transparent)]
    Series(#[from] SeriesError),
}

impl CompareOptions {
    /// Splits a `--pair` argument `A:B` at the colon that leaves a compared
    /// run's label on both sides, so labels may themselves contain colons.
    pub fn parse_pair(spec: &str, labels: &[&str]) -> Result<(String, String), CompareError> {
        let splits: Vec<(String, String)> = spec
            .match_indices(':')
            .map(|(i, _)| (spec[..i].trim().to_string(), spec[i + 1..].trim().to_string()))
            .filter(|(a, b)| labels.contains(&a.as_str()) && labels.contains(&b.as_str()))
            .collect();
        match <[_; 1]>::try_from(splits) {
            Ok([pair]) => Ok(pair),
            Err(_) => Err(CompareError::BadPair { spec: spec.to_string(), known: labels.join(", ") }),
        }
    }
}

fn delta_columns(labels: &[String], options: &CompareOptions) -> Result<Vec<DeltaColumn>, CompareError> {
    let check = |label: &String| {
        if labels.contains(label) {
            Ok(())
        } else {
            Err(CompareError::UnknownRun { label: label.clone(), known: labels.join(", ") })
        }
    };
    let mut wanted = Vec::new();
    if let Some(base) = &options.baseline {
        check(base)?;
        wanted.extend(labels.iter().filter(|l| *l != base).map(|l| (l.clone(), base.clone())));
    }
    for (a, b) in &options.pairs {
        check(a)?;
        check(b)?;
        wanted.push((a.clone(), b.clone()));
    }
    let mut columns: Vec<DeltaColumn> = Vec::new();
    for (a, b) in wanted {
        let name = format!("{a} vs {b}");
        if !columns.iter().any(|c| c.name == name) {
            columns.push(DeltaColumn { name, a, b });
        }
    }
    Ok(columns)
}

/// Fills scaling and delta cells from the row's points (one per run label,
/// `None` where the run has no step); the deltas named in `not_comparable`
/// stay `None`; those in `paired` are paired window by window.
fn derive(
    points: &IndexMap<String, Option<Point>>,
    first: &IndexMap<String, f64>,
    deltas: &[DeltaColumn],
    not_comparable: &[&str],
    paired: &[&str],
) -> Cells {
    let mut cells = Cells {
        throughput: points.iter().map(|(l, p)| (l.clone(), p.as_ref().map(|p| p.throughput))).collect(),
        throughput_ci95: points.iter().map(|(l, p)| (l.clone(), p.as_ref().and_then(|p| p.throughput_ci))).collect(),
        ..Cells::default()
    };
    for (label, x) in &cells.throughput {
        let pct = x.zip(first.get(label).copied()).and_then(|(x, f)| ratio_pct(x, f)).and_then(round_half_away);
        cells.scaling_pct.insert(label.clone(), pct);
    }
    for d in deltas {
        let a = cells.throughput.get(&d.a).copied().flatten();
        let b = cells.throughput.get(&d.b).copied().flatten();
        let pct = a.zip(b).and_then(|(a, b)| delta_pct(a, b)).and_then(round_half_away);
        let comparable = !not_comparable.contains(&d.name.as_str());
        let pct = pct.filter(|_| comparable);
        cells.delta_pct.insert(d.name.clone(), pct);
        let pa = points.get(&d.a).and_then(Option::as_ref);
        let pb = points.get(&d.b).and_then(Option::as_ref);
        let delta = pa.zip(pb).filter(|_| comparable).and_then(|(a, b)| delta_of(a, b, paired.contains(&d.name.as_str())));
        cells.delta.insert(d.name.clone(), delta);
    }
    cells
}

/// Builds the comparison table of `series` (in column order).
pub fn compare(series: &[Series], options: &CompareOptions) -> Result<Comparison, CompareError> {
    if series.is_empty() {
        return Err(CompareError::NoRuns);
    }
    let mut labels: Vec<String> = Vec::new();
    let mut steps: Vec<IndexMap<u32, Point>> = Vec::new();
    for s in series {
        if labels.contains(&s.label) {
            return Err(CompareError::DuplicateLabel(s.label.clone()));
        }
        labels.push(s.label.clone());
        steps.push(s.checked_points()?.into_iter().map(|p| (p.concurrency, p)).collect());
    }
    let deltas = delta_columns(&labels, options)?;
    let paired: Vec<&str> = deltas
        .iter()
        .filter(|d| options.paired.iter().any(|(a, b)| (a == &d.a && b == &d.b) || (a == &d.b && b == &d.a)))
        .map(|d| d.name.as_str())
        .collect();
    // Each run's first step (lowest concurrency; checked_points sorted them).
    let first: IndexMap<String, f64> =
        labels.iter().zip(&steps).map(|(l, s)| (l.clone(), s.first().expect("checked non-empty").1.throughput)).collect();
    let concurrencies: BTreeSet<u32> = steps.iter().flat_map(|s| s.keys().copied()).collect();

    let rows = concurrencies
        .iter()
        .map(|&n| {
            let points = labels.iter().zip(&steps).map(|(l, s)| (l.clone(), s.get(&n).cloned())).collect();
            Row { concurrency: n, cells: derive(&points, &first, &deltas, &[], &paired) }
        })
        .collect();

    let avg_from = options.avg_from.unwrap_or(0);
    let in_range = |s: &IndexMap<u32, Point>| -> Vec<u32> { s.keys().copied().filter(|n| *n >= avg_from).collect() };
    let aggregate = |f: &dyn Fn(&IndexMap<u32, Point>) -> Option<Point>, not_comparable: &[&str]| {
        let points = labels.iter().zip(&steps).map(|(l, s)| (l.clone(), f(s))).collect();
        derive(&points, &first, &deltas, not_comparable, &paired)
    };
    // Means over different step lists do not compare: leave such AVG deltas out.
    let steps_of = |label: &str| {
        let i = labels.iter().position(|l| l == label).expect("delta labels are checked");
        in_range(&steps[i])
    };
    let ragged: Vec<&str> = deltas.iter().filter(|d| steps_of(&d.a) != steps_of(&d.b)).map(|d| d.name.as_str()).collect();
    let avg = aggregate(&|s| mean_point(&s.values().filter(|p| p.concurrency >= avg_from).collect::<Vec<_>>()), &ragged);
    // Each run's peak, its level's figures and interval (the first of equal peaks).
    let peak = |s: &IndexMap<u32, Point>| {
        s.values().fold(None::<&Point>, |m, p| if m.is_some_and(|m| m.throughput >= p.throughput) { m } else { Some(p) }).cloned()
    };
    // Peaks at different levels pair no windows: compare them as independent figures.
    let peaks_apart: Vec<&str> = deltas
        .iter()
        .filter(|d| {
            let level = |l: &str| labels.iter().position(|x| x == l).and_then(|i| peak(&steps[i])).map(|p| p.concurrency);
            level(&d.a) != level(&d.b)
        })
        .map(|d| d.name.as_str())
        .collect();
    let paired_max: Vec<&str> = paired.iter().copied().filter(|d| !peaks_apart.contains(d)).collect();
    let max = {
        let points = labels.iter().zip(&steps).map(|(l, s)| (l.clone(), peak(s))).collect();
        derive(&points, &first, &deltas, &[], &paired_max)
    };
    let notes = method_notes(series, &deltas, &paired);
    Ok(Comparison { labels, deltas, avg_from: options.avg_from, rows, avg, max, notes, warnings: Vec::new() })
}

/// The sentences that say how the deltas' intervals were estimated: paired
/// columns name their method; independent ones say once that the drift
/// between the runs is in no interval, and how to measure it.
fn method_notes(series: &[Series], deltas: &[DeltaColumn], paired: &[&str]) -> Vec<String> {
    let mut notes = Vec::new();
    let with_interval = series.iter().any(|s| s.points.iter().any(|p| p.throughput_ci.is_some()));
    if !with_interval {
        return notes;
    }
    for d in deltas.iter().filter(|d| paired.contains(&d.name.as_str())) {
        notes.push(format!(
            "{}: paired (the two arms of one --versus sweep: their windows alternated, and each pair's ratio cancels the drift)",
            d.name
        ));
    }
    if deltas.iter().any(|d| !paired.contains(&d.name.as_str())) {
        let repeated = series.iter().any(|s| s.points.iter().any(|p| p.repeats.len() >= 2));
        notes.push(if repeated {
            "separate runs: drift between them is not measured; --versus interleaves them".to_string()
        } else {
            "single runs: the machine's drift between them is not measured; use --repeats or --versus".to_string()
        });
    }
    notes
}

#[cfg(test)]
mod tests;
