//! Machine-wide rates from two [`SystemSample`]s.

use super::{counter_delta, opt_per_second, per_second};
use scalelab_core::sample::{CpuTicks, PowerReading, Psi, SystemSample};
use serde::{Deserialize, Serialize};

/// CPU time split, percent of the CPU time that elapsed (all CPUs together
/// for the total, one CPU for a per-CPU figure).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuPct {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    pub steal: f64,
    pub idle: f64,
    /// Everything but idle and iowait.
    pub busy: f64,
}

/// The split between two readings; `None` if any counter went backwards or
/// no time passed.
pub fn cpu_pct(a: &CpuTicks, b: &CpuTicks) -> Option<CpuPct> {
    let d = |x: u64, y: u64| counter_delta(x, y);
    let (user, nice, system, idle) = (d(a.user, b.user)?, d(a.nice, b.nice)?, d(a.system, b.system)?, d(a.idle, b.idle)?);
    let (iowait, irq, softirq, steal) = (d(a.iowait, b.iowait)?, d(a.irq, b.irq)?, d(a.softirq, b.softirq)?, d(a.steal, b.steal)?);
    let total = (user + nice + system + idle + iowait + irq + softirq + steal) as f64;
    (total > 0.0).then_some(())?;
    let p = |v: u64| v as f64 * 100.0 / total;
    Some(CpuPct {
        user: p(user),
        nice: p(nice),
        system: p(system),
        iowait: p(iowait),
        irq: p(irq),
        softirq: p(softirq),
        steal: p(steal),
        idle: p(idle),
        busy: 100.0 - p(idle) - p(iowait),
    })
}

/// One CPU's split.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerCpuPct {
    pub cpu: u32,
    pub pct: Option<CpuPct>,
}

/// PSI stall shares over the interval, percent of wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PressurePct {
    pub cpu_some: Option<f64>,
    pub cpu_full: Option<f64>,
    pub io_some: Option<f64>,
    pub io_full: Option<f64>,
    pub memory_some: Option<f64>,
    pub memory_full: Option<f64>,
}

/// Softirqs per second per CPU column (`None` where a counter went back).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftirqRates {
    pub cpus: Vec<u32>,
    pub net_rx_per_s: Option<Vec<Option<f64>>>,
    pub net_tx_per_s: Option<Vec<Option<f64>>>,
    pub timer_per_s: Option<Vec<Option<f64>>>,
    pub sched_per_s: Option<Vec<Option<f64>>>,
}

/// One disk: the iostat figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiskRates {
    pub name: String,
    pub read_iops: Option<f64>,
    pub write_iops: Option<f64>,
    pub read_kib_per_s: Option<f64>,
    pub write_kib_per_s: Option<f64>,
    /// Mean time per completed I/O, queue included; `None` without I/O.
    pub avg_wait_ms: Option<f64>,
    /// Share of the interval with I/O in flight.
    pub util_pct: Option<f64>,
}

/// One network interface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetRates {
    pub name: String,
    pub rx_bytes_per_s: Option<f64>,
    pub tx_bytes_per_s: Option<f64>,
    pub rx_packets_per_s: Option<f64>,
    pub tx_packets_per_s: Option<f64>,
    pub rx_drops_per_s: Option<f64>,
    pub tx_drops_per_s: Option<f64>,
    pub rx_errors_per_s: Option<f64>,
    pub tx_errors_per_s: Option<f64>,
}

/// TCP events per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpRates {
    pub active_opens_per_s: Option<f64>,
    pub passive_opens_per_s: Option<f64>,
    pub attempt_fails_per_s: Option<f64>,
    pub estab_resets_per_s: Option<f64>,
    pub retrans_segs_per_s: Option<f64>,
    pub out_rsts_per_s: Option<f64>,
    pub listen_overflows_per_s: Option<f64>,
    pub listen_drops_per_s: Option<f64>,
}

/// Everything machine-wide, as rates over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemRates {
    /// Measured seconds between the samples (monotonic clock).
    pub interval_s: f64,
    pub cpu: Option<CpuPct>,
    pub per_cpu: Vec<PerCpuPct>,
    pub ctxt_per_s: Option<f64>,
    pub intr_per_s: Option<f64>,
    pub forks_per_s: Option<f64>,
    pub pressure: PressurePct,
    pub softirqs: Option<SoftirqRates>,
    /// Interrupts per second per CPU column, all kinds.
    pub interrupts_per_s: Option<Vec<Option<f64>>>,
    /// Device (numbered) interrupts per second per CPU column.
    pub device_interrupts_per_s: Option<Vec<Option<f64>>>,
    pub disks: Vec<DiskRates>,
    pub net: Vec<NetRates>,
    pub tcp: Option<TcpRates>,
    /// Sum of top-level RAPL zones (packages, platform), watts.
    pub rapl_w: Option<f64>,
    /// Sum of hwmon power sensors, mean of the two readings, watts.
    pub hwmon_w: Option<f64>,
}

