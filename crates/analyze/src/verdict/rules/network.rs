//! Rules about the network stack: the accept queue, ephemeral ports, the
//! link, receive processing on one CPU.

use super::*;

pub(super) fn accept_overflow(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let machine =
        t.listen_overflows_per_s.into_iter().chain(t.listen_drops_per_s).fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    // The target's own accept queue decides: full at a sample, or never.
    // The kernel's overflow counters are the network namespace's, every
    // listener's: on their own they cannot blame this target.
    let full = match (t.listen_queue_max, t.listen_backlog) {
        (Some(q), Some(b)) if b > 0 => Some(q >= b),
        _ => None,
    };
    let machine_overflows = machine.is_some_and(|m| m >= LISTEN_OVERFLOW_PER_S);
    let headline = match (full, t.listen_queue_max, t.listen_backlog) {
        (Some(false), ..) => return None,
        (Some(true), Some(q), Some(b)) => {
            format!("the target's listen queue is full ({q} of {b} connections waiting to be accepted): connections are dropped or wait before the server accepts them")
        }
        _ if machine_overflows => "listen queues overflow in this network namespace (machine-wide counters; the target's own queue was not measured): connections may be dropped before the server accepts them".to_string(),
        _ => return None,
    };
    let somaxconn = ctx.env.somaxconn.map(|n| format!(" (net.core.somaxconn is {n})")).unwrap_or_default();
    let mut d = Draft::new(
        VerdictKind::AcceptOverflow,
        ctx,
        headline,
        format!("raise the listen backlog (the server's listen(2) backlog and net.core.somaxconn{somaxconn}) and check that accepting keeps up (one acceptor thread, thundering herd, a worker pool that is full); `ss -lnt` shows Recv-Q against the backlog"),
    );
    d.ev("target's accept queue, most waiting", t.listen_queue_max.map(|q| q as f64), "connections");
    d.ev("target's accept queue, mean waiting", t.listen_queue_mean, "connections");
    d.ev("target's listen backlog", t.listen_backlog.map(|b| b as f64), "connections");
    d.ev("listen overflows, machine-wide", t.listen_overflows_per_s, "/s");
    d.ev("listen drops, machine-wide", t.listen_drops_per_s, "/s");
    let connect = ctx.step.errors.get(ErrorClass::ConnectRefused) + ctx.step.errors.get(ErrorClass::ConnectTimeout);
    if connect > 0 {
        d.ev("connect errors", Some(connect as f64 / ctx.step.window_s), "/s");
    }
    if full.is_none() {
        // Machine-wide evidence alone: at most low.
        d.cap = Confidence::Low;
        d.v.missing.push(ctx.why("the target's accept queue", &["target_listen"]));
    } else {
        // The queue was full; the kernel counted overflows too (any listener's).
        d.check(machine.map(|m| m >= LISTEN_OVERFLOW_PER_S), || ctx.why("listen overflows", SYSTEM));
    }
    Some(d.done())
}

/// Size of a `net.ipv4.ip_local_port_range` value ("32768 60999" → 28232).
pub(in crate::verdict) fn port_range_size(range: &str) -> Option<u64> {
    let mut it = range.split_whitespace().map(|x| x.parse::<u64>());
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi)), None) if hi >= lo => Some(hi - lo + 1),
        _ => None,
    }
}

/// Failed connects of this step that said EADDRNOTAVAIL (no free local
/// address/port), from each class's first message: classes whose first
/// failure was EADDRNOTAVAIL, counted whole.
fn addr_not_available(step: &StepResult) -> u64 {
    step.errors
        .first_message
        .iter()
        .filter(|(_, m)| m.contains("os error 99") || m.contains("Cannot assign requested address") || m.contains("EADDRNOTAVAIL"))
        .map(|(c, _)| step.errors.counts.get(c).copied().unwrap_or(0))
        .sum()
}

