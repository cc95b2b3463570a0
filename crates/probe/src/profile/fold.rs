//! `perf script` text → folded stacks. The text is what
//! `perf script --show-switch-events --show-lost-events -F pid,tid,time,event,trace,ip,sym,dso`
//! prints: a header line per event, then its frames (leaf first), then a
//! blank line. On-CPU: each `cpu-clock` sample counts one. Off-CPU: a
//! `sched:sched_switch` sample is a thread going to sleep with its stack;
//! the thread's next switch-in ends that sleep: its `PERF_RECORD_SWITCH IN`
//! (a capture of the server's threads), or, for a capture of every CPU, the
//! next `sched_switch` whose `next_pid` is the thread, read from a second
//! capture without stacks ([`switch_ins`]).

use scalelab_core::sample::{FoldedStack, StackProfile};
use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

/// One event's header.
#[derive(Debug, PartialEq)]
pub enum Event {
    /// A sample of `event` with its trace text (empty for cpu-clock).
    Sample { tid: u32, ns: u64, event: String, trace: String },
    /// The thread came back on a CPU.
    SwitchIn { tid: u32, ns: u64 },
    /// Some other record (switch out, lost, ...); `lost` counts lost events.
    Other { ns: Option<u64>, lost: u64 },
}

/// `12805/12821 11649.831526: ...`; None for a line that is no header.
pub fn parse_header(line: &str) -> Option<Event> {
    // perf pads the ids to a width: ` 1174/1213  13196.316500: cpu-clock:`.
    let line = line.trim_start();
    let (ids, line) = line.split_once(' ')?;
    let tid: u32 = ids.split('/').next_back()?.parse().ok()?;
    let line = line.trim_start();
    let (time, rest) = line.split_once(' ').unwrap_or((line, ""));
    let time = time.strip_suffix(':')?;
    let (s, frac) = time.split_once('.')?;
    let ns = s.parse::<u64>().ok()? * 1_000_000_000 + format!("{frac:0<9}")[..9].parse::<u64>().ok()?;
    let rest = rest.trim_start();
    if let Some(sw) = rest.strip_prefix("PERF_RECORD_SWITCH") {
        return Some(if sw.trim_start().starts_with("IN") { Event::SwitchIn { tid, ns } } else { Event::Other { ns: Some(ns), lost: 0 } });
    }
    if rest.starts_with("PERF_RECORD_LOST") {
        let lost = rest.split_whitespace().filter_map(|w| w.parse::<u64>().ok()).next_back().unwrap_or(0);
        return Some(Event::Other { ns: Some(ns), lost });
    }
    if rest.starts_with("PERF_RECORD") {
        return Some(Event::Other { ns: Some(ns), lost: 0 });
    }
    let (event, trace) = rest.split_once(": ").unwrap_or((rest.trim_end_matches(':'), ""));
    Some(Event::Sample { tid, ns, event: event.trim().to_string(), trace: trace.trim().to_string() })
}

/// A frame line `    b49b22 scalelab_specimen::server::State::work (/path/bin)`
/// as a folded frame: the symbol (`;` written `:`), kernel frames marked
/// `_[k]`, an unresolved one as `module+0xoffset`.
fn parse_frame(line: &str) -> Option<String> {
    let line = line.trim();
    let (ip, rest) = line.split_once(' ')?;
    let ip = u64::from_str_radix(ip, 16).ok()?;
    let rest = rest.trim();
    let (sym, dso) = match rest.rfind(" (") {
        Some(at) if rest.ends_with(')') => (rest[..at].trim(), &rest[at + 2..rest.len() - 1]),
        _ => (rest, "[unknown]"),
    };
    let module = dso.rsplit('/').next().unwrap_or(dso);
    let name = if sym.is_empty() || sym == "[unknown]" { format!("{module}+0x{ip:x}") } else { sym.replace(';', ":") };
    Some(if dso == "[kernel.kallsyms]" || dso.starts_with("[kernel") { format!("{name}_[k]") } else { name })
}

