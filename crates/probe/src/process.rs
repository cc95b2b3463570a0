//! The server process: CPU, threads, context switches, memory, descriptors
//! and I/O, sampled about once a second.

use crate::read::{read_into, KeptFile, ProbeError};
use crate::tasks::{default_fd_budget, TaskTable};
use crate::time::user_hz;
use crate::unavailable::{Source, Unavailable, UnavailableLog};
use crate::Roots;
use std::fs;
use std::path::PathBuf;

pub use scalelab_core::sample::{ProcessIo, ProcessSample};

struct CtxSlot {
    status: Option<KeptFile>,
    schedstat: Option<KeptFile>,
    /// Times scheduled (`schedstat` third field) when `status` was last read.
    pcount: Option<u64>,
    vol: u64,
    invol: u64,
    gone: bool,
}

impl CtxSlot {
    fn fds(&self) -> usize {
        self.status.is_some() as usize + self.schedstat.is_some() as usize
    }
}

/// Times scheduled, the third field of `schedstat`.
fn parse_pcount(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    text.ends_with('\n').then_some(())?;
    text.split_ascii_whitespace().nth(2)?.parse().ok()
}

/// Samples one process. Summing context switches over 200 threads each
/// second is most of this sampler's cost, so per-thread `status` and
/// `schedstat` files are kept open (within a descriptor budget) and a
/// thread's `status` is read only if it was scheduled since the last sample.
pub struct ProcessSampler {
    pid: u32,
    dir: PathBuf,
    stat: Option<KeptFile>,
    start_time: Option<u64>,
    tasks: TaskTable<CtxSlot>,
    vol_total: u64,
    invol_total: u64,
    fd_budget: usize,
    fds_kept: usize,
    samples: u64,
    lost_thread: bool,
    /// The proc root is a real procfs (not a captured copy).
    on_procfs: bool,
    buf: Vec<u8>,
    text: String,
    log: UnavailableLog,
    user_hz: u32,
    page_kib: u64,
}

/// Parsed `/proc/PID/stat` fields this sampler uses.
pub(crate) struct PidStat {
    pub(crate) utime: u64,
    pub(crate) stime: u64,
    threads: u64,
    start_time: u64,
    rss_pages: u64,
}

pub(crate) fn parse_pid_stat(text: &[u8]) -> Option<PidStat> {
    let close = text.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&text[close + 1..]).ok()?;
    if !rest.ends_with('\n') {
        return None;
    }
    // After ")": state(3) ppid(4) ... utime(14) stime(15) ... num_threads(20) ... starttime(22) vsize(23) rss(24)
    let f: Vec<&str> = rest.split_ascii_whitespace().take(22).collect();
    let n = |i: usize| f.get(i - 3).and_then(|t| t.parse::<u64>().ok());
    Some(PidStat { utime: n(14)?, stime: n(15)?, threads: n(20)?, start_time: n(22)?, rss_pages: n(24)? })
}

