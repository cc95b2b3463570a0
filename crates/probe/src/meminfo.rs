//! Memory use from `/proc/meminfo`.

use crate::read::complete_lines;
use serde::{Deserialize, Serialize};

/// Memory figures in KiB (gauges, not counters). Each is `None` when its
/// `/proc/meminfo` line is missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    pub total_kib: Option<u64>,
    pub free_kib: Option<u64>,
    pub available_kib: Option<u64>,
    pub buffers_kib: Option<u64>,
    /// Page cache (`Cached`).
    pub cached_kib: Option<u64>,
    /// Waiting to be written back (`Dirty`): a disk-bound server shows it pile up.
    pub dirty_kib: Option<u64>,
    pub writeback_kib: Option<u64>,
    pub swap_total_kib: Option<u64>,
    pub swap_free_kib: Option<u64>,
}

impl Memory {
    /// Used memory as `free` reports it today: total minus available.
    pub fn used_kib(&self) -> Option<u64> {
        self.total_kib?.checked_sub(self.available_kib?)
    }

    /// Swap in use.
    pub fn swap_used_kib(&self) -> Option<u64> {
        self.swap_total_kib?.checked_sub(self.swap_free_kib?)
    }

    /// Names of the fields that were not found.
    pub fn missing(&self) -> Vec<&'static str> {
        [
            (self.total_kib, "MemTotal"),
            (self.free_kib, "MemFree"),
            (self.available_kib, "MemAvailable"),
            (self.buffers_kib, "Buffers"),
            (self.cached_kib, "Cached"),
            (self.dirty_kib, "Dirty"),
            (self.writeback_kib, "Writeback"),
            (self.swap_total_kib, "SwapTotal"),
            (self.swap_free_kib, "SwapFree"),
        ]
        .into_iter()
        .filter_map(|(v, name)| v.is_none().then_some(name))
        .collect()
    }
}

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