/// The thread state a `sched_switch` trace line says the thread left in.
fn prev_state(trace: &str) -> String {
    let state = trace.split_whitespace().find_map(|w| w.strip_prefix("prev_state=")).unwrap_or("?");
    format!("[{}]", state.chars().next().unwrap_or('?'))
}

/// What a pass over `perf script` output found.
#[derive(Debug, Default)]
pub struct Folded {
    /// On-CPU stacks: samples.
    pub on_cpu: BTreeMap<String, u64>,
    /// Off-CPU stacks: (ns asleep, times).
    pub off_cpu: BTreeMap<String, (u64, u64)>,
    /// Events perf lost.
    pub lost: u64,
    /// First and last event time seen, ns.
    pub span_ns: Option<(u64, u64)>,
    /// Threads seen.
    pub threads: usize,
}

/// Folds `perf script` output read from `input`.
pub fn fold(input: impl BufRead) -> std::io::Result<Folded> {
    fold_threads(input, None)
}

/// When each thread came back on a CPU: from a system-wide capture of
/// `sched:sched_switch` filtered on the server's threads as `next_pid`.
#[derive(Debug, Default)]
pub struct SwitchIns {
    /// Per thread, its switch-in times, ns, in order.
    pub by_tid: HashMap<u32, Vec<u64>>,
    /// Events perf lost.
    pub lost: u64,
    /// First and last event time seen, ns.
    pub span_ns: Option<(u64, u64)>,
}

impl SwitchIns {
    /// The first time `tid` came back on a CPU after `ns`.
    fn after(&self, tid: u32, ns: u64) -> Option<u64> {
        let times = self.by_tid.get(&tid)?;
        times.get(times.partition_point(|&t| t <= ns)).copied()
    }
}

fn widen(span: Option<(u64, u64)>, ns: u64) -> Option<(u64, u64)> {
    Some(span.map_or((ns, ns), |(a, b)| (a.min(ns), b.max(ns))))
}

/// Reads the switch-ins of a system-wide `sched:sched_switch` capture
/// without stacks (`perf script` text): each event's `next_pid` came back.
pub fn switch_ins(input: impl BufRead) -> std::io::Result<SwitchIns> {
    let mut out = SwitchIns::default();
    for line in input.lines() {
        match parse_header(&line?) {
            Some(Event::Sample { ns, event, trace, .. }) if event == "sched:sched_switch" => {
                let Some(tid) = trace.split_whitespace().find_map(|w| w.strip_prefix("next_pid=")?.parse::<u32>().ok()) else { continue };
                out.by_tid.entry(tid).or_default().push(ns);
                out.span_ns = widen(out.span_ns, ns);
            }
            Some(Event::Other { lost, .. }) => out.lost += lost,
            _ => {}
        }
    }
    for times in out.by_tid.values_mut() {
        times.sort_unstable();
    }
    Ok(out)
}

/// Folds `perf script` output, keeping the on-CPU samples of the threads
/// in `keep` only (a system-wide capture), or all of them (None).
pub fn fold_threads(input: impl BufRead, keep: Option<&std::collections::HashSet<u32>>) -> std::io::Result<Folded> {
    fold_sleeps(input, keep, None)
}

