//! `/proc/stat` (CPU ticks, context switches, interrupts, forks, task counts)
//! and `/proc/loadavg`.

use crate::read::{complete_lines, field, num};

pub use scalelab_core::sample::{CpuStat, CpuTicks, LoadAvg, PerCpuTicks};

/// Parses the numbers after a `cpu`/`cpuN` label. Kernels since 2.6.11
/// print at least 8; fewer means a cut or foreign line, so `None`.
fn parse_ticks(rest: &str) -> Option<CpuTicks> {
    let mut it = rest.split_ascii_whitespace().map(num);
    let mut next = || it.next().flatten();
    Some(CpuTicks {
        user: next()?,
        nice: next()?,
        system: next()?,
        idle: next()?,
        iowait: next()?,
        irq: next()?,
        softirq: next()?,
        steal: next()?,
    })
}

/// Parses `/proc/stat`. Lines that are cut or malformed leave their field
/// `None`; an input with none of the expected lines is an error.
pub fn parse_stat(text: &str) -> Result<CpuStat, String> {
    let mut s = CpuStat::default();
    for line in complete_lines(text) {
        let Some((key, rest)) = line.split_once(' ') else {
            continue;
        };
        match key {
            "cpu" => s.total = parse_ticks(rest),
            "ctxt" => s.ctxt = field(rest, 0),
            "intr" => s.intr = field(rest, 0),
            "processes" => s.forks = field(rest, 0),
            "procs_running" => s.procs_running = field(rest, 0),
            "procs_blocked" => s.procs_blocked = field(rest, 0),
            _ => {
                if let Some(id) = key.strip_prefix("cpu").and_then(|n| n.parse().ok()) {
                    if let Some(ticks) = parse_ticks(rest) {
                        s.per_cpu.push(PerCpuTicks { cpu: id, ticks });
                    }
                }
            }
        }
    }
    if s.total.is_none() && s.ctxt.is_none() && s.per_cpu.is_empty() {
        return Err("no cpu or ctxt line".into());
    }
    Ok(s)
}

/// Parses `/proc/loadavg` ("0.30 0.40 0.18 1/88 6458").
pub fn parse_loadavg(text: &str) -> Result<LoadAvg, String> {
    let line = complete_lines(text).next().ok_or("empty or cut")?;
    let mut it = line.split_ascii_whitespace();
    let mut load = || it.next().and_then(|t| t.parse::<f64>().ok()).filter(|v| v.is_finite());
    let (load1, load5, load15) = (load(), load(), load());
    let counts = line.split_ascii_whitespace().nth(3).and_then(|t| t.split_once('/'));
    match (load1, load5, load15, counts) {
        (Some(load1), Some(load5), Some(load15), Some((r, t))) => Ok(LoadAvg {
            load1,
            load5,
            load15,
            runnable: r.parse().map_err(|_| "bad runnable count")?,
            tasks: t.parse().map_err(|_| "bad task count")?,
        }),
        _ => Err(format!("unexpected format: {line:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  16076 0 2164 38020 480 0 84 3170 0 0\n\
        cpu0 8052 0 1150 18689 360 0 21 1693 0 0\n\
        cpu1 8024 0 1013 19330 120 0 62 1476 0 0\n\
        intr 225242 0 0 1\nctxt 307843\nbtime 1\nprocesses 6001\nprocs_running 2\nprocs_blocked 0\n";

    #[test]
    fn parses_all_fields() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(s.total.unwrap().user, 16076);
        assert_eq!(s.total.unwrap().steal, 3170);
        assert_eq!(s.per_cpu.len(), 2);
        assert_eq!(s.per_cpu[1].cpu, 1);
        assert_eq!((s.ctxt, s.intr, s.forks), (Some(307843), Some(225242), Some(6001)));
        assert_eq!((s.procs_running, s.procs_blocked), (Some(2), Some(0)));
        assert!(s.missing().is_empty());
    }

    #[test]
    fn short_cpu_line_is_none_not_zero() {
        let s = parse_stat("cpu  1 2 3\nctxt 5\n").unwrap();
        assert_eq!(s.total, None);
        assert_eq!(s.ctxt, Some(5));
        assert_eq!(s.missing(), ["cpu", "intr", "processes", "procs_running", "procs_blocked"]);
    }

    #[test]
    fn loadavg() {
        let l = parse_loadavg("0.30 0.40 0.18 1/88 6458\n").unwrap();
        assert_eq!((l.load1, l.runnable, l.tasks), (0.30, 1, 88));
        assert!(parse_loadavg("0.30 0.40\n").is_err());
        assert!(parse_loadavg("0.30 0.40 0.18 1/88 6458").is_err());
        assert!(parse_loadavg("nan nan nan 1/2 3\n").is_err());
    }
}
