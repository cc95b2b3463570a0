//! The system sample (every machine-wide probe at once) and its sampler.

use crate::disk::{is_virtual_noise, parse_diskstats, DiskStat};
use crate::irq::{parse_interrupts, parse_softirqs, Interrupts, Softirqs};
use crate::limits::{parse_file_nr, parse_port_range, parse_sockstat, parse_tcp_mem, FileHandles, SockStat, TcpMemLimits};
use crate::meminfo::{parse_meminfo, Memory};
use crate::netdev::{parse_net_dev, NetDev};
use crate::power::{PowerReading, PowerSources};
use crate::pressure::{parse_psi, Pressure, Psi};
use crate::read::{read_into, ProbeError};
use crate::sockets::{scan_tcp, PortSet, PortUsage, TcpStates, TCP_LISTEN};
use crate::stat::{parse_loadavg, parse_stat, CpuStat, LoadAvg};
use crate::tcp_mib::{parse_netstat, parse_snmp, TcpMib};
use crate::time::{user_hz, Timestamp};
use crate::unavailable::{Source, Unavailable, UnavailableLog};
use crate::Roots;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;

/// One reading of every machine-wide probe. Counters are raw (since boot);
/// [`crate::rates::system_rates`] turns two samples into rates. A `None`
/// field could not be read; why is in `newly_unavailable` the first time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemSample {
    pub at: Timestamp,
    /// Unit of the CPU tick counters (`USER_HZ`).
    pub user_hz: u32,
    pub cpu: Option<CpuStat>,
    pub load: Option<LoadAvg>,
    pub pressure: Pressure,
    pub memory: Option<Memory>,
    pub softirqs: Option<Softirqs>,
    pub interrupts: Option<Interrupts>,
    /// Whole disks (partitions, loop and RAM disks left out).
    pub disks: Option<Vec<DiskStat>>,
    pub net: Option<Vec<NetDev>>,
    pub tcp: Option<TcpMib>,
    pub tcp_states: Option<TcpStates>,
    pub ports: Option<PortUsage>,
    pub sockstat: Option<SockStat>,
    pub tcp_mem: Option<TcpMemLimits>,
    pub files: Option<FileHandles>,
    pub power: Option<Vec<PowerReading>>,
    /// Sources that became unavailable (or changed reason) at this sample.
    pub newly_unavailable: Vec<Unavailable>,
}

/// Reads the machine-wide probes; call [`sample`](Self::sample) about once a
/// second. It keeps one text buffer and one port set across samples, so a
/// sample costs file reads and parsing, not allocation churn.
pub struct SystemSampler {
    roots: Roots,
    buf: String,
    ports: PortSet,
    power: Result<PowerSources, String>,
    whole_disks: Option<HashSet<String>>,
    log: UnavailableLog,
    user_hz: u32,
}

