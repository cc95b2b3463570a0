//! Hostile and unlucky stores and input files (issue 39): planted symlinks
//! at the store and its side files, damaged schemas, a full disk, devices
//! and fifos given as files, formulas in exported cells. Each test drives
//! the real binary; none loads anything but the built-in specimen.

mod common;

use common::*;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// A short specimen sweep: what a writing command looks like (refused
/// before any load when the store is unusable).
const SWEEP: &[&str] = &["sweep", "--specimen", "scales", "--work-us", "10", "-c", "1", "--warmup", "0s", "--duration", "0.3s", "-q"];

/// A store with one imported run (id 1, label `imported`): no load needed.
fn imported_store(dir: &Path, store: &Path) {
    let csv = dir.join("in.csv");
    std::fs::write(&csv, "concurrency,imported\n1,100\n2,190\n4,350\n").unwrap();
    let out = run(store, &["import", csv.to_str().unwrap()]);
    assert!(out.status.success(), "import: {}", stderr(&out));
}

/// Exit 2 and one line on stderr that contains `says`.
fn assert_one_line(out: &Output, what: &str, says: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: one line, not {err}");
    assert!(err.contains(says), "{what}: {err}");
}

/// Runs scalelab with `args`, killed when it has not exited within `limit`
/// (a fifo read blocks forever; /dev/zero is read under a memory cap).
fn run_bounded(args: &[&str], limit: Duration) -> Option<Output> {
    use std::os::unix::process::CommandExt;
    let mut cmd = bin();
    cmd.args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches only this child.
    unsafe {
        cmd.pre_exec(|| {
            let cap = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
            libc::setrlimit(libc::RLIMIT_AS, &cap);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Item 3: a planted `scalelab.db -> victim` made root write the victim
/// (label text in an empty file turned SQLite); a planted `-journal` or
/// `-wal` is followed by SQLite; `--svg DIR` wrote through a linked folder.
#[test]
fn symlinked_store_side_files_and_image_folders_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"").unwrap();
    let store = tmp.path().join("s.db");
    symlink(&victim, &store).unwrap();
    for args in [SWEEP, &["runs"], &["show", "last"]] {
        let out = run(&store, args);
        assert_one_line(&out, &format!("{args:?} on a linked store"), "s.db is a symbolic link");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"", "the victim was written");
    std::fs::remove_file(&store).unwrap();

    // The side files: a planted link beside a store that does not exist yet, and beside one that does.
    for side in ["-journal", "-wal", "-shm"] {
        let link = tmp.path().join(format!("s.db{side}"));
        symlink(&victim, &link).unwrap();
        let out = run(&store, SWEEP);
        assert_one_line(&out, side, &format!("s.db{side} is a symbolic link"));
        assert!(!stderr(&out).contains("not writable"), "{side}: {}", stderr(&out));
        assert!(!store.exists(), "{side}: a store was created");
        std::fs::remove_file(&link).unwrap();
    }
    imported_store(tmp.path(), &store);
    let link = tmp.path().join("s.db-journal");
    symlink(&victim, &link).unwrap();
    assert_one_line(&run(&store, &["runs"]), "-journal beside a store", "s.db-journal is a symbolic link");
    std::fs::remove_file(&link).unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"", "the victim was written");

    // --svg / --png: a linked folder is not written through.
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let charts = tmp.path().join("charts");
    symlink(&real, &charts).unwrap();
    let out_html = tmp.path().join("r.html");
    for flag in ["--svg", "--png"] {
        let out = run(&store, &["report", "1", "-o", out_html.to_str().unwrap(), flag, charts.to_str().unwrap()]);
        assert_one_line(&out, flag, "charts is a symbolic link");
        assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0, "{flag}: written through the link");
        assert!(!out_html.exists(), "{flag}: a report was written");
    }
}

