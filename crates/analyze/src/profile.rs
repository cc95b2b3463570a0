//! A step's stacks read: the hottest frames, the hottest functions of the
//! server's own code, the lock call sites off-CPU time waits in (the first
//! frame outside the lock implementation), and what grew between two steps.
//! Pure: folded stacks in ([`StackProfile`]), figures out.

use scalelab_core::sample::{ProfileSample, StackProfile};
use scalelab_core::Run;
use serde::Serialize;
use std::collections::BTreeMap;

/// A frame (or function, or stack) with its value and share.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrameShare {
    pub frame: String,
    /// Samples (on-CPU) or ns (off-CPU).
    pub value: u64,
    /// Of all the profile's value, 0..1.
    pub share: f64,
}

/// Frames of the synchronization implementation: a wait's call site is the
/// first frame (from the leaf) that is none of these.
const LOCK_IMPL: &[&str] = &[
    "futex",
    "pthread_mutex",
    "lll_",
    "pthread_rwlock",
    "pthread_cond",
    "pthread_spin",
    "sem_wait",
    "std::sys::sync::",
    "std::sync::",
    "std::sys::pal::unix::futex",
    "std::thread::park",
    "parking_lot",
    "lock_contended",
    "Mutex<T>::lock",
    "MutexGuard",
    "RwLock",
    "Condvar",
    "__GI_",
    // PostgreSQL: LWLocks sleep on a semaphore (`_bt_relandgetbuf;
    // LWLockAcquire;PGSemaphoreLock;sem_wait`), heavyweight locks (rows,
    // transactions, relations) on the process latch (`heap_update;
    // XactLockTableWait;LockAcquireExtended;ProcSleep;WaitLatch;epoll_wait`).
    "LWLockAcquire",
    "LWLockWaitForVar",
    "PGSemaphoreLock",
    "XactLockTableWait",
    "LockTuple",
    "LockRelationOid",
    "LockAcquire",
    "ProcSleep",
    "WaitLatch",
    "WaitEventSetWait",
    "epoll_wait",
];

/// Frames that make a sleep a lock wait whatever the system call under
/// them (a futex is not the only way to wait for a lock): PostgreSQL's
/// heavyweight-lock sleep waits on its latch (epoll).
const LOCK_SLEEP: &[&str] = &["ProcSleep"];

