//! What to profile and how: rates, off-CPU sampling, stack sizes, and the
//! `SCALELAB_PROFILE_*` settings that change them (docs/profiles.md, Cost).

use std::path::PathBuf;

/// What to profile.
#[derive(Clone, Debug)]
pub struct ProfileConfig {
    /// The server process; its descendants are profiled with it.
    pub pid: u32,
    /// On-CPU samples per second per CPU.
    pub rate_hz: u32,
    /// On-CPU capture at the start of each sweep window, at most this long,
    /// s (infinite: the whole window; a watch's windows are always whole).
    /// Sampling costs the server and the client a few percent while it
    /// runs (docs/profiles.md, Cost): a bound keeps the step's figures.
    pub on_cpu_s: f64,
    /// Off-CPU capture at the start of each window, at most this long (0:
    /// none; infinite: the whole window).
    pub off_cpu_s: f64,
    /// Off-CPU capture: this share of each window (at least 1 s, at most
    /// `off_cpu_s`). Every context switch of the server costs it while the
    /// capture runs (docs/profiles.md, Cost): a share bounds what the step pays.
    pub off_cpu_share: f64,
    /// The step windows' length, s, when known (a sweep); a watch's windows
    /// are `watch_window_s`.
    pub window_s: Option<f64>,
    /// Bytes of user stack copied with each off-CPU sample for DWARF
    /// unwinding (perf's default is 8192); 0: frame pointers.
    pub off_cpu_stack: u32,
    /// Off-CPU: one context switch in this many is sampled with its stack
    /// (perf's `-c`); the sleeps found are scaled by it. 0: chosen per step
    /// from the server's switch rate in the warm-up, for about
    /// `off_cpu_stacks_per_s` stacks a second.
    pub off_cpu_every: u32,
    pub off_cpu_stacks_per_s: u32,
    /// Off-CPU on the server's threads (`-p`) even where every CPU may be
    /// captured with a kernel filter, the cheaper way (`SCALELAB_PROFILE_OFF_CPU_PER_THREAD=1`).
    pub off_cpu_per_thread: bool,
    /// Nice value perf runs at (0: the caller's).
    pub nice: i32,
    /// `watch --profile`: the length of each profiled window, s.
    pub watch_window_s: f64,
    /// The perf binary (`perf`, or `SCALELAB_PERF`).
    pub perf: PathBuf,
}

