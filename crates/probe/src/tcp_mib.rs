//! TCP MIB counters from `/proc/net/snmp` (`Tcp:`) and `/proc/net/netstat`
//! (`TcpExt:`): connection churn, retransmits, resets and accept-queue
//! overflows, the network-stack side of a collapse.

use crate::read::complete_lines;

pub use scalelab_core::sample::TcpMib;

/// Calls `f(name, value)` for each column of the `prefix` table: these files
/// hold pairs of lines, names first, values second.
fn for_each_pair<'a>(text: &'a str, prefix: &str, mut f: impl FnMut(&'a str, Option<u64>)) -> bool {
    let mut names: Option<&str> = None;
    for line in complete_lines(text) {
        let Some(rest) = line.strip_prefix(prefix).and_then(|r| r.strip_prefix(':')) else {
            continue;
        };
        match names {
            None => names = Some(rest),
            Some(n) => {
                let mut values = rest.split_ascii_whitespace();
                for name in n.split_ascii_whitespace() {
                    f(name, values.next().and_then(|v| v.parse().ok()));
                }
                return true;
            }
        }
    }
    false
}

/// Parses the `Tcp:` table of `/proc/net/snmp` into `mib`.
pub fn parse_snmp(text: &str, mib: &mut TcpMib) -> Result<(), String> {
    let found = for_each_pair(text, "Tcp", |name, v| {
        let slot = match name {
            "ActiveOpens" => &mut mib.active_opens,
            "PassiveOpens" => &mut mib.passive_opens,
            "AttemptFails" => &mut mib.attempt_fails,
            "EstabResets" => &mut mib.estab_resets,
            "CurrEstab" => &mut mib.curr_estab,
            "InSegs" => &mut mib.in_segs,
            "OutSegs" => &mut mib.out_segs,
            "RetransSegs" => &mut mib.retrans_segs,
            "InErrs" => &mut mib.in_errs,
            "OutRsts" => &mut mib.out_rsts,
            _ => return,
        };
        *slot = v;
    });
    if found {
        Ok(())
    } else {
        Err("no complete Tcp: table".into())
    }
}

/// Parses the `TcpExt:` table of `/proc/net/netstat` into `mib`.
pub fn parse_netstat(text: &str, mib: &mut TcpMib) -> Result<(), String> {
    let found = for_each_pair(text, "TcpExt", |name, v| {
        let slot = match name {
            "ListenOverflows" => &mut mib.listen_overflows,
            "ListenDrops" => &mut mib.listen_drops,
            "SyncookiesSent" => &mut mib.syncookies_sent,
            "TCPTimeouts" => &mut mib.timeouts,
            _ => return,
        };
        *slot = v;
    });
    if found {
        Ok(())
    } else {
        Err("no complete TcpExt: table".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
        Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n\
        Tcp: 1 200 120000 -1 51 25 0 3 2 900 880 7 0 9 0\n";

    #[test]
    fn snmp_and_netstat() {
        let mut m = TcpMib::default();
        parse_snmp(SNMP, &mut m).unwrap();
        assert_eq!((m.active_opens, m.passive_opens, m.retrans_segs, m.out_rsts), (Some(51), Some(25), Some(7), Some(9)));
        assert_eq!(m.estab_resets, Some(3));
        parse_netstat("TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 4 5\n", &mut m).unwrap();
        assert_eq!((m.listen_overflows, m.listen_drops), (Some(4), Some(5)));
        assert!(m.missing().is_empty());
    }

    #[test]
    fn cut_values_line_is_missing() {
        let mut m = TcpMib::default();
        let cut = &SNMP[..SNMP.len() - 10];
        assert!(parse_snmp(cut, &mut m).is_err());
        assert_eq!(m.active_opens, None);
        parse_snmp("Tcp: ActiveOpens PassiveOpens\nTcp: 5 x\n", &mut m).unwrap();
        assert_eq!((m.active_opens, m.passive_opens), (Some(5), None));
    }
}
