//! One closed-loop step: N virtual clients, each with exactly one request in
//! flight, spread round-robin over T worker threads.
//!
//! Each worker thread runs its own single-threaded tokio runtime, so a client
//! never migrates between threads and its stats live in plain (non-atomic)
//! memory; the only cross-thread traffic per request is one relaxed counter
//! increment read by the live progress display.
//!
//! Timeline of a step: all clients connect → barrier → warm-up (load on,
//! nothing recorded) → window (completions recorded by completion time) →
//! clients are dropped at the window's end. In-flight requests are not
//! counted (as wrk does) unless they had waited longer than any completion
//! of the window and at least [`UNFINISHED_AFTER`] (half the window if
//! shorter): those count as `unfinished` errors, so a server that stopped
//! answering never shows as a clean 0 req/s with no error.

use crate::cpu;
use crate::driver::{Client, Driver};
use scalelab_core::result::{ErrorCounts, Failure, SecondResult, StatementLatency, StepResult, UNFINISHED_AFTER};
use scalelab_core::ErrorClass;
use scalelab_core::{LatencyHistogram, StepPlan};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Settings of the engine that are not part of a step's plan.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Worker threads (event loops) of the client.
    pub threads: u32,
    /// CPUs to bind the worker threads to, one each (thread t on
    /// `pin_cpus[t]`); empty: the scheduler places them. See [`pin_plan`].
    pub pin_cpus: Vec<usize>,
    /// Time slice asked for each worker thread, µs (None: the kernel's
    /// default). See [`SHORT_CLIENT_SLICE_US`].
    pub slice_us: Option<u64>,
    /// Set from a signal handler: the window ends at the next whole second.
    pub stop: Arc<AtomicBool>,
}

/// A short time slice for client threads, µs, as `--client-slice-us` asks
/// for it (opt-in; the kernel's own slice is 0.75 ms × (1 + log2 CPUs),
/// 1.5 ms on 2 CPUs). The idea: an event loop with many connections sends a
/// burst of requests, and with a long slice the server threads it wakes
/// queue behind it until it sleeps; the scheduler then spreads them to the
/// other CPU, and every later request to them wakes across CPUs. With 100 µs
/// a woken server thread soon runs beside its client. Measured on the 2-vCPU
/// VM (kernel 6.18), alternated 8 s rounds against one server, same binary,
/// 100 µs against the kernel's slice:
/// - PostgreSQL `pgbench-select`, 50 clients: backend wake-ups that crossed
///   CPUs fell from 40-52 % to 18 % (pgbench: 12 %). Throughput, medians of
///   4 and 6 rounds: 61.7k against 56.3k q/s, then 64.4k against 64.9k;
///   against `bench/sql_vs_peers`' own server, 0.91 of pgbench against 0.92.
/// - MariaDB point-select, 10 clients: 69.4k against 61.5k, then 63.2k
///   against 62.7k; 50 clients: 65.6k against 55.1k.
/// - Client CPU per query was lower or equal in all five sets (e.g.
///   0.90 against 1.02 s per 100k, 0.95 against 1.10); PostgreSQL at
///   10 clients and HTTP against nginx were even.
///
/// Why it is not the default: the throughput gain did not repeat, and the
/// client, preempted more often, adds context switches that the diagnosis
/// reads as the server's. The specimen in `scales` mode, 16 clients, 1 ms of
/// work, went from 1.8-2.0 to 3.5 switches per request (system-wide), above
/// `global-lock`'s 2.7.
pub const SHORT_CLIENT_SLICE_US: u64 = 100;

/// The CPUs a run's `threads` event loops are bound to, one each: the
/// first `threads` CPUs of this process's affinity mask, or none when there
/// are more threads than CPUs (or `no_pin`).
///
/// Why bind: each event loop wakes the server threads that serve its
/// connections; the scheduler places a woken thread near its waker, so with
/// the loops on fixed CPUs each server thread settles beside the loop that
/// feeds it. Left to the scheduler, the two loops of a 2-vCPU VM shared one
/// CPU for stretches: 42 % of the client's wake-ups of PostgreSQL backends
/// crossed CPUs against 4 % bound (pgbench's own two threads: 13 %), and
/// each crossing costs an inter-processor interrupt. Measured on that VM
/// (kernel 6.18), alternated rounds of 8 s, median q/s, free against bound:
/// PostgreSQL pgbench-select, 10 clients, 6 rounds: 72.6k against 82.4k
/// (pgbench -S -j 2: 71.2k), client CPU per query 0.90 against 0.76 s/100k;
/// 50 clients: 57.4k against 58.9k (pgbench 60.1k); MariaDB point-select, 4
/// rounds, 10 clients: 56.4k against 67.4k (sysbench 69.4k), 50 clients:
/// 48.1k against 60.3k (sysbench 57.0k).
pub fn pin_plan(threads: u32, no_pin: bool) -> Vec<usize> {
    let cpus = crate::cpu::allowed_cpu_list();
    if no_pin || threads as usize > cpus.len() {
        return Vec::new();
    }
    cpus[..threads as usize].to_vec()
}

