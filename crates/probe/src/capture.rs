//! What a trigger captures besides a profile window (`watch --trigger`,
//! docs/metrics.md): the server's threads grouped by state and kernel stack
//! (`/proc/PID/task/TID/{stat,wchan,stack}`, the server and its descendant
//! processes), and the database's own lock views (PostgreSQL `pg_locks`
//! with `pg_stat_activity`; InnoDB's lock waits and the process list's lock
//! states for MySQL/MariaDB). Each is one pass, taken at most a few times an
//! hour: pt-stalk's idea, with the parts that name a lock.

use crate::read::read_into;
use scalelab_core::sample::{DbLockRow, ThreadGroup};
use scalelab_wire::monitor::{Monitor, TextRows};
use scalelab_wire::{Engine, SqlUrl};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// At most this many threads are read (a server with more is rare; each
/// costs four small reads).
const MAX_THREADS: usize = 4096;
/// Names kept per group.
const NAMES_PER_GROUP: usize = 3;
/// Kernel frames kept per stack.
const MAX_FRAMES: usize = 16;

/// The threads of `pid` and its descendants under `proc_root`, looked at
/// `looks` times `every` apart (one look is a snapshot: a thread just woken
/// shows as running), grouped by state, `wchan` and kernel stack, each
/// group counting the thread-looks that saw it, most first. The error says
/// why no thread could be read at all; kernel stacks that cannot be read
/// (not root, or a kernel without them) leave `stack` empty and are said
/// in the second value.
pub fn thread_groups(proc_root: &Path, pid: u32, looks: u32, every: Duration) -> Result<(Vec<ThreadGroup>, Option<String>), String> {
    let mut groups = Groups::new();
    let mut no_stack = None;
    let mut read = 0;
    for i in 0..looks.max(1) {
        if i > 0 {
            std::thread::sleep(every);
        }
        read += look(proc_root, pid, &mut groups, &mut no_stack);
    }
    if read == 0 {
        return Err(format!("no thread of process {pid} could be read (has it exited?)"));
    }
    let mut out: Vec<ThreadGroup> = groups
        .into_iter()
        .map(|((state, wchan, stack), (threads, names))| ThreadGroup { threads, state, wchan, stack, names: names.into_iter().collect() })
        .collect();
    out.sort_by(|a, b| b.threads.cmp(&a.threads).then_with(|| a.state.cmp(&b.state)));
    Ok((out, no_stack))
}

/// Thread-looks by (state, wchan, kernel stack): how many, and a few names.
type Groups = BTreeMap<(String, String, Vec<String>), (u32, BTreeSet<String>)>;

/// One look at every thread of `pid` and its descendants; how many were read.
fn look(proc_root: &Path, pid: u32, groups: &mut Groups, no_stack: &mut Option<String>) -> usize {
    let mut pids = vec![pid];
    pids.extend(crate::tree::descendants(proc_root, pid).unwrap_or_default());
    let (mut read, mut text) = (0usize, String::new());
    'all: for p in pids {
        let Ok(tasks) = std::fs::read_dir(proc_root.join(p.to_string()).join("task")) else { continue };
        for task in tasks.flatten() {
            if read >= MAX_THREADS {
                break 'all;
            }
            let dir = task.path();
            text.clear();
            if read_into(&dir.join("stat"), &mut text).is_err() {
                continue; // gone meanwhile
            }
            let Some(state) = stat_state(&text) else { continue };
            read += 1;
            let comm = std::fs::read_to_string(dir.join("comm")).map(|c| c.trim().to_string()).unwrap_or_default();
            let wchan = std::fs::read_to_string(dir.join("wchan")).map(|w| w.trim().to_string()).unwrap_or_default();
            let wchan = if wchan == "0" { String::new() } else { wchan };
            let stack = match std::fs::read_to_string(dir.join("stack")) {
                Ok(s) => kernel_frames(&s),
                Err(e) => {
                    no_stack.get_or_insert_with(|| format!("kernel stacks unreadable ({e}): run as root for them"));
                    Vec::new()
                }
            };
            let g = groups.entry((state.to_string(), wchan, stack)).or_default();
            g.0 += 1;
            if g.1.len() < NAMES_PER_GROUP {
                g.1.insert(comm);
            }
        }
    }
    read
}

