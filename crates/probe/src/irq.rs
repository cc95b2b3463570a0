//! Softirqs and interrupts per CPU (`/proc/softirqs`, `/proc/interrupts`), so
//! "all receive processing on one CPU" shows as one column doing all of it.

use crate::read::complete_lines;

pub use scalelab_core::sample::{Interrupts, Softirqs};

/// CPU ids of a header line ("    CPU0   CPU1"); `None` if it is not one.
fn header_cpus(line: &str) -> Option<Vec<u32>> {
    let cpus: Option<Vec<u32>> = line.split_ascii_whitespace().map(|t| t.strip_prefix("CPU").and_then(|n| n.parse().ok())).collect();
    cpus.filter(|c| !c.is_empty())
}

/// The label and the first `n` numbers of a row; `None` if fewer than `n`.
fn row(line: &str, n: usize) -> Option<(&str, Vec<u64>)> {
    let (label, rest) = line.split_once(':')?;
    let values: Vec<u64> = rest.split_ascii_whitespace().take(n).map_while(|t| t.parse().ok()).collect();
    (values.len() == n).then(|| (label.trim(), values))
}

/// Parses `/proc/softirqs`.
pub fn parse_softirqs(text: &str) -> Result<Softirqs, String> {
    let mut lines = complete_lines(text);
    let cpus = lines.next().and_then(header_cpus).ok_or("no CPU header line")?;
    let mut s = Softirqs { cpus, ..Default::default() };
    for line in lines {
        let Some((label, values)) = row(line, s.cpus.len()) else {
            continue;
        };
        let slot = match label {
            "NET_RX" => &mut s.net_rx,
            "NET_TX" => &mut s.net_tx,
            "TIMER" => &mut s.timer,
            "SCHED" => &mut s.sched,
            "BLOCK" => &mut s.block,
            _ => continue,
        };
        *slot = Some(values);
    }
    if s.net_rx.is_none() && s.timer.is_none() {
        return Err("no NET_RX or TIMER row".into());
    }
    Ok(s)
}

/// Parses `/proc/interrupts`. Rows with fewer numbers than CPUs (`ERR`,
/// `MIS`, or a cut row) are not per-CPU and are skipped.
pub fn parse_interrupts(text: &str) -> Result<Interrupts, String> {
    if !text.ends_with('\n') {
        return Err("cut short (sums over a partial file would be wrong)".into());
    }
    let mut lines = complete_lines(text);
    let cpus = lines.next().and_then(header_cpus).ok_or("no CPU header line")?;
    let n = cpus.len();
    let mut out = Interrupts { cpus, total_per_cpu: vec![0; n], device_per_cpu: vec![0; n] };
    let mut rows = 0;
    for line in lines {
        let Some((label, values)) = row(line, n) else {
            continue;
        };
        let device = label.bytes().all(|b| b.is_ascii_digit());
        for (i, v) in values.iter().enumerate() {
            out.total_per_cpu[i] += v;
            if device {
                out.device_per_cpu[i] += v;
            }
        }
        rows += 1;
    }
    if rows == 0 {
        return Err("no per-CPU interrupt rows".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softirqs() {
        let s = parse_softirqs(
            "                    CPU0       CPU1       \n          HI:          0          0\n       TIMER:       4712       5964\n      NET_TX:          2          2\n      NET_RX:       1096       1713\n       SCHED:      15552      14792\n",
        )
        .unwrap();
        assert_eq!(s.cpus, [0, 1]);
        assert_eq!(s.net_rx.as_deref(), Some(&[1096, 1713][..]));
        assert_eq!(s.block, None);
    }

    #[test]
    fn cut_softirq_row_is_none() {
        let s = parse_softirqs("  CPU0 CPU1\n TIMER: 1 2\n NET_RX: 5\n").unwrap();
        assert_eq!(s.net_rx, None);
        assert!(parse_softirqs("garbage\n").is_err());
    }

    #[test]
    fn interrupts_split_device_and_total() {
        let i = parse_interrupts(
            "           CPU0       CPU1       \n 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n\
             LOC:        100        200   Local timer interrupts\nERR:          0\n",
        )
        .unwrap();
        assert_eq!(i.total_per_cpu, [101, 200]);
        assert_eq!(i.device_per_cpu, [1, 0]);
        assert!(parse_interrupts("  CPU0\nERR: x\n").is_err());
    }
}
