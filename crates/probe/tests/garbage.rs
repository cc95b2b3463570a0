//! Truncated and garbage inputs must give `None` plus an "unavailable"
//! reason: never a panic, never a 0, never a wrong number.

mod common;

use common::{host, mangled_copy, server};
use scalelab_probe::{ProcessSampler, Source, SystemSample, SystemSampler, ThreadSampler};

/// Every sampled field of a system sample is `None`.
fn all_none(s: &SystemSample) -> bool {
    s.cpu.is_none()
        && s.load.is_none()
        && s.pressure.cpu.is_none()
        && s.pressure.io.is_none()
        && s.pressure.memory.is_none()
        && s.memory.is_none()
        && s.softirqs.is_none()
        && s.interrupts.is_none()
        && s.disks.is_none()
        && s.net.is_none()
        && s.tcp.is_none()
        && s.tcp_states.is_none()
        && s.ports.is_none()
        && s.sockstat.is_none()
        && s.tcp_mem.is_none()
        && s.files.is_none()
        && s.power.is_none()
}

#[test]
fn garbage_everywhere_is_unavailable() {
    for garbage in [&b"hello world: this is not a kernel file\nnor = this 12 x\n"[..], b"\xff\xfe\x00\x01binary", b""] {
        let (_dir, roots) = mangled_copy("t0", &|_, _| garbage.to_vec());
        let mut sampler = SystemSampler::new(&roots);
        let s = sampler.sample();
        assert!(all_none(&s), "{garbage:?}: {s:#?}");
        for source in [Source::Stat, Source::Meminfo, Source::TcpMib, Source::TcpSockets, Source::FileHandles, Source::Power] {
            assert!(s.newly_unavailable.iter().any(|u| u.source == source), "{source:?} not reported for {garbage:?}");
        }
        let again = sampler.sample().newly_unavailable;
        assert!(again.is_empty(), "each reason is reported once: {again:?}");

        let srv = server();
        let p = ProcessSampler::new(&roots, srv.pid).sample();
        assert!(!p.alive && p.cpu_user_ticks.is_none() && p.voluntary_ctxt_switches.is_none());

        let mut t = ThreadSampler::new(&roots, srv.pid);
        t.tick();
        let iv = t.take_interval();
        assert!(iv.threads.iter().all(|t| t.cpu_ns == 0));
        assert_eq!(iv.shares(), None, "nothing measured is not 0 %");
        assert!(iv.newly_unavailable.iter().any(|u| u.source == Source::Threads), "{:?}", iv.newly_unavailable);
    }
}

/// Cut every file at `frac` of its length (mostly mid-line).
fn cut(frac: f64) -> impl Fn(&std::path::Path, &[u8]) -> Vec<u8> {
    move |_, b| b[..(b.len() as f64 * frac) as usize].to_vec()
}

