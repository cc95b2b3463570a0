//! One virtual client's request loop: send, wait for the reply, record it
//! by its completion time, pause as the schedule says, again until the
//! window's end.

use super::schedule::Schedule;
use super::state::{Local, Shared};
use crate::driver::Client;
use scalelab_core::result::Failure;
use scalelab_core::LatencyHistogram;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs `client` (slot `slot` of its thread) until the window's end.
pub(super) async fn client_loop<C: Client>(mut client: C, slot: usize, local: Rc<RefCell<Local>>, shared: Arc<Shared>, schedule: Schedule) {
    let think = schedule.pause_after_reply();
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
        let failed_connect = record(&mut client, slot, &outcome, (t1, t1 - t0), &local, &shared, &mut reconnects).1;
        if outcome.is_ok() {
            backoff = Duration::ZERO;
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
    hold(client).await
}

/// Keeps a client's connection open, doing nothing, until the step's tasks
/// are dropped: every thread counts its requests still out at the window's
/// end first. A client that hung up at once would let a server that serves
/// one connection at a time (a pool) answer another client's request that
/// was waiting, which then looks served.
pub(super) async fn hold<C>(_client: C) {
    std::future::pending::<()>().await
}

/// Records one finished call of the client in `slot` by its completion time
/// `t1`, with `latency` (`done` = (t1, latency)); returns (whether it fell
/// in the window, whether it failed to connect).
pub(super) fn record<C: Client>(
    client: &mut C,
    slot: usize,
    outcome: &Result<u32, Failure>,
    done: (Instant, Duration),
    local: &RefCell<Local>,
    shared: &Shared,
    reconnects: &mut u64,
) -> (bool, bool) {
    let (t1, latency) = done;
    let warm_end = shared.warm_end();
    let recorded = t1 >= warm_end && t1 < shared.window_end();
    let mut failed_connect = false;
    let mut l = local.borrow_mut();
    l.finished += 1;
    if let Some(poller) = l.poller.take() {
        poller.wake();
    }
    let sec = if recorded { ((t1 - warm_end).as_secs() as usize).min(l.stats.seconds.len() - 1) } else { 0 };
    match outcome {
        Ok(statements) => {
            shared.completions.fetch_add(1, Ordering::Relaxed);
            if recorded {
                if let Some(n) = l.stats.completions.get_mut(slot) {
                    *n += 1;
                }
                let s = &mut l.stats.seconds[sec];
                s.requests += 1;
                s.latency.record(latency);
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
    if let Some(times) = client.connect_times() {
        if recorded {
            times.iter().for_each(|d| l.stats.connect_latency.record(*d));
        }
        times.clear();
    }
    if let Some(wait) = client.take_flow_wait() {
        let flow = l.stats.flow.get_or_insert((0, Duration::ZERO));
        if recorded && !wait.is_zero() {
            flow.0 += 1;
            flow.1 += wait;
        }
    }
    let r = client.reconnects();
    if recorded {
        l.stats.reconnects += r - *reconnects;
    }
    *reconnects = r;
    (recorded, failed_connect)
}

fn is_connect_failure(f: &Failure) -> bool {
    use scalelab_core::ErrorClass::*;
    // FdLimit: an EMFILE storm would otherwise spin at 300k+ errors/s and
    // starve the probes.
    matches!(f.class, ConnectRefused | ConnectTimeout | TooManyConnections | FdLimit)
}
