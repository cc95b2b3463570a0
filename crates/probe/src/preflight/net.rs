//! The network side of the preflight: sysctls (somaxconn, port range,
//! TIME_WAIT reuse, conntrack), the route to the target and its MTU, the
//! NIC's queues, RPS/XPS and where its interrupts land, and the listen
//! backlog of the server's socket.

use super::files::{number, text};
use crate::Roots;
use scalelab_core::preflight::{Nic, Reading, Route};
use std::fs;
use std::net::IpAddr;

pub fn somaxconn(roots: &Roots) -> Reading<u64> {
    number(&roots.proc.join("sys/net/core/somaxconn"))
}

pub fn port_range(roots: &Roots) -> Reading<(u16, u16)> {
    let path = roots.proc.join("sys/net/ipv4/ip_local_port_range");
    let t = text(&path)?;
    crate::limits::parse_port_range(&format!("{t}\n")).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn tcp_tw_reuse(roots: &Roots) -> Reading<u8> {
    number(&roots.proc.join("sys/net/ipv4/tcp_tw_reuse"))
}

/// Conntrack count and max; `None` when the module is not loaded (no sysctl).
pub fn conntrack(roots: &Roots) -> Reading<Option<(u64, u64)>> {
    let dir = roots.proc.join("sys/net/netfilter");
    let max = dir.join("nf_conntrack_max");
    let net = roots.proc.join("sys/net");
    if !net.is_dir() {
        return Err(format!("no {}", net.display()));
    }
    if !max.exists() {
        return Ok(None);
    }
    Ok(Some((number(&dir.join("nf_conntrack_count"))?, number(&max)?)))
}

/// A `/proc/net/route` hex word (native-endian u32) as bytes of an address.
fn route_word(hex: &str) -> Option<[u8; 4]> {
    u32::from_str_radix(hex, 16).ok().map(u32::to_ne_bytes)
}

/// The interface of the longest matching IPv4 route in a `/proc/net/route` text.
pub fn route_v4(table: &str, to: [u8; 4]) -> Option<String> {
    let to = u32::from_be_bytes(to);
    let mut best: Option<(u32, String)> = None;
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        let (Some(dest), Some(mask), Ok(flags)) = (route_word(f[1]), route_word(f[7]), u16::from_str_radix(f[3], 16)) else {
            continue;
        };
        let (dest, mask) = (u32::from_be_bytes(dest), u32::from_be_bytes(mask));
        if flags & 1 == 0 || to & mask != dest {
            continue;
        }
        if best.as_ref().is_none_or(|(m, _)| mask.count_ones() > m.count_ones()) {
            best = Some((mask, f[0].to_string()));
        }
    }
    best.map(|(_, i)| i)
}

/// The interface of the longest matching route in a `/proc/net/ipv6_route` text.
pub fn route_v6(table: &str, to: [u8; 16]) -> Option<String> {
    let to = u128::from_be_bytes(to);
    let mut best: Option<(u32, String)> = None;
    for line in table.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        let (Ok(dest), Ok(len)) = (u128::from_str_radix(f[0], 16), u32::from_str_radix(f[1], 16)) else {
            continue;
        };
        let mask = if len == 0 { 0 } else { u128::MAX << (128 - len.min(128)) };
        if to & mask != dest & mask || f[9] == "lo" && len == 0 {
            continue;
        }
        if best.as_ref().is_none_or(|(l, _)| len > *l) {
            best = Some((len, f[9].to_string()));
        }
    }
    best.map(|(_, i)| i)
}

/// The interface the route to `to` leaves by, and its MTU.
pub fn route(roots: &Roots, to: IpAddr) -> Reading<Route> {
    let interface = if to.is_loopback() {
        "lo".to_string()
    } else {
        let (file, found) = match to {
            IpAddr::V4(a) => ("net/route", text(&roots.proc.join("net/route")).map(|t| route_v4(&t, a.octets()))),
            IpAddr::V6(a) => ("net/ipv6_route", text(&roots.proc.join("net/ipv6_route")).map(|t| route_v6(&t, a.octets()))),
        };
        found?.ok_or_else(|| format!("no route to {to} in {}", roots.proc.join(file).display()))?
    };
    let mtu = number(&roots.sys.join(format!("class/net/{interface}/mtu")))?;
    Ok(Route { interface, mtu })
}

/// Queue folders `rx-N` or `tx-N` of an interface, and whether any of their
/// `rps_cpus` / `xps_cpus` masks is set.
fn queues(roots: &Roots, interface: &str, prefix: &str, mask_file: &str) -> (u32, bool) {
    let dir = roots.sys.join(format!("class/net/{interface}/queues"));
    let mut n = 0;
    let mut any = false;
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_name().to_str().is_some_and(|s| s.starts_with(prefix)) {
            n += 1;
            let mask = fs::read_to_string(e.path().join(mask_file)).unwrap_or_default();
            any |= mask.trim().chars().any(|c| c.is_ascii_hexdigit() && c != '0');
        }
    }
    (n, any)
}

