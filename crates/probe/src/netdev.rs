//! Network interfaces from `/proc/net/dev`.

use crate::read::{complete_lines, num};

pub use scalelab_core::sample::NetDev;

/// Parses `/proc/net/dev` (two header lines, then `name: 16 numbers`).
pub fn parse_net_dev(text: &str) -> Result<Vec<NetDev>, String> {
    let mut out = Vec::new();
    for line in complete_lines(text) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let v: Vec<u64> = rest.split_ascii_whitespace().map_while(num).collect();
        if v.len() < 16 {
            continue;
        }
        out.push(NetDev {
            name: name.trim().to_string(),
            rx_bytes: v[0],
            rx_packets: v[1],
            rx_errors: v[2],
            rx_drops: v[3],
            tx_bytes: v[8],
            tx_packets: v[9],
            tx_errors: v[10],
            tx_drops: v[11],
        });
    }
    if out.is_empty() {
        return Err("no complete interface line".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_interfaces() {
        let text = "Inter-|   Receive |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes\n\
            lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0\n\
            eth0: 59883371    2452    0    1    0     0          0         0   143155    1742    0    2    0     0       0          0\n";
        let d = parse_net_dev(text).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].name, "eth0");
        assert_eq!((d[1].rx_bytes, d[1].rx_drops, d[1].tx_bytes, d[1].tx_drops), (59883371, 1, 143155, 2));
        assert!(parse_net_dev("eth0: 1 2 3\n").is_err());
    }
}
