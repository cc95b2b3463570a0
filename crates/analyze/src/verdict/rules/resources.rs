//! Rules about the machine's resources: CPU (the server's or someone
//! else's) and disk.

use super::*;

pub(super) fn cpu_bound(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let busy = t.cpu_busy_pct?;
    if busy < CPU_SATURATED_PCT {
        return None;
    }
    let cores = ctx.env.logical_cores.filter(|c| *c > 0).map(f64::from);
    // The server's own CPU must agree: a server using a sliver of the busy
    // CPU is not CPU-bound, whatever else fills the machine.
    let server_of_busy = t.server_cpu_pct.zip(cores).map(|(s, c)| (s / 100.0) / (busy / 100.0 * c));
    if server_of_busy.is_some_and(|share| share < SERVER_OF_BUSY_MIN) {
        return cpu_busy_elsewhere(ctx, t, busy, cores?);
    }
    // Without the user/system split the kind cannot be named: no verdict.
    let (user, sys) = (t.cpu_user_pct?, t.cpu_sys_pct?);
    let sys_share = if user + sys > 0.0 { 100.0 * sys / (user + sys) } else { 50.0 };
    let (kind, headline, next) = if sys_share.max(100.0 - sys_share) <= CPU_SPLIT_EVEN_PCT {
        (
            VerdictKind::CpuBoundMixed,
            "every core is busy, split about evenly between user space and the kernel: the server's code and the kernel paths it drives (syscalls, network stack) are both the work",
            "profile both sides together: re-run with `--profile` (user and kernel stacks of the server per step, flame graphs in the report; docs/profiles.md) or `perf record -g -p PID`; /proc/softirqs per CPU for the network share",
        )
    } else if sys >= user {
        (
            VerdictKind::CpuBoundKernel,
            "every core is busy, mostly in the kernel: syscalls, the network stack or kernel locks are the work",
            "see which kernel paths burn the time: re-run with `--profile` (kernel stacks per step; docs/profiles.md) or `perf top -g` with kernel symbols, `perf trace -s` for syscall counts, /proc/softirqs per CPU",
        )
    } else {
        (
            VerdictKind::CpuBoundUser,
            "every core is busy, mostly in user space: the server's own code is the work",
            "profile the server's code: re-run with `--profile` (the hottest functions named here, a flame graph per step in the report; docs/profiles.md) or `perf record -g -p PID`",
        )
    };
    // The load generator on the same cores: the server scaled until the
    // cores were full, and part of what filled them was the client.
    let client_cores = (ctx.step.window_s > 0.0).then(|| ctx.step.client_cpu_s / ctx.step.window_s);
    let client_of_busy = client_cores.zip(cores).map(|(c, n)| 100.0 * c / (busy / 100.0 * n).max(f64::EPSILON));
    // Neither the server nor the client: other processes on these cores.
    let others_of_busy = t
        .server_cpu_pct
        .zip(cores)
        .map(|(s, n)| 100.0 - 100.0 * (s / 100.0 + client_cores.unwrap_or(0.0)) / (busy / 100.0 * n).max(f64::EPSILON))
        .map(|o| o.max(0.0));
    let mut d = Draft::new(kind, ctx, headline, next);
    let others = others_of_busy.filter(|o| *o >= OTHERS_OF_BUSY_NOTE_PCT);
    match (client_of_busy.filter(|s| *s >= CLIENT_OF_BUSY_NOTE_PCT), others) {
        (Some(share), None) => {
            d.v.headline = format!(
                "{headline}; the load generator shares these cores and used {share:.0} % of the busy CPU, so the server had the rest"
            )
        }
        (client, Some(o)) => {
            let server = 100.0 - o - client.unwrap_or(0.0);
            let client = client.map(|c| format!("the load generator {c:.0} % and ")).unwrap_or_default();
            d.v.headline = format!(
                "{headline}; but {client}other processes {o:.0} % of the busy CPU (the server had {server:.0} %): part of this limit is theirs, stop them and re-run"
            );
        }
        (None, None) => {}
    }
    d.ev("CPU busy", Some(busy), "%");
    d.ev("CPU user", Some(user), "%");
    d.ev("CPU sys", Some(sys), "%");
    d.ev("CPU softirq", t.cpu_softirq_pct, "%");
    d.ev("server CPU", t.server_cpu_pct, "% of one core");
    d.ev("load generator CPU", client_cores.map(|c| 100.0 * c), "% of one core");
    d.ev("load generator share of the busy CPU", client_of_busy, "%");
    d.ev("other processes' share of the busy CPU", others, "%");
    d.ev("logical cores", cores, "cores");
    // Corroboration: the server, not a neighbour (or the client), uses the CPU.
    let server_share = t.server_cpu_pct.zip(cores).map(|(s, c)| s / (100.0 * c));
    // Other processes took a real share: the server did not have the machine
    // (one doubt, not two, when its own share is already too small).
    let others_doubt = others.is_some() && server_share.is_some_and(|s| s >= SERVER_CPU_SHARE);
    d.check(server_share.map(|s| s >= SERVER_CPU_SHARE && !others_doubt), || {
        if t.server_cpu_pct.is_none() {
            ctx.why("server CPU", SERVER)
        } else {
            "logical cores: not recorded in the environment".to_string()
        }
    });
    Some(d.done())
}

