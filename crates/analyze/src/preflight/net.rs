//! Judgements of limits and the network: descriptors, accept queues,
//! ephemeral ports, conntrack, NIC interrupts, RPS/XPS, MTU.

use super::check::{judge, ok, per_client_rate, unavailable, warn, TIME_WAIT_S};
use scalelab_core::preflight::{Check, PreflightFacts, PreflightPlan};

/// Whether TIME_WAIT ports are reused for new outgoing connections
/// (`tcp_tw_reuse` 1, or 2 on loopback: Linux's default since 4.19).
fn tw_reuse_applies(reuse: u8, loopback: bool) -> bool {
    reuse == 1 || (reuse == 2 && loopback)
}

/// The most new connections per second the port range allows toward one
/// server address, and the plan's assumed rate.
fn port_budget(f: &PreflightFacts, plan: &PreflightPlan) -> Option<(u64, u64)> {
    let (lo, hi) = f.port_range.as_ref().ok()?;
    let ports = u64::from(hi - lo) + 1;
    let reuse = f.tcp_tw_reuse.as_ref().is_ok_and(|r| tw_reuse_applies(*r, plan.target.is_loopback()));
    let ceiling = if reuse { ports } else { ports / TIME_WAIT_S };
    Some((ceiling, u64::from(plan.max_concurrency) * per_client_rate(plan.target.is_loopback())))
}

pub fn checks(f: &PreflightFacts, plan: &PreflightPlan, out: &mut Vec<Check>) {
    let n = u64::from(plan.max_concurrency);
    out.push(nofile(f, plan));
    out.push(judge(
        "net.somaxconn",
        &f.somaxconn,
        "net.core.somaxconn caps every listen backlog: when more clients connect at once than the accept queue holds, SYNs are dropped and retried a second later",
        "`sysctl -w net.core.somaxconn=4096` (and a server backlog as large)",
        |s| (*s < n, format!("somaxconn {s} for {}", plan.connections_text())),
    ));
    out.push(backlog(f, plan));
    let why_ports = "each connection from the client takes an ephemeral port, and without keep-alive a closed one stays in TIME_WAIT for 60 s: when the range runs out, connect fails (EADDRNOTAVAIL) and the client, not the server, sets the limit";
    let fix_ports = "`sysctl -w net.ipv4.ip_local_port_range='1024 65535'` and `sysctl -w net.ipv4.tcp_tw_reuse=1`, or use keep-alive, or more source addresses (--source-address)";
    out.push(judge("net.port_range", &f.port_range, why_ports, fix_ports, |(lo, hi)| {
        let ports = u64::from(hi - lo) + 1;
        if plan.keepalive || plan.target.kind().capabilities().persistent_connections {
            return (ports < n, format!("{ports} ports ({lo}-{hi}) for {n} connections kept open"));
        }
        let (ceiling, planned) = port_budget(f, plan).unwrap_or((ports / TIME_WAIT_S, 0));
        (ceiling < planned, format!("{ports} ports ({lo}-{hi}): at most ~{ceiling} new connections/s to one server address; {} without keep-alive may open ~{planned}/s", plan.connections_text()))
    }));
    out.push(judge(
        "net.tcp_tw_reuse",
        &f.tcp_tw_reuse,
        "with tcp_tw_reuse off (or 2, loopback only, toward another host) a port in TIME_WAIT waits 60 s before a new connection may take it",
        "`sysctl -w net.ipv4.tcp_tw_reuse=1`",
        |r| {
            let applies = tw_reuse_applies(*r, plan.target.is_loopback());
            let bad = !plan.keepalive && !plan.target.kind().capabilities().persistent_connections && !applies;
            (bad, format!("tcp_tw_reuse {r} ({}){}", if applies { "reuse applies to this target" } else { "no reuse toward this target" }, if plan.keepalive { ", keep-alive on" } else { ", no keep-alive" }))
        },
    ));
    out.push(judge(
        "net.conntrack",
        &f.conntrack,
        "with conntrack loaded every connection takes a table entry (closed ones for 120 s): a full table drops new connections (`nf_conntrack: table full` in dmesg)",
        "`sysctl -w net.netfilter.nf_conntrack_max=1048576`, or exempt the benchmark traffic (`iptables -t raw -A PREROUTING -p tcp --dport PORT -j NOTRACK`)",
        |ct| match ct {
            None => (false, "conntrack not loaded".into()),
            // Loaded but hooked by no rule: nothing is tracked (kernels register the hooks on demand).
            Some((0, max)) => (false, format!("conntrack loaded (max {max}) but tracking no connection")),
            Some((count, max)) => {
                let need = if plan.keepalive || plan.target.kind().capabilities().persistent_connections {
                    n
                } else {
                    port_budget(f, plan).map_or(n, |(ceiling, planned)| ceiling.min(planned) * 120)
                };
                (count + need > *max, format!("{count} of {max} entries in use; the plan may add ~{need}"))
            }
        },
    ));
    network(f, plan, out);
}

