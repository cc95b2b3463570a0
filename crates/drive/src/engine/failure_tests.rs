//! A step whose client threads cannot go on ends at once with the reason,
//! never waits for them: a namespace that is gone, a client that panics
//! while connecting or in the window, a progress callback that panics.
//! Each step runs on a thread of its own and is given 20 s to return.

use super::*;
use crate::driver::{Client, ClientCtx, Driver};
use scalelab_core::result::Failure;
use std::time::{Duration, Instant};

/// Where a client panics.
#[derive(Clone, Copy, PartialEq)]
enum PanicAt {
    Nowhere,
    Connect,
    Call,
}

struct Panicky(PanicAt);

struct PanickyClient(PanicAt, u32);

impl Driver for Panicky {
    type Client = PanickyClient;
    fn client(&self, ctx: ClientCtx) -> PanickyClient {
        PanickyClient(self.0, ctx.id)
    }
}

impl Client for PanickyClient {
    async fn connect(&mut self) -> Result<(), Failure> {
        assert!(self.0 != PanicAt::Connect || self.1 != 1, "client 1 cannot connect");
        Ok(())
    }
    async fn call(&mut self) -> Result<u32, Failure> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert!(self.0 != PanicAt::Call || self.1 != 1, "client 1 broke mid-window");
        Ok(1)
    }
    fn reconnects(&self) -> u64 {
        0
    }
}

/// Runs a 30 s window (so an early end shows) on 2 threads of 4 clients,
/// with `live` called on each tick; the result and how long it took.
fn step_of(at: PanicAt, netns: Option<&str>, live: fn(&LiveTick)) -> (Result<StepResult, EngineError>, Duration) {
    let netns = netns.map(std::path::PathBuf::from);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let plan = StepPlan { concurrency: 4, warmup_s: 0.2, window_s: 30.0, pause_s: 0.0, think_time_s: 0.0, open_loop: None };
        let opts = EngineOptions { netns, ..EngineOptions::new(2) };
        let t0 = Instant::now();
        let r = run_step(&Arc::new(Panicky(at)), &plan, &opts, &mut |t| live(t));
        let _ = tx.send((r, t0.elapsed()));
    });
    rx.recv_timeout(Duration::from_secs(20)).expect("the step still waits 20 s on: hung")
}

#[test]
fn a_namespace_that_is_gone_ends_the_step_with_its_path() {
    let (r, took) = step_of(PanicAt::Nowhere, Some("/run/netns/scalelab-no-such"), |_| {});
    let e = r.unwrap_err();
    assert!(matches!(e, EngineError::NetnsGone { .. }), "{e:?}");
    assert!(e.to_string().starts_with("the client network namespace /run/netns/scalelab-no-such was removed while the run used it"), "{e}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_client_that_panics_while_connecting_ends_the_step_before_its_load() {
    let (r, took) = step_of(PanicAt::Connect, None, |_| {});
    assert_eq!(r.unwrap_err(), EngineError::WorkerPanicked { thread: 1, why: "client 1 cannot connect".into() });
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_client_that_panics_in_the_window_ends_the_step_then() {
    let (r, took) = step_of(PanicAt::Call, None, |_| {});
    assert_eq!(r.unwrap_err(), EngineError::WorkerPanicked { thread: 1, why: "client 1 broke mid-window".into() });
    assert!(took < Duration::from_secs(5), "not the 30 s window: {took:?}");
}

#[test]
fn a_progress_callback_that_panics_ends_the_step() {
    let (r, took) = step_of(PanicAt::Nowhere, None, |t| assert!(t.warming_up, "the observer broke"));
    assert_eq!(r.unwrap_err(), EngineError::Panicked("the observer broke".into()));
    assert!(took < Duration::from_secs(5), "{took:?}");
}
