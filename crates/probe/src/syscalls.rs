//! Why a sleeping thread sleeps: its system call number (from
//! `/proc/PID/task/TID/syscall`) or its kernel wait channel (`wchan`).
//!
//! Numbers are per architecture; x86_64 and aarch64 tables are checked
//! against the kernel's (`arch/x86/entry/syscalls/syscall_64.tbl`,
//! `include/uapi/asm-generic/unistd.h`) and, in tests, against `libc`.

pub use scalelab_core::sample::ThreadState;
/// System call numbers that decide a class, for one architecture.
#[derive(Clone, Copy, Debug)]
pub struct SyscallTable {
    /// Lock and condition-variable waits: futex, futex_waitv (5.16+),
    /// futex_wait (6.7+), and SysV semop/semtimedop (PostgreSQL builds that
    /// use SysV semaphores wait there for their locks).
    pub futex: &'static [i64],
    /// Waiting for work: epoll_wait, epoll_pwait, epoll_pwait2, poll, ppoll,
    /// select, pselect6, accept, accept4 (absent ones are left out per arch).
    pub idle: &'static [i64],
    /// Other calls that only ever sleep interruptibly (state S, never D):
    /// nanosleep, clock_nanosleep, pause, wait4, waitid, rt_sigtimedwait,
    /// rt_sigsuspend, recvfrom, recvmsg, recvmmsg. A thread blocked in one
    /// needs no `stat` read to tell sleep from disk wait.
    pub interruptible: &'static [i64],
}

/// x86_64 numbers (syscall_64.tbl): futex 202, futex_waitv 449,
/// futex_wait 455, semop 65, semtimedop 220; epoll_wait 232, epoll_pwait
/// 281, epoll_pwait2 441, poll 7, ppoll 271, select 23, pselect6 270,
/// accept 43, accept4 288.
pub const X86_64: SyscallTable = SyscallTable {
    futex: &[202, 449, 455, 65, 220],
    idle: &[232, 281, 441, 7, 271, 23, 270, 43, 288],
    interruptible: &[35, 230, 34, 61, 247, 128, 130, 45, 47, 299],
};

/// aarch64 numbers (asm-generic unistd.h): futex 98, futex_waitv 449,
/// futex_wait 455, semop 193, semtimedop 192; epoll_pwait 22, epoll_pwait2
/// 441, ppoll 73, pselect6 72, accept 202, accept4 242 (no epoll_wait, poll,
/// select or pause on this architecture).
pub const AARCH64: SyscallTable = SyscallTable {
    futex: &[98, 449, 455, 193, 192],
    idle: &[22, 441, 73, 72, 202, 242],
    interruptible: &[101, 115, 260, 95, 137, 133, 207, 212, 243],
};

/// The table of the architecture this build runs on; `None` elsewhere, and
/// then only `wchan` can tell a futex from an epoll wait.
pub fn native_table() -> Option<SyscallTable> {
    if cfg!(target_arch = "x86_64") {
        Some(X86_64)
    } else if cfg!(target_arch = "aarch64") {
        Some(AARCH64)
    } else {
        None
    }
}

/// Parsed first field of a `syscall` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyscallField {
    /// The thread is on a CPU right now.
    Running,
    /// Blocked outside any system call (`-1`), e.g. in a page fault.
    NotInSyscall,
    /// Blocked in this system call.
    Nr(i64),
}

/// Parses the start of `/proc/PID/task/TID/syscall`: `"202 0x..."`,
/// `"running"` or `"-1 0x.. 0x.."`.
pub fn parse_syscall(text: &[u8]) -> Option<SyscallField> {
    if text.last() != Some(&b'\n') {
        return None; // cut: "20" of "202" would be another syscall
    }
    let first = text.split(|b| b.is_ascii_whitespace()).next()?;
    match first {
        b"running" => Some(SyscallField::Running),
        b"-1" => Some(SyscallField::NotInSyscall),
        _ => std::str::from_utf8(first).ok()?.parse().ok().map(SyscallField::Nr),
    }
}

/// Class of a sleeping thread blocked in system call `nr`.
pub fn classify_syscall(table: &SyscallTable, nr: i64) -> ThreadState {
    if table.futex.contains(&nr) {
        ThreadState::Futex
    } else if table.idle.contains(&nr) {
        ThreadState::Idle
    } else {
        ThreadState::Other
    }
}

