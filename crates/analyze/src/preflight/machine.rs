//! Judgements of the machine: frequency, SMT, memory, noise before the run,
//! and where the client and the server run.

use super::check::{cpus_text, judge, ok, other_work, unavailable, warn};
use scalelab_core::preflight::{Check, PreflightFacts, PreflightPlan};

pub fn checks(f: &PreflightFacts, plan: &PreflightPlan, out: &mut Vec<Check>) {
    out.push(judge(
        "cpu.governor",
        &f.governors,
        "a governor other than `performance` lowers the clock while load is light, so the first steps run slower than the last and scaling looks better than it is",
        "`cpupower frequency-set -g performance` (or write `performance` to /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
        |g| {
            let other = g.iter().filter(|s| *s != "performance").count();
            let mut names: Vec<&str> = g.iter().map(String::as_str).collect();
            names.dedup();
            (other > 0, format!("{} on {} CPU(s){}", names.join("/"), g.len(), if other > 0 { format!(", {other} not `performance`") } else { String::new() }))
        },
    ));
    out.push(judge(
        "cpu.boost",
        &f.boost,
        "with turbo on, one busy core clocks higher than many: a 1-client step gets a faster CPU than a 32-client step, and results move with temperature",
        "turn turbo off for the run: `echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo` or `echo 0 > /sys/devices/system/cpu/cpufreq/boost`",
        |on| (*on, if *on { "turbo/boost on".into() } else { "turbo/boost off".into() }),
    ));
    out.push(judge(
        "cpu.smt",
        &f.smt,
        "two hardware threads share one core: steps beyond the physical core count gain far less than the logical CPU count promises",
        "read the curve against physical cores, or turn SMT off for the run: `echo off > /sys/devices/system/cpu/smt/control`",
        |on| (*on, if *on { "SMT on".into() } else { "SMT off".into() }),
    ));
    out.push(judge(
        "mem.thp",
        &f.thp,
        "transparent huge pages set to `always` make the kernel compact memory and collapse pages in the background: latency spikes, and databases advise against it",
        "`echo madvise > /sys/kernel/mm/transparent_hugepage/enabled`",
        |m| (m == "always", format!("transparent huge pages: {m}")),
    ));
    out.push(judge(
        "mem.swap",
        &f.swap_kib,
        "swap in use means memory ran short: pages of the server or the client may fault in from disk during the run",
        "free memory (stop other work) or `swapoff -a && swapon -a` to bring swapped pages back before the run",
        |(used, total)| {
            if *total == 0 {
                (false, "no swap".into())
            } else {
                (*used > 0, format!("{:.1} MiB of {:.1} MiB swap in use", *used as f64 / 1024.0, *total as f64 / 1024.0))
            }
        },
    ));
    out.push(judge(
        "cpu.steal",
        &f.steal_ticks,
        "steal time is CPU the hypervisor gave to another guest: a noisy neighbour takes cycles at random, so results vary between runs",
        "run on dedicated cores (a dedicated host or instance type), or repeat runs and compare their spread",
        |(steal, total)| {
            let pct = if *total == 0 { 0.0 } else { *steal as f64 * 100.0 / *total as f64 };
            (pct >= 1.0, format!("steal {pct:.2}% of CPU time since boot"))
        },
    ));
    out.push(load(f));
    out.push(super::noise::check(f));
    out.push(placement(f, plan));
}

/// Load average and CPU pressure before the run.
fn load(f: &PreflightFacts) -> Check {
    let id = "cpu.load";
    let why = "other work running before the load starts competes with the server and the client: the run measures what is left";
    let fix = "stop other work on the machine (builds, backups, other benchmarks) and wait for the load average to fall";
    if let (Err(e), Err(p)) = (&f.load1, &f.cpu_pressure) {
        return unavailable(id, &format!("{e}; {p}"), why);
    }
    let cpus = f.logical_cpus.as_ref().copied().unwrap_or(1).max(1);
    let mut parts = Vec::new();
    if let Ok(l) = &f.load1 {
        parts.push(format!("load average {l:.2} on {cpus} CPU(s)"));
    }
    if let Ok(p) = &f.cpu_pressure {
        parts.push(format!("CPU pressure {p:.1}% (some, avg10)"));
    }
    if other_work(f) {
        warn(id, parts.join(", "), why, fix)
    } else {
        ok(id, parts.join(", "), why)
    }
}

/// Client and server on the same CPUs.
fn placement(f: &PreflightFacts, plan: &PreflightPlan) -> Check {
    let id = "cpu.placement";
    let why =
        "a load generator on the server's CPUs takes cycles from it: what is measured is the pair, and the client may be the bottleneck";
    // A server process found here shares this machine, whatever its address.
    let server = match &f.server_cpus {
        Ok(c) => c,
        Err(_) if !plan.target.is_loopback() => return ok(id, "the server is not a process on this machine".into(), why),
        Err(e) => return unavailable(id, e, why),
    };
    let pinned = plan.client_pinned;
    let client: Vec<u32> = if plan.client_cpus.is_empty() {
        match &f.logical_cpus {
            Ok(n) => (0..*n).collect(),
            Err(e) => return unavailable(id, e, why),
        }
    } else {
        plan.client_cpus.iter().map(|c| *c as u32).collect()
    };
    let shared: Vec<u32> = client.iter().copied().filter(|c| server.contains(c)).collect();
    let figure = format!(
        "client threads {} CPUs {} ({}), server may run on CPUs {}{}",
        if plan.busy_poll { "busy-poll on" } else { "on" },
        cpus_text(&client),
        if pinned { "pinned" } else { "not pinned" },
        cpus_text(server),
        if shared.is_empty() { String::new() } else { format!(": {} shared", shared.len()) }
    );
    if shared.is_empty() {
        ok(id, figure, why)
    } else if plan.busy_poll {
        // PostgreSQL point-select at 10 clients on the 2-vCPU VM, two
        // client threads on both CPUs: p99 0.59 ms asleep, 4.6 ms polling.
        warn(
            id,
            figure,
            "a busy-polling client holds its CPUs whether it has work or not: the server's threads there wait for its time slice to end, and the latency tail is the client's doing (PostgreSQL at 10 clients on a 2-CPU VM: p99 0.59 ms asleep, 4.6 ms polling)",
            "give the client CPUs of its own (`taskset -c OTHER scalelab ...`, the server under `taskset -c LIST`), or drop --busy-poll",
        )
    } else {
        warn(
            id,
            figure,
            why,
            "give each its own CPUs: start the server under `taskset -c LIST` and keep the client off them (`taskset -c OTHER scalelab ...`), or load from another host",
        )
    }
}