/// Interrupts per CPU of the `/proc/interrupts` rows whose name is the
/// interface's or its device's (`eth0-TxRx-0`, `virtio2-input.0`).
pub fn nic_irqs(interrupts: &str, names: &[String]) -> Vec<u64> {
    let mut lines = interrupts.lines();
    let cpus = lines.next().map_or(0, |h| h.split_ascii_whitespace().count());
    let mut out = vec![0; cpus];
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else { continue };
        if !label.trim().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        let Some(name) = fields.last() else { continue };
        let ours = names.iter().any(|n| *name == n || name.strip_prefix(n.as_str()).is_some_and(|r| r.starts_with(['-', '@'])));
        if !ours || fields.len() < cpus {
            continue;
        }
        for (slot, v) in out.iter_mut().zip(&fields[..cpus]) {
            *slot += v.parse::<u64>().unwrap_or(0);
        }
    }
    out
}

/// The NIC behind `interface`: queues, RPS/XPS, its interrupts per CPU.
pub fn nic(roots: &Roots, interface: &str) -> Reading<Nic> {
    let dir = roots.sys.join(format!("class/net/{interface}"));
    if !dir.exists() {
        return Err(format!("no {}", dir.display()));
    }
    let (rx_queues, rps) = queues(roots, interface, "rx-", "rps_cpus");
    let (tx_queues, xps) = queues(roots, interface, "tx-", "xps_cpus");
    let mut names = vec![interface.to_string()];
    if let Some(dev) = fs::read_link(dir.join("device")).ok().and_then(|p| p.file_name()?.to_str().map(String::from)) {
        names.push(dev);
    }
    let interrupts = text(&roots.proc.join("interrupts"))?;
    Ok(Nic { interface: interface.to_string(), rx_queues, tx_queues, irqs_per_cpu: nic_irqs(&interrupts, &names), rps, xps })
}

/// Whether a socket listening on `local` receives connections to `to`.
fn listens_for(local: IpAddr, to: IpAddr) -> bool {
    local.is_unspecified() || local.to_canonical() == to.to_canonical() || (local.is_loopback() && to.is_loopback())
}

/// The backlog of the socket listening on `to:port` (the smallest, if IPv4
/// and IPv6 both listen): `sk_max_ack_backlog` through sock_diag, what
/// `ss -lnt` shows as Send-Q. The text tables do not carry it, so captured
/// trees cannot; a server on another host has no socket here.
pub fn listen_backlog(roots: &Roots, to: IpAddr, port: u16) -> Reading<u64> {
    if !crate::read::is_procfs(&roots.proc) {
        return Err("listen backlogs are read through sock_diag on the live machine, not from a captured tree".into());
    }
    let mut diag = crate::sockdiag::SockDiag::open().map_err(|e| format!("sock_diag: {e}"))?;
    let mut backlog: Option<u64> = None;
    diag.listeners(&mut |local, local_port, max_backlog| {
        if local_port == port && listens_for(local, to) {
            backlog = Some(backlog.map_or(u64::from(max_backlog), |b| b.min(u64::from(max_backlog))));
        }
    })
    .map_err(|e| format!("sock_diag: {e}"))?;
    backlog.ok_or_else(|| format!("nothing listens on {to} port {port} in this network namespace (the server is elsewhere)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_serves_its_address_the_wildcard_or_loopback() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(listens_for(ip("0.0.0.0"), ip("192.0.2.7")));
        assert!(listens_for(ip("::"), ip("127.0.0.1")));
        assert!(listens_for(ip("127.0.0.1"), ip("127.0.0.2")));
        assert!(listens_for(ip("::ffff:192.0.2.7"), ip("192.0.2.7")));
        // A local listener on loopback is not a remote server on the same port.
        assert!(!listens_for(ip("127.0.0.1"), ip("192.0.2.7")));
        assert!(!listens_for(ip("192.0.2.8"), ip("192.0.2.7")));
    }

    #[test]
    fn longest_prefix_routes() {
        let v4 = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n\
                  eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
                  wg0\t000A000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        assert_eq!(route_v4(v4, [10, 0, 10, 5]).as_deref(), Some("wg0"));
        assert_eq!(route_v4(v4, [8, 8, 8, 8]).as_deref(), Some("eth0"));
        let v6 = "20010db8000000000000000000000000 20 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1\n\
                  00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n";
        assert_eq!(route_v6(v6, "2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap().octets()).as_deref(), Some("eth1"));
        assert_eq!(route_v6(v6, "2606:4700::1".parse::<std::net::Ipv6Addr>().unwrap().octets()).as_deref(), Some("eth0"));
    }
}
