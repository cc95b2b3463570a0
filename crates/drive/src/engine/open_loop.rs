//! Open loop on one worker thread: a dispatcher starts requests at their
//! intended times whatever the replies, and this thread's connections
//! (its share of `max_in_flight`) send them.
//!
//! A request is accepted when one of the thread's connections is free;
//! otherwise it waits for one, at most the step's latency budget, and is
//! dropped after it (at once when the budget is zero). The client never
//! holds more than `max_in_flight` requests out, nor more than the
//! arrivals of one budget waiting, however far the server falls behind
//! (vegeta's unbounded growth is the failure avoided); a short stall of
//! the server shows as the latency of the requests that waited through it,
//! not as errors. Latency counts from the intended time; service time from
//! the actual send. A dropped request is counted (error class `dropped`)
//! and its wait is recorded in the latency, so the wait it stands for is
//! not omitted.

use super::client_loop::record;
use super::schedule::Arrivals;
use super::state::{Local, Shared};
use crate::driver::Client;
use scalelab_core::result::{Failure, LATE_SEND_AFTER};
use scalelab_core::ErrorClass;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Starts this thread's arrivals until the window's end: each is queued
/// for a free connection (and one is woken), or dropped. Arrivals the
/// client itself was late for (it woke after their time) wait for a
/// connection instead: they are sent late and counted as late sends, not
/// dropped for the server. The arrivals are computed as they come due, so
/// waiting holds no memory.
pub(super) async fn dispatcher(
    mut arrivals: Arrivals,
    local: Rc<RefCell<Local>>,
    shared: Arc<Shared>,
    notify: Rc<Notify>,
    freed: Rc<Notify>,
) {
    let timer = super::precise::PreciseTimer::new();
    // The schedule starts when this task first runs, or at the window's
    // start if the thread was kept off its CPU that long: arrivals due in
    // the window must exist to be sent late or counted as never sent
    // (beside two CPU hogs a dispatcher started late and 14 % of the
    // window's due requests were in no count).
    let start = Instant::now().min(shared.warm_end());
    let mut next = start + arrivals.next().unwrap_or_default();
    // Intended times [from, before) the client overslept: its own lateness,
    // not the wait for a connection (which makes the dispatcher late too).
    let mut owed = (start, start);
    'window: loop {
        let woke = Instant::now();
        let end = shared.window_end();
        if woke >= end {
            break;
        }
        while next <= woke {
            if Instant::now() >= end {
                break 'window;
            }
            let (full, unsent) = {
                let l = local.borrow();
                (l.open.outstanding >= l.open.cap, !l.open.queue.is_empty())
            };
            local.borrow_mut().open.unstarted = Some((start, next, arrivals.clone()));
            if full && unsent {
                // Accepted requests not yet picked up hold free connections:
                // let them be sent before judging whether all are out.
                tokio::task::yield_now().await;
                continue;
            }
            if full && owed.0 <= next && next < owed.1 {
                let _ = tokio::time::timeout_at(end.into(), freed.notified()).await;
                continue;
            }
            if arrive(&mut local.borrow_mut(), &shared, next) {
                notify.notify_one();
            }
            next = start + arrivals.next().unwrap_or_default();
        }
        let due = next.min(end).max(Instant::now());
        local.borrow_mut().open.unstarted = Some((start, next, arrivals.clone()));
        timer.sleep_until(next.min(end)).await;
        let woke = Instant::now();
        if woke > due + LATE_SEND_AFTER {
            owed = (due, woke - LATE_SEND_AFTER);
        }
    }
    local.borrow_mut().open.unstarted = Some((start, next, arrivals));
}

