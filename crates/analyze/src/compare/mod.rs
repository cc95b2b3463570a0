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

use crate::pct::{delta_pct, ratio_pct, round_half_away};
use crate::series::{Series, SeriesError};
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

/// Fills scaling and delta cells from the throughput cells; the deltas named
/// in `not_comparable` stay `None`.
fn derive(mut cells: Cells, first: &IndexMap<String, f64>, deltas: &[DeltaColumn], not_comparable: &[&str]) -> Cells {
    for (label, x) in &cells.throughput {
        let pct = x.zip(first.get(label).copied()).and_then(|(x, f)| ratio_pct(x, f)).and_then(round_half_away);
        cells.scaling_pct.insert(label.clone(), pct);
    }
    for d in deltas {
        let a = cells.throughput.get(&d.a).copied().flatten();
        let b = cells.throughput.get(&d.b).copied().flatten();
        let pct = a.zip(b).and_then(|(a, b)| delta_pct(a, b)).and_then(round_half_away);
        let pct = pct.filter(|_| !not_comparable.contains(&d.name.as_str()));
        cells.delta_pct.insert(d.name.clone(), pct);
    }
    cells
}

/// Builds the comparison table of `series` (in column order).
pub fn compare(series: &[Series], options: &CompareOptions) -> Result<Comparison, CompareError> {
    if series.is_empty() {
        return Err(CompareError::NoRuns);
    }
    let mut labels: Vec<String> = Vec::new();
    let mut steps: Vec<IndexMap<u32, f64>> = Vec::new();
    for s in series {
        if labels.contains(&s.label) {
            return Err(CompareError::DuplicateLabel(s.label.clone()));
        }
        labels.push(s.label.clone());
        steps.push(s.checked_points()?.iter().map(|p| (p.concurrency, p.throughput)).collect());
    }
    let deltas = delta_columns(&labels, options)?;
    // Each run's first step (lowest concurrency; checked_points sorted them).
    let first: IndexMap<String, f64> =
        labels.iter().zip(&steps).map(|(l, s)| (l.clone(), *s.first().expect("checked non-empty").1)).collect();
    let concurrencies: BTreeSet<u32> = steps.iter().flat_map(|s| s.keys().copied()).collect();

    let rows = concurrencies
        .iter()
        .map(|&n| {
            let throughput = labels.iter().zip(&steps).map(|(l, s)| (l.clone(), s.get(&n).copied())).collect();
            Row { concurrency: n, cells: derive(Cells { throughput, ..Cells::default() }, &first, &deltas, &[]) }
        })
        .collect();

    let avg_from = options.avg_from.unwrap_or(0);
    let in_range =
        |s: &IndexMap<u32, f64>| -> Vec<(u32, f64)> { s.iter().filter(|(n, _)| **n >= avg_from).map(|(n, x)| (*n, *x)).collect() };
    let aggregate = |f: &dyn Fn(&IndexMap<u32, f64>) -> Option<f64>, not_comparable: &[&str]| {
        let throughput = labels.iter().zip(&steps).map(|(l, s)| (l.clone(), f(s))).collect();
        derive(Cells { throughput, ..Cells::default() }, &first, &deltas, not_comparable)
    };
    // Means over different step lists do not compare: leave such AVG deltas out.
    let steps_of = |label: &str| {
        let i = labels.iter().position(|l| l == label).expect("delta labels are checked");
        in_range(&steps[i]).into_iter().map(|(n, _)| n).collect::<Vec<u32>>()
    };
    let ragged: Vec<&str> = deltas.iter().filter(|d| steps_of(&d.a) != steps_of(&d.b)).map(|d| d.name.as_str()).collect();
    let avg = aggregate(
        &|s| {
            let xs = in_range(s);
            (!xs.is_empty()).then(|| xs.iter().map(|(_, x)| x).sum::<f64>() / xs.len() as f64)
        },
        &ragged,
    );
    let max = aggregate(&|s| s.values().copied().reduce(f64::max), &[]);
    Ok(Comparison { labels, deltas, avg_from: options.avg_from, rows, avg, max })
}

#[cfg(test)]
mod tests;