/// `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` of a status text.
pub(crate) fn parse_ctx(text: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(text).ok()?;
    let mut vol = None;
    let mut invol = None;
    for line in crate::read::complete_lines(text) {
        if let Some(v) = line.strip_prefix("voluntary_ctxt_switches:") {
            vol = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("nonvoluntary_ctxt_switches:") {
            invol = v.trim().parse().ok();
        }
    }
    Some((vol?, invol?))
}

/// Parses `/proc/PID/io`; every field must be present.
pub fn parse_io(text: &str) -> Result<ProcessIo, String> {
    let mut io = [None; 6];
    for line in crate::read::complete_lines(text) {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let i = match k {
            "rchar" => 0,
            "wchar" => 1,
            "syscr" => 2,
            "syscw" => 3,
            "read_bytes" => 4,
            "write_bytes" => 5,
            _ => continue,
        };
        io[i] = v.trim().parse::<u64>().ok();
    }
    match io {
        [Some(rchar), Some(wchar), Some(syscr), Some(syscw), Some(read_bytes), Some(write_bytes)] => {
            Ok(ProcessIo { rchar, wchar, syscr, syscw, read_bytes, write_bytes })
        }
        _ => Err("missing or malformed fields".into()),
    }
}

impl ProcessSampler {
    /// A sampler of process `pid` under `roots.proc`.
    pub fn new(roots: &Roots, pid: u32) -> Self {
        // SAFETY: sysconf takes no pointers and only reads a configuration value.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        ProcessSampler {
            pid,
            dir: roots.proc.join(pid.to_string()),
            stat: None,
            start_time: None,
            tasks: TaskTable::new(&roots.proc, pid),
            vol_total: 0,
            invol_total: 0,
            fd_budget: default_fd_budget(),
            fds_kept: 0,
            samples: 0,
            lost_thread: false,
            on_procfs: crate::read::is_procfs(&roots.proc),
            buf: vec![0; 8192],
            text: String::new(),
            log: UnavailableLog::default(),
            user_hz: user_hz(),
            page_kib: if page > 0 { page as u64 / 1024 } else { 4 },
        }
    }

    /// Caps the per-thread descriptors kept open (default: a quarter of the
    /// soft open-files limit).
    pub fn with_fd_budget(mut self, fds: usize) -> Self {
        self.fd_budget = fds;
        self
    }

    /// The sampled pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Every source currently unavailable, with its reason.
    pub fn unavailable(&self) -> Vec<Unavailable> {
        self.log.current()
    }

    /// Takes one sample.
    pub fn sample(&mut self) -> ProcessSample {
        let at = crate::time::now();
        let mut s = ProcessSample { at, pid: self.pid, user_hz: self.user_hz, ..Default::default() };
        let mut news = Vec::new();
        let stat_path = self.dir.join("stat");
        if self.stat.is_none() {
            self.stat = KeptFile::open(&stat_path).ok();
        }
        let parsed = self.stat.as_ref().and_then(|f| f.read(&mut self.buf).ok()).and_then(parse_pid_stat);
        let same_process = |st: &PidStat| self.start_time.is_none() || self.start_time == Some(st.start_time);
        let Some(st) = parsed.filter(same_process) else {
            let why = format!("process {} exited (or {} unreadable)", self.pid, stat_path.display());
            self.log.note_into(&mut news, Source::Process, why);
            s.newly_unavailable = news;
            return s;
        };
        self.start_time = Some(st.start_time);
        self.log.clear(Source::Process);
        s.alive = true;
        s.cpu_user_ticks = Some(st.utime);
        s.cpu_system_ticks = Some(st.stime);
        s.threads = Some(st.threads);
        s.rss_kib = Some(st.rss_pages * self.page_kib);
        s.open_fds = self.open_fds(&mut news);
        s.io = self.io(&mut news);
        if self.sum_ctx_switches(&mut news) {
            s.voluntary_ctxt_switches = Some(self.vol_total);
            s.nonvoluntary_ctxt_switches = Some(self.invol_total);
        }
        s.newly_unavailable = news;
        s
    }

    fn open_fds(&mut self, news: &mut Vec<Unavailable>) -> Option<u64> {
        let dir = self.dir.join("fd");
        // Linux 6.2+ reports the number of open descriptors as the size of
        // the fd directory: one stat instead of listing 10,000 entries. Only
        // on procfs itself (a captured copy is an ordinary directory).
        let size = if self.on_procfs { fs::metadata(&dir).map(|m| m.len()).unwrap_or(0) } else { 0 };
        let counted = match size {
            0 => fs::read_dir(&dir).map(|d| d.count() as u64),
            n => Ok(n),
        };
        match counted {
            Ok(n) => {
                self.log.clear(Source::ProcessFds);
                Some(n)
            }
            Err(e) => {
                self.log.note_into(news, Source::ProcessFds, format!("cannot read {}: {e}", dir.display()));
                None
            }
        }
    }

    fn io(&mut self, news: &mut Vec<Unavailable>) -> Option<ProcessIo> {
        let path = self.dir.join("io");
        match read_into(&path, &mut self.text).and_then(|_| parse_io(&self.text).map_err(|w| ProbeError::parse(&path, w))) {
            Ok(io) => {
                self.log.clear(Source::ProcessIo);
                Some(io)
            }
            Err(e) => {
                self.log.note_into(news, Source::ProcessIo, e.to_string());
                None
            }
        }
    }

    /// Adds each thread's new context switches to the running totals.
    fn sum_ctx_switches(&mut self, news: &mut Vec<Unavailable>) -> bool {
        let dir = self.tasks.dir().to_path_buf();
        let budget = self.fd_budget;
        let kept = std::cell::Cell::new(self.fds_kept);
        // List task/ only when the thread count (directory link count)
        // changed, a thread vanished, or every 10th sample as a safety net.
        self.samples += 1;
        let count_changed = self.tasks.count_hint() != Some(self.tasks.len());
        let listing_due = count_changed || self.lost_thread || self.samples % 10 == 1;
        self.lost_thread = false;
        let rescanned = if !listing_due {
            Ok(())
        } else {
            self.tasks.rescan(
                |tid| {
                    let open = |name: &str| {
                        let file = (kept.get() < budget).then(|| KeptFile::open(&dir.join(tid.to_string()).join(name)).ok());
                        let file = file.flatten();
                        kept.set(kept.get() + file.is_some() as usize);
                        file
                    };
                    CtxSlot { status: open("status"), schedstat: open("schedstat"), pcount: None, vol: 0, invol: 0, gone: false }
                },
                |_, slot| kept.set(kept.get() - slot.fds()),
            )
        };
        self.fds_kept = kept.get();
        if let Err(e) = rescanned {
            self.log.note_into(news, Source::ProcessCtxSwitches, format!("cannot list {}: {e}", dir.display()));
            return false;
        }
        let (mut read_any, mut failed) = (false, None);
        for (tid, slot) in self.tasks.iter_mut() {
            // A thread not scheduled since the last read has not switched:
            // skip its `status` (10x the cost of `schedstat` to produce).
            let pcount = slot.schedstat.as_ref().and_then(|f| f.read(&mut self.buf).ok()).and_then(parse_pcount);
            if pcount.is_some() && pcount == slot.pcount {
                read_any = true;
                continue;
            }
            let bytes = match &slot.status {
                Some(f) => f.read(&mut self.buf),
                None => crate::read::read_once(&dir.join(tid.to_string()).join("status"), &mut self.buf),
            };
            match bytes.ok().and_then(parse_ctx) {
                Some((vol, invol)) => {
                    // A new slot starts at 0, so its whole count is added.
                    self.vol_total += vol.saturating_sub(slot.vol);
                    self.invol_total += invol.saturating_sub(slot.invol);
                    slot.vol = slot.vol.max(vol);
                    slot.invol = slot.invol.max(invol);
                    slot.pcount = pcount;
                    read_any = true;
                }
                None => {
                    slot.gone = true;
                    failed = Some(tid);
                }
            }
        }
        let (kept, lost) = (&mut self.fds_kept, &mut self.lost_thread);
        self.tasks.retain(
            |_, slot| !slot.gone,
            |_, slot| {
                *kept -= slot.fds();
                *lost = true;
            },
        );
        match (read_any, failed) {
            (false, Some(tid)) => {
                let why = format!("cannot read {}/{tid}/status", dir.display());
                self.log.note_into(news, Source::ProcessCtxSwitches, why);
                false
            }
            _ => {
                self.log.clear(Source::ProcessCtxSwitches);
                read_any
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_stat_with_spaces_in_name() {
        let s = b"42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 1234 1000000 300 18446744073709551615\n";
        let st = parse_pid_stat(s).unwrap();
        assert_eq!((st.utime, st.stime, st.threads, st.start_time, st.rss_pages), (250, 50, 7, 1234, 300));
        assert!(parse_pid_stat(&s[..60]).is_none());
        assert!(parse_pid_stat(b"garbage").is_none());
    }

    #[test]
    fn ctx_and_io() {
        assert_eq!(parse_ctx(b"Name:\tx\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t2\n"), Some((5, 2)));
        assert_eq!(parse_ctx(b"voluntary_ctxt_switches:\t5\n"), None);
        assert_eq!(parse_pcount(b"135809 20 17\n"), Some(17));
        assert_eq!(parse_pcount(b"135809 20 1"), None);
        let io = parse_io("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\ncancelled_write_bytes: 0\n").unwrap();
        assert_eq!((io.rchar, io.write_bytes), (1, 6));
        assert!(parse_io("rchar: 1\nwchar: 2\n").is_err());
    }
}
