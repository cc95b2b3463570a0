//! Helpers shared by the CLI's integration tests: run the real binary.

#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The scalelab binary built for these tests.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scalelab"))
}

/// Runs scalelab with `args` against the store `store`.
pub fn run(store: &Path, args: &[&str]) -> Output {
    run_env(store, &[], args)
}

/// The same with the environment variables `env` set (e.g. `SCALELAB_PROFILE_*`).
pub fn run_env(store: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    bin().envs(env.iter().copied()).arg("--store").arg(store).args(args).output().expect("running scalelab")
}

/// `scalelab prepare URL --dataset sbtest --scale 1 --rows ROWS`, which must succeed.
pub fn prepare_sbtest(store: &Path, url: &str, rows: u32) {
    let out = run(store, &["prepare", url, "--dataset", "sbtest", "--scale", "1", "--rows", &rows.to_string(), "-q"]);
    assert!(out.status.success(), "prepare sbtest in {url}: {}", stderr(&out));
}

/// Starts scalelab with `args` against the store `store` in the background,
/// stdout and stderr captured (for `wait_with_output`), so a test can act on
/// the target while it runs.
pub fn spawn(store: &Path, args: &[&str]) -> std::process::Child {
    bin()
        .arg("--store")
        .arg(store)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting scalelab")
}

