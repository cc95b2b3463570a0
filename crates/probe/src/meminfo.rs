//! Memory use from `/proc/meminfo`.

use crate::read::complete_lines;

pub use scalelab_core::sample::Memory;

/// Parses `/proc/meminfo`; an input without `MemTotal` is an error.
pub fn parse_meminfo(text: &str) -> Result<Memory, String> {
    let mut m = Memory::default();
    for line in complete_lines(text) {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(v) = rest.split_ascii_whitespace().next().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let slot = match key {
            "MemTotal" => &mut m.total_kib,
            "MemFree" => &mut m.free_kib,
            "MemAvailable" => &mut m.available_kib,
            "Buffers" => &mut m.buffers_kib,
            "Cached" => &mut m.cached_kib,
            "Dirty" => &mut m.dirty_kib,
            "Writeback" => &mut m.writeback_kib,
            "SwapTotal" => &mut m.swap_total_kib,
            "SwapFree" => &mut m.swap_free_kib,
            _ => continue,
        };
        *slot = Some(v);
    }
    if m.total_kib.is_none() {
        return Err("no MemTotal line".into());
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_derives() {
        let m = parse_meminfo(
            "MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 600 kB\nCached: 300 kB\nDirty: 7 kB\nSwapTotal: 50 kB\nSwapFree: 20 kB\n",
        )
        .unwrap();
        assert_eq!(m.used_kib(), Some(400));
        assert_eq!(m.swap_used_kib(), Some(30));
        assert_eq!(m.dirty_kib, Some(7));
        assert_eq!(m.buffers_kib, None);
        assert_eq!(m.missing(), ["Buffers", "Writeback"]);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(parse_meminfo("hello\nworld\n").is_err());
        assert!(parse_meminfo("MemTotal: 10").is_err());
        let m = parse_meminfo("MemTotal: 10 kB\nMemAvailable: x kB\n").unwrap();
        assert_eq!(m.used_kib(), None);
    }
}
