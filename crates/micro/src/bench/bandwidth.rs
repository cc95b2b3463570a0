//! Bandwidth in MB/s (10^6 bytes, as lmbench): pipe, AF_UNIX and TCP with a
//! forked writer and 64 KB transfers; file and mmap reread of a cached file;
//! memory read, write and copy on a buffer well beyond the last-level cache.

use crate::measure::{secs, Ctx, Out, Skip, Stopped, Values};
use crate::sys::{os_skip, pipe, read_full, unix_pair, write_full, Child, Region, TempFile};
use std::hint::black_box;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

/// lmbench's transfer size for bw_pipe, bw_unix and bw_tcp.
const CHUNK: usize = 64 << 10;

pub(crate) fn run(ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    out.put(ctx, "bw_pipe", bw_pipe(ctx))?;
    out.put(ctx, "bw_unix", bw_unix(ctx))?;
    out.put(ctx, "bw_tcp", bw_tcp(ctx))?;
    let file_len = file_bytes(ctx);
    match TempFile::create("reread", file_len) {
        Ok(f) => {
            out.put(ctx, "bw_file_reread", file_reread(ctx, &f, file_len))?;
            out.put(ctx, "bw_mmap_reread", mmap_reread(ctx, &f, file_len))?;
        }
        Err(e) => {
            let why = format!("temp file of {} MB: {e}", file_len >> 20);
            out.put(ctx, "bw_file_reread", Err(Skip::Unavailable(why.clone())))?;
            out.put(ctx, "bw_mmap_reread", Err(Skip::Unavailable(why)))?;
        }
    }
    let len = mem_bytes(ctx);
    out.put(ctx, "bw_mem_rd", mem_rd(ctx, len))?;
    out.put(ctx, "bw_mem_wr", mem_wr(ctx, len))?;
    out.put(ctx, "bw_mem_cp", mem_cp(ctx, len))
}

/// Memory buffer: four times the last-level cache, between 64 and 512 MiB.
pub(crate) fn mem_bytes(ctx: &Ctx) -> usize {
    (ctx.machine.llc_bytes as usize * 4).clamp(64 << 20, 512 << 20) & !((1 << 20) - 1)
}

/// Reread file: twice the last-level cache, between 32 and 256 MiB, so the
/// page-cache pages do not sit in the CPU cache.
fn file_bytes(ctx: &Ctx) -> usize {
    (ctx.machine.llc_bytes as usize * 2).clamp(32 << 20, 256 << 20) & !((1 << 20) - 1)
}

fn mb_per_s(bytes: usize, v: Vec<f64>) -> Vec<f64> {
    v.into_iter().map(|s| bytes as f64 / 1e6 / s).collect()
}

/// A child writes 64 KB chunks to `wr` until the reader goes away.
fn writer(wr: RawFd, buf: &[u8]) -> i32 {
    while write_full(wr, buf) {}
    0
}

/// Times reading 64 KB chunks from `rd`.
fn read_chunks(ctx: &Ctx, rd: RawFd) -> Values {
    let mut buf = vec![0u8; CHUNK];
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            if !read_full(rd, &mut buf) {
                return Err(Skip::Unavailable("writer lost".into()));
            }
        }
        Ok(secs(t))
    })?;
    Ok(mb_per_s(CHUNK, v))
}

fn bw_pipe(ctx: &Ctx) -> Values {
    let (r, w) = pipe()?;
    let buf = vec![3u8; CHUNK];
    let (rr, wr) = (r.as_raw_fd(), w.as_raw_fd());
    let child = Child::fork(|| {
        // SAFETY: in the forked child, closing its copy of the read end; nothing else in the child
        // uses that descriptor.
        unsafe { libc::close(rr) };
        writer(wr, &buf)
    })?;
    drop(w);
    let v = read_chunks(ctx, rr);
    drop(r);
    drop(child);
    v
}

fn bw_unix(ctx: &Ctx) -> Values {
    let (mine, theirs) = unix_pair()?;
    let buf = vec![3u8; CHUNK];
    let (m, t) = (mine.as_raw_fd(), theirs.as_raw_fd());
    let child = Child::fork(|| {
        // SAFETY: in the forked child, closing its copy of the parent's end; nothing else in the
        // child uses that descriptor.
        unsafe { libc::close(m) };
        writer(t, &buf)
    })?;
    drop(theirs);
    let v = read_chunks(ctx, m);
    drop(mine);
    drop(child);
    v
}

