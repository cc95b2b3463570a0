//! The benchmarks, one module per group (signals and lock contention split
//! out of procs and threads to keep files small; `sync` holds what threads,
//! locks and bandwidth share).

mod bandwidth;
mod ctx;
mod fpu;
mod latency;
mod locks;
mod memlat;
pub(crate) mod procs;
mod signals;
mod sync;
mod threads;

use crate::measure::{Ctx, Out, Stopped};
use crate::model::Group;

/// Runs every benchmark of `group`, emitting results through `out`.
pub(crate) fn run_group(group: Group, ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    match group {
        Group::Procs => procs::run(ctx, out),
        Group::Threads => {
            threads::run(ctx, out)?;
            locks::run(ctx, out)
        }
        Group::Ctx => ctx::run(ctx, out),
        Group::Latency => latency::run(ctx, out),
        Group::Bandwidth => bandwidth::run(ctx, out),
        Group::Memory => memlat::run(ctx, out),
        Group::Fpu => fpu::run(ctx, out),
    }
}