/// Reads `path` into `buf`, parses it, and records the outcome for `source`.
fn fetch<T>(
    buf: &mut String,
    log: &mut UnavailableLog,
    news: &mut Vec<Unavailable>,
    source: Source,
    path: &Path,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Option<T> {
    let result = read_into(path, buf).and_then(|_| parse(buf).map_err(|what| ProbeError::parse(path, what)));
    match result {
        Ok(v) => {
            log.clear(source);
            Some(v)
        }
        Err(e) => {
            log.note_into(news, source, e.to_string());
            None
        }
    }
}

/// Records fields missing from a partly readable source (or clears the note).
fn note_missing(log: &mut UnavailableLog, news: &mut Vec<Unavailable>, source: Source, path: &Path, missing: &[&str]) {
    if !missing.is_empty() {
        log.note_into(news, source, format!("{}: lacks {}", path.display(), missing.join(", ")));
    }
}

impl SystemSampler {
    /// A sampler over the given roots (`Roots::default()` for the live machine).
    /// Power sensors and the list of whole disks are discovered here, once.
    pub fn new(roots: Roots) -> Self {
        let power = PowerSources::discover(&roots.sys);
        let whole_disks = fs::read_dir(roots.sys.join("block"))
            .ok()
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect());
        SystemSampler {
            roots,
            buf: String::with_capacity(64 * 1024),
            ports: PortSet::default(),
            power,
            whole_disks,
            log: UnavailableLog::default(),
            user_hz: user_hz(),
        }
    }

    /// Every source currently unavailable, with its reason.
    pub fn unavailable(&self) -> Vec<Unavailable> {
        self.log.current()
    }

    /// Takes one sample of every probe.
    pub fn sample(&mut self) -> SystemSample {
        let at = Timestamp::now();
        let mut news = Vec::new();
        let p = self.roots.proc.clone();
        let (buf, log) = (&mut self.buf, &mut self.log);

        let cpu = fetch(buf, log, &mut news, Source::Stat, &p.join("stat"), parse_stat);
        if let Some(c) = &cpu {
            note_missing(log, &mut news, Source::Stat, &p.join("stat"), &c.missing());
        }
        let load = fetch(buf, log, &mut news, Source::Loadavg, &p.join("loadavg"), parse_loadavg);
        let psi = |buf: &mut String, log: &mut UnavailableLog, news: &mut Vec<Unavailable>, s, f: &str| -> Option<Psi> {
            fetch(buf, log, news, s, &p.join("pressure").join(f), parse_psi)
        };
        let pressure = Pressure {
            cpu: psi(buf, log, &mut news, Source::PressureCpu, "cpu"),
            io: psi(buf, log, &mut news, Source::PressureIo, "io"),
            memory: psi(buf, log, &mut news, Source::PressureMemory, "memory"),
        };
        let memory = fetch(buf, log, &mut news, Source::Meminfo, &p.join("meminfo"), parse_meminfo);
        if let Some(m) = &memory {
            note_missing(log, &mut news, Source::Meminfo, &p.join("meminfo"), &m.missing());
        }
        let softirqs = fetch(buf, log, &mut news, Source::Softirqs, &p.join("softirqs"), parse_softirqs);
        let interrupts = fetch(buf, log, &mut news, Source::Interrupts, &p.join("interrupts"), parse_interrupts);
        let whole = &self.whole_disks;
        let disks = fetch(buf, log, &mut news, Source::Diskstats, &p.join("diskstats"), |t| {
            parse_diskstats(t, |name| !is_virtual_noise(name) && whole.as_ref().map_or(true, |w| w.contains(name)))
        });
        let net = fetch(buf, log, &mut news, Source::NetDev, &p.join("net/dev"), parse_net_dev);

        let mut mib = TcpMib::default();
        let snmp = fetch(buf, log, &mut news, Source::TcpMib, &p.join("net/snmp"), |t| parse_snmp(t, &mut mib));
        let ext = snmp.and_then(|_| {
            fetch(buf, log, &mut news, Source::TcpMib, &p.join("net/netstat"), |t| parse_netstat(t, &mut mib))
        });
        if ext.is_some() {
            note_missing(log, &mut news, Source::TcpMib, &p.join("net/snmp"), &mib.missing());
        }
        let tcp = snmp.map(|_| mib);

        let range = fetch(
            buf,
            log,
            &mut news,
            Source::PortRange,
            &p.join("sys/net/ipv4/ip_local_port_range"),
            parse_port_range,
        );
        let (tcp_states, ports) = self.scan_sockets(range, &mut news);
        let (buf, log) = (&mut self.buf, &mut self.log);
        let sockstat = fetch(buf, log, &mut news, Source::Sockstat, &p.join("net/sockstat"), parse_sockstat);
        let tcp_mem = fetch(buf, log, &mut news, Source::Sockstat, &p.join("sys/net/ipv4/tcp_mem"), parse_tcp_mem);
        let files = fetch(buf, log, &mut news, Source::FileHandles, &p.join("sys/fs/file-nr"), parse_file_nr);
        let power = self.read_power(&mut news);

        SystemSample {
            at,
            user_hz: self.user_hz,
            cpu,
            load,
            pressure,
            memory,
            softirqs,
            interrupts,
            disks,
            net,
            tcp,
            tcp_states,
            ports,
            sockstat,
            tcp_mem,
            files,
            power,
            newly_unavailable: news,
        }
    }

    /// Counts sockets by state over `tcp` and `tcp6`, and ephemeral ports in use.
    fn scan_sockets(&mut self, range: Option<(u16, u16)>, news: &mut Vec<Unavailable>) -> (Option<TcpStates>, Option<PortUsage>) {
        let mut states = TcpStates::default();
        self.ports.clear();
        let (lo, hi) = range.unwrap_or((1, 0));
        let mut usage = PortUsage { range_low: lo, range_high: hi, ports_in_use: 0, sockets_in_range: 0 };
        let mut any = false;
        for file in ["net/tcp", "net/tcp6"] {
            let path = self.roots.proc.join(file);
            if let Err(e) = read_into(&path, &mut self.buf) {
                // No tcp6 file means IPv6 is off: then there are no IPv6 sockets to count.
                let ipv6_off = file == "net/tcp6" && matches!(&e, ProbeError::Read { source, .. } if source.kind() == ErrorKind::NotFound);
                if !ipv6_off {
                    self.log.note_into(news, Source::TcpSockets, e.to_string());
                    return (None, None);
                }
                continue;
            }
            let ports = &mut self.ports;
            let scanned = scan_tcp(&self.buf, |e| {
                states.add(e.state);
                if e.state != TCP_LISTEN && e.local_port >= lo && e.local_port <= hi {
                    usage.sockets_in_range += 1;
                    if ports.insert(e.local_port) {
                        usage.ports_in_use += 1;
                    }
                }
            });
            match scanned {
                Ok(_) => any = true,
                Err(what) => {
                    self.log.note_into(news, Source::TcpSockets, ProbeError::parse(&path, what).to_string());
                    return (None, None);
                }
            }
        }
        if !any {
            return (None, None);
        }
        self.log.clear(Source::TcpSockets);
        (Some(states), range.map(|_| usage))
    }

    fn read_power(&mut self, news: &mut Vec<Unavailable>) -> Option<Vec<PowerReading>> {
        match &self.power {
            Err(why) => {
                self.log.note_into(news, Source::Power, why.clone());
                None
            }
            Ok(sources) => {
                let (readings, errors) = sources.read(&mut self.buf);
                if readings.is_empty() {
                    self.log.note_into(news, Source::Power, errors.join("; "));
                    None
                } else {
                    if errors.is_empty() {
                        self.log.clear(Source::Power);
                    } else {
                        self.log.note_into(news, Source::Power, format!("some sensors unreadable: {}", errors.join("; ")));
                    }
                    Some(readings)
                }
            }
        }
    }
}