/// The state letter of a `/proc/.../stat` text (the field after the `)` that ends the name).
fn stat_state(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..].split_ascii_whitespace().next()?.chars().next()
}

/// `[<0>] futex_wait_queue+0x60/0x90` lines into `futex_wait_queue`, innermost first.
fn kernel_frames(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let f = l.split_once("] ").map_or(l, |(_, f)| f).trim();
            let name = f.split('+').next().unwrap_or(f).trim();
            (!name.is_empty()).then(|| name.to_string())
        })
        .take(MAX_FRAMES)
        .collect()
}

/// PostgreSQL: every backend waiting on a lock (heavyweight, lightweight or
/// buffer pin), with the lock modes and relations it waits for, who blocks
/// it and since when (`waitstart`, PostgreSQL 14 and later).
const PG_LOCKS: &str = "SELECT a.wait_event_type || ':' || a.wait_event,
  coalesce((SELECT string_agg(DISTINCT l.mode, ',') FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted), ''),
  coalesce((SELECT string_agg(DISTINCT l.relation::regclass::text, ',') FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted AND l.relation IS NOT NULL), ''),
  array_to_string(pg_blocking_pids(a.pid), ','),
  (SELECT extract(epoch FROM max(clock_timestamp() - l.waitstart)) FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted),
  a.pid
FROM pg_stat_activity a
WHERE a.wait_event_type IN ('Lock', 'LWLock', 'BufferPin') AND a.pid <> pg_backend_pid()";

/// The same before PostgreSQL 14 (no `waitstart`).
const PG_LOCKS_OLD: &str = "SELECT a.wait_event_type || ':' || a.wait_event,
  coalesce((SELECT string_agg(DISTINCT l.mode, ',') FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted), ''),
  coalesce((SELECT string_agg(DISTINCT l.relation::regclass::text, ',') FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted AND l.relation IS NOT NULL), ''),
  array_to_string(pg_blocking_pids(a.pid), ','),
  NULL,
  a.pid
FROM pg_stat_activity a
WHERE a.wait_event_type IN ('Lock', 'LWLock', 'BufferPin') AND a.pid <> pg_backend_pid()";

/// MariaDB (and MySQL 5.7): InnoDB's row-lock waits.
const INNODB_LOCK_WAITS: &str = "SELECT r.lock_type, r.lock_mode, r.lock_table, r.lock_index, w.blocking_trx_id,
  TIMESTAMPDIFF(MICROSECOND, t.trx_wait_started, NOW(6)) / 1e6, w.requesting_trx_id
FROM information_schema.INNODB_LOCK_WAITS w
JOIN information_schema.INNODB_LOCKS r ON r.lock_id = w.requested_lock_id
JOIN information_schema.INNODB_TRX t ON t.trx_id = w.requesting_trx_id";

/// MySQL 8: the same from performance_schema.
const DATA_LOCK_WAITS: &str = "SELECT l.LOCK_TYPE, l.LOCK_MODE, CONCAT(l.OBJECT_SCHEMA, '.', l.OBJECT_NAME), l.INDEX_NAME,
  w.BLOCKING_ENGINE_TRANSACTION_ID, NULL, w.REQUESTING_ENGINE_TRANSACTION_ID
FROM performance_schema.data_lock_waits w
JOIN performance_schema.data_locks l ON l.ENGINE_LOCK_ID = w.REQUESTING_ENGINE_LOCK_ID";

/// MySQL/MariaDB: sessions whose state is a wait for a lock (table and
/// metadata locks, which InnoDB's views do not show).
const MY_LOCK_STATES: &str = "SELECT STATE, COUNT(*), MAX(TIME) FROM information_schema.PROCESSLIST
WHERE STATE LIKE '%lock%' AND ID <> CONNECTION_ID() GROUP BY STATE";