fn bw_tcp(ctx: &Ctx) -> Values {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let l = listener.as_raw_fd();
    let buf = vec![3u8; CHUNK];
    let child = Child::fork(|| {
        // SAFETY: accept4 on the listener's descriptor, which the parent keeps open; null address
        // pointers are allowed.
        let fd = unsafe { libc::accept4(l, std::ptr::null_mut(), std::ptr::null_mut(), 0) };
        if fd < 0 {
            return 1;
        }
        // SAFETY: in the forked child, closing its copy of the listener, unused from here on.
        unsafe { libc::close(l) };
        writer(fd, &buf)
    })?;
    let s = TcpStream::connect(addr)?;
    drop(listener);
    crate::sys::set_recv_timeout(s.as_raw_fd(), 5);
    let v = read_chunks(ctx, s.as_raw_fd());
    drop(s);
    drop(child);
    v
}

/// lmbench's `rd`: one 4-byte load every 16 bytes, summed (touches every
/// cache line; the count is the whole buffer).
fn rd(words: &[u32]) -> u32 {
    let mut sum = 0u32;
    for c in words.chunks_exact(32) {
        let mut s = 0u32;
        for i in (0..32).step_by(4) {
            s = s.wrapping_add(c[i]);
        }
        sum = sum.wrapping_add(s);
    }
    sum
}

/// lmbench's `wr`: one 4-byte store every 16 bytes.
fn wr(words: &mut [u32]) {
    for c in words.chunks_exact_mut(32) {
        for i in (0..32).step_by(4) {
            c[i] = 1;
        }
    }
}

/// lmbench's `cp`: one 4-byte load and store every 16 bytes.
fn cp(src: &[u32], dst: &mut [u32]) {
    for (s, d) in src.chunks_exact(32).zip(dst.chunks_exact_mut(32)) {
        for i in (0..32).step_by(4) {
            d[i] = s[i];
        }
    }
}

/// read() of the whole cached file in 64 KB blocks into one buffer, summing
/// each block, as lmbench's `bw_file_rd io_only`.
fn file_reread(ctx: &Ctx, f: &TempFile, len: usize) -> Values {
    let fd = std::fs::File::open(&f.path)?;
    let mut buf = vec![0u32; CHUNK / 4];
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: lseek on a descriptor `fd` keeps open.
            unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_SET) };
            let mut left = len;
            while left > 0 {
                // SAFETY: `buf` holds CHUNK / 4 u32s, i.e. CHUNK initialized bytes, borrowed
                // mutably for the slice's life.
                let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast(), CHUNK) };
                if !read_full(fd.as_raw_fd(), bytes) {
                    return Err(os_skip("read"));
                }
                black_box(rd(black_box(&buf)));
                left -= CHUNK;
            }
        }
        Ok(secs(t))
    })?;
    Ok(mb_per_s(len, v))
}

/// Sum of the whole file through a shared read-only mapping (mapped once;
/// the first pass faults it in), as lmbench's `bw_mmap_rd mmap_only`.
fn mmap_reread(ctx: &Ctx, f: &TempFile, len: usize) -> Values {
    let fd = std::fs::File::open(&f.path)?;
    // SAFETY: a new read-only shared mapping of an open file; the result is checked below.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
    if p == libc::MAP_FAILED {
        return Err(os_skip("mmap"));
    }
    // SAFETY: unmaps the mapping made above, once, after its last use (`words` is dropped first).
    let _unmap = super::sync::OnDrop(|| unsafe {
        libc::munmap(p, len);
    });
    // SAFETY: `p` maps `len` readable bytes, page-aligned, until `_unmap` runs at the end of this
    // function.
    let words = unsafe { std::slice::from_raw_parts(p.cast::<u32>(), len / 4) };
    black_box(rd(words));
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            black_box(rd(black_box(words)));
        }
        Ok(secs(t))
    })?;
    Ok(mb_per_s(len, v))
}

fn mem_rd(ctx: &Ctx, len: usize) -> Values {
    let buf = Region::new(len, true)?;
    let words: &[u32] = buf.as_slice();
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            black_box(rd(black_box(words)));
        }
        Ok(secs(t))
    })?;
    Ok(mb_per_s(len, v))
}

fn mem_wr(ctx: &Ctx, len: usize) -> Values {
    let mut buf = Region::new(len, true)?;
    let words: &mut [u32] = buf.as_mut_slice();
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            wr(black_box(&mut *words));
        }
        black_box(&words[0]);
        Ok(secs(t))
    })?;
    Ok(mb_per_s(len, v))
}

fn mem_cp(ctx: &Ctx, len: usize) -> Values {
    let src = Region::new(len, true)?;
    let mut dst = Region::new(len, true)?;
    let s: &[u32] = src.as_slice();
    let d: &mut [u32] = dst.as_mut_slice();
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            cp(black_box(s), black_box(&mut *d));
        }
        black_box(&d[0]);
        Ok(secs(t))
    })?;
    Ok(mb_per_s(len, v))
}
