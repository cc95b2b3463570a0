//! A loaded run's step telemetry, derived from the samples it carries.

use super::{summarize_db, summarize_specimen, summarize_window};
use scalelab_core::{Run, RunSamples, Source, Target, TargetKind};

/// Fills each measured step's `telemetry` from the run's samples and probe
/// notes ([`Run::samples`], [`Run::notes`]): the window's system, server and
/// thread figures; the specimen's own counters when the target is the
/// specimen; the database's figures when a database probe ran. A run with
/// no system sample (imported, micro, or recorded without telemetry) is left
/// as it is, and so are imported and zero-length steps.
///
/// Every probe note goes under each step's `unavailable` (a figure's own
/// reason, set first, wins). The database probe's note (a lost connection)
/// says more than "no reading", so it stays on the steps it concerns; a step
/// the probe outlived (a reading after its window) keeps its figures without it.
pub fn derive(run: &mut Run) {
    let Run { samples, notes, steps, plan, .. } = run;
    let RunSamples { system, process, threads, db, specimen, .. } = samples;
    if system.is_empty() {
        return;
    }
    let is_specimen = Target::parse(&plan.target).is_ok_and(|t| t.kind() == TargetKind::Specimen);
    let last_db = db.iter().map(|s| s.unix_ms).max().unwrap_or(i64::MIN);
    for step in steps.iter_mut() {
        if step.published_throughput_per_s.is_some() || step.window_s <= 0.0 {
            continue;
        }
        let (start, end) = (step.window_start_unix_ms, step.window_end_unix_ms);
        let mut t = summarize_window(system, process, threads, start, end, step.requests);
        if is_specimen {
            t.specimen = summarize_specimen(specimen, start, end);
            if t.specimen.is_none() {
                t.unavailable
                    .insert(Source::Specimen.key().into(), "fewer than two readings of the specimen's /__stats in the window".into());
            }
        }
        for (source, why) in notes.iter() {
            t.unavailable.entry(source.clone()).or_insert_with(|| why.clone());
        }
        if !db.is_empty() {
            match summarize_db(db, start, end) {
                Ok(d) => {
                    if last_db >= end {
                        t.unavailable.remove(Source::Db.key());
                    }
                    t.db = Some(d);
                }
                Err(why) => {
                    t.unavailable.entry(Source::Db.key().into()).or_insert(why);
                }
            }
        }
        step.telemetry = Some(t);
    }
}
