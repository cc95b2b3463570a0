//! The engine's behaviour on drivers made for the test: placement of the
//! worker threads, the context a client is made with, unfinished requests.

use super::*;
use crate::driver::{Client, ClientCtx, Driver};
use scalelab_core::result::Failure;
use scalelab_core::ErrorClass;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

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
    fn client(&self, ctx: ClientCtx) -> MaskClient {
        MaskClient { id: ctx.id, seen: self.seen.clone() }
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
    let opts = EngineOptions { threads, pin_cpus, slice_us, stop: Arc::new(AtomicBool::new(false)), netns: None };
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
    sole: bool,
}

impl Driver for SettleDriver {
    type Client = SettleClient;
    fn client(&self, ctx: ClientCtx) -> SettleClient {
        SettleClient { blocking: self.blocking.clone(), sole: ctx.owns_one_connection }
    }
}

impl Client for SettleClient {
    async fn connect(&mut self) -> Result<(), Failure> {
        let (_ours, theirs) = tokio::net::UnixStream::pair().unwrap();
        let stream = scalelab_wire::stream::Stream::Unix(theirs).settle(self.sole).unwrap();
        self.blocking.lock().unwrap().push(matches!(stream, scalelab_wire::stream::Stream::Blocking(_)));
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
        let opts = EngineOptions { threads, pin_cpus: Vec::new(), slice_us: None, stop: Arc::new(AtomicBool::new(false)), netns: None };
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
    fn client(&self, _ctx: ClientCtx) -> SlowClient {
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
    let opts = EngineOptions { threads: 2, pin_cpus: Vec::new(), slice_us: None, stop: Arc::new(AtomicBool::new(false)), netns: None };
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
