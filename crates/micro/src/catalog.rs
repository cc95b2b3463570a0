//! Every figure the suite can produce: id, group, human name and unit, in
//! display order. The single source of names for results, tables, published
//! imports and docs/micro.md.

use crate::model::{Group, Unit};

/// The fixed description of one figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FigureInfo {
    pub id: &'static str,
    pub group: Group,
    pub name: &'static str,
    pub unit: Unit,
}

const fn f(id: &'static str, group: Group, name: &'static str, unit: Unit) -> FigureInfo {
    FigureInfo { id, group, name, unit }
}

use Group::*;
use Unit::*;

/// All fixed figures in display order. The memory-latency curve adds
/// `mem_curve_<size>` ids on top of these (see [`curve_id`]).
pub const CATALOG: &[FigureInfo] = &[
    f("null_call", Procs, "null call (getppid)", Us),
    f("null_io", Procs, "null I/O (1-byte read + write, averaged)", Us),
    f("stat", Procs, "stat", Us),
    f("open_close", Procs, "open+close", Us),
    f("select_file_100", Procs, "select on 100 file fds", Us),
    f("select_tcp_100", Procs, "select on 100 TCP sockets", Us),
    f("sig_install", Procs, "signal handler install", Us),
    f("sig_catch", Procs, "signal handler catch", Us),
    f("prot_fault", Procs, "protection fault", Us),
    f("fork_exit", Procs, "fork+exit", Us),
    f("fork_exec", Procs, "fork+exec", Us),
    f("fork_sh", Procs, "fork+/bin/sh -c", Us),
    f("thread_create", Threads, "pthread create+join", Us),
    f("mutex_uncontended", Threads, "mutex lock+unlock, uncontended", Ns),
    f("mutex_handoff", Threads, "mutex hand-off between 2 threads", Us),
    f("futex_wake", Threads, "futex wake latency", Us),
    f("lock_spin_2t", Threads, "spinlock, 2 threads: throughput", MopsPerS),
    f("lock_spin_2t_cpu", Threads, "spinlock, 2 threads: CPU per acquisition", Ns),
    f("lock_mutex_2t", Threads, "mutex, 2 threads: throughput", MopsPerS),
    f("lock_mutex_2t_cpu", Threads, "mutex, 2 threads: CPU per acquisition", Ns),
    f("lock_spin_4t", Threads, "spinlock, 4 threads: throughput", MopsPerS),
    f("lock_spin_4t_cpu", Threads, "spinlock, 4 threads: CPU per acquisition", Ns),
    f("lock_mutex_4t", Threads, "mutex, 4 threads: throughput", MopsPerS),
    f("lock_mutex_4t_cpu", Threads, "mutex, 4 threads: CPU per acquisition", Ns),
    f("lock_spin_8t", Threads, "spinlock, 8 threads: throughput", MopsPerS),
    f("lock_spin_8t_cpu", Threads, "spinlock, 8 threads: CPU per acquisition", Ns),
    f("lock_mutex_8t", Threads, "mutex, 8 threads: throughput", MopsPerS),
    f("lock_mutex_8t_cpu", Threads, "mutex, 8 threads: CPU per acquisition", Ns),
    f("ctx_2p_0k", Ctx, "context switch, 2 procs, 0 KB", Us),
    f("ctx_4p_0k", Ctx, "context switch, 4 procs, 0 KB", Us),
    f("ctx_8p_0k", Ctx, "context switch, 8 procs, 0 KB", Us),
    f("ctx_16p_0k", Ctx, "context switch, 16 procs, 0 KB", Us),
    f("ctx_2p_16k", Ctx, "context switch, 2 procs, 16 KB", Us),
    f("ctx_4p_16k", Ctx, "context switch, 4 procs, 16 KB", Us),
    f("ctx_8p_16k", Ctx, "context switch, 8 procs, 16 KB", Us),
    f("ctx_16p_16k", Ctx, "context switch, 16 procs, 16 KB", Us),
    f("ctx_2p_64k", Ctx, "context switch, 2 procs, 64 KB", Us),
    f("ctx_4p_64k", Ctx, "context switch, 4 procs, 64 KB", Us),
    f("ctx_8p_64k", Ctx, "context switch, 8 procs, 64 KB", Us),
    f("ctx_16p_64k", Ctx, "context switch, 16 procs, 64 KB", Us),
    f("pipe_latency", Latency, "pipe round trip", Us),
    f("unix_latency", Latency, "AF_UNIX stream round trip", Us),
    f("udp_latency", Latency, "UDP round trip", Us),
    f("tcp_latency", Latency, "TCP round trip (1 byte)", Us),
    f("tcp_connect", Latency, "TCP connect+close", Us),
    f("pipe_latency_same_cpu", Latency, "pipe round trip, one CPU", Us),
    f("unix_latency_same_cpu", Latency, "AF_UNIX round trip, one CPU", Us),
    f("udp_latency_same_cpu", Latency, "UDP round trip, one CPU", Us),
    f("tcp_latency_same_cpu", Latency, "TCP round trip, one CPU", Us),
    f("tcp_connect_same_cpu", Latency, "TCP connect+close, one CPU", Us),
    f("bw_pipe", Bandwidth, "pipe bandwidth", MbPerS),
    f("bw_unix", Bandwidth, "AF_UNIX bandwidth", MbPerS),
    f("bw_tcp", Bandwidth, "TCP bandwidth", MbPerS),
    f("bw_file_reread", Bandwidth, "file reread (read)", MbPerS),
    f("bw_mmap_reread", Bandwidth, "mmap reread", MbPerS),
    f("bw_mem_rd", Bandwidth, "memory read", MbPerS),
    f("bw_mem_wr", Bandwidth, "memory write", MbPerS),
    f("bw_mem_cp", Bandwidth, "memory copy", MbPerS),
    f("mem_lat_l1", Memory, "memory latency, L1 cache", Ns),
    f("mem_lat_l2", Memory, "memory latency, L2 cache", Ns),
    f("mem_lat_llc", Memory, "memory latency, last-level cache", Ns),
    f("mem_lat_main", Memory, "memory latency, main memory", Ns),
    f("flops_1", Fpu, "flops kernel 1 (50% add, 43% mul, 7% div)", Mflops),
    f("flops_2", Fpu, "flops kernel 2 (43% add, 29% sub, 14% mul, 14% div)", Mflops),
    f("flops_3", Fpu, "flops kernel 3 (35% add, 12% sub, 53% mul)", Mflops),
    f("flops_4", Fpu, "flops kernel 4 (47% add, 53% mul)", Mflops),
    f("flops_5", Fpu, "flops kernel 5 (45% add, 52% mul, 3% div)", Mflops),
    f("flops_6", Fpu, "flops kernel 6 (45% add, 55% mul)", Mflops),
    f("flops_7", Fpu, "flops kernel 7 (25% each of add, sub, mul, div)", Mflops),
    f("flops_8", Fpu, "flops kernel 8 (43% add, 57% mul)", Mflops),
    f("flops_avg", Fpu, "flops average of the 8 kernels", Mflops),
];

