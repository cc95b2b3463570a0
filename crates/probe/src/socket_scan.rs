//! Counting TCP sockets by state and ephemeral ports in use, within a CPU
//! budget.
//!
//! Listing every socket costs time in proportion to how many there are (a
//! load generator's 30,000 TIME_WAIT sockets take tens of milliseconds even
//! through netlink). The scanner times each scan and, when one is costly,
//! skips later samples so that scanning stays under [`SCAN_BUDGET`] of one
//! core; `/proc/net/sockstat` still gives the TIME_WAIT count every sample.

use crate::read::{read_into, ProbeError};
use crate::sockdiag::SockDiag;
use crate::sockets::{scan_tcp, PortSet, PortUsage, TcpEntry, TcpStates, TCP_LISTEN, TCP_TIME_WAIT};
use crate::time::monotonic_ns;
use scalelab_core::sample::ListenQueue;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::path::Path;

/// Share of one core the socket scan may use on average (0.2 %).
pub const SCAN_BUDGET: f64 = 0.002;

/// What one attempt gave.
pub enum ScanOutcome {
    /// Counted: states, port usage when the range is known, and sockets in
    /// TIME_WAIT toward the targets when targets are set.
    Done(TcpStates, Option<PortUsage>, Option<u32>),
    /// Skipped to stay within the budget (the previous scan was costly);
    /// the TIME_WAIT sockets toward the targets are still counted, through
    /// a dump the kernel filters (netlink only), so the run's own figure
    /// never goes missing for the machine's crowd of other sockets.
    Skipped(Option<u32>),
    /// Could not be read; why.
    Failed(String),
}

/// Counts sockets through netlink on the live machine, through the text
/// tables under a captured root.
pub struct SocketScanner {
    diag: Option<SockDiag>,
    ports: PortSet,
    next_ns: u64,
    targets: Vec<SocketAddr>,
}

impl SocketScanner {
    /// Netlink is used when `proc_root` is the live `/proc` (same network
    /// namespace as this process) and the socket opens.
    pub fn new(proc_root: &Path) -> Self {
        let live = proc_root == Path::new("/proc");
        SocketScanner { diag: live.then(|| SockDiag::open().ok()).flatten(), ports: PortSet::default(), next_ns: 0, targets: Vec::new() }
    }

    /// The server addresses (where the load goes) whose TIME_WAIT sockets
    /// are counted apart: a client's TIME_WAIT pins its ephemeral ports per
    /// destination, so only these say whether this run can run out of ports.
    pub fn set_targets(&mut self, targets: Vec<SocketAddr>) {
        self.targets = targets;
    }

