//! TCP readings: MIB counters, sockets by state, ephemeral ports, socket
//! memory and file-handle limits.

use serde::{Deserialize, Serialize};

/// TCP counters since boot (all raw; `curr_estab` is a gauge). Each is `None`
/// when its column is missing or not a number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpMib {
    pub active_opens: Option<u64>,
    pub passive_opens: Option<u64>,
    pub attempt_fails: Option<u64>,
    pub estab_resets: Option<u64>,
    pub curr_estab: Option<u64>,
    pub in_segs: Option<u64>,
    pub out_segs: Option<u64>,
    pub retrans_segs: Option<u64>,
    pub in_errs: Option<u64>,
    pub out_rsts: Option<u64>,
    /// Accept queue full when a handshake completed (`TcpExt: ListenOverflows`).
    pub listen_overflows: Option<u64>,
    /// SYNs or completed handshakes dropped at a listener (`TcpExt: ListenDrops`).
    pub listen_drops: Option<u64>,
    /// SYN cookies sent: the SYN queue overflowed (`TcpExt: SyncookiesSent`).
    pub syncookies_sent: Option<u64>,
    /// Retransmission timeouts (`TcpExt: TCPTimeouts`).
    pub timeouts: Option<u64>,
}

impl TcpMib {
    /// Names of the counters that were not found.
    pub fn missing(&self) -> Vec<&'static str> {
        [
            (self.active_opens, "Tcp:ActiveOpens"),
            (self.passive_opens, "Tcp:PassiveOpens"),
            (self.estab_resets, "Tcp:EstabResets"),
            (self.retrans_segs, "Tcp:RetransSegs"),
            (self.out_rsts, "Tcp:OutRsts"),
            (self.listen_overflows, "TcpExt:ListenOverflows"),
            (self.listen_drops, "TcpExt:ListenDrops"),
        ]
        .into_iter()
        .filter_map(|(v, n)| v.is_none().then_some(n))
        .collect()
    }
}

/// Sockets by TCP state, IPv4 and IPv6 together (gauges).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpStates {
    pub established: u32,
    pub syn_sent: u32,
    pub syn_recv: u32,
    pub fin_wait1: u32,
    pub fin_wait2: u32,
    /// Closed connections held 60 s by the side that closed first; on a load
    /// generator they pin ephemeral ports.
    pub time_wait: u32,
    pub close: u32,
    pub close_wait: u32,
    pub last_ack: u32,
    pub listen: u32,
    pub closing: u32,
    pub new_syn_recv: u32,
}

impl TcpStates {
    /// Counts one socket in state `st` (unknown states are ignored).
    pub fn add(&mut self, st: u8) {
        let slot = match st {
            1 => &mut self.established,
            2 => &mut self.syn_sent,
            3 => &mut self.syn_recv,
            4 => &mut self.fin_wait1,
            5 => &mut self.fin_wait2,
            6 => &mut self.time_wait,
            7 => &mut self.close,
            8 => &mut self.close_wait,
            9 => &mut self.last_ack,
            10 => &mut self.listen,
            11 => &mut self.closing,
            12 => &mut self.new_syn_recv,
            _ => return,
        };
        *slot += 1;
    }

    /// All sockets counted.
    pub fn total(&self) -> u32 {
        self.established
            + self.syn_sent
            + self.syn_recv
            + self.fin_wait1
            + self.fin_wait2
            + self.time_wait
            + self.close
            + self.close_wait
            + self.last_ack
            + self.listen
            + self.closing
            + self.new_syn_recv
    }
}

/// One of the target's listening sockets at a sample: the connections
/// waiting in its accept queue (completed handshakes the server has not
/// accepted yet) against the queue's length (`ss -lnt`: Recv-Q, Send-Q).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenQueue {
    /// The listener's local address (an unspecified address listens on all).
    pub addr: std::net::SocketAddr,
    /// Connections waiting to be accepted.
    pub queued: u32,
    /// The accept queue's length (`listen`'s backlog, capped by somaxconn).
    pub backlog: u32,
}

/// The ephemeral port range and how much of it is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortUsage {
    /// `net.ipv4.ip_local_port_range`, inclusive.
    pub range_low: u16,
    pub range_high: u16,
    /// Distinct local ports inside the range held by non-listening sockets.
    pub ports_in_use: u32,
    /// Non-listening sockets whose local port is inside the range (a port can
    /// serve several connections to different destinations).
    pub sockets_in_range: u32,
}

impl PortUsage {
    /// Ports in the range.
    pub fn range_size(&self) -> u32 {
        (self.range_high as u32 + 1).saturating_sub(self.range_low as u32)
    }
}

/// `/proc/net/sockstat` (gauges). Memory is in pages, as `tcp_mem` is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SockStat {
    pub sockets_used: Option<u64>,
    pub tcp_inuse: Option<u64>,
    pub tcp_orphan: Option<u64>,
    /// TIME_WAIT sockets as the kernel counts them (cheap cross-check of the
    /// table scan).
    pub tcp_tw: Option<u64>,
    pub tcp_alloc: Option<u64>,
    pub tcp_mem_pages: Option<u64>,
    pub udp_inuse: Option<u64>,
    pub udp_mem_pages: Option<u64>,
}

/// `net.ipv4.tcp_mem` thresholds, pages: above `pressure` the stack starts
/// shrinking buffers, at `max` it refuses allocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpMemLimits {
    pub min_pages: u64,
    pub pressure_pages: u64,
    pub max_pages: u64,
}

/// Open file handles system-wide (`fs.file-nr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileHandles {
    /// Allocated handles (in use).
    pub allocated: u64,
    /// `fs.file-max`.
    pub max: u64,
}