/// One of lmbench's summary tables: its title, whether it shows the Mhz
/// column, and its (header, figure id) columns. The one place a figure's
/// lmbench header lives: published tables are read by these headers
/// (`analyze`'s import) and our runs are tabled under them (`report`).
pub struct SummaryTable {
    pub title: &'static str,
    pub mhz: bool,
    pub cols: &'static [(&'static str, &'static str)],
}

/// The summary tables in lmbench's order (lmbench 3's `make see`), then
/// ours (threads, locks, flops) after them.
pub const LMBENCH_TABLES: &[SummaryTable] = &[
    SummaryTable {
        title: "Processor, Processes - times in microseconds - smaller is better",
        mhz: true,
        cols: &[
            ("null call", "null_call"),
            ("null I/O", "null_io"),
            ("stat", "stat"),
            ("open clos", "open_close"),
            ("slct TCP", "select_tcp_100"),
            ("sig inst", "sig_install"),
            ("sig hndl", "sig_catch"),
            ("fork proc", "fork_exit"),
            ("exec proc", "fork_exec"),
            ("sh proc", "fork_sh"),
        ],
    },
    SummaryTable {
        title: "File & VM system latencies in microseconds - smaller is better",
        mhz: false,
        cols: &[("Prot Fault", "prot_fault"), ("100fd selct", "select_file_100")],
    },
    SummaryTable {
        title: "Context switching - times in microseconds - smaller is better",
        mhz: false,
        cols: &[
            ("2p/0K ctxsw", "ctx_2p_0k"),
            ("2p/16K ctxsw", "ctx_2p_16k"),
            ("2p/64K ctxsw", "ctx_2p_64k"),
            ("8p/16K ctxsw", "ctx_8p_16k"),
            ("8p/64K ctxsw", "ctx_8p_64k"),
            ("16p/16K ctxsw", "ctx_16p_16k"),
            ("16p/64K ctxsw", "ctx_16p_64k"),
        ],
    },
    SummaryTable {
        title: "*Local* Communication latencies in microseconds - smaller is better",
        mhz: false,
        cols: &[
            ("2p/0K ctxsw", "ctx_2p_0k"),
            ("Pipe", "pipe_latency"),
            ("AF UNIX", "unix_latency"),
            ("UDP", "udp_latency"),
            ("TCP", "tcp_latency"),
            ("TCP conn", "tcp_connect"),
        ],
    },
    SummaryTable {
        title: "*Local* Communication latencies, both ends on one CPU, in microseconds - smaller is better",
        mhz: false,
        cols: &[
            ("Pipe", "pipe_latency_same_cpu"),
            ("AF UNIX", "unix_latency_same_cpu"),
            ("UDP", "udp_latency_same_cpu"),
            ("TCP", "tcp_latency_same_cpu"),
            ("TCP conn", "tcp_connect_same_cpu"),
        ],
    },
    SummaryTable {
        title: "*Local* Communication bandwidths in MB/s - bigger is better",
        mhz: false,
        cols: &[
            ("Pipe", "bw_pipe"),
            ("AF UNIX", "bw_unix"),
            ("TCP", "bw_tcp"),
            ("File reread", "bw_file_reread"),
            ("Mmap reread", "bw_mmap_reread"),
            ("Mem copy", "bw_mem_cp"),
            ("Mem read", "bw_mem_rd"),
            ("Mem write", "bw_mem_wr"),
        ],
    },
    SummaryTable {
        title: "Memory latencies in nanoseconds - smaller is better",
        mhz: false,
        cols: &[("L1 $", "mem_lat_l1"), ("L2 $", "mem_lat_l2"), ("LLC $", "mem_lat_llc"), ("Main mem", "mem_lat_main")],
    },
    SummaryTable {
        title: "Threads and locks - microseconds (mutex in ns) - smaller is better",
        mhz: false,
        cols: &[
            ("thread create", "thread_create"),
            ("mutex ns", "mutex_uncontended"),
            ("mutex handoff", "mutex_handoff"),
            ("futex wake", "futex_wake"),
        ],
    },
    SummaryTable {
        title: "Lock contention - Mops/s bigger is better; CPU ns per acquisition smaller is better",
        mhz: false,
        cols: &[
            ("spin 2t", "lock_spin_2t"),
            ("mutex 2t", "lock_mutex_2t"),
            ("spin 4t", "lock_spin_4t"),
            ("mutex 4t", "lock_mutex_4t"),
            ("spin 8t", "lock_spin_8t"),
            ("mutex 8t", "lock_mutex_8t"),
            ("spin 8t cpu", "lock_spin_8t_cpu"),
            ("mutex 8t cpu", "lock_mutex_8t_cpu"),
        ],
    },
    SummaryTable {
        title: "FPU, flops-style kernels, in MFLOPS - bigger is better",
        mhz: false,
        cols: &[
            ("1", "flops_1"),
            ("2", "flops_2"),
            ("3", "flops_3"),
            ("4", "flops_4"),
            ("5", "flops_5"),
            ("6", "flops_6"),
            ("7", "flops_7"),
            ("8", "flops_8"),
            ("Average", "flops_avg"),
        ],
    },
];

