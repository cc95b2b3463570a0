//! The client's own CPU time, so a result limited by the client is caught.

/// User + system CPU seconds this process has used so far (all threads).
pub fn process_cpu_s() -> f64 {
    // SAFETY: rusage is plain old data; all zeroes is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into `ru`, a live local.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU time the calling thread has used so far, ns (its own clock, exact to
/// the scheduler's accounting; 0 if the clock cannot be read).
pub fn thread_cpu_ns() -> u64 {
    // SAFETY: timespec is plain old data; all zeroes is a valid value.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime writes into `ts`, a live local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Time the calling thread has spent runnable but waiting for a CPU, ns
/// (second field of `/proc/thread-self/schedstat`); None without schedstats.
pub fn thread_run_delay_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// CPUs this process may run on (its affinity mask), at least 1.
pub fn allowed_cpus() -> u32 {
    match allowed_cpu_list().len() {
        0 => std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1),
        n => n as u32,
    }
}

/// The CPUs of this process's affinity mask, in order.
pub fn allowed_cpu_list() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the cpu_set_t we own; CPU_ISSET reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Binds the calling thread to one CPU; false if the kernel refused.
pub fn pin_current_thread(cpu: usize) -> bool {
    // SAFETY: a cpu_set_t we own, applied to the calling thread (tid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Asks for a time slice of `us` microseconds for the calling thread under
/// the fair scheduler (EEVDF's per-task slice, Linux 6.12+:
/// `sched_attr.sched_runtime`, policy and nice kept) and returns the slice the
/// kernel now holds for it, in µs: `None` where it keeps none (older kernels
/// accept the request and ignore it) or refused. The kernel clamps requests
/// to 100 µs..100 ms.
pub fn set_thread_slice_us(us: u64) -> Option<u64> {
    // The thread's own policy and nice value go back unchanged (a
    // sched_setattr with zeroes would reset `nice -n 10` to 0).
    let mut attr = thread_sched_attr()?;
    attr.sched_runtime = us.saturating_mul(1000);
    // SAFETY: a sched_attr we own, filled by the kernel and sized for it,
    // applied to the calling thread (pid 0).
    if unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const libc::sched_attr, 0) } != 0 {
        return None;
    }
    thread_slice_now_us()
}

/// The calling thread's scheduling attributes, as the kernel reports them.
fn thread_sched_attr() -> Option<libc::sched_attr> {
    // SAFETY: sched_attr is plain old data; all zeroes is a valid value.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sched_attr>() as libc::c_uint;
    // SAFETY: SYS_sched_getattr writes at most `size` bytes into `attr`, a live local of that size;
    // pid 0 is the calling thread.
    let r = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut attr as *mut libc::sched_attr, size, 0) };
    (r == 0).then_some(attr)
}

/// The calling thread's time slice under the fair scheduler, µs; `None`
/// where the kernel does not report one (before Linux 6.12).
pub fn thread_slice_now_us() -> Option<u64> {
    thread_sched_attr().filter(|a| a.sched_runtime > 0).map(|a| a.sched_runtime / 1000)
}

/// The slice [`set_thread_slice_us`] would give a client thread here, found
/// on a short-lived thread so that the caller's own slice is left alone.
pub fn thread_slice_us(us: u64) -> Option<u64> {
    std::thread::spawn(move || set_thread_slice_us(us)).join().ok().flatten()
}

/// True for "too many open files" (shared with the SQL clients in `scalelab-wire`).
pub use scalelab_wire::is_fd_limit;

/// Hard limit of open files of this process (what the soft limit can be raised to).
pub fn open_files_hard_limit() -> Option<u64> {
    // SAFETY: rlimit is plain old data; all zeroes is a valid value.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: getrlimit writes into `rl`, a live local.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0).then_some(rl.rlim_max)
}

/// Soft limit of open files of this process.
pub fn open_files_limit() -> Option<u64> {
    // SAFETY: rlimit is plain old data; all zeroes is a valid value.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: getrlimit writes into `rl`, a live local.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0).then_some(rl.rlim_cur)
}

/// Raises the soft open-file limit to the hard limit: 50 clients need 50
/// sockets, a --no-keepalive sweep needs many more in TIME_WAIT.
pub fn raise_open_files_limit() {
    // SAFETY: plain get/set of our own process limits.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 && rl.rlim_cur < rl.rlim_max {
            rl.rlim_cur = rl.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asking_for_a_slice_keeps_the_threads_nice_value() {
        std::thread::spawn(|| {
            // SAFETY: plain syscalls on the calling thread (gettid, its nice value).
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
            // SAFETY: sets the nice value of the calling thread (`tid`) only.
            assert_eq!(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, 7) }, 0, "raising one's own nice value is allowed");
            let granted = set_thread_slice_us(300);
            // SAFETY: reads the nice value of the calling thread (`tid`).
            assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) }, 7, "nice kept (slice {granted:?})");
            assert_eq!(granted, thread_slice_now_us());
        })
        .join()
        .unwrap();
    }
}
