//! Block devices from `/proc/diskstats`.

use crate::read::{complete_lines, num};

pub use scalelab_core::sample::DiskStat;

/// Parses `/proc/diskstats`, keeping devices for which `keep(name)` is true.
/// Lines with fewer than 14 fields are skipped.
pub fn parse_diskstats(text: &str, mut keep: impl FnMut(&str) -> bool) -> Result<Vec<DiskStat>, String> {
    let mut out = Vec::new();
    let mut lines = 0;
    for line in complete_lines(text) {
        let mut it = line.split_ascii_whitespace().skip(2);
        let Some(name) = it.next() else { continue };
        let mut v = [0u64; 11];
        let mut ok = true;
        for slot in v.iter_mut() {
            match it.next().and_then(num) {
                Some(x) => *slot = x,
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        lines += 1;
        if !keep(name) {
            continue;
        }
        out.push(DiskStat {
            name: name.to_string(),
            reads_completed: v[0],
            reads_merged: v[1],
            sectors_read: v[2],
            read_time_ms: v[3],
            writes_completed: v[4],
            writes_merged: v[5],
            sectors_written: v[6],
            write_time_ms: v[7],
            in_flight: v[8],
            io_ticks_ms: v[9],
            time_in_queue_ms: v[10],
        });
    }
    if lines == 0 {
        // Even a diskless machine lists loop devices; nothing at all is a bad read.
        return Err("no complete device line".into());
    }
    Ok(out)
}

/// Devices that are never the server's disk: loop and RAM disks.
pub fn is_virtual_noise(name: &str) -> bool {
    name.starts_with("loop") || name.starts_with("ram")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_filters() {
        let text = "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n \
                    254       0 vda 28068 4688 2092186 8681 14008 11310 1549584 5558 0 6616 15053 6435 44 345032 708 2396 104\n";
        let d = parse_diskstats(text, |n| !is_virtual_noise(n)).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].name, "vda");
        assert_eq!(d[0].writes_completed, 14008);
        assert_eq!(d[0].io_ticks_ms, 6616);
    }

    #[test]
    fn cut_line_is_skipped() {
        let d = parse_diskstats(" 254 0 vda 1 2 3\n", |_| true);
        assert!(d.is_err());
        assert!(parse_diskstats("", |_| true).is_err());
    }
}