/// Item 8: a label or imported name that a spreadsheet reads as a formula
/// is exported with a leading `'` (OWASP); plain negative numbers stay numbers.
#[test]
fn exported_cells_that_look_like_formulas_are_neutralised() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.db");
    let csv = tmp.path().join("in.csv");
    std::fs::write(&csv, "concurrency,=HYPERLINK(\"http://x/\")\n1,100\n2,190\n").unwrap();
    assert!(run(&store, &["import", csv.to_str().unwrap()]).status.success());
    for (i, label) in ["@SUM(A1)", "+1+2", "-2+3", "\tcmd", "-5"].into_iter().enumerate() {
        let text = format!("concurrency,{label}\n1,100\n");
        std::fs::write(&csv, text).unwrap();
        let out = run(&store, &["import", csv.to_str().unwrap()]);
        assert!(out.status.success(), "import {label:?} ({i}): {}", stderr(&out));
    }
    let mut cells = Vec::new();
    for id in 1..=6 {
        let out = run(&store, &["export", &id.to_string(), "--format", "csv"]);
        assert!(out.status.success(), "export {id}: {}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        let row = text.lines().nth(1).unwrap().to_string();
        cells.push(row);
    }
    assert!(cells[0].starts_with("1,\"'=HYPERLINK(\"\"http://x/\"\")\",1,"), "{}", cells[0]);
    assert!(cells[1].starts_with("2,'@SUM(A1),1,"), "{}", cells[1]);
    assert!(cells[2].starts_with("3,'+1+2,1,"), "{}", cells[2]);
    assert!(cells[3].starts_with("4,'-2+3,1,"), "{}", cells[3]);
    // import trims the name; kept, it would be neutralised.
    assert!(cells[4].starts_with("5,'\tcmd,1,") || cells[4].starts_with("5,cmd,1,"), "{:?}", cells[4]);
    assert!(cells[5].starts_with("6,-5,1,"), "a plain negative number stays numeric: {}", cells[5]);
}

/// Item 11: `runs` took its peak over partial steps (53,498 where diagnose
/// said 15,590); it must use the complete steps, as diagnose does.
#[test]
fn runs_peak_counts_complete_steps_only() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.db");
    let s = scalelab_store::Store::open(&store).unwrap();
    s.execute_raw(
        "INSERT INTO runs(id, kind, label, target, workload, started_unix_ms, complete, plan_json, environment_json)
             VALUES (1, 'sweep', 'peaky', 'specimen', 'GET /', 1700000000000, 0, '{}', '{}');
         INSERT INTO steps(run_id, idx, concurrency, window_s, requests, queries, errors_json, partial)
             VALUES (1, 0, 1, 2.0, 31180, 0, '{}', 0), (1, 1, 2, 0.25, 13374, 0, '{}', 1);",
    )
    .unwrap();
    drop(s);
    let out = run(&store, &["runs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let row = table.lines().find(|l| l.contains("peaky")).unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("15,590"), "peak of the complete step: {row}");
    assert!(!row.contains("53,496"), "the partial step counted: {row}");
}

/// A tmpfs of 1 MiB mounted at `dir`, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Item 14: an existing store on a full filesystem was called "not a
/// scalelab store ... pass --store with another path" (which invites
/// deleting a good store): say the disk is full.
#[test]
fn a_store_on_a_full_disk_is_said_so() {
    let tmp = tempfile::tempdir().unwrap();
    // The suite runs as root (as scalelab usually does): a test that
    // passed unmounted would check nothing.
    let Some(fs) = Tmpfs::mount(&tmp.path().join("small")) else {
        panic!("cannot mount a tmpfs (the suite runs as root: ./scripts/test.sh)");
    };
    let store = fs.0.join("s.db");
    imported_store(tmp.path(), &store);
    // Fill the filesystem to its last byte.
    let mut f = std::fs::File::create(fs.0.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    while std::io::Write::write_all(&mut f, &block).is_ok() {}
    let _ = std::io::Write::write_all(&mut f, &[0]);
    drop(f);
    for args in [&["runs"][..], &["show", "1"], SWEEP] {
        let out = run(&store, args);
        let err = stderr(&out);
        assert!(!err.contains("not a scalelab store"), "{args:?}: {err}");
        assert_one_line(&out, &format!("{args:?}"), "disk is full");
    }
    std::fs::remove_file(fs.0.join("filler")).unwrap();
    let out = run(&store, &["runs"]);
    assert!(out.status.success(), "the store is intact: {}", stderr(&out));
}

/// Item 18 and two of item 23: a schema version of -1 panicked (index out
/// of bounds, exit 101); '0' dumped the migration SQL; a store without its
/// `steps` table ran the load and then lost the result. One line before any load.
#[test]
fn damaged_schemas_are_refused_in_one_line_before_any_load() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, damage, says) in [
        (0, "UPDATE scalelab_meta SET value = '-1' WHERE key = 'schema_version'", "schema version '-1'"),
        (1, "UPDATE scalelab_meta SET value = '0' WHERE key = 'schema_version'", "schema version '0'"),
        (2, "DROP TABLE steps", "no table steps"),
    ] {
        let store = tmp.path().join(format!("s{i}.db"));
        scalelab_store::Store::open(&store).unwrap().execute_raw(damage).unwrap();
        for args in [SWEEP, &["runs"]] {
            let out = run(&store, args);
            let err = stderr(&out);
            assert!(!err.contains("CREATE TABLE") && !err.contains("panicked"), "{damage} / {args:?}: {err}");
            assert_one_line(&out, &format!("{damage} / {args:?}"), says);
        }
        // Nothing was run: a run with id 1 can still be inserted.
        let raw = scalelab_store::Store::create_at_version(&store, 0).unwrap();
        raw.execute_raw(
            "INSERT INTO runs(id, kind, label, target, workload, started_unix_ms, plan_json, environment_json)
             VALUES (1, 'sweep', 'x', 'x', 'x', 0, '{}', '{}')",
        )
        .unwrap_or_else(|e| panic!("{damage}: a run was stored ({e})"));
    }
}

