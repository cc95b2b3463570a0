//! `--profile`: a sweep stores each step's on-CPU and off-CPU stacks of the
//! server; `scalelab profile` reads them; verdicts and reports use them.
//! Real perf on the real specimen (docs/profiles.md).

mod common;

use common::*;
use scalelab_analyze::profile::{lock_sites, spin_sites, top_own};
use scalelab_core::sample::ProfileSample;
use std::path::Path;

/// A short `--profile` sweep of the specimen in `mode` at 1 and 4 clients
/// (`work_us` of work per request); its stderr.
fn profiled_sweep(store: &Path, mode: &str, work_us: &str) -> String {
    let args = [
        "sweep",
        "--specimen",
        mode,
        "--work-us",
        work_us,
        "-c",
        "1,4",
        "--warmup",
        "0.3s",
        "--duration",
        "1.5s",
        "--pause",
        "0.2s",
        "--profile",
        "--json",
        "-q",
    ];
    let out = run(store, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    stderr(&out)
}

fn profiles(store: &Path) -> Vec<ProfileSample> {
    let s = scalelab_store::Store::open(store).unwrap();
    let id = s.resolve(&scalelab_store::RunSelector::parse("last")).unwrap();
    s.load_run_samples(id).unwrap().profile
}

#[test]
fn global_lock_profile_names_the_function_that_takes_the_mutex() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let err = profiled_sweep(&store, "global-lock", "300");
    assert!(err.contains("profile: perf record used"), "overhead printed: {err}");
    let p = profiles(&store);
    assert_eq!(p.iter().map(|p| p.step).collect::<Vec<_>>(), [0, 1], "one profile per step");
    let on = p[1].on_cpu.as_ref().expect("on-CPU stacks");
    assert!(on.total() > 10 && on.unwind == "dwarf", "{on:?}");
    let off = p[1].off_cpu.as_ref().expect("off-CPU stacks");
    let sites = lock_sites(off, 3);
    assert_eq!(sites.first().map(|s| s.site.as_str()), Some("scalelab_specimen::server::State::work"), "{sites:?}");
    assert!(sites[0].via.contains("Mutex"), "{sites:?}");
    assert!(sites[0].thread_share > 0.02, "{sites:?}");

    // `scalelab profile` reads them back: the lock call site, and what grew.
    let out = run(&store, &["profile", "last", "--off-cpu", "--top", "5"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("scalelab_specimen::server::State::work -> std::sync::poison::mutex::Mutex<T>::lock"),
        "{text}"
    );
    let out = run(&store, &["profile", "last", "--step", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("run 1 step 1 (1 clients)") && text.contains("hottest functions of the server's own code"), "{text}");
    let out = run(&store, &["profile", "last", "--off-cpu", "--diff", "1", "4"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("what grew from 1 clients to 4 clients"), "{text}");
    let out = run(&store, &["profile", "last", "--step", "7"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).trim(), "error: run 1 has no profiled step with 7 clients; --step takes one of: 1, 4");
}

#[test]
fn spin_profile_names_the_spin_loop() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    profiled_sweep(&store, "spin", "50");
    let p = profiles(&store);
    let on = p[1].on_cpu.as_ref().expect("on-CPU stacks");
    let spin = spin_sites(on, 3);
    assert_eq!(spin.first().map(|f| f.frame.as_str()), Some("scalelab_specimen::work::SpinLock::with"), "{spin:?}");
    // Two cores: the holder's work inside the lock runs beside at most one spinner,
    // so the spin loop ranks among the hottest functions, not always first.
    let own = top_own(on, 3);
    assert!(own.iter().any(|f| f.frame == spin[0].frame && f.share > 0.05), "{own:?}");
}
