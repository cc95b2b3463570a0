//! Whether `perf` can profile the server here, and if not, the exact reason
//! and its fix: perf missing, `perf_event_paranoid`, locked-memory limits,
//! tracefs not mounted (mounted here when root), no tracepoint, a container.

use std::path::Path;
use std::process::{Command, Stdio};

/// Where tracefs is expected, and the older path under debugfs.
const TRACEFS: &str = "/sys/kernel/tracing";
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

/// What the profiler may take, decided once before the first step.
#[derive(Clone, Debug)]
pub struct Availability {
    /// On-CPU stacks: the unwinding that works (`dwarf`, or `fp`), or why none.
    pub on_cpu: Result<&'static str, String>,
    /// Off-CPU stacks, or why not.
    pub off_cpu: Result<(), String>,
    /// Off-CPU may be captured on every CPU, filtered on the server's
    /// threads in the kernel (`-a --filter`): the cheap way (docs/profiles.md, Cost).
    pub off_cpu_all_cpus: bool,
    /// What was done to make it work (tracefs mounted), to tell the user.
    pub notices: Vec<String>,
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

fn in_container() -> bool {
    Path::new("/.dockerenv").exists() || Path::new("/run/.containerenv").exists()
}

/// The reason and fix for a failed `perf record`, from its stderr.
pub fn explain(stderr: &str, what: &str) -> String {
    let low = stderr.to_lowercase();
    let mut why = if low.contains("perf_event_paranoid")
        || low.contains("access to performance monitoring")
        || low.contains("no permission")
    {
        format!(
            "{what}: perf may not watch the server (kernel.perf_event_paranoid = {}, not root); fix: run as root, or `sysctl kernel.perf_event_paranoid=1`, or give scalelab CAP_PERFMON",
            read_trim("/proc/sys/kernel/perf_event_paranoid")
        )
    } else if low.contains("mlock") || low.contains("mapping pages") || low.contains("mmap") {
        format!(
            "{what}: perf cannot lock its ring buffers (kernel.perf_event_mlock_kb = {}); fix: `ulimit -l unlimited` or `sysctl kernel.perf_event_mlock_kb=2048`",
            read_trim("/proc/sys/kernel/perf_event_mlock_kb")
        )
    } else if low.contains("unknown tracepoint") || low.contains("event syntax error") || low.contains("tracefs") {
        format!("{what}: the kernel's sched:sched_switch tracepoint cannot be opened; fix: as root, `mount -t tracefs nodev {TRACEFS}` (kernels without CONFIG_FTRACE have none)")
    } else {
        let line = stderr.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('[')).unwrap_or("no message");
        format!("{what}: perf record failed: {line}")
    };
    if in_container() {
        why.push_str(" (in a container: run it with --cap-add PERFMON, or --privileged)");
    }
    why
}

/// Runs `perf record` on `pid` for 50 ms with `args`; the reason it failed.
fn trial(perf: &Path, pid: u32, args: &[&str], dir: &Path, what: &str) -> Result<(), String> {
    trial_on(perf, &["-p", &pid.to_string()], args, dir, what)
}

/// How long perf's 50 ms trial may take: a `SCALELAB_PERF` that hangs
/// must not hold the sweep (nor its SIGTERM) before the load.
const TRIAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `perf record` for 50 ms with `args` on `target` (`-p PID`, `-a`); the reason it failed.
fn trial_on(perf: &Path, target: &[&str], args: &[&str], dir: &Path, what: &str) -> Result<(), String> {
    let out = dir.join("trial.data");
    let mut cmd = Command::new(perf);
    cmd.arg("record").args(args).args(target).arg("-o").arg(&out).args(["--", "sleep", "0.05"]);
    let result = run_bounded(&mut cmd, TRIAL_TIMEOUT);
    let _ = std::fs::remove_file(&out);
    match result {
        Err(Bounded::Spawn(e)) => Err(format!("{what}: `{}` cannot be run ({e}); fix: install perf (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r)), or set SCALELAB_PERF", perf.display())),
        Err(Bounded::TimedOut) => Err(format!(
            "{what}: `{}` cannot be run: its 50 ms trial `perf record` did not end within {} s (killed); fix: check the perf binary (SCALELAB_PERF)",
            perf.display(),
            TRIAL_TIMEOUT.as_secs()
        )),
        Ok((true, _)) => Ok(()),
        Ok((false, stderr)) => Err(explain(&stderr, what)),
    }
}

/// Why [`run_bounded`] has no exit status.
enum Bounded {
    Spawn(std::io::Error),
    TimedOut,
}

/// Runs `cmd` (stdin and stdout null) in its own process group; kills the
/// group when it outlives `limit`. Its success and stderr.
fn run_bounded(cmd: &mut Command, limit: std::time::Duration) -> Result<(bool, String), Bounded> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).process_group(0);
    let mut child = cmd.spawn().map_err(Bounded::Spawn)?;
    // Read stderr aside: a child of perf that outlives it may hold the pipe.
    let mut pipe = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = pipe.by_ref().take(1 << 20).read_to_end(&mut text);
        let _ = tx.send(String::from_utf8_lossy(&text).into_owned());
    });
    let end = std::time::Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let stderr = rx.recv_timeout(std::time::Duration::from_millis(500)).unwrap_or_default();
                return Ok((status.success(), stderr));
            }
            Ok(None) if std::time::Instant::now() < end => std::thread::sleep(std::time::Duration::from_millis(10)),
            _ => {
                // SAFETY: kills the process group this function made (the child leads it).
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                return Err(Bounded::TimedOut);
            }
        }
    }
}

