//! The client network on this machine: a TCP round trip from inside the
//! namespace to a server on the host's loopback pays the delay twice, a
//! rate bounds bytes per second, and nothing is left afterwards. Needs
//! root (the tests say so and fail otherwise: they are the point).

use scalelab_netem::{enter_netns, path_of, ClientNet, NetSpec};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// An echo server on 127.0.0.1 (host side); returns its port.
fn echo_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = [0u8; 65536];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

/// Runs `f` on a thread inside the namespace.
fn inside<T: Send + 'static>(net: &ClientNet, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = net.netns_path();
    std::thread::spawn(move || {
        enter_netns(&path).unwrap();
        f()
    })
    .join()
    .unwrap()
}

#[test]
fn a_round_trip_pays_the_delay_twice_and_the_namespace_is_gone_after() {
    assert!(scalelab_netem::privileged(), "these tests create network namespaces: run them as root");
    let port = echo_server();
    let net = ClientNet::up(&NetSpec::parse("delay=20ms").unwrap(), &[LOOPBACK]).unwrap();
    let name = net.name().to_string();
    assert!(path_of(&name).exists());
    let rtts = inside(&net, move || {
        let t0 = Instant::now();
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let connect = t0.elapsed();
        s.set_nodelay(true).unwrap();
        let mut rtts = vec![connect];
        let mut buf = [0u8; 5];
        for _ in 0..5 {
            let t = Instant::now();
            s.write_all(b"hello").unwrap();
            s.read_exact(&mut buf).unwrap();
            rtts.push(t.elapsed());
        }
        rtts
    });
    for rtt in &rtts {
        assert!(*rtt >= Duration::from_millis(40), "a round trip took {rtt:?} under delay=20ms each way: {rtts:?}");
        assert!(*rtt < Duration::from_millis(400), "{rtts:?}");
    }
    drop(net);
    assert!(!path_of(&name).exists(), "namespace {name} left behind");
    let devs = std::fs::read_to_string("/proc/net/dev").unwrap();
    assert!(!devs.contains(&format!("slnet-{}", std::process::id())), "host device left behind: {devs}");
}

#[test]
fn a_rate_bounds_the_bytes_per_second() {
    assert!(scalelab_netem::privileged(), "these tests create network namespaces: run them as root");
    let port = echo_server();
    let net = ClientNet::up(&NetSpec::parse("rate=400kbit").unwrap(), &[LOOPBACK]).unwrap();
    let (bytes, took) = inside(&net, move || {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut r = s.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            let mut total = 0usize;
            while total < 100_000 {
                total += r.read(&mut buf).unwrap();
            }
            total
        });
        let t0 = Instant::now();
        s.write_all(&[7u8; 100_000]).unwrap();
        let n = reader.join().unwrap();
        (n, t0.elapsed())
    });
    // 100 kB at 50 kB/s takes 2 s at least (headers add to it).
    let rate = bytes as f64 / took.as_secs_f64();
    assert!(rate <= 50_000.0 * 1.05, "{bytes} B echoed in {took:?}: {rate:.0} B/s over a 400 kbit/s link");
    assert!(rate > 50_000.0 * 0.5, "{rate:.0} B/s: far below the link's rate");
}

#[test]
fn a_remote_target_is_refused_before_anything_is_made() {
    let before: Vec<_> = std::fs::read_dir("/run/netns").map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    let e = ClientNet::up(&NetSpec::parse("delay=1ms").unwrap(), &["192.0.2.7".parse().unwrap()]).err().unwrap();
    assert!(e.to_string().contains("192.0.2.7 is not an address of this machine"), "{e}");
    let after: Vec<_> = std::fs::read_dir("/run/netns").map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert_eq!(before, after);
}
