//! `scalelab watch`: probes a server under its own traffic, without load.

mod common;

use common::*;

/// A specimen of its own on a free loopback port, and its address.
fn specimen() -> (std::process::Child, String) {
    start_specimen("scales", "10")
}

#[test]
fn watch_records_a_server_by_port_and_shows_it() {
    let (mut specimen, addr) = specimen();
    let port = addr.rsplit(':').next().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = run(&store, &["watch", "--port", &port, "--duration", "2.6s", "--record", "--label", "idle specimen"]);
    let _ = specimen.kill();
    let _ = specimen.wait();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("pid {}", specimen.id())), "found the specimen by its port: {text}");
    assert!(text.lines().filter(|l| l.ends_with('s') || l.contains('%')).count() >= 2, "per-second rows: {text}");
    let listed = String::from_utf8_lossy(&run(&store, &["runs"]).stdout).into_owned();
    assert!(listed.contains("watch") && listed.contains("idle specimen"), "{listed}");
    let shown = run(&store, &["show", "idle specimen"]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("server threads running"), "{shown}");
    // The specimen was idle: its threads sleep, none is hot.
    assert!(shown.contains("idle"), "{shown}");
}

#[test]
fn watch_of_a_port_nobody_listens_on_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let port = scalelab_testkit::free_port().to_string();
    let out = run(&dir.path().join("s.db"), &["watch", "--port", &port, "--duration", "1s"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn watch_of_a_target_in_any_scheme_finds_the_server_by_its_port() {
    // A server scalelab cannot load but can observe: any scheme names a host
    // and port (tcp://, redis://); the owner of the port is the server.
    let (mut specimen, addr) = specimen();
    let dir = tempfile::tempdir().unwrap();
    let out = run(&dir.path().join("s.db"), &["watch", &format!("tcp://{addr}"), "--duration", "1.5s"]);
    let _ = specimen.kill();
    let _ = specimen.wait();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("watching tcp://{addr} (pid {}", specimen.id())), "{text}");
    // Loading it is refused: scalelab speaks HTTP and SQL only.
    let out = run(&dir.path().join("s.db"), &["sweep", &format!("tcp://{addr}"), "-c", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("scheme must be http or https"), "{}", stderr(&out));
}
