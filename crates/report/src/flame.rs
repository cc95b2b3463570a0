//! Flame graphs of `--profile`'s stacks, drawn by `inferno` (no network):
//! one per step (on-CPU, and off-CPU when taken), and a differential one
//! from the first step to the knee (red: grew, blue: shrank). Each is a
//! self-contained interactive SVG (click to zoom, Ctrl-F or "Search" to
//! highlight a function), put in the page as an iframe's `srcdoc` so the
//! graphs' scripts and ids do not meet.

use crate::fmt::clients;
use crate::model::ReportRun;
use scalelab_core::sample::StackProfile;
use std::fmt::Write;

fn folded(p: &StackProfile) -> String {
    p.stacks.iter().map(|s| format!("{} {}\n", s.stack, s.value)).collect()
}

fn options(title: &str, count_name: &str) -> inferno::flamegraph::Options<'static> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = title.to_string();
    o.count_name = count_name.to_string();
    o.min_width = 0.05;
    o
}

/// One profile as a flame graph SVG; `unit` names the values (samples, ns).
pub fn flame_svg(title: &str, p: &StackProfile, unit: &str) -> Result<String, String> {
    let text = folded(p);
    if text.is_empty() {
        return Err("no stacks were sampled".into());
    }
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options(title, unit), text.lines(), &mut out).map_err(|e| e.to_string())?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

/// What grew from `a` to `b`: `b`'s stacks, coloured by the change
/// (`a` scaled to `b`'s total first, so steps of different length compare).
pub fn diff_svg(title: &str, a: &StackProfile, b: &StackProfile, unit: &str) -> Result<String, String> {
    let (fa, fb) = (folded(a), folded(b));
    if fa.is_empty() || fb.is_empty() {
        return Err("a step has no stacks".into());
    }
    let mut lines = Vec::new();
    let diff_opts = inferno::differential::Options { normalize: true, ..Default::default() };
    inferno::differential::from_readers(diff_opts, fa.as_bytes(), fb.as_bytes(), &mut lines).map_err(|e| e.to_string())?;
    let lines = String::from_utf8(lines).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options(title, unit), lines.lines(), &mut out).map_err(|e| e.to_string())?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

fn frame(out: &mut String, svg: Result<String, String>) {
    match svg {
        Ok(svg) => {
            let _ = write!(
                out,
                r#"<iframe class="flame" style="width:100%;height:520px;border:0" srcdoc="{}"></iframe>"#,
                crate::svg::esc(&svg)
            );
        }
        Err(why) => {
            let _ = write!(out, r#"<p class="unavailable">unavailable: {}</p>"#, crate::svg::esc(&why));
        }
    }
}

/// The profiles of a run: a flame graph per step, and the differential
/// graph from the first step to the knee. Nothing for a run without profiles.
pub fn profiles_html(out: &mut String, r: &ReportRun) {
    let run = &r.run;
    if run.samples.profile.is_empty() {
        return;
    }
    let _ = write!(out, "<h3>{}</h3>", crate::svg::esc(&r.name));
    // A watch: its windows as one, the whole watch (`scalelab profile RUN --step N` has each).
    if run.kind == scalelab_core::RunKind::Watch {
        let whole = scalelab_core::sample::ProfileSample::merged(&run.samples.profile).expect("not empty");
        let n = run.samples.profile.len();
        for (what, prof, unit) in [("on-CPU", &whole.on_cpu, "samples"), ("off-CPU", &whole.off_cpu, "ns")] {
            let Some(prof) = prof else { continue };
            let title = format!("{what} over the whole watch ({n} window(s))");
            let _ = write!(out, "<h4>{}</h4>", crate::svg::esc(&title));
            frame(out, flame_svg(&title, prof, unit));
        }
        return;
    }
    let concurrency = |step: usize| run.steps.get(step).map_or(0, |s| s.concurrency);
    let knee = r.diagnosis.curve.as_ref().map(|c| c.knee_concurrency);
    let first = run.samples.profile.iter().min_by_key(|p| p.step);
    let at_knee = run.samples.profile.iter().find(|p| Some(concurrency(p.step)) == knee);
    if let (Some(a), Some(b)) = (first, at_knee) {
        if a.step != b.step {
            for (what, pa, pb, unit) in [("on-CPU", &a.on_cpu, &b.on_cpu, "samples"), ("off-CPU", &a.off_cpu, &b.off_cpu, "ns")] {
                if let (Some(x), Some(y)) = (pa, pb) {
                    let title =
                        format!("{what}: what grew from {} to the knee at {}", clients(concurrency(a.step)), clients(concurrency(b.step)));
                    let _ = write!(out, "<h4>{}</h4>", crate::svg::esc(&title));
                    frame(out, diff_svg(&title, x, y, unit));
                }
            }
        }
    }
    let mut steps: Vec<_> = run.samples.profile.iter().collect();
    steps.sort_by_key(|p| p.step);
    for p in steps {
        for (what, prof, unit) in [("on-CPU", &p.on_cpu, "samples"), ("off-CPU", &p.off_cpu, "ns")] {
            let Some(prof) = prof else { continue };
            let title = format!("{what} at {} (step {})", clients(concurrency(p.step)), p.step + 1);
            let _ = write!(out, "<h4>{}</h4>", crate::svg::esc(&title));
            frame(out, flame_svg(&title, prof, unit));
        }
    }
}
