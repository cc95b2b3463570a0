//! The client network on this machine: a TCP round trip from inside the
//! namespace to a server on the host's loopback pays the delay twice, a
//! rate bounds bytes per second, nothing is left afterwards, and the
//! namespace of a live process is never taken for a stale one. Needs root
//! (the tests say so and fail otherwise: they are the point).

use scalelab_netem::{enter_netns, path_of, ClientNet, NetSpec};
use std::io::{BufRead, Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// One test at a time: they watch /run/netns, and each `up` removes the
/// namespaces of processes that are gone.
fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

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
    let _one = exclusive();
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
    let _one = exclusive();
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
    let _one = exclusive();
    let before: Vec<_> = std::fs::read_dir("/run/netns").map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    let e = ClientNet::up(&NetSpec::parse("delay=1ms").unwrap(), &["192.0.2.7".parse().unwrap()]).err().unwrap();
    assert!(e.to_string().contains("192.0.2.7 is not an address of this machine"), "{e}");
    let after: Vec<_> = std::fs::read_dir("/run/netns").map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert_eq!(before, after);
}

/// The other process of the next test (it does nothing when run alone):
/// a client network held up by a program not called scalelab, until its
/// stdin closes or it is killed.
#[test]
#[ignore = "run by a_live_namespace_is_kept_whatever_its_owner_is_called"]
fn holds_a_client_network_until_stdin_closes() {
    if std::env::var_os("SCALELAB_NETEM_HOLDER").is_none() {
        return;
    }
    let net = ClientNet::up(&NetSpec::parse("delay=1ms").unwrap(), &[LOOPBACK]).unwrap();
    println!("up {}", net.name());
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}

/// The holder process, killed (and its namespace deleted) if the test ends first.
struct Holder(Child);

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = Command::new("ip").args(["netns", "del", &format!("scalelab-{}", self.0.id())]).output();
    }
}

/// Liveness is the owner's lock, not its name: the namespace of a live
/// process whose name and command line never say "scalelab" (a binary
/// installed under another name; this test binary) is kept by the next
/// `up`, and removed by it once that process is killed with SIGKILL.
#[test]
fn a_live_namespace_is_kept_whatever_its_owner_is_called() {
    assert!(scalelab_netem::privileged(), "these tests create network namespaces: run them as root");
    let _one = exclusive();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "holds_a_client_network_until_stdin_closes", "--nocapture", "--test-threads", "1"])
        .env("SCALELAB_NETEM_HOLDER", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut holder = Holder(child);
    let theirs = format!("scalelab-{}", holder.0.id());
    let stdout = holder.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let up = format!("up {theirs}");
    loop {
        match rx.recv_timeout(Duration::from_secs(30)) {
            // libtest writes "test NAME ... " before it, on the same line.
            Ok(line) if line.ends_with(&up) => break,
            Ok(_) => {}
            Err(e) => panic!("the holder never said '{up}': {e}"),
        }
    }
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", holder.0.id())).unwrap();
    assert!(!comm.starts_with("scalelab"), "the holder must not be called scalelab: {comm}");
    assert!(path_of(&theirs).exists());

    let net = ClientNet::up(&NetSpec::parse("delay=1ms").unwrap(), &[LOOPBACK]).unwrap();
    assert!(!net.removed_stale().contains(&theirs), "removed the live namespace {theirs}");
    assert!(path_of(&theirs).exists(), "{theirs} of a live process is gone");
    drop(net);

    holder.0.kill().unwrap(); // SIGKILL: no clean-up; its lock goes with it
    holder.0.wait().unwrap();
    assert!(path_of(&theirs).exists(), "a killed process leaves its namespace (the case to clean up)");
    let net = ClientNet::up(&NetSpec::parse("delay=1ms").unwrap(), &[LOOPBACK]).unwrap();
    assert!(net.removed_stale().contains(&theirs), "{:?}", net.removed_stale());
    assert!(!path_of(&theirs).exists());
}

/// A namespace made by a scalelab older than the locks has no lock file:
/// it is kept while a process of its pid lives (one is running its load,
/// perhaps, beside this newer scalelab), and removed once none does.
#[test]
fn a_namespace_without_a_lock_file_is_kept_while_its_pid_lives() {
    assert!(scalelab_netem::privileged(), "these tests create network namespaces: run them as root");
    let _one = exclusive();
    let mut older = Holder(Command::new("sleep").arg("60").spawn().unwrap());
    let theirs = format!("scalelab-{}", older.0.id());
    let out = Command::new("ip").args(["netns", "add", &theirs]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!std::path::Path::new(scalelab_netem::RUN_DIR).join(format!("{theirs}.lock")).exists());

    let net = ClientNet::up(&NetSpec::parse("delay=1ms").unwrap(), &[LOOPBACK]).unwrap();
    assert!(!net.removed_stale().contains(&theirs) && path_of(&theirs).exists(), "removed {theirs} while its pid lives");
    drop(net);
    older.0.kill().unwrap();
    older.0.wait().unwrap();
    let net = ClientNet::up(&NetSpec::parse("delay=1ms").unwrap(), &[LOOPBACK]).unwrap();
    assert!(net.removed_stale().contains(&theirs), "{:?}", net.removed_stale());
    assert!(!path_of(&theirs).exists());
}
