//! The machine's side of the preflight: CPU frequency governor, turbo,
//! SMT, transparent huge pages, swap, steal, load and CPU pressure,
//! the server's CPUs and both sides' open-file limits.

use super::files::{cpu_list, number, soft_nofile, status_field, text};
use crate::env::meminfo_kib;
use crate::Roots;
use scalelab_core::preflight::Reading;
use std::fs;

/// `scaling_governor` of every CPU that has cpufreq, in CPU order.
pub fn governors(roots: &Roots) -> Reading<Vec<String>> {
    let dir = roots.sys.join("devices/system/cpu");
    let mut cpus: Vec<u32> = fs::read_dir(&dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
        .collect();
    cpus.sort_unstable();
    let found: Vec<String> = cpus.iter().filter_map(|c| text(&dir.join(format!("cpu{c}/cpufreq/scaling_governor"))).ok()).collect();
    if found.is_empty() {
        return Err(format!("no cpu*/cpufreq/scaling_governor in {} (a VM, or no frequency scaling driver)", dir.display()));
    }
    Ok(found)
}

/// Turbo / boost on: `intel_pstate/no_turbo` (0: on) or `cpufreq/boost` (1: on).
pub fn boost(roots: &Roots) -> Reading<bool> {
    let no_turbo = roots.sys.join("devices/system/cpu/intel_pstate/no_turbo");
    let boost = roots.sys.join("devices/system/cpu/cpufreq/boost");
    if let Ok(v) = number::<u8>(&no_turbo) {
        return Ok(v == 0);
    }
    match number::<u8>(&boost) {
        Ok(v) => Ok(v == 1),
        Err(_) => Err(format!("neither {} nor {} is readable (no turbo control visible)", no_turbo.display(), boost.display())),
    }
}

/// SMT active (`devices/system/cpu/smt/active`).
pub fn smt(roots: &Roots) -> Reading<bool> {
    number::<u8>(&roots.sys.join("devices/system/cpu/smt/active")).map(|v| v == 1)
}

/// The selected transparent huge page mode (`[madvise]` in `always [madvise] never`).
pub fn thp(roots: &Roots) -> Reading<String> {
    let path = roots.sys.join("kernel/mm/transparent_hugepage/enabled");
    let t = text(&path)?;
    let start = t.find('[').ok_or_else(|| format!("{}: no [selected] mode in {t:?}", path.display()))?;
    let end = t[start..].find(']').ok_or_else(|| format!("{}: unclosed [ in {t:?}", path.display()))?;
    Ok(t[start + 1..start + end].to_string())
}

/// Swap in use and in all (KiB).
pub fn swap(roots: &Roots) -> Reading<(u64, u64)> {
    let path = roots.proc.join("meminfo");
    let t = text(&path)?;
    match (meminfo_kib(&t, "SwapTotal"), meminfo_kib(&t, "SwapFree")) {
        (Some(total), Some(free)) => Ok((total.saturating_sub(free), total)),
        _ => Err(format!("{}: no SwapTotal/SwapFree lines", path.display())),
    }
}

/// Steal ticks, all ticks since boot, and the online CPUs (`/proc/stat`).
pub fn stat(roots: &Roots) -> (Reading<(u64, u64)>, Reading<u32>) {
    let path = roots.proc.join("stat");
    let parsed = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|t| crate::stat::parse_stat(&t).map_err(|e| format!("{}: {e}", path.display())));
    match parsed {
        Ok(s) => {
            let steal = s.total.map(|t| (t.steal, t.total())).ok_or_else(|| format!("{}: no cpu line", path.display()));
            let cpus = Some(s.per_cpu.len() as u32).filter(|n| *n > 0).ok_or_else(|| format!("{}: no cpuN lines", path.display()));
            (steal, cpus)
        }
        Err(e) => (Err(e.clone()), Err(e)),
    }
}

/// The 1-minute load average.
pub fn load1(roots: &Roots) -> Reading<f64> {
    let path = roots.proc.join("loadavg");
    let t = text(&path)?;
    crate::stat::parse_loadavg(&format!("{t}\n")).map(|l| l.load1).map_err(|e| format!("{}: {e}", path.display()))
}

/// CPU pressure, `some avg10` (%).
pub fn cpu_pressure(roots: &Roots) -> Reading<f64> {
    let path = roots.proc.join("pressure/cpu");
    let t = text(&path).map_err(|e| format!("{e} (PSI needs Linux 4.20 with psi=1)"))?;
    crate::pressure::parse_psi(&format!("{t}\n")).map(|p| p.some.avg10).map_err(|e| format!("{}: {e}", path.display()))
}

/// The CPUs a process may run on (`Cpus_allowed_list`).
pub fn allowed_cpus(roots: &Roots, pid: u32) -> Reading<Vec<u32>> {
    let path = roots.proc.join(format!("{pid}/status"));
    let t = text(&path)?;
    status_field(&t, "Cpus_allowed_list").and_then(cpu_list).ok_or_else(|| format!("{}: no Cpus_allowed_list", path.display()))
}

/// The soft open-file limit of a process (`self` for this one).
pub fn nofile(roots: &Roots, pid: &str) -> Reading<u64> {
    let path = roots.proc.join(format!("{pid}/limits"));
    let t = text(&path)?;
    soft_nofile(&t).ok_or_else(|| format!("{}: no 'Max open files' line", path.display()))
}
