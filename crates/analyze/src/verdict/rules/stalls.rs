//! Periodic stalls: the server stops answering for a moment, again and
//! again (a garbage collection, a checkpoint, an fsync, a background task
//! holding a lock), seen in the per-second series of one step.

use super::*;
use scalelab_core::SecondResult;

/// The per-second p99 of a stalled second, ms, at least.
pub const STALL_P99_MS: f64 = 50.0;
/// How many times the calm seconds' p99 a stalled second's p99 is, at least.
pub const STALL_RATIO: f64 = 5.0;
/// A stall's p99 is at least this many times the step's service-time p50
/// when the server answered fast once asked: the wait was for the server
/// to answer at all, not for its work.
pub const STALL_SERVICE_RATIO: f64 = 5.0;

/// The calm seconds' p99: the lower quartile of the seconds' p99s, so that
/// up to three quarters of them may stall without hiding the baseline.
fn calm_p99(p99s: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = p99s.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.get((v.len().saturating_sub(1)) / 4).copied()
}

/// A second is stalled when its p99 stands far above the calm seconds'
/// (both `STALL_P99_MS` and `STALL_RATIO` times the calm p99), or when it
/// completed nothing while other seconds did.
fn stalled(s: &SecondResult, calm: f64, any_served: bool) -> bool {
    match s.latency.quantile_ms(0.99) {
        Some(p) => p >= STALL_P99_MS && p >= STALL_RATIO * calm,
        None => s.requests == 0 && any_served,
    }
}

pub(super) fn periodic_stalls(ctx: &Ctx) -> Option<Verdict> {
    let step = ctx.step;
    let seconds = &step.seconds;
    if seconds.len() < 3 {
        return None;
    }
    let p99s: Vec<f64> = seconds.iter().filter_map(|s| s.latency.quantile_ms(0.99)).collect();
    let calm = calm_p99(&p99s)?;
    let any_served = seconds.iter().any(|s| s.requests > 0);
    let stalls: Vec<&SecondResult> = seconds.iter().filter(|s| stalled(s, calm, any_served)).collect();
    // Two at least (one is an incident, not a pattern), and not every
    // second (a server slow throughout is slow, not stalling).
    if stalls.len() < 2 || stalls.len() == seconds.len() {
        return None;
    }
    let worst = stalls.iter().filter_map(|s| s.latency.quantile_ms(0.99)).fold(0.0, f64::max);
    let silent = stalls.iter().filter(|s| s.requests == 0).count();
    let gaps: Vec<f64> = stalls.windows(2).map(|w| f64::from(w[1].second - w[0].second)).collect();
    let every = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let service_p50 = step.service.as_ref().and_then(|h| h.quantile_ms(0.5));
    let open = step.offered_rate_per_s.is_some();
    let service = service_p50.map(|p| format!(", while it answered in {p:.1} ms (service p50) once asked")).unwrap_or_default();
    let silent_text = if silent > 0 { format!(" ({silent} with no completion at all)") } else { String::new() };
    let headline = format!(
        "the server stops answering now and then: in {} of {} seconds{silent_text}, about every {every:.0} s, the p99{} reached {worst:.0} ms against {calm:.1} ms in the calm seconds{service}{}",
        stalls.len(),
        seconds.len(),
        if open { " from the intended send" } else { "" },
        if open { "; a closed loop would hide most of it" } else { "" },
    );
    let mut d = Draft::new(
        VerdictKind::PeriodicStalls,
        ctx,
        headline,
        "find what runs periodically in the server: garbage collection, checkpoints or fsyncs, log rotation, a cron job, a background task holding a lock; match the stalled seconds (`export --series`) with the server's log and profile one (`watch --profile`)",
    );
    d.ev("stalled seconds", Some(stalls.len() as f64), &format!("of {}", seconds.len()));
    d.ev("p99 in the stalled seconds", Some(worst), "ms");
    d.ev("p99 in the calm seconds", Some(calm), "ms");
    d.ev("interval between stalls", Some(every), "s");
    if silent > 0 {
        d.ev("seconds with no completion", Some(silent as f64), "s");
    }
    d.ev("service time p50", service_p50, "ms");
    // Corroboration: the server answered fast once asked (open loop only:
    // a closed loop's latency is its service time), and the machine had CPU
    // to spare (a saturated one stalls its threads by scheduling alone).
    let fast = service_p50.map(|p| worst >= STALL_SERVICE_RATIO * p);
    d.check(fast, || {
        "service time: a closed loop measures only the service time; an open loop (--rate) tells waiting from work".to_string()
    });
    let t = ctx.t();
    d.check(cpu_not_saturated(t), || ctx.why("CPU busy", CPU));
    if let Some(b) = t.and_then(|t| t.cpu_busy_pct) {
        d.ev("CPU busy", Some(b), "%");
    }
    Some(d.done())
}

