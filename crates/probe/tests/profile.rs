//! `--profile`'s collection: `perf script` output folded (captured fixtures
//! from a real run of tests/fixtures/profile/global_lock.c), a live profile
//! of that program compiled here with `cc` (its lock site named from its
//! symbol table), and the reason given when perf cannot run.

use scalelab_analyze::profile::{lock_sites, top_own};
use scalelab_core::{Sample, Source};
use scalelab_probe::profile::fold::fold;
use scalelab_probe::profile::{ProfileConfig, Profiler};
use scalelab_probe::Record;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile").join(name)
}

#[test]
fn off_cpu_waits_fold_to_the_function_that_takes_the_mutex() {
    let text = std::fs::read(fixture("offcpu_global_lock.txt")).unwrap();
    let f = fold(&text[..]).unwrap();
    assert!(f.on_cpu.is_empty());
    assert!(f.threads >= 4, "{f:?}");
    let (a, b) = f.span_ns.unwrap();
    let off = f.off_cpu_profile(b - a, 5, "dwarf", 1);
    let lock = "worker;update_counter;___pthread_mutex_lock;lll_mutex_lock_optimized;__GI___lll_lock_wait;futex_wait;entry_SYSCALL_64_after_hwframe_[k]";
    let waits = off.stacks.iter().find(|s| s.stack.contains(lock)).unwrap_or_else(|| panic!("{:?}", off.stacks));
    assert!(waits.stack.starts_with("clone3;start_thread;") && waits.stack.ends_with("schedule_[k];__schedule_[k];[S]"), "{waits:?}");
    let sites = lock_sites(&off, 3);
    assert_eq!(sites[0].site, "update_counter", "{sites:?}");
    assert_eq!(sites[0].via, "___pthread_mutex_lock");
    assert!(sites[0].waits >= 5 && sites[0].wait_ns > 0, "{sites:?}");

    // One switch in 10 sampled: each sleep found stands for ten, in time and count.
    let sampled = f.off_cpu_profile(b - a, 5, "dwarf", 10);
    assert_eq!(sampled.sampled_every, 10);
    let ten = sampled.stacks.iter().find(|s| s.stack == waits.stack).unwrap();
    assert_eq!((ten.value, ten.count), (waits.value * 10, waits.count * 10));
    let s10 = lock_sites(&sampled, 1);
    assert_eq!((s10[0].wait_ns, s10[0].waits), (sites[0].wait_ns * 10, sites[0].waits * 10), "{s10:?} {sites:?}");
    // Its share of thread time scales too, up to all of it.
    assert!((s10[0].thread_share - (sites[0].thread_share * 10.0).min(1.0)).abs() < 1e-9, "{s10:?} {sites:?}");
}

#[test]
fn on_cpu_samples_fold_with_counts() {
    let text = std::fs::read(fixture("oncpu_global_lock.txt")).unwrap();
    let f = fold(&text[..]).unwrap();
    let samples: u64 = f.on_cpu.values().sum();
    let headers = String::from_utf8_lossy(&text).lines().filter(|l| l.contains(" cpu-clock:")).count() as u64;
    assert_eq!(samples, headers, "every sample counted once");
    assert!(f.on_cpu.keys().any(|s| s.ends_with("start_thread;worker;update_counter;busy")), "{:?}", f.on_cpu);
}

/// Builds the fixture program with `cc` into a temp dir.
fn build_c(dir: &Path) -> PathBuf {
    let exe = dir.join("global_lock");
    let st = Command::new("cc").args(["-O2", "-pthread", "-o"]).arg(&exe).arg(fixture("global_lock.c")).status().expect("cc runs");
    assert!(st.success(), "cc failed");
    exe
}

#[inline(never)]
fn hog_outside_the_server(stop: &std::sync::atomic::AtomicBool) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        std::hint::black_box((0..1000u64).sum::<u64>());
    }
}

#[inline(never)]
fn sleeper_outside_the_server(stop: &std::sync::atomic::AtomicBool) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Off-CPU captured on every CPU with a kernel filter on the server's
/// threads (the default as root), then on the server's threads themselves
/// (`-p`, the way taken where every CPU may not be): the same lock, named
/// the same way. One after the other: two such programs at once on two
/// CPUs seldom run two workers of one program together, so their lock
/// would not be contended.
#[test]
fn a_c_program_s_mutex_is_named_from_its_symbol_table() {
    c_program_profile(false);
    c_program_profile(true);
}

