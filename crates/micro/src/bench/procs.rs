//! lmbench's "Processor, Processes" table: null call, null I/O, stat,
//! open+close, select, process creation. Signals live in `signals.rs`.

use crate::helper::{Forker, Helper};
use crate::measure::{scale, secs, Ctx, Out, Skip, Stopped, Values};
use crate::sys::{os_skip, Child, TempFile};
use std::ffi::CString;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

/// Runs the group, emitting each figure as it completes.
pub(crate) fn run(ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    out.put(ctx, "null_call", null_call(ctx))?;
    out.put(ctx, "null_io", null_io(ctx))?;
    let file = TempFile::create("stat", 4096);
    let (stat_v, open_v, sel_v) = match &file {
        Ok(f) => (stat(ctx, f), open_close(ctx, f), select_file(ctx, f)),
        Err(e) => {
            let why = || Err(Skip::Unavailable(format!("temp file: {e}")));
            (why(), why(), why())
        }
    };
    out.put(ctx, "stat", stat_v)?;
    out.put(ctx, "open_close", open_v)?;
    out.put(ctx, "select_file_100", sel_v)?;
    out.put(ctx, "select_tcp_100", select_tcp(ctx))?;
    super::signals::run(ctx, out)?;
    let (v, at) = fork_exit(ctx);
    out.put_forked(ctx, "fork_exit", v, at)?;
    let (v, at) = fork_exec(ctx, "/bin/true", &["true"]);
    out.put_forked(ctx, "fork_exec", v, at)?;
    let (v, at) = fork_exec(ctx, "/bin/sh", &["sh", "-c", "/bin/true"]);
    out.put_forked(ctx, "fork_sh", v, at)?;
    Ok(())
}

/// getppid through the raw syscall: glibc and the vDSO cannot answer it
/// without entering the kernel, which is what "null call" means.
fn null_call(ctx: &Ctx) -> Values {
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: getppid takes no arguments and cannot fail.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}

fn open_raw(path: &str, flags: i32) -> Result<OwnedFd, Skip> {
    let c = CString::new(path).expect("static path");
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(os_skip(&format!("open {path}")));
    }
    // SAFETY: `fd` was just opened (>= 0) and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Mean of a 1-byte read from /dev/zero and a 1-byte write to /dev/null,
/// as lmbench's summary averages `lat_syscall read` and `write`.
fn null_io(ctx: &Ctx) -> Values {
    let zero = open_raw("/dev/zero", libc::O_RDONLY)?;
    let null = open_raw("/dev/null", libc::O_WRONLY)?;
    let mut byte = [0u8; 1];
    let rd = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: reads one byte into `byte`, a live local of one byte, from a descriptor
            // `zero` keeps open.
            if unsafe { libc::read(zero.as_raw_fd(), byte.as_mut_ptr().cast(), 1) } != 1 {
                return Err(os_skip("read /dev/zero"));
            }
        }
        Ok(secs(t))
    })?;
    let wr = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: writes one byte from `byte`, a live local, to a descriptor `null` keeps open.
            if unsafe { libc::write(null.as_raw_fd(), byte.as_ptr().cast(), 1) } != 1 {
                return Err(os_skip("write /dev/null"));
            }
        }
        Ok(secs(t))
    })?;
    Ok(rd.iter().zip(&wr).map(|(r, w)| (r + w) / 2.0 * 1e6).collect())
}

fn stat(ctx: &Ctx, f: &TempFile) -> Values {
    // SAFETY: libc::stat is plain old data; all zeroes is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: a NUL-terminated path `f` keeps alive, and a stat struct we own for the
            // kernel to fill.
            if unsafe { libc::stat(f.c_path.as_ptr(), &mut st) } != 0 {
                return Err(os_skip("stat"));
            }
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}

fn open_close(ctx: &Ctx, f: &TempFile) -> Values {
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: a NUL-terminated path `f` keeps alive.
            let fd = unsafe { libc::open(f.c_path.as_ptr(), libc::O_RDONLY) };
            if fd < 0 {
                return Err(os_skip("open"));
            }
            // SAFETY: closing the descriptor just opened, owned by nothing else.
            unsafe { libc::close(fd) };
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}