/// The database's lock views, one row per distinct wait, most waiters
/// first; one connection to the target database (where its relation
/// names resolve), opened and closed here.
pub fn db_locks(url: &SqlUrl, timeout: Duration) -> Result<Vec<DbLockRow>, String> {
    let mut mon = Monitor::connect_target(url, timeout).map_err(|f| format!("cannot connect to {}: {}", url.redacted(), f.message))?;
    let q = |mon: &mut Monitor, sql: &str| mon.query(sql).map_err(|f| f.message);
    let mut rows = match mon.engine() {
        Engine::Postgres => pg_rows(&q(&mut mon, PG_LOCKS).or_else(|_| q(&mut mon, PG_LOCKS_OLD))?),
        Engine::Mysql => {
            let waits = q(&mut mon, INNODB_LOCK_WAITS).or_else(|_| q(&mut mon, DATA_LOCK_WAITS)).map(|r| innodb_rows(&r));
            let states = q(&mut mon, MY_LOCK_STATES).map(|r| state_rows(&r));
            match (waits, states) {
                (Err(a), Err(b)) => return Err(format!("InnoDB lock waits: {a}; process list: {b}")),
                (w, s) => w.unwrap_or_default().into_iter().chain(s.unwrap_or_default()).collect(),
            }
        }
    };
    rows.sort_by(|a, b| b.waiting.cmp(&a.waiting).then_with(|| a.wait.cmp(&b.wait)));
    Ok(rows)
}

fn cell(r: &[Option<String>], i: usize) -> &str {
    r.get(i).and_then(|c| c.as_deref()).unwrap_or("")
}

/// One waiting session (or transaction) as a lock view lists it: what it
/// waits for and in which mode, who it is, who blocks it, for how long.
/// A view may list one waiter once per blocker (InnoDB's does).
type Wait = ((String, String), String, Vec<String>, Option<f64>);