fn c_program_profile(per_thread: bool) {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path());
    let mut child = Command::new(&exe).args(["4", "20"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    // A busy thread outside the server: a capture of every CPU must not keep it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hog = {
        let stop = stop.clone();
        std::thread::spawn(move || hog_outside_the_server(&stop))
    };
    // And one that sleeps thousands of times a second: its sleeps are not the server's.
    let sleeper = {
        let stop = stop.clone();
        std::thread::spawn(move || sleeper_outside_the_server(&stop))
    };
    let mut config = ProfileConfig::new(child.id());
    config.off_cpu_s = 0.8;
    config.off_cpu_per_thread = per_thread;
    // Every switch with its stack: the figures below are counts, not
    // estimates scaled from 1 in N (the sampling has its own test).
    config.off_cpu_every = 1;
    let (profiler, notes, _notices) = Profiler::start(config);
    let mut profiler = profiler.unwrap_or_else(|| panic!("profiling unavailable: {notes:?}"));
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(profiler.off_cpu_all_cpus(), root && !per_thread, "every CPU as root unless asked otherwise");
    profiler.prepare_step(0);
    // As a sweep does: the window opens once perf is started (it answers a ping).
    let started = std::time::Instant::now();
    while !profiler.ready() {
        assert!(started.elapsed() < Duration::from_secs(30), "perf never answered");
        std::thread::sleep(Duration::from_millis(50));
        profiler.tick();
    }
    profiler.open_window();
    for _ in 0..15 {
        std::thread::sleep(Duration::from_millis(100));
        profiler.tick();
    }
    profiler.end_step();
    let (records, overhead) = profiler.finish();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    hog.join().unwrap();
    sleeper.join().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let sample = records
        .iter()
        .find_map(|r| match r {
            Record::Sample(Sample::Profile(p)) => Some(p.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no profile: {records:?}"));
    assert_eq!(sample.step, 0);
    assert_eq!(overhead.windows, 1);
    let off_ns = sample.off_cpu.as_ref().map_or(0, |p| p.duration_ns);
    assert!((700_000_000..1_200_000_000).contains(&off_ns), "off-CPU capture ends after its planned 0.8 s: {off_ns}");
    let on = sample.on_cpu.as_ref().expect("on-CPU profile");
    assert_eq!(on.threads, 5, "main and four workers");
    assert!(!on.stacks.iter().any(|s| s.stack.contains("hog_outside_the_server")), "only the server's threads are kept");
    assert!(on.total() > 20, "{on:?}");
    let own = top_own(on, 3);
    assert!(own.iter().any(|f| f.frame == "busy" || f.frame == "update_counter"), "{own:?}");
    let off = sample.off_cpu.as_ref().expect("off-CPU profile");
    assert!(!off.stacks.iter().any(|s| s.stack.contains("sleeper_outside_the_server")), "only the server's sleeps are kept");
    let sites = lock_sites(off, 3);
    assert_eq!(sites.first().map(|s| s.site.as_str()), Some("update_counter"), "{sites:?}");
    // Four workers on one lock: a good part of their time goes to waiting for
    // it (less on a loaded machine, where they also wait for a CPU).
    assert!(sites[0].thread_share > 0.05 && sites[0].waits_per_s > 50.0, "{sites:?}");
}

#[test]
fn without_perf_the_reason_and_fix_are_recorded() {
    let mut config = ProfileConfig::new(std::process::id());
    config.perf = PathBuf::from("/nonexistent/perf");
    let (profiler, notes, _) = Profiler::start(config);
    assert!(profiler.is_none());
    let why = notes
        .iter()
        .find_map(|r| match r {
            Record::Unavailable(Source::Profile, why) => Some(why.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(why.contains("/nonexistent/perf") && why.contains("fix: install perf"), "{why}");
}

/// perf run as an unprivileged user (`setpriv` to nobody) may not watch a
/// root process: the run gets the paranoid setting and the fix, not a
/// profile of nothing.
#[test]
fn without_permission_the_paranoid_setting_and_fix_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("perf-as-nobody");
    // perf writes its trial file into the profiler's directory: let nobody write there.
    let script = "#!/bin/sh\nprev=\nfor a in \"$@\"; do [ \"$prev\" = -o ] && chmod 777 \"$(dirname \"$a\")\"; prev=\"$a\"; done\nexec setpriv --reuid=65534 --regid=65534 --clear-groups perf \"$@\"\n";
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut config = ProfileConfig::new(std::process::id());
    config.perf = wrapper;
    let (profiler, notes, _) = Profiler::start(config);
    assert!(profiler.is_none(), "{notes:?}");
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap();
    let on = notes.iter().find_map(|r| match r {
        Record::Unavailable(Source::Profile, why) => Some(why.clone()),
        _ => None,
    });
    let on = on.unwrap_or_else(|| panic!("{notes:?}"));
    assert!(on.starts_with("on-CPU: perf may not watch the server"), "{on}");
    assert!(on.contains(&format!("kernel.perf_event_paranoid = {}", paranoid.trim())) && on.contains("fix: run as root"), "{on}");
    let off = notes
        .iter()
        .any(|r| matches!(r, Record::Unavailable(Source::ProfileOffCpu, why) if why.starts_with("off-CPU: perf may not watch")));
    assert!(off, "{notes:?}");
}
