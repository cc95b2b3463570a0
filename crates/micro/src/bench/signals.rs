//! Signal handler install, signal catch and protection fault, as lmbench's
//! `lat_sig install|catch|prot`. Handlers are process-wide, so each test
//! saves the previous disposition and restores it when done.

use crate::measure::{median, scale, secs, Ctx, Out, Skip, Stopped, Values};
use crate::sys::{os_skip, TempFile};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

pub(crate) fn run(ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    out.put(ctx, "sig_install", install(ctx))?;
    let catch = catch(ctx);
    // Protection fault = (fault + handler) − handler cost, as lmbench.
    let catch_med = catch.as_ref().ok().and_then(|v| median(v));
    out.put(ctx, "sig_catch", catch)?;
    let prot = match catch_med {
        Some(c) => prot_fault(ctx).map(|v| v.into_iter().map(|x| x - c).collect()),
        None => Err(Skip::Unavailable("needs the signal catch figure".into())),
    };
    out.put(ctx, "prot_fault", prot)
}

extern "C" fn on_usr1(_: libc::c_int) {}

/// Restores a signal's previous action when dropped.
struct SavedAction {
    sig: libc::c_int,
    old: libc::sigaction,
}

impl SavedAction {
    fn set(sig: libc::c_int, handler: usize, flags: libc::c_int) -> Result<SavedAction, Skip> {
        // SAFETY: a zeroed sigaction (plain old data) filled here; the previous action is saved
        // into `old`, which we own, and restored on drop.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler;
            sa.sa_flags = flags;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &sa, &mut old) != 0 {
                return Err(os_skip("sigaction"));
            }
            Ok(SavedAction { sig, old })
        }
    }
}

impl Drop for SavedAction {
    fn drop(&mut self) {
        // SAFETY: restores the action saved by `set`, from a struct we own.
        unsafe { libc::sigaction(self.sig, &self.old, std::ptr::null_mut()) };
    }
}

/// Unblocks signals for the calling thread; restores its mask on drop.
struct Unblocked {
    old: libc::sigset_t,
}

impl Unblocked {
    fn new(sigs: &[libc::c_int]) -> Unblocked {
        // SAFETY: sigset_t values we own (zeroed, then set by sigemptyset/sigaddset); only the
        // calling thread's mask changes.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &s in sigs {
                libc::sigaddset(&mut set, s);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, &mut old);
            Unblocked { old }
        }
    }
}

impl Drop for Unblocked {
    fn drop(&mut self) {
        // SAFETY: restores the calling thread's mask saved by `new`, from a struct we own.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// sigaction(SIGUSR1) installing a handler, repeatedly.
fn install(ctx: &Ctx) -> Values {
    let _restore = SavedAction::set(libc::SIGUSR1, libc::SIG_IGN, 0)?;
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: a zeroed sigaction (plain old data) installing `on_usr1`, an
            // async-signal-safe extern "C" handler; `_restore` puts the old action back.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_usr1 as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGUSR1, &sa, &mut old) != 0 {
                    return Err(os_skip("sigaction"));
                }
            }
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}

/// Cost of sending SIGUSR1 to ourselves and running its (empty) handler,
/// less the cost of the send alone (signal 0), as lmbench does. tgkill
/// targets this thread, so the signal is not delivered to another thread of
/// a multithreaded process.
fn catch(ctx: &Ctx) -> Values {
    let _restore = SavedAction::set(libc::SIGUSR1, on_usr1 as *const () as usize, 0)?;
    let _mask = Unblocked::new(&[libc::SIGUSR1]);
    // SAFETY: getpid and gettid take no arguments and cannot fail.
    let (pid, tid) = unsafe { (libc::getpid(), libc::syscall(libc::SYS_gettid)) };
    let send = |sig: libc::c_int| {
        move |n: u64| {
            let t = Instant::now();
            for _ in 0..n {
                // SAFETY: tgkill to this very thread, with a signal whose handler is installed and
                // unblocked above.
                if unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) } != 0 {
                    return Err(os_skip("tgkill"));
                }
            }
            Ok(secs(t))
        }
    };
    let send_only = ctx.per_iter(send(0))?;
    let caught = ctx.per_iter(send(libc::SIGUSR1))?;
    let base = median(&send_only).unwrap_or(0.0);
    Ok(scale(caught.into_iter().map(|c| c - base).collect(), 1e6))
}

/// The page the SIGSEGV handler owns, and how many faults remain before it
/// makes the page writable so the faulting store can complete.
static PROT_PAGE: AtomicUsize = AtomicUsize::new(0);
static FAULTS_LEFT: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PROT_PAGE.load(Ordering::Relaxed);
    if page != 0 && addr >= page && addr < page + 4096 {
        if FAULTS_LEFT.fetch_sub(1, Ordering::Relaxed) <= 1 {
            // SAFETY: `page` is the live page of `Mapping` (PROT_PAGE is cleared before it is
            // unmapped); mprotect is async-signal-safe.
            unsafe { libc::mprotect(page as *mut libc::c_void, 4096, libc::PROT_READ | libc::PROT_WRITE) };
        }
    } else {
        // Not our fault: fall back to the default action, so the access
        // re-executes and the process dies as it would have.
        // SAFETY: restoring the default action, async-signal-safe.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// Unmaps the test page when dropped.
struct Mapping(*mut libc::c_void);

impl Drop for Mapping {
    fn drop(&mut self) {
        PROT_PAGE.store(0, Ordering::Relaxed);
        // SAFETY: unmaps the one page this Mapping owns, after PROT_PAGE no longer points at it.
        unsafe { libc::munmap(self.0, 4096) };
    }
}

/// A store into a read-only shared file mapping: each iteration is one
/// protection fault, one SIGSEGV delivered to a handler, and the return. The
/// handler counts faults and makes the page writable after the n-th, so the
/// store completes and the loop ends.
fn prot_fault(ctx: &Ctx) -> Values {
    let file = TempFile::create("prot", 4096)?;
    // SAFETY: a NUL-terminated path `file` keeps alive.
    let fd = unsafe { libc::open(file.c_path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(os_skip("open"));
    }
    // SAFETY: a new one-page shared mapping of the open file `fd`; the result is checked below.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
    // SAFETY: closing the descriptor opened above, owned by nothing else (the mapping keeps the
    // file).
    unsafe { libc::close(fd) };
    if ptr == libc::MAP_FAILED {
        return Err(os_skip("mmap"));
    }
    let map = Mapping(ptr);
    let page = map.0 as usize;
    // SAFETY: `page` is the start of the readable page `map` owns.
    unsafe { std::ptr::read_volatile(page as *const u8) };
    PROT_PAGE.store(page, Ordering::Relaxed);
    let flags = libc::SA_SIGINFO;
    let _segv = SavedAction::set(libc::SIGSEGV, on_segv as *const () as usize, flags)?;
    let _bus = SavedAction::set(libc::SIGBUS, on_segv as *const () as usize, flags)?;
    let _mask = Unblocked::new(&[libc::SIGSEGV, libc::SIGBUS]);
    let v = ctx.per_iter(|n| {
        // SAFETY: changes the protection of the page `map` owns.
        if unsafe { libc::mprotect(map.0, 4096, libc::PROT_READ) } != 0 {
            return Err(os_skip("mprotect"));
        }
        FAULTS_LEFT.store(n, Ordering::Relaxed);
        let t = Instant::now();
        // SAFETY: a store into the page `map` owns: the fault it takes is handled by `on_segv`,
        // which makes the page writable after the n-th one.
        unsafe { std::ptr::write_volatile(page as *mut u8, 1) };
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}