fn columns(a: &[u64], b: &[u64], secs: f64) -> Option<Vec<Option<f64>>> {
    (a.len() == b.len()).then(|| a.iter().zip(b).map(|(x, y)| per_second(*x, *y, secs)).collect())
}

fn opt_columns(a: &Option<Vec<u64>>, b: &Option<Vec<u64>>, secs: f64) -> Option<Vec<Option<f64>>> {
    columns(a.as_ref()?, b.as_ref()?, secs)
}

fn psi_pct(a: &Option<Psi>, b: &Option<Psi>, secs: f64) -> (Option<f64>, Option<f64>) {
    let (Some(a), Some(b)) = (a, b) else {
        return (None, None);
    };
    let pct = |x: u64, y: u64| per_second(x, y, secs).map(|us| us / 1e4);
    let full = match (a.full, b.full) {
        (Some(x), Some(y)) => pct(x.total_us, y.total_us),
        _ => None,
    };
    (pct(a.some.total_us, b.some.total_us), full)
}

/// Watts from RAPL top-level zones present in both samples (wraps at the
/// zone's range are undone), and from hwmon sensors.
fn power(a: &[PowerReading], b: &[PowerReading], secs: f64) -> (Option<f64>, Option<f64>) {
    let mut rapl = None;
    for rb in b {
        let PowerReading::Energy { zone, top_level: true, energy_uj: eb, max_energy_range_uj, .. } = rb else {
            continue;
        };
        let ea = a.iter().find_map(|ra| match ra {
            PowerReading::Energy { zone: z, energy_uj, .. } if z == zone => Some(*energy_uj),
            _ => None,
        });
        let Some(ea) = ea else { continue };
        let d = match (counter_delta(ea, *eb), max_energy_range_uj) {
            (Some(d), _) => Some(d),
            (None, Some(range)) => Some(range - ea + eb),
            (None, None) => None,
        };
        if let (Some(d), true) = (d, secs > 0.0) {
            *rapl.get_or_insert(0.0) += d as f64 / 1e6 / secs;
        }
    }
    let hw = |r: &[PowerReading]| -> Option<f64> {
        let v: Vec<u64> =
            r.iter().filter_map(|p| if let PowerReading::Power { microwatts, .. } = p { Some(*microwatts) } else { None }).collect();
        (!v.is_empty()).then(|| v.iter().sum::<u64>() as f64 / 1e6)
    };
    let hwmon = match (hw(a), hw(b)) {
        (Some(x), Some(y)) => Some((x + y) / 2.0),
        _ => None,
    };
    (rapl, hwmon)
}

