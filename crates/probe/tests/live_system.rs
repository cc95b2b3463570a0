//! The system sampler and the port-owner search on the live machine.

use scalelab_analyze::telemetry::system_rates;
use scalelab_probe::{find_by_port, Roots, SystemSampler};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

#[test]
fn live_system_sample_and_rates() {
    let mut sampler = SystemSampler::new(&Roots::default());
    let a = sampler.sample();
    // Some loopback traffic and CPU between the samples.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let conns: Vec<_> = (0..5).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let b = sampler.sample();

    assert!(a.cpu.as_ref().unwrap().total.is_some());
    let states = a.tcp_states.expect("the first socket scan is never skipped");
    assert!(states.total() > 0 || a.ports.is_some());
    let r = system_rates(&a, &b);
    assert!(r.interval_s > 0.25 && r.interval_s < 5.0, "{}", r.interval_s);
    assert!(r.cpu.is_some() && r.ctxt_per_s.unwrap() > 0.0);
    let tcp = r.tcp.unwrap();
    assert!(tcp.active_opens_per_s.unwrap() > 0.0, "{tcp:?}");
    drop(conns);
}

#[test]
fn samplers_can_move_to_their_own_threads() {
    fn send<T: Send>() {}
    send::<SystemSampler>();
    send::<scalelab_probe::ProcessSampler>();
    send::<scalelab_probe::ThreadSampler>();
}

#[test]
fn finds_this_process_by_its_listening_port() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let found = find_by_port(&Roots::default(), port).unwrap();
    assert_eq!(found.pid, std::process::id());
}
