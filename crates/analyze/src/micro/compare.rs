//! Side-by-side comparison of labelled runs against a baseline run: every
//! figure's value per run and its delta in % (100 × (A/B − 1), rounded half
//! away from zero), as data (`scalelab_report::micro` draws it).

use super::MicroInputError;
use scalelab_micro::catalog::{self, order_key};
use scalelab_micro::{LabelledRun, Unit};
use serde::{Deserialize, Serialize};

/// One run's value of a figure and its delta against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareCell {
    pub label: String,
    pub value: Option<f64>,
    /// 100 × (value / baseline − 1), rounded half away from zero; `None`
    /// when either side is missing. Positive means a bigger number, which is
    /// worse for times and better for throughputs (see `unit`).
    pub delta_pct: Option<i64>,
}

/// One figure across the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    pub id: String,
    pub name: String,
    pub unit: Unit,
    pub baseline: Option<f64>,
    pub cells: Vec<CompareCell>,
}

/// Every figure any of the runs has, in catalog order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline: String,
    pub labels: Vec<String>,
    pub rows: Vec<CompareRow>,
}

/// 100 × (a/b − 1), rounded half away from zero. The ratio is first snapped
/// to 9 decimals so a figure like 1.005 vs 1 (0.49999… in binary) rounds the
/// way a person computing by hand would. `None` if b is 0 or not finite.
pub fn delta_pct(a: f64, b: f64) -> Option<i64> {
    if !a.is_finite() || !b.is_finite() || b == 0.0 {
        return None;
    }
    let x = 100.0 * (a / b - 1.0);
    let snapped = (x * 1e9).round() / 1e9;
    Some(snapped.round() as i64)
}

/// Compares `runs` against the one labelled `baseline`; a label that two
/// runs share is ambiguous (name them apart, or use [`compare_with`]).
pub fn compare(runs: &[LabelledRun], baseline: &str) -> Result<Comparison, MicroInputError> {
    let have = || runs.iter().map(|r| r.label.as_str()).collect::<Vec<_>>().join(", ");
    let mut matching = runs.iter().enumerate().filter(|(_, r)| r.label == baseline).map(|(i, _)| i);
    let base = matching.next().ok_or_else(|| MicroInputError::UnknownBaseline { given: baseline.to_string(), have: have() })?;
    if matching.next().is_some() {
        return Err(MicroInputError::AmbiguousBaseline { given: baseline.to_string(), have: have() });
    }
    compare_with(runs, base)
}

/// Compares `runs` against `runs[base]`. Runs are told apart by position,
/// not label: two runs with one label (a before/after on one host) are two
/// columns, each with its deltas; their labels should be made distinct for
/// display first (the CLI appends the run id: `host #12`, `host #15`).
pub fn compare_with(runs: &[LabelledRun], base: usize) -> Result<Comparison, MicroInputError> {
    let baseline = &runs
        .get(base)
        .ok_or_else(|| MicroInputError::UnknownBaseline {
            given: format!("#{base}"),
            have: runs.iter().map(|r| r.label.as_str()).collect::<Vec<_>>().join(", "),
        })?
        .label;
    let base = &runs[base];
    let others: Vec<&LabelledRun> = runs.iter().filter(|r| !std::ptr::eq(*r, base)).collect();
    let mut ids: Vec<(String, String, Unit)> = Vec::new();
    for r in runs {
        for res in r.run.results.iter().filter(|x| x.median.is_some()) {
            if !ids.iter().any(|(id, _, _)| *id == res.id) {
                let name = catalog::info(&res.id).map(|i| i.name.to_string()).unwrap_or_else(|| res.name.clone());
                ids.push((res.id.clone(), name, res.unit));
            }
        }
    }
    ids.sort_by_key(|(id, _, _)| order_key(id));
    let rows = ids
        .into_iter()
        .map(|(id, name, unit)| {
            let b = base.run.median(&id);
            let cells = others
                .iter()
                .map(|o| {
                    let v = o.run.median(&id);
                    CompareCell { label: o.label.clone(), value: v, delta_pct: v.zip(b).and_then(|(a, b)| delta_pct(a, b)) }
                })
                .collect();
            CompareRow { id, name, unit, baseline: b, cells }
        })
        .collect();
    Ok(Comparison { baseline: baseline.to_string(), labels: others.iter().map(|o| o.label.clone()).collect(), rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, fork_us: f64) -> LabelledRun {
        let r = scalelab_micro::MicroResult {
            median: Some(fork_us),
            min: Some(fork_us),
            max: Some(fork_us),
            cv: Some(0.0),
            samples: 1,
            unavailable: None,
            ..scalelab_micro::MicroResult::unavailable("fork_exit", scalelab_micro::Group::Procs, "fork+exit", Unit::Us, String::new())
        };
        LabelledRun { label: label.into(), os: None, mhz: None, run: scalelab_micro::MicroRun { results: vec![r], ..Default::default() } }
    }

    #[test]
    fn runs_with_one_label_are_two_columns_with_deltas() {
        let runs = [run("host", 100.0), run("host", 125.0)];
        let c = compare_with(&runs, 0).unwrap();
        assert_eq!(c.labels.len(), 1, "the other run is a column");
        assert_eq!(c.rows[0].baseline, Some(100.0));
        assert_eq!((c.rows[0].cells[0].value, c.rows[0].cells[0].delta_pct), (Some(125.0), Some(25)));
        // By label the baseline is ambiguous: said, not guessed.
        let e = compare(&runs, "host").unwrap_err();
        assert!(e.to_string().contains("more than one run is labelled `host`"), "{e}");
    }

    #[test]
    fn delta_rounds_half_away_from_zero() {
        assert_eq!(delta_pct(1.005, 1.0), Some(1));
        assert_eq!(delta_pct(0.995, 1.0), Some(-1));
        assert_eq!(delta_pct(1.004, 1.0), Some(0));
        assert_eq!(delta_pct(274.0, 192.0), Some(43));
        assert_eq!(delta_pct(50.0, 192.0), Some(-74));
        assert_eq!(delta_pct(1.0, 0.0), None);
    }
}