/// A progress report sent about every 250 ms while a step runs.
#[derive(Clone, Debug)]
pub struct LiveTick {
    /// Seconds since the warm-up began.
    pub elapsed_s: f64,
    /// True while warming up (nothing recorded yet).
    pub warming_up: bool,
    /// Completions per second over the last tick (warm-up included).
    pub throughput_per_s: f64,
    /// Failed requests so far in this step.
    pub errors: u64,
    /// p50 latency of the last completed window second, ms.
    pub p50_ms: Option<f64>,
    /// p99 latency of the last completed window second, ms.
    pub p99_ms: Option<f64>,
}

/// Deadlines shared by the controller and the workers, as nanoseconds since `base`.
struct Shared {
    base: Instant,
    warm_end_ns: AtomicU64,
    window_end_ns: AtomicU64,
    completions: AtomicU64,
    errors: AtomicU64,
}

impl Shared {
    fn at(&self, ns: u64) -> Instant {
        self.base + Duration::from_nanos(ns)
    }
    fn warm_end(&self) -> Instant {
        self.at(self.warm_end_ns.load(Ordering::Relaxed))
    }
    fn window_end(&self) -> Instant {
        self.at(self.window_end_ns.load(Ordering::Relaxed))
    }
}

/// What one worker thread measured.
struct WorkerStats {
    seconds: Vec<SecondResult>,
    errors: ErrorCounts,
    queries: u64,
    reconnects: u64,
    connect_total: Duration,
    connects: u32,
    /// Worst event-loop lateness seen in the window.
    max_lag: Option<Duration>,
    /// This thread's run-queue wait (schedstat run delay) over the window, ns.
    runq_wait_ns: Option<u64>,
    /// Per-statement latencies of the window, by index into the driver's statement names.
    statements: Vec<LatencyHistogram>,
}

