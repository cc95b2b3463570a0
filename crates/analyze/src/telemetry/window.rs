//! Step summaries: the raw samples that fall inside a step's window turned
//! into the [`StepTelemetry`] figures the table, the JSON and the analysis use.

use super::rates::{process_rates, system_rates, SystemRates};
use scalelab_core::sample::{ProcessSample, StateTimes, SystemSample, ThreadSecond};
use scalelab_core::{HotThread, SoftirqCpu, StepTelemetry, ThreadStatesPct};

/// How far outside a window a sample may lie and still stand for its edge.
const EDGE_SLACK_MS: i64 = 500;

/// The samples that describe the window `[start_ms, end_ms]`, oldest first:
/// those inside it when there are two or more, for a rate between the
/// first and the last covers only time under load. With fewer (a window
/// shorter than two sample intervals) the nearest sample up to half a
/// second outside each edge is added, the closer one first: a wider reach
/// would mix the pause or a profiler's hold between steps, where no load
/// runs, into the step's CPU (a spin lock at 4 clients read 78 % busy
/// instead of 99 %).
pub(crate) fn within<T>(items: &[T], at: impl Fn(&T) -> i64, start_ms: i64, end_ms: i64) -> Vec<&T> {
    let mut inside: Vec<&T> = items.iter().filter(|s| at(s) >= start_ms && at(s) <= end_ms).collect();
    if inside.len() >= 2 {
        return inside;
    }
    let before = items.iter().filter(|s| at(s) < start_ms && at(s) >= start_ms - EDGE_SLACK_MS).max_by_key(|s| at(s));
    let after = items.iter().filter(|s| at(s) > end_ms && at(s) <= end_ms + EDGE_SLACK_MS).min_by_key(|s| at(s));
    let mut edges: Vec<(i64, &T)> = before.map(|s| (start_ms - at(s), s)).into_iter().chain(after.map(|s| (at(s) - end_ms, s))).collect();
    edges.sort_by_key(|e| e.0);
    for (_, s) in edges {
        if inside.len() >= 2 {
            break;
        }
        inside.push(s);
    }
    inside.sort_by_key(|s| at(s));
    inside
}

/// The thread-state intervals that describe the window `[start_ms, end_ms]`:
/// each covers the `wall_ns` before its time, so it stands for the window
/// when at least half of it lies inside; with none, the one that overlaps
/// the window most. (The interval that ends just after a step's start is
/// mostly the pause and the previous step's end: a single-threaded server
/// busy all the step read 88 % of a core with it, 99 % without.)
pub(crate) fn intervals_within(threads: &[ThreadSecond], start_ms: i64, end_ms: i64) -> Vec<&ThreadSecond> {
    let span = |s: &ThreadSecond| (s.wall_ns / 1_000_000) as i64;
    let overlap = |s: &ThreadSecond| s.unix_ms.min(end_ms) - (s.unix_ms - span(s)).max(start_ms);
    let inside: Vec<&ThreadSecond> = threads.iter().filter(|s| 2 * overlap(s) >= span(s)).collect();
    if !inside.is_empty() {
        return inside;
    }
    threads.iter().filter(|s| overlap(s) > 0).max_by_key(|s| overlap(s)).into_iter().collect()
}

/// The CPU with the largest softirq share over the interval, beside the
/// other CPUs' mean and its share of NET_RX; `None` with one CPU or no
/// per-CPU figures.
pub fn busiest_softirq_cpu(r: &SystemRates) -> Option<SoftirqCpu> {
    let per: Vec<(u32, f64)> = r.per_cpu.iter().filter_map(|c| Some((c.cpu, c.pct?.softirq))).collect();
    if per.len() < 2 {
        return None;
    }
    let &(cpu, softirq_pct) = per.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let others_softirq_pct = (per.iter().map(|p| p.1).sum::<f64>() - softirq_pct) / (per.len() - 1) as f64;
    let rx = r.softirqs.as_ref().and_then(|s| {
        let col = s.cpus.iter().position(|&c| c == cpu)?;
        let rates: Vec<f64> = s.net_rx_per_s.as_ref()?.iter().copied().collect::<Option<Vec<f64>>>()?;
        Some((rates.get(col).copied()?, rates.iter().sum::<f64>()))
    });
    let net_rx_per_s = rx.map(|(_, total)| total);
    let net_rx_share_pct = rx.and_then(|(mine, total)| (total > 0.0).then(|| 100.0 * mine / total));
    Some(SoftirqCpu { cpu, softirq_pct, others_softirq_pct, net_rx_share_pct, net_rx_per_s })
}

