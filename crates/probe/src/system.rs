//! The system sample (every machine-wide probe at once) and its sampler.

use crate::disk::{is_virtual_noise, parse_diskstats};
use crate::irq::{parse_interrupts, parse_softirqs};
use crate::limits::{parse_file_nr, parse_port_range, parse_sockstat, parse_tcp_mem};
use crate::meminfo::parse_meminfo;
use crate::netdev::parse_net_dev;
use crate::power::{PowerReading, PowerSources};
use crate::pressure::{parse_psi, Pressure, Psi};
use crate::read::{read_into, ProbeError};
use crate::socket_scan::{ScanOutcome, SocketScanner};
use crate::stat::{parse_loadavg, parse_stat};
use crate::tcp_mib::{parse_netstat, parse_snmp, TcpMib};
use crate::time::user_hz;
use crate::unavailable::{Source, Unavailable, UnavailableLog};
use crate::Roots;
use std::collections::HashSet;
use std::fs;
use std::path::Path;

pub use scalelab_core::sample::SystemSample;

/// Reads the machine-wide probes; call [`sample`](Self::sample) about once a
/// second. It keeps one text buffer and one port set across samples, so a
/// sample costs file reads and parsing, not allocation churn.
pub struct SystemSampler {
    roots: Roots,
    buf: String,
    sockets: SocketScanner,
    power: Result<PowerSources, String>,
    whole_disks: Option<HashSet<String>>,
    log: UnavailableLog,
    user_hz: u32,
}

/// Reads `path` into `buf` and parses it; the error names the path.
fn load<T>(buf: &mut String, path: &Path, parse: impl FnOnce(&str) -> Result<T, String>) -> Result<T, String> {
    read_into(path, buf).map_err(|e| e.to_string())?;
    parse(buf).map_err(|what| ProbeError::parse(path, what).to_string())
}

/// Records the outcome for `source` (once per sample, so that a source read
/// from several files, or partly readable, is reported once): an error or
/// a partial-read note marks it unavailable, a clean read clears it.
fn settle<T>(
    log: &mut UnavailableLog,
    news: &mut Vec<Unavailable>,
    source: Source,
    result: Result<T, String>,
    partial: impl FnOnce(&T) -> Option<String>,
) -> Option<T> {
    match result {
        Ok(v) => {
            match partial(&v) {
                Some(why) => log.note_into(news, source, why),
                None => log.clear(source),
            }
            Some(v)
        }
        Err(why) => {
            log.note_into(news, source, why);
            None
        }
    }
}

/// The partial-read note for fields a file lacked.
fn lacks(path: &Path, missing: &[&str]) -> Option<String> {
    (!missing.is_empty()).then(|| format!("{}: lacks {}", path.display(), missing.join(", ")))
}

fn whole<T>(_: &T) -> Option<String> {
    None
}