/// Runs one step and returns its merged result. `live` is called from the
/// calling thread about every 250 ms.
pub fn run_step<D: Driver>(driver: &Arc<D>, plan: &StepPlan, opts: &EngineOptions, live: &mut dyn FnMut(&LiveTick)) -> StepResult {
    let threads = opts.threads.clamp(1, plan.concurrency.max(1));
    let n_seconds = plan.window_s.ceil().max(1.0) as usize;
    let shared = Arc::new(Shared {
        base: Instant::now(),
        warm_end_ns: AtomicU64::new(u64::MAX / 4),
        window_end_ns: AtomicU64::new(u64::MAX / 4),
        completions: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    });
    // connected: workers + controller; go: deadlines are set.
    let connected = Arc::new(Barrier::new(threads as usize + 1));
    let go = Arc::new(Barrier::new(threads as usize + 1));
    let (sec_tx, sec_rx) = mpsc::channel::<(u32, LatencyHistogram)>();

    let mut handles = Vec::new();
    for t in 0..threads {
        let ids: Vec<u32> = (0..plan.concurrency).filter(|c| c % threads == t).collect();
        let (driver, shared, connected, go, sec_tx) = (driver.clone(), shared.clone(), connected.clone(), go.clone(), sec_tx.clone());
        let cpu = opts.pin_cpus.get(t as usize).copied();
        let slice_us = opts.slice_us;
        let think = Duration::from_secs_f64(plan.think_time_s);
        handles.push(
            std::thread::Builder::new()
                .name(format!("scalelab-client-{t}"))
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        // A refusal (e.g. a cpuset changed since the plan) leaves the thread unbound.
                        crate::cpu::pin_current_thread(cpu);
                    }
                    if let Some(us) = slice_us {
                        // The plan records what the kernel granted (cpu::thread_slice_us).
                        crate::cpu::set_thread_slice_us(us);
                    }
                    worker(&*driver, ids, n_seconds, think, &shared, &connected, &go, sec_tx)
                })
                .expect("spawning a client thread"),
        );
    }
    drop(sec_tx);

    connected.wait();
    let now = shared.base.elapsed();
    let warm_end = now + plan.warmup();
    let window_end = warm_end + plan.window();
    shared.warm_end_ns.store(warm_end.as_nanos() as u64, Ordering::Relaxed);
    shared.window_end_ns.store(window_end.as_nanos() as u64, Ordering::Relaxed);
    let load_start = shared.base + now;
    go.wait();

    // Controller: progress ticks, client CPU at the window's edges, stop on signal.
    let mut cpu_start = None;
    let mut window_start_wall = None;
    let mut last_count = 0u64;
    let mut last_tick = Instant::now();
    let (mut last_p50, mut last_p99) = (None, None);
    let mut stopped_at = None;
    loop {
        let now = Instant::now();
        let (warm_end, window_end) = (shared.warm_end(), shared.window_end());
        if now >= window_end {
            break;
        }
        if cpu_start.is_none() && now >= warm_end {
            cpu_start = Some(cpu::process_cpu_s());
            window_start_wall = Some(unix_ms_at(warm_end));
        }
        if opts.stop.load(Ordering::Relaxed) && stopped_at.is_none() {
            // Finish the current second of the window (or stop now if still warming up).
            let cut = if now < warm_end {
                now
            } else {
                let into = now - warm_end;
                warm_end + Duration::from_secs(into.as_secs() + 1)
            };
            let cut = cut.min(window_end);
            shared.window_end_ns.store((cut - shared.base).as_nanos() as u64, Ordering::Relaxed);
            stopped_at = Some(cut);
            continue;
        }
        while let Ok((_, h)) = sec_rx.try_recv() {
            last_p50 = h.quantile_ms(0.50);
            last_p99 = h.quantile_ms(0.99);
        }
        let count = shared.completions.load(Ordering::Relaxed);
        let dt = now.duration_since(last_tick).as_secs_f64();
        if dt >= 0.25 {
            live(&LiveTick {
                elapsed_s: now.duration_since(load_start).as_secs_f64(),
                warming_up: now < warm_end,
                throughput_per_s: (count - last_count) as f64 / dt,
                errors: shared.errors.load(Ordering::Relaxed),
                p50_ms: last_p50,
                p99_ms: last_p99,
            });
            last_count = count;
            last_tick = now;
        }
        let next = (now + Duration::from_millis(50)).min(window_end);
        let next = if cpu_start.is_none() { next.min(warm_end) } else { next };
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let cpu_end = cpu::process_cpu_s();
    let (warm_end, window_end) = (shared.warm_end(), shared.window_end());
    let window_s = window_end.saturating_duration_since(warm_end).as_secs_f64();
    let partial = stopped_at.is_some();

    let mut merged: Vec<SecondResult> = (0..n_seconds as u32).map(|s| SecondResult { second: s, ..Default::default() }).collect();
    let mut result = StepResult {
        concurrency: plan.concurrency,
        window_s,
        window_start_unix_ms: window_start_wall.unwrap_or_else(|| unix_ms_at(warm_end)),
        window_end_unix_ms: unix_ms_at(window_end),
        client_cores: threads.min(cpu::allowed_cpus()),
        partial,
        ..Default::default()
    };
    let (mut connect_total, mut connects) = (Duration::ZERO, 0u32);
    let mut statements: Vec<LatencyHistogram> = Vec::new();
    let (mut runq_total_ns, mut runq_threads) = (None::<u64>, 0u32);
    for h in handles {
        let stats = h.join().expect("a client thread panicked");
        for (m, s) in merged.iter_mut().zip(&stats.seconds) {
            m.requests += s.requests;
            m.errors += s.errors;
            m.latency.merge(&s.latency);
        }
        result.errors.merge(&stats.errors);
        result.queries += stats.queries;
        result.reconnects += stats.reconnects;
        connect_total += stats.connect_total;
        if let Some(w) = stats.runq_wait_ns {
            runq_total_ns = Some(runq_total_ns.unwrap_or(0) + w);
            runq_threads += 1;
        }
        if let Some(lag) = stats.max_lag {
            let ms = lag.as_secs_f64() * 1e3;
            result.client_lag_ms = Some(result.client_lag_ms.map_or(ms, |m: f64| m.max(ms)));
        }
        connects += stats.connects;
        if statements.len() < stats.statements.len() {
            statements.resize_with(stats.statements.len(), LatencyHistogram::new);
        }
        for (m, h) in statements.iter_mut().zip(&stats.statements) {
            m.merge(h);
        }
    }
    let names = driver.statement_names();
    result.statements = statements
        .iter()
        .enumerate()
        .filter_map(|(i, h)| {
            let s = h.summary()?;
            Some(StatementLatency {
                name: names.get(i).cloned().unwrap_or_else(|| format!("statement {}", i + 1)),
                count: h.count(),
                mean_ms: s.mean,
                p50_ms: s.p50,
                p99_ms: s.p99,
            })
        })
        .collect();
    // A window cut short keeps only the seconds it covered.
    merged.truncate(window_s.ceil().max(if window_s > 0.0 { 1.0 } else { 0.0 }) as usize);
    for s in &mut merged {
        result.requests += s.requests;
        result.latency.merge(&s.latency);
        s.latency.pack();
    }
    result.seconds = merged;
    if let (Some(ns), true) = (runq_total_ns, window_s > 0.0 && runq_threads > 0) {
        result.client_runq_wait_pct = Some(100.0 * ns as f64 / 1e9 / (window_s * f64::from(runq_threads)));
    }
    result.connect_ms = (connects > 0).then(|| connect_total.as_secs_f64() * 1e3 / connects as f64);
    result.client_cpu_s = match cpu_start {
        Some(c0) if window_s > 0.0 => (cpu_end - c0).max(0.0),
        _ => 0.0,
    };
    result
}

