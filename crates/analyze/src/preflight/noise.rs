//! `machine.noise`: how much this machine's results move from one run to
//! the next, estimated before the load, so a reader knows which
//! differences it can see at all.
//!
//! The estimate ±x % is the larger of
//! - the coefficient of variation (sd / mean) of a fixed CPU loop timed
//!   again and again on the calling thread: the same work, so its spread
//!   is what preemption, interrupts, frequency changes and other work cost
//!   from one moment to the next; and
//! - the steal over those repeats (% of all CPU time elapsed): cycles the
//!   hypervisor gave to another guest;
//!
//! rounded up to the next 0.5 % (at least 0.5 %). The load (1 min) and CPU
//! pressure (some, avg10) are not turned into a percentage (they measure
//! demand, not spread, and lag by up to a minute), but when they show other
//! work (the thresholds of `cpu.load`) the figure says the loop may have
//! caught a quiet moment. Below 2 % the check is ok; from 2 % it is still
//! ok with a note (more than a quiet machine's); from 5 % it warns.
//! docs/preflight.md says what the figure cannot see.

use super::check::{ok, other_work, unavailable, warn};
use scalelab_core::preflight::{Check, PreflightFacts, Reading};

/// Below this the machine is quiet (a plain ok).
pub const NOTE_PCT: f64 = 2.0;
/// From this the check warns.
pub const WARN_PCT: f64 = 5.0;

const ID: &str = "machine.noise";
const WHY: &str = "a difference between two runs smaller than about twice the machine's own run-to-run noise cannot be told from that noise: the same fixed CPU work timed here again and again varied this much";
const FIX: &str = "stop other work on the machine (builds, backups, other benchmarks), run on dedicated cores (a dedicated host or instance, or `taskset`/isolated CPUs for client and server), and compare with `--repeats N` or `--versus`, whose intervals account for the spread";

/// The loop's repeats: how many, their median (µs) and their coefficient
/// of variation (sample sd / mean, %).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoopSpread {
    pub repeats: usize,
    pub median_us: f64,
    pub cv_pct: f64,
}

/// The spread of the loop's times, or why there is none.
pub fn spread(loop_us: &[f64]) -> Reading<LoopSpread> {
    let n = loop_us.len();
    if n < 2 {
        return Err(format!("{n} repeat(s) of the CPU loop: a spread needs at least 2"));
    }
    let mean = loop_us.iter().sum::<f64>() / n as f64;
    if !(mean.is_finite() && mean > 0.0) {
        return Err(format!("the CPU loop's mean time is {mean} µs"));
    }
    let var = loop_us.iter().map(|t| (t - mean) * (t - mean)).sum::<f64>() / (n - 1) as f64;
    let mut sorted = loop_us.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median_us = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    Ok(LoopSpread { repeats: n, median_us, cv_pct: var.sqrt() / mean * 100.0 })
}

/// Steal over the loop, % of all CPU time that elapsed meanwhile, and
/// that time in ticks.
fn steal_pct(ticks: &Reading<(u64, u64)>) -> Reading<(f64, u64)> {
    match ticks {
        Ok((_, 0)) => Err("no CPU tick elapsed".into()),
        Ok((steal, total)) => Ok((*steal as f64 * 100.0 / *total as f64, *total)),
        Err(e) => Err(e.clone()),
    }
}

/// The estimate ±x % (see the module): `None` when the loop was not
/// measured. What the run's environment keeps as `noise_pct`.
pub fn noise_pct(f: &PreflightFacts) -> Option<f64> {
    let sample = f.noise.as_ref().ok()?;
    let cv = spread(&sample.loop_us).ok()?.cv_pct;
    // Steal unread adds nothing: the loop's own spread still stands.
    let steal = steal_pct(&sample.steal_ticks).map_or(0.0, |(pct, _)| pct);
    Some(round_up_half(cv.max(steal)))
}

/// Up to the next multiple of 0.5, at least 0.5.
fn round_up_half(v: f64) -> f64 {
    ((v * 2.0).ceil() / 2.0).max(0.5)
}