/// Class of a sleeping thread from its wait channel symbol, for when the
/// `syscall` file is unreadable. Symbol names vary by kernel version
/// (`futex_wait_queue_me`, `futex_wait_queue`, `futex_do_wait` on 6.18), so
/// this matches on stems. `None` when the channel is hidden ("0" or empty).
pub fn classify_wchan(wchan: &[u8]) -> Option<ThreadState> {
    let w = std::str::from_utf8(wchan).ok()?.trim();
    if w.is_empty() || w == "0" {
        return None;
    }
    const IDLE: [&str; 6] = ["ep_poll", "epoll_wait", "do_sys_poll", "poll_schedule", "select", "inet_csk_"];
    Some(if w.contains("futex") {
        ThreadState::Futex
    } else if IDLE.iter().any(|s| w.contains(s)) {
        ThreadState::Idle
    } else {
        ThreadState::Other
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn x86_64_table_matches_libc() {
        use libc::*;
        let t = X86_64;
        assert_eq!(t.futex, [SYS_futex, SYS_futex_waitv, 455, SYS_semop, SYS_semtimedop]);
        let idle =
            [SYS_epoll_wait, SYS_epoll_pwait, SYS_epoll_pwait2, SYS_poll, SYS_ppoll, SYS_select, SYS_pselect6, SYS_accept, SYS_accept4];
        assert_eq!(t.idle, idle);
        let sleeps = [
            SYS_nanosleep,
            SYS_clock_nanosleep,
            SYS_pause,
            SYS_wait4,
            SYS_waitid,
            SYS_rt_sigtimedwait,
            SYS_rt_sigsuspend,
            SYS_recvfrom,
            SYS_recvmsg,
            SYS_recvmmsg,
        ];
        assert_eq!(t.interruptible, sleeps);
        assert_eq!(classify_syscall(&t, SYS_recvfrom), ThreadState::Other);
        assert_eq!(classify_syscall(&t, SYS_read), ThreadState::Other);
    }

    #[test]
    #[cfg(target_arch = "aarch64")]
    fn aarch64_table_matches_libc() {
        use libc::*;
        assert_eq!(AARCH64.futex, [SYS_futex, SYS_futex_waitv, 455, SYS_semop, SYS_semtimedop]);
        assert_eq!(AARCH64.idle, [SYS_epoll_pwait, SYS_epoll_pwait2, SYS_ppoll, SYS_pselect6, SYS_accept, SYS_accept4]);
        let sleeps = [
            SYS_nanosleep,
            SYS_clock_nanosleep,
            SYS_wait4,
            SYS_waitid,
            SYS_rt_sigtimedwait,
            SYS_rt_sigsuspend,
            SYS_recvfrom,
            SYS_recvmsg,
            SYS_recvmmsg,
        ];
        assert_eq!(AARCH64.interruptible, sleeps);
    }

    #[test]
    fn parses_syscall_file() {
        assert_eq!(parse_syscall(b"202 0x5605005c3c90 0x89 0x0\n"), Some(SyscallField::Nr(202)));
        assert_eq!(parse_syscall(b"running\n"), Some(SyscallField::Running));
        assert_eq!(parse_syscall(b"-1 0x7ffd 0x7f12\n"), Some(SyscallField::NotInSyscall));
        assert_eq!(parse_syscall(b"garbage\n"), None);
        assert_eq!(parse_syscall(b"20"), None);
        assert_eq!(parse_syscall(b""), None);
        assert_eq!(classify_syscall(&X86_64, 202), ThreadState::Futex);
        assert_eq!(classify_syscall(&X86_64, 288), ThreadState::Idle);
    }

    #[test]
    fn wchan_stems() {
        assert_eq!(classify_wchan(b"futex_do_wait"), Some(ThreadState::Futex));
        assert_eq!(classify_wchan(b"futex_wait_queue_me"), Some(ThreadState::Futex));
        assert_eq!(classify_wchan(b"do_epoll_wait"), Some(ThreadState::Idle));
        assert_eq!(classify_wchan(b"inet_csk_accept"), Some(ThreadState::Idle));
        assert_eq!(classify_wchan(b"hrtimer_nanosleep"), Some(ThreadState::Other));
        assert_eq!(classify_wchan(b"0"), None);
    }
}