/// A frame perf could not name (`module+0xoffset`): a static function of a
/// stripped binary, which may still be part of the lock implementation.
fn is_unresolved(frame: &str) -> bool {
    frame.rsplit_once("+0x").is_some_and(|(_, off)| !off.is_empty() && off.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Frames that wait for work rather than for a lock.
const IDLE_WAIT: &[&str] = &["pthread_cond", "Condvar", "std::thread::park", "park_timeout", "mpsc", "epoll_wait", "poll"];

fn is_kernel(frame: &str) -> bool {
    frame.ends_with("_[k]")
}

fn is_state(frame: &str) -> bool {
    frame.starts_with('[') && frame.ends_with(']') && frame.len() <= 4
}

/// Library frames (the language runtime) skipped to reach the server's own code.
fn is_library(frame: &str) -> bool {
    // `<T as Trait>::f`: the runtime's when the type is a primitive or the runtime's.
    if let Some((ty, _)) = frame.strip_prefix('<').and_then(|f| f.split_once(" as ")) {
        const PRIMITIVES: &[&str] =
            &["i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32", "f64", "bool", "char", "str"];
        if PRIMITIVES.contains(&ty.trim_start_matches('&')) {
            return true;
        }
    }
    let f = frame.trim_start_matches('<');
    const PREFIXES: &[&str] = &[
        "core::",
        "std::",
        "alloc::",
        "__",
        "libc.so",
        "libpthread",
        "clock_gettime",
        "memcpy",
        "memset",
        "pthread_",
        "lll_",
        "futex_",
        "start_thread",
        "clone",
    ];
    const NAMES: &[&str] =
        &["syscall", "accept", "accept4", "epoll_wait", "poll", "read", "write", "send", "recv", "sendto", "recvfrom", "nanosleep"];
    PREFIXES.iter().any(|p| f.starts_with(p)) || NAMES.contains(&f)
}

/// The frames of a folded stack, root first.
fn frames(stack: &str) -> Vec<&str> {
    stack.split(';').filter(|f| !f.is_empty()).collect()
}

fn shares(map: BTreeMap<String, u64>, total: u64, top: usize) -> Vec<FrameShare> {
    let mut v: Vec<FrameShare> = map
        .into_iter()
        .map(|(frame, value)| FrameShare { share: if total > 0 { value as f64 / total as f64 } else { 0.0 }, frame, value })
        .collect();
    v.sort_by(|a, b| b.value.cmp(&a.value).then_with(|| a.frame.cmp(&b.frame)));
    v.truncate(top);
    v
}

/// The profile of a run's step with `concurrency` clients: the last
/// profiled one when the sweep repeats the level (`--profile-steps`).
/// Shared by the verdicts and `scalelab profile --step`.
pub fn profile_at(run: &Run, concurrency: u32) -> Option<&ProfileSample> {
    run.samples.profile.iter().rev().find(|p| run.steps.get(p.step).is_some_and(|s| s.concurrency == concurrency))
}

/// The leaf frames (self time), user and kernel, hottest first.
pub fn top_self(p: &StackProfile, top: usize) -> Vec<FrameShare> {
    let mut map = BTreeMap::new();
    for s in &p.stacks {
        let f = frames(&s.stack);
        let leaf = f.iter().rev().find(|f| !is_state(f)).copied().unwrap_or("[no stack]");
        *map.entry(leaf.to_string()).or_default() += s.value;
    }
    shares(map, p.total(), top)
}

/// Inclusive: each function with the value of every stack it is on.
pub fn top_inclusive(p: &StackProfile, top: usize) -> Vec<FrameShare> {
    let mut map: BTreeMap<String, u64> = BTreeMap::new();
    for s in &p.stacks {
        let mut f = frames(&s.stack);
        f.sort_unstable();
        f.dedup();
        for frame in f.into_iter().filter(|f| !is_state(f)) {
            *map.entry(frame.to_string()).or_default() += s.value;
        }
    }
    shares(map, p.total(), top)
}

/// The server's own functions: each stack's first frame from the leaf that
/// is neither kernel nor language runtime (`core::`, `std::`, libc).
pub fn top_own(p: &StackProfile, top: usize) -> Vec<FrameShare> {
    let mut map = BTreeMap::new();
    for s in &p.stacks {
        let f = frames(&s.stack);
        let own = f.iter().rev().find(|f| !is_state(f) && !is_kernel(f) && !is_library(f)).copied().unwrap_or("[runtime or kernel only]");
        *map.entry(own.to_string()).or_default() += s.value;
    }
    shares(map, p.total(), top)
}

/// Frames that mark a busy wait: a spin hint, or giving the CPU up to retry.
const SPIN: &[&str] =
    &["spin_loop", "cpu_relax", "ut_delay", "sched_yield", "yield_now", "__x64_sys_sched_yield", "pthread_spin", "s_lock", "spin_delay"];

/// An atomic load or compare-exchange (an unoptimized build's spin loop
/// polls through these); only a stack's leaf is judged by it. Not every
/// `core::hint`: `black_box` in a work loop is work.
fn is_polling(frame: &str) -> bool {
    let f = frame.trim_start_matches('<');
    f.starts_with("core::sync::atomic") && (f.contains("load") || f.contains("compare_exchange"))
}

/// Busy-waiting functions: for stacks that spin (a spin hint or a yield
/// under them), the first own frame above the spin, by samples; plus that
/// function's self samples (it is the leaf), because an optimized build
/// inlines the spin hint (`pause`) into the loop and leaves no frame for
/// it: the specimen's spin-then-yield lock showed 4 % of the samples
/// under its `sched_yield` and 41 % in its own loop (release build, 4
/// clients). A spin loop that never yields and is inlined into its caller
/// leaves no trace at all: then [`top_own`] names it.
pub fn spin_sites(on: &StackProfile, top: usize) -> Vec<FrameShare> {
    let spins = |f: &&str| SPIN.iter().any(|p| f.contains(p));
    let mut map: BTreeMap<String, u64> = BTreeMap::new();
    let mut leaves: BTreeMap<&str, u64> = BTreeMap::new();
    for s in &on.stacks {
        let f = frames(&s.stack);
        if let Some(leaf) = f.last() {
            *leaves.entry(*leaf).or_default() += s.value;
        }
        let polls = f.last().is_some_and(|leaf| is_polling(leaf));
        let Some(at) = (if polls { Some(f.len() - 1) } else { f.iter().rposition(spins) }) else { continue };
        if let Some(own) = f[..at].iter().rev().find(|f| !is_kernel(f) && !is_library(f) && !is_state(f) && !spins(f)) {
            *map.entry(own.to_string()).or_default() += s.value;
        }
    }
    for (function, v) in map.iter_mut() {
        *v += leaves.get(function.as_str()).copied().unwrap_or(0);
    }
    shares(map, on.total(), top)
}

/// Whole stacks, highest first.
pub fn top_stacks(p: &StackProfile, top: usize) -> Vec<FrameShare> {
    shares(p.stacks.iter().map(|s| (s.stack.clone(), s.value)).collect(), p.total(), top)
}

/// Where threads waited on a lock: the call site and the lock function it called.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LockSite {
    /// The first frame outside the lock implementation (`update_counter`).
    pub site: String,
    /// The lock function it called (`pthread_mutex_lock`), the outermost of the implementation.
    pub via: String,
    /// Time asleep there, ns, and times.
    pub wait_ns: u64,
    pub waits: u64,
    /// Of the server's thread time over the capture, 0..1.
    pub thread_share: f64,
    /// Of all off-CPU time, 0..1.
    pub off_cpu_share: f64,
    /// Waits per second.
    pub waits_per_s: f64,
}

/// The lock waits of an off-CPU profile by call site, longest first:
/// stacks asleep in a futex that are not waits for work (condition
/// variables, parking, channels), and sleeps under a database's lock
/// manager ([`LOCK_SLEEP`]).
pub fn lock_sites(off: &StackProfile, top: usize) -> Vec<LockSite> {
    let is_impl = |frame: &str| {
        LOCK_IMPL.iter().any(|p| frame.contains(p)) || frame == "syscall" || frame.starts_with("libc.so") || frame.starts_with("libpthread")
    };
    let mut map: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for s in &off.stacks {
        let f = frames(&s.stack);
        let user: Vec<&str> = f.iter().copied().filter(|f| !is_kernel(f) && !is_state(f)).collect();
        let lock_sleep = user.iter().any(|f| LOCK_SLEEP.iter().any(|p| f.contains(p)));
        let futex = f.iter().any(|f| is_kernel(f) && f.contains("futex"));
        if !lock_sleep && (!futex || user.iter().any(|f| IDLE_WAIT.iter().any(|p| f.contains(p)))) {
            continue;
        }
        // From the leaf: skip the implementation (and bare `syscall`); the
        // frame above its outermost frame is the site. Unnamed frames
        // (`postgres+0x45d95c`) between implementation frames are the
        // implementation's static functions.
        let mut outermost = None;
        for (i, frame) in user.iter().enumerate().rev() {
            if is_impl(frame) {
                outermost = Some(i);
            } else if !is_unresolved(frame) {
                break;
            }
        }
        let via = outermost.map_or("futex", |i| user[i]).to_string();
        let site = match outermost {
            Some(0) => "[lock implementation only]",
            Some(i) => user[i - 1],
            None => user.last().copied().unwrap_or("[lock implementation only]"),
        }
        .to_string();
        let e = map.entry((site, via)).or_default();
        e.0 += s.value;
        e.1 += s.count;
    }
    let thread_ns = off.thread_ns().max(1) as f64;
    let total = off.total().max(1) as f64;
    let secs = (off.duration_ns as f64 / 1e9).max(1e-9);
    let mut v: Vec<LockSite> = map
        .into_iter()
        .map(|((site, via), (ns, n))| LockSite {
            site,
            via,
            wait_ns: ns,
            waits: n,
            // Sampled sleeps (1 in N, each counted N times) are an estimate
            // that can overshoot by a hair (100.02 % seen at 16 clients):
            // no lock holds more than all the threads' time.
            thread_share: (ns as f64 / thread_ns).min(1.0),
            off_cpu_share: ns as f64 / total,
            waits_per_s: n as f64 / secs,
        })
        .collect();
    v.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then_with(|| a.site.cmp(&b.site)));
    v.truncate(top);
    v
}