impl ProfileConfig {
    /// 99 Hz over the first 5 s of each sweep window, off-CPU over its first second with about 200
    /// switches a second sampled with 8 KiB of stack (~80 µs each; every
    /// switch of the server costs it ~1.3 µs while the capture runs, 3 to 8 %
    /// of PostgreSQL's throughput at 10 clients), `perf` from `SCALELAB_PERF`
    /// or the PATH; `SCALELAB_PROFILE_HZ`, `SCALELAB_PROFILE_OFF_CPU_S`,
    /// `SCALELAB_PROFILE_ON_CPU_S`, `SCALELAB_PROFILE_OFF_CPU_SHARE`, `SCALELAB_PROFILE_OFF_CPU_STACK` and
    /// `SCALELAB_PROFILE_NICE` change the defaults (docs/profiles.md, Cost).
    pub fn new(pid: u32) -> ProfileConfig {
        let perf = std::env::var_os("SCALELAB_PERF").map_or_else(|| PathBuf::from("perf"), PathBuf::from);
        let mut c = ProfileConfig {
            pid,
            rate_hz: 99,
            on_cpu_s: 5.0,
            off_cpu_s: 1.0,
            off_cpu_share: 0.2,
            window_s: None,
            off_cpu_stack: 8192,
            off_cpu_every: 0,
            off_cpu_stacks_per_s: 200,
            off_cpu_per_thread: false,
            nice: 0,
            watch_window_s: 10.0,
            perf,
        };
        let env = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string());
        if let Some(v) = env("SCALELAB_PROFILE_HZ").and_then(|v| v.parse().ok()) {
            c.rate_hz = v;
        }
        if let Some(v) = env("SCALELAB_PROFILE_ON_CPU_S").and_then(|v| v.parse::<f64>().ok()).filter(|v| *v > 0.0) {
            c.on_cpu_s = v;
        }
        if let Some(v) = env("SCALELAB_PROFILE_OFF_CPU_S").and_then(|v| v.parse().ok()) {
            c.off_cpu_s = v;
        }
        if let Some(v) = env("SCALELAB_PROFILE_OFF_CPU_SHARE").and_then(|v| v.parse::<f64>().ok()).filter(|v| *v > 0.0 && *v <= 1.0) {
            c.off_cpu_share = v;
        }
        if let Some(v) = env("SCALELAB_PROFILE_OFF_CPU_STACK").and_then(|v| v.parse::<u32>().ok()) {
            c.off_cpu_stack = v / 8 * 8;
        }
        if let Some(v) = env("SCALELAB_PROFILE_OFF_CPU_EVERY").and_then(|v| v.parse::<u32>().ok()) {
            c.off_cpu_every = v;
        }
        if let Some(v) = env("SCALELAB_PROFILE_OFF_CPU_STACKS_PER_S").and_then(|v| v.parse::<u32>().ok()) {
            c.off_cpu_stacks_per_s = v.max(1);
        }
        c.off_cpu_per_thread = env("SCALELAB_PROFILE_OFF_CPU_PER_THREAD").is_some_and(|v| v == "1");
        if let Some(v) = env("SCALELAB_PROFILE_WATCH_WINDOW_S").and_then(|v| v.parse::<f64>().ok()).filter(|v| *v >= 0.5 && v.is_finite()) {
            c.watch_window_s = v;
        }
        if let Some(v) = env("SCALELAB_PROFILE_NICE").and_then(|v| v.parse().ok()) {
            c.nice = v;
        }
        c
    }

    /// How long each window's off-CPU capture runs, s: `off_cpu_share` of the
    /// window, at least 1 s (enough sleeps for a lock's share), at most
    /// `off_cpu_s` (by default 1 s: the first second); infinite for the whole window.
    pub fn off_cpu_planned_s(&self) -> f64 {
        if !self.off_cpu_s.is_finite() {
            return f64::INFINITY;
        }
        let window = self.window_s.unwrap_or(self.watch_window_s);
        (window * self.off_cpu_share).max(self.off_cpu_s.min(1.0)).min(self.off_cpu_s).max(0.0)
    }

    /// How long each window's on-CPU capture runs, s: `on_cpu_s` of a sweep's
    /// window (the window's end stops it first), a watch's whole window.
    pub fn on_cpu_planned_s(&self) -> f64 {
        if self.window_s.is_some() {
            self.on_cpu_s
        } else {
            f64::INFINITY
        }
    }

    /// perf's `--call-graph` for off-CPU samples, given the unwinding that
    /// works, and the unwinding's name.
    pub(super) fn off_cpu_call_graph(&self, unwind: &'static str) -> (String, &'static str) {
        match (unwind, self.off_cpu_stack) {
            ("dwarf", 0) => ("fp".to_string(), "fp"),
            ("dwarf", n) => (format!("dwarf,{n}"), "dwarf"),
            (u, _) => (u.to_string(), u),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_cpu_runs_the_first_second_unless_asked_for_more() {
        let mut c = ProfileConfig::new(1);
        (c.off_cpu_s, c.off_cpu_share, c.window_s) = (1.0, 0.2, Some(20.0));
        assert_eq!(c.off_cpu_planned_s(), 1.0, "default: the first second of a 20 s window");
        c.window_s = Some(0.5);
        assert_eq!(c.off_cpu_planned_s(), 1.0, "at least 1 s (the window's end stops it first)");
        (c.off_cpu_s, c.window_s) = (5.0, Some(20.0));
        assert_eq!(c.off_cpu_planned_s(), 4.0, "SCALELAB_PROFILE_OFF_CPU_S=5: a fifth of the window, up to 5 s");
        c.window_s = Some(60.0);
        assert_eq!(c.off_cpu_planned_s(), 5.0);
        c.off_cpu_s = 0.0;
        assert_eq!(c.off_cpu_planned_s(), 0.0, "none");
        c.off_cpu_s = f64::INFINITY;
        assert!(c.off_cpu_planned_s().is_infinite(), "the whole window");
    }

    #[test]
    fn on_cpu_runs_the_first_seconds_of_a_sweep_window_and_a_whole_watch_window() {
        let mut c = ProfileConfig::new(1);
        (c.on_cpu_s, c.window_s) = (5.0, Some(20.0));
        assert_eq!(c.on_cpu_planned_s(), 5.0);
        c.window_s = None;
        assert!(c.on_cpu_planned_s().is_infinite(), "a watch's windows are profiled whole");
    }
}
