//! Local communication latency, as lmbench's lat_pipe, lat_unix, lat_udp,
//! lat_tcp and lat_connect: a forked child echoes 1-byte messages and we time
//! the round trip (connect+close for TCP connect). Each runs twice: with both
//! ends free to run on any CPU (as lmbench does) and with both pinned to one
//! CPU (`_same_cpu`). On virtual machines the free variant pays for waking
//! an idle vCPU on every message, which is why it can be much slower.

use crate::measure::{scale, secs, Ctx, Out, Skip, Stopped, Values};
use crate::sys::{pipe, read_full, set_recv_timeout, unix_pair, write_full, Child, PinGuard};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

/// One latency test.
type Bench = fn(&Ctx) -> Values;

pub(crate) fn run(ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    for same_cpu in [false, true] {
        let suffix = if same_cpu { "_same_cpu" } else { "" };
        let tests: [(&str, Bench); 5] = [
            ("pipe_latency", pipe_rt),
            ("unix_latency", unix_rt),
            ("udp_latency", udp_rt),
            ("tcp_latency", tcp_rt),
            ("tcp_connect", tcp_connect),
        ];
        for (id, f) in tests {
            let v = if same_cpu {
                match PinGuard::pin_first_cpu() {
                    // The guard lives until `f` returns: children forked
                    // inside inherit the pin, we get our affinity back.
                    Ok((_pin, _cpu)) => f(ctx),
                    Err(e) => Err(Skip::Unavailable(format!("sched_setaffinity: {e}"))),
                }
            } else {
                f(ctx)
            };
            out.put(ctx, &format!("{id}{suffix}"), v)?;
        }
    }
    Ok(())
}

/// The echo loop run in the child: read one byte from `rd`, write it to `wr`,
/// until EOF or error. Async-signal-safe.
fn echo(rd: RawFd, wr: RawFd) -> i32 {
    let mut b = [0u8; 1];
    while read_full(rd, &mut b) && write_full(wr, &b) {}
    0
}

/// Times round trips of one byte: write to `wr`, read the echo from `rd`.
fn round_trips(ctx: &Ctx, wr: RawFd, rd: RawFd) -> Values {
    let mut b = [7u8; 1];
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            if !write_full(wr, &b) || !read_full(rd, &mut b) {
                return Err(Skip::Unavailable(format!("echo peer lost: {}", std::io::Error::last_os_error())));
            }
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}

fn pipe_rt(ctx: &Ctx) -> Values {
    let (to_child_r, to_child_w) = pipe()?;
    let (to_parent_r, to_parent_w) = pipe()?;
    let (cr, cw) = (to_child_r.as_raw_fd(), to_parent_w.as_raw_fd());
    let (pw, pr) = (to_child_w.as_raw_fd(), to_parent_r.as_raw_fd());
    let child = Child::fork(|| {
        // SAFETY: in the forked child, closing its copies of the parent's ends; nothing else in the
        // child uses them.
        unsafe {
            libc::close(pw);
            libc::close(pr);
        }
        echo(cr, cw)
    })?;
    drop((to_child_r, to_parent_w));
    let v = round_trips(ctx, pw, pr);
    drop((to_child_w, to_parent_r));
    drop(child);
    v
}

fn unix_rt(ctx: &Ctx) -> Values {
    let (mine, theirs) = unix_pair()?;
    let (m, t) = (mine.as_raw_fd(), theirs.as_raw_fd());
    set_recv_timeout(m, 5);
    let child = Child::fork(|| {
        // SAFETY: in the forked child, closing its copy of the parent's end; nothing else in the
        // child uses it.
        unsafe { libc::close(m) };
        echo(t, t)
    })?;
    drop(theirs);
    let v = round_trips(ctx, m, m);
    drop(mine);
    drop(child);
    v
}

fn udp_rt(ctx: &Ctx) -> Values {
    let a = UdpSocket::bind("127.0.0.1:0")?;
    let b = UdpSocket::bind("127.0.0.1:0")?;
    a.connect(b.local_addr()?)?;
    b.connect(a.local_addr()?)?;
    let (m, t) = (a.as_raw_fd(), b.as_raw_fd());
    // A lost datagram would otherwise block us forever.
    set_recv_timeout(m, 5);
    let child = Child::fork(|| {
        // SAFETY: in the forked child, closing its copy of the parent's end; nothing else in the
        // child uses it.
        unsafe { libc::close(m) };
        echo(t, t)
    })?;
    drop(b);
    let v = round_trips(ctx, m, m);
    drop(child);
    v
}

fn tcp_rt(ctx: &Ctx) -> Values {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let l = listener.as_raw_fd();
    // SAFETY: in the forked child: accept4 on the listener the parent keeps open (null address
    // pointers are allowed), and descriptors the child owns.
    let child = Child::fork(|| unsafe {
        let fd = libc::accept4(l, std::ptr::null_mut(), std::ptr::null_mut(), 0);
        if fd < 0 {
            return 1;
        }
        libc::close(l);
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        echo(fd, fd)
    })?;
    let stream = TcpStream::connect(addr)?;
    drop(listener);
    stream.set_nodelay(true)?;
    set_recv_timeout(stream.as_raw_fd(), 5);
    let v = round_trips(ctx, stream.as_raw_fd(), stream.as_raw_fd());
    drop(stream);
    drop(child);
    v
}

/// connect() to a loopback listener whose child accepts and closes, then
/// close(): lmbench's lat_connect.
fn tcp_connect(ctx: &Ctx) -> Values {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let l = listener.as_raw_fd();
    // A deep accept queue: pinned to one CPU, we connect for a whole time
    // slice before the child runs to accept; with std's default backlog the
    // queue overflows and the kernel drops SYNs (1 s retransmit).
    // SAFETY: listen on the descriptor `listener` keeps open.
    unsafe { libc::listen(l, 4096) };
    let child = Child::fork(|| loop {
        // SAFETY: accept4 on the listener the parent keeps open; null address pointers are allowed.
        let fd = unsafe { libc::accept4(l, std::ptr::null_mut(), std::ptr::null_mut(), 0) };
        if fd < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return 1;
        }
        // SAFETY: closing the connection this child just accepted and owns.
        unsafe { libc::close(fd) };
    })?;
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            drop(TcpStream::connect(addr)?);
        }
        Ok(secs(t))
    });
    drop(child);
    drop(listener);
    Ok(scale(v?, 1e6))
}