/// One function's share in two profiles (inclusive), and the change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Growth {
    pub frame: String,
    pub share_a: f64,
    pub share_b: f64,
    /// share_b − share_a, in share points (0..1 scale).
    pub delta: f64,
}

/// What grew from `a` to `b`: each of the server's own functions (as
/// [`top_own`] attributes them) by its share of its profile, largest growth
/// first (shares, so steps of different length or load compare).
pub fn diff(a: &StackProfile, b: &StackProfile, top: usize) -> Vec<Growth> {
    let ia: BTreeMap<String, f64> = top_own(a, usize::MAX).into_iter().map(|f| (f.frame, f.share)).collect();
    let ib: BTreeMap<String, f64> = top_own(b, usize::MAX).into_iter().map(|f| (f.frame, f.share)).collect();
    let mut names: Vec<&String> = ia.keys().chain(ib.keys()).collect();
    names.sort_unstable();
    names.dedup();
    let mut v: Vec<Growth> = names
        .into_iter()
        .map(|n| {
            let (sa, sb) = (ia.get(n).copied().unwrap_or(0.0), ib.get(n).copied().unwrap_or(0.0));
            Growth { frame: n.clone(), share_a: sa, share_b: sb, delta: sb - sa }
        })
        .collect();
    v.sort_by(|x, y| y.delta.total_cmp(&x.delta).then_with(|| x.frame.cmp(&y.frame)));
    v.truncate(top);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::sample::FoldedStack;

    fn profile(stacks: &[(&str, u64, u64)]) -> StackProfile {
        StackProfile {
            duration_ns: 1_000_000_000,
            threads: 4,
            unwind: "dwarf".into(),
            rate_hz: 0,
            lost: 0,
            sampled_every: 0,
            stacks: stacks.iter().map(|(s, v, c)| FoldedStack { stack: s.to_string(), value: *v, count: *c }).collect(),
        }
    }

    #[test]
    fn lock_site_is_the_first_frame_outside_the_mutex() {
        let off = profile(&[
            ("start_thread;worker;update_counter;pthread_mutex_lock@@GLIBC_2.2.5;__lll_lock_wait;syscall;entry_SYSCALL_64_after_hwframe_[k];futex_wait_[k];schedule_[k];[S]", 2_000_000_000, 4000),
            ("start_thread;worker;pthread_cond_wait@@GLIBC_2.3.2;entry_SYSCALL_64_after_hwframe_[k];futex_wait_[k];[S]", 1_000_000_000, 10),
            ("start_thread;worker;__libc_recv;tcp_recvmsg_[k];[S]", 1_000_000_000, 50),
        ]);
        let sites = lock_sites(&off, 5);
        assert_eq!(sites.len(), 1, "{sites:?}");
        assert_eq!(sites[0].site, "update_counter");
        assert_eq!(sites[0].via, "pthread_mutex_lock@@GLIBC_2.2.5");
        assert!((sites[0].thread_share - 0.5).abs() < 1e-9);
        assert!((sites[0].waits_per_s - 4000.0).abs() < 1e-9);
    }

    #[test]
    fn an_inlined_spin_counts_the_spinning_function_s_own_samples() {
        // Release build: the spin hint is inlined, only the yield leaves a frame.
        let p = profile(&[
            ("main;serve;Lock::with;sched_yield;entry_SYSCALL_64_[k]", 5, 5),
            ("main;serve;Lock::with", 40, 40),
            ("main;serve;Lock::with;work", 45, 45),
            ("main;serve", 10, 10),
        ]);
        let spin = spin_sites(&p, 3);
        assert_eq!(spin.len(), 1, "{spin:?}");
        assert_eq!(spin[0].frame, "Lock::with");
        assert_eq!(spin[0].value, 45);
        // Without a yield or hint under it, a hot leaf is work, not a spin;
        // and so is a work loop's `black_box`, or an atomic counter.
        let q = profile(&[
            ("main;serve;Lock::with", 40, 40),
            ("main;serve;Lock::with;work", 50, 50),
            ("main;serve;work;core::hint::black_box", 5, 5),
            ("main;serve;count;core::sync::atomic::atomic_add", 5, 5),
        ]);
        assert!(spin_sites(&q, 3).is_empty(), "{:?}", spin_sites(&q, 3));
        // An unoptimized spin loop polls through an atomic load at the leaf.
        let r = profile(&[("main;serve;Lock::with;core::sync::atomic::AtomicBool::load", 30, 30), ("main;serve;Lock::with", 10, 10)]);
        assert_eq!(spin_sites(&r, 3)[0].value, 40);
    }

    #[test]
    fn a_sampled_estimate_never_holds_more_than_all_the_thread_time() {
        // 4 threads over 1 s: 4 s of thread time; sampled sleeps scaled up to 4.1 s.
        let off = profile(&[("main;work;pthread_mutex_lock;__x64_sys_futex_[k];[S]", 4_100_000_000, 41)]);
        assert_eq!(lock_sites(&off, 1)[0].thread_share, 1.0);
    }

    #[test]
    fn postgres_lock_waits_are_named_by_their_caller() {
        // Stacks as perf gave them for PostgreSQL 15 (Debian) under `hot-row`.
        let off = profile(&[
            ("PostgresMain;heap_update;XactLockTableWait;LockAcquireExtended;postgres+0x45d95c;ProcSleep;WaitLatch;WaitEventSetWait;epoll_wait;entry_SYSCALL_64_after_hwframe_[k];do_epoll_wait_[k];schedule_[k];[S]", 600, 6),
            ("PostgresMain;btinsert;_bt_doinsert;postgres+0x1b80af;_bt_relandgetbuf;LWLockAcquire;PGSemaphoreLock;__new_sem_wait_slow64.constprop.0;__futex_abstimed_wait_common;__x64_sys_futex_[k];futex_wait_[k];[S]", 300, 30),
            ("PostgresMain;CommitTransactionCommand;postgres+0x1e44a1;ProcArrayEndTransaction;LWLockAcquire;PGSemaphoreLock;__new_sem_wait_slow64.constprop.0;__x64_sys_futex_[k];[S]", 50, 5),
            // A backend waiting for its client's next query is not a lock wait.
            ("PostgresMain;pq_getbyte;postgres+0x34b406;secure_read;WaitEventSetWait;epoll_wait;__x64_sys_epoll_wait_[k];[S]", 3000, 10),
        ]);
        let sites = lock_sites(&off, 5);
        let named: Vec<(&str, &str)> = sites.iter().map(|s| (s.site.as_str(), s.via.as_str())).collect();
        assert_eq!(
            named,
            [("heap_update", "XactLockTableWait"), ("_bt_relandgetbuf", "LWLockAcquire"), ("ProcArrayEndTransaction", "LWLockAcquire")]
        );
        // A site perf could not name stays as module+offset.
        let stripped =
            profile(&[("handler::ha_index_read_map;mariadbd+0xd21751;mariadbd+0xde2b6c;syscall;__x64_sys_futex_[k];[S]", 10, 1)]);
        assert_eq!(lock_sites(&stripped, 1)[0].site, "mariadbd+0xde2b6c");
    }

    #[test]
    fn own_functions_skip_the_runtime_and_diff_shows_growth() {
        let a = profile(&[("main;app::spin;core::hint::spin_loop", 10, 10), ("main;app::parse", 90, 90)]);
        assert!(is_library("<i32 as core::iter::range::Step>::forward_unchecked") && !is_library("<app::Conn as std::io::Read>::read"));
        let b = profile(&[("main;app::spin;core::hint::spin_loop", 80, 80), ("main;app::parse", 20, 20)]);
        assert_eq!(top_own(&b, 1)[0].frame, "app::spin");
        assert_eq!(top_self(&b, 1)[0].frame, "core::hint::spin_loop");
        let spin = spin_sites(&b, 3);
        assert_eq!(spin.iter().map(|f| f.frame.as_str()).collect::<Vec<_>>(), ["app::spin"]);
        let d = diff(&a, &b, 1);
        assert_eq!(d[0].frame, "app::spin");
        assert!((d[0].delta - 0.7).abs() < 1e-9);
    }
}