/// Open files of the client and of the server against the connections.
fn nofile(f: &PreflightFacts, plan: &PreflightPlan) -> Check {
    let id = "limits.nofile";
    let why = "every connection is a descriptor on both sides: past the open-file limit accept or connect fails with EMFILE";
    let fix = "raise the limit before starting the process: `ulimit -n 65536`, LimitNOFILE= for a service, nginx `worker_rlimit_nofile`";
    let n = u64::from(plan.max_concurrency);
    let client = match &f.client_nofile {
        Ok(c) => *c,
        Err(e) => return unavailable(id, e, why),
    };
    // PostgreSQL serves each connection in a process of its own.
    let server = if plan.target.kind().capabilities().process_per_connection {
        Err("one process per connection".to_string())
    } else {
        f.server_nofile.clone()
    };
    let show = |v: u64| if v == u64::MAX { "unlimited".to_string() } else { v.to_string() };
    let mut figure = format!("client {} for {n} connections", show(client));
    let mut bad = client < n + 64;
    match &server {
        Ok(s) => {
            figure.push_str(&format!(", server {}", show(*s)));
            bad |= *s < n + 32;
        }
        Err(e) => figure.push_str(&format!(", server: unknown ({e})")),
    }
    if bad {
        warn(id, figure, why, fix)
    } else {
        ok(id, figure, why)
    }
}

/// The server's listen backlog against the clients connecting at once.
fn backlog(f: &PreflightFacts, plan: &PreflightPlan) -> Check {
    let id = "net.listen_backlog";
    let why = "the listen backlog is how many connections may wait to be accepted: when the clients connect at once (every step start, every request without keep-alive) and it is full, SYNs are dropped and connect takes a 1 s retransmit";
    let n = u64::from(plan.max_concurrency);
    let b = match &f.listen_backlog {
        Ok(b) => *b,
        Err(e) => return unavailable(id, e, why),
    };
    let capped = f.somaxconn.as_ref().is_ok_and(|s| *s == b);
    let figure = format!("backlog {b} for {}{}", plan.connections_text(), if capped { " (capped by net.core.somaxconn)" } else { "" });
    if b >= n {
        return ok(id, figure, why);
    }
    let fix = if capped {
        "`sysctl -w net.core.somaxconn=4096`, then restart the server"
    } else {
        "raise the server's backlog (nginx: `listen 80 backlog=4096;`, Apache: `ListenBacklog 4096`, a program: the argument of listen(2)) and restart it"
    };
    warn(id, figure, why, fix)
}

/// NIC interrupts, RPS/XPS and the MTU of the route to the target.
fn network(f: &PreflightFacts, plan: &PreflightPlan, out: &mut Vec<Check>) {
    let lo = plan.target.is_loopback();
    let why_irq = "when all of a NIC's interrupts land on one CPU, that CPU does all receive processing (softirq) and caps the server however many cores it has";
    let why_rps = "a NIC with one receive queue and RPS off hands every packet to the CPU of its interrupt";
    if lo {
        out.push(ok("net.nic_irqs", "loopback: no NIC interrupts".into(), why_irq));
        out.push(ok("net.rps_xps", "loopback: no NIC queues".into(), why_rps));
    } else {
        out.push(judge(
            "net.nic_irqs",
            &f.nic,
            why_irq,
            "spread the queues' IRQs over CPUs (`irqbalance`, or /proc/irq/N/smp_affinity_list per queue)",
            |nic| {
                let total: u64 = nic.irqs_per_cpu.iter().sum();
                let (top, most) = nic.irqs_per_cpu.iter().enumerate().max_by_key(|(_, v)| **v).map_or((0, 0), |(i, v)| (i, *v));
                let share = if total == 0 { 0.0 } else { most as f64 * 100.0 / total as f64 };
                let one_cpu = total > 0 && nic.irqs_per_cpu.len() > 1 && share >= 90.0;
                (
                    one_cpu,
                    format!(
                        "{}: {total} interrupts since boot, {share:.0}% on CPU column {top} of {}",
                        nic.interface,
                        nic.irqs_per_cpu.len()
                    ),
                )
            },
        ));
        out.push(judge(
            "net.rps_xps",
            &f.nic,
            why_rps,
            "enable RPS: `echo ff > /sys/class/net/IF/queues/rx-0/rps_cpus` (a mask of the CPUs to use)",
            |nic| {
                let cpus = f.logical_cpus.as_ref().copied().unwrap_or(1);
                let bad = nic.rx_queues <= 1 && !nic.rps && cpus > 1;
                (
                    bad,
                    format!(
                        "{}: {} rx / {} tx queue(s), RPS {}, XPS {}",
                        nic.interface,
                        nic.rx_queues,
                        nic.tx_queues,
                        if nic.rps { "on" } else { "off" },
                        if nic.xps { "on" } else { "off" }
                    ),
                )
            },
        ));
    }
    out.push(judge(
        "net.mtu",
        &f.route,
        "a path MTU under 1500 (a tunnel, a VPN) splits responses into more packets than on a plain network; loopback's 64 KiB MTU makes it cheaper than any wire",
        "check the route (`ip route get ADDR`) and the interface MTU (`ip link`); benchmark over the network clients will use",
        |r| (r.mtu < 1500, format!("{} mtu {}", r.interface, r.mtu)),
    ));
}