pub(super) fn port_exhaustion(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    // Toward the server when its addresses were known; machine-wide otherwise
    // (then other destinations and both ends of loopback connections count too).
    let toward = t.tcp_time_wait_to_target;
    let tw = toward.or(t.tcp_time_wait)?;
    let range = ctx.env.ip_local_port_range.as_deref().and_then(port_range_size);
    let threshold = match range {
        Some(r) => TIME_WAIT_RANGE_SHARE * r as f64,
        None => TIME_WAIT_FALLBACK as f64,
    };
    if (tw as f64) < threshold {
        return None;
    }
    // What the run itself did must account for the sockets: new connections
    // fast enough to leave that many in TIME_WAIT within its 60 s, or
    // connects failing for want of a port. Otherwise they are an earlier
    // run's or another program's, and a keep-alive run cannot run out of ports.
    let s = ctx.step;
    let new_per_s = (s.window_s > 0.0).then(|| s.reconnects as f64 / s.window_s);
    let churn = new_per_s.is_some_and(|r| r * TIME_WAIT_S >= threshold);
    let refused = addr_not_available(s);
    if !churn && refused == 0 {
        return None;
    }
    let mut d = Draft::new(
        VerdictKind::PortExhaustion,
        ctx,
        "sockets in TIME_WAIT fill the ephemeral port range: new connections wait for a free port or fail (EADDRNOTAVAIL)",
        "keep connections alive (keep-alive, pooling) instead of one per request, widen net.ipv4.ip_local_port_range, enable net.ipv4.tcp_tw_reuse on the client; `ss -tan state time-wait | wc -l`",
    );
    if toward.is_some() {
        d.ev("sockets in TIME_WAIT toward the server", Some(tw as f64), "sockets");
    } else {
        d.ev("sockets in TIME_WAIT (machine-wide)", Some(tw as f64), "sockets");
    }
    if let Some(r) = range {
        d.ev("ephemeral ports", Some(r as f64), "ports");
        d.ev("TIME_WAIT share of the range", Some(100.0 * tw as f64 / r as f64), "%");
    }
    d.ev("new connections", new_per_s, "/s");
    if refused > 0 {
        d.ev("connects failed with EADDRNOTAVAIL", Some(refused as f64 / s.window_s.max(f64::EPSILON)), "/s");
    }
    d.check(range.map(|_| true), || {
        format!(
            "ephemeral port range: not recorded with the run (judged against {TIME_WAIT_FALLBACK} sockets, 70% of Linux's default range)"
        )
    });
    d.check(toward.map(|_| true), || ctx.why("TIME_WAIT toward the server (counted machine-wide instead)", &["time_wait_to_target"]));
    Some(d.done())
}

pub(super) fn network_bound(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let retrans = t.retrans_per_s?;
    if retrans < RETRANS_PER_S {
        return None;
    }
    let mut d = Draft::new(
        VerdictKind::NetworkBound,
        ctx,
        "TCP retransmits heavily: packets are lost on the way (a full link, drops in a queue or the NIC)",
        "check the link: `ip -s link` and `ethtool -S` for drops, the NIC's speed against the traffic, `nstat` for TcpRetransSegs and TcpExtTCPLostRetransmit",
    );
    d.ev("TCP retransmissions", Some(retrans), "/s");
    d.ev("network traffic", t.net_mb_per_s, "MB/s");
    if ctx.loopback {
        // No link to fill: retransmits counted machine-wide come from other traffic or dropped SYNs.
        d.check(Some(false), String::new);
        d.v.missing
            .push("the target is on loopback: no link in the path; the retransmits are machine-wide (other traffic, dropped SYNs)".into());
    }
    d.check(None, || "link capacity: not recorded (a full link cannot be told from loss)".to_string());
    Some(d.done())
}

pub(super) fn softirq_one_cpu(ctx: &Ctx) -> Option<Verdict> {
    let b = ctx.t()?.softirq_busiest_cpu?;
    if b.softirq_pct < SOFTIRQ_ONE_CPU_PCT || b.softirq_pct < SOFTIRQ_CONCENTRATION * b.others_softirq_pct.max(1.0) {
        return None;
    }
    // Measured and spread: the concentrated softirqs are not network receive
    // (a disk's completion IRQ on one CPU, say: BLOCK softirqs), so not this verdict.
    if b.net_rx_share_pct.is_some_and(|s| s < NET_RX_ONE_CPU_SHARE_PCT) {
        return None;
    }
    let mut d = Draft::new(
        VerdictKind::SoftirqOneCpu,
        ctx,
        format!("CPU {} does the softirq (network receive) work while the other CPUs have room: interrupts or RPS steer it all to one core", b.cpu),
        "spread receive processing: the NIC's IRQs in /proc/interrupts and their /proc/irq/N/smp_affinity, more RSS queues (`ethtool -l`/`-L`), RPS (/sys/class/net/IF/queues/rx-*/rps_cpus), irqbalance",
    );
    d.ev(&format!("softirq on CPU {}", b.cpu), Some(b.softirq_pct), "% of that CPU");
    d.ev("softirq on the other CPUs (mean)", Some(b.others_softirq_pct), "% of a CPU");
    d.ev(&format!("NET_RX on CPU {}", b.cpu), b.net_rx_share_pct, "% of all");
    d.ev("NET_RX softirqs", b.net_rx_per_s, "/s");
    d.check(b.net_rx_share_pct.map(|s| s >= NET_RX_ONE_CPU_SHARE_PCT), || "NET_RX per CPU: /proc/softirqs not read".to_string());
    Some(d.done())
}