/// Whether `perf` names a program that can be run: a path to an executable
/// file, or a name found in PATH. Err: what to fix (`--profile` warns at
/// the start, `--strict` refuses).
pub fn perf_found(perf: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let found = if perf.components().count() > 1 || perf.is_absolute() {
        runnable(perf)
    } else {
        std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| runnable(&d.join(perf))))
    };
    if found {
        return Ok(());
    }
    let fix = "install perf (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r)), or set SCALELAB_PERF to its path";
    if std::env::var_os("SCALELAB_PERF").is_some() {
        Err(format!("SCALELAB_PERF={} is not an executable file; fix: {fix}", perf.display()))
    } else {
        Err(format!("`{}` is not on PATH; fix: {fix}", perf.display()))
    }
}

/// The sched tracepoints, or a reason; mounts tracefs when root and it is not.
fn tracepoints(notices: &mut Vec<String>) -> Result<(), String> {
    let has = |root: &str| Path::new(root).join("events/sched/sched_switch").exists();
    if has(TRACEFS) || has(DEBUGFS_TRACING) {
        return Ok(());
    }
    if !is_root() {
        return Err(format!("off-CPU: tracefs is not mounted at {TRACEFS} (the sched tracepoints live there); fix: as root, `mount -t tracefs nodev {TRACEFS}`"));
    }
    let out = Command::new("mount").args(["-t", "tracefs", "nodev", TRACEFS]).stderr(Stdio::piped()).stdout(Stdio::null()).output();
    match out {
        Ok(o) if o.status.success() && has(TRACEFS) => {
            notices.push(format!("profile: mounted tracefs at {TRACEFS} (off-CPU stacks need the sched tracepoints)"));
            Ok(())
        }
        Ok(o) if o.status.success() => Err("off-CPU: tracefs is mounted but has no sched:sched_switch tracepoint (a kernel without CONFIG_FTRACE); fix: none on this kernel".into()),
        Ok(o) => Err(format!(
            "off-CPU: tracefs is not mounted at {TRACEFS} and mounting it failed ({}); fix: `mount -t tracefs nodev {TRACEFS}` on the host",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("off-CPU: tracefs is not mounted at {TRACEFS} and `mount` cannot be run ({e}); fix: `mount -t tracefs nodev {TRACEFS}`")),
    }
}

/// Decides what can be profiled on `pid` with `perf`, trying it for real.
pub fn check(perf: &Path, pid: u32, dir: &Path, off_cpu: bool) -> Availability {
    let mut notices = Vec::new();
    let on_cpu = match trial(perf, pid, &["-e", "cpu-clock", "-F", "99", "--call-graph", "dwarf"], dir, "on-CPU") {
        Ok(()) => Ok("dwarf"),
        Err(why) if why.contains("cannot be run") => Err(why),
        Err(dwarf_why) => match trial(perf, pid, &["-e", "cpu-clock", "-F", "99", "--call-graph", "fp"], dir, "on-CPU") {
            Ok(()) => {
                notices.push(format!("profile: DWARF unwinding failed ({dwarf_why}); frame pointers used, stacks through code built without them are cut short"));
                Ok("fp")
            }
            Err(why) => Err(why),
        },
    };
    let off_cpu = if !off_cpu {
        Err("off-CPU: not asked for".to_string())
    } else if let Err(why) = &on_cpu {
        Err(why.replacen("on-CPU", "off-CPU", 1))
    } else {
        tracepoints(&mut notices).and_then(|()| {
            let unwind = *on_cpu.as_ref().expect("checked above");
            // As the capture runs it: one switch in N sampled (`--no-period -c N`).
            let args = ["-e", "sched:sched_switch", "--no-period", "-c", "10", "--switch-events", "--call-graph", unwind];
            trial(perf, pid, &args, dir, "off-CPU")
        })
    };
    // The capture of every CPU, filtered on the server's threads in the kernel, as it runs.
    let off_cpu_all_cpus = off_cpu.is_ok() && may_sample_all_cpus() && {
        let unwind = *on_cpu.as_ref().expect("off-CPU needs on-CPU");
        let filter = super::switch_filter("prev_pid", &[pid]).expect("one thread fits");
        let args = ["-e", "sched:sched_switch", "--filter", &filter, "--no-period", "-c", "10", "--call-graph", unwind];
        trial_on(perf, &["-a"], &args, dir, "off-CPU").is_ok()
    };
    Availability { on_cpu, off_cpu, off_cpu_all_cpus, notices }
}

/// Whether perf may sample every CPU (`-a`): root, or perf_event_paranoid <= 0.
pub(super) fn may_sample_all_cpus() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    root || std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").is_ok_and(|v| v.trim().parse::<i32>().is_ok_and(|n| n <= 0))
}
