//! One worker thread: its own single-threaded event loop, which opens its
//! clients' connections, runs their request loops through the window, and
//! keeps their statistics in plain (non-atomic) memory.

use super::client_loop::client_loop;
use super::open_loop;
use super::placement::{enter_netns, place_current_thread};
use super::schedule::Schedule;
use super::state::{Dispatch, Gate, Gates, Local, Shared, WorkerStats};
use super::{panic_message, EngineError};
use crate::driver::{Client, ClientCtx, Driver};
use scalelab_core::result::{Failure, UNFINISHED_AFTER};
use scalelab_core::{ErrorClass, LatencyHistogram};
use scalelab_wire::stream::blocked_ns;
use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::task::Poll;
use std::time::{Duration, Instant};

/// Where a worker thread runs and what it runs.
pub(super) struct WorkerPlan {
    /// The ids of this thread's clients.
    pub(super) ids: Vec<u32>,
    /// Clients per connection (HTTP/2's streams; 1: a connection each).
    pub(super) per_connection: u32,
    /// This thread's number, and how many worker threads the step runs.
    pub(super) thread: u32,
    pub(super) threads: u32,
    pub(super) schedule: Schedule,
    /// Seconds of the window (the per-second histograms to keep).
    pub(super) n_seconds: usize,
    /// The CPU to bind the thread to (None: the scheduler places it).
    pub(super) cpu: Option<usize>,
    /// The time slice to ask for, µs (None: the kernel's default).
    pub(super) slice_us: Option<u64>,
    /// The network namespace to enter before connecting (None: stay).
    pub(super) netns: Option<std::path::PathBuf>,
    /// Poll instead of sleeping, this long after a finished call ([`busy_poll`]).
    pub(super) busy_poll: Option<Duration>,
}