fn unix_ms_at(t: Instant) -> i64 {
    let now_i = Instant::now();
    let now_w = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64;
    if t >= now_i {
        now_w + t.duration_since(now_i).as_millis() as i64
    } else {
        now_w - now_i.duration_since(t).as_millis() as i64
    }
}

/// Per-thread state shared by the thread's client tasks (single-threaded: RefCell).
struct Local {
    stats: WorkerStats,
    /// Per client of this thread: when its request in flight was sent (None: none in flight).
    in_flight: Vec<Option<Instant>>,
    /// When the control loop's timer is due: a client whose calls never
    /// wait in the event loop (a blocking socket answered in time) yields
    /// to it once this has passed, so the timer still fires.
    timer_due: Option<Instant>,
}

thread_local! {
    static SOLE_CONNECTION: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Time this thread spent waiting in a blocking socket (see
    /// [`note_blocked`]), ns: idle time, not event-loop lateness.
    static BLOCKED_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Records that this client thread waited `d` in a blocking `recv` (a
/// thread that owns one connection): the control loop's timer may fire that
/// much later without the thread having been busy.
pub(crate) fn note_blocked(d: Duration) {
    BLOCKED_NS.with(|b| b.set(b.get().saturating_add(d.as_nanos() as u64)));
}

fn blocked_ns() -> u64 {
    BLOCKED_NS.with(|b| b.get())
}

/// True on a client thread that owns exactly one connection (one client per
/// thread: 1 client, or `--threads` >= clients). Such a thread has nothing
/// else to do while its request is out, so a driver may wait for the reply
/// in a blocking `recv` rather than the event loop's `epoll_wait`: the
/// kernel passes its sync wake-up hint to socket waiters but not to epoll
/// waiters, and without it the server's reply wakes the client on the other
/// CPU (see `sql::stream::Stream::settle` for the figures).
pub(crate) fn owns_one_connection() -> bool {
    SOLE_CONNECTION.with(|c| c.get())
}

#[allow(clippy::too_many_arguments)]
fn worker<D: Driver>(
    driver: &D,
    ids: Vec<u32>,
    n_seconds: usize,
    think: Duration,
    shared: &Arc<Shared>,
    connected: &Barrier,
    go: &Barrier,
    sec_tx: mpsc::Sender<(u32, LatencyHistogram)>,
) -> WorkerStats {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("building a tokio runtime");
    let local = Rc::new(RefCell::new(Local {
        stats: WorkerStats {
            seconds: (0..n_seconds as u32).map(|s| SecondResult { second: s, ..Default::default() }).collect(),
            errors: ErrorCounts::default(),
            queries: 0,
            reconnects: 0,
            connect_total: Duration::ZERO,
            connects: 0,
            max_lag: None,
            runq_wait_ns: None,
            statements: Vec::new(),
        },
        in_flight: vec![None; ids.len()],
        timer_due: None,
    }));

    SOLE_CONNECTION.with(|c| c.set(ids.len() == 1));
    // Open every connection before the window.
    let mut clients: Vec<D::Client> = ids.iter().map(|&id| driver.client(id)).collect();
    rt.block_on(async {
        let set = tokio::task::LocalSet::new();
        set.run_until(async {
            let futs = clients.iter_mut().map(|c| {
                let local = local.clone();
                async move {
                    let t0 = Instant::now();
                    let r = c.connect().await;
                    let mut l = local.borrow_mut();
                    // A client that could not connect retries inside the window,
                    // where its failures are counted as errors.
                    if r.is_ok() {
                        l.stats.connect_total += t0.elapsed();
                        l.stats.connects += 1;
                    }
                }
            });
            join_all(futs).await;
        })
        .await;
    });
    connected.wait();
    go.wait();

    let set = tokio::task::LocalSet::new();
    for (slot, client) in clients.into_iter().enumerate() {
        let (local, shared) = (local.clone(), shared.clone());
        set.spawn_local(client_loop(client, slot, local, shared, think));
    }
    rt.block_on(set.run_until(control_loop(shared.clone(), local.clone(), sec_tx)));
    // Dropping the LocalSet drops every client (and its in-flight request).
    drop(set);
    drop(rt);
    Rc::try_unwrap(local).ok().expect("client tasks were dropped").into_inner().stats
}

/// Ends the worker's load at the (possibly moved) window end and forwards each
/// finished second's histogram to the controller for live p99.
async fn control_loop(shared: Arc<Shared>, local: Rc<RefCell<Local>>, sec_tx: mpsc::Sender<(u32, LatencyHistogram)>) {
    let mut sent = 0u32;
    let mut runq_at_window_start = None;
    loop {
        let now = Instant::now();
        let (warm_end, end) = (shared.warm_end(), shared.window_end());
        if now >= end {
            break;
        }
        if now >= warm_end && runq_at_window_start.is_none() {
            runq_at_window_start = Some(crate::cpu::thread_run_delay_ns());
        }
        if now > warm_end {
            let done = (now - warm_end).as_secs() as u32;
            while sent < done {
                let mut l = local.borrow_mut();
                if let Some(s) = l.stats.seconds.get_mut(sent as usize) {
                    let _ = sec_tx.send((sent, s.latency.clone()));
                    // A closed second is only read from now on: packed, it
                    // takes hundreds of bytes instead of ~100 KB, so a long
                    // window does not grow the client (bench/soak).
                    s.latency.pack();
                }
                sent += 1;
            }
        }
        let wait = end.saturating_duration_since(now).min(Duration::from_millis(50));
        local.borrow_mut().timer_due = Some(now + wait);
        let blocked_before = blocked_ns();
        tokio::time::sleep(wait).await;
        // How late the timer fired: the loop was busy with client work. Time
        // spent blocked in a socket past the due time was idle, not busy
        // (blocked time up to `wait` may have been before it: not counted).
        let blocked = Duration::from_nanos(blocked_ns() - blocked_before);
        let late = now.elapsed().saturating_sub(wait);
        let late = late.saturating_sub(blocked.saturating_sub(wait));
        if now >= warm_end && now + wait <= end {
            let mut l = local.borrow_mut();
            l.stats.max_lag = Some(l.stats.max_lag.map_or(late, |m| m.max(late)));
        }
    }
    if let Some(Some(start)) = runq_at_window_start {
        if let Some(end) = crate::cpu::thread_run_delay_ns() {
            local.borrow_mut().stats.runq_wait_ns = Some(end.saturating_sub(start));
        }
    }
    // Let responses that arrived by now be read first (their completions are
    // past the window, not recorded): a client thread that was itself
    // stalled at the window's end (a busy machine) must not count its
    // unread answers as a server that stopped answering.
    tokio::time::sleep(UNFINISHED_GRACE).await;
    count_unfinished(&mut local.borrow_mut(), &shared);
}

/// How long the event loop reads pending responses after the window before
/// counting what is still unanswered as unfinished.
const UNFINISHED_GRACE: Duration = Duration::from_millis(20);

/// Counts the requests still waiting for their response at the window's
/// end as `unfinished`, when they had waited at least [`UNFINISHED_AFTER`]
/// (half the window if shorter) and longer than this thread's slowest
/// completion of the window: a server that stopped answering, not a slow
/// one whose requests the window's end caught mid-flight. Counted in the
/// window's last second.
fn count_unfinished(l: &mut Local, shared: &Shared) {
    let (warm_end, end) = (shared.warm_end(), shared.window_end());
    let window = end.saturating_duration_since(warm_end);
    if window.is_zero() {
        return;
    }
    let slowest = l.stats.seconds.iter().filter_map(|s| s.latency.quantile_ms(1.0)).fold(0.0, f64::max);
    let after = UNFINISHED_AFTER.min(window / 2).max(Duration::from_secs_f64(slowest / 1e3));
    let ages: Vec<Duration> =
        l.in_flight.iter().flatten().map(|t0| end.saturating_duration_since(*t0)).filter(|age| *age >= after).collect();
    if ages.is_empty() {
        return;
    }
    let last = (window.as_secs_f64().ceil() as usize).clamp(1, l.stats.seconds.len()) - 1;
    let oldest = ages.iter().max().copied().unwrap_or_default();
    let f = Failure::new(
        ErrorClass::Unfinished,
        format!("no response after {:.1} s when the window ended (the server stopped answering?)", oldest.as_secs_f64()),
    );
    for _ in &ages {
        l.stats.errors.add(&f);
    }
    l.stats.seconds[last].errors += ages.len() as u64;
    shared.errors.fetch_add(ages.len() as u64, Ordering::Relaxed);
}

async fn client_loop<C: Client>(mut client: C, slot: usize, local: Rc<RefCell<Local>>, shared: Arc<Shared>, think: Duration) {
    let mut backoff = Duration::ZERO;
    let mut reconnects = client.reconnects();
    loop {
        let t0 = Instant::now();
        if t0 >= shared.window_end() {
            break;
        }
        local.borrow_mut().in_flight[slot] = Some(t0);
        let outcome = client.call().await;
        let t1 = Instant::now();
        local.borrow_mut().in_flight[slot] = None;
        // A call answered without ever waiting in the event loop (a blocking
        // socket) would keep the timers from firing for the whole window.
        if local.borrow().timer_due.is_some_and(|due| t1 >= due) {
            tokio::task::yield_now().await;
        }
        let warm_end = shared.warm_end();
        let recorded = t1 >= warm_end && t1 < shared.window_end();
        let mut failed_connect = false;
        {
            let mut l = local.borrow_mut();
            let sec = if recorded { ((t1 - warm_end).as_secs() as usize).min(l.stats.seconds.len() - 1) } else { 0 };
            match &outcome {
                Ok(statements) => {
                    shared.completions.fetch_add(1, Ordering::Relaxed);
                    if recorded {
                        let s = &mut l.stats.seconds[sec];
                        s.requests += 1;
                        s.latency.record(t1 - t0);
                        l.stats.queries += u64::from(*statements);
                        if let Some(times) = client.statement_times() {
                            for &(i, d) in times.iter() {
                                let i = i as usize;
                                if l.stats.statements.len() <= i {
                                    l.stats.statements.resize_with(i + 1, LatencyHistogram::new);
                                }
                                l.stats.statements[i].record(d);
                            }
                        }
                    }
                    backoff = Duration::ZERO;
                }
                Err(f) => {
                    shared.errors.fetch_add(1, Ordering::Relaxed);
                    if recorded {
                        l.stats.seconds[sec].errors += 1;
                        l.stats.errors.add(f);
                    }
                    failed_connect = is_connect_failure(f);
                }
            }
            if let Some(times) = client.statement_times() {
                times.clear();
            }
            let r = client.reconnects();
            if recorded {
                l.stats.reconnects += r - reconnects;
            }
            reconnects = r;
        }
        if failed_connect {
            // A target that refuses connections is not hammered in a tight loop:
            // back off 1 ms, doubling to 250 ms, while it stays down.
            backoff = (backoff * 2).clamp(Duration::from_millis(1), Duration::from_millis(250));
            tokio::time::sleep(backoff).await;
        } else if !think.is_zero() {
            tokio::time::sleep(think).await;
        }
    }
}

fn is_connect_failure(f: &Failure) -> bool {
    use scalelab_core::ErrorClass::*;
    // FdLimit: an EMFILE storm would otherwise spin at 300k+ errors/s and
    // starve the probes.
    matches!(f.class, ConnectRefused | ConnectTimeout | TooManyConnections | FdLimit)
}

/// Awaits every future of an iterator concurrently on the current task.
async fn join_all<F: std::future::Future<Output = ()>>(futs: impl Iterator<Item = F>) {
    let mut set = Vec::new();
    for f in futs {
        set.push(Box::pin(f));
    }
    std::future::poll_fn(|cx| {
        let mut pending = false;
        set.retain_mut(|f| {
            let done = f.as_mut().poll(cx).is_ready();
            pending |= !done;
            !done
        });
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// (client id, the CPU mask and the time slice of the thread it ran
    /// on), one per call.
    type Seen = Arc<Mutex<Vec<(u32, Vec<usize>, Option<u64>)>>>;

    /// Clients that record the CPU mask and slice of the thread they run on.
    struct MaskDriver {
        seen: Seen,
    }

    struct MaskClient {
        id: u32,
        seen: Seen,
    }

    impl Driver for MaskDriver {
        type Client = MaskClient;
        fn client(&self, id: u32) -> MaskClient {
            MaskClient { id, seen: self.seen.clone() }
        }
    }

    impl Client for MaskClient {
        async fn connect(&mut self) -> Result<(), Failure> {
            Ok(())
        }
        async fn call(&mut self) -> Result<u32, Failure> {
            self.seen.lock().unwrap().push((self.id, crate::cpu::allowed_cpu_list(), crate::cpu::thread_slice_now_us()));
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(1)
        }
        fn reconnects(&self) -> u64 {
            0
        }
    }

    fn seen(threads: u32, pin_cpus: Vec<usize>, slice_us: Option<u64>) -> Vec<(u32, Vec<usize>, Option<u64>)> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let driver = Arc::new(MaskDriver { seen: seen.clone() });
        let plan = StepPlan { concurrency: 4, warmup_s: 0.0, window_s: 0.1, pause_s: 0.0, think_time_s: 0.0 };
        let opts = EngineOptions { threads, pin_cpus, slice_us, stop: Arc::new(AtomicBool::new(false)) };
        let r = run_step(&driver, &plan, &opts, &mut |_| {});
        assert!(r.requests > 0, "the clients ran");
        let v = seen.lock().unwrap().clone();
        v
    }

    /// Clients that settle a socket at connect, as the SQL drivers do after
    /// their handshake, and record whether it became a blocking one.
    struct SettleDriver {
        blocking: Arc<Mutex<Vec<bool>>>,
    }

    struct SettleClient {
        blocking: Arc<Mutex<Vec<bool>>>,
    }

    impl Driver for SettleDriver {
        type Client = SettleClient;
        fn client(&self, _id: u32) -> SettleClient {
            SettleClient { blocking: self.blocking.clone() }
        }
    }

    impl Client for SettleClient {
        async fn connect(&mut self) -> Result<(), Failure> {
            let (_ours, theirs) = tokio::net::UnixStream::pair().unwrap();
            let stream = crate::sql::stream::Stream::Unix(theirs).settle().unwrap();
            self.blocking.lock().unwrap().push(matches!(stream, crate::sql::stream::Stream::Blocking(_)));
            Ok(())
        }
        async fn call(&mut self) -> Result<u32, Failure> {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(1)
        }
        fn reconnects(&self) -> u64 {
            0
        }
    }

    #[test]
    fn only_a_client_thread_with_one_connection_waits_in_a_blocking_socket() {
        // (clients, threads, whether each connection's socket blocks)
        for (clients, threads, blocks) in [(1, 1, true), (4, 4, true), (4, 8, true), (4, 2, false), (4, 1, false)] {
            let blocking = Arc::new(Mutex::new(Vec::new()));
            let driver = Arc::new(SettleDriver { blocking: blocking.clone() });
            let plan = StepPlan { concurrency: clients, warmup_s: 0.0, window_s: 0.1, pause_s: 0.0, think_time_s: 0.0 };
            let opts = EngineOptions { threads, pin_cpus: Vec::new(), slice_us: None, stop: Arc::new(AtomicBool::new(false)) };
            let r = run_step(&driver, &plan, &opts, &mut |_| {});
            assert!(r.requests > 0, "the clients ran");
            assert_eq!(*blocking.lock().unwrap(), vec![blocks; clients as usize], "{clients} clients on {threads} threads");
        }
    }

    /// Clients whose calls take `delay`, or never finish after the first `answered` calls.
    struct SlowDriver {
        delay: Duration,
        answered: u64,
    }

    struct SlowClient {
        delay: Duration,
        left: u64,
    }

    impl Driver for SlowDriver {
        type Client = SlowClient;
        fn client(&self, _id: u32) -> SlowClient {
            SlowClient { delay: self.delay, left: self.answered }
        }
    }

    impl Client for SlowClient {
        async fn connect(&mut self) -> Result<(), Failure> {
            Ok(())
        }
        async fn call(&mut self) -> Result<u32, Failure> {
            if self.left == 0 {
                std::future::pending::<()>().await;
            }
            self.left -= 1;
            tokio::time::sleep(self.delay).await;
            Ok(1)
        }
        fn reconnects(&self) -> u64 {
            0
        }
    }

    fn slow_step(delay_ms: u64, answered: u64) -> StepResult {
        let driver = Arc::new(SlowDriver { delay: Duration::from_millis(delay_ms), answered });
        let plan = StepPlan { concurrency: 3, warmup_s: 0.0, window_s: 1.0, pause_s: 0.0, think_time_s: 0.0 };
        let opts = EngineOptions { threads: 2, pin_cpus: Vec::new(), slice_us: None, stop: Arc::new(AtomicBool::new(false)) };
        run_step(&driver, &plan, &opts, &mut |_| {})
    }

    #[test]
    fn requests_left_waiting_at_the_end_of_the_window_are_unfinished_only_when_hung() {
        // Hung from the start: every client's request is unfinished, in the last second.
        let r = slow_step(1, 0);
        assert_eq!((r.requests, r.errors.get(ErrorClass::Unfinished)), (0, 3));
        assert_eq!(r.seconds.last().unwrap().errors, 3);
        // Hung after 20 answers each (about 0.2 s): completions, then 3 unfinished.
        let r = slow_step(10, 20);
        assert!(r.requests > 0);
        assert_eq!(r.errors.get(ErrorClass::Unfinished), 3);
        // Slow but answering (150 ms a call): the requests the window's end
        // catches mid-flight are not errors.
        let r = slow_step(150, u64::MAX);
        assert!(r.requests > 0);
        assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    }

    #[test]
    fn event_loops_are_bound_one_cpu_each_unless_told_not_to() {
        let cpus = crate::cpu::allowed_cpu_list();
        assert!(!cpus.is_empty(), "the process's own affinity mask is readable");
        let threads = cpus.len().min(2) as u32;
        let plan = pin_plan(threads, false);
        assert_eq!(plan, cpus[..threads as usize].to_vec());
        // Client c runs on loop c % threads, which is bound to plan[c % threads] alone.
        for (id, mask, _) in seen(threads, plan.clone(), None) {
            assert_eq!(mask, vec![plan[(id % threads) as usize]], "client {id}");
        }
        // Not bound: every thread keeps the whole mask.
        assert!(pin_plan(threads, true).is_empty());
        for (id, mask, _) in seen(threads, Vec::new(), None) {
            assert_eq!(mask, cpus, "client {id}");
        }
        // More loops than CPUs: none is bound (the scheduler spreads them).
        assert!(pin_plan(cpus.len() as u32 + 1, false).is_empty());
    }

    /// Linux 6.12 or later: the fair scheduler keeps a per-task slice.
    fn kernel_keeps_custom_slices() -> bool {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut v = release.trim().split(|c: char| !c.is_ascii_digit()).map(|x| x.parse::<u32>().unwrap_or(0));
        (v.next().unwrap(), v.next().unwrap_or(0)) >= (6, 12)
    }

    #[test]
    fn event_loops_run_with_the_slice_asked_for() {
        let custom = kernel_keeps_custom_slices();
        assert_eq!(crate::cpu::thread_slice_us(SHORT_CLIENT_SLICE_US), custom.then_some(SHORT_CLIENT_SLICE_US));
        // Below the kernel's floor of 100 µs: clamped up.
        assert_eq!(crate::cpu::thread_slice_us(20), custom.then_some(100));
        for (id, _, slice) in seen(2, Vec::new(), Some(SHORT_CLIENT_SLICE_US)) {
            assert_eq!(slice, custom.then_some(SHORT_CLIENT_SLICE_US), "client {id}");
        }
        // Not asked: the kernel's default slice, which is longer.
        for (id, _, slice) in seen(2, Vec::new(), None) {
            assert!(slice.is_none_or(|us| us > SHORT_CLIENT_SLICE_US), "client {id}: {slice:?}");
        }
    }
}
