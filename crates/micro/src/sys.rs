//! Thin, guarded wrappers over the OS: forked children that are always
//! reaped, CPU pinning that is always undone, temp files that are always
//! removed, anonymous memory regions, and the machine's cache geometry.

use crate::skip::Skip;
use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// The last OS error as an "unavailable" reason naming the call.
pub(crate) fn os_skip(what: &str) -> Skip {
    Skip::Unavailable(format!("{what}: {}", io::Error::last_os_error()))
}

/// Cache sizes and CPU count, read from sysfs/procfs, that size the memory
/// benchmarks. Missing files fall back to conservative defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    pub l1d_bytes: u64,
    pub l2_bytes: u64,
    pub llc_bytes: u64,
    pub cpus: usize,
    /// The CPU flags include `hypervisor`: a virtual machine.
    pub hypervisor: bool,
}

impl Default for Machine {
    fn default() -> Self {
        Machine { l1d_bytes: 32 << 10, l2_bytes: 256 << 10, llc_bytes: 8 << 20, cpus: 1, hypervisor: false }
    }
}

impl Machine {
    /// Reads the live machine (`/sys`, `/proc`).
    pub fn detect() -> Machine {
        // SAFETY: sysconf takes a plain integer and has no other precondition.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        Machine::detect_at(Path::new("/sys"), Path::new("/proc"), cpus.max(1) as usize)
    }

    /// Reads cache sizes under `sys_root` and CPU flags under `proc_root`, so
    /// tests can use a captured tree.
    pub fn detect_at(sys_root: &Path, proc_root: &Path, cpus: usize) -> Machine {
        let mut m = Machine { cpus, ..Machine::default() };
        let base = sys_root.join("devices/system/cpu/cpu0/cache");
        let (mut l1, mut l2, mut llc) = (None, None, None);
        for i in 0..8 {
            let dir = base.join(format!("index{i}"));
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
            let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size")) else {
                continue;
            };
            let Some(bytes) = parse_cache_size(size.trim()) else {
                continue;
            };
            match (level.trim(), kind.trim()) {
                ("1", "Data") | ("1", "Unified") => l1 = Some(bytes),
                ("2", _) if kind.trim() != "Instruction" => l2 = Some(bytes),
                (lvl, k) if lvl >= "3" && k != "Instruction" => llc = Some(bytes),
                _ => {}
            }
        }
        if let Some(v) = l1 {
            m.l1d_bytes = v;
        }
        if let Some(v) = l2 {
            m.l2_bytes = v;
        }
        m.llc_bytes = llc.unwrap_or(m.l2_bytes.max(m.llc_bytes));
        if let Ok(info) = std::fs::read_to_string(proc_root.join("cpuinfo")) {
            m.hypervisor = info.lines().filter(|l| l.starts_with("flags")).any(|l| l.split_whitespace().any(|w| w == "hypervisor"));
        }
        m
    }
}

/// "48K", "2048K", "105M" → bytes.
pub(crate) fn parse_cache_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// A forked child process. Dropping it kills (SIGKILL) and reaps it, so no
/// benchmark leaves a process behind on error, panic or stop.
pub(crate) struct Child {
    pid: libc::pid_t,
    reaped: bool,
}

impl Child {
    /// Forks; the child runs `body` and exits with its return value. The
    /// body must only make async-signal-safe calls (read, write, close,
    /// execv, ...) and must not allocate: the parent may be multithreaded.
    /// The child also asks the kernel to kill it if the parent dies.
    pub fn fork(body: impl FnOnce() -> i32) -> io::Result<Child> {
        // SAFETY: getpid takes no arguments and cannot fail.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child runs only `body`, which the caller keeps to async-signal-safe calls
        // without allocation (see above), then `_exit`.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            // SAFETY: in the child: prctl, getppid and _exit are async-signal-safe; `body` is kept
            // so by the caller.
            0 => unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
                libc::_exit(code.unwrap_or(101))
            },
            pid => Ok(Child { pid, reaped: false }),
        }
    }

    /// Waits for the child to exit and returns its exit code (128 + signal
    /// number if it was killed).
    pub fn wait(mut self) -> io::Result<i32> {
        let status = wait_pid(self.pid)?;
        self.reaped = true;
        Ok(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) })
    }
}