/// Runs a command expected to succeed and parses its stdout as JSON.
pub fn json(store: &Path, args: &[&str]) -> Value {
    let out = run(store, args);
    assert!(out.status.success(), "scalelab {args:?} failed ({:?}): {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// `scalelab ARGS` is bad input: exit 2, one line on stderr that contains
/// `says`, and the store at `store` not created.
pub fn assert_bad_input(store: &Path, args: &[&str], says: &str) {
    let out = run(store, args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line, not {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert!(!store.exists(), "{args:?}: nothing created");
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Steps of a run document.
pub fn steps(run: &Value) -> &Vec<Value> {
    run["steps"].as_array().expect("steps[]")
}

/// Validates a document against docs/run.schema.json.
pub fn assert_matches_schema(doc: &Value) {
    let schema_text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/run.schema.json")).expect("docs/run.schema.json");
    let schema: Value = serde_json::from_str(&schema_text).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "run JSON does not match docs/run.schema.json:\n{}", errors.join("\n"));
}

/// A lock held by one test process of the workspace at a time, released
/// when dropped (or when the process dies). A file lock in cargo's
/// per-workspace temp dir, so it holds across test binaries: the suite
/// runs under cargo-nextest, one process per test and several at once.
pub struct MachineLock(#[allow(dead_code)] std::fs::File);

/// Takes the workspace-wide lock `name`, waiting for it.
pub fn machine_lock(name: &str) -> MachineLock {
    use std::os::unix::fs::OpenOptionsExt;
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.lock().unwrap_or_else(|e| panic!("lock {}: {e}", path.display()));
    MachineLock(file)
}

/// Tests whose assertions are about CPU shape take this, so they do not
/// share the machine's cores with each other, in any test binary.
pub fn cpu_exclusive() -> MachineLock {
    machine_lock("cpu")
}

/// `scalelab ARGS` for a sweep, run once more when a window finished
/// nothing: beside a CPU hog (load 8 on 2 cores) a client or the server can
/// be starved for a whole short window, and the sweep rightly ends "nothing
/// succeeded and nothing failed", or, when every request it sent was out
/// through most of the window, "nothing succeeded: all N requests failed,
/// mostly unfinished (N)" (a 1- or 2-client `--versus` window beside a test
/// at 50 busy clients, whose run queue is ~50 deep); that is not what these
/// tests measure. A second starved window in a row fails the test.
pub fn run_sweep(store: &Path, args: &[&str]) -> Output {
    let out = run(store, args);
    let starved = |e: &str| e.contains("nothing succeeded and nothing failed") || all_unfinished(e);
    if !out.status.success() && starved(&stderr(&out)) {
        eprintln!("note: retried once, a starved window: {}", stderr(&out));
        return run(store, args);
    }
    out
}

/// "nothing succeeded: all N requests failed, mostly unfinished (N)": every
/// request of the window was still out at its end.
fn all_unfinished(e: &str) -> bool {
    e.split("nothing succeeded: all ").skip(1).any(|rest| {
        let n = rest.split(' ').next().unwrap_or("");
        !n.is_empty() && rest.starts_with(&format!("{n} requests failed, mostly unfinished ({n})"))
    })
}

/// [`run_sweep`], which must succeed, its stdout as JSON.
pub fn json_sweep(store: &Path, args: &[&str]) -> Value {
    let out = run_sweep(store, args);
    assert!(out.status.success(), "scalelab {args:?} failed ({:?}): {}", out.status.code(), stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Runs a `sweep ... --versus B` ([`run_sweep`]) and returns its two runs,
/// A and B, as `show --json` gives them.
pub fn versus_runs(store: &Path, args: &[&str]) -> (Value, Value) {
    let out = run_sweep(store, args);
    assert!(out.status.success(), "{}", stderr(&out));
    let pair = json(store, &["show", "last", "--json"])["schedule"]["options"]["versus"]["pair"].clone();
    let id = |k: usize| pair[k].as_i64().unwrap_or_else(|| panic!("no versus pair: {pair}")).to_string();
    (json(store, &["show", &id(0), "--json"]), json(store, &["show", &id(1), "--json"]))
}

/// The two runs of a `--versus` sweep ran `windows` windows each, A B B A
/// in time: the k-th windows of A and B at one level (clients, or offered
/// rate), B's pair inside A's.
pub fn assert_abba(a: &Value, b: &Value, windows: usize) {
    let window = |s: &Value| {
        let level = s["offered_rate_per_s"].as_f64().unwrap_or_else(|| s["concurrency"].as_f64().unwrap());
        (level, s["window_start_unix_ms"].as_i64().unwrap(), s["window_end_unix_ms"].as_i64().unwrap())
    };
    let (wa, wb): (Vec<_>, Vec<_>) = (steps(a).iter().map(window).collect(), steps(b).iter().map(window).collect());
    assert_eq!((wa.len(), wb.len()), (windows, windows));
    for k in (0..windows).step_by(2) {
        assert_eq!(wa[k].0, wb[k].0, "the k-th windows of A and B are at one level");
        assert!(wa[k].2 <= wb[k].1 && wb[k + 1].2 <= wa[k + 1].1, "A B B A in time: {:?} {:?}", &wa[k..k + 2], &wb[k..k + 2]);
    }
}

/// `compare X Y --format json` pairs a `--versus` pair's windows: a row per
/// level of `levels`, each delta paired-t over `pairs` pairs, with its
/// interval and a word.
pub fn assert_compare_pairs(store: &Path, x: &str, y: &str, levels: &[u64], pairs: u64) {
    let doc = json(store, &["compare", x, y, "--format", "json"]);
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.iter().map(|r| r["concurrency"].as_u64().unwrap()).collect::<Vec<_>>(), levels, "{doc}");
    for row in rows {
        let d = row["delta"].as_object().unwrap().values().next().unwrap();
        assert_eq!((d["method"].as_str(), d["n"].as_u64()), (Some("paired-t"), Some(pairs)), "{pairs} pairs of windows: {d}");
        assert!(d["ci95_low_pct"].as_f64().unwrap() <= d["ci95_high_pct"].as_f64().unwrap(), "{d}");
        assert!(["faster", "slower", "same"].contains(&d["verdict"].as_str().unwrap()), "{d}");
    }
}

/// A JSON sweep of the specimen in `mode` with the short schedule the
/// measured-shape tests use (0.3 s warm-up, 2.2 s window, 0.2 s pause).
pub fn sweep_specimen(store: &Path, mode: &str, work_us: &str, conc: &str) -> Value {
    json_sweep(
        store,
        &[
            "sweep",
            "--specimen",
            mode,
            "--work-us",
            work_us,
            "-c",
            conc,
            "--warmup",
            "0.3s",
            "--duration",
            "2.2s",
            "--pause",
            "0.2s",
            "--json",
            "-q",
        ],
    )
}

/// Steps the store's last run has committed so far (0 before it exists):
/// read while a spawned sweep writes it.
pub fn finished_steps(store: &Path) -> usize {
    match scalelab_store::Store::open(store) {
        Ok(s) => s.list_runs().ok().and_then(|r| r.last().map(|r| r.steps as usize)).unwrap_or(0),
        Err(_) => 0,
    }
}

/// Waits (at most 30 s) until a spawned sweep has committed `n` steps, so
/// a test acts at a point of the run rather than at a time that a busy
/// machine's slower start would move.
pub fn wait_for_steps(store: &Path, n: usize) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while finished_steps(store) < n {
        assert!(std::time::Instant::now() < end, "the sweep never reached {n} steps");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The kinds of a run document's verdicts (`verdicts[].kind`), in order.
pub fn verdict_kinds(run: &Value) -> Vec<String> {
    run["verdicts"].as_array().map(|v| v.iter().filter_map(|v| v["kind"].as_str().map(String::from)).collect()).unwrap_or_default()
}

/// The verdicts about servers that serve only some of their clients
/// (issue 35), which a healthy server with workers to spare never earns.
pub const POOL_VERDICTS: [&str; 3] = ["worker-pool", "starved-clients", "thundering-herd"];

/// A run document (a sweep's `--json`, or `diagnose --json`) carries its
/// diagnosis, and none of [`POOL_VERDICTS`] is in it at high confidence: on
/// a healthy server one would be a false positive. (Beside a CPU hog a
/// starved load generator can leave a client with nothing in a short
/// window; the verdict then says so at a lower confidence.) The message
/// shows each with its figures.
pub fn assert_no_pool_verdicts(doc: &Value, what: &str) {
    let verdicts = doc["verdicts"].as_array().unwrap_or_else(|| panic!("{what}: no diagnosis in the document: {doc}"));
    let found: Vec<&Value> =
        verdicts.iter().filter(|v| v["kind"].as_str().is_some_and(|k| POOL_VERDICTS.contains(&k)) && v["confidence"] == "high").collect();
    assert!(found.is_empty(), "{what}: a healthy server was called short of workers (a false positive): {found:#?}");
}

/// A specimen of its own (`specimen --port 0`) in `mode` with `work_us` of
/// work per request, and the address it printed.
pub fn start_specimen(mode: &str, work_us: &str) -> (std::process::Child, String) {
    let mut child = bin()
        .args(["specimen", "--port", "0", "--mode", mode, "--work-us", work_us])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("starting the specimen");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    let addr = line.split_whitespace().nth(2).unwrap_or_else(|| panic!("no address in {line:?}")).to_string();
    (child, addr)
}