/// Server context switches per accepted connection from which the
/// connections are taken to wake many threads each. One connection costs a
/// serving thread one or two wake-ups (the accept, the request): the
/// specimen's `herd` mode with its fix made 1.6 per connection, nginx with
/// one worker about 2; without the fix, 16 waiting threads made 17.
pub const HERD_CS_PER_CONNECTION: f64 = 5.0;
/// Share of the server's thread-time asleep (idle + futex, %) from which
/// most of its woken threads are taken to find nothing to do.
pub const HERD_ASLEEP_PCT: f64 = 50.0;

/// Many threads woken for every new connection, one of which gets it.
pub(super) fn thundering_herd(ctx: &Ctx) -> Option<Verdict> {
    let s = ctx.step;
    let t = ctx.t()?;
    let cs = t.server_cs_per_s?;
    let window = s.window_s.max(1e-9);
    let conns = s.connect_latency.count() as f64 / window;
    // A connection per request at least half the time: keep-alive clients
    // are accepted once and cannot show a herd.
    if conns < 1.0 || conns < 0.5 * s.throughput_per_s() {
        return None;
    }
    let per_conn = cs / conns;
    if per_conn < HERD_CS_PER_CONNECTION {
        return None;
    }
    let threads = t.server_threads;
    let threads_text = threads.map(|n| format!(" with {n} threads")).unwrap_or_default();
    // The specimen's `herd` mode counts its workers' wake-ups itself: the
    // herd seen from inside, beside the context switches seen from /proc.
    // Only the wake-ups that return from epoll_wait reach its count: a
    // waiter woken after another took the connection finds the listener
    // not ready and is put back to sleep inside the kernel, uncounted
    // (measured: 1.1 to 1.9 per connection counted for 13 to 18 switches).
    let woken = t.specimen.and_then(|s| Some((s.wakeups_per_connection?, s.empty_wakeup_share_pct?)));
    let woken_text = woken
        .map(|(w, e)| {
            format!(
                "; the specimen counted {w:.1} wake-ups per connection reaching its workers, {e:.0} % of them with nothing to accept (the kernel puts most woken waiters back to sleep before they return, uncounted)"
            )
        })
        .unwrap_or_default();
    let headline = format!(
        "a thundering herd: the server made {per_conn:.1} context switches per new connection ({} /s for {} connections/s){threads_text}, mostly asleep: each connection wakes many waiting threads and one of them gets it{woken_text}",
        scalelab_core::thousands(cs),
        scalelab_core::thousands(conns)
    );
    let mut d = Draft::new(
        VerdictKind::ThunderingHerd,
        ctx,
        headline,
        "wake one waiter per connection: EPOLLEXCLUSIVE on the listener (Linux 4.5), SO_REUSEPORT with a listener per thread, or one acceptor handing connections out (nginx: `accept_mutex`, `reuseport`); keep-alive also saves a new connection per request",
    );
    d.ev("server context switches", Some(per_conn), "per new connection");
    d.ev("server context switches", Some(cs), "/s");
    d.ev("new connections", Some(conns), "/s");
    if let Some(n) = threads {
        d.ev("server threads", Some(n as f64), "threads");
    }
    if let Some((w, e)) = woken {
        d.ev("specimen wake-ups (returns from epoll_wait)", Some(w), "per connection");
        d.ev("of them found nothing to accept", Some(e), "%");
    }
    // Corroboration: the threads mostly sleep (woken for nothing), and the
    // machine has CPU to spare (a saturated one switches for other reasons).
    let asleep = t.thread_states_pct.map(|p| p.idle + p.futex);
    if let Some(a) = asleep {
        d.ev("server thread-time asleep", Some(a), "%");
    }
    d.check(asleep.map(|a| a >= HERD_ASLEEP_PCT), || ctx.why("thread states", THREADS));
    d.check(cpu_not_saturated(Some(t)), || ctx.why("CPU busy", CPU));
    Some(d.done())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calm_p99_is_the_lower_quartile() {
        assert_eq!(calm_p99(&[3.0, 200.0, 2.0, 210.0, 4.0]), Some(3.0));
        assert_eq!(calm_p99(&[5.0]), Some(5.0));
        assert_eq!(calm_p99(&[]), None);
    }
}