/// Folds `perf script` output as [`fold_threads`] does; a sampled sleep
/// ends at its thread's next switch-in in `ends` when given (a system-wide
/// off-CPU capture, whose own records carry no switch-ins), else at the
/// thread's next `PERF_RECORD_SWITCH IN`.
pub fn fold_sleeps(
    input: impl BufRead,
    keep: Option<&std::collections::HashSet<u32>>,
    ends: Option<&SwitchIns>,
) -> std::io::Result<Folded> {
    let mut out = Folded::default();
    let mut asleep: HashMap<u32, (u64, String)> = HashMap::new();
    let mut seen: HashMap<u32, ()> = HashMap::new();
    let mut current: Option<(Event, Vec<String>)> = None;
    let finish = |ev: Option<(Event, Vec<String>)>, out: &mut Folded, asleep: &mut HashMap<u32, (u64, String)>| {
        let Some((ev, frames)) = ev else { return };
        let stack = || frames.iter().rev().cloned().collect::<Vec<_>>().join(";");
        match ev {
            Event::Sample { tid, ns, event, trace } if event == "sched:sched_switch" => {
                let mut s = stack();
                if !s.is_empty() {
                    s.push(';');
                }
                s.push_str(&prev_state(&trace));
                match ends.map(|e| e.after(tid, ns)) {
                    Some(Some(end)) => {
                        let e = out.off_cpu.entry(s).or_default();
                        e.0 += end - ns;
                        e.1 += 1;
                    }
                    // Not back by the end of the capture (or its end comes as a record here).
                    _ => {
                        asleep.insert(tid, (ns, s));
                    }
                }
            }
            Event::Sample { tid, event, .. } if event.starts_with("cpu-clock") => {
                if keep.is_some_and(|k| !k.contains(&tid)) {
                    return;
                }
                *out.on_cpu.entry(stack()).or_default() += 1;
            }
            Event::SwitchIn { tid, ns } => {
                if let Some((from, s)) = asleep.remove(&tid) {
                    let e = out.off_cpu.entry(s).or_default();
                    e.0 += ns.saturating_sub(from);
                    e.1 += 1;
                }
            }
            _ => {}
        }
    };
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            finish(current.take(), &mut out, &mut asleep);
            continue;
        }
        let is_frame = line.starts_with([' ', '\t'])
            && current.as_ref().is_some_and(|(e, _)| matches!(e, Event::Sample { .. }))
            && parse_header(&line).is_none();
        if is_frame {
            if let (Some((_, frames)), Some(f)) = (current.as_mut(), parse_frame(&line)) {
                frames.push(f);
            }
            continue;
        }
        if let Some(ev) = parse_header(&line) {
            finish(current.take(), &mut out, &mut asleep);
            let ns = match &ev {
                Event::Sample { tid, ns, .. } | Event::SwitchIn { tid, ns } => {
                    seen.insert(*tid, ());
                    Some(*ns)
                }
                Event::Other { ns, lost } => {
                    out.lost += lost;
                    *ns
                }
            };
            if let Some(ns) = ns {
                out.span_ns = widen(out.span_ns, ns);
            }
            current = Some((ev, Vec::new()));
        }
    }
    finish(current.take(), &mut out, &mut asleep);
    if let Some(e) = ends {
        out.lost += e.lost;
        for ns in e.span_ns.into_iter().flat_map(|(a, b)| [a, b]) {
            out.span_ns = widen(out.span_ns, ns);
        }
        for tid in e.by_tid.keys() {
            seen.insert(*tid, ());
        }
    }
    // Still asleep when the capture ended: asleep until its end.
    let end = out.span_ns.map_or(0, |s| s.1);
    for (_, (from, s)) in asleep {
        let e = out.off_cpu.entry(s).or_default();
        e.0 += end.saturating_sub(from);
        e.1 += 1;
    }
    out.threads = seen.len();
    Ok(out)
}

/// Stacks highest value first (ties by stack, so the order is stable).
pub fn sorted(stacks: impl IntoIterator<Item = (String, u64, u64)>) -> Vec<FoldedStack> {
    let mut v: Vec<FoldedStack> = stacks.into_iter().map(|(stack, value, count)| FoldedStack { stack, value, count }).collect();
    v.sort_by(|a, b| b.value.cmp(&a.value).then_with(|| a.stack.cmp(&b.stack)));
    v
}

impl Folded {
    /// The on-CPU profile of a capture of `duration_ns` over `threads` threads.
    pub fn on_cpu_profile(&self, duration_ns: u64, threads: u32, unwind: &str, rate_hz: u32) -> StackProfile {
        StackProfile {
            duration_ns,
            threads,
            unwind: unwind.to_string(),
            rate_hz,
            lost: self.lost,
            sampled_every: 0,
            stacks: sorted(self.on_cpu.iter().map(|(s, n)| (s.clone(), *n, *n))),
        }
    }

