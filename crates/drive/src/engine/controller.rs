//! The calling thread's part of a step: it starts the load once every
//! client is connected, reports progress, reads the client's CPU time at the
//! window's edges, and moves the window's end when a stop is asked for.

use super::state::{Gate, Gates, Shared};
use crate::cpu;
use scalelab_core::LatencyHistogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use scalelab_core::LiveTick;

/// The window as it ran, for the step's result.
pub(super) struct Window {
    /// The client's CPU time when the window began (None: it never began).
    pub(super) cpu_start: Option<f64>,
    pub(super) cpu_end: f64,
    pub(super) start_unix_ms: i64,
    pub(super) end_unix_ms: i64,
    /// Length of the window, s (shorter than planned when stopped).
    pub(super) window_s: f64,
    /// Stopped by a signal before the planned end.
    pub(super) partial: bool,
}

/// How far ahead of now a held warm-up's end is kept.
const HOLD_LEAD: Duration = Duration::from_millis(200);

/// Waits for every worker to connect, sets the deadlines (warm-up, then
/// window), lets the workers go, and runs until the window's end; None
/// when a worker broke the gates before the load began. A worker that
/// breaks them later ends the window at once. `live`
/// gets a tick about every 250 ms; `sec_rx` brings each finished second's
/// histogram for the live percentiles. While `hold` is set the warm-up
/// does not end (for at most [`MAX_WARMUP_HOLD`](super::MAX_WARMUP_HOLD)
/// past its planned end): the window and its end move later.
#[allow(clippy::too_many_arguments)]
pub(super) fn control(
    shared: &Shared,
    warmup: Duration,
    window: Duration,
    gates: &Gates,
    stop: &AtomicBool,
    hold: Option<&AtomicBool>,
    sec_rx: &mpsc::Receiver<(u32, LatencyHistogram)>,
    live: &mut dyn FnMut(&LiveTick),
) -> Option<Window> {
    gates.wait(Gate::Connected).ok()?;
    let load_start = Instant::now();
    shared.set_warm_end(load_start + warmup);
    shared.set_window_end(load_start + warmup + window);
    gates.wait(Gate::Go).ok()?;

    let mut cpu_start = None;
    let mut window_start_wall = None;
    let mut last_count = 0u64;
    // Completions when the window began: the window's own count is above it.
    let mut window_base = 0u64;
    let mut last_tick = Instant::now();
    let (mut last_p50, mut last_p99) = (None, None);
    let mut stopped_at = None;
    loop {
        let now = Instant::now();
        let (mut warm_end, window_end) = (shared.warm_end(), shared.window_end());
        if now >= window_end {
            break;
        }
        if gates.is_broken() {
            // A worker failed mid-load: the step has no result, so end it now.
            shared.set_window_end(now);
            break;
        }
        let held = hold.is_some_and(|h| h.load(Ordering::Acquire)) && !stop.load(Ordering::Relaxed);
        if cpu_start.is_none() && now + HOLD_LEAD >= warm_end && held && now < load_start + warmup + super::MAX_WARMUP_HOLD {
            // Held: the warm-up goes on, the window follows it whole. The
            // end is kept ahead by more than this loop's period, so no
            // worker sees the window open before it is moved.
            warm_end = now + HOLD_LEAD + Duration::from_millis(50);
            shared.set_warm_end(warm_end);
            shared.set_window_end(warm_end + window);
        }
        if cpu_start.is_none() && now >= warm_end {
            window_base = shared.completions.load(Ordering::Relaxed);
            cpu_start = Some(cpu::process_cpu_s());
            window_start_wall = Some(unix_ms_at(warm_end));
        }
        if stop.load(Ordering::Relaxed) && stopped_at.is_none() {
            // Finish the current second of the window (or stop now if still warming up).
            let cut = if now < warm_end {
                now
            } else {
                let into = now - warm_end;
                warm_end + Duration::from_secs(into.as_secs() + 1)
            };
            let cut = cut.min(window_end);
            shared.set_window_end(cut);
            stopped_at = Some(cut);
            continue;
        }
        while let Ok((_, h)) = sec_rx.try_recv() {
            last_p50 = h.quantile_ms(0.50);
            last_p99 = h.quantile_ms(0.99);
        }
        let count = shared.completions.load(Ordering::Relaxed);
        let dt = now.duration_since(last_tick).as_secs_f64();
        if dt >= 0.25 {
            live(&LiveTick {
                elapsed_s: now.duration_since(load_start).as_secs_f64(),
                warming_up: now < warm_end,
                throughput_per_s: (count - last_count) as f64 / dt,
                errors: shared.errors.load(Ordering::Relaxed),
                p50_ms: last_p50,
                p99_ms: last_p99,
                completed: count,
                window_completed: if cpu_start.is_some() { count - window_base } else { 0 },
            });
            last_count = count;
            last_tick = now;
        }
        let next = (now + Duration::from_millis(50)).min(window_end);
        let next = if cpu_start.is_none() { next.min(warm_end) } else { next };
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let cpu_end = cpu::process_cpu_s();
    let (warm_end, window_end) = (shared.warm_end(), shared.window_end());
    Some(Window {
        cpu_start,
        cpu_end,
        start_unix_ms: window_start_wall.unwrap_or_else(|| unix_ms_at(warm_end)),
        end_unix_ms: unix_ms_at(window_end),
        window_s: window_end.saturating_duration_since(warm_end).as_secs_f64(),
        partial: stopped_at.is_some(),
    })
}

/// The wall-clock time of `t`, ms since the Unix epoch.
fn unix_ms_at(t: Instant) -> i64 {
    let now_i = Instant::now();
    let now_w = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64;
    if t >= now_i {
        now_w + t.duration_since(now_i).as_millis() as i64
    } else {
        now_w - now_i.duration_since(t).as_millis() as i64
    }
}
