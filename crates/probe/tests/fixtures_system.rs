//! The system sampler and its rates on /proc and /sys files captured from a
//! real machine (two snapshots one second apart).

mod common;

use common::{count_state, host, server};
use scalelab_analyze::telemetry::system_rates;
use scalelab_probe::{Source, SystemSampler};

#[test]
fn samples_a_captured_host() {
    let roots = host("t0");
    let mut sampler = SystemSampler::new(&roots);
    let s = sampler.sample();

    let cpu = s.cpu.as_ref().expect("cpu");
    let total = cpu.total.expect("cpu line");
    assert!(total.user > 0 && total.idle > 0);
    assert_eq!(cpu.per_cpu.len(), 2, "the capture machine has 2 CPUs");
    assert!(cpu.ctxt.unwrap() > 0 && cpu.intr.unwrap() > 0 && cpu.forks.unwrap() > 0);
    assert!(cpu.procs_running.unwrap() >= 1, "the capture's busy thread was running");
    assert!(s.load.unwrap().tasks > 0);
    assert!(s.pressure.cpu.is_some() && s.pressure.io.is_some() && s.pressure.memory.is_some());
    let mem = s.memory.unwrap();
    assert!(mem.used_kib().unwrap() > 0 && mem.dirty_kib.is_some() && mem.swap_used_kib().is_some());
    let soft = s.softirqs.as_ref().unwrap();
    assert_eq!(soft.net_rx.as_ref().unwrap().len(), 2);
    assert!(soft.timer.is_some() && soft.sched.is_some());
    let irq = s.interrupts.as_ref().unwrap();
    assert_eq!(irq.total_per_cpu.len(), 2);
    assert!(irq.total_per_cpu.iter().sum::<u64>() >= irq.device_per_cpu.iter().sum::<u64>());
    let disks = s.disks.as_ref().unwrap();
    assert!(disks.iter().any(|d| d.name == "vda" && d.writes_completed > 0));
    assert!(disks.iter().all(|d| !d.name.starts_with("loop")), "{disks:?}");
    let net = s.net.as_ref().unwrap();
    assert!(net.iter().any(|n| n.name == "lo" && n.rx_bytes > 0));
    let tcp = s.tcp.unwrap();
    assert!(tcp.active_opens.unwrap() > 0 && tcp.passive_opens.unwrap() > 0);
    assert!(tcp.listen_overflows.is_some() && tcp.listen_drops.is_some() && tcp.out_rsts.is_some());

    let states = s.tcp_states.unwrap();
    let tcp4 = roots.proc.join("net/tcp");
    let tcp6 = roots.proc.join("net/tcp6");
    assert_eq!(states.time_wait, count_state(&tcp4, "06") + count_state(&tcp6, "06"));
    assert!(states.time_wait > 0, "the capture closed connections client-first");
    assert_eq!(states.listen, count_state(&tcp4, "0A") + count_state(&tcp6, "0A"));
    let ports = s.ports.unwrap();
    assert_eq!((ports.range_low, ports.range_high), (32768, 60999));
    assert!(ports.ports_in_use > 0 && ports.ports_in_use <= ports.sockets_in_range);
    let sockstat = s.sockstat.unwrap();
    assert!(sockstat.tcp_inuse.is_some() && sockstat.tcp_tw.is_some());
    assert!(s.tcp_mem.unwrap().max_pages > 0);
    let files = s.files.unwrap();
    assert!(files.allocated > 0 && files.max > files.allocated);
    let pct = |v: Option<f64>| v.is_some_and(|p| p > 0.0 && p < 100.0);
    assert!(pct(s.tcp_mem_used_pct()) && pct(s.file_handles_used_pct()) && pct(s.ports_used_pct()));

    // The capture machine (a VM) has no RAPL or hwmon power: unavailable, said once.
    assert_eq!(s.power, None);
    let news: Vec<Source> = s.newly_unavailable.iter().map(|u| u.source).collect();
    assert_eq!(news, [Source::Power], "{:?}", s.newly_unavailable);
    assert!(s.newly_unavailable[0].why.contains("powercap"));
    let again = sampler.sample();
    assert!(again.newly_unavailable.is_empty());
    assert_eq!(sampler.unavailable().len(), 1);
    let _ = server();
}

