//! Context switching as lmbench's `lat_ctx`: N processes in a ring of pipes
//! pass a 4-byte token; each, on receiving it, sums its own K KB of data
//! (so the switch also pays for refilling caches), then passes it on. The
//! time per hop minus the overhead of one pipe write+read and one sum in a
//! single process is the context switch.
//!
//! The whole ring runs pinned to one CPU, so every hop is a real switch from
//! one process to the next. lmbench 3 leaves placement to the scheduler; on
//! a multi-CPU machine the scheduler spreads a small ring over idle CPUs, a
//! hop becomes a cross-CPU wake-up instead of a switch, and the figure can
//! fall below the subtracted overhead (lmbench then prints nothing). Compare
//! with `taskset -c 0 lat_ctx`.

use crate::measure::{secs, Ctx, Out, Skip, Stopped, Values};
use crate::sys::{pipe, read_full, write_full, Child, PinGuard};
use std::hint::black_box;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

const PROCS: [usize; 4] = [2, 4, 8, 16];
const SIZES_KB: [usize; 3] = [0, 16, 64];

pub(crate) fn run(ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    // Children forked while pinned inherit the pin; the guard restores our
    // affinity when the group is done. If pinning is refused, run free.
    let _pin = PinGuard::pin_first_cpu().ok();
    for kb in SIZES_KB {
        let overhead = overhead(ctx, kb);
        // The least-disturbed overhead measurement: on a quiet machine it is
        // the median within noise; on a busy one it keeps load on the CPU
        // from making the difference meaningless.
        let over_min = overhead.as_ref().ok().and_then(|v| v.iter().copied().reduce(f64::min));
        for procs in PROCS {
            let id = format!("ctx_{procs}p_{kb}k");
            let v = match (&overhead, over_min) {
                (Err(Skip::Stopped), _) => return Err(Stopped),
                (Err(Skip::Unavailable(w)), _) => Err(Skip::Unavailable(format!("overhead: {w}"))),
                (Ok(_), Some(o)) => ring(ctx, procs, kb).map(|v| v.into_iter().map(|hop| (hop - o) * 1e6).collect()),
                (Ok(_), None) => Err(Skip::Unavailable("no overhead figure".into())),
            };
            out.put(ctx, &id, v)?;
        }
    }
    Ok(())
}

/// Reads every word of the process's data, as lmbench's `sumit`.
fn sumit(data: &[u32]) -> u32 {
    data.iter().fold(0u32, |a, &x| a.wrapping_add(x))
}

/// Seconds per hop of a token through a pipe written and read by one
/// process, plus one sum of `kb` KB: the part of a hop that is not a switch.
fn overhead(ctx: &Ctx, kb: usize) -> Values {
    let (r, w) = pipe()?;
    let data = vec![1u32; kb * 256];
    let mut token = [0u8; 4];
    ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            if !write_full(w.as_raw_fd(), &token) || !read_full(r.as_raw_fd(), &mut token) {
                return Err(Skip::Unavailable("pipe to self failed".into()));
            }
            black_box(sumit(black_box(&data)));
        }
        Ok(secs(t))
    })
}

/// Body of ring member `i`: touch its data (so it owns private pages), then
/// forever read the token, sum, write it on. Only async-signal-safe calls.
fn member(rd: RawFd, wr: RawFd, keep: &[RawFd], all: &[RawFd], data: &mut [u32]) -> i32 {
    for &fd in all {
        if !keep.contains(&fd) {
            // SAFETY: closing, in this forked ring member, a descriptor it does not use; no Rust
            // object owns it here.
            unsafe { libc::close(fd) };
        }
    }
    for x in data.iter_mut() {
        // SAFETY: `x` is a valid, aligned, exclusive reference into `data`.
        unsafe { std::ptr::write_volatile(x, 1) };
    }
    let mut token = [0u8; 4];
    loop {
        if !read_full(rd, &mut token) {
            return 0;
        }
        black_box(sumit(black_box(data)));
        if !write_full(wr, &token) {
            return 0;
        }
    }
}

/// Seconds per hop around a ring of `procs` processes (this one included).
fn ring(ctx: &Ctx, procs: usize, kb: usize) -> Values {
    let mut pipes: Vec<(OwnedFd, OwnedFd)> = Vec::with_capacity(procs);
    for _ in 0..procs {
        pipes.push(pipe()?);
    }
    let all: Vec<RawFd> = pipes.iter().flat_map(|(r, w)| [r.as_raw_fd(), w.as_raw_fd()]).collect();
    let mut bufs: Vec<Vec<u32>> = (0..procs).map(|_| vec![1u32; kb * 256]).collect();
    let mut children = Vec::with_capacity(procs - 1);
    // Member i reads pipe i-1 and writes pipe i; this process is member 0.
    for i in 1..procs {
        let rd = pipes[i - 1].0.as_raw_fd();
        let wr = pipes[i].1.as_raw_fd();
        let (all, data) = (&all, &mut bufs[i]);
        children.push(Child::fork(|| member(rd, wr, &[rd, wr], all, data))?);
    }
    let first_w = pipes[0].1.as_raw_fd();
    let last_r = pipes[procs - 1].0.as_raw_fd();
    // Keep only our two ends, so a dead member means EOF here, not a hang.
    let mut mine = Vec::new();
    for (i, (r, w)) in pipes.into_iter().enumerate() {
        if i == procs - 1 {
            mine.push(r);
        }
        if i == 0 {
            mine.push(w);
        }
    }
    let data = &bufs[0];
    let mut token = [0u8; 4];
    let hop = |n: u64, token: &mut [u8; 4]| {
        let t = Instant::now();
        for _ in 0..n {
            if !write_full(first_w, token) || !read_full(last_r, token) {
                return Err(Skip::Unavailable("a ring member exited".into()));
            }
            black_box(sumit(black_box(data)));
        }
        Ok(secs(t) / procs as f64)
    };
    // Once around so every member is up and the token is in flight.
    hop(1, &mut token)?;
    let v = ctx.per_iter(|n| hop(n, &mut token));
    drop(mine);
    drop(children);
    v
}
