//! Kernel resources in use against their limits: socket memory
//! (`/proc/net/sockstat` vs `net.ipv4.tcp_mem`), file handles
//! (`fs.file-nr`), and the ephemeral port range.

use crate::read::{complete_lines, num};

pub use scalelab_core::sample::{FileHandles, SockStat, TcpMemLimits};

/// Parses `/proc/net/sockstat`.
pub fn parse_sockstat(text: &str) -> Result<SockStat, String> {
    let mut s = SockStat::default();
    for line in complete_lines(text) {
        let Some((proto, rest)) = line.split_once(':') else {
            continue;
        };
        let mut it = rest.split_ascii_whitespace();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            let v = num(v);
            let slot = match (proto, k) {
                ("sockets", "used") => &mut s.sockets_used,
                ("TCP", "inuse") => &mut s.tcp_inuse,
                ("TCP", "orphan") => &mut s.tcp_orphan,
                ("TCP", "tw") => &mut s.tcp_tw,
                ("TCP", "alloc") => &mut s.tcp_alloc,
                ("TCP", "mem") => &mut s.tcp_mem_pages,
                ("UDP", "inuse") => &mut s.udp_inuse,
                ("UDP", "mem") => &mut s.udp_mem_pages,
                _ => continue,
            };
            *slot = v;
        }
    }
    if s.tcp_inuse.is_none() && s.sockets_used.is_none() {
        return Err("no sockets: or TCP: line".into());
    }
    Ok(s)
}

/// Three numbers on one complete line.
fn three(text: &str) -> Option<(u64, u64, u64)> {
    let line = complete_lines(text).next()?;
    let mut it = line.split_ascii_whitespace().map(num);
    Some((it.next()??, it.next()??, it.next()??))
}

/// Parses `net.ipv4.tcp_mem` ("287898 383867 575796").
pub fn parse_tcp_mem(text: &str) -> Result<TcpMemLimits, String> {
    let (min_pages, pressure_pages, max_pages) = three(text).ok_or("expected three numbers")?;
    Ok(TcpMemLimits { min_pages, pressure_pages, max_pages })
}

/// Parses `fs.file-nr` ("allocated  unused  max").
pub fn parse_file_nr(text: &str) -> Result<FileHandles, String> {
    let (allocated, _unused, max) = three(text).ok_or("expected three numbers")?;
    Ok(FileHandles { allocated, max })
}

/// Parses `net.ipv4.ip_local_port_range` ("32768\t60999").
pub fn parse_port_range(text: &str) -> Result<(u16, u16), String> {
    let line = complete_lines(text).next().ok_or("empty or cut")?;
    let mut it = line.split_ascii_whitespace().map(|t| t.parse::<u16>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(lo), Some(hi)) if lo <= hi => Ok((lo, hi)),
        _ => Err(format!("unexpected format: {line:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockstat() {
        let s = parse_sockstat("sockets: used 12\nTCP: inuse 1 orphan 0 tw 25 alloc 1 mem 3\nUDP: inuse 0 mem 0\n").unwrap();
        assert_eq!((s.sockets_used, s.tcp_tw, s.tcp_mem_pages), (Some(12), Some(25), Some(3)));
        assert!(parse_sockstat("nonsense\n").is_err());
        let s = parse_sockstat("TCP: inuse 1 orphan x\n").unwrap();
        assert_eq!(s.tcp_orphan, None);
    }

    #[test]
    fn limits() {
        assert_eq!(parse_tcp_mem("287898\t383867\t575796\n").unwrap().max_pages, 575796);
        assert_eq!(parse_file_nr("477\t0\t2466170\n").unwrap(), FileHandles { allocated: 477, max: 2466170 });
        assert_eq!(parse_port_range("32768\t60999\n").unwrap(), (32768, 60999));
        assert!(parse_port_range("60999 32768\n").is_err());
        assert!(parse_file_nr("477\t0\t24").is_err());
        assert!(parse_tcp_mem("1 2\n").is_err());
    }
}
