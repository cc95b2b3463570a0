//! Verdicts about the server need the server's own figures to agree: real
//! sweeps where the machine is busy (or the sockets pile up) for reasons that
//! are not the server's.

mod common;

use common::*;
use std::process::{Child, Command, Stdio};

/// Busy-loop processes, one per core, killed (by their own pid) when dropped.
struct Hogs(Vec<Child>);

impl Hogs {
    fn start(n: usize) -> Hogs {
        Hogs(
            (0..n)
                .map(|_| Command::new("sh").args(["-c", "while :; do :; done"]).stdout(Stdio::null()).spawn().expect("starting a CPU hog"))
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_cpu_hog_beside_an_idle_specimen_is_not_a_cpu_bound_server() {
    let _cpu = cpu_exclusive();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let _hogs = Hogs::start(cores);
    // Clients that think 20 ms between requests: a few hundred req/s, the
    // specimen at a few % of one core while the hogs fill every core.
    let run = json(
        &store,
        &["sweep", "-c", "1,2,4,8", "--think-time", "20ms", "--warmup", "0.3s", "--duration", "2s", "--pause", "0.2s", "--json", "-q"],
    );
    drop(_hogs);
    let id = run["id"].as_i64().unwrap().to_string();
    let d = json(&store, &["diagnose", &id, "--json"]);
    let verdicts = d["verdicts"].as_array().unwrap();
    let kinds: Vec<&str> = verdicts.iter().map(|v| v["kind"].as_str().unwrap()).collect();
    assert!(!kinds.iter().any(|k| k.starts_with("cpu-bound")), "the server was blamed for the hogs' CPU: {d}");
    assert!(!kinds.contains(&"lock-contention") && !kinds.contains(&"single-hot-thread"), "{d}");
    let elsewhere = verdicts.iter().find(|v| v["kind"] == "cpu-busy-elsewhere").unwrap_or_else(|| panic!("no cpu-busy-elsewhere: {d}"));
    assert!(elsewhere["headline"].as_str().unwrap().contains("other processes"), "{elsewhere}");
    let figure = |name: &str| {
        elsewhere["evidence"].as_array().unwrap().iter().find(|e| e["name"] == name).and_then(|e| e["value"].as_f64()).unwrap()
    };
    assert!(figure("server CPU") < 20.0, "{elsewhere}");
    assert!(figure("other processes CPU") > 50.0 * cores as f64, "{elsewhere}");
}

/// Leaves `n` sockets in TIME_WAIT from short connections to a throwaway
/// loopback listener (one per connection, on whichever end closed first),
/// on several threads.
fn time_waits_elsewhere(n: usize) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        for _ in 0..n {
            drop(listener.accept().unwrap());
        }
    });
    let per = n.div_ceil(4);
    let clients: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                for _ in (i * per)..((i + 1) * per).min(n) {
                    drop(std::net::TcpStream::connect(addr).unwrap());
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    server.join().unwrap();
}

#[test]
fn time_wait_toward_another_port_is_no_port_exhaustion_of_a_keepalive_run() {
    let _cpu = cpu_exclusive();
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
    let (lo, hi) = range.split_once(char::is_whitespace).unwrap();
    let size = hi.trim().parse::<usize>().unwrap() + 1 - lo.trim().parse::<usize>().unwrap();
    // 120 % of the range, over three other ports: above the verdict's 70 %
    // even when loopback's tcp_tw_reuse recycles some, and they last 60 s.
    let makers: Vec<_> = (0..3).map(|_| std::thread::spawn(move || time_waits_elsewhere(size * 2 / 5))).collect();
    for m in makers {
        m.join().unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let run = json(&store, &["sweep", "-c", "1,2,4", "--warmup", "0.2s", "--duration", "1s", "--pause", "0.1s", "--json", "-q"]);
    let id = run["id"].as_i64().unwrap().to_string();
    let shown = json(&store, &["show", &id, "--json"]);
    let step = &shown["steps"][2]["telemetry"];
    // Machine-wide the earlier sockets are there (what the verdict used to
    // count). On a machine so busy that making them took close to their 60 s
    // lifetime, fewer are left: the checks below still hold, but then they
    // would have held before the fix too, so say so.
    let machine_wide = step["tcp_time_wait"].as_u64().unwrap() as f64;
    if machine_wide < 0.7 * size as f64 {
        eprintln!("note: only {machine_wide} TIME_WAIT sockets machine-wide (< 70 % of {size}): a busy machine; the test is weaker this time");
    }
    // ... toward this run's server, none of them.
    assert!(step["tcp_time_wait_to_target"].as_u64().unwrap() < 100, "{step}");
    let d = json(&store, &["diagnose", &id, "--json"]);
    let kinds: Vec<&str> = d["verdicts"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"port-exhaustion"), "{d}");
}