impl SystemSampler {
    /// A sampler over the given roots (`Roots::default()` for the live machine).
    /// Power sensors and the list of whole disks are discovered here, once.
    pub fn new(roots: &Roots) -> Self {
        let roots = roots.clone();
        let power = PowerSources::discover(&roots.sys);
        let whole_disks =
            fs::read_dir(roots.sys.join("block")).ok().map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect());
        SystemSampler {
            buf: String::with_capacity(64 * 1024),
            sockets: SocketScanner::new(&roots.proc),
            roots,
            power,
            whole_disks,
            log: UnavailableLog::default(),
            user_hz: user_hz(),
        }
    }

    /// The server addresses the load goes to: TIME_WAIT sockets toward them
    /// are counted apart ([`SystemSample::time_wait_to_target`]).
    pub fn set_targets(&mut self, targets: Vec<std::net::SocketAddr>) {
        self.sockets.set_targets(targets);
    }

    /// Every source currently unavailable, with its reason.
    pub fn unavailable(&self) -> Vec<Unavailable> {
        self.log.current()
    }

    /// Takes one sample of every probe.
    pub fn sample(&mut self) -> SystemSample {
        let at = crate::time::now();
        let mut news = Vec::new();
        let p = self.roots.proc.clone();
        let (buf, log) = (&mut self.buf, &mut self.log);

        let n = &mut news;
        let stat = p.join("stat");
        let cpu = settle(log, n, Source::Stat, load(buf, &stat, parse_stat), |c| lacks(&stat, &c.missing()));
        let load_avg = settle(log, n, Source::Loadavg, load(buf, &p.join("loadavg"), parse_loadavg), whole);
        let mut psi = |source, file: &str| {
            let r: Result<Psi, String> = load(buf, &p.join("pressure").join(file), parse_psi);
            settle(log, n, source, r, whole)
        };
        let pressure = Pressure {
            cpu: psi(Source::PressureCpu, "cpu"),
            io: psi(Source::PressureIo, "io"),
            memory: psi(Source::PressureMemory, "memory"),
        };
        let meminfo = p.join("meminfo");
        let memory = settle(log, n, Source::Meminfo, load(buf, &meminfo, parse_meminfo), |m| lacks(&meminfo, &m.missing()));
        let softirqs = settle(log, n, Source::Softirqs, load(buf, &p.join("softirqs"), parse_softirqs), whole);
        let interrupts = settle(log, n, Source::Interrupts, load(buf, &p.join("interrupts"), parse_interrupts), whole);
        let keep = &self.whole_disks;
        let disks = load(buf, &p.join("diskstats"), |t| {
            parse_diskstats(t, |name| !is_virtual_noise(name) && !matches!(keep, Some(w) if !w.contains(name)))
        });
        let disks = settle(log, n, Source::Diskstats, disks, whole);
        let net = settle(log, n, Source::NetDev, load(buf, &p.join("net/dev"), parse_net_dev), whole);

        let mut mib = TcpMib::default();
        let snmp = load(buf, &p.join("net/snmp"), |t| parse_snmp(t, &mut mib));
        let ext = snmp.is_ok().then(|| load(buf, &p.join("net/netstat"), |t| parse_netstat(t, &mut mib)));
        let snmp_path = p.join("net/snmp");
        let tcp = settle(log, n, Source::TcpMib, snmp.map(|_| mib), |m| match ext {
            Some(Err(why)) => Some(why),
            _ => lacks(&snmp_path, &m.missing()),
        });

        let range = load(buf, &p.join("sys/net/ipv4/ip_local_port_range"), parse_port_range);
        let range = settle(log, n, Source::PortRange, range, whole);
        let (buf, log) = (&mut self.buf, &mut self.log);
        let (tcp_states, ports, time_wait_to_target, socket_scan_skipped) = match self.sockets.scan(&p, buf, range) {
            ScanOutcome::Done(states, ports, to_target) => {
                log.clear(Source::TcpSockets);
                (Some(states), ports, to_target, false)
            }
            ScanOutcome::Skipped(to_target) => (None, None, to_target, true),
            ScanOutcome::Failed(why) => {
                log.note_into(n, Source::TcpSockets, why);
                (None, None, None, false)
            }
        };
        let target_listen = self.sockets.target_listen();
        let (buf, log) = (&mut self.buf, &mut self.log);
        let sockstat = settle(log, n, Source::Sockstat, load(buf, &p.join("net/sockstat"), parse_sockstat), whole);
        let tcp_mem = settle(log, n, Source::TcpMem, load(buf, &p.join("sys/net/ipv4/tcp_mem"), parse_tcp_mem), whole);
        let files = settle(log, n, Source::FileHandles, load(buf, &p.join("sys/fs/file-nr"), parse_file_nr), whole);
        let power = self.read_power(&mut news);

        SystemSample {
            at,
            user_hz: self.user_hz,
            cpu,
            load: load_avg,
            pressure,
            memory,
            softirqs,
            interrupts,
            disks,
            net,
            tcp,
            tcp_states,
            ports,
            time_wait_to_target,
            target_listen,
            socket_scan_skipped,
            sockstat,
            tcp_mem,
            files,
            power,
            newly_unavailable: news,
        }
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