/// Summarizes the window `[start_ms, end_ms]` of a step that completed `requests`.
pub fn summarize_window(
    system: &[SystemSample],
    process: &[ProcessSample],
    threads: &[ThreadSecond],
    start_ms: i64,
    end_ms: i64,
    requests: u64,
) -> StepTelemetry {
    let mut t = StepTelemetry::default();
    let sys = within(system, |s| s.at.unix_ms, start_ms, end_ms);
    t.samples = sys.len() as u32;
    let missing = |t: &mut StepTelemetry, what: &str, why: &str| {
        t.unavailable.insert(what.to_string(), why.to_string());
    };
    if let (Some(a), Some(b)) = (sys.first(), sys.last()) {
        if sys.len() >= 2 {
            let r = system_rates(a, b);
            if let Some(c) = r.cpu {
                t.cpu_busy_pct = Some(c.busy);
                t.cpu_user_pct = Some(c.user + c.nice);
                t.cpu_sys_pct = Some(c.system + c.irq + c.softirq);
                t.cpu_iowait_pct = Some(c.iowait);
                t.cpu_softirq_pct = Some(c.softirq);
            }
            t.cs_per_s = r.ctxt_per_s;
            t.softirq_busiest_cpu = busiest_softirq_cpu(&r);
            if let Some(tcp) = &r.tcp {
                t.listen_overflows_per_s = tcp.listen_overflows_per_s;
                t.listen_drops_per_s = tcp.listen_drops_per_s;
                t.retrans_per_s = tcp.retrans_segs_per_s;
            }
            if !r.disks.is_empty() {
                t.disk_iops = r.disks.iter().map(|d| Some(d.read_iops? + d.write_iops?)).sum();
            }
            if !r.net.is_empty() {
                t.net_mb_per_s = r.net.iter().map(|n| Some((n.rx_bytes_per_s? + n.tx_bytes_per_s?) / 1e6)).sum();
            }
        } else {
            missing(&mut t, "cpu", "fewer than 2 system samples in the window (window shorter than the sample interval)");
        }
        // The last count in the window: a costly socket scan skips samples,
        // then the kernel's own TIME_WAIT count (/proc/net/sockstat) stands in.
        t.tcp_time_wait =
            sys.iter().rev().find_map(|s| s.tcp_states.as_ref().map(|st| u64::from(st.time_wait))).or(b.sockstat.and_then(|s| s.tcp_tw));
        t.tcp_time_wait_to_target = sys.iter().rev().find_map(|s| s.time_wait_to_target).map(u64::from);
        if t.tcp_time_wait_to_target.is_none() {
            missing(&mut t, "time_wait_to_target", "the server's listening addresses were not known (server process not found on this machine), or the socket table could not be read");
        }
        // The target's accept queue, per sample all its listeners together.
        let queues: Vec<(u64, u64)> = sys
            .iter()
            .filter_map(|s| s.target_listen.as_ref().filter(|l| !l.is_empty()))
            .map(|l| (l.iter().map(|q| u64::from(q.queued)).sum(), l.iter().map(|q| u64::from(q.backlog)).max().unwrap_or(0)))
            .collect();
        if queues.is_empty() {
            missing(&mut t, "target_listen", "the server's listening sockets were not known (server process not found on this machine, or netlink sock_diag not available)");
        } else {
            t.listen_queue_max = queues.iter().map(|q| q.0).max();
            t.listen_queue_mean = Some(queues.iter().map(|q| q.0 as f64).sum::<f64>() / queues.len() as f64);
            t.listen_backlog = queues.iter().map(|q| q.1).max();
        }
    } else {
        missing(&mut t, "system", "no system sample in the window");
    }
    let procs = within(process, |p| p.at.unix_ms, start_ms, end_ms);
    t.server_threads = procs.iter().filter(|p| p.alive).filter_map(|p| p.threads).max();
    t.server_rss_mb = procs.iter().filter(|p| p.alive).filter_map(|p| p.rss_kib).max().map(|k| k as f64 / 1024.0);
    match (procs.first(), procs.last()) {
        (Some(a), Some(b)) if procs.len() >= 2 => {
            let r = process_rates(a, b);
            t.server_cpu_pct = r.cpu_pct();
            t.server_cs_per_s = match (r.voluntary_cs_per_s, r.nonvoluntary_cs_per_s) {
                (Some(v), Some(n)) => Some(v + n),
                _ => None,
            };
            let window_s = (end_ms - start_ms) as f64 / 1000.0;
            if requests > 0 && window_s > 0.0 {
                t.cs_per_request = t.server_cs_per_s.map(|cs| cs / (requests as f64 / window_s));
            }
        }
        _ => missing(&mut t, "server", "no server process samples in the window"),
    }
    let ths = intervals_within(threads, start_ms, end_ms);
    if ths.is_empty() {
        missing(&mut t, "thread_states", "no thread-state samples in the window");
    } else {
        let mut time = StateTimes::default();
        let mut hottest: Vec<HotThread> = Vec::new();
        // Shares weighted by each interval's length (a run's first interval
        // may be a few milliseconds long); a thread absent from an interval
        // used none of it.
        let wall: f64 = ths.iter().map(|s| s.wall_ns.max(1) as f64).sum();
        for s in &ths {
            time.merge(&s.time);
            let w = s.wall_ns.max(1) as f64 / wall;
            for h in &s.hottest {
                let (cpu, runnable) = (h.cpu_pct * w, h.runnable_pct.map(|r| r * w));
                match hottest.iter_mut().find(|x| x.tid == h.tid) {
                    Some(x) => {
                        x.cpu_pct += cpu;
                        x.runnable_pct = x.runnable_pct.zip(runnable).map(|(a, b)| a + b);
                    }
                    None => hottest.push(HotThread { cpu_pct: cpu, runnable_pct: runnable, ..h.clone() }),
                }
            }
        }
        hottest.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
        hottest.truncate(3);
        t.hottest_threads = hottest;
        t.thread_states_pct = time.shares().map(|s| ThreadStatesPct {
            running: s.running_pct,
            runnable: s.runnable_pct,
            futex: s.futex_pct,
            io: s.io_pct,
            idle: s.idle_pct,
            other: s.other_pct,
        });
    }
    t
}

