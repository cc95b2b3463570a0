//! The live view of a sweep, on a real pseudo-terminal (util-linux `script`
//! gives the sweep a pty; keys written to its stdin reach the sweep as typed).

mod common;

use common::{json, run, steps};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Enters the alternate screen (what a full-screen view draws on).
const ALT_SCREEN: &str = "\x1b[?1049h";

/// Runs `scalelab --store STORE ARGS` on a 100x30 pty; once the view has
/// drawn `(text, key)`'s text, writes its key as if typed. Returns the exit
/// code and everything drawn.
fn on_pty(store: &Path, args: &str, key: Option<(&str, &str)>) -> (i32, String) {
    on_pty_sized(store, args, key, (100, 30))
}

/// [`on_pty`] on a pty of `(cols, rows)`.
fn on_pty_sized(store: &Path, args: &str, key: Option<(&str, &str)>, (cols, rows): (u16, u16)) -> (i32, String) {
    let typescript = store.with_extension("typescript");
    let cmd = format!("stty cols {cols} rows {rows}; {} --store {} {args}", env!("CARGO_BIN_EXE_scalelab"), store.display());
    let mut child = Command::new("script")
        .args(["-qfec", &cmd])
        .arg(&typescript)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("util-linux `script` runs the sweep on a pty");
    let mut stdin = child.stdin.take().expect("stdin");
    let start = Instant::now();
    if let Some((text, k)) = key {
        // Waits for what the key must follow (a fixed delay fell inside step 1
        // when a loaded machine started the sweep late), flushed by `script -f`.
        while !visible(&String::from_utf8_lossy(&std::fs::read(&typescript).unwrap_or_default())).contains(text) {
            assert!(start.elapsed() < Duration::from_secs(30), "`{text}` was never drawn");
            std::thread::sleep(Duration::from_millis(50));
        }
        stdin.write_all(k.as_bytes()).expect("typing into the pty");
        stdin.flush().expect("flush");
    }
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting") {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the sweep did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    assert!(status.success() || status.code().is_some(), "script ended by a signal");
    let drawn = String::from_utf8_lossy(&std::fs::read(&typescript).expect("typescript")).into_owned();
    let code = drawn
        .rsplit_once("COMMAND_EXIT_CODE=\"")
        .and_then(|(_, rest)| rest.split('"').next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| status.code().unwrap_or(-1));
    (code, drawn)
}

/// The drawn text with escape sequences (cursor moves skip blank cells)
/// turned into spaces and runs of blanks collapsed: what a reader sees, in order.
fn visible(drawn: &str) -> String {
    let mut out = String::new();
    let mut chars = drawn.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for x in chars.by_ref() {
                    if x.is_ascii_alphabetic() || x == '~' {
                        break;
                    }
                }
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn on_a_terminal_the_live_view_draws_and_q_stops_keeping_finished_steps() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let args = "sweep -c 1,2,4 --warmup 0.3s --duration 1.5s --pause 0.2s";
    // q once step 2 is drawn: step 1 has finished, step 2 is cut.
    let (code, drawn) = on_pty(&store, args, Some(("step 2/3", "q")));
    assert_eq!(code, 130, "q stops the sweep like Ctrl-C: exit 130\n{drawn}");
    assert!(drawn.contains(ALT_SCREEN), "a full-screen view was drawn");
    let seen = visible(&drawn);
    for panel in ["scalelab sweep: specimen:scales", "step 1/3: 1 client", "curve so far", "server threads", "machine", "q or Ctrl-C: stop"]
    {
        assert!(seen.contains(panel), "the live view shows `{panel}`: {seen}");
    }
    assert!(drawn.contains("\x1b[?1049l"), "the terminal is given back (alternate screen left)");
    assert!(drawn.contains("interrupted: run 1 kept"), "the end summary is printed after the view: {drawn}");

    let doc = json(&store, &["show", "last", "--json"]);
    assert_eq!(doc["complete"], false, "an interrupted run is not shown as complete");
    let s = steps(&doc);
    assert!((1..=2).contains(&s.len()), "the finished step (and the cut one) are kept: {}", s.len());
    assert_eq!(s[0]["partial"], false, "step 1 finished before q");
    assert!(s[0]["requests"].as_u64().unwrap() > 0);
}

#[test]
fn no_tui_on_a_terminal_and_a_pipe_give_plain_progress() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let (code, drawn) = on_pty(&store, "sweep -c 1 --warmup 0.2s --duration 0.6s --pause 0s --no-tui", None);
    // A server starved for the whole short window by a busy neighbour answers
    // nothing in it: the run then fails (exit 1) and says why; either way
    // the progress is drawn as plain lines, which is what this test is about.
    assert!(code == 0 || (code == 1 && drawn.contains("nothing succeeded")), "{drawn}");
    assert!(!drawn.contains(ALT_SCREEN), "--no-tui draws no full-screen view");
    assert!(drawn.contains("step 1/1 c=1"), "the progress line is written instead: {drawn}");

    // A terminal of no size (some CI ptys) or too small for the view: lines too.
    for size in [(0, 0), (30, 8)] {
        let (code, drawn) = on_pty_sized(&store, "sweep -c 1 --warmup 0.2s --duration 0.6s --pause 0s", None, size);
        assert!(code == 0 || (code == 1 && drawn.contains("nothing succeeded")), "{drawn}");
        assert!(!drawn.contains(ALT_SCREEN), "no full-screen view on a {size:?} terminal: {drawn}");
        assert!(drawn.contains("step 1/1 c=1"), "plain progress lines instead: {drawn}");
    }

    let out = run(&store, &["sweep", "-c", "1,2", "--warmup", "0.2s", "--duration", "1.2s", "--pause", "0s"]);
    assert!(out.status.success());
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!stderr.contains('\x1b') && !stdout.contains('\x1b'), "nothing drawn when not a terminal: {stderr}");
    assert!(stderr.contains("step 1/2: 1 client\n") && stderr.contains("step 2/2: 2 clients"), "plain lines: {stderr}");
}