#[test]
fn rates_between_the_two_snapshots() {
    let a = SystemSampler::new(&host("t0")).sample();
    let mut b = SystemSampler::new(&host("t1")).sample();
    // The snapshots were taken about a second apart; the sampler stamps
    // "now", so pin the interval the way the capture did.
    b.at.monotonic_ns = a.at.monotonic_ns + 1_000_000_000;
    let r = system_rates(&a, &b);
    assert_eq!(r.interval_s, 1.0);
    let cpu = r.cpu.unwrap();
    assert!(cpu.busy > 0.0 && cpu.busy <= 100.0, "{cpu:?}");
    let sum = cpu.user + cpu.nice + cpu.system + cpu.idle + cpu.iowait + cpu.irq + cpu.softirq + cpu.steal;
    assert!((sum - 100.0).abs() < 1e-6);
    assert_eq!(r.per_cpu.len(), 2);
    assert!(r.ctxt_per_s.unwrap() > 0.0 && r.forks_per_s.unwrap() > 0.0);
    assert!(r.pressure.cpu_some.is_some());
    let vda = r.disks.iter().find(|d| d.name == "vda").unwrap();
    assert!(vda.write_iops.unwrap() > 0.0, "16 MiB were written between the snapshots: {vda:?}");
    assert!(vda.write_kib_per_s.unwrap() >= 8192.0, "{vda:?}");
    assert!(vda.util_pct.unwrap() > 0.0);
    let lo = r.net.iter().find(|n| n.name == "lo").unwrap();
    assert!(lo.rx_bytes_per_s.unwrap() > 0.0);
    let tcp = r.tcp.unwrap();
    assert!(tcp.active_opens_per_s.unwrap() >= 30.0, "{tcp:?}");
    assert!(r.softirqs.as_ref().unwrap().net_rx_per_s.as_ref().unwrap().iter().all(|v| v.is_some()));
    assert_eq!(r.rapl_w, None);

    // The busiest softirq CPU, beside the other's share and its NET_RX share.
    let busiest = scalelab_analyze::telemetry::busiest_softirq_cpu(&r).expect("two CPUs with per-CPU figures");
    let per: Vec<f64> = r.per_cpu.iter().map(|c| c.pct.unwrap().softirq).collect();
    assert_eq!(busiest.softirq_pct, per.iter().copied().fold(f64::MIN, f64::max));
    assert_eq!(busiest.others_softirq_pct, per.iter().sum::<f64>() - busiest.softirq_pct);
    let rx = r.softirqs.as_ref().unwrap().net_rx_per_s.clone().unwrap();
    let total: f64 = rx.iter().map(|v| v.unwrap()).sum();
    assert_eq!(busiest.net_rx_per_s, Some(total));
    let share = busiest.net_rx_share_pct.unwrap();
    assert!((0.0..=100.0).contains(&share));
    assert!((share - 100.0 * rx[busiest.cpu as usize].unwrap() / total).abs() < 1e-9);
    // One CPU: no "busiest" to name.
    let mut one = r.clone();
    one.per_cpu.truncate(1);
    assert_eq!(scalelab_analyze::telemetry::busiest_softirq_cpu(&one), None);

    // Backwards (t1 then t0): every counter rate is None, not negative or 0.
    let mut back_a = b.clone();
    back_a.at = a.at;
    let mut back_b = a.clone();
    back_b.at = b.at;
    let back = system_rates(&back_a, &back_b);
    assert_eq!(back.cpu, None);
    assert_eq!(back.ctxt_per_s, None);
    assert_eq!(back.disks.iter().find(|d| d.name == "vda").unwrap().write_iops, None);
    assert_eq!(back.tcp.unwrap().active_opens_per_s, None);
}
