//! Tables and comparisons against a stored baseline run and the published
//! 2005 lmbench/flops tables, pinned with snapshots.

use scalelab_analyze::micro::{compare, delta_pct, load_published_dir};
use scalelab_micro::{LabelledRun, MicroReport};
use scalelab_report::micro::{render_comparison, render_tables, summary_tables};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../analyze/tests/fixtures/micro")
}

/// The published lmbench and flops tables, shipped for the README's tour.
fn published() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/lmbench")
}

/// A full run measured on the development machine (2 vCPU KVM guest).
fn baseline() -> LabelledRun {
    let text = std::fs::read_to_string(fixtures().join("baseline-run.json")).unwrap();
    let report: MicroReport = serde_json::from_str(&text).unwrap();
    let mut run = report.to_labelled();
    run.os = Some("Linux".into());
    run
}

fn all_runs() -> Vec<LabelledRun> {
    let mut runs = vec![baseline()];
    runs.extend(load_published_dir(&published()).unwrap());
    runs
}

#[test]
fn published_tables_load_and_merge_by_host() {
    let published = load_published_dir(&published()).unwrap();
    let labels: Vec<&str> = published.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "G5 2.7 GHz Darwin",
            "G5 2.5 GHz Linux",
            "Xeon 3.6 GHz Linux",
            "Opteron 850 Linux",
            "G5 2.7 GHz gcc 4.0",
            "G5 2.7 GHz gcc 3.3",
            "G5 2.5 GHz gcc 3.3",
            "Opteron 2.4 GHz gcc 3.3.3",
            "Opteron 2.4 GHz gcc 4.0",
        ]
    );
    let opteron = &published[3];
    // One row per host: syscalls, process creation and latency files merged.
    assert_eq!(opteron.run.median("null_call"), Some(0.08));
    assert_eq!(opteron.run.median("fork_sh"), Some(2393.0));
    assert_eq!(opteron.run.median("tcp_connect"), Some(24.0));
    assert_eq!(opteron.mhz, Some(2404.0));
    // The published Average is the mean of the 8 kernels (within rounding).
    for r in &published[4..] {
        let mean: f64 = (1..=8).map(|k| r.run.median(&format!("flops_{k}")).unwrap()).sum::<f64>() / 8.0;
        assert!((mean - r.run.median("flops_avg").unwrap()).abs() <= 1.0, "{}", r.label);
    }
}

#[test]
fn summary_tables_beside_published_rows() {
    let text = render_tables(&summary_tables(&all_runs()));
    insta::assert_snapshot!("summary_tables", text);
}

#[test]
fn comparison_against_published_opteron() {
    let runs: Vec<LabelledRun> = all_runs()
        .into_iter()
        .filter(|r| {
            r.label == "Opteron 850 Linux"
                || r.label == "G5 2.5 GHz Linux"
                || r.label.starts_with("dev VM")
                || r.label == "Opteron 2.4 GHz gcc 4.0"
        })
        .collect();
    assert_eq!(runs.len(), 4);
    let cmp = compare(&runs, "Opteron 850 Linux").unwrap();
    insta::assert_snapshot!("compare_vs_opteron", render_comparison(&cmp));
    // The data agrees with the definition, figure by figure.
    let ours = baseline();
    let row = cmp.rows.iter().find(|r| r.id == "null_call").unwrap();
    let cell = row.cells.iter().find(|c| c.label == ours.label).unwrap();
    assert_eq!(cell.delta_pct, delta_pct(ours.run.median("null_call").unwrap(), 0.08));
    assert!(compare(&runs, "no such host").is_err());
}

#[test]
fn comparison_of_two_published_oses_on_one_machine() {
    // The same dual G5 under Darwin and Linux: how much the OS costs.
    let published = load_published_dir(&published()).unwrap();
    let g5: Vec<LabelledRun> = published.into_iter().filter(|r| r.label.starts_with("G5") && r.os.is_some()).collect();
    let cmp = compare(&g5, "G5 2.5 GHz Linux").unwrap();
    let fork = cmp.rows.iter().find(|r| r.id == "fork_exit").unwrap();
    // 659 vs 182 us: Darwin forks 262 % slower.
    assert_eq!(fork.cells[0].delta_pct, Some(262));
    insta::assert_snapshot!("compare_g5_darwin_vs_linux", render_comparison(&cmp));
}