/// The figure id a published lmbench column header names (any table, any
/// case: lmbench 2 wrote "prot fault", lmbench 3 "Prot Fault").
pub fn lmbench_column(header: &str) -> Option<&'static str> {
    LMBENCH_TABLES.iter().flat_map(|t| t.cols.iter()).find(|(h, _)| h.eq_ignore_ascii_case(header)).map(|(_, id)| *id)
}

/// Every lmbench column header, each once, in table order.
pub fn lmbench_headers() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for (h, _) in LMBENCH_TABLES.iter().flat_map(|t| t.cols.iter()) {
        if !out.iter().any(|o| o.eq_ignore_ascii_case(h)) {
            out.push(h);
        }
    }
    out
}

/// The catalog entry of a fixed id.
pub fn info(id: &str) -> Option<&'static FigureInfo> {
    CATALOG.iter().find(|f| f.id == id)
}

/// Position of an id in display order; curve points sort after the fixed
/// memory figures by size, unknown ids last.
pub fn order_key(id: &str) -> (usize, u64) {
    if let Some(pos) = CATALOG.iter().position(|f| f.id == id) {
        return (pos, 0);
    }
    if let Some(bytes) = parse_curve_id(id) {
        let after_mem = CATALOG.iter().position(|f| f.id == "mem_lat_main").unwrap_or(0);
        return (after_mem, bytes);
    }
    (usize::MAX, 0)
}

/// The id of a memory-latency curve point: `mem_curve_4k`, `mem_curve_16m`.
pub fn curve_id(bytes: u64) -> String {
    format!("mem_curve_{}", size_label(bytes).to_ascii_lowercase())
}

/// The size of a curve point back from its id.
pub fn parse_curve_id(id: &str) -> Option<u64> {
    let s = id.strip_prefix("mem_curve_")?;
    let (num, mult) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1u64 << 10),
        'm' => (&s[..s.len() - 1], 1 << 20),
        'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// "4K", "512K", "16M": a power-of-two size as lmbench prints it.
pub fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes % (1 << 30) == 0 {
        format!("{}G", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{}K", bytes >> 10)
    } else {
        format!("{bytes}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_snake_case() {
        for (i, a) in CATALOG.iter().enumerate() {
            assert!(a.id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{}", a.id);
            for b in &CATALOG[i + 1..] {
                assert_ne!(a.id, b.id);
            }
        }
    }

    #[test]
    fn curve_ids_round_trip() {
        for bytes in [4096u64, 1 << 20, 48 << 10, 512 << 20] {
            assert_eq!(parse_curve_id(&curve_id(bytes)), Some(bytes));
        }
        assert_eq!(curve_id(16 << 20), "mem_curve_16m");
        assert!(order_key("mem_curve_4k") < order_key("mem_curve_8k"));
        assert!(order_key("mem_lat_main") < order_key("mem_curve_4k"));
        assert!(order_key("mem_curve_1g") < order_key("flops_1"));
    }
}