/// Every core busy while the server used under [`SERVER_OF_BUSY_MIN`] of the
/// busy CPU: say who used it, the load generator (its own CPU time) or other
/// processes (the rest), instead of blaming the server.
pub(super) fn cpu_busy_elsewhere(ctx: &Ctx, t: &StepTelemetry, busy: f64, cores: f64) -> Option<Verdict> {
    let busy_cores = busy / 100.0 * cores;
    let server_cores = t.server_cpu_pct? / 100.0;
    let client_cores = (ctx.step.window_s > 0.0).then(|| ctx.step.client_cpu_s / ctx.step.window_s);
    let others = (busy_cores - server_cores - client_cores.unwrap_or(0.0)).max(0.0);
    let by_client = client_cores.is_some_and(|c| c >= others);
    let headline = if by_client {
        "every core is busy, but not with the server: the load generator used most of the CPU; the server was not CPU-bound"
    } else {
        "every core is busy, but not with the server: other processes used most of the CPU; the server was not CPU-bound, it shared the machine"
    };
    let next = if by_client {
        "give the load generator its own cores or machine (`taskset`, fewer client threads) and re-run"
    } else {
        "find what else ran (`top`, `pidstat -u 1`), stop it or move it to other cores (`taskset`, cgroups), and re-run: this run says little about the server"
    };
    let mut d = Draft::new(VerdictKind::CpuBusyElsewhere, ctx, headline, next);
    d.ev("CPU busy", Some(busy), "%");
    d.ev("server CPU", t.server_cpu_pct, "% of one core");
    d.ev("server share of the busy CPU", Some(100.0 * server_cores / busy_cores.max(f64::EPSILON)), "%");
    d.ev("load generator CPU", client_cores.map(|c| 100.0 * c), "% of one core");
    d.ev("other processes CPU", Some(100.0 * others), "% of one core");
    d.ev("logical cores", Some(cores), "cores");
    d.check(client_cores.map(|_| true), || "load generator CPU: not measured (all of the rest counted as other processes)".to_string());
    Some(d.done())
}

pub(super) fn disk_bound(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let iowait = t.cpu_iowait_pct;
    let io = t.thread_states_pct.map(|s| s.io);
    let by_iowait = iowait.is_some_and(|w| w >= IOWAIT_PCT);
    // iowait is idle time with I/O pending: CPUs kept busy by other
    // processes never idle, so a neighbour's CPU hog hides it. The server's
    // own threads in disk wait show the disk whatever the neighbours do.
    let hidden = cpu_not_saturated(Some(t)) == Some(false);
    // The same hog queues the server's threads for a CPU, which shrinks
    // every other state's share of their time: judged on the time they were
    // not queued (beside stress-ng and the test suite a disk-bound server's
    // share fell below the threshold while it still fsynced thousands a second).
    let io_unqueued = t.thread_states_pct.filter(|s| s.runnable < 100.0).map(|s| 100.0 * s.io / (100.0 - s.runnable));
    let by_threads = hidden && io_unqueued.is_some_and(|io| io >= THREAD_IO_PCT);
    if !by_iowait && !by_threads {
        return None;
    }
    let mut d = Draft::new(
        VerdictKind::DiskBound,
        ctx,
        "the CPUs wait for I/O and the server's threads block on the disk",
        "compare the device's IOPS and latency with its limits (`iostat -x 1`: r/s, w/s, await, %util), watch /proc/pressure/io, and find the files and requests behind it (`biosnoop`, `biolatency`)",
    );
    d.ev("CPU iowait", iowait, "%");
    d.ev("disk", t.disk_iops, "IOPS");
    d.ev("server threads in disk wait", io, "%");
    if by_threads {
        d.ev("server threads in disk wait, of their time not queued for a CPU", io_unqueued, "%");
    }
    d.ev("fsyncs (the specimen's own count)", t.specimen.map(|s| s.fsyncs_per_s).filter(|f| *f > 0.0), "/s");
    d.check(t.disk_iops.map(|i| i > 0.0), || ctx.why("disk IOPS", SYSTEM));
    d.check(io_unqueued.map(|io| io >= THREAD_IO_PCT), || ctx.why("server thread states", THREADS));
    if !by_iowait {
        // Judged on the threads alone: the machine-wide figure could not agree.
        d.check(Some(false), String::new);
        d.v.headline = "the server's threads block on the disk (the CPUs' iowait is hidden: other work keeps every CPU busy)".into();
    }
    Some(d.done())
}