    /// The off-CPU profile of a capture of `duration_ns` over `threads`
    /// threads, where one switch in `every` was sampled: each sleep found
    /// stands for `every` (in time and count).
    pub fn off_cpu_profile(&self, duration_ns: u64, threads: u32, unwind: &str, every: u32) -> StackProfile {
        let k = u64::from(every.max(1));
        StackProfile {
            duration_ns,
            threads,
            unwind: unwind.to_string(),
            rate_hz: 0,
            lost: self.lost,
            sampled_every: every.max(1),
            stacks: sorted(self.off_cpu.iter().map(|(s, (ns, n))| (s.clone(), ns * k, n * k))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_with_perf_s_padding() {
        let ev = |tid, ns, event: &str| Some(Event::Sample { tid, ns, event: event.into(), trace: String::new() });
        assert_eq!(parse_header(" 1174/1213  13196.316500: cpu-clock: "), ev(1213, 13_196_316_500_000, "cpu-clock"));
        assert_eq!(parse_header("28374/28377 11954.068656: cpu-clock: "), ev(28377, 11_954_068_656_000, "cpu-clock"));
        assert_eq!(
            parse_header("  1174/1213  13196.316501: PERF_RECORD_SWITCH IN  "),
            Some(Event::SwitchIn { tid: 1213, ns: 13_196_316_501_000 })
        );
        assert_eq!(parse_header("\t    12345 update_counter (/tmp/gl)"), None);
        assert_eq!(parse_header("\t ffffffff821facd8 __schedule ([kernel.kallsyms])"), None);
    }

    #[test]
    fn sampled_sleeps_end_at_the_threads_next_switch_in_from_the_second_capture() {
        // Switch-ins (next_pid) of the server's threads 7 and 8, in time order, as perf prints them.
        let ins = "\
 9/9  10.000100: sched:sched_switch: prev_comm=a prev_pid=9 prev_prio=120 prev_state=R ==> next_comm=srv next_pid=7 next_prio=120
 9/9  10.000500: sched:sched_switch: prev_comm=a prev_pid=9 prev_prio=120 prev_state=R ==> next_comm=srv next_pid=7 next_prio=120
 9/9  10.002000: sched:sched_switch: prev_comm=a prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=srv next_pid=8 next_prio=120
";
        let ends = switch_ins(ins.as_bytes()).unwrap();
        assert_eq!(ends.by_tid[&7], vec![10_000_100_000, 10_000_500_000]);
        assert_eq!(ends.span_ns, Some((10_000_100_000, 10_002_000_000)));
        // Sampled switches out, with their stacks (leaf first).
        let outs = "\
 7/7  10.000200: sched:sched_switch: prev_comm=srv prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=a next_pid=9 next_prio=120
\t    1234 lock_wait (/srv)
\t    1000 handler (/srv)

 7/7  10.000600: sched:sched_switch: prev_comm=srv prev_pid=7 prev_prio=120 prev_state=D ==> next_comm=a next_pid=9 next_prio=120
\t    3000 read_disk (/srv)

 8/8  10.001000: sched:sched_switch: prev_comm=srv prev_pid=8 prev_prio=120 prev_state=S ==> next_comm=a next_pid=9 next_prio=120
\t    2000 epoll_wait (/srv)

";
        let f = fold_sleeps(outs.as_bytes(), None, Some(&ends)).unwrap();
        // 7 slept at .000200 and came back at .000500 (not at .000100, before it slept).
        assert_eq!(f.off_cpu["handler;lock_wait;[S]"], (300_000, 1));
        assert_eq!(f.off_cpu["epoll_wait;[S]"], (1_000_000, 1));
        // Never back: asleep until the end of both captures.
        assert_eq!(f.off_cpu["read_disk;[D]"], (1_400_000, 1));
        assert_eq!(f.span_ns, Some((10_000_100_000, 10_002_000_000)));
        assert_eq!(f.threads, 2);
    }
}