fn wait_pid(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a live local; `pid` is a child of this process.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            // SAFETY: `pid` is our child, not yet reaped, so the id cannot have been reused.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            let _ = wait_pid(self.pid);
        }
    }
}

/// A pipe (read end, write end), close-on-exec.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, a live local array of two.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A connected AF_UNIX stream pair, close-on-exec.
pub(crate) fn unix_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    // SAFETY: socketpair writes two descriptors into `fds`, a live local array of two.
    if unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads exactly `buf.len()` bytes; false on EOF or error. Async-signal-safe
/// (used in children).
pub(crate) fn read_full(fd: RawFd, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reads at most `buf.len() - got` bytes into the unread tail of `buf`, borrowed
        // mutably.
        let r = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if r <= 0 {
            if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        got += r as usize;
    }
    true
}

/// Writes all of `buf`; false on error. Async-signal-safe.
pub(crate) fn write_full(fd: RawFd, buf: &[u8]) -> bool {
    let mut put = 0;
    while put < buf.len() {
        // SAFETY: writes at most `buf.len() - put` bytes from the unwritten tail of `buf`.
        let r = unsafe { libc::write(fd, buf[put..].as_ptr().cast(), buf.len() - put) };
        if r <= 0 {
            if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        put += r as usize;
    }
    true
}

/// Sets a receive timeout so a lost peer (or datagram) ends a blocking read
/// with an error instead of hanging the suite. Costs nothing per read.
pub(crate) fn set_recv_timeout(fd: RawFd, secs: i64) {
    let tv = libc::timeval { tv_sec: secs, tv_usec: 0 };
    // SAFETY: setsockopt reads one timeval from `tv`, a live local of that size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
}

/// Pins the calling thread to one CPU (the first it may run on); dropping
/// the guard restores the previous affinity. Children forked while pinned
/// inherit the pin, which is how `_same_cpu` tests put both ends on one CPU.
pub(crate) struct PinGuard {
    saved: libc::cpu_set_t,
}

impl PinGuard {
    pub fn pin_first_cpu() -> io::Result<(PinGuard, usize)> {
        // SAFETY: cpu_set_t values we own (zeroed, then filled by the kernel or CPU_SET); only the
        // calling thread's affinity changes.
        unsafe {
            let mut saved: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            if libc::sched_getaffinity(0, size, &mut saved) != 0 {
                return Err(io::Error::last_os_error());
            }
            let cpu = (0..libc::CPU_SETSIZE as usize)
                .find(|&c| libc::CPU_ISSET(c, &saved))
                .ok_or_else(|| io::Error::other("empty CPU affinity mask"))?;
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut one);
            if libc::sched_setaffinity(0, size, &one) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok((PinGuard { saved }, cpu))
        }
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: restores the calling thread's affinity from the cpu_set_t saved in this guard.
        unsafe { libc::sched_setaffinity(0, size, &self.saved) };
    }
}

/// A scratch file for the file benchmarks, created with an unpredictable
/// name and `O_EXCL` (scalelab runs as root: a fixed name in /tmp could be
/// a link planted to make it overwrite another file); removed when dropped.
pub(crate) struct TempFile {
    pub path: tempfile::TempPath,
    pub c_path: CString,
}

impl TempFile {
    /// Creates a file of `len` bytes (a repeating pattern, so reads see data).
    pub fn create(tag: &str, len: usize) -> io::Result<TempFile> {
        let mut f = tempfile::Builder::new().prefix(&format!("scalelab-micro-{tag}-")).tempfile()?;
        let chunk: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let mut left = len;
        while left > 0 {
            let k = left.min(chunk.len());
            std::io::Write::write_all(&mut f, &chunk[..k])?;
            left -= k;
        }
        let path = f.into_temp_path();
        let c_path = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| io::Error::other("temp path contains NUL"))?;
        Ok(TempFile { path, c_path })
    }
}

