//! Where the worker threads run: the CPUs they are bound to and the time
//! slice they ask the kernel for.

/// A short time slice for client threads, µs, as `--client-slice-us` asks
/// for it (opt-in; the kernel's own slice is 0.75 ms × (1 + log2 CPUs),
/// 1.5 ms on 2 CPUs): a woken server thread then runs beside the client
/// that fed it instead of queueing behind it. Not the default: the gain did
/// not repeat and the client's extra context switches read as the server's.
/// Figures: `bench/notes/client-time-slice.md`.
pub const SHORT_CLIENT_SLICE_US: u64 = 100;

/// The CPUs a run's `threads` event loops are bound to, one each: the
/// first `threads` CPUs of this process's affinity mask, or none when there
/// are more threads than CPUs (or `no_pin`).
///
/// Why bind: the scheduler places a woken server thread near its waker, so
/// with the loops on fixed CPUs each server thread settles beside the loop
/// that feeds it instead of waking across CPUs. Figures:
/// `bench/notes/pinned-event-loops.md`.
pub fn pin_plan(threads: u32, no_pin: bool) -> Vec<usize> {
    let cpus = crate::cpu::allowed_cpu_list();
    if no_pin || threads as usize > cpus.len() {
        return Vec::new();
    }
    cpus[..threads as usize].to_vec()
}

/// Binds the calling worker thread to `cpu` and asks for a slice of
/// `slice_us`, as the run's options say.
pub(super) fn place_current_thread(cpu: Option<usize>, slice_us: Option<u64>) {
    if let Some(cpu) = cpu {
        // A refusal (e.g. a cpuset changed since the plan) leaves the thread unbound.
        crate::cpu::pin_current_thread(cpu);
    }
    if let Some(us) = slice_us {
        // The plan records what the kernel granted (cpu::thread_slice_us).
        crate::cpu::set_thread_slice_us(us);
    }
}

/// Moves the calling worker thread into the network namespace at `path`
/// (`--client-net`): its sockets then use that namespace's routes and
/// devices, while the rest of the process (the probes) stays on the host's.
pub(super) fn enter_netns(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path)?;
    // SAFETY: setns on a descriptor we hold open; it changes only this thread's network namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
