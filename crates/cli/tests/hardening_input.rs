//! Hostile and unlucky input (issue 18): planted symlinks, credentials in
//! URLs, header injection, control characters and markup from servers and
//! users, options that do not apply, unusable stores. Each test drives the
//! real binary.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::symlink;
use std::path::Path;

/// Sends one request and returns the response body.
fn http_get(addr: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.split("\r\n\r\n").nth(1).unwrap_or_default().to_string()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A local user who could guess the disk mode's old path
/// (`$TMPDIR/scalelab-specimen-PID/specimen-disk.log`) planted a folder with
/// a symlink to a victim file for every PID the specimen could get: the
/// specimen must neither follow it nor use the folder, and must leave
/// nothing in `$TMPDIR` while it runs or after it exits.
#[test]
fn specimen_disk_mode_follows_no_planted_symlink_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let tmpdir = tmp.path().join("tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid").unwrap().trim().parse().unwrap();
    let planted = last + 1..last + 3000;
    for pid in planted.clone() {
        let d = tmpdir.join(format!("scalelab-specimen-{pid}"));
        std::fs::create_dir(&d).unwrap();
        symlink(&victim, d.join("specimen-disk.log")).unwrap();
    }
    let before = names_in(&tmpdir);
    let mut child = bin()
        .args(["specimen", "--port", "0", "--mode", "disk", "--work-us", "10"])
        .env("TMPDIR", &tmpdir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(planted.contains(&child.id()), "the specimen's PID {} fell outside the planted range {planted:?}", child.id());
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split_whitespace().nth(2).unwrap_or_else(|| panic!("specimen said {line:?}")).to_string();
    for _ in 0..5 {
        http_get(&addr, "/");
    }
    let stats: serde_json::Value = serde_json::from_str(&http_get(&addr, "/__stats")).unwrap();
    let running = names_in(&tmpdir);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(stats["fsyncs"].as_u64(), Some(5), "the disk mode wrote and synced each request: {stats}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "the planted symlink was followed");
    let mine = tmpdir.join(format!("scalelab-specimen-{}", child.id()));
    assert_eq!(names_in(&mine), vec!["specimen-disk.log".to_string()], "the planted folder was used");
    assert_eq!(running, before, "the specimen left a name in $TMPDIR while running");
    assert_eq!(names_in(&tmpdir), before, "the specimen left something in $TMPDIR after exiting");
}