    /// TIME_WAIT sockets toward the targets through filtered netlink dumps
    /// (one per distinct target port); `None` without netlink or targets.
    fn time_wait_to_targets(&mut self) -> Option<u32> {
        let diag = self.diag.as_mut().filter(|_| !self.targets.is_empty())?;
        let mut ports: Vec<u16> = self.targets.iter().map(|t| t.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        let mut n = 0u32;
        for port in ports {
            let targets = &self.targets;
            diag.scan_time_wait_to_port(port, &mut |e| n += u32::from(targets.iter().any(|t| e.remote_is(t)))).ok()?;
        }
        Some(n)
    }

    /// The targets' own listening sockets and their accept queues, every
    /// sample (the kernel walks only the listeners' table); a listener on
    /// an unspecified address on a target's port counts as that target's.
    /// `None` without netlink or targets.
    pub fn target_listen(&mut self) -> Option<Vec<ListenQueue>> {
        let diag = self.diag.as_mut().filter(|_| !self.targets.is_empty())?;
        let targets = &self.targets;
        let mut out = Vec::new();
        diag.listen_queues(&mut |ip, port, queued, backlog| {
            let ours = targets.iter().any(|t| t.port() == port && (t.ip() == ip || ip.is_unspecified()));
            if ours {
                out.push(ListenQueue { addr: SocketAddr::new(ip, port), queued, backlog });
            }
        })
        .ok()?;
        Some(out)
    }

    /// Counts unless the budget says to wait; `range` is the ephemeral range.
    pub fn scan(&mut self, proc_root: &Path, buf: &mut String, range: Option<(u16, u16)>) -> ScanOutcome {
        let start = monotonic_ns();
        if start < self.next_ns {
            return ScanOutcome::Skipped(self.time_wait_to_targets());
        }
        let mut states = TcpStates::default();
        self.ports.clear();
        let (lo, hi) = range.unwrap_or((1, 0));
        let mut usage = PortUsage { range_low: lo, range_high: hi, ports_in_use: 0, sockets_in_range: 0 };
        let ports = &mut self.ports;
        let targets = &self.targets;
        let mut to_target = 0u32;
        let mut count = |e: TcpEntry| {
            states.add(e.state);
            if e.state == TCP_TIME_WAIT && targets.iter().any(|t| e.remote_is(t)) {
                to_target += 1;
            }
            if e.state != TCP_LISTEN && e.local_port >= lo && e.local_port <= hi {
                usage.sockets_in_range += 1;
                if ports.insert(e.local_port) {
                    usage.ports_in_use += 1;
                }
            }
        };
        let via_netlink = match &mut self.diag {
            Some(d) => d.scan(&mut count).is_ok(),
            None => false,
        };
        if !via_netlink {
            if self.diag.take().is_some() {
                // Netlink failed mid-way: start over from the text tables.
                return self.scan(proc_root, buf, range);
            }
            if let Err(why) = scan_text(proc_root, buf, &mut count) {
                return ScanOutcome::Failed(why);
            }
        }
        let cost = monotonic_ns().saturating_sub(start);
        self.next_ns = start + (cost as f64 / SCAN_BUDGET) as u64;
        let to_target = (!self.targets.is_empty()).then_some(to_target);
        ScanOutcome::Done(states, range.map(|_| usage), to_target)
    }
}

/// Reads `net/tcp` and `net/tcp6` (a missing `tcp6` means IPv6 is off).
fn scan_text(proc_root: &Path, buf: &mut String, count: &mut impl FnMut(TcpEntry)) -> Result<(), String> {
    for file in ["net/tcp", "net/tcp6"] {
        let path = proc_root.join(file);
        if let Err(e) = read_into(&path, buf) {
            let ipv6_off = file == "net/tcp6" && matches!(&e, ProbeError::Read { source, .. } if source.kind() == ErrorKind::NotFound);
            if ipv6_off {
                continue;
            }
            return Err(e.to_string());
        }
        scan_tcp(buf, &mut *count).map_err(|what| ProbeError::parse(&path, what).to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_netlink_and_text_both_see_a_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let root = Path::new("/proc");
        let mut buf = String::new();
        // Other tests open and close sockets meanwhile: compare only ours.
        let ours = |e: &TcpEntry| e.local_port == port && e.state == TCP_LISTEN;
        let mut netlink = 0;
        SocketScanner::new(root).diag.expect("netlink available").scan(&mut |e| netlink += ours(&e) as u32).unwrap();
        let mut text = 0;
        scan_text(root, &mut buf, &mut |e| text += ours(&e) as u32).unwrap();
        assert_eq!((netlink, text), (1, 1));
        let ScanOutcome::Done(states, Some(ports), None) = SocketScanner::new(root).scan(root, &mut buf, Some((1, 65535))) else {
            panic!("first scan is never skipped")
        };
        assert!(states.listen >= 1 && ports.range_size() == 65535);
    }

    /// Closes `n` connections to `to` from the client side first, so each
    /// leaves a client socket in TIME_WAIT whose far end is `to`.
    fn time_waits_toward(l: &std::net::TcpListener, n: usize) {
        use std::io::Read;
        for _ in 0..n {
            let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (mut s, _) = l.accept().unwrap();
            drop(c);
            let _ = s.read(&mut [0u8; 1]); // EOF: the client closed first
        }
    }

    #[test]
    fn time_wait_is_counted_toward_the_targets_only() {
        let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        time_waits_toward(&target, 3);
        time_waits_toward(&other, 5);
        let root = Path::new("/proc");
        let mut buf = String::new();
        for netlink in [true, false] {
            let mut s = SocketScanner::new(if netlink { root } else { Path::new("/proc/self/../self/..") });
            s.set_targets(vec![target.local_addr().unwrap()]);
            // The text tables under a non-canonical root spelling of /proc give the same rows.
            let ScanOutcome::Done(states, _, Some(to_target)) = s.scan(root, &mut buf, None) else { panic!("not counted") };
            assert_eq!(to_target, 3, "netlink {netlink}");
            assert!(states.time_wait >= 8, "machine-wide counts both: {}", states.time_wait);
        }
        let ScanOutcome::Done(_, _, None) = SocketScanner::new(root).scan(root, &mut buf, None) else { panic!("no targets: no count") };
        // A skipped scan still counts them, through the kernel-filtered dump.
        let mut s = SocketScanner::new(root);
        s.set_targets(vec![target.local_addr().unwrap(), "[::1]:1".parse().unwrap()]);
        s.next_ns = u64::MAX;
        assert!(matches!(s.scan(root, &mut buf, None), ScanOutcome::Skipped(Some(3))));
        let mut all_tw_to_other = 0;
        s.diag
            .as_mut()
            .unwrap()
            .scan_time_wait_to_port(other.local_addr().unwrap().port(), &mut |e| {
                assert_eq!(e.state, TCP_TIME_WAIT, "the kernel filtered by state");
                assert_eq!(e.remote_port, other.local_addr().unwrap().port(), "and by port");
                all_tw_to_other += 1;
            })
            .unwrap();
        assert_eq!(all_tw_to_other, 5);
    }

    #[test]
    fn costly_scans_are_spaced_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("net")).unwrap();
        let header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
        std::fs::write(dir.path().join("net/tcp"), header).unwrap();
        let mut s = SocketScanner::new(dir.path());
        let mut buf = String::new();
        assert!(matches!(s.scan(dir.path(), &mut buf, Some((32768, 60999))), ScanOutcome::Done(..)));
        s.next_ns = u64::MAX;
        assert!(matches!(s.scan(dir.path(), &mut buf, None), ScanOutcome::Skipped(None)));
    }
}
