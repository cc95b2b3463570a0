//! The target's own listener (issue 35): the accept-overflow verdict holds
//! when the target's accept queue is full, and does not fire when another
//! listener in the same network namespace overflows during the run (the
//! kernel's ListenOverflows counter is the namespace's, not the target's).

mod common;

use common::*;
use socket2::{Domain, Socket, Type};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A listener on a free loopback port with an accept queue of `backlog`.
fn listener(backlog: i32) -> TcpListener {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into()).unwrap();
    s.listen(backlog).unwrap();
    s.into()
}

#[test]
fn a_full_accept_queue_of_the_target_is_named() {
    let _cpu = cpu_exclusive();
    // An HTTP server with a queue of 1 that accepts one connection every
    // 20 ms: 8 clients opening a connection per request keep it full.
    let server = listener(1);
    let addr = server.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let t = std::thread::spawn(move || {
        server.set_nonblocking(true).unwrap();
        let end = Instant::now() + Duration::from_secs(60);
        while !s.load(Ordering::Relaxed) && Instant::now() < end {
            if let Ok((mut c, _)) = server.accept() {
                c.set_nonblocking(false).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
                let mut buf = [0u8; 2048];
                let _ = c.read(&mut buf);
                let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = format!("http://{addr}/");
    let run = json(
        &store,
        &[
            "sweep",
            &url,
            "--no-keepalive",
            "-c",
            "8",
            "--warmup",
            "0.5s",
            "-d",
            "3s",
            "--sample-interval",
            "250ms",
            "--timeout",
            "5s",
            "--json",
            "-q",
        ],
    );
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
    let tel = &steps(&run)[0]["telemetry"];
    assert_eq!(tel["listen_backlog"], 1, "the target's own listener was sampled: {tel}");
    assert!(tel["listen_queue_max"].as_u64().unwrap() >= 1, "{tel}");
    assert!(verdict_kinds(&run).contains(&"accept-overflow".to_string()), "{:?}: {tel}", verdict_kinds(&run));
    let v = run["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "accept-overflow").unwrap();
    assert!(v["headline"].as_str().unwrap().starts_with("the target's listen queue is full"), "{v}");
}

#[test]
fn another_listener_overflowing_is_not_the_targets_overflow() {
    let _cpu = cpu_exclusive();
    // A decoy in the same namespace: a queue of 1 that is never accepted,
    // and a thread opening connections to it for the whole run, each one
    // beyond the queue an overflow the kernel counts machine-wide.
    let decoy = listener(1);
    let decoy_addr = decoy.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let flood = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(60);
        let mut open = Vec::new();
        while !s.load(Ordering::Relaxed) && Instant::now() < end {
            for _ in 0..20 {
                let c = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
                c.set_nonblocking(true).unwrap();
                let _ = c.connect(&decoy_addr.into());
                open.push(c);
            }
            // Bounded: at most a few hundred half-open sockets at a time.
            if open.len() > 400 {
                open.drain(..200);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let run = json(
        &store,
        &["sweep", "--specimen", "scales", "-c", "2", "--warmup", "0.5s", "-d", "3s", "--sample-interval", "250ms", "--json", "-q"],
    );
    stop.store(true, Ordering::Relaxed);
    flood.join().unwrap();
    drop(decoy);
    let tel = &steps(&run)[0]["telemetry"];
    // The namespace's counters saw the decoy's overflows ...
    let machine = tel["listen_overflows_per_s"].as_f64().unwrap_or(0.0).max(tel["listen_drops_per_s"].as_f64().unwrap_or(0.0));
    assert!(machine >= 1.0, "the decoy overflowed: {tel}");
    // ... while the target's own queue had room: no accept-overflow verdict.
    let (q, b) = (tel["listen_queue_max"].as_u64().unwrap(), tel["listen_backlog"].as_u64().unwrap());
    assert!(q < b, "the specimen's queue: {q} of {b}");
    assert!(!verdict_kinds(&run).contains(&"accept-overflow".to_string()), "{:?}: {tel}", verdict_kinds(&run));
}