/// The window ended: every arrival due in it that was never sent is
/// counted, so that the offered load adds up. Those dropped while every
/// connection was busy as dropped (the server's doing); those the client
/// itself never got to (accepted but not picked up, or never started by a
/// dispatcher behind its schedule: `--rate` beyond what this client can
/// send) as dropped and never sent by the client. Each is recorded with
/// its lateness at the window's end, as the dropped are.
/// Called once the thread's tasks are gone.
pub(super) fn never_sent(l: &mut Local, shared: &Shared) {
    let (warm_end, end) = (shared.warm_end(), shared.window_end());
    end_drops(l, shared, end);
    expire(l, shared, end);
    still_waiting(l, shared);
    let queue: Vec<Instant> = std::mem::take(&mut l.open.queue).into_iter().map(|(t, _)| t).collect();
    let Some((start, next, arrivals)) = l.open.unstarted.take() else { return };
    if end <= warm_end {
        return;
    }
    let sec = l.stats.seconds.len() - 1;
    let in_window = |t: &Instant| *t >= warm_end && *t < end;
    let queued: Vec<Instant> = queue.into_iter().filter(in_window).collect();
    for t in &queued {
        l.stats.seconds[sec].latency.record(end - *t);
    }
    // Arrivals not yet started: `next`, then the rest up to the window's
    // end, their lateness spread evenly from the first's down to 0.
    let from = next.max(warm_end);
    let mut later = u64::from(in_window(&next));
    if from < end {
        later += arrivals.remaining_in((from - start).as_secs_f64(), (end - start).as_secs_f64());
    }
    if later > 0 {
        let oldest = end - from;
        let buckets = later.min(1000);
        for b in 0..buckets {
            let n = later / buckets + u64::from(b < later % buckets);
            let lateness = oldest.mul_f64(1.0 - (b as f64 + 0.5) / buckets as f64);
            l.stats.seconds[sec].latency.record_n(lateness, n);
        }
    }
    let n = queued.len() as u64 + later;
    if n == 0 {
        return;
    }
    // A few, due in the last moments of a window the dispatcher woke late
    // for, are a busy machine's edge; many are a rate beyond the client
    // (then its late sends flag it too).
    let message = "due in the window but never sent: the client fell behind its own schedule by the window's end (when many, the offered rate is beyond this client: give it more cores or lower --rate)";
    count_dropped(l, shared, sec, message, n);
}

/// Requests still waiting for a connection when the window ended: dropped,
/// the server's doing (every connection had a request out), each with its
/// wait until the window's end in the latency, by the window's last second.
fn still_waiting(l: &mut Local, shared: &Shared) {
    let (warm_end, end) = (shared.warm_end(), shared.window_end());
    let waiting = std::mem::take(&mut l.open.waiting);
    if end <= warm_end {
        return;
    }
    let sec = l.stats.seconds.len() - 1;
    let mut n = 0;
    for t in waiting.into_iter().filter(|t| *t >= warm_end && *t < end) {
        l.stats.seconds[sec].latency.record(end - t);
        n += 1;
    }
    if n > 0 {
        let message =
            format!("still waiting for one of the {} busy connections of a client thread when the window ended: never sent", l.open.cap);
        count_dropped(l, shared, sec, &message, n);
    }
}

/// Drops the waiting requests that have waited longer than the budget by
/// `now`, each with its wait in the latency, by `now`'s second of the
/// window (none outside it, as requests complete).
fn expire(l: &mut Local, shared: &Shared, now: Instant) {
    let budget = l.open.budget;
    let (warm_end, end) = (shared.warm_end(), shared.window_end());
    let counted = now >= warm_end && now <= end;
    let sec = if counted { ((now - warm_end).as_secs() as usize).min(l.stats.seconds.len() - 1) } else { 0 };
    let mut n = 0;
    while let Some(&t) = l.open.waiting.front() {
        if now.saturating_duration_since(t) <= budget {
            break;
        }
        l.open.waiting.pop_front();
        if counted {
            l.stats.seconds[sec].latency.record(now - t);
            n += 1;
        }
    }
    if n > 0 {
        let message = format!(
            "waited the latency budget ({:?}) for one of the {} busy connections of a client thread (--latency-budget, --max-in-flight): never sent",
            budget, l.open.cap
        );
        count_dropped(l, shared, sec, &message, n);
    }
}

/// Counts `n` dropped requests in second `sec` (their latency is recorded by the caller).
fn count_dropped(l: &mut Local, shared: &Shared, sec: usize, message: &str, n: u64) {
    l.stats.seconds[sec].errors += n;
    l.stats.errors.add_n(&Failure::new(ErrorClass::Dropped, message), n);
    l.stats.dropped += n;
    shared.errors.fetch_add(n, Ordering::Relaxed);
}