/// Runs on a new worker thread: places it, connects its clients, meets the
/// controller at the gates, then runs the load until the window's end.
/// None: the step cannot go on (this thread told the gates why, or another
/// thread broke them).
pub(super) fn worker<D: Driver>(
    driver: &D,
    plan: WorkerPlan,
    shared: &Arc<Shared>,
    gates: &Arc<Gates>,
    sec_tx: mpsc::Sender<(u32, LatencyHistogram)>,
) -> Option<WorkerStats> {
    place_current_thread(plan.cpu, plan.slice_us);
    if let Some(path) = &plan.netns {
        // The namespace was made for the run; it is gone only if something removed it.
        if let Err(e) = enter_netns(path) {
            let (path, why) = (path.clone(), e.to_string());
            let gone = e.kind() == std::io::ErrorKind::NotFound;
            gates.fail(if gone { EngineError::NetnsGone { path, why } } else { EngineError::Netns { path, why } });
            return None;
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("building a tokio runtime");
    let open = Dispatch { cap: plan.ids.len() as u32, budget: plan.schedule.latency_budget(), ..Default::default() };
    let local = Rc::new(RefCell::new(Local {
        stats: WorkerStats::new(plan.n_seconds, plan.ids.len()),
        in_flight: vec![None; plan.ids.len()],
        timer_due: None,
        open,
        finished: 0,
        poller: None,
    }));

    // A thread with one client has nothing else to do while its request is
    // out: the driver may wait for replies in a blocking socket. Not in an
    // open loop, whose dispatcher must run while requests are out.
    let arrivals = plan.schedule.arrivals_of(plan.thread, plan.threads);
    // Nor when busy-polling: a thread blocked in `recv` does not poll.
    let sole = plan.ids.len() == 1 && arrivals.is_none() && plan.busy_poll.is_none();
    let ctxs: Vec<ClientCtx> =
        plan.ids.iter().map(|&id| ClientCtx::new(id).with_sole_connection(sole).on_connection(id / plan.per_connection.max(1))).collect();
    let mut clients: Vec<D::Client> = driver.clients(&ctxs);
    assert_eq!(clients.len(), ctxs.len(), "the driver made a client for each context");
    // Open every connection before the window.
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
    gates.wait(Gate::Connected).ok()?;
    gates.wait(Gate::Go).ok()?;

    let set = tokio::task::LocalSet::new();
    // An accepted request is queued (a connection woken); a connection came free.
    let (notify, freed) = (Rc::new(tokio::sync::Notify::new()), Rc::new(tokio::sync::Notify::new()));
    let t = plan.thread;
    for (slot, client) in clients.into_iter().enumerate() {
        let (local, shared, gates) = (local.clone(), shared.clone(), gates.clone());
        match &arrivals {
            None => set.spawn_local(or_fail(client_loop(client, slot, local, shared, plan.schedule.clone()), gates, t)),
            Some(_) => {
                set.spawn_local(or_fail(open_loop::connection_loop(client, slot, local, shared, notify.clone(), freed.clone()), gates, t))
            }
        };
    }
    if let Some(budget) = plan.busy_poll {
        set.spawn_local(busy_poll(local.clone(), shared.clone(), budget));
    }
    if let Some(arrivals) = arrivals {
        set.spawn_local(or_fail(open_loop::dispatcher(arrivals, local.clone(), shared.clone(), notify, freed), gates.clone(), t));
    }
    rt.block_on(set.run_until(control_loop(shared.clone(), local.clone(), sec_tx)));
    // Every thread counts what is still out before any closes its
    // connections: a server that serves one connection at a time (a pool)
    // would otherwise answer another thread's waiting client the moment
    // this one hangs up. Bounded: a thread that never counts (it failed)
    // holds the others back a second at most.
    shared.counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(1);
    while shared.counted.load(std::sync::atomic::Ordering::SeqCst) < u64::from(plan.threads) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Dropping the LocalSet drops every client (and its in-flight request).
    drop(set);
    // Requests due in the window but never sent (every connection busy,
    // or the client behind its schedule) are counted, not lost.
    open_loop::never_sent(&mut local.borrow_mut(), shared);
    drop(rt);
    Some(Rc::try_unwrap(local).ok().expect("client tasks were dropped").into_inner().stats)
}

/// `--busy-poll`: a task that yields, over and over, for up to `budget`
/// after the thread's last finished call, then sleeps until the next one
/// finishes (never, with `Duration::MAX`: it polls until the window's
/// end). Each yield has the event loop poll its sockets without waiting
/// (`epoll_wait` with no timeout) before it runs the task again, so while
/// it polls the thread never sleeps: a reply is read as it lands, and the
/// server that sends it does not pay to wake the client, nor does the
/// client's latency carry its own wake-up (README, "--busy-poll", for the
/// figures). A turn of the loop in which no call finished on this thread
/// is idle; the thread CPU time of the idle turns inside the window is
/// `WorkerStats::poll_idle` (CPU, not wall time: a thread preempted
/// mid-turn used none).
async fn busy_poll(local: Rc<RefCell<Local>>, shared: Arc<Shared>, budget: Duration) {
    // Set now: the step may end before this task's last turn.
    local.borrow_mut().stats.poll_idle = Some(Duration::ZERO);
    let mut last_work = Instant::now();
    loop {
        let (now, cpu0, before) = (Instant::now(), crate::cpu::thread_cpu_ns(), local.borrow().finished);
        if now >= shared.window_end() {
            break;
        }
        if now.saturating_duration_since(last_work) >= budget {
            // Out of budget: asleep until a call finishes (`record` wakes it).
            std::future::poll_fn(|cx| {
                let mut l = local.borrow_mut();
                if l.finished != before || Instant::now() >= shared.window_end() {
                    return Poll::Ready(());
                }
                l.poller = Some(cx.waker().clone());
                Poll::Pending
            })
            .await;
            last_work = Instant::now();
            continue;
        }
        tokio::task::yield_now().await;
        let mut l = local.borrow_mut();
        if l.finished != before {
            last_work = Instant::now();
        } else if now >= shared.warm_end() {
            let spent = Duration::from_nanos(crate::cpu::thread_cpu_ns().saturating_sub(cpu0));
            *l.stats.poll_idle.get_or_insert(Duration::ZERO) += spent;
        }
    }
    // Held like a client: the step's tasks are dropped together.
    std::future::pending::<()>().await
}

/// Runs one of the thread's tasks (a client, the open loop's dispatcher).
/// A panic in it breaks the gates with its message: the event loop would
/// drop the task in silence, and the step go on without that client.
async fn or_fail(task: impl Future<Output = ()>, gates: Arc<Gates>, thread: u32) {
    use futures_util::FutureExt;
    if let Err(payload) = AssertUnwindSafe(task).catch_unwind().await {
        gates.fail(EngineError::WorkerPanicked { thread, why: panic_message(&*payload) });
    }
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
                    if !s.service.is_empty() {
                        s.service.pack();
                    }
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
/// (three quarters of the window if shorter) and longer than this thread's slowest
/// completion of the window: a server that stopped answering, not a slow
/// one whose requests the window's end caught mid-flight. Counted in the
/// window's last second.
fn count_unfinished(l: &mut Local, shared: &Shared) {
    let (warm_end, end) = (shared.warm_end(), shared.window_end());
    let window = end.saturating_duration_since(warm_end);
    if window.is_zero() {
        return;
    }
    // Every request still out is recorded with its age, whatever the
    // window's length; only the long-waiting ones below are errors.
    l.stats.outstanding_ms = l.in_flight.iter().flatten().map(|t0| end.saturating_duration_since(*t0).as_secs_f64() * 1e3).collect();
    let slowest = l.stats.seconds.iter().filter_map(|s| s.latency.quantile_ms(1.0)).fold(0.0, f64::max);
    // 1 s, or three quarters of a shorter window:
    // beside a CPU hog an fsync or a starved client's read takes a few
    // hundred ms, which half of a 0.5 s window called a server that stopped
    // answering. Every request still out is in `outstanding_ms` above, with
    // its age, however short.
    let after = UNFINISHED_AFTER.min(window.mul_f64(0.75)).max(Duration::from_secs_f64(slowest / 1e3));
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