/// Folds waits into one row per (wait, mode): how many distinct sessions
/// wait, how many distinct blockers, the longest wait.
fn fold(waits: impl Iterator<Item = Wait>) -> Vec<DbLockRow> {
    // Per (wait, mode): the waiters, their blockers, the longest wait.
    type Folded = (BTreeSet<String>, BTreeSet<String>, Option<f64>);
    let mut by: BTreeMap<(String, String), Folded> = BTreeMap::new();
    for (key, who, blockers, secs) in waits {
        let e = by.entry(key).or_default();
        e.0.insert(who);
        e.1.extend(blockers);
        e.2 = match (e.2, secs) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    by.into_iter()
        .map(|((wait, mode), (waiting, blockers, longest_s))| DbLockRow {
            wait,
            mode,
            waiting: waiting.len() as u32,
            blockers: blockers.len() as u32,
            longest_s,
        })
        .collect()
}

fn pg_rows(t: &TextRows) -> Vec<DbLockRow> {
    fold(t.rows.iter().map(|r| {
        let rel = cell(r, 2);
        let wait = if rel.is_empty() { cell(r, 0).to_string() } else { format!("{} on {rel}", cell(r, 0)) };
        let blockers = cell(r, 3).split(',').filter(|b| !b.is_empty()).map(str::to_string).collect();
        ((wait, cell(r, 1).to_string()), cell(r, 5).to_string(), blockers, cell(r, 4).parse().ok())
    }))
}

fn innodb_rows(t: &TextRows) -> Vec<DbLockRow> {
    fold(t.rows.iter().map(|r| {
        let index = cell(r, 3);
        let on = if index.is_empty() { cell(r, 2).to_string() } else { format!("{} ({index})", cell(r, 2)) };
        let blockers = vec![cell(r, 4).to_string()];
        ((format!("{} lock on {on}", cell(r, 0)), cell(r, 1).to_string()), cell(r, 6).to_string(), blockers, cell(r, 5).parse().ok())
    }))
}

fn state_rows(t: &TextRows) -> Vec<DbLockRow> {
    t.rows
        .iter()
        .map(|r| DbLockRow {
            wait: format!("session state: {}", cell(r, 0)),
            mode: String::new(),
            waiting: cell(r, 1).parse().unwrap_or(0),
            blockers: 0,
            longest_s: cell(r, 2).parse().ok(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_stacks_lose_their_addresses_and_offsets() {
        let s = "[<0>] futex_wait_queue+0x60/0x90\n[<0>] futex_wait+0x17c/0x270\n[<0>] do_syscall_64+0x55/0xb0\n";
        assert_eq!(kernel_frames(s), ["futex_wait_queue", "futex_wait", "do_syscall_64"]);
        assert!(kernel_frames("").is_empty());
        assert_eq!(stat_state("12 (a (b) c) S 1 2 3"), Some('S'));
        assert_eq!(stat_state("garbage"), None);
    }

    /// This process's own threads: one parked on a condition variable (a
    /// futex), the test thread running; grouped, named, the futex seen in
    /// the kernel stack (read as root, as CI runs).
    #[test]
    fn a_process_s_threads_are_grouped_by_state_and_stack() {
        let pair = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let waiters: Vec<_> = (0..3)
            .map(|i| {
                let pair = pair.clone();
                std::thread::Builder::new()
                    .name(format!("parked-{i}"))
                    .spawn(move || {
                        let (m, c) = &*pair;
                        let mut done = m.lock().unwrap();
                        while !*done {
                            done = c.wait(done).unwrap();
                        }
                    })
                    .unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let (groups, no_stack) = thread_groups(Path::new("/proc"), std::process::id(), 2, Duration::from_millis(10)).unwrap();
        {
            let (m, c) = &*pair;
            *m.lock().unwrap() = true;
            c.notify_all();
        }
        waiters.into_iter().for_each(|w| w.join().unwrap());
        let parked = groups.iter().find(|g| g.names.iter().any(|n| n.starts_with("parked-"))).expect("the parked threads");
        // The test harness's main thread waits on a futex too, and may share their stack.
        assert!(parked.threads >= 6, "3 threads, 2 looks: {groups:?}");
        assert_eq!(parked.state, "S");
        if no_stack.is_none() {
            assert!(parked.stack.iter().any(|f| f.contains("futex")), "{parked:?}");
        }
        assert!(groups.iter().any(|g| g.state == "R"), "the reading thread runs: {groups:?}");
        assert!(groups.windows(2).all(|w| w[0].threads >= w[1].threads));
        assert!(thread_groups(Path::new("/proc"), u32::MAX - 1, 1, Duration::ZERO).is_err());
    }

    #[test]
    fn lock_rows_fold_by_wait_and_mode() {
        let t = TextRows {
            columns: vec![],
            rows: vec![
                vec![
                    Some("Lock:transactionid".into()),
                    Some("ShareLock".into()),
                    Some("".into()),
                    Some("10".into()),
                    Some("0.5".into()),
                    Some("20".into()),
                ],
                vec![
                    Some("Lock:transactionid".into()),
                    Some("ShareLock".into()),
                    Some("".into()),
                    Some("10,11".into()),
                    Some("1.5".into()),
                    Some("21".into()),
                ],
                vec![
                    Some("Lock:tuple".into()),
                    Some("ExclusiveLock".into()),
                    Some("hot".into()),
                    Some("12".into()),
                    None,
                    Some("22".into()),
                ],
            ],
        };
        let rows = pg_rows(&t);
        assert_eq!(rows.len(), 2);
        let tx = rows.iter().find(|r| r.wait == "Lock:transactionid").unwrap();
        assert_eq!((tx.waiting, tx.blockers, tx.longest_s), (2, 2, Some(1.5)));
        let tuple = rows.iter().find(|r| r.wait == "Lock:tuple on hot").unwrap();
        assert_eq!((tuple.mode.as_str(), tuple.waiting, tuple.longest_s), ("ExclusiveLock", 1, None));
        // InnoDB lists a waiter once per blocker: it is counted once.
        let row =
            |trx: &str, blocker: &str| ["RECORD", "X", "`t`.`hot`", "PRIMARY", blocker, "2.0", trx].map(|c| Some(c.to_string())).to_vec();
        let rows = innodb_rows(&TextRows { columns: vec![], rows: vec![row("7", "5"), row("8", "5"), row("8", "7")] });
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].wait.as_str(), rows[0].waiting, rows[0].blockers), ("RECORD lock on `t`.`hot` (PRIMARY)", 2, 2));
    }
}
