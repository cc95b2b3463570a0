//! Memory load latency by a dependent pointer chase, as lmbench 3's
//! `lat_mem_rd`: every 64-byte line of a buffer holds the address of the
//! next, in one random cycle (so prefetchers cannot guess), and each load
//! must wait for the previous one. Buffers are 2 MiB-aligned and ask for
//! transparent huge pages, so the figure is the cache or DRAM, not TLB misses.

use super::bandwidth::mem_bytes;
use crate::catalog::{curve_id, size_label};
use crate::measure::{secs, Ctx, Out, Skip, Stopped, Values};
use crate::model::{Group, Unit};
use crate::sys::Region;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

const LINE: u64 = 64;

/// The buffer sizes of the four named figures: half of L1d, half of L2, the
/// geometric middle between L2 and the last-level cache, and the main-memory
/// buffer of the bandwidth tests (≥ 4 × LLC).
pub(crate) fn named_sizes(ctx: &Ctx) -> [(&'static str, u64); 4] {
    let m = ctx.machine;
    let round = |b: u64, to: u64| (b / to).max(1) * to;
    let l1 = round(m.l1d_bytes / 2, 1 << 10);
    let l2 = round(m.l2_bytes / 2, 1 << 10);
    let mid = ((m.l2_bytes as f64) * (m.llc_bytes as f64)).sqrt() as u64;
    let llc = round(mid.clamp(2 * m.l2_bytes, (m.llc_bytes / 2).max(2 * m.l2_bytes)), 1 << 16);
    [("mem_lat_l1", l1), ("mem_lat_l2", l2), ("mem_lat_llc", llc), ("mem_lat_main", mem_bytes(ctx) as u64)]
}

/// The size/latency curve: powers of two from 4 KiB to the main buffer.
fn curve_sizes(ctx: &Ctx) -> Vec<u64> {
    let main = mem_bytes(ctx) as u64;
    let mut v: Vec<u64> = (12..40).map(|s| 1u64 << s).take_while(|&b| b < main).collect();
    v.push(main);
    v
}

pub(crate) fn run(ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    let mut memo: BTreeMap<u64, Values> = BTreeMap::new();
    let mut measure = |bytes: u64| -> Values {
        match memo.get(&bytes) {
            Some(Ok(v)) => Ok(v.clone()),
            Some(Err(Skip::Unavailable(w))) => Err(Skip::Unavailable(w.clone())),
            _ => {
                let v = chase(ctx, bytes);
                let copy = match &v {
                    Ok(x) => Ok(x.clone()),
                    Err(Skip::Unavailable(w)) => Err(Skip::Unavailable(w.clone())),
                    Err(Skip::Stopped) => Err(Skip::Stopped),
                };
                memo.insert(bytes, copy);
                v
            }
        }
    };
    for (id, bytes) in named_sizes(ctx) {
        out.put(ctx, id, measure(bytes))?;
    }
    // The whole curve only in full mode: it is the slow part of --quick.
    if !ctx.quick {
        for bytes in curve_sizes(ctx) {
            let name = format!("memory latency, {} buffer", size_label(bytes));
            out.put_named(ctx, &curve_id(bytes), Group::Memory, &name, Unit::Ns, measure(bytes))?;
        }
    }
    Ok(())
}

/// Nanoseconds per dependent load over a buffer of `bytes`.
fn chase(ctx: &Ctx, bytes: u64) -> Values {
    ctx.check()?;
    let lines = (bytes / LINE).max(2);
    let mut region = Region::new((lines * LINE) as usize, true)?;
    let base = region.as_slice::<u8>().as_ptr() as usize;
    // Sattolo's algorithm: a uniformly random permutation that is one
    // single cycle, so the chase visits every line before repeating.
    let mut next: Vec<u32> = (0..lines as u32).collect();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ bytes;
    for i in (1..lines as usize).rev() {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let j = (x.wrapping_mul(0x2545_f491_4f6c_dd1d) % i as u64) as usize;
        next.swap(i, j);
    }
    // Written in address order (sequential stores), not chase order.
    let words: &mut [usize] = region.as_mut_slice();
    let per_line = (LINE / 8) as usize;
    for (i, &n) in next.iter().enumerate() {
        words[i * per_line] = base + n as usize * LINE as usize;
    }
    drop(next);
    let mut p = base;
    // Warm-up: bring the buffer into whatever cache level holds it.
    for _ in 0..lines.min(1 << 22) {
        // SAFETY: `p` starts at `base` and every word read holds the address of another line of the
        // same live buffer (the chain built above), aligned for usize.
        p = unsafe { *(p as *const usize) };
    }
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            for _ in 0..16 {
                // SAFETY: every line holds the address of a line of the region.
                p = unsafe { *(p as *const usize) };
            }
        }
        black_box(p);
        Ok(secs(t))
    })?;
    Ok(v.into_iter().map(|s| s * 1e9 / 16.0).collect())
}
