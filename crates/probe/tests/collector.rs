//! The collector on a real process: a `sleep` child spawned here is the
//! server; typed samples of the machine, the process and its threads come on
//! the channel, and the child's exit is reported as a note.

use scalelab_probe::{Collector, CollectorConfig, Record, Sample, Source};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Drains `c` until `done` holds over what came so far, or `limit` passes.
fn collect_until(c: &Collector, got: &mut Vec<Record>, limit: Duration, done: impl Fn(&[Record]) -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        got.extend(c.drain());
        if done(got) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_collector_sends_typed_system_process_and_thread_samples_of_a_child_and_notes_its_exit() {
    let mut child = Command::new("sleep").arg("30").stdin(Stdio::null()).spawn().expect("spawning sleep");
    let pid = child.id();
    let c = Collector::start(CollectorConfig {
        server_pid: Some(pid),
        interval: Duration::from_millis(200),
        thread_hz: 20.0,
        db: None,
        specimen: None,
        redis: None,
    });
    let mut got = Vec::new();
    let two_of_each = |r: &[Record]| {
        let system = r.iter().filter(|r| matches!(r, Record::Sample(Sample::System(_)))).count();
        let process = r.iter().filter(|r| matches!(r, Record::Sample(Sample::Process(_)))).count();
        let threads = r.iter().filter(|r| matches!(r, Record::Sample(Sample::Threads(_)))).count();
        system >= 2 && process >= 2 && threads >= 2
    };
    let arrived = collect_until(&c, &mut got, Duration::from_secs(10), two_of_each);
    assert!(arrived, "two system, process and thread samples within 10 s; got {} records", got.len());

    let system: Vec<_> = got.iter().filter_map(|r| if let Record::Sample(Sample::System(s)) = r { Some(s) } else { None }).collect();
    assert!(system[0].at.unix_ms > 0 && system[1].at.monotonic_ns > system[0].at.monotonic_ns, "timestamped, in order");
    assert!(system[0].cpu.is_some(), "/proc/stat read");
    let process: Vec<_> = got.iter().filter_map(|r| if let Record::Sample(Sample::Process(p)) = r { Some(p) } else { None }).collect();
    assert!(process.iter().all(|p| p.pid == pid && p.alive), "the child's samples");
    assert_eq!(process[0].threads, Some(1), "sleep has one thread");
    assert!(process[0].rss_kib.is_some_and(|k| k > 0));

    // The server goes away: the thread sampler says so once, process samples go on (not alive).
    child.kill().unwrap();
    child.wait().unwrap();
    let exited = |r: &[Record]| {
        r.iter().any(|r| matches!(r, Record::Unavailable(Source::Threads, why) if why == "the server process exited"))
            && r.iter().any(|r| matches!(r, Record::Sample(Sample::Process(p)) if !p.alive))
    };
    let noted = collect_until(&c, &mut got, Duration::from_secs(10), exited);
    assert!(noted, "the exit noted within 10 s: {:?}", got.iter().filter(|r| matches!(r, Record::Unavailable(..))).collect::<Vec<_>>());

    // stop() joins the threads and hands back what was left; nothing comes after.
    let last = c.stop();
    assert!(last.len() < 100, "what was left is the last few readings, not a backlog: {}", last.len());
}