/// select() with a zero timeout for writability on 100 descriptors, all
/// ready, as lmbench 3's `lat_select -n 100`.
fn select_on(ctx: &Ctx, fds: &[RawFd]) -> Values {
    if let Some(&big) = fds.iter().find(|&&fd| fd >= libc::FD_SETSIZE as RawFd) {
        return Err(Skip::Unavailable(format!("descriptor {big} is beyond select()'s FD_SETSIZE")));
    }
    let maxfd = fds.iter().copied().max().unwrap_or(0);
    // SAFETY: fd_set is plain old data; all zeroes is a valid value.
    let mut set: libc::fd_set = unsafe { std::mem::zeroed() };
    // SAFETY: FD_ZERO on a live local fd_set.
    unsafe { libc::FD_ZERO(&mut set) };
    for &fd in fds {
        // SAFETY: `fd` is below FD_SETSIZE (checked above); `set` is a live local.
        unsafe { libc::FD_SET(fd, &mut set) };
    }
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            let mut w = set;
            let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
            // SAFETY: `w` and `tv` are live locals; every descriptor in `w` is below maxfd + 1 and
            // open.
            let r = unsafe { libc::select(maxfd + 1, std::ptr::null_mut(), &mut w, std::ptr::null_mut(), &mut tv) };
            if r < 0 {
                return Err(os_skip("select"));
            }
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}

fn select_file(ctx: &Ctx, f: &TempFile) -> Values {
    let mut fds = Vec::with_capacity(100);
    for _ in 0..100 {
        // SAFETY: a NUL-terminated path `f` keeps alive.
        let fd = unsafe { libc::open(f.c_path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(os_skip("open for select"));
        }
        // SAFETY: `fd` was just opened (>= 0) and nothing else owns it.
        fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    select_on(ctx, &raw)
}

/// 100 connected loopback TCP sockets (the kernel completes the handshakes
/// into our listener's backlog; we accept them so both ends stay open).
fn select_tcp(ctx: &Ctx) -> Values {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let mut clients = Vec::with_capacity(100);
    let mut servers = Vec::with_capacity(100);
    for _ in 0..100 {
        clients.push(TcpStream::connect(addr)?);
        servers.push(listener.accept()?.0);
    }
    let raw: Vec<RawFd> = clients.iter().map(|s| s.as_raw_fd()).collect();
    select_on(ctx, &raw)
}

/// Samples from the helper in `mode`, or `None` (with why) when there is none.
fn from_helper(ctx: &Ctx, mode: &[&str]) -> Result<Values, String> {
    let mut h = Helper::start(mode)?;
    Ok(ctx.per_iter(|n| h.measure(n).map_err(Skip::Unavailable)).map(|v| scale(v, 1e6)))
}

/// fork, child `_exit`s at once, parent waits: from the helper process
/// (as lmbench's `lat_proc fork` forks itself, a small program).
pub(crate) fn fork_exit(ctx: &Ctx) -> (Values, Forker) {
    match from_helper(ctx, &["exit"]) {
        Ok(v) => (v, Forker::Helper),
        Err(why) => (fork_exit_here(ctx), Forker::InProcess(why)),
    }
}

fn fork_exit_here(ctx: &Ctx) -> Values {
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            Child::fork(|| 0)?.wait()?;
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}

/// fork, child `execv`s `path` with `args`, parent waits; from the helper
/// process. lmbench execs a tiny "hello" program; /bin/true is the closest
/// thing every system has.
pub(crate) fn fork_exec(ctx: &Ctx, path: &str, args: &[&str]) -> (Values, Forker) {
    if !std::path::Path::new(path).exists() {
        return (Err(Skip::Unavailable(format!("{path} missing"))), Forker::Helper);
    }
    let mode: Vec<&str> = ["exec", path].into_iter().chain(args.iter().copied()).collect();
    match from_helper(ctx, &mode) {
        Ok(v) => (v, Forker::Helper),
        Err(why) => (fork_exec_here(ctx, path, args), Forker::InProcess(why)),
    }
}

fn fork_exec_here(ctx: &Ctx, path: &str, args: &[&str]) -> Values {
    let c_path = CString::new(path).expect("static path");
    let c_args: Vec<CString> = args.iter().map(|a| CString::new(*a).expect("static arg")).collect();
    let mut argv: Vec<*const libc::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: in the forked child: `c_path` and `argv` (NUL-terminated strings, a null last
            // pointer) live until execv replaces the process.
            let child = Child::fork(|| unsafe {
                libc::execv(c_path.as_ptr(), argv.as_ptr());
                127
            })?;
            let code = child.wait()?;
            if code != 0 {
                return Err(Skip::Unavailable(format!("{} exited with status {code}", args.join(" "))));
            }
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}
