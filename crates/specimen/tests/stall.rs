//! The `stall` mode stops answering for `stall_for` every `stall_every`,
//! and answers at once the rest of the time.

use scalelab_specimen::{serve, Mode, SpecimenConfig};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

#[test]
fn the_stall_mode_stops_answering_for_its_stall_then_answers_at_once() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let config = SpecimenConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            mode: Mode::Stall,
            work_us: 10,
            data_dir: None,
            stall_for: Duration::from_millis(150),
            stall_every: Duration::from_millis(500),
            workers: scalelab_specimen::DEFAULT_WORKERS,
            fix: false,
        };
        let _ = serve(config, |addr| tx.send(addr).unwrap());
    });
    let addr = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    // One request after another for 1.2 s: more than two periods.
    let (start, mut times) = (Instant::now(), Vec::new());
    while start.elapsed() < Duration::from_millis(1200) {
        let t0 = Instant::now();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut buf = [0u8; 4096];
        let mut got = Vec::new();
        while !got.ends_with(b"specimen stall 200\n") {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "the specimen closed the connection");
            got.extend_from_slice(&buf[..n]);
        }
        times.push(t0.elapsed());
    }
    let slow: Vec<&Duration> = times.iter().filter(|t| **t >= Duration::from_millis(50)).collect();
    // Two stalls began within 1.2 s (at 350 ms and 850 ms): a lone client
    // waits through each once; a loaded machine may add a slow reply or two.
    assert!((2..=6).contains(&slow.len()), "{} slow replies of {}: {slow:?}", slow.len(), times.len());
    assert!(slow.iter().all(|t| **t <= Duration::from_millis(400)), "no reply waits past a stall: {slow:?}");
    assert!(times.iter().max().unwrap() >= &Duration::from_millis(100), "a request that met a stall waited for most of it");
    assert!(times.len() > 50, "outside the stalls it answers at once: {} replies", times.len());
}
