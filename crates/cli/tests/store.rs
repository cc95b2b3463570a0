//! The store keeps finished steps whatever happens to the run, and refuses
//! files that are not stores without touching them.

mod common;

use common::*;
use std::time::{Duration, Instant};

fn spawn_sweep(store: &std::path::Path, concurrency: &str) -> std::process::Child {
    bin()
        .arg("--store")
        .arg(store)
        .args(["sweep", "--work-us", "50", "-c", concurrency, "--warmup", "0.1s", "--duration", "0.4s", "--pause", "0.1s", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_keeps_finished_steps_and_marks_the_run_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let mut child = spawn_sweep(&store, "1,2,3,4,5,6,7,8");
    wait_for_steps(&store, 2);
    let specimens_before = scalelab_testkit::children_of(child.id() as i32);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let run = json(&store, &["show", "last", "--json"]);
    assert_eq!(run["complete"], false);
    assert!(run["outcome"].is_null(), "a killed run never wrote an outcome");
    let s = steps(&run);
    assert!(s.len() >= 2 && s.len() < 8, "{} steps", s.len());
    // Each kept step finished its window (beside a CPU hog a starved step
    // may have completed nothing: kept all the same, as measured).
    for step in s {
        assert!(step["partial"] == false && step["window_s"].as_f64().unwrap() > 0.0, "{step}");
    }
    let table = run_text(&store, &["runs"]);
    assert!(table.contains("incomplete"), "{table}");
    // The specimen child dies with its parent.
    std::thread::sleep(Duration::from_millis(300));
    for pid in specimens_before {
        assert!(!scalelab_testkit::pid_alive(pid), "specimen {pid} outlived a killed sweep");
    }
}

#[test]
fn sigint_stores_the_partial_step_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let child =
        spawn(&store, &["sweep", "--work-us", "50", "-c", "1,2,3", "--warmup", "0.1s", "--duration", "3s", "--pause", "0.1s", "-q"]);
    wait_for_steps(&store, 1);
    std::thread::sleep(Duration::from_millis(700)); // into step 2's window
                                                    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "SIGINT must stop within the current second");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let run = json(&store, &["show", "last", "--json"]);
    assert_eq!(run["complete"], false);
    assert_eq!(run["outcome"], "interrupted");
    let s = steps(&run);
    assert_eq!(s.len(), 2);
    assert_eq!(s[1]["partial"], true);
    let w = s[1]["window_s"].as_f64().unwrap();
    assert!(w > 0.0 && w < 3.0 && (w - w.round()).abs() < 0.01, "partial window ends on a whole second: {w}");
}

fn run_text(store: &std::path::Path, args: &[&str]) -> String {
    let out = run(store, args);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_file_that_is_not_a_store_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    let text = "my precious notes, not a database\n".repeat(200);
    std::fs::write(&notes, &text).unwrap();
    let out = run(&notes, &["sweep", "-c", "1", "--duration", "0.2s", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is not a scalelab store"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), text);

    let other = dir.path().join("other.db");
    {
        let c = rusqlite_like_other_db(&other);
        assert!(c);
    }
    let before = std::fs::read(&other).unwrap();
    let out = run(&other, &["runs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a scalelab store") && stderr(&out).contains("invoices"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&other).unwrap(), before);
}

/// Makes an SQLite file of some other application (via the store crate's
/// raw access on a fresh file, then renaming its table away).
fn rusqlite_like_other_db(path: &std::path::Path) -> bool {
    let s = scalelab_store::Store::create_at_version(path, 0).unwrap();
    s.execute_raw("CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 9.5);").unwrap();
    drop(s);
    true
}

#[test]
fn unwritable_store_is_bad_input() {
    let out = run(std::path::Path::new("/proc/scalelab-cannot-write-here/s.db"), &["sweep", "-c", "1", "--duration", "0.2s", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("error: cannot open store"), "{err}");
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn bad_flag_values_are_one_line_errors_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    drop(scalelab_store::Store::open(&store).unwrap()); // an empty store exists
    for (args, needle) in [
        (vec!["sweep", "-c", "1,0"], "--concurrency"),
        (vec!["sweep", "--duration", "fast"], "--duration"),
        (vec!["sweep", "ftp://127.0.0.1/"], "scheme must be http or https"),
        (vec!["sweep", "--threads", "0"], "--threads"),
        (vec!["sweep", "--client-slice-us", "50"], "--client-slice-us must be 0"),
        (vec!["sweep", "--expect-status", "2zz"], "expected status"),
        (vec!["sweep", "-H", "NoColon"], "invalid header"),
        (vec!["show", "999"], "no run matches '999'"),
    ] {
        let out = run(&store, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn printing_into_a_closed_pipe_ends_quietly_like_cat() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = run(&store, &["sweep", "--work-us", "50", "-c", "1,2", "--warmup", "0", "--duration", "0.3s", "--pause", "0", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for args in [vec!["runs"], vec!["show", "last"], vec!["diagnose", "last"], vec!["export", "last"]] {
        // `scalelab show last | head -0`: the reader is gone before the first write.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = bin().arg("--store").arg(&store).args(&args).stdout(writer).output().unwrap();
        assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{args:?}: {:?} {}", out.status, stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}: no panic, no message");
    }
}

#[test]
fn the_run_records_how_the_client_threads_were_scheduled() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", "--work-us", "50", "-c", "1,2", "--warmup", "0", "--duration", "0.3s", "--pause", "0", "-q", "--json"];
        args.extend_from_slice(extra);
        json(&store, &args)["schedule"]["options"].clone()
    };
    // Linux 6.12+ keeps a per-thread slice; before, none is granted or recorded.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release.trim().split(|c: char| !c.is_ascii_digit()).map(|x| x.parse::<u32>().unwrap_or(0));
    let custom = (v.next().unwrap(), v.next().unwrap_or(0)) >= (6, 12);
    let o = sweep(&[]);
    assert!(o.get("client_slice_us").is_none(), "the kernel's slice by default: {o}");
    assert!(!run_text(&store, &["show", "last"]).contains("slice"));
    let o = sweep(&["--client-slice-us", "100"]);
    assert_eq!(o["client_slice_us"].as_u64(), custom.then_some(100), "{o}");
    if custom {
        assert!(run_text(&store, &["show", "last"]).contains(", 100 µs slice"));
    }
    let o = sweep(&["--client-slice-us", "250", "--no-pin"]);
    assert_eq!(o["client_slice_us"].as_u64(), custom.then_some(250), "{o}");
    assert_eq!(o["client_threads_bound"], false, "{o}");
}
