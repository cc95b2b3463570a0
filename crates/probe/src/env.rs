//! Captures the [`Environment`] of a run from `/proc`, `/sys` and `/etc`.

use scalelab_core::Environment;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Where the OS files live: the real `/proc`, `/sys` and `/etc` by default,
/// a folder of captured files in tests.
#[derive(Clone, Debug)]
pub struct Roots {
    /// procfs, `/proc` on the live machine.
    pub proc: PathBuf,
    /// sysfs, `/sys` on the live machine.
    pub sys: PathBuf,
    /// `/etc` (for `os-release`).
    pub etc: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots { proc: "/proc".into(), sys: "/sys".into(), etc: "/etc".into() }
    }
}

impl Roots {
    /// Roots under one folder holding `proc/`, `sys/` and `etc/` (a captured tree).
    pub fn under(base: &Path) -> Self {
        Roots { proc: base.join("proc"), sys: base.join("sys"), etc: base.join("etc") }
    }
}

fn read_trim(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Reads the environment. `server` is what the target said it is (HTTP
/// `Server` header, SQL version); `open_files_limit` comes from the caller's
/// own `getrlimit` because it is a property of the client process.
pub fn capture_environment(roots: &Roots, server: Option<String>, open_files_limit: Option<u64>) -> Environment {
    let cpuinfo = fs::read_to_string(roots.proc.join("cpuinfo")).unwrap_or_default();
    let (cpu_model, logical, physical) = parse_cpuinfo(&cpuinfo);
    Environment {
        hostname: read_trim(&roots.proc.join("sys/kernel/hostname")),
        kernel: read_trim(&roots.proc.join("sys/kernel/osrelease")),
        distribution: fs::read_to_string(roots.etc.join("os-release")).ok().and_then(|s| parse_os_release(&s)),
        cpu_model,
        logical_cores: logical,
        physical_cores: physical,
        smt: read_trim(&roots.sys.join("devices/system/cpu/smt/active")).and_then(|s| match s.as_str() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        }),
        memory_kib: fs::read_to_string(roots.proc.join("meminfo")).ok().and_then(|s| meminfo_kib(&s, "MemTotal")),
        governor: read_trim(&roots.sys.join("devices/system/cpu/cpu0/cpufreq/scaling_governor")),
        ip_local_port_range: read_trim(&roots.proc.join("sys/net/ipv4/ip_local_port_range"))
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")),
        somaxconn: read_trim(&roots.proc.join("sys/net/core/somaxconn")).and_then(|s| s.parse().ok()),
        open_files_limit,
        scalelab_version: scalelab_core::VERSION.to_string(),
        server,
        preflight: None,
        noise_pct: None,
    }
}

/// CPU model, logical CPUs, and physical cores (distinct physical id/core id pairs).
fn parse_cpuinfo(text: &str) -> (Option<String>, Option<u32>, Option<u32>) {
    let mut model = None;
    let mut logical = 0u32;
    let mut cores = BTreeSet::new();
    let mut phys_id = String::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" => logical += 1,
            "model name" if model.is_none() => model = Some(v.to_string()),
            "physical id" => phys_id = v.to_string(),
            "core id" => {
                cores.insert((phys_id.clone(), v.to_string()));
            }
            _ => {}
        }
    }
    let logical = (logical > 0).then_some(logical);
    let physical = if cores.is_empty() { None } else { Some(cores.len() as u32) };
    (model, logical, physical)
}

fn parse_os_release(text: &str) -> Option<String> {
    text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=")).map(|v| v.trim().trim_matches('"').to_string())
}

/// A `/proc/meminfo` field in KiB.
pub fn meminfo_kib(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_captured_tree() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path();
        for d in ["proc/sys/kernel", "proc/sys/net/ipv4", "proc/sys/net/core", "etc", "sys/devices/system/cpu/smt"] {
            fs::create_dir_all(b.join(d)).unwrap();
        }
        fs::write(b.join("proc/sys/kernel/hostname"), "box\n").unwrap();
        fs::write(b.join("proc/sys/kernel/osrelease"), "6.1.0-test\n").unwrap();
        fs::write(b.join("proc/sys/net/ipv4/ip_local_port_range"), "32768\t60999\n").unwrap();
        fs::write(b.join("proc/sys/net/core/somaxconn"), "4096\n").unwrap();
        fs::write(b.join("etc/os-release"), "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n").unwrap();
        fs::write(b.join("sys/devices/system/cpu/smt/active"), "0\n").unwrap();
        fs::write(b.join("proc/meminfo"), "MemTotal:       24576000 kB\nMemFree: 1 kB\n").unwrap();
        fs::write(
            b.join("proc/cpuinfo"),
            "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nphysical id\t: 0\ncore id\t\t: 0\n\n\
             processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\nphysical id\t: 0\ncore id\t\t: 1\n",
        )
        .unwrap();
        let env = capture_environment(&Roots::under(b), Some("nginx/1.22.1".into()), Some(1024));
        assert_eq!(env.hostname.as_deref(), Some("box"));
        assert_eq!(env.kernel.as_deref(), Some("6.1.0-test"));
        assert_eq!(env.distribution.as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
        assert_eq!(env.cpu_model.as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(env.logical_cores, Some(2));
        assert_eq!(env.physical_cores, Some(2));
        assert_eq!(env.smt, Some(false));
        assert_eq!(env.memory_kib, Some(24_576_000));
        assert_eq!(env.ip_local_port_range.as_deref(), Some("32768 60999"));
        assert_eq!(env.somaxconn, Some(4096));
        // no cpufreq folder captured: unknown, not a guess
        assert_eq!(env.governor, None);
    }

    #[test]
    fn empty_tree_is_all_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let env = capture_environment(&Roots::under(dir.path()), None, None);
        assert_eq!(env.hostname, None);
        assert_eq!(env.logical_cores, None);
        assert_eq!(env.memory_kib, None);
    }
}