/// Rates between two samples, `a` taken before `b`.
pub fn system_rates(a: &SystemSample, b: &SystemSample) -> SystemRates {
    let Some(secs) = b.at.seconds_since(&a.at) else {
        return SystemRates::default();
    };
    let mut r = SystemRates { interval_s: secs, ..Default::default() };
    if let (Some(ca), Some(cb)) = (&a.cpu, &b.cpu) {
        r.cpu = ca.total.zip(cb.total).and_then(|(x, y)| cpu_pct(&x, &y));
        r.per_cpu = cb
            .per_cpu
            .iter()
            .map(|pb| PerCpuPct {
                cpu: pb.cpu,
                pct: ca.per_cpu.iter().find(|pa| pa.cpu == pb.cpu).and_then(|pa| cpu_pct(&pa.ticks, &pb.ticks)),
            })
            .collect();
        r.ctxt_per_s = opt_per_second(ca.ctxt, cb.ctxt, secs);
        r.intr_per_s = opt_per_second(ca.intr, cb.intr, secs);
        r.forks_per_s = opt_per_second(ca.forks, cb.forks, secs);
    }
    let (pa, pb) = (&a.pressure, &b.pressure);
    let (cpu_some, cpu_full) = psi_pct(&pa.cpu, &pb.cpu, secs);
    let (io_some, io_full) = psi_pct(&pa.io, &pb.io, secs);
    let (memory_some, memory_full) = psi_pct(&pa.memory, &pb.memory, secs);
    r.pressure = PressurePct { cpu_some, cpu_full, io_some, io_full, memory_some, memory_full };
    if let (Some(sa), Some(sb)) = (&a.softirqs, &b.softirqs) {
        if sa.cpus == sb.cpus {
            r.softirqs = Some(SoftirqRates {
                cpus: sb.cpus.clone(),
                net_rx_per_s: opt_columns(&sa.net_rx, &sb.net_rx, secs),
                net_tx_per_s: opt_columns(&sa.net_tx, &sb.net_tx, secs),
                timer_per_s: opt_columns(&sa.timer, &sb.timer, secs),
                sched_per_s: opt_columns(&sa.sched, &sb.sched, secs),
            });
        }
    }
    if let (Some(ia), Some(ib)) = (&a.interrupts, &b.interrupts) {
        if ia.cpus == ib.cpus {
            r.interrupts_per_s = columns(&ia.total_per_cpu, &ib.total_per_cpu, secs);
            r.device_interrupts_per_s = columns(&ia.device_per_cpu, &ib.device_per_cpu, secs);
        }
    }
    if let (Some(da), Some(db)) = (&a.disks, &b.disks) {
        for y in db {
            let Some(x) = da.iter().find(|x| x.name == y.name) else {
                continue;
            };
            let ios = counter_delta(x.reads_completed + x.writes_completed, y.reads_completed + y.writes_completed);
            let wait = counter_delta(x.read_time_ms + x.write_time_ms, y.read_time_ms + y.write_time_ms);
            r.disks.push(DiskRates {
                name: y.name.clone(),
                read_iops: per_second(x.reads_completed, y.reads_completed, secs),
                write_iops: per_second(x.writes_completed, y.writes_completed, secs),
                read_kib_per_s: per_second(x.sectors_read, y.sectors_read, secs).map(|s| s / 2.0),
                write_kib_per_s: per_second(x.sectors_written, y.sectors_written, secs).map(|s| s / 2.0),
                avg_wait_ms: ios.zip(wait).and_then(|(n, w)| (n > 0).then(|| w as f64 / n as f64)),
                util_pct: per_second(x.io_ticks_ms, y.io_ticks_ms, secs).map(|ms| (ms / 10.0).min(100.0)),
            });
        }
    }
    if let (Some(na), Some(nb)) = (&a.net, &b.net) {
        for y in nb {
            let Some(x) = na.iter().find(|x| x.name == y.name) else {
                continue;
            };
            let rate = |p: u64, c: u64| per_second(p, c, secs);
            r.net.push(NetRates {
                name: y.name.clone(),
                rx_bytes_per_s: rate(x.rx_bytes, y.rx_bytes),
                tx_bytes_per_s: rate(x.tx_bytes, y.tx_bytes),
                rx_packets_per_s: rate(x.rx_packets, y.rx_packets),
                tx_packets_per_s: rate(x.tx_packets, y.tx_packets),
                rx_drops_per_s: rate(x.rx_drops, y.rx_drops),
                tx_drops_per_s: rate(x.tx_drops, y.tx_drops),
                rx_errors_per_s: rate(x.rx_errors, y.rx_errors),
                tx_errors_per_s: rate(x.tx_errors, y.tx_errors),
            });
        }
    }
    if let (Some(x), Some(y)) = (&a.tcp, &b.tcp) {
        let rate = |p, c| opt_per_second(p, c, secs);
        r.tcp = Some(TcpRates {
            active_opens_per_s: rate(x.active_opens, y.active_opens),
            passive_opens_per_s: rate(x.passive_opens, y.passive_opens),
            attempt_fails_per_s: rate(x.attempt_fails, y.attempt_fails),
            estab_resets_per_s: rate(x.estab_resets, y.estab_resets),
            retrans_segs_per_s: rate(x.retrans_segs, y.retrans_segs),
            out_rsts_per_s: rate(x.out_rsts, y.out_rsts),
            listen_overflows_per_s: rate(x.listen_overflows, y.listen_overflows),
            listen_drops_per_s: rate(x.listen_drops, y.listen_drops),
        });
    }
    if let (Some(pa), Some(pb)) = (&a.power, &b.power) {
        (r.rapl_w, r.hwmon_w) = power(pa, pb, secs);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_split() {
        let a = CpuTicks { user: 100, system: 50, idle: 800, iowait: 50, ..Default::default() };
        let b = CpuTicks { user: 160, system: 70, idle: 900, iowait: 70, ..Default::default() };
        let p = cpu_pct(&a, &b).unwrap();
        assert_eq!((p.user, p.system, p.idle, p.iowait), (30.0, 10.0, 50.0, 10.0));
        assert_eq!(p.busy, 40.0);
        assert_eq!(cpu_pct(&b, &a), None);
        assert_eq!(cpu_pct(&a, &a), None);
    }

    #[test]
    fn rapl_wrap_is_undone() {
        let z = |e| PowerReading::Energy {
            zone: "intel-rapl:0".into(),
            name: "package-0".into(),
            top_level: true,
            energy_uj: e,
            max_energy_range_uj: Some(1_000_000),
        };
        let (w, hw) = power(&[z(900_000)], &[z(100_000)], 1.0);
        assert_eq!((w, hw), (Some(0.2), None));
    }
}
