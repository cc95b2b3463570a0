//! `scalelab profile`'s text: a step's hottest frames, own functions, lock
//! call sites and stacks; and what grew between two steps.

use scalelab_analyze::profile::{lock_sites, spin_sites, top_own, top_self, top_stacks, FrameShare, Growth};
use scalelab_core::sample::{ProfileSample, StackProfile};
use std::fmt::Write;

fn pct(x: f64) -> String {
    format!("{:5.1} %", 100.0 * x)
}

fn rows(out: &mut String, title: &str, unit: &str, rows: &[FrameShare]) {
    let _ = writeln!(out, "{title}");
    if rows.is_empty() {
        let _ = writeln!(out, "  (none)");
    }
    for r in rows {
        let value = match unit {
            "ms" => format!("{:.1} ms", r.value as f64 / 1e6),
            // "1 sample", "2 samples": the unit is given in the plural.
            _ if r.value == 1 => format!("1 {}", unit.strip_suffix('s').unwrap_or(unit)),
            _ => format!("{} {unit}", r.value),
        };
        let _ = writeln!(out, "  {}  {value:>12}  {}", pct(r.share), r.frame);
    }
}

fn header(out: &mut String, what: &str, p: &StackProfile) {
    let _ = writeln!(
        out,
        "{what}: {:.2} s over {} threads, {} unwinding{}{}{}",
        p.duration_ns as f64 / 1e9,
        p.threads,
        p.unwind,
        if p.rate_hz > 0 { format!(", {} Hz", p.rate_hz) } else { String::new() },
        if p.sampled_every > 1 { format!(", 1 in {} switches sampled", p.sampled_every) } else { String::new() },
        if p.lost > 0 { format!(", {} events lost", p.lost) } else { String::new() }
    );
}

/// Stacks cut to their last frames, the end a reader looks at.
fn short(mut rows: Vec<FrameShare>) -> Vec<FrameShare> {
    const KEEP: usize = 8;
    for r in &mut rows {
        let frames: Vec<&str> = r.frame.split(';').collect();
        if frames.len() > KEEP {
            r.frame = format!("…;{}", frames[frames.len() - KEEP..].join(";"));
        }
    }
    rows
}

/// A step's profile as text: on-CPU (self frames, own functions, spin
/// sites, stacks), or with `off_cpu` the off-CPU side (lock call sites,
/// where threads slept).
pub fn step_text(label: &str, p: &ProfileSample, off_cpu: bool, top: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{label}");
    if off_cpu {
        let Some(off) = &p.off_cpu else {
            let _ = writeln!(out, "no off-CPU stacks for this step (see `unavailable` in `scalelab show`)");
            return out;
        };
        header(&mut out, "off-CPU", off);
        let sites = lock_sites(off, top);
        let _ = writeln!(out, "lock call sites (futex waits and database lock sleeps; share of the server's thread time)");
        if sites.is_empty() {
            let _ = writeln!(out, "  (none)");
        }
        for s in &sites {
            let _ = writeln!(
                out,
                "  {}  {:>10.1} ms  {:>8.0} waits/s  {} -> {}",
                pct(s.thread_share),
                s.wait_ns as f64 / 1e6,
                s.waits_per_s,
                s.site,
                s.via
            );
        }
        rows(&mut out, "where threads slept (the server's own code)", "ms", &top_own(off, top));
        rows(&mut out, "off-CPU stacks (leaf end)", "ms", &short(top_stacks(off, top.min(5))));
        return out;
    }
    let Some(on) = &p.on_cpu else {
        let _ = writeln!(out, "no on-CPU stacks for this step (see `unavailable` in `scalelab show`)");
        return out;
    };
    header(&mut out, "on-CPU", on);
    rows(&mut out, "hottest frames (self, user and kernel)", "samples", &top_self(on, top));
    rows(&mut out, "hottest functions of the server's own code", "samples", &top_own(on, top));
    let spin = spin_sites(on, top);
    if !spin.is_empty() {
        rows(&mut out, "busy-waiting functions (spin loops, yields)", "samples", &spin);
    }
    rows(&mut out, "hottest stacks (leaf end)", "samples", &short(top_stacks(on, top.min(5))));
    out
}

/// What grew from step `a` to step `b` (inclusive share of each profile).
pub fn diff_text(a: &str, b: &str, what: &str, growth: &[Growth]) -> String {
    let mut out = format!("{what}: what grew from {a} to {b} (the server's own functions, share of each step's {what} total)\n");
    // Columns as wide as their heading ("50 clients", "window 12") or a share.
    let (wa, wb) = (a.chars().count().max(7), b.chars().count().max(7));
    let _ = writeln!(out, "  {a:>wa$}  {b:>wb$}  {:>10}  function", "change");
    for g in growth {
        let _ = writeln!(out, "  {:>wa$}  {:>wb$}  {:>+7.1} pp  {}", pct(g.share_a), pct(g.share_b), 100.0 * g.delta, g.frame);
    }
    out
}

/// A profile's stacks as folded text, one `frame;frame;... value` line per
/// stack (Brendan Gregg's format, which flamegraph.pl, inferno and
/// speedscope read), highest value first. Frame names come from the
/// server's binaries: control characters are escaped so a line stays a line.
pub fn folded(p: &StackProfile) -> String {
    let mut out = String::new();
    for s in &p.stacks {
        let _ = writeln!(out, "{} {}", scalelab_core::escape_control(&s.stack), s.value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_is_singular() {
        let share = |value| FrameShare { frame: "f".into(), value, share: 0.5 };
        let mut out = String::new();
        rows(&mut out, "t", "samples", &[share(1), share(2)]);
        assert!(out.contains(" 1 sample  ") && out.contains(" 2 samples  "), "{out}");
    }
}
