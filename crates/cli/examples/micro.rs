//! Runs the micro-benchmark suite and prints lmbench-layout tables, optionally
//! beside published rows and with % deltas against one of them. Used by
//! bench/micro_vs_lmbench until `scalelab micro` is wired; not the product CLI.
//! It lives beside the CLI because it uses micro (the suite), analyze
//! (published tables, comparison) and report (the tables' text).
//!
//! cargo run --release -p scalelab --example micro -- \
//!     [--quick] [--only procs,ctx] [--published DIR] [--baseline LABEL] [--json FILE]

use clap::Parser;
use scalelab_analyze::micro::{compare, load_published_dir};
use scalelab_micro::{run_suite, Group, LabelledRun, MicroReport, SuiteOptions};
use scalelab_report::micro::{render_comparison, render_tables, summary_tables};
use std::path::PathBuf;

#[derive(Parser)]
struct Args {
    /// 3 repeats instead of 11, no memory-latency curve.
    #[arg(long)]
    quick: bool,
    /// Comma-separated groups to run (procs, threads, ctx, latency, bandwidth, memory, fpu).
    #[arg(long)]
    only: Option<String>,
    /// Label of this run in the tables.
    #[arg(long, default_value = "this host")]
    label: String,
    /// Directory of published lmbench-*.csv / flops-*.csv to show beside this run.
    #[arg(long)]
    published: Option<PathBuf>,
    /// Also print % deltas of this run against the run with this label.
    #[arg(long)]
    baseline: Option<String>,
    /// Write the --json document to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Read a previously written --json document instead of running the suite.
    #[arg(long)]
    load: Option<PathBuf>,
}

fn main() -> anyhow_free::Result {
    scalelab_micro::helper::serve_if_helper();
    let args = Args::parse();
    let report = match &args.load {
        Some(p) => serde_json::from_str::<MicroReport>(&std::fs::read_to_string(p)?)?,
        None => {
            let only = args.only.as_deref().map(Group::parse_list).transpose()?;
            let opts = SuiteOptions { quick: args.quick, only, ..SuiteOptions::default() };
            let t0 = std::time::Instant::now();
            let run = run_suite(&opts, &mut |r| {
                let v = r
                    .median
                    .map(|m| format!("{} {}", scalelab_micro::fmt_num(m), r.unit))
                    .unwrap_or_else(|| format!("unavailable: {}", r.unavailable.clone().unwrap_or_default()));
                eprintln!("{:6.2}s  {:<24} {v}", t0.elapsed().as_secs_f64(), r.id);
            })?;
            let env = scalelab_core::Environment {
                kernel: kernel_release(),
                scalelab_version: scalelab_core::VERSION.into(),
                ..Default::default()
            };
            MicroReport::new(&args.label, env, &run)
        }
    };
    if let Some(p) = &args.json {
        std::fs::write(p, serde_json::to_string_pretty(&report)?)?;
    }
    let mut ours = report.to_labelled();
    ours.os = Some("Linux".into());
    let mut runs: Vec<LabelledRun> = vec![ours];
    if let Some(dir) = &args.published {
        runs.extend(load_published_dir(dir)?);
    }
    println!("{}", render_tables(&summary_tables(&runs)));
    if let Some(b) = &args.baseline {
        let pair: Vec<LabelledRun> = runs.iter().filter(|r| r.label == *b || r.label == args.label).cloned().collect();
        println!("{}", render_comparison(&compare(&pair, b)?));
    }
    for w in &report.warnings {
        println!("warning: {w}");
    }
    println!("suite wall time: {:.1} s", report.wall_s);
    Ok(())
}

fn kernel_release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_string())
}

/// `main` returns any error boxed; enough for an example.
mod anyhow_free {
    pub type Result = std::result::Result<(), Box<dyn std::error::Error>>;
}