/// An anonymous private mapping, optionally backed by transparent huge pages
/// (fewer TLB misses, so the memory tests measure caches and DRAM rather
/// than page walks), pre-faulted so page faults stay out of the timings.
/// Unmapped on drop.
pub(crate) struct Region {
    map: *mut libc::c_void,
    map_len: usize,
    ptr: *mut u8,
    len: usize,
}

const HUGE: usize = 2 << 20;

impl Region {
    /// `len` usable bytes. With `huge`, the usable part starts on a 2 MiB
    /// boundary (so even a small buffer sits in one huge page) and the
    /// kernel is asked for huge pages.
    pub fn new(len: usize, huge: bool) -> io::Result<Region> {
        let map_len = if huge { len.div_ceil(HUGE) * HUGE + HUGE } else { len };
        // SAFETY: a new private anonymous mapping; the result is checked below.
        let map = unsafe {
            libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut ptr = map.cast::<u8>();
        if huge {
            // SAFETY: madvise on the whole mapping just made.
            unsafe { libc::madvise(map, map_len, libc::MADV_HUGEPAGE) };
            let misalign = ptr as usize % HUGE;
            if misalign != 0 {
                // SAFETY: HUGE - misalign < HUGE, and the mapping has HUGE bytes to spare past
                // `len`.
                ptr = unsafe { ptr.add(HUGE - misalign) };
            }
        }
        let r = Region { map, map_len, ptr, len };
        // Touch every page so the timed passes never fault.
        for off in (0..len).step_by(4096) {
            // SAFETY: `off` < `len`, inside the writable mapping.
            unsafe { r.ptr.add(off).write_volatile(1) };
        }
        Ok(r)
    }

    pub fn as_mut_slice<T: Copy>(&mut self) -> &mut [T] {
        // SAFETY: `ptr` is page-aligned (so aligned for any T) with `len` initialized bytes
        // (touched above), borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast(), self.len / std::mem::size_of::<T>()) }
    }

    pub fn as_slice<T: Copy>(&self) -> &[T] {
        // SAFETY: `ptr` is page-aligned (so aligned for any T) with `len` initialized bytes,
        // borrowed through `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len / std::mem::size_of::<T>()) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping this Region owns, once; slices borrowed from it cannot outlive
        // it.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_from_a_fake_tree() {
        let dir = std::env::temp_dir().join(format!("scalelab-micro-sys-{}", std::process::id()));
        let cache = dir.join("sys/devices/system/cpu/cpu0/cache");
        for (i, level, kind, size) in
            [(0, "1", "Data", "48K"), (1, "1", "Instruction", "32K"), (2, "2", "Unified", "2048K"), (3, "3", "Unified", "107520K")]
        {
            let d = cache.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        std::fs::write(dir.join("proc/cpuinfo"), "flags\t: fpu sse hypervisor avx\n").unwrap();
        let m = Machine::detect_at(&dir.join("sys"), &dir.join("proc"), 2);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(m.l1d_bytes, 48 << 10);
        assert_eq!(m.l2_bytes, 2 << 20);
        assert_eq!(m.llc_bytes, 105 << 20);
        assert!(m.hypervisor);
        assert_eq!(m.cpus, 2);
    }

    #[test]
    fn child_is_reaped_on_drop() {
        let c = Child::fork(|| {
            // SAFETY: pause takes no arguments; it returns when a signal arrives.
            unsafe { libc::pause() };
            0
        })
        .unwrap();
        let pid = c.pid;
        drop(c);
        // Reaped: waitpid on it now fails with ECHILD.
        // SAFETY: a null status pointer is allowed; on a reaped pid waitpid only fails (ECHILD).
        let r = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(r, -1);
    }

    #[test]
    fn child_exit_code() {
        let c = Child::fork(|| 7).unwrap();
        assert_eq!(c.wait().unwrap(), 7);
    }
}