#[test]
fn truncated_files_give_none_or_the_true_value() {
    let full = SystemSampler::new(&host("t0")).sample();
    for frac in [0.0, 0.13, 0.37, 0.5, 0.71, 0.93, 0.999] {
        let (_dir, roots) = mangled_copy("t0", &cut(frac));
        let s = SystemSampler::new(&roots).sample();
        let ctx = format!("cut at {frac}");
        // Single values: absent, or exactly what the whole file says.
        let same = |a: Option<u64>, b: Option<u64>, what: &str| assert!(a.is_none() || a == b, "{ctx}: {what} {a:?} vs {b:?}");
        if let Some(c) = &s.cpu {
            let f = full.cpu.as_ref().unwrap();
            assert!(c.total.is_none() || c.total == f.total, "{ctx}: cpu");
            same(c.ctxt, f.ctxt, "ctxt");
            same(c.intr, f.intr, "intr");
            same(c.forks, f.forks, "forks");
            same(c.procs_running, f.procs_running, "procs_running");
            same(c.procs_blocked, f.procs_blocked, "procs_blocked");
            assert!(c.per_cpu.iter().all(|p| f.per_cpu.contains(p)), "{ctx}: per cpu");
        }
        assert!(s.load.is_none() || s.load == full.load, "{ctx}: load");
        for (psi, fpsi) in [(s.pressure.cpu, full.pressure.cpu), (s.pressure.io, full.pressure.io)] {
            if let (Some(p), Some(f)) = (psi, fpsi) {
                assert_eq!(p.some, f.some, "{ctx}: psi some");
                assert!(p.full.is_none() || p.full == f.full, "{ctx}: psi full");
            }
        }
        if let Some(m) = s.memory {
            let f = full.memory.unwrap();
            same(m.total_kib, f.total_kib, "MemTotal");
            same(m.available_kib, f.available_kib, "MemAvailable");
            same(m.dirty_kib, f.dirty_kib, "Dirty");
            same(m.swap_free_kib, f.swap_free_kib, "SwapFree");
        }
        if let Some(sq) = &s.softirqs {
            let f = full.softirqs.as_ref().unwrap();
            assert!(sq.net_rx.is_none() || sq.net_rx == f.net_rx, "{ctx}: NET_RX");
            assert!(sq.sched.is_none() || sq.sched == f.sched, "{ctx}: SCHED");
        }
        assert!(s.interrupts.is_none() || s.interrupts == full.interrupts, "{ctx}: interrupts");
        if let Some(d) = &s.disks {
            assert!(d.iter().all(|x| full.disks.as_ref().unwrap().contains(x)), "{ctx}: disks");
        }
        if let Some(n) = &s.net {
            assert!(n.iter().all(|x| full.net.as_ref().unwrap().contains(x)), "{ctx}: net");
        }
        if let Some(t) = s.tcp {
            let f = full.tcp.unwrap();
            same(t.active_opens, f.active_opens, "ActiveOpens");
            same(t.retrans_segs, f.retrans_segs, "RetransSegs");
            same(t.out_rsts, f.out_rsts, "OutRsts");
            same(t.listen_overflows, f.listen_overflows, "ListenOverflows");
            same(t.listen_drops, f.listen_drops, "ListenDrops");
        }
        assert!(s.tcp_states.is_none() || s.tcp_states == full.tcp_states, "{ctx}: tcp states");
        assert!(s.ports.is_none() || s.ports == full.ports, "{ctx}: ports");
        if let Some(st) = s.sockstat {
            let f = full.sockstat.unwrap();
            same(st.tcp_inuse, f.tcp_inuse, "sockstat inuse");
            same(st.tcp_tw, f.tcp_tw, "sockstat tw");
            same(st.tcp_mem_pages, f.tcp_mem_pages, "sockstat mem");
        }
        assert!(s.tcp_mem.is_none() || s.tcp_mem == full.tcp_mem, "{ctx}: tcp_mem");
        assert!(s.files.is_none() || s.files == full.files, "{ctx}: file-nr");

        let srv = server();
        let fp = ProcessSampler::new(&host("t0"), srv.pid).sample();
        let p = ProcessSampler::new(&roots, srv.pid).sample();
        same(p.cpu_user_ticks, fp.cpu_user_ticks, "process utime");
        same(p.threads, fp.threads, "process threads");
        assert!(p.io.is_none() || p.io == fp.io, "{ctx}: process io");
        if let (Some(v), Some(fv)) = (p.voluntary_ctxt_switches, fp.voluntary_ctxt_switches) {
            assert!(v <= fv, "{ctx}: a cut status never adds switches");
        }

        // Threads: a thread whose files are cut is dropped or classified as
        // in the whole files (a cut wchan symbol still names its stem).
        let states = |roots: &scalelab_probe::Roots| {
            let mut t = ThreadSampler::new(roots, srv.pid);
            t.tick();
            t.take_interval().threads.into_iter().map(|t| (t.tid, t.state)).collect::<Vec<_>>()
        };
        let whole = states(&host("t0"));
        for (tid, state) in states(&roots) {
            let want = whole.iter().find(|(t, _)| *t == tid).unwrap().1;
            assert_eq!(state, want, "{ctx}: thread {tid}");
        }
    }
}