#[cfg(test)]
mod tests {
    use super::{intervals_within, within};
    use scalelab_core::sample::{StateTimes, ThreadSecond};

    fn second(unix_ms: i64, wall_ms: u64) -> ThreadSecond {
        ThreadSecond { unix_ms, wall_ns: wall_ms * 1_000_000, time: StateTimes::default(), hottest: Vec::new() }
    }

    /// An interval stands for a window when half of it or more lies inside;
    /// with none, the one that overlaps most; none that does not overlap.
    #[test]
    fn thread_intervals_count_where_most_of_their_time_lies() {
        let xs = [second(12_137, 1_000), second(13_137, 1_000), second(14_137, 1_000), second(15_137, 1_000)];
        let at = |v: Vec<&ThreadSecond>| v.iter().map(|s| s.unix_ms).collect::<Vec<_>>();
        // The step of the single-thread test: 12,887..15,087.
        assert_eq!(at(intervals_within(&xs, 12_887, 15_087)), vec![14_137, 15_137]);
        assert_eq!(at(intervals_within(&xs, 12_500, 15_087)), vec![13_137, 14_137, 15_137]);
        // A window shorter than an interval: the one it overlaps most.
        assert_eq!(at(intervals_within(&xs, 13_300, 13_500)), vec![14_137]);
        assert_eq!(at(intervals_within(&xs, 13_000, 13_200)), vec![13_137]);
        assert!(intervals_within(&xs, 16_000, 17_000).is_empty());
        // A run's first interval, a few milliseconds long, counts when inside.
        let first = [second(1_002, 2), second(2_002, 1_000)];
        assert_eq!(at(intervals_within(&first, 1_000, 2_500)), vec![1_002, 2_002]);
    }

    /// Two or more samples inside: only those, so the idle pause after a
    /// step does not dilute its CPU. Fewer: the nearer edge sample first,
    /// never one beyond half a second.
    #[test]
    fn a_window_takes_its_own_samples_and_reaches_out_only_when_short() {
        let at = |s: &i64| *s;
        let xs = [400, 1_000, 2_000, 3_000, 3_300, 4_000];
        assert_eq!(within(&xs, at, 1_000, 3_000), vec![&1_000, &2_000, &3_000]);
        // One inside: the nearer edge, whichever side it is on.
        assert_eq!(within(&xs, at, 1_900, 2_900), vec![&2_000, &3_000]);
        assert_eq!(within(&xs, at, 1_100, 2_200), vec![&1_000, &2_000]);
        // None inside: an edge sample on each side within half a second.
        assert_eq!(within(&xs, at, 3_050, 3_200), vec![&3_000, &3_300]);
        assert_eq!(within(&xs, at, 3_350, 3_900), vec![&3_300, &4_000]);
        assert!(within(&xs, at, 5_000, 6_000).is_empty());
    }
}