/// One arrival due at `intended`: accepted (queued; true) while fewer than
/// the thread's connections have a request; else it waits for one (with a
/// latency budget) or is dropped (the dispatcher calls it with every
/// accepted request sent, so "all have one out").
fn arrive(l: &mut Local, shared: &Shared, intended: Instant) -> bool {
    let d = &mut l.open;
    if d.outstanding < d.cap {
        d.outstanding += 1;
        d.queue.push_back((intended, false));
        return true;
    }
    if !d.budget.is_zero() {
        d.waiting.push_back(intended);
        expire(l, shared, Instant::now());
        return false;
    }
    d.drops = Some(match d.drops {
        Some((first, _, n)) => (first, intended, n + 1),
        None => (intended, intended, 1),
    });
    false
}

/// A connection came free at `at`: the requests dropped since they were all
/// busy are counted, each with its lateness until now (spread evenly from
/// the first's to the last's), by this time's second of the window.
pub(super) fn end_drops(l: &mut Local, shared: &Shared, at: Instant) {
    let Some((first, last, n)) = l.open.drops.take() else { return };
    let (warm_end, end) = (shared.warm_end(), shared.window_end());
    if at < warm_end || at > end {
        return;
    }
    let sec = ((at - warm_end).as_secs() as usize).min(l.stats.seconds.len() - 1);
    let oldest = at.saturating_duration_since(first);
    let newest = at.saturating_duration_since(last);
    let step = if n > 1 { (oldest - newest) / (n - 1).min(u64::from(u32::MAX)) as u32 } else { Duration::ZERO };
    let s = &mut l.stats.seconds[sec];
    for i in 0..n {
        s.latency.record(oldest.saturating_sub(step * i.min(u64::from(u32::MAX)) as u32));
    }
    let message = format!(
        "scheduled while all {} connections of a client thread had a request out (--max-in-flight reached, --latency-budget 0): never sent",
        l.open.cap
    );
    count_dropped(l, shared, sec, &message, n);
}

/// One connection: takes the next accepted request, sends it, records its
/// latency from the intended time and its service time from the send.
pub(super) async fn connection_loop<C: Client>(
    mut client: C,
    slot: usize,
    local: Rc<RefCell<Local>>,
    shared: Arc<Shared>,
    notify: Rc<Notify>,
    freed: Rc<Notify>,
) {
    let mut reconnects = client.reconnects();
    loop {
        let (intended, waited) = loop {
            if Instant::now() >= shared.window_end() {
                return super::client_loop::hold(client).await;
            }
            if let Some(next) = local.borrow_mut().open.queue.pop_front() {
                break next;
            }
            notify.notified().await;
        };
        let t0 = Instant::now();
        local.borrow_mut().in_flight[slot] = Some(t0);
        let outcome = client.call().await;
        let t1 = Instant::now();
        {
            let mut l = local.borrow_mut();
            l.in_flight[slot] = None;
            l.open.outstanding -= 1;
            end_drops(&mut l, &shared, t1);
            // The oldest request still within its budget takes the freed
            // connection (this task picks it up next).
            expire(&mut l, &shared, t1);
            if let Some(t) = l.open.waiting.pop_front() {
                l.open.outstanding += 1;
                l.open.queue.push_back((t, true));
            }
        }
        freed.notify_one();
        let (recorded, _) = record(&mut client, slot, &outcome, (t1, t1 - intended), &local, &shared, &mut reconnects);
        if recorded {
            let mut l = local.borrow_mut();
            if outcome.is_ok() {
                // By its completion's second, as `record` files its latency.
                let sec = ((t1 - shared.warm_end()).as_secs() as usize).min(l.stats.seconds.len() - 1);
                l.stats.seconds[sec].service.record(t1 - t0);
            }
            // A connection was free for it: a late send is the client's own
            // delay. One that waited for a connection was late by the server's.
            if !waited && t0.saturating_duration_since(intended) > LATE_SEND_AFTER {
                l.stats.late_sends += 1;
            }
        }
    }
}
