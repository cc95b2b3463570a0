//! Process creation measured from a small helper process, so the figure is
//! the OS's cost and not scalelab's: `fork` copies the parent's page tables
//! and memory map, and scalelab itself (a large binary with a runtime, its
//! heap, its threads' stacks) forks 29–66 % slower than lmbench's small
//! `lat_proc`. The helper is the same executable started afresh
//! (`/proc/self/exe HELPER_ARG MODE...`): a new, single-threaded process
//! that has touched only its start-up pages, as lmbench's is. It answers
//! one request per line on stdin, "N", by forking N times and writing the
//! seconds taken; the parent drives calibration and repeats as for any other
//! figure.
//!
//! The executable must call [`serve_if_helper`] first thing in `main`
//! (`scalelab` and the `micro` example do). A program that does not (a test
//! harness) answers with something else than the greeting, and the figure
//! is measured in-process with a warning saying so.

use crate::sys::Child;
use std::ffi::CString;
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

/// First argument that turns the executable into the helper.
pub const HELPER_ARG: &str = "__scalelab-micro-helper";
/// Set (to anything), process creation is forked from this process instead
/// of the helper: to show what the helper changes (docs/micro.md).
pub const IN_PROCESS_ENV: &str = "SCALELAB_MICRO_IN_PROCESS";
/// The helper's first line, so the parent knows it is talking to one.
const HELLO: &str = "scalelab-micro-helper 1";

/// When this process was started as the helper, serves requests until stdin
/// closes and exits; otherwise returns at once. Call first thing in `main`.
pub fn serve_if_helper() {
    let mut args = std::env::args();
    if args.nth(1).as_deref() != Some(HELPER_ARG) {
        return;
    }
    let mode: Vec<String> = args.collect();
    std::process::exit(serve(&mode));
}

/// What the helper forks: `exit` (the child exits at once) or `exec PATH ARGS...`.
fn serve(mode: &[String]) -> i32 {
    // Die with the parent.
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers and only changes this process's
    // settings.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let exec: Option<(CString, Vec<CString>)> = match mode.first().map(String::as_str) {
        Some("exit") => None,
        Some("exec") if mode.len() >= 3 => {
            let c = |s: &String| CString::new(s.as_str()).ok();
            match (c(&mode[1]), mode[2..].iter().map(c).collect::<Option<Vec<_>>>()) {
                (Some(p), Some(a)) => Some((p, a)),
                _ => return 2,
            }
        }
        _ => return 2,
    };
    let argv: Option<Vec<*const libc::c_char>> =
        exec.as_ref().map(|(_, a)| a.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect());
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if writeln!(out, "{HELLO}").and_then(|_| out.flush()).is_err() {
        return 1;
    }
    for line in io::stdin().lock().lines() {
        let Ok(n) = line.map(|l| l.trim().parse::<u64>()) else { return 1 };
        let Ok(n) = n else { return 2 };
        let t = Instant::now();
        let mut failure = None;
        for _ in 0..n {
            let child = match (&exec, &argv) {
                // SAFETY: in the forked child: `path` and `argv` (NUL-terminated, with a null last
                // pointer) live until execv replaces the process.
                (Some((path, _)), Some(argv)) => Child::fork(|| unsafe {
                    libc::execv(path.as_ptr(), argv.as_ptr());
                    127
                }),
                _ => Child::fork(|| 0),
            };
            match child.and_then(|c| c.wait()) {
                Ok(0) => {}
                Ok(code) => {
                    failure = Some(format!("the child exited with status {code}"));
                    break;
                }
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        let reply = match failure {
            None => format!("{}", t.elapsed().as_secs_f64()),
            Some(why) => format!("err {why}"),
        };
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            return 1;
        }
    }
    0
}

/// A running helper; killed and reaped when dropped.
pub(crate) struct Helper {
    child: std::process::Child,
    to: std::process::ChildStdin,
    from: BufReader<std::process::ChildStdout>,
}

impl Helper {
    /// Starts the helper in `mode` (`["exit"]` or `["exec", PATH, ARG0, ...]`);
    /// `Err` says why there is none (this executable does not serve).
    pub fn start(mode: &[&str]) -> Result<Helper, String> {
        if std::env::var_os(IN_PROCESS_ENV).is_some() {
            return Err(format!("{IN_PROCESS_ENV} is set"));
        }
        let mut child = Command::new("/proc/self/exe")
            .arg(HELPER_ARG)
            .args(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting /proc/self/exe: {e}"))?;
        let to = child.stdin.take().expect("piped stdin");
        let mut from = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut hello = String::new();
        let greeted = from.read_line(&mut hello).is_ok() && hello.trim_end() == HELLO;
        let helper = Helper { child, to, from };
        if greeted {
            Ok(helper)
        } else {
            Err("this executable does not serve as the micro helper (it does not call serve_if_helper)".into())
        }
    }

    /// Seconds the helper took for `n` forks.
    pub fn measure(&mut self, n: u64) -> Result<f64, String> {
        writeln!(self.to, "{n}").and_then(|_| self.to.flush()).map_err(|e| format!("helper: {e}"))?;
        let mut line = String::new();
        self.from.read_line(&mut line).map_err(|e| format!("helper: {e}"))?;
        let line = line.trim_end();
        if let Some(why) = line.strip_prefix("err ") {
            return Err(why.to_string());
        }
        line.parse().map_err(|_| format!("helper answered {line:?}"))
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where a process-creation figure was measured: from the helper (the
/// OS's cost), or in this process when there is none (then it includes
/// this process's address space, and the figure's warning says so).
pub(crate) enum Forker {
    Helper,
    InProcess(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_harness_is_no_helper_and_says_so() {
        // This test binary does not call serve_if_helper: libtest takes the
        // helper argument as a test filter, runs nothing and exits.
        let e = Helper::start(&["exit"]).err().expect("no helper here");
        assert!(e.contains("does not serve"), "{e}");
    }
}