/// A percentage as people write it: "2", "2.5".
fn pct(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The sentence every run prints at its start.
pub fn sentence(x: f64) -> String {
    format!("this machine's run-to-run noise is about ±{} %: differences smaller than ~{} % will not be seen", pct(x), pct(2.0 * x))
}

/// The `machine.noise` check.
pub fn check(f: &PreflightFacts) -> Check {
    let sample = match &f.noise {
        Ok(s) => s,
        Err(e) => return unavailable(ID, e, WHY),
    };
    let loop_spread = match spread(&sample.loop_us) {
        Ok(s) => s,
        Err(e) => return unavailable(ID, &e, WHY),
    };
    let x = noise_pct(f).expect("the loop has a spread");
    let mut parts =
        vec![format!("CPU loop {:.2} ms × {}: CV {:.1} %", loop_spread.median_us / 1000.0, loop_spread.repeats, loop_spread.cv_pct)];
    parts.push(match steal_pct(&sample.steal_ticks) {
        Ok((pct, ticks)) => format!("steal {pct:.1} % of {ticks} ticks"),
        Err(e) => format!("steal unavailable ({e})"),
    });
    let cpus = f.logical_cpus.as_ref().copied().unwrap_or(1).max(1);
    parts.push(match &f.load1 {
        Ok(l) => format!("load {:.2} per CPU (1 min)", l / f64::from(cpus)),
        Err(_) => "load unavailable".into(),
    });
    parts.push(match &f.cpu_pressure {
        Ok(p) => format!("CPU pressure {p:.1} % (some, avg10)"),
        Err(_) => "CPU pressure unavailable".into(),
    });
    let mut figure = format!("{} ({})", sentence(x), parts.join("; "));
    if other_work(f) {
        figure.push_str("; other work ran lately (cpu.load): the loop may have caught a quiet moment, the noise may be larger");
    }
    if x >= WARN_PCT {
        warn(ID, figure, WHY, FIX)
    } else {
        if x >= NOTE_PCT {
            figure.push_str(&format!("; note: more than a quiet machine's ±{} %", pct(NOTE_PCT)));
        }
        ok(ID, figure, WHY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::preflight::{CheckStatus, NoiseSample};

    /// Facts with nothing read but the CPUs, the load, the pressure and the loop.
    fn facts(loop_us: Vec<f64>, steal_ticks: Reading<(u64, u64)>, load1: f64, psi: Reading<f64>) -> PreflightFacts {
        fn no<T>() -> Reading<T> {
            Err("not read in this test".into())
        }
        PreflightFacts {
            logical_cpus: Ok(4),
            governors: no(),
            boost: no(),
            smt: no(),
            thp: no(),
            swap_kib: no(),
            steal_ticks: no(),
            load1: Ok(load1),
            cpu_pressure: psi,
            server_cpus: no(),
            client_nofile: no(),
            server_nofile: no(),
            somaxconn: no(),
            listen_backlog: no(),
            port_range: no(),
            tcp_tw_reuse: no(),
            conntrack: no(),
            route: no(),
            nic: no(),
            workers: no(),
            db: no(),
            server_version: no(),
            noise: Ok(NoiseSample { loop_us, steal_ticks }),
        }
    }

    /// 40 repeats alternating `base ± d`: sd ≈ d, so CV ≈ d / base.
    fn alternating(base: f64, d: f64) -> Vec<f64> {
        (0..40).map(|i| if i % 2 == 0 { base - d } else { base + d }).collect()
    }

    #[test]
    fn the_spread_is_the_sample_cv_and_the_median() {
        let s = spread(&[1000.0, 1100.0, 900.0, 1000.0]).unwrap();
        assert_eq!((s.repeats, s.median_us), (4, 1000.0));
        // sd = sqrt(20000 / 3) = 81.65 on a mean of 1000.
        assert!((s.cv_pct - 8.165).abs() < 0.001, "{s:?}");
        assert!(spread(&[1000.0]).unwrap_err().contains("at least 2"));
    }

    #[test]
    fn a_quiet_machine_is_ok_with_a_small_figure() {
        // CV 0.6 %, no steal, an idle load: ±1 %, so ~2 % is the smallest difference seen.
        let f = facts(alternating(3000.0, 18.0), Ok((0, 120)), 0.2, Ok(0.0));
        assert_eq!(noise_pct(&f), Some(1.0));
        let c = check(&f);
        assert_eq!(c.status, CheckStatus::Ok, "{c:?}");
        assert_eq!(
            c.figure,
            "this machine's run-to-run noise is about ±1 %: differences smaller than ~2 % will not be seen \
             (CPU loop 3.00 ms × 40: CV 0.6 %; steal 0.0 % of 120 ticks; load 0.05 per CPU (1 min); CPU pressure 0.0 % (some, avg10))"
        );
        assert!(c.fix.is_empty());
    }

    #[test]
    fn between_2_and_5_percent_is_ok_with_a_note() {
        let f = facts(alternating(3000.0, 90.0), Ok((0, 120)), 0.2, Err("no PSI".into()));
        assert_eq!(noise_pct(&f), Some(3.5), "CV 3.04 % rounds up to 3.5");
        let c = check(&f);
        assert_eq!(c.status, CheckStatus::Ok);
        assert!(c.figure.starts_with("this machine's run-to-run noise is about ±3.5 %: differences smaller than ~7 % will not be seen"));
        assert!(c.figure.contains("CPU pressure unavailable"), "missing is shown as missing: {}", c.figure);
        assert!(c.figure.ends_with("; note: more than a quiet machine's ±2 %"), "{}", c.figure);
    }

    #[test]
    fn a_noisy_machine_with_steal_warns_with_the_fix() {
        // The loop alone varies 1 %, but 9 of 100 ticks were stolen: ±9 %.
        let f = facts(alternating(3000.0, 30.0), Ok((9, 100)), 3.0, Ok(25.0));
        assert_eq!(noise_pct(&f), Some(9.0));
        let c = check(&f);
        assert_eq!(c.status, CheckStatus::Warn, "{c:?}");
        assert!(
            c.figure.starts_with("this machine's run-to-run noise is about ±9 %: differences smaller than ~18 % will not be seen (CPU loop 3.00 ms × 40: CV 1.0 %; steal 9.0 % of 100 ticks; load 0.75 per CPU (1 min); CPU pressure 25.0 % (some, avg10))"),
            "{}",
            c.figure
        );
        assert!(c.figure.contains("the loop may have caught a quiet moment"), "the busy load is said: {}", c.figure);
        assert!(c.fix.contains("--repeats") && c.fix.contains("--versus") && c.fix.contains("dedicated cores"), "{}", c.fix);
        // A loop preempted now and then (one repeat in four takes twice as long) warns on its own.
        let preempted: Vec<f64> = (0..40).map(|i| if i % 4 == 0 { 6000.0 } else { 3000.0 }).collect();
        let f = facts(preempted, Ok((0, 100)), 0.1, Ok(0.0));
        assert_eq!(check(&f).status, CheckStatus::Warn);
        assert_eq!(noise_pct(&f), Some(35.5), "CV 35.1 %");
    }

    #[test]
    fn missing_steal_is_said_and_an_unmeasured_loop_is_unavailable() {
        let f = facts(alternating(3000.0, 18.0), Err("cannot read /x/proc/stat: No such file".into()), 0.2, Ok(0.0));
        assert_eq!(noise_pct(&f), Some(1.0), "the loop alone");
        assert!(check(&f).figure.contains("steal unavailable (cannot read /x/proc/stat: No such file)"));
        let mut f = f;
        f.noise = Err("not measured".into());
        assert_eq!(noise_pct(&f), None);
        let c = check(&f);
        assert_eq!((c.status, c.figure.as_str()), (CheckStatus::Unavailable, "not measured"));
    }
}
