//! TCP sockets from `/proc/net/tcp` and `/proc/net/tcp6`: counts by state
//! (TIME_WAIT above all), ephemeral ports in use, and listening sockets'
//! inodes (to find the server process that owns a port).
//!
//! With tens of thousands of sockets these files are megabytes of text; the
//! scanner walks each line once without allocating.

use crate::read::complete_lines;
use std::net::{IpAddr, SocketAddr};

/// `TCP_ESTABLISHED` in the kernel's numbering (`include/net/tcp_states.h`).
pub const TCP_ESTABLISHED: u8 = 1;
/// `TCP_TIME_WAIT`.
pub const TCP_TIME_WAIT: u8 = 6;
/// `TCP_LISTEN`.
pub const TCP_LISTEN: u8 = 10;

/// One row of a TCP table: what the counters need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpEntry {
    pub state: u8,
    pub local: IpAddr,
    pub local_port: u16,
    pub remote: IpAddr,
    pub remote_port: u16,
    pub inode: u64,
}

impl TcpEntry {
    /// Whether the far end is `to` (an IPv4-mapped IPv6 address equals its
    /// IPv4 address; an unspecified `to` address matches any address on its port).
    pub fn remote_is(&self, to: &SocketAddr) -> bool {
        self.remote_port == to.port() && (to.ip().is_unspecified() || self.remote.to_canonical() == to.ip().to_canonical())
    }
}

fn hex_port(addr: &str) -> Option<u16> {
    u16::from_str_radix(addr.rsplit_once(':')?.1, 16).ok()
}

/// The address of `ADDR:PORT` in the tables' hex: each 32-bit word is
/// printed as a native-endian number (`0100007F` is 127.0.0.1 on x86).
fn hex_addr(addr: &str) -> Option<IpAddr> {
    let hex = addr.rsplit_once(':')?.0;
    let word = |i: usize| u32::from_str_radix(hex.get(8 * i..8 * i + 8)?, 16).ok().map(u32::to_ne_bytes);
    match hex.len() {
        8 => Some(IpAddr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[4 * i..4 * i + 4].copy_from_slice(&word(i)?);
            }
            Some(IpAddr::from(b))
        }
        _ => None,
    }
}

/// Calls `f` for each well-formed row of a `/proc/net/tcp{,6}` text; returns
/// how many rows were well formed, or an error if the header is missing.
pub fn scan_tcp(text: &str, mut f: impl FnMut(TcpEntry)) -> Result<usize, String> {
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("cut short (counts over a partial table would be wrong)".into());
    }
    let mut lines = complete_lines(text);
    match lines.next() {
        Some(h) if h.trim_start().starts_with("sl") => {}
        _ => return Err("no header line".into()),
    }
    let mut n = 0;
    for line in lines {
        let mut it = line.split_ascii_whitespace();
        let (Some(_sl), Some(local), Some(remote), Some(st)) = (it.next(), it.next(), it.next(), it.next()) else {
            continue;
        };
        let inode = it.nth(5).and_then(|t| t.parse().ok());
        let (Some(local_port), Some(remote_port), Ok(state), Some(inode)) =
            (hex_port(local), hex_port(remote), u8::from_str_radix(st, 16), inode)
        else {
            continue;
        };
        let (Some(local), Some(remote)) = (hex_addr(local), hex_addr(remote)) else { continue };
        f(TcpEntry { state, local, local_port, remote, remote_port, inode });
        n += 1;
    }
    Ok(n)
}

pub use scalelab_core::sample::{PortUsage, TcpStates};

/// A reusable 65,536-bit set of ports (8 KiB), so counting distinct ports
/// allocates nothing per sample.
pub struct PortSet {
    bits: Box<[u64; 1024]>,
}

impl Default for PortSet {
    fn default() -> Self {
        PortSet { bits: Box::new([0; 1024]) }
    }
}

impl PortSet {
    /// Empties the set.
    pub fn clear(&mut self) {
        self.bits.fill(0);
    }

    /// Adds a port; true if it was not there yet.
    pub fn insert(&mut self, port: u16) -> bool {
        let (w, b) = (port as usize / 64, port % 64);
        let new = self.bits[w] & (1 << b) == 0;
        self.bits[w] |= 1 << b;
        new
    }
}

/// Inodes of sockets listening on `port` in a TCP table text.
pub fn listening_inodes(text: &str, port: u16, out: &mut Vec<u64>) -> Result<(), String> {
    scan_tcp(text, |e| {
        if e.state == TCP_LISTEN && e.local_port == port && e.inode != 0 {
            out.push(e.inode);
        }
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:96C3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 31522 1 0000 100 0 0 10 0\n\
   1: 0100007F:8A2E 0100007F:96C3 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000\n\
   2: 0100007F:8A30 0100007F:96C3 01 00000000:00000000 00:00000000 00000000     0        0 31999 1 0000\n";

    #[test]
    fn addresses_of_rows_v4_and_v6() {
        let mut rows = Vec::new();
        scan_tcp(TCP, |e| rows.push(e)).unwrap();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!((rows[1].local, rows[1].remote), (lo, lo));
        assert!(rows[1].remote_is(&SocketAddr::new(lo, 0x96C3)));
        assert!(rows[1].remote_is(&"0.0.0.0:38595".parse().unwrap()), "unspecified matches any address");
        assert!(!rows[1].remote_is(&SocketAddr::new(lo, 80)));
        assert!(!rows[1].remote_is(&"10.0.0.1:38595".parse().unwrap()));
        // /proc/net/tcp6: ::1 and an IPv4-mapped 127.0.0.1, which equals 127.0.0.1.
        let v6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 00000000000000000000000001000000:1F90 0000000000000000FFFF00000100007F:D431 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000\n";
        let mut e6 = Vec::new();
        scan_tcp(v6, |e| e6.push(e)).unwrap();
        assert_eq!(e6[0].local, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(e6[0].remote, "::ffff:127.0.0.1".parse::<IpAddr>().unwrap());
        assert!(e6[0].remote_is(&"127.0.0.1:54321".parse().unwrap()));
    }

    #[test]
    fn scans_rows() {
        let mut st = TcpStates::default();
        let mut ports = Vec::new();
        let n = scan_tcp(TCP, |e| {
            st.add(e.state);
            ports.push(e.local_port);
        })
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!((st.listen, st.time_wait, st.established, st.total()), (1, 1, 1, 3));
        assert_eq!(ports, [0x96C3, 0x8A2E, 0x8A30]);
        let mut inodes = Vec::new();
        listening_inodes(TCP, 0x96C3, &mut inodes).unwrap();
        assert_eq!(inodes, [31522]);
    }

    #[test]
    fn ipv6_rows_and_garbage() {
        let six = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1 0\n";
        let mut seen = Vec::new();
        scan_tcp(six, |e| seen.push((e.state, e.local_port, e.inode))).unwrap();
        assert_eq!(seen, [(10, 22, 1234)]);
        assert!(scan_tcp("garbage\n", |_| {}).is_err());
        // a cut table is refused: its counts would be too low
        assert!(scan_tcp(&TCP[..TCP.len() - 20], |_| {}).is_err());
    }

    #[test]
    fn port_set() {
        let mut s = PortSet::default();
        assert!(s.insert(65535));
        assert!(!s.insert(65535));
        s.clear();
        assert!(s.insert(65535));
    }
}