/// Item 20: `--token-file`, `--body-file`, `--url-file` of /dev/zero read
/// until memory ran out; a fifo hung. Regular files only, size capped.
#[test]
fn input_files_must_be_regular_files_of_bounded_size() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.db");
    let fifo = tmp.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let big = tmp.path().join("big");
    std::fs::File::create(&big).unwrap().set_len(100 << 20).unwrap();
    let s = store.to_str().unwrap();
    // The agent's TLS key and token must be private; the certificate is the file under test.
    let token = tmp.path().join("token");
    let key = tmp.path().join("key");
    for (p, text) in [(&token, "7c1e9a0b5d3f2e4a6c8b0d1f3a5c7e9b"), (&key, "not read before the certificate")] {
        std::fs::write(p, text).unwrap();
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }
    let (token, key) = (token.to_str().unwrap(), key.to_str().unwrap());
    for file in [fifo.to_str().unwrap(), "/dev/zero", big.to_str().unwrap()] {
        for (flag, args) in [
            (
                "--body-file",
                vec!["--store", s, "sweep", "--specimen", "scales", "-c", "1", "-d", "0.3s", "--method", "POST", "--body-file", file],
            ),
            ("--url-file", vec!["--store", s, "sweep", "-c", "1", "-d", "0.3s", "--url-file", file]),
            ("--workload-file", vec!["--store", s, "sweep", "postgres://u@127.0.0.1:9/db", "--workload-file", file]),
            ("--token-file", vec!["agent", "--listen", "127.0.0.1:0", "--token-file", file]),
            (
                "--agent-token-file",
                vec!["--store", s, "sweep", "http://127.0.0.1:9/", "--agent", "tcp://127.0.0.1:9", "--agent-token-file", file],
            ),
            // A published table: `import` read it whole into memory.
            ("cannot read", vec!["--store", s, "import", file]),
            ("--beside", vec!["--store", s, "micro", "--quick", "--only", "procs", "--beside", file]),
            ("--cert", vec!["agent", "--listen", "127.0.0.1:0", "--token-file", token, "--cert", file, "--key", key]),
        ] {
            let Some(out) = run_bounded(&args, Duration::from_secs(20)) else {
                panic!("{flag} {file}: still reading after 20 s");
            };
            let says = if file == big.to_str().unwrap() { "too large" } else { "not a regular file" };
            assert_one_line(&out, &format!("{flag} {file}"), says);
            let named = if flag.contains("token") { "token file" } else { flag };
            assert!(stderr(&out).contains(named), "{flag} {file}: {}", stderr(&out));
            assert!(!store.exists(), "{flag} {file}: a store was created");
        }
    }
}

/// Two of item 23: `show last` on a store of imported runs only said "no
/// run matches 'last' (use an id, a label, or 'last')"; `capacity --step 0s`
/// named `--duration`.
#[test]
fn messages_name_what_the_user_gave() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.db");
    imported_store(tmp.path(), &store);
    let out = run(&store, &["show", "last"]);
    assert_one_line(&out, "show last", "imported");
    assert!(!stderr(&out).contains("or 'last'"), "{}", stderr(&out));

    let other = tmp.path().join("t.db");
    assert_bad_input(&other, &["capacity", "--specimen", "scales", "--slo", "p99<=20ms", "--step", "0s"], "--step");
    let out = run(&other, &["capacity", "--specimen", "scales", "--slo", "p99<=20ms", "--step", "0s"]);
    assert!(!stderr(&out).contains("--duration"), "{}", stderr(&out));
}
