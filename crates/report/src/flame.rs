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

/// A flame graph in its own frame (its script and ids kept apart from the
/// page's), as wide as the page and as tall as the graph. inferno's "fluid"
/// graph drops its width to fit its parent; a frame's `srcdoc` is an HTML
/// document, where an `<svg>` without a width is 300 px (the replaced
/// element's default), so the document says the graph fills the frame.
fn frame(out: &mut String, svg: Result<String, String>) {
    match svg {
        Ok(svg) => {
            let body = svg.find("<svg").map_or(svg.as_str(), |i| &svg[i..]);
            let height = svg_height(body).map_or(520, |h| h.ceil() as u32 + 4);
            let doc = format!(
                "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html,body{{margin:0}}svg{{display:block;width:100%}}</style></head><body>{body}</body></html>"
            );
            let _ = write!(
                out,
                r#"<iframe class="flame" style="display:block;width:100%;height:{height}px;border:0" srcdoc="{}"></iframe>"#,
                crate::svg::esc(&doc)
            );
        }
        Err(why) => {
            let _ = write!(out, r#"<p class="unavailable">unavailable: {}</p>"#, crate::svg::esc(&why));
        }
    }
}

/// The `height` of the first `<svg ...>` tag, in px.
fn svg_height(svg: &str) -> Option<f64> {
    let tag = &svg[..svg.find('>')?];
    let at = tag.find(" height=\"")? + " height=\"".len();
    tag[at..].split('"').next()?.parse().ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flame_graph_frame_fills_the_page_and_is_as_tall_as_its_graph() {
        assert_eq!(svg_height(r#"<svg version="1.1" width="1200" height="758" onload="init(evt)">"#), Some(758.0));
        assert_eq!(svg_height("<svg>"), None);
        let mut out = String::new();
        frame(&mut out, Ok(r#"<?xml version="1.0"?><!DOCTYPE svg><svg height="300"><text>a&lt;b</text></svg>"#.into()));
        assert!(out.contains("width:100%;height:304px"), "{out}");
        // The document inside: HTML whose graph is as wide as the frame, the prolog gone.
        assert!(out.contains("svg{display:block;width:100%}") && !out.contains("?xml"), "{out}");
        assert!(!out.contains("<svg"), "the document is an escaped attribute: {out}");
    }
}
